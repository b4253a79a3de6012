/* execution_watches.c - the engine's member watches over time, and its resync.
 *
 * A reconcile takes the member watch of each manifest's kind when it needs it
 * (workstatus.c keeps them). Around that, this file starts them early and stops them late:
 * - ahead: while the Work cache makes its first list, the watches its Works will need are
 *   started by one thread as the Works come, so that the members list while the Works do;
 * - resumed: after a restart, the watches noted with the revision the server resumes at
 *   (fl_exec_marks, fl_exec_resume) go on from there instead of listing, and the Works
 *   that did not change since are not reconciled at all;
 * - the resync: every 30 s, the Works whose last apply did not succeed are queued again and
 *   the watches no Work needs any more are stopped, from tags the Work cache keeps per
 *   Work, without decoding the Works.
 * Part of the engine (execution_priv.h). */
#include "controllers/execution_priv.h"

#include <stdlib.h>
#include <string.h>

#include "controllers/metricsstatus.h"
#include "controllers/names.h"
#include "core/condition.h"
#include "core/env.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"

#define EXEC_RESYNC_MS 30000 /* FLOTILLA_EXEC_RESYNC_MS */

/* ---- member watches started ahead ---- */

/* While the Work cache makes its first list (after a restart, every Work there is), the
 * workers wait for it (fl_ctrl_wait_synced), and a member watch would only start when the
 * first Work that needs it is reconciled: the members' lists would begin after the Works'
 * list is over. Instead, the first Work that shows a (cluster, kind) puts it on a list that
 * one thread works off, starting those watches: the members list what they have while the
 * Works are still being listed, and most Works then find their watch listed. Only Works of
 * clusters this engine delivers to; a watch that no Work needs goes at the next sweep. */

/* Queue the watch of one (cluster, kind) unless it was queued before (x->mu held). */
static void ahead_queue(exec *x, const char *cluster, const char *av, const char *kind)
{
    char *k = fl_ws_use_key(cluster, av, kind);
    if (!json_object_get(x->ahead_seen, k)) {
        json_object_set_new(x->ahead_seen, k, json_true());
        json_array_append_new(x->ahead_todo, json_pack("[sss]", cluster, av, kind));
        pthread_cond_signal(&x->ahead_cv);
    }
    free(k);
}

static void add_name(void *ctx, const char *cluster)
{
    json_array_append_new(ctx, json_string(cluster));
}

/* The Work cache lists by key, so one cluster's Works come after another's: a kind seen the
 * first time is queued for every cluster the engine delivers to, or a cluster late in the
 * list would start its watches only then. That matters when a few clusters hold many Works
 * each; with many clusters the list reaches each one soon, and a kind used in a few of
 * them must not start a watch (a thread and a stream) in every one: beyond
 * AHEAD_FANOUT_MAX clusters, only the Works' own. */
#define AHEAD_FANOUT_MAX 32
void fl_exec_watch_ahead(exec *x, const char *cluster, const json_t *work)
{
    if (fl_mstatus_owns(cluster))
        return; /* its status comes from metrics: no member watch */
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(fl_json_obj(fl_json_obj(work, "spec"), "workload"), "manifests"), i, m) {
        const char *av = fl_json_str(m, "apiVersion"), *kind = fl_json_str(m, "kind");
        if (!av || !kind)
            continue;
        char *kk = fl_cat("\t", av, "\t", kind, NULL); /* the kind itself, seen */
        pthread_mutex_lock(&x->mu);
        bool first = x->ahead_seen && !json_object_get(x->ahead_seen, kk);
        if (first)
            json_object_set_new(x->ahead_seen, kk, json_true());
        pthread_mutex_unlock(&x->mu);
        free(kk);
        json_t *names = json_array();
        if (first && x->ops.each_cluster) /* not under mu: it reads the clusters' cache */
            x->ops.each_cluster(x->ops.ctx, add_name, names);
        if (json_array_size(names) > AHEAD_FANOUT_MAX)
            json_array_clear(names);
        size_t j;
        json_t *n;
        pthread_mutex_lock(&x->mu);
        if (x->ahead_seen) {
            json_array_foreach(names, j, n) ahead_queue(x, json_string_value(n), av, kind);
            ahead_queue(x, cluster, av, kind);
        }
        pthread_mutex_unlock(&x->mu);
        json_decref(names);
    }
}

/* Start (and leave to the registry) the member watch for one (cluster, kind). Failures are
 * left to the reconcile, which reports them on the Work. */
static void start_watch(exec *x, const char *cluster, const char *av, const char *kind)
{
    fl_client *mc = NULL;
    char *emsg = NULL, *resource = NULL;
    bool namespaced = false;
    fl_client_error ce = {0};
    fl_ws_watch *wt = NULL;
    if (fl_exec_member_client(x, cluster, &mc, &emsg) == 0 &&
        fl_client_resolve(mc, av, kind, &resource, &namespaced, &ce) == 0 &&
        fl_ws_watch_get(x->watches, cluster, mc, av, kind, resource, -1, &wt) == 0)
        fl_ws_watch_put(x->watches, wt);
    free(resource);
    free(emsg);
}

/* The cluster's Works are reconciled whatever a first list says of them from now on (x->mu
 * not held). NULL: every cluster's. */
void fl_exec_unresume(exec *x, const char *cluster)
{
    pthread_mutex_lock(&x->mu);
    if (cluster)
        json_object_del(x->resume_clusters, cluster);
    else
        json_object_clear(x->resume_clusters);
    pthread_mutex_unlock(&x->mu);
}

/* Start the member watches noted (fl_exec_resume) at their revisions, before any Work
 * comes: a cluster whose member cannot be had now is reconciled in full. */
static void start_resumed(exec *x)
{
    pthread_mutex_lock(&x->mu);
    json_t *todo = x->resume_todo;
    x->resume_todo = NULL;
    pthread_mutex_unlock(&x->mu);
    size_t i, n = 0;
    json_t *mk;
    json_array_foreach(todo, i, mk) {
        const char *cluster = json_string_value(json_array_get(mk, 0));
        fl_client *mc = NULL;
        char *emsg = NULL;
        if (fl_exec_member_client(x, cluster, &mc, &emsg) == 0 &&
            fl_ws_watch_resume(x->watches, cluster, mc, json_string_value(json_array_get(mk, 1)),
                               json_string_value(json_array_get(mk, 2)), json_string_value(json_array_get(mk, 3)),
                               json_string_value(json_array_get(mk, 4))) == 0) {
            n++;
        } else {
            fl_log_kv(FL_LOG_INFO, "execution", "member watch not resumed: its Works are checked in full", "object",
                      FL_LOG_OBJ("Cluster", NULL, cluster), "cluster", cluster, "err", emsg, NULL);
            fl_exec_requeue_cluster(x, cluster);
        }
        free(emsg);
    }
    if (n)
        fl_metrics_count("flotilla_execution_watches_resumed_total",
                         "Member watches started where they had been noted with the reconciled revision, "
                         "instead of listing",
                         (double)n);
    json_decref(todo);
}

/* A watch started at its noted revision had to list (workstatus.c) */
void fl_exec_relisted(void *ctx, const char *cluster)
{
    fl_log_kv(FL_LOG_INFO, "execution",
              "a member watch could not go on from where it was noted: its Works are checked in full", "object",
              FL_LOG_OBJ("Cluster", NULL, cluster), "cluster", cluster, NULL);
    fl_exec_requeue_cluster(ctx, cluster);
}

/* The thread that starts watches ahead; it ends with the Work cache's first list. */
void *fl_exec_ahead_loop(void *arg)
{
    exec *x = arg;
    pthread_setname_np(pthread_self(), "fl-exec-ahead");
    start_resumed(x);
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (!atomic_load(&x->quit) && !json_array_size(x->ahead_todo) && !fl_informer_has_synced(x->works)) {
            struct timespec t = fl_time_after(CLOCK_MONOTONIC, 100); /* the list's end does not signal: look again */
            pthread_cond_timedwait(&x->ahead_cv, &x->mu, &t);
        }
        if (atomic_load(&x->quit) || !json_array_size(x->ahead_todo))
            break;
        json_t *one = json_incref(json_array_get(x->ahead_todo, 0));
        json_array_remove(x->ahead_todo, 0);
        pthread_mutex_unlock(&x->mu);
        start_watch(x, json_string_value(json_array_get(one, 0)), json_string_value(json_array_get(one, 1)),
                    json_string_value(json_array_get(one, 2)));
        json_decref(one);
        pthread_mutex_lock(&x->mu);
    }
    /* the list is over: later Works start their watches as they are reconciled */
    json_decref(x->ahead_seen);
    json_decref(x->ahead_todo);
    x->ahead_seen = x->ahead_todo = NULL;
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* ---- resync ----
 *
 * Every EXEC_RESYNC_MS the resync re-queues the Works whose last apply did not settle and
 * stops the member watches no Work needs. It used to decode every Work for that, and most
 * are kept as their revisions alone (a Work a watch brought): at 50,000 Works, 3 s of CPU
 * every 30 s at rest. Now each Work's cache entry carries what it needs (fl_exec_work_tag): whether
 * it is settled, and which of the kind sets (the kinds its manifests name) it uses; the walk
 * reads those and decodes only the Works it re-queues. */

/* A tag: bit 0 settled; bits 1-2 the Applied condition (for /metrics); the rest the kind
 * set's index in x->kind_sets, from 1 (0: the manifests are not known). */
#define TAG_SETTLED 1u
#define TAG_APPLIED_SHIFT 1
#define TAG_SET_SHIFT 3
enum { APPLIED_NONE, APPLIED_TRUE, APPLIED_FALSE };

static uint32_t applied_bits(const json_t *w)
{
    const char *st = fl_json_str(fl_condition_of(w, "Applied"), "status");
    uint32_t a = !st ? APPLIED_NONE : !strcmp(st, "True") ? APPLIED_TRUE : APPLIED_FALSE;
    return a << TAG_APPLIED_SHIFT;
}

/* The tag of Work w (informer thread). Its kind set is 0 when its manifests are not known (a
 * Work a resumed start listed bare). */
uint32_t fl_exec_work_tag(void *ctx, const json_t *w)
{
    exec *x = ctx;
    const json_t *manifests = json_object_get(fl_json_obj(fl_json_obj(w, "spec"), "workload"), "manifests");
    if (!json_is_array(manifests))
        return applied_bits(w);
    size_t i;
    json_t *m;
    char *names = fl_strdup("");
    json_array_foreach(manifests, i, m) {
        const char *av = fl_json_str(m, "apiVersion"), *kind = fl_json_str(m, "kind");
        if (!av || !kind)
            continue;
        char *more = fl_cat(names, av, "\n", kind, "\n", NULL);
        free(names);
        names = more;
    }
    pthread_mutex_lock(&x->tag_mu);
    json_t *id = json_object_get(x->kind_set_ids, names);
    json_int_t idx = id ? json_integer_value(id) : (json_int_t)json_array_size(x->kind_sets) + 1;
    if (!id) { /* a set not seen before: its kinds, in the order of names */
        json_t *kinds = json_array();
        json_array_foreach(manifests, i, m) {
            const char *av = fl_json_str(m, "apiVersion"), *kind = fl_json_str(m, "kind");
            if (av && kind)
                json_array_append_new(kinds, json_pack("[ss]", av, kind));
        }
        json_array_append_new(x->kind_sets, kinds);
        json_object_set_new(x->kind_set_ids, names, json_integer(idx));
    }
    pthread_mutex_unlock(&x->tag_mu);
    free(names);
    if (idx >= (json_int_t)(UINT32_MAX >> TAG_SET_SHIFT))
        return applied_bits(w);
    return (uint32_t)idx << TAG_SET_SHIFT | applied_bits(w) | (fl_exec_settled(w) ? TAG_SETTLED : 0);
}

/* ---- Works by cluster and Applied condition, for /metrics ---- */

static const char *const applied_names[] = {"Unknown", "True", "False"};

/* One Work's entry (the cache read-locked): nothing allocated but a cluster's first counts */
static void count_work(void *ctx, const char *key, uint32_t tag)
{
    json_t *counts = ctx;
    size_t n;
    const char *cluster = fl_names_work_key_cluster_span(key, &n);
    if (!cluster)
        return;
    json_t *c = json_object_getn(counts, cluster, n);
    if (!c) {
        c = json_pack("[iii]", 0, 0, 0);
        json_object_setn_new(counts, cluster, n, c);
    }
    size_t a = (tag >> TAG_APPLIED_SHIFT) & 3u;
    json_t *v = json_array_get(c, a < 3 ? a : APPLIED_NONE);
    json_integer_set(v, json_integer_value(v) + 1);
}

void fl_exec_scrape_works(exec *x)
{
    static const char help[] =
        "Works of a member cluster by their Applied condition: True (applied), False (the apply failed), "
        "Unknown (not tried yet).";
    fl_metric *fam = fl_metric_family(FL_METRIC_GAUGE, "flotilla_works", help, "cluster", "applied", NULL, 0);
    json_t *counts = json_object();
    fl_informer_each_tag(x->works, NULL, count_work, counts);
    const char *cluster;
    json_t *c;
    json_object_foreach(counts, cluster, c) {
        for (size_t a = 0; a < 3; a++)
            fl_metric_set(fl_metric_with(fam, cluster, applied_names[a]),
                          (double)json_integer_value(json_array_get(c, a)));
        json_object_del(x->scraped_clusters, cluster);
    }
    json_object_foreach(x->scraped_clusters, cluster, c) /* no Work there any more */
        fl_metric_drop_first(fam, cluster);
    json_decref(x->scraped_clusters);
    x->scraped_clusters = counts;
}

typedef struct resync_walk {
    exec *x;
    json_t *in_use;    /* fl_ws_use_key -> true; "<cluster>\n*": all of the cluster's */
    json_t *deliver;   /* cluster -> whether the engine delivers to it, asked once */
    json_t *kind_sets; /* x->kind_sets as the walk began */
    json_t *unsettled; /* keys of the Works to re-queue */
} resync_walk;

/* One Work's entry (the Work cache read-locked: no call into it) */
static void resync_one(void *ctx, const char *key, uint32_t tag)
{
    resync_walk *r = ctx;
    const char *wname;
    char *cluster = fl_names_work_key_cluster(key, &wname);
    if (!cluster)
        return;
    /* only what did not apply: an apply that failed on something our watches cannot see (an
     * object of the same name that we do not manage, deleted since) is tried again at least
     * this often; a settled Work costs nothing at rest */
    uint32_t set_idx = tag >> TAG_SET_SHIFT;
    if (set_idx && !(tag & TAG_SETTLED))
        json_array_append_new(r->unsettled, json_string(key));
    json_t *d = json_object_get(r->deliver, cluster);
    if (!d) {
        fl_exec_cluster cl = {0};
        r->x->ops.cluster(r->x->ops.ctx, cluster, &cl);
        d = json_boolean(cl.deliver && !fl_mstatus_owns(cluster)); /* a metrics cluster's watches go */
        json_object_set_new(r->deliver, cluster, d);
    }
    const json_t *set = set_idx ? json_array_get(r->kind_sets, set_idx - 1) : NULL;
    if (json_is_true(d) && !set_idx) { /* its kinds are not known: every watch of its cluster stays */
        char *all = fl_cat(cluster, "\n*", NULL);
        json_object_set_new(r->in_use, all, json_true());
        free(all);
    }
    size_t j;
    json_t *k;
    json_array_foreach(json_is_true(d) ? set : NULL, j, k) {
        char *use = fl_ws_use_key(cluster, json_string_value(json_array_get(k, 0)),
                                  json_string_value(json_array_get(k, 1)));
        json_object_set_new(r->in_use, use, json_true());
        free(use);
    }
    free(cluster);
}

/* Every EXEC_RESYNC_MS: re-queue the Works that did not apply (resync_one), and stop the
 * member watches that no Work of a push cluster needs. */
void *fl_exec_resync_loop(void *arg)
{
    exec *x = arg;
    int64_t every = fl_env_ms("FLOTILLA_EXEC_RESYNC_MS", EXEC_RESYNC_MS, 1);
    while (!fl_client_cancel_sleep(x->stop, (int)every)) {
        /* a cache still listing would stop the watches of the Works not in it yet */
        if (!fl_informer_has_synced(x->works))
            continue;
        pthread_mutex_lock(&x->tag_mu);
        json_t *sets = json_copy(x->kind_sets); /* appended to meanwhile */
        pthread_mutex_unlock(&x->tag_mu);
        resync_walk r = {x, json_object(), json_object(), sets, json_array()};
        fl_informer_each_tag(x->works, NULL, resync_one, &r);
        fl_ws_watches_sweep(x->watches, r.in_use);
        size_t i;
        json_t *k;
        json_array_foreach(r.unsettled, i, k) {
            json_t *w = NULL;
            if (fl_informer_get_key(x->works, json_string_value(k), &w) == 0 && !fl_exec_settled(w))
                fl_exec_enqueue_work(x, w, false);
            json_decref(w);
        }
        json_decref(r.in_use);
        json_decref(r.deliver);
        json_decref(r.kind_sets);
        json_decref(r.unsettled);
    }
    return NULL;
}

/* ---- resuming ---- */

void fl_exec_resume(fl_exec *x, const json_t *marks)
{
    pthread_mutex_lock(&x->mu);
    json_decref(x->resume_todo);
    x->resume_todo = json_array();
    size_t i;
    json_t *mk;
    json_array_foreach(marks, i, mk) {
        bool whole = json_array_size(mk) == 5;
        for (size_t j = 0; whole && j < 5; j++)
            whole = json_string_value(json_array_get(mk, j)) != NULL;
        if (!whole)
            continue;
        json_array_append(x->resume_todo, mk);
        json_object_set_new(x->resume_clusters, json_string_value(json_array_get(mk, 0)), json_true());
    }
    size_t nw = json_array_size(x->resume_todo), nc = json_object_size(x->resume_clusters);
    pthread_mutex_unlock(&x->mu);
    if (nw)
        fl_log(FL_LOG_INFO, "execution", "%zu member watches in %zu clusters go on from where they were noted", nw,
               nc);
}

/* Why the member watches cannot be noted now, told once a minute at most: an engine that
 * stays busy keeps every restart from resuming them. */
static void busy_told(exec *x, const char *why, size_t n)
{
    int64_t now = fl_time_mono_ms();
    if (x->busy_told_ms && now - x->busy_told_ms < 60000)
        return;
    x->busy_told_ms = now;
    fl_log(FL_LOG_INFO, "execution", "the member watches are not noted yet: %zu %s", n, why);
}

json_t *fl_exec_marks(fl_exec *x)
{
    if (!fl_informer_has_synced(x->works))
        return NULL;
    if (!fl_workqueue_idle(x->q)) {
        busy_told(x, "Works queued, or waiting to be tried again", fl_workqueue_len(x->q));
        return NULL;
    }
    pthread_mutex_lock(&x->mu);
    size_t held = json_object_size(x->first_status), undelivered = json_object_size(x->undelivered),
           todo = json_array_size(x->resume_todo);
    pthread_mutex_unlock(&x->mu);
    if (held)
        busy_told(x, "first statuses held back", held);
    else if (undelivered)
        busy_told(x, "Works not tried yet", undelivered);
    else if (todo)
        busy_told(x, "member watches still to resume", todo);
    json_t *marks = held || undelivered || todo ? NULL : fl_ws_watches_marks(x->watches);
    if (!marks && !held && !undelivered && !todo)
        busy_told(x, "member watches yet to list", 1);
    /* idle again after them: a Work an event told before them queued has been reconciled */
    if (marks && !fl_workqueue_idle(x->q)) {
        json_decref(marks);
        marks = NULL;
    }
    return marks;
}
