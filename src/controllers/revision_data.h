/* revision_data.h - what a template revision records, and how it is named and restored: the
 * pure half of template revisions (docs/rollouts.md, "Revisions"; the contract is in
 * core/wellknown.h, FL_REVISION_*), shared by the revisions controller (revisions.c), which
 * writes ControllerRevisions, and `flotilla ctl rollout undo` (cli/rollout_cmd.c), which
 * writes one back onto its template.
 *
 * "What is delivered" is the template less what only the control plane means: its status,
 * its server-set metadata (uid, resourceVersion, generation, timestamps, owners, finalizers,
 * managedFields), and the labels and annotations that controllers or the revision machinery
 * set on it rather than the user (fl_revision_control_key). Two templates with the same data
 * deliver the same thing, so a change of anything else (a status write, a policy claiming
 * the template) makes no revision.
 *
 * Pure functions, no I/O: any thread. */
#ifndef FL_REVISION_DATA_H
#define FL_REVISION_DATA_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The annotation a revision takes from its template's, as kubectl rollout history shows it. */
#define FL_REVISION_CHANGE_CAUSE_ANNOTATION "kubernetes.io/change-cause"

/* Whether a label (labels true) or annotation key of a template is the control plane's, not
 * delivered content: Karmada's claim markers (a policy's permanent-id label, its name and
 * namespace annotations), the HPA marker's retain-replicas label, the Deployment
 * controller's revision annotations, the revision history limit, and the change cause
 * (which the revision carries in its own annotations instead). */
bool fl_revision_control_key(bool labels, const char *key);

/* Whether templates of (api_version, kind) get revisions: every kind but two. Secrets: a
 * revision would copy their data into objects that whoever may read ControllerRevisions
 * reads. ControllerRevisions: a policy selecting them would make each recorded revision a
 * template of its own, recorded in turn. */
bool fl_revision_kept_for(const char *api_version, const char *kind);

/* The data of a template (read-only, not changed): apiVersion, kind, metadata.{name,
 * namespace,labels,annotations} (less fl_revision_control_key's keys; an empty map left
 * out) and every other top-level field but status. A new object whose members below the
 * top level and metadata are shared with tmpl: read-only. NULL when tmpl is not an object. */
json_t *fl_revision_data(const json_t *tmpl);

/* The digest of data (fl_json_hash: any key order) as the name suffix: 10 characters of
 * Kubernetes' safe alphabet (no vowels, no 0/1/3), written into buf (at least 11 bytes),
 * which is returned. */
const char *fl_revision_hash_text(const json_t *data, char *buf);

/* "<template name>-<hash text>", the prefix cut so the whole fits a 253-character
 * object name. Heap; caller frees. */
char *fl_revision_name(const char *template_name, const char *hash_text);

/* The template's revision history limit: its FL_REVISION_HISTORY_LIMIT_ANNOTATION as a
 * non-negative integer, else FL_REVISION_HISTORY_DEFAULT. *valid (may be NULL) is false when
 * the annotation is there but not such an integer (an object stored before the API refused
 * those). */
int fl_revision_history_limit(const json_t *tmpl, bool *valid);

/* The template's change cause (borrowed from tmpl), or NULL. */
const char *fl_revision_change_cause(const json_t *tmpl);

/* Whether the ControllerRevision cr records what tmpl delivers now (fl_revision_data's
 * digests equal). */
bool fl_revision_is_current(const json_t *tmpl, const json_t *cr);

/* "The previous revision", as kubectl rollout undo means it: of revisions (an array of
 * ControllerRevisions of tmpl, any order), the one with the highest revision number whose
 * data is not what tmpl delivers now: normally current-1, and still the right one when the
 * newest change is not recorded yet. Borrowed from revisions; NULL when there is none. */
const json_t *fl_revision_previous(const json_t *tmpl, const json_t *revisions);

/* What restoring a revision writes: a new object, live (the template as stored now: its
 * metadata, resourceVersion included, and its status kept) with data's labels, annotations
 * and top-level fields written back: a top-level field live has and data lacks is removed,
 * the control plane's labels and annotations of live are kept (a policy's claim stays), and
 * the change cause becomes change_cause (NULL: none), the one the revision recorded. NULL
 * when live or data is not an object. */
json_t *fl_revision_restore(const json_t *live, const json_t *data, const char *change_cause);

#endif
