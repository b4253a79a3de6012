"""The metrics way in of live status (issue 45, item 5), end to end with a REAL Prometheus.

A `flotilla up` fleet with two Push members; member1 is annotated
`flotilla.io/status-source=metrics`, so the live state of what runs there is read from a
Prometheus query API instead of member watches. Prometheus (Debian's `prometheus` package,
scripts/setup.sh installs it) runs on a loopback port with its own data directory and a generated
scrape configuration: each simulated member's kube-state-metrics series
(/clusters/<name>/metrics, over HTTPS with the members' CA and the member's token) every second,
with a `cluster` target label naming the member.

- an unknown value of the annotation is refused with 422 naming it;
- a Deployment propagated to both members shows the same liveStatus on both Works (one through
  the member watch, one through Prometheus), and Prometheus holds the series it was judged from;
- made to fail (an image that never pulls, a short progress deadline), it is Failed with reason
  ProgressDeadlineExceeded on both, member1's through Prometheus;
- deleted in member1 behind the control plane's back, it is NotFound through the metrics, then
  delivered again (the engine's resync retries a metrics cluster's Work that says NotFound);
- a member that stops reporting (its API and /metrics down) turns Unknown (MetricsStale) on
  member1's Works after twice the interval;
- Prometheus stopped: member1's Works turn Unknown with a reason naming the problem, member2's
  stay Current; Prometheus back: Current again. Something else on its port that answers garbage,
  a wrong type, or too late: Unknown with PrometheusAnswerMalformed or PrometheusTimeout;
- a cluster taken back to the watch (annotation removed) is judged by its member watch again;
- the members' series pass `promtool check metrics`.
"""
import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from conftest import free_port, running_fleet, wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
MEMBERS = ["member1", "member2"]
INTERVAL_MS = 1000
RESYNC_MS = 2000  # how often the execution engine retries Works not settled (a NotFound of a metrics cluster)
ANNOTATION = "flotilla.io/status-source"


class Prometheus:
    """A real Prometheus scraping the members' /metrics every second; start() and stop() may be
    called again (same data directory)."""

    def __init__(self, fleet, port):
        self.dir = tempfile.mkdtemp(prefix="flotilla-prom-")
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.proc = None
        pki = os.path.join(fleet.dir, "members", "pki")
        jobs = []
        for m in MEMBERS:
            with open(os.path.join(fleet.dir, "members", f"{m}.kubeconfig")) as f:
                kc = yaml.safe_load(f)
            server = urllib.parse.urlparse(kc["clusters"][0]["cluster"]["server"])
            token_file = os.path.join(self.dir, f"{m}.token")
            with open(token_file, "w") as f:
                f.write(kc["users"][0]["user"]["token"])
            jobs.append(f"""  - job_name: kube-state-metrics-{m}
    scheme: https
    metrics_path: {server.path}/metrics
    tls_config:
      ca_file: {os.path.join(pki, "ca.crt")}
    authorization:
      type: Bearer
      credentials_file: {token_file}
    static_configs:
      - targets: ["{server.netloc}"]
        labels:
          cluster: {m}
""")
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n" + "".join(jobs))
        r = subprocess.run([PROMTOOL, "check", "config", self.config], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr

    def start(self):
        self.log = open(os.path.join(self.dir, "prometheus.log"), "ab")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={self.config}",
                                      f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=self.log)

        def ready():
            assert self.proc.poll() is None, open(os.path.join(self.dir, "prometheus.log")).read()[-3000:]
            try:
                return urllib.request.urlopen(self.base + "/-/ready", timeout=2).status == 200
            except OSError:
                return False
        wait_for(ready, timeout=30, interval=0.2, what="Prometheus ready")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        self.proc = None

    def query(self, promql):
        with urllib.request.urlopen(self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}),
                                    timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]


@contextlib.contextmanager
def env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def setup():
    port = free_port()
    # `flotilla up` hands its environment to the server it starts
    with env(FLOTILLA_STATUS_PROMETHEUS_URL=f"http://127.0.0.1:{port}",
             FLOTILLA_STATUS_METRICS_INTERVAL_MS=str(INTERVAL_MS), FLOTILLA_EXEC_RESYNC_MS=str(RESYNC_MS)):
        fleet_cm = running_fleet(members=2)
        fleet = fleet_cm.__enter__()
    prom = Prometheus(fleet, port)
    try:
        prom.start()
        fleet.kubectl("annotate", "cluster", "member1", f"{ANNOTATION}=metrics")
        yield fleet, prom
    finally:
        prom.stop()
        shutil.rmtree(prom.dir, ignore_errors=True)
        fleet_cm.__exit__(None, None, None)


def deployment(name, image="nginx:1.25", replicas=2, deadline=None):
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": image}]}}}
    if deadline:
        spec["progressDeadlineSeconds"] = deadline
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}}, "spec": spec}


def policy(name):
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": {"clusterAffinity": {"clusterNames": MEMBERS},
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}


def live(fleet, name, member):
    """The liveStatus of the Deployment's entry in its Work for member, or None."""
    rb = fleet.get("rb", f"{name}-deployment") or {}
    pid = (rb.get("metadata", {}).get("labels") or {}).get("resourcebinding.karmada.io/permanent-id")
    if not pid:
        return None
    items = (fleet.get("work", "-n", f"karmada-es-{member}", "-l",
                       f"resourcebinding.karmada.io/permanent-id={pid}") or {}).get("items") or []
    entries = ((items[0].get("status") or {}).get("manifestStatuses") or []) if items else []
    return entries[0].get("liveStatus") if entries else None


def state(fleet, name, member):
    return (live(fleet, name, member) or {}).get("state")


def server_metric(fleet, name, **labels):
    text = fleet.kubectl("get", "--raw", "/metrics").stdout
    total = 0.0
    for line in text.splitlines():
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


def test_an_unknown_status_source_is_refused_naming_the_annotation(setup):
    fleet, _ = setup
    r = fleet.kubectl("annotate", "--overwrite", "cluster", "member2", f"{ANNOTATION}=prometheus", check=False)
    assert r.returncode != 0
    assert "metadata.annotations[flotilla.io/status-source]" in r.stderr, r.stderr
    assert 'Unsupported value: "prometheus"' in r.stderr, r.stderr
    assert ANNOTATION not in (fleet.get("cluster", "member2")["metadata"].get("annotations") or {})
    # metrics is for Push clusters: a Pull cluster's agent reports the live status itself
    pull = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "sm-pull", "annotations": {ANNOTATION: "metrics"}}, "spec": {"syncMode": "Pull"}}
    r = fleet.kubectl("create", "-f", "-", input=json.dumps(pull), check=False)
    assert r.returncode != 0 and "metadata.annotations[flotilla.io/status-source]" in r.stderr, r.stderr
    assert "Push clusters" in r.stderr, r.stderr
    assert fleet.get("cluster", "sm-pull") is None


def test_a_deployment_has_the_same_live_status_through_the_watch_and_through_prometheus(setup):
    fleet, prom = setup
    fleet.apply([deployment("sm-web"), policy("sm-web")])
    wait_for(lambda: all(state(fleet, "sm-web", m) == "Current" for m in MEMBERS), timeout=60,
             what="sm-web Current on both Works")
    assert live(fleet, "sm-web", "member1") == live(fleet, "sm-web", "member2") == {"state": "Current"}
    # member1's came from the series Prometheus holds for it
    got = prom.query('kube_deployment_status_replicas_ready{cluster="member1",deployment="sm-web"}')
    assert [v for _, v in got] == [2.0], got
    assert server_metric(fleet, "flotilla_status_records_total", way="metrics") > 0
    assert server_metric(fleet, "flotilla_status_records_total", way="watch") > 0
    rb = fleet.get("rb", "sm-web-deployment")
    assert rb["status"]["summary"]["current"] == 2, rb["status"]["summary"]


def test_a_deployment_that_never_pulls_fails_through_prometheus_as_through_the_watch(setup):
    fleet, prom = setup
    fleet.apply([deployment("sm-stuck", image="fake.io/nginx:1.25", deadline=3), policy("sm-stuck")])
    wait_for(lambda: all(state(fleet, "sm-stuck", m) == "Failed" for m in MEMBERS), timeout=90,
             what="sm-stuck Failed on both Works")
    via_metrics, via_watch = live(fleet, "sm-stuck", "member1"), live(fleet, "sm-stuck", "member2")
    assert via_metrics["reason"] == via_watch["reason"] == "ProgressDeadlineExceeded", (via_metrics, via_watch)
    got = prom.query('kube_deployment_status_condition{cluster="member1",deployment="sm-stuck",'
                     'condition="Progressing",status="false",reason="ProgressDeadlineExceeded"} == 1')
    assert len(got) == 1, got
    rb = fleet.get("rb", "sm-stuck-deployment")
    assert rb["status"]["summary"]["failed"] == 2, rb["status"]["summary"]


def test_an_object_deleted_in_the_metrics_member_is_not_found_then_delivered_again(setup):
    fleet, _ = setup
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=30, what="sm-web Current on member1")
    uid = fleet.get("deploy", "sm-web", member="member1")["metadata"]["uid"]
    fleet.kubectl("delete", "deploy", "sm-web", "--wait=false", member="member1")
    seen = []

    def back():
        seen.append(state(fleet, "sm-web", "member1"))
        d = fleet.get("deploy", "sm-web", member="member1")
        return d and d["metadata"]["uid"] != uid and seen[-1] == "Current"
    wait_for(back, timeout=60, interval=0.1, what="sm-web re-created in member1 and Current")
    # no member watch told anyone: the metrics said NotFound, and the engine's resync applied it again
    assert "NotFound" in seen, seen


def member_fault(fleet, name, down):
    endpoint = fleet.get("cluster", name)["spec"]["apiEndpoint"]
    host = endpoint[:endpoint.index("/clusters/")]
    pki = os.path.join(fleet.dir, "members", "pki")
    with open(os.path.join(pki, "admin.token")) as f:
        token = f.read().strip()
    r = subprocess.run(["curl", "-sS", "--fail", "--cacert", os.path.join(pki, "ca.crt"), "-X", "PUT",
                        "-H", f"Authorization: Bearer {token}", f"{host}/admin/clusters/{name}/fault",
                        "-d", json.dumps({"down": down})], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_a_member_that_stops_reporting_turns_unknown_after_twice_the_interval(setup):
    fleet, _ = setup
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=30, what="sm-web Current on member1")
    member_fault(fleet, "member1", True)
    try:
        got = wait_for(lambda: (lambda s: s if (s or {}).get("state") == "Unknown" else None)(
            live(fleet, "sm-web", "member1")), timeout=30, what="sm-web Unknown on member1")
        assert got["reason"] == "MetricsStale", got
        assert "member1" in got["message"], got
        assert state(fleet, "sm-web", "member2") == "Current"
    finally:
        member_fault(fleet, "member1", False)
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=60,
             what="sm-web Current again on member1")


def test_prometheus_stopped_turns_that_cluster_unknown_and_leaves_the_other_alone(setup):
    fleet, prom = setup
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=30, what="sm-web Current on member1")
    failures = server_metric(fleet, "flotilla_status_metrics_query_failures_total", cluster="member1")
    prom.stop()
    try:
        got = wait_for(lambda: (lambda s: s if (s or {}).get("state") == "Unknown" else None)(
            live(fleet, "sm-web", "member1")), timeout=30, what="sm-web Unknown on member1")
        assert got["reason"] == "PrometheusUnreachable", got
        assert f"127.0.0.1:{prom.port}" in got["message"], got
        assert state(fleet, "sm-web", "member2") == "Current"
        assert live(fleet, "sm-stuck", "member2")["state"] == "Failed"
        assert server_metric(fleet, "flotilla_status_metrics_query_failures_total", cluster="member1") > failures
        rb = wait_for(lambda: (lambda b: b if b["status"]["summary"]["unknown"] == 1 else None)(
            fleet.get("rb", "sm-web-deployment")), timeout=30, what="the summary counts member1 Unknown")
        assert rb["status"]["summary"]["current"] == 1, rb["status"]["summary"]
    finally:
        prom.start()
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=60,
             what="sm-web Current again once Prometheus is back")


def test_a_cluster_taken_back_to_the_watch_is_judged_by_its_member_watch_again(setup):
    fleet, prom = setup
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=30, what="sm-web Current on member1")
    prom.stop()
    try:
        wait_for(lambda: state(fleet, "sm-web", "member1") == "Unknown", timeout=30, what="sm-web Unknown on member1")
        fleet.kubectl("annotate", "cluster", "member1", f"{ANNOTATION}-")
        # Prometheus is still down: Current can only come from the member watch
        wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=60,
                 what="sm-web Current on member1 through its member watch")
        assert live(fleet, "sm-web", "member1") == live(fleet, "sm-web", "member2")
    finally:
        prom.start()
        fleet.kubectl("annotate", "--overwrite", "cluster", "member1", f"{ANNOTATION}=metrics")


def test_the_members_series_pass_promtool_and_name_what_they_hold(setup):
    fleet, prom = setup
    with open(os.path.join(fleet.dir, "members", "member1.kubeconfig")) as f:
        kc = yaml.safe_load(f)
    r = subprocess.run(["curl", "-sS", "--fail", "--cacert", os.path.join(fleet.dir, "members", "pki", "ca.crt"),
                        "-H", f"Authorization: Bearer {kc['users'][0]['user']['token']}",
                        kc["clusters"][0]["cluster"]["server"] + "/metrics"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert 'kube_deployment_spec_replicas{namespace="default",deployment="sm-web"} 2' in text, text[:2000]
    assert 'kube_namespace_created{namespace="default"}' in text
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(), lint.stdout + lint.stderr
    # without the member's token: refused, as its API is
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                        os.path.join(fleet.dir, "members", "pki", "ca.crt"),
                        kc["clusters"][0]["cluster"]["server"] + "/metrics"], capture_output=True, text=True,
                       timeout=30)
    assert r.stdout == "401", r.stdout


@contextlib.contextmanager
def fake_prometheus(port, body, delay=0.0):
    """Something else on Prometheus' port: every GET answered 200 with body, after delay seconds."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(delay)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the server gave up waiting

        def log_message(self, *args):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("body,delay,reason,says", [
    (b"<html>502 Bad Gateway</html>", 0, "PrometheusAnswerMalformed", "not JSON"),
    (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"cluster":7},"value":[1,"1"]}]}}', 0,
     "PrometheusAnswerMalformed", "data.result[0].metric.cluster: not a string"),
    (b'{"status":"success","data":{"resultType":"vector","result":[]}}', 5, "PrometheusTimeout", "time-out"),
])
def test_a_prometheus_that_answers_garbage_or_too_late_turns_that_cluster_unknown(setup, body, delay, reason, says):
    fleet, prom = setup
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=60, what="sm-web Current on member1")
    prom.stop()
    try:
        with fake_prometheus(prom.port, body, delay):
            got = wait_for(lambda: (lambda s: s if (s or {}).get("reason") == reason else None)(
                live(fleet, "sm-web", "member1")), timeout=30, what=f"sm-web {reason} on member1")
            assert got["state"] == "Unknown" and says in got["message"], got
            assert state(fleet, "sm-web", "member2") == "Current"
    finally:
        prom.start()
    wait_for(lambda: state(fleet, "sm-web", "member1") == "Current", timeout=60,
             what="sm-web Current again once Prometheus is back")
