/* validate_builtin_ext.c - kube-apiserver's rules for the kinds of kinds_builtin_ext.c that
 * a chart's author gets wrong first: RBAC rules and role references, Ingress paths and
 * backends, HorizontalPodAutoscaler bounds and target, PodDisruptionBudget budgets,
 * PriorityClass values, StorageClass provisioners, admission webhook entries.
 *
 * Same conventions as validate_builtin.c: upstream's field paths and messages
 * (pkg/apis/{rbac,networking,autoscaling,policy,scheduling,storage,admissionregistration}/
 * validation), an absent field read as its default, one cause per problem. Storing an RBAC
 * object grants nothing (kinds_builtin_ext.c): these checks only keep what is stored
 * what kube-apiserver would store, so it applies on the member clusters too.
 * Pure functions: any thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "api/validate.h"
#include "api/validate_priv.h"
#include "core/base64.h"
#include "core/mem.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

static const char *const RBAC_ONLY[] = {RBAC_GROUP, NULL};
static const char *const CORE_ONLY[] = {"", NULL};
static const char *const SUBJECT_KINDS[] = {"ServiceAccount", "User", "Group", NULL};
static const char *const ROLE_KINDS[] = {"Role", "ClusterRole", NULL};
static const char *const CLUSTER_ROLE_ONLY[] = {"ClusterRole", NULL};

static size_t arr_len(const json_t *obj, const char *key) { return json_array_size(fl_v_arr(obj, key)); }


/* ValidatePolicyRule. */
static void policy_rule(json_t *causes, const char *base, const json_t *rule, bool namespaced)
{
    char p[FL_VPATH_MAX];
    if (!arr_len(rule, "verbs"))
        fl_v_required(causes, fl_vpath(p, "%s.verbs", base), "verbs must contain at least one value");
    json_t *urls = fl_v_arr(rule, "nonResourceURLs");
    if (json_array_size(urls)) {
        if (namespaced)
            fl_v_invalid(causes, fl_vpath(p, "%s.nonResourceURLs", base), urls,
                         "namespaced rules cannot apply to non-resource URLs");
        if (arr_len(rule, "apiGroups") || arr_len(rule, "resources") || arr_len(rule, "resourceNames"))
            fl_v_invalid(causes, fl_vpath(p, "%s.nonResourceURLs", base), urls,
                         "rules cannot apply to both regular resources and non-resource URLs");
        return;
    }
    if (!arr_len(rule, "apiGroups"))
        fl_v_required(causes, fl_vpath(p, "%s.apiGroups", base), "resource rules must supply at least one api group");
    if (!arr_len(rule, "resources"))
        fl_v_required(causes, fl_vpath(p, "%s.resources", base), "resource rules must supply at least one resource");
}

void fl_validate_role(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *r;
    bool namespaced = k && k->namespaced;
    json_array_foreach(fl_v_arr(obj, "rules"), i, r) policy_rule(causes, fl_vpath(p, "rules[%zu]", i), r, namespaced);
    json_t *agg = fl_v_obj(obj, "aggregationRule");
    if (agg && !namespaced) {
        json_t *sels = fl_v_arr(agg, "clusterRoleSelectors");
        if (!json_array_size(sels))
            fl_v_required(causes, "aggregationRule.clusterRoleSelectors",
                          "at least one clusterRoleSelector required if aggregationRule is non-nil");
        json_array_foreach(sels, i, r)
            fl_v_label_selector(causes, fl_vpath(p, "aggregationRule.clusterRoleSelectors[%zu]", i), r);
    }
}

/* ValidateRBACName: a path segment name. NULL when fine. */
const char *fl_validate_rbac_name(const char *name)
{
    if (!strcmp(name, "."))
        return "may not be '.'";
    if (!strcmp(name, ".."))
        return "may not be '..'";
    if (strchr(name, '/'))
        return "may not contain '/'";
    if (strchr(name, '%'))
        return "may not contain '%'";
    return NULL;
}

static void subject(json_t *causes, const char *base, const json_t *s, bool namespaced)
{
    char p[FL_VPATH_MAX];
    const char *name = fl_v_require_str(causes, fl_vpath(p, "%s.name", base), s, "name");
    const char *kind = fl_v_str(s, "kind");
    const json_t *group = json_object_get(s, "apiGroup");
    const char *gs = json_is_string(group) ? json_string_value(group) : "";
    if (kind && !strcmp(kind, "ServiceAccount")) {
        const char *msg = name ? fl_validate_dns1123_subdomain(name) : NULL;
        if (msg)
            fl_v_invalid_str(causes, fl_vpath(p, "%s.name", base), name, msg);
        if (*gs)
            fl_v_unsupported(causes, fl_vpath(p, "%s.apiGroup", base), group, CORE_ONLY);
        if (!namespaced && !fl_v_nonempty(s, "namespace"))
            fl_v_required(causes, fl_vpath(p, "%s.namespace", base), NULL);
    } else if (kind && (!strcmp(kind, "User") || !strcmp(kind, "Group"))) {
        if (strcmp(gs, RBAC_GROUP)) {
            json_t *v = group ? json_incref((json_t *)group) : json_string("");
            fl_v_unsupported(causes, fl_vpath(p, "%s.apiGroup", base), v, RBAC_ONLY);
            json_decref(v);
        }
    } else {
        fl_v_unsupported(causes, fl_vpath(p, "%s.kind", base), json_object_get(s, "kind"), SUBJECT_KINDS);
    }
}

void fl_validate_role_binding(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *ref = fl_v_obj(obj, "roleRef");
    const json_t *group = json_object_get(ref, "apiGroup");
    if (!json_is_string(group) || strcmp(json_string_value(group), RBAC_GROUP))
        fl_v_unsupported(causes, "roleRef.apiGroup", group, RBAC_ONLY);
    bool namespaced = k && k->namespaced;
    fl_v_enum(causes, "roleRef.kind", ref, "kind", namespaced ? ROLE_KINDS : CLUSTER_ROLE_ONLY, true);
    const char *name = fl_v_nonempty(ref, "name");
    if (!name)
        fl_v_required(causes, "roleRef.name", NULL);
    else if (fl_validate_rbac_name(name))
        fl_v_invalid_str(causes, "roleRef.name", name, fl_validate_rbac_name(name));
    size_t i;
    json_t *s;
    json_array_foreach(fl_v_arr(obj, "subjects"), i, s) subject(causes, fl_vpath(p, "subjects[%zu]", i), s, namespaced);
    /* the role a binding grants is fixed for its life: delete and recreate to change it */
    json_t *old_ref = fl_v_obj(old, "roleRef");
    if (old && !json_equal(ref ? ref : json_null(), old_ref ? old_ref : json_null()))
        fl_v_invalid(causes, "roleRef", ref, "cannot change roleRef");
}

/* ---------------------------------------------------------------------------------
 * networking.k8s.io
 */
static const char *const PATH_TYPES[] = {"Exact", "ImplementationSpecific", "Prefix", NULL};
static const char *const POLICY_TYPES[] = {"Egress", "Ingress", NULL};

static void ingress_backend(json_t *causes, const char *base, const json_t *b)
{
    char p[FL_VPATH_MAX];
    json_t *svc = fl_v_obj(b, "service"), *res = fl_v_obj(b, "resource");
    if (svc && res) {
        fl_v_invalid_str(causes, base, "", "cannot set both resource and service backends");
        return;
    }
    if (res)
        return;
    if (!svc) {
        fl_v_invalid_str(causes, base, "", "resource or service backend is required");
        return;
    }
    if (!fl_v_nonempty(svc, "name"))
        fl_v_required(causes, fl_vpath(p, "%s.service.name", base), "");
    json_t *port = fl_v_obj(svc, "port");
    bool has_name = fl_v_nonempty(port, "name") != NULL;
    json_t *num = json_object_get(port, "number");
    bool has_num = json_is_integer(num) && json_integer_value(num) != 0;
    if (has_name && has_num)
        fl_v_invalid_str(causes, base, "", "cannot set both port name & port number");
    else if (has_num && (json_integer_value(num) < 1 || json_integer_value(num) > 65535))
        fl_v_invalid(causes, fl_vpath(p, "%s.service.port.number", base), num, "must be between 1 and 65535, inclusive");
    else if (!has_name && !has_num)
        fl_v_required(causes, fl_vpath(p, "%s.service.port", base), "port name or number is required");
}

void fl_validate_ingress(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX], q[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    json_t *rules = fl_v_arr(spec, "rules");
    json_t *def = fl_v_obj(spec, "defaultBackend");
    if (!json_array_size(rules) && !def)
        fl_v_invalid(causes, "spec", rules, "either `defaultBackend` or `rules` must be specified");
    if (def)
        ingress_backend(causes, "spec.defaultBackend", def);
    size_t i, j;
    json_t *r, *path;
    json_array_foreach(rules, i, r) {
        json_t *http = fl_v_obj(r, "http");
        if (!http)
            continue;
        json_t *paths = fl_v_arr(http, "paths");
        if (!json_array_size(paths))
            fl_v_required(causes, fl_vpath(p, "spec.rules[%zu].http.paths", i), NULL);
        json_array_foreach(paths, j, path) {
            fl_vpath(q, "spec.rules[%zu].http.paths[%zu]", i, j);
            const char *pt = fl_v_str(path, "pathType");
            if (!pt) {
                fl_v_required(causes, fl_vpath(p, "%s.pathType", q), "pathType must be specified");
            } else if (fl_v_enum(causes, fl_vpath(p, "%s.pathType", q), path, "pathType", PATH_TYPES, true) &&
                       strcmp(pt, "ImplementationSpecific")) {
                const char *s = fl_v_str(path, "path");
                if (!s || s[0] != '/')
                    fl_v_invalid_str(causes, fl_vpath(p, "%s.path", q), s ? s : "", "must be an absolute path");
            }
            json_t *b = fl_v_obj(path, "backend");
            if (!b)
                fl_v_required(causes, fl_vpath(p, "%s.backend", q), NULL);
            else
                ingress_backend(causes, fl_vpath(p, "%s.backend", q), b);
        }
    }
}

void fl_validate_ingress_class(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    const char *c = fl_v_require_str(causes, "spec.controller", fl_v_obj(obj, "spec"), "controller");
    if (c && strlen(c) > 250)
        fl_v_invalid_str(causes, "spec.controller", c, "must be no more than 250 characters");
    const char *oc = fl_v_str(fl_v_obj(old, "spec"), "controller");
    if (c && oc && strcmp(c, oc))
        fl_v_invalid_str(causes, "spec.controller", c, "field is immutable");
}

void fl_validate_network_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    fl_v_label_selector(causes, "spec.podSelector", fl_v_obj(spec, "podSelector"));
    size_t i;
    json_t *t;
    json_t *types = fl_v_arr(spec, "policyTypes");
    if (json_array_size(types) > 2)
        fl_v_invalid(causes, "spec.policyTypes", types, "may not specify more than two policyTypes");
    json_array_foreach(types, i, t) {
        if (!json_is_string(t) || !fl_v_in(json_string_value(t), POLICY_TYPES))
            fl_v_unsupported(causes, fl_vpath(p, "spec.policyTypes[%zu]", i), t, POLICY_TYPES);
    }
}

/* ---------------------------------------------------------------------------------
 * autoscaling/v2, policy/v1
 */
static const char *const METRIC_TYPES[] = {"ContainerResource", "External", "Object", "Pods", "Resource", NULL};
static const char *const TARGET_TYPES[] = {"AverageValue", "Utilization", "Value", NULL};

static void hpa_metric(json_t *causes, const char *base, const json_t *m)
{
    char p[FL_VPATH_MAX];
    const char *type = fl_v_str(m, "type");
    if (!type || !*type) {
        fl_v_required(causes, fl_vpath(p, "%s.type", base), "must specify a metric source type");
        return;
    }
    if (!fl_v_enum(causes, fl_vpath(p, "%s.type", base), m, "type", METRIC_TYPES, true))
        return;
    char src[24];
    snprintf(src, sizeof src, "%c%s", type[0] - 'A' + 'a', type + 1); /* "Resource" -> "resource" */
    json_t *s = fl_v_obj(m, src);
    if (!s) {
        fl_v_required(causes, fl_vpath(p, "%s.%s", base, src), "must populate information for the given metric source");
        return;
    }
    if ((!strcmp(type, "Resource") || !strcmp(type, "ContainerResource")) && !fl_v_nonempty(s, "name"))
        fl_v_required(causes, fl_vpath(p, "%s.%s.name", base, src), "must specify a resource name");
    json_t *target = fl_v_obj(s, "target");
    if (!target)
        fl_v_required(causes, fl_vpath(p, "%s.%s.target", base, src), "must specify a metric target");
    else
        fl_v_enum(causes, fl_vpath(p, "%s.%s.target.type", base, src), target, "type", TARGET_TYPES, true);
}

void fl_validate_hpa(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    json_t *min = json_object_get(spec, "minReplicas"), *max = json_object_get(spec, "maxReplicas");
    if (json_is_integer(min) && json_integer_value(min) < 1)
        fl_v_invalid(causes, "spec.minReplicas", min, "must be greater than or equal to 1");
    json_int_t maxv = json_is_integer(max) ? json_integer_value(max) : 0;
    if (maxv < 1) {
        json_t *v = json_integer(maxv);
        fl_v_invalid(causes, "spec.maxReplicas", v, "must be greater than 0");
        json_decref(v);
    }
    else if (json_is_integer(min) && maxv < json_integer_value(min))
        fl_v_invalid(causes, "spec.maxReplicas", max, "must be greater than or equal to `minReplicas`");
    json_t *ref = fl_v_obj(spec, "scaleTargetRef");
    fl_v_require_str(causes, "spec.scaleTargetRef.kind", ref, "kind");
    fl_v_require_str(causes, "spec.scaleTargetRef.name", ref, "name");
    size_t i;
    json_t *m;
    json_array_foreach(fl_v_arr(spec, "metrics"), i, m) hpa_metric(causes, fl_vpath(p, "spec.metrics[%zu]", i), m);
}

static const char *const EVICTION_POLICIES[] = {"AlwaysAllow", "IfHealthyBudget", NULL};

/* ValidateNonnegativeIntOrPercent plus IsNotMoreThan100Percent. */
static void budget(json_t *causes, const char *field, const json_t *v)
{
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            fl_v_invalid(causes, field, v, "must be greater than or equal to 0");
        return;
    }
    if (!json_is_string(v))
        return;
    const char *s = json_string_value(v);
    char *end = NULL;
    long pct = strtol(s, &end, 10);
    if (end == s || strcmp(end, "%") || *s == '-' || *s == '+')
        fl_v_invalid(causes, field, v, "a valid percent string must be a numeric string followed by an ending '%%' "
                                       "(e.g. '1%%',  or '93%%', regex used for validation is '[0-9]+%%')");
    else if (pct > 100)
        fl_v_invalid(causes, field, v, "must not be greater than 100%%");
}

void fl_validate_pdb(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    json_t *spec = fl_v_obj(obj, "spec");
    json_t *min = json_object_get(spec, "minAvailable"), *max = json_object_get(spec, "maxUnavailable");
    if (min && !json_is_null(min) && max && !json_is_null(max))
        fl_v_invalid(causes, "spec", spec, "minAvailable and maxUnavailable cannot be both set");
    budget(causes, "spec.minAvailable", min);
    budget(causes, "spec.maxUnavailable", max);
    fl_v_label_selector(causes, "spec.selector", fl_v_obj(spec, "selector"));
    fl_v_enum(causes, "spec.unhealthyPodEvictionPolicy", spec, "unhealthyPodEvictionPolicy", EVICTION_POLICIES,
              false);
}

/* ---------------------------------------------------------------------------------
 * scheduling.k8s.io, storage.k8s.io, admissionregistration.k8s.io
 */
static const char *const PREEMPTION[] = {"Never", "PreemptLowerPriority", NULL};

void fl_validate_priority_class(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    const char *name = fl_v_str(fl_v_obj(obj, "metadata"), "name");
    json_t *v = json_object_get(obj, "value");
    bool system = name && (!strcmp(name, "system-cluster-critical") || !strcmp(name, "system-node-critical"));
    if (name && !strncmp(name, "system-", 7) && !system)
        fl_v_invalid_str(causes, "metadata.name", name, "priority class names with 'system-' prefix are reserved");
    if (!system && json_is_integer(v) && json_integer_value(v) > 1000000000)
        fl_v_forbidden(causes, "value", "maximum allowed value of a user defined priority is 1000000000");
    fl_v_enum(causes, "preemptionPolicy", obj, "preemptionPolicy", PREEMPTION, false);
    if (old && !json_equal(v ? v : json_null(), json_object_get(old, "value") ? json_object_get(old, "value")
                                                                               : json_null()))
        fl_v_forbidden(causes, "value", "may not be changed in an update.");
}

static const char *const RECLAIM[] = {"Delete", "Retain", NULL};
static const char *const BINDING_MODES[] = {"Immediate", "WaitForFirstConsumer", NULL};

void fl_validate_storage_class(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    fl_v_require_str(causes, "provisioner", obj, "provisioner");
    fl_v_enum(causes, "reclaimPolicy", obj, "reclaimPolicy", RECLAIM, false);
    fl_v_enum(causes, "volumeBindingMode", obj, "volumeBindingMode", BINDING_MODES, false);
    if (!old)
        return;
    static const char *const fixed[] = {"parameters", "provisioner", "reclaimPolicy", NULL};
    for (size_t i = 0; fixed[i]; i++) {
        json_t *a = json_object_get(obj, fixed[i]), *b = json_object_get(old, fixed[i]);
        if (!json_equal(a ? a : json_null(), b ? b : json_null())) {
            char msg[64];
            snprintf(msg, sizeof msg, "updates to %s are forbidden.", fixed[i]);
            fl_v_forbidden(causes, fixed[i], msg);
        }
    }
}

static const char *const SIDE_EFFECTS[] = {"None", "NoneOnDryRun", NULL};

void fl_validate_webhook_configuration(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *hooks = fl_v_arr(obj, "webhooks");
    size_t i;
    json_t *w;
    json_array_foreach(hooks, i, w) {
        const char *name = fl_v_require_str(causes, fl_vpath(p, "webhooks[%zu].name", i), w, "name");
        if (name) {
            size_t dots = 0;
            for (const char *c = name; *c; c++)
                dots += *c == '.';
            if (dots < 2 || fl_validate_dns1123_subdomain(name))
                fl_v_invalid_str(causes, p, name, "should be a domain with at least three segments separated by dots");
            for (size_t j = 0; j < i; j++) {
                const char *other = fl_v_str(json_array_get(hooks, j), "name");
                if (other && !strcmp(other, name)) {
                    fl_v_duplicate(causes, p, json_object_get(w, "name"), NULL);
                    break;
                }
            }
        }
        if (!fl_v_str(w, "sideEffects"))
            fl_v_required(causes, fl_vpath(p, "webhooks[%zu].sideEffects", i), "must specify one of None, NoneOnDryRun");
        else
            fl_v_enum(causes, fl_vpath(p, "webhooks[%zu].sideEffects", i), w, "sideEffects", SIDE_EFFECTS, true);
        if (!arr_len(w, "admissionReviewVersions"))
            fl_v_required(causes, fl_vpath(p, "webhooks[%zu].admissionReviewVersions", i),
                          "must specify one of v1, v1beta1");
        json_t *cc = fl_v_obj(w, "clientConfig");
        bool url = fl_v_nonempty(cc, "url") != NULL, svc = fl_v_obj(cc, "service") != NULL;
        if (url == svc)
            fl_v_required(causes, fl_vpath(p, "webhooks[%zu].clientConfig", i), "exactly one of url or service is required");
    }
}

/* ---------------------------------------------------------------------------------
 * ValidatingAdmissionPolicy(+Binding), events.k8s.io Event, APIService,
 * CertificateSigningRequest: stored only, checked as kube-apiserver checks them
 */
static const char *const FAILURE_POLICIES[] = {"Fail", "Ignore", NULL};
static const char *const VALIDATION_ACTIONS[] = {"Audit", "Deny", "Warn", NULL};
static const char *const NOT_FOUND_ACTIONS[] = {"Allow", "Deny", NULL};

void fl_validate_admission_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    fl_v_enum(causes, "spec.failurePolicy", spec, "failurePolicy", FAILURE_POLICIES, false);
    json_t *pk = fl_v_obj(spec, "paramKind");
    if (pk) {
        fl_v_require_str(causes, "spec.paramKind.apiVersion", pk, "apiVersion");
        fl_v_require_str(causes, "spec.paramKind.kind", pk, "kind");
    }
    json_t *mc = fl_v_obj(spec, "matchConstraints");
    if (!mc)
        fl_v_required(causes, "spec.matchConstraints", "");
    else if (!arr_len(mc, "resourceRules"))
        fl_v_required(causes, "spec.matchConstraints.resourceRules", "");
    if (!arr_len(spec, "validations") && !arr_len(spec, "auditAnnotations"))
        fl_v_required(causes, "spec.validations", "validations or auditAnnotations must contain at least one item");
    size_t i;
    json_t *v;
    json_array_foreach(fl_v_arr(spec, "validations"), i, v) {
        if (!fl_v_nonempty(v, "expression"))
            fl_v_required(causes, fl_vpath(p, "spec.validations[%zu].expression", i), "expression is not specified");
    }
    json_array_foreach(fl_v_arr(spec, "auditAnnotations"), i, v) {
        if (!fl_v_nonempty(v, "key"))
            fl_v_required(causes, fl_vpath(p, "spec.auditAnnotations[%zu].key", i), "");
        if (!fl_v_nonempty(v, "valueExpression"))
            fl_v_required(causes, fl_vpath(p, "spec.auditAnnotations[%zu].valueExpression", i),
                          "valueExpression is not specified");
    }
}

void fl_validate_admission_policy_binding(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!fl_v_nonempty(spec, "policyName"))
        fl_v_required(causes, "spec.policyName", "");
    json_t *acts = fl_v_arr(spec, "validationActions");
    if (!json_array_size(acts))
        fl_v_required(causes, "spec.validationActions", "at least one validation action is required");
    bool deny = false, warn = false;
    size_t i;
    json_t *a;
    json_array_foreach(acts, i, a) {
        const char *s = json_string_value(a);
        fl_vpath(p, "spec.validationActions[%zu]", i);
        if (!fl_v_in(s, VALIDATION_ACTIONS)) {
            fl_v_unsupported(causes, p, a, VALIDATION_ACTIONS);
            continue;
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(acts, j), a))
                fl_v_duplicate(causes, p, a, NULL);
        deny = deny || !strcmp(s, "Deny");
        warn = warn || !strcmp(s, "Warn");
    }
    if (deny && warn)
        fl_v_invalid(causes, "spec.validationActions", acts, "must not contain both Deny and Warn (repeating the "
                                                             "same validation failure information in the API response "
                                                             "and headers serves no purpose)");
    json_t *pr = fl_v_obj(spec, "paramRef");
    if (pr) {
        bool named = fl_v_nonempty(pr, "name") != NULL, sel = fl_v_obj(pr, "selector") != NULL;
        if (named && sel)
            fl_v_forbidden(causes, "spec.paramRef.name", "name and selector are mutually exclusive");
        else if (!named && !sel)
            fl_v_required(causes, "spec.paramRef", "one of name or selector must be specified");
        fl_v_enum(causes, "spec.paramRef.parameterNotFoundAction", pr, "parameterNotFoundAction", NOT_FOUND_ACTIONS,
                  true);
    }
}

static const char *const EVENT_TYPES[] = {"Normal", "Warning", NULL};

/* events.k8s.io/v1 ValidateEventCreate (on create; an update keeps what was stored). */
void fl_validate_events_v1(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    if (old)
        return;
    if (!fl_v_nonempty(obj, "eventTime"))
        fl_v_required(causes, "eventTime", "");
    fl_v_enum(causes, "type", obj, "type", EVENT_TYPES, true);
    const char *action = fl_v_nonempty(obj, "action"), *reason = fl_v_str(obj, "reason");
    if (!action)
        fl_v_required(causes, "action", "");
    else if (strlen(action) > 128)
        fl_v_invalid_str(causes, "action", action, "can have at most 128 characters");
    if (reason && strlen(reason) > 128)
        fl_v_invalid_str(causes, "reason", reason, "can have at most 128 characters");
    const char *note = fl_v_str(obj, "note");
    if (note && strlen(note) > 1024)
        fl_v_invalid_str(causes, "note", note, "can have at most 1024 characters");
    if (!fl_v_nonempty(obj, "reportingController"))
        fl_v_required(causes, "reportingController", "");
    const char *inst = fl_v_nonempty(obj, "reportingInstance");
    if (!inst)
        fl_v_required(causes, "reportingInstance", "");
    else if (strlen(inst) > 128)
        fl_v_invalid_str(causes, "reportingInstance", inst, "can have at most 128 characters");
}

void fl_validate_apiservice(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    json_t *spec = fl_v_obj(obj, "spec");
    const char *name = fl_v_str(fl_v_obj(obj, "metadata"), "name");
    const char *group = fl_v_str(spec, "group"), *version = fl_v_str(spec, "version");
    if (!version || !*version) {
        fl_v_required(causes, "spec.version", "");
    } else if (name) {
        char want[512];
        snprintf(want, sizeof want, "%s%s%s", version, group && *group ? "." : "", group ? group : "");
        if (strcmp(name, want))
            fl_v_invalid_str(causes, "metadata.name", name, "must be `spec.version+\".\"+spec.group`");
        if ((!group || !*group) && strcmp(version, "v1"))
            fl_v_invalid_str(causes, "spec.version", version, "must be v1 for an empty group");
    }
    json_t *gp = json_object_get(spec, "groupPriorityMinimum"), *vp = json_object_get(spec, "versionPriority");
    json_int_t g = json_is_integer(gp) ? json_integer_value(gp) : 0, v = json_is_integer(vp) ? json_integer_value(vp) : 0;
    if (g <= 0 || g > 20000) {
        json_t *x = json_integer(g);
        fl_v_invalid(causes, "spec.groupPriorityMinimum", x, "must be positive and less than 20000");
        json_decref(x);
    }
    if (v <= 0 || v > 1000) {
        json_t *x = json_integer(v);
        fl_v_invalid(causes, "spec.versionPriority", x, "must be positive and less than 1000");
        json_decref(x);
    }
    json_t *skip = json_object_get(spec, "insecureSkipTLSVerify");
    if (json_is_true(skip) && fl_v_nonempty(spec, "caBundle"))
        fl_v_invalid(causes, "spec.insecureSkipTLSVerify", skip, "may not be true if caBundle is present");
}

/* upstream's certificates.KeyUsage values */
static const char *const KEY_USAGES[] = {
    "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
    "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
    "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
    "server auth", "signing", "timestamping", NULL};

/* The request's bytes (base64 in JSON) must be a PEM "CERTIFICATE REQUEST" that parses. */
static const char *csr_request_error(const char *b64)
{
    size_t n = 0;
    char *pem = fl_base64_decode(b64, &n);
    if (!pem)
        return "PEM block type must be CERTIFICATE REQUEST";
    const char *err = NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)n);
    char *name = NULL, *header = NULL;
    unsigned char *der = NULL;
    long len = 0;
    if (!bio || PEM_read_bio(bio, &name, &header, &der, &len) != 1 || strcmp(name, "CERTIFICATE REQUEST")) {
        err = "PEM block type must be CERTIFICATE REQUEST";
    } else {
        const unsigned char *d = der;
        X509_REQ *req = d2i_X509_REQ(NULL, &d, len);
        if (!req)
            err = "x509: malformed certificate request";
        X509_REQ_free(req);
    }
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(der);
    BIO_free(bio);
    ERR_clear_error();
    free(pem);
    return err;
}

/* ValidateCertificateSigningRequestCreate/Update for certificates.k8s.io/v1: the spec is
 * immutable once created. */
void fl_validate_csr(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (old) {
        json_t *ospec = fl_v_obj(old, "spec");
        if (ospec && spec && !json_equal(ospec, spec))
            fl_v_invalid(causes, "spec", spec, "field is immutable");
        return;
    }
    const char *req = fl_v_str(spec, "request");
    if (!req || !*req) {
        fl_v_required(causes, "spec.request", "");
    } else {
        const char *err = csr_request_error(req);
        if (err)
            fl_v_invalid_str(causes, "spec.request", "<bytes>", err);
    }
    const char *signer = fl_v_str(spec, "signerName");
    if (!signer || !*signer) {
        fl_v_required(causes, "spec.signerName", "");
    } else {
        const char *slash = strchr(signer, '/');
        if (!slash || slash == signer || !slash[1] || !memchr(signer, '.', (size_t)(slash - signer)))
            fl_v_invalid_str(causes, "spec.signerName", signer,
                             "must be a fully qualified domain and path of the form 'example.com/signer-name'");
    }
    json_t *usages = fl_v_arr(spec, "usages");
    if (!json_array_size(usages))
        fl_v_required(causes, "spec.usages", "usages must be provided");
    size_t i;
    json_t *u;
    json_array_foreach(usages, i, u) {
        fl_vpath(p, "spec.usages[%zu]", i);
        if (!fl_v_in(json_string_value(u), KEY_USAGES)) {
            fl_v_unsupported(causes, p, u, KEY_USAGES);
            continue;
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(usages, j), u))
                fl_v_duplicate(causes, p, u, NULL);
    }
    json_t *exp = json_object_get(spec, "expirationSeconds");
    if (json_is_integer(exp) && json_integer_value(exp) < 600)
        fl_v_invalid(causes, "spec.expirationSeconds", exp, "may not specify a duration less than 600 seconds (10 minutes)");
}
