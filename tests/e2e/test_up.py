"""`flotilla up`: a control plane plus simulated members, joined and Ready, stopped by Ctrl-C."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from conftest import BIN, KUBECTL, free_port


def test_up_runs_a_control_plane_with_ready_members_and_stops_cleanly():
    d = tempfile.mkdtemp(prefix="flotilla-up-")
    port = free_port()
    p = subprocess.Popen([BIN, "up", "--data-dir", d, "--members", "2", "--listen", f"127.0.0.1:{port}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()  # blocks until up (or the process ends)
        assert "Flotilla is up" in line, (line, p.stderr.read() if p.poll() is not None else "")
        kc = os.path.join(d, "kubeconfig")
        r = subprocess.run([KUBECTL, "--kubeconfig", kc, "get", "clusters", "-o", "json"], capture_output=True,
                           text=True, timeout=30)
        clusters = json.loads(r.stdout)["items"]
        assert sorted(c["metadata"]["name"] for c in clusters) == ["member1", "member2"]
        for c in clusters:
            assert c["spec"]["syncMode"] == "Push"
            ready = [x for x in c["status"]["conditions"] if x["type"] == "Ready"][0]
            assert ready["status"] == "True"
        mkc = os.path.join(d, "members", "member2.kubeconfig")
        r = subprocess.run([KUBECTL, "--kubeconfig", mkc, "get", "nodes", "-o", "name"], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0 and len(r.stdout.split()) == 3, r.stderr
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    assert rc == 0
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", d], capture_output=True, text=True).stdout.split()
    assert not left, f"children still running: {left}"


def test_up_with_pull_members_runs_their_agents():
    d = tempfile.mkdtemp(prefix="flotilla-up-pull-")
    port = free_port()
    p = subprocess.Popen([BIN, "up", "--data-dir", d, "--members", "2", "--pull", "1", "--listen",
                          f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert "Flotilla is up" in line, (line, p.stderr.read() if p.poll() is not None else "")
        r = subprocess.run([KUBECTL, "--kubeconfig", os.path.join(d, "kubeconfig"), "get", "clusters", "-o", "json"],
                           capture_output=True, text=True, timeout=30)
        modes = {c["metadata"]["name"]: c["spec"]["syncMode"] for c in json.loads(r.stdout)["items"]}
        assert modes == {"member1": "Push", "member2": "Pull"}
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    assert rc == 0
    time.sleep(0.2)
    assert not subprocess.run(["pgrep", "-f", d], capture_output=True, text=True).stdout.split()
