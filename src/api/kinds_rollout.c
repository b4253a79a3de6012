/* kinds_rollout.c - the schema of apps.flotilla.io/v1alpha1 RolloutStrategy, ours (issue 42,
 * docs/rollouts.md): which policy's templates roll out in stages, the stages in order, and
 * what a failure does. Written by hand in the shape of the generated tables (kinds_schema.c):
 * one row per path segment, complete, so an unknown field is refused and `kubectl explain`
 * and server-side apply see every field. The status is ours to write (the rollout controller,
 * src/controllers/rollout.c) and free-form here beyond its top level.
 *
 * The rules that need more than types (a stage selects by labels or by percent, not both;
 * percents add up; names unique) are in validate_rollout.c. */
#include "api/kinds_rollout.h"

#include "api/kinds_schema.h"

static const fl_field selector_requirement[] = {
    { .path = "key", .type = FL_F_STRING, .required = true },
    { .path = "operator", .type = FL_F_STRING, .required = true },
    { .path = "values", .type = FL_F_ARRAY, .elem = FL_F_STRING },
    { .path = NULL },
};

static const fl_field label_selector[] = {
    { .path = "matchExpressions", .type = FL_F_ARRAY, .elem = FL_F_OBJECT, .sub = selector_requirement },
    { .path = "matchLabels", .type = FL_F_MAPSTR },
    { .path = NULL },
};

static const fl_field policy_ref[] = {
    { .path = "kind", .type = FL_F_STRING, .required = true },
    { .path = "name", .type = FL_F_STRING, .required = true },
    { .path = NULL },
};

static const fl_field stage[] = {
    { .path = "approval", .type = FL_F_BOOL },
    { .path = "clusterSelector", .type = FL_F_OBJECT, .sub = label_selector },
    { .path = "maxConcurrency", .type = FL_F_INT },
    { .path = "name", .type = FL_F_STRING, .required = true },
    { .path = "percent", .type = FL_F_INT },
    { .path = "soakSeconds", .type = FL_F_INT },
    { .path = NULL },
};

static const fl_field spec[] = {
    { .path = "maxFailures", .type = FL_F_INT },
    { .path = "onFailure", .type = FL_F_STRING },
    { .path = "paused", .type = FL_F_BOOL },
    { .path = "policyRef", .type = FL_F_OBJECT, .sub = policy_ref, .required = true },
    { .path = "progressDeadlineSeconds", .type = FL_F_INT },
    { .path = "stages", .type = FL_F_ARRAY, .elem = FL_F_OBJECT, .sub = stage, .required = true },
    { .path = NULL },
};

/* The controller's: one entry per template the policy selects (rollouts[]), the top level
 * repeating the latest's phase and stage for the Table and scripts. */
static const fl_field status[] = {
    { .path = "conditions", .type = FL_F_ARRAY, .elem = FL_F_OBJECT },
    { .path = "currentStage", .type = FL_F_STRING },
    { .path = "message", .type = FL_F_STRING },
    { .path = "observedGeneration", .type = FL_F_INT },
    { .path = "phase", .type = FL_F_STRING },
    { .path = "rollouts", .type = FL_F_ARRAY, .elem = FL_F_OBJECT },
    { .path = "waitingFor", .type = FL_F_STRING },
    { .path = NULL },
};

const fl_field fl_schema_rollout_strategy[] = {
    { .path = "apiVersion", .type = FL_F_STRING },
    { .path = "kind", .type = FL_F_STRING },
    { .path = "metadata", .type = FL_F_OBJECT, .sub = fl_schema_meta_v1_ObjectMeta },
    { .path = "spec", .type = FL_F_OBJECT, .sub = spec, .required = true },
    { .path = "status", .type = FL_F_OBJECT, .sub = status },
    { .path = NULL },
};

/* after NAME; the renderer appends AGE */
const fl_column fl_columns_rollout_strategy[] = {
    { .name = "Policy", .type = "string", .format = "", .description = "The policy whose templates roll out.",
      .jsonpath = ".spec.policyRef.name" },
    { .name = "Stage", .type = "string", .format = "", .description = "The stage the latest rollout is in.",
      .jsonpath = ".status.currentStage" },
    { .name = "Phase", .type = "string", .format = "",
      .description = "Progressing, Soaking, WaitingForApproval, Paused, Halted, RolledBack, Aborted or Completed.",
      .jsonpath = ".status.phase" },
    { .name = NULL },
};
