/* api_delete.c - DELETE and deletecollection, finalizers, the garbage collection of
 * dependents, and namespace finalization.
 *
 * A delete of an object with finalizers only sets its deletionTimestamp; the object goes
 * when an update empties the list (fl_api_guaranteed_update in api_write.c then calls
 * fl_api_finish_delete). Dependents (objects whose ownerReferences name the deleted one)
 * are orphaned or deleted synchronously per the propagation policy; since most stores hold
 * no owned object at all, a count of live objects with owners (kept by every write, and
 * counted at start-up by fl_api_count_owners) lets deletes skip that scan. A namespace
 * being deleted is emptied by a thread of its own, then loses its "kubernetes"
 * finalizer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"
#include "api/api_write.h"
#include "api/protobuf.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

/* ---- objects with owners ---- */

/* Live objects that carry ownerReferences, in every API of the process; deletes skip the
 * dependents scan while 0, once no count of a store's objects at its start is pending. */
static atomic_long owned_objects;
static atomic_int owner_scans;

bool fl_api_has_owner_refs(const json_t *obj)
{
    return json_array_size(json_object_get(json_object_get(obj, "metadata"), "ownerReferences")) > 0;
}

void fl_api_track_owned(const json_t *old, const json_t *new)
{
    long d = (long)(new && fl_api_has_owner_refs(new)) - (long)(old && fl_api_has_owner_refs(old));
    if (d)
        atomic_fetch_add(&owned_objects, d);
}

/* Counting the owned objects the store holds at a start reads every value (a GB at 30,000
 * Works, from the file). A store opened with FL_API_LOAD_MARK noted the few values that
 * name an owner as it opened (in SQLite, keeping none), and those are counted at once.
 * Otherwise the count runs beside the server instead of before it. It lists the
 * store as of its revision before anything could write (one read of the log, in one
 * snapshot); writes meanwhile count their changes into owned_objects, and the scan adds its
 * count at the end. Until then deletes search for dependents, and for good if the scan
 * fails. */
typedef struct owner_scan {
    fl_store *store;
    int64_t rev;
} owner_scan;

static bool scan_cb(void *vctx, const char *key, const fl_kv *kv)
{
    (void)key;
    long *owned = vctx;
    if (strstr(kv->value->data, "\"ownerReferences\"")) {
        json_t *obj = fl_json_load(kv->value->data, kv->value->len);
        *owned += obj && fl_api_has_owner_refs(obj);
        json_decref(obj);
    }
    return true;
}

static void *owner_scan_main(void *arg)
{
    owner_scan *sc = arg;
    pthread_setname_np(pthread_self(), "fl-owner-scan");
    long owned = 0;
    int64_t rv;
    int rc = sc->rev > 0 ? fl_store_list(sc->store, "/", NULL, sc->rev, 0, scan_cb, &owned, &rv, NULL) : 0;
    if (rc) {
        fl_log(FL_LOG_WARN, "api", "counting owned objects at revision %lld: %s; deletes search for dependents",
               (long long)sc->rev, fl_strerror(rc));
    } else {
        atomic_fetch_add(&owned_objects, owned);
        atomic_fetch_sub(&owner_scans, 1);
    }
    free(sc);
    return NULL;
}

void fl_api_count_owners(fl_api *api)
{
    char **marked = NULL;
    long nmarked = fl_store_marked(api->store, &marked);
    if (nmarked >= 0) { /* opening noted the values that name owners: count those now */
        int64_t t0 = fl_time_mono_ms();
        long said = fl_store_marked_said(api->store), owned = said; /* written with owners */
        for (long i = 0; i < nmarked; i++) {
            fl_kv kv;
            if (fl_store_get(api->store, marked[i], &kv) == 0) {
                json_t *obj = fl_json_load(kv.value->data, kv.value->len);
                owned += obj && fl_api_has_owner_refs(obj);
                json_decref(obj);
                fl_blob_unref(kv.value);
            }
            free(marked[i]);
        }
        free(marked);
        atomic_fetch_add(&owned_objects, owned);
        int64_t ms = fl_time_mono_ms() - t0;
        fl_log(ms >= 100 ? FL_LOG_INFO : FL_LOG_DEBUG, "api",
               "%ld objects with owners: %ld as written, %ld of %ld others read to check, in %lld ms", owned, said,
               owned - said, nmarked, (long long)ms);
    } else {
        owner_scan *sc = fl_calloc(1, sizeof *sc);
        sc->store = api->store;
        sc->rev = fl_store_rev(api->store);
        atomic_fetch_add(&owner_scans, 1);
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, owner_scan_main, sc) != 0)
            owner_scan_main(sc);
        pthread_attr_destroy(&at);
    }
}

/* ---- scanning and purging ---- */

/* Collect up to 256 keys of a listing (for deleting a prefix page by page). */
typedef struct key_batch {
    char *keys[256];
    json_t *objs[256];
    size_t n;
    bool parse;
} key_batch;

static bool collect_keys(void *vctx, const char *key, const fl_kv *kv)
{
    key_batch *b = vctx;
    if (b->n == 256)
        return false;
    b->objs[b->n] = b->parse ? fl_json_load(kv->value->data, kv->value->len) : NULL;
    b->keys[b->n++] = fl_strdup(key);
    return true;
}

static void batch_close(key_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->keys[i]);
        json_decref(b->objs[i]);
    }
    b->n = 0;
}

/* Call fn for every object under prefix, a page of 256 at a time; fn runs outside the
 * store's listing, so it may write (and delete) what it is given. obj is NULL unless parse. */
typedef void (*scan_fn)(void *ctx, const char *key, json_t *obj);

static void scan_pages(fl_api *api, const char *prefix, bool parse, scan_fn fn, void *ctx)
{
    char *after = NULL;
    for (;;) {
        key_batch b = {.n = 0, .parse = parse};
        bool more = false;
        int64_t rv;
        fl_store_list(api->store, prefix, after, 0, 256, collect_keys, &b, &rv, &more);
        size_t n = b.n;
        for (size_t i = 0; i < n; i++)
            fn(ctx, b.keys[i], b.objs[i]);
        free(after);
        after = n ? fl_strdup(b.keys[n - 1]) : NULL;
        batch_close(&b);
        if (!more || n == 0)
            break;
    }
    free(after);
}

/* Delete every object under prefix, ignoring finalizers (used when the kind itself goes away). */
static void delete_key(void *vapi, const char *key, json_t *obj)
{
    fl_store_op op = {.type = FL_STORE_DELETE, .key = key, .render = fl_api_render_current};
    if (fl_store_write(((fl_api *)vapi)->store, &op) == 0)
        fl_blob_unref(op.value);
}

static void purge_prefix(fl_api *api, const char *prefix)
{
    scan_pages(api, prefix, false, delete_key, api);
}

/* Called after an object is gone from the store: kind-specific clean-up. */
void fl_api_finish_delete(fl_api *api, const fl_kind *k, json_t *obj)
{
    if (!strcmp(k->kind, "CustomResourceDefinition") && !strcmp(k->group, "apiextensions.k8s.io")) {
        const char *name = fl_obj_str(obj, "metadata", "name");
        json_t *spec = json_object_get(obj, "spec");
        const char *group = fl_obj_str(spec, "group", NULL);
        const char *plural = fl_obj_str(json_object_get(spec, "names"), "plural", NULL);
        if (name)
            fl_kindreg_remove_crd(api->kinds, name);
        if (group && plural) {
            char *prefix = fl_asprintf("/%s/%s/", group, plural);
            purge_prefix(api, prefix);
            free(prefix);
        }
    }
}

/* ---- garbage collection of dependents (synchronous) ---- */

static bool owned_by(const json_t *obj, const char *uid)
{
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
    {
        const char *u = json_string_value(json_object_get(ref, "uid"));
        if (u && !strcmp(u, uid))
            return true;
    }
    return false;
}

static int64_t meta_rev(const json_t *obj)
{
    const char *s = fl_obj_str(json_object_get(obj, "metadata"), "resourceVersion", NULL);
    return s ? strtoll(s, NULL, 10) : 0;
}

/* One dependent found by delete_dependents. */
typedef struct dep_ctx {
    fl_api *api;
    const fl_kind *kind;   /* the dependent's kind */
    const char *uid;       /* the owner's */
    const char *policy;
} dep_ctx;

static void handle_dependent(void *vctx, const char *key, json_t *dep)
{
    dep_ctx *c = vctx;
    if (!dep || !owned_by(dep, c->uid))
        return;
    const char *dname = fl_obj_str(dep, "metadata", "name");
    if (!dname)
        return;
    if (c->policy && !strcmp(c->policy, "Orphan")) {
        json_t *obj = fl_json_deep_copy(dep);
        json_t *refs = json_object_get(fl_obj_meta(obj), "ownerReferences");
        for (size_t j = json_array_size(refs); j-- > 0;) {
            const char *u = json_string_value(json_object_get(json_array_get(refs, j), "uid"));
            if (u && !strcmp(u, c->uid))
                json_array_remove(refs, j);
        }
        if (!json_array_size(refs))
            json_object_del(fl_obj_meta(obj), "ownerReferences");
        json_object_del(fl_obj_meta(obj), "resourceVersion");
        if (fl_api_store_put(c->api, FL_STORE_UPDATE, key, meta_rev(dep), obj) == 0)
            fl_api_track_owned(dep, obj);
        json_decref(obj);
    } else {
        fl_api_delete_object(c->api, c->kind, fl_obj_str(dep, "metadata", "namespace"), dname, NULL, false, NULL,
                             NULL, NULL);
    }
}

/* Apply the owner's propagation policy to its dependents: Orphan strips the owner
 * reference, Background/Foreground delete them (their own dependents in turn). */
static int delete_dependents(fl_api *api, const fl_kind *owner_kind, const json_t *owner, const char *policy)
{
    if (atomic_load(&owner_scans) == 0 && atomic_load(&owned_objects) <= 0)
        return 0;
    const char *uid = fl_obj_str(owner, "metadata", "uid");
    const char *ns = fl_obj_str(owner, "metadata", "namespace");
    if (!uid)
        return 0;
    const fl_kind **kinds;
    size_t nk = fl_kindreg_list(api->kinds, &kinds);
    for (size_t ki = 0; ki < nk; ki++) {
        const fl_kind *k = kinds[ki];
        if ((owner_kind->namespaced && !k->namespaced) || k->storage_version) /* the stored version scans those */
            continue;
        char *prefix = fl_coll_prefix(k, owner_kind->namespaced ? ns : NULL);
        dep_ctx c = {api, k, uid, policy};
        scan_pages(api, prefix, true, handle_dependent, &c);
        free(prefix);
    }
    free(kinds);
    return 0;
}

/* ---- DELETE ---- */

int fl_api_delete_object(fl_api *api, const fl_kind *k, const char *ns, const char *name, const json_t *opts,
                         bool dry_run, json_t **out, fl_target *t, fl_req *r)
{
    if (out)
        *out = NULL;
    const char *policy = fl_obj_str(opts, "propagationPolicy", NULL);
    const json_t *pre = json_object_get(opts, "preconditions");
    const char *pre_uid = fl_obj_str(pre, "uid", NULL);
    const char *pre_rv = fl_obj_str(pre, "resourceVersion", NULL);
    if (json_is_true(json_object_get(opts, "orphanDependents")) && !policy)
        policy = "Orphan";
    if (policy && strcmp(policy, "Background") && strcmp(policy, "Foreground") && strcmp(policy, "Orphan")) {
        if (r) {
            json_t *causes = json_array();
            fl_cause_add(causes, "FieldValueNotSupported", "propagationPolicy",
                         "Unsupported value: \"%s\": supported values: \"Foreground\", \"Background\", \"Orphan\"",
                         policy);
            fl_resp_status(r, 422, "Invalid", t, causes, "DeleteOptions.meta.k8s.io \"\" is invalid: "
                           "propagationPolicy: Unsupported value: \"%s\"", policy);
        }
        return FL_EINVAL;
    }
    char *key = fl_obj_key(k, ns, name);
    int rc = 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        fl_kv kv;
        rc = fl_store_get(api->store, key, &kv);
        if (rc)
            break;
        json_t *cur = fl_api_decoded(kv.value); /* read-only */
        fl_blob_unref(kv.value);
        if (!cur) {
            rc = FL_EIO;
            break;
        }
        const char *uid = fl_obj_str(cur, "metadata", "uid");
        if (pre_uid && (!uid || strcmp(pre_uid, uid))) {
            if (r)
                fl_resp_status(r, 409, "Conflict", t, NULL,
                               "Precondition failed: UID in precondition: %s, UID in object meta: %s", pre_uid,
                               uid ? uid : "");
            json_decref(cur);
            free(key);
            return FL_ECONFLICT;
        }
        const char *crv = fl_obj_str(cur, "metadata", "resourceVersion");
        if (pre_rv && (!crv || strcmp(pre_rv, crv))) {
            if (r)
                fl_resp_status(r, 409, "Conflict", t, NULL,
                               "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
                               "object meta: %s",
                               pre_rv, crv ? crv : "");
            json_decref(cur);
            free(key);
            return FL_ECONFLICT;
        }
        bool is_ns = !k->group[0] && !strcmp(k->kind, "Namespace");
        bool pending = json_array_size(json_object_get(fl_obj_meta(cur), "finalizers")) > 0 ||
                       (is_ns && json_array_size(json_object_get(json_object_get(cur, "spec"), "finalizers")) > 0);
        if (dry_run) {
            if (out)
                *out = cur;
            else
                json_decref(cur);
            free(key);
            return pending ? 1 : 0;
        }
        if (pending) {
            /* finalizers: mark for deletion; whoever owns the finalizer completes it */
            json_t *obj = fl_json_deep_copy(cur);
            json_t *meta = fl_obj_meta(obj);
            bool already = json_object_get(meta, "deletionTimestamp") != NULL;
            if (!already) {
                char now[FL_TIME_BUF];
                fl_time_format(fl_time_now_ms(), false, now);
                json_object_set_new(meta, "deletionTimestamp", json_string(now));
                json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(0));
                if (is_ns)
                    json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Terminating"));
                json_object_del(meta, "resourceVersion");
                rc = fl_api_store_put(api, FL_STORE_UPDATE, key, kv.rev, obj);
                if (rc == FL_ECONFLICT) {
                    json_decref(obj);
                    json_decref(cur);
                    continue;
                }
            }
            json_decref(cur);
            if (rc == 0 && is_ns)
                fl_api_start_purge(api, name);
            if (out)
                *out = obj;
            else
                json_decref(obj);
            free(key);
            return rc ? rc : 1;
        }
        if (policy && !strcmp(policy, "Foreground"))
            delete_dependents(api, k, cur, "Foreground");
        json_t *obj = fl_json_deep_copy(cur);
        json_object_del(fl_obj_meta(obj), "resourceVersion");
        rc = fl_api_store_put(api, FL_STORE_DELETE, key, kv.rev, obj);
        if (rc == FL_ECONFLICT) {
            json_decref(obj);
            json_decref(cur);
            continue;
        }
        if (rc == 0) {
            fl_api_track_owned(cur, NULL);
            fl_api_finish_delete(api, k, obj);
            if (!policy || strcmp(policy, "Foreground"))
                delete_dependents(api, k, cur, policy ? policy : "Background");
        }
        json_decref(cur);
        if (out && rc == 0)
            *out = obj;
        else
            json_decref(obj);
        break;
    }
    free(key);
    return rc;
}

/* dryRun=All in the query or ["All"] in the DeleteOptions body (kubectl sends the latter). */
static bool delete_dry_run(const fl_req *r, const json_t *opts)
{
    if (fl_req_dry_run(r))
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(opts, "dryRun"), i, v) if (json_is_string(v) && !strcmp(json_string_value(v), "All"))
        return true;
    return false;
}

static json_t *delete_options(fl_req *r, const fl_target *t, bool *bad)
{
    *bad = false;
    json_t *opts = NULL;
    if (r->body && r->body_len && fl_api_is_protobuf(r->content_type)) {
        char *err = NULL;
        if (fl_protobuf_decode((const unsigned char *)r->body, r->body_len, &opts, &err) != 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding DeleteOptions: %s", err ? err : "invalid");
            free(err);
            *bad = true;
            return NULL;
        }
    } else if (r->body && r->body_len) {
        json_error_t je;
        opts = json_loadb(r->body, r->body_len, 0, &je);
        if (!json_is_object(opts)) {
            json_decref(opts);
            fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding DeleteOptions: %s",
                           opts ? "expected an object" : je.text);
            *bad = true;
            return NULL;
        }
    } else {
        opts = json_object();
    }
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(opts, "dryRun"), i, v)
    {
        if (!json_is_string(v) || strcmp(json_string_value(v), "All")) {
            json_t *causes = json_array();
            fl_cause_add(causes, "FieldValueNotSupported", "dryRun",
                         "Unsupported value: %s: supported values: \"All\"",
                         json_is_string(v) ? json_string_value(v) : "non-string");
            fl_resp_status(r, 422, "Invalid", t, causes,
                           "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: supported values: "
                           "\"All\"");
            json_decref(opts);
            *bad = true;
            return NULL;
        }
    }
    const char *pp = fl_req_query(r, "propagationPolicy");
    if (pp)
        json_object_set_new(opts, "propagationPolicy", json_string(pp));
    return opts;
}

void fl_api_delete(fl_api *api, fl_req *r, const fl_target *t)
{
    if (!t->kind->group[0] && !strcmp(t->kind->kind, "Namespace") &&
        (!strcmp(t->name, "default") || !strcmp(t->name, "kube-system") || !strcmp(t->name, "kube-public"))) {
        fl_resp_status(r, 403, "Forbidden", t, NULL, "namespaces \"%s\" is forbidden: this namespace may not be deleted",
                       t->name);
        return;
    }
    bool bad;
    json_t *opts = delete_options(r, t, &bad);
    if (bad)
        return;
    fl_target tt = *t;
    json_t *obj = NULL;
    int rc = fl_api_delete_object(api, t->kind, t->ns, t->name, opts, delete_dry_run(r, opts), &obj, &tt, r);
    if (r->resp || rc < 0) {
        if (!r->resp)
            fl_resp_store_error(r, rc, t);
        json_decref(obj);
        json_decref(opts);
        return;
    }
    /* 200 with the object either way (held by finalizers: it carries deletionTimestamp);
     * the apiserver answers 202 only when orphanDependents=false was asked for */
    bool accepted = rc == 1 && json_is_false(json_object_get(opts, "orphanDependents"));
    json_decref(opts);
    fl_resp_json(r, accepted ? 202 : 200, obj ? obj : json_object());
}

void fl_api_delete_collection(fl_api *api, fl_req *r, const fl_target *t)
{
    bool bad;
    json_t *opts = delete_options(r, t, &bad);
    if (bad)
        return;
    /* list what matches (reusing LIST's selector handling), then delete each */
    fl_req lr = *r;
    lr.resp = NULL;
    lr.accept = "application/json";
    fl_api_list(api, &lr, t);
    if (lr.code != 200) {
        r->code = lr.code;
        r->resp = lr.resp;
        r->resp_len = lr.resp_len;
        r->resp_type = lr.resp_type;
        json_decref(opts);
        return;
    }
    json_t *list = fl_json_load(lr.resp, lr.resp_len);
    free(lr.resp);
    json_t *deleted = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        const char *ns = fl_obj_str(item, "metadata", "namespace");
        const char *name = fl_obj_str(item, "metadata", "name");
        json_t *obj = NULL;
        if (name && fl_api_delete_object(api, t->kind, ns ? ns : "", name, opts, delete_dry_run(r, opts), &obj, NULL,
                                         NULL) >= 0 &&
            obj)
            json_array_append_new(deleted, obj);
        else
            json_decref(obj);
    }
    json_t *resp = json_pack("{s:s, s:s, s:{s:s}, s:o}", "kind", t->kind->list_kind, "apiVersion",
                             t->kind->api_version, "metadata", "resourceVersion",
                             json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")) ?: "",
                             "items", deleted);
    json_decref(list);
    json_decref(opts);
    fl_resp_json(r, 200, resp);
}

/* ---- namespace finalization ---- */

typedef struct purge_ctx {
    fl_api *api;
    const fl_kind *kind;
    const char *ns;
    size_t remaining;   /* objects still held by finalizers */
} purge_ctx;

static void purge_one(void *vctx, const char *key, json_t *obj)
{
    purge_ctx *c = vctx;
    const char *name = fl_obj_str(obj, "metadata", "name");
    if (name && fl_api_delete_object(c->api, c->kind, c->ns, name, NULL, false, NULL, NULL, NULL) == 1)
        c->remaining++;
}

int fl_api_purge_namespace(fl_api *api, const char *ns)
{
    const fl_kind **kinds;
    size_t nk = fl_kindreg_list(api->kinds, &kinds);
    purge_ctx c = {api, NULL, ns, 0};
    for (size_t ki = 0; ki < nk; ki++) {
        if (!kinds[ki]->namespaced || kinds[ki]->storage_version) /* the stored version purges those */
            continue;
        c.kind = kinds[ki];
        char *prefix = fl_coll_prefix(kinds[ki], ns);
        scan_pages(api, prefix, true, purge_one, &c);
        free(prefix);
    }
    free(kinds);
    return (int)c.remaining;
}

typedef struct purge_arg {
    fl_api *api;
    char *ns;
} purge_arg;

/* Delete a terminating namespace's contents, then drop its "kubernetes" finalizer so the
 * namespace itself goes. Objects held by their own finalizers are waited for. */
static void *purge_thread(void *arg)
{
    purge_arg *pa = arg;
    const fl_kind *nsk = fl_kindreg_by_resource(pa->api->kinds, "", "v1", "namespaces");
    for (int round = 0; round < 3600 && !pa->api->stopping; round++) {
        int remaining = fl_api_purge_namespace(pa->api, pa->ns);
        if (remaining == 0) {
            char *key = fl_obj_key(nsk, NULL, pa->ns);
            fl_kv kv;
            if (fl_store_get(pa->api->store, key, &kv) == 0) {
                json_t *obj = fl_json_load(kv.value->data, kv.value->len);
                fl_blob_unref(kv.value);
                if (obj) {
                    json_t *spec = json_object_get(obj, "spec");
                    if (spec)
                        json_object_set_new(spec, "finalizers", json_array());
                    json_object_del(fl_obj_meta(obj), "resourceVersion");
                    bool gone = json_array_size(json_object_get(fl_obj_meta(obj), "finalizers")) == 0;
                    int rc = fl_api_store_put(pa->api, gone ? FL_STORE_DELETE : FL_STORE_UPDATE, key, kv.rev, obj);
                    json_decref(obj);
                    if (rc == FL_ECONFLICT) {
                        free(key);
                        continue;
                    }
                }
            }
            free(key);
            break;
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    free(pa->ns);
    free(pa);
    return NULL;
}

void fl_api_start_purge(fl_api *api, const char *ns)
{
    purge_arg *pa = fl_malloc(sizeof *pa);
    pa->api = api;
    pa->ns = fl_strdup(ns);
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, purge_thread, pa) != 0) {
        free(pa->ns);
        free(pa);
    }
    pthread_attr_destroy(&at);
}
