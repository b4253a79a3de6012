/* test_metrics.c - Prometheus exposition (src/core/metrics.c): exact sample lines for
 * counted requests, cumulative histogram buckets, label and HELP escaping, counters,
 * gauge callbacks, reset, and counting from many threads at once; the labelled families
 * (fl_metric_*), scrape hooks, and a named work queue's client-go metrics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/workqueue.h"
#include "core/metrics.h"

static int reset(void **state)
{
    fl_metrics_reset();
    return 0;
}

/* Assert that the rendered text contains line as a whole line. */
static void assert_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return;
    }
    fail_msg("missing line: %s\n--- rendered ---\n%s", line, text);
}

static size_t count_substr(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static char *render(void)
{
    size_t len = 0;
    char *s = fl_metrics_render(&len);
    assert_non_null(s);
    assert_int_equal(strlen(s), len);
    assert_true(len > 0 && s[len - 1] == '\n');
    return s;
}

static void test_request_counter_lines(void **state)
{
    fl_metrics_request("GET", "pods", 200, 0.001);
    fl_metrics_request("GET", "pods", 200, 0.002);
    fl_metrics_request("GET", "pods", 404, 0.003);
    fl_metrics_request("POST", "configmaps", 201, 0.02);
    fl_metrics_request("GET", "", 200, 0.0001);
    char *s = render();

    assert_line(s, "# HELP flotilla_apiserver_request_total Number of API server requests by verb, "
                   "resource and HTTP response code.");
    assert_line(s, "# TYPE flotilla_apiserver_request_total counter");
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"pods\",code=\"200\"} 2");
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"pods\",code=\"404\"} 1");
    assert_line(s, "flotilla_apiserver_request_total{verb=\"POST\",resource=\"configmaps\",code=\"201\"} 1");
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"\",code=\"200\"} 1");
    assert_line(s, "# TYPE flotilla_apiserver_request_duration_seconds histogram");
    assert_line(s, "flotilla_apiserver_request_duration_seconds_count{verb=\"GET\",resource=\"pods\"} 3");
    assert_line(s, "flotilla_apiserver_request_duration_seconds_sum{verb=\"GET\",resource=\"pods\"} 0.006");
    assert_line(s, "flotilla_apiserver_request_duration_seconds_sum{verb=\"POST\",resource=\"configmaps\"} 0.02");
    /* One HELP/TYPE per family, however many series. */
    assert_int_equal(count_substr(s, "# TYPE flotilla_apiserver_request_total "), 1);
    assert_int_equal(count_substr(s, "# TYPE flotilla_apiserver_request_duration_seconds "), 1);
    /* Deterministic order: codes ascending within a series. */
    assert_true(strstr(s, "code=\"200\"} 2") < strstr(s, "code=\"404\"} 1"));
    free(s);
}

static void test_histogram_buckets_are_cumulative(void **state)
{
    /* Values on a bound fall in that bucket (le means <=). */
    double obs[] = {0.0001, 0.0005, 0.003, 0.01, 0.3, 0.3, 4.0, 7.5};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        fl_metrics_request("LIST", "deployments", 200, obs[i]);
    char *s = render();
    static const struct { const char *le; int n; } want[] = {
        {"0.0005", 2}, {"0.001", 2}, {"0.0025", 2}, {"0.005", 3}, {"0.01", 4}, {"0.025", 4},
        {"0.05", 4},   {"0.1", 4},   {"0.25", 4},   {"0.5", 6},   {"1", 6},    {"2.5", 6},
        {"5", 7},      {"+Inf", 8},
    };
    const char *prev = s;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "flotilla_apiserver_request_duration_seconds_bucket{verb=\"LIST\",resource=\"deployments\","
                 "le=\"%s\"} %d", want[i].le, want[i].n);
        assert_line(s, line);
        /* Buckets appear in ascending order of le. */
        const char *at = strstr(s, line);
        assert_true(at > prev);
        prev = at;
    }
    assert_int_equal(count_substr(s, "_bucket{"), 14);
    assert_line(s, "flotilla_apiserver_request_duration_seconds_count{verb=\"LIST\",resource=\"deployments\"} 8");
    assert_line(s, "flotilla_apiserver_request_duration_seconds_sum{verb=\"LIST\",resource=\"deployments\"} 12.1136");
    free(s);
}

static void test_negative_or_nan_duration_counts_as_zero(void **state)
{
    fl_metrics_request("GET", "pods", 200, -1.0);
    fl_metrics_request("GET", "pods", 200, NAN);
    char *s = render();
    assert_line(s, "flotilla_apiserver_request_duration_seconds_bucket{verb=\"GET\",resource=\"pods\",le=\"0.0005\"} 2");
    assert_line(s, "flotilla_apiserver_request_duration_seconds_sum{verb=\"GET\",resource=\"pods\"} 0");
    free(s);
}

static void test_label_values_are_escaped(void **state)
{
    fl_metrics_request("GET", "we\"ird\\name\nx", 500, 0.001);
    char *s = render();
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"we\\\"ird\\\\name\\nx\",code=\"500\"} 1");
    free(s);
}

static double gauge_value(void *ctx)
{
    return *(double *)ctx;
}

static double gauge_counts_inside(void *ctx)
{
    /* Callbacks run unlocked, so they may use the metrics API themselves. */
    fl_metrics_count("flotilla_test_scrapes_total", "Scrapes seen by the test gauge.", 1);
    return 7;
}

static void test_gauges_read_at_scrape_time(void **state)
{
    double v = 42;
    fl_metrics_gauge("flotilla_store_objects", "Objects in the store.", gauge_value, &v);
    char *s = render();
    assert_line(s, "# HELP flotilla_store_objects Objects in the store.");
    assert_line(s, "# TYPE flotilla_store_objects gauge");
    assert_line(s, "flotilla_store_objects 42");
    free(s);

    v = 0.25;
    s = render();
    assert_line(s, "flotilla_store_objects 0.25");
    free(s);

    /* Re-registering a name replaces the callback instead of duplicating the family. */
    double w = -3;
    fl_metrics_gauge("flotilla_store_objects", "Objects in the store.", gauge_value, &w);
    v = INFINITY;
    s = render();
    assert_line(s, "flotilla_store_objects -3");
    assert_int_equal(count_substr(s, "# TYPE flotilla_store_objects "), 1);
    free(s);

    w = NAN;
    s = render();
    assert_line(s, "flotilla_store_objects NaN");
    free(s);

    /* whole numbers print as integers up to 2^53; beyond, and for -0, as %g does */
    const struct { double v; const char *text; } wholes[] = {
        {0, "0"}, {9007199254740991.0, "9007199254740991"}, {-42, "-42"},
        {9007199254740992.0, "9007199254740992"}, {1e20, "1e+20"}, {-0.0, "-0"}, {1.5e-7, "1.5e-07"}};
    for (size_t i = 0; i < sizeof wholes / sizeof *wholes; i++) {
        w = wholes[i].v;
        s = render();
        char line[80];
        snprintf(line, sizeof line, "flotilla_store_objects %s", wholes[i].text);
        assert_line(s, line);
        free(s);
    }

    fl_metrics_gauge("flotilla_watchers", "Open watches.", gauge_counts_inside, NULL);
    s = render();
    assert_line(s, "flotilla_watchers 7");
    free(s);
    s = render();
    assert_line(s, "flotilla_test_scrapes_total 1");
    free(s);
}

static void test_counters_by_name(void **state)
{
    fl_metrics_count("flotilla_works_applied_total", "Works applied to members.", 1);
    fl_metrics_count("flotilla_works_applied_total", "Works applied to members.", 2);
    fl_metrics_count("flotilla_bytes_total", "Bytes with a \\ and a\nnewline.", 0.5);
    char *s = render();
    assert_line(s, "# HELP flotilla_works_applied_total Works applied to members.");
    assert_line(s, "# TYPE flotilla_works_applied_total counter");
    assert_line(s, "flotilla_works_applied_total 3");
    assert_line(s, "# HELP flotilla_bytes_total Bytes with a \\\\ and a\\nnewline.");
    assert_line(s, "flotilla_bytes_total 0.5");
    free(s);
}

static void test_reset_drops_everything(void **state)
{
    double v = 1;
    fl_metrics_request("GET", "pods", 200, 0.1);
    fl_metrics_count("flotilla_x_total", "x", 1);
    fl_metrics_gauge("flotilla_g", "g", gauge_value, &v);
    fl_metrics_reset();
    char *s = render();
    assert_null(strstr(s, "resource=\"pods\""));
    assert_null(strstr(s, "flotilla_x_total"));
    assert_null(strstr(s, "flotilla_g"));
    /* The request families still announce themselves, with no samples. */
    assert_line(s, "# TYPE flotilla_apiserver_request_total counter");
    free(s);
}

static void test_many_resources_are_capped(void **state)
{
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "r%d", i);
        fl_metrics_request("GET", name, 404, 0.001);
    }
    char *s = render();
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"r0\",code=\"404\"} 1");
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"_other\",code=\"404\"} 904");
    assert_null(strstr(s, "resource=\"r4999\""));
    free(s);
}

#define THREADS 8
#define PER_THREAD 20000

static void *hammer(void *arg)
{
    static const char *const resources[] = {"pods", "configmaps", "secrets", "deployments"};
    long id = (long)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++)
        fl_metrics_request(i & 1 ? "GET" : "LIST", resources[(id + i) % 4], 200, 0.001);
    return NULL;
}

static void test_concurrent_requests_are_all_counted(void **state)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    char *s = render();
    /* 8 threads x 20000, spread evenly over 2 verbs x 4 resources. */
    assert_line(s, "flotilla_apiserver_request_total{verb=\"GET\",resource=\"pods\",code=\"200\"} 20000");
    assert_line(s, "flotilla_apiserver_request_duration_seconds_count{verb=\"LIST\",resource=\"secrets\"} 20000");
    free(s);
}

/* ---- labelled families ---- */

static void test_labelled_counter_renders_help_type_and_sorted_series(void **state)
{
    fl_metric *m = fl_metric_family(FL_METRIC_COUNTER, "flotilla_t_reconcile_total", "Reconciles.", "controller",
                                    "result", NULL, 0);
    fl_metric_add(fl_metric_with(m, "sched", "success"), 2);
    fl_metric_add(fl_metric_with(m, "binding", "error"), 1);
    fl_metric_add(fl_metric_with(m, "binding", "error"), -5); /* a counter never goes down */
    char *s = render();
    assert_line(s, "# HELP flotilla_t_reconcile_total Reconciles.");
    assert_line(s, "# TYPE flotilla_t_reconcile_total counter");
    assert_line(s, "flotilla_t_reconcile_total{controller=\"binding\",result=\"error\"} 1");
    assert_line(s, "flotilla_t_reconcile_total{controller=\"sched\",result=\"success\"} 2");
    assert_true(strstr(s, "controller=\"binding\"") < strstr(s, "controller=\"sched\""));
    free(s);
}

static void test_labelled_histogram_buckets_sum_and_count(void **state)
{
    static const double le[] = {0.1, 1, 10};
    fl_metric *m = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_t_duration_seconds", "Durations.", "name", NULL,
                                    le, 3);
    fl_metric_series *q = fl_metric_with(m, "q", NULL);
    fl_metric_observe(q, 0.05);
    fl_metric_observe(q, 0.5);
    fl_metric_observe(q, 0.1); /* on a bound: in that bucket (le is "less or equal") */
    fl_metric_observe(q, 100);
    fl_metric_observe(q, NAN); /* counts as 0 */
    char *s = render();
    assert_line(s, "# TYPE flotilla_t_duration_seconds histogram");
    assert_line(s, "flotilla_t_duration_seconds_bucket{name=\"q\",le=\"0.1\"} 3");
    assert_line(s, "flotilla_t_duration_seconds_bucket{name=\"q\",le=\"1\"} 4");
    assert_line(s, "flotilla_t_duration_seconds_bucket{name=\"q\",le=\"10\"} 4");
    assert_line(s, "flotilla_t_duration_seconds_bucket{name=\"q\",le=\"+Inf\"} 5");
    assert_line(s, "flotilla_t_duration_seconds_sum{name=\"q\"} 100.65");
    assert_line(s, "flotilla_t_duration_seconds_count{name=\"q\"} 5");
    free(s);
}

static void test_unlabelled_gauge_and_default_latency_buckets(void **state)
{
    fl_metric_set(fl_metric_with(fl_metric_family(FL_METRIC_GAUGE, "flotilla_t_depth", "Depth.", NULL, NULL, NULL, 0),
                                 NULL, NULL),
                  7);
    fl_metric *h = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_t_lat_seconds", "L.", NULL, NULL, NULL, 0);
    fl_metric_observe(fl_metric_with(h, NULL, NULL), 0.0005);
    char *s = render();
    assert_line(s, "flotilla_t_depth 7");
    assert_line(s, "flotilla_t_lat_seconds_bucket{le=\"0.001\"} 1");
    assert_line(s, "flotilla_t_lat_seconds_bucket{le=\"600\"} 1");
    assert_line(s, "flotilla_t_lat_seconds_count 1");
    free(s);
}

static void test_registering_a_family_again_returns_the_same_one(void **state)
{
    fl_metric *a = fl_metric_family(FL_METRIC_COUNTER, "flotilla_t_same_total", "x", "l", NULL, NULL, 0);
    fl_metric *b = fl_metric_family(FL_METRIC_COUNTER, "flotilla_t_same_total", "x", "l", NULL, NULL, 0);
    assert_ptr_equal(a, b);
    assert_ptr_equal(fl_metric_with(a, "v", NULL), fl_metric_with(b, "v", NULL));
}

static void test_dropped_series_is_hidden_until_taken_again(void **state)
{
    fl_metric *m = fl_metric_family(FL_METRIC_GAUGE, "flotilla_t_ready", "Ready.", "cluster", NULL, NULL, 0);
    fl_metric_series *a = fl_metric_with(m, "a", NULL);
    fl_metric_set(a, 1);
    fl_metric_set(fl_metric_with(m, "b", NULL), 1);
    fl_metric_drop(m, "a", NULL);
    fl_metric_set(a, 0); /* the handle still works */
    char *s = render();
    assert_null(strstr(s, "cluster=\"a\""));
    assert_line(s, "flotilla_t_ready{cluster=\"b\"} 1");
    free(s);
    fl_metric_with(m, "a", NULL);
    s = render();
    assert_line(s, "flotilla_t_ready{cluster=\"a\"} 0");
    free(s);
}

static void test_unbounded_label_values_fold_into_other(void **state)
{
    fl_metric *m = fl_metric_family(FL_METRIC_COUNTER, "flotilla_t_many_total", "x", "k", NULL, NULL, 0);
    char v[32];
    for (int i = 0; i < FL_METRIC_MAX_SERIES + 10; i++) {
        snprintf(v, sizeof v, "k%d", i);
        fl_metric_add(fl_metric_with(m, v, NULL), 1);
    }
    char *s = render();
    assert_line(s, "flotilla_t_many_total{k=\"k0\"} 1");
    /* MAX values have a series each, the rest share one */
    char last[96], first_folded[32];
    snprintf(last, sizeof last, "flotilla_t_many_total{k=\"k%d\"} 1", FL_METRIC_MAX_SERIES - 1);
    snprintf(first_folded, sizeof first_folded, "k=\"k%d\"", FL_METRIC_MAX_SERIES);
    assert_line(s, last);
    assert_line(s, "flotilla_t_many_total{k=\"_other\"} 10");
    assert_null(strstr(s, first_folded));
    free(s);
}

static void test_reset_hides_and_zeroes_families_handles_stay_valid(void **state)
{
    fl_metric *m = fl_metric_family(FL_METRIC_COUNTER, "flotilla_t_kept_total", "x", NULL, NULL, NULL, 0);
    fl_metric_series *c = fl_metric_with(m, NULL, NULL);
    fl_metric_add(c, 3);
    fl_metrics_reset();
    char *s = render();
    assert_null(strstr(s, "flotilla_t_kept_total"));
    free(s);
    fl_metric_add(fl_metric_with(m, NULL, NULL), 1);
    assert_true(fl_metric_value(c) == 1);
}

static int hook_calls;
static void count_hook(void *ctx)
{
    hook_calls++;
    fl_metric_set(ctx, hook_calls);
}

static void test_scrape_hooks_run_before_render_until_removed(void **state)
{
    fl_metric_series *g =
        fl_metric_with(fl_metric_family(FL_METRIC_GAUGE, "flotilla_t_hooked", "x", NULL, NULL, NULL, 0), NULL, NULL);
    hook_calls = 0;
    fl_metrics_on_scrape(count_hook, g);
    fl_metrics_on_scrape(count_hook, g); /* once only */
    char *s = render();
    assert_line(s, "flotilla_t_hooked 1");
    free(s);
    fl_metrics_remove_hook(count_hook, g);
    free(render());
    assert_int_equal(hook_calls, 1);
}

static fl_metric_series *shared_counter, *shared_histogram;

static void *hammer_series(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        fl_metric_add(shared_counter, 1);
        fl_metric_observe(shared_histogram, 0.5);
    }
    return NULL;
}

static void test_concurrent_observations_through_handles_are_all_counted(void **state)
{
    shared_counter = fl_metric_with(
        fl_metric_family(FL_METRIC_COUNTER, "flotilla_t_hammer_total", "x", NULL, NULL, NULL, 0), NULL, NULL);
    shared_histogram = fl_metric_with(
        fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_t_hammer_seconds", "x", NULL, NULL, NULL, 0), NULL, NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer_series, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    char *s = render();
    assert_line(s, "flotilla_t_hammer_total 160000");
    assert_line(s, "flotilla_t_hammer_seconds_count 160000");
    assert_line(s, "flotilla_t_hammer_seconds_sum 80000");
    assert_line(s, "flotilla_t_hammer_seconds_bucket{le=\"+Inf\"} 160000");
    free(s);
}

static void test_named_workqueue_counts_client_go_metrics(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add(q, "early"); /* before the name: counted at naming */
    fl_workqueue_set_name(q, "t-queue");
    fl_workqueue_add(q, "a");
    fl_workqueue_add(q, "a"); /* coalesced: not an add */
    char *s = render();
    assert_line(s, "workqueue_adds_total{name=\"t-queue\"} 2");
    assert_line(s, "workqueue_depth{name=\"t-queue\"} 2");
    free(s);
    char *key;
    assert_int_equal(fl_workqueue_get(q, 1000, &key), 0);
    fl_workqueue_add(q, key); /* added while processing: queued again at done, one add */
    s = render();
    assert_line(s, "workqueue_depth{name=\"t-queue\"} 1");
    assert_null(strstr(s, "workqueue_longest_running_processor_seconds{name=\"t-queue\"} 0\n"));
    free(s);
    fl_workqueue_add_rate_limited(q, "b");
    fl_workqueue_done(q, key);
    free(key);
    s = render();
    assert_line(s, "workqueue_adds_total{name=\"t-queue\"} 3");
    assert_line(s, "workqueue_retries_total{name=\"t-queue\"} 1");
    assert_line(s, "workqueue_depth{name=\"t-queue\"} 2");
    assert_line(s, "workqueue_work_duration_seconds_count{name=\"t-queue\"} 1");
    assert_line(s, "workqueue_queue_duration_seconds_count{name=\"t-queue\"} 1");
    assert_line(s, "workqueue_unfinished_work_seconds{name=\"t-queue\"} 0");
    assert_line(s, "workqueue_longest_running_processor_seconds{name=\"t-queue\"} 0");
    free(s);
    fl_workqueue_shut_down(q);
    fl_workqueue_free(q); /* its hook goes with it: a render after must not touch it */
    free(render());
}

#define T(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_request_counter_lines),
        T(test_histogram_buckets_are_cumulative),
        T(test_negative_or_nan_duration_counts_as_zero),
        T(test_label_values_are_escaped),
        T(test_gauges_read_at_scrape_time),
        T(test_counters_by_name),
        T(test_reset_drops_everything),
        T(test_many_resources_are_capped),
        T(test_concurrent_requests_are_all_counted),
        T(test_labelled_counter_renders_help_type_and_sorted_series),
        T(test_labelled_histogram_buckets_sum_and_count),
        T(test_unlabelled_gauge_and_default_latency_buckets),
        T(test_registering_a_family_again_returns_the_same_one),
        T(test_dropped_series_is_hidden_until_taken_again),
        T(test_unbounded_label_values_fold_into_other),
        T(test_reset_hides_and_zeroes_families_handles_stay_valid),
        T(test_scrape_hooks_run_before_render_until_removed),
        T(test_concurrent_observations_through_handles_are_all_counted),
        T(test_named_workqueue_counts_client_go_metrics),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fl_metrics_reset();
    return rc;
}
