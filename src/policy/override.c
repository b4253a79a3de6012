/* override.c - which override rules apply to a manifest on a cluster, in which order,
 * and what gets recorded (contract in override.h).
 *
 * Three passes, so a failure never leaves a half-overridden manifest:
 *   1. select and validate: every policy's selectors are checked (a policy must be
 *      matched to be ordered); for each selected policy every rule's targetCluster and
 *      overriders are validated, whatever the cluster, so a bad policy is reported the
 *      same way for every cluster rather than only where a rule happens to apply;
 *   2. order: ClusterOverridePolicy before OverridePolicy, then ascending match level,
 *      then name (Karmada sorts the least precise first so the most precise wins);
 *   3. apply the rules whose targetCluster matches to a deep copy, then move the copy's
 *      contents into the caller's object.
 * The per-overrider work lives in overriders.c. */
#include "policy/override.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "policy/cluster_affinity.h"
#include "policy/overriders.h"
#include "policy/resource_selector.h"

struct cand {
    const json_t *policy;
    bool cluster_scoped; /* ClusterOverridePolicy */
    const char *ns;      /* "" for ClusterOverridePolicy */
    const char *name;
    fl_policy_match_level level;
    size_t index; /* position in the caller's array: keeps the sort stable */
    char *who;    /* "OverridePolicy ns/name" for messages */
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->cluster_scoped != y->cluster_scoped)
        return x->cluster_scoped ? -1 : 1;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Replace *err by "<who>: <path><*err>". */
static int wrap(char **err, const char *who, const char *path)
{
    char *inner = *err;
    *err = fl_asprintf("%s: %s%s", who, path, inner ? inner : "Invalid value");
    free(inner);
    return FL_EINVAL;
}

/* A policy's rules: spec.overrideRules, or the deprecated spec.targetCluster +
 * spec.overriders as one rule when overrideRules is empty. *deprecated tells which. */
static int rules_of(const struct cand *c, json_t **rules, bool *deprecated, char **err)
{
    const json_t *spec = json_object_get(c->policy, "spec");
    json_t *r = json_object_get(spec, "overrideRules");
    *rules = NULL;
    *deprecated = false;
    if (r && !json_is_null(r) && !json_is_array(r)) {
        *err = fl_strdup("Invalid value: must be a list");
        return wrap(err, c->who, "spec.overrideRules: ");
    }
    if (json_array_size(r) > 0) {
        *rules = json_incref(r);
        return 0;
    }
    json_t *one = json_object();
    json_t *tc = json_object_get(spec, "targetCluster");
    json_t *ov = json_object_get(spec, "overriders");
    if (tc)
        json_object_set(one, "targetCluster", tc);
    if (ov)
        json_object_set(one, "overriders", ov);
    *rules = json_pack("[o]", one);
    *deprecated = true;
    return 0;
}

/* "spec.overrideRules[i]." or "spec." for the deprecated form. */
static void rule_path(char *buf, size_t n, bool deprecated, size_t i)
{
    if (deprecated)
        snprintf(buf, n, "spec.");
    else
        snprintf(buf, n, "spec.overrideRules[%zu].", i);
}

static int validate_rules(const struct cand *c, char **err)
{
    json_t *rules;
    bool dep;
    int rc = rules_of(c, &rules, &dep, err);
    for (size_t i = 0; rc == 0 && i < json_array_size(rules); i++) {
        json_t *rule = json_array_get(rules, i);
        char rp[64], full[96];
        rule_path(rp, sizeof rp, dep, i);
        if (!json_is_object(rule)) {
            *err = fl_strdup("Invalid value: must be an object");
            snprintf(full, sizeof full, "spec.overrideRules[%zu]: ", i);
            rc = wrap(err, c->who, full);
            break;
        }
        fl_cluster_affinity *aff = NULL;
        rc = fl_policy_cluster_affinity_new(json_object_get(rule, "targetCluster"), &aff, err);
        fl_policy_cluster_affinity_free(aff);
        if (rc) {
            /* the affinity names its own fields; "clusterAffinity:" means the whole thing */
            bool whole = *err && strncmp(*err, "clusterAffinity:", 16) == 0;
            if (whole) {
                char *rest = fl_strdup(*err + 16);
                free(*err);
                *err = rest;
            }
            snprintf(full, sizeof full, "%stargetCluster%s", rp, whole ? ":" : ".");
            rc = wrap(err, c->who, full);
            break;
        }
        rc = fl_overriders_validate(json_object_get(rule, "overriders"), err);
        if (rc) {
            bool whole = *err && strncmp(*err, "Invalid value", 13) == 0;
            snprintf(full, sizeof full, "%soverriders%s", rp, whole ? ": " : ".");
            rc = wrap(err, c->who, full);
        }
    }
    json_decref(rules);
    return rc;
}

/* Collect the policies that select the manifest, validated. */
static int select_policies(const json_t *manifest, const json_t *policies, struct cand **out, size_t *nout,
                           char **err)
{
    *out = NULL;
    *nout = 0;
    const char *mns = json_string_value(json_object_get(json_object_get(manifest, "metadata"), "namespace"));
    if (!mns)
        mns = "";
    size_t n = json_array_size(policies);
    struct cand *cs = fl_calloc(n ? n : 1, sizeof(*cs));
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const json_t *p = json_array_get(policies, i);
        const char *kind = json_string_value(json_object_get(p, "kind"));
        if (!json_is_object(p) || !kind ||
            (strcmp(kind, "OverridePolicy") != 0 && strcmp(kind, "ClusterOverridePolicy") != 0)) {
            *err = fl_asprintf("policies[%zu].kind: Unsupported value: supported values: \"OverridePolicy\", "
                               "\"ClusterOverridePolicy\"",
                               i);
            rc = FL_EINVAL;
            break;
        }
        fl_policy_match_level level;
        rc = fl_policy_match_level_of(p, manifest, &level, err);
        if (rc)
            break;
        const json_t *md = json_object_get(p, "metadata");
        struct cand c = {
            .policy = p,
            .cluster_scoped = strcmp(kind, "ClusterOverridePolicy") == 0,
            .name = json_string_value(json_object_get(md, "name")),
            .index = i,
        };
        c.ns = c.cluster_scoped ? "" : json_string_value(json_object_get(md, "namespace"));
        /* OverridePolicies apply only to namespaced manifests of their own namespace */
        if (!c.cluster_scoped && (!*mns || strcmp(c.ns, mns) != 0))
            continue;
        /* no resourceSelectors: the policy applies to every resource */
        json_t *sels = json_object_get(json_object_get(p, "spec"), "resourceSelectors");
        c.level = json_array_size(sels) == 0 ? FL_POLICY_MATCH_ALL : level;
        if (c.level == FL_POLICY_MATCH_NONE)
            continue;
        c.who = fl_asprintf("%s %s%s%s", kind, c.ns, *c.ns ? "/" : "", c.name);
        cs[k++] = c;
        rc = validate_rules(&cs[k - 1], err);
    }
    if (rc) {
        for (size_t i = 0; i < k; i++)
            free(cs[i].who);
        free(cs);
        return rc;
    }
    qsort(cs, k, sizeof(*cs), cand_cmp);
    *out = cs;
    *nout = k;
    return 0;
}

static void record(json_t *applied, const struct cand *c, bool deprecated, size_t rule, const json_t *ovr)
{
    json_t *e = json_object();
    json_object_set_new(e, "kind", json_string(c->cluster_scoped ? "ClusterOverridePolicy" : "OverridePolicy"));
    if (!c->cluster_scoped)
        json_object_set_new(e, "namespace", json_string(c->ns));
    json_object_set_new(e, "name", json_string(c->name));
    if (!deprecated)
        json_object_set_new(e, "rule", json_integer((json_int_t)rule));
    json_object_set_new(e, "overriders", fl_overriders_canonical(ovr));
    json_array_append_new(applied, e);
}

int fl_override_apply(json_t *manifest, const json_t *cluster, const json_t *policies, json_t **applied, char **err)
{
    *applied = NULL;
    *err = NULL;
    if (!json_is_object(manifest)) {
        *err = fl_strdup("manifest: Invalid value: must be an object");
        return FL_EINVAL;
    }
    if (!json_is_array(policies)) {
        *err = fl_strdup("policies: Invalid value: must be a list of OverridePolicy/ClusterOverridePolicy objects");
        return FL_EINVAL;
    }
    /* A NULL affinity matches every cluster, so this only checks the Cluster's shape. */
    bool any;
    int rc = fl_policy_cluster_affinity_eval(NULL, cluster, &any, err);
    if (rc)
        return rc;

    struct cand *cs = NULL;
    size_t n = 0;
    rc = select_policies(manifest, policies, &cs, &n, err);
    if (rc)
        return rc;
    if (n == 0) {
        /* the common case: nothing selects this manifest, so skip the copy */
        free(cs);
        *applied = json_array();
        return 0;
    }

    json_t *work = fl_json_deep_copy(manifest);
    json_t *out = json_array();
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_t *rules;
        bool dep;
        rc = rules_of(&cs[i], &rules, &dep, err);
        for (size_t r = 0; rc == 0 && r < json_array_size(rules); r++) {
            json_t *rule = json_array_get(rules, r);
            bool match = true;
            json_t *tc = json_object_get(rule, "targetCluster");
            if (tc && !json_is_null(tc))
                rc = fl_policy_cluster_affinity_match(tc, cluster, &match, err);
            if (rc || !match)
                continue; /* rc != 0 cannot happen after validation; the loop then ends */
            json_t *ovr = json_object_get(rule, "overriders");
            rc = fl_overriders_apply(&work, ovr, err);
            if (rc) {
                char rp[64];
                rule_path(rp, sizeof rp, dep, r);
                strcat(rp, "overriders.");
                wrap(err, cs[i].who, rp);
                break;
            }
            record(out, &cs[i], dep, r, ovr);
        }
        json_decref(rules);
        if (rc == 0 && !json_is_object(work)) {
            /* a plaintext operation on "" replaced the whole manifest */
            *err = fl_strdup("plaintext: the overridden manifest is no longer an object");
            rc = wrap(err, cs[i].who, "spec.");
        }
    }
    if (rc == 0) {
        json_object_clear(manifest);
        json_object_update(manifest, work);
        *applied = out;
        out = NULL;
    }
    json_decref(work);
    json_decref(out);
    for (size_t i = 0; i < n; i++)
        free(cs[i].who);
    free(cs);
    return rc;
}

/* ----------------------------------------------------------------- annotations -- */

struct ann_item {
    const char *name;
    size_t index;
    const json_t *overriders;
};

static int ann_cmp(const void *a, const void *b)
{
    const struct ann_item *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Go's encoder escapes <, > and & (and U+2028/U+2029) inside strings; those bytes
 * only ever occur inside strings in JSON text, so a textual pass is exact. */
static char *go_escape(char *s)
{
    size_t extra = 0;
    for (const char *p = s; *p; p++)
        if (*p == '<' || *p == '>' || *p == '&')
            extra += 5;
    char *o = fl_malloc(strlen(s) + extra + 1), *q = o;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '<' || *p == '>' || *p == '&') {
            q += sprintf(q, "\\u%04x", *p);
        } else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            q += sprintf(q, "\\u202%c", p[2] == 0xA8 ? '8' : '9');
            p += 2;
        } else {
            *q++ = (char)*p;
        }
    }
    *q = '\0';
    free(s);
    return o;
}

static char *render(struct ann_item *items, size_t n)
{
    if (n == 0)
        return NULL;
    qsort(items, n, sizeof(*items), ann_cmp);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s,s:O}", "policyName", items[i].name, "overriders",
                                             items[i].overriders));
    char *s = fl_json_dumps(arr, NULL);
    json_decref(arr);
    return go_escape(s);
}

int fl_override_annotations(const json_t *applied, char **cluster_overrides, char **overrides, char **err)
{
    *cluster_overrides = NULL;
    *overrides = NULL;
    *err = NULL;
    if (!json_is_array(applied)) {
        *err = fl_strdup("applied: Invalid value: must be the list fl_override_apply returned");
        return FL_EINVAL;
    }
    size_t n = json_array_size(applied), nc = 0, nn = 0;
    struct ann_item *ci = fl_calloc(n ? n : 1, sizeof(*ci));
    struct ann_item *ni = fl_calloc(n ? n : 1, sizeof(*ni));
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(applied, i);
        const char *kind = json_string_value(json_object_get(e, "kind"));
        const char *name = json_string_value(json_object_get(e, "name"));
        const json_t *ovr = json_object_get(e, "overriders");
        if (!kind || !name || !json_is_object(ovr) ||
            (strcmp(kind, "ClusterOverridePolicy") != 0 && strcmp(kind, "OverridePolicy") != 0)) {
            *err = fl_asprintf("applied[%zu]: Invalid value: needs kind, name and overriders", i);
            rc = FL_EINVAL;
            break;
        }
        struct ann_item it = {name, i, ovr};
        if (strcmp(kind, "ClusterOverridePolicy") == 0)
            ci[nc++] = it;
        else
            ni[nn++] = it;
    }
    if (rc == 0) {
        *cluster_overrides = render(ci, nc);
        *overrides = render(ni, nn);
    }
    free(ci);
    free(ni);
    return rc;
}
