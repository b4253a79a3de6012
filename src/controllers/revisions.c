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
 * informers; a template whose signature the skip map says was handled costs nothing more.
 * Otherwise it reads the template's revisions from the index and writes what the contract
 * asks: a create, or a renumbering or change cause (a merge patch), then the deletions
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
    pthread_mutex_t mu; /* guards seen and index */
    /* template uid -> the signature (sig()) its revisions were last brought to: a template
     * whose signature matches needs nothing done */
    json_t *seen;
    json_t *index;  /* the revisions in the store, without data (below) */
    bool primed;    /* the index has been loaded (the worker's, once) */
} revctl;

static void index_forget(revctl *c, const char *uid, const char *name);

/* ---- keys and signatures ---- */

static char *tmpl_key(const char *av, const char *kind, const char *ns, const char *name)
{
    if (!name || !fl_revision_kept_for(av, kind)) /* not Secrets, not revisions themselves */
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
    if (uid) { /* its revisions go with it (the API's garbage collection) */
        seen_set(ctx, uid, NULL);
        index_forget(ctx, uid, NULL);
    }
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

/* ---- the index of revisions ----
 *
 * What the store holds of every template's revisions, without their data: uid -> {name:
 * {"n": revision, "cause": change cause, "ns": namespace}}. Built by one list of every
 * revision (data left out) before the first reconcile, then kept by this controller's own
 * writes; a write that finds the store otherwise (a revision deleted or created by someone
 * else) reads that template's revisions again. So a reconcile costs no list, where a list per
 * template scanned every revision of its namespace (docs/BENCHMARKS.md, "Template
 * revisions"); and the index is rebuilt from the store at every start. */

static const char *const SKIP_DATA[] = {"data", NULL};

/* Put what cr says into the index (under mu). */
static void index_put_locked(revctl *c, const json_t *cr)
{
    const char *uid = fl_json_meta_map(cr, "labels", FL_REVISION_TEMPLATE_UID_LABEL), *name = fl_json_meta(cr, "name");
    json_t *n = json_object_get(cr, "revision");
    if (!uid || !name || !json_is_integer(n))
        return;
    json_t *revs = json_object_get(c->index, uid);
    if (!revs) {
        revs = json_object();
        json_object_set_new(c->index, uid, revs);
    }
    const char *cause = fl_json_meta_map(cr, "annotations", FL_REVISION_CHANGE_CAUSE_ANNOTATION);
    json_object_set_new(revs, name, json_pack("{sI ss ss}", "n", json_integer_value(n), "cause", cause ? cause : "",
                                              "ns", fl_json_meta(cr, "namespace") ? fl_json_meta(cr, "namespace") : ""));
}

static void index_put(revctl *c, const json_t *cr)
{
    pthread_mutex_lock(&c->mu);
    index_put_locked(c, cr);
    pthread_mutex_unlock(&c->mu);
}

static void index_forget(revctl *c, const char *uid, const char *name)
{
    pthread_mutex_lock(&c->mu);
    if (name)
        json_object_del(json_object_get(c->index, uid), name);
    else
        json_object_del(c->index, uid);
    pthread_mutex_unlock(&c->mu);
}

/* A copy of uid's entries (an empty object for none), for the worker to read unlocked. */
static json_t *index_of(revctl *c, const char *uid)
{
    pthread_mutex_lock(&c->mu);
    json_t *revs = json_object_get(c->index, uid);
    json_t *out = revs ? json_deep_copy(revs) : json_object();
    pthread_mutex_unlock(&c->mu);
    return out;
}

/* List the revisions selector names (in ns; NULL: all) without their data into the index;
 * for one template (uid not NULL), what the index held of it is replaced. */
static int index_load(revctl *c, const char *ns, const char *selector, const char *uid)
{
    fl_list_opts lo = {.label_selector = selector, .skip_fields = SKIP_DATA};
    fl_list_result lr = {0};
    fl_client_error ce = {0};
    int rc = fl_client_list_all(c->env.cp, &CRS, ns, &lo, NULL, &lr, &ce);
    if (rc) {
        fl_log_kvf(FL_LOG_WARN, LOG, FL_LOG_KV("err", fl_errmsg(ce.message, rc)), "listing revisions failed (retried)");
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    if (uid)
        json_object_del(c->index, uid);
    size_t i;
    json_t *cr;
    json_array_foreach(lr.items, i, cr) index_put_locked(c, cr);
    pthread_mutex_unlock(&c->mu);
    fl_list_result_close(&lr);
    return 0;
}

/* Read one template's revisions again, after a write met something the index did not have. */
static int index_reload(revctl *c, const char *rns, const char *uid)
{
    char *selector = fl_cat(FL_REVISION_TEMPLATE_UID_LABEL, "=", uid, NULL);
    int rc = index_load(c, rns, selector, uid);
    free(selector);
    return rc;
}

/* ---- the template's revisions ---- */

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

/* Renumber the revision name (to n) and give it the change cause: a merge patch, so the
 * data it records is not sent again. FL_ENOTFOUND when it is gone. */
static int patch_revision(revctl *c, const char *rns, const char *name, json_int_t n, const char *cause)
{
    json_t *patch = json_pack("{sI s{s{so}}}", "revision", n, "metadata", "annotations",
                              FL_REVISION_CHANGE_CAUSE_ANNOTATION, cause && *cause ? json_string(cause) : json_null());
    size_t len = 0;
    char *text = fl_json_dumps(patch, &len);
    json_decref(patch);
    json_t *out = NULL;
    fl_patch_opts po = {.field_manager = "revisions"};
    fl_client_error ce = {0};
    int rc = fl_client_patch(c->env.cp, &CRS, rns, name, FL_PATCH_MERGE, text, len, &po, &out, &ce);
    free(text);
    if (!rc)
        index_put(c, out);
    else if (rc != FL_ENOTFOUND)
        fl_log_kvf(FL_LOG_WARN, LOG, FL_LOG_KV("object", FL_LOG_OBJ("ControllerRevision", rns, name), "err",
                                               fl_errmsg(ce.message, rc)),
                   "updating the revision failed (retried)");
    json_decref(out);
    return rc;
}

static json_int_t entry_n(const json_t *e)
{
    return json_integer_value(json_object_get(e, "n"));
}

static int cmp_newest_first(const void *a, const void *b)
{
    json_int_t x = entry_n(json_object_get(*(json_t *const *)a, "e")), y = entry_n(json_object_get(*(json_t *const *)b, "e"));
    return x > y ? -1 : x < y;
}

/* Delete uid's revisions past limit, the newest always kept. */
static int trim(revctl *c, const char *uid, const json_t *revs, int limit)
{
    size_t n = json_object_size(revs), i = 0, keep = limit < 1 ? 1 : (size_t)limit;
    if (n <= keep)
        return 0;
    json_t **all = fl_calloc(n, sizeof *all);
    const char *name;
    json_t *e;
    json_object_foreach((json_t *)revs, name, e) all[i++] = json_pack("{ss sO}", "name", name, "e", e);
    qsort(all, n, sizeof *all, cmp_newest_first);
    int rc = 0;
    for (i = 0; i < n; i++) {
        if (i >= keep) {
            const char *dname = fl_json_str(all[i], "name"), *ns = fl_json_str(json_object_get(all[i], "e"), "ns");
            fl_client_error ce = {0};
            int r = fl_client_delete(c->env.cp, &CRS, ns, dname, NULL, NULL, &ce);
            if (!r || r == FL_ENOTFOUND)
                index_forget(c, uid, dname);
            else if (!rc)
                rc = r;
        }
        json_decref(all[i]);
    }
    free(all);
    return rc;
}

/* Bring tmpl's revisions to the contract. 0 when they are; FL_ECONFLICT when the store
 * held something the index did not (read again: try again). */
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
    json_t *data = fl_revision_data(tmpl), *revs = index_of(c, uid);
    char hash[16];
    char *name = fl_revision_name(fl_json_meta(tmpl, "name"), fl_revision_hash_text(data, hash));
    json_int_t top = 0;
    const char *n;
    json_t *e, *made = NULL;
    json_object_foreach(revs, n, e) if (entry_n(e) > top) top = entry_n(e);
    const json_t *mine = json_object_get(revs, name);
    int rc = 0;
    if (!mine) {
        json_t *cr = new_revision(tmpl, rns, name, data, top + 1, cause);
        rc = create_revision(c, rns, cr, &made);
        json_decref(cr);
        if (rc == FL_EEXIST) { /* not in the index: read the store again */
            rc = index_reload(c, rns, uid);
            json_t *again = index_of(c, uid);
            if (!rc && !json_object_get(again, name))
                fl_log_kvf(FL_LOG_WARN, LOG, FL_LOG_KV("object", FL_LOG_OBJ("ControllerRevision", rns, name)),
                           "a revision of this name exists for another template: not recorded");
            else if (!rc)
                rc = FL_ECONFLICT;
            json_decref(again);
        } else if (!rc) {
            index_put(c, made);
            drop_if_orphan(c, k, tmpl, made);
            fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ(k->kind, ns, fl_json_meta(tmpl, "name"))),
                       "recorded revision %lld (%s)", (long long)(top + 1), name);
        }
    } else if (entry_n(mine) < top || strcmp(cause ? cause : "", fl_json_str(mine, "cause"))) {
        json_int_t to = entry_n(mine) < top ? top + 1 : entry_n(mine);
        rc = patch_revision(c, rns, name, to, cause);
        if (rc == FL_ENOTFOUND) { /* deleted by someone else: read the store again */
            rc = index_reload(c, rns, uid);
            rc = rc ? rc : FL_ECONFLICT;
        } else if (!rc && to != entry_n(mine)) {
            fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ(k->kind, ns, fl_json_meta(tmpl, "name"))),
                       "revision %s is now %lld", name, (long long)to);
        }
    }
    json_decref(revs);
    if (!rc) {
        revs = index_of(c, uid);
        rc = trim(c, uid, revs, limit);
        json_decref(revs);
    }
    json_decref(made);
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
    if (!c->primed) {
        int e = index_load(c, NULL, FL_REVISION_TEMPLATE_UID_LABEL, NULL);
        if (e)
            return e;
        c->primed = true;
    }
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
    c->index = json_object();
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
    json_decref(c->index);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const fl_controller fl_revisions_controller = {"revisions", revctl_start, revctl_stop};
