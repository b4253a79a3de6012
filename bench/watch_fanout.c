/* watch_fanout.c - watch event delivery latency with many concurrent watchers.
 *
 * Two rounds in one run against one server, each in its own fresh namespace:
 *   baseline: 1 watcher;  fan-out: W watchers (default 1,000).
 * In each round the watchers - W libcurl easy handles streaming chunked responses, driven
 * by one libcurl multi handle in one thread, as an informer-heavy client would - watch
 * ConfigMaps in the namespace from the namespace's creation revision (the multi handle is
 * driven by epoll and curl_multi_socket_action, so a wakeup costs only the sockets with data). Once the server
 * reports every watch open (the flotilla_watches gauge on /metrics), one writer creates
 * M ConfigMaps at a steady pace, noting the monotonic time just before each POST starts
 * (`sent`) and when its 201 arrives (`ack`). The watcher thread notes when each watcher
 * receives the ADDED event for each object (the object's name carries its sequence
 * number). Latency is receive time - send start, which includes the durable commit; the
 * writer's own create latency is printed beside it. Events delivered vs expected must be
 * W x M, each exactly once and in order per watcher.
 *
 * Both clocks are this process's CLOCK_MONOTONIC, so no cross-process clock skew enters.
 * The single receiving thread shares the 2 cores with the server; its own parsing time is
 * part of the figure (it only scans each line for the type and the name).
 *
 * --etcd (issue 40): the fan-out over replicas. A 3-member etcd cluster (fb_etcd_start) and
 * two servers on it (the second with a copy of the first's pki/); the W watchers alternate
 * between the two replicas, the writer writes to replica 1. Baseline in the same run: the same
 * W watchers on one server on SQLite (the 1-watcher round is left out). Printed beside the
 * figures: P99 per replica, and both replicas' CPU.
 *
 * Usage: watch_fanout [--flotilla PATH] [--watchers 1000] [--objects 200] [--rate 20]
 *                     [--size BYTES] [--dir PARENT] [--http] [--keep] [--etcd]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bench_common.h"

typedef struct round_state round_state;

typedef struct watcher {
    round_state *rs;
    int idx;
    CURL *c;
    char *line;          /* bytes of an unfinished event line */
    size_t n, cap;
    int last_seq;        /* for the ordering check */
    bool ended;          /* the server ended the stream */
    bool open;           /* response headers seen: the server has registered the watch */
    long code;
} watcher;

struct round_state {
    const fb_server *s;
    const fb_server *s2; /* --etcd: the second replica, for the odd watchers; else NULL */
    const char *ns;
    int nwatchers, nobjects;
    long long from_rv;
    watcher *w;
    struct curl_slist *hdrs;
    int64_t *recv;       /* nwatchers x nobjects receive times, 0 = not received */
    int64_t *sent, *ack;
    atomic_int stop;
    atomic_long delivered; /* slots filled, read by the writer to stop waiting early */
    atomic_int opened;     /* watches answered 200 with their headers */
    /* counted by the receiver thread only */
    long duplicates, out_of_order, unexpected, errors_ev, ended_early, bad_lines;
    char first_problem[512];
};

static void problem(round_state *rs, const char *fmt, const char *detail)
{
    if (!rs->first_problem[0])
        snprintf(rs->first_problem, sizeof rs->first_problem, fmt, detail);
}

/* One complete event line from watcher w, received at time `now`. */
static void on_line(watcher *w, const char *line, size_t len, int64_t now)
{
    round_state *rs = w->rs;
    (void)len;
    if (!strncmp(line, "{\"type\":\"ADDED\"", 15)) {
        const char *nm = strstr(line, "\"name\":\"obj-");
        if (!nm) {
            rs->bad_lines++;
            problem(rs, "ADDED event without an obj- name: %.200s", line);
            return;
        }
        int seq = atoi(nm + strlen("\"name\":\"obj-"));
        if (seq < 0 || seq >= rs->nobjects) {
            rs->bad_lines++;
            return;
        }
        int64_t *slot = &rs->recv[(size_t)w->idx * (size_t)rs->nobjects + (size_t)seq];
        if (*slot)
            rs->duplicates++;
        else {
            *slot = now;
            atomic_fetch_add(&rs->delivered, 1);
        }
        if (seq <= w->last_seq)
            rs->out_of_order++;
        w->last_seq = seq;
    } else if (!strncmp(line, "{\"type\":\"BOOKMARK\"", 18)) {
        /* progress notifications: fine */
    } else if (!strncmp(line, "{\"type\":\"ERROR\"", 15)) {
        rs->errors_ev++;
        problem(rs, "ERROR event: %.300s", line);
    } else {
        rs->unexpected++;
        problem(rs, "unexpected event: %.300s", line);
    }
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    watcher *w = userdata;
    size_t len = size * nmemb;
    int64_t now = fb_now_ns();
    if (w->n + len + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 8192;
        while (cap < w->n + len + 1)
            cap *= 2;
        w->line = realloc(w->line, cap);
        if (!w->line)
            abort();
        w->cap = cap;
    }
    memcpy(w->line + w->n, ptr, len);
    w->n += len;
    w->line[w->n] = 0;
    size_t start = 0;
    char *nl;
    while ((nl = memchr(w->line + start, '\n', w->n - start)) != NULL) {
        *nl = 0;
        if (nl > w->line + start)
            on_line(w, w->line + start, (size_t)(nl - (w->line + start)), now);
        start = (size_t)(nl - w->line) + 1;
    }
    if (start) {
        memmove(w->line, w->line + start, w->n - start);
        w->n -= start;
    }
    return len;
}

/* Header lines of a watch response: the empty line ends them. The server sends the headers
 * only after it has registered the watch in the store, so from then on no event is lost. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    watcher *w = userdata;
    size_t len = size * nmemb;
    if ((len == 2 && ptr[0] == '\r') || (len == 1 && ptr[0] == '\n')) {
        curl_easy_getinfo(w->c, CURLINFO_RESPONSE_CODE, &w->code);
        if (w->code == 200 && !w->open) {
            w->open = true;
            atomic_fetch_add(&w->rs->opened, 1);
        } else if (w->code != 200) {
            char d[32];
            snprintf(d, sizeof d, "%ld", w->code);
            problem(w->rs, "a watch was answered HTTP %s", d);
        }
    }
    return len;
}

/* libcurl tells us which sockets to watch for what; we keep them in an epoll set so each
 * wakeup touches only the watchers that have data (curl_multi_perform would walk all of
 * them every time). */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    int ep = *(int *)userp;
    struct epoll_event ev = {.data.fd = fd};
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) != 0)
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    *(long *)userp = timeout_ms;
    return 0;
}

static void drain_done(round_state *rs, CURLM *m)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        watcher *w = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &w->code);
        w->ended = true;
        rs->ended_early++;
        char d[200];
        snprintf(d, sizeof d, "HTTP %ld, %s, last bytes: %.80s", w->code, curl_easy_strerror(msg->data.result),
                 w->line ? w->line : "");
        problem(rs, "a watch stream ended before the round did: %s", d);
    }
}

/* The receiving thread: every watch of the round in one multi handle, event driven. */
static void *receiver_main(void *arg)
{
    round_state *rs = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    long timer_ms = -1;
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(m, CURLMOPT_SOCKETDATA, &ep);
    curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(m, CURLMOPT_TIMERDATA, &timer_ms);
    char url[2][512];
    for (int k = 0; k < 2; k++)
        snprintf(url[k], sizeof url[k],
                 "%s/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%lld&allowWatchBookmarks=true"
                 "&timeoutSeconds=1800",
                 (k && rs->s2 ? rs->s2 : rs->s)->url, rs->ns, rs->from_rv);
    for (int i = 0; i < rs->nwatchers; i++) {
        watcher *w = &rs->w[i];
        w->c = fb_curl_new(rs->s, rs->hdrs); /* the replicas share pki/: one CA, one token */
        curl_easy_setopt(w->c, CURLOPT_URL, url[i % 2]);
        curl_easy_setopt(w->c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(w->c, CURLOPT_WRITEDATA, w);
        curl_easy_setopt(w->c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(w->c, CURLOPT_HEADERDATA, w);
        curl_easy_setopt(w->c, CURLOPT_PRIVATE, w);
        curl_easy_setopt(w->c, CURLOPT_CONNECTTIMEOUT, 60L);
        curl_multi_add_handle(m, w->c);
    }
    int running = 0;
    struct epoll_event evs[256];
    while (!atomic_load(&rs->stop)) {
        /* at most 50 ms per wait, so `stop` is noticed */
        int wait = timer_ms < 0 || timer_ms > 50 ? 50 : (int)timer_ms;
        int n = epoll_wait(ep, evs, 256, wait);
        if (n <= 0) {
            curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, &running);
        } else {
            for (int i = 0; i < n; i++) {
                int flags = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                            (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                            (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
                curl_multi_socket_action(m, evs[i].data.fd, flags, &running);
            }
            if (timer_ms == 0)
                curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        drain_done(rs, m);
    }
    for (int i = 0; i < rs->nwatchers; i++) {
        curl_multi_remove_handle(m, rs->w[i].c);
        curl_easy_cleanup(rs->w[i].c);
        free(rs->w[i].line);
    }
    curl_multi_cleanup(m);
    close(ep);
    return NULL;
}

typedef struct round_result {
    int watchers, objects;
    long delivered, expected;
    double p50, p99, max;          /* receive - send start */
    double ack_p50, ack_p99;       /* receive - ack (negative: before the writer saw its 201) */
    double create_p50, create_p99; /* the writer's own POST latency */
    double rate;                   /* achieved writes/s */
    double server_cores;           /* server CPU seconds per second while writing and delivering */
    double p99_r[2];               /* --etcd: p99 of the watchers on replica 1 and on replica 2 */
    const char *where;             /* "sqlite", "etcd, 2 replicas" */
    double receiver_busy;          /* the same for this process's receiving thread */
    bool ok;
} round_result;

static long long create_namespace(CURL *c, const fb_server *s, const char *ns)
{
    char body[256];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    fb_buf out = {0};
    long code = fb_request(c, s, "POST", "/api/v1/namespaces", body, strlen(body), &out);
    long long rv = code == 201 ? fb_json_rv(out.p) : -1;
    if (rv < 0)
        fprintf(stderr, "SERVER PROBLEM: creating namespace %s: HTTP %ld %s\n", ns, code, out.p ? out.p : "");
    free(out.p);
    return rv;
}

static round_result run_round(const fb_server *s, const fb_server *s2, const char *ns, int nwatchers, int nobjects,
                              double rate, size_t size)
{
    round_result rr = {.watchers = nwatchers, .objects = nobjects, .where = s2 ? "etcd, 2 replicas" : "one server"};
    round_state rs;
    memset(&rs, 0, sizeof rs);
    rs.s = s;
    rs.s2 = s2;
    rs.ns = ns;
    rs.nwatchers = nwatchers;
    rs.nobjects = nobjects;
    rs.hdrs = fb_headers(s);
    rs.w = calloc((size_t)nwatchers, sizeof *rs.w);
    for (int i = 0; i < nwatchers; i++)
        rs.w[i] = (watcher){.rs = &rs, .idx = i, .last_seq = -1};
    rs.recv = calloc((size_t)nwatchers * (size_t)nobjects, sizeof *rs.recv);
    rs.sent = calloc((size_t)nobjects, sizeof *rs.sent);
    rs.ack = calloc((size_t)nobjects, sizeof *rs.ack);
    if (!rs.w || !rs.recv || !rs.sent || !rs.ack)
        abort();

    CURL *wc = fb_curl_new(s, rs.hdrs);
    rs.from_rv = create_namespace(wc, s, ns);
    if (rs.from_rv < 0)
        exit(1);
    printf("\n== %d watcher%s%s, %d objects at %.0f/s, namespace %s ==\n", nwatchers, nwatchers == 1 ? "" : "s",
           s2 ? " over 2 replicas on etcd (odd ones on replica 2), writes to replica 1" : "", nobjects, rate, ns);
    fflush(stdout);
    int64_t t_open = fb_now_ns();
    pthread_t rth;
    pthread_create(&rth, NULL, receiver_main, &rs);

    /* wait until every watch is answered (bounded) */
    int64_t deadline = fb_now_ns() + 120LL * 1000000000LL;
    while (fb_now_ns() < deadline && atomic_load(&rs.opened) < nwatchers && !atomic_load(&rs.stop))
        usleep(20000);
    int opened = atomic_load(&rs.opened);
    double gauge = fb_metric(s, "flotilla_watches") + (s2 ? fb_metric(s2, "flotilla_watches") : 0);
    printf("  %d watches open after %.2f s (server's flotilla_watches gauge: %s%.0f)\n", opened,
           (double)(fb_now_ns() - t_open) / 1e9, gauge < 0 ? "unavailable, " : "", gauge);
    if (opened < nwatchers)
        printf("  SERVER PROBLEM: only %d of %d watches answered within 120 s; measuring anyway\n", opened,
               nwatchers);
    usleep(200000);

    /* the writer: M creates at a steady pace */
    char *body = malloc(size + 512);
    fb_buf out = {0};
    int create_errors = 0;
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
    int64_t period = (int64_t)(1e9 / rate);
    double srv_cpu0 = fb_proc_cpu_s(s->pid) + (s2 ? fb_proc_cpu_s(s2->pid) : 0), rcv_cpu0 = fb_thread_cpu_s(rth);
    int64_t t0 = fb_now_ns() + 10000000;
    for (int i = 0; i < nobjects; i++) {
        fb_sleep_until(t0 + i * period);
        int n = snprintf(body, size + 512,
                         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"obj-%06d\"},"
                         "\"data\":{\"payload\":\"",
                         i);
        memset(body + n, 'a' + i % 26, size);
        n += (int)size;
        n += snprintf(body + n, 8, "\"}}");
        rs.sent[i] = fb_now_ns();
        long code = fb_request(wc, s, "POST", path, body, (size_t)n, &out);
        rs.ack[i] = fb_now_ns();
        if (code != 201 && create_errors++ == 0)
            printf("  SERVER PROBLEM: create obj-%06d: HTTP %ld %.300s\n", i, code, out.p ? out.p : "");
    }
    int64_t t_last = fb_now_ns();
    rr.rate = nobjects / ((double)(t_last - t0) / 1e9);

    /* wait for delivery to complete: every slot filled, or 15 s after the last write */
    size_t total = (size_t)nwatchers * (size_t)nobjects;
    deadline = t_last + 15LL * 1000000000LL;
    while ((size_t)atomic_load(&rs.delivered) < total && fb_now_ns() < deadline)
        usleep(20000);
    int64_t t_end = fb_now_ns();
    double srv_cpu = fb_proc_cpu_s(s->pid) + (s2 ? fb_proc_cpu_s(s2->pid) : 0) - srv_cpu0,
           rcv_cpu = fb_thread_cpu_s(rth) - rcv_cpu0;
    double window = (double)(t_end - t0) / 1e9;
    rr.server_cores = srv_cpu / window;
    rr.receiver_busy = rcv_cpu / window;
    atomic_store(&rs.stop, 1);
    pthread_join(rth, NULL);

    /* statistics */
    int64_t *lat = malloc(total * sizeof *lat), *alat = malloc(total * sizeof *alat);
    size_t nl = 0;
    for (int w = 0; w < nwatchers; w++)
        for (int i = 0; i < nobjects; i++) {
            int64_t r = rs.recv[(size_t)w * (size_t)nobjects + (size_t)i];
            if (!r)
                continue;
            lat[nl] = r - rs.sent[i];
            alat[nl] = r - rs.ack[i];
            nl++;
        }
    rr.delivered = (long)nl;
    rr.expected = (long)total;
    rr.p50 = fb_pct_ms(lat, nl, 50);
    rr.p99 = fb_pct_sorted_ms(lat, nl, 99);
    rr.max = fb_pct_sorted_ms(lat, nl, 100);
    rr.ack_p50 = fb_pct_ms(alat, nl, 50);
    rr.ack_p99 = fb_pct_sorted_ms(alat, nl, 99);
    for (int k = 0; s2 && k < 2; k++) { /* per replica: watchers k, k+2, ... */
        size_t m = 0;
        for (int w = k; w < nwatchers; w += 2)
            for (int i = 0; i < nobjects; i++) {
                int64_t r = rs.recv[(size_t)w * (size_t)nobjects + (size_t)i];
                if (r)
                    alat[m++] = r - rs.sent[i];
            }
        rr.p99_r[k] = fb_pct_ms(alat, m, 99);
    }
    int64_t *cl = malloc((size_t)nobjects * sizeof *cl);
    for (int i = 0; i < nobjects; i++)
        cl[i] = rs.ack[i] - rs.sent[i];
    rr.create_p50 = fb_pct_ms(cl, (size_t)nobjects, 50);
    rr.create_p99 = fb_pct_sorted_ms(cl, (size_t)nobjects, 99);
    rr.ok = nl == total && !rs.duplicates && !rs.out_of_order && !rs.errors_ev && !rs.unexpected && !create_errors &&
            !rs.ended_early && !rs.bad_lines;

    printf("  writer: %d creates at %.1f/s achieved, create p50 %.2f ms p99 %.2f ms, errors %d\n", nobjects, rr.rate,
           rr.create_p50, rr.create_p99, create_errors);
    printf("  delivered %ld of %ld events (%s); duplicates %ld, out of order %ld, ERROR events %ld,"
           " unexpected %ld, streams ended early %ld\n",
           rr.delivered, rr.expected, rr.delivered == rr.expected ? "all" : "MISSING SOME", rs.duplicates,
           rs.out_of_order, rs.errors_ev, rs.unexpected, rs.ended_early);
    printf("  delivery latency (receive - send start): p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", rr.p50, rr.p99,
           rr.max);
    printf("  delivery latency (receive - writer's 201): p50 %.2f ms  p99 %.2f ms\n", rr.ack_p50, rr.ack_p99);
    if (s2)
        printf("  p99 (receive - send start) of the watchers on replica 1: %.2f ms, on replica 2: %.2f ms\n",
               rr.p99_r[0], rr.p99_r[1]);
    /* does latency build up over the run (a backlog) or stay level (per-event cost)? */
    printf("  p99 by tenth of the writes (ms):");
    for (int d = 0; d < 10; d++) {
        int lo = nobjects * d / 10, hi = nobjects * (d + 1) / 10;
        size_t m = 0;
        for (int w = 0; w < nwatchers; w++)
            for (int i = lo; i < hi; i++) {
                int64_t r = rs.recv[(size_t)w * (size_t)nobjects + (size_t)i];
                if (r)
                    lat[m++] = r - rs.sent[i];
            }
        printf(" %.0f", fb_pct_ms(lat, m, 99));
    }
    printf("\n");
    printf("  CPU while writing and delivering: server%s %.2f cores, receiving thread %.0f%% busy (of 2 cores shared)\n",
           s2 ? "s (both replicas)" : "", rr.server_cores, 100 * rr.receiver_busy);
    if (!rr.ok) {
        printf("  SERVER PROBLEM: watch delivery was not complete and exact in this round%s%s\n",
               rs.first_problem[0] ? "; first: " : "", rs.first_problem);
        if (rr.delivered < rr.expected) {
            /* which watchers lost what: the first few */
            int shown = 0;
            for (int w = 0; w < nwatchers && shown < 5; w++) {
                int miss = 0, first = -1;
                for (int i = 0; i < nobjects; i++)
                    if (!rs.recv[(size_t)w * (size_t)nobjects + (size_t)i]) {
                        miss++;
                        if (first < 0)
                            first = i;
                    }
                if (miss) {
                    printf("    watcher %d missed %d events, first obj-%06d (HTTP %ld, stream %s)\n", w, miss,
                           first, rs.w[w].code, rs.w[w].ended ? "ended" : "open");
                    shown++;
                }
            }
        }
    }
    fflush(stdout);
    free(lat);
    free(alat);
    free(cl);
    free(body);
    free(out.p);
    curl_easy_cleanup(wc);
    curl_slist_free_all(rs.hdrs);
    free(rs.w);
    free(rs.recv);
    free(rs.sent);
    free(rs.ack);
    return rr;
}

static void usage(void)
{
    fprintf(stderr, "usage: watch_fanout [--flotilla PATH] [--watchers 1000] [--objects 200] [--rate 20]\n"
                    "                    [--size BYTES] [--dir PARENT] [--http] [--keep] [--etcd]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *flotilla_arg = NULL, *parent = NULL;
    int nwatchers = 1000, nobjects = 200;
    double rate = 20;
    size_t size = 1024;
    bool http = false, keep = false, etcd = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool hv = i + 1 < argc;
        if (!strcmp(a, "--flotilla") && hv)
            flotilla_arg = argv[++i];
        else if (!strcmp(a, "--watchers") && hv)
            nwatchers = atoi(argv[++i]);
        else if (!strcmp(a, "--objects") && hv)
            nobjects = atoi(argv[++i]);
        else if (!strcmp(a, "--rate") && hv)
            rate = atof(argv[++i]);
        else if (!strcmp(a, "--size") && hv)
            size = (size_t)atol(argv[++i]);
        else if (!strcmp(a, "--dir") && hv)
            parent = argv[++i];
        else if (!strcmp(a, "--http"))
            http = true;
        else if (!strcmp(a, "--keep"))
            keep = true;
        else if (!strcmp(a, "--etcd"))
            etcd = true;
        else
            usage();
    }
    if (nwatchers <= 0 || nobjects <= 0 || rate <= 0 || nobjects > 1000000 ||
        (double)nwatchers * nobjects > 5e7)
        usage();
    long nofile = fb_raise_nofile();
    if (nofile < nwatchers + 64) {
        fprintf(stderr, "watch_fanout: RLIMIT_NOFILE is %ld, need at least %d; raise the hard limit\n", nofile,
                nwatchers + 64);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *dir = fb_mkdtemp(parent, "fl-bench-watch");
    const char *extra[2] = {http ? "--insecure-http" : NULL, NULL};
    fb_server s, r2 = {0};
    fb_etcd cl = {0};
    round_result base = {0}, fan = {0};
    bool alive;
    char load[96];
    if (etcd) {
        /* the baseline first: W watchers on one server on SQLite, stopped before etcd starts */
        char d[700];
        snprintf(d, sizeof d, "%s/sqlite", dir);
        if (fb_server_start(flotilla, d, extra, &s))
            return 1;
        printf("watch_fanout --etcd: %s, %zu B payload, RLIMIT_NOFILE %ld, data in %s, %s\n", flotilla, size, nofile,
               dir, fb_loadavg(load, sizeof load));
        printf("baseline: server on SQLite %s\n", s.url);
        base = run_round(&s, NULL, "watch-sqlite", nwatchers, nobjects, rate, size);
        base.where = "SQLite, 1 server";
        if (fb_server_stop(&s) != 0)
            base.ok = false;
        snprintf(d, sizeof d, "%s/etcd", dir);
        if (fb_etcd_start(d, 3, &cl))
            return 1;
        const char *x[] = {"--etcd-servers", cl.endpoints, "--etcd-prefix", "/bench-watch", extra[0], NULL};
        char d1[700], d2[700];
        snprintf(d1, sizeof d1, "%s/replica-1", dir);
        snprintf(d2, sizeof d2, "%s/replica-2", dir);
        if (fb_server_start(flotilla, d1, x, &s) || fb_share_pki(d1, d2) || fb_server_start(flotilla, d2, x, &r2)) {
            fb_server_stop(&s);
            fb_etcd_stop(&cl);
            return 1;
        }
        printf("etcd %s; replica 1 %s, replica 2 %s\n", cl.endpoints, s.url, r2.url);
        char ns[64];
        snprintf(ns, sizeof ns, "watch-etcd-%d", nwatchers);
        fan = run_round(&s, &r2, ns, nwatchers, nobjects, rate, size);
        alive = fb_server_alive(&s) && fb_server_alive(&r2);
    } else {
        if (fb_server_start(flotilla, dir, extra, &s))
            return 1;
        printf("watch_fanout: %s, server %s, %zu B payload, RLIMIT_NOFILE %ld, data in %s\n", flotilla, s.url, size,
               nofile, dir);
        base = run_round(&s, NULL, "watch-baseline", 1, nobjects, rate, size);
        alive = fb_server_alive(&s);
        if (alive) {
            char ns[64];
            snprintf(ns, sizeof ns, "watch-fanout-%d", nwatchers);
            fan = run_round(&s, NULL, ns, nwatchers, nobjects, rate, size);
            alive = fb_server_alive(&s);
        }
    }
    if (!alive)
        printf("SERVER PROBLEM: the server died during the run\n");
    long rss = fb_proc_kib(s.pid, "VmRSS");

    printf("\nSummary (%s, %d objects at %.0f/s, %zu B payload, %s)\n", http ? "HTTP" : "HTTPS", nobjects, rate, size,
           fb_loadavg(load, sizeof load));
    printf("| store | watchers | delivered / expected | p50 ms | p99 ms | max ms | p99 from 201 ms | writer create p99 ms |"
           " server CPU cores | receiver thread busy |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    round_result *rr[2] = {&base, &fan};
    for (int k = 0; k < 2; k++)
        printf("| %s | %d | %ld / %ld | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f%% |\n", rr[k]->where,
               rr[k]->watchers, rr[k]->delivered, rr[k]->expected, rr[k]->p50, rr[k]->p99, rr[k]->max, rr[k]->ack_p99,
               rr[k]->create_p99, rr[k]->server_cores, 100 * rr[k]->receiver_busy);
    if (base.p99 > 0)
        printf("ratio p99 %s / %s: %.1fx; p50: %.1fx\n", etcd ? "etcd, 2 replicas" : "W watchers",
               etcd ? "SQLite" : "1 watcher", fan.p99 / base.p99, base.p50 > 0 ? fan.p50 / base.p50 : 0);
    if (rss > 0)
        printf("server RSS at the end: %.1f MiB\n", rss / 1024.0);
    printf("target delivery P99 <= 50 ms at %d watchers%s: %.2f ms from the POST (%.2f ms from its 201) -> %s; all events "
           "delivered: %s\n",
           nwatchers, etcd ? " over 2 replicas" : "", fan.p99, fan.ack_p99, fan.p99 <= 50 ? "met" : "NOT met",
           fan.ok && base.ok ? "yes" : "NO");
    if (etcd && fb_server_stop(&r2) != 0)
        fan.ok = false;
    int st = fb_server_stop(&s);
    if (etcd)
        fb_etcd_stop(&cl);
    fb_scratch_done(dir, keep);
    free(dir);
    curl_global_cleanup();
    return (fan.ok && base.ok && st == 0) ? 0 : 1;
}
