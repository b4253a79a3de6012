/* test_prune_names.c - unit tests for what a template loses on its way into a Work
 * (src/interp/prune.c) and for the names of the data path's objects (src/controllers/names.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "controllers/names.h"
#include "core/mem.h"
#include "interp/prune.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s", e.position, e.text);
    return v;
}

static json_t *at(json_t *o, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return v;
}

static void test_prune_drops_server_owned_metadata_and_status(void **state)
{
    (void)state;
    json_t *o = js("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"d\","
                   "\"uid\":\"u\",\"resourceVersion\":\"7\",\"generation\":2,\"creationTimestamp\":\"t\","
                   "\"managedFields\":[],\"ownerReferences\":[],\"finalizers\":[\"x\"],\"selfLink\":\"s\","
                   "\"deletionTimestamp\":\"t\",\"deletionGracePeriodSeconds\":0,\"labels\":{\"a\":\"b\"},"
                   "\"annotations\":{\"k\":\"v\"}},\"data\":{\"x\":\"y\"},\"status\":{\"s\":1}}");
    fl_prune(o);
    json_t *md = json_object_get(o, "metadata");
    assert_int_equal(json_object_size(md), 4); /* name, namespace, labels, annotations */
    assert_non_null(json_object_get(md, "labels"));
    assert_non_null(json_object_get(md, "annotations"));
    assert_null(json_object_get(o, "status"));
    assert_string_equal(json_string_value(at(o, "data", "x", NULL)), "y");
    json_decref(o);
}

static void test_prune_drops_deployment_revision_annotations_only(void **state)
{
    (void)state;
    json_t *o = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"w\",\"annotations\":"
                   "{\"deployment.kubernetes.io/revision\":\"3\",\"deployment.kubernetes.io/revision-history\":\"1,2\","
                   "\"mine\":\"kept\"}}}");
    fl_prune(o);
    json_t *anns = at(o, "metadata", "annotations", NULL);
    assert_int_equal(json_object_size(anns), 1);
    assert_string_equal(json_string_value(json_object_get(anns, "mine")), "kept");
    json_decref(o);
}

static void test_prune_drops_allocated_cluster_ips_but_keeps_headless(void **state)
{
    (void)state;
    json_t *o = js("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s\"},"
                   "\"spec\":{\"clusterIP\":\"10.0.0.3\",\"clusterIPs\":[\"10.0.0.3\"],\"ports\":[]}}");
    fl_prune(o);
    assert_null(at(o, "spec", "clusterIP", NULL));
    assert_null(at(o, "spec", "clusterIPs", NULL));
    assert_non_null(at(o, "spec", "ports", NULL));
    json_decref(o);
    o = js("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":\"None\"}}");
    fl_prune(o);
    assert_string_equal(json_string_value(at(o, "spec", "clusterIP", NULL)), "None");
    json_decref(o);
}

static void test_prune_drops_a_generated_job_selector_but_not_a_manual_one(void **state)
{
    (void)state;
    const char *job = "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{%s"
                      "\"ttlSecondsAfterFinished\":5,\"selector\":{\"matchLabels\":{\"controller-uid\":\"u\","
                      "\"batch.kubernetes.io/controller-uid\":\"u\",\"keep\":\"1\"}},\"template\":{\"metadata\":"
                      "{\"labels\":{\"controller-uid\":\"u\",\"job-name\":\"j\",\"batch.kubernetes.io/job-name\":\"j\","
                      "\"app\":\"a\"}}}}}";
    char buf[1024];
    snprintf(buf, sizeof buf, job, "");
    json_t *o = js(buf);
    fl_prune(o);
    json_t *ml = at(o, "spec", "selector", "matchLabels");
    assert_int_equal(json_object_size(ml), 1);
    json_t *tl = json_object_get(at(o, "spec", "template", "metadata"), "labels");
    assert_int_equal(json_object_size(tl), 1);
    assert_null(at(o, "spec", "ttlSecondsAfterFinished", NULL));
    json_decref(o);
    snprintf(buf, sizeof buf, job, "\"manualSelector\":true,");
    o = js(buf);
    fl_prune(o);
    assert_int_equal(json_object_size(at(o, "spec", "selector", "matchLabels")), 3);
    json_decref(o);
}

static void test_prune_drops_token_secrets_of_a_service_account(void **state)
{
    (void)state;
    json_t *o = js("{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"sa\"},"
                   "\"secrets\":[{\"name\":\"sa-token-abc\"},{\"name\":\"other\"},{\"name\":\"sa-token-def\"}]}");
    fl_prune(o);
    json_t *s = json_object_get(o, "secrets");
    assert_int_equal(json_array_size(s), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(s, 0), "name")), "other");
    json_decref(o);
}

static void test_prune_ignores_objects_without_metadata(void **state)
{
    (void)state;
    json_t *o = js("{\"kind\":\"Service\",\"spec\":7}");
    fl_prune(o); /* must not crash on wrong shapes */
    assert_int_equal(json_integer_value(json_object_get(o, "spec")), 7);
    json_decref(o);
}

static void test_binding_names_are_lowercase_and_dns_safe(void **state)
{
    (void)state;
    char *n = fl_names_binding("Deployment", "nginx");
    assert_string_equal(n, "nginx-deployment");
    free(n);
    n = fl_names_binding("ClusterRole", "system:Admin");
    assert_string_equal(n, "system.admin-clusterrole");
    free(n);
}

static void test_work_names_differ_by_kind_and_namespace_and_are_stable(void **state)
{
    (void)state;
    char *a = fl_names_work("Deployment", "default", "web");
    char *b = fl_names_work("Service", "default", "web");
    char *c = fl_names_work("Deployment", "prod", "web");
    char *d = fl_names_work("Deployment", "default", "web");
    assert_true(!strncmp(a, "web-", 4) && strlen(a) == 12);
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_equal(a, d);
    free(a);
    free(b);
    free(c);
    free(d);
    char *e = fl_names_execution_space("member7");
    assert_string_equal(e, "karmada-es-member7");
    free(e);
}

static void test_work_key_splits_into_cluster_and_name_only_in_an_execution_space(void **state)
{
    (void)state;
    const char *name = NULL;
    char *cluster = fl_names_work_key_cluster("karmada-es-member7/web-1a2b3c4d", &name);
    assert_string_equal(cluster, "member7");
    assert_string_equal(name, "web-1a2b3c4d");
    free(cluster);
    assert_null(fl_names_work_key_cluster("default/web", &name));
    assert_null(name);
    assert_null(fl_names_work_key_cluster("karmada-es-member7", &name)); /* no name */
    assert_null(name);
    assert_null(fl_names_work_key_cluster("karmada-es-/web", &name)); /* no cluster */
    assert_null(name);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prune_drops_server_owned_metadata_and_status),
        cmocka_unit_test(test_prune_drops_deployment_revision_annotations_only),
        cmocka_unit_test(test_prune_drops_allocated_cluster_ips_but_keeps_headless),
        cmocka_unit_test(test_prune_drops_a_generated_job_selector_but_not_a_manual_one),
        cmocka_unit_test(test_prune_drops_token_secrets_of_a_service_account),
        cmocka_unit_test(test_prune_ignores_objects_without_metadata),
        cmocka_unit_test(test_binding_names_are_lowercase_and_dns_safe),
        cmocka_unit_test(test_work_names_differ_by_kind_and_namespace_and_are_stable),
        cmocka_unit_test(test_work_key_splits_into_cluster_and_name_only_in_an_execution_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
