"""`flotilla ctl status` end to end on `flotilla up` (docs/status.md, "flotilla ctl status"): the
table of bindings from their status.summary, the drill-down per cluster (--cluster, --state) from
the bindings' Works, -o json|yaml, --wait's exit status, --watch printing a change and ending on
SIGTERM, and one readable line with exit 2 for each mistake.

A copy is made to fail with the simulator's fake image: an OverridePolicy points member2's copy at
the `fake.io` registry, whose images never pull, and a 3 s progressDeadlineSeconds turns it
Failed (ProgressDeadlineExceeded) soon after.
"""
import json
import queue
import signal
import subprocess
import threading

import yaml

from conftest import BIN, deployment_manifest, fake_image_override, policy_manifest, running_fleet, wait_for

WAIT = 60


def rows(stdout):
    """The table's lines split into cells (kubectl's layout: cells never hold two spaces)."""
    return [[c.strip() for c in line.split("  ") if c.strip()] for line in stdout.splitlines()]


def status(fleet, *args, timeout=60):
    return fleet.ctl("status", *args, timeout=timeout)


def row_of(fleet, ref, *args):
    """The row of template ref (e.g. deployment/web) in `ctl status ref`, or None."""
    r = status(fleet, ref, *args)
    assert r.returncode == 0, r.stderr
    t = rows(r.stdout)
    return next((x for x in t[1:] if x[0] == ref), None)


def cleanup(fleet, name):
    fleet.delete("overridepolicy", f"{name}-fake")
    fleet.delete("deploy", name)
    fleet.delete("pp", name)


HEADER = ["NAME", "STATE", "CURRENT", "PROGRESS", "FAILED", "IN-PROGRESS", "UNKNOWN", "AGE", "NOT CURRENT"]


def test_current_on_two_members(fleet):
    name = "st-ok"
    fleet.apply([policy_manifest(name, ["member1", "member2"]), deployment_manifest(name)])
    try:
        row = wait_for(lambda: (x := row_of(fleet, f"deployment/{name}")) and x[1] == "Current" and x,
                       timeout=WAIT, what="Current on both members")
        assert row[2:7] == ["2/2", "[##########]", "0", "0", "0"], row
        assert row[8] == "<none>", row
        r = status(fleet, f"deployment/{name}")
        assert r.returncode == 0 and rows(r.stdout)[0] == HEADER, r.stdout
        # every spelling kubectl takes, and the namespace's whole table, show it
        for spelled in ("Deployment", "deploy", "deployments.apps"):
            r = status(fleet, f"{spelled}/{name}", "-n", "default")
            assert r.returncode == 0 and [x[:2] for x in rows(r.stdout)[1:]] == [[f"deployment/{name}", "Current"]], \
                (spelled, r.stdout, r.stderr)
        r = status(fleet)
        assert r.returncode == 0 and any(x[0] == f"deployment/{name}" for x in rows(r.stdout)[1:]), r.stdout
        # -A: a NAMESPACE column first
        r = status(fleet, "-A")
        assert r.returncode == 0 and rows(r.stdout)[0] == ["NAMESPACE"] + HEADER, r.stdout
        assert ["default", f"deployment/{name}", "Current", "2/2"] in [x[:4] for x in rows(r.stdout)[1:]], r.stdout
        # everything selected is Current: --wait returns at once, 0
        r = status(fleet, f"deployment/{name}", "--wait", "--timeout", "30s")
        assert r.returncode == 0, r.stderr
        assert rows(r.stdout)[1][:3] == [f"deployment/{name}", "Current", "2/2"], r.stdout
        # per cluster: both Current
        r = status(fleet, f"deployment/{name}", "--state", "Current")
        assert r.returncode == 0, r.stderr
        assert [x[:3] for x in rows(r.stdout)] == [["NAME", "CLUSTER", "STATE"],
                                                    [f"deployment/{name}", "member1", "Current"],
                                                    [f"deployment/{name}", "member2", "Current"]], r.stdout
    finally:
        cleanup(fleet, name)


def test_a_failed_cluster_is_named_with_its_reason(fleet):
    name = "st-stuck"
    ref = f"deployment/{name}"
    fleet.apply([policy_manifest(name, ["member1", "member2"]), fake_image_override(name, ["member2"]),
                 deployment_manifest(name)])
    try:
        row = wait_for(lambda: (x := row_of(fleet, ref)) and x[1] == "Failed" and x, timeout=WAIT,
                       what="Failed on member2")
        assert row[2:7] == ["1/2", "[#####.....]", "1", "0", "0"], row
        assert row[8] == "member2 Failed (ProgressDeadlineExceeded)", row

        # --state Failed: the cluster, its reason and message, read from the Works
        r = status(fleet, ref, "--state", "Failed")
        assert r.returncode == 0, r.stderr
        t = rows(r.stdout)
        assert t[0] == ["NAME", "CLUSTER", "STATE", "REASON", "MESSAGE"], r.stdout
        assert len(t) == 2 and t[1][:4] == [ref, "member2", "Failed", "ProgressDeadlineExceeded"], r.stdout
        assert "timed out progressing" in t[1][4], r.stdout
        # the state as typed in any case; without KIND, every binding of the namespace
        r = status(fleet, "--state", "failed")
        assert r.returncode == 0 and [x[:3] for x in rows(r.stdout)[1:] if x[0] == ref] == \
            [[ref, "member2", "Failed"]], r.stdout
        # --cluster: that cluster's state of each binding
        r = status(fleet, ref, "--cluster", "member1")
        assert r.returncode == 0 and rows(r.stdout)[1][:3] == [ref, "member1", "Current"], r.stdout
        j = status(fleet, ref, "--state", "Failed", "-o", "json")
        assert j.returncode == 0, j.stderr
        recs = json.loads(j.stdout)["items"]
        assert [(x["cluster"], x["state"], x["reason"]) for x in recs] == \
            [("member2", "Failed", "ProgressDeadlineExceeded")], recs
        assert recs[0]["binding"]["name"] == f"{name}-deployment", recs

        # the summaries as a List
        j = status(fleet, ref, "-o", "json")
        assert j.returncode == 0, j.stderr
        doc = json.loads(j.stdout)
        assert doc["kind"] == "List" and len(doc["items"]) == 1, doc
        item = doc["items"][0]
        assert item["kind"] == "ResourceBinding" and item["metadata"]["name"] == f"{name}-deployment", item
        s = item["status"]["summary"]
        assert (s["state"], s["desired"], s["current"], s["failed"]) == ("Failed", 2, 1, 1), s
        assert [(n["cluster"], n["reason"]) for n in s["notCurrent"]] == [("member2", "ProgressDeadlineExceeded")]
        y = status(fleet, ref, "-o", "yaml")
        assert y.returncode == 0, y.stderr
        assert yaml.safe_load(y.stdout)["items"][0]["status"]["summary"]["state"] == "Failed", y.stdout

        # without --wait the status was read: 0, whatever it says (as kubectl get)
        assert status(fleet, ref).returncode == 0
        # --wait: not Current by the timeout, exit 1 with one line naming what and where
        r = status(fleet, ref, "--wait", "--timeout", "5s")
        assert r.returncode == 1, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "timed out after 5s" in lines[0], r.stderr
        assert ref in lines[0] and "member2 Failed (ProgressDeadlineExceeded)" in lines[0], r.stderr
        assert rows(r.stdout)[1][:2] == [ref, "Failed"], r.stdout
    finally:
        cleanup(fleet, name)


def test_watch_prints_a_change_and_ends_on_sigterm(fleet):
    name = "st-watch"
    ref = f"deployment/{name}"
    fleet.apply([policy_manifest(name, ["member1", "member2"]), deployment_manifest(name)])
    wait_for(lambda: (x := row_of(fleet, ref)) and x[1] == "Current", timeout=WAIT, what="Current first")
    p = subprocess.Popen([BIN, "ctl", "--kubeconfig", fleet.kubeconfig, "status", ref, "--watch"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stdout], daemon=True).start()

    def next_row(timeout):
        return rows(lines.get(timeout=timeout))[0]
    try:
        assert next_row(30) == HEADER
        assert next_row(30)[:3] == [ref, "Current", "2/2"]
        fleet.apply(fake_image_override(name, ["member2"]))
        # each change is a new row; the copy on member2 goes through InProgress to Failed
        seen = []
        while not seen or seen[-1][1] != "Failed":
            seen.append(next_row(WAIT))
        assert all(x[0] == ref for x in seen), seen
        assert seen[-1][2] == "1/2" and seen[-1][8] == "member2 Failed (ProgressDeadlineExceeded)", seen
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=15) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=15)
        cleanup(fleet, name)


def test_a_cluster_scoped_template_is_read_from_its_cluster_resource_binding(fleet):
    name = "gizmos.st-cli.example.io"
    ref = f"customresourcedefinition/{name}"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
           "spec": {"group": "st-cli.example.io", "scope": "Namespaced",
                    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    cpp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
           "metadata": {"name": "st-gizmos"},
           "spec": {"resourceSelectors": [{"apiVersion": "apiextensions.k8s.io/v1",
                                           "kind": "CustomResourceDefinition", "name": name}],
                    "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}}
    fleet.apply([crd, cpp])
    try:
        row = wait_for(lambda: (x := row_of(fleet, ref)) and x[1] == "Current" and x,
                       timeout=WAIT, what="the CRD Current on both members")
        assert row[2] == "2/2", row
        # -A reads ClusterResourceBindings too (no namespace); one namespace's table does not
        j = status(fleet, "-A", "-o", "json")
        assert j.returncode == 0, j.stderr
        items = [i for i in json.loads(j.stdout)["items"] if i["spec"]["resource"]["name"] == name]
        assert [(i["kind"], "namespace" in i["metadata"], i["status"]["summary"]["state"]) for i in items] == \
            [("ClusterResourceBinding", False, "Current")], items
        r = status(fleet)
        assert ref not in r.stdout, r.stdout
        r = status(fleet, f"crd/{name}", "--cluster", "member2")
        assert r.returncode == 0 and rows(r.stdout)[1][:3] == [ref, "member2", "Current"], r.stdout
    finally:
        fleet.delete("clusterpropagationpolicy", "st-gizmos")
        fleet.delete("crd", name)


def test_state_lists_every_cluster_not_only_the_twenty_the_summary_names():
    """23 of 26 copies Failed: the summary names 20 (truncated), the table counts the rest, and
    --state Failed reads all 23 from the Works, page by page."""
    members = [f"member{i}" for i in range(1, 27)]
    failing = members[3:]
    name = "st-many"
    ref = f"deployment/{name}"
    with running_fleet(members=26) as big:
        big.apply([policy_manifest(name, members), fake_image_override(name, failing), deployment_manifest(name)])
        row = wait_for(lambda: (x := row_of(big, ref)) and x[4] == "23" and x, timeout=180,
                       what="23 Failed of 26")
        assert row[1:3] == ["Failed", "3/26"], row
        assert row[8].endswith(" + 20 more..."), row  # three named, 20 more of the 23
        summary = json.loads(status(big, ref, "-o", "json").stdout)["items"][0]["status"]["summary"]
        assert len(summary["notCurrent"]) == 20 and summary["truncated"] is True, summary

        def failed(*args):
            r = status(big, ref, "--state", "Failed", *args)
            assert r.returncode == 0, r.stderr
            t = rows(r.stdout)
            assert all(x[2:4] == ["Failed", "ProgressDeadlineExceeded"] for x in t[1:]), r.stdout
            return [x[1] for x in t[1:]]
        everyone = failed()
        assert sorted(everyone) == sorted(failing), everyone
        assert everyone == sorted(everyone), everyone  # by cluster name
        assert failed("--chunk-size", "4") == everyone  # six pages of Works
        r = status(big, ref, "--state", "Current", "--chunk-size", "1")
        assert r.returncode == 0 and sorted(x[1] for x in rows(r.stdout)[1:]) == sorted(members[:3]), r.stdout
        r = status(big, ref, "--state", "InProgress")
        assert r.returncode == 0 and r.stdout == "", r.stdout
        assert r.stderr.strip() == "No clusters in state InProgress of the 1 binding selected.", r.stderr


def test_a_template_without_a_binding_and_bad_input(fleet):
    r = status(fleet, "deployment/st-nothing")
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr.strip() == 'flotilla ctl status: Deployment "st-nothing" not found in namespace default', r.stderr
    r = status(fleet, "gadgets/x")
    assert r.returncode == 1 and r.stderr.strip() == \
        'flotilla ctl status: the server has no resource type "gadgets"', r.stderr
    r = status(fleet, "--cluster", "no-such-member")
    assert r.returncode == 1 and r.stderr.strip() == 'flotilla ctl status: cluster "no-such-member" not found'

    bad = {("--state", "Broken"): "--state Broken: expected Current, InProgress, Failed, Terminating, NotFound "
                                  "or Unknown",
           ("--wait", "--timeout", "soon"): "--timeout soon: expected a duration",
           ("--colour",): "unknown flag --colour",
           ("-o", "xml"): "-o xml: expected yaml or json",
           ("-n", "default", "-A"): "-n and -A (--all-namespaces) exclude each other",
           ("--timeout", "5s"): "--timeout 5s is for --wait and --watch",
           ("--chunk-size", "-3"): "--chunk-size -3: expected a number of items from 1 to 100000",
           ("--watch", "--state", "Failed"): "they take no --cluster or --state",
           ("deployment/a/b",): '"deployment/a/b" is not KIND or KIND/NAME',
           ("deployment", "extra"): 'unexpected argument "extra"'}
    for args, says in bad.items():
        r = status(fleet, *args)
        assert r.returncode == 2 and r.stdout == "", (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("flotilla ctl status: ") and says in lines[0], (args, r.stderr)
