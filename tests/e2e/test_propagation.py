"""Propagation end to end on `flotilla up`, with kubectl only: policies, the detector, the
scheduler, bindings, Works, overrides, dependencies and status coming back to the template.

One fleet (a control plane and three simulated members) serves the whole module; each test
uses its own object names and cleans up after itself.
"""
import json
import os
import subprocess
import time

from conftest import KUBECTL, wait_for


def deployment(name, replicas, image="nginx:1.25", volumes=None):
    pod = {"containers": [{"name": "app", "image": image,
                           "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    if volumes:
        pod["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


def weighted_policy(name, target, weights, **extra):
    spec = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": target}],
            "placement": {"clusterAffinity": {"clusterNames": sorted(weights)},
                          "replicaScheduling": {
                              "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                              "weightPreference": {"staticWeightList": [
                                  {"targetCluster": {"clusterNames": [c]}, "weight": w}
                                  for c, w in sorted(weights.items())]}}}}
    spec.update(extra)
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def member_replicas(fleet, name, member):
    d = fleet.get("deploy", name, member=member)
    return d["spec"]["replicas"] if d else None


def test_a_scale_that_leaves_one_members_share_alone_still_completes_the_rollout(fleet):
    """6 -> 7 replicas at 1:2 leaves member1 at 2: its Work must still carry the template's new
    generation, or the template's observedGeneration never catches up."""
    fleet.apply([deployment("share", 6), weighted_policy("share", "share", {"member1": 1, "member2": 2})])
    wait_for(lambda: member_replicas(fleet, "share", "member1") == 2 and member_replicas(fleet, "share", "member2") == 4,
             timeout=30, what="2 and 4 replicas")
    fleet.kubectl("rollout", "status", "deployment/share", "--timeout=60s", timeout=90)
    fleet.kubectl("scale", "deployment/share", "--replicas=7")
    wait_for(lambda: member_replicas(fleet, "share", "member2") == 5, timeout=30, what="5 replicas in member2")
    assert member_replicas(fleet, "share", "member1") == 2
    fleet.kubectl("rollout", "status", "deployment/share", "--timeout=60s", timeout=90)
    top = fleet.get("deploy", "share")
    assert top["status"]["observedGeneration"] == top["metadata"]["generation"]
    assert top["status"]["readyReplicas"] == 7
    fleet.kubectl("delete", "deploy", "share")
    fleet.kubectl("delete", "pp", "share")


def test_divided_weights_overrides_status_and_deletion(fleet):
    """The issue's acceptance: 6 replicas at 1:2 with an image override for member1, 6/6 on
    the control plane, 1:1 moves exactly one replica, deletion reaches every member."""
    fleet.apply([
        deployment("web", 6),
        weighted_policy("web", "web", {"member1": 1, "member2": 2}),
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
         "metadata": {"name": "web-registry", "namespace": "default"},
         "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                  "overrideRules": [{"targetCluster": {"clusterNames": ["member1"]},
                                     "overriders": {"imageOverrider": [
                                         {"component": "Registry", "operator": "replace",
                                          "value": "registry.example.io"}]}}]}},
    ])
    wait_for(lambda: member_replicas(fleet, "web", "member1") == 2 and member_replicas(fleet, "web", "member2") == 4,
             timeout=30, what="2 replicas in member1 and 4 in member2")
    m1 = fleet.get("deploy", "web", member="member1")
    m2 = fleet.get("deploy", "web", member="member2")
    assert m1["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.io/nginx:1.25"
    assert m2["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert fleet.get("deploy", "web", member="member3") is None

    # the control plane tells the truth about the fleet, as kubectl reads it
    fleet.kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    fleet.kubectl("wait", "--for=condition=Available", "deployment/web", "--timeout=60s", timeout=90)
    top = fleet.get("deploy", "web")
    assert top["status"]["readyReplicas"] == 6 and top["status"]["availableReplicas"] == 6
    rb = fleet.get("rb", "web-deployment")
    assert {i["clusterName"] for i in rb["status"]["aggregatedStatus"]} == {"member1", "member2"}
    assert all(i["applied"] for i in rb["status"]["aggregatedStatus"])
    full = [c for c in rb["status"]["conditions"] if c["type"] == "FullyApplied"][0]
    assert full["status"] == "True"
    sched = [c for c in rb["status"]["conditions"] if c["type"] == "Scheduled"][0]
    assert sched["status"] == "True" and sched["reason"] == "Success"

    # 1:2 -> 1:1 moves exactly one replica
    fleet.kubectl("patch", "pp", "web", "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/placement/replicaScheduling/weightPreference/staticWeightList/1/weight",
         "value": 1}]))
    wait_for(lambda: member_replicas(fleet, "web", "member1") == 3 and member_replicas(fleet, "web", "member2") == 3,
             timeout=30, what="3 and 3 replicas")

    # events say why
    events = fleet.get("events")["items"]
    reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in events if e["involvedObject"]["name"] in
               ("web", "web-deployment")}
    assert ("Deployment", "ApplyPolicySucceed") in reasons, reasons
    assert ("ResourceBinding", "ScheduleBindingSucceed") in reasons, reasons
    assert ("ResourceBinding", "SyncWorkSucceed") in reasons, reasons
    filtered = [e["message"] for e in events if e["reason"] == "ClusterFiltered" and
                e["involvedObject"]["name"] == "web-deployment"]
    assert any("member3" in m and "ClusterAffinity" in m for m in filtered), filtered

    fleet.kubectl("delete", "deploy", "web")
    wait_for(lambda: all(fleet.get("deploy", "web", member=m) is None for m in ("member1", "member2")),
             timeout=30, what="web gone from every member")
    wait_for(lambda: fleet.get("rb", "web-deployment") is None, timeout=15, what="the binding gone")
    works = fleet.get("works", "-A")["items"]
    assert not [w for w in works if w["metadata"]["name"].startswith("web-")], works
    fleet.kubectl("delete", "pp", "web")
    fleet.kubectl("delete", "op", "web-registry")


def json_stream(text):
    """The JSON documents of a `kubectl get -w -o json` output, one after another."""
    dec, docs, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)


def test_binding_status_waits_for_its_works_to_report(fleet):
    """Nothing is aggregated onto a binding before one of its Works has a status (Karmada's
    binding status controller skips unscheduled bindings and new Works): every version of the
    binding that carries aggregatedStatus has a Work applied in it."""
    out = open(os.path.join(fleet.dir, "rb-watch.json"), "w+")
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", fleet.kubeconfig, "get", "rb",
                              "-w", "-o", "json", "--request-timeout=0"], stdout=out, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)  # the watch is open before the binding exists
        fleet.apply([deployment("quiet", 2), weighted_policy("quiet", "quiet", {"member1": 1, "member2": 1})])
        wait_for(lambda: (rb := fleet.get("rb", "quiet-deployment")) and any(
            c["type"] == "FullyApplied" and c["status"] == "True" for c in rb.get("status", {}).get("conditions", [])),
            timeout=30, what="the binding FullyApplied")
        time.sleep(1)
    finally:
        watch.terminate()
        watch.wait(timeout=10)
    out.seek(0)
    versions = [d for d in json_stream(out.read()) if d.get("metadata", {}).get("name") == "quiet-deployment"]
    out.close()
    aggregated = [v["status"]["aggregatedStatus"] for v in versions if "aggregatedStatus" in v.get("status", {})]
    assert aggregated, f"no version with aggregatedStatus among {len(versions)}"
    assert all(any(i.get("applied") for i in items) for items in aggregated), aggregated
    fleet.kubectl("delete", "deploy", "quiet")
    fleet.kubectl("delete", "pp", "quiet")
    wait_for(lambda: fleet.get("deploy", "quiet", member="member1") is None, timeout=30, what="quiet gone")


def test_policy_deletion_releases_the_template_but_keeps_it_in_members(fleet):
    fleet.apply([deployment("keep", 2), weighted_policy("keep", "keep", {"member1": 1})])
    wait_for(lambda: member_replicas(fleet, "keep", "member1") == 2, timeout=30, what="keep in member1")
    d = fleet.get("deploy", "keep")
    assert d["metadata"]["labels"].get("propagationpolicy.karmada.io/permanent-id")
    assert d["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] == "keep"
    fleet.kubectl("delete", "pp", "keep")
    wait_for(lambda: "propagationpolicy.karmada.io/permanent-id" not in
             fleet.get("deploy", "keep")["metadata"].get("labels", {}), timeout=15, what="the claim removed")
    rb = fleet.get("rb", "keep-deployment")
    assert rb is not None and "propagationpolicy.karmada.io/permanent-id" not in rb["metadata"].get("labels", {})
    assert member_replicas(fleet, "keep", "member1") == 2
    # released: the template's own edits no longer reach the members
    fleet.kubectl("scale", "deploy", "keep", "--replicas=5")
    time.sleep(2)
    assert member_replicas(fleet, "keep", "member1") == 2
    fleet.kubectl("delete", "deploy", "keep")
    wait_for(lambda: fleet.get("deploy", "keep", member="member1") is None, timeout=30, what="keep gone")


def test_a_work_edited_by_hand_is_put_back(fleet):
    """The binding controller owns what it renders into a Work: a user's edit of the manifest
    is undone (and its own writes coming back are not taken for edits)."""
    fleet.apply([deployment("tamper", 2), weighted_policy("tamper", "tamper", {"member1": 1})])
    wait_for(lambda: member_replicas(fleet, "tamper", "member1") == 2, timeout=30, what="tamper in member1")

    def work():
        works = fleet.get("works", "-n", "karmada-es-member1") or {"items": []}
        for w in works["items"]:
            m = w["spec"]["workload"]["manifests"][0]
            if m["kind"] == "Deployment" and m["metadata"]["name"] == "tamper":
                return w
        return None

    w = work()
    assert w is not None
    gen = w["metadata"]["generation"]
    fleet.patch("work", w["metadata"]["name"], "-n", "karmada-es-member1", kind="json",
                patch=[{"op": "replace", "path": "/spec/workload/manifests/0/spec/replicas", "value": 9}])
    wait_for(lambda: work()["metadata"]["generation"] >= gen + 2 and
             work()["spec"]["workload"]["manifests"][0]["spec"]["replicas"] == 2,
             timeout=15, what="the Work's manifest put back to 2 replicas")
    assert member_replicas(fleet, "tamper", "member1") in (2, 9)
    wait_for(lambda: member_replicas(fleet, "tamper", "member1") == 2, timeout=15, what="member1 back at 2")
    # its labels too: an edit of the Work's metadata alone is undone as well
    label = "resourcebinding.karmada.io/permanent-id"
    was = work()["metadata"]["labels"][label]
    fleet.patch("work", w["metadata"]["name"], "-n", "karmada-es-member1", kind="merge",
                patch={"metadata": {"labels": {label: "edited"}}})
    wait_for(lambda: work()["metadata"]["labels"][label] == was, timeout=15, what="the Work's label put back")
    fleet.kubectl("delete", "deploy", "tamper")
    fleet.delete("pp", "tamper")
    wait_for(lambda: fleet.get("deploy", "tamper", member="member1") is None, timeout=30, what="tamper gone")


def test_higher_priority_policy_wins_and_unschedulable_placement_says_why(fleet):
    low = weighted_policy("prio-low", "prio", {"member1": 1})
    high = weighted_policy("prio-high", "prio", {"member2": 1}, priority=10)
    fleet.apply([low, high, deployment("prio", 1)])
    wait_for(lambda: member_replicas(fleet, "prio", "member2") == 1, timeout=30, what="prio in member2")
    assert fleet.get("deploy", "prio")["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] == "prio-high"
    assert fleet.get("deploy", "prio", member="member1") is None

    # a placement no cluster satisfies: Scheduled=False with Karmada's reason
    fleet.apply([deployment("nofit", 1), weighted_policy("nofit", "nofit", {"member9": 1})])

    def cond():
        rb = fleet.get("rb", "nofit-deployment")
        c = [c for c in (rb or {}).get("status", {}).get("conditions", []) if c["type"] == "Scheduled"]
        return c[0] if c else None
    c = wait_for(cond, timeout=20, what="a Scheduled condition")
    assert c["status"] == "False" and c["reason"] == "NoClusterFit", c
    for name in ("prio", "nofit"):
        fleet.kubectl("delete", "deploy", name)
    for name in ("prio-low", "prio-high", "nofit"):
        fleet.kubectl("delete", "pp", name)


def test_propagate_deps_sends_a_mounted_configmap_along(fleet):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deps-conf", "namespace": "default"},
          "data": {"k": "v"}}
    dep = deployment("deps", 2, volumes=[{"name": "conf", "configMap": {"name": "deps-conf"}}])
    fleet.apply([cm, dep, weighted_policy("deps", "deps", {"member2": 1, "member3": 1}, propagateDeps=True)])
    wait_for(lambda: all(fleet.get("cm", "deps-conf", member=m) for m in ("member2", "member3")), timeout=30,
             what="the ConfigMap in member2 and member3")
    assert fleet.get("cm", "deps-conf", member="member1") is None
    rb = fleet.get("rb", "deps-conf-configmap")
    assert rb["spec"]["requiredBy"][0]["name"] == "deps-deployment", rb["spec"]
    assert sorted(c["name"] for c in rb["spec"]["requiredBy"][0]["clusters"]) == ["member2", "member3"]
    # a change of the ConfigMap follows too
    fleet.kubectl("patch", "cm", "deps-conf", "-p", '{"data":{"k":"v2"}}')
    wait_for(lambda: (fleet.get("cm", "deps-conf", member="member3") or {}).get("data", {}).get("k") == "v2",
             timeout=30, what="the new data in member3")
    # the workload stops referring to it: it leaves the members
    fleet.kubectl("patch", "deploy", "deps", "--type=json", "-p",
                  '[{"op":"remove","path":"/spec/template/spec/volumes"}]')
    wait_for(lambda: all(fleet.get("cm", "deps-conf", member=m) is None for m in ("member2", "member3")),
             timeout=30, what="the ConfigMap gone from the members")
    wait_for(lambda: fleet.get("rb", "deps-conf-configmap") is None, timeout=15, what="the attached binding gone")
    fleet.kubectl("delete", "deploy", "deps")
    fleet.kubectl("delete", "cm", "deps-conf")
    fleet.kubectl("delete", "pp", "deps")


def test_crd_and_its_custom_resources_propagate_with_cluster_policy(fleet):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets.example.io"},
           "spec": {"group": "example.io", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    cpp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
           "metadata": {"name": "gadgets"},
           "spec": {"resourceSelectors": [
               {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "name": "gadgets.example.io"},
               {"apiVersion": "example.io/v1", "kind": "Gadget"}],
               "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
                             "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}
    fleet.apply([crd, cpp])
    wait_for(lambda: all(fleet.get("crd", "gadgets.example.io", member=m) for m in ("member1", "member2", "member3")),
             timeout=30, what="the CRD in every member")
    assert fleet.get("crb", "gadgets.example.io-customresourcedefinition") is not None
    gadget = {"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": "default"},
              "spec": {"size": 3}}
    wait_for(lambda: fleet.kubectl("apply", "-f", "-", input=json.dumps(gadget), check=False).returncode == 0,
             timeout=15, what="the Gadget kind served on the control plane")
    wait_for(lambda: all((fleet.get("gadget", "g1", member=m) or {}).get("spec", {}).get("size") == 3
                         for m in ("member1", "member2", "member3")), timeout=30, what="g1 in every member")
    fleet.kubectl("delete", "gadget", "g1")
    wait_for(lambda: all(fleet.get("gadget", "g1", member=m) is None for m in ("member1", "member2", "member3")),
             timeout=30, what="g1 gone from every member")


def test_policy_defaults_are_written_and_zero_replicas_are_omitted(fleet):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain", "namespace": "default"},
          "data": {"a": "b"}}
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "plain", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "plain"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["member1"]},
                                 "replicaScheduling": {}}}}
    fleet.apply([cm, pp])
    spec = fleet.get("pp", "plain")["spec"]
    # what Karmada's CRD defaults and admission fill in
    assert spec["priority"] == 0 and spec["preemption"] == "Never"
    assert spec["conflictResolution"] == "Abort" and spec["schedulerName"] == "default-scheduler"
    assert spec["placement"]["replicaScheduling"]["replicaSchedulingType"] == "Divided"
    assert spec["resourceSelectors"][0]["namespace"] == "default"
    wait_for(lambda: fleet.get("cm", "plain", member="member1"), timeout=30, what="plain in member1")
    rb = fleet.get("rb", "plain-configmap")
    assert rb["spec"]["clusters"] == [{"name": "member1"}], rb["spec"]["clusters"]  # no replicas for a ConfigMap
    assert rb["spec"]["conflictResolution"] == "Abort"
    fleet.kubectl("delete", "cm", "plain")
    fleet.kubectl("delete", "pp", "plain")


def test_namespaces_exist_in_every_member_unless_skipped(fleet):
    fleet.kubectl("create", "namespace", "team-a")
    fleet.kubectl("create", "namespace", "team-quiet")
    fleet.kubectl("label", "namespace", "team-quiet", "namespace.karmada.io/skip-auto-propagation=true")
    wait_for(lambda: all(fleet.get("ns", "team-a", member=m) for m in ("member1", "member2", "member3")),
             timeout=30, what="team-a in every member")
    assert all(fleet.get("ns", "team-quiet", member=m) is None for m in ("member1", "member2", "member3"))
    # a workload propagated into it lands there
    d = deployment("in-team", 1)
    d["metadata"]["namespace"] = "team-a"
    pp = weighted_policy("in-team", "in-team", {"member2": 1})
    pp["metadata"]["namespace"] = "team-a"
    fleet.apply([d, pp])
    wait_for(lambda: (fleet.get("deploy", "in-team", "-n", "team-a", member="member2") or {}).get("status", {})
             .get("readyReplicas") == 1, timeout=30, what="in-team ready in member2")
    fleet.kubectl("delete", "namespace", "team-a", timeout=120)
    wait_for(lambda: all(fleet.get("ns", "team-a", member=m) is None for m in ("member1", "member2", "member3")),
             timeout=60, what="team-a gone from every member")
    fleet.kubectl("delete", "namespace", "team-quiet")
