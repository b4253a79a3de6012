"""The built-in kinds a chart carries besides workloads (issue 41): a web app's whole bundle -
Deployment, Service, Ingress, HorizontalPodAutoscaler, PodDisruptionBudget, NetworkPolicy,
ServiceAccount, Role, RoleBinding, ConfigMap, Secret, CronJob and PriorityClass - applies
unchanged with `kubectl apply -f`, propagates to two members, and prints, patches, explains
and validates as kube-apiserver 1.32 would. Driven with /usr/bin/kubectl on `flotilla up`.
"""
import base64
import json
import os
import re
import subprocess
import tempfile

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from conftest import running_fleet, wait_for

NS = "webapp"


def make_csr_pem_b64():
    """A real PKCS#10 request (CN=jane, O=devs), base64 as the API's bytes fields carry it."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", os.path.join(d, "k"), "-subj", "/CN=jane/O=devs",
                        "-out", os.path.join(d, "r")], check=True, capture_output=True)
        return base64.b64encode(open(os.path.join(d, "r"), "rb").read()).decode()


CSR_PEM_B64 = make_csr_pem_b64()

BUNDLE = """
apiVersion: v1
kind: Namespace
metadata: {name: webapp}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: webapp-high}
value: 100000
globalDefault: false
description: the web app's pods
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: webapp:metrics-reader
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web, namespace: webapp}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: webapp}
data: {LOG_LEVEL: info}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: webapp}
stringData: {password: s3cret}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: web-reader, namespace: webapp}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web-reader, namespace: webapp}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web-reader}
subjects:
- {kind: ServiceAccount, name: web, namespace: webapp}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: webapp, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      priorityClassName: webapp-high
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
        envFrom: [{configMapRef: {name: web-config}}]
        resources: {requests: {cpu: 100m, memory: 64Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: webapp}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: webapp}
spec:
  ingressClassName: nginx
  tls: [{hosts: [web.example.com], secretName: web-tls}]
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: web, port: {number: 80}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: webapp}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: webapp}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: webapp}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - ports: [{protocol: TCP, port: 80}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: web-report, namespace: webapp}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox:1.36, command: [sh, -c, "echo report"]}]
"""

# (apiVersion, kind, kubectl resource, name) of every object of the bundle a member must get
NAMESPACED = [
    ("v1", "ServiceAccount", "serviceaccount", "web"),
    ("v1", "ConfigMap", "configmap", "web-config"),
    ("v1", "Secret", "secret", "web-secret"),
    ("rbac.authorization.k8s.io/v1", "Role", "role", "web-reader"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebinding", "web-reader"),
    ("apps/v1", "Deployment", "deployment", "web"),
    ("v1", "Service", "service", "web"),
    ("networking.k8s.io/v1", "Ingress", "ingress", "web"),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "hpa", "web"),
    ("policy/v1", "PodDisruptionBudget", "pdb", "web"),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicy", "web"),
    ("batch/v1", "CronJob", "cronjob", "web-report"),
]

POLICIES = {
    "apiVersion": "v1", "kind": "List", "items": [
        # a PropagationPolicy selects in its own namespace; cluster-scoped kinds take a
        # ClusterPropagationPolicy, as in Karmada
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
         "metadata": {"name": "webapp", "namespace": NS},
         "spec": {"resourceSelectors": [{"apiVersion": a, "kind": k, "name": n} for a, k, _, n in NAMESPACED],
                  "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
         "metadata": {"name": "webapp-cluster-scoped"},
         "spec": {"resourceSelectors": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                         "name": "webapp-high"},
                                        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                         "name": "webapp:metrics-reader"}],
                  "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}},
    ]}


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=2) as f:
        yield f


@pytest.fixture(scope="module")
def bundle(fleet):
    """The bundle applied from a file, as `kubectl apply -f app.yaml` does, and its policies."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(BUNDLE)
    try:
        r = fleet.kubectl("apply", "-f", f.name)
    finally:
        os.unlink(f.name)
    assert r.stdout.count("created") == 15, r.stdout
    fleet.kubectl("apply", "-f", "-", input=json.dumps(POLICIES))
    return fleet


def table(fleet, *args):
    """`kubectl get ARGS` as printed: per block {"header": [...], "rows": [{HEADER: cell}]}, cells
    cut at the header's column positions (an empty cell stays empty)."""
    out = fleet.kubectl("get", *args).stdout
    blocks = []
    for line in out.splitlines():
        if not line.strip():
            continue
        if line.startswith("NAME"):
            names = re.findall(r"\S+(?: \S+)*", line)
            starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", line)]
            blocks.append({"header": names, "starts": starts, "rows": []})
            continue
        b = blocks[-1]
        bounds = b["starts"][1:] + [None]
        b["rows"].append({h: line[s:e].strip() for h, s, e in zip(b["header"], b["starts"], bounds)})
    return blocks


def test_bundle_applies_unchanged_and_reaches_both_members(bundle):
    fleet = bundle
    for member in ("member1", "member2"):
        for _, kind, res, name in NAMESPACED:
            wait_for(lambda: fleet.get(res, name, "-n", NS, member=member) is not None, timeout=60,
                     what=f"{kind} {name} in {member}")
        wait_for(lambda: fleet.get("priorityclass", "webapp-high", member=member) is not None, timeout=60,
                 what=f"PriorityClass in {member}")
        # an RBAC name with a colon (as system:... roles have) propagates too
        wait_for(lambda: fleet.get("clusterrole", "webapp:metrics-reader", member=member) is not None, timeout=60,
                 what=f"ClusterRole webapp:metrics-reader in {member}")
    # what a member got is what was applied
    role = fleet.get("role", "web-reader", "-n", NS, member="member2")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps", "secrets"],
                              "verbs": ["get", "list", "watch"]}]
    rb = fleet.get("rolebinding", "web-reader", "-n", NS, member="member1")
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "web-reader"}
    hpa = fleet.get("hpa", "web", "-n", NS, member="member1")
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    ing = fleet.get("ingress", "web", "-n", NS, member="member2")
    assert ing["spec"]["rules"][0]["http"]["paths"][0]["pathType"] == "Prefix"
    assert fleet.get("priorityclass", "webapp-high", member="member2")["value"] == 100000
    # and the binding of every kind says so on the control plane
    rbs = fleet.get("resourcebindings", "-n", NS)["items"]
    kinds = {b["spec"]["resource"]["kind"] for b in rbs}
    assert {"Role", "RoleBinding", "Ingress", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "NetworkPolicy"} <= kinds, kinds


def test_tables_print_as_kubectl_prints_them(bundle):
    # once both members reported (2 replicas each, an ingress address each), summed on the template
    def reported():
        st = bundle.get("hpa", "web", "-n", NS).get("status") or {}
        ing = (bundle.get("ingress", "web", "-n", NS).get("status") or {}).get("loadBalancer") or {}
        return st.get("currentReplicas") == 4 and len(ing.get("ingress") or []) == 2

    wait_for(reported, timeout=60, what="the members' HPA and Ingress status")
    blocks = table(bundle, "hpa,pdb,ingress,role,rolebinding", "-n", NS)
    by_header = {tuple(b["header"]): b["rows"] for b in blocks}
    hpa = by_header[("NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE")][0]
    assert {k: v for k, v in hpa.items() if k != "AGE"} == {
        "NAME": "horizontalpodautoscaler.autoscaling/web", "REFERENCE": "Deployment/web",
        "TARGETS": "cpu: <unknown>/70%", "MINPODS": "2", "MAXPODS": "10", "REPLICAS": "4"}, hpa
    pdb = by_header[("NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE")][0]
    assert (pdb["NAME"], pdb["MIN AVAILABLE"], pdb["MAX UNAVAILABLE"]) == \
        ("poddisruptionbudget.policy/web", "1", "N/A")
    ing = by_header[("NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE")][0]
    assert (ing["CLASS"], ing["HOSTS"], ing["PORTS"]) == ("nginx", "web.example.com", "80, 443")
    assert ing["ADDRESS"].startswith("10.") and ing["ADDRESS"].endswith("..."), ing  # two addresses, clipped
    assert ("NAME", "CREATED AT") in by_header
    assert by_header[("NAME", "CREATED AT")][0]["NAME"] == "role.rbac.authorization.k8s.io/web-reader"
    rb = by_header[("NAME", "ROLE", "AGE")][0]
    assert rb["ROLE"] == "Role/web-reader"
    wide = table(bundle, "rolebinding", "web-reader", "-n", NS, "-o", "wide")[0]
    assert wide["header"] == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert wide["rows"][0]["USERS"] == "jane" and wide["rows"][0]["SERVICEACCOUNTS"] == "webapp/web"
    pc = table(bundle, "pc", "webapp-high")[0]
    assert pc["header"] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert pc["rows"][0]["VALUE"] == "100000" and pc["rows"][0]["GLOBAL-DEFAULT"] == "false"
    netpol = table(bundle, "netpol", "-n", NS)[0]
    assert netpol["rows"][0]["POD-SELECTOR"] == "app=web"


def test_discovery_names_as_kubectl_knows_them(fleet):
    out = fleet.kubectl("api-resources", "-o", "wide").stdout
    rows = {}
    for line in out.splitlines()[1:]:
        parts = line.split()
        rows.setdefault(parts[0], parts)
    for res, short in [("horizontalpodautoscalers", "hpa"), ("poddisruptionbudgets", "pdb"),
                       ("ingresses", "ing"), ("networkpolicies", "netpol"), ("priorityclasses", "pc"),
                       ("storageclasses", "sc"), ("persistentvolumes", "pv"), ("endpoints", "ep"),
                       ("limitranges", "limits"), ("resourcequotas", "quota"),
                       ("replicationcontrollers", "rc")]:
        assert res in rows and rows[res][1] == short, (res, rows.get(res))
    for res in ("roles", "clusterroles", "rolebindings", "clusterrolebindings", "ingressclasses", "csidrivers",
                "endpointslices", "validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        assert res in rows, res
    # short names resolve, and cluster scope is cluster scope
    fleet.kubectl("get", "hpa,pdb,ing,netpol,ep,limits,quota,rc", "-A")
    fleet.kubectl("get", "pc,sc,pv,clusterroles,clusterrolebindings,csidrivers,ingressclasses")


def test_server_side_apply_patch_and_explain_on_new_kinds(fleet):
    cr = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
          "metadata": {"name": "webapp:aggregate", "labels": {"team": "web"}},
          "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]},
          "rules": []}
    fleet.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(cr))
    got = fleet.get("clusterrole", "webapp:aggregate", "--show-managed-fields")
    assert got["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"] == {"rbac.example.com/aggregate": "true"}
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in got["metadata"]["managedFields"])
    # a second manager's conflicting claim is refused, as on kube-apiserver
    cr2 = dict(cr, metadata={"name": "webapp:aggregate", "labels": {"team": "other"}})
    r = fleet.kubectl("apply", "--server-side", "--field-manager=intruder", "-f", "-", input=json.dumps(cr2),
                      check=False)
    assert r.returncode != 0 and "conflict" in r.stderr.lower(), r.stderr
    # strategic merge patch on a new kind: the merge key of a NetworkPolicy's lists is whole-list
    np = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": "ssa-np", "namespace": "default"},
          "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 80}]}]}}
    fleet.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(np))
    fleet.kubectl("patch", "netpol", "ssa-np", "-n", "default", "--type", "strategic",
                  "-p", json.dumps({"metadata": {"labels": {"x": "y"}}, "spec": {"policyTypes": ["Ingress", "Egress"]}}))
    got = fleet.get("netpol", "ssa-np", "-n", "default")
    assert got["spec"]["policyTypes"] == ["Ingress", "Egress"] and got["metadata"]["labels"] == {"x": "y"}
    assert got["spec"]["ingress"] == [{"ports": [{"port": 80}]}]
    # kubectl diff against the stored object
    np["spec"]["ingress"][0]["ports"][0]["port"] = 8080
    r = fleet.kubectl("diff", "-f", "-", input=json.dumps(np), check=False)
    assert r.returncode == 1 and "8080" in r.stdout, (r.returncode, r.stdout, r.stderr)
    # explain reads the served OpenAPI
    out = fleet.kubectl("explain", "hpa.spec.scaleTargetRef").stdout
    assert "KIND:" in out and "HorizontalPodAutoscaler" in out and "name" in out, out
    out = fleet.kubectl("explain", "ingress.spec.rules.http.paths").stdout
    assert "pathType" in out and "backend" in out, out
    out = fleet.kubectl("explain", "clusterrole.aggregationRule").stdout
    assert "clusterRoleSelectors" in out, out


@pytest.mark.parametrize("doc,field", [
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
      "metadata": {"name": "bad-rb", "namespace": "default"},
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role"}}, "roleRef.name: Required value"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
      "metadata": {"name": "bad-role", "namespace": "default"},
      "rules": [{"apiGroups": [""], "resources": ["pods"]}]},
     "rules[0].verbs: Required value: verbs must contain at least one value"),
    ({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
      "metadata": {"name": "bad-pdb", "namespace": "default"},
      "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}}},
     "minAvailable and maxUnavailable cannot be both set"),
    ({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
      "metadata": {"name": "bad-hpa", "namespace": "default"}, "spec": {"maxReplicas": 3}},
     "spec.scaleTargetRef.kind: Required value"),
    ({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
      "metadata": {"name": "bad-ing", "namespace": "default"},
      "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
     "spec.rules[0].http.paths[0].pathType: Required value"),
    ({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "too-high"},
      "value": 2000000000}, "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    ({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "bad-csr"},
      "spec": {"request": "aGVsbG8=", "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}},
     "spec.request: Invalid value: \"<bytes>\": PEM block type must be CERTIFICATE REQUEST"),
    ({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
      "metadata": {"name": "bad-vapb"}, "spec": {"validationActions": ["Deny"]}}, "spec.policyName: Required value"),
    ({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.wrong.example.com"},
      "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 10}},
     "metadata.name: Invalid value"),
    ({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
      "metadata": {"name": "bad-hpa1", "namespace": "default",
                   "annotations": {"autoscaling.alpha.kubernetes.io/metrics": "not json"}},
      "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}},
     "metadata.annotations[autoscaling.alpha.kubernetes.io/metrics]: Invalid value: must be a JSON list"),
])
def test_malformed_objects_are_refused_naming_the_field(fleet, doc, field):
    r = fleet.kubectl("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert r.returncode != 0 and field in r.stderr and "is invalid" in r.stderr, r.stderr
    # nothing was stored
    res = {"RoleBinding": "rolebinding", "Role": "role", "PodDisruptionBudget": "pdb",
           "HorizontalPodAutoscaler": "hpa", "Ingress": "ingress", "PriorityClass": "pc",
           "CertificateSigningRequest": "csr", "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybinding",
           "APIService": "apiservice"}[doc["kind"]]
    ns = ["-n", "default"] if doc["metadata"].get("namespace") else []
    assert fleet.get(res, doc["metadata"]["name"], *ns) is None


def test_a_binding_role_ref_is_immutable_and_the_status_is_422(fleet):
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "fixed-ref", "namespace": "default"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]}
    fleet.kubectl("apply", "-f", "-", input=json.dumps(rb))
    rb["roleRef"]["name"] = "edit"
    r = fleet.kubectl("replace", "-f", "-", input=json.dumps(rb), check=False)
    assert r.returncode != 0 and "roleRef: Invalid value" in r.stderr and "cannot change roleRef" in r.stderr, \
        r.stderr
    # the Status the official Python client gets: 422 Invalid, one cause naming the field
    api = client.RbacAuthorizationV1Api(config.new_client_from_config(config_file=fleet.kubeconfig))
    bad = {**rb, "metadata": {"name": "no-kind", "namespace": "default"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Pod", "name": "x"}}
    with pytest.raises(ApiException) as e:
        api.create_namespaced_role_binding("default", bad)
    body = json.loads(e.value.body)
    assert e.value.status == 422 and body["reason"] == "Invalid", body
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == \
        [("roleRef.kind", "FieldValueNotSupported")], body


def test_kubectl_typed_create_commands_send_protobuf_and_are_stored_as_meant(fleet):
    """kubectl's create role/rolebinding/clusterrolebinding/pdb/ingress/priorityclass/quota send
    protobuf bodies from its typed clients; they decode into what kubectl meant."""
    ns = ["-n", "default"]
    fleet.kubectl("create", "role", "pb-role", "--verb=get,list", "--resource=pods", *ns)
    fleet.kubectl("create", "rolebinding", "pb-rb", "--role=pb-role", "--user=jane",
                  "--serviceaccount=default:builder", *ns)
    fleet.kubectl("create", "clusterrolebinding", "pb-crb", "--clusterrole=view", "--group=devs")
    fleet.kubectl("create", "pdb", "pb-pdb", "--selector=app=x", "--max-unavailable=25%", *ns)
    fleet.kubectl("create", "ingress", "pb-ing", "--class=nginx", "--rule=foo.example.com/api*=api:8080", *ns)
    fleet.kubectl("create", "priorityclass", "pb-pc", "--value=1000", "--preemption-policy=Never")
    fleet.kubectl("create", "quota", "pb-quota", "--hard=pods=10,limits.cpu=2", *ns)
    role = fleet.get("role", "pb-role", *ns)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}], role
    rb = fleet.get("rolebinding", "pb-rb", *ns)
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pb-role"}
    assert {(s["kind"], s["name"]) for s in rb["subjects"]} == {("User", "jane"), ("ServiceAccount", "builder")}
    assert fleet.get("clusterrolebinding", "pb-crb")["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]
    assert fleet.get("pdb", "pb-pdb", *ns)["spec"]["maxUnavailable"] == "25%"
    path = fleet.get("ingress", "pb-ing", *ns)["spec"]["rules"][0]["http"]["paths"][0]
    assert path == {"path": "/api", "pathType": "Prefix",
                    "backend": {"service": {"name": "api", "port": {"number": 8080}}}}, path
    pc = fleet.get("pc", "pb-pc")
    assert (pc["value"], pc["preemptionPolicy"]) == (1000, "Never")
    assert fleet.get("quota", "pb-quota", *ns)["spec"]["hard"] == {"pods": "10", "limits.cpu": "2"}


# A minimal valid object of every kind this change serves.
EVERY_KIND = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "e-role"},
     "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "e-cr"},
     "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "e-rb"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "e-role"},
     "subjects": [{"kind": "ServiceAccount", "name": "default"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "e-crb"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "e-cr"},
     "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
    {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "e-ing"},
     "spec": {"defaultBackend": {"service": {"name": "web", "port": {"name": "http"}}}}},
    {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "e-ic"},
     "spec": {"controller": "example.com/ingress"}},
    {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "e-np"},
     "spec": {"podSelector": {}, "policyTypes": ["Egress"]}},
    {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "e-hpa"},
     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}, "maxReplicas": 3}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "e-pdb"},
     "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "db"}}}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "e-pc"}, "value": 10},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "e-sc"},
     "provisioner": "example.com/csi", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "e.csi.example.com"},
     "spec": {"attachRequired": False, "volumeLifecycleModes": ["Persistent"]}},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "e-pv"},
     "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}},
    {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e-ep"},
     "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "e-lr"},
     "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "e-quota"}, "spec": {"hard": {"pods": "10"}}},
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "e-rc"},
     "spec": {"replicas": 1, "selector": {"app": "rc"},
              "template": {"metadata": {"labels": {"app": "rc"}},
                           "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}},
    {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "e-eps"},
     "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
     "metadata": {"name": "e-vwc"},
     "webhooks": [{"name": "check.e.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                   "clientConfig": {"url": "https://hooks.example.com/check"}}]},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
     "metadata": {"name": "e-mwc"},
     "webhooks": [{"name": "mutate.e.example.com", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"],
                   "clientConfig": {"service": {"name": "hooks", "namespace": "default"}}}]},
    # the second part of issue 41's kinds
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
     "metadata": {"name": "e-vap"},
     "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
         {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
          "resources": ["deployments"]}]},
              "validations": [{"expression": "object.spec.replicas <= 5"}]}},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
     "metadata": {"name": "e-vapb"}, "spec": {"policyName": "e-vap", "validationActions": ["Deny"]}},
    {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e-ev"},
     "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal", "reason": "Tested", "action": "Testing",
     "note": "an event", "reportingController": "example.com/tester", "reportingInstance": "tester-1",
     "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"}},
    {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1beta1.metrics.k8s.io"},
     "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
              "insecureSkipTLSVerify": True, "service": {"name": "metrics-server", "namespace": "kube-system"}}},
    {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "e-csr"},
     "spec": {"request": CSR_PEM_B64, "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
              "expirationSeconds": 3600}},
    {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "e-hpa1"},
     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 4,
              "targetCPUUtilizationPercentage": 60}},
]
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "IngressClass", "PriorityClass", "StorageClass", "CSIDriver",
                  "PersistentVolume", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "APIService",
                  "CertificateSigningRequest"}


@pytest.mark.parametrize("doc", EVERY_KIND, ids=[d["kind"] for d in EVERY_KIND])
def test_every_new_kind_applies_server_side_diffs_prints_and_explains(fleet, doc):
    doc = json.loads(json.dumps(doc))
    ns = [] if doc["kind"] in CLUSTER_SCOPED else ["-n", "default"]
    r = fleet.kubectl("apply", "--server-side", *ns, "-f", "-", input=json.dumps(doc))
    assert "serverside-applied" in r.stdout, r.stdout
    res = f'{doc["kind"].lower()}.{doc["apiVersion"].split("/")[0]}' if "/" in doc["apiVersion"] \
        else doc["kind"].lower()
    name = doc["metadata"]["name"]
    got = fleet.get(res, name, *ns)
    assert got is not None and got["kind"] == doc["kind"], got
    # the table prints its columns for the object
    out = fleet.kubectl("get", res, name, *ns).stdout.splitlines()
    assert out[0].startswith("NAME") and out[1].startswith(name), out
    # a change shows in kubectl diff (exit 1), and nothing changes by asking
    doc["metadata"]["labels"] = {"changed": "v2"}
    r = fleet.kubectl("diff", "--server-side", *ns, "-f", "-", input=json.dumps(doc), check=False)
    assert r.returncode == 1 and "changed: v2" in r.stdout, (r.returncode, r.stdout, r.stderr)
    assert "labels" not in fleet.get(res, name, *ns)["metadata"]
    # explain reads the served OpenAPI for the kind
    out = fleet.kubectl("explain", doc["kind"].lower(), f"--api-version={doc['apiVersion']}").stdout
    assert f"KIND:       {doc['kind']}" in out and f"VERSION:    {doc['apiVersion'].split('/')[-1]}" in out, out


def test_strategic_merge_patch_merges_webhooks_by_name(fleet):
    """kubectl patch (strategic) on a webhook configuration merges its webhooks by name, as
    upstream's patchMergeKey says; client-side apply uses the same keys."""
    vwc = next(d for d in EVERY_KIND if d["kind"] == "ValidatingWebhookConfiguration")
    vwc = dict(vwc, metadata={"name": "smp-vwc"})
    fleet.kubectl("apply", "-f", "-", input=json.dumps(vwc))
    fleet.kubectl("patch", "validatingwebhookconfiguration", "smp-vwc", "--type", "strategic", "-p", json.dumps(
        {"webhooks": [{"name": "second.e.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                       "clientConfig": {"url": "https://hooks.example.com/second"}},
                      {"name": "check.e.example.com", "timeoutSeconds": 5}]}))
    hooks = {w["name"]: w for w in fleet.get("validatingwebhookconfiguration", "smp-vwc")["webhooks"]}
    assert set(hooks) == {"check.e.example.com", "second.e.example.com"}, hooks
    assert hooks["check.e.example.com"]["timeoutSeconds"] == 5
    assert hooks["check.e.example.com"]["clientConfig"] == {"url": "https://hooks.example.com/check"}
    out = table(fleet, "validatingwebhookconfiguration", "smp-vwc")[0]
    assert out["header"] == ["NAME", "WEBHOOKS", "AGE"] and out["rows"][0]["WEBHOOKS"] == "2", out


def test_kubectl_autoscale_posts_v1_and_both_versions_show_one_object(fleet):
    """kubectl 1.32's autoscale posts autoscaling/v1 (protobuf); the object is one, stored as v2,
    and each version shows it in its own form, as kube-apiserver converts it."""
    fleet.kubectl("create", "deployment", "auto", "--image=nginx:1.25", "-n", "default")
    out = fleet.kubectl("autoscale", "deployment", "auto", "--min", "2", "--max", "5", "--cpu-percent", "80",
                        "-n", "default").stdout
    assert "autoscaled" in out, out
    v2 = fleet.get("horizontalpodautoscalers.v2.autoscaling", "auto", "-n", "default")
    assert v2["apiVersion"] == "autoscaling/v2" and v2["spec"]["minReplicas"] == 2
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}], v2["spec"]
    path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/auto"
    v1 = json.loads(fleet.kubectl("get", "--raw", path).stdout)
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 80, v1
    assert "metrics" not in v1["spec"] and v1["metadata"]["uid"] == v2["metadata"]["uid"]
    # a v1 merge patch, then a v2 metric beside the CPU one: v1 keeps it in its annotation
    fleet.kubectl("patch", "horizontalpodautoscalers.v1.autoscaling", "auto", "-n", "default", "--type", "merge",
                  "-p", json.dumps({"spec": {"targetCPUUtilizationPercentage": 65, "maxReplicas": 6}}))
    fleet.kubectl("patch", "horizontalpodautoscalers.v2.autoscaling", "auto", "-n", "default", "--type", "json",
                  "-p", json.dumps([{"op": "add", "path": "/spec/metrics/-", "value": {
                      "type": "Pods", "pods": {"metric": {"name": "qps"},
                                               "target": {"type": "AverageValue", "averageValue": "10"}}}}]))
    v2 = fleet.get("horizontalpodautoscalers.v2.autoscaling", "auto", "-n", "default")
    assert v2["spec"]["maxReplicas"] == 6 and v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 65
    v1 = json.loads(fleet.kubectl("get", "--raw", path).stdout)
    extra = json.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"])
    assert extra == [{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}], extra
    # writing the v1 form back (a replace) keeps the v2-only metric
    r = subprocess.run(["curl", "-sk", "-X", "PUT", "-H", "Content-Type: application/json", "--data",
                        json.dumps(v1), "--config", "-"], input=curl_auth(fleet) + f'url = "{server_url(fleet)}{path}"\n',
                       capture_output=True, text=True)
    assert json.loads(r.stdout)["apiVersion"] == "autoscaling/v1", r.stdout
    v2 = fleet.get("horizontalpodautoscalers.v2.autoscaling", "auto", "-n", "default")
    assert [m["type"] for m in v2["spec"]["metrics"]] == ["Resource", "Pods"], v2["spec"]
    # a v1 list and watch speak v1
    lst = json.loads(fleet.kubectl("get", "--raw", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers")
                     .stdout)
    assert lst["apiVersion"] == "autoscaling/v1" and all(i["apiVersion"] == "autoscaling/v1" for i in lst["items"])
    watch = fleet.kubectl("get", "--raw", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
                          "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dauto").stdout
    ev = json.loads(watch.splitlines()[0])
    assert ev["type"] == "ADDED" and ev["object"]["apiVersion"] == "autoscaling/v1" \
        and ev["object"]["spec"]["targetCPUUtilizationPercentage"] == 65, ev


def server_url(fleet):
    return json.loads(fleet.kubectl("config", "view", "--raw", "-o", "json").stdout)["clusters"][0]["cluster"]["server"]


def curl_auth(fleet):
    """curl --config lines with the kubeconfig's bearer token (the command line would show it)."""
    user = json.loads(fleet.kubectl("config", "view", "--raw", "-o", "json").stdout)["users"][0]["user"]
    return f'header = "Authorization: Bearer {user["token"]}"\n'


def test_certificate_approve_and_deny_store_conditions(fleet):
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "jane"},
           "spec": {"request": CSR_PEM_B64, "signerName": "kubernetes.io/kube-apiserver-client",
                    "usages": ["digital signature", "client auth"], "expirationSeconds": 86400}}
    # the body's claim of who asks is replaced by the requester's identity, as upstream does
    fleet.kubectl("apply", "-f", "-", input=json.dumps(dict(csr, spec=dict(csr["spec"], username="mallory"))))
    row = table(fleet, "csr", "jane")[0]["rows"][0]
    assert row["CONDITION"] == "Pending" and row["REQUESTOR"] == "admin", row
    assert "system:masters" in fleet.get("csr", "jane")["spec"]["groups"]
    # kubectl certificate approve PUTs the /approval subresource (protobuf), which discovery lists
    names = [r["name"] for r in json.loads(fleet.kubectl("get", "--raw", "/apis/certificates.k8s.io/v1").stdout)
             ["resources"]]
    assert names == ["certificatesigningrequests", "certificatesigningrequests/approval",
                     "certificatesigningrequests/status"], names
    fleet.kubectl("certificate", "approve", "jane")
    got = fleet.get("csr", "jane")
    assert [(c["type"], c["status"]) for c in got["status"]["conditions"]] == [("Approved", "True")], got["status"]
    row = table(fleet, "csr", "jane")[0]["rows"][0]
    assert row["CONDITION"] == "Approved" and row["REQUESTEDDURATION"] == "24h", row
    # the spec is immutable
    csr["spec"]["usages"] = ["client auth"]
    r = fleet.kubectl("replace", "-f", "-", input=json.dumps(dict(csr, metadata=got["metadata"])), check=False)
    assert r.returncode != 0 and "spec: Invalid value" in r.stderr and "field is immutable" in r.stderr, r.stderr


def test_replication_controller_scale_subresource(fleet):
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc-scale", "namespace": "default"},
          "spec": {"replicas": 1, "selector": {"app": "rc-scale"},
                   "template": {"metadata": {"labels": {"app": "rc-scale"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    fleet.kubectl("apply", "-f", "-", input=json.dumps(rc))
    fleet.kubectl("scale", "rc", "rc-scale", "--replicas=3", "-n", "default")
    assert fleet.get("rc", "rc-scale", "-n", "default")["spec"]["replicas"] == 3
    scale = json.loads(fleet.kubectl("get", "--raw",
                                     "/api/v1/namespaces/default/replicationcontrollers/rc-scale/scale").stdout)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 3 and scale["status"]["selector"] == "app=rc-scale"


def test_admission_policies_and_api_services_propagate_as_stored_data(fleet):
    docs = [d for d in EVERY_KIND if d["kind"] in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                                    "APIService")]
    docs = [dict(d, metadata={"name": "p-" + d["metadata"]["name"]}) if d["kind"] != "APIService" else
            dict(d, metadata={"name": "v1beta1.custom.metrics.k8s.io"},
                 spec=dict(d["spec"], group="custom.metrics.k8s.io")) for d in docs]
    docs[1]["spec"] = dict(docs[1]["spec"], policyName="p-e-vap")
    fleet.kubectl("apply", "-f", "-", input="".join("---\n" + json.dumps(d) + "\n" for d in docs))
    cpp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
           "metadata": {"name": "admission-policies"},
           "spec": {"resourceSelectors": [{"apiVersion": d["apiVersion"], "kind": d["kind"],
                                           "name": d["metadata"]["name"]} for d in docs],
                    "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}}
    fleet.kubectl("apply", "-f", "-", input=json.dumps(cpp))
    for member in ("member1", "member2"):
        for d in docs:
            res = f'{d["kind"].lower()}.{d["apiVersion"].split("/")[0]}'
            wait_for(lambda: fleet.get(res, d["metadata"]["name"], member=member) is not None, timeout=60,
                     what=f'{d["kind"]} on {member}')
    vap = fleet.get("validatingadmissionpolicy", "p-e-vap", member="member2")
    assert vap["spec"]["validations"] == [{"expression": "object.spec.replicas <= 5"}]


def test_events_k8s_io_events_are_the_core_events(fleet):
    """One collection through both APIs, as kube-apiserver serves it: an event recorded through
    events.k8s.io/v1 is a core/v1 Event with the core names, and back; events.k8s.io's stricter
    create rules still apply."""
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "both-ways", "namespace": "default"},
          "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Warning", "reason": "Broken", "action": "Checking",
          "note": "seen from both APIs", "reportingController": "example.com/checker", "reportingInstance": "c-1",
          "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"}}
    fleet.kubectl("create", "-f", "-", input=json.dumps(ev))
    core = fleet.get("events.v1.", "both-ways", "-n", "default")
    assert core["apiVersion"] == "v1" and core["message"] == "seen from both APIs", core
    assert core["involvedObject"]["name"] == "web" and core["reportingComponent"] == "example.com/checker", core
    fleet.kubectl("patch", "events.v1.events.k8s.io", "both-ways", "-n", "default", "--type", "merge",
                  "-p", json.dumps({"note": "patched through events.k8s.io"}))
    assert fleet.get("events.v1.", "both-ways", "-n", "default")["message"] == "patched through events.k8s.io"
    lst = json.loads(fleet.kubectl("get", "--raw", "/apis/events.k8s.io/v1/namespaces/default/events").stdout)
    mine = [i for i in lst["items"] if i["metadata"]["name"] == "both-ways"][0]
    assert mine["apiVersion"] == "events.k8s.io/v1" and mine["note"] == "patched through events.k8s.io" \
        and "message" not in mine, mine
    row = table(fleet, "events.v1.events.k8s.io", "both-ways", "-n", "default")[0]["rows"][0]
    assert row["TYPE"] == "Warning" and row["OBJECT"] == "deployment/web", row
    bad = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "no-time", "namespace": "default"},
           "type": "Normal"}
    r = fleet.kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0 and '"no-time" is invalid' in r.stderr and "eventTime: Required value" in r.stderr, \
        r.stderr
