"""The resource interpreter in the server, end to end on `flotilla up`, with kubectl only.

Bundled customizations answer for CRDs Flotilla knows (OpenKruise CloneSet, Argo Workflow,
Flink's FlinkDeployment, whose job and task managers are components the scheduler fits);
a user's own ResourceInterpreterCustomization takes effect on bindings that already exist;
a runaway script is stopped, reported, and does not slow the rest of the fleet down.

The simulated members run no CloneSet or Workflow controller: the tests play that part and
write the members' `status` (and, for a Workflow, `spec.suspend`) themselves. One fleet
serves the module; each test uses its own objects and removes them. Every wait is bounded.
"""
import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import KUBECTL, free_port, wait_for

MEMBERS = ("member1", "member2")


def crd(group, version, kind, plural, status_subresource):
    v = {"name": version, "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    if status_subresource:
        v["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [v]}}


CRDS = [
    # OpenKruise CloneSet: status through its subresource, as the real CRD
    crd("apps.kruise.io", "v1alpha1", "CloneSet", "clonesets", True),
    # Argo Workflow: no status subresource (the workflow controller writes the object)
    crd("argoproj.io", "v1alpha1", "Workflow", "workflows", False),
    # kinds of our own for the runaway customizations and for a webhook
    crd("example.io", "v1", "Spinner", "spinners", True),
    crd("example.io", "v1", "Gauge", "gauges", True),
    # Flink operator's FlinkDeployment: a job manager and task managers (components)
    crd("flink.apache.org", "v1beta1", "FlinkDeployment", "flinkdeployments", True),
]


def policy(name, api_version, kind, target, clusters, weights=None):
    rs = {"replicaSchedulingType": "Duplicated"}
    if weights:
        rs = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
              "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": [c]}, "weight": w}
                                                        for c, w in sorted(weights.items())]}}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": api_version, "kind": kind, "name": target}],
                     "placement": {"clusterAffinity": {"clusterNames": list(clusters)}, "replicaScheduling": rs}}}


def customization(name, api_version, kind, **rules):
    return {"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
            "metadata": {"name": name},
            "spec": {"target": {"apiVersion": api_version, "kind": kind},
                     "customizations": {rule: {"luaScript": script} for rule, script in rules.items()}}}


def cloneset(name, replicas):
    labels = {"app": name}
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.25", "resources": {
                                      "requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}}


def events(fleet, kind, name, reason, ns=None):
    """Events about (kind, name) with reason, across namespaces."""
    out = fleet.get("events", "-A") or {"items": []}
    return [e for e in out["items"] if e["involvedObject"].get("kind") == kind and
            e["involvedObject"].get("name") == name and e["reason"] == reason and
            (ns is None or e["involvedObject"].get("namespace") == ns)]


def member_obj(fleet, resource, name, member):
    return fleet.get(resource, name, member=member)


def write_cloneset_status(fleet, name, member, ready):
    """Act as the member's CloneSet controller: status for the current generation."""
    obj = member_obj(fleet, "clonesets.apps.kruise.io", name, member)
    n = obj["spec"]["replicas"]
    status = {"observedGeneration": obj["metadata"]["generation"], "replicas": n, "updatedReplicas": n,
              "readyReplicas": ready, "availableReplicas": ready, "updatedReadyReplicas": ready,
              "updateRevision": name + "-1", "currentRevision": name + "-1"}
    fleet.kubectl("patch", "clonesets.apps.kruise.io", name, "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": status}), member=member)


def binding_health(fleet, binding):
    rb = fleet.get("rb", binding) or {}
    return {i["clusterName"]: i.get("health") for i in rb.get("status", {}).get("aggregatedStatus", [])}


@pytest.fixture(scope="module")
def crds(fleet):
    """The three CRDs on the control plane and, through a ClusterPropagationPolicy, in
    member1 and member2."""
    cpp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
           "metadata": {"name": "interpreter-crds"},
           "spec": {"resourceSelectors": [{"apiVersion": "apiextensions.k8s.io/v1",
                                           "kind": "CustomResourceDefinition", "name": c["metadata"]["name"]}
                                          for c in CRDS],
                    "placement": {"clusterAffinity": {"clusterNames": list(MEMBERS)}}}}
    fleet.apply(CRDS + [cpp])
    for c in CRDS:
        plural = c["spec"]["names"]["plural"] + "." + c["spec"]["group"]
        wait_for(lambda: fleet.kubectl("get", plural, check=False).returncode == 0, timeout=30,
                 what=f"{plural} served on the control plane")
        wait_for(lambda: all(fleet.kubectl("get", plural, member=m, check=False).returncode == 0 for m in MEMBERS),
                 timeout=60, what=f"{plural} served in the members")
    yield


GI = 1 << 30


def quantity_bytes(q):
    """A memory quantity as the simulated members write it ("96Gi", "100663296Ki", bytes)."""
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "": 1}
    for u in ("Ki", "Mi", "Gi", "Ti", ""):
        if q.endswith(u) and q[:len(q) - len(u)].isdigit():
            return int(q[:len(q) - len(u)]) * units[u]
    raise AssertionError("unexpected memory quantity %r" % q)


def flink(name):
    """A Flink job whose job manager (1 cpu, 20Gi) and 4 task managers (5 cpu, 1Gi each)
    differ: one whole job is 21 cpu, 24Gi and 5 pods."""
    return {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"image": "flink:1.18", "flinkVersion": "v1_18", "serviceAccount": "flink",
                     "jobManager": {"replicas": 1, "resource": {"cpu": 1, "memory": "20Gi"}},
                     "taskManager": {"replicas": 4, "resource": {"cpu": 5, "memory": "1Gi"}},
                     "job": {"jarURI": "local:///opt/flink/examples/streaming/WordCount.jar", "parallelism": 4,
                             "upgradeMode": "stateless"}}}


ONE_POD_JOB = """
function GetComponents(desiredObj)
  return {{name = "job", replicas = 1, replicaRequirements = {resourceRequest = {cpu = 0.1}}}}
end
"""


def test_flink_job_goes_only_where_its_job_manager_and_task_managers_both_fit(fleet, crds):
    """The bundled componentResource rule puts the job manager and the task managers on the
    binding as components; placed in one cluster (spread 1..1, dynamic weights), the job goes
    to the member that holds a whole set. member1 has the cpu for everything and the memory
    for the job manager or the task managers, not both (22Gi free of 24Gi needed); member2
    has room. One replica's worth of the largest requests times five (25 cpu) fits nowhere,
    which is what the scheduler estimated before components."""
    s = fleet.get("cluster", "member1")["status"]["resourceSummary"]
    assert s["allocatable"]["cpu"] == "24", s
    mem = quantity_bytes(s["allocatable"]["memory"])
    hog = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "memhog", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
               "requests": {"cpu": "1", "memory": "%dKi" % ((mem - 22 * GI) >> 10)}}}]}}
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "wordcount", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                                          "name": "wordcount"}],
                   "placement": {"clusterAffinity": {"clusterNames": list(MEMBERS)},
                                 "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
                                 "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                       "replicaDivisionPreference": "Weighted",
                                                       "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}}}
    try:
        fleet.apply(hog, member="member1")
        wait_for(lambda: quantity_bytes((fleet.get("cluster", "member1")["status"]["resourceSummary"].get("allocated")
                                         or {}).get("memory") or "0") >= mem - 22 * GI, timeout=30,
                 what="member1's resourceSummary to show the memory hog")
        fleet.apply([flink("wordcount"), pp])
        rb = wait_for(lambda: (lambda b: b if b and b["spec"].get("clusters") else None)(fleet.get("rb",
                                                                                                  "wordcount-flinkdeployment")),
                      timeout=60, what="the FlinkDeployment's binding scheduled")
        # the components, by name, with their own requests; no single-template replicas
        comps = {c["name"]: c for c in rb["spec"]["components"]}
        assert sorted(comps) == ["jobmanager", "taskmanager"], rb["spec"]
        assert comps["jobmanager"]["replicas"] == 1 and comps["taskmanager"]["replicas"] == 4
        assert comps["jobmanager"]["replicaRequirements"]["resourceRequest"] == {"cpu": "1", "memory": "20Gi"}
        assert comps["taskmanager"]["replicaRequirements"]["resourceRequest"] == {"cpu": "5", "memory": "1Gi"}
        assert "replicas" not in rb["spec"] and "replicaRequirements" not in rb["spec"], rb["spec"]
        assert [c["name"] for c in rb["spec"]["clusters"]] == ["member2"], rb["spec"]["clusters"]
        wait_for(lambda: member_obj(fleet, "flinkdeployments.flink.apache.org", "wordcount", "member2") is not None,
                 timeout=60, what="the job in member2")
        assert member_obj(fleet, "flinkdeployments.flink.apache.org", "wordcount", "member1") is None
        # the whole job, unrevised: a Flink job is not divided
        got = member_obj(fleet, "flinkdeployments.flink.apache.org", "wordcount", "member2")
        assert got["spec"]["taskManager"]["replicas"] == 4

        # a user's componentResource rule is accepted, compiled (a broken one is reported
        # and kept out) and wins over the bundled one on the existing binding
        fleet.apply(customization("flink-mine", "flink.apache.org/v1beta1", "FlinkDeployment",
                                  componentResource="function GetComponents(o)\n  return {\nend"))
        bad = wait_for(lambda: events(fleet, "ResourceInterpreterCustomization", "flink-mine",
                                      "LoadCustomizationFailed"), timeout=15, what="a LoadCustomizationFailed event")
        assert "componentResource" in bad[0]["message"], bad[0]["message"]
        fleet.apply(customization("flink-mine", "flink.apache.org/v1beta1", "FlinkDeployment",
                                  componentResource=ONE_POD_JOB))
        rb = wait_for(lambda: (lambda b: b if [c["name"] for c in b["spec"].get("components", [])] == ["job"] else None)(
            fleet.get("rb", "wordcount-flinkdeployment")), timeout=30, what="the user's components on the binding")
        assert rb["spec"]["components"] == [{"name": "job", "replicas": 1, "replicaRequirements": {
            "resourceRequest": {"cpu": "100m"}}}], rb["spec"]
    finally:
        fleet.delete("resourceinterpretercustomization", "flink-mine")
        fleet.kubectl("delete", "flinkdeployments.flink.apache.org", "wordcount", "--ignore-not-found", check=False)
        fleet.delete("pp", "wordcount")
        fleet.delete("pod", "memhog", member="member1")
    wait_for(lambda: member_obj(fleet, "flinkdeployments.flink.apache.org", "wordcount", "member2") is None,
             timeout=30, what="wordcount gone from member2")


def test_cloneset_divided_by_the_bundled_customization_and_status_aggregated(fleet, crds):
    """10 replicas at 1:1: each member gets 5 from the bundled ReviseReplica; the members'
    statuses (written by the test as their controller) sum up on the template."""
    fleet.apply([cloneset("web", 10),
                 policy("web", "apps.kruise.io/v1alpha1", "CloneSet", "web", MEMBERS, {"member1": 1, "member2": 1})])
    wait_for(lambda: all((member_obj(fleet, "clonesets.apps.kruise.io", "web", m) or {}).get("spec", {})
                         .get("replicas") == 5 for m in MEMBERS), timeout=60, what="5 replicas in each member")
    rb = fleet.get("rb", "web-cloneset")
    # GetReplicas from the bundled rule: the count and one replica's requests
    assert rb["spec"]["replicas"] == 10
    assert rb["spec"]["replicaRequirements"]["resourceRequest"] == {"cpu": "100m", "memory": "64Mi"}
    assert sorted((c["name"], c["replicas"]) for c in rb["spec"]["clusters"]) == [("member1", 5), ("member2", 5)]

    for m in MEMBERS:
        write_cloneset_status(fleet, "web", m, ready=5)
    top = wait_for(lambda: (lambda t: t if t.get("status", {}).get("readyReplicas") == 10 else None)(
        fleet.get("clonesets.apps.kruise.io", "web")), timeout=30, what="10 ready replicas on the template")
    st = top["status"]
    assert st["replicas"] == 10 and st["availableReplicas"] == 10 and st["updatedReplicas"] == 10
    # every member runs the current template generation: observedGeneration caught up
    assert st["observedGeneration"] == top["metadata"]["generation"]
    wait_for(lambda: binding_health(fleet, "web-cloneset") == {"member1": "Healthy", "member2": "Healthy"},
             timeout=30, what="both members healthy by the bundled rule")
    # the members' reflected status carries the generation bookkeeping of the bundled rule
    items = fleet.get("rb", "web-cloneset")["status"]["aggregatedStatus"]
    assert all(i["status"]["readyReplicas"] == 5 and "resourceTemplateGeneration" in i["status"] for i in items)

    fleet.kubectl("delete", "clonesets.apps.kruise.io", "web")
    fleet.kubectl("delete", "pp", "web")
    wait_for(lambda: all(member_obj(fleet, "clonesets.apps.kruise.io", "web", m) is None for m in MEMBERS),
             timeout=30, what="web gone from the members")


def watch_member(fleet, resource, name, member):
    """Start `kubectl get -w` on a member object; returns (process, lines list filled by a thread)."""
    p = subprocess.Popen([KUBECTL, "--kubeconfig", f"{fleet.dir}/members/{member}.kubeconfig", "get", resource,
                          name, "--watch-only", "--output-watch-events", "-o",
                          "jsonpath={.type} {.object.metadata.resourceVersion}{\"\\n\"}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []

    def read():
        for line in p.stdout:
            if line.strip():
                lines.append(line.strip())
    threading.Thread(target=read, daemon=True).start()
    return p, lines


def test_a_status_write_on_a_kind_without_the_subresource_rewrites_no_work(fleet, crds):
    """A Workflow has no status subresource: every status write (our own aggregation's) moves
    its generation. Its Works are rewritten only when what they deliver changes."""
    wf = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
          "metadata": {"name": "gen-etl", "namespace": "default"},
          "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "busybox"}}]}}
    fleet.apply([wf, policy("gen-etl", "argoproj.io/v1alpha1", "Workflow", "gen-etl", ["member1", "member2"])])
    for m in ("member1", "member2"):
        wait_for(lambda: member_obj(fleet, "workflows.argoproj.io", "gen-etl", m), timeout=60, what=f"gen-etl in {m}")

    def works():
        """{cluster: (Work generation, the template generation its manifest carries)}"""
        out = {}
        for m in ("member1", "member2"):
            for w in (fleet.get("work", "-n", f"karmada-es-{m}") or {}).get("items", []):
                mf = w["spec"]["workload"]["manifests"][0]
                if mf["kind"] == "Workflow" and mf["metadata"]["name"] == "gen-etl":
                    out[m] = (w["metadata"]["generation"],
                              mf["metadata"]["annotations"]["resourcetemplate.karmada.io/generation"])
        return out
    before = works()
    g0 = fleet.get("workflows.argoproj.io", "gen-etl")["metadata"]["generation"]
    # a status write through the object, as an aggregation without the subresource makes one
    fleet.patch("workflows.argoproj.io", "gen-etl", patch={"status": {"phase": "Pending", "message": "queued"}})
    assert fleet.get("workflows.argoproj.io", "gen-etl")["metadata"]["generation"] > g0
    time.sleep(2)
    assert works() == before, "a status-only template write rewrote its Works"
    # a change to what is delivered does reach them, with the template's generation
    fleet.patch("workflows.argoproj.io", "gen-etl", patch={"spec": {"entrypoint": "other"}})
    g2 = str(fleet.get("workflows.argoproj.io", "gen-etl")["metadata"]["generation"])
    after = wait_for(lambda: (x := works()) and all(v[1] == g2 for v in x.values()) and x, timeout=30,
                     what="the Works carrying the spec change")
    assert all(after[m][0] == before[m][0] + 1 for m in after), (before, after)
    for m in ("member1", "member2"):
        wait_for(lambda: (member_obj(fleet, "workflows.argoproj.io", "gen-etl", m) or {}).get("spec", {}).get(
            "entrypoint") == "other", timeout=30, what=f"the change in {m}")
    fleet.kubectl("delete", "workflows.argoproj.io", "gen-etl")


def test_argo_workflow_retain_keeps_the_members_status_and_suspend_without_a_loop(fleet, crds):
    wf = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "etl", "namespace": "default"},
          "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "busybox",
                                                                                      "command": ["true"]}}]}}
    fleet.apply([wf, policy("etl", "argoproj.io/v1alpha1", "Workflow", "etl", ["member1"])])
    got = wait_for(lambda: member_obj(fleet, "workflows.argoproj.io", "etl", "member1"), timeout=60,
                   what="etl in member1")
    assert got["spec"]["parallelism"] == 1  # the bundled ReviseReplica's share

    # as the member's workflow controller and `argo suspend` would: status, a controller
    # label and spec.suspend, written through the object (no status subresource)
    status = {"phase": "Running", "startedAt": "2026-01-01T00:00:00Z", "progress": "0/1",
              "nodes": {"etl": {"id": "etl", "phase": "Running"}}}
    fleet.patch("workflows.argoproj.io", "etl", member="member1",
                patch={"metadata": {"labels": {"workflows.argoproj.io/phase": "Running"}},
                       "spec": {"suspend": True}, "status": status})
    # the control plane shows the run (the bundled ReflectStatus and AggregateStatus)
    top = wait_for(lambda: (lambda t: t if t.get("status", {}).get("phase") == "Running" else None)(
        fleet.get("workflows.argoproj.io", "etl")), timeout=30, what="phase Running on the template")
    assert top["status"]["progress"] == "0/1" and "nodes" not in top["status"]
    assert "suspend" not in top["spec"]  # the template itself is not touched

    # from the last write on, the member object is left alone: count its changes for 60 s
    p, lines = watch_member(fleet, "workflows.argoproj.io", "etl", "member1")
    try:
        time.sleep(60)
    finally:
        p.terminate()
        p.wait(timeout=10)
    changes = [l for l in lines if l.startswith("MODIFIED")]
    assert len(changes) <= 2, f"the member's Workflow was rewritten {len(changes)} times in 60 s: {lines}"
    m = member_obj(fleet, "workflows.argoproj.io", "etl", "member1")
    assert m["spec"]["suspend"] is True, m["spec"]
    assert m["status"]["phase"] == "Running" and m["status"]["nodes"] == status["nodes"], m.get("status")
    assert m["metadata"]["labels"]["workflows.argoproj.io/phase"] == "Running"
    assert m["spec"]["entrypoint"] == "main"

    fleet.kubectl("delete", "workflows.argoproj.io", "etl")
    fleet.kubectl("delete", "pp", "etl")
    wait_for(lambda: member_obj(fleet, "workflows.argoproj.io", "etl", "member1") is None, timeout=30,
             what="etl gone from member1")


SURGE_REVISE = """
-- one spare replica per member
function ReviseReplica(obj, desiredReplica)
  obj.spec.replicas = desiredReplica + 1
  return obj
end
"""
DOUBLE_REPLICAS = """
function GetReplicas(obj)
  return obj.spec.replicas * 2, nil
end
"""
ALWAYS_HEALTHY = """
function InterpretHealth(observedObj)
  return true
end
"""
BROKEN_HEALTH = """function InterpretHealth(observedObj)
  return (
end
"""
MARKED_AGGREGATE = """
function AggregateStatus(desiredObj, statusItems)
  desiredObj.status = desiredObj.status or {}
  desiredObj.status.aggregatedBy = "shop-rules"
  desiredObj.status.members = #(statusItems or {})
  return desiredObj
end
"""
CONFIG_DEPENDENCY = """
function GetDependencies(desiredObj)
  return {{apiVersion = "v1", kind = "ConfigMap", namespace = desiredObj.metadata.namespace, name = "shop-config"}}
end
"""


def shop_rules(health):
    return customization("shop-rules", "apps.kruise.io/v1alpha1", "CloneSet", replicaResource=DOUBLE_REPLICAS,
                         replicaRevision=SURGE_REVISE, healthInterpretation=health,
                         statusAggregation=MARKED_AGGREGATE, dependencyInterpretation=CONFIG_DEPENDENCY)


def member_replicas(fleet, name, want):
    return all((member_obj(fleet, "clonesets.apps.kruise.io", name, m) or {}).get("spec", {}).get("replicas") == want
               for m in MEMBERS)


def test_users_customization_takes_effect_on_existing_bindings(fleet, crds):
    """A user's customization for CloneSet, created, broken and deleted while a CloneSet is
    propagated: each step changes what the binding, the members and the template get,
    through every controller that asks the interpreter, without the template being touched."""
    pp = policy("shop", "apps.kruise.io/v1alpha1", "CloneSet", "shop", MEMBERS, {"member1": 1, "member2": 1})
    pp["spec"]["propagateDeps"] = True
    fleet.apply([cloneset("shop", 4), pp,
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-config", "namespace": "default"},
                  "data": {"greeting": "hello"}}])
    wait_for(lambda: member_replicas(fleet, "shop", 2), timeout=60, what="2 replicas in each member")
    # nothing ready yet: the bundled health rule says Unhealthy
    for m in MEMBERS:
        write_cloneset_status(fleet, "shop", m, ready=0)
    wait_for(lambda: binding_health(fleet, "shop-cloneset") == {"member1": "Unhealthy", "member2": "Unhealthy"},
             timeout=30, what="both members unhealthy by the bundled rule")
    assert all(fleet.get("cm", "shop-config", member=m) is None for m in MEMBERS)  # nobody depends on it yet
    generation = fleet.get("clonesets.apps.kruise.io", "shop")["metadata"]["generation"]

    # the user's rules win over the bundled ones, on the existing binding
    fleet.apply(shop_rules(ALWAYS_HEALTHY))
    # detector: GetReplicas
    wait_for(lambda: (fleet.get("rb", "shop-cloneset") or {}).get("spec", {}).get("replicas") == 8, timeout=30,
             what="8 replicas on the binding (4 x 2)")
    # binding controller: ReviseReplica on the new division (4 each, + 1)
    wait_for(lambda: member_replicas(fleet, "shop", 5), timeout=30, what="5 replicas (4 + 1) in each member")
    # execution: InterpretHealth
    wait_for(lambda: binding_health(fleet, "shop-cloneset") == {"member1": "Healthy", "member2": "Healthy"},
             timeout=30, what="both members healthy by the user's rule")
    # binding status: AggregateStatus
    wait_for(lambda: (fleet.get("clonesets.apps.kruise.io", "shop") or {}).get("status", {}).get("aggregatedBy")
             == "shop-rules", timeout=30, what="the template's status aggregated by the user's rule")
    # dependencies: GetDependencies
    wait_for(lambda: all((fleet.get("cm", "shop-config", member=m) or {}).get("data") == {"greeting": "hello"}
                         for m in MEMBERS), timeout=30, what="shop-config in both members")
    top = fleet.get("clonesets.apps.kruise.io", "shop")
    assert top["metadata"]["generation"] == generation and top["spec"]["replicas"] == 4
    assert top["status"]["members"] == 2
    wait_for(lambda: events(fleet, "ResourceInterpreterCustomization", "shop-rules", "LoadCustomizationSucceed"),
             timeout=15, what="a LoadCustomizationSucceed event")

    # a version that does not compile stays out; the one in force keeps answering
    fleet.apply(shop_rules(BROKEN_HEALTH))
    bad = wait_for(lambda: events(fleet, "ResourceInterpreterCustomization", "shop-rules", "LoadCustomizationFailed"),
                   timeout=15, what="a LoadCustomizationFailed event")
    msg = bad[0]["message"]
    assert bad[0]["type"] == "Warning"
    # names the customization, the rule, and the line of the `end` that does not parse
    assert 'customization "shop-rules"' in msg and "healthInterpretation" in msg and ":3:" in msg, msg
    assert "previous version stays in force" in msg, msg
    time.sleep(3)
    assert binding_health(fleet, "shop-cloneset") == {"member1": "Healthy", "member2": "Healthy"}
    assert member_replicas(fleet, "shop", 5)

    # deleted: the bundled rules answer again, for the same binding
    fleet.kubectl("delete", "ric", "shop-rules")
    wait_for(lambda: (fleet.get("rb", "shop-cloneset") or {}).get("spec", {}).get("replicas") == 4, timeout=30,
             what="4 replicas on the binding again")
    wait_for(lambda: member_replicas(fleet, "shop", 2), timeout=30, what="2 replicas again")
    wait_for(lambda: all(fleet.get("cm", "shop-config", member=m) is None for m in MEMBERS), timeout=30,
             what="shop-config gone from the members")
    wait_for(lambda: binding_health(fleet, "shop-cloneset") == {"member1": "Unhealthy", "member2": "Unhealthy"},
             timeout=30, what="unhealthy again by the bundled rule")
    for m in MEMBERS:
        write_cloneset_status(fleet, "shop", m, ready=2)
    wait_for(lambda: binding_health(fleet, "shop-cloneset") == {"member1": "Healthy", "member2": "Healthy"},
             timeout=30, what="healthy once the members report ready")
    wait_for(lambda: (fleet.get("clonesets.apps.kruise.io", "shop") or {}).get("status", {}).get("readyReplicas")
             == 4, timeout=30, what="the bundled aggregation again")
    top = fleet.get("clonesets.apps.kruise.io", "shop")
    assert top["metadata"]["generation"] == generation and top["spec"]["replicas"] == 4

    fleet.kubectl("delete", "clonesets.apps.kruise.io", "shop")
    fleet.kubectl("delete", "pp", "shop")
    fleet.kubectl("delete", "cm", "shop-config")
    wait_for(lambda: all(member_obj(fleet, "clonesets.apps.kruise.io", "shop", m) is None for m in MEMBERS),
             timeout=30, what="shop gone from the members")


LOOP_HEALTH = """
function InterpretHealth(observedObj)
  local n = 0
  while true do n = n + 1 end
end
"""
BOMB_AGGREGATE = """
function AggregateStatus(desiredObj, statusItems)
  local hoard = {}
  local chunk = string.rep("x", 1024 * 1024)
  for i = 1, 100000 do hoard[i] = chunk .. i end
  return desiredObj
end
"""


def deployment(name):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}}


def propagate_deployment(fleet, name):
    """Seconds from `kubectl apply` to the Deployment being in member1."""
    t0 = time.time()
    fleet.apply([deployment(name), policy(name, "apps/v1", "Deployment", name, ["member1"])])
    wait_for(lambda: fleet.get("deploy", name, member="member1"), timeout=60, interval=0.02,
             what=f"{name} in member1")
    return time.time() - t0


def test_runaway_customizations_are_stopped_reported_and_harmless(fleet, crds):
    before = min(propagate_deployment(fleet, "calm-a"), propagate_deployment(fleet, "calm-b"))

    fleet.apply([customization("spin-loop", "example.io/v1", "Spinner", healthInterpretation=LOOP_HEALTH),
                 customization("spin-bomb", "example.io/v1", "Spinner", statusAggregation=BOMB_AGGREGATE)])
    wait_for(lambda: len(events(fleet, "ResourceInterpreterCustomization", "spin-bomb", "LoadCustomizationSucceed"))
             and events(fleet, "ResourceInterpreterCustomization", "spin-loop", "LoadCustomizationSucceed"),
             timeout=15, what="both customizations loaded")
    spinner = {"apiVersion": "example.io/v1", "kind": "Spinner", "metadata": {"name": "s1", "namespace": "default"},
               "spec": {"speed": 1}}
    fleet.apply([spinner, policy("s1", "example.io/v1", "Spinner", "s1", MEMBERS)])
    wait_for(lambda: all(member_obj(fleet, "spinners.example.io", "s1", m) for m in MEMBERS), timeout=60,
             what="s1 in the members")

    # the loop: stopped by its budget, health Unknown, reported on the Work and the binding
    wait_for(lambda: binding_health(fleet, "s1-spinner") == {"member1": "Unknown", "member2": "Unknown"},
             timeout=30, what="health Unknown")
    for kind, name in (("ResourceBinding", "s1-spinner"), ("Work", None)):
        evs = wait_for(lambda: [e for e in (fleet.get("events", "-A") or {"items": []})["items"]
                                if e["reason"] == "InterpretHealthFailed" and e["involvedObject"]["kind"] == kind
                                and (name is None or e["involvedObject"]["name"] == name)],
                       timeout=30, what=f"InterpretHealthFailed on the {kind}")
        msg = evs[0]["message"]
        assert evs[0]["type"] == "Warning"
        assert 'customization "spin-loop"' in msg and ("time limit of 1000 ms" in msg or
                                                        "instruction budget of 100000000" in msg), msg

    # the bomb: stopped at the memory cap, reported on the template and the binding
    for kind, name in (("Spinner", "s1"), ("ResourceBinding", "s1-spinner")):
        evs = wait_for(lambda: events(fleet, kind, name, "AggregateStatusFailed"), timeout=30,
                       what=f"AggregateStatusFailed on the {kind}")
        assert 'customization "spin-bomb"' in evs[0]["message"] and "memory cap of 64 MiB" in evs[0]["message"], evs

    # meanwhile, keep the loop busy (every change of a member's Spinner re-runs its health)
    # and propagate Deployments: they must not wait for the runaway scripts
    stop = threading.Event()

    def poke():
        i = 0
        while not stop.is_set():
            i += 1
            for m in MEMBERS:
                fleet.kubectl("patch", "spinners.example.io", "s1", "--subresource=status", "--type=merge",
                              "-p", json.dumps({"status": {"beat": i}}), member=m, check=False)
            time.sleep(0.2)
    t = threading.Thread(target=poke, daemon=True)
    t.start()
    try:
        during = max(propagate_deployment(fleet, "busy-a"), propagate_deployment(fleet, "busy-b"))
        r = fleet.kubectl("get", "--raw", "/readyz", check=False)
        assert r.returncode == 0 and r.stdout.strip() == "ok", (r.stdout, r.stderr)
    finally:
        stop.set()
        t.join(timeout=30)
    print(f"deployment propagation: {before:.2f}s before, {during:.2f}s with runaway scripts")
    assert during <= before + 3.0, f"a Deployment took {during:.2f}s to propagate with runaway scripts around " \
                                   f"(vs {before:.2f}s before)"

    # /metrics counts the calls the limits stopped, and the failures by operation and backend
    text = fleet.kubectl("get", "--raw", "/metrics").stdout
    def sample(series):
        found = [float(l.split()[-1]) for l in text.splitlines() if l.startswith(series + " ")]
        assert found, f"{series} not in /metrics"
        return found[0]
    assert sample('flotilla_interpreter_lua_limits_total{limit="memory"}') >= 1
    assert sample('flotilla_interpreter_lua_limits_total{limit="instructions"}') + \
        sample('flotilla_interpreter_lua_limits_total{limit="time"}') >= 1
    assert sample('flotilla_interpreter_errors_total{operation="InterpretHealth",backend="customization"}') >= 1
    assert sample('flotilla_interpreter_errors_total{operation="AggregateStatus",backend="customization"}') >= 1
    assert sample('flotilla_interpreter_calls_total{operation="InterpretHealth",backend="native"}') >= 4
    assert sample('flotilla_interpreter_lua_states{backend="customization"}') >= 0

    # deleted: Spinner has no health rule any more, which is Healthy and no event at all
    fleet.kubectl("delete", "ric", "spin-loop", "spin-bomb")
    wait_for(lambda: binding_health(fleet, "s1-spinner") == {"member1": "Healthy", "member2": "Healthy"},
             timeout=30, what="health back to Healthy")

    def counts():
        items = (fleet.get("events", "-A") or {"items": []})["items"]
        return sorted((e["metadata"]["namespace"], e["metadata"]["name"], e.get("count", 1)) for e in items
                      if e["reason"] in ("InterpretHealthFailed", "ReflectStatusFailed", "AggregateStatusFailed"))
    # repeats that came just before the deletion are counted and written within two seconds
    # (docs/suspension.md, Events): take the counts once they have settled
    seen, deadline = counts(), time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(2.5)
        now = counts()
        if now == seen:
            break
        seen = now
    else:
        raise AssertionError("interpreter failure events kept changing after the customizations were deleted")
    for i in range(5):
        for m in MEMBERS:
            fleet.kubectl("patch", "spinners.example.io", "s1", "--subresource=status", "--type=merge",
                          "-p", json.dumps({"status": {"after": i}}), member=m)
        time.sleep(0.5)
    time.sleep(3)  # longer than a counted repeat waits for its write
    assert counts() == seen, "interpreter failure events went on after the customizations were deleted"

    for name in ("calm-a", "calm-b", "busy-a", "busy-b"):
        fleet.kubectl("delete", "deploy", name)
        fleet.kubectl("delete", "pp", name)
    fleet.kubectl("delete", "spinners.example.io", "s1")
    fleet.kubectl("delete", "pp", "s1")


class HealthHook(BaseHTTPRequestHandler):
    """An interpreter webhook answering InterpretHealth: unhealthy, or failing on request."""
    protocol_version = "HTTP/1.1"
    calls = []
    fail = False

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["request"]
        HealthHook.calls.append((req["operation"], req["kind"]["kind"], req["name"]))
        if HealthHook.fail:
            resp = {"uid": req["uid"], "successful": False, "status": {"message": "gauge is offline", "code": 503}}
        else:
            resp = {"uid": req["uid"], "successful": True, "healthy": False}
        body = json.dumps({"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterContext",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def health_hook():
    """An HTTPS webhook on a free loopback port: (url, PEM of its self-signed certificate)."""
    d = tempfile.mkdtemp(prefix="flotilla-hook-")
    crt, key = os.path.join(d, "hook.crt"), os.path.join(d, "hook.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=gauge-hook",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    port = free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", port), HealthHook)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(crt, key)
    srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    HealthHook.calls, HealthHook.fail = [], False
    with open(crt) as f:
        pem = f.read()
    shutil.rmtree(d)
    yield f"https://127.0.0.1:{port}/interpret", pem
    srv.shutdown()
    srv.server_close()


def webhook_configuration(name, url, ca_pem, kinds=("Gauge",)):
    return {"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": "gauge.example.com",
                          "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem.encode()).decode()},
                          "rules": [{"operations": ["InterpretHealth"], "apiGroups": ["example.io"],
                                     "apiVersions": ["v1"], "kinds": list(kinds)}],
                          "timeoutSeconds": 2, "interpreterContextVersions": ["v1alpha1"]}]}


def test_webhook_configuration_takes_effect_and_its_failures_are_reported(fleet, crds, health_hook):
    url, ca = health_hook
    gauge = {"apiVersion": "example.io/v1", "kind": "Gauge", "metadata": {"name": "g1", "namespace": "default"},
             "spec": {"max": 10}}
    fleet.apply([gauge, policy("g1", "example.io/v1", "Gauge", "g1", ["member1"])])
    wait_for(lambda: binding_health(fleet, "g1-gauge") == {"member1": "Healthy"}, timeout=60,
             what="g1 healthy (no health rule for Gauge)")

    # a configuration that does not load is reported on itself (or refused by the API, if
    # admission checks it) and changes nothing
    r = fleet.kubectl("apply", "-f", "-", check=False,
                      input=json.dumps(webhook_configuration("gauge-bad", "http://127.0.0.1:1/interpret", ca)))
    if r.returncode == 0:
        bad = wait_for(lambda: events(fleet, "ResourceInterpreterWebhookConfiguration", "gauge-bad",
                                      "LoadCustomizationFailed"), timeout=15, what="LoadCustomizationFailed")
        assert bad[0]["type"] == "Warning"
        assert "webhooks[0].clientConfig.url" in bad[0]["message"] and "gauge-bad" in bad[0]["message"], bad
    else:
        assert "clientConfig.url" in r.stderr, r.stderr
    time.sleep(2)
    assert binding_health(fleet, "g1-gauge") == {"member1": "Healthy"}

    # a working one answers for the existing binding, without the template being touched
    gen = fleet.get("gauges.example.io", "g1")["metadata"]["generation"]
    fleet.apply(webhook_configuration("gauge-hooks", url, ca))
    wait_for(lambda: binding_health(fleet, "g1-gauge") == {"member1": "Unhealthy"}, timeout=30,
             what="g1 unhealthy by the webhook")
    assert ("InterpretHealth", "Gauge", "g1") in HealthHook.calls
    assert fleet.get("gauges.example.io", "g1")["metadata"]["generation"] == gen

    # the webhook fails: health Unknown, and its message on the Work and the binding
    HealthHook.fail = True
    fleet.kubectl("patch", "gauges.example.io", "g1", "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": {"reading": 1}}), member="member1")
    wait_for(lambda: binding_health(fleet, "g1-gauge") == {"member1": "Unknown"}, timeout=30,
             what="health Unknown while the webhook fails")
    evs = wait_for(lambda: events(fleet, "ResourceBinding", "g1-gauge", "InterpretHealthFailed"), timeout=30,
                   what="InterpretHealthFailed on the binding")
    assert 'webhook "gauge.example.com"' in evs[0]["message"] and "gauge is offline" in evs[0]["message"], evs

    # the configuration moves to another kind: Gauge has no health rule again
    HealthHook.fail = False
    fleet.apply(webhook_configuration("gauge-hooks", url, ca, kinds=("Spinner",)))
    wait_for(lambda: binding_health(fleet, "g1-gauge") == {"member1": "Healthy"}, timeout=30,
             what="healthy again once the webhook no longer answers for Gauge")
    # and back, then deleted
    fleet.apply(webhook_configuration("gauge-hooks", url, ca))
    wait_for(lambda: binding_health(fleet, "g1-gauge") == {"member1": "Unhealthy"}, timeout=30,
             what="unhealthy by the webhook again")
    fleet.kubectl("delete", "ResourceInterpreterWebhookConfiguration", "gauge-hooks", "gauge-bad",
                  "--ignore-not-found")
    wait_for(lambda: binding_health(fleet, "g1-gauge") == {"member1": "Healthy"}, timeout=30,
             what="healthy again once the webhook is gone")
    fleet.kubectl("delete", "gauges.example.io", "g1")
    fleet.kubectl("delete", "pp", "g1")
