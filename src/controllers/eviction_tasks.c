/* eviction_tasks.c - the graceful eviction tasks' lifecycle (Karmada's graceful eviction
 * controller): a task in a binding's spec.gracefulEvictionTasks keeps the old copy on the
 * cluster the binding left; this controller removes the task once its purge mode's
 * condition is met, and the binding controller then deletes the old Work as an orphan.
 *
 *   suppressDeletion true   kept (a person decides); false: removed now
 *   Never                   kept until a person removes it or sets suppressDeletion false
 *   Directly / Immediately  removed once the binding has no Work left in the old cluster (the
 *                           binding controller deletes it first and writes no new Work until
 *                           it is gone; no timeout, so a partitioned cluster never runs a copy
 *                           beside the new one), and then, as Gracefully, once the new copies
 *                           are healthy or the grace period is over: until then the labels it
 *                           preserved stay on the new copies
 *   Gracefully / Graciously removed when every cluster of spec.clusters reports the workload
 *                           Healthy for the binding's current generation, or gracePeriodSeconds
 *                           (default: fl_eviction_grace_seconds) after creationTimestamp
 *
 * A task without creationTimestamp gets it first. Timeouts are computed from the stored
 * timestamp, so a restart keeps them. Each removal is an EvictWorkloadFromClusterSucceed event
 * on the binding, and completes the task's entry in status.failoverHistory with the outcome:
 * NewCopyHealthy, GracePeriodExpired, RemovedByHand (suppressDeletion set false, or the task
 * removed by someone else), NoClusterAvailable (the binding has no cluster left). Nothing here depends on the old cluster being reachable or Ready: a task
 * whose cluster came back is judged like any other. Queue keys: "R|ns/name", "C|name". */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/eviction.h"
#include "controllers/eviction_priv.h"
#include "controllers/names.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define LOG "eviction-tasks"
#define TASK_WORKERS 1
#define TASK_BATCH 16 /* keys reconciled side by side: each removal waits for two commits */

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};
static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

typedef struct taskctl {
    fl_ctrl_env env;
    fl_informer *rbs, *crbs, *works;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
} taskctl;

static fl_informer *informer_of(taskctl *t, const char *key)
{
    return key[0] == 'C' ? t->crbs : t->rbs;
}

/* Does every cluster of spec.clusters report the workload Healthy, for the binding's
 * current generation? */
static bool all_healthy(const json_t *binding)
{
    const json_t *spec = json_object_get(binding, "spec"), *status = json_object_get(binding, "status");
    const json_t *clusters = json_object_get(spec, "clusters");
    json_int_t gen = fl_json_path_int(binding, "metadata.generation", -1);
    if (json_array_size(clusters) == 0 || fl_json_path_int(status, "schedulerObservedGeneration", -2) != gen)
        return false;
    size_t i, j;
    json_t *c, *a;
    json_array_foreach(clusters, i, c) {
        bool healthy = false;
        json_array_foreach(json_object_get(status, "aggregatedStatus"), j, a) {
            const char *cn = fl_json_str(a, "clusterName"), *h = fl_json_str(a, "health");
            if (cn && fl_json_str(c, "name") && !strcmp(cn, fl_json_str(c, "name")))
                healthy = h && !strcmp(h, "Healthy");
        }
        if (!healthy)
            return false;
    }
    return true;
}

/* Has the binding a Work left in cluster? (Directly: the old copy still there.) */
static bool work_left(taskctl *t, const json_t *binding, const char *cluster)
{
    const json_t *res = json_object_get(json_object_get(binding, "spec"), "resource");
    char *wname = fl_names_work(fl_json_str(res, "kind"), fl_json_str(res, "namespace"), fl_json_str(res, "name"));
    char *es = fl_names_execution_space(cluster);
    char rv[64];
    bool left = fl_informer_get_rv(t->works, es, wname, rv, sizeof rv) != FL_ENOTFOUND;
    free(es);
    free(wname);
    return left;
}

/* Whether task (of binding, at now) is done, and *outcome (static) why; *recheck_ms lowered
 * to when it may be next. */
static bool task_done(taskctl *t, const json_t *binding, const json_t *task, int64_t now, int64_t *recheck_ms,
                      const char **outcome)
{
    json_t *sup = json_object_get(task, "suppressDeletion");
    *outcome = "RemovedByHand";
    if (json_is_boolean(sup))
        return json_is_false(sup);
    const char *from = fl_json_str(task, "fromCluster");
    switch (fl_eviction_purge_mode(task)) {
    case 'N':
        return false;
    case 'D':
        if (!from || work_left(t, binding, from))
            return false;
        break;
    default:
        break;
    }
    json_t *gp = json_object_get(task, "gracePeriodSeconds");
    int64_t grace = json_is_integer(gp) && json_integer_value(gp) > 0 ? (int64_t)json_integer_value(gp)
                                                                        : fl_eviction_grace_seconds();
    int64_t end = fl_time_parse(fl_json_str(task, "creationTimestamp")) + grace * 1000;
    if (all_healthy(binding)) {
        *outcome = "NewCopyHealthy";
        return true;
    }
    if (now >= end) {
        *outcome = "GracePeriodExpired";
        return true;
    }
    if (end - now < *recheck_ms)
        *recheck_ms = end - now;
    return false;
}

/* Complete, as RemovedByHand, the open history entries of binding b (at key) whose task is
 * gone without this controller (someone removed it). Our own removals complete their
 * entries right after the write, from a fresh read, so a stale cache finds them closed. */
static void removed_by_hand(taskctl *t, const char *key, const json_t *b)
{
    const json_t *spec = json_object_get(b, "spec");
    json_t *gone = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(b, "status"), "failoverHistory"), i, e) {
        const char *from = fl_json_str(e, "fromCluster");
        if (fl_json_str(e, "completionTime") || !from)
            continue;
        const json_t *task = fl_eviction_task_of(spec, from);
        const char *ts = fl_json_str(task, "creationTimestamp"), *es = fl_json_str(e, "startTime");
        if (task && (!ts || !es || !strcmp(ts, es)))
            continue;
        if (!gone)
            gone = json_array();
        json_array_append_new(gone, json_pack("{s:s, s:s?, s:s}", "fromCluster", from, "startTime", es, "outcome",
                                              "RemovedByHand"));
    }
    if (!gone)
        return;
    /* give our own removal's completion the time to land first */
    json_t *fresh = NULL;
    fl_client_error ce;
    if (fl_client_get(t->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"), fl_json_meta(b, "name"),
                      &fresh, &ce) == 0 &&
        fl_json_same(json_object_get(fresh, "spec"), spec))
        fl_evict_history_complete(t->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"),
                                  fl_json_meta(b, "name"), gone);
    json_decref(fresh);
    json_decref(gone);
}

static int reconcile(void *ctx, const char *key)
{
    taskctl *t = ctx;
    if (!fl_informer_has_synced(informer_of(t, key)) || !fl_informer_has_synced(t->works))
        return FL_ETIMEDOUT;
    json_t *b = NULL;
    if (fl_informer_get_whole(informer_of(t, key), key + 2, &b))
        return 0;
    const json_t *tasks = json_object_get(json_object_get(b, "spec"), "gracefulEvictionTasks");
    if (fl_json_meta(b, "deletionTimestamp")) {
        json_decref(b);
        return 0;
    }
    removed_by_hand(t, key, b);
    /* the evictor's write added tasks: their history entries start here, so that an
     * eviction is one commit and a crash between the two loses no entry */
    json_t *unstarted = fl_evict_history_unstarted(b);
    if (unstarted) {
        int hrc = fl_evict_history_start(t->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"),
                                         fl_json_meta(b, "name"), unstarted);
        json_decref(unstarted);
        json_decref(b);
        return hrc; /* written: its event brings the binding back, newer */
    }
    if (json_array_size(tasks) == 0) {
        json_decref(b);
        return 0;
    }
    int64_t now = fl_time_now_ms(), recheck = INT64_MAX;
    json_t *keep = json_array(), *done = json_array(), *outcomes = json_array();
    bool changed = false;
    const char *outcome = NULL;
    size_t i;
    json_t *task;
    json_array_foreach(tasks, i, task) {
        if (fl_time_parse(fl_json_str(task, "creationTimestamp")) < 0) {
            char ts[FL_TIME_BUF];
            fl_time_format(now, false, ts);
            json_t *stamped = fl_json_deep_copy(task);
            json_object_set_new(stamped, "creationTimestamp", json_string(ts));
            json_array_append_new(keep, stamped);
            changed = true;
        } else if (task_done(t, b, task, now, &recheck, &outcome)) {
            json_array_append(done, task);
            json_array_append_new(outcomes, json_pack("{s:s?, s:s?, s:s, s:O}", "fromCluster",
                                                      fl_json_str(task, "fromCluster"), "startTime",
                                                      fl_json_str(task, "creationTimestamp"), "outcome", outcome,
                                                      "task", task));
            changed = true;
        } else {
            json_array_append(keep, task);
        }
    }
    int rc = 0;
    if (changed) {
        /* the spec alone: the status subresource is not written here */
        json_t *upd = fl_json_shallow_copy(b);
        json_object_del(upd, "status");
        json_t *spec = fl_json_shallow_copy(json_object_get(b, "spec"));
        if (json_array_size(keep))
            json_object_set(spec, "gracefulEvictionTasks", keep);
        else
            json_object_del(spec, "gracefulEvictionTasks");
        json_object_set_new(upd, "spec", spec);
        fl_client_error ce;
        rc = fl_client_update(t->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"), upd, NULL, NULL,
                              &ce);
        json_decref(upd);
        if (rc == 0) {
            json_array_foreach(done, i, task) {
                fl_log_kv(FL_LOG_INFO, LOG, "the eviction is over", "object",
                          FL_LOG_OBJ(key[0] == 'C' ? "ClusterResourceBinding" : "ResourceBinding", NULL, key + 2),
                          "cluster", fl_json_str(task, "fromCluster"), NULL);
                fl_event(t->env.recorder, b, "Normal", "EvictWorkloadFromClusterSucceed",
                         "Evict from cluster %s succeed.", fl_json_str(task, "fromCluster"));
                fl_event(t->env.recorder, b, "Normal", "FailoverCompleted", "the failover from cluster %s is over: %s",
                         fl_json_str(task, "fromCluster"),
                         fl_json_str(json_array_get(outcomes, i), "outcome"));
            }
            fl_evict_history_complete(t->env.cp, key[0] == 'C' ? &CRBS : &RBS, fl_json_meta(b, "namespace"),
                                      fl_json_meta(b, "name"), outcomes);
        } else if (rc == FL_ENOTFOUND || rc == FL_ECONFLICT) {
            rc = 0; /* gone, or a newer binding comes back */
        } else {
            fl_log_kv(FL_LOG_WARN, LOG, "updating the eviction tasks failed", "object",
                      FL_LOG_OBJ(key[0] == 'C' ? "ClusterResourceBinding" : "ResourceBinding", NULL, key + 2), "err",
                      fl_errmsg(ce.message, rc), NULL);
        }
    }
    if (!rc && recheck != INT64_MAX)
        fl_workqueue_add_after(t->q, key, recheck + 50);
    json_decref(keep);
    json_decref(done);
    json_decref(outcomes);
    json_decref(b);
    return rc;
}

/* ---- handlers ---- */

static void binding_event(void *ctx, json_t *obj)
{
    /* a binding a resumed first list leaves bare has no spec to look at: the reconcile
     * reads it whole (else a grace period running at a restart never ends) */
    if (fl_informer_bare(obj) ||
        json_array_size(json_object_get(json_object_get(obj, "spec"), "gracefulEvictionTasks")))
        fl_ctrl_queue_binding(((taskctl *)ctx)->q, obj);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* health arrives as status updates; a task removed by hand closes its history entry */
    if (json_array_size(json_object_get(json_object_get(old_obj, "spec"), "gracefulEvictionTasks")))
        fl_ctrl_queue_binding(((taskctl *)ctx)->q, new_obj);
    else
        binding_event(ctx, new_obj);
}

/* A Work gone: a Directly task of its binding may be over. */
static void work_deleted(void *ctx, json_t *obj)
{
    taskctl *t = ctx;
    char *key = fl_names_work_binding_key(obj);
    if (key)
        fl_workqueue_add(t->q, key);
    free(key);
}

/* ---- lifecycle ---- */

static int taskctl_start(const fl_ctrl_env *env, void **state)
{
    taskctl *t = fl_calloc(1, sizeof *t);
    t->env = *env;
    t->q = fl_workqueue_new(NULL);
    t->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    t->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    t->works = fl_ctrl_informer(env, WORKS.api_version, WORKS.resource);
    fl_informer_handlers bh = {.on_add = binding_event, .on_update = binding_updated, .ctx = t};
    fl_informer_add_handlers(t->rbs, &bh);
    fl_informer_add_handlers(t->crbs, &bh);
    fl_informer_handlers wh = {.on_delete = work_deleted, .ctx = t};
    fl_informer_add_handlers(t->works, &wh);
    t->workers = fl_ctrl_workers_start_batched(t->q, "evict-tasks", TASK_WORKERS, TASK_BATCH, reconcile, t,
                                               (fl_informer *const[]){t->works, t->rbs, t->crbs, NULL});
    *state = t;
    return 0;
}

static void taskctl_stop(void *state)
{
    taskctl *t = state;
    fl_ctrl_workers_join(t->workers);
    fl_workqueue_free(t->q);
    free(t);
}

const fl_controller fl_eviction_tasks_controller = {"eviction-tasks", taskctl_start, taskctl_stop};
