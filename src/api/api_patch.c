/* api_patch.c - PATCH: JSON merge, JSON and strategic merge patches, and server-side apply.
 *
 * A patch is one more way to produce the desired object from the stored one: mutate_patch
 * applies the body to the current object inside fl_api_guaranteed_update (api_write.c), which
 * re-reads and retries on a lost compare-and-swap, so a patch never overwrites a change it
 * did not see. Server-side apply (application/apply-patch+yaml) merges the applied
 * configuration by field ownership (apply.c) and, when the object does not exist yet,
 * creates it through the create path.
 *
 * A patch can build more than its body holds: an applied configuration's YAML aliases, a
 * JSON patch's copies. Both are bounded by the request limit while they are expanded (413);
 * the patched object as a whole meets the stored-object limit where every write does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/api_write.h"
#include "api/apply.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/patch.h"
#include "core/timefmt.h"
#include "core/yaml.h"

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
        rc = fl_patch_json_limited(cur, c->patch, FL_API_MAX_REQUEST_BYTES, &out, &err);
    else
        rc = fl_patch_strategic(cur, c->patch, fl_kind_smp_lookup, (void *)t->kind, &out, &err);
    if (rc == FL_ETOOBIG) {
        fl_api_resp_too_large(r, t, FL_API_MAX_REQUEST_BYTES, "the patch could not be applied", err);
        free(err);
        return NULL;
    }
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
    char now[FL_TIME_BUF];
    fl_time_format(fl_time_now_ms(), false, now);
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
    int rc = r->body ? fl_yaml_parse_limited(r->body, r->body_len, FL_API_MAX_REQUEST_BYTES, &config, &err) : FL_EINVAL;
    if (rc == FL_ETOOBIG) {
        fl_api_resp_too_large(r, t, FL_API_MAX_REQUEST_BYTES, "error decoding the applied configuration", err);
        free(err);
        return;
    }
    if (rc || !json_is_object(config)) {
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
    rc = fl_store_get(api->store, key, &kv);
    free(key);
    if (rc == FL_ENOTFOUND) {
        char now[FL_TIME_BUF];
        fl_time_format(fl_time_now_ms(), false, now);
        json_t *out = NULL, *conflicts = NULL;
        rc = fl_apply(t->kind, NULL, config, c.manager, c.force, now, &out, &conflicts, &err);
        if (rc) {
            respond_apply_error(r, t, rc, conflicts, err);
        } else {
            json_decref(conflicts);
            free(err);
            json_object_set_new(fl_obj_meta(out), "name", json_string(t->name));
            fl_api_create_object(api, r, t, out, true);
        }
    } else {
        if (rc == 0)
            fl_blob_unref(kv.value);
        fl_api_guaranteed_update(api, r, t, FL_API_UPDATE_APPLY, mutate_apply, &c);
    }
    free(c.manager);
    json_decref(config);
}

void fl_api_patch(fl_api *api, fl_req *r, const fl_target *t)
{
    if (fl_api_check_field_validation(r, t, "PatchOptions"))
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
    if (r->body && fl_json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &c.patch, NULL) != 0) {
        /* a merge patch repeating a key: fieldValidation decides, the last value wins */
        if (c.type != 2 && fl_json_loadb(r->body, r->body_len, 0, &c.patch, NULL) == 0) {
            if (fl_api_duplicate_fields(r, t)) {
                json_decref(c.patch);
                return;
            }
        } else {
            c.patch = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je); /* fails: its words */
        }
    }
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
    fl_api_guaranteed_update(api, r, t, FL_API_UPDATE_PATCH, mutate_patch, &c);
    json_decref(c.patch);
}
