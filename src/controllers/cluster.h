/* cluster.h - the cluster status controller: health, taints and status of every Cluster.
 *
 * Push clusters are probed by the control plane (/readyz, /version, discovery, Nodes and
 * Pods); Pull clusters are judged by their agent's Lease karmada-cluster/<name>. The Ready
 * condition, the not-ready/unreachable NoSchedule taints and the collected status are
 * written back to the Cluster only when they really change. docs/internals/cluster-status.md
 * explains the schedule, the thresholds and what is stored where.
 *
 * Settings come from the environment (read once at start):
 *   FLOTILLA_CLUSTER_STATUS_INTERVAL_MS     how often each cluster is probed (1000)
 *   FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS   failing this long before Ready turns False,
 *                                           and the age of a Pull cluster's lease that
 *                                           makes it Unknown (30000)
 *   FLOTILLA_CLUSTER_SUCCESS_THRESHOLD_MS   healthy this long before Ready turns True again (0)
 *   FLOTILLA_CLUSTER_PROBE_TIMEOUT_MS       a health check slower than this counts as a failure (5000) */
#ifndef FL_CLUSTER_H
#define FL_CLUSTER_H

#include "controllers/controller.h"

/* The annotation holding when a Ready cluster started failing its probes (RFC 3339 with
 * milliseconds, UTC). Ours: it keeps the failure threshold's clock in the store, so a
 * controller restart does not reset it. */
#define FL_ANNOTATION_UNHEALTHY_SINCE "flotilla.io/unhealthy-since"
/* The same for a not-Ready cluster passing its probes, while the success threshold runs. */
#define FL_ANNOTATION_HEALTHY_SINCE "flotilla.io/healthy-since"

/* Taint keys, as Karmada's cluster controller names them. */
#define FL_TAINT_CLUSTER_NOT_READY "cluster.karmada.io/not-ready"
#define FL_TAINT_CLUSTER_UNREACHABLE "cluster.karmada.io/unreachable"

extern const fl_controller fl_cluster_status_controller;

#endif
