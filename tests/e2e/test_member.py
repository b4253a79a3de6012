"""`flotilla member`: simulated member clusters, driven with kubectl and curl as users would.

One process hosts several virtual clusters, each a Kubernetes API of its own (own store,
own CRDs, own token) at URL/clusters/<name>; a workload simulator moves status forward;
faults are injected through the host's admin endpoint."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, KUBECTL, wait_for


class Member:
    def __init__(self, clusters=2, extra=()):
        self.dir = tempfile.mkdtemp(prefix="flotilla-member-")
        self.log = open(os.path.join(self.dir, "member.log"), "wb")
        self.proc = subprocess.Popen([BIN, "member", "--data-dir", self.dir, "--clusters", str(clusters),
                                      "--ready-per-second", "20", "--job-seconds", "1"] + list(extra),
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert "clusters at" in line or "cluster at" in line, line
        self.url = line.split(" at ")[1].split("/clusters/")[0]

    def kubeconfig(self, name):
        return os.path.join(self.dir, f"{name}.kubeconfig")

    def kubectl(self, name, *args, check=True, input=None, timeout=60):
        r = subprocess.run([KUBECTL, "--kubeconfig", self.kubeconfig(name)] + list(args), input=input,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {args} on {name}: {r.stdout}\n{r.stderr}")
        return r

    def fault(self, name, **kw):
        token = open(os.path.join(self.dir, "pki", "admin.token")).read().strip()
        r = subprocess.run(["curl", "-s", "--cacert", os.path.join(self.dir, "pki", "ca.crt"), "-X", "PUT",
                            "-H", f"Authorization: Bearer {token}", f"{self.url}/admin/clusters/{name}/fault",
                            "-d", json.dumps(kw)], capture_output=True, text=True, timeout=30)
        return json.loads(r.stdout)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.log.close()
        return rc


@pytest.fixture(scope="module")
def member():
    m = Member(clusters=2)
    yield m
    rc = m.stop()
    assert rc == 0, open(os.path.join(m.dir, "member.log")).read()[-3000:]
    shutil.rmtree(m.dir, ignore_errors=True)


def test_each_cluster_is_its_own_api(member):
    for name in ("member1", "member2"):
        nodes = json.loads(member.kubectl(name, "get", "nodes", "-o", "json").stdout)["items"]
        assert len(nodes) == 3 and all(n["metadata"]["name"].startswith(name) for n in nodes)
        ns = member.kubectl(name, "get", "ns", "-o", "name").stdout.split()
        assert "namespace/default" in ns
    member.kubectl("member1", "create", "configmap", "only-in-1", "--from-literal=a=b")
    assert member.kubectl("member2", "get", "configmap", "only-in-1", check=False).returncode != 0


def test_crds_are_per_cluster(member):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gizmos.sim.example.com"},
           "spec": {"group": "sim.example.com", "scope": "Namespaced",
                    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    member.kubectl("member1", "apply", "-f", "-", input=json.dumps(crd))
    wait_for(lambda: member.kubectl("member1", "get", "gizmos", check=False).returncode == 0, what="gizmos served")
    r = member.kubectl("member2", "get", "gizmos", check=False)
    assert r.returncode != 0 and "gizmos" in r.stderr


def test_deployment_becomes_ready_replica_by_replica(member):
    member.kubectl("member2", "create", "deployment", "web", "--image=nginx", "--replicas=4")
    seen = set()

    def ready():
        d = json.loads(member.kubectl("member2", "get", "deploy", "web", "-o", "json").stdout)
        seen.add(d.get("status", {}).get("readyReplicas", 0))
        return d.get("status", {}).get("readyReplicas") == 4 and d["status"].get("observedGeneration") == 1
    wait_for(ready, timeout=20, interval=0.02, what="4 ready replicas")
    member.kubectl("member2", "wait", "--for=condition=Available", "deploy/web", "--timeout=10s")


def test_fake_image_never_becomes_ready(member):
    member.kubectl("member1", "create", "deployment", "broken", "--image=fake/nginx", "--replicas=2")
    time.sleep(1.5)
    d = json.loads(member.kubectl("member1", "get", "deploy", "broken", "-o", "json").stdout)
    assert d["status"].get("readyReplicas", 0) == 0
    avail = [c for c in d["status"]["conditions"] if c["type"] == "Available"][0]
    assert avail["status"] == "False"


def test_job_completes(member):
    member.kubectl("member1", "create", "job", "once", "--image=busybox")
    member.kubectl("member1", "wait", "--for=condition=Complete", "job/once", "--timeout=20s")


def test_tokens_are_per_cluster(member):
    kc = open(member.kubeconfig("member1")).read()
    token1 = [l.split(":", 1)[1].strip() for l in kc.splitlines() if l.strip().startswith("token:")][0]
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                        os.path.join(member.dir, "pki", "ca.crt"), "-H", f"Authorization: Bearer {token1}",
                        f"{member.url}/clusters/member2/api/v1/namespaces"], capture_output=True, text=True)
    assert r.stdout == "401"


def test_faults_down_slow_and_partition(member):
    assert member.fault("member2", down=True)["code"] == 200
    r = member.kubectl("member2", "get", "ns", check=False)
    assert r.returncode != 0 and "ServiceUnavailable" in r.stderr
    member.kubectl("member1", "get", "ns")  # the other cluster is unaffected

    member.fault("member2", slowMs=700)
    t0 = time.time()
    member.kubectl("member2", "get", "ns", "default")
    assert time.time() - t0 >= 0.7

    member.fault("member2", partition=True)
    p = subprocess.Popen([KUBECTL, "--kubeconfig", member.kubeconfig("member2"), "get", "ns", "default",
                          "--request-timeout=20s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert p.poll() is None, "a partitioned cluster answered"
    member.fault("member2")  # heal: the held request is served
    out, err = p.communicate(timeout=15)
    assert p.returncode == 0, err
    assert member.fault("nosuch", down=True)["code"] == 404


def test_ctl_fault_verb(member):
    """`flotilla ctl fault` drives the same admin endpoint with the host's admin.kubeconfig."""
    admin_kc = os.path.join(member.dir, "admin.kubeconfig")
    run = lambda *a: subprocess.run([BIN, "ctl", "fault", *a, "--members-kubeconfig", admin_kc],
                                    capture_output=True, text=True, timeout=30)
    r = run("member1", "--set", "down")
    assert r.returncode == 0 and "cluster member1: fault down" in r.stdout, r.stderr
    r2 = member.kubectl("member1", "get", "ns", check=False)
    assert r2.returncode != 0 and "ServiceUnavailable" in r2.stderr
    assert run("member1", "--set", "clear").returncode == 0
    member.kubectl("member1", "get", "ns")
    r = run("nosuch", "--set", "down")
    assert r.returncode == 1 and "no such simulated cluster" in r.stderr
    r = run("member1", "--set", "sideways")
    assert r.returncode == 2 and "--set sideways" in r.stderr
