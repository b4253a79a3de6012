"""Live status end to end (issue 45, part 1), with kubectl only: each Work's manifestStatuses
entry carries `liveStatus` {state, reason, message} in kstatus's vocabulary, and the binding's
aggregatedStatus items carry the state, for a Push member (member1) and a Pull member whose
agent computes it (member2).

- a Deployment that rolls out is Current in both members, and a quiet fleet writes nothing more;
- an image that never pulls (the simulated members' `fake` registry) with a short
  progressDeadlineSeconds turns Failed with reason ProgressDeadlineExceeded; fixing the image
  turns it Current;
- a Pod no node can take is InProgress (PodNotScheduled) at first and Failed (PodUnschedulable)
  15 s after its creation, with nothing else changing;
- an object deleted in a member is re-created by the controller (Current again, a new uid);
  while delivery to that member is suspended it stays gone and the Work says NotFound.
"""
import time

import pytest

from conftest import running_fleet, wait_for

MEMBERS = ["member1", "member2"]


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=2, pull=1) as f:
        yield f


def deployment(name, image="nginx:1.25", replicas=2, deadline=None):
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": image}]}}}
    if deadline:
        spec["progressDeadlineSeconds"] = deadline
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}}, "spec": spec}


def policy(name, clusters):
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": {"clusterAffinity": {"clusterNames": clusters},
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}


def binding(fleet, name):
    return fleet.get("rb", f"{name}-deployment") or {}


def work_of(fleet, name, member):
    pid = (binding(fleet, name).get("metadata", {}).get("labels") or {}).get("resourcebinding.karmada.io/permanent-id")
    if not pid:
        return None
    items = (fleet.get("work", "-n", f"karmada-es-{member}", "-l",
                       f"resourcebinding.karmada.io/permanent-id={pid}") or {}).get("items") or []
    return items[0] if items else None


def live(fleet, name, member):
    """The liveStatus of the Work's only manifest in member, or None."""
    w = work_of(fleet, name, member)
    entries = ((w or {}).get("status") or {}).get("manifestStatuses") or []
    return entries[0].get("liveStatus") if entries else None


def state(fleet, name, member):
    return (live(fleet, name, member) or {}).get("state")


def aggregated(fleet, name):
    """clusterName -> the item's liveStatus on the binding."""
    items = (binding(fleet, name).get("status") or {}).get("aggregatedStatus") or []
    return {i["clusterName"]: i.get("liveStatus") for i in items}


def start(fleet, name, clusters, **kw):
    fleet.apply([deployment(name, **kw), policy(name, clusters)])


def cleanup(fleet, name):
    fleet.ctl("resume", "policy", name)
    fleet.delete("deploy", name)
    fleet.delete("pp", name)


def test_rolled_out_deployment_is_current_in_push_and_pull_members(fleet):
    start(fleet, "live-ok", MEMBERS)
    wait_for(lambda: all(state(fleet, "live-ok", m) == "Current" for m in MEMBERS), timeout=60,
             what="live-ok Current in both Works")
    for m in MEMBERS:
        # Current says nothing more; the Karmada fields are still there beside it
        assert live(fleet, "live-ok", m) == {"state": "Current"}, m
        entry = work_of(fleet, "live-ok", m)["status"]["manifestStatuses"][0]
        assert entry["health"] == "Healthy" and entry["status"]["readyReplicas"] == 2, entry
    wait_for(lambda: aggregated(fleet, "live-ok") == {"member1": "Current", "member2": "Current"}, timeout=20,
             what="the binding's items Current")

    # a quiet fleet: the judged state does not move, so nothing is written again
    before = {m: work_of(fleet, "live-ok", m)["metadata"]["resourceVersion"] for m in MEMBERS}
    rb_before = binding(fleet, "live-ok")["metadata"]["resourceVersion"]
    time.sleep(2.5)
    assert {m: work_of(fleet, "live-ok", m)["metadata"]["resourceVersion"] for m in MEMBERS} == before
    assert binding(fleet, "live-ok")["metadata"]["resourceVersion"] == rb_before
    cleanup(fleet, "live-ok")


def test_image_that_never_pulls_fails_at_the_deadline_and_recovers(fleet):
    start(fleet, "live-stuck", MEMBERS, image="fake.io/nginx:1.25", deadline=3)
    wait_for(lambda: all(state(fleet, "live-stuck", m) == "Failed" for m in MEMBERS), timeout=60,
             what="live-stuck Failed in both Works")
    for m in MEMBERS:
        ls = live(fleet, "live-stuck", m)
        assert ls["reason"] == "ProgressDeadlineExceeded", ls
        assert "timed out" in ls["message"] and "\n" not in ls["message"], ls
        # health says only Unhealthy; the live state says it is stuck for good
        assert work_of(fleet, "live-stuck", m)["status"]["manifestStatuses"][0]["health"] == "Unhealthy"
    wait_for(lambda: aggregated(fleet, "live-stuck") == {"member1": "Failed", "member2": "Failed"}, timeout=20,
             what="the binding's items Failed")

    fleet.kubectl("set", "image", "deploy/live-stuck", "app=nginx:1.25")
    wait_for(lambda: all(state(fleet, "live-stuck", m) == "Current" for m in MEMBERS), timeout=60,
             what="live-stuck Current after the image fix")
    wait_for(lambda: aggregated(fleet, "live-stuck") == {"member1": "Current", "member2": "Current"}, timeout=20,
             what="the binding's items Current again")
    cleanup(fleet, "live-stuck")


def test_rollout_in_progress_is_reported_with_counts(fleet):
    """Between the create and Current the state is InProgress with a reason and counts, never Failed."""
    start(fleet, "live-slow", ["member1"], image="fake.io/nginx:1.25", replicas=3, deadline=600)
    wait_for(lambda: state(fleet, "live-slow", "member1") == "InProgress", timeout=30,
             what="live-slow InProgress")
    ls = live(fleet, "live-slow", "member1")
    assert ls["reason"] == "LessAvailable" and ls["message"] == "0 of 3 replicas available", ls
    cleanup(fleet, "live-slow")


def test_deleted_in_member_is_recreated_or_not_found_while_suspended(fleet):
    start(fleet, "live-del", ["member1"])
    wait_for(lambda: state(fleet, "live-del", "member1") == "Current", timeout=60, what="live-del Current")

    # delivery running: the controller puts the object back, and it is Current again
    uid = fleet.get("deploy", "live-del", member="member1")["metadata"]["uid"]
    fleet.kubectl("delete", "deploy", "live-del", member="member1")
    wait_for(lambda: (fleet.get("deploy", "live-del", member="member1") or {}).get("metadata", {}).get("uid")
             not in (None, uid), timeout=30, what="live-del re-created in member1")
    wait_for(lambda: state(fleet, "live-del", "member1") == "Current", timeout=30, what="re-created, Current")

    # delivery suspended: nothing puts it back, and the Work says so
    r = fleet.ctl("suspend", "policy", "live-del", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    fleet.kubectl("delete", "deploy", "live-del", member="member1")
    wait_for(lambda: state(fleet, "live-del", "member1") == "NotFound", timeout=30, what="live-del NotFound")
    assert fleet.get("deploy", "live-del", member="member1") is None
    entry = work_of(fleet, "live-del", "member1")["status"]["manifestStatuses"][0]
    assert "status" not in entry and entry["health"] == "Unknown", entry
    wait_for(lambda: aggregated(fleet, "live-del") == {"member1": "NotFound"}, timeout=20,
             what="the binding's item NotFound")

    r = fleet.ctl("resume", "policy", "live-del", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: state(fleet, "live-del", "member1") == "Current", timeout=60, what="Current after the resume")
    cleanup(fleet, "live-del")


def test_pod_unschedulable_for_long_turns_failed_with_time_alone(fleet):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "live-nowhere", "namespace": "default"},
           "spec": {"nodeSelector": {"example.io/no-such-node": "x"},
                    "containers": [{"name": "app", "image": "nginx:1.25"}]}}
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "live-nowhere", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Pod", "name": "live-nowhere"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}}
    fleet.apply([pod, pp])

    def pod_live():
        b = fleet.get("rb", "live-nowhere-pod") or {}
        pid = (b.get("metadata", {}).get("labels") or {}).get("resourcebinding.karmada.io/permanent-id")
        items = (fleet.get("work", "-n", "karmada-es-member1", "-l",
                           f"resourcebinding.karmada.io/permanent-id={pid}") or {}).get("items") or [] if pid else []
        entries = (items[0].get("status") or {}).get("manifestStatuses") or [] if items else []
        return entries[0].get("liveStatus") if entries else None

    wait_for(lambda: (pod_live() or {}).get("state") in ("InProgress", "Failed"), timeout=30,
             what="the Pod's live state")
    first = pod_live()
    created = fleet.get("pod", "live-nowhere", member="member1")
    assert created["status"]["phase"] == "Pending", created["status"]
    if first["state"] == "InProgress":  # judged within its first 15 s, as it should be on a quiet host
        assert first["reason"] == "PodNotScheduled", first
    status_before = created["status"]
    wait_for(lambda: (pod_live() or {}).get("state") == "Failed", timeout=40, what="the Pod Failed")
    assert pod_live()["reason"] == "PodUnschedulable", pod_live()
    assert "didn't match" in pod_live()["message"], pod_live()
    # nothing changed in the member: time alone turned it
    assert fleet.get("pod", "live-nowhere", member="member1")["status"] == status_before
    fleet.delete("pod", "live-nowhere")
    fleet.delete("pp", "live-nowhere")
