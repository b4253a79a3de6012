/* api.c - request routing and the helpers every handler shares.
 *
 * fl_api_handle() parses the path into a target (group, version, namespace,
 * resource, name, subresource), asks the authorizer (auth.c, when the API has one)
 * whether the caller may use that verb on it, resolves the kind from the kind table and
 * calls the verb's handler in api_read.c or api_write.c. Discovery, OpenAPI, health and
 * version endpoints are answered here from discovery.c; the pull-mode registration
 * endpoint by auth.c. */
#include "api/api_internal.h"

#include <stdarg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/audit.h"
#include "api/auth.h"
#include "api/authn_review.h"
#include "api/rbac.h"
#include "api/discovery.h"
#include "api/health.h"
#include "api/openapi_v2.h"
#include "api/sa_token.h"
#include "api/ui.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/metrics.h"

#define FL_VERSION_GIT "v1.32.0-flotilla"

const char *fl_req_query(const fl_req *req, const char *key)
{
    for (size_t i = 0; i < req->nquery; i++)
        if (!strcmp(req->query[i].key, key))
            return req->query[i].value;
    return NULL;
}

void fl_resp_raw(fl_req *r, int code, const char *data, size_t len)
{
    free(r->resp);
    r->code = code;
    r->resp = r->discard && code < 300 ? NULL : fl_strndup(data, len);
    r->resp_len = r->resp ? len : 0;
    r->resp_type = "application/json";
}

/* Replace bytes that are not valid UTF-8 with '?', in place: error messages quote user input,
 * and JSON strings must be valid UTF-8. */
static void utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = n > 0;
        for (int i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (ok && n == 2 && *p < 0xc2)
            ok = false; /* overlong */
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

static json_t *jstr(const char *s)
{
    json_t *v = json_string(s);
    if (!v) {
        char *c = fl_strdup(s);
        utf8_sanitize(c);
        v = json_string(c);
        free(c);
    }
    return v ? v : json_string("");
}

void fl_resp_json(fl_req *r, int code, json_t *obj)
{
    if (!obj) {
        obj = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                        "status", "Failure", "message", "the response could not be encoded", "reason",
                        "InternalError", "code", 500);
        code = 500;
    }
    size_t len = 0;
    char *s = r->discard && code < 300 ? NULL : fl_json_dumps(obj, &len);
    json_decref(obj);
    free(r->resp);
    r->code = code;
    r->resp = s;
    r->resp_len = len;
    r->resp_type = "application/json";
}

void fl_resp_status(fl_req *r, int code, const char *reason, const fl_target *t, json_t *causes, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:o, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                           "status", "Failure", "message", jstr(msg), "reason", reason, "code", code);
    json_t *details = NULL;
    if (t && (t->name[0] || t->resource[0])) {
        details = json_object();
        if (t->name[0])
            json_object_set_new(details, "name", jstr(t->name));
        if (t->group[0])
            json_object_set_new(details, "group", jstr(t->group));
        /* as the apiserver: Invalid names the Kind, other errors the resource */
        if (code == 422 && t->kind)
            json_object_set_new(details, "kind", jstr(t->kind->kind));
        else if (t->resource[0])
            json_object_set_new(details, "kind", jstr(t->resource));
    }
    if (causes) {
        if (!details)
            details = json_object();
        json_object_set_new(details, "causes", causes);
    }
    if (details)
        json_object_set_new(st, "details", details);
    if (code == 429 || (code == 500 && !strcmp(reason, "InternalError")))
        r->retry_after = "1";
    fl_resp_json(r, code, st);
}

static const char *res_name(const fl_target *t)
{
    static __thread char buf[256];
    if (t->group[0])
        snprintf(buf, sizeof buf, "%s.%s", t->resource, t->group);
    else
        snprintf(buf, sizeof buf, "%s", t->resource);
    return buf;
}

void fl_resp_store_error(fl_req *r, int rc, const fl_target *t)
{
    switch (rc) {
    case FL_ENOTFOUND:
        fl_resp_status(r, 404, "NotFound", t, NULL, "%s \"%s\" not found", res_name(t), t->name);
        break;
    case FL_EEXIST:
        fl_resp_status(r, 409, "AlreadyExists", t, NULL, "%s \"%s\" already exists", res_name(t), t->name);
        break;
    case FL_ECONFLICT:
        fl_resp_status(r, 409, "Conflict", t, NULL,
                       "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please apply "
                       "your changes to the latest version and try again",
                       res_name(t), t->name);
        break;
    case FL_EEXPIRED:
        fl_resp_status(r, 410, "Expired", t, NULL, "The resourceVersion for the provided list is too old.");
        break;
    case FL_ECLOSED:
        fl_resp_status(r, 503, "ServiceUnavailable", t, NULL, "the server is shutting down");
        break;
    case FL_EFENCED:
        fl_resp_status(r, 503, "ServiceUnavailable", t, NULL, "this server no longer leads the controllers");
        break;
    case FL_ETIMEDOUT: /* the store did not answer in time (etcd: no leader, unreachable) */
        fl_resp_status(r, 504, "Timeout", t, NULL,
                       "The server was unable to return a response in the time allotted: the store did not answer");
        break;
    case FL_ETOOBIG:
        fl_resp_status(r, 413, "RequestEntityTooLarge", t, NULL, "Request entity too large: the store refused it");
        break;
    case FL_ENOSPACE:
        fl_resp_status(r, 507, "InsufficientStorage", t, NULL, "the store is out of space (etcd: database space "
                                                                 "exceeded); compact and defragment it");
        break;
    default:
        fl_resp_status(r, 500, "InternalError", t, NULL, "Internal error occurred: %s", fl_strerror(rc));
        break;
    }
}

char *fl_coll_prefix(const fl_kind *k, const char *ns)
{
    char *p = fl_kind_prefix(k);
    if (k->namespaced && ns && ns[0]) {
        char *q = fl_cat(p, ns, "/", NULL);
        free(p);
        return q;
    }
    return p;
}

char *fl_obj_key(const fl_kind *k, const char *ns, const char *name)
{
    char *p = fl_kind_prefix(k);
    if (!name)
        name = "";
    char *key = k->namespaced ? fl_cat(p, ns ? ns : "", "/", name, NULL) : fl_cat(p, name, NULL);
    free(p);
    return key;
}

bool fl_req_wants_table(const fl_req *r)
{
    return r->accept && strstr(r->accept, "as=Table");
}

bool fl_req_dry_run(const fl_req *r)
{
    const char *d = fl_req_query(r, "dryRun");
    return d && !strcmp(d, "All");
}

json_t *fl_obj_meta(json_t *obj)
{
    json_t *m = json_object_get(obj, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(obj, "metadata", m);
    }
    return m;
}

const char *fl_obj_str(const json_t *obj, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(obj, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_string_value(v);
}

/* ---- the /scale subresource ---- */

static const char *crd_scale_path(const fl_kind *k, const char *field, const char *dflt)
{
    const json_t *scale = json_object_get(json_object_get(k->crd_version, "subresources"), "scale");
    const char *p = json_string_value(json_object_get(scale, field));
    return p ? p : dflt;
}

const char *fl_scale_spec_path(const fl_kind *k)
{
    return k->dynamic ? crd_scale_path(k, "specReplicasPath", ".spec.replicas") : ".spec.replicas";
}

/* Value at a simple dotted path ".a.b" (no indices). */
static const json_t *at_path(const json_t *obj, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path[0] == '.' ? path + 1 : path);
    const json_t *v = obj;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    return v;
}

static char *selector_string(const json_t *sel)
{
    /* status.selector of a Scale is the label selector in its text form */
    char out[1024] = "";
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), key, v)
    {
        size_t n = strlen(out);
        snprintf(out + n, sizeof out - n, "%s%s=%s", n ? "," : "", key, json_string_value(v) ? json_string_value(v) : "");
    }
    size_t i;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, v)
    {
        const char *k2 = json_string_value(json_object_get(v, "key"));
        const char *op = json_string_value(json_object_get(v, "operator"));
        if (!k2 || !op)
            continue;
        size_t n = strlen(out);
        if (!strcmp(op, "Exists")) {
            snprintf(out + n, sizeof out - n, "%s%s", n ? "," : "", k2);
        } else if (!strcmp(op, "DoesNotExist")) {
            snprintf(out + n, sizeof out - n, "%s!%s", n ? "," : "", k2);
        } else {
            char vals[512] = "";
            size_t j;
            json_t *val;
            json_array_foreach(json_object_get(v, "values"), j, val)
            {
                size_t m = strlen(vals);
                snprintf(vals + m, sizeof vals - m, "%s%s", j ? "," : "", json_string_value(val) ? json_string_value(val) : "");
            }
            snprintf(out + n, sizeof out - n, "%s%s %s (%s)", n ? "," : "", k2, !strcmp(op, "In") ? "in" : "notin", vals);
        }
    }
    return fl_strdup(out);
}

json_t *fl_scale_view(const fl_kind *k, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *m = json_object();
    static const char *copy_keys[] = {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", NULL};
    for (int i = 0; copy_keys[i]; i++) {
        json_t *v = json_object_get(meta, copy_keys[i]);
        if (v)
            json_object_set(m, copy_keys[i], v);
    }
    const json_t *spec_r = at_path(obj, fl_scale_spec_path(k));
    const char *status_path = k->dynamic ? crd_scale_path(k, "statusReplicasPath", ".status.replicas") : ".status.replicas";
    const json_t *status_r = at_path(obj, status_path);
    json_t *scale = json_pack("{s:s, s:s, s:o, s:{s:I}, s:{s:I}}", "kind", "Scale", "apiVersion", "autoscaling/v1",
                              "metadata", m, "spec", "replicas", (json_int_t)json_integer_value(spec_r), "status",
                              "replicas", (json_int_t)json_integer_value(status_r));
    const json_t *sel = k->dynamic ? at_path(obj, crd_scale_path(k, "labelSelectorPath", ".status.selector"))
                                   : json_object_get(json_object_get(obj, "spec"), "selector");
    json_t *rc_sel = NULL;
    if (!k->group[0] && !strcmp(k->kind, "ReplicationController") && json_is_object(sel)) /* a plain label map */
        sel = rc_sel = json_pack("{s:O}", "matchLabels", sel);
    if (json_is_string(sel)) {
        json_object_set(json_object_get(scale, "status"), "selector", (json_t *)sel);
    } else if (json_is_object(sel)) {
        char *txt = selector_string(sel);
        json_object_set_new(json_object_get(scale, "status"), "selector", json_string(txt));
        free(txt);
    }
    json_decref(rc_sel);
    return scale;
}

/* ---- routing ---- */

static int split_path(const char *path, char segs[][256], int max)
{
    int n = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (n == max || len >= 256)
            return -1;
        memcpy(segs[n], p, len);
        segs[n][len] = 0;
        n++;
        p += len;
    }
    return n;
}

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

static void respond_version(fl_req *r)
{
    json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor", "32", "gitVersion",
                          FL_VERSION_GIT, "gitCommit", "flotilla", "gitTreeState", "clean", "buildDate",
                          "2026-11-22T00:00:00Z", "goVersion", "c11", "compiler", "gc", "platform", "linux/amd64");
    fl_resp_json(r, 200, v);
}

static bool wants_aggregated(const fl_req *r)
{
    return r->accept && strstr(r->accept, "as=APIGroupDiscoveryList");
}

/* Discovery and other non-resource endpoints; returns true if handled. */
static bool handle_nonresource(fl_api *api, fl_req *r, char segs[][256], int n)
{
    if (n >= 1 && (!strcmp(segs[0], "healthz") || !strcmp(segs[0], "livez") || !strcmp(segs[0], "readyz"))) {
        /* a check's name may hold a slash: /readyz/poststarthook/start-controllers */
        const char *one = r->path + strspn(r->path, "/") + strlen(segs[0]);
        one += strspn(one, "/");
        fl_health_respond(api, r, segs[0], n >= 2 ? one : NULL);
        return true;
    }
    if (n == 1 && !strcmp(segs[0], "metrics")) {
        r->verb = "GET";
        size_t len = 0;
        char *text = fl_metrics_render(&len);
        free(r->resp);
        r->code = 200;
        r->resp = text;
        r->resp_len = len;
        r->resp_type = "text/plain; version=0.0.4; charset=utf-8";
        return true;
    }
    if (n == 1 && !strcmp(segs[0], "version")) {
        r->verb = "GET";
        respond_version(r);
        return true;
    }
    if (n >= 1 && !strcmp(segs[0], "openapi")) {
        r->verb = "GET";
        if (n == 2 && !strcmp(segs[1], "v2")) {
            /* client-go asks for gnostic's protobuf and decodes whatever comes back as
             * that; everyone else gets JSON */
            if (r->accept && strstr(r->accept, FL_OPENAPI_V2_PB_TYPE)) {
                size_t len = 0;
                char *pb = fl_openapi_v2_pb(api->kinds, &len);
                fl_resp_raw(r, 200, pb, len);
                free(pb);
                r->resp_type = "application/octet-stream"; /* as upstream: Go cannot parse the @ */
            } else {
                fl_resp_json(r, 200, fl_openapi_v2(api->kinds));
            }
            return true;
        }
        if (n == 2 && !strcmp(segs[1], "v3")) {
            fl_resp_json(r, 200, fl_openapi_v3_index(api->kinds));
            return true;
        }
        if (n >= 3 && !strcmp(segs[1], "v3")) {
            char gv[512] = "";
            for (int i = 2; i < n; i++) {
                if (i > 2)
                    strncat(gv, "/", sizeof gv - strlen(gv) - 1);
                strncat(gv, segs[i], sizeof gv - strlen(gv) - 1);
            }
            json_t *doc = fl_openapi_v3_doc(api->kinds, gv);
            if (doc)
                fl_resp_json(r, 200, doc);
            else
                fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
            return true;
        }
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return true;
    }
    if (n == 1 && !strcmp(segs[0], "api")) {
        r->verb = "GET";
        if (wants_aggregated(r)) {
            fl_resp_json(r, 200, fl_discovery_aggregated(api->kinds, 1));
            r->resp_type = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        } else {
            fl_resp_json(r, 200, fl_discovery_core_versions());
        }
        return true;
    }
    if (n == 2 && !strcmp(segs[0], "api")) {
        r->verb = "GET";
        json_t *d = fl_discovery_resources(api->kinds, "", segs[1]);
        if (d)
            fl_resp_json(r, 200, d);
        else
            fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return true;
    }
    if (n >= 1 && n <= 3 && !strcmp(segs[0], "apis")) {
        r->verb = "GET";
        json_t *d;
        if (n == 1) {
            if (wants_aggregated(r)) {
                fl_resp_json(r, 200, fl_discovery_aggregated(api->kinds, 0));
                r->resp_type = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
                return true;
            }
            d = fl_discovery_groups(api->kinds);
        } else if (n == 2) {
            d = fl_discovery_group(api->kinds, segs[1]);
        } else {
            d = fl_discovery_resources(api->kinds, segs[1], segs[2]);
        }
        if (d)
            fl_resp_json(r, 200, d);
        else
            fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return true;
    }
    return false;
}

bool fl_query_true(const char *v)
{
    /* Kubernetes' boolean query parameters: anything but "0"/"false" (any case) is true */
    return v && strcmp(v, "0") && strcasecmp(v, "false");
}

static bool truthy(const char *v)
{
    return fl_query_true(v);
}

/* The Kubernetes verb of a resource request, as authorization names it. */
static const char *kube_verb(const char *method, bool coll, bool watch, const char *sub)
{
    if (!strcmp(method, "GET"))
        return watch ? "watch" : coll ? "list" : "get";
    if (!strcmp(method, "POST"))
        return !strcmp(sub, "finalize") ? "update" : "create";
    if (!strcmp(method, "PUT"))
        return "update";
    if (!strcmp(method, "PATCH"))
        return "patch";
    if (!strcmp(method, "DELETE"))
        return coll ? "deletecollection" : "delete";
    return "unknown";
}

/* The audit log learns what the request is (which decides its level and writes its
 * RequestReceived event, audit.h), then authorization decides, and the log notes that too. */
static bool authorized(fl_api *api, fl_req *r, const char *verb, const fl_target *t)
{
    fl_audit_resource(r->audit, verb, t);
    return !api->auth || fl_audit_authorized(r->audit, fl_auth_authorize(api->auth, r, verb, t), NULL);
}

static bool authorized_path(fl_api *api, fl_req *r)
{
    fl_audit_nonresource(r->audit, r->method, r->path);
    return !api->auth || fl_audit_authorized(r->audit, fl_auth_authorize_path(api->auth, r), NULL);
}

/* The register endpoint, to the audit log: a create of flotilla.io "register" (whose answer,
 * a token, the log never holds) */
static void audit_register(fl_req *r)
{
    fl_target reg = {.group = "flotilla.io", .version = "v1alpha1", .resource = "register"};
    fl_audit_resource(r->audit, "create", &reg);
}

/* Another create-only path of ours (/apis/GROUP/VERSION/RESOURCE: authentication.k8s.io's
 * reviews, flotilla.io's clientcertificates), to the audit log as that resource. */
static void audit_create_path(fl_req *r)
{
    fl_target t;
    memset(&t, 0, sizeof t);
    if (sscanf(r->path, "/apis/%99[^/]/%31[^/]/%95[^/]", t.group, t.version, t.resource) == 3)
        fl_audit_resource(r->audit, "create", &t);
    else
        fl_audit_nonresource(r->audit, r->method, r->path);
}

/* Ours, not resources: pull-mode agents trade the bootstrap token for their own (auth.c);
 * authentication.k8s.io's reviews and client certificates, create-only, not stored
 * (authn_review.c). True when r is answered. */
static bool handle_auth_path(fl_api *api, fl_req *r)
{
    if (fl_auth_is_register_path(r->path)) {
        audit_register(r);
        fl_auth_register(api, r);
    } else if (fl_authn_is_review_path(r->path)) {
        audit_create_path(r);
        fl_authn_review(api, r);
    } else {
        return false;
    }
    return true;
}

/* Does t's kind serve its subresource t->sub (for method m)? */
static bool sub_served(fl_api *api, const fl_target *t, const char *m)
{
    const fl_kind *k = t->kind;
    return (!strcmp(t->sub, "status") && k->has_status) || (!strcmp(t->sub, "scale") && k->has_scale) ||
           (!strcmp(t->sub, "finalize") && !strcmp(k->kind, "Namespace") && !k->group[0]) ||
           (!strcmp(t->sub, "approval") && !strcmp(k->group, "certificates.k8s.io")) ||
           (!strcmp(t->sub, "token") && !strcmp(k->kind, "ServiceAccount") && !k->group[0] &&
            fl_auth_sa_tokens(api->auth) && !strcmp(m, "POST"));
}

void fl_api_handle(fl_api *api, fl_req *r)
{
    char segs[10][256];
    r->verb = r->method;
    r->resource[0] = 0;
    int n = split_path(r->path ? r->path : "", segs, 10);
    if (n < 0) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    if (api->ui && fl_ui_handle(r)) /* public assets: the page's data comes through the API */
        return;
    if (api->auth && handle_auth_path(api, r))
        return;
    bool resource_path = (n >= 3 && !strcmp(segs[0], "api")) || (n >= 4 && !strcmp(segs[0], "apis"));
    if (!resource_path && !authorized_path(api, r))
        return;
    if (handle_nonresource(api, r, segs, n))
        return;

    fl_target t;
    memset(&t, 0, sizeof t);
    int i;
    if (n >= 2 && !strcmp(segs[0], "api")) {
        copy(t.version, sizeof t.version, segs[1]);
        i = 2;
    } else if (n >= 3 && !strcmp(segs[0], "apis")) {
        copy(t.group, sizeof t.group, segs[1]);
        copy(t.version, sizeof t.version, segs[2]);
        i = 3;
    } else {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    bool legacy_watch = false;
    if (i < n && !strcmp(segs[i], "watch")) {
        legacy_watch = true;
        i++;
    }
    int rest = n - i;
    if (rest <= 0) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    /* namespaces/{ns}/{resource}/... vs the namespaces resource itself */
    if (!strcmp(segs[i], "namespaces") && rest >= 3 &&
        !(rest == 3 && (!strcmp(segs[i + 2], "status") || !strcmp(segs[i + 2], "finalize")) && !t.group[0])) {
        copy(t.ns, sizeof t.ns, segs[i + 1]);
        t.has_ns = true;
        i += 2;
        rest -= 2;
    }
    copy(t.resource, sizeof t.resource, segs[i]);
    if (rest >= 2)
        copy(t.name, sizeof t.name, segs[i + 1]);
    if (rest >= 3)
        copy(t.sub, sizeof t.sub, segs[i + 2]);
    if (rest > 3) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    snprintf(r->resource, sizeof r->resource, "%s%s%s", t.resource, t.sub[0] ? "/" : "", t.sub);

    /* authorize before anything about the resource is revealed, even whether it exists */
    const char *m = r->method;
    bool coll = !t.name[0];
    bool watch = legacy_watch || truthy(fl_req_query(r, "watch"));
    if (!authorized(api, r, kube_verb(m, coll, watch, t.sub), &t))
        return;

    t.kind = fl_kindreg_by_resource(api->kinds, t.group, t.version, t.resource);
    if (!t.kind || t.kind->create_only) { /* 404, or a review: answered, not stored (rbac_review.c) */
        fl_rbac_review(fl_auth_rbac(api->auth), r, &t);
        return;
    }
    if (t.has_ns && !t.kind->namespaced) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    if (t.sub[0]) {
        if (!sub_served(api, &t, m)) {
            fl_resp_status(r, 404, "NotFound", &t, NULL, "the server could not find the requested resource");
            return;
        }
    }

    const char *dry = fl_req_query(r, "dryRun");
    if (dry && strcmp(dry, "All")) {
        json_t *causes = json_array();
        fl_cause_add(causes, "FieldValueNotSupported", "dryRun", "Unsupported value: \"%s\": supported values: \"All\"",
                     dry);
        fl_resp_status(r, 422, "Invalid", &t, causes, "dryRun: Unsupported value: \"%s\": supported values: \"All\"",
                       dry);
        return;
    }
    if (t.kind->storage_version) { /* another version's objects, converted (api_convert.c) */
        fl_api_serve_converted(api, r, &t, coll, watch);
        return;
    }
    fl_api_dispatch(api, r, &t, coll, watch);
}

/* One request on a resolved, authorized target, by method: the verbs of api_read.c,
 * api_write.c, api_patch.c and api_delete.c. */
void fl_api_dispatch(fl_api *api, fl_req *r, const fl_target *tp, bool coll, bool watch)
{
    const fl_target t = *tp;
    const char *m = r->method;
    if (!strcmp(m, "GET")) {
        if (coll && watch) {
            r->verb = "WATCH";
            fl_api_watch(api, r, &t);
        } else if (coll) {
            r->verb = "LIST";
            fl_api_list(api, r, &t);
        } else if (watch) {
            /* watch a single object: a collection watch narrowed by name */
            r->verb = "WATCH";
            fl_api_watch(api, r, &t);
        } else {
            fl_api_get(api, r, &t);
        }
    } else if (!strcmp(m, "POST")) {
        if (!coll && !strcmp(t.sub, "token")) { /* TokenRequest (sa_token.c) */
            fl_sa_token_request(fl_auth_sa_tokens(api->auth), r, &t);
            return;
        }
        if (!coll && !(t.sub[0] && !strcmp(t.sub, "finalize"))) {
            fl_resp_status(r, 405, "MethodNotAllowed", &t, NULL, "POST is not allowed on a named %s", t.resource);
            return;
        }
        if (!coll) {
            fl_api_update(api, r, &t);
            return;
        }
        if (t.kind->namespaced && !t.has_ns) {
            fl_resp_status(r, 404, "NotFound", &t, NULL, "the server could not find the requested resource");
            return;
        }
        fl_api_create(api, r, &t);
    } else if (!strcmp(m, "PUT")) {
        if (coll) {
            fl_resp_status(r, 405, "MethodNotAllowed", &t, NULL, "PUT requires a name");
            return;
        }
        fl_api_update(api, r, &t);
    } else if (!strcmp(m, "PATCH")) {
        if (coll) {
            fl_resp_status(r, 405, "MethodNotAllowed", &t, NULL, "PATCH requires a name");
            return;
        }
        fl_api_patch(api, r, &t);
    } else if (!strcmp(m, "DELETE")) {
        if (coll)
            fl_api_delete_collection(api, r, &t);
        else
            fl_api_delete(api, r, &t);
    } else {
        fl_resp_status(r, 405, "MethodNotAllowed", &t, NULL, "method %s is not supported", m);
    }
}

int fl_api_ensure_namespace(fl_api *api, const char *name)
{
    char *body = fl_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", name);
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = "POST";
    r.path = "/api/v1/namespaces";
    r.content_type = "application/json";
    r.user_agent = "flotilla";
    r.body = body;
    r.body_len = strlen(body);
    fl_api_handle(api, &r);
    int rc = r.code == 201 || r.code == 409 ? 0 : FL_EIO;
    free(r.resp);
    free(r.warnings);
    free(body);
    return rc;
}
