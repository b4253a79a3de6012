/* testapi.h - drive an in-process API instance (src/api/api.h) the way the HTTP layer
 * does, for unit tests that need objects in place. Include after <cmocka.h>. */
#ifndef FL_TESTAPI_H
#define FL_TESTAPI_H

#include <stdlib.h>
#include <string.h>

#include "api/api.h"

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

#endif
