/* test_members.c - member cluster clients (src/controllers/members.c) and resource
 * quantities (src/controllers/quantity.c).
 *
 * The member tests start an API server in this process, as test_client.c does (kinds,
 * a SQLite store in a temporary directory, fl_api, the HTTP transport on a port the
 * kernel picks, bearer token "t"). The same server plays both parts: it is the control
 * plane holding the Cluster and its Secret, and the member the Cluster points at, so a
 * client built from the Secret's token can be checked against it for real (a wrong
 * token is refused with 401).
 *
 * Every wait is bounded: WAIT_UNTIL fails the test instead of hanging it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/http.h"
#include "api/kinds.h"
#include "client/client.h"
#include "client/kubeconfig.h"
#include "controllers/members.h"
#include "core/quantity.h"
#include "core/err.h"
#include "core/mem.h"
#include "store/store.h"

#include "testapi.h"
#include "testutil.h"

/* ---- fixture: one API server, control plane and member at once ---- */

typedef struct fixture {
    char dir[64];
    fl_store *store;
    fl_api api;
    fl_http *http;
    int port;
    char url[64];
    fl_client *cp;
    fl_members *m;
} fixture;

static int api_call(fixture *f, const char *method, const char *path, const char *body)
{
    return test_api_request(&f->api, method, path, NULL, body);
}

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/fl-members-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char *db = fl_asprintf("%s/store.db", f->dir);
    fl_store_config sc = {.path = db, .compact_interval_ms = -1};
    assert_int_equal(fl_store_open(&sc, &f->store), 0);
    free(db);
    f->api.store = f->store;
    f->api.bookmark_interval_ms = 60000;
    fl_api_load_crds(&f->api);
    assert_int_equal(api_call(f, "POST", "/api/v1/namespaces",
                              "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"karmada-cluster\"}}"),
                     201);
    fl_http_config hc = {.listen = "127.0.0.1:0", .token = "t"};
    char *err = NULL;
    if (fl_http_start(&hc, &f->api, &f->http, &err))
        fail_msg("fl_http_start: %s", err ? err : "?");
    f->port = fl_http_port(f->http);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, f->url, "t");
    assert_int_equal(fl_client_new(&kc, NULL, &f->cp, NULL), 0);
    fl_kubeconfig_close(&kc);
    f->m = fl_members_new(f->cp);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_members_free(f->m);
    fl_client_free(f->cp);
    fl_http_stop(f->http);
    fl_store_free(f->store);
    char *cmd = fl_asprintf("rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(cmd);
    free(f);
    return 0;
}

/* "t" is dA==, "wrong" is d3Jvbmc= */
static void put_secret(fixture *f, const char *name, const char *token_b64, bool create)
{
    char *body = fl_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\","
                             "\"namespace\":\"karmada-cluster\"},\"type\":\"Opaque\",\"data\":{\"token\":\"%s\"}}",
                             name, token_b64);
    char *path = create ? fl_strdup("/api/v1/namespaces/karmada-cluster/secrets")
                        : fl_asprintf("/api/v1/namespaces/karmada-cluster/secrets/%s", name);
    assert_int_equal(api_call(f, create ? "POST" : "PUT", path, body), create ? 201 : 200);
    free(path);
    free(body);
}

static void put_cluster(fixture *f, const char *name, const char *mode, const char *secret)
{
    char *body = fl_asprintf("{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\","
                             "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"syncMode\":\"%s\",\"apiEndpoint\":\"%s\","
                             "\"secretRef\":{\"namespace\":\"karmada-cluster\",\"name\":\"%s\"}}}",
                             name, mode, f->url, secret);
    assert_int_equal(api_call(f, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", body), 201);
    free(body);
}

/* A request through c: 0, or the mapped error with the HTTP status in *http. */
static int probe(fl_client *c, int *http)
{
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    int rc = fl_client_request(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, NULL, &ce);
    *http = ce.http;
    return rc;
}

static fl_client *client_of(fixture *f, const char *name)
{
    fl_client *c = NULL;
    char *err = NULL;
    int rc = fl_members_client(f->m, name, &c, &err);
    if (rc)
        fail_msg("fl_members_client(%s): %s", name, err ? err : fl_strerror(rc));
    return c;
}

/* ---- members ---- */

static void test_client_is_built_from_the_cluster_and_its_secret(void **state)
{
    fixture *f = *state;
    put_secret(f, "m1", "dA==", true);
    put_cluster(f, "m1", "Push", "m1");
    fl_client *c = client_of(f, "m1");
    assert_string_equal(fl_client_server(c), f->url);
    int http;
    assert_int_equal(probe(c, &http), 0);
    /* asked again, the same client */
    assert_ptr_equal(client_of(f, "m1"), c);
}

static void test_client_is_rebuilt_when_the_secret_changes_and_kept_across_status_writes(void **state)
{
    fixture *f = *state;
    put_secret(f, "m1", "dA==", true);
    put_cluster(f, "m1", "Push", "m1");
    fl_client *c1 = client_of(f, "m1");

    /* a status write moves the Cluster's resourceVersion, not its credentials */
    assert_int_equal(api_call(f, "PUT", "/apis/cluster.karmada.io/v1alpha1/clusters/m1/status",
                              "{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\","
                              "\"metadata\":{\"name\":\"m1\"},\"spec\":{\"syncMode\":\"Push\"},"
                              "\"status\":{\"kubernetesVersion\":\"v1.32.0\"}}"),
                     200);
    sleep_ms(200);
    assert_ptr_equal(client_of(f, "m1"), c1);

    /* a new token: a new client, which the server refuses */
    put_secret(f, "m1", "d3Jvbmc=", false);
    WAIT_UNTIL(client_of(f, "m1") != c1, 5000);
    fl_client *c2 = client_of(f, "m1");
    int http;
    assert_int_equal(probe(c2, &http), FL_EINVAL);
    assert_int_equal(http, 401);
    /* the old client stays valid until fl_members_free */
    assert_int_equal(probe(c1, &http), 0);

    /* and back */
    put_secret(f, "m1", "dA==", false);
    WAIT_UNTIL(client_of(f, "m1") != c2, 5000);
    assert_int_equal(probe(client_of(f, "m1"), &http), 0);
}

static void test_pull_cluster_is_unsupported(void **state)
{
    fixture *f = *state;
    put_secret(f, "p1", "dA==", true);
    put_cluster(f, "p1", "Pull", "p1");
    fl_client *c = (fl_client *)1;
    char *err = NULL;
    assert_int_equal(fl_members_client(f->m, "p1", &c, &err), FL_EUNSUPPORTED);
    assert_null(c);
    assert_non_null(err);
    assert_non_null(strstr(err, "Pull"));
    free(err);
}

static void test_missing_cluster_or_secret_is_not_found(void **state)
{
    fixture *f = *state;
    fl_client *c = NULL;
    char *err = NULL;
    assert_int_equal(fl_members_client(f->m, "nope", &c, &err), FL_ENOTFOUND);
    assert_null(c);
    assert_non_null(strstr(err, "cluster nope not found"));
    free(err);

    put_cluster(f, "m2", "Push", "m2");
    err = NULL;
    assert_int_equal(fl_members_client(f->m, "m2", &c, &err), FL_ENOTFOUND);
    assert_non_null(strstr(err, "secret karmada-cluster/m2"));
    free(err);

    /* the Secret appears: the cluster becomes usable */
    put_secret(f, "m2", "dA==", true);
    WAIT_UNTIL(fl_members_client(f->m, "m2", &c, NULL) == 0, 5000);
    assert_non_null(c);
}

static void test_secret_without_token_is_invalid_and_says_so(void **state)
{
    fixture *f = *state;
    assert_int_equal(api_call(f, "POST", "/api/v1/namespaces/karmada-cluster/secrets",
                              "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"m3\","
                              "\"namespace\":\"karmada-cluster\"},\"data\":{\"caBundle\":\"eA==\"}}"),
                     201);
    put_cluster(f, "m3", "Push", "m3");
    fl_client *c = NULL;
    char *err = NULL;
    assert_int_equal(fl_members_client(f->m, "m3", &c, &err), FL_EINVAL);
    assert_non_null(strstr(err, "data.token is missing"));
    free(err);
    /* err may be NULL */
    assert_int_equal(fl_members_client(f->m, "m3", &c, NULL), FL_EINVAL);
}

static void test_forget_drops_the_cached_client(void **state)
{
    fixture *f = *state;
    put_secret(f, "m4", "dA==", true);
    put_cluster(f, "m4", "Push", "m4");
    fl_client *c1 = client_of(f, "m4");
    fl_members_forget(f->m, "m4");
    fl_members_forget(f->m, "never-seen");
    fl_client *c2 = client_of(f, "m4");
    assert_ptr_not_equal(c1, c2);
    int http;
    assert_int_equal(probe(c1, &http), 0); /* still valid until free */
    fl_members_free(NULL);
}

/* ---- quantities ---- */

static char *fmt(const fl_quantity *q)
{
    static char buf[64];
    fl_quantity_format(q, buf, sizeof buf);
    return buf;
}

static char *sum2(const char *a, const char *b)
{
    fl_quantity acc = {0}, q;
    assert_int_equal(fl_quantity_parse(a, &q), 0);
    assert_int_equal(fl_quantity_add(&acc, &q), 0);
    assert_int_equal(fl_quantity_parse(b, &q), 0);
    assert_int_equal(fl_quantity_add(&acc, &q), 0);
    return fmt(&acc);
}

static char *canon(const char *s)
{
    fl_quantity q;
    if (fl_quantity_parse(s, &q))
        fail_msg("cannot parse %s", s);
    return fmt(&q);
}

static void test_quantities_sum_as_kubernetes_writes_them(void **state)
{
    assert_string_equal(sum2("100m", "1"), "1100m");
    assert_string_equal(sum2("1Gi", "512Mi"), "1536Mi");
    assert_string_equal(sum2("1Gi", "1Gi"), "2Gi");
    assert_string_equal(sum2("8", "8"), "16");
    assert_string_equal(sum2("500m", "500m"), "1");
    assert_string_equal(sum2("110", "110"), "220");
    assert_string_equal(sum2("1k", "1"), "1001");
    assert_string_equal(sum2("1M", "1M"), "2M");
    assert_string_equal(sum2("4", "500m"), "4500m");
    assert_string_equal(sum2("8Gi", "512Mi"), "8704Mi");
    /* the sum keeps the first operand's format */
    assert_string_equal(sum2("1Gi", "1G"), "2073741824");
    assert_string_equal(sum2("1G", "1Gi"), "2073741824");
    assert_string_equal(sum2("1", "-1"), "0");
    assert_string_equal(sum2("32Gi", "32Gi"), "64Gi");
}

static void test_quantities_print_in_canonical_form(void **state)
{
    assert_string_equal(canon("0"), "0");
    assert_string_equal(canon("0.5"), "500m");
    assert_string_equal(canon("1000m"), "1");
    assert_string_equal(canon("1500"), "1500");
    assert_string_equal(canon("2000"), "2k");
    assert_string_equal(canon("1024Mi"), "1Gi");
    assert_string_equal(canon("0.5Gi"), "512Mi");
    assert_string_equal(canon("1536Ki"), "1536Ki");
    assert_string_equal(canon("100Ki"), "100Ki");
    assert_string_equal(canon("512"), "512");
    assert_string_equal(canon("1Ki"), "1Ki");
    assert_string_equal(canon("12e6"), "12e6");
    assert_string_equal(canon("1e3"), "1e3");
    assert_string_equal(canon("1E"), "1E");
    assert_string_equal(canon("-100m"), "-100m");
    assert_string_equal(canon("+2"), "2");
    assert_string_equal(canon("1n"), "1n");
    assert_string_equal(canon("1.5u"), "1500n");
    assert_string_equal(canon("0.1n"), "1n"); /* below a nano-unit rounds up */
    assert_string_equal(canon("32Gi"), "32Gi");
    assert_string_equal(canon("110"), "110");
    assert_string_equal(canon("1.5"), "1500m");
}

static void test_quantities_refuse_what_kubernetes_refuses(void **state)
{
    static const char *const bad[] = {"", "m", "1x", "1KI", "1K", "1.2.3", "1e", "1e+", "--1", "1 ", " 1",
                                      "1Gii", "1ki", "999999999999999999999999999999999999999999E", NULL};
    fl_quantity q;
    for (int i = 0; bad[i]; i++) {
        if (fl_quantity_parse(bad[i], &q) != FL_EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_true(fl_quantity_is_zero(&q));
    }
    fl_quantity a, b;
    assert_int_equal(fl_quantity_parse("1Gi", &a), 0);
    assert_int_equal(fl_quantity_parse("1G", &b), 0);
    assert_int_equal(fl_quantity_cmp(&a, &b), 1);
    assert_int_equal(fl_quantity_cmp(&b, &a), -1);
    assert_int_equal(fl_quantity_parse("1024Mi", &b), 0);
    assert_int_equal(fl_quantity_cmp(&a, &b), 0);
}

int main(void)
{
    fl_mem_init();
    fl_kinds_init();
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_client_is_built_from_the_cluster_and_its_secret),
        T(test_client_is_rebuilt_when_the_secret_changes_and_kept_across_status_writes),
        T(test_pull_cluster_is_unsupported),
        T(test_missing_cluster_or_secret_is_not_found),
        T(test_secret_without_token_is_invalid_and_says_so),
        T(test_forget_drops_the_cached_client),
        cmocka_unit_test(test_quantities_sum_as_kubernetes_writes_them),
        cmocka_unit_test(test_quantities_print_in_canonical_form),
        cmocka_unit_test(test_quantities_refuse_what_kubernetes_refuses),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
