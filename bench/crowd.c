/* crowd.c - the crowd case of karmada#3108 (issue 45): many Argo Workflows created at once
 * under one PropagationPolicy, delivered to every cluster and their status aggregated back,
 * against the same number of Deployments in the same run on the same server.
 *
 *   crowd [--objects 1000] [--clusters 10] [--conns 8] [--order DW] [--deadline-s 120]
 *         [--no-controller] [--status-subresource] [--flotilla PATH] [--keep]
 *
 * One `flotilla server` and one `flotilla member --clusters K`. The Workflow CRD
 * (argoproj.io/v1alpha1, no status subresource, as Argo ships it) is created on the control
 * plane and in every member before they join, so the Clusters' API enablements name it. One
 * PropagationPolicy selects Deployments and Workflows labelled bench=crowd, Duplicated to
 * member1..K. Then a round per kind, in --order (D = Deployments, W = Workflows), each
 * waiting for the store to go quiet before the next: N objects POSTed at once on --conns
 * connections, and from the first POST the time until
 *   - all N creates were acknowledged;
 *   - all N*K member objects exist (a watch per member and kind, ADDED);
 *   - all N*K Works say Applied=True (a watch on the control plane's Works);
 *   - every binding's aggregatedStatus holds K items, all applied;
 *   - every template's status speaks for all K clusters.
 * The simulated members run no Workflow controller (src/member/ simulates Deployments,
 * ReplicaSets, StatefulSets, DaemonSets, Jobs and Pods), so the benchmark plays it: when a
 * Workflow appears in a member it writes what the workflow controller would first write
 * through the object (no status subresource): status phase Running, startedAt, progress
 * "0/1", and the phase label; --no-controller leaves them without status (then no template
 * status can be complete and the last measurement is "never"). A template's status is
 * complete when the bundled AggregateStatus says so for all K: progress "0/K" (every member's
 * "0/1" summed; one member without progress leaves it out) for a Workflow, readyReplicas K
 * (each member's one replica ready, from the simulator) for a Deployment.
 * Printed per round: those times side by side with the ratio Workflows / Deployments, the
 * control-plane writes per object (from /metrics), each work queue's adds, mean wait, mean
 * work time and deepest depth seen (sampled every 250 ms), the CPU of the server, the member
 * host and this client, and the load average. Target (issue 45): Workflows delivered and
 * aggregated on the templates <= 5 s for 1,000 to 10 clusters. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_common.h"

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define PATCHERS 4 /* client threads playing the members' workflow controllers */
#define MAX_QUEUES 48

static int problems;
static int conns = 8; /* --conns: connections the creates go over */
static bool status_subresource; /* --status-subresource: the Workflow CRD gets one */

enum { K_DEPLOY, K_WORKFLOW, NKINDS };
static const char *const KIND[NKINDS] = {"Deployment", "Workflow"};
static const char *const PLURAL[NKINDS] = {"Deployments", "Workflows"};
static const char *const PREFIX[NKINDS] = {"d-", "w-"};
static const char *const API[NKINDS] = {"apis/apps/v1", "apis/argoproj.io/v1alpha1"};
static const char *const RESOURCE[NKINDS] = {"deployments", "workflows"};

/* ---- small helpers ---------------------------------------------------------------- */

static const char *load_now(void)
{
    static char buf[128];
    char *l = fb_slurp("/proc/loadavg");
    snprintf(buf, sizeof buf, "%s", l ? l : "?");
    buf[strcspn(buf, "\n")] = 0;
    free(l);
    return buf;
}

/* ---- what a round waits for ------------------------------------------------------------
 * Stamps (monotonic ns, 0 = not yet) per object and cluster, written by the watcher thread
 * under the fleet's lock; counts of stamps so the main thread sees progress cheaply. */

typedef struct round {
    int kind, n, k;
    int64_t *member;   /* [i*k+c]: the member object's first event */
    int64_t *applied;  /* [i*k+c]: its Work's first event with Applied=True */
    int64_t *patched;  /* [i*k+c]: the client's status write acknowledged (Workflows) */
    int64_t *agg;      /* [i]: the binding's aggregatedStatus first held k applied items */
    int64_t *status;   /* [i]: the template's status first spoke for all k */
    int64_t *ack;      /* [i]: the create acknowledged */
    long n_member, n_applied, n_patched, n_agg, n_status;
    long patch_errors, added_again, deleted;
} round;

static round *round_new(int kind, int n, int k)
{
    round *r = calloc(1, sizeof *r);
    size_t nk = (size_t)n * (size_t)k;
    r->kind = kind;
    r->n = n;
    r->k = k;
    r->member = calloc(nk, sizeof *r->member);
    r->applied = calloc(nk, sizeof *r->applied);
    r->patched = calloc(nk, sizeof *r->patched);
    r->agg = calloc((size_t)n, sizeof *r->agg);
    r->status = calloc((size_t)n, sizeof *r->status);
    r->ack = calloc((size_t)n, sizeof *r->ack);
    if (!r || !r->member || !r->applied || !r->patched || !r->agg || !r->status || !r->ack)
        abort();
    return r;
}

static void round_free(round *r)
{
    if (!r)
        return;
    free(r->member);
    free(r->applied);
    free(r->patched);
    free(r->agg);
    free(r->status);
    free(r->ack);
    free(r);
}

/* The object index of NAME[0..nl) if it is PREFIX<i> of the round's kind, else -1. */
static int round_item(const round *r, const char *name, size_t nl)
{
    const char *p = PREFIX[r->kind];
    size_t pl = strlen(p);
    if (nl <= pl || strncmp(name, p, pl))
        return -1;
    char *end;
    long i = strtol(name + pl, &end, 10);
    return end == name + nl && i >= 0 && i < r->n ? (int)i : -1;
}

/* ---- the watches ---------------------------------------------------------------------- */

enum { W_WORKS, W_BINDINGS, W_TEMPLATES, W_MEMBER };

/* A watch's labels (fb_watch.what, .kind, .cluster): W_*, the kind of templates or member
 * objects, the 0-based member; its ctx is the fleet. */

/* A member's Workflow to give a status: (cluster, item) pairs, a ring the patchers drain. */
typedef struct patchq {
    int *c, *i;
    size_t cap, head, tail;
} patchq;

typedef struct fleet {
    char root[512], sdir[600], mdir[600];
    fb_server s;
    fb_member_host mh;
    int k;
    char **tokens;
    CURL *c;
    struct curl_slist *h;
    fb_buf out;
    atomic_bool stop; /* the patchers' */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    round *r; /* the round being measured, or NULL */
    bool controller;
    patchq q;
    fb_watchset ws;
} fleet;

/* "name" and "namespace" of the object's metadata: the first such keys after
 * "metadata":{ (annotation and label keys ending in /name have a '/' before the quote). */
static bool meta_str(const char *line, const char *key, const char **v, size_t *vl)
{
    const char *m = strstr(line, "\"metadata\":{");
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = m ? strstr(m, pat) : NULL;
    if (!p)
        return false;
    *v = p + strlen(pat);
    *vl = strcspn(*v, "\"");
    return true;
}

/* True if the line has a condition of type Applied whose status is True (a condition is a
 * flat object, so the braces around the type are its own). */
static bool applied_true(const char *line)
{
    const char *t = strstr(line, "\"type\":\"Applied\"");
    if (!t)
        return false;
    const char *open = t, *close = strchr(t, '}');
    while (open > line && *open != '{')
        open--;
    if (!close)
        return false;
    for (const char *s = open; (s = strstr(s, "\"status\":\"True\"")) && s < close; s++)
        return true;
    return false;
}

static void queue_patch(fleet *f, int c, int i)
{
    patchq *q = &f->q;
    if (q->tail - q->head == q->cap)
        return; /* sized for every (cluster, item): cannot happen */
    q->c[q->tail % q->cap] = c;
    q->i[q->tail % q->cap] = i;
    q->tail++;
    pthread_cond_signal(&f->cv);
}

/* A binding event: stamp when aggregatedStatus first holds k items, all applied. */
static void on_binding(round *r, const char *line, int64_t now)
{
    const char *name;
    size_t nl;
    if (!meta_str(line, "name", &name, &nl))
        return;
    const char *dash = memrchr(name, '-', nl);
    int i = dash ? round_item(r, name, (size_t)(dash - name)) : -1;
    if (i < 0 || r->agg[i])
        return;
    json_t *ev = json_loads(line, 0, NULL);
    json_t *items = json_object_get(json_object_get(json_object_get(ev, "object"), "status"), "aggregatedStatus");
    size_t j, applied = 0;
    json_t *it;
    json_array_foreach(items, j, it) applied += json_is_true(json_object_get(it, "applied"));
    if ((int)applied == r->k && (int)json_array_size(items) == r->k) {
        r->agg[i] = now;
        r->n_agg++;
    }
    json_decref(ev);
}

/* A template event: stamp when its status first speaks for all k clusters. */
static void on_template(round *r, const char *line, int64_t now)
{
    const char *name;
    size_t nl;
    if (!meta_str(line, "name", &name, &nl))
        return;
    int i = round_item(r, name, nl);
    if (i < 0 || r->status[i] || !strstr(line, "\"status\":{"))
        return;
    json_t *ev = json_loads(line, 0, NULL);
    json_t *st = json_object_get(json_object_get(ev, "object"), "status");
    bool done;
    if (r->kind == K_DEPLOY) {
        done = json_integer_value(json_object_get(st, "readyReplicas")) == r->k;
    } else {
        char want[32];
        snprintf(want, sizeof want, "0/%d", r->k);
        const char *p = json_string_value(json_object_get(st, "progress"));
        done = p && !strcmp(p, want);
    }
    if (done) {
        r->status[i] = now;
        r->n_status++;
    }
    json_decref(ev);
}

static void on_event(fb_watch *w, int type, const char *line, int64_t now)
{
    fleet *f = w->ctx;
    pthread_mutex_lock(&f->mu);
    round *r = f->r;
    if (!r || type == 2 || ((w->what == W_TEMPLATES || w->what == W_MEMBER) && w->kind != r->kind)) {
        if (r && type == 2 && w->what == W_MEMBER && w->kind == r->kind)
            r->deleted++;
        pthread_mutex_unlock(&f->mu);
        return;
    }
    const char *name, *ns;
    size_t nl, nsl;
    if (w->what == W_MEMBER && meta_str(line, "name", &name, &nl)) {
        int i = round_item(r, name, nl);
        int64_t *s = i >= 0 ? &r->member[(size_t)i * r->k + w->cluster] : NULL;
        if (s && !*s) {
            *s = now;
            r->n_member++;
            if (r->kind == K_WORKFLOW && f->controller)
                queue_patch(f, w->cluster, i);
        } else if (s && type == 0) {
            r->added_again++;
        }
    } else if (w->what == W_WORKS && applied_true(line) && meta_str(line, "name", &name, &nl) &&
               meta_str(line, "namespace", &ns, &nsl) && nsl > 17 && !strncmp(ns, "karmada-es-member", 17)) {
        /* a Work is <template>-<hash> in karmada-es-member<c> */
        const char *dash = memrchr(name, '-', nl);
        int i = dash ? round_item(r, name, (size_t)(dash - name)) : -1;
        int c = atoi(ns + 17) - 1;
        if (i >= 0 && c >= 0 && c < r->k && !r->applied[(size_t)i * r->k + c]) {
            r->applied[(size_t)i * r->k + c] = now;
            r->n_applied++;
        }
    } else if (w->what == W_BINDINGS) {
        on_binding(r, line, now);
    } else if (w->what == W_TEMPLATES) {
        on_template(r, line, now);
    }
    pthread_mutex_unlock(&f->mu);
}

/* ---- the members' workflow controller, played by the client ----------------------------- */

typedef struct patcher {
    fleet *f;
    struct curl_slist **hdr; /* per member: its token, merge-patch content type */
} patcher;

static void *patcher_main(void *arg)
{
    patcher *p = arg;
    fleet *f = p->f;
    fb_server mem = {0};
    snprintf(mem.url, sizeof mem.url, "%s", f->mh.url);
    snprintf(mem.ca, sizeof mem.ca, "%s/pki/ca.crt", f->mdir);
    CURL *c = fb_curl_new(&mem, p->hdr[0]);
    fb_buf out = {0};
    /* with a status subresource the status goes to /status, and the label is left out */
    const char *body = status_subresource ? "{\"status\":{\"phase\":\"Running\",\"startedAt\":\"2026-12-07T00:00:00Z\","
                                            "\"progress\":\"0/1\"}}"
                                          : "{\"metadata\":{\"labels\":{\"workflows.argoproj.io/phase\":\"Running\"}},"
                                            "\"status\":{\"phase\":\"Running\",\"startedAt\":\"2026-12-07T00:00:00Z\","
                                            "\"progress\":\"0/1\"}}";
    for (;;) {
        pthread_mutex_lock(&f->mu);
        while (f->q.head == f->q.tail && !atomic_load(&f->stop))
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->q.head == f->q.tail) {
            pthread_mutex_unlock(&f->mu);
            break;
        }
        int cl = f->q.c[f->q.head % f->q.cap], i = f->q.i[f->q.head % f->q.cap];
        f->q.head++;
        round *r = f->r;
        pthread_mutex_unlock(&f->mu);
        char path[256];
        snprintf(path, sizeof path, "/clusters/member%d/apis/argoproj.io/v1alpha1/namespaces/default/workflows/w-%d%s",
                 cl + 1, i, status_subresource ? "/status" : "");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->hdr[cl]);
        long code = fb_request(c, &mem, "PATCH", path, body, strlen(body), &out);
        pthread_mutex_lock(&f->mu);
        if (r && r == f->r && code == 200) {
            r->patched[(size_t)i * r->k + cl] = fb_now_ns();
            r->n_patched++;
        } else if (r && r == f->r && r->patch_errors++ < 3) {
            fprintf(stderr, "SERVER PROBLEM: member%d: PATCH workflow w-%d: HTTP %ld %.200s\n", cl + 1, i, code,
                    out.p ? out.p : "");
        }
        pthread_mutex_unlock(&f->mu);
    }
    free(out.p);
    curl_easy_cleanup(c);
    return NULL;
}

/* ---- the control plane ---------------------------------------------------------------- */

static long cp(fleet *f, const char *method, const char *path, const char *body)
{
    return fb_request(f->c, &f->s, method, path, body, body ? strlen(body) : 0, &f->out);
}

/* The Workflow CRD as Argo ships it in shape: namespaced, v1alpha1, no status subresource
 * (--status-subresource adds one, to see what a status write that leaves the generation alone
 * changes). */
static const char WORKFLOW_CRD[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":"
    "\"workflows.argoproj.io\"},\"spec\":{\"group\":\"argoproj.io\",\"scope\":\"Namespaced\",\"names\":{\"plural\":"
    "\"workflows\",\"singular\":\"workflow\",\"kind\":\"Workflow\",\"listKind\":\"WorkflowList\",\"shortNames\":"
    "[\"wf\"]},\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
    "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}%s}]}}";

/* Create the CRD at base (the control plane, or a member's /clusters/memberN prefix) on
 * handle c and wait (30 s) until workflows list there. */
static int install_crd(CURL *c, const fb_server *s, const char *prefix, fb_buf *out)
{
    char path[256];
    snprintf(path, sizeof path, "%s/apis/apiextensions.k8s.io/v1/customresourcedefinitions", prefix);
    char crd[sizeof WORKFLOW_CRD + 64];
    snprintf(crd, sizeof crd, WORKFLOW_CRD, status_subresource ? ",\"subresources\":{\"status\":{}}" : "");
    long code = fb_request(c, s, "POST", path, crd, strlen(crd), out);
    if (code != 201 && code != 409) {
        fprintf(stderr, "SERVER PROBLEM: create the Workflow CRD at '%s': HTTP %ld %.300s\n", prefix, code, out->p);
        return -1;
    }
    snprintf(path, sizeof path, "%s/apis/argoproj.io/v1alpha1/namespaces/default/workflows", prefix);
    int64_t deadline = fb_now_ns() + 30 * NS_PER_S;
    while ((code = fb_request(c, s, "GET", path, NULL, 0, out)) != 200 && fb_now_ns() < deadline)
        usleep(50000);
    if (code != 200) {
        fprintf(stderr, "SERVER PROBLEM: workflows not served at '%s' 30 s after the CRD: HTTP %ld\n", prefix, code);
        return -1;
    }
    return 0;
}

static void add_watch(fleet *f, const fb_server *s, int what, int kind, int cluster, const char *path)
{
    fb_watch *w = fb_watchset_add(&f->ws, s, path, on_event);
    w->ctx = f;
    w->what = what;
    w->kind = kind;
    w->cluster = cluster;
}

/* Server, member host with k clusters, the CRD everywhere, the members joined and Ready,
 * the watches open, the policy. */
static int fleet_start(fleet *f, const char *flotilla, const char *root, int k, int n)
{
    memset(f, 0, sizeof *f);
    f->k = k;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    snprintf(f->root, sizeof f->root, "%s", root);
    snprintf(f->sdir, sizeof f->sdir, "%s/server", root);
    snprintf(f->mdir, sizeof f->mdir, "%s/members", root);
    if (fb_server_start(flotilla, f->sdir, NULL, &f->s))
        return -1;
    if (fb_member_start(flotilla, f->mdir, k, &f->mh))
        return -1;
    f->h = fb_headers(&f->s);
    f->c = fb_curl_new(&f->s, f->h);
    f->q.cap = (size_t)n * (size_t)k;
    f->q.c = calloc(f->q.cap, sizeof *f->q.c);
    f->q.i = calloc(f->q.cap, sizeof *f->q.i);
    f->tokens = calloc((size_t)k, sizeof *f->tokens);
    fb_watchset_init(&f->ws, 3 + NKINDS * (k + 1));
    if (install_crd(f->c, &f->s, "", &f->out))
        return -1;
    fb_server mem = {0};
    snprintf(mem.url, sizeof mem.url, "%s", f->mh.url);
    snprintf(mem.ca, sizeof mem.ca, "%s/pki/ca.crt", f->mdir);
    for (int c = 0; c < k; c++) {
        char kc[700], prefix[64];
        snprintf(kc, sizeof kc, "%s/member%d.kubeconfig", f->mdir, c + 1);
        f->tokens[c] = fb_kubeconfig_token(kc);
        snprintf(mem.auth, sizeof mem.auth, "Authorization: Bearer %s", f->tokens[c] ? f->tokens[c] : "");
        struct curl_slist *h = fb_headers(&mem);
        CURL *mc = fb_curl_new(&mem, h);
        snprintf(prefix, sizeof prefix, "/clusters/member%d", c + 1);
        int rc = install_crd(mc, &mem, prefix, &f->out);
        for (int kind = 0; kind < NKINDS && rc == 0; kind++) {
            char path[256];
            snprintf(path, sizeof path, "%s/%s/namespaces/default/%s?watch=1", prefix, API[kind], RESOURCE[kind]);
            add_watch(f, &mem, W_MEMBER, kind, c, path);
        }
        curl_easy_cleanup(mc);
        curl_slist_free_all(h);
        if (rc)
            return -1;
    }
    add_watch(f, &f->s, W_WORKS, 0, -1, "/apis/work.karmada.io/v1alpha1/works?watch=1");
    add_watch(f, &f->s, W_BINDINGS, 0, -1, "/apis/work.karmada.io/v1alpha2/resourcebindings?watch=1");
    for (int kind = 0; kind < NKINDS; kind++) {
        char path[256];
        snprintf(path, sizeof path, "/%s/namespaces/default/%s?watch=1", API[kind], RESOURCE[kind]);
        add_watch(f, &f->s, W_TEMPLATES, kind, -1, path);
    }
    int64_t deadline = fb_now_ns() + 60 * NS_PER_S;
    if (fb_watchset_start(&f->ws, 60)) {
        fprintf(stderr, "SERVER PROBLEM: only %d of %d watches opened in 60 s\n", atomic_load(&f->ws.open), f->ws.n);
        return -1;
    }
    int64_t t0 = fb_now_ns();
    pid_t *agents = NULL; /* push mode: none */
    if (fb_join(NULL, f->c, &f->s, &f->mh, f->mdir, k, false, NULL, &agents) ||
        fb_wait_ready(f->c, &f->s, k, 120) < k) {
        fprintf(stderr, "SERVER PROBLEM: %d clusters did not all join and turn Ready in 120 s\n", k);
        return -1;
    }
    for (int c = 1; c <= k; c++) {
        char path[128];
        snprintf(path, sizeof path, "/api/v1/namespaces/karmada-es-member%d", c);
        while (cp(f, "GET", path, NULL) != 200 && fb_now_ns() < deadline + 60 * NS_PER_S)
            usleep(20000);
    }
    printf("%d clusters joined and Ready in %.2f s (the Workflow CRD created in each before)\n", k, fb_since_s(t0));
    fb_buf b = {0};
    fb_bprintf(&b,
            "{\"apiVersion\":\"policy.karmada.io/v1alpha1\",\"kind\":\"PropagationPolicy\",\"metadata\":{\"name\":"
            "\"crowd\",\"namespace\":\"default\"},\"spec\":{\"resourceSelectors\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
            "\"Deployment\",\"labelSelector\":{\"matchLabels\":{\"bench\":\"crowd\"}}},{\"apiVersion\":"
            "\"argoproj.io/v1alpha1\",\"kind\":\"Workflow\",\"labelSelector\":{\"matchLabels\":{\"bench\":\"crowd\"}}}],"
            "\"placement\":{\"clusterAffinity\":{\"clusterNames\":[");
    for (int c = 1; c <= k; c++)
        fb_bprintf(&b, "%s\"member%d\"", c > 1 ? "," : "", c);
    fb_bprintf(&b, "]},\"replicaScheduling\":{\"replicaSchedulingType\":\"Duplicated\"}}}}");
    long code = cp(f, "POST", "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", b.p);
    free(b.p);
    if (code != 201) {
        fprintf(stderr, "SERVER PROBLEM: create the PropagationPolicy: HTTP %ld %.300s\n", code, f->out.p);
        return -1;
    }
    return 0;
}

static void fleet_stop(fleet *f, bool keep)
{
    atomic_store(&f->stop, true);
    pthread_mutex_lock(&f->mu);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    fb_watchset_stop(&f->ws);
    long ends = atomic_load(&f->ws.ends), errors = atomic_load(&f->ws.errors);
    if (ends || errors)
        printf("note: watches ended %ld times, %ld ERROR events (each resumed from its last resourceVersion)\n", ends,
               errors);
    fb_watchset_close(&f->ws);
    if (f->mh.pid > 0)
        fb_member_stop(&f->mh);
    if (f->s.pid > 0 && fb_server_stop(&f->s) != 0)
        problems++;
    for (int c = 0; f->tokens && c < f->k; c++)
        free(f->tokens[c]);
    free(f->tokens);
    free(f->q.c);
    free(f->q.i);
    free(f->out.p);
    if (f->c)
        curl_easy_cleanup(f->c);
    curl_slist_free_all(f->h);
    fb_scratch_done(f->root, keep);
}

/* ---- /metrics: store revision, work queues ------------------------------------------- */

typedef struct queues {
    int n;
    char name[MAX_QUEUES][48];
    double adds[MAX_QUEUES], wait_sum[MAX_QUEUES], wait_n[MAX_QUEUES], work_sum[MAX_QUEUES], work_n[MAX_QUEUES];
    double depth_max[MAX_QUEUES];
} queues;

static int queue_slot(queues *q, const char *name, size_t nl)
{
    for (int i = 0; i < q->n; i++)
        if (strlen(q->name[i]) == nl && !strncmp(q->name[i], name, nl))
            return i;
    if (q->n == MAX_QUEUES || nl >= sizeof q->name[0])
        return -1;
    memcpy(q->name[q->n], name, nl);
    q->name[q->n][nl] = 0;
    return q->n++;
}

/* One scrape: the store revision (returned) and, into q, each queue's counters (replaced)
 * and deepest depth (kept if deeper). */
static long long scrape(fleet *f, queues *q)
{
    fb_buf b = {0};
    long long rev = -1;
    if (fb_request(f->c, &f->s, "GET", "/metrics", NULL, 0, &b) != 200) {
        free(b.p);
        return -1;
    }
    for (char *line = b.p, *eol; line && *line; line = eol ? eol + 1 : NULL) {
        eol = strchr(line, '\n');
        if (eol)
            *eol = 0; /* one line at a time: the searches below stay in it */
        if (!strncmp(line, "flotilla_store_revision ", 24)) {
            rev = strtoll(line + 24, NULL, 10);
            continue;
        }
        const char *nm = strstr(line, "{name=\""), *sp = strrchr(line, ' ');
        if (strncmp(line, "workqueue_", 10) || !nm || !sp || nm > sp || strstr(line, "_bucket{"))
            continue;
        const char *wq = line;
        nm += 7;
        int i = queue_slot(q, nm, strcspn(nm, "\""));
        if (i < 0)
            continue;
        double v = strtod(sp + 1, NULL);
        wq += 10;
        if (!strncmp(wq, "depth{", 6) && v > q->depth_max[i])
            q->depth_max[i] = v;
        else if (!strncmp(wq, "adds_total{", 11))
            q->adds[i] = v;
        else if (!strncmp(wq, "queue_duration_seconds_sum{", 27))
            q->wait_sum[i] = v;
        else if (!strncmp(wq, "queue_duration_seconds_count{", 29))
            q->wait_n[i] = v;
        else if (!strncmp(wq, "work_duration_seconds_sum{", 26))
            q->work_sum[i] = v;
        else if (!strncmp(wq, "work_duration_seconds_count{", 28))
            q->work_n[i] = v;
    }
    free(b.p);
    return rev;
}

/* ---- creates on several connections ----------------------------------------------------- */

static void object_json(fb_buf *b, int kind, int i)
{
    if (kind == K_DEPLOY)
        fb_bprintf(b,
                "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d-%d\",\"namespace\":"
                "\"default\",\"labels\":{\"bench\":\"crowd\",\"app\":\"d-%d\"}},\"spec\":{\"replicas\":1,\"selector\":"
                "{\"matchLabels\":{\"app\":\"d-%d\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"d-%d\"}},"
                "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1.25\",\"resources\":{\"requests\":"
                "{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}]}}}}",
                i, i, i, i);
    else /* a one-step workflow, as `argo submit` of a hello-world gives */
        fb_bprintf(b,
                "{\"apiVersion\":\"argoproj.io/v1alpha1\",\"kind\":\"Workflow\",\"metadata\":{\"name\":\"w-%d\","
                "\"namespace\":\"default\",\"labels\":{\"bench\":\"crowd\"}},\"spec\":{\"entrypoint\":\"main\","
                "\"templates\":[{\"name\":\"main\",\"container\":{\"image\":\"busybox:1.36\",\"command\":[\"echo\","
                "\"hello\"],\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}}]}}",
                i);
}

/* fb_gen_fn for a round: object i of its kind. */
static void gen_object(void *ctx, int i, char *path, size_t pathsz, fb_buf *body)
{
    const round *r = ctx;
    snprintf(path, pathsz, "/%s/namespaces/default/%s", API[r->kind], RESOURCE[r->kind]);
    object_json(body, r->kind, i);
}

/* ---- a round ---------------------------------------------------------------------------- */

enum { M_CREATED, M_MEMBER, M_APPLIED, M_PATCHED, M_AGG, M_STATUS, NMILE };
static const char *const MILE[NMILE] = {
    "all created (acknowledged)",
    "all member objects present (member watch)",
    "all Works Applied=True (control plane)",
    "member statuses written by the client (Workflows)",
    "every binding's aggregatedStatus: all clusters applied",
    "every template's status speaks for all clusters",
};

typedef struct result {
    double at[NMILE];   /* seconds from the first POST; < 0 = not within the deadline */
    long got[NMILE], want[NMILE];
    double p50, p99;    /* per object: template status complete - its create ack, ms */
    double quiet_s, cpu_server, cpu_member, cpu_client, writes;
    char load[128];
    queues q0, q1;
    fb_reqsnap before, after;
} result;

static double newest(const int64_t *v, size_t n, int64_t t0, long have)
{
    if ((size_t)have < n)
        return -1;
    int64_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return (double)(m - t0) / 1e9;
}

static double writes_total(const fb_reqsnap *a, const fb_reqsnap *b)
{
    double t = 0;
    for (int i = 0; i < b->n; i++) {
        double v = b->e[i].v;
        for (int j = 0; j < a->n; j++)
            if (!strcmp(a->e[j].key, b->e[i].key))
                v -= a->e[j].v;
        t += v > 0 ? v : 0;
    }
    return t;
}

static void run_round(fleet *f, int kind, int n, int deadline_s, result *res)
{
    int k = f->k;
    round *r = round_new(kind, n, k);
    memset(res, 0, sizeof *res);
    printf("\n## %d %s at once (%d connections) to %d clusters\n", n, PLURAL[kind], conns, k);
    pthread_mutex_lock(&f->mu);
    f->r = r;
    pthread_mutex_unlock(&f->mu);
    scrape(f, &res->q0);
    memset(res->q0.depth_max, 0, sizeof res->q0.depth_max);
    res->q1 = res->q0;
    res->before = fb_snap_requests(&f->s);
    double cpu0 = fb_proc_cpu_s(f->s.pid), mcpu0 = fb_proc_cpu_s(f->mh.pid), ccpu0 = fb_proc_cpu_s(getpid());
    int64_t t0 = fb_now_ns();
    long errors;
    fb_create_many(&f->s, conns < 64 ? conns : 64, n, gen_object, r, r->ack, &errors, NULL);
    if (errors) {
        fprintf(stderr, "SERVER PROBLEM: %ld of %d creates failed\n", errors, n);
        problems++;
    }
    /* wait for everything, sampling the queues every 250 ms */
    int64_t deadline = t0 + (int64_t)deadline_s * NS_PER_S, next_scrape = 0;
    bool wf = kind == K_WORKFLOW && f->controller;
    for (;;) {
        pthread_mutex_lock(&f->mu);
        bool done = r->n_member == (long)n * k && r->n_applied == (long)n * k && r->n_agg == n &&
                    r->n_status == n && (!wf || r->n_patched == (long)n * k);
        pthread_mutex_unlock(&f->mu);
        if (done || fb_now_ns() >= deadline || !fb_server_alive(&f->s))
            break;
        if (fb_now_ns() >= next_scrape) {
            scrape(f, &res->q1);
            next_scrape = fb_now_ns() + 250 * NS_PER_MS;
        }
        usleep(5000);
    }
    double cpu_all = fb_proc_cpu_s(f->s.pid) - cpu0;
    double mcpu_all = fb_proc_cpu_s(f->mh.pid) - mcpu0, ccpu_all = fb_proc_cpu_s(getpid()) - ccpu0;
    snprintf(res->load, sizeof res->load, "%s", load_now());
    /* then until the store stands still for 1 s (bounded), what trails the last measurement */
    int64_t q0 = fb_now_ns(), changed = q0;
    long long rev = scrape(f, &res->q1);
    while (fb_now_ns() < q0 + 30 * NS_PER_S && fb_now_ns() - changed < NS_PER_S) {
        usleep(250000);
        long long r2 = scrape(f, &res->q1);
        if (r2 != rev) {
            rev = r2;
            changed = fb_now_ns();
        }
    }
    res->quiet_s = (double)(changed - t0) / 1e9;
    res->after = fb_snap_requests(&f->s);
    res->writes = writes_total(&res->before, &res->after);
    res->cpu_server = cpu_all;
    res->cpu_member = mcpu_all;
    res->cpu_client = ccpu_all;

    pthread_mutex_lock(&f->mu);
    f->r = NULL;
    size_t nk = (size_t)n * (size_t)k;
    res->want[M_CREATED] = n;
    res->got[M_CREATED] = n - errors;
    res->at[M_CREATED] = newest(r->ack, (size_t)n, t0, n);
    res->want[M_MEMBER] = res->want[M_APPLIED] = (long)nk;
    res->got[M_MEMBER] = r->n_member;
    res->at[M_MEMBER] = newest(r->member, nk, t0, r->n_member);
    res->got[M_APPLIED] = r->n_applied;
    res->at[M_APPLIED] = newest(r->applied, nk, t0, r->n_applied);
    res->want[M_PATCHED] = wf ? (long)nk : 0;
    res->got[M_PATCHED] = r->n_patched;
    res->at[M_PATCHED] = wf ? newest(r->patched, nk, t0, r->n_patched) : 0;
    res->want[M_AGG] = res->want[M_STATUS] = n;
    res->got[M_AGG] = r->n_agg;
    res->at[M_AGG] = newest(r->agg, (size_t)n, t0, r->n_agg);
    res->got[M_STATUS] = r->n_status;
    res->at[M_STATUS] = newest(r->status, (size_t)n, t0, r->n_status);
    int64_t *lat = calloc((size_t)n, sizeof *lat);
    int nl = 0;
    for (int i = 0; i < n; i++)
        if (r->status[i])
            lat[nl++] = r->status[i] - r->ack[i];
    res->p50 = fb_pct_ms(lat, (size_t)nl, 50);
    res->p99 = fb_pct_sorted_ms(lat, (size_t)nl, 99);
    free(lat);
    long again = r->added_again, deleted = r->deleted;
    pthread_mutex_unlock(&f->mu);

    for (int m = 0; m < NMILE; m++) {
        if (!res->want[m])
            continue;
        if (res->at[m] >= 0)
            printf("  %-56s %6.2f s\n", MILE[m], res->at[m]);
        else
            printf("  %-56s NOT within %d s: %ld of %ld\n", MILE[m], deadline_s, res->got[m], res->want[m]);
    }
    printf("  per %s, template status complete - create ack: P50 %.0f ms, P99 %.0f ms; store quiet at %.2f s\n",
           KIND[kind], res->p50, res->p99, res->quiet_s);
    printf("  CPU until the last measurement: server %.1f s, member host %.1f s, this client %.1f s; load average "
           "then %s\n",
           cpu_all, mcpu_all, ccpu_all, res->load);
    fb_print_writes(&res->before, &res->after, n, KIND[kind]);
    printf("  work queues (adds per %s; mean wait and work per key; deepest depth seen, 250 ms samples):\n", KIND[kind]);
    for (int i = 0; i < res->q1.n; i++) {
        int j = queue_slot(&res->q0, res->q1.name[i], strlen(res->q1.name[i]));
        double adds = res->q1.adds[i] - (j >= 0 ? res->q0.adds[j] : 0);
        double wn = res->q1.wait_n[i] - (j >= 0 ? res->q0.wait_n[j] : 0);
        double ws = res->q1.wait_sum[i] - (j >= 0 ? res->q0.wait_sum[j] : 0);
        double kn = res->q1.work_n[i] - (j >= 0 ? res->q0.work_n[j] : 0);
        double ks = res->q1.work_sum[i] - (j >= 0 ? res->q0.work_sum[j] : 0);
        if (adds <= 0 && kn <= 0)
            continue;
        printf("    %-24s adds %6.0f (%5.2f)  wait %7.1f ms  work %6.2f ms (busy %5.2f s)  depth max %5.0f\n",
               res->q1.name[i], adds, adds / n, wn > 0 ? ws / wn * 1e3 : 0, kn > 0 ? ks / kn * 1e3 : 0, ks,
               res->q1.depth_max[i]);
    }
    if (again || deleted || res->got[M_MEMBER] < res->want[M_MEMBER] || r->patch_errors) {
        fprintf(stderr, "SERVER PROBLEM: %s round: %ld/%ld member objects, %ld re-created, %ld deleted, %ld status "
                        "writes failed\n",
                KIND[kind], res->got[M_MEMBER], res->want[M_MEMBER], again, deleted, r->patch_errors);
        problems++;
    }
    fflush(stdout);
    round_free(r);
}

/* ---- main ----------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: crowd [--objects 1000] [--clusters 10] [--conns 8] [--order DW] [--deadline-s 120]\n"
                    "             [--no-controller] [--status-subresource] [--flotilla PATH] [--keep]\n");
}

int main(int argc, char **argv)
{
    int n = 1000, k = 10, deadline_s = 120;
    const char *order = "DW", *flotilla_arg = NULL;
    bool keep = false, controller = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep"))
            keep = true;
        else if (!strcmp(a, "--no-controller"))
            controller = false;
        else if (!strcmp(a, "--status-subresource"))
            status_subresource = true;
        else if (!v)
            return usage(), 2;
        else if (!strcmp(a, "--objects"))
            n = atoi(argv[++i]);
        else if (!strcmp(a, "--clusters"))
            k = atoi(argv[++i]);
        else if (!strcmp(a, "--conns"))
            conns = atoi(argv[++i]);
        else if (!strcmp(a, "--order"))
            order = argv[++i];
        else if (!strcmp(a, "--deadline-s"))
            deadline_s = atoi(argv[++i]);
        else if (!strcmp(a, "--flotilla"))
            flotilla_arg = argv[++i];
        else
            return usage(), 2;
    }
    if (n < 1 || k < 1 || conns < 1 || conns > 64 || deadline_s < 1 || !*order ||
        strspn(order, "DW") != strlen(order) || strlen(order) > 4)
        return usage(), 2;
    fb_raise_nofile();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const char *flotilla = fb_flotilla_path(flotilla_arg);
    char *root = fb_mkdtemp(NULL, "fl-bench-crowd");
    printf("machine load at the start: %s\nflotilla binary: %s\nWorkflow CRD: %s\n", load_now(), flotilla,
           status_subresource ? "WITH a status subresource (not as Argo ships it)" : "no status subresource (as Argo ships it)");
    int64_t run0 = fb_now_ns();
    fleet f;
    int rc = fleet_start(&f, flotilla, root, k, n);
    f.controller = controller;
    pthread_t pt[PATCHERS];
    int npt = 0;
    patcher pa = {.f = &f};
    result res[4];
    int kinds[4], nr = 0;
    if (rc == 0) {
        pa.hdr = calloc((size_t)k, sizeof *pa.hdr);
        for (int c = 0; c < k; c++) {
            char auth[600];
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", f.tokens[c] ? f.tokens[c] : "");
            pa.hdr[c] = curl_slist_append(NULL, auth);
            pa.hdr[c] = curl_slist_append(pa.hdr[c], "Content-Type: application/merge-patch+json");
            pa.hdr[c] = curl_slist_append(pa.hdr[c], "Accept: application/json");
        }
        for (int i = 0; i < PATCHERS; i++)
            npt += pthread_create(&pt[npt], NULL, patcher_main, &pa) == 0;
        bool seen[NKINDS] = {false};
        for (const char *o = order; *o; o++) {
            int kind = *o == 'D' ? K_DEPLOY : K_WORKFLOW;
            if (seen[kind]) {
                printf("(%s measured once; a second round would find the names taken)\n", PLURAL[kind]);
                continue;
            }
            seen[kind] = true;
            kinds[nr] = kind;
            run_round(&f, kind, n, deadline_s, &res[nr++]);
        }
    } else {
        problems++;
    }
    atomic_store(&f.stop, true);
    pthread_mutex_lock(&f.mu);
    pthread_cond_broadcast(&f.cv);
    pthread_mutex_unlock(&f.mu);
    for (int i = 0; i < npt; i++)
        pthread_join(pt[i], NULL);

    int di = -1, wi = -1;
    for (int i = 0; i < nr; i++)
        *(kinds[i] == K_DEPLOY ? &di : &wi) = i;
    printf("\n## Summary (run took %.0f s; order %s)\nmachine load at the end: %s\n", fb_since_s(run0), order, load_now());
    if (di >= 0 && wi >= 0) {
        result *d = &res[di], *w = &res[wi];
        printf("| from the first POST, %d objects to %d clusters | %s | %s (baseline) | ratio |\n|---|---|---|---|\n", n,
               k, PLURAL[K_WORKFLOW], PLURAL[K_DEPLOY]);
        for (int m = 0; m < NMILE; m++) {
            char a[48], b[48];
            if (w->at[m] >= 0)
                snprintf(a, sizeof a, "%.2f s", w->at[m]);
            else
                snprintf(a, sizeof a, "never (%ld/%ld)", w->got[m], w->want[m]);
            if (!d->want[m])
                snprintf(b, sizeof b, "(the simulator's)");
            else if (d->at[m] >= 0)
                snprintf(b, sizeof b, "%.2f s", d->at[m]);
            else
                snprintf(b, sizeof b, "never (%ld/%ld)", d->got[m], d->want[m]);
            if (!w->want[m])
                continue;
            if (w->at[m] >= 0 && d->want[m] && d->at[m] > 0)
                printf("| %s | %s | %s | %.2f |\n", MILE[m], a, b, w->at[m] / d->at[m]);
            else
                printf("| %s | %s | %s | |\n", MILE[m], a, b);
        }
        printf("| template status complete - create ack, P50 / P99 | %.0f / %.0f ms | %.0f / %.0f ms | %.2f / %.2f |\n",
               w->p50, w->p99, d->p50, d->p99, d->p50 > 0 ? w->p50 / d->p50 : 0, d->p99 > 0 ? w->p99 / d->p99 : 0);
        printf("| store quiet | %.2f s | %.2f s | %.2f |\n", w->quiet_s, d->quiet_s,
               d->quiet_s > 0 ? w->quiet_s / d->quiet_s : 0);
        printf("| CPU server / member host / client | %.1f / %.1f / %.1f s | %.1f / %.1f / %.1f s | %.2f (server) |\n",
               w->cpu_server, w->cpu_member, w->cpu_client, d->cpu_server, d->cpu_member, d->cpu_client,
               d->cpu_server > 0 ? w->cpu_server / d->cpu_server : 0);
        printf("| control-plane writes per object | %.1f | %.1f | %.2f |\n", w->writes / n, d->writes / n,
               d->writes > 0 ? w->writes / d->writes : 0);
        printf("| load average at the last measurement | %s | %s | |\n", w->load, d->load);
        double all = w->at[M_STATUS] >= 0 && w->at[M_APPLIED] >= 0 ? w->at[M_STATUS] : -1;
        printf("target (issue 45) Workflows delivered and status aggregated on the templates <= 5 s: %s%.2f s -> %s\n",
               all < 0 ? "not within the deadline, > " : "", all < 0 ? (double)deadline_s : all,
               all >= 0 && all <= 5 ? "met" : "NOT met");
    }
    for (int i = 0; i < nr; i++) {
        fb_snap_free(&res[i].before);
        fb_snap_free(&res[i].after);
    }
    for (int c = 0; pa.hdr && c < k; c++)
        curl_slist_free_all(pa.hdr[c]);
    free(pa.hdr);
    fleet_stop(&f, keep);
    free(root);
    curl_global_cleanup();
    return problems ? 1 : 0;
}
