/* validate_karmada.c - validation of Karmada's API objects.
 *
 * Upstream Karmada enforces its rules in two places: the CRD schemas generated from
 * kubebuilder markers (required fields, enums, minimums) and the validating webhooks
 * (pkg/util/validation, pkg/apis/cluster/validation). Flotilla has neither, so this
 * file enforces both sets, with the field names and messages upstream users see.
 *
 * Where Flotilla deliberately differs it says so inline: deprecated purgeMode spellings
 * are accepted (DESIGN.md), and checks that upstream performs after a mutating webhook
 * filled defaults are relaxed so an undefaulted object is not rejected for a value the
 * webhook would have set. */
#include <stdio.h>
#include <string.h>

#include "api/validate.h"
#include "api/validate_priv.h"
#include "core/wellknown.h"

static const char *const OVERRIDE_OPS[] = {"add", "remove", "replace", NULL};
static const char *const ADD_REMOVE_OPS[] = {"add", "remove", NULL};

/* ---------------------------------------------------------------------------------
 * Shared pieces of PropagationSpec / OverrideSpec.
 */

/* ResourceSelector list: apiVersion and kind required; a namespaced policy may only
 * select its own namespace; preemption Always needs names (upstream webhook). */
static void resource_selectors(const json_t *sels, const json_t *obj, bool need_names, json_t *causes)
{
    char p[FL_VPATH_MAX];
    const char *policy_ns = fl_v_nonempty(fl_v_obj(obj, "metadata"), "namespace");
    size_t i;
    json_t *s;
    json_array_foreach(sels, i, s) {
        if (!json_is_object(s)) {
            fl_v_invalid(causes, fl_vpath(p, "spec.resourceSelectors[%zu]", i), s, "must be an object");
            continue;
        }
        fl_v_require_str(causes, fl_vpath(p, "spec.resourceSelectors[%zu].apiVersion", i), s, "apiVersion");
        fl_v_require_str(causes, fl_vpath(p, "spec.resourceSelectors[%zu].kind", i), s, "kind");
        /* Upstream's mutating webhook fills an empty namespace with the policy's, so
         * only a different, explicit namespace is an error here. */
        const char *ns = fl_v_nonempty(s, "namespace");
        if (policy_ns && ns && strcmp(ns, policy_ns))
            fl_v_invalid_str(causes, fl_vpath(p, "spec.resourceSelectors[%zu].namespace", i), ns,
                             "namespace of resource selector must be the same as the namespace of the policy");
        if (need_names && !fl_v_nonempty(s, "name"))
            fl_v_invalid_str(causes, fl_vpath(p, "spec.resourceSelectors[%zu].name", i), fl_v_str(s, "name"),
                             "name cannot be empty if preemption is Always, the empty name may cause unexpected "
                             "resources preemption");
        fl_v_label_selector(causes, fl_vpath(p, "spec.resourceSelectors[%zu].labelSelector", i),
                            fl_v_obj(s, "labelSelector"));
    }
}

/* ClusterAffinity: labelSelector structure and fieldSelector keys/operators. */
static void cluster_affinity(const json_t *aff, const char *field, json_t *causes)
{
    char p[FL_VPATH_MAX];
    if (!json_is_object(aff))
        return;
    fl_v_label_selector(causes, fl_vpath(p, "%s.labelSelector", field), fl_v_obj(aff, "labelSelector"));
    json_t *exprs = fl_v_arr(fl_v_obj(aff, "fieldSelector"), "matchExpressions");
    size_t i;
    json_t *e;
    json_array_foreach(exprs, i, e) {
        const char *key = fl_v_str(e, "key");
        const char *op = fl_v_str(e, "operator");
        fl_vpath(p, "%s.fieldSelector", field);
        /* Upstream stops at the first bad expression and reports the whole selector. */
        if (!key || (strcmp(key, "provider") && strcmp(key, "region") && strcmp(key, "zone"))) {
            fl_v_invalid(causes, p, fl_v_obj(aff, "fieldSelector"),
                         "unsupported key \"%s\", must be provider, region, or zone", key ? key : "");
            return;
        }
        if (!op || (strcmp(op, "In") && strcmp(op, "NotIn"))) {
            fl_v_invalid(causes, p, fl_v_obj(aff, "fieldSelector"), "unsupported operator \"%s\", must be In or NotIn",
                         op ? op : "");
            return;
        }
    }
}

static bool affinity_empty(const json_t *aff)
{
    return !json_object_get(aff, "labelSelector") && !json_object_get(aff, "fieldSelector") &&
           json_array_size(fl_v_arr(aff, "clusterNames")) == 0 && json_array_size(fl_v_arr(aff, "exclude")) == 0;
}

/* util.IsOverflowSchedulingAllowed: Divided with Aggregated, or Weighted by dynamic weight. */
static bool overflow_allowed(const json_t *rs)
{
    const char *type = fl_v_str(rs, "replicaSchedulingType");
    const char *pref = fl_v_str(rs, "replicaDivisionPreference");
    if (!rs || !type || strcmp(type, "Divided"))
        return false;
    if (pref && !strcmp(pref, "Aggregated"))
        return true;
    return pref && !strcmp(pref, "Weighted") && fl_v_nonempty(fl_v_obj(rs, "weightPreference"), "dynamicWeight");
}

/* An affinity name: required, a label key, at most 32 characters (CRD markers). */
static bool affinity_name(const json_t *term, const char *field, json_t *causes)
{
    const char *name = fl_v_nonempty(term, "affinityName");
    if (!name) {
        fl_v_required(causes, field, NULL);
        return false;
    }
    if (strlen(name) > 32) {
        fl_cause_add(causes, "FieldValueTooLong", field, "Too long: may not be more than 32 bytes");
        return false;
    }
    fl_v_label_name(causes, field, name);
    return true;
}

static void cluster_affinities(const json_t *terms, const json_t *rs, json_t *causes)
{
    char p[FL_VPATH_MAX], q[FL_VPATH_MAX];
    bool overflow_ok = overflow_allowed(rs);
    size_t i, j;
    json_t *t;
    json_array_foreach(terms, i, t) {
        fl_vpath(p, "spec.placement.clusterAffinities[%zu].affinityName", i);
        const char *name = fl_v_nonempty(t, "affinityName");
        if (affinity_name(t, p, causes)) {
            for (j = 0; j < i; j++) {
                const char *other = fl_v_str(json_array_get(terms, j), "affinityName");
                if (other && !strcmp(other, name)) {
                    fl_v_duplicate(causes, p, json_object_get(t, "affinityName"),
                                   "each affinity term in a policy must have a unique name");
                    break;
                }
            }
        }
        cluster_affinity(t, fl_vpath(p, "spec.placement.clusterAffinities[%zu]", i), causes);

        json_t *overflow = json_object_get(t, "overflowAffinities");
        if (!overflow || json_is_null(overflow))
            continue;
        fl_vpath(p, "spec.placement.clusterAffinities[%zu].overflowAffinities", i);
        if (!overflow_ok)
            fl_v_invalid(causes, p, overflow,
                         "overflowAffinities can only be used together with dynamic weight or aggregated scheduling");
        if (affinity_empty(t))
            fl_v_invalid(causes, p, overflow,
                         "overflowAffinities can only be used together with the inline ClusterAffinity");
        size_t k;
        json_t *o;
        json_array_foreach(overflow, k, o) {
            fl_vpath(q, "%s[%zu].affinityName", p, k);
            const char *oname = fl_v_nonempty(o, "affinityName");
            if (!affinity_name(o, q, causes))
                continue;
            bool dup = name && !strcmp(oname, name);
            for (j = 0; !dup && j < k; j++) {
                const char *other = fl_v_str(json_array_get(overflow, j), "affinityName");
                dup = other && !strcmp(other, oname);
            }
            if (dup)
                fl_v_duplicate(causes, q, json_object_get(o, "affinityName"),
                               "overflow affinity name must be unique and must not duplicate the primary group's "
                               "affinityName");
            cluster_affinity(o, fl_vpath(q, "%s[%zu]", p, k), causes);
        }
    }
}

static void spread_constraints(const json_t *scs, json_t *causes)
{
    static const char *const fields[] = {"cluster", "region", "zone", "provider", NULL};
    char p[FL_VPATH_MAX];
    bool seen[4] = {false, false, false, false}, reported[4] = {false, false, false, false};
    bool any_field = false;
    size_t i;
    json_t *c;
    json_array_foreach(scs, i, c) {
        fl_vpath(p, "spec.placement.spreadConstraints[%zu]", i);
        const char *by_field = fl_v_nonempty(c, "spreadByField");
        const char *by_label = fl_v_nonempty(c, "spreadByLabel");
        if (by_field && by_label)
            fl_v_invalid(causes, p, c, "spreadByLabel should not co-exist with spreadByField");
        json_int_t min = json_integer_value(json_object_get(c, "minGroups"));
        json_int_t max = json_integer_value(json_object_get(c, "maxGroups"));
        if (min < 0)
            fl_v_invalid(causes, p, c, "minGroups lower than 0 is not allowed");
        if (max < 0)
            fl_v_invalid(causes, p, c, "maxGroups lower than 0 is not allowed");
        if (max > 0 && max < min)
            fl_v_invalid(causes, p, c, "maxGroups lower than minGroups is not allowed");
        if (!by_field)
            continue;
        char q[FL_VPATH_MAX];
        if (!fl_v_enum(causes, fl_vpath(q, "%s.spreadByField", p), c, "spreadByField", fields, false))
            continue;
        any_field = true;
        size_t f = 0;
        while (strcmp(fields[f], by_field))
            f++;
        if (seen[f] && !reported[f]) {
            fl_v_invalid(causes, "spec.placement.spreadConstraints", scs, "multiple %s spread constraints are not allowed",
                         by_field);
            reported[f] = true;
        }
        seen[f] = true;
    }
    if (any_field && !seen[0])
        fl_v_invalid(causes, "spec.placement.spreadConstraints", scs,
                     "the cluster spread constraint must be enabled in one of the constraints in case of SpreadByField "
                     "is enabled");
}

static void replica_scheduling(const json_t *rs, json_t *causes)
{
    static const char *const types[] = {"Duplicated", "Divided", NULL};
    static const char *const prefs[] = {"Aggregated", "Weighted", NULL};
    static const char *const dyn[] = {"AvailableReplicas", NULL};
    char p[FL_VPATH_MAX];
    const char *base = "spec.placement.replicaScheduling";
    if (!json_is_object(rs))
        return;
    fl_v_enum(causes, fl_vpath(p, "%s.replicaSchedulingType", base), rs, "replicaSchedulingType", types, false);
    fl_v_enum(causes, fl_vpath(p, "%s.replicaDivisionPreference", base), rs, "replicaDivisionPreference", prefs, false);
    json_t *wp = fl_v_obj(rs, "weightPreference");
    if (!wp)
        return;
    fl_v_enum(causes, fl_vpath(p, "%s.weightPreference.dynamicWeight", base), wp, "dynamicWeight", dyn, false);
    size_t i;
    json_t *w;
    json_array_foreach(fl_v_arr(wp, "staticWeightList"), i, w) {
        json_t *weight = json_object_get(w, "weight");
        fl_vpath(p, "%s.weightPreference.staticWeightList[%zu].weight", base, i);
        if (!weight || json_is_null(weight))
            fl_v_required(causes, p, NULL);
        else if (!json_is_integer(weight))
            fl_v_invalid(causes, p, weight, "must be an integer");
        else if (json_integer_value(weight) < 1)
            fl_v_invalid(causes, p, weight, "must be greater than or equal to 1");
        json_t *target = json_object_get(w, "targetCluster");
        fl_vpath(p, "%s.weightPreference.staticWeightList[%zu].targetCluster", base, i);
        if (!json_is_object(target))
            fl_v_required(causes, p, NULL);
        else
            cluster_affinity(target, p, causes);
    }
}

/* Upstream only refuses the Lt/Gt operators here (they compare numbers on nodes, a
 * meaning clusters do not have); Flotilla also refuses unknown operators and effects,
 * which could never match a taint. */
static void cluster_tolerations(const json_t *tols, json_t *causes)
{
    static const char *const ops[] = {"", "Exists", "Equal", NULL};
    static const char *const effects[] = {"", "NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *t;
    json_array_foreach(tols, i, t) {
        const char *key = fl_v_nonempty(t, "key");
        if (key)
            fl_v_label_name(causes, fl_vpath(p, "spec.placement.clusterTolerations[%zu].key", i), key);
        fl_v_enum(causes, fl_vpath(p, "spec.placement.clusterTolerations[%zu].operator", i), t, "operator", ops, false);
        fl_v_enum(causes, fl_vpath(p, "spec.placement.clusterTolerations[%zu].effect", i), t, "effect", effects, false);
    }
}

static void workload_affinity(const json_t *wa, json_t *causes)
{
    if (!json_is_object(wa))
        return;
    json_t *aff = fl_v_obj(wa, "affinity"), *anti = fl_v_obj(wa, "antiAffinity");
    const char *ak = fl_v_str(aff, "groupByLabelKey"), *nk = fl_v_str(anti, "groupByLabelKey");
    if (aff)
        fl_v_label_name(causes, "spec.placement.workloadAffinity.affinity.groupByLabelKey", ak);
    if (anti)
        fl_v_label_name(causes, "spec.placement.workloadAffinity.antiAffinity.groupByLabelKey", nk);
    if (ak && nk && !strcmp(ak, nk))
        fl_v_invalid(causes, "spec.placement.workloadAffinity", wa,
                     "affinity and antiAffinity must not use the same groupByLabelKey");
}

static void placement(const json_t *pl, json_t *causes)
{
    if (!json_is_object(pl))
        return;
    json_t *aff = json_object_get(pl, "clusterAffinity");
    json_t *affs = json_object_get(pl, "clusterAffinities");
    if (aff && !json_is_null(aff) && affs && !json_is_null(affs))
        fl_v_invalid(causes, "spec.placement.clusterAffinities", affs, "clusterAffinities cannot co-exist with clusterAffinity");
    cluster_affinity(aff, "spec.placement.clusterAffinity", causes);
    cluster_affinities(fl_v_arr(pl, "clusterAffinities"), fl_v_obj(pl, "replicaScheduling"), causes);
    spread_constraints(fl_v_arr(pl, "spreadConstraints"), causes);
    replica_scheduling(fl_v_obj(pl, "replicaScheduling"), causes);
    cluster_tolerations(fl_v_arr(pl, "clusterTolerations"), causes);
    workload_affinity(fl_v_obj(pl, "workloadAffinity"), causes);
}

/* purgeMode, with the deprecated spellings mapped: Immediately -> Directly,
 * Graciously -> Gracefully. Returns the effective mode ("Gracefully" when unset, the
 * CRD default), or NULL after a cause when the value is not supported. */
static const char *purge_mode(const json_t *obj, const char *field, bool allow_never, json_t *causes)
{
    static const char *const app_modes[] = {"Directly", "Gracefully", "Never", NULL};
    static const char *const cluster_modes[] = {"Directly", "Gracefully", NULL};
    json_t *v = json_object_get(obj, "purgeMode");
    if (!v || json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
        return "Gracefully";
    const char *s = json_string_value(v);
    if (s && !strcmp(s, "Immediately"))
        return "Directly";
    if (s && !strcmp(s, "Graciously"))
        return "Gracefully";
    const char *const *modes = allow_never ? app_modes : cluster_modes;
    if (!s || !fl_v_in(s, modes)) {
        fl_v_unsupported(causes, field, v, modes);
        return NULL;
    }
    return s;
}

/* Why path is not a JSONPath expression the state preservation can evaluate (kubectl's
 * template form, "{.replicas}", "{.conditions[?(@.type==\"Ready\")].status}"), or NULL: one
 * "{...}" with a path starting at the status ('.' or '['), brackets, parentheses and quotes
 * balanced. */
static const char *jsonpath_problem(const char *path)
{
    size_t n = strlen(path);
    if (n < 3 || path[0] != '{' || path[n - 1] != '}')
        return "must be a JSONPath template in braces, such as {.replicas}";
    if (path[1] != '.' && path[1] != '[')
        return "the path must start with '.' or '[' (it is read from the status)";
    int sq = 0, paren = 0;
    char quote = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = path[i];
        if (quote) {
            if (c == '\\' && i + 2 < n)
                i++;
            else if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '"' || c == '\'')
            quote = c;
        else if (c == '[')
            sq++;
        else if (c == ']' && --sq < 0)
            return "a ']' without its '['";
        else if (c == '(')
            paren++;
        else if (c == ')' && --paren < 0)
            return "a ')' without its '('";
        else if (c == '{' || c == '}')
            return "braces inside the template";
        else if (c == '.' && path[i + 1] == '.' && path[i + 2] == '.')
            return "'...' is not a path step";
    }
    if (quote)
        return "an unclosed quote";
    if (sq || paren)
        return "unbalanced brackets or parentheses";
    return NULL;
}

static void state_preservation(const json_t *sp, const char *field, json_t *causes)
{
    char p[FL_VPATH_MAX];
    if (!sp || json_is_null(sp))
        return;
    json_t *rules = fl_v_arr(sp, "rules");
    if (!rules || json_array_size(rules) == 0) {
        fl_v_required(causes, fl_vpath(p, "%s.rules", field), NULL);
        return;
    }
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        const char *alias = fl_v_require_str(causes, fl_vpath(p, "%s.rules[%zu].aliasLabelName", field, i), r,
                                             "aliasLabelName");
        if (alias)
            fl_v_label_name(causes, p, alias);
        const char *jp = fl_v_require_str(causes, fl_vpath(p, "%s.rules[%zu].jsonPath", field, i), r, "jsonPath");
        const char *why = jp ? jsonpath_problem(jp) : NULL;
        if (why)
            fl_v_invalid_str(causes, p, jp, why);
    }
}

static void failover(const json_t *spec, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *fo = fl_v_obj(spec, "failover");
    if (!fo)
        return;
    json_t *app = fl_v_obj(fo, "application");
    if (app) {
        if (!json_is_true(json_object_get(spec, "propagateDeps")))
            fl_v_invalid(causes, "spec.propagateDeps", json_false(),
                         "application failover is set, propagateDeps must be true");
        json_t *dc = json_object_get(app, "decisionConditions");
        if (!json_is_object(dc)) {
            fl_v_required(causes, "spec.failover.application.decisionConditions", NULL);
        } else {
            json_t *ts = json_object_get(dc, "tolerationSeconds");
            if (json_is_integer(ts) && json_integer_value(ts) < 0)
                fl_v_invalid(causes, "spec.failover.application.decisionConditions.tolerationSeconds", ts,
                             "must be greater than or equal to 0");
        }
        const char *mode = purge_mode(app, "spec.failover.application.purgeMode", true, causes);
        json_t *gp = json_object_get(app, "gracePeriodSeconds");
        if (gp && !json_is_null(gp)) {
            /* Upstream also requires gracePeriodSeconds with Gracefully, after its
             * mutating webhook defaulted it to 600; unset means that default here. */
            if (mode && strcmp(mode, "Gracefully"))
                fl_v_invalid(causes, "spec.failover.application.gracePeriodSeconds", gp,
                             "only takes effect when purgeMode is gracefully");
            if (json_is_integer(gp) && json_integer_value(gp) <= 0)
                fl_v_invalid(causes, "spec.failover.application.gracePeriodSeconds", gp, "must be greater than 0");
        }
        state_preservation(json_object_get(app, "statePreservation"),
                           fl_vpath(p, "spec.failover.application.statePreservation"), causes);
    }
    json_t *cl = fl_v_obj(fo, "cluster");
    if (cl) {
        purge_mode(cl, "spec.failover.cluster.purgeMode", false, causes);
        state_preservation(json_object_get(cl, "statePreservation"),
                           fl_vpath(p, "spec.failover.cluster.statePreservation"), causes);
    }
}

static void suspension(const json_t *spec, json_t *causes)
{
    json_t *s = fl_v_obj(spec, "suspension");
    if (!s)
        return;
    json_t *names = fl_v_arr(fl_v_obj(s, "dispatchingOnClusters"), "clusterNames");
    if (json_is_true(json_object_get(s, "dispatching")) && json_array_size(names) > 0)
        fl_v_invalid(causes, "spec.suspension", s, "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames");
}

/* ---------------------------------------------------------------------------------
 * PropagationPolicy / ClusterPropagationPolicy.
 */
void fl_validate_propagation_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    static const char *const conflict[] = {"Abort", "Overwrite", NULL};
    static const char *const activation[] = {"", "Lazy", NULL};
    static const char *const preemption[] = {"Always", "Never", NULL};
    static const char *const prio_sources[] = {"KubePriorityClass", NULL};
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    json_t *sels = json_object_get(spec, "resourceSelectors");
    if (!sels || json_is_null(sels))
        fl_v_required(causes, "spec.resourceSelectors", NULL);
    else if (!json_is_array(sels) || json_array_size(sels) == 0)
        fl_v_invalid(causes, "spec.resourceSelectors", sels, "must have at least 1 items");
    const char *preempt = fl_v_str(spec, "preemption");
    resource_selectors(json_is_array(sels) ? sels : NULL, obj, preempt && !strcmp(preempt, "Always"), causes);

    placement(json_object_get(spec, "placement"), causes);
    failover(spec, causes);
    suspension(spec, causes);

    fl_v_enum(causes, "spec.conflictResolution", spec, "conflictResolution", conflict, false);
    fl_v_enum(causes, "spec.activationPreference", spec, "activationPreference", activation, false);
    fl_v_enum(causes, "spec.preemption", spec, "preemption", preemption, false);

    json_t *prio = json_object_get(spec, "priority");
    if (prio && !json_is_null(prio) && !json_is_integer(prio))
        fl_v_invalid(causes, "spec.priority", prio, "must be an integer");
    json_t *sched = json_object_get(spec, "schedulerName");
    if (sched && !json_is_null(sched) && !json_is_string(sched))
        fl_v_invalid(causes, "spec.schedulerName", sched, "must be a string");
    json_t *sp = fl_v_obj(spec, "schedulePriority");
    if (sp) {
        fl_v_enum(causes, "spec.schedulePriority.priorityClassSource", sp, "priorityClassSource", prio_sources, true);
        fl_v_require_str(causes, "spec.schedulePriority.priorityClassName", sp, "priorityClassName");
    }
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *d;
    json_array_foreach(fl_v_arr(spec, "dependentOverrides"), i, d) {
        if (!json_is_string(d))
            fl_v_invalid(causes, fl_vpath(p, "spec.dependentOverrides[%zu]", i), d, "must be a string");
    }
}

/* ---------------------------------------------------------------------------------
 * OverridePolicy / ClusterOverridePolicy.
 */

/* value of a plaintext/json/yaml operation: required for add and replace, forbidden
 * for remove. check_missing is false for plaintext, whose value upstream leaves
 * unchecked for add/replace. */
static void operation_value(const json_t *op_obj, const char *base, bool check_missing, json_t *causes)
{
    char p[FL_VPATH_MAX];
    const char *op = fl_v_str(op_obj, "operator");
    json_t *v = json_object_get(op_obj, "value");
    bool has = v && !json_is_null(v);
    fl_vpath(p, "%s.value", base);
    if (op && !strcmp(op, "remove") && has)
        fl_v_invalid(causes, p, v, "value is not allowed for remove operation");
    else if (check_missing && op && (!strcmp(op, "add") || !strcmp(op, "replace")) && !has)
        fl_v_invalid(causes, p, NULL, "value is required for add or replace operation");
}

static void patch_ops(const json_t *ops, const char *base, json_t *causes)
{
    char p[FL_VPATH_MAX], q[FL_VPATH_MAX];
    size_t i;
    json_t *o;
    json_array_foreach(ops, i, o) {
        fl_vpath(p, "%s[%zu]", base, i);
        const char *sub = fl_v_str(o, "subPath");
        const char *msg;
        if (!sub)
            fl_v_required(causes, fl_vpath(q, "%s.subPath", p), NULL);
        else if ((msg = fl_v_json_pointer(sub)))
            fl_v_invalid_str(causes, fl_vpath(q, "%s.subPath", p), sub, msg);
        fl_v_enum(causes, fl_vpath(q, "%s.operator", p), o, "operator", OVERRIDE_OPS, true);
        operation_value(o, p, true, causes);
    }
}

static bool overriders_empty(const json_t *ov)
{
    static const char *const keys[] = {"plaintext",       "imageOverrider",       "commandOverrider", "argsOverrider",
                                       "labelsOverrider", "annotationsOverrider", "fieldOverrider",   NULL};
    for (size_t i = 0; keys[i]; i++)
        if (json_array_size(fl_v_arr(ov, keys[i])) > 0)
            return false;
    return true;
}

static void overriders(const json_t *ov, const char *base, json_t *causes)
{
    static const char *const components[] = {"Registry", "Repository", "Tag", NULL};
    char p[FL_VPATH_MAX], q[FL_VPATH_MAX];
    size_t i;
    json_t *o;
    const char *msg;
    if (!json_is_object(ov))
        return;

    json_array_foreach(fl_v_arr(ov, "plaintext"), i, o) {
        fl_vpath(p, "%s.plaintext[%zu]", base, i);
        fl_v_require_str(causes, fl_vpath(q, "%s.path", p), o, "path");
        fl_v_enum(causes, fl_vpath(q, "%s.operator", p), o, "operator", OVERRIDE_OPS, true);
        operation_value(o, p, false, causes);
    }

    json_array_foreach(fl_v_arr(ov, "imageOverrider"), i, o) {
        fl_vpath(p, "%s.imageOverrider[%zu]", base, i);
        fl_v_enum(causes, fl_vpath(q, "%s.component", p), o, "component", components, true);
        fl_v_enum(causes, fl_vpath(q, "%s.operator", p), o, "operator", OVERRIDE_OPS, true);
        json_t *pred = fl_v_obj(o, "predicate");
        if (pred) {
            const char *path = fl_v_str(pred, "path");
            if (!path)
                fl_v_required(causes, fl_vpath(q, "%s.predicate.path", p), NULL);
            else if ((msg = fl_v_json_pointer(path)))
                fl_v_invalid_str(causes, fl_vpath(q, "%s.predicate.path", p), path, msg);
        }
    }

    static const char *const cmd_kinds[] = {"commandOverrider", "argsOverrider", NULL};
    for (size_t c = 0; cmd_kinds[c]; c++) {
        json_array_foreach(fl_v_arr(ov, cmd_kinds[c]), i, o) {
            fl_vpath(p, "%s.%s[%zu]", base, cmd_kinds[c], i);
            fl_v_require_str(causes, fl_vpath(q, "%s.containerName", p), o, "containerName");
            fl_v_enum(causes, fl_vpath(q, "%s.operator", p), o, "operator", ADD_REMOVE_OPS, true);
        }
    }

    json_array_foreach(fl_v_arr(ov, "labelsOverrider"), i, o) {
        fl_vpath(p, "%s.labelsOverrider[%zu]", base, i);
        fl_v_enum(causes, fl_vpath(q, "%s.operator", p), o, "operator", OVERRIDE_OPS, true);
        fl_v_labels(causes, fl_vpath(q, "%s.value", p), fl_v_obj(o, "value"));
    }
    json_array_foreach(fl_v_arr(ov, "annotationsOverrider"), i, o) {
        fl_vpath(p, "%s.annotationsOverrider[%zu]", base, i);
        fl_v_enum(causes, fl_vpath(q, "%s.operator", p), o, "operator", OVERRIDE_OPS, true);
        fl_v_annotations(causes, fl_vpath(q, "%s.value", p), fl_v_obj(o, "value"));
    }

    json_array_foreach(fl_v_arr(ov, "fieldOverrider"), i, o) {
        fl_vpath(p, "%s.fieldOverrider[%zu]", base, i);
        const char *fp = fl_v_str(o, "fieldPath");
        if (!fp || !*fp)
            fl_v_required(causes, fl_vpath(q, "%s.fieldPath", p), NULL);
        else if ((msg = fl_v_json_pointer(fp)))
            fl_v_invalid_str(causes, fl_vpath(q, "%s.fieldPath", p), fp, msg);
        size_t nj = json_array_size(fl_v_arr(o, "json")), ny = json_array_size(fl_v_arr(o, "yaml"));
        if (nj && ny)
            fl_v_invalid(causes, p, o, "FieldOverrider has both YAML and JSON set. Only one is allowed");
        else if (!nj && !ny)
            fl_v_required(causes, p, "FieldOverrider must have either JSON or YAML set");
        patch_ops(fl_v_arr(o, "json"), fl_vpath(q, "%s.json", p), causes);
        patch_ops(fl_v_arr(o, "yaml"), fl_vpath(q, "%s.yaml", p), causes);
    }
}

void fl_validate_override_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    resource_selectors(fl_v_arr(spec, "resourceSelectors"), obj, false, causes);

    json_t *rules = json_object_get(spec, "overrideRules");
    bool has_rules = rules && !json_is_null(rules);
    json_t *target = fl_v_obj(spec, "targetCluster");
    json_t *top = fl_v_obj(spec, "overriders");
    cluster_affinity(target, "spec.targetCluster", causes);
    if (target && has_rules)
        fl_v_invalid(causes, "spec.targetCluster", target, "overrideRules and targetCluster can't co-exist");
    if (top && !overriders_empty(top) && has_rules)
        fl_v_invalid(causes, "spec.overriders", top, "overrideRules and overriders can't co-exist");
    overriders(top, "spec.overriders", causes);

    size_t i;
    json_t *r;
    json_array_foreach(fl_v_arr(spec, "overrideRules"), i, r) {
        fl_vpath(p, "spec.overrideRules[%zu]", i);
        char q[FL_VPATH_MAX];
        if (!fl_v_obj(r, "overriders"))
            fl_v_required(causes, fl_vpath(q, "%s.overriders", p), NULL);
        overriders(fl_v_obj(r, "overriders"), fl_vpath(q, "%s.overriders", p), causes);
        cluster_affinity(fl_v_obj(r, "targetCluster"), fl_vpath(q, "%s.targetCluster", p), causes);
    }
}

/* ---------------------------------------------------------------------------------
 * ClusterTaintPolicy: the CRD's markers (taints required with at least one item; key and
 * effect required; conditionType, operator and statusValues required) and the webhook's
 * duplicate rule, with its text. Ours: effect limited to the two a Cluster accepts,
 * operator to In/NotIn (the controller's only ones), a taint key/value as a Cluster's,
 * statusValues not empty, and at least one of addOnConditions/removeOnConditions (a
 * policy with neither can never act). Karmada's webhook refuses NoExecute unless an
 * administrator allows it (--allow-no-execute-taint-policy); Flotilla allows it, since
 * its failover acts on NoExecute taints by default.
 */
static void match_conditions(const json_t *list, const char *base, json_t *causes)
{
    static const char *const ops[] = {"In", "NotIn", NULL};
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *m;
    json_array_foreach(list, i, m) {
        fl_v_require_str(causes, fl_vpath(p, "%s[%zu].conditionType", base, i), m, "conditionType");
        fl_v_enum(causes, fl_vpath(p, "%s[%zu].operator", base, i), m, "operator", ops, true);
        if (json_array_size(fl_v_arr(m, "statusValues")) == 0)
            fl_v_required(causes, fl_vpath(p, "%s[%zu].statusValues", base, i), NULL);
    }
}

void fl_validate_cluster_taint_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    static const char *const effects[] = {"NoSchedule", "NoExecute", NULL};
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    cluster_affinity(fl_v_obj(spec, "targetClusters"), "spec.targetClusters", causes);
    json_t *add = fl_v_arr(spec, "addOnConditions"), *remove = fl_v_arr(spec, "removeOnConditions");
    if (json_array_size(add) == 0 && json_array_size(remove) == 0)
        fl_v_required(causes, "spec.addOnConditions", "at least one of addOnConditions and removeOnConditions "
                                                       "must be set");
    match_conditions(add, "spec.addOnConditions", causes);
    match_conditions(remove, "spec.removeOnConditions", causes);

    json_t *taints = fl_v_arr(spec, "taints");
    if (json_array_size(taints) == 0) {
        fl_v_required(causes, "spec.taints", NULL);
        return;
    }
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t) {
        const char *key = fl_v_require_str(causes, fl_vpath(p, "spec.taints[%zu].key", i), t, "key");
        if (key)
            fl_v_label_name(causes, p, key);
        const char *val = fl_v_str(t, "value"), *msg;
        if (val && (msg = fl_validate_label_value(val)))
            fl_v_invalid_str(causes, fl_vpath(p, "spec.taints[%zu].value", i), val, msg);
        if (!fl_v_enum(causes, fl_vpath(p, "spec.taints[%zu].effect", i), t, "effect", effects, true) || !key)
            continue;
        const char *eff = fl_v_str(t, "effect");
        for (size_t j = 0; j < i; j++) {
            json_t *o = json_array_get(taints, j);
            const char *ok = fl_v_str(o, "key"), *oe = fl_v_str(o, "effect");
            if (ok && oe && !strcmp(ok, key) && !strcmp(oe, eff)) {
                char detail[FL_VPATH_MAX];
                snprintf(detail, sizeof detail, "Duplicate taint with the same key(%s) and effect(%s) is not allowed",
                         key, eff);
                fl_v_duplicate(causes, fl_vpath(p, "spec.taints[%zu]", i), t, detail);
                break;
            }
        }
    }
}

/* ---------------------------------------------------------------------------------
 * Cluster (pkg/apis/cluster/validation).
 */

/* apiEndpoint as url.Parse + the checks upstream makes on it: scheme://host[:port][/path],
 * no user info, no query, no fragment. */
static void api_endpoint(const char *url, const char *field, json_t *causes)
{
    static const char form[] = "; desired format: hostname, hostname:port, IP or IP:port";
    char detail[160];
    const char *sep = strstr(url, "://");
    const char *host = sep ? sep + 3 : NULL;
    size_t hlen = host ? strcspn(host, "/?#") : 0;
    if (!host || hlen == 0) {
        snprintf(detail, sizeof detail, "host must be provided%s", form);
        fl_v_invalid_str(causes, field, "", detail);
        return;
    }
    for (const char *s = url; s < sep; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (s > url && strchr("0123456789+-.", *s)))) {
            snprintf(detail, sizeof detail, "apiEndpoint must be a valid URL: invalid scheme%s", form);
            fl_v_invalid_str(causes, field, url, detail);
            return;
        }
    }
    if (memchr(host, '@', hlen))
        fl_v_invalid_str(causes, field, url, "user information is not permitted in the URL");
    if (strchr(url, '#'))
        fl_v_invalid_str(causes, field, strchr(url, '#') + 1, "fragments are not permitted in the URL");
    const char *q = strchr(url, '?');
    if (q && q[1] && q[1] != '#')
        fl_v_invalid_str(causes, field, q + 1, "query parameters are not permitted in the URL");
}

static void secret_ref(const json_t *spec, const char *key, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *ref = fl_v_obj(spec, key);
    if (!ref)
        return;
    fl_v_require_str(causes, fl_vpath(p, "spec.%s.namespace", key), ref, "namespace");
    fl_v_require_str(causes, fl_vpath(p, "spec.%s.name", key), ref, "name");
}

static void label_value_field(const json_t *spec, const char *key, json_t *causes)
{
    char p[FL_VPATH_MAX];
    const char *v = fl_v_str(spec, key), *msg;
    if (v && (msg = fl_validate_label_value(v)))
        fl_v_invalid_str(causes, fl_vpath(p, "spec.%s", key), v, msg);
}

/* Ours: where the live state of what a cluster runs comes from (core/wellknown.h). An unknown
 * value is refused, never taken for the default; metrics only for Push clusters, whose status
 * the control plane gathers (a Pull cluster's agent reports its own). */
static void status_source(const json_t *obj, const json_t *spec, json_t *causes)
{
    static const char *const sources[] = {"watch", "metrics", NULL};
    static const char field[] = "metadata.annotations[" FL_STATUS_SOURCE_ANNOTATION "]";
    const json_t *v = json_object_get(fl_v_obj(fl_v_obj(obj, "metadata"), "annotations"), FL_STATUS_SOURCE_ANNOTATION);
    if (!v)
        return;
    const char *src = json_string_value(v);
    size_t i = 0;
    while (src && sources[i] && strcmp(src, sources[i]))
        i++;
    if (!src || !sources[i]) {
        fl_v_unsupported(causes, field, v, sources);
        return;
    }
    const char *mode = fl_v_str(spec, "syncMode");
    if (!strcmp(src, "metrics") && mode && !strcmp(mode, "Pull"))
        fl_v_invalid_str(causes, field, src,
                         "metrics is for Push clusters: a Pull cluster's agent reports the live status itself");
}

void fl_validate_cluster(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    static const char *const modes[] = {"Pull", "Push", NULL};
    /* Karmada accepts only these two on clusters (lifted validateClusterTaintEffect):
     * its scheduler has no soft preference for clusters. */
    static const char *const effects[] = {"NoSchedule", "NoExecute", NULL};
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    fl_v_enum(causes, "spec.syncMode", spec, "syncMode", modes, true);
    status_source(obj, spec, causes);
    const char *ep = fl_v_nonempty(spec, "apiEndpoint");
    if (ep)
        api_endpoint(ep, "spec.apiEndpoint", causes);
    secret_ref(spec, "secretRef", causes);
    secret_ref(spec, "impersonatorSecretRef", causes);
    const char *proxy = fl_v_nonempty(spec, "proxyURL");
    if (proxy && strncmp(proxy, "http://", 7) && strncmp(proxy, "https://", 8) && strncmp(proxy, "socks5://", 9)) {
        size_t n = strcspn(proxy, ":");
        char detail[128];
        snprintf(detail, sizeof detail, "unsupported scheme \"%.*s\", must be http, https, or socks5",
                 proxy[n] ? (int)(n > 32 ? 32 : n) : 0, proxy);
        fl_v_invalid_str(causes, "spec.proxyURL", proxy, detail);
    }
    label_value_field(spec, "provider", causes);
    label_value_field(spec, "region", causes);
    if (fl_v_nonempty(spec, "zone") && json_array_size(fl_v_arr(spec, "zones")) > 0)
        fl_v_invalid(causes, "spec.zones", fl_v_arr(spec, "zones"), "Zone and Zones cannot co-exist");
    else
        label_value_field(spec, "zone", causes);

    json_t *taints = fl_v_arr(spec, "taints");
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t) {
        const char *key = fl_v_str(t, "key");
        fl_v_label_name(causes, fl_vpath(p, "spec.taints[%zu].key", i), key);
        const char *val = fl_v_str(t, "value"), *msg;
        if (val && (msg = fl_validate_label_value(val)))
            fl_v_invalid_str(causes, fl_vpath(p, "spec.taints[%zu].value", i), val, msg);
        if (!fl_v_enum(causes, fl_vpath(p, "spec.taints[%zu].effect", i), t, "effect", effects, true))
            continue;
        const char *eff = fl_v_str(t, "effect");
        for (size_t j = 0; key && j < i; j++) {
            json_t *o = json_array_get(taints, j);
            const char *ok = fl_v_str(o, "key"), *oe = fl_v_str(o, "effect");
            if (ok && oe && !strcmp(ok, key) && !strcmp(oe, eff)) {
                fl_v_duplicate(causes, fl_vpath(p, "spec.taints[%zu]", i), t,
                               "taints must be unique by key and effect pair");
                break;
            }
        }
    }
}

/* ---------------------------------------------------------------------------------
 * ResourceBinding / ClusterResourceBinding, Work, ResourceInterpreterCustomization.
 */
void fl_validate_resource_binding(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    static const char *const conflict[] = {"Abort", "Overwrite", NULL};
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    json_t *res = fl_v_obj(spec, "resource");
    if (!res) {
        fl_v_required(causes, "spec.resource", NULL);
    } else {
        fl_v_require_str(causes, "spec.resource.apiVersion", res, "apiVersion");
        fl_v_require_str(causes, "spec.resource.kind", res, "kind");
        fl_v_require_str(causes, "spec.resource.name", res, "name");
    }
    json_t *rep = json_object_get(spec, "replicas");
    if (json_is_integer(rep) && json_integer_value(rep) < 0)
        fl_v_invalid(causes, "spec.replicas", rep, "must be greater than or equal to 0");

    size_t i;
    json_t *c;
    json_array_foreach(fl_v_arr(spec, "clusters"), i, c) {
        fl_v_require_str(causes, fl_vpath(p, "spec.clusters[%zu].name", i), c, "name");
        json_t *r = json_object_get(c, "replicas");
        if (json_is_integer(r) && json_integer_value(r) < 0)
            fl_v_invalid(causes, fl_vpath(p, "spec.clusters[%zu].replicas", i), r, "must be greater than or equal to 0");
    }
    /* Upstream webhook: component names non-empty and unique. */
    json_array_foreach(fl_v_arr(spec, "components"), i, c) {
        const char *name = fl_v_nonempty(c, "name");
        bool dup = false;
        for (size_t j = 0; name && j < i; j++) {
            const char *o = fl_v_str(json_array_get(fl_v_arr(spec, "components"), j), "name");
            dup = dup || (o && !strcmp(o, name));
        }
        if (!name || dup)
            fl_v_invalid_str(causes, fl_vpath(p, "spec.components[%zu].name", i), fl_v_str(c, "name"),
                             name ? "component names must be unique" : "component names must be non-empty");
    }
    fl_v_enum(causes, "spec.conflictResolution", spec, "conflictResolution", conflict, false);
    placement(json_object_get(spec, "placement"), causes);
    json_array_foreach(fl_v_arr(spec, "gracefulEvictionTasks"), i, c) {
        fl_v_require_str(causes, fl_vpath(p, "spec.gracefulEvictionTasks[%zu].fromCluster", i), c, "fromCluster");
        purge_mode(c, fl_vpath(p, "spec.gracefulEvictionTasks[%zu].purgeMode", i), true, causes);
    }
}

void fl_validate_work(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    char p[FL_VPATH_MAX];
    json_t *manifests = fl_v_arr(fl_v_obj(fl_v_obj(obj, "spec"), "workload"), "manifests");
    size_t i;
    json_t *m;
    json_array_foreach(manifests, i, m) {
        if (!json_is_object(m)) {
            fl_v_invalid(causes, fl_vpath(p, "spec.workload.manifests[%zu]", i), m, "must be an object");
            continue;
        }
        fl_v_require_str(causes, fl_vpath(p, "spec.workload.manifests[%zu].apiVersion", i), m, "apiVersion");
        fl_v_require_str(causes, fl_vpath(p, "spec.workload.manifests[%zu].kind", i), m, "kind");
    }
}

void fl_validate_interpreter_customization(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    static const char *const rules[] = {"retention",         "replicaResource",      "componentResource",
                                        "replicaRevision",   "statusReflection",     "statusAggregation",
                                        "healthInterpretation", "dependencyInterpretation", NULL};
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    json_t *target = fl_v_obj(spec, "target");
    if (!target) {
        fl_v_required(causes, "spec.target", NULL);
    } else {
        fl_v_require_str(causes, "spec.target.apiVersion", target, "apiVersion");
        fl_v_require_str(causes, "spec.target.kind", target, "kind");
    }
    json_t *cust = json_object_get(spec, "customizations");
    if (!json_is_object(cust)) {
        fl_v_required(causes, "spec.customizations", NULL);
        return;
    }
    for (size_t i = 0; rules[i]; i++) {
        json_t *r = json_object_get(cust, rules[i]);
        if (!r || json_is_null(r))
            continue;
        json_t *lua = json_object_get(r, "luaScript");
        fl_vpath(p, "spec.customizations.%s.luaScript", rules[i]);
        if (!lua || json_is_null(lua))
            fl_v_required(causes, p, NULL);
        else if (!json_is_string(lua))
            fl_v_invalid(causes, p, lua, "must be a string");
    }
}

/* ---- defaults ---- */

static json_t *obj_field(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_object(v) ? v : NULL;
}

static void default_str(json_t *o, const char *key, const char *value)
{
    if (json_is_object(o) && !json_object_get(o, key))
        json_object_set_new(o, key, json_string(value));
}

void fl_default_karmada(const fl_kind *k, json_t *obj)
{
    if (strcmp(k->group, "policy.karmada.io") ||
        (strcmp(k->kind, "PropagationPolicy") && strcmp(k->kind, "ClusterPropagationPolicy")))
        return;
    json_t *spec = obj_field(obj, "spec");
    if (!spec)
        return; /* validation says what is missing */
    if (!json_object_get(spec, "priority"))
        json_object_set_new(spec, "priority", json_integer(0));
    default_str(spec, "preemption", "Never");
    default_str(spec, "conflictResolution", "Abort");
    default_str(spec, "schedulerName", "default-scheduler");
    default_str(obj_field(obj_field(spec, "placement"), "replicaScheduling"), "replicaSchedulingType", "Divided");
    json_t *fo = obj_field(spec, "failover");
    json_t *app = obj_field(fo, "application");
    default_str(app, "purgeMode", "Gracefully");
    json_t *dc = obj_field(app, "decisionConditions");
    if (dc && !json_object_get(dc, "tolerationSeconds"))
        json_object_set_new(dc, "tolerationSeconds", json_integer(300));
    default_str(obj_field(fo, "cluster"), "purgeMode", "Gracefully");
    /* a PropagationPolicy selects in its own namespace: say so in its selectors */
    const char *ns = json_string_value(json_object_get(obj_field(obj, "metadata"), "namespace"));
    if (!strcmp(k->kind, "PropagationPolicy") && ns && *ns) {
        size_t i;
        json_t *sel;
        json_array_foreach(json_object_get(spec, "resourceSelectors"), i, sel) {
            json_t *sns = json_object_get(sel, "namespace");
            if (json_is_object(sel) && (!sns || (json_is_string(sns) && !*json_string_value(sns))))
                json_object_set_new(sel, "namespace", json_string(ns));
        }
    }
}
