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

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "controllers/controller.h"
#include "core/wellknown.h"

/* The annotation holding when a Ready cluster started failing its probes (RFC 3339 with
 * milliseconds, UTC). Ours: it keeps the failure threshold's clock in the store, so a
 * controller restart does not reset it. */
#define FL_ANNOTATION_UNHEALTHY_SINCE "flotilla.io/unhealthy-since"
/* The same for a not-Ready cluster passing its probes, while the success threshold runs. */
#define FL_ANNOTATION_HEALTHY_SINCE "flotilla.io/healthy-since"
/* Set beside FL_ANNOTATION_UNHEALTHY_SINCE from the second failing probe in a row (about twice
 * the probe interval after the cluster last answered) while the cluster is still Ready (its
 * failure threshold not passed yet), cleared with it: what the cluster last reported is then
 * stale, and the live state of its objects is Unknown (fl_cluster_report: FL_CLUSTER_NOT_REPORTING). */
#define FL_ANNOTATION_NOT_REPORTING_SINCE "flotilla.io/not-reporting-since"

/* How a cluster's reports stand: Ready and answering; not Ready (or no such Cluster: NULL);
 * or still Ready but not reporting (FL_ANNOTATION_NOT_REPORTING_SINCE). The last two make
 * the live state of its objects Unknown (summary.h). */
enum fl_cluster_report { FL_CLUSTER_REPORTING, FL_CLUSTER_NOT_READY, FL_CLUSTER_NOT_REPORTING };
enum fl_cluster_report fl_cluster_report(const json_t *cluster);

extern const fl_controller fl_cluster_status_controller;

/* ---- probing one member: shared by this controller (Push) and the pull agent ----
 * Blocking requests on the caller's thread; cancel (may be NULL) ends them at once
 * (the controller fires it at a deadline). Any thread. */

/* A member's health from /readyz (/healthz where /readyz is not served). */
enum { FL_CLUSTER_HEALTHY = 0, FL_CLUSTER_UNHEALTHY, FL_CLUSTER_UNREACHABLE };
/* Returns FL_CLUSTER_HEALTHY (2xx), FL_CLUSTER_UNHEALTHY (another HTTP status) or
 * FL_CLUSTER_UNREACHABLE (no answer); why gets what failed otherwise. */
int fl_cluster_probe_health(fl_client *c, fl_client_cancel *cancel, char *why, size_t cap);

/* What a healthy member reports about itself; each part NULL when it failed. */
typedef struct fl_cluster_collected {
    char *version;           /* /version gitVersion */
    json_t *apis;            /* apiEnablements (only when asked for) */
    const char *apis_reason; /* Complete, Partial or Empty (static) */
    json_t *node_summary;    /* {totalNum, readyNum} */
    json_t *resource_summary;/* {allocatable, allocating, allocated} */
} fl_cluster_collected;

/* Read /version, the Nodes and Pods, and (when apis) discovery into *out (zeroed first;
 * release with fl_cluster_collected_close). */
void fl_cluster_collect(fl_client *c, fl_client_cancel *cancel, bool apis, fl_cluster_collected *out);
void fl_cluster_collected_close(fl_cluster_collected *c);

/* Put what was collected into a Cluster's status object: kubernetesVersion,
 * apiEnablements with the CompleteAPIEnablements condition, nodeSummary,
 * resourceSummary. Parts that failed keep their previous value. now: ms since the epoch. */
void fl_cluster_set_collected(json_t *status, const fl_cluster_collected *c, int64_t now);
/* Set the Ready condition from a health (FL_CLUSTER_*) with Karmada's reasons
 * (ClusterReady, ClusterNotReady, ClusterNotReachable). */
void fl_cluster_set_ready(json_t *status, int health, const char *why, int64_t now);
/* Set condition `type` in status.conditions as meta.SetStatusCondition does:
 * lastTransitionTime moves only when the status flips; reason and message in place. */
void fl_cluster_set_condition(json_t *status, const char *type, const char *cstatus, const char *reason,
                              const char *message, int64_t now);

#endif
