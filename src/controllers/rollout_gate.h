/* rollout_gate.h - which clusters a staged rollout holds back: the one rule the binding
 * controller (which writes Works) and the rollout controller (which releases clusters) read
 * the same way (docs/rollouts.md, "How clusters are held").
 *
 * A RolloutStrategy governs the templates of the policy it names (spec.policyRef). Its status
 * records, per template (status.rollouts[], by the template's uid), the template generation
 * that is rolling out and, per cluster, whether that generation was released to it. A Work of
 * a governed template that would carry generation G to a cluster is written suspended
 * (spec.suspendDispatching, the existing per-cluster suspension: the member keeps what it
 * has) unless
 *   - the strategy's rollout of that template is at G and released the cluster (or all:
 *     Completed, or a rollback's restore), or
 *   - no rollout is recorded at G and the cluster's Work already delivers G unsuspended
 *     (a strategy created over templates that were delivered before it).
 * The decision is made in the same write that puts G into the Work: the new content never
 * reaches a cluster not yet released, not even for one push.
 *
 * Owned by the binding controller, which creates it in its start(). Any thread. */
#ifndef FL_ROLLOUT_GATE_H
#define FL_ROLLOUT_GATE_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/controller.h"

#define FL_ROLLOUT_GVR_API_VERSION "apps.flotilla.io/v1alpha1"
#define FL_ROLLOUT_GVR_RESOURCE "rolloutstrategies"

/* A cluster's state in a rollout (status.rollouts[].clusters[].state). */
#define FL_ROLLOUT_HELD "Held"
#define FL_ROLLOUT_RELEASED "Released"
#define FL_ROLLOUT_CURRENT "Current"
#define FL_ROLLOUT_FAILED "Failed"

typedef struct fl_rollout_gate fl_rollout_gate;

/* A gate over the shared RolloutStrategy informer (fl_ctrl_informer): from a controller's
 * start(). A change of a strategy queues, in q, the bindings (of rbs and crbs) of the policy
 * it names (fl_ctrl_queue_binding). Never NULL. */
fl_rollout_gate *fl_rollout_gate_new(const fl_ctrl_env *env, fl_informer *rbs, fl_informer *crbs, fl_workqueue *q);
/* After the informers stopped (the controller's stop()). NULL-safe. */
void fl_rollout_gate_free(fl_rollout_gate *g);
/* The strategies informer, for the workers' synced list: a binding rendered before the
 * strategies are known could release what a rollout holds. Borrowed. */
fl_informer *fl_rollout_gate_informer(fl_rollout_gate *g);

/* Whether the strategy governing binding holds tmpl's current generation back from cluster,
 * whose Work is wname in its execution space, as works (the Work informer) has it. */
bool fl_rollout_gate_hold(fl_rollout_gate *g, const json_t *binding, const json_t *tmpl, const char *cluster,
                          fl_informer *works, const char *wname);
/* The strategy that governs binding (by its policy annotations; the first by namespace/name
 * when several name one policy), a new reference, or NULL. */
json_t *fl_rollout_gate_strategy(fl_rollout_gate *g, const json_t *binding);
/* Whether strategy holds tmpl's current generation back from cluster, whose Work (NULL: none
 * yet) is as the informer has it. Pure. */
bool fl_rollout_gate_holds(const json_t *strategy, const json_t *tmpl, const char *cluster, const json_t *work);

/* The strategy's rollout entry of the template with uid (borrowed from strategy), or NULL. */
json_t *fl_rollout_entry(const json_t *strategy, const char *uid);
/* Whether the strategy (spec.policyRef) names the policy binding (or template) was claimed by,
 * from its annotations. */
bool fl_rollout_names_policy(const json_t *strategy, const json_t *claimed);
/* Of strategies (an array), the one governing what claimed's policy propagates: the first by
 * namespace, then name, of those naming that policy (borrowed), or NULL. */
json_t *fl_rollout_governing(const json_t *strategies, const json_t *claimed);

#endif
