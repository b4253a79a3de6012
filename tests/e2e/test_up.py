"""`flotilla up`: a control plane plus simulated members, joined and Ready, stopped by Ctrl-C."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from conftest import BIN, KUBECTL, free_port, start_up


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


def _stop_up(p):
    p.send_signal(signal.SIGINT)
    return p.wait(timeout=60)


def _children(pid):
    """The pids whose parent is pid, from /proc."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(name))
    return out


def _running(pid):
    """Is pid a live process (not gone, not a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def _kubectl_json(kc, *args):
    r = subprocess.run([KUBECTL, "--kubeconfig", kc, *args, "-o", "json"], capture_output=True, text=True,
                       timeout=30)
    return json.loads(r.stdout) if r.returncode == 0 else None


def _wait(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_up_restarts_on_its_data_directory_and_delivers_again():
    """Stopped and started again on the same directory, three times: each run is Ready with
    every member joined on this run's credentials, and a Deployment propagated in the first
    run is back on the members (their stores are memory; the control plane keeps its own)."""
    d = tempfile.mkdtemp(prefix="flotilla-up-restart-")
    port = free_port()
    kc = os.path.join(d, "kubeconfig")
    members = ["member1", "member2"]
    manifest = "".join("---\n" + json.dumps(o) + "\n" for o in [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "keep", "namespace": "default", "labels": {"app": "keep"}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "keep"}},
                  "template": {"metadata": {"labels": {"app": "keep"}},
                               "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
         "metadata": {"name": "keep", "namespace": "default"},
         "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "keep"}],
                  "placement": {"clusterAffinity": {"clusterNames": members}}}}])
    p = None
    try:
        for run in range(4):
            p = start_up(d, port, members=2, pull=1)
            clusters = _kubectl_json(kc, "get", "clusters")
            assert clusters, f"run {run}: kubectl get clusters failed"
            for c in clusters["items"]:
                ready = [x for x in c["status"]["conditions"] if x["type"] == "Ready"][0]
                assert ready["status"] == "True", (run, c["metadata"]["name"], ready)
            assert sorted(c["metadata"]["name"] for c in clusters["items"]) == members
            if run == 0:
                r = subprocess.run([KUBECTL, "--kubeconfig", kc, "apply", "-f", "-"], input=manifest,
                                   capture_output=True, text=True, timeout=30)
                assert r.returncode == 0, r.stderr
            for m in members:
                mkc = os.path.join(d, "members", f"{m}.kubeconfig")
                _wait(lambda: _kubectl_json(mkc, "get", "deploy", "keep", "-n", "default") is not None, 30,
                      f"run {run}: deployment keep on {m}")
            assert _stop_up(p) == 0, f"run {run}: flotilla up did not stop cleanly"
            p = None
        # the children run under ASan+UBSan in CI: any report in their logs fails the test
        for name in sorted(os.listdir(d)):
            if name.endswith(".log"):
                text = open(os.path.join(d, name), errors="replace").read()
                for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                    assert marker not in text, f"{name}:\n{text[text.find(marker) - 200:][:4000]}"
    finally:
        if p is not None:
            p.kill()
            p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)


def test_up_killed_takes_its_children_with_it():
    """kill -9 of `flotilla up` leaves no server, member host or agent of it running."""
    d = tempfile.mkdtemp(prefix="flotilla-up-kill-")
    p = start_up(d, free_port(), members=2, pull=1)
    kids = []
    try:
        kids = _children(p.pid)
        assert len(kids) >= 3, f"expected the server, the member host and an agent, got {kids}"
        p.kill()
        p.wait(timeout=30)
        deadline = time.time() + 10
        while time.time() < deadline and any(_running(k) for k in kids):
            time.sleep(0.1)
        left = [k for k in kids if _running(k)]
        assert not left, f"children of the killed flotilla up still running: {left}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
        for k in kids:
            if _running(k):
                os.kill(k, signal.SIGKILL)
        shutil.rmtree(d, ignore_errors=True)


def test_a_second_up_on_a_running_ones_directory_is_refused_and_changes_nothing():
    """A second `flotilla up` on the same directory exits at once naming the first, before it
    removes anything: the first keeps its kubeconfigs and keeps serving."""
    d = tempfile.mkdtemp(prefix="flotilla-up-twice-")
    p = start_up(d, free_port(), members=1)
    try:
        kc = os.path.join(d, "kubeconfig")
        mkc = os.path.join(d, "members", "member1.kubeconfig")
        before = (open(kc).read(), open(mkc).read())
        second = subprocess.run([BIN, "up", "--data-dir", d, "--members", "1", "--listen",
                                 f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=30)
        assert second.returncode != 0
        assert f"in use by another flotilla up (pid {p.pid})" in second.stderr, second.stderr
        assert (open(kc).read(), open(mkc).read()) == before
        assert _kubectl_json(kc, "get", "clusters") is not None, "the first stopped serving"
        assert _stop_up(p) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)


def test_up_waits_for_a_stopping_server_of_a_previous_run_to_let_go():
    """Right after a kill -9 of `up`, its server may still be stopping, holding DIR/server.lock
    (here held by the test for 1.5 s, as such a server would): a new `up` waits for it and
    then comes up, instead of having its own server refused."""
    import fcntl
    import threading
    d = tempfile.mkdtemp(prefix="flotilla-up-rekill-")
    fd = os.open(os.path.join(d, "server.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"%d" % os.getpid())
    release = threading.Timer(1.5, lambda: os.close(fd))
    release.start()
    p = None
    try:
        p = start_up(d, free_port(), members=1)
        kc = os.path.join(d, "kubeconfig")
        _wait(lambda: (_kubectl_json(kc, "get", "clusters") or {}).get("items"), 30, "the clusters")
        assert _stop_up(p) == 0
        assert f"waiting for the previous server (pid {os.getpid()}) to stop" in p.stderr.read()
    finally:
        release.join()
        if p and p.poll() is None:
            p.kill()
            p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)


def test_up_hands_what_follows_a_double_dash_to_the_server():
    """`flotilla up -- FLAG...` runs the server with those flags: here a token file whose user
    then authenticates (a 403 naming it, not a 401); a stray argument before "--" is refused."""
    d = tempfile.mkdtemp(prefix="flotilla-up-args-")
    tokens = os.path.join(d, "tokens.csv")
    with open(tokens, "w") as f:
        f.write('t-alice-0123456789,alice,1001,"team-a"\n')
    p = start_up(d, free_port(), members=0, server_args=["--token-auth-file", tokens])
    try:
        r = subprocess.run([KUBECTL, "--kubeconfig", os.path.join(d, "kubeconfig"), "--token", "t-alice-0123456789",
                            "get", "secrets", "-n", "default"], capture_output=True, text=True, timeout=30)
        assert r.returncode != 0
        assert 'User "alice" cannot list resource "secrets"' in r.stderr, r.stderr
        r = subprocess.run([KUBECTL, "--kubeconfig", os.path.join(d, "kubeconfig"), "--token", "t-nobody",
                            "get", "secrets"], capture_output=True, text=True, timeout=30)
        assert "Unauthorized" in r.stderr, r.stderr
        assert _stop_up(p) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    stray = subprocess.run([BIN, "up", "--data-dir", d, "stray"], capture_output=True, text=True, timeout=30)
    assert stray.returncode == 2
    assert stray.stderr.strip() == 'flotilla up: unexpected argument "stray" (server flags go after "--")'
