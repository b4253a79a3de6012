/* patch_merge.c - JSON merge patch (RFC 7386), application/merge-patch+json.
 *
 * The simplest of the three PATCH engines in patch.h: a patch that is an object
 * is merged key by key into the target (null deletes a key, objects recurse),
 * anything else - arrays included - replaces the target outright. The result is
 * always a fresh tree; no node of either input is shared with it, so the caller
 * may mutate *out freely. */
#include "core/patch.h"

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

/* RFC 7386 section 2, MergePatch(Target, Patch). target may be NULL ("absent" or
 * not an object, which the RFC treats alike). Returns a new reference. */
static json_t *merge_value(const json_t *target, const json_t *patch)
{
    if (!json_is_object(patch))
        return fl_json_deep_copy(patch);

    json_t *out = json_is_object(target) ? fl_json_deep_copy(target) : json_object();
    const char *key;
    json_t *val;
    /* json_object_foreach wants a mutable pointer; iteration does not modify. */
    json_object_foreach((json_t *)patch, key, val) {
        if (json_is_null(val)) {
            json_object_del(out, key);
            continue;
        }
        json_t *merged = merge_value(json_object_get(out, key), val);
        json_object_set_new(out, key, merged);
    }
    return out;
}

int fl_patch_merge(const json_t *orig, const json_t *patch, json_t **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    if (!patch) {
        if (err)
            *err = fl_strdup("merge patch: no patch document");
        return FL_EINVAL;
    }
    *out = merge_value(orig, patch);
    return 0;
}
