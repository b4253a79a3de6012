/* etcd_client.c - the unary half of the etcd client (contract in etcd_client.h): range, txn,
 * compaction, status and leases, each one POST of a JSON body to etcd's gateway and one JSON
 * answer; the streaming watch is in etcd_watch.c.
 *
 * A request borrows a curl easy handle from a small pool; the handle keeps its connections
 * alive, so a steady stream of requests to one member reuses one TCP connection per handle.
 * The endpoint a request starts at is shared by all threads: when a member cannot be reached
 * or says it cannot serve (no leader), the request moves on to the next member, and so do the
 * requests after it. Whether a failed request may be sent again elsewhere depends on what it
 * was: a read always may, a write only when it never left this process (the connection was
 * refused), because a write whose answer was lost may have been applied; the caller then
 * hears FL_ETIMEDOUT, which says "outcome unknown", and re-reads.
 *
 * etcd's JSON is proto3's: members with default values are left out (a missing "count" is 0,
 * a missing "succeeded" is false) and int64 fields are strings, so every read of a field goes
 * through fl_etcd_i64 or json_is_true and treats absence as the zero value. */
#include "store/etcd_client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "store/etcd_client_impl.h"

#define MAX_RESPONSE ((size_t)1 << 30) /* a larger answer is refused (FL_ETOOBIG) */
#define DEFAULT_TIMEOUT_MS 5000
#define MAX_CONNECT_MS 2000             /* a member that does not accept within this is down */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static signed char b64_value[256]; /* base64 digit -> 0..63, anything else -1 */

static void curl_start(void)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset(b64_value, -1, sizeof b64_value);
    for (int i = 0; i < 64; i++)
        b64_value[(unsigned char)digits[i]] = (signed char)i;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "flotilla: curl_global_init failed\n");
        abort();
    }
}

/* ---------- errors ---------- */

void fl_etcd_set_error(fl_etcd_error *e, int code, const char *endpoint, const char *fmt, ...)
{
    if (!e)
        return;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    e->code = code;
    snprintf(e->msg, sizeof e->msg, "etcd %s: %s", endpoint ? endpoint : "", what);
    for (char *p = e->msg; *p; p++) /* one line, whatever a member sent */
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
}

bool fl_etcd_error_of(const json_t *v, int *grpc_code, const char **message)
{
    const json_t *err = json_object_get(v, "error");
    if (!err)
        return false;
    if (json_is_object(err)) { /* a stream's error: {"grpc_code":14,"message":"..."} */
        *grpc_code = (int)fl_etcd_i64(err, "grpc_code");
        *message = json_string_value(json_object_get(err, "message"));
    } else if (json_is_string(err)) { /* a unary one: {"error":"...","message":"...","code":11} */
        if (!json_string_length(err) && !json_object_get(v, "code"))
            return false; /* LeaseGrantResponse's own (empty) "error" field */
        *grpc_code = (int)fl_etcd_i64(v, "code");
        *message = json_string_value(json_object_get(v, "message"));
        if (!*message)
            *message = json_string_value(err);
    } else {
        return false;
    }
    if (!*message)
        *message = "(no message)";
    return true;
}

/* gRPC status codes etcd uses. */
enum { GRPC_INVALID_ARGUMENT = 3, GRPC_DEADLINE_EXCEEDED = 4, GRPC_NOT_FOUND = 5,
       GRPC_RESOURCE_EXHAUSTED = 8, GRPC_FAILED_PRECONDITION = 9, GRPC_OUT_OF_RANGE = 11,
       GRPC_UNAVAILABLE = 14 };

fl_etcd_verdict fl_etcd_classify(int grpc_code, const char *message, bool *nospace)
{
    fl_etcd_verdict v = {FL_EIO, false};
    const char *m = message ? message : "";
    if (strstr(m, "required revision has been compacted")) {
        v.code = FL_EEXPIRED;
    } else if (strstr(m, "database space exceeded")) {
        *nospace = true;
    } else if (strstr(m, "request is too large") || strstr(m, "message larger than max")) {
        v.code = FL_ETOOBIG; /* etcd's --max-request-bytes, or gRPC's own receive limit */
    } else if (grpc_code == GRPC_UNAVAILABLE || grpc_code == GRPC_DEADLINE_EXCEEDED || strstr(m, "no leader") ||
               strstr(m, "leader changed") || strstr(m, "request timed out")) {
        v.code = FL_ETIMEDOUT; /* no leader, leader changed, timed out, not started yet */
        v.unavailable = true;
    } else if (grpc_code == GRPC_INVALID_ARGUMENT || grpc_code == GRPC_OUT_OF_RANGE ||
               grpc_code == GRPC_FAILED_PRECONDITION) {
        v.code = FL_EINVAL; /* a future revision, a duplicate key in a txn, too many ops */
    } else if (grpc_code == GRPC_NOT_FOUND) {
        v.code = FL_ENOTFOUND; /* a lease; callers that can see one turn it into an answer */
    } else if (grpc_code == GRPC_RESOURCE_EXHAUSTED) {
        v.code = FL_EIO;
    }
    return v;
}

/* ---------- reading etcd's JSON ---------- */

int64_t fl_etcd_i64(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    const char *s = json_string_value(v);
    if (!s || !*s)
        return 0;
    errno = 0;
    char *end;
    long long n = strtoll(s, &end, 10);
    return (*end || errno) ? 0 : (int64_t)n;
}

static uint64_t u64_of(const json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    if (!s)
        return (uint64_t)fl_etcd_i64(o, name);
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    return *end ? 0 : (uint64_t)n;
}

/* Decode the n base64 digits at s into out (room for n / 4 * 3), as etcd writes them: padded,
 * no whitespace. The bytes written, or -1 when s is not that (the caller then falls back to
 * the lenient core decoder). Values are most of a list's bytes: this runs a group of four
 * digits per step, about four times the core decoder's speed. */
static long fast_b64(const char *s, size_t n, char *out)
{
    if (n % 4)
        return -1;
    size_t pad = n && s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
    size_t full = pad ? n - 4 : n, o = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < full; i += 4) {
        int a = b64_value[u[i]], b = b64_value[u[i + 1]], c = b64_value[u[i + 2]], d = b64_value[u[i + 3]];
        if ((a | b | c | d) < 0)
            return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (char)(v >> 16);
        out[o++] = (char)(v >> 8);
        out[o++] = (char)v;
    }
    if (pad) {
        int a = b64_value[u[full]], b = b64_value[u[full + 1]], c = pad == 1 ? b64_value[u[full + 2]] : 0;
        if ((a | b | c) < 0)
            return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
        out[o++] = (char)(v >> 16);
        if (pad == 1)
            out[o++] = (char)(v >> 8);
    }
    return (long)o;
}

/* The bytes of a base64 member straight into a blob (absent: empty). NULL when malformed. */
static fl_blob *blob_of(const json_t *o, const char *name)
{
    const json_t *j = json_object_get(o, name);
    const char *s = json_string_value(j);
    if (!s || !*s)
        return fl_blob_new("", 0);
    size_t n = json_string_length(j);
    size_t pad = n >= 2 && n % 4 == 0 && s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
    if (n % 4 == 0) {
        fl_blob *b = fl_blob_alloc(n / 4 * 3 - pad);
        if (fast_b64(s, n, b->data) == (long)b->len)
            return b;
        fl_blob_unref(b);
    }
    size_t len = 0;
    char *d = fl_base64_decode(s, &len);
    if (!d)
        return NULL;
    fl_blob *b = fl_blob_new(d, len);
    free(d);
    return b;
}

/* A base64 key into a heap string; NULL when malformed. */
static char *key_of(const json_t *o)
{
    const json_t *j = json_object_get(o, "key");
    const char *s = json_string_value(j);
    if (!s)
        return fl_strdup("");
    size_t n = json_string_length(j);
    char *k = fl_malloc(n / 4 * 3 + 4);
    long got = fast_b64(s, n, k);
    if (got >= 0) {
        k[got] = 0;
        return k;
    }
    free(k);
    return fl_base64_decode(s, NULL);
}

int fl_etcd_kv_parse(const json_t *o, bool with_value, fl_etcd_kv *kv)
{
    memset(kv, 0, sizeof *kv);
    kv->key = key_of(o);
    if (!kv->key)
        return FL_EIO;
    if (with_value && !(kv->value = blob_of(o, "value"))) {
        fl_etcd_kv_clear(kv);
        return FL_EIO;
    }
    kv->create_rev = fl_etcd_i64(o, "create_revision");
    kv->mod_rev = fl_etcd_i64(o, "mod_revision");
    kv->version = fl_etcd_i64(o, "version");
    kv->lease = fl_etcd_i64(o, "lease");
    return 0;
}

void fl_etcd_kv_clear(fl_etcd_kv *kv)
{
    free(kv->key);
    fl_blob_unref(kv->value);
    memset(kv, 0, sizeof *kv);
}

void fl_etcd_kvs_free(fl_etcd_kv *kvs, size_t n)
{
    for (size_t i = 0; kvs && i < n; i++)
        fl_etcd_kv_clear(&kvs[i]);
    free(kvs);
}

/* Append the kvs of a range answer to *kvs and *n (grown as needed). 0 or FL_EIO. */
static int append_kvs(const json_t *arr, bool with_value, fl_etcd_kv **kvs, size_t *n)
{
    size_t add = json_array_size(arr);
    if (!add)
        return 0;
    *kvs = fl_realloc(*kvs, (*n + add) * sizeof **kvs);
    for (size_t i = 0; i < add; i++) {
        if (fl_etcd_kv_parse(json_array_get(arr, i), with_value, &(*kvs)[*n]))
            return FL_EIO;
        (*n)++;
    }
    return 0;
}

/* ---------- writing etcd's JSON ---------- */

/* [,]"name":"<base64 of n bytes of p>" */
void fl_etcd_add_b64(fl_strbuf *b, bool comma, const char *name, const void *p, size_t n)
{
    char *s = fl_base64_encode(p, n);
    fl_strbuf_printf(b, "%s\"%s\":\"%s\"", comma ? "," : "", name, s);
    free(s);
}

/* A range_end as etcd wants it: "" stands for the single byte 0 (everything from key on). */
void fl_etcd_add_range_end(fl_strbuf *b, const char *range_end)
{
    if (range_end && *range_end)
        fl_etcd_add_b64(b, true, "range_end", range_end, strlen(range_end));
    else if (range_end)
        fl_strbuf_adds(b, ",\"range_end\":\"AA==\"");
}

/* ---------- the handle pool and one request ---------- */

size_t fl_etcd_current(fl_etcd *c)
{
    return (size_t)__atomic_load_n(&c->cur, __ATOMIC_RELAXED) % c->nep;
}

void fl_etcd_advance(fl_etcd *c, size_t ep)
{
    int from = (int)ep, to = (int)((ep + 1) % c->nep);
    __atomic_compare_exchange_n(&c->cur, &from, to, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static CURL *borrow(fl_etcd *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->nidle)
        h = c->idle[--c->nidle];
    pthread_mutex_unlock(&c->mu);
    if (!h && !(h = curl_easy_init())) {
        fprintf(stderr, "flotilla: out of memory creating a curl handle\n");
        abort();
    }
    return h;
}

static void give_back(fl_etcd *c, CURL *h)
{
    pthread_mutex_lock(&c->mu);
    if (c->nidle < FL_ETCD_POOL_MAX) {
        c->idle[c->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (h)
        curl_easy_cleanup(h);
}

void fl_etcd_setup_handle(const fl_etcd *c, CURL *h, const char *base, const char *path, long total_ms)
{
    char *url = fl_cat(base, path, NULL);
    curl_easy_setopt(h, CURLOPT_URL, url);
    free(url); /* curl copies string options */
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* an http_proxy meant for member clusters is not etcd's */
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total_ms > 0 ? total_ms : 0L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    if (c->cafile)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->cafile);
    if (c->certfile) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->certfile);
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->keyfile);
    }
}

typedef struct sink {
    fl_strbuf b;
    bool too_big;
} sink;

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    sink *s = ud;
    size_t n = size * nmemb;
    if (s->b.len + n > MAX_RESPONSE) {
        s->too_big = true;
        return 0;
    }
    fl_strbuf_add(&s->b, p, n);
    return n;
}

static void clear_error(fl_etcd_error *e)
{
    if (e)
        memset(e, 0, sizeof *e);
}

/* Did the request surely not reach etcd? (Then even a write may go to another member.) */
static bool never_sent(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* POST body to path and decode the answer into *out (new reference; a stream endpoint's
 * {"result":...} unwrapped), trying the members as the file's comment says. write: the
 * request changes something and may not be sent twice. *grpc_code gets the code of an error
 * answer (0 otherwise); *who the endpoint that answered last (borrowed from c). */
static int request(fl_etcd *c, const char *path, const fl_strbuf *body, bool write, json_t **out, int *grpc_code,
                   const char **who, fl_etcd_error *e)
{
    *out = NULL;
    *who = c->eps[0];
    *grpc_code = 0;
    size_t start = fl_etcd_current(c);
    int rc = FL_ETIMEDOUT;
    bool answered = false; /* a member took the request (e says how it went) */
    for (size_t i = 0; i < c->nep; i++) {
        size_t ep = (start + i) % c->nep;
        const char *base = *who = c->eps[ep];
        CURL *h = borrow(c);
        curl_easy_reset(h);
        fl_etcd_setup_handle(c, h, base, path, c->timeout_ms);
        sink s = {FL_STRBUF_INIT, false};
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->p ? body->p : "{}");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body->p ? body->len : 2));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
        char cerr[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
        CURLcode cc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
        give_back(c, h);

        if (cc != CURLE_OK || s.too_big) {
            free(s.b.p);
            if (s.too_big) {
                fl_etcd_set_error(e, FL_ETOOBIG, base, "the answer exceeds %zu bytes", MAX_RESPONSE);
                return FL_ETOOBIG;
            }
            const char *why = cerr[0] ? cerr : curl_easy_strerror(cc);
            if (never_sent(cc) || !write) {
                if (!answered || !never_sent(cc)) /* what a member did beats a refusal after it */
                    fl_etcd_set_error(e, FL_ETIMEDOUT, base, "%s", why);
                answered |= !never_sent(cc);
                fl_etcd_advance(c, ep);
                rc = FL_ETIMEDOUT;
                continue;
            }
            fl_etcd_set_error(e, FL_ETIMEDOUT, base, "%s (the write's outcome is unknown)", why);
            fl_etcd_advance(c, ep);
            return FL_ETIMEDOUT;
        }

        json_t *v = s.b.p ? fl_json_load(s.b.p, s.b.len) : NULL;
        if (!json_is_object(v)) {
            /* not etcd's gateway: a proxy in front of a member that is down (5xx), which is
             * like an unreachable member, or a wrong port or path, where trying on is no use */
            bool proxy = status >= 500;
            int code = proxy ? FL_ETIMEDOUT : FL_EIO;
            char *line = fl_err_one_line(s.b.p ? s.b.p : "", s.b.len, 100);
            fl_etcd_set_error(e, code, base, "HTTP %ld, not an etcd answer%s: %s", status,
                              proxy && write ? " (the write's outcome is unknown)" : "", line);
            free(line);
            free(s.b.p);
            json_decref(v);
            answered = true;
            rc = code;
            if (proxy && !write) {
                fl_etcd_advance(c, ep);
                continue;
            }
            return code;
        }
        free(s.b.p);
        const char *msg;
        json_t *r = json_object_get(v, "result");
        const json_t *body_v = json_is_object(r) ? r : v;
        if (fl_etcd_error_of(v, grpc_code, &msg) || fl_etcd_error_of(body_v, grpc_code, &msg)) {
            bool nospace = false;
            fl_etcd_verdict vd = fl_etcd_classify(*grpc_code, msg, &nospace);
            fl_etcd_set_error(e, vd.code, base, "%s", msg);
            if (e)
                e->nospace = nospace;
            json_decref(v);
            rc = vd.code;
            answered = true;
            if (vd.unavailable) {
                fl_etcd_advance(c, ep); /* the next request starts at a member that may serve */
                if (!write)
                    continue;
            }
            return rc;
        }
        if (body_v != v) {
            json_incref(r);
            json_decref(v);
            v = r;
        }
        clear_error(e); /* a member before this one may have failed */
        *out = v;
        return 0;
    }
    if (c->nep > 1 && e) {
        size_t l = strlen(e->msg);
        snprintf(e->msg + l, sizeof e->msg - l, " (all %zu endpoints tried)", c->nep);
    }
    return rc;
}

/* ---------- open and free ---------- */

static int bad_config(char **err, fl_etcd *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_config(char **err, fl_etcd *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = fl_vasprintf(fmt, ap);
    va_end(ap);
    if (err)
        *err = m;
    else
        free(m);
    fl_etcd_free(c);
    return FL_EINVAL;
}

/* Is u (one endpoint, trimmed) a URL we can send requests to? NULL or why not. */
static const char *url_problem(const char *u)
{
    const char *host;
    if (!strncmp(u, "http://", 7))
        host = u + 7;
    else if (!strncmp(u, "https://", 8))
        host = u + 8;
    else
        return "not an http:// or https:// URL";
    const char *p = host;
    if (*p == '[') { /* an IPv6 literal */
        p = strchr(p, ']');
        if (!p || p == host + 1)
            return "an unterminated or empty [IPv6] host";
        p++;
    } else {
        while (*p && *p != ':' && *p != '/')
            p++;
        if (p == host)
            return "no host";
    }
    for (const char *q = host; q < p; q++)
        if (*q <= ' ' || *q == '@' || *q == '?' || *q == '#' || *q == 0x7f)
            return "a host with characters a host name cannot have";
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535)
            return "a port that is not a number from 1 to 65535";
        p = end;
    }
    if (*p && strcmp(p, "/"))
        return "a path: give the member's base URL (scheme://host:port)";
    return NULL;
}

static int check_file(const char *what, const char *path, char **err, fl_etcd *c)
{
    if (path && access(path, R_OK) != 0)
        return bad_config(err, c, "etcd %s %s: %s", what, path, strerror(errno));
    return 0;
}

int fl_etcd_open(const fl_etcd_config *cfg, fl_etcd **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    pthread_once(&curl_once, curl_start);
    fl_etcd *c = fl_calloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    const char *list = cfg && cfg->endpoints ? cfg->endpoints : "";
    char *copy = fl_strdup(list), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        size_t n = strlen(t);
        while (n && t[n - 1] == ' ')
            t[--n] = 0;
        if (!n)
            continue;
        const char *why = url_problem(t);
        if (why) {
            int rc = bad_config(err, c, "etcd endpoint \"%s\": %s", t, why);
            free(copy);
            return rc;
        }
        if (t[n - 1] == '/')
            t[--n] = 0;
        c->eps = fl_realloc(c->eps, (c->nep + 1) * sizeof *c->eps);
        c->eps[c->nep++] = fl_strdup(t);
    }
    free(copy);
    if (!c->nep)
        return bad_config(err, c, "etcd endpoints \"%s\": no http:// or https:// URL given", list);
    if ((cfg->certfile != NULL) != (cfg->keyfile != NULL))
        return bad_config(err, c, "etcd client certificate: give both the certificate file and its key file");
    if (check_file("CA file", cfg->cafile, err, c) || check_file("certificate file", cfg->certfile, err, c) ||
        check_file("key file", cfg->keyfile, err, c))
        return FL_EINVAL;
    c->cafile = cfg->cafile ? fl_strdup(cfg->cafile) : NULL;
    c->certfile = cfg->certfile ? fl_strdup(cfg->certfile) : NULL;
    c->keyfile = cfg->keyfile ? fl_strdup(cfg->keyfile) : NULL;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->connect_ms = c->timeout_ms < MAX_CONNECT_MS ? c->timeout_ms : MAX_CONNECT_MS;
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    c->hdrs = curl_slist_append(c->hdrs, "Expect:"); /* no 100-continue round trip for big bodies */
    /* The gateway passes Grpc-Metadata-* on as gRPC metadata; etcd's "hasleader" makes a member
     * without a leader refuse at once (a read then goes elsewhere) and end a watch stream
     * when it loses its leader, instead of keeping it open and silent. */
    c->hdrs = curl_slist_append(c->hdrs, "Grpc-Metadata-hasleader: true");
    if (!c->hdrs) {
        fprintf(stderr, "flotilla: out of memory building curl headers\n");
        abort();
    }
    *out = c;
    return 0;
}

void fl_etcd_free(fl_etcd *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nidle; i++)
        curl_easy_cleanup(c->idle[i]);
    for (size_t i = 0; i < c->nep; i++)
        free(c->eps[i]);
    free(c->eps);
    free(c->cafile);
    free(c->certfile);
    free(c->keyfile);
    curl_slist_free_all(c->hdrs);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

char *fl_etcd_prefix_end(const char *prefix)
{
    char *s = fl_strdup(prefix);
    for (size_t n = strlen(s); n > 0; n--) {
        if ((unsigned char)s[n - 1] != 0xff) {
            s[n - 1]++;
            s[n] = 0;
            return s;
        }
    }
    s[0] = 0; /* "" or all 0xff: no key after them but the end of the keyspace */
    return s;
}

/* ---------- range ---------- */

int fl_etcd_range(fl_etcd *c, const char *key, const char *range_end, int64_t rev, int64_t limit, bool keys_only,
                  fl_etcd_kv **kvs, size_t *n, bool *more, int64_t *header_rev, fl_etcd_error *e)
{
    *kvs = NULL;
    *n = 0;
    if (more)
        *more = false;
    if (header_rev)
        *header_rev = 0;
    clear_error(e);
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_addc(&b, '{');
    fl_etcd_add_b64(&b, false, "key", key, strlen(key));
    fl_etcd_add_range_end(&b, range_end);
    if (rev > 0)
        fl_strbuf_printf(&b, ",\"revision\":\"%lld\"", (long long)rev);
    if (limit > 0)
        fl_strbuf_printf(&b, ",\"limit\":\"%lld\"", (long long)limit);
    if (keys_only)
        fl_strbuf_adds(&b, ",\"keys_only\":true");
    fl_strbuf_addc(&b, '}');
    json_t *v;
    int g;
    const char *who;
    int rc = request(c, "/v3/kv/range", &b, false, &v, &g, &who, e);
    free(b.p);
    if (rc == FL_EEXPIRED && e)
        e->compact_rev = fl_etcd_compacted_to(c, key);
    if (rc)
        return rc;
    if (append_kvs(json_object_get(v, "kvs"), !keys_only, kvs, n)) {
        fl_etcd_kvs_free(*kvs, *n);
        *kvs = NULL;
        *n = 0;
        json_decref(v);
        fl_etcd_set_error(e, FL_EIO, who, "a range answer with a key or value that is not base64");
        return FL_EIO;
    }
    if (more)
        *more = json_is_true(json_object_get(v, "more"));
    if (header_rev)
        *header_rev = fl_etcd_i64(json_object_get(v, "header"), "revision");
    json_decref(v);
    return 0;
}

/* ---------- txn ---------- */

static const char *const target_names[] = {NULL, "MOD", "CREATE", "VERSION", "VALUE"};
static const char *const result_names[] = {NULL, "EQUAL", "NOT_EQUAL", "LESS", "GREATER"};

/* Append the compares; 0 or FL_EINVAL (with e) for an enum out of range or a NULL key. */
static int add_compares(fl_strbuf *b, const fl_etcd_cmp *cmp, size_t ncmp, fl_etcd_error *e)
{
    fl_strbuf_adds(b, "\"compare\":[");
    for (size_t i = 0; i < ncmp; i++) {
        const fl_etcd_cmp *k = &cmp[i];
        if (!k->key || k->target < FL_ETCD_MOD || k->target > FL_ETCD_VALUE || k->result < FL_ETCD_EQUAL ||
            k->result > FL_ETCD_GREATER) {
            fl_etcd_set_error(e, FL_EINVAL, "txn", "compare %zu: no key, or an unknown target (%d) or result (%d)",
                              i, k->target, k->result);
            return FL_EINVAL;
        }
        fl_strbuf_adds(b, i ? ",{" : "{");
        fl_etcd_add_b64(b, false, "key", k->key, strlen(k->key));
        fl_strbuf_printf(b, ",\"target\":\"%s\",\"result\":\"%s\"", target_names[k->target], result_names[k->result]);
        if (k->target == FL_ETCD_VALUE)
            fl_etcd_add_b64(b, true, "value", k->value ? k->value : "", k->value ? k->value_len : 0);
        else
            fl_strbuf_printf(b, ",\"%s\":\"%lld\"",
                             k->target == FL_ETCD_MOD      ? "mod_revision"
                             : k->target == FL_ETCD_CREATE ? "create_revision"
                                                           : "version",
                             (long long)k->num);
        fl_strbuf_addc(b, '}');
    }
    fl_strbuf_addc(b, ']');
    return 0;
}

/* Append ,"name":[ops]; 0 or FL_EINVAL (with e). */
static int add_ops(fl_strbuf *b, const char *name, const fl_etcd_op *ops, size_t n, fl_etcd_error *e)
{
    fl_strbuf_printf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < n; i++) {
        const fl_etcd_op *o = &ops[i];
        if (!o->key || o->type < FL_ETCD_PUT || o->type > FL_ETCD_GET) {
            fl_etcd_set_error(e, FL_EINVAL, "txn", "%s op %zu: no key, or an unknown type (%d)", name, i, o->type);
            return FL_EINVAL;
        }
        static const char *const kinds[] = {NULL, "request_put", "request_delete_range", "request_range"};
        fl_strbuf_printf(b, "%s{\"%s\":{", i ? "," : "", kinds[o->type]);
        fl_etcd_add_b64(b, false, "key", o->key, strlen(o->key));
        if (o->type == FL_ETCD_PUT) {
            fl_etcd_add_b64(b, true, "value", o->value ? o->value : "", o->value ? o->value_len : 0);
            if (o->lease)
                fl_strbuf_printf(b, ",\"lease\":\"%lld\"", (long long)o->lease);
        }
        fl_strbuf_adds(b, "}}");
    }
    fl_strbuf_addc(b, ']');
    return 0;
}

int fl_etcd_txn(fl_etcd *c, const fl_etcd_cmp *cmp, size_t ncmp, const fl_etcd_op *then, size_t nthen,
                const fl_etcd_op *otherwise, size_t nother, fl_etcd_txn_result *res, fl_etcd_error *e)
{
    memset(res, 0, sizeof *res);
    clear_error(e);
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_addc(&b, '{');
    int rc = add_compares(&b, cmp, ncmp, e);
    if (!rc)
        rc = add_ops(&b, "success", then, nthen, e);
    if (!rc)
        rc = add_ops(&b, "failure", otherwise, nother, e);
    fl_strbuf_addc(&b, '}');
    bool writes = false; /* a txn of compares and GETs alone may be sent again elsewhere */
    for (size_t i = 0; i < nthen; i++)
        writes |= then[i].type != FL_ETCD_GET;
    for (size_t i = 0; i < nother; i++)
        writes |= otherwise[i].type != FL_ETCD_GET;
    json_t *v = NULL;
    int g;
    const char *who;
    if (!rc)
        rc = request(c, "/v3/kv/txn", &b, writes, &v, &g, &who, e);
    free(b.p);
    if (rc)
        return rc;
    res->succeeded = json_is_true(json_object_get(v, "succeeded"));
    res->rev = fl_etcd_i64(json_object_get(v, "header"), "revision");
    const json_t *rs = json_object_get(v, "responses");
    for (size_t i = 0; i < json_array_size(rs); i++) {
        const json_t *r = json_array_get(rs, i), *x;
        if ((x = json_object_get(r, "response_range"))) {
            if (append_kvs(json_object_get(x, "kvs"), true, &res->kvs, &res->nkvs)) {
                /* the transaction ran: say so, but the read part of its answer is unusable */
                fl_etcd_txn_result_free(res);
                json_decref(v);
                fl_etcd_set_error(e, FL_EIO, who, "a txn answer with a key or value that is not base64");
                return FL_EIO;
            }
        } else if ((x = json_object_get(r, "response_delete_range"))) {
            res->deleted += fl_etcd_i64(x, "deleted");
        }
    }
    json_decref(v);
    return 0;
}

void fl_etcd_txn_result_free(fl_etcd_txn_result *res)
{
    if (!res)
        return;
    fl_etcd_kvs_free(res->kvs, res->nkvs);
    memset(res, 0, sizeof *res);
}

/* ---------- compaction, status ---------- */

int fl_etcd_compact(fl_etcd *c, int64_t rev, bool physical, fl_etcd_error *e)
{
    clear_error(e);
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_printf(&b, "{\"revision\":\"%lld\"%s}", (long long)rev, physical ? ",\"physical\":true" : "");
    json_t *v;
    int g;
    const char *who;
    int rc = request(c, "/v3/kv/compaction", &b, true, &v, &g, &who, e);
    free(b.p);
    json_decref(v);
    return rc;
}

int fl_etcd_status(fl_etcd *c, int64_t *header_rev, uint64_t *leader, int64_t *db_size, fl_etcd_error *e)
{
    if (header_rev)
        *header_rev = 0;
    if (leader)
        *leader = 0;
    if (db_size)
        *db_size = 0;
    clear_error(e);
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, "{}");
    json_t *v;
    int g;
    const char *who;
    int rc = request(c, "/v3/maintenance/status", &b, false, &v, &g, &who, e);
    free(b.p);
    if (rc)
        return rc;
    if (header_rev)
        *header_rev = fl_etcd_i64(json_object_get(v, "header"), "revision");
    if (leader)
        *leader = u64_of(v, "leader");
    if (db_size)
        *db_size = fl_etcd_i64(v, "dbSize");
    json_decref(v);
    return 0;
}

/* ---------- leases ---------- */

/* One lease call: {"<field>":"<n>"} to path, as request() sends it (write: a grant, not sent
 * again once a member took it). *v is the answer on success (the caller decrefs), *who the
 * member that answered. */
static int lease_request(fl_etcd *c, const char *path, const char *field, int64_t n, bool write, json_t **v,
                         const char **who, fl_etcd_error *e)
{
    clear_error(e);
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_printf(&b, "{\"%s\":\"%lld\"}", field, (long long)n);
    int g;
    int rc = request(c, path, &b, write, v, &g, who, e);
    free(b.p);
    return rc;
}

int fl_etcd_lease_grant(fl_etcd *c, int64_t ttl_s, int64_t *id, fl_etcd_error *e)
{
    *id = 0;
    json_t *v;
    const char *who;
    int rc = lease_request(c, "/v3/lease/grant", "TTL", ttl_s, true, &v, &who, e);
    if (rc)
        return rc;
    *id = fl_etcd_i64(v, "ID");
    json_decref(v);
    if (!*id) {
        fl_etcd_set_error(e, FL_EIO, who, "a lease grant answer without a lease ID");
        return FL_EIO;
    }
    return 0;
}

/* Keepalive and revoke are sent again elsewhere like reads: renewing or revoking twice does
 * what doing it once does. */
int fl_etcd_lease_keepalive(fl_etcd *c, int64_t id, int64_t *ttl_s, fl_etcd_error *e)
{
    *ttl_s = 0;
    json_t *v;
    const char *who;
    int rc = lease_request(c, "/v3/lease/keepalive", "ID", id, false, &v, &who, e);
    if (rc == FL_ENOTFOUND) {
        clear_error(e);
        return 0; /* gone */
    }
    if (rc)
        return rc;
    *ttl_s = fl_etcd_i64(v, "TTL");
    json_decref(v);
    return 0;
}

int fl_etcd_lease_revoke(fl_etcd *c, int64_t id, fl_etcd_error *e)
{
    json_t *v;
    const char *who;
    int rc = lease_request(c, "/v3/lease/revoke", "ID", id, false, &v, &who, e);
    json_decref(v); /* NULL when it failed */
    if (rc == FL_ENOTFOUND) {
        clear_error(e);
        return 0; /* already gone: what a revoke wants */
    }
    return rc;
}
