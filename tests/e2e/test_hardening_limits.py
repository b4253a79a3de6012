"""Request and object size limits that hold after decoding.

A request body is limited to 3 MiB on the wire, and what it decodes to is held to the same
bound while it is decoded: YAML aliases that would expand a small body into a huge object, and
JSON patch copies that would grow one, are refused with 413 before the memory is spent. An
object whose encoding is larger than --max-object-bytes (1.5 MiB by default, etcd's default
request limit) is refused with 413 on create, update, patch and apply. Nothing is stored when
a request is refused."""
import json
import subprocess

from conftest import BIN, ensure_namespace

NS = "size-limits"
CM = f"/api/v1/namespaces/{NS}/configmaps"
REQUEST_LIMIT = 3 * 1024 * 1024
OBJECT_LIMIT = 1536 * 1024


def configmap(name, data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {}}


def rss_bytes(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def assert_too_large(code, body, limit):
    assert code in (413, 422), (code, str(body)[:500])
    assert isinstance(body, dict) and body.get("kind") == "Status", str(body)[:500]
    assert body.get("code") == code, body
    if code == 413:
        assert body.get("reason") == "RequestEntityTooLarge", body
    assert str(limit) in body.get("message", ""), body


def alias_bomb(name, string_bytes, aliases):
    lines = ["apiVersion: v1", "kind: ConfigMap", f"metadata: {{name: {name}}}", "data:",
             f"  k0: &s \"{'x' * string_bytes}\""]
    lines += [f"  k{i}: *s" for i in range(1, aliases + 1)]
    return "\n".join(lines) + "\n"


def test_alias_amplification_is_refused_by_server_side_apply(server):
    ensure_namespace(server, NS)
    before = rss_bytes(server)
    body = alias_bomb("bomb", 1024 * 1024 - 4096, 200)
    assert len(body) < REQUEST_LIMIT
    code, resp = server.curl("PATCH", f"{CM}/bomb?fieldManager=attacker", body,
                             content_type="application/apply-patch+yaml")
    assert_too_large(code, resp, REQUEST_LIMIT)
    code, _ = server.curl("GET", f"{CM}/bomb")
    assert code == 404
    # the expansion was stopped, not built and then measured
    assert rss_bytes(server) - before < 64 * 1024 * 1024


def test_alias_amplification_is_refused_on_create(server):
    ensure_namespace(server, NS)
    body = alias_bomb("bomb-create", 512 * 1024, 10)
    code, resp = server.curl("POST", CM, body, content_type="application/yaml")
    assert_too_large(code, resp, REQUEST_LIMIT)
    code, _ = server.curl("GET", f"{CM}/bomb-create")
    assert code == 404


def test_small_aliases_still_apply(server):
    ensure_namespace(server, NS)
    body = alias_bomb("few-aliases", 1000, 20)
    code, resp = server.curl("PATCH", f"{CM}/few-aliases?fieldManager=me", body,
                             content_type="application/apply-patch+yaml")
    assert code == 201, resp
    assert len(resp["data"]) == 21 and resp["data"]["k20"] == "x" * 1000


def test_object_just_under_the_limit_is_stored_and_just_over_is_refused(server):
    ensure_namespace(server, NS)
    code, resp = server.curl("POST", CM, configmap("just-under", {"k": "x" * (OBJECT_LIMIT - 4096)}))
    assert code == 201, str(resp)[:300]
    code, resp = server.curl("POST", CM, configmap("just-over", {"k": "x" * OBJECT_LIMIT}))
    assert_too_large(code, resp, OBJECT_LIMIT)
    assert code == 413
    code, _ = server.curl("GET", f"{CM}/just-over")
    assert code == 404


def test_update_past_the_limit_is_refused_and_keeps_the_object(server):
    ensure_namespace(server, NS)
    code, cm = server.curl("POST", CM, configmap("grows", {"a": "y" * 1000}))
    assert code == 201, cm
    cm["data"]["a"] = "y" * (OBJECT_LIMIT + 10)
    code, resp = server.curl("PUT", f"{CM}/grows", cm)
    assert_too_large(code, resp, OBJECT_LIMIT)
    code, resp = server.curl("PATCH", f"{CM}/grows", {"data": {"b": "z" * (OBJECT_LIMIT // 2),
                                                              "c": "z" * (OBJECT_LIMIT // 2)}},
                             content_type="application/merge-patch+json")
    assert_too_large(code, resp, OBJECT_LIMIT)
    code, now = server.curl("GET", f"{CM}/grows")
    assert code == 200
    assert now["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
    assert now["data"] == {"a": "y" * 1000}


def test_json_patch_that_grows_the_object_past_the_limit_is_refused(server):
    ensure_namespace(server, NS)
    code, cm = server.curl("POST", CM, configmap("copied", {"a": "q" * (600 * 1024)}))
    assert code == 201, str(cm)[:300]
    ops = [{"op": "copy", "from": "/data/a", "path": "/data/b"},
           {"op": "copy", "from": "/data/a", "path": "/data/c"}]
    code, resp = server.curl("PATCH", f"{CM}/copied", ops, content_type="application/json-patch+json")
    assert_too_large(code, resp, OBJECT_LIMIT)
    code, now = server.curl("GET", f"{CM}/copied")
    assert code == 200 and sorted(now["data"]) == ["a"]
    assert now["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_json_patch_copies_are_bounded_while_they_are_applied(server):
    """Each copy doubles a subtree: the patch stops at the request limit rather than building
    the whole result (12 doublings of 1 KiB would be 4 MiB; 40 would be a terabyte)."""
    ensure_namespace(server, NS)
    code, cm = server.curl("POST", CM, configmap("doubled"))
    assert code == 201, cm
    # a field ConfigMap does not define, so that only the size can stop it
    ops = [{"op": "add", "path": "/extra", "value": {"a": "d" * 1024}}]
    ops += [{"op": "copy", "from": "/extra", "path": f"/extra/n{i}"} for i in range(12)]
    code, resp = server.curl("PATCH", f"{CM}/doubled", ops, content_type="application/json-patch+json")
    assert_too_large(code, resp, REQUEST_LIMIT)
    code, now = server.curl("GET", f"{CM}/doubled")
    assert code == 200 and "extra" not in now
    assert now["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_max_object_bytes_flag_lowers_the_limit(server_factory):
    s = server_factory("--max-object-bytes", "65536")
    ensure_namespace(s, NS)
    code, resp = s.curl("POST", CM, configmap("small", {"k": "x" * 60000}))
    assert code == 201, str(resp)[:300]
    code, resp = s.curl("POST", CM, configmap("large", {"k": "x" * 70000}))
    assert_too_large(code, resp, 65536)
    code, _ = s.curl("GET", f"{CM}/large")
    assert code == 404


def test_max_object_bytes_flag_is_checked(tmp_path):
    for bad in ("0", "-5", "lots", "1k"):
        r = subprocess.run([BIN, "server", "--data-dir", str(tmp_path), "--max-object-bytes", bad],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode == 2, (bad, r.stderr)
        assert "--max-object-bytes" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_kubectl_apply_of_normal_manifests_still_works(server, tmp_path):
    ensure_namespace(server, NS)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: size-limits\n"
        "  labels: &l {app: web}\ndata:\n  a: one\n  b: two\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: size-limits\n"
        "spec:\n  replicas: 2\n  selector:\n    matchLabels: &sel {app: web}\n  template:\n"
        "    metadata:\n      labels: *sel\n    spec:\n      containers:\n      - name: web\n"
        "        image: nginx:1.27\n")
    for extra in ((), ("--server-side",)):
        r = server.kubectl("apply", *extra, "-f", str(manifest))
        assert "configmap/applied" in r.stdout and "deployment.apps/web" in r.stdout, r.stdout
    got = json.loads(server.kubectl("get", "deploy", "web", "-n", NS, "-o", "json").stdout)
    assert got["spec"]["template"]["metadata"]["labels"] == {"app": "web"}


def test_a_crd_too_large_to_store_is_refused_before_its_kind_is_served(server_factory):
    """A CRD's kind is served from its registration: one the store would refuse must be refused
    before that, or its kind would be served with no CustomResourceDefinition stored."""
    s = server_factory("--max-object-bytes", "8192")
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

    def crd(description):
        schema = {"type": "object", "description": description,
                  "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.big.example.com"},
                "spec": {"group": "big.example.com", "scope": "Namespaced",
                         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True,
                                       "schema": {"openAPIV3Schema": schema}}]}}

    code, resp = s.curl("POST", crds, crd("x" * 10000))
    assert_too_large(code, resp, 8192)
    assert s.curl("GET", f"{crds}/widgets.big.example.com")[0] == 404
    assert s.curl("GET", "/apis/big.example.com/v1/namespaces/default/widgets")[0] == 404
    # a small one is stored and served; growing it past the limit keeps the stored schema
    code, resp = s.curl("POST", crds, crd("small"))
    assert code == 201, resp
    assert s.curl("GET", "/apis/big.example.com/v1/namespaces/default/widgets")[0] == 200
    grown = crd("x" * 10000)
    grown["metadata"]["resourceVersion"] = resp["metadata"]["resourceVersion"]
    code, resp = s.curl("PUT", f"{crds}/widgets.big.example.com", grown)
    assert_too_large(code, resp, 8192)
    code, resp = s.curl("GET", f"{crds}/widgets.big.example.com")
    assert code == 200 and resp["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] == "small"
