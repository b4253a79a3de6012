"""`flotilla agent`: a member cluster in pull mode, end to end.

Three real processes, as a user runs them: a control plane (`flotilla server`, with short
health settings passed through its environment), one simulated member cluster
(`flotilla member --clusters 1`, kubeconfig DIR/member1.kubeconfig) and the agent beside it
(`flotilla agent --cluster-name m1`). The agent registers with the server's bootstrap
kubeconfig when the server writes one, else with the admin kubeconfig (and, on a control
plane without the registration endpoint, creates the Pull Cluster itself).

What is pinned: Cluster m1 appears in Pull mode and turns Ready from the agent's lease with
the member's version, APIs, nodes and resources; a Work in karmada-es-m1 reaches the member
with our marks and reports Applied and per-manifest health; a member-side delete is repaired;
updates and deletion of the Work propagate; the server's push controller leaves the Works
alone; a member that goes down turns Ready False and delivery resumes when it is back;
stopping the agent (exit 0) turns the Cluster Unknown with the unreachable taint and a
restarted agent (its own kubeconfig reused) brings it back; a control-plane kill -9 in the
middle of a delivery loses and duplicates nothing. The tests share one set of processes and
run in file order; every wait is bounded."""
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, Server, crd_manifest, ensure_namespace, wait_for

INTERVAL_MS = 200       # the server's cluster status controller
FAILURE_MS = 2000       # lease age that makes a Pull cluster Unknown
AGENT_MS = 300          # the agent's lease renewal and status report
WAIT = 20

CLUSTER = "/apis/cluster.karmada.io/v1alpha1/clusters/m1"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/m1"
WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m1/works"
MEMBER_CM = "/api/v1/namespaces/default/configmaps"
MEMBER_DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


class Member:
    """`flotilla member --clusters 1`: cluster member1, reached with curl as a user would."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="flotilla-e2e-agent-member-")
        self.log = open(os.path.join(self.dir, "member.log"), "wb")
        self.proc = subprocess.Popen([BIN, "member", "--data-dir", self.dir, "--clusters", "1",
                                      "--ready-per-second", "20"], stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert "cluster at" in line, line
        self.host = line.split(" at ")[1].split("/clusters/")[0]
        self.url = self.host + "/clusters/member1"
        self.kubeconfig = os.path.join(self.dir, "member1.kubeconfig")
        kc = open(self.kubeconfig).read()
        self.token = [l.split(":", 1)[1].strip().strip('"') for l in kc.splitlines()
                      if l.strip().startswith("token:")][0]

    def curl(self, method, path, body=None, admin=False):
        tok = open(os.path.join(self.dir, "pki", "admin.token")).read().strip() if admin else self.token
        base = self.host if admin else self.url
        cmd = ["curl", "-s", "--cacert", os.path.join(self.dir, "pki", "ca.crt"), "-X", method,
               "-H", f"Authorization: Bearer {tok}", "-w", "\n%{http_code}", base + path]
        if body is not None:
            cmd += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        text, _, code = r.stdout.rpartition("\n")
        try:
            return int(code), json.loads(text)
        except ValueError:
            return int(code), text

    def get(self, path):
        code, body = self.curl("GET", path)
        if code == 404:
            return None
        assert code == 200, (code, body)
        return body

    def fault(self, **kw):
        code, body = self.curl("PUT", "/admin/clusters/member1/fault", kw, admin=True)
        assert code == 200, body

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.log.close()
        return rc


class Agent:
    """`flotilla agent` for cluster m1 beside the member."""

    def __init__(self, cp, member):
        self.cp, self.member = cp, member
        self.log_path = os.path.join(member.dir, "agent.log")
        self.out = os.path.join(member.dir, "m1-agent.kubeconfig")  # the default place
        self.proc = None

    def start(self):
        boot = os.path.join(self.cp.data_dir, "bootstrap-kubeconfig")
        server_kc = boot if os.path.exists(boot) else self.cp.kubeconfig
        env = dict(os.environ, FLOTILLA_AGENT_LEASE_INTERVAL_MS=str(AGENT_MS),
                   FLOTILLA_AGENT_STATUS_INTERVAL_MS=str(AGENT_MS), FLOTILLA_AGENT_PROBE_TIMEOUT_MS="1000")
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BIN, "agent", "--server-kubeconfig", server_kc,
                                      "--member-kubeconfig", self.member.kubeconfig, "--cluster-name", "m1"],
                                     stdout=self.logf, stderr=self.logf, env=env)
        wait_for(lambda: self.proc.poll() is not None or "flotilla agent: cluster m1" in self.log(), timeout=WAIT,
                 what="the agent to start")
        assert self.proc.poll() is None, self.log()
        return self

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the agent did not stop within 20s of SIGTERM:\n" + self.log()[-3000:])
        self.proc = None
        self.logf.close()
        return rc

    def rss_kib(self, field="VmRSS"):
        """VmRSS (everything resident), or RssAnon (what the agent itself allocated: heap,
        stacks; not the shared libraries' pages) from /proc/PID/status, in KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return None

    def sanitized(self):
        """ASan reserves terabytes of shadow memory (linked statically by clang, so look at
        the address space rather than at the libraries)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) > 1 << 30  # KiB: more than 1 TiB
        return False


@pytest.fixture(scope="module")
def fleet():
    d = tempfile.mkdtemp(prefix="flotilla-e2e-agent-cp-")
    with pytest.MonkeyPatch.context() as mp:
        # inherited by the server, also when a test restarts it
        mp.setenv("FLOTILLA_CLUSTER_STATUS_INTERVAL_MS", str(INTERVAL_MS))
        mp.setenv("FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS", str(FAILURE_MS))
        cp = Server(d).start()
        member = Member()
        agent = Agent(cp, member).start()
        yield cp, member, agent
        failures = []
        if agent.proc:
            rc = agent.stop()
            if rc != 0:
                failures.append(f"agent exited with {rc}:\n{agent.log()[-4000:]}")
        rc = member.stop()
        if rc != 0:
            failures.append(f"member exited with {rc}")
        if cp.proc:
            rc = cp.stop()
            if rc != 0:
                failures.append(f"server exited with {rc}:\n{cp.log()}")
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(member.dir, ignore_errors=True)
    assert not failures, "\n".join(failures)


def server_log(cp):
    with open(cp.log_path, "rb") as f:
        return f.read().decode(errors="replace")


def get(server, path):
    code, body = server.curl("GET", path)
    if code == 404:
        return None
    assert code == 200, body
    return body


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


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data}


def deployment(name, replicas=2):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}


def create_work(cp, name, manifests, **spec):
    ensure_namespace(cp, "karmada-es-m1")
    code, body = cp.curl("POST", WORKS, {
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": "karmada-es-m1"},
        "spec": dict(workload={"manifests": manifests}, **spec)})
    assert code == 201, body
    return body


def wait_applied(cp, name, status="True", timeout=WAIT):
    def check():
        c = condition(get(cp, f"{WORKS}/{name}"), "Applied")
        return c if c and c["status"] == status else None
    return wait_for(check, timeout=timeout, what=f"Work {name} Applied={status}")


def marked_by(obj, work_name):
    md = obj["metadata"]
    return (md.get("labels", {}).get("karmada.io/managed") == "true"
            and md.get("annotations", {}).get("work.karmada.io/name") == work_name
            and md.get("annotations", {}).get("work.karmada.io/namespace") == "karmada-es-m1")


def test_agent_registers_a_pull_cluster_that_becomes_ready(fleet):
    cp, member, agent = fleet
    c = wait_for(lambda: (x := get(cp, CLUSTER)) and ready(x) == "True" and x, timeout=WAIT,
                 what="Cluster m1 Ready")
    assert c["spec"]["syncMode"] == "Pull"
    assert condition(c)["reason"] == "ClusterReady"
    st = wait_for(lambda: (s := get(cp, CLUSTER)["status"]) and "nodeSummary" in s and "resourceSummary" in s and s,
                  timeout=WAIT, what="the member's summaries")
    assert st["kubernetesVersion"].startswith("v1.")
    assert st["nodeSummary"] == {"totalNum": 3, "readyNum": 3}
    assert "cpu" in st["resourceSummary"]["allocatable"]
    gvs = {e["groupVersion"] for e in st["apiEnablements"]}
    assert {"v1", "apps/v1"} <= gvs
    wait_for(lambda: taint_keys(get(cp, CLUSTER)) == [], timeout=WAIT, what="no taints on a Ready cluster")

    # Ready comes from the agent's status report, which may land before its first lease
    # renewal (a missing lease counts from the Cluster's creation): wait for the Lease
    lease = wait_for(lambda: get(cp, LEASE), timeout=WAIT, what="the agent's Lease")
    assert lease["spec"]["holderIdentity"] == "m1" and lease["spec"]["leaseDurationSeconds"] == 40
    t0 = lease["spec"]["renewTime"]
    wait_for(lambda: get(cp, LEASE)["spec"]["renewTime"] != t0, timeout=5, what="the lease renewed")

    # its identity: the agent kubeconfig written after registering, or the documented fallback
    if os.path.exists(agent.out):
        assert stat.S_IMODE(os.stat(agent.out).st_mode) == 0o600
    else:
        assert "has no registration endpoint" in agent.log()


def test_status_is_written_only_on_change(fleet):
    cp, _, _ = fleet
    wait_for(lambda: ready(get(cp, CLUSTER)) == "True", timeout=WAIT, what="Ready")
    time.sleep(1)  # the first discovery and summaries have landed
    rv = get(cp, CLUSTER)["metadata"]["resourceVersion"]
    time.sleep(AGENT_MS * 5 / 1000)
    assert get(cp, CLUSTER)["metadata"]["resourceVersion"] == rv


def test_work_is_delivered_to_the_member_with_health(fleet):
    cp, member, agent = fleet
    create_work(cp, "w1", [configmap("cm1", {"k": "v1"}), deployment("web")])
    cm = wait_for(lambda: member.get(f"{MEMBER_CM}/cm1"), timeout=WAIT, what="cm1 in the member")
    dep = wait_for(lambda: member.get(f"{MEMBER_DEPLOY}/web"), timeout=WAIT, what="web in the member")
    assert cm["data"] == {"k": "v1"} and marked_by(cm, "w1") and marked_by(dep, "w1")
    c = wait_applied(cp, "w1")
    assert c["reason"] == "AppliedSuccessful"
    w = get(cp, f"{WORKS}/w1")
    assert "karmada.io/execution-controller" in w["metadata"]["finalizers"]

    def entry(kind):
        for ms in (get(cp, f"{WORKS}/w1").get("status") or {}).get("manifestStatuses") or []:
            if ms["identifier"]["kind"] == kind:
                return ms
        return None
    dep = wait_for(lambda: (e := entry("Deployment")) and e["health"] == "Healthy" and e, timeout=WAIT,
                   what="the Deployment Healthy once the simulator rolled it out")
    assert dep["status"]["readyReplicas"] == 2 and dep["identifier"]["group"] == "apps"
    assert entry("ConfigMap")["health"] == "Healthy"

    # the footprint target (karmada-agent: 266 MiB), not meaningful under the sanitizers. Of
    # the resident set, about 12 MiB are shared libraries' pages (libcrypto alone 4 MiB, mapped
    # by every process using it) and move by a few hundred KiB with load; what the agent
    # allocates itself is the anonymous part.
    rss, anon = agent.rss_kib(), agent.rss_kib("RssAnon")
    print(f"agent RSS with one Work delivered: {rss} KiB, {anon} KiB of it its own (RssAnon)")
    if not agent.sanitized():
        assert anon <= 6 * 1024, f"agent RssAnon {anon} KiB"
        assert rss <= 18 * 1024, f"agent RSS {rss} KiB"


def test_object_deleted_in_the_member_is_recreated(fleet):
    cp, member, _ = fleet
    old = member.get(f"{MEMBER_CM}/cm1")
    code, body = member.curl("DELETE", f"{MEMBER_CM}/cm1")
    assert code == 200, body
    cm = wait_for(lambda: (o := member.get(f"{MEMBER_CM}/cm1")) and o["metadata"]["uid"] != old["metadata"]["uid"]
                  and o, timeout=WAIT, what="cm1 re-created")
    assert cm["data"] == {"k": "v1"} and marked_by(cm, "w1")


def test_work_update_reaches_the_member(fleet):
    cp, member, _ = fleet
    code, body = cp.curl("PATCH", f"{WORKS}/w1", [
        {"op": "replace", "path": "/spec/workload/manifests/0/data", "value": {"k": "v2"}}],
        content_type="application/json-patch+json")
    assert code == 200, body
    wait_for(lambda: (member.get(f"{MEMBER_CM}/cm1") or {}).get("data") == {"k": "v2"}, timeout=WAIT,
             what="cm1 updated in the member")
    gen = get(cp, f"{WORKS}/w1")["metadata"]["generation"]
    wait_for(lambda: (condition(get(cp, f"{WORKS}/w1"), "Applied") or {}).get("observedGeneration") == gen,
             timeout=WAIT, what="Applied to follow the Work's generation")


def test_bundled_retain_keeps_what_the_members_controller_owns(fleet):
    """The agent has the bundled customizations: an Argo Workflow's spec.suspend and status,
    written in the member by its workflow controller, survive the Work's next update."""
    cp, member, _ = fleet
    crd = crd_manifest("argoproj.io", "Workflow", "workflows", status=False)
    crd["spec"]["versions"][0]["name"] = "v1alpha1"
    code, body = member.curl("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code in (201, 409), body
    path = "/apis/argoproj.io/v1alpha1/namespaces/default/workflows"
    wait_for(lambda: member.curl("GET", path)[0] == 200, timeout=WAIT, what="the member to serve Workflows")
    wf = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
          "metadata": {"name": "wf1", "namespace": "default"},
          "spec": {"entrypoint": "main", "suspend": True, "templates": [{"name": "main"}]}}
    create_work(cp, "wf", [wf])
    wait_applied(cp, "wf")
    # the member's workflow controller: resumed, running
    obj = member.get(f"{path}/wf1")
    del obj["spec"]["suspend"]
    obj["status"] = {"phase": "Running"}
    code, body = member.curl("PUT", f"{path}/wf1", obj)
    assert code == 200, body
    # the Work changes: the agent updates the member's copy, keeping what the member owns
    code, body = cp.curl("PATCH", f"{WORKS}/wf", [
        {"op": "add", "path": "/spec/workload/manifests/0/metadata/labels", "value": {"rev": "2"}}],
        content_type="application/json-patch+json")
    assert code == 200, body
    got = wait_for(lambda: (o := member.get(f"{path}/wf1")) and o["metadata"].get("labels", {}).get("rev") == "2" and o,
                   timeout=WAIT, what="the Work's update in the member")
    assert "suspend" not in got["spec"], got["spec"]
    assert got["status"] == {"phase": "Running"}, got.get("status")
    code, _ = cp.curl("DELETE", f"{WORKS}/wf")
    assert code == 200


def test_suspended_work_is_not_dispatched(fleet):
    cp, member, _ = fleet
    create_work(cp, "w-held", [configmap("held", {"a": "1"})], suspendDispatching=True)
    time.sleep(1.5)
    assert member.get(f"{MEMBER_CM}/held") is None
    code, body = cp.curl("PATCH", f"{WORKS}/w-held", {"spec": {"suspendDispatching": False}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    wait_for(lambda: member.get(f"{MEMBER_CM}/held"), timeout=WAIT, what="held delivered once resumed")


def test_deleting_a_work_deletes_or_preserves_its_member_objects(fleet):
    cp, member, _ = fleet
    create_work(cp, "w-kept", [configmap("kept", {"a": "1"})], preserveResourcesOnDeletion=True)
    wait_applied(cp, "w-kept")
    for name in ("w1", "w-kept"):
        code, body = cp.curl("DELETE", f"{WORKS}/{name}")
        assert code == 200, body
    wait_for(lambda: member.get(f"{MEMBER_CM}/cm1") is None and member.get(f"{MEMBER_DEPLOY}/web") is None,
             timeout=WAIT, what="w1's objects deleted in the member")
    for name in ("w1", "w-kept"):
        wait_for(lambda: get(cp, f"{WORKS}/{name}") is None, timeout=WAIT, what=f"Work {name} to go")
    kept = member.get(f"{MEMBER_CM}/kept")
    assert kept is not None and "karmada.io/managed" not in (kept["metadata"].get("labels") or {})


def test_the_push_controller_leaves_pull_works_alone(fleet):
    cp, _, agent = fleet
    # the agent delivered everything so far; the server's execution controller nothing
    assert 'in member cluster object="' in agent.log() and 'cluster="m1" work="Work/' in agent.log()
    assert "in member cluster" not in server_log(cp)


def test_member_down_turns_not_ready_and_delivery_resumes(fleet):
    cp, member, _ = fleet
    member.fault(down=True)
    try:
        c = wait_for(lambda: (x := get(cp, CLUSTER)) and ready(x) == "False" and x, timeout=WAIT,
                     what="Ready False while the member is down")
        assert condition(c)["reason"] == "ClusterNotReady"
        wait_for(lambda: taint_keys(get(cp, CLUSTER)) == ["cluster.karmada.io/not-ready"], timeout=WAIT,
                 what="the not-ready taint")
        create_work(cp, "w-down", [configmap("while-down", {"a": "1"})])
        wait_applied(cp, "w-down", "False")
    finally:
        member.fault()
    wait_for(lambda: ready(get(cp, CLUSTER)) == "True", timeout=WAIT, what="Ready again")
    wait_for(lambda: member.get(f"{MEMBER_CM}/while-down"), timeout=WAIT, what="while-down delivered")
    wait_applied(cp, "w-down")
    wait_for(lambda: taint_keys(get(cp, CLUSTER)) == [], timeout=WAIT, what="the taint removed")


def test_stopped_agent_makes_the_cluster_unknown_and_a_restart_brings_it_back(fleet):
    cp, member, agent = fleet
    assert agent.stop() == 0, agent.log()[-3000:]
    t0 = time.time()
    c = wait_for(lambda: (x := get(cp, CLUSTER)) and ready(x) == "Unknown" and
                 taint_keys(x) == ["cluster.karmada.io/unreachable"] and x, timeout=WAIT,
                 what="Unknown with the unreachable taint")
    assert time.time() - t0 >= FAILURE_MS / 1000 - 1.0, "Unknown before the threshold passed"
    assert condition(c)["reason"] == "ClusterStatusUnknown"

    # a Work written while no agent runs waits for it
    create_work(cp, "w-later", [configmap("later", {"a": "1"})])
    time.sleep(1)
    assert member.get(f"{MEMBER_CM}/later") is None

    had_identity = os.path.exists(agent.out)
    agent.start()
    if had_identity:
        wait_for(lambda: "using the agent identity" in agent.log(), timeout=5, what="the agent kubeconfig reused")
    wait_for(lambda: (x := get(cp, CLUSTER)) and ready(x) == "True" and taint_keys(x) == [], timeout=WAIT,
             what="Ready again, taint removed")
    wait_for(lambda: member.get(f"{MEMBER_CM}/later"), timeout=WAIT, what="later delivered")
    wait_applied(cp, "w-later")


def test_control_plane_restart_mid_delivery_loses_and_duplicates_nothing(fleet):
    cp, member, agent = fleet
    before = member.get(f"{MEMBER_CM}/later")["metadata"]["uid"]

    def delivered():
        code, body = member.curl("GET", MEMBER_CM + "?labelSelector=karmada.io%2Fmanaged%3Dtrue")
        assert code == 200, body
        return sorted(o["metadata"]["name"] for o in body["items"] if o["metadata"]["name"].startswith("bulk-"))

    create_work(cp, "w-bulk", [configmap(f"bulk-{i}", {"i": str(i)}) for i in range(30)])
    wait_for(lambda: delivered(), timeout=WAIT, interval=0.005, what="the first bulk ConfigMap")
    cp.kill()
    mid = delivered()
    uids = {n: member.get(f"{MEMBER_CM}/{n}")["metadata"]["uid"] for n in mid}
    time.sleep(0.5)  # the agent notices: watches break, lease renewals fail
    assert agent.proc.poll() is None
    cp.start()

    names = wait_for(lambda: len(n := delivered()) == 30 and n, timeout=WAIT * 2, what="all 30 bulk ConfigMaps")
    assert len(set(names)) == 30
    wait_applied(cp, "w-bulk", timeout=WAIT * 2)
    assert {n: member.get(f"{MEMBER_CM}/{n}")["metadata"]["uid"] for n in mid} == uids
    assert member.get(f"{MEMBER_CM}/later")["metadata"]["uid"] == before

    # and the agent goes on: Ready, new Works delivered, member-side deletes repaired
    wait_for(lambda: ready(get(cp, CLUSTER)) == "True", timeout=WAIT, what="Ready after the restart")
    create_work(cp, "w-after", [configmap("after-restart", {"a": "1"})])
    wait_for(lambda: member.get(f"{MEMBER_CM}/after-restart"), timeout=WAIT, what="after-restart delivered")
    code, body = member.curl("DELETE", f"{MEMBER_CM}/bulk-7")
    assert code == 200, body
    wait_for(lambda: member.get(f"{MEMBER_CM}/bulk-7"), timeout=WAIT, what="bulk-7 re-created")
    assert "in cluster m1" not in server_log(cp)


def status_writes(cp):
    """Work status writes (updates and patches) the server has answered since it started (from its
    /metrics)."""
    code, text = cp.curl("GET", "/metrics")
    assert code == 200, text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("flotilla_apiserver_request_total{") and ('verb="PUT"' in line or 'verb="PATCH"' in line)
               and 'resource="works/status"' in line)


def test_after_a_control_plane_restart_the_agent_resends_only_what_changed(fleet):
    cp, member, agent = fleet
    works = get(cp, WORKS)["items"]
    assert len(works) >= 3
    for w in works:
        if not w["metadata"].get("deletionTimestamp"):
            wait_applied(cp, w["metadata"]["name"])
    cp.kill()
    cp.start()
    wait_for(lambda: ready(get(cp, CLUSTER)) == "True", timeout=WAIT, what="Ready after the restart")
    # the agent's watches of its Works list again; what it reports is what is stored
    time.sleep(3)
    assert status_writes(cp) == 0, f"{status_writes(cp)} Work status writes for {len(works)} unchanged Works"
    # and what does change is still reported
    code, body = member.curl("DELETE", f"{MEMBER_CM}/bulk-3")
    assert code == 200, body
    wait_for(lambda: member.get(f"{MEMBER_CM}/bulk-3"), timeout=WAIT, what="bulk-3 re-created")
    wait_for(lambda: status_writes(cp) >= 1, timeout=WAIT, what="the re-created object's status reported")
