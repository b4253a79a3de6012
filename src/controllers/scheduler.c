/* scheduler.c - the scheduler controller: runs the scheduler core (src/sched/) for every
 * ResourceBinding and ClusterResourceBinding and writes the decision. The second arrow of the
 * data path (DESIGN.md):
 *
 *     binding (placement, replicas) ──► scheduler ──► binding.spec.clusters + Scheduled condition
 *
 * A decision runs when the binding's spec changes (placement, replicas, a reschedule
 * trigger) and when the cluster set changes in a way that matters to placement (a cluster
 * joins or leaves, its labels, provider/region/zone, taints or served APIs change, it starts
 * being deleted). It does not run when only clusters' resource summaries move, so replicas
 * do not wander with every status report. The core is deterministic and keeps stable
 * assignments, so running it again on an unchanged input writes nothing.
 *
 * The cluster snapshot is rebuilt lazily: cluster events mark it stale, and the next decision
 * rebuilds it once (under a mutex) and shares it, reference counted, with decisions already
 * running on the old one.
 *
 * Writes: spec.clusters (an update pinned to the cached resourceVersion; a conflict is
 * retried from the newer cache), then status: the Scheduled condition with Karmada's reasons,
 * schedulerObservedGeneration, schedulerObservingAffinityName and lastScheduledTime. Events
 * on the binding and its template say what was decided, and why clusters were filtered out.
 *
 * Skipped: bindings without placement (a dependency's attached binding follows its
 * dependents, not the scheduler), bindings with spec.suspension.scheduling, bindings being
 * deleted. Queue keys: "R|ns/name", "C|name". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/names.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"
#include "sched/sched.h"

#define LOG "scheduler"
#define SCHED_WORKERS 4
/* keys each worker reconciles side by side on the parallel pool: most of a reconcile is
 * waiting for its writes' commits (a decision or a render is one or two), and a thousand
 * bindings moved at once waited for them in line (fl_ctrl_workers_start_batched) */
#define SCHED_KEYS_AT_ONCE 4
#define MAX_FILTER_EVENTS 10

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

typedef struct schedctl {
    fl_ctrl_env env;
    fl_informer *rbs, *crbs, *clusters;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    pthread_mutex_t mu;
    fl_sched_snapshot *snap; /* NULL: stale, rebuild before the next decision */
    json_t *unschedulable;   /* keys whose last decision found no placement (under mu) */
    struct {
        fl_metric_series *attempts[3], *e2e[3], *step[FL_SCHED_NSTEPS], *incoming[3], *unschedulable;
    } m;
} schedctl;

/* ---- metrics: Karmada's karmada_scheduler_* under our prefix ---- */

enum { RES_SCHEDULED, RES_UNSCHEDULABLE, RES_ERROR };
enum { EV_ADD, EV_UPDATE, EV_CLUSTER };

static void metrics_init(schedctl *s)
{
    static const char *const results[] = {"scheduled", "unschedulable", "error"};
    static const char *const steps[] = {"Filter", "Select", "AssignReplicas"};
    static const char *const events[] = {"BindingAdd", "BindingUpdate", "ClusterChanged"};
    /* a step over 100 clusters takes microseconds */
    static const double STEP_BUCKETS[] = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1};
    fl_metric *att = fl_metric_family(FL_METRIC_COUNTER, "flotilla_scheduler_schedule_attempts_total",
                                      "Scheduling decisions made for ResourceBindings and ClusterResourceBindings, by "
                                      "result (scheduled, unschedulable: no placement fits, error).",
                                      "result", NULL, NULL, 0);
    fl_metric *e2e = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_scheduler_e2e_scheduling_duration_seconds",
                                      "From taking a binding off the queue to its decision written, by result.",
                                      "result", NULL, NULL, 0);
    fl_metric *step = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_scheduler_scheduling_algorithm_duration_seconds",
                                       "Time in each step of the scheduling algorithm (Filter, Select with its "
                                       "scoring, AssignReplicas), per decision.",
                                       "schedule_step", NULL, STEP_BUCKETS, sizeof STEP_BUCKETS / sizeof STEP_BUCKETS[0]);
    fl_metric *in = fl_metric_family(FL_METRIC_COUNTER, "flotilla_scheduler_queue_incoming_bindings_total",
                                     "Bindings queued for a decision, by the event that queued them.", "event", NULL,
                                     NULL, 0);
    for (int i = 0; i < 3; i++) {
        s->m.attempts[i] = fl_metric_with(att, results[i], NULL);
        s->m.e2e[i] = fl_metric_with(e2e, results[i], NULL);
        s->m.incoming[i] = fl_metric_with(in, events[i], NULL);
    }
    for (int i = 0; i < FL_SCHED_NSTEPS; i++)
        s->m.step[i] = fl_metric_with(step, steps[i], NULL);
    s->m.unschedulable = fl_metric_with(
        fl_metric_family(FL_METRIC_GAUGE, "flotilla_scheduler_unschedulable_bindings",
                         "Bindings whose last decision found no placement that fits (they wait for a cluster or "
                         "policy change).",
                         NULL, NULL, NULL, 0),
        NULL, NULL);
}

/* A decision for key: counted, timed from t0 (fl_time_mono_ns), its steps observed, and the
 * key in or out of the unschedulable set. result < 0: no decision (deleted, suspended). */
static void count_decision(schedctl *s, const char *key, int result, int64_t t0, const fl_sched_result *res)
{
    if (result >= 0) {
        fl_metric_add(s->m.attempts[result], 1);
        fl_metric_observe(s->m.e2e[result], (double)(fl_time_mono_ns() - t0) / 1e9);
    }
    for (int i = 0; res && i < FL_SCHED_NSTEPS; i++)
        if (res->step_ns[i])
            fl_metric_observe(s->m.step[i], (double)res->step_ns[i] / 1e9);
    if (result == RES_ERROR)
        return; /* it stays as it was until a decision */
    pthread_mutex_lock(&s->mu);
    if (result == RES_UNSCHEDULABLE)
        json_object_set_new(s->unschedulable, key, json_true());
    else
        json_object_del(s->unschedulable, key);
    fl_metric_set(s->m.unschedulable, (double)json_object_size(s->unschedulable));
    pthread_mutex_unlock(&s->mu);
}

/* ---- snapshot ---- */

static fl_sched_snapshot *snapshot(schedctl *s)
{
    pthread_mutex_lock(&s->mu);
    if (!s->snap) {
        json_t *all = fl_informer_list(s->clusters, NULL);
        size_t n = json_array_size(all);
        const json_t **v = fl_calloc(n ? n : 1, sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(all, i);
        fl_sched_snapshot_new(v, n, &s->snap);
        free(v);
        json_decref(all);
    }
    fl_sched_snapshot *snap = fl_sched_snapshot_ref(s->snap);
    pthread_mutex_unlock(&s->mu);
    return snap;
}

static void snapshot_stale(schedctl *s)
{
    pthread_mutex_lock(&s->mu);
    fl_sched_snapshot *old = s->snap;
    s->snap = NULL;
    pthread_mutex_unlock(&s->mu);
    fl_sched_snapshot_free(old);
}

/* ---- handlers ---- */

static void binding_added(void *ctx, json_t *obj)
{
    schedctl *s = ctx;
    if (!fl_ctrl_resumed_add(&s->env, obj)) {
        fl_metric_add(s->m.incoming[EV_ADD], 1);
        fl_ctrl_queue_binding(s->q, obj);
    }
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* our own status writes, and others', do not call for a decision */
    if (!fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec"))) {
        fl_metric_add(((schedctl *)ctx)->m.incoming[EV_UPDATE], 1);
        fl_ctrl_queue_binding(((schedctl *)ctx)->q, new_obj);
    }
}

/* A binding gone is no longer waiting for a placement. */
static void binding_deleted(void *ctx, json_t *obj)
{
    char *key = fl_names_binding_key(obj);
    if (key)
        count_decision(ctx, key, -1, 0, NULL);
    free(key);
}

static void requeue_all(schedctl *s)
{
    fl_metric_add(s->m.incoming[EV_CLUSTER], 1);
    fl_ctrl_resume_broad(&s->env);
    fl_ctrl_queue_bindings(s->q, s->rbs, s->crbs);
}

static void cluster_added(void *ctx, json_t *obj)
{
    snapshot_stale(ctx);
    if (!fl_ctrl_resumed_add(&((schedctl *)ctx)->env, obj))
        requeue_all(ctx);
}

static bool ready(const json_t *cluster)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(cluster, "status"), "conditions"), i, c) {
        if (fl_json_str(c, "type") && !strcmp(fl_json_str(c, "type"), "Ready"))
            return fl_json_str(c, "status") && !strcmp(fl_json_str(c, "status"), "True");
    }
    return false;
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    schedctl *s = ctx;
    snapshot_stale(s); /* resource summaries feed dynamic weights of the next decision */
    const json_t *om = json_object_get(old_obj, "metadata"), *nm = json_object_get(new_obj, "metadata");
    bool placement_relevant =
        !fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) ||
        !fl_json_same(json_object_get(om, "labels"), json_object_get(nm, "labels")) ||
        !fl_json_same(json_object_get(om, "deletionTimestamp"), json_object_get(nm, "deletionTimestamp")) ||
        !fl_json_same(json_object_get(json_object_get(old_obj, "status"), "apiEnablements"),
                    json_object_get(json_object_get(new_obj, "status"), "apiEnablements")) ||
        ready(old_obj) != ready(new_obj);
    if (placement_relevant)
        requeue_all(s);
}

/* ---- writing the decision ---- */

/* A minimal object for events about the binding's template (uid from spec.resource). */
static json_t *template_ref(const json_t *binding)
{
    const json_t *r = json_object_get(json_object_get(binding, "spec"), "resource");
    return json_pack("{s:s?, s:s?, s:{s:s?, s:s?, s:s?}}", "apiVersion", fl_json_str(r, "apiVersion"), "kind",
                     fl_json_str(r, "kind"), "metadata", "name", fl_json_str(r, "name"), "namespace",
                     fl_json_str(r, "namespace"), "uid", fl_json_str(r, "uid"));
}

static json_t *targets_json(const fl_sched_result *res)
{
    json_t *a = json_array();
    for (size_t i = 0; i < res->ntargets; i++)
        json_array_append_new(a, res->targets[i].replicas
                                     ? json_pack("{s:s, s:i}", "name", res->targets[i].name, "replicas",
                                                 (int)res->targets[i].replicas)
                                     : json_pack("{s:s}", "name", res->targets[i].name)); /* omitempty */
    return a;
}

/* "member1:2, member2:4" for messages. */
static char *describe_targets(const fl_sched_result *res)
{
    size_t cap = 64 + res->ntargets * 48, n = 0;
    char *s = fl_malloc(cap);
    s[0] = 0;
    for (size_t i = 0; i < res->ntargets && n + 48 < cap; i++)
        n += (size_t)snprintf(s + n, cap - n, "%s%.30s:%d", i ? ", " : "", res->targets[i].name,
                              (int)res->targets[i].replicas);
    return s;
}

/* Write status: the Scheduled condition and the observed generation. binding is whole (src
 * empty), or as fl_informer_get_partial gave it with src. */
static int write_status(schedctl *s, fl_informer *inf, const fl_gvr *gvr, const json_t *binding,
                        const fl_informer_src *src,
                        const fl_sched_result *res)
{
    /* the binding as it will be written; aggregatedStatus and the rest shared read-only */
    json_t *st;
    json_t *b = fl_ctrl_status_copy(binding, &st);
    const char *status = res->outcome == FL_SCHED_SUCCESS ? "True" : "False";
    int64_t now_ms = fl_time_now_ms();
    char now[FL_TIME_BUF];
    fl_time_format(now_ms, false, now);
    bool changed = fl_condition_set(st, "Scheduled", status, res->reason, res->message, -1, now_ms);
    json_t *gen = json_object_get(json_object_get(b, "metadata"), "generation");
    if (!fl_json_same(json_object_get(st, "schedulerObservedGeneration"), gen)) {
        json_object_set(st, "schedulerObservedGeneration", gen);
        changed = true;
    }
    if (res->affinity_name && (!fl_json_str(st, "schedulerObservingAffinityName") ||
                               strcmp(fl_json_str(st, "schedulerObservingAffinityName"), res->affinity_name))) {
        json_object_set_new(st, "schedulerObservingAffinityName", json_string(res->affinity_name));
        changed = true;
    }
    int rc = 0;
    if (changed && fl_informer_src_partial(src)) {
        /* the status is written whole: with the aggregatedStatus the informer leaves out,
         * read only now (most passes write nothing) */
        json_t *whole = fl_informer_whole(inf, binding, src);
        json_t *agg = json_object_get(json_object_get(whole, "status"), "aggregatedStatus");
        if (agg)
            json_object_set(st, "aggregatedStatus", agg);
        if (!whole)
            rc = FL_EIO;
        json_decref(whole);
    }
    if (changed && rc == 0) {
        if (res->outcome == FL_SCHED_SUCCESS)
            json_object_set_new(st, "lastScheduledTime", json_string(now));
        fl_client_error ce;
        /* handed over (the server keeps it uncopied); its metadata is binding's */
        rc = fl_client_update_status_given(s->env.cp, gvr, fl_json_meta(binding, "namespace"), b, NULL, NULL, &ce);
        b = NULL;
        if (rc && rc != FL_ECONFLICT && rc != FL_ENOTFOUND)
            fl_log_kv(FL_LOG_WARN, LOG, "writing the scheduling status failed", "object",
                      FL_LOG_OBJ(fl_json_meta(binding, "namespace") ? "ResourceBinding" : "ClusterResourceBinding",
                                 fl_json_meta(binding, "namespace"), fl_json_meta(binding, "name")),
                      "err", fl_errmsg(ce.message, rc), NULL);
        if (rc == FL_ENOTFOUND)
            rc = 0;
    }
    json_decref(b);
    return rc;
}

static void filter_events(schedctl *s, const json_t *binding, const fl_sched_result *res)
{
    size_t n = res->nfiltered < MAX_FILTER_EVENTS ? res->nfiltered : MAX_FILTER_EVENTS;
    for (size_t i = 0; i < n; i++)
        fl_event(s->env.recorder, binding, "Normal", "ClusterFiltered", "cluster %s filtered out by %s: %s",
                 res->filtered[i].cluster, res->filtered[i].plugin, res->filtered[i].reason);
    if (res->nfiltered > n)
        fl_event(s->env.recorder, binding, "Normal", "ClusterFiltered", "%zu more clusters filtered out",
                 res->nfiltered - n);
}

static int reconcile(void *ctx, const char *key)
{
    schedctl *s = ctx;
    bool cluster_scoped = key[0] == 'C';
    const fl_gvr *gvr = cluster_scoped ? &CRBS : &RBS;
    if (!fl_informer_has_synced(s->clusters) || !fl_informer_has_synced(cluster_scoped ? s->crbs : s->rbs))
        return FL_ETIMEDOUT;
    json_t *b = NULL;
    fl_informer_src src = {0}; /* the binding lacks its aggregatedStatus (fl_ctrl_informer) */
    fl_informer *inf = cluster_scoped ? s->crbs : s->rbs;
    if (fl_informer_get_partial(inf, key + 2, &b, &src)) {
        count_decision(s, key, -1, 0, NULL); /* gone: not unschedulable any more */
        return 0;
    }
    int64_t t0 = fl_time_mono_ns();
    int result = -1;
    const json_t *spec = json_object_get(b, "spec");
    int rc = 0;
    fl_sched_result *res = NULL;
    fl_sched_snapshot *snap = NULL;
    char *err = NULL;
    json_t *tref = NULL, *upd = NULL, *written = NULL;
    if (fl_json_meta(b, "deletionTimestamp") || !json_is_object(json_object_get(spec, "placement")) ||
        json_is_true(json_object_get(json_object_get(spec, "suspension"), "scheduling")))
        goto out;
    snap = snapshot(s);
    tref = template_ref(b);
    if (fl_sched_run(snap, spec, json_object_get(b, "status"), NULL, &res, &err)) {
        fl_event(s->env.recorder, b, "Warning", "ScheduleBindingFailed", "%s", err);
        fl_event(s->env.recorder, tref, "Warning", "ScheduleBindingFailed", "%s", err);
        fl_sched_result fake = {.outcome = FL_SCHED_ERROR, .reason = "SchedulerError", .message = err};
        rc = write_status(s, inf, gvr, b, &src, &fake);
        result = RES_ERROR;
        goto out;
    }
    const json_t *cur = json_object_get(spec, "clusters");
    json_t *want = targets_json(res);
    /* no spec.clusters and no targets is no change */
    bool change = res->update_clusters && (cur ? !fl_json_same(want, cur) : json_array_size(want) > 0);
    const json_t *status_src = b;
    const fl_informer_src none = {0}, *status_rest = &src;
    if (change) {
        upd = fl_json_deep_copy(b);
        json_object_set_new(json_object_get(upd, "spec"), "clusters", want);
        want = NULL;
        fl_client_error ce;
        rc = fl_client_update(s->env.cp, gvr, fl_json_meta(b, "namespace"), upd, NULL, &written, &ce);
        if (rc) {
            if (rc == FL_ECONFLICT || rc == FL_ENOTFOUND)
                rc = rc == FL_ENOTFOUND ? 0 : rc;
            else
                fl_log_kv(FL_LOG_WARN, LOG, "writing the scheduling decision failed", "object",
                          FL_LOG_OBJ(fl_json_meta(b, "namespace") ? "ResourceBinding" : "ClusterResourceBinding",
                                     fl_json_meta(b, "namespace"), fl_json_meta(b, "name")),
                          "err", fl_errmsg(ce.message, rc), NULL);
            goto out;
        }
        status_src = written; /* whole */
        status_rest = &none;
        char *d = describe_targets(res);
        fl_event(s->env.recorder, b, "Normal", "ScheduleBindingSucceed",
                 "Binding has been scheduled successfully. Result: {%s}", d);
        fl_event(s->env.recorder, tref, "Normal", "ScheduleBindingSucceed",
                 "Binding has been scheduled successfully. Result: {%s}", d);
        free(d);
        if (res->nfiltered)
            filter_events(s, b, res);
    } else if (res->outcome != FL_SCHED_SUCCESS) {
        fl_event(s->env.recorder, b, "Warning", "ScheduleBindingFailed", "%s", res->message);
        fl_event(s->env.recorder, tref, "Warning", "ScheduleBindingFailed", "%s", res->message);
        filter_events(s, b, res);
    }
    json_decref(want);
    rc = write_status(s, inf, gvr, status_src, status_rest, res);
out:
    if (res)
        result = rc ? RES_ERROR : res->outcome == FL_SCHED_SUCCESS ? RES_SCHEDULED : RES_UNSCHEDULABLE;
    count_decision(s, key, result, t0, res);
    fl_sched_result_free(res);
    fl_sched_snapshot_free(snap);
    free(err);
    json_decref(tref);
    json_decref(upd);
    json_decref(written);
    json_decref(b);
    fl_informer_src_close(&src);
    return rc;
}

/* ---- bindings by scheduled state, for /metrics ----
 * Each binding's cache entry is tagged with its Scheduled condition, so that a scrape counts
 * them walking keys, decoding none. */

enum { TAG_NONE, TAG_SCHEDULED_TRUE, TAG_SCHEDULED_FALSE, TAG_SCHEDULED_UNKNOWN };

static uint32_t scheduled_tag(void *ctx, const json_t *b)
{
    const char *st = fl_json_str(fl_condition_of(b, "Scheduled"), "status");
    return !st ? TAG_SCHEDULED_UNKNOWN : !strcmp(st, "True") ? TAG_SCHEDULED_TRUE : TAG_SCHEDULED_FALSE;
}

static void count_binding(void *ctx, const char *key, uint32_t tag)
{
    size_t *n = ctx;
    n[tag <= TAG_SCHEDULED_UNKNOWN ? tag : TAG_NONE]++;
}

static void scrape_bindings(void *ctx)
{
    schedctl *s = ctx;
    size_t n[4] = {0};
    fl_informer_each_tag(s->rbs, NULL, count_binding, n);
    fl_informer_each_tag(s->crbs, NULL, count_binding, n);
    static const char help[] = "ResourceBindings and ClusterResourceBindings by their Scheduled condition: True, "
                               "False (no placement fits, or the decision failed), Unknown (no decision yet).";
    fl_metric_gauge_set("flotilla_bindings", help, "scheduled", "True", (double)n[TAG_SCHEDULED_TRUE]);
    fl_metric_gauge_set("flotilla_bindings", help, "scheduled", "False", (double)n[TAG_SCHEDULED_FALSE]);
    fl_metric_gauge_set("flotilla_bindings", help, "scheduled", "Unknown",
                        (double)(n[TAG_SCHEDULED_UNKNOWN] + n[TAG_NONE]));
}

/* ---- lifecycle ---- */

static int schedctl_start(const fl_ctrl_env *env, void **state)
{
    schedctl *s = fl_calloc(1, sizeof *s);
    s->env = *env;
    s->q = fl_workqueue_new(NULL);
    fl_ctrl_resumable(env, s->q);
    pthread_mutex_init(&s->mu, NULL);
    s->unschedulable = json_object();
    metrics_init(s);
    s->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    s->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    s->clusters = fl_ctrl_informer(env, "cluster.karmada.io/v1alpha1", "clusters");
    if (fl_informer_set_tagger(s->rbs, scheduled_tag, s) == 0 && fl_informer_set_tagger(s->crbs, scheduled_tag, s) == 0)
        fl_metrics_on_scrape(scrape_bindings, s);
    else
        fl_log(FL_LOG_WARN, "scheduler", "binding caches already tagged or started: flotilla_bindings not served");
    fl_informer_handlers bh = {.on_add = binding_added, .on_update = binding_updated, .on_delete = binding_deleted,
                               .ctx = s};
    fl_informer_add_handlers(s->rbs, &bh);
    fl_informer_add_handlers(s->crbs, &bh);
    fl_informer_handlers ch = {.on_add = cluster_added, .on_update = cluster_updated, .on_delete = cluster_added,
                               .ctx = s};
    fl_informer_add_handlers(s->clusters, &ch);
    s->workers = fl_ctrl_workers_start_batched(s->q, "scheduler", SCHED_WORKERS, SCHED_KEYS_AT_ONCE, reconcile, s,
                                              (fl_informer *const[]){s->clusters, s->rbs, s->crbs, NULL});
    *state = s;
    return 0;
}

static void schedctl_stop(void *state)
{
    schedctl *s = state;
    fl_metrics_remove_hook(scrape_bindings, s);
    fl_ctrl_workers_join(s->workers);
    fl_workqueue_free(s->q);
    fl_sched_snapshot_free(s->snap);
    json_decref(s->unschedulable);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const fl_controller fl_scheduler_controller = {"scheduler", schedctl_start, schedctl_stop};
