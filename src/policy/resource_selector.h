/* resource_selector.h - which policies select a resource template, and which one wins.
 *
 * A Karmada ResourceSelector (policy.karmada.io/v1alpha1) is
 *   {apiVersion, kind, namespace?, name?, labelSelector?}
 * and appears in spec.resourceSelectors of PropagationPolicy, ClusterPropagationPolicy,
 * OverridePolicy and ClusterOverridePolicy. Matching follows Karmada's
 * util.ResourceSelectorPriority:
 *   - apiVersion and kind must equal the template's exactly (no group-only matching);
 *   - a non-empty namespace must equal the template's namespace;
 *   - a non-empty name must equal the template's name, and then the labelSelector is
 *     ignored (level NAME);
 *   - otherwise a present labelSelector must match the template's labels (level
 *     LABELSELECTOR; note an explicit {} selector is this level, not ALL);
 *   - otherwise the selector matches every object of that kind there (level ALL).
 * An empty namespace in a selector of a namespaced policy (PropagationPolicy,
 * OverridePolicy) means the policy's own namespace: Karmada's admission writes it in.
 * Callers pass that namespace as policy_ns; pass NULL for cluster-scoped policies,
 * whose empty selector namespace matches any namespace (and cluster-scoped objects).
 *
 * The winner among candidate policies (Karmada's detector): a PropagationPolicy in the
 * template's namespace beats any ClusterPropagationPolicy; within one kind, higher
 * spec.priority (default 0) first, then the better match level of its selectors, then
 * the alphabetically smaller name.
 *
 * Error messages name the field: "resourceSelectors[1].kind: Required value",
 * "template metadata.labels: Invalid value: must be an object".
 * Pure functions: any thread. */
#ifndef FL_POLICY_RESOURCE_SELECTOR_H
#define FL_POLICY_RESOURCE_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* How precisely a selector (or the best of a policy's selectors) matches a template;
 * the numeric order is the precedence order (Karmada's ImplicitPriority). */
typedef enum fl_policy_match_level {
    FL_POLICY_MATCH_NONE = 0,          /* does not match */
    FL_POLICY_MATCH_ALL = 1,           /* by apiVersion/kind (and namespace) only */
    FL_POLICY_MATCH_LABELSELECTOR = 2, /* by labelSelector */
    FL_POLICY_MATCH_NAME = 3           /* by name */
} fl_policy_match_level;

/* Match level of one ResourceSelector against a template object. policy_ns: the
 * namespace of a namespaced policy (fills an empty selector namespace), or NULL.
 * Returns 0 and *level, or FL_EINVAL (*level NONE) with *err (heap, caller frees)
 * naming the selector or template field that is malformed. *err is NULL on success. */
int fl_policy_selector_level(const json_t *selector, const json_t *object, const char *policy_ns,
                             fl_policy_match_level *level, char **err);

/* Does the ResourceSelector match the template? Same rules and errors as
 * fl_policy_selector_level; *match is level != NONE. */
int fl_policy_selector_match(const json_t *selector, const json_t *object, const char *policy_ns, bool *match,
                             char **err);

/* Best match level of a list of ResourceSelectors (a policy's spec.resourceSelectors;
 * NULL, null or [] match nothing). Errors name "resourceSelectors[i]...". Every selector
 * is validated, even after a NAME-level match, so a bad list is always reported. */
int fl_policy_selectors_level(const json_t *selectors, const json_t *object, const char *policy_ns,
                              fl_policy_match_level *level, char **err);

/* Best match level of a whole policy object (any of the four kinds) against a template:
 * its spec.resourceSelectors, with policy_ns taken from the policy's metadata.namespace
 * when the kind is PropagationPolicy or OverridePolicy. Errors start with the policy's
 * kind and name ("PropagationPolicy default/nginx: spec.resourceSelectors[0].kind: ..."). */
int fl_policy_match_level_of(const json_t *policy, const json_t *object, fl_policy_match_level *level, char **err);

/* spec.priority of a PropagationPolicy/ClusterPropagationPolicy (0 when absent).
 * Returns 0 and *priority, or FL_EINVAL when it is not an int32. */
int fl_policy_explicit_priority(const json_t *policy, int32_t *priority, char **err);

/* The detector's choice: among policies (an array of PropagationPolicy and
 * ClusterPropagationPolicy objects, each with kind and metadata), the one that claims
 * template. Skipped, as Karmada skips them: policies being deleted
 * (metadata.deletionTimestamp set), PropagationPolicies outside the template's namespace
 * (so none for cluster-scoped templates), other kinds, and malformed policies (bad
 * selectors or priority; Karmada treats those as not matching, and admission rejects
 * them before they get here). Returns 0 and *winner (a borrowed pointer into policies,
 * NULL when nothing matches) and, if level != NULL, the winner's match level; or
 * FL_EINVAL with *err when template is not an object with apiVersion, kind and
 * metadata.name, or policies is not an array. */
int fl_policy_select(const json_t *template, const json_t *policies, const json_t **winner,
                     fl_policy_match_level *level, char **err);

/* Preemption (Karmada's detector, feature PropagationPolicyPreemption; the caller owns
 * the on/off switch). May policy take template away from claimer, the policy that has
 * claimed it? Only when policy's spec.preemption is "Always", claimer is a different
 * policy, one of policy's selectors names the template (preemption acts on templates a
 * selector names; admission requires names when preemption is Always), and:
 *   PropagationPolicy        vs ClusterPropagationPolicy claimer: always;
 *   PropagationPolicy        vs PropagationPolicy claimer:        higher priority only;
 *   ClusterPropagationPolicy vs ClusterPropagationPolicy claimer: higher priority only;
 *   ClusterPropagationPolicy vs PropagationPolicy claimer:        never.
 * claimer NULL (unclaimed) gives *may false: there is nothing to preempt, use
 * fl_policy_select. Returns 0 and *may, or FL_EINVAL with *err naming the field. */
int fl_policy_may_preempt(const json_t *policy, const json_t *claimer, const json_t *template, bool *may,
                          char **err);

#endif
