/* test_cluster_collect.c - fl_cluster_collect's apiEnablements against an in-process API:
 * from aggregated discovery (two requests) when the member answers it, and the same
 * enablements from one request per group-version when it does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testapi.h"

#include "core/metrics.h"
#include "client/client.h"
#include "controllers/cluster.h"
#include "core/json.h"
#include "core/mem.h"

typedef struct fixture {
    fl_api api;
    fl_store *store;
} fixture;

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    f->store = test_api_open_memory(&f->api, "default");
    /* a CRD: its group-version must be among the enablements too */
    assert_int_equal(test_api_request(&f->api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                      NULL,
                                      "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
                                      "\"metadata\":{\"name\":\"crontabs.stable.example.com\"},\"spec\":{\"group\":"
                                      "\"stable.example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"crontabs\","
                                      "\"singular\":\"crontab\",\"kind\":\"CronTab\"},\"versions\":[{\"name\":\"v1\","
                                      "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":"
                                      "\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}"),
                     201);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_store_free(f->store);
    free(f);
    return 0;
}

/* An older API server: the Accept header is not passed on, so discovery answers in the
 * per-group-version form only. */
static void serve_without_aggregated(void *ctx, const char *method, const char *path, const char *content_type,
                                     const char *accept, const char *user_agent, const char *body, size_t body_len,
                                     const json_t *body_obj, bool body_given, bool want_obj,
                                     const fl_client_local_list *list, fl_client_local_resp *out)
{
    (void)accept;
    fl_api_local_serve(ctx, method, path, content_type, NULL, user_agent, body, body_len, body_obj, body_given,
                       want_obj, list, out);
}

/* Discovery requests (GET of /api..., /apis...) counted by the API's request metrics. */
static double discovery_gets(void)
{
    size_t len = 0;
    char *text = fl_metrics_render(&len);
    double n = 0;
    static const char prefix[] = "flotilla_apiserver_request_total{verb=\"GET\",resource=\"\",";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, prefix, sizeof prefix - 1))
            n += strtod(strrchr(line, ' ') + 1, NULL);
    free(text);
    return n;
}

static json_t *collect(fl_client *c, double *gets, const char **reason)
{
    fl_metrics_reset();
    fl_cluster_collected col;
    fl_cluster_collect(c, NULL, true, &col);
    *gets = discovery_gets();
    *reason = col.apis_reason;
    json_t *apis = json_incref(col.apis);
    fl_cluster_collected_close(&col);
    return apis;
}

static bool has_gv(const json_t *apis, const char *gv, const char *resource, const char *kind)
{
    size_t i, j;
    json_t *e, *r;
    json_array_foreach(apis, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "groupVersion")), gv))
            continue;
        json_array_foreach(json_object_get(e, "resources"), j, r) if (
            !strcmp(json_string_value(json_object_get(r, "name")), resource) &&
            !strcmp(json_string_value(json_object_get(r, "kind")), kind)) return true;
    }
    return false;
}

static void aggregated_and_per_group_version_agree(void **state)
{
    fixture *f = *state;
    fl_client *agg = fl_api_local_client(&f->api, "test");
    fl_client_local old = {.serve = serve_without_aggregated, .ctx = &f->api};
    fl_client *per_gv = fl_client_new_local(&old, &(fl_client_options){.user_agent = "test"});

    double agg_gets = 0, old_gets = 0;
    const char *agg_reason = NULL, *old_reason = NULL;
    json_t *a = collect(agg, &agg_gets, &agg_reason);
    json_t *b = collect(per_gv, &old_gets, &old_reason);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(agg_reason, "Complete");
    assert_string_equal(old_reason, "Complete");

    size_t la = 0, lb = 0;
    char *ta = fl_json_dumps(a, &la), *tb = fl_json_dumps(b, &lb);
    assert_string_equal(ta, tb); /* the same entries, in the same order */
    free(ta);
    free(tb);
    assert_true(has_gv(a, "v1", "configmaps", "ConfigMap"));
    assert_true(has_gv(a, "apps/v1", "deployments", "Deployment"));
    assert_true(has_gv(a, "stable.example.com/v1", "crontabs", "CronTab"));

    /* /version, /api and /apis: nothing per group-version */
    assert_true(agg_gets == 3);
    assert_true(old_gets > agg_gets + json_array_size(b) - 1);

    /* the aggregated answer taught the client what a kind's resource is, as the per-group-
     * version documents do */
    char *resource = NULL;
    bool namespaced = false;
    fl_metrics_reset();
    assert_int_equal(fl_client_resolve(agg, "stable.example.com/v1", "CronTab", &resource, &namespaced, NULL), 0);
    assert_string_equal(resource, "crontabs");
    assert_true(namespaced);
    assert_true(discovery_gets() == 0); /* from what it learned: no request */
    free(resource);

    json_decref(a);
    json_decref(b);
    fl_client_free(agg);
    fl_client_free(per_gv);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(aggregated_and_per_group_version_agree, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
