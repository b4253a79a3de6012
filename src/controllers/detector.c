/* detector.c - the detector: matches resource templates to PropagationPolicies and
 * ClusterPropagationPolicies and keeps one ResourceBinding (or ClusterResourceBinding) per
 * claimed template. The first arrow of the data path (DESIGN.md):
 *
 *     template + policy ──► detector ──► ResourceBinding (spec.resource, placement, replicas)
 *
 * What it watches: both policy kinds (shared informers), the bindings (shared informers), and
 * the templates of every kind some policy names in its resourceSelectors (templates.h; kinds
 * no policy names are never watched, so they cost nothing), and interpreter changes
 * (controller.h: a customization for a kind re-runs that kind's templates).
 *
 * Queue keys:
 *   "T|apiVersion|kind|ns|name"  a template to decide on. Whether it was queued because the
 *                                template itself changed (or its binding was taken away) or
 *                                only because a policy changed is remembered beside the queue:
 *                                a policy with activationPreference Lazy claims templates but
 *                                builds or changes their bindings only on the template's own
 *                                changes;
 *   "P|ns/name", "C|name"        a PropagationPolicy / ClusterPropagationPolicy changed:
 *                                watch the kinds it names and queue the templates it selects
 *                                or has claimed.
 *
 * A template reconcile, in Karmada's terms:
 *   1. the template is gone: delete its binding (bindings have the template's lifetime);
 *   2. choose the policy: the one that has claimed it (labels naming the policy's permanent
 *      ID) while that policy exists and still selects it, unless a better policy may
 *      preempt it; otherwise the best match (policy/resource_selector.h);
 *   3. no policy: remove the claim from the template and its binding; the binding and what
 *      it delivered stay (a policy's deletion does not delete workloads);
 *   4. claim the template (permanent-id label, name/namespace annotations), then create or
 *      update the binding with the policy's placement and settings and the replicas the
 *      interpreter reads from the template.
 * Every write compares with the cached object first, so a reconcile that changes nothing
 * writes nothing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/migration.h"
#include "controllers/names.h"
#include "controllers/templates.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/wellknown.h"
#include "interp/interp.h"
#include "policy/resource_selector.h"

#define LOG "detector"
#define DETECTOR_WORKERS 4

/* ours: the policy suspension last copied to the binding, so that a user's own suspension of
 * a binding survives until the policy's suspension changes (issue 6's contract) */
#define SUSPENSION_ANNOTATION "flotilla.io/policy-suspension"

static const char *const RB_API = "work.karmada.io/v1alpha2";

typedef struct detector {
    fl_ctrl_env env;
    fl_informer *pps, *cpps, *rbs, *crbs;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    /* Template keys queued because the template itself changed (or its binding was taken
     * away), as opposed to only a policy: a Lazy policy acts on the former only. One key
     * per template in the queue, so one template is never reconciled twice at once. */
    pthread_mutex_t mu;
    json_t *user_changed;
    /* At a resumed start (env.resumed_rev), the policies the first lists held, by queue key, with
     * their resourceVersion (under mu): reconciled at that version, such a policy only has
     * its kinds watched, and queues none of the templates it selects or claimed. */
    json_t *resumed_policies;
} detector;

/* ---- small helpers ---- */

static bool is_cpp(const json_t *policy)
{
    const char *k = fl_json_str(policy, "kind");
    return k && !strcmp(k, "ClusterPropagationPolicy");
}

static const char *policy_id(const json_t *policy)
{
    return fl_json_meta_map(policy, "labels", is_cpp(policy) ? FL_CPP_ID_LABEL : FL_PP_ID_LABEL);
}

/* Namespaces whose objects are never propagated: the control plane's own, and the execution
 * spaces (their Works are the output of propagation, not its input). */
static bool reserved_namespace(const char *ns)
{
    return ns && (!strcmp(ns, "karmada-system") || !strcmp(ns, "karmada-cluster") || !strcmp(ns, "kube-system") ||
                  !strcmp(ns, "kube-public") || !strcmp(ns, "kube-node-lease") ||
                  !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, strlen(FL_EXECUTION_SPACE_PREFIX)));
}

/* Karmada's own API groups (policy, work, cluster, config .karmada.io) are never templates. */
static bool reserved_group(const char *api_version)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    size_t n = slash ? (size_t)(slash - api_version) : 0;
    return n >= 11 && !strncmp(slash - 11, ".karmada.io", 11);
}

static char *template_key(const char *api_version, const char *kind, const char *ns, const char *name)
{
    return fl_asprintf("T|%s|%s|%s|%s", api_version, kind, ns ? ns : "", name);
}

/* Queue a template; user: because it (or its binding) changed, not only a policy. */
static void queue_template(detector *d, char *key, bool user)
{
    if (user) {
        pthread_mutex_lock(&d->mu);
        json_object_set_new(d->user_changed, key, json_true());
        pthread_mutex_unlock(&d->mu);
    }
    fl_workqueue_add(d->q, key);
}

/* Whether key was queued for a change of its own (and forget it). */
static bool take_user_changed(detector *d, const char *key)
{
    pthread_mutex_lock(&d->mu);
    bool user = json_object_get(d->user_changed, key) != NULL;
    if (user)
        json_object_del(d->user_changed, key);
    pthread_mutex_unlock(&d->mu);
    return user;
}

/* Split "X|a|b|c|d" into its four fields (in place in a copy the caller frees). */
static bool split_template_key(char *s, char **av, char **kind, char **ns, char **name)
{
    char *f[5];
    for (int i = 0; i < 5; i++) {
        f[i] = s;
        char *bar = i < 4 ? strchr(s, '|') : NULL;
        if (i < 4 && !bar)
            return false;
        if (bar) {
            *bar = 0;
            s = bar + 1;
        }
    }
    *av = f[1];
    *kind = f[2];
    *ns = f[3];
    *name = f[4];
    return true;
}

/* ---- handlers ---- */

static void enqueue_template(detector *d, bool user, const fl_template_kind *k, const json_t *obj)
{
    const char *ns = fl_json_meta(obj, "namespace"), *name = fl_json_meta(obj, "name");
    if (!name || reserved_namespace(ns))
        return;
    char *key = template_key(k->api_version, k->kind, ns, name);
    queue_template(d, key, user);
    free(key);
}

/* A new template is a change of its own; one that was there before its kind was watched
 * (the first list, when a policy first names the kind, or after a restart) is not. */
static void tmpl_added(void *ctx, const fl_template_kind *k, json_t *obj)
{
    detector *d = ctx;
    if (!fl_ctrl_resumed_add(&d->env, obj))
        enqueue_template(d, fl_templates_listed(d->env.templates, k), k, obj);
}

/* Did only the claim (our own labels and annotations) change between old and new? Then the
 * update is our claim coming back, not a change of the user's. */
static bool only_claim_changed(const json_t *old_obj, const json_t *new_obj)
{
    static const char *const labels[] = {FL_PP_ID_LABEL, FL_CPP_ID_LABEL};
    static const char *const anns[] = {FL_PP_NAMESPACE_ANNOTATION, FL_PP_NAME_ANNOTATION, FL_CPP_NAME_ANNOTATION};
    /* copies only of what is taken out below; the rest stays shared */
    json_t *a = fl_json_shallow_copy(old_obj), *b = fl_json_shallow_copy(new_obj);
    json_t *objs[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        json_t *md = fl_json_own_child(objs[i], "metadata");
        fl_json_own_child(md, "labels");
        fl_json_own_child(md, "annotations");
        for (size_t j = 0; j < 2; j++)
            json_object_del(json_object_get(md, "labels"), labels[j]);
        for (size_t j = 0; j < 3; j++)
            json_object_del(json_object_get(md, "annotations"), anns[j]);
        /* a map that held only the claim is the same as no map */
        if (!json_object_size(json_object_get(md, "labels")))
            json_object_del(md, "labels");
        if (!json_object_size(json_object_get(md, "annotations")))
            json_object_del(md, "annotations");
        json_object_del(md, "resourceVersion");
        json_object_del(md, "managedFields");
        json_object_del(objs[i], "status");
    }
    bool only = fl_json_same(a, b);
    json_decref(a);
    json_decref(b);
    return only;
}

/* Status-only changes (our own aggregation writes most of them) cannot change the match
 * or the binding: labels, annotations, the spec (generation) or the object's identity can. */
static void tmpl_updated(void *ctx, const fl_template_kind *k, json_t *old_obj, json_t *new_obj)
{
    json_t *om = json_object_get(old_obj, "metadata"), *nm = json_object_get(new_obj, "metadata");
    json_t *og = json_object_get(om, "generation"), *ng = json_object_get(nm, "generation");
    bool same = og && ng && fl_json_same(og, ng) && fl_json_same(json_object_get(om, "labels"), json_object_get(nm, "labels")) &&
                fl_json_same(json_object_get(om, "annotations"), json_object_get(nm, "annotations")) &&
                fl_json_same(json_object_get(om, "deletionTimestamp"), json_object_get(nm, "deletionTimestamp"));
    /* kinds without generation (ConfigMap, Secret) change their data without it moving */
    if (same && fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        return;
    enqueue_template(ctx, !only_claim_changed(old_obj, new_obj), k, new_obj);
}

static void tmpl_deleted(void *ctx, const fl_template_kind *k, json_t *obj)
{
    enqueue_template(ctx, true, k, obj);
}

/* A policy's queue key: "P|ns/name" or "C|name" (heap; NULL without a name). Policy keys
 * never meet template keys ("T|"). */
static char *policy_key(const json_t *obj)
{
    char *k = fl_informer_key(obj);
    char *key = k ? fl_asprintf("%c|%s", is_cpp(obj) ? 'C' : 'P', k) : NULL;
    free(k);
    return key;
}

static void policy_event(detector *d, const json_t *obj)
{
    char *key = policy_key(obj);
    if (key)
        fl_workqueue_add(d->q, key);
    free(key);
}

/* Start the lists of the kinds a policy names as soon as it is seen: its reconcile waits for
 * the binding lists, and at a start the templates' lists would only begin after them. */
static void watch_kinds(detector *d, const json_t *policy)
{
    size_t i;
    json_t *sel;
    json_array_foreach(json_object_get(json_object_get(policy, "spec"), "resourceSelectors"), i, sel) {
        const char *av = fl_json_str(sel, "apiVersion"), *kind = fl_json_str(sel, "kind");
        if (av && kind && !reserved_group(av))
            fl_templates_watch(d->env.templates, av, kind, 0, NULL); /* one not served: its reconcile retries */
    }
}

static void policy_added(void *ctx, json_t *obj)
{
    detector *d = ctx;
    watch_kinds(d, obj);
    char *key = fl_ctrl_resumed_add(&d->env, obj) ? policy_key(obj) : NULL;
    const char *rv = fl_json_meta(obj, "resourceVersion");
    if (key && rv) {
        pthread_mutex_lock(&d->mu);
        json_object_set_new(d->resumed_policies, key, json_string(rv));
        pthread_mutex_unlock(&d->mu);
    }
    free(key);
    policy_event(d, obj);
}

/* Whether policy (queue key qkey; NULL: deleted) is as the first lists of a resumed start had
 * it; forgets it once it is not. */
static bool policy_as_resumed(detector *d, const char *qkey, const json_t *policy)
{
    pthread_mutex_lock(&d->mu);
    const char *had = json_string_value(json_object_get(d->resumed_policies, qkey));
    const char *rv = policy ? fl_json_meta(policy, "resourceVersion") : NULL;
    bool same = had && rv && !strcmp(had, rv);
    if (had && !same)
        json_object_del(d->resumed_policies, qkey);
    pthread_mutex_unlock(&d->mu);
    return same;
}

static void policy_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    policy_event(ctx, new_obj);
}

static void policy_deleted(void *ctx, json_t *obj)
{
    policy_event(ctx, obj);
}

/* A binding deleted or changed by someone else: its template decides again (a binding deleted
 * while its template lives is re-created, as Karmada does). */
static void binding_event(detector *d, const json_t *b, bool user)
{
    const json_t *r = json_object_get(json_object_get(b, "spec"), "resource");
    const char *av = fl_json_str(r, "apiVersion"), *kind = fl_json_str(r, "kind"), *name = fl_json_str(r, "name");
    if (!av || !kind || !name)
        return;
    if (!fl_json_meta_map(b, "labels", FL_PP_ID_LABEL) && !fl_json_meta_map(b, "labels", FL_CPP_ID_LABEL))
        return; /* not a binding the detector made (an attached dependency binding) */
    char *key = template_key(av, kind, fl_json_str(r, "namespace"), name);
    queue_template(d, key, user);
    free(key);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    /* only spec changes by others matter; status and spec.clusters are other controllers' */
    json_t *os = fl_json_shallow_copy(json_object_get(old_obj, "spec")),
           *ns = fl_json_shallow_copy(json_object_get(new_obj, "spec"));
    json_object_del(os, "clusters");
    json_object_del(ns, "clusters");
    bool same = fl_json_same(os, ns) && fl_json_same(json_object_get(json_object_get(old_obj, "metadata"), "labels"),
                                                 json_object_get(json_object_get(new_obj, "metadata"), "labels"));
    json_decref(os);
    json_decref(ns);
    if (!same)
        binding_event(ctx, new_obj, true);
}

static void binding_deleted(void *ctx, json_t *obj)
{
    binding_event(ctx, obj, true);
}

/* The interpreter's answers for a kind changed (a customization or webhook was added,
 * changed or deleted): its templates decide again, so that their bindings carry the new
 * replicas and requirements, and a template whose GetReplicas failed gets its binding.
 * Queued as a policy change is, not as a change of the template's own: a template under a
 * Lazy policy keeps its binding until the template itself changes. A change for any
 * apiVersion or kind (a webhook rule with "*") reaches the templates that have bindings. */
static void interp_changed(void *ctx, const char *api_version, const char *kind)
{
    detector *d = ctx;
    fl_ctrl_resume_broad(&d->env);
    if (api_version && kind) {
        json_t *all = fl_templates_list(d->env.templates, api_version, kind, NULL); /* empty: not watched */
        size_t i;
        json_t *obj;
        json_array_foreach(all, i, obj) {
            const char *ns = fl_json_meta(obj, "namespace"), *name = fl_json_meta(obj, "name");
            if (!name || reserved_namespace(ns))
                continue;
            char *key = template_key(api_version, kind, ns, name);
            queue_template(d, key, false);
            free(key);
        }
        json_decref(all);
        return;
    }
    for (int b = 0; b < 2; b++) {
        json_t *all = fl_informer_list(b ? d->crbs : d->rbs, NULL);
        size_t i;
        json_t *bind;
        json_array_foreach(all, i, bind) {
            const json_t *r = json_object_get(json_object_get(bind, "spec"), "resource");
            if (fl_ctrl_interp_matches(api_version, kind, fl_json_str(r, "apiVersion"), fl_json_str(r, "kind")))
                binding_event(d, bind, false);
        }
        json_decref(all);
    }
}

/* ---- policy reconcile ---- */

/* Watch the kinds a policy names and queue the templates it selects; then queue every
 * template a binding says this policy claimed (its selectors may have stopped matching). */
static int reconcile_policy(detector *d, bool cluster, const char *key)
{
    json_t *policy = NULL;
    fl_informer_get_key(cluster ? d->cpps : d->pps, key, &policy);
    int rc = 0;
    char *qkey = fl_asprintf("%c|%s", cluster ? 'C' : 'P', key);
    /* resumed at the revision it was reconciled at: what it selects was decided then */
    bool resumed = policy_as_resumed(d, qkey, policy);
    if (policy) {
        const char *pns = cluster ? NULL : fl_json_meta(policy, "namespace");
        json_t *sels = json_object_get(json_object_get(policy, "spec"), "resourceSelectors");
        size_t i;
        json_t *sel;
        json_array_foreach(sels, i, sel) {
            const char *av = fl_json_str(sel, "apiVersion"), *kind = fl_json_str(sel, "kind");
            if (!av || !kind || reserved_group(av))
                continue;
            const fl_template_kind *k = NULL;
            int w = fl_templates_watch(d->env.templates, av, kind, 0, &k);
            if (w == FL_ENOTFOUND || w == FL_EIO) {
                /* not served yet (its CRD comes later): look again in a while */
                fl_workqueue_add_after(d->q, qkey, 2000);
                continue;
            }
            if (!k || resumed)
                continue;
            /* templates not listed yet arrive through the informer's adds: not skipped from
             * now on, if the kind's first list (started now, perhaps) is still going */
            fl_ctrl_resume_broad(&d->env);
            json_t *all = fl_templates_list(d->env.templates, av, kind, k->namespaced ? pns : NULL);
            size_t j;
            json_t *obj;
            json_array_foreach(all, j, obj) {
                fl_policy_match_level lvl = FL_POLICY_MATCH_NONE;
                char *err = NULL;
                if (fl_policy_selector_level(sel, obj, pns, &lvl, &err) == 0 && lvl != FL_POLICY_MATCH_NONE)
                    enqueue_template(d, false, k, obj);
                free(err);
            }
            json_decref(all);
        }
    }
    free(qkey);
    if (resumed) {
        json_decref(policy);
        return rc;
    }
    /* templates claimed by this policy (by name: the policy may be gone, with its ID) */
    const char *name_ann = cluster ? FL_CPP_NAME_ANNOTATION : FL_PP_NAME_ANNOTATION;
    const char *slash = strchr(key, '/');
    const char *pname = cluster || !slash ? key : slash + 1;
    for (int b = 0; b < 2; b++) {
        json_t *all = fl_informer_list(b ? d->crbs : d->rbs, NULL);
        size_t j;
        json_t *bind;
        json_array_foreach(all, j, bind) {
            const char *n = fl_json_meta_map(bind, "annotations", name_ann);
            if (!n || strcmp(n, pname))
                continue;
            if (!cluster) {
                const char *ns = fl_json_meta_map(bind, "annotations", FL_PP_NAMESPACE_ANNOTATION);
                if (!ns || (size_t)(slash - key) != strlen(ns) || strncmp(ns, key, strlen(ns)))
                    continue;
            }
            binding_event(d, bind, false);
        }
        json_decref(all);
    }
    json_decref(policy);
    return rc;
}

/* ---- template reconcile ---- */

/* The policy that has claimed template, if it still exists (same permanent ID). */
static json_t *claiming_policy(detector *d, const json_t *tmpl)
{
    json_t *p = NULL;
    const char *id = fl_json_meta_map(tmpl, "labels", FL_PP_ID_LABEL);
    if (id) {
        const char *ns = fl_json_meta_map(tmpl, "annotations", FL_PP_NAMESPACE_ANNOTATION),
                   *name = fl_json_meta_map(tmpl, "annotations", FL_PP_NAME_ANNOTATION);
        if (ns && name)
            fl_informer_get(d->pps, ns, name, &p);
    } else if ((id = fl_json_meta_map(tmpl, "labels", FL_CPP_ID_LABEL))) {
        const char *name = fl_json_meta_map(tmpl, "annotations", FL_CPP_NAME_ANNOTATION);
        if (name)
            fl_informer_get(d->cpps, NULL, name, &p);
    }
    if (p && (!policy_id(p) || strcmp(policy_id(p), id) || fl_json_meta(p, "deletionTimestamp"))) {
        json_decref(p);
        p = NULL;
    }
    return p;
}

/* The best policy among those that may preempt claimer for tmpl (borrowed from policies), or
 * NULL: none asks for it or none may. */
static const json_t *preemptor(const json_t *tmpl, const json_t *policies, const json_t *claimer)
{
    json_t *able = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(policies, i, p) {
        if (policy_id(p) && policy_id(claimer) && !strcmp(policy_id(p), policy_id(claimer)))
            continue;
        bool may = false;
        char *err = NULL;
        if (fl_policy_may_preempt(p, claimer, tmpl, &may, &err) == 0 && may)
            json_array_append(able, p);
        free(err);
    }
    const json_t *best = NULL;
    char *err = NULL;
    if (json_array_size(able) && fl_policy_select(tmpl, able, &best, NULL, &err) != 0)
        best = NULL;
    free(err);
    /* best points into able, whose elements are policies' (shared, not copied) */
    json_decref(able);
    return best;
}

/* The claim labels and annotations as a merge patch for metadata: those of policy (NULL: none). */
static json_t *claim_patch(const json_t *obj, const json_t *policy)
{
    json_t *labels = json_object(), *anns = json_object();
    bool cpp = policy && is_cpp(policy);
    const char *want_pp = policy && !cpp ? policy_id(policy) : NULL;
    const char *want_cpp = cpp ? policy_id(policy) : NULL;
    bool change = false;
#define WANT(map, which, key, val)                                                                                     \
    do {                                                                                                               \
        const char *have_ = fl_json_meta_map(obj, which, key);                                                         \
        const char *want_ = (val);                                                                                     \
        if (want_ ? !have_ || strcmp(have_, want_) : have_ != NULL) {                                                  \
            json_object_set_new(map, key, want_ ? json_string(want_) : json_null());                                   \
            change = true;                                                                                             \
        }                                                                                                              \
    } while (0)
    WANT(labels, "labels", FL_PP_ID_LABEL, want_pp);
    WANT(labels, "labels", FL_CPP_ID_LABEL, want_cpp);
    WANT(anns, "annotations", FL_PP_NAMESPACE_ANNOTATION, want_pp ? fl_json_meta(policy, "namespace") : NULL);
    WANT(anns, "annotations", FL_PP_NAME_ANNOTATION, want_pp ? fl_json_meta(policy, "name") : NULL);
    WANT(anns, "annotations", FL_CPP_NAME_ANNOTATION, want_cpp ? fl_json_meta(policy, "name") : NULL);
#undef WANT
    if (!change) {
        json_decref(labels);
        json_decref(anns);
        return NULL;
    }
    json_t *m = json_object();
    if (json_object_size(labels))
        json_object_set(m, "labels", labels);
    if (json_object_size(anns))
        json_object_set(m, "annotations", anns);
    json_decref(labels);
    json_decref(anns);
    return json_pack("{s:o}", "metadata", m);
}

/* Merge-patch metadata of the object of this kind; *out (may be NULL) receives the patched object. */
static int patch_metadata(detector *d, const fl_gvr *r, const char *kind, const char *ns, const char *name,
                          json_t *patch, json_t **out)
{
    size_t n = 0;
    char *body = fl_json_dumps(patch, &n);
    fl_client_error ce;
    int rc = fl_client_patch(d->env.cp, r, ns, name, FL_PATCH_MERGE, body, n, NULL, out, &ce);
    free(body);
    if (rc && rc != FL_ENOTFOUND)
        fl_log_kv(FL_LOG_WARN, LOG, "patching the metadata failed", "object", FL_LOG_OBJ(kind, ns, name), "err",
                  fl_errmsg(ce.message, rc), NULL);
    return rc == FL_ENOTFOUND ? 0 : rc;
}

/* The binding of a template: ResourceBinding in its namespace, ClusterResourceBinding for
 * cluster-scoped templates. */
static void binding_of(detector *d, const fl_template_kind *k, const char *ns, const char *name, fl_gvr *gvr,
                       const char **bns, char **bname, json_t **existing)
{
    *bname = fl_names_binding(k->kind, name);
    *gvr = (fl_gvr){RB_API, k->namespaced ? "resourcebindings" : "clusterresourcebindings"};
    *bns = k->namespaced ? ns : NULL;
    *existing = NULL;
    fl_informer_get(k->namespaced ? d->rbs : d->crbs, *bns, *bname, existing);
}

static bool binding_is_for(const json_t *b, const char *av, const char *kind, const char *name)
{
    const json_t *r = json_object_get(json_object_get(b, "spec"), "resource");
    return b && fl_json_str(r, "apiVersion") && !strcmp(fl_json_str(r, "apiVersion"), av) && fl_json_str(r, "kind") &&
           !strcmp(fl_json_str(r, "kind"), kind) && fl_json_str(r, "name") && !strcmp(fl_json_str(r, "name"), name);
}

/* Put src[key] into dst[key], or remove it when src has none. */
static void copy_field(json_t *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    if (v && !json_is_null(v))
        json_object_set_new(dst, key, fl_json_deep_copy(v));
    else
        json_object_del(dst, key);
}

/* Write the binding's spec fields that come from template and policy into spec. */
static int fill_binding_spec(detector *d, json_t *spec, json_t *annotations, const json_t *tmpl, const json_t *policy,
                             char **err)
{
    const json_t *ps = json_object_get(policy, "spec");
    const json_t *md = json_object_get(tmpl, "metadata");
    json_t *res = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?}", "apiVersion", fl_json_str(tmpl, "apiVersion"), "kind",
                            fl_json_str(tmpl, "kind"), "name", fl_json_str(md, "name"), "uid", fl_json_str(md, "uid"),
                            "resourceVersion", fl_json_str(md, "resourceVersion"));
    if (fl_json_str(md, "namespace"))
        json_object_set_new(res, "namespace", json_string(fl_json_str(md, "namespace")));
    json_object_set_new(spec, "resource", res);
    copy_field(spec, ps, "placement");
    copy_field(spec, ps, "propagateDeps");
    copy_field(spec, ps, "failover");
    copy_field(spec, ps, "conflictResolution");
    copy_field(spec, ps, "preserveResourcesOnDeletion");
    copy_field(spec, ps, "schedulerName");
    /* suspension: the policy's, unless the user suspended the binding itself and the
     * policy's own suspension has not changed since we last copied it */
    json_t *psusp = json_object_get(ps, "suspension");
    char *want = psusp && !json_is_null(psusp) ? fl_json_dumps(psusp, NULL) : fl_strdup("");
    const char *last = fl_json_str(annotations, SUSPENSION_ANNOTATION);
    if (!last || strcmp(last, want)) {
        /* suspension.scheduling is the binding's own (users or admission set it; a policy has
         * none): it survives the copy */
        json_t *sched = json_incref(json_object_get(json_object_get(spec, "suspension"), "scheduling"));
        copy_field(spec, ps, "suspension");
        if (sched) {
            json_t *bs = json_object_get(spec, "suspension");
            if (!json_is_object(bs)) {
                bs = json_object();
                json_object_set_new(spec, "suspension", bs);
            }
            json_object_set(bs, "scheduling", sched);
            json_decref(sched);
        }
        json_object_set_new(annotations, SUSPENSION_ANNOTATION, json_string(want));
    }
    free(want);
    fl_migration_binding_marks(annotations, json_object_get(json_object_get(policy, "metadata"), "annotations"));

    /* Karmada's applyReplicaInterpretation (MultiplePodTemplatesScheduling on): a kind
     * with a componentResource rule is described by its components alone, spec.replicas
     * and spec.replicaRequirements left out; any other by GetReplicas */
    const char *av = fl_json_str(tmpl, "apiVersion"), *kind = fl_json_str(tmpl, "kind");
    if (fl_interp_has(d->env.interp, av, kind, FL_INTERP_COMPONENT)) {
        json_t *comps = NULL;
        int rc = fl_interp_get_components(d->env.interp, tmpl, &comps, err);
        if (rc)
            return rc;
        json_object_del(spec, "replicas");
        json_object_del(spec, "replicaRequirements");
        if (json_array_size(comps))
            json_object_set_new(spec, "components", comps);
        else {
            json_decref(comps);
            json_object_del(spec, "components");
        }
        return 0;
    }
    json_object_del(spec, "components");
    if (fl_interp_has(d->env.interp, av, kind, FL_INTERP_REPLICA)) {
        int64_t replicas = 0;
        json_t *req = NULL;
        int rc = fl_interp_get_replicas(d->env.interp, tmpl, &replicas, &req, err);
        if (rc)
            return rc;
        json_object_set_new(spec, "replicas", json_integer(replicas));
        if (req && json_object_size(req))
            json_object_set_new(spec, "replicaRequirements", req);
        else {
            json_decref(req);
            json_object_del(spec, "replicaRequirements");
        }
    }
    return 0;
}

static int delete_binding(detector *d, const fl_gvr *gvr, const char *ns, const char *name, const json_t *b)
{
    fl_client_error ce;
    fl_delete_opts o = {.precondition_uid = fl_json_meta(b, "uid")};
    int rc = fl_client_delete(d->env.cp, gvr, ns, name, &o, NULL, &ce);
    if (rc == 0)
        fl_log_kv(FL_LOG_INFO, LOG, "template gone: deleted its binding", "object",
                  FL_LOG_OBJ(ns ? "ResourceBinding" : "ClusterResourceBinding", ns, name), NULL);
    return rc == FL_ENOTFOUND || rc == FL_ECONFLICT ? 0 : rc;
}

/* What one reconcile of a template works on, filled in by its steps in order. */
typedef struct {
    detector *d;
    const fl_template_kind *k;
    const char *av, *kind, *ns, *name; /* the template, from the queue key */
    json_t *tmpl;                      /* as cached, then as claimed; NULL when gone (owned) */
    fl_gvr gvr;                        /* its binding's resource, */
    const char *bns;                   /* namespace (NULL: a ClusterResourceBinding) */
    char *bname;                       /* and name (owned) */
    json_t *existing;                  /* the binding as cached, or NULL (owned) */
    json_t *chosen;                    /* the policy that propagates it, or NULL (owned) */
} tmpl_rec;

/* 1. The template is gone: delete the binding we made for it (claimed by a policy or owned
 * by the template; not one that merely has its name). */
static int template_gone(tmpl_rec *t, bool synced)
{
    if (!synced)
        return FL_ETIMEDOUT; /* absent only because not listed yet: again later */
    const json_t *b = t->existing;
    if (b && binding_is_for(b, t->av, t->kind, t->name) &&
        (fl_json_meta_map(b, "labels", FL_PP_ID_LABEL) || fl_json_meta_map(b, "labels", FL_CPP_ID_LABEL) ||
         json_object_get(json_object_get(b, "metadata"), "ownerReferences")))
        return delete_binding(t->d, &t->gvr, t->bns, t->bname, b);
    return 0;
}

/* 2. Choose the policy for the template into t->chosen (NULL: none selects it): the one that
 * claims it while it still matches, unless a preempting policy takes it; else the best. False
 * when the policies could not be matched (logged). */
static bool choose_policy(tmpl_rec *t)
{
    detector *d = t->d;
    json_t *policies = json_array();
    if (t->k->namespaced) { /* PropagationPolicies select only in their own namespace */
        json_t *pp = fl_informer_list(d->pps, t->ns);
        json_array_extend(policies, pp);
        json_decref(pp);
    }
    json_t *cpp = fl_informer_list(d->cpps, NULL);
    json_array_extend(policies, cpp);
    json_decref(cpp);
    const json_t *best = NULL;
    char *err = NULL;
    if (fl_policy_select(t->tmpl, policies, &best, NULL, &err)) {
        fl_log_kv(FL_LOG_WARN, LOG, "selecting a policy failed", "object", FL_LOG_OBJ(t->kind, t->ns, t->name), "err",
                  err, NULL);
        free(err);
        json_decref(policies);
        return false;
    }
    json_t *claimer = claiming_policy(d, t->tmpl);
    if (claimer) {
        fl_policy_match_level lvl = FL_POLICY_MATCH_NONE;
        char *e2 = NULL;
        fl_policy_match_level_of(claimer, t->tmpl, &lvl, &e2);
        free(e2);
        const json_t *pre = NULL;
        if (lvl == FL_POLICY_MATCH_NONE) {
            t->chosen = best ? json_incref((json_t *)best) : NULL;
            json_decref(claimer);
        } else if ((pre = preemptor(t->tmpl, policies, claimer))) {
            /* preemption acts for the policies that ask for it: the best of those that may
             * take the template from its claimer, even when a better policy exists that
             * does not preempt */
            fl_event(d->env.recorder, t->tmpl, "Normal", "PreemptPolicySucceed", "%s %s%s%s preempted %s %s%s%s",
                     fl_json_str(pre, "kind"), fl_json_meta(pre, "namespace") ? fl_json_meta(pre, "namespace") : "",
                     fl_json_meta(pre, "namespace") ? "/" : "", fl_json_meta(pre, "name"), fl_json_str(claimer, "kind"),
                     fl_json_meta(claimer, "namespace") ? fl_json_meta(claimer, "namespace") : "",
                     fl_json_meta(claimer, "namespace") ? "/" : "", fl_json_meta(claimer, "name"));
            t->chosen = json_incref((json_t *)pre);
            json_decref(claimer);
        } else {
            t->chosen = claimer;
        }
    } else if (best) {
        t->chosen = json_incref((json_t *)best);
    }
    json_decref(policies);
    return true;
}

/* 3. No policy selects the template: take our claim off it and off its binding. What was
 * delivered stays. */
static int release_template(tmpl_rec *t)
{
    int rc = 0;
    json_t *patch = claim_patch(t->tmpl, NULL);
    if (patch) {
        fl_gvr tg = {t->av, t->k->resource};
        rc = patch_metadata(t->d, &tg, t->kind, t->k->namespaced ? t->ns : NULL, t->name, patch, NULL);
        json_decref(patch);
        if (rc)
            return rc;
        fl_log_kv(FL_LOG_INFO, LOG, "no policy selects it any more: released", "object",
                  FL_LOG_OBJ(t->kind, t->ns, t->name), NULL);
        fl_event(t->d->env.recorder, t->tmpl, "Normal", "PolicyReleased",
                 "No propagation policy selects it any more: released (what was delivered stays)");
    }
    if (t->existing) {
        patch = claim_patch(t->existing, NULL);
        if (patch) {
            rc = patch_metadata(t->d, &t->gvr, t->bns ? "ResourceBinding" : "ClusterResourceBinding", t->bns, t->bname,
                                patch, NULL);
            json_decref(patch);
        }
    }
    return rc;
}

/* 4. Claim the template for t->chosen, when it is not claimed so already, and go on with
 * the claimed template (its new resourceVersion) rather than wait for the informer to bring
 * the claim back: one round trip less before the binding. *go_on is false when the claim
 * did not land (the template gone, or rc). */
static int claim_template(tmpl_rec *t, bool *go_on)
{
    *go_on = true;
    json_t *patch = claim_patch(t->tmpl, t->chosen);
    if (!patch)
        return 0;
    fl_gvr tg = {t->av, t->k->resource};
    json_t *claimed = NULL;
    int rc = patch_metadata(t->d, &tg, t->kind, t->k->namespaced ? t->ns : NULL, t->name, patch, &claimed);
    json_decref(patch);
    if (rc || !claimed) {
        json_decref(claimed);
        *go_on = false;
        return rc;
    }
    json_decref(t->tmpl);
    t->tmpl = claimed;
    return 0;
}

/* Apply the null-means-delete members of src (a claim patch's labels or annotations) to dst. */
static void merge_claim_map(json_t *dst, const json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v) {
        if (json_is_null(v))
            json_object_del(dst, k);
        else
            json_object_set(dst, k, v);
    }
}

/* 5a. The binding to write, but for its spec: a new one (create), or the cached one with the
 * claim, owner and namespace of now. A new reference. */
static json_t *binding_metadata(const tmpl_rec *t, bool create)
{
    json_t *binding = create ? json_pack("{s:s, s:s, s:{s:s}, s:{}}", "apiVersion", RB_API, "kind",
                                         t->k->namespaced ? "ResourceBinding" : "ClusterResourceBinding", "metadata",
                                         "name", t->bname, "spec")
                             : fl_json_shallow_copy(t->existing);
    /* of an existing binding, copies only of the maps changed below (members replaced, not
     * changed in place); spec.clusters, the status and the managed fields stay shared */
    fl_json_own_child(binding, "spec");
    json_t *bmd = fl_json_own_child(binding, "metadata");
    fl_json_own_child(bmd, "labels");
    fl_json_own_child(bmd, "annotations");
    bmd = json_object_get(binding, "metadata");
    if (create && t->bns)
        json_object_set_new(bmd, "namespace", json_string(t->bns));
    json_t *anns = fl_json_ensure_obj(bmd, "annotations");
    json_t *labels = fl_json_ensure_obj(bmd, "labels");
    /* claim metadata, as on the template */
    json_t *cp = claim_patch(binding, t->chosen);
    if (cp) {
        json_t *pm = json_object_get(cp, "metadata");
        merge_claim_map(labels, json_object_get(pm, "labels"));
        merge_claim_map(anns, json_object_get(pm, "annotations"));
        json_decref(cp);
    }
    json_object_set_new(bmd, "ownerReferences",
                        json_pack("[{s:s, s:s, s:s, s:s?, s:b, s:b}]", "apiVersion", t->av, "kind", t->kind, "name",
                                  t->name, "uid", fl_json_meta(t->tmpl, "uid"), "controller", 1, "blockOwnerDeletion",
                                  1));
    if (create)
        json_object_set_new(bmd, "finalizers", json_pack("[s]", FL_BINDING_FINALIZER));
    return binding;
}

/* Is binding the existing one but for spec.resource.resourceVersion? The template's
 * resourceVersion alone moves with every status write of its aggregation: the binding follows
 * it only when something else changes too. */
static bool same_but_resource_version(json_t *binding, const json_t *existing)
{
    json_t *res = json_object_get(json_object_get(binding, "spec"), "resource");
    json_t *had = json_object_get(json_object_get(json_object_get(existing, "spec"), "resource"), "resourceVersion");
    json_t *now_rv = json_incref(json_object_get(res, "resourceVersion"));
    if (had)
        json_object_set(res, "resourceVersion", had);
    bool same = fl_json_same(binding, existing);
    if (now_rv)
        json_object_set(res, "resourceVersion", now_rv);
    json_decref(now_rv);
    return same;
}

/* 5b. Create or update the binding (*binding is handed over on update, and NULL after), with
 * the events Karmada records on the template. */
static int write_binding(tmpl_rec *t, json_t **binding, bool create)
{
    detector *d = t->d;
    const json_t *chosen = t->chosen;
    if (create && t->existing) {
        /* a binding of that name for another object (a kind collision): leave it, say so */
        fl_event(d->env.recorder, t->tmpl, "Warning", "ApplyPolicyFailed",
                 "binding %s already exists for another resource", t->bname);
        return 0;
    }
    fl_client_error ce;
    json_t *written = NULL;
    int rc;
    if (create) {
        rc = fl_client_create(d->env.cp, &t->gvr, t->bns, *binding, NULL, &written, &ce);
    } else {
        /* handed over: in process the server stores it without copying the whole binding */
        rc = fl_client_update_given(d->env.cp, &t->gvr, t->bns, *binding, NULL, NULL, &ce);
        *binding = NULL;
    }
    json_decref(written);
    if (rc == FL_ECONFLICT || rc == FL_EEXIST)
        return rc; /* our cache is behind: the event that brings it requeues us */
    const char *pns = fl_json_meta(chosen, "namespace");
    if (rc) {
        fl_log_kv(FL_LOG_WARN, LOG, create ? "creating the binding failed" : "updating the binding failed", "object",
                  FL_LOG_OBJ(t->bns ? "ResourceBinding" : "ClusterResourceBinding", t->bns, t->bname), "err",
                  fl_errmsg(ce.message, rc), NULL);
        fl_event(d->env.recorder, t->tmpl, "Warning", "ApplyPolicyFailed", "Apply policy(%s%s%s) failed: %s",
                 pns ? pns : "", pns ? "/" : "", fl_json_meta(chosen, "name"), fl_errmsg(ce.message, rc));
        return rc;
    }
    if (create)
        fl_event(d->env.recorder, t->tmpl, "Normal", "ApplyPolicySucceed", "Apply policy(%s%s%s) succeed",
                 pns ? pns : "", pns ? "/" : "", fl_json_meta(chosen, "name"));
    return 0;
}

/* Reconcile one template: 1. gone, its binding goes; 2. choose its policy; 3. none: release
 * it; 4. claim it; 5. write its binding. */
static int reconcile_template(detector *d, const char *key)
{
    char *copy = fl_strdup(key), *av, *kind, *ns, *name;
    bool lazy_cause = !take_user_changed(d, key);
    int rc = 0;
    tmpl_rec t = {.d = d};
    json_t *binding = NULL;
    char *err = NULL;
    if (!split_template_key(copy, &av, &kind, &ns, &name))
        goto out;
    t.av = av, t.kind = kind, t.ns = ns, t.name = name;
    fl_templates_watch(d->env.templates, av, kind, 0, &t.k);
    if (!t.k)
        goto out; /* the kind went away (its CRD deleted): its templates went with it */
    bool synced = false;
    fl_templates_get(d->env.templates, av, kind, ns, name, &t.tmpl, &synced);
    binding_of(d, t.k, ns, name, &t.gvr, &t.bns, &t.bname, &t.existing);
    if (!t.tmpl) {
        rc = template_gone(&t, synced);
        goto out;
    }
    if (fl_json_meta(t.tmpl, "deletionTimestamp"))
        goto out; /* going: the binding follows once it is gone */

    if (!choose_policy(&t))
        goto out;
    if (!t.chosen) {
        rc = release_template(&t);
        goto out;
    }

    /* Lazy: on a policy change alone, claim the template but build or change nothing else;
     * its next own change applies the policy */
    const char *act = fl_json_str(json_object_get(t.chosen, "spec"), "activationPreference");
    bool lazy = lazy_cause && act && !strcmp(act, "Lazy");
    bool go_on;
    rc = claim_template(&t, &go_on);
    if (!go_on || lazy)
        goto out;

    bool create = !t.existing || !binding_is_for(t.existing, av, kind, name);
    if (!create && fl_json_meta(t.existing, "deletionTimestamp")) {
        rc = FL_ETIMEDOUT; /* the old one is still going: create the new one after */
        goto out;
    }
    binding = binding_metadata(&t, create);
    json_t *anns = json_object_get(json_object_get(binding, "metadata"), "annotations");
    rc = fill_binding_spec(d, json_object_get(binding, "spec"), anns, t.tmpl, t.chosen, &err);
    if (rc) {
        /* on the template, as Karmada reports it, and on the binding, which keeps the
         * replicas it had; the message is the interpreter's (customization, script line) */
        const char *why = err ? err : fl_strerror(rc);
        fl_log_kv(FL_LOG_WARN, LOG, "interpreting the replicas failed", "object", FL_LOG_OBJ(kind, ns, name), "err",
                  why, NULL);
        fl_event(d->env.recorder, t.tmpl, "Warning", "GetReplicasFailed", "%s", why);
        if (!create)
            fl_event(d->env.recorder, t.existing, "Warning", "GetReplicasFailed", "%s", why);
        rc = 0; /* the template or the customization must change first (both requeue us) */
        goto out;
    }
    if (!create && same_but_resource_version(binding, t.existing))
        goto out;
    rc = write_binding(&t, &binding, create);
out:
    json_decref(t.tmpl);
    json_decref(t.chosen);
    json_decref(t.existing);
    json_decref(binding);
    free(t.bname);
    free(err);
    free(copy);
    return rc;
}

static int reconcile(void *ctx, const char *key)
{
    detector *d = ctx;
    /* deciding on half-listed caches could release a claim that is still valid */
    if (!fl_informer_has_synced(d->pps) || !fl_informer_has_synced(d->cpps) || !fl_informer_has_synced(d->rbs) ||
        !fl_informer_has_synced(d->crbs))
        return FL_ETIMEDOUT;
    if (key[0] == 'P' || key[0] == 'C')
        return reconcile_policy(d, key[0] == 'C', key + 2);
    return reconcile_template(d, key);
}

/* ---- lifecycle ---- */

static int detector_start(const fl_ctrl_env *env, void **state)
{
    detector *d = fl_calloc(1, sizeof *d);
    d->env = *env;
    d->q = fl_workqueue_new(NULL);
    fl_ctrl_resumable(env, d->q);
    pthread_mutex_init(&d->mu, NULL);
    d->user_changed = json_object();
    d->resumed_policies = json_object();
    d->pps = fl_ctrl_informer(env, "policy.karmada.io/v1alpha1", "propagationpolicies");
    d->cpps = fl_ctrl_informer(env, "policy.karmada.io/v1alpha1", "clusterpropagationpolicies");
    d->rbs = fl_ctrl_informer(env, RB_API, "resourcebindings");
    d->crbs = fl_ctrl_informer(env, RB_API, "clusterresourcebindings");
    fl_informer_handlers ph = {.on_add = policy_added, .on_update = policy_updated, .on_delete = policy_deleted,
                               .ctx = d};
    fl_informer_add_handlers(d->pps, &ph);
    fl_informer_add_handlers(d->cpps, &ph);
    fl_informer_handlers bh = {.on_update = binding_updated, .on_delete = binding_deleted, .ctx = d};
    fl_informer_add_handlers(d->rbs, &bh);
    fl_informer_add_handlers(d->crbs, &bh);
    fl_template_handlers th = {.on_add = tmpl_added, .on_update = tmpl_updated, .on_delete = tmpl_deleted, .ctx = d};
    fl_templates_subscribe(env->templates, &th);
    fl_ctrl_on_interp_change(env, interp_changed, d);
    d->workers = fl_ctrl_workers_start_synced(d->q, "detector", DETECTOR_WORKERS, reconcile, d,
                                              (fl_informer *const[]){d->pps, d->cpps, d->rbs, d->crbs, NULL});
    *state = d;
    return 0;
}

static void detector_stop(void *state)
{
    detector *d = state;
    fl_ctrl_workers_join(d->workers);
    fl_workqueue_free(d->q);
    json_decref(d->user_changed);
    json_decref(d->resumed_policies);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

const fl_controller fl_detector_controller = {"detector", detector_start, detector_stop};
