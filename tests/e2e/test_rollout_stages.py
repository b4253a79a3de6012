"""Staged rollouts (issue 42, part 2; docs/rollouts.md): a RolloutStrategy takes a policy's
templates cluster group by cluster group, and the clusters not reached yet keep what they had.

One `flotilla up` with ten simulated members for the module: member1 is ring=canary, member2
and member3 ring=wave, the other seven are left to a percent stage (1:2:7). Everything goes
through kubectl and `flotilla ctl rollout`, and every claim about a member is read from that
member's own API. What is pinned:
- stage by stage: an image change reaches the canary, then (after the approval) the rest; the
  clusters not reached keep the old image on the member until their stage, their Works already
  carry the new one suspended (the hold is in the same write); an approval holds; a change
  during the rollout starts over from stage 1 and needs its own approval; `rollout status`
  and `--watch` show it; each member's Deployment changes once per delivered generation;
- a `fake` image (the simulator never pulls it) halts the rollout at the canary with the
  reason, and with onFailure: Rollback the previous revision comes back: the canary returns to
  the old image, the others never saw the bad one;
- kill -9 of the server while a stage waits: the rollout resumes in the same stage, held
  clusters stay held across the restart, and nothing is delivered twice;
- bad input is a 422 naming the field; stages that select no cluster halt with a reason.
"""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import BIN, Fleet, free_port, start_up, wait_for
from test_failover_eviction import server_pid

MEMBERS = [f"member{i}" for i in range(1, 11)]
RINGS = {"member1": "canary", "member2": "wave", "member3": "wave"}


class Up:
    """A ten-member fleet that a test may kill -9 and start again on its data directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="flotilla-rollout-")
        self.port = free_port()
        self.proc = start_up(self.dir, self.port, members=len(MEMBERS))
        self.fleet = Fleet(self.dir)

    def kill9_and_restart(self):
        os.kill(server_pid(self.proc.pid), signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.proc = start_up(self.dir, self.port, members=len(MEMBERS))

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def up():
    u = Up()
    try:
        for m, ring in RINGS.items():
            u.fleet.kubectl("label", "cluster", m, f"ring={ring}")
        yield u
    finally:
        rc = u.stop()
        log = open(os.path.join(u.dir, "server.log"), errors="replace").read()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in log, log[log.find(marker) - 200:][:4000]
        assert rc == 0, log[-3000:]


def deployment(name, image="nginx:1.25"):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


def policy(name):
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}


def strategy(name, stages, **spec):
    spec = {"policyRef": {"kind": "PropagationPolicy", "name": name}, "stages": stages, **spec}
    return {"apiVersion": "apps.flotilla.io/v1alpha1", "kind": "RolloutStrategy",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


CANARY = {"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}}}
WAVE = {"name": "wave", "clusterSelector": {"matchLabels": {"ring": "wave"}}, "approval": True}
REST = {"name": "rest", "percent": 100}  # the share of all targets: every one left


def member_deploy(f, name, m):
    return f.get("deploy", name, member=m)


def member_deploys(f, name):
    """Deployment `name` as each member has it (None: not there), read side by side."""
    with ThreadPoolExecutor(len(MEMBERS)) as pool:
        return dict(zip(MEMBERS, pool.map(lambda m: member_deploy(f, name, m), MEMBERS)))


def images(f, name):
    """Each member's image of Deployment `name`, read from the member (None: not there)."""
    return {m: d["spec"]["template"]["spec"]["containers"][0]["image"] if d else None
            for m, d in member_deploys(f, name).items()}


def generations(f, name):
    return {m: d["metadata"]["generation"] for m, d in member_deploys(f, name).items()}


def status(f, name):
    return (f.get("rolloutstrategy", name) or {}).get("status", {})


def entry(f, name):
    r = status(f, name).get("rollouts") or [{}]
    return r[0]


def start(f, name, stages, **spec):
    """Deployment `name` at nginx:1.25 everywhere, then its strategy, which takes it over
    as delivered (Completed at its generation)."""
    start_many(f, {name: (stages, spec)})


def start_many(f, strategies):
    """start() for several Deployments at once: {name: (stages, spec)}."""
    f.apply([x for name in strategies for x in (deployment(name), policy(name))])
    for name in strategies:
        wait_for(lambda: set(images(f, name).values()) == {"nginx:1.25"}, timeout=40, interval=0.3,
                 what=f"{name} on every member")
    f.apply([strategy(name, stages, **spec) for name, (stages, spec) in strategies.items()])
    for name in strategies:
        wait_for(lambda: entry(f, name).get("phase") == "Completed", timeout=20, interval=0.2,
                 what="the strategy to take the delivered template over")


def set_image(f, name, image):
    f.kubectl("set", "image", f"deploy/{name}", f"app={image}")


def wait_phase(f, name, phase, stage=None, timeout=40):
    def ok():
        e = entry(f, name)
        return e.get("phase") == phase and (stage is None or e.get("stageName") == stage) and e
    return wait_for(ok, timeout=timeout, interval=0.2, what=f"{name} {phase} {stage or ''} (now {entry(f, name)})")


def work(f, name, m):
    items = f.get("work", "-n", f"karmada-es-{m}")["items"]
    return next(w for w in items if w["metadata"]["annotations"].get("resourcebinding.karmada.io/name") ==
                f"{name}-deployment")


def events(f, name):
    r = f.get("events", "--field-selector", f"involvedObject.kind=RolloutStrategy,involvedObject.name={name}")
    return [(e["reason"], e["message"]) for e in r["items"]]


def cleanup(f, name):
    for what in ("rolloutstrategy", "deploy", "pp"):
        f.delete(what, name)


def test_bad_input_is_a_422_naming_the_field(up):
    f = up.fleet
    cases = [
        ({"stages": []}, "spec.stages: Required value"),
        ({"stages": [{"name": "a", "percent": 10, "clusterSelector": {}}]}, "spec.stages[0].percent: Forbidden"),
        ({"stages": [{"name": "a"}]}, "spec.stages[0].clusterSelector: Required value"),
        ({"stages": [{"name": "a", "percent": 10}, {"name": "b", "percent": 20}]},
         "spec.stages: Invalid value: 30: the stages' percent must add up to 100"),
        ({"stages": [{"name": "a", "percent": 100}], "onFailure": "Explode"},
         'spec.onFailure: Unsupported value: "Explode"'),
        ({"stages": [{"name": "a", "percent": 100, "soakSeconds": -1}]}, "spec.stages[0].soakSeconds: Invalid value: -1"),
        ({"stages": [{"name": "a", "percent": 50}, {"name": "a", "percent": 50}]},
         'spec.stages[1].name: Duplicate value: "a"'),
        ({"stages": [{"name": "a", "percent": 100}], "maxFailures": -2}, "spec.maxFailures: Invalid value: -2"),
    ]
    for spec, want in cases:
        s = strategy("bad", [])
        s["spec"].update(spec)
        r = f.kubectl("apply", "-f", "-", input=json.dumps(s), check=False)
        assert r.returncode != 0 and want in r.stderr, (spec, r.stderr)
    # the API answers 422 with the field in the Status's causes
    s = strategy("bad", [{"name": "a", "percent": 10}])
    r = f.kubectl("create", "--raw", "/apis/apps.flotilla.io/v1alpha1/namespaces/default/rolloutstrategies",
                  "-f", "-", input=json.dumps(s), check=False)
    assert "422" in r.stderr or "Invalid" in r.stderr, r.stderr
    assert f.get("rolloutstrategy", "bad") is None, "nothing half-written"


def test_stages_that_select_no_cluster_halt_with_a_reason(up):
    f = up.fleet
    name = "nowhere"
    f.apply([deployment(name), policy(name),
             strategy(name, [{"name": "ring0", "clusterSelector": {"matchLabels": {"ring": "nowhere"}}},
                             {"name": "rest", "percent": 100}])])
    e = wait_phase(f, name, "Halted", timeout=30)
    assert e["reason"] == "NoClusterSelected" and "stage ring0 selects no cluster" in e["message"], e
    c = next(c for c in status(f, name)["conditions"] if c["type"] == "Progressing")
    assert (c["status"], c["reason"]) == ("False", "NoClusterSelected"), c
    time.sleep(1)
    assert set(images(f, name).values()) == {None}, "a halted first delivery reached a member"
    # a cluster labelled into the stage: placed again, and the rollout goes on
    f.kubectl("label", "cluster", "member10", "ring=nowhere")
    try:
        wait_phase(f, name, "Completed", timeout=40)
        assert set(images(f, name).values()) == {"nginx:1.25"}
    finally:
        f.kubectl("label", "cluster", "member10", "ring-")
        cleanup(f, name)


def test_staged_rollout_holds_the_others_until_their_stage(up):
    f = up.fleet
    name = "web"
    start(f, name, [CANARY, WAVE, REST])
    gens = generations(f, name)
    set_image(f, name, "nginx:1.27")

    # canary then wave, and the approval holds the rest
    e = wait_phase(f, name, "WaitingForApproval", "wave")
    stage_of = {c["name"]: c["stage"] for c in e["clusters"]}
    assert [m for m in MEMBERS if stage_of[m] == "canary"] == ["member1"]
    assert sorted(m for m in MEMBERS if stage_of[m] == "wave") == ["member2", "member3"]
    assert len([m for m in MEMBERS if stage_of[m] == "rest"]) == 7
    time.sleep(1.0)  # the approval is what holds: nothing moves meanwhile
    im = images(f, name)
    assert {m: im[m] for m in ("member1", "member2", "member3")} == dict.fromkeys(
        ("member1", "member2", "member3"), "nginx:1.27"), im
    assert all(im[m] == "nginx:1.25" for m in MEMBERS[3:]), im
    # a held cluster's Work carries the new image, suspended: the hold is in that same write
    w = work(f, name, "member7")
    assert w["spec"].get("suspendDispatching") is True
    assert w["spec"]["workload"]["manifests"][0]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    r = f.ctl("rollout", "status", "deploy/web")
    assert r.returncode == 0 and "WaitingForApproval stage wave: 3/10 Current" in r.stdout, r.stdout + r.stderr
    assert re.search(r"^member7\s+rest\s+Held\s", r.stdout, re.M), r.stdout

    # a change now supersedes it from stage 1: the wave keeps 1.27 until the wave's turn
    set_image(f, name, "nginx:1.28")
    e = wait_phase(f, name, "WaitingForApproval", "wave")
    im = images(f, name)
    assert im["member1"] == "nginx:1.28" and all(im[m] == "nginx:1.25" for m in MEMBERS[3:]), im
    assert e["generation"] == 3
    r = f.ctl("rollout", "approve", "deploy/web")
    assert r.returncode == 0 and "approved stage wave" in r.stdout, r.stderr

    watch = f.ctl("rollout", "status", "deploy/web", "--watch", "--timeout", "40s")
    assert watch.returncode == 0, watch.stdout + watch.stderr
    assert "generation 3 Completed stage rest: 10/10 Current" in watch.stdout.splitlines()[-1], watch.stdout
    assert set(images(f, name).values()) == {"nginx:1.28"}
    after = generations(f, name)
    # once per generation a member was given: the canary and the wave twice, the rest once
    assert {m: after[m] - gens[m] for m in MEMBERS} == {m: 2 if m in RINGS else 1 for m in MEMBERS}, (gens, after)
    reasons = [r for r, _ in events(f, name)]
    for want in ("RolloutStarted", "ClustersReleased", "WaitingForApproval", "RolloutSuperseded", "StageCompleted",
                 "RolloutCompleted"):
        assert want in reasons, reasons
    cleanup(f, name)


def test_a_fake_image_halts_at_the_canary_or_rolls_back(up):
    """Two Deployments side by side, one per onFailure: `halt` stops at the canary with the
    reason; `rb` restores the previous revision, the canary goes back, the others never see
    the bad image."""
    f = up.fleet
    start_many(f, {"halt": ([CANARY, REST], {"progressDeadlineSeconds": 3}),
                   "rb": ([CANARY, REST], {"onFailure": "Rollback", "progressDeadlineSeconds": 3})})
    gens = {name: generations(f, name) for name in ("halt", "rb")}
    set_image(f, "halt", "fake.io/nginx:broken")
    # the bad change also adds a label: a rollback removes what the previous revision lacks
    image = {"name": "app", "image": "fake.io/nginx:broken"}
    f.kubectl("patch", "deploy/rb", "--type", "strategic", "-p",
              json.dumps({"metadata": {"labels": {"bad": "yes"}},
                          "spec": {"template": {"spec": {"containers": [image]}}}}))

    e = wait_phase(f, "halt", "Halted", timeout=30)
    assert e["reason"] == "ClusterFailed" and "member1" in e["message"], e
    failed = next(c for c in e["clusters"] if c["name"] == "member1")
    assert failed["state"] == "Failed" and failed["reason"], failed
    r = f.ctl("rollout", "status", "deploy/halt")
    assert "Halted" in r.stdout and "member1" in r.stdout, r.stdout
    im = images(f, "halt")
    assert im["member1"] == "fake.io/nginx:broken" and all(im[m] == "nginx:1.25" for m in MEMBERS[1:]), im
    assert all(generations(f, "halt")[m] == gens["halt"][m] for m in MEMBERS[1:])
    assert "RolloutHalted" in [r for r, _ in events(f, "halt")]

    e = wait_phase(f, "rb", "RolledBack", timeout=40)
    assert e["rolledBackFrom"] == 2 and e["generation"] == 3, e
    tmpl = f.get("deploy", "rb")
    assert tmpl["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert "bad" not in tmpl["metadata"].get("labels", {}), tmpl["metadata"]
    wait_for(lambda: images(f, "rb")["member1"] == "nginx:1.25", timeout=20, what="the canary back on nginx:1.25")
    after = member_deploys(f, "rb")
    assert after["member1"]["metadata"]["generation"] == gens["rb"]["member1"] + 2  # the bad one, then back
    # the others: the old image throughout; the restore changed nothing a member runs
    for m in MEMBERS[1:]:
        d = after[m]
        assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25", m
        assert d["metadata"]["generation"] == gens["rb"][m], (m, gens["rb"][m], d["metadata"]["generation"])
    reasons = [r for r, _ in events(f, "rb")]
    assert "RollingBack" in reasons and "RevisionRestored" in reasons and "RolledBack" in reasons, reasons
    cleanup(f, "halt")
    cleanup(f, "rb")


def test_kill9_mid_stage_resumes_in_the_same_stage_and_delivers_nothing_twice(up):
    """`flotilla up` keeps its simulated members in memory: the restart gives empty members,
    and the control plane delivers again what it had released. What must hold: the rollout
    goes on in the same stage with the same clusters released, a held cluster gets nothing
    until its stage, and each member's copy is written once (generation 1 on a new member)."""
    f = up.fleet
    name = "k9"
    start(f, name, [CANARY, WAVE, REST])
    set_image(f, name, "nginx:1.27")
    before = wait_phase(f, name, "WaitingForApproval", "wave")
    up.kill9_and_restart()
    wait_for(lambda: all(images(f, name)[m] == "nginx:1.27" for m in ("member1", "member2", "member3")),
             timeout=30, interval=0.3, what="the released clusters delivered again to the new members")
    time.sleep(1)  # the restarted controllers had time to release what they would
    e = entry(f, name)
    assert (e["phase"], e["stageName"], e["generation"]) == ("WaitingForApproval", "wave", before["generation"]), \
        json.dumps(e, indent=1)
    assert [(c["name"], c["state"]) for c in e["clusters"]] == [(c["name"], c["state"]) for c in before["clusters"]]
    im = images(f, name)
    assert all(im[m] is None for m in MEMBERS[3:]), im  # held: the new generation went nowhere
    assert all(work(f, name, m)["spec"].get("suspendDispatching") is True for m in MEMBERS[3:])
    r = f.ctl("rollout", "approve", "deploy/k9")
    assert r.returncode == 0, r.stderr
    wait_phase(f, name, "Completed")
    wait_for(lambda: set(images(f, name).values()) == {"nginx:1.27"}, timeout=30, interval=0.3, what="every member")
    time.sleep(0.5)
    assert generations(f, name) == dict.fromkeys(MEMBERS, 1), "a member's copy was written more than once"
    cleanup(f, name)
