"""RBAC end to end on `flotilla up -- --token-auth-file`: two teams as two users with their own
kubeconfigs (alice in group team-a, bob in group team-b), each bound to the default `edit`
ClusterRole in its namespace by a RoleBinding, driven with /usr/bin/kubectl and the official
Python client as users do. What they may do follows Kubernetes' RBAC: the Karmada policies of
their own namespace yes, another team's Secrets, Clusters and cluster-wide policies no, and
`kubectl auth can-i` answers what the requests then do.
"""
import json
import os
import shutil
import subprocess
import tempfile

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from conftest import KUBECTL, running_fleet, wait_for

TOKENS = {"alice": "t-alice-0123456789", "bob": "t-bob-0123456789"}


@pytest.fixture(scope="module")
def teams():
    d = tempfile.mkdtemp(prefix="flotilla-rbac-")
    path = os.path.join(d, "tokens.csv")
    with open(path, "w") as f:
        f.write("# token,user,uid,groups\n")
        f.write(f'{TOKENS["alice"]},alice,1001,"team-a,developers"\n')
        f.write(f'{TOKENS["bob"]},bob,1002,"team-b,developers"\n')
    with running_fleet(members=2, server_args=("--token-auth-file", path)) as fleet:
        with open(fleet.kubeconfig) as f:
            admin_kc = f.read()
        kcs = {}
        for user, token in TOKENS.items():
            kc = os.path.join(d, f"{user}.kubeconfig")
            lines = [f'    token: "{token}"' if l.strip().startswith("token:") else l for l in admin_kc.splitlines()]
            with open(kc, "w") as f:
                f.write("\n".join(lines).replace("name: admin", f"name: {user}").replace("user: admin", f"user: {user}")
                        + "\n")
            kcs[user] = kc
        for ns, group in (("team-a", "team-a"), ("team-b", "team-b")):
            fleet.kubectl("create", "namespace", ns)
            fleet.kubectl("-n", ns, "create", "rolebinding", f"{group}-edit", "--clusterrole", "edit", "--group", group)
        fleet.kubectl("-n", "team-b", "create", "secret", "generic", "db", "--from-literal=password=hunter2")
        fleet.kcs = kcs
        yield fleet
    shutil.rmtree(d, ignore_errors=True)


def as_user(fleet, user, *args, input=None):
    return subprocess.run([KUBECTL, "--kubeconfig", fleet.kcs[user], *args], input=input, capture_output=True,
                          text=True, timeout=60)


def can_i(fleet, user, *args):
    r = as_user(fleet, user, "auth", "can-i", *args)
    assert r.stdout.strip() in ("yes", "no"), f"can-i {args}: {r.stdout} {r.stderr}"
    return r.stdout.strip() == "yes"


def deployment(name, ns):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}}


def policy(name, ns, kind="PropagationPolicy"):
    meta = {"name": name, "namespace": ns} if ns else {"name": name}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": meta,
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}}}


def apply_as(fleet, user, *docs):
    return as_user(fleet, user, "apply", "-f", "-", input="".join("---\n" + json.dumps(d) + "\n" for d in docs))


def test_edit_in_its_namespace_deploys_and_propagates(teams):
    r = apply_as(teams, "alice", deployment("web", "team-a"), policy("web", "team-a"))
    assert r.returncode == 0, r.stderr
    for member in ("member1", "member2"):
        wait_for(lambda: teams.get("deploy", "web", "-n", "team-a", member=member) is not None, timeout=60,
                 what=f"web in {member}")
    # what the control plane made of it: readable to the team, not writable
    wait_for(lambda: as_user(teams, "alice", "get", "resourcebindings", "-n", "team-a", "-o", "name").stdout.strip(),
             timeout=30, what="alice sees the ResourceBinding")
    r = as_user(teams, "alice", "delete", "resourcebindings", "--all", "-n", "team-a")
    assert r.returncode != 0 and "Forbidden" in r.stderr


def test_another_teams_secrets_clusters_and_cluster_policies_are_forbidden(teams):
    r = as_user(teams, "alice", "get", "secret", "db", "-n", "team-b")
    assert r.returncode == 1
    assert ('secrets "db" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the '
            'namespace "team-b"') in r.stderr
    r = as_user(teams, "alice", "get", "clusters")
    assert ('clusters.cluster.karmada.io is forbidden: User "alice" cannot list resource "clusters" in API group '
            '"cluster.karmada.io" at the cluster scope') in r.stderr
    r = as_user(teams, "alice", "create", "-f", "-", input=json.dumps(policy("everywhere", None,
                                                                            "ClusterPropagationPolicy")))
    assert r.returncode != 0
    assert ('clusterpropagationpolicies.policy.karmada.io is forbidden: User "alice" cannot create resource '
            '"clusterpropagationpolicies" in API group "policy.karmada.io" at the cluster scope') in r.stderr
    assert teams.get("clusterpropagationpolicy", "everywhere") is None
    # a list across all namespaces by a holder of namespace rights only: 403, not a filtered list
    r = as_user(teams, "alice", "get", "deployments", "--all-namespaces")
    assert r.returncode == 1
    assert ('deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" '
            'at the cluster scope') in r.stderr
    # and alice's own namespace serves her
    assert as_user(teams, "alice", "get", "secrets", "-n", "team-a").returncode == 0


def test_can_i_answers_what_the_requests_then_do(teams):
    cases = [
        (("get", "secrets", "-n", "team-b"), ("get", "secrets", "-n", "team-b")),
        (("list", "secrets", "-n", "team-a"), ("get", "secrets", "-n", "team-a")),
        (("list", "clusters.cluster.karmada.io"), ("get", "clusters")),
        (("list", "deployments", "-A"), ("get", "deployments", "-A")),
        (("list", "propagationpolicies.policy.karmada.io", "-n", "team-a"), ("get", "pp", "-n", "team-a")),
        (("list", "propagationpolicies.policy.karmada.io", "-n", "team-b"), ("get", "pp", "-n", "team-b")),
        (("list", "namespaces"), ("get", "namespaces")),
        (("list", "clusterrolebindings"), ("get", "clusterrolebindings")),
    ]
    for ask, do in cases:
        allowed = can_i(teams, "alice", *ask)
        done = as_user(teams, "alice", *do).returncode == 0
        assert allowed == done, f"can-i {ask} says {allowed}, but {do} {'worked' if done else 'failed'}"
    assert can_i(teams, "alice", "create", "deployments", "-n", "team-a")
    assert not can_i(teams, "alice", "create", "deployments", "-n", "team-b")
    assert not can_i(teams, "alice", "create", "clusterpropagationpolicies.policy.karmada.io")
    # the exit code is kubectl's answer too
    assert as_user(teams, "bob", "auth", "can-i", "get", "secrets", "-n", "team-a").returncode == 1


def test_can_i_list_shows_the_rules_of_the_namespace(teams):
    r = as_user(teams, "alice", "auth", "can-i", "--list", "-n", "team-a")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[1:] if line.strip()}
    assert "create" in rows["deployments.apps"] and "delete" in rows["deployments.apps"]
    assert "propagationpolicies.policy.karmada.io" in rows
    assert "selfsubjectaccessreviews.authorization.k8s.io" in rows
    r = as_user(teams, "alice", "auth", "can-i", "--list", "-n", "team-b")
    assert "deployments.apps" not in r.stdout


def test_impersonation_needs_the_impersonate_verb(teams):
    # the admin (cluster-admin) may act as bob: bob edits team-b, not team-a
    r = teams.kubectl("auth", "can-i", "create", "deploy", "--as", "bob", "--as-group", "team-b", "-n", "team-b",
                      check=False)
    assert r.stdout.strip() == "yes", r.stderr
    r = teams.kubectl("auth", "can-i", "create", "deploy", "--as", "bob", "--as-group", "team-b", "-n", "team-a",
                      check=False)
    assert r.stdout.strip() == "no"
    r = teams.kubectl("get", "secrets", "-n", "team-a", "--as", "bob", "--as-group", "team-b", check=False)
    assert 'User "bob" cannot list resource "secrets"' in r.stderr
    # alice may not act as anyone
    r = as_user(teams, "alice", "get", "pods", "-n", "team-a", "--as", "bob")
    assert r.returncode == 1
    assert ('users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the '
            'cluster scope') in r.stderr
    # what impersonation is not built for is refused, not ignored: the caller would act as someone else
    r = teams.kubectl("get", "pods", "-n", "team-a", "--as", "bob", "--as-uid", "1002", check=False)
    assert r.returncode == 1
    assert "Impersonate-Uid and Impersonate-Extra-* headers are not supported" in r.stderr, r.stderr


def test_python_client_sees_the_same_rules(teams):
    api = config.new_client_from_config(config_file=teams.kcs["bob"])
    try:
        core = client.CoreV1Api(api)
        core.create_namespaced_config_map("team-b", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"),
                                                                      data={"a": "b"}))
        assert core.read_namespaced_config_map("cfg", "team-b").data == {"a": "b"}
        with pytest.raises(ApiException) as e:
            core.list_namespaced_secret("team-a")
        assert e.value.status == 403
        assert json.loads(e.value.body)["reason"] == "Forbidden"
        authz = client.AuthorizationV1Api(api)
        review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
                verb="create", group="policy.karmada.io", resource="propagationpolicies", namespace="team-b"))))
        assert review.status.allowed is True
        assert 'RoleBinding "team-b-edit/team-b" of ClusterRole "edit" to Group "team-b"' in review.status.reason
        # SubjectAccessReview is for those allowed to create it: not bob
        sar = client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
            user="alice", groups=["team-a"],
            resource_attributes=client.V1ResourceAttributes(verb="get", resource="secrets", namespace="team-a")))
        with pytest.raises(ApiException) as e:
            authz.create_subject_access_review(sar)
        assert e.value.status == 403
    finally:
        api.close()
    admin = config.new_client_from_config(config_file=teams.kubeconfig)
    try:
        authz = client.AuthorizationV1Api(admin)
        assert authz.create_subject_access_review(sar).status.allowed is True
        sar.spec.resource_attributes.namespace = "team-b"
        assert authz.create_subject_access_review(sar).status.allowed is False
    finally:
        admin.close()


def test_a_clusterrole_labelled_aggregate_to_edit_adds_to_edit(teams):
    assert not can_i(teams, "alice", "create", "leases.coordination.k8s.io", "-n", "team-a")
    extra = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "leases-for-editors",
                          "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
             "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                        "verbs": ["get", "list", "create"]}]}
    teams.apply(extra)
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1", "namespace": "team-a"},
             "spec": {"holderIdentity": "alice"}}
    assert apply_as(teams, "alice", lease).returncode == 0
    # the stored edit and admin roles carry it too (admin aggregates edit)
    wait_for(lambda: any("leases" in r.get("resources", []) for r in teams.get("clusterrole", "edit")["rules"]),
             timeout=10, what="edit's rules include leases")
    wait_for(lambda: any("leases" in r.get("resources", []) for r in teams.get("clusterrole", "admin")["rules"]),
             timeout=10, what="admin's rules include leases")
    teams.kubectl("delete", "clusterrole", "leases-for-editors")
    wait_for(lambda: not can_i(teams, "alice", "create", "leases.coordination.k8s.io", "-n", "team-a"), timeout=10,
             what="the permission goes with the role")


def test_a_binding_to_a_missing_role_is_accepted_and_grants_nothing(teams):
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "bob-ghost", "namespace": "team-a"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ghost"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}
    teams.apply(binding)
    assert not can_i(teams, "bob", "list", "pods", "-n", "team-a")
    assert as_user(teams, "bob", "get", "pods", "-n", "team-a").returncode == 1
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "ghost", "namespace": "team-a"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}
    teams.apply(role)
    assert as_user(teams, "bob", "get", "pods", "-n", "team-a").returncode == 0
    assert as_user(teams, "bob", "get", "pods", "-n", "team-a", "-o", "name").returncode == 0
    teams.kubectl("-n", "team-a", "delete", "rolebinding", "bob-ghost")
    teams.kubectl("-n", "team-a", "delete", "role", "ghost")


def test_malformed_rules_are_refused_naming_the_field(teams):
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "bad", "namespace": "team-a"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": []},
                      {"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]}
    code, body = teams_curl(teams, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles", role)
    assert code == 422, body
    fields = {c["field"] for c in body["details"]["causes"]}
    assert {"rules[0].verbs", "rules[1].nonResourceURLs"} <= fields


def test_reviews_refuse_bad_specs(teams):
    code, body = teams_curl(teams, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                            {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}})
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.resourceAttributes"
    code, body = teams_curl(teams, "GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None)
    assert code == 405


def teams_curl(fleet, method, path, obj):
    """method path as the admin, with obj as the JSON body; (code, parsed body)."""
    with open(fleet.kubeconfig) as f:
        kc = f.read()
    token = next(l.split('"')[1] for l in kc.splitlines() if l.strip().startswith("token:"))
    server = next(l.split('"')[1] for l in kc.splitlines() if l.strip().startswith("server:"))
    args = ["curl", "-sk", "-X", method, "-H", f"Authorization: Bearer {token}", "-H",
            "Content-Type: application/json", "-w", "\n%{http_code}", server + path]
    if obj is not None:
        args += ["--data-binary", json.dumps(obj)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    body, _, code = r.stdout.rpartition("\n")
    return int(code), json.loads(body) if body.strip().startswith("{") else body


def test_discovery_lists_the_reviews_as_create_only(teams):
    r = as_user(teams, "alice", "api-resources", "--api-group", "authorization.k8s.io", "-o", "wide")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[1:] if line.strip()}
    for name in ("selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews",
                 "localsubjectaccessreviews"):
        assert name in rows, r.stdout
        assert rows[name][-1] == "create", rows[name]  # the VERBS column: create only
    # and nothing of them is stored: a GET of the collection is not allowed
    code, _ = teams_curl(teams, "GET", "/apis/authorization.k8s.io/v1/subjectaccessreviews", None)
    assert code == 405


def test_roles_and_bindings_grant_no_more_than_their_writer_holds(teams):
    """Kubernetes' escalation check: alice, admin of namespace esc, may write roles and bindings
    there within what she holds, and is refused (403, the permissions named) past it."""
    teams.kubectl("create", "namespace", "esc")
    teams.kubectl("-n", "esc", "create", "rolebinding", "alice-admin", "--clusterrole", "admin", "--user", "alice")
    r = as_user(teams, "alice", "-n", "esc", "create", "role", "cm-reader", "--verb", "get,list",
                "--resource", "configmaps")
    assert r.returncode == 0, r.stderr
    r = as_user(teams, "alice", "-n", "esc", "create", "rolebinding", "bob-view", "--clusterrole", "view",
                "--user", "bob")
    assert r.returncode == 0, r.stderr
    assert can_i(teams, "bob", "list", "configmaps", "-n", "esc")
    # a rule she does not hold: Clusters are not hers to read
    r = as_user(teams, "alice", "-n", "esc", "create", "role", "cluster-reader", "--verb", "get",
                "--resource", "clusters.cluster.karmada.io")
    assert r.returncode == 1
    assert ('roles.rbac.authorization.k8s.io "cluster-reader" is forbidden: user "alice" (groups=["team-a" '
            '"developers" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:["cluster.karmada.io"], Resources:["clusters"], Verbs:["get"]}') in r.stderr, r.stderr
    # nor a binding to a role that holds more than she does, nor widening her own role by edit
    r = as_user(teams, "alice", "-n", "esc", "create", "rolebinding", "me-root", "--clusterrole", "cluster-admin",
                "--user", "alice")
    assert r.returncode == 1 and "is attempting to grant RBAC permissions not currently held" in r.stderr, r.stderr
    r = as_user(teams, "alice", "-n", "esc", "patch", "role", "cm-reader", "--type=json", "-p",
                '[{"op":"add","path":"/rules/-","value":{"apiGroups":["cluster.karmada.io"],'
                '"resources":["clusters"],"verbs":["list"]}}]')
    assert r.returncode == 1 and "not currently held" in r.stderr, r.stderr
    assert teams.get("rolebinding", "me-root", "-n", "esc") is None
    # a ClusterRole is checked against cluster-wide permissions, and an aggregating one needs all
    r = as_user(teams, "alice", "create", "clusterrole", "agg", "--aggregation-rule", "x=y")
    assert r.returncode == 1, r.stderr
    # the admin, in system:masters, may grant anything
    teams.kubectl("-n", "esc", "create", "role", "cluster-reader", "--verb", "get",
                  "--resource", "clusters.cluster.karmada.io")
