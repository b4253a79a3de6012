/* etcd_watch.c - the streaming half of the etcd client: fl_etcd_watch (contract in
 * etcd_client.h).
 *
 * etcd's gateway answers POST /v3/watch with a stream that stays open: one JSON object per
 * watch response, each on its own line ({"result":{...}}, or {"error":{...}} when the stream
 * fails). The first response says the watch was created; a watch whose start revision is
 * compacted is then canceled at once ("canceled":true with "compact_revision"). The bytes
 * come in chunks that need not end at a line, so the write callback keeps the unfinished
 * line and hands each complete one to the caller's function, on the calling thread.
 *
 * A watch has its own curl handle (its connection is busy for as long as the watch lives,
 * so it cannot come from the request pool) and drives it through a multi handle polled at
 * most STOP_POLL_MS at a time: that is what makes a stop take effect while no data flows
 * (curl_easy_perform would call the progress function only about once a second). The stop
 * flag is read both between polls and in the progress function. No overall timeout and no
 * low-speed limit: a quiet watch is a healthy one; only the "created" response must come
 * within the request timeout (else the next member is tried). TCP keep-alive notices a dead peer, and
 * the leader requirement (the Grpc-Metadata-hasleader header every request carries) makes
 * a member that loses its leader end the stream rather than fall silent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "store/etcd_client.h"
#include "store/etcd_client_impl.h"

#define STOP_POLL_MS 100                 /* the longest a stop waits to be seen */
#define MAX_LINE ((size_t)256 << 20)     /* a longer watch response is refused */

typedef struct watch {
    CURL *h;
    const char *ep;
    fl_etcd_watch_fn fn;
    void *ctx;
    const bool *stop;
    fl_etcd_error *e;
    int64_t start_rev;
    long total_ms;       /* a bound on the whole transfer, or 0 (a caller's watch: none) */
    fl_strbuf buf;       /* bytes not yet handed on: an unfinished line, or an error answer */
    size_t scan;         /* buf[0, scan) holds no newline */
    long status;         /* the HTTP status, once the first bytes came */
    bool created;        /* the "created" response came */
    bool delivered;      /* fn has been called */
    bool ended;          /* fn returned false */
    int rc;              /* an error the stream carried (e filled) */
    bool unavailable;    /* ... and it says the member cannot serve now */
} watch;

static bool stopped(const watch *w)
{
    return w->stop && __atomic_load_n(w->stop, __ATOMIC_ACQUIRE);
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    return stopped(ud) ? 1 : 0; /* non-zero aborts the transfer */
}

static void fail(watch *w, int code, const char *fmt, const char *arg)
{
    fl_etcd_set_error(w->e, code, w->ep, fmt, arg);
    w->rc = code;
}

/* An error answer (a stream's line, or the whole body of a non-200 answer): fill e. */
static void take_error(watch *w, const json_t *v)
{
    int g = 0;
    const char *msg = NULL;
    fl_etcd_error_of(v, &g, &msg);
    bool nospace = false;
    fl_etcd_verdict vd = fl_etcd_classify(g, msg, &nospace);
    fail(w, vd.code, "watch: %s", msg ? msg : "(no message)");
    if (w->e)
        w->e->nospace = nospace;
    w->unavailable = vd.unavailable;
}

/* Parse the events of one response into evs (n of them). 0 or FL_EIO. */
static int parse_events(const json_t *arr, fl_etcd_event *evs, size_t n)
{
    memset(evs, 0, n * sizeof *evs);
    for (size_t i = 0; i < n; i++) {
        const json_t *ev = json_array_get(arr, i);
        const char *type = json_string_value(json_object_get(ev, "type"));
        evs[i].type = type && !strcmp(type, "DELETE") ? FL_ETCD_EV_DELETE : FL_ETCD_EV_PUT;
        if (fl_etcd_kv_parse(json_object_get(ev, "kv"), evs[i].type == FL_ETCD_EV_PUT, &evs[i].kv))
            return FL_EIO;
        const json_t *prev = json_object_get(ev, "prev_kv");
        if (prev && fl_etcd_kv_parse(prev, true, &evs[i].prev))
            return FL_EIO;
    }
    return 0;
}

static void free_events(fl_etcd_event *evs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fl_etcd_kv_clear(&evs[i].kv);
        fl_etcd_kv_clear(&evs[i].prev);
    }
    free(evs);
}

/* One watch response (a line of the stream, without its newline). false ends the watch. */
static bool on_line(watch *w, const char *p, size_t n)
{
    json_t *v = fl_json_load(p, n);
    const json_t *r = json_object_get(v, "result");
    if (!json_is_object(v) || (!r && !json_object_get(v, "error"))) {
        char *line = fl_err_one_line(p, n, 100);
        fail(w, FL_EIO, "watch: not a watch response: %s", line);
        free(line);
        json_decref(v);
        return false;
    }
    if (!r || !json_is_object(r)) {
        take_error(w, v);
        json_decref(v);
        return false;
    }
    bool go = true;
    bool created_now = json_is_true(json_object_get(r, "created"));
    w->created |= created_now;
    if (json_is_true(json_object_get(r, "canceled"))) {
        int64_t compact = fl_etcd_i64(r, "compact_revision");
        if (compact > 0) {
            char what[64];
            snprintf(what, sizeof what, "%lld (compacted up to %lld)", (long long)w->start_rev, (long long)compact);
            fail(w, FL_EEXPIRED, "watch from revision %s", what);
            if (w->e)
                w->e->compact_rev = compact;
        } else {
            const char *why = json_string_value(json_object_get(r, "cancel_reason"));
            fail(w, FL_EIO, "the watch was canceled: %s", why && *why ? why : "no reason given");
        }
        go = false;
    } else if (!w->created) {
        fail(w, FL_EIO, "watch: %s", "a response before the one that says the watch was created");
        go = false;
    } else {
        /* The "created" response carries no events and is not a progress notification: with
         * a start revision in the past, the events from it are yet to come. */
        const json_t *arr = json_object_get(r, "events");
        size_t ne = json_array_size(arr);
        if (ne || !created_now) {
            fl_etcd_event *evs = fl_calloc(ne ? ne : 1, sizeof *evs);
            if (parse_events(arr, evs, ne)) {
                fail(w, FL_EIO, "watch: %s", "an event with a key or value that is not base64");
                go = false;
            } else {
                w->delivered = true;
                go = w->fn(w->ctx, evs, ne, fl_etcd_i64(json_object_get(r, "header"), "revision"));
                w->ended = !go;
            }
            free_events(evs, ne);
        }
    }
    json_decref(v);
    return go;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    watch *w = ud;
    size_t n = size * nmemb;
    if (!w->status)
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->status);
    if (w->buf.len + n > MAX_LINE) {
        fail(w, FL_ETOOBIG, "watch: a response over %s", "256 MiB");
        return 0;
    }
    fl_strbuf_add(&w->buf, p, n);
    if (w->status != 200)
        return n; /* an error answer: one JSON object, read whole and decoded at the end */
    size_t start = 0;
    char *nl;
    while ((nl = memchr(w->buf.p + w->scan, '\n', w->buf.len - w->scan))) {
        size_t end = (size_t)(nl - w->buf.p);
        size_t s = start;
        start = w->scan = end + 1;
        while (s < end && (w->buf.p[s] == ' ' || w->buf.p[s] == '\r'))
            s++;
        if (s < end && !on_line(w, w->buf.p + s, end - s))
            return 0;
        if (stopped(w))
            return 0;
    }
    w->scan = w->buf.len;
    memmove(w->buf.p, w->buf.p + start, w->buf.len - start);
    w->buf.len -= start;
    w->scan -= start;
    w->buf.p[w->buf.len] = '\0';
    return n;
}

/* Run one watch transfer against endpoint ep until it ends; the outcome is in w and cc. */
static CURLcode run(fl_etcd *c, watch *w, const fl_strbuf *body, char *cerr)
{
    CURL *h = w->h = curl_easy_init();
    CURLM *m = curl_multi_init();
    if (!h || !m) {
        fprintf(stderr, "flotilla: out of memory creating a curl handle\n");
        abort();
    }
    fl_etcd_setup_handle(c, h, w->ep, "/v3/watch", w->total_ms);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->p);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 0L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_multi_add_handle(m, h);
    CURLcode cc = CURLE_ABORTED_BY_CALLBACK;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int running = 0, left;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        bool done = false;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg == CURLMSG_DONE) {
                cc = msg->data.result;
                done = true;
            }
        }
        if (done || stopped(w) || w->rc)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited = (long)((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (!w->created && waited > c->timeout_ms) {
            /* a member that takes the connection but never answers: try the next */
            char what[64];
            snprintf(what, sizeof what, "no answer within %ld ms", c->timeout_ms);
            fail(w, FL_ETIMEDOUT, "watch: %s", what);
            w->unavailable = true;
            break;
        }
        curl_multi_poll(m, NULL, 0, STOP_POLL_MS, NULL);
    }
    if (!w->status)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &w->status);
    curl_multi_remove_handle(m, h);
    curl_easy_cleanup(h);
    curl_multi_cleanup(m);
    w->h = NULL;
    return cc;
}

/* fl_etcd_watch, with a bound on each transfer when total_ms > 0. */
static int watch_with(fl_etcd *c, const char *key, const char *range_end, int64_t start_rev, bool prev_kv,
                      bool progress_notify, fl_etcd_watch_fn fn, void *ctx, const bool *stop, long total_ms,
                      fl_etcd_error *e)
{
    if (e)
        memset(e, 0, sizeof *e);
    fl_strbuf body = FL_STRBUF_INIT;
    fl_strbuf_adds(&body, "{\"create_request\":{");
    fl_etcd_add_b64(&body, false, "key", key, strlen(key));
    fl_etcd_add_range_end(&body, range_end);
    if (start_rev > 0)
        fl_strbuf_printf(&body, ",\"start_revision\":\"%lld\"", (long long)start_rev);
    if (prev_kv)
        fl_strbuf_adds(&body, ",\"prev_kv\":true");
    if (progress_notify)
        fl_strbuf_adds(&body, ",\"progress_notify\":true");
    fl_strbuf_adds(&body, "}}");

    size_t first = fl_etcd_current(c);
    int rc = FL_ETIMEDOUT;
    for (size_t i = 0; i < c->nep; i++) {
        size_t ep = (first + i) % c->nep;
        watch w = {.ep = c->eps[ep], .fn = fn, .ctx = ctx, .stop = stop, .e = e, .start_rev = start_rev,
                   .total_ms = total_ms};
        char cerr[CURL_ERROR_SIZE] = "";
        CURLcode cc = run(c, &w, &body, cerr);
        bool next = false; /* nothing reached the caller: another member may serve the watch */
        if (!w.rc && !w.ended && !stopped(&w) && w.status == 200 && w.buf.len) {
            size_t s = 0; /* a last response not ended by a newline (a stream's error, say) */
            while (s < w.buf.len && (w.buf.p[s] == ' ' || w.buf.p[s] == '\r'))
                s++;
            if (s < w.buf.len)
                on_line(&w, w.buf.p + s, w.buf.len - s);
        }
        if (w.rc) {
            rc = w.rc;
            next = w.unavailable && !w.delivered;
        } else if (w.ended || stopped(&w)) {
            rc = 0;
        } else if (w.status && w.status != 200) {
            json_t *v = w.buf.p ? fl_json_load(w.buf.p, w.buf.len) : NULL;
            int g;
            const char *msg;
            if (v && fl_etcd_error_of(v, &g, &msg)) {
                take_error(&w, v);
                next = w.unavailable;
            } else {
                char *line = fl_err_one_line(w.buf.p ? w.buf.p : "", w.buf.len, 100);
                char what[160];
                snprintf(what, sizeof what, "HTTP %ld: %s", w.status, line);
                fail(&w, FL_EIO, "watch: not an etcd answer: %s", what);
                free(line);
            }
            json_decref(v);
            rc = w.rc;
        } else if (cc != CURLE_OK && !w.created) {
            fail(&w, FL_ETIMEDOUT, "watch: %s", cerr[0] ? cerr : curl_easy_strerror(cc));
            rc = w.rc;
            next = true;
        } else {
            fail(&w, FL_ETIMEDOUT, "the watch stream broke: %s",
                 cc != CURLE_OK ? (cerr[0] ? cerr : curl_easy_strerror(cc)) : "the member ended it");
            rc = w.rc;
        }
        free(w.buf.p);
        if (!next)
            break;
        fl_etcd_advance(c, ep);
    }
    free(body.p);
    return rc;
}

int fl_etcd_watch(fl_etcd *c, const char *key, const char *range_end, int64_t start_rev, bool prev_kv,
                  bool progress_notify, fl_etcd_watch_fn fn, void *ctx, const bool *stop, fl_etcd_error *e)
{
    return watch_with(c, key, range_end, start_rev, prev_kv, progress_notify, fn, ctx, stop, 0, e);
}

int fl_etcd_watch_for(fl_etcd *c, const char *key, int64_t start_rev, long total_ms, fl_etcd_watch_fn fn, void *ctx,
                      fl_etcd_error *e)
{
    return watch_with(c, key, NULL, start_rev, false, false, fn, ctx, NULL, total_ms > 0 ? total_ms : 1, e);
}

static bool end_at_once(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev)
{
    return false;
}

/* A range only says that its revision is compacted; a watch from revision 1 says to where. */
int64_t fl_etcd_compacted_to(fl_etcd *c, const char *key)
{
    fl_etcd_error e;
    int rc = watch_with(c, key, NULL, 1, false, false, end_at_once, NULL, NULL, c->timeout_ms, &e);
    return rc == FL_EEXPIRED ? e.compact_rev : 0;
}
