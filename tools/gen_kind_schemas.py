#!/usr/bin/env python3
"""gen_kind_schemas.py - writes src/api/kinds_schema.c and src/api/kinds_schema.h, the
field tables (struct fl_field, src/api/kinds.h) of every built-in and Karmada kind
Flotilla serves, from the published OpenAPI v2 documents.

Inputs, given on the command line:
  --k8s FILE       Kubernetes' swagger.json (OpenAPI v2: definitions with properties,
                   required, type/format, $ref and the x-kubernetes-patch-* tags);
  --karmada FILE   Karmada's api/openapi-spec/swagger.json (its definitions refer to
                   Kubernetes' ones by name, which --k8s resolves);
  --note TEXT      where the inputs came from (release tags), for the header comment;
  --out-c, --out-h the two files to write.

Kinds whose schema is in neither input (kpt's ResourceGroup) are described here, in
OWN_ROOTS and OWN_TYPES, and their tables follow the upstream ones.

One table per upstream definition reachable from ROOTS, shared by reference (PodSpec,
Container, ObjectMeta, LabelSelector...). Each row is one property: its JSON name, its
type (enum fl_ftype), for lists and maps the element type, the strategic-merge-patch
merge key and strategy, whether upstream requires it, and the table of its object type.
Only names, types and tags are taken from the inputs: no descriptions. The output is a
pure function of the inputs (sorted, no timestamps), so rerunning it is a no-op.

Usage: tools/gen_kind_schemas.py --k8s swagger.json --karmada karmada-swagger.json \
           --note "Kubernetes 1.32, Karmada v1.18.2" \
           --out-c src/api/kinds_schema.c --out-h src/api/kinds_schema.h

The checked-in output was made from Kubernetes 1.32's OpenAPI v2 as kubernetes-client/
javascript publishes it (commit f89c179b, src/gen/swagger.json.unprocessed) and Karmada's
api/openapi-spec/swagger.json at its newest stable tag, v1.18.2; the note in the output
says so. To move to newer releases, fetch those two files at the new versions and rerun.
"""
import argparse
import json
import sys

K8S = "io.k8s."
KARMADA = "com.github.karmada-io.karmada.pkg.apis."

# (exported C name, upstream definition) of each served kind's object.
ROOTS = [
    ("core_v1_Namespace", "io.k8s.api.core.v1.Namespace"),
    ("core_v1_ConfigMap", "io.k8s.api.core.v1.ConfigMap"),
    ("core_v1_Secret", "io.k8s.api.core.v1.Secret"),
    ("core_v1_Service", "io.k8s.api.core.v1.Service"),
    ("core_v1_ServiceAccount", "io.k8s.api.core.v1.ServiceAccount"),
    ("core_v1_PersistentVolumeClaim", "io.k8s.api.core.v1.PersistentVolumeClaim"),
    ("core_v1_Pod", "io.k8s.api.core.v1.Pod"),
    ("core_v1_Event", "io.k8s.api.core.v1.Event"),
    ("core_v1_Node", "io.k8s.api.core.v1.Node"),
    ("apps_v1_Deployment", "io.k8s.api.apps.v1.Deployment"),
    ("apps_v1_StatefulSet", "io.k8s.api.apps.v1.StatefulSet"),
    ("apps_v1_DaemonSet", "io.k8s.api.apps.v1.DaemonSet"),
    ("apps_v1_ReplicaSet", "io.k8s.api.apps.v1.ReplicaSet"),
    # template revisions (docs/rollouts.md): data is a RawExtension, free-form
    ("apps_v1_ControllerRevision", "io.k8s.api.apps.v1.ControllerRevision"),
    ("batch_v1_Job", "io.k8s.api.batch.v1.Job"),
    ("batch_v1_CronJob", "io.k8s.api.batch.v1.CronJob"),
    ("coordination_v1_Lease", "io.k8s.api.coordination.v1.Lease"),
    ("apiextensions_v1_CustomResourceDefinition",
     "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"),
    # built-in kinds charts use (issue 41): stored and propagated like the others
    ("rbac_v1_Role", "io.k8s.api.rbac.v1.Role"),
    ("rbac_v1_ClusterRole", "io.k8s.api.rbac.v1.ClusterRole"),
    ("rbac_v1_RoleBinding", "io.k8s.api.rbac.v1.RoleBinding"),
    ("rbac_v1_ClusterRoleBinding", "io.k8s.api.rbac.v1.ClusterRoleBinding"),
    ("networking_v1_Ingress", "io.k8s.api.networking.v1.Ingress"),
    ("networking_v1_IngressClass", "io.k8s.api.networking.v1.IngressClass"),
    ("networking_v1_NetworkPolicy", "io.k8s.api.networking.v1.NetworkPolicy"),
    ("autoscaling_v2_HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"),
    ("policy_v1_PodDisruptionBudget", "io.k8s.api.policy.v1.PodDisruptionBudget"),
    ("scheduling_v1_PriorityClass", "io.k8s.api.scheduling.v1.PriorityClass"),
    ("storage_v1_StorageClass", "io.k8s.api.storage.v1.StorageClass"),
    ("storage_v1_CSIDriver", "io.k8s.api.storage.v1.CSIDriver"),
    ("core_v1_PersistentVolume", "io.k8s.api.core.v1.PersistentVolume"),
    ("core_v1_Endpoints", "io.k8s.api.core.v1.Endpoints"),
    ("core_v1_LimitRange", "io.k8s.api.core.v1.LimitRange"),
    ("core_v1_ResourceQuota", "io.k8s.api.core.v1.ResourceQuota"),
    ("core_v1_ReplicationController", "io.k8s.api.core.v1.ReplicationController"),
    ("discovery_v1_EndpointSlice", "io.k8s.api.discovery.v1.EndpointSlice"),
    ("admissionregistration_v1_ValidatingWebhookConfiguration",
     "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration"),
    ("admissionregistration_v1_MutatingWebhookConfiguration",
     "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration"),
    ("autoscaling_v1_HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler"),
    ("events_v1_Event", "io.k8s.api.events.v1.Event"),
    ("admissionregistration_v1_ValidatingAdmissionPolicy",
     "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy"),
    ("admissionregistration_v1_ValidatingAdmissionPolicyBinding",
     "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding"),
    ("apiregistration_v1_APIService", "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"),
    ("certificates_v1_CertificateSigningRequest", "io.k8s.api.certificates.v1.CertificateSigningRequest"),
    ("meta_v1_ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
    ("karmada_cluster_v1alpha1_Cluster", KARMADA + "cluster.v1alpha1.Cluster"),
    ("karmada_policy_v1alpha1_PropagationPolicy", KARMADA + "policy.v1alpha1.PropagationPolicy"),
    ("karmada_policy_v1alpha1_ClusterPropagationPolicy", KARMADA + "policy.v1alpha1.ClusterPropagationPolicy"),
    ("karmada_policy_v1alpha1_OverridePolicy", KARMADA + "policy.v1alpha1.OverridePolicy"),
    ("karmada_policy_v1alpha1_ClusterOverridePolicy", KARMADA + "policy.v1alpha1.ClusterOverridePolicy"),
    ("karmada_policy_v1alpha1_ClusterTaintPolicy", KARMADA + "policy.v1alpha1.ClusterTaintPolicy"),
    ("karmada_work_v1alpha1_Work", KARMADA + "work.v1alpha1.Work"),
    ("karmada_work_v1alpha2_ResourceBinding", KARMADA + "work.v1alpha2.ResourceBinding"),
    ("karmada_work_v1alpha2_ClusterResourceBinding", KARMADA + "work.v1alpha2.ClusterResourceBinding"),
    ("karmada_config_v1alpha1_ResourceInterpreterCustomization",
     KARMADA + "config.v1alpha1.ResourceInterpreterCustomization"),
    ("karmada_config_v1alpha1_ResourceInterpreterWebhookConfiguration",
     KARMADA + "config.v1alpha1.ResourceInterpreterWebhookConfiguration"),
]

# Definitions whose JSON form is not an object with fixed fields.
SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "FL_F_QUANTITY",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "FL_F_INTORSTR",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "FL_F_STRING",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "FL_F_STRING",
    # free-form JSON: not described further, nothing in it is "unknown"
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "FL_F_OBJECT",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "FL_F_OBJECT",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "FL_F_ANY",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "FL_F_ANY",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "FL_F_ANY",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "FL_F_ANY",
}

# Fields Flotilla serves beyond upstream's schema: (definition, name, fl_ftype).
EXTRA = [
    # pause all delivery to a member cluster (docs/propagation.md)
    (KARMADA + "cluster.v1alpha1.ClusterSpec", "suspendDispatching", "FL_F_BOOL"),
    # the member object's resourceVersion a status was read at (docs/propagation.md, "Ours")
    (KARMADA + "work.v1alpha1.ManifestStatus", "resourceVersion", "FL_F_STRING"),
    # the member object's live state, kstatus's vocabulary (docs/status.md), per manifest and
    # per cluster on the binding
    (KARMADA + "work.v1alpha1.ManifestStatus", "liveStatus", ("FL_F_OBJECT", "flotilla.LiveStatus")),
    # the worst of them (or Failed when the apply failed), for fieldSelector=status.liveState
    (KARMADA + "work.v1alpha1.WorkStatus", "liveState", "FL_F_STRING"),
    (KARMADA + "work.v1alpha2.AggregatedStatusItem", "liveStatus", "FL_F_STRING"),
    # application failover's clocks, kept in the store so a restart keeps them, and the
    # failover history (docs/failover.md, "Ours")
    (KARMADA + "work.v1alpha2.ResourceBindingStatus", "failoverClocks", ("FL_F_ARRAY", "flotilla.FailoverClock")),
    (KARMADA + "work.v1alpha2.ResourceBindingStatus", "failoverHistory",
     ("FL_F_ARRAY", "flotilla.FailoverHistoryItem")),
    # the binding's live state across its clusters, bounded (docs/status.md)
    (KARMADA + "work.v1alpha2.ResourceBindingStatus", "summary", ("FL_F_OBJECT", "flotilla.BindingSummary")),
]

# Tables of Flotilla's own object types that EXTRA rows refer to: name -> {field: fl_ftype}
# (a tuple: ("FL_F_ARRAY", element type)).
EXTRA_TYPES = {
    "flotilla.BindingSummary": {
        "state": "FL_F_STRING",                # the worst over its clusters
        "desired": "FL_F_INT",
        "applied": "FL_F_INT",
        "current": "FL_F_INT",
        "inProgress": "FL_F_INT",
        "terminating": "FL_F_INT",
        "unknown": "FL_F_INT",
        "notFound": "FL_F_INT",
        "failed": "FL_F_INT",
        "notCurrent": ("FL_F_ARRAY", "flotilla.ClusterLiveState"),  # at most 20, worst first
        "truncated": "FL_F_BOOL",
        "lastChangeTime": "FL_F_STRING",
    },
    "flotilla.ClusterLiveState": {
        "cluster": "FL_F_STRING",
        "state": "FL_F_STRING",
        "reason": "FL_F_STRING",
        "message": "FL_F_STRING",
    },
    "flotilla.LiveStatus": {
        "state": "FL_F_STRING",                # Current, InProgress, Failed, Terminating, NotFound, Unknown
        "reason": "FL_F_STRING",
        "message": "FL_F_STRING",
    },
    "flotilla.FailoverClock": {
        "clusterName": "FL_F_STRING",
        "unhealthySince": "FL_F_STRING",       # when the copy turned Unhealthy
        "pausedSince": "FL_F_STRING",          # set while the copy reports Unknown
        "pausedMilliseconds": "FL_F_INT",      # time spent Unknown since unhealthySince
    },
    "flotilla.FailoverHistoryItem": {
        "reason": "FL_F_STRING",
        "startTime": "FL_F_STRING",
        "fromCluster": "FL_F_STRING",
        "clustersBeforeFailover": ("FL_F_ARRAY", "FL_F_STRING"),
        "clustersAfterFailover": ("FL_F_ARRAY", "FL_F_STRING"),
        "preservedLabelState": "FL_F_MAPSTR",
        "completionTime": "FL_F_STRING",
        "outcome": "FL_F_STRING",
    },
}

# Fields upstream defines that nothing in Flotilla acts on yet: the table marks them
# `unsupported` and the API server refuses an object that sets one (422) instead of
# storing a setting it would ignore. Keep in step with docs/propagation.md.
# Paths are "<definition below com.github.karmada-io.karmada.pkg.apis.>.<field>".
UNSUPPORTED = [
    "policy.v1alpha1.PropagationSpec.association",         # deprecated upstream; propagateDeps works
    "policy.v1alpha1.PropagationSpec.dependentOverrides",  # no wait for OverridePolicies
    "policy.v1alpha1.PropagationSpec.schedulePriority",    # no priority queue in the scheduler
    "policy.v1alpha1.Placement.workloadAffinity",          # no inter-workload affinity groups
    "work.v1alpha2.ResourceBindingSpec.schedulePriority",
    "work.v1alpha2.ResourceBindingSpec.workloadAffinityGroups",
    "cluster.v1alpha1.ClusterSpec.impersonatorSecretRef",   # members are reached with one identity
    "cluster.v1alpha1.ClusterSpec.proxyHeader",             # no proxy support in the member client
    "cluster.v1alpha1.ClusterSpec.proxyURL",
    "cluster.v1alpha1.ClusterSpec.resourceModels",          # no resource-model estimator
]

# Kinds Flotilla serves whose schema is in no OpenAPI input: kpt's ResourceGroup (the kpt
# inventory kind, which kpt installs as a CRD; its fields as kpt-resource-group's
# config/crd/bases/kpt.dev_resourcegroups.yaml declares them), with the status summary of
# ours (docs/status.md). (exported C name, type name in OWN_TYPES).
OWN_ROOTS = [
    ("kpt_v1alpha1_ResourceGroup", "kpt.v1alpha1.ResourceGroup"),
]

# Their object types: name -> {field: fl_ftype, or (FL_F_ARRAY | FL_F_OBJECT, type)}, where
# type is a scalar fl_ftype (list elements), an OWN_TYPES name or an upstream definition.
OWN_TYPES = {
    "kpt.v1alpha1.ResourceGroup": {
        "apiVersion": "FL_F_STRING",
        "kind": "FL_F_STRING",
        "metadata": ("FL_F_OBJECT", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
        "spec": ("FL_F_OBJECT", "kpt.v1alpha1.ResourceGroupSpec"),
        "status": ("FL_F_OBJECT", "kpt.v1alpha1.ResourceGroupStatus"),
    },
    "kpt.v1alpha1.ResourceGroupSpec": {
        "descriptor": ("FL_F_OBJECT", "kpt.v1alpha1.Descriptor"),
        "resources": ("FL_F_ARRAY", "kpt.v1alpha1.ObjMetadata"),
        "subgroups": ("FL_F_ARRAY", "kpt.v1alpha1.GroupMetadata"),
    },
    "kpt.v1alpha1.Descriptor": {
        "description": "FL_F_STRING",
        "links": ("FL_F_ARRAY", "kpt.v1alpha1.Link"),
        "revision": "FL_F_STRING",
        "type": "FL_F_STRING",
    },
    "kpt.v1alpha1.Link": {"description": "FL_F_STRING", "url": "FL_F_STRING"},
    "kpt.v1alpha1.ObjMetadata": {
        "group": "FL_F_STRING", "kind": "FL_F_STRING", "name": "FL_F_STRING", "namespace": "FL_F_STRING",
    },
    "kpt.v1alpha1.GroupMetadata": {"name": "FL_F_STRING", "namespace": "FL_F_STRING"},
    "kpt.v1alpha1.ResourceGroupStatus": {
        "conditions": ("FL_F_ARRAY", "kpt.v1alpha1.Condition"),
        "observedGeneration": "FL_F_INT",
        "resourceStatuses": ("FL_F_ARRAY", "kpt.v1alpha1.ResourceStatus"),
        "subgroupStatuses": ("FL_F_ARRAY", "kpt.v1alpha1.GroupStatus"),
        "summary": ("FL_F_OBJECT", "flotilla.ResourceGroupSummary"),  # ours
    },
    "kpt.v1alpha1.Condition": {
        "lastTransitionTime": "FL_F_STRING",
        "message": "FL_F_STRING",
        "reason": "FL_F_STRING",
        "status": "FL_F_STRING",
        "type": "FL_F_STRING",
    },
    "kpt.v1alpha1.ResourceStatus": {
        "actuation": "FL_F_STRING",
        "conditions": ("FL_F_ARRAY", "kpt.v1alpha1.Condition"),
        "group": "FL_F_STRING",
        "kind": "FL_F_STRING",
        "name": "FL_F_STRING",
        "namespace": "FL_F_STRING",
        "reconcile": "FL_F_STRING",
        "sourceHash": "FL_F_STRING",
        "status": "FL_F_STRING",
        "strategy": "FL_F_STRING",
    },
    "kpt.v1alpha1.GroupStatus": {
        "conditions": ("FL_F_ARRAY", "kpt.v1alpha1.Condition"),
        "name": "FL_F_STRING",
        "namespace": "FL_F_STRING",
        "status": "FL_F_STRING",
    },
    # the listed resources counted by their fleet-wide state (docs/status.md)
    "flotilla.ResourceGroupSummary": {
        "state": "FL_F_STRING",
        "total": "FL_F_INT",
        "current": "FL_F_INT",
        "inProgress": "FL_F_INT",
        "terminating": "FL_F_INT",
        "unknown": "FL_F_INT",
        "notFound": "FL_F_INT",
        "failed": "FL_F_INT",
    },
}

# The fields the CRD requires, per OWN_TYPES name.
OWN_REQUIRED = {
    "kpt.v1alpha1.Link": ("description", "url"),
    "kpt.v1alpha1.ObjMetadata": ("group", "kind", "name", "namespace"),
    "kpt.v1alpha1.GroupMetadata": ("name", "namespace"),
    "kpt.v1alpha1.ResourceGroupStatus": ("observedGeneration",),
    "kpt.v1alpha1.Condition": ("status", "type"),
    "kpt.v1alpha1.ResourceStatus": ("group", "kind", "name", "namespace", "status"),
    "kpt.v1alpha1.GroupStatus": ("name", "namespace", "status"),
}

SCALAR = {"string": "FL_F_STRING", "integer": "FL_F_INT", "number": "FL_F_NUMBER", "boolean": "FL_F_BOOL"}


def cname(defname):
    if defname.startswith(KARMADA):
        return "karmada_" + "_".join(defname[len(KARMADA):].split("."))
    if defname.startswith("flotilla."):
        return "flotilla_" + defname[len("flotilla."):]
    parts = defname.split(".")
    return "_".join(p.replace("-", "_") for p in parts[-3:])


def ref_name(node):
    r = node.get("$ref", "")
    return r[len("#/definitions/"):] if r.startswith("#/definitions/") else None


class Gen:
    def __init__(self, defs, unsupported):
        self.defs = defs
        self.unsupported = unsupported
        self.tables = {}   # defname -> list of rows (dicts)
        self.order = []    # emission order: dependencies first

    def kind_of(self, defname):
        """(fl_ftype, sub-table defname or None) for a value of type defname."""
        if defname in SPECIAL:
            return SPECIAL[defname], None
        d = self.defs.get(defname)
        if d is None:
            sys.exit("unresolved definition %s" % defname)
        if d.get("properties"):
            return "FL_F_OBJECT", defname
        t = d.get("type")
        if t == "object" or t is None:
            return ("FL_F_OBJECT" if t == "object" else "FL_F_ANY"), None
        return SCALAR.get(t, "FL_F_ANY"), None

    def value(self, node):
        """(type, elem, sub) for a schema node."""
        r = ref_name(node)
        if r:
            t, sub = self.kind_of(r)
            return t, None, sub
        t = node.get("type")
        if t == "array":
            et, _, sub = self.value(node.get("items", {}))
            return "FL_F_ARRAY", et, sub
        if t == "object":
            ap = node.get("additionalProperties")
            if isinstance(ap, dict):
                et, _, sub = self.value(ap)
                if et == "FL_F_STRING" and not sub:
                    return "FL_F_MAPSTR", None, None
                return "FL_F_MAP", et, sub
            return "FL_F_OBJECT", None, None
        if t in SCALAR:
            return SCALAR[t], None, None
        return "FL_F_ANY", None, None

    def visit(self, defname, stack=()):
        if defname in self.tables:
            return
        if defname in stack:
            return
        d = self.defs[defname]
        rows = []
        req = set(d.get("required", []))
        props = dict(d.get("properties", {}))
        extra = {n: t for (dn, n, t) in EXTRA if dn == defname}
        for name in sorted(set(props) | set(extra)):
            if name in extra:
                t = extra[name]
                if isinstance(t, tuple):  # (FL_F_ARRAY, element type) or (FL_F_OBJECT, type)
                    self.visit_extra(t[1])
                    rows.append({"path": name, "type": t[0], "elem": "FL_F_OBJECT" if t[0] == "FL_F_ARRAY" else None,
                                 "sub": t[1]})
                else:
                    rows.append({"path": name, "type": t, "elem": None, "sub": None})
                continue
            node = props[name]
            t, elem, sub = self.value(node)
            row = {"path": name, "type": t, "elem": elem, "sub": sub, "required": name in req,
                   "merge_key": node.get("x-kubernetes-patch-merge-key"),
                   "strategy": node.get("x-kubernetes-patch-strategy"),
                   "unsupported": name in self.unsupported.get(defname, ())}
            rows.append(row)
            if sub and sub != defname:
                self.visit(sub, stack + (defname,))
        self.tables[defname] = rows
        self.order.append(defname)


    def visit_extra(self, defname):
        if defname in self.tables:
            return
        rows = []
        for name, t in sorted(EXTRA_TYPES[defname].items()):
            if isinstance(t, tuple) and t[1] in EXTRA_TYPES:  # a list of our own objects
                self.visit_extra(t[1])
                rows.append({"path": name, "type": t[0], "elem": "FL_F_OBJECT", "sub": t[1]})
            elif isinstance(t, tuple):
                rows.append({"path": name, "type": t[0], "elem": t[1], "sub": None})
            else:
                rows.append({"path": name, "type": t, "elem": None, "sub": None})
        self.tables[defname] = rows
        self.order.append(defname)

    def visit_own(self, defname):
        """An OWN_TYPES table, after the tables it refers to."""
        if defname in self.tables:
            return
        self.tables[defname] = []  # a cycle ends here
        req = OWN_REQUIRED.get(defname, ())
        rows = []
        for name, t in sorted(OWN_TYPES[defname].items()):
            row = {"path": name, "type": t, "elem": None, "sub": None, "required": name in req}
            if isinstance(t, tuple):
                row["type"], of = t
                if of.startswith("FL_F_"):
                    row["elem"] = of
                else:
                    if of in OWN_TYPES:
                        self.visit_own(of)
                    else:
                        self.visit(of)
                    row["sub"] = of
                    if row["type"] == "FL_F_ARRAY":
                        row["elem"] = "FL_F_OBJECT"
            rows.append(row)
        self.tables[defname] = rows
        self.order.append(defname)


def c_row(r):
    parts = ['.path = "%s"' % r["path"], ".type = %s" % r["type"]]
    if r.get("elem"):
        parts.append(".elem = %s" % r["elem"])
    if r.get("merge_key"):
        parts.append('.merge_key = "%s"' % r["merge_key"])
    if r.get("strategy"):
        parts.append('.strategy = "%s"' % r["strategy"])
    if r.get("sub"):
        parts.append(".sub = %s" % cname(r["sub"]))
    if r.get("required"):
        parts.append(".required = true")
    if r.get("unsupported"):
        parts.append(".unsupported = true")
    return "    { " + ", ".join(parts) + " },"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k8s", required=True)
    ap.add_argument("--karmada", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("--out-c", required=True)
    ap.add_argument("--out-h", required=True)
    a = ap.parse_args()
    defs = dict(json.load(open(a.k8s))["definitions"])
    for n, d in json.load(open(a.karmada))["definitions"].items():
        if n.startswith(KARMADA):
            defs[n] = d
    unsupported = {}
    for path in UNSUPPORTED:
        dn, _, field = path.rpartition(".")
        unsupported.setdefault(KARMADA + dn, set()).add(field)
    g = Gen(defs, unsupported)
    for _, dn in ROOTS:
        g.visit(dn)
    for _, dn in OWN_ROOTS:
        g.visit_own(dn)
    for dn, fields in unsupported.items():
        names = {r["path"] for r in g.tables.get(dn, [])}
        for f in fields:
            if f not in names:
                sys.exit("UNSUPPORTED names %s.%s, which the schema does not have" % (dn, f))
    exported = {dn: "fl_schema_" + c for c, dn in ROOTS + OWN_ROOTS}
    # Names used in rows: roots are exported under their fl_schema_ name.
    global cname
    base_cname = cname
    cname = lambda dn: exported.get(dn) or base_cname(dn)  # noqa: E731

    out = []
    w = out.append
    w("/* kinds_schema.c - GENERATED by tools/gen_kind_schemas.py; do not edit.")
    w(" *")
    w(" * The field tables (fl_field, api/kinds.h) of the built-in and Karmada kinds, one")
    w(" * table per upstream definition, shared by reference through `sub`. Rows are the")
    w(" * definition's properties in name order: type, element type of lists and maps,")
    w(" * strategic-merge-patch tags, required, and `unsupported` for fields Flotilla")
    w(" * refuses because nothing acts on them yet.")
    if a.note:
        w(" *")
        w(" * Inputs: %s" % a.note)
    w(" */")
    w('#include "api/kinds_schema.h"')
    w("")
    w("#include <stdbool.h>")
    w("#include <stddef.h>")
    w("")
    for dn in g.order:
        name = cname(dn)
        storage = "const" if dn in exported else "static const"
        w("/* %s */" % dn)
        w("%s fl_field %s[] = {" % (storage, name))
        for r in g.tables[dn]:
            w(c_row(r))
        w("    { .path = NULL },")
        w("};")
        w("")
    with open(a.out_c, "w") as f:
        f.write("\n".join(out).rstrip("\n") + "\n")

    h = []
    h.append("/* kinds_schema.h - GENERATED by tools/gen_kind_schemas.py; do not edit.")
    h.append(" *")
    h.append(" * The field table of each served built-in and Karmada kind (and ObjectMeta), for")
    h.append(" * the kind table in kinds_builtin.c; static data for the life of the process.")
    h.append(" */")
    h.append("#ifndef FL_KINDS_SCHEMA_H")
    h.append("#define FL_KINDS_SCHEMA_H")
    h.append("")
    h.append('#include "api/kinds.h"')
    h.append("")
    for c, _ in ROOTS + OWN_ROOTS:
        h.append("extern const fl_field fl_schema_%s[];" % c)
    h.append("")
    h.append("#endif")
    with open(a.out_h, "w") as f:
        f.write("\n".join(h) + "\n")


if __name__ == "__main__":
    main()
