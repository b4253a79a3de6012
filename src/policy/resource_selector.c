/* resource_selector.c - ResourceSelector matching, policy precedence and preemption
 * (contract in resource_selector.h).
 *
 * Everything here reads JSON directly and parses a selector's labelSelector on each
 * call: the detector evaluates a handful of policies per template event, so caching
 * compiled selectors would cost more in invalidation logic than it saves.
 *
 * Errors are built from the innermost field outwards: the selector code says
 * "kind: Required value", the list code prefixes "resourceSelectors[2].", and the
 * policy code prefixes "PropagationPolicy ns/name: spec.". Each layer frees the
 * message it wraps. */
#include "policy/resource_selector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/selector.h"

/* Replace *err by prefix + *err. */
static void wrap_err(char **err, const char *fmt_prefix, const char *a, const char *b)
{
    char *p = fl_asprintf(fmt_prefix, a, b);
    char *n = fl_asprintf("%s%s", p, *err ? *err : "Invalid value");
    free(p);
    free(*err);
    *err = n;
}

/* --------------------------------------------------------------- object -- */

/* The template fields a selector reads, borrowed from the object. */
struct obj_view {
    const char *api_version;
    const char *kind;
    const char *ns; /* "" for cluster-scoped */
    const char *name;
    const json_t *labels; /* NULL when none */
};

static int view_object(const json_t *o, struct obj_view *v, char **err)
{
    memset(v, 0, sizeof(*v));
    if (!json_is_object(o)) {
        *err = fl_strdup("template: Invalid value: must be an object");
        return FL_EINVAL;
    }
    json_t *av = json_object_get(o, "apiVersion");
    json_t *k = json_object_get(o, "kind");
    json_t *md = json_object_get(o, "metadata");
    if (!json_is_string(av)) {
        *err = fl_strdup("template apiVersion: Required value");
        return FL_EINVAL;
    }
    if (!json_is_string(k)) {
        *err = fl_strdup("template kind: Required value");
        return FL_EINVAL;
    }
    if (!json_is_object(md)) {
        *err = fl_strdup("template metadata: Required value");
        return FL_EINVAL;
    }
    json_t *name = json_object_get(md, "name");
    json_t *ns = json_object_get(md, "namespace");
    json_t *labels = json_object_get(md, "labels");
    if (!json_is_string(name)) {
        *err = fl_strdup("template metadata.name: Required value");
        return FL_EINVAL;
    }
    if (ns && !json_is_null(ns) && !json_is_string(ns)) {
        *err = fl_strdup("template metadata.namespace: Invalid value: must be a string");
        return FL_EINVAL;
    }
    if (labels && !json_is_null(labels) && !json_is_object(labels)) {
        *err = fl_strdup("template metadata.labels: Invalid value: must be an object");
        return FL_EINVAL;
    }
    v->api_version = json_string_value(av);
    v->kind = json_string_value(k);
    v->name = json_string_value(name);
    v->ns = json_is_string(ns) ? json_string_value(ns) : "";
    v->labels = json_is_object(labels) ? labels : NULL;
    return 0;
}

/* ------------------------------------------------------------- selector -- */

/* Optional string field of a selector; absent/null = "". */
static int sel_string(const json_t *sel, const char *field, bool required, const char **out, char **err)
{
    json_t *v = json_object_get(sel, field);
    *out = "";
    if (!v || json_is_null(v)) {
        if (required) {
            *err = fl_asprintf("%s: Required value", field);
            return FL_EINVAL;
        }
        return 0;
    }
    if (!json_is_string(v)) {
        *err = fl_asprintf("%s: Invalid value: must be a string", field);
        return FL_EINVAL;
    }
    if (required && json_string_length(v) == 0) {
        *err = fl_asprintf("%s: Required value", field);
        return FL_EINVAL;
    }
    *out = json_string_value(v);
    return 0;
}

static int level_of(const json_t *sel, const struct obj_view *o, const char *policy_ns, fl_policy_match_level *level,
                    char **err)
{
    *level = FL_POLICY_MATCH_NONE;
    if (!json_is_object(sel)) {
        *err = fl_strdup("Invalid value: must be a resource selector object");
        return FL_EINVAL;
    }
    const char *av, *kind, *ns, *name;
    int rc = sel_string(sel, "apiVersion", true, &av, err);
    if (rc == 0)
        rc = sel_string(sel, "kind", true, &kind, err);
    if (rc == 0)
        rc = sel_string(sel, "namespace", false, &ns, err);
    if (rc == 0)
        rc = sel_string(sel, "name", false, &name, err);
    if (rc)
        return rc;
    /* Parse the label selector before deciding, so a malformed one is reported even
     * when apiVersion/kind already rule the object out. */
    json_t *ls = json_object_get(sel, "labelSelector");
    bool has_ls = ls && !json_is_null(ls);
    fl_labelsel *lsel = NULL;
    if (has_ls) {
        char *lerr = NULL;
        rc = fl_labelsel_from_json(ls, &lsel, &lerr);
        if (rc) {
            *err = fl_asprintf("labelSelector.%s", lerr ? lerr : "Invalid value");
            free(lerr);
            return rc;
        }
    }
    if (!*ns && policy_ns)
        ns = policy_ns;
    if (strcmp(av, o->api_version) != 0 || strcmp(kind, o->kind) != 0 || (*ns && strcmp(ns, o->ns) != 0))
        goto done;
    if (*name) {
        /* a name decides alone; the label selector is ignored */
        if (strcmp(name, o->name) == 0)
            *level = FL_POLICY_MATCH_NAME;
        goto done;
    }
    if (!has_ls)
        *level = FL_POLICY_MATCH_ALL;
    else if (fl_labelsel_match(lsel, o->labels))
        *level = FL_POLICY_MATCH_LABELSELECTOR;
done:
    fl_labelsel_free(lsel);
    return 0;
}

int fl_policy_selector_level(const json_t *selector, const json_t *object, const char *policy_ns,
                             fl_policy_match_level *level, char **err)
{
    *level = FL_POLICY_MATCH_NONE;
    *err = NULL;
    struct obj_view o;
    int rc = view_object(object, &o, err);
    if (rc == 0)
        rc = level_of(selector, &o, policy_ns, level, err);
    return rc;
}

int fl_policy_selector_match(const json_t *selector, const json_t *object, const char *policy_ns, bool *match,
                             char **err)
{
    fl_policy_match_level l;
    int rc = fl_policy_selector_level(selector, object, policy_ns, &l, err);
    *match = l != FL_POLICY_MATCH_NONE;
    return rc;
}

static int list_level(const json_t *selectors, const struct obj_view *o, const char *policy_ns,
                      fl_policy_match_level *level, char **err)
{
    *level = FL_POLICY_MATCH_NONE;
    if (!selectors || json_is_null(selectors))
        return 0;
    if (!json_is_array(selectors)) {
        *err = fl_strdup("resourceSelectors: Invalid value: must be a list");
        return FL_EINVAL;
    }
    for (size_t i = 0; i < json_array_size(selectors); i++) {
        fl_policy_match_level l;
        int rc = level_of(json_array_get(selectors, i), o, policy_ns, &l, err);
        if (rc) {
            char idx[32];
            snprintf(idx, sizeof idx, "%zu", i);
            wrap_err(err, "resourceSelectors[%s]%s", idx, strncmp(*err, "Invalid", 7) == 0 ? ": " : ".");
            *level = FL_POLICY_MATCH_NONE;
            return rc;
        }
        if (l > *level)
            *level = l;
    }
    return 0;
}

int fl_policy_selectors_level(const json_t *selectors, const json_t *object, const char *policy_ns,
                              fl_policy_match_level *level, char **err)
{
    *level = FL_POLICY_MATCH_NONE;
    *err = NULL;
    struct obj_view o;
    int rc = view_object(object, &o, err);
    if (rc == 0)
        rc = list_level(selectors, &o, policy_ns, level, err);
    return rc;
}

/* --------------------------------------------------------------- policy -- */

enum pkind { PK_OTHER, PK_PP, PK_CPP, PK_OP, PK_COP };

struct policy_view {
    enum pkind kind;
    const char *kind_name;
    const char *ns;   /* "" for cluster-scoped kinds */
    const char *name;
    const json_t *spec;
    bool deleting;
};

static enum pkind kind_of(const char *k)
{
    if (strcmp(k, "PropagationPolicy") == 0)
        return PK_PP;
    if (strcmp(k, "ClusterPropagationPolicy") == 0)
        return PK_CPP;
    if (strcmp(k, "OverridePolicy") == 0)
        return PK_OP;
    if (strcmp(k, "ClusterOverridePolicy") == 0)
        return PK_COP;
    return PK_OTHER;
}

static int view_policy(const json_t *p, struct policy_view *v, char **err)
{
    memset(v, 0, sizeof(*v));
    v->ns = "";
    v->name = "";
    if (!json_is_object(p)) {
        *err = fl_strdup("policy: Invalid value: must be an object");
        return FL_EINVAL;
    }
    json_t *k = json_object_get(p, "kind");
    if (!json_is_string(k) || (v->kind = kind_of(json_string_value(k))) == PK_OTHER) {
        *err = fl_strdup("policy kind: Unsupported value: must be PropagationPolicy, ClusterPropagationPolicy, "
                         "OverridePolicy or ClusterOverridePolicy");
        return FL_EINVAL;
    }
    v->kind_name = json_string_value(k);
    json_t *md = json_object_get(p, "metadata");
    json_t *name = json_is_object(md) ? json_object_get(md, "name") : NULL;
    if (!json_is_string(name)) {
        *err = fl_asprintf("%s: metadata.name: Required value", v->kind_name);
        return FL_EINVAL;
    }
    v->name = json_string_value(name);
    if (v->kind == PK_PP || v->kind == PK_OP) {
        json_t *ns = json_object_get(md, "namespace");
        if (!json_is_string(ns) || json_string_length(ns) == 0) {
            *err = fl_asprintf("%s %s: metadata.namespace: Required value", v->kind_name, v->name);
            return FL_EINVAL;
        }
        v->ns = json_string_value(ns);
    }
    json_t *dt = json_object_get(md, "deletionTimestamp");
    v->deleting = dt && !json_is_null(dt);
    v->spec = json_object_get(p, "spec");
    if (!json_is_object(v->spec)) {
        *err = fl_asprintf("%s %s%s%s: spec: Required value", v->kind_name, v->ns, *v->ns ? "/" : "", v->name);
        return FL_EINVAL;
    }
    return 0;
}

/* Prefix *err with "<Kind> <ns>/<name>: spec.". */
static void wrap_policy_err(char **err, const struct policy_view *v)
{
    char *who = fl_asprintf("%s %s%s%s", v->kind_name, v->ns, *v->ns ? "/" : "", v->name);
    wrap_err(err, "%s: %s", who, "spec.");
    free(who);
}

static int policy_level(const struct policy_view *v, const struct obj_view *o, fl_policy_match_level *level,
                        char **err)
{
    bool namespaced = v->kind == PK_PP || v->kind == PK_OP;
    int rc = list_level(json_object_get(v->spec, "resourceSelectors"), o, namespaced ? v->ns : NULL, level, err);
    if (rc)
        wrap_policy_err(err, v);
    return rc;
}

int fl_policy_match_level_of(const json_t *policy, const json_t *object, fl_policy_match_level *level, char **err)
{
    *level = FL_POLICY_MATCH_NONE;
    *err = NULL;
    struct obj_view o;
    struct policy_view v;
    int rc = view_object(object, &o, err);
    if (rc == 0)
        rc = view_policy(policy, &v, err);
    if (rc == 0)
        rc = policy_level(&v, &o, level, err);
    return rc;
}

static int priority_of(const struct policy_view *v, int32_t *out, char **err)
{
    *out = 0;
    json_t *p = json_object_get(v->spec, "priority");
    if (!p || json_is_null(p))
        return 0;
    if (!json_is_integer(p) || json_integer_value(p) < INT32_MIN || json_integer_value(p) > INT32_MAX) {
        *err = fl_strdup("priority: Invalid value: must be a 32-bit integer");
        wrap_policy_err(err, v);
        return FL_EINVAL;
    }
    *out = (int32_t)json_integer_value(p);
    return 0;
}

int fl_policy_explicit_priority(const json_t *policy, int32_t *priority, char **err)
{
    *priority = 0;
    *err = NULL;
    struct policy_view v;
    int rc = view_policy(policy, &v, err);
    if (rc == 0)
        rc = priority_of(&v, priority, err);
    return rc;
}

/* The best candidate of one kind, Karmada's getHighestPriority*PropagationPolicy. */
struct best {
    const json_t *policy;
    const char *name;
    int32_t prio;
    fl_policy_match_level level;
};

static void consider(struct best *b, const json_t *p, const char *name, int32_t prio, fl_policy_match_level level)
{
    bool take = !b->policy || prio > b->prio || (prio == b->prio && level > b->level) ||
                (prio == b->prio && level == b->level && strcmp(name, b->name) < 0);
    if (take) {
        b->policy = p;
        b->name = name;
        b->prio = prio;
        b->level = level;
    }
}

int fl_policy_select(const json_t *template, const json_t *policies, const json_t **winner,
                     fl_policy_match_level *level, char **err)
{
    *winner = NULL;
    *err = NULL;
    if (level)
        *level = FL_POLICY_MATCH_NONE;
    struct obj_view o;
    int rc = view_object(template, &o, err);
    if (rc)
        return rc;
    if (!json_is_array(policies)) {
        *err = fl_strdup("policies: Invalid value: must be a list of policy objects");
        return FL_EINVAL;
    }
    struct best pp = {0}, cpp = {0};
    for (size_t i = 0; i < json_array_size(policies); i++) {
        const json_t *p = json_array_get(policies, i);
        struct policy_view v;
        char *perr = NULL;
        int32_t prio;
        fl_policy_match_level l;
        /* malformed candidates do not match (see header) */
        if (view_policy(p, &v, &perr) != 0 || (v.kind != PK_PP && v.kind != PK_CPP) || v.deleting ||
            (v.kind == PK_PP && (!*o.ns || strcmp(v.ns, o.ns) != 0)) || priority_of(&v, &prio, &perr) != 0 ||
            policy_level(&v, &o, &l, &perr) != 0 || l == FL_POLICY_MATCH_NONE) {
            free(perr);
            continue;
        }
        consider(v.kind == PK_PP ? &pp : &cpp, p, v.name, prio, l);
    }
    const struct best *w = pp.policy ? &pp : &cpp;
    *winner = w->policy;
    if (level)
        *level = w->level;
    return 0;
}

int fl_policy_may_preempt(const json_t *policy, const json_t *claimer, const json_t *template, bool *may,
                          char **err)
{
    *may = false;
    *err = NULL;
    struct obj_view o;
    struct policy_view pv, cv;
    int32_t pprio, cprio;
    fl_policy_match_level l;
    int rc = view_object(template, &o, err);
    if (rc == 0)
        rc = view_policy(policy, &pv, err);
    if (rc == 0 && pv.kind != PK_PP && pv.kind != PK_CPP) {
        *err = fl_asprintf("%s %s: kind: Unsupported value: only propagation policies preempt", pv.kind_name, pv.name);
        rc = FL_EINVAL;
    }
    if (rc == 0)
        rc = priority_of(&pv, &pprio, err);
    if (rc == 0)
        rc = policy_level(&pv, &o, &l, err);
    if (rc || !claimer)
        return rc;
    rc = view_policy(claimer, &cv, err);
    if (rc == 0 && cv.kind != PK_PP && cv.kind != PK_CPP) {
        *err = fl_asprintf("%s %s: kind: Unsupported value: a claimer is a propagation policy", cv.kind_name, cv.name);
        rc = FL_EINVAL;
    }
    if (rc == 0)
        rc = priority_of(&cv, &cprio, err);
    if (rc)
        return rc;

    json_t *pre = json_object_get(pv.spec, "preemption");
    if (pre && !json_is_null(pre) && !json_is_string(pre)) {
        *err = fl_strdup("preemption: Invalid value: must be \"Always\" or \"Never\"");
        wrap_policy_err(err, &pv);
        return FL_EINVAL;
    }
    if (!json_is_string(pre) || strcmp(json_string_value(pre), "Always") != 0)
        return 0;
    if (pv.kind == cv.kind && strcmp(pv.ns, cv.ns) == 0 && strcmp(pv.name, cv.name) == 0)
        return 0; /* already ours */
    if (l != FL_POLICY_MATCH_NAME)
        return 0;
    if (pv.kind == PK_PP)
        *may = cv.kind == PK_CPP || pprio > cprio;
    else
        *may = cv.kind == PK_CPP && pprio > cprio;
    return 0;
}
