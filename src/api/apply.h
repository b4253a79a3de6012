/* apply.h - server-side apply and metadata.managedFields (FieldsV1).
 *
 * Every write records who set which field. A field manager that *applies*
 * (PATCH application/apply-patch+yaml) declares the fields it cares about; its
 * set is exactly the fields of its last applied configuration, and fields it
 * stops applying are removed from the object unless someone else also owns them.
 * Any other write (create, update, merge/JSON/strategic patch) is an *Update*:
 * the writer takes the fields it changed. Applying a value that differs from the
 * live one on a field another manager owns is a conflict, unless forced.
 *
 * Field sets are stored as Kubernetes stores them (fieldsType "FieldsV1"): a JSON
 * tree of "f:<field>", "k:<key fields as compact JSON>" (associative list element),
 * "v:<value>" (set element), with ".": {} marking that a map or list element itself
 * is owned. Whether a list is a map, a set or atomic comes from the kind table
 * (fl_kind_smp_lookup) for built-in kinds and from x-kubernetes-list-type /
 * x-kubernetes-list-map-keys in a CRD's schema; metadata fields the server owns
 * (uid, resourceVersion, generation, creationTimestamp, managedFields, ...) are
 * never tracked.
 *
 * Pure functions over jansson values: any thread. */
#ifndef FL_APPLY_H
#define FL_APPLY_H

#include <jansson.h>
#include <stdbool.h>

#include "api/kinds.h"

/* Apply `config` (the user's applied object, already decoded from YAML/JSON) as
 * field manager `manager` on top of `cur` (the stored object, or NULL when the
 * object does not exist yet). Neither input is modified.
 *
 * On success *out is the resulting object (new reference) with
 * metadata.managedFields updated: the manager's Apply entry (operation "Apply",
 * apiVersion, time=now, fieldsType "FieldsV1", fieldsV1 = the set of fields present
 * in config) replaces its previous Apply entry. Fields the manager owned through
 * its previous apply and no longer applies are removed from the object unless
 * another manager also owns them. Maps merge recursively; associative lists merge
 * by key; sets merge; atomic lists and scalars are replaced. A null in config
 * removes the field but still claims it. Server-owned metadata (uid,
 * resourceVersion, generation, creationTimestamp, ...) is taken from cur, never
 * from config; a resourceVersion precondition in config is the caller's to check.
 * When nothing changes (same object, same field set) *out is json_equal to cur, so
 * the caller can skip the write.
 *
 * Conflicts: a field in config whose value differs from cur's value and which
 * another manager owns -> returns FL_ECONFLICT and *conflicts = JSON array of
 * {"field": ".spec.replicas", "manager": "other"} for every conflict (nothing
 * else changes, *out = NULL), unless force, in which case ownership moves to this
 * manager. Paths use upstream's notation, e.g.
 * .spec.template.spec.containers[name="nginx"].image, and [="a.io/x"] for a set
 * element.
 *
 * Returns 0, FL_ECONFLICT, or FL_EINVAL with *err (heap, caller frees) naming the
 * path and problem, e.g. ".spec.template.spec.containers: element 0: associative
 * list with keys has an element that omits key field "name" (and doesn't have
 * default value)"; also when config is not an object, its apiVersion/kind differ
 * from the kind's, it carries metadata.managedFields, or manager is empty.
 * `conflicts` and `err` may be NULL; every out-parameter is written on every path.
 * `now` is an RFC 3339 UTC time ("2024-05-01T10:00:00Z"); NULL = the clock. */
int fl_apply(const fl_kind *k, const json_t *cur, const json_t *config, const char *manager, bool force,
             const char *now, json_t **out, json_t **conflicts, char **err);

/* Record a non-apply write (create/update/patch) by `manager`: every leaf field
 * whose value differs between old (NULL on create) and obj becomes owned by
 * manager (operation "Update" entry for manager, created or extended, time=now),
 * and is removed from other managers' sets; fields removed from obj are dropped
 * from every manager's set; entries left empty are removed. Maps and list
 * elements that appear or disappear are owned or dropped as a whole (".").
 *
 * The starting managedFields are obj's own when it carries a non-empty list (a
 * client may edit them directly), none when it carries an empty list (explicit
 * reset, as upstream), else old's. Modifies obj's metadata.managedFields in place
 * (removing the key when no entry is left). Never fails: list elements that lack
 * their key are simply not tracked. */
void fl_managed_fields_update(const fl_kind *k, const json_t *old, json_t *obj, const char *manager,
                              const char *now);

/* Default field manager name from a User-Agent ("kubectl-client-side-apply/v1.32
 * ..." -> "kubectl-client-side-apply"; "kubectl/v1.32.4 (linux/amd64)..." ->
 * "kubectl"), as the apiserver derives it: the part before the first '/', without
 * control characters, at most 128 bytes. NULL/empty -> "unknown". Returns a heap
 * string the caller frees. */
char *fl_field_manager_default(const char *user_agent);

#endif
