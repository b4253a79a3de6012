"""/livez, /readyz and /healthz as kube-apiserver answers them, with checks that look at the
server's real state: ?verbose lists every check, ?exclude=<check> (repeatable) skips one,
/<endpoint>/<check> runs one (404 for a check the endpoint has not), a failing check answers
500 with the list ("[-]name failed: reason withheld"). Readiness is observed false during a real
start-up, while the controllers' informers make their first lists, and during a shutdown
delayed by --shutdown-delay-duration. Through curl and kubectl, as an operator probes.
"""
import http.client
import os
import signal
import ssl
import subprocess
import time

import pytest

from conftest import BIN, ensure_namespace, wait_for

READYZ = ["ping", "log", "etcd", "etcd-readiness", "informer-sync", "poststarthook/start-controllers", "shutdown"]
LIVEZ = ["ping", "log", "etcd", "poststarthook/start-controllers"]


def lines(body):
    return body.rstrip("\n").split("\n")


@pytest.mark.parametrize("endpoint,checks", [("readyz", READYZ), ("livez", LIVEZ), ("healthz", LIVEZ)])
def test_verbose_lists_each_check_in_order(server, endpoint, checks):
    code, body = server.curl("GET", f"/{endpoint}?verbose", auth=False)
    assert code == 200, body
    assert lines(body) == [f"[+]{c} ok" for c in checks] + [f"{endpoint} check passed"]
    code, body = server.curl("GET", f"/{endpoint}", auth=False)
    assert (code, body) == (200, "ok")


def test_exclude_skips_checks_and_lists_them_as_excluded(server):
    code, body = server.curl("GET", "/readyz?verbose&exclude=etcd&exclude=informer-sync", auth=False)
    assert code == 200, body
    got = lines(body)
    assert "[+]etcd excluded: ok" in got and "[+]informer-sync excluded: ok" in got
    assert "[+]etcd ok" not in got and "[+]informer-sync ok" not in got
    assert "[+]etcd-readiness ok" in got and got[-1] == "readyz check passed"
    # a name that matches no check is said, not silently ignored
    code, body = server.curl("GET", "/livez?verbose&exclude=shutdown&exclude=nope&exclude=nope&exclude=ping",
                             auth=False)
    assert code == 200, body
    assert lines(body)[0] == "[+]ping excluded: ok", body
    assert 'warn: some health checks cannot be excluded: no matches for "nope","shutdown"' in lines(body)
    # without verbose, still just ok
    assert server.curl("GET", "/readyz?exclude=etcd", auth=False) == (200, "ok")


def test_one_check_alone_and_unknown_checks_are_404(server):
    for path in ("/readyz/etcd", "/readyz/etcd-readiness", "/readyz/informer-sync", "/readyz/shutdown",
                 "/readyz/poststarthook/start-controllers", "/livez/ping", "/livez/etcd",
                 "/livez/poststarthook/start-controllers", "/healthz/log"):
        assert server.curl("GET", path, auth=False) == (200, "ok"), path
    # readyz-only checks are not served under /livez or /healthz, nor names nobody has
    for path in ("/livez/informer-sync", "/livez/shutdown", "/healthz/etcd-readiness", "/readyz/nope",
                 "/readyz/poststarthook", "/livez/poststarthook/nope"):
        code, body = server.curl("GET", path, auth=False)
        assert code == 404, (path, body)
        assert body["reason"] == "NotFound", (path, body)


def test_kubectl_get_raw_readyz_verbose(server):
    r = server.kubectl("get", "--raw", "/readyz?verbose")
    assert lines(r.stdout) == [f"[+]{c} ok" for c in READYZ] + ["readyz check passed"]
    r = server.kubectl("get", "--raw", "/livez?verbose&exclude=etcd")
    assert "[+]etcd excluded: ok" in lines(r.stdout), r.stdout
    assert server.kubectl("get", "--raw", "/readyz/informer-sync").stdout == "ok"
    r = server.kubectl("get", "--raw", "/livez/informer-sync", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr + r.stdout, (r.stdout, r.stderr)


def work(name, size):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "bulk"},
          "data": {"blob": "x" * size}}
    return {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": name, "namespace": "bulk"}, "spec": {"workload": {"manifests": [cm]}}}


def first_answers(srv, path, timeout=60):
    """Start srv's binary and probe path from the first moment it accepts a connection until it
    answers 200: every (status, body) in order."""
    ctx = ssl.create_default_context(cafile=os.path.join(srv.data_dir, "pki", "ca.crt"))
    log = open(srv.log_path, "ab")
    srv.proc = subprocess.Popen([BIN, "server", "--data-dir", srv.data_dir, "--listen", f"127.0.0.1:{srv.port}"]
                                + srv.extra_args, stdout=log, stderr=log)
    answers, conn = [], None
    deadline = time.time() + timeout
    while time.time() < deadline and srv.proc.poll() is None:
        try:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=10)
            conn.request("GET", path)
            r = conn.getresponse()
            answers.append((r.status, r.read().decode()))
            if r.status == 200:
                return answers
        except (ConnectionError, OSError, http.client.HTTPException):
            conn = None
            time.sleep(0.002)
    raise AssertionError(f"no 200 from {path}; answers {answers[-3:]}:\n{srv.log()}")


@pytest.mark.sqlite_only(reason="an etcd store reads every value into memory as it opens, before the server "
                                 "listens: the informers' lists end before the first probe can connect (200 at once)")
def test_not_ready_until_the_informers_have_listed(fresh_server):
    s = fresh_server.start()
    ensure_namespace(s, "bulk")
    # Works the informers must read whole at the next start: 48 of 1 MiB
    for i in range(48):
        code, body = s.curl("POST", "/apis/work.karmada.io/v1alpha1/namespaces/bulk/works", work(f"w{i}", 1 << 20))
        assert code == 201, body
    assert s.stop() == 0
    answers = first_answers(s, "/readyz")
    code, body = answers[0]
    assert code == 500 and body.endswith("readyz check failed\n"), answers[0]
    # controllers started, their informers still listing: ready only once they are done
    assert any("[+]poststarthook/start-controllers ok" in b and "[-]informer-sync failed: reason withheld" in b
               for _, b in answers), answers[:3]
    for code, body in answers[:-1]:
        assert code == 500 and "[+]ping ok\n[+]log ok\n[+]etcd ok\n" in body, (code, body)
    assert answers[-1] == (200, "ok")
    code, body = s.curl("GET", "/readyz?verbose", auth=False)
    assert code == 200 and "[+]informer-sync ok" in body, body


def test_readyz_fails_while_shutting_down_and_livez_does_not(server_factory):
    s = server_factory("--shutdown-delay-duration", "20s")
    ensure_namespace(s, "drain")
    s.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: s.curl("GET", "/readyz", auth=False)[0] == 500, timeout=10, what="/readyz to fail")
    code, body = s.curl("GET", "/readyz", auth=False)
    assert code == 500, body
    assert lines(body)[-2:] == ["[-]shutdown failed: reason withheld", "readyz check failed"], body
    assert "[+]etcd ok" in lines(body) and "[+]informer-sync ok" in lines(body), body
    assert s.curl("GET", "/readyz?exclude=shutdown", auth=False) == (200, "ok")
    code, body = s.curl("GET", "/readyz/shutdown", auth=False)
    assert code == 500 and "process is shutting down" in body, body
    # still serving, and alive
    assert s.curl("GET", "/livez", auth=False) == (200, "ok")
    assert s.curl("GET", "/healthz?verbose", auth=False)[0] == 200
    assert s.curl("GET", "/api/v1/namespaces/drain")[0] == 200
    r = s.kubectl("get", "--raw", "/readyz?verbose", check=False)
    assert r.returncode != 0 and "[-]shutdown failed" in r.stdout + r.stderr, (r.stdout, r.stderr)
    # a second signal ends the delay at once
    t0 = time.time()
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(timeout=15) == 0, s.log()
    assert time.time() - t0 < 15
    s.proc = None


def test_bad_shutdown_delay_is_refused(tmp_path):
    r = subprocess.run([BIN, "server", "--data-dir", str(tmp_path), "--shutdown-delay-duration", "soon"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--shutdown-delay-duration: expected seconds" in r.stderr, r.stderr
