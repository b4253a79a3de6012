/* retain.h - the native Retain rules: which fields of a member object survive an update.
 *
 * When the execution controller (or the pull agent) updates an object it delivered, the
 * body it PUTs is the Work's manifest, but some fields of the object in the member belong
 * to the member: the apiserver's bookkeeping metadata, the status, a Service's clusterIP,
 * the node a Pod runs on, the replicas an HPA set. fl_retain() merges those from the
 * member's copy ("observed") into the manifest ("desired"), the way Karmada's default
 * interpreter does for built-in kinds. The full rule list, with the reasons, is in
 * docs/internals/execution.md. Later the resource interpreter (Lua customizations) will
 * run its own retain after this one for the kinds it knows.
 *
 * Pure functions: any thread, no I/O. */
#ifndef FL_RETAIN_H
#define FL_RETAIN_H

#include <jansson.h>

#include "core/wellknown.h"

/* What it reads from core/wellknown.h: FL_RETAIN_REPLICAS_LABEL on the manifest (as
 * Karmada's hpa-scale-target-marker sets it on the template), "true" when spec.replicas
 * belongs to the member (an HPA scales it there); FL_MANAGED_LABELS_ANNOTATION and
 * FL_MANAGED_ANNOTATIONS_ANNOTATION, which Karmada puts on manifests listing the label /
 * annotation keys the template had, so that a key dropped from the template is dropped in
 * the member too, while keys the member added itself are kept. */

/* The object to write: a deep copy of desired with the member-owned fields of observed
 * merged in. group is the API group ("" for core, "apps", ...) and kind the Kind of both
 * objects. observed may be NULL (nothing to retain: a plain copy). Returns a new
 * reference (never NULL; both inputs are only read). */
json_t *fl_retain(const char *group, const char *kind, const json_t *desired, const json_t *observed);

#endif
