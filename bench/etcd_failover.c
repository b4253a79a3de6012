/* etcd_failover.c - how long the controllers go without a leader when the leading replica
 * dies or stops (issue 40's fourth benchmark).
 *
 * A 3-member etcd cluster (fb_etcd_start) and two `flotilla server` replicas on it (prefix
 * /bench-failover, the second with a copy of the first's pki/). Each trial stops the replica
 * that leads, either with kill -9 (a crash: its lease of 5 s must lapse) or with SIGTERM (a
 * clean stop: it gives the lease back), alternating, and measures from the signal to the
 * other replica's log line "<identity> leads the controllers" (the survivor's log is read
 * every 2 ms), then to the Lease kube-system/flotilla-controller-manager naming it as read
 * through the survivor's API. The stopped replica is started again on its data directory,
 * as a standby (its log of the trial kept as server-N.log), and leads in the next trial.
 *
 * Baseline in the same run, etcd alone: a thread does what a crashed leader's lease does, over
 * and over while the crash trials run: grant a lease of the same TTL, put a key on it, renew
 * it every third of the TTL, stop renewing at a random moment, and poll the key every 100 ms
 * (as a standby does) until it is gone: that is the floor a crash failover can reach with this
 * TTL. For a clean stop, after each trial the main thread times the round trips a handover
 * needs at least: revoke a lease, see the key gone, grant a lease, create the key.
 *
 * Targets: crash P99 <= 6 s (TTL + 1 s); clean stop in milliseconds (printed against 1 s).
 *
 * Usage: etcd_failover [--trials 20] [--flotilla PATH] [--dir PARENT] [--keep] */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define TTL_S 5 /* the server's lease (src/cli/server_lead.c) */
#define MAX_TRIALS 200

static int problems;

/* ---- a replica ---- */

typedef struct replica {
    fb_server s;
    char dir[600];
    char id[300];   /* its identity this run, from "<id> campaigns to lead the controllers"
                       or "<id> stands by: ..." */
    int starts;
} replica;

/* The word before `tail` in dir/server.log from byte `from` on, into out; true if found. *end
 * (may be NULL) gets the offset just past the match. */
static bool log_find(const char *dir, const char *tail, size_t from, char *out, size_t outsz, size_t *end)
{
    char path[700];
    snprintf(path, sizeof path, "%s/server.log", dir);
    char *log = fb_slurp(path);
    if (!log)
        return false;
    bool found = false;
    if (strlen(log) > from) {
        const char *m = strstr(log + from, tail);
        if (m) {
            const char *w = m;
            while (w > log && w[-1] != ' ' && w[-1] != '\n')
                w--;
            snprintf(out, outsz, "%.*s", (int)(m - w), w);
            if (end)
                *end = (size_t)(m - log) + strlen(tail);
            found = true;
        }
    }
    free(log);
    return found;
}

static int replica_start(const char *flotilla, replica *r, const char *endpoints)
{
    const char *x[] = {"--etcd-servers", endpoints, "--etcd-prefix", "/bench-failover", NULL};
    if (fb_server_start(flotilla, r->dir, x, &r->s))
        return -1;
    r->starts++;
    for (int64_t dl = fb_now_ns() + 20 * NS_PER_S; fb_now_ns() < dl; usleep(10000))
        if (log_find(r->dir, " campaigns to lead the controllers", 0, r->id, sizeof r->id, NULL) ||
            log_find(r->dir, " stands by: the controllers are led by", 0, r->id, sizeof r->id, NULL))
            return 0;
    fprintf(stderr, "SERVER PROBLEM: %s/server.log never says it campaigns to lead the controllers or stands by\n",
            r->dir);
    return -1;
}

static bool replica_leads(const replica *r)
{
    char id[300], tail[400];
    snprintf(tail, sizeof tail, " leads the controllers");
    return log_find(r->dir, tail, 0, id, sizeof id, NULL) && !strcmp(id, r->id);
}

/* The Lease's holderIdentity as r's API serves it, into out ("" when unreadable). */
static void lease_holder(CURL *c, const replica *r, char *out, size_t outsz)
{
    fb_buf b = {0};
    out[0] = 0;
    if (fb_request(c, &r->s, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                                     "flotilla-controller-manager", NULL, 0, &b) == 200) {
        const char *h = strstr(b.p, "\"holderIdentity\":\"");
        if (h) {
            h += strlen("\"holderIdentity\":\"");
            snprintf(out, outsz, "%.*s", (int)strcspn(h, "\""), h);
        }
    }
    free(b.p);
}

/* ---- etcd directly ---- */

typedef struct etcdc {
    fb_server m; /* url only: the member's gateway */
    CURL *c;
    struct curl_slist *h;
    fb_buf out;
} etcdc;

static void etcdc_init(etcdc *e, const fb_etcd *cl)
{
    memset(e, 0, sizeof *e);
    fb_etcd_url(cl, 0, e->m.url, sizeof e->m.url);
    e->h = fb_headers(&e->m);
    e->c = fb_curl_new(&e->m, e->h);
}

static void etcdc_close(etcdc *e)
{
    curl_easy_cleanup(e->c);
    curl_slist_free_all(e->h);
    free(e->out.p);
}

/* POST body to path; the answer in e->out.p. HTTP code. */
static long etcdc_post(etcdc *e, const char *path, const char *body)
{
    return fb_request(e->c, &e->m, "POST", path, body, strlen(body), &e->out);
}

/* A number after "field":" in e->out, or 0. */
static long long etcdc_num(etcdc *e, const char *field)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":\"", field);
    const char *p = e->out.p ? strstr(e->out.p, k) : NULL;
    return p ? strtoll(p + strlen(k), NULL, 10) : 0;
}

static long long lease_grant(etcdc *e)
{
    char body[64];
    snprintf(body, sizeof body, "{\"TTL\":\"%d\"}", TTL_S);
    return etcdc_post(e, "/v3/lease/grant", body) == 200 ? etcdc_num(e, "ID") : 0;
}

/* Create key (base64 k64) on the lease if absent: true when created. */
static bool key_create(etcdc *e, const char *k64, long long lease)
{
    char body[400];
    snprintf(body, sizeof body,
             "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
             "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"eA==\",\"lease\":\"%lld\"}}]}",
             k64, k64, lease);
    return etcdc_post(e, "/v3/kv/txn", body) == 200 && strstr(e->out.p, "\"succeeded\":true");
}

/* Whether the key exists (false on errors too: the poll tries again). */
static bool key_exists(etcdc *e, const char *k64)
{
    char body[200];
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"count_only\":true}", k64);
    return etcdc_post(e, "/v3/kv/range", body) == 200 && etcdc_num(e, "count") > 0;
}

static void lease_revoke(etcdc *e, long long lease)
{
    char body[64];
    snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", lease);
    etcdc_post(e, "/v3/lease/revoke", body);
}

static bool lease_keepalive(etcdc *e, long long lease)
{
    char body[64];
    snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", lease);
    return etcdc_post(e, "/v3/lease/keepalive", body) == 200 && etcdc_num(e, "TTL") > 0;
}

/* The baseline thread: lease expiries of etcd alone while `run` holds. */
typedef struct expiry_base {
    const fb_etcd *cl;
    atomic_bool run;
    int64_t v[MAX_TRIALS * 2];
    int n;
    pthread_t th;
} expiry_base;

static void *expiry_main(void *arg)
{
    expiry_base *b = arg;
    etcdc e;
    etcdc_init(&e, b->cl);
    char *k64 = fb_b64("/bench-baseline/crash", strlen("/bench-baseline/crash"));
    unsigned seed = (unsigned)fb_now_ns();
    int64_t period = TTL_S * NS_PER_S / 3;
    while (atomic_load(&b->run) && b->n < (int)(sizeof b->v / sizeof b->v[0])) {
        long long lease = lease_grant(&e);
        if (!lease || !key_create(&e, k64, lease)) {
            usleep(200000);
            continue;
        }
        /* one or two renewals, then the "crash" at a random point of a renewal period */
        int64_t t = fb_now_ns();
        for (int r = 0; r < 1 + (int)(rand_r(&seed) % 2); r++) {
            t += period;
            fb_sleep_until(t);
            lease_keepalive(&e, lease);
        }
        fb_sleep_until(fb_now_ns() + (int64_t)(rand_r(&seed) % 1000) * period / 1000);
        int64_t crash = fb_now_ns();
        while (key_exists(&e, k64) && fb_now_ns() - crash < 30 * NS_PER_S)
            usleep(100000);
        b->v[b->n++] = fb_now_ns() - crash;
    }
    free(k64);
    etcdc_close(&e);
    return NULL;
}

/* The round trips a clean handover needs at least: revoke, see the key gone, grant, create. */
static int64_t clean_floor(etcdc *e)
{
    char *k64 = fb_b64("/bench-baseline/clean", strlen("/bench-baseline/clean"));
    long long l1 = lease_grant(e);
    int64_t d = -1;
    if (l1 && key_create(e, k64, l1)) {
        int64_t t0 = fb_now_ns();
        lease_revoke(e, l1);
        bool gone = !key_exists(e, k64);
        long long l2 = lease_grant(e);
        bool made = l2 && key_create(e, k64, l2);
        d = gone && made ? fb_now_ns() - t0 : -1;
        if (l2)
            lease_revoke(e, l2);
    }
    free(k64);
    return d;
}

/* ---- trials ---- */

typedef struct trial {
    bool crash;
    int64_t lead_ns, lease_ns; /* from the signal to the log line, to the Lease naming it */
} trial;

/* Stop `old` (the leader) with sig, time `next` taking over. 0, or -1 (nothing recorded). */
static int run_trial(replica *old, replica *next, bool crash, trial *t)
{
    char id[300];
    size_t seen = 0;
    char path[700];
    snprintf(path, sizeof path, "%s/server.log", next->dir);
    char *log = fb_slurp(path);
    seen = log ? strlen(log) : 0; /* only a line written after the signal counts */
    free(log);
    struct curl_slist *h = fb_headers(&next->s);
    CURL *c = fb_curl_new(&next->s, h);
    t->crash = crash;
    t->lead_ns = t->lease_ns = -1;
    int64_t t0 = fb_now_ns();
    kill(old->s.pid, crash ? SIGKILL : SIGTERM);
    for (int64_t dl = t0 + 30 * NS_PER_S; fb_now_ns() < dl; usleep(2000)) {
        if (log_find(next->dir, " leads the controllers", seen, id, sizeof id, NULL) && !strcmp(id, next->id)) {
            t->lead_ns = fb_now_ns() - t0;
            break;
        }
    }
    char holder[300] = "";
    for (int64_t dl = fb_now_ns() + 10 * NS_PER_S; t->lead_ns > 0 && fb_now_ns() < dl; usleep(5000)) {
        lease_holder(c, next, holder, sizeof holder);
        if (!strcmp(holder, next->id)) {
            t->lease_ns = fb_now_ns() - t0;
            break;
        }
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    /* reap the old leader: a clean stop must exit 0 */
    int st = 0;
    pid_t r = 0;
    for (int64_t dl = fb_now_ns() + 15 * NS_PER_S; (r = waitpid(old->s.pid, &st, WNOHANG)) == 0 && fb_now_ns() < dl;)
        usleep(10000);
    if (r == 0) {
        fprintf(stderr, "SERVER PROBLEM: the leader did not stop within 15 s of SIGTERM; killing it\n");
        kill(old->s.pid, SIGKILL);
        waitpid(old->s.pid, &st, 0);
        problems++;
    } else if (!crash && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        fprintf(stderr, "SERVER PROBLEM: the leader stopped with status 0x%x after SIGTERM\n", st);
        problems++;
    }
    old->s.pid = -1;
    if (t->lead_ns < 0) {
        fprintf(stderr, "SERVER PROBLEM: %s did not lead within 30 s of the leader's %s\n", next->id,
                crash ? "kill -9" : "SIGTERM");
        problems++;
        return -1;
    }
    if (t->lease_ns < 0) {
        fprintf(stderr, "SERVER PROBLEM: the Lease still names \"%s\" 10 s after %s led\n", holder, next->id);
        problems++;
    }
    return 0;
}

static void print_stats(const char *what, int64_t *v, int n, const char *target)
{
    if (n == 0) {
        printf("| %s | - | - | - | - | %s |\n", what, target);
        return;
    }
    double p50 = fb_pct_ms(v, (size_t)n, 50);
    printf("| %s | %d | %.0f | %.0f | %.0f | %s |\n", what, n, p50, fb_pct_sorted_ms(v, (size_t)n, 99),
           fb_pct_sorted_ms(v, (size_t)n, 100), target);
}

int main(int argc, char **argv)
{
    int trials = 20;
    bool keep = false;
    const char *flotilla_arg = NULL, *parent = NULL;
    for (int i = 1; i < argc; i++) {
        bool hv = i + 1 < argc;
        if (!strcmp(argv[i], "--trials") && hv)
            trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--flotilla") && hv)
            flotilla_arg = argv[++i];
        else if (!strcmp(argv[i], "--dir") && hv)
            parent = argv[++i];
        else if (!strcmp(argv[i], "--keep"))
            keep = true;
        else {
            fprintf(stderr, "usage: etcd_failover [--trials 20] [--flotilla PATH] [--dir PARENT] [--keep]\n");
            return 2;
        }
    }
    if (trials < 1 || trials > MAX_TRIALS)
        return 2;
    curl_global_init(CURL_GLOBAL_ALL);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *dir = fb_mkdtemp(parent, "fl-bench-failover");
    char edir[600], load[96];
    snprintf(edir, sizeof edir, "%s/etcd", dir);
    printf("etcd_failover: %s, %d crash + %d clean-stop trials, lease %d s, %ld cores, %s\n", flotilla, trials, trials,
           TTL_S, sysconf(_SC_NPROCESSORS_ONLN), fb_loadavg(load, sizeof load));
    fb_etcd cl;
    if (fb_etcd_start(edir, 3, &cl))
        return 1;
    replica rep[2] = {0};
    snprintf(rep[0].dir, sizeof rep[0].dir, "%s/replica-1", dir);
    snprintf(rep[1].dir, sizeof rep[1].dir, "%s/replica-2", dir);
    int rc = 1;
    if (replica_start(flotilla, &rep[0], cl.endpoints))
        goto out;
    for (int64_t dl = fb_now_ns() + 20 * NS_PER_S; !replica_leads(&rep[0]) && fb_now_ns() < dl;)
        usleep(10000);
    if (!replica_leads(&rep[0])) {
        fprintf(stderr, "SERVER PROBLEM: replica-1 alone never led the controllers\n");
        goto out;
    }
    if (fb_share_pki(rep[0].dir, rep[1].dir) || replica_start(flotilla, &rep[1], cl.endpoints))
        goto out;
    printf("etcd %s; replica-1 %s leads (%s), replica-2 %s stands by (%s)\n", cl.endpoints, rep[0].s.url, rep[0].id,
           rep[1].s.url, rep[1].id);

    expiry_base base = {.cl = &cl};
    atomic_init(&base.run, true);
    pthread_create(&base.th, NULL, expiry_main, &base);
    etcdc ec;
    etcdc_init(&ec, &cl);
    trial *tr = calloc((size_t)trials * 2, sizeof *tr);
    int64_t clean_base[MAX_TRIALS];
    int ntr = 0, nclean_base = 0, leader = 0;
    unsigned seed = (unsigned)fb_now_ns();
    printf("\n| trial | stop | leader's identity | to \"leads\" ms | to Lease ms |\n|---|---|---|---|---|\n");
    for (int i = 0; i < 2 * trials; i++) {
        replica *old = &rep[leader], *next = &rep[1 - leader];
        bool crash = i % 2 == 0;
        /* a random moment in the leader's renewal period, so crashes do not lock to its phase */
        usleep((useconds_t)(rand_r(&seed) % 1700) * 1000);
        if (run_trial(old, next, crash, &tr[ntr]) != 0)
            break;
        printf("| %d | %s | %.24s | %.0f | %.0f |\n", i + 1, crash ? "kill -9" : "SIGTERM", next->id,
               tr[ntr].lead_ns / 1e6, tr[ntr].lease_ns / 1e6);
        fflush(stdout);
        ntr++;
        if (!crash && nclean_base < MAX_TRIALS) {
            int64_t f = clean_floor(&ec);
            if (f > 0)
                clean_base[nclean_base++] = f;
        }
        /* the stopped one comes back as the standby, its trial's log kept aside */
        char a[700], b[720];
        snprintf(a, sizeof a, "%s/server.log", old->dir);
        snprintf(b, sizeof b, "%s/server-%d.log", old->dir, old->starts);
        rename(a, b);
        if (replica_start(flotilla, old, cl.endpoints))
            break;
        leader = 1 - leader;
    }
    atomic_store(&base.run, false);
    pthread_join(base.th, NULL);
    etcdc_close(&ec);

    int64_t crash_v[MAX_TRIALS], crash_l[MAX_TRIALS], clean_v[MAX_TRIALS], clean_l[MAX_TRIALS];
    int nc = 0, ns = 0;
    for (int i = 0; i < ntr; i++) {
        if (tr[i].crash) {
            crash_v[nc] = tr[i].lead_ns;
            crash_l[nc++] = tr[i].lease_ns > 0 ? tr[i].lease_ns : tr[i].lead_ns;
        } else {
            clean_v[ns] = tr[i].lead_ns;
            clean_l[ns++] = tr[i].lease_ns > 0 ? tr[i].lease_ns : tr[i].lead_ns;
        }
    }
    printf("\nSummary (lease %d s, %s at the end)\n", TTL_S, fb_loadavg(load, sizeof load));
    printf("| measurement | trials | P50 ms | P99 ms | max ms | target |\n|---|---|---|---|---|---|\n");
    print_stats("kill -9: survivor logs that it leads", crash_v, nc, "P99 <= 6000 ms");
    print_stats("kill -9: the Lease names it (via its API)", crash_l, nc, "");
    print_stats("baseline: an etcd lease of 5 s left unrenewed, until a 100 ms poll sees its key gone", base.v, base.n,
                "");
    print_stats("SIGTERM: survivor logs that it leads", clean_v, ns, "milliseconds (<= 1000 ms)");
    print_stats("SIGTERM: the Lease names it (via its API)", clean_l, ns, "");
    print_stats("baseline: revoke + see the key gone + grant + create, straight to etcd", clean_base, nclean_base, "");
    double c99 = nc ? fb_pct_ms(crash_v, (size_t)nc, 99) : 1e9, s99 = ns ? fb_pct_ms(clean_v, (size_t)ns, 99) : 1e9;
    printf("target crash failover P99 <= 6 s: %.2f s -> %s\n", c99 / 1000, c99 <= 6000 ? "met" : "NOT met");
    printf("target clean-stop failover in milliseconds (P99 <= 1 s): %.0f ms -> %s\n", s99, s99 <= 1000 ? "met" : "NOT met");
    rc = ntr == 2 * trials && !problems ? 0 : 1;
    free(tr);
out:
    for (int i = 0; i < 2; i++)
        if (rep[i].s.pid > 0 && fb_server_stop(&rep[i].s) != 0)
            rc = 1;
    fb_etcd_stop(&cl);
    fb_scratch_done(dir, keep);
    free(dir);
    curl_global_cleanup();
    return rc;
}
