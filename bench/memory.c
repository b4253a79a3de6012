/* memory.c - server memory with many objects and open watches, against the raw data size.
 *
 * Starts a fresh server and reads its VmRSS when idle (the baseline), loads N ConfigMaps
 * with a ~1 KiB payload through the API with K parallel keep-alive clients, opens W
 * watchers on the namespace (one libcurl multi handle; they watch from the newest
 * revision, as informers do after their list), waits until the server reports them open,
 * and reads VmRSS/VmHWM from /proc/PID/status. Then it GETs every object back and sums the
 * response bodies: the raw data size is the total JSON bytes of the objects as GET returns
 * them (the GETs also check every acknowledged create is there). It prints RSS / raw.
 *
 * Usage: memory [--flotilla PATH] [--objects 100000] [--size BYTES] [--clients 16]
 *               [--watchers 100] [--dir PARENT] [--http] [--no-fsync] [--keep]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"

#define NS "membench"
#define MAX_SECONDS 900 /* bound on each parallel phase */

typedef struct job {
    const fb_server *s;
    int n, clients;
    size_t size;
    bool get;                 /* false: create, true: get */
    atomic_llong bytes;       /* response body bytes of successful requests */
    atomic_llong max_rv;
    atomic_int errors, done;
    atomic_int first_err_set;
    char first_err[600];
    int64_t deadline;
} job;

typedef struct job_worker {
    job *j;
    int k;
} job_worker;

static void *job_main(void *arg)
{
    job_worker *w = arg;
    job *j = w->j;
    struct curl_slist *h = fb_headers(j->s);
    CURL *c = fb_curl_new(j->s, h);
    fb_buf out = {0};
    char *body = malloc(j->size + 512);
    char path[256];
    for (int i = w->k; i < j->n && fb_now_ns() < j->deadline; i += j->clients) {
        long code, want;
        if (j->get) {
            snprintf(path, sizeof path, "/api/v1/namespaces/" NS "/configmaps/cm-%07d", i);
            code = fb_request(c, j->s, "GET", path, NULL, 0, &out);
            want = 200;
        } else {
            int n = snprintf(body, j->size + 512,
                             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-%07d\","
                             "\"labels\":{\"app\":\"membench\"}},\"data\":{\"payload\":\"",
                             i);
            for (size_t b = 0; b < j->size; b++)
                body[n++] = (char)('a' + (i + (int)b) % 26);
            n += snprintf(body + n, 8, "\"}}");
            code = fb_request(c, j->s, "POST", "/api/v1/namespaces/" NS "/configmaps", body, (size_t)n, &out);
            want = 201;
        }
        if (code == want) {
            atomic_fetch_add(&j->bytes, (long long)out.n);
            long long rv = fb_json_rv(out.p), cur = atomic_load(&j->max_rv);
            while (rv > cur && !atomic_compare_exchange_weak(&j->max_rv, &cur, rv))
                ;
            atomic_fetch_add(&j->done, 1);
        } else {
            atomic_fetch_add(&j->errors, 1);
            if (!atomic_exchange(&j->first_err_set, 1))
                snprintf(j->first_err, sizeof j->first_err, "%s cm-%07d: HTTP %ld %.400s", j->get ? "GET" : "create",
                         i, code, out.p ? out.p : "");
        }
    }
    free(body);
    free(out.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return NULL;
}

/* Run creates or gets of all N objects on K threads; returns the wall time in seconds. */
static double run_job(job *j)
{
    j->deadline = fb_now_ns() + MAX_SECONDS * 1000000000LL;
    pthread_t *th = calloc((size_t)j->clients, sizeof *th);
    job_worker *ws = calloc((size_t)j->clients, sizeof *ws);
    int64_t t0 = fb_now_ns();
    for (int k = 0; k < j->clients; k++) {
        ws[k] = (job_worker){j, k};
        pthread_create(&th[k], NULL, job_main, &ws[k]);
    }
    for (int k = 0; k < j->clients; k++)
        pthread_join(th[k], NULL);
    free(th);
    free(ws);
    return (double)(fb_now_ns() - t0) / 1e9;
}

/* ---- idle watchers ---- */

typedef struct watchers {
    const fb_server *s;
    int n;
    long long from_rv;
    atomic_int stop;
    atomic_int opened;
    atomic_long bytes, ended;
} watchers;

static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    watchers *ws = userdata;
    atomic_fetch_add(&ws->bytes, (long)(size * nmemb));
    return size * nmemb;
}

/* The empty line ends the headers, which the server sends once the watch is registered. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    watchers *ws = userdata;
    size_t len = size * nmemb;
    if ((len == 2 && ptr[0] == '\r') || (len == 1 && ptr[0] == '\n'))
        atomic_fetch_add(&ws->opened, 1);
    return len;
}

static void *watchers_main(void *arg)
{
    watchers *ws = arg;
    struct curl_slist *h = fb_headers(ws->s);
    CURLM *m = curl_multi_init();
    CURL **cs = calloc((size_t)ws->n, sizeof *cs);
    char url[512];
    snprintf(url, sizeof url,
             "%s/api/v1/namespaces/" NS "/configmaps?watch=1&resourceVersion=%lld&allowWatchBookmarks=true"
             "&timeoutSeconds=1800",
             ws->s->url, ws->from_rv);
    for (int i = 0; i < ws->n; i++) {
        cs[i] = fb_curl_new(ws->s, h);
        curl_easy_setopt(cs[i], CURLOPT_URL, url);
        curl_easy_setopt(cs[i], CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(cs[i], CURLOPT_WRITEDATA, ws);
        curl_easy_setopt(cs[i], CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(cs[i], CURLOPT_HEADERDATA, ws);
        curl_multi_add_handle(m, cs[i]);
    }
    int running;
    while (!atomic_load(&ws->stop)) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)) != NULL)
            if (msg->msg == CURLMSG_DONE)
                atomic_fetch_add(&ws->ended, 1);
        curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    for (int i = 0; i < ws->n; i++) {
        curl_multi_remove_handle(m, cs[i]);
        curl_easy_cleanup(cs[i]);
    }
    free(cs);
    curl_multi_cleanup(m);
    curl_slist_free_all(h);
    return NULL;
}

static long long file_size(const char *dir, const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: memory [--flotilla PATH] [--objects 100000] [--size BYTES] [--clients 16]\n"
                    "              [--watchers 100] [--dir PARENT] [--http] [--no-fsync] [--keep]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *flotilla_arg = NULL, *parent = NULL;
    int nobj = 100000, clients = 16, nwatch = 100;
    size_t size = 1024;
    bool http = false, nofsync = false, keep = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool hv = i + 1 < argc;
        if (!strcmp(a, "--flotilla") && hv)
            flotilla_arg = argv[++i];
        else if (!strcmp(a, "--objects") && hv)
            nobj = atoi(argv[++i]);
        else if (!strcmp(a, "--size") && hv)
            size = (size_t)atol(argv[++i]);
        else if (!strcmp(a, "--clients") && hv)
            clients = atoi(argv[++i]);
        else if (!strcmp(a, "--watchers") && hv)
            nwatch = atoi(argv[++i]);
        else if (!strcmp(a, "--dir") && hv)
            parent = argv[++i];
        else if (!strcmp(a, "--http"))
            http = true;
        else if (!strcmp(a, "--no-fsync"))
            nofsync = true;
        else if (!strcmp(a, "--keep"))
            keep = true;
        else
            usage();
    }
    if (nobj <= 0 || nobj > 9999999 || clients <= 0 || nwatch < 0)
        usage();
    fb_raise_nofile();
    curl_global_init(CURL_GLOBAL_ALL);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *dir = fb_mkdtemp(parent, "fl-bench-mem");
    const char *extra[3] = {0};
    int ne = 0;
    if (http)
        extra[ne++] = "--insecure-http";
    if (nofsync)
        extra[ne++] = "--no-fsync";
    fb_server s;
    if (fb_server_start(flotilla, dir, extra, &s))
        return 1;
    printf("memory: %s, server %s (pid %d), %d ConfigMaps of %zu B payload, %d loading clients, %d watchers\n",
           flotilla, s.url, (int)s.pid, nobj, size, clients, nwatch);
    int status = 0;

    /* baseline: the idle fresh server (after its startup writes have settled) */
    sleep(2);
    long idle_rss = fb_proc_kib(s.pid, "VmRSS");
    long idle_threads = fb_proc_kib(s.pid, "Threads");
    printf("idle fresh server: VmRSS %.1f MiB, %ld threads\n", idle_rss / 1024.0, idle_threads);
    fflush(stdout);

    struct curl_slist *h = fb_headers(&s);
    CURL *c = fb_curl_new(&s, h);
    fb_buf out = {0};
    const char *nsbody = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" NS "\"}}";
    long code = fb_request(c, &s, "POST", "/api/v1/namespaces", nsbody, strlen(nsbody), &out);
    if (code != 201) {
        printf("SERVER PROBLEM: creating namespace: HTTP %ld %s\n", code, out.p ? out.p : "");
        return 1;
    }

    /* load */
    job load;
    memset(&load, 0, sizeof load);
    load.s = &s;
    load.n = nobj;
    load.clients = clients;
    load.size = size;
    double secs = run_job(&load);
    int created = atomic_load(&load.done);
    printf("loaded %d of %d ConfigMaps in %.1f s (%.0f creates/s), errors %d\n", created, nobj, secs,
           created / secs, atomic_load(&load.errors));
    if (atomic_load(&load.errors) || created != nobj) {
        printf("SERVER PROBLEM: %d creates failed or did not run; first: %s\n", nobj - created, load.first_err);
        status = 1;
    }
    if (!fb_server_alive(&s)) {
        printf("SERVER PROBLEM: the server died while loading\n");
        return 1;
    }
    sleep(2);
    long loaded_rss = fb_proc_kib(s.pid, "VmRSS");
    printf("after load, no watchers: VmRSS %.1f MiB, %ld threads\n", loaded_rss / 1024.0,
           fb_proc_kib(s.pid, "Threads"));
    fflush(stdout);

    /* watchers */
    watchers ws;
    memset(&ws, 0, sizeof ws);
    ws.s = &s;
    ws.n = nwatch;
    ws.from_rv = atomic_load(&load.max_rv);
    pthread_t wth;
    int opened = 0;
    if (nwatch > 0) {
        pthread_create(&wth, NULL, watchers_main, &ws);
        int64_t deadline = fb_now_ns() + 60LL * 1000000000LL;
        while (fb_now_ns() < deadline && (opened = atomic_load(&ws.opened)) < nwatch)
            usleep(20000);
        if (opened < nwatch) {
            printf("SERVER PROBLEM: only %d of %d watches answered within 60 s\n", opened, nwatch);
            status = 1;
        }
    }
    sleep(3);
    long rss = fb_proc_kib(s.pid, "VmRSS"), hwm = fb_proc_kib(s.pid, "VmHWM");
    long threads = fb_proc_kib(s.pid, "Threads");
    printf("with %d watchers open: VmRSS %.1f MiB (peak VmHWM %.1f MiB), %ld threads; watch streams ended: %ld\n",
           opened, rss / 1024.0, hwm / 1024.0, threads, atomic_load(&ws.ended));
    fflush(stdout);

    /* raw size: every object as GET returns it */
    job get;
    memset(&get, 0, sizeof get);
    get.s = &s;
    get.n = nobj;
    get.clients = clients;
    get.size = size;
    get.get = true;
    secs = run_job(&get);
    int got = atomic_load(&get.done);
    long long raw = atomic_load(&get.bytes);
    printf("read back %d of %d objects in %.1f s (%.0f gets/s): %lld bytes of JSON (%.1f MiB, %.0f B/object);"
           " create responses were %lld bytes\n",
           got, nobj, secs, got / secs, raw, raw / 1048576.0, got ? (double)raw / got : 0,
           (long long)atomic_load(&load.bytes));
    if (got != created) {
        printf("SERVER PROBLEM: %d acknowledged objects could not be read back; first: %s\n", created - got,
               get.first_err);
        status = 1;
    }
    if (nwatch > 0) {
        atomic_store(&ws.stop, 1);
        pthread_join(wth, NULL);
    }
    long long db = file_size(dir, "store.db"), wal = file_size(dir, "store.db-wal");
    double ratio = raw > 0 ? (rss * 1024.0) / (double)raw : 0;
    printf("\nSummary\n");
    printf("| objects | raw JSON MiB | idle fresh server RSS MiB | RSS after load MiB | RSS with %d watchers MiB |"
           " RSS / raw | (RSS - idle) / raw | store.db + wal MiB |\n",
           nwatch);
    printf("|---|---|---|---|---|---|---|---|\n");
    printf("| %d | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.1f |\n", got, raw / 1048576.0, idle_rss / 1024.0,
           loaded_rss / 1024.0, rss / 1024.0, ratio, raw > 0 ? ((rss - idle_rss) * 1024.0) / (double)raw : 0,
           (db + wal) / 1048576.0);
    printf("target RSS <= 3x raw data: %.2fx -> %s\n", ratio, ratio <= 3.0 ? "met" : "NOT met");
    free(out.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (fb_server_stop(&s) != 0)
        status = 1;
    fb_scratch_done(dir, keep);
    free(dir);
    curl_global_cleanup();
    return status;
}
