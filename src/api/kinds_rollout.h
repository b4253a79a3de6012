/* kinds_rollout.h - the schema and Table columns of apps.flotilla.io/v1alpha1
 * RolloutStrategy (kinds_rollout.c), for its row in the kinds table (kinds_builtin_ext.c).
 * Static data: any thread. */
#ifndef FL_KINDS_ROLLOUT_H
#define FL_KINDS_ROLLOUT_H

#include "api/kinds.h"

extern const fl_field fl_schema_rollout_strategy[];
extern const fl_column fl_columns_rollout_strategy[];

#endif
