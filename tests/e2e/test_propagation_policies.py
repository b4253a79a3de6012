"""Propagation policies end to end on `flotilla up`, with kubectl only, following Karmada's
documented semantics: lazy activation, preemption, cluster-wide policies and their
precedence, claims released when a selector stops matching, taints and tolerations,
cluster affinity terms, spread constraints, dynamic and aggregated division, conflict
resolution, preserving member objects on deletion, suspended dispatching, and the events
the template gets.

One fleet (a control plane and three simulated members) serves the whole module. Each test
uses its own object names and cleans up in a finally block, so a failing test does not
disturb the next. Waits are bounded; "nothing happens" checks watch for a short settle time.
"""
import json
import os
import select
import subprocess
import time

import pytest

from conftest import KUBECTL, wait_for

MEMBERS = ("member1", "member2", "member3")
PP_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_ID = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_NAME = "propagationpolicy.karmada.io/name"
CPP_NAME = "clusterpropagationpolicy.karmada.io/name"
# what Karmada's execution controller takes off a member object it preserves (cleanupPolicyClaimMetadata)
PRESERVE_CLEARED_LABELS = {PP_ID, "karmada.io/managed", "resourcebinding.karmada.io/permanent-id",
                           "work.karmada.io/permanent-id"}
PRESERVE_CLEARED_ANNOTATIONS = {
    PP_NAME, "propagationpolicy.karmada.io/namespace", "resourcetemplate.karmada.io/managed-annotations",
    "resourcetemplate.karmada.io/managed-labels", "resourcebinding.karmada.io/namespace",
    "resourcebinding.karmada.io/name", "resourcetemplate.karmada.io/uid", "resourcetemplate.karmada.io/generation",
    "work.karmada.io/name", "work.karmada.io/namespace"}
WAIT = 20      # seconds for something that must happen
SETTLE = 2.0   # seconds during which something must not happen


# ---- manifests ----

def configmap(name, data=None, labels=None):
    md = {"name": name, "namespace": "default"}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data or {"k": "v1"}}


def deployment(name, replicas, cpu="100m", memory="64Mi"):
    pod = {"containers": [{"name": "app", "image": "nginx:1.25",
                           "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


def cm_selector(name=None, labels=None):
    s = {"apiVersion": "v1", "kind": "ConfigMap"}
    if name:
        s["name"] = name
    if labels:
        s["labelSelector"] = {"matchLabels": labels}
    return s


def placement(clusters=None, **extra):
    p = {"clusterAffinity": {"clusterNames": list(clusters)}} if clusters is not None else {}
    p.update(extra)
    return p


def policy(name, selectors, place, cluster=False, **spec_extra):
    spec = {"resourceSelectors": selectors, "placement": place}
    spec.update(spec_extra)
    md = {"name": name} if cluster else {"name": name, "namespace": "default"}
    return {"apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy" if cluster else "PropagationPolicy", "metadata": md, "spec": spec}


# ---- observations ----

def holders(fleet, kind, name):
    """The members that have kind/name in namespace default, as a sorted list."""
    return sorted(m for m in MEMBERS if fleet.get(kind, name, member=m) is not None)


def cm_data(fleet, name, member):
    o = fleet.get("cm", name, member=member)
    return o.get("data", {}).get("k") if o else None


def member_replicas(fleet, name):
    out = {}
    for m in MEMBERS:
        d = fleet.get("deploy", name, member=m)
        if d:
            out[m] = d["spec"]["replicas"]
    return out


def meta_of(obj, field):
    return (obj or {}).get("metadata", {}).get(field) or {}


def claimed_by(fleet, kind, name):
    """(kind, name) of the policy named on the template's claim annotations, or None."""
    anns = meta_of(fleet.get(kind, name), "annotations")
    if PP_NAME in anns:
        return ("PropagationPolicy", anns[PP_NAME])
    if CPP_NAME in anns:
        return ("ClusterPropagationPolicy", anns[CPP_NAME])
    return None


def policy_id(fleet, kind, name):
    return meta_of(fleet.get(kind, name), "labels").get(CPP_ID if kind == "cpp" else PP_ID)


def binding_clusters(fleet, rb):
    b = fleet.get("rb", rb)
    return sorted(c["name"] for c in (b or {}).get("spec", {}).get("clusters") or [])


def events_about(fleet, name, kind=None):
    items = (fleet.get("events", "-n", "default") or {}).get("items", [])
    return [e for e in items if e["involvedObject"].get("name") == name and
            (kind is None or e["involvedObject"].get("kind") == kind)]


def condition(obj, ctype):
    for c in (obj or {}).get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def works_for(fleet, kind, name):
    """The Works (any execution namespace) whose manifest is kind default/name."""
    out = []
    for w in (fleet.get("works", "-A") or {}).get("items", []):
        for m in w.get("spec", {}).get("workload", {}).get("manifests", []):
            if m.get("kind") == kind and m.get("metadata", {}).get("name") == name:
                out.append(w)
    return out


def stays(pred, seconds=SETTLE, interval=0.2):
    """pred() holds on every check for `seconds`; returns the first failing value or True."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = pred()
        if not v:
            return v
        time.sleep(interval)
    return True


# ---- activationPreference ----

def test_lazy_policy_change_waits_for_the_template_to_change(fleet):
    try:
        fleet.apply(policy("lazy", [cm_selector("lazy")], placement(["member1"]), activationPreference="Lazy"))
        time.sleep(0.3)  # the template arrives after the policy, as a user's change
        fleet.apply(configmap("lazy", {"k": "v1"}))
        wait_for(lambda: holders(fleet, "cm", "lazy") == ["member1"], timeout=WAIT, what="lazy in member1 only")

        # the placement changes: a Lazy policy leaves the binding and the members alone ...
        fleet.patch("pp", "lazy", patch={"spec": {"placement": {"clusterAffinity": {"clusterNames": ["member2"]}}}})
        still = stays(lambda: holders(fleet, "cm", "lazy") == ["member1"] and
                      fleet.get("rb", "lazy-configmap")["spec"]["placement"]["clusterAffinity"]["clusterNames"] ==
                      ["member1"], seconds=3)
        assert still is True, ("a Lazy policy's placement change reached the binding before the template changed: "
                               f"binding placement {fleet.get('rb', 'lazy-configmap')['spec']['placement']}, "
                               f"holders {holders(fleet, 'cm', 'lazy')}")

        # ... until the template itself changes
        fleet.patch("cm", "lazy", patch={"data": {"k": "v2"}})
        wait_for(lambda: holders(fleet, "cm", "lazy") == ["member2"], timeout=WAIT, what="lazy moved to member2")
        assert cm_data(fleet, "lazy", "member2") == "v2"
    finally:
        fleet.delete("cm", "lazy")
        fleet.delete("pp", "lazy")


def test_lazy_policy_created_later_claims_but_waits_for_the_template_to_change(fleet):
    """Karmada: a Lazy policy created after its template claims it, but builds no binding (so
    nothing is delivered) until the template changes."""
    try:
        fleet.apply(configmap("lazy-new", {"k": "v1"}))
        time.sleep(0.3)
        fleet.apply(policy("lazy-new", [cm_selector("lazy-new")], placement(["member3"]),
                           activationPreference="Lazy"))
        wait_for(lambda: claimed_by(fleet, "cm", "lazy-new") == ("PropagationPolicy", "lazy-new"), timeout=WAIT,
                 what="lazy-new claimed")
        held = stays(lambda: fleet.get("rb", "lazy-new-configmap") is None and holders(fleet, "cm", "lazy-new") == [])
        assert held is True, ("a Lazy policy created after the template propagated it before the template changed: "
                              f"binding {fleet.get('rb', 'lazy-new-configmap') is not None}, "
                              f"holders {holders(fleet, 'cm', 'lazy-new')}")
        fleet.patch("cm", "lazy-new", patch={"data": {"k": "v2"}})
        wait_for(lambda: cm_data(fleet, "lazy-new", "member3") == "v2", timeout=WAIT, what="lazy-new v2 in member3")
    finally:
        fleet.delete("cm", "lazy-new")
        fleet.delete("pp", "lazy-new")


# ---- preemption ----

def test_preemption_always_takes_the_template_from_a_lower_priority_policy(fleet):
    try:
        fleet.apply(policy("pre-low", [cm_selector("pre-a")], placement(["member1"]), priority=1))
        fleet.apply(configmap("pre-a"))
        wait_for(lambda: holders(fleet, "cm", "pre-a") == ["member1"], timeout=WAIT, what="pre-a in member1")
        assert claimed_by(fleet, "cm", "pre-a") == ("PropagationPolicy", "pre-low")

        fleet.apply(policy("pre-high", [cm_selector("pre-a")], placement(["member2"]), priority=5,
                           preemption="Always"))
        wait_for(lambda: claimed_by(fleet, "cm", "pre-a") == ("PropagationPolicy", "pre-high"), timeout=WAIT,
                 what="pre-a claimed by pre-high")
        assert meta_of(fleet.get("cm", "pre-a"), "labels").get(PP_ID) == policy_id(fleet, "pp", "pre-high")
        wait_for(lambda: holders(fleet, "cm", "pre-a") == ["member2"], timeout=WAIT, what="pre-a moved to member2")
        reasons = {e["reason"] for e in events_about(fleet, "pre-a", "ConfigMap")}
        assert "PreemptPolicySucceed" in reasons, reasons
    finally:
        fleet.delete("cm", "pre-a")
        fleet.delete("pp", "pre-low", "pre-high")


def test_preemption_never_leaves_the_template_with_its_policy(fleet):
    try:
        fleet.apply(policy("nopre-low", [cm_selector("nopre")], placement(["member1"]), priority=1))
        fleet.apply(configmap("nopre"))
        wait_for(lambda: holders(fleet, "cm", "nopre") == ["member1"], timeout=WAIT, what="nopre in member1")

        # higher priority, preemption left at its default (Never)
        fleet.apply(policy("nopre-high", [cm_selector("nopre")], placement(["member2"]), priority=5))
        # Always, but not a higher priority; and a cluster policy, which never preempts a PropagationPolicy
        fleet.apply([policy("nopre-lower", [cm_selector("nopre")], placement(["member3"]), priority=0,
                            preemption="Always"),
                     policy("nopre-cpp", [cm_selector("nopre")], placement(["member3"]), cluster=True, priority=100,
                            preemption="Always")])
        kept = stays(lambda: claimed_by(fleet, "cm", "nopre") == ("PropagationPolicy", "nopre-low") and
                     holders(fleet, "cm", "nopre") == ["member1"])
        assert kept is True, (claimed_by(fleet, "cm", "nopre"), holders(fleet, "cm", "nopre"))
        # a change of the template does not hand it over either
        fleet.patch("cm", "nopre", patch={"data": {"k": "v2"}})
        wait_for(lambda: cm_data(fleet, "nopre", "member1") == "v2", timeout=WAIT, what="v2 in member1")
        assert claimed_by(fleet, "cm", "nopre") == ("PropagationPolicy", "nopre-low")
        assert holders(fleet, "cm", "nopre") == ["member1"]
    finally:
        fleet.delete("cm", "nopre")
        fleet.delete("pp", "nopre-low", "nopre-high", "nopre-lower")
        fleet.delete("cpp", "nopre-cpp")


def test_preemption_always_works_when_a_better_non_preempting_policy_exists(fleet):
    """Karmada preempts on behalf of the policy that says Always (its own creation triggers it),
    even when another candidate that does not preempt would rank higher."""
    try:
        fleet.apply(policy("pre2-low", [cm_selector("pre2")], placement(["member1"]), priority=1))
        fleet.apply(configmap("pre2"))
        wait_for(lambda: holders(fleet, "cm", "pre2") == ["member1"], timeout=WAIT, what="pre2 in member1")
        fleet.apply(policy("pre2-top", [cm_selector("pre2")], placement(["member3"]), priority=10))
        time.sleep(0.5)
        fleet.apply(policy("pre2-mid", [cm_selector("pre2")], placement(["member2"]), priority=5,
                           preemption="Always"))
        wait_for(lambda: claimed_by(fleet, "cm", "pre2") == ("PropagationPolicy", "pre2-mid"), timeout=5,
                 what=f"pre2 claimed by pre2-mid (claimed by {claimed_by(fleet, 'cm', 'pre2')})")
        wait_for(lambda: holders(fleet, "cm", "pre2") == ["member2"], timeout=WAIT, what="pre2 moved to member2")
    finally:
        fleet.delete("cm", "pre2")
        fleet.delete("pp", "pre2-low", "pre2-top", "pre2-mid")


def test_propagation_policy_preempts_a_cluster_propagation_policy(fleet):
    try:
        # the cluster policy claims first; its priority does not protect it from a PropagationPolicy
        fleet.apply(policy("ppre-cpp", [cm_selector("ppre")], placement(["member1"]), cluster=True, priority=100))
        fleet.apply(configmap("ppre"))
        wait_for(lambda: holders(fleet, "cm", "ppre") == ["member1"], timeout=WAIT, what="ppre in member1")
        assert claimed_by(fleet, "cm", "ppre") == ("ClusterPropagationPolicy", "ppre-cpp")

        fleet.apply(policy("ppre-pp", [cm_selector("ppre")], placement(["member3"]), preemption="Always"))
        wait_for(lambda: claimed_by(fleet, "cm", "ppre") == ("PropagationPolicy", "ppre-pp"), timeout=WAIT,
                 what="ppre claimed by the PropagationPolicy")
        labels = meta_of(fleet.get("cm", "ppre"), "labels")
        assert CPP_ID not in labels and labels.get(PP_ID) == policy_id(fleet, "pp", "ppre-pp"), labels
        assert CPP_NAME not in meta_of(fleet.get("cm", "ppre"), "annotations")
        wait_for(lambda: holders(fleet, "cm", "ppre") == ["member3"], timeout=WAIT, what="ppre moved to member3")
        blabels = meta_of(fleet.get("rb", "ppre-configmap"), "labels")
        assert CPP_ID not in blabels and blabels.get(PP_ID) == policy_id(fleet, "pp", "ppre-pp"), blabels
    finally:
        fleet.delete("cm", "ppre")
        fleet.delete("pp", "ppre-pp")
        fleet.delete("cpp", "ppre-cpp")


# ---- ClusterPropagationPolicy ----

def test_cluster_policy_propagates_a_namespaced_template_through_a_resource_binding(fleet):
    try:
        fleet.apply(policy("cpp-ns", [cm_selector("cpp-ns")], placement(["member2"]), cluster=True))
        fleet.apply(configmap("cpp-ns"))
        wait_for(lambda: holders(fleet, "cm", "cpp-ns") == ["member2"], timeout=WAIT, what="cpp-ns in member2")
        rb = fleet.get("rb", "cpp-ns-configmap")
        assert rb is not None and rb["metadata"]["namespace"] == "default", rb
        assert rb["metadata"]["labels"].get(CPP_ID) == policy_id(fleet, "cpp", "cpp-ns"), rb["metadata"]
        assert PP_ID not in rb["metadata"]["labels"]
        assert rb["spec"]["resource"]["namespace"] == "default"
        # no ClusterResourceBinding for a namespaced template
        crbs = (fleet.get("crb") or {}).get("items", [])
        assert not [c for c in crbs if c["metadata"]["name"] == "cpp-ns-configmap"], crbs
        tmpl = fleet.get("cm", "cpp-ns")
        assert tmpl["metadata"]["labels"].get(CPP_ID) == policy_id(fleet, "cpp", "cpp-ns")
        assert tmpl["metadata"]["annotations"].get(CPP_NAME) == "cpp-ns"
    finally:
        fleet.delete("cm", "cpp-ns")
        fleet.delete("cpp", "cpp-ns")


def test_propagation_policy_beats_a_cluster_policy_for_the_same_template(fleet):
    try:
        # both exist before the template: the namespaced policy wins whatever the priorities
        fleet.apply([policy("beat-cpp", [cm_selector("beat")], placement(["member1"]), cluster=True, priority=50),
                     policy("beat-pp", [cm_selector(labels={"beat": "yes"})], placement(["member2"]))])
        time.sleep(0.3)
        fleet.apply(configmap("beat", labels={"beat": "yes"}))
        wait_for(lambda: holders(fleet, "cm", "beat") == ["member2"], timeout=WAIT, what="beat in member2")
        assert claimed_by(fleet, "cm", "beat") == ("PropagationPolicy", "beat-pp")
        assert stays(lambda: holders(fleet, "cm", "beat") == ["member2"]) is True
    finally:
        fleet.delete("cm", "beat")
        fleet.delete("pp", "beat-pp")
        fleet.delete("cpp", "beat-cpp")


# ---- claims released ----

def test_template_label_removed_releases_it_to_another_matching_policy(fleet):
    try:
        fleet.apply([policy("rel-a", [cm_selector(labels={"rel-a": "yes"})], placement(["member1"]), priority=5),
                     policy("rel-b", [cm_selector(labels={"rel-b": "yes"})], placement(["member2"]))])
        time.sleep(0.3)
        fleet.apply(configmap("rel", labels={"rel-a": "yes", "rel-b": "yes"}))
        wait_for(lambda: holders(fleet, "cm", "rel") == ["member1"], timeout=WAIT, what="rel in member1")
        assert claimed_by(fleet, "cm", "rel") == ("PropagationPolicy", "rel-a")

        fleet.kubectl("label", "cm", "rel", "rel-a-")
        wait_for(lambda: claimed_by(fleet, "cm", "rel") == ("PropagationPolicy", "rel-b"), timeout=WAIT,
                 what="rel claimed by rel-b")
        assert meta_of(fleet.get("cm", "rel"), "labels").get(PP_ID) == policy_id(fleet, "pp", "rel-b")
        wait_for(lambda: holders(fleet, "cm", "rel") == ["member2"], timeout=WAIT, what="rel moved to member2")

        # no policy left: the claim goes, the binding and the delivered object stay
        fleet.kubectl("label", "cm", "rel", "rel-b-")
        wait_for(lambda: PP_ID not in meta_of(fleet.get("cm", "rel"), "labels"), timeout=WAIT,
                 what="the claim label removed")
        assert claimed_by(fleet, "cm", "rel") is None, meta_of(fleet.get("cm", "rel"), "annotations")
        rb = fleet.get("rb", "rel-configmap")
        assert rb is not None and PP_ID not in meta_of(rb, "labels"), rb
        assert holders(fleet, "cm", "rel") == ["member2"]
    finally:
        fleet.delete("cm", "rel")
        fleet.delete("pp", "rel-a", "rel-b")


def test_deleted_policy_hands_the_template_to_another_matching_policy(fleet):
    try:
        fleet.apply([policy("del-a", [cm_selector("delp")], placement(["member1"]), priority=5),
                     policy("del-b", [cm_selector(labels={"delp": "yes"})], placement(["member2"]))])
        time.sleep(0.3)
        fleet.apply(configmap("delp", labels={"delp": "yes"}))
        wait_for(lambda: holders(fleet, "cm", "delp") == ["member1"], timeout=WAIT, what="delp in member1")
        fleet.kubectl("delete", "pp", "del-a")
        wait_for(lambda: claimed_by(fleet, "cm", "delp") == ("PropagationPolicy", "del-b"), timeout=WAIT,
                 what="delp claimed by del-b")
        wait_for(lambda: holders(fleet, "cm", "delp") == ["member2"], timeout=WAIT, what="delp moved to member2")
    finally:
        fleet.delete("cm", "delp")
        fleet.delete("pp", "del-a", "del-b")


def test_policy_selector_changed_releases_the_template_to_another_matching_policy(fleet):
    try:
        fleet.apply([policy("sel-a", [cm_selector("sel")], placement(["member1"]), priority=5),
                     policy("sel-b", [cm_selector(labels={"sel": "yes"})], placement(["member3"]))])
        time.sleep(0.3)
        fleet.apply(configmap("sel", labels={"sel": "yes"}))
        wait_for(lambda: holders(fleet, "cm", "sel") == ["member1"], timeout=WAIT, what="sel in member1")
        assert claimed_by(fleet, "cm", "sel") == ("PropagationPolicy", "sel-a")

        # the claiming policy's selector now names another template (Karmada's cleanup of unmatched bindings)
        fleet.patch("pp", "sel-a", kind="json", patch=[
            {"op": "replace", "path": "/spec/resourceSelectors/0/name", "value": "sel-other"}])
        wait_for(lambda: claimed_by(fleet, "cm", "sel") == ("PropagationPolicy", "sel-b"), timeout=WAIT,
                 what="sel claimed by sel-b")
        wait_for(lambda: holders(fleet, "cm", "sel") == ["member3"], timeout=WAIT, what="sel moved to member3")
    finally:
        fleet.delete("cm", "sel")
        fleet.delete("pp", "sel-a", "sel-b")


# ---- scheduling: taints, affinities, spread ----

def test_noschedule_taint_filters_a_cluster_unless_tolerated(fleet):
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    try:
        # placed on member3 before the taint: NoSchedule does not take it away (eviction is NoExecute's job)
        fleet.apply([configmap("taint-old"), policy("taint-old", [cm_selector("taint-old")], placement(MEMBERS))])
        wait_for(lambda: holders(fleet, "cm", "taint-old") == list(MEMBERS), timeout=WAIT,
                 what="taint-old in every member")
        fleet.patch("cluster", "member3", patch={"spec": {"taints": [taint]}})
        wait_for(lambda: (fleet.get("cluster", "member3")["spec"].get("taints") or [{}])[0].get("key") == "dedicated",
                 timeout=5, what="the taint on member3")
        fleet.apply([configmap("taint-no"), policy("taint-no", [cm_selector("taint-no")], placement(MEMBERS))])
        wait_for(lambda: holders(fleet, "cm", "taint-no") == ["member1", "member2"], timeout=WAIT,
                 what="taint-no in member1 and member2")
        assert binding_clusters(fleet, "taint-no-configmap") == ["member1", "member2"]

        def filtered():
            return [e["message"] for e in events_about(fleet, "taint-no-configmap", "ResourceBinding")
                    if e["reason"] == "ClusterFiltered"]
        msgs = wait_for(lambda: [m for m in filtered() if "member3" in m] or None, timeout=5,
                        what="a ClusterFiltered event for member3")
        assert any("TaintToleration" in m and "dedicated=infra:NoSchedule" in m for m in msgs), msgs

        tol = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
        fleet.apply([configmap("taint-yes"),
                     policy("taint-yes", [cm_selector("taint-yes")], placement(MEMBERS, clusterTolerations=tol))])
        wait_for(lambda: holders(fleet, "cm", "taint-yes") == list(MEMBERS), timeout=WAIT,
                 what="taint-yes in every member")
        # the first one stays off member3: the taint still holds for it
        assert holders(fleet, "cm", "taint-no") == ["member1", "member2"]
        # ... and the one placed before the taint is still there after the rescheduling the taint caused
        assert binding_clusters(fleet, "taint-old-configmap") == list(MEMBERS)
        assert holders(fleet, "cm", "taint-old") == list(MEMBERS)

        # the taint goes: the cluster is a candidate again
        fleet.patch("cluster", "member3", patch={"spec": {"taints": None}})
        wait_for(lambda: holders(fleet, "cm", "taint-no") == list(MEMBERS), timeout=WAIT,
                 what="taint-no in every member once the taint is gone")
    finally:
        fleet.patch("cluster", "member3", patch={"spec": {"taints": None}})
        fleet.delete("cm", "taint-no", "taint-yes", "taint-old")
        fleet.delete("pp", "taint-no", "taint-yes", "taint-old")


def test_cluster_affinities_fall_back_to_the_next_term(fleet):
    try:
        aff = [{"affinityName": "ghost", "clusterNames": ["no-such-cluster"]},
               {"affinityName": "real", "clusterNames": ["member2"]}]
        fleet.apply([configmap("affs"), policy("affs", [cm_selector("affs")], {"clusterAffinities": aff})])
        wait_for(lambda: holders(fleet, "cm", "affs") == ["member2"], timeout=WAIT, what="affs in member2")
        rb = wait_for(lambda: (lambda b: b if (b or {}).get("status", {}).get("schedulerObservingAffinityName")
                               else None)(fleet.get("rb", "affs-configmap")), timeout=5,
                      what="schedulerObservingAffinityName")
        assert rb["status"]["schedulerObservingAffinityName"] == "real", rb["status"]
        assert binding_clusters(fleet, "affs-configmap") == ["member2"]
        assert condition(rb, "Scheduled")["status"] == "True"
    finally:
        fleet.delete("cm", "affs")
        fleet.delete("pp", "affs")


def test_spread_constraint_by_cluster_selects_that_many_clusters(fleet):
    try:
        spread = [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}]
        fleet.apply([configmap("spread2"),
                     policy("spread2", [cm_selector("spread2")], placement(MEMBERS, spreadConstraints=spread))])
        wait_for(lambda: len(binding_clusters(fleet, "spread2-configmap")) == 2, timeout=WAIT,
                 what="two clusters chosen")
        chosen = binding_clusters(fleet, "spread2-configmap")
        wait_for(lambda: holders(fleet, "cm", "spread2") == chosen, timeout=WAIT, what=f"spread2 in {chosen}")

        spread1 = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
        fleet.apply([deployment("spread1", 4),
                     policy("spread1", [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "spread1"}],
                               placement(MEMBERS, spreadConstraints=spread1,
                                         replicaScheduling={"replicaSchedulingType": "Divided",
                                                            "replicaDivisionPreference": "Aggregated"}))])
        wait_for(lambda: sum(member_replicas(fleet, "spread1").values()) == 4, timeout=WAIT,
                 what="4 replicas of spread1 in the members")
        assert len(member_replicas(fleet, "spread1")) == 1, member_replicas(fleet, "spread1")

        # more groups wanted than clusters exist: not scheduled, and the condition says so
        spread4 = [{"spreadByField": "cluster", "minGroups": 4, "maxGroups": 4}]
        fleet.apply([configmap("spread4"),
                     policy("spread4", [cm_selector("spread4")], placement(MEMBERS, spreadConstraints=spread4))])
        c = wait_for(lambda: condition(fleet.get("rb", "spread4-configmap"), "Scheduled"), timeout=WAIT,
                     what="a Scheduled condition on spread4")
        assert c["status"] == "False", c
        assert holders(fleet, "cm", "spread4") == []
    finally:
        fleet.delete("cm", "spread2", "spread4")
        fleet.delete("deploy", "spread1")
        fleet.delete("pp", "spread2", "spread1", "spread4")


# ---- dynamic division by available replicas ----

def hog(cpu):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}}}]}}


@pytest.fixture
def capacity(fleet):
    """Pods in the members that leave 3, 6 and 0 whole CPUs free (each member has 24 allocatable), and
    wait until every Cluster's resourceSummary shows them."""
    hogs = {"member1": 21, "member2": 18, "member3": 24}
    for m in MEMBERS:
        s = fleet.get("cluster", m)["status"]["resourceSummary"]
        assert s["allocatable"]["cpu"] == "24", s
    for m, cpu in hogs.items():
        fleet.apply(hog(cpu), member=m)
    for m, cpu in hogs.items():
        wait_for(lambda: (fleet.get("cluster", m)["status"]["resourceSummary"].get("allocated") or {}).get("cpu")
                 == str(cpu), timeout=15, what=f"{m}'s resourceSummary to show {cpu} cpu allocated")
    yield {"member1": 3, "member2": 6, "member3": 0}
    for m in MEMBERS:
        fleet.delete("pod", "hog", member=m)


def dynamic_policy(name, pref, replicas_name):
    rs = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": pref}
    if pref == "Weighted":
        rs["weightPreference"] = {"dynamicWeight": "AvailableReplicas"}
    return policy(name, [{"apiVersion": "apps/v1", "kind": "Deployment", "name": replicas_name}],
                  placement(MEMBERS, replicaScheduling=rs))


def test_dynamic_weights_divide_replicas_by_available_capacity(fleet, capacity):
    try:
        # 1 cpu per replica: member1 fits 3, member2 6, member3 none -> 6 replicas split 2:4
        fleet.apply([dynamic_policy("dyn", "Weighted", "dyn"), deployment("dyn", 6, cpu="1", memory="1Gi")])
        wait_for(lambda: sum(member_replicas(fleet, "dyn").values()) == 6, timeout=WAIT,
                 what="6 replicas of dyn in the members")
        got = member_replicas(fleet, "dyn")
        assert got == {"member1": 2, "member2": 4}, got
        rb = fleet.get("rb", "dyn-deployment")
        assert rb["spec"]["replicaRequirements"]["resourceRequest"]["cpu"] == "1", rb["spec"]

        # scaling up divides only the added replicas: nobody loses one, nobody exceeds what it has free
        fleet.patch("deploy", "dyn", patch={"spec": {"replicas": 8}})
        wait_for(lambda: sum(member_replicas(fleet, "dyn").values()) == 8, timeout=WAIT,
                 what="8 replicas of dyn in the members")
        up = member_replicas(fleet, "dyn")
        assert set(up) == {"member1", "member2"}, up
        assert 2 <= up["member1"] <= 2 + 3 and 4 <= up["member2"] <= 4 + 6, up
    finally:
        fleet.delete("deploy", "dyn")
        fleet.delete("pp", "dyn")


def test_aggregated_uses_the_fewest_clusters_with_capacity(fleet, capacity):
    try:
        # 5 replicas fit in member2 alone
        fleet.apply([dynamic_policy("agg", "Aggregated", "agg"), deployment("agg", 5, cpu="1", memory="1Gi")])
        wait_for(lambda: sum(member_replicas(fleet, "agg").values()) == 5, timeout=WAIT,
                 what="5 replicas of agg in the members")
        assert member_replicas(fleet, "agg") == {"member2": 5}, member_replicas(fleet, "agg")

        # 8 do not: member2 and member1, each within what it has free, none on member3
        fleet.apply([dynamic_policy("agg8", "Aggregated", "agg8"), deployment("agg8", 8, cpu="1", memory="1Gi")])
        wait_for(lambda: sum(member_replicas(fleet, "agg8").values()) == 8, timeout=WAIT,
                 what="8 replicas of agg8 in the members")
        got = member_replicas(fleet, "agg8")
        assert set(got) == {"member1", "member2"}, got
        assert got["member1"] <= capacity["member1"] and got["member2"] <= capacity["member2"], got

        # 10 fit nowhere: Unschedulable, and nothing is delivered
        fleet.apply([dynamic_policy("agg10", "Aggregated", "agg10"), deployment("agg10", 10, cpu="1", memory="1Gi")])
        c = wait_for(lambda: condition(fleet.get("rb", "agg10-deployment"), "Scheduled"), timeout=WAIT,
                     what="a Scheduled condition on agg10")
        assert c["status"] == "False" and c["reason"] == "Unschedulable", c
        assert member_replicas(fleet, "agg10") == {}
    finally:
        fleet.delete("deploy", "agg", "agg8", "agg10")
        fleet.delete("pp", "agg", "agg8", "agg10")


# ---- conflictResolution ----

ADOPT = "migration.flotilla.io/adopt"  # the adoption allow-list's policy annotation

def test_conflict_resolution_overwrite_takes_over_an_existing_member_object(fleet):
    try:
        fleet.apply(configmap("ow", {"k": "member-own"}), member="member1")
        # an object Flotilla did not create is taken over only where the adoption allow-list
        # admits it (docs/migration.md): here the policy's annotation
        pp = policy("ow", [cm_selector("ow")], placement(["member1"]), conflictResolution="Overwrite")
        pp["metadata"]["annotations"] = {ADOPT: "true"}
        fleet.apply([configmap("ow", {"k": "from-cp"}), pp])
        wait_for(lambda: cm_data(fleet, "ow", "member1") == "from-cp", timeout=WAIT,
                 what="the member's ConfigMap overwritten")
        obj = fleet.get("cm", "ow", member="member1")
        assert obj["metadata"]["labels"].get("karmada.io/managed") == "true", obj["metadata"]
        work = wait_for(lambda: (works_for(fleet, "ConfigMap", "ow") or [None])[0], timeout=5, what="the Work")
        c = wait_for(lambda: condition(works_for(fleet, "ConfigMap", "ow")[0], "Applied"), timeout=WAIT,
                     what="the Applied condition")
        assert c["status"] == "True", c
        assert work["metadata"]["namespace"] == "karmada-es-member1"
    finally:
        fleet.delete("cm", "ow")
        fleet.delete("pp", "ow")
        fleet.delete("cm", "ow", member="member1")


def test_conflict_resolution_abort_leaves_an_existing_member_object(fleet):
    try:
        fleet.apply(configmap("ab", {"k": "member-own"}), member="member1")
        fleet.apply([configmap("ab", {"k": "from-cp"}), policy("ab", [cm_selector("ab")], placement(["member1"]))])

        def applied():
            ws = works_for(fleet, "ConfigMap", "ab")
            return condition(ws[0], "Applied") if ws else None
        c = wait_for(applied, timeout=WAIT, what="the Work's Applied condition")
        assert c["status"] == "False", c
        assert "already exists" in c["message"] and "member1" in c["message"], c
        obj = fleet.get("cm", "ab", member="member1")
        assert obj["data"]["k"] == "member-own"
        assert "karmada.io/managed" not in meta_of(obj, "labels"), obj["metadata"]
        assert stays(lambda: cm_data(fleet, "ab", "member1") == "member-own") is True

        # the policy switches to Overwrite: not yet on the adoption allow-list, the object stays
        # the member's, and the Work says how to allow it
        fleet.patch("pp", "ab", patch={"spec": {"conflictResolution": "Overwrite"}})
        wait_for(lambda: ADOPT in ((applied() or {}).get("message") or ""), timeout=WAIT,
                 what="the Work naming the allow-list")
        assert cm_data(fleet, "ab", "member1") == "member-own"
        # admitted by the policy's annotation: the object is taken over and the Work says so
        fleet.patch("pp", "ab", patch={"metadata": {"annotations": {ADOPT: "true"}}})
        wait_for(lambda: cm_data(fleet, "ab", "member1") == "from-cp", timeout=WAIT, what="ab overwritten")
        wait_for(lambda: (applied() or {}).get("status") == "True", timeout=WAIT, what="Applied=True")
    finally:
        fleet.delete("cm", "ab")
        fleet.delete("pp", "ab")
        fleet.delete("cm", "ab", member="member1")


# ---- preserveResourcesOnDeletion ----

def test_preserve_resources_on_deletion_keeps_the_member_object(fleet):
    try:
        fleet.apply([configmap("keepme"), configmap("dropme"),
                     policy("keepme", [cm_selector("keepme")], placement(["member2"]),
                            preserveResourcesOnDeletion=True),
                     policy("dropme", [cm_selector("dropme")], placement(["member2"]))])
        wait_for(lambda: cm_data(fleet, "keepme", "member2") and cm_data(fleet, "dropme", "member2"), timeout=WAIT,
                 what="keepme and dropme in member2")
        works = works_for(fleet, "ConfigMap", "keepme")
        assert works and all(w["spec"].get("preserveResourcesOnDeletion") is True for w in works), works
        fleet.kubectl("delete", "cm", "keepme", "dropme")
        # the one without preservation is the reference: once it has gone, the Work of the other went too
        wait_for(lambda: fleet.get("cm", "dropme", member="member2") is None, timeout=WAIT, what="dropme gone")
        wait_for(lambda: not works_for(fleet, "ConfigMap", "keepme"), timeout=WAIT, what="keepme's Work gone")
        assert cm_data(fleet, "keepme", "member2") == "v1"
        assert stays(lambda: cm_data(fleet, "keepme", "member2") == "v1") is True
        # what is kept is no longer marked as Karmada's: Karmada's execution controller
        # (cleanupPolicyClaimMetadata) removes the policy claim and its managed labels and annotations
        md = wait_for(lambda: (lambda o: o["metadata"] if "karmada.io/managed" not in meta_of(o, "labels") else None)(
            fleet.get("cm", "keepme", member="member2")), timeout=5, what="the managed label removed from keepme")
        left = sorted(k for k in (md.get("labels") or {}) if k in PRESERVE_CLEARED_LABELS) + \
            sorted(k for k in (md.get("annotations") or {}) if k in PRESERVE_CLEARED_ANNOTATIONS)
        assert left == [], f"Karmada's marks left on the preserved object: {left}"
    finally:
        fleet.delete("cm", "keepme", "dropme")
        fleet.delete("pp", "keepme", "dropme")
        fleet.delete("cm", "keepme", member="member2")


def parses(data):
    try:
        json.loads(data)
        return True
    except ValueError:
        return False


def test_binding_keeps_its_aggregated_status_when_its_spec_changes_in_place(fleet):
    """The controllers cache bindings without their aggregatedStatus; the scheduler's status
    write after a spec change that moves no replica must carry it all the same."""
    rb = "agg-configmap"

    def aggregated(b):
        items = (b or {}).get("status", {}).get("aggregatedStatus") or []
        return sorted(i["clusterName"] for i in items if i.get("applied")) == ["member1", "member2"]

    watch = None
    try:
        fleet.apply([configmap("agg"), policy("agg", [cm_selector("agg")], placement(["member1", "member2"]))])
        wait_for(lambda: aggregated(fleet.get("rb", rb)), timeout=WAIT,
                 what="agg applied in member1 and member2 per its binding")
        # every version of the binding from now on, as a watch sees them
        watch = subprocess.Popen([KUBECTL, "--kubeconfig", fleet.kubeconfig, "get", "rb", rb, "-w", "-o", "json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # the watch is on once it has printed the binding as it is (one JSON object)
        first, deadline = b"", time.time() + WAIT
        while not parses(first):
            assert time.time() < deadline, f"kubectl's watch printed no whole object: {first!r}"
            if select.select([watch.stdout], [], [], 0.5)[0]:
                first += os.read(watch.stdout.fileno(), 1 << 16)
        fleet.apply(policy("agg", [cm_selector("agg")], placement(["member1", "member2"]),
                           preserveResourcesOnDeletion=True))
        wait_for(lambda: (b := fleet.get("rb", rb)) and b["spec"].get("preserveResourcesOnDeletion") is True and
                 b["status"].get("schedulerObservedGeneration") == b["metadata"]["generation"], timeout=WAIT,
                 what="the scheduler to observe the binding's new generation")
        time.sleep(SETTLE)
        watch.terminate()
        out, _ = watch.communicate(timeout=10)
        out = (first + out).decode()
        versions, dec, i = [], json.JSONDecoder(), 0
        while out[i:].strip():
            i += len(out[i:]) - len(out[i:].lstrip())
            obj, i = dec.raw_decode(out, i)
            versions.append(obj)
        gens = {v["status"].get("schedulerObservedGeneration") for v in versions}
        assert len(versions) >= 2 and len(gens) >= 2, versions  # the scheduler's write is among them
        lost = [v["metadata"]["resourceVersion"] for v in versions if not aggregated(v)]
        assert lost == [], f"versions of the binding without its aggregatedStatus: {lost}"
    finally:
        if watch and watch.poll() is None:
            watch.kill()
            watch.wait()
        fleet.delete("cm", "agg")
        fleet.delete("pp", "agg")


# ---- suspension ----

def test_suspended_dispatching_holds_member_updates_until_resumed(fleet):
    try:
        fleet.apply([configmap("susp", {"k": "v1"}),
                     policy("susp", [cm_selector("susp"), cm_selector("susp-new")], placement(["member1", "member2"]))])
        wait_for(lambda: all(cm_data(fleet, "susp", m) == "v1" for m in ("member1", "member2")), timeout=WAIT,
                 what="susp v1 in member1 and member2")

        fleet.patch("pp", "susp", patch={"spec": {"suspension": {"dispatching": True}}})
        wait_for(lambda: (fleet.get("rb", "susp-configmap")["spec"].get("suspension") or {}).get("dispatching") is True,
                 timeout=WAIT, what="the binding's spec.suspension.dispatching")
        wait_for(lambda: len(works_for(fleet, "ConfigMap", "susp")) == 2 and
                 all(w["spec"].get("suspendDispatching") is True for w in works_for(fleet, "ConfigMap", "susp")),
                 timeout=WAIT, what="both Works suspended")

        fleet.patch("cm", "susp", patch={"data": {"k": "v2"}})
        # the Works carry v2, the members keep v1
        wait_for(lambda: all(w["spec"]["workload"]["manifests"][0]["data"]["k"] == "v2"
                             for w in works_for(fleet, "ConfigMap", "susp")), timeout=WAIT, what="v2 in the Works")
        # a template selected while suspended gets its Works, suspended, and reaches no member
        fleet.apply(configmap("susp-new", {"k": "new"}))
        wait_for(lambda: len(works_for(fleet, "ConfigMap", "susp-new")) == 2, timeout=WAIT, what="susp-new's Works")
        assert all(w["spec"].get("suspendDispatching") is True for w in works_for(fleet, "ConfigMap", "susp-new"))
        held = stays(lambda: all(cm_data(fleet, "susp", m) == "v1" and cm_data(fleet, "susp-new", m) is None
                                 for m in ("member1", "member2")))
        assert held is True, {m: (cm_data(fleet, "susp", m), cm_data(fleet, "susp-new", m))
                              for m in ("member1", "member2")}

        fleet.patch("pp", "susp", kind="json", patch=[{"op": "remove", "path": "/spec/suspension"}])
        wait_for(lambda: all(cm_data(fleet, "susp", m) == "v2" and cm_data(fleet, "susp-new", m) == "new"
                             for m in ("member1", "member2")), timeout=WAIT,
                 what="v2 and susp-new in member1 and member2 after resuming")
        assert not (fleet.get("rb", "susp-configmap")["spec"].get("suspension") or {}).get("dispatching")
        assert not any(w["spec"].get("suspendDispatching") for w in works_for(fleet, "ConfigMap", "susp"))
    finally:
        fleet.delete("cm", "susp", "susp-new")
        fleet.delete("pp", "susp")


# ---- events on the template ----

def test_template_events_say_policy_applied_and_why_nothing_fits(fleet):
    try:
        fleet.apply([configmap("ev-ok"), policy("ev-ok", [cm_selector("ev-ok")], placement(["member1"]))])
        wait_for(lambda: holders(fleet, "cm", "ev-ok") == ["member1"], timeout=WAIT, what="ev-ok in member1")
        ok = wait_for(lambda: [e for e in events_about(fleet, "ev-ok", "ConfigMap")
                               if e["reason"] == "ApplyPolicySucceed"], timeout=5, what="ApplyPolicySucceed")
        assert ok[0]["type"] == "Normal" and "default/ev-ok" in ok[0]["message"], ok[0]

        fleet.apply([configmap("ev-nofit"),
                     policy("ev-nofit", [cm_selector("ev-nofit")],
                            {"clusterAffinity": {"labelSelector": {"matchLabels": {"no-such": "label"}}}})])
        bad = wait_for(lambda: [e for e in events_about(fleet, "ev-nofit", "ConfigMap")
                                if e["reason"] == "ScheduleBindingFailed"], timeout=WAIT,
                       what="ScheduleBindingFailed on the template")
        assert bad[0]["type"] == "Warning", bad[0]
        assert "0/3 clusters are available" in bad[0]["message"], bad[0]
        assert "did not match the placement cluster affinity constraint" in bad[0]["message"], bad[0]
        c = condition(fleet.get("rb", "ev-nofit-configmap"), "Scheduled")
        assert c and c["status"] == "False" and c["reason"] == "NoClusterFit", c
        assert holders(fleet, "cm", "ev-nofit") == []
    finally:
        fleet.delete("cm", "ev-ok", "ev-nofit")
        fleet.delete("pp", "ev-ok", "ev-nofit")
