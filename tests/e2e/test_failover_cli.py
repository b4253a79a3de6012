"""`flotilla ctl failover history KIND/NAME` end to end on `flotilla up` (docs/failover.md,
"Seeing it"): the timeline of a workload moved by a real NoExecute taint, its raw -o json|yaml
form, the history rows of status.failoverHistory, and one readable line for each mistake.

The workload's image is `fake/...`, which a simulated member never pulls: its new copy never
turns healthy, so a Gracefully task stays pending for its whole grace period (600 s) and the
timeline can be read at leisure.
"""
import json

from conftest import wait_for

TAINT_KEY = "fo-cli-test"
NAME = "fo-cli"
BINDING = f"{NAME}-deployment"


def deployment(name):
    pod = {"containers": [{"name": "app", "image": "fake/nginx:1.25",
                           "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


def policy(name, clusters):
    """One cluster of `clusters`, the test taint tolerated for 1 s, old copies purged Gracefully."""
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": {"clusterAffinity": {"clusterNames": clusters},
                                   "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1,
                                                          "minGroups": 1}],
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
                                   "clusterTolerations": [{"key": TAINT_KEY, "operator": "Exists",
                                                           "effect": "NoExecute", "tolerationSeconds": 1}]},
                     "failover": {"cluster": {"purgeMode": "Gracefully"}}}}


def placed(fleet, name):
    rb = fleet.get("rb", f"{name}-deployment")
    clusters = [c["name"] for c in ((rb or {}).get("spec", {}).get("clusters") or [])]
    return clusters[0] if len(clusters) == 1 else None


def tasks(fleet, name):
    rb = fleet.get("rb", f"{name}-deployment") or {}
    return rb.get("spec", {}).get("gracefulEvictionTasks") or []


def rows(stdout):
    """The table's lines split into cells (kubectl's layout: cells never hold two spaces)."""
    lines = stdout.splitlines()
    split = [[c for c in l.split("  ") if c.strip()] for l in lines]
    return [[c.strip() for c in r] for r in split]


def server_has_failover_history(fleet):
    """Does the served ResourceBinding schema know status.failoverHistory? (Added by the
    application-failover work; until then the server refuses the field.)"""
    r = fleet.kubectl("get", "--raw", "/openapi/v3/apis/work.karmada.io/v1alpha2")
    doc = json.loads(r.stdout)
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        if name.endswith(".ResourceBinding") or name.endswith("v1alpha2.ResourceBinding") or name == "ResourceBinding":
            status = schema.get("properties", {}).get("status", {})
            if "failoverHistory" in json.dumps(status):
                return True
    return "failoverHistory" in r.stdout


def history(fleet, *args):
    return fleet.ctl("failover", "history", *args)


def moved(fleet):
    """The test workload, placed and then moved off its cluster by the taint; (old, new)."""
    fleet.apply([deployment(NAME), policy(NAME, ["member1", "member2"])])
    old = wait_for(lambda: placed(fleet, NAME), timeout=30, what=f"{NAME} scheduled")
    new = "member2" if old == "member1" else "member1"
    fleet.patch("cluster", old, patch={"spec": {"taints": [{"key": TAINT_KEY, "effect": "NoExecute"}]}})
    wait_for(lambda: placed(fleet, NAME) == new, timeout=20, what=f"{NAME} moved to {new}")
    wait_for(lambda: tasks(fleet, NAME), timeout=10, what="the eviction task")
    return old, new


def test_timeline_of_a_taint_eviction_and_its_raw_form(fleet):
    old, new = moved(fleet)
    try:
        with_history = server_has_failover_history(fleet)
        r = history(fleet, "deployment/" + NAME)
        assert r.returncode == 0, r.stderr
        t = rows(r.stdout)
        assert t[0] == ["STARTED", "FROM", "TO", "REASON", "PURGE MODE", "PRESERVED STATE", "OUTCOME",
                        "COMPLETED"], r.stdout
        assert len(t) == 2, r.stdout  # one failover: the task, and its history item if the server keeps one
        row = t[1]
        task = tasks(fleet, NAME)[0]
        assert row[0] == task["creationTimestamp"] or with_history, r.stdout
        assert row[1:3] == [old, new], r.stdout
        assert row[3] in (("ClusterFailover", "TaintUntolerated") if with_history else ("TaintUntolerated",)), r.stdout
        assert row[4:] == ["Gracefully", "<none>", "InProgress", "<pending>"], r.stdout

        # kubectl's other spellings of the kind give the same table
        for spelled in ("Deployment", "deploy", "deployments", "deployments.apps"):
            again = history(fleet, f"{spelled}/{NAME}", "-n", "default")
            assert again.returncode == 0 and rows(again.stdout)[1][1:] == row[1:], (spelled, again.stderr)

        j = history(fleet, "deployment/" + NAME, "-o", "json")
        assert j.returncode == 0, j.stderr
        raw = json.loads(j.stdout)
        assert raw["binding"] == BINDING and raw["namespace"] == "default", raw
        assert [x["fromCluster"] for x in raw["gracefulEvictionTasks"]] == [old], raw
        assert raw["gracefulEvictionTasks"][0]["purgeMode"] == "Gracefully", raw
        assert isinstance(raw["failoverHistory"], list), raw
        y = history(fleet, "deployment/" + NAME, "-o", "yaml")
        assert y.returncode == 0, y.stderr
        assert f"fromCluster: {old}" in y.stdout and "gracefulEvictionTasks:" in y.stdout, y.stdout
    finally:
        fleet.patch("cluster", old, patch={"spec": {"taints": None}})
        fleet.delete("deploy", NAME)
        fleet.delete("pp", NAME)
        wait_for(lambda: fleet.get("rb", BINDING) is None, timeout=30, what="the binding gone")


def test_history_rows_come_from_status_failover_history(fleet):
    """With a server that keeps status.failoverHistory, items written there are rows, oldest
    first. Without it, the server refuses the field and the timeline shows the task only."""
    name = "fo-cli-hist"
    fleet.apply([deployment(name), policy(name, ["member1", "member2"])])
    old = wait_for(lambda: placed(fleet, name), timeout=30, what=f"{name} scheduled")
    new = "member2" if old == "member1" else "member1"
    try:
        fleet.patch("cluster", old, patch={"spec": {"taints": [{"key": TAINT_KEY, "effect": "NoExecute"}]}})
        wait_for(lambda: placed(fleet, name) == new, timeout=20, what=f"{name} moved to {new}")
        wait_for(lambda: tasks(fleet, name), timeout=10, what="the eviction task")
        earlier = {"reason": "ApplicationFailover", "startTime": "2026-01-01T09:00:00Z", "fromCluster": "member3",
                   "clustersBeforeFailover": ["member3"], "clustersAfterFailover": [old],
                   "preservedLabelState": {"checkpoint": "c42"},
                   "completionTime": "2026-01-01T09:02:00Z", "outcome": "NewCopyHealthy"}
        rb = fleet.get("rb", f"{name}-deployment")
        kept = (rb.get("status") or {}).get("failoverHistory") or []
        w = fleet.kubectl("patch", "rb", f"{name}-deployment", "--subresource=status", "--type=merge", "-p",
                          json.dumps({"status": {"failoverHistory": [earlier] + kept}}), check=False)
        stored = (fleet.get("rb", f"{name}-deployment").get("status") or {}).get("failoverHistory")
        if server_has_failover_history(fleet):
            assert w.returncode == 0, w.stderr

            def shows_earlier():
                r = history(fleet, f"deployment/{name}")
                t = rows(r.stdout) if r.returncode == 0 else []
                return t if any(x[1] == "member3" for x in t[1:]) else None
            t = wait_for(shows_earlier, timeout=10, what="the written history item in the timeline")
            assert t[1] == ["2026-01-01T09:00:00Z", "member3", old, "ApplicationFailover", "<none>",
                            "checkpoint=c42", "NewCopyHealthy", "2026-01-01T09:02:00Z"], t
            # the taint eviction is the newer row, still in progress
            assert t[-1][1:3] == [old, new] and t[-1][6] == "InProgress", t
        else:
            # nothing half-written, and the timeline is the pending task alone
            assert not stored, stored
            r = history(fleet, f"deployment/{name}")
            assert r.returncode == 0, r.stderr
            t = rows(r.stdout)
            assert len(t) == 2 and t[1][1:4] == [old, new, "TaintUntolerated"], r.stdout
            assert t[1][6:] == ["InProgress", "<pending>"], r.stdout
    finally:
        fleet.patch("cluster", old, patch={"spec": {"taints": None}})
        fleet.delete("deploy", name)
        fleet.delete("pp", name)
        wait_for(lambda: fleet.get("rb", f"{name}-deployment") is None, timeout=30, what="the binding gone")


def test_no_failover_yet_says_so(fleet):
    name = "fo-cli-calm"
    fleet.apply([deployment(name), policy(name, ["member1", "member2"])])
    try:
        wait_for(lambda: placed(fleet, name), timeout=30, what=f"{name} scheduled")
        r = history(fleet, f"deployment/{name}")
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f'No failovers for Deployment "{name}" (ResourceBinding {name}-deployment).'
    finally:
        fleet.delete("deploy", name)
        fleet.delete("pp", name)


def test_a_cluster_scoped_template_reads_its_cluster_resource_binding(fleet):
    """A CRD (cluster-scoped) moved by a Never task a person wrote on its ClusterResourceBinding."""
    name = "gizmos.fo-cli.example.io"
    crb = f"{name}-customresourcedefinition"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
           "spec": {"group": "fo-cli.example.io", "scope": "Namespaced",
                    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    spec = policy("x", ["member1", "member2"])["spec"]
    spec["resourceSelectors"] = [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                  "name": name}]
    fleet.apply([crd, {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                       "metadata": {"name": "fo-cli-gizmos"}, "spec": spec}])

    def on():
        b = fleet.get("crb", crb) or {}
        cl = [c["name"] for c in b.get("spec", {}).get("clusters") or []]
        return cl[0] if len(cl) == 1 else None
    old = wait_for(on, timeout=30, what="the CRD scheduled")
    new = "member2" if old == "member1" else "member1"
    try:
        fleet.patch("crb", crb, patch={"spec": {"gracefulEvictionTasks": [
            {"fromCluster": old, "purgeMode": "Never", "reason": "Maintenance", "producer": "ops"}]}})
        wait_for(lambda: on() == new, timeout=20, what=f"the ClusterResourceBinding moved to {new}")
        # -n is ignored for a cluster-scoped kind, as kubectl does
        r = history(fleet, f"crd/{name}", "-n", "default")
        assert r.returncode == 0, r.stderr
        t = rows(r.stdout)
        assert len(t) == 2 and t[1][1:5] == [old, new, "Maintenance", "Never"], r.stdout
        assert t[1][6:] == ["InProgress", "<pending>"], r.stdout
        j = history(fleet, f"customresourcedefinitions.apiextensions.k8s.io/{name}", "-o", "json")
        raw = json.loads(j.stdout)
        assert raw["binding"] == crb and "namespace" not in raw, raw
        assert [x["fromCluster"] for x in raw["gracefulEvictionTasks"]] == [old], raw
    finally:
        fleet.kubectl("patch", "crb", crb, "--type=json", "-p",
                      json.dumps([{"op": "remove", "path": "/spec/gracefulEvictionTasks"}]), check=False)
        fleet.delete("crd", name)
        fleet.delete("cpp", "fo-cli-gizmos")
        wait_for(lambda: fleet.get("crb", crb) is None, timeout=30, what="the ClusterResourceBinding gone")


def one_line(r):
    return r.stderr.count("\n") == 1 and r.stderr.startswith("flotilla ctl failover history: ")


def test_mistakes_get_one_readable_line(fleet):
    r = history(fleet, "deployment")  # no NAME
    assert r.returncode == 2 and one_line(r) and "KIND/NAME" in r.stderr, r.stderr
    r = history(fleet, "deployment/a/b")
    assert r.returncode == 2 and one_line(r) and "KIND/NAME" in r.stderr, r.stderr
    r = history(fleet, "deployment/x", "-o", "wide")
    assert r.returncode == 2 and one_line(r) and "yaml or json" in r.stderr, r.stderr
    r = fleet.ctl("failover", "replay", "deployment/x")
    assert r.returncode == 2 and one_line(r) and "history" in r.stderr, r.stderr
    r = history(fleet, "nosuchkind/x")
    assert r.returncode == 1 and one_line(r) and 'no resource type "nosuchkind"' in r.stderr, r.stderr
    r = history(fleet, "deployment/not-there", "-n", "default")
    assert r.returncode == 1 and one_line(r), r.stderr
    assert 'Deployment "not-there" not found in namespace default' in r.stderr, r.stderr
    # a template no policy claims has no binding
    fleet.apply(deployment("fo-cli-unclaimed"))
    try:
        r = history(fleet, "deployment/fo-cli-unclaimed")
        assert r.returncode == 1 and one_line(r), r.stderr
        assert 'has no ResourceBinding "fo-cli-unclaimed-deployment"' in r.stderr, r.stderr
        # cluster-scoped: a ClusterResourceBinding is looked for
        r = history(fleet, "namespace/default")
        assert r.returncode == 1 and one_line(r), r.stderr
        assert 'Namespace "default" has no ClusterResourceBinding "default-namespace"' in r.stderr, r.stderr
    finally:
        fleet.delete("deploy", "fo-cli-unclaimed")
