/* dependencies.c - the dependencies distributor: with spec.propagateDeps, the ConfigMaps,
 * Secrets, ServiceAccounts and PersistentVolumeClaims a workload refers to follow it to the
 * clusters it was scheduled to. A side branch of the data path (DESIGN.md):
 *
 *     binding (propagateDeps, spec.clusters) ──► attached binding of each dependency
 *                                                (spec.requiredBy: this binding and its clusters)
 *
 * For a binding with propagateDeps, the interpreter's GetDependencies lists what its template
 * refers to. Each dependency gets an "attached" ResourceBinding (named as the detector would
 * name it, so a dependency that a policy also selects shares one binding) whose
 * spec.requiredBy holds one snapshot per dependent binding: {namespace, name, clusters}. The
 * binding controller delivers a binding to its own clusters plus every requiredBy snapshot's,
 * and the scheduler leaves bindings without placement alone, so an attached binding goes
 * exactly where its dependents go. When a dependent stops referring to it, stops propagating
 * dependencies, or goes away, its snapshot is removed; an attached binding left with no
 * snapshot and no policy of its own is deleted (and its Works with it).
 *
 * A dependency that does not exist yet is looked for again every few seconds; workloads
 * usually come up before or with their ConfigMaps, not long after.
 *
 * It runs again when a dependent binding's clusters change, when its template's spec
 * changes (a volume added or removed), and when a customization for its kind changes.
 *
 * With the reconciled revision it notes which bindings propagate dependencies and which are
 * depended on (fl_ctrl_note). A start there takes both from the note and reconciles those
 * bindings again (a dependency missing at the note is looked for again), and lets the
 * binding lists come bare: no binding unchanged since needs reading.
 *
 * Queue keys: "ns/name" of the dependent ResourceBinding (dependencies of cluster-scoped
 * templates are not followed, as in Karmada). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/names.h"
#include "controllers/templates.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/wellknown.h"
#include "interp/interp.h"

#define LOG "dependencies"
#define DEPS_WORKERS 2
#define MISSING_RETRY_MS 3000

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};

typedef struct depsctl {
    fl_ctrl_env env;
    fl_informer *rbs;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    /* "ns/name" of every binding some attached binding's requiredBy names -> {the names of
     * those attached bindings, in its namespace: true} (kept from the binding events and our
     * own writes; a name gone stale costs one read). A binding that does not propagate
     * dependencies and is not in here has nothing to do; one that is finds its snapshots
     * without a scan of its namespace's bindings, which made every pass O(n). */
    pthread_mutex_t mu;
    json_t *dependents;
    json_t *propagating; /* "ns/name" of every binding with propagateDeps (under mu) */
    bool resumed;        /* both taken from the note of the revision the start resumed at */
} depsctl;

/* Remember that attached binding aname names dependent key (under mu). */
static void note_dependent_locked(depsctl *d, const char *key, const char *aname)
{
    json_t *set = json_object_get(d->dependents, key);
    if (!set) {
        set = json_object();
        json_object_set_new(d->dependents, key, set);
    }
    json_object_set_new(set, aname, json_true());
}

/* Remember the dependents an attached binding names. */
static void note_dependents(depsctl *d, const json_t *obj)
{
    const json_t *rb = json_object_get(json_object_get(obj, "spec"), "requiredBy");
    const char *aname = fl_json_meta(obj, "name");
    if (!json_array_size(rb) || !aname)
        return;
    pthread_mutex_lock(&d->mu);
    size_t i;
    json_t *e;
    json_array_foreach(rb, i, e) {
        const char *ns = fl_json_str(e, "namespace"), *name = fl_json_str(e, "name");
        if (ns && name) {
            char *k = fl_asprintf("%s/%s", ns, name);
            note_dependent_locked(d, k, aname);
            free(k);
        }
    }
    pthread_mutex_unlock(&d->mu);
}

/* The names of the attached bindings noted as naming dependent key (a new array). */
static json_t *attached_of(depsctl *d, const char *key)
{
    json_t *out = json_array();
    const char *n;
    json_t *v;
    pthread_mutex_lock(&d->mu);
    json_object_foreach(json_object_get(d->dependents, key), n, v) json_array_append_new(out, json_string(n));
    pthread_mutex_unlock(&d->mu);
    return out;
}

/* Remember whether the binding of key k propagates its dependencies. */
static void note_propagating(depsctl *d, const char *k, bool propagates)
{
    pthread_mutex_lock(&d->mu);
    if (propagates)
        json_object_set_new(d->propagating, k, json_true());
    else
        json_object_del(d->propagating, k);
    pthread_mutex_unlock(&d->mu);
}

static bool propagates_deps(const json_t *binding)
{
    return json_is_true(json_object_get(json_object_get(binding, "spec"), "propagateDeps"));
}

static void binding_event(depsctl *d, json_t *obj, bool gone)
{
    char *k = fl_informer_key(obj);
    if (!k)
        return;
    if (!fl_informer_bare(obj)) { /* else its reconcile reads it */
        note_dependents(d, obj);
        note_propagating(d, k, !gone && propagates_deps(obj));
    }
    fl_workqueue_add(d->q, k);
    free(k);
}

static void binding_added(void *ctx, json_t *obj)
{
    depsctl *d = ctx;
    /* resumed: what it propagates and who depends on it are in the note, and the note's
     * bindings are queued */
    if (!d->resumed || !fl_ctrl_resumed_add(&d->env, obj))
        binding_event(d, obj, false);
}

static void binding_deleted(void *ctx, json_t *obj)
{
    binding_event(ctx, obj, true);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    depsctl *d = ctx;
    note_dependents(d, new_obj);
    char *k = fl_informer_key(new_obj);
    if (k)
        note_propagating(d, k, propagates_deps(new_obj));
    free(k);
    const json_t *os = json_object_get(old_obj, "spec"), *ns = json_object_get(new_obj, "spec");
    if (fl_json_same(json_object_get(os, "clusters"), json_object_get(ns, "clusters")) &&
        fl_json_same(json_object_get(os, "propagateDeps"), json_object_get(ns, "propagateDeps")) &&
        fl_json_same(json_object_get(os, "resource"), json_object_get(ns, "resource")))
        return;
    binding_event(d, new_obj, false);
}

/* A workload's spec changed: what it refers to may have too. */
static void tmpl_updated(void *ctx, const fl_template_kind *k, json_t *old_obj, json_t *new_obj)
{
    depsctl *d = ctx;
    if (!k->namespaced || fl_json_same(json_object_get(old_obj, "spec"), json_object_get(new_obj, "spec")))
        return;
    char *bname = fl_names_binding(k->kind, fl_json_meta(new_obj, "name"));
    char *key = fl_asprintf("%s/%s", fl_json_meta(new_obj, "namespace"), bname);
    fl_workqueue_add(d->q, key);
    free(key);
    free(bname);
}

/* A customization or webhook for a kind changed: bindings of that kind that propagate
 * their dependencies look again at what their templates refer to. */
static void interp_changed(void *ctx, const char *api_version, const char *kind)
{
    depsctl *d = ctx;
    json_t *all = fl_informer_list(d->rbs, NULL);
    size_t i;
    json_t *b;
    json_array_foreach(all, i, b) {
        const json_t *spec = json_object_get(b, "spec"), *res = json_object_get(spec, "resource");
        if (!json_is_true(json_object_get(spec, "propagateDeps")) ||
            !fl_ctrl_interp_matches(api_version, kind, fl_json_str(res, "apiVersion"), fl_json_str(res, "kind")))
            continue;
        char *k = fl_informer_key(b);
        if (k)
            fl_workqueue_add(d->q, k);
        free(k);
    }
    json_decref(all);
}

/* The clusters part of a requiredBy snapshot: [{name}] from the dependent's spec.clusters
 * (replicas mean nothing for a ConfigMap). */
static json_t *snapshot_clusters(const json_t *binding)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(binding, "spec"), "clusters"), i, c)
        if (fl_json_str(c, "name"))
            json_array_append_new(out, json_pack("{s:s}", "name", fl_json_str(c, "name")));
    return out;
}

/* Set (clusters != NULL) or remove (clusters NULL) dependent ns/name's snapshot in an attached
 * binding's requiredBy. Returns whether it changed. */
static bool set_snapshot(json_t *attached, const char *ns, const char *name, json_t *clusters)
{
    json_t *spec = json_object_get(attached, "spec");
    json_t *rb = json_object_get(spec, "requiredBy");
    if (!json_is_array(rb)) {
        rb = json_array();
        json_object_set_new(spec, "requiredBy", rb);
    }
    for (size_t i = 0; i < json_array_size(rb); i++) {
        json_t *e = json_array_get(rb, i);
        if (strcmp(fl_json_str(e, "namespace") ? fl_json_str(e, "namespace") : "", ns) ||
            strcmp(fl_json_str(e, "name") ? fl_json_str(e, "name") : "", name))
            continue;
        if (!clusters) {
            json_array_remove(rb, i);
            return true;
        }
        if (fl_json_same(json_object_get(e, "clusters"), clusters))
            return false;
        json_object_set(e, "clusters", clusters);
        return true;
    }
    if (!clusters)
        return false;
    json_array_append_new(rb, json_pack("{s:s, s:s, s:O}", "namespace", ns, "name", name, "clusters", clusters));
    return true;
}

static bool claimed_by_policy(const json_t *b)
{
    const json_t *labels = json_object_get(json_object_get(b, "metadata"), "labels");
    return fl_json_str(labels, FL_PP_ID_LABEL) || fl_json_str(labels, FL_CPP_ID_LABEL) ||
           json_is_object(json_object_get(json_object_get(b, "spec"), "placement"));
}

/* Write an attached binding after its requiredBy changed: deleted when nothing needs it. */
static int write_attached(depsctl *d, json_t *attached)
{
    fl_client_error ce;
    int rc;
    if (!json_array_size(json_object_get(json_object_get(attached, "spec"), "requiredBy")) &&
        !claimed_by_policy(attached)) {
        fl_delete_opts o = {.precondition_uid = fl_json_meta(attached, "uid")};
        rc = fl_client_delete(d->env.cp, &RBS, fl_json_meta(attached, "namespace"), fl_json_meta(attached, "name"), &o,
                              NULL, &ce);
    } else {
        rc = fl_client_update(d->env.cp, &RBS, fl_json_meta(attached, "namespace"), attached, NULL, NULL, &ce);
    }
    if (rc == FL_ENOTFOUND)
        rc = 0;
    if (rc && rc != FL_ECONFLICT)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the attached binding failed", "object",
                  FL_LOG_OBJ("ResourceBinding", fl_json_meta(attached, "namespace"), fl_json_meta(attached, "name")),
                  "err", fl_errmsg(ce.message, rc), NULL);
    return rc;
}

/* Is binding key (a "ns/name" string) among the attached names we want? */
static bool wanted(const json_t *want, const char *name)
{
    size_t i;
    json_t *w;
    json_array_foreach(want, i, w)
        if (!strcmp(fl_json_str(w, "binding"), name))
            return true;
    return false;
}

/* The dependencies of binding b's template (ns/name the binding) into *deps (NULL: none, or
 * it does not follow them), the template into *tmpl. False when the interpreter failed
 * (reported): what is attached stays until the template or customization changes. */
static bool dependencies_of(depsctl *d, const json_t *b, const char *ns, const char *name, json_t **tmpl, json_t **deps)
{
    const json_t *spec = json_object_get(b, "spec");
    bool follow = b && !fl_json_meta(b, "deletionTimestamp") && json_is_true(json_object_get(spec, "propagateDeps")) &&
                  json_array_size(json_object_get(spec, "clusters"));
    if (!follow)
        return true;
    const json_t *res = json_object_get(spec, "resource");
    const char *av = fl_json_str(res, "apiVersion"), *kind = fl_json_str(res, "kind");
    const fl_template_kind *k = NULL;
    if (!av || !kind || !fl_interp_has(d->env.interp, av, kind, FL_INTERP_DEPENDENCY) ||
        fl_templates_watch(d->env.templates, av, kind, 5000, &k) != 0 ||
        fl_templates_get(d->env.templates, av, kind, fl_json_str(res, "namespace"), fl_json_str(res, "name"), tmpl,
                         NULL) != 0)
        return true;
    char *err = NULL;
    if (!fl_interp_get_dependencies(d->env.interp, *tmpl, deps, &err))
        return true;
    /* the interpreter's message (customization, script line), on the binding and on the
     * template (where Karmada reports it) */
    fl_log_kv(FL_LOG_WARN, LOG, "interpreting the dependencies failed", "object",
              FL_LOG_OBJ("ResourceBinding", ns, name), "err", err, NULL);
    fl_event(d->env.recorder, b, "Warning", "GetDependenciesFailed", "%s", err ? err : "");
    fl_event(d->env.recorder, *tmpl, "Warning", "GetDependenciesFailed", "%s", err ? err : "");
    free(err);
    return false;
}

/* What should be attached: each dependency in deps that exists, in namespace ns, as
 * [{"binding": its binding's name, "object": its template}]. *retry when one is not there
 * (yet). A new array. */
static json_t *wanted_attached(depsctl *d, const json_t *deps, const char *ns, bool *retry)
{
    json_t *want = json_array();
    size_t i;
    json_t *dep;
    json_array_foreach(deps, i, dep) {
        const char *dav = fl_json_str(dep, "apiVersion"), *dkind = fl_json_str(dep, "kind"),
                   *dname = fl_json_str(dep, "name");
        const char *dns = fl_json_str(dep, "namespace") ? fl_json_str(dep, "namespace") : ns;
        if (!dav || !dkind || !dname || strcmp(dns, ns))
            continue; /* dependencies live in the workload's namespace */
        const fl_template_kind *k = NULL;
        json_t *obj = NULL;
        if (fl_templates_watch(d->env.templates, dav, dkind, 5000, &k) || !k ||
            fl_templates_get(d->env.templates, dav, dkind, dns, dname, &obj, NULL)) {
            *retry = true; /* not there (yet) */
            continue;
        }
        char *bname = fl_names_binding(dkind, dname);
        json_array_append_new(want, json_pack("{s:s, s:o}", "binding", bname, "object", obj));
        free(bname);
    }
    return want;
}

/* A new attached binding bname in ns for template obj: owned by it, with our finalizer. */
static json_t *new_attached(const char *ns, const char *bname, const json_t *obj)
{
    const json_t *om = json_object_get(obj, "metadata");
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s?, s:b, s:b}], s:[s]}, "
                     "s:{s:{s:s, s:s, s:s, s:s, s:s?, s:s?}}}",
                     "apiVersion", RBS.api_version, "kind", "ResourceBinding", "metadata", "name", bname, "namespace",
                     ns, "ownerReferences", "apiVersion", fl_json_str(obj, "apiVersion"), "kind",
                     fl_json_str(obj, "kind"), "name", fl_json_str(om, "name"), "uid", fl_json_str(om, "uid"),
                     "controller", 1, "blockOwnerDeletion", 1, "finalizers", FL_BINDING_FINALIZER, "spec", "resource",
                     "apiVersion", fl_json_str(obj, "apiVersion"), "kind", fl_json_str(obj, "kind"), "namespace", ns,
                     "name", fl_json_str(om, "name"), "uid", fl_json_str(om, "uid"), "resourceVersion",
                     fl_json_str(om, "resourceVersion"));
}

/* Add or refresh the snapshot of binding ns/name (queue key key; its clusters) in every
 * wanted attached binding, creating those missing. *retry when one is still going. Returns
 * the first failure. */
static int attach_wanted(depsctl *d, const char *key, const char *ns, const char *name, const json_t *want,
                         json_t *clusters, bool *retry)
{
    int rc = 0;
    size_t i;
    json_t *w;
    json_array_foreach(want, i, w) {
        const char *bname = fl_json_str(w, "binding");
        json_t *have = NULL;
        fl_informer_get(d->rbs, ns, bname, &have);
        if (have && fl_json_meta(have, "deletionTimestamp")) {
            json_decref(have);
            *retry = true;
            continue;
        }
        json_t *att = have ? fl_json_deep_copy(have) : new_attached(ns, bname, json_object_get(w, "object"));
        bool changed = set_snapshot(att, ns, name, clusters);
        pthread_mutex_lock(&d->mu);
        note_dependent_locked(d, key, bname); /* before its event: a pass may follow at once */
        pthread_mutex_unlock(&d->mu);
        if (!have || changed) {
            fl_client_error ce;
            int r = have ? fl_client_update(d->env.cp, &RBS, ns, att, NULL, NULL, &ce)
                         : fl_client_create(d->env.cp, &RBS, ns, att, NULL, NULL, &ce);
            if (r == 0 && !have)
                fl_log_kv(FL_LOG_INFO, LOG, "created an attached binding (propagateDeps)", "object",
                          FL_LOG_OBJ("ResourceBinding", ns, bname), "follows", FL_LOG_OBJ("ResourceBinding", ns, name),
                          NULL);
            if (r && r != FL_ECONFLICT && r != FL_EEXIST)
                fl_log_kv(FL_LOG_WARN, LOG, "writing the attached binding failed", "object",
                          FL_LOG_OBJ("ResourceBinding", ns, bname), "err", fl_errmsg(ce.message, r), NULL);
            if (r && !rc)
                rc = r;
        }
        json_decref(att);
        json_decref(have);
    }
    return rc;
}

/* Remove the snapshot of binding ns/name (queue key key) where it is no longer wanted: in the
 * attached bindings noted as naming it. Returns the first failure. */
static int detach_unwanted(depsctl *d, const char *key, const char *ns, const char *name, const json_t *want)
{
    int rc = 0;
    json_t *attached = attached_of(d, key);
    size_t i;
    json_t *aname;
    json_array_foreach(attached, i, aname) {
        const char *oname = json_string_value(aname);
        if (wanted(want, oname))
            continue;
        json_t *other = NULL, *att = NULL;
        if (fl_informer_get(d->rbs, ns, oname, &other) == 0) {
            att = fl_json_deep_copy(other);
            json_decref(other);
        }
        if (att && set_snapshot(att, ns, name, NULL)) {
            int r = write_attached(d, att);
            if (r && !rc)
                rc = r;
        } else { /* gone, or names this one no more: forget it */
            pthread_mutex_lock(&d->mu);
            json_object_del(json_object_get(d->dependents, key), oname);
            pthread_mutex_unlock(&d->mu);
        }
        json_decref(att);
    }
    json_decref(attached);
    return rc;
}

/* Reconcile one ResourceBinding (key "ns/name"): attach the bindings of its template's
 * dependencies, with its clusters, and detach those it no longer depends on. */
static int reconcile(void *ctx, const char *key)
{
    depsctl *d = ctx;
    if (!fl_informer_has_synced(d->rbs))
        return FL_ETIMEDOUT;
    char *ns = fl_strdup(key), *name = strchr(ns, '/');
    if (!name) {
        free(ns);
        return 0;
    }
    *name++ = 0;
    json_t *b = NULL;
    fl_informer_get(d->rbs, ns, name, &b);
    bool propagates = b && propagates_deps(b);
    note_propagating(d, key, propagates); /* a binding listed bare is known from here on */
    pthread_mutex_lock(&d->mu);
    bool dependent = json_object_get(d->dependents, key) != NULL;
    pthread_mutex_unlock(&d->mu);
    if (!propagates && !dependent) {
        json_decref(b);
        free(ns);
        return 0;
    }
    json_t *want = NULL, *tmpl = NULL, *deps = NULL;
    int rc = 0;
    bool retry = false;
    if (!dependencies_of(d, b, ns, name, &tmpl, &deps))
        goto out;
    want = wanted_attached(d, deps, ns, &retry);
    json_t *clusters = b ? snapshot_clusters(b) : json_array();
    rc = attach_wanted(d, key, ns, name, want, clusters, &retry);
    int r = detach_unwanted(d, key, ns, name, want);
    if (!rc)
        rc = r;
    json_decref(clusters);
out:
    if (!rc && dependent && !propagates) { /* this pass removed its snapshots */
        pthread_mutex_lock(&d->mu);
        json_object_del(d->dependents, key);
        pthread_mutex_unlock(&d->mu);
    }
    if (!rc && retry)
        fl_workqueue_add_after(d->q, key, MISSING_RETRY_MS);
    json_decref(b);
    json_decref(tmpl);
    json_decref(deps);
    json_decref(want);
    free(ns);
    return rc;
}

/* The note (fl_ctrl_note) of revision rev: {"propagating": [keys], "dependents": {key: [the
 * attached bindings naming it]}}. The
 * server asks once the store has been quiet at rev for a while and every controller is idle,
 * as for the queues of the controllers that resume: the binding events up to rev have been
 * told. A binding queued still (a dependency not there yet) is among the propagating. */
static json_t *deps_note(void *ctx, int64_t rev)
{
    depsctl *d = ctx;
    (void)rev;
    if (!fl_informer_has_synced(d->rbs))
        return NULL;
    json_t *prop = json_array(), *deps = json_object();
    const char *k;
    json_t *v;
    pthread_mutex_lock(&d->mu);
    json_object_foreach(d->propagating, k, v) json_array_append_new(prop, json_string(k));
    json_object_foreach(d->dependents, k, v) {
        json_t *names = json_array();
        const char *n;
        json_t *t;
        json_object_foreach(v, n, t) json_array_append_new(names, json_string(n));
        json_object_set_new(deps, k, names);
    }
    pthread_mutex_unlock(&d->mu);
    return json_pack("{s:o, s:o}", "propagating", prop, "dependents", deps);
}

/* A start at the revision of its note: both sets from it, and their bindings queued (their
 * reconciles wait for the binding list) */
static void resume_from(depsctl *d, const json_t *noted)
{
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(noted, "propagating"), i, k) if (json_string_value(k)) {
        json_object_set_new(d->propagating, json_string_value(k), json_true());
        fl_workqueue_add(d->q, json_string_value(k));
    }
    const char *key;
    json_t *names;
    json_object_foreach(json_object_get(noted, "dependents"), key, names) {
        json_t *n;
        json_array_foreach(names, i, n) if (json_string_value(n)) note_dependent_locked(d, key, json_string_value(n));
        fl_workqueue_add(d->q, key);
    }
    d->resumed = true;
}

static int depsctl_start(const fl_ctrl_env *env, void **state)
{
    depsctl *d = fl_calloc(1, sizeof *d);
    d->env = *env;
    d->q = fl_workqueue_new(NULL);
    pthread_mutex_init(&d->mu, NULL);
    d->dependents = json_object();
    d->propagating = json_object();
    const json_t *noted = json_object_get(env->resumed_notes, FL_CTRL_NOTE_DEPENDENCIES);
    if (env->resumed_rev && noted)
        resume_from(d, noted);
    d->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    fl_informer_handlers h = {.on_add = binding_added, .on_update = binding_updated, .on_delete = binding_deleted,
                              .ctx = d};
    fl_informer_add_handlers(d->rbs, &h);
    fl_template_handlers th = {.on_update = tmpl_updated, .ctx = d};
    fl_templates_subscribe(env->templates, &th);
    fl_ctrl_on_interp_change(env, interp_changed, d);
    fl_ctrl_note(env, FL_CTRL_NOTE_DEPENDENCIES, deps_note, d);
    d->workers = fl_ctrl_workers_start_synced(d->q, "dependencies", DEPS_WORKERS, reconcile, d, (fl_informer *const[]){d->rbs, NULL});
    *state = d;
    return 0;
}

static void depsctl_stop(void *state)
{
    depsctl *d = state;
    fl_ctrl_workers_join(d->workers);
    fl_workqueue_free(d->q);
    json_decref(d->dependents);
    json_decref(d->propagating);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

const fl_controller fl_dependencies_controller = {"dependencies", depsctl_start, depsctl_stop};
