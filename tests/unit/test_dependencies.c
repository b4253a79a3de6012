/* test_dependencies.c - the dependencies distributor (src/controllers/dependencies.c) alone
 * against an in-process API over a memory store, for what docs/propagation.md (propagateDeps)
 * promises: what a workload refers to (a ConfigMap it mounts, a Secret and a ConfigMap in its
 * environment, its ServiceAccount) gets an attached binding whose spec.requiredBy names the
 * workload's binding and its clusters, with no placement of its own; the snapshot follows the
 * dependent's clusters; two dependents share one attached binding; a dependency no longer
 * referred to, or whose last dependent went, loses its binding. The test writes the templates
 * and the scheduled dependent binding the detector and the scheduler would. Every wait polls
 * the API against a deadline. */
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

#define RBS "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
#define DEPLOYS "/apis/apps/v1/namespaces/default/deployments"
#define CMS "/api/v1/namespaces/default/configmaps"

typedef test_fixture fixture;

static int setup(void **state)
{
    fixture *f = test_fixture_new();
    test_ctrl_start(&f->api, "dependencies", &f->ctrl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    test_fixture_free(*state);
    return 0;
}

static void create(fixture *f, const char *collection, json_t *obj)
{
    assert_int_equal(test_api_send(&f->api, "POST", collection, obj), 201);
    json_decref(obj);
}

static void create_configmap(fixture *f, const char *name)
{
    create(f, CMS, json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                             name, "data", "MODE", "batch"));
}

/* Deployment name whose Pod template mounts ConfigMap cm as a volume, plus extra merged into
 * the Pod spec (may be NULL). */
static void create_deployment(fixture *f, const char *name, const char *cm, json_t *pod_extra)
{
    json_t *d = json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}], "
                          "s:[{s:s, s:{s:s}}]}}}}",
                          "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", name, "spec", "replicas",
                          2, "selector", "matchLabels", "app", name, "template", "metadata", "labels", "app", name,
                          "spec", "containers", "name", "app", "image", "example/worker:9", "volumes", "name", "config",
                          "configMap", "name", cm);
    if (pod_extra) {
        json_t *pod = fl_json_path(d, "spec.template.spec");
        json_object_update(pod, pod_extra);
        json_decref(pod_extra);
    }
    create(f, DEPLOYS, d);
}

/* The dependent binding of Deployment name, as the detector and the scheduler leave it: with
 * propagateDeps, scheduled to the clusters listed (comma-separated). */
static void create_binding(fixture *f, const char *name, const char *clusters)
{
    char bname[128], path[256], buf[128];
    snprintf(bname, sizeof bname, "%s-deployment", name);
    snprintf(path, sizeof path, DEPLOYS "/%s", name);
    json_t *tmpl = test_api_get(&f->api, path);
    assert_non_null(tmpl);
    json_t *targets = json_array();
    snprintf(buf, sizeof buf, "%s", clusters);
    for (char *c = strtok(buf, ","); c; c = strtok(NULL, ","))
        json_array_append_new(targets, json_pack("{s:s, s:i}", "name", c, "replicas", 2));
    create(f, RBS,
           json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s, s:s, s:s}, s:i, s:b, s:{s:{s:s}}, s:o}}", "apiVersion",
                     "work.karmada.io/v1alpha2", "kind", "ResourceBinding", "metadata", "name", bname, "spec",
                     "resource", "apiVersion", "apps/v1", "kind", "Deployment", "namespace", "default", "name", name,
                     "uid", fl_json_meta(tmpl, "uid"), "replicas", 2, "propagateDeps", 1, "placement",
                     "replicaScheduling", "replicaSchedulingType", "Duplicated", "clusters", targets));
    json_decref(tmpl);
}

static json_t *get_binding(fixture *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, RBS "/%s", name);
    return test_api_get(&f->api, path);
}

/* The binding's spec.requiredBy, compact with sorted keys ("" when the binding or it is
 * missing). */
static bool required_by_is(fixture *f, const char *name, const char *want)
{
    json_t *b = get_binding(f, name);
    json_t *r = fl_json_path(b, "spec.requiredBy");
    char *s = r ? json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS) : strdup("");
    bool same = !strcmp(s, want);
    free(s);
    json_decref(b);
    return same;
}

/* Gone, or going (its finalizer is the binding controller's, which does not run here). */
static bool binding_deleted(fixture *f, const char *name)
{
    json_t *b = get_binding(f, name);
    bool gone = !b || fl_json_meta(b, "deletionTimestamp");
    json_decref(b);
    return gone;
}

#define WORKER_ON_2_AND_3                                                                                              \
    "[{\"clusters\":[{\"name\":\"member2\"},{\"name\":\"member3\"}],\"name\":\"worker-deployment\",\"namespace\":"    \
    "\"default\"}]"

static void test_a_configmap_the_deployment_mounts_follows_it(void **state)
{
    fixture *f = *state;
    create_configmap(f, "worker-env");
    create_deployment(f, "worker", "worker-env", NULL);
    create_binding(f, "worker", "member2,member3");
    WAIT_UNTIL(required_by_is(f, "worker-env-configmap", WORKER_ON_2_AND_3), DEADLINE_MS);
    json_t *att = get_binding(f, "worker-env-configmap"), *cm = test_api_get(&f->api, CMS "/worker-env");
    /* the ConfigMap's binding: its identity, owned by it, not placed by itself (the scheduler
     * leaves it alone: the binding controller sends it where its dependents go) */
    assert_string_equal(fl_json_path_str(att, "spec.resource.apiVersion"), "v1");
    assert_string_equal(fl_json_path_str(att, "spec.resource.kind"), "ConfigMap");
    assert_string_equal(fl_json_path_str(att, "spec.resource.name"), "worker-env");
    assert_string_equal(fl_json_path_str(att, "spec.resource.uid"), fl_json_meta(cm, "uid"));
    assert_null(fl_json_path(att, "spec.placement"));
    assert_null(fl_json_path(att, "spec.clusters"));
    assert_true(fl_json_has_finalizer(att, "karmada.io/binding-controller"));
    json_t *owner = json_array_get(fl_json_path(att, "metadata.ownerReferences"), 0);
    assert_string_equal(fl_json_str(owner, "kind"), "ConfigMap");
    assert_string_equal(fl_json_str(owner, "uid"), fl_json_meta(cm, "uid"));
    json_decref(att);
    json_decref(cm);
}

static void test_secrets_configmaps_and_the_service_account_it_uses_follow_it(void **state)
{
    fixture *f = *state;
    create_configmap(f, "worker-mount");
    create_configmap(f, "worker-env");
    create(f, "/api/v1/namespaces/default/secrets",
           json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata", "name",
                     "worker-creds", "stringData", "token", "s3cr3t"));
    create(f, "/api/v1/namespaces/default/serviceaccounts",
           json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata", "name", "worker"));
    json_t *pod = json_pack("{s:s, s:[{s:s, s:s, s:[{s:{s:s}}], s:[{s:s, s:{s:{s:s, s:s}}}]}]}", "serviceAccountName",
                            "worker", "containers", "name", "app", "image", "example/worker:9", "envFrom",
                            "configMapRef", "name", "worker-env", "env", "name", "TOKEN", "valueFrom",
                            "secretKeyRef", "name", "worker-creds", "key", "token");
    create_deployment(f, "worker", "worker-mount", pod);
    create_binding(f, "worker", "member2,member3");
    WAIT_UNTIL(required_by_is(f, "worker-mount-configmap", WORKER_ON_2_AND_3), DEADLINE_MS);
    WAIT_UNTIL(required_by_is(f, "worker-env-configmap", WORKER_ON_2_AND_3), DEADLINE_MS);
    WAIT_UNTIL(required_by_is(f, "worker-creds-secret", WORKER_ON_2_AND_3), DEADLINE_MS);
    WAIT_UNTIL(required_by_is(f, "worker-serviceaccount", WORKER_ON_2_AND_3), DEADLINE_MS);
}

static void test_the_attached_binding_follows_its_dependents_clusters(void **state)
{
    fixture *f = *state;
    create_configmap(f, "worker-env");
    create_deployment(f, "worker", "worker-env", NULL);
    create_binding(f, "worker", "member2,member3");
    WAIT_UNTIL(required_by_is(f, "worker-env-configmap", WORKER_ON_2_AND_3), DEADLINE_MS);
    json_t *p = json_pack("{s:{s:[{s:s, s:i}]}}", "spec", "clusters", "name", "member1", "replicas", 2);
    assert_int_equal(test_api_send(&f->api, "PATCH", RBS "/worker-deployment", p), 200);
    json_decref(p);
    WAIT_UNTIL(required_by_is(f, "worker-env-configmap",
                              "[{\"clusters\":[{\"name\":\"member1\"}],\"name\":\"worker-deployment\",\"namespace\":"
                              "\"default\"}]"),
               DEADLINE_MS);
}

static void test_a_configmap_no_longer_mounted_loses_its_binding(void **state)
{
    fixture *f = *state;
    create_configmap(f, "old-config");
    create_configmap(f, "new-config");
    create_deployment(f, "worker", "old-config", NULL);
    create_binding(f, "worker", "member2,member3");
    WAIT_UNTIL(required_by_is(f, "old-config-configmap", WORKER_ON_2_AND_3), DEADLINE_MS);
    /* the workload mounts another ConfigMap instead */
    json_t *p = json_pack("{s:{s:{s:{s:[{s:s, s:{s:s}}]}}}}", "spec", "template", "spec", "volumes", "name", "config",
                          "configMap", "name", "new-config");
    assert_int_equal(test_api_send(&f->api, "PATCH", DEPLOYS "/worker", p), 200);
    json_decref(p);
    WAIT_UNTIL(required_by_is(f, "new-config-configmap", WORKER_ON_2_AND_3), DEADLINE_MS);
    WAIT_UNTIL(binding_deleted(f, "old-config-configmap"), DEADLINE_MS);
}

static void test_two_dependents_share_one_attached_binding(void **state)
{
    fixture *f = *state;
    create_configmap(f, "shared");
    create_deployment(f, "a", "shared", NULL);
    create_deployment(f, "b", "shared", NULL);
    create_binding(f, "a", "member1");
    create_binding(f, "b", "member2");
    WAIT_UNTIL(required_by_is(f, "shared-configmap",
                              "[{\"clusters\":[{\"name\":\"member1\"}],\"name\":\"a-deployment\",\"namespace\":"
                              "\"default\"},{\"clusters\":[{\"name\":\"member2\"}],\"name\":\"b-deployment\","
                              "\"namespace\":\"default\"}]") ||
                   required_by_is(f, "shared-configmap",
                                  "[{\"clusters\":[{\"name\":\"member2\"}],\"name\":\"b-deployment\",\"namespace\":"
                                  "\"default\"},{\"clusters\":[{\"name\":\"member1\"}],\"name\":\"a-deployment\","
                                  "\"namespace\":\"default\"}]"),
               DEADLINE_MS);
    /* one dependent goes: its snapshot goes, the binding stays for the other */
    assert_int_equal(test_api_request(&f->api, "DELETE", RBS "/a-deployment", NULL, NULL), 200);
    WAIT_UNTIL(required_by_is(f, "shared-configmap",
                              "[{\"clusters\":[{\"name\":\"member2\"}],\"name\":\"b-deployment\",\"namespace\":"
                              "\"default\"}]"),
               DEADLINE_MS);
    assert_false(binding_deleted(f, "shared-configmap"));
    /* the last one goes: so does the attached binding */
    assert_int_equal(test_api_request(&f->api, "DELETE", RBS "/b-deployment", NULL, NULL), 200);
    WAIT_UNTIL(binding_deleted(f, "shared-configmap"), DEADLINE_MS);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_configmap_the_deployment_mounts_follows_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secrets_configmaps_and_the_service_account_it_uses_follow_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_attached_binding_follows_its_dependents_clusters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_configmap_no_longer_mounted_loses_its_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_dependents_share_one_attached_binding, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
