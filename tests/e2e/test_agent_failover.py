"""A pull agent through a leader change (issue 40): `flotilla agent --server URL1,URL2` keeps its
member cluster working when the replica it talks to dies.

Real processes, as an operator runs them: a 3-member etcd cluster, two `flotilla server`
replicas on one --etcd-prefix sharing their certificates and tokens (as `flotilla up
--replicas` shares them), a simulated member cluster (`flotilla member --clusters 1`) and its
agent, given both replicas' URLs, the leading replica's first. The agent talks to the first
URL; the test kills that replica with SIGKILL (so the lead changes too) and pins that the
agent moves to the other one: the Cluster's lease goes on being renewed there and the Cluster
stays (or comes back) Ready, and a Deployment propagated after the kill reaches the member
through the new leader. Every wait is bounded."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, EtcdCluster, Server, deployment_manifest, free_port, free_port_run, policy_manifest, wait_for, wait_up_line

INTERVAL_MS = 200       # the servers' cluster status controller
FAILURE_MS = 3000       # lease age that makes a Pull cluster Unknown
AGENT_MS = 300          # the agent's lease renewal and status report
WAIT = 30

CLUSTER = "/apis/cluster.karmada.io/v1alpha1/clusters/m1"
LEAD = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/flotilla-controller-manager"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/m1"


class Member:
    """`flotilla member --clusters 1`: cluster member1, reached with curl as a user would."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="flotilla-e2e-failover-member-")
        self.logf = open(os.path.join(self.dir, "member.log"), "wb")
        self.proc = subprocess.Popen([BIN, "member", "--data-dir", self.dir, "--clusters", "1",
                                      "--ready-per-second", "20"], stdout=subprocess.PIPE, stderr=self.logf, text=True)
        line = self.proc.stdout.readline()
        assert "cluster at" in line, line
        self.url = line.split(" at ")[1].split("/clusters/")[0] + "/clusters/member1"
        self.kubeconfig = os.path.join(self.dir, "member1.kubeconfig")
        kc = open(self.kubeconfig).read()
        self.token = [l.split(":", 1)[1].strip().strip('"') for l in kc.splitlines()
                      if l.strip().startswith("token:")][0]

    def get(self, path):
        r = subprocess.run(["curl", "-s", "--cacert", os.path.join(self.dir, "pki", "ca.crt"),
                            "-H", f"Authorization: Bearer {self.token}", "-w", "\n%{http_code}", self.url + path],
                           capture_output=True, text=True, timeout=60)
        text, _, code = r.stdout.rpartition("\n")
        return json.loads(text) if code == "200" else None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.logf.close()
        return rc


@pytest.fixture
def setup():
    base = tempfile.mkdtemp(prefix="flotilla-e2e-failover-")
    os.makedirs(os.path.join(base, "etcd"))
    etcd = EtcdCluster(os.path.join(base, "etcd")).start()
    env = {"FLOTILLA_CLUSTER_STATUS_INTERVAL_MS": str(INTERVAL_MS),
           "FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS": str(FAILURE_MS)}
    servers = []
    for i in range(2):
        d = os.path.join(base, f"replica-{i + 1}")
        if servers:  # one set of certificates and tokens for both, as `flotilla up --replicas` shares them
            shutil.copytree(os.path.join(servers[0].data_dir, "pki"), os.path.join(d, "pki"))
        else:
            os.makedirs(d)
        servers.append(Server(d, ["--etcd-servers", etcd.endpoints, "--etcd-prefix", "/failover/registry"],
                              env=env).start())
    lead = leader(servers)
    servers.sort(key=lambda s: s is not lead)  # the leader first: its kill changes the lead
    member = Member()
    agent_log = os.path.join(member.dir, "agent.log")
    logf = open(agent_log, "ab")
    boot = os.path.join(servers[0].data_dir, "bootstrap-kubeconfig")
    agent = subprocess.Popen([BIN, "agent", "--server-kubeconfig", boot if os.path.exists(boot) else servers[0].kubeconfig,
                              "--member-kubeconfig", member.kubeconfig, "--cluster-name", "m1",
                              "--server", ",".join(s.url for s in servers)],
                             stdout=logf, stderr=logf,
                             env=dict(os.environ, FLOTILLA_AGENT_LEASE_INTERVAL_MS=str(AGENT_MS),
                                      FLOTILLA_AGENT_STATUS_INTERVAL_MS=str(AGENT_MS),
                                      FLOTILLA_AGENT_PROBE_TIMEOUT_MS="1000"))

    def log():
        with open(agent_log, "rb") as f:
            return f.read().decode(errors="replace")
    try:
        yield servers, member, agent, log
    finally:
        failures = []
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                rc = agent.wait(timeout=20)
            except subprocess.TimeoutExpired:
                agent.kill()
                rc = agent.wait()
            if rc != 0:
                failures.append(f"agent exited with {rc}:\n{log()[-4000:]}")
        logf.close()
        if member.stop() != 0:
            failures.append("member exited non-zero")
        for s in servers:
            if s.proc and s.stop() != 0:
                failures.append(f"{s.data_dir} exited non-zero:\n{s.log()}")
        etcd.stop()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(member.dir, ignore_errors=True)
        assert not failures, "\n".join(failures)


def leader(servers, timeout=20):
    """The replica whose log says it leads, once the lead Lease names it."""
    def find():
        code, lease = servers[-1].curl("GET", LEAD)
        holder = lease["spec"].get("holderIdentity") if code == 200 else None
        for s in servers:
            with open(s.log_path, "rb") as f:
                if holder and s.proc and f"{holder} leads the controllers" in f.read().decode(errors="replace"):
                    return s
        return None
    return wait_for(find, timeout=timeout, what="a replica leading the controllers")


def get(server, path):
    code, body = server.curl("GET", path)
    return body if code == 200 else None


def ready(cluster):
    for c in ((cluster or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def test_agent_moves_to_another_replica_when_its_replica_is_killed(setup):
    servers, member, agent, log = setup
    first, other = servers
    wait_for(lambda: agent.poll() is not None or "flotilla agent: cluster m1" in log(), timeout=WAIT,
             what="the agent to start")
    assert agent.poll() is None, log()
    wait_for(lambda: ready(get(other, CLUSTER)), timeout=WAIT, what="Cluster m1 Ready")
    assert f"on {first.url}" in log(), log()  # the first URL answered: the agent talks to it

    first.kill()
    killed_at = time.time()
    # every renewal from now on went through the other replica
    seen = get(other, LEASE)["spec"]["renewTime"]
    try:
        wait_for(lambda: get(other, LEASE)["spec"]["renewTime"] != seen, timeout=WAIT,
                 what="the agent renewing its lease through the other replica")
    except AssertionError as e:
        raise AssertionError(f"{e}\nagent log:\n{log()[-4000:]}") from None
    took = time.time() - killed_at
    assert took < FAILURE_MS / 1000, f"the lease went {took:.1f}s without renewal"
    assert f"now talking to {other.url}" in log(), log()
    wait_for(lambda: ready(get(other, CLUSTER)), timeout=WAIT, what="Cluster m1 Ready after the kill")

    assert leader(servers) is other
    # a Deployment propagated after the kill reaches the member through the new leader
    for path, obj in (("/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies",
                       policy_manifest("after", ["m1"])),
                      ("/apis/apps/v1/namespaces/default/deployments", deployment_manifest("after"))):
        code, body = other.curl("POST", path, obj)
        assert code == 201, body
    wait_for(lambda: member.get("/apis/apps/v1/namespaces/default/deployments/after"), timeout=WAIT,
             what="the Deployment reaching the member through the other replica")

    # and the Cluster stays Ready: its lease keeps being renewed past the failure threshold
    end = time.time() + 2 * FAILURE_MS / 1000
    while time.time() < end:
        assert ready(get(other, CLUSTER)), get(other, CLUSTER)
        time.sleep(0.3)
    assert agent.poll() is None, log()


def test_up_gives_its_agents_every_replica():
    """`flotilla up --replicas 2 --pull 1`: the member's agent is started with both replicas' URLs."""
    d = tempfile.mkdtemp(prefix="flotilla-up-failover-")
    port = free_port_run(2)
    p = subprocess.Popen([BIN, "up", "--data-dir", d, "--members", "1", "--pull", "1", "--etcd", "3",
                          "--replicas", "2", "--listen", f"127.0.0.1:{port}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_up_line(p, d)

        def agent_argv():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().decode(errors="replace").split("\0")
                except OSError:
                    continue
                if len(argv) > 1 and argv[1] == "agent" and any(d in a for a in argv):
                    return argv
            return None
        argv = wait_for(agent_argv, timeout=10, what="the agent of member1")
        assert "--server" in argv, argv
        assert argv[argv.index("--server") + 1] == f"https://127.0.0.1:{port},https://127.0.0.1:{port + 1}", argv
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=90)
        shutil.rmtree(d, ignore_errors=True)
    assert rc == 0
