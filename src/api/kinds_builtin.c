/* kinds_builtin.c - the static table of built-in kinds: names, scope, subresources,
 * field selectors, schema hints with strategic-merge-patch metadata, Table columns
 * and row functions.
 *
 * This is data, declared once (STYLE.md "Tables that list things"): discovery,
 * OpenAPI, `kubectl get` columns, type checks and strategic merge patch all read it.
 * Names, short names, categories and patch tags follow what upstream serves:
 * Kubernetes' Go struct tags (patchStrategy/patchMergeKey) for the core, apps, batch
 * and coordination kinds, Karmada's CRDs (charts/karmada/_crds/bases) and its
 * aggregated API server (Cluster) for the Karmada kinds.
 *
 * Field tables use dotted paths from the object root with list elements elided;
 * `sub` points at a nested table whose paths are relative to the field (for an array,
 * relative to each element). Shared structures (ObjectMeta, PodSpec, Container,
 * LabelSelector) are one table each, referenced by `sub`.
 *
 * Row functions reproduce the cells of upstream's printers (pkg/printers/internalversion)
 * for the columns after NAME; AGE is added by the table renderer (table.c). Every row
 * function appends exactly one cell per column, in column order. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/kinds.h"
#include "api/validate.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* Shared with kinds.c (registry) and kinds_crd.c; not part of kinds.h on purpose. */
extern fl_kind fl_kinds__builtin[];
extern const size_t fl_kinds__builtin_count;
extern const fl_field fl_kinds__objectmeta_fields[];

#define F(p, t) { .path = (p), .type = (t) }
#define FR(p, t) { .path = (p), .type = (t), .required = true }
#define FS(p, t, s) { .path = (p), .type = (t), .sub = (s) }
#define FSR(p, t, s) { .path = (p), .type = (t), .sub = (s), .required = true }
/* list with patch metadata: FL(path, mergeKey, strategy, sub) */
#define FL(p, key, strat, s) { .path = (p), .type = FL_F_ARRAY, .merge_key = (key), .strategy = (strat), .sub = (s) }
#define FEND { .path = NULL }

/* ------------------------------------------------------------------ */
/* Shared structures                                                   */
/* ------------------------------------------------------------------ */

/* Elements are objects this table does not describe further (arrays whose sub is
 * NULL hold scalars, strings unless noted). */
static const fl_field opaque_fields[] = { FEND };

static const fl_field owner_ref_fields[] = {
    FR("apiVersion", FL_F_STRING), FR("kind", FL_F_STRING), FR("name", FL_F_STRING),
    FR("uid", FL_F_STRING), F("controller", FL_F_BOOL), F("blockOwnerDeletion", FL_F_BOOL),
    FEND,
};

static const fl_field managed_fields_fields[] = {
    F("manager", FL_F_STRING), F("operation", FL_F_STRING), F("apiVersion", FL_F_STRING),
    F("time", FL_F_STRING), F("fieldsType", FL_F_STRING), F("fieldsV1", FL_F_OBJECT),
    F("subresource", FL_F_STRING), FEND,
};

/* ObjectMeta: finalizers `patchStrategy:"merge"`, ownerReferences merge on uid. */
const fl_field fl_kinds__objectmeta_fields[] = {
    F("name", FL_F_STRING),
    F("generateName", FL_F_STRING),
    F("namespace", FL_F_STRING),
    F("selfLink", FL_F_STRING),
    F("uid", FL_F_STRING),
    F("resourceVersion", FL_F_STRING),
    F("generation", FL_F_INT),
    F("creationTimestamp", FL_F_ANY),   /* string, or null in client-generated manifests */
    F("deletionTimestamp", FL_F_STRING),
    F("deletionGracePeriodSeconds", FL_F_INT),
    F("labels", FL_F_MAPSTR),
    F("annotations", FL_F_MAPSTR),
    FL("ownerReferences", "uid", "merge", owner_ref_fields),
    FL("finalizers", NULL, "merge", NULL),
    FS("managedFields", FL_F_ARRAY, managed_fields_fields),
    FEND,
};

static const fl_field label_selector_req_fields[] = {
    FR("key", FL_F_STRING), FR("operator", FL_F_STRING), F("values", FL_F_ARRAY), FEND,
};

static const fl_field label_selector_fields[] = {
    F("matchLabels", FL_F_MAPSTR),
    FS("matchExpressions", FL_F_ARRAY, label_selector_req_fields),
    FEND,
};

static const fl_field local_ref_fields[] = { F("name", FL_F_STRING), FEND };

static const fl_field key_to_path_fields[] = {
    FR("key", FL_F_STRING), FR("path", FL_F_STRING), F("mode", FL_F_INT), FEND,
};

static const fl_field object_field_selector_fields[] = {
    F("apiVersion", FL_F_STRING), FR("fieldPath", FL_F_STRING), FEND,
};

static const fl_field resource_field_selector_fields[] = {
    F("containerName", FL_F_STRING), FR("resource", FL_F_STRING), F("divisor", FL_F_QUANTITY), FEND,
};

static const fl_field key_selector_fields[] = {
    F("name", FL_F_STRING), FR("key", FL_F_STRING), F("optional", FL_F_BOOL), FEND,
};

static const fl_field env_var_fields[] = {
    FR("name", FL_F_STRING),
    F("value", FL_F_STRING),
    F("valueFrom", FL_F_OBJECT),
    FS("valueFrom.fieldRef", FL_F_OBJECT, object_field_selector_fields),
    FS("valueFrom.resourceFieldRef", FL_F_OBJECT, resource_field_selector_fields),
    FS("valueFrom.configMapKeyRef", FL_F_OBJECT, key_selector_fields),
    FS("valueFrom.secretKeyRef", FL_F_OBJECT, key_selector_fields),
    FEND,
};

static const fl_field optional_ref_fields[] = { F("name", FL_F_STRING), F("optional", FL_F_BOOL), FEND };

static const fl_field env_from_fields[] = {
    F("prefix", FL_F_STRING),
    FS("configMapRef", FL_F_OBJECT, optional_ref_fields),
    FS("secretRef", FL_F_OBJECT, optional_ref_fields),
    FEND,
};

static const fl_field container_port_fields[] = {
    F("name", FL_F_STRING), F("hostPort", FL_F_INT), FR("containerPort", FL_F_INT),
    F("protocol", FL_F_STRING), F("hostIP", FL_F_STRING), FEND,
};

static const fl_field resource_claim_ref_fields[] = {
    FR("name", FL_F_STRING), F("request", FL_F_STRING), FEND,
};

static const fl_field resources_fields[] = {
    F("limits", FL_F_OBJECT),    /* map of quantities */
    F("requests", FL_F_OBJECT),
    FS("claims", FL_F_ARRAY, resource_claim_ref_fields),
    FEND,
};

static const fl_field resize_policy_fields[] = {
    FR("resourceName", FL_F_STRING), FR("restartPolicy", FL_F_STRING), FEND,
};

static const fl_field volume_mount_fields[] = {
    FR("name", FL_F_STRING), F("readOnly", FL_F_BOOL), F("recursiveReadOnly", FL_F_STRING),
    FR("mountPath", FL_F_STRING), F("subPath", FL_F_STRING), F("mountPropagation", FL_F_STRING),
    F("subPathExpr", FL_F_STRING), FEND,
};

static const fl_field volume_device_fields[] = {
    FR("name", FL_F_STRING), FR("devicePath", FL_F_STRING), FEND,
};

static const fl_field http_header_fields[] = { FR("name", FL_F_STRING), FR("value", FL_F_STRING), FEND };

/* ProbeHandler / LifecycleHandler actions, listed once and included in both tables. */
#define HANDLER_FIELDS \
    F("exec", FL_F_OBJECT), \
    F("exec.command", FL_F_ARRAY), \
    F("httpGet", FL_F_OBJECT), \
    F("httpGet.path", FL_F_STRING), \
    F("httpGet.port", FL_F_INTORSTR), \
    F("httpGet.host", FL_F_STRING), \
    F("httpGet.scheme", FL_F_STRING), \
    FS("httpGet.httpHeaders", FL_F_ARRAY, http_header_fields), \
    F("tcpSocket", FL_F_OBJECT), \
    F("tcpSocket.port", FL_F_INTORSTR), \
    F("tcpSocket.host", FL_F_STRING), \
    F("grpc", FL_F_OBJECT), \
    F("grpc.port", FL_F_INT), \
    F("grpc.service", FL_F_STRING)

static const fl_field handler_fields[] = {
    HANDLER_FIELDS,
    F("sleep", FL_F_OBJECT),
    F("sleep.seconds", FL_F_INT),
    FEND,
};

static const fl_field probe_fields[] = {
    HANDLER_FIELDS,
    F("initialDelaySeconds", FL_F_INT),
    F("timeoutSeconds", FL_F_INT),
    F("periodSeconds", FL_F_INT),
    F("successThreshold", FL_F_INT),
    F("failureThreshold", FL_F_INT),
    F("terminationGracePeriodSeconds", FL_F_INT),
    FEND,
};

static const fl_field lifecycle_fields[] = {
    FS("postStart", FL_F_OBJECT, handler_fields),
    FS("preStop", FL_F_OBJECT, handler_fields),
    F("stopSignal", FL_F_STRING),
    FEND,
};

static const fl_field se_linux_fields[] = {
    F("user", FL_F_STRING), F("role", FL_F_STRING), F("type", FL_F_STRING), F("level", FL_F_STRING), FEND,
};

static const fl_field profile_fields[] = {
    FR("type", FL_F_STRING), F("localhostProfile", FL_F_STRING), FEND,
};

static const fl_field windows_options_fields[] = {
    F("gmsaCredentialSpecName", FL_F_STRING), F("gmsaCredentialSpec", FL_F_STRING),
    F("runAsUserName", FL_F_STRING), F("hostProcess", FL_F_BOOL), FEND,
};

static const fl_field container_security_fields[] = {
    F("capabilities", FL_F_OBJECT),
    F("capabilities.add", FL_F_ARRAY),
    F("capabilities.drop", FL_F_ARRAY),
    F("privileged", FL_F_BOOL),
    FS("seLinuxOptions", FL_F_OBJECT, se_linux_fields),
    FS("windowsOptions", FL_F_OBJECT, windows_options_fields),
    F("runAsUser", FL_F_INT),
    F("runAsGroup", FL_F_INT),
    F("runAsNonRoot", FL_F_BOOL),
    F("readOnlyRootFilesystem", FL_F_BOOL),
    F("allowPrivilegeEscalation", FL_F_BOOL),
    F("procMount", FL_F_STRING),
    FS("seccompProfile", FL_F_OBJECT, profile_fields),
    FS("appArmorProfile", FL_F_OBJECT, profile_fields),
    FEND,
};

/* Container: ports merge on containerPort, env merge on name, volumeMounts merge on
 * mountPath, volumeDevices merge on devicePath; resizePolicy is atomic upstream. */
static const fl_field container_fields[] = {
    FR("name", FL_F_STRING),
    F("image", FL_F_STRING),
    F("command", FL_F_ARRAY),
    F("args", FL_F_ARRAY),
    F("workingDir", FL_F_STRING),
    FL("ports", "containerPort", "merge", container_port_fields),
    FS("envFrom", FL_F_ARRAY, env_from_fields),
    FL("env", "name", "merge", env_var_fields),
    FS("resources", FL_F_OBJECT, resources_fields),
    FS("resizePolicy", FL_F_ARRAY, resize_policy_fields),
    F("restartPolicy", FL_F_STRING),
    FL("volumeMounts", "mountPath", "merge", volume_mount_fields),
    FL("volumeDevices", "devicePath", "merge", volume_device_fields),
    FS("livenessProbe", FL_F_OBJECT, probe_fields),
    FS("readinessProbe", FL_F_OBJECT, probe_fields),
    FS("startupProbe", FL_F_OBJECT, probe_fields),
    FS("lifecycle", FL_F_OBJECT, lifecycle_fields),
    F("terminationMessagePath", FL_F_STRING),
    F("terminationMessagePolicy", FL_F_STRING),
    F("imagePullPolicy", FL_F_STRING),
    FS("securityContext", FL_F_OBJECT, container_security_fields),
    F("stdin", FL_F_BOOL),
    F("stdinOnce", FL_F_BOOL),
    F("tty", FL_F_BOOL),
    F("targetContainerName", FL_F_STRING),  /* ephemeral containers only */
    FEND,
};

/* Volumes: the common sources. */
static const fl_field volume_fields[] = {
    FR("name", FL_F_STRING),
    F("configMap", FL_F_OBJECT),
    F("configMap.name", FL_F_STRING),
    FS("configMap.items", FL_F_ARRAY, key_to_path_fields),
    F("configMap.defaultMode", FL_F_INT),
    F("configMap.optional", FL_F_BOOL),
    F("secret", FL_F_OBJECT),
    F("secret.secretName", FL_F_STRING),
    FS("secret.items", FL_F_ARRAY, key_to_path_fields),
    F("secret.defaultMode", FL_F_INT),
    F("secret.optional", FL_F_BOOL),
    F("emptyDir", FL_F_OBJECT),
    F("emptyDir.medium", FL_F_STRING),
    F("emptyDir.sizeLimit", FL_F_QUANTITY),
    F("hostPath", FL_F_OBJECT),
    FR("hostPath.path", FL_F_STRING),
    F("hostPath.type", FL_F_STRING),
    F("persistentVolumeClaim", FL_F_OBJECT),
    FR("persistentVolumeClaim.claimName", FL_F_STRING),
    F("persistentVolumeClaim.readOnly", FL_F_BOOL),
    F("projected", FL_F_OBJECT),
    FS("projected.sources", FL_F_ARRAY, opaque_fields),
    F("projected.defaultMode", FL_F_INT),
    F("downwardAPI", FL_F_OBJECT),
    FS("downwardAPI.items", FL_F_ARRAY, opaque_fields),
    F("downwardAPI.defaultMode", FL_F_INT),
    F("nfs", FL_F_OBJECT),
    F("nfs.server", FL_F_STRING),
    F("nfs.path", FL_F_STRING),
    F("nfs.readOnly", FL_F_BOOL),
    F("csi", FL_F_OBJECT),
    F("csi.driver", FL_F_STRING),
    F("csi.readOnly", FL_F_BOOL),
    F("csi.fsType", FL_F_STRING),
    F("csi.volumeAttributes", FL_F_MAPSTR),
    FS("csi.nodePublishSecretRef", FL_F_OBJECT, local_ref_fields),
    F("ephemeral", FL_F_OBJECT),
    F("ephemeral.volumeClaimTemplate", FL_F_OBJECT),
    F("image", FL_F_OBJECT),
    F("image.reference", FL_F_STRING),
    F("image.pullPolicy", FL_F_STRING),
    FEND,
};

static const fl_field toleration_fields[] = {
    F("key", FL_F_STRING), F("operator", FL_F_STRING), F("value", FL_F_STRING),
    F("effect", FL_F_STRING), F("tolerationSeconds", FL_F_INT), FEND,
};

static const fl_field host_alias_fields[] = { FR("ip", FL_F_STRING), F("hostnames", FL_F_ARRAY), FEND };

static const fl_field node_selector_req_fields[] = {
    FR("key", FL_F_STRING), FR("operator", FL_F_STRING), F("values", FL_F_ARRAY), FEND,
};

static const fl_field node_selector_term_fields[] = {
    FS("matchExpressions", FL_F_ARRAY, node_selector_req_fields),
    FS("matchFields", FL_F_ARRAY, node_selector_req_fields),
    FEND,
};

static const fl_field preferred_sched_term_fields[] = {
    FR("weight", FL_F_INT), FSR("preference", FL_F_OBJECT, node_selector_term_fields), FEND,
};

static const fl_field pod_affinity_term_fields[] = {
    FS("labelSelector", FL_F_OBJECT, label_selector_fields),
    F("namespaces", FL_F_ARRAY),
    FR("topologyKey", FL_F_STRING),
    FS("namespaceSelector", FL_F_OBJECT, label_selector_fields),
    F("matchLabelKeys", FL_F_ARRAY),
    F("mismatchLabelKeys", FL_F_ARRAY),
    FEND,
};

static const fl_field weighted_pod_affinity_fields[] = {
    FR("weight", FL_F_INT), FSR("podAffinityTerm", FL_F_OBJECT, pod_affinity_term_fields), FEND,
};

static const fl_field pod_affinity_fields[] = {
    FS("requiredDuringSchedulingIgnoredDuringExecution", FL_F_ARRAY, pod_affinity_term_fields),
    FS("preferredDuringSchedulingIgnoredDuringExecution", FL_F_ARRAY, weighted_pod_affinity_fields),
    FEND,
};

static const fl_field affinity_fields[] = {
    F("nodeAffinity", FL_F_OBJECT),
    F("nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", FL_F_OBJECT),
    FS("nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", FL_F_ARRAY,
       node_selector_term_fields),
    FS("nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution", FL_F_ARRAY, preferred_sched_term_fields),
    FS("podAffinity", FL_F_OBJECT, pod_affinity_fields),
    FS("podAntiAffinity", FL_F_OBJECT, pod_affinity_fields),
    FEND,
};

static const fl_field sysctl_fields[] = { FR("name", FL_F_STRING), FR("value", FL_F_STRING), FEND };

static const fl_field pod_security_fields[] = {
    FS("seLinuxOptions", FL_F_OBJECT, se_linux_fields),
    FS("windowsOptions", FL_F_OBJECT, windows_options_fields),
    F("runAsUser", FL_F_INT),
    F("runAsGroup", FL_F_INT),
    F("runAsNonRoot", FL_F_BOOL),
    F("supplementalGroups", FL_F_ARRAY),
    F("supplementalGroupsPolicy", FL_F_STRING),
    F("fsGroup", FL_F_INT),
    FS("sysctls", FL_F_ARRAY, sysctl_fields),
    F("fsGroupChangePolicy", FL_F_STRING),
    FS("seccompProfile", FL_F_OBJECT, profile_fields),
    FS("appArmorProfile", FL_F_OBJECT, profile_fields),
    F("seLinuxChangePolicy", FL_F_STRING),
    FEND,
};

static const fl_field dns_option_fields[] = { F("name", FL_F_STRING), F("value", FL_F_STRING), FEND };

static const fl_field dns_config_fields[] = {
    F("nameservers", FL_F_ARRAY), F("searches", FL_F_ARRAY), FS("options", FL_F_ARRAY, dns_option_fields), FEND,
};

static const fl_field readiness_gate_fields[] = { FR("conditionType", FL_F_STRING), FEND };

static const fl_field topology_spread_fields[] = {
    FR("maxSkew", FL_F_INT),
    FR("topologyKey", FL_F_STRING),
    FR("whenUnsatisfiable", FL_F_STRING),
    FS("labelSelector", FL_F_OBJECT, label_selector_fields),
    F("minDomains", FL_F_INT),
    F("nodeAffinityPolicy", FL_F_STRING),
    F("nodeTaintsPolicy", FL_F_STRING),
    F("matchLabelKeys", FL_F_ARRAY),
    FEND,
};

static const fl_field pod_os_fields[] = { FR("name", FL_F_STRING), FEND };

static const fl_field scheduling_gate_fields[] = { FR("name", FL_F_STRING), FEND };

static const fl_field pod_resource_claim_fields[] = {
    FR("name", FL_F_STRING), F("resourceClaimName", FL_F_STRING), F("resourceClaimTemplateName", FL_F_STRING),
    FEND,
};

/* PodSpec, with upstream's patch tags. */
static const fl_field podspec_fields[] = {
    FL("volumes", "name", "merge,retainKeys", volume_fields),
    FL("initContainers", "name", "merge", container_fields),
    FL("containers", "name", "merge", container_fields),
    FL("ephemeralContainers", "name", "merge", container_fields),
    F("restartPolicy", FL_F_STRING),
    F("terminationGracePeriodSeconds", FL_F_INT),
    F("activeDeadlineSeconds", FL_F_INT),
    F("dnsPolicy", FL_F_STRING),
    F("nodeSelector", FL_F_MAPSTR),
    F("serviceAccountName", FL_F_STRING),
    F("serviceAccount", FL_F_STRING),
    F("automountServiceAccountToken", FL_F_BOOL),
    F("nodeName", FL_F_STRING),
    F("hostNetwork", FL_F_BOOL),
    F("hostPID", FL_F_BOOL),
    F("hostIPC", FL_F_BOOL),
    F("shareProcessNamespace", FL_F_BOOL),
    FS("securityContext", FL_F_OBJECT, pod_security_fields),
    FL("imagePullSecrets", "name", "merge", local_ref_fields),
    F("hostname", FL_F_STRING),
    F("subdomain", FL_F_STRING),
    FS("affinity", FL_F_OBJECT, affinity_fields),
    F("schedulerName", FL_F_STRING),
    FS("tolerations", FL_F_ARRAY, toleration_fields),
    FL("hostAliases", "ip", "merge", host_alias_fields),
    F("priorityClassName", FL_F_STRING),
    F("priority", FL_F_INT),
    FS("dnsConfig", FL_F_OBJECT, dns_config_fields),
    FS("readinessGates", FL_F_ARRAY, readiness_gate_fields),
    F("runtimeClassName", FL_F_STRING),
    F("enableServiceLinks", FL_F_BOOL),
    F("preemptionPolicy", FL_F_STRING),
    F("overhead", FL_F_OBJECT),
    FL("topologySpreadConstraints", "topologyKey", "merge", topology_spread_fields),
    F("setHostnameAsFQDN", FL_F_BOOL),
    FS("os", FL_F_OBJECT, pod_os_fields),
    F("hostUsers", FL_F_BOOL),
    FL("schedulingGates", "name", "merge", scheduling_gate_fields),
    FL("resourceClaims", "name", "merge,retainKeys", pod_resource_claim_fields),
    FS("resources", FL_F_OBJECT, resources_fields),
    FEND,
};

static const fl_field pod_template_fields[] = {
    FS("metadata", FL_F_OBJECT, fl_kinds__objectmeta_fields),
    FS("spec", FL_F_OBJECT, podspec_fields),
    FEND,
};

/* Condition lists in status are merged on type upstream. */
static const fl_field condition_fields[] = {
    FR("type", FL_F_STRING), FR("status", FL_F_STRING), F("observedGeneration", FL_F_INT),
    F("lastTransitionTime", FL_F_STRING), F("lastUpdateTime", FL_F_STRING), F("lastProbeTime", FL_F_STRING),
    F("lastHeartbeatTime", FL_F_STRING), F("reason", FL_F_STRING), F("message", FL_F_STRING), FEND,
};

/* ------------------------------------------------------------------ */
/* core/v1                                                             */
/* ------------------------------------------------------------------ */

#define META FS("metadata", FL_F_OBJECT, fl_kinds__objectmeta_fields)
#define TYPEMETA F("apiVersion", FL_F_STRING), F("kind", FL_F_STRING)

static const fl_field namespace_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.finalizers", FL_F_ARRAY),
    F("status", FL_F_OBJECT),
    F("status.phase", FL_F_STRING),
    FL("status.conditions", "type", "merge", condition_fields),
    FEND,
};

static const fl_field configmap_fields[] = {
    TYPEMETA, META,
    F("data", FL_F_MAPSTR),
    F("binaryData", FL_F_MAPSTR),
    F("immutable", FL_F_BOOL),
    FEND,
};

static const fl_field secret_fields[] = {
    TYPEMETA, META,
    F("data", FL_F_MAPSTR),
    F("stringData", FL_F_MAPSTR),
    F("type", FL_F_STRING),
    F("immutable", FL_F_BOOL),
    FEND,
};

static const fl_field service_port_fields[] = {
    F("name", FL_F_STRING), F("protocol", FL_F_STRING), F("appProtocol", FL_F_STRING),
    FR("port", FL_F_INT), F("targetPort", FL_F_INTORSTR), F("nodePort", FL_F_INT), FEND,
};

static const fl_field port_status_fields[] = {
    FR("port", FL_F_INT), FR("protocol", FL_F_STRING), F("error", FL_F_STRING), FEND,
};

static const fl_field lb_ingress_fields[] = {
    F("ip", FL_F_STRING), F("hostname", FL_F_STRING), F("ipMode", FL_F_STRING),
    FS("ports", FL_F_ARRAY, port_status_fields), FEND,
};

static const fl_field service_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FL("spec.ports", "port", "merge", service_port_fields),
    F("spec.selector", FL_F_MAPSTR),
    F("spec.clusterIP", FL_F_STRING),
    F("spec.clusterIPs", FL_F_ARRAY),
    F("spec.type", FL_F_STRING),
    F("spec.externalIPs", FL_F_ARRAY),
    F("spec.sessionAffinity", FL_F_STRING),
    F("spec.loadBalancerIP", FL_F_STRING),
    F("spec.loadBalancerSourceRanges", FL_F_ARRAY),
    F("spec.externalName", FL_F_STRING),
    F("spec.externalTrafficPolicy", FL_F_STRING),
    F("spec.healthCheckNodePort", FL_F_INT),
    F("spec.publishNotReadyAddresses", FL_F_BOOL),
    F("spec.sessionAffinityConfig", FL_F_OBJECT),
    F("spec.sessionAffinityConfig.clientIP", FL_F_OBJECT),
    F("spec.sessionAffinityConfig.clientIP.timeoutSeconds", FL_F_INT),
    F("spec.ipFamilies", FL_F_ARRAY),
    F("spec.ipFamilyPolicy", FL_F_STRING),
    F("spec.allocateLoadBalancerNodePorts", FL_F_BOOL),
    F("spec.loadBalancerClass", FL_F_STRING),
    F("spec.internalTrafficPolicy", FL_F_STRING),
    F("spec.trafficDistribution", FL_F_STRING),
    F("status", FL_F_OBJECT),
    F("status.loadBalancer", FL_F_OBJECT),
    FS("status.loadBalancer.ingress", FL_F_ARRAY, lb_ingress_fields),
    FL("status.conditions", "type", "merge", condition_fields),
    FEND,
};

static const fl_field object_ref_fields[] = {
    F("kind", FL_F_STRING), F("namespace", FL_F_STRING), F("name", FL_F_STRING), F("uid", FL_F_STRING),
    F("apiVersion", FL_F_STRING), F("resourceVersion", FL_F_STRING), F("fieldPath", FL_F_STRING), FEND,
};

static const fl_field serviceaccount_fields[] = {
    TYPEMETA, META,
    FL("secrets", "name", "merge", object_ref_fields),
    FS("imagePullSecrets", FL_F_ARRAY, local_ref_fields),
    F("automountServiceAccountToken", FL_F_BOOL),
    FEND,
};

static const fl_field typed_local_ref_fields[] = {
    F("apiGroup", FL_F_STRING), FR("kind", FL_F_STRING), FR("name", FL_F_STRING), F("namespace", FL_F_STRING),
    FEND,
};

static const fl_field pvc_spec_fields[] = {
    F("accessModes", FL_F_ARRAY),
    FS("selector", FL_F_OBJECT, label_selector_fields),
    FS("resources", FL_F_OBJECT, resources_fields),
    F("volumeName", FL_F_STRING),
    F("storageClassName", FL_F_STRING),
    F("volumeMode", FL_F_STRING),
    FS("dataSource", FL_F_OBJECT, typed_local_ref_fields),
    FS("dataSourceRef", FL_F_OBJECT, typed_local_ref_fields),
    F("volumeAttributesClassName", FL_F_STRING),
    FEND,
};

static const fl_field pvc_fields[] = {
    TYPEMETA, META,
    FS("spec", FL_F_OBJECT, pvc_spec_fields),
    F("status", FL_F_OBJECT),
    F("status.phase", FL_F_STRING),
    F("status.accessModes", FL_F_ARRAY),
    F("status.capacity", FL_F_OBJECT),
    FL("status.conditions", "type", "merge", condition_fields),
    F("status.allocatedResources", FL_F_OBJECT),
    F("status.allocatedResourceStatuses", FL_F_MAPSTR),
    F("status.currentVolumeAttributesClassName", FL_F_STRING),
    FEND,
};

static const fl_field pod_ip_fields[] = { FR("ip", FL_F_STRING), FEND };

static const fl_field container_status_fields[] = {
    FR("name", FL_F_STRING), F("state", FL_F_OBJECT), F("lastState", FL_F_OBJECT), F("ready", FL_F_BOOL),
    F("restartCount", FL_F_INT), F("image", FL_F_STRING), F("imageID", FL_F_STRING),
    F("containerID", FL_F_STRING), F("started", FL_F_BOOL), FEND,
};

static const fl_field pod_fields[] = {
    TYPEMETA, META,
    FS("spec", FL_F_OBJECT, podspec_fields),
    F("status", FL_F_OBJECT),
    F("status.phase", FL_F_STRING),
    FL("status.conditions", "type", "merge", condition_fields),
    F("status.message", FL_F_STRING),
    F("status.reason", FL_F_STRING),
    F("status.nominatedNodeName", FL_F_STRING),
    F("status.hostIP", FL_F_STRING),
    FL("status.hostIPs", "ip", "merge", pod_ip_fields),
    F("status.podIP", FL_F_STRING),
    FL("status.podIPs", "ip", "merge", pod_ip_fields),
    F("status.startTime", FL_F_STRING),
    FS("status.initContainerStatuses", FL_F_ARRAY, container_status_fields),
    FS("status.containerStatuses", FL_F_ARRAY, container_status_fields),
    FS("status.ephemeralContainerStatuses", FL_F_ARRAY, container_status_fields),
    F("status.qosClass", FL_F_STRING),
    FL("status.resourceClaimStatuses", "name", "merge,retainKeys", NULL),
    FEND,
};

static const fl_field event_source_fields[] = { F("component", FL_F_STRING), F("host", FL_F_STRING), FEND };

static const fl_field event_fields[] = {
    TYPEMETA, META,
    FSR("involvedObject", FL_F_OBJECT, object_ref_fields),
    F("reason", FL_F_STRING),
    F("message", FL_F_STRING),
    FS("source", FL_F_OBJECT, event_source_fields),
    F("firstTimestamp", FL_F_ANY),
    F("lastTimestamp", FL_F_ANY),
    F("count", FL_F_INT),
    F("type", FL_F_STRING),
    F("eventTime", FL_F_ANY),
    F("series", FL_F_OBJECT),
    F("series.count", FL_F_INT),
    F("series.lastObservedTime", FL_F_STRING),
    F("action", FL_F_STRING),
    FS("related", FL_F_OBJECT, object_ref_fields),
    F("reportingComponent", FL_F_STRING),
    F("reportingInstance", FL_F_STRING),
    FEND,
};

static const fl_field taint_fields[] = {
    FR("key", FL_F_STRING), F("value", FL_F_STRING), FR("effect", FL_F_STRING), F("timeAdded", FL_F_STRING),
    FEND,
};

static const fl_field node_address_fields[] = { FR("type", FL_F_STRING), FR("address", FL_F_STRING), FEND };

static const fl_field node_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.podCIDR", FL_F_STRING),
    FL("spec.podCIDRs", NULL, "merge", NULL),
    F("spec.providerID", FL_F_STRING),
    F("spec.unschedulable", FL_F_BOOL),
    FS("spec.taints", FL_F_ARRAY, taint_fields),
    F("spec.configSource", FL_F_OBJECT),
    F("status", FL_F_OBJECT),
    F("status.capacity", FL_F_OBJECT),
    F("status.allocatable", FL_F_OBJECT),
    F("status.phase", FL_F_STRING),
    FL("status.conditions", "type", "merge", condition_fields),
    FL("status.addresses", "type", "merge", node_address_fields),
    F("status.daemonEndpoints", FL_F_OBJECT),
    F("status.nodeInfo", FL_F_OBJECT),
    F("status.nodeInfo.kubeletVersion", FL_F_STRING),
    F("status.nodeInfo.osImage", FL_F_STRING),
    F("status.nodeInfo.kernelVersion", FL_F_STRING),
    F("status.nodeInfo.containerRuntimeVersion", FL_F_STRING),
    F("status.nodeInfo.architecture", FL_F_STRING),
    F("status.nodeInfo.operatingSystem", FL_F_STRING),
    FS("status.images", FL_F_ARRAY, opaque_fields),
    F("status.volumesInUse", FL_F_ARRAY),
    FS("status.volumesAttached", FL_F_ARRAY, opaque_fields),
    FEND,
};

/* ------------------------------------------------------------------ */
/* apps/v1                                                             */
/* ------------------------------------------------------------------ */

static const fl_field deployment_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.replicas", FL_F_INT),
    FSR("spec.selector", FL_F_OBJECT, label_selector_fields),
    FSR("spec.template", FL_F_OBJECT, pod_template_fields),
    { .path = "spec.strategy", .type = FL_F_OBJECT, .strategy = "retainKeys" },
    F("spec.strategy.type", FL_F_STRING),
    F("spec.strategy.rollingUpdate", FL_F_OBJECT),
    F("spec.strategy.rollingUpdate.maxUnavailable", FL_F_INTORSTR),
    F("spec.strategy.rollingUpdate.maxSurge", FL_F_INTORSTR),
    F("spec.minReadySeconds", FL_F_INT),
    F("spec.revisionHistoryLimit", FL_F_INT),
    F("spec.paused", FL_F_BOOL),
    F("spec.progressDeadlineSeconds", FL_F_INT),
    F("status", FL_F_OBJECT),
    F("status.observedGeneration", FL_F_INT),
    F("status.replicas", FL_F_INT),
    F("status.updatedReplicas", FL_F_INT),
    F("status.readyReplicas", FL_F_INT),
    F("status.availableReplicas", FL_F_INT),
    F("status.unavailableReplicas", FL_F_INT),
    F("status.terminatingReplicas", FL_F_INT),
    FL("status.conditions", "type", "merge", condition_fields),
    F("status.collisionCount", FL_F_INT),
    FEND,
};

static const fl_field statefulset_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.replicas", FL_F_INT),
    FSR("spec.selector", FL_F_OBJECT, label_selector_fields),
    FSR("spec.template", FL_F_OBJECT, pod_template_fields),
    FS("spec.volumeClaimTemplates", FL_F_ARRAY, opaque_fields),
    F("spec.serviceName", FL_F_STRING),
    F("spec.podManagementPolicy", FL_F_STRING),
    F("spec.updateStrategy", FL_F_OBJECT),
    F("spec.updateStrategy.type", FL_F_STRING),
    F("spec.updateStrategy.rollingUpdate", FL_F_OBJECT),
    F("spec.updateStrategy.rollingUpdate.partition", FL_F_INT),
    F("spec.updateStrategy.rollingUpdate.maxUnavailable", FL_F_INTORSTR),
    F("spec.revisionHistoryLimit", FL_F_INT),
    F("spec.minReadySeconds", FL_F_INT),
    F("spec.persistentVolumeClaimRetentionPolicy", FL_F_OBJECT),
    F("spec.persistentVolumeClaimRetentionPolicy.whenDeleted", FL_F_STRING),
    F("spec.persistentVolumeClaimRetentionPolicy.whenScaled", FL_F_STRING),
    F("spec.ordinals", FL_F_OBJECT),
    F("spec.ordinals.start", FL_F_INT),
    F("status", FL_F_OBJECT),
    F("status.observedGeneration", FL_F_INT),
    F("status.replicas", FL_F_INT),
    F("status.readyReplicas", FL_F_INT),
    F("status.currentReplicas", FL_F_INT),
    F("status.updatedReplicas", FL_F_INT),
    F("status.currentRevision", FL_F_STRING),
    F("status.updateRevision", FL_F_STRING),
    F("status.collisionCount", FL_F_INT),
    FL("status.conditions", "type", "merge", condition_fields),
    F("status.availableReplicas", FL_F_INT),
    FEND,
};

static const fl_field daemonset_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FSR("spec.selector", FL_F_OBJECT, label_selector_fields),
    FSR("spec.template", FL_F_OBJECT, pod_template_fields),
    F("spec.updateStrategy", FL_F_OBJECT),
    F("spec.updateStrategy.type", FL_F_STRING),
    F("spec.updateStrategy.rollingUpdate", FL_F_OBJECT),
    F("spec.updateStrategy.rollingUpdate.maxUnavailable", FL_F_INTORSTR),
    F("spec.updateStrategy.rollingUpdate.maxSurge", FL_F_INTORSTR),
    F("spec.minReadySeconds", FL_F_INT),
    F("spec.revisionHistoryLimit", FL_F_INT),
    F("status", FL_F_OBJECT),
    F("status.currentNumberScheduled", FL_F_INT),
    F("status.numberMisscheduled", FL_F_INT),
    F("status.desiredNumberScheduled", FL_F_INT),
    F("status.numberReady", FL_F_INT),
    F("status.observedGeneration", FL_F_INT),
    F("status.updatedNumberScheduled", FL_F_INT),
    F("status.numberAvailable", FL_F_INT),
    F("status.numberUnavailable", FL_F_INT),
    F("status.collisionCount", FL_F_INT),
    FL("status.conditions", "type", "merge", condition_fields),
    FEND,
};

static const fl_field replicaset_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.replicas", FL_F_INT),
    F("spec.minReadySeconds", FL_F_INT),
    FSR("spec.selector", FL_F_OBJECT, label_selector_fields),
    FS("spec.template", FL_F_OBJECT, pod_template_fields),
    F("status", FL_F_OBJECT),
    F("status.replicas", FL_F_INT),
    F("status.fullyLabeledReplicas", FL_F_INT),
    F("status.readyReplicas", FL_F_INT),
    F("status.availableReplicas", FL_F_INT),
    F("status.terminatingReplicas", FL_F_INT),
    F("status.observedGeneration", FL_F_INT),
    FL("status.conditions", "type", "merge", condition_fields),
    FEND,
};

/* ------------------------------------------------------------------ */
/* batch/v1                                                            */
/* ------------------------------------------------------------------ */

static const fl_field job_spec_fields[] = {
    F("parallelism", FL_F_INT),
    F("completions", FL_F_INT),
    F("activeDeadlineSeconds", FL_F_INT),
    F("podFailurePolicy", FL_F_OBJECT),
    FS("podFailurePolicy.rules", FL_F_ARRAY, opaque_fields),
    F("successPolicy", FL_F_OBJECT),
    FS("successPolicy.rules", FL_F_ARRAY, opaque_fields),
    F("backoffLimit", FL_F_INT),
    F("backoffLimitPerIndex", FL_F_INT),
    F("maxFailedIndexes", FL_F_INT),
    FS("selector", FL_F_OBJECT, label_selector_fields),
    F("manualSelector", FL_F_BOOL),
    FSR("template", FL_F_OBJECT, pod_template_fields),
    F("ttlSecondsAfterFinished", FL_F_INT),
    F("completionMode", FL_F_STRING),
    F("suspend", FL_F_BOOL),
    F("podReplacementPolicy", FL_F_STRING),
    F("managedBy", FL_F_STRING),
    FEND,
};

static const fl_field job_fields[] = {
    TYPEMETA, META,
    FS("spec", FL_F_OBJECT, job_spec_fields),
    F("status", FL_F_OBJECT),
    FL("status.conditions", "type", "merge", condition_fields),
    F("status.startTime", FL_F_STRING),
    F("status.completionTime", FL_F_STRING),
    F("status.active", FL_F_INT),
    F("status.succeeded", FL_F_INT),
    F("status.failed", FL_F_INT),
    F("status.terminating", FL_F_INT),
    F("status.completedIndexes", FL_F_STRING),
    F("status.failedIndexes", FL_F_STRING),
    F("status.uncountedTerminatedPods", FL_F_OBJECT),
    F("status.ready", FL_F_INT),
    FEND,
};

static const fl_field job_template_fields[] = {
    FS("metadata", FL_F_OBJECT, fl_kinds__objectmeta_fields),
    FS("spec", FL_F_OBJECT, job_spec_fields),
    FEND,
};

static const fl_field cronjob_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FR("spec.schedule", FL_F_STRING),
    F("spec.timeZone", FL_F_STRING),
    F("spec.startingDeadlineSeconds", FL_F_INT),
    F("spec.concurrencyPolicy", FL_F_STRING),
    F("spec.suspend", FL_F_BOOL),
    FSR("spec.jobTemplate", FL_F_OBJECT, job_template_fields),
    F("spec.successfulJobsHistoryLimit", FL_F_INT),
    F("spec.failedJobsHistoryLimit", FL_F_INT),
    F("status", FL_F_OBJECT),
    FS("status.active", FL_F_ARRAY, object_ref_fields),
    F("status.lastScheduleTime", FL_F_STRING),
    F("status.lastSuccessfulTime", FL_F_STRING),
    FEND,
};

/* ------------------------------------------------------------------ */
/* coordination.k8s.io/v1, apiextensions.k8s.io/v1                     */
/* ------------------------------------------------------------------ */

static const fl_field lease_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.holderIdentity", FL_F_STRING),
    F("spec.leaseDurationSeconds", FL_F_INT),
    F("spec.acquireTime", FL_F_STRING),
    F("spec.renewTime", FL_F_STRING),
    F("spec.leaseTransitions", FL_F_INT),
    F("spec.strategy", FL_F_STRING),
    F("spec.preferredHolder", FL_F_STRING),
    FEND,
};

static const fl_field crd_column_fields[] = {
    FR("name", FL_F_STRING), FR("type", FL_F_STRING), F("format", FL_F_STRING), F("description", FL_F_STRING),
    F("priority", FL_F_INT), FR("jsonPath", FL_F_STRING), FEND,
};

static const fl_field crd_version_fields[] = {
    FR("name", FL_F_STRING),
    FR("served", FL_F_BOOL),
    FR("storage", FL_F_BOOL),
    F("deprecated", FL_F_BOOL),
    F("deprecationWarning", FL_F_STRING),
    F("schema", FL_F_OBJECT),
    F("schema.openAPIV3Schema", FL_F_OBJECT),
    F("subresources", FL_F_OBJECT),
    F("subresources.status", FL_F_OBJECT),
    F("subresources.scale", FL_F_OBJECT),
    FS("additionalPrinterColumns", FL_F_ARRAY, crd_column_fields),
    FS("selectableFields", FL_F_ARRAY, opaque_fields),
    FEND,
};

static const fl_field crd_names_fields[] = {
    FR("plural", FL_F_STRING), F("singular", FL_F_STRING), F("shortNames", FL_F_ARRAY),
    FR("kind", FL_F_STRING), F("listKind", FL_F_STRING), F("categories", FL_F_ARRAY), FEND,
};

static const fl_field crd_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FR("spec.group", FL_F_STRING),
    FSR("spec.names", FL_F_OBJECT, crd_names_fields),
    FR("spec.scope", FL_F_STRING),
    FS("spec.versions", FL_F_ARRAY, crd_version_fields),
    F("spec.conversion", FL_F_OBJECT),
    F("spec.conversion.strategy", FL_F_STRING),
    F("spec.conversion.webhook", FL_F_OBJECT),
    F("spec.preserveUnknownFields", FL_F_BOOL),
    F("status", FL_F_OBJECT),
    FS("status.conditions", FL_F_ARRAY, condition_fields),
    FS("status.acceptedNames", FL_F_OBJECT, crd_names_fields),
    F("status.storedVersions", FL_F_ARRAY),
    FEND,
};

/* ------------------------------------------------------------------ */
/* Karmada                                                             */
/* ------------------------------------------------------------------ */

static const fl_field karmada_selector_fields[] = {
    FR("apiVersion", FL_F_STRING), FR("kind", FL_F_STRING), F("namespace", FL_F_STRING),
    F("name", FL_F_STRING), FS("labelSelector", FL_F_OBJECT, label_selector_fields), FEND,
};

static const fl_field cluster_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.id", FL_F_STRING),
    FR("spec.syncMode", FL_F_STRING),
    F("spec.apiEndpoint", FL_F_STRING),
    F("spec.secretRef", FL_F_OBJECT),
    F("spec.secretRef.namespace", FL_F_STRING),
    F("spec.secretRef.name", FL_F_STRING),
    F("spec.impersonatorSecretRef", FL_F_OBJECT),
    F("spec.insecureSkipTLSVerification", FL_F_BOOL),
    F("spec.proxyURL", FL_F_STRING),
    F("spec.proxyHeader", FL_F_MAPSTR),
    F("spec.provider", FL_F_STRING),
    F("spec.region", FL_F_STRING),
    F("spec.zone", FL_F_STRING),
    F("spec.zones", FL_F_ARRAY),
    FS("spec.taints", FL_F_ARRAY, taint_fields),
    FS("spec.resourceModels", FL_F_ARRAY, opaque_fields),
    F("spec.suspendDispatching", FL_F_BOOL), /* ours: pause all delivery to the cluster */
    F("status", FL_F_OBJECT),
    F("status.kubernetesVersion", FL_F_STRING),
    FS("status.apiEnablements", FL_F_ARRAY, opaque_fields),
    FS("status.conditions", FL_F_ARRAY, condition_fields),
    F("status.nodeSummary", FL_F_OBJECT),
    F("status.resourceSummary", FL_F_OBJECT),
    F("status.remedyActions", FL_F_ARRAY),
    FEND,
};

static const fl_field propagation_policy_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FS("spec.resourceSelectors", FL_F_ARRAY, karmada_selector_fields),
    F("spec.association", FL_F_BOOL),
    F("spec.propagateDeps", FL_F_BOOL),
    F("spec.placement", FL_F_OBJECT),
    F("spec.priority", FL_F_INT),
    F("spec.preemption", FL_F_STRING),
    F("spec.dependentOverrides", FL_F_ARRAY),
    F("spec.schedulerName", FL_F_STRING),
    F("spec.failover", FL_F_OBJECT),
    F("spec.conflictResolution", FL_F_STRING),
    F("spec.activationPreference", FL_F_STRING),
    F("spec.suspension", FL_F_OBJECT),
    F("spec.preserveResourcesOnDeletion", FL_F_BOOL),
    FEND,
};

static const fl_field override_policy_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FS("spec.resourceSelectors", FL_F_ARRAY, karmada_selector_fields),
    FS("spec.overrideRules", FL_F_ARRAY, opaque_fields),
    F("spec.targetCluster", FL_F_OBJECT),
    F("spec.overriders", FL_F_OBJECT),
    FEND,
};

static const fl_field target_cluster_fields[] = { FR("name", FL_F_STRING), F("replicas", FL_F_INT), FEND };

static const fl_field binding_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    FR("spec.resource", FL_F_OBJECT),
    F("spec.resource.apiVersion", FL_F_STRING),
    F("spec.resource.kind", FL_F_STRING),
    F("spec.resource.namespace", FL_F_STRING),
    F("spec.resource.name", FL_F_STRING),
    F("spec.resource.uid", FL_F_STRING),
    F("spec.resource.resourceVersion", FL_F_STRING),
    F("spec.propagateDeps", FL_F_BOOL),
    F("spec.replicaRequirements", FL_F_OBJECT),
    F("spec.replicas", FL_F_INT),
    FS("spec.clusters", FL_F_ARRAY, target_cluster_fields),
    F("spec.placement", FL_F_OBJECT),
    FS("spec.gracefulEvictionTasks", FL_F_ARRAY, opaque_fields),
    FS("spec.requiredBy", FL_F_ARRAY, opaque_fields),
    F("spec.schedulerName", FL_F_STRING),
    F("spec.failover", FL_F_OBJECT),
    F("spec.conflictResolution", FL_F_STRING),
    F("spec.rescheduleTriggeredAt", FL_F_STRING),
    F("spec.suspension", FL_F_OBJECT),
    F("spec.preserveResourcesOnDeletion", FL_F_BOOL),
    F("status", FL_F_OBJECT),
    F("status.schedulerObservedGeneration", FL_F_INT),
    F("status.schedulerObservingAffinityName", FL_F_STRING),
    F("status.lastScheduledTime", FL_F_STRING),
    FS("status.conditions", FL_F_ARRAY, condition_fields),
    FS("status.aggregatedStatus", FL_F_ARRAY, opaque_fields),
    FEND,
};

static const fl_field work_fields[] = {
    TYPEMETA, META,
    F("spec", FL_F_OBJECT),
    F("spec.workload", FL_F_OBJECT),
    FS("spec.workload.manifests", FL_F_ARRAY, opaque_fields),
    F("spec.suspendDispatching", FL_F_BOOL),
    F("spec.preserveResourcesOnDeletion", FL_F_BOOL),
    F("status", FL_F_OBJECT),
    FS("status.conditions", FL_F_ARRAY, condition_fields),
    FS("status.manifestStatuses", FL_F_ARRAY, opaque_fields),
    FEND,
};

static const fl_field ric_fields[] = {
    TYPEMETA, META,
    FR("spec", FL_F_OBJECT),
    FR("spec.target", FL_F_OBJECT),
    FR("spec.target.apiVersion", FL_F_STRING),
    FR("spec.target.kind", FL_F_STRING),
    FR("spec.customizations", FL_F_OBJECT),
    FEND,
};

static const fl_field riwc_rule_fields[] = {
    FR("operations", FL_F_ARRAY), FR("apiGroups", FL_F_ARRAY), FR("apiVersions", FL_F_ARRAY),
    FR("kinds", FL_F_ARRAY), FEND,
};

static const fl_field riwc_webhook_fields[] = {
    FR("name", FL_F_STRING),
    FR("clientConfig", FL_F_OBJECT),
    F("clientConfig.url", FL_F_STRING),
    F("clientConfig.service", FL_F_OBJECT),
    FR("clientConfig.service.namespace", FL_F_STRING),
    FR("clientConfig.service.name", FL_F_STRING),
    F("clientConfig.service.path", FL_F_STRING),
    F("clientConfig.service.port", FL_F_INT),
    F("clientConfig.caBundle", FL_F_STRING),
    FS("rules", FL_F_ARRAY, riwc_rule_fields),
    F("timeoutSeconds", FL_F_INT),
    FR("interpreterContextVersions", FL_F_ARRAY),
    FEND,
};

static const fl_field riwc_fields[] = {
    TYPEMETA, META,
    FSR("webhooks", FL_F_ARRAY, riwc_webhook_fields),
    FEND,
};

/* ------------------------------------------------------------------ */
/* Row helpers                                                         */
/* ------------------------------------------------------------------ */

/* The string at path, or def when it is missing or empty: what a Table cell shows. */
static const char *jstr_or(const json_t *o, const char *path, const char *def)
{
    const char *s = fl_json_path_str(o, path);
    return s && *s ? s : def;
}

static void cell_str(json_t *cells, const char *s) { json_array_append_new(cells, json_string(s ? s : "")); }

static void cell_int(json_t *cells, json_int_t v) { json_array_append_new(cells, json_integer(v)); }

static void cell_take(json_t *cells, char *s)
{
    json_array_append_new(cells, json_string(s));
    free(s);
}

/* RFC 3339 (with optional fraction and offset) -> epoch seconds; -1 if unparsable. */
static long long parse_time(const char *s)
{
    if (!s || !*s)
        return -1;
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    long long t = (long long)timegm(&tm);
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (*p == '+' || *p == '-') {
        int hh = 0, mm = 0;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) >= 1)
            t += (*p == '+' ? -1 : 1) * (hh * 3600LL + mm * 60LL);
    }
    return t;
}

/* Kubernetes' HumanDuration: "45s", "3m12s", "5h2m", "3d4h", "2y10d". */
static char *human_duration(long long secs)
{
    if (secs < -1)
        return fl_strdup("<invalid>");
    if (secs < 0)
        return fl_strdup("0s");
    if (secs < 120)
        return fl_asprintf("%llds", secs);
    long long minutes = secs / 60;
    if (minutes < 10)
        return secs % 60 ? fl_asprintf("%lldm%llds", minutes, secs % 60) : fl_asprintf("%lldm", minutes);
    if (minutes < 180)
        return fl_asprintf("%lldm", minutes);
    long long hours = secs / 3600;
    if (hours < 8)
        return minutes % 60 ? fl_asprintf("%lldh%lldm", hours, minutes % 60) : fl_asprintf("%lldh", hours);
    if (hours < 48)
        return fl_asprintf("%lldh", hours);
    if (hours < 24 * 8)
        return hours % 24 ? fl_asprintf("%lldd%lldh", hours / 24, hours % 24) : fl_asprintf("%lldd", hours / 24);
    if (hours < 24 * 365 * 2)
        return fl_asprintf("%lldd", hours / 24);
    if (hours < 24 * 365 * 8) {
        long long dy = (hours / 24) % 365;
        return dy ? fl_asprintf("%lldy%lldd", hours / 24 / 365, dy) : fl_asprintf("%lldy", hours / 24 / 365);
    }
    return fl_asprintf("%lldy", hours / 24 / 365);
}

/* "<unknown>" for a missing time, as upstream's translateTimestampSince. */
static char *since(const char *rfc3339)
{
    long long t = parse_time(rfc3339);
    if (t < 0)
        return fl_strdup("<unknown>");
    return human_duration((long long)time(NULL) - t);
}

/* A comma-joined list: s after a comma, unless nothing is there yet (an empty s adds no
 * comma before the next one either). */
static void join_add(fl_strbuf *b, const char *s)
{
    if (b->len)
        fl_strbuf_addc(b, ',');
    fl_strbuf_adds(b, s);
}

/* Take the joined string, or a copy of def if nothing was added. */
static char *join_take(fl_strbuf *b, const char *def)
{
    if (!b->len) {
        fl_strbuf_close(b);
        return fl_strdup(def);
    }
    return fl_strbuf_take(b);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* labels.FormatLabels: "k=v,k2=v2" sorted by key, "<none>" when empty. */
static char *format_labels(const json_t *m)
{
    size_t n = json_is_object(m) ? json_object_size(m) : 0;
    if (!n)
        return fl_strdup("<none>");
    char **kv = fl_calloc(n, sizeof(*kv));
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) kv[i++] = fl_asprintf("%s=%s", k, json_is_string(v) ? json_string_value(v) : "");
    qsort(kv, n, sizeof(*kv), cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (i = 0; i < n; i++) {
        join_add(&b, kv[i]);
        free(kv[i]);
    }
    free(kv);
    return join_take(&b, "<none>");
}

/* metav1.FormatLabelSelector: requirements sorted by key ("k=v", "k in (a,b)",
 * "k notin (a,b)", "k", "!k"); "<none>" for an empty selector. */
static char *format_selector(const json_t *sel)
{
    if (!json_is_object(sel))
        return fl_strdup("<none>");
    const json_t *ml = json_object_get(sel, "matchLabels");
    const json_t *me = json_object_get(sel, "matchExpressions");
    size_t n = (json_is_object(ml) ? json_object_size(ml) : 0) + (json_is_array(me) ? json_array_size(me) : 0);
    if (!n)
        return fl_strdup("<none>");
    char **req = fl_calloc(n, sizeof(*req));
    size_t i = 0, j;
    const char *k;
    json_t *v;
    if (json_is_object(ml))
        json_object_foreach((json_t *)ml, k, v) req[i++] = fl_asprintf("%s=%s", k, json_is_string(v) ? json_string_value(v) : "");
    json_array_foreach(me, j, v) {
        const char *key = jstr_or(v, "key", "");
        const char *op = jstr_or(v, "operator", "");
        const json_t *vals = json_object_get(v, "values");
        size_t nv = json_is_array(vals) ? json_array_size(vals) : 0;
        char **vs = fl_calloc(nv ? nv : 1, sizeof(*vs));
        for (size_t x = 0; x < nv; x++) {
            const char *s = json_string_value(json_array_get(vals, x));
            vs[x] = fl_strdup(s ? s : "");
        }
        qsort(vs, nv, sizeof(*vs), cmp_str);
        fl_strbuf b = FL_STRBUF_INIT;
        for (size_t x = 0; x < nv; x++) {
            join_add(&b, vs[x]);
            free(vs[x]);
        }
        free(vs);
        char *joined = join_take(&b, "");
        if (!strcmp(op, "In"))
            req[i++] = fl_asprintf("%s in (%s)", key, joined);
        else if (!strcmp(op, "NotIn"))
            req[i++] = fl_asprintf("%s notin (%s)", key, joined);
        else if (!strcmp(op, "Exists"))
            req[i++] = fl_strdup(key);
        else if (!strcmp(op, "DoesNotExist"))
            req[i++] = fl_asprintf("!%s", key);
        else
            req[i++] = fl_asprintf("%s %s (%s)", key, op, joined);
        free(joined);
    }
    qsort(req, i, sizeof(*req), cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (j = 0; j < i; j++) {
        join_add(&b, req[j]);
        free(req[j]);
    }
    free(req);
    return join_take(&b, "<none>");
}

/* Containers and images of a pod template, comma-joined (wide columns). */
static void cells_containers_images(json_t *cells, const json_t *podspec)
{
    const json_t *cs = json_object_get(podspec, "containers");
    fl_strbuf names = FL_STRBUF_INIT, images = FL_STRBUF_INIT;
    size_t i;
    json_t *c;
    json_array_foreach(cs, i, c) {
        join_add(&names, jstr_or(c, "name", ""));
        join_add(&images, jstr_or(c, "image", ""));
    }
    cell_take(cells, join_take(&names, ""));
    cell_take(cells, join_take(&images, ""));
}

/* The condition of `type` in a conditions array, or NULL. */
static const json_t *find_condition(const json_t *conds, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        const char *t = fl_json_path_str(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

static bool condition_true(const json_t *conds, const char *type)
{
    const char *s = fl_json_path_str(find_condition(conds, type), "status");
    return s && !strcmp(s, "True");
}

/* ------------------------------------------------------------------ */
/* Row functions                                                       */
/* ------------------------------------------------------------------ */

static void row_namespace(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_str(cells, jstr_or(o, "status.phase", ""));
}

static void row_configmap(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *d = json_object_get(o, "data"), *b = json_object_get(o, "binaryData");
    cell_int(cells, (json_int_t)((json_is_object(d) ? json_object_size(d) : 0) +
                                 (json_is_object(b) ? json_object_size(b) : 0)));
}

static void row_secret(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *d = json_object_get(o, "data");
    cell_str(cells, jstr_or(o, "type", "Opaque"));
    cell_int(cells, (json_int_t)(json_is_object(d) ? json_object_size(d) : 0));
}

static void row_serviceaccount(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *s = json_object_get(o, "secrets");
    cell_int(cells, (json_int_t)(json_is_array(s) ? json_array_size(s) : 0));
}

static char *service_external_ip(const json_t *o)
{
    const char *type = jstr_or(o, "spec.type", "ClusterIP");
    const json_t *ext = fl_json_path(o, "spec.externalIPs");
    size_t i;
    json_t *v;
    fl_strbuf b = FL_STRBUF_INIT;
    if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
        json_array_foreach(ext, i, v) if (json_is_string(v)) join_add(&b, json_string_value(v));
        return join_take(&b, "<none>");
    }
    if (!strcmp(type, "LoadBalancer")) {
        json_array_foreach(fl_json_path(o, "status.loadBalancer.ingress"), i, v) {
            const char *ip = fl_json_path_str(v, "ip"), *host = fl_json_path_str(v, "hostname");
            if (ip && *ip)
                join_add(&b, ip);
            else if (host && *host)
                join_add(&b, host);
        }
        json_array_foreach(ext, i, v) if (json_is_string(v)) join_add(&b, json_string_value(v));
        return join_take(&b, "<pending>");
    }
    if (!strcmp(type, "ExternalName"))
        return fl_strdup(jstr_or(o, "spec.externalName", ""));
    return fl_strdup("<unknown>");
}

static void row_service(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_str(cells, jstr_or(o, "spec.type", "ClusterIP"));
    cell_str(cells, jstr_or(o, "spec.clusterIP", "<none>"));
    cell_take(cells, service_external_ip(o));
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *p;
    json_array_foreach(fl_json_path(o, "spec.ports"), i, p) {
        char *s;
        json_int_t node_port = fl_json_path_int(p, "nodePort", 0);
        const char *proto = jstr_or(p, "protocol", "TCP");
        if (node_port)
            s = fl_asprintf("%lld:%lld/%s", (long long)fl_json_path_int(p, "port", 0), (long long)node_port, proto);
        else
            s = fl_asprintf("%lld/%s", (long long)fl_json_path_int(p, "port", 0), proto);
        join_add(&b, s);
        free(s);
    }
    cell_take(cells, join_take(&b, "<none>"));
    cell_take(cells, format_labels(fl_json_path(o, "spec.selector")));
}

static const char *pvc_mode_abbrev(const char *m)
{
    if (!strcmp(m, "ReadWriteOnce"))
        return "RWO";
    if (!strcmp(m, "ReadOnlyMany"))
        return "ROX";
    if (!strcmp(m, "ReadWriteMany"))
        return "RWX";
    if (!strcmp(m, "ReadWriteOncePod"))
        return "RWOP";
    return NULL;
}

static void row_pvc(const fl_kind *k, const json_t *o, json_t *cells)
{
    const char *volume = jstr_or(o, "spec.volumeName", "");
    cell_str(cells, fl_json_path_str(o, "metadata.deletionTimestamp")
                        ? "Terminating"
                        : jstr_or(o, "status.phase", ""));
    cell_str(cells, volume);
    if (*volume) {
        const json_t *cap = fl_json_path(o, "status.capacity.storage");
        if (json_is_string(cap))
            cell_str(cells, json_string_value(cap));
        else if (json_is_integer(cap))
            cell_take(cells, fl_asprintf("%lld", (long long)json_integer_value(cap)));
        else
            cell_str(cells, "");
        /* upstream prints the modes in this fixed order */
        static const char *order[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"};
        fl_strbuf b = FL_STRBUF_INIT;
        for (size_t x = 0; x < 4; x++) {
            size_t i;
            json_t *m;
            json_array_foreach(fl_json_path(o, "status.accessModes"), i, m) {
                if (json_is_string(m) && !strcmp(json_string_value(m), order[x])) {
                    join_add(&b, pvc_mode_abbrev(order[x]));
                    break;
                }
            }
        }
        cell_take(cells, join_take(&b, ""));
    } else {
        cell_str(cells, "");
        cell_str(cells, "");
    }
    const char *sc = fl_json_path_str(o, "spec.storageClassName");
    if (!sc) /* the beta annotation still wins upstream when the field is unset */
        sc = json_string_value(json_object_get(fl_json_path(o, "metadata.annotations"),
                                               "volume.beta.kubernetes.io/storage-class"));
    cell_str(cells, sc ? sc : "");
    cell_str(cells, jstr_or(o, "spec.volumeAttributesClassName", "<unset>"));
    cell_str(cells, jstr_or(o, "spec.volumeMode", "<unset>"));
}

/* upstream printPod: READY, STATUS, RESTARTS (+ IP, NODE wide). */
static void row_pod(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *spec = json_object_get(o, "spec"), *status = json_object_get(o, "status");
    const json_t *inits = json_object_get(spec, "initContainers");
    const json_t *conds = json_object_get(status, "conditions");
    long long restarts = 0, sidecar_restarts = 0, last_restart = -1, sidecar_last_restart = -1;
    size_t total = json_array_size(json_object_get(spec, "containers")), ready = 0, i;
    json_t *c;
    char buf[96];
    char *reason = fl_strdup(jstr_or(status, "phase", ""));
    if (fl_json_path_str(status, "reason") && *fl_json_path_str(status, "reason")) {
        free(reason);
        reason = fl_strdup(fl_json_path_str(status, "reason"));
    }
    json_array_foreach(conds, i, c) {
        const char *t = fl_json_path_str(c, "type"), *r = fl_json_path_str(c, "reason");
        if (t && r && !strcmp(t, "PodScheduled") && !strcmp(r, "SchedulingGated")) {
            free(reason);
            reason = fl_strdup("SchedulingGated");
        }
    }
    /* restartable init containers (sidecars) count as containers */
    json_array_foreach(inits, i, c) {
        const char *rp = fl_json_path_str(c, "restartPolicy");
        if (rp && !strcmp(rp, "Always"))
            total++;
    }
    bool initializing = false;
    const json_t *istat = json_object_get(status, "initContainerStatuses");
    json_array_foreach(istat, i, c) {
        const char *name = jstr_or(c, "name", "");
        bool sidecar = false;
        size_t j;
        json_t *ic;
        json_array_foreach(inits, j, ic) {
            const char *rp = fl_json_path_str(ic, "restartPolicy");
            if (!strcmp(jstr_or(ic, "name", ""), name) && rp && !strcmp(rp, "Always"))
                sidecar = true;
        }
        long long rc = fl_json_path_int(c, "restartCount", 0);
        long long fin = parse_time(fl_json_path_str(c, "lastState.terminated.finishedAt"));
        restarts += rc;
        if (fin > last_restart)
            last_restart = fin;
        if (sidecar) {
            sidecar_restarts += rc;
            if (fin > sidecar_last_restart)
                sidecar_last_restart = fin;
        }
        const json_t *term = fl_json_path(c, "state.terminated");
        const json_t *wait = fl_json_path(c, "state.waiting");
        const json_t *started = json_object_get(c, "started");
        if (term && fl_json_path_int(term, "exitCode", 0) == 0)
            continue;
        if (sidecar && json_is_true(started)) {
            if (json_is_true(json_object_get(c, "ready")))
                ready++;
            continue;
        }
        free(reason);
        if (term) {
            const char *r = fl_json_path_str(term, "reason");
            if (r && *r)
                reason = fl_asprintf("Init:%s", r);
            else if (fl_json_path_int(term, "signal", 0))
                reason = fl_asprintf("Init:Signal:%lld", (long long)fl_json_path_int(term, "signal", 0));
            else
                reason = fl_asprintf("Init:ExitCode:%lld", (long long)fl_json_path_int(term, "exitCode", 0));
        } else if (wait && fl_json_path_str(wait, "reason") && *fl_json_path_str(wait, "reason") &&
                   strcmp(fl_json_path_str(wait, "reason"), "PodInitializing")) {
            reason = fl_asprintf("Init:%s", fl_json_path_str(wait, "reason"));
        } else {
            reason = fl_asprintf("Init:%zu/%zu", i, json_array_size(inits));
        }
        initializing = true;
        break;
    }
    if (!initializing || condition_true(conds, "Initialized")) {
        restarts = sidecar_restarts;
        last_restart = sidecar_last_restart;
        bool running = false;
        const json_t *cstat = json_object_get(status, "containerStatuses");
        for (size_t n = json_array_size(cstat); n-- > 0;) {
            c = json_array_get(cstat, n);
            restarts += fl_json_path_int(c, "restartCount", 0);
            long long fin = parse_time(fl_json_path_str(c, "lastState.terminated.finishedAt"));
            if (fin > last_restart)
                last_restart = fin;
            const char *wr = fl_json_path_str(c, "state.waiting.reason"),
                       *tr = fl_json_path_str(c, "state.terminated.reason");
            if (wr && *wr) {
                free(reason);
                reason = fl_strdup(wr);
            } else if (tr && *tr) {
                free(reason);
                reason = fl_strdup(tr);
            } else if (fl_json_path(c, "state.terminated")) {
                free(reason);
                if (fl_json_path_int(c, "state.terminated.signal", 0))
                    reason = fl_asprintf("Signal:%lld", (long long)fl_json_path_int(c, "state.terminated.signal", 0));
                else
                    reason =
                        fl_asprintf("ExitCode:%lld", (long long)fl_json_path_int(c, "state.terminated.exitCode", 0));
            } else if (json_is_true(json_object_get(c, "ready")) && fl_json_path(c, "state.running")) {
                running = true;
                ready++;
            }
        }
        if (!strcmp(reason, "Completed") && running) {
            free(reason);
            reason = fl_strdup(condition_true(conds, "Ready") ? "Running" : "NotReady");
        }
    }
    if (json_is_string(fl_json_path(o, "metadata.deletionTimestamp"))) {
        const char *sr = fl_json_path_str(status, "reason");
        const char *phase = jstr_or(status, "phase", "");
        if (sr && !strcmp(sr, "NodeLost")) {
            free(reason);
            reason = fl_strdup("Unknown");
        } else if (strcmp(phase, "Succeeded") && strcmp(phase, "Failed")) {
            free(reason);
            reason = fl_strdup("Terminating");
        }
    }
    snprintf(buf, sizeof(buf), "%zu/%zu", ready, total);
    cell_str(cells, buf);
    cell_take(cells, reason);
    if (restarts && last_restart >= 0) {
        char *ago = human_duration((long long)time(NULL) - last_restart);
        cell_take(cells, fl_asprintf("%lld (%s ago)", restarts, ago));
        free(ago);
    } else {
        cell_take(cells, fl_asprintf("%lld", restarts));
    }
    cell_str(cells, jstr_or(status, "podIP", "<none>"));
    cell_str(cells, jstr_or(spec, "nodeName", "<none>"));
}

static void row_event(const fl_kind *k, const json_t *o, json_t *cells)
{
    const char *first_ts = fl_json_path_str(o, "firstTimestamp");
    if (!first_ts || !*first_ts)
        first_ts = fl_json_path_str(o, "eventTime");
    const char *last_ts = fl_json_path_str(o, "lastTimestamp");
    if (!last_ts || !*last_ts)
        last_ts = first_ts;
    if (json_is_object(json_object_get(o, "series"))) {
        last_ts = fl_json_path_str(o, "series.lastObservedTime");
        first_ts = fl_json_path_str(o, "eventTime");
    }
    char *last = since(last_ts);
    json_int_t count = fl_json_path_int(o, "count", 0);
    if (json_is_object(json_object_get(o, "series")))
        count = fl_json_path_int(o, "series.count", 0);
    if (count > 1) {
        char *first = since(first_ts);
        cell_take(cells, fl_asprintf("%s (x%lld over %s)", last, (long long)count, first));
        free(first);
        free(last);
    } else {
        cell_take(cells, last);
    }
    cell_str(cells, jstr_or(o, "type", ""));
    cell_str(cells, jstr_or(o, "reason", ""));
    char *kind = fl_strdup(jstr_or(o, "involvedObject.kind", ""));
    for (char *p = kind; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    const char *name = jstr_or(o, "involvedObject.name", "");
    cell_take(cells, *name ? fl_asprintf("%s/%s", kind, name) : fl_strdup(kind));
    free(kind);
    /* upstream trims surrounding whitespace from the message */
    const char *msg = jstr_or(o, "message", "");
    while (isspace((unsigned char)*msg))
        msg++;
    size_t n = strlen(msg);
    while (n && isspace((unsigned char)msg[n - 1]))
        n--;
    cell_take(cells, fl_strndup(msg, n));
}

static void row_node(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *ready = find_condition(fl_json_path(o, "status.conditions"), "Ready");
    const char *st = fl_json_path_str(ready, "status");
    const char *status = !ready ? "Unknown" : (st && !strcmp(st, "True")) ? "Ready" : "NotReady";
    if (json_is_true(fl_json_path(o, "spec.unschedulable")))
        cell_take(cells, fl_asprintf("%s,SchedulingDisabled", status));
    else
        cell_str(cells, status);
    /* roles from node-role.kubernetes.io/<role> and kubernetes.io/role labels */
    const json_t *labels = fl_json_path(o, "metadata.labels");
    size_t n = json_is_object(labels) ? json_object_size(labels) : 0, r = 0;
    char **roles = fl_calloc(n ? n : 1, sizeof(*roles));
    const char *key;
    json_t *v;
    if (n)
        json_object_foreach((json_t *)labels, key, v) {
            if (!strncmp(key, "node-role.kubernetes.io/", 24) && key[24])
                roles[r++] = fl_strdup(key + 24);
            else if (!strcmp(key, "kubernetes.io/role") && json_is_string(v) && *json_string_value(v))
                roles[r++] = fl_strdup(json_string_value(v));
        }
    qsort(roles, r, sizeof(*roles), cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (size_t i = 0; i < r; i++) {
        if (!i || strcmp(roles[i], roles[i - 1]))
            join_add(&b, roles[i]);
    }
    for (size_t i = 0; i < r; i++)
        free(roles[i]);
    free(roles);
    cell_take(cells, join_take(&b, "<none>"));
    cell_str(cells, jstr_or(o, "status.nodeInfo.kubeletVersion", ""));
}

static void row_deployment(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_take(cells, fl_asprintf("%lld/%lld", (long long)fl_json_path_int(o, "status.readyReplicas", 0),
                                 (long long)fl_json_path_int(o, "spec.replicas", 1)));
    cell_int(cells, fl_json_path_int(o, "status.updatedReplicas", 0));
    cell_int(cells, fl_json_path_int(o, "status.availableReplicas", 0));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    cell_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_statefulset(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_take(cells, fl_asprintf("%lld/%lld", (long long)fl_json_path_int(o, "status.readyReplicas", 0),
                                 (long long)fl_json_path_int(o, "spec.replicas", 1)));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
}

static void row_replicaset(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_int(cells, fl_json_path_int(o, "spec.replicas", 1));
    cell_int(cells, fl_json_path_int(o, "status.replicas", 0));
    cell_int(cells, fl_json_path_int(o, "status.readyReplicas", 0));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    cell_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_daemonset(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_int(cells, fl_json_path_int(o, "status.desiredNumberScheduled", 0));
    cell_int(cells, fl_json_path_int(o, "status.currentNumberScheduled", 0));
    cell_int(cells, fl_json_path_int(o, "status.numberReady", 0));
    cell_int(cells, fl_json_path_int(o, "status.updatedNumberScheduled", 0));
    cell_int(cells, fl_json_path_int(o, "status.numberAvailable", 0));
    cell_take(cells, format_labels(fl_json_path(o, "spec.template.spec.nodeSelector")));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    cell_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_job(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *conds = fl_json_path(o, "status.conditions");
    const char *status = "Running";
    if (condition_true(conds, "Complete"))
        status = "Complete";
    else if (condition_true(conds, "Failed"))
        status = "Failed";
    else if (json_is_string(fl_json_path(o, "metadata.deletionTimestamp")))
        status = "Terminating";
    else if (condition_true(conds, "Suspended"))
        status = "Suspended";
    else if (condition_true(conds, "FailureTarget"))
        status = "FailureTarget";
    else if (condition_true(conds, "SuccessCriteriaMet"))
        status = "SuccessCriteriaMet";
    cell_str(cells, status);

    long long succeeded = fl_json_path_int(o, "status.succeeded", 0);
    const json_t *completions = fl_json_path(o, "spec.completions"), *par = fl_json_path(o, "spec.parallelism");
    if (json_is_integer(completions))
        cell_take(cells, fl_asprintf("%lld/%lld", succeeded, (long long)json_integer_value(completions)));
    else if (json_is_integer(par) && json_integer_value(par) > 1)
        cell_take(cells, fl_asprintf("%lld/1 of %lld", succeeded, (long long)json_integer_value(par)));
    else
        cell_take(cells, fl_asprintf("%lld/1", succeeded));

    long long start = parse_time(fl_json_path_str(o, "status.startTime"));
    long long end = parse_time(fl_json_path_str(o, "status.completionTime"));
    if (start < 0)
        cell_str(cells, "");
    else
        cell_take(cells, human_duration((end >= 0 ? end : (long long)time(NULL)) - start));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    cell_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_cronjob(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_str(cells, jstr_or(o, "spec.schedule", ""));
    cell_str(cells, jstr_or(o, "spec.timeZone", "<none>"));
    json_array_append_new(cells, json_boolean(json_is_true(fl_json_path(o, "spec.suspend"))));
    cell_int(cells, (json_int_t)json_array_size(fl_json_path(o, "status.active")));
    const char *last = fl_json_path_str(o, "status.lastScheduleTime");
    cell_take(cells, last ? since(last) : fl_strdup("<none>"));
    cells_containers_images(cells, fl_json_path(o, "spec.jobTemplate.spec.template.spec"));
    cell_take(cells, format_selector(fl_json_path(o, "spec.jobTemplate.spec.selector")));
}

static void row_lease(const fl_kind *k, const json_t *o, json_t *cells)
{
    const char *h = fl_json_path_str(o, "spec.holderIdentity");
    cell_str(cells, h ? h : "<unknown>");
}

/* Karmada's aggregated API server printer for Cluster. */
static void row_cluster(const fl_kind *k, const json_t *o, json_t *cells)
{
    cell_str(cells, jstr_or(o, "status.kubernetesVersion", ""));
    cell_str(cells, jstr_or(o, "spec.syncMode", ""));
    const char *ready = fl_json_path_str(find_condition(fl_json_path(o, "status.conditions"), "Ready"), "status");
    cell_str(cells, ready ? ready : "Unknown");
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *z;
    json_array_foreach(fl_json_path(o, "spec.zones"), i, z) if (json_is_string(z)) join_add(&b, json_string_value(z));
    cell_take(cells, join_take(&b, "<none>"));
    cell_str(cells, jstr_or(o, "spec.region", "<none>"));
    cell_str(cells, jstr_or(o, "spec.provider", "<none>"));
    cell_str(cells, jstr_or(o, "spec.apiEndpoint", ""));
    cell_str(cells, jstr_or(o, "spec.proxyURL", "<none>"));
}

/* ------------------------------------------------------------------ */
/* Columns (after NAME; AGE is appended by the renderer)               */
/* ------------------------------------------------------------------ */

#define COL(n, t, d) { .name = (n), .type = (t), .format = "", .description = (d) }
#define COLW(n, t, d) { .name = (n), .type = (t), .format = "", .description = (d), .priority = 1 }
#define COLJ(n, t, jp, d) { .name = (n), .type = (t), .format = "", .description = (d), .jsonpath = (jp) }
#define CEND { .name = NULL }

#define D_CONTAINERS "Names of each container in the template."
#define D_IMAGES "Images referenced by each container in the template."
#define D_SELECTOR "A label query over pods that should match the replica count."

static const fl_column namespace_columns[] = {
    COL("Status", "string", "The status of the namespace"), CEND,
};
static const fl_column configmap_columns[] = {
    COL("Data", "string", "Data contains the configuration data."), CEND,
};
static const fl_column secret_columns[] = {
    COL("Type", "string", "Used to facilitate programmatic handling of secret data."),
    COL("Data", "string", "Data contains the secret data."), CEND,
};
static const fl_column serviceaccount_columns[] = {
    COL("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
    CEND,
};
static const fl_column service_columns[] = {
    COL("Type", "string", "type determines how the Service is exposed."),
    COL("Cluster-IP", "string", "clusterIP is the IP address of the service."),
    COL("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
    COL("Port(s)", "string", "The list of ports that are exposed by this service."),
    COLW("Selector", "string", "Route service traffic to pods with label keys and values matching this selector."),
    CEND,
};
static const fl_column pvc_columns[] = {
    COL("Status", "string", "The phase of the claim."),
    COL("Volume", "string", "The binding reference to the PersistentVolume backing this claim."),
    COL("Capacity", "string", "The actual resources of the underlying volume."),
    COL("Access Modes", "string", "The actual access modes the volume backing the PVC has."),
    COL("StorageClass", "string", "The name of the StorageClass required by the claim."),
    COL("VolumeAttributesClass", "string", "The name of the VolumeAttributesClass used by the claim."),
    COLW("VolumeMode", "string", "What type of volume is required by the claim."),
    CEND,
};
static const fl_column pod_columns[] = {
    COL("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    COL("Status", "string", "The aggregate status of the containers in this pod."),
    COL("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    COLW("IP", "string", "podIP address allocated to the pod."),
    COLW("Node", "string", "NodeName is a request to schedule this pod onto a specific node."),
    CEND,
};
static const fl_column event_columns[] = {
    COL("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    COL("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    COL("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    COL("Object", "string", "The object that this event is about."),
    COL("Message", "string", "A human-readable description of the status of this operation."),
    CEND,
};
static const fl_column node_columns[] = {
    COL("Status", "string", "The status of the node"),
    COL("Roles", "string", "The roles of the node"),
    COL("Version", "string", "Kubelet Version reported by the node."),
    CEND,
};
static const fl_column deployment_columns[] = {
    COL("Ready", "string", "Number of the pod with ready state"),
    COL("Up-to-date", "integer", "Total number of non-terminating pods targeted by this deployment that have the desired template spec."),
    COL("Available", "integer", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "Label selector for pods."),
    CEND,
};
static const fl_column statefulset_columns[] = {
    COL("Ready", "string", "Number of the pod with ready state"),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    CEND,
};
static const fl_column replicaset_columns[] = {
    COL("Desired", "integer", "Replicas is the number of desired pods."),
    COL("Current", "integer", "Replicas is the most recently observed number of non-terminating pods."),
    COL("Ready", "integer", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", D_SELECTOR),
    CEND,
};
static const fl_column daemonset_columns[] = {
    COL("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
    COL("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
    COL("Ready", "integer", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."),
    COL("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    COL("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available."),
    COL("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "A label query over pods that are managed by the daemon set."),
    CEND,
};
static const fl_column job_columns[] = {
    COL("Status", "string", "Status of the job."),
    COL("Completions", "string", "The completion status of the job"),
    COL("Duration", "string", "Time required to complete the job."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "A label query over pods that should match the pod count."),
    CEND,
};
static const fl_column cronjob_columns[] = {
    COL("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    COL("Timezone", "string", "The time zone name for the given schedule."),
    COL("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions."),
    COL("Active", "integer", "A list of pointers to currently running jobs."),
    COL("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "A label query over pods that should match the pod count."),
    CEND,
};
static const fl_column lease_columns[] = {
    COL("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
    CEND,
};
static const fl_column crd_columns[] = {
    COLJ("Created At", "date", ".metadata.creationTimestamp",
         "CreationTimestamp is a timestamp representing the server time when this object was created."),
    CEND,
};
static const fl_column cluster_columns[] = {
    COL("Version", "string", "KubernetesVersion represents version of the member cluster."),
    COL("Mode", "string", "SyncMode describes how a cluster sync resources from karmada control plane."),
    COL("Ready", "string", "The aggregate readiness state of this cluster for accepting workloads."),
    COLW("Zones", "string", "Zones represents the failure zones(also called availability zones) of the member cluster."),
    COLW("Region", "string", "Region represents the region of the member cluster locate in."),
    COLW("Provider", "string", "Provider represents the cloud provider name of the member cluster."),
    COLW("API-Endpoint", "string", "The API endpoint of the member cluster."),
    COLW("Proxy-URL", "string", "ProxyURL is the proxy URL for the cluster."),
    CEND,
};
/* Karmada CRDs' additionalPrinterColumns (AGE dropped: the renderer adds it). */
static const fl_column propagation_policy_columns[] = {
    COLJ("CONFLICT-RESOLUTION", "string", ".spec.conflictResolution", ""),
    COLJ("PRIORITY", "string", ".spec.priority", ""),
    CEND,
};
static const fl_column binding_columns[] = {
    COLJ("SCHEDULED", "string", ".status.conditions[?(@.type==\"Scheduled\")].status", ""),
    COLJ("FULLYAPPLIED", "string", ".status.conditions[?(@.type==\"FullyApplied\")].status", ""),
    CEND,
};
static const fl_column work_columns[] = {
    COLJ("WORKLOAD-KIND", "string", ".spec.workload.manifests[*].kind", ""),
    COLJ("APPLIED", "string", ".status.conditions[?(@.type==\"Applied\")].status", ""),
    CEND,
};
static const fl_column ric_columns[] = {
    COLJ("TARGET-API-VERSION", "string", ".spec.target.apiVersion", ""),
    COLJ("TARGET-KIND", "string", ".spec.target.kind", ""),
    CEND,
};
static const fl_column no_columns[] = { CEND };

/* ------------------------------------------------------------------ */
/* The table                                                           */
/* ------------------------------------------------------------------ */

#define NS true
#define CLUSTER false

fl_kind fl_kinds__builtin[] = {
    /* core/v1 */
    { .group = "", .version = "v1", .kind = "Namespace", .list_kind = "NamespaceList", .resource = "namespaces",
      .singular = "namespace", .namespaced = CLUSTER, .has_status = true, .short_names = {"ns"},
      .field_selectors = {"status.phase"}, .fields = namespace_fields, .columns = namespace_columns,
      .row = row_namespace, .validate = fl_validate_namespace },
    { .group = "", .version = "v1", .kind = "ConfigMap", .list_kind = "ConfigMapList", .resource = "configmaps",
      .singular = "configmap", .namespaced = NS, .short_names = {"cm"}, .fields = configmap_fields,
      .columns = configmap_columns, .row = row_configmap, .validate = fl_validate_configmap },
    { .group = "", .version = "v1", .kind = "Secret", .list_kind = "SecretList", .resource = "secrets",
      .singular = "secret", .namespaced = NS, .field_selectors = {"type"}, .fields = secret_fields,
      .columns = secret_columns, .row = row_secret, .validate = fl_validate_secret },
    { .group = "", .version = "v1", .kind = "Service", .list_kind = "ServiceList", .resource = "services",
      .singular = "service", .namespaced = NS, .has_status = true, .short_names = {"svc"}, .categories = {"all"},
      .fields = service_fields, .columns = service_columns, .row = row_service,
      .validate = fl_validate_service },
    { .group = "", .version = "v1", .kind = "ServiceAccount", .list_kind = "ServiceAccountList",
      .resource = "serviceaccounts", .singular = "serviceaccount", .namespaced = NS, .short_names = {"sa"},
      .fields = serviceaccount_fields, .columns = serviceaccount_columns, .row = row_serviceaccount },
    { .group = "", .version = "v1", .kind = "PersistentVolumeClaim", .list_kind = "PersistentVolumeClaimList",
      .resource = "persistentvolumeclaims", .singular = "persistentvolumeclaim", .namespaced = NS,
      .has_status = true, .short_names = {"pvc"}, .fields = pvc_fields, .columns = pvc_columns, .row = row_pvc },
    { .group = "", .version = "v1", .kind = "Pod", .list_kind = "PodList", .resource = "pods", .singular = "pod",
      .namespaced = NS, .has_status = true, .short_names = {"po"}, .categories = {"all"},
      .field_selectors = {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                          "status.phase", "status.podIP", "status.nominatedNodeName"},
      .fields = pod_fields, .columns = pod_columns, .row = row_pod, .validate = fl_validate_pod },
    /* Event supports more selectors upstream (involvedObject.apiVersion/resourceVersion/fieldPath,
     * source) than field_selectors[8] can hold with its NULL terminator; these are the ones
     * kubectl describe/events use. */
    { .group = "", .version = "v1", .kind = "Event", .list_kind = "EventList", .resource = "events",
      .singular = "event", .namespaced = NS, .short_names = {"ev"},
      .field_selectors = {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                          "involvedObject.uid", "reason", "reportingComponent", "type"},
      .fields = event_fields, .columns = event_columns, .row = row_event },
    { .group = "", .version = "v1", .kind = "Node", .list_kind = "NodeList", .resource = "nodes", .singular = "node",
      .namespaced = CLUSTER, .has_status = true, .short_names = {"no"}, .field_selectors = {"spec.unschedulable"},
      .fields = node_fields, .columns = node_columns, .row = row_node },
    /* apps/v1 */
    { .group = "apps", .version = "v1", .kind = "Deployment", .list_kind = "DeploymentList",
      .resource = "deployments", .singular = "deployment", .namespaced = NS, .has_status = true, .has_scale = true,
      .short_names = {"deploy"}, .categories = {"all"}, .fields = deployment_fields,
      .columns = deployment_columns, .row = row_deployment, .validate = fl_validate_deployment },
    { .group = "apps", .version = "v1", .kind = "StatefulSet", .list_kind = "StatefulSetList",
      .resource = "statefulsets", .singular = "statefulset", .namespaced = NS, .has_status = true,
      .has_scale = true, .short_names = {"sts"}, .categories = {"all"}, .fields = statefulset_fields,
      .columns = statefulset_columns, .row = row_statefulset, .validate = fl_validate_statefulset },
    { .group = "apps", .version = "v1", .kind = "DaemonSet", .list_kind = "DaemonSetList", .resource = "daemonsets",
      .singular = "daemonset", .namespaced = NS, .has_status = true, .short_names = {"ds"}, .categories = {"all"},
      .fields = daemonset_fields, .columns = daemonset_columns, .row = row_daemonset,
      .validate = fl_validate_daemonset },
    { .group = "apps", .version = "v1", .kind = "ReplicaSet", .list_kind = "ReplicaSetList",
      .resource = "replicasets", .singular = "replicaset", .namespaced = NS, .has_status = true, .has_scale = true,
      .short_names = {"rs"}, .categories = {"all"}, .field_selectors = {"status.replicas"},
      .fields = replicaset_fields, .columns = replicaset_columns, .row = row_replicaset,
      .validate = fl_validate_replicaset },
    /* batch/v1 */
    { .group = "batch", .version = "v1", .kind = "Job", .list_kind = "JobList", .resource = "jobs", .singular = "job",
      .namespaced = NS, .has_status = true, .categories = {"all"}, .field_selectors = {"status.successful"},
      .fields = job_fields, .columns = job_columns, .row = row_job, .validate = fl_validate_job },
    { .group = "batch", .version = "v1", .kind = "CronJob", .list_kind = "CronJobList", .resource = "cronjobs",
      .singular = "cronjob", .namespaced = NS, .has_status = true, .short_names = {"cj"}, .categories = {"all"},
      .fields = cronjob_fields, .columns = cronjob_columns, .row = row_cronjob,
      .validate = fl_validate_cronjob },
    /* coordination.k8s.io/v1 */
    { .group = "coordination.k8s.io", .version = "v1", .kind = "Lease", .list_kind = "LeaseList",
      .resource = "leases", .singular = "lease", .namespaced = NS, .fields = lease_fields,
      .columns = lease_columns, .row = row_lease },
    /* apiextensions.k8s.io/v1 */
    { .group = "apiextensions.k8s.io", .version = "v1", .kind = "CustomResourceDefinition",
      .list_kind = "CustomResourceDefinitionList", .resource = "customresourcedefinitions",
      .singular = "customresourcedefinition", .namespaced = CLUSTER, .has_status = true,
      .short_names = {"crd", "crds"}, .categories = {"api-extensions"}, .fields = crd_fields,
      .columns = crd_columns, .validate = fl_validate_crd },
    /* cluster.karmada.io/v1alpha1 (Karmada's aggregated API server) */
    { .group = "cluster.karmada.io", .version = "v1alpha1", .kind = "Cluster", .list_kind = "ClusterList",
      .resource = "clusters", .singular = "cluster", .namespaced = CLUSTER, .has_status = true,
      .fields = cluster_fields, .columns = cluster_columns, .row = row_cluster,
      .validate = fl_validate_cluster },
    /* policy.karmada.io/v1alpha1 */
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "PropagationPolicy",
      .list_kind = "PropagationPolicyList", .resource = "propagationpolicies", .singular = "propagationpolicy",
      .namespaced = NS, .short_names = {"pp"}, .categories = {"karmada-io"}, .fields = propagation_policy_fields,
      .columns = propagation_policy_columns, .validate = fl_validate_propagation_policy },
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "ClusterPropagationPolicy",
      .list_kind = "ClusterPropagationPolicyList", .resource = "clusterpropagationpolicies",
      .singular = "clusterpropagationpolicy", .namespaced = CLUSTER, .short_names = {"cpp"},
      .categories = {"karmada-io"}, .fields = propagation_policy_fields, .columns = propagation_policy_columns,
      .validate = fl_validate_propagation_policy },
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "OverridePolicy", .list_kind = "OverridePolicyList",
      .resource = "overridepolicies", .singular = "overridepolicy", .namespaced = NS, .short_names = {"op"},
      .categories = {"karmada-io"}, .fields = override_policy_fields, .columns = no_columns,
      .validate = fl_validate_override_policy },
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "ClusterOverridePolicy",
      .list_kind = "ClusterOverridePolicyList", .resource = "clusteroverridepolicies",
      .singular = "clusteroverridepolicy", .namespaced = CLUSTER, .short_names = {"cop"},
      .categories = {"karmada-io"}, .fields = override_policy_fields, .columns = no_columns,
      .validate = fl_validate_override_policy },
    /* work.karmada.io */
    { .group = "work.karmada.io", .version = "v1alpha1", .kind = "Work", .list_kind = "WorkList", .resource = "works",
      .singular = "work", .namespaced = NS, .has_status = true, .short_names = {"wk"},
      .categories = {"karmada-io"}, .fields = work_fields, .columns = work_columns, .validate = fl_validate_work },
    { .group = "work.karmada.io", .version = "v1alpha2", .kind = "ResourceBinding", .list_kind = "ResourceBindingList",
      .resource = "resourcebindings", .singular = "resourcebinding", .namespaced = NS, .has_status = true,
      .short_names = {"rb"}, .categories = {"karmada-io"}, .fields = binding_fields, .columns = binding_columns,
      .validate = fl_validate_resource_binding },
    { .group = "work.karmada.io", .version = "v1alpha2", .kind = "ClusterResourceBinding",
      .list_kind = "ClusterResourceBindingList", .resource = "clusterresourcebindings",
      .singular = "clusterresourcebinding", .namespaced = CLUSTER, .has_status = true, .short_names = {"crb"},
      .categories = {"karmada-io"}, .fields = binding_fields, .columns = binding_columns,
      .validate = fl_validate_resource_binding },
    /* config.karmada.io/v1alpha1 */
    { .group = "config.karmada.io", .version = "v1alpha1", .kind = "ResourceInterpreterCustomization",
      .list_kind = "ResourceInterpreterCustomizationList", .resource = "resourceinterpretercustomizations",
      .singular = "resourceinterpretercustomization", .namespaced = CLUSTER, .short_names = {"ric"},
      .categories = {"karmada-io"}, .fields = ric_fields, .columns = ric_columns,
      .validate = fl_validate_interpreter_customization },
    { .group = "config.karmada.io", .version = "v1alpha1", .kind = "ResourceInterpreterWebhookConfiguration",
      .list_kind = "ResourceInterpreterWebhookConfigurationList",
      .resource = "resourceinterpreterwebhookconfigurations",
      .singular = "resourceinterpreterwebhookconfiguration", .namespaced = CLUSTER, .categories = {"karmada-io"},
      .fields = riwc_fields, .columns = no_columns },
};

const size_t fl_kinds__builtin_count = sizeof(fl_kinds__builtin) / sizeof(fl_kinds__builtin[0]);
