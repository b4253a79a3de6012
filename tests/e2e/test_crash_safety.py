"""Crash safety: kill -9 the server in the middle of a write load, restart it on the same data
directory, and check that every acknowledged write is there, that revisions only go forward,
and that a watcher resumes from the last resourceVersion it saw."""
import threading
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

from conftest import ensure_namespace, wait_for

NS = "crash"
PATH = f"/api/v1/namespaces/{NS}/configmaps"
THREADS = 8


def run_load(server, stop, acked, lock):
    """THREADS writers creating and updating ConfigMaps; every acknowledged write is recorded
    as (thread, name, resourceVersion, data)."""

    def writer(t):
        api = config.new_client_from_config(config_file=server.kubeconfig)
        api.configuration.retries = 0
        v1 = client.CoreV1Api(api)
        mine = []
        j = 0
        try:
            while not stop.is_set():
                try:
                    if j % 3 == 2 and mine:
                        name = mine[(j * 7) % len(mine)]
                        data = {"n": str(j), "by": str(t)}
                        obj = v1.patch_namespaced_config_map(name, NS, {"data": data}, _request_timeout=(3, 10))
                    else:
                        name = f"w{t}-{j}"
                        data = {"n": str(j)}
                        obj = v1.create_namespaced_config_map(
                            NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"load": "yes"}),
                                                   data=data), _request_timeout=(3, 10))
                        mine.append(name)
                except Exception:  # noqa: BLE001 - the server was killed under us: unacknowledged
                    return
                with lock:
                    acked.append((t, name, int(obj.metadata.resource_version), dict(obj.data)))
                j += 1
        finally:
            try:
                api.close()
            except Exception:  # noqa: BLE001
                pass

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(THREADS)]
    for th in threads:
        th.start()
    return threads


def test_acknowledged_writes_survive_kill_9(fresh_server):
    s = fresh_server.start()
    ensure_namespace(s, NS)
    start_rv = s.list_rv(PATH)
    watcher = s.watch(f"{PATH}?watch=1&resourceVersion={start_rv}")
    assert watcher.status == 200, watcher.body

    acked, lock, stop = [], threading.Lock(), threading.Event()
    threads = run_load(s, stop, acked, lock)
    wait_for(lambda: len(acked) >= 150, timeout=30, what="150 acknowledged writes")
    s.kill()  # SIGKILL, mid-load: writers are still running
    stop.set()
    for th in threads:
        th.join(20)
        assert not th.is_alive(), "a writer hung after the server died"
    seen_before_crash = [e for e in watcher.drain(1.0) if e.get("type") in ("ADDED", "MODIFIED", "DELETED")]
    watcher.close()
    assert seen_before_crash, "the watcher saw nothing before the crash"
    last_seen = int(seen_before_crash[-1]["object"]["metadata"]["resourceVersion"])

    # each writer's own acknowledged revisions increase
    for t in range(THREADS):
        rvs = [rv for tt, _, rv, _ in acked if tt == t]
        assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs), f"thread {t}: {rvs}"
    all_rvs = [rv for _, _, rv, _ in acked]
    assert len(set(all_rvs)) == len(all_rvs), "two acknowledged writes share a resourceVersion"

    s.start()
    code, body = s.curl("GET", PATH)
    assert code == 200, body
    stored = {i["metadata"]["name"]: (int(i["metadata"]["resourceVersion"]), i.get("data", {})) for i in body["items"]}
    latest = {}
    for _, name, rv, data in acked:
        if name not in latest or rv > latest[name][0]:
            latest[name] = (rv, data)
    missing = [n for n in latest if n not in stored]
    assert not missing, f"{len(missing)} acknowledged objects lost after kill -9: {missing[:10]}"
    for name, (rv, data) in latest.items():
        srv, sdata = stored[name]
        assert srv >= rv, f"{name}: stored resourceVersion {srv} < acknowledged {rv}"
        if srv == rv:
            assert sdata == data, f"{name}: stored {sdata} != acknowledged {data} at rv {rv}"
    max_before = max(all_rvs + [last_seen])
    assert int(body["metadata"]["resourceVersion"]) >= max_before

    # new writes get higher revisions than anything acknowledged before the crash
    code, new = s.curl("POST", PATH, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-restart"}})
    assert code == 201, new
    new_rv = int(new["metadata"]["resourceVersion"])
    assert new_rv > max_before, f"revision went backwards: {new_rv} <= {max_before}"

    # a watcher resumes from the last revision it saw and gets exactly what it missed, in order
    expected = sorted((rv, name) for _, name, rv, _ in acked if rv > last_seen)
    with s.watch(f"{PATH}?watch=1&resourceVersion={last_seen}") as w:
        assert w.status == 200, w.body
        got = []
        deadline = time.time() + 20
        while not got or got[-1][1] != "after-restart":
            ev = w.next(timeout=max(0.1, deadline - time.time()))
            assert ev is not None, "the resumed watch ended early"
            if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                got.append((int(ev["object"]["metadata"]["resourceVersion"]), ev["object"]["metadata"]["name"]))
    rvs = [rv for rv, _ in got]
    assert rvs == sorted(rvs) and rvs[0] > last_seen, rvs[:20]
    assert set(expected) <= set(got), f"resumed watch missed {sorted(set(expected) - set(got))[:10]}"
    assert got[-1] == (new_rv, "after-restart")

    # and the restarted server keeps working under the Python client
    api = config.new_client_from_config(config_file=s.kubeconfig)
    try:
        v1 = client.CoreV1Api(api)
        obj = v1.patch_namespaced_config_map("after-restart", NS, {"data": {"ok": "yes"}})
        assert int(obj.metadata.resource_version) > new_rv
        try:
            v1.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="after-restart")))
            raise AssertionError("duplicate create succeeded after restart")
        except ApiException as e:
            assert e.status == 409
    finally:
        api.close()
