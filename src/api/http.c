/* http.c - libmicrohttpd transport (see http.h).
 *
 * MHD calls on_request several times per request: first with the headers (we set up
 * per-request state and refuse at once a Content-Length far past the body limit), then
 * with each body chunk, then once more when the request is complete. MHD runs a couple of
 * event-loop threads (epoll) that only move bytes, so a connection, idle or not, costs no
 * thread: a complete request is copied into a job and its connection suspended while a
 * worker of http_loop.c handles it (http_job.c: handlers block on the store); the worker
 * resumes the connection and MHD calls on_request once more, which queues the answer (a GET
 * of one object, a point read, and the health checks are answered at once instead). A watch answers
 * with a callback response of unknown size (chunked encoding) whose reader takes what the
 * stream has ready without blocking, and otherwise suspends the connection until the store
 * publishes, a bookmark or the deadline is due, or the peer hangs up (http_loop.h). The
 * sweeper of http_loop.c also enforces the request header, body and idle timeouts, which
 * MHD's own timeout (inactivity, reset by each byte) cannot: a client dribbling a header
 * byte a second would keep it alive forever. */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/http_loop.h"
#include "api/http_priv.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"

/* A Content-Length beyond this many times the body limit is answered 413 before any of the
 * body is read (see on_request). */
#define EARLY_413_FACTOR 4
/* MHD's event-loop threads, and the workers that handle requests (more start under load,
 * up to the maximum, and end when idle): the whole transport's threads, whatever the number
 * of connections. */
#define MHD_THREADS 2
#define MIN_WORKERS 2
#define MAX_WORKERS 16
/* The buffer MHD gives a watch's reader: one TLS record's worth. An idle watch keeps it,
 * so it is most of what a watch costs beside the TLS session. */
#define STREAM_BLOCK (16 * 1024)

static double elapsed(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
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
                                   const char *retry_after, const char *warnings, const char *audit_id,
                                   const char *const *more)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", type ? type : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    for (size_t i = 0; more && more[i] && more[i + 1]; i += 2)
        MHD_add_response_header(resp, more[i], more[i + 1]);
    if (audit_id && audit_id[0])
        MHD_add_response_header(resp, "Audit-ID", audit_id);
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
    return send_buffer(c, code, body, strlen(body), "application/json", code == 429 ? "1" : NULL, NULL, st->audit_id,
                       NULL);
}

static enum MHD_Result send_too_big(struct MHD_Connection *c, conn_state *st, size_t limit)
{
    char msg[96];
    snprintf(msg, sizeof msg, "Request entity too large: limit is %zu", limit);
    return send_status(c, st, 413, "RequestEntityTooLarge", msg);
}

/* ---- watches: a callback response that parks its connection while nothing is ready ---- */

typedef struct stream_ctx {
    fl_http *h;
    fl_api_stream *s;
    int fd;            /* the connection's socket, -1 if unknown */
    fl_http_park park; /* park.conn NULL: no socket context, the reader blocks instead */
} stream_ctx;

static void stream_notify(void *cls)
{
    stream_ctx *sc = cls;
    fl_http_park_wake(&sc->park);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream_ctx *sc = cls;
    (void)pos;
    /* MHD corks the socket of a TLS response while "more data follows", and the kernel
     * would then hold our last event for up to 200 ms while we wait for the next one.
     * By the time MHD asks for more, the previous chunk is in the kernel: uncork to push it. */
    if (sc->fd >= 0) {
        int off = 0;
        setsockopt(sc->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
    }
    if (!sc->park.conn) {
        size_t n = fl_api_stream_read(sc->s, buf, max);
        return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
    }
    fl_http_park_begin(&sc->park);
    if (atomic_load(&sc->park.hung_up))
        return MHD_CONTENT_READER_END_WITH_ERROR; /* the watcher went away */
    if (atomic_load(&sc->h->closing))
        return MHD_CONTENT_READER_END_OF_STREAM;
    int64_t wake = 0;
    long n = fl_api_stream_try_read(sc->s, buf, max, &wake);
    if (n > 0)
        return (ssize_t)n;
    if (n < 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    /* nothing now: no thread waits; a publish, the wake-up time or a hang-up resumes it */
    fl_http_park_suspend(sc->h->loop, &sc->park, wake);
    return 0;
}

static void stream_free(void *cls)
{
    stream_ctx *sc = cls;
    fl_http_park_detach(sc->h->loop, &sc->park);
    fl_api_stream_free(sc->s); /* its watch: no notification after this */
    atomic_fetch_sub(&sc->h->watches, 1);
    free(sc);
}

static fl_http_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* On MHD's thread, once the job is answered: queue the answer. */
static enum MHD_Result respond(fl_http *h, struct MHD_Connection *c, conn_state *st, req_job *j)
{
    fl_req *r = &j->r;
    /* r->verb is static, or r->method (the job's copy, freed below): then MHD's method stays */
    if (r->verb && r->verb != r->method)
        st->verb = r->verb;
    snprintf(st->resource, sizeof st->resource, "%s", r->resource);
    st->code = r->code;
    enum MHD_Result ret;
    if (r->stream) {
        stream_ctx *sc = fl_calloc(1, sizeof *sc);
        sc->h = h;
        sc->s = r->stream;
        r->stream = NULL; /* the response's now */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        sc->fd = ci ? ci->connect_fd : -1;
        fl_http_conn *conn = conn_of(c);
        if (conn) {
            fl_http_park_attach(h->loop, &sc->park, conn);
            fl_api_stream_set_notify(sc->s, stream_notify, sc);
        }
        st->watch = false; /* the slot now belongs to the stream */
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_reader,
                                                                      sc, stream_free);
        MHD_add_response_header(resp, "Content-Type", "application/json");
        MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
        MHD_add_response_header(resp, "Audit-ID", st->audit_id);
        ret = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
    } else {
        if (st->watch) {
            atomic_fetch_sub(&h->watches, 1);
            st->watch = false;
        }
        ret = send_buffer(c, r->code, r->resp ? r->resp : fl_strdup(""), r->resp ? r->resp_len : 0, r->resp_type,
                          r->retry_after, r->warnings, st->audit_id, r->resp_headers);
        r->resp = NULL; /* send_buffer's now */
    }
    fl_http_job_free(j);
    return ret;
}

/* The first call of a request, with its headers: the per-request state, and the early 413. */
static enum MHD_Result begin_request(fl_http *h, struct MHD_Connection *c, const char *method, void **con_cls)
{
    conn_state *st = fl_calloc(1, sizeof *st);
    clock_gettime(CLOCK_MONOTONIC, &st->start);
    st->verb = method;
    st->conn = conn_of(c);
    *con_cls = st;
    /* the headers are in: now the body has its own time */
    if (st->conn)
        fl_http_conn_deadline(h->loop, st->conn, fl_http_now_ms() + (int64_t)h->cfg.body_timeout_s * 1000);
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

/* A GET of one object or of its subresource (not a list): /api/v1/[namespaces/NS/]RES/NAME[/SUB]
 * or the same under /apis/GROUP/VERSION, and /api/v1/namespaces/NAME. */
static bool one_object_get(const char *method, const char *path)
{
    if (strcmp(method, "GET"))
        return false;
    int skip;
    if (!strncmp(path, "/api/", 5))
        skip = 2;
    else if (!strncmp(path, "/apis/", 6))
        skip = 3;
    else
        return false;
    int k = 0;
    bool ns_first = false;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (k == skip)
            ns_first = n == 10 && !strncmp(p, "namespaces", 10);
        k++;
        p += n;
    }
    k -= skip; /* segments after the group version */
    return k >= 2 && !(k == 3 && ns_first);
}

static void add_body(fl_http *h, conn_state *st, const char *upload, size_t n)
{
    if (st->too_big)
        return;
    if (st->len + n > h->cfg.max_body) {
        st->too_big = true;
        free(st->body);
        st->body = NULL;
        st->len = st->cap = 0;
        return;
    }
    if (st->len + n + 1 > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + n + 1)
            cap *= 2;
        st->body = fl_realloc(st->body, cap);
        st->cap = cap;
    }
    memcpy(st->body + st->len, upload, n);
    st->len += n;
    st->body[st->len] = 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    fl_http *h = cls;
    conn_state *st = *con_cls;
    (void)version;
    if (!st)
        return begin_request(h, c, method, con_cls);
    if (*upload_size) {
        add_body(h, st, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (st->job) { /* resumed: the worker has answered */
        req_job *j = st->job;
        st->job = NULL;
        return respond(h, c, st, j);
    }
    /* the whole request is here: no deadline while it is handled, or while a watch streams */
    if (st->conn)
        fl_http_conn_deadline(h->loop, st->conn, 0);
    req_job *j = fl_http_job_new(h, c, st, url, method);
    j->route = (fl_http_route){h->api, j->url, h->token};
    if (h->cfg.router && h->cfg.router(h->cfg.router_ctx, j->url, &j->route) != 0) {
        fl_http_job_free(j);
        return send_status(c, st, 404, "NotFound", "the server could not find the requested resource");
    }
    /* a route that waits takes its slot after waiting, as it did when it held a thread */
    j->slot_later = j->route.hold || j->route.delay_ms > 0;
    if (!j->slot_later)
        fl_http_take_slot(h, j);
    /* the health checks answer from memory, at once: a probe must not queue behind work;
     * a GET of one object is a point read, cheaper than the trip to a worker and back, unless
     * it is audited: a write to the audit log may wait on the disk, which a worker may do and
     * MHD's thread, serving every connection, may not */
    bool inline_get = !j->watch && !h->cfg.audit && one_object_get(method, j->route.path);
    if (!j->slot_later && (fl_http_health_path(j->route.path) || inline_get)) {
        fl_http_job_handle(j);
        return respond(h, c, st, j);
    }
    atomic_fetch_add(&h->pending, 1);
    if (atomic_load(&h->closing)) { /* fl_http_stop is waiting for the jobs to end */
        atomic_fetch_sub(&h->pending, 1);
        fl_http_job_status(j, 503, "ServiceUnavailable", "the server is shutting down");
        return respond(h, c, st, j);
    }
    j->job.run = fl_http_job_run;
    st->job = j;
    MHD_suspend_connection(c); /* before the job can resume it */
    fl_http_loop_submit(h->loop, &j->job);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    fl_http *h = cls;
    conn_state *st = *con_cls;
    (void)c;
    (void)toe;
    if (!st)
        return;
    if (st->counted)
        atomic_fetch_sub(&h->inflight, 1);
    if (st->watch)
        atomic_fetch_sub(&h->watches, 1);
    fl_metrics_request(st->verb ? st->verb : "", st->resource, st->code, elapsed(&st->start));
    if (st->job)
        fl_http_job_free(st->job);
    fl_audit_ev_end(st->audit, st->code); /* a watch's ResponseComplete */
    /* kept alive for the next request, for a while */
    if (st->conn)
        fl_http_conn_deadline(h->loop, st->conn, fl_http_now_ms() + (int64_t)h->cfg.idle_timeout_s * 1000);
    free(st->body);
    free(st);
    *con_cls = NULL;
}

/* A connection opens (the request header timeout runs from now) or closes. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    fl_http *h = cls;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED) {
        fl_http_conn_close(h->loop, *socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;
    /* a peer that vanishes without a FIN (its host gone) is found by keep-alive probes,
     * which end a parked watch through the sweeper's hang-up watch */
    int on = 1, idle = 30, intvl = 10, cnt = 3;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    *socket_context =
        fl_http_conn_open(h->loop, c, fd, fl_http_now_ms() + (int64_t)h->cfg.header_timeout_s * 1000);
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

/* Every connection is a descriptor: let the process have as many as it may. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void http_free(fl_http *h)
{
    fl_http_loop_free(h->loop);
    free(h->token);
    free(h);
}

/* The requests being handled now, at each scrape. */
static void scrape_http(void *ctx)
{
    fl_http *h = ctx;
    fl_metric_set(h->m_inflight, (double)atomic_load(&h->inflight));
}

static void metrics_init(fl_http *h)
{
    h->m_inflight = fl_metric_with(fl_metric_family(FL_METRIC_GAUGE, "flotilla_http_inflight_requests",
                                                    "Requests being handled now (watches not counted), against the "
                                                    "limit past which new ones get 429.",
                                                    NULL, NULL, NULL, 0),
                                   NULL, NULL);
    fl_metric *dropped = fl_metric_family(FL_METRIC_COUNTER, "flotilla_http_dropped_requests_total",
                                          "Requests answered 429 TooManyRequests at the door: too many in flight "
                                          "(request_kind request) or too many watches open (watch).",
                                          "request_kind", NULL, NULL, 0);
    h->m_dropped[0] = fl_metric_with(dropped, "request", NULL);
    h->m_dropped[1] = fl_metric_with(dropped, "watch", NULL);
    fl_metrics_on_scrape(scrape_http, h);
    h->scrape_hooked = true;
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
    char *priorities = NULL;
    if (cfg->cert_pem && fl_http_tls_priorities(cfg->tls_min_version, cfg->tls_cipher_suites, &priorities, err))
        return FL_EINVAL;
    fl_http *h = fl_calloc(1, sizeof *h);
    h->api = api;
    h->cfg = *cfg;
    if (!h->cfg.max_body)
        h->cfg.max_body = FL_API_MAX_REQUEST_BYTES; /* the bound decoding holds bodies to, too */
    if (!h->cfg.max_inflight)
        h->cfg.max_inflight = 400;
    if (!h->cfg.max_watches)
        h->cfg.max_watches = 10000;
    if (h->cfg.header_timeout_s <= 0)
        h->cfg.header_timeout_s = FL_HTTP_HEADER_TIMEOUT_S;
    if (h->cfg.body_timeout_s <= 0)
        h->cfg.body_timeout_s = FL_HTTP_BODY_TIMEOUT_S;
    if (h->cfg.idle_timeout_s <= 0)
        h->cfg.idle_timeout_s = FL_HTTP_IDLE_TIMEOUT_S;
    h->token = cfg->token ? fl_strdup(cfg->token) : NULL;
    if (fl_http_loop_new(MIN_WORKERS, h->cfg.max_workers > 0 ? h->cfg.max_workers : MAX_WORKERS, &h->loop, err)) {
        free(priorities);
        http_free(h);
        return FL_EIO;
    }
    raise_nofile();
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    if (cfg->cert_pem)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem opts[20];
    int n = 0;
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, MHD_THREADS, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 16384, NULL};
    /* MHD's timeout counts inactivity, which a byte a second defeats; the sweeper keeps
     * deadlines instead (see on_connection, begin_request, on_completed) */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_STACK_SIZE, 1024 * 1024, NULL};
    /* MHD zeroes each connection's pool between requests; Kubernetes clients send small
     * headers, so 16 KiB (half the default) halves that cost and still fits them */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)log_mhd, NULL};
    if (cfg->cert_pem) {
        /* MHD hands it to gnutls_priority_init while starting: it need not outlive the start */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, priorities};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->cert_pem};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->key_pem};
        /* with a trust list MHD asks each client for a certificate (GNUTLS_CERT_REQUEST: not
         * required, not verified by GnuTLS); http_job.c hands it to the authenticator */
        if (cfg->client_ca_pem && cfg->auth)
            opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)cfg->client_ca_pem};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    free(priorities);
    if (!h->d) {
        *err = fl_asprintf("cannot listen on %s (address in use, or TLS key/certificate rejected)", cfg->listen);
        http_free(h);
        return FL_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    metrics_init(h);
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
    atomic_store(&h->closing, true);
    /* quiescing hands the listening socket to us: close it, or the port stays bound */
    MHD_socket lsock = MHD_quiesce_daemon(h->d);
    /* MHD must not be stopped with a connection suspended: end every parked watch, let the
     * jobs (which resume theirs) finish, and the waits of partitioned routes end now */
    fl_http_loop_drain(h->loop);
    for (int i = 0; atomic_load(&h->pending) > 0; i++) {
        if (i == 100)
            fl_log(FL_LOG_WARN, "http", "stopping: waiting for %d requests to finish", atomic_load(&h->pending));
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(h->d);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    if (h->scrape_hooked)
        fl_metrics_remove_hook(scrape_http, h);
    http_free(h);
}
