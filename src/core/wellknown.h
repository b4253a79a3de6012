/* wellknown.h - Karmada's well-known names: the labels, annotations, finalizers, taint keys and
 * prefixes that Karmada writes on templates, policies, bindings, Works and clusters, and that
 * Flotilla writes and reads with the same meaning. Declared here once, for every part (api,
 * controllers, policy, interp, cli); nothing else spells them out.
 *
 * Names only: the functions that compute an object's name from another's (a template's
 * binding, its Work, a cluster's execution space) are in controllers/names.h. */
#ifndef FL_WELLKNOWN_H
#define FL_WELLKNOWN_H

/* ---- namespaces ---- */
/* A member's execution space, where its Works live: "karmada-es-<cluster>". */
#define FL_EXECUTION_SPACE_PREFIX "karmada-es-"

/* ---- finalizers ---- */
#define FL_BINDING_FINALIZER "karmada.io/binding-controller"     /* on templates with a binding */
#define FL_EXECUTION_FINALIZER "karmada.io/execution-controller" /* on Works, until delivered objects are gone */

/* ---- labels ---- */
#define FL_MANAGED_LABEL "karmada.io/managed"
#define FL_PP_ID_LABEL "propagationpolicy.karmada.io/permanent-id"
#define FL_CPP_ID_LABEL "clusterpropagationpolicy.karmada.io/permanent-id"
#define FL_RB_ID_LABEL "resourcebinding.karmada.io/permanent-id"
#define FL_CRB_ID_LABEL "clusterresourcebinding.karmada.io/permanent-id"
#define FL_WORK_ID_LABEL "work.karmada.io/permanent-id"
#define FL_RETAIN_REPLICAS_LABEL "resourcetemplate.karmada.io/retain-replicas"
#define FL_SKIP_AUTO_PROPAGATION_LABEL "namespace.karmada.io/skip-auto-propagation"

/* ---- annotations ---- */
#define FL_PP_NAME_ANNOTATION "propagationpolicy.karmada.io/name"
#define FL_PP_NAMESPACE_ANNOTATION "propagationpolicy.karmada.io/namespace"
#define FL_CPP_NAME_ANNOTATION "clusterpropagationpolicy.karmada.io/name"
#define FL_RB_NAME_ANNOTATION "resourcebinding.karmada.io/name"
#define FL_RB_NAMESPACE_ANNOTATION "resourcebinding.karmada.io/namespace"
#define FL_CRB_NAME_ANNOTATION "clusterresourcebinding.karmada.io/name"
#define FL_WORK_NAME_ANNOTATION "work.karmada.io/name"
#define FL_WORK_NAMESPACE_ANNOTATION "work.karmada.io/namespace"
#define FL_CONFLICT_RESOLUTION_ANNOTATION "work.karmada.io/conflict-resolution"
#define FL_TEMPLATE_UID_ANNOTATION "resourcetemplate.karmada.io/uid"
#define FL_TEMPLATE_GENERATION_ANNOTATION "resourcetemplate.karmada.io/generation"
#define FL_MANAGED_LABELS_ANNOTATION "resourcetemplate.karmada.io/managed-labels"
#define FL_MANAGED_ANNOTATIONS_ANNOTATION "resourcetemplate.karmada.io/managed-annotations"
#define FL_APPLIED_OVERRIDES_ANNOTATION "policy.karmada.io/applied-overrides"
#define FL_APPLIED_CLUSTER_OVERRIDES_ANNOTATION "policy.karmada.io/applied-cluster-overrides"
/* Ours, on a Cluster: where the live state of what is delivered there comes from: "watch" (the
 * default: the control plane's member watches, or a Pull cluster's agent) or "metrics" (a
 * Prometheus query API, Push clusters only: controllers/metricsstatus.h). */
#define FL_STATUS_SOURCE_ANNOTATION "flotilla.io/status-source"

/* ---- template revisions (docs/rollouts.md) ----
 * Each delivered change of a propagated template is kept as an apps/v1 ControllerRevision in
 * the template's namespace (karmada-system for a cluster-scoped template), owned by the
 * template, named <template name>-<hash of data>, labelled with the template's uid;
 * .revision counts from 1; .data is the template as delivered: apiVersion, kind,
 * metadata.{name,namespace,labels,annotations} and every top-level field but status. */
#define FL_REVISION_TEMPLATE_UID_LABEL "rollouts.flotilla.io/template-uid"
#define FL_REVISION_CLUSTER_SCOPED_NAMESPACE "karmada-system"
/* On a template: how many of its revisions to keep (a non-negative integer; default
 * FL_REVISION_HISTORY_DEFAULT; the newest is always kept). The API refuses another value. */
#define FL_REVISION_HISTORY_LIMIT_ANNOTATION "rollouts.flotilla.io/revision-history-limit"
#define FL_REVISION_HISTORY_DEFAULT 10

/* ---- migration: adoption and release (docs/migration.md) ----
 * ADOPT: "true" as a label on a control-plane Namespace (or an annotation on a policy) puts
 * that namespace's (that policy's) templates on the adoption allow-list: conflictResolution
 * Overwrite takes over a member object Flotilla did not create only when the list allows it.
 * PROMOTED_FROM: `flotilla ctl promote` marks the templates and the policy it writes with
 * the cluster it promoted from; the mark is its own permission to adopt.
 * RELEASE: "true" on a policy, binding or Work: Flotilla stops managing the member objects,
 * leaves them as they are and takes its marks off them. The policy's and the binding's are
 * copied down (detector, binding controller); the Work's is what the executor reads. */
#define FL_ADOPT_KEY "migration.flotilla.io/adopt"
#define FL_PROMOTED_FROM_ANNOTATION "migration.flotilla.io/promoted-from"
#define FL_RELEASE_ANNOTATION "migration.flotilla.io/release"

/* ---- taints ---- */
#define FL_TAINT_CLUSTER_NOT_READY "cluster.karmada.io/not-ready"
#define FL_TAINT_CLUSTER_UNREACHABLE "cluster.karmada.io/unreachable"

#endif
