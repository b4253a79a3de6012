"""ClusterTaintPolicy (policy.karmada.io/v1alpha1) end to end, on a `flotilla up` fleet whose
cluster status controller probes every 200 ms and turns Ready False after 1.5 s of failures
(the settings reach the server through the environment `up` passes on).

What is pinned: the kind is served and printed like Karmada's CRD (cluster-scoped, no short
name, NAME and AGE); invalid policies are refused with 422 naming the field and nothing is
stored; a member made unreachable with `flotilla ctl fault` gets the policy's NoExecute taint
with timeAdded within seconds of its Ready condition turning False, next to the status
controller's own NoSchedule taint, which a policy cannot take away; both go when it is Ready
again through the policy's removeOnConditions; targetClusters limits which clusters a policy
touches; two policies apply in creation order, not name order; a TaintClusterSucceed event is
recorded on the Cluster; deleting a policy leaves its taints; a restarted control plane neither
re-adds nor re-stamps a taint (a Pull cluster without an agent turns Unknown). Every wait is bounded."""
import datetime
import json
import os
import subprocess
import time

import pytest

from conftest import BIN, running_fleet, wait_for

ENV = {
    "FLOTILLA_CLUSTER_STATUS_INTERVAL_MS": "200",
    "FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS": "1500",
    "FLOTILLA_CLUSTER_PROBE_TIMEOUT_MS": "1000",
}
NOT_READY = "cluster.karmada.io/not-ready"
PATH = "/apis/policy.karmada.io/v1alpha1/clustertaintpolicies"


@pytest.fixture(scope="module")
def fleet():
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    try:
        with running_fleet(members=3) as f:
            yield f
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def fault(fleet, name, setting):
    r = subprocess.run([BIN, "ctl", "fault", name, "--members-kubeconfig",
                        os.path.join(fleet.dir, "members", "admin.kubeconfig"), "--set", setting],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def policy(name, taints, add=None, remove=None, targets=None):
    spec = {"taints": taints}
    if add is not None:
        spec["addOnConditions"] = add
    if remove is not None:
        spec["removeOnConditions"] = remove
    if targets is not None:
        spec["targetClusters"] = targets
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
            "metadata": {"name": name}, "spec": spec}


def ready_in(*values):
    return [{"conditionType": "Ready", "operator": "In", "statusValues": list(values)}]


def taints(fleet, cluster):
    c = fleet.get("cluster", cluster)
    return (c or {}).get("spec", {}).get("taints") or []


def pairs(ts):
    return sorted((t["key"], t["effect"]) for t in ts)


def ready_condition(fleet, cluster):
    c = fleet.get("cluster", cluster) or {}
    return next((x for x in (c.get("status") or {}).get("conditions") or [] if x["type"] == "Ready"), None)


def parse_time(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def test_served_and_printed_as_karmada_declares_it(fleet):
    r = fleet.kubectl("api-resources", "--api-group=policy.karmada.io", "--no-headers")
    rows = [l.split() for l in r.stdout.splitlines() if "ClusterTaintPolicy" in l]
    # NAME, APIVERSION, NAMESPACED, KIND: no short name in Karmada's CRD
    assert rows == [["clustertaintpolicies", "policy.karmada.io/v1alpha1", "false", "ClusterTaintPolicy"]], r.stdout
    p = policy("ctp-print", [{"key": "example.com/print", "effect": "NoSchedule", "value": "v"}],
               add=ready_in("False"), targets={"clusterNames": ["nowhere"]})
    out = fleet.apply(p).stdout
    assert "clustertaintpolicy.policy.karmada.io/ctp-print created" in out, out
    lines = fleet.kubectl("get", "clustertaintpolicies").stdout.splitlines()
    assert lines[0].split() == ["NAME", "AGE"], lines
    assert lines[1].split()[0] == "ctp-print", lines
    got = fleet.get("clustertaintpolicy", "ctp-print")
    assert got["spec"] == p["spec"]
    assert "namespace" not in got["metadata"]
    fleet.delete("clustertaintpolicy", "ctp-print")


INVALID = [
    ("no taints", policy("bad", [], add=ready_in("False")), "spec.taints", "Required value"),
    ("bad key", policy("bad", [{"key": "not a key!", "effect": "NoSchedule"}], add=ready_in("False")),
     "spec.taints[0].key", "Invalid value"),
    ("no key", policy("bad", [{"effect": "NoSchedule"}], add=ready_in("False")), "spec.taints[0].key",
     "Required value"),
    ("effect", policy("bad", [{"key": "k", "effect": "PreferNoSchedule"}], add=ready_in("False")),
     "spec.taints[0].effect", "Unsupported value"),
    ("duplicate", policy("bad", [{"key": "k", "effect": "NoExecute"}, {"key": "k", "effect": "NoExecute", "value": "x"}],
                         add=ready_in("False")),
     "spec.taints[1]", "Duplicate taint with the same key(k) and effect(NoExecute) is not allowed"),
    ("operator", policy("bad", [{"key": "k", "effect": "NoSchedule"}],
                        add=[{"conditionType": "Ready", "operator": "Exists", "statusValues": ["True"]}]),
     "spec.addOnConditions[0].operator", "Unsupported value"),
    ("statusValues", policy("bad", [{"key": "k", "effect": "NoSchedule"}],
                            remove=[{"conditionType": "Ready", "operator": "In", "statusValues": []}]),
     "spec.removeOnConditions[0].statusValues", "Required value"),
    ("conditionType", policy("bad", [{"key": "k", "effect": "NoSchedule"}],
                             add=[{"operator": "In", "statusValues": ["True"]}]),
     "spec.addOnConditions[0].conditionType", "Required value"),
    ("no conditions", policy("bad", [{"key": "k", "effect": "NoSchedule"}]), "spec.addOnConditions",
     "at least one of addOnConditions and removeOnConditions"),
    ("targetClusters", policy("bad", [{"key": "k", "effect": "NoSchedule"}], add=ready_in("False"),
                              targets={"fieldSelector": {"matchExpressions": [
                                  {"key": "color", "operator": "In", "values": ["red"]}]}}),
     "spec.targetClusters.fieldSelector", "unsupported key"),
]


@pytest.mark.parametrize("what,obj,field,text", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_policies_are_refused_naming_the_field(fleet, what, obj, field, text):
    r = fleet.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
    assert r.returncode != 0
    assert "is invalid" in r.stderr and field in r.stderr and text in r.stderr, r.stderr
    assert fleet.get("clustertaintpolicy", "bad") is None, "nothing is stored"


def test_not_ready_member_gets_the_noexecute_taint_and_loses_it_when_ready(fleet):
    # member1 and member2 go down; only member1 is targeted
    fleet.apply([
        policy("ctp-noexecute", [{"key": NOT_READY, "effect": "NoExecute"}], add=ready_in("False", "Unknown"),
               remove=ready_in("True"), targets={"clusterNames": ["member1"]}),
        # tries to take the status controller's own taint away while not ready: left to it
        policy("ctp-status-owned", [{"key": NOT_READY, "effect": "NoSchedule"}], remove=ready_in("False", "Unknown"),
               targets={"clusterNames": ["member1"]}),
    ])
    assert taints(fleet, "member1") == [] and taints(fleet, "member2") == []
    fault(fleet, "member1", "down")
    fault(fleet, "member2", "down")
    try:
        ts = wait_for(lambda: (x := taints(fleet, "member1")) and
                      pairs(x) == [(NOT_READY, "NoExecute"), (NOT_READY, "NoSchedule")] and x,
                      timeout=20, what="member1's NoExecute taint beside the status controller's NoSchedule one")
        rc = ready_condition(fleet, "member1")
        assert rc["status"] == "False"
        ne = next(t for t in ts if t["effect"] == "NoExecute")
        added = parse_time(ne["timeAdded"])
        assert 0 <= (added - parse_time(rc["lastTransitionTime"])).total_seconds() <= 5, (ne, rc)
        assert "value" not in ne
        # member2 is down too, but not targeted: only the status controller's taint
        wait_for(lambda: pairs(taints(fleet, "member2")) == [(NOT_READY, "NoSchedule")], timeout=20,
                 what="member2's not-ready taint")
        time.sleep(1.0)
        assert pairs(taints(fleet, "member2")) == [(NOT_READY, "NoSchedule")]
        # the taint stays as added: no rewrite of timeAdded while the cluster stays down
        assert next(t for t in taints(fleet, "member1") if t["effect"] == "NoExecute") == ne
        # a label change runs the policies again: the status controller's taint is not theirs to remove
        ns = next(t for t in taints(fleet, "member1") if t["effect"] == "NoSchedule")
        fleet.kubectl("label", "cluster", "member1", "ctp-test=relabelled")
        time.sleep(1.5)
        assert sorted(taints(fleet, "member1"), key=lambda t: t["effect"]) == [ne, ns]

        events = fleet.get("events", "-A")["items"]
        ev = [e for e in events if e["reason"] == "TaintClusterSucceed" and e["involvedObject"]["name"] == "member1"]
        assert ev, [e["reason"] for e in events]
        assert ev[0]["type"] == "Normal" and ev[0]["involvedObject"]["kind"] == "Cluster"
        assert ev[0]["message"].startswith("Update Cluster(member1) with taints(cluster now has taints([")
        assert f"{{Key:{NOT_READY},Effect:NoExecute}}" in ev[-1]["message"], ev[-1]["message"]
    finally:
        fault(fleet, "member1", "clear")
        fault(fleet, "member2", "clear")
    wait_for(lambda: taints(fleet, "member1") == [] and taints(fleet, "member2") == [], timeout=20,
             what="both taints gone once Ready again")
    assert ready_condition(fleet, "member1")["status"] == "True"
    fleet.kubectl("label", "cluster", "member1", "ctp-test-")
    fleet.delete("clustertaintpolicy", "ctp-noexecute")
    fleet.delete("clustertaintpolicy", "ctp-status-owned")


def test_policies_apply_in_creation_order_and_deleting_one_keeps_its_taints(fleet):
    target = {"clusterNames": ["member3"]}
    shared = {"key": "example.com/shared", "effect": "NoSchedule"}
    other = {"key": "example.com/other", "effect": "NoExecute", "value": "v1"}
    # created first, named last: by creation order the later policy wins each key
    fleet.apply([policy("zz-adds-shared", [shared], add=ready_in("True"), targets=target),
                 policy("zz-removes-other", [other], remove=ready_in("True"), targets=target)])
    time.sleep(1.2)  # creationTimestamp has whole seconds
    fleet.apply([policy("aa-removes-shared", [shared], remove=ready_in("True"), targets=target),
                 policy("aa-adds-other", [other], add=ready_in("True"), targets=target)])
    want = [("example.com/other", "NoExecute")]
    wait_for(lambda: pairs(taints(fleet, "member3")) == want, timeout=15, what="the later policies' result")
    time.sleep(1.0)
    ts = taints(fleet, "member3")
    assert pairs(ts) == want, ts
    assert ts[0]["value"] == "v1" and ts[0]["timeAdded"].endswith("Z")
    assert taints(fleet, "member1") == [] and taints(fleet, "member2") == []
    # deleting the policy that added it leaves the taint (Karmada's behaviour)
    for name in ("aa-adds-other", "zz-removes-other", "zz-adds-shared", "aa-removes-shared"):
        fleet.kubectl("delete", "clustertaintpolicy", name)
    time.sleep(1.0)
    assert taints(fleet, "member3") == ts
    fleet.kubectl("patch", "cluster", "member3", "--type=json", "-p", '[{"op":"remove","path":"/spec/taints"}]')


def test_restart_keeps_taints_and_their_time(fresh_server, monkeypatch):
    """All state is in the store: a restarted control plane neither re-adds nor re-stamps."""
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    cp = fresh_server.start()
    cp.kubectl("create", "namespace", "karmada-cluster")
    # a Pull cluster whose agent never renews its Lease turns Ready Unknown
    cp.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "p1"},
        "spec": {"syncMode": "Pull"}}))
    cp.kubectl("create", "-f", "-", input=json.dumps(policy(
        "ctp-unreachable", [{"key": "cluster.karmada.io/unreachable", "effect": "NoExecute", "value": "x"}],
        add=ready_in("Unknown"))))

    def get_taints():
        code, c = cp.curl("GET", "/apis/cluster.karmada.io/v1alpha1/clusters/p1")
        return (c.get("spec") or {}).get("taints") or [] if code == 200 else []

    ts = wait_for(lambda: (x := get_taints()) and len(x) == 2 and x, timeout=20,
                  what="the policy's taint and the status controller's")
    ne = next(t for t in ts if t["effect"] == "NoExecute")
    assert ne["value"] == "x"
    time.sleep(1.2)  # a new timeAdded would differ
    assert cp.stop() == 0
    cp.start()
    # a second policy's taint shows the policies ran again after the restart
    cp.kubectl("create", "-f", "-", input=json.dumps(policy(
        "ctp-second", [{"key": "example.com/second", "effect": "NoSchedule"}], add=ready_in("Unknown"))))
    after = wait_for(lambda: (x := get_taints()) and len(x) == 3 and x, timeout=20, what="the second policy's taint")
    assert [t for t in after if t["effect"] == "NoExecute"] == [ne]
    assert [t for t in after if t["key"] == "cluster.karmada.io/unreachable" and t["effect"] == "NoSchedule"] == \
        [t for t in ts if t["effect"] == "NoSchedule"]


def test_notin_and_conditions_a_cluster_does_not_have(fleet):
    target = {"clusterNames": ["member2"]}
    fleet.apply([
        policy("ctp-notin", [{"key": "example.com/notin", "effect": "NoSchedule"}],
               add=[{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["False", "Unknown"]}],
               targets=target),
        # a condition type the cluster lacks matches neither In nor NotIn, and conditions are ANDed
        policy("ctp-missing-in", [{"key": "example.com/missing-in", "effect": "NoSchedule"}],
               add=[{"conditionType": "NoSuchCondition", "operator": "In", "statusValues": ["True"]}], targets=target),
        policy("ctp-missing-notin", [{"key": "example.com/missing-notin", "effect": "NoSchedule"}],
               add=[{"conditionType": "NoSuchCondition", "operator": "NotIn", "statusValues": ["True"]}],
               targets=target),
        policy("ctp-and", [{"key": "example.com/and", "effect": "NoSchedule"}],
               add=ready_in("True") + [{"conditionType": "NoSuchCondition", "operator": "NotIn",
                                        "statusValues": ["True"]}], targets=target),
    ])
    wait_for(lambda: pairs(taints(fleet, "member2")) == [("example.com/notin", "NoSchedule")], timeout=15,
             what="the NotIn policy's taint")
    time.sleep(1.0)
    assert pairs(taints(fleet, "member2")) == [("example.com/notin", "NoSchedule")]
    for name in ("ctp-notin", "ctp-missing-in", "ctp-missing-notin", "ctp-and"):
        fleet.delete("clustertaintpolicy", name)
    fleet.kubectl("patch", "cluster", "member2", "--type=json", "-p", '[{"op":"remove","path":"/spec/taints"}]')
