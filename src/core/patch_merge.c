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
 * not an object, which the RFC treats alike). Returns a new reference. Every node of the
 * result is copied once: the target's members in their order (patched ones merged, nulled
 * ones left out), then the patch's new members in theirs. */
static json_t *merge_value(const json_t *target, const json_t *patch)
{
    if (!json_is_object(patch))
        return fl_json_deep_copy(patch);

    json_t *out = json_object();
    json_t *t = json_is_object(target) ? (json_t *)target : NULL; /* iteration does not modify */
    json_t *p = (json_t *)patch;
    for (void *it = t ? json_object_iter(t) : NULL; it; it = json_object_iter_next(t, it)) {
        const char *key = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        json_t *pv = json_object_getn(p, key, len);
        if (!pv)
            json_object_setn_new_nocheck(out, key, len, fl_json_deep_copy(json_object_iter_value(it)));
        else if (!json_is_null(pv))
            json_object_setn_new_nocheck(out, key, len, merge_value(json_object_iter_value(it), pv));
    }
    for (void *it = json_object_iter(p); it; it = json_object_iter_next(p, it)) {
        const char *key = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        json_t *pv = json_object_iter_value(it);
        if (!json_is_null(pv) && !(t && json_object_getn(t, key, len)))
            json_object_setn_new_nocheck(out, key, len, merge_value(NULL, pv));
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
