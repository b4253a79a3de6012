"""The shipped alerting rules and Grafana dashboard (deploy/), checked as an SRE would use them:
promtool lints the rules and runs their unit tests; every metric the rules and the dashboard
name is one a real `flotilla up` exports once it has propagated and failed over; a real
Prometheus loads the rules (healthy, and quiet on a healthy fleet), answers every panel's query,
and sets the member API errors alert pending for a member whose API fails.

One `flotilla up` with two members per module (test_metrics' fixtures: three Deployments
propagated to both), then a member down for a moment (its API answering 503, so that a member
request error is counted: that family has a series only from its first failure), one taint
failover and one eviction held back, so that the failover families exist too. Prometheus and
promtool come from Debian's `prometheus` (scripts/setup.sh).
"""
import json
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from conftest import wait_for
from test_failover_eviction import cleanup, placed, start, taint, tasks
from test_metrics import PROMTOOL, Scrape, fleet, prometheus_scraping, propagated, samples  # noqa: F401

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = os.path.join(ROOT, "deploy", "prometheus", "flotilla-alerts.yaml")
RULE_TESTS = os.path.join(ROOT, "deploy", "prometheus", "flotilla-alerts.test.yaml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "flotilla-control-plane.json")

# PromQL words that are neither metric names nor followed by "(" (functions and aggregations are)
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset",
            "bool", "inf", "nan"}


def metric_names(expr):
    """The metric names an expression selects: strings, label matchers, ranges and label lists
    taken out, then every identifier that is not a keyword and not called like a function."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", e):
        if m.group(0).lower() not in KEYWORDS and not e[m.end():].lstrip().startswith("("):
            names.add(m.group(0))
    return names


def alert_rules():
    with open(RULES) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def all_panels(d):
    """Every panel, those inside collapsed rows too."""
    out = []
    for p in d["panels"]:
        out.append(p)
        out.extend(p.get("panels") or [])
    return out


def panel_exprs(d):
    return [(p["title"], t["expr"]) for p in all_panels(d) if p["type"] != "row" for t in p["targets"]]


def variable_queries(d):
    """The metric selectors of the query variables (label_values(SELECTOR, label))."""
    out = []
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
            assert m, f"variable {v['name']}: not a label_values() query: {q}"
            out.append((v["name"], m.group(1), m.group(2)))
    return out


def concrete(expr):
    """A panel expression with the dashboard's variables as "All" selects them."""
    return (expr.replace("$__rate_interval", "1m").replace('"$job"', '".*"').replace('"$instance"', '".*"')
            .replace('"$cluster"', '".*"'))


def api(base, path, **params):
    with urllib.request.urlopen(base + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else ""),
                                timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]


def test_promtool_checks_the_rules():
    r = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"promtool check rules:\n{r.stdout}{r.stderr}"
    n = len(alert_rules())
    assert f"SUCCESS: {n} rules found" in r.stdout, r.stdout
    for rule in alert_rules():
        assert rule.get("for"), f"{rule['alert']} has no for:"
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_promtool_unit_tests_fire_and_hold_back_every_alert():
    r = subprocess.run([PROMTOOL, "test", "rules", RULE_TESTS], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"promtool test rules:\n{r.stdout}{r.stderr}"
    assert "SUCCESS" in r.stdout, r.stdout
    # every alert has a case where it fires and one where it does not
    with open(RULE_TESTS) as f:
        cases = [c for t in yaml.safe_load(f)["tests"] for c in t.get("alert_rule_test", [])]
    for rule in alert_rules():
        mine = [c for c in cases if c["alertname"] == rule["alert"]]
        assert any(c.get("exp_alerts") for c in mine), f"{rule['alert']}: no test where it fires"
        assert any(not c.get("exp_alerts") for c in mine), f"{rule['alert']}: no test where it stays quiet"


def test_the_dashboard_is_an_importable_grafana_model():
    d = dashboard()
    assert d["title"] and d["uid"] and isinstance(d["schemaVersion"], int) and d["schemaVersion"] >= 36
    ds = [v for v in d["templating"]["list"] if v["name"] == "datasource"]
    assert len(ds) == 1 and ds[0]["type"] == "datasource" and ds[0]["query"] == "prometheus", ds
    panels = all_panels(d)
    ids = [p["id"] for p in panels]
    assert all(isinstance(i, int) for i in ids) and len(ids) == len(set(ids)), ids
    cells = {}
    for p in panels:
        g = p["gridPos"]
        assert all(isinstance(g[k], int) for k in ("x", "y", "w", "h")), p["title"]
        assert 0 <= g["x"] and g["w"] > 0 and g["x"] + g["w"] <= 24 and g["y"] >= 0 and g["h"] > 0, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]
        if p["type"] == "row":
            continue
        assert p["title"] and p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], f"{p['title']} has no query"
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["datasource"]["uid"] == "${datasource}", p["title"]
    rows = [p["title"] for p in panels if p["type"] == "row"]
    for want in ("API server", "Work queues", "Controllers", "Member clusters", "Propagation", "Store", "Failover",
                 "Process"):
        assert want in rows, rows


def member_fault(fleet, name, down):
    """Take member `name`'s API down (every request answered 503) or bring it back, through the
    member host's admin endpoint (its own CA and admin token, under DIR/members/pki)."""
    endpoint = fleet.get("cluster", name)["spec"]["apiEndpoint"]
    host = endpoint[:endpoint.index("/clusters/")]
    pki = os.path.join(fleet.dir, "members", "pki")
    with open(os.path.join(pki, "admin.token")) as f:
        token = f.read().strip()
    r = subprocess.run(["curl", "-sS", "--fail", "--cacert", os.path.join(pki, "ca.crt"), "-X", "PUT",
                        "-H", f"Authorization: Bearer {token}", f"{host}/admin/clusters/{name}/fault",
                        "-d", json.dumps({"down": down})], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def member_ready(fleet, name):
    conds = ((fleet.get("cluster", name) or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


@pytest.fixture(scope="module")
def failed_over(fleet, propagated):
    """After the propagation: member2 down until a failed request to it is counted, then back and
    Ready; one binding moved off a tainted member (a failover begun and completed), and one whose
    only member is tainted (held back: NoClusterFits). The scrape after, once all is settled."""
    scrape = Scrape(fleet)
    member_fault(fleet, "member2", True)
    try:
        wait_for(lambda: any(n == "flotilla_member_request_errors_total" and 'cluster="member2"' in l
                             for n, l in samples(scrape.text())),
                 timeout=60, what="a failed request to member2 on /metrics")
    finally:
        member_fault(fleet, "member2", False)
    wait_for(lambda: member_ready(fleet, "member2"), timeout=60, what="member2 Ready again")
    old = start(fleet, "alerts-moved", ["member1", "member2"], toleration_seconds=0)
    taint(fleet, old)
    wait_for(lambda: placed(fleet, "alerts-moved") not in (None, old), timeout=30, what="alerts-moved moved")
    wait_for(lambda: not tasks(fleet, "alerts-moved"), timeout=30, what="alerts-moved's failover over")
    cleanup(fleet, "alerts-moved", old)
    only = start(fleet, "alerts-held", ["member1"], toleration_seconds=0)
    taint(fleet, only)
    wait_for(lambda: any(n == "flotilla_failover_suppressed_total" for n, _ in samples(scrape.text())),
             timeout=30, what="the eviction held back on /metrics")
    cleanup(fleet, "alerts-held", only)
    # settled: the taints gone, nothing pending, every queue drained, both members Ready and no
    # Work failed (the rules must be quiet on it)
    return wait_for(lambda: (lambda s: s if all(v == 0 for (n, l), v in s.items() if n in (
        "workqueue_depth", "flotilla_eviction_pending") or n == "flotilla_works" and 'applied="False"' in l)
        and all(v == 1 for (n, _), v in s.items() if n == "flotilla_cluster_ready") else None)(
        samples(scrape.text())), timeout=60,
        what="no eviction pending, every workqueue_depth 0, every member Ready and no Work failed")


def test_every_metric_the_rules_and_the_dashboard_use_is_exported(failed_over):
    exported = {n for n, _ in failed_over}
    used = {}
    for rule in alert_rules():
        for n in metric_names(rule["expr"]):
            used.setdefault(n, []).append("rule " + rule["alert"])
    d = dashboard()
    for title, expr in panel_exprs(d):
        for n in metric_names(expr):
            used.setdefault(n, []).append("panel " + title)
    for name, selector, _ in variable_queries(d):
        for n in metric_names(selector):
            used.setdefault(n, []).append("variable " + name)
    # the parse found what the files are about (it did not lose names)
    assert {"flotilla_cluster_ready", "workqueue_depth", "flotilla_controller_reconcile_total",
            "flotilla_store_commit_duration_seconds_bucket", "flotilla_apiserver_request_total",
            "flotilla_eviction_pending", "flotilla_failover_total", "process_resident_memory_bytes",
            "flotilla_member_request_errors_total", "flotilla_member_request_duration_seconds_bucket",
            "flotilla_member_request_duration_seconds_count", "flotilla_works", "flotilla_bindings",
            "flotilla_status_lag_seconds_bucket"} <= set(used), used
    missing = {n: where for n, where in used.items() if n not in exported}
    assert not missing, f"not on /metrics: {missing}"


@pytest.fixture(scope="module")
def prometheus_with_rules(fleet, failed_over):
    with prometheus_scraping(Scrape(fleet), rule_files=[RULES]) as base:
        wait_for(lambda: api(base, "/api/v1/query", query='count_over_time(up{job="flotilla"}[1m]) >= 5')["result"],
                 timeout=60, interval=0.5, what="five scrapes of the control plane")
        yield base


def test_a_real_prometheus_loads_the_rules_healthy_and_quiet(prometheus_with_rules):
    with open(RULES) as f:
        want = {g["name"]: [r["alert"] for r in g["rules"]] for g in yaml.safe_load(f)["groups"]}

    def evaluated():
        groups = api(prometheus_with_rules, "/api/v1/rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        return groups if len(rules) == sum(map(len, want.values())) and all(
            r["health"] != "unknown" for r in rules) else None
    groups = wait_for(evaluated, timeout=30, interval=0.5, what="every rule evaluated")
    assert {g["name"]: [r["name"] for r in g["rules"]] for g in groups} == want
    for g in groups:
        assert g["file"] == RULES and g["lastEvaluation"] != "0001-01-01T00:00:00Z", g
        for r in g["rules"]:
            assert r["type"] == "alerting", r
            assert r["health"] == "ok" and not r.get("lastError"), (r["name"], r["health"], r.get("lastError"))
    # a healthy fleet raises none of them
    active = [(r["name"], r["state"], r["alerts"]) for g in groups for r in g["rules"] if r["state"] != "inactive"]
    assert not active, active


def test_a_real_prometheus_answers_every_panel_and_variable(prometheus_with_rules):
    d = dashboard()
    empty = []
    for title, expr in panel_exprs(d):
        try:
            result = api(prometheus_with_rules, "/api/v1/query", query=concrete(expr))["result"]
        except urllib.error.HTTPError as e:
            raise AssertionError(f"panel {title}: {expr}: {e.read().decode()}") from e
        if not result:
            empty.append((title, expr))
    assert not empty, f"panels with no data after a propagation, a member fault and a failover: {empty}"
    for name, selector, label in variable_queries(d):
        values = api(prometheus_with_rules, f"/api/v1/label/{label}/values",
                     **{"match[]": concrete(selector)})
        assert values, f"variable {name}: no values for {selector}"
    assert "flotilla" in api(prometheus_with_rules, "/api/v1/label/job/values",
                             **{"match[]": "flotilla_store_revision"})


def test_a_failing_member_sets_its_api_errors_alert_pending_in_a_real_prometheus(fleet, prometheus_with_rules):
    """Last in the module: member2 down again, now under the Prometheus of the rules. The alert's
    expression matches the series the server really exports: it goes pending for member2 alone."""
    def pending():
        alerts = api(prometheus_with_rules, "/api/v1/alerts")["alerts"]
        mine = [a for a in alerts if a["labels"]["alertname"] == "FlotillaMemberAPIErrors"]
        return mine if any(a["labels"].get("cluster") == "member2" for a in mine) else None
    member_fault(fleet, "member2", True)
    try:
        mine = wait_for(pending, timeout=60, interval=0.5, what="FlotillaMemberAPIErrors pending for member2")
    finally:
        member_fault(fleet, "member2", False)
    assert [(a["labels"]["cluster"], a["state"], a["labels"]["job"]) for a in mine] == \
        [("member2", "pending", "flotilla")], mine
    assert "of the requests to cluster member2 fail" in mine[0]["annotations"]["summary"], mine
