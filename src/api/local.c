/* local.c - the API served in process, for the server's own controllers (see
 * fl_client_new_local in client/client.h).
 *
 * What http.c does for a request arriving over the wire, minus the wire: split the path
 * from its query string, percent-decode both, hand an fl_req to fl_api_handle, and give
 * the answer (status, body, or a watch stream) back to the client. Requests run on the
 * calling thread. They are trusted as the in-process caller they are (no user: not
 * authorized, as the admin would be) and are counted in the request metrics like any other.
 * The HTTP layer's limits (in-flight requests, watches, body size) guard the server from
 * clients it does not control; the controllers are bounded by their own worker pools. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/api_internal.h"
#include "core/metrics.h"
#include "core/mem.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode s[0..n) into a new string; in a query, '+' is a space. */
static char *decode(const char *s, size_t n, bool query)
{
    char *out = fl_malloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 && (lo = hexval(s[i + 2])) >= 0) {
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        } else if (query && s[i] == '+') {
            *o++ = ' ';
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return out;
}

static void parse_query(fl_req *r, const char *q)
{
    while (q && *q) {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        if (n && r->nquery < 64) {
            r->query = fl_realloc(r->query, (r->nquery + 1) * sizeof *r->query);
            r->query[r->nquery].key = decode(q, eq ? (size_t)(eq - q) : n, true);
            r->query[r->nquery].value = eq ? decode(eq + 1, n - (size_t)(eq + 1 - q), true) : fl_strdup("");
            r->nquery++;
        }
        q += n;
        if (*q == '&')
            q++;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void fl_api_local_serve(void *api, const char *method, const char *path, const char *content_type,
                        const char *accept, const char *user_agent, const char *body, size_t body_len,
                        const json_t *body_obj, bool body_given, bool want_obj, const fl_client_local_list *list,
                        fl_client_local_resp *out)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    const char *qm = strchr(path, '?');
    char *p = decode(path, qm ? (size_t)(qm - path) : strlen(path), false);
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = method;
    r.path = p;
    r.content_type = content_type;
    r.accept = accept ? accept : "application/json";
    r.user_agent = user_agent;
    /* fl_req promises a NUL-terminated body: the client's may not be */
    char *b = body ? fl_strndup(body, body_len) : NULL;
    r.body = b;
    r.body_len = body_len;
    r.body_obj = body_obj;
    r.body_given = body_given;
    r.want_obj = want_obj;
    r.list = list;
    r.discard = !want_obj;
    if (qm)
        parse_query(&r, qm + 1);
    /* an in-process request is the controllers': its writes hold only while this process
     * leads them (store.h, "leading") */
    bool was_fenced = fl_store_fence_thread(true);
    fl_api_handle(api, &r);
    fl_store_fence_thread(was_fenced);
    for (size_t i = 0; i < r.nquery; i++) {
        free(r.query[i].key);
        free(r.query[i].value);
    }
    free(r.query);
    free(r.warnings);
    free(b);
    out->code = r.code;
    out->body = r.resp;
    out->len = r.resp_len;
    out->obj = r.resp_obj;
    out->stream = r.stream;
    fl_metrics_request(r.verb ? r.verb : method, r.resource, r.code, now_s() - t0);
    free(p);
}

static size_t stream_read(void *s, char *buf, size_t cap)
{
    return fl_api_stream_read(s, buf, cap);
}

static int stream_next(void *s, const char **type, json_t **obj, fl_blob **text)
{
    return fl_api_stream_next(s, type, obj, text);
}

static json_t *decode_text(void *ctx, fl_blob *text, const char *const *skip)
{
    (void)ctx;
    return skip ? fl_api_decoded_without(text, skip) : fl_api_decoded(text);
}

static int stored_at(void *ctx, const char *group, const char *resource, const char *key, int64_t rev,
                     fl_blob **out)
{
    fl_api *api = ctx;
    char *skey = fl_cat("/", group[0] ? group : "core", "/", resource, "/", key, NULL);
    int rc = fl_store_get_at(api->store, skey, rev, out);
    free(skey);
    return rc;
}

static void stream_cancel(void *s)
{
    fl_api_stream_cancel(s);
}

static void stream_free(void *s)
{
    fl_api_stream_free(s);
}

fl_client *fl_api_local_client(fl_api *api, const char *user_agent)
{
    fl_client_local srv = {.serve = fl_api_local_serve,
                           .stream_read = stream_read,
                           .stream_next = stream_next,
                           .decode = decode_text,
                           .stored_at = stored_at,
                           .stream_cancel = stream_cancel,
                           .stream_free = stream_free,
                           .ctx = api};
    return fl_client_new_local(&srv, &(fl_client_options){.user_agent = user_agent});
}
