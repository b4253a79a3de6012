/* migration.h - how the migration marks (core/wellknown.h: adoption permission, promote's
 * mark, release) travel from a policy to its bindings and from a binding to its Works, where
 * the executor reads them (execution_migrate.c; docs/migration.md). */
#ifndef FL_CONTROLLERS_MIGRATION_H
#define FL_CONTROLLERS_MIGRATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The detector: the policy's marks (policy_annotations, may be NULL) onto a binding's
 * annotations (changed in place). The adoption permission and promote's mark follow the
 * policy (set, or removed); a release is added and stays, so a binding released by hand
 * (`flotilla ctl release`) is not taken back by the next copy. Any thread. */
void fl_migration_binding_marks(json_t *annotations, const json_t *policy_annotations);

/* The binding controller: the marks a Work of binding carries (into work_annotations): the
 * binding's release and adoption permission, and promote's mark from the binding or from the
 * template's metadata tmd (a dependency promoted along has no policy of its own). Any thread. */
void fl_migration_work_marks(const json_t *binding, const json_t *tmd, json_t *work_annotations);

/* Do objects a and b (two versions of a binding) carry the same marks? Any thread. */
bool fl_migration_marks_same(const json_t *a, const json_t *b);

/* A digest of the marks obj (a binding) carries, for a render's inputs. Any thread. */
uint64_t fl_migration_marks_digest(const json_t *obj);

#endif
