/* cluster_affinity.c - ClusterAffinity matching (contract in cluster_affinity.h).
 *
 * The affinity is parsed once into a small struct: owned copies of the name lists,
 * a compiled label selector, and one requirement per field expression. Evaluation
 * then reads only the handful of Cluster fields it needs, so the scheduler can test
 * one compiled affinity against thousands of clusters without touching the
 * affinity's JSON again.
 *
 * Order of checks follows Karmada's util.ClusterMatches: exclude, labels, fields
 * (zones separately, as a set), then clusterNames. The order does not change the
 * answer (every part must hold) but it does decide which malformed Cluster field
 * is reported first, so keep it.
 *
 * Upstream's admission only admits In/NotIn on fields while its matcher also honours
 * Exists/DoesNotExist; we accept all four so both stored and hand-written policies
 * mean what the matcher says. Gt/Lt are rejected: they are meaningless for these
 * string fields and upstream's admission refuses them too. */
#include "policy/cluster_affinity.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/selector.h"

enum field_key { FIELD_PROVIDER, FIELD_REGION, FIELD_ZONE };
enum field_op { FOP_IN, FOP_NOTIN, FOP_EXISTS, FOP_NOTEXISTS };

struct field_req {
    enum field_key key;
    enum field_op op;
    char **vals;
    size_t nvals;
};

struct fl_cluster_affinity {
    char **names; /* clusterNames; empty = any name */
    size_t nnames;
    char **exclude;
    size_t nexclude;
    fl_labelsel *labels; /* NULL when labelSelector is absent */
    struct field_req *fields;
    size_t nfields;
};

/* ------------------------------------------------------------- parsing -- */

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* A list of strings at affinity.<field>; absent/null = empty. */
static int parse_strv(const json_t *aff, const char *field, char ***out, size_t *nout, char **err)
{
    *out = NULL;
    *nout = 0;
    json_t *arr = json_object_get(aff, field);
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        *err = fl_asprintf("%s: Invalid value: must be a list of cluster names", field);
        return FL_EINVAL;
    }
    size_t n = json_array_size(arr);
    for (size_t i = 0; i < n; i++) {
        if (!json_is_string(json_array_get(arr, i))) {
            *err = fl_asprintf("%s[%zu]: Invalid value: must be a string", field, i);
            return FL_EINVAL;
        }
    }
    char **v = fl_calloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = fl_strdup(json_string_value(json_array_get(arr, i)));
    *out = v;
    *nout = n;
    return 0;
}

static int parse_field_expr(const json_t *e, size_t i, struct field_req *r, char **err)
{
    const char *P = "fieldSelector.matchExpressions";
    if (!json_is_object(e)) {
        *err = fl_asprintf("%s[%zu]: Invalid value: must be an object", P, i);
        return FL_EINVAL;
    }
    json_t *key = json_object_get(e, "key");
    json_t *op = json_object_get(e, "operator");
    json_t *vals = json_object_get(e, "values");
    if (!json_is_string(key)) {
        *err = fl_asprintf(key ? "%s[%zu].key: Invalid value: must be a string" : "%s[%zu].key: Required value", P, i);
        return FL_EINVAL;
    }
    const char *k = json_string_value(key);
    if (strcmp(k, "provider") == 0)
        r->key = FIELD_PROVIDER;
    else if (strcmp(k, "region") == 0)
        r->key = FIELD_REGION;
    else if (strcmp(k, "zone") == 0)
        r->key = FIELD_ZONE;
    else {
        *err = fl_asprintf("%s[%zu].key: Unsupported value: \"%s\": supported values: \"provider\", \"region\", "
                           "\"zone\"",
                           P, i, k);
        return FL_EINVAL;
    }
    if (!json_is_string(op)) {
        *err = fl_asprintf(op ? "%s[%zu].operator: Invalid value: must be a string" : "%s[%zu].operator: Required value",
                           P, i);
        return FL_EINVAL;
    }
    const char *o = json_string_value(op);
    if (strcmp(o, "In") == 0)
        r->op = FOP_IN;
    else if (strcmp(o, "NotIn") == 0)
        r->op = FOP_NOTIN;
    else if (strcmp(o, "Exists") == 0)
        r->op = FOP_EXISTS;
    else if (strcmp(o, "DoesNotExist") == 0)
        r->op = FOP_NOTEXISTS;
    else {
        *err = fl_asprintf("%s[%zu].operator: Unsupported value: \"%s\": supported values: \"In\", \"NotIn\", "
                           "\"Exists\", \"DoesNotExist\"",
                           P, i, o);
        return FL_EINVAL;
    }
    if (vals && !json_is_null(vals) && !json_is_array(vals)) {
        *err = fl_asprintf("%s[%zu].values: Invalid value: must be a list of strings", P, i);
        return FL_EINVAL;
    }
    size_t n = json_is_array(vals) ? json_array_size(vals) : 0;
    /* The same arity rules as a node selector requirement. */
    if ((r->op == FOP_IN || r->op == FOP_NOTIN) && n == 0) {
        *err = fl_asprintf("%s[%zu].values: Required value: must be specified when `operator` is 'In' or 'NotIn'", P,
                           i);
        return FL_EINVAL;
    }
    if ((r->op == FOP_EXISTS || r->op == FOP_NOTEXISTS) && n > 0) {
        *err = fl_asprintf("%s[%zu].values: Forbidden: may not be specified when `operator` is 'Exists' or "
                           "'DoesNotExist'",
                           P, i);
        return FL_EINVAL;
    }
    for (size_t j = 0; j < n; j++) {
        if (!json_is_string(json_array_get(vals, j))) {
            *err = fl_asprintf("%s[%zu].values[%zu]: Invalid value: must be a string", P, i, j);
            return FL_EINVAL;
        }
    }
    r->vals = fl_calloc(n ? n : 1, sizeof(*r->vals));
    for (size_t j = 0; j < n; j++)
        r->vals[j] = fl_strdup(json_string_value(json_array_get(vals, j)));
    r->nvals = n;
    return 0;
}

static int parse_fields(const json_t *fs, fl_cluster_affinity *a, char **err)
{
    if (!fs || json_is_null(fs))
        return 0;
    if (!json_is_object(fs)) {
        *err = fl_strdup("fieldSelector: Invalid value: must be an object with matchExpressions");
        return FL_EINVAL;
    }
    json_t *exprs = json_object_get(fs, "matchExpressions");
    if (!exprs || json_is_null(exprs))
        return 0;
    if (!json_is_array(exprs)) {
        *err = fl_strdup("fieldSelector.matchExpressions: Invalid value: must be a list");
        return FL_EINVAL;
    }
    size_t n = json_array_size(exprs);
    a->fields = fl_calloc(n ? n : 1, sizeof(*a->fields));
    for (size_t i = 0; i < n; i++) {
        /* count first so a failure half-way still frees what was parsed */
        a->nfields = i + 1;
        int rc = parse_field_expr(json_array_get(exprs, i), i, &a->fields[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

void fl_policy_cluster_affinity_free(fl_cluster_affinity *a)
{
    if (!a)
        return;
    free_strv(a->names, a->nnames);
    free_strv(a->exclude, a->nexclude);
    fl_labelsel_free(a->labels);
    for (size_t i = 0; i < a->nfields; i++)
        free_strv(a->fields[i].vals, a->fields[i].nvals);
    free(a->fields);
    free(a);
}

int fl_policy_cluster_affinity_new(const json_t *affinity, fl_cluster_affinity **out, char **err)
{
    *out = NULL;
    *err = NULL;
    fl_cluster_affinity *a = fl_calloc(1, sizeof(*a));
    int rc = 0;
    if (!affinity || json_is_null(affinity))
        goto done;
    if (!json_is_object(affinity)) {
        *err = fl_strdup("clusterAffinity: Invalid value: must be an object");
        rc = FL_EINVAL;
        goto done;
    }
    rc = parse_strv(affinity, "clusterNames", &a->names, &a->nnames, err);
    if (rc)
        goto done;
    rc = parse_strv(affinity, "exclude", &a->exclude, &a->nexclude, err);
    if (rc)
        goto done;
    json_t *ls = json_object_get(affinity, "labelSelector");
    if (ls && !json_is_null(ls)) {
        char *lerr = NULL;
        rc = fl_labelsel_from_json(ls, &a->labels, &lerr);
        if (rc) {
            *err = fl_asprintf("labelSelector.%s", lerr ? lerr : "Invalid value");
            free(lerr);
            goto done;
        }
    }
    rc = parse_fields(json_object_get(affinity, "fieldSelector"), a, err);
done:
    if (rc) {
        fl_policy_cluster_affinity_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

bool fl_policy_cluster_affinity_is_empty(const fl_cluster_affinity *a)
{
    return !a || (a->nnames == 0 && a->nexclude == 0 && !a->labels && a->nfields == 0);
}

/* ---------------------------------------------------------- evaluation -- */

static bool strv_has(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* The cluster fields an affinity reads, borrowed from the Cluster JSON. */
struct cluster_view {
    const char *name;
    const json_t *labels;
    const char *provider; /* NULL when absent or "" */
    const char *region;
    const json_t *zones;  /* spec.zones array, or NULL */
    const char *zone;     /* deprecated spec.zone, used only when zones is empty */
};

static int opt_string(const json_t *spec, const char *field, const char **out, char **err)
{
    *out = NULL;
    json_t *v = json_object_get(spec, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        *err = fl_asprintf("cluster spec.%s: Invalid value: must be a string", field);
        return FL_EINVAL;
    }
    if (json_string_length(v) > 0)
        *out = json_string_value(v);
    return 0;
}

static int view_cluster(const json_t *c, struct cluster_view *v, char **err)
{
    memset(v, 0, sizeof(*v));
    if (!json_is_object(c)) {
        *err = fl_strdup("cluster: Invalid value: must be a Cluster object");
        return FL_EINVAL;
    }
    json_t *md = json_object_get(c, "metadata");
    json_t *name = json_is_object(md) ? json_object_get(md, "name") : NULL;
    if (!json_is_string(name)) {
        *err = fl_strdup("cluster metadata.name: Required value");
        return FL_EINVAL;
    }
    v->name = json_string_value(name);
    json_t *labels = json_object_get(md, "labels");
    if (labels && !json_is_null(labels) && !json_is_object(labels)) {
        *err = fl_strdup("cluster metadata.labels: Invalid value: must be an object");
        return FL_EINVAL;
    }
    v->labels = json_is_object(labels) ? labels : NULL;
    json_t *spec = json_object_get(c, "spec");
    if (!spec || json_is_null(spec))
        return 0;
    if (!json_is_object(spec)) {
        *err = fl_strdup("cluster spec: Invalid value: must be an object");
        return FL_EINVAL;
    }
    int rc = opt_string(spec, "provider", &v->provider, err);
    if (rc == 0)
        rc = opt_string(spec, "region", &v->region, err);
    if (rc == 0)
        rc = opt_string(spec, "zone", &v->zone, err);
    if (rc)
        return rc;
    json_t *zones = json_object_get(spec, "zones");
    if (zones && !json_is_null(zones)) {
        if (!json_is_array(zones)) {
            *err = fl_strdup("cluster spec.zones: Invalid value: must be a list of strings");
            return FL_EINVAL;
        }
        for (size_t i = 0; i < json_array_size(zones); i++)
            if (!json_is_string(json_array_get(zones, i))) {
                *err = fl_asprintf("cluster spec.zones[%zu]: Invalid value: must be a string", i);
                return FL_EINVAL;
            }
        if (json_array_size(zones) > 0)
            v->zones = zones;
    }
    return 0;
}

/* Zones are a set: In = any listed, NotIn = none listed, Exists = non-empty. */
static bool zones_match(const struct field_req *r, const struct cluster_view *v)
{
    size_t nz = v->zones ? json_array_size(v->zones) : (v->zone ? 1 : 0);
    switch (r->op) {
    case FOP_EXISTS:
        return nz > 0;
    case FOP_NOTEXISTS:
        return nz == 0;
    case FOP_IN:
    case FOP_NOTIN: {
        bool any = false;
        for (size_t i = 0; i < nz && !any; i++) {
            const char *z = v->zones ? json_string_value(json_array_get(v->zones, i)) : v->zone;
            any = strv_has(r->vals, r->nvals, z);
        }
        return r->op == FOP_IN ? any : !any;
    }
    }
    return false;
}

/* provider/region: label-selector rules over a set holding only non-empty fields. */
static bool scalar_match(const struct field_req *r, const char *val)
{
    switch (r->op) {
    case FOP_EXISTS:
        return val != NULL;
    case FOP_NOTEXISTS:
        return val == NULL;
    case FOP_IN:
        return val && strv_has(r->vals, r->nvals, val);
    case FOP_NOTIN:
        return !val || !strv_has(r->vals, r->nvals, val);
    }
    return false;
}

int fl_policy_cluster_affinity_eval(const fl_cluster_affinity *a, const json_t *cluster, bool *match, char **err)
{
    *match = false;
    *err = NULL;
    struct cluster_view v;
    int rc = view_cluster(cluster, &v, err);
    if (rc)
        return rc;
    if (!a) {
        *match = true;
        return 0;
    }
    if (strv_has(a->exclude, a->nexclude, v.name))
        return 0;
    if (a->labels && !fl_labelsel_match(a->labels, v.labels))
        return 0;
    for (size_t i = 0; i < a->nfields; i++) {
        const struct field_req *r = &a->fields[i];
        bool ok = r->key == FIELD_ZONE       ? zones_match(r, &v)
                  : r->key == FIELD_PROVIDER ? scalar_match(r, v.provider)
                                             : scalar_match(r, v.region);
        if (!ok)
            return 0;
    }
    *match = a->nnames == 0 || strv_has(a->names, a->nnames, v.name);
    return 0;
}

int fl_policy_cluster_affinity_match(const json_t *affinity, const json_t *cluster, bool *match, char **err)
{
    fl_cluster_affinity *a = NULL;
    *match = false;
    int rc = fl_policy_cluster_affinity_new(affinity, &a, err);
    if (rc == 0)
        rc = fl_policy_cluster_affinity_eval(a, cluster, match, err);
    fl_policy_cluster_affinity_free(a);
    return rc;
}

bool fl_policy_cluster_affinity_fields_changed(const json_t *old_cluster, const json_t *new_cluster)
{
    static const char *const SPEC_FIELDS[] = {"provider", "region", "zone", "zones"};
    if (!fl_json_same(json_object_get(json_object_get(old_cluster, "metadata"), "labels"),
                      json_object_get(json_object_get(new_cluster, "metadata"), "labels")))
        return true;
    const json_t *os = json_object_get(old_cluster, "spec"), *ns = json_object_get(new_cluster, "spec");
    for (size_t i = 0; i < sizeof SPEC_FIELDS / sizeof SPEC_FIELDS[0]; i++)
        if (!fl_json_same(json_object_get(os, SPEC_FIELDS[i]), json_object_get(ns, SPEC_FIELDS[i])))
            return true;
    return false;
}
