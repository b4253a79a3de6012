/* api_convert.c - serving a version of a kind from another version's objects (kinds.h,
 * fl_kind.storage_version): autoscaling/v1 HorizontalPodAutoscalers are stored as autoscaling/v2,
 * as kube-apiserver stores them, so both versions show the same objects.
 *
 * Both versions share one store key prefix, so the verbs run unchanged on the stored objects
 * and only the representation is converted at the edges:
 *   - reads (GET, LIST, WATCH) run on the served version's target; a JSON answer has its
 *     objects converted (a Table is left alone: both versions print the same columns, from
 *     the stored object); a watch converts each event itself (api_read.c);
 *   - a create or update decodes the body as the served version, converts it, and runs on the
 *     stored version's target, which validates and stores it; the answer is converted back;
 *   - a JSON, merge or strategic patch is applied to the object as the served version shows
 *     it, then written back as an update pinned to the resourceVersion it was read at
 *     (retried a few times on a conflict, as the apiserver's own patch loop does);
 *   - server-side apply converts the apply configuration and applies it to the stored version:
 *     field ownership is then recorded in the stored version's terms (managedFields entries
 *     say autoscaling/v2), where kube-apiserver would record the applier's version;
 *   - a delete runs on the stored version; the answer is converted.
 * events.k8s.io/v1 Events are served the same way from the core/v1 Events (another group:
 * fl_kind.storage_group), as upstream serves one collection through both APIs. The served
 * version's own checks (events.k8s.io's stricter create rules) run before the conversion.
 * What cannot be converted (an annotation carrying v2 fields that is not JSON) is a 422
 * naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/patch.h"

#define PATCH_ATTEMPTS 5

/* The stored version's target for t. */
static bool storage_target(fl_api *api, const fl_target *t, fl_target *st)
{
    *st = *t;
    char av[160];
    const char *group = t->kind->storage_group ? t->kind->storage_group : t->kind->group;
    if (group[0])
        snprintf(av, sizeof av, "%s/%s", group, t->kind->storage_version);
    else
        snprintf(av, sizeof av, "%s", t->kind->storage_version);
    st->kind = fl_kindreg_by_gvk(api->kinds, av, t->kind->kind);
    snprintf(st->group, sizeof st->group, "%s", group);
    snprintf(st->version, sizeof st->version, "%s", t->kind->storage_version);
    return st->kind != NULL;
}

/* An object (or each item of a list) of the stored version's kind, in the served one. */
static json_t *convert_out(const fl_kind *k, json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (!kind)
        return obj;
    if (!strcmp(kind, k->kind)) {
        json_t *c = k->from_storage(obj);
        json_decref(obj);
        return c;
    }
    if (!strcmp(kind, k->list_kind)) {
        json_object_set_new(obj, "apiVersion", json_string(k->api_version));
        json_t *items = json_object_get(obj, "items");
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *it = json_array_get(items, i);
            json_array_set_new(items, i, k->from_storage(it));
        }
    }
    return obj; /* a Status, a Table: as they are */
}

/* The answer in r, converted to the served version. */
static void convert_answer(const fl_kind *k, fl_req *r)
{
    if (r->resp_obj)
        r->resp_obj = convert_out(k, r->resp_obj);
    if (r->code / 100 != 2 || !r->resp || !r->resp_len)
        return;
    json_t *obj = fl_json_load(r->resp, r->resp_len);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return;
    }
    obj = convert_out(k, obj);
    size_t len = 0;
    char *text = fl_json_dumps(obj, &len);
    json_decref(obj);
    free(r->resp);
    r->resp = text;
    r->resp_len = len;
}

/* Run r on target t with obj as its body (borrowed), restoring r's input afterwards. */
static void run_with_body(fl_api *api, fl_req *r, const fl_target *t, const char *method, const json_t *obj,
                          const char *content_type, bool coll)
{
    fl_req in = *r;
    char *text = NULL;
    size_t len = 0;
    r->method = method;
    if (content_type) { /* bytes: apply configurations go as text */
        text = fl_json_dumps(obj, &len);
        r->body = text;
        r->body_len = len;
        r->body_obj = NULL;
        r->content_type = content_type;
    } else {
        r->body = NULL;
        r->body_len = 0;
        r->body_obj = obj;
        r->body_given = false;
        r->content_type = "application/json";
    }
    fl_api_dispatch(api, r, t, coll, false);
    r->method = in.method;
    r->body = in.body;
    r->body_len = in.body_len;
    r->body_obj = in.body_obj;
    r->body_given = in.body_given;
    r->content_type = in.content_type;
    free(text);
}


/* The served version's own rules (those it has beyond the stored version's, which run after
 * the conversion): true after answering 422. An update is checked against the stored object
 * as the served version shows it. */
static bool served_invalid(fl_api *api, fl_req *r, const fl_target *t, const json_t *body)
{
    json_t *old = NULL;
    if (!strcmp(r->method, "PUT")) {
        char *key = fl_obj_key(t->kind, t->ns, t->name);
        fl_kv kv;
        if (fl_store_get(api->store, key, &kv) == 0) {
            json_t *stored = fl_json_load(kv.value->data, kv.value->len);
            fl_blob_unref(kv.value);
            old = stored ? t->kind->from_storage(stored) : NULL;
            json_decref(stored);
        }
        free(key);
    }
    json_t *causes = json_array();
    t->kind->validate(t->kind, body, old, causes);
    json_decref(old);
    if (!json_array_size(causes)) {
        json_decref(causes);
        return false;
    }
    char text[1024] = ""; /* "field: message, field: message", as every other 422 here */
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c) {
        const char *f = json_string_value(json_object_get(c, "field"));
        const char *m = json_string_value(json_object_get(c, "message"));
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s%s: %s", i ? ", " : "", f ? f : "", m ? m : "");
    }
    const char *name = json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
    fl_target tn = *t; /* the Status names the object, also on a create */
    snprintf(tn.name, sizeof tn.name, "%s", name ? name : "");
    fl_resp_status(r, 422, "Invalid", &tn, causes, "%s.%s \"%s\" is invalid: %s", t->kind->kind, t->kind->group,
                   tn.name, text);
    return true;
}

/* The request's body as the served version, checked for its apiVersion and kind, converted
 * to the stored one; NULL after answering. */
static json_t *body_to_storage(fl_api *api, fl_req *r, const fl_target *t)
{
    json_t *body = fl_req_body_object(r, t);
    if (!body)
        return NULL;
    const char *av = json_string_value(json_object_get(body, "apiVersion"));
    const char *kind = json_string_value(json_object_get(body, "kind"));
    if ((av && *av && strcmp(av, t->kind->api_version)) || (kind && *kind && strcmp(kind, t->kind->kind))) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the API version in the data (%s) does not match the expected "
                       "API version (%s)", av ? av : "", t->kind->api_version);
        json_decref(body);
        return NULL;
    }
    char *msg = NULL;
    if (fl_validate_types(t->kind, body, &msg) != 0) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "%s", msg ? msg : "invalid object");
        free(msg);
        json_decref(body);
        return NULL;
    }
    json_object_set_new(body, "apiVersion", json_string(t->kind->api_version));
    json_object_set_new(body, "kind", json_string(t->kind->kind));
    if (t->kind->validate && served_invalid(api, r, t, body)) {
        json_decref(body);
        return NULL;
    }
    json_t *conv = t->kind->to_storage(body, &msg);
    json_decref(body);
    if (!conv) {
        json_t *causes = json_array();
        fl_cause_add(causes, "FieldValueInvalid", "metadata.annotations", "%s", msg ? msg : "cannot convert");
        fl_resp_status(r, 422, "Invalid", t, causes, "%s.%s \"%s\" is invalid: %s", t->kind->kind, t->kind->group,
                       t->name, msg ? msg : "cannot convert");
        free(msg);
    }
    return conv;
}

static int patch_type(const char *ct)
{
    if (!ct)
        return 0;
    if (!strncmp(ct, "application/merge-patch+json", 28))
        return 1;
    if (!strncmp(ct, "application/json-patch+json", 27))
        return 2;
    if (!strncmp(ct, "application/strategic-merge-patch+json", 38))
        return 3;
    if (!strncmp(ct, "application/apply-patch+yaml", 28) || !strncmp(ct, "application/apply-patch+cbor", 28))
        return 4;
    return 0;
}

/* The stored object at t, as the served version (new reference), or NULL after answering. */
static json_t *read_served(fl_api *api, fl_req *r, const fl_target *t)
{
    char *key = fl_obj_key(t->kind, t->ns, t->name);
    fl_kv kv;
    int rc = fl_store_get(api->store, key, &kv);
    free(key);
    if (rc) {
        fl_resp_store_error(r, rc, t);
        return NULL;
    }
    json_t *obj = fl_json_load(kv.value->data, kv.value->len);
    fl_blob_unref(kv.value);
    if (!obj) {
        fl_resp_store_error(r, FL_EIO, t);
        return NULL;
    }
    json_t *v = t->kind->from_storage(obj);
    json_decref(obj);
    return v;
}

/* A JSON, merge or strategic patch on the served version's form of the object. */
static void patch_served(fl_api *api, fl_req *r, const fl_target *t, const fl_target *st, int type)
{
    json_t *patch = r->body && r->body_len ? fl_json_load(r->body, r->body_len) : NULL;
    if (!patch || (type == 2 ? !json_is_array(patch) : !json_is_object(patch))) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "the patch could not be applied: %s",
                       patch ? "wrong JSON type for the patch type" : "invalid JSON");
        json_decref(patch);
        return;
    }
    const json_t *pm = json_is_object(patch) ? json_object_get(patch, "metadata") : NULL;
    bool pinned = json_is_string(json_object_get(pm, "resourceVersion"));
    for (int attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
        json_t *cur = read_served(api, r, t);
        if (!cur)
            break;
        json_t *out = NULL;
        char *err = NULL;
        int rc = type == 1 ? fl_patch_merge(cur, patch, &out, &err)
                 : type == 2 ? fl_patch_json_limited(cur, patch, FL_API_MAX_REQUEST_BYTES, &out, &err)
                             : fl_patch_strategic(cur, patch, fl_kind_smp_lookup, (void *)t->kind, &out, &err);
        if (!rc && !json_is_object(out)) {
            rc = FL_EINVAL;
            err = fl_strdup("the patch did not produce an object");
        }
        if (rc) {
            fl_resp_status(r, type == 2 ? 422 : 400, type == 2 ? "Invalid" : "BadRequest", t, NULL,
                           "the patch could not be applied: %s", err ? err : "invalid patch");
            free(err);
            json_decref(out);
            json_decref(cur);
            break;
        }
        if (!pinned) /* the write is pinned to what the patch was applied to */
            json_object_set(json_object_get(out, "metadata"), "resourceVersion",
                            json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
        json_decref(cur);
        char *msg = NULL;
        json_t *conv = t->kind->to_storage(out, &msg);
        json_decref(out);
        if (!conv) {
            fl_resp_status(r, 422, "Invalid", t, NULL, "%s", msg ? msg : "cannot convert");
            free(msg);
            break;
        }
        run_with_body(api, r, st, "PUT", conv, NULL, false);
        json_decref(conv);
        if (r->code != 409 || pinned || attempt == PATCH_ATTEMPTS - 1)
            break;
        free(r->resp); /* someone wrote in between: read again and re-apply */
        r->resp = NULL;
        r->resp_len = 0;
    }
    json_decref(patch);
}

void fl_api_serve_converted(fl_api *api, fl_req *r, const fl_target *t, bool coll, bool watch)
{
    fl_target st;
    if (!storage_target(api, t, &st)) {
        fl_resp_status(r, 500, "InternalError", t, NULL, "the storage version %s of %s is not served",
                       t->kind->storage_version, t->kind->kind);
        return;
    }
    const char *m = r->method;
    if (!strcmp(m, "GET")) {
        fl_api_dispatch(api, r, t, coll, watch); /* same keys: a watch converts as it goes */
        if (!r->stream)
            convert_answer(t->kind, r);
        return;
    }
    if (!strcmp(m, "DELETE")) {
        fl_api_dispatch(api, r, &st, coll, watch);
        convert_answer(t->kind, r);
        return;
    }
    if (!strcmp(m, "POST") || !strcmp(m, "PUT")) {
        if ((!strcmp(m, "POST") && !coll) || (!strcmp(m, "PUT") && coll)) {
            fl_api_dispatch(api, r, &st, coll, watch); /* its 405 */
            return;
        }
        json_t *body = body_to_storage(api, r, t);
        if (!body)
            return;
        run_with_body(api, r, &st, m, body, NULL, coll);
        json_decref(body);
        convert_answer(t->kind, r);
        return;
    }
    if (!strcmp(m, "PATCH") && !coll) {
        int type = patch_type(r->content_type);
        if (type == 4) {
            json_t *body = body_to_storage(api, r, t);
            if (!body)
                return;
            run_with_body(api, r, &st, m, body, "application/apply-patch+yaml", coll);
            json_decref(body);
        } else if (type) {
            patch_served(api, r, t, &st, type);
        } else {
            fl_api_dispatch(api, r, &st, coll, watch); /* its 415 */
            return;
        }
        convert_answer(t->kind, r);
        return;
    }
    fl_api_dispatch(api, r, &st, coll, watch);
}
