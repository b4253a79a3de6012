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

#include "api/validate.h"
#include "api/validate_priv.h"
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
