"""Pull-mode credentials end to end: the bootstrap kubeconfig, registration, and what an agent
token may and may not do (docs/internals/auth.md).

One server for the module; the tests run in file order and build on each other: the bootstrap
identity registers cluster m1 (and m2); m1's agent token reads and writes its own Cluster (and
its status), creates and renews its own Lease, lists, watches and updates the Works in
karmada-es-m1; it is refused, with Kubernetes' Forbidden wording, for m2's Cluster, Works in
karmada-es-m2, Secrets anywhere and ConfigMaps in default. Re-registration rotates the token
(the old one answers 401), a restart keeps the current one, a Push cluster's name cannot be
registered (409), and deleting the Cluster as admin revokes the token (401). Clients are real:
kubectl with a kubeconfig per identity, curl, and raw HTTPS watches. Every wait is bounded."""
import json
import os
import subprocess

import pytest

from conftest import KUBECTL, wait_for

REGISTER = "/apis/flotilla.io/v1alpha1/register"
WORKS_M1 = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m1/works"
WORKS_M2 = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m2/works"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases"
AGENT_M1 = "system:flotilla:agent:m1"

# tokens handed out so far, by test order
state = {}


def bootstrap_token(server):
    with open(os.path.join(server.data_dir, "pki", "bootstrap.token")) as f:
        return f.read().strip()


def curl_as(server, token, method, path, body=None, content_type="application/json"):
    """(status, parsed body) for one request with `token` (None: no Authorization header)."""
    headers = [f"Authorization: Bearer {token}"] if token else []
    return server.curl(method, path, body, content_type=content_type, headers=headers, auth=False)


def register(server, name, token=None):
    return curl_as(server, token or bootstrap_token(server), "POST", REGISTER, {"clusterName": name})


def agent_kubeconfig(server, name, token):
    """A kubeconfig for the agent token, as `flotilla agent` would hold it."""
    path = os.path.join(server.data_dir, f"agent-{name}.kubeconfig")
    ca = os.path.join(server.data_dir, "pki", "ca.crt")
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: flotilla
  cluster: {{server: "{server.url}", certificate-authority: "{ca}"}}
users:
- name: agent
  user: {{token: "{token}"}}
contexts:
- name: agent
  context: {{cluster: flotilla, user: agent}}
current-context: agent
""")
    return path


def kubectl_as(kubeconfig, *args, input=None):
    return subprocess.run([KUBECTL, "--kubeconfig", kubeconfig] + list(args), input=input, capture_output=True,
                          text=True, timeout=60)


def assert_forbidden(code, body, message):
    assert code == 403, (code, body)
    assert body["kind"] == "Status" and body["reason"] == "Forbidden" and body["code"] == 403, body
    assert body["message"] == message, body["message"]


def test_bootstrap_kubeconfig_registers_and_nothing_else(server):
    kc = os.path.join(server.data_dir, "bootstrap-kubeconfig")
    assert os.stat(kc).st_mode & 0o777 == 0o600
    r = kubectl_as(kc, "get", "configmaps", "-n", "default")
    assert r.returncode != 0
    assert ('configmaps is forbidden: User "system:bootstrap" cannot list resource "configmaps" in API group "" '
            'in the namespace "default"') in r.stderr, r.stderr
    r = kubectl_as(kc, "get", "clusters")
    assert r.returncode != 0 and "forbidden" in r.stderr, r.stderr
    code, body = curl_as(server, bootstrap_token(server), "GET", "/api/v1/secrets")
    assert code == 403, body
    # no token, a wrong token: 401 before anything else
    assert curl_as(server, None, "POST", REGISTER, {"clusterName": "m1"})[0] == 401
    assert curl_as(server, "0" * 64, "POST", REGISTER, {"clusterName": "m1"})[0] == 401

    code, body = register(server, "m1")
    assert code == 201, body
    assert body["clusterName"] == "m1" and len(body["token"]) == 64
    state["m1"] = body["token"]
    cl = server.kubectl_json("get", "cluster", "m1")
    assert cl["spec"]["syncMode"] == "Pull"
    # the Secret keeps a digest, never the token
    secret = server.kubectl_json("get", "secret", "-n", "karmada-cluster", "m1-agent-token")
    assert secret["metadata"]["labels"]["flotilla.io/agent-token"] == "m1"
    assert body["token"] not in json.dumps(secret)
    code, body = register(server, "m2")
    assert code == 201, body
    state["m2"] = body["token"]


def test_agent_token_manages_its_own_cluster_lease_and_works(server):
    kc = agent_kubeconfig(server, "m1", state["m1"])
    # its Cluster and its status
    r = kubectl_as(kc, "get", "cluster", "m1", "-o", "json")
    assert r.returncode == 0, r.stderr
    r = kubectl_as(kc, "patch", "cluster", "m1", "--subresource=status", "--type=merge",
                   "-p", '{"status":{"kubernetesVersion":"v1.32.0"}}')
    assert r.returncode == 0, r.stderr
    # its Lease: create, renew
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "m1", "namespace": "karmada-cluster"},
             "spec": {"holderIdentity": "m1", "leaseDurationSeconds": 40,
                      "renewTime": "2026-01-01T00:00:00.000000Z"}}
    r = kubectl_as(kc, "create", "-f", "-", input=json.dumps(lease))
    assert r.returncode == 0, r.stderr
    r = kubectl_as(kc, "patch", "lease", "m1", "-n", "karmada-cluster", "--type=merge",
                   "-p", '{"spec":{"renewTime":"2026-01-01T00:00:10.000000Z"}}')
    assert r.returncode == 0, r.stderr
    code, body = curl_as(server, state["m1"], "GET", f"{LEASES}/m1")
    assert code == 200 and body["spec"]["renewTime"].startswith("2026-01-01T00:00:10"), body

    # Works in karmada-es-m1: list, watch, update, status
    work = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w1", "namespace": "karmada-es-m1"},
            "spec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": "default"},
                 "data": {"k": "v"}}]}}}
    code, body = server.curl("POST", WORKS_M1, work)
    assert code == 201, body
    r = kubectl_as(kc, "get", "works", "-n", "karmada-es-m1", "-o", "name")
    assert r.returncode == 0 and "work.work.karmada.io/w1" in r.stdout, (r.stdout, r.stderr)
    with server.watch(f"{WORKS_M1}?watch=1", headers={"Authorization": f"Bearer {state['m1']}"}) as w:
        assert w.status == 200, w.body
        ev = w.next(timeout=10)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "w1", ev
        code, body = server.curl("PATCH", f"{WORKS_M1}/w1", {"metadata": {"labels": {"round": "2"}}},
                                 content_type="application/merge-patch+json")
        assert code == 200, body
        evs = w.collect(1, timeout=10, pred=lambda e: e["type"] == "MODIFIED"
                        and e["object"]["metadata"].get("labels", {}).get("round") == "2")
        assert evs
    r = kubectl_as(kc, "annotate", "work", "w1", "-n", "karmada-es-m1", "agent/seen=yes")
    assert r.returncode == 0, r.stderr
    code, body = curl_as(server, state["m1"], "PATCH", f"{WORKS_M1}/w1/status",
                         {"status": {"conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
                                                     "message": "ok",
                                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    # its execution namespace, and discovery
    assert curl_as(server, state["m1"], "GET", "/api/v1/namespaces/karmada-es-m1")[0] == 200
    assert curl_as(server, state["m1"], "GET", "/apis")[0] == 200
    assert kubectl_as(kc, "api-resources", "--api-group=work.karmada.io").returncode == 0


def test_agent_token_is_refused_outside_its_grant(server):
    t = state["m1"]
    assert_forbidden(*curl_as(server, t, "GET", f"{CLUSTERS}/m2"),
                     'clusters.cluster.karmada.io "m2" is forbidden: User "system:flotilla:agent:m1" cannot get '
                     'resource "clusters" in API group "cluster.karmada.io" at the cluster scope')
    assert_forbidden(*curl_as(server, t, "PATCH", f"{CLUSTERS}/m2/status", {"status": {}},
                              content_type="application/merge-patch+json"),
                     'clusters.cluster.karmada.io "m2" is forbidden: User "system:flotilla:agent:m1" cannot patch '
                     'resource "clusters/status" in API group "cluster.karmada.io" at the cluster scope')
    assert_forbidden(*curl_as(server, t, "GET", WORKS_M2),
                     'works.work.karmada.io is forbidden: User "system:flotilla:agent:m1" cannot list resource '
                     '"works" in API group "work.karmada.io" in the namespace "karmada-es-m2"')
    code, body = curl_as(server, t, "GET", WORKS_M2)
    assert body["details"] == {"group": "work.karmada.io", "kind": "works"}, body
    with server.watch(f"{WORKS_M2}?watch=1", headers={"Authorization": f"Bearer {t}"}) as w:
        assert w.status == 403, w.body
    for path in ("/api/v1/secrets", "/api/v1/namespaces/karmada-es-m1/secrets",
                 "/api/v1/namespaces/karmada-cluster/secrets", "/api/v1/namespaces/karmada-cluster/secrets/m1-agent-token"):
        code, body = curl_as(server, t, "GET", path)
        assert code == 403 and body["reason"] == "Forbidden", (path, code, body)
    kc = agent_kubeconfig(server, "m1", t)
    r = kubectl_as(kc, "get", "configmaps", "-n", "default")
    assert r.returncode != 0
    assert ('configmaps is forbidden: User "system:flotilla:agent:m1" cannot list resource "configmaps" in API '
            'group "" in the namespace "default"') in r.stderr, r.stderr
    # nor may it change its own Cluster's spec (only its status) or delete it, make Works, take
    # another cluster's Lease, or register
    assert_forbidden(*curl_as(server, t, "PATCH", f"{CLUSTERS}/m1",
                              {"spec": {"apiEndpoint": "https://evil.example.com", "syncMode": "Push"}},
                              content_type="application/merge-patch+json"),
                     'clusters.cluster.karmada.io "m1" is forbidden: User "system:flotilla:agent:m1" cannot patch '
                     'resource "clusters" in API group "cluster.karmada.io" at the cluster scope')
    assert curl_as(server, t, "DELETE", f"{CLUSTERS}/m1")[0] == 403
    assert curl_as(server, t, "POST", WORKS_M1, {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                                                 "metadata": {"name": "w9"}, "spec": {}})[0] == 403
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "m2", "namespace": "karmada-cluster"}, "spec": {"holderIdentity": "m1"}}
    assert curl_as(server, t, "POST", LEASES, lease)[0] == 403
    assert curl_as(server, t, "GET", LEASES)[0] == 403
    assert register(server, "m1", token=t)[0] == 403
    assert curl_as(server, t, "GET", "/metrics")[0] == 403
    # nothing of the refused requests happened
    assert server.kubectl_json("get", "cluster", "m1")["metadata"]["name"] == "m1"
    assert server.curl("GET", f"{LEASES}/m2")[0] == 404


def test_register_refuses_a_push_cluster_name(server):
    code, body = server.curl("POST", CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                                "metadata": {"name": "p1"},
                                                "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"}})
    assert code == 201, body
    code, body = register(server, "p1")
    assert code == 409 and body["reason"] == "Conflict", body
    assert 'cluster "p1" is already joined in Push mode' in body["message"], body
    code, body = register(server, "Not_A_Label")
    assert code == 422 and body["reason"] == "Invalid", body
    assert body["details"]["causes"][0]["field"] == "clusterName", body


def test_reregistration_rotates_the_token(server):
    old = state["m1"]
    code, body = register(server, "m1")
    assert code == 201, body
    new = body["token"]
    assert new != old
    assert curl_as(server, old, "GET", f"{CLUSTERS}/m1")[0] == 401
    assert curl_as(server, new, "GET", f"{CLUSTERS}/m1")[0] == 200
    state["m1"] = new


def test_restart_keeps_the_agent_token(server):
    server.stop()
    server.start()
    assert curl_as(server, state["m1"], "GET", f"{CLUSTERS}/m1")[0] == 200
    assert curl_as(server, state["m2"], "GET", f"{CLUSTERS}/m2")[0] == 200
    assert curl_as(server, state["m1"], "GET", f"{CLUSTERS}/m2")[0] == 403


def test_deleting_the_cluster_revokes_the_token(server):
    server.kubectl("delete", "cluster", "m1", "--wait=true", timeout=30)
    wait_for(lambda: curl_as(server, state["m1"], "GET", WORKS_M1)[0] == 401, timeout=10,
             what="the deleted cluster's agent token to be refused")
    code, body = curl_as(server, state["m1"], "GET", f"{CLUSTERS}/m1")
    assert code == 401 and body["reason"] == "Unauthorized", body
    # the other agent is untouched
    assert curl_as(server, state["m2"], "GET", f"{CLUSTERS}/m2")[0] == 200
    # and m1 can register again, as a new cluster, with a new token
    code, body = register(server, "m1")
    assert code == 201, body
    assert curl_as(server, body["token"], "GET", f"{CLUSTERS}/m1")[0] == 200
