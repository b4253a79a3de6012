"""Member clusters end to end: `flotilla ctl join/unjoin` and the cluster status controller.

The control plane is a fresh `flotilla server` started with short health settings (probe every
200 ms, Ready turns False after 1500 ms of failures), passed through the environment it
inherits. Until simulated members serve clusters of their own, a SECOND `flotilla server` plays
the member: its kubeconfig is a real member kubeconfig (server URL, CA, bearer token), and it
serves Nodes and Pods, /readyz, /version and discovery as a cluster does.

What is pinned: join writes the Secret and the Cluster as karmadactl does and is idempotent;
the Cluster becomes Ready with kubernetesVersion, apiEnablements, nodeSummary and
resourceSummary summed in Kubernetes quantities; nothing is written while nothing changes;
stopping the member turns Ready False (ClusterNotReachable) and adds the not-ready taint only
after the failure threshold, keeping users' taints; restarting it on the same port brings Ready
back and removes the taint; a Pull cluster whose agent stops renewing its Lease turns Unknown
with the unreachable taint; unjoin removes the Cluster and its Secret; ctl errors are one line
with exit code 1 (failure) or 2 (usage). Every wait is bounded."""
import base64
import datetime
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, Server, ensure_namespace, wait_for

INTERVAL_MS = 200
FAILURE_MS = 1500


@pytest.fixture
def cp(fresh_server, monkeypatch):
    """The control plane, with health settings small enough for a test."""
    monkeypatch.setenv("FLOTILLA_CLUSTER_STATUS_INTERVAL_MS", str(INTERVAL_MS))
    monkeypatch.setenv("FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS", str(FAILURE_MS))
    monkeypatch.setenv("FLOTILLA_CLUSTER_PROBE_TIMEOUT_MS", "1000")
    return fresh_server.start()


@pytest.fixture
def member():
    """A second server standing in for a member cluster."""
    d = tempfile.mkdtemp(prefix="flotilla-e2e-member-")
    s = Server(d).start()
    yield s
    if s.proc:
        s.stop()
    shutil.rmtree(d, ignore_errors=True)


def ctl(*args, env=None):
    e = dict(os.environ)
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    return subprocess.run([BIN, "ctl"] + list(args), capture_output=True, text=True, timeout=90, env=e)


def cluster(cp, name):
    code, body = cp.curl("GET", f"/apis/cluster.karmada.io/v1alpha1/clusters/{name}")
    return body if code == 200 else None


def condition(obj, ctype="Ready"):
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def ready(obj):
    c = condition(obj)
    return c["status"] if c else None


def taint_keys(obj):
    return sorted(t["key"] for t in ((obj or {}).get("spec") or {}).get("taints") or [])


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def put_status(server, path, status):
    """Replace an object's status through /status, as a kubelet or an agent does."""
    code, obj = server.curl("GET", path)
    assert code == 200, obj
    obj["status"] = status
    code, body = server.curl("PUT", path + "/status", obj)
    assert code == 200, body
    return body


def make_member_workload(member):
    """Two Nodes (one Ready) with allocatable, a Pod bound to a node and a pending one."""
    for name, cpu, mem, is_ready in (("n1", "4", "8Gi", "True"), ("n2", "500m", "512Mi", "False")):
        member.kubectl("create", "-f", "-", input=f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
""")
        put_status(member, f"/api/v1/nodes/{name}", {
            "capacity": {"cpu": cpu, "memory": mem, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": mem, "pods": "110"},
            "conditions": [{"type": "Ready", "status": is_ready, "reason": "KubeletReady",
                            "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}],
        })
    member.kubectl("create", "-f", "-", input="""
apiVersion: v1
kind: Pod
metadata:
  name: bound
  namespace: default
spec:
  nodeName: n1
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 250m, memory: 64Mi}
  - name: d
    image: nginx
    resources:
      requests: {cpu: 250m, memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: pending
  namespace: default
spec:
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 100m}
""")


def test_join_status_health_taints_and_unjoin(cp, member):
    make_member_workload(member)

    r = ctl("join", "m1", "--cluster-kubeconfig", member.kubeconfig, "--kubeconfig", cp.kubeconfig)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"cluster m1 joined (Push) at {member.url}\n"

    # the Secret and the Cluster, as karmadactl writes them
    code, secret = cp.curl("GET", "/api/v1/namespaces/karmada-cluster/secrets/m1")
    assert code == 200, secret
    assert secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["token"]).decode() == member.token()
    with open(os.path.join(member.data_dir, "pki", "ca.crt")) as f:
        assert base64.b64decode(secret["data"]["caBundle"]).decode() == f.read()
    c = cluster(cp, "m1")
    assert c["spec"]["syncMode"] == "Push"
    assert c["spec"]["apiEndpoint"] == member.url
    assert c["spec"]["secretRef"] == {"namespace": "karmada-cluster", "name": "m1"}
    assert "insecureSkipTLSVerification" not in c["spec"]

    cp.kubectl("wait", "--for=condition=Ready", "cluster/m1", "--timeout=20s")
    # its execution space, where its Works go, exists as Karmada's cluster controller makes it
    wait_for(lambda: cp.kubectl("get", "namespace", "karmada-es-m1", check=False).returncode == 0,
             timeout=10, what="namespace karmada-es-m1")
    want_rs = {
        "allocatable": {"cpu": "4500m", "memory": "8704Mi", "pods": "220"},
        "allocated": {"cpu": "500m", "memory": "128Mi", "pods": "1"},
        "allocating": {"cpu": "100m", "pods": "1"},
    }
    c = wait_for(lambda: (x := cluster(cp, "m1")) and x["status"].get("resourceSummary") == want_rs and x,
                 timeout=10, what="resourceSummary")
    st = c["status"]
    assert st["kubernetesVersion"].startswith("v1.")
    assert st["nodeSummary"] == {"totalNum": 2, "readyNum": 1}
    rc = condition(c)
    assert (rc["status"], rc["reason"], rc["message"]) == (
        "True", "ClusterReady", "cluster is healthy and ready to accept workloads")
    gvs = {e["groupVersion"]: e.get("resources", []) for e in st["apiEnablements"]}
    assert {"name": "deployments", "kind": "Deployment"} in gvs["apps/v1"]
    assert {"name": "nodes", "kind": "Node"} in gvs["v1"]
    assert not any("/" in r["name"] for rs in gvs.values() for r in rs), "subresources are left out"
    assert [e["groupVersion"] for e in st["apiEnablements"]] == sorted(gvs)
    assert condition(c, "CompleteAPIEnablements")["status"] == "True"
    assert taint_keys(c) == []

    # kubectl shows Karmada's columns
    out = cp.kubectl("get", "clusters").stdout.splitlines()
    assert out[0].split()[:4] == ["NAME", "VERSION", "MODE", "READY"], out
    assert out[1].split()[:4] == ["m1", st["kubernetesVersion"], "Push", "True"], out

    # nothing changes, nothing is written (no timestamp-only writes)
    rv = c["metadata"]["resourceVersion"]
    time.sleep(6 * INTERVAL_MS / 1000)
    assert cluster(cp, "m1")["metadata"]["resourceVersion"] == rv

    # joining again is idempotent: same object, same spec, success
    r = ctl("join", "m1", "--cluster-kubeconfig", member.kubeconfig, "--kubeconfig", cp.kubeconfig)
    assert r.returncode == 0, r.stderr
    again = cluster(cp, "m1")
    assert again["metadata"]["uid"] == c["metadata"]["uid"]
    assert again["metadata"]["generation"] == c["metadata"]["generation"]

    # a user's taint is kept through everything below
    cp.kubectl("patch", "cluster", "m1", "--type=merge",
               "-p", '{"spec":{"taints":[{"key":"team","value":"a","effect":"NoSchedule"}]}}')

    # the member goes away: Ready stays True for the failure threshold, then turns False
    assert member.stop() == 0
    held = wait_for(lambda: (x := cluster(cp, "m1")) and
                    "flotilla.io/unhealthy-since" in (x["metadata"].get("annotations") or {}) and x,
                    timeout=10, what="the unhealthy-since annotation")
    assert ready(held) == "True", "Ready must hold until the failure threshold has passed"
    since = held["metadata"]["annotations"]["flotilla.io/unhealthy-since"]
    # from the second failing probe on, the cluster is marked as not reporting (its objects'
    # live state turns Unknown), still Ready
    stale = wait_for(lambda: (x := cluster(cp, "m1")) and
                     "flotilla.io/not-reporting-since" in (x["metadata"].get("annotations") or {}) and x,
                     timeout=10, what="the not-reporting-since annotation")
    assert ready(stale) == "True", "marked not reporting before the failure threshold"
    down = wait_for(lambda: (x := cluster(cp, "m1")) and ready(x) == "False" and x, timeout=15,
                    what="Ready False")
    rc = condition(down)
    assert rc["reason"] == "ClusterNotReachable"
    assert rc["message"] == "cluster is not reachable"
    t_since = datetime.datetime.strptime(since, "%Y-%m-%dT%H:%M:%S.%fZ")
    t_flip = datetime.datetime.strptime(rc["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")
    assert (t_flip - t_since).total_seconds() >= FAILURE_MS / 1000 - 1, (since, rc)
    down = wait_for(lambda: (x := cluster(cp, "m1")) and "cluster.karmada.io/not-ready" in taint_keys(x) and x,
                    timeout=20, what="the not-ready taint")
    assert taint_keys(down) == ["cluster.karmada.io/not-ready", "team"]
    nr = [t for t in down["spec"]["taints"] if t["key"] == "cluster.karmada.io/not-ready"][0]
    assert nr["effect"] == "NoSchedule" and nr["timeAdded"].endswith("Z")
    assert "flotilla.io/unhealthy-since" not in (down["metadata"].get("annotations") or {})
    assert "flotilla.io/not-reporting-since" not in (down["metadata"].get("annotations") or {})
    # still down: no writes
    rv = down["metadata"]["resourceVersion"]
    time.sleep(6 * INTERVAL_MS / 1000)
    assert cluster(cp, "m1")["metadata"]["resourceVersion"] == rv

    # back on the same port and data: Ready again, the taint removed, the user's taint kept
    member.start()
    up = wait_for(lambda: (x := cluster(cp, "m1")) and ready(x) == "True" and
                  taint_keys(x) == ["team"] and x, timeout=15, what="Ready True without the not-ready taint")
    assert condition(up)["reason"] == "ClusterReady"

    # unjoin removes the Cluster and its Secret
    r = ctl("unjoin", "m1", "--kubeconfig", cp.kubeconfig)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "cluster m1 unjoined\n"
    assert cluster(cp, "m1") is None
    assert cp.curl("GET", "/api/v1/namespaces/karmada-cluster/secrets/m1")[0] == 404


def create_pull_cluster(cp, name):
    """A Cluster in Pull mode, as an agent's registration makes it, and the Leases' namespace."""
    ensure_namespace(cp, "karmada-cluster")
    cp.kubectl("create", "-f", "-", input=f"""
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: {name}
spec:
  syncMode: Pull
""")


def test_pull_cluster_follows_its_agent_lease(cp):
    create_pull_cluster(cp, "p1")
    # no lease at all: Unknown once the threshold has passed since creation
    c = wait_for(lambda: (x := cluster(cp, "p1")) and ready(x) == "Unknown" and x, timeout=15,
                 what="Ready Unknown")
    assert condition(c)["reason"] == "ClusterStatusNeverUpdated"
    c = wait_for(lambda: (x := cluster(cp, "p1")) and taint_keys(x) == ["cluster.karmada.io/unreachable"] and x,
                 timeout=20, what="the unreachable taint")

    # the agent renews its lease and reports Ready: the taint goes
    lease_path = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/p1"
    code, body = cp.curl("POST", "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "p1", "namespace": "karmada-cluster"},
        "spec": {"holderIdentity": "p1", "leaseDurationSeconds": 40, "renewTime": now_micro()}})
    assert code == 201, body
    put_status(cp, "/apis/cluster.karmada.io/v1alpha1/clusters/p1", {"conditions": [{
        "type": "Ready", "status": "True", "reason": "ClusterReady",
        "message": "cluster is healthy and ready to accept workloads",
        "lastTransitionTime": now_micro()[:19] + "Z"}]})

    def renew():
        code, lease = cp.curl("GET", lease_path)
        lease["spec"]["renewTime"] = now_micro()
        assert cp.curl("PUT", lease_path, lease)[0] == 200

    # renewing meanwhile, as the agent does: on a loaded machine the taint may take longer to
    # go than the failure threshold, and an unrenewed lease would go stale first
    wait_for(lambda: (renew(), taint_keys(cluster(cp, "p1")) == [])[1], timeout=20, interval=FAILURE_MS / 1000 / 5,
             what="the taint removed")
    # keep renewing for a while: it stays Ready
    for _ in range(5):
        renew()
        time.sleep(FAILURE_MS / 1000 / 3)
        assert ready(cluster(cp, "p1")) == "True"

    # a last renewal saying the agent renews every 200 ms, and then none: two renewals
    # missed, the cluster is marked not reporting while still Ready (its objects' live state
    # turns Unknown), before the failure threshold makes it Unknown
    code, lease = cp.curl("GET", lease_path)
    lease["metadata"].setdefault("annotations", {})["flotilla.io/renew-interval-ms"] = "200"
    lease["spec"]["renewTime"] = now_micro()
    assert cp.curl("PUT", lease_path, lease)[0] == 200
    quiet = wait_for(lambda: (x := cluster(cp, "p1")) and
                     "flotilla.io/not-reporting-since" in (x["metadata"].get("annotations") or {}) and x,
                     timeout=FAILURE_MS / 1000, interval=0.02, what="the not-reporting-since annotation")
    assert ready(quiet) == "True", "marked not reporting before the lease went stale"

    # the agent stops renewing: Unknown again, unreachable taint
    c = wait_for(lambda: (x := cluster(cp, "p1")) and ready(x) == "Unknown" and
                 taint_keys(x) == ["cluster.karmada.io/unreachable"] and x, timeout=15,
                 what="Unknown after the lease went stale")
    assert condition(c)["reason"] == "ClusterStatusUnknown"
    assert "flotilla.io/not-reporting-since" not in (c["metadata"].get("annotations") or {})


def test_a_pull_cluster_is_marked_at_twice_its_renewal_interval_not_a_period_later(fresh_server, monkeypatch):
    # the controller's period (20 s) is far longer than twice the agent's interval (2 x 300 ms):
    # the mark comes when the second renewal is missed, and goes when the next one comes
    monkeypatch.setenv("FLOTILLA_CLUSTER_STATUS_INTERVAL_MS", "20000")
    monkeypatch.setenv("FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS", "60000")
    cp = fresh_server.start()
    create_pull_cluster(cp, "p2")
    leases = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases"
    code, body = cp.curl("POST", leases, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "p2", "namespace": "karmada-cluster",
                     "annotations": {"flotilla.io/renew-interval-ms": "300"}},
        "spec": {"holderIdentity": "p2", "leaseDurationSeconds": 40, "renewTime": now_micro()}})
    assert code == 201, body
    put_status(cp, "/apis/cluster.karmada.io/v1alpha1/clusters/p2", {"conditions": [{
        "type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy",
        "lastTransitionTime": now_micro()[:19] + "Z"}]})

    def renew():
        code, lease = cp.curl("GET", f"{leases}/p2")
        lease["spec"]["renewTime"] = now_micro()
        assert cp.curl("PUT", f"{leases}/p2", lease)[0] == 200

    def marked():
        return "flotilla.io/not-reporting-since" in (cluster(cp, "p2")["metadata"].get("annotations") or {})

    for _ in range(8):  # the agent at work: not marked
        renew()
        time.sleep(0.15)
        assert not marked()
    renew()
    t = time.time()
    wait_for(marked, timeout=25, interval=0.05, what="the not-reporting-since annotation")
    took = time.time() - t
    assert took < 3, f"marked {took:.1f} s after the last renewal (twice the interval is 0.6 s)"
    assert ready(cluster(cp, "p2")) == "True"
    renew()
    t = time.time()
    wait_for(lambda: not marked(), timeout=25, interval=0.05, what="the mark gone")
    took = time.time() - t
    assert took < 3, f"unmarked {took:.1f} s after the renewal"


def test_ctl_errors_are_one_line_with_exit_codes(cp, tmp_path):
    missing = str(tmp_path / "nope.kubeconfig")

    def one_line(r, code):
        assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
        assert r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        return lines[0]

    line = one_line(ctl("join", "m1", "--cluster-kubeconfig", missing, "--kubeconfig", cp.kubeconfig), 1)
    assert "member kubeconfig" in line and missing in line
    line = one_line(ctl("join", "m1", "--cluster-kubeconfig", cp.kubeconfig, "--kubeconfig", missing), 1)
    assert "control plane kubeconfig" in line and missing in line
    line = one_line(ctl("join", "m1", "--cluster-kubeconfig", cp.kubeconfig, "--bogus"), 2)
    assert "unknown flag --bogus" in line
    line = one_line(ctl("join", "--cluster-kubeconfig", cp.kubeconfig), 2)
    assert "NAME" in line
    line = one_line(ctl("join", "m1"), 2)
    assert "--cluster-kubeconfig" in line
    line = one_line(ctl("frobnicate", "m1"), 2)
    assert "frobnicate" in line
    line = one_line(ctl("join", "Not_A_Name", "--cluster-kubeconfig", cp.kubeconfig, "--kubeconfig", cp.kubeconfig), 1)
    assert "invalid cluster name" in line

    # a member that does not answer is refused before anything is written
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
                    "users:\n- name: u\n  user:\n    token: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                    "current-context: x\n")
    line = one_line(ctl("join", "m9", "--cluster-kubeconfig", str(dead), "--kubeconfig", cp.kubeconfig), 1)
    assert "cannot reach member cluster at https://127.0.0.1:1" in line
    assert cluster(cp, "m9") is None

    # the control plane comes from $KUBECONFIG when --kubeconfig is absent
    line = one_line(ctl("unjoin", "ghost", env={"KUBECONFIG": cp.kubeconfig}), 1)
    assert line == "flotilla ctl unjoin: cluster ghost not found on the control plane"

    r = ctl("--help")
    assert r.returncode == 0 and "join NAME" in r.stdout
