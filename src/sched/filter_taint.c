/* filter_taint.c - the TaintToleration filter: a cluster whose NoSchedule or NoExecute
 * taint is not tolerated by placement.clusterTolerations is not a candidate.
 *
 * Matching is Kubernetes' Toleration.ToleratesTaint with the comparison operators
 * (Lt/Gt) disabled, as Karmada calls it: an empty toleration effect matches every
 * effect, an empty key (with Exists) every key, operator ""/Equal compares values,
 * Exists ignores them, anything else tolerates nothing. PreferNoSchedule taints are
 * ignored. A cluster already in spec.clusters passes regardless: Karmada leaves
 * removing it to the taint manager's eviction, after its grace period.
 *
 * Taints are parsed once per snapshot, each with its ready-made reason text
 * ("cluster(s) had untolerated taint {key=value:effect}", Taint.ToString()'s form), so
 * a decision allocates nothing here. */
#include "sched/sched_priv.h"

#include "core/err.h"
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string member or "" when absent/null; *bad set when present with another type. */
static const char *str_or_empty(const json_t *o, const char *k, bool *bad)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v))
        return "";
    if (!json_is_string(v)) {
        *bad = true;
        return "";
    }
    return json_string_value(v);
}

const char *fl_sched_taints_parse(const json_t *taints, struct fl_sched_arena *a, struct fl_sched_taint **out,
                                  size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!taints || json_is_null(taints))
        return NULL;
    if (!json_is_array(taints))
        return "spec.taints: must be an array";
    size_t cnt = json_array_size(taints);
    struct fl_sched_taint *t = fl_sched_arena_alloc(a, cnt * sizeof *t + 1);
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_array_get(taints, i);
        char buf[96];
        if (!json_is_object(e)) {
            snprintf(buf, sizeof buf, "spec.taints[%zu]: must be an object", i);
            return fl_sched_arena_strdup(a, buf);
        }
        bool bad = false;
        const char *key = str_or_empty(e, "key", &bad);
        const char *value = str_or_empty(e, "value", &bad);
        const char *effect = str_or_empty(e, "effect", &bad);
        if (bad || !*key || !*effect) {
            snprintf(buf, sizeof buf, "spec.taints[%zu]: key and effect must be non-empty strings, value a string", i);
            return fl_sched_arena_strdup(a, buf);
        }
        t[i].key = fl_sched_arena_strdup(a, key);
        t[i].value = fl_sched_arena_strdup(a, value);
        t[i].effect = fl_sched_arena_strdup(a, effect);
        t[i].blocks = !strcmp(effect, "NoSchedule") || !strcmp(effect, "NoExecute");
        char *reason = *value ? fl_asprintf("cluster(s) had untolerated taint {%s=%s:%s}", key, value, effect)
                              : fl_asprintf("cluster(s) had untolerated taint {%s:%s}", key, effect);
        t[i].reason = fl_sched_arena_strdup(a, reason);
        free(reason);
    }
    *out = t;
    *n = cnt;
    return NULL;
}

int fl_sched_tolerations_parse(const json_t *tols, struct fl_sched_tol **out, size_t *n, char **err)
{
    *out = NULL;
    *n = 0;
    if (!tols || json_is_null(tols))
        return 0;
    if (!json_is_array(tols)) {
        *err = fl_strdup("spec.placement.clusterTolerations: must be an array");
        return FL_EINVAL;
    }
    size_t cnt = json_array_size(tols);
    struct fl_sched_tol *t = fl_calloc(cnt + 1, sizeof *t);
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_array_get(tols, i);
        if (!json_is_object(e)) {
            *err = fl_asprintf("spec.placement.clusterTolerations[%zu]: must be an object", i);
            goto bad;
        }
        static const char *const fields[] = {"key", "operator", "value", "effect"};
        const char *vals[4];
        for (int f = 0; f < 4; f++) {
            bool wrong = false;
            vals[f] = str_or_empty(e, fields[f], &wrong);
            if (wrong) {
                *err = fl_asprintf("spec.placement.clusterTolerations[%zu].%s: must be a string", i, fields[f]);
                goto bad;
            }
        }
        const char *op = vals[1];
        if (*op && strcmp(op, "Equal") && strcmp(op, "Exists") && strcmp(op, "Lt") && strcmp(op, "Gt")) {
            *err = fl_asprintf("spec.placement.clusterTolerations[%zu].operator: Unsupported value: \"%s\": "
                               "supported values: \"Equal\", \"Exists\"", i, op);
            goto bad;
        }
        const char *eff = vals[3];
        if (*eff && strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") && strcmp(eff, "NoExecute")) {
            *err = fl_asprintf("spec.placement.clusterTolerations[%zu].effect: Unsupported value: \"%s\": "
                               "supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"", i, eff);
            goto bad;
        }
        json_t *secs = json_object_get(e, "tolerationSeconds");
        if (secs && !json_is_null(secs) && !json_is_integer(secs)) {
            *err = fl_asprintf("spec.placement.clusterTolerations[%zu].tolerationSeconds: must be an integer", i);
            goto bad;
        }
        t[i] = (struct fl_sched_tol){vals[0], op, vals[2], eff};
    }
    *out = t;
    *n = cnt;
    return 0;
bad:
    free(t);
    return FL_EINVAL;
}

/* Kubernetes' ToleratesTaint, comparison operators disabled. */
static bool tolerates(const struct fl_sched_tol *tol, const struct fl_sched_taint *taint)
{
    if (*tol->effect && strcmp(tol->effect, taint->effect))
        return false;
    if (*tol->key && strcmp(tol->key, taint->key))
        return false;
    if (!*tol->op || !strcmp(tol->op, "Equal"))
        return !strcmp(tol->value, taint->value);
    return !strcmp(tol->op, "Exists");
}

const char *fl_sched_filter_taint(const struct fl_sched_binding *b, uint32_t idx, const struct fl_sched_cluster *c)
{
    if (b->prev[idx] >= 0)
        return NULL;
    for (size_t i = 0; i < c->ntaints; i++) {
        const struct fl_sched_taint *taint = &c->taints[i];
        if (!taint->blocks)
            continue;
        bool ok = false;
        for (size_t j = 0; j < b->ntols && !ok; j++)
            ok = tolerates(&b->tols[j], taint);
        if (!ok)
            return taint->reason;
    }
    return NULL;
}

bool fl_sched_tolerates(const json_t *tol, const json_t *taint)
{
    bool bad = false;
    struct fl_sched_tol t = {str_or_empty(tol, "key", &bad), str_or_empty(tol, "operator", &bad),
                             str_or_empty(tol, "value", &bad), str_or_empty(tol, "effect", &bad)};
    struct fl_sched_taint x = {.key = str_or_empty(taint, "key", &bad), .value = str_or_empty(taint, "value", &bad),
                               .effect = str_or_empty(taint, "effect", &bad)};
    return !bad && tolerates(&t, &x);
}
