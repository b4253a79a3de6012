"""Failover as /metrics and the members show it, on one `flotilla up` with three members:
the failover metrics move as a taint eviction predicts (and the exposition stays promtool-clean),
and a Directly eviction from a partitioned cluster never lets two clusters run the workload.
"""
import os
import subprocess
import time

from conftest import BIN, wait_for
from test_failover_eviction import cleanup, exists, placed, start, taint, tasks, untaint
from test_metrics import PROMTOOL, Scrape, samples, value


def pending(s):
    return value(s, "flotilla_eviction_pending")


def test_failover_metrics_move_after_a_taint_eviction(fleet):
    scrape = Scrape(fleet)
    before = samples(scrape.text())
    assert ("flotilla_eviction_pending", "") in before, "no flotilla_eviction_pending gauge"
    name = "fo-metrics"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=6)
    taint(fleet, old)
    # while the toleration runs, the evictor holds the deadline
    wait_for(lambda: pending(samples(scrape.text())) >= 1, timeout=5, what="a pending eviction on /metrics")
    wait_for(lambda: placed(fleet, name) not in (None, old), timeout=20, what=f"{name} moved off {old}")
    wait_for(lambda: not tasks(fleet, name), timeout=30, what="the task over")
    after = wait_for(lambda: (lambda s: s if value(s, "flotilla_failover_completed_total", outcome="NewCopyHealthy")
                              > value(before, "flotilla_failover_completed_total", outcome="NewCopyHealthy")
                              else None)(samples(scrape.text())), timeout=10, what="completed_total counted")
    started = value(after, "flotilla_failover_total", reason="ClusterFailover", purge_mode="Gracefully") - \
        value(before, "flotilla_failover_total", reason="ClusterFailover", purge_mode="Gracefully")
    assert started == 1, started
    assert value(after, "flotilla_failover_total", reason="ApplicationFailover", purge_mode="Gracefully") == \
        value(before, "flotilla_failover_total", reason="ApplicationFailover", purge_mode="Gracefully")
    assert value(after, "flotilla_failover_completed_total", outcome="NewCopyHealthy") - \
        value(before, "flotilla_failover_completed_total", outcome="NewCopyHealthy") == 1
    n0 = value(before, "flotilla_failover_duration_seconds_count")
    n1 = value(after, "flotilla_failover_duration_seconds_count")
    assert n1 - n0 == 1, (n0, n1)
    # the whole failover took seconds: the taint came 6 s before the task, so under 60 s
    took = value(after, "flotilla_failover_duration_seconds_sum") - value(before, "flotilla_failover_duration_seconds_sum")
    assert 0 <= took < 60, took
    assert value(after, "flotilla_failover_duration_seconds_bucket", le="60") - \
        value(before, "flotilla_failover_duration_seconds_bucket", le="60") == 1
    assert pending(after) == pending(before), "the deadline is still held after the eviction"
    cleanup(fleet, name, old)

    # the only allowed cluster tainted: held back, counted once as NoClusterFits
    name = "fo-metrics-one"
    only = start(fleet, name, ["member3"], toleration_seconds=0)
    s0 = value(samples(scrape.text()), "flotilla_failover_suppressed_total", reason="NoClusterFits")
    taint(fleet, only)
    wait_for(lambda: value(samples(scrape.text()), "flotilla_failover_suppressed_total", reason="NoClusterFits")
             == s0 + 1, timeout=15, what="suppressed_total{reason=NoClusterFits} counted")
    time.sleep(6)  # a retry (every 5 s) is not a new suppression
    last = samples(scrape.text())
    assert value(last, "flotilla_failover_suppressed_total", reason="NoClusterFits") == s0 + 1
    assert placed(fleet, name) == only
    cleanup(fleet, name, only)

    r = subprocess.run([PROMTOOL, "check", "metrics"], input=scrape.text(), capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, f"promtool check metrics:\n{r.stdout}{r.stderr}"


def fault(fleet, cluster, what):
    r = subprocess.run([BIN, "ctl", "fault", cluster, "--members-kubeconfig",
                        os.path.join(fleet.dir, "members", "admin.kubeconfig"), "--set", what],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_directly_under_a_partition_never_runs_two_copies(fleet):
    """The old cluster partitioned, then tainted: no copy may appear elsewhere while the old
    one may still run (it cannot be told to stop); once the partition heals, the old copy goes
    first. Both members are polled throughout (the partitioned one once it answers again)."""
    name = "fo-partition"
    old = start(fleet, name, ["member1", "member2"], toleration_seconds=0, purge_mode="Directly")
    new = "member2" if old == "member1" else "member1"
    fault(fleet, old, "partition")
    try:
        taint(fleet, old)
        wait_for(lambda: placed(fleet, name) == new, timeout=15, what=f"{name} moved to {new}")
        # the old copy is unreachable and may be running: nothing in the new cluster meanwhile
        deadline = time.time() + 8
        while time.time() < deadline:
            assert not exists(fleet, name, new), f"a copy in {new} while {old} (partitioned) may still run one"
            time.sleep(0.1)
    finally:
        fault(fleet, old, "clear")
    both, seen_new = 0, False
    deadline = time.time() + 40
    while time.time() < deadline and not seen_new:
        # the new cluster first: the old copy only ever goes away, so seen after a new copy was
        # seen, it was there at the same moment (old first, a move between the reads would look
        # like two copies at once)
        n = exists(fleet, name, new)
        o = exists(fleet, name, old)
        both += o and n
        seen_new = n and not o
        time.sleep(0.05)
    assert both == 0, f"both {old} and {new} ran {name} ({both} polls)"
    assert seen_new, f"{name} never ran in {new} alone after the partition healed"
    cleanup(fleet, name, old)
