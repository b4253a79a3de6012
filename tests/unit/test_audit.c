/* test_audit.c - the audit Policy (src/api/audit_policy.c): what parses and what is refused
 * with the field named, and how rules match a request as kube-apiserver's checker does
 * (first matching rule wins; users, groups, verbs, namespaces, resources with subresources
 * and wildcards, resourceNames, non-resource URLs; omitStages and omitManagedFields). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/audit_policy.h"
#include "core/err.h"

#define HEAD "apiVersion: audit.k8s.io/v1\nkind: Policy\n"

static fl_audit_policy *parse_ok(const char *text)
{
    fl_audit_policy *p = NULL;
    char *err = NULL;
    int rc = fl_audit_policy_parse(text, strlen(text), &p, &err);
    if (rc)
        fail_msg("policy did not parse: %s\n%s", err, text);
    return p;
}

/* The policy's error for text, which must not parse (heap). */
static char *parse_err(const char *text)
{
    fl_audit_policy *p = (fl_audit_policy *)1;
    char *err = NULL;
    int rc = fl_audit_policy_parse(text, strlen(text), &p, &err);
    assert_int_equal(rc, FL_EINVAL);
    assert_null(p);
    assert_non_null(err);
    return err;
}

static void assert_err_names(const char *text, const char *want)
{
    char *err = parse_err(text);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not name \"%s\"", err, want);
    free(err);
}

static fl_identity user(const char *name, const char *group)
{
    fl_identity id;
    fl_identity_set(&id, name, NULL);
    if (group)
        fl_identity_add_group(&id, group);
    fl_identity_add_group(&id, "system:authenticated");
    return id;
}

/* A resource request's level. */
static fl_audit_level res_level(const fl_audit_policy *p, const fl_identity *who, const char *verb, const char *group,
                                const char *resource, const char *sub, const char *ns, const char *name)
{
    fl_auth_attrs at = {.who = who, .verb = verb, .group = group, .resource = resource, .subresource = sub,
                        .ns = ns, .name = name};
    return fl_audit_policy_decide(p, &at).level;
}

static fl_audit_level url_level(const fl_audit_policy *p, const fl_identity *who, const char *verb, const char *path)
{
    fl_auth_attrs at = {.who = who, .verb = verb, .path = path};
    return fl_audit_policy_decide(p, &at).level;
}

static void test_first_matching_rule_wins_and_no_match_is_none(void **state)
{
    (void)state;
    fl_audit_policy *p = parse_ok(HEAD "rules:\n"
                                       "- level: RequestResponse\n  verbs: [create]\n"
                                       "- level: None\n  verbs: [create, get]\n"
                                       "- level: Metadata\n  verbs: [get, list]\n");
    fl_identity u = user("alice", NULL);
    assert_int_equal(fl_audit_policy_rules(p), 3);
    assert_int_equal(res_level(p, &u, "create", "", "pods", "", "default", "x"), FL_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(res_level(p, &u, "get", "", "pods", "", "default", "x"), FL_AUDIT_NONE);
    assert_int_equal(res_level(p, &u, "list", "", "pods", "", "default", ""), FL_AUDIT_METADATA);
    assert_int_equal(res_level(p, &u, "delete", "", "pods", "", "default", "x"), FL_AUDIT_NONE);
    fl_audit_policy_free(p);
}

static void test_users_and_groups_narrow_a_rule(void **state)
{
    (void)state;
    fl_audit_policy *p = parse_ok(HEAD "rules:\n"
                                       "- level: Request\n  users: [alice]\n"
                                       "- level: RequestResponse\n  userGroups: [ops]\n"
                                       "- level: Metadata\n");
    fl_identity alice = user("alice", NULL), bob = user("bob", "ops"), carol = user("carol", "dev");
    assert_int_equal(res_level(p, &alice, "get", "", "pods", "", "a", "x"), FL_AUDIT_REQUEST);
    assert_int_equal(res_level(p, &bob, "get", "", "pods", "", "a", "x"), FL_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(res_level(p, &carol, "get", "", "pods", "", "a", "x"), FL_AUDIT_METADATA);
    /* no user (a trusted caller, a failed login) matches no rule that names users or groups */
    assert_int_equal(res_level(p, NULL, "get", "", "pods", "", "a", "x"), FL_AUDIT_METADATA);
    fl_audit_policy_free(p);
}

static void test_resources_subresources_wildcards_and_names(void **state)
{
    (void)state;
    fl_audit_policy *p = parse_ok(HEAD "rules:\n"
                                       "- level: None\n  resources: [{group: \"\", resources: [\"pods/log\"]}]\n"
                                       "- level: Request\n  resources: [{group: apps, resources: [\"*/scale\"]}]\n"
                                       "- level: RequestResponse\n  resources: [{group: \"\", resources: [\"configmaps\"], "
                                       "resourceNames: [special]}]\n"
                                       "- level: Request\n  resources: [{group: \"\", resources: [\"services/*\"]}]\n"
                                       "- level: Metadata\n  resources: [{group: \"policy.karmada.io\"}]\n"
                                       "- level: Request\n  resources: [{group: \"\", resources: [\"*\"]}]\n");
    fl_identity u = user("u", NULL);
    assert_int_equal(res_level(p, &u, "get", "", "pods", "log", "a", "x"), FL_AUDIT_NONE);
    /* "pods/log" is not pods itself: the catch-all of the core group applies */
    assert_int_equal(res_level(p, &u, "get", "", "pods", "", "a", "x"), FL_AUDIT_REQUEST);
    assert_int_equal(res_level(p, &u, "update", "apps", "deployments", "scale", "a", "x"), FL_AUDIT_REQUEST);
    assert_int_equal(res_level(p, &u, "update", "apps", "deployments", "", "a", "x"), FL_AUDIT_NONE);
    assert_int_equal(res_level(p, &u, "get", "", "configmaps", "", "a", "special"), FL_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(res_level(p, &u, "get", "", "configmaps", "", "a", "other"), FL_AUDIT_REQUEST);
    assert_int_equal(res_level(p, &u, "get", "", "services", "status", "a", "x"), FL_AUDIT_REQUEST);
    assert_int_equal(res_level(p, &u, "list", "policy.karmada.io", "propagationpolicies", "", "a", ""),
                     FL_AUDIT_METADATA);
    /* a group that no rule names */
    assert_int_equal(res_level(p, &u, "list", "work.karmada.io", "works", "", "a", ""), FL_AUDIT_NONE);
    /* resource rules never match non-resource requests */
    assert_int_equal(url_level(p, &u, "get", "/version"), FL_AUDIT_NONE);
    fl_audit_policy_free(p);
}

static void test_namespaces_match_resource_requests_and_empty_is_cluster_scope(void **state)
{
    (void)state;
    fl_audit_policy *p = parse_ok(HEAD "rules:\n"
                                       "- level: RequestResponse\n  namespaces: [kube-system]\n"
                                       "- level: Request\n  namespaces: [\"\"]\n"
                                       "- level: Metadata\n  nonResourceURLs: [\"/apis*\", \"/version\"]\n");
    fl_identity u = user("u", NULL);
    assert_int_equal(res_level(p, &u, "get", "", "configmaps", "", "kube-system", "x"), FL_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(res_level(p, &u, "get", "", "namespaces", "", "", "kube-system"), FL_AUDIT_REQUEST);
    assert_int_equal(res_level(p, &u, "get", "", "configmaps", "", "default", "x"), FL_AUDIT_NONE);
    assert_int_equal(url_level(p, &u, "get", "/apis/apps/v1"), FL_AUDIT_METADATA);
    assert_int_equal(url_level(p, &u, "get", "/version"), FL_AUDIT_METADATA);
    assert_int_equal(url_level(p, &u, "get", "/versions"), FL_AUDIT_NONE);
    assert_int_equal(url_level(p, &u, "get", "/metrics"), FL_AUDIT_NONE);
    fl_audit_policy_free(p);
}

static void test_omit_stages_and_managed_fields_combine_rule_and_policy(void **state)
{
    (void)state;
    fl_audit_policy *p = parse_ok(HEAD "omitStages: [RequestReceived]\nomitManagedFields: true\nrules:\n"
                                       "- level: Metadata\n  verbs: [get]\n  omitStages: [ResponseStarted]\n"
                                       "  omitManagedFields: false\n"
                                       "- level: Request\n");
    fl_auth_attrs get = {.verb = "get", .group = "", .resource = "pods", .ns = "a", .name = "x"};
    fl_audit_decision d = fl_audit_policy_decide(p, &get);
    assert_int_equal(d.level, FL_AUDIT_METADATA);
    assert_int_equal(d.omit_stages, FL_AUDIT_STAGE_RECEIVED | FL_AUDIT_STAGE_STARTED);
    assert_false(d.omit_managed_fields);
    fl_auth_attrs list = {.verb = "list", .group = "", .resource = "pods", .ns = "a", .name = ""};
    d = fl_audit_policy_decide(p, &list);
    assert_int_equal(d.level, FL_AUDIT_REQUEST);
    assert_int_equal(d.omit_stages, FL_AUDIT_STAGE_RECEIVED);
    assert_true(d.omit_managed_fields);
    fl_audit_policy_free(p);
}

static void test_json_policies_and_older_versions_parse_and_unknown_fields_are_ignored(void **state)
{
    (void)state;
    fl_audit_policy *p = parse_ok("{\"apiVersion\":\"audit.k8s.io/v1\",\"kind\":\"Policy\",\"metadata\":{\"name\":"
                                  "\"x\"},\"rules\":[{\"level\":\"Metadata\",\"someFutureField\":1}]}");
    fl_auth_attrs at = {.verb = "get", .path = "/version"};
    assert_int_equal(fl_audit_policy_decide(p, &at).level, FL_AUDIT_METADATA);
    fl_audit_policy_free(p);
    fl_audit_policy_free(parse_ok("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n"));
}

static void test_malformed_policies_name_the_field(void **state)
{
    (void)state;
    assert_err_names(HEAD "rules:\n- level: Metadat\n", "rules[0].level: Unsupported value: \"Metadat\"");
    assert_err_names(HEAD "rules:\n- verbs: [get]\n", "rules[0].level: Required value");
    assert_err_names(HEAD "rules:\n- level: None\n- level: None\n  omitStages: [Done]\n", "rules[1].omitStages[0]");
    assert_err_names(HEAD "omitStages: [Later]\nrules:\n- level: None\n", "omitStages[0]");
    assert_err_names(HEAD "rules:\n- level: None\n  users: alice\n", "rules[0].users: expected a list");
    assert_err_names(HEAD "rules:\n- level: None\n  users: [1]\n", "rules[0].users[0]: expected a string");
    assert_err_names(HEAD "rules:\n- level: None\n  nonResourceURLs: [\"/a\"]\n  resources: [{group: \"\"}]\n",
                     "rules[0].nonResourceURLs: Invalid value: rules cannot apply to both");
    assert_err_names(HEAD "rules:\n- level: None\n  nonResourceURLs: [\"api\"]\n", "must begin with a '/'");
    assert_err_names(HEAD "rules:\n- level: None\n  nonResourceURLs: [\"/a*/b\"]\n", "must be the final character");
    assert_err_names(HEAD "rules:\n- level: None\n  resources: [{group: \"apps/v1\"}]\n",
                     "rules[0].resources[0].group");
    assert_err_names(HEAD "rules:\n- level: None\n  resources: [{group: \"\", resourceNames: [x]}]\n",
                     "resources[0].resourceNames: Invalid value: using resourceNames requires");
    assert_err_names(HEAD "rules:\n- level: None\n  omitManagedFields: yes-please\n", "rules[0].omitManagedFields");
    assert_err_names(HEAD "rules: []\n", "rules: a policy needs at least one rule");
    assert_err_names(HEAD "rules: {}\n", "rules: expected a list");
    assert_err_names("apiVersion: v1\nkind: Policy\nrules: [{level: None}]\n", "apiVersion: expected audit.k8s.io/v1");
    assert_err_names("apiVersion: audit.k8s.io/v1\nkind: Pod\nrules: [{level: None}]\n", "kind: expected Policy");
    assert_err_names(HEAD "rules: [\n", "line ");
    assert_err_names("", "no document");
    assert_err_names("- 1\n", "expected a Policy object");
}

static void test_the_first_error_is_the_one_reported(void **state)
{
    (void)state;
    char *err = parse_err(HEAD "rules:\n- level: None\n- level: Bad\n- level: Worse\n");
    assert_non_null(strstr(err, "rules[1].level"));
    assert_null(strstr(err, "rules[2]"));
    free(err);
}

static void test_load_names_the_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_audit_policy_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = HEAD "rules:\n- level: Sometimes\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    fl_audit_policy *p = NULL;
    char *err = NULL;
    assert_int_equal(fl_audit_policy_load(path, &p, &err), FL_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "rules[0].level"));
    assert_null(strchr(err, '\n'));
    free(err);
    unlink(path);
    err = NULL;
    assert_int_equal(fl_audit_policy_load("/nonexistent/policy.yaml", &p, &err), FL_EINVAL);
    assert_non_null(strstr(err, "/nonexistent/policy.yaml"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_matching_rule_wins_and_no_match_is_none),
        cmocka_unit_test(test_users_and_groups_narrow_a_rule),
        cmocka_unit_test(test_resources_subresources_wildcards_and_names),
        cmocka_unit_test(test_namespaces_match_resource_requests_and_empty_is_cluster_scope),
        cmocka_unit_test(test_omit_stages_and_managed_fields_combine_rule_and_policy),
        cmocka_unit_test(test_json_policies_and_older_versions_parse_and_unknown_fields_are_ignored),
        cmocka_unit_test(test_malformed_policies_name_the_field),
        cmocka_unit_test(test_the_first_error_is_the_one_reported),
        cmocka_unit_test(test_load_names_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
