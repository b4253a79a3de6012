/* test_metrics.c - Prometheus exposition (src/api/metrics.c): exact sample lines for
 * counted requests, cumulative histogram buckets, label and HELP escaping, counters,
 * gauge callbacks, reset, and counting from many threads at once. */
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
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fl_metrics_reset();
    return rc;
}
