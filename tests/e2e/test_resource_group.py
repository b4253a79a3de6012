"""kpt's ResourceGroup (kpt.dev/v1alpha1) with live fleet status (issue 45, item 3), end to end
on a `flotilla up` fleet of two members, with kubectl only.

A package (two Deployments and a ConfigMap, one PropagationPolicy to both members) and a
ResourceGroup listing it, as `kpt live apply` leaves an inventory:
- every listed resource turns Current (Current on both members), the group counts 3 of 3 and
  its Ready condition is True; a quiet fleet writes nothing more to it;
- a Deployment whose image never pulls (the simulated members' `fake` registry) with a short
  progressDeadlineSeconds turns Failed in the group, naming the clusters and the reason;
  fixing the image turns it Current again;
- a listed resource that does not exist is NotFound, one that exists but is not propagated
  is Unknown, and both follow the template being created and deleted;
- what a client set in an entry (kpt's sourceHash) stays;
- `kubectl get resourcegroups` prints kpt's columns and ours;
- a malformed ResourceGroup is refused naming the field, and nothing is stored.
"""
import json
import time

import pytest

from conftest import running_fleet, wait_for

MEMBERS = ["member1", "member2"]
NS = "default"


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=2) as f:
        yield f


def deployment(name, image="nginx:1.25", deadline=None):
    spec = {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": image}]}}}
    if deadline:
        spec["progressDeadlineSeconds"] = deadline
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def configmap(name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
            "data": {"greeting": "hello"}}


def policy(name, selectors):
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"resourceSelectors": selectors,
                     "placement": {"clusterAffinity": {"clusterNames": MEMBERS},
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}


def ref(group, kind, name, ns=NS):
    return {"group": group, "kind": kind, "namespace": ns, "name": name}


def resource_group(name, resources):
    return {"apiVersion": "kpt.dev/v1alpha1", "kind": "ResourceGroup", "metadata": {"name": name, "namespace": NS},
            "spec": {"descriptor": {"type": "Application/Web", "revision": "v1"}, "resources": resources}}


def package(prefix, web_image="nginx:1.25", deadline=None):
    """The package's objects and its inventory's resources."""
    web, api, cfg = f"{prefix}-web", f"{prefix}-api", f"{prefix}-cfg"
    objs = [deployment(web, web_image, deadline), deployment(api), configmap(cfg),
            policy(prefix, [{"apiVersion": "apps/v1", "kind": "Deployment", "name": web},
                            {"apiVersion": "apps/v1", "kind": "Deployment", "name": api},
                            {"apiVersion": "v1", "kind": "ConfigMap", "name": cfg}])]
    # the inventory lists the policy too, as `kpt live apply` would
    return objs, [ref("apps", "Deployment", web), ref("apps", "Deployment", api), ref("", "ConfigMap", cfg),
                  ref("policy.karmada.io", "PropagationPolicy", prefix)]


def status(fleet, name):
    return (fleet.get("resourcegroup", name, "-n", NS) or {}).get("status") or {}


def states(fleet, name):
    """name -> status of each resourceStatuses entry."""
    return {e["name"]: e.get("status") for e in status(fleet, name).get("resourceStatuses") or []}


def entry(fleet, name, resource):
    for e in status(fleet, name).get("resourceStatuses") or []:
        if e["name"] == resource:
            return e
    return None


def condition(conds, type_):
    return next((c for c in conds or [] if c.get("type") == type_), None)


def cleanup(fleet, prefix, objs):
    fleet.delete("resourcegroup", prefix, "-n", NS)
    for o in objs:
        fleet.delete(o["kind"].lower(), o["metadata"]["name"], "-n", NS)


def test_a_propagated_package_is_current_everywhere_and_then_quiet(fleet):
    objs, resources = package("rg-ok")
    fleet.apply(objs + [resource_group("rg-ok", resources)])
    want = {"rg-ok-web": "Current", "rg-ok-api": "Current", "rg-ok-cfg": "Current", "rg-ok": "Current"}
    wait_for(lambda: states(fleet, "rg-ok") == want, timeout=90, what="every listed resource Current")
    st = status(fleet, "rg-ok")
    assert st["summary"] == {"state": "Current", "total": 4, "current": 4, "inProgress": 0, "terminating": 0,
                             "unknown": 0, "notFound": 0, "failed": 0}, st["summary"]
    rg = fleet.get("resourcegroup", "rg-ok", "-n", NS)
    assert st["observedGeneration"] == rg["metadata"]["generation"], st
    assert [c["type"] for c in st["conditions"]] == ["Reconciling", "Stalled", "Ready"], st["conditions"]
    ready = condition(st["conditions"], "Ready")
    assert ready["status"] == "True" and ready["reason"] == "AllCurrent", ready
    assert condition(st["conditions"], "Stalled")["status"] == "False"
    assert condition(st["conditions"], "Reconciling")["status"] == "False"
    fleet.kubectl("wait", "resourcegroup/rg-ok", "-n", NS, "--for=condition=Ready", "--timeout=10s")
    web = entry(fleet, "rg-ok", "rg-ok-web")
    assert web["group"] == "apps" and web["kind"] == "Deployment" and web["namespace"] == NS, web
    cond = condition(web["conditions"], "Ready")
    assert cond["status"] == "True" and cond["message"] == "2 clusters: 2 Current", cond
    # the policy acts on the control plane: Current there, without a binding
    assert condition(entry(fleet, "rg-ok", "rg-ok")["conditions"], "Ready")["reason"] == "ControlPlaneObject"

    # a quiet fleet: nothing is written to the group again
    rv = rg["metadata"]["resourceVersion"]
    time.sleep(2.5)
    assert fleet.get("resourcegroup", "rg-ok", "-n", NS)["metadata"]["resourceVersion"] == rv
    cleanup(fleet, "rg-ok", objs)


def test_a_deployment_that_never_pulls_is_failed_in_the_group_then_current_when_fixed(fleet):
    objs, resources = package("rg-bad", web_image="fake.io/nginx:1.25", deadline=3)
    fleet.apply(objs + [resource_group("rg-bad", resources)])
    wait_for(lambda: states(fleet, "rg-bad").get("rg-bad-web") == "Failed", timeout=90,
             what="rg-bad-web Failed in the ResourceGroup")
    wait_for(lambda: states(fleet, "rg-bad") == {"rg-bad-web": "Failed", "rg-bad-api": "Current",
                                                 "rg-bad-cfg": "Current", "rg-bad": "Current"}, timeout=60,
             what="the others Current")
    # the entry is Failed once one cluster fails; the other cluster's deadline passes moments later
    wait_for(lambda: condition(entry(fleet, "rg-bad", "rg-bad-web")["conditions"], "Ready")["message"]
             .startswith("2 clusters: 2 Failed;"), timeout=30, what="rg-bad-web Failed on both clusters")
    web = entry(fleet, "rg-bad", "rg-bad-web")
    cond = condition(web["conditions"], "Ready")
    assert cond["status"] == "False" and cond["reason"] == "ProgressDeadlineExceeded", cond
    assert cond["message"].startswith("2 clusters: 2 Failed; member1: Failed (ProgressDeadlineExceeded: "), cond
    assert "member2: Failed" in cond["message"] and "timed out" in cond["message"], cond
    st = status(fleet, "rg-bad")
    assert st["summary"]["state"] == "Failed" and st["summary"]["failed"] == 1 and st["summary"]["current"] == 3
    stalled, ready = condition(st["conditions"], "Stalled"), condition(st["conditions"], "Ready")
    assert stalled["status"] == "True" and stalled["reason"] == "Failed", stalled
    assert ready["status"] == "False" and "Failed: Deployment default/rg-bad-web" in ready["message"], ready
    rows = fleet.kubectl("get", "resourcegroups", "rg-bad", "-n", NS, "--no-headers").stdout.split()
    assert rows[:6] == ["rg-bad", "False", "True", "Failed", "3", "4"], rows

    fleet.kubectl("set", "image", "deploy/rg-bad-web", "app=nginx:1.25", "-n", NS)
    wait_for(lambda: states(fleet, "rg-bad").get("rg-bad-web") == "Current", timeout=90,
             what="rg-bad-web Current after the image fix")
    wait_for(lambda: (condition(status(fleet, "rg-bad").get("conditions"), "Ready") or {}).get("status") == "True",
             timeout=20, what="the group Ready")
    cleanup(fleet, "rg-bad", objs)


def test_missing_and_unpropagated_resources_follow_the_templates(fleet):
    fleet.apply(resource_group("rg-gone", [ref("", "ConfigMap", "rg-gone-cm"),
                                           ref("example.com", "Widget", "w"),
                                           ref("", "Namespace", "rg-gone-ns", ns=""),
                                           ref("policy.karmada.io", "PropagationPolicy", "rg-gone-pp")]))
    wait_for(lambda: states(fleet, "rg-gone") == {"rg-gone-cm": "NotFound", "w": "NotFound",
                                                  "rg-gone-ns": "NotFound", "rg-gone-pp": "NotFound"}, timeout=30,
             what="all NotFound")
    assert condition(entry(fleet, "rg-gone", "w")["conditions"], "Ready")["reason"] == "KindNotServed"
    cm = condition(entry(fleet, "rg-gone", "rg-gone-cm")["conditions"], "Ready")
    assert cm["reason"] == "NotFound" and cm["message"] == "no ConfigMap default/rg-gone-cm on the control plane", cm
    st = status(fleet, "rg-gone")
    assert condition(st["conditions"], "Stalled")["reason"] == "NotFound", st["conditions"]

    # created, but no policy propagates it: Unknown, and the condition says why
    fleet.apply(configmap("rg-gone-cm"))
    wait_for(lambda: states(fleet, "rg-gone").get("rg-gone-cm") == "Unknown", timeout=20,
             what="the unpropagated ConfigMap Unknown")
    cm = condition(entry(fleet, "rg-gone", "rg-gone-cm")["conditions"], "Ready")
    assert cm["status"] == "Unknown" and cm["reason"] == "NotPropagated", cm
    # deleted: NotFound again
    fleet.kubectl("delete", "configmap", "rg-gone-cm", "-n", NS)
    wait_for(lambda: states(fleet, "rg-gone").get("rg-gone-cm") == "NotFound", timeout=20,
             what="NotFound after the delete")

    # a Namespace (the namespace controller keeps it in every cluster) and a policy (it acts on
    # the control plane) need no binding: Current once they exist
    fleet.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rg-gone-ns"}},
                 policy("rg-gone-pp", [{"apiVersion": "v1", "kind": "ConfigMap", "name": "nothing"}])])
    wait_for(lambda: states(fleet, "rg-gone").get("rg-gone-ns") == "Current" and
             states(fleet, "rg-gone").get("rg-gone-pp") == "Current", timeout=20,
             what="the Namespace and the policy Current")
    assert condition(entry(fleet, "rg-gone", "rg-gone-ns")["conditions"], "Ready")["reason"] == "NamespaceSynced"
    fleet.kubectl("delete", "propagationpolicy", "rg-gone-pp", "-n", NS)
    wait_for(lambda: states(fleet, "rg-gone").get("rg-gone-pp") == "NotFound", timeout=20,
             what="the policy NotFound after its delete")
    fleet.delete("namespace", "rg-gone-ns")
    fleet.delete("resourcegroup", "rg-gone", "-n", NS)


def test_a_source_hash_set_by_the_client_is_kept(fleet):
    objs, resources = package("rg-hash")
    fleet.apply(objs + [resource_group("rg-hash", resources)])
    wait_for(lambda: set(states(fleet, "rg-hash").values()) == {"Current"}, timeout=90, what="all Current")
    # kpt's applier writes the entries with their source hash; the controller keeps it
    entries = status(fleet, "rg-hash")["resourceStatuses"]
    for e in entries:
        e["sourceHash"] = "hash-" + e["name"]
    fleet.kubectl("patch", "resourcegroup", "rg-hash", "-n", NS, "--subresource=status", "--type", "merge", "-p",
                  json.dumps({"status": {"resourceStatuses": [dict(e, status="Unknown") for e in entries]}}))
    wait_for(lambda: set(states(fleet, "rg-hash").values()) == {"Current"}, timeout=20,
             what="the entries Current again")
    for e in status(fleet, "rg-hash")["resourceStatuses"]:
        assert e["sourceHash"] == "hash-" + e["name"], e
    cleanup(fleet, "rg-hash", objs)


def test_kubectl_get_prints_a_table(fleet):
    fleet.apply(resource_group("rg-table", [ref("", "ConfigMap", "rg-table-none")]))
    wait_for(lambda: states(fleet, "rg-table") == {"rg-table-none": "NotFound"}, timeout=30, what="NotFound")
    out = fleet.kubectl("get", "resourcegroups", "-n", NS).stdout.splitlines()
    assert out[0].split() == ["NAME", "RECONCILING", "STALLED", "STATE", "CURRENT", "TOTAL", "AGE"], out
    row = next(l for l in out if l.startswith("rg-table "))
    assert row.split()[:6] == ["rg-table", "False", "True", "NotFound", "0", "1"], row
    # served under its plural and singular, like kpt's CRD (which has no short name)
    assert fleet.kubectl("get", "resourcegroup", "rg-table", "-n", NS, "-o", "name").stdout.strip() == \
        "resourcegroup.kpt.dev/rg-table"
    res = fleet.kubectl("api-resources", "--api-group", "kpt.dev", "--no-headers").stdout.split()
    assert res == ["resourcegroups", "kpt.dev/v1alpha1", "true", "ResourceGroup"], res
    fleet.delete("resourcegroup", "rg-table", "-n", NS)


BAD = [
    ("no-kind", {"group": "", "namespace": NS, "name": "x"}, "422", "spec.resources[0].kind: Required value"),
    ("empty-name", {"group": "", "kind": "ConfigMap", "namespace": NS, "name": ""}, "422",
     "spec.resources[0].name: Required value"),
    ("no-group", {"kind": "ConfigMap", "namespace": NS, "name": "x"}, "422",
     "spec.resources[0].group: Required value"),
    # a field of the wrong type is a decoding error here, as for every kind Flotilla serves
    ("not-a-string", {"group": "", "kind": 5, "namespace": NS, "name": "x"}, "400",
     "spec.resources[0].kind: expected string, got integer"),
    ("unknown-field", {"group": "", "kind": "ConfigMap", "namespace": NS, "name": "x", "nmae": "y"}, "400",
     'strict decoding error: unknown field "spec.resources[0].nmae"'),
]


@pytest.mark.parametrize("what,resource,code,text", BAD, ids=[b[0] for b in BAD])
def test_a_malformed_resource_group_is_refused_naming_the_field(fleet, what, resource, code, text):
    rg = resource_group(f"rg-bad-{what}", [ref("", "ConfigMap", "fine"), resource])
    text = text.replace("[0]", "[1]")
    r = fleet.kubectl("create", "-f", "-", "-v=6", input=json.dumps(rg), check=False)
    assert r.returncode != 0
    assert text in r.stderr, r.stderr
    assert f" {code} " in r.stderr, r.stderr  # kubectl -v=6 logs the response's status code
    assert fleet.get("resourcegroup", f"rg-bad-{what}", "-n", NS) is None
