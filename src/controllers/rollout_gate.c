/* rollout_gate.c - the hold rule of staged rollouts (rollout_gate.h), and the binding
 * controller's view of the strategies: it reads them from the shared informer and queues
 * the bindings of a strategy's policy when the strategy changes, so that a cluster released
 * in the strategy's status gets its Work written unsuspended at once. */
#include "controllers/rollout_gate.h"

#include <stdlib.h>
#include <string.h>

#include "controllers/names.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

struct fl_rollout_gate {
    fl_informer *strategies, *rbs, *crbs;
    fl_workqueue *q;
};

bool fl_rollout_names_policy(const json_t *strategy, const json_t *claimed)
{
    const json_t *ref = fl_json_path(strategy, "spec.policyRef");
    const char *kind = fl_json_str(ref, "kind"), *name = fl_json_str(ref, "name");
    if (!kind || !name)
        return false;
    if (!strcmp(kind, "ClusterPropagationPolicy")) {
        const char *n = fl_json_meta_map(claimed, "annotations", FL_CPP_NAME_ANNOTATION);
        return n && !strcmp(n, name);
    }
    const char *n = fl_json_meta_map(claimed, "annotations", FL_PP_NAME_ANNOTATION),
               *ns = fl_json_meta_map(claimed, "annotations", FL_PP_NAMESPACE_ANNOTATION),
               *sns = fl_json_meta(strategy, "namespace");
    return !strcmp(kind, "PropagationPolicy") && n && ns && sns && !strcmp(n, name) && !strcmp(ns, sns);
}

json_t *fl_rollout_governing(const json_t *strategies, const json_t *claimed)
{
    json_t *best = NULL;
    size_t i;
    json_t *s;
    json_array_foreach(strategies, i, s) {
        if (!fl_rollout_names_policy(s, claimed))
            continue;
        if (best) {
            int c = strcmp(fl_json_meta(s, "namespace"), fl_json_meta(best, "namespace"));
            if (c > 0 || (!c && strcmp(fl_json_meta(s, "name"), fl_json_meta(best, "name")) >= 0))
                continue;
        }
        best = s;
    }
    return best;
}

json_t *fl_rollout_entry(const json_t *strategy, const char *uid)
{
    size_t i;
    json_t *e;
    if (!uid)
        return NULL;
    json_array_foreach(fl_json_path(strategy, "status.rollouts"), i, e) {
        const char *u = fl_json_str(e, "uid");
        if (u && !strcmp(u, uid))
            return e;
    }
    return NULL;
}

/* The template generation a Work's first manifest carries, or -1. */
static json_int_t work_generation(const json_t *work)
{
    const json_t *m = json_array_get(fl_json_path(work, "spec.workload.manifests"), 0);
    const char *g = fl_json_meta_map(m, "annotations", FL_TEMPLATE_GENERATION_ANNOTATION);
    return g ? strtoll(g, NULL, 10) : -1;
}

bool fl_rollout_gate_holds(const json_t *strategy, const json_t *tmpl, const char *cluster, const json_t *work)
{
    json_int_t gen = fl_json_path_int(tmpl, "metadata.generation", 0);
    if (!strategy || gen <= 0 || fl_json_meta(strategy, "deletionTimestamp"))
        return false; /* no generation to roll out by: delivered as ever */
    const json_t *e = fl_rollout_entry(strategy, fl_json_meta(tmpl, "uid"));
    if (e && fl_json_path_int(e, "generation", 0) == gen) {
        if (json_is_true(json_object_get(e, "releaseAll")))
            return false;
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(e, "clusters"), i, c) {
            const char *n = fl_json_str(c, "name"), *st = fl_json_str(c, "state");
            if (n && !strcmp(n, cluster))
                return !st || !strcmp(st, FL_ROLLOUT_HELD);
        }
        return true; /* a cluster the rollout has not placed in a stage yet */
    }
    /* not (yet) recorded at this generation: what is delivered stays delivered */
    return !(work && work_generation(work) == gen && !json_is_true(fl_json_path(work, "spec.suspendDispatching")));
}

/* The strategy with the smallest namespace/name among those naming claimed's policy. */
json_t *fl_rollout_gate_strategy(fl_rollout_gate *g, const json_t *binding)
{
    bool cluster = fl_json_meta_map(binding, "annotations", FL_CPP_NAME_ANNOTATION) != NULL;
    const char *ns = cluster ? NULL : fl_json_meta_map(binding, "annotations", FL_PP_NAMESPACE_ANNOTATION);
    if (!cluster && !ns)
        return NULL;
    json_t *all = fl_informer_list(g->strategies, ns);
    json_t *best = json_incref(fl_rollout_governing(all, binding));
    json_decref(all);
    return best;
}

bool fl_rollout_gate_hold(fl_rollout_gate *g, const json_t *binding, const json_t *tmpl, const char *cluster,
                          fl_informer *works, const char *wname)
{
    json_t *s = fl_rollout_gate_strategy(g, binding), *work = NULL;
    if (!s)
        return false;
    char *wns = fl_names_execution_space(cluster);
    fl_informer_get(works, wns, wname, &work);
    if (work && fl_informer_bare(work)) { /* listed bare at a resumed start: its spec is read */
        char *key = fl_cat(wns, "/", wname, NULL);
        json_decref(work);
        work = NULL;
        fl_informer_get_whole(works, key, &work);
        free(key);
    }
    bool held = fl_rollout_gate_holds(s, tmpl, cluster, work);
    json_decref(work);
    json_decref(s);
    free(wns);
    return held;
}

typedef struct queue_walk {
    fl_rollout_gate *g;
    const json_t *strategy;
} queue_walk;

static void queue_if_named(void *ctx, json_t *binding)
{
    queue_walk *w = ctx;
    if (fl_rollout_names_policy(w->strategy, binding))
        fl_ctrl_queue_binding(w->g->q, binding);
}

static void strategy_event(fl_rollout_gate *g, const json_t *s)
{
    queue_walk w = {g, s};
    bool cluster = !strcmp(fl_json_path_str(s, "spec.policyRef.kind") ? fl_json_path_str(s, "spec.policyRef.kind")
                                                                      : "",
                           "ClusterPropagationPolicy");
    if (cluster) {
        fl_informer_each(g->crbs, NULL, queue_if_named, &w);
        fl_informer_each(g->rbs, NULL, queue_if_named, &w);
    } else {
        fl_informer_each(g->rbs, fl_json_meta(s, "namespace"), queue_if_named, &w);
    }
}

static void strategy_added(void *ctx, json_t *obj)
{
    strategy_event(ctx, obj);
}

static void strategy_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* what the rule reads: the rollouts and the policy named */
    if (fl_json_same(fl_json_path(old_obj, "status.rollouts"), fl_json_path(new_obj, "status.rollouts")) &&
        fl_json_same(fl_json_path(old_obj, "spec.policyRef"), fl_json_path(new_obj, "spec.policyRef")) &&
        !fl_json_meta(new_obj, "deletionTimestamp"))
        return;
    if (!fl_json_same(fl_json_path(old_obj, "spec.policyRef"), fl_json_path(new_obj, "spec.policyRef")))
        strategy_event(ctx, old_obj);
    strategy_event(ctx, new_obj);
}

fl_rollout_gate *fl_rollout_gate_new(const fl_ctrl_env *env, fl_informer *rbs, fl_informer *crbs, fl_workqueue *q)
{
    fl_rollout_gate *g = fl_calloc(1, sizeof *g);
    g->rbs = rbs;
    g->crbs = crbs;
    g->q = q;
    g->strategies = fl_ctrl_informer(env, FL_ROLLOUT_GVR_API_VERSION, FL_ROLLOUT_GVR_RESOURCE);
    fl_informer_handlers h = {.on_add = strategy_added, .on_update = strategy_updated, .on_delete = strategy_added,
                              .ctx = g};
    fl_informer_add_handlers(g->strategies, &h);
    return g;
}

void fl_rollout_gate_free(fl_rollout_gate *g)
{
    free(g);
}

fl_informer *fl_rollout_gate_informer(fl_rollout_gate *g)
{
    return g->strategies;
}
