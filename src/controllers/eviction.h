/* eviction.h - the server's settings for taint-based eviction (eviction.c) and the graceful
 * eviction tasks' lifecycle (eviction_tasks.c), and the helpers the two share with the
 * binding controller. docs/failover.md for users, docs/internals/failover.md for how.
 *
 * The settings are process-wide: `flotilla server` sets them from its flags before the
 * controllers start (fl_eviction_configure), and the controllers read them afterwards. */
#ifndef FL_EVICTION_H
#define FL_EVICTION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define FL_EVICTION_DEFAULT_RATE 0.5        /* evictions per second (Karmada's --resource-eviction-rate) */
#define FL_EVICTION_DEFAULT_GRACE_S 600     /* Karmada's --graceful-eviction-timeout, 10m */
#define FL_EVICTION_DEFAULT_HISTORY 5       /* status.failoverHistory entries kept */

/* Set the eviction rate (per second; <= 0: unlimited) and the grace period of a Gracefully
 * task without gracePeriodSeconds (seconds, > 0). Call before the controllers start. */
void fl_eviction_configure(double rate, int64_t grace_seconds);
double fl_eviction_rate(void);
int64_t fl_eviction_grace_seconds(void);

/* How many status.failoverHistory entries a binding keeps (< 0: the default). Call before
 * the controllers start. */
void fl_eviction_set_history_limit(int limit);
int fl_eviction_history_limit(void);

/* The labels the graceful eviction tasks of spec (a binding's) preserved for a copy in
 * cluster: every task's preservedLabelState, in order, but a task's whose fromCluster or
 * clustersBeforeFailover names cluster. A new object (empty: none). */
json_t *fl_eviction_preserved_labels(const json_t *spec, const char *cluster);

/* A task's purge mode, the deprecated spellings folded in: 'D' (Directly, Immediately),
 * 'N' (Never), 'G' (Gracefully, Graciously, and an absent or unknown one). */
char fl_eviction_purge_mode(const json_t *task);

/* The graceful eviction task of spec (a binding's) whose fromCluster is cluster; borrowed,
 * or NULL. */
const json_t *fl_eviction_task_of(const json_t *spec, const char *cluster);

#endif
