"""Unknown and duplicate fields of built-in and Karmada kinds under ?fieldValidation=
(kubectl's --validate), fields Flotilla knows but does not act on, and the OpenAPI
documents that describe every served field.

kube-apiserver decodes built-in kinds into typed structs: an unknown field is dropped,
with a Warning header (Warn, the server's default), silently (Ignore), or refused with
400 "<Kind> in version ... cannot be handled as a <Kind>: strict decoding error: ..."
(Strict, kubectl's default)."""
import json

from conftest import ensure_namespace


def cm(name, **extra):
    o = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "fv"}, "data": {"a": "1"}}
    o.update(extra)
    return o


def deployment(name, container_extra):
    c = {"name": "app", "image": "nginx:1.27"}
    c.update(container_extra)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "fv"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [c]}}}}


def policy(name, spec_extra, placement=None):
    spec = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}]}
    if placement is not None:
        spec["placement"] = placement
    spec.update(spec_extra)
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "fv"}, "spec": spec}


def apply(server, manifest, *args):
    return server.kubectl("apply", "-f", "-", *args, input=json.dumps(manifest), check=False)


def exists(server, *what):
    return server.kubectl("get", *what, "-n", "fv", check=False).returncode == 0


def test_configmap_typo_refused_by_default_with_kubes_wording(server):
    ensure_namespace(server, "fv")
    r = apply(server, cm("cm-strict", datta={"b": "2"}))
    assert r.returncode != 0
    assert ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
            'unknown field "datta"') in r.stderr, r.stderr
    assert not exists(server, "configmap", "cm-strict")


def test_configmap_typo_warned_and_dropped_with_validate_warn(server):
    ensure_namespace(server, "fv")
    r = apply(server, cm("cm-warn", datta={"b": "2"}), "--validate=warn")
    assert r.returncode == 0, r.stderr
    assert 'unknown field "datta"' in r.stderr, r.stderr
    got = server.kubectl_json("get", "configmap", "cm-warn", "-n", "fv")
    assert "datta" not in got and got["data"] == {"a": "1"}


def test_configmap_typo_dropped_silently_with_validate_false(server):
    ensure_namespace(server, "fv")
    r = apply(server, cm("cm-ignore", datta={"b": "2"}), "--validate=false")
    assert r.returncode == 0, r.stderr
    assert "unknown field" not in r.stderr, r.stderr
    got = server.kubectl_json("get", "configmap", "cm-ignore", "-n", "fv")
    assert "datta" not in got


def test_deployment_typo_deep_in_a_container(server):
    ensure_namespace(server, "fv")
    r = apply(server, deployment("dep-strict", {"imagee": "nginx:1.28"}))
    assert r.returncode != 0
    assert ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
            'unknown field "spec.template.spec.containers[0].imagee"') in r.stderr, r.stderr
    assert not exists(server, "deployment", "dep-strict")

    r = apply(server, deployment("dep-warn", {"imagee": "nginx:1.28"}), "--validate=warn")
    assert r.returncode == 0, r.stderr
    assert 'unknown field "spec.template.spec.containers[0].imagee"' in r.stderr, r.stderr
    got = server.kubectl_json("get", "deployment", "dep-warn", "-n", "fv")
    c = got["spec"]["template"]["spec"]["containers"][0]
    assert "imagee" not in c and c["image"] == "nginx:1.27"


def test_unknown_field_in_a_patch(server):
    """kubectl patch sends no fieldValidation: the server's default, Warn, drops the field
    and says so; a PATCH asking for Strict is refused and changes nothing."""
    ensure_namespace(server, "fv")
    assert apply(server, deployment("dep-patch", {})).returncode == 0
    patch = '{"spec":{"paused":true,"template":{"spec":{"containers":[{"name":"app","imagee":"x"}]}}}}'
    r = server.kubectl("patch", "deployment", "dep-patch", "-n", "fv", "-p", patch)
    assert 'Warning: unknown field "spec.template.spec.containers[0].imagee"' in r.stderr, r.stderr
    got = server.kubectl_json("get", "deployment", "dep-patch", "-n", "fv")
    assert got["spec"]["paused"] is True
    assert "imagee" not in got["spec"]["template"]["spec"]["containers"][0]

    path = "/apis/apps/v1/namespaces/fv/deployments/dep-patch?fieldValidation=Strict"
    for ctype in ("application/strategic-merge-patch+json", "application/merge-patch+json"):
        code, _, err = server.http("PATCH", path, '{"spec":{"paused":false,"pausd":true}}', content_type=ctype)
        assert code == 400, err
        assert err["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: '
                                  'strict decoding error: unknown field "spec.pausd"'), err
    got = server.kubectl_json("get", "deployment", "dep-patch", "-n", "fv")
    assert got["spec"]["paused"] is True


def test_server_side_apply_unknown_field(server):
    ensure_namespace(server, "fv")
    r = server.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(cm("cm-ssa", datta={"b": "2"})),
                       check=False)
    assert r.returncode != 0
    assert ("failed to create typed patch object (fv/cm-ssa; /v1, Kind=ConfigMap): .datta: "
            "field not declared in schema") in r.stderr, r.stderr
    assert not exists(server, "configmap", "cm-ssa")
    r = server.kubectl("apply", "--server-side", "--validate=false", "-f", "-",
                       input=json.dumps(cm("cm-ssa", datta={"b": "2"})))
    assert "datta" not in server.kubectl_json("get", "configmap", "cm-ssa", "-n", "fv")


def test_duplicate_field(server):
    ensure_namespace(server, "fv")
    body = ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-dup","namespace":"fv"},'
            '"data":{"a":"1"},"immutable":false,"immutable":true}')
    code, _, err = server.http("POST", "/api/v1/namespaces/fv/configmaps?fieldValidation=Strict", body)
    assert code == 400, err
    assert err["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
                              'duplicate field "immutable"'), err
    assert not exists(server, "configmap", "cm-dup")
    code, headers, got = server.http("POST", "/api/v1/namespaces/fv/configmaps?fieldValidation=Warn", body)
    assert code == 201, got
    assert 'duplicate field \\"immutable\\"' in headers.get("warning", ""), headers
    assert got["immutable"] is True  # the last one wins, as in Go's decoder

    path = "/api/v1/namespaces/fv/configmaps/cm-dup?fieldValidation=Strict"
    code, _, err = server.http("PATCH", path, '{"data":{"b":"1","b":"2"}}',
                               content_type="application/merge-patch+json")
    assert code == 400 and 'strict decoding error: duplicate field "data.b"' in err["message"], err
    code, _, got = server.http("PATCH", path.replace("Strict", "Ignore"), '{"data":{"b":"1","b":"2"}}',
                               content_type="application/strategic-merge-patch+json")
    assert code == 200 and got["data"]["b"] == "2", got


def test_propagation_policy_bogus_and_misplaced_fields_refused(server):
    ensure_namespace(server, "fv")
    r = apply(server, policy("pp-bogus", {"bogusField": 1}))
    assert r.returncode != 0
    assert ('PropagationPolicy in version "v1alpha1" cannot be handled as a PropagationPolicy: '
            'strict decoding error: unknown field "spec.bogusField"') in r.stderr, r.stderr
    r = apply(server, policy("pp-misplaced", {"clusterAffinity": {"clusterNames": ["member1"]}}))
    assert r.returncode != 0
    assert 'unknown field "spec.clusterAffinity"' in r.stderr, r.stderr
    assert not exists(server, "propagationpolicy", "pp-bogus")
    assert not exists(server, "propagationpolicy", "pp-misplaced")
    r = apply(server, policy("pp-good", {}, placement={"clusterAffinity": {"clusterNames": ["member1"]}}))
    assert r.returncode == 0, r.stderr


def test_unsupported_karmada_field_refused_422(server):
    ensure_namespace(server, "fv")
    r = apply(server, policy("pp-unsupported", {}, placement={
        "clusterAffinity": {"clusterNames": ["member1"]},
        "workloadAffinity": {"affinity": {"groupByLabelKey": "app"}}}))
    assert r.returncode != 0
    assert "spec.placement.workloadAffinity: Forbidden: not supported by this server yet" in r.stderr, r.stderr
    code, _, err = server.http("POST", "/apis/policy.karmada.io/v1alpha1/namespaces/fv/propagationpolicies",
                               policy("pp-unsupported", {}, placement={
                                   "workloadAffinity": {"affinity": {"groupByLabelKey": "app"}}}))
    assert code == 422 and err["reason"] == "Invalid", err
    assert err["details"]["causes"][0]["field"] == "spec.placement.workloadAffinity", err
    assert not exists(server, "propagationpolicy", "pp-unsupported")


def test_openapi_v2_has_deployment_fields(server):
    code, doc = server.curl("GET", "/openapi/v2")
    assert code == 200, doc
    assert doc["swagger"] == "2.0"
    d = doc["definitions"]["io.k8s.api.apps.v1.Deployment"]
    assert d["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    spec = d["properties"]["spec"]
    containers = spec["properties"]["template"]["properties"]["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert "imagePullPolicy" in containers["items"]["properties"]
    assert "selector" in spec["required"]


def test_kubectl_explain_schedule_priority(server):
    r = server.kubectl("explain", "propagationpolicy.spec.schedulePriority")
    assert "priorityClassName" in r.stdout, r.stdout
    r = server.kubectl("explain", "deployment.spec.template.spec.containers.resources.limits",
                       "--output=plaintext-openapiv2")
    assert "FIELD: limits" in r.stdout or "limits" in r.stdout, r.stdout
