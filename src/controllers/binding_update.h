/* binding_update.h - how the binding controller turns the Work it has into the Work it
 * wants: what of the existing Work it keeps (a user's own suspension, a generation that only
 * a status write moved) and the merge patch of what it owns (binding.c writes it). */
#ifndef FL_CONTROLLERS_BINDING_UPDATE_H
#define FL_CONTROLLERS_BINDING_UPDATE_H

#include <jansson.h>

/* ours: the suspension the binding asked for this Work when we last wrote it */
#define WORK_SUSPENSION_ANNOTATION "flotilla.io/binding-suspension"

/* upd (want with have's other parts) keeps have's suspendDispatching while the binding's
 * suspension of the cluster is what we last wrote. */
void fl_binding_keep_users_suspension(const json_t *have, const json_t *want, json_t *upd);

/* upd keeps have's spec when their manifests differ only in the template generation. */
void fl_binding_keep_generation_if_same(const json_t *have, json_t *upd);

/* The merge patch of our spec, labels and annotations from have to upd ({} when none). New. */
json_t *fl_binding_owned_patch(const json_t *have, const json_t *upd);

#endif
