"""An OverridePolicy created and deleted a few seconds later while many templates propagate:
once it is gone, no Work keeps its override (docs/BENCHMARKS.md, live status at scale, "Bug: a
deleted OverridePolicy's override can stay in a Work").

In bench/status_scale a few Works kept a deleted policy's image for minutes: their bindings had
met write conflicts on their Works and were backed off (fixed since: a conflict requeues in
200 ms). Another way to the same end is closed in the binding controller: a render right after
its own writes, from a Work cache that did not hold them yet, found nothing to write, and the
cache's events of those writes, being the controller's own echo, never brought it back.
Templates change all the while (load on the binding and execution queues), and the policy
lives 0.2 to 3 s.
"""
import json
import threading
import time

from kubernetes import client, config

from conftest import deployment_manifest, running_fleet, wait_for

TEMPLATES = 40
MEMBERS = 6
# how long each policy lives: ~3 s as in the benchmark's churn, and shorter, which deletes it
# while the renders its creation started are still being written
HOLDS_S = (3, 0.2, 0.5, 1, 2, 3, 0.3)
SETTLE_S = 60


def propagate_all(names, members):
    """One PropagationPolicy in default sending every named Deployment to every member."""
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "oc-all", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": n}
                                           for n in names],
                     "placement": {"clusterAffinity": {"clusterNames": members}}}}


def fake_registry_everywhere(names, members, cycle):
    """OverridePolicy: every named Deployment's copy on every member takes its image from
    fake.io."""
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
            "metadata": {"name": f"oc-fake-{cycle}", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": n}
                                           for n in names],
                     "overrideRules": [{"targetCluster": {"clusterNames": members},
                                        "overriders": {"imageOverrider": [
                                            {"component": "Registry", "operator": "replace",
                                             "value": "fake.io"}]}}]}}


def our_works(custom, names):
    """The control plane's Works of the named Deployments."""
    items = custom.list_cluster_custom_object("work.karmada.io", "v1alpha1", "works")["items"]
    out = []
    for w in items:
        ms = w.get("spec", {}).get("workload", {}).get("manifests", [])
        if ms and ms[0].get("kind") == "Deployment" and ms[0].get("metadata", {}).get("name") in names:
            out.append(w)
    return out


def overridden(w):
    """Why Work w still shows an override, or None."""
    ann = w["metadata"].get("annotations", {})
    if "policy.karmada.io/applied-overrides" in ann:
        return f"{w['metadata']['namespace']}/{w['metadata']['name']}: {ann['policy.karmada.io/applied-overrides']}"
    if "fake.io" in json.dumps(w["spec"]["workload"]["manifests"]):
        return f"{w['metadata']['namespace']}/{w['metadata']['name']}: a fake.io image"
    return None


def keep_changing(apps, names, stop):
    """Load: every template's pod annotation changes, one template after another, until stop
    (bounded: at most 200 rounds)."""
    for rnd in range(200):
        for n in names:
            if stop.is_set():
                return
            body = {"spec": {"template": {"metadata": {"annotations": {"oc/round": str(rnd)}}}}}
            try:
                apps.patch_namespaced_deployment(n, "default", body)
            except client.ApiException:
                pass  # a busy server's answer is not what this test checks


def test_a_deleted_override_policy_leaves_no_work_overridden():
    members = [f"member{i}" for i in range(1, MEMBERS + 1)]
    names = [f"oc-{i}" for i in range(TEMPLATES)]
    with running_fleet(members=MEMBERS) as fleet:
        api = config.new_client_from_config(config_file=fleet.kubeconfig)
        apps, custom = client.AppsV1Api(api), client.CustomObjectsApi(api)
        fleet.apply([propagate_all(names, members)] + [deployment_manifest(n, deadline=1) for n in names])
        wait_for(lambda: len(our_works(custom, names)) == TEMPLATES * MEMBERS, timeout=120,
                 what="every template's Work on every member")
        seen = 0  # Works seen overridden while a policy lived: the override did reach them
        stop = threading.Event()
        loader = threading.Thread(target=keep_changing, args=(apps, names, stop), daemon=True)
        loader.start()
        try:
            for cycle, hold in enumerate(HOLDS_S):
                fleet.apply(fake_registry_everywhere(names, members, cycle))
                until = time.time() + hold
                while time.time() < until:
                    seen += sum(1 for w in our_works(custom, names) if overridden(w))
                    time.sleep(max(0.0, min(0.2, until - time.time())))
                fleet.kubectl("delete", "overridepolicy", f"oc-fake-{cycle}", "--wait=false")
                time.sleep(1)
        finally:
            stop.set()
            loader.join(timeout=60)
        assert seen > 0, "no Work ever showed the override"
        left = []

        def none_left():
            left[:] = [why for why in map(overridden, our_works(custom, names)) if why]
            return not left

        try:
            wait_for(none_left, timeout=SETTLE_S, interval=1, what="every Work without the deleted override")
        except AssertionError:
            raise AssertionError(f"{len(left)} Works keep a deleted policy's override {SETTLE_S} s after its "
                                 f"deletion: {left[:10]}") from None
        assert len(our_works(custom, names)) == TEMPLATES * MEMBERS
