/* webhook_review.c - the document a webhook interpreter call exchanges: the
 * ResourceInterpreterContext (config.karmada.io/v1alpha1) the backend sends, and the checks
 * and readings of the one it gets back, as Karmada's interpreter does them.
 *
 * The request carries the object (borrowed, not copied), and per operation the observed
 * object, the desired replicas and the aggregated status items. The response must answer
 * the same uid and say successful, or why not; then each operation reads its own field:
 * a JSON patch to apply to the object sent, replicas and their requirements (quantities
 * made canonical), dependencies. Every failure is one line naming the webhook, its
 * configuration and the operation (fl_webhook_call_fail), and the field at fault. The HTTPS
 * call between the two is webhook.c's. Pure: any thread. */
#include "interp/webhook_priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/patch.h"
#include "core/selector.h"

int fl_webhook_call_fail(const struct hook *h, enum fl_interp_op op, int rc, char **err, const char *fmt, ...)
{
    if (!err)
        return rc;
    va_list ap;
    va_start(ap, fmt);
    char *m = fl_vasprintf(fmt, ap);
    va_end(ap);
    if (h->url)
        *err = fl_asprintf("webhook \"%s\" of " KIND " \"%s\": %s: POST %s: %s", h->name, h->config, op_name(op),
                           h->url, m);
    else
        *err = fl_asprintf("webhook \"%s\" of " KIND " \"%s\": %s: %s", h->name, h->config, op_name(op), m);
    free(m);
    return rc;
}

/* The ResourceInterpreterContext for a (heap text). */
char *fl_webhook_request_body(const struct args *a, const char *uid, size_t *len)
{
    const char *av = json_string_value(json_object_get(a->obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(a->obj, "kind"));
    const json_t *meta = json_object_get(a->obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *slash = av ? strchr(av, '/') : NULL;
    char group[256];
    snprintf(group, sizeof group, "%.*s", slash ? (int)(slash - av) : 0, av ? av : "");
    json_t *req = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:s}", "uid", uid, "kind", "group", group, "version",
                            slash ? slash + 1 : av ? av : "", "kind", kind ? kind : "", "name", name ? name : "",
                            "operation", op_name(a->op));
    if (ns && *ns)
        json_object_set_new(req, "namespace", json_string(ns));
    /* borrowed objects: jansson's reference counts are atomic, and nothing changes them */
    json_object_set(req, "object", (json_t *)a->obj);
    if (a->observed)
        json_object_set(req, "observedObject", (json_t *)a->observed);
    /* Karmada always sends the count (a pointer to its attributes' field, 0 unless revising) */
    json_object_set_new(req, "replicas", json_integer(a->op == FL_INTERP_REVISE_REPLICA ? a->replicas : 0));
    if (json_array_size(a->items))
        json_object_set(req, "aggregatedStatus", (json_t *)a->items);
    json_t *ctx = json_pack("{s:s, s:s, s:o}", "apiVersion", "config.karmada.io/v1alpha1", "kind",
                            "ResourceInterpreterContext", "request", req);
    char *text = fl_json_dumps(ctx, len);
    json_decref(ctx);
    return text;
}

/* The response object of a 2xx answer, checked as Karmada's VerifyResourceInterpreterContext:
 * present, the same uid, successful or a status saying why not. *out borrowed from *ctx. */
int fl_webhook_verify(const struct hook *h, enum fl_interp_op op, const char *uid, const char *text, size_t len,
                  json_t **ctx, json_t **out, char **err)
{
    char *e = NULL;
    *out = NULL;
    if (fl_json_loadb(text, len, 0, ctx, &e) || !json_is_object(*ctx)) {
        int rc = fl_webhook_call_fail(h, op, FL_EINVAL, err, "the answer is not a ResourceInterpreterContext: %s",
                           e ? e : "not a JSON object");
        free(e);
        return rc;
    }
    json_t *r = json_object_get(*ctx, "response");
    if (!json_is_object(r))
        return fl_webhook_call_fail(h, op, FL_EINVAL, err, "the answer has no response object");
    const json_t *ruid = json_object_get(r, "uid");
    if (!json_is_string(ruid) || strcmp(json_string_value(ruid), uid)) {
        char *got = json_is_string(ruid) ? fl_err_one_line(json_string_value(ruid), json_string_length(ruid), 80)
                                         : fl_strdup(ruid ? "a non-string" : "nothing");
        int rc = fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.uid: expected \"%s\", got %s%s%s", uid,
                           json_is_string(ruid) ? "\"" : "", got, json_is_string(ruid) ? "\"" : "");
        free(got);
        return rc;
    }
    const json_t *ok = json_object_get(r, "successful");
    if (ok && !json_is_null(ok) && !json_is_boolean(ok))
        return fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.successful: must be a boolean");
    if (!json_is_true(ok)) {
        const json_t *st = json_object_get(r, "status");
        if (!json_is_object(st))
            return fl_webhook_call_fail(h, op, FL_EINVAL, err,
                             "response.successful is false and response.status, which must say why, is missing");
        const json_t *msg = json_object_get(st, "message");
        char *m = fl_err_one_line(json_is_string(msg) ? json_string_value(msg) : "", json_string_length(msg), 400);
        int rc = fl_webhook_call_fail(h, op, FL_EINVAL, err, "the webhook failed the request: %s (code %lld)",
                           *m ? m : "no message", (long long)json_integer_value(json_object_get(st, "code")));
        free(m);
        return rc;
    }
    *out = r;
    return 0;
}

/* patch/patchType applied to obj (ReviseReplica, Retain, AggregateStatus), as Karmada's
 * verifyResourceInterpreterContextWithPatch and applyPatch. */
int fl_webhook_apply_response_patch(const struct hook *h, enum fl_interp_op op, const json_t *r, const json_t *obj,
                                json_t **out, char **err)
{
    const json_t *patch = json_object_get(r, "patch"), *type = json_object_get(r, "patchType");
    *out = NULL;
    if (json_is_null(patch))
        patch = NULL;
    if (json_is_null(type))
        type = NULL;
    if (patch && !json_is_string(patch))
        return fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patch: must be a base64 string");
    if (type && !json_is_string(type))
        return fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patchType: must be a string");
    bool empty = !json_string_length(patch);
    if (empty && !type) { /* no patch: the object as sent */
        *out = fl_json_deep_copy(obj);
        return 0;
    }
    if (!type)
        return fl_webhook_call_fail(h, op, FL_EINVAL, err,
                         "response.patchType: missing (must be JSONPatch when a patch is given)");
    if (strcmp(json_string_value(type), "JSONPatch")) {
        char *t = fl_err_one_line(json_string_value(type), json_string_length(type), 80);
        int rc = fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patchType: \"%s\" is not supported (only JSONPatch)", t);
        free(t);
        return rc;
    }
    if (empty)
        return fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patch: empty while response.patchType is JSONPatch");
    size_t n;
    char *raw = fl_base64_decode(json_string_value(patch), &n), *e = NULL;
    if (!raw)
        return fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patch: not valid base64");
    json_t *ops = NULL;
    int rc = fl_json_loadb(raw, n, 0, &ops, &e);
    free(raw);
    if (rc || !json_is_array(ops)) {
        rc = fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patch: not a JSON patch (an array of operations)%s%s",
                       e ? ": " : "", e ? e : "");
        free(e);
        json_decref(ops);
        return rc;
    }
    if ((rc = fl_patch_json(obj, ops, out, &e)) == 0 && !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        e = fl_strdup("the result is not an object");
        rc = FL_EINVAL;
    }
    json_decref(ops);
    if (rc) {
        rc = fl_webhook_call_fail(h, op, FL_EINVAL, err, "response.patch: cannot be applied: %s", e ? e : fl_strerror(rc));
        free(e);
    }
    return rc;
}

/* One dependency reference (element i), as Karmada's VerifyDependencies. */
int fl_webhook_check_dependency(const json_t *d, size_t i, char **why)
{
    if (!json_is_object(d)) {
        *why = fl_asprintf("dependencies[%zu]: must be an object {apiVersion, kind, namespace, name}", i);
        return FL_EINVAL;
    }
    static const char *const need[] = {"apiVersion", "kind"};
    for (int k = 0; k < 2; k++) {
        const char *s = json_string_value(json_object_get(d, need[k]));
        if (!s || !*s) {
            *why = fl_asprintf("dependencies[%zu].%s: missing required %s", i, need[k], need[k]);
            return FL_EINVAL;
        }
    }
    static const char *const opt[] = {"namespace", "name"};
    for (int k = 0; k < 2; k++) {
        const json_t *v = json_object_get(d, opt[k]);
        if (v && !json_is_null(v) && !json_is_string(v)) {
            *why = fl_asprintf("dependencies[%zu].%s: must be a string", i, opt[k]);
            return FL_EINVAL;
        }
    }
    const json_t *sel = json_object_get(d, "labelSelector");
    if (json_is_null(sel))
        sel = NULL;
    if (sel) {
        fl_labelsel *ls = NULL;
        char *e = NULL;
        if (!json_is_object(sel) || fl_labelsel_from_json(sel, &ls, &e)) {
            *why = fl_asprintf("dependencies[%zu].labelSelector: %s", i, e ? e : "must be a label selector object");
            free(e);
            return FL_EINVAL;
        }
        fl_labelsel_free(ls);
    }
    const char *name = json_string_value(json_object_get(d, "name"));
    if ((!name || !*name) && !sel) {
        *why = fl_asprintf("dependencies[%zu]: dependency can not leave name and labelSelector all empty", i);
        return FL_EINVAL;
    }
    return 0;
}


