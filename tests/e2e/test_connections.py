"""Connections cost memory, not threads (issue 47): many idle watches on a bounded number of
server threads, a watcher killed outright freed at once, and the timeouts a slow or idle
client runs into (request headers, body, idle keep-alive).

Each test talks to the server over raw TLS sockets, as a client that misbehaves would."""
import os
import re
import resource
import socket
import ssl
import subprocess
import sys
import time

import pytest
from concurrent.futures import ThreadPoolExecutor

from conftest import ensure_namespace, idle_threads, wait_for

NS = "connections"
CM = f"/api/v1/namespaces/{NS}/configmaps"


def configmap(name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def tls_connect(server, timeout=30):
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    return server.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")


def read_headers(sock, timeout=30):
    """The response's status line and headers (bytes), and whatever followed them."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before the headers: {buf!r}")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def read_response(sock, timeout=30):
    """A whole response with a Content-Length: its status line and headers."""
    head, rest = read_headers(sock, timeout)
    m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    assert m, head
    while len(rest) < int(m.group(1)):
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the body"
        rest += chunk
    return head


def open_watch(server, path):
    s = tls_connect(server)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token()}\r\n"
              f"Accept: application/json\r\n\r\n".encode())
    head, rest = read_headers(s)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s, rest


def threads(server):
    return len(os.listdir(f"/proc/{server.proc.pid}/task"))


def watch_gauge(server):
    code, text = server.curl("GET", "/metrics")
    assert code == 200, text
    m = re.search(r"^flotilla_watches (\d+)", text, re.M)
    assert m, text[:2000]
    return int(m.group(1))


def closed_within(sock, seconds, dribble=None, every=0.5):
    """Seconds until the server closes sock (None if it is still open after `seconds`),
    sending dribble() every `every` seconds meanwhile."""
    start = time.time()
    sock.settimeout(every)
    while time.time() - start < seconds:
        try:
            if dribble:
                sock.sendall(dribble())
            data = sock.recv(4096)
            if not data:
                return time.time() - start
        except socket.timeout:
            continue
        except (ssl.SSLError, OSError):
            return time.time() - start
    return None


def test_two_thousand_idle_watches_hold_no_threads_and_still_deliver(server_factory):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    s = server_factory()
    ensure_namespace(s, NS)
    rv = s.list_rv(CM)
    path = f"{CM}?watch=1&resourceVersion={rv}"
    before = idle_threads(s.proc.pid)
    socks = []
    try:
        with ThreadPoolExecutor(8) as pool:
            socks = list(pool.map(lambda _: open_watch(s, path)[0], range(2000)))
        assert watch_gauge(s) >= 2000
        # a watch per connection once meant a thread per watch: now the count stays flat.
        # Workers started while the watches were being opened end after 5 idle seconds.
        deadline = time.time() + 10
        n = threads(s)
        while n > before and time.time() < deadline:
            time.sleep(0.5)
            n = threads(s)
        assert n <= before, f"{n} server threads with 2000 idle watches (was {before} before them)"
        code, body = s.curl("POST", CM, configmap("wake-them-all"))
        assert code == 201, body

        def got_event(sock):
            sock.settimeout(20)
            buf = b""
            while b"wake-them-all" not in buf:
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                buf += chunk
            return b'"ADDED"' in buf

        with ThreadPoolExecutor(8) as pool:
            delivered = sum(pool.map(got_event, socks))
        assert delivered == 2000, f"only {delivered} of 2000 watches saw the new ConfigMap"
        assert threads(s) <= before, f"{threads(s)} threads after delivering to 2000 watches (was {before})"
    finally:
        for sock in socks:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


WATCHER = r"""
import socket, ssl, sys, time
port, ca, token, path = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(port))), server_hostname="127.0.0.1")
s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = s.recv(4096)
    if not chunk:
        sys.exit(f"closed before the headers: {buf!r}")
    buf += chunk
print("ready", s.getsockname()[1], flush=True)
time.sleep(300)
"""


def server_sockets_to(server, peer_port):
    """The server's TCP sockets (any state) whose peer is 127.0.0.1:peer_port."""
    out = []
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if int(local.split(":")[1], 16) == server.port and int(remote.split(":")[1], 16) == peer_port:
                out.append(state)
    return out


def test_a_watcher_killed_outright_is_freed_within_five_seconds_without_an_event(server):
    ensure_namespace(server, NS)
    rv = server.list_rv(CM)
    base = watch_gauge(server)
    p = subprocess.Popen([sys.executable, "-c", WATCHER, str(server.port),
                          os.path.join(server.data_dir, "pki", "ca.crt"), server.token(),
                          f"{CM}?watch=1&resourceVersion={rv}"], stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().split()
        assert line and line[0] == "ready", line
        peer = int(line[1])
        wait_for(lambda: watch_gauge(server) == base + 1, timeout=10, what="the watch to be counted")
        assert server_sockets_to(server, peer), "no server socket to the watcher"
    finally:
        p.kill()
        p.wait()
    killed = time.time()
    # nothing happens in the namespace: only noticing the hang-up can free the watch
    wait_for(lambda: watch_gauge(server) == base and not server_sockets_to(server, peer), timeout=5,
             interval=0.1, what="the killed watcher's watch and socket to be freed")
    assert time.time() - killed < 5.5


def test_headers_or_a_body_dribbled_are_cut_off_and_idle_keep_alive_closes(server_factory):
    s = server_factory("--http-header-timeout", "2", "--http-body-timeout", "2", "--http-idle-timeout", "3")
    ensure_namespace(s, NS)
    rv = s.list_rv(CM)
    # a watch is exempt from all three: it idles far longer and still delivers
    watch, _ = open_watch(s, f"{CM}?watch=1&resourceVersion={rv}")
    # a header line a half second at a time: MHD's inactivity timeout never fires on that
    sock = tls_connect(s)
    sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    t = closed_within(sock, 8, dribble=lambda: b"X-Slow: y\r\n")
    assert t is not None, "a client dribbling headers was never cut off"
    assert 1.5 <= t <= 4, f"cut off after {t:.1f}s; the header timeout is 2s"
    sock.close()
    # a body announced, then sent a byte at a time
    sock = tls_connect(s)
    sock.sendall(f"POST {CM} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {s.token()}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n".encode())
    t = closed_within(sock, 8, dribble=lambda: b" ")
    assert t is not None, "a client dribbling a body was never cut off"
    assert 1.5 <= t <= 4, f"cut off after {t:.1f}s; the body timeout is 2s"
    sock.close()
    # a kept-alive connection: a second request in time is served, then idle closes it
    sock = tls_connect(s)
    for _ in range(2):
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = read_response(sock)
        assert head.startswith(b"HTTP/1.1 200"), head
        time.sleep(1.5)
    t = closed_within(sock, 8)
    assert t is not None, "an idle keep-alive connection was never closed"
    assert 1 <= t <= 3.5, f"closed {t + 1.5:.1f}s after the last answer; the idle timeout is 3s"
    sock.close()
    code, body = s.curl("POST", CM, configmap("after-the-timeouts"))
    assert code == 201, body
    watch.settimeout(10)
    buf = b""
    while b"after-the-timeouts" not in buf:
        chunk = watch.recv(65536)
        assert chunk, "the watch was closed by a timeout meant for idle connections"
        buf += chunk
    watch.close()
