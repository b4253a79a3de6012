"""Shared fixtures for the end-to-end tests.

Each test module gets its own `flotilla server` on a free loopback port with a fresh data
directory, and talks to it the way users do: /usr/bin/kubectl with the kubeconfig the server
wrote, the official Python client, or plain HTTPS with curl. FLOTILLA_BIN picks the binary
(test.sh points it at the ASan+UBSan build).

FLOTILLA_E2E_STORE=etcd runs every server these fixtures start on etcd instead of SQLite: one
3-member etcd cluster (Debian's etcd-server) started here on loopback ports for the whole
session, each server under a key prefix of its own (test.sh runs a subset of the suite so).
"""
import http.client
import contextlib
import json
import os
import queue
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("FLOTILLA_BIN", os.path.join(ROOT, "build", "flotilla"))
KUBECTL = shutil.which("kubectl") or os.path.join(ROOT, ".tools", "bin", "kubectl")
ETCD = "/usr/bin/etcd"
E2E_STORE = os.environ.get("FLOTILLA_E2E_STORE", "sqlite")
assert E2E_STORE in ("sqlite", "etcd"), f"FLOTILLA_E2E_STORE: sqlite or etcd, not {E2E_STORE!r}"


def pytest_configure(config):
    config.addinivalue_line("markers", "sqlite_only(reason): a fact of the SQLite store only; with "
                                       "FLOTILLA_E2E_STORE=etcd the test is skipped, saying the reason")


def pytest_collection_modifyitems(config, items):
    """@pytest.mark.sqlite_only(reason="..."): the test states something only the SQLite store
    does (its files, its thread budget). Under FLOTILLA_E2E_STORE=etcd, and only then, it is
    skipped with "SQLite only: <reason>" (pytest -rs lists each); a marker without a reason is
    an error, so none goes unexplained."""
    for item in items:
        m = item.get_closest_marker("sqlite_only")
        if m is None:
            continue
        reason = m.kwargs.get("reason") or (m.args[0] if m.args else "")
        assert reason, f"{item.nodeid}: sqlite_only needs a reason"
        if E2E_STORE == "etcd":
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {reason}"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_port_run(n):
    """The first of n consecutive loopback ports nobody listens on now, below the ephemeral
    range: a port the kernel hands out for outgoing connections (as bind(0) ports are) may be
    taken by one before the server that was told it binds it."""
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(20000, 32768 - n)
        socks = []
        try:
            for port in range(first, first + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free loopback ports")


def idle_threads(pid, steady_s=2.0, timeout=30):
    """The thread count of process pid once it has held still for steady_s: a server on etcd
    starts its controllers only once it leads, seconds after it answers."""
    count = lambda: len(os.listdir(f"/proc/{pid}/task"))
    deadline = time.time() + timeout
    last, since = count(), time.time()
    while time.time() < deadline:
        time.sleep(0.25)
        n = count()
        if n != last:
            last, since = n, time.time()
        elif time.time() - since >= steady_s:
            return n
    raise AssertionError(f"the thread count of {pid} did not settle in {timeout}s (last {last})")


def wait_up_line(p, d):
    """Read `flotilla up`'s one line on stdout; when it is not the ready line, fail with what
    up said and the end of each server log under d."""
    line = p.stdout.readline()
    if "Flotilla is up" in line:
        return line
    logs = ""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), errors="replace") as f:
                logs += f"--- {name}\n" + "".join(f.readlines()[-15:])
    pytest.fail(f"{line!r}\n{p.stderr.read() if p.poll() is not None else ''}\n{logs}")


class EtcdCluster:
    """A real etcd cluster of `size` members on loopback ports, each with its own data
    directory under `base`; kill(i)/start_member(i) for fault tests, stop() at the end."""

    def __init__(self, base, size=3):
        self.base = base
        self.size = size
        self.client = [free_port() for _ in range(size)]
        self.peer = [free_port() for _ in range(size)]
        self.procs = [None] * size
        self.token = f"flotilla-e2e-{os.getpid()}-{int(time.time() * 1000)}"

    @property
    def endpoints(self):
        return ",".join(f"http://127.0.0.1:{p}" for p in self.client)

    def _argv(self, i):
        cluster = ",".join(f"m{j}=http://127.0.0.1:{self.peer[j]}" for j in range(self.size))
        return [ETCD, "--name", f"m{i}", "--data-dir", os.path.join(self.base, f"m{i}"),
                "--listen-client-urls", f"http://127.0.0.1:{self.client[i]}",
                "--advertise-client-urls", f"http://127.0.0.1:{self.client[i]}",
                "--listen-peer-urls", f"http://127.0.0.1:{self.peer[i]}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[i]}",
                "--initial-cluster", cluster, "--initial-cluster-token", self.token,
                "--initial-cluster-state", "new", "--log-level", "warn", "--logger", "zap",
                "--experimental-watch-progress-notify-interval=1s"]

    def start_member(self, i):
        log = open(os.path.join(self.base, f"m{i}.log"), "ab")
        self.procs[i] = subprocess.Popen(self._argv(i), stdout=log, stderr=log)

    def start(self, timeout=30):
        assert os.access(ETCD, os.X_OK), f"{ETCD} is missing: scripts/setup.sh installs etcd-server"
        for i in range(self.size):
            self.start_member(i)
        wait_for(lambda: all(self.healthy(i) for i in range(self.size)), timeout=timeout,
                 what=f"etcd cluster on {self.endpoints} to be healthy")
        return self

    def healthy(self, i):
        r = subprocess.run(["curl", "-s", "-m", "2", f"http://127.0.0.1:{self.client[i]}/health"],
                           capture_output=True, text=True)
        return '"health":"true"' in r.stdout

    def kill(self, i, sig=signal.SIGKILL):
        self.procs[i].send_signal(sig)
        self.procs[i].wait(timeout=10)
        self.procs[i] = None

    def stop(self):
        for i, p in enumerate(self.procs):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            self.procs[i] = None
        shutil.rmtree(self.base, ignore_errors=True)


_session_etcd = None
_etcd_prefixes = {}  # data directory -> its prefix: a restart on the directory finds its objects


def etcd_store_args(data_dir):
    """With FLOTILLA_E2E_STORE=etcd: the flags that put the server of data_dir on the session's
    etcd cluster under a prefix of its own, the same at every start (the cluster starts on
    first use); else none."""
    global _session_etcd
    if E2E_STORE != "etcd":
        return []
    if _session_etcd is None:
        _session_etcd = EtcdCluster(tempfile.mkdtemp(prefix="flotilla-e2e-etcd-")).start()
    prefix = _etcd_prefixes.setdefault(os.path.realpath(data_dir), f"/e2e{len(_etcd_prefixes) + 1}/registry")
    return ["--etcd-servers", _session_etcd.endpoints, "--etcd-prefix", prefix]


@pytest.fixture(scope="session", autouse=True)
def _session_etcd_cluster():
    yield
    if _session_etcd is not None:
        _session_etcd.stop()


class Server:
    """A running flotilla server; start()/stop()/kill() for restart tests."""

    def __init__(self, data_dir, extra_args=(), env=None):
        self.data_dir = data_dir
        self.port = free_port()
        self.extra_args = list(extra_args)
        if "--etcd-servers" not in self.extra_args:
            self.extra_args += etcd_store_args(data_dir)
        self.env = dict(env or {})  # on top of the environment at each start
        self.proc = None
        self.kubeconfig = os.path.join(data_dir, "kubeconfig")
        self.log_path = os.path.join(data_dir, "server.log")

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout=20):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [BIN, "server", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}"] + self.extra_args,
            stdout=log, stderr=log, env=dict(os.environ, **self.env))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            if os.path.exists(self.kubeconfig):
                r = subprocess.run(["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}",
                                    f"{self.url}/readyz"], capture_output=True, text=True)
                if r.stdout == "200":
                    return self
            time.sleep(0.05)
        raise RuntimeError("server did not become ready:\n" + self.log())

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("server did not stop within 20s of SIGTERM")
        rc = self.proc.returncode if self.proc else 0
        self.proc = None
        return rc

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def token(self):
        with open(os.path.join(self.data_dir, "pki", "admin.token")) as f:
            return f.read().strip()

    def kubectl(self, *args, input=None, check=True, timeout=60):
        r = subprocess.run([KUBECTL, "--kubeconfig", self.kubeconfig] + list(args), input=input,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def kubectl_json(self, *args):
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def curl(self, method, path, body=None, content_type="application/json", headers=(), auth=True):
        """Returns (status, parsed JSON body or raw text)."""
        cmd = ["curl", "-s", "--cacert", os.path.join(self.data_dir, "pki", "ca.crt"), "-X", method,
               "-w", "\n%{http_code}", f"{self.url}{path}"]
        if auth:
            cmd += ["-H", f"Authorization: Bearer {self.token()}"]
        for h in headers:
            cmd += ["-H", h]
        if body is not None:
            if not isinstance(body, (str, bytes)):
                body = json.dumps(body)
            cmd += ["-H", f"Content-Type: {content_type}", "--data-binary", "@-"]
        r = subprocess.run(cmd, input=body.encode() if isinstance(body, str) else body, capture_output=True,
                           timeout=60)
        out = r.stdout.decode(errors="replace")
        text, _, code = out.rpartition("\n")
        try:
            return int(code), json.loads(text)
        except ValueError:
            return int(code), text


    # ---- direct HTTPS helpers (keep-alive, headers visible, streams) ----

    def ssl_context(self):
        return ssl.create_default_context(cafile=os.path.join(self.data_dir, "pki", "ca.crt"))

    def http(self, method, path, body=None, content_type="application/json", headers=None, auth=True, timeout=60):
        """One request over a fresh HTTPS connection. Returns (status, headers dict with lower-case
        names, parsed JSON body or raw text)."""
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ssl_context(), timeout=timeout)
        try:
            h = dict(headers or {})
            if auth:
                h["Authorization"] = f"Bearer {self.token()}"
            if body is not None:
                if not isinstance(body, (str, bytes)):
                    body = json.dumps(body)
                if isinstance(body, str):
                    body = body.encode()
                h["Content-Type"] = content_type
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read().decode(errors="replace")
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            try:
                return resp.status, hdrs, json.loads(data)
            except ValueError:
                return resp.status, hdrs, data
        finally:
            conn.close()

    def watch(self, path, timeout=60, headers=None):
        """Open a raw watch stream (path includes the query). See WatchStream."""
        return WatchStream(self, path, timeout=timeout, headers=headers)

    def list_rv(self, path):
        """The list resourceVersion of a collection (the store revision it was read at)."""
        code, body = self.curl("GET", path)
        assert code == 200, body
        return body["metadata"]["resourceVersion"]


class WatchStream:
    """A watch request read line by line on a thread, so tests can wait with deadlines.

    status is the HTTP status; for a non-200 answer, body holds the parsed reply and no
    events arrive. next(timeout) returns the next event (a dict), or None once the server
    ended the stream; it fails the test when nothing arrives in time."""

    def __init__(self, server, path, timeout=60, headers=None):
        self.conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.ssl_context(),
                                                timeout=timeout)
        h = {"Authorization": f"Bearer {server.token()}", "Accept": "application/json"}
        h.update(headers or {})
        self.path = path
        self.conn.request("GET", path, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.q = queue.Queue()
        self.ended_at = None
        self.body = None
        if self.status != 200:
            raw = self.resp.read().decode(errors="replace")
            try:
                self.body = json.loads(raw)
            except ValueError:
                self.body = raw
            self.q.put(None)
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    break
                line = line.strip()
                if line:
                    self.q.put(json.loads(line))
        except Exception as e:  # noqa: BLE001 - closing the socket ends the reader
            self.q.put(e)
        finally:
            self.ended_at = time.time()
            self.q.put(None)

    def next(self, timeout=10):
        try:
            ev = self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no watch event within {timeout}s on {self.path}") from None
        if isinstance(ev, Exception):
            raise AssertionError(f"watch stream {self.path} failed: {ev!r}")
        if ev is None:
            self.q.put(None)  # stay ended
        return ev

    def collect(self, count, timeout=10, pred=None):
        """The next `count` events matching pred (others are skipped), within timeout overall."""
        out = []
        deadline = time.time() + timeout
        while len(out) < count:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError(f"got {len(out)} of {count} events within {timeout}s: {out}")
            ev = self.next(timeout=left)
            if ev is None:
                raise AssertionError(f"stream ended after {len(out)} of {count} events: {out}")
            if pred is None or pred(ev):
                out.append(ev)
        return out

    def drain(self, seconds):
        """Every event arriving within `seconds` (stops early at the end of the stream)."""
        out = []
        deadline = time.time() + seconds
        while True:
            left = deadline - time.time()
            if left <= 0:
                return out
            try:
                ev = self.q.get(timeout=left)
            except queue.Empty:
                return out
            if ev is None or isinstance(ev, Exception):
                self.q.put(ev)
                return out
            out.append(ev)

    def close(self):
        try:
            if self.conn.sock:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="flotilla-e2e-")
    s = Server(d).start()
    yield s
    rc = s.stop()
    assert rc == 0, f"server exited with {rc} (sanitizer report?):\n{s.log()}"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fresh_server():
    """A server of its own, for tests that restart or kill it."""
    d = tempfile.mkdtemp(prefix="flotilla-e2e-")
    s = Server(d)
    yield s
    if s.proc:
        s.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def server_factory():
    """Start servers with extra flags: server_factory("--compact-window", "10"). Each is
    stopped at the end of the test and must exit 0."""
    started = []

    def make(*extra_args):
        d = tempfile.mkdtemp(prefix="flotilla-e2e-")
        s = Server(d, extra_args).start()
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


def wait_for(pred, timeout=10, interval=0.05, what="condition"):
    """Poll pred() until it returns a truthy value; that value is returned. Fails after timeout."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def ensure_namespace(server, name):
    """Create namespace `name` unless it exists."""
    code, body = server.curl("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert code in (201, 409), (code, body)


def crd_manifest(group, kind, plural, scope="Namespaced", status=True, short_names=(), columns=()):
    """A CustomResourceDefinition with one served version v1 whose spec and status keep any fields."""
    version = {
        "name": "v1", "served": True, "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
    }
    if status:
        version["subresources"] = {"status": {}}
    if columns:
        version["additionalPrinterColumns"] = list(columns)
    names = {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"}
    if short_names:
        names["shortNames"] = list(short_names)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": names, "versions": [version]}}


def create_crd(server, manifest, timeout=15):
    """Create a CRD and wait until its resource answers a list."""
    code, body = server.curl("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", manifest)
    assert code in (201, 409), (code, body)
    spec = manifest["spec"]
    path = f"/apis/{spec['group']}/v1/{spec['names']['plural']}"
    wait_for(lambda: server.curl("GET", path)[0] == 200, timeout=timeout, what=f"{path} to be served")
    return path


def deployment_manifest(name, deadline=3):
    """Deployment `name` in default: one replica of nginx labelled app=name. A short
    progressDeadlineSeconds (`deadline`) turns a copy that cannot pull Failed
    (ProgressDeadlineExceeded) soon after."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "progressDeadlineSeconds": deadline, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}


def policy_manifest(name, clusters=None):
    """PropagationPolicy `name` in default selecting Deployment `name`, to the named clusters, or
    with none named to every cluster."""
    placement = {"clusterAffinity": {"clusterNames": clusters}} if clusters else {}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": placement}}


def fake_image_override(name, clusters):
    """OverridePolicy `name`-fake in default: Deployment `name`'s copies on `clusters` take their
    image from the fake.io registry, whose images the member simulator never pulls."""
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
            "metadata": {"name": f"{name}-fake", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "overrideRules": [{"targetCluster": {"clusterNames": clusters},
                                        "overriders": {"imageOverrider": [
                                            {"component": "Registry", "operator": "replace", "value": "fake.io"}]}}]}}


class Fleet:
    """A `flotilla up` fleet (control plane + members) driven with kubectl, as a user would."""

    def __init__(self, d):
        self.dir = d
        self.kubeconfig = os.path.join(d, "kubeconfig")

    def kubectl(self, *args, member=None, input=None, check=True, timeout=60):
        kc = os.path.join(self.dir, "members", f"{member}.kubeconfig") if member else self.kubeconfig
        r = subprocess.run([KUBECTL, "--kubeconfig", kc, *args], input=input, capture_output=True, text=True,
                           timeout=timeout)
        if check:
            assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r

    def ctl(self, *args, timeout=60):
        """`flotilla ctl ARGS` against the control plane; the CompletedProcess."""
        return subprocess.run([BIN, "ctl", "--kubeconfig", self.kubeconfig, *args], capture_output=True, text=True,
                              timeout=timeout)

    def apply(self, manifest, member=None):
        docs = manifest if isinstance(manifest, list) else [manifest]
        # a YAML stream of JSON documents (a leading "{" would make kubectl read one JSON value)
        return self.kubectl("apply", "-f", "-", member=member,
                            input="".join("---\n" + json.dumps(d) + "\n" for d in docs))

    def get(self, *args, member=None):
        r = self.kubectl("get", *args, "-o", "json", member=member, check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def patch(self, *args, patch, kind="merge", member=None):
        return self.kubectl("patch", *args, "--type", kind, "-p", json.dumps(patch), member=member)

    def delete(self, *args, member=None):
        """Delete, tolerating absence and errors (cleanup must go on)."""
        self.kubectl("delete", *args, "--ignore-not-found", "--wait=false", member=member, check=False)

    def log_tail(self, n=40, grep=None):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return ""
        if grep:
            lines = [l for l in lines if any(g in l for g in grep)]
        return "\n".join(lines[-n:])


def start_up(d, port, members=2, pull=0, server_args=()):
    """`flotilla up` on directory d listening on port, with `members` members, the last `pull`
    of them in pull mode, and server_args handed to `flotilla server`; returns the process once
    it has printed its "Flotilla is up" line (its stdout and stderr are pipes), or fails the
    caller with what it said."""
    args = [BIN, "up", "--data-dir", d, "--members", str(members), "--listen", f"127.0.0.1:{port}"]
    if pull:
        args += ["--pull", str(pull)]
    if "--etcd-servers" not in server_args:
        server_args = [*server_args, *etcd_store_args(d)]
    if server_args:
        args += ["--", *server_args]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if "Flotilla is up" not in line:
        p.kill()
        p.wait(timeout=30)
        raise AssertionError(f"flotilla up failed: {line!r} {p.stderr.read()}")
    return p


@contextlib.contextmanager
def running_fleet(members=3, pull=0, server_args=()):
    """`flotilla up` with `members` members, the last `pull` of them in pull mode with their
    agents, and server_args handed to `flotilla server`. It must stop cleanly, and any
    sanitizer report in the server's or members' logs fails the caller."""
    d = tempfile.mkdtemp(prefix="flotilla-fleet-")
    p = start_up(d, free_port(), members, pull, server_args)
    try:
        yield Fleet(d)
    except BaseException:
        # the caller failed: stop the fleet all the same, so it does not run on into the
        # tests after it, and let the caller's failure be the one reported
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
        raise
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=60)
    log = open(os.path.join(d, "server.log")).read()
    logs = [("server", log)]
    for name in sorted(os.listdir(d)):
        if name.endswith(".log") and name != "server.log":
            logs.append((name, open(os.path.join(d, name), errors="replace").read()))
    # the server, members and agents run under ASan+UBSan in CI: any report fails the module
    for name, text in logs:
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in text, f"{name} log has a sanitizer report:\n{text[text.find(marker) - 200:][:4000]}"
    shutil.rmtree(d, ignore_errors=True)
    assert rc == 0, f"flotilla up exited with {rc}; server log tail:\n{log[-3000:]}"


@pytest.fixture(scope="module")
def fleet():
    """One `flotilla up` with three members per test module."""
    with running_fleet() as f:
        yield f
