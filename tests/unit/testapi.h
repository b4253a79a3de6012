/* testapi.h - drive an in-process API instance (src/api/api.h) the way the HTTP layer
 * does, for unit tests that need objects in place. Include after <cmocka.h>. */
#ifndef FL_TESTAPI_H
#define FL_TESTAPI_H

#include <stdlib.h>
#include <string.h>

#include "api/api.h"
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

#endif
