/* test_summary.c - a binding's live state across clusters: per-cluster state from a Work, the
 * bounded summary, and the cap on aggregatedStatus (controllers/summary.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controllers/summary.h"
#include "core/json.h"
#include "core/json_get.h"
#include "testutil.h"

/* A Work whose Applied condition has status applied (NULL: none) and one manifest in state. */
static json_t *work(const char *applied, const char *state, const char *reason)
{
    json_t *w = json_pack("{s:{s:s}, s:{s:[], s:[{s:{s:i}}]}}", "metadata", "name", "w", "status", "conditions",
                          "manifestStatuses", "identifier", "ordinal", 0);
    json_t *st = json_object_get(w, "status");
    if (applied)
        json_array_append_new(json_object_get(st, "conditions"),
                              json_pack("{s:s, s:s, s:s, s:s}", "type", "Applied", "status", applied, "reason",
                                        "AppliedFailed", "message", "webhook said no"));
    if (state) {
        json_t *live = json_pack("{s:s}", "state", state);
        if (reason)
            json_object_set_new(live, "reason", json_string(reason));
        json_object_set_new(json_array_get(json_object_get(st, "manifestStatuses"), 0), "liveStatus", live);
    }
    return w;
}

static void test_a_cluster_state_comes_from_its_work(void **state)
{
    (void)state;
    static const struct {
        const char *applied, *live, *live_reason;
        bool has_work;
        enum fl_cluster_report report;
        bool deleting;
        const char *want, *want_reason;
    } rows[] = {
        {NULL, NULL, NULL, false, FL_CLUSTER_REPORTING, false, "InProgress", "NotDelivered"},
        {NULL, NULL, NULL, true, FL_CLUSTER_REPORTING, false, "InProgress", "NotApplied"},
        {"False", NULL, NULL, true, FL_CLUSTER_REPORTING, false, "Failed", "AppliedFailed"},
        {"True", "Current", NULL, true, FL_CLUSTER_REPORTING, false, "Current", ""},
        {"True", "Failed", "ProgressDeadlineExceeded", true, FL_CLUSTER_REPORTING, false, "Failed",
         "ProgressDeadlineExceeded"},
        {"True", "InProgress", "ObservedGenerationOld", true, FL_CLUSTER_REPORTING, false, "InProgress",
         "ObservedGenerationOld"},
        {"True", NULL, NULL, true, FL_CLUSTER_REPORTING, false, "Unknown", "NoLiveStatus"},
        {"True", "Current", NULL, true, FL_CLUSTER_NOT_READY, false, "Unknown", "ClusterNotReady"},
        {"True", "Current", NULL, true, FL_CLUSTER_NOT_REPORTING, false, "Unknown", "ClusterNotReporting"},
        {NULL, NULL, NULL, false, FL_CLUSTER_NOT_REPORTING, false, "Unknown", "ClusterNotReporting"},
        {"True", "Current", NULL, true, FL_CLUSTER_REPORTING, true, "Terminating", "WorkDeleting"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        json_t *w = rows[i].has_work ? work(rows[i].applied, rows[i].live, rows[i].live_reason) : NULL;
        if (w && rows[i].deleting)
            json_object_set_new(json_object_get(w, "metadata"), "deletionTimestamp",
                                json_string("2026-12-07T00:00:00Z"));
        const char *reason, *message;
        const char *got = fl_summary_cluster_state(w, rows[i].report, &reason, &message);
        if (strcmp(got, rows[i].want) || strcmp(reason, rows[i].want_reason))
            fail_msg("row %zu: got %s/%s, want %s/%s", i, got, reason, rows[i].want, rows[i].want_reason);
        json_decref(w);
    }
}

static void test_a_cluster_reports_while_ready_and_answering(void **state)
{
    (void)state;
    json_t *c = test_json("{'metadata':{'name':'m1'},'status':{'conditions':[{'type':'Ready','status':'True'}]}}");
    assert_int_equal(fl_cluster_report(c), FL_CLUSTER_REPORTING);
    json_object_set_new(json_object_get(c, "metadata"), "annotations",
                        test_json("{'flotilla.io/not-reporting-since':'2026-12-07T21:00:00.000Z'}"));
    assert_int_equal(fl_cluster_report(c), FL_CLUSTER_NOT_REPORTING);
    json_decref(c);
    c = test_json("{'metadata':{'name':'m1'},'status':{'conditions':[{'type':'Ready','status':'Unknown'}]}}");
    assert_int_equal(fl_cluster_report(c), FL_CLUSTER_NOT_READY);
    json_decref(c);
    assert_int_equal(fl_cluster_report(NULL), FL_CLUSTER_NOT_READY);
}

static void test_the_worst_manifest_of_a_work_wins(void **state)
{
    (void)state;
    json_t *w = test_json("{'status':{'conditions':[{'type':'Applied','status':'True'}],'manifestStatuses':["
                          "{'liveStatus':{'state':'Current'}},"
                          "{'liveStatus':{'state':'InProgress','reason':'Rolling'}},"
                          "{'liveStatus':{'state':'NotFound','reason':'Deleted','message':'gone'}},"
                          "{'liveStatus':{'state':'Terminating'}}]}}");
    const char *reason, *message;
    assert_string_equal(fl_summary_cluster_state(w, FL_CLUSTER_REPORTING, &reason, &message), "NotFound");
    assert_string_equal(reason, "Deleted");
    assert_string_equal(message, "gone");
    json_decref(w);
    assert_true(fl_summary_state_worse("Failed", "NotFound"));
    assert_true(fl_summary_state_worse("NotFound", "Unknown"));
    assert_true(fl_summary_state_worse("Unknown", "Terminating"));
    assert_true(fl_summary_state_worse("Terminating", "InProgress"));
    assert_true(fl_summary_state_worse("InProgress", "Current"));
    assert_false(fl_summary_state_worse("Current", "Current"));
}

static void test_the_summary_counts_names_twenty_worst_first_and_stays_small(void **state)
{
    (void)state;
    fl_summary *s = fl_summary_new();
    char name[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "m%05d", i);
        const char *st = i < 30 ? "InProgress" : i < 35 ? "Failed" : "Current";
        fl_summary_add(s, name, i >= 30 && i < 35 ? false : true, st, i < 35 ? "Why" : "", "");
    }
    json_t *j = fl_summary_json(s, NULL, 1000);
    assert_string_equal(fl_json_str(j, "state"), "Failed");
    assert_int_equal(json_integer_value(json_object_get(j, "desired")), 10000);
    assert_int_equal(json_integer_value(json_object_get(j, "applied")), 9995);
    assert_int_equal(json_integer_value(json_object_get(j, "current")), 9965);
    assert_int_equal(json_integer_value(json_object_get(j, "inProgress")), 30);
    assert_int_equal(json_integer_value(json_object_get(j, "failed")), 5);
    assert_int_equal(json_integer_value(json_object_get(j, "unknown")), 0);
    const json_t *nc = json_object_get(j, "notCurrent");
    assert_int_equal(json_array_size(nc), FL_SUMMARY_NOT_CURRENT_MAX);
    assert_string_equal(fl_json_str(json_array_get(nc, 0), "cluster"), "m00030"); /* Failed first, by name */
    assert_string_equal(fl_json_str(json_array_get(nc, 0), "state"), "Failed");
    assert_string_equal(fl_json_str(json_array_get(nc, 5), "state"), "InProgress");
    assert_true(json_is_true(json_object_get(j, "truncated")));
    char *text = json_dumps(j, JSON_COMPACT);
    assert_true(strlen(text) < 4096); /* 10,000 clusters, a few KiB */
    free(text);
    assert_string_equal(fl_summary_state_of(s, "m00031"), "Failed");
    assert_null(fl_summary_state_of(s, "nope"));
    json_decref(j);
    fl_summary_free(s);
}

static void test_last_change_time_stays_while_nothing_else_changes(void **state)
{
    (void)state;
    fl_summary *s = fl_summary_new();
    fl_summary_add(s, "a", true, "Current", "", "");
    fl_summary_add(s, "b", true, "InProgress", "Rolling", "1 of 2 updated");
    json_t *first = fl_summary_json(s, NULL, 1000);
    json_t *again = fl_summary_json(s, first, 999000);
    assert_true(fl_json_same(first, again));
    fl_summary_free(s);
    s = fl_summary_new();
    fl_summary_add(s, "a", true, "Current", "", "");
    fl_summary_add(s, "b", true, "Current", "", "");
    json_t *moved = fl_summary_json(s, first, 999000);
    assert_false(fl_json_same(json_object_get(first, "lastChangeTime"), json_object_get(moved, "lastChangeTime")));
    assert_string_equal(fl_json_str(moved, "state"), "Current");
    assert_int_equal(json_array_size(json_object_get(moved, "notCurrent")), 0);
    assert_false(json_is_true(json_object_get(moved, "truncated")));
    json_decref(first);
    json_decref(again);
    json_decref(moved);
    fl_summary_free(s);
}

static void test_aggregated_status_keeps_small_fleets_whole_and_the_worst_hundred_of_large_ones(void **state)
{
    (void)state;
    fl_summary *s = fl_summary_new();
    json_t *items = json_array();
    char name[32];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "c%d", i);
        fl_summary_add(s, name, true, i == 2 ? "Failed" : "Current", "", "");
        json_array_append_new(items, json_pack("{s:s}", "clusterName", name));
    }
    json_t *kept = fl_summary_bound_items(s, items);
    assert_true(fl_json_same(kept, items)); /* as they are, in their order */
    json_decref(kept);
    fl_summary_free(s);
    json_decref(items);

    s = fl_summary_new();
    items = json_array();
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "c%04d", i);
        fl_summary_add(s, name, true, i % 100 == 7 ? "Failed" : "Current", "", "");
        json_array_append_new(items, json_pack("{s:s}", "clusterName", name));
    }
    kept = fl_summary_bound_items(s, items);
    assert_int_equal(json_array_size(kept), FL_SUMMARY_ITEMS_MAX);
    assert_string_equal(fl_json_str(json_array_get(kept, 0), "clusterName"), "c0007");
    assert_string_equal(fl_json_str(json_array_get(kept, 9), "clusterName"), "c0907");
    assert_string_equal(fl_json_str(json_array_get(kept, 10), "clusterName"), "c0000"); /* then Current, by name */
    json_decref(kept);
    json_decref(items);
    fl_summary_free(s);
}

static void test_aggregated_status_stays_within_its_bytes_even_for_few_clusters(void **state)
{
    (void)state;
    fl_summary *s = fl_summary_new();
    json_t *items = json_array();
    char name[32], big[2048];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    for (int i = 0; i < 60; i++) { /* 60 items of 2 KiB: 120 KiB */
        snprintf(name, sizeof name, "c%02d", i);
        fl_summary_add(s, name, true, i == 42 ? "Failed" : "Current", "", "");
        json_array_append_new(items, json_pack("{s:s, s:{s:s}}", "clusterName", name, "status", "blob", big));
    }
    json_t *kept = fl_summary_bound_items(s, items);
    size_t n = json_array_size(kept);
    assert_true(n >= 10 && n < 60);
    assert_string_equal(fl_json_str(json_array_get(kept, 0), "clusterName"), "c42");
    char *text = json_dumps(kept, JSON_COMPACT);
    assert_true(strlen(text) <= FL_SUMMARY_ITEMS_BYTES);
    free(text);
    json_decref(kept);
    json_decref(items);
    fl_summary_free(s);
}

static void test_long_messages_are_cut_at_a_character(void **state)
{
    (void)state;
    char msg[600];
    memset(msg, 'x', sizeof msg);
    memcpy(msg + FL_SUMMARY_MESSAGE_MAX - 1, "\xc3\xa9", 2); /* a 2-byte character across the cut */
    msg[sizeof msg - 1] = 0;
    fl_summary *s = fl_summary_new();
    fl_summary_add(s, "a", false, "Failed", "R", msg);
    json_t *j = fl_summary_json(s, NULL, 0);
    const char *m = fl_json_str(json_array_get(json_object_get(j, "notCurrent"), 0), "message");
    assert_non_null(m);
    assert_int_equal(strlen(m), FL_SUMMARY_MESSAGE_MAX - 1);
    json_decref(j);
    fl_summary_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_cluster_state_comes_from_its_work),
        cmocka_unit_test(test_a_cluster_reports_while_ready_and_answering),
        cmocka_unit_test(test_the_worst_manifest_of_a_work_wins),
        cmocka_unit_test(test_the_summary_counts_names_twenty_worst_first_and_stays_small),
        cmocka_unit_test(test_last_change_time_stays_while_nothing_else_changes),
        cmocka_unit_test(test_aggregated_status_keeps_small_fleets_whole_and_the_worst_hundred_of_large_ones),
        cmocka_unit_test(test_aggregated_status_stays_within_its_bytes_even_for_few_clusters),
        cmocka_unit_test(test_long_messages_are_cut_at_a_character),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
