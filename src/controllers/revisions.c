/* revisions.c - the revisions controller (contract and design in revisions.h): one
 * ControllerRevision per delivered change of a propagated template, numbered, trimmed to the
 * template's history limit, owned by the template.
 *
 * Queue keys: "apiVersion|kind|namespace|name" of a template ("" for the namespace of a
 * cluster-scoped one). A template is queued when it is added (a first list, or created), when
 * an update changes its signature (the hash of its data, its change cause, its limit: a
 * status write or a policy's claim does not), and when its binding is created (the template
 * has just become propagated).
 *
 * A reconcile reads the template from the shared registry and its binding from the shared
 * informers; a template whose newest revision the skip cache says matches costs nothing
 * more. Otherwise it lists the template's revisions (label selector on its uid) and writes
 * what the contract asks: a create, or a renumbering, or a change cause, then the deletions
 * beyond the limit. Every write goes through the API like any client's. */
#include "controllers/revisions.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/events.h"
#include "controllers/names.h"
#include "controllers/revision_data.h"
#include "controllers/templates.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/wellknown.h"

#define LOG "revisions"

static const fl_gvr CRS = {"apps/v1", "controllerrevisions"};
static const fl_gvr NSS = {"v1", "namespaces"};
static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};

typedef struct revctl {
    fl_ctrl_env env;
    fl_informer *rbs, *crbs;
    fl_workqueue *q;
    fl_ctrl_workers *workers;
    pthread_mutex_t mu; /* guards seen */
    /* template uid -> the signature (sig()) its newest revision was last written or read
     * with: a template whose signature matches needs no list */
    json_t *seen;
} revctl;

/* ---- keys and signatures ---- */

static char *tmpl_key(const char *av, const char *kind, const char *ns, const char *name)
{
    /* a policy may select ControllerRevisions themselves: recording those would record the
     * records, each new one a template of its own */
    if (!av || !kind || !name || (!strcmp(av, "apps/v1") && !strcmp(kind, "ControllerRevision")))
        return NULL;
    return fl_cat(av, "|", kind, "|", ns ? ns : "", "|", name, NULL);
}

static char *key_of(const fl_template_kind *k, const json_t *obj)
{
    return tmpl_key(k->api_version, k->kind, k->namespaced ? fl_json_meta(obj, "namespace") : NULL,
                    fl_json_meta(obj, "name"));
}

/* What decides whether a template needs a reconcile: "<hash>|<limit>|<change cause>". */
static char *sig(const json_t *tmpl)
{
    char hash[16];
    json_t *data = fl_revision_data(tmpl);
    fl_revision_hash_text(data, hash);
    json_decref(data);
    const char *cause = fl_revision_change_cause(tmpl);
    return fl_asprintf("%s|%d|%s", hash, fl_revision_history_limit(tmpl, NULL), cause ? cause : "");
}

static void seen_set(revctl *c, const char *uid, const char *s)
{
    pthread_mutex_lock(&c->mu);
    if (s)
        json_object_set_new(c->seen, uid, json_string(s));
    else
        json_object_del(c->seen, uid);
    pthread_mutex_unlock(&c->mu);
}

static bool seen_is(revctl *c, const char *uid, const char *s)
{
    pthread_mutex_lock(&c->mu);
    const char *have = json_string_value(json_object_get(c->seen, uid));
    bool same = have && !strcmp(have, s);
    pthread_mutex_unlock(&c->mu);
    return same;
}

/* ---- handlers ---- */

static void tmpl_added(void *ctx, const fl_template_kind *k, json_t *obj)
{
    revctl *c = ctx;
    if (fl_ctrl_resumed_add(&c->env, obj))
        return;
    char *key = key_of(k, obj);
    if (key)
        fl_workqueue_add(c->q, key);
    free(key);
}

static void tmpl_updated(void *ctx, const fl_template_kind *k, json_t *old, json_t *obj)
{
    revctl *c = ctx;
    char *key = fl_json_meta(obj, "deletionTimestamp") ? NULL : key_of(k, obj);
    if (!key)
        return;
    char *a = sig(old), *b = sig(obj);
    if (strcmp(a, b))
        fl_workqueue_add(c->q, key);
    free(a);
    free(b);
    free(key);
}

static void tmpl_deleted(void *ctx, const fl_template_kind *k, json_t *obj)
{
    const char *uid = fl_json_meta(obj, "uid");
    if (uid)
        seen_set(ctx, uid, NULL);
}

static void queue_bound(revctl *c, const json_t *binding)
{
    const json_t *r = fl_json_path(binding, "spec.resource");
    char *key = tmpl_key(fl_json_str(r, "apiVersion"), fl_json_str(r, "kind"), fl_json_str(r, "namespace"),
                         fl_json_str(r, "name"));
    if (key)
        fl_workqueue_add(c->q, key);
    free(key);
}

static void binding_added(void *ctx, json_t *obj)
{
    revctl *c = ctx;
    if (!fl_ctrl_resumed_add(&c->env, obj))
        queue_bound(c, obj);
}

static void binding_updated(void *ctx, json_t *old, json_t *obj)
{
    if (!fl_json_same(fl_json_path(old, "spec.resource"), fl_json_path(obj, "spec.resource")))
        queue_bound(ctx, obj);
}

/* ---- the template's revisions ---- */

static json_int_t rev_of(const json_t *cr)
{
    json_t *v = json_object_get(cr, "revision");
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

static int cmp_newest_first(const void *a, const void *b)
{
    json_int_t x = rev_of(*(json_t *const *)a), y = rev_of(*(json_t *const *)b);
    return x > y ? -1 : x < y;
}

/* The revision object to create for tmpl. */
static json_t *new_revision(const json_t *tmpl, const char *rns, const char *name, json_t *data, json_int_t number,
                            const char *cause)
{
    json_t *labels = json_pack("{ss}", FL_REVISION_TEMPLATE_UID_LABEL, fl_json_meta(tmpl, "uid"));
    json_t *owner = json_pack("{ss ss ss ss sb sb}", "apiVersion", fl_json_str(tmpl, "apiVersion"), "kind",
                              fl_json_str(tmpl, "kind"), "name", fl_json_meta(tmpl, "name"), "uid",
                              fl_json_meta(tmpl, "uid"), "controller", 1, "blockOwnerDeletion", 1);
    json_t *meta = json_pack("{ss ss so s[o]}", "name", name, "namespace", rns, "labels", labels, "ownerReferences",
                             owner);
    if (cause && *cause)
        json_object_set_new(meta, "annotations", json_pack("{ss}", FL_REVISION_CHANGE_CAUSE_ANNOTATION, cause));
    return json_pack("{ss ss so sO sI}", "apiVersion", "apps/v1", "kind", "ControllerRevision", "metadata", meta,
                     "data", data, "revision", (json_int_t)number);
}

/* Create cr in rns, making karmada-system first when it is the namespace and is missing. */
static int create_revision(revctl *c, const char *rns, const json_t *cr, json_t **out)
{
    fl_client_error ce = {0};
    int rc = fl_client_create(c->env.cp, &CRS, rns, cr, NULL, out, &ce);
    if (rc == FL_ENOTFOUND && !strcmp(rns, FL_REVISION_CLUSTER_SCOPED_NAMESPACE)) {
        json_t *ns = json_pack("{ss ss s{ss}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", rns);
        int e = fl_client_create(c->env.cp, &NSS, NULL, ns, NULL, NULL, &ce);
        json_decref(ns);
        if (e && e != FL_EEXIST)
            return e;
        rc = fl_client_create(c->env.cp, &CRS, rns, cr, NULL, out, &ce);
    }
    if (rc && rc != FL_EEXIST)
        fl_log_kvf(FL_LOG_WARN, LOG, FL_LOG_KV("object", FL_LOG_OBJ("ControllerRevision", rns, fl_json_meta(cr, "name")),
                                               "err", fl_errmsg(ce.message, rc)),
                   "creating the revision failed (retried)");
    return rc;
}

/* After a create: the template may have been deleted meanwhile, after the API's garbage
 * collection had looked for its dependents. Then the new revision is deleted here. */
static void drop_if_orphan(revctl *c, const fl_template_kind *k, const json_t *tmpl, const json_t *cr)
{
    fl_client_error ce = {0};
    json_t *now = NULL;
    int rc = fl_client_get(c->env.cp, &(fl_gvr){k->api_version, k->resource},
                           k->namespaced ? fl_json_meta(tmpl, "namespace") : NULL, fl_json_meta(tmpl, "name"), &now, &ce);
    const char *uid = fl_json_meta(now, "uid");
    if (rc == FL_ENOTFOUND || (!rc && (!uid || strcmp(uid, fl_json_meta(tmpl, "uid"))))) {
        fl_delete_opts o = {.precondition_uid = fl_json_meta(cr, "uid")};
        fl_client_delete(c->env.cp, &CRS, fl_json_meta(cr, "namespace"), fl_json_meta(cr, "name"), &o, NULL, &ce);
    }
    json_decref(now);
}

/* Write cr (a copy, changed) back: the renumbering or the change cause of the newest. */
static int update_revision(revctl *c, json_t *cr)
{
    fl_client_error ce = {0};
    int rc = fl_client_update(c->env.cp, &CRS, fl_json_meta(cr, "namespace"), cr, NULL, NULL, &ce);
    if (rc && rc != FL_ECONFLICT)
        fl_log_kvf(FL_LOG_WARN, LOG, FL_LOG_KV("object", FL_LOG_OBJ("ControllerRevision", fl_json_meta(cr, "namespace"),
                                                                    fl_json_meta(cr, "name")),
                                               "err", fl_errmsg(ce.message, rc)),
                   "updating the revision failed (retried)");
    return rc;
}

/* A revision's change cause, "" for none. */
static const char *revision_cause(const json_t *cr)
{
    const char *s = fl_json_meta_map(cr, "annotations", FL_REVISION_CHANGE_CAUSE_ANNOTATION);
    return s ? s : "";
}

static void set_cause(json_t *cr, const char *cause)
{
    json_t *meta = fl_json_ensure_obj(cr, "metadata");
    json_t *anns = fl_json_ensure_obj(meta, "annotations");
    if (cause && *cause)
        json_object_set_new(anns, FL_REVISION_CHANGE_CAUSE_ANNOTATION, json_string(cause));
    else
        json_object_del(anns, FL_REVISION_CHANGE_CAUSE_ANNOTATION);
}

/* Delete the revisions past limit (items sorted newest first; the newest always stays). */
static int trim(revctl *c, json_t *items, int limit)
{
    int rc = 0;
    size_t keep = limit < 1 ? 1 : (size_t)limit;
    for (size_t i = keep; i < json_array_size(items); i++) {
        const json_t *cr = json_array_get(items, i);
        fl_delete_opts o = {.precondition_uid = fl_json_meta(cr, "uid")};
        fl_client_error ce = {0};
        int e = fl_client_delete(c->env.cp, &CRS, fl_json_meta(cr, "namespace"), fl_json_meta(cr, "name"), &o, NULL,
                                 &ce);
        if (e && e != FL_ENOTFOUND && !rc)
            rc = e;
    }
    return rc;
}

/* Bring tmpl's revisions to the contract. 0 when they are. */
static int sync_revisions(revctl *c, const fl_template_kind *k, const json_t *tmpl)
{
    const char *ns = k->namespaced ? fl_json_meta(tmpl, "namespace") : NULL;
    const char *rns = ns ? ns : FL_REVISION_CLUSTER_SCOPED_NAMESPACE;
    const char *uid = fl_json_meta(tmpl, "uid"), *cause = fl_revision_change_cause(tmpl);
    bool valid = true;
    int limit = fl_revision_history_limit(tmpl, &valid);
    if (!valid)
        fl_event(c->env.recorder, tmpl, "Warning", "InvalidRevisionHistoryLimit",
                 "annotation %s is not a non-negative integer: keeping the last %d revisions",
                 FL_REVISION_HISTORY_LIMIT_ANNOTATION, limit);
    json_t *data = fl_revision_data(tmpl);
    char hash[16];
    char *name = fl_revision_name(fl_json_meta(tmpl, "name"), fl_revision_hash_text(data, hash));
    char *selector = fl_cat(FL_REVISION_TEMPLATE_UID_LABEL, "=", uid, NULL);
    fl_list_opts lo = {.label_selector = selector};
    fl_list_result lr = {0};
    fl_client_error ce = {0};
    int rc = fl_client_list(c->env.cp, &CRS, rns, &lo, &lr, &ce);
    if (rc)
        goto out;
    size_t n = json_array_size(lr.items);
    json_t **sorted = fl_calloc(n + 1, sizeof *sorted);
    json_int_t top = 0;
    json_t *mine = NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *cr = json_array_get(lr.items, i);
        sorted[i] = cr;
        if (rev_of(cr) > top)
            top = rev_of(cr);
        if (!strcmp(fl_json_meta(cr, "name") ? fl_json_meta(cr, "name") : "", name))
            mine = cr;
    }
    json_t *made = NULL;
    if (!mine) {
        json_t *cr = new_revision(tmpl, rns, name, data, top + 1, cause);
        rc = create_revision(c, rns, cr, &made);
        json_decref(cr);
        if (rc == FL_EEXIST) /* a revision of that name not labelled as this template's */
            fl_log_kvf(FL_LOG_WARN, LOG, FL_LOG_KV("object", FL_LOG_OBJ("ControllerRevision", rns, name)),
                       "a revision of this name exists for another template: not recorded");
        if (rc) {
            rc = rc == FL_EEXIST ? 0 : rc;
            free(sorted);
            goto out;
        }
        drop_if_orphan(c, k, tmpl, made);
        fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ(k->kind, ns, fl_json_meta(tmpl, "name"))),
                   "recorded revision %lld (%s)", (long long)(top + 1), name);
        sorted[n++] = made;
    } else if (rev_of(mine) < top || strcmp(cause ? cause : "", revision_cause(mine))) {
        json_t *cr = fl_json_deep_copy(mine);
        if (rev_of(mine) < top)
            json_object_set_new(cr, "revision", json_integer(top + 1));
        set_cause(cr, cause);
        rc = update_revision(c, cr);
        if (!rc) {
            json_object_set_new(mine, "revision", json_integer(rev_of(cr)));
            fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ(k->kind, ns, fl_json_meta(tmpl, "name"))),
                       "revision %s is now %lld", name, (long long)rev_of(cr));
        }
        json_decref(cr);
        if (rc) {
            free(sorted);
            goto out;
        }
    }
    qsort(sorted, n, sizeof *sorted, cmp_newest_first);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(arr, sorted[i]);
    free(sorted);
    rc = trim(c, arr, limit);
    json_decref(arr);
    json_decref(made);
out:
    fl_list_result_close(&lr);
    free(selector);
    free(name);
    json_decref(data);
    return rc;
}

/* ---- reconcile ---- */

/* Whether binding (of a template named so) is the template's: the same kind, name and,
 * when it says, uid. */
static bool binds(const json_t *binding, const fl_template_kind *k, const json_t *tmpl)
{
    const json_t *r = fl_json_path(binding, "spec.resource");
    const char *kind = fl_json_str(r, "kind"), *name = fl_json_str(r, "name"), *uid = fl_json_str(r, "uid");
    const char *tuid = fl_json_meta(tmpl, "uid");
    return kind && name && !strcmp(kind, k->kind) && !strcmp(name, fl_json_meta(tmpl, "name")) &&
           (!uid || !*uid || (tuid && !strcmp(uid, tuid)));
}

static int reconcile(void *ctx, const char *key)
{
    revctl *c = ctx;
    char *copy = fl_strdup(key), *parts[4] = {0}, *p = copy;
    for (int i = 0; i < 4 && p; i++) {
        parts[i] = p;
        p = i < 3 ? strchr(p, '|') : NULL;
        if (p)
            *p++ = 0;
    }
    int rc = 0;
    json_t *tmpl = NULL, *binding = NULL;
    char *bname = NULL, *s = NULL;
    if (!parts[3])
        goto out;
    const char *ns = *parts[2] ? parts[2] : NULL;
    const fl_template_kind *k = NULL;
    rc = fl_templates_watch(c->env.templates, parts[0], parts[1], 0, &k);
    if (rc == FL_ENOTFOUND) { /* the kind is not served (a CRD gone): nothing to keep */
        rc = 0;
        goto out;
    }
    if (rc && rc != FL_ETIMEDOUT)
        goto out;
    bool synced = false;
    rc = fl_templates_get(c->env.templates, parts[0], parts[1], ns, parts[3], &tmpl, &synced);
    if (rc == FL_ENOTFOUND && !synced) {
        rc = FL_ETIMEDOUT; /* the kind's first list is not over: try again */
        goto out;
    }
    if (rc == FL_ENOTFOUND || fl_json_meta(tmpl, "deletionTimestamp") || !fl_json_meta(tmpl, "uid")) {
        rc = 0; /* gone or going: its revisions go with it (the API's garbage collection) */
        goto out;
    }
    if (rc)
        goto out;
    bname = fl_names_binding(parts[1], parts[3]);
    rc = fl_informer_get(ns ? c->rbs : c->crbs, ns, bname, &binding);
    if (rc == FL_ENOTFOUND || (!rc && !binds(binding, k, tmpl))) {
        rc = 0; /* not propagated: no revisions (those it had stay until the template goes) */
        goto out;
    }
    if (rc)
        goto out;
    s = sig(tmpl);
    if (seen_is(c, fl_json_meta(tmpl, "uid"), s))
        goto out;
    rc = sync_revisions(c, k, tmpl);
    if (!rc)
        seen_set(c, fl_json_meta(tmpl, "uid"), s);
out:
    json_decref(tmpl);
    json_decref(binding);
    free(bname);
    free(s);
    free(copy);
    return rc;
}

/* ---- lifecycle ---- */

static int revctl_start(const fl_ctrl_env *env, void **state)
{
    revctl *c = fl_calloc(1, sizeof *c);
    c->env = *env;
    c->q = fl_workqueue_new(NULL);
    fl_workqueue_set_name(c->q, "revisions");
    pthread_mutex_init(&c->mu, NULL);
    c->seen = json_object();
    fl_ctrl_resumable(env, c->q);
    c->rbs = fl_ctrl_informer(env, RBS.api_version, RBS.resource);
    c->crbs = fl_ctrl_informer(env, CRBS.api_version, CRBS.resource);
    fl_informer_handlers bh = {.on_add = binding_added, .on_update = binding_updated, .ctx = c};
    fl_informer_add_handlers(c->rbs, &bh);
    fl_informer_add_handlers(c->crbs, &bh);
    fl_template_handlers th = {.on_add = tmpl_added, .on_update = tmpl_updated, .on_delete = tmpl_deleted, .ctx = c};
    fl_templates_subscribe(env->templates, &th);
    c->workers = fl_ctrl_workers_start_synced(c->q, "revisions", 1, reconcile, c,
                                              (fl_informer *const[]){c->rbs, c->crbs, NULL});
    *state = c;
    return 0;
}

static void revctl_stop(void *state)
{
    revctl *c = state;
    fl_ctrl_workers_join(c->workers);
    fl_workqueue_free(c->q);
    json_decref(c->seen);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const fl_controller fl_revisions_controller = {"revisions", revctl_start, revctl_stop};
