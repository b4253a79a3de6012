"""Application failover's grace period when no cluster is healthy, on `flotilla up`: with every
copy broken the old copy is deleted no sooner than toleration + grace, and a kill -9 of the
server in the middle of the grace period does not move that deadline (docs/failover.md;
docs/internals/failover.md for why deadlines survive restarts).

StatefulSets get their health from the annotation-reading customization of
test_failover_application.py, so every copy can be made Unhealthy at once.
"""
import os
import signal
import tempfile
import time

import pytest

from conftest import Fleet, free_port, running_fleet, start_up, wait_for
from test_failover_application import (CUSTOMIZATION, cleanup, clock, health, history, member_obj, placed, policy,
                                       set_health, start, statefulset, tasks, ts)

KIND = "StatefulSet"
CLUSTERS = ["member1", "member2"]


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=2) as f:
        f.apply(CUSTOMIZATION)
        yield f


def broken_everywhere(fleet, name, tol, grace):
    """A StatefulSet on one of two clusters, then Unhealthy (on both, as the new copy gets
    the same annotation). Returns (old, new, the task once written)."""
    old = start(fleet, [statefulset(name), policy(name, KIND, CLUSTERS, toleration=tol, grace=grace)], name, KIND)
    new = CLUSTERS[1] if old == CLUSTERS[0] else CLUSTERS[0]
    wait_for(lambda: health(fleet, name, KIND, old) == "Healthy", timeout=30, what="healthy")
    set_health(fleet, name, "unhealthy")
    wait_for(lambda: placed(fleet, name, KIND) == new, timeout=tol + 20, what=f"{name} moved to {new}")
    task = wait_for(lambda: [t for t in tasks(fleet, name, KIND) if t["fromCluster"] == old], timeout=5,
                    what="the task")[0]
    assert task["purgeMode"] == "Gracefully" and task["gracePeriodSeconds"] == grace, task
    return old, new, task


def gone_at(fleet, name, member, timeout):
    """When the copy in member is gone (polling), or None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not member_obj(fleet, KIND, name, member):
            return time.time()
        time.sleep(0.05)
    return None


def test_gracefully_with_every_cluster_broken_keeps_the_old_copy_for_toleration_plus_grace(fleet):
    name = "gr-broken"
    tol, grace = 2, 8
    old, new, task = broken_everywhere(fleet, name, tol, grace)
    since = ts(wait_for(lambda: (history(fleet, name, KIND) or [None])[0], timeout=10, what="history")["startTime"])
    due = ts(task["creationTimestamp"]) + grace
    uid = member_obj(fleet, KIND, name, old)["metadata"]["uid"]
    # the new copy is Unhealthy too: nothing ends the task but the grace period
    wait_for(lambda: health(fleet, name, KIND, new) == "Unhealthy", timeout=20, what="the new copy unhealthy")
    gone = gone_at(fleet, name, old, due + 3 - time.time())
    assert gone is None or gone >= due - 0.05, f"the old copy went {due - gone:.1f}s before the grace period ended"
    assert since == ts(task["creationTimestamp"])
    assert member_obj(fleet, KIND, name, new), "the new copy went too"
    e = wait_for(lambda: [e for e in history(fleet, name, KIND) if e.get("outcome")], timeout=10,
                 what="the history entry completed")[0]
    assert e["outcome"] == "GracePeriodExpired", e
    ended = ts(e["completionTime"])
    assert due - 1 <= ended <= due + 3, f"the task ended {ended - due:+.1f}s from creationTimestamp + grace"
    if gone is None:
        # The task's end also ends the suppression of the new copy's own eviction (Unhealthy past
        # its toleration long since), which sends the workload back to the old cluster: when the
        # binding controller sees both in one look, the old cluster never stops being a target
        # and its copy stays, the same object, now the placement's copy.
        still = member_obj(fleet, KIND, name, old)
        assert still and still["metadata"]["uid"] == uid, "the old copy was replaced, not kept nor deleted"
        assert [t for t in tasks(fleet, name, KIND) if t["fromCluster"] == new], \
            f"the old copy outlived the grace period by 3 s without {name} moving back to {old}"
    print(f"old copy gone {gone - due:+.2f}s from creationTimestamp + grace" if gone else "old copy kept")
    # With the old cluster's task gone it fits the placement again, and the new copy has been
    # Unhealthy past its toleration: application failover moves the workload back to it (as it
    # would to any cluster that fits), under a task of its own.
    back = wait_for(lambda: [t for t in tasks(fleet, name, KIND) if t["fromCluster"] == new], timeout=tol + 10,
                    what="the new copy's own eviction task")[0]
    assert back["reason"] == "ApplicationFailure", back
    wait_for(lambda: placed(fleet, name, KIND) == old, timeout=10, what=f"{name} back on {old}")
    cleanup(fleet, name, KIND)


def test_a_restart_mid_grace_period_deletes_the_old_copy_at_the_original_deadline():
    d = tempfile.mkdtemp(prefix="flotilla-fleet-")
    port = free_port()
    up = start_up(d, port, members=2)
    fleet = Fleet(d)
    name = "gr-restart"
    tol, grace = 2, 20
    try:
        fleet.apply(CUSTOMIZATION)
        time.sleep(1)
        old, new, task = broken_everywhere(fleet, name, tol, grace)
        due = ts(task["creationTimestamp"]) + grace
        wait_for(lambda: health(fleet, name, KIND, new) == "Unhealthy", timeout=20, what="the new copy unhealthy")
        time.sleep(max(0.0, due - grace / 2 - time.time()))
        from test_failover_eviction import server_pid
        os.kill(server_pid(up.pid), signal.SIGKILL)
        up.wait(timeout=60)
        up = start_up(d, port, members=2)
        assert time.time() < due - 3, "the restart took too long for this test to tell"
        # the members' host may answer a moment after `up` says it is up: the copy is looked
        # for up to 2 s, still well before the deadline
        assert wait_for(lambda: member_obj(fleet, KIND, name, old), timeout=2, what="the old copy before the deadline")
        assert time.time() < due - 1
        gone = gone_at(fleet, name, old, grace + 10)
        assert gone is not None, (f"the old copy was never deleted; tasks {tasks(fleet, name, KIND)}, history "
                                  f"{history(fleet, name, KIND)}, log:\n{fleet.log_tail(30, grep=[name])}")
        print(f"old copy gone {gone - due:+.2f}s from the deadline")
        assert due - 0.05 <= gone <= due + 1.5, f"the old copy went {gone - due:+.1f}s from the deadline"
        e = wait_for(lambda: [e for e in history(fleet, name, KIND) if e.get("outcome")], timeout=10,
                     what="the history entry completed")[0]
        assert e["outcome"] == "GracePeriodExpired", e
    finally:
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
