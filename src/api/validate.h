/* validate.h - structural checks and validation of objects before they are stored.
 *
 * Two classes of failure, as Kubernetes distinguishes them:
 *   - decoding errors (a field has the wrong JSON type, the body is not an object,
 *     apiVersion/kind do not match the URL): 400 BadRequest, one message naming the field;
 *   - validation errors (invalid name, label syntax, a Karmada policy rule): 422 Invalid
 *     with one cause per problem in details.causes[] {reason, message, field}.
 * Pure functions over the kind table: any thread. */
#ifndef FL_VALIDATE_H
#define FL_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>

#include "api/kinds.h"

/* Check JSON types of obj against k->fields (recursively through sub-tables), plus
 * metadata's own types (labels/annotations string maps, finalizers string array, ...).
 * Returns 0, or FL_EINVAL with *msg = heap text like
 * "spec.replicas: expected integer, got string". */
int fl_validate_types(const fl_kind *k, const json_t *obj, char **msg);
/* The same for metadata and the top-level member top only (NULL: everything), for a write
 * that takes nothing else from obj (an in-process /status update). */
int fl_validate_types_under(const fl_kind *k, const json_t *obj, const char *top, char **msg);

/* Validate for create (old == NULL) or update. Appends causes to `causes` (a JSON array
 * the caller owns); returns the number appended. Covers: metadata.name format for the
 * kind (DNS-1123 subdomain; DNS-1123 label for Namespace, DNS-1035 label for Service), generateName,
 * label keys/values and annotation keys, immutable fields on update (metadata.uid is
 * ignored by the caller), and k->validate. */
int fl_validate_object(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);

/* Helpers shared with the API layer and later controllers. Return NULL if valid, else a
 * static message ("must consist of lower case alphanumeric characters, '-' or '.', ...").*/
const char *fl_validate_dns1123_subdomain(const char *s);
const char *fl_validate_dns1123_label(const char *s);
const char *fl_validate_label_key(const char *s);
const char *fl_validate_label_value(const char *s);

/* Append {reason, message, field} to causes. reason is a CauseType ("FieldValueInvalid",
 * "FieldValueRequired", "FieldValueNotSupported", "FieldValueForbidden", "FieldValueDuplicate"). */
void fl_cause_add(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));



/* Defaults that Karmada's CRD schemas and admission fill in for its policy kinds
 * (PropagationPolicy / ClusterPropagationPolicy: priority 0, preemption Never,
 * conflictResolution Abort, schedulerName default-scheduler, replicaSchedulingType Divided,
 * failover purgeMode Gracefully and tolerationSeconds 300, and a PropagationPolicy's
 * selectors' empty namespace = its own). Applied on every write, before validation, so
 * `kubectl get pp` and the bindings show what takes effect. Other kinds: no-op. */
void fl_default_karmada(const fl_kind *k, json_t *obj);

/* Kind-specific validators wired into the kind table (fl_kind.validate). Each appends
 * causes with field paths from the object root ("spec.placement.clusterAffinity"). */
void fl_validate_propagation_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_override_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_cluster_taint_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_crd(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_namespace(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_cluster(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_resource_binding(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_work(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_interpreter_customization(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
/* kpt's ResourceGroup (validate_kpt.c): the fields its CRD requires, and a listed resource's
 * kind and name not empty. */
void fl_validate_resource_group(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
/* apps.flotilla.io RolloutStrategy (validate_rollout.c): stages, selectors or percents, onFailure,
 * no negative numbers. */
void fl_validate_rollout_strategy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);

/* Built-in kinds (validate_builtin.c): kube-apiserver's rules for them, reading an absent
 * field as the default upstream would have filled before validating. */
void fl_validate_pod(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_service(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_configmap(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_secret(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_deployment(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_replicaset(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
/* apps/v1 ControllerRevision: data and revision present, revision not negative, data immutable. */
void fl_validate_controller_revision(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_statefulset(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_daemonset(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_job(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_cronjob(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
/* The kinds of kinds_builtin_ext.c (validate_builtin_ext.c): RBAC, networking, autoscaling/v2,
 * policy/v1, scheduling, storage and admission webhook configurations. */
void fl_validate_role(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_role_binding(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_ingress(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_ingress_class(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_network_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_hpa(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_pdb(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_priority_class(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_storage_class(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_webhook_configuration(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_admission_policy(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_admission_policy_binding(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_events_v1(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_apiservice(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
void fl_validate_csr(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);
/* RBAC object names are path segments (ValidateRBACName: "system:aggregate-to-edit" is
 * valid): NULL if name is fine, else the static message. */
const char *fl_validate_rbac_name(const char *name);

#endif
