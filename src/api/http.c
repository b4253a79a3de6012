/* http.c - libmicrohttpd transport (see http.h).
 *
 * MHD calls on_request several times per request: first with the headers (we set up
 * per-request state and refuse at once a Content-Length far past the body limit), then
 * with each body chunk, then once more to get the response. Watches answer with a
 * callback response of unknown size (chunked encoding) whose reader blocks on the
 * store watch; that is why the daemon runs one thread per connection. */
#include "api/http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/tls.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/strbuf.h"

/* A Content-Length beyond this many times the body limit is answered 413 before any of the
 * body is read (see on_request). */
#define EARLY_413_FACTOR 4

struct fl_http {
    struct MHD_Daemon *d;
    fl_api *api;
    fl_http_config cfg;
    char *token;
    atomic_int inflight;
    atomic_int watches;
    int port;
};

typedef struct conn_state {
    struct timespec start;
    char *body;
    size_t len, cap;
    bool too_big;
    bool counted;      /* holds an in-flight slot */
    bool watch;        /* holds a watch slot */
    const char *verb;
    char resource[96];
    int code;
    char user[FL_AUTH_USER_MAX]; /* the identity the token table found */
} conn_state;

static double elapsed(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    fl_req *r = cls;
    if (r->nquery >= 64)
        return MHD_YES;
    r->query = fl_realloc(r->query, (r->nquery + 1) * sizeof *r->query);
    r->query[r->nquery].key = fl_strdup(key);
    r->query[r->nquery].value = fl_strdup(value ? value : "");
    r->nquery++;
    return MHD_YES;
}

static void free_query(fl_req *r)
{
    for (size_t i = 0; i < r->nquery; i++) {
        free(r->query[i].key);
        free(r->query[i].value);
    }
    free(r->query);
}

/* Each line of warnings becomes a `Warning: 299 - "text"` header, as the apiserver sends them. */
static void add_warnings(struct MHD_Response *resp, const char *warnings)
{
    const char *p = warnings;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char hdr[1024];
        size_t o = 0;
        o += (size_t)snprintf(hdr, sizeof hdr, "299 - \"");
        for (size_t i = 0; i < n && o + 3 < sizeof hdr; i++) {
            if (p[i] == '"' || p[i] == '\\')
                hdr[o++] = '\\';
            hdr[o++] = p[i];
        }
        if (o + 2 <= sizeof hdr) {
            hdr[o++] = '"';
            hdr[o] = 0;
            MHD_add_response_header(resp, "Warning", hdr);
        }
        p += n + (nl ? 1 : 0);
    }
}

static enum MHD_Result send_buffer(struct MHD_Connection *c, int code, char *body, size_t len, const char *type,
                                   const char *retry_after, const char *warnings)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", type ? type : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    if (retry_after)
        MHD_add_response_header(resp, "Retry-After", retry_after);
    add_warnings(resp, warnings);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result send_status(struct MHD_Connection *c, conn_state *st, int code, const char *reason,
                                   const char *msg)
{
    char *body = fl_asprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                             "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
                             msg, reason, code);
    st->code = code;
    return send_buffer(c, code, body, strlen(body), "application/json", code == 429 ? "1" : NULL, NULL);
}

static enum MHD_Result send_too_big(struct MHD_Connection *c, conn_state *st, size_t limit)
{
    char msg[96];
    snprintf(msg, sizeof msg, "Request entity too large: limit is %zu", limit);
    return send_status(c, st, 413, "RequestEntityTooLarge", msg);
}

/* /healthz, /livez, /readyz and their checks (/healthz/ping, ...): a probe of a server that
 * is merely busy must not fail, so these are outside the in-flight limit, as kube-apiserver
 * exempts them. They answer from memory, and take no slot. */
static bool health_path(const char *url)
{
    static const char *const roots[] = {"/healthz", "/livez", "/readyz"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        size_t n = strlen(roots[i]);
        if (!strncmp(url, roots[i], n) && (url[n] == 0 || url[n] == '/'))
            return true;
    }
    return false;
}

static bool public_path(const char *url)
{
    return !strcmp(url, "/healthz") || !strcmp(url, "/livez") || !strcmp(url, "/readyz") ||
           !strcmp(url, "/version") || !strncmp(url, "/healthz/", 9) || !strncmp(url, "/readyz/", 8) ||
           !strncmp(url, "/livez/", 7);
}

typedef struct stream_ctx {
    fl_http *h;
    fl_api_stream *s;
    conn_state *st;
    int fd;            /* the connection's socket, -1 if unknown */
} stream_ctx;

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream_ctx *sc = cls;
    /* MHD corks the socket of a TLS response while "more data follows", and the kernel
     * would then hold our last event for up to 200 ms while we wait for the next one.
     * By the time MHD asks for more, the previous chunk is in the kernel: uncork to push it. */
    if (sc->fd >= 0) {
        int off = 0;
        setsockopt(sc->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
    }
    size_t n = fl_api_stream_read(sc->s, buf, max);
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream_ctx *sc = cls;
    fl_api_stream_free(sc->s);
    atomic_fetch_sub(&sc->h->watches, 1);
    free(sc);
}

static bool is_watch_request(struct MHD_Connection *c, const char *url)
{
    const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    if (w && strcmp(w, "0") && strcasecmp(w, "false"))
        return true;
    return strstr(url, "/watch/") != NULL;
}

/* The first call of a request, with its headers: the per-request state, and the early 413. */
static enum MHD_Result begin_request(fl_http *h, struct MHD_Connection *c, const char *method, void **con_cls)
{
    conn_state *st = fl_calloc(1, sizeof *st);
    clock_gettime(CLOCK_MONOTONIC, &st->start);
    st->verb = method;
    *con_cls = st;
    /* A body announced larger than the limit is refused. One far larger (or not sent yet:
     * the client waits for "100 Continue") is refused now, before it is read and before
     * authentication: waiting for gigabytes that may never come would hold the connection
     * until the client gives up. MHD closes the connection after that answer, and a client
     * still sending would see the reset before the answer, so a body of up to
     * EARLY_413_FACTOR times the limit is read and dropped, and answered after, as
     * Go's server drains a little of what a handler left unread. */
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
    if (announced > h->cfg.max_body) {
        const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
        if (announced / EARLY_413_FACTOR > h->cfg.max_body || (expect && !strcasecmp(expect, "100-continue")))
            return send_too_big(c, st, h->cfg.max_body);
        st->too_big = true;
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    fl_http *h = cls;
    conn_state *st = *con_cls;
    if (!st)
        return begin_request(h, c, method, con_cls);
    if (*upload_size) {
        if (!st->too_big) {
            if (st->len + *upload_size > h->cfg.max_body) {
                st->too_big = true;
                free(st->body);
                st->body = NULL;
                st->len = st->cap = 0;
            } else {
                if (st->len + *upload_size + 1 > st->cap) {
                    size_t cap = st->cap ? st->cap : 4096;
                    while (cap < st->len + *upload_size + 1)
                        cap *= 2;
                    st->body = fl_realloc(st->body, cap);
                    st->cap = cap;
                }
                memcpy(st->body + st->len, upload, *upload_size);
                st->len += *upload_size;
                st->body[st->len] = 0;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }

    /* the whole request is here: which API instance serves it, and is the caller allowed? */
    fl_http_route route = {h->api, url, h->token};
    if (h->cfg.router && h->cfg.router(h->cfg.router_ctx, url, &route) != 0)
        return send_status(c, st, 404, "NotFound", "the server could not find the requested resource");
    if (route.hold) {
        for (int waited = 0; *route.hold && waited < 60000 && !h->api->stopping; waited += 100) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (*route.hold)
            return send_status(c, st, 503, "ServiceUnavailable", "the cluster is partitioned");
    }
    if (route.fail_code)
        return send_status(c, st, route.fail_code, "ServiceUnavailable", "the cluster's API is down");
    if (route.delay_ms > 0) {
        struct timespec ts = {route.delay_ms / 1000, (long)(route.delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    const char *user = NULL; /* NULL: authentication is off, nothing is authorized */
    if (h->cfg.auth && !route.handle) {
        /* the token table: every token names an identity; public paths need none */
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (auth && !strncmp(auth, "Bearer ", 7) &&
            fl_auth_authenticate(h->cfg.auth, auth + 7, st->user, sizeof st->user) == 0)
            user = st->user;
        else if (!auth && public_path(route.path))
            user = FL_AUTH_ANONYMOUS;
        else /* credentials that fail are refused even where none are needed, as the apiserver does */
            return send_status(c, st, 401, "Unauthorized", "Unauthorized");
    } else if (route.token) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        bool ok = auth && !strncmp(auth, "Bearer ", 7) && fl_token_equal(auth + 7, route.token);
        if (!ok && (auth || !public_path(route.path)))
            return send_status(c, st, 401, "Unauthorized", "Unauthorized");
    }
    if (st->too_big)
        return send_too_big(c, st, h->cfg.max_body);
    bool watch = !strcmp(method, "GET") && is_watch_request(c, url);
    if (watch) {
        if (atomic_fetch_add(&h->watches, 1) >= h->cfg.max_watches) {
            atomic_fetch_sub(&h->watches, 1);
            return send_status(c, st, 429, "TooManyRequests", "too many watches, please try again later");
        }
        st->watch = true;
    } else if (!health_path(route.path)) {
        if (atomic_fetch_add(&h->inflight, 1) >= h->cfg.max_inflight) {
            atomic_fetch_sub(&h->inflight, 1);
            return send_status(c, st, 429, "TooManyRequests", "Too many requests, please try again later.");
        }
        st->counted = true;
    }

    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = method;
    r.path = route.path;
    r.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    r.accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    r.user_agent = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    r.user = user;
    r.body = st->body;
    r.body_len = st->len;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &r);
    if (route.handle)
        route.handle(route.handle_ctx, &r);
    else
        fl_api_handle(route.api, &r);
    free_query(&r);
    if (r.stream) {
        free(r.warnings);
        r.warnings = NULL;
    }
    st->verb = r.verb ? r.verb : method;
    snprintf(st->resource, sizeof st->resource, "%s", r.resource);
    st->code = r.code;

    if (r.stream) {
        stream_ctx *sc = fl_malloc(sizeof *sc);
        sc->h = h;
        sc->s = r.stream;
        sc->st = st;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        sc->fd = ci ? ci->connect_fd : -1;
        st->watch = false; /* the slot now belongs to the stream */
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader,
                                                                      sc, stream_free);
        MHD_add_response_header(resp, "Content-Type", "application/json");
        MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
        enum MHD_Result ret = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    if (st->watch) {
        atomic_fetch_sub(&h->watches, 1);
        st->watch = false;
    }
    enum MHD_Result ret = send_buffer(c, r.code, r.resp ? r.resp : fl_strdup(""), r.resp ? r.resp_len : 0,
                                      r.resp_type, r.retry_after, r.warnings);
    free(r.warnings);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    fl_http *h = cls;
    conn_state *st = *con_cls;
    if (!st)
        return;
    if (st->counted)
        atomic_fetch_sub(&h->inflight, 1);
    if (st->watch)
        atomic_fetch_sub(&h->watches, 1);
    fl_metrics_request(st->verb ? st->verb : "", st->resource, st->code, elapsed(&st->start));
    free(st->body);
    free(st);
    *con_cls = NULL;
}

/* ---- TLS: kube-apiserver's flags as a GnuTLS priority string ---- */

/* A cipher suite as kube-apiserver names it (Go's crypto/tls names, which are IANA's), and the
 * parts GnuTLS enables it by: key exchange ("" for TLS 1.3's suites, which name none), bulk
 * cipher, MAC. RC4 suites are left out: GnuTLS no longer offers them. */
typedef struct tls_suite {
    const char *name, *kx, *cipher, *mac;
} tls_suite;

static const tls_suite tls_suites[] = {
    {"TLS_AES_128_GCM_SHA256", "", "AES-128-GCM", "AEAD"},
    {"TLS_AES_256_GCM_SHA384", "", "AES-256-GCM", "AEAD"},
    {"TLS_CHACHA20_POLY1305_SHA256", "", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA", "AES-128-CBC", "SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256"},
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "RSA", "3DES-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA", "3DES-CBC", "SHA1"},
};

/* The default, as a modern kube-apiserver would be configured: forward secrecy and AEAD only. */
#define TLS_DEFAULT_SUITES                                                                                            \
    "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA"

/* Append ":+part" unless the string has it already: a part several suites share is named once. */
static void add_part(fl_strbuf *b, const char *part)
{
    if (!part[0])
        return;
    char item[48];
    snprintf(item, sizeof item, ":+%s", part);
    const char *p = fl_strbuf_str(b);
    size_t n = strlen(item);
    for (const char *hit = strstr(p, item); hit; hit = strstr(hit + 1, item))
        if (hit[n] == ':' || hit[n] == 0)
            return;
    fl_strbuf_adds(b, item);
}

int fl_http_tls_priorities(const char *min_version, const char *cipher_suites, char **out, char **err)
{
    *out = NULL;
    *err = NULL;
    const char *versions;
    if (!min_version || !min_version[0] || !strcmp(min_version, "VersionTLS12"))
        versions = "+VERS-TLS1.3:+VERS-TLS1.2";
    else if (!strcmp(min_version, "VersionTLS13"))
        versions = "+VERS-TLS1.3";
    else {
        *err = fl_asprintf("--tls-min-version %s: expected VersionTLS12 or VersionTLS13 (TLS 1.0 and 1.1 are "
                           "not offered)", min_version);
        return FL_EINVAL;
    }
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_printf(&b, "NORMAL:-VERS-ALL:%s:", versions);
    if (!cipher_suites || !cipher_suites[0]) {
        fl_strbuf_adds(&b, TLS_DEFAULT_SUITES);
        *out = fl_strbuf_take(&b);
        return 0;
    }
    /* the parts of every suite named: ciphers, then MACs, then key exchanges */
    fl_strbuf parts[3] = {FL_STRBUF_INIT, FL_STRBUF_INIT, FL_STRBUF_INIT};
    for (int i = 0; i < 3; i++)
        fl_strbuf_adds(&parts[i], i == 0 ? "-CIPHER-ALL" : i == 1 ? ":-MAC-ALL" : ":-KX-ALL");
    int rc = 0;
    bool aead = false; /* a suite named whose cipher TLS 1.3 can use */
    const char *p = cipher_suites;
    while (*p) {
        size_t n = strcspn(p, ",");
        while (n && (*p == ' ')) {
            p++;
            n--;
        }
        size_t m = n;
        while (m && p[m - 1] == ' ')
            m--;
        const tls_suite *found = NULL;
        for (size_t i = 0; m && i < sizeof tls_suites / sizeof tls_suites[0]; i++)
            if (strlen(tls_suites[i].name) == m && !strncmp(tls_suites[i].name, p, m))
                found = &tls_suites[i];
        if (!found) {
            *err = fl_asprintf("--tls-cipher-suites: unknown or unsupported cipher suite \"%.*s\" (IANA names such "
                               "as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", (int)m, p);
            rc = FL_EINVAL;
            goto cleanup;
        }
        aead = aead || !strcmp(found->mac, "AEAD");
        add_part(&parts[0], found->cipher);
        add_part(&parts[1], found->mac);
        add_part(&parts[2], found->kx);
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    if (!aead && !strcmp(versions, "+VERS-TLS1.3")) {
        *err = fl_strdup("--tls-cipher-suites names no suite TLS 1.3 can use (AES-GCM or ChaCha20-Poly1305), "
                         "and --tls-min-version VersionTLS13 allows TLS 1.3 only");
        rc = FL_EINVAL;
        goto cleanup;
    }
    for (int i = 0; i < 3; i++)
        fl_strbuf_add(&b, parts[i].p, parts[i].len);
    *out = fl_strbuf_take(&b);
cleanup:
    for (int i = 0; i < 3; i++)
        fl_strbuf_close(&parts[i]);
    fl_strbuf_close(&b);
    return rc;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = 0;
    fl_log(FL_LOG_DEBUG, "http", "%s", msg);
}

static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[128];
    const char *colon = strrchr(listen, ':');
    if (!colon)
        return -1;
    size_t hl = (size_t)(colon - listen);
    if (hl >= sizeof host)
        return -1;
    memcpy(host, listen, hl);
    host[hl] = 0;
    int port = atoi(colon + 1);
    if (port < 0 || port > 65535)
        return -1;
    memset(ss, 0, sizeof *ss);
    char *h6 = host;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = 0;
        h6 = host + 1;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (!host[0] || inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        if (!host[0])
            a4->sin_addr.s_addr = htonl(INADDR_ANY);
        *len = sizeof *a4;
        return 0;
    }
    if (inet_pton(AF_INET6, h6, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return 0;
    }
    if (!strcmp(host, "localhost")) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof *a4;
        return 0;
    }
    return -1;
}

int fl_http_start(const fl_http_config *cfg, fl_api *api, fl_http **out, char **err)
{
    *out = NULL;
    struct sockaddr_storage ss;
    socklen_t sl;
    if (parse_listen(cfg->listen, &ss, &sl)) {
        *err = fl_asprintf("--listen %s: expected ADDRESS:PORT with a numeric IP address", cfg->listen);
        return FL_EINVAL;
    }
    fl_http *h = fl_calloc(1, sizeof *h);
    h->api = api;
    h->cfg = *cfg;
    if (!h->cfg.max_body)
        h->cfg.max_body = FL_API_MAX_REQUEST_BYTES; /* the bound decoding holds bodies to, too */
    if (!h->cfg.max_inflight)
        h->cfg.max_inflight = 400;
    if (!h->cfg.max_watches)
        h->cfg.max_watches = 10000;
    h->token = cfg->token ? fl_strdup(cfg->token) : NULL;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                     MHD_USE_POLL | MHD_USE_ITC | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    if (cfg->cert_pem)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem opts[16];
    int n = 0;
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 16384, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_STACK_SIZE, 1024 * 1024, NULL};
    /* MHD zeroes each connection's pool between requests; Kubernetes clients send small
     * headers, so 16 KiB (half the default) halves that cost and still fits them */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)log_mhd, NULL};
    char *priorities = NULL;
    if (cfg->cert_pem) {
        if (fl_http_tls_priorities(cfg->tls_min_version, cfg->tls_cipher_suites, &priorities, err)) {
            free(h->token);
            free(h);
            return FL_EINVAL;
        }
        /* MHD hands it to gnutls_priority_init while starting: it need not outlive the start */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, priorities};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->cert_pem};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->key_pem};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    free(priorities);
    if (!h->d) {
        *err = fl_asprintf("cannot listen on %s (address in use, or TLS key/certificate rejected)", cfg->listen);
        free(h->token);
        free(h);
        return FL_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    *out = h;
    return 0;
}

int fl_http_port(const fl_http *h)
{
    return h->port;
}

size_t fl_http_inflight(const fl_http *h)
{
    return (size_t)atomic_load(&((fl_http *)h)->inflight);
}

void fl_http_stop(fl_http *h)
{
    if (!h)
        return;
    h->api->stopping = 1;
    /* quiescing hands the listening socket to us: close it, or the port stays bound */
    MHD_socket lsock = MHD_quiesce_daemon(h->d);
    /* give running requests a bounded time to finish */
    for (int i = 0; i < 100 && atomic_load(&h->inflight) > 0; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(h->d);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    free(h->token);
    free(h);
}
