"""Hardening of the HTTP front: TLS versions and cipher suites, health checks under load, the
read semantics of resourceVersion and resourceVersionMatch, and an impossible Content-Length.

Each test pins one defect found when the server was tried as an attacker or a careless
operator would: TLS 1.0 accepted, /healthz answering 429 when the server is merely busy, a
LIST that ignored a malformed resourceVersion or resourceVersionMatch=Exact, and a request
announcing 10 GB that hung until the client gave up."""
import socket
import ssl
import subprocess
import tempfile
import time
import shutil

import pytest

from conftest import BIN, ensure_namespace, wait_for

NS = "hardening-http"
CM = f"/api/v1/namespaces/{NS}/configmaps"


def configmap(name, data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {}}


def handshake(server, version):
    """Whether a TLS handshake at exactly `version` succeeds. The client side allows the old
    versions (security level 0), so only the server's refusal can make one fail."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(server.data_dir + "/pki/ca.crt")
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    ctx.minimum_version = version
    ctx.maximum_version = version
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return s.version()
    except (ssl.SSLError, ConnectionResetError):
        return None


# ---- TLS ----

def test_tls_below_1_2_is_refused_and_1_2_and_1_3_are_accepted(server):
    assert handshake(server, ssl.TLSVersion.TLSv1) is None
    assert handshake(server, ssl.TLSVersion.TLSv1_1) is None
    assert handshake(server, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    assert handshake(server, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"


def test_tls_min_version_13_refuses_1_2(server_factory):
    s = server_factory("--tls-min-version", "VersionTLS13")
    assert handshake(s, ssl.TLSVersion.TLSv1_2) is None
    assert handshake(s, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
    code, body = s.curl("GET", "/api/v1/namespaces")
    assert code == 200, body


def test_tls_cipher_suites_limit_what_tls_1_2_negotiates(server_factory):
    s = server_factory("--tls-cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,"
                       "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(s.data_dir + "/pki/ca.crt")
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
                pass
    ctx.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384")
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as t:
            assert "AES256-GCM" in t.cipher()[0]


@pytest.mark.parametrize("flag,value,mentions,extra", [
    ("--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_NOT_A_SUITE", "TLS_NOT_A_SUITE", []),
    ("--tls-min-version", "VersionTLS10", "VersionTLS10", []),
    # without TLS the flags could only be ignored: refused instead
    ("--tls-min-version", "VersionTLS13", "--insecure-http", ["--insecure-http"]),
    # TLS 1.3 only, with none of its ciphers among the suites: nothing could be negotiated
    ("--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS 1.3",
     ["--tls-min-version", "VersionTLS13"]),
])
def test_bad_tls_flag_is_refused_at_start_with_one_line(flag, value, mentions, extra):
    d = tempfile.mkdtemp(prefix="flotilla-e2e-")
    try:
        r = subprocess.run([BIN, "server", "--data-dir", d, "--listen", "127.0.0.1:0", flag, value, *extra],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0, r.stderr
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, r.stderr
        assert mentions in lines[0] and flag in lines[0], lines[0]
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- health under load ----

def hold_inflight_slot(server, path):
    """A request whose answer is far larger than the socket buffers, never read: the server
    cannot finish sending it, so it keeps its in-flight slot until the socket closes."""
    ctx = server.ssl_context()
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token()}\r\n"
               "Accept: application/json\r\n\r\n").encode())
    return s


def test_health_endpoints_answer_while_the_inflight_limit_is_reached(server_factory):
    s = server_factory("--max-requests-inflight", "1")
    ensure_namespace(s, NS)
    big = "x" * (1024 * 1024)  # under the 1.5 MiB object limit
    for i in range(24):  # 24 MiB of list: more than any socket buffers hold
        code, body = s.curl("POST", CM, configmap(f"big-{i}", {"k": big}))
        assert code == 201, body
    held = hold_inflight_slot(s, CM)
    try:
        # the slot is taken: an ordinary request is turned away
        wait_for(lambda: s.curl("GET", "/api/v1/namespaces")[0] == 429, timeout=10,
                 what="the in-flight limit to be reached")
        for path in ("/healthz", "/livez", "/readyz", "/healthz/ping", "/readyz?verbose", "/livez/ping"):
            code, body = s.curl("GET", path, auth=False)
            assert code == 200, (path, body)
            code, body = s.curl("GET", path)
            assert code == 200, (path, body)
    finally:
        held.close()
    wait_for(lambda: s.curl("GET", "/api/v1/namespaces")[0] == 200, timeout=10, what="the slot to be freed")
    # what /metrics says of it: the requests turned away, and (the scrape itself) one in flight
    code, text = s.curl("GET", "/metrics")
    assert code == 200, text
    assert metric(text, 'flotilla_http_dropped_requests_total{request_kind="request"}') >= 1, text
    assert metric(text, 'flotilla_http_inflight_requests') >= 1
    assert metric(text, 'flotilla_http_dropped_requests_total{request_kind="watch"}') == 0


def metric(text, series):
    """The value of one sample line of a /metrics text (series: the name with its labels)."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{series} not in /metrics")


# ---- resourceVersion and resourceVersionMatch ----

@pytest.fixture(scope="module")
def ns(server):
    ensure_namespace(server, NS)
    return server


@pytest.mark.parametrize("query", ["resourceVersion=abc", "resourceVersion=-1", "resourceVersion=12x",
                                   "resourceVersion=abc&resourceVersionMatch=NotOlderThan"])
def test_malformed_resource_version_on_list_is_400(ns, query):
    code, body = ns.curl("GET", f"{CM}?{query}")
    assert code == 400, body
    assert body["reason"] == "BadRequest" and "resourceVersion" in body["message"], body


def test_malformed_resource_version_on_get_and_watch_is_400(ns):
    code, body = ns.curl("POST", CM, configmap("rv-get"))
    assert code == 201, body
    code, body = ns.curl("GET", f"{CM}/rv-get?resourceVersion=abc")
    assert code == 400, body
    assert "resourceVersion" in body["message"], body
    code, body = ns.curl("GET", f"{CM}?watch=1&resourceVersion=abc")
    assert code == 400, body
    assert "resourceVersion" in body["message"], body


def test_resource_version_match_without_resource_version_is_refused(ns):
    code, body = ns.curl("GET", f"{CM}?resourceVersionMatch=Exact")
    assert code == 422, body
    assert body["reason"] == "Invalid", body
    assert "resourceVersionMatch is forbidden unless resourceVersion is provided" in body["message"], body
    assert body["details"]["causes"][0]["field"] == "resourceVersionMatch", body


def test_unknown_resource_version_match_is_refused(ns):
    rv = ns.list_rv(CM)
    code, body = ns.curl("GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=Newest")
    assert code == 422, body
    assert 'Unsupported value: "Newest"' in body["message"], body
    assert body["details"]["causes"][0]["field"] == "resourceVersionMatch", body


def test_exact_at_zero_is_refused(ns):
    code, body = ns.curl("GET", f"{CM}?resourceVersion=0&resourceVersionMatch=Exact")
    assert code == 422, body
    assert 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' in body["message"], body


def test_exact_at_an_older_kept_revision_answers_that_revision(ns):
    code, body = ns.curl("POST", CM, configmap("exact-a", {"v": "1"}))
    assert code == 201, body
    before = ns.list_rv(CM)
    code, body = ns.curl("POST", CM, configmap("exact-b"))
    assert code == 201, body
    code, body = ns.curl("PATCH", f"{CM}/exact-a", {"data": {"v": "2"}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    code, body = ns.curl("GET", f"{CM}?resourceVersion={before}&resourceVersionMatch=Exact")
    assert code == 200, body
    assert body["metadata"]["resourceVersion"] == before, body
    names = {i["metadata"]["name"]: i for i in body["items"]}
    assert "exact-a" in names and "exact-b" not in names, names
    assert names["exact-a"]["data"] == {"v": "1"}, names["exact-a"]
    # NotOlderThan: the list is at least as new (here: the current one)
    code, body = ns.curl("GET", f"{CM}?resourceVersion={before}&resourceVersionMatch=NotOlderThan")
    assert code == 200, body
    assert int(body["metadata"]["resourceVersion"]) >= int(before), body
    names = {i["metadata"]["name"]: i for i in body["items"]}
    assert "exact-b" in names and names["exact-a"]["data"] == {"v": "2"}, names


def test_a_resource_version_with_a_limit_and_no_match_is_exact(ns):
    """As kube-apiserver: without resourceVersionMatch, a non-zero resourceVersion with a limit
    (the first page of a paginated list) is Exact; without a limit it is NotOlderThan."""
    code, body = ns.curl("POST", CM, configmap("paged-a", {"v": "1"}))
    assert code == 201, body
    before = ns.list_rv(CM)
    code, body = ns.curl("PATCH", f"{CM}/paged-a", {"data": {"v": "2"}},
                         content_type="application/merge-patch+json")
    assert code == 200, body
    code, body = ns.curl("GET", f"{CM}?resourceVersion={before}&limit=500")
    assert code == 200, body
    assert body["metadata"]["resourceVersion"] == before, body
    names = {i["metadata"]["name"]: i for i in body["items"]}
    assert names["paged-a"]["data"] == {"v": "1"}, names["paged-a"]
    code, body = ns.curl("GET", f"{CM}?resourceVersion={before}")
    assert code == 200, body
    names = {i["metadata"]["name"]: i for i in body["items"]}
    assert names["paged-a"]["data"] == {"v": "2"}, names["paged-a"]


def test_exact_below_compaction_is_410(server_factory):
    s = server_factory("--compact-window", "10")
    ensure_namespace(s, NS)
    code, body = s.curl("POST", CM, configmap("old"))
    assert code == 201, body
    old = s.list_rv(CM)
    for i in range(40):
        code, body = s.curl("POST", CM, configmap(f"churn-{i}"))
        assert code == 201, body

    def expired():
        code, body = s.curl("GET", f"{CM}?resourceVersion={old}&resourceVersionMatch=Exact")
        if code == 200:
            return False  # not compacted yet
        assert code == 410, body
        assert body["reason"] == "Expired", body
        assert "too old" in body["message"], body
        return True
    wait_for(expired, timeout=20, interval=0.5, what="410 Expired for an Exact list below compaction")
    # the compaction is counted and timed, and the store's file has a size
    code, text = s.curl("GET", "/metrics")
    assert code == 200, text
    assert metric(text, "flotilla_store_compactions_total") >= 1
    assert metric(text, "flotilla_store_compaction_duration_seconds_count") == \
        metric(text, "flotilla_store_compactions_total")
    assert metric(text, "flotilla_store_db_size_bytes") > 4096
    # a first page at that revision is Exact too: 410, so that a client relists from scratch
    code, body = s.curl("GET", f"{CM}?resourceVersion={old}&limit=10")
    assert code == 410 and body["reason"] == "Expired", body


# ---- an impossible Content-Length ----

@pytest.mark.parametrize("auth", [True, False])
def test_content_length_beyond_the_limit_is_413_at_once(ns, auth):
    ctx = ns.ssl_context()
    with socket.create_connection(("127.0.0.1", ns.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            hdr = (f"POST {CM} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Content-Length: 10000000000\r\n")
            if auth:
                hdr += f"Authorization: Bearer {ns.token()}\r\n"
            t0 = time.time()
            s.sendall((hdr + "\r\n").encode())
            s.settimeout(2)
            try:
                first = s.recv(4096).decode(errors="replace")
            except socket.timeout:
                pytest.fail("no answer within 2 s to a 10 GB Content-Length")
            assert time.time() - t0 < 2
            assert first.startswith("HTTP/1.1 413"), first
