/* jsonpath.c - the subset of Kubernetes JSONPath that printer columns and policies use
 * (contract in jsonpath.h).
 *
 * Evaluation keeps the set of values matched so far and applies one step at a time;
 * values are borrowed from the object, so nothing is copied until the result.
 *
 * Grammar: ["{"] ( "." name | "[" index "]" | "[*]" | "[?(@.path OP literal)]" |
 * "[?(@.path)]" | "['name']" )* ["}"], where name may escape '.' with a backslash,
 * index may be negative, OP is == or !=, literal is a quoted string, a number, true,
 * false or null. ".a" on an array applies to each element (as `.items.name` does in
 * kubectl's JSONPath when the leading range is implicit).
 */
#include "core/jsonpath.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/mem.h"
#include "core/strbuf.h"

typedef struct matchset {
    const json_t **v;
    size_t n, cap;
} matchset;

static void ms_add(matchset *m, const json_t *v)
{
    if (!v)
        return;
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 8;
        m->v = fl_realloc(m->v, m->cap * sizeof *m->v);
    }
    m->v[m->n++] = v;
}

/* Read a field name at *pp (stops at '.', '[', '}' or end; "\." escapes a dot). */
static size_t read_name(const char **pp, char *out, size_t cap)
{
    const char *p = *pp;
    size_t n = 0;
    while (*p && *p != '.' && *p != '[' && *p != '}') {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        p++;
    }
    out[n] = '\0';
    *pp = p;
    return n;
}

/* Follow a simple dotted path (".a.b") from v; used inside filters. */
static const json_t *simple_path(const json_t *v, const char *path, size_t len)
{
    char name[256];
    const char *p = path, *end = path + len;
    while (v && p < end) {
        if (*p != '.')
            return NULL;
        p++;
        size_t n = 0;
        while (p < end && *p != '.') {
            if (*p == '\\' && p + 1 < end)
                p++;
            if (n + 1 < sizeof name)
                name[n++] = *p;
            p++;
        }
        name[n] = '\0';
        v = json_is_object(v) ? json_object_get(v, name) : NULL;
    }
    return v;
}

/* Parse a filter literal into a JSON value (new reference) or NULL. */
static json_t *parse_literal(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0])
        return json_stringn(s + 1, n - 2);
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return NULL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!strcmp(buf, "true"))
        return json_true();
    if (!strcmp(buf, "false"))
        return json_false();
    if (!strcmp(buf, "null"))
        return json_null();
    char *end;
    long long ll = strtoll(buf, &end, 10);
    if (*end == '\0')
        return json_integer(ll);
    double d = strtod(buf, &end);
    if (*end == '\0')
        return json_real(d);
    return NULL;
}

static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

/* Does element e satisfy "@.path OP literal" / "@.path"? expr excludes "?(" and ")". */
static bool filter_match(const json_t *e, const char *expr, size_t len)
{
    while (len && isspace((unsigned char)*expr))
        expr++, len--;
    if (len == 0 || *expr != '@')
        return false;
    expr++, len--;
    size_t plen = 0;
    while (plen < len && !isspace((unsigned char)expr[plen]) && expr[plen] != '=' && expr[plen] != '!')
        plen++;
    const json_t *v = simple_path(e, expr, plen);
    const char *rest = expr + plen;
    size_t rlen = len - plen;
    while (rlen && isspace((unsigned char)*rest))
        rest++, rlen--;
    if (rlen == 0)
        return v != NULL;
    bool neg;
    if (rlen >= 2 && rest[0] == '=' && rest[1] == '=')
        neg = false;
    else if (rlen >= 2 && rest[0] == '!' && rest[1] == '=')
        neg = true;
    else
        return false;
    json_t *lit = parse_literal(rest + 2, rlen - 2);
    if (!lit)
        return false;
    bool eq = v && values_equal(v, lit);
    json_decref(lit);
    return neg ? !eq : eq;
}

/* Find the ']' closing the bracket at p (which points just after '['), honouring quotes
 * and the parentheses of a filter. */
static const char *bracket_end(const char *p)
{
    char quote = 0;
    int depth = 0;
    for (; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
        } else if (*p == '"' || *p == '\'') {
            quote = *p;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        } else if (*p == ']' && depth <= 0) {
            return p;
        }
    }
    return NULL;
}

static void step_name(const matchset *in, matchset *out, const char *name)
{
    for (size_t i = 0; i < in->n; i++) {
        const json_t *v = in->v[i];
        if (json_is_object(v)) {
            ms_add(out, json_object_get(v, name));
        } else if (json_is_array(v)) {
            size_t j;
            json_t *e;
            json_array_foreach(v, j, e) ms_add(out, json_is_object(e) ? json_object_get(e, name) : NULL);
        }
    }
}

/* Returns false on a syntax error. */
static bool step_bracket(const matchset *in, matchset *out, const char *body, size_t len)
{
    if (len == 1 && body[0] == '*') {
        for (size_t i = 0; i < in->n; i++) {
            const json_t *v = in->v[i];
            const char *k;
            json_t *e;
            size_t j;
            if (json_is_array(v))
                json_array_foreach(v, j, e) ms_add(out, e);
            else if (json_is_object(v))
                json_object_foreach((json_t *)v, k, e) ms_add(out, e);
        }
        return true;
    }
    if (len >= 3 && body[0] == '?' && body[1] == '(' && body[len - 1] == ')') {
        for (size_t i = 0; i < in->n; i++) {
            size_t j;
            json_t *e;
            json_array_foreach(in->v[i], j, e) {
                if (filter_match(e, body + 2, len - 3))
                    ms_add(out, e);
            }
        }
        return true;
    }
    if (len >= 2 && (body[0] == '\'' || body[0] == '"') && body[len - 1] == body[0]) {
        char name[256];
        size_t n = len - 2 < sizeof name - 1 ? len - 2 : sizeof name - 1;
        memcpy(name, body + 1, n);
        name[n] = '\0';
        for (size_t i = 0; i < in->n; i++)
            ms_add(out, json_is_object(in->v[i]) ? json_object_get(in->v[i], name) : NULL);
        return true;
    }
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, body, len);
    buf[len] = '\0';
    char *end;
    long idx = strtol(buf, &end, 10);
    if (*end != '\0')
        return false;
    for (size_t i = 0; i < in->n; i++) {
        const json_t *v = in->v[i];
        if (!json_is_array(v))
            continue;
        long n = (long)json_array_size(v);
        long at = idx < 0 ? n + idx : idx;
        if (at >= 0 && at < n)
            ms_add(out, json_array_get(v, (size_t)at));
    }
    return true;
}

/* Text of a value as printed in a cell: strings raw, others as compact JSON. */
char *fl_jsonpath_text(const json_t *v)
{
    if (json_is_string(v))
        return fl_strdup(json_string_value(v));
    char *s = fl_json_dumps(v, NULL);
    return s ? s : fl_strdup("");
}

json_t *fl_jsonpath_eval(const json_t *obj, const char *path)
{
    if (!obj || !path)
        return NULL;
    const char *p = path;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '{')
        p++;
    const char *start = p;
    matchset cur = {0}, next = {0};
    ms_add(&cur, obj);
    json_t *result = NULL;
    while (*p && *p != '}' && cur.n) {
        next.n = 0;
        if (*p == '.') {
            p++;
            if (*p == '.' || *p == '\0' || *p == '}') /* ".." or a bare "." (the root) */
                continue;
            if (*p == '[')
                continue;
            char name[256];
            read_name(&p, name, sizeof name);
            step_name(&cur, &next, name);
        } else if (*p == '[') {
            const char *end = bracket_end(p + 1);
            if (!end || !step_bracket(&cur, &next, p + 1, (size_t)(end - p - 1)))
                goto out;
            p = end + 1;
        } else if (p == start) {
            /* "metadata.name" without the leading dot */
            char name[256];
            read_name(&p, name, sizeof name);
            step_name(&cur, &next, name);
        } else {
            goto out;
        }
        matchset t = cur;
        cur = next;
        next = t;
    }
    if (cur.n == 1) {
        result = json_incref((json_t *)cur.v[0]);
    } else if (cur.n > 1) {
        fl_strbuf b = FL_STRBUF_INIT;
        for (size_t i = 0; i < cur.n; i++) {
            char *t = fl_jsonpath_text(cur.v[i]);
            if (i)
                fl_strbuf_addc(&b, ',');
            fl_strbuf_adds(&b, t);
            free(t);
        }
        char *text = fl_strbuf_take(&b);
        result = json_string(text);
        free(text);
    }
out:
    free(cur.v);
    free(next.v);
    return result;
}
