/* propagation.c - the whole propagation path measured from outside: template in, objects
 * out in the members (issue 4's benchmark list).
 *
 *   propagation [--phases 1,2,3,4] [--clusters 10,100] [--items 20] [--gap-ms auto]
 *               [--mem-objects 300] [--mem-clusters 10] [--burst 1000] [--burst-clusters 10]
 *               [--restart-objects 300] [--restart-clusters 3] [--conns 8]
 *               [--prop-deadline-s 300] [--no-stages] [--hold-s N] [--flotilla PATH] [--keep] [--etcd]
 *
 * --etcd (issue 40): phase 1 runs twice, on SQLite and then with the server's store in a
 * 3-member etcd cluster the benchmark starts (fb_etcd_start); the summary gives etcd's P99
 * over SQLite's per size (target <= 2x at 100 clusters). The other phases stay on SQLite.
 *
 * Each phase starts its own `flotilla server` and `flotilla member --clusters N` (HTTPS,
 * tokens), joins the members as `flotilla ctl join` does (Secret + Push Cluster), and watches
 * every member's Deployments (and ConfigMaps in phase 4) from one thread with a curl multi
 * handle, so an object's arrival is timestamped when its ADDED event reaches us:
 *
 *  1. end to end: K Deployments one after another (a gap apart) under a Duplicated policy
 *     and under a Divided static-weight policy, to every joined cluster; latency = the last
 *     member's ADDED - the create's ack. Baseline, a round of its own before them on the same
 *     server: the client writes one Work per cluster itself (16 connections in parallel, as
 *     the binding controller does), latency = last member's ADDED - the first Work POST
 *     sent: delivery alone. A watch on the control plane's bindings and Works splits the
 *     policy rounds into stages (created, scheduled, Works written, delivered).
 *  2. server RSS holding M Deployments propagated to C clusters, at rest (5 s after the store
 *     went quiet: the server gives back what a burst freed once its store stands still for
 *     3 s); baseline: the same server holding the same M Deployments, at rest, before the
 *     policy that selects them exists.
 *  3. B Deployments created at once (several connections) under a matching policy: time
 *     until every one is in every member; baseline: creating B unselected Deployments.
 *  4. restart: D Deployments + D ConfigMaps propagated, kill -9, restart on the same data
 *     dir; "fully reconciled" = a probe Deployment created right after /readyz is in every
 *     member, AND the store revision has not moved for 1 s, AND the server used < 10% of a
 *     core over the last 1 s, AND no member event for 1 s; and nothing was re-created
 *     (ADDED again) or deleted in a member. Baselines: start-up to /readyz on that data dir;
 *     one thread reading every live object's value from store.db with SQLite and decoding it
 *     with jansson, once (what a restart that reads and decodes everything cannot beat,
 *     whatever the host's pace). Before the kill it waits (up to 60 s) for the server to note
 *     its reconciled revision with its member watches: a fleet at rest. --restart-with A,B,...
 *     restarts once with each binary in turn on the same data (a build that did not note the
 *     revision makes a full first pass, and notes its own).
 *
 * Every phase also prints what the controllers wrote (per resource, from /metrics), which is
 * where a slow path shows first. Targets (issue 4): P99 <= 100 ms at 100 clusters; RSS <=
 * 150 MiB with 5,000 Deployments over 10 clusters; 1,000 at once <= 5 s; restart <= 10 s with
 * 30,000 Deployments + 30,000 ConfigMaps. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "bench_common.h"

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define WORK_CONNS 16 /* the binding controller writes a binding's Works on up to 16 threads */
#define MAX_PREFIX 3

static int problems;
/* further `flotilla server` arguments for every fleet (--etcd: the etcd cluster's) or NULL */
static const char *const *server_extra;

/* ---- small helpers ---------------------------------------------------------------- */

static void print_load(const char *when)
{
    char *l = fb_slurp("/proc/loadavg");
    if (l) {
        l[strcspn(l, "\n")] = 0;
        printf("machine load %s: %s (loadavg 1/5/15 min, runnable/total, last pid)\n", when, l);
    }
    free(l);
}

/* ---- the member host (as members_scale.c starts it) ------------------------------------- */




/* ---- arrivals in the members ---------------------------------------------------------
 * A tracker names what a phase expects: objects called PREFIX<index> (index < nitems) in
 * every one of nclusters members. The watcher thread stamps the first event of each
 * (prefix, index, cluster) and counts what should not happen: a second ADDED (re-created),
 * DELETED, and, for Divided placement, a member Deployment with the wrong replicas. */

typedef struct tracker {
    int nprefix;
    char prefix[MAX_PREFIX][24];
    const int *want_replicas[MAX_PREFIX]; /* per cluster, or NULL: not checked */
    int nitems, nclusters;
    int64_t *arrive; /* [prefix][item][cluster]: monotonic ns of the first event; 0 = not yet */
    long present, added_again, modified, deleted, bad_replicas, untracked;
    int64_t last_event;
    /* stages on the control plane, per [prefix][item] (fleets started with stages only):
     * the binding's ADDED, its first event with spec.clusters filled in (scheduled), and the
     * ADDED of the last of its Works */
    int64_t *rb_added, *rb_sched, *works_done;
    int *works_seen;
} tracker;

static tracker *tracker_new(int nitems, int nclusters)
{
    tracker *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->nitems = nitems;
    t->nclusters = nclusters;
    size_t per = (size_t)MAX_PREFIX * (size_t)nitems;
    t->arrive = calloc(per * (size_t)nclusters, sizeof *t->arrive);
    t->rb_added = calloc(per, sizeof *t->rb_added);
    t->rb_sched = calloc(per, sizeof *t->rb_sched);
    t->works_done = calloc(per, sizeof *t->works_done);
    t->works_seen = calloc(per, sizeof *t->works_seen);
    if (!t->arrive || !t->rb_added || !t->rb_sched || !t->works_done || !t->works_seen)
        abort();
    return t;
}

static void tracker_free(tracker *t)
{
    if (!t)
        return;
    free(t->arrive);
    free(t->rb_added);
    free(t->rb_sched);
    free(t->works_done);
    free(t->works_seen);
    free(t);
}

static int tracker_prefix(tracker *t, const char *prefix, const int *want_replicas)
{
    int p = t->nprefix++;
    snprintf(t->prefix[p], sizeof t->prefix[p], "%s", prefix);
    t->want_replicas[p] = want_replicas;
    return p;
}

static int64_t *slot(tracker *t, int p, int item, int cluster)
{
    return &t->arrive[((size_t)p * (size_t)t->nitems + (size_t)item) * (size_t)t->nclusters + (size_t)cluster];
}

/* Newest arrival of (p, item) over all clusters, or 0 if some cluster has not seen it. */
static int64_t last_arrival(tracker *t, int p, int item)
{
    int64_t last = 0;
    for (int c = 0; c < t->nclusters; c++) {
        int64_t a = *slot(t, p, item, c);
        if (!a)
            return 0;
        if (a > last)
            last = a;
    }
    return last;
}

#define CP_BINDINGS (-1)
#define CP_WORKS (-2)

/* Which prefix and item the name NAME[0..nl) is (PREFIX<item>), or -1. */
static int tracker_find(const tracker *tr, const char *name, size_t nl, int *item)
{
    for (int p = 0; p < tr->nprefix; p++) {
        size_t pl = strlen(tr->prefix[p]);
        if (nl <= pl || strncmp(name, tr->prefix[p], pl))
            continue;
        char *end;
        long idx = strtol(name + pl, &end, 10);
        if (end != name + nl || idx < 0 || idx >= tr->nitems)
            continue;
        *item = (int)idx;
        return p;
    }
    return -1;
}

/* A control-plane event of a binding ("<template>-deployment") or one of its Works
 * ("<template>-<hash>"): the stage timestamps of the template's item. */
static void on_stage(tracker *tr, int kind, int type, const char *line, const char *name, size_t nl, int64_t now)
{
    const char *dash = memrchr(name, '-', nl);
    if (!dash || type == 2)
        return;
    int item, p = tracker_find(tr, name, (size_t)(dash - name), &item);
    if (p < 0)
        return;
    size_t i = (size_t)p * (size_t)tr->nitems + (size_t)item;
    if (kind == CP_BINDINGS) {
        if (!tr->rb_added[i])
            tr->rb_added[i] = now;
        if (!tr->rb_sched[i] && strstr(line, "\"clusters\":[{\"name\""))
            tr->rb_sched[i] = now;
    } else if (type == 0 && ++tr->works_seen[i] == tr->nclusters) {
        tr->works_done[i] = now;
    }
}

/* A member watch (or a control-plane one, for stages) is an fb_watch whose ctx is the fleet
 * and whose cluster is 0-based: member<cluster+1>; CP_BINDINGS / CP_WORKS: the control plane's. */

/* A server, a member host, the joined members and the watches on them. */
typedef struct fleet {
    const char *flotilla;
    char root[512], sdir[600], mdir[600];
    fb_server s;
    fb_member_host mh;
    int hosted, joined;
    bool configmaps;
    char *ca64;
    char **tokens;
    CURL *c;
    struct curl_slist *h;
    fb_buf out;
    /* the watches, and what their thread shares with the main thread (under mu) */
    fb_watchset ws;
    pthread_mutex_t mu;
    tracker *trk;
} fleet;

static void on_event(fb_watch *w, int type, const char *line, int64_t now)
{
    fleet *f = w->ctx;
    /* metadata.name: the first "name" key inside metadata (annotation keys that end in
     * /name have a '/' before the quote, escaped JSON in annotations has a backslash) */
    const char *m = strstr(line, "\"metadata\":{");
    const char *n = m ? strstr(m, "\"name\":\"") : NULL;
    if (!n)
        return;
    n += 8;
    size_t nl = strcspn(n, "\"");
    pthread_mutex_lock(&f->mu);
    tracker *tr = f->trk;
    if (tr && w->cluster < 0) {
        on_stage(tr, w->cluster, type, line, n, nl, now);
    } else if (tr) {
        tr->last_event = now;
        int item, p = w->cluster < tr->nclusters ? tracker_find(tr, n, nl, &item) : -1;
        int64_t *s = p >= 0 ? slot(tr, p, item, w->cluster) : NULL;
        if (!s) {
            tr->untracked++;
        } else if (type == 2) {
            tr->deleted++;
        } else if (!*s) {
            *s = now;
            tr->present++;
            const int *want = tr->want_replicas[p];
            if (want) {
                static const char key[] = "\"spec\":{\"replicas\":";
                const char *r = strstr(line, key);
                if (!r || atoi(r + sizeof key - 1) != want[w->cluster])
                    tr->bad_replicas++;
            }
        } else if (type == 0) {
            tr->added_again++;
        } else {
            tr->modified++;
        }
    }
    pthread_mutex_unlock(&f->mu);
}

static void fleet_track(fleet *f, tracker *t)
{
    pthread_mutex_lock(&f->mu);
    f->trk = t;
    pthread_mutex_unlock(&f->mu);
}

/* A copy of the tracker's counters, taken under the lock. */
static tracker tracker_counts(fleet *f)
{
    pthread_mutex_lock(&f->mu);
    tracker c = f->trk ? *f->trk : (tracker){0};
    pthread_mutex_unlock(&f->mu);
    return c;
}

/* Wait until the tracker has `want` arrivals or the deadline passes; returns the count. */
static long wait_present(fleet *f, long want, int64_t deadline)
{
    long have = 0;
    while ((have = tracker_counts(f).present) < want && fb_now_ns() < deadline) {
        if (!fb_server_alive(&f->s))
            break;
        usleep(5000);
    }
    return have;
}

/* ---- the control plane --------------------------------------------------------------- */

static long cp_request(fleet *f, const char *method, const char *path, const char *body)
{
    return fb_request(f->c, &f->s, method, path, body, body ? strlen(body) : 0, &f->out);
}

static int count_ready(fleet *f)
{
    if (cp_request(f, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters", NULL) != 200)
        return -1;
    int n = 0;
    for (const char *p = f->out.p; (p = strstr(p, "\"type\":\"Ready\",\"status\":\"True\"")); p++)
        n++;
    return n;
}

/* A numeric sample from a /metrics text, or -1. */
static double metric_in(const char *text, const char *name)
{
    size_t nl = strlen(name);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '{')) {
            const char *sp = strchr(line, ' ');
            return sp ? strtod(sp + 1, NULL) : -1;
        }
    return -1;
}

/* /metrics into `out` on the fleet's connection; false if the server did not answer. */
static bool fleet_metrics(fleet *f, fb_buf *out)
{
    return fb_request(f->c, &f->s, "GET", "/metrics", NULL, 0, out) == 200;
}

static long long store_rev(fleet *f)
{
    fb_buf b = {0};
    long long v = fleet_metrics(f, &b) ? (long long)metric_in(b.p, "flotilla_store_revision") : -1;
    free(b.p);
    return v;
}

/* Wait until the store revision has not moved for quiet_ms (the controllers have stopped
 * writing) or the deadline; returns seconds waited, negative on timeout. */
static double wait_quiet(fleet *f, int quiet_ms, int deadline_s)
{
    int64_t t0 = fb_now_ns(), deadline = t0 + deadline_s * NS_PER_S;
    long long last = store_rev(f);
    int64_t changed = fb_now_ns();
    while (fb_now_ns() < deadline) {
        usleep(100000);
        long long r = store_rev(f);
        if (r != last) {
            last = r;
            changed = fb_now_ns();
        } else if (fb_now_ns() - changed >= quiet_ms * NS_PER_MS) {
            return fb_since_s(t0);
        }
    }
    return -fb_since_s(t0);
}

/* "1.2 s", or "not within 60 s" for a wait_quiet() that timed out (main thread only). */
static const char *quiet_str(double q)
{
    static char buf[4][48];
    static int i;
    char *b = buf[i++ % 4];
    if (q >= 0)
        snprintf(b, sizeof buf[0], "%.1f s", q);
    else
        snprintf(b, sizeof buf[0], "not within %.0f s", -q);
    return b;
}

/* ---- bodies ------------------------------------------------------------------------- */

static void deployment_json(fb_buf *b, const char *name, const char *label, int replicas)
{
    fb_bprintf(b,
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"default\",\"labels\":{\"bench\":\"%s\",\"app\":\"%s\"}},\"spec\":{\"replicas\":%d,\"selector\":{"
            "\"matchLabels\":{\"app\":\"%s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":{"
            "\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1.25\",\"resources\":{\"requests\":{\"cpu\":"
            "\"100m\",\"memory\":\"64Mi\"}}}]}}}}",
            name, label, name, replicas, name, name);
}

static void configmap_json(fb_buf *b, const char *name, const char *label)
{
    /* a 256-byte value: a small application config */
    fb_bprintf(b,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
            "\"labels\":{\"bench\":\"%s\"}},\"data\":{\"config\":\"%0256d\"}}",
            name, label, 0);
}

/* A PropagationPolicy in default selecting Deployments (and ConfigMaps) labelled
 * bench=LABEL, placed on member1..memberN: Duplicated, or Divided with static weights. */
static void policy_json(fb_buf *b, const char *name, const char *label, int nclusters, bool configmaps,
                        const int *weights)
{
    fb_bprintf(b,
            "{\"apiVersion\":\"policy.karmada.io/v1alpha1\",\"kind\":\"PropagationPolicy\",\"metadata\":{\"name\":"
            "\"%s\",\"namespace\":\"default\"},\"spec\":{\"resourceSelectors\":[{\"apiVersion\":\"apps/v1\","
            "\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":{\"bench\":\"%s\"}}}",
            name, label);
    if (configmaps)
        fb_bprintf(b, ",{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"labelSelector\":{\"matchLabels\":{\"bench\":"
                   "\"%s\"}}}",
                label);
    fb_bprintf(b, "],\"placement\":{\"clusterAffinity\":{\"clusterNames\":[");
    for (int i = 1; i <= nclusters; i++)
        fb_bprintf(b, "%s\"member%d\"", i > 1 ? "," : "", i);
    fb_bprintf(b, "]},\"replicaScheduling\":{");
    if (!weights) {
        fb_bprintf(b, "\"replicaSchedulingType\":\"Duplicated\"}}}}");
        return;
    }
    fb_bprintf(b, "\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\","
               "\"weightPreference\":{\"staticWeightList\":[");
    for (int i = 1; i <= nclusters; i++)
        fb_bprintf(b, "%s{\"targetCluster\":{\"clusterNames\":[\"member%d\"]},\"weight\":%d}", i > 1 ? "," : "", i,
                weights[i - 1]);
    fb_bprintf(b, "]}}}}}");
}

static int create_policy(fleet *f, const char *name, const char *label, int nclusters, bool configmaps,
                         const int *weights)
{
    fb_buf b = {0};
    policy_json(&b, name, label, nclusters, configmaps, weights);
    long code = cp_request(f, "POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", b.p);
    free(b.p);
    if (code != 201) {
        fprintf(stderr, "SERVER PROBLEM: create PropagationPolicy %s: HTTP %ld %.300s\n", name, code, f->out.p);
        problems++;
        return -1;
    }
    return 0;
}

static long create_deployment(fleet *f, const char *name, const char *label, int replicas)
{
    fb_buf b = {0};
    deployment_json(&b, name, label, replicas);
    long code = cp_request(f, "POST", "/apis/apps/v1/namespaces/default/deployments", b.p);
    free(b.p);
    if (code != 201) {
        fprintf(stderr, "SERVER PROBLEM: create Deployment %s: HTTP %ld %.300s\n", name, code, f->out.p);
        problems++;
    }
    return code;
}

/* ---- many creates on several connections ---------------------------------------------- */

/* Create n objects on `conns` connections as fast as they go; returns the seconds taken. */
static double create_many(fleet *f, int conns, int n, fb_gen_fn gen, void *ctx, int64_t *ack)
{
    long errors, retries;
    double s = fb_create_many(&f->s, conns, n, gen, ctx, ack, &errors, &retries);
    if (errors) {
        fprintf(stderr, "SERVER PROBLEM: %ld of %d creates failed\n", errors, n);
        problems++;
    }
    if (retries)
        printf("  (%ld creates retried after 429 or a transport error)\n", retries);
    return s;
}

typedef struct deploy_gen {
    const char *prefix, *label;
    int replicas;
} deploy_gen;

static void gen_deployment(void *ctx, int i, char *path, size_t pathsz, fb_buf *body)
{
    deploy_gen *g = ctx;
    char name[64];
    snprintf(name, sizeof name, "%s%d", g->prefix, i);
    snprintf(path, pathsz, "/apis/apps/v1/namespaces/default/deployments");
    deployment_json(body, name, g->label, g->replicas);
}

/* Phase 4's mix: even i a Deployment, odd i a ConfigMap, each numbered i/2. */
static void gen_mixed(void *ctx, int i, char *path, size_t pathsz, fb_buf *body)
{
    const char *label = ctx;
    char name[64];
    if (i % 2 == 0) {
        snprintf(name, sizeof name, "r4d-%d", i / 2);
        snprintf(path, pathsz, "/apis/apps/v1/namespaces/default/deployments");
        deployment_json(body, name, label, 1);
    } else {
        snprintf(name, sizeof name, "r4c-%d", i / 2);
        snprintf(path, pathsz, "/api/v1/namespaces/default/configmaps");
        configmap_json(body, name, label);
    }
}

/* ---- the baseline: Works written by the client ------------------------------------------ */

typedef struct workpost {
    CURLM *m;
    CURL **h;
    fb_buf *resp, *body;
    struct curl_slist *hdr;
    int n;
} workpost;

static void workpost_init(workpost *wp, fleet *f, int n)
{
    memset(wp, 0, sizeof *wp);
    wp->n = n;
    wp->m = curl_multi_init();
    curl_multi_setopt(wp->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)WORK_CONNS);
    wp->hdr = fb_headers(&f->s);
    wp->h = calloc((size_t)n, sizeof *wp->h);
    wp->resp = calloc((size_t)n, sizeof *wp->resp);
    wp->body = calloc((size_t)n, sizeof *wp->body);
    for (int i = 0; i < n; i++) {
        wp->h[i] = fb_curl_new(&f->s, wp->hdr);
        curl_easy_setopt(wp->h[i], CURLOPT_WRITEDATA, &wp->resp[i]);
        curl_easy_setopt(wp->h[i], CURLOPT_TIMEOUT, 30L);
    }
}

static void workpost_close(workpost *wp)
{
    for (int i = 0; i < wp->n; i++) {
        curl_easy_cleanup(wp->h[i]);
        free(wp->resp[i].p);
        free(wp->body[i].p);
    }
    curl_multi_cleanup(wp->m);
    curl_slist_free_all(wp->hdr);
    free(wp->h);
    free(wp->resp);
    free(wp->body);
}

/* One Work named NAME in karmada-es-member1..N, each with a Deployment NAME; all POSTed at
 * once on up to WORK_CONNS connections. Returns how many were not created. */
static int workpost_run(workpost *wp, fleet *f, const char *name, int nclusters)
{
    for (int i = 0; i < nclusters; i++) {
        char url[600];
        snprintf(url, sizeof url, "%s/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member%d/works", f->s.url,
                 i + 1);
        fb_breset(&wp->body[i]);
        fb_bprintf(&wp->body[i],
                "{\"apiVersion\":\"work.karmada.io/v1alpha1\",\"kind\":\"Work\",\"metadata\":{\"name\":\"%s\","
                "\"namespace\":\"karmada-es-member%d\"},\"spec\":{\"workload\":{\"manifests\":[",
                name, i + 1);
        deployment_json(&wp->body[i], name, "baseline", 1);
        fb_bprintf(&wp->body[i], "]}}}");
        fb_breset(&wp->resp[i]);
        curl_easy_setopt(wp->h[i], CURLOPT_URL, url);
        curl_easy_setopt(wp->h[i], CURLOPT_POSTFIELDS, wp->body[i].p);
        curl_easy_setopt(wp->h[i], CURLOPT_POSTFIELDSIZE, (long)wp->body[i].n);
        curl_multi_add_handle(wp->m, wp->h[i]);
    }
    int64_t deadline = fb_now_ns() + 60 * NS_PER_S;
    for (int running = 1; running && fb_now_ns() < deadline;) {
        curl_multi_perform(wp->m, &running);
        if (running)
            curl_multi_poll(wp->m, NULL, 0, 10, NULL);
    }
    int failed = 0;
    for (int i = 0; i < nclusters; i++) {
        long code = 0;
        curl_easy_getinfo(wp->h[i], CURLINFO_RESPONSE_CODE, &code);
        curl_multi_remove_handle(wp->m, wp->h[i]);
        if (code != 201) {
            if (failed++ < 3)
                fprintf(stderr, "SERVER PROBLEM: Work %s for member%d: HTTP %ld %.200s\n", name, i + 1, code,
                        wp->resp[i].p ? wp->resp[i].p : "");
        }
    }
    if (failed)
        problems++;
    return failed;
}

/* ---- fleet set-up --------------------------------------------------------------------- */

/* Start a server and a member host with `hosted` clusters, and watch every member's
 * Deployments (and ConfigMaps) in default; with `stages` also the control plane's bindings
 * and Works (for the per-stage breakdown). Nothing is joined yet. */
static int fleet_start(fleet *f, const char *flotilla, const char *root, int hosted, bool configmaps, bool stages)
{
    memset(f, 0, sizeof *f);
    f->flotilla = flotilla;
    f->hosted = hosted;
    f->configmaps = configmaps;
    pthread_mutex_init(&f->mu, NULL);
    snprintf(f->root, sizeof f->root, "%s", root);
    mkdir(root, 0700);
    snprintf(f->sdir, sizeof f->sdir, "%s/server", root);
    snprintf(f->mdir, sizeof f->mdir, "%s/members", root);
    if (fb_server_start(flotilla, f->sdir, server_extra, &f->s))
        return -1;
    if (fb_member_start(flotilla, f->mdir, hosted, &f->mh)) {
        fb_server_stop(&f->s);
        return -1;
    }
    f->h = fb_headers(&f->s);
    f->c = fb_curl_new(&f->s, f->h);
    char ca_path[700];
    snprintf(ca_path, sizeof ca_path, "%s/pki/ca.crt", f->mdir);
    char *ca = fb_slurp(ca_path);
    f->ca64 = ca ? fb_b64(ca, strlen(ca)) : strdup("");
    free(ca);
    f->tokens = calloc((size_t)hosted, sizeof *f->tokens);
    fb_watchset_init(&f->ws, hosted * (configmaps ? 2 : 1) + (stages ? 2 : 0));
    fb_server mem = {0};
    snprintf(mem.url, sizeof mem.url, "%s", f->mh.url);
    snprintf(mem.ca, sizeof mem.ca, "%s", ca_path);
    for (int i = 0; i < hosted; i++) {
        char kc[700];
        snprintf(kc, sizeof kc, "%s/member%d.kubeconfig", f->mdir, i + 1);
        f->tokens[i] = fb_kubeconfig_token(kc);
        if (!f->tokens[i])
            f->tokens[i] = strdup("");
        snprintf(mem.auth, sizeof mem.auth, "Authorization: Bearer %s", f->tokens[i]);
        for (int k = 0; k < (configmaps ? 2 : 1); k++) {
            char path[200];
            snprintf(path, sizeof path, "/clusters/member%d/%s/namespaces/default/%s?watch=1", i + 1,
                     k ? "api/v1" : "apis/apps/v1", k ? "configmaps" : "deployments");
            fb_watch *w = fb_watchset_add(&f->ws, &mem, path, on_event);
            w->ctx = f;
            w->cluster = i;
        }
    }
    for (int k = 0; stages && k < 2; k++) {
        fb_watch *w = fb_watchset_add(&f->ws, &f->s, k ? "/apis/work.karmada.io/v1alpha1/works?watch=1"
                                                       : "/apis/work.karmada.io/v1alpha2/resourcebindings?watch=1",
                                      on_event);
        w->ctx = f;
        w->cluster = k ? CP_WORKS : CP_BINDINGS;
    }
    if (fb_watchset_start(&f->ws, 60)) {
        fprintf(stderr, "SERVER PROBLEM: only %d of %d member watches opened in 60 s\n", atomic_load(&f->ws.open),
                f->ws.n);
        return -1;
    }
    const char *ns = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"karmada-cluster\"}}";
    cp_request(f, "POST", "/api/v1/namespaces", ns);
    return 0;
}

/* Join member(joined+1)..member(n) as `flotilla ctl join` does and wait until all n are
 * Ready and have their execution namespaces. Returns seconds taken, or -1. */
static double fleet_join(fleet *f, int n)
{
    int64_t t0 = fb_now_ns();
    fb_buf body = {0};
    for (int i = f->joined + 1; i <= n && i <= f->hosted; i++) {
        char *tok64 = fb_b64(f->tokens[i - 1], strlen(f->tokens[i - 1]));
        fb_breset(&body);
        fb_bprintf(&body,
                "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"member%d\",\"namespace\":"
                "\"karmada-cluster\"},\"data\":{\"token\":\"%s\",\"caBundle\":\"%s\"}}",
                i, tok64, f->ca64);
        long c1 = cp_request(f, "POST", "/api/v1/namespaces/karmada-cluster/secrets", body.p);
        fb_breset(&body);
        fb_bprintf(&body,
                "{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":"
                "\"member%d\"},\"spec\":{\"syncMode\":\"Push\",\"apiEndpoint\":\"%s/clusters/member%d\","
                "\"secretRef\":{\"namespace\":\"karmada-cluster\",\"name\":\"member%d\"}}}",
                i, f->mh.url, i, i);
        long c2 = cp_request(f, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", body.p);
        free(tok64);
        if (c1 != 201 || c2 != 201) {
            fprintf(stderr, "SERVER PROBLEM: join member%d: HTTP %ld/%ld %.200s\n", i, c1, c2, f->out.p);
            problems++;
            free(body.p);
            return -1;
        }
    }
    free(body.p);
    f->joined = n;
    int ready = 0;
    int64_t deadline = fb_now_ns() + 120 * NS_PER_S;
    while ((ready = count_ready(f)) < n && fb_now_ns() < deadline)
        usleep(100000);
    if (ready < n) {
        fprintf(stderr, "SERVER PROBLEM: %d of %d Clusters Ready after 120 s\n", ready, n);
        problems++;
        return -1;
    }
    /* the cluster controller makes karmada-es-<name>; wait for it rather than racing it */
    for (int i = 1; i <= n; i++) {
        char path[128];
        snprintf(path, sizeof path, "/api/v1/namespaces/karmada-es-member%d", i);
        long code;
        while ((code = cp_request(f, "GET", path, NULL)) != 200 && fb_now_ns() < deadline)
            usleep(20000);
        if (code != 200) {
            fprintf(stderr, "SERVER PROBLEM: namespace karmada-es-member%d missing: HTTP %ld\n", i, code);
            problems++;
            return -1;
        }
    }
    return fb_since_s(t0);
}

static void fleet_stop(fleet *f, bool keep)
{
    fb_watchset_stop(&f->ws);
    long ends = atomic_load(&f->ws.ends), errors = atomic_load(&f->ws.errors);
    if (ends || errors)
        printf("  note: member watches ended %ld times, %ld ERROR events (each resumed from its last "
               "resourceVersion)\n",
               ends, errors);
    fb_watchset_close(&f->ws);
    fb_member_stop(&f->mh);
    if (f->s.pid > 0 && fb_server_stop(&f->s) != 0)
        problems++;
    for (int i = 0; f->tokens && i < f->hosted; i++)
        free(f->tokens[i]);
    free(f->tokens);
    free(f->ca64);
    free(f->out.p);
    if (f->c)
        curl_easy_cleanup(f->c);
    curl_slist_free_all(f->h);
    pthread_mutex_destroy(&f->mu);
    fb_scratch_done(f->root, keep);
}

/* ---- results ------------------------------------------------------------------------- */

typedef struct e2e_result {
    const char *store; /* "SQLite" or "etcd" */
    int clusters, items;
    double p50[3], p99[3], max[3], cold[3];
    int missing[3];
    double work_write_p50; /* the baseline's own N Work writes */
} e2e_result;

typedef struct run_result {
    e2e_result e2e[8];
    int ne2e;
    bool mem_done, burst_done, restart_done;
    /* phase 2 */
    int mem_objects, mem_clusters;
    double mem_rss_idle, mem_rss_base, mem_rss_prop, mem_hwm, mem_prop_s;
    /* phase 3 */
    int burst, burst_clusters;
    double burst_base_s, burst_create_s, burst_all_s, burst_p50, burst_p99;
    /* phase 4 */
    int r_objects, r_clusters;
    double r_prop_s, r_ready_s, r_probe_s, r_rev_s, r_cpu_s, r_member_s, r_full_s, r_rss, r_raw_s;
    long r_added_again, r_deleted, r_modified, r_writes;
    bool r_reconciled;
} run_result;

static const char *const KIND_NAME[3] = {"baseline: Works written directly", "Duplicated policy",
                                         "Divided, static weights"};

/* ---- phase 1: end-to-end latency ----------------------------------------------------- */

/* P50 / P99 of each stage of items 1..k of prefix p, into `out`: create ack -> binding
 * ADDED -> binding scheduled -> last Work ADDED -> last member ADDED. */
static void stage_report(fleet *f, tracker *t, int p, const int64_t *ack, int k, fb_buf *out)
{
    int64_t *d[4];
    int m = 0;
    for (int s = 0; s < 4; s++)
        d[s] = calloc((size_t)k, sizeof *d[s]);
    pthread_mutex_lock(&f->mu);
    for (int item = 1; item <= k; item++) {
        size_t i = (size_t)p * (size_t)t->nitems + (size_t)item;
        int64_t last = last_arrival(t, p, item);
        int64_t at[5] = {ack[item], t->rb_added[i], t->rb_sched[i], t->works_done[i], last};
        bool ok = true;
        for (int s = 1; s < 5; s++)
            ok = ok && at[s] != 0;
        if (!ok)
            continue;
        for (int s = 0; s < 4; s++)
            d[s][m] = at[s + 1] - at[s];
        m++;
    }
    pthread_mutex_unlock(&f->mu);
    static const char *const name[4] = {"ack -> binding created", "-> scheduled", "-> last Work created",
                                        "-> last member ADDED"};
    if (m == 0) {
        fb_bprintf(out, "stages not seen (no control-plane watch)");
    } else {
        fb_bprintf(out, "stages P50/P99 ms over %d items:", m);
        for (int s = 0; s < 4; s++) {
            double p50 = fb_pct_ms(d[s], (size_t)m, 50);
            fb_bprintf(out, " %s %.1f/%.1f;", name[s], p50, fb_pct_sorted_ms(d[s], (size_t)m, 99));
        }
    }
    for (int s = 0; s < 4; s++)
        free(d[s]);
}

static int phase_e2e(fleet *f, int n, int k, int gap_ms, e2e_result *r)
{
    memset(r, 0, sizeof *r);
    r->clusters = n;
    r->items = k;
    double join_s = fleet_join(f, n);
    if (join_s < 0)
        return -1;
    printf("\n## Phase 1: end to end at %d clusters (%d Deployments per round, one every %d ms)\n", n, k, gap_ms);
    printf("  joined %d clusters (all Ready) in %.2f s\n", n, join_s);
    /* Divided: cluster c weighs 1 + c % 3 and the Deployment asks for the sum of the weights,
     * so every cluster gets exactly its weight in replicas (checked on arrival) */
    int *weights = calloc((size_t)n, sizeof *weights), total = 0;
    for (int c = 0; c < n; c++)
        total += weights[c] = 1 + c % 3;
    char dup_label[32], div_label[32], pfx[3][24];
    snprintf(dup_label, sizeof dup_label, "dup-%d", n);
    snprintf(div_label, sizeof div_label, "div-%d", n);
    if (create_policy(f, dup_label, dup_label, n, false, NULL) || create_policy(f, div_label, div_label, n, false, weights)) {
        free(weights);
        return -1;
    }
    tracker *t = tracker_new(k + 1, n);
    snprintf(pfx[0], sizeof pfx[0], "b%d-", n);
    snprintf(pfx[1], sizeof pfx[1], "u%d-", n);
    snprintf(pfx[2], sizeof pfx[2], "v%d-", n);
    for (int kind = 0; kind < 3; kind++)
        tracker_prefix(t, pfx[kind], kind == 2 ? weights : NULL);
    fleet_track(f, t);
    workpost wp;
    workpost_init(&wp, f, n);
    int64_t *start = calloc((size_t)3 * (size_t)(k + 1), sizeof *start);
    int64_t *wdone = calloc((size_t)(k + 1), sizeof *wdone);
    long want = 0, got = 0;

    /* One item of one kind: the baseline's Works, or a Deployment under either policy.
     * start = the first Work POST sent (baseline) or the create's ack. */
#define E2E_CREATE(kind, item)                                                                       \
    do {                                                                                             \
        char name_[48];                                                                              \
        snprintf(name_, sizeof name_, "%s%d", pfx[kind], item);                                      \
        if ((kind) == 0) {                                                                           \
            start[item] = fb_now_ns();                                                               \
            workpost_run(&wp, f, name_, n);                                                          \
            wdone[item] = fb_now_ns();                                                               \
        } else {                                                                                     \
            create_deployment(f, name_, (kind) == 1 ? dup_label : div_label, (kind) == 1 ? 1 : total); \
            start[(kind) * (k + 1) + (item)] = fb_now_ns();                                          \
        }                                                                                            \
    } while (0)

    /* item 0 of each kind warms its path (member discovery and watches, the policy in the
     * detector's cache); reported as "cold", left out of the percentiles */
    for (int kind = 0; kind < 3; kind++) {
        E2E_CREATE(kind, 0);
        want += n;
        if ((got = wait_present(f, want, fb_now_ns() + 60 * NS_PER_S)) < want)
            break;
    }
    if (got < want) {
        fprintf(stderr, "SERVER PROBLEM: warm-up: %ld of %ld objects arrived in 60 s\n", got, want);
        problems++;
    }
    wait_quiet(f, 500, 30);
    /* the rounds one after another, each on a settled server, so the baseline measures
     * delivery alone and each policy round the whole path with nothing else running */
    printf("  latency = last of %d members' ADDED - create acknowledged (baseline: - first Work POST sent)\n", n);
    printf("  | path | P50 ms | P99 ms | max ms | P99 / baseline P99 | first (cold) ms | missing | server CPU "
           "cores (ms per item) | member host CPU cores |\n  |---|---|---|---|---|---|---|---|---|\n");
    int64_t *lat = calloc((size_t)k, sizeof *lat);
    fb_reqsnap snaps[4] = {{0}};
    fb_buf stages_out[3] = {{0}};
    for (int kind = 0; kind < 3; kind++) {
        snaps[kind] = fb_snap_requests(&f->s);
        double cpu0 = fb_proc_cpu_s(f->s.pid), mcpu0 = fb_proc_cpu_s(f->mh.pid);
        int64_t round0 = fb_now_ns();
        for (int item = 1; item <= k; item++) {
            fb_sleep_until(round0 + (int64_t)(item - 1) * gap_ms * NS_PER_MS);
            E2E_CREATE(kind, item);
        }
        want += (long)k * n;
        got = wait_present(f, want, fb_now_ns() + 60 * NS_PER_S);
        double wall = fb_since_s(round0);
        double cpu = fb_proc_cpu_s(f->s.pid) - cpu0, mcpu = fb_proc_cpu_s(f->mh.pid) - mcpu0;
        wait_quiet(f, 500, 30);
        int m = 0;
        pthread_mutex_lock(&f->mu);
        for (int item = 1; item <= k; item++) {
            int64_t a = last_arrival(t, kind, item);
            if (a)
                lat[m++] = a - start[kind * (k + 1) + item];
            else
                r->missing[kind]++;
        }
        int64_t a0 = last_arrival(t, kind, 0);
        pthread_mutex_unlock(&f->mu);
        r->cold[kind] = a0 ? (double)(a0 - start[kind * (k + 1)]) / 1e6 : -1;
        r->p50[kind] = fb_pct_ms(lat, (size_t)m, 50);
        r->p99[kind] = fb_pct_sorted_ms(lat, (size_t)m, 99);
        r->max[kind] = fb_pct_sorted_ms(lat, (size_t)m, 100);
        printf("  | %s | %.1f | %.1f | %.1f | %.2f | %.1f | %d | %.2f (%.0f) | %.2f |\n", KIND_NAME[kind],
               r->p50[kind], r->p99[kind], r->max[kind], r->p99[0] > 0 ? r->p99[kind] / r->p99[0] : 0,
               r->cold[kind], r->missing[kind], cpu / wall, cpu * 1000 / k, mcpu / wall);
        if (kind > 0)
            stage_report(f, t, kind, start + kind * (k + 1), k, &stages_out[kind]);
        fflush(stdout);
    }
    snaps[3] = fb_snap_requests(&f->s);
#undef E2E_CREATE
    tracker cnt = tracker_counts(f);
    fleet_track(f, NULL);
    for (int kind = 1; kind < 3 && stages_out[kind].p; kind++)
        printf("  %s: %s\n", KIND_NAME[kind], stages_out[kind].p);
    for (int item = 1; item <= k; item++)
        lat[item - 1] = wdone[item] - start[item];
    r->work_write_p50 = fb_pct_ms(lat, (size_t)k, 50);
    printf("  the baseline's own %d Work writes took %.1f ms (P50) of its latency\n", n, r->work_write_p50);
    printf("  %ld/%ld member objects arrived; re-created %ld, deleted %ld, modified after arrival %ld, wrong "
           "Divided replicas %ld\n",
           got, want, cnt.added_again, cnt.deleted, cnt.modified, cnt.bad_replicas);
    for (int kind = 0; kind < 3; kind++) {
        printf("  %s round:\n", KIND_NAME[kind]);
        fb_print_writes(&snaps[kind], &snaps[kind + 1], k, kind ? "Deployment" : "item (n Works)");
    }
    double p99u = r->p99[1] > r->p99[2] ? r->p99[1] : r->p99[2];
    printf("  target P99 <= 100 ms%s: Duplicated %.1f ms, Divided %.1f ms -> %s\n",
           n >= 100 ? "" : " (set at 100 clusters)", r->p99[1], r->p99[2], p99u <= 100 ? "met" : "NOT met");
    if (got < want || cnt.added_again || cnt.deleted || cnt.bad_replicas) {
        fprintf(stderr, "SERVER PROBLEM: phase 1 at %d clusters: %ld/%ld arrived, %ld re-created, %ld deleted, %ld "
                        "wrong replicas\n",
                n, got, want, cnt.added_again, cnt.deleted, cnt.bad_replicas);
        problems++;
    }
    for (int i = 0; i < 4; i++)
        fb_snap_free(&snaps[i]);
    for (int i = 0; i < 3; i++)
        free(stages_out[i].p);
    workpost_close(&wp);
    free(lat);
    free(start);
    free(wdone);
    free(weights);
    tracker_free(t);
    return 0;
}

/* ---- phase 2: memory ------------------------------------------------------------------ */

/* RSS is read this long after the store went quiet: the server trims its heap once its
 * store has stood still for 3 s (src/cli/server_cmd.c). */
#define REST_S 5

static int phase_memory(const char *flotilla, const char *root, int m, int n, int conns, int deadline_s, bool keep,
                        int hold_s, run_result *res)
{
    printf("\n## Phase 2: server RSS with %d Deployments propagated to %d clusters\n", m, n);
    fleet f;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/memory", root);
    if (fleet_start(&f, flotilla, dir, n, false, false) || fleet_join(&f, n) < 0) {
        fleet_stop(&f, keep);
        return -1;
    }
    usleep(500000);
    res->mem_objects = m;
    res->mem_clusters = n;
    res->mem_rss_idle = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
    deploy_gen g = {.prefix = "m-", .label = "mem", .replicas = 1};
    double cs = create_many(&f, conns, m, gen_deployment, &g, NULL);
    double q = wait_quiet(&f, 1000, 60);
    double quiet_rss = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
    sleep(REST_S);
    res->mem_rss_base = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
    printf("  %d clusters joined, idle: RSS %.1f MiB\n", n, res->mem_rss_idle);
    printf("  baseline: %d Deployments created in %.2f s (no policy selects them), store quiet after %s: RSS "
           "%.1f MiB, %d s later %.1f MiB\n",
           m, cs, quiet_str(q), quiet_rss, REST_S, res->mem_rss_base);
    tracker *t = tracker_new(m, n);
    tracker_prefix(t, "m-", NULL);
    fleet_track(&f, t);
    fb_reqsnap before = fb_snap_requests(&f.s);
    double cpu0 = fb_proc_cpu_s(f.s.pid);
    int64_t t0 = fb_now_ns();
    create_policy(&f, "mem", "mem", n, false, NULL);
    long want = (long)m * n;
    long got = wait_present(&f, want, t0 + deadline_s * NS_PER_S);
    res->mem_prop_s = fb_since_s(t0);
    double q2 = wait_quiet(&f, 1000, 90);
    double cpu = fb_proc_cpu_s(f.s.pid) - cpu0;
    fb_reqsnap after = fb_snap_requests(&f.s);
    quiet_rss = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
    sleep(REST_S);
    res->mem_rss_prop = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
    res->mem_hwm = fb_proc_kib(f.s.pid, "VmHWM") / 1024.0;
    res->mem_done = true;
    tracker cnt = tracker_counts(&f);
    fleet_track(&f, NULL);
    fb_buf b = {0};
    double keys = fleet_metrics(&f, &b) ? metric_in(b.p, "flotilla_store_keys") : -1;
    double recs = b.p ? metric_in(b.p, "flotilla_execution_work_reconciles_total") : -1;
    free(b.p);
    printf("  policy created: %ld/%ld member objects arrived after %.1f s (%.0f per s); store quiet %s later; "
           "server CPU %.1f s\n",
           got, want, res->mem_prop_s, got / res->mem_prop_s, quiet_str(q2), cpu);
    fb_print_writes(&before, &after, m, "Deployment");
    printf("  Work reconciles by the execution controller: %.0f (%.2f per Work)\n", recs, recs / ((double)m * n));
    printf("  propagated: RSS once quiet %.1f MiB, %d s later (at rest) %.1f MiB (peak %.1f MiB), store keys %.0f; "
           "%.2f x the baseline; %.1f KiB per propagated Deployment above it\n",
           quiet_rss, REST_S, res->mem_rss_prop, res->mem_hwm, keys, res->mem_rss_prop / res->mem_rss_base,
           (res->mem_rss_prop - res->mem_rss_base) * 1024.0 / m);
    printf("  target RSS <= 150 MiB: %.1f MiB -> %s\n", res->mem_rss_prop, res->mem_rss_prop <= 150 ? "met" : "NOT met");
    if (hold_s > 0) {
        /* for a look from outside (gdb, /proc) at the server as measured */
        printf("  holding the fleet for %d s: server pid %d, data in %s\n", hold_s, (int)f.s.pid, f.root);
        fflush(stdout);
        sleep((unsigned)hold_s);
        printf("  after holding: RSS %.1f MiB\n", fb_proc_kib(f.s.pid, "VmRSS") / 1024.0);
    }
    if (got < want || cnt.added_again || cnt.deleted) {
        fprintf(stderr, "SERVER PROBLEM: phase 2: %ld/%ld arrived, %ld re-created, %ld deleted\n", got, want,
                cnt.added_again, cnt.deleted);
        problems++;
    }
    fb_snap_free(&before);
    fb_snap_free(&after);
    fleet_stop(&f, keep);
    tracker_free(t);
    return 0;
}

/* ---- phase 3: a burst of creates ------------------------------------------------------- */

static int phase_burst(const char *flotilla, const char *root, int m, int n, int conns, int deadline_s, bool keep,
                       run_result *res)
{
    printf("\n## Phase 3: %d Deployments created at once (%d connections) under a policy to %d clusters\n", m, conns, n);
    fleet f;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/burst", root);
    if (fleet_start(&f, flotilla, dir, n, false, false) || fleet_join(&f, n) < 0) {
        fleet_stop(&f, keep);
        return -1;
    }
    res->burst = m;
    res->burst_clusters = n;
    create_policy(&f, "burst", "burst", n, false, NULL);
    /* baseline: the same creates that no policy selects */
    deploy_gen base = {.prefix = "idle-", .label = "idle", .replicas = 1};
    res->burst_base_s = create_many(&f, conns, m, gen_deployment, &base, NULL);
    double q = wait_quiet(&f, 1000, 60);
    printf("  baseline: %d unselected Deployments created in %.3f s (%.0f/s); store quiet %s later\n", m,
           res->burst_base_s, m / res->burst_base_s, quiet_str(q));
    tracker *t = tracker_new(m, n);
    tracker_prefix(t, "x-", NULL);
    fleet_track(&f, t);
    int64_t *ack = calloc((size_t)m, sizeof *ack);
    fb_reqsnap before = fb_snap_requests(&f.s);
    double cpu0 = fb_proc_cpu_s(f.s.pid), mcpu0 = fb_proc_cpu_s(f.mh.pid);
    int64_t t0 = fb_now_ns();
    deploy_gen g = {.prefix = "x-", .label = "burst", .replicas = 1};
    res->burst_create_s = create_many(&f, conns, m, gen_deployment, &g, ack);
    long want = (long)m * n;
    long got = wait_present(&f, want, t0 + deadline_s * NS_PER_S);
    res->burst_all_s = fb_since_s(t0);
    /* what the two processes spent until then: on these two cores, the simulated members
     * take from the same processor as the control plane */
    double cpu_all = fb_proc_cpu_s(f.s.pid) - cpu0, mcpu_all = fb_proc_cpu_s(f.mh.pid) - mcpu0;
    /* informative only (status writes trail the deliveries); bounded short to keep the run short */
    double q2 = wait_quiet(&f, 1000, 20);
    double cpu = fb_proc_cpu_s(f.s.pid) - cpu0;
    fb_reqsnap after = fb_snap_requests(&f.s);
    tracker cnt = tracker_counts(&f);
    fleet_track(&f, NULL);
    int64_t *lat = calloc((size_t)m, sizeof *lat), first = INT64_MAX;
    int nl = 0;
    for (int i = 0; i < m; i++) {
        int64_t a = last_arrival(t, 0, i);
        if (a)
            lat[nl++] = a - ack[i];
        for (int c = 0; c < n; c++)
            if (*slot(t, 0, i, c) && *slot(t, 0, i, c) < first)
                first = *slot(t, 0, i, c);
    }
    res->burst_p50 = fb_pct_ms(lat, (size_t)nl, 50);
    res->burst_p99 = fb_pct_sorted_ms(lat, (size_t)nl, 99);
    res->burst_done = true;
    printf("  selected: created in %.3f s (%.0f/s, %.2f x the baseline); all %ld/%ld member objects present %.2f s "
           "after the first POST (%.1f x the create time); first arrival at %.3f s\n",
           res->burst_create_s, m / res->burst_create_s, res->burst_create_s / res->burst_base_s, got, want,
           res->burst_all_s, res->burst_all_s / res->burst_base_s,
           first == INT64_MAX ? -1.0 : (double)(first - t0) / 1e9);
    printf("  per Deployment (last member's ADDED - its create ack): P50 %.0f ms, P99 %.0f ms; store quiet %s "
           "after; server CPU %.1f s\n",
           res->burst_p50, res->burst_p99, quiet_str(q2), cpu);
    printf("  CPU until all were present: server %.1f s, member host %.1f s (%.2f s of %.2f s on two cores)\n",
           cpu_all, mcpu_all, cpu_all + mcpu_all, 2 * res->burst_all_s);
    fb_print_writes(&before, &after, m, "Deployment");
    printf("  target all present <= 5 s: %.2f s -> %s\n", res->burst_all_s,
           got == want && res->burst_all_s <= 5 ? "met" : "NOT met");
    if (got < want || cnt.added_again || cnt.deleted) {
        fprintf(stderr, "SERVER PROBLEM: phase 3: %ld/%ld arrived, %ld re-created, %ld deleted\n", got, want,
                cnt.added_again, cnt.deleted);
        problems++;
    }
    fb_snap_free(&before);
    fb_snap_free(&after);
    free(lat);
    free(ack);
    fleet_stop(&f, keep);
    tracker_free(t);
    return 0;
}

/* ---- phase 4: restart ----------------------------------------------------------------- */

/* The restart's floor: one thread reads every live object's value from the store's file
 * with SQLite and decodes it with jansson, once, nothing kept. A restart has to do at least
 * that (on two cores, half of it at best), so the ratio to it drifts less with the host's
 * pace than the time alone. Returns seconds, or -1. */
static double raw_read_s(const char *db, long *objects, double *mib)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    *objects = 0;
    *mib = 0;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h,
                           "SELECT k.value FROM kv k JOIN (SELECT name, max(id) id FROM kv GROUP BY name) m "
                           "ON k.id = m.id WHERE k.deleted = 0",
                           -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "raw read of %s: %s\n", db, h ? sqlite3_errmsg(h) : "cannot open");
        sqlite3_close(h);
        return -1;
    }
    int64_t t0 = fb_now_ns();
    long n = 0;
    double bytes = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *v = sqlite3_column_blob(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        json_t *o = v ? json_loadb(v, len, 0, NULL) : NULL;
        if (o) {
            n++;
            bytes += (double)len;
        }
        json_decref(o);
    }
    double s = fb_since_s(t0);
    if (rc != SQLITE_DONE)
        fprintf(stderr, "raw read of %s: %s\n", db, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    sqlite3_close(h);
    *objects = n;
    *mib = bytes / 1048576.0;
    return rc == SQLITE_DONE ? s : -1;
}

static int phase_restart(const char *flotilla, const char *const *again, const char *root, int d, int n, int conns,
                         int deadline_s, bool keep, run_result *res)
{
    printf("\n## Phase 4: restart with %d Deployments + %d ConfigMaps propagated to %d clusters\n", d, d, n);
    fleet f;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/restart", root);
    if (fleet_start(&f, flotilla, dir, n, true, false) || fleet_join(&f, n) < 0) {
        fleet_stop(&f, keep);
        return -1;
    }
    res->r_objects = d;
    res->r_clusters = n;
    /* items 0..d-1 are the objects, item d + k the probe Deployment created after restart k */
    int nrestarts = 0;
    while (again[nrestarts])
        nrestarts++;
    tracker *t = tracker_new(d + nrestarts, n);
    int pd = tracker_prefix(t, "r4d-", NULL);
    tracker_prefix(t, "r4c-", NULL);
    fleet_track(&f, t);
    create_policy(&f, "restart", "r4", n, true, NULL);
    int64_t t0 = fb_now_ns();
    double cs = create_many(&f, conns, 2 * d, gen_mixed, "r4", NULL);
    long want = 2L * d * n;
    long got = wait_present(&f, want, t0 + deadline_s * NS_PER_S);
    res->r_prop_s = fb_since_s(t0);
    double q = wait_quiet(&f, 2000, 300);
    printf("  %d objects created in %.1f s; %ld/%ld member objects present after %.1f s (%.0f per s); store quiet "
           "%s later\n",
           2 * d, cs, got, want, res->r_prop_s, got / res->r_prop_s, quiet_str(q));
    if (got < want) {
        fprintf(stderr, "SERVER PROBLEM: phase 4: only %ld/%ld propagated before the restart\n", got, want);
        problems++;
        fleet_track(&f, NULL);
        fleet_stop(&f, keep);
        tracker_free(t);
        return -1;
    }
    long long rev_before = store_rev(&f);
    double rss_before = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
    char db[700];
    snprintf(db, sizeof db, "%s/store.db", f.sdir);
    struct stat st;
    double db_mib = stat(db, &st) == 0 ? st.st_size / 1048576.0 : -1;
    for (int k = 0; again[k]; k++) {
        const char *bin = again[k];
        if (nrestarts > 1)
            printf("  restart %d of %d, with %s:\n", k + 1, nrestarts, bin);
        tracker c0 = tracker_counts(&f);

        /* a fleet at rest: the server has noted where its controllers and member watches had
         * finished (it does so once the store is quiet and every controller idle; first statuses
         * held back during the burst can keep the execution controller busy for seconds) */
        int64_t n0 = fb_now_ns();
        double noted_rev = -1, watches_noted = -1;
        while (fb_now_ns() < n0 + 60 * NS_PER_S) {
            fb_buf b = {0};
            if (fleet_metrics(&f, &b)) {
                noted_rev = metric_in(b.p, "flotilla_reconciled_revision");
                watches_noted = metric_in(b.p, "flotilla_member_watches_noted");
            }
            free(b.p);
            /* a build from before member watches were noted has no such metric */
            if (noted_rev == (double)store_rev(&f) && (watches_noted == 1 || watches_noted == -1))
                break;
            usleep(100000);
        }
        printf("  reconciled revision noted%s: %s (%.1f s after the store went quiet)\n",
               watches_noted == -1 ? " (this build notes no member watches)" : " with the member watches",
               noted_rev == (double)store_rev(&f) && watches_noted != 0 ? "yes" : "no", fb_since_s(n0));
        rev_before = store_rev(&f);

        /* kill -9 and start again on the same data directory */
        char log0[700], log1[700];
        snprintf(log0, sizeof log0, "%s/server.log", f.sdir);
        snprintf(log1, sizeof log1, "%s/server.log.before-restart-%d", f.sdir, k + 1);
        kill(f.s.pid, SIGKILL);
        waitpid(f.s.pid, NULL, 0);
        f.s.pid = -1;
        rename(log0, log1);
        curl_easy_cleanup(f.c);
        curl_slist_free_all(f.h);
        f.c = NULL;
        f.h = NULL;
        int64_t r0 = fb_now_ns();
        if (fb_server_start(bin, f.sdir, NULL, &f.s)) {
            fprintf(stderr, "SERVER PROBLEM: the server did not start again on its data directory\n");
            problems++;
            fleet_track(&f, NULL);
            fleet_stop(&f, keep);
            tracker_free(t);
            return -1;
        }
        f.h = fb_headers(&f.s);
        f.c = fb_curl_new(&f.s, f.h);
        while (cp_request(&f, "GET", "/readyz", NULL) != 200 && fb_now_ns() < r0 + 60 * NS_PER_S)
            usleep(10000);
        int64_t ready = fb_now_ns();
        res->r_ready_s = (double)(ready - r0) / 1e9;
        char probe[32];
        snprintf(probe, sizeof probe, "r4d-%d", d + k);
        create_deployment(&f, probe, "r4", 1);
        int64_t probe_ack = fb_now_ns();

        /* watch it settle: samples every 100 ms */
        int64_t last_rev_change = ready, last_cpu_busy = ready, probe_at = 0;
        long long rev = store_rev(&f), rev_ready = rev;
        enum { WIN = 10 }; /* 1 s of 100 ms samples */
        double cpu_win[WIN];
        int64_t cpu_t[WIN];
        for (int i = 0; i < WIN; i++) {
            cpu_win[i] = fb_proc_cpu_s(f.s.pid);
            cpu_t[i] = fb_now_ns();
        }
        int si = 0;
        int64_t deadline = ready + deadline_s * NS_PER_S, now = ready, full = 0;
        while ((now = fb_now_ns()) < deadline && fb_server_alive(&f.s)) {
            usleep(100000);
            now = fb_now_ns();
            long long r = store_rev(&f);
            if (r != rev) {
                rev = r;
                last_rev_change = now;
            }
            double cpu = fb_proc_cpu_s(f.s.pid);
            /* the oldest sample in the ring is about 1 s old */
            double used = cpu - cpu_win[si];
            double span = (double)(now - cpu_t[si]) / 1e9;
            cpu_win[si] = cpu;
            cpu_t[si] = now;
            si = (si + 1) % WIN;
            if (used > 0.1 * span)
                last_cpu_busy = now;
            if (!probe_at) {
                pthread_mutex_lock(&f.mu);
                probe_at = last_arrival(t, pd, d + k);
                pthread_mutex_unlock(&f.mu);
            }
            tracker c = tracker_counts(&f);
            int64_t last_member = c.last_event > r0 ? c.last_event : r0;
            if (probe_at && now - last_rev_change >= NS_PER_S && now - last_cpu_busy >= NS_PER_S &&
                now - last_member >= NS_PER_S) {
                full = probe_at;
                if (last_rev_change > full)
                    full = last_rev_change;
                if (last_cpu_busy > full)
                    full = last_cpu_busy;
                if (last_member > full)
                    full = last_member;
                res->r_member_s = c.last_event > r0 ? (double)(c.last_event - r0) / 1e9 : 0;
                break;
            }
        }
        tracker c1 = tracker_counts(&f);
        fleet_track(&f, NULL);
        res->r_reconciled = full != 0;
        res->r_probe_s = probe_at ? (double)(probe_at - r0) / 1e9 : -1;
        res->r_rev_s = (double)(last_rev_change - r0) / 1e9;
        res->r_cpu_s = (double)(last_cpu_busy - r0) / 1e9;
        res->r_full_s = full ? (double)(full - r0) / 1e9 : -1;
        res->r_rss = fb_proc_kib(f.s.pid, "VmRSS") / 1024.0;
        double r_cpu_total = fb_proc_cpu_s(f.s.pid); /* the new process's, all of it since its start */
        res->r_added_again = c1.added_again - c0.added_again;
        res->r_deleted = c1.deleted - c0.deleted;
        res->r_modified = c1.modified - c0.modified;
        res->r_writes = rev - rev_ready;
        res->restart_done = true;
        fb_reqsnap none = {0}, after = fb_snap_requests(&f.s);
        printf("  before the kill: store revision %lld, store.db %.1f MiB, server RSS %.1f MiB\n", rev_before, db_mib,
               rss_before);
        printf("  restart (kill -9, start on the same data dir), times from the new process's start:\n");
        printf("    /readyz answered (baseline):        %.2f s\n", res->r_ready_s);
        printf("    probe Deployment in all %d members: %s%.2f s (%.0f ms after its create ack)\n", n,
               probe_at ? "" : "NEVER, last check at ", probe_at ? res->r_probe_s : fb_since_s(r0),
               probe_at ? (double)(probe_at - probe_ack) / 1e6 : -1.0);
        printf("    store revision last moved:          %.2f s (%ld revisions after /readyz)\n", res->r_rev_s,
               res->r_writes);
        printf("    server CPU last >= 10%% of a core:   %.2f s (1 s windows)\n", res->r_cpu_s);
        printf("    last member event:                  %.2f s\n", res->r_member_s);
        printf("    fully reconciled (all of the above, then 1 s quiet): %s%.2f s = %.1f x the start-up to /readyz\n",
               full ? "" : "NOT within the deadline; ", full ? res->r_full_s : fb_since_s(r0),
               (full ? res->r_full_s : fb_since_s(r0)) / res->r_ready_s);
        printf("    members: %ld objects re-created, %ld deleted, %ld modified after the restart; server RSS %.1f MiB, "
               "server CPU %.1f s since its start\n",
               res->r_added_again, res->r_deleted, res->r_modified, res->r_rss, r_cpu_total);
        fb_print_writes(&none, &after, 2.0 * d, "object held (since the restart)");
        fb_buf mb = {0};
        double recs = fleet_metrics(&f, &mb) ? metric_in(mb.p, "flotilla_execution_work_reconciles_total") : -1;
        double same = mb.p ? metric_in(mb.p, "flotilla_execution_work_unchanged_total") : -1;
        double rendered = mb.p ? metric_in(mb.p, "flotilla_binding_works_unchanged_total") : -1;
        double resumed = mb.p ? metric_in(mb.p, "flotilla_controllers_resumed") : -1;
        double w_resumed = mb.p ? metric_in(mb.p, "flotilla_execution_watches_resumed_total") : -1;
        double works_left = mb.p ? metric_in(mb.p, "flotilla_execution_works_resumed_total") : -1;
        free(mb.p);
        printf("    the controllers resumed at the revision they had finished at (first passes skipped): %s\n",
               resumed == 1 ? "yes" : resumed == 0 ? "no" : "unknown");
        printf("    member watches that went on from where they were noted: %.0f; Works the execution controller "
               "left alone for it: %.0f\n",
               w_resumed < 0 ? 0 : w_resumed, works_left < 0 ? 0 : works_left);
        printf("    Work reconciles by the execution controller since the restart: %.0f (%.2f per Work), %.0f of them "
               "finding every member object at its recorded version\n",
               recs, recs / (2.0 * d * n), same);
        printf("    Works the binding controller found as rendered from the same inputs: %.0f\n", rendered);
        long raw_n;
        double raw_mib;
        res->r_raw_s = raw_read_s(db, &raw_n, &raw_mib);
        printf("    baseline: one thread reading and decoding the store's %ld live objects (%.1f MiB) once with "
               "SQLite and jansson: %.2f s; the restart took %.1f x that\n",
               raw_n, raw_mib, res->r_raw_s, res->r_raw_s > 0 ? res->r_full_s / res->r_raw_s : 0);
        printf("  target fully reconciled <= 10 s%s: %.2f s -> %s\n",
               d >= 30000 ? "" : " (set at 30,000 + 30,000; this run is smaller)", res->r_full_s,
               full && res->r_full_s <= 10 ? "met" : "NOT met");
        if (res->r_added_again || res->r_deleted || !full) {
            fprintf(stderr, "SERVER PROBLEM: phase 4: %ld re-created, %ld deleted in members; %s\n", res->r_added_again,
                    res->r_deleted, full ? "reconciled" : "not reconciled within the deadline");
            problems++;
        }
        fb_snap_free(&after);
        fleet_track(&f, t); /* for the next restart */
    }
    fleet_track(&f, NULL);
    fleet_stop(&f, keep);
    tracker_free(t);
    return 0;
}

/* Phase 1 at every size in turn on one fleet in root/sub; each size's result appended to res
 * (labelled with the store: etcd when server_extra is set). */
static void run_phase1(const char *flotilla, const char *root, const char *sub, const int *sizes, int nsizes, int items,
                       int gap_ms, bool stages, bool keep, run_result *res)
{
    int maxn = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxn)
            maxn = sizes[i];
    fleet f;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    /* one member host with the largest size; the sizes join in increasing order */
    if (fleet_start(&f, flotilla, dir, maxn, false, stages) == 0) {
        for (int i = 0; i < nsizes && res->ne2e < 8; i++) {
            if (sizes[i] < f.joined) {
                fprintf(stderr, "--clusters must increase: %d after %d skipped\n", sizes[i], f.joined);
                continue;
            }
            /* auto gap: 10 ms per cluster (at least 100 ms), about what one Deployment's
             * delivery costs the server, so the rounds measure latency, not a backlog */
            int gap = gap_ms >= 0 ? gap_ms : sizes[i] * 10 > 100 ? sizes[i] * 10 : 100;
            if (phase_e2e(&f, sizes[i], items, gap, &res->e2e[res->ne2e]) == 0)
                res->e2e[res->ne2e++].store = server_extra ? "etcd" : "SQLite";
            else
                break;
        }
    } else {
        problems++;
    }
    fleet_stop(&f, keep);
}

/* ---- main ----------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: propagation [--phases 1,2,3,4] [--clusters 10,100] [--items 20] [--gap-ms auto]\n"
                    "                   [--mem-objects 300] [--mem-clusters 10] [--burst 1000] [--burst-clusters 10]\n"
                    "                   [--restart-objects 300] [--restart-clusters 3] [--conns 8]\n"
                    "                   [--prop-deadline-s 300] [--no-stages] [--hold-s N] [--flotilla PATH] [--keep]\n"
                    "                   [--restart-with PATH,PATH,...] [--etcd]\n");
}

int main(int argc, char **argv)
{
    int phases[4] = {1, 2, 3, 4}, nphases = 4, sizes[4] = {10, 100}, nsizes = 2;
    /* defaults sized for a run of about 5 minutes on the 2-core machine (docs/BENCHMARKS.md
     * has the larger runs the targets name); gap_ms -1 = auto */
    int items = 20, gap_ms = -1, mem_objects = 300, mem_clusters = 10, burst = 1000, burst_clusters = 10;
    int restart_objects = 300, restart_clusters = 3, conns = 8, prop_deadline = 300, hold_s = 0;
    const char *flotilla_arg = NULL, *restart_with = NULL;
    bool keep = false, stages = true, etcd = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep"))
            keep = true;
        else if (!strcmp(a, "--etcd"))
            etcd = true;
        else if (!strcmp(a, "--no-stages"))
            stages = false;
        else if (!v)
            return usage(), 2;
        else if (!strcmp(a, "--phases"))
            nphases = fb_parse_list(argv[++i], phases, 4);
        else if (!strcmp(a, "--clusters"))
            nsizes = fb_parse_list(argv[++i], sizes, 4);
        else if (!strcmp(a, "--items"))
            items = atoi(argv[++i]);
        else if (!strcmp(a, "--gap-ms"))
            gap_ms = atoi(argv[++i]);
        else if (!strcmp(a, "--mem-objects"))
            mem_objects = atoi(argv[++i]);
        else if (!strcmp(a, "--mem-clusters"))
            mem_clusters = atoi(argv[++i]);
        else if (!strcmp(a, "--burst"))
            burst = atoi(argv[++i]);
        else if (!strcmp(a, "--burst-clusters"))
            burst_clusters = atoi(argv[++i]);
        else if (!strcmp(a, "--restart-objects"))
            restart_objects = atoi(argv[++i]);
        else if (!strcmp(a, "--restart-clusters"))
            restart_clusters = atoi(argv[++i]);
        else if (!strcmp(a, "--conns"))
            conns = atoi(argv[++i]);
        else if (!strcmp(a, "--hold-s"))
            hold_s = atoi(argv[++i]);
        else if (!strcmp(a, "--prop-deadline-s"))
            prop_deadline = atoi(argv[++i]);
        else if (!strcmp(a, "--flotilla"))
            flotilla_arg = argv[++i];
        else if (!strcmp(a, "--restart-with"))
            restart_with = argv[++i];
        else
            return usage(), 2;
    }
    if (items < 1 || gap_ms < -1 || mem_objects < 1 || mem_clusters < 1 || burst < 1 || burst_clusters < 1 ||
        restart_objects < 1 || restart_clusters < 1 || conns < 1 || prop_deadline < 1)
        return usage(), 2;
    bool want[5] = {false};
    for (int i = 0; i < nphases; i++)
        if (phases[i] >= 1 && phases[i] <= 4)
            want[phases[i]] = true;
    fb_raise_nofile();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    /* phase 4's restarts: once with the binary, or with each of a comma-separated list in
     * turn, on the same data (A/B of restarts without building the data again) */
    enum { MAX_RESTARTS = 16 };
    const char *again[MAX_RESTARTS + 1] = {flotilla, NULL};
    char *with = restart_with ? strdup(restart_with) : NULL;
    int nagain = 0;
    for (char *p = with, *next; p && nagain < MAX_RESTARTS; p = next) {
        next = strchr(p, ',');
        if (next)
            *next++ = '\0';
        if (*p)
            again[nagain++] = p;
    }
    if (nagain)
        again[nagain] = NULL;
    char *root = fb_mkdtemp(NULL, "fl-bench-propagation");
    run_result res = {0};
    int64_t run0 = fb_now_ns();
    print_load("at the start");
    printf("flotilla binary: %s\n", flotilla);

    if (want[1])
        run_phase1(flotilla, root, "e2e", sizes, nsizes, items, gap_ms, stages, keep, &res);
    if (want[1] && etcd) {
        /* the same on a 3-member etcd cluster, the store of the only difference */
        char edir[700];
        snprintf(edir, sizeof edir, "%s/etcd", root);
        fb_etcd cl;
        if (fb_etcd_start(edir, 3, &cl) == 0) {
            const char *x[] = {"--etcd-servers", cl.endpoints, "--etcd-prefix", "/bench-propagation", NULL};
            server_extra = x;
            printf("\n# Phase 1 again with the store in etcd (%s)\n", cl.endpoints);
            run_phase1(flotilla, root, "e2e-etcd", sizes, nsizes, items, gap_ms, stages, keep, &res);
            server_extra = NULL;
            fb_etcd_stop(&cl);
        } else {
            problems++;
        }
    }
    if (want[2] && phase_memory(flotilla, root, mem_objects, mem_clusters, conns, prop_deadline, keep, hold_s, &res))
        problems++;
    if (want[3] && phase_burst(flotilla, root, burst, burst_clusters, conns, prop_deadline, keep, &res))
        problems++;
    if (want[4] &&
        phase_restart(flotilla, again, root, restart_objects, restart_clusters, conns, prop_deadline, keep, &res))
        problems++;
    free(with);

    printf("\n## Summary (run took %.0f s)\n", fb_since_s(run0));
    print_load("at the end");
    printf("| measurement | result | baseline (same run) | ratio | target |\n|---|---|---|---|---|\n");
    for (int i = 0; i < res.ne2e; i++) {
        e2e_result *e = &res.e2e[i];
        for (int kind = 1; kind < 3; kind++)
            printf("| end to end, %s, %d clusters, %s: P50 / P99 | %.1f / %.1f ms | %.1f / %.1f ms | %.2f / %.2f | P99 "
                   "<= 100 ms at 100 clusters |\n",
                   kind == 1 ? "Duplicated" : "Divided", e->clusters, e->store, e->p50[kind], e->p99[kind], e->p50[0],
                   e->p99[0], e->p50[0] > 0 ? e->p50[kind] / e->p50[0] : 0,
                   e->p99[0] > 0 ? e->p99[kind] / e->p99[0] : 0);
    }
    for (int i = 0; i < res.ne2e; i++) { /* --etcd: each etcd round against the SQLite one of its size */
        e2e_result *e = &res.e2e[i];
        for (int j = 0; j < res.ne2e && !strcmp(e->store, "etcd"); j++) {
            e2e_result *q = &res.e2e[j];
            if (strcmp(q->store, "SQLite") || q->clusters != e->clusters || q->p99[1] <= 0 || q->p99[2] <= 0)
                continue;
            double r1 = e->p99[1] / q->p99[1], r2 = e->p99[2] / q->p99[2];
            printf("end to end at %d clusters, P99 etcd / SQLite: Duplicated %.2fx (%.1f / %.1f ms), Divided %.2fx "
                   "(%.1f / %.1f ms); target <= 2x%s: %s\n",
                   e->clusters, r1, e->p99[1], q->p99[1], r2, e->p99[2], q->p99[2],
                   e->clusters >= 100 ? "" : " (set at 100 clusters)", r1 <= 2 && r2 <= 2 ? "met" : "NOT met");
        }
    }
    if (res.mem_done)
        printf("| server RSS, %d Deployments over %d clusters | %.1f MiB | %.1f MiB unpropagated | %.2f | <= 150 MiB |\n",
               res.mem_objects, res.mem_clusters, res.mem_rss_prop, res.mem_rss_base,
               res.mem_rss_prop / res.mem_rss_base);
    if (res.burst_done)
        printf("| %d Deployments at once to %d clusters: all present | %.2f s | %.2f s to create them unselected | "
               "%.1f | <= 5 s |\n",
               res.burst, res.burst_clusters, res.burst_all_s, res.burst_base_s, res.burst_all_s / res.burst_base_s);
    if (res.restart_done)
        printf("| restart, %d Deployments + %d ConfigMaps over %d clusters: fully reconciled | %s%.2f s | %.2f s to "
               "/readyz; %.2f s to read and decode the store once, one thread | %.1f; %.1f | <= 10 s at 30,000 + 30,000 "
               "|\n",
               res.r_objects, res.r_objects, res.r_clusters, res.r_reconciled ? "" : "not within the deadline, > ",
               res.r_full_s > 0 ? res.r_full_s : 0, res.r_ready_s, res.r_raw_s,
               res.r_ready_s > 0 ? res.r_full_s / res.r_ready_s : 0, res.r_raw_s > 0 ? res.r_full_s / res.r_raw_s : 0);
    fb_scratch_done(root, keep);
    free(root);
    curl_global_cleanup();
    return problems ? 1 : 0;
}
