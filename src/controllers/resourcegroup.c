/* resourcegroup.c - the resource group controller: keeps the status of kpt's ResourceGroups
 * (kpt.dev/v1alpha1, the inventory of a package) with the live fleet state of every resource
 * they list, so that a package applied with an inventory shows in one object, where kpt users
 * look, whether it is Current on every cluster and, if not, where and why.
 *
 * A listed resource is a template on the control plane; its fleet state is already rolled
 * up, bounded, in its binding's status.summary (summary.h, written by bindingstatus.c). This
 * controller only reads those summaries: per resource it finds the binding by the name
 * Karmada gives it (names.h), checks that the binding is that template's (group included),
 * and turns its summary into the resourceStatuses entry (rgstatus.h). A resource without a
 * binding is looked up among the templates (templates.h, which starts watching its kind):
 * there, it is Unknown (nothing propagates it); absent, NotFound. Karmada's policies and
 * Namespaces, which a package holds too and no binding reports on, are read from the shared
 * informers instead (OWN_KINDS): present, they are Current.
 *
 * Queue keys: ResourceGroups' "namespace/name". A ResourceGroup is queued when it is created
 * or changes (its spec, or a status someone else wrote), and when anything it lists changes:
 * an index from binding keys (fl_names_template_binding_key: the key of the binding each
 * listed resource would have) to the ResourceGroups listing them is kept from the
 * ResourceGroup informer's events, and binding events (a summary that changed, a binding
 * made or deleted) and template and OWN_KINDS events (made or deleted) queue what the
 * index names. The
 * index is by binding name, which leaves out the group: two kinds of one name in different
 * groups queue each other's groups, which costs a reconcile that writes nothing. Those
 * queueings wait COALESCE_MS, so that a package rolling out (hundreds of summaries moving
 * within seconds) costs a few reconciles and writes of its group per second, not one each.
 *
 * Reconcile: every entry computed from the caches, then the group's summary and conditions;
 * the status is written only when it differs from what is stored, so a quiet fleet writes
 * nothing. Cost: one cache read per listed resource, whatever the number of clusters. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controllers/controller.h"
#include "controllers/names.h"
#include "controllers/rgstatus.h"
#include "controllers/templates.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

#define LOG "resource-group"
#define WORKERS 1 /* the server's thread budget is full (issue 47): one, batched */
/* How long a reconcile waits for a template kind's first list before trying again later. */
#define TEMPLATE_WAIT_MS 2000
/* A change of a listed resource queues its groups this much later, so that a burst of
 * changes (a package rolling out: every binding's summary moving) is one reconcile and at
 * most one write per group per window, not one per change. */
#define COALESCE_MS 250

static const fl_gvr RGS = {"kpt.dev/v1alpha1", "resourcegroups"};
static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

/* Kinds a package holds that no binding reports on, read from the shared informers: Karmada's
 * policies and customizations, and ResourceGroups (a subgroup), which act on the control
 * plane, and Namespaces, which the namespace controller keeps in every cluster without a
 * binding. A ClusterPropagationPolicy may still propagate a Namespace: its binding, when
 * there is one, comes first. */
static const struct own_kind {
    const char *group, *kind, *api_version, *resource;
    bool namespaced;
    /* read from the control plane when asked (in process), not from an informer of our own:
     * nothing shares one for this kind, and a thread more is over the server's budget; a
     * change of it is told by the manager (fl_ctrl_on_interp_change) */
    bool by_get;
} OWN_KINDS[] = {
    {"policy.karmada.io", "PropagationPolicy", "policy.karmada.io/v1alpha1", "propagationpolicies", true},
    {"policy.karmada.io", "ClusterPropagationPolicy", "policy.karmada.io/v1alpha1", "clusterpropagationpolicies",
     false},
    {"policy.karmada.io", "OverridePolicy", "policy.karmada.io/v1alpha1", "overridepolicies", true},
    {"policy.karmada.io", "ClusterOverridePolicy", "policy.karmada.io/v1alpha1", "clusteroverridepolicies", false},
    {"policy.karmada.io", "ClusterTaintPolicy", "policy.karmada.io/v1alpha1", "clustertaintpolicies", false},
    {"config.karmada.io", "ResourceInterpreterCustomization", "config.karmada.io/v1alpha1",
     "resourceinterpretercustomizations", false, true},
    {"kpt.dev", "ResourceGroup", "kpt.dev/v1alpha1", "resourcegroups", true}, /* a subgroup */
    {"", "Namespace", "v1", "namespaces", false},
};
#define NOWN (sizeof OWN_KINDS / sizeof OWN_KINDS[0])

struct rgctl;
/* The context of an OWN_KINDS informer's handlers: which kind it is. */
typedef struct own_ctx {
    struct rgctl *c;
    size_t i;
} own_ctx;

typedef struct rgctl {
    fl_ctrl_env env;
    fl_informer *rgs, *rbs, *crbs;
    fl_informer *own[NOWN]; /* OWN_KINDS' informers, in that order */
    own_ctx own_ctx[NOWN];
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    pthread_mutex_t mu;  /* guards the three maps below */
    json_t *by_binding;  /* binding key -> {ResourceGroup key: true} */
    json_t *rg_bindings; /* ResourceGroup key -> [binding keys], what it is indexed under */
    json_t *versions;    /* API group -> its preferred "group/version" */
} rgctl;

/* ---- the index ---- */

static char *rg_key(const json_t *rg)
{
    const char *ns = fl_json_meta(rg, "namespace"), *name = fl_json_meta(rg, "name");
    return name ? fl_cat(ns ? ns : "", "/", name, NULL) : NULL;
}

/* The binding key of a listed resource; NULL when it names no object. */
static char *ref_binding_key(const json_t *ref)
{
    const char *kind = fl_json_str(ref, "kind"), *name = fl_json_str(ref, "name"), *ns = fl_json_str(ref, "namespace");
    if (!kind || !*kind || !name || !*name)
        return NULL;
    return fl_names_template_binding_key(kind, ns && *ns, ns, name);
}

/* Take key out of the index (mu held). */
static void unindex_locked(rgctl *c, const char *key)
{
    size_t i;
    json_t *bk;
    json_array_foreach(json_object_get(c->rg_bindings, key), i, bk) {
        json_t *set = json_object_get(c->by_binding, json_string_value(bk));
        json_object_del(set, key);
        if (set && !json_object_size(set))
            json_object_del(c->by_binding, json_string_value(bk));
    }
    json_object_del(c->rg_bindings, key);
}

static void index_rg(rgctl *c, const json_t *rg)
{
    char *key = rg_key(rg);
    if (!key)
        return;
    json_t *keys = json_array();
    size_t i;
    const json_t *ref;
    json_array_foreach(fl_json_path(rg, "spec.resources"), i, ref) {
        char *bk = ref_binding_key(ref);
        if (bk)
            json_array_append_new(keys, json_string(bk));
        free(bk);
    }
    pthread_mutex_lock(&c->mu);
    unindex_locked(c, key);
    json_array_foreach(keys, i, ref) {
        const char *bk = json_string_value(ref);
        json_t *set = json_object_get(c->by_binding, bk);
        if (!set) {
            set = json_object();
            json_object_set_new(c->by_binding, bk, set);
        }
        json_object_set_new(set, key, json_true());
    }
    json_object_set_new(c->rg_bindings, key, keys);
    pthread_mutex_unlock(&c->mu);
    free(key);
}

/* Queue the ResourceGroups that list the resource of binding key bk, COALESCE_MS later. */
static void queue_listing(rgctl *c, const char *bk)
{
    if (!bk)
        return;
    pthread_mutex_lock(&c->mu);
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(c->by_binding, bk), key, v)
        fl_workqueue_add_after(c->q, key, COALESCE_MS);
    pthread_mutex_unlock(&c->mu);
}

/* ---- finding what a listed resource is ---- */

/* Whether binding b is the binding of the template ref names (its group too). */
static bool binding_is_of(const json_t *b, const json_t *ref)
{
    const json_t *res = fl_json_path(b, "spec.resource");
    const char *av = fl_json_str(res, "apiVersion"), *slash = av ? strchr(av, '/') : NULL;
    const char *group = fl_json_str(ref, "group") ? fl_json_str(ref, "group") : "";
    size_t glen = slash ? (size_t)(slash - av) : 0;
    const char *ns = fl_json_str(res, "namespace"), *want_ns = fl_json_str(ref, "namespace");
    return av && strlen(group) == glen && !strncmp(av, group, glen) &&
           !strcmp(fl_json_str(res, "kind") ? fl_json_str(res, "kind") : "", fl_json_str(ref, "kind")) &&
           !strcmp(fl_json_str(res, "name") ? fl_json_str(res, "name") : "", fl_json_str(ref, "name")) &&
           !strcmp(ns ? ns : "", want_ns ? want_ns : "");
}

/* An API group's name as discovery could serve it: lower-case DNS characters only. */
static bool group_name_ok(const char *g)
{
    for (; *g; g++)
        if (!((*g >= 'a' && *g <= 'z') || (*g >= '0' && *g <= '9') || *g == '.' || *g == '-'))
            return false;
    return true;
}

/* The preferred "group/version" of group ("v1" for the core group) into *av (heap): 0, or
 * FL_ENOTFOUND when the control plane serves no such group, or the request's error. Answers
 * are remembered (a group's preferred version does not change while the server runs). */
static int api_version_of(rgctl *c, const char *group, char **av)
{
    *av = NULL;
    if (!*group) {
        *av = fl_strdup("v1");
        return 0;
    }
    if (!group_name_ok(group))
        return FL_ENOTFOUND;
    pthread_mutex_lock(&c->mu);
    const char *known = fl_json_str(c->versions, group);
    *av = known ? fl_strdup(known) : NULL;
    pthread_mutex_unlock(&c->mu);
    if (*av)
        return 0;
    char *path = fl_cat("/apis/", group, NULL);
    json_t *doc = NULL;
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    int rc = fl_client_request(c->env.cp, "GET", path, NULL, NULL, 0, NULL, &doc, &ce);
    free(path);
    const char *gv = fl_json_path_str(doc, "preferredVersion.groupVersion");
    if (rc == 0 && gv) {
        *av = fl_strdup(gv);
        pthread_mutex_lock(&c->mu);
        json_object_set_new(c->versions, group, json_string(gv));
        pthread_mutex_unlock(&c->mu);
    } else if (rc == 0) {
        rc = FL_ENOTFOUND;
    }
    json_decref(doc);
    return rc;
}

/* The OWN_KINDS index of group/kind, or -1. */
static int own_kind_of(const char *group, const char *kind)
{
    for (size_t i = 0; i < NOWN; i++)
        if (!strcmp(OWN_KINDS[i].group, group) && !strcmp(OWN_KINDS[i].kind, kind))
            return (int)i;
    return -1;
}

/* What an object of OWN_KINDS[i] named by ref is, from its informer. */
static int find_own(rgctl *c, int i, const char *ns, const char *name, enum fl_rgstatus_found *found)
{
    json_t *obj = NULL;
    int rc;
    if (c->own[i]) {
        rc = fl_informer_get(c->own[i], OWN_KINDS[i].namespaced ? ns : NULL, name, &obj);
    } else {
        fl_client_error ce;
        const fl_gvr gvr = {OWN_KINDS[i].api_version, OWN_KINDS[i].resource};
        rc = fl_client_get(c->env.cp, &gvr, OWN_KINDS[i].namespaced ? ns : NULL, name, &obj, &ce);
    }
    if (rc == FL_ENOTFOUND || (rc == 0 && OWN_KINDS[i].namespaced != (ns && *ns))) {
        *found = FL_RGSTATUS_NO_TEMPLATE;
        rc = 0;
    } else if (rc == 0 && fl_json_meta(obj, "deletionTimestamp")) {
        *found = FL_RGSTATUS_DELETING;
    } else if (rc == 0 && !*OWN_KINDS[i].group) {
        const char *skip = fl_json_meta_map(obj, "labels", FL_SKIP_AUTO_PROPAGATION_LABEL);
        *found = skip && !strcasecmp(skip, "true") ? FL_RGSTATUS_NOT_PROPAGATED : FL_RGSTATUS_NAMESPACE_SYNCED;
    } else if (rc == 0) {
        *found = FL_RGSTATUS_CONTROL_PLANE;
    }
    json_decref(obj);
    return rc;
}

/* What ref is: *found, and with FL_RGSTATUS_BOUND its binding in *binding (a new reference).
 * 0, or an error to retry later (a template cache not listed yet, the server unreachable). */
static int find(rgctl *c, const json_t *ref, enum fl_rgstatus_found *found, json_t **binding)
{
    *binding = NULL;
    *found = FL_RGSTATUS_NO_TEMPLATE;
    const char *group = fl_json_str(ref, "group"), *kind = fl_json_str(ref, "kind");
    const char *ns = fl_json_str(ref, "namespace"), *name = fl_json_str(ref, "name");
    if (!kind || !*kind || !name || !*name)
        return 0;
    bool namespaced = ns && *ns;
    char *bname = fl_names_binding(kind, name);
    json_t *b = NULL;
    int rc = fl_informer_get(namespaced ? c->rbs : c->crbs, namespaced ? ns : NULL, bname, &b);
    if (rc == FL_EEXPIRED) { /* cached, but not readable there: ask the server */
        fl_client_error ce;
        memset(&ce, 0, sizeof ce);
        rc = fl_client_get(c->env.cp, namespaced ? &RBS : &CRBS, namespaced ? ns : NULL, bname, &b, &ce);
    }
    free(bname);
    if (rc == 0 && binding_is_of(b, ref)) {
        *found = FL_RGSTATUS_BOUND;
        *binding = b;
        return 0;
    }
    json_decref(b);
    if (rc && rc != FL_ENOTFOUND)
        return rc;
    int own = own_kind_of(group ? group : "", kind);
    if (own >= 0)
        return find_own(c, own, ns, name, found);

    char *av = NULL;
    rc = api_version_of(c, group ? group : "", &av);
    if (rc == 0)
        rc = fl_templates_watch(c->env.templates, av, kind, TEMPLATE_WAIT_MS, NULL);
    if (rc == FL_ENOTFOUND) {
        *found = FL_RGSTATUS_KIND_NOT_SERVED;
        rc = 0;
    } else if (rc == 0) {
        json_t *t = NULL;
        bool synced = false;
        if (fl_templates_get(c->env.templates, av, kind, namespaced ? ns : NULL, name, &t, &synced) == 0)
            *found = FL_RGSTATUS_NOT_PROPAGATED;
        else if (!synced)
            rc = FL_ETIMEDOUT;
        json_decref(t);
    }
    free(av);
    return rc;
}

/* ---- reconcile ---- */

/* The entries of a status's resourceStatuses by fl_rgstatus_ref_key (borrowed values). */
static json_t *entries_by_ref(const json_t *status)
{
    json_t *idx = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(status, "resourceStatuses"), i, e) {
        char *k = fl_rgstatus_ref_key(e);
        json_object_set(idx, k, e);
        free(k);
    }
    return idx;
}

static int reconcile(void *ctx, const char *key)
{
    rgctl *c = ctx;
    json_t *rg = NULL;
    int rc = fl_informer_get_key(c->rgs, key, &rg);
    if (rc)
        return rc == FL_ENOTFOUND ? 0 : rc;
    const json_t *had = json_object_get(rg, "status");
    json_t *prev = entries_by_ref(had), *entries = json_array();
    int64_t now = fl_time_now_ms();
    size_t i;
    const json_t *ref;
    json_array_foreach(fl_json_path(rg, "spec.resources"), i, ref) {
        enum fl_rgstatus_found found;
        json_t *b = NULL;
        if ((rc = find(c, ref, &found, &b)) != 0)
            goto out;
        char *rk = fl_rgstatus_ref_key(ref);
        json_array_append_new(entries, fl_rgstatus_resource(ref, found, b, json_object_get(prev, rk), now));
        free(rk);
        json_decref(b);
    }

    json_t *st, *nrg = fl_ctrl_status_copy(rg, &st);
    json_object_set_new(st, "observedGeneration", json_integer(fl_json_path_int(rg, "metadata.generation", 0)));
    if (json_array_size(entries))
        json_object_set(st, "resourceStatuses", entries);
    else
        json_object_del(st, "resourceStatuses");
    json_object_set_new(st, "summary", fl_rgstatus_summary(entries));
    fl_rgstatus_conditions(st, entries, now);
    if (fl_json_same(st, had)) {
        json_decref(nrg);
        goto out;
    }
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    const char *ns = fl_json_meta(rg, "namespace");
    /* handed over: the call owns nrg from here */
    rc = fl_client_update_status_given(c->env.cp, &RGS, ns, nrg, NULL, NULL, &ce);
    if (rc == FL_ENOTFOUND)
        rc = 0;
    else if (rc && rc != FL_ECONFLICT)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the ResourceGroup status failed", "object",
                  FL_LOG_OBJ("ResourceGroup", ns, fl_json_meta(rg, "name")), "err", fl_errmsg(ce.message, rc), NULL);
out:
    json_decref(entries);
    json_decref(prev);
    json_decref(rg);
    return rc;
}

/* ---- handlers ---- */

static void rg_added(void *ctx, json_t *obj)
{
    rgctl *c = ctx;
    index_rg(c, obj);
    char *key = rg_key(obj);
    if (key)
        fl_workqueue_add(c->q, key);
    free(key);
}

static void rg_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    /* its spec, or a status someone else wrote: ours written back compares equal and stops */
    rg_added(ctx, new_obj);
}

static void rg_deleted(void *ctx, json_t *obj)
{
    rgctl *c = ctx;
    char *key = rg_key(obj);
    if (!key)
        return;
    pthread_mutex_lock(&c->mu);
    unindex_locked(c, key);
    pthread_mutex_unlock(&c->mu);
    free(key);
}

static void binding_event(void *ctx, json_t *obj)
{
    char *bk = fl_names_binding_key(obj);
    queue_listing(ctx, bk);
    free(bk);
}

static void binding_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    if (!fl_json_same(fl_json_path(old_obj, "status.summary"), fl_json_path(new_obj, "status.summary")) ||
        !fl_json_same(fl_json_path(old_obj, "spec.resource"), fl_json_path(new_obj, "spec.resource")) ||
        !fl_json_meta(old_obj, "deletionTimestamp") != !fl_json_meta(new_obj, "deletionTimestamp"))
        binding_event(ctx, new_obj);
}

/* A customization changed (made, edited, deleted): every group looks again (rare). */
static void customization_changed(void *ctx, const char *api_version, const char *kind)
{
    rgctl *c = ctx;
    pthread_mutex_lock(&c->mu);
    const char *key;
    json_t *v;
    json_object_foreach(c->rg_bindings, key, v)
        fl_workqueue_add_after(c->q, key, COALESCE_MS);
    pthread_mutex_unlock(&c->mu);
}

/* An object of OWN_KINDS made or deleted: as a template's. */
static void own_event(void *ctx, json_t *obj)
{
    own_ctx *o = ctx;
    const char *name = fl_json_meta(obj, "name");
    if (!name)
        return;
    char *bk = fl_names_template_binding_key(OWN_KINDS[o->i].kind, OWN_KINDS[o->i].namespaced,
                                             fl_json_meta(obj, "namespace"), name);
    queue_listing(o->c, bk);
    free(bk);
}

static void tmpl_event(void *ctx, const fl_template_kind *k, json_t *obj)
{
    const char *name = fl_json_meta(obj, "name");
    if (!name)
        return;
    char *bk = fl_names_template_binding_key(k->kind, k->namespaced, fl_json_meta(obj, "namespace"), name);
    queue_listing(ctx, bk);
    free(bk);
}

/* ---- lifecycle ---- */

static int rgctl_start(const fl_ctrl_env *env, void **state)
{
    rgctl *c = fl_calloc(1, sizeof *c);
    c->env = *env;
    pthread_mutex_init(&c->mu, NULL);
    c->by_binding = json_object();
    c->rg_bindings = json_object();
    c->versions = json_object();
    c->q = fl_workqueue_new(NULL);
    c->rgs = fl_ctrl_informer(env, RGS.api_version, RGS.resource);
    c->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    c->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    fl_informer_handlers rh = {.on_add = rg_added, .on_update = rg_updated, .on_delete = rg_deleted, .ctx = c};
    fl_informer_add_handlers(c->rgs, &rh);
    fl_informer_handlers bh = {.on_add = binding_event, .on_update = binding_updated, .on_delete = binding_event,
                               .ctx = c};
    fl_informer_add_handlers(c->rbs, &bh);
    fl_informer_add_handlers(c->crbs, &bh);
    fl_template_handlers th = {.on_add = tmpl_event, .on_delete = tmpl_event, .ctx = c};
    fl_templates_subscribe(env->templates, &th);
    fl_informer *synced[NOWN + 4] = {c->rgs, c->rbs, c->crbs};
    size_t nsynced = 3;
    fl_ctrl_on_interp_change(env, customization_changed, c);
    for (size_t i = 0; i < NOWN; i++) {
        if (OWN_KINDS[i].by_get)
            continue;
        c->own_ctx[i] = (own_ctx){c, i};
        fl_informer_handlers oh = {.on_add = own_event, .on_delete = own_event, .ctx = &c->own_ctx[i]};
        c->own[i] = fl_ctrl_informer(env, OWN_KINDS[i].api_version, OWN_KINDS[i].resource);
        fl_informer_add_handlers(c->own[i], &oh);
        synced[nsynced++] = c->own[i];
    }
    c->workers = fl_ctrl_workers_start_synced(c->q, "resourcegroup", WORKERS, reconcile, c, synced);
    *state = c;
    return 0;
}

static void rgctl_stop(void *state)
{
    rgctl *c = state;
    fl_ctrl_workers_join(c->workers);
    fl_workqueue_free(c->q);
    json_decref(c->by_binding);
    json_decref(c->rg_bindings);
    json_decref(c->versions);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const fl_controller fl_resource_group_controller = {"resource-group", rgctl_start, rgctl_stop};
