/* bindingstatus.c - the binding status controller: brings the Works' status back onto the
 * binding and the template. The return arrow of the data path (DESIGN.md):
 *
 *     template.status ◄── aggregate ◄── binding.status.aggregatedStatus ◄── Work.status
 *
 * For each binding, one item per target cluster (Karmada's AggregatedStatusItem):
 * clusterName, status (the reflected status the executor put in the Work's manifestStatuses),
 * applied and appliedMessage (the Work's Applied condition), health and (ours) liveStatus, the
 * state of the Work's first manifest (interp/livestate.h). The FullyApplied
 * condition says whether every target's Work is applied. Then the interpreter's
 * AggregateStatus turns the items into the template's status (for the kinds that have the
 * hook: Deployments sum replicas and carry observedGeneration only when every member has
 * caught up with the template's generation, so `kubectl rollout status` on the control plane
 * waits for the whole fleet).
 *
 * Bounded: status.summary (ours, summary.h) counts the clusters per live state and names the
 * worst, and aggregatedStatus keeps the worst items once a fleet is large (the template still
 * aggregates every item). A Cluster that stops or starts reporting (its Ready flips, or it
 * misses two reports) re-queues the bindings placed there, from an index of the bindings'
 * target clusters the binding handlers keep: its clusters turn Unknown, or no longer.
 *
 * Writes happen only on change (binding status, then the template's status subresource), so
 * a quiet fleet writes nothing. A customization changed for the kind aggregates its bindings
 * again; one that fails leaves the template's status as it was, with an AggregateStatusFailed
 * event on the template and the binding. A template changing generation re-runs the aggregation, which
 * is how observedGeneration falls behind at once when the user changes the spec.
 *
 * Queue keys: "R|ns/name", "C|name". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/dispatching.h"
#include "controllers/events.h"
#include "controllers/names.h"
#include "controllers/statuslag.h"
#include "controllers/summary.h"
#include "controllers/templates.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "interp/interp.h"

#define LOG "binding-status"
#define STATUS_WORKERS 4
/* keys each worker reconciles side by side on the parallel pool: most of a reconcile is
 * waiting for its writes' commits (a decision or a render is one or two), and a thousand
 * bindings moved at once waited for them in line (fl_ctrl_workers_start_batched) */
#define KEYS_AT_ONCE 4

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

typedef struct statusctl {
    fl_ctrl_env env;
    fl_informer *rbs, *crbs, *works, *clusters;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    fl_status_lag *lag; /* stage "binding": a Work's status change -> the binding's and template's */
    pthread_mutex_t mu;
    json_t *on_cluster; /* cluster -> {binding key: true}: the bindings it is a target of; under mu */
} statusctl;

/* ---- handlers ---- */

/* The binding's target clusters, in order and once each: spec.clusters, then the clusters
 * of requiredBy (an attached dependency's). A new object, name -> true. */
static json_t *target_names(const json_t *b)
{
    const json_t *spec = json_object_get(b, "spec");
    json_t *names = json_object(), *c, *e;
    size_t i, j;
    json_array_foreach(json_object_get(spec, "clusters"), i, c)
        if (fl_json_str(c, "name"))
            json_object_set(names, fl_json_str(c, "name"), json_true());
    json_array_foreach(json_object_get(spec, "requiredBy"), i, e)
        json_array_foreach(json_object_get(e, "clusters"), j, c)
            if (fl_json_str(c, "name"))
                json_object_set(names, fl_json_str(c, "name"), json_true());
    return names;
}

/* Move the binding under key in the index from the targets of was to those of now (either
 * NULL: none). Informer thread. */
static void index_targets(statusctl *s, const char *key, const json_t *was, const json_t *now)
{
    json_t *before = was ? target_names(was) : json_object(), *after = now ? target_names(now) : json_object();
    const char *c;
    json_t *v;
    pthread_mutex_lock(&s->mu);
    json_object_foreach(before, c, v) {
        json_t *keys = json_object_get(s->on_cluster, c);
        if (keys && !json_object_get(after, c)) {
            json_object_del(keys, key);
            if (!json_object_size(keys))
                json_object_del(s->on_cluster, c);
        }
    }
    json_object_foreach(after, c, v) {
        json_t *keys = json_object_get(s->on_cluster, c);
        if (!keys) {
            keys = json_object();
            json_object_set_new(s->on_cluster, c, keys);
        }
        json_object_set(keys, key, json_true());
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(before);
    json_decref(after);
}

/* Whether a binding has targets: clusters of its own or an attached dependency's. */
static bool has_targets(const json_t *b)
{
    const json_t *spec = json_object_get(b, "spec");
    return json_array_size(json_object_get(spec, "clusters")) || json_array_size(json_object_get(spec, "requiredBy"));
}

/* A binding not yet scheduled has nothing to aggregate: it waits for its Works' status (as
 * Karmada's binding status controller skips unscheduled bindings). */
static void binding_added(void *ctx, json_t *obj)
{
    statusctl *s = ctx;
    char *key = fl_names_binding_key(obj);
    if (key)
        index_targets(s, key, NULL, obj);
    free(key);
    const json_t *had = json_object_get(json_object_get(obj, "status"), "aggregatedStatus");
    if (!fl_ctrl_resumed_add(&s->env, obj) && (has_targets(obj) || had))
        fl_ctrl_queue_binding(s->q, obj);
}

/* A Work's status changed: aggregate its binding a little later, so that the changes of
 * a binding's Works that come together (a delivery to many clusters, each Work's status
 * written as it applies, then as the member reports) make one aggregation and one write of
 * the binding's and the template's status instead of one each. */
#define WORK_STATUS_DELAY_MS 100

static bool binding_acked(statusctl *s, const char *key);
static bool any_reported(statusctl *s, const char *key);

/* The binding's spec changed. What it asks of its Works (a suspension, other clusters) is
 * still on its way to them, and their status changes follow within moments: aggregate with
 * those, unless every Work already acknowledges the new spec (then a waiting tool has
 * nothing else to wait for). */
static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    statusctl *s = ctx;
    if (fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        return;
    char *key = fl_names_binding_key(new_obj);
    const json_t *os = json_object_get(old_obj, "spec"), *ns = json_object_get(new_obj, "spec");
    if (key && (!fl_json_same(json_object_get(os, "clusters"), json_object_get(ns, "clusters")) ||
                !fl_json_same(json_object_get(os, "requiredBy"), json_object_get(ns, "requiredBy"))))
        index_targets(s, key, old_obj, new_obj); /* its targets moved */
    if (key && binding_acked(s, key))
        fl_workqueue_add(s->q, key);
    else if (key && (has_targets(old_obj) || any_reported(s, key)))
        fl_workqueue_add_after(s->q, key, WORK_STATUS_DELAY_MS);
    /* else scheduled for the first time: its Works are still to be written and applied, and
     * their status, when it comes, aggregates (items for Works without status would only say
     * "not applied yet" to the binding and write the template's status too, once per binding
     * of a burst, while its delivery waits for the processor) */
    free(key);
}

static void work_event(statusctl *s, const json_t *work)
{
    char *key = fl_names_work_binding_key(work);
    if (key) {
        fl_status_lag_seen(s->lag, key);
        fl_workqueue_add_after(s->q, key, WORK_STATUS_DELAY_MS);
    }
    free(key);
}

/* A Work without status changes nothing in its binding's items (a target without a Work
 * reads the same): it is aggregated when its status comes. */
static void work_added(void *ctx, json_t *obj)
{
    statusctl *s = ctx;
    if (!fl_ctrl_resumed_add(&s->env, obj) && json_object_size(json_object_get(obj, "status")))
        work_event(s, obj);
}

static void work_deleted(void *ctx, json_t *obj)
{
    statusctl *s = ctx;
    if (!fl_ctrl_resumed_add(&s->env, obj))
        work_event(s, obj);
}

/* The Work named wname of cluster, from the cache (a new reference), or NULL. */
static json_t *work_of(statusctl *s, const char *wname, const char *cluster)
{
    char *wns = fl_names_execution_space(cluster);
    json_t *work = NULL;
    fl_informer_get(s->works, wns, wname, &work);
    free(wns);
    return work;
}

/* A test of a target cluster's Work (NULL: none yet), under the binding's suspension. */
typedef bool (*work_test)(const json_t *work, const json_t *suspension, const char *cluster);

/* Whether test holds for the Work of any target cluster of the binding under key (a queue
 * key), as the caches have it now; *none (when not NULL) says the binding has no clusters.
 * The clusters are looked at from the last: acknowledgements come roughly in the order the
 * Works were written, so an incomplete binding is usually seen as such at the first look. */
static bool any_target(statusctl *s, const char *key, work_test test, bool *none)
{
    json_t *b = NULL;
    fl_informer_get_key(key[0] == 'C' ? s->crbs : s->rbs, key + 2, &b);
    const json_t *spec = json_object_get(b, "spec"), *res = json_object_get(spec, "resource");
    const json_t *susp = json_object_get(spec, "suspension"), *clusters = json_object_get(spec, "clusters");
    if (none)
        *none = json_array_size(clusters) == 0;
    bool found = false;
    char *wname = json_array_size(clusters) ? fl_names_work(fl_json_str(res, "kind") ? fl_json_str(res, "kind") : "",
                                                            fl_json_str(res, "namespace"),
                                                            fl_json_str(res, "name") ? fl_json_str(res, "name") : "")
                                            : NULL;
    for (size_t i = json_array_size(clusters); wname && !found && i-- > 0;) {
        const char *cluster = fl_json_str(json_array_get(clusters, i), "name");
        if (!cluster)
            continue;
        json_t *work = work_of(s, wname, cluster);
        found = test(work, susp, cluster);
        json_decref(work);
    }
    free(wname);
    json_decref(b);
    return found;
}

static bool not_acked(const json_t *work, const json_t *suspension, const char *cluster)
{
    return !fl_dispatch_work_acked(work, fl_dispatch_suspended(suspension, cluster));
}

static bool reported(const json_t *work, const json_t *suspension, const char *cluster)
{
    (void)suspension;
    (void)cluster;
    return json_object_size(json_object_get(work, "status")) > 0;
}

/* Whether every target cluster of the binding under key has acknowledged what the binding
 * asks. */
static bool binding_acked(statusctl *s, const char *key)
{
    bool none;
    bool unacked = any_target(s, key, not_acked, &none);
    return !none && !unacked;
}

/* Whether a target cluster of the binding under key already has a Work with a status (the
 * binding was scheduled there before, and the Work outlived its unscheduling): no change of
 * that status will come to aggregate it. */
static bool any_reported(statusctl *s, const char *key)
{
    return any_target(s, key, reported, NULL);
}

static void work_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    statusctl *s = ctx;
    if (fl_json_same(json_object_get(old_obj, "status"), json_object_get(new_obj, "status")))
        return;
    /* the executor acknowledged a suspension, a pause or a resume */
    const char *msg = fl_dispatch_event_message(old_obj, new_obj);
    if (msg && s->env.recorder)
        fl_event(s->env.recorder, new_obj, "Normal", "WorkDispatching", "%s", msg);
    const json_t *was = fl_condition_of(old_obj, FL_DISPATCHING_CONDITION);
    const json_t *now = fl_condition_of(new_obj, FL_DISPATCHING_CONDITION);
    char *key = NULL;
    /* the acknowledgement that completes a binding's roll-up is written at once, not with the
     * gathered status changes: a tool waits on it (docs/suspension.md) */
    if (now && fl_dispatch_work_ack(new_obj) != FL_DISPATCH_PENDING && !fl_json_same(was, now) &&
        (key = fl_names_work_binding_key(new_obj)) && binding_acked(s, key)) {
        fl_status_lag_seen(s->lag, key);
        fl_workqueue_add(s->q, key);
    } else
        work_event(s, new_obj);
    free(key);
}

static void tmpl_updated(void *ctx, const fl_template_kind *k, json_t *old_obj, json_t *new_obj)
{
    json_t *og = json_object_get(json_object_get(old_obj, "metadata"), "generation");
    json_t *ng = json_object_get(json_object_get(new_obj, "metadata"), "generation");
    if (fl_json_same(og, ng))
        return;
    char *key = fl_names_template_binding_key(k->kind, k->namespaced, fl_json_meta(new_obj, "namespace"),
                                              fl_json_meta(new_obj, "name"));
    fl_workqueue_add(((statusctl *)ctx)->q, key);
    free(key);
}

/* A customization or webhook for a kind changed: its bindings aggregate again. */
static void interp_changed(void *ctx, const char *api_version, const char *kind)
{
    statusctl *s = ctx;
    fl_ctrl_resume_broad(&s->env);
    fl_ctrl_queue_bindings_of(s->q, s->rbs, s->crbs, api_version, kind);
}

static void binding_deleted(void *ctx, json_t *obj)
{
    char *key = fl_names_binding_key(obj);
    if (key)
        index_targets(ctx, key, obj, NULL);
    free(key);
}

/* A Cluster's Ready condition flipped, or it stopped or started answering: the summaries of
 * the bindings placed there say Unknown, or no longer. */
static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    statusctl *s = ctx;
    if (fl_cluster_report(old_obj) == fl_cluster_report(new_obj))
        return;
    pthread_mutex_lock(&s->mu);
    json_t *keys = json_copy(json_object_get(s->on_cluster, fl_json_meta(new_obj, "name")));
    pthread_mutex_unlock(&s->mu);
    fl_ctrl_queue_keys(s->q, keys);
}

/* ---- aggregation ---- */

/* One AggregatedStatusItem for cluster from its Work (NULL: not there yet). */
static json_t *item_for(const char *cluster, const json_t *work)
{
    json_t *it = json_pack("{s:s}", "clusterName", cluster);
    const json_t *applied = fl_condition_of(work, "Applied");
    bool ok = applied && fl_json_str(applied, "status") && !strcmp(fl_json_str(applied, "status"), "True");
    json_object_set_new(it, "applied", json_boolean(ok));
    if (!ok && applied && fl_json_str(applied, "message"))
        json_object_set_new(it, "appliedMessage", json_string(fl_json_str(applied, "message")));
    const json_t *ms = json_array_get(json_object_get(json_object_get(work, "status"), "manifestStatuses"), 0);
    const json_t *st = json_object_get(ms, "status");
    if (json_is_object(st))
        json_object_set(it, "status", (json_t *)st); /* shared, read-only as the Work is */
    const char *health = fl_json_str(ms, "health");
    json_object_set_new(it, "health", json_string(health ? health : "Unknown"));
    /* ours: the live state (docs/status.md), when the Work reports one */
    const char *live = fl_json_str(fl_json_obj(ms, "liveStatus"), "state");
    if (live)
        json_object_set_new(it, "liveStatus", json_string(live));
    return it;
}

/* The template's status from the items, written when it changed. */
static int aggregate_template(statusctl *s, const json_t *binding, const json_t *items, const json_t *dispatching)
{
    const json_t *res = json_object_get(json_object_get(binding, "spec"), "resource");
    const char *av = fl_json_str(res, "apiVersion"), *kind = fl_json_str(res, "kind"), *name = fl_json_str(res, "name");
    const char *ns = fl_json_str(res, "namespace");
    if (!av || !kind || !name || !fl_interp_has(s->env.interp, av, kind, FL_INTERP_AGGREGATE_STATUS))
        return 0;
    const fl_template_kind *k = NULL;
    if (fl_templates_watch(s->env.templates, av, kind, 0, &k) == FL_ENOTFOUND || !k)
        return 0;
    json_t *tmpl = NULL, *out = NULL;
    char *err = NULL;
    int rc = fl_templates_get(s->env.templates, av, kind, ns, name, &tmpl, NULL);
    if (rc) /* not listed yet, or gone */
        return rc == FL_ENOTFOUND ? 0 : rc;
    const char *uid = fl_json_str(res, "uid");
    if (uid && fl_json_meta(tmpl, "uid") && strcmp(uid, fl_json_meta(tmpl, "uid")))
        goto done; /* a re-created template the detector has not rebound yet */
    rc = fl_interp_aggregate_status(s->env.interp, tmpl, items, &out, &err);
    if (rc) {
        /* the template keeps the status it had; the message is the interpreter's (the
         * customization and the script line): on the template, as Karmada reports it, and on
         * the binding */
        fl_log_kv(FL_LOG_DEBUG, LOG, "aggregating the status failed", "object", FL_LOG_OBJ(kind, ns, name), "err",
                  err ? err : fl_strerror(rc), NULL); /* every Work status change repeats it: events report */
        fl_event(s->env.recorder, tmpl, "Warning", "AggregateStatusFailed", "%s", err ? err : fl_strerror(rc));
        fl_event(s->env.recorder, binding, "Warning", "AggregateStatusFailed", "%s", err ? err : fl_strerror(rc));
        rc = 0; /* until the template, its members or the customization change */
        goto done;
    }
    /* the roll-up of the suspension acknowledgements, for a tool that waits on the template */
    json_t *ost = json_object_get(out, "status");
    if (dispatching && json_is_object(ost)) {
        json_t *old = fl_condition_of(tmpl, FL_DISPATCHING_CONDITION);
        json_t *conds = json_object_get(ost, "conditions");
        if (!json_is_array(conds)) {
            conds = json_array();
            json_object_set_new(ost, "conditions", conds);
        }
        /* from what the template has, so that its transition time stays while the status does */
        if (old && !fl_condition_find(conds, FL_DISPATCHING_CONDITION))
            json_array_append_new(conds, fl_json_deep_copy(old));
        const char *reason = fl_json_str(dispatching, "reason");
        /* no observedGeneration: the binding's generation is not the template's */
        fl_condition_set(ost, FL_DISPATCHING_CONDITION, fl_json_str(dispatching, "status"), reason,
                         fl_json_str(dispatching, "message"), -1, fl_time_now_ms());
        if (!fl_json_same(json_object_get(old, "reason"), json_object_get(dispatching, "reason")) &&
            strcmp(reason, FL_DISPATCHING_REASON_PENDING))
            fl_event(s->env.recorder, tmpl, "Normal",
                     strcmp(reason, FL_DISPATCHING_REASON) ? "DispatchingSuspended" : "DispatchingResumed", "%s",
                     fl_json_str(dispatching, "message"));
    }
    if (fl_json_same(json_object_get(out, "status"), json_object_get(tmpl, "status")))
        goto done;
    fl_gvr gvr = {av, k->resource};
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    bool whole = fl_templates_status_in_object(s->env.templates, k);
    rc = whole ? FL_ENOTFOUND : fl_client_update_status(s->env.cp, &gvr, k->namespaced ? ns : NULL, out, NULL, NULL, &ce);
    if (rc == FL_ENOTFOUND && (whole || ce.http == 404) && fl_json_meta(tmpl, "name")) {
        /* a kind without a status subresource keeps status in the object itself */
        memset(&ce, 0, sizeof ce);
        rc = fl_client_update(s->env.cp, &gvr, k->namespaced ? ns : NULL, out, NULL, NULL, &ce);
    }
    if (rc == FL_ENOTFOUND)
        rc = 0;
    else if (rc && rc != FL_ECONFLICT)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the template status failed", "object", FL_LOG_OBJ(kind, ns, name), "err",
                  fl_errmsg(ce.message, rc), NULL);
done:
    free(err);
    json_decref(out);
    json_decref(tmpl);
    return rc;
}

/* The Dispatching roll-up (dispatching.h) on the binding's status st: how many target
 * clusters acknowledged what the binding's suspension asks. Only on bindings that are or
 * were suspended (a binding never suspended carries no such condition, and costs no write).
 * Returns the condition (new reference) for the template, or NULL. */
static json_t *rollup(statusctl *s, const json_t *b, json_t *st, const json_t *works, bool *change)
{
    if (!fl_dispatch_has_rollup(b))
        return NULL;
    json_t *old = fl_condition_find(json_object_get(st, "conditions"), FL_DISPATCHING_CONDITION);
    char *was = old ? fl_strdup(fl_json_str(old, "reason")) : NULL;
    fl_dispatch_rollup r;
    fl_dispatch_rollup_of(b, works, &r);
    const char *cs, *reason;
    char *msg;
    fl_dispatch_rollup_condition(&r, &cs, &reason, &msg);
    json_t *gen = json_object_get(json_object_get(b, "metadata"), "generation");
    *change |= fl_condition_set(st, FL_DISPATCHING_CONDITION, cs, reason, msg,
                                json_is_integer(gen) ? json_integer_value(gen) : -1, fl_time_now_ms());
    if ((!was || strcmp(was, reason)) && strcmp(reason, FL_DISPATCHING_REASON_PENDING))
        fl_event(s->env.recorder, b, "Normal",
                 strcmp(reason, FL_DISPATCHING_REASON) ? "DispatchingSuspended" : "DispatchingResumed", "%s", msg);
    free(was);
    free(msg);
    fl_dispatch_rollup_close(&r);
    return fl_json_deep_copy(fl_condition_find(json_object_get(st, "conditions"), FL_DISPATCHING_CONDITION));
}

static int reconcile(void *ctx, const char *key)
{
    statusctl *s = ctx;
    bool cluster_scoped = key[0] == 'C';
    const fl_gvr *gvr = cluster_scoped ? &CRBS : &RBS;
    if (!fl_informer_has_synced(s->works) || !fl_informer_has_synced(cluster_scoped ? s->crbs : s->rbs))
        return FL_ETIMEDOUT;
    json_t *b = NULL; /* whole: the informer leaves its aggregatedStatus out (fl_ctrl_informer) */
    fl_informer_get_whole(cluster_scoped ? s->crbs : s->rbs, key + 2, &b);
    if (!b || fl_json_meta(b, "deletionTimestamp")) {
        fl_status_lag_forget(s->lag, key);
        json_decref(b);
        return 0;
    }
    const json_t *spec = json_object_get(b, "spec"), *res = json_object_get(spec, "resource");
    char *wname = fl_names_work(fl_json_str(res, "kind") ? fl_json_str(res, "kind") : "", fl_json_str(res, "namespace"),
                                fl_json_str(res, "name") ? fl_json_str(res, "name") : "");
    json_t *items = json_array();
    size_t applied = 0, n = 0;
    json_t *names = target_names(b);
    json_t *works = json_object(); /* cluster -> its Work, for the suspension roll-up */
    fl_summary *sum = fl_summary_new();
    const char *cluster;
    json_t *c;
    json_object_foreach(names, cluster, c) {
        json_t *work = work_of(s, wname, cluster);
        if (work)
            json_object_set(works, cluster, work);
        json_t *it = item_for(cluster, work);
        bool ok = json_is_true(json_object_get(it, "applied"));
        applied += ok;
        n++;
        json_array_append_new(items, it);
        json_t *cl = NULL;
        fl_informer_get_key(s->clusters, cluster, &cl);
        const char *reason, *message;
        const char *state = fl_summary_cluster_state(work, fl_cluster_report(cl), &reason, &message);
        fl_summary_add(sum, cluster, ok, state, reason, message);
        json_decref(cl);
        json_decref(work);
    }
    json_decref(names);
    free(wname);

    /* the binding as it will be written: of its own only what changes (the status, its
     * conditions); the rest is shared with the informer's read-only copy */
    json_t *st;
    json_t *nb = fl_ctrl_status_copy(b, &st);
    /* what is stored is bounded: Karmada's items, the worst 100 of a larger fleet, and the summary;
     * the template's status aggregates every item */
    json_t *kept = fl_summary_bound_items(sum, items);
    const json_t *had = json_object_get(st, "aggregatedStatus");
    bool change = !fl_json_same(had, kept) && (had || json_array_size(kept)); /* none is [] */
    if (change)
        json_object_set(st, "aggregatedStatus", kept);
    json_decref(kept);
    json_t *summary = fl_summary_json(sum, json_object_get(st, "summary"), fl_time_now_ms());
    fl_summary_free(sum);
    if (!fl_json_same(summary, json_object_get(st, "summary"))) {
        json_object_set(st, "summary", summary);
        change = true;
    }
    json_decref(summary);
    if (n)
        change |= applied == n ? fl_condition_set(st, "FullyApplied", "True", "FullyAppliedSuccess",
                                                  "All works have been successfully applied", -1, fl_time_now_ms())
                               : fl_condition_set(st, "FullyApplied", "False", "FullyAppliedFailed",
                                                  "Failed to apply all works, see status.aggregatedStatus for details",
                                                  -1, fl_time_now_ms());
    json_t *dispatching = rollup(s, b, st, works, &change);
    json_decref(works);
    int rc = 0;
    if (change) {
        fl_client_error ce;
        /* handed over (the server keeps it uncopied); its metadata is b's */
        rc = fl_client_update_status_given(s->env.cp, gvr, fl_json_meta(b, "namespace"), nb, NULL, NULL, &ce);
        nb = NULL;
        if (rc == FL_ENOTFOUND)
            rc = 0;
        else if (rc && rc != FL_ECONFLICT)
            fl_log_kv(FL_LOG_WARN, LOG, "writing the binding status failed", "object",
                      FL_LOG_OBJ(fl_json_meta(b, "namespace") ? "ResourceBinding" : "ClusterResourceBinding",
                                 fl_json_meta(b, "namespace"), fl_json_meta(b, "name")),
                      "err", fl_errmsg(ce.message, rc), NULL);
    }
    if (rc == 0)
        rc = aggregate_template(s, b, items, dispatching);
    if (rc == 0)
        fl_status_lag_reflected(s->lag, key);
    json_decref(dispatching);
    json_decref(nb);
    json_decref(items);
    json_decref(b);
    return rc;
}

/* ---- lifecycle ---- */

static int statusctl_start(const fl_ctrl_env *env, void **state)
{
    statusctl *s = fl_calloc(1, sizeof *s);
    s->env = *env;
    s->q = fl_workqueue_new(NULL);
    s->lag = fl_status_lag_new("binding");
    pthread_mutex_init(&s->mu, NULL);
    s->on_cluster = json_object();
    fl_ctrl_resumable(env, s->q);
    s->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    s->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    s->works = fl_ctrl_informer(env, "work.karmada.io/v1alpha1", "works");
    s->clusters = fl_ctrl_informer(env, "cluster.karmada.io/v1alpha1", "clusters");
    fl_informer_handlers ch = {.on_update = cluster_updated, .ctx = s};
    fl_informer_add_handlers(s->clusters, &ch);
    fl_informer_handlers bh = {
        .on_add = binding_added, .on_update = binding_updated, .on_delete = binding_deleted, .ctx = s};
    fl_informer_add_handlers(s->rbs, &bh);
    fl_informer_add_handlers(s->crbs, &bh);
    fl_informer_handlers wh = {.on_add = work_added, .on_update = work_updated, .on_delete = work_deleted, .ctx = s};
    fl_informer_add_handlers(s->works, &wh);
    fl_template_handlers th = {.on_update = tmpl_updated, .ctx = s};
    fl_templates_subscribe(env->templates, &th);
    fl_ctrl_on_interp_change(env, interp_changed, s);
    s->workers = fl_ctrl_workers_start_batched(s->q, "bindingstatus", STATUS_WORKERS, KEYS_AT_ONCE, reconcile, s,
                                              (fl_informer *const[]){s->works, s->rbs, s->crbs, s->clusters, NULL});
    *state = s;
    return 0;
}

static void statusctl_stop(void *state)
{
    statusctl *s = state;
    fl_ctrl_workers_join(s->workers);
    fl_workqueue_free(s->q);
    fl_status_lag_free(s->lag);
    json_decref(s->on_cluster);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const fl_controller fl_binding_status_controller = {"binding-status", statusctl_start, statusctl_stop};
