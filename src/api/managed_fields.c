/* managed_fields.c - metadata.managedFields: its entries read, looked up, changed and
 * written back, and field sets turned between their stored FieldsV1 form and the form
 * apply.c computes with (see managed_fields.h). The merge, prune and compare that decide
 * what an apply or update changes are apply.c's; this file is the bookkeeping around them:
 * who owns which set, kept in upstream's order and stored as the apiserver stores it. */
#include "api/managed_fields.h"

#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* FieldsV1 -> internal. Anything that is not an object is ignored: a corrupt
 * entry must not stop writes to the object. */
static json_t *fields_decode(const json_t *f)
{
    json_t *n = json_object();
    if (!json_is_object(f))
        return n;
    if (json_object_size(f) == 0) {
        fl_mf_mark(n);
        return n;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)f, key, v) {
        if (!strcmp(key, ".")) {
            fl_mf_mark(n);
            continue;
        }
        json_t *c = fields_decode(v);
        if (fl_mf_empty(c))
            json_decref(c);
        else
            json_object_set_new(n, key, c);
    }
    return n;
}

const char **fl_mf_children(const json_t *n, size_t *nk)
{
    const char **keys = fl_malloc((json_object_size(n) + 1) * sizeof(*keys));
    const char *key;
    json_t *v;
    *nk = 0;
    json_object_foreach((json_t *)n, key, v) {
        if (strcmp(key, "."))
            keys[(*nk)++] = key;
    }
    qsort(keys, *nk, sizeof(*keys), cmp_str);
    return keys;
}

/* internal -> FieldsV1, "." first and children sorted, as the apiserver writes it. */
static json_t *fields_encode(const json_t *n)
{
    json_t *o = json_object();
    size_t nk;
    const char **keys = fl_mf_children(n, &nk);
    if (fl_mf_member(n) && nk)
        json_object_set_new(o, ".", json_object());
    for (size_t i = 0; i < nk; i++)
        json_object_set_new(o, keys[i], fields_encode(json_object_get(n, keys[i])));
    free(keys);
    return o;
}

static char *jstr_dup(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return fl_strdup(s ? s : "");
}

void fl_mf_add(fl_mf_list *l, const char *manager, const char *op, const char *api_version, const char *time,
               json_t *set)
{
    l->e = fl_realloc(l->e, (l->n + 1) * sizeof(*l->e));
    fl_mf_entry *e = &l->e[l->n++];
    e->manager = fl_strdup(manager);
    e->operation = fl_strdup(op);
    e->api_version = fl_strdup(api_version ? api_version : "");
    e->time = fl_strdup(time ? time : "");
    e->subresource = fl_strdup("");
    e->set = set;
    e->raw = NULL;
    e->orig = NULL;
}

/* lazy: each entry's set is decoded only when fl_mf_set asks for it (an entry a write does not
 * touch is stored again as it was) */
void fl_mf_decode(const json_t *arr, fl_mf_list *l, bool lazy)
{
    l->e = NULL;
    l->n = 0;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        if (!json_is_object(o) || !json_is_string(json_object_get(o, "manager")))
            continue;
        l->e = fl_realloc(l->e, (l->n + 1) * sizeof(*l->e));
        fl_mf_entry *e = &l->e[l->n++];
        e->manager = jstr_dup(o, "manager");
        e->operation = jstr_dup(o, "operation");
        e->api_version = jstr_dup(o, "apiVersion");
        e->time = jstr_dup(o, "time");
        e->subresource = jstr_dup(o, "subresource");
        json_t *f = json_object_get(o, "fieldsV1");
        e->set = lazy ? NULL : fields_decode(f);
        e->raw = lazy ? json_incref(f) : NULL;
        e->orig = json_incref(o);
    }
}

json_t *fl_mf_set(fl_mf_entry *e)
{
    if (!e->set) {
        e->set = fields_decode(e->raw);
        json_decref(e->raw);
        e->raw = NULL;
    }
    return e->set;
}

/* Is the FieldsV1 f (a node of it) itself a member (as fields_decode reads it)? */
static bool raw_member(const json_t *f)
{
    return json_is_object(f) && (json_object_size(f) == 0 || json_object_get(f, "."));
}

/* Does the FieldsV1 f share a member with set s (internal form)? */
bool fl_mf_raw_intersects(const json_t *f, const json_t *s)
{
    if (fl_mf_member(s) && raw_member(f))
        return true;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)s, key, v) {
        if (strcmp(key, ".")) {
            const json_t *fc = json_is_object(f) ? json_object_get(f, key) : NULL;
            if (fc && fl_mf_raw_intersects(fc, v))
                return true;
        }
    }
    return false;
}

/* Is every member of set s (internal form) a member of the FieldsV1 f? */
bool fl_mf_raw_contains(const json_t *f, const json_t *s)
{
    if (fl_mf_member(s) && !raw_member(f))
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)s, key, v) {
        if (strcmp(key, ".") && !fl_mf_raw_contains(json_is_object(f) ? json_object_get(f, key) : NULL, v))
            return false;
    }
    return true;
}

void fl_mf_free(fl_mf_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        fl_mf_entry *e = &l->e[i];
        free(e->manager);
        free(e->operation);
        free(e->api_version);
        free(e->time);
        free(e->subresource);
        json_decref(e->set);
        json_decref(e->raw);
        json_decref(e->orig);
    }
    free(l->e);
    l->e = NULL;
    l->n = 0;
}

ssize_t fl_mf_find(const fl_mf_list *l, const char *manager, const char *op, const char *api_version)
{
    for (size_t i = 0; i < l->n; i++) {
        const fl_mf_entry *e = &l->e[i];
        if (!strcmp(e->manager, manager) && !strcmp(e->operation, op) && !e->subresource[0] &&
            (!api_version || !strcmp(e->api_version, api_version)))
            return (ssize_t)i;
    }
    return -1;
}

/* Upstream's order: operation, then time, manager, apiVersion, subresource. */
static int mf_cmp(const void *a, const void *b)
{
    const fl_mf_entry *p = a, *q = b;
    int c;
    if ((c = strcmp(p->operation, q->operation)) || (c = strcmp(p->time, q->time)) ||
        (c = strcmp(p->manager, q->manager)) || (c = strcmp(p->api_version, q->api_version)))
        return c;
    return strcmp(p->subresource, q->subresource);
}

/* Is the string member key of o what fl_mf_store writes for v ("" meaning: absent)? */
static bool same_opt_str(const json_t *o, const char *key, const char *v)
{
    const json_t *m = json_object_get(o, key);
    return v[0] ? json_is_string(m) && !strcmp(json_string_value(m), v) : !m;
}

/* The entry as mf_store writes it, from e->orig when that is exactly it (an entry this
 * write left alone, or whose time alone moved): most writes change no ownership, and
 * building every entry again was a fifth of what recording them cost. NULL: build it. */
static json_t *mf_reuse(const fl_mf_entry *e)
{
    const json_t *o = e->orig;
    if (!o || e->set || !e->raw || json_object_get(o, "fieldsV1") != e->raw)
        return NULL;
    size_t want = 4 + (e->api_version[0] != 0) + (e->time[0] != 0) + (e->subresource[0] != 0);
    const json_t *ft = json_object_get(o, "fieldsType");
    if (json_object_size(o) != want || !json_is_string(ft) || strcmp(json_string_value(ft), "FieldsV1") ||
        !same_opt_str(o, "manager", e->manager) || !same_opt_str(o, "operation", e->operation) ||
        !e->manager[0] || !e->operation[0] || !same_opt_str(o, "apiVersion", e->api_version) ||
        !same_opt_str(o, "subresource", e->subresource) || !json_object_get(o, "time") != !e->time[0])
        return NULL;
    /* and in upstream's order, as built below */
    static const char *const order[] = {"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1",
                                        "subresource"};
    size_t k = 0;
    for (void *it = json_object_iter((json_t *)o); it; it = json_object_iter_next((json_t *)o, it)) {
        while (k < 7 && strcmp(order[k], json_object_iter_key(it)))
            k++;
        if (k == 7)
            return NULL;
    }
    if (same_opt_str(o, "time", e->time))
        return json_incref((json_t *)o);
    json_t *c = json_copy((json_t *)o);
    json_object_set_new(c, "time", json_string(e->time));
    return c;
}

/* Write entries with a non-empty set into obj's metadata.managedFields. */
void fl_mf_store(fl_mf_list *l, json_t *obj)
{
    if (l->n > 1)
        qsort(l->e, l->n, sizeof(*l->e), mf_cmp);
    json_t *arr = json_array();
    for (size_t i = 0; i < l->n; i++) {
        const fl_mf_entry *e = &l->e[i];
        if (e->set ? fl_mf_empty(e->set) : !json_is_object(e->raw))
            continue;
        json_t *o = mf_reuse(e);
        if (o) {
            json_array_append_new(arr, o);
            continue;
        }
        o = json_object();
        json_object_set_new(o, "manager", json_string(e->manager));
        json_object_set_new(o, "operation", json_string(e->operation));
        if (e->api_version[0])
            json_object_set_new(o, "apiVersion", json_string(e->api_version));
        if (e->time[0])
            json_object_set_new(o, "time", json_string(e->time));
        json_object_set_new(o, "fieldsType", json_string("FieldsV1"));
        json_object_set_new(o, "fieldsV1", e->set ? fields_encode(e->set) : json_incref(e->raw));
        if (e->subresource[0])
            json_object_set_new(o, "subresource", json_string(e->subresource));
        json_array_append_new(arr, o);
    }
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_array_size(arr)) {
        if (json_is_object(meta))
            json_object_del(meta, "managedFields");
        json_decref(arr);
        return;
    }
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(obj, "metadata", meta);
    }
    json_object_set_new(meta, "managedFields", arr);
}
