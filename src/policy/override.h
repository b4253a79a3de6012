/* override.h - apply Karmada OverridePolicy / ClusterOverridePolicy rules to a manifest.
 *
 * The binding controller renders one manifest per target cluster: a deep copy of the
 * template, then fl_override_apply with that Cluster and the override policies in
 * scope, then writes the result into the cluster's Work together with the two
 * annotations from fl_override_annotations.
 *
 * Order (Karmada's overridemanager, so stacked overrides end the same way):
 *   1. every ClusterOverridePolicy, then, for namespaced manifests only, every
 *      OverridePolicy of the manifest's namespace (others in the array are ignored);
 *   2. within each kind, policies whose resourceSelectors match (no selectors = all)
 *      sorted by ascending match level (all < labelSelector < name; the most precise
 *      policy is applied last and so wins), then by name;
 *   3. within a policy, spec.overrideRules in order, each only when its targetCluster
 *      (a ClusterAffinity; absent = every cluster) matches the cluster; the deprecated
 *      spec.targetCluster + spec.overriders pair is used when overrideRules is empty;
 *   4. within a rule: imageOverrider, commandOverrider, argsOverrider, labelsOverrider,
 *      annotationsOverrider, fieldOverrider, plaintext; each list in order.
 * The overriders are described in docs/internals/policy.md.
 *
 * Pure functions over caller-owned JSON: any thread. */
#ifndef FL_POLICY_OVERRIDE_H
#define FL_POLICY_OVERRIDE_H

#include <jansson.h>

#include "core/wellknown.h"

/* Apply, to manifest (an object, modified in place: a deep copy the caller owns), every
 * OverridePolicy/ClusterOverridePolicy in policies (array of objects) whose
 * resourceSelectors match the manifest and whose overrideRules' targetCluster matches
 * cluster (a cluster.karmada.io/v1alpha1 Cluster object), in the order above.
 *
 * *applied receives a new JSON array (caller decrefs), one entry per rule applied, in
 * application order:
 *   {"kind":"ClusterOverridePolicy"|"OverridePolicy", "namespace":"ns" (OverridePolicy
 *    only), "name":"...", "rule":i (index in spec.overrideRules; absent for the deprecated
 *    spec.overriders form), "overriders":{...}}
 * where overriders is the rule's Overriders in Karmada's canonical field order; pass it to
 * fl_override_annotations. Policies that match but have no rule for this cluster do not
 * appear; a matching rule with no overriders does (as upstream records it).
 *
 * Returns 0, or FL_EINVAL with *err (heap, caller frees) naming policy, rule and field,
 * e.g. "OverridePolicy default/web: spec.overrideRules[1].overriders.imageOverrider[0]
 * .component: Unsupported value: ...". Every policy's resourceSelectors, and every rule
 * of a policy that selects the manifest, are validated whatever the cluster, so a bad
 * policy fails the same way on every cluster. On failure the manifest is untouched
 * (overrides run on a copy that replaces the manifest's contents only at the end) and
 * *applied is NULL. *applied and *err are written on every path. */
int fl_override_apply(json_t *manifest, const json_t *cluster, const json_t *policies, json_t **applied, char **err);

/* Render the two Work annotations from an *applied array: *cluster_overrides for
 * policy.karmada.io/applied-cluster-overrides and *overrides for
 * policy.karmada.io/applied-overrides. Each is a heap string (caller frees), or NULL when
 * no policy of that kind was applied (then the annotation is not written). The text is
 * what Karmada writes: a compact JSON array of {"policyName","overriders"} sorted by
 * policy name, with Go's escaping of '<', '>' and '&'. Returns 0, or FL_EINVAL (both NULL,
 * *err set) when applied is not shaped like fl_override_apply's output. */
int fl_override_annotations(const json_t *applied, char **cluster_overrides, char **overrides, char **err);

#endif
