/* rollout.c - the staged-rollout controller (docs/rollouts.md): drives each RolloutStrategy
 * (apps.flotilla.io/v1alpha1) over the templates its policy selects.
 *
 *     template change ─► binding controller writes the Works, suspended where the strategy
 *     holds the cluster (rollout_gate.h) ─► this controller releases clusters stage by stage
 *     in the strategy's status ─► the binding controller writes those Works unsuspended
 *
 * A pass over one strategy (queue key "ns/name") reads, for every binding of its policy, the
 * template, the target clusters, their Works and Clusters, from the shared caches; computes
 * each template's next rollout entry (rollout_stage.c, pure); writes the strategy's status
 * when it changed (pinned to the cached resourceVersion, so two passes never interleave) and,
 * only once that write succeeded, records the step's Events, on the strategy and the
 * template. The store is the truth: a restart lists the strategies and carries on from the
 * status, in the same stage, with the same clusters released.
 *
 * A rollout that fails with onFailure Rollback is first recorded RollingBack, then the
 * previous revision is restored onto the template (rollout_restore.c); the restored
 * generation is released everywhere at once. Killed between the two, the next pass restores.
 *
 * Passes are queued by changes of the strategy, of the policy's bindings, of their Works
 * (status: a cluster turning Current) and of Clusters' labels, and at the times a step waits
 * for (soak, deadline). */
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/names.h"
#include "controllers/rollout_gate.h"
#include "controllers/rollout_priv.h"
#include "controllers/templates.h"
#include "core/condition.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

#define LOG "rollout"
#define WORKERS 2
/* while a rollout runs, a pass at least this often (the events drive it; this is a net) */
#define RESYNC_MS 5000

static const fl_gvr STRATEGIES = {FL_ROLLOUT_GVR_API_VERSION, FL_ROLLOUT_GVR_RESOURCE};

typedef struct rolloutctl {
    fl_ctrl_env env;
    fl_informer *strategies, *rbs, *crbs, *works, *clusters;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
} rolloutctl;

/* ---- what queues a pass ---- */

static void queue_strategy(rolloutctl *c, const json_t *s)
{
    char *key = fl_informer_key(s);
    if (key)
        fl_workqueue_add(c->q, key);
    free(key);
}

static void strategy_added(void *ctx, json_t *obj)
{
    queue_strategy(ctx, obj);
}

static void strategy_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* our own status writes come back: only spec and annotations (ctl's requests) matter */
    const json_t *om = json_object_get(old_obj, "metadata"), *nm = json_object_get(new_obj, "metadata");
    if (fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) &&
        fl_json_same(json_object_get(om, "annotations"), json_object_get(nm, "annotations")))
        return;
    queue_strategy(ctx, new_obj);
}

/* Queue the strategies naming the policy that claimed binding. */
static void binding_event(rolloutctl *c, const json_t *binding)
{
    if (!binding)
        return;
    bool cluster = fl_json_meta_map(binding, "annotations", FL_CPP_NAME_ANNOTATION) != NULL;
    const char *ns = fl_json_meta_map(binding, "annotations", FL_PP_NAMESPACE_ANNOTATION);
    if (!cluster && !ns)
        return;
    json_t *all = fl_informer_list(c->strategies, cluster ? NULL : ns);
    size_t i;
    json_t *s;
    json_array_foreach(all, i, s) if (fl_rollout_names_policy(s, binding)) queue_strategy(c, s);
    json_decref(all);
}

static void binding_added(void *ctx, json_t *obj)
{
    binding_event(ctx, obj);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) ||
        !fl_json_same(fl_json_path(old_obj, "metadata.annotations"), fl_json_path(new_obj, "metadata.annotations")))
        binding_event(ctx, new_obj);
}

/* A Work changed (its status, mostly): its binding's strategies look again. */
static void work_event(rolloutctl *c, const json_t *work)
{
    json_t *all = fl_informer_list(c->strategies, NULL);
    size_t n = json_array_size(all);
    json_decref(all);
    if (!n)
        return; /* no strategy anywhere: the common case costs nothing more */
    const char *cname = fl_json_meta_map(work, "annotations", FL_CRB_NAME_ANNOTATION);
    json_t *binding = NULL;
    if (cname)
        fl_informer_get(c->crbs, NULL, cname, &binding);
    else
        fl_informer_get(c->rbs, fl_json_meta_map(work, "annotations", FL_RB_NAMESPACE_ANNOTATION),
                        fl_json_meta_map(work, "annotations", FL_RB_NAME_ANNOTATION), &binding);
    binding_event(c, binding);
    json_decref(binding);
}

static void work_added(void *ctx, json_t *obj)
{
    work_event(ctx, obj);
}

static void work_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(json_object_get(old_obj, "status"), json_object_get(new_obj, "status")) ||
        !fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        work_event(ctx, new_obj);
}

/* A Cluster's labels changed: the stages' selectors may place differently (a stage that
 * selected nothing). Rare; every strategy looks again. */
static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    rolloutctl *c = ctx;
    if (fl_json_same(fl_json_path(old_obj, "metadata.labels"), fl_json_path(new_obj, "metadata.labels")))
        return;
    json_t *all = fl_informer_list(c->strategies, NULL);
    size_t i;
    json_t *s;
    json_array_foreach(all, i, s) queue_strategy(c, s);
    json_decref(all);
}

/* ---- a pass ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The binding's target cluster names, sorted: a new array. */
static json_t *targets_of(const json_t *binding)
{
    const json_t *list = fl_json_path(binding, "spec.clusters");
    size_t n = json_array_size(list), k = 0;
    const char **names = fl_calloc(n ? n : 1, sizeof *names);
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) if (fl_json_str(t, "name")) names[k++] = fl_json_str(t, "name");
    qsort(names, k, sizeof *names, cmp_str);
    json_t *out = json_array();
    for (i = 0; i < k; i++)
        json_array_append_new(out, json_string(names[i]));
    free(names);
    return out;
}

/* The governed bindings of strategy s: a new array. */
static json_t *bindings_of(rolloutctl *c, const json_t *s)
{
    json_t *out = json_array();
    bool cluster = !strcmp(fl_json_path_str(s, "spec.policyRef.kind") ? fl_json_path_str(s, "spec.policyRef.kind")
                                                                      : "",
                           "ClusterPropagationPolicy");
    for (int b = 0; b < 2; b++) {
        if (!cluster && b)
            break;
        json_t *all = fl_informer_list(b ? c->crbs : c->rbs, cluster ? NULL : fl_json_meta(s, "namespace"));
        size_t i;
        json_t *x;
        json_array_foreach(all, i, x) if (fl_rollout_names_policy(s, x) && !fl_json_meta(x, "deletionTimestamp"))
            json_array_append(out, x);
        json_decref(all);
    }
    return out;
}

/* One template's step: the next entry (new reference), or NULL when the binding's template
 * is not there (yet). *tmpl_out: the template (new reference) for the events. */
static json_t *template_step(rolloutctl *c, const json_t *s, const json_t *binding, json_t *events, int64_t now,
                             int64_t *due, json_t **tmpl_out)
{
    *tmpl_out = NULL;
    const json_t *res = fl_json_path(binding, "spec.resource");
    const char *av = fl_json_str(res, "apiVersion"), *kind = fl_json_str(res, "kind"), *name = fl_json_str(res, "name"),
               *ns = fl_json_str(res, "namespace");
    const fl_template_kind *k = NULL;
    if (!av || !kind || !name || fl_templates_watch(c->env.templates, av, kind, 5000, &k))
        return NULL;
    json_t *tmpl = NULL;
    bool synced = false;
    fl_templates_get(c->env.templates, av, kind, ns, name, &tmpl, &synced);
    if (!tmpl)
        return NULL;
    json_t *targets = targets_of(binding);
    if (!json_array_size(targets)) { /* not scheduled yet: nothing to place in stages */
        json_decref(targets);
        json_decref(tmpl);
        return NULL;
    }
    char *wname = fl_names_work(kind, ns, name);
    json_t *works = json_object(), *clusters = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(targets, i, t) {
        const char *cl = json_string_value(t);
        char *wns = fl_names_execution_space(cl);
        char *wkey = fl_cat(wns, "/", wname, NULL);
        json_t *w = NULL, *cobj = NULL;
        fl_informer_get_whole(c->works, wkey, &w);
        if (w)
            json_object_set_new(works, cl, w);
        fl_informer_get(c->clusters, NULL, cl, &cobj);
        if (cobj)
            json_object_set_new(clusters, cl, cobj);
        free(wkey);
        free(wns);
    }
    fl_rollout_in in = {.strategy = s, .tmpl = tmpl, .targets = targets, .works = works, .clusters = clusters,
                        .now_ms = now};
    json_t *e = fl_rollout_advance(&in, fl_rollout_entry(s, fl_json_meta(tmpl, "uid")), events, due);
    json_decref(targets);
    json_decref(works);
    json_decref(clusters);
    free(wname);
    *tmpl_out = tmpl;
    return e;
}

/* The strategy's top level repeats the latest rollout's phase, stage and what it waits for;
 * its Progressing condition says whether anything is on its way, and if not why. */
static void summarize(json_t *st, const json_t *rollouts, json_int_t generation, int64_t now)
{
    const json_t *latest = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(rollouts, i, e) {
        const char *a = fl_json_str(e, "startTime"), *b = latest ? fl_json_str(latest, "startTime") : NULL;
        if (!latest || (a && b && strcmp(a, b) > 0))
            latest = e;
    }
    static const char *const keys[][2] = {{"phase", "phase"}, {"stageName", "currentStage"},
                                          {"waitingFor", "waitingFor"}, {"message", "message"}};
    for (size_t k = 0; k < 4; k++) {
        const char *v = fl_json_str(latest, keys[k][0]);
        if (v)
            json_object_set_new(st, keys[k][1], json_string(v));
        else
            json_object_del(st, keys[k][1]);
    }
    const char *phase = fl_json_str(latest, "phase");
    bool moving = phase && (!strcmp(phase, FL_RO_PROGRESSING) || !strcmp(phase, FL_RO_SOAKING) ||
                            !strcmp(phase, FL_RO_APPROVAL) || !strcmp(phase, FL_RO_ROLLING_BACK));
    const char *reason = fl_json_str(latest, "reason") && !moving ? fl_json_str(latest, "reason")
                                                                  : (phase ? phase : "NoRollout");
    const char *msg = fl_json_str(latest, moving ? "waitingFor" : "message");
    fl_condition_set(st, "Progressing", moving ? "True" : "False", reason, msg ? msg : "", generation, now);
}

static void record(rolloutctl *c, const json_t *s, const json_t *tmpl, const json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *type = fl_json_str(ev, "type"), *reason = fl_json_str(ev, "reason"),
                   *msg = fl_json_str(ev, "message");
        fl_event(c->env.recorder, s, type, reason, "%s", msg);
        if (tmpl)
            fl_event(c->env.recorder, tmpl, type, reason, "%s", msg);
        fl_log_kv(FL_LOG_INFO, LOG, msg, "strategy", FL_LOG_OBJ("RolloutStrategy", fl_json_meta(s, "namespace"),
                                                                 fl_json_meta(s, "name")), "reason", reason, NULL);
    }
}

/* Write st as the strategy's status (copy handed over); 0, or the write's error. */
static int write_status(rolloutctl *c, json_t *copy)
{
    fl_client_error ce = {0};
    const char *ns = fl_json_meta(copy, "namespace");
    char *where = fl_cat(ns ? ns : "", "/", fl_json_meta(copy, "name"), NULL);
    int rc = fl_client_update_status_given(c->env.cp, &STRATEGIES, ns, copy, NULL, NULL, &ce);
    if (rc && rc != FL_ECONFLICT && rc != FL_ENOTFOUND)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the strategy's status failed", "strategy", where, "err",
                  fl_errmsg(ce.message, rc), NULL);
    free(where);
    return rc == FL_ENOTFOUND ? 0 : rc;
}

/* The rollbacks the status asks for now: restore, or say why not (halted). Returns 0, or an
 * error to retry with. */
static int restore_pending(rolloutctl *c, const json_t *s, const json_t *tmpls)
{
    json_t *st = NULL, *copy = NULL;
    int rc = 0;
    size_t i;
    json_t *e;
    json_array_foreach(fl_json_path(s, "status.rollouts"), i, e) {
        const char *phase = fl_json_str(e, "phase");
        const json_t *tmpl = json_object_get(tmpls, fl_json_str(e, "uid") ? fl_json_str(e, "uid") : "");
        if (!phase || strcmp(phase, FL_RO_ROLLING_BACK) || !tmpl ||
            fl_json_path_int(tmpl, "metadata.generation", 0) != fl_json_path_int(e, "generation", 0))
            continue;
        int64_t rev = 0;
        char *why = NULL;
        int r = fl_rollout_restore(c->env.cp, tmpl, &rev, &why);
        if (!r && rev) {
            char *m = fl_asprintf("restored revision %lld", (long long)rev);
            fl_event(c->env.recorder, s, "Normal", "RevisionRestored", "%s/%s: %s", fl_json_str(e, "kind"),
                     fl_json_str(e, "name"), m);
            fl_event(c->env.recorder, tmpl, "Normal", "RevisionRestored", "%s", m);
            free(m);
        } else if (r == FL_ENOTFOUND) {
            /* nothing to go back to: the rollout halts where it is, and says so */
            if (!copy)
                copy = fl_ctrl_status_copy(s, &st);
            json_t *list = fl_json_deep_copy(json_object_get(st, "rollouts"));
            json_t *mine = json_array_get(list, i);
            json_object_set_new(mine, "phase", json_string(FL_RO_HALTED));
            json_object_set_new(mine, "reason", json_string("NoPreviousRevision"));
            json_object_set_new(mine, "message", json_string(why));
            json_object_set_new(st, "rollouts", list);
            summarize(st, list, fl_json_path_int(s, "metadata.generation", 0), fl_time_now_ms());
            fl_event(c->env.recorder, s, "Warning", "RollbackFailed", "%s", why);
        } else if (r) {
            fl_log_kv(FL_LOG_WARN, LOG, "rollback failed (retrying)", "err", why, NULL);
            rc = r;
        }
        free(why);
    }
    if (copy)
        rc = write_status(c, copy);
    return rc;
}

static int reconcile(void *ctx, const char *key)
{
    rolloutctl *c = ctx;
    json_t *s = NULL;
    fl_informer_get_key(c->strategies, key, &s);
    if (!s || fl_json_meta(s, "deletionTimestamp")) {
        json_decref(s); /* gone: nothing is held any more (rollout_gate.h) */
        return 0;
    }
    int64_t now = fl_time_now_ms(), due = 0;
    json_t *bindings = bindings_of(c, s), *rollouts = json_array(), *events = json_array(), *tmpls = json_object();
    bool running = false;
    size_t i;
    json_t *b;
    json_array_foreach(bindings, i, b) {
        json_t *tmpl = NULL, *evs = json_array();
        json_t *e = template_step(c, s, b, evs, now, &due, &tmpl);
        if (e) {
            const char *p = fl_json_str(e, "phase");
            running = running || (p && (!strcmp(p, FL_RO_PROGRESSING) || !strcmp(p, FL_RO_SOAKING) ||
                                        !strcmp(p, FL_RO_APPROVAL) || !strcmp(p, FL_RO_PAUSED)));
            json_array_append_new(rollouts, e);
            json_array_append_new(events, json_pack("{s:o, s:O?}", "events", evs, "tmpl", tmpl));
            if (fl_json_meta(tmpl, "uid"))
                json_object_set(tmpls, fl_json_meta(tmpl, "uid"), tmpl);
        } else {
            json_decref(evs);
        }
        json_decref(tmpl);
    }
    json_t *st = NULL, *copy = fl_ctrl_status_copy(s, &st);
    json_int_t gen = fl_json_path_int(s, "metadata.generation", 0);
    json_object_set_new(st, "observedGeneration", json_integer(gen));
    json_object_set(st, "rollouts", rollouts);
    summarize(st, rollouts, gen, now);
    int rc = 0;
    if (!fl_json_same(st, json_object_get(s, "status"))) {
        rc = write_status(c, copy);
        copy = NULL;
    }
    json_decref(copy);
    if (!rc) {
        json_array_foreach(events, i, b) record(c, s, json_object_get(b, "tmpl"), json_object_get(b, "events"));
        json_t *fresh = NULL; /* the restore reads the status it acts on: ours, just written */
        fl_informer_get_key(c->strategies, key, &fresh);
        if (fresh && fl_json_same(fl_json_path(fresh, "status.rollouts"), rollouts))
            rc = restore_pending(c, fresh, tmpls);
        else if (json_array_size(rollouts))
            fl_workqueue_add_after(c->q, key, 100); /* our write not in the cache yet */
        json_decref(fresh);
    }
    if (due)
        fl_workqueue_add_after(c->q, key, due > now ? due - now : 1);
    else if (running)
        fl_workqueue_add_after(c->q, key, RESYNC_MS);
    json_decref(tmpls);
    json_decref(events);
    json_decref(rollouts);
    json_decref(bindings);
    json_decref(s);
    return rc;
}

/* ---- lifecycle ---- */

static int rollout_start(const fl_ctrl_env *env, void **state)
{
    rolloutctl *c = fl_calloc(1, sizeof *c);
    c->env = *env;
    c->q = fl_workqueue_new(NULL);
    c->strategies = fl_ctrl_informer(env, STRATEGIES.api_version, STRATEGIES.resource);
    c->rbs = fl_ctrl_informer(env, "work.karmada.io/v1alpha2", "resourcebindings");
    c->crbs = fl_ctrl_informer(env, "work.karmada.io/v1alpha2", "clusterresourcebindings");
    c->works = fl_ctrl_informer(env, "work.karmada.io/v1alpha1", "works");
    c->clusters = fl_ctrl_informer(env, "cluster.karmada.io/v1alpha1", "clusters");
    fl_informer_handlers sh = {.on_add = strategy_added, .on_update = strategy_updated, .ctx = c};
    fl_informer_add_handlers(c->strategies, &sh);
    fl_informer_handlers bh = {.on_add = binding_added, .on_update = binding_updated, .ctx = c};
    fl_informer_add_handlers(c->rbs, &bh);
    fl_informer_add_handlers(c->crbs, &bh);
    fl_informer_handlers wh = {.on_add = work_added, .on_update = work_updated, .ctx = c};
    fl_informer_add_handlers(c->works, &wh);
    fl_informer_handlers ch = {.on_update = cluster_updated, .ctx = c};
    fl_informer_add_handlers(c->clusters, &ch);
    c->workers = fl_ctrl_workers_start_synced(c->q, "rollout", WORKERS, reconcile, c,
                                              (fl_informer *const[]){c->strategies, c->rbs, c->crbs, c->works,
                                                                     c->clusters, NULL});
    *state = c;
    return 0;
}

static void rollout_stop(void *state)
{
    rolloutctl *c = state;
    fl_ctrl_workers_join(c->workers);
    fl_workqueue_free(c->q);
    free(c);
}

const fl_controller fl_rollout_controller = {"rollout", rollout_start, rollout_stop};
