/* rbac_review.c - authorization.k8s.io/v1: the access and rules reviews, and impersonation
 * (see rbac.h).
 *
 * The reviews are create-only and never stored: the handler answers the posted object with
 * a `status` filled in, as kube-apiserver does. SelfSubjectAccessReview and
 * SelfSubjectRulesReview ask about the caller (every authenticated user may create them:
 * system:basic-user); SubjectAccessReview and LocalSubjectAccessReview about any user and
 * groups, for those allowed to create them (the request was authorized as usual before it
 * gets here). `kubectl auth can-i` posts the first, `kubectl auth can-i --list` the last. */
#include "api/rbac.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/validate.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"

#define AUTHZ_GROUP "authorization.k8s.io"
#define SA_PREFIX "system:serviceaccount:"

static const char *str_or_empty(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* 422 naming one field. */
static void invalid(fl_req *r, const fl_target *t, const char *field, const char *value, const char *why)
{
    json_t *causes = json_array();
    fl_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"%s\": %s", value, why);
    fl_resp_status(r, 422, "Invalid", t, causes, "%s.%s \"\" is invalid: %s: Invalid value: \"%s\": %s",
                   t->kind ? t->kind->kind : t->resource, AUTHZ_GROUP, field, value, why);
}

/* The decision for who on spec's resourceAttributes or nonResourceAttributes, into status.
 * who NULL: a trusted caller, or no authentication: allowed. */
static void access_status(fl_rbac *rb, const fl_identity *who, const json_t *spec, json_t *out)
{
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    const json_t *nra = json_object_get(spec, "nonResourceAttributes");
    fl_auth_attrs at;
    if (json_is_object(ra)) {
        at = (fl_auth_attrs){.who = who, .verb = str_or_empty(ra, "verb"), .path = NULL,
                             .group = str_or_empty(ra, "group"), .resource = str_or_empty(ra, "resource"),
                             .subresource = str_or_empty(ra, "subresource"), .ns = str_or_empty(ra, "namespace"),
                             .name = str_or_empty(ra, "name")};
    } else {
        at = (fl_auth_attrs){.who = who, .verb = str_or_empty(nra, "verb"), .path = str_or_empty(nra, "path"),
                             .group = "", .resource = "", .subresource = "", .ns = "", .name = ""};
    }
    char why[1600] = "";
    bool allowed = !who || fl_identity_in_group(who, FL_AUTH_GROUP_MASTERS) ||
                   (rb && fl_rbac_allowed(rb, &at, why, sizeof why));
    json_t *status = json_pack("{s:b}", "allowed", allowed);
    if (why[0])
        json_object_set_new(status, "reason", json_string(why));
    json_object_set_new(out, "status", status);
}

/* The identity a SubjectAccessReview asks about: spec.user, spec.uid, spec.groups as given
 * (no group added, as Kubernetes). false after answering r when it does not fit. */
static bool spec_identity(fl_req *r, const fl_target *t, const json_t *spec, fl_identity *id)
{
    const char *user = str_or_empty(spec, "user");
    const json_t *groups = json_object_get(spec, "groups");
    memset(id, 0, sizeof *id);
    if (!user[0] && !json_array_size(groups)) {
        invalid(r, t, "spec.user", "", "at least one of user or group must be specified");
        return false;
    }
    if (strlen(user) >= sizeof id->user) {
        invalid(r, t, "spec.user", "", "too long");
        return false;
    }
    snprintf(id->user, sizeof id->user, "%s", user);
    snprintf(id->uid, sizeof id->uid, "%s", str_or_empty(spec, "uid"));
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g) {
        char field[48];
        snprintf(field, sizeof field, "spec.groups[%zu]", i);
        if (!json_is_string(g) || fl_identity_add_group(id, json_string_value(g)) != 0) {
            invalid(r, t, field, json_is_string(g) ? json_string_value(g) : "",
                    "must be a non-empty string; at most 16 groups of fewer than 128 bytes");
            return false;
        }
    }
    return true;
}

/* Exactly one of resourceAttributes and nonResourceAttributes (local reviews: resources
 * only, in the request's namespace). false after answering r. */
static bool check_attributes(fl_req *r, const fl_target *t, const json_t *spec, bool local)
{
    bool res = json_is_object(json_object_get(spec, "resourceAttributes"));
    bool nonres = json_is_object(json_object_get(spec, "nonResourceAttributes"));
    if (res == nonres) {
        invalid(r, t, "spec.resourceAttributes", "",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified");
        return false;
    }
    if (local && nonres) {
        invalid(r, t, "spec.nonResourceAttributes", "", "disallowed on this kind of request");
        return false;
    }
    const char *ns = str_or_empty(json_object_get(spec, "resourceAttributes"), "namespace");
    if (local && strcmp(ns, t->ns)) {
        invalid(r, t, "spec.resourceAttributes.namespace", ns, "must match metadata.namespace");
        return false;
    }
    return true;
}

void fl_rbac_review(fl_rbac *rb, fl_req *r, const fl_target *t)
{
    static const char *const kinds[][2] = {{"selfsubjectaccessreviews", "SelfSubjectAccessReview"},
                                           {"subjectaccessreviews", "SubjectAccessReview"},
                                           {"localsubjectaccessreviews", "LocalSubjectAccessReview"},
                                           {"selfsubjectrulesreviews", "SelfSubjectRulesReview"}};
    size_t which = 0;
    while (which < 4 && strcmp(kinds[which][0], t->resource))
        which++;
    bool local = which == 2;
    if (strcmp(t->group, AUTHZ_GROUP) || which == 4 || strcmp(t->version, "v1") || t->sub[0] || t->has_ns != local) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    if (strcmp(r->method, "POST") || t->name[0]) {
        fl_resp_status(r, 405, "MethodNotAllowed", t, NULL, "%s is not allowed on %s: they are create-only",
                       r->method, t->resource);
        return;
    }
    r->verb = "POST";
    json_t *obj = fl_req_body_object(r, t); /* JSON, YAML or protobuf (kubectl auth can-i) */
    if (!obj)
        return;
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(obj, "spec", spec);
    }
    json_object_set_new(obj, "apiVersion", json_string(AUTHZ_GROUP "/v1"));
    json_object_set_new(obj, "kind", json_string(kinds[which][1]));
    json_t *meta = fl_obj_meta(obj);
    json_object_set_new(meta, "creationTimestamp", json_null());
    if (local)
        json_object_set_new(meta, "namespace", json_string(t->ns));
    const fl_identity *who = r->who;
    fl_identity asked;
    if (which == 3) {
        const char *ns = str_or_empty(spec, "namespace");
        json_t *status = who && !fl_identity_in_group(who, FL_AUTH_GROUP_MASTERS) && rb
                             ? fl_rbac_rules(rb, who, ns)
                             : json_pack("{s:[{s:[s], s:[s], s:[s]}], s:[{s:[s], s:[s]}], s:b}", "resourceRules",
                                         "verbs", "*", "apiGroups", "*", "resources", "*", "nonResourceRules",
                                         "verbs", "*", "nonResourceURLs", "*", "incomplete", 0);
        json_object_set_new(obj, "status", status);
        fl_resp_json(r, 201, obj);
        return;
    }
    if (!check_attributes(r, t, spec, local))
        goto out;
    if (which != 0) {
        if (!spec_identity(r, t, spec, &asked))
            goto out;
        who = &asked;
    }
    access_status(rb, who, spec, obj);
    fl_resp_json(r, 201, obj);
    return;
out:
    json_decref(obj);
}

/* ---------------------------------------------------------------- impersonation */

/* May real impersonate resource (users, groups, serviceaccounts) name [in ns]? Else msg. */
static bool may_impersonate(fl_auth *a, const fl_identity *real, const char *resource, const char *ns,
                            const char *name, char *msg, size_t cap)
{
    fl_auth_attrs at = {.who = real, .verb = "impersonate", .path = NULL, .group = "", .resource = resource,
                        .subresource = "", .ns = ns, .name = name};
    if (fl_auth_allowed(a, &at))
        return true;
    char scope[320];
    if (ns[0])
        snprintf(scope, sizeof scope, "in the namespace \"%s\"", ns);
    else
        snprintf(scope, sizeof scope, "at the cluster scope");
    snprintf(msg, cap, "%s \"%s\" is forbidden: User \"%s\" cannot impersonate resource \"%s\" in API group \"\" %s",
             resource, name, real->user, resource, scope);
    return false;
}

int fl_rbac_impersonate(fl_auth *a, const fl_identity *real, const char *user, const char *const *groups,
                        size_t ngroups, fl_identity *out, char *msg, size_t cap)
{
    msg[0] = 0;
    if (!user || !user[0]) {
        snprintf(msg, cap, "requested %zu group(s) without impersonating a user", ngroups);
        return 400;
    }
    char ns[256] = "", name[256] = "";
    bool sa = !strncmp(user, SA_PREFIX, strlen(SA_PREFIX));
    if (sa) {
        const char *rest = user + strlen(SA_PREFIX), *colon = strchr(rest, ':');
        if (!colon || colon == rest || !colon[1] || (size_t)(colon - rest) >= sizeof ns || strlen(colon + 1) >= sizeof name) {
            snprintf(msg, cap, "Impersonate-User: \"%s\" is not a valid service account name", user);
            return 400;
        }
        snprintf(ns, sizeof ns, "%.*s", (int)(colon - rest), rest);
        snprintf(name, sizeof name, "%s", colon + 1);
    }
    if (sa ? !may_impersonate(a, real, "serviceaccounts", ns, name, msg, cap)
           : !may_impersonate(a, real, "users", "", user, msg, cap))
        return 403;
    for (size_t i = 0; i < ngroups; i++)
        if (!may_impersonate(a, real, "groups", "", groups[i], msg, cap))
            return 403;
    if (fl_identity_set(out, user, NULL) != 0) {
        snprintf(msg, cap, "Impersonate-User: too long");
        return 400;
    }
    int bad = 0;
    for (size_t i = 0; i < ngroups; i++)
        bad |= fl_identity_add_group(out, groups[i]);
    if (sa) {
        char g[FL_AUTH_GROUP_MAX];
        snprintf(g, sizeof g, "system:serviceaccounts:%s", ns);
        bad |= fl_identity_add_group(out, "system:serviceaccounts");
        bad |= fl_identity_add_group(out, g);
    }
    bad |= fl_identity_add_group(out, strcmp(user, FL_AUTH_ANONYMOUS) ? FL_AUTH_GROUP_AUTHENTICATED
                                                                     : FL_AUTH_GROUP_UNAUTHENTICATED);
    if (bad) {
        snprintf(msg, cap, "Impersonate-Group: at most %d groups of fewer than %d bytes", FL_AUTH_GROUPS_MAX - 3,
                 FL_AUTH_GROUP_MAX);
        return 400;
    }
    return 0;
}
