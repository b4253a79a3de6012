"""The official Python client (Debian's python3-kubernetes) against flotilla server: CRUD on
built-in and Karmada kinds, paging, watches resumed from a resourceVersion, 410 Expired, and
the error reasons the client's users test for."""
import json
import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from conftest import ensure_namespace, wait_for

NS = "pyclient"


@pytest.fixture(scope="module")
def api(server):
    ensure_namespace(server, NS)
    c = config.new_client_from_config(config_file=server.kubeconfig)
    yield c
    c.close()


def core(api):
    return client.CoreV1Api(api)


def cm(name, data=None, labels=None):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data or {})


def status_body(exc):
    return json.loads(exc.body)


# ---------------------------------------------------------------- CRUD


def test_configmap_crud(api):
    v1 = core(api)
    created = v1.create_namespaced_config_map(NS, cm("crud", {"a": "1"}, {"app": "crud"}))
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None

    got = v1.read_namespaced_config_map("crud", NS)
    assert got.data == {"a": "1"} and got.metadata.uid == created.metadata.uid

    got.data["b"] = "2"
    replaced = v1.replace_namespaced_config_map("crud", NS, got)
    assert replaced.data == {"a": "1", "b": "2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    patched = v1.patch_namespaced_config_map("crud", NS, {"data": {"c": "3"}})
    assert patched.data == {"a": "1", "b": "2", "c": "3"}
    patched = v1.patch_namespaced_config_map("crud", NS, [{"op": "remove", "path": "/data/a"}])
    assert patched.data == {"b": "2", "c": "3"}

    listed = v1.list_namespaced_config_map(NS, label_selector="app=crud")
    assert [i.metadata.name for i in listed.items] == ["crud"]
    assert listed.metadata.resource_version

    v1.delete_namespaced_config_map("crud", NS)
    with pytest.raises(ApiException) as e:
        v1.read_namespaced_config_map("crud", NS)
    assert e.value.status == 404


def deployment(name, replicas=2):
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels={"app": name}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": name}),
                spec=client.V1PodSpec(containers=[
                    client.V1Container(name="web", image="nginx:1.27"),
                    client.V1Container(name="sidecar", image="busybox:1.36")]))))


def test_deployment_crud(api):
    apps = client.AppsV1Api(api)
    d = apps.create_namespaced_deployment(NS, deployment("pyweb"))
    assert d.metadata.generation == 1 and d.spec.replicas == 2

    # strategic merge patch (the client's default for a dict): containers merged by name
    d = apps.patch_namespaced_deployment("pyweb", NS, {"spec": {"replicas": 4, "template": {"spec": {
        "containers": [{"name": "web", "image": "nginx:1.28"}]}}}})
    assert d.spec.replicas == 4
    images = {c.name: c.image for c in d.spec.template.spec.containers}
    assert images == {"web": "nginx:1.28", "sidecar": "busybox:1.36"}
    assert d.metadata.generation == 2

    d.spec.template.spec.containers = [client.V1Container(name="web", image="nginx:1.29")]
    d = apps.replace_namespaced_deployment("pyweb", NS, d)
    assert [c.image for c in d.spec.template.spec.containers] == ["nginx:1.29"]

    s = apps.patch_namespaced_deployment_status("pyweb", NS, {"status": {"replicas": 4, "readyReplicas": 3}})
    assert s.status.ready_replicas == 3
    assert apps.read_namespaced_deployment_status("pyweb", NS).status.ready_replicas == 3

    names = [x.metadata.name for x in apps.list_namespaced_deployment(NS).items]
    assert "pyweb" in names
    apps.delete_namespaced_deployment("pyweb", NS)
    with pytest.raises(ApiException) as e:
        apps.read_namespaced_deployment("pyweb", NS)
    assert e.value.status == 404


def test_karmada_kinds_with_custom_objects_api(api):
    co = client.CustomObjectsApi(api)
    g, v = "policy.karmada.io", "v1alpha1"
    pp = {"apiVersion": f"{g}/{v}", "kind": "PropagationPolicy", "metadata": {"name": "nginx-pp"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}}
    created = co.create_namespaced_custom_object(g, v, NS, "propagationpolicies", pp)
    assert created["metadata"]["uid"]
    got = co.get_namespaced_custom_object(g, v, NS, "propagationpolicies", "nginx-pp")
    assert got["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["member1", "member2"]
    patched = co.patch_namespaced_custom_object(g, v, NS, "propagationpolicies", "nginx-pp",
                                                {"spec": {"placement": {"clusterAffinity": {"clusterNames": ["member3"]}}}})
    assert patched["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["member3"]
    assert patched["spec"]["resourceSelectors"][0]["name"] == "nginx"
    items = co.list_namespaced_custom_object(g, v, NS, "propagationpolicies")["items"]
    assert [i["metadata"]["name"] for i in items] == ["nginx-pp"]
    co.delete_namespaced_custom_object(g, v, NS, "propagationpolicies", "nginx-pp")
    with pytest.raises(ApiException) as e:
        co.get_namespaced_custom_object(g, v, NS, "propagationpolicies", "nginx-pp")
    assert e.value.status == 404

    cg = "cluster.karmada.io"
    cluster = {"apiVersion": f"{cg}/v1alpha1", "kind": "Cluster", "metadata": {"name": "py-member"},
               "spec": {"syncMode": "Push", "apiEndpoint": "https://10.0.0.1:6443"}}
    co.create_cluster_custom_object(cg, "v1alpha1", "clusters", cluster)
    st = co.patch_cluster_custom_object_status(cg, "v1alpha1", "clusters", "py-member", {"status": {
        "kubernetesVersion": "v1.31.0",
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ok",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}]}})
    assert st["status"]["kubernetesVersion"] == "v1.31.0"
    assert st["spec"]["syncMode"] == "Push"
    names = [c["metadata"]["name"] for c in co.list_cluster_custom_object(cg, "v1alpha1", "clusters")["items"]]
    assert "py-member" in names
    co.delete_cluster_custom_object(cg, "v1alpha1", "clusters", "py-member")
    with pytest.raises(ApiException) as e:
        co.get_cluster_custom_object(cg, "v1alpha1", "clusters", "py-member")
    assert e.value.status == 404


# ---------------------------------------------------------------- paging


def test_list_paging_with_limit_and_continue(api):
    v1 = core(api)
    ns = "pypaging"
    ensure_namespace_api(v1, ns)
    for i in range(25):
        v1.create_namespaced_config_map(ns, cm(f"p{i:02d}", labels={"page": "yes"}))
    v1.create_namespaced_config_map(ns, cm("unlabelled"))

    first = v1.list_namespaced_config_map(ns, label_selector="page=yes", limit=10)
    assert len(first.items) == 10 and first.metadata._continue
    rv = first.metadata.resource_version
    # written after the first page: a continued list is a snapshot and must not show it
    v1.create_namespaced_config_map(ns, cm("p99", labels={"page": "yes"}))
    second = v1.list_namespaced_config_map(ns, label_selector="page=yes", limit=10, _continue=first.metadata._continue)
    assert len(second.items) == 10 and second.metadata._continue
    third = v1.list_namespaced_config_map(ns, label_selector="page=yes", limit=10, _continue=second.metadata._continue)
    assert len(third.items) == 5
    assert not third.metadata._continue
    names = [i.metadata.name for p in (first, second, third) for i in p.items]
    assert names == [f"p{i:02d}" for i in range(25)], names
    assert second.metadata.resource_version == rv and third.metadata.resource_version == rv

    everything = v1.list_namespaced_config_map(ns, label_selector="page=yes")
    assert len(everything.items) == 26 and not everything.metadata._continue


def ensure_namespace_api(v1, name):
    try:
        v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    except ApiException as e:
        assert e.status == 409, e


# ---------------------------------------------------------------- watch


def test_watch_resumed_from_a_resource_version_sees_exactly_the_later_changes(api):
    v1 = core(api)
    ns = "pywatch"
    ensure_namespace_api(v1, ns)
    start = v1.create_namespaced_config_map(ns, cm("a", {"v": "1"})).metadata.resource_version
    rv_b = v1.create_namespaced_config_map(ns, cm("b")).metadata.resource_version
    rv_a2 = v1.patch_namespaced_config_map("a", ns, {"data": {"v": "2"}}).metadata.resource_version
    v1.delete_namespaced_config_map("b", ns)
    rv_c = v1.create_namespaced_config_map(ns, cm("c")).metadata.resource_version

    def events_from(rv):
        w = watch.Watch()
        out = []
        for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=2):
            out.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        return out

    evs = events_from(start)
    assert [(t, n) for t, n, _ in evs] == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")], evs
    assert evs[0][2] == rv_b and evs[1][2] == rv_a2 and evs[3][2] == rv_c
    assert int(evs[2][2]) > int(rv_a2)

    evs = events_from(rv_a2)
    assert [(t, n) for t, n, _ in evs] == [("DELETED", "b"), ("ADDED", "c")], evs
    assert events_from(rv_c) == []


def test_watch_typed_objects_live(api):
    v1 = core(api)
    ns = "pywatchlive"
    ensure_namespace_api(v1, ns)
    rv = v1.list_namespaced_config_map(ns).metadata.resource_version
    got = []

    def run():
        w = watch.Watch()
        for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10):
            got.append((ev["type"], ev["object"].metadata.name, dict(ev["object"].data or {})))
            if len(got) == 3:
                w.stop()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(0.3)
    v1.create_namespaced_config_map(ns, cm("live", {"x": "1"}))
    v1.patch_namespaced_config_map("live", ns, {"data": {"x": "2"}})
    v1.delete_namespaced_config_map("live", ns)
    t.join(15)
    assert got == [("ADDED", "live", {"x": "1"}), ("MODIFIED", "live", {"x": "2"}), ("DELETED", "live", {"x": "2"})]


# ---------------------------------------------------------------- 410 Expired


def test_watch_and_continue_from_compacted_revisions_are_410(server_factory):
    s = server_factory("--compact-window", "10")
    c = config.new_client_from_config(config_file=s.kubeconfig)
    try:
        v1 = client.CoreV1Api(c)
        ensure_namespace_api(v1, "expiry")
        for i in range(4):
            v1.create_namespaced_config_map("expiry", cm(f"e{i}"))
        page = v1.list_namespaced_config_map("expiry", limit=2)
        token, old_rv = page.metadata._continue, page.metadata.resource_version
        assert token
        for i in range(30):
            v1.patch_namespaced_config_map("e0", "expiry", {"data": {"n": str(i)}})

        def watch_expired():
            try:
                for ev in watch.Watch().stream(v1.list_namespaced_config_map, "expiry", resource_version=old_rv,
                                               timeout_seconds=1):
                    pass
            except ApiException as e:
                assert e.status == 410, e
                return True
            return False  # not compacted yet: the watch replayed events

        # compaction runs in the background, as etcd's does; it must happen within seconds
        wait_for(watch_expired, timeout=20, interval=0.5, what="a watch from a compacted revision to get 410")

        with pytest.raises(ApiException) as e:
            v1.list_namespaced_config_map("expiry", limit=2, _continue=token)
        assert e.value.status == 410
        assert status_body(e.value)["reason"] == "Expired"

        # a fresh list and a watch from its revision work again
        fresh = v1.list_namespaced_config_map("expiry")
        assert len(fresh.items) == 4
        evs = list(watch.Watch().stream(v1.list_namespaced_config_map, "expiry",
                                        resource_version=fresh.metadata.resource_version, timeout_seconds=1))
        assert evs == []
    finally:
        c.close()


def test_raw_watch_from_compacted_revision_gets_error_event_or_410(server_factory):
    s = server_factory("--compact-window", "10")
    ensure_namespace(s, "expiry-raw")
    path = "/api/v1/namespaces/expiry-raw/configmaps"
    code, body = s.curl("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r"}})
    assert code == 201, body
    old_rv = body["metadata"]["resourceVersion"]
    for i in range(30):
        s.curl("PATCH", f"{path}/r", {"data": {"n": str(i)}}, content_type="application/merge-patch+json")

    def expired():
        with s.watch(f"{path}?watch=1&resourceVersion={old_rv}") as w:
            if w.status == 410:
                assert w.body["reason"] == "Expired", w.body
                return True
            assert w.status == 200, w.body
            ev = w.next(timeout=10)
            if ev and ev["type"] == "ERROR":
                assert ev["object"]["kind"] == "Status" and ev["object"]["code"] == 410, ev
                assert ev["object"]["reason"] == "Expired", ev
                return True
            return False

    wait_for(expired, timeout=20, interval=0.5, what="410 Expired for a compacted revision")


# ---------------------------------------------------------------- error reasons


def test_conflict_on_stale_resource_version(api):
    v1 = core(api)
    v1.create_namespaced_config_map(NS, cm("cas", {"v": "0"}))
    stale = v1.read_namespaced_config_map("cas", NS)
    v1.patch_namespaced_config_map("cas", NS, {"data": {"v": "1"}})
    stale.data = {"v": "stale"}
    with pytest.raises(ApiException) as e:
        v1.replace_namespaced_config_map("cas", NS, stale)
    assert e.value.status == 409
    body = status_body(e.value)
    assert body["reason"] == "Conflict" and body["details"]["name"] == "cas"
    assert v1.read_namespaced_config_map("cas", NS).data == {"v": "1"}


def test_not_found_reason(api):
    v1 = core(api)
    with pytest.raises(ApiException) as e:
        v1.read_namespaced_config_map("does-not-exist", NS)
    assert e.value.status == 404
    body = status_body(e.value)
    assert body["kind"] == "Status" and body["reason"] == "NotFound"
    assert body["details"]["name"] == "does-not-exist" and body["details"]["kind"] == "configmaps"
    with pytest.raises(ApiException) as e:
        v1.delete_namespaced_config_map("does-not-exist", NS)
    assert e.value.status == 404 and status_body(e.value)["reason"] == "NotFound"


def test_already_exists_reason(api):
    v1 = core(api)
    first = v1.create_namespaced_config_map(NS, cm("twice", {"v": "first"}))
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_config_map(NS, cm("twice", {"v": "second"}))
    assert e.value.status == 409
    body = status_body(e.value)
    assert body["reason"] == "AlreadyExists" and body["details"]["name"] == "twice"
    now = v1.read_namespaced_config_map("twice", NS)
    assert now.data == {"v": "first"} and now.metadata.resource_version == first.metadata.resource_version
