"""The audit log, as kube-apiserver writes it (--audit-policy-file, --audit-log-path, rotation).

Servers are started with a policy and a log path; the tests make requests the way users do
(kubectl, curl) and read the log back: one audit.k8s.io/v1 Event per line, one per stage of
each request, with the user, verb, objectRef and response code; a Secret's data never in it,
whatever the policy; None rules dropping events; rotation past --audit-log-maxsize; a policy
that does not parse stopping the server with one line naming the file and the field.
"""
import base64
import glob
import json
import os
import subprocess
import tempfile

import pytest

from conftest import BIN, deployment_manifest, idle_threads, policy_manifest, wait_for

HEALTH_NONE = """
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
"""


def write_policy(tmp, rules, extra=""):
    path = os.path.join(tmp, "policy.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\n" + extra + "rules:" + rules)
    return path


def audited(server_factory, rules, *flags, extra=""):
    """A server logging to DIR/audit.log under a policy with `rules` (YAML text after `rules:`)."""
    tmp = tempfile.mkdtemp(prefix="flotilla-audit-")
    log = os.path.join(tmp, "audit.log")
    s = server_factory("--audit-policy-file", write_policy(tmp, rules, extra), "--audit-log-path", log, *flags)
    return s, log


def events(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_id(evs):
    out = {}
    for e in evs:
        out.setdefault(e["auditID"], []).append(e)
    return out


def kubectl_apply(s, obj):
    s.kubectl("apply", "-f", "-", input=json.dumps(obj))


def test_each_request_is_logged_once_per_stage_with_who_what_and_outcome(server_factory):
    s, log = audited(server_factory, HEALTH_NONE + "- level: Metadata\n")
    s.kubectl("create", "configmap", "audit-cm", "--from-literal=k=v")
    s.kubectl("get", "configmap", "audit-cm")
    s.kubectl("patch", "configmap", "audit-cm", "--type=merge", "-p", '{"data":{"k":"w"}}')
    s.kubectl("delete", "configmap", "audit-cm")
    s.kubectl("create", "secret", "generic", "audit-secret", "--from-literal=k=v")
    s.kubectl("get", "secret", "audit-secret")
    s.kubectl("delete", "secret", "audit-secret")
    kubectl_apply(s, deployment_manifest("audit-dep"))
    kubectl_apply(s, policy_manifest("audit-dep"))

    evs = events(log)
    assert evs, "nothing was logged"
    for e in evs:
        assert e["kind"] == "Event" and e["apiVersion"] == "audit.k8s.io/v1" and e["level"] == "Metadata", e
        assert "requestObject" not in e and "responseObject" not in e, e
        assert not e["requestURI"].startswith(("/readyz", "/healthz", "/livez")), e
    groups = by_id(evs)
    seen = set()
    for aid, group in groups.items():
        stages = [e["stage"] for e in group]
        assert sorted(stages) == ["RequestReceived", "ResponseComplete"], (aid, stages)
        rr, done = sorted(group, key=lambda e: e["stage"])
        assert rr["verb"] == done["verb"] and rr["requestURI"] == done["requestURI"], group
        assert done["user"]["username"] == "admin" and "system:masters" in done["user"]["groups"], done
        assert done["sourceIPs"] == ["127.0.0.1"], done
        assert "kubectl" in done["userAgent"], done
        assert isinstance(done["responseStatus"]["code"], int), done
        assert done["annotations"]["authorization.k8s.io/decision"] == "allow", done
        assert done["requestReceivedTimestamp"] <= done["stageTimestamp"], done
        assert "responseStatus" not in rr, rr
        ref = done.get("objectRef")
        if ref:
            seen.add((done["verb"], ref.get("apiGroup", ""), ref["resource"], ref.get("name", ""),
                      done["responseStatus"]["code"]))
    for want in [("create", "", "configmaps", "audit-cm", 201), ("get", "", "configmaps", "audit-cm", 200),
                 ("patch", "", "configmaps", "audit-cm", 200), ("delete", "", "configmaps", "audit-cm", 200),
                 ("create", "", "secrets", "audit-secret", 201), ("get", "", "secrets", "audit-secret", 200),
                 ("delete", "", "secrets", "audit-secret", 200),
                 ("create", "apps", "deployments", "audit-dep", 201),
                 ("create", "policy.karmada.io", "propagationpolicies", "audit-dep", 201)]:
        assert want in seen, (want, sorted(seen))
    ref = next(e["objectRef"] for e in evs if e.get("objectRef", {}).get("resource") == "deployments")
    assert ref["namespace"] == "default" and ref["apiVersion"] == "v1", ref


def test_secret_data_is_never_logged_even_with_a_request_response_catch_all(server_factory):
    s, log = audited(server_factory, "\n- level: RequestResponse\n")
    plain = "tr0ub4dor-audit-value"
    s.kubectl("create", "secret", "generic", "hidden", f"--from-literal=password={plain}")
    s.kubectl("get", "secret", "hidden", "-o", "json")
    s.kubectl("get", "secrets", "-o", "json")
    code, _ = s.curl("PUT", "/api/v1/namespaces/default/secrets/hidden",
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hidden", "namespace": "default"},
                      "stringData": {"password": plain}})
    assert code == 200
    s.kubectl("patch", "secret", "hidden", "--type=merge", "-p", json.dumps({"stringData": {"other": plain}}))
    # a Secret carried inside another object: a Work's manifests
    s.kubectl("create", "namespace", "karmada-es-audit")
    work = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "carries-secret", "namespace": "karmada-es-audit"},
            "spec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "inner", "namespace": "default"},
                 "stringData": {"password": plain}}]}}}
    kubectl_apply(s, work)
    s.kubectl("get", "work", "-n", "karmada-es-audit", "carries-secret", "-o", "json")
    # the same request at RequestResponse does log a ConfigMap's data: the rule does apply
    s.kubectl("create", "configmap", "visible", "--from-literal=shown=cm-audit-value")

    with open(log) as f:
        text = f.read()
    b64 = base64.b64encode(plain.encode()).decode()
    assert plain not in text and b64 not in text, "a Secret's data reached the audit log"
    assert "cm-audit-value" in text
    evs = events(log)
    secret_evs = [e for e in evs if e.get("objectRef", {}).get("resource") == "secrets"]
    assert secret_evs and all(e["level"] == "Metadata" for e in secret_evs), secret_evs
    work_done = [e for e in evs if e.get("objectRef", {}).get("resource") == "works" and e["stage"] == "ResponseComplete"]
    assert any("requestObject" in e for e in work_done), work_done
    assert any("responseObject" in e for e in work_done), work_done


def test_none_rules_drop_events_and_the_first_matching_rule_wins(server_factory):
    rules = HEALTH_NONE + """
- level: None
  resources: [{group: "", resources: ["configmaps"]}]
- level: Request
  verbs: ["create"]
  resources: [{group: "", resources: ["namespaces"]}]
- level: Metadata
"""
    s, log = audited(server_factory, rules)
    s.kubectl("create", "configmap", "dropped", "--from-literal=a=b")
    s.kubectl("get", "configmap", "dropped")
    s.kubectl("create", "namespace", "audit-kept")
    s.kubectl("get", "namespace", "audit-kept")
    evs = events(log)
    assert not [e for e in evs if e.get("objectRef", {}).get("resource") == "configmaps"], "a None rule was ignored"
    ns = [e for e in evs if e.get("objectRef", {}).get("resource") == "namespaces"]
    creates = [e for e in ns if e["verb"] == "create" and e["stage"] == "ResponseComplete"]
    gets = [e for e in ns if e["verb"] == "get" and e["stage"] == "ResponseComplete"]
    assert creates and all(e["level"] == "Request" for e in creates), creates
    assert any(e["requestObject"]["metadata"]["name"] == "audit-kept" for e in creates), creates
    assert gets and all(e["level"] == "Metadata" for e in gets), gets


def test_refused_and_missing_requests_are_logged_with_their_code(server_factory):
    s, log = audited(server_factory, HEALTH_NONE + "- level: Metadata\n")
    with open(os.path.join(s.data_dir, "pki", "bootstrap.token")) as f:
        bootstrap = f.read().strip()
    code, _ = s.curl("GET", "/api/v1/namespaces/default/configmaps", auth=False,
                     headers=[f"Authorization: Bearer {bootstrap}"])
    assert code == 403
    code, _ = s.curl("GET", "/api/v1/namespaces/default/configmaps/not-there")
    assert code == 404
    code, _ = s.curl("GET", "/api/v1/namespaces", auth=False, headers=["Authorization: Bearer wrong-token"])
    assert code == 401
    every = events(log)
    evs = [e for e in every if e["stage"] != "RequestReceived"]
    forbidden = [e for e in evs if e["responseStatus"]["code"] == 403]
    assert len(forbidden) == 1, forbidden
    f = forbidden[0]
    assert f["user"]["username"] == "system:bootstrap" and f["verb"] == "list", f
    assert f["objectRef"]["resource"] == "configmaps" and f["responseStatus"]["reason"] == "Forbidden", f
    assert f["annotations"]["authorization.k8s.io/decision"] == "forbid", f
    missing = [e for e in evs if e["responseStatus"]["code"] == 404]
    assert len(missing) == 1 and missing[0]["objectRef"]["name"] == "not-there", missing
    assert missing[0]["responseStatus"]["reason"] == "NotFound", missing
    refused = [e for e in evs if e["responseStatus"]["code"] == 401]
    assert len(refused) == 1 and refused[0]["stage"] == "ResponseStarted" and refused[0]["user"] == {}, refused
    # as kube-apiserver logs a failed authentication: that one event, no RequestReceived
    assert len([e for e in every if e["auditID"] == refused[0]["auditID"]]) == 1, refused


def test_an_impersonating_request_names_who_asked_and_whom_they_acted_as(server_factory):
    s, log = audited(server_factory, HEALTH_NONE + "- level: Metadata\n")
    r = s.kubectl("get", "configmaps", "-n", "default", "--as", "bob", "--as-group", "team-b", check=False)
    assert 'User "bob" cannot list resource "configmaps"' in r.stderr, r.stderr
    evs = [e for e in events(log) if e["stage"] == "ResponseComplete" and e.get("objectRef", {}).get("resource")
           == "configmaps" and e["verb"] == "list"]
    assert len(evs) == 1, evs
    e = evs[0]
    assert e["user"]["username"] == "admin", e
    assert e["impersonatedUser"]["username"] == "bob", e
    assert "team-b" in e["impersonatedUser"]["groups"], e
    assert e["responseStatus"]["code"] == 403, e


def test_audit_id_header_names_the_events_and_a_watch_has_three_stages(server_factory):
    s, log = audited(server_factory, HEALTH_NONE + "- level: Metadata\n")
    status, headers, _ = s.http("GET", "/api/v1/namespaces/default/configmaps")
    assert status == 200
    aid = headers["audit-id"]
    mine = [e for e in events(log) if e["auditID"] == aid]
    assert [e["stage"] for e in mine] == ["RequestReceived", "ResponseComplete"], mine
    assert mine[1]["verb"] == "list" and mine[1]["requestURI"] == "/api/v1/namespaces/default/configmaps", mine
    code, _ = s.curl("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")
    assert code == 200

    def watch_events():
        w = [e for e in events(log) if e["verb"] == "watch"]
        return w if len(w) == 3 else None
    w = wait_for(watch_events, timeout=10, what="the watch's three events")
    assert [e["stage"] for e in w] == ["RequestReceived", "ResponseStarted", "ResponseComplete"], w
    assert len({e["auditID"] for e in w}) == 1 and w[2]["responseStatus"]["code"] == 200, w


def test_the_log_rotates_past_maxsize_and_keeps_maxbackup_files(server_factory):
    s, log = audited(server_factory, HEALTH_NONE + "- level: RequestResponse\n",
                     "--audit-log-maxsize", "1", "--audit-log-maxbackup", "2")
    big = "x" * 200_000
    code, _ = s.curl("POST", "/api/v1/namespaces/default/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": big}})
    assert code == 201
    for _ in range(20):  # each get logs the 200 kB object in its ResponseComplete: 4 MB in all
        code, _ = s.curl("GET", "/api/v1/namespaces/default/configmaps/big")
        assert code == 200
    d, name = os.path.split(log)
    backups = sorted(glob.glob(os.path.join(d, "audit-*.log")))
    assert len(backups) == 2, backups
    for path in backups + [log]:
        assert os.path.getsize(path) <= 1 << 20, (path, os.path.getsize(path))
        with open(path) as f:
            for line in f:
                json.loads(line)  # whole events only: none cut at a rotation


def test_without_a_policy_nothing_is_logged_as_kube_apiserver(server_factory):
    tmp = tempfile.mkdtemp(prefix="flotilla-audit-")
    log = os.path.join(tmp, "audit.log")
    s = server_factory("--audit-log-path", log)
    s.kubectl("create", "configmap", "unlogged", "--from-literal=a=b")
    assert events(log) == []
    assert "no audit policy file" in s.log()


@pytest.mark.parametrize("body,where", [
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadat\n", "rules[0].level"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Done]\n",
     "rules[0].omitStages[0]"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: [\"/a\"]\n"
     "  namespaces: [\"x\"]\n", "rules[0].nonResourceURLs"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [\n", "line "),
    ("apiVersion: v1\nkind: Policy\nrules:\n- level: None\n", "apiVersion"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n", "rules"),
])
def test_a_malformed_policy_stops_the_server_with_one_line(body, where):
    tmp = tempfile.mkdtemp(prefix="flotilla-audit-")
    path = os.path.join(tmp, "bad-policy.yaml")
    with open(path, "w") as f:
        f.write(body)
    r = subprocess.run([BIN, "server", "--data-dir", os.path.join(tmp, "d"), "--listen", "127.0.0.1:0",
                        "--audit-policy-file", path, "--audit-log-path", os.path.join(tmp, "a.log")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert path in lines[0] and where in lines[0], lines[0]
    assert not os.path.exists(os.path.join(tmp, "d", "store.db")), "the server went on after the bad policy"


def test_the_audit_log_adds_no_thread(server_factory):
    """Events are written by the requests' own threads: a server that logged a burst of
    concurrent requests idles at the same threads as before the burst."""
    from concurrent.futures import ThreadPoolExecutor
    s, log = audited(server_factory, HEALTH_NONE + "- level: Metadata\n")
    tasks = lambda: len(os.listdir(f"/proc/{s.proc.pid}/task"))
    idle = idle_threads(s.proc.pid)
    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(lambda i: s.curl("GET", f"/api/v1/namespaces/default/configmaps/x{i}")[0], range(64)))
    assert codes == [404] * 64
    assert len([e for e in events(log) if e["stage"] == "ResponseComplete" and e["verb"] == "get"]) >= 64
    wait_for(lambda: tasks() <= idle, timeout=30, what=f"the server's threads back to {idle} at idle")


def test_a_log_that_cannot_be_written_fails_no_request(server_factory, tmp_path):
    """A full disk (/dev/full) loses events, not requests: they are served, the loss is
    counted in apiserver_audit_error_total and warned about once."""
    s = server_factory("--audit-policy-file", write_policy(str(tmp_path), HEALTH_NONE + "- level: Metadata\n"),
                       "--audit-log-path", "/dev/full")
    for _ in range(3):
        s.kubectl("get", "configmaps")
    code, text = s.curl("GET", "/metrics")
    assert code == 200
    lost = [line for line in text.splitlines() if line.startswith('apiserver_audit_error_total{plugin="log"}')]
    assert lost and float(lost[0].split()[-1]) >= 6, lost
    assert s.log().count("cannot write the audit log /dev/full") == 1, s.log()
