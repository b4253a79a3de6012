/* etcd_writes.c - create rate and latency through Flotilla on etcd against the same creates
 * sent straight to etcd (issue 40's first benchmark).
 *
 * One run starts a 3-member etcd cluster (fb_etcd_start: loopback, plain HTTP, its own data
 * directories, fsync per commit), a `flotilla server --etcd-servers` on it (prefix
 * /bench-writes) and, for reference, a `flotilla server` on its SQLite store. For each client
 * count K (--clients 1,8,32) three paths create N ConfigMaps each (1 KiB payload), K threads
 * with one keep-alive connection apiece (made, and TLS shaken hands, before the clock):
 *
 *   flotilla/etcd    POST /api/v1/namespaces/default/configmaps over HTTPS with the admin token
 *   direct etcd      POST /v3/kv/txn to etcd's JSON gateway over HTTP: compare the key's
 *                    create_revision == 0, put; otherwise range the key (the transaction
 *                    Flotilla sends, minus its fence). The value is the object exactly as
 *                    Flotilla answered its create of the same name, laid out as Flotilla keeps
 *                    it in etcd (store_etcd_write.c: "FL1 <offset>\n" and the JSON without the
 *                    resourceVersion's digits), under /bench-direct/configmaps/default/NAME.
 *   flotilla/sqlite  as flotilla/etcd, against the SQLite server (fsync per group commit)
 *   flotilla/etcd B  with --compare PATH only: as flotilla/etcd, against a second server on the
 *                    same etcd (prefix /bench-writes-b) run from another binary, so that two
 *                    builds are measured in one run, through the same spells of the machine
 *
 * Both etcd paths talk to the first member, as Flotilla's client starts there. Durability is
 * the same (etcd fsyncs its WAL per raft batch either way). The paths run interleaved in
 * --slices slices (each slice: N/slices objects per path, the order rotating), so each sees
 * the same spells of the shared machine. Per path: creates/s over the summed wall time of its
 * slices, P50/P99/max per request. Ratio flotilla/etcd over direct; target >= 0.8x at 8 and
 * 32 clients. Also printed per K, to tell where the rest goes: Flotilla's mean request time
 * beside its store's mean write time (flotilla_store_write_duration_seconds: the gap is time
 * spent before a request worker took it), its CPU, and etcd's own watch delay (a watch on the
 * direct path's keys through the same gateway: event received - txn answered), which is what
 * Flotilla's write waits for after its txn.
 *
 * Usage: etcd_writes [--clients 1,8,32] [--objects 1200] [--slices 4] [--size 1024]
 *                    [--flotilla PATH] [--compare PATH] [--dir PARENT] [--http] [--keep] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

#define MAX_K 8
enum { P_ETCD, P_DIRECT, P_SQLITE, P_ETCD_B, NPATH };
static const char *const PATH_NAME[NPATH] = {"flotilla/etcd", "direct etcd", "flotilla/sqlite", "flotilla/etcd B"};

static int problems;
static bool with_sqlite = true, with_b; /* the paths this run measures beside the two first */

static bool path_used(int p)
{
    return (p != P_SQLITE || with_sqlite) && (p != P_ETCD_B || with_b);
}

/* One path's endpoint: a Flotilla server, or an etcd member's gateway (srv.url only). */
typedef struct path {
    fb_server srv;
    bool direct;
    CURL *h[64]; /* one keep-alive handle per client thread */
    struct curl_slist *hdrs;
} path;

/* One slice of one path: objects [lo, hi) on k threads. */
typedef struct slice {
    path *p;
    int k, lo, hi;
    char **bodies;     /* request bodies, by object index */
    size_t *lens;
    char **resp;       /* flotilla paths: each 201's body, kept for the direct path */
    int64_t *lat;      /* by object index */
    int64_t *ack, *rev; /* direct path: when each txn was answered and the revision it got */
    atomic_int next;
    atomic_int errors;
} slice;

typedef struct worker {
    slice *sl;
    int t;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    slice *sl = w->sl;
    CURL *c = sl->p->h[w->t];
    fb_buf out = {0};
    const char *where = sl->p->direct ? "/v3/kv/txn" : "/api/v1/namespaces/default/configmaps";
    for (int i; (i = sl->lo + atomic_fetch_add(&sl->next, 1)) < sl->hi;) {
        int64_t t0 = fb_now_ns();
        long code = fb_request(c, &sl->p->srv, "POST", where, sl->bodies[i], sl->lens[i], &out);
        sl->lat[i] = fb_now_ns() - t0;
        bool ok = sl->p->direct ? code == 200 && out.p && strstr(out.p, "\"succeeded\":true") : code == 201;
        if (!ok) {
            if (atomic_fetch_add(&sl->errors, 1) < 3)
                fprintf(stderr, "SERVER PROBLEM: %s create %d: HTTP %ld %.300s\n",
                        sl->p->direct ? "direct etcd" : sl->p->srv.url, i, code, out.p ? out.p : "");
            continue;
        }
        if (sl->resp)
            sl->resp[i] = strndup(out.p, out.n);
        if (sl->rev) {
            const char *r = strstr(out.p, "\"revision\":\"");
            sl->rev[i] = r ? strtoll(r + 12, NULL, 10) : 0;
            sl->ack[i] = t0 + sl->lat[i];
        }
    }
    free(out.p);
    return NULL;
}

/* Run one slice; returns its wall seconds. */
static double run_slice(slice *sl)
{
    worker w[64];
    pthread_t th[64];
    atomic_init(&sl->next, 0);
    int64_t t0 = fb_now_ns();
    for (int t = 0; t < sl->k; t++) {
        w[t] = (worker){sl, t};
        pthread_create(&th[t], NULL, worker_main, &w[t]);
    }
    for (int t = 0; t < sl->k; t++)
        pthread_join(th[t], NULL);
    return fb_since_s(t0);
}

static void b64_into(fb_buf *b, const char *s, size_t n)
{
    char *e = fb_b64(s, n);
    fb_bprintf(b, "%s", e);
    free(e);
}

/* The txn the direct path sends for object `name` whose Flotilla answer was `json`: the value
 * as Flotilla's etcd backend stores it (the resourceVersion's digits cut out, their offset in
 * a header line). Heap; *len its length. */
static char *direct_txn(const char *name, const char *json, size_t *len)
{
    fb_buf v = {0}, key = {0}, b = {0};
    const char *rv = strstr(json, "\"resourceVersion\":\"");
    if (rv) {
        size_t off = (size_t)(rv - json) + strlen("\"resourceVersion\":\"");
        size_t digits = strspn(json + off, "0123456789");
        fb_bprintf(&v, "FL1 %zu\n%.*s%s", off, (int)off, json, json + off + digits);
    } else {
        fb_bprintf(&v, "FL1 -\n%s", json);
    }
    fb_bprintf(&key, "/bench-direct/configmaps/default/%s", name);
    fb_bprintf(&b, "{\"compare\":[{\"key\":\"");
    b64_into(&b, key.p, key.n);
    fb_bprintf(&b, "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
                   "\"success\":[{\"request_put\":{\"key\":\"");
    b64_into(&b, key.p, key.n);
    fb_bprintf(&b, "\",\"value\":\"");
    b64_into(&b, v.p, v.n);
    fb_bprintf(&b, "\"}}],\"failure\":[{\"request_range\":{\"key\":\"");
    b64_into(&b, key.p, key.n);
    fb_bprintf(&b, "\"}}]}");
    free(v.p);
    free(key.p);
    *len = b.n;
    return b.p;
}

/* ---- etcd's own watch delay: a watch on the direct path's keys through the same gateway ----
 * What Flotilla's write waits for beyond its txn is its own watch bringing the write back
 * (store_etcd_write.c). This stream times, per revision, when etcd's gateway delivered it. */
typedef struct ewatch {
    fb_server m;
    pthread_t th;
    atomic_bool stop;
    pthread_mutex_t mu;
    int64_t *rev, *at;
    size_t n, cap;
    fb_buf line;
} ewatch;

static size_t ewatch_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ewatch *w = ud;
    int64_t now = fb_now_ns();
    fb_buf_write(ptr, size, nmemb, &w->line);
    pthread_mutex_lock(&w->mu);
    for (const char *p = w->line.p; (p = strstr(p, "\"mod_revision\":\"")); p++) {
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            w->rev = realloc(w->rev, w->cap * sizeof *w->rev);
            w->at = realloc(w->at, w->cap * sizeof *w->at);
            if (!w->rev || !w->at)
                abort();
        }
        w->rev[w->n] = strtoll(p + 16, NULL, 10);
        w->at[w->n++] = now;
    }
    pthread_mutex_unlock(&w->mu);
    /* keep only an unfinished tail (a key may straddle two chunks) */
    const char *nl = strrchr(w->line.p, '\n');
    if (nl) {
        size_t rest = w->line.n - (size_t)(nl + 1 - w->line.p);
        memmove(w->line.p, nl + 1, rest + 1);
        w->line.n = rest;
    }
    return size * nmemb * (atomic_load(&w->stop) ? 0 : 1);
}

static void *ewatch_main(void *arg)
{
    ewatch *w = arg;
    struct curl_slist *h = fb_headers(&w->m);
    CURL *c = fb_curl_new(&w->m, h);
    char url[300], body[300];
    snprintf(url, sizeof url, "%s/v3/watch", w->m.url);
    char *k = fb_b64("/bench-direct/", 14), *end = fb_b64("/bench-direct0", 14);
    snprintf(body, sizeof body, "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\"}}", k, end);
    free(k);
    free(end);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ewatch_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    curl_easy_perform(c); /* until ewatch_data refuses the bytes after stop */
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return NULL;
}

/* Delivery delays (event - txn answer) of objects [0, n) into out; how many matched. */
static size_t ewatch_delays(ewatch *w, const int64_t *rev, const int64_t *ack, int n, int64_t *out)
{
    size_t m = 0;
    pthread_mutex_lock(&w->mu);
    /* revisions arrive in order: walk both by revision */
    for (int i = 0; i < n; i++) {
        size_t lo = 0, hi = w->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (w->rev[mid] < rev[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (rev[i] && lo < w->n && w->rev[lo] == rev[i])
            out[m++] = w->at[lo] - ack[i];
    }
    pthread_mutex_unlock(&w->mu);
    return m;
}

/* Make k warm keep-alive handles on p (a request each, so connections and TLS are up). */
static int path_connect(path *p, int k)
{
    fb_buf out = {0};
    int bad = 0;
    for (int t = 0; t < k; t++) {
        p->h[t] = fb_curl_new(&p->srv, p->hdrs);
        long code = p->direct ? fb_request(p->h[t], &p->srv, "POST", "/v3/maintenance/status", "{}", 2, &out)
                              : fb_request(p->h[t], &p->srv, "GET", "/healthz", NULL, 0, &out);
        if (code != 200) {
            fprintf(stderr, "SERVER PROBLEM: warming a connection to %s: HTTP %ld %.200s\n", p->srv.url, code,
                    out.p ? out.p : "");
            bad++;
        }
    }
    free(out.p);
    return bad ? -1 : 0;
}

static void path_disconnect(path *p, int k)
{
    for (int t = 0; t < k; t++) {
        curl_easy_cleanup(p->h[t]);
        p->h[t] = NULL;
    }
}

/* The value of the sample whose name and labels are exactly `series` in a /metrics text, or -1. */
static double metric_value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, series, n) && l[n] == ' ')
            return strtod(l + n + 1, NULL);
    return -1;
}

/* The summed seconds and the count of the server's store creates so far (from /metrics), -1 each
 * when unreadable. */
static void store_write_stats(const fb_server *s, double *sum, double *count)
{
    struct curl_slist *h = fb_headers(s);
    CURL *c = fb_curl_new(s, h);
    fb_buf b = {0};
    *sum = *count = -1;
    if (fb_request(c, s, "GET", "/metrics", NULL, 0, &b) == 200 && b.p) {
        *sum = metric_value(b.p, "flotilla_store_write_duration_seconds_sum{op=\"create\",result=\"ok\"}");
        *count = metric_value(b.p, "flotilla_store_write_duration_seconds_count{op=\"create\",result=\"ok\"}");
    }
    free(b.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
}

typedef struct result {
    double rate, p50, p99, max, mean;
    int done;
} result;

static void gen_bodies(char **bodies, size_t *lens, int n, int k, size_t size)
{
    char *pay = malloc(size + 1);
    for (int i = 0; i < n; i++) {
        memset(pay, 'a' + i % 26, size);
        pay[size] = 0;
        fb_buf b = {0};
        fb_bprintf(&b,
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-k%d-%06d\"},"
                   "\"data\":{\"payload\":\"%s\"}}",
                   k, i, pay);
        bodies[i] = b.p;
        lens[i] = b.n;
    }
    free(pay);
}

/* All three paths at k clients, n objects each, in `slices` interleaved slices. */
static void run_level(path *paths, ewatch *ew, int k, int n, int slices, size_t size, result *res)
{
    int64_t *drev = calloc((size_t)n, sizeof *drev), *dack = calloc((size_t)n, sizeof *dack);
    char **bodies = calloc((size_t)n, sizeof *bodies), **resp = calloc((size_t)n, sizeof *resp),
         **txns = calloc((size_t)n, sizeof *txns);
    size_t *lens = calloc((size_t)n, sizeof *lens), *tlens = calloc((size_t)n, sizeof *tlens);
    int64_t *lat[NPATH];
    double wall[NPATH] = {0};
    for (int p = 0; p < NPATH; p++)
        lat[p] = calloc((size_t)n, sizeof *lat[p]);
    gen_bodies(bodies, lens, n, k, size);
    for (int p = 0; p < NPATH; p++)
        if (path_used(p))
            if (path_connect(&paths[p], k))
                problems++;
    double ssum0, scount0, ssum1, scount1, bsum0 = 0, bcount0 = 0, bsum1 = 0, bcount1 = 0;
    store_write_stats(&paths[P_ETCD].srv, &ssum0, &scount0);
    if (with_b)
        store_write_stats(&paths[P_ETCD_B].srv, &bsum0, &bcount0);
    double cpu_etcd = 0;
    int errors[NPATH] = {0};
    for (int s = 0; s < slices; s++) {
        int lo = n * s / slices, hi = n * (s + 1) / slices;
        /* flotilla/etcd goes before direct (which sends what it answered); sqlite's turn rotates,
         * and B goes first in every other slice */
        int order[NPATH] = {P_ETCD, P_DIRECT, P_SQLITE, P_ETCD_B};
        if (s % 3 == 1) {
            order[0] = P_SQLITE, order[1] = P_ETCD, order[2] = P_DIRECT;
        } else if (s % 3 == 2) {
            order[0] = P_ETCD, order[1] = P_SQLITE, order[2] = P_DIRECT;
        }
        if (s % 2 == 1) {
            memmove(order + 1, order, 3 * sizeof *order);
            order[0] = P_ETCD_B;
        }
        for (int j = 0; j < NPATH; j++) {
            int p = order[j];
            if (!path_used(p))
                continue;
            slice sl = {.p = &paths[p], .k = k, .lo = lo, .hi = hi, .bodies = bodies, .lens = lens, .lat = lat[p]};
            atomic_init(&sl.errors, 0);
            if (p == P_ETCD)
                sl.resp = resp;
            if (p == P_DIRECT) {
                /* the values Flotilla answered, made into txns before the clock */
                for (int i = lo; i < hi; i++) {
                    char name[40];
                    snprintf(name, sizeof name, "cm-k%d-%06d", k, i);
                    txns[i] = direct_txn(name, resp[i] ? resp[i] : bodies[i], &tlens[i]);
                }
                sl.bodies = txns;
                sl.lens = tlens;
                sl.rev = drev;
                sl.ack = dack;
            }
            double c0 = p == P_ETCD ? fb_proc_cpu_s(paths[P_ETCD].srv.pid) : 0;
            wall[p] += run_slice(&sl);
            if (p == P_ETCD)
                cpu_etcd += fb_proc_cpu_s(paths[P_ETCD].srv.pid) - c0;
            errors[p] += atomic_load(&sl.errors);
        }
    }
    store_write_stats(&paths[P_ETCD].srv, &ssum1, &scount1);
    if (with_b)
        store_write_stats(&paths[P_ETCD_B].srv, &bsum1, &bcount1);
    for (int p = 0; p < NPATH; p++) {
        if (!path_used(p))
            continue;
        path_disconnect(&paths[p], k);
        res[p].done = n;
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += (double)lat[p][i];
        res[p].mean = sum / n / 1e6;
        res[p].rate = n / wall[p];
        res[p].p50 = fb_pct_ms(lat[p], (size_t)n, 50);
        res[p].p99 = fb_pct_sorted_ms(lat[p], (size_t)n, 99);
        res[p].max = fb_pct_sorted_ms(lat[p], (size_t)n, 100);
        if (errors[p])
            problems++;
        printf("  %-16s %8.0f creates/s  P50 %7.2f ms  P99 %7.2f ms  max %7.2f ms  errors %d\n", PATH_NAME[p],
               res[p].rate, res[p].p50, res[p].p99, res[p].max, errors[p]);
    }
    double dn = scount1 - scount0;
    if (dn > 0)
        printf("  flotilla/etcd: a create's request takes %.2f ms on average, of which the store's own write (txn + "
               "waiting for its watch) %.2f ms (over %.0f); direct txn %.2f ms on average; server CPU %.2f ms per "
               "create, %.2f cores while its slices ran\n",
               res[P_ETCD].mean, (ssum1 - ssum0) / dn * 1000, dn, res[P_DIRECT].mean, cpu_etcd * 1000 / n,
               cpu_etcd / wall[P_ETCD]);
    if (with_b && bcount1 - bcount0 > 0)
        printf("  flotilla/etcd B: a create's request takes %.2f ms on average, of which the store's own write %.2f ms\n",
               res[P_ETCD_B].mean, (bsum1 - bsum0) / (bcount1 - bcount0) * 1000);
    usleep(200000); /* the last events */
    int64_t *dl = calloc((size_t)n, sizeof *dl);
    size_t nd = ewatch_delays(ew, drev, dack, n, dl);
    double dsum = 0;
    for (size_t i = 0; i < nd; i++)
        dsum += (double)dl[i];
    if (nd)
        printf("  etcd's own watch (same gateway, direct path's keys): event - txn answer mean %.2f ms, P50 %.2f, "
               "P99 %.2f ms (%zu of %d matched)\n",
               dsum / (double)nd / 1e6, fb_pct_ms(dl, nd, 50), fb_pct_sorted_ms(dl, nd, 99), nd, n);
    free(dl);
    free(drev);
    free(dack);
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        free(bodies[i]);
        free(resp[i]);
        free(txns[i]);
    }
    free(bodies);
    free(resp);
    free(txns);
    free(lens);
    free(tlens);
    for (int p = 0; p < NPATH; p++)
        free(lat[p]);
}

/* Which member leads etcd's raft, by asking each one's status. */
static void print_etcd_leader(const fb_etcd *e)
{
    fb_server m = {0};
    CURL *c = curl_easy_init();
    struct curl_slist *h = fb_headers(&m);
    fb_buf out = {0};
    for (int i = 0; i < e->n; i++) {
        fb_etcd_url(e, i, m.url, sizeof m.url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fb_buf_write);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (fb_request(c, &m, "POST", "/v3/maintenance/status", "{}", 2, &out) != 200 || !out.p)
            continue;
        const char *mid = strstr(out.p, "\"member_id\":\""), *lid = strstr(out.p, "\"leader\":\"");
        if (mid && lid && !strncmp(mid + 13, lid + 10, strcspn(lid + 10, "\"")))
            printf("etcd raft leader: member m%d (%s)%s\n", i, m.url,
                   i == 0 ? ", the one both etcd paths talk to" : "; both etcd paths talk to m0, a follower");
    }
    free(out.p);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void usage(void)
{
    fprintf(stderr, "usage: etcd_writes [--clients 1,8,32] [--objects 1200] [--slices 4] [--size 1024]\n"
                    "                   [--no-sqlite] [--flotilla PATH] [--compare PATH] [--dir PARENT] [--http] [--keep]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int ks[MAX_K] = {1, 8, 32}, nk = 3, n = 1200, slices = 4;
    size_t size = 1024;
    bool keep = false, http = false;
    const char *flotilla_arg = NULL, *parent = NULL, *compare = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool hv = i + 1 < argc;
        if (!strcmp(a, "--clients") && hv)
            nk = fb_parse_list(argv[++i], ks, MAX_K);
        else if (!strcmp(a, "--objects") && hv)
            n = atoi(argv[++i]);
        else if (!strcmp(a, "--slices") && hv)
            slices = atoi(argv[++i]);
        else if (!strcmp(a, "--size") && hv)
            size = (size_t)atol(argv[++i]);
        else if (!strcmp(a, "--flotilla") && hv)
            flotilla_arg = argv[++i];
        else if (!strcmp(a, "--compare") && hv)
            compare = argv[++i];
        else if (!strcmp(a, "--dir") && hv)
            parent = argv[++i];
        else if (!strcmp(a, "--no-sqlite"))
            with_sqlite = false;
        else if (!strcmp(a, "--http"))
            http = true;
        else if (!strcmp(a, "--keep"))
            keep = true;
        else
            usage();
    }
    if (n < 1 || slices < 1 || slices > n || nk < 1 || size > 1000000)
        usage();
    with_b = compare != NULL;
    for (int i = 0; i < nk; i++)
        if (ks[i] < 1 || ks[i] > 64)
            usage();
    curl_global_init(CURL_GLOBAL_ALL);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *dir = fb_mkdtemp(parent, "fl-bench-etcdw");
    char edir[600], d1[600], d2[600], d3[600], load[96];
    snprintf(edir, sizeof edir, "%s/etcd", dir);
    snprintf(d1, sizeof d1, "%s/server-etcd", dir);
    snprintf(d2, sizeof d2, "%s/server-sqlite", dir);
    snprintf(d3, sizeof d3, "%s/server-etcd-b", dir);
    printf("etcd_writes: %s, %d objects of %zu B per path and client count, %d slices, %ld cores, %s\n", flotilla, n,
           size, slices, sysconf(_SC_NPROCESSORS_ONLN), fb_loadavg(load, sizeof load));
    fb_etcd e;
    if (fb_etcd_start(edir, 3, &e))
        return 1;
    path paths[NPATH] = {0};
    const char *x1[] = {"--etcd-servers", e.endpoints, "--etcd-prefix", "/bench-writes",
                        http ? "--insecure-http" : NULL, NULL};
    const char *x2[] = {http ? "--insecure-http" : NULL, NULL};
    const char *x3[] = {"--etcd-servers", e.endpoints, "--etcd-prefix", "/bench-writes-b",
                        http ? "--insecure-http" : NULL, NULL};
    if (fb_server_start(flotilla, d1, x1, &paths[P_ETCD].srv) ||
        (with_sqlite && fb_server_start(flotilla, d2, x2, &paths[P_SQLITE].srv)) ||
        (with_b && fb_server_start(compare, d3, x3, &paths[P_ETCD_B].srv))) {
        fb_server_stop(&paths[P_ETCD].srv);
        fb_server_stop(&paths[P_SQLITE].srv);
        fb_etcd_stop(&e);
        return 1;
    }
    paths[P_DIRECT].direct = true;
    fb_etcd_url(&e, 0, paths[P_DIRECT].srv.url, sizeof paths[P_DIRECT].srv.url);
    for (int p = 0; p < NPATH; p++)
        paths[p].hdrs = fb_headers(&paths[p].srv);
    printf("etcd: %s (data in %s); flotilla on etcd %s; on SQLite %s\n", e.endpoints, edir, paths[P_ETCD].srv.url,
           with_sqlite ? paths[P_SQLITE].srv.url : "(skipped)");
    if (with_b)
        printf("flotilla/etcd B: %s on the same etcd, %s\n", compare, paths[P_ETCD_B].srv.url);
    print_etcd_leader(&e);

    ewatch ew = {0};
    ew.m = paths[P_DIRECT].srv;
    pthread_mutex_init(&ew.mu, NULL);
    atomic_init(&ew.stop, false);
    pthread_create(&ew.th, NULL, ewatch_main, &ew);
    usleep(300000); /* the watch is created */
    result res[MAX_K][NPATH];
    memset(res, 0, sizeof res);
    for (int i = 0; i < nk; i++) {
        printf("\n== %d client%s ==\n", ks[i], ks[i] == 1 ? "" : "s");
        run_level(paths, &ew, ks[i], n, slices, size, res[i]);
        if (!fb_server_alive(&paths[P_ETCD].srv) || (with_sqlite && !fb_server_alive(&paths[P_SQLITE].srv)) ||
            (with_b && !fb_server_alive(&paths[P_ETCD_B].srv))) {
            printf("SERVER PROBLEM: a server died during the run\n");
            problems++;
            nk = i + 1;
            break;
        }
    }

    printf("\nSummary (%s, %zu B payload, %d creates per cell, %s at the end)\n", http ? "HTTP" : "HTTPS", size, n,
           fb_loadavg(load, sizeof load));
    printf("| clients | flotilla/etcd /s | P50 / P99 ms | direct etcd /s | P50 / P99 ms | ratio rate | flotilla/sqlite "
           "/s | P50 / P99 ms |\n|---|---|---|---|---|---|---|---|\n");
    bool met = true;
    for (int i = 0; i < nk; i++) {
        result *r = res[i];
        double ratio = r[P_DIRECT].rate > 0 ? r[P_ETCD].rate / r[P_DIRECT].rate : 0;
        if (ks[i] >= 8 && ratio < 0.8)
            met = false;
        printf("| %d | %.0f | %.2f / %.2f | %.0f | %.2f / %.2f | %.2fx |", ks[i], r[P_ETCD].rate, r[P_ETCD].p50,
               r[P_ETCD].p99, r[P_DIRECT].rate, r[P_DIRECT].p50, r[P_DIRECT].p99, ratio);
        if (with_sqlite)
            printf(" %.0f | %.2f / %.2f |", r[P_SQLITE].rate, r[P_SQLITE].p50, r[P_SQLITE].p99);
        else
            printf(" - | - |");
        if (with_b)
            printf(" B: %.0f /s, %.2f / %.2f ms, %.2fx direct", r[P_ETCD_B].rate, r[P_ETCD_B].p50, r[P_ETCD_B].p99,
                   r[P_DIRECT].rate > 0 ? r[P_ETCD_B].rate / r[P_DIRECT].rate : 0);
        printf("\n");
    }
    printf("target flotilla/etcd >= 0.8x direct at 8 and 32 clients: %s\n", met ? "met" : "NOT met");

    for (int p = 0; p < NPATH; p++)
        curl_slist_free_all(paths[p].hdrs);
    atomic_store(&ew.stop, true); /* the stream ends at its next bytes; etcd's end closes it */
    if (fb_server_stop(&paths[P_ETCD].srv) != 0)
        problems++;
    if (with_sqlite && fb_server_stop(&paths[P_SQLITE].srv) != 0)
        problems++;
    if (with_b && fb_server_stop(&paths[P_ETCD_B].srv) != 0)
        problems++;
    fb_etcd_stop(&e);
    pthread_join(ew.th, NULL);
    free(ew.rev);
    free(ew.at);
    free(ew.line.p);
    fb_scratch_done(dir, keep);
    free(dir);
    curl_global_cleanup();
    return problems ? 1 : 0;
}
