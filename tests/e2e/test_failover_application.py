"""Application failover end to end on `flotilla up`: a copy whose health (the interpreter's,
in the binding's status.aggregatedStatus) stays Unhealthy for decisionConditions.
tolerationSeconds leaves its cluster by the policy's purge mode; the clock is kept in the
binding's status.failoverClocks, state preservation hands values to the new copy as labels,
and status.failoverHistory records each failover (docs/failover.md).

Deployments fail with the simulated members' `fake` image. StatefulSets get their health and
status from a ResourceInterpreterCustomization that reads annotations, so a test can make a
copy Healthy, Unhealthy or Unknown (a failing rule) at will, and give it a checkpoint.
"""
import calendar
import os
import signal
import tempfile
import time

import pytest

from conftest import Fleet, free_port, start_up, wait_for

HEALTH = "failover-test/health"
CHECKPOINT = "failover-test/checkpoint"

CUSTOMIZATION = {
    "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
    "metadata": {"name": "statefulset-health-by-annotation"},
    "spec": {"target": {"apiVersion": "apps/v1", "kind": "StatefulSet"}, "customizations": {
        "healthInterpretation": {"luaScript": f"""
function InterpretHealth(observedObj)
  local a = observedObj.metadata.annotations or {{}}
  if a["{HEALTH}"] == "unknown" then
    error("health unknown on purpose")
  end
  return a["{HEALTH}"] ~= "unhealthy"
end
"""},
        "statusReflection": {"luaScript": f"""
function ReflectStatus(observedObj)
  local a = observedObj.metadata.annotations or {{}}
  return {{checkpoint = a["{CHECKPOINT}"], replicas = 1}}
end
"""}}}}


@pytest.fixture(scope="module")
def fleet():
    from conftest import running_fleet
    with running_fleet() as f:
        f.apply(CUSTOMIZATION)
        yield f


def pod(image="nginx:1.25", labels=None):
    return {"metadata": {"labels": labels or {}},
            "spec": {"containers": [{"name": "app", "image": image,
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def deployment(name, configmap=None):
    d = {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": pod(labels={"app": name})}}
    if configmap:
        d["spec"]["template"]["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": configmap}}]
    return d


def statefulset(name, health="healthy", checkpoint=None):
    anns = {HEALTH: health}
    if checkpoint:
        anns[CHECKPOINT] = checkpoint
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": "default", "annotations": anns},
            "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                     "template": pod(labels={"app": name})}}


def policy(name, kind, clusters, toleration=2, purge="Gracefully", grace=None, rules=None, api="apps/v1"):
    app = {"decisionConditions": {"tolerationSeconds": toleration}, "purgeMode": purge}
    if grace is not None:
        app["gracePeriodSeconds"] = grace
    if rules:
        app["statePreservation"] = {"rules": rules}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": api, "kind": kind, "name": name}],
                     "propagateDeps": True,
                     "placement": {"clusterAffinity": {"clusterNames": clusters},
                                   "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1,
                                                          "minGroups": 1}],
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
                     "failover": {"application": app}}}


def fake_image_on(name, kind, cluster):
    """An OverridePolicy giving the copy in cluster an image that never pulls."""
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
            "metadata": {"name": f"{name}-fake", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": kind, "name": name}],
                     "overrideRules": [{"targetCluster": {"clusterNames": [cluster]},
                                        "overriders": {"imageOverrider": [
                                            {"component": "Registry", "operator": "replace",
                                             "value": "fake.io"}]}}]}}


def rb(fleet, name, kind):
    return fleet.get("rb", f"{name}-{kind.lower()}") or {}


def placed(fleet, name, kind):
    clusters = [c["name"] for c in (rb(fleet, name, kind).get("spec", {}).get("clusters") or [])]
    return clusters[0] if len(clusters) == 1 else None


def tasks(fleet, name, kind):
    return rb(fleet, name, kind).get("spec", {}).get("gracefulEvictionTasks") or []


def history(fleet, name, kind):
    return rb(fleet, name, kind).get("status", {}).get("failoverHistory") or []


def clock(fleet, name, kind, cluster):
    for c in rb(fleet, name, kind).get("status", {}).get("failoverClocks") or []:
        if c["clusterName"] == cluster:
            return c
    return None


def health(fleet, name, kind, cluster):
    for a in rb(fleet, name, kind).get("status", {}).get("aggregatedStatus") or []:
        if a.get("clusterName") == cluster:
            return a.get("health")
    return None


def member_obj(fleet, kind, name, member):
    return fleet.get(kind.lower(), name, member=member)


def events(fleet, obj_name, reason):
    return [e for e in fleet.get("events")["items"]
            if e["involvedObject"]["name"] == obj_name and e["reason"] == reason]


def start(fleet, objs, name, kind):
    fleet.apply(objs)
    old = wait_for(lambda: placed(fleet, name, kind), timeout=30, what=f"{name} scheduled")
    wait_for(lambda: member_obj(fleet, kind, name, old), timeout=30, what=f"{name} in {old}")
    return old


def cleanup(fleet, name, kind, *extra):
    fleet.delete(kind.lower(), name)
    fleet.delete("pp", name)
    for e in extra:
        fleet.delete(*e)
    wait_for(lambda: not rb(fleet, name, kind), timeout=30, what=f"{name}'s binding gone")


def set_health(fleet, name, value):
    fleet.kubectl("annotate", "statefulset", name, f"{HEALTH}={value}", "--overwrite")


def ts(s):
    return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) + (float("0" + s[19:-1]) if "." in s else 0)


def test_gracefully_moves_off_the_cluster_where_the_image_fails_and_the_dependencies_follow(fleet):
    name = "af-grace"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-cfg", "namespace": "default"},
          "data": {"k": "v"}}
    old = start(fleet, [cm, deployment(name, configmap=f"{name}-cfg"),
                        policy(name, "Deployment", ["member1", "member2"], toleration=3, grace=60)],
                name, "Deployment")
    new = "member2" if old == "member1" else "member1"
    wait_for(lambda: fleet.get("cm", f"{name}-cfg", member=old), timeout=30, what="the ConfigMap beside it")
    fleet.apply(fake_image_on(name, "Deployment", old))
    wait_for(lambda: health(fleet, name, "Deployment", old) == "Unhealthy", timeout=30, what="the copy unhealthy")
    wait_for(lambda: placed(fleet, name, "Deployment") == new, timeout=20, what=f"{name} moved to {new}")
    t = [t for t in tasks(fleet, name, "Deployment") if t["fromCluster"] == old]
    if t:  # over already if the new copy was healthy at once
        assert t[0]["reason"] == "ApplicationFailure" and t[0]["producer"] == "ApplicationFailover", t
        assert t[0]["purgeMode"] == "Gracefully" and t[0]["gracePeriodSeconds"] == 60, t
    # the dependency follows the workload
    wait_for(lambda: fleet.get("cm", f"{name}-cfg", member=new), timeout=30, what="the ConfigMap in the new cluster")
    wait_for(lambda: not member_obj(fleet, "Deployment", name, old), timeout=30, what="the old copy gone")
    assert health(fleet, name, "Deployment", new) == "Healthy"
    h = wait_for(lambda: [e for e in history(fleet, name, "Deployment") if e.get("outcome")], timeout=15,
                 what="the history entry completed")
    assert len(h) == 1, h
    e = h[0]
    assert e["reason"] == "ApplicationFailover" and e["fromCluster"] == old, e
    assert e["clustersBeforeFailover"] == [old] and e["clustersAfterFailover"] == [new], e
    assert e["outcome"] == "NewCopyHealthy" and e["startTime"] and e["completionTime"], e
    assert events(fleet, f"{name}-deployment", "FailoverStarted")
    cleanup(fleet, name, "Deployment", ("op", f"{name}-fake"), ("cm", f"{name}-cfg"))


def test_never_moves_the_binding_and_keeps_the_old_copy(fleet):
    name = "af-never"
    old = start(fleet, [deployment(name), policy(name, "Deployment", ["member1", "member2"], purge="Never")],
                name, "Deployment")
    new = "member2" if old == "member1" else "member1"
    fleet.apply(fake_image_on(name, "Deployment", old))
    wait_for(lambda: placed(fleet, name, "Deployment") == new, timeout=40, what=f"{name} moved to {new}")
    wait_for(lambda: health(fleet, name, "Deployment", new) == "Healthy", timeout=30, what="the new copy healthy")
    time.sleep(2)
    assert member_obj(fleet, "Deployment", name, old), "a Never eviction's old copy went"
    t = tasks(fleet, name, "Deployment")
    assert len(t) == 1 and t[0]["purgeMode"] == "Never" and t[0]["suppressDeletion"] is True, t
    # a person removes it: the history says so
    fleet.kubectl("patch", "rb", f"{name}-deployment", "--type=json", "-p",
                  '[{"op": "remove", "path": "/spec/gracefulEvictionTasks"}]')
    wait_for(lambda: not member_obj(fleet, "Deployment", name, old), timeout=30, what="the old copy gone")
    h = wait_for(lambda: [e for e in history(fleet, name, "Deployment") if e.get("outcome")], timeout=15,
                 what="the history entry completed")
    assert h[0]["outcome"] == "RemovedByHand", h
    cleanup(fleet, name, "Deployment", ("op", f"{name}-fake"))


def test_directly_with_a_state_rule_labels_the_new_copy_and_deletes_the_old(fleet):
    name = "af-direct"
    rules = [{"aliasLabelName": "failover.example.io/replicas", "jsonPath": "{.replicas}"}]
    old = start(fleet, [deployment(name), policy(name, "Deployment", ["member1", "member2"], purge="Directly",
                                                 rules=rules)], name, "Deployment")
    new = "member2" if old == "member1" else "member1"
    wait_for(lambda: health(fleet, name, "Deployment", old) == "Healthy", timeout=30, what="the first copy healthy")
    # every copy fails from now on, so the new one stays unhealthy and the label stays
    for c in ("member1", "member2"):
        fleet.apply(dict(fake_image_on(name, "Deployment", c), metadata={"name": f"{name}-fake-{c}",
                                                                          "namespace": "default"}))
    wait_for(lambda: placed(fleet, name, "Deployment") == new, timeout=40, what=f"{name} moved to {new}")
    t = tasks(fleet, name, "Deployment")
    assert t and t[0]["preservedLabelState"] == {"failover.example.io/replicas": "1"}, t
    d = wait_for(lambda: member_obj(fleet, "Deployment", name, new), timeout=30, what="the new copy")
    assert d["metadata"]["labels"].get("failover.example.io/replicas") == "1", d["metadata"]
    assert d["spec"]["template"]["metadata"]["labels"].get("failover.example.io/replicas") == "1"
    assert member_obj(fleet, "Deployment", name, old) is None
    h = history(fleet, name, "Deployment")
    assert h and h[0]["preservedLabelState"] == {"failover.example.io/replicas": "1"}, h
    cleanup(fleet, name, "Deployment", ("op", f"{name}-fake-member1"), ("op", f"{name}-fake-member2"))


def test_unknown_pauses_the_clock_and_only_healthy_resets_it(fleet):
    name = "af-flap"
    tol = 8
    old = start(fleet, [statefulset(name), policy(name, "StatefulSet", ["member1", "member2"], toleration=tol)],
                name, "StatefulSet")
    wait_for(lambda: health(fleet, name, "StatefulSet", old) == "Healthy", timeout=30, what="healthy")
    set_health(fleet, name, "unhealthy")
    first = wait_for(lambda: clock(fleet, name, "StatefulSet", old), timeout=20, what="the clock started")
    time.sleep(1)
    set_health(fleet, name, "healthy")  # resets
    wait_for(lambda: clock(fleet, name, "StatefulSet", old) is None, timeout=20, what="the clock reset")
    set_health(fleet, name, "unhealthy")
    c = wait_for(lambda: clock(fleet, name, "StatefulSet", old), timeout=20, what="the clock started again")
    assert ts(c["unhealthySince"]) > ts(first["unhealthySince"]), (first, c)
    since = ts(c["unhealthySince"])
    time.sleep(2)
    set_health(fleet, name, "unknown")
    wait_for(lambda: (clock(fleet, name, "StatefulSet", old) or {}).get("pausedSince"), timeout=20,
             what="the clock paused")
    time.sleep(4)
    set_health(fleet, name, "unhealthy")
    resumed = wait_for(lambda: "pausedMilliseconds" in (clock(fleet, name, "StatefulSet", old) or {})
                       and clock(fleet, name, "StatefulSet", old), timeout=20, what="the clock running again")
    assert resumed["unhealthySince"] == c["unhealthySince"], (c, resumed)
    paused = resumed["pausedMilliseconds"] / 1000
    assert 3 <= paused <= 7, resumed
    due = since + tol + paused
    moved = wait_for(lambda: placed(fleet, name, "StatefulSet") not in (None, old) and time.time(), timeout=30,
                     interval=0.05, what="the eviction")
    print(f"eviction at {moved - due:+.2f}s from the paused deadline")
    assert due - 1 <= moved <= due + 2, f"evicted at {moved - due:+.1f}s from the deadline"
    cleanup(fleet, name, "StatefulSet")


def test_a_job_whose_image_never_runs_fails_over(fleet):
    name = "af-job"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
           "spec": {"activeDeadlineSeconds": 3, "backoffLimit": 0,
                    "template": {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [
                        {"name": "app", "image": "fake/never", "resources": {"requests": {"cpu": "10m"}}}]}}}}
    old = start(fleet, [job, policy(name, "Job", ["member1", "member2"], api="batch/v1")], name, "Job")
    wait_for(lambda: health(fleet, name, "Job", old) == "Unhealthy", timeout=30, what="the Job failed")
    wait_for(lambda: placed(fleet, name, "Job") not in (None, old), timeout=20, what="the Job moved")
    # the new Job counts as healthy while it runs, so the task may be over already: the history says
    h = wait_for(lambda: history(fleet, name, "Job"), timeout=10, what="the history entry")
    assert h[0]["reason"] == "ApplicationFailover" and h[0]["fromCluster"] == old, h
    cleanup(fleet, name, "Job")


def test_a_kind_without_a_health_rule_is_said_so(fleet):
    name = "af-nohealth"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
          "data": {"k": "v"}}
    start(fleet, [cm, policy(name, "ConfigMap", ["member1", "member2"], api="v1")], name, "ConfigMap")

    def cond():
        for c in rb(fleet, name, "ConfigMap").get("status", {}).get("conditions") or []:
            if c["type"] == "ApplicationFailover":
                return c
        return None
    c = wait_for(cond, timeout=20, what="the ApplicationFailover condition")
    assert c["status"] == "False" and c["reason"] == "NoHealthRule", c
    ev = wait_for(lambda: events(fleet, f"{name}-configmap", "ApplicationFailoverInactive"), timeout=10,
                  what="the Warning")
    assert ev[0]["type"] == "Warning" and "health rule" in ev[0]["message"], ev
    cleanup(fleet, name, "ConfigMap")


def test_a_second_failover_before_a_copy_was_healthy_carries_the_preserved_state(fleet):
    name = "af-twice"
    rules = [{"aliasLabelName": "checkpoint", "jsonPath": "{.checkpoint}"}]
    clusters = ["member1", "member2", "member3"]
    old = start(fleet, [statefulset(name), policy(name, "StatefulSet", clusters, toleration=2, grace=300,
                                                  rules=rules)], name, "StatefulSet")
    # only the first copy has a checkpoint; every copy is unhealthy
    fleet.apply({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                 "metadata": {"name": f"{name}-ckpt", "namespace": "default"},
                 "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name}],
                          "overrideRules": [{"targetCluster": {"clusterNames": [old]}, "overriders": {
                              "annotationsOverrider": [{"operator": "add",
                                                        "value": {CHECKPOINT: "ckpt-42"}}]}}]}})
    wait_for(lambda: (next((a for a in rb(fleet, name, "StatefulSet").get("status", {}).get("aggregatedStatus") or []
                            if a["clusterName"] == old), {}).get("status") or {}).get("checkpoint") == "ckpt-42",
             timeout=30, what="the checkpoint reported")
    set_health(fleet, name, "unhealthy")
    second = wait_for(lambda: placed(fleet, name, "StatefulSet") not in (None, old) and placed(fleet, name,
                                                                                              "StatefulSet"),
                      timeout=30, what="the first failover")
    third = wait_for(lambda: placed(fleet, name, "StatefulSet") not in (None, old, second) and placed(
        fleet, name, "StatefulSet"), timeout=30, what="the second failover")
    t = tasks(fleet, name, "StatefulSet")
    assert [x["fromCluster"] for x in t] == [old, second], t
    assert t[1]["preservedLabelState"] == {"checkpoint": "ckpt-42"}, t
    assert t[1]["clustersBeforeFailover"] == [old, second], t
    s = wait_for(lambda: member_obj(fleet, "StatefulSet", name, third), timeout=30, what="the third copy")
    assert s["metadata"]["labels"].get("checkpoint") == "ckpt-42", s["metadata"]
    assert s["spec"]["template"]["metadata"]["labels"].get("checkpoint") == "ckpt-42"
    # the copy turns healthy: both failovers are over, the label goes
    set_health(fleet, name, "healthy")
    h = wait_for(lambda: [e for e in history(fleet, name, "StatefulSet") if e.get("outcome")] if len(
        [e for e in history(fleet, name, "StatefulSet") if e.get("outcome")]) == 2 else None, timeout=30,
        what="both history entries completed")
    assert [e["fromCluster"] for e in h] == [old, second], h
    assert [e["outcome"] for e in h] == ["NewCopyHealthy", "NewCopyHealthy"], h
    assert h[0]["preservedLabelState"] == h[1]["preservedLabelState"] == {"checkpoint": "ckpt-42"}, h
    assert all(e["clustersAfterFailover"] == [third] for e in h), h
    wait_for(lambda: "checkpoint" not in (member_obj(fleet, "StatefulSet", name, third)["metadata"].get("labels")
                                          or {}), timeout=30, what="the preserved label gone once healthy")
    cleanup(fleet, name, "StatefulSet", ("op", f"{name}-ckpt"))


def test_a_value_that_is_not_a_label_value_is_warned_and_the_eviction_goes_ahead(fleet):
    name = "af-badvalue"
    rules = [{"aliasLabelName": "checkpoint", "jsonPath": "{.checkpoint}"}]
    old = start(fleet, [statefulset(name, checkpoint="not a label value!"),
                        policy(name, "StatefulSet", ["member1", "member2"], toleration=2, grace=300, rules=rules)],
                name, "StatefulSet")
    wait_for(lambda: health(fleet, name, "StatefulSet", old) == "Healthy", timeout=30, what="healthy")
    set_health(fleet, name, "unhealthy")
    wait_for(lambda: placed(fleet, name, "StatefulSet") not in (None, old), timeout=30, what="the failover")
    t = tasks(fleet, name, "StatefulSet")
    assert t and "preservedLabelState" not in t[0], t
    ev = wait_for(lambda: events(fleet, f"{name}-statefulset", "StatePreservationFailed"), timeout=10,
                  what="the Warning")
    assert ev[0]["type"] == "Warning", ev
    assert "checkpoint" in ev[0]["message"] and "not a label value!" in ev[0]["message"], ev
    cleanup(fleet, name, "StatefulSet")


def test_bad_state_rules_are_refused_naming_the_field(fleet):
    for rule, field in [({"aliasLabelName": "ok", "jsonPath": "{.replicas"}, "jsonPath"),
                        ({"aliasLabelName": "not a key!", "jsonPath": "{.replicas}"}, "aliasLabelName")]:
        p = policy("af-bad", "Deployment", ["member1"], rules=[rule])
        r = fleet.kubectl("apply", "-f", "-", input=__import__("json").dumps(p), check=False)
        assert r.returncode != 0, r.stdout
        assert f"spec.failover.application.statePreservation.rules[0].{field}" in r.stderr, r.stderr
    assert fleet.get("pp", "af-bad") is None


def test_a_restart_mid_toleration_fails_over_at_the_original_deadline():
    d = tempfile.mkdtemp(prefix="flotilla-fleet-")
    port = free_port()
    up = start_up(d, port, members=2)
    fleet = Fleet(d)
    name = "af-restart"
    tol = 20
    try:
        fleet.apply(CUSTOMIZATION)
        time.sleep(1)
        old = start(fleet, [statefulset(name), policy(name, "StatefulSet", ["member1", "member2"], toleration=tol)],
                    name, "StatefulSet")
        wait_for(lambda: health(fleet, name, "StatefulSet", old) == "Healthy", timeout=30, what="healthy")
        set_health(fleet, name, "unhealthy")
        c = wait_for(lambda: clock(fleet, name, "StatefulSet", old), timeout=20, what="the clock started")
        due = ts(c["unhealthySince"]) + tol
        time.sleep(2)
        from test_failover_eviction import server_pid
        os.kill(server_pid(up.pid), signal.SIGKILL)
        up.wait(timeout=60)
        up = start_up(d, port, members=2)
        assert time.time() < due - 3, "the restart took too long for this test to tell"
        assert placed(fleet, name, "StatefulSet") == old, "evicted before the deadline"
        moved = wait_for(lambda: placed(fleet, name, "StatefulSet") not in (None, old) and time.time(),
                         timeout=tol + 10, interval=0.05, what="the eviction")
        print(f"eviction at {moved - due:+.2f}s from the deadline")
        # what a poll sees includes the rescheduling and kubectl's own time; the task's stamp
        # (whole seconds) is the eviction's
        assert due - 0.2 <= moved <= due + 1.5, f"evicted at {moved - due:+.1f}s from the deadline"
        h = wait_for(lambda: history(fleet, name, "StatefulSet"), timeout=10, what="the history entry")
        assert int(due) <= ts(h[0]["startTime"]) <= due + 1, (due, h)
    finally:
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
