/* condition.h - metav1.Condition lists in a status object: find one, set one.
 *
 * Every controller reports its outcome as conditions (Applied and Dispatching on a Work,
 * Scheduled and FullyApplied on a binding, Ready and Paused on a Cluster). Kubernetes'
 * rules for them are the same everywhere, so they live here once: one entry per type;
 * lastTransitionTime moves only when the status flips; observedGeneration says which
 * generation of the object the writer acted on, and a tool waiting on a condition must
 * compare it with metadata.generation.
 *
 * Pure functions over caller-owned JSON: any thread. */
#ifndef FL_CONDITION_H
#define FL_CONDITION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The entry of conds (an array; anything else: none) whose type is `type`; borrowed, or NULL. */
json_t *fl_condition_find(const json_t *conds, const char *type);

/* The condition `type` of an object (in its status.conditions); borrowed, or NULL. */
json_t *fl_condition_of(const json_t *obj, const char *type);

/* Set condition `type` in status.conditions (created when absent) to status/reason/message,
 * with observedGeneration when generation >= 0 (else the field is removed). The entry keeps
 * its place and its lastTransitionTime unless the status flips (a new entry gets now_ms).
 * Returns whether anything in status changed. */
bool fl_condition_set(json_t *status, const char *type, const char *cstatus, const char *reason,
                      const char *message, int64_t generation, int64_t now_ms);

#endif
