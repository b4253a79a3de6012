/* crd_schema.c - pruning, null removal, defaulting and the fieldValidation decision
 * for custom resources, driven by the CRD version's structural schema.
 *
 * The schema is used as the CRD carries it (raw openAPIV3Schema JSON), not converted
 * to a separate structure: "properties", "items", "additionalProperties" (schema or
 * boolean), "default", "nullable" and the x-kubernetes-* flags are read where a walk
 * needs them. The walks mirror the apiextensions-apiserver's algorithms
 * (schema/pruning, schema/defaulting, schema/objectmeta), including their corners:
 * a value under `additionalProperties: true` is pruned as having no schema, and a
 * preserve-unknown node still prunes inside the properties it declares.
 *
 * Recursion follows the value, whose depth jansson's parser bounds (2048 levels),
 * so the walks need no depth guard of their own. */
#include "api/crd_schema.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* ---------------------------------------------------------------------------------
 * Schema accessors. NULL stands for "no schema", as a nil *Structural does upstream.
 */
static const json_t *root_schema(const fl_kind *k)
{
    if (!k || !k->dynamic || !k->crd_version)
        return NULL;
    const json_t *s = json_object_get(json_object_get(k->crd_version, "schema"), "openAPIV3Schema");
    return json_is_object(s) ? s : NULL;
}

static bool flag(const json_t *s, const char *name)
{
    return s && json_is_true(json_object_get(s, name));
}

static const json_t *prop(const json_t *s, const char *key)
{
    const json_t *p = s ? json_object_get(json_object_get(s, "properties"), key) : NULL;
    return json_is_object(p) ? p : NULL;
}

/* additionalProperties: *has is set when it allows extra keys (a schema, or true);
 * the return is the value schema, NULL for `true`. `false` counts as absent (CRD
 * validation forbids it anyway). */
static const json_t *addl(const json_t *s, bool *has)
{
    const json_t *a = s ? json_object_get(s, "additionalProperties") : NULL;
    *has = json_is_object(a) || json_is_true(a);
    return json_is_object(a) ? a : NULL;
}

static const json_t *items(const json_t *s)
{
    const json_t *i = s ? json_object_get(s, "items") : NULL;
    return json_is_object(i) ? i : NULL;
}

/* The schema of an object's field: its property, else the map value schema. */
static const json_t *field_schema(const json_t *s, const char *key)
{
    const json_t *p = prop(s, key);
    bool has;
    return p ? p : addl(s, &has);
}

/* The default a schema declares; a JSON null default is no default (Go decodes it
 * to a nil Default.Object). */
static const json_t *dflt(const json_t *s)
{
    const json_t *d = s ? json_object_get(s, "default") : NULL;
    return d && !json_is_null(d) ? d : NULL;
}

/* A null where the schema does not say nullable: true. */
static bool non_nullable_null(const json_t *v, const json_t *s)
{
    return json_is_null(v) && s && !flag(s, "nullable");
}

static bool meta_field(const char *k)
{
    return !strcmp(k, "apiVersion") || !strcmp(k, "kind") || !strcmp(k, "metadata");
}

/* ---------------------------------------------------------------------------------
 * Paths, built in one growing buffer: ".spec.items[2].bar". Each step returns the length
 * before it, to cut the path back to with fl_strbuf_truncate.
 */
static size_t path_key(fl_strbuf *p, const char *k)
{
    size_t old = p->len;
    fl_strbuf_addc(p, '.');
    fl_strbuf_adds(p, k);
    return old;
}

static size_t path_index(fl_strbuf *p, size_t i)
{
    size_t old = p->len;
    fl_strbuf_printf(p, "[%zu]", i);
    return old;
}

typedef struct {
    fl_strbuf p;
    json_t *found;      /* paths removed, NULL when the caller does not want them */
    const json_t *root; /* the resource: treated as an embedded resource */
} walk;

/* Keeps apiVersion/kind/metadata: an x-kubernetes-embedded-resource node, or the
 * resource root (upstream PruneWithOptions with isResourceRoot). */
static bool embedded(const walk *w, const json_t *v, const json_t *s)
{
    return v == w->root || flag(s, "x-kubernetes-embedded-resource");
}

static void record(walk *w, const char *key)
{
    if (!w->found)
        return;
    size_t s = path_key(&w->p, key);
    json_array_append_new(w->found, json_string(w->p.p));
    fl_strbuf_truncate(&w->p, s);
}

/* ---------------------------------------------------------------------------------
 * Pruning (upstream schema/pruning).
 */
static void prune(walk *w, json_t *v, const json_t *s);

/* Under x-kubernetes-preserve-unknown-fields: keep undeclared keys, but prune
 * inside the declared ones. */
static void skip_prune(walk *w, json_t *v, const json_t *s)
{
    if (!s)
        return;
    if (json_is_object(v)) {
        bool emb = embedded(w, v, s), has;
        const json_t *as = addl(s, &has);
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) {
            if (emb && meta_field(k))
                continue;
            const json_t *p = prop(s, k);
            if (!p && !has)
                continue;
            size_t o = path_key(&w->p, k);
            prune(w, c, p ? p : as);
            fl_strbuf_truncate(&w->p, o);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            size_t o = path_index(&w->p, i);
            skip_prune(w, e, items(s));
            fl_strbuf_truncate(&w->p, o);
        }
    }
}

static void prune(walk *w, json_t *v, const json_t *s)
{
    if (flag(s, "x-kubernetes-preserve-unknown-fields")) {
        skip_prune(w, v, s);
        return;
    }
    if (json_is_object(v)) {
        if (!s) {
            const char *k;
            json_t *c;
            json_object_foreach(v, k, c)
                record(w, k);
            json_object_clear(v);
            return;
        }
        bool emb = embedded(w, v, s), has;
        const json_t *as = addl(s, &has);
        const char *k;
        json_t *c;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, c) {
            if (emb && meta_field(k))
                continue;
            const json_t *p = prop(s, k);
            if (p || has) {
                size_t o = path_key(&w->p, k);
                prune(w, c, p ? p : as);
                fl_strbuf_truncate(&w->p, o);
            } else {
                if (!meta_field(k) || w->p.len > 0)
                    record(w, k);
                json_object_del(v, k);
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            size_t o = path_index(&w->p, i);
            prune(w, e, items(s));
            fl_strbuf_truncate(&w->p, o);
        }
    }
}

/* Remove nulls of non-nullable fields that have no default (upstream
 * defaulting.PruneNonNullableNullsWithoutDefaults). Not reported. */
static void prune_nulls(json_t *v, const json_t *s, bool root)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, c) {
            if (root && meta_field(k))
                continue; /* the server's, see the header */
            const json_t *fs = field_schema(s, k);
            if (non_nullable_null(c, fs) && !dflt(fs))
                json_object_del(v, k);
            else
                prune_nulls(c, fs, false);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
            prune_nulls(e, items(s), false);
    }
}

/* ---------------------------------------------------------------------------------
 * Embedded ObjectMeta (upstream schema/objectmeta): the metadata of an
 * x-kubernetes-embedded-resource object keeps only what ObjectMeta can hold; the
 * rest is dropped and reported, as a strict decode into ObjectMeta would.
 */
static const char *const objectmeta_keys[] = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields", NULL,
};
static const char *const ownerref_keys[] = {
    "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion", NULL,
};
static const char *const managedfields_keys[] = {
    "manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource", NULL,
};

static bool in_list(const char *const *list, const char *k)
{
    for (; *list; list++)
        if (!strcmp(*list, k))
            return true;
    return false;
}

static void drop_unknown_keys(walk *w, json_t *o, const char *const *known)
{
    const char *k;
    json_t *c;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, c) {
        if (in_list(known, k))
            continue;
        record(w, k);
        json_object_del(o, k);
    }
}

static void coerce_meta(walk *w, json_t *meta)
{
    if (!json_is_object(meta))
        return; /* a wrong type is the type checker's to report */
    drop_unknown_keys(w, meta, objectmeta_keys);
    static const struct {
        const char *list;
        const char *const *keys;
    } nested[] = {{"ownerReferences", ownerref_keys}, {"managedFields", managedfields_keys}};
    for (size_t n = 0; n < sizeof nested / sizeof nested[0]; n++) {
        size_t o = path_key(&w->p, nested[n].list);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(meta, nested[n].list), i, e) {
            if (!json_is_object(e))
                continue;
            size_t oi = path_index(&w->p, i);
            drop_unknown_keys(w, e, nested[n].keys);
            fl_strbuf_truncate(&w->p, oi);
        }
        fl_strbuf_truncate(&w->p, o);
    }
}

/* Walks declared structure only (properties, map values, items), like upstream's
 * Coerce; the root's own metadata is the server's business. */
static void coerce(walk *w, json_t *v, const json_t *s, bool root)
{
    if (!s)
        return;
    if (json_is_object(v)) {
        if (!root && flag(s, "x-kubernetes-embedded-resource")) {
            size_t o = path_key(&w->p, "metadata");
            coerce_meta(w, json_object_get(v, "metadata"));
            fl_strbuf_truncate(&w->p, o);
        }
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) {
            const json_t *fs = field_schema(s, k);
            if (!fs)
                continue;
            size_t o = path_key(&w->p, k);
            coerce(w, c, fs, false);
            fl_strbuf_truncate(&w->p, o);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            size_t o = path_index(&w->p, i);
            coerce(w, e, items(s), false);
            fl_strbuf_truncate(&w->p, o);
        }
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append the strings of src to dst, sorted bytewise (Go's sort.Strings order). */
static void append_sorted(json_t *dst, json_t *src)
{
    size_t n = json_array_size(src);
    if (!n)
        return;
    const char **v = fl_malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(src, i));
    qsort(v, n, sizeof *v, cmp_str);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(dst, json_string(v[i]));
    free(v);
}

/* ---------------------------------------------------------------------------------
 * Built-in and Karmada kinds: their generated field table (kinds_schema.c) stands for
 * the schema, and what it does not name is what kube-apiserver's typed decode drops.
 * With `report` the walk only lists the fields marked unsupported that obj sets.
 */
static const fl_field *table_field(const fl_field *tab, const char *key)
{
    for (; tab && tab->path; tab++)
        if (!strcmp(tab->path, key))
            return tab;
    return NULL;
}

static void table_walk(walk *w, json_t *o, const fl_field *tab, bool report);

/* Below field f: its object, each object of its list, or each object value of its map. */
static void table_descend(walk *w, json_t *v, const fl_field *f, bool report)
{
    if (!f->sub)
        return;
    if (f->type == FL_F_ARRAY && json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            if (!json_is_object(e))
                continue;
            size_t s = path_index(&w->p, i);
            table_walk(w, e, f->sub, report);
            fl_strbuf_truncate(&w->p, s);
        }
    } else if (f->type == FL_F_MAP && json_is_object(v)) {
        const char *key;
        json_t *e;
        json_object_foreach(v, key, e) {
            if (!json_is_object(e))
                continue;
            size_t s = path_key(&w->p, key);
            table_walk(w, e, f->sub, report);
            fl_strbuf_truncate(&w->p, s);
        }
    } else if (json_is_object(v)) {
        table_walk(w, v, f->sub, report);
    }
}

/* An unsupported field counts as set unless it is null, false, 0, "" or empty. */
static bool is_set(const json_t *v)
{
    if (json_is_object(v))
        return json_object_size(v) > 0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    if (json_is_string(v))
        return json_string_length(v) > 0;
    if (json_is_integer(v))
        return json_integer_value(v) != 0;
    if (json_is_real(v))
        return json_real_value(v) != 0;
    return json_is_true(v);
}

static void table_walk(walk *w, json_t *o, const fl_field *tab, bool report)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, key, v) {
        const fl_field *f = table_field(tab, key);
        if (!f) {
            if (!report) {
                record(w, key);
                json_object_del(o, key);
            }
            continue;
        }
        if (report && f->unsupported && is_set(v))
            record(w, key);
        size_t s = path_key(&w->p, key);
        table_descend(w, v, f, report);
        fl_strbuf_truncate(&w->p, s);
    }
}

void fl_crd_unsupported_fields(const fl_kind *k, const json_t *obj, json_t *out)
{
    if (!k || k->dynamic || !k->fields || !json_is_object(obj) || !json_is_array(out))
        return;
    walk w = {.p = {NULL, 0, 0}, .found = out, .root = obj};
    table_walk(&w, (json_t *)obj, k->fields, true);
    fl_strbuf_close(&w.p);
}

void fl_crd_prune(const fl_kind *k, json_t *obj, json_t *unknown)
{
    if (k && !k->dynamic && k->fields && json_is_object(obj)) {
        walk w = {.p = {NULL, 0, 0}, .found = json_is_array(unknown) ? unknown : NULL, .root = obj};
        table_walk(&w, obj, k->fields, false);
        fl_strbuf_close(&w.p);
        return;
    }
    const json_t *s = root_schema(k);
    if (!s || !json_is_object(obj))
        return;
    bool track = json_is_array(unknown);
    walk w = {.p = {NULL, 0, 0}, .found = track ? json_array() : NULL, .root = obj};

    prune(&w, obj, s);
    prune_nulls(obj, s, true);
    if (track) {
        append_sorted(unknown, w.found);
        json_array_clear(w.found);
    }
    coerce(&w, obj, s, true);
    if (track) {
        json_array_extend(unknown, w.found);
        json_decref(w.found);
    }
    fl_strbuf_close(&w.p);
}

/* ---------------------------------------------------------------------------------
 * Defaulting (upstream schema/defaulting).
 */
static void apply_defaults(json_t *v, const json_t *s)
{
    if (!s)
        return;
    if (json_is_object(v)) {
        /* Absent (or disallowed null) properties that have a default get a copy. */
        const char *k;
        json_t *ps;
        json_object_foreach(json_object_get(s, "properties"), k, ps) {
            const json_t *d = dflt(ps);
            if (!d)
                continue;
            json_t *cur = json_object_get(v, k);
            if (!cur || non_nullable_null(cur, ps))
                json_object_set_new(v, k, fl_json_deep_copy(d));
        }
        /* Then inside every value, defaulted ones included. */
        bool has;
        const json_t *as = addl(s, &has);
        for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
            const char *key = json_object_iter_key(it);
            json_t *c = json_object_iter_value(it);
            const json_t *p = prop(s, key);
            if (p) {
                apply_defaults(c, p);
            } else if (as) {
                if (non_nullable_null(c, as) && dflt(as)) {
                    json_object_iter_set_new(v, it, fl_json_deep_copy(dflt(as)));
                    c = json_object_iter_value(it);
                }
                apply_defaults(c, as);
            }
        }
    } else if (json_is_array(v)) {
        const json_t *is = items(s);
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            if (non_nullable_null(e, is) && dflt(is)) {
                json_array_set_new(v, i, fl_json_deep_copy(dflt(is)));
                e = json_array_get(v, i);
            }
            apply_defaults(e, is);
        }
    }
}

void fl_crd_default(const fl_kind *k, json_t *obj)
{
    const json_t *s = root_schema(k);
    if (s && json_is_object(obj))
        apply_defaults(obj, s);
}

/* ---------------------------------------------------------------------------------
 * Duplicate keys in a JSON body. jansson either refuses them or keeps the last value
 * silently; this scan of the (already valid) text names them, for fieldValidation.
 */
typedef struct {
    const char *s;
    size_t n, i;
    int depth;
    fl_strbuf path;
    json_t *out;
} dup_scan;

static void dup_ws(dup_scan *d)
{
    while (d->i < d->n && (d->s[d->i] == ' ' || d->s[d->i] == '\t' || d->s[d->i] == '\n' || d->s[d->i] == '\r'))
        d->i++;
}

/* Step over the string at d->i (its opening quote); returns its decoded value when
 * want (heap), else NULL. */
static char *dup_string(dup_scan *d, bool want)
{
    size_t start = d->i++;
    while (d->i < d->n && d->s[d->i] != '"')
        d->i += d->s[d->i] == '\\' ? 2 : 1;
    d->i++;
    if (!want || d->i > d->n)
        return NULL;
    json_t *v = json_loadb(d->s + start, d->i - start, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    char *out = json_is_string(v) ? fl_strdup(json_string_value(v)) : NULL;
    json_decref(v);
    return out;
}

static void dup_value(dup_scan *d);

static void dup_object(dup_scan *d)
{
    json_t *seen = json_object();
    d->i++;
    for (;;) {
        dup_ws(d);
        if (d->i >= d->n || d->s[d->i] == '}')
            break;
        if (d->s[d->i] == ',') {
            d->i++;
            continue;
        }
        char *key = dup_string(d, true);
        dup_ws(d);
        if (d->i < d->n && d->s[d->i] == ':')
            d->i++;
        size_t old = path_key(&d->path, key ? key : "");
        if (key && json_object_get(seen, key))
            json_array_append_new(d->out, json_sprintf("duplicate field \"%s\"", d->path.p + 1));
        else if (key)
            json_object_set_new(seen, key, json_true());
        dup_value(d);
        fl_strbuf_truncate(&d->path, old);
        free(key);
    }
    d->i++;
    json_decref(seen);
}

static void dup_array(dup_scan *d)
{
    size_t idx = 0;
    d->i++;
    for (;;) {
        dup_ws(d);
        if (d->i >= d->n || d->s[d->i] == ']')
            break;
        if (d->s[d->i] == ',') {
            d->i++;
            continue;
        }
        size_t old = path_index(&d->path, idx++);
        dup_value(d);
        fl_strbuf_truncate(&d->path, old);
    }
    d->i++;
}

static void dup_value(dup_scan *d)
{
    dup_ws(d);
    if (d->i >= d->n)
        return;
    char c = d->s[d->i];
    if ((c == '{' || c == '[') && d->depth >= 2048) {
        d->i = d->n; /* deeper than any decoder accepts: give up */
        return;
    }
    d->depth++;
    if (c == '{')
        dup_object(d);
    else if (c == '[')
        dup_array(d);
    else if (c == '"')
        dup_string(d, false);
    else
        while (d->i < d->n && !strchr(",]} \t\r\n", d->s[d->i]))
            d->i++;
    d->depth--;
}

void fl_crd_duplicate_fields(const char *buf, size_t len, json_t *out)
{
    if (!buf || !json_is_array(out))
        return;
    dup_scan d = {.s = buf, .n = len, .i = 0, .depth = 0, .path = {NULL, 0, 0}, .out = out};
    fl_strbuf_adds(&d.path, "");
    dup_value(&d);
    fl_strbuf_close(&d.path);
}

/* ---------------------------------------------------------------------------------
 * fieldValidation.
 */

/* One strict-decoding complaint: a path from fl_crd_prune(), or a caller's
 * complete message. */
static void add_entry(fl_strbuf *b, const char *e)
{
    if (e[0] == '.') {
        fl_strbuf_adds(b, "unknown field \"");
        fl_strbuf_adds(b, e + 1);
        fl_strbuf_adds(b, "\"");
    } else {
        fl_strbuf_adds(b, e);
    }
}

/* Go's %q for the bad value, close enough for a query parameter: quotes,
 * backslashes and control bytes escaped, other bytes as they are. */
static void add_quoted(fl_strbuf *b, const char *t)
{
    fl_strbuf_adds(b, "\"");
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        switch (*p) {
        case '"': fl_strbuf_adds(b, "\\\""); break;
        case '\\': fl_strbuf_adds(b, "\\\\"); break;
        case '\n': fl_strbuf_adds(b, "\\n"); break;
        case '\r': fl_strbuf_adds(b, "\\r"); break;
        case '\t': fl_strbuf_adds(b, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fl_strbuf_printf(b, "\\x%02x", *p);
            else
                fl_strbuf_addc(b, (char)*p);
        }
    }
    fl_strbuf_adds(b, "\"");
}

int fl_crd_field_validation(const char *mode, const json_t *unknown, char **warning, char **err)
{
    *warning = NULL;
    *err = NULL;
    /* Upstream (endpoints/handlers/rest.go fieldValidation()): "" means Warn. */
    if (!mode || !*mode)
        mode = "Warn";
    bool strict = !strcmp(mode, "Strict"), warn = !strcmp(mode, "Warn");
    if (!strict && !warn && strcmp(mode, "Ignore")) {
        fl_strbuf b = FL_STRBUF_INIT;
        fl_strbuf_adds(&b, "fieldValidation: Unsupported value: ");
        add_quoted(&b, mode);
        fl_strbuf_adds(&b, ": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"");
        *err = fl_strbuf_take(&b);
        return FL_EINVAL;
    }
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(unknown, i, e)
        if (json_string_value(e))
            n++;
    if (!n || !(strict || warn))
        return 0;

    fl_strbuf b = FL_STRBUF_INIT;
    if (strict)
        fl_strbuf_adds(&b, "strict decoding error: ");
    bool first = true;
    json_array_foreach(unknown, i, e) {
        const char *s = json_string_value(e);
        if (!s)
            continue;
        if (!first)
            fl_strbuf_adds(&b, strict ? ", " : "\n");
        first = false;
        add_entry(&b, s);
    }
    if (strict) {
        *err = fl_strbuf_take(&b);
        return FL_EINVAL;
    }
    *warning = fl_strbuf_take(&b);
    return 0;
}
