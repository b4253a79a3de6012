"""`flotilla ctl store backup` and `flotilla ctl store copy` (docs/store.md).

A backup is taken while a client keeps writing to the server; the backup is then restored into a
fresh data directory the documented way (the file as DIR/store.db, mode 0600) and a new server
started on it must hold exactly the writes of one moment: every write acknowledged before the
backup began, and of the writes racing it, those at or below the backup's revision and none
above. A copy between two SQLite stores must keep every object's UID and creationTimestamp.
"""
import contextlib
import http.client
import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BIN, EtcdCluster, Server, ensure_namespace, wait_for

NS = "backup"
SEED = 1500          # objects in the store before the backup, each with ~1 KiB of data
PAD = "x" * 1024


def ctl(*args, timeout=120, env=None):
    return subprocess.run([BIN, "ctl", "store"] + list(args), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


# A store of a few MiB copies in milliseconds: pace the backup (two pages a step, 10 ms between
# steps, a few seconds in all) so that many writes land while it runs.
PACED = {"FLOTILLA_BACKUP_STEP_PAGES": "2", "FLOTILLA_BACKUP_STEP_SLEEP_MS": "10"}


def configmap(name, i):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
            "data": {"i": str(i), "pad": PAD}}


class Writer:
    """Creates ConfigMaps one after another over one keep-alive connection, noting each
    acknowledged create: (name, uid, resourceVersion, time the answer arrived, latency)."""

    def __init__(self, server, prefix):
        self.server, self.prefix = server, prefix
        self.acked = []
        self.errors = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=self.server.ssl_context(),
                                           timeout=60)
        headers = {"Authorization": f"Bearer {self.server.token()}", "Content-Type": "application/json"}
        i = 0
        while not self.stop.is_set() and i < 100000:
            name = f"{self.prefix}-{i}"
            t = time.monotonic()
            conn.request("POST", f"/api/v1/namespaces/{NS}/configmaps", body=json.dumps(configmap(name, i)),
                         headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            done = time.monotonic()
            if resp.status != 201:
                self.errors.append((resp.status, body[:300]))
                break
            meta = json.loads(body)["metadata"]
            self.acked.append((name, meta["uid"], int(meta["resourceVersion"]), done, done - t))
            i += 1
        conn.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=60)


def seed(server, n, prefix="seed"):
    ensure_namespace(server, NS)
    with Writer(server, prefix) as w:
        wait_for(lambda: len(w.acked) >= n or w.errors, timeout=300, interval=0.2, what=f"{n} seeded objects")
    assert not w.errors, w.errors
    return w.acked


def list_configmaps(server):
    code, body = server.curl("GET", f"/api/v1/namespaces/{NS}/configmaps")
    assert code == 200, body
    return body


def sqlite_only(server):
    """server, kept on its data directory's SQLite store also when FLOTILLA_E2E_STORE=etcd puts
    the fixtures' servers on etcd: backups and copies read that file."""
    server.extra_args = []
    return server


def rows(db):
    """Every row of a store's log, read with SQLite itself."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        return c.execute("SELECT id, name, deleted, value FROM kv ORDER BY id").fetchall()


def start_on_store(store_file):
    """A server on a new data directory holding store_file as its store, restored the way
    docs/store.md says: the file as DIR/store.db with mode 0600."""
    d = tempfile.mkdtemp(prefix="flotilla-e2e-restore-")
    os.chmod(d, 0o700)
    shutil.copyfile(store_file, os.path.join(d, "store.db"))
    os.chmod(os.path.join(d, "store.db"), 0o600)
    return sqlite_only(Server(d)).start(timeout=60)


def stop_and_remove(server):
    rc = server.stop()
    assert rc == 0, f"server exited with {rc}:\n{server.log()}"
    shutil.rmtree(server.data_dir, ignore_errors=True)


def test_backup_while_writing_restores_one_moment(fresh_server, tmp_path):
    server = sqlite_only(fresh_server).start()
    seeded = seed(server, SEED)
    out = tmp_path / "flotilla.backup"
    with Writer(server, "live") as w:
        wait_for(lambda: len(w.acked) >= 20 or w.errors, timeout=60, what="writes before the backup")
        began = time.monotonic()
        acked_before = list(w.acked)  # answered before the backup process started
        r = ctl("backup", "--data-dir", server.data_dir, str(out), env=PACED)
        ended = time.monotonic()
        # keep writing a little after it: writes the backup must not contain
        n = len(w.acked)
        wait_for(lambda: len(w.acked) >= n + 20 or w.errors, timeout=60, what="writes after the backup")
    assert not w.errors, w.errors
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"backed up (\S+): (\d+) objects at revision (\d+), (\d+) bytes, to (\S+)\n", r.stdout)
    assert m, r.stdout
    rev, nbytes = int(m.group(3)), int(m.group(4))
    assert m.group(5) == str(out) and nbytes == out.stat().st_size > 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["flotilla.backup"], "no temporary file is left beside OUT"
    last_before = max(a[2] for a in acked_before)
    assert rev >= last_before
    during = [a for a in w.acked if began <= a[3] - a[4] and a[3] <= ended]
    print(f"backup of {SEED + len(acked_before)}+ objects took {ended - began:.2f}s; "
          f"{len(during)} writes started and ended during it, slowest "
          f"{max((a[4] for a in during), default=0) * 1000:.0f} ms")
    # the writer kept being answered while the backup ran: a read snapshot does not block it
    assert ended - began > 1.5, "the paced backup should take seconds"
    assert len(during) >= 10, f"only {len(during)} writes were answered during a {ended - began:.1f}s backup"
    assert max(a[4] for a in during) < 5, "a write waited seconds for the backup"
    # a long copy says how far it got, on stderr, and ends with the copy's one line on stdout
    assert re.search(r"^backing up: \d+/\d+ pages \(\d+%\)$", r.stderr, re.M), r.stderr

    # restore into a new data directory and look
    restored = start_on_store(str(out))
    try:
        body = list_configmaps(restored)
        assert int(body["metadata"]["resourceVersion"]) >= rev >= last_before
        have = {o["metadata"]["name"]: o for o in body["items"]}
        for name, uid, rv, _, _ in seeded + acked_before:
            assert name in have, f"{name} (revision {rv}), acknowledged before the backup, is missing"
            assert have[name]["metadata"]["uid"] == uid
            assert int(have[name]["metadata"]["resourceVersion"]) == rv
            assert have[name]["data"]["pad"] == PAD
        # one moment: a write racing the backup is there exactly when its revision is the
        # backup's or below, and nothing else of the live writer's is
        for name, uid, rv, _, _ in w.acked:
            assert (name in have) == (rv <= rev), f"{name} at revision {rv}, backup at {rev}"
        assert len([n for n in have if n.startswith("live-")]) == len([a for a in w.acked if a[2] <= rev])
        # every object decodes, through kubectl too
        got = restored.kubectl_json("get", "configmaps", "-n", NS)
        assert len(got["items"]) == len(have)
        # and the restored server takes writes after the backup's revision
        code, created = restored.curl("POST", f"/api/v1/namespaces/{NS}/configmaps", configmap("after", 0))
        assert code == 201, created
        assert int(created["metadata"]["resourceVersion"]) > rev
    finally:
        stop_and_remove(restored)


def test_backup_bad_input_is_one_line_and_writes_nothing(fresh_server, tmp_path):
    server = sqlite_only(fresh_server).start()
    ensure_namespace(server, NS)
    out = tmp_path / "exists"
    out.write_text("keep me")
    r = ctl("backup", "--data-dir", server.data_dir, str(out))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "already exists" in r.stderr, r.stderr
    assert out.read_text() == "keep me"

    r = ctl("backup", "--data-dir", str(tmp_path / "nowhere"), str(tmp_path / "b1"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "nowhere" in r.stderr, r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = ctl("backup", "--data-dir", str(empty), str(tmp_path / "b2"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no store in" in r.stderr, r.stderr
    r = ctl("backup", "--data-dir", server.data_dir, str(tmp_path / "no-such-dir" / "b3"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no-such-dir" in r.stderr, r.stderr
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "store.db").write_bytes(b"not a database, not at all" * 10)
    r = ctl("backup", "--data-dir", str(garbage), str(tmp_path / "b5"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "not a flotilla store" in r.stderr, r.stderr
    r = ctl("copy", "--from", f"sqlite:{garbage}", "--to", f"sqlite:{tmp_path / 'c1'}")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "not a database" in r.stderr, r.stderr
    assert sorted(os.listdir(garbage)) == ["server.lock", "store.db"]
    shutil.rmtree(garbage)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "exists"]
    assert os.listdir(empty) == []

    for args in (["backup", str(tmp_path / "b4")], ["backup", "--data-dir", server.data_dir], [],
                 ["restore"], ["backup", "--data-dir", server.data_dir, "--to", "sqlite:x", "b5"],
                 ["backup", "--bogus", "1"], ["copy", "--from", f"sqlite:{server.data_dir}"],
                 ["copy", "--from", f"sqlite:{server.data_dir}", "--to", f"sqlite:{tmp_path / 'c2'}",
                  "--etcd-prefix", "/p"], ["copy", "--data-dir", server.data_dir, "--to", "sqlite:x"]):
        r = ctl(*args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "flotilla ctl store" in r.stderr, (args, r)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "exists"]


def test_copy_keeps_uids_and_refuses_what_it_must(fresh_server, tmp_path):
    server = sqlite_only(fresh_server).start()
    seed(server, 200)
    code, _ = server.curl("DELETE", f"/api/v1/namespaces/{NS}/configmaps/seed-7")
    assert code == 200
    before = {o["metadata"]["name"]: o for o in list_configmaps(server)["items"]}
    src = f"sqlite:{server.data_dir}"
    dst_dir = tmp_path / "copy"

    r = ctl("copy", "--from", src, "--to", f"sqlite:{dst_dir}")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "in use by a flotilla server" in r.stderr, r.stderr
    assert not dst_dir.exists(), "a refused copy creates nothing"
    assert server.stop() == 0

    for args, words in ((["--from", "etcd:http://127.0.0.1:1", "--to", f"sqlite:{dst_dir}"], "expected sqlite:DIR"),
                        (["--from", src, "--to", f"nfs:{dst_dir}"], "expected sqlite:DIR or etcd:"),
                        (["--from", f"sqlite:{tmp_path / 'nowhere'}", "--to", f"sqlite:{dst_dir}"], "nowhere"),
                        (["--from", src, "--to", src], "same data directory")):
        r = ctl("copy", *args)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and words in r.stderr, (args, r.stderr)
    r = ctl("copy", "--from", src)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr

    r = ctl("copy", "--from", src, "--to", f"sqlite:{dst_dir}")
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"copied (\d+) of (\d+) objects from \S+ to \S+ \(revisions restart: the destination is at "
                     r"(\d+)\)\n", r.stdout)
    assert m and m.group(1) == m.group(2), r.stdout
    assert int(m.group(3)) == int(m.group(1))
    assert sorted(os.listdir(dst_dir)) == ["server.lock", "store.db"]
    assert stat.S_IMODE(os.stat(dst_dir / "store.db").st_mode) == 0o600

    # a destination that holds objects is refused, and left as it was
    copied_rows = rows(dst_dir / "store.db")
    r = ctl("copy", "--from", src, "--to", f"sqlite:{dst_dir}")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "already holds" in r.stderr, r.stderr
    assert rows(dst_dir / "store.db") == copied_rows

    copy = sqlite_only(Server(str(dst_dir))).start(timeout=60)
    try:
        body = list_configmaps(copy)
        after = {o["metadata"]["name"]: o for o in body["items"]}
        assert after.keys() == before.keys() and "seed-7" not in after
        for name, o in before.items():
            got = after[name]
            assert got["metadata"]["uid"] == o["metadata"]["uid"]
            assert got["metadata"]["creationTimestamp"] == o["metadata"]["creationTimestamp"]
            assert got["data"] == o["data"]
            assert int(got["metadata"]["resourceVersion"]) <= int(m.group(3))
        # the revisions restarted: all of them lie within the copy's
        assert len({o["metadata"]["resourceVersion"] for o in after.values()}) == len(after)
    finally:
        rc = copy.stop()
        assert rc == 0, copy.log()


def test_copy_to_etcd_keeps_uids_and_a_server_on_etcd_serves_them(fresh_server, tmp_path):
    etcd = EtcdCluster(tempfile.mkdtemp(prefix="flotilla-e2e-etcd-"), size=1).start()
    moved = None
    try:
        server = sqlite_only(fresh_server).start()
        seed(server, 300)
        before = {o["metadata"]["name"]: o for o in list_configmaps(server)["items"]}
        assert server.stop() == 0
        to = f"etcd:{etcd.endpoints}"
        r = ctl("copy", "--from", f"sqlite:{server.data_dir}", "--to", to, "--etcd-prefix", "/moved/registry")
        assert r.returncode == 0, r.stderr
        m = re.fullmatch(r"copied (\d+) of (\d+) objects from \S+ to \S+ \(revisions restart: the destination is at "
                         r"(\d+)\)\n", r.stdout)
        assert m and m.group(1) == m.group(2) and int(m.group(1)) >= len(before), r.stdout
        # a prefix that holds objects is refused; another prefix of the same cluster is not
        r = ctl("copy", "--from", f"sqlite:{server.data_dir}", "--to", to, "--etcd-prefix", "/moved/registry")
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and "already holds" in r.stderr, r.stderr
        for bad in ("moved", "/moved/", "/"):
            r = ctl("copy", "--from", f"sqlite:{server.data_dir}", "--to", to, "--etcd-prefix", bad)
            assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--etcd-prefix" in r.stderr, r.stderr
        r = ctl("copy", "--from", f"sqlite:{server.data_dir}", "--to", "etcd:http://127.0.0.1:1")
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and "127.0.0.1:1" in r.stderr, r.stderr

        d = tempfile.mkdtemp(prefix="flotilla-e2e-etcd-copy-")
        moved = Server(d, ["--etcd-servers", etcd.endpoints, "--etcd-prefix", "/moved/registry"]).start(timeout=60)
        after = {o["metadata"]["name"]: o for o in list_configmaps(moved)["items"]}
        assert after.keys() == before.keys()
        for name, o in before.items():
            assert after[name]["metadata"]["uid"] == o["metadata"]["uid"]
            assert after[name]["metadata"]["creationTimestamp"] == o["metadata"]["creationTimestamp"]
            assert after[name]["data"] == o["data"]
            assert int(after[name]["metadata"]["resourceVersion"]) <= int(m.group(3))
        got = moved.kubectl_json("get", "configmap", "seed-3", "-n", NS)
        assert got["metadata"]["uid"] == before["seed-3"]["metadata"]["uid"]
    finally:
        if moved:
            stop_and_remove(moved)
        etcd.stop()
