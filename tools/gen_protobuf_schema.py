#!/usr/bin/env python3
"""gen_protobuf_schema.py - writes src/api/protobuf_schema.c, the message tables that
src/api/protobuf.c walks to turn Kubernetes protobuf bodies into JSON.

Two inputs per Kubernetes API package, given on the command line as
    PROTO_FILE=GO_TYPES_FILE[,GO_TYPES_FILE...]
- the package's generated.proto: message names, field numbers, wire types;
- the package's types.go: each field's JSON name, omitempty, pointer-ness and
  whether an embedded struct is inlined (json:""), matched to the proto field by
  the number in its protobuf:"..." struct tag.
Only messages reachable from ROOTS are emitted. Nothing from the inputs is copied
into the output except names and numbers.

Usage: tools/gen_protobuf_schema.py [--note "where the inputs came from"] \
           core/v1/generated.proto=core/v1/types.go ... > src/api/protobuf_schema.c
The note goes into the output's header comment (e.g. the upstream release tag).
"""
import re
import sys

# Top-level kinds: (apiVersion, kind, fully qualified proto message).
ROOTS = [
    ("v1", "Namespace", "k8s.io.api.core.v1.Namespace"),
    ("v1", "ConfigMap", "k8s.io.api.core.v1.ConfigMap"),
    ("v1", "Secret", "k8s.io.api.core.v1.Secret"),
    ("v1", "Service", "k8s.io.api.core.v1.Service"),
    ("v1", "ServiceAccount", "k8s.io.api.core.v1.ServiceAccount"),
    ("v1", "PersistentVolumeClaim", "k8s.io.api.core.v1.PersistentVolumeClaim"),
    ("v1", "Pod", "k8s.io.api.core.v1.Pod"),
    ("v1", "Event", "k8s.io.api.core.v1.Event"),
    ("v1", "Node", "k8s.io.api.core.v1.Node"),
    ("apps/v1", "Deployment", "k8s.io.api.apps.v1.Deployment"),
    ("apps/v1", "StatefulSet", "k8s.io.api.apps.v1.StatefulSet"),
    ("apps/v1", "DaemonSet", "k8s.io.api.apps.v1.DaemonSet"),
    ("apps/v1", "ReplicaSet", "k8s.io.api.apps.v1.ReplicaSet"),
    ("batch/v1", "Job", "k8s.io.api.batch.v1.Job"),
    ("batch/v1", "CronJob", "k8s.io.api.batch.v1.CronJob"),
    ("coordination.k8s.io/v1", "Lease", "k8s.io.api.coordination.v1.Lease"),
    # the kinds of kinds_builtin_ext.c that kubectl's typed commands create (create role,
    # rolebinding, clusterrole, clusterrolebinding, pdb, ingress, priorityclass, quota...)
    ("rbac.authorization.k8s.io/v1", "Role", "k8s.io.api.rbac.v1.Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "k8s.io.api.rbac.v1.ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "k8s.io.api.rbac.v1.RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "k8s.io.api.rbac.v1.ClusterRoleBinding"),
    ("networking.k8s.io/v1", "Ingress", "k8s.io.api.networking.v1.Ingress"),
    ("networking.k8s.io/v1", "IngressClass", "k8s.io.api.networking.v1.IngressClass"),
    ("networking.k8s.io/v1", "NetworkPolicy", "k8s.io.api.networking.v1.NetworkPolicy"),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "k8s.io.api.autoscaling.v2.HorizontalPodAutoscaler"),
    ("policy/v1", "PodDisruptionBudget", "k8s.io.api.policy.v1.PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass", "k8s.io.api.scheduling.v1.PriorityClass"),
    ("storage.k8s.io/v1", "StorageClass", "k8s.io.api.storage.v1.StorageClass"),
    ("storage.k8s.io/v1", "CSIDriver", "k8s.io.api.storage.v1.CSIDriver"),
    ("v1", "PersistentVolume", "k8s.io.api.core.v1.PersistentVolume"),
    ("v1", "Endpoints", "k8s.io.api.core.v1.Endpoints"),
    ("v1", "LimitRange", "k8s.io.api.core.v1.LimitRange"),
    ("v1", "ResourceQuota", "k8s.io.api.core.v1.ResourceQuota"),
    ("v1", "ReplicationController", "k8s.io.api.core.v1.ReplicationController"),
    ("discovery.k8s.io/v1", "EndpointSlice", "k8s.io.api.discovery.v1.EndpointSlice"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
     "k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
     "k8s.io.api.admissionregistration.v1.MutatingWebhookConfiguration"),
    # what kubectl create token and kubectl auth whoami send (sa_token.c, authn_review.c)
    ("authentication.k8s.io/v1", "TokenRequest", "k8s.io.api.authentication.v1.TokenRequest"),
    ("authentication.k8s.io/v1", "TokenReview", "k8s.io.api.authentication.v1.TokenReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview", "k8s.io.api.authentication.v1.SelfSubjectReview"),
    # issue 41, second part: kubectl autoscale posts autoscaling/v1, kubectl certificate
    # approve|deny puts a CSR's /approval, client-go's event recorders post events.k8s.io
    ("autoscaling/v1", "HorizontalPodAutoscaler", "k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler"),
    ("autoscaling/v1", "Scale", "k8s.io.api.autoscaling.v1.Scale"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest", "k8s.io.api.certificates.v1.CertificateSigningRequest"),
    ("events.k8s.io/v1", "Event", "k8s.io.api.events.v1.Event"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy",
     "k8s.io.api.admissionregistration.v1.ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding",
     "k8s.io.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding"),
    ("meta.k8s.io/v1", "DeleteOptions", "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"),
    ("v1", "DeleteOptions", "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"),
]

# Messages whose JSON form is a scalar, decoded by hand in protobuf.c.
SPECIAL = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "FL_PB_SP_TIME",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "FL_PB_SP_MICROTIME",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "FL_PB_SP_DURATION",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "FL_PB_SP_FIELDSV1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "FL_PB_SP_QUANTITY",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "FL_PB_SP_INTORSTRING",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "FL_PB_SP_RAWEXTENSION",
    "k8s.io.api.certificates.v1.ExtraValue": "FL_PB_SP_STRINGLIST",
}

# Messages that wrap a Go named slice (`type ExtraValue []string`, encoded as {items}): there
# is no struct to read, and nothing a request body needs is in them, so the fields of their
# type are left out of the tables (the decoder skips unknown fields, as protobuf requires).
WRAPPED_SLICES = {
    "k8s.io.api.authentication.v1.ExtraValue",
    "k8s.io.api.authentication.v1.AttestationValue",
}

SCALARS = {"string": "FL_PB_STRING", "bytes": "FL_PB_BYTES", "bool": "FL_PB_BOOL",
           "int32": "FL_PB_INT32", "int64": "FL_PB_INT64"}


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def parse_proto(path):
    text = strip_comments(open(path).read())
    pkg = re.search(r"^\s*package\s+([\w.]+)\s*;", text, re.M).group(1)
    msgs = {}
    for m in re.finditer(r"\bmessage\s+(\w+)\s*\{([^{}]*)\}", text):
        fields = []
        for f in re.finditer(r"(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;", m.group(2)):
            fields.append({"label": f.group(1), "type": f.group(2), "name": f.group(3),
                           "num": int(f.group(4)), "map": False})
        for f in re.finditer(r"map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;", m.group(2)):
            if f.group(1) != "string":
                sys.exit("%s.%s: only string map keys are supported" % (m.group(1), f.group(3)))
            fields.append({"label": "repeated", "type": f.group(2), "name": f.group(3),
                           "num": int(f.group(4)), "map": True})
        fields.sort(key=lambda x: x["num"])
        msgs[pkg + "." + m.group(1)] = fields
    return pkg, msgs


FIELD_RE = re.compile(r'^\s*(?:(\w+)\s+)?([\w.*\[\]]+)\s+`([^`]*)`\s*$')


def parse_go(path):
    """Return {struct: {proto number: info}} from a types.go file."""
    structs = {}
    cur = None
    for line in open(path):
        line = line.split("//", 1)[0] if "`" not in line else line
        m = re.match(r"^type\s+(\w+)\s+struct\s*\{", line)
        if m:
            cur = structs.setdefault(m.group(1), {})
            continue
        if cur is not None and re.match(r"^\}", line):
            cur = None
            continue
        if cur is None:
            continue
        m = FIELD_RE.match(line)
        if not m:
            continue
        name, gotype, tag = m.groups()
        pb = re.search(r'protobuf:"[^,"]*,(\d+),', tag)
        js = re.search(r'json:"([^"]*)"', tag)
        if not pb or not js:
            continue
        parts = js.group(1).split(",")
        embedded = name is None
        cur[int(pb.group(1))] = {
            "json": parts[0],
            "omitempty": "omitempty" in parts[1:],
            "pointer": gotype.startswith("*"),
            "inline": embedded and parts[0] == "",
            "skip": parts[0] == "-",
        }
    return structs


def main(argv):
    note = None
    if len(argv) >= 2 and argv[0] == "--note":
        note, argv = argv[1], argv[2:]
    msgs = {}
    go = {}
    for arg in argv:
        proto, _, gofiles = arg.partition("=")
        pkg, pm = parse_proto(proto)
        msgs.update(pm)
        structs = {}
        for g in filter(None, gofiles.split(",")):
            structs.update(parse_go(g))
        go[pkg] = structs

    def resolve(pkg, t):
        if t in SCALARS:
            return t
        t = t.lstrip(".")
        if t in msgs:
            return t
        if pkg + "." + t in msgs:
            return pkg + "." + t
        sys.exit("unknown type %s in %s" % (t, pkg))

    # Walk from the roots; specials are leaves.
    order, seen = [], set()
    stack = [r[2] for r in ROOTS]
    while stack:
        full = stack.pop()
        if full in seen:
            continue
        if full not in msgs:
            sys.exit("root or reference %s not found in the given .proto files" % full)
        seen.add(full)
        order.append(full)
        if full in SPECIAL:
            continue
        pkg = full.rsplit(".", 1)[0]
        for f in msgs[full]:
            f["rtype"] = resolve(pkg, f["type"])
            if f["rtype"] not in SCALARS and f["rtype"] not in WRAPPED_SLICES:
                stack.append(f["rtype"])
    order.sort()

    def cname(full):
        pkg, name = full.rsplit(".", 1)
        short = pkg.replace("k8s.io.apimachinery.pkg.apis.", "").replace("k8s.io.apimachinery.pkg.", "") \
                   .replace("k8s.io.api.", "").replace(".", "_")
        return short + "_" + name

    out = []
    w = out.append
    w("/* protobuf_schema.c - the Kubernetes protobuf message tables, as data.")
    w(" *")
    w(" * GENERATED by tools/gen_protobuf_schema.py from the upstream generated.proto and")
    w(" * types.go files of the API packages of the kinds in ROOTS and meta/v1 (plus")
    w(" * resource, intstr, runtime); do not edit by hand, re-run the generator. Each table")
    w(" * lists one message's fields sorted by number with the JSON name, wire kind and")
    w(" * the Go-side facts (omitempty, pointer, inline) that decide how protobuf.c renders")
    w(" * them. Only messages reachable from the kinds in fl_pb_kinds[] are present.")
    if note:
        w(" *")
        w(" * Inputs: %s" % note)
    w(" */")
    w('#include "api/protobuf.h"')
    w("")
    w("/* forward declarations: tables refer to each other */")
    for full in order:
        w("static const fl_pb_msg M_%s;" % cname(full))
    w("")
    for full in order:
        pkg, short = full.rsplit(".", 1)
        structs = go.get(pkg, {})
        info = structs.get(short)
        rows = []
        if full not in SPECIAL:
            if info is None:
                sys.exit("no Go struct %s for %s" % (short, full))
            for f in msgs[full]:
                gi = info.get(f["num"])
                if gi is None:
                    sys.exit("%s field %d (%s) has no Go tag" % (full, f["num"], f["name"]))
                if gi["skip"] or f["rtype"] in WRAPPED_SLICES:
                    continue
                flags = []
                if f["map"]:
                    flags.append("FL_PBF_MAP")
                elif f["label"] == "repeated":
                    flags.append("FL_PBF_REPEATED")
                if gi["omitempty"]:
                    flags.append("FL_PBF_OMITEMPTY")
                if gi["pointer"]:
                    flags.append("FL_PBF_POINTER")
                if gi["inline"]:
                    flags.append("FL_PBF_INLINE")
                rt = f["rtype"]
                kind = SCALARS.get(rt, "FL_PB_MESSAGE")
                ref = "&M_%s" % cname(rt) if kind == "FL_PB_MESSAGE" else "NULL"
                jname = "NULL" if gi["inline"] else '"%s"' % gi["json"]
                rows.append("    {%d, %s, %s, %s, %s}," % (f["num"], jname, kind,
                                                        " | ".join(flags) or "0", ref))
        if rows:
            w("static const fl_pb_field F_%s[] = {" % cname(full))
            out.extend(rows)
            w("};")
        w('static const fl_pb_msg M_%s = {"%s", %s, %s, %d};' % (
            cname(full), short, SPECIAL.get(full, "FL_PB_SP_NONE"),
            ("F_" + cname(full)) if rows else "NULL", len(rows)))
        w("")
    w("const fl_pb_kind fl_pb_kinds[] = {")
    for api, kind, full in ROOTS:
        w('    {"%s", "%s", &M_%s},' % (api, kind, cname(full)))
    w("};")
    w("const size_t fl_pb_nkinds = sizeof fl_pb_kinds / sizeof fl_pb_kinds[0];")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
