"""Logging flags as Kubernetes components have them: `-v N` / `--v=N` and
`--logging-format=text|json` on `flotilla server`, `member`, `agent` and `up` (which hands them
to its children). The log is stderr; stdout keeps the few lines printed for people and scripts
("flotilla server listening on ...", the member host's "kubeconfigs:" line). A line about an
object names it as object="Kind/namespace/name" (a JSON member, or key="value" in text)."""
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import BIN, KUBECTL, Server, free_port, wait_for

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TEXT = re.compile(r"^[EWID] \d\d:\d\d:\d\d\.\d{3} [^ :]+: ")
FIXED = {"ts", "level", "v", "component", "msg"}  # the members every JSON line has, first
LEVELS = {"error": 0, "warn": 0, "info": 0, "debug": 2}  # level -> the klog verbosity of its lines


class LoggingServer(Server):
    """A flotilla server whose stderr (the log) and stdout go to files of their own."""

    def start(self, timeout=20):
        self.out_path = os.path.join(self.data_dir, "server.out")
        with open(self.log_path, "ab") as err, open(self.out_path, "ab") as out:
            self.proc = subprocess.Popen(
                [BIN, "server", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}"] + self.extra_args,
                stdout=out, stderr=err, env=dict(os.environ, **self.env))
        wait_for(lambda: self.proc.poll() is not None or (
            os.path.exists(self.kubeconfig) and subprocess.run(
                ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", f"{self.url}/readyz"],
                capture_output=True, text=True).stdout == "200"), timeout=timeout, what="the server to serve")
        assert self.proc.poll() is None, f"server exited with {self.proc.returncode}:\n{self.log()}"
        return self


def check_json_line(line, where):
    """One log line: a JSON object with the documented fields first, then key/value pairs whose
    values are strings. Returns it."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise AssertionError(f"{where}: not a JSON line ({e}): {line!r}")
    assert isinstance(obj, dict), (where, line)
    assert list(obj)[:5] == ["ts", "level", "v", "component", "msg"], (where, line)
    assert all(isinstance(obj[k], str) and k for k in obj if k not in FIXED), (where, line)
    assert line.count('"level":') == 1 and line.count('"msg":') == 1, (where, line)  # never a second one
    assert TS.match(obj["ts"]), (where, line)
    ts = datetime.datetime.strptime(obj["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    age = abs((datetime.datetime.now(datetime.timezone.utc) - ts).total_seconds())
    assert age < 600, f"{where}: ts {obj['ts']} is not now in UTC"
    assert obj["level"] in LEVELS, (where, line)
    assert obj["v"] == LEVELS[obj["level"]], (where, line)
    assert isinstance(obj["component"], str) and obj["component"], (where, line)
    assert isinstance(obj["msg"], str) and obj["msg"], (where, line)
    return obj


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), f"{path}: the log ends in the middle of a line"
    return data.decode("utf-8").splitlines()  # JSON logs are UTF-8 whatever was logged


def deployment_and_policy(name, cluster):
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}},
                               "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
         "metadata": {"name": name, "namespace": "default"},
         "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                  "placement": {"clusterAffinity": {"clusterNames": [cluster]}}}},
    ]


def propagate_once(server, member_dir, name):
    """Join member1 of the member host in member_dir and propagate one Deployment to it."""
    mkc = os.path.join(member_dir, "member1.kubeconfig")
    r = subprocess.run([BIN, "ctl", "--kubeconfig", server.kubeconfig, "join", "member1", "--cluster-kubeconfig",
                        mkc], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    manifest = "".join("---\n" + json.dumps(d) + "\n" for d in deployment_and_policy(name, "member1"))
    server.kubectl("apply", "-f", "-", input=manifest)
    wait_for(lambda: subprocess.run([KUBECTL, "--kubeconfig", mkc, "get", "deploy", name], capture_output=True,
                                    timeout=30).returncode == 0, timeout=30, what=f"{name} on member1")


def run_server_and_member(fmt, tmp):
    """A server and a one-cluster member host, both with --logging-format=fmt and -v 2, a
    Deployment propagated through them, both stopped. Returns the two stderr logs' lines."""
    flags = [f"--logging-format={fmt}", "-v", "2"]
    mdir = os.path.join(tmp, "members")
    os.mkdir(mdir)
    mlog = os.path.join(tmp, "member.log")
    with open(mlog, "wb") as err:
        member = subprocess.Popen([BIN, "member", "--data-dir", mdir, "--clusters", "1", "--v=2",
                                   f"--logging-format={fmt}"], stdout=subprocess.PIPE, stderr=err, text=True)
    os.mkdir(os.path.join(tmp, "cp"), 0o700)
    server = LoggingServer(os.path.join(tmp, "cp"), flags)
    try:
        line = member.stdout.readline()
        assert "kubeconfigs:" in line, line  # stdout keeps its line, whatever the log format
        server.start()
        propagate_once(server, mdir, f"logs-{fmt}")
    finally:
        member.send_signal(signal.SIGTERM)
        member_rc = member.wait(timeout=20)
        server_rc = server.stop()
    assert server_rc == 0 and member_rc == 0, (server_rc, member_rc)
    with open(server.out_path) as f:
        assert f.read().startswith("flotilla server listening on ")
    return read_lines(server.log_path), read_lines(mlog)


def test_json_logs_are_one_object_a_line_with_ts_level_v_component_msg(tmp_path):
    server_lines, member_lines = run_server_and_member("json", str(tmp_path))
    objs = [check_json_line(l, "server") for l in server_lines]
    member_objs = [check_json_line(l, "member") for l in member_lines]
    msgs = [(o["level"], o["component"], o["msg"]) for o in objs]
    assert any(lv == "info" and c == "server" and m.startswith("serving on https://127.0.0.1:") for lv, c, m in msgs)
    assert ("info", "server", "received SIGTERM, shutting down") in msgs
    assert ("info", "server", "stopped") == msgs[-1]
    # -v 2 shows the debug lines, each V(2): the propagation made the templates controller
    # start a watch, among others
    debug = [o for o in objs if o["level"] == "debug"]
    assert debug and all(o["v"] == 2 for o in debug)
    assert any(o["component"] == "templates" and "apps/v1 Deployment" in o["msg"] for o in debug), debug[:20]
    assert ("info", "member", "received SIGTERM, shutting down") in [
        (o["level"], o["component"], o["msg"]) for o in member_objs]
    # the lines about the Deployment name it, the member cluster it went to and its Work
    about = [o for o in objs if o.get("object") == "Deployment/default/logs-json"]
    assert any(o["component"] == "execution" and o.get("cluster") == "member1" and
               o.get("work", "").startswith("Work/karmada-es-member1/") for o in about), \
        [o for o in objs if set(o) - FIXED][:20]
    # every object named is Kind/namespace/name or Kind/name, the kind capitalised
    named = [o["object"] for o in objs + member_objs if "object" in o]
    assert named and all(re.match(r"^[A-Z][A-Za-z]*(/[^/]+){1,2}$", n) for n in named), named


def test_text_logs_keep_their_shape_and_v2_adds_debug_lines(tmp_path):
    server_lines, member_lines = run_server_and_member("text", str(tmp_path))
    for where, lines in (("server", server_lines), ("member", member_lines)):
        assert lines, where
        for l in lines:
            assert TEXT.match(l), f"{where}: {l!r}"
    assert any(l.startswith("D ") and " templates: watching apps/v1 Deployment" in l for l in server_lines)
    # the line about the applied Deployment names it and its member cluster, values quoted
    assert any(" execution: " in l and ' object="Deployment/default/logs-text" cluster="member1" work="Work/' in l
               for l in server_lines), [l for l in server_lines if "execution" in l][:20]
    assert server_lines[-1].startswith("I ") and server_lines[-1].endswith(" server: stopped")


def test_without_v_there_are_no_debug_lines_and_flotilla_log_still_works(server_factory):
    # the default: info and above, no debug
    quiet = server_factory("--logging-format", "json")
    quiet.stop()
    with open(quiet.log_path) as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    assert lines and all(json.loads(l)["level"] != "debug" for l in lines)
    # FLOTILLA_LOG=debug alone still shows debug lines; an explicit -v 0 wins over it
    for extra, want_debug in (((), True), (("-v=0",), False)):
        d = tempfile.mkdtemp(prefix="flotilla-e2e-")
        s = LoggingServer(d, ["--logging-format=json", *extra], env={"FLOTILLA_LOG": "debug"})
        try:
            s.start()
            wait_for(lambda: s.curl("GET", "/api/v1/namespaces")[0] == 200, what="a list")
        finally:
            assert s.stop() == 0
        objs = [check_json_line(l, "server") for l in read_lines(s.log_path)]
        assert any(o["level"] == "debug" for o in objs) == want_debug, (extra, [o["msg"] for o in objs][:30])
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("cmd", ["server", "member", "agent", "up"])
@pytest.mark.parametrize("bad,flag", [(["--logging-format=xml"], "--logging-format"),
                                      (["--logging-format", "JSON"], "--logging-format"),
                                      (["-v", "loud"], "-v"), (["--v=-1"], "-v")])
def test_a_bad_logging_flag_is_one_line_naming_it_and_exit_2(tmp_path, cmd, bad, flag):
    d = str(tmp_path / "data")
    args = {"server": ["--data-dir", d], "member": ["--data-dir", d], "up": ["--data-dir", d],
            "agent": ["--server-kubeconfig", "/nonexistent", "--member-kubeconfig", "/nonexistent",
                      "--cluster-name", "m1"]}[cmd]
    r = subprocess.run([BIN, cmd, *args, *bad], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"flotilla {cmd}: {flag}: expected "), lines[0]
    assert bad[-1].split("=", 1)[-1] in lines[0]
    assert r.stdout == ""
    assert not os.path.exists(d), "refused before anything was created"


def test_up_hands_the_flags_to_the_server_members_and_agents():
    d = tempfile.mkdtemp(prefix="flotilla-up-logs-")
    p = start_up_with(d, ["--logging-format", "json", "--v", "2"])
    try:
        wait_for(lambda: os.path.getsize(os.path.join(d, "agent-member2.log")) > 0, timeout=30,
                 what="the agent's first log line")
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=60)
    assert rc == 0
    # up sends each child's stdout and stderr to one file: the stdout lines are the known ones
    stdout_lines = ("flotilla server listening on ", "kubeconfig: ", "flotilla member: ", "flotilla agent: cluster ")
    found = {}
    for name in ("server.log", "members.log", "agent-member2.log"):
        with open(os.path.join(d, name), encoding="utf-8") as f:
            text = f.read()
        objs = []
        for l in text.splitlines():
            if l.startswith(stdout_lines):
                continue
            objs.append(check_json_line(l, name))
        assert objs, f"{name} has no log line"
        found[name] = objs
    assert any(o["level"] == "debug" for o in found["server.log"]), "the server did not get -v 2"
    assert any(o["component"] == "agent" and o["msg"].startswith("registered cluster member2") and
               o.get("object") == "Cluster/member2" and o.get("cluster") == "member2"
               for o in found["agent-member2.log"])
    shutil.rmtree(d, ignore_errors=True)


def start_up_with(d, extra):
    port = free_port()
    args = [BIN, "up", "--data-dir", d, "--members", "2", "--pull", "1", "--listen", f"127.0.0.1:{port}", *extra]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if "Flotilla is up" not in line:
        p.kill()
        p.wait(timeout=30)
        raise AssertionError(f"flotilla up failed: {line!r} {p.stderr.read()}")
    return p
