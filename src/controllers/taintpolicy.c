/* taintpolicy.c - the cluster taint policy controller: ClusterTaintPolicies put taints on
 * Clusters and take them off as the Clusters' status conditions change (Karmada's
 * cluster-taint-policy-controller, pkg/controllers/taint).
 *
 * Queue keys: Cluster names. A Cluster is queued when it appears, and when its status
 * conditions change (Karmada's trigger) or its labels or placement fields do (ours: a
 * cluster that comes to match a policy's targetClusters is acted on then, not at its next
 * condition change). A policy created, or its spec changed, queues the Clusters its
 * targetClusters match. A deleted policy queues nothing: the taints it added stay, as in
 * Karmada.
 *
 * Reconcile: every policy, oldest first (creationTimestamp, then name, so that two
 * conflicting policies never take turns), is applied to a copy of the Cluster's taints:
 * when all its addOnConditions match the Cluster's conditions, each of its taints that is
 * not there by key and effect is added with timeAdded now; then, when all its
 * removeOnConditions match, the first taint of each key and effect is removed. An empty
 * list never matches; neither does a condition type the Cluster does not have, with In or
 * with NotIn. A taint already there keeps its value and timeAdded, so the only state is
 * in the store and a restart changes nothing.
 *
 * The cluster status controller (cluster.c) writes taints too: its own NoSchedule keys
 * cluster.karmada.io/not-ready and .../unreachable. Both controllers change only the
 * taints they own, on the Cluster as stored, with its resourceVersion, and do it again
 * from a fresh read on a conflict, so neither undoes the other's. A policy naming one of
 * those two keys with NoSchedule is not applied to it (ours: two writers of one taint
 * would take turns); the status controller already sets them from the Ready condition.
 *
 * Events on the Cluster, as Karmada records them: TaintClusterSucceed after a write,
 * TaintClusterFailed with the error when a write fails (the key is then retried). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "policy/cluster_affinity.h"

#define LOG "cluster-taint-policy"
#define WORKERS 1
#define WRITE_ATTEMPTS 5

static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

typedef struct ctpctl {
    fl_ctrl_env env;
    fl_informer *policies, *clusters;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
} ctpctl;

/* ---- matching ---- */

static const json_t *member_at(const json_t *obj, const char *a, const char *b)
{
    return json_object_get(json_object_get(obj, a), b);
}

static bool status_in(const json_t *values, const char *status)
{
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), status))
            return true;
    return false;
}

/* One MatchCondition against the Cluster's conditions. */
static bool condition_matches(const json_t *m, const json_t *conditions)
{
    const char *type = fl_json_str(m, "conditionType"), *op = fl_json_str(m, "operator");
    const json_t *values = json_object_get(m, "statusValues");
    if (!type || !op || (strcmp(op, "In") && strcmp(op, "NotIn")))
        return false;
    size_t i;
    json_t *c;
    json_array_foreach(conditions, i, c) {
        const char *ct = fl_json_str(c, "type"), *cs = fl_json_str(c, "status");
        if (!ct || strcmp(ct, type))
            continue;
        bool in = status_in(values, cs ? cs : "");
        return !strcmp(op, "In") ? in : !in;
    }
    return false; /* no condition of that type: no match, for In and NotIn alike */
}

/* All of them (ANDed); an empty or absent list never matches. */
static bool conditions_match(const json_t *matches, const json_t *conditions)
{
    if (json_array_size(matches) == 0)
        return false;
    size_t i;
    json_t *m;
    json_array_foreach(matches, i, m)
        if (!condition_matches(m, conditions))
            return false;
    return true;
}

static bool same_taint(const json_t *t, const char *key, const char *effect)
{
    const char *k = fl_json_str(t, "key"), *e = fl_json_str(t, "effect");
    return k && e && !strcmp(k, key) && !strcmp(e, effect);
}

/* The status controller's own taints (cluster.c), which policies leave to it. */
static bool status_owned(const char *key, const char *effect)
{
    return !strcmp(effect, "NoSchedule") &&
           (!strcmp(key, FL_TAINT_CLUSTER_NOT_READY) || !strcmp(key, FL_TAINT_CLUSTER_UNREACHABLE));
}

/* Add (add=true) or remove the policy's taints in taints (an array we own). */
static void apply_taints(json_t *taints, const json_t *policy_taints, bool add, const char *now)
{
    size_t i, j;
    json_t *pt, *t;
    json_array_foreach(policy_taints, i, pt) {
        const char *key = fl_json_str(pt, "key"), *effect = fl_json_str(pt, "effect");
        if (!key || !effect || status_owned(key, effect))
            continue;
        bool found = false;
        json_array_foreach(taints, j, t) {
            if (same_taint(t, key, effect)) {
                found = true;
                if (!add)
                    json_array_remove(taints, j);
                break;
            }
        }
        if (!add || found)
            continue;
        json_t *nt = json_pack("{s:s, s:s}", "key", key, "effect", effect);
        const char *value = fl_json_str(pt, "value");
        if (value && *value)
            json_object_set_new(nt, "value", json_string(value));
        json_object_set_new(nt, "timeAdded", json_string(now));
        json_array_append_new(taints, nt);
    }
}

static int by_creation(const void *a, const void *b)
{
    const json_t *pa = *(const json_t *const *)a, *pb = *(const json_t *const *)b;
    int64_t ta = fl_time_parse(fl_json_meta(pa, "creationTimestamp"));
    int64_t tb = fl_time_parse(fl_json_meta(pb, "creationTimestamp"));
    if (ta != tb)
        return ta < tb ? -1 : 1;
    const char *na = fl_json_meta(pa, "name"), *nb = fl_json_meta(pb, "name");
    return strcmp(na ? na : "", nb ? nb : "");
}

static bool targets(const json_t *policy, const json_t *cluster)
{
    bool match = false;
    char *err = NULL;
    if (fl_policy_cluster_affinity_match(member_at(policy, "spec", "targetClusters"), cluster, &match, &err)) {
        fl_log_kv(FL_LOG_WARN, LOG, "invalid targetClusters", "object",
                  FL_LOG_OBJ("ClusterTaintPolicy", NULL, fl_json_meta(policy, "name")), "err", err ? err : "invalid",
                  NULL);
        match = false;
    }
    free(err);
    return match;
}

/* The taints cluster should have after the policies (sorted), a new array. */
static json_t *desired_taints(const json_t *cluster, json_t *const *policies, size_t n, int64_t now_ms)
{
    const json_t *have = member_at(cluster, "spec", "taints");
    json_t *taints = json_is_array(have) ? json_deep_copy(have) : json_array();
    const json_t *conditions = member_at(cluster, "status", "conditions");
    char now[FL_TIME_BUF];
    fl_time_format(now_ms, false, now);
    for (size_t i = 0; i < n; i++) {
        const json_t *spec = json_object_get(policies[i], "spec");
        if (fl_json_meta(policies[i], "deletionTimestamp") || !targets(policies[i], cluster))
            continue;
        const json_t *pt = json_object_get(spec, "taints");
        if (conditions_match(json_object_get(spec, "addOnConditions"), conditions))
            apply_taints(taints, pt, true, now);
        if (conditions_match(json_object_get(spec, "removeOnConditions"), conditions))
            apply_taints(taints, pt, false, now);
    }
    return taints;
}

/* Karmada's rendering of a taint list in its event message (helper.GenerateTaintsMessage). */
static char *taints_message(const json_t *taints)
{
    if (json_array_size(taints) == 0)
        return fl_strdup("cluster now does not have taints");
    char *list = fl_strdup("");
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t) {
        const char *k = fl_json_str(t, "key"), *v = fl_json_str(t, "value"), *e = fl_json_str(t, "effect");
        char *item = v && *v ? fl_asprintf("%s{Key:%s,Value:%s,Effect:%s}", i ? "," : "", k ? k : "", v, e ? e : "")
                             : fl_asprintf("%s{Key:%s,Effect:%s}", i ? "," : "", k ? k : "", e ? e : "");
        char *next = fl_cat(list, item, NULL);
        free(list);
        free(item);
        list = next;
    }
    char *msg = fl_asprintf("cluster now has taints([%s])", list);
    free(list);
    return msg;
}

/* ---- reconcile ---- */

static int reconcile(void *ctx, const char *name)
{
    ctpctl *c = ctx;
    json_t *cluster = NULL;
    if (fl_informer_get_whole(c->clusters, name, &cluster) != 0)
        return 0; /* deleted */
    json_t *all = fl_informer_list(c->policies, NULL);
    size_t n = json_array_size(all);
    json_t **sorted = fl_calloc(n ? n : 1, sizeof *sorted);
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(all, i);
    qsort(sorted, n, sizeof *sorted, by_creation);
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    int rc = 0;
    for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        json_t *want = desired_taints(cluster, sorted, n, fl_time_now_ms());
        const json_t *have = member_at(cluster, "spec", "taints");
        if (fl_json_same(want, have) || (json_array_size(want) == 0 && !json_array_size(have))) {
            json_decref(want);
            rc = 0;
            break;
        }
        json_t *upd = json_deep_copy(cluster), *out = NULL;
        json_t *spec = fl_json_ensure_obj(upd, "spec");
        char *msg = taints_message(want);
        if (json_array_size(want))
            json_object_set_new(spec, "taints", want);
        else {
            json_object_del(spec, "taints");
            json_decref(want);
        }
        memset(&ce, 0, sizeof ce);
        rc = fl_client_update(c->env.cp, &CLUSTERS, NULL, upd, NULL, &out, &ce);
        if (rc == 0) {
            fl_log_kv(FL_LOG_INFO, LOG, msg, "object", FL_LOG_OBJ("Cluster", NULL, name), "cluster", name, NULL);
            fl_event(c->env.recorder, out ? out : upd, "Normal", "TaintClusterSucceed",
                     "Update Cluster(%s) with taints(%s) succeed", name, msg);
        }
        free(msg);
        json_decref(upd);
        json_decref(out);
        if (rc != FL_ECONFLICT)
            break;
        json_decref(cluster);
        cluster = NULL;
        if ((rc = fl_client_get(c->env.cp, &CLUSTERS, NULL, name, &cluster, &ce)) != 0)
            break;
    }
    if (rc == FL_ENOTFOUND)
        rc = 0;
    else if (rc) {
        const char *why = fl_errmsg(ce.message, rc);
        fl_log_kv(FL_LOG_WARN, LOG, "writing the taints failed", "object", FL_LOG_OBJ("Cluster", NULL, name), "cluster",
                  name, "err", why, NULL);
        if (cluster)
            fl_event(c->env.recorder, cluster, "Warning", "TaintClusterFailed", "%s", why);
    }
    free(sorted);
    json_decref(all);
    json_decref(cluster);
    return rc;
}

/* ---- handlers ---- */

static void queue_cluster(void *ctx, json_t *obj)
{
    const char *name = fl_json_meta(obj, "name");
    if (name)
        fl_workqueue_add(((ctpctl *)ctx)->q, name);
}

static bool placement_changed(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"provider", "region", "zone", "zones", NULL};
    const json_t *sa = json_object_get(a, "spec"), *sb = json_object_get(b, "spec");
    for (int i = 0; keys[i]; i++)
        if (!fl_json_same(json_object_get(sa, keys[i]), json_object_get(sb, keys[i])))
            return true;
    return !fl_json_same(member_at(a, "metadata", "labels"), member_at(b, "metadata", "labels"));
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(member_at(old_obj, "status", "conditions"), member_at(new_obj, "status", "conditions")) ||
        placement_changed(old_obj, new_obj))
        queue_cluster(ctx, new_obj);
}

typedef struct queue_walk {
    ctpctl *c;
    const json_t *policy;
} queue_walk;

static void queue_if_targeted(void *ctx, json_t *cluster)
{
    queue_walk *w = ctx;
    if (targets(w->policy, cluster))
        queue_cluster(w->c, cluster);
}

static void policy_added(void *ctx, json_t *obj)
{
    queue_walk w = {ctx, obj};
    fl_informer_each(((ctpctl *)ctx)->clusters, NULL, queue_if_targeted, &w);
}

static void policy_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        policy_added(ctx, new_obj);
}

static int ctp_start(const fl_ctrl_env *env, void **state)
{
    ctpctl *c = fl_calloc(1, sizeof *c);
    c->env = *env;
    c->q = fl_workqueue_new(NULL);
    c->clusters = fl_ctrl_informer(env, CLUSTERS.api_version, CLUSTERS.resource);
    c->policies = fl_ctrl_informer(env, "policy.karmada.io/v1alpha1", "clustertaintpolicies");
    fl_informer_handlers ch = {.on_add = queue_cluster, .on_update = cluster_updated, .ctx = c};
    fl_informer_add_handlers(c->clusters, &ch);
    fl_informer_handlers ph = {.on_add = policy_added, .on_update = policy_updated, .ctx = c};
    fl_informer_add_handlers(c->policies, &ph);
    c->workers = fl_ctrl_workers_start_synced(c->q, "taint-policy", WORKERS, reconcile, c,
                                              (fl_informer *const[]){c->clusters, c->policies, NULL});
    *state = c;
    return 0;
}

static void ctp_stop(void *state)
{
    ctpctl *c = state;
    fl_ctrl_workers_join(c->workers);
    fl_workqueue_free(c->q);
    free(c);
}

const fl_controller fl_cluster_taint_policy_controller = {"cluster-taint-policy", ctp_start, ctp_stop};
