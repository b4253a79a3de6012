"""Migration: taking running workloads under management without a restart, the adoption
allow-list, and letting go again (docs/migration.md).

One `flotilla up` with two members. Workloads are created directly
in member2 with kubectl, as they would be before a federation existed, and taken over with
`flotilla ctl promote`. What is pinned:
- promote of a Deployment with a ConfigMap it mounts: the control plane has the template, a
  policy selecting exactly it (Overwrite, propagateDeps) and the ConfigMap; member2's object
  keeps its generation, pod template and replicas; the template shows its status; a later
  change of the template reaches it;
- bulk promote of a namespace: the dry run prints what would happen and writes nothing, then
  every Deployment is taken over without a new generation;
- release, then deleting template and policy: the member objects stay, running and without a
  mark of Flotilla; promote again takes them over again (and, with the template still there,
  promote lifts the release);
- the allow-list: Overwrite does not adopt an object it does not admit (the Work says why),
  and does where the namespace label or the policy annotation admits it;
- bad input: a missing object, a kind that cannot be a template: one line, exit 1, nothing
  written.
"""
import json
import time

import pytest

from conftest import running_fleet, wait_for

WAIT = 30
ADOPT = "migration.flotilla.io/adopt"


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=2) as f:
        yield f


def configmap(name, ns="default", data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": data or {"index.html": f"hello from {name}"}}


def deployment(name, ns="default", replicas=3, cm=None):
    spec = {"containers": [{"name": "web", "image": "nginx:1.27"}]}
    if cm:
        spec["containers"][0]["volumeMounts"] = [{"name": "cfg", "mountPath": "/usr/share/nginx/html"}]
        spec["volumes"] = [{"name": "cfg", "configMap": {"name": cm}}]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def marks(obj):
    """The labels and annotations of Flotilla/Karmada on a member object."""
    md = obj["metadata"]
    keys = list((md.get("labels") or {}).keys()) + list((md.get("annotations") or {}).keys())
    return [k for k in keys if "karmada.io" in k or "flotilla.io" in k]


def managed(obj):
    return bool(obj) and (obj["metadata"].get("labels") or {}).get("karmada.io/managed") == "true"


def running(fleet, name, ns="default", member="member2"):
    d = fleet.get("deploy", name, "-n", ns, member=member)
    return d if d and (d.get("status") or {}).get("readyReplicas") == d["spec"]["replicas"] else None


def condition(obj, ctype):
    for c in (obj or {}).get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def works_for(fleet, kind, name):
    out = []
    for w in (fleet.get("works", "-A") or {}).get("items", []):
        for m in w.get("spec", {}).get("workload", {}).get("manifests", []):
            if m.get("kind") == kind and m.get("metadata", {}).get("name") == name:
                out.append(w)
    return out


def promote(fleet, *args):
    return fleet.ctl("promote", *args)


def test_promote_takes_over_a_running_deployment_without_a_restart(fleet):
    fleet.apply([configmap("web-cfg"), deployment("web", cm="web-cfg")], member="member2")
    before = wait_for(lambda: running(fleet, "web"), timeout=WAIT, what="web running in member2")
    r = promote(fleet, "deployment", "web", "--cluster", "member2")
    assert r.returncode == 0, r.stderr
    assert "deployment.apps/web promoted from member2" in r.stdout and "ConfigMap/web-cfg" in r.stdout, r.stdout

    # the control plane: template, a policy that selects exactly it, and the ConfigMap
    t = fleet.get("deploy", "web")
    assert t["spec"]["template"] == before["spec"]["template"] and t["spec"]["replicas"] == 3
    assert "kubectl.kubernetes.io/last-applied-configuration" not in (t["metadata"].get("annotations") or {})
    pp = fleet.get("pp", "web-deployment")
    assert pp["spec"]["resourceSelectors"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                               "namespace": "default"}]
    assert pp["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["member2"]
    assert pp["spec"]["conflictResolution"] == "Overwrite" and pp["spec"]["propagateDeps"] is True
    assert fleet.get("cm", "web-cfg")["data"] == {"index.html": "hello from web-cfg"}

    # member2's objects are taken over: marked, and otherwise as they were
    d = wait_for(lambda: (o := fleet.get("deploy", "web", member="member2")) and managed(o) and o, timeout=WAIT,
                 what="member2's web taken over")
    assert d["metadata"]["generation"] == before["metadata"]["generation"]
    assert d["spec"]["template"] == before["spec"]["template"]
    assert d["spec"]["replicas"] == before["spec"]["replicas"]
    assert d["metadata"]["uid"] == before["metadata"]["uid"]
    wait_for(lambda: managed(fleet.get("cm", "web-cfg", member="member2")), timeout=WAIT,
             what="member2's ConfigMap taken over")
    w = wait_for(lambda: (ws := works_for(fleet, "Deployment", "web")) and ws[0], timeout=WAIT, what="web's Work")
    assert wait_for(lambda: condition(works_for(fleet, "Deployment", "web")[0], "Applied")["status"] == "True",
                    timeout=WAIT, what="Applied")
    assert w["metadata"]["namespace"] == "karmada-es-member2"

    # the template shows the member's status
    wait_for(lambda: (fleet.get("deploy", "web").get("status") or {}).get("readyReplicas") == 3, timeout=WAIT,
             what="the template's status")
    # and a change of the template reaches it
    fleet.kubectl("set", "image", "deploy/web", "web=nginx:1.28")
    wait_for(lambda: fleet.get("deploy", "web", member="member2")["spec"]["template"]["spec"]["containers"][0]
             ["image"] == "nginx:1.28", timeout=WAIT, what="the new image in member2")
    assert fleet.get("deploy", "web", member="member2")["metadata"]["generation"] == \
        before["metadata"]["generation"] + 1


def test_bulk_promote_of_a_namespace_with_a_dry_run_first(fleet):
    fleet.kubectl("create", "namespace", "shop", member="member2")
    names = ["cart", "pay", "ship"]
    fleet.apply([deployment(n, ns="shop", replicas=2) for n in names], member="member2")
    before = {n: wait_for(lambda n=n: running(fleet, n, "shop"), timeout=WAIT, what=f"{n} running") for n in names}

    r = promote(fleet, "deployments", "--all", "-n", "shop", "--cluster", "member2", "--dry-run")
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    for n in names:
        assert ["shop", "Deployment", n, "template"] == rows[[x[2] if len(x) > 2 else "" for x in rows].index(n)][:4]
        assert any(x[:4] == ["shop", "PropagationPolicy", f"{n}-deployment", "policy"] for x in rows), r.stdout
    assert "3 workloads would be promoted from member2 (6 objects to write); nothing was written" in r.stdout
    # nothing written: not even the namespace
    assert fleet.get("namespace", "shop") is None
    assert (fleet.get("pp", "-n", "shop") or {}).get("items", []) == []

    r = promote(fleet, "deployments", "--all", "-n", "shop", "--cluster", "member2")
    assert r.returncode == 0, r.stderr
    assert "3 promoted from member2, 0 skipped, 0 failed" in r.stdout, r.stdout
    for n in names:
        d = wait_for(lambda n=n: (o := fleet.get("deploy", n, "-n", "shop", member="member2")) and managed(o) and o,
                     timeout=WAIT, what=f"{n} taken over")
        assert d["metadata"]["generation"] == before[n]["metadata"]["generation"]
        assert d["spec"]["template"] == before[n]["spec"]["template"]
    # promoting again skips what the control plane has
    r = promote(fleet, "deployments", "--all", "-n", "shop", "--cluster", "member2")
    assert r.returncode == 0 and "0 promoted from member2, 3 skipped" in r.stdout, (r.stdout, r.stderr)


def test_release_leaves_the_member_objects_running_and_promote_takes_them_again(fleet):
    fleet.apply([configmap("rel-cfg"), deployment("rel", replicas=2, cm="rel-cfg")], member="member2")
    before = wait_for(lambda: running(fleet, "rel"), timeout=WAIT, what="rel running")
    assert promote(fleet, "deployment", "rel", "--cluster", "member2").returncode == 0
    wait_for(lambda: managed(fleet.get("deploy", "rel", member="member2")), timeout=WAIT, what="rel taken over")
    wait_for(lambda: managed(fleet.get("cm", "rel-cfg", member="member2")), timeout=WAIT, what="rel-cfg taken over")

    r = fleet.ctl("release", "deployment/rel", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    assert "resourcebinding/rel-deployment released" in r.stdout
    assert "resourcebinding/rel-cfg-configmap released" in r.stdout
    d = fleet.get("deploy", "rel", member="member2")
    assert marks(d) == [] and marks(fleet.get("cm", "rel-cfg", member="member2")) == []
    assert d["metadata"]["generation"] == before["metadata"]["generation"]

    # promote with the template still there lifts the release: taken over again, then released again
    r = promote(fleet, "deployment", "rel", "--cluster", "member2")
    assert r.returncode == 0 and "its release is lifted" in r.stdout, (r.stdout, r.stderr)
    wait_for(lambda: managed(fleet.get("deploy", "rel", member="member2")) and
             managed(fleet.get("cm", "rel-cfg", member="member2")), timeout=WAIT, what="rel taken over after the lift")
    assert fleet.ctl("release", "deployment/rel", "--wait", "--timeout", "20s").returncode == 0
    assert marks(fleet.get("deploy", "rel", member="member2")) == []

    # deleting template, policy and the ConfigMap's template leaves the member's objects
    fleet.kubectl("delete", "deploy", "rel")
    fleet.kubectl("delete", "pp", "rel-deployment")
    fleet.kubectl("delete", "cm", "rel-cfg")
    wait_for(lambda: not works_for(fleet, "Deployment", "rel") and not works_for(fleet, "ConfigMap", "rel-cfg"),
             timeout=WAIT, what="the Works to go")
    time.sleep(1)
    d = running(fleet, "rel")
    assert d and marks(d) == [] and d["metadata"]["generation"] == before["metadata"]["generation"]
    assert d["metadata"]["uid"] == before["metadata"]["uid"]
    cm = fleet.get("cm", "rel-cfg", member="member2")
    assert cm and marks(cm) == []

    # and promote takes them over again
    r = promote(fleet, "deployment", "rel", "--cluster", "member2")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: managed(fleet.get("deploy", "rel", member="member2")), timeout=WAIT, what="rel taken again")
    wait_for(lambda: managed(fleet.get("cm", "rel-cfg", member="member2")), timeout=WAIT, what="rel-cfg taken again")
    assert fleet.get("deploy", "rel", member="member2")["metadata"]["generation"] == \
        before["metadata"]["generation"]


def cm_policy(name, ns, annotations=None):
    md = {"name": name, "namespace": ns}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": md,
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": name}],
                     "placement": {"clusterAffinity": {"clusterNames": ["member2"]}},
                     "conflictResolution": "Overwrite"}}


def test_overwrite_adopts_only_what_the_allow_list_admits(fleet):
    for ns in ("closed", "open"):
        fleet.kubectl("create", "namespace", ns, member="member2")
        fleet.kubectl("create", "namespace", ns)
    fleet.kubectl("label", "namespace", "open", f"{ADOPT}=true")
    fleet.apply([configmap("denied", "closed", {"k": "member"}), configmap("by-policy", "closed", {"k": "member"}),
                 configmap("by-ns", "open", {"k": "member"})], member="member2")
    fleet.apply([configmap("denied", "closed", {"k": "cp"}), cm_policy("denied", "closed"),
                 configmap("by-policy", "closed", {"k": "cp"}), cm_policy("by-policy", "closed", {ADOPT: "true"}),
                 configmap("by-ns", "open", {"k": "cp"}), cm_policy("by-ns", "open")])

    def data(name, ns):
        return (fleet.get("cm", name, "-n", ns, member="member2") or {}).get("data")
    wait_for(lambda: data("by-ns", "open") == {"k": "cp"}, timeout=WAIT, what="by-ns adopted (namespace label)")
    wait_for(lambda: data("by-policy", "closed") == {"k": "cp"}, timeout=WAIT, what="by-policy adopted (annotation)")

    def refused():
        ws = works_for(fleet, "ConfigMap", "denied")
        return ws and condition(ws[0], "Applied")
    c = wait_for(refused, timeout=WAIT, what="the Work of denied to say it was refused")
    assert c["status"] == "False" and "allow-list" in c["message"] and ADOPT in c["message"], c
    assert data("denied", "closed") == {"k": "member"}
    assert not managed(fleet.get("cm", "denied", "-n", "closed", member="member2"))

    # admitting the policy lets it adopt
    fleet.patch("pp", "denied", "-n", "closed", patch={"metadata": {"annotations": {ADOPT: "true"}}})
    wait_for(lambda: data("denied", "closed") == {"k": "cp"}, timeout=WAIT, what="denied adopted once admitted")


def test_bad_input_says_what_in_one_line_and_writes_nothing(fleet):
    r = promote(fleet, "deployment", "nothere", "--cluster", "member2")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert 'deployments "nothere" not found in namespace default in cluster member2' in r.stderr
    assert fleet.get("pp", "nothere-deployment") is None

    r = promote(fleet, "propagationpolicy", "pp-on-member", "--cluster", "member2")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "cannot be promoted" in r.stderr and "no resource templates of that kind" in r.stderr
    assert fleet.get("pp", "pp-on-member") is None

    r = promote(fleet, "frobnicators", "x", "--cluster", "member2")
    assert r.returncode == 1 and 'no resource type "frobnicators"' in r.stderr, r.stderr
    r = promote(fleet, "deployment", "web", "--cluster", "nosuch")
    assert r.returncode == 1 and 'cluster "nosuch" is not joined' in r.stderr, r.stderr
    r = promote(fleet, "deployment", "web")
    assert r.returncode == 2 and "--cluster" in r.stderr
    r = fleet.ctl("release", "deployment/nothere")
    assert r.returncode == 1 and 'not found on the control plane' in r.stderr, r.stderr
