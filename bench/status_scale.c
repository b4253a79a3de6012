/* status_scale.c - live status at fleet scale (issue 45): N Push clusters x M Deployments,
 * join and reach all Current, churn a share of the clusters each second, partition 10% and
 * heal; convergence of the bindings' status.summary and what it costs the control plane.
 *
 *   status_scale [--clusters 100] [--objects 20] [--churn 1] [--churn-s 30] [--hold 3]
 *                [--deadline 1] [--partition 10] [--idle-s 10] [--flotilla PATH] [--keep]
 *
 * One `flotilla server` and one `flotilla member --clusters N` (HTTPS, tokens), joined in
 * Push mode as `flotilla ctl join` does. Phases:
 *  1. setup: M Deployments st-0..st-(M-1) (1 replica, image nginx:1.25, progressDeadlineSeconds
 *     --deadline) and one PropagationPolicy, Duplicated to every cluster; time until every
 *     binding's summary says current == desired == N; server CPU and RSS.
 *  2. idle baseline: --idle-s seconds with nothing changing, /metrics read once a second as in
 *     the churn: the server's CPU then is the floor the churn's is compared with.
 *  3. churn, --churn-s seconds: each second, --churn percent of the clusters (at least one) is
 *     broken and each cluster broken --hold seconds ago is mended. Breaking a cluster is a user's
 *     change the summary must show: an OverridePolicy churn-memberC giving every Deployment in
 *     memberC the registry fake.io (the simulator never pulls it: no replica turns ready, the
 *     Deployment is InProgress and Failed --deadline seconds later); mending is deleting that
 *     policy (the Deployment rolls back and is Current). A member-side edit would not do: the
 *     execution controller puts its manifest back, so the change would undo itself.
 *     Measured per (cluster, Deployment):
 *       - convergence, the figure: the member object's last kstatus change (seen on a
 *         watch of each member's Deployments, the state computed here with the rules of
 *         docs/status.md) -> the binding's summary shows that cluster in that state (named in
 *         notCurrent, or absent from it for Current);
 *       - end to end: the OverridePolicy's write acknowledged -> the summary shows the cluster
 *         not Current (break) or Current again (mend).
 *     The summaries are read from one watch on the control plane's ResourceBindings.
 *     Cost over the window: server CPU (cores) against the idle baseline, member-host CPU,
 *     bytes the server wrote to disk (/proc/PID/io) and store writes (flotilla_store_commit_writes)
 *     per object change, the write requests by resource, each work queue's deepest depth
 *     (workqueue_depth, sampled once a second) and the server's own status lag
 *     (flotilla_status_lag_seconds by stage).
 *  4. partition: every broken cluster mended and the fleet Current again, then --partition
 *     percent of the clusters (the last ones) partitioned on the member host (PUT
 *     /admin/clusters/<name>/fault {"partition":true}: their requests hang); time until every
 *     binding counts them Unknown; healed; time until every binding is Current on all N
 *     (--partition 0 skips the phase).
 * Printed beside the targets: convergence P99 <= 1 s under churn, <= 0.5 core for 100
 * changes/s, server RSS, largest binding <= 64 KiB (the largest event object seen, and a list at
 * the end). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_common.h"

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define MAX_QUEUES 64

enum { ST_CURRENT, ST_INPROGRESS, ST_FAILED, ST_TERMINATING, ST_NOTFOUND, ST_UNKNOWN, NSTATES, ST_NONE = -1 };
static const char *const STATE[NSTATES] = {"Current", "InProgress", "Failed", "Terminating", "NotFound", "Unknown"};

static int problems;

/* A growable array of latencies (ns). */
typedef struct lats {
    int64_t *v;
    size_t n, cap;
} lats;

static void lats_add(lats *l, int64_t v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v)
            abort();
    }
    l->v[l->n++] = v < 0 ? 0 : v;
}

/* One (cluster, Deployment): what the member shows, what the summary shows, what is awaited. */
typedef struct cell {
    signed char member;   /* state computed from the member's object, ST_NONE before seen */
    signed char shown;    /* state the binding's summary gives this cluster, ST_NONE unknown */
    signed char want;     /* member state awaited in the summary, ST_NONE if none */
    signed char e2e_bad;  /* 1: awaiting not Current, 0: awaiting Current, -1: nothing */
    int64_t t_member, t_user;
} cell;

typedef struct binding_view {
    int current, desired, unknown, applied;
    bool truncated, seen;
} binding_view;

typedef struct bench {
    int n, m;
    fb_server s;
    fb_member_host mh;
    char mdir[600];
    CURL *c;
    struct curl_slist *h;
    fb_buf out;
    pthread_mutex_t mu;
    fb_watchset ws; /* every member's Deployments, and the control plane's bindings */
    cell *cells;        /* [cluster * m + object] */
    binding_view *bv;   /* [object] */
    bool measuring;
    lats conv, conv_state[NSTATES], e2e_break, e2e_mend;
    long superseded, early, events_bind, events_member, changes;
    size_t largest_binding;
} bench;

static cell *cellp(bench *b, int c, int o)
{
    return &b->cells[(size_t)c * (size_t)b->m + (size_t)o];
}

static double since_s(int64_t t0)
{
    return (double)(fb_now_ns() - t0) / 1e9;
}

static const char *load_now(void)
{
    static char buf[64];
    FILE *f = fopen("/proc/loadavg", "r");
    buf[0] = 0;
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = 0;
        fclose(f);
    }
    char *sp = strchr(buf, ' ');
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    if (sp)
        *sp = 0;
    return buf;
}

/* Bytes a process caused to be written to storage so far (/proc/PID/io write_bytes), or -1. */
static long long proc_write_bytes(pid_t pid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
    FILE *f = fopen(path, "r");
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "write_bytes:", 12))
            v = atoll(line + 12);
    if (f)
        fclose(f);
    return v;
}

static int state_of(const char *s)
{
    for (int i = 0; s && i < NSTATES; i++)
        if (!strcmp(s, STATE[i]))
            return i;
    return ST_NONE;
}

static long long jint(const json_t *o, const char *k, long long dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* A Deployment's kstatus state by the rules of docs/status.md (the kinds' common rules, then
 * the Deployment's). */
static int deploy_state(const json_t *o)
{
    const json_t *md = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec"),
                 *st = json_object_get(o, "status");
    if (json_object_get(md, "deletionTimestamp"))
        return ST_TERMINATING;
    json_t *og = json_object_get(st, "observedGeneration");
    if (og && json_integer_value(og) != jint(md, "generation", 0))
        return ST_INPROGRESS;
    const char *progressing = NULL, *available = NULL;
    size_t i;
    json_t *cd;
    json_array_foreach(json_object_get(st, "conditions"), i, cd)
    {
        const char *t = json_string_value(json_object_get(cd, "type"));
        if (t && !strcmp(t, "Progressing"))
            progressing = json_string_value(json_object_get(cd, "reason"));
        else if (t && !strcmp(t, "Available"))
            available = json_string_value(json_object_get(cd, "status"));
    }
    if (progressing && !strcmp(progressing, "ProgressDeadlineExceeded"))
        return ST_FAILED;
    long long want = jint(spec, "replicas", 1), updated = jint(st, "updatedReplicas", 0);
    if (jint(st, "replicas", 0) < want || updated < want || jint(st, "replicas", 0) > updated ||
        jint(st, "availableReplicas", 0) < updated || jint(st, "readyReplicas", 0) < want)
        return ST_INPROGRESS;
    if (json_object_get(spec, "progressDeadlineSeconds") && (!progressing || strcmp(progressing, "NewReplicaSetAvailable")))
        return ST_INPROGRESS;
    if (!available || strcmp(available, "True"))
        return ST_INPROGRESS;
    return ST_CURRENT;
}

/* "st-<o>..." -> o, or -1. */
static int object_index(const bench *b, const char *name)
{
    int o;
    if (!name || sscanf(name, "st-%d", &o) != 1 || o < 0 || o >= b->m)
        return -1;
    return o;
}

/* Does what the summary shows for (c, o) settle what is awaited? (b->mu held) */
static void check_cell(bench *b, cell *x, int64_t now)
{
    if (!b->measuring || x->shown == ST_NONE)
        return;
    if (x->want != ST_NONE && x->shown == x->want) {
        lats_add(&b->conv, now - x->t_member);
        lats_add(&b->conv_state[(int)x->want], now - x->t_member);
        x->want = ST_NONE;
    }
    if (x->e2e_bad == 1 && x->shown != ST_CURRENT) {
        lats_add(&b->e2e_break, now - x->t_user);
        x->e2e_bad = -1;
    } else if (x->e2e_bad == 0 && x->shown == ST_CURRENT) {
        lats_add(&b->e2e_mend, now - x->t_user);
        x->e2e_bad = -1;
    }
}

static void on_member(bench *b, int c, const json_t *obj, bool deleted, int64_t now)
{
    int o = object_index(b, json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
    if (o < 0)
        return;
    int st = deleted ? ST_NOTFOUND : deploy_state(obj);
    pthread_mutex_lock(&b->mu);
    cell *x = cellp(b, c, o);
    b->events_member++;
    if (st != x->member) {
        x->member = (signed char)st;
        if (b->measuring) {
            b->changes++;
            b->superseded += x->want != ST_NONE;
            x->want = (signed char)st;
            x->t_member = now;
            /* the server can be quicker than this client's own member watch */
            if (x->shown == st) {
                b->early++;
                check_cell(b, x, now);
            }
        }
    }
    pthread_mutex_unlock(&b->mu);
}

static void on_binding(bench *b, const json_t *obj, size_t bytes, int64_t now)
{
    int o = object_index(b, json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
    if (o < 0)
        return;
    const json_t *sum = json_object_get(json_object_get(obj, "status"), "summary");
    pthread_mutex_lock(&b->mu);
    b->events_bind++;
    if (bytes > b->largest_binding) {
        char *d = json_dumps(obj, JSON_COMPACT);
        size_t n = d ? strlen(d) : 0;
        if (n > b->largest_binding)
            b->largest_binding = n;
        free(d);
    }
    binding_view *v = &b->bv[o];
    if (!sum) {
        pthread_mutex_unlock(&b->mu);
        return;
    }
    v->seen = true;
    v->current = (int)jint(sum, "current", 0);
    v->desired = (int)jint(sum, "desired", 0);
    v->applied = (int)jint(sum, "applied", 0);
    v->unknown = (int)jint(sum, "unknown", 0);
    v->truncated = json_is_true(json_object_get(sum, "truncated"));
    signed char dflt = v->truncated ? ST_NONE : ST_CURRENT;
    for (int c = 0; c < b->n; c++)
        cellp(b, c, o)->shown = dflt;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(sum, "notCurrent"), i, it)
    {
        const char *cl = json_string_value(json_object_get(it, "cluster"));
        int c;
        if (cl && sscanf(cl, "member%d", &c) == 1 && c >= 1 && c <= b->n)
            cellp(b, c - 1, o)->shown = (signed char)state_of(json_string_value(json_object_get(it, "state")));
    }
    for (int c = 0; c < b->n; c++)
        check_cell(b, cellp(b, c, o), now);
    pthread_mutex_unlock(&b->mu);
}

/* An event of a member's Deployments (the watch's cluster) or of the bindings (-1). */
static void on_event(fb_watch *w, int type, const char *line, int64_t now)
{
    json_t *ev = json_loads(line, 0, NULL);
    json_t *obj = json_object_get(ev, "object");
    if (obj) {
        if (w->cluster >= 0)
            on_member(w->ctx, w->cluster, obj, type == 2, now);
        else
            on_binding(w->ctx, obj, strlen(line), now);
    }
    json_decref(ev);
}

static void add_watch(bench *b, const fb_server *srv, int cluster, const char *path)
{
    fb_watch *w = fb_watchset_add(&b->ws, srv, path, on_event);
    w->ctx = b;
    w->cluster = cluster;
}

static long cp(bench *b, const char *method, const char *path, const char *body)
{
    return fb_request(b->c, &b->s, method, path, body, body ? strlen(body) : 0, &b->out);
}

/* ---- /metrics ---------------------------------------------------------------------------- */

typedef struct queues {
    char name[MAX_QUEUES][64];
    double depth[MAX_QUEUES];
    int n;
} queues;

typedef struct scrape {
    double commit_writes, lag_sum[2], lag_count[2], db_bytes;
    double counter[6]; /* COUNTERS below */
} scrape;

/* Counters read before and after the churn: what the controllers did per change. */
static const char *const COUNTERS[6] = {
    "workqueue_adds_total{name=\"binding\"",         "workqueue_adds_total{name=\"bindingstatus\"",
    "workqueue_adds_total{name=\"execution\"",       "flotilla_binding_works_unchanged_total",
    "flotilla_execution_work_reconciles_total", "flotilla_execution_work_unchanged_total"};

/* Sum of every sample of the family `prefix` (a name, or a name and the start of its
 * labels) in a /metrics text. */
static double metric_sum(const char *text, const char *prefix)
{
    double v = 0;
    size_t pl = strlen(prefix);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, prefix, pl) && (l[pl] == ' ' || l[pl] == '{' || prefix[pl - 1] == '"')) {
            const char *eol = strchr(l, '\n'), *sp = memchr(l, '}', eol ? (size_t)(eol - l) : strlen(l));
            v += strtod(sp ? sp + 1 : l + pl, NULL);
        }
    return v;
}

/* Read /metrics: the sums kept in `sc`, the deepest depth of each work queue into q. */
static void scrape_metrics(bench *b, queues *q, scrape *sc)
{
    if (cp(b, "GET", "/metrics", NULL) != 200 || !b->out.p)
        return;
    const char *text = b->out.p;
    const char *pre = "workqueue_depth{name=\"";
    for (const char *l = text; q && l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, pre, strlen(pre)))
            continue;
        const char *nm = l + strlen(pre);
        size_t nl = strcspn(nm, "\"");
        const char *eol = strchr(nm, '\n'), *close = memchr(nm, '}', eol ? (size_t)(eol - nm) : strlen(nm));
        double d = close ? strtod(close + 1, NULL) : 0;
        int i = 0;
        while (i < q->n && (strlen(q->name[i]) != nl || strncmp(q->name[i], nm, nl)))
            i++;
        if (i == q->n && q->n < MAX_QUEUES) {
            snprintf(q->name[i], sizeof q->name[i], "%.*s", (int)nl, nm);
            q->depth[q->n++] = 0;
        }
        if (i < q->n && d > q->depth[i])
            q->depth[i] = d;
    }
    if (sc) {
        sc->commit_writes = metric_sum(text, "flotilla_store_commit_writes_sum");
        sc->lag_sum[0] = metric_sum(text, "flotilla_status_lag_seconds_sum{stage=\"work\"");
        sc->lag_count[0] = metric_sum(text, "flotilla_status_lag_seconds_count{stage=\"work\"");
        sc->lag_sum[1] = metric_sum(text, "flotilla_status_lag_seconds_sum{stage=\"binding\"");
        sc->lag_count[1] = metric_sum(text, "flotilla_status_lag_seconds_count{stage=\"binding\"");
        sc->db_bytes = metric_sum(text, "flotilla_store_db_size_bytes");
        for (int i = 0; i < 6; i++)
            sc->counter[i] = metric_sum(text, COUNTERS[i]);
    }
}

static void print_queues(const queues *q)
{
    printf("  deepest work queues (workqueue_depth, sampled once a second):");
    int shown = 0;
    for (int i = 0; i < q->n; i++)
        if (q->depth[i] > 0) {
            printf(" %s %.0f", q->name[i], q->depth[i]);
            shown++;
        }
    printf("%s\n", shown ? "" : " all empty at every sample");
}

/* ---- the phases ------------------------------------------------------------------------ */

/* A CPU/RSS/IO reading of the server and the member host. */
typedef struct sample {
    int64_t t;
    double cpu_s, mcpu_s;
    long long wbytes;
} sample;

static sample take(const bench *b)
{
    return (sample){fb_now_ns(), fb_proc_cpu_s(b->s.pid), fb_proc_cpu_s(b->mh.pid), proc_write_bytes(b->s.pid)};
}

static double cores(sample a, sample z)
{
    return (z.cpu_s - a.cpu_s) / ((double)(z.t - a.t) / 1e9);
}

/* Wait until every binding's summary counts `want` (current == desired == n when unknown
 * is false; unknown == want otherwise). True if reached before the deadline. */
static bool wait_bindings(bench *b, bool unknown, int want, int timeout_s)
{
    for (int64_t end = fb_now_ns() + timeout_s * NS_PER_S; fb_now_ns() < end; usleep(20000)) {
        int ok = 0;
        pthread_mutex_lock(&b->mu);
        for (int o = 0; o < b->m; o++) {
            const binding_view *v = &b->bv[o];
            ok += v->seen && (unknown ? v->unknown == want : v->current == b->n && v->desired == b->n);
        }
        pthread_mutex_unlock(&b->mu);
        if (ok == b->m)
            return true;
    }
    return false;
}

static void binding_counts(bench *b, int *cur_min, int *unk_min)
{
    *cur_min = b->n;
    *unk_min = b->n;
    pthread_mutex_lock(&b->mu);
    for (int o = 0; o < b->m; o++) {
        *cur_min = b->bv[o].current < *cur_min ? b->bv[o].current : *cur_min;
        *unk_min = b->bv[o].unknown < *unk_min ? b->bv[o].unknown : *unk_min;
    }
    pthread_mutex_unlock(&b->mu);
}

static int start(bench *b, const char *flotilla, const char *root)
{
    char sdir[600];
    snprintf(sdir, sizeof sdir, "%s/server", root);
    snprintf(b->mdir, sizeof b->mdir, "%s/members", root);
    if (fb_server_start(flotilla, sdir, NULL, &b->s))
        return -1;
    if (fb_member_start(flotilla, b->mdir, b->n, &b->mh))
        return -1;
    b->h = fb_headers(&b->s);
    b->c = fb_curl_new(&b->s, b->h);
    b->cells = calloc((size_t)b->n * (size_t)b->m, sizeof *b->cells);
    b->bv = calloc((size_t)b->m, sizeof *b->bv);
    fb_watchset_init(&b->ws, b->n + 1);
    for (size_t i = 0; i < (size_t)b->n * (size_t)b->m; i++)
        b->cells[i] = (cell){.member = ST_NONE, .shown = ST_NONE, .want = ST_NONE, .e2e_bad = -1};
    fb_server mem = {0};
    snprintf(mem.url, sizeof mem.url, "%s", b->mh.url);
    snprintf(mem.ca, sizeof mem.ca, "%s/pki/ca.crt", b->mdir);
    for (int c = 0; c < b->n; c++) {
        char kc[700], path[200];
        snprintf(kc, sizeof kc, "%s/member%d.kubeconfig", b->mdir, c + 1);
        char *tok = fb_kubeconfig_token(kc);
        snprintf(mem.auth, sizeof mem.auth, "Authorization: Bearer %s", tok ? tok : "");
        free(tok);
        snprintf(path, sizeof path, "/clusters/member%d/apis/apps/v1/namespaces/default/deployments?watch=1", c + 1);
        add_watch(b, &mem, c, path);
    }
    add_watch(b, &b->s, -1, "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings?watch=1");
    if (fb_watchset_start(&b->ws, 60)) {
        fprintf(stderr, "SERVER PROBLEM: only %d of %d watches opened in 60 s\n", atomic_load(&b->ws.open), b->ws.n);
        return -1;
    }
    return 0;
}

static void stop(bench *b)
{
    fb_watchset_close(&b->ws);
    if (b->c)
        curl_easy_cleanup(b->c);
    curl_slist_free_all(b->h);
    free(b->out.p);
    fb_member_stop(&b->mh);
    if (b->s.pid > 0 && fb_server_stop(&b->s) != 0)
        problems++;
    free(b->cells);
    free(b->bv);
    free(b->conv.v);
    for (int s = 0; s < NSTATES; s++)
        free(b->conv_state[s].v);
    free(b->e2e_break.v);
    free(b->e2e_mend.v);
}

/* Join, create the Deployments and the policy, wait for all Current. */
static int setup(bench *b, int deadline_s)
{
    sample a = take(b);
    int64_t t0 = fb_now_ns();
    pid_t *agents = NULL;
    if (fb_join(NULL, b->c, &b->s, &b->mh, b->mdir, b->n, false, NULL, &agents) ||
        fb_wait_ready(b->c, &b->s, b->n, 300) < b->n) {
        fprintf(stderr, "SERVER PROBLEM: %d clusters did not all join and turn Ready in 300 s\n", b->n);
        return -1;
    }
    double join_s = since_s(t0);
    int64_t t1 = fb_now_ns();
    char body[1024];
    for (int o = 0; o < b->m; o++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"st-%d\",\"labels\":"
                 "{\"bench\":\"status\"}},\"spec\":{\"replicas\":1,\"progressDeadlineSeconds\":%d,\"selector\":"
                 "{\"matchLabels\":{\"app\":\"st-%d\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"st-%d\"}},"
                 "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\"}]}}}}",
                 o, deadline_s, o, o);
        if (cp(b, "POST", "/apis/apps/v1/namespaces/default/deployments", body) != 201) {
            fprintf(stderr, "SERVER PROBLEM: create st-%d: %.300s\n", o, b->out.p);
            return -1;
        }
    }
    const char *pp = "{\"apiVersion\":\"policy.karmada.io/v1alpha1\",\"kind\":\"PropagationPolicy\",\"metadata\":"
                     "{\"name\":\"status-scale\",\"namespace\":\"default\"},\"spec\":{\"resourceSelectors\":[{"
                     "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":{\"bench\":"
                     "\"status\"}}}],\"placement\":{\"replicaScheduling\":{\"replicaSchedulingType\":\"Duplicated\"}}}}";
    if (cp(b, "POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", pp) != 201) {
        fprintf(stderr, "SERVER PROBLEM: create the PropagationPolicy: %.300s\n", b->out.p);
        return -1;
    }
    bool ok = wait_bindings(b, false, 0, 300);
    sample z = take(b);
    int cur, unk;
    binding_counts(b, &cur, &unk);
    printf("setup: %d clusters joined and Ready in %.1f s; %d Deployments x %d clusters %s in %.1f s "
           "(fewest Current in a binding: %d)\n",
           b->n, join_s, b->m, b->n, ok ? "all Current" : "NOT all Current", since_s(t1), cur);
    printf("  server CPU %.1f s over setup (%.2f cores), member host %.1f s; server RSS %.1f MiB, peak %.1f MiB\n",
           z.cpu_s - a.cpu_s, cores(a, z), z.mcpu_s - a.mcpu_s, fb_proc_kib(b->s.pid, "VmRSS") / 1024.0,
           fb_proc_kib(b->s.pid, "VmHWM") / 1024.0);
    return ok ? 0 : -1;
}

static long policy(bench *b, int c, bool create)
{
    char path[200], body[1024];
    if (!create) {
        snprintf(path, sizeof path, "/apis/policy.karmada.io/v1alpha1/namespaces/default/overridepolicies/churn-member%d",
                 c + 1);
        return cp(b, "DELETE", path, NULL);
    }
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"policy.karmada.io/v1alpha1\",\"kind\":\"OverridePolicy\",\"metadata\":{\"name\":"
             "\"churn-member%d\",\"namespace\":\"default\"},\"spec\":{\"resourceSelectors\":[{\"apiVersion\":"
             "\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":{\"bench\":\"status\"}}}],"
             "\"overrideRules\":[{\"targetCluster\":{\"clusterNames\":[\"member%d\"]},\"overriders\":{"
             "\"imageOverrider\":[{\"component\":\"Registry\",\"operator\":\"replace\",\"value\":\"fake.io\"}]}}]}}",
             c + 1, c + 1);
    return cp(b, "POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/overridepolicies", body);
}

/* Break (create) or mend (delete) cluster c, stamping the user's change on its cells. */
static void flip(bench *b, int c, bool brk)
{
    long code = policy(b, c, brk);
    int64_t now = fb_now_ns();
    if (code != (brk ? 201 : 200)) {
        fprintf(stderr, "SERVER PROBLEM: %s churn-member%d: HTTP %ld %.200s\n", brk ? "create" : "delete", c + 1, code,
                b->out.p);
        problems++;
        return;
    }
    pthread_mutex_lock(&b->mu);
    for (int o = 0; o < b->m; o++) {
        cell *x = cellp(b, c, o);
        x->e2e_bad = brk;
        x->t_user = now;
    }
    pthread_mutex_unlock(&b->mu);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

static void print_lat(const char *what, lats *l)
{
    if (!l->n) {
        printf("  %-52s none measured\n", what);
        return;
    }
    double p50 = fb_pct_ms(l->v, l->n, 50);
    printf("  %-52s n=%zu  P50 %.0f ms  P90 %.0f ms  P99 %.0f ms  max %.0f ms\n", what, l->n, p50,
           fb_pct_sorted_ms(l->v, l->n, 90), fb_pct_sorted_ms(l->v, l->n, 99), fb_pct_sorted_ms(l->v, l->n, 100));
}

typedef struct churn_result {
    double idle_cores, churn_cores, member_cores, changes_per_s, flips_per_s;
    long long bytes_per_change;
    double writes_per_change, p99;
    long changes;
} churn_result;

/* After a settle that timed out: which (cluster, object) are not Current, and where it stuck
 * (the member's own state against the summary's). */
static void report_unsettled(bench *b)
{
    pthread_mutex_lock(&b->mu);
    long member_not = 0, shown_not = 0;
    int named = 0;
    for (int c = 0; c < b->n; c++)
        for (int o = 0; o < b->m; o++) {
            const cell *x = cellp(b, c, o);
            member_not += x->member != ST_CURRENT;
            shown_not += x->shown != ST_CURRENT;
            if ((x->member != ST_CURRENT || x->shown != ST_CURRENT) && named++ < 8)
                printf("  not settled: member%d st-%d: member %s, summary %s\n", c + 1, o,
                       x->member >= 0 ? STATE[(int)x->member] : "?", x->shown >= 0 ? STATE[(int)x->shown] : "?");
        }
    printf("  not settled: %ld (cluster, object) not Current in the members, %ld not Current in the summaries\n",
           member_not, shown_not);
    pthread_mutex_unlock(&b->mu);
}

static void idle(bench *b, int idle_s, churn_result *r)
{
    queues q = {0};
    sample a = take(b);
    for (int i = 0; i < idle_s; i++) {
        scrape_metrics(b, &q, NULL);
        fb_sleep_until(a.t + (i + 1) * NS_PER_S);
    }
    sample z = take(b);
    r->idle_cores = cores(a, z);
    printf("idle baseline, %d s (nothing changing, /metrics read once a second): server %.3f cores, member host %.3f "
           "cores, server wrote %.1f KiB to disk\n",
           idle_s, r->idle_cores, (z.mcpu_s - a.mcpu_s) / ((double)(z.t - a.t) / 1e9), (z.wbytes - a.wbytes) / 1024.0);
}

/* The churn window: returns the number of clusters still broken in `broken_at` (ns, 0: mended). */
static void churn(bench *b, double pct, int seconds, int hold_s, churn_result *r)
{
    int k = (int)lround(b->n * pct / 100.0);
    k = k < 1 ? 1 : k;
    int64_t *broken_at = calloc((size_t)b->n, sizeof *broken_at);
    queues q = {0};
    scrape s0 = {0}, s1 = {0};
    scrape_metrics(b, NULL, &s0);
    fb_reqsnap w0 = fb_snap_requests(&b->s);
    pthread_mutex_lock(&b->mu);
    b->measuring = true;
    long ev_b0 = b->events_bind, ev_m0 = b->events_member;
    pthread_mutex_unlock(&b->mu);
    sample a = take(b);
    long flips = 0;
    for (int sec = 0; sec < seconds; sec++) {
        int64_t tick = a.t + sec * NS_PER_S;
        fb_sleep_until(tick);
        for (int c = 0; c < b->n; c++)
            if (broken_at[c] && broken_at[c] <= tick - hold_s * NS_PER_S + 100 * NS_PER_MS) {
                flip(b, c, false);
                broken_at[c] = 0;
                flips++;
            }
        for (int i = 0, tries = 0; i < k && tries < 100 * k; tries++) {
            int c = rnd(b->n);
            if (broken_at[c] || c >= b->n - (b->n + 9) / 10)
                continue; /* broken already, or one of the clusters the partition takes */
            flip(b, c, true);
            broken_at[c] = fb_now_ns();
            flips++;
            i++;
        }
        scrape_metrics(b, &q, NULL);
    }
    fb_sleep_until(a.t + seconds * NS_PER_S);
    sample z = take(b);
    pthread_mutex_lock(&b->mu);
    long changes = b->changes;
    pthread_mutex_unlock(&b->mu);
    scrape_metrics(b, NULL, &s1);
    fb_reqsnap w1 = fb_snap_requests(&b->s);
    /* mend what is still broken, and wait for the fleet to settle (still measuring) */
    int64_t t_mend = fb_now_ns();
    for (int c = 0; c < b->n; c++)
        if (broken_at[c]) {
            flip(b, c, false);
            flips++;
        }
    bool settled = wait_bindings(b, false, 0, 120);
    double settle_s = since_s(t_mend);
    usleep(500000);
    pthread_mutex_lock(&b->mu);
    b->measuring = false;
    long pending = 0;
    for (size_t i = 0; i < (size_t)b->n * (size_t)b->m; i++)
        pending += b->cells[i].want != ST_NONE;
    long ev_b = b->events_bind - ev_b0, ev_m = b->events_member - ev_m0;
    pthread_mutex_unlock(&b->mu);
    double wall = (double)(z.t - a.t) / 1e9;
    r->churn_cores = cores(a, z);
    r->member_cores = (z.mcpu_s - a.mcpu_s) / wall;
    /* changes: the member-side (cluster, object) state changes within the window, per second */
    r->changes = changes;
    r->changes_per_s = (double)changes / wall;
    r->flips_per_s = (double)flips / wall;
    r->bytes_per_change = changes ? (z.wbytes - a.wbytes) / (long long)changes : 0;
    r->writes_per_change = changes ? (s1.commit_writes - s0.commit_writes) / (double)changes : 0;
    printf("churn: %d s, %d clusters broken a second (%.1f%% of %d; the last %d never: they are the partition's), "
           "each mended %d s later: %ld OverridePolicy writes (%.1f/s), %ld member state changes in the window "
           "(%.1f (cluster, object) changes/s); then all mended, fleet Current again %s %.1f s\n",
           seconds, k, pct, b->n, (b->n + 9) / 10, hold_s, flips, r->flips_per_s, changes, r->changes_per_s, settled ? "after" : "NOT within", settle_s);
    if (!settled) {
        problems++;
        report_unsettled(b);
    }
    printf("  events read: %ld binding, %ld member Deployment; awaited changes superseded by a later one %ld, "
           "shown before this client saw the member change %ld, never shown %ld\n",
           ev_b, ev_m, b->superseded, b->early, pending);
    print_lat("convergence, member change -> summary (all):", &b->conv);
    for (int s = 0; s < NSTATES; s++)
        if (b->conv_state[s].n) {
            char what[80];
            snprintf(what, sizeof what, "  ... to %s:", STATE[s]);
            print_lat(what, &b->conv_state[s]);
        }
    r->p99 = b->conv.n ? fb_pct_ms(b->conv.v, b->conv.n, 99) : 0;
    print_lat("end to end, OverridePolicy created -> not Current:", &b->e2e_break);
    print_lat("end to end, OverridePolicy deleted -> Current:", &b->e2e_mend);
    printf("  server CPU %.3f cores (idle baseline %.3f), member host %.3f cores; load average %s\n", r->churn_cores,
           r->idle_cores, r->member_cores, load_now());
    printf("  server wrote %.1f MiB to disk (%lld bytes per change); store writes %.0f (%.2f per change); "
           "db size %.1f -> %.1f MiB\n",
           (z.wbytes - a.wbytes) / 1048576.0, r->bytes_per_change, s1.commit_writes - s0.commit_writes,
           r->writes_per_change, s0.db_bytes / 1048576.0, s1.db_bytes / 1048576.0);
    for (int st = 0; st < 2; st++) {
        double n = s1.lag_count[st] - s0.lag_count[st];
        printf("  server's status lag, stage %s: %.0f observed, mean %.0f ms\n", st ? "binding" : "work", n,
               n > 0 ? (s1.lag_sum[st] - s0.lag_sum[st]) / n * 1000 : 0.0);
    }
    printf("  controller work over the window (per change):");
    for (int i = 0; i < 6; i++)
        printf(" %s%s %.0f (%.2f)", i ? "; " : "", COUNTERS[i], s1.counter[i] - s0.counter[i],
               changes ? (s1.counter[i] - s0.counter[i]) / (double)changes : 0.0);
    printf("\n");
    fb_print_writes(&w0, &w1, changes ? (double)changes : 1, "change");
    print_queues(&q);
    fb_snap_free(&w0);
    fb_snap_free(&w1);
    free(broken_at);
}

static int fault(bench *b, int c, bool partition)
{
    char kc[700], url[300], body[128];
    snprintf(kc, sizeof kc, "%s/admin.kubeconfig", b->mdir);
    char *tok = fb_kubeconfig_token(kc);
    fb_server host = {0};
    snprintf(host.url, sizeof host.url, "%s", b->mh.url);
    snprintf(host.ca, sizeof host.ca, "%s/pki/ca.crt", b->mdir);
    snprintf(host.auth, sizeof host.auth, "Authorization: Bearer %s", tok ? tok : "");
    free(tok);
    struct curl_slist *h = fb_headers(&host);
    CURL *cu = fb_curl_new(&host, h);
    snprintf(url, sizeof url, "/admin/clusters/member%d/fault", c + 1);
    snprintf(body, sizeof body, "{\"down\":false,\"slowMs\":0,\"partition\":%s}", partition ? "true" : "false");
    fb_buf out = {0};
    long code = fb_request(cu, &host, "PUT", url, body, strlen(body), &out);
    free(out.p);
    curl_easy_cleanup(cu);
    curl_slist_free_all(h);
    return code == 200 ? 0 : -1;
}

static void partition(bench *b, double pct, double *unknown_s, double *heal_s)
{
    int p = (int)lround(b->n * pct / 100.0);
    p = p < 1 ? 1 : p;
    sample a = take(b);
    int64_t t0 = fb_now_ns();
    for (int c = b->n - p; c < b->n; c++)
        if (fault(b, c, true)) {
            fprintf(stderr, "SERVER PROBLEM: cannot partition member%d\n", c + 1);
            problems++;
        }
    bool u = wait_bindings(b, true, p, 180);
    *unknown_s = since_s(t0);
    int cur, unk;
    binding_counts(b, &cur, &unk);
    printf("partition: member%d..member%d (%d, %.0f%%) partitioned; every binding counts them Unknown %s %.1f s "
           "(fewest Unknown in a binding: %d)\n",
           b->n - p + 1, b->n, p, pct, u ? "after" : "NOT within", *unknown_s, unk);
    int64_t t1 = fb_now_ns();
    for (int c = b->n - p; c < b->n; c++)
        fault(b, c, false);
    bool h = wait_bindings(b, false, 0, 180);
    *heal_s = since_s(t1);
    sample z = take(b);
    binding_counts(b, &cur, &unk);
    printf("  healed: every binding Current on all %d %s %.1f s (fewest Current: %d); server %.3f cores over "
           "partition and heal\n",
           b->n, h ? "after" : "NOT within", *heal_s, cur, cores(a, z));
    problems += !u + !h;
}

/* The largest binding as listed now. */
static size_t largest_listed(bench *b)
{
    if (cp(b, "GET", "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings", NULL) != 200)
        return 0;
    json_t *l = json_loadb(b->out.p, b->out.n, 0, NULL);
    size_t i, best = 0;
    json_t *it;
    json_array_foreach(json_object_get(l, "items"), i, it)
    {
        char *d = json_dumps(it, JSON_COMPACT);
        size_t n = d ? strlen(d) : 0;
        best = n > best ? n : best;
        free(d);
    }
    json_decref(l);
    return best;
}

static void usage(void)
{
    fprintf(stderr, "usage: status_scale [--clusters 100] [--objects 20] [--churn 1] [--churn-s 30] [--hold 3] "
                    "[--deadline 1] [--partition 10] [--idle-s 10] [--flotilla PATH] [--keep]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int n = 100, m = 20, churn_s = 30, hold_s = 3, deadline_s = 1, idle_s = 10;
    double pct = 1, part = 10;
    const char *flotilla_arg = NULL;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep"))
            keep = true;
        else if (!v)
            usage();
        else if (!strcmp(a, "--clusters"))
            n = atoi(argv[++i]);
        else if (!strcmp(a, "--objects"))
            m = atoi(argv[++i]);
        else if (!strcmp(a, "--churn"))
            pct = atof(argv[++i]);
        else if (!strcmp(a, "--churn-s"))
            churn_s = atoi(argv[++i]);
        else if (!strcmp(a, "--hold"))
            hold_s = atoi(argv[++i]);
        else if (!strcmp(a, "--deadline"))
            deadline_s = atoi(argv[++i]);
        else if (!strcmp(a, "--partition"))
            part = atof(argv[++i]);
        else if (!strcmp(a, "--idle-s"))
            idle_s = atoi(argv[++i]);
        else if (!strcmp(a, "--flotilla"))
            flotilla_arg = argv[++i];
        else
            usage();
    }
    if (n < 10 || m < 1 || churn_s < 1 || hold_s < 1 || deadline_s < 1 || idle_s < 1 || part < 0 || pct <= 0)
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines as they come, also into a file */
    fb_raise_nofile();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *root = fb_mkdtemp(NULL, "fl-bench-status");
    printf("status_scale: %d Push clusters x %d Deployments; churn %.1f%%/s for %d s (hold %d s, progress deadline "
           "%d s); partition %.0f%%; load average %s\n",
           n, m, pct, churn_s, hold_s, deadline_s, part, load_now());
    bench b = {.n = n, .m = m};
    pthread_mutex_init(&b.mu, NULL);
    churn_result r = {0};
    double unknown_s = 0, heal_s = 0;
    int64_t t0 = fb_now_ns();
    if (start(&b, flotilla, root) == 0 && setup(&b, deadline_s) == 0) {
        size_t big0 = largest_listed(&b);
        idle(&b, idle_s, &r);
        churn(&b, pct, churn_s, hold_s, &r);
        if (part > 0)
            partition(&b, part, &unknown_s, &heal_s);
        size_t big1 = largest_listed(&b);
        long rss = fb_proc_kib(b.s.pid, "VmRSS"), hwm = fb_proc_kib(b.s.pid, "VmHWM");
        printf("\nTargets (issue 45) at %d clusters x %d objects; run took %.0f s, load average %s\n", n, m,
               since_s(t0), load_now());
        printf("  convergence P99 under churn <= 1 s: %.0f ms -> %s\n", r.p99, r.p99 <= 1000 ? "met" : "NOT met");
        double per100 = r.changes_per_s > 0 ? (r.churn_cores - r.idle_cores) / r.changes_per_s * 100 : 0;
        printf("  control plane CPU <= 0.5 core for 100 changes/s: %.3f cores at %.1f changes/s (idle %.3f) -> "
               "%.3f cores above idle per 100 changes/s -> %s\n",
               r.churn_cores, r.changes_per_s, r.idle_cores, per100, per100 <= 0.5 ? "met" : "NOT met");
        printf("  server RSS (<= 1 GiB at 10,000 x 20): %.1f MiB now, peak %.1f MiB\n", rss / 1024.0, hwm / 1024.0);
        printf("  largest binding <= 64 KiB: %.1f KiB after setup, %.1f KiB at the end, %.1f KiB the largest event "
               "-> %s\n",
               big0 / 1024.0, big1 / 1024.0, b.largest_binding / 1024.0,
               (big0 > big1 ? big0 : big1) <= 65536 && b.largest_binding <= 65536 ? "met" : "NOT met");
        printf("  bytes written to disk per change: %lld (store writes per change %.2f)\n", r.bytes_per_change,
               r.writes_per_change);
        if (part > 0)
            printf("  partition of %.0f%%: Unknown after %.1f s, Current again %.1f s after the heal\n", part,
                   unknown_s, heal_s);
        printf("  client watch reconnects: %ld\n", atomic_load(&b.ws.ends));
    } else {
        problems++;
    }
    stop(&b);
    fb_scratch_done(root, keep);
    free(root);
    return problems ? 1 : 0;
}
