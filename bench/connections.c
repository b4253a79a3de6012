/* connections.c - what many open connections cost the server (issue 47).
 *
 * One server, one run. Baseline: G GETs of one ConfigMap on one keep-alive connection of an
 * idle server (P50/P99), its thread count and RSS. Then W watches (default 10,000) on a
 * ConfigMap collection that nothing writes to, and I idle keep-alive connections (default
 * 2,000) that made one request each, all over TLS from this process (OpenSSL directly, a
 * few KiB a connection, so the client's own memory does not limit the count); once the
 * server reports the watches open (flotilla_watches), the same G GETs again, the
 * server's threads and RSS per connection. Last, one ConfigMap is created in the watched
 * namespace, and the time until every watch has received its ADDED event is measured.
 *
 * Targets: at most 64 server threads with all the connections open; the GETs' P99 at most
 * 5 ms meanwhile. The thread count is sampled all along the opening too (the highest is
 * printed).
 *
 * Usage: connections [--flotilla PATH] [--watches 10000] [--idle 2000] [--gets 2000]
 *                    [--dir PARENT] [--keep]
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <dirent.h>

#include "bench_common.h"

#define NS "conn-bench"
#define OPENERS 4

typedef struct conn {
    int fd;
    SSL *ssl;
    bool got;          /* the watch saw the new object */
} conn;

typedef struct opener {
    const fb_server *s;
    SSL_CTX *ctx;
    int port;
    conn *c;
    int from, to;
    const char *request;
    atomic_int *opened;
    atomic_int *failed;
} opener;

static int server_port(const fb_server *s)
{
    const char *colon = strrchr(s->url, ':');
    return colon ? atoi(colon + 1) : 0;
}

/* Connect, handshake, send req, read the answer's headers (and, for a response with a
 * length, its body). 0 or -1. */
static int open_one(opener *o, conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a))
        return -1;
    c->ssl = SSL_new(o->ctx);
    SSL_set_fd(c->ssl, c->fd);
    if (SSL_connect(c->ssl) != 1)
        return -1;
    if (SSL_write(c->ssl, o->request, (int)strlen(o->request)) <= 0)
        return -1;
    char buf[4096];
    size_t n = 0;
    while (n < sizeof buf - 1) {
        int r = SSL_read(c->ssl, buf + n, (int)(sizeof buf - 1 - n));
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        if (strncmp(buf, "HTTP/1.1 200", 12))
            return -1;
        const char *cl = strcasestr(buf, "Content-Length:");
        if (!cl || cl > end)
            return 0; /* a watch: chunked, the events come later */
        if (n >= (size_t)(end + 4 - buf) + (size_t)atol(cl + 15))
            return 0;
    }
    return -1;
}

static void *opener_main(void *arg)
{
    opener *o = arg;
    for (int i = o->from; i < o->to; i++) {
        if (open_one(o, &o->c[i]))
            atomic_fetch_add(o->failed, 1);
        else {
            fcntl(o->c[i].fd, F_SETFL, O_NONBLOCK);
            atomic_fetch_add(o->opened, 1);
        }
    }
    return NULL;
}

/* Open n connections with `request` on OPENERS threads; sample the server's threads while
 * waiting. Returns how many failed. */
static int open_all(const fb_server *s, SSL_CTX *ctx, conn *c, int n, const char *request, int *max_threads);

/* Entries of /proc/PID/<dir>: "task" counts threads, "fd" descriptors; -1 if unreadable. */
static int count_proc(pid_t pid, const char *dir)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int open_all(const fb_server *s, SSL_CTX *ctx, conn *c, int n, const char *request, int *max_threads)
{
    atomic_int opened = 0, failed = 0;
    opener o[OPENERS];
    pthread_t t[OPENERS];
    for (int i = 0; i < OPENERS; i++) {
        o[i] = (opener){s, ctx, server_port(s), c, n * i / OPENERS, n * (i + 1) / OPENERS, request, &opened, &failed};
        pthread_create(&t[i], NULL, opener_main, &o[i]);
    }
    while (atomic_load(&opened) + atomic_load(&failed) < n) {
        int th = count_proc(s->pid, "task");
        if (th > *max_threads)
            *max_threads = th;
        usleep(100 * 1000);
    }
    for (int i = 0; i < OPENERS; i++)
        pthread_join(t[i], NULL);
    return atomic_load(&failed);
}

/* G GETs of one object on one keep-alive handle: P50 and P99 in ms. */
static int gets(CURL *cu, const fb_server *s, int g, double *p50, double *p99)
{
    int64_t *lat = calloc((size_t)g, sizeof *lat);
    fb_buf out = {0};
    int bad = 0;
    for (int i = 0; i < g; i++) {
        int64_t t0 = fb_now_ns();
        long code = fb_request(cu, s, "GET", "/api/v1/namespaces/" NS "/configmaps/probe", NULL, 0, &out);
        lat[i] = fb_now_ns() - t0;
        bad += code != 200;
    }
    *p50 = fb_pct_ms(lat, (size_t)g, 50);
    *p99 = fb_pct_ms(lat, (size_t)g, 99);
    free(lat);
    free(out.p);
    return bad;
}

/* Read every watch until each has seen "wake" or timeout_s passes: how many did. */
static int await_event(conn *c, int n, int timeout_s)
{
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
    }
    int got = 0;
    int64_t deadline = fb_now_ns() + (int64_t)timeout_s * 1000000000;
    struct epoll_event evs[256];
    char buf[16384];
    while (got < n && fb_now_ns() < deadline) {
        int k = epoll_wait(ep, evs, 256, 200);
        for (int i = 0; i < k; i++) {
            conn *w = &c[evs[i].data.u32];
            int r;
            while ((r = SSL_read(w->ssl, buf, sizeof buf - 1)) > 0) {
                buf[r] = 0;
                if (!w->got && strstr(buf, "\"name\":\"wake\"")) {
                    w->got = true;
                    got++;
                }
            }
            if (r <= 0 && SSL_get_error(w->ssl, r) != SSL_ERROR_WANT_READ)
                epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
        }
    }
    close(ep);
    return got;
}

static void close_all(conn *c, int n)
{
    for (int i = 0; i < n; i++) {
        if (c[i].ssl)
            SSL_free(c[i].ssl);
        if (c[i].fd >= 0)
            close(c[i].fd);
    }
}

int main(int argc, char **argv)
{
    const char *flotilla = NULL, *parent = NULL;
    int nw = 10000, ni = 2000, g = 2000;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--flotilla") && i + 1 < argc)
            flotilla = argv[++i];
        else if (!strcmp(argv[i], "--watches") && i + 1 < argc)
            nw = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--idle") && i + 1 < argc)
            ni = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gets") && i + 1 < argc)
            g = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            parent = argv[++i];
        else if (!strcmp(argv[i], "--keep"))
            keep = true;
        else {
            fprintf(stderr, "usage: connections [--flotilla PATH] [--watches N] [--idle N] [--gets N] "
                            "[--dir PARENT] [--keep]\n");
            return 2;
        }
    }
    long nofile = fb_raise_nofile();
    if (nofile < nw + ni + 100)
        fprintf(stderr, "note: RLIMIT_NOFILE is %ld; %d connections may not all open\n", nofile, nw + ni);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *dir = fb_mkdtemp(parent, "fl-bench-conn-");
    fb_server s;
    if (fb_server_start(fb_flotilla_path(flotilla), dir, NULL, &s))
        return 1;
    struct curl_slist *h = fb_headers(&s);
    CURL *cu = fb_curl_new(&s, h);
    fb_buf out = {0};
    const char *nsj = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" NS "\"}}";
    const char *probe = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"probe\"},"
                        "\"data\":{\"k\":\"v\"}}";
    if (fb_request(cu, &s, "POST", "/api/v1/namespaces", nsj, strlen(nsj), &out) != 201 ||
        fb_request(cu, &s, "POST", "/api/v1/namespaces/" NS "/configmaps", probe, strlen(probe), &out) != 201 ||
        fb_request(cu, &s, "GET", "/api/v1/namespaces/" NS "/configmaps", NULL, 0, &out) != 200) {
        fprintf(stderr, "SERVER PROBLEM: setting up: %.300s\n", out.p ? out.p : "");
        return 1;
    }
    long long rv = fb_json_rv(out.p);
    double watches0 = fb_metric(&s, "flotilla_watches");

    /* baseline: an idle server */
    double b50, b99;
    int bad = gets(cu, &s, g, &b50, &b99);
    int th0 = count_proc(s.pid, "task");
    long rss0 = fb_proc_kib(s.pid, "VmRSS");
    int fds0 = count_proc(s.pid, "fd");

    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, s.ca, NULL);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    const char *token = s.auth + strlen("Authorization: Bearer ");
    char wreq[1024], ireq[1024];
    snprintf(wreq, sizeof wreq,
             "GET /api/v1/namespaces/" NS "/configmaps?watch=1&resourceVersion=%lld HTTP/1.1\r\nHost: x\r\n"
             "Authorization: Bearer %s\r\n\r\n", rv, token);
    snprintf(ireq, sizeof ireq, "GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token);
    conn *w = calloc((size_t)nw, sizeof *w), *idle = calloc((size_t)ni, sizeof *idle);
    for (int i = 0; i < nw; i++)
        w[i].fd = -1;
    for (int i = 0; i < ni; i++)
        idle[i].fd = -1;
    int max_threads = th0;
    int64_t t0 = fb_now_ns();
    int wfail = open_all(&s, ctx, w, nw, wreq, &max_threads);
    double open_s = (double)(fb_now_ns() - t0) / 1e9;
    int ifail = open_all(&s, ctx, idle, ni, ireq, &max_threads);
    for (int i = 0; i < 100 && fb_metric(&s, "flotilla_watches") < watches0 + nw - wfail; i++)
        usleep(100 * 1000);
    double watches1 = fb_metric(&s, "flotilla_watches");

    double l50, l99;
    bad += gets(cu, &s, g, &l50, &l99);
    int th1 = count_proc(s.pid, "task");
    long rss1 = fb_proc_kib(s.pid, "VmRSS");
    int fds1 = count_proc(s.pid, "fd");
    if (th1 > max_threads)
        max_threads = th1;

    const char *wake = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"wake\"}}";
    int64_t t1 = fb_now_ns();
    long code = fb_request(cu, &s, "POST", "/api/v1/namespaces/" NS "/configmaps", wake, strlen(wake), &out);
    int got = code == 201 ? await_event(w, nw - wfail, 60) : 0;
    double deliver_s = (double)(fb_now_ns() - t1) / 1e9;

    int nconn = nw + ni - wfail - ifail;
    printf("connections: %d watches (%d failed to open, %.1f s to open) + %d idle keep-alive (%d failed)\n", nw,
           wfail, open_s, ni, ifail);
    printf("%-34s %12s %12s\n", "", "idle server", "with them");
    printf("%-34s %12d %12d\n", "server threads", th0, th1);
    printf("%-34s %12s %12d\n", "server threads, highest seen", "", max_threads);
    printf("%-34s %12d %12d\n", "server descriptors", fds0, fds1);
    printf("%-34s %12.0f %12.0f\n", "open watches (gauge)", watches0, watches1);
    printf("%-34s %12.1f %12.1f\n", "server RSS (MiB)", rss0 / 1024.0, rss1 / 1024.0);
    printf("%-34s %12s %12.1f\n", "RSS per connection (KiB)", "", nconn ? (double)(rss1 - rss0) / nconn : 0);
    printf("%-34s %12.2f %12.2f\n", "GET P50 (ms)", b50, l50);
    printf("%-34s %12.2f %12.2f   ratio %.2f\n", "GET P99 (ms)", b99, l99, b99 > 0 ? l99 / b99 : 0);
    printf("event delivered to %d of %d watches in %.2f s\n", got, nw - wfail, deliver_s);
    printf("target: <= 64 threads with them open: %s; GET P99 <= 5 ms meanwhile: %s\n",
           max_threads <= 64 ? "met" : "NOT met", l99 <= 5 ? "met" : "NOT met");
    int rc = 0;
    if (bad || got != nw - wfail) {
        printf("SERVER PROBLEM: %d GETs failed; %d of %d watches got the event\n", bad, got, nw - wfail);
        rc = 1;
    }
    close_all(w, nw);
    close_all(idle, ni);
    free(w);
    free(idle);
    SSL_CTX_free(ctx);
    free(out.p);
    curl_easy_cleanup(cu);
    curl_slist_free_all(h);
    if (fb_server_stop(&s) != 0) {
        printf("SERVER PROBLEM: the server did not exit cleanly\n");
        rc = 1;
    }
    fb_scratch_done(dir, keep);
    free(dir);
    curl_global_cleanup();
    return rc;
}
