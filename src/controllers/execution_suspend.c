/* execution_suspend.c - suspension: a Work whose dispatching is suspended, or whose cluster
 * is paused (the Cluster's spec.suspendDispatching), reaches nothing in its member, and its
 * status collection goes on.
 *
 * Instead of applying or removing, the reconcile reports what the member watches already
 * know of the Work's manifests (no request to the member) and acknowledges the stop with
 * the Work's Dispatching condition (dispatching.h). A paused cluster is acknowledged too,
 * with the Cluster's Paused condition, and that one must be true when written: no worker
 * may still be applying to the member. So every delivery counts itself in and out per
 * cluster (fl_exec_delivery_begin/_end), checking the pause in the same step under the
 * engine's mutex; the cluster's acknowledgement (queued as "@<cluster>") is written when
 * the count is zero, or by the last worker out. Part of the engine (execution_priv.h). */
#include "controllers/execution_priv.h"

#include <stdlib.h>

#include "controllers/dispatching.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

/* The Work is suspended or its cluster paused: report what the member watches already know
 * of its manifests (no request to the member) and acknowledge with the Dispatching
 * condition. Called with no apply of this Work in flight (the queue runs one reconcile
 * per key at a time), which is what makes the acknowledgement true. */
static int report_stopped(exec *x, const char *cluster, const json_t *work, const char *reason)
{
    fl_client *mc = NULL;
    char *emsg = NULL;
    json_t *statuses = NULL;
    if (fl_exec_member_client(x, cluster, &mc, &emsg) == 0) {
        statuses = json_array();
        json_t *manifests = json_object_get(fl_json_obj(fl_json_obj(work, "spec"), "workload"), "manifests");
        size_t i;
        json_t *m;
        json_array_foreach(manifests, i, m) {
            fl_exec_target t;
            fl_ws_watch *wt = NULL;
            json_t *observed = NULL;
            int grc = FL_ENOTFOUND;
            bool listed = false;
            if (fl_exec_target_init(mc, cluster, (int)i, m, &t, &emsg) == 0 &&
                fl_ws_watch_get(x->watches, cluster, mc, t.api_version, t.kind, t.resource, -1, &wt) == 0) {
                fl_informer *inf = fl_ws_watch_informer(wt);
                grc = fl_informer_get(inf, t.ns, t.name, &observed);
                listed = fl_informer_has_synced(inf) && fl_informer_complete(inf);
                fl_ws_watch_put(x->watches, wt);
            }
            const json_t *was = grc == FL_EEXPIRED ? fl_exec_entry_of(work, (int)i) : NULL;
            if (observed)
                json_array_append_new(statuses, fl_exec_manifest_entry(x, work, cluster, (int)i, &t, observed));
            else if (was) /* shed by its watch: the entry that records it is still true */
                json_array_append_new(statuses, fl_json_deep_copy(was));
            else if (grc == FL_ENOTFOUND && listed) /* gone from the member, and not put back while stopped */
                json_array_append_new(statuses, fl_exec_manifest_entry(x, work, cluster, (int)i, &t, NULL));
            json_decref(observed);
            free(emsg);
            emsg = NULL;
            fl_exec_target_close(&t);
        }
    } else {
        /* the member cannot be reached: what we last knew stays */
        statuses = fl_json_deep_copy(json_object_get(fl_json_obj(work, "status"), "manifestStatuses"));
    }
    free(emsg);
    return fl_exec_write_status(x, work, false, NULL, NULL, reason, statuses);
}

/* Count a worker in as delivering to cluster, unless the cluster is paused (false). */
bool fl_exec_delivery_begin(exec *x, const char *cluster)
{
    fl_exec_cluster cl = {0};
    pthread_mutex_lock(&x->mu);
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    if (!cl.paused) {
        json_t *n = json_object_get(x->inflight, cluster);
        json_object_set_new(x->inflight, cluster, json_integer(json_integer_value(n) + 1));
    }
    pthread_mutex_unlock(&x->mu);
    return !cl.paused;
}

/* Count the worker out; the last one out queues a Paused acknowledgement that waited. */
void fl_exec_delivery_end(exec *x, const char *cluster)
{
    bool ack = false;
    pthread_mutex_lock(&x->mu);
    json_int_t n = json_integer_value(json_object_get(x->inflight, cluster)) - 1;
    if (n > 0) {
        json_object_set_new(x->inflight, cluster, json_integer(n));
    } else {
        json_object_del(x->inflight, cluster);
        ack = json_object_get(x->want_ack, cluster) != NULL;
        json_object_del(x->want_ack, cluster);
    }
    pthread_mutex_unlock(&x->mu);
    if (ack) {
        char *key = fl_asprintf("%c%s", CLUSTER_KEY_PREFIX, cluster);
        fl_workqueue_add(x->q, key);
        free(key);
    }
}

/* Write the Cluster's Paused condition: True once nothing is being delivered to a paused
 * cluster, False once delivery is back (only when a Paused condition was there). */
static int write_paused(exec *x, const char *cluster, bool paused, long long generation)
{
    json_t *cl = NULL;
    fl_client_error ce = {0};
    int rc = fl_client_get(x->cp, &CLUSTERS, NULL, cluster, &cl, &ce);
    if (rc)
        return rc == FL_ENOTFOUND ? 0 : rc;
    json_t *st = fl_json_ensure_obj(cl, "status");
    if (!paused && !fl_condition_find(json_object_get(st, "conditions"), FL_PAUSED_CONDITION))
        goto out;
    char *msg = paused ? fl_asprintf("Delivery to cluster %s is paused: no Work is being applied to it.", cluster)
                       : fl_asprintf("Delivery to cluster %s is running.", cluster);
    bool changed = fl_condition_set(st, FL_PAUSED_CONDITION, paused ? "True" : "False",
                                    paused ? "Paused" : FL_DISPATCHING_REASON, msg, generation, fl_time_now_ms());
    free(msg);
    if (changed) {
        rc = fl_client_update_status(x->cp, &CLUSTERS, NULL, cl, NULL, NULL, &ce);
        if (rc && rc != FL_ECONFLICT)
            fl_log_kv(FL_LOG_WARN, "execution", "writing the Paused condition failed", "object",
                      FL_LOG_OBJ("Cluster", NULL, cluster), "cluster", cluster, "err", fl_errmsg(ce.message, rc), NULL);
        if (rc == 0)
            fl_log_kvf(FL_LOG_INFO, "execution",
                       FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, cluster), "cluster", cluster),
                       "delivery %s (generation %lld)", paused ? "paused" : "resumed", generation);
    }
out:
    json_decref(cl);
    return rc;
}

/* The cluster's Paused acknowledgement: written now, or, while workers are still
 * delivering to it, by the last of them to finish (fl_exec_delivery_end). */
int fl_exec_reconcile_cluster(exec *x, const char *cluster)
{
    fl_exec_cluster cl = {0};
    pthread_mutex_lock(&x->mu);
    x->ops.cluster(x->ops.ctx, cluster, &cl);
    bool wait = cl.paused && json_object_get(x->inflight, cluster);
    if (wait)
        json_object_set_new(x->want_ack, cluster, json_true());
    pthread_mutex_unlock(&x->mu);
    if (wait || !cl.present || !cl.deliver || cl.deleting || (!cl.paused && !cl.pause_reported))
        return 0;
    return write_paused(x, cluster, cl.paused, cl.generation);
}

/* Run fn (apply_work or remove_manifests: the only two that touch the member) for the Work,
 * unless it is suspended or its cluster paused: then acknowledge that instead. *ran says
 * whether fn ran; the result is fn's, or the acknowledgement's write. */
int fl_exec_deliver(exec *x, const char *cluster, const json_t *work, const fl_informer_src *src, bool suspended,
                   int (*fn)(exec *, const char *, const json_t *, const fl_informer_src *), bool *ran)
{
    *ran = false;
    if (suspended)
        return report_stopped(x, cluster, work, FL_DISPATCHING_REASON_SUSPENDED);
    if (!fl_exec_delivery_begin(x, cluster))
        return report_stopped(x, cluster, work, FL_DISPATCHING_REASON_CLUSTER_PAUSED);
    int rc = fn(x, cluster, work, src);
    fl_exec_delivery_end(x, cluster);
    *ran = true;
    return rc;
}
