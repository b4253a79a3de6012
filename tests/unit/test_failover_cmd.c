/* test_failover_cmd.c - the timeline `flotilla ctl failover history` prints from a binding
 * (fl_failover_table, src/cli/failover_cmd.c). Bindings are JSON written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/failover_cmd.h"
#include "testutil.h"

/* Line i (0 = the header) of text, split on runs of 2+ spaces into at most 8 cells. */
static int cells(const char *text, int line, char out[8][128])
{
    const char *p = text;
    for (int i = 0; i < line && p; i++)
        p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
    assert_non_null(p);
    const char *end = strchr(p, '\n');
    assert_non_null(end);
    int n = 0;
    while (p < end && n < 8) {
        while (p < end && *p == ' ')
            p++;
        const char *s = p;
        while (p < end && !(p[0] == ' ' && p + 1 < end && p[1] == ' '))
            p++;
        size_t len = (size_t)(p - s);
        while (len && s[len - 1] == ' ')
            len--;
        if (!len)
            break;
        snprintf(out[n++], 128, "%.*s", (int)len, s);
    }
    return n;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

static void test_nothing_to_show_gives_null(void **state)
{
    (void)state;
    json_t *rb = test_json("{'spec': {'clusters': [{'name': 'm1'}]}, 'status': {}}");
    assert_null(fl_failover_table(rb));
    json_decref(rb);
}

static void test_history_rows_are_in_start_order_with_every_column(void **state)
{
    (void)state;
    /* stored newest last; the second item is out of order on purpose: the table sorts */
    json_t *rb = test_json("{'spec': {'clusters': [{'name': 'm3'}]},"
                     " 'status': {'failoverHistory': ["
                     "  {'reason': 'ApplicationFailover', 'startTime': '2026-01-02T10:00:00Z', 'fromCluster': 'm2',"
                     "   'clustersBeforeFailover': ['m2'], 'clustersAfterFailover': ['m3'],"
                     "   'preservedLabelState': {'offset': '42', 'epoch': '7'},"
                     "   'completionTime': '2026-01-02T10:01:00Z', 'outcome': 'NewCopyHealthy'},"
                     "  {'reason': 'ClusterFailover', 'startTime': '2026-01-01T09:00:00Z', 'fromCluster': 'm1',"
                     "   'clustersBeforeFailover': ['m1'], 'clustersAfterFailover': ['m2', 'm4'],"
                     "   'completionTime': '2026-01-01T09:10:00Z', 'outcome': 'GracePeriodExpired'}]}}");
    char *t = fl_failover_table(rb);
    assert_non_null(t);
    assert_int_equal(count_lines(t), 3);
    char c[8][128];
    assert_int_equal(cells(t, 0, c), 8);
    assert_string_equal(c[0], "STARTED");
    assert_string_equal(c[4], "PURGE MODE");
    assert_string_equal(c[5], "PRESERVED STATE");
    assert_string_equal(c[7], "COMPLETED");
    assert_int_equal(cells(t, 1, c), 8);
    assert_string_equal(c[0], "2026-01-01T09:00:00Z");
    assert_string_equal(c[1], "m1");
    assert_string_equal(c[2], "m2,m4");
    assert_string_equal(c[3], "ClusterFailover");
    assert_string_equal(c[4], "<none>"); /* no task left to say */
    assert_string_equal(c[5], "<none>");
    assert_string_equal(c[6], "GracePeriodExpired");
    assert_string_equal(c[7], "2026-01-01T09:10:00Z");
    assert_int_equal(cells(t, 2, c), 8);
    assert_string_equal(c[1], "m2");
    assert_string_equal(c[3], "ApplicationFailover");
    assert_string_equal(c[5], "epoch=7,offset=42"); /* keys sorted */
    assert_string_equal(c[6], "NewCopyHealthy");
    free(t);
    json_decref(rb);
}

static void test_columns_line_up_as_kubectl_prints_them(void **state)
{
    (void)state;
    json_t *rb = test_json("{'spec': {'clusters': [{'name': 'a-very-long-cluster-name'}],"
                     "  'gracefulEvictionTasks': [{'fromCluster': 'm1', 'purgeMode': 'Directly',"
                     "   'reason': 'TaintUntolerated', 'creationTimestamp': '2026-01-01T00:00:00Z'}]}}");
    char *t = fl_failover_table(rb);
    assert_non_null(t);
    /* each column starts at the same offset on every line, three spaces after the widest cell */
    const char *l1 = strchr(t, '\n') + 1;
    const char *to_h = strstr(t, "TO"), *to_1 = strstr(l1, "a-very-long-cluster-name");
    assert_int_equal(to_h - t, to_1 - l1);
    const char *reason_h = strstr(t, "REASON"), *reason_1 = strstr(l1, "TaintUntolerated");
    assert_int_equal(reason_h - t, reason_1 - l1);
    assert_int_equal(reason_1 - to_1, (long)strlen("a-very-long-cluster-name") + 3);
    free(t);
    json_decref(rb);
}

static void test_a_pending_task_is_an_in_progress_row_going_where_the_binding_is_now(void **state)
{
    (void)state;
    json_t *rb = test_json("{'spec': {'clusters': [{'name': 'm2', 'replicas': 1}],"
                     "  'gracefulEvictionTasks': [{'fromCluster': 'm1', 'purgeMode': 'Never',"
                     "   'reason': 'TaintUntolerated', 'producer': 'TaintManager',"
                     "   'creationTimestamp': '2026-03-04T05:06:07Z', 'preservedLabelState': {'ckpt': 'c9'},"
                     "   'clustersBeforeFailover': ['m1']}]}}");
    char *t = fl_failover_table(rb);
    assert_non_null(t);
    assert_int_equal(count_lines(t), 2);
    char c[8][128];
    assert_int_equal(cells(t, 1, c), 8);
    assert_string_equal(c[0], "2026-03-04T05:06:07Z");
    assert_string_equal(c[1], "m1");
    assert_string_equal(c[2], "m2");
    assert_string_equal(c[3], "TaintUntolerated");
    assert_string_equal(c[4], "Never");
    assert_string_equal(c[5], "ckpt=c9");
    assert_string_equal(c[6], "InProgress");
    assert_string_equal(c[7], "<pending>");
    free(t);
    json_decref(rb);
}

static void test_an_open_history_item_and_its_task_are_one_row_with_the_task_purge_mode(void **state)
{
    (void)state;
    json_t *rb = test_json("{'spec': {'clusters': [{'name': 'm2'}],"
                     "  'gracefulEvictionTasks': [{'fromCluster': 'm1', 'purgeMode': 'Gracefully',"
                     "   'reason': 'TaintUntolerated', 'creationTimestamp': '2026-03-04T05:06:07Z'}]},"
                     " 'status': {'failoverHistory': [{'reason': 'ClusterFailover', 'fromCluster': 'm1',"
                     "   'startTime': '2026-03-04T05:06:07Z', 'clustersAfterFailover': ['m2']}]}}");
    char *t = fl_failover_table(rb);
    assert_non_null(t);
    assert_int_equal(count_lines(t), 2);
    char c[8][128];
    assert_int_equal(cells(t, 1, c), 8);
    assert_string_equal(c[3], "ClusterFailover");
    assert_string_equal(c[4], "Gracefully");
    assert_string_equal(c[6], "InProgress");
    assert_string_equal(c[7], "<pending>");
    free(t);
    json_decref(rb);
}

static void test_a_task_after_a_finished_failover_from_the_same_cluster_has_its_own_row(void **state)
{
    (void)state;
    json_t *rb = test_json("{'spec': {'clusters': [{'name': 'm3'}],"
                     "  'gracefulEvictionTasks': [{'fromCluster': 'm1', 'purgeMode': 'Directly',"
                     "   'reason': 'TaintUntolerated', 'creationTimestamp': '2026-05-01T00:00:00Z'}]},"
                     " 'status': {'failoverHistory': [{'reason': 'ClusterFailover', 'fromCluster': 'm1',"
                     "   'startTime': '2026-04-01T00:00:00Z', 'clustersAfterFailover': ['m2'],"
                     "   'completionTime': '2026-04-01T00:01:00Z', 'outcome': 'NewCopyHealthy'}]}}");
    char *t = fl_failover_table(rb);
    assert_non_null(t);
    assert_int_equal(count_lines(t), 3);
    char c[8][128];
    cells(t, 1, c);
    assert_string_equal(c[6], "NewCopyHealthy");
    cells(t, 2, c);
    assert_string_equal(c[0], "2026-05-01T00:00:00Z");
    assert_string_equal(c[2], "m3");
    assert_string_equal(c[6], "InProgress");
    free(t);
    json_decref(rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_to_show_gives_null),
        cmocka_unit_test(test_history_rows_are_in_start_order_with_every_column),
        cmocka_unit_test(test_columns_line_up_as_kubectl_prints_them),
        cmocka_unit_test(test_a_pending_task_is_an_in_progress_row_going_where_the_binding_is_now),
        cmocka_unit_test(test_an_open_history_item_and_its_task_are_one_row_with_the_task_purge_mode),
        cmocka_unit_test(test_a_task_after_a_finished_failover_from_the_same_cluster_has_its_own_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
