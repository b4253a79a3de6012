/* execution_push.c - the push controller of `flotilla server`: the execution engine
 * (execution.c) for every cluster whose syncMode is not Pull, its members reached through
 * fl_members (the Cluster's endpoint and Secret).
 *
 * It answers the engine's questions from a Cluster informer of its own, whose events
 * re-queue a cluster's Works when the Cluster appears, changes its spec (syncMode, endpoint,
 * suspendDispatching), starts going or goes; it hands the engine the member watches noted
 * at the last run (fl_ctrl_note), so that a restart resumes them; and a changed interpreter
 * customization re-queues the Works of its kind. Pull clusters are the agent's (agent.c),
 * which runs the same engine for its one cluster. */
#include "controllers/execution_priv.h"

#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/dispatching.h"
#include "controllers/events.h"
#include "controllers/members.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};
static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

typedef struct push {
    fl_ctrl_env env;
    fl_exec *engine;
    fl_recorder *recorder; /* holds its Events back while Works wait for delivery */
    fl_informer *clusters;
    fl_members *members;
} push;

/* Whether the push engine delivers to the Cluster cl: every sync mode but Pull */
static bool push_delivers(const json_t *cl)
{
    const char *mode = fl_json_str(fl_json_obj(cl, "spec"), "syncMode");
    return cl && !(mode && !strcmp(mode, "Pull"));
}

/* Deliver the Works of clusters that exist and are not in Pull mode (the agent's). */
static void push_cluster(void *ctx, const char *cluster, fl_exec_cluster *out)
{
    push *p = ctx;
    json_t *cl = NULL;
    fl_informer_get(p->clusters, NULL, cluster, &cl);
    out->present = cl != NULL;
    out->deliver = push_delivers(cl);
    out->deleting = cl && fl_json_meta(cl, "deletionTimestamp");
    out->paused = cl && json_is_true(json_object_get(fl_json_obj(cl, "spec"), "suspendDispatching"));
    out->pause_reported = cl && fl_condition_of(cl, FL_PAUSED_CONDITION) != NULL;
    out->generation = cl ? (long long)json_integer_value(json_object_get(fl_json_obj(cl, "metadata"), "generation")) : 0;
    json_decref(cl);
}

typedef struct push_each {
    void (*fn)(void *fctx, const char *cluster);
    void *fctx;
} push_each;

static void push_each_one(void *ctx, json_t *cl)
{
    push_each *e = ctx;
    if (push_delivers(cl) && !fl_json_meta(cl, "deletionTimestamp") && fl_json_meta(cl, "name"))
        e->fn(e->fctx, fl_json_meta(cl, "name"));
}

static void push_each_cluster(void *ctx, void (*fn)(void *fctx, const char *cluster), void *fctx)
{
    push *p = ctx;
    push_each e = {fn, fctx};
    fl_informer_each(p->clusters, NULL, push_each_one, &e);
}

static bool push_resumed(void *ctx, const json_t *work)
{
    push *p = ctx;
    return fl_ctrl_resumed_add(&p->env, work);
}

static json_t *push_marks(void *ctx, int64_t rev)
{
    (void)rev; /* the engine's own queue and watches say whether it is there */
    push *p = ctx;
    return fl_exec_marks(p->engine);
}

/* The member watches noted with the revision the server resumes at, of the clusters that are
 * as they were then (present, delivered to, not going, not changed since) */
static json_t *push_resumable(push *p, const json_t *noted)
{
    json_t *kept = json_array();
    size_t i;
    json_t *mk;
    json_array_foreach(noted, i, mk) {
        json_t *cl = NULL;
        const char *name = json_string_value(json_array_get(mk, 0));
        if (name && fl_informer_get(p->clusters, NULL, name, &cl) == 0 && push_delivers(cl) &&
            !fl_json_meta(cl, "deletionTimestamp") && fl_ctrl_resumed_add(&p->env, cl))
            json_array_append(kept, mk);
        json_decref(cl);
    }
    return kept;
}

static int push_member(void *ctx, const char *cluster, fl_client **out, char **err)
{
    push *p = ctx;
    return fl_members_client(p->members, cluster, out, err);
}

/* A Cluster appeared, changed (syncMode, endpoint, deletion) or went: its Works decide again. */
static void cluster_added(void *ctx, json_t *obj)
{
    push *p = ctx;
    fl_exec_requeue_cluster(p->engine, fl_json_meta(obj, "name"));
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* status writes (health probes) change nothing for delivery; where the live status comes
     * from (watch or metrics: controllers/metricsstatus.h) changes the member watches */
    const char *was = fl_json_meta_map(old_obj, "annotations", FL_STATUS_SOURCE_ANNOTATION);
    const char *is = fl_json_meta_map(new_obj, "annotations", FL_STATUS_SOURCE_ANNOTATION);
    if (fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) &&
        !fl_json_meta(new_obj, "deletionTimestamp") == !fl_json_meta(old_obj, "deletionTimestamp") &&
        !strcmp(was ? was : "", is ? is : ""))
        return;
    cluster_added(ctx, new_obj);
}

static void cluster_deleted(void *ctx, json_t *obj)
{
    cluster_added(ctx, obj);
}

/* The Cluster cache keeps no status (health probes rewrite it all the time) but the Paused
 * condition, so that a resume made while the server was down is acknowledged on restart. */
static void keep_paused_only(json_t *obj)
{
    fl_informer_drop_managed_fields(obj);
    json_t *st = json_object_get(obj, "status");
    json_t *c = fl_condition_find(json_object_get(st, "conditions"), FL_PAUSED_CONDITION);
    json_t *kept = c ? json_pack("{s:[O]}", "conditions", c) : NULL;
    if (kept)
        json_object_set_new(obj, "status", kept);
    else
        json_object_del(obj, "status");
}

static void push_stop(void *state)
{
    push *p = state;
    if (!p)
        return;
    if (p->clusters)
        fl_informer_stop(p->clusters); /* no handler touches the engine after this */
    fl_recorder_hold_while(p->recorder, NULL, NULL, 0); /* nor the recorder */
    fl_exec_free(p->engine);       /* workers read the (stopped) Cluster cache until here */
    fl_informer_free(p->clusters);
    free(p);
}

/* A customization or webhook for a kind changed: Works carrying that kind apply again
 * (retain) and report their status and health anew. */
static void push_interp_changed(void *ctx, const char *api_version, const char *kind)
{
    push *p = ctx;
    fl_exec_requeue_kind(p->engine, api_version, kind);
}

static int push_start(const fl_ctrl_env *env, void **state)
{
    push *p = fl_calloc(1, sizeof *p);
    *state = NULL;
    p->env = *env;
    p->members = env->members;
    fl_exec_config ec = {.cp = env->cp,
                         .interp = env->interp,
                         .recorder = env->recorder,
                         /* the Works the binding and status controllers cache too: once */
                         .works = fl_ctrl_informer(env, WORKS.api_version, WORKS.resource),
                         .rbs = fl_ctrl_informer(env, "work.karmada.io/v1alpha2", "resourcebindings"),
                         .crbs = fl_ctrl_informer(env, "work.karmada.io/v1alpha2", "clusterresourcebindings"),
                         .ops = {.cluster = push_cluster,
                                 .member = push_member,
                                 .each_cluster = push_each_cluster,
                                 .resumed = push_resumed,
                                 .ctx = p}};
    fl_informer_config cc = {
        .client = env->cp,
        .resource = CLUSTERS,
        .handlers = {.on_add = cluster_added, .on_update = cluster_updated, .on_delete = cluster_deleted, .ctx = p},
        .transform = keep_paused_only, /* delivery reads spec, deletion and the Paused condition */
    };
    int rc = fl_exec_new(&ec, &p->engine);
    if (!rc)
        rc = fl_informer_new(&cc, &p->clusters);
    if (!rc)
        rc = fl_informer_start(p->clusters);
    if (!rc) {
        /* Clusters first, so the Works' first reconciles know their clusters. Not fatal:
         * handlers and the resync catch up. */
        fl_informer_wait_synced(p->clusters, 5000);
        const json_t *noted = json_object_get(env->resumed_notes, FL_CTRL_NOTE_WATCHES);
        if (noted) {
            json_t *kept = push_resumable(p, noted);
            fl_exec_resume(p->engine, kept);
            json_decref(kept);
        }
        rc = fl_exec_start(p->engine);
    }
    if (!rc) {
        /* Events, like first statuses, come after a burst's deliveries */
        p->recorder = env->recorder;
        fl_exec_hold_events(p->engine, p->recorder);
    }
    if (rc) {
        push_stop(p);
        return rc;
    }
    fl_ctrl_on_interp_change(env, push_interp_changed, p);
    fl_ctrl_note(env, FL_CTRL_NOTE_WATCHES, push_marks, p);
    *state = p;
    return 0;
}

const fl_controller fl_execution_controller = {
    .name = "execution",
    .start = push_start,
    .stop = push_stop,
};
