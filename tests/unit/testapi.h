/* testapi.h - drive an in-process API instance (src/api/api.h) the way the HTTP layer
 * does, for unit tests that need objects in place; and run one of the server's controllers
 * against it, as `flotilla server` runs them all (controller.h), for the tests of a
 * controller's behaviour. Include after <cmocka.h>. */
#ifndef FL_TESTAPI_H
#define FL_TESTAPI_H

#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "controllers/controller.h"
#include "store/store.h"

/* One request; returns the HTTP status. Failures (not 2xx) are printed to help the reader
 * of a failing test. ctype NULL with a body means application/json. */
static inline int test_api_request(fl_api *api, const char *method, const char *path, const char *ctype,
                                   const char *body)
{
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = method;
    r.path = path;
    r.content_type = ctype ? ctype : body ? "application/json" : NULL;
    r.body = body;
    r.body_len = body ? strlen(body) : 0;
    fl_api_handle(api, &r);
    if (r.code / 100 != 2)
        print_message("%s %s -> %d %s\n", method, path, r.code, r.resp ? r.resp : "");
    free(r.resp);
    free(r.warnings);
    fl_api_stream_free(r.stream);
    return r.code;
}

/* An API over a fresh memory store, set up as the server sets up its own (idle watches get
 * a bookmark a minute), with namespace ns (NULL: none) present. Returns the store, for
 * fl_store_free once the API is done with. */
static inline fl_store *test_api_open_memory(fl_api *api, const char *ns)
{
    fl_store *store = NULL;
    fl_store_config sc = {.memory = true};
    assert_int_equal(fl_store_open(&sc, &store), 0);
    api->store = store;
    api->bookmark_interval_ms = 60000;
    if (ns)
        assert_int_equal(fl_api_ensure_namespace(api, ns), 0);
    return store;
}

/* The object at path (GET, no query) as JSON (a new reference), or NULL when the API does not
 * answer 200 (nothing printed: a test polls for objects that are not there yet). */
static inline json_t *test_api_get(fl_api *api, const char *path)
{
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = "GET";
    r.path = path;
    fl_api_handle(api, &r);
    json_t *obj = r.code == 200 && r.resp ? json_loadb(r.resp, r.resp_len, 0, NULL) : NULL;
    free(r.resp);
    free(r.warnings);
    fl_api_stream_free(r.stream);
    return obj;
}

/* test_api_request with obj as the body (JSON; a merge patch for PATCH). Returns the status. */
static inline int test_api_send(fl_api *api, const char *method, const char *path, const json_t *obj)
{
    char *body = json_dumps(obj, JSON_COMPACT);
    int code = test_api_request(api, method, path,
                                !strcmp(method, "PATCH") ? "application/merge-patch+json" : NULL, body);
    free(body);
    return code;
}

/* One of the server's controllers (fl_server_controllers, by its name: "detector",
 * "scheduler", "binding", ...) running alone against api, under a manager of its own with
 * the shared facilities the server gives every controller. */
typedef struct test_ctrl {
    fl_client *cp;
    fl_ctrl_manager *m;
} test_ctrl;

static inline void test_ctrl_start(fl_api *api, const char *name, test_ctrl *t)
{
    const fl_controller *one[2] = {NULL, NULL};
    for (size_t i = 0; fl_server_controllers[i]; i++)
        if (!strcmp(fl_server_controllers[i]->name, name))
            one[0] = fl_server_controllers[i];
    if (!one[0])
        fail_msg("no controller named %s", name);
    t->cp = fl_api_local_client(api, "flotilla-controller-manager");
    fl_ctrl_env env = {.cp = t->cp, .stopping = &api->stopping};
    assert_int_equal(fl_ctrl_manager_start(&env, one, &t->m), 0);
}

/* Stop it as the server does at shutdown (the API's watches end first). */
static inline void test_ctrl_stop(fl_api *api, test_ctrl *t)
{
    api->stopping = 1;
    fl_ctrl_manager_stop(t->m);
    fl_client_free(t->cp);
    t->m = NULL;
    t->cp = NULL;
}

/* The fixture of a controller's unit test: an in-process API over a fresh memory store with
 * namespace "default" (test_fixture_new), and the controller under test, started alone with
 * test_ctrl_start(&f->api, name, &f->ctrl) once the test has put in place what the controller
 * should find at its start. test_fixture_free stops it (if started) and frees the rest. */
typedef struct test_fixture {
    fl_store *store;
    fl_api api;
    test_ctrl ctrl;
} test_fixture;

static inline test_fixture *test_fixture_new(void)
{
    test_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->store = test_api_open_memory(&f->api, "default");
    return f;
}

static inline void test_fixture_free(test_fixture *f)
{
    if (f->ctrl.m)
        test_ctrl_stop(&f->api, &f->ctrl);
    fl_store_free(f->store);
    free(f);
}

#endif
