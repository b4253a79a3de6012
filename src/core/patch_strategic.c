/* patch_strategic.c - Kubernetes strategic merge patch,
 * application/strategic-merge-patch+json.
 *
 * This follows what the apiserver does (k8s.io/apimachinery strategicpatch,
 * mergeMap/mergeSlice with MergeParallelList and IgnoreUnmatchedNulls), except
 * that field metadata comes from a caller's lookup function instead of Go struct
 * tags. The shape, one function per JSON kind:
 *
 *   smp_map    merge a patch object into an original object (or into nothing):
 *              directives first ($patch, $retainKeys, $setElementOrder/<f>),
 *              then ordinary keys, then $deleteFromPrimitiveList/<f>.
 *   smp_list   merge a patch list: replaced unless the field's strategy is
 *              "merge"; then primitives merge as an ordered set and objects by
 *              merge key, honouring {"$patch": "delete"|"replace"} elements.
 *   order_items  upstream's element ordering: items named by the patch (or by
 *              $setElementOrder) in that order, interleaved with server-only
 *              items where the live list puts them. A consequence users see:
 *              a new element merged without $setElementOrder lands before the
 *              server-only elements that follow it, as `kubectl patch` shows.
 *
 * Deliberate differences from upstream, all where upstream leaves junk behind:
 *   - a value the original does not have is still run through the patch logic
 *     (against nothing), so directives and nulls nested in it never reach the
 *     stored object;
 *   - {"$patch": "delete"} on a map removes the key instead of leaving {};
 *   - "$patch": "merge" on a map is accepted as the default (upstream rejects it);
 *   - unknown "$" keys are errors (upstream stores them), except "$ref" and
 *     "$schema", which are real fields of CRD schemas.
 * Every result is a fresh tree; nothing is shared with the inputs. */
#include "core/patch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

#define DIR_PATCH "$patch"
#define DIR_RETAIN "$retainKeys"
#define DIR_ORDER "$setElementOrder/"
#define DIR_DELPRIM "$deleteFromPrimitiveList/"

typedef struct smp {
    fl_smp_lookup_fn lookup;
    void *ctx;
    char **err;
} smp;

static int smp_fail(smp *s, const char *dpath, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record "<path>: <message>" (first error wins). Returns FL_EINVAL. */
static int smp_fail(smp *s, const char *dpath, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_err_vset(s->err, dpath[0] ? dpath : "(root)", fmt, ap);
    va_end(ap);
    return FL_EINVAL;
}

static char *path_key(const char *parent, const char *key)
{
    return parent[0] ? fl_asprintf("%s.%s", parent, key) : fl_strdup(key);
}

static fl_smp_meta meta_for(smp *s, const char *mpath)
{
    fl_smp_meta m = {0};
    if (!s->lookup || !s->lookup(s->ctx, mpath, &m))
        memset(&m, 0, sizeof(m));
    return m;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- ordering ---------------------------------------------------------- */

/* Lists are matched through hash maps, not pairwise scans, so a patch with
 * many elements costs O(n) rather than O(n^2) (an API server must not hang on
 * a large request). Elements are identified by canonical JSON text: the merge
 * key's value for lists of objects, the value itself for primitives. Equal
 * text <=> json_equal. NULL when the element cannot be identified (an object
 * without the merge key), which matches nothing. */
static char *ident(const json_t *v, const char *key)
{
    if (key) {
        v = json_object_get(v, key);
        if (!v)
            return NULL;
    }
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
}

/* Map ident -> index of its first occurrence in list (list may be NULL). */
static json_t *index_build(const json_t *list, const char *key)
{
    json_t *m = json_object();
    for (size_t i = 0; list && i < json_array_size(list); i++) {
        char *id = ident(json_array_get(list, i), key);
        if (id && !json_object_get(m, id))
            json_object_set_new(m, id, json_integer((json_int_t)i));
        free(id);
    }
    return m;
}

static long index_find(const json_t *map, const json_t *item, const char *key)
{
    char *id = ident(item, key);
    json_t *at = id ? json_object_get(map, id) : NULL;
    free(id);
    return at ? (long)json_integer_value(at) : -1;
}

/* Record item at index i unless an equal one is there. Returns false only for
 * a duplicate; an element that cannot be identified counts as new. */
static bool index_add(json_t *map, const json_t *item, const char *key, size_t i)
{
    char *id = ident(item, key);
    bool fresh = !id || !json_object_get(map, id);
    if (id && fresh)
        json_object_set_new(map, id, json_integer((json_int_t)i));
    free(id);
    return fresh;
}

/* Does a match b? By merge key value when key is set (both must carry it),
 * else by value. */
static bool item_match(const json_t *a, const json_t *b, const char *key)
{
    if (!key)
        return json_equal(a, b);
    json_t *ka = json_object_get(a, key), *kb = json_object_get(b, key);
    return ka && kb && json_equal(ka, kb);
}

typedef struct ord_item {
    json_t *v;  /* borrowed from the merged list */
    long want;  /* position in the order list, -1 if absent */
    long live;  /* position in the server (live) list, -1 if absent */
    long sort;  /* the key being sorted on: want or live */
    size_t pos; /* position in the merged list, for a stable sort */
} ord_item;

static int ord_cmp(const void *pa, const void *pb)
{
    const ord_item *a = pa, *b = pb;
    /* -1 ("not listed") sorts after every listed position. */
    unsigned long ka = (unsigned long)a->sort, kb = (unsigned long)b->sort;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Stable sort by want (use_want) or live position; unlisted items go last. */
static void sort_items(ord_item *a, size_t n, bool use_want)
{
    for (size_t i = 0; i < n; i++)
        a[i].sort = use_want ? a[i].want : a[i].live;
    if (n > 1)
        qsort(a, n, sizeof(*a), ord_cmp);
}

/* Arrange merged (upstream normalizeElementOrder): items present in order come
 * in order's sequence; the others keep their live order and are slotted in
 * before the first ordered item that follows them in the live list. Writes a
 * new array to *out. key is the merge key or NULL for primitives. */
static int order_items(smp *s, const json_t *merged, const json_t *order, const json_t *live,
                       const char *key, const char *dpath, json_t **out)
{
    size_t n = json_array_size(merged);
    *out = NULL;
    if (key) {
        for (size_t i = 0; i < n; i++)
            if (!json_object_get(json_array_get(merged, i), key))
                return smp_fail(s, dpath, "element %zu has no merge key \"%s\"", i, key);
        for (size_t i = 0; i < json_array_size(order); i++)
            if (!json_object_get(json_array_get(order, i), key))
                return smp_fail(s, dpath, "ordering element %zu has no merge key \"%s\"", i, key);
    }
    ord_item *pat = fl_calloc(n, sizeof(*pat)), *srv = fl_calloc(n, sizeof(*srv));
    json_t *want_at = index_build(order, key), *live_at = index_build(live, key);
    size_t np = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        ord_item it = {.v = json_array_get(merged, i), .pos = i};
        it.want = index_find(want_at, it.v, key);
        it.live = index_find(live_at, it.v, key);
        if (it.want >= 0)
            pat[np++] = it;
        else
            srv[ns++] = it;
    }
    sort_items(pat, np, true);
    sort_items(srv, ns, false);

    json_t *res = json_array();
    size_t i = 0, j = 0;
    while (i < ns || j < np) {
        bool take_server;
        if (j >= np)
            take_server = true;
        else if (i >= ns)
            take_server = false;
        else
            take_server = srv[i].live >= 0 && pat[j].live >= 0 && srv[i].live < pat[j].live;
        json_array_append_new(res, fl_json_deep_copy(take_server ? srv[i++].v : pat[j++].v));
    }
    free(pat);
    free(srv);
    json_decref(want_at);
    json_decref(live_at);
    *out = res;
    return 0;
}

/* ---- maps and lists ---------------------------------------------------- */

static int smp_map(smp *s, const json_t *orig, const json_t *patch, const char *mpath,
                   const char *dpath, json_t **out);
static int smp_list(smp *s, const fl_smp_meta *meta, const json_t *orig, const json_t *patch,
                    const char *mpath, const char *dpath, json_t **out);

/* A patch value where the original has nothing: still apply it, so directives
 * and nulls inside do not leak into the result. *out NULL means "absent". */
static int smp_clean(smp *s, const json_t *v, const char *mpath, const char *dpath, json_t **out)
{
    if (json_is_object(v))
        return smp_map(s, NULL, v, mpath, dpath, out);
    if (json_is_array(v)) {
        fl_smp_meta m = meta_for(s, mpath);
        return smp_list(s, &m, NULL, v, mpath, dpath, out);
    }
    *out = fl_json_deep_copy(v);
    return 0;
}

enum elem_kind { K_NONE, K_OBJECT, K_STRING, K_NUMBER, K_BOOL, K_NULL, K_ARRAY };

static enum elem_kind kind_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return K_OBJECT;
    case JSON_ARRAY: return K_ARRAY;
    case JSON_STRING: return K_STRING;
    case JSON_INTEGER:
    case JSON_REAL: return K_NUMBER;
    case JSON_TRUE:
    case JSON_FALSE: return K_BOOL;
    default: return K_NULL;
    }
}

/* All elements of both lists must share one kind, and not be lists (upstream
 * sliceElementType). K_NONE when both are empty. */
static int list_kind(smp *s, const json_t *a, const json_t *b, const char *dpath,
                     enum elem_kind *kind)
{
    *kind = K_NONE;
    const json_t *lists[2] = {a, b};
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; lists[l] && i < json_array_size(lists[l]); i++) {
            enum elem_kind k = kind_of(json_array_get(lists[l], i));
            if (k == K_ARRAY)
                return smp_fail(s, dpath, "lists of lists cannot be merged");
            if (*kind != K_NONE && k != *kind)
                return smp_fail(s, dpath, "list elements are not all of one type; cannot merge");
            *kind = k;
        }
    }
    return 0;
}

/* A list without merge strategy: the patch replaces it (cleaned element-wise). */
static int list_replace(smp *s, const json_t *patch, const char *mpath, const char *dpath,
                        json_t **out)
{
    json_t *res = json_array();
    int rc = 0;
    for (size_t i = 0; i < json_array_size(patch) && rc == 0; i++) {
        json_t *e = json_array_get(patch, i), *c = NULL;
        if (json_is_object(e)) {
            char *ep = fl_asprintf("%s[%zu]", dpath, i);
            rc = smp_map(s, NULL, e, mpath, ep, &c);
            free(ep);
        } else {
            c = fl_json_deep_copy(e);
        }
        if (c)
            json_array_append_new(res, c);
    }
    if (rc != 0) {
        json_decref(res);
        return rc;
    }
    *out = res;
    return 0;
}

/* Primitive list with merge strategy: an ordered set. */
static int list_merge_scalars(smp *s, const json_t *orig, const json_t *patch, const char *dpath,
                              json_t **out)
{
    json_t *merged = json_array(), *seen = json_object();
    const json_t *lists[2] = {orig, patch};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; lists[l] && i < json_array_size(lists[l]); i++) {
            json_t *v = json_array_get(lists[l], i);
            if (index_add(seen, v, NULL, 0))
                json_array_append(merged, v);
        }
    int rc = order_items(s, merged, patch, orig, NULL, dpath, out);
    json_decref(merged);
    json_decref(seen);
    return rc;
}

/* List of objects with merge strategy: merge element-wise by merge key. */
static int list_merge_objects(smp *s, const char *key, const json_t *orig, const json_t *patch,
                              const char *mpath, const char *dpath, json_t **out)
{
    json_t *work = json_array();  /* the live list, updated in place */
    json_t *live = NULL;          /* work before patch elements were merged in */
    json_t *plist = json_array(); /* patch elements without $patch */
    json_t *pidx = json_array();  /* their indexes in the patch, for messages */
    json_t *doomed = json_object(); /* idents of elements "$patch": "delete" removes */
    json_t *work_at = NULL;       /* ident -> index in work */
    bool replace = false;
    int rc = 0;
    char *ep = NULL;

    if (!key) {
        rc = smp_fail(s, dpath, "cannot merge a list of objects: the field has no merge key");
        goto out;
    }
    for (size_t i = 0; orig && i < json_array_size(orig); i++) {
        json_t *e = json_array_get(orig, i);
        if (!json_object_get(e, key)) {
            rc = smp_fail(s, dpath, "element %zu of the original list has no merge key \"%s\"", i,
                          key);
            goto out;
        }
        json_array_append_new(work, fl_json_deep_copy(e));
    }

    /* Special elements first: deletions act on the live list, a replace marker
     * throws the live list away for the patch's other elements. */
    for (size_t i = 0; i < json_array_size(patch); i++) {
        json_t *e = json_array_get(patch, i);
        json_t *d = json_object_get(e, DIR_PATCH);
        if (!d) {
            json_array_append(plist, e);
            json_array_append_new(pidx, json_integer((json_int_t)i));
            continue;
        }
        const char *dv = json_string_value(d);
        if (dv && strcmp(dv, "delete") == 0) {
            json_t *kv = json_object_get(e, key);
            if (!kv) {
                rc = smp_fail(s, dpath, "element %zu: \"$patch\": \"delete\" needs merge key \"%s\"",
                              i, key);
                goto out;
            }
            index_add(doomed, e, key, 0);
        } else if (dv && strcmp(dv, "replace") == 0) {
            replace = true;
        } else if (dv && strcmp(dv, "merge") == 0) {
            rc = smp_fail(s, dpath, "element %zu: \"$patch\": \"merge\" cannot be used in a list",
                          i);
            goto out;
        } else {
            rc = smp_fail(s, dpath, "element %zu: unknown \"$patch\" value%s%s%s; expected "
                          "\"delete\" or \"replace\"", i, dv ? " \"" : "", dv ? dv : "",
                          dv ? "\"" : "");
            goto out;
        }
    }
    if (json_object_size(doomed)) {
        json_t *kept = json_array();
        for (size_t j = 0; j < json_array_size(work); j++)
            if (index_find(doomed, json_array_get(work, j), key) < 0)
                json_array_append(kept, json_array_get(work, j));
        json_decref(work);
        work = kept;
    }
    if (replace) {
        json_decref(work);
        work = json_array();
        for (size_t i = 0; i < json_array_size(plist); i++) {
            json_t *c = NULL;
            ep = fl_asprintf("%s[%lld]", dpath, (long long)json_integer_value(json_array_get(pidx, i)));
            rc = smp_map(s, NULL, json_array_get(plist, i), mpath, ep, &c);
            free(ep);
            ep = NULL;
            if (rc != 0)
                goto out;
            if (c)
                json_array_append_new(work, c);
        }
        *out = work;
        work = NULL;
        goto out;
    }

    live = json_array();
    json_array_extend(live, work); /* shares elements; work's slots get replaced, not mutated */
    work_at = index_build(work, key);
    for (size_t i = 0; i < json_array_size(plist); i++) {
        json_t *e = json_array_get(plist, i), *m = NULL;
        ep = fl_asprintf("%s[%lld]", dpath, (long long)json_integer_value(json_array_get(pidx, i)));
        if (!json_object_get(e, key)) {
            rc = smp_fail(s, ep, "missing merge key \"%s\"", key);
            goto out;
        }
        long at = index_find(work_at, e, key);
        rc = smp_map(s, at >= 0 ? json_array_get(work, (size_t)at) : NULL, e, mpath, ep, &m);
        free(ep);
        ep = NULL;
        if (rc != 0)
            goto out;
        if (!m)
            continue; /* cannot happen: only "$patch" elements delete, and they are out */
        if (at >= 0) {
            json_array_set_new(work, (size_t)at, m);
        } else {
            index_add(work_at, m, key, json_array_size(work));
            json_array_append_new(work, m);
        }
    }
    rc = order_items(s, work, plist, live, key, dpath, out);
out:
    free(ep);
    json_decref(work);
    json_decref(live);
    json_decref(plist);
    json_decref(pidx);
    json_decref(doomed);
    json_decref(work_at);
    return rc;
}

/* Merge patch list into orig list (orig NULL: nothing to merge into). */
static int smp_list(smp *s, const fl_smp_meta *meta, const json_t *orig, const json_t *patch,
                    const char *mpath, const char *dpath, json_t **out)
{
    *out = NULL;
    if (!meta->merge)
        return list_replace(s, patch, mpath, dpath, out);

    enum elem_kind kind;
    int rc = list_kind(s, orig, patch, dpath, &kind);
    if (rc != 0)
        return rc;
    if (kind == K_NONE) {
        *out = json_array();
        return 0;
    }
    if (kind != K_OBJECT)
        return list_merge_scalars(s, orig, patch, dpath, out);
    return list_merge_objects(s, meta->merge_key, orig, patch, mpath, dpath, out);
}

/* $setElementOrder/<field>: merge the field as usual, then order it the way the
 * directive says (upstream mergePatchIntoOriginal). res is the map being built. */
static int apply_element_order(smp *s, json_t *res, const json_t *patch, const char *field,
                               const json_t *order, const char *mpath, const char *dpath)
{
    char *cm = path_key(mpath, field), *cd = path_key(dpath, field);
    json_t *orig_list = json_object_get(res, field), *merged = NULL, *ordered = NULL;
    json_t *patch_list = json_object_get(patch, field);
    fl_smp_meta m = meta_for(s, cm);
    const char *key = m.merge_key;
    int rc = 0;

    if (orig_list && !json_is_array(orig_list)) {
        rc = smp_fail(s, cd, "$setElementOrder is given but the original value is not a list");
        goto out;
    }
    if (patch_list && !json_is_array(patch_list)) {
        rc = smp_fail(s, cd, "$setElementOrder is given but the patch value is not a list");
        goto out;
    }
    /* The patch's own elements (deletions aside) must appear in the order list,
     * in the same relative order. */
    size_t pi = 0, si = 0, pn = json_array_size(patch_list), sn = json_array_size(order);
    while (pi < pn && si < sn) {
        json_t *pe = json_array_get(patch_list, pi), *se = json_array_get(order, si);
        if (json_is_object(pe) && json_object_get(pe, DIR_PATCH)) {
            pi++;
            continue;
        }
        if (key && (!json_object_get(pe, key) || !json_object_get(se, key))) {
            rc = smp_fail(s, cd, "$setElementOrder and patch elements must carry merge key \"%s\"",
                          key);
            goto out;
        }
        if (item_match(pe, se, key))
            pi++;
        si++;
    }
    for (; pi < pn; pi++) {
        json_t *pe = json_array_get(patch_list, pi);
        if (!(json_is_object(pe) && json_object_get(pe, DIR_PATCH))) {
            rc = smp_fail(s, cd, "the order of the patch list does not match the "
                          "$setElementOrder list");
            goto out;
        }
    }

    if (orig_list && patch_list)
        rc = smp_list(s, &m, orig_list, patch_list, cm, cd, &merged);
    else if (patch_list)
        rc = smp_list(s, &m, NULL, patch_list, cm, cd, &merged);
    else if (orig_list)
        merged = fl_json_deep_copy(orig_list);
    else
        goto out; /* nothing to order */
    if (rc != 0)
        goto out;

    if (key && !json_is_object(json_array_get(merged, 0)))
        key = NULL; /* a primitive list: order by value */
    rc = order_items(s, merged, order, orig_list, key, cd, &ordered);
    if (rc != 0)
        goto out;
    json_object_set_new(res, field, ordered);
out:
    json_decref(merged);
    free(cm);
    free(cd);
    return rc;
}

/* $deleteFromPrimitiveList/<field>: drop every listed value from the list. */
static int apply_delete_from_list(smp *s, json_t *res, const char *field, const json_t *values,
                                  const char *dpath)
{
    json_t *list = json_object_get(res, field);
    if (!list)
        return 0;
    if (!json_is_array(list)) {
        char *cd = path_key(dpath, field);
        int rc = smp_fail(s, cd, "$deleteFromPrimitiveList is given but the value is not a list");
        free(cd);
        return rc;
    }
    json_t *kept = json_array(), *drop = index_build(values, NULL);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *v = json_array_get(list, i);
        if (index_find(drop, v, NULL) < 0)
            json_array_append(kept, v);
    }
    json_decref(drop);
    json_object_set_new(res, field, kept);
    return 0;
}

/* What a patch key is: an ordinary field, one of the directives, or an unknown
 * "$" key. For the two prefixed directives *field is the list field they name. */
enum dir { DIR_NONE, DIR_P, DIR_R, DIR_O, DIR_D, DIR_BAD };

static enum dir dir_of(const char *key, const char **field)
{
    *field = NULL;
    if (key[0] != '$')
        return DIR_NONE;
    if (strcmp(key, DIR_PATCH) == 0)
        return DIR_P;
    if (strcmp(key, DIR_RETAIN) == 0)
        return DIR_R;
    if (has_prefix(key, DIR_ORDER) && key[strlen(DIR_ORDER)]) {
        *field = key + strlen(DIR_ORDER);
        return DIR_O;
    }
    if (has_prefix(key, DIR_DELPRIM) && key[strlen(DIR_DELPRIM)]) {
        *field = key + strlen(DIR_DELPRIM);
        return DIR_D;
    }
    /* Real fields of JSONSchemaProps (CRD schemas) that start with '$'. */
    if (strcmp(key, "$ref") == 0 || strcmp(key, "$schema") == 0)
        return DIR_NONE;
    return DIR_BAD;
}

/* Merge patch object into orig (an object, or NULL for "nothing there").
 * *out receives the new object, or NULL when the patch deletes the map. */
static int smp_map(smp *s, const json_t *orig, const json_t *patch, const char *mpath,
                   const char *dpath, json_t **out)
{
    const char *key, *field;
    json_t *v;
    void *tmp;
    const json_t *retain = NULL;
    json_t *res = NULL;
    int rc = 0;

    *out = NULL;
    /* Validate every directive before acting on any. */
    json_object_foreach((json_t *)patch, key, v) {
        switch (dir_of(key, &field)) {
        case DIR_NONE:
            break;
        case DIR_P: {
            const char *pv = json_string_value(v);
            if (!pv || (strcmp(pv, "replace") && strcmp(pv, "merge") && strcmp(pv, "delete")))
                return smp_fail(s, dpath, "unknown \"$patch\" value; expected \"replace\", "
                                "\"merge\" or \"delete\"");
            if (strcmp(pv, "delete") == 0)
                return 0; /* the whole map goes */
            if (strcmp(pv, "replace") == 0)
                orig = NULL; /* the patch's content is the new map */
            break;
        }
        case DIR_R:
            for (size_t i = 0; i < json_array_size(v); i++)
                if (!json_is_string(json_array_get(v, i)))
                    return smp_fail(s, dpath, "$retainKeys must be a list of field names");
            if (!json_is_array(v))
                return smp_fail(s, dpath, "$retainKeys must be a list of field names");
            retain = v;
            break;
        case DIR_O:
            if (!json_is_array(v))
                return smp_fail(s, dpath, "%s must be a list", key);
            break;
        case DIR_D:
            if (!json_is_array(v))
                return smp_fail(s, dpath, "%s must be a list", key);
            for (size_t i = 0; i < json_array_size(v); i++) {
                json_type t = json_typeof(json_array_get(v, i));
                if (t == JSON_OBJECT || t == JSON_ARRAY)
                    return smp_fail(s, dpath, "%s must be a list of primitive values", key);
            }
            break;
        case DIR_BAD:
            return smp_fail(s, dpath, "unknown strategic merge patch directive \"%s\"", key);
        }
    }

    res = json_is_object(orig) ? fl_json_deep_copy(orig) : json_object();

    if (retain) {
        json_object_foreach((json_t *)patch, key, v) {
            if (json_is_null(v) || dir_of(key, &field) != DIR_NONE)
                continue;
            bool listed = false;
            for (size_t i = 0; i < json_array_size(retain) && !listed; i++)
                listed = strcmp(json_string_value(json_array_get(retain, i)), key) == 0;
            if (!listed) {
                rc = smp_fail(s, dpath, "field \"%s\" is in the patch but not in $retainKeys", key);
                goto out;
            }
        }
        json_object_foreach_safe(res, tmp, key, v) {
            bool listed = false;
            for (size_t i = 0; i < json_array_size(retain) && !listed; i++)
                listed = strcmp(json_string_value(json_array_get(retain, i)), key) == 0;
            if (!listed)
                json_object_del(res, key);
        }
    }

    json_object_foreach((json_t *)patch, key, v) {
        if (dir_of(key, &field) == DIR_O) {
            rc = apply_element_order(s, res, patch, field, v, mpath, dpath);
            if (rc != 0)
                goto out;
        }
    }

    json_object_foreach((json_t *)patch, key, v) {
        if (dir_of(key, &field) != DIR_NONE)
            continue;
        char *ordk = fl_asprintf(DIR_ORDER "%s", key);
        bool ordered = json_object_get(patch, ordk) != NULL;
        free(ordk);
        if (ordered)
            continue; /* merged together with its $setElementOrder above */
        if (json_is_null(v)) {
            json_object_del(res, key);
            continue;
        }
        char *cm = path_key(mpath, key), *cd = path_key(dpath, key);
        json_t *cur = json_object_get(res, key), *nv = NULL;
        if (json_is_object(cur) && json_is_object(v)) {
            rc = smp_map(s, cur, v, cm, cd, &nv);
        } else if (json_is_array(cur) && json_is_array(v)) {
            fl_smp_meta m = meta_for(s, cm);
            rc = smp_list(s, &m, cur, v, cm, cd, &nv);
        } else {
            rc = smp_clean(s, v, cm, cd, &nv);
        }
        free(cm);
        free(cd);
        if (rc != 0)
            goto out;
        if (nv)
            json_object_set_new(res, key, nv);
        else
            json_object_del(res, key);
    }

    json_object_foreach((json_t *)patch, key, v) {
        if (dir_of(key, &field) == DIR_D) {
            rc = apply_delete_from_list(s, res, field, v, dpath);
            if (rc != 0)
                goto out;
        }
    }
out:
    if (rc != 0) {
        json_decref(res);
        return rc;
    }
    *out = res;
    return 0;
}

int fl_patch_strategic(const json_t *orig, const json_t *patch, fl_smp_lookup_fn lookup, void *ctx,
                       json_t **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    if (!json_is_object(orig) || !json_is_object(patch)) {
        if (err)
            *err = fl_strdup("strategic merge patch: both the object and the patch must be JSON "
                             "objects");
        return FL_EINVAL;
    }
    smp s = {.lookup = lookup, .ctx = ctx, .err = err};
    json_t *res = NULL;
    int rc = smp_map(&s, orig, patch, "", "", &res);
    if (rc != 0)
        return rc;
    *out = res ? res : json_object(); /* "$patch": "delete" at the top leaves {} */
    return 0;
}
