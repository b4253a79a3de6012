/* client.c - the Kubernetes API client over libcurl (contract in client.h).
 *
 * Every request, watch or not, runs the same way: take a slot (an easy handle and
 * the multi handle that owns its connection) from the pool, set the request's
 * options from scratch, drive the multi handle with curl_multi_poll until the
 * transfer finishes, and give the slot back. Driving a multi handle ourselves,
 * rather than calling curl_easy_perform, is what makes cancellation immediate:
 * fl_client_cancel_fire() calls curl_multi_wakeup() on every multi handle
 * registered with the token, and the transfer loop sees the flag on its next turn.
 *
 * Watch streams arrive as chunked HTTP with one JSON event per line. The write
 * callback appends to a buffer, cuts complete lines off the front, parses each one
 * and calls the user's function before returning to curl, so events are delivered
 * as soon as their line is complete, in order, on the watching thread. Returning
 * 0 from the write callback is how the callback (or an ERROR event) ends a watch.
 *
 * The pool shares curl's DNS cache and TLS sessions between slots (a CURLSH with
 * one mutex per kind of shared data), so a new slot resumes a TLS session rather
 * than doing a full handshake. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/ssl.h>

#include "client/cancel_reg.h"
#include "client/client.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/timefmt.h"

static CURLcode release_idle_buffers(CURL *curl, void *ssl_ctx, void *userptr)
{
    SSL_CTX_set_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

#define MAX_BODY ((size_t)1 << 30)    /* a response larger than this is refused (FL_ETOOBIG) */
#define RETRIES_429 3                  /* TooManyRequests retried this many times */

/* ---------- small helpers ---------- */

/* Percent-encode everything but RFC 3986 unreserved characters. */
static void add_escaped(fl_strbuf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
            ch == '.' || ch == '_' || ch == '~') {
            fl_strbuf_addc(b, (char)ch);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            fl_strbuf_add(b, e, 3);
        }
    }
}

/* Append "?k=v" or "&k=v" (v escaped); skipped when v is NULL or empty. */
static void add_query(fl_strbuf *b, const char *k, const char *v)
{
    if (!v || !*v)
        return;
    fl_strbuf_addc(b, strchr(fl_strbuf_str(b), '?') ? '&' : '?');
    fl_strbuf_adds(b, k);
    fl_strbuf_adds(b, "=");
    add_escaped(b, v);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* ---------- the client and its pool ---------- */

typedef struct slot {
    CURL *easy;
    CURLM *multi;   /* owns the slot's connection cache */
    struct slot *next;
} slot;

struct fl_client {
    fl_client_local local;  /* local.serve set: the in-process transport */
    /* The URLs of one control plane's replicas (or the one server), tried in turn when a
     * connection cannot be made; cur is the one that last answered. With one URL, cur
     * stays 0 and nothing rotates. */
    char **servers;
    int nservers;
    atomic_int cur;
    char *ca_pem, *cert_pem, *key_pem;
    char *auth_header;   /* "Authorization: Bearer ..." or NULL */
    char *username, *password;
    bool insecure;
    char *user_agent;
    char *noproxy;
    int timeout_ms, connect_timeout_ms, max_idle;
    const char *const *answer_skip; /* paths left out of an answer's object, or NULL */
    fl_client_observer observer;    /* options.observer (its ctx owned) */

    pthread_mutex_t pool_mu;
    slot *idle;
    int nidle;

    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];

    pthread_mutex_t disc_mu;
    json_t *disc;        /* api_version -> compact string of its resources (disc_compact) */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "flotilla: curl_global_init failed\n");
        abort();
    }
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    fl_client *c = u;
    pthread_mutex_lock(&c->share_mu[d % CURL_LOCK_DATA_LAST]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    fl_client *c = u;
    pthread_mutex_unlock(&c->share_mu[d % CURL_LOCK_DATA_LAST]);
}

static char *dup_or_null(const char *s)
{
    return s ? fl_strdup(s) : NULL;
}

/* What every client has, whatever its transport: options with their defaults, locks, the
 * discovery cache. */
static fl_client *client_alloc(const char *const *servers, int nservers, const fl_client_options *opts)
{
    fl_client_options o = opts ? *opts : (fl_client_options){0};
    fl_client *c = fl_calloc(1, sizeof *c);
    c->servers = fl_calloc((size_t)nservers, sizeof *c->servers);
    for (int i = 0; i < nservers; i++)
        c->servers[i] = fl_strdup(servers[i]);
    c->nservers = nservers;
    c->user_agent = fl_strdup(o.user_agent ? o.user_agent : "flotilla");
    c->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 30000;
    c->connect_timeout_ms = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 5000;
    c->max_idle = o.max_idle > 0 ? o.max_idle : 16;
    static const char *const no_managed_fields[] = {"metadata.managedFields", NULL};
    c->answer_skip = o.answers_without_managed_fields ? no_managed_fields : NULL;
    c->observer = o.observer;
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_mutex_init(&c->disc_mu, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_mu[i], NULL);
    c->disc = json_object();
    return c;
}

int fl_client_new(const fl_kubeconfig *kc, const fl_client_options *opts, fl_client **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    /* the replicas' URLs given instead of the kubeconfig's server */
    const char *const *listed = opts && opts->servers && opts->servers[0] ? opts->servers : NULL;
    int nlisted = 0;
    bool listed_empty = false;
    for (; listed && listed[nlisted]; nlisted++)
        listed_empty |= !*listed[nlisted];
    bool has_server = listed || (kc && kc->server && *kc->server);
    const char *bad = !kc || !has_server ? "client: the kubeconfig names no server"
                      : listed_empty ? "client: an empty server URL in the list of servers"
                      : kc->token && strpbrk(kc->token, "\r\n") ? "the user's token contains a line break"
                                                                  : NULL; /* it goes into a header line */
    if (bad) {
        if (err)
            *err = kc && has_server ? fl_asprintf("%s: %s", kc->origin ? kc->origin : "kubeconfig", bad)
                                    : fl_strdup(bad);
        if (opts && opts->observer.free) /* the client owns it, and there is none */
            opts->observer.free(opts->observer.ctx);
        return FL_EINVAL;
    }
    pthread_once(&curl_once, curl_start);
    const char *own[] = {kc->server};
    fl_client *c = listed ? client_alloc(listed, nlisted, opts) : client_alloc(own, 1, opts);
    c->ca_pem = dup_or_null(kc->ca_pem);
    c->cert_pem = dup_or_null(kc->client_cert_pem);
    c->key_pem = dup_or_null(kc->client_key_pem);
    c->auth_header = kc->token ? fl_asprintf("Authorization: Bearer %s", kc->token) : NULL;
    c->username = dup_or_null(kc->username);
    c->password = dup_or_null(kc->password);
    c->insecure = kc->insecure;
    if (kc->tls_server_name)
        fl_log(FL_LOG_WARN, "client", "%s: tls-server-name is not supported; verifying the server URL's host",
               kc->origin ? kc->origin : "kubeconfig");

    /* Like Go's ProxyFromEnvironment, never send loopback traffic through a proxy. */
    const char *np = getenv("NO_PROXY");
    if (!np || !*np)
        np = getenv("no_proxy");
    if (np && !strcmp(np, "*"))
        c->noproxy = fl_strdup("*");
    else if (np && *np)
        c->noproxy = fl_asprintf("%s,localhost,127.0.0.1,::1", np);
    else
        c->noproxy = fl_strdup("localhost,127.0.0.1,::1");

    c->share = curl_share_init();
    if (c->share) {
        curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
    *out = c;
    return 0;
}

fl_client *fl_client_new_local(const fl_client_local *srv, const fl_client_options *opts)
{
    static const char *const local_url[] = {"local"};
    fl_client *c = client_alloc(local_url, 1, opts);
    c->local = *srv;
    return c;
}

static void slot_destroy(slot *s)
{
    curl_easy_cleanup(s->easy);
    curl_multi_cleanup(s->multi);
    free(s);
}

void fl_client_free(fl_client *c)
{
    if (!c)
        return;
    while (c->idle) {
        slot *s = c->idle;
        c->idle = s->next;
        slot_destroy(s);
    }
    if (c->share)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_mu[i]);
    pthread_mutex_destroy(&c->pool_mu);
    pthread_mutex_destroy(&c->disc_mu);
    json_decref(c->disc);
    if (c->observer.free)
        c->observer.free(c->observer.ctx);
    if (c->auth_header)
        explicit_bzero(c->auth_header, strlen(c->auth_header));
    if (c->key_pem)
        explicit_bzero(c->key_pem, strlen(c->key_pem));
    if (c->password)
        explicit_bzero(c->password, strlen(c->password));
    for (int i = 0; i < c->nservers; i++)
        free(c->servers[i]);
    free(c->servers);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->auth_header);
    free(c->username);
    free(c->password);
    free(c->user_agent);
    free(c->noproxy);
    free(c);
}

const char *fl_client_server(const fl_client *c)
{
    return c->servers[atomic_load_explicit(&((fl_client *)c)->cur, memory_order_relaxed)];
}

bool fl_client_in_process(const fl_client *c)
{
    return c->local.serve != NULL;
}

static slot *slot_get(fl_client *c)
{
    pthread_mutex_lock(&c->pool_mu);
    slot *s = c->idle;
    if (s) {
        c->idle = s->next;
        c->nidle--;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (s)
        return s;
    s = fl_calloc(1, sizeof *s);
    s->easy = curl_easy_init();
    s->multi = curl_multi_init();
    if (!s->easy || !s->multi) { /* only fails without memory: the OOM policy is to abort */
        fprintf(stderr, "flotilla: out of memory creating a curl handle\n");
        abort();
    }
    return s;
}

static void slot_put(fl_client *c, slot *s)
{
    pthread_mutex_lock(&c->pool_mu);
    if (c->nidle < c->max_idle) {
        s->next = c->idle;
        c->idle = s;
        c->nidle++;
        s = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (s)
        slot_destroy(s);
}

/* ---------- one transfer ---------- */

typedef struct xfer {
    slot *s;
    fl_client *c;
    int at, first;         /* the replica asked (c->servers[at]), and the one asked first */
    fl_strbuf body;        /* response bytes (non-watch, or a watch's error body / partial line) */
    long code;
    bool toobig;
    /* watch mode */
    bool watch;
    size_t scan;        /* bytes of body already consumed as lines */
    fl_watch_fn fn;
    void *ctx;
    bool stopped;       /* fn or an ERROR event ended the stream */
    int watch_rc;
    fl_client_error *err;
    json_t *obj;        /* in process: the answer as an object (owned), instead of body */
    const char *const *skip; /* over HTTP: paths left out when decoding (fl_json_load_skipping) */
    struct page_texts *texts; /* over HTTP, a list whose items are kept as text (page_texts) */
} xfer;

/* A list page's items as texts (fl_list_opts.page_texts): each one's metadata, and its text. */
typedef struct page_texts {
    const char *const *skip; /* within an item */
    json_t *metas;
    fl_blob **texts;
    size_t n, cap;
    bool taken;
} page_texts;

/* What a cache of texts reads of each item's metadata: decoding all of it (labels, our
 * annotations) cost as much as a small object's whole text. */
static const char *const TEXT_META[] = {"name", "namespace", "resourceVersion"};

static void page_text_in(void *ctx, const char *text, size_t n, size_t meta_at, size_t meta_n)
{
    page_texts *pt = ctx;
    json_t *item = json_object(), *md = json_object();
    json_object_set_new(item, "metadata", md);
    for (size_t i = 0; meta_n && i < sizeof TEXT_META / sizeof *TEXT_META; i++) {
        size_t at, len;
        if (fl_json_find(text + meta_at, meta_n, TEXT_META[i], &at, &len) == 0)
            json_object_set_new(md, TEXT_META[i], fl_json_load(text + meta_at + at, len));
    }
    json_array_append_new(pt->metas, item);
    if (pt->n == pt->cap) {
        pt->cap = pt->cap ? pt->cap * 2 : 512;
        pt->texts = fl_realloc(pt->texts, pt->cap * sizeof *pt->texts);
    }
    pt->texts[pt->n++] = fl_blob_new(text, n);
}

static void texts_free(fl_blob **texts, size_t n)
{
    for (size_t i = 0; texts && i < n; i++)
        fl_blob_unref(texts[i]);
    free(texts);
}

static void page_texts_clear(page_texts *pt)
{
    json_array_clear(pt->metas);
    texts_free(pt->texts, pt->n);
    pt->texts = NULL;
    pt->n = pt->cap = 0;
}

static void fill_err(fl_client_error *err, long http, const char *reason, const char *field, const char *msg)
{
    if (!err)
        return;
    err->http = (int)http;
    copy_str(err->reason, sizeof err->reason, reason);
    copy_str(err->field, sizeof err->field, field);
    copy_str(err->message, sizeof err->message, msg);
}

static int map_http(long code, const char *reason)
{
    if (code == 404)
        return FL_ENOTFOUND;
    if (code == 409)
        return reason && !strcmp(reason, "AlreadyExists") ? FL_EEXIST : FL_ECONFLICT;
    if (code == 410)
        return FL_EEXPIRED;
    if (code == 405 || code == 415)
        return FL_EUNSUPPORTED;
    if (code == 413)
        return FL_ETOOBIG;
    if (code == 429 || code >= 500)
        return FL_EIO;
    return FL_EINVAL;
}

/* Map a Status object (or any failed response) to a code and err. */
static int status_error(long code, const json_t *st, const char *raw, size_t rawlen, fl_client_error *err)
{
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *msg = json_string_value(json_object_get(st, "message"));
    json_t *causes = json_object_get(json_object_get(st, "details"), "causes");
    const char *field = json_string_value(json_object_get(json_array_get(causes, 0), "field"));
    char fallback[256];
    if (!msg) {
        if (raw && rawlen)
            snprintf(fallback, sizeof fallback, "HTTP %ld: %.*s", code, (int)(rawlen > 200 ? 200 : rawlen), raw);
        else
            snprintf(fallback, sizeof fallback, "HTTP %ld", code);
        msg = fallback;
    }
    fill_err(err, code, reason, field, msg);
    return map_http(code, reason);
}

/* Hand one watch event to the callback (or end the watch on an ERROR event). ev_ok: the
 * event was well-formed JSON. */
static int deliver_event(xfer *x, const char *type, json_t *obj, fl_blob *text, bool ev_ok)
{
    int rc = 0;
    if (!type || !json_is_object(obj)) {
        fill_err(x->err, x->code, "", "", ev_ok ? "watch event without type or object" : "malformed watch event");
        rc = FL_EIO;
    } else if (!strcmp(type, "ERROR")) {
        long code = (long)json_integer_value(json_object_get(obj, "code"));
        rc = status_error(code ? code : 500, obj, NULL, 0, x->err);
        if (rc == 0)
            rc = FL_EIO;
    } else {
        int t = !strcmp(type, "ADDED") ? FL_WATCH_ADDED : !strcmp(type, "MODIFIED") ? FL_WATCH_MODIFIED
              : !strcmp(type, "DELETED") ? FL_WATCH_DELETED : !strcmp(type, "BOOKMARK") ? FL_WATCH_BOOKMARK : 0;
        if (t && !x->fn(x->ctx, t, obj, text)) {
            x->stopped = true;
            x->watch_rc = 0;
        }
    }
    if (rc) {
        x->stopped = true;
        x->watch_rc = rc;
    }
    return rc;
}

static int deliver_line(xfer *x, const char *line, size_t n)
{
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
        n--;
    if (!n)
        return 0;
    json_t *ev = x->skip ? fl_json_load_skipping(line, n, x->skip) : fl_json_load(line, n);
    int rc = deliver_event(x, json_string_value(json_object_get(ev, "type")), json_object_get(ev, "object"), NULL,
                           ev != NULL);
    json_decref(ev);
    return rc;
}

/* Append n response bytes; for a watch answered 200, deliver its complete lines. Returns
 * false when the transfer must end (too big, or the watch was stopped). */
static bool feed(xfer *x, const char *p, size_t n)
{
    if (x->body.len + n > MAX_BODY) {
        x->toobig = true;
        return false;
    }
    fl_strbuf_add(&x->body, p, n);
    if (!x->watch || x->code != 200)
        return true;
    /* cut complete lines off the front and deliver them */
    for (;;) {
        char *start = x->body.p + x->scan;
        char *nl = memchr(start, '\n', x->body.len - x->scan);
        if (!nl)
            break;
        deliver_line(x, start, (size_t)(nl - start));
        x->scan = (size_t)(nl - x->body.p) + 1;
        if (x->stopped)
            return false;
    }
    if (x->scan > 0 && x->scan * 2 >= x->body.len) {
        memmove(x->body.p, x->body.p + x->scan, x->body.len - x->scan);
        fl_strbuf_truncate(&x->body, x->body.len - x->scan);
        x->scan = 0;
    }
    return true;
}

/* The replica at x->at answered though another was asked first: stay with it, from this
 * request on (a watch settles at its first byte, not when it ends). */
static void settle(xfer *x)
{
    int was = x->first; /* unless another thread has moved on already */
    if (x->at != x->first && atomic_compare_exchange_strong(&x->c->cur, &was, x->at))
        fl_log(FL_LOG_INFO, "client", "%s cannot be reached; now talking to %s", x->c->servers[x->first],
               x->c->servers[x->at]);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (!x->code) {
        curl_easy_getinfo(x->s->easy, CURLINFO_RESPONSE_CODE, &x->code);
        settle(x);
    }
    return feed(x, p, n) ? n : 0;
}

/* Drive the slot's multi handle until the transfer ends or cancel fires. */
static CURLcode run(xfer *x, fl_client_cancel *cancel, bool *cancelled)
{
    CURLM *m = x->s->multi;
    *cancelled = false;
    cancel_reg reg = {.multi = m};
    if (cancel)
        fl_client_cancel_register(cancel, &reg);
    curl_multi_add_handle(m, x->s->easy);
    CURLcode res = CURLE_OK;
    for (;;) {
        if (fl_client_cancel_fired(cancel)) {
            *cancelled = true;
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        int running = 0;
        CURLMcode mc = curl_multi_perform(m, &running);
        bool done = false;
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) {
                res = msg->data.result;
                done = true;
            }
        if (done)
            break;
        int ready = 0;
        if (mc == CURLM_OK)
            mc = curl_multi_poll(m, NULL, 0, FL_NODE_IDLE_MS, &ready);
        if (mc == CURLM_OK && !ready)
            fl_node_cache_drain(); /* a second without a byte: the watch is idle */
        if (mc != CURLM_OK) {
            res = CURLE_RECV_ERROR;
            break;
        }
    }
    curl_multi_remove_handle(m, x->s->easy);
    if (cancel)
        fl_client_cancel_unregister(cancel, &reg);
    return res;
}

typedef struct req {
    const char *method;
    const char *path;
    const char *content_type;
    const char *accept;     /* NULL: application/json */
    const char *body;
    size_t body_len;
    const json_t *body_obj; /* instead of body, for the in-process transport (borrowed) */
    bool body_given;    /* body_obj handed over: the server may keep and change it */
    bool want_obj;      /* a watch, in process: take its events as objects */
    bool watch;
    int timeout_ms;     /* 0 = none */
    const fl_client_local_list *list; /* in process, a list: how its items may come */
} req;

static void setup(fl_client *c, const char *server, CURL *e, const req *r, struct curl_slist **hdrs, xfer *x)
{
    curl_easy_reset(e);
    char *url = fl_asprintf("%s%s", server, r->path);
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url); /* curl copies string options */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_NOPROXY, c->noproxy);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    /* a controller keeps an idle connection to every member: let OpenSSL free a
     * connection's 34 KiB of record buffers while it is idle */
    curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, release_idle_buffers);
    if (c->share)
        curl_easy_setopt(e, CURLOPT_SHARE, c->share);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca_pem) {
        struct curl_blob b = {.data = c->ca_pem, .len = strlen(c->ca_pem), .flags = CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    }
    if (c->cert_pem) {
        struct curl_blob cb = {.data = c->cert_pem, .len = strlen(c->cert_pem), .flags = CURL_BLOB_NOCOPY};
        struct curl_blob kb = {.data = c->key_pem, .len = strlen(c->key_pem), .flags = CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->username) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, c->username);
        curl_easy_setopt(e, CURLOPT_PASSWORD, c->password ? c->password : "");
    }
    struct curl_slist *h = NULL;
    if (r->accept) { /* discovery's aggregated form; every other request takes JSON */
        char *accept = fl_cat("Accept: ", r->accept, NULL);
        h = curl_slist_append(h, accept);
        free(accept);
    } else {
        h = curl_slist_append(h, "Accept: application/json");
    }
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip before bodies */
    if (c->auth_header)
        h = curl_slist_append(h, c->auth_header);
    if (r->content_type) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", r->content_type);
        h = curl_slist_append(h, ct);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    *hdrs = h;
    if (!strcmp(r->method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        if (r->body) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        }
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    }
}

/* Run a request; *out gets the parsed body on success. Watch transfers go through the
 * same path with x prepared by the caller. */
/* The in-process transport: one request handed to c->local; a watch's stream is pulled
 * until it ends, cancel fires, or the callback stops it. Sets x->code and fills x->body
 * (or delivers the watch's lines) as the curl path does. */
static CURLcode run_local(fl_client *c, const req *r, bool want_obj, xfer *x, fl_client_cancel *cancel,
                          bool *cancelled)
{
    *cancelled = false;
    if (fl_client_cancel_fired(cancel)) {
        *cancelled = true;
        return CURLE_ABORTED_BY_CALLBACK;
    }
    fl_client_local_resp resp = {0};
    c->local.serve(c->local.ctx, r->method, r->path, r->content_type, r->accept, c->user_agent, r->body,
                   r->body_len, r->body_obj, r->body_given, want_obj, r->list, &resp);
    x->code = resp.code;
    x->obj = resp.obj;
    if (resp.body) {
        feed(x, resp.body, resp.len);
        free(resp.body);
    }
    if (!resp.stream)
        return CURLE_OK;
    cancel_reg reg = {.wake = c->local.stream_cancel, .arg = resp.stream};
    if (cancel)
        fl_client_cancel_register(cancel, &reg);
    bool objects = want_obj && c->local.stream_next && x->code == 200;
    char *buf = objects ? NULL : fl_malloc(16384);
    for (;;) {
        if (fl_client_cancel_fired(cancel)) {
            *cancelled = true;
            break;
        }
        if (objects) {
            /* events as objects: no encoding and decoding in between */
            const char *type = NULL;
            json_t *obj = NULL;
            fl_blob *text = NULL;
            if (!c->local.stream_next(resp.stream, &type, &obj, &text)) {
                *cancelled = fl_client_cancel_fired(cancel);
                break;
            }
            deliver_event(x, type, obj, text, true);
            json_decref(obj);
            fl_blob_unref(text);
            if (x->stopped)
                break;
            continue;
        }
        size_t n = c->local.stream_read(resp.stream, buf, 16384);
        if (n == 0) {
            *cancelled = fl_client_cancel_fired(cancel);
            break;
        }
        if (!feed(x, buf, n))
            break;
    }
    free(buf);
    if (cancel)
        fl_client_cancel_unregister(cancel, &reg);
    c->local.stream_free(resp.stream);
    return *cancelled ? CURLE_ABORTED_BY_CALLBACK : CURLE_OK;
}

/* Whether a transfer that ended with res never reached the server: no connection could be
 * made (refused, unreachable, no such host, or the connect timed out before a byte of the
 * request went out). Only such a request may be tried on another replica: nothing was sent. */
static bool never_sent(CURL *e, CURLcode res, long code)
{
    if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST)
        return true;
    long sent = 0;
    return res == CURLE_OPERATION_TIMEDOUT && !code && curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK &&
           sent == 0;
}

static int perform(fl_client *c, const req *r, fl_client_cancel *cancel, xfer *x, json_t **out,
                   fl_client_error *err)
{
    if (out)
        *out = NULL;
    if (err)
        memset(err, 0, sizeof *err);
    int rc = 0;
    bool transport = false;
    int64_t started_ns = c->observer.fn ? fl_time_mono_ns() : 0;
    /* the replica to ask first, and how many are left to try when it cannot be reached */
    int at = c->nservers > 1 ? atomic_load_explicit(&c->cur, memory_order_relaxed) : 0, first = at;
    int others = c->nservers - 1;
    for (int attempt = 0;; attempt++) {
        x->err = err;
        bool cancelled = false;
        CURLcode res;
        curl_off_t retry_after = 0;
        if (c->local.serve) {
            /* the answer as an object, or (nobody reads it) no body at all */
            res = run_local(c, r, r->watch ? r->want_obj : out != NULL, x, cancel, &cancelled);
        } else {
            x->s = slot_get(c);
            x->c = c;
            x->at = at;
            x->first = first;
            struct curl_slist *hdrs = NULL;
            setup(c, c->servers[at], x->s->easy, r, &hdrs, x);
            res = run(x, cancel, &cancelled);
            if (!x->code)
                curl_easy_getinfo(x->s->easy, CURLINFO_RESPONSE_CODE, &x->code);
            curl_easy_getinfo(x->s->easy, CURLINFO_RETRY_AFTER, &retry_after);
            bool unreached = !cancelled && res != CURLE_OK && never_sent(x->s->easy, res, x->code);
            curl_slist_free_all(hdrs);
            slot_put(c, x->s);
            x->s = NULL;
            if (unreached && others > 0) {
                /* this replica is gone (or not yet up): the same request to the next one */
                fl_log(FL_LOG_DEBUG, "client", "%s: %s; trying %s", c->servers[at], curl_easy_strerror(res),
                       c->servers[(at + 1) % c->nservers]);
                others--;
                at = (at + 1) % c->nservers;
                fl_strbuf_truncate(&x->body, 0);
                x->code = 0;
                attempt--; /* not a 429 retry */
                continue;
            }
            if (!unreached)
                settle(x); /* an answer without a body, or a transfer that broke after connecting */
        }

        if (cancelled) {
            fill_err(err, x->code, "", "", "cancelled");
            rc = FL_ECLOSED;
        } else if (x->stopped) {
            rc = x->watch_rc; /* the watch callback or an ERROR event ended the stream */
        } else if (x->toobig) {
            fill_err(err, x->code, "", "", "response larger than 1 GiB");
            rc = FL_ETOOBIG;
        } else if (res != CURLE_OK && (x->code < 300 || x->watch)) {
            /* no (complete) answer: the connection failed or timed out */
            char msg[512];
            snprintf(msg, sizeof msg, "%s %s%s: %s", r->method, c->servers[at], r->path, curl_easy_strerror(res));
            fill_err(err, x->code, "", "", msg);
            if (err)
                err->transport = true;
            rc = res == CURLE_OPERATION_TIMEDOUT ? FL_ETIMEDOUT : FL_EIO;
            transport = true;
        } else if (x->code >= 200 && x->code < 300) {
            rc = 0;
            if (out && x->obj) {
                *out = x->obj;
                x->obj = NULL;
            } else if (out && x->body.len && !x->watch) {
                char *je = NULL;
                *out = NULL;
                if (x->texts) {
                    *out = fl_json_load_items(x->body.p, x->body.len, x->texts->skip, page_text_in, x->texts);
                    x->texts->taken = *out != NULL;
                    if (!*out) /* not read that way: decoded below, as any answer */
                        page_texts_clear(x->texts);
                }
                if (*out) {
                    /* its items as texts */
                } else if ((x->skip || c->answer_skip) &&
                           (*out = fl_json_load_skipping(x->body.p, x->body.len, x->skip ? x->skip : c->answer_skip))) {
                    /* decoded without the parts the caller does not want */
                } else if (fl_json_loadb(x->body.p, x->body.len, 0, out, &je)) {
                    char msg[512];
                    snprintf(msg, sizeof msg, "%s %s: malformed JSON in the answer: %s", r->method, r->path,
                             je ? je : "invalid");
                    fill_err(err, x->code, "", "", msg);
                    free(je);
                    *out = NULL;
                    rc = FL_EIO;
                }
            }
        } else {
            json_t *st = x->body.len ? fl_json_load(x->body.p, x->body.len) : NULL;
            rc = status_error(x->code, st, x->body.p, x->body.len, err);
            json_decref(st);
            if (x->code == 429 && attempt < RETRIES_429) {
                /* the server had no room: wait as it asks, then try again */
                int ms = (int)(retry_after > 0 ? (retry_after > 10 ? 10 : retry_after) * 1000 : 1000);
                fl_log(FL_LOG_DEBUG, "client", "%s %s: 429, retrying in %d ms", r->method, r->path, ms);
                bool stop = false;
                if (cancel)
                    stop = fl_client_cancel_sleep(cancel, ms);
                else
                    nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
                if (!stop) {
                    json_decref(x->obj);
                    x->obj = NULL;
                    fl_strbuf_truncate(&x->body, 0);
                    x->code = 0;
                    x->scan = 0;
                    continue;
                }
            }
        }
        break;
    }
    if (c->observer.fn && rc != FL_ECLOSED)
        c->observer.fn(c->observer.ctx, r->watch, rc, x->code, transport,
                       (double)(fl_time_mono_ns() - started_ns) / 1e9);
    fl_strbuf_close(&x->body);
    json_decref(x->obj);
    x->obj = NULL;
    return rc;
}

int fl_client_request(fl_client *c, const char *method, const char *path, const char *content_type,
                      const char *body, size_t body_len, fl_client_cancel *cancel, json_t **out,
                      fl_client_error *err)
{
    req r = {.method = method, .path = path, .content_type = body ? content_type : NULL, .body = body,
             .body_len = body_len, .timeout_ms = c->timeout_ms};
    xfer x = {0};
    return perform(c, &r, cancel, &x, out, err);
}

int fl_client_get_as(fl_client *c, const char *path, const char *accept, fl_client_cancel *cancel, json_t **out,
                     fl_client_error *err)
{
    req r = {.method = "GET", .path = path, .accept = accept, .timeout_ms = c->timeout_ms};
    xfer x = {0};
    return perform(c, &r, cancel, &x, out, err);
}

/* ---------- paths ---------- */

/* fields (paths within an object, NULL-terminated) under prefix, the place of each object in
 * an answer ("items.[]." in a list, "object." in a watch event); NULL when there are none. */
static char **skip_paths(const char *prefix, const char *const *fields)
{
    size_t n = 0;
    while (fields && fields[n])
        n++;
    if (!n)
        return NULL;
    char **out = fl_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        out[i] = fl_asprintf("%s%s", prefix, fields[i]);
    return out;
}

static void skip_paths_free(char **paths)
{
    for (size_t i = 0; paths && paths[i]; i++)
        free(paths[i]);
    free(paths);
}

static void add_path(fl_strbuf *b, const fl_gvr *r, const char *ns, const char *name, const char *sub)
{
    fl_strbuf_adds(b, strchr(r->api_version, '/') ? "/apis/" : "/api/");
    fl_strbuf_adds(b, r->api_version);
    if (ns && *ns) {
        fl_strbuf_adds(b, "/namespaces/");
        add_escaped(b, ns);
    }
    fl_strbuf_adds(b, "/");
    fl_strbuf_adds(b, r->resource);
    if (name) {
        fl_strbuf_adds(b, "/");
        add_escaped(b, name);
        if (sub && *sub) {
            fl_strbuf_adds(b, "/");
            fl_strbuf_adds(b, sub);
        }
    }
}

char *fl_client_path(const fl_gvr *r, const char *ns, const char *name, const char *sub)
{
    fl_strbuf b = FL_STRBUF_INIT;
    add_path(&b, r, ns, name, sub);
    return fl_strbuf_take(&b);
}

json_t *fl_client_decode_text(fl_client *c, fl_blob *text)
{
    return fl_client_decode_text_skipping(c, text, NULL);
}

json_t *fl_client_decode_text_skipping(fl_client *c, fl_blob *text, const char *const *skip)
{
    if (c->local.decode)
        return c->local.decode(c->local.ctx, text, skip && *skip ? skip : NULL);
    return skip && *skip ? fl_json_load_skipping(text->data, text->len, skip) : fl_json_load(text->data, text->len);
}

int fl_client_stored_at(fl_client *c, const char *api_version, const char *resource, const char *key,
                        const char *rv, fl_blob **out)
{
    *out = NULL;
    char *end = NULL;
    long long rev = rv ? strtoll(rv, &end, 10) : 0;
    if (!c->local.stored_at || !api_version || !resource || !key || rev <= 0 || *end)
        return FL_EINVAL;
    const char *slash = strchr(api_version, '/');
    char group[256] = "";
    if (slash) {
        size_t n = (size_t)(slash - api_version);
        if (n >= sizeof group)
            return FL_EINVAL;
        memcpy(group, api_version, n);
        group[n] = 0;
    }
    return c->local.stored_at(c->local.ctx, group, resource, key, (int64_t)rev, out);
}

bool fl_client_has_stored_at(const fl_client *c)
{
    return c->local.stored_at != NULL;
}

const char *fl_client_object_rv(const json_t *obj)
{
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}

static int bad_arg(fl_client_error *err, const char *msg)
{
    if (err) {
        memset(err, 0, sizeof *err);
        copy_str(err->message, sizeof err->message, msg);
    }
    return FL_EINVAL;
}

/* ---------- verbs ---------- */

int fl_client_get(fl_client *c, const fl_gvr *r, const char *ns, const char *name, json_t **out,
                  fl_client_error *err)
{
    if (!name || !*name) {
        *out = NULL;
        return bad_arg(err, "get: a name is required");
    }
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, name, NULL);
    int rc = fl_client_request(c, "GET", p.p, NULL, NULL, 0, NULL, out, err);
    fl_strbuf_close(&p);
    return rc;
}

void fl_list_result_close(fl_list_result *l)
{
    if (!l)
        return;
    texts_free(l->texts, json_array_size(l->items));
    json_decref(l->items);
    free(l->continue_token);
    memset(l, 0, sizeof *l);
}

static void local_items(void *ctx, json_t *items, fl_blob *const *texts)
{
    const fl_list_opts *o = ctx;
    o->on_page(o->page_ctx, items, texts);
}

static int list_page(fl_client *c, const fl_gvr *r, const char *ns, const fl_list_opts *o, const char *cont,
                     fl_client_cancel *cancel, fl_list_result *out, fl_client_error *err)
{
    memset(out, 0, sizeof *out);
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, NULL, NULL);
    char lim[32] = "";
    if (o && o->limit > 0)
        snprintf(lim, sizeof lim, "%lld", (long long)o->limit);
    if (o) {
        add_query(&p, "labelSelector", o->label_selector);
        add_query(&p, "fieldSelector", o->field_selector);
        add_query(&p, "limit", lim);
        if (!cont) /* a continue token carries its own snapshot */
            add_query(&p, "resourceVersion", o->resource_version);
    }
    add_query(&p, "continue", cont);
    json_t *body = NULL;
    char **skip = skip_paths("items.[].", o ? o->skip_fields : NULL);
    /* in process, the pages of a caller that takes them come as the server lists */
    fl_client_local_list ll = {.item_skip = o ? o->skip_fields : NULL,
                               .bare_upto = o ? o->bare_upto : 0};
    if (o && o->on_page && o->take_pages) {
        ll.on_items = local_items;
        ll.items_ctx = (void *)o;
    }
    req rq = {.method = "GET", .path = p.p, .timeout_ms = c->timeout_ms, .list = &ll};
    xfer x = {.skip = (const char *const *)skip};
    page_texts pt = {.skip = o ? o->skip_fields : NULL};
    if (o && o->page_texts && o->on_page && o->take_pages && !c->local.serve) {
        pt.metas = json_array();
        x.texts = &pt;
    }
    int rc = perform(c, &rq, cancel, &x, &body, err);
    skip_paths_free(skip);
    fl_strbuf_close(&p);
    if (rc || !pt.taken) {
        page_texts_clear(&pt);
        json_decref(pt.metas);
    } else { /* the items are their texts, with their metadata */
        json_object_set_new(body, "items", pt.metas);
    }
    if (rc)
        return rc;
    json_t *items = json_object_get(body, "items");
    json_t *meta = json_object_get(body, "metadata");
    if (!json_is_object(body) || (items && !json_is_array(items) && !json_is_null(items))) {
        json_decref(body);
        fill_err(err, 200, "", "", "list response is not a list");
        return FL_EIO;
    }
    out->items = json_is_array(items) ? json_incref(items) : json_array();
    out->texts = pt.taken ? pt.texts : NULL;
    copy_str(out->resource_version, sizeof out->resource_version,
             json_string_value(json_object_get(meta, "resourceVersion")));
    const char *next = json_string_value(json_object_get(meta, "continue"));
    out->continue_token = next && *next ? fl_strdup(next) : NULL;
    json_decref(body);
    return 0;
}

int fl_client_list(fl_client *c, const fl_gvr *r, const char *ns, const fl_list_opts *opts, fl_list_result *out,
                   fl_client_error *err)
{
    return list_page(c, r, ns, opts, opts ? opts->continue_token : NULL, NULL, out, err);
}

/* A page to opts->on_page, and out of the result when the caller takes pages. */
static void hand_page(const fl_list_opts *o, fl_list_result *l)
{
    if (!o->on_page)
        return;
    o->on_page(o->page_ctx, l->items, l->texts);
    if (o->take_pages) {
        texts_free(l->texts, json_array_size(l->items));
        l->texts = NULL;
        json_array_clear(l->items);
    }
}

int fl_client_list_all(fl_client *c, const fl_gvr *r, const char *ns, const fl_list_opts *opts,
                       fl_client_cancel *cancel, fl_list_result *out, fl_client_error *err)
{
    fl_list_opts o = opts ? *opts : (fl_list_opts){0};
    o.continue_token = NULL;
    /* in process, pages bound nothing (there is no response to hold): one list of the
     * current state, from the store's memory, instead of pages read back from its log at
     * the first page's revision */
    if (c->local.serve)
        o.limit = 0;
    else if (o.limit <= 0)
        o.limit = 500;
    memset(out, 0, sizeof *out);
    fl_list_result page;
    int rc = list_page(c, r, ns, &o, NULL, cancel, &page, err);
    if (rc)
        return rc;
    *out = page; /* the first page fixes the snapshot's resourceVersion */
    hand_page(&o, out);
    while (out->continue_token) {
        char *cont = out->continue_token;
        out->continue_token = NULL;
        rc = list_page(c, r, ns, &o, cont, cancel, &page, err);
        free(cont);
        if (rc == FL_EEXPIRED) {
            /* the snapshot was compacted under us: one unpaged list is consistent */
            fl_log(FL_LOG_DEBUG, "client", "list %s: continue expired, listing without paging", r->resource);
            fl_list_result_close(out);
            o.limit = 0;
            if (o.on_page)
                o.on_page(o.page_ctx, NULL, NULL);
            rc = list_page(c, r, ns, &o, NULL, cancel, out, err);
            if (rc == 0)
                hand_page(&o, out);
            return rc;
        }
        if (rc) {
            fl_list_result_close(out);
            return rc;
        }
        hand_page(&o, &page);
        json_array_extend(out->items, page.items); /* empty when taken */
        out->continue_token = page.continue_token;
        page.continue_token = NULL;
        fl_list_result_close(&page);
    }
    return 0;
}

static void write_query(fl_strbuf *p, const char *field_manager, bool dry_run)
{
    add_query(p, "fieldManager", field_manager);
    if (dry_run)
        add_query(p, "dryRun", "All");
}

/* given: the caller will not look at obj again (fl_client_update_given) */
static int send_obj(fl_client *c, const char *method, const char *path, const json_t *obj, bool given,
                    json_t **out, fl_client_error *err)
{
    if (c->local.serve && json_is_object(obj)) {
        /* in process: the object itself, and the answer as one */
        req r = {.method = method, .path = path, .content_type = "application/json", .body_obj = obj,
                 .body_given = given, .timeout_ms = c->timeout_ms};
        xfer x = {0};
        return perform(c, &r, NULL, &x, out, err);
    }
    if (!obj) {
        if (out)
            *out = NULL;
        return bad_arg(err, "the object cannot be encoded as JSON");
    }
    size_t len = 0;
    char *body = fl_json_dumps(obj, &len);
    int rc = fl_client_request(c, method, path, "application/json", body, len, NULL, out, err);
    free(body);
    return rc;
}

int fl_client_create(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj,
                     const fl_write_opts *opts, json_t **out, fl_client_error *err)
{
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, NULL, NULL);
    if (opts)
        write_query(&p, opts->field_manager, opts->dry_run);
    int rc = send_obj(c, "POST", p.p, obj, false, out, err);
    fl_strbuf_close(&p);
    return rc;
}

static int put_obj(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj, const char *sub, bool given,
                   const fl_write_opts *opts, json_t **out, fl_client_error *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (!name || !*name) {
        if (out)
            *out = NULL;
        return bad_arg(err, "update: metadata.name is required");
    }
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, name, sub);
    if (opts)
        write_query(&p, opts->field_manager, opts->dry_run);
    int rc = send_obj(c, "PUT", p.p, obj, given, out, err);
    fl_strbuf_close(&p);
    return rc;
}

int fl_client_update(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj,
                     const fl_write_opts *opts, json_t **out, fl_client_error *err)
{
    return put_obj(c, r, ns, obj, NULL, false, opts, out, err);
}

int fl_client_update_given(fl_client *c, const fl_gvr *r, const char *ns, json_t *obj,
                           const fl_write_opts *opts, json_t **out, fl_client_error *err)
{
    int rc = put_obj(c, r, ns, obj, NULL, true, opts, out, err);
    json_decref(obj);
    return rc;
}

int fl_client_update_status(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj,
                            const fl_write_opts *opts, json_t **out, fl_client_error *err)
{
    return put_obj(c, r, ns, obj, "status", false, opts, out, err);
}

int fl_client_update_status_given(fl_client *c, const fl_gvr *r, const char *ns, json_t *obj,
                                  const fl_write_opts *opts, json_t **out, fl_client_error *err)
{
    int rc = put_obj(c, r, ns, obj, "status", true, opts, out, err);
    json_decref(obj);
    return rc;
}

int fl_client_patch(fl_client *c, const fl_gvr *r, const char *ns, const char *name, int type,
                    const char *patch, size_t patch_len, const fl_patch_opts *opts, json_t **out,
                    fl_client_error *err)
{
    const char *ct = type == FL_PATCH_MERGE ? "application/merge-patch+json"
                   : type == FL_PATCH_JSON ? "application/json-patch+json"
                   : type == FL_PATCH_STRATEGIC ? "application/strategic-merge-patch+json"
                   : type == FL_PATCH_APPLY ? "application/apply-patch+yaml" : NULL;
    if (out)
        *out = NULL;
    if (!ct)
        return bad_arg(err, "patch: unknown patch type");
    if (!name || !*name)
        return bad_arg(err, "patch: a name is required");
    if (type == FL_PATCH_APPLY && (!opts || !opts->field_manager || !*opts->field_manager))
        return bad_arg(err, "apply: fieldManager is required");
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, name, opts ? opts->subresource : NULL);
    if (opts) {
        write_query(&p, opts->field_manager, opts->dry_run);
        if (opts->force)
            add_query(&p, "force", "true");
    }
    int rc = fl_client_request(c, "PATCH", p.p, ct, patch, patch_len, NULL, out, err);
    fl_strbuf_close(&p);
    return rc;
}

int fl_client_delete(fl_client *c, const fl_gvr *r, const char *ns, const char *name,
                     const fl_delete_opts *opts, json_t **out, fl_client_error *err)
{
    if (out)
        *out = NULL;
    if (!name || !*name)
        return bad_arg(err, "delete: a name is required");
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, name, NULL);
    char *body = NULL;
    if (opts) {
        json_t *d = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
        if (opts->propagation_policy)
            json_object_set_new(d, "propagationPolicy", json_string(opts->propagation_policy));
        if (opts->precondition_uid || opts->precondition_rv) {
            json_t *pre = json_object();
            if (opts->precondition_uid)
                json_object_set_new(pre, "uid", json_string(opts->precondition_uid));
            if (opts->precondition_rv)
                json_object_set_new(pre, "resourceVersion", json_string(opts->precondition_rv));
            json_object_set_new(d, "preconditions", pre);
        }
        if (opts->has_grace_period)
            json_object_set_new(d, "gracePeriodSeconds", json_integer(opts->grace_period_seconds));
        if (opts->dry_run)
            json_object_set_new(d, "dryRun", json_pack("[s]", "All"));
        body = json_dumps(d, JSON_COMPACT);
        json_decref(d);
    }
    json_t *resp = NULL;
    int rc = fl_client_request(c, "DELETE", p.p, "application/json", body, body ? strlen(body) : 0, NULL, &resp, err);
    free(body);
    fl_strbuf_close(&p);
    if (out)
        *out = resp;
    else
        json_decref(resp);
    return rc;
}

/* ---------- watch ---------- */

int fl_client_watch(fl_client *c, const fl_gvr *r, const char *ns, const fl_watch_opts *opts, fl_watch_fn fn,
                    void *ctx, fl_client_cancel *cancel, fl_client_error *err)
{
    fl_watch_opts o = opts ? *opts : (fl_watch_opts){0};
    fl_strbuf p = FL_STRBUF_INIT;
    add_path(&p, r, ns, NULL, NULL);
    add_query(&p, "watch", "true");
    add_query(&p, "resourceVersion", o.resource_version);
    add_query(&p, "labelSelector", o.label_selector);
    add_query(&p, "fieldSelector", o.field_selector);
    if (o.allow_bookmarks)
        add_query(&p, "allowWatchBookmarks", "true");
    if (o.send_initial_events) {
        add_query(&p, "sendInitialEvents", "true");
        add_query(&p, "resourceVersionMatch", "NotOlderThan");
    }
    char to[32] = "";
    if (o.timeout_seconds > 0)
        snprintf(to, sizeof to, "%d", o.timeout_seconds);
    add_query(&p, "timeoutSeconds", to);
    /* the server ends the stream at timeoutSeconds; give it slack before giving up on it */
    req rq = {.method = "GET", .path = p.p, .watch = true, .want_obj = c->local.stream_next != NULL,
              .timeout_ms = o.timeout_seconds > 0 ? (o.timeout_seconds + 30) * 1000 : 0};
    char **skip = skip_paths("object.", o.skip_fields);
    xfer x = {.watch = true, .fn = fn, .ctx = ctx, .skip = (const char *const *)skip};
    int rc = perform(c, &rq, cancel, &x, NULL, err);
    skip_paths_free(skip);
    fl_strbuf_close(&p);
    return rc;
}

/* ---------- discovery ---------- */

/* Fetch /api/V or /apis/G/V into the cache. */
/* A group-version's resources as one string, "\x1fname\x1fKind\x1fN" per resource (N is
 * 1 when namespaced, else 0), subresources left out. A member's client keeps this for
 * every group-version it serves; with thousands of members the full APIResourceLists (verbs,
 * short names, categories) would cost tens of KiB each. */
static void disc_store(fl_client *c, const char *api_version, const json_t *resources)
{
    size_t cap = 64, n = 0;
    char *buf = fl_malloc(cap);
    buf[0] = 0;
    size_t i;
    json_t *e;
    json_array_foreach(resources, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *kind = json_string_value(json_object_get(e, "kind"));
        if (!name || !kind || strchr(name, '/') || strchr(name, '\x1f') || strchr(kind, '\x1f'))
            continue;
        size_t need = strlen(name) + strlen(kind) + 5;
        while (n + need + 1 > cap)
            cap *= 2;
        buf = fl_realloc(buf, cap);
        n += (size_t)snprintf(buf + n, cap - n, "\x1f%s\x1f%s\x1f%c", name, kind,
                              json_is_true(json_object_get(e, "namespaced")) ? '1' : '0');
    }
    pthread_mutex_lock(&c->disc_mu);
    json_object_set_new(c->disc, api_version, json_string(buf));
    pthread_mutex_unlock(&c->disc_mu);
    free(buf);
}

static int disc_fetch(fl_client *c, const char *api_version, fl_client_error *err)
{
    char *path = strchr(api_version, '/') ? fl_asprintf("/apis/%s", api_version) : fl_asprintf("/api/%s", api_version);
    json_t *list = NULL;
    int rc = fl_client_request(c, "GET", path, NULL, NULL, 0, NULL, &list, err);
    free(path);
    if (rc)
        return rc;
    json_t *res = json_object_get(list, "resources");
    if (!json_is_array(res)) {
        json_decref(list);
        fill_err(err, 200, "", "", "discovery answer without resources");
        return FL_EIO;
    }
    disc_store(c, api_version, res);
    json_decref(list);
    return 0;
}

void fl_client_discovery_learn(fl_client *c, const char *api_version, const json_t *resources)
{
    if (json_is_array(resources))
        disc_store(c, api_version, resources);
}

static bool disc_lookup(fl_client *c, const char *api_version, const char *kind, char **resource, bool *namespaced,
                        bool *have_gv)
{
    bool found = false;
    pthread_mutex_lock(&c->disc_mu);
    const char *res = json_string_value(json_object_get(c->disc, api_version));
    *have_gv = res != NULL;
    size_t klen = strlen(kind);
    /* entries are "\x1fname\x1fKind\x1fN": find "\x1fKind\x1f" in the kind position */
    for (const char *p = res; p && *p == '\x1f';) {
        const char *name = p + 1, *k = strchr(name, '\x1f');
        if (!k)
            break;
        const char *ns = strchr(k + 1, '\x1f');
        if (!ns || !ns[1])
            break;
        if ((size_t)(ns - k - 1) == klen && !memcmp(k + 1, kind, klen)) {
            *resource = fl_strndup(name, (size_t)(k - name));
            *namespaced = ns[1] == '1';
            found = true;
            break;
        }
        p = ns + 2;
    }
    pthread_mutex_unlock(&c->disc_mu);
    return found;
}

int fl_client_resolve(fl_client *c, const char *api_version, const char *kind, char **resource, bool *namespaced,
                      fl_client_error *err)
{
    *resource = NULL;
    *namespaced = false;
    if (err)
        memset(err, 0, sizeof *err);
    bool have_gv;
    if (disc_lookup(c, api_version, kind, resource, namespaced, &have_gv))
        return 0;
    /* unknown, or cached before a CRD added it: ask the server once */
    int rc = disc_fetch(c, api_version, err);
    if (rc == FL_ENOTFOUND)
        fill_err(err, 404, "NotFound", "", "the server does not serve this apiVersion");
    if (rc)
        return rc;
    if (disc_lookup(c, api_version, kind, resource, namespaced, &have_gv))
        return 0;
    if (err) {
        memset(err, 0, sizeof *err);
        err->http = 404;
        copy_str(err->reason, sizeof err->reason, "NotFound");
        snprintf(err->message, sizeof err->message, "no kind %s is served in %s", kind, api_version);
    }
    return FL_ENOTFOUND;
}
