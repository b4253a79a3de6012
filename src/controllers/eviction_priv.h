/* eviction_priv.h - what eviction.c and eviction_tasks.c share from eviction_app.c:
 * application failover's clocks, state preservation and the failover history. Pure
 * functions over borrowed objects unless said; any worker thread. */
#ifndef FL_EVICTION_PRIV_H
#define FL_EVICTION_PRIV_H

#include <jansson.h>
#include <stdint.h>

#include "client/client.h"
#include "controllers/events.h"

#define FL_EVICTION_DEFAULT_APP_TOLERATION_S 300 /* Karmada's CRD default */

/* spec.failover.application of a binding's spec (borrowed), or NULL. */
const json_t *fl_evict_app_policy(const json_t *spec);
/* Its decisionConditions.tolerationSeconds in ms (default 300 s). */
int64_t fl_evict_app_toleration_ms(const json_t *app);
/* The status.aggregatedStatus item of cluster (borrowed), or NULL; binding read whole. */
const json_t *fl_evict_status_item(const json_t *binding, const char *cluster);
/* The binding's status.failoverClocks as they should be at now, from its aggregated health
 * (a new array; the caller compares it with the stored one). */
json_t *fl_evict_app_clocks(const json_t *binding, int64_t now);
/* When application failover evicts the binding from cluster (ms since the epoch), from the
 * stored clocks; INT64_MAX when not (no clock, or paused). */
int64_t fl_evict_app_deadline(const json_t *binding, const char *cluster);

/* The preservedLabelState of a new task for cluster: what the binding's tasks preserved
 * already, with behavior's (spec.failover.cluster or .application) statePreservation rules
 * evaluated against the status last reflected from cluster. A rule without a value, or
 * with one that is not a label value, is left out with a Warning on the binding. New object. */
json_t *fl_evict_preserve(const json_t *binding, const json_t *behavior, const char *cluster, fl_recorder *rec);
/* clustersBeforeFailover of a new task: those of the binding's tasks, then spec.clusters
 * (new array). */
json_t *fl_evict_clusters_before(const json_t *spec);

/* The binding's eviction tasks of the evictor's (producer TaintManager or
 * ApplicationFailover) that no status.failoverHistory entry stands for yet (a new array), or
 * NULL for none (also when history is off, or as many entries are open as are kept). */
json_t *fl_evict_history_unstarted(const json_t *binding);
/* Append a failover history entry for each of tasks (the ones just written), trimmed to
 * fl_eviction_history_limit, and drop the clocks of their clusters; read from the server and
 * written to its status, again on conflicts. 0 or a negative FL_E* code. */
int fl_evict_history_start(fl_client *cp, const fl_gvr *gvr, const char *ns, const char *name, const json_t *tasks);
/* Complete the open entries named by done ([{fromCluster, startTime, outcome, task?}]) with
 * the binding's spec.clusters as clustersAfterFailover; a task of the evictor's (producer
 * TaintManager or ApplicationFailover) whose entry is not there yet gets one, complete. */
int fl_evict_history_complete(fl_client *cp, const fl_gvr *gvr, const char *ns, const char *name, const json_t *done);

#endif
