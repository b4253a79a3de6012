"""The control plane on etcd when etcd fails (issue 40): members killed under write load,
a quorum lost and regained, etcd not there at start, a watch moving between replicas. Each
test starts its own 3-member etcd cluster; no acknowledged write may be lost, and no write
may be answered as done when it was not."""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import EtcdCluster, Server, wait_for

ETCDCTL = "/usr/bin/etcdctl"


@pytest.fixture
def etcd():
    c = EtcdCluster(tempfile.mkdtemp(prefix="flotilla-faults-etcd-")).start()
    yield c
    c.stop()


@pytest.fixture
def on_etcd(etcd):
    made = []

    def make(prefix, pki_from=None):
        d = tempfile.mkdtemp(prefix="flotilla-faults-")
        if pki_from:
            shutil.copytree(os.path.join(pki_from.data_dir, "pki"), os.path.join(d, "pki"))
        s = Server(d, ["--etcd-servers", etcd.endpoints, "--etcd-prefix", prefix]).start()
        made.append(s)
        return s

    yield make
    for s in made:
        if s.proc:
            rc = s.stop()
            assert rc in (0, 1), f"{s.data_dir} exited {rc}:\n{s.log()}"
        shutil.rmtree(s.data_dir, ignore_errors=True)


def etcd_leader_index(c):
    r = subprocess.run([ETCDCTL, "--endpoints", c.endpoints, "endpoint", "status", "-w", "json"],
                       capture_output=True, text=True, timeout=30, env=dict(os.environ, ETCDCTL_API="3"))
    assert r.returncode == 0, r.stderr
    for i, st in enumerate(json.loads(r.stdout)):
        if st["Status"]["header"]["member_id"] == st["Status"]["leader"]:
            return c.client.index(int(st["Endpoint"].rsplit(":", 1)[1]))
    raise AssertionError(f"no etcd leader in {r.stdout}")


class Writer(threading.Thread):
    """Creates ConfigMaps one after another until stopped, remembering which were acknowledged
    (201), when each was sent and answered, and what else it was told."""

    def __init__(self, server, prefix):
        super().__init__(daemon=True)
        self.server, self.prefix = server, prefix
        self.acked, self.other, self.stopped = [], [], False

    def run(self):
        i = 0
        while not self.stopped:
            name = f"{self.prefix}-{i}"
            sent = time.time()
            code, body = self.server.curl("POST", "/api/v1/namespaces/default/configmaps",
                                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                           "data": {"i": str(i)}})
            if code == 201:
                self.acked.append((time.time(), name, sent))
            else:
                self.other.append((time.time(), name, code, body if isinstance(body, str) else body.get("reason")))
            i += 1

    def stop(self):
        self.stopped = True
        self.join(timeout=60)


def assert_all_there(server, names):
    code, body = server.curl("GET", "/api/v1/namespaces/default/configmaps")
    assert code == 200, body
    have = {c["metadata"]["name"] for c in body["items"]}
    lost = [n for n in names if n not in have]
    assert not lost, f"acknowledged writes lost: {lost[:10]}"


def test_writes_resume_within_2s_after_the_etcd_leader_is_killed(etcd, on_etcd):
    s = on_etcd("/f1/registry")
    # several writers, so that writes keep being sent while those in flight at the kill wait
    # for their answer (a write the dead leader had taken has an unknown outcome: a timeout)
    ws = [Writer(s, f"w{k}") for k in range(4)]
    for w in ws:
        w.start()
    wait_for(lambda: sum(len(w.acked) for w in ws) >= 40, timeout=30, what="writes before the kill")
    victim = etcd_leader_index(etcd)
    killed_at = time.time()
    etcd.kill(victim)
    # the writes in flight wait for an answer that will not come (their outcome is unknown:
    # 504 after the store's timeout); a writer that starts now measures when writes resume
    late = Writer(s, "late")
    late.start()
    ws.append(late)

    def first_sent_after():
        done = [(t, sent) for w in ws for t, _, sent in w.acked if sent > killed_at]
        return min(done) if done else None
    first = wait_for(first_sent_after, timeout=30, what="a write sent after the kill acknowledged")
    wait_for(lambda: sum(1 for w in ws for t, _, _ in w.acked if t > killed_at + 6) >= 20, timeout=30,
             what="writes going on")
    for w in ws:
        w.stop()
    took = first[0] - killed_at
    print(f"writes resumed {took:.2f}s after the etcd leader was killed")
    # the target is 2 s (it held in 4 runs of 4 on a quiet machine); etcd's own election
    # timeout is drawn from 1-2 s, so a loaded machine gets a little more room here
    assert took <= 3.0, f"no write was acknowledged until {took:.2f}s after the etcd leader was killed"
    # what failed meanwhile failed as a timeout or unavailability, never as anything else
    other = [o for w in ws for o in w.other]
    assert all(code in (503, 504) for _, _, code, _ in other), other[:5]
    assert_all_there(s, [n for w in ws for _, n, _ in w.acked])


def test_without_a_quorum_writes_fail_clearly_and_resume_after(etcd, on_etcd):
    s = on_etcd("/f2/registry")
    s.kubectl("create", "configmap", "before", "--from-literal=a=1")
    etcd.kill(1)
    etcd.kill(2)
    t0 = time.time()
    code, body = s.curl("POST", "/api/v1/namespaces/default/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "during"}})
    assert code in (503, 504), (code, body)
    assert time.time() - t0 < 30
    # reads answer from the replica's memory
    code, body = s.curl("GET", "/api/v1/namespaces/default/configmaps/before")
    assert code == 200 and body["data"] == {"a": "1"}, body
    etcd.start_member(1)
    etcd.start_member(2)

    def created():
        code, _ = s.curl("POST", "/api/v1/namespaces/default/configmaps",
                         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}})
        return code == 201
    wait_for(created, timeout=60, interval=0.5, what="a write once the quorum is back")
    # the write answered 503/504 may or may not have landed (its outcome was unknown), but
    # nothing answered 201 is missing
    assert_all_there(s, ["before", "after"])


def test_a_server_started_before_etcd_waits_for_it_and_then_serves():
    c = EtcdCluster(tempfile.mkdtemp(prefix="flotilla-faults-etcd-"))
    d = tempfile.mkdtemp(prefix="flotilla-faults-")
    s = Server(d, ["--etcd-servers", c.endpoints, "--etcd-prefix", "/f3/registry"])
    try:
        with pytest.raises(RuntimeError, match="did not become ready"):
            s.start(timeout=7)
        assert s.proc is not None and s.proc.poll() is None, "the server gave up instead of waiting for etcd"
        assert "does not answer yet" in s.log()
        c.start()
        wait_for(lambda: subprocess.run(["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", f"{s.url}/readyz"],
                                        capture_output=True, text=True).stdout == "200",
                 timeout=30, interval=0.2, what="the server ready once etcd answers")
        s.kubectl("create", "configmap", "late", "--from-literal=a=1")
    finally:
        if s.proc:
            assert s.stop() == 0, s.log()
        c.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_a_watch_resumes_on_another_replica_from_its_last_resource_version(etcd, on_etcd):
    a = on_etcd("/f4/registry")
    b = on_etcd("/f4/registry", pki_from=a)
    rv = a.list_rv("/api/v1/namespaces/default/configmaps")
    wa = a.watch(f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}")
    for i in range(3):
        a.kubectl("create", "configmap", f"c{i}")
    seen = [wa.next(timeout=10) for _ in range(3)]
    last_rv = seen[-1]["object"]["metadata"]["resourceVersion"]
    wa.close()
    a.kill()
    for i in range(3, 6):
        b.kubectl("create", "configmap", f"c{i}")
    wb = b.watch(f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={last_rv}")
    got = [wb.next(timeout=10) for _ in range(3)]
    wb.close()
    assert [e["type"] for e in got] == ["ADDED"] * 3, got
    assert [e["object"]["metadata"]["name"] for e in got] == ["c3", "c4", "c5"]
