"""A binding's live state across its clusters, bounded (issue 45, part 2), with kubectl only:
status.summary counts the clusters per kstatus state and names the worst ones; Karmada's
aggregatedStatus keeps its shape but holds at most 100 items.

- a Deployment on three members: Current 3/3, nothing named, and a quiet fleet writes nothing;
- one member's copy given an image that never pulls: Failed there (ProgressDeadlineExceeded),
  named in the summary, the binding's state Failed; the override removed: Current again;
- a member whose API goes down turns Unknown at its second failing probe (ClusterNotReporting),
  while its Cluster is still Ready, and stays Unknown (ClusterNotReady) once it is not; its
  flips make the binding status controller look again at the bindings placed there only;
- 105 members: aggregatedStatus holds the 100 worst (the Failed copies first), the summary
  counts all 105, and the stored binding stays small.
"""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import deployment_manifest, fake_image_override, policy_manifest, running_fleet, wait_for

WAIT = 60


def summary(fleet, name):
    return ((fleet.get("rb", f"{name}-deployment") or {}).get("status") or {}).get("summary") or {}


def member_fault(fleet, cluster, down=None, partition=None):
    """On the member host: take cluster's API down (503 to everything) or bring it back, or
    partition it (its requests hang) or heal it."""
    fault = {k: v for k, v in (("down", down), ("partition", partition)) if v is not None}
    endpoint = fleet.get("cluster", cluster)["spec"]["apiEndpoint"]
    host = endpoint[:endpoint.index("/clusters/")]
    pki = os.path.join(fleet.dir, "members", "pki")
    token = open(os.path.join(pki, "admin.token")).read().strip()
    r = subprocess.run(["curl", "-sS", "--fail", "--cacert", os.path.join(pki, "ca.crt"), "-X", "PUT",
                        "-H", f"Authorization: Bearer {token}", f"{host}/admin/clusters/{cluster}/fault",
                        "-d", json.dumps(fault)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=3) as f:
        yield f


def test_current_everywhere_failed_on_one_then_current_again(fleet):
    fleet.apply([policy_manifest("sum-web", ["member1", "member2", "member3"]), deployment_manifest("sum-web")])
    s = wait_for(lambda: (x := summary(fleet, "sum-web")).get("current") == 3 and x, timeout=WAIT,
                 what="Current on the three members")
    assert s["state"] == "Current" and s["desired"] == 3 and s["applied"] == 3
    assert s["notCurrent"] == [] and s["truncated"] is False
    assert all(s[k] == 0 for k in ("inProgress", "failed", "terminating", "unknown", "notFound"))
    # a quiet fleet: nothing is written again
    rv = fleet.get("rb", "sum-web-deployment")["metadata"]["resourceVersion"]
    time.sleep(3)
    b = fleet.get("rb", "sum-web-deployment")
    assert b["metadata"]["resourceVersion"] == rv
    assert {i["clusterName"]: i.get("liveStatus") for i in b["status"]["aggregatedStatus"]} == \
        {"member1": "Current", "member2": "Current", "member3": "Current"}

    # member2's copy cannot pull its image: Failed there once its progress deadline passes
    fleet.apply(fake_image_override("sum-web", ["member2"]))
    s = wait_for(lambda: (x := summary(fleet, "sum-web")).get("failed") == 1 and x, timeout=WAIT,
                 what="Failed on member2")
    assert s["state"] == "Failed" and s["current"] == 2 and s["desired"] == 3
    assert [(n["cluster"], n["state"], n.get("reason")) for n in s["notCurrent"]] == \
        [("member2", "Failed", "ProgressDeadlineExceeded")]
    assert s["lastChangeTime"]
    items = {i["clusterName"]: i.get("liveStatus") for i in fleet.get("rb", "sum-web-deployment")["status"]
             ["aggregatedStatus"]}
    assert items["member2"] == "Failed"
    # every cluster's detail, served paged and filtered by state: the binding's Works
    pid = fleet.get("rb", "sum-web-deployment")["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"]
    by_id = f"resourcebinding.karmada.io/permanent-id={pid}"

    def works(*args):
        r = fleet.kubectl("get", "works", "-A", "-l", by_id, "--chunk-size=1", *args, "-o", "json")
        return sorted(w["metadata"]["namespace"] for w in json.loads(r.stdout)["items"])
    assert works("--field-selector", "status.liveState=Failed") == ["karmada-es-member2"]
    assert works("--field-selector", "status.liveState=Current") == ["karmada-es-member1", "karmada-es-member3"]
    assert works("--field-selector", "status.liveState!=Current") == ["karmada-es-member2"]
    assert works() == ["karmada-es-member1", "karmada-es-member2", "karmada-es-member3"]

    fleet.delete("overridepolicy", "sum-web-fake")
    # what a script waits on, with kubectl alone
    r = fleet.kubectl("wait", "rb/sum-web-deployment", "--for=jsonpath={.status.summary.state}=Current",
                      "--timeout=60s", check=False)
    assert r.returncode == 0, r.stderr
    s = wait_for(lambda: (x := summary(fleet, "sum-web")).get("current") == 3 and x, timeout=WAIT,
                 what="Current again")
    assert s["state"] == "Current" and s["notCurrent"] == [] and s["failed"] == 0


def binding_status_reconciles(fleet):
    """The binding status controller's reconciles so far, from the server's /metrics."""
    text = fleet.kubectl("get", "--raw", "/metrics").stdout
    return sum(float(m.group(1)) for m in re.finditer(
        r'^flotilla_controller_reconcile_total\{controller="bindingstatus",result="\w+"\} (\S+)$', text, re.M))


def test_a_member_that_stops_answering_turns_unknown_and_back(fleet):
    # bystanders: 30 Deployments on member1 only; member3's flips must not look at them again
    others = [f"sum-by-{i}" for i in range(30)]
    by_policy = policy_manifest("sum-by", ["member1"])
    by_policy["spec"]["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "Deployment",
                                               "labelSelector": {"matchLabels": {"sum": "bystander"}}}]
    bystanders = [deployment_manifest(n) for n in others]
    for d in bystanders:
        d["metadata"]["labels"] = {"sum": "bystander"}
    fleet.apply([policy_manifest("sum-down", ["member1", "member3"]), deployment_manifest("sum-down"), by_policy]
                + bystanders)
    wait_for(lambda: summary(fleet, "sum-down").get("current") == 2, timeout=WAIT, what="Current on both")
    wait_for(lambda: all(summary(fleet, n).get("current") == 1 for n in others), timeout=WAIT,
             what="the bystanders Current on member1")

    def settled():
        a = binding_status_reconciles(fleet)
        time.sleep(2)
        return (a,) if binding_status_reconciles(fleet) == a else None
    quiet = wait_for(settled, timeout=WAIT, what="the binding status controller quiet")[0]
    member_fault(fleet, "member3", True)
    t0 = time.time()
    try:
        # the second failing probe (about twice the 10 s probe interval): Unknown while the
        # Cluster is still Ready (its 30 s failure threshold not passed)
        s = wait_for(lambda: (x := summary(fleet, "sum-down")).get("unknown") == 1 and x, timeout=WAIT,
                     what="Unknown on member3")
        took = time.time() - t0
        ready = [c for c in fleet.get("cluster", "member3")["status"]["conditions"] if c["type"] == "Ready"][0]
        assert s["state"] == "Unknown" and s["current"] == 1
        assert [(n["cluster"], n["state"], n.get("reason")) for n in s["notCurrent"]] == \
            [("member3", "Unknown", "ClusterNotReporting")], (took, s["notCurrent"])
        assert ready["status"] == "True", (took, ready)
        # then the threshold: the Cluster is not Ready, and the summary says so
        s = wait_for(lambda: (x := summary(fleet, "sum-down")).get("notCurrent") and
                     x["notCurrent"][0].get("reason") == "ClusterNotReady" and x, timeout=WAIT,
                     what="ClusterNotReady on member3")
        assert s["unknown"] == 1 and s["current"] == 1
    finally:
        member_fault(fleet, "member3", False)
    wait_for(lambda: summary(fleet, "sum-down").get("current") == 2, timeout=WAIT, what="Current again")
    # three flips of member3 (not reporting, not Ready, Ready): each looked again at the
    # bindings placed there, not at the 30 bystanders (that would be 90 reconciles and more)
    looked = binding_status_reconciles(fleet) - quiet
    assert looked < 30, looked
    assert all(summary(fleet, n).get("current") == 1 for n in others)


def test_partitioned_members_do_not_hold_back_the_probes_of_the_others(monkeypatch):
    """Six of eight members partitioned: each probe of one hangs for the probe timeout, more
    than the cluster status controller's four workers can wait through in an interval, so the
    pool grows (it says so) and every partitioned cluster is marked not reporting while the two
    others stay Ready and reporting."""
    monkeypatch.setenv("FLOTILLA_CLUSTER_STATUS_INTERVAL_MS", "500")
    monkeypatch.setenv("FLOTILLA_CLUSTER_PROBE_TIMEOUT_MS", "3000")
    monkeypatch.setenv("FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS", "120000")
    with running_fleet(members=8) as f:
        cut = [f"member{i}" for i in range(3, 9)]
        for c in cut:
            member_fault(f, c, partition=True)
        try:
            def marked():
                return {c["metadata"]["name"] for c in f.get("clusters")["items"]
                        if "flotilla.io/not-reporting-since" in (c["metadata"].get("annotations") or {})}
            wait_for(lambda: marked() == set(cut), timeout=60, what=f"{cut} marked not reporting")
            log = open(os.path.join(f.dir, "server.log")).read()
            assert "probes are held by members that do not answer" in log, log[-2000:]
            # the metric a dashboard counts stale clusters by
            metrics = f.kubectl("get", "--raw", "/metrics").stdout
            reporting = {m.group(1): m.group(2) for m in
                         re.finditer(r'^flotilla_cluster_reporting\{cluster="([^"]+)"\} (\S+)$', metrics, re.M)}
            assert reporting == {**{c: "0" for c in cut}, "member1": "1", "member2": "1"}, reporting
            for c in ("member1", "member2"):
                cl = f.get("cluster", c)
                assert [x["status"] for x in cl["status"]["conditions"] if x["type"] == "Ready"] == ["True"], cl
        finally:
            for c in cut:
                member_fault(f, c, partition=False)
        wait_for(lambda: not marked(), timeout=60, what="every member reporting again")


def test_a_large_fleet_keeps_the_hundred_worst_items_and_counts_all():
    with running_fleet(members=105) as big:
        failing = ["member7", "member50", "member101"]
        big.apply([policy_manifest("sum-big"), fake_image_override("sum-big", failing), deployment_manifest("sum-big")])
        s = wait_for(lambda: (x := summary(big, "sum-big")).get("desired") == 105 and x.get("failed") == 3
                     and x.get("current") == 102 and x, timeout=180, what="105 clusters counted, 3 Failed")
        assert s["state"] == "Failed" and s["truncated"] is False
        assert [n["cluster"] for n in s["notCurrent"]] == sorted(failing)
        b = big.get("rb", "sum-big-deployment")
        items = b["status"]["aggregatedStatus"]
        # the worst, at most 100 and no more than fit a small binding (a Deployment's item with
        # its conditions is about 650 bytes)
        assert 50 <= len(items) <= 100
        assert [i["clusterName"] for i in items[:3]] == sorted(failing)
        assert all(i["liveStatus"] == "Failed" for i in items[:3])
        assert all(i["liveStatus"] == "Current" for i in items[3:])
        assert len(b["spec"]["clusters"]) == 105
        assert len(json.dumps(b, separators=(",", ":"))) < 64 * 1024
