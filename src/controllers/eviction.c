/* eviction.c - taint-based eviction: a binding scheduled to a cluster whose NoExecute taint
 * it does not tolerate leaves that cluster (Karmada's taint manager, on by default here).
 *
 *     Cluster spec.taints (NoExecute) ──► binding: spec.clusters minus the cluster, plus a
 *                                         spec.gracefulEvictionTasks entry, in one write
 *
 * When: for each cluster of spec.clusters, every NoExecute taint needs a toleration in
 * spec.placement.clusterTolerations (the first that tolerates it counts); an untolerated
 * taint means now; a toleration with tolerationSeconds means taint.timeAdded + seconds;
 * one without tolerates forever. The binding's deadline is the earliest over its clusters.
 * Deadlines come only from stored timestamps, so a restart evicts at the same moment: a
 * NoExecute taint written without timeAdded gets it stamped here first (Karmada's API
 * server does that on every Cluster write).
 *
 * Two halves: workers over a queue of binding keys compute each binding's deadline into
 * `pending`; one evictor thread takes the earliest due deadline first, at most `rate` per
 * second (fl_eviction_rate), re-reads the binding and evicts. Before it writes, it holds
 * the eviction back (a FailoverSuppressed Warning and condition on the binding, retried
 * every SUPPRESS_RETRY_MS) when more than a third of the clusters are not Ready, or when the
 * scheduler, asked with the eviction already made, finds no cluster for the binding.
 *
 * Metrics (docs/observability.md): flotilla_failover_total{reason,purge_mode} per task
 * written, flotilla_failover_suppressed_total{reason} per suppression begun (the Warning
 * event, not every retry), flotilla_eviction_pending (deadlines held, read at scrape).
 *
 * Queue keys: "R|ns/name", "C|name" (bindings), "K|name" (a Cluster to stamp). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/cluster.h"
#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/eviction.h"
#include "controllers/eviction_priv.h"
#include "controllers/names.h"
#include "core/condition.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/timefmt.h"
#include "interp/interp.h"
#include "sched/sched.h"

#define LOG "eviction"
#define EVICTION_WORKERS 1 /* deadlines are cheap to compute; the evictor thread writes */
/* keys one worker reconciles side by side: an application-failover binding's health changes
 * write its clocks, and 200 copies turning Unhealthy at once started their clocks up to
 * 150 ms late, one commit after another */
#define EVICTION_BATCH 16
#define SUPPRESS_RETRY_MS 5000
#define FOREVER INT64_MAX
/* A key of the queue that stands for every binding: a Cluster's taints or readiness changed,
 * or the controller started (deadlines live in memory and are computed again). */
#define ALL_KEY "*"
#define SUPPRESSED_CONDITION "FailoverSuppressed"
#define APP_CONDITION "ApplicationFailover"
#define NO_REPORT_GRACE_MS 60000 /* a copy not reporting health this long after scheduling: say so */

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};
static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

/* ---- settings and shared helpers (eviction.h) ---- */

static double g_rate = FL_EVICTION_DEFAULT_RATE;
static int64_t g_grace_s = FL_EVICTION_DEFAULT_GRACE_S;

void fl_eviction_configure(double rate, int64_t grace_seconds)
{
    g_rate = rate;
    g_grace_s = grace_seconds > 0 ? grace_seconds : FL_EVICTION_DEFAULT_GRACE_S;
}

double fl_eviction_rate(void)
{
    return g_rate;
}

int64_t fl_eviction_grace_seconds(void)
{
    return g_grace_s;
}

char fl_eviction_purge_mode(const json_t *task)
{
    const char *m = fl_json_str(task, "purgeMode");
    if (m && (!strcmp(m, "Directly") || !strcmp(m, "Immediately")))
        return 'D';
    if (m && !strcmp(m, "Never"))
        return 'N';
    return 'G';
}

const json_t *fl_eviction_task_of(const json_t *spec, const char *cluster)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "gracefulEvictionTasks"), i, t) {
        const char *from = fl_json_str(t, "fromCluster");
        if (from && !strcmp(from, cluster))
            return t;
    }
    return NULL;
}

/* ---- the controller ---- */

typedef struct evictctl {
    fl_ctrl_env env;
    fl_informer *rbs, *crbs, *clusters;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json_t *pending;    /* binding key -> deadline (ms since the epoch) (under mu) */
    json_t *held;       /* binding key -> ms before which a held-back eviction is not retried */
    json_t *counted;    /* binding key -> the reason its suppression was counted for, until it
                           ends (under mu): the informer's copy may not show the condition
                           written yet, or its write may have met a conflict */
    int64_t next_slot;  /* the rate: no eviction before this (ms since the epoch) */
    bool stop;
    pthread_t thread;
    /* The scheduler's view of the Clusters, for "would another cluster fit": built again only
     * after a Cluster changed, not for every eviction (at 1,000 evictions from one of 100
     * clusters, rebuilding it each time was a third of the server's time). */
    pthread_mutex_t snap_mu;
    fl_sched_snapshot *snap;
    bool snap_stale; /* under snap_mu */
    size_t clusters_n, clusters_down; /* Clusters, and those not Ready, when snap was built */
} evictctl;

static bool is_noexecute(const json_t *taint)
{
    const char *e = fl_json_str(taint, "effect");
    return e && !strcmp(e, "NoExecute");
}

/* When the binding with tolerations tols must leave cluster: ms since the epoch (0: now),
 * or FOREVER. *why gets what decided it (a static or heap string the caller frees). */
static int64_t cluster_deadline(const json_t *tols, const json_t *cluster, char **why)
{
    int64_t deadline = FOREVER;
    size_t i, j;
    json_t *taint, *tol;
    json_array_foreach(json_object_get(json_object_get(cluster, "spec"), "taints"), i, taint) {
        if (!is_noexecute(taint))
            continue;
        const json_t *used = NULL;
        json_array_foreach(tols, j, tol) {
            if (fl_sched_tolerates(tol, taint)) {
                used = tol;
                break;
            }
        }
        const char *k = fl_json_str(taint, "key"), *v = fl_json_str(taint, "value");
        if (!used) {
            free(*why);
            *why = fl_asprintf("cluster %s has the taint {%s%s%s:NoExecute}, which the placement does not tolerate",
                               fl_json_meta(cluster, "name"), k ? k : "", v && *v ? "=" : "", v ? v : "");
            return 0;
        }
        json_t *secs = json_object_get(used, "tolerationSeconds");
        int64_t added = fl_time_parse(fl_json_str(taint, "timeAdded"));
        if (!json_is_integer(secs) || added < 0)
            continue; /* forever; a taint not stamped yet gets its time from cluster_stamp */
        int64_t d = added + (int64_t)json_integer_value(secs) * 1000;
        if (d < deadline) {
            deadline = d;
            free(*why);
            *why = fl_asprintf("cluster %s has the taint {%s%s%s:NoExecute}, tolerated for %llds from %s",
                               fl_json_meta(cluster, "name"), k ? k : "", v && *v ? "=" : "", v ? v : "",
                               (long long)json_integer_value(secs), fl_json_str(taint, "timeAdded"));
        }
    }
    return deadline < 0 ? 0 : deadline;
}

static fl_informer *informer_of(evictctl *e, const char *key)
{
    return key[0] == 'C' ? e->crbs : e->rbs;
}

static void write_held(evictctl *e, const char *key, bool held, const char *reason, const char *message);

/* The earliest deadline over the binding's clusters, FOREVER if none. */
static int64_t binding_deadline(evictctl *e, const json_t *binding)
{
    const json_t *spec = json_object_get(binding, "spec");
    const json_t *tols = json_object_get(json_object_get(spec, "placement"), "clusterTolerations");
    int64_t best = FOREVER;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "clusters"), i, c) {
        json_t *cluster = NULL;
        const char *name = fl_json_str(c, "name");
        if (!name || fl_informer_get(e->clusters, NULL, name, &cluster))
            continue;
        char *why = NULL;
        int64_t d = cluster_deadline(tols, cluster, &why);
        free(why);
        json_decref(cluster);
        if (d < best)
            best = d;
        int64_t a = fl_evict_app_deadline(binding, name);
        if (a < best)
            best = a < 0 ? 0 : a;
    }
    return best;
}

/* Application failover's side of a reconcile of binding b (read whole) at now: the clocks
 * brought up to date with the aggregated health, and the ApplicationFailover condition
 * saying whether it can judge the copies, written together. Returns when to look again
 * (ms since the epoch), FOREVER if not needed; 0 or FL_ECONFLICT in *rc. */
static int64_t app_observe(evictctl *e, const char *key, const json_t *b, int64_t now, int *rc)
{
    const json_t *spec = json_object_get(b, "spec");
    const json_t *res = json_object_get(spec, "resource");
    const char *av = fl_json_str(res, "apiVersion"), *kind = fl_json_str(res, "kind");
    int64_t again = FOREVER;
    char *msg = NULL;
    const char *reason = "HealthObserved";
    *rc = 0;
    if (!av || !kind || !fl_interp_has(e->env.interp, av, kind, FL_INTERP_HEALTH)) {
        reason = "NoHealthRule";
        msg = fl_asprintf("application failover cannot judge %s %s: the kind has no health rule (a native one, a "
                          "ResourceInterpreterCustomization's healthInterpretation, or a webhook's InterpretHealth); "
                          "its copies are never failed over",
                          av ? av : "", kind ? kind : "");
    } else {
        int64_t sched = fl_time_parse(fl_json_str(json_object_get(b, "status"), "lastScheduledTime"));
        if (sched < 0)
            sched = fl_time_parse(fl_json_meta(b, "creationTimestamp"));
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, "clusters"), i, c) {
            const char *name = fl_json_str(c, "name");
            if (!name || fl_evict_status_item(b, name))
                continue;
            if (sched >= 0 && now < sched + NO_REPORT_GRACE_MS) {
                again = sched + NO_REPORT_GRACE_MS;
                continue;
            }
            reason = "NoHealthReported";
            free(msg);
            msg = fl_asprintf("application failover cannot judge the copy in cluster %s yet: no status has been "
                              "reported from it",
                              name);
        }
    }
    json_t *clocks = fl_evict_app_clocks(b, now);
    const json_t *status = json_object_get(b, "status");
    const json_t *had_clocks = json_object_get(status, "failoverClocks");
    bool clocks_changed = !fl_json_same(had_clocks, clocks) && !(json_array_size(clocks) == 0 && !had_clocks);
    const json_t *cond = fl_condition_of(b, APP_CONDITION);
    bool ok = !strcmp(reason, "HealthObserved");
    const char *had_reason = fl_json_str(cond, "reason");
    if (!ok && (!had_reason || strcmp(had_reason, reason)))
        fl_event(e->env.recorder, b, "Warning", "ApplicationFailoverInactive", "%s", msg);
    json_t *st;
    json_t *copy = fl_ctrl_status_copy(b, &st);
    bool changed = false;
    if (!ok || cond)
        changed = fl_condition_set(st, APP_CONDITION, ok ? "True" : "False", reason,
                                   ok ? "the copies' health is reported; unhealthy ones fail over after the toleration"
                                      : msg,
                                   -1, now);
    if (clocks_changed) {
        if (json_array_size(clocks))
            json_object_set(st, "failoverClocks", clocks);
        else
            json_object_del(st, "failoverClocks");
        changed = true;
    }
    if (changed) {
        fl_client_error ce;
        int wrc = fl_client_update_status_given(e->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"),
                                                copy, NULL, NULL, &ce);
        if (wrc == FL_ECONFLICT)
            *rc = FL_ECONFLICT; /* the newer binding comes back */
        else if (wrc && wrc != FL_ENOTFOUND)
            fl_log_kv(FL_LOG_WARN, LOG, "writing the failover clocks failed", "object",
                      FL_LOG_OBJ(key[0] == 'C' ? "ClusterResourceBinding" : "ResourceBinding", NULL, key + 2), "err",
                      fl_errmsg(ce.message, wrc), NULL);
    } else {
        json_decref(copy);
    }
    json_decref(clocks);
    free(msg);
    return again;
}

/* Stamp timeAdded = now on the cluster's NoExecute taints that lack it. */
static int cluster_stamp(evictctl *e, const char *name)
{
    json_t *cluster = NULL;
    if (fl_informer_get(e->clusters, NULL, name, &cluster))
        return 0;
    json_t *copy = NULL;
    size_t i;
    json_t *taint;
    char now[FL_TIME_BUF];
    fl_time_format(fl_time_now_ms(), false, now);
    json_array_foreach(json_object_get(json_object_get(cluster, "spec"), "taints"), i, taint) {
        if (!is_noexecute(taint) || fl_json_str(taint, "timeAdded"))
            continue;
        if (!copy)
            copy = fl_json_deep_copy(cluster);
        json_object_set_new(json_array_get(json_object_get(json_object_get(copy, "spec"), "taints"), i), "timeAdded",
                            json_string(now));
    }
    int rc = 0;
    if (copy) {
        fl_client_error ce;
        rc = fl_client_update(e->env.cp, &CLUSTERS, NULL, copy, NULL, NULL, &ce);
        if (rc == FL_ENOTFOUND || rc == FL_ECONFLICT)
            rc = rc == FL_ECONFLICT ? FL_ECONFLICT : 0; /* a conflict: the newer cluster comes back */
        else if (rc)
            fl_log_kv(FL_LOG_WARN, LOG, "stamping timeAdded on the taints failed", "object",
                      FL_LOG_OBJ("Cluster", NULL, name), "cluster", name, "err", fl_errmsg(ce.message, rc), NULL);
        json_decref(copy);
    }
    json_decref(cluster);
    return rc;
}

static int reconcile(void *ctx, const char *key)
{
    evictctl *e = ctx;
    if (key[0] == 'K')
        return cluster_stamp(e, key + 2);
    if (!strcmp(key, ALL_KEY)) {
        /* the workers start once the informers have listed, so the walk finds every binding,
         * also those a resumed start lists without telling their adds */
        fl_ctrl_queue_bindings(e->q, e->rbs, e->crbs);
        return 0;
    }
    if (!fl_informer_has_synced(e->clusters) || !fl_informer_has_synced(informer_of(e, key)))
        return FL_ETIMEDOUT;
    json_t *b = NULL;
    int64_t d = FOREVER;
    if (!fl_informer_get_whole(informer_of(e, key), key + 2, &b) && !fl_json_meta(b, "deletionTimestamp")) {
        d = binding_deadline(e, b);
        if (fl_evict_app_policy(json_object_get(b, "spec"))) {
            int rc = 0;
            int64_t again = app_observe(e, key, b, fl_time_now_ms(), &rc);
            if (rc) {
                json_decref(b);
                return rc;
            }
            if (again != FOREVER)
                fl_workqueue_add_after(e->q, key, again - fl_time_now_ms() + 50);
        }
    }
    const char *held_status = fl_json_str(fl_condition_of(b, SUPPRESSED_CONDITION), "status");
    bool was_held = held_status && !strcmp(held_status, "True");
    json_decref(b);
    if (d == FOREVER && was_held) /* the taint went, or the placement tolerates it now */
        write_held(e, key, false, "NoLongerNeeded", "no eviction is due any more");
    pthread_mutex_lock(&e->mu);
    if (d == FOREVER) {
        json_object_del(e->pending, key);
        json_object_del(e->held, key);
        json_object_del(e->counted, key);
    } else {
        json_int_t held = json_integer_value(json_object_get(e->held, key));
        if (d < held)
            d = held;
        json_t *have = json_object_get(e->pending, key);
        if (!have || json_integer_value(have) != d) {
            json_object_set_new(e->pending, key, json_integer(d));
            pthread_cond_signal(&e->cv);
        }
    }
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* ---- evicting ---- */

/* Is the Ready condition of cluster True? (A Ready cluster that is not reporting still
 * counts as up here: eviction follows Ready, as Karmada's taint manager does.) */
static bool cluster_ready(const json_t *cluster)
{
    return fl_cluster_report(cluster) != FL_CLUSTER_NOT_READY;
}

/* Set the FailoverSuppressed condition of the binding at key: True when held, else False
 * (only where it is there), with reason and message; the binding read whole (its status
 * carries the aggregated status). */
static void write_held(evictctl *e, const char *key, bool held, const char *reason, const char *message)
{
    json_t *b = NULL;
    if (fl_informer_get_whole(informer_of(e, key), key + 2, &b))
        return;
    const json_t *cond = fl_condition_of(b, SUPPRESSED_CONDITION);
    if (!held && !cond) {
        json_decref(b);
        return;
    }
    json_t *status;
    json_t *copy = fl_ctrl_status_copy(b, &status);
    bool changed = fl_condition_set(status, SUPPRESSED_CONDITION, held ? "True" : "False", reason, message, -1,
                                    fl_time_now_ms());
    if (changed) {
        fl_client_error ce;
        int rc = fl_client_update_status_given(e->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"),
                                               copy, NULL, NULL, &ce);
        if (rc && rc != FL_ENOTFOUND && rc != FL_ECONFLICT)
            fl_log_kv(FL_LOG_WARN, LOG, "writing the " SUPPRESSED_CONDITION " condition failed", "object",
                      FL_LOG_OBJ(key[0] == 'C' ? "ClusterResourceBinding" : "ResourceBinding", NULL, key + 2), "err",
                      fl_errmsg(ce.message, rc), NULL);
    } else {
        json_decref(copy);
    }
    json_decref(b);
}

/* ---- metrics ---- */

/* Count one suppression begun; reason is TooManyClustersNotReady or NoClusterFits. */
static void count_suppressed(const char *reason)
{
    fl_metric *m = fl_metric_family(FL_METRIC_COUNTER, "flotilla_failover_suppressed_total",
                                    "Evictions held back (FailoverSuppressed), by why; counted once per suppression "
                                    "begun, not per retry.",
                                    "reason", NULL, NULL, 0);
    fl_metric_add(fl_metric_with(m, reason, NULL), 1);
}

/* Count one failover begun: the task t was written. */
static void count_started(const json_t *t)
{
    fl_metric *m = fl_metric_family(FL_METRIC_COUNTER, "flotilla_failover_total",
                                    "Failovers begun: a binding evicted from a cluster, by trigger and purge mode.",
                                    "reason", "purge_mode", NULL, 0);
    const char *producer = fl_json_str(t, "producer");
    bool app = producer && !strcmp(producer, "ApplicationFailover");
    char mode = fl_eviction_purge_mode(t);
    fl_metric_add(fl_metric_with(m, app ? "ApplicationFailover" : "ClusterFailover",
                                 mode == 'D' ? "Directly" : mode == 'N' ? "Never" : "Gracefully"),
                  1);
}

static void scrape_pending(void *ctx)
{
    evictctl *e = ctx;
    pthread_mutex_lock(&e->mu);
    size_t n = json_object_size(e->pending);
    pthread_mutex_unlock(&e->mu);
    fl_metric_gauge_set("flotilla_eviction_pending",
                        "Eviction deadlines the evictor holds (bindings with a NoExecute taint or an Unhealthy copy "
                        "on a clock).",
                        NULL, NULL, (double)n);
}

/* Hold the eviction of the binding back: tell it (once per reason) and retry later. */
static void hold_back(evictctl *e, const char *key, const json_t *b, const char *reason, const char *message)
{
    const json_t *cond = fl_condition_of(b, SUPPRESSED_CONDITION);
    const char *had = fl_json_str(cond, "status"), *had_reason = fl_json_str(cond, "reason");
    bool stored = had && !strcmp(had, "True") && had_reason && !strcmp(had_reason, reason);
    pthread_mutex_lock(&e->mu);
    const char *mine = json_string_value(json_object_get(e->counted, key));
    bool begun = !stored && !(mine && !strcmp(mine, reason));
    json_object_set_new(e->counted, key, json_string(reason));
    pthread_mutex_unlock(&e->mu);
    if (begun) {
        fl_event(e->env.recorder, b, "Warning", "FailoverSuppressed", "%s", message);
        count_suppressed(reason);
    }
    write_held(e, key, true, reason, message);
    pthread_mutex_lock(&e->mu);
    json_object_set_new(e->held, key, json_integer(fl_time_now_ms() + SUPPRESS_RETRY_MS));
    pthread_mutex_unlock(&e->mu);
    fl_workqueue_add_after(e->q, key, SUPPRESS_RETRY_MS);
}


/* Would the scheduler find a cluster for spec (the binding's spec after the eviction)? When
 * not, *msg (heap) says why. */
/* The current snapshot of the Clusters (a new reference), built again when one changed. */
static fl_sched_snapshot *clusters_snapshot(evictctl *e)
{
    pthread_mutex_lock(&e->snap_mu);
    if (!e->snap || e->snap_stale) {
        json_t *all = fl_informer_list(e->clusters, NULL);
        size_t n = json_array_size(all);
        const json_t **v = fl_calloc(n ? n : 1, sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(all, i);
        fl_sched_snapshot *snap = NULL;
        if (fl_sched_snapshot_new(v, n, &snap) == 0) {
            fl_sched_snapshot_free(e->snap);
            e->snap = snap;
            e->snap_stale = false;
            e->clusters_n = n;
            e->clusters_down = 0;
            for (size_t i = 0; i < n; i++)
                e->clusters_down += !cluster_ready(v[i]);
        }
        free(v);
        json_decref(all);
    }
    fl_sched_snapshot *snap = e->snap ? fl_sched_snapshot_ref(e->snap) : NULL;
    pthread_mutex_unlock(&e->snap_mu);
    return snap;
}

/* Too many clusters not Ready at once? *msg (heap) says how many. Counted when the Clusters'
 * snapshot is built, not listed for every eviction. */
static bool too_many_not_ready(evictctl *e, char **msg)
{
    fl_sched_snapshot_free(clusters_snapshot(e));
    pthread_mutex_lock(&e->snap_mu);
    size_t n = e->clusters_n, down = e->clusters_down;
    pthread_mutex_unlock(&e->snap_mu);
    if (down * 3 <= n)
        return false;
    *msg = fl_asprintf("eviction held back: %zu of %zu clusters are not Ready, more than a third; the workload "
                       "stays where it is until fewer are down",
                       down, n);
    return true;
}

static bool another_cluster_fits(evictctl *e, const json_t *spec, const json_t *status, char **msg)
{
    fl_sched_snapshot *snap = clusters_snapshot(e);
    fl_sched_result *res = NULL;
    char *err = NULL;
    bool fits = false;
    if (fl_sched_run(snap, spec, status, NULL, &res, &err) == 0)
        fits = res->outcome == FL_SCHED_SUCCESS && res->ntargets > 0;
    if (!fits)
        *msg = fl_asprintf("eviction held back: no other cluster fits the placement (%s); the workload stays "
                           "where it is",
                           err ? err : res && res->message ? res->message : "no cluster");
    free(err);
    fl_sched_result_free(res);
    fl_sched_snapshot_free(snap);
    return fits;
}

/* The task for cluster c (a spec.clusters entry) of binding b, evicted at now for why: by a
 * taint, or by application failover (app). */
static json_t *new_task(evictctl *e, const json_t *b, const json_t *c, const char *why, bool app, int64_t now)
{
    const json_t *spec = json_object_get(b, "spec");
    const json_t *behavior = app ? fl_evict_app_policy(spec)
                                 : json_object_get(json_object_get(spec, "failover"), "cluster");
    const char *mode = fl_json_str(behavior, "purgeMode");
    char ts[FL_TIME_BUF];
    fl_time_format(now, false, ts);
    json_t *t = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "fromCluster", fl_json_str(c, "name"), "purgeMode",
                          mode && *mode ? mode : "Gracefully", "reason", app ? "ApplicationFailure" : "TaintUntolerated",
                          "message", why, "producer", app ? "ApplicationFailover" : "TaintManager",
                          "clustersBeforeFailover", fl_evict_clusters_before(spec), "creationTimestamp", ts);
    json_int_t replicas = json_integer_value(json_object_get(c, "replicas"));
    if (replicas > 0)
        json_object_set_new(t, "replicas", json_integer(replicas));
    if (app && fl_eviction_purge_mode(t) == 'G' && json_is_integer(json_object_get(behavior, "gracePeriodSeconds")))
        json_object_set(t, "gracePeriodSeconds", json_object_get(behavior, "gracePeriodSeconds"));
    if (app && fl_eviction_purge_mode(t) == 'N')
        json_object_set_new(t, "suppressDeletion", json_true());
    json_t *pls = fl_evict_preserve(b, behavior, fl_json_str(c, "name"), e->env.recorder);
    if (json_object_size(pls))
        json_object_set(t, "preservedLabelState", pls);
    json_decref(pls);
    return t;
}

/* Evict the binding at key from its clusters due at now. Returns whether it wrote an eviction. */
static bool evict(evictctl *e, const char *key, int64_t now)
{
    json_t *b = NULL;
    if (fl_informer_get_whole(informer_of(e, key), key + 2, &b) || fl_json_meta(b, "deletionTimestamp")) {
        json_decref(b);
        return false;
    }
    const json_t *spec = json_object_get(b, "spec");
    const json_t *tols = json_object_get(json_object_get(spec, "placement"), "clusterTolerations");
    json_t *upd = fl_json_deep_copy(b);
    json_object_del(upd, "status");
    json_t *uspec = json_object_get(upd, "spec");
    json_t *keep = json_array(), *tasks = json_object_get(uspec, "gracefulEvictionTasks");
    if (!json_is_array(tasks)) {
        tasks = json_array();
        json_object_set_new(uspec, "gracefulEvictionTasks", tasks);
    }
    json_t *from = json_array(), *added = json_array();
    int64_t tol_ms = fl_evict_app_policy(spec) ? fl_evict_app_toleration_ms(fl_evict_app_policy(spec)) : 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "clusters"), i, c) {
        json_t *cluster = NULL;
        char *why = NULL;
        const char *name = fl_json_str(c, "name");
        int64_t d = name && !fl_informer_get(e->clusters, NULL, name, &cluster) ? cluster_deadline(tols, cluster, &why)
                                                                                : FOREVER;
        json_decref(cluster);
        bool app = false;
        if (d > now && name && fl_evict_app_deadline(b, name) <= now) {
            app = true;
            d = now;
            free(why);
            why = fl_asprintf("the copy in cluster %s has been Unhealthy for %llds (decisionConditions."
                              "tolerationSeconds)",
                              name, (long long)(tol_ms / 1000));
        }
        if (d > now) {
            json_array_append(keep, c);
        } else {
            json_array_append_new(from, json_string(name));
            if (!fl_eviction_task_of(spec, name)) {
                json_t *t = new_task(e, b, c, why, app, now);
                json_array_append_new(tasks, t);
                json_array_append(added, t);
            }
        }
        free(why);
    }
    json_object_set_new(uspec, "clusters", keep);
    bool wrote = false;
    char *msg = NULL;
    if (json_array_size(from) == 0) {
        fl_workqueue_add(e->q, key); /* nothing due any more: compute again */
    } else if (too_many_not_ready(e, &msg)) {
        hold_back(e, key, b, "TooManyClustersNotReady", msg);
    } else if (!another_cluster_fits(e, uspec, json_object_get(b, "status"), &msg)) {
        hold_back(e, key, b, "NoClusterFits", msg);
    } else {
        fl_client_error ce;
        int rc = fl_client_update(e->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"), upd, NULL,
                                  NULL, &ce);
        if (rc == 0) {
            wrote = true;
            fl_log_kv(FL_LOG_INFO, LOG, "evicted from the cluster", "object",
                      FL_LOG_OBJ(key[0] == 'C' ? "ClusterResourceBinding" : "ResourceBinding", NULL, key + 2),
                      "cluster", json_string_value(json_array_get(from, 0)), NULL);
            json_array_foreach(added, i, c) {
                fl_event(e->env.recorder, b, "Normal", "FailoverStarted", "%s: leaving cluster %s, purge mode %s",
                         fl_json_str(c, "reason"), fl_json_str(c, "fromCluster"), fl_json_str(c, "purgeMode"));
                count_started(c);
            }
            pthread_mutex_lock(&e->mu);
            json_object_del(e->held, key);
            json_object_del(e->counted, key);
            pthread_mutex_unlock(&e->mu);
            write_held(e, key, false, "Evicted", "the eviction is no longer held back");
        } else if (rc != FL_ENOTFOUND) {
            json_array_foreach(from, i, c) {
                fl_event(e->env.recorder, b, "Warning", "EvictWorkloadFromClusterFailed",
                         "Evict from cluster %s failed: %s", json_string_value(c), fl_errmsg(ce.message, rc));
            }
            fl_workqueue_add_after(e->q, key, 1000);
        }
    }
    free(msg);
    json_decref(from);
    json_decref(added);
    json_decref(upd);
    json_decref(b);
    return wrote;
}

/* Without a rate, the evictor writes up to this many due evictions at once: each is an
 * update that waits for its commit, and a lost cluster's thousand bindings one after the
 * other took a minute. */
#define UNPACED_BATCH 32
#define UNPACED_THREADS 8

typedef struct due_batch {
    evictctl *e;
    char *keys[UNPACED_BATCH];
    int64_t now;
} due_batch;

static void evict_one(void *ctx, int i)
{
    due_batch *b = ctx;
    evict(b->e, b->keys[i], b->now);
}

/* The evictor: the earliest due deadline first, at the rate; without one, every due
 * eviction at once (earliest first, UNPACED_BATCH at a time). */
static void *evictor(void *arg)
{
    evictctl *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        const char *k, *best = NULL;
        json_t *v;
        int64_t bd = FOREVER;
        json_object_foreach(e->pending, k, v) {
            if (json_integer_value(v) < bd) {
                bd = json_integer_value(v);
                best = k;
            }
        }
        int64_t now = fl_time_now_ms(), at = bd;
        bool paced = fl_eviction_rate() > 0;
        if (best && paced && e->next_slot > at)
            at = e->next_slot;
        if (!best || at > now) {
            int64_t wait = best ? at - now : 1000;
            struct timespec ts = fl_time_after(CLOCK_REALTIME, wait > 1000 ? 1000 : wait);
            pthread_cond_timedwait(&e->cv, &e->mu, &ts);
            continue;
        }
        due_batch b = {.e = e, .now = now};
        int n = 0;
        b.keys[n++] = fl_strdup(best);
        json_object_del(e->pending, best);
        if (!paced) {
            void *tmp;
            json_object_foreach_safe(e->pending, tmp, k, v) {
                if (n == UNPACED_BATCH)
                    break;
                if (json_integer_value(v) <= now) {
                    b.keys[n++] = fl_strdup(k);
                    json_object_del(e->pending, k);
                }
            }
        }
        pthread_mutex_unlock(&e->mu);
        bool wrote = false;
        if (n == 1)
            wrote = evict(e, b.keys[0], now);
        else
            fl_parallel(n, UNPACED_THREADS, evict_one, &b);
        for (int i = 0; i < n; i++)
            free(b.keys[i]);
        pthread_mutex_lock(&e->mu);
        if (wrote && paced)
            e->next_slot = now + (int64_t)(1000.0 / fl_eviction_rate());
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- handlers ---- */

static void binding_event(void *ctx, json_t *obj)
{
    fl_ctrl_queue_binding(((evictctl *)ctx)->q, obj);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* status writes change no taint deadline (the condition we write is one of them); under
     * application failover, health arrives that way, in status.aggregatedStatus, which the
     * shared binding cache leaves out (fl_ctrl_informer): every write is looked at, or a
     * copy's clock started only at the binding's next other change */
    if (!fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) ||
        fl_evict_app_policy(json_object_get(new_obj, "spec")))
        binding_event(ctx, new_obj);
}

static bool has_noexecute(const json_t *cluster)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(cluster, "spec"), "taints"), i, t) {
        if (is_noexecute(t))
            return true;
    }
    return false;
}

static void cluster_event(evictctl *e, const json_t *old_obj, const json_t *obj)
{
    pthread_mutex_lock(&e->snap_mu);
    e->snap_stale = true;
    pthread_mutex_unlock(&e->snap_mu);
    if (!obj) /* deleted: its bindings hear of it from the scheduler */
        return;
    const json_t *ot = json_object_get(json_object_get(old_obj, "spec"), "taints");
    const json_t *nt = json_object_get(json_object_get(obj, "spec"), "taints");
    bool ready_changed = old_obj && cluster_ready(old_obj) != cluster_ready(obj);
    if (old_obj && fl_json_same(ot, nt) && !ready_changed)
        return;
    if (!has_noexecute(obj) && !(old_obj && has_noexecute(old_obj)) && !ready_changed)
        return;
    char *k = fl_asprintf("K|%s", fl_json_meta(obj, "name"));
    fl_workqueue_add(e->q, k);
    free(k);
    fl_workqueue_add(e->q, ALL_KEY);
}

static void cluster_added(void *ctx, json_t *obj)
{
    cluster_event(ctx, NULL, obj);
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    cluster_event(ctx, old_obj, new_obj);
}

static void cluster_deleted(void *ctx, json_t *obj)
{
    (void)obj;
    cluster_event(ctx, NULL, NULL);
}

/* ---- lifecycle ---- */

static int evictctl_start(const fl_ctrl_env *env, void **state)
{
    evictctl *e = fl_calloc(1, sizeof *e);
    e->env = *env;
    e->q = fl_workqueue_new(NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->snap_mu, NULL);
    e->pending = json_object();
    e->held = json_object();
    e->counted = json_object();
    e->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    e->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    e->clusters = fl_ctrl_informer(env, CLUSTERS.api_version, CLUSTERS.resource);
    fl_informer_handlers bh = {.on_add = binding_event, .on_update = binding_updated, .ctx = e};
    fl_informer_add_handlers(e->rbs, &bh);
    fl_informer_add_handlers(e->crbs, &bh);
    fl_informer_handlers ch = {.on_add = cluster_added, .on_update = cluster_updated, .on_delete = cluster_deleted,
                               .ctx = e};
    fl_informer_add_handlers(e->clusters, &ch);
    e->workers = fl_ctrl_workers_start_batched(e->q, "eviction", EVICTION_WORKERS, EVICTION_BATCH, reconcile, e,
                                               (fl_informer *const[]){e->clusters, e->rbs, e->crbs, NULL});
    fl_workqueue_add(e->q, ALL_KEY);
    pthread_create(&e->thread, NULL, evictor, e);
    scrape_pending(e); /* the family shows at zero from the start */
    fl_metrics_on_scrape(scrape_pending, e);
    *state = e;
    return 0;
}

static void evictctl_stop(void *state)
{
    evictctl *e = state;
    fl_metrics_remove_hook(scrape_pending, e);
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    fl_ctrl_workers_join(e->workers);
    fl_workqueue_free(e->q);
    json_decref(e->pending);
    json_decref(e->held);
    json_decref(e->counted);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    fl_sched_snapshot_free(e->snap);
    pthread_mutex_destroy(&e->snap_mu);
    free(e);
}

const fl_controller fl_eviction_controller = {"eviction", evictctl_start, evictctl_stop};
