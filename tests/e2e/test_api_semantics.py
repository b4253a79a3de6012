"""Kubernetes API semantics over plain HTTPS (curl and http.client), as clients rely on them.

Discovery, health, authentication, generation, the status subresource, finalizers, DELETE
options, dryRun, raw watch streams (resourceVersion, bookmarks, sendInitialEvents,
timeoutSeconds), Table output, patch error handling, the in-flight cap and SIGTERM.
"""
import socket
import threading
import time

import pytest

from conftest import E2E_STORE, create_crd, crd_manifest, ensure_namespace, wait_for

NS = "semantics"
CM = f"/api/v1/namespaces/{NS}/configmaps"
DEPLOY = f"/apis/apps/v1/namespaces/{NS}/deployments"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
WIDGETS = f"/apis/sem.example.com/v1/namespaces/{NS}/widgets"


@pytest.fixture(scope="module", autouse=True)
def namespace(server):
    ensure_namespace(server, NS)


@pytest.fixture(scope="module")
def widgets(server):
    create_crd(server, crd_manifest("sem.example.com", "Widget", "widgets"))
    return WIDGETS


def configmap(name, data=None, **meta):
    m = {"name": name}
    m.update(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": data or {}}


def deployment(name, replicas=2, containers=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": containers or [{"name": "main", "image": "nginx:1.27"}]}}}}


def create(server, path, obj):
    code, body = server.curl("POST", path, obj)
    assert code == 201, (code, body)
    return body


def get(server, path):
    return server.curl("GET", path)


def merge_patch(server, path, patch):
    return server.curl("PATCH", path, patch, content_type="application/merge-patch+json")


def assert_status(body, code, reason):
    assert isinstance(body, dict) and body.get("kind") == "Status", body
    assert body.get("code") == code, body
    assert body.get("reason") == reason, body
    assert body.get("message"), body


# ---------------------------------------------------------------- discovery


def test_discovery_core_group(server):
    code, body = get(server, "/api")
    assert code == 200, body
    assert body["kind"] == "APIVersions"
    assert "v1" in body["versions"]

    code, body = get(server, "/api/v1")
    assert code == 200, body
    assert body["kind"] == "APIResourceList"
    assert body["groupVersion"] == "v1"
    res = {r["name"]: r for r in body["resources"]}
    for name in ("namespaces", "configmaps", "secrets", "services", "serviceaccounts",
                 "persistentvolumeclaims", "pods", "events"):
        assert name in res, f"{name} missing from /api/v1: {sorted(res)}"
    cm = res["configmaps"]
    assert cm["kind"] == "ConfigMap"
    assert cm["namespaced"] is True
    assert cm["singularName"] == "configmap"
    assert "cm" in cm.get("shortNames", [])
    assert {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} <= set(cm["verbs"])
    ns = res["namespaces"]
    assert ns["namespaced"] is False
    assert "ns" in ns.get("shortNames", [])
    assert "namespaces/status" in res
    assert "pods/status" in res


def test_discovery_groups(server):
    code, body = get(server, "/apis")
    assert code == 200, body
    assert body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    want = {
        "apps": ["v1"], "batch": ["v1"], "coordination.k8s.io": ["v1"], "apiextensions.k8s.io": ["v1"],
        "cluster.karmada.io": ["v1alpha1"], "policy.karmada.io": ["v1alpha1"],
        "work.karmada.io": ["v1alpha1", "v1alpha2"], "config.karmada.io": ["v1alpha1"],
    }
    for name, versions in want.items():
        assert name in groups, f"group {name} missing from /apis: {sorted(groups)}"
        got = [v["version"] for v in groups[name]["versions"]]
        for v in versions:
            assert v in got, (name, got)
        assert groups[name]["preferredVersion"]["groupVersion"].startswith(name + "/")
        for v in groups[name]["versions"]:
            assert v["groupVersion"] == f"{name}/{v['version']}"

    code, body = get(server, "/apis/apps")
    assert code == 200, body
    assert body["kind"] == "APIGroup" and body["name"] == "apps"


def test_discovery_group_version_resources(server):
    code, body = get(server, "/apis/apps/v1")
    assert code == 200, body
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "apps/v1"
    res = {r["name"]: r for r in body["resources"]}
    d = res["deployments"]
    assert d["kind"] == "Deployment" and d["namespaced"] is True and d["singularName"] == "deployment"
    assert "deploy" in d["shortNames"]
    assert "all" in d.get("categories", [])
    assert {"create", "get", "list", "watch", "patch", "update", "delete"} <= set(d["verbs"])
    assert "deployments/status" in res
    for name, short in (("statefulsets", "sts"), ("daemonsets", "ds"), ("replicasets", "rs")):
        assert short in res[name]["shortNames"], res[name]

    code, body = get(server, "/apis/policy.karmada.io/v1alpha1")
    assert code == 200, body
    res = {r["name"]: r for r in body["resources"]}
    for name, short, namespaced in (("propagationpolicies", "pp", True), ("clusterpropagationpolicies", "cpp", False),
                                    ("overridepolicies", "op", True), ("clusteroverridepolicies", "cop", False)):
        assert short in res[name].get("shortNames", []), res[name]
        assert res[name]["namespaced"] is namespaced, res[name]

    code, body = get(server, "/apis/cluster.karmada.io/v1alpha1")
    assert code == 200, body
    res = {r["name"]: r for r in body["resources"]}
    assert res["clusters"]["kind"] == "Cluster" and res["clusters"]["namespaced"] is False
    assert "clusters/status" in res

    code, body = get(server, "/apis/no-such-group.example.com/v1")
    assert code == 404, body


def test_version_endpoint(server):
    code, body = server.curl("GET", "/version", auth=False)
    assert code == 200, body
    assert body["major"] == "1" and body["minor"]
    assert body["gitVersion"].startswith("v")
    assert body["platform"]


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_health_endpoints_need_no_auth(server, path):
    code, body = server.curl("GET", path, auth=False)
    assert code == 200, body
    assert body == "ok"


def unchanged_since(server, path):
    """A snapshot of what path lists (each item's name and resourceVersion) and, on SQLite,
    the store's revision; call it again to compare. On etcd the list's resourceVersion is the
    cluster's revision, which the lead, its lease and the notes move as well (as
    kube-apiserver's list revision moves with every write to its etcd)."""
    code, body = server.curl("GET", path)
    assert code == 200, body
    items = sorted((i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in body["items"])
    return items, body["metadata"]["resourceVersion"] if E2E_STORE == "sqlite" else None


def test_requests_without_a_valid_token_are_401(server):
    before = unchanged_since(server, CM)
    code, body = server.curl("GET", "/api/v1/namespaces", auth=False)
    assert code == 401, body
    assert_status(body, 401, "Unauthorized")
    code, body = server.curl("GET", "/api/v1/namespaces", auth=False, headers=["Authorization: Bearer wrong-token"])
    assert code == 401, body
    code, body = server.curl("POST", CM, configmap("sneaky"), auth=False)
    assert code == 401, body
    assert get(server, f"{CM}/sneaky")[0] == 404
    assert unchanged_since(server, CM) == before
    # a wrong token is refused even on the public health paths (as the apiserver does), so a
    # health probe made with stale credentials does not pass
    code, body = server.curl("GET", "/readyz", auth=False, headers=["Authorization: Bearer wrong-token"])
    assert code == 401, body


# ---------------------------------------------------------------- generation and status


def test_generation_bumps_on_spec_change_only(server):
    create(server, DEPLOY, deployment("gen"))
    code, d = get(server, f"{DEPLOY}/gen")
    assert d["metadata"]["generation"] == 1
    assert d["metadata"]["uid"] and d["metadata"]["creationTimestamp"] and d["metadata"]["resourceVersion"]

    code, d2 = merge_patch(server, f"{DEPLOY}/gen", {"metadata": {"labels": {"touched": "yes"}}})
    assert code == 200, d2
    assert d2["metadata"]["labels"]["touched"] == "yes"
    assert d2["metadata"]["generation"] == 1, "metadata-only change must not bump generation"
    assert int(d2["metadata"]["resourceVersion"]) > int(d["metadata"]["resourceVersion"])

    code, d3 = merge_patch(server, f"{DEPLOY}/gen", {"spec": {"replicas": 5}})
    assert code == 200, d3
    assert d3["metadata"]["generation"] == 2

    code, d4 = merge_patch(server, f"{DEPLOY}/gen/status", {"status": {"replicas": 5, "observedGeneration": 2}})
    assert code == 200, d4
    assert d4["metadata"]["generation"] == 2, "status change must not bump generation"

    # a no-op spec write leaves generation alone
    code, d5 = merge_patch(server, f"{DEPLOY}/gen", {"spec": {"replicas": 5}})
    assert code == 200, d5
    assert d5["metadata"]["generation"] == 2


def test_generation_on_custom_resources(server, widgets):
    # with a status subresource: spec bumps, status (via /status) does not
    create(server, widgets, {"apiVersion": "sem.example.com/v1", "kind": "Widget",
                             "metadata": {"name": "g1"}, "spec": {"size": 1}})
    code, w = merge_patch(server, f"{widgets}/g1", {"spec": {"size": 2}})
    assert code == 200, w
    assert w["metadata"]["generation"] == 2
    code, w = merge_patch(server, f"{widgets}/g1/status", {"status": {"phase": "Ready"}})
    assert code == 200, w
    assert w["metadata"]["generation"] == 2
    assert w["status"]["phase"] == "Ready"
    code, w = merge_patch(server, f"{widgets}/g1", {"metadata": {"annotations": {"a": "b"}}})
    assert code == 200, w
    assert w["metadata"]["generation"] == 2


def test_status_subresource_ignores_spec_and_main_resource_ignores_status(server):
    create(server, DEPLOY, deployment("stat", replicas=2))
    code, d = merge_patch(server, f"{DEPLOY}/stat/status",
                          {"spec": {"replicas": 9}, "status": {"replicas": 2, "readyReplicas": 1}})
    assert code == 200, d
    assert d["spec"]["replicas"] == 2, "a /status write must not change spec"
    assert d["status"]["readyReplicas"] == 1

    code, d = merge_patch(server, f"{DEPLOY}/stat",
                          {"metadata": {"labels": {"l": "v"}}, "status": {"readyReplicas": 7}})
    assert code == 200, d
    assert d["status"]["readyReplicas"] == 1, "a main-resource write must not change status"
    assert d["metadata"]["labels"]["l"] == "v"

    # PUT on /status, too
    d["status"]["availableReplicas"] = 1
    d["spec"]["replicas"] = 11
    code, d2 = server.curl("PUT", f"{DEPLOY}/stat/status", d)
    assert code == 200, d2
    assert d2["status"]["availableReplicas"] == 1
    assert d2["spec"]["replicas"] == 2
    code, d3 = get(server, f"{DEPLOY}/stat")
    assert d3["spec"]["replicas"] == 2 and d3["status"]["availableReplicas"] == 1


# ---------------------------------------------------------------- finalizers and DELETE options


def test_finalizer_holds_deletion_until_removed(server):
    create(server, CM, configmap("held", {"k": "v"}, finalizers=["e2e.flotilla.io/hold"]))
    code, body = server.curl("DELETE", f"{CM}/held")
    # Kubernetes answers 200 (or 202 when orphanDependents=false) with the object itself
    assert code in (200, 202), (code, body)
    assert body.get("kind") == "ConfigMap", body
    assert body["metadata"].get("deletionTimestamp"), body

    code, obj = get(server, f"{CM}/held")
    assert code == 200, "an object with finalizers must stay until they are removed"
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["finalizers"] == ["e2e.flotilla.io/hold"]
    names = [i["metadata"]["name"] for i in get(server, CM)[1]["items"]]
    assert "held" in names

    code, body = merge_patch(server, f"{CM}/held", {"metadata": {"finalizers": None}})
    assert code == 200, body
    wait_for(lambda: get(server, f"{CM}/held")[0] == 404, timeout=10, what="held to be deleted")


def test_delete_preconditions(server):
    obj = create(server, CM, configmap("pre", {"k": "v"}))
    uid, rv = obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]

    code, body = server.curl("DELETE", f"{CM}/pre", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                     "preconditions": {"uid": "00000000-0000-4000-8000-000000000000"}})
    assert code == 409, body
    assert_status(body, 409, "Conflict")
    assert get(server, f"{CM}/pre")[0] == 200

    merge_patch(server, f"{CM}/pre", {"data": {"k": "v2"}})
    code, body = server.curl("DELETE", f"{CM}/pre", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                     "preconditions": {"resourceVersion": rv}})
    assert code == 409, body
    assert_status(body, 409, "Conflict")
    assert get(server, f"{CM}/pre")[0] == 200

    code, body = server.curl("DELETE", f"{CM}/pre", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                     "preconditions": {"uid": uid}})
    assert code == 200, body
    assert get(server, f"{CM}/pre")[0] == 404


def _owned(name, owner):
    return configmap(name, {"x": "y"}, ownerReferences=[{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"]}])


def test_delete_background_removes_dependents(server):
    owner = create(server, CM, configmap("owner-bg"))
    create(server, CM, _owned("dep-bg", owner))
    bystander = create(server, CM, configmap("bystander-bg"))
    code, body = server.curl("DELETE", f"{CM}/owner-bg?propagationPolicy=Background")
    assert code in (200, 202), body
    wait_for(lambda: get(server, f"{CM}/owner-bg")[0] == 404, timeout=10, what="owner to go")
    wait_for(lambda: get(server, f"{CM}/dep-bg")[0] == 404, timeout=15, what="dependent to be collected")
    code, b = get(server, f"{CM}/bystander-bg")
    assert code == 200 and b["metadata"]["resourceVersion"] == bystander["metadata"]["resourceVersion"]


def test_dependents_stored_before_a_restart_are_collected_after_it(fresh_server):
    # the owned objects in the store are counted beside the server after a start; a delete
    # right after it must still find the dependents
    s = fresh_server.start()
    ensure_namespace(s, NS)
    owner = create(s, CM, configmap("owner-rs"))
    create(s, CM, _owned("dep-rs", owner))
    s.kill()
    s.start()
    code, body = s.curl("DELETE", f"{CM}/owner-rs?propagationPolicy=Background")
    assert code in (200, 202), body
    wait_for(lambda: get(s, f"{CM}/dep-rs")[0] == 404, timeout=15, what="dependent to be collected")


def test_delete_orphan_keeps_dependents_without_owner_reference(server):
    owner = create(server, CM, configmap("owner-or"))
    other = create(server, CM, configmap("other-owner-or"))
    dep = _owned("dep-or", owner)
    dep["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": "other-owner-or", "uid": other["metadata"]["uid"]})
    create(server, CM, dep)
    code, body = server.curl("DELETE", f"{CM}/owner-or",
                             {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"})
    assert code in (200, 202), body
    wait_for(lambda: get(server, f"{CM}/owner-or")[0] == 404, timeout=15, what="owner to go")

    def orphaned():
        code, d = get(server, f"{CM}/dep-or")
        assert code == 200, "an orphaned dependent must not be deleted"
        uids = [r["uid"] for r in d["metadata"].get("ownerReferences", [])]
        return owner["metadata"]["uid"] not in uids and uids == [other["metadata"]["uid"]]

    wait_for(orphaned, timeout=15, what="the owner reference to be removed (and only that one)")
    time.sleep(0.5)
    assert get(server, f"{CM}/dep-or")[0] == 200


def test_dry_run_changes_nothing(server):
    rv_before = unchanged_since(server, CM)
    code, body = server.curl("POST", f"{CM}?dryRun=All", configmap("dry", {"a": "1"}))
    assert code == 201, body
    assert body["metadata"]["name"] == "dry" and body["data"] == {"a": "1"}
    assert get(server, f"{CM}/dry")[0] == 404
    assert unchanged_since(server, CM) == rv_before

    real = create(server, CM, configmap("dry-real", {"a": "1"}))
    rv = real["metadata"]["resourceVersion"]
    real["data"] = {"a": "2"}
    code, body = server.curl("PUT", f"{CM}/dry-real?dryRun=All", real)
    assert code == 200, body
    assert body["data"] == {"a": "2"}
    code, body = merge_patch(server, f"{CM}/dry-real?dryRun=All", {"data": {"b": "3"}})
    assert code == 200, body
    assert body["data"] == {"a": "1", "b": "3"}
    code, body = server.curl("DELETE", f"{CM}/dry-real?dryRun=All")
    assert code == 200, body
    code, now = get(server, f"{CM}/dry-real")
    assert code == 200
    assert now["data"] == {"a": "1"} and now["metadata"]["resourceVersion"] == rv


def test_dry_run_in_delete_options_body(server):
    """kubectl delete --dry-run=server sends dryRun in the DeleteOptions body, not the query."""
    obj = create(server, CM, configmap("dry-body", {"a": "1"}))
    code, body = server.curl("DELETE", f"{CM}/dry-body",
                             {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]})
    assert code == 200, body
    code, now = get(server, f"{CM}/dry-body")
    assert code == 200, "a dry-run delete (dryRun in the body) deleted the object"
    assert now["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    code, body = server.curl("DELETE", f"{CM}/dry-body", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                          "dryRun": ["Bogus"]})
    assert code in (400, 422), body
    assert get(server, f"{CM}/dry-body")[0] == 200


def test_secret_string_data_is_merged_into_data(server):
    path = f"/api/v1/namespaces/{NS}/secrets"
    sec = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sd"},
           "data": {"c": "ZA=="}, "stringData": {"a": "b", "c": "overrides"}}
    body = create(server, path, sec)
    assert "stringData" not in body, body
    assert body["data"] == {"a": "Yg==", "c": "b3ZlcnJpZGVz"}, body
    assert body["type"] == "Opaque", "Secret type defaults to Opaque"
    code, got = get(server, f"{path}/sd")
    assert got["data"] == {"a": "Yg==", "c": "b3ZlcnJpZGVz"} and "stringData" not in got
    code, body = merge_patch(server, f"{path}/sd", {"stringData": {"e": "f"}})
    assert code == 200, body
    assert body["data"]["e"] == "Zg==" and "stringData" not in body


def test_metrics_endpoint(server):
    get(server, CM)
    code, text = server.curl("GET", "/metrics")
    assert code == 200, text
    assert isinstance(text, str)
    assert "# TYPE flotilla_apiserver_request_total counter" in text
    assert any(ln.startswith("flotilla_apiserver_request_total{") and 'code="200"' in ln for ln in text.splitlines())
    assert "flotilla_apiserver_request_duration_seconds_bucket{" in text


# ---------------------------------------------------------------- watch


def test_watch_from_zero_lists_then_streams_changes(server):
    ns = "watch-zero"
    ensure_namespace(server, ns)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    create(server, path, configmap("a", {"v": "1"}))
    create(server, path, configmap("b", {"v": "1"}))
    with server.watch(f"{path}?watch=1&resourceVersion=0") as w:
        assert w.status == 200, w.body
        first = w.collect(2, timeout=10)
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in first) == [("ADDED", "a"), ("ADDED", "b")]
        assert all(e["object"]["kind"] == "ConfigMap" and e["object"]["apiVersion"] == "v1" for e in first)
        create(server, path, configmap("c"))
        merge_patch(server, f"{path}/a", {"data": {"v": "2"}})
        server.curl("DELETE", f"{path}/b")
        later = w.collect(3, timeout=10)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in later] == [
            ("ADDED", "c"), ("MODIFIED", "a"), ("DELETED", "b")]
        assert later[1]["object"]["data"] == {"v": "2"}
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in later]
        assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_watch_from_resource_version_sees_only_later_changes(server):
    ns = "watch-rv"
    ensure_namespace(server, ns)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    x = create(server, path, configmap("x", {"v": "1"}))
    rv = x["metadata"]["resourceVersion"]
    merge_patch(server, f"{path}/x", {"data": {"v": "2"}})
    create(server, path, configmap("y"))
    with server.watch(f"{path}?watch=true&resourceVersion={rv}") as w:
        assert w.status == 200, w.body
        evs = w.collect(2, timeout=10)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [("MODIFIED", "x"), ("ADDED", "y")]
        assert evs[0]["object"]["data"] == {"v": "2"}
        extra = [e for e in w.drain(0.7) if e["type"] != "BOOKMARK"]
        assert extra == [], f"a watch from {rv} must not replay older state: {extra}"


def test_watch_single_object_by_field_selector(server):
    ns = "watch-one"
    ensure_namespace(server, ns)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    rv = server.list_rv(path)
    with server.watch(f"{path}?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3Dme") as w:
        create(server, path, configmap("not-me"))
        create(server, path, configmap("me"))
        ev = w.next(timeout=10)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "me", ev


@pytest.mark.parametrize("n,value", [(1, "true"), (2, "True"), (3, "1")])
def test_watch_query_accepts_the_spellings_clients_send(server, n, value):
    """The Python client sends watch=True; Kubernetes treats anything but "false"/"0" as true."""
    ns = "watch-bool"
    ensure_namespace(server, ns)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    rv = server.list_rv(path)
    with server.watch(f"{path}?watch={value}&resourceVersion={rv}&allowWatchBookmarks={value}") as w:
        assert w.status == 200, w.body
        create(server, path, configmap(f"b{n}"))
        ev = w.collect(1, timeout=10, pred=lambda e: e.get("type") != "BOOKMARK")[0]
        assert ev.get("type") == "ADDED", f"watch={value} did not start a watch; got {str(ev)[:200]}"
        assert ev["object"]["metadata"]["name"] == f"b{n}", ev
    code, body = get(server, f"{path}?watch=false")
    assert code == 200 and body["kind"] == "ConfigMapList", body


def test_watch_bookmarks(server_factory):
    s = server_factory("--bookmark-interval-ms", "500")
    ensure_namespace(s, "bm")
    path = "/api/v1/namespaces/bm/configmaps"
    rv = int(s.list_rv(path))
    with s.watch(f"{path}?watch=1&allowWatchBookmarks=true&resourceVersion={rv}") as w:
        assert w.status == 200, w.body
        ev = w.next(timeout=8)
        assert ev["type"] == "BOOKMARK", ev
        assert ev["object"]["kind"] == "ConfigMap" and ev["object"]["apiVersion"] == "v1", ev
        assert int(ev["object"]["metadata"]["resourceVersion"]) >= rv
    with s.watch(f"{path}?watch=1&resourceVersion={rv}") as w:
        got = w.drain(1.5)
        assert not [e for e in got if e["type"] == "BOOKMARK"], "bookmarks only when allowWatchBookmarks=true"


def test_watch_send_initial_events_ends_with_bookmark(server):
    ns = "initial"
    ensure_namespace(server, ns)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    rvs = [int(create(server, path, configmap(f"i{i}"))["metadata"]["resourceVersion"]) for i in range(3)]
    q = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    with server.watch(f"{path}?{q}") as w:
        assert w.status == 200, w.body
        evs = w.collect(4, timeout=10)
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in evs[:3]) == [
            ("ADDED", "i0"), ("ADDED", "i1"), ("ADDED", "i2")]
        end = evs[3]
        assert end["type"] == "BOOKMARK", end
        ann = end["object"]["metadata"].get("annotations", {})
        assert ann.get("k8s.io/initial-events-end") == "true", end
        assert int(end["object"]["metadata"]["resourceVersion"]) >= max(rvs)
        create(server, path, configmap("after"))
        ev = w.collect(1, timeout=10, pred=lambda e: e["type"] != "BOOKMARK")[0]
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "after"


def test_watch_timeout_seconds_ends_the_stream(server):
    t0 = time.time()
    with server.watch(f"{CM}?watch=1&timeoutSeconds=1&resourceVersion={server.list_rv(CM)}") as w:
        assert w.status == 200, w.body
        deadline = t0 + 8
        while True:
            ev = w.next(timeout=max(0.1, deadline - time.time()))
            if ev is None:
                break
        took = time.time() - t0
        assert 0.8 <= took < 6, f"stream with timeoutSeconds=1 ended after {took:.2f}s"


# ---------------------------------------------------------------- Table output


def table_rows(table):
    names = [c["name"].lower() for c in table["columnDefinitions"]]
    return names, [dict(zip(names, r["cells"])) for r in table["rows"]]


def test_table_output_for_deployments(server):
    create(server, DEPLOY, deployment("tbl", replicas=3))
    merge_patch(server, f"{DEPLOY}/tbl/status",
                {"status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}})
    code, t = server.curl("GET", DEPLOY, headers=[f"Accept: {TABLE}"])
    assert code == 200, t
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1", t
    names, rows = table_rows(t)
    assert t["columnDefinitions"][0]["format"] == "name"
    row = next(r for r in rows if r["name"] == "tbl")
    assert row["ready"] == "2/3"
    assert row["up-to-date"] == 3 and row["available"] == 2
    raw = next(r for r in t["rows"] if r["cells"][0] == "tbl")
    assert raw["object"]["metadata"]["name"] == "tbl"
    assert t["metadata"].get("resourceVersion")
    # the apiserver's order: default columns (Age included) first, then the -o wide ones (priority 1)
    assert names == ["name", "ready", "up-to-date", "available", "age", "containers", "images", "selector"], names
    prio = [c.get("priority", 0) for c in t["columnDefinitions"]]
    assert prio == [0, 0, 0, 0, 0, 1, 1, 1], prio

    code, t = server.curl("GET", f"{DEPLOY}/tbl", headers=[f"Accept: {TABLE}"])
    assert code == 200 and t["kind"] == "Table" and len(t["rows"]) == 1 and t["rows"][0]["cells"][0] == "tbl"


def test_table_output_for_configmaps_and_namespaces(server):
    create(server, CM, configmap("tbl-cm", {"a": "1", "b": "2", "c": "3"}))
    code, t = server.curl("GET", f"{CM}/tbl-cm", headers=[f"Accept: {TABLE}"])
    assert code == 200, t
    names, rows = table_rows(t)
    assert names == ["name", "data", "age"], names
    assert rows[0]["data"] == 3

    code, t = server.curl("GET", "/api/v1/namespaces", headers=[f"Accept: {TABLE}"])
    names, rows = table_rows(t)
    assert names == ["name", "status", "age"], names
    assert {"name": "default", "status": "Active"}.items() <= next(r for r in rows if r["name"] == "default").items()


# ---------------------------------------------------------------- patches


def test_json_patch_failed_test_is_422_and_changes_nothing(server):
    obj = create(server, CM, configmap("jp", {"a": "1"}))
    ops = [{"op": "test", "path": "/data/a", "value": "2"}, {"op": "replace", "path": "/data/a", "value": "3"}]
    code, body = server.curl("PATCH", f"{CM}/jp", ops, content_type="application/json-patch+json")
    assert code == 422, body
    assert body["kind"] == "Status" and body["code"] == 422 and body["message"]
    code, now = get(server, f"{CM}/jp")
    assert now["data"] == {"a": "1"} and now["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]

    ops = [{"op": "test", "path": "/data/a", "value": "1"}, {"op": "add", "path": "/data/b", "value": "2"},
           {"op": "remove", "path": "/data/a"}]
    code, body = server.curl("PATCH", f"{CM}/jp", ops, content_type="application/json-patch+json")
    assert code == 200, body
    assert body["data"] == {"b": "2"}


def test_merge_patch_on_custom_resource(server, widgets):
    create(server, widgets, {"apiVersion": "sem.example.com/v1", "kind": "Widget", "metadata": {"name": "mp"},
                             "spec": {"size": 1, "color": "red", "tags": ["a", "b"], "nested": {"x": 1, "y": 2}}})
    code, w = merge_patch(server, f"{widgets}/mp", {"spec": {"size": 2, "color": None, "nested": {"y": None}}})
    assert code == 200, w
    assert w["spec"] == {"size": 2, "tags": ["a", "b"], "nested": {"x": 1}}, w["spec"]
    code, w2 = get(server, f"{widgets}/mp")
    assert w2["spec"] == w["spec"]


def test_strategic_merge_patch_on_custom_resource_is_415(server, widgets):
    obj = create(server, widgets, {"apiVersion": "sem.example.com/v1", "kind": "Widget", "metadata": {"name": "smp"},
                                   "spec": {"size": 1}})
    code, body = server.curl("PATCH", f"{widgets}/smp", {"spec": {"size": 5}},
                             content_type="application/strategic-merge-patch+json")
    assert code == 415, body
    assert_status(body, 415, "UnsupportedMediaType")
    code, now = get(server, f"{widgets}/smp")
    assert now["spec"]["size"] == 1
    assert now["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def apply_yaml(server, path, text, manager=None, force=False):
    q = []
    if manager:
        q.append(f"fieldManager={manager}")
    if force:
        q.append("force=true")
    return server.curl("PATCH", path + ("?" + "&".join(q) if q else ""), text,
                       content_type="application/apply-patch+yaml")


def owned(obj, manager):
    """The FieldsV1 set a manager's Apply entry holds."""
    for e in obj["metadata"].get("managedFields", []):
        if e["manager"] == manager and e["operation"] == "Apply":
            return e["fieldsV1"]
    return None


def ssa_cm(data):
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n" + \
        "".join(f"  {k}: '{v}'\n" for k, v in data.items())


def test_server_side_apply_ownership_conflicts_and_force(server):
    path = f"{CM}/ssa"
    code, body = apply_yaml(server, path, ssa_cm({"a": "1", "b": "2"}), "alice")
    assert code == 201, body  # apply creates a missing object
    assert body["data"] == {"a": "1", "b": "2"}
    assert {"f:a", "f:b"} <= set(owned(body, "alice")["f:data"]), body["metadata"]["managedFields"]
    rv = body["metadata"]["resourceVersion"]

    code, body = apply_yaml(server, path, ssa_cm({"a": "1", "b": "2"}), "alice")
    assert code == 200, body
    assert body["metadata"]["resourceVersion"] == rv, "a no-op apply must not write"

    code, body = apply_yaml(server, path, ssa_cm({"a": "bob"}), "bob")
    assert code == 409, body
    assert_status(body, 409, "Conflict")
    causes = body["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [(".data.a", "FieldManagerConflict")], causes
    assert "alice" in causes[0]["message"]
    assert get(server, path)[1]["data"] == {"a": "1", "b": "2"}

    # the same value is no conflict: both own it
    code, body = apply_yaml(server, path, ssa_cm({"b": "2"}), "carol")
    assert code == 200, body
    assert "f:b" in owned(body, "carol")["f:data"] and "f:b" in owned(body, "alice")["f:data"]

    code, body = apply_yaml(server, path, ssa_cm({"a": "bob"}), "bob", force=True)
    assert code == 200, body
    assert body["data"] == {"a": "bob", "b": "2"}
    assert "f:a" not in owned(body, "alice")["f:data"], "force must take the field away from alice"

    # alice drops b from her configuration: carol still owns it, so it stays; c is new
    code, body = apply_yaml(server, path, ssa_cm({"c": "3"}), "alice")
    assert code == 200, body
    assert body["data"] == {"a": "bob", "b": "2", "c": "3"}
    # carol drops b too: nobody owns it any more, so it is removed
    code, body = apply_yaml(server, path, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n", "carol")
    assert code == 200, body
    assert body["data"] == {"a": "bob", "c": "3"}


def test_server_side_apply_option_errors(server):
    path = f"{CM}/ssa-opts"
    code, body = apply_yaml(server, path, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-opts\n")
    assert code == 422, body
    assert_status(body, 422, "Invalid")
    assert [c.get("field") for c in body["details"]["causes"]] == ["fieldManager"], body
    assert get(server, path)[0] == 404

    create(server, CM, configmap("ssa-opts", {"a": "1"}))
    code, body = server.curl("PATCH", f"{path}?force=true", {"data": {"a": "2"}},
                             content_type="application/merge-patch+json")
    assert code == 422, body
    assert_status(body, 422, "Invalid")
    assert get(server, path)[1]["data"] == {"a": "1"}


def test_server_side_apply_on_custom_resource(server, widgets):
    path = f"{widgets}/applied"
    doc = ("apiVersion: sem.example.com/v1\nkind: Widget\nmetadata:\n  name: applied\n"
           "spec:\n  size: 3\n  color: blue\n")
    code, body = apply_yaml(server, path, doc, "ci")
    assert code == 201, body
    assert body["spec"] == {"size": 3, "color": "blue"} and body["metadata"]["generation"] == 1
    code, body = merge_patch(server, path, {"spec": {"extra": True}})
    assert code == 200, body
    code, body = apply_yaml(server, path, doc.replace("size: 3", "size: 4").replace("  color: blue\n", ""), "ci")
    assert code == 200, body
    assert body["spec"] == {"size": 4, "extra": True}, "apply prunes only the applier's own fields"
    assert body["metadata"]["generation"] == 3


# ---------------------------------------------------------------- overload and shutdown


def _stalled_list(server, path):
    """Send a LIST whose (large) response we never read, so the server keeps the request in flight."""
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(20)
    raw.connect(("127.0.0.1", server.port))
    tls = server.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")
    req = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token()}\r\n"
           "Accept: application/json\r\n\r\n")
    tls.sendall(req.encode())
    return tls


def test_too_many_requests_in_flight_is_429(server_factory):
    s = server_factory("--max-requests-inflight", "1")
    ensure_namespace(s, "big")
    path = "/api/v1/namespaces/big/configmaps"
    blob = "x" * (512 * 1024)
    for i in range(16):  # an 8 MiB list: far more than the socket buffers hold
        code, _, body = s.http("POST", path, configmap(f"big{i}", {"blob": blob}))
        assert code == 201, body
    stalled = _stalled_list(s, path)
    try:
        time.sleep(0.5)  # let the server start writing the response
        results = []
        lock = threading.Lock()

        def hit():
            r = s.http("GET", f"{path}?limit=1")
            with lock:
                results.append(r)

        threads = [threading.Thread(target=hit) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        refused = [r for r in results if r[0] == 429]
        assert refused, f"no 429 with one slot held: {[r[0] for r in results]}"
        code, hdrs, body = refused[0]
        assert_status(body, 429, "TooManyRequests")
        assert hdrs.get("retry-after", "").isdigit(), hdrs
    finally:
        stalled.close()
    # once the slot is free the server answers again
    wait_for(lambda: s.http("GET", f"{path}?limit=1")[0] == 200, timeout=10, what="the server to recover")


def test_sigterm_with_an_open_watch_exits_cleanly(fresh_server):
    s = fresh_server.start()
    ensure_namespace(s, "bye")
    path = "/api/v1/namespaces/bye/configmaps"
    w = s.watch(f"{path}?watch=1&resourceVersion={s.list_rv(path)}")
    assert w.status == 200, w.body
    create(s, path, configmap("one"))
    assert w.next(timeout=10)["type"] == "ADDED"
    t0 = time.time()
    rc = s.stop()
    assert rc == 0, f"exit code {rc} on SIGTERM:\n{s.log()}"
    assert time.time() - t0 < 15
    end = w.drain(5)
    assert w.ended_at is not None, f"the watch stream stayed open after shutdown (got {end})"
    w.close()


def test_custom_resources_are_pruned_defaulted_and_strictly_validated(server):
    """A CRD's structural schema decides what is stored: undeclared fields are pruned (Warn,
    the default: one Warning header each), refused with fieldValidation=Strict, and schema
    defaults fill absent fields."""
    manifest = crd_manifest("schema.example.com", "Gadget", "gadgets")
    manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
        "type": "object",
        "properties": {"size": {"type": "integer"}, "mode": {"type": "string", "default": "fast"}}}
    path = create_crd(server, manifest)
    coll = path.replace("/gadgets", "/namespaces/default/gadgets")
    body = {"apiVersion": "schema.example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"},
            "spec": {"size": 2, "colour": "red"}}
    code, headers, err = server.http("POST", coll + "?fieldValidation=Strict", body)
    assert code == 400, err
    assert err["reason"] == "BadRequest"
    assert 'strict decoding error: unknown field "spec.colour"' in err["message"]
    assert server.curl("GET", coll + "/g1")[0] == 404, "a refused create stored something"

    code, headers, obj = server.http("POST", coll, body)
    assert code == 201, obj
    assert 'unknown field \\"spec.colour\\"' in headers.get("warning", ""), headers
    assert obj["spec"] == {"size": 2, "mode": "fast"}
    code, stored = server.curl("GET", coll + "/g1")
    assert stored["spec"] == {"size": 2, "mode": "fast"}

    code, _, err = server.http("POST", coll + "?fieldValidation=Bogus", body)
    assert code == 422 and err["details"]["causes"][0]["field"] == "fieldValidation", err


def test_watch_from_a_future_resource_version_is_refused(server):
    """A resourceVersion the store has not reached (a client resuming against a store that lost
    history) is refused after a short wait, as the apiserver's watch cache refuses it."""
    code, lst = server.curl("GET", "/api/v1/namespaces/default/configmaps")
    future = int(lst["metadata"]["resourceVersion"]) + 1000000
    t0 = time.time()
    code, body = server.curl("GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={future}")
    assert code == 504, body
    assert body["reason"] == "Timeout"
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert 2.5 <= time.time() - t0 < 10
