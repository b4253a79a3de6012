/* health.c - the checks behind /livez, /readyz and /healthz (see health.h).
 *
 * A probe gathers the checks of its endpoint into one ordered list, in the order
 * kube-apiserver lists its own: ping, log, etcd, etcd-readiness, then the process's checks
 * (fl_api.health_checks), then shutdown. The list is built per request from the API and
 * its store, so a simulated member's API (a memory store, no controllers) and the member
 * host's (no store at all) answer with the checks they have. */
#include "api/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/strbuf.h"

#define MAX_CHECKS 16
#define MAX_QUERY 64 /* the transport keeps at most 64 query parameters (http_job.c) */

typedef struct check {
    const char *name;
    unsigned endpoints;
    int (*fn)(void *ctx, char *why, size_t cap);
    void *ctx;
} check;

static int check_ok(void *ctx, char *why, size_t cap)
{
    (void)ctx, (void)why, (void)cap;
    return 0;
}

/* etcd: the store answers a read (its index takes a reader) */
static int check_store_read(void *ctx, char *why, size_t cap)
{
    return fl_store_probe(((fl_api *)ctx)->store, false, why, cap);
}

/* etcd-readiness: that, and its writer takes what is queued for it */
static int check_store_write(void *ctx, char *why, size_t cap)
{
    return fl_store_probe(((fl_api *)ctx)->store, true, why, cap);
}

/* shutdown: /readyz fails from the moment the process begins to stop, so that a load
 * balancer sends no more new requests while it drains */
static int check_shutdown(void *ctx, char *why, size_t cap)
{
    const fl_api *api = ctx;
    if (!api->stopping && !api->shutting_down)
        return 0;
    snprintf(why, cap, "process is shutting down");
    return 1;
}

/* The checks of endpoint (an FL_HEALTH_* bit) in the order they are listed; returns how many. */
static size_t gather(fl_api *api, unsigned endpoint, check *out)
{
    check all[MAX_CHECKS] = {
        {"ping", FL_HEALTH_ALL, check_ok, NULL},
        /* our log writes to a stream with no buffer of its own to block on */
        {"log", FL_HEALTH_ALL, check_ok, NULL},
    };
    size_t n = 2;
    if (api->store) {
        all[n++] = (check){"etcd", FL_HEALTH_ALL, check_store_read, api};
        all[n++] = (check){"etcd-readiness", FL_HEALTH_READYZ, check_store_write, api};
    }
    for (const fl_health_check *c = api->health_checks; c && c->name && n < MAX_CHECKS - 1; c++)
        all[n++] = (check){c->name, c->endpoints, c->check, c->ctx};
    all[n++] = (check){"shutdown", FL_HEALTH_READYZ, check_shutdown, api};
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (all[i].endpoints & endpoint)
            out[k++] = all[i];
    return k;
}

static void respond_text(fl_req *r, int code, const char *text, size_t len)
{
    fl_resp_raw(r, code, text, len);
    r->resp_type = "text/plain; charset=utf-8";
}

static bool excluded(const fl_req *r, const char *name, bool *used)
{
    bool hit = false;
    for (size_t i = 0; i < r->nquery && i < MAX_QUERY; i++)
        if (!strcmp(r->query[i].key, "exclude") && !strcmp(r->query[i].value, name))
            hit = used[i] = true;
    return hit;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One check alone: "ok", or 500 with why (the detailed endpoints are for those who probe
 * one check on purpose, as kube-apiserver answers them). */
static void respond_one(fl_req *r, const char *endpoint, const check *c)
{
    char why[256] = "";
    if (c->fn(c->ctx, why, sizeof why) == 0) {
        respond_text(r, 200, "ok", 2);
        return;
    }
    fl_log(FL_LOG_DEBUG, "health", "%s/%s failed: %s", endpoint, c->name, why);
    char *text = fl_asprintf("internal server error: %s\n", why);
    respond_text(r, 500, text, strlen(text));
    free(text);
}

void fl_health_respond(fl_api *api, fl_req *r, const char *endpoint, const char *one)
{
    unsigned bit = !strcmp(endpoint, "livez") ? FL_HEALTH_LIVEZ
                   : !strcmp(endpoint, "readyz") ? FL_HEALTH_READYZ : FL_HEALTH_HEALTHZ;
    r->verb = "GET";
    check checks[MAX_CHECKS];
    size_t n = gather(api, bit, checks);
    if (one) {
        for (size_t i = 0; i < n; i++)
            if (!strcmp(checks[i].name, one)) {
                respond_one(r, endpoint, &checks[i]);
                return;
            }
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    bool used[MAX_QUERY] = {false}; /* which exclude= parameters matched a check */
    fl_strbuf out = FL_STRBUF_INIT, failed = FL_STRBUF_INIT;
    for (size_t i = 0; i < n; i++) {
        char why[256] = "";
        if (excluded(r, checks[i].name, used))
            fl_strbuf_printf(&out, "[+]%s excluded: ok\n", checks[i].name);
        else if (checks[i].fn(checks[i].ctx, why, sizeof why) == 0)
            fl_strbuf_printf(&out, "[+]%s ok\n", checks[i].name);
        else {
            /* the public answer withholds why; the log has it */
            fl_strbuf_printf(&out, "[-]%s failed: reason withheld\n", checks[i].name);
            fl_strbuf_printf(&failed, "%s[-]%s failed: %s", failed.len ? "; " : "", checks[i].name, why);
        }
    }
    /* names excluded that match nothing are said, not silently ignored (sorted, once each) */
    const char *unmatched[MAX_QUERY];
    size_t nu = 0;
    for (size_t i = 0; i < r->nquery && i < MAX_QUERY; i++)
        if (!strcmp(r->query[i].key, "exclude") && !used[i])
            unmatched[nu++] = r->query[i].value;
    qsort(unmatched, nu, sizeof *unmatched, cmp_str);
    for (size_t i = 0; i < nu; i++)
        if (i == 0 || strcmp(unmatched[i], unmatched[i - 1]))
            fl_strbuf_printf(&out, "%s\"%s\"", i ? "," : "warn: some health checks cannot be excluded: no matches for ",
                             unmatched[i]);
    if (nu)
        fl_strbuf_addc(&out, '\n');
    if (failed.len) {
        fl_log(FL_LOG_DEBUG, "health", "%s check failed: %s", endpoint, fl_strbuf_str(&failed));
        fl_strbuf_printf(&out, "%s check failed\n", endpoint);
        respond_text(r, 500, fl_strbuf_str(&out), out.len);
    } else if (fl_req_query(r, "verbose")) {
        fl_strbuf_printf(&out, "%s check passed\n", endpoint);
        respond_text(r, 200, fl_strbuf_str(&out), out.len);
    } else {
        respond_text(r, 200, "ok", 2);
    }
    fl_strbuf_close(&out);
    fl_strbuf_close(&failed);
}
