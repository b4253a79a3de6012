/* summary.h - a binding's live state across its target clusters, in bounded space: the
 * binding's status.summary (ours) and the cap on Karmada's status.aggregatedStatus.
 *
 * Each target cluster gets one state in the kstatus vocabulary (Current, InProgress, Failed,
 * Terminating, NotFound, Unknown) from its Work: no Work yet, or not applied yet, is InProgress;
 * an apply that failed is Failed; an applied Work's state is the worst liveStatus of its
 * manifests (the execution engine's, workstatus.h); a cluster that is not Ready is Unknown (it
 * stopped reporting: what its Work says may be stale). The summary counts the states, names at
 * most FL_SUMMARY_NOT_CURRENT_MAX clusters that are not Current (worst first), and says when
 * that last changed; none of it grows with the fleet. Design: docs/internals/status.md.
 *
 * Pure functions over JSON; no I/O, no locks. */
#ifndef FL_SUMMARY_H
#define FL_SUMMARY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controllers/cluster.h"

#define FL_SUMMARY_NOT_CURRENT_MAX 20
#define FL_SUMMARY_ITEMS_MAX 100
/* and no more than this many bytes of them, so that a binding stays well under 64 KiB
 * (a Deployment's item, with its conditions, is about 650 bytes) */
#define FL_SUMMARY_ITEMS_BYTES (40 * 1024)
#define FL_SUMMARY_MESSAGE_MAX 256

/* The states, best first; fl_summary_state_worse orders them for a roll-up. */
extern const char *const fl_summary_states[]; /* NULL-terminated */

/* Whether state a is worse than b for a roll-up: Failed, NotFound, Unknown, Terminating,
 * InProgress, Current (an unknown name is as bad as Unknown). */
bool fl_summary_state_worse(const char *a, const char *b);

/* The state of one target cluster from its Work (NULL: none yet) and how the cluster reports;
 * *reason and *message (borrowed from work or static; "" when none). */
const char *fl_summary_cluster_state(const json_t *work, enum fl_cluster_report report, const char **reason,
                                     const char **message);

/* The same for a Work's status (borrowed) whatever its cluster's readiness: what the execution
 * engine writes as the Work's status.liveState (ours), which lists of Works select on. */
const char *fl_summary_work_state(const json_t *status, bool deleting, const char **reason, const char **message);

typedef struct fl_summary fl_summary;

fl_summary *fl_summary_new(void);
void fl_summary_free(fl_summary *s);
/* Count target cluster (a Work applied or not, as applied says) in state. */
void fl_summary_add(fl_summary *s, const char *cluster, bool applied, const char *state, const char *reason,
                    const char *message);
/* The state of the cluster counted under that name, or NULL. */
const char *fl_summary_state_of(const fl_summary *s, const char *cluster);
/* status.summary: {state, desired, applied, current, inProgress, failed, terminating, notFound,
 * unknown, notCurrent: [{cluster, state, reason, message}] (worst first, then by name, at most
 * FL_SUMMARY_NOT_CURRENT_MAX), truncated, lastChangeTime}. prev is the summary the binding has
 * (NULL: none): its lastChangeTime stays unless something else changed, so that an unchanged
 * fleet writes nothing. New reference. */
json_t *fl_summary_json(const fl_summary *s, const json_t *prev, int64_t now_ms);
/* Karmada's aggregatedStatus items, bounded: items as they are when there are at most
 * FL_SUMMARY_ITEMS_MAX of at most FL_SUMMARY_ITEMS_BYTES, else the worst (not Current first,
 * by state, then by cluster name) in that order, as many as fit both bounds (the worst one
 * always). New reference; items (borrowed) are not changed. */
json_t *fl_summary_bound_items(const fl_summary *s, const json_t *items);

#endif
