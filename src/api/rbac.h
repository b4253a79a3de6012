/* rbac.h - Kubernetes RBAC authorization: the rules of Roles and ClusterRoles granted by
 * RoleBindings and ClusterRoleBindings, read from the store, decide what an identity may do.
 *
 * The decision (fl_rbac_allowed) reads an in-memory index: the bindings' subjects (User,
 * Group, ServiceAccount) as sorted keys, each pointing at the compiled rules of the role it
 * grants and the namespace it grants them in ("" for a ClusterRoleBinding). The index is
 * rebuilt on the request path, under a mutex, by the first request after a store watch on
 * the rbac.authorization.k8s.io keys reported a write: no thread of its own. ClusterRoles
 * with an aggregationRule get the rules of the ClusterRoles their selectors match, both in
 * the index and written back to the stored object (docs/internals/auth.md, "Authorization").
 *
 * rbac_defaults.c creates the roles and bindings kube-apiserver bootstraps plus Flotilla's own
 * (agents, bootstrap, metrics reader); rbac_review.c serves authorization.k8s.io's reviews
 * and checks impersonation.
 *
 * Threads: every function may be called from any thread, concurrently, except fl_rbac_free. */
#ifndef FL_RBAC_H
#define FL_RBAC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/auth.h"

struct fl_target;
typedef struct fl_rbac fl_rbac;

#define FL_RBAC_GROUP "rbac.authorization.k8s.io"
#define FL_RBAC_BOOTSTRAP_LABEL "kubernetes.io/bootstrapping"
#define FL_RBAC_BOOTSTRAP_VALUE "rbac-defaults"
/* The ClusterRole every agent's execution namespace binds (rbac_defaults.c). */
#define FL_RBAC_AGENT_ROLE "system:flotilla:agent"

/* An authorizer over api's store (not owned; it must outlive this). Reads nothing yet: the
 * first decision builds the index. Never NULL (out of memory aborts). */
fl_rbac *fl_rbac_new(fl_api *api);
/* NULL-safe. No decision may be running. */
void fl_rbac_free(fl_rbac *rb);

/* Does some rule bound to at->who (its user or one of its groups) allow at? at->who must not
 * be NULL. When allowed and why is not NULL, why receives Kubernetes' reason ("RBAC: allowed
 * by ClusterRoleBinding ..."); otherwise why[0] = 0. Rebuilds the index first when RBAC
 * objects changed since it was built. */
bool fl_rbac_allowed(fl_rbac *rb, const fl_auth_attrs *at, char *why, size_t cap);

/* What who may do in namespace ns ("" = cluster-wide rules only), as a SelfSubjectRulesReview
 * status: {"resourceRules": [...], "nonResourceRules": [...], "incomplete": false}. A new
 * reference. */
json_t *fl_rbac_rules(fl_rbac *rb, const fl_identity *who, const char *ns);

/* Rebuild the index now if RBAC objects changed (writing aggregated ClusterRoles' rules back):
 * what every decision does first, for callers that decide without it (system:masters). */
void fl_rbac_sync(fl_rbac *rb);

/* How many times the index was built (tests and the benchmark look at it). */
unsigned long fl_rbac_builds(fl_rbac *rb);

/* Does one PolicyRule (JSON, as in a Role's rules) allow at? Kubernetes' matching: verbs,
 * apiGroups, resources ("*", "res/sub", "* /sub"), resourceNames for resource requests;
 * verbs and nonResourceURLs (exact, "*", or a prefix ending in "*") for non-resource ones. */
bool fl_rbac_rule_allows(const json_t *rule, const fl_auth_attrs *at);

/* ---- rbac_defaults.c ---- */

/* Create the default ClusterRoles and ClusterRoleBindings that are missing (labelled
 * kubernetes.io/bootstrapping: rbac-defaults); existing ones are left as they are. In-process
 * writes through api. Returns how many were created, or a negative FL_E* code. */
int fl_rbac_ensure_defaults(fl_api *api);
/* Create what agent system:flotilla:agent:<cluster> holds, when missing: ClusterRole and
 * ClusterRoleBinding system:flotilla:agent:<cluster> (its Cluster and its status), Role and
 * RoleBinding of that name in karmada-cluster (its Lease), RoleBinding system:flotilla:agent in
 * karmada-es-<cluster> (Works, events, the Namespace). All owned by the Cluster of uid
 * cluster_uid, so the garbage collector removes them with it. 0 or a negative FL_E* code. */
int fl_rbac_ensure_agent(fl_api *api, const char *cluster, const char *cluster_uid);

/* ---- rbac_escalation.c ---- */

/* Kubernetes' escalation check on a write of obj, a Role, ClusterRole, RoleBinding or
 * ClusterRoleBinding (kind) in namespace ns ("" for the cluster-scoped ones) by who: a role
 * only with every permission it lists held (or the escalate verb on it), a binding only with
 * every permission of its role held (or the bind verb on the role). Returns 0 (allowed, also
 * for other kinds and who NULL), or 403 with *msg (heap) worded as Kubernetes words it. */
int fl_rbac_confirm_no_escalation(fl_api *api, fl_auth *a, const fl_identity *who, const char *kind, const char *ns,
                                  const json_t *obj, char **msg);

/* ---- rbac_review.c ---- */

/* Answer a SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview or
 * SelfSubjectRulesReview (POST only; nothing is stored) addressed to t, which names no served
 * kind: anything else is answered 404 NotFound. r was already authorized to create it. rb
 * NULL (no authentication): everything is allowed. */
void fl_rbac_review(fl_rbac *rb, fl_req *r, const struct fl_target *t);

/* Impersonation (Impersonate-User / Impersonate-Group headers): may `real` act as user with
 * groups? Each is checked as verb "impersonate" on resource users, groups or (for
 * system:serviceaccount:<ns>:<name>) serviceaccounts. On success *out is the impersonated
 * identity (its groups plus system:authenticated, and for a ServiceAccount
 * system:serviceaccounts and system:serviceaccounts:<ns>) and 0 is returned; otherwise the
 * HTTP code (400 groups without a user, 403 denied) with msg set to Kubernetes' message. */
int fl_rbac_impersonate(fl_auth *a, const fl_identity *real, const char *user, const char *const *groups,
                        size_t ngroups, fl_identity *out, char *msg, size_t cap);

#endif
