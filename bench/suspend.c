/* suspend.c - from `flotilla ctl suspend --wait` to acknowledged, on many clusters.
 *
 *   suspend [--clusters 100] [--rounds 20] [--pull] [--flotilla PATH] [--keep] [--each-round]
 *
 * Starts `flotilla server` and `flotilla member --clusters N`, joins them (Push, or with
 * --pull one `flotilla agent` each), and propagates one Deployment to all of them
 * (Duplicated). Then, alternately, suspends and resumes the policy, each round with the real
 * CLI as a user runs it: `flotilla ctl suspend|resume policy bench --wait`. Measured:
 *   - the CLI's wall time per round: the policy written, copied to the binding, the N Works
 *     rewritten, each acknowledged by its executor, seen by the CLI (P50/P99 over rounds);
 *   - per cluster, from the CLI's start to the moment a watch on Works sees that cluster's
 *     Work acknowledge (Dispatching condition at the Work's generation; P50/P99 over
 *     clusters x rounds).
 * Baseline, same run: the same CLI without --wait (process start, kubeconfig, TLS, one read
 * and one write), so the ratio is what waiting for the acknowledgement costs on top.
 * Target (issue 6): P99 <= 200 ms at 100 clusters, push and pull. */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

/* ---- the Work watch: per-cluster acknowledgement times of the current round ---- */

typedef struct acks {
    pthread_mutex_t mu;
    int clusters;
    bool want;            /* this round asks for suspension */
    int64_t start_ns;     /* this round's CLI start; 0 between rounds */
    int64_t *at;          /* per cluster: when acknowledged this round (0: not yet) */
    int64_t *written;     /* per cluster: when its Work first carried this round's spec */
    int count;
    fb_buf line;
    bool stop;
} acks;

/* Does this Work acknowledge `want` at its generation? (dispatching.h's rule) */
static bool acked(const json_t *w, bool want)
{
    json_t *spec = json_object_get(w, "spec");
    if (json_is_true(json_object_get(spec, "suspendDispatching")) != want)
        return false;
    json_int_t gen = json_integer_value(json_object_get(json_object_get(w, "metadata"), "generation"));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(w, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (!t || strcmp(t, "Dispatching"))
            continue;
        const char *st = json_string_value(json_object_get(c, "status"));
        return json_integer_value(json_object_get(c, "observedGeneration")) == gen && st &&
               !strcmp(st, want ? "False" : "True");
    }
    return false;
}

/* Replace the value of the first member named key in the JSON text with null, in place:
 * the watch reads a Work's metadata, suspension and conditions, and decoding its manifests
 * (most of its bytes) would make this process take CPU from the one it measures. */
static void blank_member(char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    char *v = strstr(text, pat);
    if (!v)
        return;
    v += strlen(pat);
    char *p = v;
    int depth = 0;
    do {
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            depth--;
        }
        if (*p)
            p++;
    } while (*p && depth > 0);
    if (depth != 0 || p - v < 4)
        return; /* not a container, or cut short: leave it to the decoder */
    memcpy(v, "null", 4);
    memmove(v + 4, p, strlen(p) + 1);
}

static void on_event(acks *a, char *text)
{
    blank_member(text, "workload");
    blank_member(text, "manifestStatuses");
    json_t *ev = json_loads(text, 0, NULL);
    json_t *w = json_object_get(ev, "object");
    const char *ns = json_string_value(json_object_get(json_object_get(w, "metadata"), "namespace"));
    int idx = ns && !strncmp(ns, "karmada-es-member", 17) ? atoi(ns + 17) - 1 : -1;
    int64_t now = fb_now_ns();
    pthread_mutex_lock(&a->mu);
    if (idx >= 0 && idx < a->clusters && a->start_ns && !a->written[idx] &&
        json_is_true(json_object_get(json_object_get(w, "spec"), "suspendDispatching")) == a->want)
        a->written[idx] = now;
    if (idx >= 0 && idx < a->clusters && a->start_ns && !a->at[idx] && acked(w, a->want)) {
        a->at[idx] = now;
        a->count++;
    }
    pthread_mutex_unlock(&a->mu);
    json_decref(ev);
}

static size_t watch_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    acks *a = userdata;
    size_t n = size * nmemb;
    fb_buf_write(ptr, size, nmemb, &a->line);
    char *nl;
    while (a->line.p && (nl = memchr(a->line.p, '\n', a->line.n))) {
        *nl = 0;
        on_event(a, a->line.p);
        size_t rest = a->line.n - (size_t)(nl + 1 - a->line.p);
        memmove(a->line.p, nl + 1, rest);
        a->line.n = rest;
        a->line.p[rest] = 0;
    }
    return n;
}

static int watch_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    acks *a = userdata;
    pthread_mutex_lock(&a->mu);
    bool stop = a->stop;
    pthread_mutex_unlock(&a->mu);
    return stop;
}

typedef struct watch_arg {
    const fb_server *s;
    acks *a;
} watch_arg;

static void *watch_main(void *arg)
{
    watch_arg *wa = arg;
    struct curl_slist *h = fb_headers(wa->s);
    CURL *c = fb_curl_new(wa->s, h);
    char url[400];
    snprintf(url, sizeof url, "%s/apis/work.karmada.io/v1alpha1/works?watch=1&timeoutSeconds=3600", wa->s->url);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, wa->a);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, wa->a);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return NULL;
}

/* ---- the CLI ---- */

/* Run `flotilla ctl --kubeconfig KC VERB policy bench [--wait]`; its exit code, or -1. Adds
 * the CPU time it used to *cpu_s (when not NULL). */
static int run_ctl(const char *flotilla, const char *kc, const char *verb, bool wait, double *cpu_s, long *csw)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char *args[] = {(char *)flotilla, "ctl", "--kubeconfig", (char *)kc, (char *)verb, "policy", "bench",
                        "--timeout", "60s", wait ? "--wait" : NULL, NULL};
        execv(flotilla, args);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) < 0)
        return -1;
    if (cpu_s)
        *cpu_s += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    if (csw)
        *csw += ru.ru_nvcsw + ru.ru_nivcsw;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* CPU seconds this process (the benchmark's watch, mostly) has used so far. */
static double self_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* CPU seconds used so far by the agents (none in push mode), and their context switches. */
static double agents_cpu_s(const pid_t *agents, int n, long *ctxsw)
{
    double t = 0;
    long cs = 0;
    for (int i = 0; agents && i < n; i++) {
        double a = fb_proc_cpu_s(agents[i]);
        t += a > 0 ? a : 0;
        long c = ctxsw ? fb_proc_ctxsw(agents[i]) : 0;
        cs += c > 0 ? c : 0;
    }
    if (ctxsw)
        *ctxsw = cs;
    return t;
}

/* Wait (at most 60 s) until every cluster acknowledged the current round. */
static bool wait_round(acks *a)
{
    int64_t deadline = fb_now_ns() + 60LL * 1000000000LL;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        int n = a->count;
        pthread_mutex_unlock(&a->mu);
        if (n >= a->clusters)
            return true;
        if (fb_now_ns() > deadline)
            return false;
        usleep(2000);
    }
}

static void begin_round(acks *a, bool want, int64_t t0)
{
    pthread_mutex_lock(&a->mu);
    a->want = want;
    a->start_ns = t0;
    a->count = 0;
    memset(a->at, 0, (size_t)a->clusters * sizeof *a->at);
    memset(a->written, 0, (size_t)a->clusters * sizeof *a->written);
    pthread_mutex_unlock(&a->mu);
}

int main(int argc, char **argv)
{
    int clusters = 100, rounds = 20;
    bool pull = false, keep = false, each = false;
    const char *flotilla_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--clusters") && i + 1 < argc)
            clusters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pull"))
            pull = true;
        else if (!strcmp(argv[i], "--keep"))
            keep = true;
        else if (!strcmp(argv[i], "--each-round"))
            each = true;
        else if (!strcmp(argv[i], "--flotilla") && i + 1 < argc)
            flotilla_arg = argv[++i];
        else {
            fprintf(stderr, "usage: suspend [--clusters N] [--rounds R] [--pull] [--flotilla PATH] [--keep] [--each-round]\n");
            return 2;
        }
    }
    if (clusters < 1 || rounds < 2)
        return 2;
    fb_raise_nofile();
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *root = fb_mkdtemp(NULL, "fl-bench-suspend");
    char sdir[600], mdir[600], kc[700];
    snprintf(sdir, sizeof sdir, "%s/server", root);
    snprintf(mdir, sizeof mdir, "%s/members", root);
    snprintf(kc, sizeof kc, "%s/kubeconfig", sdir);
    int problems = 0;

    fb_server s;
    if (fb_server_start(flotilla, sdir, NULL, &s))
        return 1;
    fb_member_host mh;
    if (fb_member_start(flotilla, mdir, clusters, &mh)) {
        fb_server_stop(&s);
        return 1;
    }
    struct curl_slist *h = fb_headers(&s);
    CURL *c = fb_curl_new(&s, h);
    fb_buf out = {0};
    pid_t *agents = NULL;
    problems += fb_join(flotilla, c, &s, &mh, mdir, clusters, pull, root, &agents);
    int ready = fb_wait_ready(c, &s, clusters, 300);
    printf("%d clusters (%s) Ready: %d\n", clusters, pull ? "pull, one agent each" : "push", ready);
    if (ready < clusters)
        problems++;

    /* one Deployment, Duplicated to every cluster */
    const char *deploy =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"bench\",\"namespace\":\"default\"},"
        "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"bench\"}},\"template\":{\"metadata\":"
        "{\"labels\":{\"app\":\"bench\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx\"}]}}}}";
    const char *pp =
        "{\"apiVersion\":\"policy.karmada.io/v1alpha1\",\"kind\":\"PropagationPolicy\",\"metadata\":{\"name\":\"bench\","
        "\"namespace\":\"default\"},\"spec\":{\"resourceSelectors\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
        "\"name\":\"bench\"}],\"placement\":{\"clusterAffinity\":{\"labelSelector\":{}},\"replicaScheduling\":"
        "{\"replicaSchedulingType\":\"Duplicated\"}}}}";
    if (fb_request(c, &s, "POST", "/apis/apps/v1/namespaces/default/deployments", deploy, strlen(deploy), &out) != 201 ||
        fb_request(c, &s, "POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", pp,
                   strlen(pp), &out) != 201) {
        fprintf(stderr, "SERVER PROBLEM: creating the Deployment and its policy: %.300s\n", out.p);
        problems++;
    }

    acks a = {.clusters = clusters, .at = calloc((size_t)clusters, sizeof(int64_t)),
              .written = calloc((size_t)clusters, sizeof(int64_t))};
    pthread_mutex_init(&a.mu, NULL);
    watch_arg wa = {&s, &a};
    pthread_t wt;
    pthread_create(&wt, NULL, watch_main, &wa);
    /* delivered and acknowledged as dispatching everywhere before the first round */
    begin_round(&a, false, fb_now_ns());
    if (!wait_round(&a)) {
        fprintf(stderr, "SERVER PROBLEM: the Deployment was not delivered to all %d clusters (%d)\n", clusters, a.count);
        problems++;
    }

    /* at rest: what the fleet costs with nothing to do (leases, status passes, resyncs); it
     * lands on some rounds and not others, so it shows in the P99 more than in the P50 */
    double rest_s = 3, rs0 = fb_proc_cpu_s(s.pid), ra0 = agents_cpu_s(agents, clusters, NULL);
    usleep((useconds_t)(rest_s * 1e6));
    double rs1 = fb_proc_cpu_s(s.pid), ra1 = agents_cpu_s(agents, clusters, NULL);
    printf("at rest, %.0f s: server %.1f ms of CPU per second, agents %.1f ms per second\n", rest_s,
           (rs1 - rs0) * 1000 / rest_s, (ra1 - ra0) * 1000 / rest_s);
    /* baseline: the CLI without --wait (each round then waits for the acknowledgement itself) */
    int nb = rounds < 10 ? rounds : 10;
    int64_t *base = calloc((size_t)nb, sizeof *base);
    int64_t *base_per = calloc((size_t)nb * (size_t)clusters, sizeof *base_per);
    size_t nbase_per = 0;
    double base_cpu = 0;
    for (int r = 0; r < nb && !problems; r++) {
        bool want = r % 2 == 0;
        int64_t t0 = fb_now_ns();
        begin_round(&a, want, t0);
        if (run_ctl(flotilla, kc, want ? "suspend" : "resume", false, &base_cpu, NULL) != 0)
            problems++;
        base[r] = fb_now_ns() - t0;
        if (!wait_round(&a))
            problems++;
        pthread_mutex_lock(&a.mu);
        for (int i = 0; i < clusters; i++)
            base_per[nbase_per++] = a.at[i] - t0;
        pthread_mutex_unlock(&a.mu);
    }
    /* the measurement: --wait */
    int64_t *cli = calloc((size_t)rounds, sizeof *cli);
    int64_t *per = calloc((size_t)rounds * (size_t)clusters, sizeof *per);
    int64_t *wr = calloc((size_t)rounds * (size_t)clusters, sizeof *wr);
    int64_t *ex = calloc((size_t)rounds * (size_t)clusters, sizeof *ex);
    /* per round: the first and the last Work rewritten, the last acknowledged */
    int64_t *first_wr = calloc((size_t)rounds, sizeof *first_wr), *last_wr = calloc((size_t)rounds, sizeof *last_wr),
            *last_ack = calloc((size_t)rounds, sizeof *last_ack);
    size_t nper = 0;
    fb_reqsnap wbefore = fb_snap_requests(&s);
    long csw0 = fb_proc_ctxsw(s.pid), acsw0 = 0, cli_csw = 0;
    double cpu0 = fb_proc_cpu_s(s.pid), member0 = fb_proc_cpu_s(mh.pid), agents0 = agents_cpu_s(agents, clusters, &acsw0);
    double self0 = self_cpu_s();
    double cli_cpu = 0;
    int64_t rounds_t0 = fb_now_ns();
    for (int r = 0; r < rounds && !problems; r++) {
        bool want = r % 2 == 0;
        int64_t t0 = fb_now_ns();
        begin_round(&a, want, t0);
        int rc = run_ctl(flotilla, kc, want ? "suspend" : "resume", true, &cli_cpu, &cli_csw);
        cli[r] = fb_now_ns() - t0;
        if (each) /* when in the run each round came, to see what the slow ones coincide with */
            printf("round %d at %.3f s: %.1f ms\n", r, (double)(t0 - rounds_t0) / 1e9, (double)cli[r] / 1e6);
        pthread_mutex_lock(&a.mu);
        int seen = a.count;
        pthread_mutex_unlock(&a.mu);
        if (rc != 0) {
            fprintf(stderr, "PROBLEM: round %d: the CLI exited %d\n", r, rc);
            problems++;
        }
        /* the CLI returned: every cluster must have acknowledged by now (the watch may lag a
         * little behind the CLI's own read) */
        if (!wait_round(&a) || seen < 0)
            problems++;
        pthread_mutex_lock(&a.mu);
        for (int i = 0; i < clusters; i++) {
            wr[nper] = (a.written[i] ? a.written[i] : a.at[i]) - t0;
            ex[nper] = a.at[i] - (a.written[i] ? a.written[i] : a.at[i]);
            per[nper] = a.at[i] - t0;
            if (i == 0 || wr[nper] < first_wr[r])
                first_wr[r] = wr[nper];
            if (wr[nper] > last_wr[r])
                last_wr[r] = wr[nper];
            if (per[nper] > last_ack[r])
                last_ack[r] = per[nper];
            nper++;
        }
        pthread_mutex_unlock(&a.mu);
    }
    long csw1 = fb_proc_ctxsw(s.pid), acsw1 = 0;
    double cpu1 = fb_proc_cpu_s(s.pid), member1 = fb_proc_cpu_s(mh.pid), agents1 = agents_cpu_s(agents, clusters, &acsw1);
    double self1 = self_cpu_s();
    fb_reqsnap wafter = fb_snap_requests(&s);
    pthread_mutex_lock(&a.mu);
    a.stop = true;
    pthread_mutex_unlock(&a.mu);
    pthread_join(wt, NULL);

    double b50 = fb_pct_ms(base, (size_t)nb, 50), b99 = fb_pct_sorted_ms(base, (size_t)nb, 99);
    double c50 = fb_pct_ms(cli, (size_t)rounds, 50), c99 = fb_pct_sorted_ms(cli, (size_t)rounds, 99),
           cmax = fb_pct_sorted_ms(cli, (size_t)rounds, 100);
    double p50 = fb_pct_ms(per, nper, 50), p99 = fb_pct_sorted_ms(per, nper, 99);
    double bp50 = fb_pct_ms(base_per, nbase_per, 50), bp99 = fb_pct_sorted_ms(base_per, nbase_per, 99);
    printf("baseline `ctl suspend|resume policy` without --wait, %d rounds: P50 %.1f ms  P99 %.1f ms; "
           "per cluster, CLI start -> acknowledged with no CLI waiting: P50 %.1f ms  P99 %.1f ms\n",
           nb, b50, b99, bp50, bp99);
    printf("`ctl suspend|resume policy --wait` on %d clusters (%s), %d rounds: P50 %.1f ms  P99 %.1f ms  max %.1f ms"
           "  (x%.1f the baseline P50)\n",
           clusters, pull ? "pull" : "push", rounds, c50, c99, cmax, b50 > 0 ? c50 / b50 : 0);
    printf("per cluster, CLI start -> its Work acknowledged (%zu samples): P50 %.1f ms  P99 %.1f ms\n", nper, p50, p99);
    double w50 = fb_pct_ms(wr, nper, 50), w99 = fb_pct_sorted_ms(wr, nper, 99);
    double e50 = fb_pct_ms(ex, nper, 50), e99 = fb_pct_sorted_ms(ex, nper, 99);
    printf("  of which CLI start -> the Work rewritten: P50 %.1f ms  P99 %.1f ms; Work rewritten -> acknowledged: "
           "P50 %.1f ms  P99 %.1f ms\n", w50, w99, e50, e99);
    printf("  a round's course, P50 over rounds: CLI start -> first Work rewritten %.1f ms -> last Work rewritten "
           "%.1f ms -> last acknowledged %.1f ms -> CLI exit %.1f ms\n",
           fb_pct_ms(first_wr, (size_t)rounds, 50), fb_pct_ms(last_wr, (size_t)rounds, 50),
           fb_pct_ms(last_ack, (size_t)rounds, 50), c50);
    fb_print_writes(&wbefore, &wafter, rounds, "round");
    printf("  server CPU: %.1f ms per round (user + system, over the --wait rounds)\n",
           cpu0 >= 0 && cpu1 >= 0 ? (cpu1 - cpu0) * 1000 / rounds : -1);
    printf("  CPU per round elsewhere: member host %.1f ms, agents %.1f ms, the CLI %.1f ms (%.1f ms without --wait)\n",
           (member1 - member0) * 1000 / rounds, (agents1 - agents0) * 1000 / rounds, cli_cpu * 1000 / rounds,
           nb ? base_cpu * 1000 / nb : 0);
    /* steadier than CPU time on a shared host: it counts hand-offs, not how long each took */
    printf("  context switches per round: server %.0f, agents %.0f, the CLI %.0f\n",
           (double)(csw1 - csw0) / rounds, (double)(acsw1 - acsw0) / rounds, (double)cli_csw / rounds);
    /* The physical limit: every process's CPU of a round, spread over every core, is as
     * short as a round can be on this machine. */
    double all_ms = ((cpu1 - cpu0) + (member1 - member0) + (agents1 - agents0) + cli_cpu + (self1 - self0)) * 1000 /
                    rounds;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    printf("  all processes (with this benchmark's watch, %.1f ms): %.1f ms of CPU per round; on %ld cores no round "
           "can take less than %.1f ms (the P50 is x%.2f that)\n",
           (self1 - self0) * 1000 / rounds, all_ms, ncpu, all_ms / (double)ncpu,
           all_ms > 0 ? c50 / (all_ms / (double)ncpu) : 0);
    fb_snap_free(&wbefore);
    fb_snap_free(&wafter);
    printf("target P99 <= 200 ms: %s\n", problems ? "NOT MEASURED (problems above)" : c99 <= 200 ? "met" : "NOT met");

    free(base);
    free(base_per);
    free(cli);
    free(per);
    free(wr);
    free(ex);
    free(first_wr);
    free(last_wr);
    free(last_ack);
    free(a.at);
    free(a.written);
    free(a.line.p);
    free(out.p);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    fb_agents_stop(agents, clusters);
    fb_member_stop(&mh);
    if (fb_server_stop(&s) != 0)
        problems++;
    fb_scratch_done(root, keep);
    return problems ? 1 : 0;
}
