/* crd_schema.h - what the apiserver does to a custom resource's body against the
 * structural schema of its CRD version before storing it: pruning of undeclared
 * fields, removal of disallowed nulls, defaulting, and the fieldValidation
 * (Ignore/Warn/Strict) decision about what pruning found. Pruning and that decision
 * also serve the built-in and Karmada kinds, against their generated field tables.
 *
 * Order on create, update and patch (as in the apiextensions-apiserver, where
 * pruning runs while the body is decoded and defaulting right after):
 *
 *     fl_crd_prune(k, obj, unknown);          prune + drop non-nullable nulls
 *     fl_crd_field_validation(mode, unknown, &warning, &err);
 *     fl_crd_default(k, obj);                 fill `default`s
 *     ... type checks, validation, store ...
 *
 * Reads apply fl_crd_default() again (upstream defaults objects read from storage
 * too; those defaults are not written back).
 *
 * Everything here is pure computation on caller-owned JSON: any thread may call it,
 * and a kind's schema (k->crd_version) is only read. Allocation failure aborts
 * (core/mem.h), so nothing returns FL_ENOMEM. */
#ifndef FL_CRD_SCHEMA_H
#define FL_CRD_SCHEMA_H

#include <jansson.h>

#include "api/kinds.h"

/* Remove the fields of obj that the structural schema of a custom resource kind
 * (k->crd_version."schema"."openAPIV3Schema") does not declare, in place.
 *
 * - A node with x-kubernetes-preserve-unknown-fields: true keeps its undeclared
 *   fields, at any level, the root included; the fields it does declare are still
 *   pruned against their own schemas (upstream's skipPrune).
 * - additionalProperties as a schema prunes every value against that schema;
 *   additionalProperties: true keeps every key, and a value is pruned as having no
 *   schema: scalars and lists of scalars survive, the fields of an object value are
 *   removed (exactly what upstream does with a nil structural schema).
 * - items prunes each element of a list against the items schema.
 * - x-kubernetes-embedded-resource keeps apiVersion, kind and metadata of the
 *   embedded object; unknown fields of that embedded metadata (fields ObjectMeta
 *   has no place for, also inside ownerReferences/managedFields entries) are
 *   removed and reported, as upstream's ObjectMeta coercion does.
 * - x-kubernetes-int-or-string values are scalars and never pruned.
 * - apiVersion, kind and metadata at the root are never touched: the server
 *   handles the root metadata itself.
 * After pruning, null values of fields whose schema is not `nullable: true` and
 * has no `default` are removed, silently (upstream's
 * PruneNonNullableNullsWithoutDefaults); nulls that have a default are left for
 * fl_crd_default().
 *
 * Every removed field's path is appended to `unknown` (a JSON array; NULL = don't
 * report) as a string with a leading dot: ".spec.foo", ".spec.items[2].bar". The
 * pruned paths come first, sorted bytewise (upstream sorts them), then the embedded
 * metadata ones in the order found.
 *
 * Built-in and Karmada kinds (not dynamic, with a field table) are pruned against
 * their generated table instead (kinds_schema.c), as kube-apiserver's typed decode
 * drops what the Go types do not have: every key a table does not name is removed and
 * reported, in document order, below free-form fields (FL_F_ANY, an FL_F_OBJECT
 * without table) nothing is. Paths as above: ".spec.template.spec.containers[0].x",
 * map values as ".key".
 *
 * No-op when k is NULL, neither dynamic with an object schema nor built-in with a
 * table, or obj is not an object. */
void fl_crd_prune(const fl_kind *k, json_t *obj, json_t *unknown);

/* The fields of obj that k's table marks `unsupported` (upstream has them, nothing in
 * Flotilla acts on them yet) and that obj sets to something other than null, false,
 * 0, "" or empty: their paths, ".spec.placement.foo" as fl_crd_prune writes them,
 * appended to out. Built-in and Karmada kinds only (no-op otherwise). */
void fl_crd_unsupported_fields(const fl_kind *k, const json_t *obj, json_t *out);

/* Apply the schema's `default` values to obj in place, recursively, the way the
 * apiserver defaults custom resources on create, update and read:
 * - a property with a default is set (to a deep copy) when absent, or when it is
 *   null and the property is not `nullable: true`; present values are never
 *   overridden;
 * - defaults inside an object apply only when that object exists (or was itself
 *   just defaulted), never by creating missing parents;
 * - the items schema's defaults apply inside every element of a list (and a null
 *   element of a non-nullable items schema with a default is replaced);
 * - the additionalProperties schema's defaults apply inside every value of a map.
 * No-op when k is NULL, not dynamic, has no schema, or obj is not an object. */
void fl_crd_default(const fl_kind *k, json_t *obj);

/* The duplicate object keys of the JSON text buf[0..len) (valid JSON: jansson decoded
 * it), as complete messages for fl_crd_field_validation appended to out:
 * `duplicate field "spec.replicas"` (list elements as "[2]"), in document order. */
void fl_crd_duplicate_fields(const char *buf, size_t len, json_t *out);

/* Decide what the fieldValidation query parameter makes of the unknown fields.
 *
 * mode: "Ignore", "Warn" or "Strict" (case-sensitive). NULL or "" means "Warn",
 * the apiserver's default since ServerSideFieldValidation went on by default (1.25;
 * GA in 1.27): a request that does not send the parameter succeeds with warnings.
 * kubectl rejects unknown fields by default only because it sends Strict itself.
 *
 * unknown: a JSON array of strings (NULL = none). A string starting with '.' is a
 * path from fl_crd_prune() and becomes `unknown field "spec.foo"` (upstream's paths
 * have no leading dot). Any other string is taken as a complete message, which is
 * how the caller reports a duplicate field: `duplicate field "spec.foo"`; append
 * those before the pruned paths, since upstream lists the decoder's errors first.
 *
 * Returns 0 to proceed, with *warning NULL, or (Warn, when there is something to
 * warn about) a heap string the caller frees holding one warning per line, e.g.
 *     unknown field "spec.foo"\nunknown field "spec.bar"
 * Upstream adds one warning per field, so send one `Warning: 299 - "<text>"` header
 * per line (with '"' and '\' in the text escaped as \" and \\).
 *
 * Returns FL_EINVAL with *err a heap string the caller frees:
 * - Strict with unknown fields: `strict decoding error: unknown field "spec.foo",
 *   unknown field "spec.bar"`. Upstream answers 400 BadRequest; on create/update its
 *   Status message is `<Kind> in version "<version>" cannot be handled as a <Kind>: `
 *   followed by this text.
 * - an invalid mode: `fieldValidation: Unsupported value: "Bogus": supported
 *   values: "", "Ignore", "Strict", "Warn"` (upstream's field error text). Upstream
 *   checks this before decoding and answers 422 Invalid with message
 *   `CreateOptions.meta.k8s.io "" is invalid: <this text>` (UpdateOptions for PUT,
 *   PatchOptions for PATCH) and one cause {reason: FieldValueNotSupported,
 *   field: "fieldValidation", message: the text after "fieldValidation: "}.
 * *warning and *err are written on every path (NULL when unused). Any thread. */
int fl_crd_field_validation(const char *mode, const json_t *unknown, char **warning, char **err);

#endif
