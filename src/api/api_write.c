/* api_write.c - create and update (PUT and /status), and the write path every verb shares.
 *
 * Every write follows one path: decode the body, merge it with the stored object
 * per the verb (fl_api_guaranteed_update re-reads and retries on a lost compare-and-swap
 * when the client did not pin a resourceVersion), set the server-owned metadata
 * (uid, creationTimestamp, generation, resourceVersion), type-check and validate,
 * then one fl_store_write. The object is encoded before the write queues; the store's
 * writer puts the revision into the text and the object once it is known (render_pre),
 * so stored bytes are served as they are. Nothing is written unless every check passed.
 *
 * Two sizes are bounded. What a body decodes to is held to the request limit while it is
 * decoded (YAML aliases here and in apply, JSON patch copies in api_patch.c): the wire limit
 * alone lets a 1 MiB body with one string aliased 200 times become 200 MiB. And the encoded
 * object a create or update stores is held to fl_api.max_object_bytes, measured on the very
 * bytes that would be written, which is where etcd draws its line too.
 *
 * PATCH and server-side apply (api_patch.c) produce their object through the same
 * fl_api_guaranteed_update; deletes, finalizers, the dependents' garbage collection and namespace
 * finalization are in api_delete.c. What the three files share is in api_write.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/auth.h"
#include "api/api_write.h"
#include "api/rbac.h"
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
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "core/yaml.h"

/* ---- body decoding ---- */

bool fl_api_is_protobuf(const char *ct)
{
    return ct && !strncmp(ct, "application/vnd.kubernetes.protobuf", 35);
}

static bool is_yaml(const char *ct)
{
    return ct && (strstr(ct, "yaml") != NULL);
}

/* What t's body should be, for messages: its kind, or its resource for the create-only
 * endpoints that name no served kind (authentication.k8s.io's reviews). */
static const char *body_kind(const fl_target *t)
{
    return t->kind ? t->kind->kind : t->resource;
}

/* (contract in api_write.h) */
int fl_api_duplicate_fields(fl_req *r, const fl_target *t)
{
    json_t *dups = json_array();
    fl_crd_duplicate_fields(r->body, r->body_len, dups);
    char *warning = NULL, *err = NULL;
    int rc = fl_crd_field_validation(fl_req_query(r, "fieldValidation"), dups, &warning, &err);
    json_decref(dups);
    if (rc) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s in version \"%s\" cannot be handled as a %s: %s",
                       body_kind(t), t->kind ? t->kind->version : t->version, body_kind(t), err ? err : "invalid");
        free(err);
        free(warning);
        return -1;
    }
    fl_api_add_warnings(r, warning);
    return 0;
}

json_t *fl_req_body_object(fl_req *r, const fl_target *t)
{
    if (json_is_object(r->body_obj))
        return fl_json_deep_copy(r->body_obj);
    if (!r->body || !r->body_len) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the request body is empty; expected a %s object",
                       body_kind(t));
        return NULL;
    }
    json_t *obj = NULL;
    if (fl_api_is_protobuf(r->content_type)) {
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
        int rc = fl_yaml_parse_limited(r->body, r->body_len, FL_API_MAX_REQUEST_BYTES, &obj, &err);
        if (rc == FL_ETOOBIG) {
            fl_api_resp_too_large(r, t, FL_API_MAX_REQUEST_BYTES, "error decoding YAML", err);
            free(err);
            return NULL;
        }
        if (rc != 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding YAML: %s", err ? err : "invalid");
            free(err);
            return NULL;
        }
    } else {
        char *err = NULL;
        if (fl_json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &obj, &err) != 0) {
            /* valid JSON but for repeated keys: those are fieldValidation's business */
            if (fl_json_loadb(r->body, r->body_len, 0, &obj, NULL) != 0) {
                fl_resp_status(r, 400, "BadRequest", t, NULL, "error decoding JSON: %s", err ? err : "invalid");
                free(err);
                return NULL;
            }
            free(err);
            if (json_is_object(obj) && fl_api_duplicate_fields(r, t)) {
                json_decref(obj);
                return NULL;
            }
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
    char now[FL_TIME_BUF];
    fl_time_format(fl_time_now_ms(), false, now);
    char *manager = request_manager(r);
    fl_managed_fields_update(k, old, obj, manager, now);
    free(manager);
}

/* (contract in api_write.h) */
void fl_api_resp_too_large(fl_req *r, const fl_target *t, size_t limit, const char *what, const char *detail)
{
    fl_resp_status(r, 413, "RequestEntityTooLarge", t, NULL, "Request entity too large: limit is %zu (%s: %s)", limit,
                   what, detail && detail[0] ? detail : "too large");
}

/* 413 for an object whose encoding (bytes long) is more than the API stores. */
static void resp_object_too_large(fl_api *api, fl_req *r, const fl_target *t, size_t bytes)
{
    fl_resp_status(r, 413, "RequestEntityTooLarge", t, NULL,
                   "Request entity too large: limit is %zu (the %s \"%s\" would be %zu bytes stored)",
                   fl_api_max_object_bytes(api), t->kind->kind, t->name, bytes);
}

size_t fl_api_max_object_bytes(const fl_api *api)
{
    return api->max_object_bytes ? api->max_object_bytes : FL_API_DEFAULT_MAX_OBJECT_BYTES;
}

/* A CRD's kind is served from the moment it is registered, before its write: one the store
 * would refuse as too large must be refused before that (413 answered), or its kind would be
 * served without a stored CRD. The store's own check stays the authority for everything else. */
static bool crd_too_large(fl_api *api, fl_req *r, const fl_target *t, const json_t *obj)
{
    size_t max = fl_api_max_object_bytes(api), bytes = fl_json_size_upto(obj, max);
    if (bytes <= max)
        return false;
    free(fl_json_dumps(obj, &bytes)); /* the figure the message gives: rare, so measured exactly */
    resp_object_too_large(api, r, t, bytes);
    return true;
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
 * limit (0: none): an encoding longer than that is not written; FL_ETOOBIG, and its length
 * in *too_big (set on that path only).
 * keep: obj is remembered as what those bytes decode to (fl_api_decoded): nobody changes
 * obj after this call. The encoding happens here, on the caller's thread, and the store's
 * single writer only puts the revision in: every write waits for that thread. */
static int store_put_blob(fl_api *api, int type, const char *key, int64_t prev_rev, json_t *obj, fl_blob **stored,
                          bool keep, size_t limit, size_t *too_big)
{
    render_ctx rc = {.obj = obj, .keep = keep};
    json_t *meta = fl_obj_meta(obj);
    json_t *had = json_incref(json_object_get(meta, "resourceVersion")); /* obj keeps it on failure */
    json_t *placeholder = json_string("");
    json_object_set_new(meta, "resourceVersion", placeholder);
    rc.pre = fl_json_dumps_mark(obj, placeholder, &rc.pre_len, &rc.pre_at);
    fl_store_op op = {.type = type, .key = key, .prev_rev = prev_rev, .ctx = &rc, .rendered = keep_rendered,
                      .no_current = true, .mark = fl_api_has_owner_refs(obj) ? 1 : -1 /* FL_API_LOAD_MARK */};
    if (rc.pre_at + 1 < rc.pre_len && !memcmp(rc.pre + rc.pre_at, "\"\"", 2))
        op.render_blob = render_pre;
    else
        op.render = render_obj; /* cannot happen: the placeholder is in obj's metadata */
    int err;
    /* measured with resourceVersion "", as a client sends it: the revision is the store's */
    if (limit && rc.pre_len > limit) {
        *too_big = rc.pre_len;
        err = FL_ETOOBIG;
    } else {
        err = fl_store_write(api->store, &op);
    }
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

int fl_api_store_put(fl_api *api, int type, const char *key, int64_t prev_rev, json_t *obj)
{
    return store_put_blob(api, type, key, prev_rev, obj, NULL, false, 0, NULL);
}

/* The final state of a deleted object (contract in api_write.h). */
char *fl_api_render_current(void *vctx, const fl_blob *cur, int64_t rev, size_t *len)
{
    json_t *obj = cur ? fl_json_load(cur->data, cur->len) : NULL;
    if (!obj)
        obj = json_object();
    render_ctx c = {obj};
    char *s = render_obj(&c, cur, rev, len);
    json_decref(obj);
    return s;
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

/* Respond 422 naming the fields of obj that the schema has but nothing here acts on
 * (fl_crd_unsupported_fields); returns -1 then. Accepting a setting and ignoring it
 * would be worse than refusing it. */
static int refuse_unsupported(fl_req *r, const fl_target *t, const json_t *obj)
{
    json_t *paths = json_array();
    fl_crd_unsupported_fields(t->kind, obj, paths);
    if (!json_array_size(paths)) {
        json_decref(paths);
        return 0;
    }
    json_t *causes = json_array();
    fl_strbuf text = FL_STRBUF_INIT;
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p) {
        const char *field = json_string_value(p) + 1; /* no leading dot */
        fl_cause_add(causes, "FieldValueForbidden", field, "Forbidden: not supported by this server yet");
        fl_strbuf_printf(&text, "%s%s: Forbidden: not supported by this server yet", i ? ", " : "", field);
    }
    const char *name = fl_obj_str(obj, "metadata", "name");
    const fl_kind *k = t->kind;
    fl_resp_status(r, 422, "Invalid", t, causes, "%s%s%s \"%s\" is invalid: %s", k->kind, k->group[0] ? "." : "",
                   k->group, name ? name : "", fl_strbuf_str(&text));
    fl_strbuf_close(&text);
    json_decref(paths);
    return -1;
}

/* Drop the fields the kind's schema does not declare - a custom resource's structural
 * schema, a built-in or Karmada kind's generated field table - and answer per
 * ?fieldValidation= (Strict: 400 naming them; Warn, the default: Warning headers; Ignore:
 * silently; a server-side apply refused in its own words), then fill schema defaults and
 * refuse fields Flotilla does not support. Returns -1 after responding. Built-in kinds only
 * get the defaults Karmada's own CRDs declare (fl_default_karmada). */
static int crd_schema_apply(fl_req *r, const fl_target *t, json_t *obj, bool apply)
{
    const fl_kind *k = t->kind;
    fl_default_karmada(k, obj);
    json_t *unknown = json_array();
    fl_crd_prune(k, obj, unknown);
    char *warning = NULL, *err = NULL;
    int rc = fl_crd_field_validation(fl_req_query(r, "fieldValidation"), unknown, &warning, &err);
    if (rc && apply && json_string_value(json_array_get(unknown, 0))) {
        /* server-side apply types the configuration first; its words for the first field */
        const char *ns = fl_obj_str(obj, "metadata", "namespace"), *name = fl_obj_str(obj, "metadata", "name");
        fl_resp_status(r, 400, "BadRequest", t, NULL,
                       "failed to create typed patch object (%s/%s; %s/%s, Kind=%s): %s: field not declared in schema",
                       ns ? ns : "", name ? name : "", k->group, k->version, k->kind,
                       json_string_value(json_array_get(unknown, 0)));
    } else if (rc) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s in version \"%s\" cannot be handled as a %s: %s", k->kind,
                       k->version, k->kind, err ? err : "invalid");
    }
    json_decref(unknown);
    if (rc) {
        free(warning);
        free(err);
        return -1;
    }
    fl_api_add_warnings(r, warning);
    free(err);
    if (k->dynamic)
        fl_crd_default(k, obj);
    return refuse_unsupported(r, t, obj);
}

/* (contract in api_write.h) */
void fl_api_add_warnings(fl_req *r, char *warnings)
{
    if (!warnings)
        return;
    if (!r->warnings) {
        r->warnings = warnings;
        return;
    }
    char *both = fl_asprintf("%s\n%s", r->warnings, warnings);
    free(r->warnings);
    free(warnings);
    r->warnings = both;
}

/* ?fieldValidation= must be one of the apiserver's values (checked before decoding, 422). */
int fl_api_check_field_validation(fl_req *r, const fl_target *t, const char *options_kind)
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

/* Kubernetes' escalation check on writes of RBAC objects (rbac_escalation.c): 403 when the
 * caller would grant more than they hold. Returns 0 to go on. */
static int check_escalation(fl_api *api, fl_req *r, const fl_target *t, const json_t *obj)
{
    if (!api->auth || !r->who || strcmp(t->kind->group, FL_RBAC_GROUP) || t->sub[0])
        return 0;
    char *msg = NULL;
    if (!fl_rbac_confirm_no_escalation(api, api->auth, r->who, t->kind->kind, t->kind->namespaced ? t->ns : "", obj,
                                       &msg))
        return 0;
    fl_resp_status(r, 403, "Forbidden", t, NULL, "%s", msg);
    free(msg);
    return -1;
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
            fl_random_uuid4(id);
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
        char now[FL_TIME_BUF];
        fl_time_format(fl_time_now_ms(), false, now);
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

/* A CertificateSigningRequest records who asked, from the request's identity, whatever the body
 * says (upstream's PrepareForCreate); a trusted in-process caller (no identity) keeps its own. */
static void csr_requester(const fl_kind *k, json_t *obj, const fl_identity *who)
{
    if (!who || strcmp(k->kind, "CertificateSigningRequest") || strcmp(k->group, "certificates.k8s.io"))
        return;
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return;
    json_object_set_new(spec, "username", json_string(who->user));
    if (who->uid[0])
        json_object_set_new(spec, "uid", json_string(who->uid));
    else
        json_object_del(spec, "uid");
    json_t *groups = json_array();
    for (size_t i = 0; i < who->ngroups; i++)
        json_array_append_new(groups, json_string(who->groups[i]));
    json_object_set_new(spec, "groups", groups);
    json_object_del(spec, "extra");
}

void fl_api_create(fl_api *api, fl_req *r, const fl_target *t0)
{
    if (fl_api_check_field_validation(r, t0, "CreateOptions"))
        return;
    json_t *obj = fl_req_body_object(r, t0);
    if (obj)
        fl_api_create_object(api, r, t0, obj, false);
}

/* (contract in api_write.h) */
void fl_api_create_object(fl_api *api, fl_req *r, const fl_target *t0, json_t *obj, bool applied)
{
    fl_target tt = *t0;
    fl_target *t = &tt;
    const fl_kind *k = t->kind;
    char *key = NULL;
    if (check_gvk(r, t, obj))
        goto out;
    if (crd_schema_apply(r, t, obj, applied))
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
    char uid[37], now[FL_TIME_BUF];
    fl_random_uuid4(uid);
    fl_time_format(fl_time_now_ms(), false, now);
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
    csr_requester(k, obj, r->who);
    if (!applied)
        record_update(r, k, NULL, obj);
    if (check_object(r, t, obj, NULL, false) || /* types were checked on the body above */
        check_escalation(api, r, t, obj))
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
        if (crd_too_large(api, r, t, obj))
            goto out;
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
    size_t bytes = 0;
    for (int attempt = 0;; attempt++) {
        /* remembered decoded unless the caller takes obj (and may change it) */
        rc = store_put_blob(api, FL_STORE_CREATE, key, 0, obj, &stored, !r->want_obj, fl_api_max_object_bytes(api),
                            &bytes);
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
    if (rc == FL_ETOOBIG) {
        resp_object_too_large(api, r, t, bytes);
        goto out;
    }
    if (rc) {
        fl_resp_store_error(r, rc, t);
        goto out;
    }
    fl_api_track_owned(NULL, obj);
    resp_stored(r, 201, stored, obj);
out:
    free(key);
    json_decref(obj);
}

/* ---- update machinery ---- */

/* Server-owned and subresource rules that turn a client's object into what is stored.
 * share: out may share what it takes unchanged from cur (read-only, as cur is): out will be
 * handed to nobody who changes it. */
static json_t *merge_for_update(const fl_target *t, const json_t *cur, json_t *in, bool share)
{
    const fl_kind *k = t->kind;
    json_t *out;
    if (!strcmp(t->sub, "approval")) {
        /* a CertificateSigningRequest's approval: its conditions only, stored as given */
        out = fl_json_deep_copy(cur);
        json_t *st = json_object_get(out, "status");
        if (!json_is_object(st))
            json_object_set_new(out, "status", st = json_object());
        json_t *conds = json_object_get(json_object_get(in, "status"), "conditions");
        if (conds)
            json_object_set(st, "conditions", conds);
        else
            json_object_del(st, "conditions");
        json_decref(in);
        return out;
    }
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

void fl_api_guaranteed_update(fl_api *api, fl_req *r, const fl_target *t, fl_api_update_verb verb,
                              fl_api_mutate_fn fn, void *ctx)
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
        if (crd_schema_apply(r, t, obj, verb == FL_API_UPDATE_APPLY)) {
            json_decref(cur);
            json_decref(obj);
            break;
        }
        if (verb != FL_API_UPDATE_APPLY)
            record_update(r, k, cur, obj);
        /* a PUT's body had its types checked on arrival, a patch's result (but a scale's)
         * in mutate_patch, and what the merge takes from the stored object was checked
         * when that was written */
        bool typed = verb == FL_API_UPDATE_PUT || (verb == FL_API_UPDATE_PATCH && !scale);
        if (check_object(r, t, obj, cur, !typed) || check_escalation(api, r, t, obj)) {
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
            if (!finalized && crd_too_large(api, r, t, obj)) {
                json_decref(cur);
                json_decref(obj);
                break;
            }
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
        size_t bytes = 0;
        /* an object leaving the store is not held to the limit: it must always be deletable */
        rc = store_put_blob(api, finalized ? FL_STORE_DELETE : FL_STORE_UPDATE, key, kv.rev, obj, &stored,
                            !finalized && !scale && !r->want_obj, finalized ? 0 : fl_api_max_object_bytes(api), &bytes);
        if (rc == FL_ECONFLICT && !pinned) {
            json_decref(cur);
            json_decref(obj);
            continue;
        }
        if (rc) {
            json_decref(cur);
            json_decref(obj);
            if (rc == FL_ETOOBIG)
                resp_object_too_large(api, r, t, bytes);
            else
                fl_resp_store_error(r, rc, t);
            break;
        }
        fl_api_track_owned(cur, finalized ? NULL : obj);
        if (finalized)
            fl_api_finish_delete(api, k, obj);
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
    if (fl_api_check_field_validation(r, t, "UpdateOptions"))
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
            fl_api_guaranteed_update(api, r, t, FL_API_UPDATE_PUT, mutate_put, &c);
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
            fl_api_guaranteed_update(api, r, t, FL_API_UPDATE_PUT, mutate_put, &c);
            json_decref(c.own);
        }
    }
    json_decref(body);
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
        fl_log_kv(FL_LOG_WARN, "api", "a stored CRD cannot be served", "object",
                  FL_LOG_OBJ("CustomResourceDefinition", NULL, fl_obj_str(obj, "metadata", "name")), "err",
                  err ? err : "?", NULL);
    free(err);
    json_decref(obj);
    return true;
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
        fl_api_start_purge(c->api, name);
    json_decref(obj);
    return true;
}

int fl_api_load_crds(fl_api *api)
{
    load_ctx c = {api, 0};
    int64_t rv;
    fl_store_list(api->store, "/apiextensions.k8s.io/customresourcedefinitions/", NULL, 0, 0, load_crd_cb, &c, &rv,
                  NULL);
    fl_api_count_owners(api);
    /* namespaces that were terminating when the server stopped finish now */
    ns_ctx nc = {api};
    fl_store_list(api->store, "/core/namespaces/", NULL, 0, 0, resume_ns_cb, &nc, &rv, NULL);
    return c.loaded;
}
