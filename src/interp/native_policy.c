/* native_policy.c - the status rules of the two kinds that watch a workload rather than run
 * one: autoscaling/v2 HorizontalPodAutoscaler and policy/v1 PodDisruptionBudget (issue 41).
 *
 * As in Karmada's default interpreter, a member reports only counts, and the template shows
 * their sums: an HPA's currentReplicas and desiredReplicas, a PDB's currentHealthy,
 * desiredHealthy, expectedPods and disruptionsAllowed (and its disruptedPods, each pod named
 * "cluster/pod"). Two things go beyond Karmada, both documented in docs/interpreter.md: an
 * HPA also reflects its conditions, and the template shows each condition type as True only
 * while every member reports it True (else False, naming the members that do not); and an
 * HPA is Unhealthy while a member reports ScalingActive False (it cannot compute its
 * metrics, so it scales nothing). A PDB is healthy when currentHealthy >= desiredHealthy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/mem.h"
#include "interp/native.h"

static const char *const hpa_counts[] = {"currentReplicas", "desiredReplicas", NULL};
static const char *const pdb_counts[] = {"currentHealthy", "desiredHealthy", "expectedPods", "disruptionsAllowed",
                                         NULL};

/* counts from st (base names it) into out, every one present even when 0: upstream's
 * fields are not omitempty (HPA currentReplicas is, but kubectl shows 0 either way). */
static int copy_counts(const json_t *st, const char *base, const char *const *counts, json_t *out, char **err)
{
    for (size_t i = 0; counts[i]; i++) {
        int64_t n;
        int rc = fl_native_int(st, base, counts[i], 0, &n, err);
        if (rc)
            return rc;
        json_object_set_new(out, counts[i], json_integer(n));
    }
    return 0;
}

int fl_native_reflect_hpa(const json_t *obj, json_t **status, char **err)
{
    const json_t *st, *conds;
    int rc;
    *status = NULL;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) || !st ||
        (rc = fl_native_get(st, "status", "conditions", FL_NT_ARRAY, &conds, err)))
        return rc;
    json_t *out = json_object();
    if ((rc = copy_counts(st, "status", hpa_counts, out, err))) {
        json_decref(out);
        return rc;
    }
    if (json_array_size(conds))
        json_object_set_new(out, "conditions", fl_json_deep_copy(conds));
    *status = out;
    return 0;
}

int fl_native_reflect_pdb(const json_t *obj, json_t **status, char **err)
{
    const json_t *st, *disrupted;
    int rc;
    *status = NULL;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) || !st ||
        (rc = fl_native_get(st, "status", "disruptedPods", FL_NT_OBJECT, &disrupted, err)))
        return rc;
    json_t *out = json_object();
    if ((rc = copy_counts(st, "status", pdb_counts, out, err))) {
        json_decref(out);
        return rc;
    }
    if (json_object_size(disrupted))
        json_object_set_new(out, "disruptedPods", fl_json_deep_copy(disrupted));
    *status = out;
    return 0;
}

/* Sum counts over the items' statuses into st. */
static int sum_counts(const json_t *items, const char *const *counts, json_t *st, char **err)
{
    int64_t sums[8] = {0};
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status");
        char base[64];
        snprintf(base, sizeof base, "items[%zu].status", i);
        for (size_t c = 0; counts[c] && c < 8; c++) {
            int64_t n;
            int rc = fl_native_int(ist, base, counts[c], 0, &n, err);
            if (rc)
                return rc;
            sums[c] += n;
        }
    }
    for (size_t c = 0; counts[c] && c < 8; c++)
        json_object_set_new(st, counts[c], json_integer(sums[c]));
    return 0;
}

/* The members' HPA conditions folded per type, in the order they first appear: True while
 * every member reporting the type says True; otherwise the first member's non-True
 * condition, its message prefixed with the members that are not True. */
static int fold_hpa_conditions(const json_t *items, json_t *st, char **err)
{
    json_t *out = json_array();
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *conds;
        char base[64], cb[64];
        snprintf(base, sizeof base, "items[%zu].status", i);
        int rc = fl_native_get(json_object_get(it, "status"), base, "conditions", FL_NT_ARRAY, &conds, err);
        if (rc) {
            json_decref(out);
            return rc;
        }
        size_t j;
        const json_t *c;
        json_array_foreach(conds, j, c) {
            const char *type = json_string_value(json_object_get(c, "type"));
            const char *status = json_string_value(json_object_get(c, "status"));
            if (!type || !status)
                continue;
            json_t *have = (json_t *)fl_native_condition(out, type);
            const char *cluster = fl_native_cluster_of(it, i, cb, sizeof cb);
            if (!have) {
                json_t *copy = fl_json_deep_copy(c);
                if (strcmp(status, "True")) {
                    const char *msg = json_string_value(json_object_get(c, "message"));
                    char *m = fl_asprintf("%s: %s", cluster, msg ? msg : "");
                    json_object_set_new(copy, "message", json_string(m));
                    free(m);
                }
                json_array_append_new(out, copy);
                continue;
            }
            const char *hs = json_string_value(json_object_get(have, "status"));
            if (!strcmp(status, "True") || (hs && strcmp(hs, "True")))
                continue; /* still all True, or the first non-True one already stands */
            json_t *copy = fl_json_deep_copy(c);
            const char *msg = json_string_value(json_object_get(c, "message"));
            char *m = fl_asprintf("%s: %s", cluster, msg ? msg : "");
            json_object_set_new(copy, "message", json_string(m));
            free(m);
            for (size_t k = 0; k < json_array_size(out); k++)
                if (json_array_get(out, k) == have) {
                    json_array_set_new(out, k, copy);
                    break;
                }
        }
    }
    if (json_array_size(out))
        json_object_set_new(st, "conditions", out);
    else
        json_decref(out);
    return 0;
}

int fl_native_aggregate_hpa(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    json_t *st;
    *out = fl_native_output(obj, false, &st);
    int rc = sum_counts(items, hpa_counts, st, err);
    if (!rc)
        rc = fold_hpa_conditions(items, st, err);
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

int fl_native_aggregate_pdb(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    json_t *st;
    *out = fl_native_output(obj, false, &st);
    int rc = sum_counts(items, pdb_counts, st, err);
    json_t *disrupted = json_object();
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *d;
        char base[64], cb[64];
        if (rc)
            break;
        snprintf(base, sizeof base, "items[%zu].status", i);
        if ((rc = fl_native_get(json_object_get(it, "status"), base, "disruptedPods", FL_NT_OBJECT, &d, err)))
            break;
        const char *cluster = fl_native_cluster_of(it, i, cb, sizeof cb);
        const char *pod;
        json_t *when;
        json_object_foreach((json_t *)d, pod, when) {
            char *k = fl_asprintf("%s/%s", cluster, pod);
            json_object_set(disrupted, k, when);
            free(k);
        }
    }
    if (rc) {
        json_decref(disrupted);
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    if (json_object_size(disrupted))
        json_object_set_new(st, "disruptedPods", disrupted);
    else
        json_decref(disrupted);
    return 0;
}

int fl_native_health_pdb(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st;
    int64_t cur, want;
    int rc;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) ||
        (rc = fl_native_int(st, "status", "currentHealthy", 0, &cur, err)) ||
        (rc = fl_native_int(st, "status", "desiredHealthy", 0, &want, err)))
        return rc;
    *h = cur >= want ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return 0;
}

int fl_native_health_hpa(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st, *conds;
    int rc;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) ||
        (rc = fl_native_get(st, "status", "conditions", FL_NT_ARRAY, &conds, err)))
        return rc;
    const char *s = json_string_value(json_object_get(fl_native_condition(conds, "ScalingActive"), "status"));
    *h = s && !strcmp(s, "False") ? FL_HEALTH_UNHEALTHY : FL_HEALTH_HEALTHY;
    return 0;
}
