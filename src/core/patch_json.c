/* patch_json.c - JSON patch (RFC 6902) with JSON Pointer (RFC 6901),
 * application/json-patch+json.
 *
 * The operations run in order against a deep copy of the original; the first
 * failing operation aborts the whole patch, the copy is dropped, and the caller
 * gets one line naming the operation's zero-based index, its verb and the
 * pointer, e.g. "op 1 (replace): path /spec/foo not found". Nothing of the
 * caller's trees is ever modified or shared with the result.
 *
 * Pointers are split into unescaped tokens once per operation (~1 -> '/',
 * ~0 -> '~'). Array tokens must be canonical decimal indexes ("0", "17", never
 * "01" or "+1"); "-" names the slot past the end and is only meaningful as the
 * last token of an "add" (or the target of a move/copy).
 *
 * "copy" is the one operation whose result can outgrow the patch and the
 * original together: each copy of a subtree into itself doubles it, so forty
 * operations would ask for a terabyte. fl_patch_json_limited counts what the
 * copies add and stops before the copy that would pass its bound. */
#include "core/patch.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

/* A parsed JSON pointer: n unescaped tokens. */
typedef struct jptr {
    char **tok;
    size_t n;
} jptr;

static void jptr_free(jptr *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->tok[i]);
    free(p->tok);
    p->tok = NULL;
    p->n = 0;
}

/* Parse an RFC 6901 pointer of len bytes. Returns 0 or FL_EINVAL with *why set
 * to a static reason. */
static int jptr_parse(const char *s, size_t len, jptr *p, const char **why)
{
    p->tok = NULL;
    p->n = 0;
    if (len == 0)
        return 0; /* "" is the whole document */
    if (s[0] != '/') {
        *why = "must be empty or start with '/'";
        return FL_EINVAL;
    }
    if (memchr(s, '\0', len)) {
        *why = "contains a NUL character";
        return FL_EINVAL;
    }
    size_t cap = 0;
    size_t i = 1;
    for (;;) {
        size_t start = i;
        while (i < len && s[i] != '/')
            i++;
        char *t = fl_malloc(i - start + 1);
        size_t o = 0;
        for (size_t k = start; k < i; k++) {
            if (s[k] == '~') {
                if (k + 1 < i && s[k + 1] == '0')
                    t[o++] = '~';
                else if (k + 1 < i && s[k + 1] == '1')
                    t[o++] = '/';
                else {
                    free(t);
                    jptr_free(p);
                    *why = "'~' must be followed by '0' or '1'";
                    return FL_EINVAL;
                }
                k++;
            } else {
                t[o++] = s[k];
            }
        }
        t[o] = '\0';
        if (p->n == cap) {
            cap = cap ? cap * 2 : 4;
            p->tok = fl_realloc(p->tok, cap * sizeof(*p->tok));
        }
        p->tok[p->n++] = t;
        if (i >= len)
            break;
        i++; /* skip '/' */
    }
    return 0;
}

/* True if tok is a canonical array index; writes it to *idx. Indexes beyond
 * SIZE_MAX/2 are reported as such and fail any bounds check later. */
static bool parse_index(const char *tok, size_t *idx)
{
    size_t len = strlen(tok);
    if (len == 0 || (len > 1 && tok[0] == '0'))
        return false;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] < '0' || tok[i] > '9')
            return false;
        if (v > SIZE_MAX / 20)
            v = SIZE_MAX / 2; /* saturate: certainly out of bounds */
        else
            v = v * 10 + (size_t)(tok[i] - '0');
    }
    *idx = v;
    return true;
}

/* Resolve the first n tokens of p against doc. NULL if any step is missing. */
static json_t *jptr_get(json_t *doc, const jptr *p, size_t n)
{
    json_t *cur = doc;
    for (size_t i = 0; i < n && cur; i++) {
        if (json_is_object(cur)) {
            cur = json_object_get(cur, p->tok[i]);
        } else if (json_is_array(cur)) {
            size_t idx;
            if (!parse_index(p->tok[i], &idx) || idx >= json_array_size(cur))
                return NULL;
            cur = json_array_get(cur, idx);
        } else {
            return NULL;
        }
    }
    return cur;
}

/* RFC 6902 numbers are equal when their values are equal, so 1 and 1.0 match;
 * everything else is structural equality (object member order is irrelevant). */
static bool value_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_array(a)) {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!value_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        json_t *va;
        json_object_foreach((json_t *)a, key, va) {
            json_t *vb = json_object_get(b, key);
            if (!vb || !value_equal(va, vb))
                return false;
        }
        return true;
    }
    return json_equal(a, b); /* strings, booleans, null */
}

/* State of one patch run: the working document and the op being applied, so
 * error messages can name it. */
typedef struct jp_run {
    json_t *doc;
    size_t index;
    const char *op;
    char **err;
    size_t max_copied; /* 0: no bound */
    size_t copied;     /* bytes (as encoded, estimated) the copies have added so far */
} jp_run;

static int fail(jp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record "op <index> (<verb>): <message>" as the run's error. Returns FL_EINVAL. */
static int fail(jp_run *r, const char *fmt, ...)
{
    if (!r->err || *r->err)
        return FL_EINVAL;
    char *where = fl_asprintf("op %zu (%s)", r->index, r->op);
    va_list ap;
    va_start(ap, fmt);
    fl_err_vset(r->err, where, fmt, ap);
    va_end(ap);
    free(where);
    return FL_EINVAL;
}

/* Insert value (reference stolen) at p. For arrays an index <= size inserts and
 * "-" appends; for objects the member is set or replaced. */
static int do_add(jp_run *r, const jptr *p, const char *path, json_t *value)
{
    if (p->n == 0) {
        json_decref(r->doc);
        r->doc = value;
        return 0;
    }
    json_t *parent = jptr_get(r->doc, p, p->n - 1);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent)) {
        /* Steals value even on failure (a key that is not valid UTF-8). */
        if (json_object_set_new(parent, last, value) != 0)
            return fail(r, "path %s: invalid member name", path);
        return 0;
    }
    if (json_is_array(parent)) {
        size_t idx, size = json_array_size(parent);
        if (strcmp(last, "-") == 0) {
            json_array_append_new(parent, value);
            return 0;
        }
        if (!parse_index(last, &idx)) {
            json_decref(value);
            return fail(r, "path %s: array index is not a number", path);
        }
        if (idx > size) {
            json_decref(value);
            return fail(r, "path %s: array index out of bounds", path);
        }
        json_array_insert_new(parent, idx, value);
        return 0;
    }
    json_decref(value);
    return fail(r, parent ? "path %s: parent is not an object or array" : "path %s: parent not found", path);
}

/* Detach the value at p; *removed receives it (new reference) when non-NULL. */
static int do_remove(jp_run *r, const jptr *p, const char *path, const char *label,
                     json_t **removed)
{
    if (removed)
        *removed = NULL;
    if (p->n == 0)
        return fail(r, "%s %s: cannot remove the whole document", label, path);
    json_t *parent = jptr_get(r->doc, p, p->n - 1);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent)) {
        json_t *v = json_object_get(parent, last);
        if (!v)
            return fail(r, "%s %s not found", label, path);
        if (removed)
            *removed = json_incref(v);
        json_object_del(parent, last);
        return 0;
    }
    if (json_is_array(parent)) {
        size_t idx;
        if (!parse_index(last, &idx) || idx >= json_array_size(parent))
            return fail(r, "%s %s not found", label, path);
        if (removed)
            *removed = json_incref(json_array_get(parent, idx));
        json_array_remove(parent, idx);
        return 0;
    }
    return fail(r, "%s %s not found", label, path);
}

/* Replace the existing value at p with value (reference stolen). */
static int do_replace(jp_run *r, const jptr *p, const char *path, json_t *value)
{
    if (p->n == 0) {
        json_decref(r->doc);
        r->doc = value;
        return 0;
    }
    json_t *parent = jptr_get(r->doc, p, p->n - 1);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent) && json_object_get(parent, last)) {
        json_object_set_new(parent, last, value);
        return 0;
    }
    size_t idx;
    if (json_is_array(parent) && parse_index(last, &idx) && idx < json_array_size(parent)) {
        json_array_set_new(parent, idx, value);
        return 0;
    }
    json_decref(value);
    return fail(r, "path %s not found", path);
}

/* Fetch a string member of an operation. */
static int op_string(const json_t *op, const char *name, const char **s, size_t *len)
{
    json_t *v = json_object_get(op, name);
    if (!json_is_string(v))
        return v ? FL_EINVAL : FL_ENOTFOUND;
    *s = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

static int apply_op(jp_run *r, const json_t *op)
{
    const char *path, *from = NULL;
    size_t path_len, from_len = 0;
    jptr p = {0}, f = {0};
    const char *why;
    int rc;

    r->op = "?";
    if (!json_is_object(op)) {
        if (r->err)
            *r->err = fl_asprintf("op %zu: operation must be a JSON object", r->index);
        return FL_EINVAL;
    }
    json_t *opv = json_object_get(op, "op");
    if (!json_is_string(opv)) {
        if (r->err)
            *r->err = fl_asprintf("op %zu: missing or non-string \"op\" member", r->index);
        return FL_EINVAL;
    }
    r->op = json_string_value(opv);
    bool is_add = strcmp(r->op, "add") == 0, is_remove = strcmp(r->op, "remove") == 0,
         is_replace = strcmp(r->op, "replace") == 0, is_move = strcmp(r->op, "move") == 0,
         is_copy = strcmp(r->op, "copy") == 0, is_test = strcmp(r->op, "test") == 0;
    if (!(is_add || is_remove || is_replace || is_move || is_copy || is_test)) {
        if (r->err)
            *r->err = fl_asprintf("op %zu (%s): unknown operation; expected add, remove, "
                                  "replace, move, copy or test", r->index, r->op);
        return FL_EINVAL;
    }
    if (op_string(op, "path", &path, &path_len) != 0) {
        if (r->err)
            *r->err = fl_asprintf("op %zu (%s): missing or non-string \"path\" member",
                                  r->index, r->op);
        return FL_EINVAL;
    }
    if (jptr_parse(path, path_len, &p, &why) != 0)
        return fail(r, "invalid path %s: %s", path, why);

    json_t *value = json_object_get(op, "value");
    if ((is_add || is_replace || is_test) && !value) {
        rc = fail(r, "path %s: missing \"value\" member", path);
        goto out;
    }
    if (is_move || is_copy) {
        if (op_string(op, "from", &from, &from_len) != 0) {
            rc = fail(r, "path %s: missing or non-string \"from\" member", path);
            goto out;
        }
        if (jptr_parse(from, from_len, &f, &why) != 0) {
            rc = fail(r, "invalid from %s: %s", from, why);
            goto out;
        }
    }

    if (is_add) {
        rc = do_add(r, &p, path, fl_json_deep_copy(value));
    } else if (is_remove) {
        rc = do_remove(r, &p, path, "path", NULL);
    } else if (is_replace) {
        rc = do_replace(r, &p, path, fl_json_deep_copy(value));
    } else if (is_test) {
        json_t *cur = jptr_get(r->doc, &p, p.n);
        if (!cur)
            rc = fail(r, "path %s not found", path);
        else if (!value_equal(cur, value))
            rc = fail(r, "test failed: value at %s differs from the expected value", path);
        else
            rc = 0;
    } else if (is_copy) {
        json_t *src = jptr_get(r->doc, &f, f.n);
        size_t left = r->max_copied > r->copied ? r->max_copied - r->copied : 0;
        size_t bytes = src && r->max_copied ? fl_json_size_upto(src, left) : 0;
        if (!src) {
            rc = fail(r, "from %s not found", from);
        } else if (bytes > left) {
            fail(r, "from %s: the copies make the document larger than %zu bytes", from, r->max_copied);
            rc = FL_ETOOBIG;
        } else {
            r->copied += bytes;
            rc = do_add(r, &p, path, fl_json_deep_copy(src));
        }
    } else { /* move */
        /* A location cannot be moved into one of its own children. */
        if (from_len < path_len && memcmp(from, path, from_len) == 0 && path[from_len] == '/') {
            rc = fail(r, "from %s: cannot move a value into one of its own children", from);
            goto out;
        }
        if (from_len == path_len && memcmp(from, path, from_len) == 0) {
            rc = jptr_get(r->doc, &f, f.n) ? 0 : fail(r, "from %s not found", from);
            goto out;
        }
        json_t *moved;
        rc = do_remove(r, &f, from, "from", &moved);
        if (rc == 0)
            rc = do_add(r, &p, path, moved);
    }
out:
    jptr_free(&p);
    jptr_free(&f);
    return rc;
}

int fl_patch_json(const json_t *orig, const json_t *patch, json_t **out, char **err)
{
    return fl_patch_json_limited(orig, patch, 0, out, err);
}

int fl_patch_json_limited(const json_t *orig, const json_t *patch, size_t max_copied, json_t **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    if (!orig) {
        if (err)
            *err = fl_strdup("json patch: no document to patch");
        return FL_EINVAL;
    }
    if (!json_is_array(patch)) {
        if (err)
            *err = fl_strdup("json patch: the patch must be a JSON array of operations");
        return FL_EINVAL;
    }
    jp_run r = {.doc = fl_json_deep_copy(orig), .err = err, .max_copied = max_copied};
    for (r.index = 0; r.index < json_array_size(patch); r.index++) {
        int rc = apply_op(&r, json_array_get(patch, r.index));
        if (rc != 0) {
            json_decref(r.doc);
            return rc;
        }
    }
    *out = r.doc;
    return 0;
}
