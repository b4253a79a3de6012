"""/metrics as an SRE uses it: lint-clean for promtool, moving as a known propagation predicts, and
scraped by a real Prometheus over HTTPS with the CA and a bearer token, answering PromQL.

One `flotilla up` with two members per module; the module propagates three Deployments to both
members once (the fixture `propagated`) and every test reads what that left on /metrics.
Prometheus and promtool are Debian's `prometheus` package (scripts/setup.sh installs it).
"""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from conftest import E2E_STORE, free_port, running_fleet, wait_for

WAIT = 60
MEMBERS = ["member1", "member2"]
NAMES = ["obs-a", "obs-b", "obs-c"]
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def deployment(name):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}


def policy():
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "obs", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": n}
                                           for n in NAMES],
                     "placement": {"clusterAffinity": {"clusterNames": MEMBERS}}}}


class Scrape:
    """Where and how to scrape the fleet's control plane: URL, CA file, and the bearer token of the
    metrics reader the server makes for Prometheus (DIR/pki/metrics-reader.token)."""

    def __init__(self, fleet):
        with open(fleet.kubeconfig) as f:
            self.url = re.search(r'server:\s*"?(https://[^"\s]+)', f.read()).group(1)
        self.ca = os.path.join(fleet.dir, "pki", "ca.crt")
        self.token_file = os.path.join(fleet.dir, "pki", "metrics-reader.token")

    def status(self, path):
        """The HTTP status of GET path with the scrape's token."""
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", self.ca, "-H",
                            f"Authorization: Bearer {open(self.token_file).read().strip()}", self.url + path],
                           capture_output=True, text=True, timeout=30)
        return int(r.stdout)

    def text(self):
        r = subprocess.run(["curl", "-sS", "--fail", "--cacert", self.ca, "-H",
                            f"Authorization: Bearer {open(self.token_file).read().strip()}", self.url + "/metrics"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout


def samples(text):
    """{(name, labels text): value} of every sample line."""
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def value(s, metric, **labels):
    """The sample of metric whose labels include these (0 when absent: a counter not yet counted)."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    found = [v for (n, l), v in s.items() if n == metric and all(w in l for w in want)]
    assert len(found) <= 1, (metric, labels, found)
    return found[0] if found else 0.0


def has(s, name):
    return any(n == name for n, _ in s)


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=2) as f:
        yield f


@pytest.fixture(scope="module")
def propagated(fleet):
    """Samples before, samples after the three Deployments reached both members (and queues drained)."""
    scrape = Scrape(fleet)
    wait_for(lambda: all(json.dumps((fleet.get("cluster", m) or {}).get("status", {})).find('"Ready"') >= 0
                         for m in MEMBERS), timeout=WAIT, what="both members Ready")
    before = samples(scrape.text())
    fleet.apply([policy()] + [deployment(n) for n in NAMES])
    for n in NAMES:
        for m in MEMBERS:
            wait_for(lambda: fleet.get("deployment", n, member=m), timeout=WAIT, what=f"{n} in {m}")
    # queues drain once the Works are applied and their status is back
    # (a build without the queue metrics has none: the tests below say so, not this wait)
    after = wait_for(lambda: (lambda s: s if all(
        v == 0 for (n, _), v in s.items() if n == "workqueue_depth") else None)(samples(scrape.text())),
        timeout=WAIT, what="every workqueue_depth back to 0")
    return scrape, before, after


def test_promtool_lint_passes_on_metrics_after_a_propagation(propagated):
    scrape, _, _ = propagated
    text = scrape.text()
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"promtool check metrics:\n{r.stdout}{r.stderr}"
    # and what it checked holds the families the lint is about
    for family in ("workqueue_adds_total", "flotilla_controller_reconcile_total", "process_cpu_seconds_total"):
        assert f"# TYPE {family} counter" in text, family
    for family in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
                   "flotilla_controller_reconcile_duration_seconds", "flotilla_cluster_health_check_duration_seconds"):
        assert f"# TYPE {family} histogram" in text, family


def test_metrics_move_as_three_deployments_to_two_clusters_predict(propagated):
    _, before, after = propagated

    def grew(metric, **labels):
        return value(after, metric, **labels) - value(before, metric, **labels)

    # each Deployment is detected, bound and scheduled at least once; each of its two Works executed
    assert grew("workqueue_adds_total", name="detector") >= 3
    assert grew("workqueue_adds_total", name="binding") >= 3
    assert grew("workqueue_adds_total", name="execution") >= 6
    assert grew("flotilla_controller_reconcile_total", controller="binding", result="success") >= 3
    assert grew("flotilla_controller_reconcile_total", controller="scheduler", result="success") >= 3
    assert grew("flotilla_controller_reconcile_total", controller="execution", result="success") >= 6
    # every reconcile counted is timed: the histogram's count is the sum over results
    for c in ("binding", "scheduler", "execution"):
        total = sum(value(after, "flotilla_controller_reconcile_total", controller=c, result=r)
                    for r in ("success", "requeue", "error"))
        assert value(after, "flotilla_controller_reconcile_duration_seconds_count", controller=c) == total, c
    # work done is timed by the queue too, and the keys wait before a worker takes them
    assert value(after, "workqueue_work_duration_seconds_count", name="execution") >= 6
    assert value(after, "workqueue_queue_duration_seconds_count", name="execution") >= 6
    assert value(after, 'workqueue_queue_duration_seconds_bucket', name="execution", le="+Inf") == \
        value(after, "workqueue_queue_duration_seconds_count", name="execution")
    # drained: nothing queued (the fixture waited for it), nothing left in progress
    assert {l for n, l in after if n == "workqueue_depth"} >= {'{name="%s"}' % q for q in (
        "detector", "binding", "scheduler", "execution", "cluster-status")}
    assert all(v == 0 for (n, _), v in after.items() if n == "workqueue_depth")
    assert value(after, "workqueue_unfinished_work_seconds", name="execution") == 0
    # a Deployment watch on each member, shared by its Works; nothing left waiting for delivery
    assert value(after, "flotilla_execution_member_watches") >= len(MEMBERS)
    assert value(after, "flotilla_execution_works_waiting") == 0
    # each of the six Works delivered, and its delivery timed (queued to applied in the member)
    assert grew("flotilla_execution_delivery_duration_seconds_count", result="ok") >= 6
    assert grew("flotilla_execution_delivery_duration_seconds_sum", result="ok") > 0
    # the store: every write timed, by operation; the group commits timed and sized
    assert grew("flotilla_store_write_duration_seconds_count", op="create", result="ok") >= 3 + 6
    assert grew("flotilla_store_write_duration_seconds_count", op="update", result="ok") >= 6
    commits = grew("flotilla_store_commit_duration_seconds_count")
    writes = grew("flotilla_store_commit_writes_sum")
    if E2E_STORE == "etcd":
        # no group commits on etcd: each write is a transaction of its own, timed as a write
        assert commits == writes == grew("flotilla_store_commit_writes_count") == 0
    else:
        assert 1 <= commits == grew("flotilla_store_commit_writes_count")
        # a commit takes one write or more, and no more than were made
        made = sum(grew("flotilla_store_write_duration_seconds_count", op=o, result=r)
                   for o in ("create", "update", "delete") for r in ("ok", "error"))
        assert commits <= writes <= made
    # the scheduler: each binding added and decided at least once, every decision timed, each
    # algorithm step observed (a decision that found clusters went through all three)
    assert grew("flotilla_scheduler_queue_incoming_bindings_total", event="BindingAdd") >= 3
    assert grew("flotilla_scheduler_schedule_attempts_total", result="scheduled") >= 3
    for r in ("scheduled", "unschedulable", "error"):
        assert value(after, "flotilla_scheduler_e2e_scheduling_duration_seconds_count", result=r) == \
            value(after, "flotilla_scheduler_schedule_attempts_total", result=r), r
    for step in ("Filter", "Select", "AssignReplicas"):
        assert grew("flotilla_scheduler_scheduling_algorithm_duration_seconds_count", schedule_step=step) >= 3, step
    assert value(after, "flotilla_scheduler_unschedulable_bindings") == 0
    # both members Ready, and probed
    for m in MEMBERS:
        assert value(after, "flotilla_cluster_ready", cluster=m) == 1, m
        assert value(after, "flotilla_cluster_health_check_duration_seconds_count", cluster=m) >= 1, m
    # the process as the kernel sees it
    assert value(after, "process_cpu_seconds_total") > 0
    assert value(after, "process_resident_memory_bytes") > 1 << 20
    assert value(after, "process_open_fds") > 3
    assert value(after, "process_max_fds") >= value(after, "process_open_fds")
    assert value(after, "process_threads") > 1
    assert abs(value(after, "process_start_time_seconds") - time.time()) < 3600


def test_a_binding_no_cluster_fits_counts_as_unschedulable_until_it_goes(fleet, propagated):
    scrape, _, _ = propagated
    before = samples(scrape.text())
    fleet.apply({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                 "metadata": {"name": "nowhere", "namespace": "default"},
                 "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "lost"}],
                          "placement": {"clusterAffinity": {"clusterNames": ["no-such-cluster"]}}}})
    fleet.apply(deployment("lost"))
    during = wait_for(lambda: (lambda s: s if value(s, "flotilla_scheduler_unschedulable_bindings") == 1 else None)(
        samples(scrape.text())), timeout=WAIT, what="one unschedulable binding")
    assert value(during, "flotilla_scheduler_schedule_attempts_total", result="unschedulable") > \
        value(before, "flotilla_scheduler_schedule_attempts_total", result="unschedulable")
    fleet.delete("deployment", "lost")
    fleet.delete("propagationpolicy", "nowhere")
    wait_for(lambda: value(samples(scrape.text()), "flotilla_scheduler_unschedulable_bindings") == 0,
             timeout=WAIT, what="no unschedulable binding once it is deleted")


@contextlib.contextmanager
def prometheus_scraping(scrape, rule_files=()):
    """A real Prometheus on a loopback port with its own data directory, scraping the control plane
    every second over HTTPS with the CA and the bearer token, evaluating rule_files every second;
    stopped at the end. Yields its base URL."""
    d = tempfile.mkdtemp(prefix="flotilla-prom-")
    u = urllib.parse.urlparse(scrape.url)
    config = os.path.join(d, "prometheus.yml")
    rules = "".join(f"\n  - {os.path.abspath(r)}" for r in rule_files)
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:{rules or " []"}
scrape_configs:
  - job_name: flotilla
    scheme: https
    metrics_path: /metrics
    tls_config:
      ca_file: {scrape.ca}
    authorization:
      type: Bearer
      credentials_file: {scrape.token_file}
    static_configs:
      - targets: ["{u.netloc}"]
""")
    r = subprocess.run([PROMTOOL, "check", "config", config], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    port = free_port()
    log = open(os.path.join(d, "prometheus.log"), "wb")
    p = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={os.path.join(d, 'data')}",
                          f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"

    def ready():
        assert p.poll() is None, open(os.path.join(d, "prometheus.log")).read()[-3000:]
        try:
            return urllib.request.urlopen(base + "/-/ready", timeout=2).status == 200
        except OSError:
            return False
    try:
        wait_for(ready, timeout=30, interval=0.2, what="Prometheus ready")
        yield base
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def prometheus(propagated):
    with prometheus_scraping(propagated[0]) as base:
        yield base


def promql(base, query):
    """The instant vector of query, as [(labels, value)], through Prometheus' HTTP API."""
    with urllib.request.urlopen(base + "/api/v1/query?" + urllib.parse.urlencode({"query": query}),
                                timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]


def test_a_real_prometheus_scrapes_over_https_and_answers_promql(prometheus):
    up = wait_for(lambda: [v for _, v in promql(prometheus, 'up{job="flotilla"}') if v == 1], timeout=30,
                  interval=0.5, what="up{job=flotilla} == 1")
    assert up == [1.0]
    ready = wait_for(lambda: promql(prometheus, "flotilla_cluster_ready == 1"), timeout=30, interval=0.5,
                     what="flotilla_cluster_ready series")
    assert sorted(m["cluster"] for m, _ in ready) == MEMBERS
    assert all(m["job"] == "flotilla" for m, _ in ready)
    # a histogram and a counter as dashboards use them
    rate = promql(prometheus, 'sum by (controller) (flotilla_controller_reconcile_total{result="success"})')
    assert {m["controller"]: v for m, v in rate}.get("execution", 0) >= 6, rate
    q = promql(prometheus, 'histogram_quantile(0.99, sum by (le) '
                           '(workqueue_work_duration_seconds_bucket{name="execution"}))')
    assert len(q) == 1 and q[0][1] >= 0, q


def test_the_metrics_reader_reads_metrics_and_health_and_nothing_else(propagated):
    scrape = propagated[0]
    assert scrape.status("/metrics") == 200
    assert scrape.status("/readyz") == 200
    for path in ("/api/v1/namespaces", "/apis/apps/v1/namespaces/default/deployments",
                 "/api/v1/namespaces/karmada-cluster/secrets", "/api/v1/nodes"):
        assert scrape.status(path) == 403, path


def test_works_bindings_member_calls_and_status_lag_after_a_propagation(propagated):
    _, before, after = propagated
    def grew(metric, **labels):
        return value(after, metric, **labels) - value(before, metric, **labels)
    # each member holds the three Works, applied; none failed or untried
    for m in MEMBERS:
        assert value(after, "flotilla_works", cluster=m, applied="True") >= 3, m
        assert value(after, "flotilla_works", cluster=m, applied="False") == 0, m
        assert value(after, "flotilla_works", cluster=m, applied="Unknown") == 0, m
    # the three bindings scheduled
    assert value(after, "flotilla_bindings", scheduled="True") >= 3
    assert value(after, "flotilla_bindings", scheduled="Unknown") == 0
    # each member's API answered the deliveries (applies, reads) and was timed, without failures
    for m in MEMBERS:
        assert grew("flotilla_member_request_duration_seconds_count", cluster=m) >= 3, m
        assert grew("flotilla_member_request_duration_seconds_sum", cluster=m) > 0, m
        assert not [k for k in after if k[0] == "flotilla_member_request_errors_total" and m in k[1]], m
    # status came back: the member objects' changes into their Works, the Works into the bindings
    assert grew("flotilla_status_lag_seconds_count", stage="work") >= 6
    assert grew("flotilla_status_lag_seconds_count", stage="binding") >= 3
    for stage in ("work", "binding"):
        assert value(after, "flotilla_status_lag_seconds_bucket", stage=stage, le="+Inf") == \
            value(after, "flotilla_status_lag_seconds_count", stage=stage)


def test_a_member_that_answers_503_counts_server_errors_for_that_cluster_only(fleet, propagated):
    """Last in the module: it takes member2 down for a moment."""
    scrape = propagated[0]
    endpoint = fleet.get("cluster", "member2")["spec"]["apiEndpoint"]
    host = endpoint[:endpoint.index("/clusters/")]
    members = os.path.join(fleet.dir, "members", "pki")

    def fault(down):
        token = open(os.path.join(members, "admin.token")).read().strip()
        r = subprocess.run(["curl", "-sS", "--fail", "--cacert", os.path.join(members, "ca.crt"), "-X", "PUT",
                            "-H", f"Authorization: Bearer {token}", f"{host}/admin/clusters/member2/fault",
                            "-d", json.dumps({"down": down})], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
    fault(True)
    try:
        s = wait_for(lambda: (lambda s: s if value(s, "flotilla_member_request_errors_total", cluster="member2",
                                                   reason="ServerError") >= 1 else None)(samples(scrape.text())),
                     timeout=WAIT, what="a ServerError counted for member2")
        assert value(s, "flotilla_member_request_errors_total", cluster="member1", reason="ServerError") == 0
    finally:
        fault(False)
