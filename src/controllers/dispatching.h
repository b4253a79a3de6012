/* dispatching.h - suspension of delivery and its acknowledgement: the rules every party
 * reads the same way (the binding controller writing Works, the executors acknowledging,
 * the binding status controller rolling up, `flotilla ctl suspend --wait`).
 *
 * The pause contract (docs/suspension.md): a Work's executor (the execution controller for
 * a Push cluster, the agent for a Pull one) writes the Work's Dispatching condition only
 * after every apply it had started for that Work has finished, with observedGeneration =
 * the Work's generation it acted on:
 *   False / SuspendDispatching  spec.suspendDispatching is set: nothing reaches the member;
 *   False / ClusterPaused       the Cluster's spec.suspendDispatching is set: likewise;
 *   True  / Dispatching         delivery runs (and this generation has been applied once).
 * A condition whose observedGeneration is not the Work's generation acknowledges nothing:
 * the executor has not seen the newest spec yet, and may still be applying the old one.
 *
 * Pure functions over caller-owned JSON: any thread. */
#ifndef FL_DISPATCHING_H
#define FL_DISPATCHING_H

#include <jansson.h>
#include <stdbool.h>

#define FL_DISPATCHING_CONDITION "Dispatching"
#define FL_DISPATCHING_REASON "Dispatching"
#define FL_DISPATCHING_REASON_SUSPENDED "SuspendDispatching"
#define FL_DISPATCHING_REASON_CLUSTER_PAUSED "ClusterPaused"
#define FL_DISPATCHING_REASON_PENDING "Acknowledging"
#define FL_PAUSED_CONDITION "Paused"

/* The Work's Dispatching condition's messages, which its WorkDispatching events repeat. */
#define FL_DISPATCHING_MSG_RUNNING "Work is being dispatched to the member cluster."
#define FL_DISPATCHING_MSG_SUSPENDED "Work dispatching is suspended: nothing is being applied to the cluster."
#define FL_DISPATCHING_MSG_CLUSTER_PAUSED "The Work's cluster is paused: nothing is being applied to it."

/* Whether a suspension object (a policy's or binding's spec.suspension: {dispatching,
 * dispatchingOnClusters{clusterNames}}) suspends delivery to cluster. NULL: no. */
bool fl_dispatch_suspended(const json_t *suspension, const char *cluster);

/* Whether suspension suspends anything at all (dispatching, or a non-empty cluster list). */
bool fl_dispatch_any(const json_t *suspension);

/* What a Work's executor has acknowledged for the Work's current generation. */
enum fl_dispatch_ack {
    FL_DISPATCH_PENDING = 0,  /* not acknowledged: no condition, or an older generation */
    FL_DISPATCH_RUNNING,      /* True/Dispatching */
    FL_DISPATCH_STOPPED,      /* False: suspended or the cluster paused */
};
enum fl_dispatch_ack fl_dispatch_work_ack(const json_t *work);

/* Whether the Work's executor has acknowledged the state want_suspended asks for: the
 * Work's spec says so (spec.suspendDispatching == want_suspended) and the acknowledgement of
 * that generation matches (a Work of a paused cluster counts as stopped). */
bool fl_dispatch_work_acked(const json_t *work, bool want_suspended);

/* The WorkDispatching event the control plane records on a Work when its executor's
 * acknowledgement changes from old_work to new_work (the Dispatching condition's reason
 * differs, or it first appears stopped): the event's message, or NULL when there is none
 * to record. Recording it from the observed change, not in the executor, costs an agent no
 * request of its own. */
const char *fl_dispatch_event_message(const json_t *old_work, const json_t *new_work);

/* The roll-up over a binding's target clusters. */
typedef struct fl_dispatch_rollup {
    int targets;       /* target clusters */
    int acked;         /* of which the Work acknowledged what the binding asks */
    int suspended;     /* of which the binding asks for suspension */
    json_t *pending;   /* names of clusters not acknowledged yet (array, owned) */
} fl_dispatch_rollup;

/* Compute the roll-up of binding (its spec.clusters and spec.suspension) over works, an
 * object mapping cluster name -> that cluster's Work of the binding (a missing entry: not
 * acknowledged). Release r with fl_dispatch_rollup_close. */
void fl_dispatch_rollup_of(const json_t *binding, const json_t *works, fl_dispatch_rollup *r);
void fl_dispatch_rollup_close(fl_dispatch_rollup *r);

/* Whether a binding carries a roll-up (the binding status controller writes one): it is
 * suspended, or it was (it has a Dispatching condition). */
bool fl_dispatch_has_rollup(const json_t *binding);

/* Whether the binding's roll-up says, for the binding's current generation, that every
 * target cluster acknowledged what the binding asks. */
bool fl_dispatch_rollup_acked(const json_t *binding);

/* The binding-level Dispatching condition of a roll-up: *status "True"/"False"/"Unknown",
 * *reason, and *message (heap) saying how many clusters acknowledged and which not yet. */
void fl_dispatch_rollup_condition(const fl_dispatch_rollup *r, const char **status, const char **reason,
                                  char **message);

#endif
