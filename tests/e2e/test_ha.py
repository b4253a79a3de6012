"""Replicas of the control plane on one etcd (issue 40): one leads the controllers, the Lease
kube-system/flotilla-controller-manager says which, and another takes over when it dies or
stops. Each test starts its own 3-member etcd cluster and servers."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, EtcdCluster, Server, deployment_manifest, free_port, free_port_run, policy_manifest, wait_up_line, wait_for

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/flotilla-controller-manager"


@pytest.fixture(scope="module")
def etcd():
    c = EtcdCluster(tempfile.mkdtemp(prefix="flotilla-ha-etcd-")).start()
    yield c
    c.stop()


class Replicas:
    def __init__(self, etcd, prefix, n=2):
        self.servers = []
        base = None
        for i in range(n):
            d = tempfile.mkdtemp(prefix="flotilla-ha-")
            if base:  # one set of certificates and tokens for every replica, as `flotilla up` shares them
                shutil.copytree(os.path.join(base, "pki"), os.path.join(d, "pki"))
            s = Server(d, ["--etcd-servers", etcd.endpoints, "--etcd-prefix", prefix])
            s.start()
            base = base or d
            self.servers.append(s)

    def holder(self, via):
        code, lease = via.curl("GET", LEASE)
        return lease["spec"]["holderIdentity"] if code == 200 else None

    def leader(self, via=None, timeout=15, other_than=None):
        """The replica whose log says it leads, once the Lease names it (and it is not
        other_than)."""
        via = via or next(s for s in self.servers if s.proc)

        def find():
            h = self.holder(via)
            for s in self.servers:
                if s.proc and s is not other_than and h and f"{h} leads the controllers" in s.log():
                    return s
            return None
        return wait_for(find, timeout=timeout, what="a replica leading the controllers")

    def close(self):
        failures = []
        for s in self.servers:
            if s.proc:
                rc = s.stop()
                if rc not in (0,):
                    failures.append(f"{s.data_dir} exited {rc}:\n{s.log()}")
            shutil.rmtree(s.data_dir, ignore_errors=True)
        assert not failures, "\n".join(failures)


def bound(server, name):
    code, body = server.curl("GET", "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings")
    if code != 200:
        return False
    return any(b["spec"]["resource"]["name"] == name for b in body["items"])


def propagate(server, name):
    """A Deployment and its policy; the leader's detector binds it (no member is needed)."""
    for path, obj in (("/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", policy_manifest(name)),
                      ("/apis/apps/v1/namespaces/default/deployments", deployment_manifest(name))):
        code, body = server.curl("POST", path, obj)
        assert code == 201, body


def test_one_replica_leads_and_a_standby_takes_over_after_a_kill(etcd):
    r = Replicas(etcd, "/ha1/registry")
    try:
        a = r.leader()
        standby = next(s for s in r.servers if s is not a)
        # the standby serves the API too, and is ready
        assert standby.curl("GET", "/readyz", auth=False)[0] == 200
        propagate(standby, "before")
        wait_for(lambda: bound(standby, "before"), timeout=15, what="the leader binding a Deployment")
        t0 = time.time()
        a.kill()
        b = r.leader(via=standby, timeout=15, other_than=a)
        took = time.time() - t0
        assert b is standby
        assert took <= 8, f"the standby took {took:.1f}s to lead (lease 5 s)"
        propagate(standby, "after")
        wait_for(lambda: bound(standby, "after"), timeout=15, what="the new leader binding a Deployment")
    finally:
        r.close()


def test_a_clean_stop_hands_the_lead_over_at_once(etcd):
    r = Replicas(etcd, "/ha2/registry")
    try:
        a = r.leader()
        standby = next(s for s in r.servers if s is not a)
        t0 = time.time()
        assert a.stop() == 0, a.log()
        r.leader(via=standby, timeout=10, other_than=a)
        took = time.time() - t0
        assert took <= 3, f"a clean stop took {took:.1f}s to hand the lead over"
    finally:
        r.close()


def test_a_leader_paused_past_its_lease_loses_the_lead_and_becomes_a_standby(etcd):
    r = Replicas(etcd, "/ha3/registry")
    try:
        a = r.leader()
        standby = next(s for s in r.servers if s is not a)
        a.proc.send_signal(signal.SIGSTOP)
        try:
            b = r.leader(via=standby, timeout=15, other_than=a)
            assert b is standby
        finally:
            a.proc.send_signal(signal.SIGCONT)
        # woken, it finds its lease gone: its controllers stop (what they still tried to write
        # was refused: the fence), and it goes on serving the API as a standby
        wait_for(lambda: "lost the lead of the controllers" in a.log(), timeout=15, what="the old leader to notice")
        assert a.proc.poll() is None, a.log()
        assert a.curl("GET", "/readyz", auth=False)[0] == 200
        assert r.holder(a) == r.holder(standby)
        assert f"{r.holder(standby)} leads the controllers" in standby.log()
        # campaigning again, it says who leads
        wait_for(lambda: f"stands by: the controllers are led by {r.holder(standby)}" in a.log(), timeout=10,
                 what="the old leader to name the new one")
        propagate(a, "still")  # written through the old leader, bound by the new one
        wait_for(lambda: bound(standby, "still"), timeout=15, what="the new leader binding a Deployment")
        # and it can lead again: the new leader stops cleanly, the old one takes over
        assert standby.stop() == 0, standby.log()
        r.leader(via=a, timeout=10)
    finally:
        r.close()


def test_up_runs_replicas_on_a_local_etcd_with_a_context_each():
    d = tempfile.mkdtemp(prefix="flotilla-up-ha-")
    port = free_port_run(2)
    p = subprocess.Popen([BIN, "up", "--data-dir", d, "--members", "1", "--etcd", "3", "--replicas", "2",
                          "--listen", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_up_line(p, d)
        kc = os.path.join(d, "kubeconfig")
        for ctx in ("replica-1", "replica-2"):
            r = subprocess.run(["kubectl", "--kubeconfig", kc, "--context", ctx, "get", "clusters", "-o", "json"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            assert [c["metadata"]["name"] for c in json.loads(r.stdout)["items"]] == ["member1"]
        r = subprocess.run(["kubectl", "--kubeconfig", kc, "get", "lease", "-n", "kube-system",
                            "flotilla-controller-manager", "-o", "jsonpath={.spec.holderIdentity}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout, r.stderr
        assert os.path.exists(os.path.join(d, "etcd", "ports"))
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=90)
        shutil.rmtree(d, ignore_errors=True)
    assert rc == 0


def etcd_ranges(etcd):
    """Range requests the etcd members have served (gRPC and the JSON gateway alike)."""
    n = 0
    for port in etcd.client:
        text = subprocess.run(["curl", "-s", "-m", "5", f"http://127.0.0.1:{port}/metrics"],
                              capture_output=True, text=True).stdout
        for line in text.splitlines():
            if line.startswith("grpc_server_handled_total") and 'grpc_method="Range"' in line:
                n += float(line.rsplit(" ", 1)[1])
    return n


def test_a_standby_watches_the_lead_key_instead_of_reading_it_again_and_again(etcd):
    """A standby waits for the lead key's delete on a watch: over 4 idle seconds the two
    replicas read etcd a few times (the leader checks its key every third of its lease, the
    standby once per bounded watch), where reading the key every 100 ms would be 40 reads
    from the standby alone. And the handover after a clean stop still comes at once."""
    r = Replicas(etcd, "/ha5/registry")
    try:
        a = r.leader()
        time.sleep(1)
        before = etcd_ranges(etcd)
        time.sleep(4)
        reads = etcd_ranges(etcd) - before
        assert 0 < reads <= 20, f"{reads:.0f} reads of etcd in 4 idle seconds"
        standby = next(s for s in r.servers if s is not a)
        t0 = time.time()
        assert a.stop() == 0, a.log()
        r.leader(via=standby, timeout=10, other_than=a)
        assert time.time() - t0 <= 3
    finally:
        r.close()
