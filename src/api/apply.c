/* apply.c - server-side apply and the update of managedFields (see apply.h).
 *
 * DESIGN. The semantics are those of Kubernetes' structured-merge-diff, expressed
 * over plain jansson values instead of typed values:
 *
 *   apply:  newset  = fields of config
 *           merged  = cur merged with config (maps recurse, associative lists by
 *                     key, sets by value, everything else replaced)
 *           merged -= (fields of the manager's previous apply) - (fields anyone
 *                     still owns, newset included)              ("prune")
 *           diff    = compare(cur, merged): added / modified / removed paths
 *           every other manager owning an added or modified path conflicts;
 *           with force it loses that path; every manager loses removed paths.
 *   update: diff = compare(old, obj); every manager loses changed and removed
 *           paths, the writer's Update entry gains the changed ones.
 *
 * A field set is kept in memory in nearly its FieldsV1 form: a JSON object per
 * path node whose keys are path elements ("f:spec", "k:{\"name\":\"a\"}", "v:1")
 * plus "." when the node itself is a member. Unlike FieldsV1, a member leaf is
 * {".":{}} rather than {}, so membership is one lookup; managed_fields.c
 * translates, and keeps the managedFields entries. Empty nodes are never kept, so
 * json_equal compares sets.
 *
 * A walker carries the position while the object trees are traversed: the
 * FieldsV1 path (for sets and messages), the dotted path with list elements
 * elided (for fl_kind_smp_lookup) and, for custom resources, the schema node (for
 * x-kubernetes-list-type). Type information is never stored; it is asked for at
 * the node where it is needed.
 *
 * Where we differ from upstream, on purpose:
 *  - No Go types, so no zero values: on create, Update entries mark every new map
 *    or list below spec with "." (upstream skips non-pointer structs such as
 *    spec.template and non-omitempty lists such as containers); ownership answers
 *    are the same.
 *  - Built-in kinds know atomic maps by name (selector, labelSelector,
 *    namespaceSelector, nodeSelector) and the list-map keys wider than the
 *    patchMergeKey (ports: +protocol defaulting to TCP; topologySpreadConstraints:
 *    +whenUnsatisfiable); everything else comes from the kind table.
 *  - No version conversion (entries of other apiVersions are compared as they
 *    are), no subresource argument, no cap of ten Update entries, no migration of
 *    client-side-apply's last-applied annotation.
 *  - Live lists with repeated keys are carried over untouched, not reconciled. */
#include "api/apply.h"
#include "api/managed_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "core/json.h"
#include "core/err.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* Deeper nesting than this is refused by apply and not tracked by update; real
 * objects stay far below it. */
#define MAX_DEPTH 96
#define MAX_KEYS 8
#define FIELD_MANAGER_MAX 128

/* v's compact JSON text, as a path element shows a key's value. */
static void add_json(fl_strbuf *b, const json_t *v)
{
    char *s = fl_json_dumps(v, NULL);
    if (s) {
        fl_strbuf_adds(b, s);
        free(s);
    }
}

/* ------------------------------------------------------------------ */
/* Field sets (their form: managed_fields.h)                           */
/* ------------------------------------------------------------------ */

static bool set_has_children(const json_t *n)
{
    return n && json_object_size(n) > (fl_mf_member(n) ? 1u : 0u);
}

static json_t *set_child(json_t *n, const char *pe)
{
    json_t *c = json_object_get(n, pe);
    if (!c) {
        c = json_object();
        json_object_set_new(n, pe, c);
    }
    return c;
}

/* a |= b */
static void set_union(json_t *a, const json_t *b)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)b, key, v) {
        if (!strcmp(key, "."))
            fl_mf_mark(a);
        else
            set_union(set_child(a, key), v);
    }
}

/* a -= b: every member of b stops being a member of a (descendants of a member
 * are separate paths and stay); nodes left empty go. */
static void set_subtract(json_t *a, const json_t *b)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)b, key, v) {
        if (!strcmp(key, ".")) {
            json_object_del(a, ".");
            continue;
        }
        json_t *c = json_object_get(a, key);
        if (!c)
            continue;
        set_subtract(c, v);
        if (fl_mf_empty(c))
            json_object_del(a, key);
    }
}

/* out |= members of both a and b. */
static void set_intersect(const json_t *a, const json_t *b, json_t *out)
{
    if (fl_mf_member(a) && fl_mf_member(b))
        fl_mf_mark(out);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)a, key, v) {
        if (!strcmp(key, "."))
            continue;
        json_t *bc = json_object_get(b, key);
        if (!bc)
            continue;
        json_t *oc = set_child(out, key);
        set_intersect(v, bc, oc);
        if (fl_mf_empty(oc))
            json_object_del(out, key);
    }
}

/* One path element in upstream's human notation: ".name", "[name=\"a\"]", "[=1]". */
static void human_pe(fl_strbuf *b, const char *pe)
{
    if (!strncmp(pe, "f:", 2)) {
        fl_strbuf_adds(b, ".");
        fl_strbuf_adds(b, pe + 2);
    } else if (!strncmp(pe, "k:", 2)) {
        json_t *k = json_loads(pe + 2, 0, NULL);
        const char *key;
        json_t *v;
        bool first = true;
        fl_strbuf_adds(b, "[");
        json_object_foreach(k, key, v) {
            if (!first)
                fl_strbuf_adds(b, ",");
            first = false;
            fl_strbuf_adds(b, key);
            fl_strbuf_adds(b, "=");
            add_json(b, v);
        }
        fl_strbuf_adds(b, "]");
        json_decref(k);
    } else if (!strncmp(pe, "v:", 2)) {
        fl_strbuf_adds(b, "[=");
        fl_strbuf_adds(b, pe + 2);
        fl_strbuf_adds(b, "]");
    } else if (!strncmp(pe, "i:", 2)) {
        fl_strbuf_adds(b, "[");
        fl_strbuf_adds(b, pe + 2);
        fl_strbuf_adds(b, "]");
    }
}

/* Call fn for every member path of set, in the set's (sorted) order. */
typedef void (*member_fn)(const char *path, void *ctx);

static void set_members_rec(const json_t *n, fl_strbuf *b, member_fn fn, void *ctx)
{
    if (fl_mf_member(n) && b->len)
        fn(b->p, ctx);
    size_t nk;
    const char **keys = fl_mf_children(n, &nk);
    for (size_t i = 0; i < nk; i++) {
        size_t mark = b->len;
        human_pe(b, keys[i]);
        set_members_rec(json_object_get(n, keys[i]), b, fn, ctx);
        fl_strbuf_truncate(b, mark);
    }
    free(keys);
}

static void set_members(const json_t *set, member_fn fn, void *ctx)
{
    fl_strbuf b = FL_STRBUF_INIT;
    set_members_rec(set, &b, fn, ctx);
    fl_strbuf_close(&b);
}

/* ------------------------------------------------------------------ */
/* The walker: where we are in the object                              */
/* ------------------------------------------------------------------ */

typedef struct walk {
    const fl_kind *k;
    int n;                               /* depth: number of path elements */
    char *pe[MAX_DEPTH];                 /* FieldsV1 path elements (heap) */
    const json_t *schema[MAX_DEPTH + 1]; /* CRD schema node per depth, NULL = unknown */
    size_t dlen[MAX_DEPTH + 1];          /* dotted-path length per depth */
    char dot[2048];                      /* "spec.template.spec.containers" */
    char *err;                           /* first error, heap */
} walk;

static void walk_init(walk *w, const fl_kind *k)
{
    memset(w, 0, sizeof(*w));
    w->k = k;
    if (k && k->dynamic) {
        const json_t *s = json_object_get(k->crd_version, "schema");
        w->schema[0] = json_object_get(s, "openAPIV3Schema");
    }
}

static void walk_close(walk *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->pe[i]);
    free(w->err);
}

static bool in_metadata(const walk *w) { return w->n >= 1 && !strcmp(w->pe[0], "f:metadata"); }

/* Descend by pe (heap, taken over) with `field` appended to the dotted path (NULL
 * for a list element) and schema child `s`. False when too deep. */
static bool walk_push(walk *w, char *pe, const char *field, const json_t *s)
{
    size_t dl = w->dlen[w->n];
    size_t fl = field ? strlen(field) + (dl ? 1 : 0) : 0;
    if (w->n >= MAX_DEPTH || dl + fl + 1 > sizeof(w->dot)) {
        free(pe);
        if (!w->err)
            w->err = fl_asprintf("%s: object is nested too deeply", w->dot[0] ? w->dot : "object");
        return false;
    }
    if (field) {
        if (dl)
            w->dot[dl++] = '.';
        memcpy(w->dot + dl, field, strlen(field) + 1);
        dl += strlen(field);
    }
    w->pe[w->n++] = pe;
    w->dlen[w->n] = dl;
    w->schema[w->n] = s;
    return true;
}

static void walk_pop(walk *w)
{
    free(w->pe[--w->n]);
    w->dot[w->dlen[w->n]] = '\0';
}

static const json_t *schema_field(const walk *w, const char *name)
{
    const json_t *s = w->schema[w->n];
    if (!s)
        return NULL;
    const json_t *c = json_object_get(json_object_get(s, "properties"), name);
    if (c)
        return c;
    c = json_object_get(s, "additionalProperties");
    return json_is_object(c) ? c : NULL;
}

static bool push_field(walk *w, const char *name)
{
    return walk_push(w, fl_cat("f:", name, NULL), name, schema_field(w, name));
}

static bool push_item(walk *w, char *pe)
{
    const json_t *s = w->schema[w->n];
    return walk_push(w, pe, NULL, s ? json_object_get(s, "items") : NULL);
}

/* The current path in upstream's notation (heap). */
static char *walk_human(const walk *w)
{
    fl_strbuf b = FL_STRBUF_INIT;
    for (int i = 0; i < w->n; i++)
        human_pe(&b, w->pe[i]);
    if (!b.len)
        fl_strbuf_adds(&b, ".");
    return fl_strbuf_take(&b);
}

static void walk_fail(walk *w, const char *fmt, const char *a, size_t idx)
{
    if (w->err)
        return;
    char *where = walk_human(w);
    char *what = fl_asprintf(fmt, idx, a);
    w->err = fl_asprintf("%s: %s", where, what);
    free(where);
    free(what);
}

/* Insert the current path into set. The root is never a member. */
static void mark_here(const walk *w, json_t *set)
{
    if (w->n == 0)
        return;
    json_t *node = set;
    for (int i = 0; i < w->n; i++)
        node = set_child(node, w->pe[i]);
    fl_mf_mark(node);
}

/* Fields never tracked: apiVersion/kind, and ObjectMeta fields the server owns or
 * that identify the object (upstream's stripMeta set, plus deletion fields). */
static const char *const untracked_meta[] = {
    "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "selfLink",
    "managedFields", "clusterName", "deletionTimestamp", "deletionGracePeriodSeconds", NULL,
};

static bool untracked(const walk *w, const char *key)
{
    if (w->n == 0)
        return !strcmp(key, "apiVersion") || !strcmp(key, "kind");
    if (w->n == 1 && in_metadata(w))
        for (int i = 0; untracked_meta[i]; i++)
            if (!strcmp(key, untracked_meta[i]))
                return true;
    return false;
}

/* Untracked metadata that config cannot set either (name/namespace it can). */
static bool server_owned(const walk *w, const char *key)
{
    return untracked(w, key) && w->n == 1 && strcmp(key, "name") && strcmp(key, "namespace");
}

/* Is the object at the current position a struct field (vs. a map entry)? A map
 * entry holding a non-empty object owns itself ("."), as upstream. Built-in kinds
 * have no map-of-object fields we apply, so only CRD schemas say "map". */
static bool declared(const walk *w, const char *key)
{
    if (!w->k || !w->k->dynamic || in_metadata(w) || w->n == 0)
        return true;
    const json_t *s = w->schema[w->n];
    return s && json_object_get(json_object_get(s, "properties"), key);
}

/* Maps replaced as a whole: +structType=atomic LabelSelector, +mapType=atomic
 * nodeSelector and Service selector for built-ins; x-kubernetes-map-type for CRDs. */
static bool map_atomic(const walk *w)
{
    if (w->n == 0 || in_metadata(w))
        return false;
    if (w->k && w->k->dynamic) {
        const json_t *s = w->schema[w->n];
        const char *t = json_string_value(json_object_get(s, "x-kubernetes-map-type"));
        return t && !strcmp(t, "atomic");
    }
    const char *last = strrchr(w->dot, '.');
    last = last ? last + 1 : w->dot;
    return !strcmp(last, "selector") || !strcmp(last, "labelSelector") || !strcmp(last, "namespaceSelector") ||
           !strcmp(last, "nodeSelector");
}

enum { L_ATOMIC, L_SET, L_MAP };

typedef struct lmeta {
    int type;
    int nkeys;
    const char *keys[MAX_KEYS];
    const json_t *defs[MAX_KEYS]; /* schema defaults of key fields (CRDs) */
    const char *defstr[MAX_KEYS]; /* string defaults (built-ins) */
} lmeta;

static void add_key(lmeta *m, const char *key, const char *def)
{
    if (m->nkeys < MAX_KEYS) {
        m->defstr[m->nkeys] = def;
        m->keys[m->nkeys++] = key;
    }
}

/* How the list at the current position merges. */
static void list_meta(const walk *w, lmeta *m)
{
    memset(m, 0, sizeof(*m));
    if (in_metadata(w) && w->n == 2) {
        /* ObjectMeta is the same for every kind: +listType=set finalizers,
         * +listType=map ownerReferences keyed by uid; the rest are atomic. */
        if (!strcmp(w->pe[1], "f:finalizers")) {
            m->type = L_SET;
        } else if (!strcmp(w->pe[1], "f:ownerReferences")) {
            m->type = L_MAP;
            add_key(m, "uid", NULL);
        }
        return;
    }
    if (!w->k)
        return;
    if (w->k->dynamic) {
        const json_t *s = w->schema[w->n];
        const char *t = json_string_value(json_object_get(s, "x-kubernetes-list-type"));
        if (t && !strcmp(t, "set")) {
            m->type = L_SET;
        } else if (t && !strcmp(t, "map")) {
            const json_t *props = json_object_get(json_object_get(s, "items"), "properties");
            size_t i;
            json_t *key;
            json_array_foreach(json_object_get(s, "x-kubernetes-list-map-keys"), i, key) {
                if (!json_is_string(key) || m->nkeys >= MAX_KEYS)
                    continue;
                m->defs[m->nkeys] = json_object_get(json_object_get(props, json_string_value(key)), "default");
                add_key(m, json_string_value(key), NULL);
            }
            m->type = m->nkeys ? L_MAP : L_ATOMIC;
        }
        return;
    }
    fl_smp_meta sm;
    memset(&sm, 0, sizeof(sm));
    if (!fl_kind_smp_lookup((void *)w->k, w->dot, &sm) || !sm.merge)
        return;
    if (!sm.merge_key) {
        m->type = L_SET;
        return;
    }
    m->type = L_MAP;
    add_key(m, sm.merge_key, NULL);
    /* Where upstream's +listMapKey set is wider than the patchMergeKey, with the
     * OpenAPI default that fills an omitted key field. */
    const char *last = strrchr(w->dot, '.');
    last = last ? last + 1 : w->dot;
    if (!strcmp(sm.merge_key, "containerPort") || (!strcmp(sm.merge_key, "port") && !strcmp(last, "ports")))
        add_key(m, "protocol", "TCP");
    else if (!strcmp(sm.merge_key, "topologyKey") && !strcmp(last, "topologySpreadConstraints"))
        add_key(m, "whenUnsatisfiable", NULL);
}

/* The FieldsV1 element naming list item `item` (heap), or NULL with w->err set. */
static char *item_pe(walk *w, const lmeta *m, const json_t *item, size_t idx)
{
    if (m->type == L_SET) {
        if (json_is_object(item) || json_is_array(item)) {
            walk_fail(w, "element %zu: associative list without keys has an element that's a %s", "map or list",
                      idx);
            return NULL;
        }
        char *s = fl_json_dumps(item, NULL);
        char *pe = fl_asprintf("v:%s", s ? s : "null");
        free(s);
        return pe;
    }
    if (!json_is_object(item)) {
        walk_fail(w, "element %zu: associative list with keys may not have %s elements", "non-map", idx);
        return NULL;
    }
    json_t *key = json_object();
    for (int i = 0; i < m->nkeys; i++) {
        json_t *v = json_object_get(item, m->keys[i]);
        if (!v && m->defs[i])
            v = (json_t *)m->defs[i];
        if (v) {
            json_object_set(key, m->keys[i], v);
        } else if (m->defstr[i]) {
            json_object_set_new(key, m->keys[i], json_string(m->defstr[i]));
        } else {
            walk_fail(w,
                      "element %zu: associative list with keys has an element that omits key field \"%s\" "
                      "(and doesn't have default value)",
                      m->keys[i], idx);
            json_decref(key);
            return NULL;
        }
    }
    char *s = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(key);
    char *pe = fl_asprintf("k:%s", s ? s : "{}");
    free(s);
    return pe;
}

static bool is_key_field(const lmeta *m, const char *field)
{
    for (int i = 0; m && i < m->nkeys; i++)
        if (!strcmp(m->keys[i], field))
            return true;
    return false;
}

/* Index a list: pes[i] = element i's path element (NULL when it has none, or is a
 * repeat of an earlier one); idx maps element -> first index. Returns false (w->err
 * set) on a bad element when strict, or on a duplicate when strict. */
static bool list_index(walk *w, const lmeta *m, const json_t *arr, bool strict, char ***pes_out, json_t **idx_out)
{
    size_t n = json_array_size(arr);
    char **pes = fl_calloc(n + 1, sizeof(*pes));
    json_t *idx = json_object();
    bool ok = true;
    char *saved = w->err;
    if (!strict)
        w->err = NULL;
    for (size_t i = 0; i < n && ok; i++) {
        char *pe = item_pe(w, m, json_array_get(arr, i), i);
        if (!pe) {
            if (strict)
                ok = false;
            else {
                free(w->err);
                w->err = NULL;
            }
            continue;
        }
        if (json_object_get(idx, pe)) {
            if (strict) {
                fl_strbuf b = FL_STRBUF_INIT;
                human_pe(&b, pe);
                walk_fail(w, "element %zu: duplicate entries for key %s", fl_strbuf_str(&b), i);
                fl_strbuf_close(&b);
                ok = false;
            }
            free(pe);
            continue;
        }
        json_object_set_new(idx, pe, json_integer((json_int_t)i));
        pes[i] = pe;
    }
    if (!strict)
        w->err = saved;
    *pes_out = pes;
    *idx_out = idx;
    return ok;
}

static void pes_free(char **pes, size_t n)
{
    for (size_t i = 0; pes && i < n; i++)
        free(pes[i]);
    free(pes);
}

/* ------------------------------------------------------------------ */
/* Field set of an applied configuration                               */
/* ------------------------------------------------------------------ */

static int fs_walk(walk *w, const json_t *v, json_t *set)
{
    if (json_is_object(v)) {
        if (map_atomic(w)) {
            mark_here(w, set);
            return 0;
        }
        const char *key;
        json_t *c;
        json_object_foreach((json_t *)v, key, c) {
            if (untracked(w, key))
                continue;
            bool decl = declared(w, key);
            if (!push_field(w, key))
                return FL_EINVAL;
            int rc = fs_walk(w, c, set);
            if (!rc && (json_is_null(c) || (json_is_object(c) && !json_object_size(c)) || !decl))
                mark_here(w, set);
            walk_pop(w);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (json_is_array(v)) {
        lmeta m;
        list_meta(w, &m);
        if (m.type == L_ATOMIC) {
            mark_here(w, set);
            return 0;
        }
        char **pes;
        json_t *idx;
        size_t n = json_array_size(v);
        int rc = list_index(w, &m, v, true, &pes, &idx) ? 0 : FL_EINVAL;
        for (size_t i = 0; i < n && !rc; i++) {
            char *pe = pes[i];
            pes[i] = NULL;
            if (!push_item(w, pe)) {
                rc = FL_EINVAL;
                break;
            }
            if (m.type == L_MAP)
                rc = fs_walk(w, json_array_get(v, i), set);
            mark_here(w, set);
            walk_pop(w);
        }
        pes_free(pes, n);
        json_decref(idx);
        return rc;
    }
    mark_here(w, set);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Merge config into the live object                                   */
/* ------------------------------------------------------------------ */

static int merge_obj(walk *w, json_t *l, const json_t *r);

/* The merged value of one field or list element: l (may be NULL) is live, r is
 * config. Returns a new reference, or NULL for "absent" (r is null). */
static int merge_val(walk *w, const json_t *l, const json_t *r, json_t **out);

static int merge_list(walk *w, const lmeta *m, const json_t *l, const json_t *r, json_t **out)
{
    size_t nl = json_array_size(l), nr = json_array_size(r);
    char **lp = NULL, **rp = NULL;
    json_t *li = NULL, *ri = NULL, *res = json_array();
    char *done = fl_calloc(nr + 1, 1);
    int rc = 0;
    /* config must be well-formed; live elements without a key (or repeated) are
     * carried over untouched rather than lost */
    if (!list_index(w, m, r, true, &rp, &ri)) {
        rc = FL_EINVAL;
        goto out;
    }
    list_index(w, m, l, false, &lp, &li);
    /* Order: items in both lists come in config's order; live-only items keep
     * their place relative to them; config-only items go where config puts them.
     * rp[shared] is the next item of config that live also has. */
    size_t shared = 0;
    while (shared < nr && !json_object_get(li, rp[shared]))
        shared++;
    size_t i = 0, j = 0;
    while (!rc && (i < nl || j < nr)) {
        if (i < nl) {
            const char *lpe = lp[i];
            json_t *rj = lpe ? json_object_get(ri, lpe) : NULL;
            if (!rj) { /* live only */
                json_array_append(res, json_array_get(l, i++));
                continue;
            }
            size_t at = (size_t)json_integer_value(rj);
            if (j < nr && at == j) {
                i++; /* the same element on both sides: merged below */
            } else if (done[at] || (shared < nr && strcmp(rp[shared], lpe))) {
                i++; /* placed already, or placed when config reaches it */
                continue;
            }
        }
        if (j >= nr)
            break;
        json_t *lj = json_object_get(li, rp[j]);
        const json_t *lv = lj ? json_array_get(l, (size_t)json_integer_value(lj)) : NULL;
        json_t *mv = NULL;
        if (!push_item(w, fl_strdup(rp[j]))) {
            rc = FL_EINVAL;
            break;
        }
        if (m->type == L_MAP)
            rc = merge_val(w, lv, json_array_get(r, j), &mv);
        else
            mv = fl_json_deep_copy(json_array_get(r, j));
        walk_pop(w);
        if (mv)
            json_array_append_new(res, mv);
        done[j] = 1;
        if (shared < nr && !strcmp(rp[shared], rp[j]))
            for (shared++; shared < nr && !json_object_get(li, rp[shared]); shared++)
                ;
        j++;
    }
out:
    free(done);
    pes_free(lp, nl);
    pes_free(rp, nr);
    json_decref(li);
    json_decref(ri);
    if (rc) {
        json_decref(res);
        res = NULL;
    }
    *out = res;
    return rc;
}

static int merge_val(walk *w, const json_t *l, const json_t *r, json_t **out)
{
    *out = NULL;
    if (json_is_null(r))
        return 0;
    if (json_is_object(r) && !map_atomic(w)) {
        json_t *o = json_is_object(l) ? fl_json_deep_copy(l) : json_object();
        int rc = merge_obj(w, o, r);
        if (rc)
            json_decref(o);
        else
            *out = o;
        return rc;
    }
    if (json_is_array(r)) {
        lmeta m;
        list_meta(w, &m);
        if (m.type != L_ATOMIC)
            return merge_list(w, &m, json_is_array(l) ? l : NULL, r, out);
    }
    *out = fl_json_deep_copy(r);
    return 0;
}

/* Merge object r into the mutable object l in place. */
static int merge_obj(walk *w, json_t *l, const json_t *r)
{
    const char *key;
    json_t *rc_v;
    json_object_foreach((json_t *)r, key, rc_v) {
        if (server_owned(w, key))
            continue;
        if (w->n == 0 && !strcmp(key, "metadata") && !json_is_object(rc_v))
            continue; /* "metadata: null" never drops the live metadata */
        if (!push_field(w, key))
            return FL_EINVAL;
        json_t *mv = NULL;
        int rc = merge_val(w, json_object_get(l, key), rc_v, &mv);
        walk_pop(w);
        if (rc)
            return rc;
        if (mv)
            json_object_set_new(l, key, mv);
        else
            json_object_del(l, key);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Prune what the applier stopped applying                             */
/* ------------------------------------------------------------------ */

static bool container_empty(const json_t *v)
{
    return (json_is_object(v) && !json_object_size(v)) || (json_is_array(v) && !json_array_size(v));
}

static void prune_val(walk *w, json_t *v, const json_t *last, const json_t *owned, const lmeta *keys);

/* Decide for one child (key of an object or element of a list) found in `last`:
 * returns true when it must be removed. Recurses otherwise. */
static bool prune_child(walk *w, json_t *child, const json_t *lc, const json_t *oc)
{
    /* Owned by nobody any more, not even below: remove it whole. */
    if (fl_mf_member(lc) && fl_mf_empty(oc))
        return true;
    if (!set_has_children(lc) || !(json_is_object(child) || json_is_array(child)))
        return false;
    bool had = !container_empty(child);
    prune_val(w, child, lc, oc, NULL);
    /* A map or list emptied by pruning goes too, unless someone owns it as such. */
    return had && container_empty(child) && !fl_mf_member(oc);
}

static void prune_val(walk *w, json_t *v, const json_t *last, const json_t *owned, const lmeta *keys)
{
    if (json_is_object(v)) {
        if (map_atomic(w))
            return;
        const char *key;
        json_t *c;
        void *tmp;
        json_object_foreach_safe(v, tmp, key, c) {
            if (untracked(w, key) || is_key_field(keys, key))
                continue;
            char *pe = fl_asprintf("f:%s", key);
            const json_t *lc = json_object_get(last, pe);
            const json_t *oc = owned ? json_object_get(owned, pe) : NULL;
            free(pe);
            if (!lc || !push_field(w, key))
                continue;
            bool drop = prune_child(w, c, lc, oc);
            walk_pop(w);
            if (drop)
                json_object_del(v, key);
        }
        return;
    }
    if (!json_is_array(v))
        return;
    lmeta m;
    list_meta(w, &m);
    if (m.type == L_ATOMIC)
        return;
    for (size_t i = json_array_size(v); i-- > 0;) {
        json_t *item = json_array_get(v, i);
        char *saved = w->err;
        w->err = NULL;
        char *pe = item_pe(w, &m, item, i);
        free(w->err);
        w->err = saved;
        if (!pe)
            continue;
        const json_t *lc = json_object_get(last, pe);
        const json_t *oc = owned ? json_object_get(owned, pe) : NULL;
        if (!lc) {
            free(pe);
            continue;
        }
        if (fl_mf_member(lc) && fl_mf_empty(oc)) {
            free(pe);
            json_array_remove(v, i);
            continue;
        }
        if (m.type == L_MAP && set_has_children(lc) && push_item(w, pe)) {
            /* kept for someone else's fields: its key fields must stay */
            prune_val(w, item, lc, oc, &m);
            walk_pop(w);
        } else if (m.type != L_MAP || !set_has_children(lc)) {
            free(pe);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Compare two versions of an object                                   */
/* ------------------------------------------------------------------ */

typedef struct diff {
    json_t *added, *modified, *removed;
} diff;

enum { C_SCALAR, C_OBJECT, C_ARRAY };

static int vclass(const json_t *v)
{
    return json_is_object(v) ? C_OBJECT : json_is_array(v) ? C_ARRAY : C_SCALAR;
}

static void cmp_leaf(const walk *w, const json_t *l, const json_t *r, diff *d)
{
    if (!l)
        mark_here(w, d->added);
    else if (!r)
        mark_here(w, d->removed);
    else if (!json_equal((json_t *)l, (json_t *)r))
        mark_here(w, d->modified);
}

/* l or r may be NULL (absent on that side), never both. */
static void cmp_val(walk *w, const json_t *l, const json_t *r, diff *d)
{
    if (l == r)
        return; /* one value shared by both versions (the write kept it): nothing changed */
    /* near the top, where a subtree is big and usually unchanged (a Work's manifests while
     * its suspension flips): one comparison, which stops at the first difference, instead of
     * walking it field by field (deeper down that would compare the same values again and
     * again) */
    if (w->n >= 1 && w->n <= 2 && l && r && (json_is_object(l) || json_is_array(l)) && json_equal(l, r))
        return;
    int cls = vclass(r ? r : l);
    if (l && r && vclass(l) != vclass(r))
        cls = C_SCALAR;
    bool both_empty = (!l || container_empty(l)) && (!r || container_empty(r));
    if (cls == C_OBJECT && !map_atomic(w) && !both_empty) {
        const char *key;
        json_t *c;
        json_object_foreach((json_t *)l, key, c) {
            if (untracked(w, key) || !push_field(w, key))
                continue;
            cmp_val(w, c, json_object_get(r, key), d);
            walk_pop(w);
        }
        json_object_foreach((json_t *)r, key, c) {
            if (json_object_get(l, key) || untracked(w, key) || !push_field(w, key))
                continue;
            cmp_val(w, NULL, c, d);
            walk_pop(w);
        }
    } else if (cls == C_ARRAY && !both_empty) {
        lmeta m;
        list_meta(w, &m);
        if (m.type == L_ATOMIC) {
            cmp_leaf(w, l, r, d);
            return;
        }
        size_t nl = json_array_size(l), nr = json_array_size(r);
        char **lp, **rp;
        json_t *li, *ri;
        list_index(w, &m, l, false, &lp, &li);
        list_index(w, &m, r, false, &rp, &ri);
        for (size_t i = 0; i < nl; i++) {
            if (!lp[i])
                continue;
            json_t *rj = json_object_get(ri, lp[i]);
            const json_t *rv = rj ? json_array_get(r, (size_t)json_integer_value(rj)) : NULL;
            if (push_item(w, fl_strdup(lp[i]))) {
                cmp_val(w, json_array_get(l, i), rv, d);
                walk_pop(w);
            }
        }
        for (size_t j = 0; j < nr; j++) {
            if (!rp[j] || json_object_get(li, rp[j]))
                continue;
            if (push_item(w, fl_strdup(rp[j]))) {
                cmp_val(w, NULL, json_array_get(r, j), d);
                walk_pop(w);
            }
        }
        pes_free(lp, nl);
        pes_free(rp, nr);
        json_decref(li);
        json_decref(ri);
    } else {
        cmp_leaf(w, l, r, d);
        return;
    }
    /* A map or list element that appears or disappears is itself added/removed. */
    if (!l)
        mark_here(w, d->added);
    else if (!r)
        mark_here(w, d->removed);
}

static void diff_compute(const fl_kind *k, const json_t *l, const json_t *r, diff *d)
{
    walk w;
    walk_init(&w, k);
    d->added = json_object();
    d->modified = json_object();
    d->removed = json_object();
    cmp_val(&w, l, r, d);
    walk_close(&w);
}

static void diff_free(diff *d)
{
    json_decref(d->added);
    json_decref(d->modified);
    json_decref(d->removed);
}

static const char *now_or_clock(const char *now, char *buf, size_t n)
{
    if (now && *now)
        return now;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

static const char *kind_api_version(const fl_kind *k, const json_t *obj)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    if (av && *av)
        return av;
    return k && k->api_version[0] ? k->api_version : "";
}

/* ------------------------------------------------------------------ */
/* Apply                                                               */
/* ------------------------------------------------------------------ */

typedef struct conflict_ctx {
    json_t *arr;
    const char *manager;
} conflict_ctx;

static void add_conflict(const char *path, void *ctx)
{
    conflict_ctx *c = ctx;
    json_t *o = json_object();
    json_object_set_new(o, "field", json_string(path));
    json_object_set_new(o, "manager", json_string(c->manager));
    json_array_append_new(c->arr, o);
}

static int check_config(const fl_kind *k, const json_t *config, const char *manager, char **msg)
{
    if (!manager || !*manager) {
        *msg = fl_strdup("fieldManager: Required value: field manager is required for apply requests");
        return FL_EINVAL;
    }
    if (!json_is_object(config)) {
        *msg = fl_strdup("the applied configuration must be an object");
        return FL_EINVAL;
    }
    const char *av = json_string_value(json_object_get(config, "apiVersion"));
    const char *kind = json_string_value(json_object_get(config, "kind"));
    if (!av || !*av) {
        *msg = fl_strdup("apiVersion: Required value: apply requires apiVersion and kind");
        return FL_EINVAL;
    }
    if (!kind || !*kind) {
        *msg = fl_strdup("kind: Required value: apply requires apiVersion and kind");
        return FL_EINVAL;
    }
    if (k && k->api_version[0] && strcmp(av, k->api_version)) {
        *msg = fl_asprintf("apiVersion: Invalid value: \"%s\": incorrect version specified in apply patch, "
                           "expected %s",
                           av, k->api_version);
        return FL_EINVAL;
    }
    if (k && k->kind && strcmp(kind, k->kind)) {
        *msg = fl_asprintf("kind: Invalid value: \"%s\": expected %s", kind, k->kind);
        return FL_EINVAL;
    }
    const json_t *meta = json_object_get(config, "metadata");
    if (meta && !json_is_object(meta) && !json_is_null(meta)) {
        *msg = fl_strdup("metadata: Invalid value: must be an object");
        return FL_EINVAL;
    }
    const json_t *mf = json_object_get(meta, "managedFields");
    if (mf && !json_is_null(mf)) {
        *msg = fl_strdup("metadata.managedFields: Invalid value: must be nil in an apply request");
        return FL_EINVAL;
    }
    return 0;
}

int fl_apply(const fl_kind *k, const json_t *cur, const json_t *config, const char *manager, bool force,
             const char *now, json_t **out, json_t **conflicts, char **err)
{
    char *msg = NULL, tbuf[32];
    json_t *newset = json_object(), *merged = NULL, *owned = NULL, *changed = NULL, *cf = NULL;
    fl_mf_list mf = {0};
    diff d = {0};
    walk w;
    int rc;

    *out = NULL;
    if (conflicts)
        *conflicts = NULL;
    if (err)
        *err = NULL;
    walk_init(&w, k);
    if (cur && !json_is_object(cur))
        cur = NULL;
    if ((rc = check_config(k, config, manager, &msg)))
        goto out;

    /* 1. what the manager now claims */
    if ((rc = fs_walk(&w, config, newset)))
        goto fail_walk;

    /* 2. live merged with config (server-owned metadata stays the live one's) */
    merged = cur ? fl_json_deep_copy(cur) : json_object();
    json_object_del(json_object_get(merged, "metadata"), "managedFields");
    if ((rc = merge_obj(&w, merged, config)))
        goto fail_walk;

    /* 3. drop what it stopped applying and nobody else owns */
    fl_mf_decode(json_object_get(json_object_get(cur, "metadata"), "managedFields"), &mf, false);
    ssize_t self = fl_mf_find(&mf, manager, "Apply", NULL);
    owned = fl_json_deep_copy(newset);
    for (size_t i = 0; i < mf.n; i++)
        if ((ssize_t)i != self)
            set_union(owned, mf.e[i].set);
    if (self >= 0)
        prune_val(&w, merged, mf.e[self].set, owned, NULL);

    /* 4. who loses what */
    diff_compute(k, cur, merged, &d);
    changed = fl_json_deep_copy(d.added);
    set_union(changed, d.modified);
    cf = json_array();
    for (size_t i = 0; i < mf.n; i++) {
        if ((ssize_t)i == self)
            continue;
        json_t *x = json_object();
        set_intersect(mf.e[i].set, changed, x);
        if (!fl_mf_empty(x)) {
            conflict_ctx cc = {cf, mf.e[i].manager};
            set_members(x, add_conflict, &cc);
            if (force)
                set_subtract(mf.e[i].set, x);
        }
        json_decref(x);
        set_subtract(mf.e[i].set, d.removed);
    }
    if (json_array_size(cf) && !force) {
        rc = FL_ECONFLICT;
        if (conflicts) {
            *conflicts = cf;
            cf = NULL;
        }
        goto out;
    }

    /* 5. the manager's Apply entry: time moves only when something changed */
    bool noop = fl_mf_empty(changed) && fl_mf_empty(d.removed);
    const char *t = now_or_clock(now, tbuf, sizeof(tbuf));
    const char *av = json_string_value(json_object_get(config, "apiVersion"));
    if (self < 0) {
        fl_mf_add(&mf, manager, "Apply", av, t, newset);
        newset = NULL;
    } else {
        fl_mf_entry *e = &mf.e[self];
        if (!noop || !json_equal(e->set, newset) || strcmp(e->api_version, av)) {
            free(e->time);
            e->time = fl_strdup(t);
        }
        free(e->api_version);
        e->api_version = fl_strdup(av);
        json_decref(e->set);
        e->set = newset;
        newset = NULL;
    }
    fl_mf_store(&mf, merged);
    *out = merged;
    merged = NULL;
    rc = 0;
    goto out;

fail_walk:
    msg = w.err ? w.err : fl_strdup("invalid apply configuration");
    w.err = NULL;
    rc = FL_EINVAL;
out:
    if (err && msg)
        *err = msg;
    else
        free(msg);
    walk_close(&w);
    json_decref(newset);
    json_decref(merged);
    json_decref(owned);
    json_decref(changed);
    json_decref(cf);
    if (d.added)
        diff_free(&d);
    fl_mf_free(&mf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Update                                                              */
/* ------------------------------------------------------------------ */

void fl_managed_fields_update(const fl_kind *k, const json_t *old, json_t *obj, const char *manager,
                              const char *now)
{
    if (!json_is_object(obj))
        return;
    if (!manager || !*manager)
        manager = "unknown";
    if (old && !json_is_object(old))
        old = NULL;
    char tbuf[32];
    fl_mf_list mf = {0};
    diff d = {0};

    const json_t *given = json_object_get(json_object_get(obj, "metadata"), "managedFields");
    if (json_is_array(given) && json_array_size(given))
        fl_mf_decode(given, &mf, true);
    else if (!json_is_array(given))
        fl_mf_decode(json_object_get(json_object_get(old, "metadata"), "managedFields"), &mf, true);
    /* else: an explicit [] resets ownership */

    /* On create, compare against an empty object whose metadata/spec/status exist,
     * as upstream compares against the zero value of the type: those never get a
     * "." of their own. */
    json_t *base = NULL;
    if (!old) {
        base = json_pack("{s:{}, s:{}, s:{}}", "metadata", "spec", "status");
        old = base;
    }
    diff_compute(k, old, obj, &d);
    /* the added set is not needed again: it becomes what changed (a copy would be as big as
     * the object on a create) */
    json_t *changed = d.added;
    d.added = NULL;
    set_union(changed, d.modified);
    const char *av = kind_api_version(k, obj);
    ssize_t self = fl_mf_empty(changed) ? -1 : fl_mf_find(&mf, manager, "Update", av);
    for (size_t i = 0; i < mf.n; i++) {
        fl_mf_entry *e = &mf.e[i];
        /* an entry that owns none of what changed keeps its fields as stored; so does the
         * writer's own when it already owns all that changed */
        if (!e->set && !fl_mf_raw_intersects(e->raw, d.removed) &&
            ((ssize_t)i == self ? fl_mf_raw_contains(e->raw, changed) : !fl_mf_raw_intersects(e->raw, changed)))
            continue;
        set_subtract(fl_mf_set(e), changed);
        set_subtract(fl_mf_set(e), d.removed);
        if ((ssize_t)i == self)
            set_union(e->set, changed);
    }
    if (!fl_mf_empty(changed)) {
        const char *t = now_or_clock(now, tbuf, sizeof(tbuf));
        if (self < 0) {
            fl_mf_add(&mf, manager, "Update", av, t, changed);
            changed = NULL;
        } else {
            free(mf.e[self].time);
            mf.e[self].time = fl_strdup(t);
        }
    }
    fl_mf_store(&mf, obj);
    json_decref(changed);
    json_decref(base);
    diff_free(&d);
    fl_mf_free(&mf);
}

/* ------------------------------------------------------------------ */
/* Default manager name                                                */
/* ------------------------------------------------------------------ */

char *fl_field_manager_default(const char *user_agent)
{
    if (!user_agent)
        return fl_strdup("unknown");
    size_t end = strcspn(user_agent, "/");
    char *s = fl_malloc(FIELD_MANAGER_MAX + 1);
    size_t n = 0;
    for (size_t i = 0; i < end;) {
        unsigned char c = (unsigned char)user_agent[i];
        size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        if (i + len > end)
            break;
        if (c < 0x20 || c == 0x7f) { /* not printable */
            i += len;
            continue;
        }
        if (n + len > FIELD_MANAGER_MAX)
            break;
        memcpy(s + n, user_agent + i, len);
        n += len;
        i += len;
    }
    s[n] = '\0';
    if (!n) {
        free(s);
        return fl_strdup("unknown");
    }
    return s;
}
