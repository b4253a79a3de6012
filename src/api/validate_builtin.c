/* validate_builtin.c - kube-apiserver's semantic rules for the built-in kinds users write most.
 *
 * kube-apiserver refuses a Deployment with `replicas: -3`, a selector that does not match its
 * template, a Pod without containers, a Service port out of range, a ConfigMap key with a
 * slash... with 422 Invalid and one cause per problem. Those rules live upstream in
 * pkg/apis/{core,apps,batch}/validation; this file enforces the ones users actually hit, with
 * the same field paths ("spec.template.spec.containers[0].ports[1].containerPort") and the
 * same message text, so kubectl's "The Deployment "web" is invalid: ..." reads the same.
 *
 * Upstream validates after defaulting; Flotilla stores objects as written. So every rule
 * here reads an absent field as its default (restartPolicy Always, protocol TCP, strategy
 * RollingUpdate with 25%/25%, concurrencyPolicy Allow, ...) instead of requiring it: a
 * minimal manifest that kube-apiserver accepts is accepted here too.
 *
 * The fl_validate_<kind> functions are wired into the kind table (kinds_builtin.c) and called
 * by fl_validate_object after the ObjectMeta rules. Pure functions: any thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/validate.h"
#include "api/validate_priv.h"
#include "core/mem.h"
#include "core/quantity.h"
#include "core/selector.h"

static const char *const PROTOCOLS[] = {"SCTP", "TCP", "UDP", NULL};
static const char *const RESTART_POLICIES[] = {"Always", "OnFailure", "Never", NULL};
static const char *const ALWAYS_ONLY[] = {"Always", NULL};
static const char *const JOB_RESTART_POLICIES[] = {"OnFailure", "Never", NULL};

#define MSG_NONNEG "must be greater than or equal to 0"
#define MSG_PORT "must be between 1 and 65535, inclusive"
#define MSG_PERCENT                                                                                          \
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex " \
    "used for validation is '[0-9]+%')"
#define MSG_QUANTITY "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define MSG_CONFIG_KEY                                                                                       \
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "      \
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"

/* ---------------------------------------------------------------------------------
 * Small rules shared by every kind below.
 */

/* obj[key], when it is an integer below zero: "must be greater than or equal to 0". */
static void nonneg(json_t *causes, const char *field, const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    if (json_is_integer(v) && json_integer_value(v) < 0)
        fl_v_invalid(causes, field, v, MSG_NONNEG);
}

/* A string value rendered as Go's %q would, close enough for label keys and values (which
 * are ASCII when valid; an invalid one only needs to be recognisable). Caller frees. */
static char *go_quote(const char *s)
{
    size_t n = strlen(s);
    char *out = fl_malloc(n * 2 + 3), *o = out;
    *o++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            *o++ = '\\';
        *o++ = *s;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's %#v of a map[string]string, as upstream prints template labels in the selector
 * mismatch message: map[string]string{"app":"x", "tier":"web"} with sorted keys, or
 * map[string]string(nil). Caller frees. */
static char *go_string_map(const json_t *m)
{
    size_t n = json_is_object(m) ? json_object_size(m) : 0;
    if (n == 0)
        return fl_strdup(json_is_object(m) ? "map[string]string{}" : "map[string]string(nil)");
    const char **keys = fl_malloc(n * sizeof *keys);
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_str);
    char *acc = fl_strdup("map[string]string{");
    for (i = 0; i < n; i++) {
        const char *val = fl_v_str(m, keys[i]);
        char *qk = go_quote(keys[i]), *qv = go_quote(val ? val : "");
        char *next = fl_asprintf("%s%s%s:%s", acc, i ? ", " : "", qk, qv);
        free(acc);
        free(qk);
        free(qv);
        acc = next;
    }
    char *out = fl_asprintf("%s}", acc);
    free(acc);
    free(keys);
    return out;
}

/* "Not found: "x"" (field.NotFound), for a volumeMount naming no volume. */
static void not_found(json_t *causes, const char *field, const char *value)
{
    json_t *v = json_string(value ? value : "");
    char *text = json_dumps(v ? v : json_null(), JSON_ENCODE_ANY | JSON_COMPACT);
    fl_cause_add(causes, "FieldValueNotFound", field, "Not found: %s", text ? text : "\"\"");
    free(text);
    json_decref(v);
}

/* An integer port number: 1..65535. Absent or not an integer: nothing (types are checked
 * before validation). */
static void port_number(json_t *causes, const char *field, const json_t *v)
{
    if (json_is_integer(v) && (json_integer_value(v) < 1 || json_integer_value(v) > 65535))
        fl_v_invalid(causes, field, v, MSG_PORT);
}

/* An IANA_SVC_NAME (container port names, string targetPorts): one cause per broken rule,
 * as validation.IsValidPortName lists them. Returns true when valid. */
static bool port_name(json_t *causes, const char *field, const char *name)
{
    size_t n = strlen(name), before = json_array_size(causes);
    bool charset = n > 0, letter = false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c >= 'a' && c <= 'z')
            letter = true;
        else if (!(c >= '0' && c <= '9') && c != '-')
            charset = false;
    }
    if (n > 15)
        fl_v_invalid_str(causes, field, name, "must be no more than 15 characters");
    if (!charset)
        fl_v_invalid_str(causes, field, name, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    if (!letter)
        fl_v_invalid_str(causes, field, name, "must contain at least one letter (a-z)");
    if (strstr(name, "--"))
        fl_v_invalid_str(causes, field, name, "must not contain consecutive hyphens");
    if (n && (name[0] == '-' || name[n - 1] == '-'))
        fl_v_invalid_str(causes, field, name, "must not begin or end with a hyphen");
    return json_array_size(causes) == before;
}

/* A DNS-1123 label that must be present: Required, or Invalid with the label message. */
static void required_label(json_t *causes, const char *field, const json_t *obj, const char *key)
{
    const char *s = fl_v_require_str(causes, field, obj, key);
    const char *msg = s ? fl_validate_dns1123_label(s) : NULL;
    if (msg)
        fl_v_invalid_str(causes, field, s, msg);
}

/* Whether array `arr` holds, before index `upto`, an element whose `key` equals s. */
static bool seen_before(const json_t *arr, size_t upto, const char *key, const char *s)
{
    for (size_t j = 0; s && j < upto && j < json_array_size(arr); j++) {
        const char *o = fl_v_str(json_array_get(arr, j), key);
        if (o && !strcmp(o, s))
            return true;
    }
    return false;
}

/* ---------------------------------------------------------------------------------
 * Containers (core/validation: validateContainers, validateContainerPorts,
 * ValidateResourceRequirements, ValidateVolumeMounts).
 */
static void container_ports(json_t *causes, const char *base, const json_t *ports)
{
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *port;
    json_array_foreach(ports, i, port) {
        const char *name = fl_v_nonempty(port, "name");
        if (name && port_name(causes, fl_vpath(p, "%s.ports[%zu].name", base, i), name) &&
            seen_before(ports, i, "name", name))
            fl_v_duplicate(causes, p, json_object_get(port, "name"), NULL);
        json_t *cp = json_object_get(port, "containerPort");
        if (!cp || (json_is_integer(cp) && json_integer_value(cp) == 0))
            fl_v_required(causes, fl_vpath(p, "%s.ports[%zu].containerPort", base, i), NULL);
        else
            port_number(causes, fl_vpath(p, "%s.ports[%zu].containerPort", base, i), cp);
        json_t *hp = json_object_get(port, "hostPort");
        if (json_is_integer(hp) && json_integer_value(hp) != 0)
            port_number(causes, fl_vpath(p, "%s.ports[%zu].hostPort", base, i), hp);
        if (fl_v_nonempty(port, "protocol"))
            fl_v_enum(causes, fl_vpath(p, "%s.ports[%zu].protocol", base, i), port, "protocol", PROTOCOLS, false);
    }
}

/* A resource quantity given as a string or a JSON number; false if it does not parse. */
static bool quantity_of(const json_t *v, fl_quantity *q)
{
    char buf[64];
    const char *s = json_string_value(v);
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v)), s = buf;
    else if (json_is_real(v))
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v)), s = buf;
    return s && fl_quantity_parse(s, q) == 0;
}

/* Extended resources ("example.com/gpu": a '/' and not kubernetes.io's) and hugepages can't
 * be overcommitted: their request must equal the limit. Extended ones are whole numbers. */
static bool is_extended(const char *name)
{
    const char *slash = strchr(name, '/');
    if (!slash)
        return false;
    size_t plen = (size_t)(slash - name);
    static const char kio[] = "kubernetes.io";
    size_t kl = sizeof kio - 1;
    return !(plen == kl && !strncmp(name, kio, kl)) &&
           !(plen > kl && name[plen - kl - 1] == '.' && !strncmp(slash - kl, kio, kl));
}

static void resource_name(json_t *causes, const char *field, const char *name)
{
    static const char *const container_std[] = {"cpu", "memory", "ephemeral-storage", NULL};
    if (strchr(name, '/')) {
        fl_v_label_name(causes, field, name);
        return;
    }
    if (!fl_v_in(name, container_std) && strncmp(name, "hugepages-", 10))
        fl_v_invalid_str(causes, field, name, "must be a standard resource for containers");
}

static void resources(json_t *causes, const char *base, const json_t *res)
{
    static const char *const parts[] = {"limits", "requests"};
    char p[FL_VPATH_MAX], qs[48], ls[48];
    json_t *limits = fl_v_obj(res, "limits");
    for (int part = 0; part < 2; part++) {
        const char *name;
        json_t *v;
        json_object_foreach(fl_v_obj(res, parts[part]), name, v) {
            fl_vpath(p, "%s.resources.%s[%s]", base, parts[part], name);
            resource_name(causes, p, name);
            fl_quantity q;
            if (!quantity_of(v, &q)) {
                fl_v_invalid(causes, p, v, MSG_QUANTITY);
                continue;
            }
            fl_quantity_format(&q, qs, sizeof qs);
            if (q.nano < 0)
                fl_v_invalid_str(causes, p, qs, MSG_NONNEG);
            if (is_extended(name) && q.nano % 1000000000 != 0)
                fl_v_invalid_str(causes, p, qs, "must be an integer");
            fl_quantity lq;
            if (part == 0 || !quantity_of(json_object_get(limits, name), &lq))
                continue;
            fl_quantity_format(&lq, ls, sizeof ls);
            bool exact = is_extended(name) || !strncmp(name, "hugepages-", 10);
            char *msg = NULL;
            if (exact && fl_quantity_cmp(&q, &lq) != 0)
                msg = fl_asprintf("must be equal to %s limit of %s", name, ls);
            else if (fl_quantity_cmp(&q, &lq) > 0)
                msg = fl_asprintf("must be less than or equal to %s limit of %s", name, ls);
            if (msg)
                fl_v_invalid_str(causes, p, qs, msg);
            free(msg);
        }
    }
}

/* Does some element of arr (volumes, containers) have this name? */
static bool has_name(const json_t *arr, const char *name)
{
    return name && seen_before(arr, json_array_size(arr), "name", name);
}

/* Does a StatefulSet's volumeClaimTemplates list a claim of this name? Its pods get a
 * volume for each claim, so a volumeMount may name one. */
static bool has_claim(const json_t *claims, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(claims, i, c) {
        const char *n = fl_v_str(fl_v_obj(c, "metadata"), "name");
        if (name && n && !strcmp(n, name))
            return true;
    }
    return false;
}

static void volume_mounts(json_t *causes, const char *base, const json_t *mounts, const json_t *volumes,
                          const json_t *claims)
{
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m) {
        const char *name = fl_v_nonempty(m, "name");
        if (!name)
            fl_v_required(causes, fl_vpath(p, "%s.volumeMounts[%zu].name", base, i), NULL);
        if (!has_name(volumes, name) && !has_claim(claims, name))
            not_found(causes, fl_vpath(p, "%s.volumeMounts[%zu].name", base, i), name);
        const char *path = fl_v_require_str(causes, fl_vpath(p, "%s.volumeMounts[%zu].mountPath", base, i), m,
                                            "mountPath");
        if (path && seen_before(mounts, i, "mountPath", path))
            fl_v_invalid_str(causes, p, path, "must be unique");
    }
}

/* containers or initContainers of spec, at "<base>.containers" / "<base>.initContainers".
 * Names are unique within containers; an init container's name must also differ from every
 * container's (upstream reports it on the init container). */
static void container_list(json_t *causes, const char *base, const json_t *spec, const json_t *claims, bool init)
{
    const char *key = init ? "initContainers" : "containers";
    char p[FL_VPATH_MAX], cbase[FL_VPATH_MAX];
    json_t *list = fl_v_arr(spec, key), *others = fl_v_arr(spec, "containers"), *volumes = fl_v_arr(spec, "volumes");
    if (!init && json_array_size(list) == 0) {
        fl_v_required(causes, fl_vpath(p, "%s.containers", base), NULL);
        return;
    }
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c) {
        fl_vpath(cbase, "%s.%s[%zu]", base, key, i);
        required_label(causes, fl_vpath(p, "%s.name", cbase), c, "name");
        const char *name = fl_v_nonempty(c, "name");
        if (name && (seen_before(list, i, "name", name) || (init && has_name(others, name))))
            fl_v_duplicate(causes, p, json_object_get(c, "name"), NULL);
        fl_v_require_str(causes, fl_vpath(p, "%s.image", cbase), c, "image");
        container_ports(causes, cbase, fl_v_arr(c, "ports"));
        resources(causes, cbase, fl_v_obj(c, "resources"));
        volume_mounts(causes, cbase, fl_v_arr(c, "volumeMounts"), volumes, claims);
        static const char *const pull[] = {"Always", "IfNotPresent", "Never", NULL};
        if (fl_v_nonempty(c, "imagePullPolicy"))
            fl_v_enum(causes, fl_vpath(p, "%s.imagePullPolicy", cbase), c, "imagePullPolicy", pull, false);
    }
}

/* Volumes: names required, DNS-1123 labels, unique; exactly one volume source. */
static void volumes(json_t *causes, const char *base, const json_t *vols)
{
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *v;
    json_array_foreach(vols, i, v) {
        required_label(causes, fl_vpath(p, "%s.volumes[%zu].name", base, i), v, "name");
        const char *name = fl_v_nonempty(v, "name");
        if (name && seen_before(vols, i, "name", name))
            fl_v_duplicate(causes, p, json_object_get(v, "name"), NULL);
        size_t sources = 0;
        const char *k;
        json_t *src;
        json_object_foreach(v, k, src) {
            if (!strcmp(k, "name") || json_is_null(src))
                continue;
            if (++sources == 2)
                fl_v_forbidden(causes, fl_vpath(p, "%s.volumes[%zu].%s", base, i, k),
                               "may not specify more than 1 volume type");
        }
        if (json_is_object(v) && sources == 0)
            fl_v_required(causes, fl_vpath(p, "%s.volumes[%zu]", base, i), "must specify a volume type");
    }
}

/* A PodSpec at base ("spec" for a Pod, "spec.template.spec" for a workload); claims: a
 * StatefulSet's volumeClaimTemplates (NULL otherwise). */
static void pod_spec(json_t *causes, const char *base, const json_t *spec, const json_t *claims)
{
    char p[FL_VPATH_MAX];
    volumes(causes, base, fl_v_arr(spec, "volumes"));
    container_list(causes, base, spec, claims, false);
    container_list(causes, base, spec, claims, true);
    if (fl_v_nonempty(spec, "restartPolicy"))
        fl_v_enum(causes, fl_vpath(p, "%s.restartPolicy", base), spec, "restartPolicy", RESTART_POLICIES, false);
    static const char *const dns[] = {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None", NULL};
    if (fl_v_nonempty(spec, "dnsPolicy"))
        fl_v_enum(causes, fl_vpath(p, "%s.dnsPolicy", base), spec, "dnsPolicy", dns, false);
    json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
    if (json_is_integer(ads) && json_integer_value(ads) < 1)
        fl_v_invalid(causes, fl_vpath(p, "%s.activeDeadlineSeconds", base), ads, "must be between 1 and %lld, inclusive",
                     (long long)2147483647);
    fl_v_labels(causes, fl_vpath(p, "%s.nodeSelector", base), fl_v_obj(spec, "nodeSelector"));
}

/* A PodTemplateSpec at base ("spec.template"): its labels/annotations and its PodSpec, then
 * the restart policies the owning kind allows (absent reads as the default, Always). */
static void pod_template(json_t *causes, const char *base, const json_t *tmpl, const char *const *restart,
                         const char *owner, const json_t *claims)
{
    char p[FL_VPATH_MAX];
    json_t *meta = fl_v_obj(tmpl, "metadata"), *spec = fl_v_obj(tmpl, "spec");
    fl_v_labels(causes, fl_vpath(p, "%s.metadata.labels", base), fl_v_obj(meta, "labels"));
    fl_v_annotations(causes, fl_vpath(p, "%s.metadata.annotations", base), fl_v_obj(meta, "annotations"));
    fl_vpath(p, "%s.spec", base);
    pod_spec(causes, p, spec, claims);
    const char *rp = fl_v_nonempty(spec, "restartPolicy");
    if (!rp)
        rp = "Always";
    if (restart && !fl_v_in(rp, restart)) {
        json_t *v = json_string(rp);
        fl_v_unsupported(causes, fl_vpath(p, "%s.spec.restartPolicy", base), v, restart);
        json_decref(v);
    }
    if (restart == ALWAYS_ONLY && json_object_get(spec, "activeDeadlineSeconds")) {
        char *msg = fl_asprintf("activeDeadlineSeconds in %s is not Supported", owner);
        fl_v_forbidden(causes, fl_vpath(p, "%s.spec.activeDeadlineSeconds", base), msg);
        free(msg);
    }
}

/* ---------------------------------------------------------------------------------
 * Workloads (apps/validation, batch/validation).
 */

/* spec.selector of a workload: required (a DaemonSet's is not: upstream only finds that an
 * absent one matches no labels), a valid LabelSelector, not empty (empty_msg names the kind
 * as upstream words it), and matching spec.template's labels. On update (old != NULL) the
 * selector is immutable in apps/v1. */
static void workload_selector(json_t *causes, const json_t *spec, const json_t *old, const char *empty_msg,
                              bool required)
{
    json_t *sel = json_object_get(spec, "selector");
    if (json_is_null(sel))
        sel = NULL;
    if (!sel) {
        if (required)
            fl_v_required(causes, "spec.selector", NULL);
    } else {
        fl_v_label_selector(causes, "spec.selector", sel);
        if (json_object_size(fl_v_obj(sel, "matchLabels")) + json_array_size(fl_v_arr(sel, "matchExpressions")) == 0)
            fl_v_invalid(causes, "spec.selector", sel, "%s", empty_msg);
    }
    fl_labelsel *ls = NULL;
    char *err = NULL;
    if (sel && fl_labelsel_from_json(sel, &ls, &err) != 0) {
        free(err);
        fl_v_invalid(causes, "spec.selector", sel, "invalid label selector");
    } else if (!sel || !fl_labelsel_empty(ls)) {
        json_t *labels = fl_v_obj(fl_v_obj(fl_v_obj(spec, "template"), "metadata"), "labels");
        if (!ls || !fl_labelsel_match(ls, labels)) {
            char *shown = go_string_map(labels);
            fl_cause_add(causes, "FieldValueInvalid", "spec.template.metadata.labels",
                         "Invalid value: %s: `selector` does not match template `labels`", shown);
            free(shown);
        }
    }
    fl_labelsel_free(ls);
    json_t *old_sel = old ? json_object_get(fl_v_obj(old, "spec"), "selector") : NULL;
    if (old && !json_equal(sel ? sel : json_null(), old_sel ? old_sel : json_null()))
        fl_v_invalid(causes, "spec.selector", sel, "field is immutable");
}

/* The numeric value of an IntOrString (an int, or "NN%"); fallback when absent. */
static long long int_or_percent(const json_t *v, long long fallback)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v))
        return atoll(json_string_value(v));
    return fallback;
}

/* maxSurge / maxUnavailable: a non-negative int or a percent string. Returns true when valid. */
static bool positive_int_or_percent(json_t *causes, const char *field, const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) < 0) {
        fl_v_invalid(causes, field, v, MSG_NONNEG);
        return false;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = strlen(s), d = strspn(s, "0123456789");
        if (d == 0 || d + 1 != n || s[d] != '%') {
            fl_v_invalid(causes, field, v, "%s", MSG_PERCENT);
            return false;
        }
    }
    return true;
}

static void not_over_100(json_t *causes, const char *field, const json_t *v)
{
    if (json_is_string(v) && atoll(json_string_value(v)) > 100)
        fl_v_invalid(causes, field, v, "must not be greater than 100%%");
}

static void deployment_strategy(json_t *causes, const json_t *spec)
{
    static const char *const types[] = {"Recreate", "RollingUpdate", NULL};
    json_t *st = fl_v_obj(spec, "strategy");
    const char *type = fl_v_nonempty(st, "type");
    json_t *ru = json_object_get(st, "rollingUpdate");
    if (json_is_null(ru))
        ru = NULL;
    if (!type || !strcmp(type, "RollingUpdate")) {
        json_t *mu = json_object_get(ru, "maxUnavailable"), *ms = json_object_get(ru, "maxSurge");
        const char *fu = "spec.strategy.rollingUpdate.maxUnavailable", *fs = "spec.strategy.rollingUpdate.maxSurge";
        bool ok = positive_int_or_percent(causes, fu, mu);
        ok &= positive_int_or_percent(causes, fs, ms);
        if (ok && int_or_percent(mu, 25) == 0 && int_or_percent(ms, 25) == 0)
            fl_v_invalid(causes, fu, mu, "may not be 0 when `maxSurge` is 0");
        not_over_100(causes, fu, mu);
    } else if (!strcmp(type, "Recreate")) {
        if (ru)
            fl_v_forbidden(causes, "spec.strategy.rollingUpdate",
                           "may not be specified when strategy `type` is 'Recreate'");
    } else {
        fl_v_unsupported(causes, "spec.strategy", st, types);
    }
}

void fl_validate_deployment(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    json_t *spec = fl_v_obj(obj, "spec");
    nonneg(causes, "spec.replicas", spec, "replicas");
    workload_selector(causes, spec, old, "empty selector is invalid for deployment", true);
    pod_template(causes, "spec.template", fl_v_obj(spec, "template"), ALWAYS_ONLY, "ReplicaSet", NULL); /* upstream's words */
    deployment_strategy(causes, spec);
    nonneg(causes, "spec.minReadySeconds", spec, "minReadySeconds");
    nonneg(causes, "spec.revisionHistoryLimit", spec, "revisionHistoryLimit");
    json_t *pds = json_object_get(spec, "progressDeadlineSeconds");
    nonneg(causes, "spec.progressDeadlineSeconds", spec, "progressDeadlineSeconds");
    json_t *mrs = json_object_get(spec, "minReadySeconds");
    if (json_is_integer(pds) && json_integer_value(pds) >= 0 &&
        json_integer_value(pds) <= (json_is_integer(mrs) ? json_integer_value(mrs) : 0))
        fl_v_invalid(causes, "spec.progressDeadlineSeconds", pds, "must be greater than minReadySeconds");
}

void fl_validate_replicaset(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    json_t *spec = fl_v_obj(obj, "spec");
    nonneg(causes, "spec.replicas", spec, "replicas");
    nonneg(causes, "spec.minReadySeconds", spec, "minReadySeconds");
    /* upstream words the ReplicaSet's empty-selector message as a deployment's */
    workload_selector(causes, spec, old, "empty selector is invalid for deployment", true);
    pod_template(causes, "spec.template", fl_v_obj(spec, "template"), ALWAYS_ONLY, "ReplicaSet", NULL);
}

/* On update only replicas, ordinals, template, updateStrategy, persistentVolumeClaimRetentionPolicy
 * and minReadySeconds may change. An absent podManagementPolicy or revisionHistoryLimit
 * reads as its default, as upstream compares defaulted objects. */
static void statefulset_update(json_t *causes, const json_t *spec, const json_t *old_spec)
{
    static const char *const mutable[] = {"replicas", "ordinals", "template", "updateStrategy",
                                          "persistentVolumeClaimRetentionPolicy", "minReadySeconds", NULL};
    json_t *a = json_is_object(spec) ? json_deep_copy(spec) : json_object();
    json_t *b = json_is_object(old_spec) ? json_deep_copy(old_spec) : json_object();
    json_t *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; mutable[j]; j++)
            json_object_del(both[i], mutable[j]);
        if (!fl_v_nonempty(both[i], "podManagementPolicy"))
            json_object_set_new(both[i], "podManagementPolicy", json_string("OrderedReady"));
        if (!json_is_integer(json_object_get(both[i], "revisionHistoryLimit")))
            json_object_set_new(both[i], "revisionHistoryLimit", json_integer(10));
        const char *key;
        void *tmp;
        json_t *v;
        json_object_foreach_safe(both[i], tmp, key, v) {
            if (json_is_null(v))
                json_object_del(both[i], key);
        }
    }
    if (!json_equal(a, b))
        fl_v_forbidden(causes, "spec",
                       "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                       "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden");
    json_decref(a);
    json_decref(b);
}

void fl_validate_statefulset(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    json_t *spec = fl_v_obj(obj, "spec");
    const char *pmp = fl_v_nonempty(spec, "podManagementPolicy");
    if (pmp && strcmp(pmp, "OrderedReady") && strcmp(pmp, "Parallel"))
        fl_v_invalid_str(causes, "spec.podManagementPolicy", pmp, "must be 'OrderedReady' or 'Parallel'");
    json_t *us = fl_v_obj(spec, "updateStrategy");
    const char *ut = fl_v_nonempty(us, "type");
    json_t *ru = json_object_get(us, "rollingUpdate");
    if (ut && strcmp(ut, "RollingUpdate") && strcmp(ut, "OnDelete"))
        fl_v_invalid(causes, "spec.updateStrategy", us, "must be 'RollingUpdate' or 'OnDelete'");
    else if (ut && !strcmp(ut, "OnDelete") && ru && !json_is_null(ru))
        fl_v_invalid(causes, "spec.updateStrategy.rollingUpdate", ru, "only allowed for updateStrategy 'RollingUpdate'");
    nonneg(causes, "spec.updateStrategy.rollingUpdate.partition", ru, "partition");
    json_t *mu = json_object_get(ru, "maxUnavailable");
    const char *fu = "spec.updateStrategy.rollingUpdate.maxUnavailable";
    if (mu && !json_is_null(mu) && positive_int_or_percent(causes, fu, mu) && int_or_percent(mu, 1) == 0)
        fl_v_invalid(causes, fu, mu, "cannot be 0");
    not_over_100(causes, fu, mu);
    const char *svc = fl_v_nonempty(spec, "serviceName");
    const char *msg = svc ? fl_validate_dns1123_label(svc) : NULL;
    if (msg)
        fl_v_invalid_str(causes, "spec.serviceName", svc, msg);
    nonneg(causes, "spec.replicas", spec, "replicas");
    nonneg(causes, "spec.minReadySeconds", spec, "minReadySeconds");
    nonneg(causes, "spec.revisionHistoryLimit", spec, "revisionHistoryLimit");
    workload_selector(causes, spec, old, "empty selector is invalid for statefulset", true);
    if (old)
        statefulset_update(causes, spec, fl_v_obj(old, "spec"));
    pod_template(causes, "spec.template", fl_v_obj(spec, "template"), ALWAYS_ONLY, "StatefulSet",
                 fl_v_arr(spec, "volumeClaimTemplates"));
}

void fl_validate_daemonset(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    static const char *const types[] = {"RollingUpdate", "OnDelete", NULL};
    json_t *spec = fl_v_obj(obj, "spec");
    workload_selector(causes, spec, old, "empty selector is invalid for daemonset", false);
    pod_template(causes, "spec.template", fl_v_obj(spec, "template"), ALWAYS_ONLY, "DaemonSet", NULL);
    nonneg(causes, "spec.minReadySeconds", spec, "minReadySeconds");
    nonneg(causes, "spec.revisionHistoryLimit", spec, "revisionHistoryLimit");
    json_t *us = fl_v_obj(spec, "updateStrategy");
    const char *ut = fl_v_nonempty(us, "type");
    if (ut && !fl_v_in(ut, types)) {
        fl_v_unsupported(causes, "spec.updateStrategy", us, types);
    } else if (!ut || !strcmp(ut, "RollingUpdate")) {
        /* defaults: maxUnavailable 1, maxSurge 0; exactly one of them must be non-zero */
        json_t *ru = fl_v_obj(us, "rollingUpdate");
        json_t *mu = json_object_get(ru, "maxUnavailable"), *ms = json_object_get(ru, "maxSurge");
        const char *fu = "spec.updateStrategy.rollingUpdate.maxUnavailable";
        const char *fs = "spec.updateStrategy.rollingUpdate.maxSurge";
        bool ok = positive_int_or_percent(causes, fu, mu);
        ok &= positive_int_or_percent(causes, fs, ms);
        not_over_100(causes, fu, mu);
        not_over_100(causes, fs, ms);
        bool has_u = int_or_percent(mu, 1) != 0, has_s = int_or_percent(ms, 0) != 0;
        if (ok && has_u && has_s)
            fl_v_invalid(causes, fs, ms, "may not be set when maxUnavailable is non-zero");
        else if (ok && !has_u && !has_s)
            fl_v_required(causes, fu, "cannot be 0 when maxSurge is 0");
    }
}

/* A JobSpec at base ("spec", or "spec.jobTemplate.spec" inside a CronJob). */
static void job_spec(json_t *causes, const char *base, const json_t *spec, const json_t *old_spec)
{
    static const char *const keys[] = {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                                       "ttlSecondsAfterFinished", NULL};
    static const char *const modes[] = {"NonIndexed", "Indexed", NULL};
    char p[FL_VPATH_MAX];
    for (size_t i = 0; keys[i]; i++)
        nonneg(causes, fl_vpath(p, "%s.%s", base, keys[i]), spec, keys[i]);
    if (fl_v_nonempty(spec, "completionMode"))
        fl_v_enum(causes, fl_vpath(p, "%s.completionMode", base), spec, "completionMode", modes, false);
    json_t *tmpl = fl_v_obj(spec, "template");
    if (json_is_true(json_object_get(spec, "manualSelector"))) {
        /* a user-chosen selector follows the workload rules; otherwise the server makes one */
        json_t *sel = json_object_get(spec, "selector");
        if (!sel || json_is_null(sel)) {
            fl_v_required(causes, fl_vpath(p, "%s.selector", base), NULL);
        } else {
            fl_labelsel *ls = NULL;
            char *err = NULL;
            fl_v_label_selector(causes, fl_vpath(p, "%s.selector", base), sel);
            if (fl_labelsel_from_json(sel, &ls, &err) == 0 &&
                !fl_labelsel_match(ls, fl_v_obj(fl_v_obj(tmpl, "metadata"), "labels"))) {
                char *shown = go_string_map(fl_v_obj(fl_v_obj(tmpl, "metadata"), "labels"));
                fl_cause_add(causes, "FieldValueInvalid", fl_vpath(p, "%s.template.metadata.labels", base),
                             "Invalid value: %s: `selector` does not match template `labels`", shown);
                free(shown);
            }
            free(err);
            fl_labelsel_free(ls);
        }
    }
    pod_template(causes, fl_vpath(p, "%s.template", base), tmpl, JOB_RESTART_POLICIES, "Job", NULL);
    (void)old_spec;
}

void fl_validate_job(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    job_spec(causes, "spec", fl_v_obj(obj, "spec"), old ? fl_v_obj(old, "spec") : NULL);
}

/* ---------------------------------------------------------------------------------
 * Cron schedules, as the CronJob controller's parser (robfig/cron's standard parser)
 * reads them: five fields (minute hour day-of-month month day-of-week) or a descriptor
 * (@hourly, @every 1h30m, ...). Errors carry the parser's own text, which upstream puts
 * in the cause.
 */
typedef struct cron_bounds {
    unsigned min, max;
    const char *const *names; /* names[i] is the value min+i ... or NULL */
    unsigned names_base;
} cron_bounds;

static const char *const MONTHS[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                     "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const DAYS[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

/* strconv.Atoi plus the parser's "negative number" rule, on s[0..n). */
static char *cron_int(const char *s, size_t n, unsigned *out)
{
    size_t i = (n && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    bool digits = i < n;
    char num[16];
    for (size_t j = i; j < n; j++)
        if (s[j] < '0' || s[j] > '9')
            digits = false;
    if (!digits)
        return fl_asprintf("failed to parse int from %.*s: strconv.Atoi: parsing \"%.*s\": invalid syntax", (int)n, s,
                           (int)n, s);
    if (n - i > 9)
        return fl_asprintf("failed to parse int from %.*s: strconv.Atoi: parsing \"%.*s\": value out of range", (int)n,
                           s, (int)n, s);
    memcpy(num, s, n); /* n <= 10 here; s itself runs on into the next field */
    num[n] = '\0';
    long v = strtol(num, NULL, 10);
    if (v < 0)
        return fl_asprintf("negative number (%ld) not allowed: %.*s", v, (int)n, s);
    *out = (unsigned)v;
    return NULL;
}

static char *cron_int_or_name(const char *s, size_t n, const cron_bounds *b, unsigned *out)
{
    for (size_t i = 0; b->names && b->names[i]; i++)
        if (n == 3 && !strncasecmp(s, b->names[i], 3)) {
            *out = b->names_base + (unsigned)i;
            return NULL;
        }
    return cron_int(s, n, out);
}

/* One comma-separated piece: "*", "5", "1-5", "*\/15", "10/5", "mon-fri". */
static char *cron_range(const char *s, size_t n, const cron_bounds *b)
{
    const char *slash = memchr(s, '/', n);
    size_t rn = slash ? (size_t)(slash - s) : n;
    if (slash && memchr(slash + 1, '/', n - rn - 1))
        return fl_asprintf("too many slashes: %.*s", (int)n, s);
    unsigned start, end, step = 1;
    const char *hy = memchr(s, '-', rn);
    char *err = NULL;
    if ((rn == 1 && (s[0] == '*' || s[0] == '?'))) {
        start = b->min;
        end = b->max;
    } else {
        size_t ln = hy ? (size_t)(hy - s) : rn;
        if ((err = cron_int_or_name(s, ln, b, &start)))
            return err;
        end = start;
        if (hy) {
            size_t hn = rn - ln - 1;
            if (memchr(hy + 1, '-', hn))
                return fl_asprintf("too many hyphens: %.*s", (int)n, s);
            if ((err = cron_int_or_name(hy + 1, hn, b, &end)))
                return err;
        }
    }
    if (slash) {
        if ((err = cron_int(slash + 1, n - rn - 1, &step)))
            return err;
        if (!hy && !(rn == 1 && (s[0] == '*' || s[0] == '?')))
            end = b->max; /* "N/step" means "N-max/step" */
    }
    if (start < b->min)
        return fl_asprintf("beginning of range (%u) below minimum (%u): %.*s", start, b->min, (int)n, s);
    if (end > b->max)
        return fl_asprintf("end of range (%u) above maximum (%u): %.*s", end, b->max, (int)n, s);
    if (start > end)
        return fl_asprintf("beginning of range (%u) beyond end of range (%u): %.*s", start, end, (int)n, s);
    if (step == 0)
        return fl_asprintf("step of range should be a positive number: %.*s", (int)n, s);
    return NULL;
}

static char *cron_field(const char *s, size_t n, const cron_bounds *b)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        if (j > i) {
            char *err = cron_range(s + i, j - i, b);
            if (err)
                return err;
        }
        i = j + 1;
    }
    return NULL;
}

/* Go's time.ParseDuration, for "@every <d>": [-+]?(number unit)+ or "0". */
static bool go_duration_ok(const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s", "m", "h", NULL};
    if (*s == '-' || *s == '+')
        s++;
    if (!strcmp(s, "0"))
        return true;
    if (!*s)
        return false;
    while (*s) {
        size_t d = strspn(s, "0123456789"), f = 0;
        if (s[d] == '.')
            f = 1 + strspn(s + d + 1, "0123456789");
        if (d == 0 && f <= 1)
            return false;
        s += d + f;
        size_t best = 0;
        for (size_t i = 0; units[i]; i++) {
            size_t ul = strlen(units[i]);
            if (!strncmp(s, units[i], ul) && ul > best) /* longest match: "ms" before "m" */
                best = ul;
        }
        if (!best)
            return false;
        s += best;
    }
    return true;
}

/* NULL if the schedule parses, else the parser's error text (caller frees). */
static char *cron_parse(const char *spec)
{
    static const cron_bounds bounds[5] = {
        {0, 59, NULL, 0}, {0, 23, NULL, 0}, {1, 31, NULL, 0}, {1, 12, MONTHS, 1}, {0, 6, DAYS, 0}};
    static const char *const descriptors[] = {"@yearly", "@annually", "@monthly", "@weekly",
                                              "@daily",  "@midnight", "@hourly",  NULL};
    if (!strncmp(spec, "TZ=", 3) || !strncmp(spec, "CRON_TZ=", 8)) {
        const char *sp = strchr(spec, ' ');
        spec = sp ? sp + 1 : spec + strlen(spec);
    }
    if (spec[0] == '@') {
        if (fl_v_in(spec, descriptors))
            return NULL;
        if (!strncmp(spec, "@every ", 7)) {
            if (go_duration_ok(spec + 7))
                return NULL;
            return fl_asprintf("failed to parse duration %s: time: invalid duration \"%s\"", spec, spec + 7);
        }
        return fl_asprintf("unrecognized descriptor: %s", spec);
    }
    const char *start[8];
    size_t len[8], count = 0;
    for (const char *s = spec; *s;) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
            s++;
        if (!*s)
            break;
        const char *e = s + strcspn(s, " \t\n\r\v\f");
        if (count < 8) {
            start[count] = s;
            len[count] = (size_t)(e - s);
        }
        count++;
        s = e;
    }
    if (count != 5) {
        /* Go prints the []string as [a b c] */
        char *joined = fl_strdup("");
        for (size_t i = 0; i < count && i < 8; i++) {
            char *next = fl_asprintf("%s%s%.*s", joined, i ? " " : "", (int)len[i], start[i]);
            free(joined);
            joined = next;
        }
        char *err = fl_asprintf("expected exactly 5 fields, found %zu: [%s%s]", count, joined, count > 8 ? " ..." : "");
        free(joined);
        return err;
    }
    for (size_t i = 0; i < 5; i++) {
        char *err = cron_field(start[i], len[i], &bounds[i]);
        if (err)
            return err;
    }
    return NULL;
}

void fl_validate_cronjob(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    static const char *const policies[] = {"Allow", "Forbid", "Replace", NULL};
    json_t *spec = fl_v_obj(obj, "spec"), *old_spec = old ? fl_v_obj(old, "spec") : NULL;
    const char *name = fl_v_nonempty(fl_v_obj(obj, "metadata"), "name");
    /* the controller appends "-<11 chars>" to name its Jobs, which must stay DNS-1035 labels */
    if (!old && name && strlen(name) > 52)
        fl_v_invalid_str(causes, "metadata.name", name, "must be no more than 52 characters");
    const char *sched = fl_v_require_str(causes, "spec.schedule", spec, "schedule");
    if (sched) {
        char *err = cron_parse(sched);
        if (err)
            fl_v_invalid_str(causes, "spec.schedule", sched, err);
        free(err);
        const char *old_sched = fl_v_str(old_spec, "schedule");
        bool allow_tz = old_sched && strstr(old_sched, "TZ");
        if (!allow_tz && strstr(sched, "TZ"))
            fl_v_invalid_str(causes, "spec.schedule", sched,
                             "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
        else if (allow_tz && strstr(sched, "TZ") && fl_v_nonempty(spec, "timeZone"))
            fl_v_invalid_str(causes, "spec.schedule", sched, "cannot use both timeZone field and TZ or CRON_TZ in schedule");
    }
    nonneg(causes, "spec.startingDeadlineSeconds", spec, "startingDeadlineSeconds");
    if (fl_v_nonempty(spec, "concurrencyPolicy"))
        fl_v_enum(causes, "spec.concurrencyPolicy", spec, "concurrencyPolicy", policies, false);
    nonneg(causes, "spec.successfulJobsHistoryLimit", spec, "successfulJobsHistoryLimit");
    nonneg(causes, "spec.failedJobsHistoryLimit", spec, "failedJobsHistoryLimit");
    json_t *jt = fl_v_obj(spec, "jobTemplate");
    json_t *jt_meta = fl_v_obj(jt, "metadata");
    fl_v_labels(causes, "spec.jobTemplate.metadata.labels", fl_v_obj(jt_meta, "labels"));
    fl_v_annotations(causes, "spec.jobTemplate.metadata.annotations", fl_v_obj(jt_meta, "annotations"));
    job_spec(causes, "spec.jobTemplate.spec", fl_v_obj(jt, "spec"), NULL);
}

/* ---------------------------------------------------------------------------------
 * Pod, Service, ConfigMap, Secret (core/validation).
 */
void fl_validate_pod(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    (void)old;
    pod_spec(causes, "spec", fl_v_obj(obj, "spec"), NULL);
}

static void service_ports(json_t *causes, const json_t *spec, const char *type)
{
    char p[FL_VPATH_MAX];
    json_t *ports = fl_v_arr(spec, "ports");
    size_t n = json_array_size(ports), i;
    bool node_ports = type && (!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer"));
    json_t *port;
    json_array_foreach(ports, i, port) {
        const char *name = fl_v_nonempty(port, "name");
        fl_vpath(p, "spec.ports[%zu].name", i);
        if (n > 1 && !name) {
            fl_v_required(causes, p, NULL);
        } else if (name) {
            const char *msg = fl_validate_dns1123_label(name);
            if (msg)
                fl_v_invalid_str(causes, p, name, msg);
            if (seen_before(ports, i, "name", name))
                fl_v_duplicate(causes, p, json_object_get(port, "name"), NULL);
        }
        json_t *pn = json_object_get(port, "port");
        fl_vpath(p, "spec.ports[%zu].port", i);
        if (json_is_integer(pn)) {
            port_number(causes, p, pn);
        } else if (!pn || json_is_null(pn)) { /* an absent port is 0 upstream */
            json_t *zero = json_integer(0);
            port_number(causes, p, zero);
            json_decref(zero);
        }
        if (fl_v_nonempty(port, "protocol"))
            fl_v_enum(causes, fl_vpath(p, "spec.ports[%zu].protocol", i), port, "protocol", PROTOCOLS, false);
        json_t *tp = json_object_get(port, "targetPort");
        fl_vpath(p, "spec.ports[%zu].targetPort", i);
        if (json_is_integer(tp) && json_integer_value(tp) != 0)
            port_number(causes, p, tp);
        else if (json_is_string(tp))
            port_name(causes, p, json_string_value(tp));
        json_t *np = json_object_get(port, "nodePort");
        fl_vpath(p, "spec.ports[%zu].nodePort", i);
        if (json_is_integer(np) && json_integer_value(np) != 0) {
            json_int_t v = json_integer_value(np);
            if (!node_ports)
                fl_v_forbidden(causes, p, "may not be used when `type` is 'ClusterIP'");
            else if (v < 30000 || v > 32767)
                fl_v_invalid(causes, p, np,
                             "provided port is not in the valid range. The range of valid ports is 30000-32767");
        }
        /* (protocol, port) pairs are unique */
        const char *proto = fl_v_nonempty(port, "protocol");
        for (size_t j = 0; json_is_integer(pn) && j < i; j++) {
            json_t *o = json_array_get(ports, j);
            const char *oproto = fl_v_nonempty(o, "protocol");
            if (json_equal(json_object_get(o, "port"), pn) && !strcmp(proto ? proto : "TCP", oproto ? oproto : "TCP")) {
                json_t *key = json_pack("{s:s, s:O}", "protocol", proto ? proto : "TCP", "port", pn);
                fl_v_duplicate(causes, fl_vpath(p, "spec.ports[%zu]", i), key, NULL);
                json_decref(key);
                break;
            }
        }
    }
}

void fl_validate_service(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    (void)old;
    static const char *const types[] = {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort", NULL};
    json_t *spec = fl_v_obj(obj, "spec");
    const char *type = fl_v_nonempty(spec, "type");
    bool headless = fl_v_str(spec, "clusterIP") && !strcmp(fl_v_str(spec, "clusterIP"), "None");
    bool external = type && !strcmp(type, "ExternalName");
    if (json_array_size(fl_v_arr(spec, "ports")) == 0 && !headless && !external)
        fl_v_required(causes, "spec.ports", NULL);
    if (external) {
        const char *cname = fl_v_nonempty(spec, "externalName");
        if (!cname) {
            fl_v_required(causes, "spec.externalName", NULL);
        } else {
            /* a trailing dot marks the name fully qualified */
            char *trimmed = fl_strdup(cname);
            size_t n = strlen(trimmed);
            if (n && trimmed[n - 1] == '.')
                trimmed[n - 1] = '\0';
            const char *msg = trimmed[0] ? fl_validate_dns1123_subdomain(trimmed) : NULL;
            if (!trimmed[0])
                fl_v_required(causes, "spec.externalName", NULL);
            else if (msg)
                fl_v_invalid_str(causes, "spec.externalName", trimmed, msg);
            free(trimmed);
        }
    }
    if (type)
        fl_v_enum(causes, "spec.type", spec, "type", types, false);
    service_ports(causes, spec, type ? type : "ClusterIP");
    fl_v_labels(causes, "spec.selector", fl_v_obj(spec, "selector"));
}

/* A ConfigMap/Secret data key (validation.IsConfigMapKey): one cause per broken rule. */
static void config_key(json_t *causes, const char *field, const char *key)
{
    size_t n = strlen(key);
    if (n > 253)
        fl_v_invalid_str(causes, field, key, "must be no more than 253 characters");
    if (n == 0 || strspn(key, "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != n)
        fl_v_invalid_str(causes, field, key, MSG_CONFIG_KEY);
    if (!strcmp(key, "."))
        fl_v_invalid_str(causes, field, key, "must not be '.'");
    else if (!strcmp(key, ".."))
        fl_v_invalid_str(causes, field, key, "must not be '..'");
    else if (!strncmp(key, "..", 2))
        fl_v_invalid_str(causes, field, key, "must not start with '..'");
}

void fl_validate_configmap(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    (void)old;
    char p[FL_VPATH_MAX];
    json_t *data = fl_v_obj(obj, "data"), *bin = fl_v_obj(obj, "binaryData");
    const char *key;
    json_t *v;
    json_object_foreach(data, key, v) {
        config_key(causes, fl_vpath(p, "data[%s]", key), key);
        if (json_object_get(bin, key))
            fl_v_invalid_str(causes, p, key, "duplicate of key present in binaryData");
    }
    json_object_foreach(bin, key, v) {
        config_key(causes, fl_vpath(p, "binaryData[%s]", key), key);
        if (json_object_get(data, key))
            fl_v_invalid_str(causes, p, key, "duplicate of key present in data");
    }
}

/* Is data[key] (or stringData[key], for a write not yet normalised) present? */
static bool secret_has(const json_t *obj, const char *key)
{
    return json_object_get(fl_v_obj(obj, "data"), key) || json_object_get(fl_v_obj(obj, "stringData"), key);
}

static void secret_require(json_t *causes, const json_t *obj, const char *key)
{
    char p[FL_VPATH_MAX];
    if (!secret_has(obj, key))
        fl_v_required(causes, fl_vpath(p, "data[%s]", key), NULL);
}

void fl_validate_secret(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    char p[FL_VPATH_MAX];
    const char *key;
    json_t *v;
    json_object_foreach(fl_v_obj(obj, "data"), key, v) config_key(causes, fl_vpath(p, "data[%s]", key), key);
    json_object_foreach(fl_v_obj(obj, "stringData"), key, v) config_key(causes, fl_vpath(p, "data[%s]", key), key);
    const char *type = fl_v_nonempty(obj, "type");
    if (!type)
        type = "Opaque";
    if (!strcmp(type, "kubernetes.io/tls")) {
        secret_require(causes, obj, "tls.crt");
        secret_require(causes, obj, "tls.key");
    } else if (!strcmp(type, "kubernetes.io/dockerconfigjson")) {
        secret_require(causes, obj, ".dockerconfigjson");
    } else if (!strcmp(type, "kubernetes.io/dockercfg")) {
        secret_require(causes, obj, ".dockercfg");
    } else if (!strcmp(type, "kubernetes.io/basic-auth")) {
        if (!secret_has(obj, "username") && !secret_has(obj, "password")) {
            secret_require(causes, obj, "username");
            secret_require(causes, obj, "password");
        }
    } else if (!strcmp(type, "kubernetes.io/ssh-auth")) {
        secret_require(causes, obj, "ssh-privatekey");
    } else if (!strcmp(type, "kubernetes.io/service-account-token")) {
        json_t *ann = fl_v_obj(fl_v_obj(obj, "metadata"), "annotations");
        if (!fl_v_nonempty(ann, "kubernetes.io/service-account.name"))
            fl_v_required(causes, "metadata.annotations[kubernetes.io/service-account.name]", NULL);
    }
    const char *old_type = old ? fl_v_nonempty(old, "type") : NULL;
    if (old && strcmp(type, old_type ? old_type : "Opaque"))
        fl_v_invalid_str(causes, "type", type, "field is immutable");
}

/* As upstream's ValidateControllerRevision(Update), and the number required: the data a
 * revision records is what it is for, so it must be there and never changes; only the
 * number moves (a restored revision is renumbered, docs/rollouts.md). */
void fl_validate_controller_revision(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    json_t *data = json_object_get(obj, "data");
    if (!data || json_is_null(data))
        fl_v_required(causes, "data", NULL);
    /* upstream's Go decoding makes a missing number 0; its schema says required, and a
     * revision with no number would sort nowhere in a history: refused */
    json_t *rev = json_object_get(obj, "revision");
    if (!rev || json_is_null(rev))
        fl_v_required(causes, "revision", NULL);
    else if (json_is_integer(rev) && json_integer_value(rev) < 0)
        fl_v_invalid(causes, "revision", rev, "must be greater than or equal to 0");
    if (old && !json_equal(data, json_object_get(old, "data")))
        fl_v_invalid(causes, "data", data, "field is immutable");
}
