/* api_write.c - create, update (PUT and /status), patch and delete.
 *
 * Every write follows one path: decode the body, merge it with the stored object
 * per the verb (guaranteed_update re-reads and retries on a lost compare-and-swap
 * when the client did not pin a resourceVersion), set the server-owned metadata
 * (uid, creationTimestamp, generation, resourceVersion), type-check and validate,
 * then one fl_store_write. The object is encoded before the write queues; the store's
 * writer puts the revision into the text and the object once it is known (render_pre),
 * so stored bytes are served as they are. Nothing is written unless every check passed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/apply.h"
#include "api/crd_schema.h"
#include "api/protobuf.h"
#include "api/validate.h"
#include "core/json.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/patch.h"
#include "core/random.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "core/yaml.h"

/* Live objects that carry ownerReferences, in every API of the process; deletes skip the
 * dependents scan while 0, once no count of a store's objects at its start is pending. */
static atomic_long owned_objects;
static atomic_int owner_scans;

/* ---- body decoding ---- */

static bool is_protobuf(const char *ct)
{
    return ct && !strncmp(ct, "application/vnd.kubernetes.protobuf", 35);
}

static bool is_yaml(const char *ct)
{
    return ct && (strstr(ct, "yaml") != NULL);
}

json_t *fl_req_body_object(fl_req *r, const fl_target *t)
{
    if (json_is_object(r->body_obj))
        return fl_json_deep_copy(r->body_obj);
    if (!r->body || !r->body_len) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the request body is empty; expected a %s object",
                       t->kind->kind);
        return NULL;
    }
    json_t *obj = NULL;
    if (is_protobuf(r->content_type)) {
        char *err = NULL;
        int rc = fl_protobuf_decode((const unsigned char *)r->body, r->body_len, &obj, &err);
        if (rc) {
            if (rc == FL_EUNSUPPORTED)
                fl_resp_status(r, 415, "UnsupportedMediaType", t, NULL, "%s; send application/json instead",
                               err ? err : "unsupported protobuf content");
            else
                fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding protobuf: %s", err ? err : "invalid");
            free(err);
            return NULL;
        }
    } else if (is_yaml(r->content_type)) {
        char *err = NULL;
        if (fl_yaml_parse(r->body, r->body_len, &obj, &err) != 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding YAML: %s", err ? err : "invalid");
            free(err);
            return NULL;
        }
    } else {
        char *err = NULL;
        if (fl_json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &obj, &err) != 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding JSON: %s", err ? err : "invalid");
            free(err);
            return NULL;
        }
    }
    if (!json_is_object(obj)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the request body must be a JSON object, not %s",
                       json_is_array(obj) ? "an array" : "a scalar");
        json_decref(obj);
        return NULL;
    }
    return obj;
}

/* apiVersion/kind in the body must name the URL's kind; fill them when absent. */
static int check_gvk(fl_req *r, const fl_target *t, json_t *obj)
{
    const fl_kind *k = t->kind;
    json_t *av = json_object_get(obj, "apiVersion"), *kd = json_object_get(obj, "kind");
    if (av && !json_is_string(av)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "apiVersion: expected string");
        return -1;
    }
    if (kd && !json_is_string(kd)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "kind: expected string");
        return -1;
    }
    if (kd && json_string_length(kd) && strcmp(json_string_value(kd), k->kind)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL,
                       "the kind in the data (%s) does not match the expected kind (%s)", json_string_value(kd),
                       k->kind);
        return -1;
    }
    if (av && json_string_length(av) && strcmp(json_string_value(av), k->api_version)) {
        /* another served version of the same group is fine (stored as written) */
        const char *s = json_string_value(av);
        const char *slash = strchr(s, '/');
        size_t glen = slash ? (size_t)(slash - s) : 0;
        if (strlen(k->group) != glen || strncmp(s, k->group, glen)) {
            fl_resp_status(r, 400, "BadRequest", t, NULL,
                           "the API version in the data (%s) does not match the expected API version (%s)", s,
                           k->api_version);
            return -1;
        }
    }
    json_object_set_new(obj, "apiVersion", json_string(k->api_version));
    json_object_set_new(obj, "kind", json_string(k->kind));
    /* keep apiVersion, kind, metadata first, as the apiserver renders them */
    json_t *ordered = json_object();
    json_object_set(ordered, "apiVersion", json_object_get(obj, "apiVersion"));
    json_object_set(ordered, "kind", json_object_get(obj, "kind"));
    json_object_set_new(ordered, "metadata", json_object());
    json_object_update(ordered, obj);
    json_object_clear(obj);
    json_object_update(obj, ordered);
    json_decref(ordered);
    if (!json_is_object(json_object_get(obj, "metadata"))) {
        if (!json_is_null(json_object_get(obj, "metadata"))) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "metadata: expected object");
            return -1;
        }
        json_object_set_new(obj, "metadata", json_object());
    }
    return 0;
}

static bool has_owner_refs(const json_t *obj)
{
    return json_array_size(json_object_get(json_object_get(obj, "metadata"), "ownerReferences")) > 0;
}

static void track_owned(const json_t *old, const json_t *new)
{
    long d = (long)(new && has_owner_refs(new)) - (long)(old && has_owner_refs(old));
    if (d)
        atomic_fetch_add(&owned_objects, d);
}

/* The field manager of a request: ?fieldManager=, else derived from the User-Agent (heap). */
static char *request_manager(const fl_req *r)
{
    const char *fm = fl_req_query(r, "fieldManager");
    if (fm && fm[0])
        return fl_strdup(fm);
    return fl_field_manager_default(r->user_agent);
}

static void record_update(const fl_req *r, const fl_kind *k, const json_t *old, json_t *obj)
{
    char now[32];
    fl_now_rfc3339(now);
    char *manager = request_manager(r);
    fl_managed_fields_update(k, old, obj, manager, now);
    free(manager);
}

/* ---- store writes ---- */

typedef struct render_ctx {
    json_t *obj;
    bool keep;        /* remember obj as what its bytes decode to (fl_api_decoded) */
    /* obj encoded up front with "" for its resourceVersion, which starts at pre_at */
    char *pre;
    size_t pre_len, pre_at;
    fl_api_kept evicted; /* what keeping obj put out of the table, released by the caller */
} render_ctx;

static char *render_obj(void *vctx, const fl_blob *cur, int64_t rev, size_t *len)
{
    render_ctx *c = vctx;
    char rv[32];
    snprintf(rv, sizeof rv, "%lld", (long long)rev);
    json_object_set_new(fl_obj_meta(c->obj), "resourceVersion", json_string(rv));
    return fl_json_dumps(c->obj, len);
}

/* On the store's writer thread: the text encoded before the write queued, with the
 * revision put in where the placeholder's "" is; obj takes the revision too. */
static fl_blob *render_pre(void *vctx, const fl_blob *cur, int64_t rev)
{
    (void)cur;
    render_ctx *c = vctx;
    char rv[32];
    int n = snprintf(rv, sizeof rv, "%lld", (long long)rev);
    fl_blob *b = fl_blob_alloc(c->pre_len + (size_t)n);
    size_t head = c->pre_at + 1; /* through the opening quote */
    memcpy(b->data, c->pre, head);
    memcpy(b->data + head, rv, (size_t)n);
    memcpy(b->data + head + (size_t)n, c->pre + head, c->pre_len - head);
    json_object_set_new(fl_obj_meta(c->obj), "resourceVersion", json_string(rv));
    return b;
}

/* Kept as soon as its bytes exist, so that the watchers the commit wakes find it decoded.
 * What that puts out of the table is released by the writing thread, not here: it is often
 * the last reference to a decoded object, and every write waits for the store's writer. */
static void keep_rendered(void *vctx, fl_blob *value)
{
    render_ctx *c = vctx;
    if (c->keep) /* once per op (fl_store_op.rendered) */
        c->evicted = fl_api_decoded_keep(value, c->obj);
}

/* Write obj under key. On success obj carries the new resourceVersion, and *stored (when
 * not NULL) a reference to the bytes now stored, which answer the request as they are.
 * keep: obj is remembered as what those bytes decode to (fl_api_decoded): nobody changes
 * obj after this call. The encoding happens here, on the caller's thread, and the store's
 * single writer only puts the revision in: every write waits for that thread. */
static int store_put_blob(fl_api *api, int type, const char *key, int64_t prev_rev, json_t *obj, fl_blob **stored,
                          bool keep)
{
    render_ctx rc = {.obj = obj, .keep = keep};
    json_t *meta = fl_obj_meta(obj);
    json_t *had = json_incref(json_object_get(meta, "resourceVersion")); /* obj keeps it on failure */
    json_t *placeholder = json_string("");
    json_object_set_new(meta, "resourceVersion", placeholder);
    rc.pre = fl_json_dumps_mark(obj, placeholder, &rc.pre_len, &rc.pre_at);
    fl_store_op op = {.type = type, .key = key, .prev_rev = prev_rev, .ctx = &rc, .rendered = keep_rendered,
                      .no_current = true, .mark = has_owner_refs(obj) ? 1 : -1 /* FL_API_LOAD_MARK */};
    if (rc.pre_at + 1 < rc.pre_len && !memcmp(rc.pre + rc.pre_at, "\"\"", 2))
        op.render_blob = render_pre;
    else
        op.render = render_obj; /* cannot happen: the placeholder is in obj's metadata */
    int err = fl_store_write(api->store, &op);
    fl_api_kept_release(&rc.evicted);
    free(rc.pre);
    if (err) {
        if (had)
            json_object_set(meta, "resourceVersion", had);
        else
            json_object_del(meta, "resourceVersion");
    }
    json_decref(had);
    if (stored)
        *stored = err == 0 ? op.value : NULL;
    else if (err == 0)
        fl_blob_unref(op.value);
    return err;
}

static int store_put(fl_api *api, int type, const char *key, int64_t prev_rev, json_t *obj)
{
    return store_put_blob(api, type, key, prev_rev, obj, NULL, false);
}

/* Answer with what was stored: the bytes b, or for an in-process caller that asked, obj
 * itself (which carries what the bytes say, resourceVersion included). */
static void resp_stored(fl_req *r, int code, fl_blob *b, json_t *obj)
{
    if (r->want_obj) {
        free(r->resp);
        r->resp = NULL;
        r->resp_len = 0;
        json_decref(r->resp_obj);
        r->code = code;
        r->resp_obj = json_incref(obj);
        r->resp_type = "application/json";
    } else {
        fl_resp_raw(r, code, b->data, b->len);
    }
    fl_blob_unref(b);
}

static int64_t meta_rev(const json_t *obj)
{
    const char *s = fl_obj_str(json_object_get(obj, "metadata"), "resourceVersion", NULL);
    return s ? strtoll(s, NULL, 10) : 0;
}

/* Custom resources: drop the fields their structural schema does not declare, answer per
 * ?fieldValidation= (Strict: 400 naming them; Warn, the default: Warning headers), then fill
 * schema defaults. Returns -1 after responding. Built-in kinds only get the defaults Karmada's
 * own CRDs declare (fl_default_karmada). */
static int crd_schema_apply(fl_req *r, const fl_target *t, json_t *obj)
{
    const fl_kind *k = t->kind;
    fl_default_karmada(k, obj);
    if (!k->dynamic)
        return 0;
    json_t *unknown = json_array();
    fl_crd_prune(k, obj, unknown);
    char *warning = NULL, *err = NULL;
    int rc = fl_crd_field_validation(fl_req_query(r, "fieldValidation"), unknown, &warning, &err);
    json_decref(unknown);
    if (rc) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s in version \"%s\" cannot be handled as a %s: %s", k->kind,
                       k->version, k->kind, err ? err : "invalid");
        free(warning);
        free(err);
        return -1;
    }
    if (warning) {
        free(r->warnings);
        r->warnings = warning;
    }
    free(err);
    fl_crd_default(k, obj);
    return 0;
}

/* ?fieldValidation= must be one of the apiserver's values (checked before decoding, 422). */
static int check_field_validation_mode(fl_req *r, const fl_target *t, const char *options_kind)
{
    const char *mode = fl_req_query(r, "fieldValidation");
    if (!mode || !mode[0] || !strcmp(mode, "Ignore") || !strcmp(mode, "Warn") || !strcmp(mode, "Strict"))
        return 0;
    json_t *causes = json_array();
    fl_cause_add(causes, "FieldValueNotSupported", "fieldValidation",
                 "Unsupported value: \"%s\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"", mode);
    fl_resp_status(r, 422, "Invalid", t, causes,
                   "%s.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"%s\": supported values: "
                   "\"\", \"Ignore\", \"Strict\", \"Warn\"",
                   options_kind, mode);
    return -1;
}

/* Respond 400/422 when obj is not acceptable; returns -1 then. types: also run the
 * structural type checks (callers that already ran them on this object pass false). */
static int check_object(fl_req *r, const fl_target *t, const json_t *obj, const json_t *old, bool types)
{
    char *msg = NULL;
    if (types && fl_validate_types(t->kind, obj, &msg) != 0) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s", msg ? msg : "invalid object");
        free(msg);
        return -1;
    }
    json_t *causes = json_array();
    if (fl_validate_object(t->kind, obj, old, causes) > 0) {
        char text[1024] = "";
        size_t i;
        json_t *c;
        json_array_foreach(causes, i, c)
        {
            const char *f = json_string_value(json_object_get(c, "field"));
            const char *m = json_string_value(json_object_get(c, "message"));
            size_t used = strlen(text);
            snprintf(text + used, sizeof text - used, "%s%s: %s", i ? ", " : "", f ? f : "", m ? m : "");
        }
        const char *name = fl_obj_str(obj, "metadata", "name");
        const char *res = t->group[0] ? fl_asprintf("%s.%s", t->kind->kind, t->group) : fl_strdup(t->kind->kind);
        fl_resp_status(r, 422, "Invalid", t, causes, "%s \"%s\" is invalid: %s", res, name ? name : "", text);
        free((char *)res);
        return -1;
    }
    json_decref(causes);
    return 0;
}

/* Non-metadata content changed (spec only, for kinds with a status subresource)? */
static bool content_changed(const fl_kind *k, const json_t *old, const json_t *new)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)new, key, v)
    {
        if (!strcmp(key, "metadata") || (k->has_status && !strcmp(key, "status")) || !strcmp(key, "apiVersion") ||
            !strcmp(key, "kind"))
            continue;
        if (!json_equal(v, json_object_get(old, key)))
            return true;
    }
    json_object_foreach((json_t *)old, key, v)
    {
        if (!strcmp(key, "metadata") || (k->has_status && !strcmp(key, "status")) || !strcmp(key, "apiVersion") ||
            !strcmp(key, "kind"))
            continue;
        if (!json_object_get(new, key))
            return true;
    }
    return false;
}

static bool same_ignoring_rv(const json_t *a, const json_t *b)
{
    /* without copying either object (an update compares two whole objects): every member
     * but metadata compared as it is, metadata member by member without resourceVersion */
    if (json_object_size(a) != json_object_size(b))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
        json_t *w = json_object_get(b, k);
        if (!w)
            return false;
        if (strcmp(k, "metadata") || !json_is_object(v) || !json_is_object(w)) {
            if (!json_equal(v, w))
                return false;
            continue;
        }
        size_t na = json_object_size(v) - (json_object_get(v, "resourceVersion") != NULL);
        size_t nb = json_object_size(w) - (json_object_get(w, "resourceVersion") != NULL);
        if (na != nb)
            return false;
        const char *mk;
        json_t *mv;
        json_object_foreach(v, mk, mv) {
            if (!strcmp(mk, "resourceVersion"))
                continue;
            json_t *mw = json_object_get(w, mk);
            if (!mw || !json_equal(mv, mw))
                return false;
        }
    }
    return true;
}

/* ---- namespaces ---- */

/* 0 if the namespace exists and accepts new objects; else responds and returns -1. */
static int check_namespace(fl_api *api, fl_req *r, const fl_target *t, const char *ns)
{
    const fl_kind *nsk = fl_kindreg_by_resource(api->kinds, "", "v1", "namespaces");
    char *key = fl_obj_key(nsk, NULL, ns);
    fl_kv kv;
    int rc = fl_store_get(api->store, key, &kv);
    free(key);
    if (rc) {
        fl_target nt;
        memset(&nt, 0, sizeof nt);
        snprintf(nt.resource, sizeof nt.resource, "namespaces");
        snprintf(nt.name, sizeof nt.name, "%s", ns);
        fl_resp_status(r, 404, "NotFound", &nt, NULL, "namespaces \"%s\" not found", ns);
        return -1;
    }
    bool terminating = strstr(kv.value->data, "\"deletionTimestamp\"") != NULL;
    fl_blob_unref(kv.value);
    if (terminating) {
        fl_resp_status(r, 403, "Forbidden", t, NULL,
                       "unable to create new content in namespace %s because it is being terminated", ns);
        return -1;
    }
    return 0;
}

static void *purge_thread(void *arg);

typedef struct purge_arg {
    fl_api *api;
    char *ns;
} purge_arg;

static void start_purge(fl_api *api, const char *ns)
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

/* ---- create ---- */

static void random_suffix(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5];
    fl_random_bytes(b, sizeof b);
    for (int i = 0; i < 5; i++)
        out[i] = alphabet[b[i] % (sizeof alphabet - 1)];
    out[5] = 0;
}

/* Secrets: stringData is write-only convenience, merged into data as base64 (it wins over
 * data for the same key), and type defaults to Opaque, as the apiserver does. */
static void secret_normalize(const fl_kind *k, json_t *obj)
{
    if (k->group[0] || strcmp(k->kind, "Secret"))
        return;
    json_t *sd = json_object_get(obj, "stringData");
    if (json_is_object(sd)) {
        json_t *data = json_object_get(obj, "data");
        if (!json_is_object(data)) {
            data = json_object();
            json_object_set_new(obj, "data", data);
        }
        const char *key;
        json_t *v;
        json_object_foreach(sd, key, v)
        {
            if (!json_is_string(v))
                continue;
            char *enc = fl_base64_encode(json_string_value(v), json_string_length(v));
            json_object_set_new(data, key, json_string(enc));
            free(enc);
        }
    }
    json_object_del(obj, "stringData");
    json_t *type = json_object_get(obj, "type");
    if (!json_is_string(type) || !json_string_length(type))
        json_object_set_new(obj, "type", json_string("Opaque"));
}

/* Per-kind defaults and server-owned fields on create. */
/* Karmada's admission gives every policy, binding and Work a permanent ID label at
 * creation (a UUID that, unlike the uid, survives a delete and re-create through
 * backup/restore): the detector claims templates with it and Works find their binding
 * by it. Kept when the client already set one. */
static void permanent_id_label(const fl_kind *k, json_t *obj)
{
    static const struct {
        const char *group, *kind, *label;
    } ids[] = {
        {"policy.karmada.io", "PropagationPolicy", FL_PP_ID_LABEL},
        {"policy.karmada.io", "ClusterPropagationPolicy", FL_CPP_ID_LABEL},
        {"work.karmada.io", "ResourceBinding", FL_RB_ID_LABEL},
        {"work.karmada.io", "ClusterResourceBinding", FL_CRB_ID_LABEL},
        {"work.karmada.io", "Work", FL_WORK_ID_LABEL},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (strcmp(k->group, ids[i].group) || strcmp(k->kind, ids[i].kind))
            continue;
        json_t *labels = json_object_get(fl_obj_meta(obj), "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            json_object_set_new(fl_obj_meta(obj), "labels", labels);
        }
        if (!json_string_value(json_object_get(labels, ids[i].label))) {
            char id[37];
            fl_uuid4(id);
            json_object_set_new(labels, ids[i].label, json_string(id));
        }
        return;
    }
}

static void on_create_defaults(const fl_kind *k, json_t *obj)
{
    secret_normalize(k, obj);
    permanent_id_label(k, obj);
    if (!k->group[0] && !strcmp(k->kind, "Namespace")) {
        json_t *spec = json_object_get(obj, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(obj, "spec", spec);
        }
        if (!json_object_get(spec, "finalizers"))
            json_object_set_new(spec, "finalizers", json_pack("[s]", "kubernetes"));
        json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
        json_t *labels = json_object_get(fl_obj_meta(obj), "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            json_object_set_new(fl_obj_meta(obj), "labels", labels);
        }
        json_object_set_new(labels, "kubernetes.io/metadata.name",
                            json_string(fl_obj_str(obj, "metadata", "name")));
    }
    if (!strcmp(k->kind, "CustomResourceDefinition")) {
        char now[32];
        fl_now_rfc3339(now);
        json_t *names = json_object_get(json_object_get(obj, "spec"), "names");
        json_t *conds = json_pack("[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}]", "type", "NamesAccepted",
                                  "status", "True", "lastTransitionTime", now, "reason", "NoConflicts", "message",
                                  "no conflicts found", "type", "Established", "status", "True",
                                  "lastTransitionTime", now, "reason", "InitialNamesAccepted", "message",
                                  "the initial names have been accepted");
        json_t *st = json_pack("{s:o, s:o, s:[]}", "conditions", conds, "acceptedNames",
                               names ? json_incref(names) : json_object(), "storedVersions");
        json_t *vers = json_object_get(json_object_get(obj, "spec"), "versions");
        size_t i;
        json_t *v;
        json_array_foreach(vers, i, v) if (json_is_true(json_object_get(v, "storage")))
            json_array_append(json_object_get(st, "storedVersions"), json_object_get(v, "name"));
        json_object_set_new(obj, "status", st);
    }
}

static void create_object(fl_api *api, fl_req *r, const fl_target *t0, json_t *obj, bool applied);

void fl_api_create(fl_api *api, fl_req *r, const fl_target *t0)
{
    if (check_field_validation_mode(r, t0, "CreateOptions"))
        return;
    json_t *obj = fl_req_body_object(r, t0);
    if (obj)
        create_object(api, r, t0, obj, false);
}

/* Create obj (stolen). applied: obj came from server-side apply and already carries its
 * managedFields. */
static void create_object(fl_api *api, fl_req *r, const fl_target *t0, json_t *obj, bool applied)
{
    fl_target tt = *t0;
    fl_target *t = &tt;
    const fl_kind *k = t->kind;
    char *key = NULL;
    if (check_gvk(r, t, obj))
        goto out;
    if (crd_schema_apply(r, t, obj))
        goto out;
    json_t *meta = fl_obj_meta(obj);
    /* namespace: from the URL; a different one in the body is an error */
    if (k->namespaced) {
        const char *bns = fl_obj_str(obj, "metadata", "namespace");
        if (bns && bns[0] && strcmp(bns, t->ns)) {
            fl_resp_status(r, 400, "BadRequest", t, NULL,
                           "the namespace of the provided object does not match the namespace sent on the request");
            goto out;
        }
        json_object_set_new(meta, "namespace", json_string(t->ns));
    } else {
        json_object_del(meta, "namespace");
    }
    char *msg = NULL;
    if (fl_validate_types(k, obj, &msg) != 0) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s", msg ? msg : "invalid object");
        free(msg);
        goto out;
    }
    const char *name = fl_obj_str(obj, "metadata", "name");
    const char *gen_name = fl_obj_str(obj, "metadata", "generateName");
    bool generated = false;
    if ((!name || !name[0]) && gen_name && gen_name[0]) {
        char sfx[6];
        random_suffix(sfx);
        char *n = fl_asprintf("%.*s%s", 58, gen_name, sfx);
        json_object_set_new(meta, "name", json_string(n));
        free(n);
        generated = true;
    }
    name = fl_obj_str(obj, "metadata", "name");
    if (!name || !name[0]) {
        json_t *causes = json_array();
        fl_cause_add(causes, "FieldValueRequired", "metadata.name", "Required value: name or generateName is required");
        fl_resp_status(r, 422, "Invalid", t, causes, "%s \"\" is invalid: metadata.name: Required value: name or "
                       "generateName is required", k->kind);
        goto out;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    /* server-owned fields */
    char uid[37], now[32];
    fl_uuid4(uid);
    fl_now_rfc3339(now);
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(now));
    json_object_set_new(meta, "generation", json_integer(1));
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "deletionTimestamp");
    json_object_del(meta, "deletionGracePeriodSeconds");
    json_object_del(meta, "selfLink");
    if (k->has_status)
        json_object_del(obj, "status");
    on_create_defaults(k, obj);
    if (!applied)
        record_update(r, k, NULL, obj);
    if (check_object(r, t, obj, NULL, false)) /* types were checked on the body above */
        goto out;
    if (k->namespaced && check_namespace(api, r, t, t->ns))
        goto out;
    key = fl_obj_key(k, t->ns, name);
    bool is_crd = !strcmp(k->kind, "CustomResourceDefinition") && !strcmp(k->group, "apiextensions.k8s.io");
    if (is_crd) {
        fl_kv kv;
        if (fl_store_get(api->store, key, &kv) == 0) {
            fl_blob_unref(kv.value);
            fl_resp_store_error(r, FL_EEXIST, t);
            goto out;
        }
    }
    if (fl_req_dry_run(r)) {
        fl_resp_json(r, 201, json_incref(obj));
        goto out;
    }
    if (is_crd) {
        char *err = NULL;
        if (fl_kindreg_apply_crd(api->kinds, obj, &err) != 0) {
            json_t *causes = json_array();
            fl_cause_add(causes, "FieldValueInvalid", "spec", "%s", err ? err : "invalid");
            fl_resp_status(r, 422, "Invalid", t, causes, "CustomResourceDefinition.apiextensions.k8s.io \"%s\" is "
                           "invalid: %s", name, err ? err : "invalid");
            free(err);
            goto out;
        }
    }
    int rc;
    fl_blob *stored = NULL;
    for (int attempt = 0;; attempt++) {
        /* remembered decoded unless the caller takes obj (and may change it) */
        rc = store_put_blob(api, FL_STORE_CREATE, key, 0, obj, &stored, !r->want_obj);
        if (rc != FL_EEXIST || !generated || attempt == 5)
            break;
        /* generated name collided: draw another suffix, as the apiserver's callers would retry */
        char sfx[6];
        random_suffix(sfx);
        char *n = fl_asprintf("%.*s%s", 58, gen_name, sfx);
        json_object_set_new(meta, "name", json_string(n));
        snprintf(t->name, sizeof t->name, "%s", n);
        free(key);
        key = fl_obj_key(k, t->ns, n);
        free(n);
    }
    if (rc) {
        fl_resp_store_error(r, rc, t);
        goto out;
    }
    track_owned(NULL, obj);
    resp_stored(r, 201, stored, obj);
out:
    free(key);
    json_decref(obj);
}

/* ---- update machinery ---- */

/* Produce the desired object from the current one. Return the new object (new reference)
 * or NULL after responding with an error. *pinned_rv receives a resourceVersion the client
 * required (0 = none), which makes a lost compare-and-swap a 409 instead of a retry. */
typedef json_t *(*mutate_fn)(void *ctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned_rv);

static void finish_delete(fl_api *api, const fl_kind *k, json_t *obj);
static json_t *mutate_put(void *vctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned);
static json_t *mutate_patch(void *vctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned);
static void apply_patch(fl_api *api, fl_req *r, const fl_target *t);
static int delete_dependents(fl_api *api, const fl_kind *k, const json_t *owner, const char *policy);

/* Server-owned and subresource rules that turn a client's object into what is stored.
 * share: out may share what it takes unchanged from cur (read-only, as cur is): out will be
 * handed to nobody who changes it. */
static json_t *merge_for_update(const fl_target *t, const json_t *cur, json_t *in, bool share)
{
    const fl_kind *k = t->kind;
    json_t *out;
    if (!strcmp(t->sub, "status")) {
        if (share && !k->dynamic) {
            /* all but the status stays: share it, with a metadata of out's own (the write
             * changes managedFields, resourceVersion, generation there); nothing else is
             * changed after this for a built-in kind (its defaults only fill what is absent,
             * and the stored object has them) */
            out = fl_json_shallow_copy(cur);
            json_object_set_new(out, "metadata", fl_json_shallow_copy(json_object_get(cur, "metadata")));
        } else {
            out = fl_json_deep_copy(cur);
        }
        json_t *st = json_object_get(in, "status");
        if (st)
            json_object_set(out, "status", st);
        else
            json_object_del(out, "status");
        json_decref(in);
        return out;
    }
    if (!strcmp(t->sub, "scale")) {
        /* only the replica count moves from the Scale into the object */
        out = fl_json_deep_copy(cur);
        json_t *rep = json_object_get(json_object_get(in, "spec"), "replicas");
        const char *path = fl_scale_spec_path(k);
        char buf[256];
        snprintf(buf, sizeof buf, "%s", path[0] == '.' ? path + 1 : path);
        json_t *node = out;
        char *save = NULL, *tok = strtok_r(buf, ".", &save);
        while (tok) {
            char *next = strtok_r(NULL, ".", &save);
            if (!next) {
                json_object_set_new(node, tok, json_integer(json_integer_value(rep)));
                break;
            }
            json_t *child = json_object_get(node, tok);
            if (!json_is_object(child)) {
                child = json_object();
                json_object_set_new(node, tok, child);
            }
            node = child;
            tok = next;
        }
        json_decref(in);
        json_t *cmeta = json_object_get(cur, "metadata");
        if (content_changed(k, cur, out))
            json_object_set_new(fl_obj_meta(out), "generation",
                                json_integer(json_integer_value(json_object_get(cmeta, "generation")) + 1));
        return out;
    }
    out = in;
    secret_normalize(k, out);
    json_t *meta = fl_obj_meta(out);
    const json_t *cmeta = json_object_get(cur, "metadata");
    static const char *keep[] = {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                                 "generation", "namespace", NULL};
    for (int i = 0; keep[i]; i++) {
        json_t *v = json_object_get(cmeta, keep[i]);
        if (v)
            json_object_set(meta, keep[i], v);
        else
            json_object_del(meta, keep[i]);
    }
    /* cur may be a shared, read-only object, and out will be changed: its status is copied,
     * or (built-in kinds, whose status nothing after this changes: see the /status case)
     * shared when out goes to nobody who changes it */
    if (k->has_status) {
        json_t *st = json_object_get(cur, "status");
        if (st)
            json_object_set_new(out, "status", share && !k->dynamic ? json_incref(st) : fl_json_deep_copy(st));
        else
            json_object_del(out, "status");
    }
    if (!k->group[0] && !strcmp(k->kind, "Namespace") && strcmp(t->sub, "finalize")) {
        /* spec.finalizers change only through /finalize */
        json_t *spec = json_object_get(cur, "spec");
        if (spec)
            json_object_set_new(out, "spec", fl_json_deep_copy(spec));
        json_object_set_new(out, "status", fl_json_deep_copy(json_object_get(cur, "status")));
    }
    if (content_changed(k, cur, out)) {
        json_int_t g = json_integer_value(json_object_get(cmeta, "generation"));
        json_object_set_new(meta, "generation", json_integer(g + 1));
    }
    return out;
}

static json_t *mutate_apply(void *vctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned);
static const mutate_fn mutate_apply_fn = mutate_apply;

/* Read-modify-write with compare-and-swap, retried while nobody pinned a revision. */
static void guaranteed_update(fl_api *api, fl_req *r, const fl_target *t, mutate_fn fn, void *ctx)
{
    const fl_kind *k = t->kind;
    char *key = fl_obj_key(k, t->ns, t->name);
    for (int attempt = 0; attempt < 16; attempt++) {
        fl_kv kv;
        int rc = fl_store_get(api->store, key, &kv);
        if (rc) {
            fl_resp_store_error(r, rc, t);
            break;
        }
        json_t *cur = fl_api_decoded(kv.value);
        fl_blob_unref(kv.value);
        if (!cur) {
            fl_resp_store_error(r, FL_EIO, t);
            break;
        }
        int64_t pinned = 0;
        bool scale = !strcmp(t->sub, "scale");
        json_t *view = scale ? fl_scale_view(k, cur) : json_incref(cur);
        json_t *in = fn(ctx, r, t, view, &pinned);
        json_decref(view);
        if (!in) {
            json_decref(cur);
            break;
        }
        if (pinned && pinned != kv.rev) {
            json_decref(cur);
            json_decref(in);
            fl_resp_store_error(r, FL_ECONFLICT, t);
            break;
        }
        json_t *obj = merge_for_update(t, cur, in, !r->want_obj);
        if (crd_schema_apply(r, t, obj)) {
            json_decref(cur);
            json_decref(obj);
            break;
        }
        if (fn != mutate_apply_fn)
            record_update(r, k, cur, obj);
        /* a PUT's body had its types checked on arrival, a patch's result (but a scale's)
         * in mutate_patch, and what the merge takes from the stored object was checked
         * when that was written */
        bool typed = fn == mutate_put || (fn == mutate_patch && !scale);
        if (check_object(r, t, obj, cur, !typed)) {
            json_decref(cur);
            json_decref(obj);
            break;
        }
        bool is_crd = !strcmp(k->kind, "CustomResourceDefinition") && !strcmp(k->group, "apiextensions.k8s.io");
        if (same_ignoring_rv(obj, cur)) {
            /* no-op: nothing is written and the revision stays */
            json_decref(obj);
            fl_resp_json(r, 200, scale ? fl_scale_view(k, cur) : json_incref(cur));
            json_decref(cur);
            break;
        }
        if (fl_req_dry_run(r)) {
            json_decref(cur);
            fl_resp_json(r, 200, obj);
            break;
        }
        json_object_del(fl_obj_meta(obj), "resourceVersion");
        bool finalized = json_object_get(fl_obj_meta(obj), "deletionTimestamp") &&
                         json_array_size(json_object_get(fl_obj_meta(obj), "finalizers")) == 0 &&
                         !(!k->group[0] && !strcmp(k->kind, "Namespace") &&
                           json_array_size(json_object_get(json_object_get(obj, "spec"), "finalizers")) > 0);
        if (is_crd && !strcmp(t->sub, "")) {
            char *err = NULL;
            if (fl_kindreg_apply_crd(api->kinds, obj, &err) != 0) {
                json_t *causes = json_array();
                fl_cause_add(causes, "FieldValueInvalid", "spec", "%s", err ? err : "invalid");
                fl_resp_status(r, 422, "Invalid", t, causes, "CustomResourceDefinition.apiextensions.k8s.io \"%s\" "
                               "is invalid: %s", t->name, err ? err : "invalid");
                free(err);
                json_decref(cur);
                json_decref(obj);
                break;
            }
        }
        fl_blob *stored = NULL;
        rc = store_put_blob(api, finalized ? FL_STORE_DELETE : FL_STORE_UPDATE, key, kv.rev, obj, &stored,
                            !finalized && !scale && !r->want_obj);
        if (rc == FL_ECONFLICT && !pinned) {
            json_decref(cur);
            json_decref(obj);
            continue;
        }
        if (rc) {
            json_decref(cur);
            json_decref(obj);
            fl_resp_store_error(r, rc, t);
            break;
        }
        track_owned(cur, finalized ? NULL : obj);
        if (finalized)
            finish_delete(api, k, obj);
        json_decref(cur);
        if (scale) {
            fl_resp_json(r, 200, fl_scale_view(k, obj));
            fl_blob_unref(stored);
        } else {
            resp_stored(r, 200, stored, obj);
        }
        json_decref(obj);
        free(key);
        return;
    }
    if (!r->resp)
        fl_resp_store_error(r, FL_ECONFLICT, t);
    free(key);
}

/* ---- PUT ---- */

typedef struct put_ctx {
    json_t *own;    /* the request's object, ours to change: the first attempt takes it */
} put_ctx;

static json_t *mutate_put(void *vctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned)
{
    put_ctx *c = vctx;
    /* the object to change: the body decoded on arrival, then (a retry after a lost race,
     * or a scale) decoded again */
    json_t *in = c->own ? c->own : fl_req_body_object(r, t);
    c->own = NULL;
    if (!in)
        return NULL;
    const char *name = fl_obj_str(in, "metadata", "name");
    if (name && strcmp(name, t->name)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the name of the object (%s) does not match the name on the URL (%s)",
                       name, t->name);
        json_decref(in);
        return NULL;
    }
    json_object_set_new(fl_obj_meta(in), "name", json_string(t->name));
    const char *ns = fl_obj_str(in, "metadata", "namespace");
    if (t->kind->namespaced && ns && ns[0] && strcmp(ns, t->ns)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL,
                       "the namespace of the provided object does not match the namespace sent on the request");
        json_decref(in);
        return NULL;
    }
    const char *rv = fl_obj_str(in, "metadata", "resourceVersion");
    if (rv && rv[0]) {
        char *end;
        long long v = strtoll(rv, &end, 10);
        if (*end || v <= 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "metadata.resourceVersion: invalid value %s", rv);
            json_decref(in);
            return NULL;
        }
        *pinned = v;
    }
    return in;
}

/* What a /status PUT takes from an in-process caller's object, copied so that the caller's
 * stays unchanged: the status, and the metadata the name and precondition are read from
 * (its values shared: only the copy's own members are set). The rest (a Work's manifests)
 * the merge takes from the stored object, so it is not copied. */
static json_t *status_body_copy(const json_t *body)
{
    json_t *in = json_object();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        if (!strcmp(key, "status"))
            json_object_set_new(in, key, fl_json_deep_copy(v));
        else if (!strcmp(key, "metadata") && json_is_object(v))
            json_object_set_new(in, key, fl_json_shallow_copy(v));
        else if (!strcmp(key, "apiVersion") || !strcmp(key, "kind"))
            json_object_set(in, key, v);
    }
    return in;
}

void fl_api_update(fl_api *api, fl_req *r, const fl_target *t)
{
    if (check_field_validation_mode(r, t, "UpdateOptions"))
        return;
    /* an in-process caller's object is read in place; one decoded from bytes is ours to
     * change once (kept unchanged until then, for retries to copy) */
    json_t *body = json_is_object(r->body_obj) ? json_incref((json_t *)r->body_obj) : fl_req_body_object(r, t);
    if (!body)
        return;
    put_ctx c = {NULL};
    if (!strcmp(t->sub, "scale")) {
        if (!json_is_integer(json_object_get(json_object_get(body, "spec"), "replicas")))
            fl_resp_status(r, 400, "BadRequest", t, NULL, "spec.replicas: expected integer");
        else
            guaranteed_update(api, r, t, mutate_put, &c);
        json_decref(body);
        return;
    }
    if (check_gvk(r, t, body) == 0) {
        char *msg = NULL;
        /* an in-process /status write is checked where it is taken: the status (the rest
         * comes from the stored object); bytes from a client are checked whole, as they are
         * decoded whole upstream */
        const char *top = r->body_obj && !strcmp(t->sub, "status") ? "status" : NULL;
        if (fl_validate_types_under(t->kind, body, top, &msg) != 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "%s", msg ? msg : "invalid object");
            free(msg);
        } else {
            /* a body given to a write that cannot be retried (it pins a resourceVersion) is
             * taken as it is but for its metadata, which the write changes and the caller may
             * share (what is below is shared read-only, and nothing changes it for a built-in
             * kind other than a Secret); one that may be retried stays unchanged, for the retry */
            const char *rv = fl_obj_str(body, "metadata", "resourceVersion");
            if (!r->body_obj) {
                c.own = json_incref(body);
            } else if (r->body_given && rv && rv[0] && !t->kind->dynamic && strcmp(t->kind->kind, "Secret")) {
                c.own = json_incref(body);
                json_object_set_new(c.own, "metadata", fl_json_shallow_copy(json_object_get(body, "metadata")));
            } else
                c.own = !strcmp(t->sub, "status") ? status_body_copy(body) : fl_json_deep_copy(body);
            guaranteed_update(api, r, t, mutate_put, &c);
            json_decref(c.own);
        }
    }
    json_decref(body);
}

/* ---- PATCH ---- */

typedef struct patch_ctx {
    json_t *patch;
    int type;  /* 1 merge, 2 json, 3 strategic, 4 apply */
} patch_ctx;

static json_t *mutate_patch(void *vctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned)
{
    patch_ctx *c = vctx;
    json_t *out = NULL;
    char *err = NULL;
    int rc;
    if (c->type == 1)
        rc = fl_patch_merge(cur, c->patch, &out, &err);
    else if (c->type == 2)
        rc = fl_patch_json(cur, c->patch, &out, &err);
    else
        rc = fl_patch_strategic(cur, c->patch, fl_kind_smp_lookup, (void *)t->kind, &out, &err);
    if (rc) {
        int code = c->type == 2 ? 422 : 400;
        fl_resp_status(r, code, code == 422 ? "Invalid" : "BadRequest", t, NULL, "the patch could not be applied: %s",
                       err ? err : "invalid patch");
        free(err);
        return NULL;
    }
    if (!json_is_object(out)) {
        fl_resp_status(r, 422, "Invalid", t, NULL, "the patch did not produce an object");
        json_decref(out);
        return NULL;
    }
    const char *name = fl_obj_str(out, "metadata", "name");
    if (!name || strcmp(name, t->name)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "metadata.name: the patch may not change the name (%s)", t->name);
        json_decref(out);
        return NULL;
    }
    bool scale = !strcmp(t->sub, "scale");
    json_t *av = json_object_get(out, "apiVersion"), *kd = json_object_get(out, "kind");
    if (!json_is_string(kd) || strcmp(json_string_value(kd), scale ? "Scale" : t->kind->kind) || !json_is_string(av)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the patch may not change apiVersion or kind");
        json_decref(out);
        return NULL;
    }
    char *msg = NULL;
    if (scale ? !json_is_integer(json_object_get(json_object_get(out, "spec"), "replicas"))
              : fl_validate_types(t->kind, out, &msg) != 0) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s", msg ? msg : "spec.replicas: expected integer");
        free(msg);
        json_decref(out);
        return NULL;
    }
    /* a resourceVersion in the patch pins the write */
    const char *prv = fl_obj_str(json_object_get(c->patch, "metadata") ? c->patch : NULL, "metadata", "resourceVersion");
    if (c->type != 2 && prv && prv[0])
        *pinned = strtoll(prv, NULL, 10);
    if (c->type == 2) {
        const char *orv = fl_obj_str(out, "metadata", "resourceVersion");
        const char *crv = fl_obj_str(cur, "metadata", "resourceVersion");
        if (orv && crv && strcmp(orv, crv))
            *pinned = strtoll(orv, NULL, 10);
    }
    return out;
}

/* ---- server-side apply ---- */

typedef struct apply_ctx {
    json_t *config;
    char *manager;
    bool force;
} apply_ctx;

static void respond_apply_error(fl_req *r, const fl_target *t, int rc, json_t *conflicts, char *err)
{
    if (rc == FL_ECONFLICT) {
        json_t *causes = json_array();
        char text[1024] = "";
        size_t i;
        json_t *c;
        json_array_foreach(conflicts, i, c)
        {
            const char *field = json_string_value(json_object_get(c, "field"));
            const char *mgr = json_string_value(json_object_get(c, "manager"));
            char msg[300];
            snprintf(msg, sizeof msg, "conflict with \"%s\"", mgr ? mgr : "");
            json_array_append_new(causes, json_pack("{s:s, s:s, s:s}", "reason", "FieldManagerConflict", "message",
                                                    msg, "field", field ? field : ""));
            size_t n = strlen(text);
            snprintf(text + n, sizeof text - n, "\n* %s: %s", msg, field ? field : "");
        }
        fl_resp_status(r, 409, "Conflict", t, causes, "Apply failed with %zu conflict%s:%s", json_array_size(conflicts),
                       json_array_size(conflicts) == 1 ? "" : "s", text);
    } else {
        fl_resp_status(r, 422, "Invalid", t, NULL, "%s", err ? err : "the applied configuration is invalid");
    }
    free(err);
    json_decref(conflicts);
}

static json_t *mutate_apply(void *vctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned)
{
    apply_ctx *c = vctx;
    char now[32];
    fl_now_rfc3339(now);
    json_t *out = NULL, *conflicts = NULL;
    char *err = NULL;
    int rc = fl_apply(t->kind, cur, c->config, c->manager, c->force, now, &out, &conflicts, &err);
    if (rc) {
        respond_apply_error(r, t, rc, conflicts, err);
        return NULL;
    }
    json_decref(conflicts);
    free(err);
    const char *rv = fl_obj_str(c->config, "metadata", "resourceVersion");
    if (rv && rv[0])
        *pinned = strtoll(rv, NULL, 10);
    return out;
}

/* PATCH with application/apply-patch+yaml: merge the applied configuration as its field
 * manager, creating the object when it does not exist. */
static void apply_patch(fl_api *api, fl_req *r, const fl_target *t)
{
    if (t->sub[0]) {
        fl_resp_status(r, 415, "UnsupportedMediaType", t, NULL,
                       "server-side apply is supported on the main resource only, not on /%s", t->sub);
        return;
    }
    json_t *config = NULL;
    char *err = NULL;
    if (!r->body || fl_yaml_parse(r->body, r->body_len, &config, &err) != 0 || !json_is_object(config)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding the applied configuration: %s",
                       err ? err : "expected an object");
        free(err);
        json_decref(config);
        return;
    }
    const char *fm = fl_req_query(r, "fieldManager");
    if (!fm || !fm[0]) {
        json_t *causes = json_array();
        fl_cause_add(causes, "FieldValueRequired", "fieldManager", "Required value: is required for apply patch");
        fl_resp_status(r, 422, "Invalid", t, causes,
                       "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for "
                       "apply patch");
        json_decref(config);
        return;
    }
    const char *name = fl_obj_str(config, "metadata", "name");
    if (name && strcmp(name, t->name)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the name of the object (%s) does not match the name on the URL (%s)",
                       name, t->name);
        json_decref(config);
        return;
    }
    char *msg = NULL;
    if (fl_validate_types(t->kind, config, &msg) != 0) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s", msg ? msg : "invalid object");
        free(msg);
        json_decref(config);
        return;
    }
    const char *force = fl_req_query(r, "force");
    apply_ctx c = {config, fl_strdup(fm), force && !strcmp(force, "true")};
    char *key = fl_obj_key(t->kind, t->ns, t->name);
    fl_kv kv;
    int rc = fl_store_get(api->store, key, &kv);
    free(key);
    if (rc == FL_ENOTFOUND) {
        char now[32];
        fl_now_rfc3339(now);
        json_t *out = NULL, *conflicts = NULL;
        rc = fl_apply(t->kind, NULL, config, c.manager, c.force, now, &out, &conflicts, &err);
        if (rc) {
            respond_apply_error(r, t, rc, conflicts, err);
        } else {
            json_decref(conflicts);
            free(err);
            json_object_set_new(fl_obj_meta(out), "name", json_string(t->name));
            create_object(api, r, t, out, true);
        }
    } else {
        if (rc == 0)
            fl_blob_unref(kv.value);
        guaranteed_update(api, r, t, mutate_apply, &c);
    }
    free(c.manager);
    json_decref(config);
}

void fl_api_patch(fl_api *api, fl_req *r, const fl_target *t)
{
    if (check_field_validation_mode(r, t, "PatchOptions"))
        return;
    const char *ct = r->content_type ? r->content_type : "";
    patch_ctx c = {NULL, 0};
    if (!strncmp(ct, "application/merge-patch+json", 28))
        c.type = 1;
    else if (!strncmp(ct, "application/json-patch+json", 27))
        c.type = 2;
    else if (!strncmp(ct, "application/strategic-merge-patch+json", 38))
        c.type = 3;
    else if (!strncmp(ct, "application/apply-patch+yaml", 28))
        c.type = 4;
    if (c.type == 0) {
        fl_resp_status(r, 415, "UnsupportedMediaType", t, NULL,
                       "the body of the request was in an unknown format - accepted media types include: "
                       "application/json-patch+json, application/merge-patch+json, "
                       "application/strategic-merge-patch+json");
        return;
    }
    if (c.type == 3 && (t->kind->dynamic || !t->kind->fields)) {
        fl_resp_status(r, 415, "UnsupportedMediaType", t, NULL,
                       "the body of the request was in an unknown format - accepted media types include: "
                       "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
        return;
    }
    if (c.type == 4) {
        apply_patch(api, r, t);
        return;
    }
    if (fl_req_query(r, "force")) {
        json_t *causes = json_array();
        fl_cause_add(causes, "FieldValueForbidden", "force", "Forbidden: may not be specified for non-apply patch");
        fl_resp_status(r, 422, "Invalid", t, causes,
                       "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for "
                       "non-apply patch");
        return;
    }
    json_error_t je;
    if (r->body && fl_json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &c.patch, NULL) != 0)
        c.patch = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je); /* fails: its words */
    if (!c.patch) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding patch: %s",
                       r->body ? je.text : "empty body");
        return;
    }
    if ((c.type == 2 && !json_is_array(c.patch)) || (c.type != 2 && !json_is_object(c.patch) && c.type != 1)) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, c.type == 2 ? "a JSON patch must be an array of operations"
                                                                  : "a merge patch must be a JSON object");
        json_decref(c.patch);
        return;
    }
    guaranteed_update(api, r, t, mutate_patch, &c);
    json_decref(c.patch);
}


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

/* Render the final state of a deleted object: its current bytes with the new revision. */
static char *render_current(void *vctx, const fl_blob *cur, int64_t rev, size_t *len)
{
    json_t *obj = cur ? fl_json_load(cur->data, cur->len) : NULL;
    if (!obj)
        obj = json_object();
    render_ctx c = {obj};
    char *s = render_obj(&c, cur, rev, len);
    json_decref(obj);
    return s;
}

/* Delete every object under prefix, ignoring finalizers (used when the kind itself goes away). */
static void delete_key(void *vapi, const char *key, json_t *obj)
{
    fl_store_op op = {.type = FL_STORE_DELETE, .key = key, .render = render_current};
    if (fl_store_write(((fl_api *)vapi)->store, &op) == 0)
        fl_blob_unref(op.value);
}

static void purge_prefix(fl_api *api, const char *prefix)
{
    scan_pages(api, prefix, false, delete_key, api);
}

/* Called after an object is gone from the store: kind-specific clean-up. */
static void finish_delete(fl_api *api, const fl_kind *k, json_t *obj)
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
        if (store_put(c->api, FL_STORE_UPDATE, key, meta_rev(dep), obj) == 0)
            track_owned(dep, obj);
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
        if (owner_kind->namespaced && !k->namespaced)
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
                char now[32];
                fl_now_rfc3339(now);
                json_object_set_new(meta, "deletionTimestamp", json_string(now));
                json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(0));
                if (is_ns)
                    json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Terminating"));
                json_object_del(meta, "resourceVersion");
                rc = store_put(api, FL_STORE_UPDATE, key, kv.rev, obj);
                if (rc == FL_ECONFLICT) {
                    json_decref(obj);
                    json_decref(cur);
                    continue;
                }
            }
            json_decref(cur);
            if (rc == 0 && is_ns)
                start_purge(api, name);
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
        rc = store_put(api, FL_STORE_DELETE, key, kv.rev, obj);
        if (rc == FL_ECONFLICT) {
            json_decref(obj);
            json_decref(cur);
            continue;
        }
        if (rc == 0) {
            track_owned(cur, NULL);
            finish_delete(api, k, obj);
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
    if (r->body && r->body_len && is_protobuf(r->content_type)) {
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
        if (!kinds[ki]->namespaced)
            continue;
        c.kind = kinds[ki];
        char *prefix = fl_coll_prefix(kinds[ki], ns);
        scan_pages(api, prefix, true, purge_one, &c);
        free(prefix);
    }
    free(kinds);
    return (int)c.remaining;
}

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
                    int rc = store_put(pa->api, gone ? FL_STORE_DELETE : FL_STORE_UPDATE, key, kv.rev, obj);
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

/* ---- start-up ---- */

typedef struct load_ctx {
    fl_api *api;
    int loaded;
} load_ctx;

static bool load_crd_cb(void *vctx, const char *key, const fl_kv *kv)
{
    load_ctx *c = vctx;
    json_t *obj = fl_json_load(kv->value->data, kv->value->len);
    if (!obj)
        return true;
    char *err = NULL;
    if (fl_kindreg_apply_crd(c->api->kinds, obj, &err) == 0)
        c->loaded++;
    else
        fl_log(FL_LOG_WARN, "api", "stored CRD %s cannot be served: %s", key, err ? err : "?");
    free(err);
    json_decref(obj);
    return true;
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
        *owned += obj && has_owner_refs(obj);
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

typedef struct ns_ctx {
    fl_api *api;
} ns_ctx;

static bool resume_ns_cb(void *vctx, const char *key, const fl_kv *kv)
{
    ns_ctx *c = vctx;
    if (!strstr(kv->value->data, "\"deletionTimestamp\""))
        return true;
    json_t *obj = fl_json_load(kv->value->data, kv->value->len);
    const char *name = fl_obj_str(obj, "metadata", "name");
    if (name)
        start_purge(c->api, name);
    json_decref(obj);
    return true;
}

int fl_api_load_crds(fl_api *api)
{
    load_ctx c = {api, 0};
    int64_t rv;
    fl_store_list(api->store, "/apiextensions.k8s.io/customresourcedefinitions/", NULL, 0, 0, load_crd_cb, &c, &rv,
                  NULL);
    char **marked = NULL;
    long nmarked = fl_store_marked(api->store, &marked);
    if (nmarked >= 0) { /* opening noted the values that name owners: count those now */
        int64_t t0 = fl_time_mono_ms();
        long said = fl_store_marked_said(api->store), owned = said; /* written with owners */
        for (long i = 0; i < nmarked; i++) {
            fl_kv kv;
            if (fl_store_get(api->store, marked[i], &kv) == 0) {
                json_t *obj = fl_json_load(kv.value->data, kv.value->len);
                owned += obj && has_owner_refs(obj);
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
    /* namespaces that were terminating when the server stopped finish now */
    ns_ctx nc = {api};
    fl_store_list(api->store, "/core/namespaces/", NULL, 0, 0, resume_ns_cb, &nc, &rv, NULL);
    return c.loaded;
}
