"""Shared fixtures for the end-to-end tests.

Each test module gets its own `flotilla server` on a free loopback port with a fresh data
directory, and talks to it the way users do: /usr/bin/kubectl with the kubeconfig the server
wrote, the official Python client, or plain HTTPS with curl. FLOTILLA_BIN picks the binary
(test.sh points it at the ASan+UBSan build).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("FLOTILLA_BIN", os.path.join(ROOT, "build", "flotilla"))
KUBECTL = shutil.which("kubectl") or os.path.join(ROOT, ".tools", "bin", "kubectl")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """A running flotilla server; start()/stop()/kill() for restart tests."""

    def __init__(self, data_dir, extra_args=()):
        self.data_dir = data_dir
        self.port = free_port()
        self.extra_args = list(extra_args)
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
            stdout=log, stderr=log)
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
