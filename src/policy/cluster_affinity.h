/* cluster_affinity.h - does a member cluster satisfy a Karmada ClusterAffinity?
 *
 * A ClusterAffinity (policy.karmada.io/v1alpha1, used by PropagationPolicy
 * spec.placement.clusterAffinity / clusterAffinities[] and by OverridePolicy
 * overrideRules[].targetCluster) has four optional parts, all of which must hold:
 *   exclude        cluster names that never match (checked first);
 *   labelSelector  a metav1.LabelSelector over the Cluster's metadata.labels;
 *   fieldSelector  matchExpressions on the keys "provider", "region", "zone";
 *   clusterNames   if non-empty, the cluster's name must be listed.
 * An absent (NULL or JSON null) affinity matches every cluster; so does {}.
 *
 * Field semantics, as Karmada's util.ClusterMatches:
 *   provider/region come from Cluster spec.provider / spec.region; an empty string
 *   counts as absent. In needs the value to be listed, NotIn matches when it is not
 *   listed or absent, Exists/DoesNotExist test presence.
 *   zone is a set: spec.zones (or, when that is empty, the deprecated spec.zone,
 *   which Karmada's admission moves into zones). In matches when any zone is listed,
 *   NotIn when no zone is listed (so also when the cluster has no zones), Exists when
 *   the cluster has at least one zone, DoesNotExist when it has none.
 *
 * Error messages name the field relative to the affinity object, e.g.
 * "fieldSelector.matchExpressions[0].operator: Unsupported value: \"Gt\": ...";
 * a caller prefixes its own path (spec.placement.clusterAffinity). Problems with the
 * Cluster object start with "cluster ".
 *
 * The one-shot fl_policy_cluster_affinity_match parses the affinity on every call.
 * Callers that test one affinity against many clusters (the scheduler) compile it
 * once with fl_policy_cluster_affinity_new and call fl_policy_cluster_affinity_eval.
 * Pure functions; a compiled affinity is immutable: any thread. */
#ifndef FL_POLICY_CLUSTER_AFFINITY_H
#define FL_POLICY_CLUSTER_AFFINITY_H

#include <jansson.h>
#include <stdbool.h>

/* Does cluster (a cluster.karmada.io/v1alpha1 Cluster object as JSON) satisfy affinity
 * (a Karmada ClusterAffinity: clusterNames, exclude, labelSelector,
 * fieldSelector{matchExpressions on provider/region/zone})? An absent/NULL affinity
 * matches everything. Returns 0 and *match, or FL_EINVAL with *err (heap, caller frees)
 * naming the field; *match is false and *err NULL on success paths that do not match.
 * *match and *err are written on every path. */
int fl_policy_cluster_affinity_match(const json_t *affinity, const json_t *cluster, bool *match, char **err);

/* A parsed ClusterAffinity; owns copies of everything it needs (the JSON may go away). */
typedef struct fl_cluster_affinity fl_cluster_affinity;

/* Parse affinity (NULL / null / {} = match all). Returns 0 and *out (caller frees with
 * fl_policy_cluster_affinity_free), or FL_EINVAL with *out NULL and *err naming the field. */
int fl_policy_cluster_affinity_new(const json_t *affinity, fl_cluster_affinity **out, char **err);

/* Evaluate a compiled affinity against a Cluster object. Returns 0 and *match, or
 * FL_EINVAL (*match false) with *err when the Cluster is malformed (no metadata.name,
 * labels not an object of strings, spec.provider/region/zone/zones of the wrong type). */
int fl_policy_cluster_affinity_eval(const fl_cluster_affinity *aff, const json_t *cluster, bool *match, char **err);

/* True when the affinity matches every cluster (no constraint at all). */
bool fl_policy_cluster_affinity_is_empty(const fl_cluster_affinity *aff);

/* Whether anything an affinity looks at differs between two versions of a Cluster (labels,
 * provider, region, zone, zones; a cluster's name never changes): a controller whose
 * affinities (OverridePolicies' targetCluster) matched the old one decides again only then.
 * Taints, status and the rest do not count. */
bool fl_policy_cluster_affinity_fields_changed(const json_t *old_cluster, const json_t *new_cluster);

/* Free a compiled affinity; NULL is a no-op. */
void fl_policy_cluster_affinity_free(fl_cluster_affinity *aff);

#endif
