/* binding.c - the binding controller: one Work per target cluster of each ResourceBinding and
 * ClusterResourceBinding. The third arrow of the data path (DESIGN.md):
 *
 *     binding (spec.clusters from the scheduler) ──► Work in karmada-es-<cluster>, per cluster
 *
 * For each target cluster (spec.clusters, plus the clusters of spec.requiredBy for a
 * dependency's attached binding) the template becomes a manifest:
 *   1. a copy of the template, pruned of what its API server owns (interp/prune.h);
 *   2. replicas revised to the cluster's share (interpreter ReviseReplica), when the binding
 *      divides replicas (a customization changed for the kind renders its bindings again;
 *      a failing one is a SyncWorkFailed event carrying the interpreter's message);
 *   3. OverridePolicy / ClusterOverridePolicy rules for that cluster (policy/override.h);
 *   4. Karmada's bookkeeping: the binding's permanent ID label, the template's uid and
 *      generation, the Work's name and namespace, the conflict resolution, and the lists of
 *      managed label and annotation keys (which the member's Retain uses).
 * A Work is written only when what it would contain differs from the cached one: created
 * when absent, else sent as a merge patch of what we own of it (spec, our labels and
 * annotations) without a resourceVersion precondition, so that the members' status writes to
 * the same Work do not make it conflict (binding_update.c); a cached copy older than our own
 * last write is waited for instead of compared with (copy_behind). Works of
 * clusters that are no longer targets are deleted, but for those a graceful eviction task
 * keeps (spec.gracefulEvictionTasks, purge mode Gracefully or Never): the old copy stays as
 * it was, no longer rendered, until the task is removed (eviction_tasks.c). A Directly task's
 * Work is deleted at once, and while a Work of the binding is left in a Directly task's
 * cluster no Work of it is written anywhere: two copies never run at once. The binding
 * carries our finalizer; when it goes, its Works go first.
 *
 * The Works of one binding are written in parallel (fl_parallel): a Deployment sent to
 * 100 clusters costs a few group commits instead of 100 sequential round trips.
 *
 * Which Works belong to which binding is indexed from the Works' annotations as the Work
 * informer sees them, so finding a binding's Works never scans every Work. A Work a resumed
 * start listed bare (its name and revision alone: fl_informer_config.resume_bare) is indexed
 * by its name until its binding claims it: every Work of a binding has the one name
 * (fl_names_work of its template), one per execution space.
 *
 * Queue keys: "R|ns/name" (ResourceBinding), "C|name" (ClusterResourceBinding). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/binding_update.h"
#include "controllers/controller.h"
#include "controllers/dispatching.h"
#include "controllers/events.h"
#include "controllers/eviction.h"
#include "controllers/migration.h"
#include "controllers/names.h"
#include "controllers/rollout_gate.h"
#include "controllers/templates.h"
#include "core/metrics.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/keep.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/parallel.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "interp/interp.h"
#include "interp/prune.h"
#include "policy/cluster_affinity.h"
#include "policy/override.h"

#define LOG "binding"
#define BINDING_WORKERS 4
/* keys each worker reconciles side by side on the parallel pool: most of a reconcile is
 * waiting for its writes' commits (a decision or a render is one or two), and a thousand
 * bindings moved at once waited for them in line (fl_ctrl_workers_start_batched) */
#define KEYS_AT_ONCE 4
#define WRITE_THREADS 16
/* ours: what the Work was rendered from, and what it was as we wrote it (rendered_from) */
#define RENDERED_FROM_ANNOTATION "flotilla.io/rendered-from"

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};
static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

typedef struct bindctl {
    fl_ctrl_env env;
    fl_informer *rbs, *crbs, *works, *ops, *cops, *clusters;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    fl_rollout_gate *gate; /* staged rollouts: which targets their strategy holds back */
    pthread_mutex_t mu;
    json_t *index; /* binding key ("R|ns/name" / "C|name") -> {work key: true} */
    json_t *bare;  /* Works listed bare: work name -> {work key: true} (under mu) */
    json_t *gone;  /* while bare has any: binding key -> its Works' name, of a binding
                    * deleted before it claimed them (under mu) */
    json_t *echo;  /* work key -> content_digest() of what we last wrote to it (under mu) */
    json_t *written; /* work key -> the resourceVersion our last write of it left, until the
                      * Work cache holds that write (under mu) */
} bindctl;

/* ---- the Work index ---- */

/* Take the Work of key wk out of the bare ones (under mu). */
static void bare_forget_locked(bindctl *b, const char *wk)
{
    const char *slash = strchr(wk, '/');
    json_t *set = json_object_get(b->bare, slash ? slash + 1 : wk);
    if (!set)
        return;
    json_object_del(set, wk);
    if (!json_object_size(set))
        json_object_del(b->bare, slash ? slash + 1 : wk);
    if (!json_object_size(b->bare))
        json_object_clear(b->gone);
}

static void index_put(bindctl *b, const json_t *work, bool present)
{
    char *bk = fl_names_work_binding_key(work), *wk = fl_informer_key(work);
    if (wk && !bk && present && fl_informer_bare(work)) { /* nothing to index it by */
        pthread_mutex_lock(&b->mu);
        fl_keep_begin(); /* the index lives as long as the Works */
        json_t *set = json_object_get(b->bare, fl_json_meta(work, "name"));
        if (!set) {
            set = json_object();
            json_object_set_new(b->bare, fl_json_meta(work, "name"), set);
        }
        json_object_set_new(set, wk, json_true());
        fl_keep_end();
        pthread_mutex_unlock(&b->mu);
    } else if (wk) {
        pthread_mutex_lock(&b->mu);
        fl_keep_begin();
        bare_forget_locked(b, wk); /* whole now, or gone */
        json_t *set = bk ? json_object_get(b->index, bk) : NULL;
        if (bk && present) {
            if (!set) {
                set = json_object();
                json_object_set_new(b->index, bk, set);
            }
            json_object_set_new(set, wk, json_true());
        } else if (set) {
            json_object_del(set, wk);
            if (!json_object_size(set))
                json_object_del(b->index, bk);
        }
        fl_keep_end();
        pthread_mutex_unlock(&b->mu);
    }
    free(bk);
    free(wk);
}

/* The binding of key bk claims the Works listed bare with its Works' name (wname, may be
 * NULL): indexed under bk from now on. */
static void claim_bare(bindctl *b, const char *bk, const char *wname)
{
    pthread_mutex_lock(&b->mu);
    json_t *set = json_object_size(b->bare) ? json_object_get(b->bare, wname ? wname : "") : NULL;
    if (set) {
        json_t *owned = json_object_get(b->index, bk);
        if (!owned) {
            owned = json_object();
            json_object_set_new(b->index, bk, owned);
        }
        json_object_update(owned, set);
        json_object_del(b->bare, wname);
        if (!json_object_size(b->bare))
            json_object_clear(b->gone);
    }
    pthread_mutex_unlock(&b->mu);
}

/* The name of the Works of binding (from its spec.resource; heap), or NULL. */
static char *works_name(const json_t *binding)
{
    const json_t *res = json_object_get(json_object_get(binding, "spec"), "resource");
    const char *kind = fl_json_str(res, "kind"), *name = fl_json_str(res, "name");
    return kind && name ? fl_names_work(kind, fl_json_str(res, "namespace"), name) : NULL;
}

/* The keys ("ns/name") of the Works indexed under binding key bk: a new array. */
static json_t *index_get(bindctl *b, const char *bk)
{
    json_t *out = json_array();
    pthread_mutex_lock(&b->mu);
    const char *wk;
    json_t *v;
    json_object_foreach(json_object_get(b->index, bk), wk, v) json_array_append_new(out, json_string(wk));
    pthread_mutex_unlock(&b->mu);
    return out;
}

/* ---- our own writes coming back ---- */

/* A digest of what we write in a Work (spec, labels, annotations): key order does not
 * matter, so the object we sent and the one the watch brings back digest the same. */
static uint64_t content_digest(const json_t *work)
{
    const json_t *md = json_object_get(work, "metadata");
    return fl_json_hash(json_object_get(work, "spec")) * 31 +
           fl_json_hash(json_object_get(md, "labels")) * 7 + fl_json_hash(json_object_get(md, "annotations"));
}

/* Record what we are about to write to a Work (before the request: its watch event may
 * come back before the answer does). */
static void remember_echo(bindctl *b, const char *wk, const json_t *work)
{
    uint64_t h = content_digest(work);
    pthread_mutex_lock(&b->mu);
    fl_keep_begin(); /* kept as long as the Work */
    json_object_set_new(b->echo, wk, json_integer((json_int_t)h));
    fl_keep_end();
    pthread_mutex_unlock(&b->mu);
}

/* Is this Work, as an event brings it, exactly what we last wrote? Then there is nothing
 * to put right, and re-rendering the binding (100 Works for a template sent to 100
 * clusters, once per Work it just wrote) would be wasted. */
static bool is_echo(bindctl *b, const json_t *work)
{
    char *wk = fl_informer_key(work);
    bool echo = false;
    if (wk) {
        uint64_t h = content_digest(work);
        pthread_mutex_lock(&b->mu);
        json_t *mine = json_object_get(b->echo, wk);
        echo = mine && (uint64_t)json_integer_value(mine) == h;
        pthread_mutex_unlock(&b->mu);
    }
    free(wk);
    return echo;
}

static void forget_echo(bindctl *b, const json_t *work)
{
    char *wk = fl_informer_key(work);
    if (wk) {
        pthread_mutex_lock(&b->mu);
        json_object_del(b->echo, wk);
        json_object_del(b->written, wk);
        pthread_mutex_unlock(&b->mu);
    }
    free(wk);
}

/* Note the resourceVersion our write of the Work at wk left (stored: the server's answer). */
static void note_written(bindctl *b, const char *wk, const json_t *stored)
{
    const char *rvs = fl_json_meta(stored, "resourceVersion");
    json_int_t rv = rvs ? strtoll(rvs, NULL, 10) : 0;
    if (rv <= 0)
        return;
    pthread_mutex_lock(&b->mu);
    fl_keep_begin(); /* kept until the cache holds the write, or the Work goes */
    json_object_set_new(b->written, wk, json_integer(rv));
    fl_keep_end();
    pthread_mutex_unlock(&b->mu);
}

/* Is have, the Work cache's copy of the Work at wk, older than our own last write of it?
 * Then what the copy says is not what the Work holds: a render compared with it could find
 * nothing to write while the Work still holds what we wrote last (an override a deleted
 * policy had added), and the cache's event of that write, being our echo, would not bring
 * the binding back. Such a target waits for the cache. The note goes once the cache holds
 * the write. */
static bool copy_behind(bindctl *b, const char *wk, const json_t *have)
{
    const char *rvs = fl_json_meta(have, "resourceVersion");
    json_int_t rv = rvs ? strtoll(rvs, NULL, 10) : 0;
    pthread_mutex_lock(&b->mu);
    json_t *w = json_object_get(b->written, wk);
    bool behind = w && rv < json_integer_value(w);
    if (w && !behind)
        json_object_del(b->written, wk);
    pthread_mutex_unlock(&b->mu);
    return behind;
}

/* ---- handlers ---- */

static void binding_added(void *ctx, json_t *obj)
{
    bindctl *b = ctx;
    if (!fl_ctrl_resumed_add(&b->env, obj))
        fl_ctrl_queue_binding(b->q, obj);
}

/* A binding gone while Works listed bare are left: what names its Works, for its reconcile */
static void binding_deleted(void *ctx, json_t *obj)
{
    bindctl *b = ctx;
    char *key = fl_names_binding_key(obj);
    pthread_mutex_lock(&b->mu);
    if (key && json_object_size(b->bare)) {
        char *wname = works_name(obj);
        if (wname)
            json_object_set_new(b->gone, key, json_string(wname));
        free(wname);
    }
    pthread_mutex_unlock(&b->mu);
    if (key)
        fl_workqueue_add(b->q, key);
    free(key);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* status writes (the aggregation's) change nothing here */
    if (fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")) &&
        fl_json_same(json_object_get(json_object_get(old_obj, "metadata"), "deletionTimestamp"),
                   json_object_get(json_object_get(new_obj, "metadata"), "deletionTimestamp")) &&
        fl_json_same(json_object_get(json_object_get(old_obj, "metadata"), "finalizers"),
                   json_object_get(json_object_get(new_obj, "metadata"), "finalizers")) &&
        fl_migration_marks_same(old_obj, new_obj))
        return;
    fl_ctrl_queue_binding(((bindctl *)ctx)->q, new_obj);
}

static void work_event(bindctl *b, const json_t *work)
{
    char *bk = fl_names_work_binding_key(work);
    if (bk)
        fl_workqueue_add(b->q, bk);
    free(bk);
}

static void work_added(void *ctx, json_t *obj)
{
    index_put(ctx, obj, true);
}

/* Only changes to what we wrote matter (a user edited or deleted a Work); the execution
 * controller's status and finalizer writes do not. */
static void work_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    index_put(ctx, new_obj, true);
    /* most updates are status writes: compare first, then (the costlier digest) ask whether
     * the change is our own write coming back. The same generation is the same spec (a
     * Work's status is a subresource: only spec changes move it). */
    const json_t *om = json_object_get(old_obj, "metadata"), *nm = json_object_get(new_obj, "metadata");
    const json_t *og = json_object_get(om, "generation"), *ng = json_object_get(nm, "generation");
    bool same_spec = json_is_integer(og) && json_is_integer(ng)
                         ? json_integer_value(og) == json_integer_value(ng)
                         : fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec"));
    if (same_spec && fl_json_same(json_object_get(om, "labels"), json_object_get(nm, "labels")))
        return;
    if (!is_echo(ctx, new_obj))
        work_event(ctx, new_obj);
}

static void work_deleted(void *ctx, json_t *obj)
{
    index_put(ctx, obj, false);
    forget_echo(ctx, obj);
    work_event(ctx, obj);
}

/* A template changed: its binding renders again. */
static void tmpl_event(void *ctx, const fl_template_kind *k, json_t *obj)
{
    bindctl *b = ctx;
    const char *name = fl_json_meta(obj, "name");
    if (!name)
        return;
    char *key = fl_names_template_binding_key(k->kind, k->namespaced, fl_json_meta(obj, "namespace"), name);
    fl_workqueue_add(b->q, key);
    free(key);
}

static void tmpl_added(void *ctx, const fl_template_kind *k, json_t *obj)
{
    if (!fl_ctrl_resumed_add(&((bindctl *)ctx)->env, obj))
        tmpl_event(ctx, k, obj);
}

static void tmpl_updated(void *ctx, const fl_template_kind *k, json_t *old_obj, json_t *new_obj)
{
    /* only what goes into a manifest: not status, not the resourceVersion alone */
    json_t *a = fl_json_deep_copy(old_obj), *c = fl_json_deep_copy(new_obj);
    fl_prune(a);
    fl_prune(c);
    bool same = fl_json_same(a, c) && fl_json_same(json_object_get(json_object_get(old_obj, "metadata"), "generation"),
                                                json_object_get(json_object_get(new_obj, "metadata"), "generation"));
    json_decref(a);
    json_decref(c);
    if (same)
        return;
    /* Edits reach members while a policy holds the template, or while workloads depend on it
     * (an attached binding); a released template's binding keeps what it delivered, as
     * Karmada's does, until the binding itself changes. */
    const json_t *labels = json_object_get(json_object_get(new_obj, "metadata"), "labels");
    bool claimed = fl_json_str(labels, FL_PP_ID_LABEL) || fl_json_str(labels, FL_CPP_ID_LABEL);
    if (!claimed) {
        bindctl *b = ctx;
        char *bname = fl_names_binding(k->kind, fl_json_meta(new_obj, "name"));
        json_t *binding = NULL;
        fl_informer_get(k->namespaced ? b->rbs : b->crbs, k->namespaced ? fl_json_meta(new_obj, "namespace") : NULL,
                        bname, &binding);
        free(bname);
        claimed = json_array_size(json_object_get(json_object_get(binding, "spec"), "requiredBy")) > 0;
        json_decref(binding);
    }
    if (claimed)
        tmpl_event(ctx, k, new_obj);
}

/* Overrides or cluster labels changed: every binding may render differently. Rare events;
 * a full pass is simpler than working out which bindings they concern, and writes nothing
 * where nothing changed. */
static void requeue_all(bindctl *b)
{
    fl_ctrl_resume_broad(&b->env);
    fl_ctrl_queue_bindings(b->q, b->rbs, b->crbs);
}

static void policy_added(void *ctx, json_t *obj)
{
    if (!fl_ctrl_resumed_add(&((bindctl *)ctx)->env, obj))
        requeue_all(ctx);
}

static void policy_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        requeue_all(ctx);
}

static void cluster_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* OverridePolicies pick clusters by these; taints and status change no manifest */
    if (fl_policy_cluster_affinity_fields_changed(old_obj, new_obj))
        requeue_all(ctx);
}

/* A customization or webhook for a kind changed: its bindings render again (ReviseReplica
 * may answer differently); Works that come out the same are not written. */
static void interp_changed(void *ctx, const char *api_version, const char *kind)
{
    bindctl *b = ctx;
    fl_ctrl_resume_broad(&b->env);
    fl_ctrl_queue_bindings_of(b->q, b->rbs, b->crbs, api_version, kind);
}

/* ---- rendering ---- */

/* Sorted keys of map joined with ',' (plus extra keys), as Karmada records managed keys. */
static char *managed_keys(const json_t *map, const char *const *extra, size_t nextra)
{
    size_t n = json_object_size(map) + nextra, k = 0;
    const char **v = fl_calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < nextra; i++)
        v[k++] = extra[i];
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)map, key, val) {
        bool dup = false;
        for (size_t i = 0; i < nextra; i++)
            dup |= !strcmp(extra[i], key);
        if (!dup)
            v[k++] = key;
    }
    for (size_t i = 1; i < k; i++) /* insertion sort: maps are small */
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    size_t len = 1;
    for (size_t i = 0; i < k; i++)
        len += strlen(v[i]) + 1;
    char *out = fl_calloc(1, len), *p = out;
    for (size_t i = 0; i < k; i++)
        p += sprintf(p, "%s%s", i ? "," : "", v[i]);
    free(v);
    return out;
}

typedef struct target {
    const char *cluster;
    int64_t replicas; /* 0 when the binding leaves it out (Karmada omits zero) */
    bool held;        /* a staged rollout holds the template's generation back (rollout_gate.h) */
} target;

typedef struct render {
    bindctl *b;
    const json_t *binding, *tmpl, *policies;
    bool cluster_scoped;
    const char *binding_id;
    target *targets;
    int n;
    char *wname;
    bool workload; /* the binding has replicas or replica requirements */
    bool status_moves_generation; /* the template's kind has no status subresource */
    /* With no override policy around, every target's manifest is the pruned, revised
     * template: made once per distinct replica count (before the parallel writes) and
     * shared read-only by the Works, each with a metadata of its own. NULL: per target. */
    json_t **shared;
    int *shared_rc;
    char **shared_err;
    /* results, per target */
    int *rc;
    char **err;
    bool *wrote;
    /* per target, when the render can be told by its inputs (inputs_told): the digest
     * of its inputs, and whether the Work is as rendered from them (then nothing is built) */
    uint64_t *inputs;
    bool *unchanged;
    uint64_t rules; /* fl_interp_edits when inputs_told was asked */
    /* per target, from prepare_target: the Work to write (NULL: nothing to write), whether
     * it is a create, and for an update the merge patch that makes the Work so */
    json_t **pending;
    bool *create;
    json_t **patch;
    int *writes; /* the targets with a pending write, in order */
    int nwrites;
} render;

/* State preservation (docs/failover.md): the labels the binding's graceful eviction tasks
 * preserved from a cluster it left go on a new copy, in its labels and its pod template's
 * (where it has one, spec.template), until the tasks are over. m's spec may be shared with
 * other targets: it is copied before it changes. */
static void inject_preserved(const json_t *bspec, const char *cluster, json_t *m, json_t *labels)
{
    json_t *pls = fl_eviction_preserved_labels(bspec, cluster);
    if (json_object_size(pls)) {
        json_object_update(labels, pls);
        json_t *tpl = json_object_get(json_object_get(m, "spec"), "template");
        if (json_is_object(tpl)) {
            json_t *spec = fl_json_deep_copy(json_object_get(m, "spec"));
            json_object_set_new(m, "spec", spec);
            json_t *tmd = fl_json_ensure_obj(json_object_get(spec, "template"), "metadata");
            json_object_update(fl_json_ensure_obj(tmd, "labels"), pls);
        }
    }
    json_decref(pls);
}

/* The template as a target's manifest starts, a new object: pruned and, for a workload,
 * its replicas revised to the target's share (Duplicated: all of them), as Karmada revises
 * every workload's. */
static int base_manifest(const render *r, int64_t replicas, json_t **out, char **err)
{
    *out = NULL;
    json_t *m = fl_json_deep_copy(r->tmpl);
    fl_prune(m);
    fl_interp *ip = r->b->env.interp;
    const char *av = fl_json_str(r->tmpl, "apiVersion"), *kind = fl_json_str(r->tmpl, "kind");
    if (r->workload && fl_interp_has(ip, av, kind, FL_INTERP_REVISE_REPLICA)) {
        json_t *revised = NULL;
        int rc = fl_interp_revise_replica(ip, m, replicas, &revised, err);
        json_decref(m);
        if (rc)
            return rc;
        m = revised;
    }
    *out = m;
    return 0;
}

/* r->shared: one base manifest per distinct replica count, in target order. */
static void share_manifests(render *r)
{
    r->shared = fl_calloc((size_t)r->n, sizeof *r->shared);
    r->shared_rc = fl_calloc((size_t)r->n, sizeof *r->shared_rc);
    r->shared_err = fl_calloc((size_t)r->n, sizeof *r->shared_err);
    int *first = fl_calloc((size_t)r->n, sizeof *first); /* targets that made a base */
    int nfirst = 0;
    for (int i = 0; i < r->n; i++) {
        int j = -1;
        for (int k = 0; k < nfirst && j < 0; k++)
            if (r->targets[first[k]].replicas == r->targets[i].replicas)
                j = first[k];
        if (j >= 0) {
            r->shared[i] = json_incref(r->shared[j]);
            r->shared_rc[i] = r->shared_rc[j];
            r->shared_err[i] = r->shared_err[j] ? fl_strdup(r->shared_err[j]) : NULL;
            continue;
        }
        r->shared_rc[i] = base_manifest(r, r->targets[i].replicas, &r->shared[i], &r->shared_err[i]);
        first[nfirst++] = i;
    }
    free(first);
}

static void unshare_manifests(render *r)
{
    for (int i = 0; r->shared && i < r->n; i++) {
        json_decref(r->shared[i]);
        free(r->shared_err[i]);
    }
    free(r->shared);
    free(r->shared_rc);
    free(r->shared_err);
}

/* Build the Work for target i (a new object) or fail with *err. */
static int build_work(render *r, int i, json_t **out, char **err)
{
    *out = NULL;
    const target *t = &r->targets[i];
    json_t *m = NULL;
    int rc = 0;
    if (r->shared) {
        if (r->shared_rc[i]) {
            *err = r->shared_err[i] ? fl_strdup(r->shared_err[i]) : NULL;
            return r->shared_rc[i];
        }
        /* shared, read-only, but for the metadata changed below */
        m = fl_json_shallow_copy(r->shared[i]);
        json_t *bmd = json_object_get(r->shared[i], "metadata");
        if (bmd)
            json_object_set_new(m, "metadata", fl_json_deep_copy(bmd));
    } else {
        rc = base_manifest(r, t->replicas, &m, err);
        if (rc)
            return rc;
    }
    json_t *applied = NULL;
    if (!r->shared) {
        json_t *cluster = NULL;
        fl_informer_get(r->b->clusters, NULL, t->cluster, &cluster);
        if (!cluster)
            cluster = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "cluster.karmada.io/v1alpha1", "kind", "Cluster",
                                "metadata", "name", t->cluster);
        rc = fl_override_apply(m, cluster, r->policies, &applied, err);
        json_decref(cluster);
        if (rc) {
            json_decref(m);
            return rc;
        }
    }
    char *cov = NULL, *ov = NULL;
    if (json_array_size(applied)) {
        char *aerr = NULL;
        fl_override_annotations(applied, &cov, &ov, &aerr);
        free(aerr);
    }
    json_decref(applied);

    char *wns = fl_names_execution_space(t->cluster);
    json_t *md = fl_json_ensure_obj(m, "metadata");
    json_t *labels = fl_json_ensure_obj(md, "labels"), *anns = fl_json_ensure_obj(md, "annotations");
    const char *id_label = r->cluster_scoped ? FL_CRB_ID_LABEL : FL_RB_ID_LABEL;
    json_object_set_new(labels, id_label, json_string(r->binding_id ? r->binding_id : ""));
    json_object_set_new(labels, FL_MANAGED_LABEL, json_string("true"));
    const json_t *tmd = json_object_get(r->tmpl, "metadata");
    if (fl_json_str(tmd, "uid"))
        json_object_set_new(anns, FL_TEMPLATE_UID_ANNOTATION, json_string(fl_json_str(tmd, "uid")));
    json_t *gen = json_object_get(tmd, "generation");
    if (json_integer_value(gen) > 0) {
        char g[32];
        snprintf(g, sizeof g, "%lld", (long long)json_integer_value(gen));
        json_object_set_new(anns, FL_TEMPLATE_GENERATION_ANNOTATION, json_string(g));
    }
    json_object_set_new(anns, FL_WORK_NAME_ANNOTATION, json_string(r->wname));
    json_object_set_new(anns, FL_WORK_NAMESPACE_ANNOTATION, json_string(wns));
    if (r->cluster_scoped) {
        json_object_set_new(anns, FL_CRB_NAME_ANNOTATION, json_string(fl_json_meta(r->binding, "name")));
    } else {
        json_object_set_new(anns, FL_RB_NAMESPACE_ANNOTATION, json_string(fl_json_meta(r->binding, "namespace")));
        json_object_set_new(anns, FL_RB_NAME_ANNOTATION, json_string(fl_json_meta(r->binding, "name")));
    }
    /* conflict resolution: the template's own annotation wins; else the binding's setting */
    const json_t *bspec = json_object_get(r->binding, "spec");
    const char *cr_tmpl = fl_json_str(json_object_get(tmd, "annotations"), FL_CONFLICT_RESOLUTION_ANNOTATION);
    const char *cr = cr_tmpl && (!strcmp(cr_tmpl, "overwrite") || !strcmp(cr_tmpl, "abort")) ? cr_tmpl : NULL;
    if (!cr) {
        const char *b = fl_json_str(bspec, "conflictResolution");
        cr = b && !strcmp(b, "Overwrite") ? "overwrite" : "abort";
    }
    json_object_set_new(anns, FL_CONFLICT_RESOLUTION_ANNOTATION, json_string(cr));
    json_object_del(anns, FL_PROMOTED_FROM_ANNOTATION); /* the control plane's, not the member's */
    inject_preserved(bspec, t->cluster, m, labels);
    static const char *const ann_extra[] = {FL_MANAGED_ANNOTATIONS_ANNOTATION, FL_MANAGED_LABELS_ANNOTATION};
    char *ml = managed_keys(labels, NULL, 0);
    json_object_set_new(anns, FL_MANAGED_LABELS_ANNOTATION, json_string(ml));
    free(ml);
    char *ma = managed_keys(anns, ann_extra, 2);
    json_object_set_new(anns, FL_MANAGED_ANNOTATIONS_ANNOTATION, json_string(ma));
    free(ma);

    json_t *wanns = json_object();
    if (r->cluster_scoped) {
        json_object_set_new(wanns, FL_CRB_NAME_ANNOTATION, json_string(fl_json_meta(r->binding, "name")));
    } else {
        json_object_set_new(wanns, FL_RB_NAMESPACE_ANNOTATION, json_string(fl_json_meta(r->binding, "namespace")));
        json_object_set_new(wanns, FL_RB_NAME_ANNOTATION, json_string(fl_json_meta(r->binding, "name")));
    }
    json_object_set_new(wanns, FL_CONFLICT_RESOLUTION_ANNOTATION, json_string(cr));
    fl_migration_work_marks(r->binding, tmd, wanns);
    if (cov)
        json_object_set_new(wanns, FL_APPLIED_CLUSTER_OVERRIDES_ANNOTATION, json_string(cov));
    if (ov)
        json_object_set_new(wanns, FL_APPLIED_OVERRIDES_ANNOTATION, json_string(ov));
    free(cov);
    free(ov);
    json_t *wspec = json_pack("{s:{s:[o]}}", "workload", "manifests", m);
    /* suspension (dispatching.h): the whole binding, or some clusters; the annotation
     * remembers what the binding asked, so a user's own suspension of the Work stays until
     * that changes (fl_binding_keep_users_suspension) */
    bool suspend = fl_dispatch_suspended(json_object_get(bspec, "suspension"), t->cluster) || t->held;
    if (suspend)
        json_object_set_new(wspec, "suspendDispatching", json_true());
    json_object_set_new(wanns, WORK_SUSPENSION_ANNOTATION, json_string(suspend ? "true" : "false"));
    if (json_is_true(json_object_get(bspec, "preserveResourcesOnDeletion")))
        json_object_set_new(wspec, "preserveResourcesOnDeletion", json_true());
    /* created with the execution finalizer, as Karmada does: the executor starts applying at
     * once instead of first writing the finalizer itself */
    *out = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:o, s:[s]}, s:o}", "apiVersion", WORKS.api_version, "kind",
                     "Work", "metadata", "name", r->wname, "namespace", wns, "labels", id_label,
                     r->binding_id ? r->binding_id : "", "annotations", wanns, "finalizers", FL_EXECUTION_FINALIZER,
                     "spec", wspec);
    free(wns);
    return 0;
}

/* ---- a Work as rendered from the same inputs ----
 *
 * Each Work we write records in RENDERED_FROM_ANNOTATION a digest of what build_work made it
 * from (the template less its status and server bookkeeping, the binding's settings for the
 * target, the target's cluster and replicas), a digest of its labels and annotations as
 * written, and the generation the write gives it. When those still match, the Work is what
 * a render would make of the same inputs, and nobody changed it since: its spec would have
 * moved the generation, its metadata the second digest. Then nothing is built or compared.
 * That is every binding after a restart whose template, binding and Works did not change
 * while the server was down. Only where the inputs say everything: no override policy in
 * reach (its rules, and the Cluster's labels they match on, are not in the digest) and the
 * native ReviseReplica or none (a customization may answer differently with no input
 * moving). A Work rendered otherwise records nothing.
 *
 * RENDER_VERSION goes into every digest: change it when build_work makes something else of
 * the same inputs, so that Works written before are rendered again. */
#define RENDER_VERSION 1

/* Whether the renders of r can be told by their inputs (above). */
static bool inputs_told(render *r)
{
    fl_interp *ip = r->b->env.interp;
    r->rules = fl_interp_edits(ip);
    const char *av = fl_json_str(r->tmpl, "apiVersion"), *kind = fl_json_str(r->tmpl, "kind");
    return json_array_size(r->policies) == 0 && av && kind &&
           (fl_interp_native_first(ip, av, kind, FL_INTERP_REVISE_REPLICA) ||
            !fl_interp_has(ip, av, kind, FL_INTERP_REVISE_REPLICA));
}

/* The digest of what every target of r shares: the template less what changes without
 * changing a manifest, and the binding's settings. */
static uint64_t binding_inputs_digest(const render *r)
{
    static const char *const not_tmpl[] = {"status", "metadata", NULL};
    static const char *const not_meta[] = {"resourceVersion", "managedFields", NULL};
    const json_t *bspec = json_object_get(r->binding, "spec");
    json_t *in = json_pack("[i, I, I, s?, s?, s?, b, b, O?, b, I]", RENDER_VERSION,
                           (json_int_t)fl_json_hash_except(r->tmpl, not_tmpl),
                           (json_int_t)fl_json_hash_except(json_object_get(r->tmpl, "metadata"), not_meta),
                           fl_json_meta(r->binding, "namespace"), fl_json_meta(r->binding, "name"), r->binding_id,
                           r->cluster_scoped, r->workload, json_object_get(bspec, "conflictResolution"),
                           json_is_true(json_object_get(bspec, "preserveResourcesOnDeletion")),
                           (json_int_t)fl_migration_marks_digest(r->binding));
    uint64_t h = fl_json_hash(in);
    json_decref(in);
    return h;
}

/* The digest of target i's inputs: what the targets share (shared) and its own. */
static uint64_t inputs_digest(const render *r, uint64_t shared, int i)
{
    const target *t = &r->targets[i];
    const json_t *bspec = json_object_get(r->binding, "spec");
    json_t *in = json_pack("[I, s, I, b, o]", (json_int_t)shared, t->cluster, (json_int_t)t->replicas,
                           fl_dispatch_suspended(json_object_get(bspec, "suspension"), t->cluster) || t->held,
                           fl_eviction_preserved_labels(bspec, t->cluster));
    uint64_t h = fl_json_hash(in);
    json_decref(in);
    return h;
}

/* The digest of a Work's labels and annotations, less RENDERED_FROM_ANNOTATION and the
 * permanent ID label the server gives a Work when it creates it. */
static uint64_t metadata_digest(const json_t *work)
{
    static const char *const not_labels[] = {FL_WORK_ID_LABEL, NULL};
    static const char *const not_anns[] = {RENDERED_FROM_ANNOTATION, NULL};
    const json_t *md = json_object_get(work, "metadata");
    return fl_json_hash_except(json_object_get(md, "labels"), not_labels) * 31 +
           fl_json_hash_except(json_object_get(md, "annotations"), not_anns);
}

/* RENDERED_FROM_ANNOTATION's value for a Work rendered from inputs, whose labels and
 * annotations are those of work, at generation. */
static void rendered_from(uint64_t inputs, const json_t *work, json_int_t generation, char out[64])
{
    snprintf(out, 64, "%016llx.%016llx.%lld", (unsigned long long)inputs,
             (unsigned long long)metadata_digest(work), (long long)generation);
}

/* Whether have, target i's Work, is as rendered from the target's inputs. */
static bool rendered_unchanged(const render *r, int i, const json_t *have)
{
    const char *was = fl_json_meta_map(have, "annotations", RENDERED_FROM_ANNOTATION);
    const json_t *gen = json_object_get(json_object_get(have, "metadata"), "generation");
    if (!was || !json_is_integer(gen) || fl_json_meta(have, "deletionTimestamp"))
        return false;
    char now[64];
    rendered_from(r->inputs[i], have, json_integer_value(gen), now);
    return !strcmp(was, now);
}

/* Record in w, about to be written as target i's Work, what it was rendered from (or
 * nothing, when its inputs do not tell, or the interpreter's rules changed during the
 * render), for the generation the write gives it. */
static void record_rendered_from(const render *r, int i, json_t *w, json_int_t generation)
{
    json_t *anns = json_object_get(json_object_get(w, "metadata"), "annotations");
    json_object_del(anns, RENDERED_FROM_ANNOTATION);
    if (!r->inputs || !anns || fl_interp_edits(r->b->env.interp) != r->rules)
        return;
    char v[64];
    rendered_from(r->inputs[i], w, generation, v);
    json_object_set_new(anns, RENDERED_FROM_ANNOTATION, json_string(v));
}

/* What target i's Work needs (on the reconciling thread): r->pending[i] is the Work to
 * create or the update to write, or NULL when the Work is as it should be. Building and
 * comparing is quick; only writes wait, so only they go to the pool: after a restart, a pass
 * that writes nothing hands no work to other threads. */
static void prepare_target(render *r, int i)
{
    if (r->unchanged && r->unchanged[i])
        return;
    /* whole: the update below starts from it, and is compared with it */
    char *wns = fl_names_execution_space(r->targets[i].cluster);
    char *wkey = fl_cat(wns, "/", r->wname, NULL);
    free(wns);
    json_t *have = NULL;
    fl_informer_get_whole(r->b->works, wkey, &have);
    bool behind = have && copy_behind(r->b, wkey, have);
    free(wkey);
    if (behind) {
        r->rc[i] = FL_ECONFLICT; /* our last write is on its way to the cache: soon again */
        json_decref(have);
        return;
    }
    json_t *want = NULL;
    r->rc[i] = build_work(r, i, &want, &r->err[i]);
    if (r->rc[i]) {
        json_decref(have);
        return;
    }
    if (!have) {
        r->pending[i] = json_incref(want);
        r->create[i] = true;
        record_rendered_from(r, i, want, 1);
    } else if (fl_json_meta(have, "deletionTimestamp")) {
        r->rc[i] = FL_ECONFLICT; /* the old Work is still going (cluster removed and back): later */
    } else {
        /* ours: spec, our labels and annotations; others' (the execution finalizer) kept */
        json_t *upd = fl_json_shallow_copy(have);
        json_object_set(upd, "spec", json_object_get(want, "spec"));
        if (r->status_moves_generation)
            fl_binding_keep_generation_if_same(have, upd);
        fl_binding_keep_users_suspension(have, want, upd);
        json_t *md = fl_json_shallow_copy(json_object_get(have, "metadata"));
        json_object_set_new(upd, "metadata", md);
        static const char *const ours[] = {"labels", "annotations"}; /* set below: of upd's own */
        for (size_t j = 0; j < 2; j++)
            if (json_object_get(md, ours[j]))
                json_object_set_new(md, ours[j], fl_json_shallow_copy(json_object_get(md, ours[j])));
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(json_object_get(want, "metadata"), "labels"), key, v)
            json_object_set(fl_json_ensure_obj(md, "labels"), key, v);
        json_t *uanns = fl_json_ensure_obj(md, "annotations");
        json_object_foreach(json_object_get(json_object_get(want, "metadata"), "annotations"), key, v)
            json_object_set(uanns, key, v);
        /* a release stays (one set by hand is the user's; ctl promote lifts the binding's) */
        static const char *const optional[] = {FL_APPLIED_OVERRIDES_ANNOTATION, FL_APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
                                               FL_ADOPT_KEY, FL_PROMOTED_FROM_ANNOTATION};
        for (size_t j = 0; j < sizeof optional / sizeof *optional; j++)
            if (!json_object_get(json_object_get(json_object_get(want, "metadata"), "annotations"), optional[j]))
                json_object_del(uanns, optional[j]);
        /* what it was rendered from is not a reason to write: a Work that comes out the
         * same keeps its record (stale, it only costs the next pass a render) */
        json_t *had = json_object_get(json_object_get(json_object_get(have, "metadata"), "annotations"),
                                      RENDERED_FROM_ANNOTATION);
        if (had)
            json_object_set(uanns, RENDERED_FROM_ANNOTATION, had);
        else
            json_object_del(uanns, RENDERED_FROM_ANNOTATION);
        if (!fl_json_same(upd, have)) {
            /* the server moves the generation when the spec changes */
            json_int_t gen = json_integer_value(json_object_get(json_object_get(have, "metadata"), "generation"));
            bool spec = !fl_json_same(json_object_get(upd, "spec"), json_object_get(have, "spec"));
            record_rendered_from(r, i, upd, gen + spec);
            r->pending[i] = upd;
            r->patch[i] = fl_binding_owned_patch(have, upd);
        } else {
            json_decref(upd);
        }
    }
    if (r->pending[i])
        r->writes[r->nwrites++] = i;
    json_decref(want);
    json_decref(have);
}

/* Write the k-th pending Work (one thread of fl_parallel). */
static void write_target(void *ctx, int k)
{
    render *r = ctx;
    int i = r->writes[k];
    json_t *w = r->pending[i];
    r->pending[i] = NULL;
    /* copies: w goes before the answer */
    char *wns = fl_strdup(fl_json_meta(w, "namespace")), *wk = fl_asprintf("%s/%s", wns, r->wname);
    remember_echo(r->b, wk, w);
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    json_t *stored = NULL;
    int rc;
    if (r->create[i]) {
        rc = fl_client_create(r->b->env.cp, &WORKS, wns, w, NULL, &stored, &ce);
        if (rc == FL_EEXIST)
            rc = FL_ECONFLICT; /* the cache is behind: its event brings us back */
        json_decref(w);
    } else {
        /* no precondition: fl_binding_owned_patch */
        char *body = json_dumps(r->patch[i], JSON_COMPACT);
        rc = body ? fl_client_patch(r->b->env.cp, &WORKS, wns, r->wname, FL_PATCH_MERGE, body, strlen(body), NULL,
                                    &stored, &ce)
                  : FL_ENOMEM;
        free(body);
        json_decref(w);
        if (rc == FL_ENOTFOUND)
            rc = FL_ECONFLICT; /* deleted since the cache's copy: its event brings us back */
    }
    if (!rc)
        note_written(r->b, wk, stored);
    if (!rc && r->create[i])
        /* indexed now, not when the cache brings it: a binding deleted before then must wait
         * for this Work too, not find none and let its finalizer go */
        index_put(r->b, stored, true);
    json_decref(stored);
    if (rc && rc != FL_ECONFLICT)
        r->err[i] = fl_asprintf("writing Work %s: %s", wk, fl_errmsg(ce.message, rc));
    free(wk);
    free(wns);
    r->wrote[i] = rc == 0;
    r->rc[i] = rc;
}

/* ---- reconcile ---- */

static int delete_work(bindctl *b, const char *wkey)
{
    char *ns = fl_strdup(wkey), *slash = strchr(ns, '/');
    int rc = 0;
    if (slash) {
        *slash = 0;
        fl_client_error ce;
        rc = fl_client_delete(b->env.cp, &WORKS, ns, slash + 1, NULL, NULL, &ce);
        if (rc == FL_ENOTFOUND)
            rc = 0;
        else if (rc)
            fl_log_kv(FL_LOG_WARN, LOG, "deleting the Work failed", "object", FL_LOG_OBJ("Work", NULL, wkey), "err",
                      fl_errmsg(ce.message, rc), NULL);
    }
    free(ns);
    return rc;
}

/* Write binding obj with our finalizer added or removed; a binding already gone is done. */
static int write_finalizer(bindctl *b, const fl_gvr *gvr, const json_t *obj, bool add)
{
    json_t *copy = fl_json_deep_copy(obj);
    fl_json_set_finalizer(copy, FL_BINDING_FINALIZER, add);
    fl_client_error ce;
    int rc = fl_client_update(b->env.cp, gvr, fl_json_meta(obj, "namespace"), copy, NULL, NULL, &ce);
    json_decref(copy);
    return rc == FL_ENOTFOUND ? 0 : rc;
}

/* The override policies in scope of a template: every ClusterOverridePolicy, and the
 * OverridePolicies of its namespace. A new array. */
static json_t *override_policies(bindctl *b, const char *ns)
{
    json_t *all = fl_informer_list(b->cops, NULL);
    if (ns && *ns) {
        json_t *ops = fl_informer_list(b->ops, ns);
        json_array_extend(all, ops);
        json_decref(ops);
    }
    return all;
}

/* Targets: spec.clusters, then the clusters of requiredBy not already there. */
static target *targets_of(const json_t *spec, int *n)
{
    const json_t *cl = json_object_get(spec, "clusters"), *rb = json_object_get(spec, "requiredBy");
    size_t cap = json_array_size(cl) + 1;
    size_t i, j;
    json_t *e, *c;
    json_array_foreach(rb, i, e) cap += json_array_size(json_object_get(e, "clusters"));
    target *t = fl_calloc(cap, sizeof *t);
    int k = 0;
    json_array_foreach(cl, i, c) {
        const char *name = fl_json_str(c, "name");
        if (!name)
            continue;
        t[k++] = (target){name, json_integer_value(json_object_get(c, "replicas"))};
    }
    json_array_foreach(rb, i, e) {
        json_array_foreach(json_object_get(e, "clusters"), j, c) {
            const char *name = fl_json_str(c, "name");
            bool dup = !name;
            for (int x = 0; x < k && !dup; x++)
                dup = !strcmp(t[x].cluster, name);
            if (!dup)
                t[k++] = (target){name, 0};
        }
    }
    *n = k;
    return t;
}

/* An orphan Work (key "karmada-es-<cluster>/<name>") whose cluster the binding suspends stays
 * until the suspension ends: removing it would delete the objects in the member, and while
 * suspended nothing reaches the member. A kept Work is marked suspended if it was not (the
 * suspension and the unscheduling came together). Returns whether the Work is kept. */
static bool orphan_suspended(bindctl *b, const json_t *binding, const char *wkey, int *rc)
{
    const char *wname;
    char *cluster = fl_names_work_key_cluster(wkey, &wname);
    if (!cluster)
        return false;
    bool keep = fl_dispatch_suspended(json_object_get(json_object_get(binding, "spec"), "suspension"), cluster);
    free(cluster);
    json_t *work = NULL;
    fl_informer_get_key(b->works, wkey, &work);
    bool suspended = json_is_true(json_object_get(json_object_get(work, "spec"), "suspendDispatching"));
    const char *ours = fl_json_meta_map(work, "annotations", WORK_SUSPENSION_ANNOTATION);
    /* kept: make sure it is suspended; going: lift the suspension we put there (a user's own
     * stays, and the deletion then waits for the user's resume) */
    const char *patch = NULL;
    if (work && keep && !suspended)
        patch = "{\"spec\":{\"suspendDispatching\":true},\"metadata\":{\"annotations\":{\"" WORK_SUSPENSION_ANNOTATION
                "\":\"true\"}}}";
    else if (work && !keep && suspended && ours && !strcmp(ours, "true"))
        patch = "{\"spec\":{\"suspendDispatching\":null},\"metadata\":{\"annotations\":{\"" WORK_SUSPENSION_ANNOTATION
                "\":\"false\"}}}";
    if (patch) {
        char *ns = fl_strndup(wkey, (size_t)(wname - 1 - wkey));
        fl_client_error ce = {0};
        int p = fl_client_patch(b->env.cp, &WORKS, ns, wname, FL_PATCH_MERGE, patch, strlen(patch), NULL, NULL, &ce);
        if (p && p != FL_ENOTFOUND && !*rc)
            *rc = p;
        free(ns);
    }
    json_decref(work);
    return keep;
}

/* The Works' name of the binding at key: the binding's own, or (the binding gone) the one
 * remembered when it went. Heap, or NULL. */
static char *wname_of(bindctl *b, const char *key, const json_t *binding)
{
    if (binding)
        return works_name(binding);
    pthread_mutex_lock(&b->mu);
    const char *gone = fl_json_str(b->gone, key);
    char *wname = gone ? fl_strdup(gone) : NULL;
    json_object_del(b->gone, key);
    pthread_mutex_unlock(&b->mu);
    return wname;
}

/* The binding is gone or going: its Works go (a binding gone without us saw its finalizer
 * removed, or was deleted by force; its Works are orphans either way), then our finalizer. */
static int binding_going(bindctl *b, const fl_gvr *gvr, const json_t *binding, const json_t *owned)
{
    int rc = 0;
    size_t i;
    json_t *wk;
    json_array_foreach(owned, i, wk) {
        int d = delete_work(b, json_string_value(wk));
        if (d && !rc)
            rc = d;
    }
    if (binding && !rc && json_array_size(owned) == 0 && fl_json_has_finalizer(binding, FL_BINDING_FINALIZER))
        rc = write_finalizer(b, gvr, binding, false);
    else if (binding && !rc && json_array_size(owned))
        rc = FL_ETIMEDOUT; /* wait for the Works to be gone (their finalizers) */
    return rc;
}

/* The per-target arrays of r, for r->n targets. */
static void render_alloc(render *r)
{
    size_t n = (size_t)(r->n ? r->n : 1);
    r->rc = fl_calloc(n, sizeof(int));
    r->err = fl_calloc(n, sizeof(char *));
    r->wrote = fl_calloc(n, sizeof(bool));
    r->pending = fl_calloc(n, sizeof(json_t *));
    r->create = fl_calloc(n, sizeof(bool));
    r->patch = fl_calloc(n, sizeof(json_t *));
    r->writes = fl_calloc(n, sizeof(int));
}

/* Free what render_alloc and the steps made; r as zeroed is fine. Not r->wname or
 * r->targets, which are the caller's. */
static void render_close(render *r)
{
    for (int x = 0; r->err && x < r->n; x++) {
        free(r->err[x]);
        json_decref(r->pending[x]);
        json_decref(r->patch[x]);
    }
    free(r->err);
    free(r->inputs);
    free(r->unchanged);
    free(r->pending);
    free(r->create);
    free(r->patch);
    free(r->writes);
    free(r->rc);
    free(r->wrote);
}

/* When the render can be told by its inputs, mark the targets whose Work is as rendered from
 * the same inputs (r->unchanged): they are neither built nor compared. Returns how many. */
static int mark_unchanged(render *r)
{
    if (!inputs_told(r))
        return 0;
    int n = r->n, unchanged = 0;
    r->inputs = fl_calloc((size_t)(n ? n : 1), sizeof *r->inputs);
    r->unchanged = fl_calloc((size_t)(n ? n : 1), sizeof *r->unchanged);
    uint64_t shared = binding_inputs_digest(r);
    for (int t = 0; t < n; t++) {
        r->inputs[t] = inputs_digest(r, shared, t);
        json_t *have = NULL;
        char *wns = fl_names_execution_space(r->targets[t].cluster);
        fl_informer_get(r->b->works, wns, r->wname, &have);
        char *wk = fl_cat(wns, "/", r->wname, NULL);
        free(wns);
        /* a copy behind our own write is prepared (and waited for) in prepare_target */
        r->unchanged[t] = have && !copy_behind(r->b, wk, have) && rendered_unchanged(r, t, have);
        free(wk);
        unchanged += r->unchanged[t];
        json_decref(have);
    }
    if (unchanged)
        fl_metrics_count("flotilla_binding_works_unchanged_total",
                         "Works the binding controller found as rendered from the same inputs, and so "
                         "neither built nor compared",
                         unchanged);
    return unchanged;
}

/* The outcome of the writes, as Karmada reports it on the binding: the first failure's
 * event, or one success event when something was written. Returns the first target's rc. */
static int report_writes(const render *r)
{
    int rc = 0, failed = 0, wrote = 0;
    for (int i = 0; i < r->n; i++) {
        wrote += r->wrote[i];
        if (!r->rc[i])
            continue;
        if (!rc)
            rc = r->rc[i];
        if (r->err[i]) {
            if (!failed)
                fl_event(r->b->env.recorder, r->binding, "Warning", "SyncWorkFailed",
                         "Failed to sync work for cluster %s: %s", r->targets[i].cluster, r->err[i]);
            failed++;
        }
    }
    if (wrote && !failed)
        fl_event(r->b->env.recorder, r->binding, "Normal", "SyncWorkSucceed",
                 "Sync work of resourceBinding(%s%s%s) successful.",
                 r->cluster_scoped ? "" : fl_json_meta(r->binding, "namespace"), r->cluster_scoped ? "" : "/",
                 fl_json_meta(r->binding, "name"));
    return rc;
}

/* Is the Work at wkey one of r's, in a cluster that is still a target? */
static bool work_targeted(const render *r, const char *wkey)
{
    const char *wname;
    char *cluster = fl_names_work_key_cluster(wkey, &wname);
    bool keep = false;
    for (int t = 0; cluster && t < r->n && !keep; t++)
        keep = !strcmp(cluster, r->targets[t].cluster) && !strcmp(wname, r->wname);
    free(cluster);
    return keep;
}

/* Is the Work at wkey in a cluster a Gracefully or Never eviction task of the binding keeps? */
static bool kept_by_task(const json_t *binding, const char *wkey)
{
    const char *wname;
    char *cluster = fl_names_work_key_cluster(wkey, &wname);
    const json_t *task = cluster ? fl_eviction_task_of(json_object_get(binding, "spec"), cluster) : NULL;
    free(cluster);
    return task && fl_eviction_purge_mode(task) != 'D';
}

/* Has the binding (owned: its Works) a Work left in the cluster of a Directly eviction task? */
static bool directly_pending(const json_t *binding, const json_t *owned)
{
    size_t i;
    json_t *wk;
    json_array_foreach(owned, i, wk) {
        const char *wname;
        char *cluster = fl_names_work_key_cluster(json_string_value(wk), &wname);
        const json_t *task = cluster ? fl_eviction_task_of(json_object_get(binding, "spec"), cluster) : NULL;
        free(cluster);
        if (task && fl_eviction_purge_mode(task) == 'D')
            return true;
    }
    return false;
}

/* Orphans: delete the Works of the binding (owned) in clusters that are no longer targets,
 * but those the binding's suspension or a graceful eviction task keeps. A failure goes into
 * *rc unless it holds one. */
static void remove_orphans(const render *r, const json_t *owned, int *rc)
{
    bindctl *b = r->b;
    size_t i;
    json_t *wk;
    json_array_foreach(owned, i, wk) {
        const char *s = json_string_value(wk);
        if (work_targeted(r, s) || kept_by_task(r->binding, s) || orphan_suspended(b, r->binding, s, rc))
            continue;
        int d = delete_work(b, s);
        if (d == 0) {
            fl_log_kv(FL_LOG_INFO, LOG, "removed the Work: its cluster is no longer a target", "object",
                      FL_LOG_OBJ("Work", NULL, s), NULL);
            fl_event(b->env.recorder, r->binding, "Normal", "WorkRemoved",
                     "Removed Work %s: its cluster is no longer a target", s);
        } else if (!*rc) {
            *rc = d;
        }
    }
}

/* Reconcile one binding (key "R|ns/name" or "C|name"): its finalizer, then a Work in each
 * target cluster's execution space rendered from the template and the override policies,
 * then the Works of clusters that are no longer targets removed. */
static int reconcile(void *ctx, const char *key)
{
    bindctl *b = ctx;
    bool cluster_scoped = key[0] == 'C';
    const fl_gvr *gvr = cluster_scoped ? &CRBS : &RBS;
    if (!fl_informer_has_synced(b->works) || !fl_informer_has_synced(b->ops) || !fl_informer_has_synced(b->cops) ||
        !fl_informer_has_synced(cluster_scoped ? b->crbs : b->rbs))
        return FL_ETIMEDOUT;
    json_t *binding = NULL, *tmpl = NULL, *owned = NULL, *policies = NULL;
    target *targets = NULL;
    render r = {0};
    int rc = 0, n = 0;
    fl_informer_get_key(cluster_scoped ? b->crbs : b->rbs, key + 2, &binding);
    char *wname = wname_of(b, key, binding);
    claim_bare(b, key, wname);
    owned = index_get(b, key);

    if (!binding || fl_json_meta(binding, "deletionTimestamp")) {
        rc = binding_going(b, gvr, binding, owned);
        goto out;
    }
    if (!fl_json_has_finalizer(binding, FL_BINDING_FINALIZER)) {
        rc = write_finalizer(b, gvr, binding, true);
        goto out; /* the update brings us back */
    }

    const json_t *spec = json_object_get(binding, "spec"), *res = json_object_get(spec, "resource");
    const char *av = fl_json_str(res, "apiVersion"), *kind = fl_json_str(res, "kind"),
               *rname = fl_json_str(res, "name"), *rns = fl_json_str(res, "namespace");
    if (!av || !kind || !rname)
        goto out;
    const fl_template_kind *k = NULL;
    int w = fl_templates_watch(b->env.templates, av, kind, 5000, &k);
    if (w) {
        rc = w == FL_ENOTFOUND ? 0 : w; /* a kind nobody serves: nothing to render */
        goto out;
    }
    bool synced = false;
    fl_templates_get(b->env.templates, av, kind, rns, rname, &tmpl, &synced);
    if (!tmpl) {
        rc = synced ? 0 : FL_ETIMEDOUT; /* gone: the detector deletes the binding */
        goto out;
    }
    targets = targets_of(spec, &n);
    for (int t = 0; t < n; t++) /* staged rollouts: what a strategy holds back (rollout_gate.h) */
        targets[t].held = fl_rollout_gate_hold(b->gate, binding, tmpl, targets[t].cluster, b->works, wname);
    if (directly_pending(binding, owned)) {
        /* Directly: the old copy goes first; the new ones wait for its Work to be gone (its
         * deletion requeues us; the timer is a safety net) */
        r = (render){.b = b, .binding = binding, .targets = targets, .n = n, .wname = wname};
        remove_orphans(&r, owned, &rc);
        fl_workqueue_add_after(b->q, key, 5000);
        goto out;
    }
    policies = override_policies(b, k->namespaced ? rns : NULL);
    r = (render){.b = b,
                 .binding = binding,
                 .tmpl = tmpl,
                 .policies = policies,
                 .cluster_scoped = cluster_scoped,
                 .binding_id = fl_json_meta_map(binding, "labels", cluster_scoped ? FL_CRB_ID_LABEL : FL_RB_ID_LABEL),
                 .targets = targets,
                 .n = n,
                 .wname = wname, /* works_name: of this kind, rns and rname */
                 .workload = json_integer_value(json_object_get(spec, "replicas")) > 0 ||
                             json_is_object(json_object_get(spec, "replicaRequirements")),
                 .status_moves_generation = fl_templates_status_in_object(b->env.templates, k)};
    render_alloc(&r);
    int unchanged = mark_unchanged(&r);
    if (n > 1 && json_array_size(policies) == 0 && unchanged < n)
        share_manifests(&r);
    for (int t = 0; t < n; t++)
        prepare_target(&r, t);
    fl_parallel(r.nwrites, WRITE_THREADS, write_target, &r);
    unshare_manifests(&r);
    rc = report_writes(&r);
    remove_orphans(&r, owned, &rc);
out:
    render_close(&r);
    free(wname); /* and r.wname */
    free(targets);
    json_decref(policies);
    json_decref(owned);
    json_decref(binding);
    json_decref(tmpl);
    return rc;
}

/* ---- lifecycle ---- */

static int bindctl_start(const fl_ctrl_env *env, void **state)
{
    bindctl *b = fl_calloc(1, sizeof *b);
    b->env = *env;
    b->q = fl_workqueue_new(NULL);
    fl_ctrl_resumable(env, b->q);
    pthread_mutex_init(&b->mu, NULL);
    b->index = json_object();
    b->bare = json_object();
    b->gone = json_object();
    b->echo = json_object();
    b->written = json_object();
    b->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    b->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    b->works = fl_ctrl_informer(env, WORKS.api_version, WORKS.resource);
    b->ops = fl_ctrl_informer(env, "policy.karmada.io/v1alpha1", "overridepolicies");
    b->cops = fl_ctrl_informer(env, "policy.karmada.io/v1alpha1", "clusteroverridepolicies");
    b->clusters = fl_ctrl_informer(env, "cluster.karmada.io/v1alpha1", "clusters");
    b->gate = fl_rollout_gate_new(env, b->rbs, b->crbs, b->q);
    fl_informer_handlers bh = {.on_add = binding_added, .on_update = binding_updated, .on_delete = binding_deleted,
                               .ctx = b};
    fl_informer_add_handlers(b->rbs, &bh);
    fl_informer_add_handlers(b->crbs, &bh);
    fl_informer_handlers wh = {.on_add = work_added, .on_update = work_updated, .on_delete = work_deleted, .ctx = b};
    fl_informer_add_handlers(b->works, &wh);
    fl_informer_handlers ph = {.on_add = policy_added, .on_update = policy_updated, .on_delete = policy_added,
                               .ctx = b};
    fl_informer_add_handlers(b->ops, &ph);
    fl_informer_add_handlers(b->cops, &ph);
    fl_informer_handlers ch = {.on_update = cluster_updated, .ctx = b};
    fl_informer_add_handlers(b->clusters, &ch);
    fl_template_handlers th = {.on_add = tmpl_added, .on_update = tmpl_updated, .ctx = b};
    fl_templates_subscribe(env->templates, &th);
    fl_ctrl_on_interp_change(env, interp_changed, b);
    b->workers = fl_ctrl_workers_start_batched(b->q, "binding", BINDING_WORKERS, KEYS_AT_ONCE, reconcile, b,
                                              (fl_informer *const[]){b->works, b->ops, b->cops, b->rbs, b->crbs,
                                                                     fl_rollout_gate_informer(b->gate), NULL});
    *state = b;
    return 0;
}

static void bindctl_stop(void *state)
{
    bindctl *b = state;
    fl_ctrl_workers_join(b->workers);
    fl_workqueue_free(b->q);
    fl_rollout_gate_free(b->gate);
    json_decref(b->index);
    json_decref(b->bare);
    json_decref(b->gone);
    json_decref(b->echo);
    json_decref(b->written);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

const fl_controller fl_binding_controller = {"binding", bindctl_start, bindctl_stop};
