/* test_workstatus.c - writing a Work's status (controllers/workstatus.h): what the member's
 * objects say lands whatever the Work's resourceVersion, a condition change stays pinned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "client/client.h"
#include "controllers/execution_priv.h"
#include "controllers/workstatus.h"
#include "core/err.h"

#include "testapi.h"

#define NS "karmada-es-m1"
#define WORK_PATH "/apis/work.karmada.io/v1alpha1/namespaces/" NS "/works/w"

static json_t *work_with(const char *cm_value)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:[{s:s, s:s, s:{s:s}, s:{s:s}}]}}}", "apiVersion",
                     "work.karmada.io/v1alpha1", "kind", "Work", "metadata", "name", "w", "namespace", NS, "spec",
                     "workload", "manifests", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", "c", "data",
                     "k", cm_value);
}

static json_t *statuses(const char *state)
{
    return json_pack("[{s:{s:i, s:s, s:s, s:s, s:s}, s:s, s:{s:s}}]", "identifier", "ordinal", 0, "version", "v1",
                     "kind", "ConfigMap", "namespace", "default", "name", "c", "health", "Healthy", "liveStatus",
                     "state", state);
}

static void test_observations_land_on_a_work_that_moved_on_and_conditions_stay_pinned(void **state)
{
    (void)state;
    test_fixture *f = test_fixture_new();
    assert_int_equal(fl_api_ensure_namespace(&f->api, NS), 0);
    json_t *w = work_with("1");
    assert_int_equal(test_api_send(&f->api, "POST", "/apis/work.karmada.io/v1alpha1/namespaces/" NS "/works", w),
                     201);
    json_decref(w);
    fl_client *cp = fl_api_local_client(&f->api, "test");
    json_t *v1 = test_api_get(&f->api, WORK_PATH);
    assert_int_equal(fl_ws_write_status(cp, v1, true, "AppliedSuccessful", "applied", NULL, statuses("InProgress"), NULL),
                     0);
    json_t *v2 = test_api_get(&f->api, WORK_PATH); /* what an informer holds after that write */
    assert_string_equal(json_string_value(json_object_get(json_object_get(v2, "status"), "liveState")),
                        "InProgress");
    /* the binding controller rewrites the spec: v2 is stale now */
    json_t *spec = json_pack("{s:{s:{s:[{s:s, s:s, s:{s:s}, s:{s:s}}]}}}", "spec", "workload", "manifests",
                             "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", "c", "data", "k", "2");
    assert_int_equal(test_api_send(&f->api, "PATCH", WORK_PATH, spec), 200);
    json_decref(spec);
    /* the member's object turned Current: reported on the stale copy, it still lands */
    int64_t rv = 0;
    assert_int_equal(fl_ws_write_status(cp, v2, true, "AppliedSuccessful", "applied", NULL, statuses("Current"), &rv),
                     0);
    json_t *v3 = test_api_get(&f->api, WORK_PATH);
    assert_int_equal(rv, strtoll(json_string_value(json_object_get(json_object_get(v3, "metadata"), "resourceVersion")),
                                 NULL, 10));
    const json_t *st = json_object_get(v3, "status");
    assert_string_equal(json_string_value(json_object_get(st, "liveState")), "Current");
    const json_t *ms = json_array_get(json_object_get(st, "manifestStatuses"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ms, "liveStatus"), "state")), "Current");
    /* the spec the binding controller wrote is kept, and so are the conditions */
    const json_t *m0 = json_array_get(json_object_get(json_object_get(json_object_get(v3, "spec"), "workload"),
                                                      "manifests"),
                                      0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(m0, "data"), "k")), "2");
    assert_true(json_equal(json_object_get(st, "conditions"),
                           json_object_get(json_object_get(v2, "status"), "conditions")));
    /* a condition to change on the stale copy is refused: it depends on what was applied */
    assert_int_equal(fl_ws_write_status(cp, v2, false, "AppliedFailed", "no", NULL, statuses("Current"), &rv),
                     FL_ECONFLICT);
    assert_int_equal(rv, 0);
    /* and goes through on the current copy */
    assert_int_equal(fl_ws_write_status(cp, v3, false, "AppliedFailed", "no", NULL, statuses("Current"), NULL), 0);
    json_decref(v1);
    json_decref(v2);
    json_decref(v3);
    fl_client_free(cp);
    test_fixture_free(f);
}

/* The execution engine's note of its own writes: a reconcile on a cached copy older than the
 * engine's last status write waits for the cache instead of meeting a conflict. */
static void test_a_copy_behind_our_own_write_is_told_apart(void **state)
{
    (void)state;
    test_fixture *f = test_fixture_new();
    assert_int_equal(fl_api_ensure_namespace(&f->api, NS), 0);
    json_t *w = work_with("1");
    assert_int_equal(test_api_send(&f->api, "POST", "/apis/work.karmada.io/v1alpha1/namespaces/" NS "/works", w),
                     201);
    json_decref(w);
    fl_exec x;
    memset(&x, 0, sizeof x);
    x.cp = fl_api_local_client(&f->api, "test");
    x.written = json_object();
    pthread_mutex_init(&x.mu, NULL);
    json_t *v1 = test_api_get(&f->api, WORK_PATH);
    assert_false(fl_exec_copy_behind(&x, NS "/w", v1)); /* nothing written yet */
    assert_int_equal(fl_exec_write_status(&x, v1, true, "AppliedSuccessful", "applied", NULL, statuses("Current")), 0);
    assert_true(fl_exec_copy_behind(&x, NS "/w", v1));
    assert_true(fl_exec_copy_behind(&x, NS "/w", v1)); /* until the cache has it */
    json_t *v2 = test_api_get(&f->api, WORK_PATH);
    assert_false(fl_exec_copy_behind(&x, NS "/w", v2));
    assert_int_equal(json_object_size(x.written), 0); /* forgotten once held */
    /* a write that changes nothing notes nothing */
    assert_int_equal(fl_exec_write_status(&x, v2, true, "AppliedSuccessful", "applied", NULL, statuses("Current")), 0);
    assert_int_equal(json_object_size(x.written), 0);
    json_decref(v1);
    json_decref(v2);
    json_decref(x.written);
    pthread_mutex_destroy(&x.mu);
    fl_client_free(x.cp);
    test_fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observations_land_on_a_work_that_moved_on_and_conditions_stay_pinned),
        cmocka_unit_test(test_a_copy_behind_our_own_write_is_told_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
