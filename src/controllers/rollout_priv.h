/* rollout_priv.h - the parts of the staged-rollout controller (docs/rollouts.md) that its
 * files share: the stage logic over one template (rollout_stage.c, pure: what the stores say
 * in, the next status entry out), and the rollback's restore of the previous revision
 * (rollout_restore.c). Not for other controllers: they read rollout_gate.h. */
#ifndef FL_ROLLOUT_PRIV_H
#define FL_ROLLOUT_PRIV_H

#include <jansson.h>
#include <stdint.h>

#include "client/client.h"

/* A rollout entry's phase (status.rollouts[].phase, and the strategy's status.phase). */
#define FL_RO_PROGRESSING "Progressing"
#define FL_RO_SOAKING "Soaking"
#define FL_RO_APPROVAL "WaitingForApproval"
#define FL_RO_PAUSED "Paused"
#define FL_RO_HALTED "Halted"
#define FL_RO_ROLLING_BACK "RollingBack"
#define FL_RO_ROLLED_BACK "RolledBack"
#define FL_RO_ABORTED "Aborted"
#define FL_RO_COMPLETED "Completed"

/* ctl's requests, as annotations on the strategy, per template uid (the value: the template
 * generation, and for an approval "/<stage name>"): what `flotilla ctl rollout approve|abort`
 * writes. */
#define FL_RO_APPROVE_PREFIX "approve.rollouts.flotilla.io/"
#define FL_RO_ABORT_PREFIX "abort.rollouts.flotilla.io/"

/* What one pass over one template reads (all borrowed). */
typedef struct fl_rollout_in {
    const json_t *strategy;  /* the RolloutStrategy */
    const json_t *tmpl;      /* the template (its uid and generation) */
    const json_t *targets;   /* the binding's target cluster names, sorted (array of strings) */
    const json_t *works;     /* cluster name -> that cluster's Work of the template */
    const json_t *clusters;  /* cluster name -> Cluster (for the stages' selectors) */
    int64_t now_ms;
} fl_rollout_in;

/* The next entry of the template's rollout from old (the entry in the status now, NULL for
 * none): a new reference. What happened is appended to events as {type, reason, message};
 * *due_ms becomes the earliest time (ms since the epoch) a pass should look again even if
 * nothing changes (a soak ending, a progress deadline), left as it is when there is none. */
json_t *fl_rollout_advance(const fl_rollout_in *in, const json_t *old, json_t *events, int64_t *due_ms);

/* Restore onto the template (tmpl, as cached) the newest ControllerRevision of it (label
 * rollouts.flotilla.io/template-uid) whose data differs from what it is now, through a normal
 * update with the live resourceVersion (wellknown.h, FL_REVISION_*). 0 and *revision set
 * (0 when the live template has moved past tmpl's generation: restored already, or changed
 * since; nothing written); FL_ENOTFOUND when there is no such revision (*why says so); another FL_E* on a failed
 * request (*why, heap, says which). *why heap or NULL on every path. */
int fl_rollout_restore(fl_client *cp, const json_t *tmpl, int64_t *revision, char **why);

#endif
