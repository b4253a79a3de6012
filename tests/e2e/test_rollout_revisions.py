"""Template revisions (docs/rollouts.md, "Revisions"): every delivered change of a propagated
template is an apps/v1 ControllerRevision, numbered, owned by the template, trimmed to its
history limit; `flotilla ctl rollout history` lists them and `flotilla ctl rollout undo` writes
one back through the API. Driven with kubectl and the ctl binary on one `flotilla up` with two
members, which the last test kills (-9) and starts again on the same data."""
import json
import os
import shutil
import signal
import tempfile

import pytest
from kubernetes import client, config

from conftest import Fleet, free_port, start_up, wait_for
from test_failover_eviction import server_pid

UID_LABEL = "rollouts.flotilla.io/template-uid"
LIMIT = "rollouts.flotilla.io/revision-history-limit"


def deployment(name, image="nginx:1.25"):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


def policy(name, kind="Deployment", api_version="apps/v1", cluster=False):
    sel = [{"apiVersion": api_version, "kind": kind, "name": name}]
    if cluster:
        return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                "metadata": {"name": name}, "spec": {"resourceSelectors": sel, "placement": {}}}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"resourceSelectors": sel, "placement": {}}}


class Up:
    """One `flotilla up` this module may kill and start again on its data directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="flotilla-revisions-")
        self.port = free_port()
        self.proc = start_up(self.dir, self.port, members=2)
        self.fleet = Fleet(self.dir)

    def kill9_and_restart(self):
        try:
            os.kill(server_pid(self.proc.pid), signal.SIGKILL)
        except AssertionError:
            pass  # killed already
        self.proc.wait(timeout=60)
        self.proc = start_up(self.dir, self.port, members=2)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        rc = self.proc.wait(timeout=60)
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".log"):
                text = open(os.path.join(self.dir, name), errors="replace").read()
                for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                    assert marker not in text, f"{name}: {text[text.find(marker) - 200:][:4000]}"
        shutil.rmtree(self.dir, ignore_errors=True)
        assert rc == 0, f"flotilla up exited with {rc}"


@pytest.fixture(scope="module")
def up():
    u = Up()
    yield u
    u.stop()


def revisions(fleet, uid, ns="default"):
    got = fleet.get("controllerrevisions", "-n", ns, "-l", f"{UID_LABEL}={uid}") or {"items": []}
    return sorted(got["items"], key=lambda r: r["revision"])


def numbers(fleet, uid, ns="default"):
    return [r["revision"] for r in revisions(fleet, uid, ns)]


def ctl(fleet, *args):
    return fleet.ctl(*args)


def one_line_failure(r):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flotilla ctl rollout"), r.stderr
    return lines[0]


def test_each_delivered_change_is_a_numbered_revision_and_status_makes_none(up):
    f = up.fleet
    f.apply([deployment("rv-web"), policy("rv-web")])
    uid = f.get("deploy", "rv-web")["metadata"]["uid"]
    wait_for(lambda: numbers(f, uid) == [1], timeout=20, what="revision 1")
    f.kubectl("set", "image", "deploy/rv-web", "app=nginx:1.26")
    wait_for(lambda: numbers(f, uid) == [1, 2], timeout=20, what="revision 2")
    # a status write (the control plane's own kind of change) and the claim's labels are not
    # delivered content: they make no revision, so the next real change is number 3
    f.kubectl("patch", "deploy", "rv-web", "--subresource=status", "--type=merge", "-p",
              json.dumps({"status": {"observedGeneration": 99, "replicas": 7}}))
    f.kubectl("set", "image", "deploy/rv-web", "app=nginx:1.27")
    f.kubectl("annotate", "deploy/rv-web", "kubernetes.io/change-cause=image 1.27")
    wait_for(lambda: numbers(f, uid) == [1, 2, 3] and
             revisions(f, uid)[-1]["metadata"].get("annotations", {}).get("kubernetes.io/change-cause") == "image 1.27",
             timeout=20, what="revision 3 with its change cause")
    revs = revisions(f, uid)
    images = [r["data"]["spec"]["template"]["spec"]["containers"][0]["image"] for r in revs]
    assert images == ["nginx:1.25", "nginx:1.26", "nginx:1.27"]
    for r in revs:
        assert r["metadata"]["name"].startswith("rv-web-"), r["metadata"]
        ref = r["metadata"]["ownerReferences"]
        assert ref == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "rv-web", "uid": uid,
                        "controller": True, "blockOwnerDeletion": True}], ref
        assert "status" not in r["data"] and set(r["data"]["metadata"]) <= {"name", "namespace", "labels",
                                                                            "annotations"}
        assert "propagationpolicy.karmada.io/name" not in r["data"]["metadata"].get("annotations", {})
    # kubectl's own table (the server's columns) and ctl's history
    table = f.kubectl("get", "controllerrevisions", "-l", f"{UID_LABEL}={uid}").stdout
    assert table.split("\n")[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"], table
    assert table.count("deployment.apps/rv-web") == 3, table
    f.kubectl("describe", "controllerrevision", revs[0]["metadata"]["name"])
    r = ctl(f, "rollout", "history", "deployment/rv-web")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().split("\n")
    assert lines[0] == "deployment.apps/rv-web", r.stdout
    assert lines[1].split() == ["REVISION", "CHANGE-CAUSE", "AGE"], r.stdout
    assert [l.split()[0] for l in lines[2:]] == ["1", "2", "3"], r.stdout
    assert lines[2].split()[1] == "<none>" and "image 1.27" in lines[4], r.stdout
    r = ctl(f, "rollout", "history", "deploy/rv-web", "--revision", "2", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"


def test_undo_restores_the_exact_earlier_template_and_the_member_gets_it(up):
    f = up.fleet
    uid = f.get("deploy", "rv-web")["metadata"]["uid"]
    wait_for(lambda: numbers(f, uid) == [1, 2, 3], timeout=20, what="three revisions")
    first = revisions(f, uid)[0]
    r = ctl(f, "rollout", "undo", "deploy/rv-web", "--to-revision", "1", "--dry-run")
    assert r.returncode == 0 and "dry run" in r.stdout, (r.stdout, r.stderr)
    assert f.get("deploy", "rv-web")["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    r = ctl(f, "rollout", "undo", "deploy/rv-web", "--to-revision", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "deployment.apps/rv-web rolled back to revision 1", r.stdout
    live = f.get("deploy", "rv-web")
    assert live["spec"] == first["data"]["spec"]
    assert "kubernetes.io/change-cause" not in live["metadata"].get("annotations", {})
    # the policy's claim stayed, and the restored revision is now the newest, renumbered
    assert live["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] == "rv-web"
    wait_for(lambda: numbers(f, uid) == [2, 3, 4], timeout=20, what="revision 1 renumbered 4")
    assert revisions(f, uid)[-1]["metadata"]["name"] == first["metadata"]["name"]
    wait_for(lambda: ((f.get("deploy", "rv-web", member="member1") or {}).get("spec", {}).get("template", {})
                      .get("spec", {}).get("containers", [{}])[0].get("image")) == "nginx:1.25",
             timeout=30, what="member1 back on nginx:1.25")
    # the default is the previous revision: 1.27 again, revision 3 renumbered 5
    r = ctl(f, "rollout", "undo", "deploy/rv-web")
    assert r.returncode == 0 and "revision 3" in r.stdout, (r.stdout, r.stderr)
    wait_for(lambda: numbers(f, uid) == [2, 4, 5], timeout=20, what="revision 3 renumbered 5")


def test_the_history_limit_is_honoured_and_a_bad_one_refused_naming_the_field(up):
    f = up.fleet
    uid = f.get("deploy", "rv-web")["metadata"]["uid"]
    r = f.kubectl("annotate", "deploy/rv-web", f"{LIMIT}=-1", check=False)
    assert r.returncode != 0 and f"metadata.annotations[{LIMIT}]" in r.stderr, r.stderr
    assert LIMIT not in f.get("deploy", "rv-web")["metadata"].get("annotations", {})
    f.kubectl("annotate", "deploy/rv-web", f"{LIMIT}=2")
    wait_for(lambda: numbers(f, uid) == [4, 5], timeout=20, what="trimmed to 2")
    for image in ("nginx:1.28", "nginx:1.29"):
        f.kubectl("set", "image", "deploy/rv-web", f"app={image}")
    wait_for(lambda: numbers(f, uid) == [6, 7], timeout=20, what="two newest kept")
    assert revisions(f, uid)[-1]["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.29"


def test_bad_input_is_one_line_and_exit_1(up):
    f = up.fleet
    assert "nosuchkind" in one_line_failure(ctl(f, "rollout", "history", "nosuchkind/x"))
    assert "not found" in one_line_failure(ctl(f, "rollout", "undo", "deploy/rv-missing"))
    line = one_line_failure(ctl(f, "rollout", "undo", "deploy/rv-web", "--to-revision", "99"))
    assert "no revision 99" in line, line
    line = one_line_failure(ctl(f, "rollout", "history", "deploy/rv-web", "--revision", "99"))
    assert "no revision 99" in line, line
    r = ctl(f, "rollout", "undo", "deploy/rv-web", "--to-revision", "x")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # the kind's own checks, as kube-apiserver's: data required, revision required and >= 0
    for body, field in (({"revision": 1}, "data"), ({"data": {}}, "revision"), ({"data": {}, "revision": -1}, "revision")):
        cr = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "rv-bad"}, **body}
        r = f.kubectl("create", "-f", "-", input=json.dumps(cr), check=False)
        assert r.returncode != 0 and field in r.stderr, (body, r.stderr)
    assert f.get("controllerrevision", "rv-bad") is None


def test_revisions_go_with_their_template_cluster_scoped_ones_in_karmada_system(up):
    f = up.fleet
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "rv-role"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    f.apply([role, policy("rv-role", "ClusterRole", "rbac.authorization.k8s.io/v1", cluster=True)])
    uid = f.get("clusterrole", "rv-role")["metadata"]["uid"]
    wait_for(lambda: numbers(f, uid, "karmada-system") == [1], timeout=20, what="the ClusterRole's revision")
    r = ctl(f, "rollout", "history", "clusterrole/rv-role")
    assert r.returncode == 0 and r.stdout.split("\n")[0] == "clusterrole.rbac.authorization.k8s.io/rv-role", r.stdout
    f.kubectl("delete", "clusterrole", "rv-role")
    wait_for(lambda: numbers(f, uid, "karmada-system") == [], timeout=20, what="the revision collected")
    f.apply(deployment("rv-gone"))
    f.apply(policy("rv-gone"))
    guid = f.get("deploy", "rv-gone")["metadata"]["uid"]
    wait_for(lambda: numbers(f, guid) == [1], timeout=20, what="rv-gone's revision")
    f.kubectl("delete", "deploy", "rv-gone")
    wait_for(lambda: numbers(f, guid) == [], timeout=20, what="rv-gone's revisions collected")


def test_a_secret_gets_no_revision_a_configmap_does(up):
    f = up.fleet
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rv-conf", "namespace": "default"},
          "data": {"k": "1"}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "rv-conf", "namespace": "default"},
              "stringData": {"password": "hunter2"}}
    pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "rv-conf", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "rv-conf"},
                                         {"apiVersion": "v1", "kind": "Secret", "name": "rv-conf"}],
                   "placement": {}}}
    f.apply([secret, cm, pp])
    wait_for(lambda: f.get("rb", "rv-conf-secret") and f.get("rb", "rv-conf-configmap"), timeout=20,
             what="both bindings")
    cuid = f.get("configmap", "rv-conf")["metadata"]["uid"]
    suid = f.get("secret", "rv-conf")["metadata"]["uid"]
    # a change of the ConfigMap after both bindings exist: once its revision 2 is there, the
    # Secret (queued before it, one worker) has been decided on too
    f.patch("configmap", "rv-conf", patch={"data": {"k": "2"}})
    wait_for(lambda: numbers(f, cuid) == [1, 2], timeout=20, what="the ConfigMap's two revisions")
    assert numbers(f, suid) == []
    r = ctl(f, "rollout", "history", "secret/rv-conf")
    assert r.returncode == 0 and "No revisions" in r.stdout, (r.stdout, r.stderr)
    all_revs = f.kubectl("get", "controllerrevisions", "-A", "-o", "json").stdout
    assert "hunter2" not in all_revs and "aHVudGVyMg" not in all_revs


def test_a_change_whose_server_is_killed_gets_its_revision_after_the_restart(up):
    f = up.fleet
    uid = f.get("deploy", "rv-web")["metadata"]["uid"]
    before = numbers(f, uid)
    pid = server_pid(up.proc.pid)
    config.load_kube_config(config_file=f.kubeconfig)
    apps = client.AppsV1Api()
    # the change, and the server killed the moment it answered: at most the store knows that a
    # revision is owed (whether the controller got to write it in between is printed)
    # (with 200 KB of annotation, so that the revision's path after the change's commit, a
    # watch event, two hashes of the template and a create, is long enough for the kill to
    # land in it most of the time)
    apps.patch_namespaced_deployment("rv-web", "default", {
        "metadata": {"annotations": {"example.com/bulk": "x" * 200_000}},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.30"}]}}}})
    os.kill(pid, signal.SIGKILL)
    log = open(os.path.join(up.dir, "server.log"), errors="replace").read()
    print("revision written before the kill:", f"recorded revision {before[-1] + 1} " in log)
    up.kill9_and_restart()
    got = wait_for(lambda: [r for r in revisions(f, uid) if r["data"]["spec"]["template"]["spec"]["containers"][0]
                            ["image"] == "nginx:1.30"], timeout=30, what="the revision of the change made before the kill")
    assert got[0]["revision"] == before[-1] + 1, (before, got[0]["revision"])
    assert numbers(f, uid) == before[1:] + [before[-1] + 1]
