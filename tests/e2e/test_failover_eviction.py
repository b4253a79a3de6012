"""Cluster failover end to end on `flotilla up`: a NoExecute taint the placement does not
tolerate moves a binding to another cluster, in one write that leaves a graceful eviction
task; the task's purge mode decides when the old copy goes (docs/failover.md).

One fleet (a control plane and three simulated members) serves most tests; each uses its own
names and cleans up. The restart test runs a fleet of its own and kills its server with -9.
"""
import calendar
import json
import os
import signal
import subprocess
import tempfile
import time

from conftest import BIN, Fleet, free_port, start_up, wait_for

TAINT_KEY = "fail-test"


def deployment(name):
    pod = {"containers": [{"name": "app", "image": "nginx:1.25",
                           "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


def policy(name, clusters, toleration_seconds=2, purge_mode=None):
    """One cluster out of `clusters`, tolerating the test taint for toleration_seconds."""
    spec = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": {"clusterAffinity": {"clusterNames": clusters},
                          "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
                          "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
                          "clusterTolerations": [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute",
                                                  "tolerationSeconds": toleration_seconds}]}}
    if purge_mode:
        spec["failover"] = {"cluster": {"purgeMode": purge_mode}}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def placed(fleet, name):
    rb = fleet.get("rb", f"{name}-deployment")
    clusters = [c["name"] for c in ((rb or {}).get("spec", {}).get("clusters") or [])]
    return clusters[0] if len(clusters) == 1 else None


def exists(fleet, name, member):
    return fleet.get("deploy", name, member=member) is not None


def taint(fleet, cluster, time_added=None):
    t = {"key": TAINT_KEY, "effect": "NoExecute"}
    if time_added:
        t["timeAdded"] = time_added
    fleet.patch("cluster", cluster, patch={"spec": {"taints": [t]}})


def untaint(fleet, cluster):
    fleet.patch("cluster", cluster, patch={"spec": {"taints": None}})


def start(fleet, name, clusters, **kw):
    fleet.apply([deployment(name), policy(name, clusters, **kw)])
    old = wait_for(lambda: placed(fleet, name), timeout=30, what=f"{name} scheduled")
    wait_for(lambda: exists(fleet, name, old), timeout=30, what=f"{name} in {old}")
    return old


def cleanup(fleet, name, tainted):
    untaint(fleet, tainted)
    fleet.delete("deploy", name)
    fleet.delete("pp", name)
    wait_for(lambda: fleet.get("rb", f"{name}-deployment") is None, timeout=30, what=f"{name}'s binding gone")


def tasks(fleet, name):
    rb = fleet.get("rb", f"{name}-deployment") or {}
    return rb.get("spec", {}).get("gracefulEvictionTasks") or []


def health(fleet, name, cluster):
    rb = fleet.get("rb", f"{name}-deployment") or {}
    for a in rb.get("status", {}).get("aggregatedStatus") or []:
        if a.get("clusterName") == cluster:
            return a.get("health")
    return None


def events(fleet, obj_name, reason):
    return [e for e in fleet.get("events")["items"]
            if e["involvedObject"]["name"] == obj_name and e["reason"] == reason]


def test_gracefully_moves_and_keeps_the_old_copy_until_the_new_one_is_healthy(fleet):
    name = "fo-grace"
    old = start(fleet, name, ["member1", "member2"])
    new = "member2" if old == "member1" else "member1"
    taint(fleet, old)
    wait_for(lambda: placed(fleet, name) == new, timeout=15, what=f"{name} moved to {new}")
    task = [t for t in tasks(fleet, name) if t["fromCluster"] == old]
    if task:  # it may be over already when the new copy turned healthy at once
        t = task[0]
        assert t["purgeMode"] == "Gracefully" and t["reason"] == "TaintUntolerated", t
        assert t["producer"] == "TaintManager" and t["clustersBeforeFailover"] == [old], t
        assert t["replicas"] == 1 and t["creationTimestamp"], t
    # the old copy goes only once the new one reports Healthy
    deadline = time.time() + 30
    while exists(fleet, name, old):
        assert time.time() < deadline, "the old copy never went"
        time.sleep(0.05)
    assert health(fleet, name, new) == "Healthy"
    assert exists(fleet, name, new)
    wait_for(lambda: not tasks(fleet, name), timeout=10, what="the task removed")
    assert events(fleet, f"{name}-deployment", "EvictWorkloadFromClusterSucceed")
    # no failback once the taint is gone
    untaint(fleet, old)
    time.sleep(3)
    assert placed(fleet, name) == new
    assert not exists(fleet, name, old)
    cleanup(fleet, name, old)


def test_gracefully_keeps_the_old_copy_while_the_new_one_is_unhealthy_until_the_grace_period(fleet):
    name = "fo-grace-period"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=3600)
    new = "member2" if old == "member1" else "member1"
    # the copy in the new cluster never becomes ready
    fleet.apply({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                 "metadata": {"name": name, "namespace": "default"},
                 "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                          "overrideRules": [{"targetCluster": {"clusterNames": [new]},
                                             "overriders": {"imageOverrider": [
                                                 {"component": "Registry", "operator": "replace",
                                                  "value": "fake.io"}]}}]}})
    fleet.patch("rb", f"{name}-deployment", patch={"spec": {"gracefulEvictionTasks": [
        {"fromCluster": old, "purgeMode": "Gracefully", "gracePeriodSeconds": 6, "reason": "Maintenance",
         "producer": "ops-team"}]}})
    wait_for(lambda: placed(fleet, name) == new and exists(fleet, name, new), timeout=15,
             what=f"{name} moved to {new}")
    created = wait_for(lambda: (tasks(fleet, name) or [{}])[0].get("creationTimestamp"), timeout=10,
                       what="the task's creationTimestamp")
    end = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) + 6
    while time.time() < end - 1.5:
        assert exists(fleet, name, old), "the old copy went before the new one was healthy"
        assert health(fleet, name, new) != "Healthy"
        time.sleep(0.2)
    wait_for(lambda: not exists(fleet, name, old), timeout=15, what="the old copy gone after the grace period")
    assert time.time() >= end - 1.5
    assert not tasks(fleet, name)
    fleet.delete("op", name)
    cleanup(fleet, name, old)


def test_directly_deletes_the_old_copy_before_the_new_one_exists(fleet):
    name = "fo-direct"
    old = start(fleet, name, ["member1", "member2"], purge_mode="Directly")
    new = "member2" if old == "member1" else "member1"
    taint(fleet, old)
    deadline = time.time() + 30
    while True:
        assert time.time() < deadline, "the new copy never came"
        new_there = exists(fleet, name, new)
        old_there = exists(fleet, name, old)  # read after: gone before the new one came
        if new_there:
            assert not old_there, "two copies at once"
            break
        time.sleep(0.02)
    assert placed(fleet, name) == new
    wait_for(lambda: not tasks(fleet, name), timeout=10, what="the Directly task removed")
    assert not exists(fleet, name, old)
    cleanup(fleet, name, old)


def test_never_keeps_the_old_copy_until_the_task_is_removed_by_hand(fleet):
    name = "fo-never"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=3600)
    new = "member2" if old == "member1" else "member1"
    # a person moves the workload and keeps the old copy
    fleet.patch("rb", f"{name}-deployment", patch={"spec": {"gracefulEvictionTasks": [
        {"fromCluster": old, "purgeMode": "Never", "reason": "Maintenance", "producer": "ops-team"}]}})
    wait_for(lambda: placed(fleet, name) == new, timeout=15, what=f"{name} moved to {new}")
    wait_for(lambda: exists(fleet, name, new) and health(fleet, name, new) == "Healthy", timeout=30,
             what="the new copy healthy")
    time.sleep(2)
    assert exists(fleet, name, old), "a Never task's old copy went"
    t = tasks(fleet, name)
    assert len(t) == 1 and t[0]["creationTimestamp"], t
    fleet.kubectl("patch", "rb", f"{name}-deployment", "--type=json", "-p",
                  json.dumps([{"op": "remove", "path": "/spec/gracefulEvictionTasks"}]))
    wait_for(lambda: not exists(fleet, name, old), timeout=30, what="the old copy gone")
    assert placed(fleet, name) == new
    cleanup(fleet, name, old)


def test_eviction_is_held_back_when_no_other_cluster_fits(fleet):
    name = "fo-only"
    old = start(fleet, name, ["member3"], toleration_seconds=1)
    taint(fleet, old)
    wait_for(lambda: events(fleet, f"{name}-deployment", "FailoverSuppressed"), timeout=15,
             what="a FailoverSuppressed event")
    rb = fleet.get("rb", f"{name}-deployment")
    cond = [c for c in rb["status"].get("conditions", []) if c["type"] == "FailoverSuppressed"]
    assert cond and cond[0]["status"] == "True" and cond[0]["reason"] == "NoClusterFits", rb["status"]
    assert placed(fleet, name) == old and not tasks(fleet, name)
    assert exists(fleet, name, old)
    untaint(fleet, old)  # nothing to hold back any more: the condition says so

    def released():
        conds = (fleet.get("rb", f"{name}-deployment") or {}).get("status", {}).get("conditions", [])
        return [c for c in conds if c["type"] == "FailoverSuppressed" and c["status"] == "False"]
    wait_for(released, timeout=15, what="FailoverSuppressed False")
    assert placed(fleet, name) == old and exists(fleet, name, old)
    cleanup(fleet, name, old)


def test_eviction_is_held_back_while_more_than_a_third_of_the_clusters_are_not_ready(fleet):
    name = "fo-outage"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=1)
    new = "member2" if old == "member1" else "member1"
    down = ["fo-down-1", "fo-down-2"]  # Pull clusters without an agent: never Ready; 2 of 5 down
    fleet.apply([{"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": c},
                  "spec": {"syncMode": "Pull"}} for c in down])
    try:
        taint(fleet, old)
        wait_for(lambda: events(fleet, f"{name}-deployment", "FailoverSuppressed"), timeout=15,
                 what="a FailoverSuppressed event")
        rb = fleet.get("rb", f"{name}-deployment")
        cond = [c for c in rb["status"].get("conditions", []) if c["type"] == "FailoverSuppressed"]
        assert cond and cond[0]["reason"] == "TooManyClustersNotReady", rb["status"]
        assert "2 of 5 clusters are not Ready" in cond[0]["message"], cond
        assert placed(fleet, name) == old and exists(fleet, name, old)
    finally:
        for c in down:
            fleet.delete("cluster", c)
    # the outage is over: the eviction goes ahead
    wait_for(lambda: placed(fleet, name) == new, timeout=20, what=f"{name} moved to {new}")
    cleanup(fleet, name, old)


def test_bad_eviction_tasks_are_refused_and_good_ones_kept(fleet):
    name = "fo-bad"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=3600)
    rb = f"{name}-deployment"
    r = fleet.kubectl("patch", "rb", rb, "--type=merge", "-p", json.dumps({"spec": {"gracefulEvictionTasks": [
        {"fromCluster": old, "purgeMode": "Sometimes", "reason": "Maintenance", "producer": "ops"}]}}), check=False)
    assert r.returncode != 0
    assert "spec.gracefulEvictionTasks[0].purgeMode: Unsupported value: \"Sometimes\"" in r.stderr, r.stderr
    assert not tasks(fleet, name)
    r = fleet.kubectl("patch", "rb", rb, "--type=merge", "-p", json.dumps({"spec": {"gracefulEvictionTasks": [
        {"fromCluster": old, "purgeMode": "Never", "reason": "Maintenance", "producer": "ops",
         "suppressDeletion": True, "clustersBeforeFailover": [old]}]}}), check=False)
    assert r.returncode == 0, r.stderr
    assert tasks(fleet, name)[0]["suppressDeletion"] is True
    fleet.kubectl("patch", "rb", rb, "--type=json", "-p",
                  json.dumps([{"op": "remove", "path": "/spec/gracefulEvictionTasks"}]))
    cleanup(fleet, name, old)


def test_cluster_resource_binding_is_evicted_too(fleet):
    name = "widgets.failover.example.io"
    crb = f"{name}-customresourcedefinition"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
           "spec": {"group": "failover.example.io", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    spec = policy("x", ["member1", "member2"])["spec"]
    spec["resourceSelectors"] = [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                  "name": name}]
    fleet.apply([crd, {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                       "metadata": {"name": "fo-widgets"}, "spec": spec}])

    def on():
        b = fleet.get("crb", crb) or {}
        cl = [c["name"] for c in b.get("spec", {}).get("clusters") or []]
        return cl[0] if len(cl) == 1 else None
    old = wait_for(on, timeout=30, what="the CRD scheduled")
    new = "member2" if old == "member1" else "member1"
    wait_for(lambda: fleet.get("crd", name, member=old), timeout=30, what="the CRD in its member")
    taint(fleet, old)
    wait_for(lambda: on() == new, timeout=15, what="the ClusterResourceBinding moved")
    wait_for(lambda: fleet.get("crd", name, member=new), timeout=30, what="the new copy")
    wait_for(lambda: fleet.get("crd", name, member=old) is None, timeout=30, what="the old copy gone")
    untaint(fleet, old)
    fleet.delete("crd", name)
    fleet.delete("cpp", "fo-widgets")
    wait_for(lambda: fleet.get("crb", crb) is None, timeout=30, what="the ClusterResourceBinding gone")


def test_evictions_are_paced_at_the_default_rate(fleet):
    """Three bindings leave one cluster at once: 0.5 evictions per second puts them ~2 s apart."""
    names = [f"fo-rate-{i}" for i in range(3)]
    for n in names:
        start(fleet, n, ["member3"], toleration_seconds=1)
    for n in names:  # a second cluster to go to; the scheduler keeps them where they are
        fleet.apply(policy(n, ["member3", "member1"], toleration_seconds=1))
    time.sleep(1)
    assert all(placed(fleet, n) == "member3" for n in names)
    taint(fleet, "member3")
    moved = {}
    deadline = time.time() + 30
    while len(moved) < len(names):
        assert time.time() < deadline, f"only {sorted(moved)} moved"
        items = fleet.get("rb")["items"]
        now = time.time()
        for rb in items:
            n = rb["metadata"]["name"][:-len("-deployment")]
            clusters = [c["name"] for c in rb["spec"].get("clusters") or []]
            if n in names and n not in moved and clusters == ["member1"]:
                moved[n] = now
        time.sleep(0.05)
    times = sorted(moved.values())
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(1.5 <= g <= 3.5 for g in gaps), gaps
    for n in names:
        fleet.delete("deploy", n)
        fleet.delete("pp", n)
    cleanup(fleet, names[0], "member3")


def test_server_takes_the_eviction_flags_and_refuses_bad_values(tmp_path):
    for flag, value, text in (("--eviction-rate", "fast", "expected a number of evictions per second"),
                              ("--graceful-eviction-timeout", "0", "expected a positive number of seconds")):
        r = subprocess.run([BIN, "server", "--data-dir", str(tmp_path), flag, value], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2 and f"{flag}: {text}, not \"{value}\"" in r.stderr, (r.returncode, r.stderr)
    r = subprocess.run([BIN, "server", "--data-dir", str(tmp_path), "--eviction-rate", "0",
                        "--graceful-eviction-timeout", "30", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "--eviction-rate R" in r.stdout, (r.returncode, r.stderr)


def server_pid(up_pid):
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(up_pid)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, args = line.strip().split(None, 1)
        if " server " in f" {args} ":
            return int(pid)
    raise AssertionError(f"no server child of {up_pid}: {out}")


def test_a_restart_mid_toleration_evicts_at_the_original_deadline():
    d = tempfile.mkdtemp(prefix="flotilla-fleet-")
    port = free_port()
    up = start_up(d, port, members=2)
    fleet = Fleet(d)
    name = "fo-restart"
    tol = 20
    try:
        old = start(fleet, name, ["member1", "member2"], toleration_seconds=tol)
        added = int(time.time())
        taint(fleet, old, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(added)))
        due = added + tol
        time.sleep(2)
        assert placed(fleet, name) == old
        os.kill(server_pid(up.pid), signal.SIGKILL)
        up.wait(timeout=60)
        up = start_up(d, port, members=2)
        assert time.time() < due - 3, "the restart took too long for this test to tell"
        assert placed(fleet, name) == old, "evicted before the deadline"
        moved = wait_for(lambda: placed(fleet, name) not in (None, old) and time.time(), timeout=tol + 10,
                         interval=0.05, what="the eviction")
        print(f"eviction at {moved - due:+.2f}s from the deadline")
        assert due - 1 <= moved <= due + 2, f"evicted at {moved - due:+.1f}s from the deadline"
        t = [t for t in tasks(fleet, name) if t["fromCluster"] == old]
        if t:
            created = calendar.timegm(time.strptime(t[0]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
            assert due - 1 <= created <= due + 1, t
    finally:
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)


def fault(fleet, cluster, setting):
    r = subprocess.run([BIN, "ctl", "fault", cluster, "--members-kubeconfig",
                        os.path.join(fleet.dir, "members", "admin.kubeconfig"), "--set", setting],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_a_cluster_that_comes_back_keeps_what_its_bindings_select_and_gets_no_failback(fleet):
    """A member goes down and is tainted: one workload (tolerating the taint for good) stays
    bound to it, another leaves. When it comes back and the taint goes, the staying one's copy
    is never deleted there, the one that left does not return, and its old copy goes."""
    name, pinned = "fo-back", "fo-back-pinned"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=0)
    new = "member2" if old == "member1" else "member1"
    p = policy(pinned, [old])
    del p["spec"]["placement"]["clusterTolerations"][0]["tolerationSeconds"]  # tolerates forever
    fleet.apply([deployment(pinned), p])
    wait_for(lambda: exists(fleet, pinned, old), timeout=30, what=f"{pinned} in {old}")
    fault(fleet, old, "down")
    try:
        taint(fleet, old)
        wait_for(lambda: placed(fleet, name) == new, timeout=15, what=f"{name} moved to {new}")
        wait_for(lambda: exists(fleet, name, new), timeout=30, what=f"{name} in {new}")
        time.sleep(2)
        assert placed(fleet, pinned) == old, "the binding that tolerates the taint left"
    finally:
        fault(fleet, old, "clear")
    untaint(fleet, old)
    # back: poll both for a while
    deadline, old_copy_gone = time.time() + 12, False
    while time.time() < deadline:
        assert exists(fleet, pinned, old), f"{pinned}'s copy was deleted from {old}, which its binding selects"
        assert placed(fleet, name) == new, f"{name} failed back to {old}"
        assert exists(fleet, name, new), f"{name}'s copy in {new} went"
        old_copy_gone = old_copy_gone or not exists(fleet, name, old)
        time.sleep(0.2)
    assert old_copy_gone, f"{name}'s old copy stayed in {old} after it came back"
    assert placed(fleet, pinned) == old
    fleet.delete("deploy", pinned)
    fleet.delete("pp", pinned)
    cleanup(fleet, name, old)
