/* metricsstatus.h - the metrics way in of live status (metricsstatus.c): for Push clusters
 * marked `flotilla.io/status-source: metrics`, the live state of the Deployments,
 * StatefulSets, DaemonSets, Jobs and Pods delivered there is read from a Prometheus-compatible
 * query API holding kube-state-metrics series with a `cluster` label, instead of from member
 * watches. Design: docs/internals/status.md, "The metrics way in".
 *
 * Process-wide, as the server has one Prometheus: `flotilla server` sets the URL and the
 * interval before the controllers start (fl_mstatus_configure); the cluster status controller
 * runs the poller on its own workers under the queue key FL_MSTATUS_KEY (no thread of its own:
 * the server's thread budget is fixed); the execution engine asks fl_mstatus_owns and
 * fl_mstatus_live for the clusters it delivers to. Every function here is thread-safe. */
#ifndef FL_METRICSSTATUS_H
#define FL_METRICSSTATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "controllers/controller.h"

/* The value of FL_STATUS_SOURCE_ANNOTATION (core/wellknown.h) that selects this way. */
#define FL_STATUS_SOURCE_METRICS "metrics"
/* The poller's key on the cluster status controller's queue (no Cluster name starts so). */
#define FL_MSTATUS_KEY "@metrics-status"
#define FL_MSTATUS_INTERVAL_MS 5000 /* default poll interval */
#define FL_MSTATUS_TIMEOUT_MS 3000  /* default bound of one query */

/* The Prometheus base URL ("http://127.0.0.1:9090", without /api/v1/query; NULL or "": none,
 * and metrics clusters turn Unknown, PrometheusNotConfigured), the poll interval and one
 * query's time-out (0: the defaults above). Before the controllers start. */
void fl_mstatus_configure(const char *url, int64_t interval_ms, int64_t timeout_ms);
/* Whether the metrics way answers for cluster now: a Push Cluster annotated metrics, once the
 * poller has started (the Cluster cache it reads). */
bool fl_mstatus_owns(const char *cluster);
/* The liveStatus {state, reason, message} the metrics way has for a member object (a new
 * reference), or NULL when its kind is not one the series describe (then the engine judges it
 * from what the apply read). A cluster not polled yet: Unknown, NotReportedYet. */
json_t *fl_mstatus_live(const char *cluster, const char *api_version, const char *kind, const char *ns,
                        const char *name);

/* Count one live-state record made by a way in ("watch", "agent", "metrics"):
 * flotilla_status_records_total{way}. */
void fl_mstatus_count_record(const char *way);

typedef struct fl_mstatus fl_mstatus;

/* From the cluster status controller's start(): the poller, reading Clusters and Works through
 * the manager's shared informers and writing Work status through env->cp. Never NULL. */
fl_mstatus *fl_mstatus_new(const fl_ctrl_env *env);
/* One poll: one query per kind (and one for the clusters' heartbeats) for every metrics
 * cluster at once, each bounded by the time-out and ended at once when cancel fires; the
 * records kept; changed liveStatus written into the Works. Returns the ms until the next. */
int64_t fl_mstatus_poll(fl_mstatus *m, fl_client_cancel *cancel);
/* After the last poll returned. NULL-safe. */
void fl_mstatus_free(fl_mstatus *m);

#endif
