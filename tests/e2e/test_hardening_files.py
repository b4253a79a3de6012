"""Files and the data directory: what `flotilla server` writes is private to its user (the
directory 0700; the store, its WAL and every key, token and kubeconfig 0600), a start on a key
or store that others can read is refused with the chmod to run, and one server owns a data
directory at a time (a lock the kernel drops with the process, kill -9 included)."""
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, E2E_STORE, Server, free_port

# The SQLite store's files are secrets of the directory; a store in etcd leaves none there
# (FLOTILLA_E2E_STORE=etcd: the tests below check that the directory holds no store.db)
STORE_FILES = ["store.db", "store.db-wal", "store.db-shm"]
SECRETS = (STORE_FILES if E2E_STORE == "sqlite" else []) + [
    "kubeconfig", "bootstrap-kubeconfig", "server.lock", "pki/ca.key", "pki/server.key", "pki/admin.token",
    "pki/bootstrap.token"]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def snapshot(d):
    """Every file under d: (mode, size, mtime, contents), to show that nothing was written."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.stat(p)
            body = open(p, "rb").read() if stat.S_ISREG(st.st_mode) else None
            out[os.path.relpath(p, d)] = (stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, body)
    return out


def run_server(d, timeout=10):
    """`flotilla server` on d expected to refuse: (exit code, stdout, stderr, seconds taken)."""
    t0 = time.time()
    try:
        r = subprocess.run([BIN, "server", "--data-dir", d, "--listen", f"127.0.0.1:{free_port()}"],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"flotilla server on {d} was not refused within {timeout}s: it started")
    return r.returncode, r.stdout, r.stderr, time.time() - t0


@pytest.fixture
def data_dir():
    d = tempfile.mkdtemp(prefix="flotilla-e2e-files-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_fresh_start_leaves_the_directory_and_every_secret_private(data_dir):
    os.chmod(data_dir, 0o755)  # made by someone else with the usual umask
    s = Server(data_dir)
    s.log_path = data_dir + ".log"  # not in the directory under test
    try:
        s.start()
        s.kubectl("create", "configmap", "c1", "--from-literal=k=v")  # the WAL holds a write
        assert mode(data_dir) == 0o700, oct(mode(data_dir))
        assert "0755" in s.log() and "0700" in s.log(), s.log()  # the tightening is said
        assert mode(os.path.join(data_dir, "pki")) == 0o700
        for name in SECRETS:
            p = os.path.join(data_dir, name)
            assert os.path.exists(p), name
            assert mode(p) == 0o600, f"{name} is {oct(mode(p))}"
        if E2E_STORE == "etcd":
            assert not [n for n in STORE_FILES if os.path.exists(os.path.join(data_dir, n))], os.listdir(data_dir)
        # certificates are public by nature
        assert mode(os.path.join(data_dir, "pki", "ca.crt")) == 0o644
    finally:
        s.stop()
        os.unlink(s.log_path)


def test_a_start_on_a_secret_others_can_read_is_refused_with_the_chmod_to_run(data_dir):
    s = Server(data_dir)
    s.log_path = data_dir + ".log"
    try:
        s.start()
        s.kubectl("create", "configmap", "c1", "--from-literal=k=v")
    finally:
        assert s.stop() == 0
        os.unlink(s.log_path)
    store = [("store.db", 0o604)] if E2E_STORE == "sqlite" else []
    assert E2E_STORE == "sqlite" or not os.path.exists(os.path.join(data_dir, "store.db"))
    for name, bad in [("pki/ca.key", 0o644), ("pki/admin.token", 0o640), *store, ("kubeconfig", 0o644)]:
        p = os.path.join(data_dir, name)
        os.chmod(p, bad)
        before = snapshot(data_dir)
        rc, out, err, took = run_server(data_dir)
        assert rc != 0, (name, out, err)
        assert out == "", out
        assert err == (f"flotilla server: {p} is readable by others (mode 0{bad:o}); run: chmod 600 {p}\n"), err
        assert snapshot(data_dir) == before, f"a refused start wrote something ({name})"
        os.chmod(p, 0o600)
    # put right, it starts
    s.start()
    assert s.kubectl_json("get", "configmap", "c1")["data"] == {"k": "v"}
    assert s.stop() == 0


def test_a_second_server_on_a_running_servers_directory_exits_naming_the_first(fresh_server):
    s = fresh_server.start()
    kubeconfig = open(s.kubeconfig, "rb").read()
    kc_mtime = os.stat(s.kubeconfig).st_mtime_ns
    rc, out, err, took = run_server(s.data_dir)
    assert rc != 0, (out, err)
    assert took < 5, took
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert f"pid {s.proc.pid}" in lines[0] and s.data_dir in lines[0], err
    # the first keeps serving, and its kubeconfig still points at it
    assert open(s.kubeconfig, "rb").read() == kubeconfig
    assert os.stat(s.kubeconfig).st_mtime_ns == kc_mtime
    s.kubectl("create", "configmap", "after-second", "--from-literal=k=v")
    assert s.kubectl_json("get", "configmap", "after-second")["data"] == {"k": "v"}


def test_the_lock_goes_with_a_killed_server(fresh_server):
    s = fresh_server.start()
    first = s.proc.pid
    s.kubectl("create", "configmap", "before-kill", "--from-literal=k=v")
    s.kill()
    s.start()  # the kernel dropped the lock with the process
    assert s.proc.pid != first
    assert s.kubectl_json("get", "configmap", "before-kill")["data"] == {"k": "v"}
    # and the new server holds it now
    rc, out, err, took = run_server(s.data_dir)
    assert rc != 0 and f"pid {s.proc.pid}" in err, err
    assert f"pid {first}" not in err


def test_a_second_member_host_on_a_running_ones_directory_exits_naming_the_first(data_dir):
    first = subprocess.Popen([BIN, "member", "--data-dir", data_dir, "--clusters", "1", "--listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert "cluster at" in first.stdout.readline()
        kc = open(os.path.join(data_dir, "member1.kubeconfig"), "rb").read()
        try:
            r = subprocess.run([BIN, "member", "--data-dir", data_dir, "--clusters", "1", "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("a second flotilla member on the same directory started")
        assert r.returncode != 0
        assert len(r.stderr.splitlines()) == 1 and f"pid {first.pid}" in r.stderr and data_dir in r.stderr, r.stderr
        assert open(os.path.join(data_dir, "member1.kubeconfig"), "rb").read() == kc
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=20)
