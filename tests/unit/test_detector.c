/* test_detector.c - the detector (src/controllers/detector.c) alone against an in-process API
 * over a memory store, for what docs/propagation.md promises of it: a policy that selects a
 * template claims it and makes its binding (the template's identity and replicas, the
 * policy's placement, the binding controller's finalizer); the binding follows the template's
 * replicas; a claim stands against a better policy unless that one preempts; a policy's
 * deletion releases the claim and leaves the binding; a template's deletion deletes its
 * binding; a Lazy policy's change waits for the template's own. No scheduler or binding
 * controller runs: what is asserted is what the detector wrote. Every wait polls the API
 * against a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_get.h"
#include "core/mem.h"

#include "testapi.h"
#include "testutil.h"

/* generous: the machine may be busy with other builds; a normal run takes milliseconds */
#define DEADLINE_MS 10000

#define PPS "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
#define RBS "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
#define DEPLOYS "/apis/apps/v1/namespaces/default/deployments"
#define CMS "/api/v1/namespaces/default/configmaps"
#define SECRETS "/api/v1/namespaces/default/secrets"

typedef test_fixture fixture;

static int setup(void **state)
{
    fixture *f = test_fixture_new();
    test_ctrl_start(&f->api, "detector", &f->ctrl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    test_fixture_free(*state);
    return 0;
}

static void create_deployment(fixture *f, const char *name, int replicas, const char *tier)
{
    json_t *d = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s?}}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
                          "s:{s:[{s:s, s:s, s:{s:{s:s, s:s}}}]}}}}",
                          "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", name, "labels", "app",
                          name, "tier", tier, "spec", "replicas", replicas, "selector", "matchLabels", "app", name,
                          "template", "metadata", "labels", "app", name, "spec", "containers", "name", "app",
                          "image", "nginx:1.25", "resources", "requests", "cpu", "100m", "memory", "64Mi");
    assert_int_equal(test_api_send(&f->api, "POST", DEPLOYS, d), 201);
    json_decref(d);
}

/* A PropagationPolicy of name selecting (apiVersion, kind) by name (sel_name) or, when NULL,
 * by the label tier=backend, placing on the clusters listed (comma-separated); extra (may be
 * NULL) is merged into its spec. */
static void create_policy(fixture *f, const char *name, const char *av, const char *kind, const char *sel_name,
                          const char *clusters, json_t *extra)
{
    json_t *sel = json_pack("{s:s, s:s}", "apiVersion", av, "kind", kind);
    if (sel_name)
        json_object_set_new(sel, "name", json_string(sel_name));
    else
        json_object_set_new(sel, "labelSelector", json_pack("{s:{s:s}}", "matchLabels", "tier", "backend"));
    json_t *names = json_array();
    char buf[128];
    snprintf(buf, sizeof buf, "%s", clusters);
    for (char *c = strtok(buf, ","); c; c = strtok(NULL, ","))
        json_array_append_new(names, json_string(c));
    json_t *p = json_pack("{s:s, s:s, s:{s:s}, s:{s:[o], s:{s:{s:o}}}}", "apiVersion", "policy.karmada.io/v1alpha1",
                          "kind", "PropagationPolicy", "metadata", "name", name, "spec", "resourceSelectors", sel,
                          "placement", "clusterAffinity", "clusterNames", names);
    if (extra) {
        json_object_update(json_object_get(p, "spec"), extra);
        json_decref(extra);
    }
    assert_int_equal(test_api_send(&f->api, "POST", PPS, p), 201);
    json_decref(p);
}

static json_t *get(fixture *f, const char *collection, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", collection, name);
    return test_api_get(&f->api, path);
}

/* The value at a dotted path of the object at collection/name, compact with sorted keys
 * ("" when the object or the value is missing), for comparisons in polls. */
static char *field(fixture *f, const char *collection, const char *name, const char *path)
{
    json_t *o = get(f, collection, name);
    json_t *v = fl_json_path(o, path);
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : strdup("");
    json_decref(o);
    return s;
}

static bool field_is(fixture *f, const char *collection, const char *name, const char *path, const char *want)
{
    char *s = field(f, collection, name, path);
    bool same = !strcmp(s, want);
    free(s);
    return same;
}

/* Which policy has claimed the template, by the claim's name annotation ("" when none). */
static bool claimed_by(fixture *f, const char *collection, const char *name, const char *policy)
{
    json_t *o = get(f, collection, name);
    const char *have = fl_json_meta_map(o, "annotations", "propagationpolicy.karmada.io/name");
    bool same = o && !strcmp(have ? have : "", policy);
    json_decref(o);
    return same;
}

static void test_a_policy_matching_a_deployment_makes_its_binding(void **state)
{
    fixture *f = *state;
    create_deployment(f, "nginx", 6, "web");
    create_policy(f, "nginx", "apps/v1", "Deployment", "nginx", "member1,member2", NULL);
    json_t *rb = NULL;
    WAIT_UNTIL((json_decref(rb), rb = get(f, RBS, "nginx-deployment")) != NULL, DEADLINE_MS);
    json_t *tmpl = get(f, DEPLOYS, "nginx"), *pp = get(f, PPS, "nginx");
    assert_non_null(tmpl);
    assert_non_null(pp);
    const char *uid = fl_json_meta(tmpl, "uid");

    /* spec.resource names the template; replicas and requests are read from it; the placement
     * is the policy's */
    assert_string_equal(fl_json_path_str(rb, "spec.resource.apiVersion"), "apps/v1");
    assert_string_equal(fl_json_path_str(rb, "spec.resource.kind"), "Deployment");
    assert_string_equal(fl_json_path_str(rb, "spec.resource.namespace"), "default");
    assert_string_equal(fl_json_path_str(rb, "spec.resource.name"), "nginx");
    assert_string_equal(fl_json_path_str(rb, "spec.resource.uid"), uid);
    assert_int_equal(json_integer_value(fl_json_path(rb, "spec.replicas")), 6);
    assert_string_equal(fl_json_path_str(rb, "spec.replicaRequirements.resourceRequest.cpu"), "100m");
    char *placement = json_dumps(fl_json_path(rb, "spec.placement"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(placement, "{\"clusterAffinity\":{\"clusterNames\":[\"member1\",\"member2\"]}}");
    free(placement);
    /* not scheduled by the detector */
    assert_null(fl_json_path(rb, "spec.clusters"));

    /* the binding controller's finalizer; owned by the template, which it goes with */
    assert_true(fl_json_has_finalizer(rb, "karmada.io/binding-controller"));
    json_t *owner = json_array_get(fl_json_path(rb, "metadata.ownerReferences"), 0);
    assert_string_equal(fl_json_str(owner, "kind"), "Deployment");
    assert_string_equal(fl_json_str(owner, "uid"), uid);
    assert_true(json_is_true(json_object_get(owner, "controller")));

    /* the claim, on the template and the binding alike: the policy's permanent ID and name */
    const char *pp_id = fl_json_meta_map(pp, "labels", "propagationpolicy.karmada.io/permanent-id");
    assert_non_null(pp_id);
    WAIT_UNTIL(claimed_by(f, DEPLOYS, "nginx", "nginx"), DEADLINE_MS);
    json_decref(tmpl);
    tmpl = get(f, DEPLOYS, "nginx");
    assert_string_equal(fl_json_meta_map(tmpl, "labels", "propagationpolicy.karmada.io/permanent-id"), pp_id);
    assert_string_equal(fl_json_meta_map(tmpl, "annotations", "propagationpolicy.karmada.io/namespace"), "default");
    assert_string_equal(fl_json_meta_map(rb, "labels", "propagationpolicy.karmada.io/permanent-id"), pp_id);
    assert_string_equal(fl_json_meta_map(rb, "annotations", "propagationpolicy.karmada.io/name"), "nginx");
    json_decref(rb);
    json_decref(tmpl);
    json_decref(pp);
}

/* The detector with the customizations controller before it, under one manager (as in the
 * server): users' ResourceInterpreterCustomizations reach the interpreter it asks. */
static int setup_with_customizations(void **state)
{
    fixture *f = test_fixture_new();
    const fl_controller *two[3] = {NULL, NULL, NULL};
    for (size_t i = 0; fl_server_controllers[i]; i++) {
        if (!strcmp(fl_server_controllers[i]->name, "customizations"))
            two[0] = fl_server_controllers[i];
        if (!strcmp(fl_server_controllers[i]->name, "detector"))
            two[1] = fl_server_controllers[i];
    }
    assert_non_null(two[0]);
    assert_non_null(two[1]);
    f->ctrl.cp = fl_api_local_client(&f->api, "flotilla-controller-manager");
    fl_ctrl_env env = {.cp = f->ctrl.cp, .stopping = &f->api.stopping};
    assert_int_equal(fl_ctrl_manager_start(&env, two, &f->ctrl.m), 0);
    *state = f;
    return 0;
}

#define RICS "/apis/config.karmada.io/v1alpha1/resourceinterpretercustomizations"

/* A kind with a componentResource rule is described by its components alone (Karmada's
 * MultiplePodTemplatesScheduling): spec.components, sorted by name, and no spec.replicas or
 * spec.replicaRequirements; without the rule, back to GetReplicas. */
static void test_a_kind_with_components_binds_them_instead_of_replicas(void **state)
{
    fixture *f = *state;
    create_deployment(f, "split", 3, "web");
    create_policy(f, "split", "apps/v1", "Deployment", "split", "member1", NULL);
    WAIT_UNTIL(field_is(f, RBS, "split-deployment", "spec.replicas", "3"), DEADLINE_MS);
    json_t *ric = json_pack(
        "{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s}, s:{s:{s:s}}}}", "apiVersion", "config.karmada.io/v1alpha1", "kind",
        "ResourceInterpreterCustomization", "metadata", "name", "two-parts", "spec", "target", "apiVersion", "apps/v1",
        "kind", "Deployment", "customizations", "componentResource", "luaScript",
        "function GetComponents(d)\n"
        "  return {{name = 'worker', replicas = d.spec.replicas,\n"
        "           replicaRequirements = {resourceRequest = {cpu = 0.25}, namespace = 'x'}},\n"
        "          {name = 'leader', replicas = 1}}\n"
        "end");
    assert_int_equal(test_api_send(&f->api, "POST", RICS, ric), 201);
    json_decref(ric);
    /* the change reaches the existing binding: components in, replicas out */
    WAIT_UNTIL(field_is(f, RBS, "split-deployment", "spec.components",
                        "[{\"name\":\"leader\",\"replicas\":1},{\"name\":\"worker\",\"replicaRequirements\":"
                        "{\"resourceRequest\":{\"cpu\":\"250m\"}},\"replicas\":3}]"),
               DEADLINE_MS);
    assert_true(field_is(f, RBS, "split-deployment", "spec.replicas", ""));
    assert_true(field_is(f, RBS, "split-deployment", "spec.replicaRequirements", ""));
    /* the template's replicas feed the components as they feed replicas */
    json_t *scale = json_pack("{s:{s:i}}", "spec", "replicas", 5);
    assert_int_equal(test_api_send(&f->api, "PATCH", DEPLOYS "/split", scale), 200);
    json_decref(scale);
    WAIT_UNTIL(field_is(f, RBS, "split-deployment", "spec.components",
                        "[{\"name\":\"leader\",\"replicas\":1},{\"name\":\"worker\",\"replicaRequirements\":"
                        "{\"resourceRequest\":{\"cpu\":\"250m\"}},\"replicas\":5}]"),
               DEADLINE_MS);
    /* the rule deleted: the native GetReplicas again, and no components */
    assert_int_equal(test_api_send(&f->api, "DELETE", RICS "/two-parts", NULL), 200);
    WAIT_UNTIL(field_is(f, RBS, "split-deployment", "spec.replicas", "5"), DEADLINE_MS);
    assert_true(field_is(f, RBS, "split-deployment", "spec.components", ""));
    assert_true(field_is(f, RBS, "split-deployment", "spec.replicaRequirements.resourceRequest.cpu", "\"100m\""));
}

static void test_a_template_scaled_changes_its_binding_replicas(void **state)
{
    fixture *f = *state;
    create_deployment(f, "api", 2, "backend");
    create_policy(f, "api", "apps/v1", "Deployment", "api", "member1", NULL);
    WAIT_UNTIL(field_is(f, RBS, "api-deployment", "spec.replicas", "2"), DEADLINE_MS);
    json_t *scale = json_pack("{s:{s:i}}", "spec", "replicas", 5);
    assert_int_equal(test_api_send(&f->api, "PATCH", DEPLOYS "/api", scale), 200);
    json_decref(scale);
    WAIT_UNTIL(field_is(f, RBS, "api-deployment", "spec.replicas", "5"), DEADLINE_MS);
}

static void test_a_claimed_template_stays_with_its_policy_unless_preempted(void **state)
{
    fixture *f = *state;
    json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                           "metadata", "name", "pay-config", "labels", "tier", "backend", "data", "currency", "EUR");
    assert_int_equal(test_api_send(&f->api, "POST", CMS, cm), 201);
    json_decref(cm);
    create_policy(f, "team-pay", "v1", "ConfigMap", NULL, "member1", NULL);
    WAIT_UNTIL(field_is(f, RBS, "pay-config-configmap", "spec.placement.clusterAffinity.clusterNames",
                        "[\"member1\"]"),
               DEADLINE_MS);
    assert_true(claimed_by(f, CMS, "pay-config", "team-pay"));

    /* a better policy (higher priority, by name) does not take a claimed template; it also
     * selects an unclaimed one, whose claim says the detector has seen the policy */
    json_t *probe = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                              "probe");
    assert_int_equal(test_api_send(&f->api, "POST", CMS, probe), 201);
    json_decref(probe);
    create_policy(f, "pay-config-eu", "v1", "ConfigMap", "pay-config", "member2",
                  json_pack("{s:i, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "priority", 10, "resourceSelectors",
                            "apiVersion", "v1", "kind", "ConfigMap", "name", "pay-config", "apiVersion", "v1", "kind",
                            "ConfigMap", "name", "probe"));
    WAIT_UNTIL(claimed_by(f, CMS, "probe", "pay-config-eu"), DEADLINE_MS);
    assert_true(claimed_by(f, CMS, "pay-config", "team-pay"));
    assert_true(field_is(f, RBS, "pay-config-configmap", "spec.placement.clusterAffinity.clusterNames",
                         "[\"member1\"]"));

    /* ...unless it says preemption: Always */
    json_t *pre = json_pack("{s:{s:s}}", "spec", "preemption", "Always");
    assert_int_equal(test_api_send(&f->api, "PATCH", PPS "/pay-config-eu", pre), 200);
    json_decref(pre);
    WAIT_UNTIL(claimed_by(f, CMS, "pay-config", "pay-config-eu"), DEADLINE_MS);
    WAIT_UNTIL(field_is(f, RBS, "pay-config-configmap", "spec.placement.clusterAffinity.clusterNames",
                        "[\"member2\"]"),
               DEADLINE_MS);
    json_t *rb = get(f, RBS, "pay-config-configmap"), *pp = get(f, PPS, "pay-config-eu");
    assert_string_equal(fl_json_meta_map(rb, "labels", "propagationpolicy.karmada.io/permanent-id"),
                        fl_json_meta_map(pp, "labels", "propagationpolicy.karmada.io/permanent-id"));
    json_decref(rb);
    json_decref(pp);
}

static void test_a_deleted_policy_releases_the_claim_and_keeps_the_binding(void **state)
{
    fixture *f = *state;
    create_deployment(f, "api", 2, "backend");
    create_policy(f, "backend", "apps/v1", "Deployment", NULL, "member1", NULL);
    WAIT_UNTIL(field_is(f, RBS, "api-deployment", "spec.replicas", "2"), DEADLINE_MS);
    WAIT_UNTIL(claimed_by(f, DEPLOYS, "api", "backend"), DEADLINE_MS);
    assert_int_equal(test_api_request(&f->api, "DELETE", PPS "/backend", NULL, NULL), 200);

    /* the claim leaves the template and the binding... */
    WAIT_UNTIL(field_is(f, DEPLOYS, "api", "metadata.labels", "{\"app\":\"api\",\"tier\":\"backend\"}"),
               DEADLINE_MS);
    WAIT_UNTIL(claimed_by(f, RBS, "api-deployment", ""), DEADLINE_MS);
    json_t *rb = get(f, RBS, "api-deployment"), *tmpl = get(f, DEPLOYS, "api");
    assert_null(fl_json_meta_map(rb, "labels", "propagationpolicy.karmada.io/permanent-id"));
    assert_null(fl_json_meta_map(rb, "annotations", "propagationpolicy.karmada.io/name"));
    assert_null(fl_json_meta_map(tmpl, "annotations", "propagationpolicy.karmada.io/name"));
    /* ...and the binding stays, as it was, not being deleted */
    assert_null(fl_json_meta(rb, "deletionTimestamp"));
    assert_int_equal(json_integer_value(fl_json_path(rb, "spec.replicas")), 2);
    assert_string_equal(fl_json_path_str(rb, "spec.resource.uid"), fl_json_meta(tmpl, "uid"));
    json_decref(rb);
    json_decref(tmpl);

    /* another policy that selects it claims it afterwards */
    create_policy(f, "api-again", "apps/v1", "Deployment", "api", "member2", NULL);
    WAIT_UNTIL(claimed_by(f, DEPLOYS, "api", "api-again"), DEADLINE_MS);
    WAIT_UNTIL(field_is(f, RBS, "api-deployment", "spec.placement.clusterAffinity.clusterNames", "[\"member2\"]"),
               DEADLINE_MS);
}

/* Gone, or going (its finalizer is the binding controller's, which does not run here). */
static bool deleted(fixture *f, const char *collection, const char *name)
{
    json_t *o = get(f, collection, name);
    bool gone = !o || fl_json_meta(o, "deletionTimestamp");
    json_decref(o);
    return gone;
}

static void test_a_deleted_template_deletes_its_binding(void **state)
{
    fixture *f = *state;
    create_deployment(f, "nginx", 3, "web");
    create_deployment(f, "other", 1, "web");
    create_policy(f, "web", "apps/v1", "Deployment", NULL, "member1",
                  json_pack("{s:[{s:s, s:s}]}", "resourceSelectors", "apiVersion", "apps/v1", "kind", "Deployment"));
    WAIT_UNTIL(field_is(f, RBS, "nginx-deployment", "spec.replicas", "3"), DEADLINE_MS);
    WAIT_UNTIL(field_is(f, RBS, "other-deployment", "spec.replicas", "1"), DEADLINE_MS);
    assert_int_equal(test_api_request(&f->api, "DELETE", DEPLOYS "/nginx", NULL, NULL), 200);
    WAIT_UNTIL(deleted(f, RBS, "nginx-deployment"), DEADLINE_MS);
    /* the other template's binding stays */
    assert_false(deleted(f, RBS, "other-deployment"));
}

static void test_a_lazy_policy_change_waits_for_the_template_to_change(void **state)
{
    fixture *f = *state;
    json_t *cm = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                           "feature-flags", "data", "new-checkout", "false");
    assert_int_equal(test_api_send(&f->api, "POST", CMS, cm), 201);
    json_decref(cm);
    create_policy(f, "feature-flags", "v1", "ConfigMap", "feature-flags", "member1",
                  json_pack("{s:s}", "activationPreference", "Lazy"));
    const char *member1 = "[\"member1\"]", *both = "[\"member1\",\"member3\"]";
    const char *names = "spec.placement.clusterAffinity.clusterNames";
    /* a template there before the Lazy policy: claimed, but not propagated... */
    WAIT_UNTIL(claimed_by(f, CMS, "feature-flags", "feature-flags"), DEADLINE_MS);
    json_t *none = get(f, RBS, "feature-flags-configmap");
    assert_null(none);
    /* ...until it changes */
    json_t *edit = json_pack("{s:{s:s}}", "data", "new-checkout", "true");
    assert_int_equal(test_api_send(&f->api, "PATCH", CMS "/feature-flags", edit), 200);
    json_decref(edit);
    WAIT_UNTIL(field_is(f, RBS, "feature-flags-configmap", names, member1), DEADLINE_MS);

    /* a template that exists before the policy selects it, of a kind nobody watched yet (one
     * the detector's watch of ConfigMaps would see created, perhaps after the change)... */
    json_t *probe = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata", "name",
                              "probe", "stringData", "k", "v");
    assert_int_equal(test_api_send(&f->api, "POST", SECRETS, probe), 201);
    json_decref(probe);
    /* ...the policy changes its placement, and selects that one too */
    json_t *p = json_pack("{s:{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}], s:{s:{s:[s, s]}}}}", "spec", "resourceSelectors",
                          "apiVersion", "v1", "kind", "ConfigMap", "name", "feature-flags", "apiVersion", "v1", "kind",
                          "Secret", "name", "probe", "placement", "clusterAffinity", "clusterNames", "member1",
                          "member3");
    assert_int_equal(test_api_send(&f->api, "PATCH", PPS "/feature-flags", p), 200);
    json_decref(p);
    /* it is claimed (the detector has seen the change), but has no binding yet... */
    WAIT_UNTIL(claimed_by(f, SECRETS, "probe", "feature-flags"), DEADLINE_MS);
    none = get(f, RBS, "probe-secret");
    assert_null(none);
    /* ...and the binding of the claimed template did not change */
    assert_true(field_is(f, RBS, "feature-flags-configmap", names, member1));

    /* the template's own change applies it */
    edit = json_pack("{s:{s:s}}", "data", "new-checkout", "false");
    assert_int_equal(test_api_send(&f->api, "PATCH", CMS "/feature-flags", edit), 200);
    json_decref(edit);
    WAIT_UNTIL(field_is(f, RBS, "feature-flags-configmap", names, both), DEADLINE_MS);
    json_t *edit2 = json_pack("{s:{s:s}}", "stringData", "k", "w");
    assert_int_equal(test_api_send(&f->api, "PATCH", SECRETS "/probe", edit2), 200);
    json_decref(edit2);
    WAIT_UNTIL(field_is(f, RBS, "probe-secret", names, both), DEADLINE_MS);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_policy_matching_a_deployment_makes_its_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_template_scaled_changes_its_binding_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_kind_with_components_binds_them_instead_of_replicas,
                                        setup_with_customizations, teardown),
        cmocka_unit_test_setup_teardown(test_a_claimed_template_stays_with_its_policy_unless_preempted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_deleted_policy_releases_the_claim_and_keeps_the_binding, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_deleted_template_deletes_its_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_lazy_policy_change_waits_for_the_template_to_change, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
