/* validate_rollout.c - admission rules of apps.flotilla.io/v1alpha1 RolloutStrategy beyond
 * the types its schema checks (kinds_rollout.c); docs/rollouts.md lists them. Each refusal is
 * a cause naming the field, so a bad strategy is a 422 Status that says where:
 *   - policyRef.kind is PropagationPolicy or ClusterPropagationPolicy, policyRef.name set;
 *   - at least one stage; each stage named, names unique;
 *   - a stage selects its clusters by clusterSelector or by percent, exactly one of them;
 *   - percent in 1..100, and when every stage uses percent they add up to 100;
 *   - no negative number (maxConcurrency, soakSeconds, maxFailures, progressDeadlineSeconds);
 *   - onFailure Halt or Rollback.
 * Which clusters a selector picks is known only when a rollout runs: a stage that selects
 * none is reported in the strategy's status by the controller, not refused here. */
#include <jansson.h>
#include <string.h>

#include "api/validate.h"
#include "api/validate_priv.h"

static void not_negative(json_t *causes, const char *field, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v) && json_integer_value(v) < 0)
        fl_v_invalid(causes, field, v, "must be greater than or equal to 0");
}

/* One stage; *percent_sum gains its percent, *all_percent stays true while every stage has one. */
static void stage_rules(json_t *causes, size_t i, const json_t *st, json_t *names, json_int_t *percent_sum,
                        bool *all_percent)
{
    char p[FL_VPATH_MAX], f[FL_VPATH_MAX];
    fl_vpath(p, "spec.stages[%zu]", i);
    const char *name = fl_v_require_str(causes, fl_vpath(f, "%s.name", p), st, "name");
    if (name) {
        if (json_object_get(names, name))
            fl_v_duplicate(causes, f, json_object_get(st, "name"), NULL);
        json_object_set_new(names, name, json_true());
    }
    const json_t *sel = json_object_get(st, "clusterSelector"), *pct = json_object_get(st, "percent");
    if (sel && pct)
        fl_v_forbidden(causes, fl_vpath(f, "%s.percent", p), "may not be set together with clusterSelector");
    else if (!sel && !pct)
        fl_v_required(causes, fl_vpath(f, "%s.clusterSelector", p), "a stage selects clusters by clusterSelector "
                                                                     "or by percent");
    if (sel)
        fl_v_label_selector(causes, fl_vpath(f, "%s.clusterSelector", p), sel);
    if (json_is_integer(pct)) {
        json_int_t v = json_integer_value(pct);
        if (v < 1 || v > 100)
            fl_v_invalid(causes, fl_vpath(f, "%s.percent", p), pct, "must be between 1 and 100");
        *percent_sum += v;
    } else {
        *all_percent = false;
    }
    static const char *const counts[] = {"maxConcurrency", "soakSeconds", NULL};
    for (size_t k = 0; counts[k]; k++)
        not_negative(causes, fl_vpath(f, "%s.%s", p, counts[k]), st, counts[k]);
}

void fl_validate_rollout_strategy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    (void)old;
    const json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    static const char *const policy_kinds[] = {"PropagationPolicy", "ClusterPropagationPolicy", NULL};
    const json_t *ref = fl_v_obj(spec, "policyRef");
    if (!ref) {
        fl_v_required(causes, "spec.policyRef", NULL);
    } else {
        fl_v_enum(causes, "spec.policyRef.kind", ref, "kind", policy_kinds, true);
        fl_v_require_str(causes, "spec.policyRef.name", ref, "name");
    }
    static const char *const on_failure[] = {"Halt", "Rollback", NULL};
    fl_v_enum(causes, "spec.onFailure", spec, "onFailure", on_failure, false);
    static const char *const counts[] = {"maxFailures", "progressDeadlineSeconds", NULL};
    for (size_t i = 0; counts[i]; i++) {
        char f[FL_VPATH_MAX];
        not_negative(causes, fl_vpath(f, "spec.%s", counts[i]), spec, counts[i]);
    }
    const json_t *stages = fl_v_arr(spec, "stages");
    if (!json_array_size(stages)) {
        fl_v_required(causes, "spec.stages", "at least one stage");
        return;
    }
    json_t *names = json_object();
    json_int_t sum = 0;
    bool all_percent = true;
    size_t i;
    json_t *st;
    json_array_foreach(stages, i, st) stage_rules(causes, i, st, names, &sum, &all_percent);
    json_decref(names);
    if (all_percent && sum != 100) {
        json_t *v = json_integer(sum);
        fl_v_invalid(causes, "spec.stages", v, "the stages' percent must add up to 100 when every stage uses percent");
        json_decref(v);
    }
}
