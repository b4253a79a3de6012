/* test_rbac.c - the RBAC authorizer (src/api/rbac.c): Kubernetes' rule matching as a table,
 * then bindings, subjects, aggregation and the index's rebuilds over an API on a memory
 * store, the objects written through the API as a client writes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/rbac.h"
#include "core/json.h"
#include "core/mem.h"

#include "testapi.h"

/* ---------- rule matching ---------- */

typedef struct match_row {
    const char *rule;   /* one PolicyRule, JSON */
    const char *verb, *group, *resource, *sub, *name;
    const char *path;   /* non-NULL: a non-resource request */
    bool allowed;
} match_row;

static const match_row rows[] = {
    /* verbs: listed, or "*" */
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}", "get", "", "pods", "", "", NULL, true},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}", "list", "", "pods", "", "", NULL, false},
    {"{\"verbs\":[\"*\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}", "deletecollection", "", "pods", "", "", NULL,
     true},
    /* apiGroups: exact (the core group is ""), or "*" */
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"deployments\"]}", "get", "apps", "deployments", "", "",
     NULL, false},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\"]}", "get", "apps", "deployments", "",
     "", NULL, true},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"*\"],\"resources\":[\"deployments\"]}", "get", "apps", "deployments", "",
     "", NULL, true},
    /* resources: a resource does not cover its subresources; "res/sub", "*" and "* /sub" do */
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}", "get", "", "pods", "log", "p", NULL, false},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"]}", "get", "", "pods", "log", "p", NULL,
     true},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"]}", "get", "", "pods", "", "p", NULL, false},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"]}", "get", "", "pods", "status", "p", NULL,
     false},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"*\"]}", "get", "", "pods", "log", "p", NULL, true},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"*\"],\"resources\":[\"*/scale\"]}", "get", "apps", "deployments", "scale",
     "d", NULL, true},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"*\"],\"resources\":[\"*/scale\"]}", "get", "apps", "deployments", "", "d",
     NULL, false},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"podsx\"]}", "get", "", "pods", "", "", NULL, false},
    /* resourceNames: any name when absent, else only those (so never a collection) */
    {"{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\"]}",
     "get", "", "secrets", "", "a", NULL, true},
    {"{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\"]}",
     "get", "", "secrets", "", "b", NULL, false},
    {"{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\"]}",
     "list", "", "secrets", "", "", NULL, false},
    /* nonResourceURLs: exact, "*", or a prefix ending in "*"; never for resources */
    {"{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/metrics\"]}", "get", "", "", "", "", "/metrics", true},
    {"{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/metrics\"]}", "get", "", "", "", "", "/metrics/x", false},
    {"{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/metrics\"]}", "post", "", "", "", "", "/metrics", false},
    {"{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/apis/*\"]}", "get", "", "", "", "", "/apis/apps/v1", true},
    {"{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/apis/*\"]}", "get", "", "", "", "", "/apis", false},
    {"{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}", "delete", "", "", "", "", "/anything", true},
    {"{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"*\"]}", "get", "", "pods", "", "", NULL, false},
    {"{\"verbs\":[\"get\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]}", "get", "", "", "", "", "/healthz", false},
};

static void test_rules_match_as_kubernetes_matches_them(void **state)
{
    (void)state;
    fl_identity id;
    fl_identity_set(&id, "u", NULL);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const match_row *m = &rows[i];
        json_t *rule = json_loads(m->rule, 0, NULL);
        assert_non_null(rule);
        fl_auth_attrs at = {.who = &id, .verb = m->verb, .path = m->path, .group = m->group, .resource = m->resource,
                            .subresource = m->sub, .ns = "default", .name = m->name};
        if (fl_rbac_rule_allows(rule, &at) != m->allowed)
            fail_msg("row %zu: %s on %s %s.%s/%s %s: expected %s", i, m->rule, m->verb, m->resource, m->group, m->sub,
                     m->path ? m->path : "", m->allowed ? "allowed" : "denied");
        json_decref(rule);
    }
}

/* ---------- an authorizer over an API ---------- */

typedef struct fixture {
    fl_store *store;
    fl_api api;
    fl_rbac *rb;
} fixture;

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    f->store = test_api_open_memory(&f->api, "team-a");
    assert_int_equal(fl_api_ensure_namespace(&f->api, "team-b"), 0);
    f->rb = fl_rbac_new(&f->api);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_rbac_free(f->rb);
    fl_store_free(f->store);
    free(f);
    return 0;
}

#define RBAC_V1 "/apis/rbac.authorization.k8s.io/v1"

static void post(fixture *f, const char *path, const char *json)
{
    assert_int_equal(test_api_request(&f->api, "POST", path, NULL, json), 201);
}

static void role(fixture *f, const char *ns, const char *name, const char *rules)
{
    char *path = ns ? fl_asprintf(RBAC_V1 "/namespaces/%s/roles", ns) : fl_asprintf(RBAC_V1 "/clusterroles");
    char *body = fl_asprintf("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
                             "\"%s\"},\"rules\":%s}",
                             ns ? "Role" : "ClusterRole", name, rules);
    post(f, path, body);
    free(body);
    free(path);
}

/* A RoleBinding in ns (NULL: a ClusterRoleBinding) named name, of role_kind/role, to subject
 * (a JSON object). */
static void bind(fixture *f, const char *ns, const char *name, const char *role_kind, const char *rolename,
                 const char *subject)
{
    char *path = ns ? fl_asprintf(RBAC_V1 "/namespaces/%s/rolebindings", ns)
                    : fl_asprintf(RBAC_V1 "/clusterrolebindings");
    char *body = fl_asprintf("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
                             "\"%s\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"%s\","
                             "\"name\":\"%s\"},\"subjects\":[%s]}",
                             ns ? "RoleBinding" : "ClusterRoleBinding", name, role_kind, rolename, subject);
    post(f, path, body);
    free(body);
    free(path);
}

static bool may(fixture *f, const fl_identity *who, const char *verb, const char *group, const char *resource,
                const char *ns)
{
    fl_auth_attrs at = {.who = who, .verb = verb, .path = NULL, .group = group, .resource = resource,
                        .subresource = "", .ns = ns, .name = ""};
    return fl_rbac_allowed(f->rb, &at, NULL, 0);
}

static void user(fl_identity *id, const char *name, const char *group)
{
    assert_int_equal(fl_identity_set(id, name, NULL), 0);
    if (group)
        fl_identity_add_group(id, group);
    fl_identity_add_group(id, FL_AUTH_GROUP_AUTHENTICATED);
}

#define USER(n) "{\"kind\":\"User\",\"apiGroup\":\"rbac.authorization.k8s.io\",\"name\":\"" n "\"}"
#define GROUP(n) "{\"kind\":\"Group\",\"apiGroup\":\"rbac.authorization.k8s.io\",\"name\":\"" n "\"}"
#define PODS_RW "[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\",\"create\"]}]"

static void test_a_rolebinding_grants_in_its_namespace_only(void **state)
{
    fixture *f = *state;
    fl_identity alice, carol;
    user(&alice, "alice", "team-a");
    user(&carol, "carol", "team-a");
    role(f, NULL, "pods-rw", PODS_RW);
    bind(f, "team-a", "a", "ClusterRole", "pods-rw", GROUP("team-a"));
    assert_true(may(f, &alice, "list", "", "pods", "team-a"));
    assert_true(may(f, &carol, "create", "", "pods", "team-a"));
    assert_false(may(f, &alice, "list", "", "pods", "team-b"));
    assert_false(may(f, &alice, "list", "", "pods", "")); /* all namespaces: 403, not filtered */
    assert_false(may(f, &alice, "delete", "", "pods", "team-a"));
    /* a ClusterRoleBinding grants everywhere */
    bind(f, NULL, "carol-everywhere", "ClusterRole", "pods-rw", USER("carol"));
    assert_true(may(f, &carol, "list", "", "pods", ""));
    assert_true(may(f, &carol, "list", "", "pods", "team-b"));
    assert_false(may(f, &alice, "list", "", "pods", "team-b"));
    /* the reason names the binding, as kube-apiserver does */
    char why[512];
    fl_auth_attrs at = {.who = &alice, .verb = "get", .path = NULL, .group = "", .resource = "pods",
                        .subresource = "", .ns = "team-a", .name = "p"};
    assert_true(fl_rbac_allowed(f->rb, &at, why, sizeof why));
    assert_string_equal(why, "RBAC: allowed by RoleBinding \"a/team-a\" of ClusterRole \"pods-rw\" to Group \"team-a\"");
}

static void test_a_role_is_its_namespaces_and_a_binding_to_a_missing_role_waits_for_it(void **state)
{
    fixture *f = *state;
    fl_identity bob;
    user(&bob, "bob", NULL);
    bind(f, "team-b", "b", "Role", "ghost", USER("bob"));
    assert_false(may(f, &bob, "list", "", "pods", "team-b"));
    role(f, "team-a", "ghost", PODS_RW); /* the same name in another namespace is another role */
    assert_false(may(f, &bob, "list", "", "pods", "team-b"));
    role(f, "team-b", "ghost", PODS_RW);
    assert_true(may(f, &bob, "list", "", "pods", "team-b"));
    assert_int_equal(test_api_request(&f->api, "DELETE", RBAC_V1 "/namespaces/team-b/roles/ghost", NULL, NULL), 200);
    assert_false(may(f, &bob, "list", "", "pods", "team-b"));
}

static void test_serviceaccount_subjects_are_their_user_names(void **state)
{
    fixture *f = *state;
    role(f, NULL, "pods-rw", PODS_RW);
    /* no namespace in the subject: the binding's */
    bind(f, "team-a", "sa", "ClusterRole", "pods-rw", "{\"kind\":\"ServiceAccount\",\"name\":\"builder\"}");
    fl_identity sa, other;
    user(&sa, "system:serviceaccount:team-a:builder", "system:serviceaccounts");
    user(&other, "system:serviceaccount:team-b:builder", "system:serviceaccounts");
    assert_true(may(f, &sa, "list", "", "pods", "team-a"));
    assert_false(may(f, &other, "list", "", "pods", "team-a"));
    /* a group of service accounts */
    bind(f, "team-b", "all-sa", "ClusterRole", "pods-rw", GROUP("system:serviceaccounts:team-b"));
    fl_identity_add_group(&other, "system:serviceaccounts:team-b");
    assert_true(may(f, &other, "list", "", "pods", "team-b"));
}

static void test_aggregation_fills_the_aggregated_roles_and_follows_their_sources(void **state)
{
    fixture *f = *state;
    assert_true(fl_rbac_ensure_defaults(&f->api) > 0);
    assert_int_equal(fl_rbac_ensure_defaults(&f->api), 0); /* once: nothing is replaced */
    fl_identity alice;
    user(&alice, "alice", "team-a");
    bind(f, "team-a", "edit", "ClusterRole", "edit", GROUP("team-a"));
    assert_true(may(f, &alice, "create", "apps", "deployments", "team-a"));
    assert_true(may(f, &alice, "create", "policy.karmada.io", "propagationpolicies", "team-a"));
    assert_true(may(f, &alice, "get", "work.karmada.io", "resourcebindings", "team-a"));
    assert_false(may(f, &alice, "update", "work.karmada.io", "resourcebindings", "team-a"));
    assert_false(may(f, &alice, "create", "rbac.authorization.k8s.io", "rolebindings", "team-a")); /* admin's */
    assert_false(may(f, &alice, "create", "coordination.k8s.io", "leases", "team-a"));
    role(f, NULL, "leases",
         "[{\"apiGroups\":[\"coordination.k8s.io\"],\"resources\":[\"leases\"],\"verbs\":[\"create\"]}]");
    assert_int_equal(test_api_request(&f->api, "PATCH", RBAC_V1 "/clusterroles/leases", "application/merge-patch+json",
                                      "{\"metadata\":{\"labels\":{\"rbac.authorization.k8s.io/aggregate-to-edit\":"
                                      "\"true\"}}}"),
                     200);
    assert_true(may(f, &alice, "create", "coordination.k8s.io", "leases", "team-a"));
    /* written back: edit has it, and admin, which aggregates edit */
    may(f, &alice, "get", "", "pods", "team-a"); /* the rebuild after the write-back */
    const char *names[] = {"edit", "admin"};
    for (int i = 0; i < 2; i++) {
        char *path = fl_asprintf(RBAC_V1 "/clusterroles/%s", names[i]);
        json_t *obj = test_api_get(&f->api, path);
        assert_non_null(obj);
        char *text = json_dumps(json_object_get(obj, "rules"), JSON_COMPACT);
        if (!strstr(text, "\"leases\""))
            fail_msg("%s's rules lack leases: %s", names[i], text);
        free(text);
        json_decref(obj);
        free(path);
    }
}

static void test_the_index_is_rebuilt_after_rbac_writes_only(void **state)
{
    fixture *f = *state;
    fl_identity alice;
    user(&alice, "alice", "team-a");
    assert_false(may(f, &alice, "list", "", "pods", "team-a"));
    unsigned long builds = fl_rbac_builds(f->rb);
    for (int i = 0; i < 3; i++) {
        char *body = fl_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c%d\"}}", i);
        post(f, "/api/v1/namespaces/team-a/configmaps", body);
        free(body);
        assert_false(may(f, &alice, "list", "", "pods", "team-a"));
    }
    assert_int_equal(fl_rbac_builds(f->rb), builds);
    role(f, NULL, "pods-rw", PODS_RW);
    assert_false(may(f, &alice, "list", "", "pods", "team-a"));
    assert_int_equal(fl_rbac_builds(f->rb), builds + 1);
}

static void test_impersonation_needs_the_verb_and_gives_the_asked_identity(void **state)
{
    fixture *f = *state;
    fl_auth *auth = NULL;
    fl_auth_new(&f->api, NULL, NULL, &auth);
    f->api.auth = auth;
    fl_identity ops, alice, out;
    user(&ops, "ops", NULL);
    user(&alice, "alice", NULL);
    role(f, NULL, "impersonate-bob",
         "[{\"apiGroups\":[\"\"],\"resources\":[\"users\"],\"verbs\":[\"impersonate\"],\"resourceNames\":"
         "[\"bob\"]}]");
    role(f, NULL, "impersonate-sa",
         "[{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts\"],\"verbs\":[\"impersonate\"]}]");
    bind(f, NULL, "ops", "ClusterRole", "impersonate-bob", USER("ops"));
    bind(f, "team-b", "ops-sa", "ClusterRole", "impersonate-sa", USER("ops"));
    char msg[512];
    const char *groups[] = {"team-b"};
    assert_int_equal(fl_rbac_impersonate(auth, &ops, "bob", NULL, 0, &out, msg, sizeof msg), 0);
    assert_string_equal(out.user, "bob");
    assert_true(fl_identity_in_group(&out, FL_AUTH_GROUP_AUTHENTICATED));
    /* groups need their own right */
    assert_int_equal(fl_rbac_impersonate(auth, &ops, "bob", groups, 1, &out, msg, sizeof msg), 403);
    assert_string_equal(msg, "groups \"team-b\" is forbidden: User \"ops\" cannot impersonate resource \"groups\" in "
                             "API group \"\" at the cluster scope");
    assert_int_equal(fl_rbac_impersonate(auth, &ops, "carol", NULL, 0, &out, msg, sizeof msg), 403);
    assert_int_equal(fl_rbac_impersonate(auth, &alice, "bob", NULL, 0, &out, msg, sizeof msg), 403);
    assert_int_equal(fl_rbac_impersonate(auth, &ops, NULL, groups, 1, &out, msg, sizeof msg), 400);
    /* a service account: checked in its namespace, and given its groups */
    assert_int_equal(fl_rbac_impersonate(auth, &ops, "system:serviceaccount:team-b:ci", NULL, 0, &out, msg, sizeof msg),
                     0);
    assert_true(fl_identity_in_group(&out, "system:serviceaccounts"));
    assert_true(fl_identity_in_group(&out, "system:serviceaccounts:team-b"));
    assert_int_equal(fl_rbac_impersonate(auth, &ops, "system:serviceaccount:team-a:ci", NULL, 0, &out, msg, sizeof msg),
                     403);
    assert_int_equal(fl_rbac_impersonate(auth, &ops, "system:serviceaccount:bad", NULL, 0, &out, msg, sizeof msg), 400);
    fl_auth_free(auth);
    f->api.auth = NULL;
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_match_as_kubernetes_matches_them),
        cmocka_unit_test_setup_teardown(test_a_rolebinding_grants_in_its_namespace_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_role_is_its_namespaces_and_a_binding_to_a_missing_role_waits_for_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_serviceaccount_subjects_are_their_user_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aggregation_fills_the_aggregated_roles_and_follows_their_sources, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_index_is_rebuilt_after_rbac_writes_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_impersonation_needs_the_verb_and_gives_the_asked_identity, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
