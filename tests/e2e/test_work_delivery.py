"""End-to-end: the execution controller delivers Works to a push-mode member and reports back.

Two real processes: a control-plane `flotilla server` and a second `flotilla server` standing
in for a member cluster (the simulated members of `flotilla member` can take its place
later). The member is joined the way `flotilla ctl join` will do it, written out by hand:
a Secret in karmada-cluster with the member's token and CA, and a Cluster with syncMode
Push pointing at the member's URL. Then Works are written into karmada-es-m1 and the test
looks at the member directly, as a user would with a second kubeconfig.

The tests share one pair of servers and run in file order; each uses its own Work and
object names. Every wait is bounded.
"""
import base64
import os
import socket
import shutil
import tempfile
import threading
import time

import pytest

from conftest import Server, ensure_namespace, wait_for

WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m1/works"
MEMBER_CM = "/api/v1/namespaces/default/configmaps"
MEMBER_DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
WAIT = 20


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


def join(cp, member, name="m1"):
    ensure_namespace(cp, "karmada-cluster")
    with open(os.path.join(member.data_dir, "pki", "ca.crt"), "rb") as f:
        ca = f.read()
    code, body = cp.curl("POST", "/api/v1/namespaces/karmada-cluster/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "karmada-cluster"},
        "data": {"token": b64(member.token()), "caBundle": b64(ca)}})
    assert code == 201, body
    code, body = cp.curl("POST", "/apis/cluster.karmada.io/v1alpha1/clusters", {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "spec": {"syncMode": "Push", "apiEndpoint": member.url,
                 "secretRef": {"namespace": "karmada-cluster", "name": name}}})
    assert code == 201, body
    ensure_namespace(cp, "karmada-es-" + name)


@pytest.fixture(scope="module")
def pair():
    dirs = [tempfile.mkdtemp(prefix="flotilla-e2e-cp-"), tempfile.mkdtemp(prefix="flotilla-e2e-m1-")]
    cp, member = Server(dirs[0]).start(), Server(dirs[1]).start()
    join(cp, member)
    yield cp, member
    failures = []
    for s in (cp, member):
        if s.proc:
            rc = s.stop()
            if rc != 0:
                failures.append(f"{s.data_dir} exited with {rc}:\n{s.log()}")
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    assert not failures, "\n".join(failures)


def configmap(name, data, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(name=name, namespace="default", **meta),
            "data": data}


def deployment(name, replicas=2):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}


def work(name, manifests, annotations=None, **spec):
    w = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
         "metadata": {"name": name, "namespace": "karmada-es-m1"},
         "spec": dict(workload={"manifests": manifests}, **spec)}
    if annotations:
        w["metadata"]["annotations"] = annotations
    return w


def create_work(cp, w):
    code, body = cp.curl("POST", WORKS, w)
    assert code == 201, body
    return body


def get(server, path):
    code, body = server.curl("GET", path)
    if code == 404:
        return None
    assert code == 200, body
    return body


def applied(cp, name):
    """The Work's Applied condition, or None."""
    w = get(cp, f"{WORKS}/{name}")
    for c in ((w or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == "Applied":
            return c
    return None


def wait_applied(cp, name, status="True", timeout=WAIT):
    return wait_for(lambda: (c := applied(cp, name)) and c["status"] == status and c,
                    timeout=timeout, what=f"Work {name} Applied={status} (now {applied(cp, name)})")


def marked_by(obj, work_name):
    md = obj["metadata"]
    return (md.get("labels", {}).get("karmada.io/managed") == "true"
            and md.get("annotations", {}).get("work.karmada.io/name") == work_name
            and md.get("annotations", {}).get("work.karmada.io/namespace") == "karmada-es-m1")


def test_work_is_delivered_with_our_marks_and_applied(pair):
    cp, member = pair
    create_work(cp, work("w1", [configmap("cm1", {"k": "v1"}), deployment("web")]))
    cm = wait_for(lambda: get(member, f"{MEMBER_CM}/cm1"), timeout=WAIT, what="cm1 in the member")
    dep = wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/web"), timeout=WAIT, what="web in the member")
    assert cm["data"] == {"k": "v1"}
    assert marked_by(cm, "w1") and marked_by(dep, "w1")
    assert dep["spec"]["replicas"] == 2
    c = wait_applied(cp, "w1")
    assert c["reason"] == "AppliedSuccessful"
    w = get(cp, f"{WORKS}/w1")
    assert c["observedGeneration"] == w["metadata"]["generation"]
    assert "karmada.io/execution-controller" in w["metadata"]["finalizers"]


def test_work_status_is_written_only_on_change(pair):
    cp, _ = pair
    wait_applied(cp, "w1")
    rv = get(cp, f"{WORKS}/w1")["metadata"]["resourceVersion"]
    time.sleep(1.5)  # several reconciles' worth of member events and queue passes
    assert get(cp, f"{WORKS}/w1")["metadata"]["resourceVersion"] == rv


def test_work_update_reaches_the_member(pair):
    cp, member = pair
    # w1's status records both objects: their member watch keeps only their names now
    wait_for(lambda: metric(cp, "flotilla_execution_member_objects_shed_total") >= 2, timeout=WAIT,
             what="the member watch to shed the objects w1 records")
    reads = metric(cp, "flotilla_execution_member_reads_total")
    code, body = cp.curl("PATCH", f"{WORKS}/w1", [
        {"op": "replace", "path": "/spec/workload/manifests/0/data", "value": {"k": "v2", "extra": "x"}}],
        content_type="application/json-patch+json")
    assert code == 200, body
    wait_for(lambda: (get(member, f"{MEMBER_CM}/cm1") or {}).get("data") == {"k": "v2", "extra": "x"},
             timeout=WAIT, what="cm1 updated in the member")
    gen = get(cp, f"{WORKS}/w1")["metadata"]["generation"]
    wait_for(lambda: (applied(cp, "w1") or {}).get("observedGeneration") == gen, timeout=WAIT,
             what="Applied observedGeneration to follow the Work")
    # the apply read cm1 from the member, its watch no longer holding it
    assert metric(cp, "flotilla_execution_member_reads_total") > reads


def test_object_deleted_in_the_member_is_recreated(pair):
    cp, member = pair
    old = get(member, f"{MEMBER_CM}/cm1")
    code, body = member.curl("DELETE", f"{MEMBER_CM}/cm1")
    assert code == 200, body
    cm = wait_for(lambda: (o := get(member, f"{MEMBER_CM}/cm1")) and o["metadata"]["uid"] != old["metadata"]["uid"]
                  and o, timeout=WAIT, what="cm1 re-created in the member")
    assert cm["data"] == {"k": "v2", "extra": "x"} and marked_by(cm, "w1")


def test_object_changed_in_the_member_is_put_back(pair):
    cp, member = pair
    cm = get(member, f"{MEMBER_CM}/cm1")
    cm["data"] = {"k": "changed by hand"}
    cm["metadata"].setdefault("labels", {})["added-in-the-member"] = "yes"
    code, body = member.curl("PUT", f"{MEMBER_CM}/cm1", cm)
    assert code == 200, body
    back = wait_for(lambda: (o := get(member, f"{MEMBER_CM}/cm1")) and o["data"] == {"k": "v2", "extra": "x"} and o,
                    timeout=WAIT, what="cm1's data put back in the member")
    # what the member added and the manifest does not name stays (retain)
    assert back["metadata"]["labels"]["added-in-the-member"] == "yes" and marked_by(back, "w1")
    # and once put back, it stays put: no apply loop over the label
    rv = back["metadata"]["resourceVersion"]
    time.sleep(1.5)
    assert get(member, f"{MEMBER_CM}/cm1")["metadata"]["resourceVersion"] == rv


def test_member_status_and_health_reach_manifest_statuses(pair):
    cp, member = pair

    def entry(kind):
        st = (get(cp, f"{WORKS}/w1").get("status") or {})
        for ms in st.get("manifestStatuses") or []:
            if ms["identifier"]["kind"] == kind:
                return ms
        return None

    wait_for(lambda: entry("ConfigMap"), timeout=WAIT, what="a manifestStatus for the ConfigMap")
    cm = entry("ConfigMap")
    assert cm["health"] == "Healthy"
    assert cm["identifier"] == {"ordinal": 0, "version": "v1", "kind": "ConfigMap", "resource": "configmaps",
                                "namespace": "default", "name": "cm1"}
    dep = wait_for(lambda: entry("Deployment"), timeout=WAIT, what="a manifestStatus for the Deployment")
    assert dep["identifier"]["group"] == "apps" and dep["identifier"]["ordinal"] == 1
    assert dep["health"] == "Unhealthy"  # nothing rolled it out in the stand-in member

    d = get(member, f"{MEMBER_DEPLOY}/web")
    d["status"] = {"observedGeneration": d["metadata"]["generation"], "replicas": 2, "updatedReplicas": 2,
                   "readyReplicas": 2, "availableReplicas": 2}
    code, body = member.curl("PUT", f"{MEMBER_DEPLOY}/web/status", d)
    assert code == 200, body
    dep = wait_for(lambda: (e := entry("Deployment")) and e["health"] == "Healthy" and e, timeout=WAIT,
                   what="the Deployment reported Healthy")
    assert dep["status"]["availableReplicas"] == 2
    # the member's status survives the next apply: status is never written from the control plane
    assert get(member, f"{MEMBER_DEPLOY}/web")["status"]["availableReplicas"] == 2


def test_conflict_abort_leaves_the_member_object_alone(pair):
    cp, member = pair
    code, body = member.curl("POST", MEMBER_CM, configmap("taken", {"owner": "member"}))
    assert code == 201, body
    before = get(member, f"{MEMBER_CM}/taken")
    create_work(cp, work("w2", [configmap("taken", {"owner": "fleet"})]))
    c = wait_applied(cp, "w2", "False")
    assert c["reason"] == "AppliedFailed"
    assert "kind=ConfigMap, default/taken" in c["message"] and "already exists" in c["message"]
    assert "work.karmada.io/conflict-resolution" in c["message"]
    time.sleep(1)
    after = get(member, f"{MEMBER_CM}/taken")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["data"] == {"owner": "member"}
    assert "karmada.io/managed" not in (after["metadata"].get("labels") or {})


def test_conflict_overwrite_takes_the_object_over(pair):
    cp, member = pair
    code, body = cp.curl("PATCH", f"{WORKS}/w2",
                         {"metadata": {"annotations": {"work.karmada.io/conflict-resolution": "overwrite"}}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    cm = wait_for(lambda: (o := get(member, f"{MEMBER_CM}/taken")) and o["data"] == {"owner": "fleet"} and o,
                  timeout=WAIT, what="taken overwritten in the member")
    assert marked_by(cm, "w2")
    assert wait_applied(cp, "w2")["reason"] == "AppliedSuccessful"


def test_deleting_a_work_deletes_its_member_objects(pair):
    cp, member = pair
    code, body = cp.curl("DELETE", f"{WORKS}/w2")
    assert code == 200, body
    wait_for(lambda: get(member, f"{MEMBER_CM}/taken") is None, timeout=WAIT, what="taken deleted in the member")
    wait_for(lambda: get(cp, f"{WORKS}/w2") is None, timeout=WAIT, what="Work w2 to go")


def test_preserve_resources_on_deletion_keeps_objects_without_our_marks(pair):
    cp, member = pair
    create_work(cp, work("w3", [configmap("kept", {"a": "1"}, labels={"team": "x"})],
                         preserveResourcesOnDeletion=True))
    wait_for(lambda: get(member, f"{MEMBER_CM}/kept"), timeout=WAIT, what="kept in the member")
    wait_applied(cp, "w3")
    code, body = cp.curl("DELETE", f"{WORKS}/w3")
    assert code == 200, body
    wait_for(lambda: get(cp, f"{WORKS}/w3") is None, timeout=WAIT, what="Work w3 to go")
    cm = get(member, f"{MEMBER_CM}/kept")
    assert cm is not None and cm["data"] == {"a": "1"}
    md = cm["metadata"]
    assert md.get("labels") == {"team": "x"}
    assert not any(k.startswith("work.karmada.io/") for k in (md.get("annotations") or {}))


def test_suspended_work_is_not_dispatched(pair):
    cp, member = pair
    create_work(cp, work("w5", [configmap("held", {"a": "1"})], suspendDispatching=True))
    time.sleep(1.5)
    assert get(member, f"{MEMBER_CM}/held") is None
    code, body = cp.curl("PATCH", f"{WORKS}/w5", {"spec": {"suspendDispatching": False}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    wait_for(lambda: get(member, f"{MEMBER_CM}/held"), timeout=WAIT, what="held delivered once resumed")


def test_suspending_keeps_the_status_of_objects_the_watch_no_longer_holds(pair):
    """A suspended Work reports what its member watch knows. An object whose status the Work
    recorded is kept there as its name only, and its entry stays as recorded."""
    cp, member = pair
    shed = metric(cp, "flotilla_execution_member_objects_shed_total")
    create_work(cp, work("w7", [configmap("recorded", {"a": "1"})]))
    wait_applied(cp, "w7")
    wait_for(lambda: metric(cp, "flotilla_execution_member_objects_shed_total") > shed, timeout=WAIT,
             what="the member watch to shed the object w7 records")
    before = get(cp, f"{WORKS}/w7")["status"]["manifestStatuses"]
    assert [e["identifier"]["name"] for e in before] == ["recorded"]
    code, body = cp.curl("PATCH", f"{WORKS}/w7", {"spec": {"suspendDispatching": True}},
                         content_type="application/merge-patch+json")
    assert code == 200, body

    def dispatching():
        w = get(cp, f"{WORKS}/w7")
        return next((c for c in w["status"]["conditions"] if c["type"] == "Dispatching"), None), w

    wait_for(lambda: dispatching()[0]["status"] == "False", timeout=WAIT, what="w7's Dispatching False")
    c, w = dispatching()
    assert c["reason"] == "SuspendDispatching" and c["observedGeneration"] == w["metadata"]["generation"]
    assert w["status"]["manifestStatuses"] == before


def test_works_of_pull_or_absent_clusters_are_left_alone(pair):
    cp, member = pair
    code, body = cp.curl("POST", "/apis/cluster.karmada.io/v1alpha1/clusters", {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "p1"},
        "spec": {"syncMode": "Pull"}})
    assert code == 201, body
    for ns in ("karmada-es-p1", "karmada-es-ghost"):
        ensure_namespace(cp, ns)
        w = work("left", [configmap("not-pushed", {"a": "1"})])
        w["metadata"]["namespace"] = ns
        code, body = cp.curl("POST", f"/apis/work.karmada.io/v1alpha1/namespaces/{ns}/works", w)
        assert code == 201, body
    time.sleep(1.5)
    for ns in ("karmada-es-p1", "karmada-es-ghost"):
        w = get(cp, f"/apis/work.karmada.io/v1alpha1/namespaces/{ns}/works/left")
        assert not w["metadata"].get("finalizers") and not w.get("status"), w
    assert get(member, f"{MEMBER_CM}/not-pushed") is None
    code, body = cp.curl("DELETE", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-ghost/works/left")
    assert code == 200 and get(cp, "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-ghost/works/left") is None


def test_control_plane_restart_loses_and_duplicates_nothing(pair):
    cp, member = pair
    before = {n: get(member, f"{MEMBER_CM}/{n}")["metadata"]["uid"] for n in ("cm1", "held")}
    web_uid = get(member, f"{MEMBER_DEPLOY}/web")["metadata"]["uid"]

    def delivered():
        code, body = member.curl("GET", MEMBER_CM + "?labelSelector=karmada.io%2Fmanaged%3Dtrue")
        assert code == 200, body
        return sorted(o["metadata"]["name"] for o in body["items"] if o["metadata"]["name"].startswith("bulk-"))

    # kill -9 once the first objects of a Work with many manifests reach the member: delivery
    # is mid-way (or, on a fast machine, just done; either way the restart must not redo it)
    many = [configmap(f"bulk-{i}", {"i": str(i)}) for i in range(30)]
    create_work(cp, work("w4", many))
    wait_for(lambda: delivered(), timeout=WAIT, interval=0.005, what="the first bulk ConfigMap")
    cp.kill()
    mid = delivered()
    uids = {n: get(member, f"{MEMBER_CM}/{n}")["metadata"]["uid"] for n in mid}
    cp.start()

    names = wait_for(lambda: len(n := delivered()) == 30 and n, timeout=WAIT * 2, what="all 30 bulk ConfigMaps")
    assert len(set(names)) == 30
    wait_applied(cp, "w4", timeout=WAIT * 2)
    for i in range(30):
        assert marked_by(get(member, f"{MEMBER_CM}/bulk-{i}"), "w4")

    # what was delivered before the restart is the same objects, not re-created
    assert {n: get(member, f"{MEMBER_CM}/{n}")["metadata"]["uid"] for n in before} == before
    assert {n: get(member, f"{MEMBER_CM}/{n}")["metadata"]["uid"] for n in mid} == uids
    assert get(member, f"{MEMBER_DEPLOY}/web")["metadata"]["uid"] == web_uid

    # and delivery goes on: a change after the restart arrives, a member-side delete is repaired
    create_work(cp, work("w6", [configmap("after-restart", {"a": "1"})]))
    wait_for(lambda: get(member, f"{MEMBER_CM}/after-restart"), timeout=WAIT, what="after-restart delivered")
    code, body = member.curl("DELETE", f"{MEMBER_CM}/bulk-7")
    assert code == 200, body
    wait_for(lambda: get(member, f"{MEMBER_CM}/bulk-7"), timeout=WAIT, what="bulk-7 re-created")


# ---- the periodic resync: what did not apply is tried again, what did is left alone ----

RESYNC_MS = 300


def work_reconciles(cp):
    code, text = cp.curl("GET", "/metrics")
    assert code == 200, text
    for line in (text if isinstance(text, str) else "").splitlines():
        if line.startswith("flotilla_execution_work_reconciles_total "):
            return float(line.split()[1])
    return 0.0


def pair_with(cp_env):
    """A control plane started with cp_env and a member joined to it; stopped after."""
    dirs = [tempfile.mkdtemp(prefix="flotilla-e2e-cp-"), tempfile.mkdtemp(prefix="flotilla-e2e-m1-")]
    cp = Server(dirs[0], env=cp_env).start()
    member = Server(dirs[1]).start()
    join(cp, member)
    yield cp, member
    for s in (cp, member):
        if s.proc:
            s.stop()
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def resync_pair():
    yield from pair_with({"FLOTILLA_EXEC_RESYNC_MS": str(RESYNC_MS)})


def test_resync_leaves_applied_works_alone(resync_pair):
    cp, member = resync_pair
    create_work(cp, work("settled", [configmap("settled", {"a": "1"})]))
    wait_applied(cp, "settled")
    # the apply's own status write and member events come back once; then the fleet is at rest
    time.sleep(1)
    before = work_reconciles(cp)
    assert before > 0, "the counter counts: the apply above was a reconcile"
    time.sleep(RESYNC_MS * 6 / 1000)
    assert work_reconciles(cp) == before, "a resync re-queued a Work that had applied"
    # the member watch, not the resync, is what repairs a member-side change
    code, body = member.curl("DELETE", f"{MEMBER_CM}/settled")
    assert code == 200, body
    wait_for(lambda: get(member, f"{MEMBER_CM}/settled"), timeout=WAIT, what="settled re-created")
    assert work_reconciles(cp) > before


def test_resync_tries_a_failed_apply_again(resync_pair):
    cp, member = resync_pair
    # an object we do not manage blocks the apply; our watch cannot see it go away
    code, body = member.curl("POST", MEMBER_CM, configmap("blocker", {"owner": "member"}))
    assert code == 201, body
    create_work(cp, work("blocked", [configmap("blocker", {"owner": "fleet"})]))
    wait_applied(cp, "blocked", "False")
    code, body = member.curl("DELETE", f"{MEMBER_CM}/blocker")
    assert code == 200, body
    wait_applied(cp, "blocked", timeout=WAIT)
    cm = get(member, f"{MEMBER_CM}/blocker")
    assert cm["data"] == {"owner": "fleet"} and marked_by(cm, "blocked")


def member_watches(cp):
    """Member watches running in the control plane"""
    return (metric(cp, "flotilla_execution_member_watches_started_total")
            - metric(cp, "flotilla_execution_member_watches_stopped_total"))


def test_resync_stops_the_member_watches_no_work_needs(resync_pair):
    cp, member = resync_pair
    before = member_watches(cp)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "lonely", "namespace": "default"},
              "stringData": {"a": "1"}}
    create_work(cp, work("lonely", [secret]))
    wait_applied(cp, "lonely")
    # a kind no other Work uses: its watch is there while the Work is, through resyncs
    assert member_watches(cp) == before + 1
    time.sleep(RESYNC_MS * 4 / 1000)
    assert member_watches(cp) == before + 1, "a resync stopped a watch in use"
    code, body = cp.curl("DELETE", f"{WORKS}/lonely")
    assert code == 200, body
    wait_for(lambda: member_watches(cp) == before, timeout=WAIT,
             what="the unused watch stopped")
    assert get(member, "/api/v1/namespaces/default/secrets/lonely") is None


def requests_answered(server, verb, resource, code):
    """How many verb requests on resource the server has answered with code (its /metrics)."""
    status, text = server.curl("GET", "/metrics")
    assert status == 200, text
    n = 0.0
    for line in text.splitlines():
        if (line.startswith("flotilla_apiserver_request_total{") and f'verb="{verb}"' in line
                and f'resource="{resource}"' in line and f'code="{code}"' in line):
            n += float(line.split()[-1])
    return n


def member_creates_refused(member):
    """How many creates of ConfigMaps the member has answered with 409 (AlreadyExists)."""
    return requests_answered(member, "POST", "configmaps", 409)


def test_restart_reads_the_member_with_one_list_not_a_create_per_object(resync_pair):
    cp, member = resync_pair
    many = [configmap(f"kept-{i}", {"i": str(i)}) for i in range(20)]
    create_work(cp, work("kept", many))
    wait_applied(cp, "kept")
    refused = member_creates_refused(member)
    uids = {i: get(member, f"{MEMBER_CM}/kept-{i}")["metadata"]["uid"] for i in range(20)}
    assert cp.stop() == 0
    cp.start()
    # once something created after the restart has arrived, the restart's reconciles have run
    create_work(cp, work("after-restart", [configmap("after-restart", {"a": "1"})]))
    wait_for(lambda: get(member, f"{MEMBER_CM}/after-restart"), timeout=WAIT, what="after-restart delivered")
    wait_applied(cp, "kept")
    time.sleep(1)
    # the Work's 20 objects were compared with the member watch's list, not created again one
    # by one (each answered AlreadyExists and then read)
    assert member_creates_refused(member) == refused
    assert {i: get(member, f"{MEMBER_CM}/kept-{i}")["metadata"]["uid"] for i in range(20)} == uids


def metric(server, name):
    """The value of an unlabelled counter on the server's /metrics (0 before its first count)."""
    code, text = server.curl("GET", "/metrics")
    assert code == 200, text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


@pytest.fixture(scope="module")
def restart_pair():
    # the passes a restart makes when it cannot resume: no revision is ever noted as reconciled
    yield from pair_with({"FLOTILLA_RECONCILED_QUIET_MS": "3600000"})


def test_restart_skips_the_works_whose_member_objects_did_not_move(restart_pair):
    cp, member = restart_pair
    for name in ("still", "drift"):
        create_work(cp, work(name, [configmap(name, {"a": "1"})]))
    for name in ("still", "drift"):
        wait_applied(cp, name)
        # the status records the version of the member object the apply left
        wait_for(lambda: get(cp, f"{WORKS}/{name}")["status"]["manifestStatuses"][0].get("resourceVersion")
                 == get(member, f"{MEMBER_CM}/{name}")["metadata"]["resourceVersion"],
                 timeout=WAIT, what=f"{name}'s member version recorded")
    still_rv = get(member, f"{MEMBER_CM}/still")["metadata"]["resourceVersion"]
    assert cp.stop() == 0
    # while the control plane is down, someone edits one object in the member
    code, body = member.curl("PATCH", f"{MEMBER_CM}/drift", {"data": {"a": "edited"}},
                             content_type="application/merge-patch+json")
    assert code == 200, body
    cp.start()
    # the edited one is put back, and its Work now records the version the repair made
    wait_for(lambda: get(member, f"{MEMBER_CM}/drift")["data"] == {"a": "1"}, timeout=WAIT,
             what="the edited object put back")
    wait_for(lambda: get(cp, f"{WORKS}/drift")["status"]["manifestStatuses"][0].get("resourceVersion")
             == get(member, f"{MEMBER_CM}/drift")["metadata"]["resourceVersion"],
             timeout=WAIT, what="the repair's version recorded")
    # the other one was found at its recorded version: nothing applied, nothing written
    # (the member's event for the repair may find the repaired one unchanged too)
    wait_for(lambda: metric(cp, "flotilla_execution_work_unchanged_total") >= 1, timeout=WAIT,
             what="a Work found unchanged")
    time.sleep(1)
    assert get(member, f"{MEMBER_CM}/still")["metadata"]["resourceVersion"] == still_rv
    assert work_status_writes(cp) == 1, "only the repaired Work's status was written"


def test_restart_renders_no_work_whose_inputs_did_not_change(restart_pair):
    cp, member = restart_pair
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "rendered", "namespace": "default", "labels": {"app": "rendered"}},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rendered"}},
                    "template": {"metadata": {"labels": {"app": "rendered"}},
                                 "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}}
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "rendered", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "rendered"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}}}
    for path, obj in (("/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", pp),
                      (MEMBER_DEPLOY, dep)):
        code, body = cp.curl("POST", path, obj)
        assert code == 201, body
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/rendered"), timeout=WAIT, what="rendered in the member")
    w = wait_for(lambda: [w for w in cp.curl("GET", WORKS)[1]["items"]
                          if w["spec"]["workload"]["manifests"][0]["metadata"]["name"] == "rendered"],
                 timeout=WAIT, what="its Work")[0]
    # the Work records what it was rendered from, ending in the generation it was written at
    rendered = w["metadata"]["annotations"]["flotilla.io/rendered-from"]
    assert rendered.endswith("." + str(w["metadata"]["generation"])), rendered
    assert cp.stop() == 0
    cp.start()
    assert metric(cp, "flotilla_controllers_resumed") == 0
    # the binding controller's pass after the restart finds the Work as rendered, and writes none
    wait_for(lambda: metric(cp, "flotilla_binding_works_unchanged_total") >= 1, timeout=WAIT,
             what="the Work found as rendered")
    time.sleep(1)
    assert requests_answered(cp, "PUT", "works", 200) == 0
    # an edit of the template after the restart is rendered again
    code, body = cp.curl("PATCH", f"{MEMBER_DEPLOY}/rendered", {"spec": {"replicas": 3}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/rendered")["spec"]["replicas"] == 3, timeout=WAIT,
             what="the edit in the member")


@pytest.fixture(scope="module")
def resume_pair():
    # a revision is noted as reconciled 200 ms after the controllers went idle
    yield from pair_with({"FLOTILLA_RECONCILED_QUIET_MS": "200"})


def rendered_deployment(name, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "resume"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}}


def test_restart_at_the_reconciled_revision_skips_the_first_passes_and_misses_no_change(resume_pair):
    cp, member = resume_pair
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "resume", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "labelSelector": {"matchLabels": {"app": "resume"}}}],
                   "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}}}
    code, body = cp.curl("POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", pp)
    assert code == 201, body
    names = ("kept", "edited", "gone", "drifted", "touched")
    for name in names:
        code, body = cp.curl("POST", MEMBER_DEPLOY, rendered_deployment(name))
        assert code == 201, body
    for name in names:
        wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/{name}"), timeout=WAIT, what=f"{name} in the member")
    # once every controller is idle and the store still, its head is noted as reconciled, with
    # the member watches and where each had reached
    wait_for(lambda: metric(cp, "flotilla_reconciled_revision") == metric(cp, "flotilla_store_revision")
             and metric(cp, "flotilla_member_watches_noted") == 1,
             timeout=WAIT, what="the reconciled revision noted with the member watches")
    kept_rv = get(member, f"{MEMBER_DEPLOY}/kept")["metadata"]["resourceVersion"]
    cp.kill()
    # while the control plane is down, someone deletes an object in the member, and edits another
    code, body = member.curl("DELETE", f"{MEMBER_DEPLOY}/drifted")
    assert code == 200, body
    code, body = member.curl("PATCH", f"{MEMBER_DEPLOY}/touched", {"spec": {"replicas": 5}},
                             content_type="application/merge-patch+json")
    assert code == 200, body
    cp.start()
    assert metric(cp, "flotilla_controllers_resumed") == 1
    # the member watch goes on from where it was noted, listing nothing; it tells the drift
    # while down, which is repaired
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/drifted"), timeout=WAIT, what="the deleted member object back")
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/touched")["spec"]["replicas"] == 1, timeout=WAIT,
             what="the edited member object put back")
    assert metric(cp, "flotilla_execution_watches_resumed_total") == 1
    # every Work was left alone at the start; only the watch's events queued the two
    assert metric(cp, "flotilla_execution_works_resumed_total") == len(names)
    wait_for(lambda: metric(cp, "flotilla_reconciled_revision") == metric(cp, "flotilla_store_revision"),
             timeout=WAIT, what="a new reconciled revision noted")
    # what did not change was not reconciled again: the binding controller rendered nothing to
    # compare (a full pass finds each Work as rendered), and the member object was left alone
    assert metric(cp, "flotilla_binding_works_unchanged_total") == 0
    assert get(member, f"{MEMBER_DEPLOY}/kept")["metadata"]["resourceVersion"] == kept_rv

    # a ConfigMap no policy selects yet: its kind is not even watched
    code, body = cp.curl("POST", "/api/v1/namespaces/default/configmaps",
                         configmap("late", {"a": "1"}, labels={"app": "resume"}))
    assert code == 201, body
    wait_for(lambda: metric(cp, "flotilla_reconciled_revision") == metric(cp, "flotilla_store_revision"),
             timeout=WAIT, what="the reconciled revision noted again")
    cp.kill()
    cp.start()
    assert metric(cp, "flotilla_controllers_resumed") == 1
    # changes made at once, while the first lists may still be going, all take effect
    pp["spec"]["resourceSelectors"].append({"apiVersion": "v1", "kind": "ConfigMap",
                                            "labelSelector": {"matchLabels": {"app": "resume"}}})
    code, body = cp.curl("PATCH", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies/resume",
                         {"spec": pp["spec"]}, content_type="application/merge-patch+json")
    assert code == 200, body
    code, body = cp.curl("PATCH", f"{MEMBER_DEPLOY}/edited", {"spec": {"replicas": 3}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    code, body = cp.curl("DELETE", f"{MEMBER_DEPLOY}/gone")
    assert code == 200, body
    code, body = cp.curl("POST", MEMBER_DEPLOY, rendered_deployment("new"))
    assert code == 201, body
    wait_for(lambda: (get(member, f"{MEMBER_DEPLOY}/edited") or {}).get("spec", {}).get("replicas") == 3,
             timeout=WAIT, what="the edit in the member")
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/gone") is None, timeout=WAIT, what="the deleted one removed")
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/new"), timeout=WAIT, what="the new one in the member")
    # the changed policy's new kind is listed after the restart, with objects from before it
    wait_for(lambda: get(member, f"{MEMBER_CM}/late"), timeout=WAIT, what="the ConfigMap the policy now selects")
    assert get(member, f"{MEMBER_DEPLOY}/kept")["metadata"]["resourceVersion"] == kept_rv


def empty_store(server):
    """Give a stopped server an empty store whose history is behind the old one's, its data
    directory otherwise kept: the store's files go. With FLOTILLA_E2E_STORE=etcd the server
    leaves etcd for a new SQLite store: the session's etcd keeps one revision counter for every
    prefix, so an emptied prefix there starts ahead of every revision the old one had, and a
    watch from one of those would rightly go on (etcd replays the prefix's empty history)."""
    if "--etcd-servers" in server.extra_args:
        at = server.extra_args.index("--etcd-servers")
        del server.extra_args[at:at + 2]
        at = server.extra_args.index("--etcd-prefix")
        del server.extra_args[at:at + 2]
    for suffix in ("", "-wal", "-shm"):
        path = os.path.join(server.data_dir, "store.db" + suffix)
        if os.path.exists(path):
            os.remove(path)


def test_a_member_watch_that_cannot_go_on_where_it_was_noted_lists_and_checks_its_cluster(resume_pair):
    cp, member = resume_pair
    wait_for(lambda: metric(cp, "flotilla_reconciled_revision") == metric(cp, "flotilla_store_revision")
             and metric(cp, "flotilla_member_watches_noted") == 1,
             timeout=WAIT, what="the reconciled revision noted with the member watches")
    cp.kill()
    # the member begins again with an empty store (same address and credentials): its history
    # is behind the revisions the watches were noted at
    member.kill()
    empty_store(member)
    member.start()
    assert get(member, f"{MEMBER_DEPLOY}/kept") is None
    cp.start()
    assert metric(cp, "flotilla_controllers_resumed") == 1
    # the watches list instead, and every Work of the cluster is checked: all is delivered again
    for name in ("kept", "edited", "drifted", "touched", "new"):
        wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/{name}"), timeout=WAIT, what=f"{name} delivered again")
    wait_for(lambda: get(member, f"{MEMBER_CM}/late"), timeout=WAIT, what="the ConfigMap delivered again")
    assert get(member, f"{MEMBER_DEPLOY}/gone") is None


def test_dependencies_resume_from_their_note(resume_pair):
    cp, member = resume_pair
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "deps-resume", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "deps-r"}],
                   "propagateDeps": True, "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}}}
    code, body = cp.curl("POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", pp)
    assert code == 201, body
    code, body = cp.curl("POST", "/api/v1/namespaces/default/configmaps", configmap("deps-here", {"a": "1"}))
    assert code == 201, body
    dep = rendered_deployment("deps-r")
    dep["metadata"]["labels"] = {"app": "deps-r"}
    dep["spec"]["template"]["spec"]["volumes"] = [{"name": "here", "configMap": {"name": "deps-here"}},
                                                  {"name": "late", "configMap": {"name": "deps-late"}}]
    code, body = cp.curl("POST", MEMBER_DEPLOY, dep)
    assert code == 201, body
    wait_for(lambda: get(member, f"{MEMBER_CM}/deps-here"), timeout=WAIT, what="the dependency in the member")
    wait_for(lambda: metric(cp, "flotilla_reconciled_revision") == metric(cp, "flotilla_store_revision")
             and metric(cp, "flotilla_member_watches_noted") == 1,
             timeout=WAIT, what="the reconciled revision noted")
    cp.kill()
    cp.start()
    assert metric(cp, "flotilla_controllers_resumed") == 1
    # the dependency missing at the note is still looked for: the note says who propagates
    code, body = cp.curl("POST", "/api/v1/namespaces/default/configmaps", configmap("deps-late", {"b": "2"}))
    assert code == 201, body
    wait_for(lambda: get(member, f"{MEMBER_CM}/deps-late"), timeout=WAIT, what="the late dependency in the member")
    wait_for(lambda: metric(cp, "flotilla_reconciled_revision") == metric(cp, "flotilla_store_revision"),
             timeout=WAIT, what="the reconciled revision noted again")
    cp.kill()
    cp.start()
    assert metric(cp, "flotilla_controllers_resumed") == 1
    # the workload stops propagating its dependencies: the note says who depends on them,
    # and they leave the member
    code, body = cp.curl("PATCH", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies/"
                         "deps-resume", {"spec": {"propagateDeps": False}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    for name in ("deps-here", "deps-late"):
        wait_for(lambda: get(member, f"{MEMBER_CM}/{name}") is None, timeout=WAIT, what=f"{name} gone from the member")
    assert get(member, f"{MEMBER_DEPLOY}/deps-r")


FIRST_STATUS_MS = 1500


def work_status_writes(cp):
    """How many Work status writes (updates and patches) the control plane has answered with 200."""
    return requests_answered(cp, "PUT", "works/status", 200) + requests_answered(cp, "PATCH", "works/status", 200)


@pytest.fixture(scope="module")
def first_status_pair():
    yield from pair_with({"FLOTILLA_EXEC_FIRST_STATUS_MS": str(FIRST_STATUS_MS)})


def report_ready(member, name):
    """What the member's controller writes once Deployment name's 2 replicas are ready."""
    code, body = member.curl("PATCH", f"{MEMBER_DEPLOY}/{name}/status",
                             {"status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2,
                                         "availableReplicas": 2, "updatedReplicas": 2}},
                             content_type="application/merge-patch+json")
    assert code == 200, body


def test_first_status_carries_the_members_status_in_one_write(first_status_pair):
    cp, member = first_status_pair
    before = work_status_writes(cp)
    create_work(cp, work("first", [deployment("first")]))
    # delivery does not wait: the object is in the member long before the status is due
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/first"), timeout=WAIT, what="first in the member")
    assert applied(cp, "first") is None, "the first status was written at once"
    # the member's controller reports, as a real one does right after a create
    report_ready(member, "first")
    wait_applied(cp, "first")
    entries = get(cp, f"{WORKS}/first")["status"].get("manifestStatuses") or []
    assert [e.get("status", {}).get("readyReplicas") for e in entries] == [2], entries
    time.sleep(0.5)  # anything else the Work would still write
    assert work_status_writes(cp) - before == 1, "Applied and the member's status took more than one write"
    # later changes are reported at once, without waiting
    code, body = member.curl("PATCH", f"{MEMBER_DEPLOY}/first/status", {"status": {"readyReplicas": 1}},
                             content_type="application/merge-patch+json")
    assert code == 200, body
    t0 = time.time()
    wait_for(lambda: [e.get("status", {}).get("readyReplicas")
                      for e in get(cp, f"{WORKS}/first")["status"]["manifestStatuses"]] == [1],
             timeout=WAIT, what="the member's change in the Work")
    assert time.time() - t0 < FIRST_STATUS_MS / 1000, "a later status change waited like the first"


DELIVERY_FIRST_MAX_MS = 4000


@pytest.fixture(scope="module")
def delivery_first_pair():
    # one Work waiting for its delivery holds first statuses back (64 do by default)
    yield from pair_with({"FLOTILLA_EXEC_FIRST_STATUS_MS": "100",
                          "FLOTILLA_EXEC_FIRST_STATUS_MAX_MS": str(DELIVERY_FIRST_MAX_MS),
                          "FLOTILLA_EXEC_HOLD_UNDELIVERED": "1"})


@pytest.fixture(scope="module")
def few_waiting_pair():
    yield from pair_with({"FLOTILLA_EXEC_FIRST_STATUS_MS": "100",
                          "FLOTILLA_EXEC_FIRST_STATUS_MAX_MS": str(DELIVERY_FIRST_MAX_MS)})


@pytest.fixture
def silent_member():
    """A TCP endpoint that accepts connections and never answers: deliveries to it hang."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    held = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"https://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    t.join(timeout=5)
    for c in held:
        c.close()
    sock.close()


def first_status_after_delivery(cp, member, name):
    """Seconds from the Work's object reaching the member to its first Applied condition."""
    create_work(cp, work(name, [configmap(name, {"a": "1"})]))
    wait_for(lambda: get(member, f"{MEMBER_CM}/{name}"), timeout=WAIT, what=f"{name} in the member")
    t0 = time.time()
    wait_applied(cp, name)
    return time.time() - t0


def test_first_statuses_wait_for_other_works_deliveries(delivery_first_pair, silent_member):
    cp, member = delivery_first_pair
    # nothing else to deliver: the first status follows its own delivery at once
    assert first_status_after_delivery(cp, member, "alone") < 2.0
    # a Work whose delivery hangs (its member accepts and never answers) is being delivered...
    join(cp, member, "m2")
    code, body = cp.curl("PATCH", "/apis/cluster.karmada.io/v1alpha1/clusters/m2",
                         {"spec": {"apiEndpoint": silent_member}}, content_type="application/merge-patch+json")
    assert code == 200, body
    held = work("held", [configmap("held", {"a": "1"})])
    held["metadata"]["namespace"] = "karmada-es-m2"
    code, body = cp.curl("POST", WORKS.replace("karmada-es-m1", "karmada-es-m2"), held)
    assert code == 201, body
    time.sleep(0.5)
    # ...so the next Work is delivered at once, but its first status waits: for that delivery,
    # and no longer than FLOTILLA_EXEC_FIRST_STATUS_MAX_MS after its own apply
    waited = first_status_after_delivery(cp, member, "follows")
    assert waited >= 2.5, f"the first status did not wait for the other delivery ({waited:.2f} s)"
    assert waited < DELIVERY_FIRST_MAX_MS / 1000 + 5, waited


def test_a_few_works_waiting_for_delivery_hold_no_first_status(few_waiting_pair, silent_member):
    # a trickle (a failover moving Works a few at a time) is no burst: were each first status
    # held while any other Work waits for delivery, the last to move would wait the cap
    cp, member = few_waiting_pair
    join(cp, member, "m2")
    code, body = cp.curl("PATCH", "/apis/cluster.karmada.io/v1alpha1/clusters/m2",
                         {"spec": {"apiEndpoint": silent_member}}, content_type="application/merge-patch+json")
    assert code == 200, body
    for i in range(3):
        hung = work(f"hung{i}", [configmap(f"hung{i}", {"a": "1"})])
        hung["metadata"]["namespace"] = "karmada-es-m2"
        code, body = cp.curl("POST", WORKS.replace("karmada-es-m1", "karmada-es-m2"), hung)
        assert code == 201, body
    time.sleep(0.5)
    waited = first_status_after_delivery(cp, member, "not-held")
    assert waited < 2.0, f"three Works waiting for delivery held a first status {waited:.2f} s"


@pytest.fixture(scope="module")
def burst_pair():
    # every Work makes a burst here (FLOTILLA_EXEC_BURST_WORKS=1), as 200 within a second do
    yield from pair_with({"FLOTILLA_EXEC_FIRST_STATUS_MS": "100",
                          "FLOTILLA_EXEC_FIRST_STATUS_MAX_MS": str(DELIVERY_FIRST_MAX_MS),
                          "FLOTILLA_EXEC_BURST_WORKS": "1"})


def test_in_a_burst_a_first_status_waits_for_its_objects_to_be_ready(burst_pair):
    cp, member = burst_pair
    before = work_status_writes(cp)
    create_work(cp, work("ready-later", [deployment("ready-later")]))
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/ready-later"), timeout=WAIT, what="ready-later in the member")
    time.sleep(1)
    assert applied(cp, "ready-later") is None, "a first status said 'not ready' during a burst"
    # the member's controller makes it ready: that status is the first, and the only, write
    report_ready(member, "ready-later")
    wait_applied(cp, "ready-later")
    entries = get(cp, f"{WORKS}/ready-later")["status"]["manifestStatuses"]
    assert [(e["health"], e["status"]["readyReplicas"]) for e in entries] == [("Healthy", 2)], entries
    time.sleep(0.5)
    assert work_status_writes(cp) - before == 1
    # an object that never gets ready has its status written at the cap, saying so
    create_work(cp, work("never-ready", [deployment("never-ready")]))
    wait_for(lambda: get(member, f"{MEMBER_DEPLOY}/never-ready"), timeout=WAIT, what="never-ready in the member")
    t0 = time.time()
    wait_applied(cp, "never-ready")
    waited = time.time() - t0
    assert DELIVERY_FIRST_MAX_MS / 1000 - 1.5 <= waited < DELIVERY_FIRST_MAX_MS / 1000 + 5, waited
    entries = get(cp, f"{WORKS}/never-ready")["status"]["manifestStatuses"]
    assert [e["health"] for e in entries] == ["Unhealthy"], entries


@pytest.fixture(scope="module")
def recheck_pair():
    # the same settings as delivery_first_pair, in a fresh pair: that one keeps a Work whose
    # delivery hangs, which a restart would deliver again
    yield from pair_with({"FLOTILLA_EXEC_FIRST_STATUS_MS": "100",
                          "FLOTILLA_EXEC_FIRST_STATUS_MAX_MS": str(DELIVERY_FIRST_MAX_MS),
                          "FLOTILLA_EXEC_HOLD_UNDELIVERED": "1"})


def test_after_a_restart_works_only_rechecked_hold_no_status(recheck_pair, silent_member):
    cp, member = recheck_pair
    # a Work applied through a second cluster (the same member server), whose endpoint then
    # stops answering: after a restart, its re-check hangs
    join(cp, member, "m3")
    applied_one = work("recheck", [configmap("recheck", {"a": "1"})])
    applied_one["metadata"]["namespace"] = "karmada-es-m3"
    m3_works = WORKS.replace("karmada-es-m1", "karmada-es-m3")
    code, body = cp.curl("POST", m3_works, applied_one)
    assert code == 201, body
    wait_for(lambda: (c := [x for x in (get(cp, f"{m3_works}/recheck").get("status") or {}).get("conditions", [])
                            if x["type"] == "Applied"]) and c[0]["status"] == "True",
             timeout=WAIT, what="recheck applied")
    code, body = cp.curl("PATCH", "/apis/cluster.karmada.io/v1alpha1/clusters/m3",
                         {"spec": {"apiEndpoint": silent_member}}, content_type="application/merge-patch+json")
    assert code == 200, body
    cp.kill()
    cp.start()
    # that re-check is not a delivery anything waits for: a new Work reports at once
    assert first_status_after_delivery(cp, member, "fresh") < 2.5
