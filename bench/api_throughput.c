/* api_throughput.c - create/update/get throughput and latency of the Kubernetes API,
 * against raw SQLite inserts of the same rows at the same durability, in the same run.
 *
 * For each client count K (default 1, 16, 64), K threads - one keep-alive libcurl easy
 * handle each, like K independent kubectl-style clients - share N ConfigMaps of ~1 KiB:
 *   create  POST /api/v1/namespaces/default/configmaps
 *   update  PUT  .../configmaps/NAME carrying the resourceVersion the create returned
 *   get     GET  .../configmaps/NAME (checked: it must return the updated resourceVersion)
 * Each phase reports ops/s over its wall time and P50/P99/max of per-request latency.
 *
 * The baseline, on the same disk: the objects exactly as the server returned them from
 * create (same JSON bytes) inserted into a fresh SQLite database in WAL mode with
 * synchronous=FULL, in a table shaped like a revision log, one transaction per row - each
 * row acknowledged only after its own commit, which is the durability a 201 from the
 * server promises. Once with a single writer, once with K writer threads (SQLite
 * serializes them on its write lock). The server may do better than one fsync per row
 * because it group-commits concurrent requests; that is the point of the comparison.
 *
 * The machine is shared and its disk and CPUs drift, so the create phase and the baseline
 * are interleaved in slices (default 4): create slice 1 through the API, insert the same
 * rows raw with 1 writer, then with K writers, then slice 2, ... Each side's rate is its
 * rows over the sum of its slice wall times; the two sides see the same noise.
 *
 * --audit LEVEL runs the server with an audit log (--audit-policy-file, --audit-log-path
 * DIR/audit.log) whose policy logs every request at LEVEL (Metadata, Request,
 * RequestResponse), for the cost of the audit log beside a run without it; --audit-log PATH
 * puts the log elsewhere (another disk, /dev/shm, "-" for the server's standard output).
 *
 * Usage: api_throughput [--flotilla PATH] [--clients 1,16,64] [--objects N] [--size BYTES]
 *                       [--slices 4] [--dir PARENT] [--http] [--no-fsync] [--keep] [--audit LEVEL]
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

enum { PH_CREATE, PH_UPDATE, PH_GET, PH_COUNT };
static const char *phase_name[PH_COUNT] = {"create", "update", "get"};

typedef struct phase_result {
    int ops;
    int errors;
    double secs, ops_s, p50, p99, max;
} phase_result;

typedef struct run {
    const fb_server *s;
    int clients, n, phase;
    int lo, hi;              /* the objects of the current slice */
    size_t size;
    char prefix[32];
    CURL **curls;
    struct curl_slist *hdrs;
    char **created;          /* create response bodies: the stored objects */
    long long *rv;           /* resourceVersion after create, then after update */
    int64_t *lat;            /* per-op latency of the current phase */
    atomic_int errors;
    pthread_mutex_t err_mu;
    char first_err[600];
    pthread_barrier_t go;
} run;

typedef struct worker {
    run *r;
    int k;
} worker;

static void note_error(run *r, const char *what, int i, long code, const char *body)
{
    atomic_fetch_add(&r->errors, 1);
    pthread_mutex_lock(&r->err_mu);
    if (!r->first_err[0])
        snprintf(r->first_err, sizeof r->first_err, "%s #%d: HTTP %ld: %.400s", what, i, code, body ? body : "");
    pthread_mutex_unlock(&r->err_mu);
}

static char *object_body(const run *r, int i, long long rv, char fill_base)
{
    size_t cap = r->size + 512;
    char *b = malloc(cap);
    if (!b)
        abort();
    int n;
    if (rv > 0)
        n = snprintf(b, cap,
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s-%06d\","
                     "\"namespace\":\"default\",\"resourceVersion\":\"%lld\"},\"data\":{\"payload\":\"",
                     r->prefix, i, rv);
    else
        n = snprintf(b, cap,
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s-%06d\","
                     "\"namespace\":\"default\"},\"data\":{\"payload\":\"",
                     r->prefix, i);
    for (size_t j = 0; j < r->size; j++)
        b[n++] = (char)(fill_base + (char)((i + (int)j) % 26));
    n += snprintf(b + n, cap - (size_t)n, "\"}}");
    return b;
}

static void *client_main(void *arg)
{
    worker *w = arg;
    run *r = w->r;
    CURL *c = r->curls[w->k];
    fb_buf out = {0};
    char path[256];
    /* warm the connection (TCP + TLS handshake) before the clock starts */
    long code = fb_request(c, r->s, "GET", "/api/v1/namespaces/default", NULL, 0, &out);
    if (code != 200)
        note_error(r, "warm-up GET", w->k, code, out.p);
    pthread_barrier_wait(&r->go);
    for (int i = r->lo + w->k; i < r->hi; i += r->clients) {
        char *body = NULL;
        int64_t t0 = fb_now_ns();
        switch (r->phase) {
        case PH_CREATE:
            body = object_body(r, i, 0, 'a');
            t0 = fb_now_ns();
            code = fb_request(c, r->s, "POST", "/api/v1/namespaces/default/configmaps", body, strlen(body), &out);
            r->lat[i] = fb_now_ns() - t0;
            if (code != 201) {
                note_error(r, "create", i, code, out.p);
                break;
            }
            r->created[i] = strdup(out.p);
            r->rv[i] = fb_json_rv(out.p);
            break;
        case PH_UPDATE:
            if (r->rv[i] <= 0) {
                r->lat[i] = 0;
                note_error(r, "update skipped (create failed)", i, 0, "");
                break;
            }
            body = object_body(r, i, r->rv[i], 'A');
            snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps/%s-%06d", r->prefix, i);
            t0 = fb_now_ns();
            code = fb_request(c, r->s, "PUT", path, body, strlen(body), &out);
            r->lat[i] = fb_now_ns() - t0;
            if (code != 200) {
                note_error(r, "update", i, code, out.p);
                r->rv[i] = -1;
                break;
            }
            long long nrv = fb_json_rv(out.p);
            if (nrv <= r->rv[i])
                note_error(r, "update returned a resourceVersion not above the previous one", i, code, out.p);
            r->rv[i] = nrv;
            break;
        case PH_GET:
            snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps/%s-%06d", r->prefix, i);
            t0 = fb_now_ns();
            code = fb_request(c, r->s, "GET", path, NULL, 0, &out);
            r->lat[i] = fb_now_ns() - t0;
            if (code != 200)
                note_error(r, "get", i, code, out.p);
            else if (r->rv[i] > 0 && fb_json_rv(out.p) != r->rv[i])
                note_error(r, "get returned a stale resourceVersion", i, code, out.p);
            break;
        }
        free(body);
    }
    free(out.p);
    return NULL;
}

/* Run objects [lo, hi) of one phase with all K clients; returns the wall time in seconds,
 * from the barrier (connections warm) to the last join. */
static double run_slice(run *r, int phase, int lo, int hi)
{
    r->phase = phase;
    r->lo = lo;
    r->hi = hi;
    pthread_barrier_init(&r->go, NULL, (unsigned)r->clients + 1);
    pthread_t *th = calloc((size_t)r->clients, sizeof *th);
    worker *ws = calloc((size_t)r->clients, sizeof *ws);
    for (int k = 0; k < r->clients; k++) {
        ws[k] = (worker){r, k};
        pthread_create(&th[k], NULL, client_main, &ws[k]);
    }
    pthread_barrier_wait(&r->go);
    int64_t t0 = fb_now_ns();
    for (int k = 0; k < r->clients; k++)
        pthread_join(th[k], NULL);
    int64_t t1 = fb_now_ns();
    pthread_barrier_destroy(&r->go);
    free(th);
    free(ws);
    return (double)(t1 - t0) / 1e9;
}

static void phase_begin(run *r)
{
    atomic_store(&r->errors, 0);
    r->first_err[0] = 0;
    memset(r->lat, 0, sizeof *r->lat * (size_t)r->n);
}

/* Statistics of a finished phase over all N objects, printed as one line. */
static phase_result phase_end(run *r, int phase, double secs)
{
    phase_result pr = {.ops = r->n, .errors = atomic_load(&r->errors)};
    pr.secs = secs;
    pr.ops_s = r->n / pr.secs;
    pr.p50 = fb_pct_ms(r->lat, (size_t)r->n, 50);
    pr.p99 = fb_pct_sorted_ms(r->lat, (size_t)r->n, 99);
    pr.max = fb_pct_sorted_ms(r->lat, (size_t)r->n, 100);
    printf("  flotilla %-7s clients=%-3d ops=%-6d %7.2f s %9.0f ops/s  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms"
           "  errors %d\n",
           phase_name[phase], r->clients, r->n, pr.secs, pr.ops_s, pr.p50, pr.p99, pr.max, pr.errors);
    if (pr.errors)
        printf("  SERVER PROBLEM: %d %s errors; first: %s\n", pr.errors, phase_name[phase], r->first_err);
    fflush(stdout);
    return pr;
}

/* ---- the raw SQLite baseline ---- */

typedef struct raw_run {
    const char *db;
    int threads, n;
    int lo, hi;
    char **rows;
    const char *prefix;
    int64_t *lat;
    atomic_int errors;
    pthread_barrier_t go;
} raw_run;

typedef struct raw_worker {
    raw_run *r;
    int k;
} raw_worker;

static int exec_sql(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s: %s\n", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        fprintf(stderr, "sqlite open %s: %s\n", path, db ? sqlite3_errmsg(db) : "?");
        exit(1);
    }
    sqlite3_busy_timeout(db, 30000);
    if (exec_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"))
        exit(1);
    return db;
}

static void *raw_main(void *arg)
{
    raw_worker *w = arg;
    raw_run *r = w->r;
    sqlite3 *db = raw_open(r->db);
    sqlite3_stmt *ins = NULL, *begin = NULL, *commit = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO kv (name, created, deleted, create_revision, prev_revision, value)"
                           " VALUES (?, 1, 0, 0, 0, ?)",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL) != SQLITE_OK) {
        fprintf(stderr, "sqlite prepare: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    char key[128];
    pthread_barrier_wait(&r->go);
    for (int i = r->lo + w->k; i < r->hi; i += r->threads) {
        if (!r->rows[i])
            continue;
        snprintf(key, sizeof key, "/registry/configmaps/default/%s-%06d", r->prefix, i);
        int64_t t0 = fb_now_ns();
        int ok = sqlite3_step(begin) == SQLITE_DONE;
        sqlite3_reset(begin);
        if (ok) {
            sqlite3_bind_text(ins, 1, key, -1, SQLITE_STATIC);
            sqlite3_bind_blob(ins, 2, r->rows[i], (int)strlen(r->rows[i]), SQLITE_STATIC);
            ok = sqlite3_step(ins) == SQLITE_DONE;
            sqlite3_reset(ins);
            ok = (sqlite3_step(commit) == SQLITE_DONE) && ok;
            sqlite3_reset(commit);
        }
        r->lat[i] = fb_now_ns() - t0;
        if (!ok) {
            if (atomic_fetch_add(&r->errors, 1) == 0)
                fprintf(stderr, "sqlite insert: %s\n", sqlite3_errmsg(db));
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        }
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    return NULL;
}

/* A fresh raw database for one baseline: DIR/raw-cK-tT.db with the revision-log table. */
static void raw_create(const char *path)
{
    sqlite3 *db = raw_open(path);
    /* the same shape as a revision log: append-only rows, an index on (name, id) */
    if (exec_sql(db, "CREATE TABLE kv (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
                     " created INTEGER NOT NULL, deleted INTEGER NOT NULL, create_revision INTEGER NOT NULL,"
                     " prev_revision INTEGER NOT NULL, value BLOB NOT NULL);"
                     "CREATE INDEX kv_name_id ON kv (name, id);"))
        exit(1);
    sqlite3_close(db);
}

static void raw_remove(const char *path)
{
    char side[760];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* Insert rows [lo, hi) with `threads` writers; latencies into lat[]; returns wall seconds
 * from the barrier (connections open) to the last join; adds failures to *errors. */
static double raw_slice(const char *path, int threads, int lo, int hi, char **rows, const char *prefix,
                        int64_t *lat, int *errors)
{
    raw_run r = {.db = path, .threads = threads, .n = hi, .lo = lo, .hi = hi, .rows = rows, .prefix = prefix,
                 .lat = lat};
    pthread_barrier_init(&r.go, NULL, (unsigned)threads + 1);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    raw_worker *ws = calloc((size_t)threads, sizeof *ws);
    for (int k = 0; k < threads; k++) {
        ws[k] = (raw_worker){&r, k};
        pthread_create(&th[k], NULL, raw_main, &ws[k]);
    }
    pthread_barrier_wait(&r.go);
    int64_t t0 = fb_now_ns();
    for (int k = 0; k < threads; k++)
        pthread_join(th[k], NULL);
    int64_t t1 = fb_now_ns();
    pthread_barrier_destroy(&r.go);
    free(th);
    free(ws);
    *errors += atomic_load(&r.errors);
    return (double)(t1 - t0) / 1e9;
}

static phase_result raw_result(int threads, int n, double secs, int64_t *lat, int errors)
{
    phase_result pr = {.ops = n, .errors = errors, .secs = secs};
    pr.ops_s = n / secs;
    pr.p50 = fb_pct_ms(lat, (size_t)n, 50);
    pr.p99 = fb_pct_sorted_ms(lat, (size_t)n, 99);
    pr.max = fb_pct_sorted_ms(lat, (size_t)n, 100);
    printf("  sqlite   insert  threads=%-3d rows=%-6d %7.2f s %9.0f rows/s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms"
           "  errors %d\n",
           threads, n, pr.secs, pr.ops_s, pr.p50, pr.p99, pr.max, pr.errors);
    fflush(stdout);
    return pr;
}

static void usage(void)
{
    fprintf(stderr, "usage: api_throughput [--flotilla PATH] [--clients 1,16,64] [--objects N] [--size BYTES]\n"
                    "                      [--slices 4] [--dir PARENT] [--http] [--no-fsync] [--keep]\n"
                    "                      [--audit Metadata|Request|RequestResponse] [--audit-log PATH]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *flotilla_arg = NULL, *parent = NULL, *audit = NULL, *audit_path = NULL;
    int clients[8] = {1, 16, 64}, nclients = 3, n = 2000, slices = 4;
    size_t size = 1024;
    bool http = false, nofsync = false, keep = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--flotilla") && v)
            flotilla_arg = argv[++i];
        else if (!strcmp(a, "--clients") && v)
            nclients = fb_parse_list(argv[++i], clients, 8);
        else if (!strcmp(a, "--objects") && v)
            n = atoi(argv[++i]);
        else if (!strcmp(a, "--size") && v)
            size = (size_t)atol(argv[++i]);
        else if (!strcmp(a, "--slices") && v)
            slices = atoi(argv[++i]);
        else if (!strcmp(a, "--dir") && v)
            parent = argv[++i];
        else if (!strcmp(a, "--http"))
            http = true;
        else if (!strcmp(a, "--no-fsync"))
            nofsync = true;
        else if (!strcmp(a, "--keep"))
            keep = true;
        else if (!strcmp(a, "--audit") && v)
            audit = argv[++i];
        else if (!strcmp(a, "--audit-log") && v)
            audit_path = argv[++i];
        else
            usage();
    }
    if (n <= 0 || nclients <= 0 || slices <= 0 || slices > n)
        usage();
    fb_raise_nofile();
    curl_global_init(CURL_GLOBAL_ALL);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *dir = fb_mkdtemp(parent, "fl-bench-api");
    char sdir[600];
    snprintf(sdir, sizeof sdir, "%s/server", dir);
    const char *extra[8] = {0};
    int ne = 0;
    char policy[700], audit_log[700];
    if (audit) {
        snprintf(policy, sizeof policy, "%s/audit-policy.yaml", dir);
        snprintf(audit_log, sizeof audit_log, "%s", audit_path ? audit_path : "");
        if (!audit_path)
            snprintf(audit_log, sizeof audit_log, "%s/audit.log", dir);
        FILE *f = fopen(policy, "w");
        if (!f)
            return 1;
        fprintf(f, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: %s\n", audit);
        fclose(f);
        extra[ne++] = "--audit-policy-file";
        extra[ne++] = policy;
        extra[ne++] = "--audit-log-path";
        extra[ne++] = audit_log;
    }
    if (http)
        extra[ne++] = "--insecure-http";
    if (nofsync)
        extra[ne++] = "--no-fsync";
    fb_server s;
    if (fb_server_start(flotilla, sdir, extra, &s))
        return 1;
    printf("api_throughput: %s, %d ConfigMaps of %zu B payload per client count, server %s%s%s%s, data in %s\n",
           flotilla, n, size, s.url, nofsync ? " (--no-fsync)" : " (fsync per commit)", audit ? ", audit log at " : "",
           audit ? audit : "", dir);
    printf("baseline: the same object JSON inserted into SQLite (WAL, synchronous=%s), one transaction per row\n",
           nofsync ? "FULL; the server runs --no-fsync, so this is NOT equal durability" : "FULL");
    fflush(stdout);

    phase_result res[8][PH_COUNT], raw1[8], rawk[8];
    int status = 0;
    for (int ci = 0; ci < nclients; ci++) {
        run r;
        memset(&r, 0, sizeof r);
        r.s = &s;
        r.clients = clients[ci];
        r.n = n;
        r.size = size;
        snprintf(r.prefix, sizeof r.prefix, "bench-c%d", clients[ci]);
        pthread_mutex_init(&r.err_mu, NULL);
        r.hdrs = fb_headers(&s);
        r.curls = calloc((size_t)r.clients, sizeof *r.curls);
        for (int k = 0; k < r.clients; k++)
            r.curls[k] = fb_curl_new(&s, r.hdrs);
        r.created = calloc((size_t)n, sizeof *r.created);
        r.rv = calloc((size_t)n, sizeof *r.rv);
        r.lat = calloc((size_t)n, sizeof *r.lat);
        printf("\n== %d client%s ==\n", r.clients, r.clients == 1 ? "" : "s");
        fflush(stdout);
        /* create, interleaved slice by slice with the raw SQLite baselines */
        char p1[700], pk[700];
        snprintf(p1, sizeof p1, "%s/raw-c%d-t1.db", dir, r.clients);
        snprintf(pk, sizeof pk, "%s/raw-c%d-t%d.db", dir, r.clients, r.clients);
        raw_create(p1);
        if (r.clients > 1)
            raw_create(pk);
        int64_t *lat1 = calloc((size_t)n, sizeof *lat1), *latk = calloc((size_t)n, sizeof *latk);
        double t_create = 0, t_raw1 = 0, t_rawk = 0;
        int e1 = 0, ek = 0;
        phase_begin(&r);
        for (int sl = 0; sl < slices; sl++) {
            int lo = (int)((long long)n * sl / slices), hi = (int)((long long)n * (sl + 1) / slices);
            t_create += run_slice(&r, PH_CREATE, lo, hi);
            t_raw1 += raw_slice(p1, 1, lo, hi, r.created, r.prefix, lat1, &e1);
            if (r.clients > 1)
                t_rawk += raw_slice(pk, r.clients, lo, hi, r.created, r.prefix, latk, &ek);
        }
        res[ci][PH_CREATE] = phase_end(&r, PH_CREATE, t_create);
        raw1[ci] = raw_result(1, n, t_raw1, lat1, e1);
        rawk[ci] = r.clients > 1 ? raw_result(r.clients, n, t_rawk, latk, ek) : raw1[ci];
        raw_remove(p1);
        if (r.clients > 1)
            raw_remove(pk);
        free(lat1);
        free(latk);
        if (res[ci][PH_CREATE].errors)
            status = 1;
        for (int ph = PH_UPDATE; ph < PH_COUNT && fb_server_alive(&s); ph++) {
            phase_begin(&r);
            res[ci][ph] = phase_end(&r, ph, run_slice(&r, ph, 0, n));
            if (res[ci][ph].errors)
                status = 1;
        }
        if (!fb_server_alive(&s)) {
            printf("SERVER PROBLEM: the server died during the run with %d clients\n", r.clients);
            return 1;
        }
        printf("  => create rate = %.0f%% of raw SQLite single writer, %.0f%% of raw SQLite with %d writer%s;"
               " update rate = %.0f%% of the single writer\n",
               100 * res[ci][PH_CREATE].ops_s / raw1[ci].ops_s, 100 * res[ci][PH_CREATE].ops_s / rawk[ci].ops_s,
               r.clients, r.clients == 1 ? "" : " threads", 100 * res[ci][PH_UPDATE].ops_s / raw1[ci].ops_s);
        fflush(stdout);
        for (int k = 0; k < r.clients; k++)
            curl_easy_cleanup(r.curls[k]);
        curl_slist_free_all(r.hdrs);
        for (int i = 0; i < n; i++)
            free(r.created[i]);
        free(r.created);
        free(r.rv);
        free(r.lat);
        free(r.curls);
        pthread_mutex_destroy(&r.err_mu);
    }

    printf("\nSummary (%s, %zu B payload, N=%d per client count)\n", s.url, size, n);
    printf("| clients | create ops/s | create p50/p99 ms | update ops/s | update p50/p99 ms | get ops/s |"
           " get p50/p99 ms | raw SQLite 1 writer rows/s | raw SQLite K writers rows/s | create / raw 1 writer |"
           " create / raw K writers |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int ci = 0; ci < nclients; ci++) {
        phase_result *p = res[ci];
        printf("| %d | %.0f | %.2f / %.2f | %.0f | %.2f / %.2f | %.0f | %.2f / %.2f | %.0f | %.0f | %.0f%% | %.0f%% |\n",
               clients[ci], p[0].ops_s, p[0].p50, p[0].p99, p[1].ops_s, p[1].p50, p[1].p99, p[2].ops_s, p[2].p50,
               p[2].p99, raw1[ci].ops_s, rawk[ci].ops_s, 100 * p[0].ops_s / raw1[ci].ops_s,
               100 * p[0].ops_s / rawk[ci].ops_s);
    }
    for (int ci = 0; ci < nclients; ci++) {
        if (clients[ci] == 16)
            printf("target create P99 <= 5 ms at 16 clients: %.2f ms -> %s\n", res[ci][0].p99,
                   res[ci][0].p99 <= 5.0 ? "met" : "NOT met");
    }
    double best = 0;
    for (int ci = 0; ci < nclients; ci++) {
        double ratio = res[ci][0].ops_s / raw1[ci].ops_s;
        if (ratio > best)
            best = ratio;
    }
    printf("target create >= 50%% of raw SQLite single-writer rate: best %.0f%% -> %s\n", 100 * best,
           best >= 0.5 ? "met" : "NOT met");
    int rc = fb_server_stop(&s);
    if (rc != 0)
        status = 1;
    fb_scratch_done(dir, keep);
    free(dir);
    curl_global_cleanup();
    return status;
}
