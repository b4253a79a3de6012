/* yaml.c - YAML <-> JSON through libfyaml (contract in yaml.h).
 *
 * Parsing walks libfyaml's event stream (not its document tree: events carry a
 * position for every node, which our error messages need) and builds jansson
 * values on an explicit stack, so input depth never grows the C stack.
 *
 * Scalar typing follows what kubectl and the API server really do. They decode
 * YAML with sigs.k8s.io/yaml, which sits on go-yaml v2 and therefore resolves
 * plain scalars with YAML 1.1 rules, not the 1.2 core schema. Users meet this
 * as "yes: must be quoted" in ConfigMaps, so we keep it rather than surprise
 * them with a different answer for the same manifest:
 *   - null: "", ~, null, Null, NULL
 *   - booleans: true/false, yes/no, on/off, y/n in the capitalisations
 *     True/TRUE, Yes/YES, On/ON, Y, ... (go-yaml v2's table)
 *   - integers as Go's strconv.ParseInt(s, 0, 64) after removing '_':
 *     decimal, 0x hex, 0o and leading-0 octal, 0b binary; exact to int64.
 *     Larger values that still fit uint64, and decimal floats, become reals;
 *     a float that overflows stays a string (Go's ParseFloat fails too)
 *   - .inf/.nan have no JSON form and are an error as values
 *   - timestamps stay strings, as they do for kubectl
 * Quoted and block scalars are always strings. An explicit core tag (!!str,
 * !!int, !!float, !!bool, !!null) forces that type or fails; other tags are
 * ignored and the scalar is a string, as in go-yaml v2. Non-string mapping
 * keys become strings the way sigs.k8s.io/yaml does it ("on:" is key "true",
 * "0x10:" is "16"); a null or collection key is an error.
 *
 * Deliberate differences from go-yaml v2, both in the user's favour:
 *   - merge keys ("<<") follow the YAML merge spec: keys written in the mapping
 *     win over merged ones wherever "<<" appears, and earlier sources win
 *     over later ones in "<<: [*a, *b]";
 *   - a key repeated in one mapping is an error (the API server's strict
 *     field validation rejects it too) instead of last-one-wins.
 * Aliases are deep copies (callers may mutate the result), bounded by a budget
 * so that a "billion laughs" document fails instead of eating the machine. The
 * budget counts nodes, which a few aliases of one huge string do not spend: a
 * caller that takes bytes from the network also bounds the bytes (the size of
 * the document's JSON encoding, estimated), and the bound is checked at each
 * alias, before its copy is made (fl_yaml_parse_limited).
 *
 * Dumping writes kubectl's block style: keys in object order, sequences under
 * a key at the key's indentation ("containers:\n- image: x"), strings plain
 * when that reads back as the same string, double-quoted when they would read
 * as another type (kubectl's `"true"`, `"1"`), single-quoted when only YAML
 * punctuation is in the way, double-quoted with escapes when they hold control
 * or non-printable characters, and as literal blocks (|, |-, |+) when they
 * span lines. parse(dump(v)) == v for every JSON value; the unit and fuzz
 * tests check it. */
#include "core/yaml.h"

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/strbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <libfyaml.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 1000
/* Alias expansion budget: a fixed allowance plus a generous multiple of the
 * nodes actually written in the input. */
#define ALIAS_BASE_BUDGET 100000
#define ALIAS_PER_EVENT 100

/* ---------------------------------------------------- scalar resolution -- */

enum rkind { R_STR, R_NULL, R_BOOL, R_INT, R_FLOAT, R_INF, R_NAN, R_MERGE };

struct resolved {
    enum rkind kind;
    bool b;
    long long i;
    double d; /* R_FLOAT; sign of R_INF */
};

static bool eq(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static bool in_list(const char *s, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (eq(s, n, *list))
            return true;
    return false;
}

static int digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
}

/* Go's strconv.ParseUint(s, 0, 64) on an unsigned body (no sign). */
static bool parse_go_uint(const char *s, size_t n, uint64_t *out)
{
    unsigned base = 10;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, s += 2, n -= 2;
    else if (n >= 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
        base = 8, s += 2, n -= 2;
    else if (n >= 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        base = 2, s += 2, n -= 2;
    else if (n >= 2 && s[0] == '0')
        base = 8, s += 1, n -= 1;
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = digit_value(s[i]);
        if (d >= (int)base)
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / base)
            return false;
        v = v * base + (uint64_t)d;
    }
    *out = v;
    return true;
}

/* go-yaml v2's float pattern: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_yaml_float(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    size_t d0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    bool int_digits = i > d0;
    if (i < n && s[i] == '.') {
        i++;
        size_t f0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (!int_digits && i == f0)
            return false;
    } else if (!int_digits) {
        return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        size_t e0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == e0)
            return false;
    }
    return i == n;
}

static bool to_double(const char *s, size_t n, double *out)
{
    char *tmp = fl_strndup(s, n);
    char *end;
    errno = 0;
    double d = strtod(tmp, &end);
    bool ok = *end == '\0' && !isinf(d);
    free(tmp);
    *out = d;
    return ok;
}

/* Resolve a plain (unquoted, untagged) scalar the way go-yaml v2 does. */
static void resolve_plain(const char *s, size_t n, struct resolved *r)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
    static const char *const trues[] = { "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE",
                                         "on", "On", "ON", NULL };
    static const char *const falses[] = { "n", "N", "no", "No", "NO", "false", "False", "FALSE",
                                          "off", "Off", "OFF", NULL };
    static const char *const nans[] = { ".nan", ".NaN", ".NAN", NULL };
    static const char *const pinfs[] = { ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL };
    static const char *const ninfs[] = { "-.inf", "-.Inf", "-.INF", NULL };

    memset(r, 0, sizeof(*r));
    r->kind = R_STR;
    if (in_list(s, n, nulls)) {
        r->kind = R_NULL;
        return;
    }
    if (in_list(s, n, trues) || in_list(s, n, falses)) {
        r->kind = R_BOOL;
        r->b = in_list(s, n, trues);
        return;
    }
    if (in_list(s, n, nans)) {
        r->kind = R_NAN;
        return;
    }
    if (in_list(s, n, pinfs) || in_list(s, n, ninfs)) {
        r->kind = R_INF;
        r->d = in_list(s, n, ninfs) ? -1 : 1;
        return;
    }
    if (eq(s, n, "<<")) {
        r->kind = R_MERGE;
        return;
    }
    if (s[0] == '.') {
        /* Go's ParseFloat on the text as written (no '_' removal). */
        if (is_yaml_float(s, n) && to_double(s, n, &r->d))
            r->kind = R_FLOAT;
        return;
    }
    if (!(s[0] == '+' || s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
        return;

    /* Digits or a sign: Go's ParseInt/ParseUint with base 0 after removing '_'. */
    char *plain = fl_malloc(n + 1);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            plain[m++] = s[i];
    plain[m] = '\0';
    const char *body = plain;
    size_t bn = m;
    bool neg = false;
    if (bn > 0 && (body[0] == '+' || body[0] == '-')) {
        neg = body[0] == '-';
        body++;
        bn--;
    }
    uint64_t u;
    if (parse_go_uint(body, bn, &u)) {
        if (!neg && u <= (uint64_t)LLONG_MAX) {
            r->kind = R_INT;
            r->i = (long long)u;
        } else if (neg && u <= (uint64_t)LLONG_MAX + 1) {
            r->kind = R_INT;
            r->i = u == (uint64_t)LLONG_MAX + 1 ? LLONG_MIN : -(long long)u;
        } else if (plain[0] != '+' && plain[0] != '-') {
            /* ParseInt failed but ParseUint (which takes no sign) fits: Kubernetes
             * ends up with a float64 for it. */
            r->kind = R_FLOAT;
            r->d = (double)u;
        }
    }
    if (r->kind == R_STR && is_yaml_float(plain, m) && to_double(plain, m, &r->d))
        r->kind = R_FLOAT;
    free(plain);
}

/* ---------------------------------------------------------- the builder -- */

struct frame {
    json_t *v;         /* object or array under construction */
    bool is_map;
    char *anchor;      /* registered when the collection ends */
    /* mapping state: a key waiting for its value */
    bool have_key;
    char *key;
    size_t key_len;
    bool key_merge;
    struct fy_mark key_mark;
    json_t *merges;    /* merge sources, in order; NULL if none */
};

struct builder {
    struct frame *stack;
    size_t depth, cap;
    json_t *anchors;   /* anchor name -> completed value */
    size_t events;     /* nodes written in the input */
    size_t alias_nodes;
    size_t max_bytes;   /* 0: no bound on bytes */
    size_t alias_bytes; /* added by aliases, over the whole stream */
    json_t *root;
    bool empty_doc;
    char *err;         /* first error, "line L, column C: ..." */
    const char *input; /* the caller's buffer, for re-reading single-quoted scalars */
    size_t input_len;
};

static const struct fy_mark *no_mark(void)
{
    static const struct fy_mark m = { 0, -1, -1 };
    return &m;
}

static int fail(struct builder *b, const struct fy_mark *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct builder *b, const struct fy_mark *m, const char *fmt, ...)
{
    if (b->err)
        return FL_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    char *msg = fl_vasprintf(fmt, ap);
    va_end(ap);
    if (!m || m->line < 0)
        m = no_mark();
    b->err = fl_asprintf("line %d, column %d: %s", m->line >= 0 ? m->line + 1 : 1,
                         m->column >= 0 ? m->column + 1 : 1, msg);
    free(msg);
    return FL_EINVAL;
}

static void frame_clear(struct frame *f)
{
    json_decref(f->v);
    json_decref(f->merges);
    free(f->anchor);
    free(f->key);
    memset(f, 0, sizeof(*f));
}

static void builder_reset(struct builder *b)
{
    while (b->depth > 0)
        frame_clear(&b->stack[--b->depth]);
    json_decref(b->root);
    b->root = NULL;
    b->empty_doc = false;
    json_object_clear(b->anchors); /* anchors are scoped to one document */
    b->alias_nodes = 0;
    b->events = 0;
}

/* Count nodes of v, stopping early once the count passes limit. */
static size_t count_nodes(const json_t *v, size_t limit)
{
    size_t n = 1;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v) && n <= limit; i++)
            n += count_nodes(json_array_get(v, i), limit - n);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            n += count_nodes(x, limit > n ? limit - n : 0);
            if (n > limit)
                break;
        }
    }
    return n;
}

/* Go's strconv.FormatFloat(f, 'g', -1, 32), which sigs.k8s.io/yaml uses for
 * float mapping keys. */
static char *float_key(double d)
{
    if (isnan(d))
        return fl_strdup(".nan");
    if (isinf(d))
        return fl_strdup(d > 0 ? ".inf" : "-.inf");
    float f = (float)d;
    if (isinf(f)) /* past float32's range: Go prints +Inf, which becomes .inf */
        return fl_strdup(f > 0 ? ".inf" : "-.inf");
    char buf[64];
    int p;
    for (p = 1; p < 9; p++) {
        snprintf(buf, sizeof(buf), "%.*e", p - 1, (double)f);
        if ((float)strtod(buf, NULL) == f)
            break;
    }
    snprintf(buf, sizeof(buf), "%.*e", p - 1, (double)f);
    int exp = atoi(strchr(buf, 'e') + 1);
    if (exp < -4 || exp >= 6) {
        /* Go writes at least two exponent digits, as C does. */
        return fl_strdup(buf);
    }
    int decimals = p - 1 - exp;
    snprintf(buf, sizeof(buf), "%.*f", decimals > 0 ? decimals : 0, (double)f);
    return fl_strdup(buf);
}

/* The mapping-key text for a value, as sigs.k8s.io/yaml stringifies keys. */
static int key_text(struct builder *b, const json_t *v, const struct fy_mark *m, char **out, size_t *len)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        *len = json_string_length(v);
        *out = fl_strndup(json_string_value(v), *len);
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        *out = fl_strdup(json_is_true(v) ? "true" : "false");
        break;
    case JSON_INTEGER:
        *out = fl_asprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        *out = float_key(json_real_value(v));
        break;
    case JSON_NULL:
        return fail(b, m, "a mapping key may not be null");
    default:
        return fail(b, m, "a mapping key must be a scalar, not a %s", json_is_array(v) ? "sequence" : "mapping");
    }
    *len = strlen(*out);
    return 0;
}

static void register_anchor(struct builder *b, const char *name, json_t *v)
{
    json_object_set(b->anchors, name, v);
}

/* Hand a finished value (stolen) to whatever encloses it. */
static int deliver(struct builder *b, json_t *v, const struct fy_mark *m, bool merge_key)
{
    if (b->depth == 0) {
        b->root = v;
        return 0;
    }
    struct frame *f = &b->stack[b->depth - 1];
    if (!f->is_map) {
        json_array_append_new(f->v, v);
        return 0;
    }
    if (!f->have_key) {
        int rc = 0;
        if (merge_key) {
            f->key_merge = true;
            f->key = NULL;
        } else {
            rc = key_text(b, v, m, &f->key, &f->key_len);
        }
        json_decref(v);
        if (rc)
            return rc;
        f->have_key = true;
        f->key_mark = *m;
        return 0;
    }
    f->have_key = false;
    if (f->key_merge) {
        f->key_merge = false;
        bool ok = json_is_object(v) || (json_is_array(v) && json_array_size(v) > 0);
        for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
            ok = ok && json_is_object(json_array_get(v, i));
        if (!ok) {
            json_decref(v);
            return fail(b, &f->key_mark, "the value of a merge key (<<) must be a mapping or a sequence of mappings");
        }
        if (!f->merges)
            f->merges = json_array();
        json_array_append_new(f->merges, v);
        return 0;
    }
    int rc = 0;
    if (json_object_getn(f->v, f->key, f->key_len))
        rc = fail(b, &f->key_mark, "duplicate key \"%s\" in this mapping", f->key);
    else if (json_object_setn_new(f->v, f->key, f->key_len, v) != 0)
        rc = fail(b, &f->key_mark, "mapping key is not valid UTF-8");
    else
        v = NULL;
    json_decref(v);
    free(f->key);
    f->key = NULL;
    return rc;
}

static void merge_into(json_t *dst, json_t *src)
{
    void *it;
    for (it = json_object_iter(src); it; it = json_object_iter_next(src, it)) {
        const char *k = json_object_iter_key(it);
        size_t kl = json_object_iter_key_len(it);
        if (!json_object_getn(dst, k, kl))
            json_object_setn_new_nocheck(dst, k, kl, json_incref(json_object_iter_value(it)));
    }
}

static int push(struct builder *b, bool is_map, struct fy_token *anchor, const struct fy_mark *m)
{
    if (b->depth > 0) {
        struct frame *f = &b->stack[b->depth - 1];
        if (f->is_map && !f->have_key)
            return fail(b, m, "a mapping key must be a scalar, not a %s", is_map ? "mapping" : "sequence");
    }
    if (b->depth >= MAX_DEPTH)
        return fail(b, m, "nesting is deeper than %d levels", MAX_DEPTH);
    if (b->depth == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->stack = fl_realloc(b->stack, b->cap * sizeof(*b->stack));
    }
    struct frame *f = &b->stack[b->depth++];
    memset(f, 0, sizeof(*f));
    f->is_map = is_map;
    f->v = is_map ? json_object() : json_array();
    if (anchor)
        f->anchor = fl_strdup(fy_token_get_text0(anchor));
    return 0;
}

static int pop(struct builder *b, const struct fy_mark *m)
{
    struct frame *f = &b->stack[b->depth - 1];
    json_t *v = f->v;
    f->v = NULL;
    if (f->merges) {
        /* Explicit keys are all set by now, so they win; earlier sources win
         * over later ones because merge_into never overwrites. */
        for (size_t i = 0; i < json_array_size(f->merges); i++) {
            json_t *src = json_array_get(f->merges, i);
            if (json_is_object(src)) {
                merge_into(v, src);
            } else {
                for (size_t j = 0; j < json_array_size(src); j++)
                    merge_into(v, json_array_get(src, j));
            }
        }
    }
    if (f->anchor)
        register_anchor(b, f->anchor, v);
    frame_clear(f);
    b->depth--;
    return deliver(b, v, m, false);
}

static bool tag_is(const char *tag, const char *name)
{
    static const char prefix[] = "tag:yaml.org,2002:";
    return strncmp(tag, prefix, sizeof(prefix) - 1) == 0 && strcmp(tag + sizeof(prefix) - 1, name) == 0;
}

static bool in_key_position(const struct builder *b)
{
    return b->depth > 0 && b->stack[b->depth - 1].is_map && !b->stack[b->depth - 1].have_key;
}

static int scalar_value(struct builder *b, struct fy_event *e, const struct fy_mark *m, struct fy_token *tok,
                        const char *s, size_t n);

/* libfyaml 0.7.12 mis-decodes runs of '' in single-quoted scalars (and leaks
 * the buffer for long ones), so those are decoded here from the source text:
 * '' is a quote, and line breaks fold as in every flow scalar - a single break
 * becomes a space, each blank line a newline, blanks around breaks vanish.
 * Returns a heap string (length in *outlen), or NULL if the marks look wrong. */
static char *single_quoted(const struct builder *b, struct fy_token *tok, size_t *outlen)
{
    const struct fy_mark *sm = fy_token_start_mark(tok), *em = fy_token_end_mark(tok);
    /* The token's marks span the content, just inside the quotes. */
    if (!sm || !em || em->input_pos >= b->input_len || sm->input_pos == 0 || sm->input_pos > em->input_pos ||
        b->input[sm->input_pos - 1] != '\'' || b->input[em->input_pos] != '\'')
        return NULL;
    const char *s = b->input + sm->input_pos;
    size_t n = em->input_pos - sm->input_pos;
    char *out = fl_malloc(n + 1);
    size_t o = 0, pending_breaks = 0;
    bool first = true;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '\n')
            continue;
        bool last = i == n;
        size_t a = start, z = i;
        if (!last && z > a && s[z - 1] == '\r')
            z--;
        if (!first)
            while (a < z && (s[a] == ' ' || s[a] == '\t'))
                a++;
        if (!last)
            while (z > a && (s[z - 1] == ' ' || s[z - 1] == '\t'))
                z--;
        if (!first) {
            if (a == z && !last) {
                pending_breaks++;
                start = i + 1;
                continue;
            }
            if (pending_breaks == 0)
                out[o++] = ' ';
            for (; pending_breaks > 0; pending_breaks--)
                out[o++] = '\n';
        }
        for (size_t k = a; k < z; k++) {
            out[o++] = s[k];
            if (s[k] == '\'' && k + 1 < z && s[k + 1] == '\'')
                k++;
        }
        first = false;
        start = i + 1;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

static int on_scalar(struct builder *b, struct fy_event *e)
{
    /* Point at the node's first character: its anchor or tag if it has one. */
    const struct fy_mark *m = fy_event_start_mark(e);
    if (e->scalar.anchor && fy_token_start_mark(e->scalar.anchor))
        m = fy_token_start_mark(e->scalar.anchor);
    else if (e->scalar.tag && fy_token_start_mark(e->scalar.tag))
        m = fy_token_start_mark(e->scalar.tag);
    struct fy_token *tok = e->scalar.value;
    size_t n = 0;
    char *own = NULL;
    if (tok && fy_token_scalar_style(tok) == FYSS_SINGLE_QUOTED)
        own = single_quoted(b, tok, &n);
    const char *s = own ? own : tok ? fy_token_get_text(tok, &n) : "";
    if (!s)
        s = "", n = 0;
    int rc = scalar_value(b, e, m, tok, s, n);
    free(own);
    return rc;
}

static int scalar_value(struct builder *b, struct fy_event *e, const struct fy_mark *m, struct fy_token *tok,
                        const char *s, size_t n)
{
    bool plain = !tok || fy_token_scalar_style(tok) == FYSS_PLAIN;
    const char *tag = e->scalar.tag ? fy_token_get_text0(e->scalar.tag) : NULL;
    bool key = in_key_position(b);

    if (b->depth == 0 && !tok && !tag && !e->scalar.anchor) {
        b->empty_doc = true; /* "---" with nothing after it, or only comments */
        return 0;
    }

    struct resolved r = { .kind = R_STR };
    if (tag && (tag_is(tag, "int") || tag_is(tag, "float") || tag_is(tag, "bool") || tag_is(tag, "null"))) {
        resolve_plain(s, n, &r);
        const char *want = tag + strlen("tag:yaml.org,2002:");
        bool ok = (tag_is(tag, "int") && r.kind == R_INT) ||
                  (tag_is(tag, "float") && (r.kind == R_INT || r.kind == R_FLOAT || r.kind == R_INF || r.kind == R_NAN)) ||
                  (tag_is(tag, "bool") && r.kind == R_BOOL) || (tag_is(tag, "null") && r.kind == R_NULL);
        if (!ok)
            return fail(b, m, "cannot read \"%.*s\" as !!%s", (int)(n > 60 ? 60 : n), s, want);
        if (tag_is(tag, "float") && r.kind == R_INT) {
            r.kind = R_FLOAT;
            r.d = (double)r.i;
        }
    } else if (!tag && plain) {
        resolve_plain(s, n, &r);
    }

    json_t *v = NULL;
    bool merge = false;
    switch (r.kind) {
    case R_STR:
        v = json_stringn(s, n);
        if (!v)
            return fail(b, m, "string is not valid UTF-8");
        break;
    case R_MERGE:
        if (key)
            merge = true;
        v = json_string("<<");
        break;
    case R_NULL:
        v = json_null();
        break;
    case R_BOOL:
        v = json_boolean(r.b);
        break;
    case R_INT:
        v = json_integer(r.i);
        break;
    case R_FLOAT:
        v = json_real(r.d);
        break;
    case R_INF:
    case R_NAN:
        if (!key)
            return fail(b, m, "%.*s cannot be represented in JSON; quote it to keep it as a string", (int)n, s);
        v = json_string(r.kind == R_NAN ? ".nan" : r.d > 0 ? ".inf" : "-.inf");
        break;
    }
    if (e->scalar.anchor)
        register_anchor(b, fy_token_get_text0(e->scalar.anchor), v);
    return deliver(b, v, m, merge);
}

static int on_alias(struct builder *b, struct fy_event *e)
{
    /* The alias token starts after its '*'; point at the '*'. */
    struct fy_mark star = *fy_event_start_mark(e);
    if (star.column > 0)
        star.column--;
    const struct fy_mark *m = &star;
    const char *name = fy_token_get_text0(e->alias.anchor);
    json_t *target = name ? json_object_get(b->anchors, name) : NULL;
    if (!target)
        return fail(b, m, "alias *%s refers to no anchor defined before it", name ? name : "");
    if (b->max_bytes) {
        /* What the input writes itself encodes to a small multiple of its length; aliases are
         * what can multiply it, so the input's length and every copy's encoding are counted. */
        size_t used = b->input_len + b->alias_bytes;
        size_t left = b->max_bytes > used ? b->max_bytes - used : 0;
        size_t bytes = fl_json_size_upto(target, left);
        if (bytes > left) {
            fail(b, m, "aliases expand the document past %zu bytes", b->max_bytes);
            return FL_ETOOBIG;
        }
        b->alias_bytes += bytes;
    }
    size_t budget = ALIAS_BASE_BUDGET + ALIAS_PER_EVENT * b->events;
    size_t left = budget > b->alias_nodes ? budget - b->alias_nodes : 0;
    size_t cnt = count_nodes(target, left);
    if (cnt > left)
        return fail(b, m, "aliases expand to too many nodes (more than %zu); the document looks like an alias bomb",
                    budget);
    b->alias_nodes += cnt;
    return deliver(b, fl_json_deep_copy(target), m, false);
}

/* -------------------------------------------------- libfyaml plumbing -- */

struct diag_capture {
    char *msg; /* first error line, "L:C: error: text" reduced to "line L, column C: text" */
};

static void diag_output(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    struct diag_capture *cap = user;
    if (cap->msg)
        return;
    /* libfyaml sends "<input>:L:C: error: message\n" and then source context. */
    char *line = fl_strndup(buf, len);
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = '\0';
    char *e = strstr(line, ": error: ");
    if (!e) {
        free(line);
        return;
    }
    const char *text = e + strlen(": error: ");
    *e = '\0';
    char *c2 = strrchr(line, ':');
    int l = 0, c = 0;
    if (c2) {
        *c2 = '\0';
        char *c1 = strrchr(line, ':');
        if (c1) {
            l = atoi(c1 + 1);
            c = atoi(c2 + 1);
        }
    }
    if (l > 0 && c > 0)
        cap->msg = fl_asprintf("line %d, column %d: %s", l, c, text);
    else
        cap->msg = fl_asprintf("line 1, column 1: %s", text);
    free(line);
}

/* libfyaml quietly drops malformed UTF-8, so check the input first: the
 * offset of the first bad sequence, or len when all is well. Overlong forms,
 * surrogates and code points past U+10FFFF are all malformed. */
static size_t utf8_invalid_at(const char *buf, size_t len)
{
    const unsigned char *u = (const unsigned char *)buf;
    for (size_t i = 0; i < len;) {
        unsigned c = u[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) {
            if (c == 0)
                return i; /* NUL is not a YAML character */
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (i + n > len)
            return i;
        for (size_t k = 1; k < n; k++) {
            if ((u[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (u[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n;
    }
    return len;
}

static struct fy_mark mark_at(const char *buf, size_t off)
{
    struct fy_mark m = { off, 0, 0 };
    for (size_t i = 0; i < off; i++) {
        if (buf[i] == '\n') {
            m.line++;
            m.column = 0;
        } else if (((unsigned char)buf[i] & 0xC0) != 0x80) {
            m.column++;
        }
    }
    return m;
}

/* Parse the stream; with all=false stop at a second document; max_bytes bounds what the
 * aliases expand to (0: no bound). Writes *out. */
static int parse_stream(const char *buf, size_t len, bool all, size_t max_bytes, json_t **out, char **err)
{
    *out = NULL;
    *err = NULL;
    struct diag_capture cap = { 0 };
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = diag_output;
    dcfg.user = &cap;
    dcfg.level = FYET_ERROR;
    dcfg.colorize = false;
    dcfg.show_source = false;
    dcfg.show_position = true;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    struct fy_parse_cfg pcfg = {
        .flags = FYPCF_QUIET | FYPCF_ALLOW_DUPLICATE_KEYS,
        .diag = diag,
    };
    struct fy_parser *fyp = diag ? fy_parser_create(&pcfg) : NULL;
    if (!fyp) {
        if (diag)
            fy_diag_destroy(diag);
        *err = fl_strdup("line 1, column 1: cannot start the YAML parser");
        return FL_EINVAL;
    }
    struct builder b = { .anchors = json_object(), .input = len ? buf : "", .input_len = len,
                         .max_bytes = max_bytes };
    json_t *docs = json_array();
    int rc = 0;
    size_t bad = utf8_invalid_at(buf, len);
    if (bad < len) {
        struct fy_mark bm = mark_at(buf, bad);
        rc = fail(&b, &bm, buf[bad] ? "the input is not valid UTF-8" : "the input contains a NUL byte");
        goto out;
    }
    /* libfyaml wants a buffer it can read; an empty input needs a valid pointer. */
    if (fy_parser_set_string(fyp, len ? buf : "", len) != 0) {
        rc = fail(&b, no_mark(), "cannot read the input");
        goto out;
    }
    struct fy_event *e;
    struct fy_mark last = { 0, 0, 0 };
    struct fy_mark doc_mark = { 0, 0, 0 };
    bool doc_mark_set = false;
    while (rc == 0 && (e = fy_parser_parse(fyp)) != NULL) {
        const struct fy_mark *m = fy_event_start_mark(e);
        if (m && m->line >= 0) {
            last = *m;
            if (!doc_mark_set)
                doc_mark = *m, doc_mark_set = true;
        }
        switch (e->type) {
        case FYET_DOCUMENT_START:
            builder_reset(&b);
            /* "---" gives a position; an implicit start takes its first node's */
            doc_mark_set = m && m->line >= 0;
            if (doc_mark_set)
                doc_mark = *m;
            break;
        case FYET_DOCUMENT_END:
            if (b.root && !b.empty_doc) {
                if (!all && json_array_size(docs) == 1) {
                    rc = fail(&b, &doc_mark, "expected a single YAML document, found another one");
                    break;
                }
                json_array_append_new(docs, b.root);
                b.root = NULL;
            }
            break;
        case FYET_MAPPING_START:
            b.events++;
            rc = push(&b, true, e->mapping_start.anchor, m);
            break;
        case FYET_SEQUENCE_START:
            b.events++;
            rc = push(&b, false, e->sequence_start.anchor, m);
            break;
        case FYET_MAPPING_END:
        case FYET_SEQUENCE_END:
            rc = pop(&b, m ? m : &last);
            break;
        case FYET_SCALAR:
            b.events++;
            rc = on_scalar(&b, e);
            break;
        case FYET_ALIAS:
            b.events++;
            rc = on_alias(&b, e);
            break;
        default:
            break;
        }
        fy_parser_event_free(fyp, e);
    }
    if (rc == 0 && fy_parser_get_stream_error(fyp)) {
        if (cap.msg) {
            b.err = cap.msg;
            cap.msg = NULL;
        }
        rc = fail(&b, &last, "invalid YAML");
    }
    if (rc == 0 && !all && json_array_size(docs) == 0)
        rc = fail(&b, no_mark(), "no document");
out:
    builder_reset(&b);
    free(b.stack);
    json_decref(b.anchors);
    fy_parser_destroy(fyp);
    fy_diag_destroy(diag);
    free(cap.msg);
    if (rc) {
        json_decref(docs);
        *err = b.err ? b.err : fl_strdup("line 1, column 1: invalid YAML");
        return rc;
    }
    if (all) {
        *out = docs;
    } else {
        *out = json_incref(json_array_get(docs, 0));
        json_decref(docs);
    }
    return 0;
}

int fl_yaml_parse(const char *buf, size_t len, json_t **out, char **err)
{
    return parse_stream(buf, len, false, 0, out, err);
}

int fl_yaml_parse_limited(const char *buf, size_t len, size_t max_bytes, json_t **out, char **err)
{
    return parse_stream(buf, len, false, max_bytes, out, err);
}

int fl_yaml_parse_all(const char *buf, size_t len, json_t **out, char **err)
{
    return parse_stream(buf, len, true, 0, out, err);
}

/* ------------------------------------------------------------- dumping -- */

static void put_indent(fl_strbuf *sb, int n)
{
    static const char spaces[] = "                                ";
    while (n > 0) {
        int k = n > 32 ? 32 : n;
        fl_strbuf_add(sb, spaces, (size_t)k);
        n -= k;
    }
}

/* Decode one UTF-8 code point (input is valid UTF-8: jansson checked it). */
static uint32_t utf8_next(const char *s, size_t n, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s;
    uint32_t c = u[*i];
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (*i + len > n)
        len = 1;
    if (len == 2)
        c = ((c & 0x1F) << 6) | (u[*i + 1] & 0x3F);
    else if (len == 3)
        c = ((c & 0x0F) << 12) | ((uint32_t)(u[*i + 1] & 0x3F) << 6) | (u[*i + 2] & 0x3F);
    else if (len == 4)
        c = ((c & 0x07) << 18) | ((uint32_t)(u[*i + 1] & 0x3F) << 12) | ((uint32_t)(u[*i + 2] & 0x3F) << 6) |
            (u[*i + 3] & 0x3F);
    *i += len;
    return c;
}

/* Characters we write as themselves: YAML's printable set minus the ones some
 * readers treat as line breaks or markers (NEL, LS, PS, BOM). */
static bool printable(uint32_t c)
{
    if (c == 0x85 || c == 0x2028 || c == 0x2029 || c == 0xFEFF)
        return false;
    return (c >= 0x20 && c <= 0x7E) || (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
           (c >= 0x10000 && c <= 0x10FFFF);
}

/* Every character printable, allowing '\n' (and '\t') if asked. */
static bool all_printable(const char *s, size_t n, bool allow_newline)
{
    for (size_t i = 0; i < n;) {
        uint32_t c = utf8_next(s, n, &i);
        if (c == '\n' && allow_newline)
            continue;
        if (c == '\t' && allow_newline)
            continue;
        if (!printable(c))
            return false;
    }
    return true;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* YAML 1.1 sexagesimal numbers ("1:20", "-190:20:30.15") and timestamps: they
 * read back as strings here, but kubectl quotes them for older readers. */
static bool looks_like_base60_or_date(const char *s, size_t n)
{
    if (n >= 6 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) && s[4] == '-' &&
        is_digit(s[5]))
        return true;
    size_t i = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    if (i >= n || !is_digit(s[i]))
        return false;
    while (i < n && (is_digit(s[i]) || s[i] == '_'))
        i++;
    bool colon = false;
    while (i < n && s[i] == ':') {
        colon = true;
        i++;
        size_t d = 0;
        while (i < n && is_digit(s[i]) && d < 2)
            i++, d++;
        if (d == 0)
            return false;
        if (d == 2 && s[i - 2] > '5')
            return false;
    }
    if (!colon)
        return false;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && (is_digit(s[i]) || s[i] == '_'))
            i++;
    }
    return i == n;
}

/* Would the string read back as something other than itself if written plain? */
static bool resolves_to_other_type(const char *s, size_t n)
{
    struct resolved r;
    resolve_plain(s, n, &r);
    return r.kind != R_STR || looks_like_base60_or_date(s, n);
}

/* Can the string be written as a plain scalar in block context? */
static bool plain_ok(const char *s, size_t n)
{
    if (n == 0 || !all_printable(s, n, false))
        return false;
    if (s[0] == ' ' || s[n - 1] == ' ')
        return false;
    if (strchr("?:,[]{}#&*!|>'\"%@`", s[0]))
        return false;
    if (s[0] == '-' && (n == 1 || s[1] == ' '))
        return false;
    if (n >= 3 && (memcmp(s, "---", 3) == 0 || memcmp(s, "...", 3) == 0))
        return false;
    if (s[n - 1] == ':')
        return false;
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] == ':' && s[i + 1] == ' ')
            return false;
        if (s[i] == ' ' && s[i + 1] == '#')
            return false;
    }
    return true;
}

static void put_double_quoted(fl_strbuf *sb, const char *s, size_t n)
{
    fl_strbuf_addc(sb, '"');
    for (size_t i = 0; i < n;) {
        size_t start = i;
        uint32_t c = utf8_next(s, n, &i);
        char esc[16];
        const char *rep = NULL;
        switch (c) {
        case '"': rep = "\\\""; break;
        case '\\': rep = "\\\\"; break;
        case 0: rep = "\\0"; break;
        case '\a': rep = "\\a"; break;
        case '\b': rep = "\\b"; break;
        case '\t': rep = "\\t"; break;
        case '\n': rep = "\\n"; break;
        case '\v': rep = "\\v"; break;
        case '\f': rep = "\\f"; break;
        case '\r': rep = "\\r"; break;
        case 0x1B: rep = "\\e"; break;
        case 0x85: rep = "\\N"; break;
        case 0x2028: rep = "\\L"; break;
        case 0x2029: rep = "\\P"; break;
        default:
            if (!printable(c)) {
                if (c <= 0xFF)
                    snprintf(esc, sizeof(esc), "\\x%02X", (unsigned)c);
                else if (c <= 0xFFFF)
                    snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)c);
                else
                    snprintf(esc, sizeof(esc), "\\U%08X", (unsigned)c);
                rep = esc;
            }
        }
        if (rep)
            fl_strbuf_adds(sb, rep);
        else
            fl_strbuf_add(sb, s + start, i - start);
    }
    fl_strbuf_addc(sb, '"');
}

static void put_single_quoted(fl_strbuf *sb, const char *s, size_t n)
{
    fl_strbuf_addc(sb, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            fl_strbuf_addc(sb, '\'');
        fl_strbuf_addc(sb, s[i]);
    }
    fl_strbuf_addc(sb, '\'');
}

/* A one-line rendering of a string: plain, single- or double-quoted. */
static void put_inline_string(fl_strbuf *sb, const char *s, size_t n)
{
    if (resolves_to_other_type(s, n) && all_printable(s, n, false))
        put_double_quoted(sb, s, n);
    else if (plain_ok(s, n))
        fl_strbuf_add(sb, s, n);
    else if (n > 0 && all_printable(s, n, false))
        put_single_quoted(sb, s, n);
    else
        put_double_quoted(sb, s, n);
}

/* Multi-line strings go out as literal blocks when that is exact. */
static bool literal_ok(const char *s, size_t n)
{
    if (n == 0 || !memchr(s, '\n', n) || !all_printable(s, n, true))
        return false;
    /* A first line starting with blanks would need an indentation indicator,
     * and a string of only line breaks has no content line to anchor one. */
    if (s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
        return false;
    /* A tab right after the indentation confuses some readers; quote instead. */
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == '\n' && s[i + 1] == '\t')
            return false;
    return true;
}

static void put_literal(fl_strbuf *sb, const char *s, size_t n, int indent)
{
    size_t trailing = 0;
    while (trailing < n && s[n - 1 - trailing] == '\n')
        trailing++;
    fl_strbuf_adds(sb, trailing == 0 ? "|-" : trailing == 1 ? "|" : "|+");
    fl_strbuf_addc(sb, '\n');
    size_t body = trailing > 0 ? n - 1 : n; /* the final break is the chomping's */
    size_t start = 0;
    for (size_t i = 0; i <= body; i++) {
        if (i < body && s[i] != '\n')
            continue;
        if (i > start) {
            put_indent(sb, indent);
            fl_strbuf_add(sb, s + start, i - start);
        }
        fl_strbuf_addc(sb, '\n');
        start = i + 1;
    }
}

static void put_real(fl_strbuf *sb, double d)
{
    char buf[40];
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, sizeof(buf), "%.*g", p, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    /* Keep it a float on the way back in: "3" would read as an integer. */
    if (!strpbrk(buf, ".eEn"))
        strcat(buf, ".0");
    fl_strbuf_adds(sb, buf);
}

/* Scalars and empty collections: everything that fits after "key: " or "- ".
 * Multi-line strings continue on following lines at `indent`. */
static void put_scalar(fl_strbuf *sb, const json_t *v, int indent)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        fl_strbuf_adds(sb, "{}\n");
        return;
    case JSON_ARRAY:
        fl_strbuf_adds(sb, "[]\n");
        return;
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (literal_ok(s, n)) {
            put_literal(sb, s, n, indent);
            return;
        }
        put_inline_string(sb, s, n);
        break;
    }
    case JSON_INTEGER: {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        fl_strbuf_adds(sb, buf);
        break;
    }
    case JSON_REAL:
        put_real(sb, json_real_value(v));
        break;
    case JSON_TRUE:
        fl_strbuf_adds(sb, "true");
        break;
    case JSON_FALSE:
        fl_strbuf_adds(sb, "false");
        break;
    case JSON_NULL:
        fl_strbuf_adds(sb, "null");
        break;
    }
    fl_strbuf_addc(sb, '\n');
}

static bool is_collection(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) || (json_is_array(v) && json_array_size(v) > 0);
}

/* Implicit keys are limited to 1024 characters; longer ones use "? key". */
#define MAX_IMPLICIT_KEY 1000

static void dump_node(fl_strbuf *sb, const json_t *v, int indent, bool inline_first);

static void dump_object(fl_strbuf *sb, const json_t *v, int indent, bool inline_first)
{
    bool first = true;
    for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
        const char *k = json_object_iter_key(it);
        size_t kl = json_object_iter_key_len(it);
        json_t *val = json_object_iter_value(it);
        if (!(first && inline_first))
            put_indent(sb, indent);
        first = false;
        size_t before = sb->len;
        put_inline_string(sb, k, kl);
        bool explicit_key = sb->len - before > MAX_IMPLICIT_KEY;
        if (explicit_key) {
            /* Re-emit as "? key" on its own line and ":" below it. */
            char *key_text = fl_strndup(sb->p + before, sb->len - before);
            fl_strbuf_truncate(sb, before);
            fl_strbuf_adds(sb, "? ");
            fl_strbuf_adds(sb, key_text);
            free(key_text);
            fl_strbuf_addc(sb, '\n');
            put_indent(sb, indent);
        }
        fl_strbuf_addc(sb, ':');
        if (is_collection(val)) {
            fl_strbuf_addc(sb, '\n');
            /* kubectl style: a sequence under a key sits at the key's column. */
            int child = json_is_array(val) && !explicit_key ? indent : indent + 2;
            dump_node(sb, val, child, false);
        } else {
            fl_strbuf_addc(sb, ' ');
            put_scalar(sb, val, indent + 2);
        }
    }
}

static void dump_array(fl_strbuf *sb, const json_t *v, int indent, bool inline_first)
{
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *item = json_array_get(v, i);
        if (!(i == 0 && inline_first))
            put_indent(sb, indent);
        fl_strbuf_adds(sb, "- ");
        if (is_collection(item))
            dump_node(sb, item, indent + 2, true);
        else
            put_scalar(sb, item, indent + 2);
    }
}

/* Write v at `indent`; with inline_first the cursor already sits at that
 * column (after "- "), so the first line needs no indentation. */
static void dump_node(fl_strbuf *sb, const json_t *v, int indent, bool inline_first)
{
    if (json_is_object(v) && json_object_size(v) > 0)
        dump_object(sb, v, indent, inline_first);
    else if (json_is_array(v) && json_array_size(v) > 0)
        dump_array(sb, v, indent, inline_first);
    else {
        if (!inline_first)
            put_indent(sb, indent);
        put_scalar(sb, v, indent + 2);
    }
}

char *fl_yaml_dump(const json_t *v)
{
    fl_strbuf sb = FL_STRBUF_INIT;
    if (!v)
        fl_strbuf_adds(&sb, "null\n");
    else
        dump_node(&sb, v, 0, false);
    return fl_strbuf_take(&sb);
}
