"""The real /usr/bin/kubectl against flotilla server, the way users drive it: create/apply/get
with server-side columns, the three patch types, replace, delete, wait, get -w, selectors, a
CRD round trip, namespace deletion, generateName, server dry-run, metrics and api-resources."""
import json
import queue
import re
import subprocess
import threading
import time

import pytest

from conftest import KUBECTL, wait_for

NS = "kube-e2e"


@pytest.fixture(scope="module", autouse=True)
def namespace(server):
    mk_ns(server, NS)


def table(stdout):
    """Parse kubectl's table output into (header, rows) split on runs of 2+ spaces."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    assert lines, "no output"
    split = [re.split(r"\s{2,}", ln.strip()) for ln in lines]
    return split[0], split[1:]


def row(rows, name):
    for r in rows:
        if r[0] == name:
            return r
    raise AssertionError(f"no row {name!r} in {rows}")


def apply(server, manifest, *args):
    return server.kubectl("apply", "-f", "-", *args, input=json.dumps(manifest) if isinstance(manifest, dict)
                          else manifest)


def configmap(name, data, ns=NS, **meta):
    m = {"name": name, "namespace": ns}
    m.update(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": data}


def mk_ns(server, name):
    """Create a namespace from a manifest (JSON body; see test_imperative_create_commands for
    `kubectl create namespace`, which sends protobuf)."""
    server.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))


def mk_cm(server, name, ns, data):
    server.kubectl("create", "-f", "-", input=json.dumps(configmap(name, data, ns=ns)))


def mk_secret(server, name, ns):
    server.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
        "stringData": {"a": "b"}}))


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: web
        image: {image}
      - name: sidecar
        image: busybox:1.36
"""


def deployment(name, replicas=3, image="nginx:1.27", ns=NS):
    return DEPLOYMENT.format(name=name, ns=ns, replicas=replicas, image=image)


def names(out):
    return sorted(ln.split("/", 1)[1] for ln in out.split())


# ---------------------------------------------------------------- create / apply / get


def test_create_and_get_configmap_columns(server):
    r = server.kubectl("create", "-f", "-", input=json.dumps(configmap("created", {"a": "1", "b": "2"})))
    assert "configmap/created created" in r.stdout
    header, rows = table(server.kubectl("get", "configmap", "created", "-n", NS).stdout)
    assert header == ["NAME", "DATA", "AGE"]
    r0 = row(rows, "created")
    assert r0[1] == "2" and re.fullmatch(r"\d+s", r0[2]), r0

    again = server.kubectl("create", "-f", "-", input=json.dumps(configmap("created", {"a": "1"})), check=False)
    assert again.returncode != 0 and "AlreadyExists" in again.stderr, again.stderr


def test_get_namespaces_shows_status(server):
    header, rows = table(server.kubectl("get", "ns").stdout)
    assert header == ["NAME", "STATUS", "AGE"]
    assert row(rows, "default")[1] == "Active"
    assert row(rows, NS)[1] == "Active"


def test_apply_twice_second_is_a_patch(server):
    r = apply(server, configmap("applied", {"a": "1", "b": "2"}))
    assert "configmap/applied created" in r.stdout
    r = apply(server, configmap("applied", {"a": "1", "c": "3"}), "-v=6")
    assert "configmap/applied configured" in r.stdout
    patches = [ln for ln in r.stderr.splitlines() if "PATCH" in ln and "/configmaps/applied" in ln]
    assert patches, f"the second apply did not PATCH:\n{r.stderr[-3000:]}"
    obj = server.kubectl_json("get", "cm", "applied", "-n", NS)
    assert obj["data"] == {"a": "1", "c": "3"}, "apply's three-way merge must drop the removed key"
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]
    r = apply(server, configmap("applied", {"a": "1", "c": "3"}))
    assert "configmap/applied unchanged" in r.stdout


def test_apply_server_side(server):
    r = server.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(configmap("ssa", {"a": "1", "b": "2"})))
    assert "configmap/ssa serverside-applied" in r.stdout
    r = server.kubectl("apply", "--server-side", "--field-manager=intruder", "-f", "-",
                       input=json.dumps(configmap("ssa", {"a": "2"})), check=False)
    assert r.returncode != 0 and "conflict" in r.stderr.lower(), r.stderr
    assert server.kubectl_json("get", "cm", "ssa", "-n", NS)["data"] == {"a": "1", "b": "2"}
    r = server.kubectl("apply", "--server-side", "--field-manager=intruder", "--force-conflicts", "-f", "-",
                       input=json.dumps(configmap("ssa", {"a": "2"})))
    assert "serverside-applied" in r.stdout
    # kubectl's own apply drops b: it was the only owner
    r = server.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(configmap("ssa", {"c": "3"})))
    obj = server.kubectl_json("get", "cm", "ssa", "-n", NS, "--show-managed-fields")
    assert obj["data"] == {"a": "2", "c": "3"}, obj["data"]
    managers = {(m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"]}
    assert {("kubectl", "Apply"), ("intruder", "Apply")} <= managers, managers


def test_apply_deployment_and_get_columns(server):
    r = apply(server, deployment("webapp"))
    assert "deployment.apps/webapp created" in r.stdout
    r = apply(server, deployment("webapp", image="nginx:1.28"))
    assert "deployment.apps/webapp configured" in r.stdout
    d = server.kubectl_json("get", "deploy", "webapp", "-n", NS)
    assert [(c["name"], c["image"]) for c in d["spec"]["template"]["spec"]["containers"]] == [
        ("web", "nginx:1.28"), ("sidecar", "busybox:1.36")]
    assert d["metadata"]["generation"] == 2

    server.kubectl("patch", "deploy", "webapp", "-n", NS, "--subresource=status", "--type=merge", "-p",
                   json.dumps({"status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3,
                                          "availableReplicas": 2}}))
    header, rows = table(server.kubectl("get", "deploy", "-n", NS).stdout)
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    r0 = row(rows, "webapp")
    assert r0[1:4] == ["2/3", "3", "2"], r0

    header, rows = table(server.kubectl("get", "deploy", "webapp", "-n", NS, "-o", "wide").stdout)
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    r0 = row(rows, "webapp")
    assert r0[5:] == ["web,sidecar", "nginx:1.28,busybox:1.36", "app=webapp"], r0


def test_karmada_policy_and_cluster_objects(server):
    pp = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: %s
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - targetCluster: {clusterNames: [member1]}
          weight: 1
        - targetCluster: {clusterNames: [member2]}
          weight: 2
""" % NS
    assert "propagationpolicy.policy.karmada.io/nginx-propagation created" in apply(server, pp).stdout
    header, rows = table(server.kubectl("get", "pp", "-n", NS).stdout)
    assert header[0] == "NAME" and header[-1] == "AGE", header
    row(rows, "nginx-propagation")
    obj = server.kubectl_json("get", "propagationpolicies.policy.karmada.io", "nginx-propagation", "-n", NS)
    assert obj["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][1]["weight"] == 2

    cluster = """
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
spec:
  syncMode: Push
  apiEndpoint: https://172.18.0.3:6443
"""
    assert "cluster.cluster.karmada.io/member1 created" in server.kubectl("create", "-f", "-", input=cluster).stdout
    server.kubectl("patch", "cluster", "member1", "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"kubernetesVersion": "v1.31.2", "conditions": [
            {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy",
             "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}))
    header, rows = table(server.kubectl("get", "clusters").stdout)
    assert header == ["NAME", "VERSION", "MODE", "READY", "AGE"]
    assert row(rows, "member1")[1:4] == ["v1.31.2", "Push", "True"]


def test_resource_binding_columns(server):
    rb = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
          "metadata": {"name": "nginx-deployment", "namespace": NS},
          "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS, "name": "nginx"}}}
    server.kubectl("create", "-f", "-", input=json.dumps(rb))
    server.kubectl("patch", "rb", "nginx-deployment", "-n", NS, "--subresource=status", "--type=merge", "-p",
                   json.dumps({"status": {"conditions": [
                       {"type": "Scheduled", "status": "True", "reason": "Success", "message": "ok",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"},
                       {"type": "FullyApplied", "status": "False", "reason": "Pending", "message": "not yet",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}))
    header, rows = table(server.kubectl("get", "resourcebindings", "-n", NS).stdout)
    assert header == ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"]
    assert row(rows, "nginx-deployment")[1:3] == ["True", "False"]


# ---------------------------------------------------------------- patch / replace / delete


def containers(server, name):
    d = server.kubectl_json("get", "deploy", name, "-n", NS)
    return [(c["name"], c["image"]) for c in d["spec"]["template"]["spec"]["containers"]]


def test_patch_strategic_merges_containers_by_name(server):
    server.kubectl("create", "-f", "-", input=deployment("patched"))
    r = server.kubectl("patch", "deploy", "patched", "-n", NS, "--type", "strategic", "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}}))
    assert "deployment.apps/patched patched" in r.stdout
    assert containers(server, "patched") == [("web", "nginx:1.27"), ("sidecar", "busybox:1.37")]
    # the default type is strategic too
    server.kubectl("patch", "deploy", "patched", "-n", NS, "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "extra", "image": "redis:7"}]}}}}))
    assert sorted(containers(server, "patched")) == [("extra", "redis:7"), ("sidecar", "busybox:1.37"),
                                                     ("web", "nginx:1.27")]
    server.kubectl("patch", "deploy", "patched", "-n", NS, "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "extra", "$patch": "delete"}]}}}}))
    assert containers(server, "patched") == [("web", "nginx:1.27"), ("sidecar", "busybox:1.37")]


def test_patch_merge_replaces_lists(server):
    server.kubectl("create", "-f", "-", input=deployment("merged"))
    r = server.kubectl("patch", "deploy", "merged", "-n", NS, "--type", "merge", "-p",
                       json.dumps({"spec": {"replicas": 5}, "metadata": {"labels": {"team": "blue"}}}))
    assert "deployment.apps/merged patched" in r.stdout
    d = server.kubectl_json("get", "deploy", "merged", "-n", NS)
    assert d["spec"]["replicas"] == 5 and d["metadata"]["labels"]["team"] == "blue"
    server.kubectl("patch", "deploy", "merged", "-n", NS, "--type=merge", "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx:1.29"}]}}}}))
    assert containers(server, "merged") == [("only", "nginx:1.29")]


def test_patch_json(server):
    server.kubectl("create", "-f", "-", input=deployment("jsonpatched"))
    r = server.kubectl("patch", "deploy", "jsonpatched", "-n", NS, "--type", "json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.30"},
        {"op": "remove", "path": "/spec/template/spec/containers/1"},
        {"op": "add", "path": "/metadata/labels", "value": {"patched": "json"}}]))
    assert "deployment.apps/jsonpatched patched" in r.stdout
    assert containers(server, "jsonpatched") == [("web", "nginx:1.30")]
    bad = server.kubectl("patch", "deploy", "jsonpatched", "-n", NS, "--type", "json", "-p",
                         json.dumps([{"op": "test", "path": "/spec/replicas", "value": 99}]), check=False)
    assert bad.returncode != 0
    assert containers(server, "jsonpatched") == [("web", "nginx:1.30")]


def test_replace(server):
    server.kubectl("create", "-f", "-", input=json.dumps(configmap("replaced", {"v": "1"})))
    obj = server.kubectl_json("get", "cm", "replaced", "-n", NS)
    stale = json.loads(json.dumps(obj))
    obj["data"] = {"v": "2", "w": "3"}
    r = server.kubectl("replace", "-f", "-", input=json.dumps(obj))
    assert "configmap/replaced replaced" in r.stdout
    assert server.kubectl_json("get", "cm", "replaced", "-n", NS)["data"] == {"v": "2", "w": "3"}
    stale["data"] = {"v": "stale"}
    r = server.kubectl("replace", "-f", "-", input=json.dumps(stale), check=False)
    assert r.returncode != 0 and "Conflict" in r.stderr, r.stderr
    assert server.kubectl_json("get", "cm", "replaced", "-n", NS)["data"] == {"v": "2", "w": "3"}


def test_delete(server):
    mk_cm(server, "doomed", NS, {"a": "b"})
    r = server.kubectl("delete", "configmap", "doomed", "-n", NS)
    assert 'configmap "doomed" deleted' in r.stdout
    r = server.kubectl("get", "configmap", "doomed", "-n", NS, check=False)
    assert r.returncode != 0
    assert 'Error from server (NotFound): configmaps "doomed" not found' in r.stderr, r.stderr
    r = server.kubectl("delete", "configmap", "doomed", "-n", NS, check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr
    assert server.kubectl("delete", "configmap", "doomed", "-n", NS, "--ignore-not-found").returncode == 0

    for i in range(3):
        mk_cm(server, f"bulk{i}", NS, {"a": "b"})
        server.kubectl("label", "configmap", f"bulk{i}", "-n", NS, "bulk=yes")
    r = server.kubectl("delete", "configmap", "-n", NS, "-l", "bulk=yes")
    assert r.stdout.count("deleted") == 3, r.stdout
    assert server.kubectl("get", "cm", "-n", NS, "-l", "bulk=yes", "-o", "name").stdout.strip() == ""


# ---------------------------------------------------------------- wait and watch


def set_cluster_ready(server, name, status):
    code, body = server.curl("PATCH", f"/apis/cluster.karmada.io/v1alpha1/clusters/{name}/status",
                             {"status": {"conditions": [{"type": "Ready", "status": status, "reason": "Probe",
                                                         "message": "probe", "lastTransitionTime":
                                                             "2025-01-01T00:00:00Z"}]}},
                             content_type="application/merge-patch+json")
    assert code == 200, body


def test_wait_for_condition(server):
    server.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "waiter"},
        "spec": {"syncMode": "Pull"}}))
    set_cluster_ready(server, "waiter", "False")
    r = server.kubectl("wait", "--for=condition=Ready", "cluster/waiter", "--timeout=2s", check=False)
    assert r.returncode != 0 and "timed out" in r.stderr, (r.stdout, r.stderr)

    proc = subprocess.Popen([KUBECTL, "--kubeconfig", server.kubeconfig, "wait", "--for=condition=Ready",
                             "cluster/waiter", "--timeout=30s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        time.sleep(1.0)
        assert proc.poll() is None, "kubectl wait returned before the condition was met"
        set_cluster_ready(server, "waiter", "True")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "cluster.cluster.karmada.io/waiter condition met" in out

    # a deployment's Available condition, set with kubectl patch --subresource=status
    server.kubectl("create", "-f", "-", input=deployment("waited"))
    server.kubectl("patch", "deploy", "waited", "-n", NS, "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                    "message": "ok", "lastUpdateTime": "2025-01-01T00:00:00Z",
                                    "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}))
    r = server.kubectl("wait", "--for=condition=Available", "deploy/waited", "-n", NS, "--timeout=20s")
    assert "deployment.apps/waited condition met" in r.stdout


class Lines:
    """Lines of a background process's stdout, readable with deadlines."""

    def __init__(self, proc):
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc):
        for ln in proc.stdout:
            self.q.put(ln.rstrip("\n"))
        self.q.put(None)

    def wait_for(self, pred, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                ln = self.q.get(timeout=max(0.05, deadline - time.time()))
            except queue.Empty:
                break
            if ln is None:
                break
            self.seen.append(ln)
            if pred(ln):
                return ln
        raise AssertionError(f"no matching line within {timeout}s; got: {self.seen}")


def test_get_watch_shows_changes(server):
    ns = "kube-e2e-watch"
    mk_ns(server, ns)
    mk_cm(server, "early", ns, {"a": "b"})
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", server.kubeconfig, "get", "configmaps", "-n", ns, "-w",
                             "--output-watch-events"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = Lines(proc)
        lines.wait_for(lambda ln: ln.split()[:2] == ["ADDED", "early"])
        mk_cm(server, "late", ns, {"a": "b"})
        ln = lines.wait_for(lambda ln: "late" in ln.split())
        assert ln.split()[0] == "ADDED" and ln.split()[2] == "1", ln
        server.kubectl("patch", "configmap", "late", "-n", ns, "--type=merge", "-p", '{"data":{"c":"d"}}')
        ln = lines.wait_for(lambda ln: "late" in ln.split())
        assert ln.split()[0] == "MODIFIED" and ln.split()[2] == "2", ln
        server.kubectl("delete", "configmap", "late", "-n", ns)
        ln = lines.wait_for(lambda ln: "late" in ln.split())
        assert ln.split()[0] == "DELETED", ln
        assert proc.poll() is None, "kubectl get -w exited early: " + proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()

    # without --output-watch-events, as people usually type it
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", server.kubeconfig, "get", "configmaps", "-n", ns, "-w"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = Lines(proc)
        lines.wait_for(lambda ln: ln.split()[:1] == ["NAME"])
        lines.wait_for(lambda ln: ln.split()[:1] == ["early"])
        mk_cm(server, "later", ns, {"x": "y", "z": "w"})
        ln = lines.wait_for(lambda ln: ln.split()[:1] == ["later"])
        assert ln.split()[1] == "2", ln
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- selectors


@pytest.fixture(scope="module")
def labelled(server):
    ns = "kube-e2e-labels"
    mk_ns(server, ns)
    for name, labels in (("web-front", {"app": "web", "tier": "front"}), ("web-back", {"app": "web", "tier": "back"}),
                         ("db", {"app": "db"}), ("plain", {})):
        server.kubectl("create", "-f", "-", input=json.dumps(configmap(name, {"k": "v"}, ns=ns, labels=labels)))
    return ns


@pytest.mark.parametrize("selector,expected", [
    ("app=web", ["web-back", "web-front"]),
    ("app==db", ["db"]),
    ("app!=web", ["db", "plain"]),
    ("app in (web,db)", ["db", "web-back", "web-front"]),
    ("app notin (web)", ["db", "plain"]),
    ("tier", ["web-back", "web-front"]),
    ("!tier", ["db", "plain"]),
    ("app=web,tier=back", ["web-back"]),
    ("app,tier notin (front)", ["db", "web-back"]),
    ("app=nothing", []),
])
def test_label_selectors(server, labelled, selector, expected):
    r = server.kubectl("get", "configmaps", "-n", labelled, "-l", selector, "-o", "name")
    assert names(r.stdout) == expected, (selector, r.stdout)


def test_field_selectors(server, labelled):
    r = server.kubectl("get", "configmaps", "-n", labelled, "--field-selector", "metadata.name=db", "-o", "name")
    assert names(r.stdout) == ["db"]
    r = server.kubectl("get", "configmaps", "-n", labelled, "--field-selector", "metadata.name!=db", "-o", "name")
    assert names(r.stdout) == ["plain", "web-back", "web-front"]
    r = server.kubectl("get", "configmaps", "-A", "--field-selector", f"metadata.namespace={labelled}", "-o", "name")
    assert names(r.stdout) == ["db", "plain", "web-back", "web-front"]
    r = server.kubectl("get", "configmaps", "-n", labelled, "-l", "app=web", "--field-selector",
                       "metadata.name!=web-back", "-o", "name")
    assert names(r.stdout) == ["web-front"]

    mk_secret(server, "opaque-one", labelled)
    server.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "special-one", "namespace": labelled},
        "type": "example.com/special", "stringData": {"a": "b"}}))
    r = server.kubectl("get", "secrets", "-n", labelled, "--field-selector", "type=example.com/special", "-o", "name")
    assert names(r.stdout) == ["special-one"]
    r = server.kubectl("get", "secrets", "-n", labelled, "--field-selector", "type=Opaque", "-o", "name")
    assert names(r.stdout) == ["opaque-one"]

    bad = server.kubectl("get", "configmaps", "-n", labelled, "--field-selector", "spec.bogus=1", check=False)
    assert bad.returncode != 0 and "BadRequest" in bad.stderr, bad.stderr


# ---------------------------------------------------------------- CRDs


CRONTAB_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
              image: {type: string}
              replicas: {type: integer}
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
"""

CRONTAB = """
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: %s
spec:
  cronSpec: "*/5 * * * *"
  image: my-awesome-cron-image
  replicas: 3
"""


def test_crd_round_trip(server):
    ns = "kube-e2e-crd"
    mk_ns(server, ns)
    assert "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created" in \
        server.kubectl("create", "-f", "-", input=CRONTAB_CRD).stdout
    wait_for(lambda: server.kubectl("get", "crontabs", "-n", ns, check=False).returncode == 0, timeout=20,
             what="crontabs to be served")
    assert "crontab.stable.example.com/my-cron created" in \
        server.kubectl("create", "-f", "-", input=CRONTAB % ns).stdout
    header, rows = table(server.kubectl("get", "ct", "-n", ns).stdout)
    assert header == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert row(rows, "my-cron")[1:3] == ["*/5 * * * *", "3"]
    obj = server.kubectl_json("get", "crontab", "my-cron", "-n", ns)
    assert obj["spec"]["image"] == "my-awesome-cron-image" and obj["metadata"]["uid"]
    server.kubectl("patch", "ct", "my-cron", "-n", ns, "--type=merge", "-p", '{"spec":{"replicas":4}}')
    assert row(table(server.kubectl("get", "ct", "-n", ns).stdout)[1], "my-cron")[2] == "4"
    r = server.kubectl("api-resources", "--api-group=stable.example.com")
    assert any(ln.split()[:2] == ["crontabs", "ct"] for ln in r.stdout.splitlines()), r.stdout

    server.kubectl("delete", "crd", "crontabs.stable.example.com", timeout=60)

    def gone():
        r = server.kubectl("get", "crontabs", "-n", ns, check=False)
        return r.returncode != 0 and ("doesn't have a resource type" in r.stderr or "NotFound" in r.stderr or
                                      "could not find" in r.stderr)

    wait_for(gone, timeout=20, what="the crontabs resource type to disappear")
    r = server.kubectl("get", "--raw", f"/apis/stable.example.com/v1/namespaces/{ns}/crontabs", check=False)
    assert r.returncode != 0
    groups = json.loads(server.kubectl("get", "--raw", "/apis").stdout)["groups"]
    assert "stable.example.com" not in [g["name"] for g in groups]

    # re-creating the CRD must not bring the old objects back
    server.kubectl("create", "-f", "-", input=CRONTAB_CRD)
    wait_for(lambda: server.kubectl("get", "crontabs", "-n", ns, check=False).returncode == 0, timeout=20,
             what="crontabs to be served again")
    assert server.kubectl("get", "crontabs", "-n", ns, "-o", "name").stdout.strip() == ""
    server.kubectl("delete", "crd", "crontabs.stable.example.com", timeout=60)


def test_crd_becomes_established(server):
    crd = CRONTAB_CRD.replace("crontabs", "gizmos").replace("crontab", "gizmo").replace("CronTab", "Gizmo") \
        .replace("[ct]", "[gz]")
    server.kubectl("create", "-f", "-", input=crd)
    r = server.kubectl("wait", "--for", "condition=established", "--timeout=20s",
                       "crd/gizmos.stable.example.com")
    assert "condition met" in r.stdout
    obj = server.kubectl_json("get", "crd", "gizmos.stable.example.com")
    conds = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert conds.get("Established") == "True" and conds.get("NamesAccepted") == "True", conds
    assert obj["status"]["acceptedNames"]["kind"] == "Gizmo"
    server.kubectl("delete", "crd", "gizmos.stable.example.com")


# ---------------------------------------------------------------- namespaces, generateName, dry run


def test_namespace_deletion_removes_contents(server):
    ns = "kube-e2e-doomed"
    mk_ns(server, ns)
    mk_cm(server, "c1", ns, {"a": "b"})
    mk_secret(server, "s1", ns)
    server.kubectl("create", "-f", "-", input=deployment("d1", ns=ns))
    server.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "p1", "namespace": ns},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d1"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}}))
    mk_cm(server, "survivor", NS, {"a": "b"})

    r = server.kubectl("delete", "namespace", ns, "--timeout=60s", timeout=90)
    assert f'namespace "{ns}" deleted' in r.stdout
    wait_for(lambda: server.kubectl("get", "ns", ns, check=False).returncode != 0, timeout=30,
             what="the namespace to be gone")
    for kind in ("configmaps", "secrets", "deployments", "propagationpolicies"):
        r = server.kubectl("get", kind, "-A", "--field-selector", f"metadata.namespace={ns}", "-o", "name")
        assert r.stdout.strip() == "", f"{kind} left behind in deleted namespace: {r.stdout}"
    mk_ns(server, ns)
    assert server.kubectl("get", "configmaps,secrets,deployments", "-n", ns, "-o", "name").stdout.strip() == ""
    assert server.kubectl("get", "configmap", "survivor", "-n", NS, "-o", "name").stdout.strip() == \
        "configmap/survivor"


def test_generate_name(server):
    manifest = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"generateName": "gen-", "namespace": NS}, "data": {"a": "b"}})
    made = []
    for _ in range(2):
        r = server.kubectl("create", "-f", "-", "-o", "name", input=manifest)
        made.append(r.stdout.strip().split("/", 1)[1])
    assert made[0] != made[1]
    for n in made:
        assert re.fullmatch(r"gen-[a-z0-9]{5}", n), n
        assert server.kubectl_json("get", "cm", n, "-n", NS)["metadata"]["generateName"] == "gen-"


def test_dry_run_server_creates_nothing(server):
    manifest = json.dumps(configmap("dry", {"a": "b"}))
    r = server.kubectl("create", "-f", "-", "--dry-run=server", input=manifest)
    assert "configmap/dry created (server dry run)" in r.stdout
    obj = json.loads(server.kubectl("create", "-f", "-", "--dry-run=server", "-o", "json", input=manifest).stdout)
    assert obj["metadata"]["name"] == "dry" and obj["metadata"].get("creationTimestamp")
    r = server.kubectl("get", "configmap", "dry", "-n", NS, check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr

    mk_cm(server, "wet", NS, {"a": "b"})
    before = server.kubectl_json("get", "cm", "wet", "-n", NS)
    r = apply(server, configmap("wet", {"a": "changed"}), "--dry-run=server")
    assert "(server dry run)" in r.stdout
    server.kubectl("delete", "cm", "wet", "-n", NS, "--dry-run=server")
    server.kubectl("label", "cm", "wet", "-n", NS, "x=y", "--dry-run=server")
    after = server.kubectl_json("get", "cm", "wet", "-n", NS)
    assert after["data"] == {"a": "b"} and "labels" not in after["metadata"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


# ---------------------------------------------------------------- metrics and discovery


def test_metrics_through_kubectl(server):
    server.kubectl("get", "configmaps", "-n", NS)
    text = server.kubectl("get", "--raw", "/metrics").stdout
    lines = [ln for ln in text.splitlines() if ln.startswith("flotilla_apiserver_request_total{")]
    assert lines, text[:2000]
    total = sum(float(ln.rsplit(" ", 1)[1]) for ln in lines)
    assert total > 0
    assert any('verb="LIST"' in ln and 'resource="configmaps"' in ln for ln in lines), lines[:20]
    assert "# TYPE flotilla_apiserver_request_total counter" in text
    assert any(ln.startswith("flotilla_apiserver_request_duration_seconds_bucket{") and 'le="+Inf"' in ln
               for ln in text.splitlines())


def test_api_resources_lists_karmada_kinds(server):
    out = server.kubectl("api-resources").stdout
    rows = {}
    for ln in out.splitlines()[1:]:
        parts = ln.split()
        rows[(parts[0], parts[-3] if len(parts) >= 4 else "")] = parts
    want = [
        ("propagationpolicies", "pp", "policy.karmada.io/v1alpha1", "true", "PropagationPolicy"),
        ("clusterpropagationpolicies", "cpp", "policy.karmada.io/v1alpha1", "false", "ClusterPropagationPolicy"),
        ("overridepolicies", "op", "policy.karmada.io/v1alpha1", "true", "OverridePolicy"),
        ("clusteroverridepolicies", "cop", "policy.karmada.io/v1alpha1", "false", "ClusterOverridePolicy"),
        ("resourcebindings", "rb", "work.karmada.io/v1alpha2", "true", "ResourceBinding"),
        ("clusterresourcebindings", "crb", "work.karmada.io/v1alpha2", "false", "ClusterResourceBinding"),
        ("resourceinterpretercustomizations", "ric", "config.karmada.io/v1alpha1", "false",
         "ResourceInterpreterCustomization"),
        ("deployments", "deploy", "apps/v1", "true", "Deployment"),
        ("configmaps", "cm", "v1", "true", "ConfigMap"),
    ]
    for w in want:
        assert (w[0], w[2]) in rows, f"{w[0]} ({w[2]}) missing from kubectl api-resources:\n{out}"
        assert rows[(w[0], w[2])] == list(w), rows[(w[0], w[2])]
    plain = [("clusters", "cluster.karmada.io/v1alpha1", "false", "Cluster"),
             ("works", "work.karmada.io/v1alpha1", "true", "Work")]
    for name, gv, namespaced, kind in plain:
        assert (name, gv) in rows, f"{name} ({gv}) missing:\n{out}"
        assert rows[(name, gv)][-3:] == [gv, namespaced, kind]
    # short names resolve
    assert server.kubectl("get", "cpp", "-o", "name").returncode == 0


def test_imperative_create_commands(server):
    """kubectl's generators (create namespace/configmap/secret/deployment) use the typed client,
    which sends Content-Type: application/vnd.kubernetes.protobuf with no fallback to JSON."""
    ns = "kube-e2e-imperative"
    r = server.kubectl("create", "namespace", ns, check=False)
    assert r.returncode == 0, r.stderr
    assert f"namespace/{ns} created" in r.stdout
    r = server.kubectl("create", "configmap", "lit", "-n", ns, "--from-literal=a=b", "--from-literal=c=d",
                       check=False)
    assert r.returncode == 0, r.stderr
    assert server.kubectl_json("get", "cm", "lit", "-n", ns)["data"] == {"a": "b", "c": "d"}
    r = server.kubectl("create", "secret", "generic", "sec", "-n", ns, "--from-literal=user=admin", check=False)
    assert r.returncode == 0, r.stderr
    assert server.kubectl_json("get", "secret", "sec", "-n", ns)["data"] == {"user": "YWRtaW4="}
    r = server.kubectl("create", "deployment", "gen", "-n", ns, "--image=nginx:1.27", "--replicas=2", check=False)
    assert r.returncode == 0, r.stderr
    d = server.kubectl_json("get", "deploy", "gen", "-n", ns)
    assert d["spec"]["replicas"] == 2 and d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    r = server.kubectl("create", "configmap", "lit-dry", "-n", ns, "--from-literal=a=b", "--dry-run=server",
                       check=False)
    assert r.returncode == 0 and "(server dry run)" in r.stdout, r.stderr
    assert server.kubectl("get", "cm", "lit-dry", "-n", ns, check=False).returncode != 0


def test_invalid_policy_is_reported_by_kind_and_field(server):
    """kubectl words a 422 from the Status details: the Kind, the name and each cause's field."""
    manifest = """apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: both-affinities}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    clusterAffinity: {clusterNames: [member1]}
    clusterAffinities: [{affinityName: a, clusterNames: [member2]}]
"""
    r = server.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert r.returncode != 0
    assert 'The PropagationPolicy "both-affinities" is invalid' in r.stderr, r.stderr
    assert "spec.placement.clusterAffinities" in r.stderr, r.stderr
    r = server.kubectl("get", "pp", "both-affinities", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr
