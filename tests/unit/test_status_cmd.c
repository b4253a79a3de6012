/* test_status_cmd.c - the row `flotilla ctl status` prints for a binding (fl_status_row) and
 * kubectl's ages (fl_status_age), src/cli/status_cmd.c. Bindings are JSON written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/status_cmd.h"
#include "core/timefmt.h"
#include "testutil.h"

/* A column of the row and the text it should hold. */
typedef struct cell_want {
    int col;
    const char *text;
} cell_want;

/* The row fl_status_row makes of the binding `json` (test_json's quoting) at now_ms: it says
 * current or not as given, and each listed column holds its text. */
static void check_row(const char *json, int64_t now_ms, bool current, const cell_want *want, size_t n)
{
    json_t *rb = test_json(json);
    char *c[FL_STATUS_NCOLS];
    assert_int_equal(fl_status_row(rb, now_ms, c), current);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(c[want[i].col], want[i].text))
            print_message("column %s:\n", fl_status_headers[want[i].col]);
        assert_string_equal(c[want[i].col], want[i].text);
    }
    for (int col = 0; col < FL_STATUS_NCOLS; col++)
        free(c[col]);
    json_decref(rb);
}

#define CHECK_ROW(json, now_ms, current, ...)                                                                  \
    check_row(json, now_ms, current, (const cell_want[]){__VA_ARGS__},                                         \
              sizeof((const cell_want[]){__VA_ARGS__}) / sizeof(cell_want))

static void test_ages_are_printed_as_kubectl_prints_them(void **state)
{
    (void)state;
    static const struct {
        int64_t s;
        const char *want;
    } cases[] = {{0, "0s"},           {119, "119s"},     {125, "2m5s"},      {180, "3m"},
                 {600, "10m"},        {179 * 60, "179m"}, {3 * 3600, "3h"},   {3 * 3600 + 300, "3h5m"},
                 {47 * 3600, "47h"},  {49 * 3600, "2d1h"}, {10 * 86400, "10d"}, {800 * 86400, "2y70d"}};
    char out[32];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fl_status_age(cases[i].s * 1000, out);
        assert_string_equal(out, cases[i].want);
    }
    fl_status_age(-500, out); /* a clock a little behind: no negative age */
    assert_string_equal(out, "0s");
    fl_status_age(-5000, out);
    assert_string_equal(out, "<invalid>");
}

static void test_a_failed_binding_names_its_worst_clusters_then_how_many_more(void **state)
{
    (void)state;
    CHECK_ROW("{'metadata': {'name': 'web-deployment', 'namespace': 'shop'},"
              " 'spec': {'resource': {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'web'}},"
              " 'status': {'summary': {'state': 'Failed', 'desired': 10, 'applied': 10, 'current': 5, 'inProgress': 2,"
              "   'terminating': 0, 'unknown': 1, 'notFound': 0, 'failed': 2, 'truncated': false,"
              "   'lastChangeTime': '2026-12-07T09:00:00Z', 'notCurrent': ["
              "     {'cluster': 'm3', 'state': 'Failed', 'reason': 'ProgressDeadlineExceeded'},"
              "     {'cluster': 'm7', 'state': 'Failed', 'reason': 'ImagePullBackOff'},"
              "     {'cluster': 'm1', 'state': 'Unknown', 'reason': 'ClusterNotReady'},"
              "     {'cluster': 'm2', 'state': 'InProgress', 'reason': ''},"
              "     {'cluster': 'm9', 'state': 'InProgress', 'reason': 'LessReady'}]}}}",
              fl_time_parse("2026-12-07T09:03:12Z"), false, {FL_STATUS_NAMESPACE, "shop"},
              {FL_STATUS_NAME, "deployment/web"}, {FL_STATUS_STATE, "Failed"}, {FL_STATUS_CURRENT, "5/10"},
              {FL_STATUS_PROGRESS, "[#####.....]"}, {FL_STATUS_FAILED, "2"}, {FL_STATUS_IN_PROGRESS, "2"},
              {FL_STATUS_UNKNOWN, "1"}, {FL_STATUS_AGE, "3m12s"},
              {FL_STATUS_NOT_CURRENT, "m3 Failed (ProgressDeadlineExceeded), m7 Failed (ImagePullBackOff), "
                                      "m1 Unknown (ClusterNotReady) + 2 more..."});
}

static void test_more_not_current_than_the_summary_names_counts_them_all(void **state)
{
    (void)state;
    /* a truncated summary names 20 of 9000: the row counts from desired - current; no time to
     * count an age from */
    CHECK_ROW("{'metadata': {'name': 'x-configmap', 'namespace': 'default'},"
              " 'spec': {'resource': {'apiVersion': 'v1', 'kind': 'ConfigMap', 'name': 'x'}},"
              " 'status': {'summary': {'state': 'Unknown', 'desired': 10000, 'current': 1000,"
              "   'unknown': 9000, 'truncated': true, 'notCurrent': ["
              "     {'cluster': 'a', 'state': 'Unknown', 'reason': 'ClusterNotReady'}]}}}",
              0, false, {FL_STATUS_NAME, "configmap/x"}, {FL_STATUS_CURRENT, "1000/10000"},
              {FL_STATUS_PROGRESS, "[#.........]"}, {FL_STATUS_NOT_CURRENT, "a Unknown (ClusterNotReady) + 8999 more..."},
              {FL_STATUS_AGE, "<unknown>"});
}

static void test_current_everywhere_is_a_full_bar_and_none(void **state)
{
    (void)state;
    CHECK_ROW("{'metadata': {'name': 'gizmos.example.io-customresourcedefinition'},"
              " 'spec': {'resource': {'apiVersion': 'apiextensions.k8s.io/v1',"
              "   'kind': 'CustomResourceDefinition', 'name': 'gizmos.example.io'}},"
              " 'status': {'summary': {'state': 'Current', 'desired': 3, 'current': 3,"
              "   'notCurrent': [], 'lastChangeTime': '2026-12-07T09:00:00Z'}}}",
              fl_time_parse("2026-12-07T09:00:30Z"), true, {FL_STATUS_NAMESPACE, ""},
              {FL_STATUS_NAME, "customresourcedefinition/gizmos.example.io"}, {FL_STATUS_PROGRESS, "[##########]"},
              {FL_STATUS_NOT_CURRENT, "<none>"}, {FL_STATUS_AGE, "30s"});
}

static void test_a_binding_without_a_summary_is_unknown_with_its_clusters_desired(void **state)
{
    (void)state;
    /* its age is since the binding was made */
    CHECK_ROW("{'metadata': {'name': 'web-deployment', 'namespace': 'default',"
              "   'creationTimestamp': '2026-12-07T09:00:00Z'},"
              " 'spec': {'resource': {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'web'},"
              "   'clusters': [{'name': 'm1'}, {'name': 'm2'}]}}",
              fl_time_parse("2026-12-07T09:00:05Z"), false, {FL_STATUS_STATE, "Unknown"}, {FL_STATUS_CURRENT, "0/2"},
              {FL_STATUS_PROGRESS, "[..........]"}, {FL_STATUS_NOT_CURRENT, "<no status.summary yet>"},
              {FL_STATUS_AGE, "5s"});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ages_are_printed_as_kubectl_prints_them),
        cmocka_unit_test(test_a_failed_binding_names_its_worst_clusters_then_how_many_more),
        cmocka_unit_test(test_more_not_current_than_the_summary_names_counts_them_all),
        cmocka_unit_test(test_current_everywhere_is_a_full_bar_and_none),
        cmocka_unit_test(test_a_binding_without_a_summary_is_unknown_with_its_clusters_desired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
