"""The control plane on etcd (issue 40): `flotilla server --etcd-servers` against a real
3-member etcd cluster this module starts on loopback ports, driven with kubectl and etcdctl
as an operator would."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, EtcdCluster, Server, wait_for

ETCDCTL = "/usr/bin/etcdctl"


@pytest.fixture(scope="module")
def etcd():
    c = EtcdCluster(tempfile.mkdtemp(prefix="flotilla-etcd-")).start()
    yield c
    c.stop()


def etcdctl(cluster, *args):
    r = subprocess.run([ETCDCTL, "--endpoints", cluster.endpoints, *args], capture_output=True, text=True,
                       timeout=30, env=dict(os.environ, ETCDCTL_API="3"))
    assert r.returncode == 0, f"etcdctl {' '.join(args)}: {r.stderr}"
    return r.stdout


def etcd_kv(cluster, key):
    out = json.loads(etcdctl(cluster, "get", key, "-w", "json"))
    kvs = out.get("kvs") or []
    return kvs[0] if kvs else None


@pytest.fixture
def etcd_server(etcd):
    started = []

    def make(prefix, *extra):
        d = tempfile.mkdtemp(prefix="flotilla-e2e-")
        s = Server(d, ["--etcd-servers", etcd.endpoints, "--etcd-prefix", prefix, *extra]).start()
        started.append(s)
        return s

    yield make
    failures = []
    for s in started:
        if s.proc:
            rc = s.stop()
            if rc != 0:
                failures.append(f"server {s.data_dir} exited with {rc}:\n{s.log()}")
        shutil.rmtree(s.data_dir, ignore_errors=True)
    assert not failures, "\n".join(failures)


def test_objects_live_in_etcd_with_its_revisions_as_resource_versions(etcd, etcd_server):
    s = etcd_server("/t1/registry")
    s.kubectl("create", "configmap", "web", "--from-literal=k=v1")
    cm = s.kubectl_json("get", "configmap", "web")
    kv = etcd_kv(etcd, "/t1/registry/core/configmaps/default/web")
    assert kv, etcdctl(etcd, "get", "--prefix", "/t1/", "--keys-only")
    assert cm["metadata"]["resourceVersion"] == str(kv["mod_revision"])
    # an update moves the revision etcd-side, and the list's resourceVersion is etcd's revision
    s.kubectl("patch", "configmap", "web", "-p", '{"data":{"k":"v2"}}')
    cm2 = s.kubectl_json("get", "configmap", "web")
    kv2 = etcd_kv(etcd, "/t1/registry/core/configmaps/default/web")
    assert cm2["data"]["k"] == "v2" and cm2["metadata"]["resourceVersion"] == str(kv2["mod_revision"])
    assert int(cm2["metadata"]["resourceVersion"]) > int(cm["metadata"]["resourceVersion"])
    # the stored bytes are the object (after a one-line header), readable with etcdctl
    raw = base64.b64decode(kv2["value"]).decode()
    header, _, body = raw.partition("\n")
    assert header.startswith("FL1 "), raw[:80]
    assert json.loads(body)["data"] == {"k": "v2"}


def test_a_stale_update_conflicts_and_a_delete_leaves_etcd(etcd, etcd_server):
    s = etcd_server("/t2/registry")
    s.kubectl("create", "configmap", "c", "--from-literal=a=1")
    cm = s.kubectl_json("get", "configmap", "c")
    old_rv = cm["metadata"]["resourceVersion"]
    s.kubectl("patch", "configmap", "c", "-p", '{"data":{"a":"2"}}')
    cm["data"]["a"] = "3"
    code, body = s.curl("PUT", "/api/v1/namespaces/default/configmaps/c", cm)
    assert code == 409 and body["reason"] == "Conflict", body
    assert cm["metadata"]["resourceVersion"] == old_rv
    s.kubectl("delete", "configmap", "c")
    assert etcd_kv(etcd, "/t2/registry/core/configmaps/default/c") is None


def test_two_servers_on_one_etcd_serve_the_same_objects_and_watches(etcd, etcd_server):
    a = etcd_server("/t3/registry")
    b = etcd_server("/t3/registry")
    rv0 = b.list_rv("/api/v1/namespaces/default/configmaps")
    w = b.watch(f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv0}")
    a.kubectl("create", "configmap", "shared", "--from-literal=x=1")
    ev = w.next(timeout=10)
    assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "shared", ev
    def on_b():
        code, obj = b.curl("GET", "/api/v1/namespaces/default/configmaps/shared")
        return obj if code == 200 else None

    obj = wait_for(on_b, timeout=10, what="the object on the second server")
    assert obj == a.curl("GET", "/api/v1/namespaces/default/configmaps/shared")[1]
    w.close()


def test_a_server_killed_and_restarted_resumes_from_etcd(etcd):
    d = tempfile.mkdtemp(prefix="flotilla-e2e-")
    s = Server(d, ["--etcd-servers", etcd.endpoints, "--etcd-prefix", "/t4/registry"]).start()
    try:
        s.kubectl("create", "namespace", "keep")
        s.kubectl("create", "configmap", "c", "-n", "keep", "--from-literal=a=1")
        rv = s.kubectl_json("get", "configmap", "c", "-n", "keep")["metadata"]["resourceVersion"]
        s.kill()
        # the data directory's SQLite file is not where the objects are
        assert not any(f.startswith("store") for f in os.listdir(d)), os.listdir(d)
        s.start()
        cm = s.kubectl_json("get", "configmap", "c", "-n", "keep")
        assert cm["metadata"]["resourceVersion"] == rv and cm["data"] == {"a": "1"}
    finally:
        if s.proc:
            assert s.stop() == 0, s.log()
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("args, says", [
    (["--etcd-servers", "not a url"], "etcd"),
    (["--etcd-servers", "http://127.0.0.1:2379", "--etcd-cafile", "/nonexistent/ca.crt"], "ca.crt"),
    (["--etcd-cafile", "/tmp/x"], "--etcd-servers"),
    (["--etcd-servers", "http://127.0.0.1:2379", "--etcd-prefix", "registry/"], "--etcd-prefix"),
    (["--etcd-servers", "http://127.0.0.1:2379", "--etcd-certfile", "/tmp/c.crt"], "--etcd-keyfile"),
])
def test_bad_etcd_flags_are_one_line_and_a_nonzero_exit(args, says):
    d = tempfile.mkdtemp(prefix="flotilla-e2e-")
    try:
        r = subprocess.run([BIN, "server", "--data-dir", d, "--listen", "127.0.0.1:0", *args], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode != 0
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        assert any(says in l for l in lines), r.stderr
        assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)
