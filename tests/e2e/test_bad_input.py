"""Bad input: every malformed or invalid request gets a 4xx Status naming the problem, and
nothing is written (the collection is listed before and after)."""
import pytest

from conftest import ensure_namespace

NS = "bad-input"
CM = f"/api/v1/namespaces/{NS}/configmaps"
DEPLOY = f"/apis/apps/v1/namespaces/{NS}/deployments"
PP = f"/apis/policy.karmada.io/v1alpha1/namespaces/{NS}/propagationpolicies"
CPP = "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies"


@pytest.fixture(scope="module", autouse=True)
def namespace(server):
    ensure_namespace(server, NS)
    code, body = server.curl("POST", CM, configmap("existing", {"k": "v"}))
    assert code == 201, body


def configmap(name, data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {}}


def snapshot(server, path):
    """name -> resourceVersion of every object in the collection."""
    code, body = server.curl("GET", path)
    assert code == 200, body
    assert isinstance(body["items"], list)
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in body["items"]}


def assert_status(body, code, reason=None, mentions=()):
    assert isinstance(body, dict) and body.get("kind") == "Status", body
    assert body.get("status") == "Failure", body
    assert body.get("code") == code, body
    if reason:
        assert body.get("reason") == reason, body
    msg = body.get("message", "")
    assert msg, body
    for m in mentions:
        assert m in msg, f"{m!r} not named in {msg!r}"


def cause_fields(body):
    return [c.get("field", "") for c in body.get("details", {}).get("causes", [])]


class Unchanged:
    """with Unchanged(server, path, ...): the collections must be identical afterwards."""

    def __init__(self, server, *paths):
        self.server, self.paths = server, paths or (CM,)

    def __enter__(self):
        self.before = {p: snapshot(self.server, p) for p in self.paths}
        return self

    def __exit__(self, exc_type, *rest):
        if exc_type is None:
            for p in self.paths:
                assert snapshot(self.server, p) == self.before[p], f"{p} changed after a refused request"


# ---------------------------------------------------------------- malformed bodies


def test_malformed_json_create(server):
    with Unchanged(server):
        code, body = server.curl("POST", CM, '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"broken"')
        assert code == 400, body
        assert_status(body, 400, "BadRequest")
        code, body = server.curl("POST", CM, "")
        assert code == 400, body
        assert_status(body, 400, "BadRequest")
        code, body = server.curl("POST", CM, "[1, 2, 3]")
        assert code == 400, body
        assert_status(body, 400, "BadRequest")


def test_malformed_json_update_and_patch(server):
    with Unchanged(server):
        code, body = server.curl("PUT", f"{CM}/existing", '{"apiVersion":"v1","kind":"ConfigMap",,}')
        assert code == 400, body
        assert_status(body, 400, "BadRequest")
        code, body = server.curl("PATCH", f"{CM}/existing", '{"data": {"k": ', content_type="application/merge-patch+json")
        assert code == 400, body
        assert_status(body, 400, "BadRequest")
        code, body = server.curl("PATCH", f"{CM}/existing", '{"op": "add"}', content_type="application/json-patch+json")
        assert code == 400, body
        assert_status(body, 400, "BadRequest")
        code, body = server.curl("PATCH", f"{CM}/existing", '{"data": {}}', content_type="text/plain")
        assert code == 415, body
        assert_status(body, 415, "UnsupportedMediaType")


def test_yaml_bodies(server):
    with Unchanged(server):
        bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n  data: {a: b\n"
        code, body = server.curl("POST", CM, bad, content_type="application/yaml")
        assert code == 400, body
        assert_status(body, 400, "BadRequest")
    # the same path accepts well-formed YAML
    good = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n"
    code, body = server.curl("POST", CM, good, content_type="application/yaml")
    assert code == 201, body
    assert server.curl("GET", f"{CM}/from-yaml")[1]["data"] == {"a": "b"}


def test_oversized_body_is_413(server):
    big = configmap("huge", {"blob": "x" * (3 * 1024 * 1024 + 4096)})
    with Unchanged(server):
        code, hdrs, body = server.http("POST", CM, big)
        assert code == 413, (code, str(body)[:300])
        if isinstance(body, dict):
            assert_status(body, 413, "RequestEntityTooLarge")
    assert server.curl("GET", f"{CM}/huge")[0] == 404
    # the server is still healthy afterwards
    assert server.curl("GET", "/readyz", auth=False)[0] == 200


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("name", ["BadName", "a" * 254, "under_score", "-leading-dash", "dots..twice"])
def test_invalid_configmap_names_are_422(server, name):
    with Unchanged(server):
        code, body = server.curl("POST", CM, configmap(name))
        assert code == 422, body
        assert_status(body, 422, "Invalid")
        assert "metadata.name" in cause_fields(body), body


@pytest.mark.parametrize("name", ["Upper", "n" * 64, "has.dot"])
def test_invalid_namespace_names_are_422(server, name):
    with Unchanged(server, "/api/v1/namespaces"):
        code, body = server.curl("POST", "/api/v1/namespaces",
                                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        assert code == 422, body
        assert_status(body, 422, "Invalid")
        assert "metadata.name" in cause_fields(body), body


def test_missing_name_is_422(server):
    with Unchanged(server):
        code, body = server.curl("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {}})
        assert code == 422, body
        assert_status(body, 422, "Invalid")
        assert any(f.startswith("metadata.name") for f in cause_fields(body)), body


def test_name_mismatch_between_url_and_body(server):
    with Unchanged(server):
        code, body = server.curl("PUT", f"{CM}/existing", configmap("someone-else"))
        assert code == 400, body
        assert_status(body, 400, "BadRequest")


# ---------------------------------------------------------------- unknown kinds and places


def test_unknown_resources_are_404(server):
    with Unchanged(server):
        code, body = server.curl("POST", f"/api/v1/namespaces/{NS}/widgets",
                                 {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}})
        assert code == 404, body
        assert_status(body, 404, "NotFound")
        code, body = server.curl("GET", "/apis/nothing.example.com/v1/things")
        assert code == 404, body
        code, body = server.curl("GET", "/apis/apps/v2/deployments")
        assert code == 404, body
        code, body = server.curl("GET", "/api/v1/namespaces/x/y/z/w/v")
        assert code == 404, body


def test_missing_namespace_is_404(server):
    code, body = server.curl("POST", "/api/v1/namespaces/no-such-ns/configmaps", configmap("orphan"))
    assert code == 404, body
    assert_status(body, 404, "NotFound", mentions=("no-such-ns",))
    code, body = server.curl("GET", "/api/v1/namespaces/no-such-ns/configmaps/orphan")
    assert code == 404


def test_body_kind_must_match_url(server):
    with Unchanged(server, CM, f"/api/v1/namespaces/{NS}/secrets"):
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mismatch"}, "stringData": {"a": "b"}}
        code, body = server.curl("POST", CM, secret)
        assert code == 400, body
        assert_status(body, 400, "BadRequest", mentions=("Secret",))
        wrong_group = {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "mismatch"}}
        code, body = server.curl("POST", CM, wrong_group)
        assert code == 400, body
        assert_status(body, 400, "BadRequest")


# ---------------------------------------------------------------- wrong field types


def deployment(name, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_replicas_as_string_is_400_naming_the_field(server):
    with Unchanged(server, DEPLOY):
        code, body = server.curl("POST", DEPLOY, deployment("typed", replicas="3"))
        assert code == 400, body
        assert_status(body, 400, "BadRequest", mentions=("spec.replicas",))
    code, body = server.curl("POST", DEPLOY, deployment("typed", replicas=3))
    assert code == 201, body
    with Unchanged(server, DEPLOY):
        code, body = server.curl("PATCH", f"{DEPLOY}/typed", {"spec": {"replicas": "many"}},
                                 content_type="application/merge-patch+json")
        assert code == 400, body
        assert_status(body, 400, "BadRequest", mentions=("spec.replicas",))


def test_label_values_must_be_strings(server):
    with Unchanged(server):
        obj = configmap("badlabels")
        obj["metadata"]["labels"] = {"tier": 1}
        code, body = server.curl("POST", CM, obj)
        assert code == 400, body
        assert_status(body, 400, "BadRequest", mentions=("metadata.labels",))
        obj = configmap("baddata")
        obj["data"] = {"n": 5}
        code, body = server.curl("POST", CM, obj)
        assert code == 400, body
        assert_status(body, 400, "BadRequest", mentions=("data",))
        obj = configmap("badmeta")
        obj["metadata"] = "just a string"
        code, body = server.curl("POST", CM, obj)
        assert code == 400, body
        assert_status(body, 400, "BadRequest", mentions=("metadata",))


def test_invalid_label_value_is_422(server):
    with Unchanged(server):
        obj = configmap("badlabelvalue")
        obj["metadata"]["labels"] = {"tier": "has spaces!"}
        code, body = server.curl("POST", CM, obj)
        assert code == 422, body
        assert_status(body, 422, "Invalid")
        assert any(f.startswith("metadata.labels") for f in cause_fields(body)), body


def test_bad_selectors_are_400(server):
    code, body = server.curl("GET", f"{CM}?labelSelector=app%20in%20(")
    assert code == 400, body
    assert_status(body, 400, "BadRequest")
    code, body = server.curl("GET", f"{CM}?fieldSelector=spec.nonsense%3Dx")
    assert code == 400, body
    assert_status(body, 400, "BadRequest", mentions=("spec.nonsense",))


# ---------------------------------------------------------------- Karmada policy validation


def policy(name, **spec_extra):
    spec = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}
    spec.update(spec_extra)
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name}, "spec": spec}


def app_failover(purge_mode, **extra):
    app = {"decisionConditions": {"tolerationSeconds": 120}, "purgeMode": purge_mode}
    app.update(extra)
    return {"application": app}


def assert_invalid_policy(server, obj, field_part, path=PP):
    with Unchanged(server, path):
        code, body = server.curl("POST", path, obj)
        assert code == 422, body
        assert_status(body, 422, "Invalid")
        fields = cause_fields(body)
        assert any(field_part in f for f in fields), f"no cause names {field_part!r}: {body}"
    assert server.curl("GET", f"{path}/{obj['metadata']['name']}")[0] == 404


def test_valid_policy_is_accepted(server):
    code, body = server.curl("POST", PP, policy("valid"))
    assert code == 201, body


def test_cluster_affinity_with_cluster_affinities_is_422(server):
    obj = policy("both-affinities")
    obj["spec"]["placement"]["clusterAffinities"] = [
        {"affinityName": "primary", "clusterNames": ["member1"]}]
    assert_invalid_policy(server, obj, "spec.placement")
    cobj = dict(obj, kind="ClusterPropagationPolicy")
    assert_invalid_policy(server, cobj, "spec.placement", path=CPP)


def test_suspension_dispatching_with_dispatching_on_clusters_is_422(server):
    obj = policy("suspended-both", suspension={"dispatching": True,
                                               "dispatchingOnClusters": {"clusterNames": ["member1"]}})
    assert_invalid_policy(server, obj, "spec.suspension")


def test_unknown_purge_mode_is_422(server):
    obj = policy("purge-unknown", propagateDeps=True, failover=app_failover("Sometimes"))
    assert_invalid_policy(server, obj, "purgeMode")


def test_static_weight_zero_is_422(server):
    obj = policy("weight-zero")
    obj["spec"]["placement"]["replicaScheduling"] = {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": [
            {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
            {"targetCluster": {"clusterNames": ["member2"]}, "weight": 0}]}}
    assert_invalid_policy(server, obj, "weight")


@pytest.mark.parametrize("mode,extra", [("Immediately", {}), ("Graciously", {"gracePeriodSeconds": 600}),
                                        ("Directly", {}), ("Gracefully", {"gracePeriodSeconds": 300}),
                                        ("Never", {})])
def test_purge_modes_including_deprecated_spellings_are_accepted(server, mode, extra):
    name = f"purge-{mode.lower()}"
    code, body = server.curl("POST", PP, policy(name, propagateDeps=True, failover=app_failover(mode, **extra)))
    assert code == 201, body
    code, body = server.curl("GET", f"{PP}/{name}")
    assert code == 200, body
    assert body["spec"]["failover"]["application"]["purgeMode"] in (mode, {"Immediately": "Directly",
                                                                         "Graciously": "Gracefully"}.get(mode))


def test_invalid_update_changes_nothing(server):
    code, body = server.curl("POST", PP, policy("to-break"))
    assert code == 201, body
    code, cur = server.curl("GET", f"{PP}/to-break")
    with Unchanged(server, PP):
        cur["spec"]["placement"]["clusterAffinities"] = [{"affinityName": "a", "clusterNames": ["member1"]}]
        code, body = server.curl("PUT", f"{PP}/to-break", cur)
        assert code == 422, body
        assert_status(body, 422, "Invalid")
        code, body = server.curl("PATCH", f"{PP}/to-break", {"spec": {"suspension": {
            "dispatching": True, "dispatchingOnClusters": {"clusterNames": ["member1"]}}}},
            content_type="application/merge-patch+json")
        assert code == 422, body
        assert any("spec.suspension" in f for f in cause_fields(body)), body
