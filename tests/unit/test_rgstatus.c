/* test_rgstatus.c - a ResourceGroup's status (controllers/rgstatus.h): one listed resource's
 * state from its binding's summary or from what was found without one, and the roll-up over
 * the group (summary and conditions). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controllers/rgstatus.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "testutil.h"

static json_t *ref(const char *group, const char *kind, const char *ns, const char *name)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "group", group, "kind", kind, "namespace", ns, "name", name);
}

/* A binding whose status.summary is summary (taken; NULL: none). */
static json_t *binding_with(json_t *summary)
{
    json_t *b = json_pack("{s:{s:s, s:s}, s:{}}", "metadata", "name", "web-deployment", "namespace", "default",
                          "status");
    if (summary)
        json_object_set_new(json_object_get(b, "status"), "summary", summary);
    return b;
}

static json_t *summary(const char *state, int desired, int current, int failed, int in_progress)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:[], s:b}", "state", state, "desired", desired,
                     "applied", desired, "current", current, "inProgress", in_progress, "terminating", 0, "unknown",
                     0, "notFound", 0, "failed", failed, "notCurrent", "truncated", 0);
}

static void not_current(json_t *sum, const char *cluster, const char *state, const char *reason, const char *msg)
{
    json_array_append_new(json_object_get(sum, "notCurrent"),
                          json_pack("{s:s, s:s, s:s, s:s}", "cluster", cluster, "state", state, "reason", reason,
                                    "message", msg));
}

static const json_t *ready(const json_t *entry)
{
    return fl_condition_find(json_object_get(entry, "conditions"), "Ready");
}

static void test_current_on_every_cluster_is_current(void **state)
{
    (void)state;
    json_t *r = ref("apps", "Deployment", "default", "web");
    json_t *b = binding_with(summary("Current", 2, 2, 0, 0));
    json_t *e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    assert_string_equal(fl_json_str(e, "status"), "Current");
    assert_string_equal(fl_json_str(e, "group"), "apps");
    assert_string_equal(fl_json_str(e, "kind"), "Deployment");
    assert_string_equal(fl_json_str(e, "namespace"), "default");
    assert_string_equal(fl_json_str(e, "name"), "web");
    assert_string_equal(fl_json_str(ready(e), "status"), "True");
    assert_string_equal(fl_json_str(ready(e), "reason"), "Current");
    assert_string_equal(fl_json_str(ready(e), "message"), "2 clusters: 2 Current");
    /* kpt's Condition has no observedGeneration: a field the schema prunes would be written forever */
    assert_null(json_object_get(ready(e), "observedGeneration"));
    assert_non_null(fl_json_str(ready(e), "lastTransitionTime"));
    json_decref(e);
    json_decref(b);
    json_decref(r);
}

static void test_one_failed_cluster_fails_the_resource_and_is_named_with_why(void **state)
{
    (void)state;
    json_t *r = ref("apps", "Deployment", "default", "web");
    json_t *sum = summary("Failed", 2, 1, 1, 0);
    not_current(sum, "member2", "Failed", "ProgressDeadlineExceeded", "ReplicaSet \"web-1\" has timed out progressing.");
    json_t *b = binding_with(sum);
    json_t *e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    assert_string_equal(fl_json_str(e, "status"), "Failed");
    assert_string_equal(fl_json_str(ready(e), "status"), "False");
    assert_string_equal(fl_json_str(ready(e), "reason"), "ProgressDeadlineExceeded");
    assert_string_equal(fl_json_str(ready(e), "message"),
                        "2 clusters: 1 Current, 1 Failed; member2: Failed (ProgressDeadlineExceeded: ReplicaSet "
                        "\"web-1\" has timed out progressing.)");
    json_decref(e);
    json_decref(b);
    json_decref(r);
}

static void test_the_message_names_the_three_worst_clusters_and_stays_bounded(void **state)
{
    (void)state;
    json_t *r = ref("", "ConfigMap", "default", "cfg");
    json_t *sum = summary("Failed", 10, 0, 10, 0);
    char big[900];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = 0;
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "member%02d", i);
        not_current(sum, name, "Failed", "Boom", big);
    }
    json_t *b = binding_with(sum);
    json_t *e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    const char *m = fl_json_str(ready(e), "message");
    assert_true(strlen(m) <= FL_RGSTATUS_MESSAGE_MAX);
    assert_non_null(strstr(m, "member00: Failed (Boom: mmm"));
    json_decref(e);

    /* short messages: three named, the rest counted */
    json_t *small = summary("Failed", 10, 0, 10, 0);
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "member%02d", i);
        not_current(small, name, "Failed", "Boom", "no");
    }
    json_decref(b);
    b = binding_with(small);
    e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    m = fl_json_str(ready(e), "message");
    assert_non_null(strstr(m, "member02: Failed (Boom: no); and 7 more not Current"));
    assert_null(strstr(m, "member03"));
    json_decref(e);
    json_decref(b);
    json_decref(r);
}

static void test_what_is_found_without_a_binding(void **state)
{
    (void)state;
    static const struct {
        enum fl_rgstatus_found found;
        const char *want, *ready, *reason;
    } rows[] = {
        {FL_RGSTATUS_NO_TEMPLATE, "NotFound", "False", "NotFound"},
        {FL_RGSTATUS_KIND_NOT_SERVED, "NotFound", "False", "KindNotServed"},
        {FL_RGSTATUS_NOT_PROPAGATED, "Unknown", "Unknown", "NotPropagated"},
        {FL_RGSTATUS_CONTROL_PLANE, "Current", "True", "ControlPlaneObject"},
        {FL_RGSTATUS_NAMESPACE_SYNCED, "Current", "True", "NamespaceSynced"},
        {FL_RGSTATUS_DELETING, "Terminating", "False", "DeletionTimestampSet"},
    };
    json_t *r = ref("apps", "Deployment", "default", "ghost");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *e = fl_rgstatus_resource(r, rows[i].found, NULL, NULL, 1000);
        assert_string_equal(fl_json_str(e, "status"), rows[i].want);
        assert_string_equal(fl_json_str(ready(e), "status"), rows[i].ready);
        assert_string_equal(fl_json_str(ready(e), "reason"), rows[i].reason);
        json_decref(e);
    }
    json_t *e = fl_rgstatus_resource(r, FL_RGSTATUS_NO_TEMPLATE, NULL, NULL, 1000);
    assert_string_equal(fl_json_str(ready(e), "message"), "no Deployment default/ghost on the control plane");
    json_decref(e);
    json_decref(r);
}

static void test_a_binding_without_summary_or_being_deleted(void **state)
{
    (void)state;
    json_t *r = ref("apps", "Deployment", "default", "web");
    json_t *b = binding_with(NULL);
    json_t *e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    assert_string_equal(fl_json_str(e, "status"), "InProgress");
    assert_string_equal(fl_json_str(ready(e), "reason"), "NoSummary");
    json_decref(e);
    json_object_set_new(json_object_get(b, "metadata"), "deletionTimestamp", json_string("2026-12-07T09:00:00Z"));
    e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    assert_string_equal(fl_json_str(e, "status"), "Terminating");
    json_decref(e);
    json_decref(b);
    /* no cluster chosen yet: the summary's InProgress, said so */
    b = binding_with(summary("InProgress", 0, 0, 0, 0));
    e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, NULL, 1000);
    assert_string_equal(fl_json_str(e, "status"), "InProgress");
    assert_string_equal(fl_json_str(ready(e), "reason"), "NotScheduled");
    json_decref(e);
    json_decref(b);
    json_decref(r);
}

static void test_client_fields_and_the_transition_time_are_kept(void **state)
{
    (void)state;
    json_t *r = ref("apps", "Deployment", "default", "web");
    json_t *prev = test_json("{'group': 'apps', 'kind': 'Deployment', 'namespace': 'default', 'name': 'web',"
                             " 'status': 'Current', 'sourceHash': 'abc123', 'actuation': 'Succeeded',"
                             " 'strategy': 'Apply', 'reconcile': 'Succeeded',"
                             " 'conditions': [{'type': 'Ownership', 'status': 'False'},"
                             "  {'type': 'Ready', 'status': 'True', 'reason': 'Current', 'message': 'old',"
                             "   'lastTransitionTime': '2026-01-01T00:00:00Z'}]}");
    json_t *b = binding_with(summary("Current", 3, 3, 0, 0));
    json_t *e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, prev, 99999999);
    assert_string_equal(fl_json_str(e, "sourceHash"), "abc123");
    assert_string_equal(fl_json_str(e, "actuation"), "Succeeded");
    assert_string_equal(fl_json_str(e, "strategy"), "Apply");
    assert_string_equal(fl_json_str(e, "reconcile"), "Succeeded");
    assert_non_null(fl_condition_find(json_object_get(e, "conditions"), "Ownership"));
    assert_string_equal(fl_json_str(ready(e), "lastTransitionTime"), "2026-01-01T00:00:00Z");
    assert_string_equal(fl_json_str(ready(e), "message"), "3 clusters: 3 Current");
    json_decref(e);
    json_decref(b);
    /* the status flips: the time moves */
    json_t *sum = summary("InProgress", 3, 2, 0, 1);
    not_current(sum, "member3", "InProgress", "LessAvailable", "1 of 2 replicas available");
    b = binding_with(sum);
    e = fl_rgstatus_resource(r, FL_RGSTATUS_BOUND, b, prev, 99999999);
    assert_string_equal(fl_json_str(e, "status"), "InProgress");
    assert_string_not_equal(fl_json_str(ready(e), "lastTransitionTime"), "2026-01-01T00:00:00Z");
    json_decref(e);
    json_decref(b);
    json_decref(prev);
    json_decref(r);
}

static json_t *entry(const char *kind, const char *name, const char *st)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "group", "", "kind", kind, "namespace", "default", "name", name,
                     "status", st);
}

static void test_the_summary_counts_each_state_and_takes_the_worst(void **state)
{
    (void)state;
    json_t *entries = json_array();
    json_t *s = fl_rgstatus_summary(entries);
    assert_string_equal(fl_json_str(s, "state"), "Current");
    assert_int_equal(fl_json_path_int(s, "total", -1), 0);
    json_decref(s);
    json_array_append_new(entries, entry("ConfigMap", "a", "Current"));
    json_array_append_new(entries, entry("ConfigMap", "b", "InProgress"));
    json_array_append_new(entries, entry("ConfigMap", "c", "NotFound"));
    json_array_append_new(entries, entry("ConfigMap", "d", "Current"));
    s = fl_rgstatus_summary(entries);
    assert_string_equal(fl_json_str(s, "state"), "NotFound");
    assert_int_equal(fl_json_path_int(s, "total", -1), 4);
    assert_int_equal(fl_json_path_int(s, "current", -1), 2);
    assert_int_equal(fl_json_path_int(s, "inProgress", -1), 1);
    assert_int_equal(fl_json_path_int(s, "notFound", -1), 1);
    assert_int_equal(fl_json_path_int(s, "failed", -1), 0);
    assert_int_equal(fl_json_path_int(s, "terminating", -1), 0);
    assert_int_equal(fl_json_path_int(s, "unknown", -1), 0);
    json_decref(s);
    json_array_append_new(entries, entry("Deployment", "e", "Failed"));
    s = fl_rgstatus_summary(entries);
    assert_string_equal(fl_json_str(s, "state"), "Failed");
    json_decref(s);
    json_decref(entries);
}

static void test_group_conditions_reconciling_stalled_ready(void **state)
{
    (void)state;
    json_t *entries = json_array();
    json_array_append_new(entries, entry("ConfigMap", "a", "Current"));
    json_array_append_new(entries, entry("Deployment", "b", "Current"));
    json_t *st = json_object();
    assert_true(fl_rgstatus_conditions(st, entries, 1000));
    json_t *conds = json_object_get(st, "conditions");
    /* kpt's printer columns read the first two */
    assert_int_equal(json_array_size(conds), 3);
    assert_string_equal(fl_json_str(json_array_get(conds, 0), "type"), "Reconciling");
    assert_string_equal(fl_json_str(json_array_get(conds, 1), "type"), "Stalled");
    assert_string_equal(fl_json_str(json_array_get(conds, 2), "type"), "Ready");
    assert_string_equal(fl_json_str(json_array_get(conds, 0), "status"), "False");
    assert_string_equal(fl_json_str(json_array_get(conds, 1), "status"), "False");
    assert_string_equal(fl_json_str(json_array_get(conds, 2), "status"), "True");
    assert_string_equal(fl_json_str(json_array_get(conds, 2), "reason"), "AllCurrent");
    /* the same entries again change nothing */
    assert_false(fl_rgstatus_conditions(st, entries, 5000));

    json_decref(entries);
    entries = json_array();
    json_array_append_new(entries, entry("ConfigMap", "a", "Current"));
    json_array_append_new(entries, entry("Deployment", "slow", "InProgress"));
    json_array_append_new(entries, entry("Deployment", "bad", "Failed"));
    assert_true(fl_rgstatus_conditions(st, entries, 6000));
    const json_t *rec = fl_condition_find(conds, "Reconciling"), *stalled = fl_condition_find(conds, "Stalled");
    const json_t *rdy = fl_condition_find(conds, "Ready");
    assert_string_equal(fl_json_str(rec, "status"), "True");
    assert_string_equal(fl_json_str(stalled, "status"), "True");
    assert_string_equal(fl_json_str(stalled, "reason"), "Failed");
    assert_string_equal(fl_json_str(stalled, "message"), "1 Failed of 3 resources");
    assert_string_equal(fl_json_str(rdy, "status"), "False");
    assert_string_equal(fl_json_str(rdy, "reason"), "Failed");
    /* worst first */
    assert_string_equal(fl_json_str(rdy, "message"),
                        "1 of 3 resources Current; Failed: Deployment default/bad; InProgress: Deployment default/slow");
    json_decref(st);
    json_decref(entries);
}

static void test_the_group_message_names_five_resources(void **state)
{
    (void)state;
    json_t *entries = json_array();
    for (int i = 0; i < 8; i++) {
        char name[8];
        snprintf(name, sizeof name, "cm%d", i);
        json_array_append_new(entries, entry("ConfigMap", name, "NotFound"));
    }
    json_t *st = json_object();
    fl_rgstatus_conditions(st, entries, 1000);
    const json_t *rdy = fl_condition_find(json_object_get(st, "conditions"), "Ready");
    assert_string_equal(fl_json_str(rdy, "reason"), "NotFound");
    assert_string_equal(fl_json_str(rdy, "message"),
                        "0 of 8 resources Current; NotFound: ConfigMap default/cm0, ConfigMap default/cm1, "
                        "ConfigMap default/cm2, ConfigMap default/cm3, ConfigMap default/cm4; and 3 more");
    assert_null(strstr(fl_json_str(rdy, "message"), "cm5"));
    json_decref(st);
    json_decref(entries);
}

static void test_ref_keys_match_spec_items_with_status_entries(void **state)
{
    (void)state;
    json_t *r = ref("apps", "Deployment", "default", "web");
    json_t *e = entry("Deployment", "web", "Current");
    json_object_set_new(e, "group", json_string("apps"));
    char *a = fl_rgstatus_ref_key(r), *b = fl_rgstatus_ref_key(e);
    assert_string_equal(a, "apps/Deployment/default/web");
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(e);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_on_every_cluster_is_current),
        cmocka_unit_test(test_one_failed_cluster_fails_the_resource_and_is_named_with_why),
        cmocka_unit_test(test_the_message_names_the_three_worst_clusters_and_stays_bounded),
        cmocka_unit_test(test_what_is_found_without_a_binding),
        cmocka_unit_test(test_a_binding_without_summary_or_being_deleted),
        cmocka_unit_test(test_client_fields_and_the_transition_time_are_kept),
        cmocka_unit_test(test_the_summary_counts_each_state_and_takes_the_worst),
        cmocka_unit_test(test_group_conditions_reconciling_stalled_ready),
        cmocka_unit_test(test_the_group_message_names_five_resources),
        cmocka_unit_test(test_ref_keys_match_spec_items_with_status_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
