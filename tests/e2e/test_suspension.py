"""Suspending and resuming delivery, and the acknowledgement that it really stopped.

One `flotilla up` with three members: member1 and member2 in push mode, member3 in pull mode
with its agent. Everything goes through kubectl and `flotilla ctl suspend|resume`, as a user
(or a tool that pauses, then moves) would. What is pinned:
- blue to green (the issue's acceptance): a policy suspends member1; an image change reaches
  member2 only; a Deployment deleted in member1 is not re-created; resume brings member1 to
  the latest image;
- resume applies the latest desired state once (two changes while suspended: one update);
- `--wait` returns only once the executors acknowledged (Work Dispatching condition at the
  Work's generation, the binding's roll-up), for a pull member too; with the agent stopped it
  times out naming that cluster;
- status collection goes on while suspended;
- a user's suspension of a binding survives the policy sync until the policy's own changes;
- unscheduling a suspended cluster removes nothing until resumed;
- a binding with scheduling suspended keeps its clusters until that is lifted;
- pausing a whole cluster, acknowledged by its Paused condition;
- events on the template, the binding and the Work; bad input gives one line and exit 2.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import running_fleet, wait_for


@pytest.fixture(scope="module")
def fleet():
    with running_fleet(members=3, pull=1) as f:
        yield f


def deployment(name, image="nginx:1.25", replicas=2):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


def policy(name, clusters, **extra):
    spec = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": {"clusterAffinity": {"clusterNames": clusters},
                          "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}
    spec.update(extra)
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def image_in(fleet, name, member):
    d = fleet.get("deploy", name, member=member)
    return d["spec"]["template"]["spec"]["containers"][0]["image"] if d else None


def condition(obj, ctype):
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return c
    return None


def work_of(fleet, name, member):
    return fleet.get("work", "-n", f"karmada-es-{member}", "-l",
                     "resourcebinding.karmada.io/permanent-id=" + binding(fleet, name)["metadata"]["labels"][
                         "resourcebinding.karmada.io/permanent-id"])["items"][0]


def binding(fleet, name):
    return fleet.get("rb", f"{name}-deployment")


def set_image(fleet, name, image):
    fleet.kubectl("set", "image", f"deploy/{name}", f"app={image}")


def start(fleet, name, clusters):
    fleet.apply([deployment(name), policy(name, clusters)])
    wait_for(lambda: all(image_in(fleet, name, m) == "nginx:1.25" for m in clusters), timeout=30,
             what=f"{name} in {clusters}")


def events(fleet, ns, reason):
    r = fleet.get("events", "-n", ns, "--field-selector", f"reason={reason}")
    return [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["message"]) for e in r["items"]]


def cleanup(fleet, name):
    fleet.ctl("resume", "policy", name)
    fleet.delete("deploy", name)
    fleet.delete("pp", name)


def test_blue_to_green_through_the_policy(fleet):
    """The acceptance: suspend member1 through the policy; member2 updates, member1 does not;
    a deletion in member1 is not repaired while suspended; resume converges member1."""
    start(fleet, "bg", ["member1", "member2"])
    r = fleet.ctl("suspend", "policy", "bg", "--clusters", "member1", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    assert "acknowledged by 2 clusters" in r.stdout, r.stdout

    # the acknowledgement is on the objects: the Work of member1 at its generation, the binding
    w1 = work_of(fleet, "bg", "member1")
    c = condition(w1, "Dispatching")
    assert w1["spec"].get("suspendDispatching") is True
    assert (c["status"], c["reason"], c["observedGeneration"]) == ("False", "SuspendDispatching",
                                                                  w1["metadata"]["generation"])
    assert condition(work_of(fleet, "bg", "member2"), "Dispatching")["status"] == "True"
    b = binding(fleet, "bg")
    rc = condition(b, "Dispatching")
    assert (rc["status"], rc["reason"], rc["observedGeneration"]) == ("False", "SuspendDispatching",
                                                                     b["metadata"]["generation"]), rc
    assert "1/2 target clusters" in rc["message"], rc

    set_image(fleet, "bg", "nginx:1.27")
    wait_for(lambda: image_in(fleet, "bg", "member2") == "nginx:1.27", timeout=20, what="member2 to update")
    time.sleep(1.5)  # member1 had every chance to update too
    assert image_in(fleet, "bg", "member1") == "nginx:1.25"
    # the Work carries the new image; only delivery is held
    w1 = work_of(fleet, "bg", "member1")
    assert w1["spec"]["workload"]["manifests"][0]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"

    fleet.kubectl("delete", "deploy", "bg", member="member1")
    time.sleep(2.0)
    assert fleet.get("deploy", "bg", member="member1") is None, "re-created while suspended"

    r = fleet.ctl("resume", "policy", "bg", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    # --wait returned after the executor applied the resumed generation
    assert image_in(fleet, "bg", "member1") == "nginx:1.27"
    assert image_in(fleet, "bg", "member2") == "nginx:1.27"
    b = binding(fleet, "bg")
    assert condition(b, "Dispatching")["status"] == "True"
    assert "spec" in b and "suspension" not in b["spec"]

    # events for the suspension and the resume: template, binding, Work
    sus = events(fleet, "default", "DispatchingSuspended")
    res = events(fleet, "default", "DispatchingResumed")
    assert ("Deployment", "bg") in [(k, n) for k, n, _ in sus] and ("ResourceBinding", "bg-deployment") in [
        (k, n) for k, n, _ in sus], sus
    assert ("Deployment", "bg") in [(k, n) for k, n, _ in res], res
    wev = events(fleet, "karmada-es-member1", "WorkDispatching")
    assert any("suspended" in m for _, _, m in wev) and any("being dispatched" in m for _, _, m in wev), wev
    cleanup(fleet, "bg")


def test_resume_applies_the_latest_state_once(fleet):
    """Two changes while suspended: after resume the member's object moved one generation,
    straight to the last image."""
    start(fleet, "once", ["member1"])
    before = fleet.get("deploy", "once", member="member1")["metadata"]["generation"]
    assert fleet.ctl("suspend", "policy", "once", "--wait").returncode == 0
    set_image(fleet, "once", "nginx:1.26")
    set_image(fleet, "once", "nginx:1.27")
    time.sleep(1.0)
    assert fleet.get("deploy", "once", member="member1")["metadata"]["generation"] == before
    r = fleet.ctl("resume", "policy", "once", "--wait")
    assert r.returncode == 0, r.stderr
    d = fleet.get("deploy", "once", member="member1")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert d["metadata"]["generation"] == before + 1
    cleanup(fleet, "once")


def agent_pid(fleet):
    out = subprocess.run(["pgrep", "-f", f"agent.*{fleet.dir}.*member3|agent.*member3.*{fleet.dir}"],
                         capture_output=True, text=True).stdout.split()
    assert out, "the agent of member3 is not running"
    return int(out[0])


def test_pull_member_acknowledges_and_a_stopped_agent_times_out(fleet):
    start(fleet, "pull", ["member2", "member3"])
    r = fleet.ctl("suspend", "policy", "pull", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    w3 = work_of(fleet, "pull", "member3")
    c = condition(w3, "Dispatching")
    assert (c["status"], c["observedGeneration"]) == ("False", w3["metadata"]["generation"])
    assert fleet.ctl("resume", "policy", "pull", "--wait", "--timeout", "20s").returncode == 0
    # the agent's acknowledgements show as WorkDispatching events on its Work (recorded by
    # the control plane as it sees them), the suspension and the resume
    wname = w3["metadata"]["name"]
    wait_for(lambda: {m.split(":")[0] for k, n, m in events(fleet, "karmada-es-member3", "WorkDispatching")
                  if (k, n) == ("Work", wname)} >= {"Work dispatching is suspended",
                                                    "Work is being dispatched to the member cluster."},
         timeout=20, what="WorkDispatching events on member3's Work")

    pid = agent_pid(fleet)
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = fleet.ctl("suspend", "policy", "pull", "--wait", "--timeout", "2s")
        took = time.monotonic() - t0
        assert r.returncode == 1, (r.stdout, r.stderr)
        last = r.stderr.strip().splitlines()[-1]
        assert "timed out" in last and "member3" in last and "member2" not in last, r.stderr
        assert 1.5 < took < 10, took
        assert "waiting for 1 of 2 clusters to acknowledge: member3" in r.stderr, r.stderr  # progress
    finally:
        os.kill(pid, signal.SIGCONT)
    # once the agent runs again it acknowledges, and --wait says so
    r = fleet.ctl("suspend", "policy", "pull", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    cleanup(fleet, "pull")


def work_reads(fleet):
    """How many requests have read Works (get, list or watch) so far, from /metrics."""
    text = fleet.kubectl("get", "--raw", "/metrics").stdout
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("flotilla_apiserver_request_total{") and 'resource="works"' in line
               and re.search(r'verb="(GET|LIST|WATCH)"', line))


def test_waiting_on_a_policy_reads_the_bindings_roll_up(fleet):
    """--wait answers from the binding's roll-up, which the control plane writes as soon as the
    last cluster acknowledged: a quick wait reads no Work (only a slow one reads them, to name
    the clusters it waits for)."""
    start(fleet, "roll", ["member1", "member3"])
    quick = 0
    for verb, reason in [("suspend", "SuspendDispatching"), ("resume", "Dispatching")] * 2:
        before = work_reads(fleet)
        r = fleet.ctl(verb, "policy", "roll", "--wait", "--timeout", "20s")
        after = work_reads(fleet)
        assert r.returncode == 0, r.stderr
        took = float(re.search(r"acknowledged by 2 clusters in ([0-9.]+)s", r.stdout).group(1))
        b = binding(fleet, "roll")
        c = condition(b, "Dispatching")
        assert (c["reason"], c["observedGeneration"]) == (reason, b["metadata"]["generation"]), c
        for m in ["member1", "member3"]:
            w = work_of(fleet, "roll", m)
            wc = condition(w, "Dispatching")
            assert (wc["reason"], wc["observedGeneration"]) == (reason, w["metadata"]["generation"]), (m, wc)
        if took < 0.9:  # it never needed the Works' names
            quick += 1
            assert after == before, r.stdout
    assert quick, "no --wait finished within 0.9s"
    cleanup(fleet, "roll")


def test_status_collection_goes_on_while_suspended(fleet):
    start(fleet, "stat", ["member2"])
    assert fleet.ctl("suspend", "work", work_of(fleet, "stat", "member2")["metadata"]["name"], "-n",
                     "karmada-es-member2", "--wait").returncode == 0
    # the member's own controller scales it: the Work reports it, and nothing is rewritten
    fleet.patch("deploy", "stat", patch={"spec": {"replicas": 5}}, member="member2")

    def reported():
        ms = work_of(fleet, "stat", "member2")["status"].get("manifestStatuses", [])
        return ms and ms[0].get("status", {}).get("readyReplicas") == 5
    wait_for(reported, timeout=20, what="the Work to report 5 ready replicas")
    assert fleet.get("deploy", "stat", member="member2")["spec"]["replicas"] == 5
    # the binding re-renders the Work for a template change: the user's suspension stays
    set_image(fleet, "stat", "nginx:1.31")
    wait_for(lambda: work_of(fleet, "stat", "member2")["spec"]["workload"]["manifests"][0]["spec"]["template"]["spec"]
             ["containers"][0]["image"] == "nginx:1.31", timeout=20, what="the Work to carry the new image")
    w = work_of(fleet, "stat", "member2")
    assert w["spec"].get("suspendDispatching") is True, "the binding controller undid the user's suspension"
    time.sleep(1.0)
    assert image_in(fleet, "stat", "member2") == "nginx:1.25"
    w = work_of(fleet, "stat", "member2")
    assert fleet.ctl("resume", "work", w["metadata"]["name"], "-n", "karmada-es-member2", "--wait").returncode == 0
    d = fleet.get("deploy", "stat", member="member2")  # resumed: the desired state again
    assert d["spec"]["replicas"] == 2 and d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.31"
    cleanup(fleet, "stat")


def test_binding_suspended_by_the_user_survives_policy_sync(fleet):
    start(fleet, "own", ["member1"])
    assert fleet.ctl("suspend", "binding", "own-deployment", "--wait").returncode == 0
    # a policy change that is not about suspension: the binding keeps the user's suspension
    fleet.patch("pp", "own", patch={"spec": {"conflictResolution": "Overwrite"}})
    wait_for(lambda: binding(fleet, "own")["spec"].get("conflictResolution") == "Overwrite", timeout=20,
             what="the policy change to reach the binding")
    assert binding(fleet, "own")["spec"]["suspension"] == {"dispatching": True}
    # the policy's own suspension changes: the policy's wins
    assert fleet.ctl("suspend", "policy", "own", "--clusters", "member2").returncode == 0
    wait_for(lambda: binding(fleet, "own")["spec"].get("suspension") ==
             {"dispatchingOnClusters": {"clusterNames": ["member2"]}}, timeout=20, what="the policy's suspension")
    r = fleet.ctl("resume", "policy", "own", "--wait")
    assert r.returncode == 0, r.stderr
    cleanup(fleet, "own")


def test_unscheduling_a_suspended_cluster_removes_nothing_until_resumed(fleet):
    start(fleet, "move", ["member1", "member2"])
    assert fleet.ctl("suspend", "policy", "move", "--clusters", "member1", "--wait").returncode == 0
    fleet.patch("pp", "move", patch={"spec": {"placement": {"clusterAffinity": {"clusterNames": ["member2"]}}}})
    wait_for(lambda: [c["name"] for c in binding(fleet, "move")["spec"].get("clusters", [])] == ["member2"],
             timeout=20, what="member1 to be unscheduled")
    time.sleep(1.5)
    assert fleet.get("deploy", "move", member="member1") is not None, "removed while suspended"
    assert fleet.ctl("resume", "policy", "move", "--wait").returncode == 0
    wait_for(lambda: fleet.get("deploy", "move", member="member1") is None, timeout=20,
             what="member1's copy to go after resume")
    cleanup(fleet, "move")


def test_a_binding_with_scheduling_suspended_keeps_its_clusters(fleet):
    start(fleet, "hold", ["member1"])
    fleet.patch("rb", "hold-deployment", patch={"spec": {"suspension": {"scheduling": True}}})
    fleet.patch("pp", "hold", patch={"spec": {"placement": {"clusterAffinity": {"clusterNames": ["member2"]}}}})
    # the new placement reaches the binding, but the scheduler leaves the binding alone
    wait_for(lambda: binding(fleet, "hold")["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["member2"],
             timeout=20, what="the new placement on the binding")
    time.sleep(1.5)
    assert [c["name"] for c in binding(fleet, "hold")["spec"]["clusters"]] == ["member1"], "rescheduled while suspended"
    assert fleet.get("deploy", "hold", member="member2") is None
    assert binding(fleet, "hold")["spec"]["suspension"] == {"scheduling": True}, "the policy sync undid it"
    # lifted: scheduled to the new placement, and member1's copy goes
    fleet.patch("rb", "hold-deployment", patch={"spec": {"suspension": {"scheduling": None}}})
    wait_for(lambda: [c["name"] for c in binding(fleet, "hold")["spec"].get("clusters", [])] == ["member2"],
             timeout=20, what="the binding to be scheduled to member2")
    wait_for(lambda: image_in(fleet, "hold", "member2") == "nginx:1.25" and
             fleet.get("deploy", "hold", member="member1") is None, timeout=20, what="hold to move to member2")
    cleanup(fleet, "hold")


def test_pausing_a_cluster(fleet):
    start(fleet, "pause", ["member1", "member2"])
    r = fleet.ctl("suspend", "cluster", "member2", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    cl = fleet.get("cluster", "member2")
    c = condition(cl, "Paused")
    assert (c["status"], c["observedGeneration"]) == ("True", cl["metadata"]["generation"]), c
    set_image(fleet, "pause", "nginx:1.29")
    wait_for(lambda: image_in(fleet, "pause", "member1") == "nginx:1.29", timeout=20, what="member1 to update")
    time.sleep(1.0)
    assert image_in(fleet, "pause", "member2") == "nginx:1.25"
    c = condition(work_of(fleet, "pause", "member2"), "Dispatching")
    assert (c["status"], c["reason"]) == ("False", "ClusterPaused"), c
    r = fleet.ctl("resume", "cluster", "member2", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: image_in(fleet, "pause", "member2") == "nginx:1.29", timeout=20, what="member2 to update")
    cl = fleet.get("cluster", "member2")
    assert condition(cl, "Paused")["status"] == "False"
    cleanup(fleet, "pause")


def test_pausing_a_pull_cluster_is_acknowledged_by_its_agent(fleet):
    start(fleet, "ppause", ["member3"])
    r = fleet.ctl("suspend", "cluster", "member3", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    cl = fleet.get("cluster", "member3")
    c = condition(cl, "Paused")
    assert (c["status"], c["observedGeneration"]) == ("True", cl["metadata"]["generation"]), c
    set_image(fleet, "ppause", "nginx:1.30")
    wait_for(lambda: condition(work_of(fleet, "ppause", "member3"), "Dispatching")["reason"] == "ClusterPaused",
             timeout=20, what="the agent to acknowledge the new generation as paused")
    assert image_in(fleet, "ppause", "member3") == "nginx:1.25"
    r = fleet.ctl("resume", "cluster", "member3", "--wait", "--timeout", "20s")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: image_in(fleet, "ppause", "member3") == "nginx:1.30", timeout=20, what="member3 to update")
    cleanup(fleet, "ppause")


@pytest.mark.parametrize("args,needle", [
    (["suspend"], "what to act on is required"),
    (["suspend", "gadget", "x"], 'unknown kind "gadget"'),
    (["suspend", "policy"], "policy needs a NAME"),
    (["suspend", "work", "w", "--clusters", "a"], "--clusters is for policies and bindings"),
    (["resume", "cluster", "c", "-n", "x"], "cluster-scoped"),
    (["suspend", "policy", "p", "--timeout", "soon"], "--timeout soon"),
    (["suspend", "policy", "p", "--bogus"], "unknown flag --bogus"),
])
def test_bad_input_is_one_line_and_exit_2(fleet, args, needle):
    r = fleet.ctl(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_missing_object_is_one_line_and_exit_1(fleet):
    r = fleet.ctl("suspend", "policy", "no-such-policy")
    assert r.returncode == 1
    assert r.stderr.strip() == ('flotilla ctl suspend: propagationpolicy.policy.karmada.io "no-such-policy" not found '
                                'in namespace default'), r.stderr
