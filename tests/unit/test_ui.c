/* test_ui.c - the dashboard's assets at /ui/ (src/api/ui.c), through fl_api_handle as the
 * HTTP layer calls it: the page and its modules with their content types, the headers that
 * keep the page self-contained (CSP, nosniff), 304 from the ETag, the redirect of /ui, 404
 * and 405, and no answer at all from an API that does not serve the dashboard (a simulated
 * member's). No authentication or authorization is involved: the assets hold no data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/auth.h"
#include "store/store.h"

#include "testapi.h"

typedef struct fixture {
    fl_store *store;
    fl_api api;
    fl_auth *auth;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->store = test_api_open_memory(&f->api, NULL);
    fl_auth_new(&f->api, "admin-token-0123456789", "boot-token-0123456789", &f->auth);
    f->api.auth = f->auth;
    f->api.ui = true;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_auth_free(f->auth);
    fl_store_free(f->store);
    free(f);
    return 0;
}

/* The value of response header name, or NULL. */
static const char *header(const fl_req *r, const char *name)
{
    for (size_t i = 0; i + 1 < sizeof r->resp_headers / sizeof r->resp_headers[0] && r->resp_headers[i]; i += 2)
        if (!strcmp(r->resp_headers[i], name))
            return r->resp_headers[i + 1];
    return NULL;
}

/* A request as an anonymous browser would make it (no identity: the transport let it
 * through as a public path); the caller frees r->resp. */
static void get(fixture *f, fl_req *r, const char *method, const char *path, const char *inm)
{
    memset(r, 0, sizeof *r);
    r->method = method;
    r->path = path;
    r->if_none_match = inm;
    fl_api_handle(&f->api, r);
}

static void test_the_page_is_served_with_headers_that_forbid_remote_and_inline_code(void **state)
{
    fixture *f = *state;
    fl_req r;
    get(f, &r, "GET", "/ui/", NULL);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.resp_type, "text/html; charset=utf-8");
    assert_non_null(strstr(r.resp, "<script type=\"module\" src=\"js/main.js\">"));
    const char *csp = header(&r, "Content-Security-Policy");
    assert_non_null(csp);
    assert_non_null(strstr(csp, "default-src 'none'"));
    assert_non_null(strstr(csp, "script-src 'self';")); /* no 'unsafe-inline', no other origin */
    assert_non_null(strstr(csp, "connect-src 'self'"));
    assert_non_null(strstr(csp, "frame-ancestors 'none'"));
    assert_string_equal(header(&r, "X-Content-Type-Options"), "nosniff");
    assert_non_null(header(&r, "ETag"));
    free(r.resp);

    get(f, &r, "GET", "/ui/js/main.js", NULL);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.resp_type, "text/javascript; charset=utf-8");
    free(r.resp);
    get(f, &r, "GET", "/ui/app.css", NULL);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.resp_type, "text/css; charset=utf-8");
    free(r.resp);
}

static void test_an_unchanged_asset_is_answered_304_from_its_etag(void **state)
{
    fixture *f = *state;
    fl_req r;
    get(f, &r, "GET", "/ui/js/api.js", NULL);
    assert_int_equal(r.code, 200);
    char etag[64];
    snprintf(etag, sizeof etag, "%s", header(&r, "ETag"));
    free(r.resp);
    assert_int_equal(etag[0], '"');

    get(f, &r, "GET", "/ui/js/api.js", etag);
    assert_int_equal(r.code, 304);
    assert_int_equal(r.resp_len, 0);
    free(r.resp);
    char list[160];
    snprintf(list, sizeof list, "\"0000\", %s", etag);
    get(f, &r, "GET", "/ui/js/api.js", list);
    assert_int_equal(r.code, 304);
    free(r.resp);
    /* another file's tag is not this one's */
    get(f, &r, "GET", "/ui/js/dom.js", etag);
    assert_int_equal(r.code, 200);
    free(r.resp);
}

static void test_ui_redirects_to_the_page_and_unknown_files_and_methods_are_refused(void **state)
{
    fixture *f = *state;
    fl_req r;
    get(f, &r, "GET", "/ui", NULL);
    assert_int_equal(r.code, 301);
    assert_string_equal(header(&r, "Location"), "/ui/");
    free(r.resp);

    get(f, &r, "GET", "/ui/../kubeconfig", NULL); /* names are looked up, never opened */
    assert_int_equal(r.code, 404);
    assert_non_null(strstr(r.resp, "\"reason\":\"NotFound\""));
    free(r.resp);
    get(f, &r, "GET", "/ui/embed.cmake", NULL); /* the build's script is not an asset */
    assert_int_equal(r.code, 404);
    free(r.resp);

    get(f, &r, "POST", "/ui/index.html", NULL);
    assert_int_equal(r.code, 405);
    assert_non_null(strstr(r.resp, "\"reason\":\"MethodNotAllowed\""));
    free(r.resp);
    get(f, &r, "HEAD", "/ui/index.html", NULL);
    assert_int_equal(r.code, 200);
    free(r.resp);
}

static void test_an_api_without_the_dashboard_does_not_serve_it(void **state)
{
    fixture *f = *state;
    f->api.ui = false; /* a simulated member's API */
    fl_req r;
    get(f, &r, "GET", "/ui/", NULL);
    assert_int_not_equal(r.code, 200);
    assert_null(header(&r, "Content-Security-Policy"));
    free(r.resp);
    free(r.warnings);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_page_is_served_with_headers_that_forbid_remote_and_inline_code, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_an_unchanged_asset_is_answered_304_from_its_etag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ui_redirects_to_the_page_and_unknown_files_and_methods_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_an_api_without_the_dashboard_does_not_serve_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
