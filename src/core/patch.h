/* patch.h - the three Kubernetes PATCH engines over jansson values.
 *
 *   JSON merge patch (RFC 7386)          application/merge-patch+json
 *   JSON patch (RFC 6902)                application/json-patch+json
 *   strategic merge patch (Kubernetes)   application/strategic-merge-patch+json
 *
 * None modifies its inputs; each returns a new value in *out (a new reference,
 * NULL on failure). On failure *err (if err != NULL) receives a heap string that
 * names the operation/path and the problem, e.g. "op 2 (replace): path
 * /spec/replicas does not exist"; the caller frees it.
 * Pure functions: any thread. */
#ifndef FL_PATCH_H
#define FL_PATCH_H

#include <jansson.h>
#include <stdbool.h>

/* RFC 7386. Returns 0 or FL_EINVAL (patch is not valid JSON merge patch input). */
int fl_patch_merge(const json_t *orig, const json_t *patch, json_t **out, char **err);

/* RFC 6902: add, remove, replace, move, copy, test; JSON pointers with ~0/~1 escapes,
 * "-" for append. A failed test or a missing path is FL_EINVAL (API maps to 422). */
int fl_patch_json(const json_t *orig, const json_t *patch, json_t **out, char **err);
/* fl_patch_json for patches from the network: the "copy" operations together may add no more
 * than max_copied bytes (as encoded, estimated), checked before each copy is made; past it
 * FL_ETOOBIG naming the operation. max_copied 0: no bound. (The other operations add only
 * what the patch itself holds.) */
int fl_patch_json_limited(const json_t *orig, const json_t *patch, size_t max_copied, json_t **out, char **err);

/* Patch metadata for one field of a built-in kind, as Go struct tags give it upstream
 * (patchStrategy / patchMergeKey). */
typedef struct fl_smp_meta {
    bool merge;          /* patchStrategy includes "merge" (lists merged, not replaced) */
    bool retain_keys;    /* patchStrategy includes "retainKeys" */
    const char *merge_key; /* patchMergeKey for lists of objects; NULL for primitive lists */
} fl_smp_meta;

/* Look up patch metadata for a field. path is the dotted path from the object root
 * with list elements elided, e.g. "spec.template.spec.containers" or
 * "spec.template.spec.containers.env". Return true and fill *out if the field has
 * metadata; false means "no strategy" (lists replaced wholesale, maps merged). */
typedef bool (*fl_smp_lookup_fn)(void *ctx, const char *path, fl_smp_meta *out);

/* Kubernetes strategic merge patch: maps merge recursively; lists with merge strategy
 * merge by merge key (objects) or by value (primitives, set semantics keeping order);
 * directives $patch (replace/merge/delete), $retainKeys, $setElementOrder/<field>,
 * $deleteFromPrimitiveList/<field>; null deletes a key. Unknown directive -> FL_EINVAL. */
int fl_patch_strategic(const json_t *orig, const json_t *patch, fl_smp_lookup_fn lookup, void *ctx,
                       json_t **out, char **err);

#endif
