/* selector.c - Kubernetes label and field selectors (contract in selector.h).
 *
 * Label selectors are parsed into a flat list of requirements that are ANDed
 * together. Every textual form reduces to six operators: In (covers '=' and
 * '=='), NotIn (covers '!='), Exists, DoesNotExist, and the numeric Gt/Lt that
 * Kubernetes also accepts in the text syntax ("replicas>3"). The structured
 * metav1.LabelSelector form reduces to the same list, so matching is one loop.
 *
 * The text parser follows the grammar of k8s.io/apimachinery's labels.Parse:
 * a small lexer (identifiers are runs of anything that is not whitespace and
 * not one of "=!(),<>"), keywords "in"/"notin" only in operator position,
 * keys checked as qualified names and values as label values. Messages quote
 * the selector and the offending token, so an API error explains itself.
 *
 * Matching semantics, as in Kubernetes: '!=' and 'notin' also match objects
 * that lack the key; 'in', '=', Gt and Lt require it.
 *
 * Field selectors follow fields.ParseSelector: terms split on unescaped ',',
 * the first unescaped "!=", "==" or "=" splits field from value, the value may
 * escape '\\', ',' and '=' with a backslash, and empty terms are skipped. We
 * additionally trim blanks around the field name and value. */
#include "core/selector.h"

#include "core/err.h"
#include "core/mem.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- names -- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A label value or the name part of a key: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9],
 * at most 63 characters. Empty is allowed only for values (caller decides). */
static const char *check_name_chars(const char *s, size_t n)
{
    if (n > 63)
        return "must be no more than 63 characters";
    if (n == 0)
        return NULL;
    if (!is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return "must start and end with an alphanumeric character";
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return "may contain only alphanumeric characters, '-', '_' or '.'";
    return NULL;
}

/* A DNS-1123 subdomain (the optional key prefix): lowercase alphanumerics, '-'
 * and '.', each dot-separated label starting and ending alphanumeric, <= 253. */
static const char *check_dns_subdomain(const char *s, size_t n)
{
    if (n == 0)
        return "prefix part must not be empty";
    if (n > 253)
        return "prefix part must be no more than 253 characters";
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            char c = s[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                return "prefix part must be a lowercase DNS subdomain (a-z, 0-9, '-' and '.')";
            continue;
        }
        /* end of one dot-separated label [start, i) */
        if (i == start || s[start] == '-' || s[i - 1] == '-')
            return "prefix part must be a DNS subdomain whose labels start and end with an alphanumeric character";
        start = i + 1;
    }
    return NULL;
}

/* Qualified name: [prefix/]name. Returns NULL if valid, else the reason. */
static const char *check_key(const char *s, size_t n)
{
    if (n == 0)
        return "name part must not be empty";
    const char *slash = memchr(s, '/', n);
    const char *name = s;
    size_t name_len = n;
    if (slash) {
        const char *why = check_dns_subdomain(s, (size_t)(slash - s));
        if (why)
            return why;
        name = slash + 1;
        name_len = n - (size_t)(name - s);
        if (memchr(name, '/', name_len))
            return "must contain at most one '/'";
        if (name_len == 0)
            return "name part must not be empty";
    }
    const char *why = check_name_chars(name, name_len);
    if (why == NULL)
        return NULL;
    /* Reword for the name part so the user knows which half is wrong. */
    if (strstr(why, "63"))
        return "name part must be no more than 63 characters";
    if (strstr(why, "start"))
        return "name part must start and end with an alphanumeric character";
    return "name part may contain only alphanumeric characters, '-', '_' or '.'";
}

static const char *check_value(const char *s, size_t n)
{
    return check_name_chars(s, n);
}

/* ------------------------------------------------------- requirements -- */

enum req_op { OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS, OP_GT, OP_LT };

struct req {
    char *key;
    enum req_op op;
    char **vals;
    size_t nvals;
    long long num; /* OP_GT / OP_LT operand */
};

struct fl_labelsel {
    struct req *reqs;
    size_t n, cap;
};

static struct req *sel_add(fl_labelsel *sel, const char *key, size_t key_len, enum req_op op)
{
    if (sel->n == sel->cap) {
        sel->cap = sel->cap ? sel->cap * 2 : 4;
        sel->reqs = fl_realloc(sel->reqs, sel->cap * sizeof(*sel->reqs));
    }
    struct req *r = &sel->reqs[sel->n++];
    memset(r, 0, sizeof(*r));
    r->key = fl_strndup(key, key_len);
    r->op = op;
    return r;
}

static void req_add_value(struct req *r, const char *v, size_t n)
{
    /* The value list is a set: duplicates ("in (a,a)") collapse. */
    for (size_t i = 0; i < r->nvals; i++)
        if (strlen(r->vals[i]) == n && memcmp(r->vals[i], v, n) == 0)
            return;
    r->vals = fl_realloc(r->vals, (r->nvals + 1) * sizeof(*r->vals));
    r->vals[r->nvals++] = fl_strndup(v, n);
}

void fl_labelsel_free(fl_labelsel *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n; i++) {
        for (size_t j = 0; j < sel->reqs[i].nvals; j++)
            free(sel->reqs[i].vals[j]);
        free(sel->reqs[i].vals);
        free(sel->reqs[i].key);
    }
    free(sel->reqs);
    free(sel);
}

bool fl_labelsel_empty(const fl_labelsel *sel)
{
    return sel == NULL || sel->n == 0;
}

static bool parse_int64(const char *s, long long *out)
{
    if (*s == '\0')
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || isspace((unsigned char)*s))
        return false;
    *out = v;
    return true;
}

static bool req_match(const struct req *r, const json_t *labels)
{
    json_t *v = json_is_object(labels) ? json_object_get(labels, r->key) : NULL;
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    switch (r->op) {
    case OP_EXISTS:
        return v != NULL;
    case OP_NOTEXISTS:
        return v == NULL;
    case OP_IN:
    case OP_NOTIN: {
        bool found = false;
        for (size_t i = 0; s && i < r->nvals && !found; i++)
            found = strcmp(s, r->vals[i]) == 0;
        return r->op == OP_IN ? found : !found;
    }
    case OP_GT:
    case OP_LT: {
        long long n;
        if (!s || !parse_int64(s, &n))
            return false;
        return r->op == OP_GT ? n > r->num : n < r->num;
    }
    }
    return false;
}

bool fl_labelsel_match(const fl_labelsel *sel, const json_t *labels)
{
    if (!sel)
        return true;
    for (size_t i = 0; i < sel->n; i++)
        if (!req_match(&sel->reqs[i], labels))
            return false;
    return true;
}

/* ------------------------------------------------------------- lexer -- */

enum tok {
    T_EOS, T_IDENT, T_COMMA, T_OPEN, T_CLOSE,
    T_EQ, T_DEQ, T_NEQ, T_NOT, T_GT, T_LT, T_IN, T_NOTIN
};

struct lexer {
    const char *text;
    size_t pos;
    /* last token */
    enum tok tok;
    const char *lit;
    size_t len;
    size_t at; /* offset of the token in text */
};

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Scan the next token. In value position the words "in"/"notin" are plain
 * identifiers; elsewhere they are operators. */
static enum tok lex_next(struct lexer *lx, bool values)
{
    const char *s = lx->text;
    while (is_blank(s[lx->pos]))
        lx->pos++;
    lx->at = lx->pos;
    lx->lit = s + lx->pos;
    char c = s[lx->pos];
    if (c == '\0') {
        lx->len = 0;
        return lx->tok = T_EOS;
    }
    if (is_special(c)) {
        /* Longest match, as the Kubernetes lexer does: "!=" before "!". Every
         * special character is a token on its own, so this always succeeds. */
        static const struct { const char *sym; enum tok t; } ops[] = {
            { "!=", T_NEQ }, { "==", T_DEQ }, { "=", T_EQ }, { "!", T_NOT }, { ">", T_GT },
            { "<", T_LT }, { ",", T_COMMA }, { "(", T_OPEN }, { ")", T_CLOSE },
        };
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
            size_t l = strlen(ops[i].sym);
            if (strncmp(s + lx->pos, ops[i].sym, l) == 0) {
                lx->len = l;
                lx->pos += l;
                return lx->tok = ops[i].t;
            }
        }
    }
    size_t n = 0;
    while (s[lx->pos + n] != '\0' && !is_blank(s[lx->pos + n]) && !is_special(s[lx->pos + n]))
        n++;
    lx->len = n;
    lx->pos += n;
    if (!values && n == 2 && memcmp(lx->lit, "in", 2) == 0)
        return lx->tok = T_IN;
    if (!values && n == 5 && memcmp(lx->lit, "notin", 5) == 0)
        return lx->tok = T_NOTIN;
    return lx->tok = T_IDENT;
}

/* Peek without consuming. */
static enum tok lex_peek(struct lexer *lx, bool values)
{
    struct lexer save = *lx;
    enum tok t = lex_next(lx, values);
    *lx = save;
    return t;
}

static char *found_text(const struct lexer *lx)
{
    if (lx->tok == T_EOS)
        return fl_strdup("end of string");
    return fl_asprintf("'%.*s'", (int)lx->len, lx->lit);
}

static int lex_error(const struct lexer *lx, char **err, const char *expected)
{
    char *found = found_text(lx);
    *err = fl_asprintf("invalid label selector \"%s\": at position %zu found %s, expected %s", lx->text,
                       lx->at + 1, found, expected);
    free(found);
    return FL_EINVAL;
}

static int check_key_tok(const struct lexer *lx, char **err)
{
    const char *why = check_key(lx->lit, lx->len);
    if (!why)
        return 0;
    *err = fl_asprintf("invalid label selector \"%s\": key \"%.*s\": %s", lx->text, (int)lx->len, lx->lit, why);
    return FL_EINVAL;
}

static int check_value_tok(const struct lexer *lx, const char *v, size_t n, char **err)
{
    const char *why = check_value(v, n);
    if (!why)
        return 0;
    *err = fl_asprintf("invalid label selector \"%s\": value \"%.*s\": %s", lx->text, (int)n, v, why);
    return FL_EINVAL;
}

/* in (a, b, c): values after '(' up to ')'. Empty entries mean "" as in k8s. */
static int parse_value_list(struct lexer *lx, struct req *r, char **err)
{
    if (lex_next(lx, true) != T_OPEN)
        return lex_error(lx, err, "'('");
    bool want_value = true; /* at list start or after a comma */
    for (;;) {
        enum tok t = lex_next(lx, true);
        if (t == T_IDENT && want_value) {
            int rc = check_value_tok(lx, lx->lit, lx->len, err);
            if (rc)
                return rc;
            req_add_value(r, lx->lit, lx->len);
            want_value = false;
        } else if (t == T_COMMA) {
            if (want_value)
                req_add_value(r, "", 0); /* "(,a)" or "(a,,b)" */
            want_value = true;
        } else if (t == T_CLOSE) {
            if (want_value && r->nvals > 0)
                req_add_value(r, "", 0); /* "(a,)" */
            break;
        } else {
            return lex_error(lx, err, want_value ? "a value, ',' or ')'" : "',' or ')'");
        }
    }
    if (r->nvals == 0) {
        *err = fl_asprintf("invalid label selector \"%s\": at position %zu: 'in' and 'notin' need at least one "
                           "value in the parentheses",
                           lx->text, lx->at + 1);
        return FL_EINVAL;
    }
    return 0;
}

static int parse_requirement(struct lexer *lx, fl_labelsel *sel, char **err)
{
    enum tok t = lex_next(lx, false);
    if (t == T_NOT) {
        if (lex_next(lx, false) != T_IDENT)
            return lex_error(lx, err, "a label key after '!'");
        int rc = check_key_tok(lx, err);
        if (rc)
            return rc;
        sel_add(sel, lx->lit, lx->len, OP_NOTEXISTS);
        return 0;
    }
    if (t != T_IDENT)
        return lex_error(lx, err, "a label key");
    int rc = check_key_tok(lx, err);
    if (rc)
        return rc;
    const char *key = lx->lit;
    size_t key_len = lx->len;

    t = lex_peek(lx, false);
    if (t == T_EOS || t == T_COMMA) {
        sel_add(sel, key, key_len, OP_EXISTS);
        return 0;
    }
    lex_next(lx, false);
    struct req *r;
    switch (t) {
    case T_IN:
    case T_NOTIN:
        r = sel_add(sel, key, key_len, t == T_IN ? OP_IN : OP_NOTIN);
        return parse_value_list(lx, r, err);
    case T_EQ:
    case T_DEQ:
    case T_NEQ: {
        r = sel_add(sel, key, key_len, t == T_NEQ ? OP_NOTIN : OP_IN);
        enum tok v = lex_peek(lx, true);
        if (v == T_EOS || v == T_COMMA) { /* "a=" means a is the empty string */
            req_add_value(r, "", 0);
            return 0;
        }
        if (lex_next(lx, true) != T_IDENT)
            return lex_error(lx, err, "a label value");
        rc = check_value_tok(lx, lx->lit, lx->len, err);
        if (rc)
            return rc;
        req_add_value(r, lx->lit, lx->len);
        return 0;
    }
    case T_GT:
    case T_LT: {
        r = sel_add(sel, key, key_len, t == T_GT ? OP_GT : OP_LT);
        if (lex_next(lx, true) != T_IDENT)
            return lex_error(lx, err, "an integer");
        char *num = fl_strndup(lx->lit, lx->len);
        bool ok = parse_int64(num, &r->num);
        free(num);
        if (!ok) {
            *err = fl_asprintf("invalid label selector \"%s\": value \"%.*s\" for '%s' must be an integer",
                               lx->text, (int)lx->len, lx->lit, t == T_GT ? ">" : "<");
            return FL_EINVAL;
        }
        req_add_value(r, lx->lit, lx->len);
        return 0;
    }
    default:
        return lex_error(lx, err, "one of '=', '==', '!=', 'in', 'notin', '>', '<', ',' or end of string");
    }
}

int fl_labelsel_parse(const char *text, fl_labelsel **out, char **err)
{
    *out = NULL;
    *err = NULL;
    fl_labelsel *sel = fl_calloc(1, sizeof(*sel));
    struct lexer lx = { .text = text ? text : "" };
    if (lex_peek(&lx, false) == T_EOS) {
        *out = sel;
        return 0;
    }
    for (;;) {
        int rc = parse_requirement(&lx, sel, err);
        if (rc) {
            fl_labelsel_free(sel);
            return rc;
        }
        enum tok t = lex_next(&lx, false);
        if (t == T_EOS)
            break;
        if (t != T_COMMA) {
            rc = lex_error(&lx, err, "',' or end of string");
            fl_labelsel_free(sel);
            return rc;
        }
    }
    *out = sel;
    return 0;
}

/* -------------------------------------------------- structured selector -- */

static int structured_error(char **err, char *msg)
{
    *err = msg;
    return FL_EINVAL;
}

static int from_match_labels(const json_t *ml, fl_labelsel *sel, char **err)
{
    if (!ml || json_is_null(ml))
        return 0;
    if (!json_is_object(ml))
        return structured_error(err, fl_strdup("matchLabels: Invalid value: must be an object of key: value strings"));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ml, k, v) {
        const char *why = check_key(k, strlen(k));
        if (why)
            return structured_error(err, fl_asprintf("matchLabels: Invalid value: \"%s\": %s", k, why));
        if (!json_is_string(v))
            return structured_error(err, fl_asprintf("matchLabels[%s]: Invalid value: must be a string", k));
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        why = check_value(s, n);
        if (why || strlen(s) != n)
            return structured_error(err, fl_asprintf("matchLabels[%s]: Invalid value: \"%s\": %s", k, s,
                                                     why ? why : "must not contain NUL"));
        struct req *r = sel_add(sel, k, strlen(k), OP_IN);
        req_add_value(r, s, n);
    }
    return 0;
}

static int from_expression(const json_t *e, size_t i, fl_labelsel *sel, char **err)
{
    if (!json_is_object(e))
        return structured_error(err, fl_asprintf("matchExpressions[%zu]: Invalid value: must be an object", i));
    json_t *key = json_object_get(e, "key");
    json_t *op = json_object_get(e, "operator");
    json_t *vals = json_object_get(e, "values");
    if (!json_is_string(key) || json_string_length(key) == 0)
        return structured_error(err, fl_asprintf(key && !json_is_string(key)
                                                     ? "matchExpressions[%zu].key: Invalid value: must be a string"
                                                     : "matchExpressions[%zu].key: Required value",
                                                 i));
    const char *k = json_string_value(key);
    const char *why = check_key(k, json_string_length(key));
    if (why || strlen(k) != json_string_length(key))
        return structured_error(err, fl_asprintf("matchExpressions[%zu].key: Invalid value: \"%s\": %s", i, k,
                                                 why ? why : "must not contain NUL"));
    if (!json_is_string(op))
        return structured_error(err, fl_asprintf("matchExpressions[%zu].operator: Required value", i));
    const char *o = json_string_value(op);
    enum req_op rop;
    if (strcmp(o, "In") == 0)
        rop = OP_IN;
    else if (strcmp(o, "NotIn") == 0)
        rop = OP_NOTIN;
    else if (strcmp(o, "Exists") == 0)
        rop = OP_EXISTS;
    else if (strcmp(o, "DoesNotExist") == 0)
        rop = OP_NOTEXISTS;
    else
        return structured_error(err, fl_asprintf("matchExpressions[%zu].operator: Unsupported value: \"%s\": "
                                                 "supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
                                                 i, o));
    if (vals && !json_is_null(vals) && !json_is_array(vals))
        return structured_error(err,
                                fl_asprintf("matchExpressions[%zu].values: Invalid value: must be a list of strings", i));
    size_t nvals = json_is_array(vals) ? json_array_size(vals) : 0;
    if ((rop == OP_IN || rop == OP_NOTIN) && nvals == 0)
        return structured_error(err, fl_asprintf("matchExpressions[%zu].values: Required value: must be specified "
                                                 "when `operator` is 'In' or 'NotIn'",
                                                 i));
    if ((rop == OP_EXISTS || rop == OP_NOTEXISTS) && nvals > 0)
        return structured_error(err, fl_asprintf("matchExpressions[%zu].values: Forbidden: may not be specified "
                                                 "when `operator` is 'Exists' or 'DoesNotExist'",
                                                 i));
    for (size_t j = 0; j < nvals; j++) {
        json_t *v = json_array_get(vals, j);
        if (!json_is_string(v))
            return structured_error(err,
                                    fl_asprintf("matchExpressions[%zu].values[%zu]: Invalid value: must be a string", i, j));
        const char *s = json_string_value(v);
        why = check_value(s, json_string_length(v));
        if (why || strlen(s) != json_string_length(v))
            return structured_error(err, fl_asprintf("matchExpressions[%zu].values[%zu]: Invalid value: \"%s\": %s", i,
                                                     j, s, why ? why : "must not contain NUL"));
    }
    struct req *r = sel_add(sel, k, strlen(k), rop);
    for (size_t j = 0; j < nvals; j++) {
        json_t *v = json_array_get(vals, j);
        req_add_value(r, json_string_value(v), json_string_length(v));
    }
    return 0;
}

int fl_labelsel_from_json(const json_t *js, fl_labelsel **out, char **err)
{
    *out = NULL;
    *err = NULL;
    fl_labelsel *sel = fl_calloc(1, sizeof(*sel));
    int rc = 0;
    if (js == NULL || json_is_null(js))
        goto done;
    if (!json_is_object(js)) {
        rc = structured_error(err, fl_strdup("selector: Invalid value: must be an object with matchLabels and/or "
                                             "matchExpressions"));
        goto done;
    }
    rc = from_match_labels(json_object_get(js, "matchLabels"), sel, err);
    if (rc)
        goto done;
    json_t *exprs = json_object_get(js, "matchExpressions");
    if (exprs && !json_is_null(exprs)) {
        if (!json_is_array(exprs)) {
            rc = structured_error(err, fl_strdup("matchExpressions: Invalid value: must be a list"));
            goto done;
        }
        for (size_t i = 0; i < json_array_size(exprs) && rc == 0; i++)
            rc = from_expression(json_array_get(exprs, i), i, sel, err);
    }
done:
    if (rc) {
        fl_labelsel_free(sel);
        return rc;
    }
    *out = sel;
    return 0;
}

/* ---------------------------------------------------- field selectors -- */

struct field_req {
    char *field;
    char *value;
    bool neq;
};

struct fl_fieldsel {
    struct field_req *reqs;
    size_t n;
};

void fl_fieldsel_free(fl_fieldsel *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n; i++) {
        free(sel->reqs[i].field);
        free(sel->reqs[i].value);
    }
    free(sel->reqs);
    free(sel);
}

size_t fl_fieldsel_count(const fl_fieldsel *sel)
{
    return sel ? sel->n : 0;
}

const char *fl_fieldsel_field(const fl_fieldsel *sel, size_t i)
{
    return sel && i < sel->n ? sel->reqs[i].field : NULL;
}

const char *fl_fieldsel_exact(const fl_fieldsel *sel, const char *field)
{
    for (size_t i = 0; sel && i < sel->n; i++)
        if (!sel->reqs[i].neq && strcmp(sel->reqs[i].field, field) == 0)
            return sel->reqs[i].value;
    return NULL;
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((*s)[*n - 1]))
        (*n)--;
}

/* Undo backslash escapes in a value; unescaped ',' and '=' are errors. */
static int unescape_value(const char *text, const char *v, size_t n, char **out, char **err)
{
    char *buf = fl_malloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '\\') {
            if (i + 1 == n) {
                *err = fl_asprintf("invalid field selector \"%s\": value \"%.*s\" ends with an unfinished escape "
                                   "'\\'",
                                   text, (int)n, v);
                goto fail;
            }
            char e = v[++i];
            if (e != '\\' && e != ',' && e != '=') {
                *err = fl_asprintf("invalid field selector \"%s\": value \"%.*s\" has the escape '\\%c'; only "
                                   "'\\\\', '\\,' and '\\=' are allowed",
                                   text, (int)n, v, e);
                goto fail;
            }
            buf[o++] = e;
        } else if (c == ',' || c == '=') {
            *err = fl_asprintf("invalid field selector \"%s\": value \"%.*s\" contains an unescaped '%c'; write "
                               "'\\%c'",
                               text, (int)n, v, c, c);
            goto fail;
        } else {
            buf[o++] = c;
        }
    }
    buf[o] = '\0';
    *out = buf;
    return 0;
fail:
    free(buf);
    return FL_EINVAL;
}

static int parse_term(const char *text, const char *t, size_t n, fl_fieldsel *sel, char **err)
{
    /* Find the first unescaped operator; "!=" and "==" before "=". */
    size_t i, op_len = 0;
    bool neq = false;
    for (i = 0; i < n; i++) {
        if (t[i] == '\\') {
            i++;
            continue;
        }
        if (t[i] == '!' && i + 1 < n && t[i + 1] == '=') {
            op_len = 2;
            neq = true;
            break;
        }
        if (t[i] == '=') {
            op_len = (i + 1 < n && t[i + 1] == '=') ? 2 : 1;
            break;
        }
    }
    if (op_len == 0) {
        *err = fl_asprintf("invalid field selector \"%s\": term \"%.*s\" has no operator; use field=value, "
                           "field==value or field!=value",
                           text, (int)n, t);
        return FL_EINVAL;
    }
    const char *f = t;
    size_t fn = i;
    const char *v = t + i + op_len;
    size_t vn = n - i - op_len;
    trim(&f, &fn);
    trim(&v, &vn);
    if (fn == 0) {
        *err = fl_asprintf("invalid field selector \"%s\": term \"%.*s\" has no field name", text, (int)n, t);
        return FL_EINVAL;
    }
    char *value = NULL;
    int rc = unescape_value(text, v, vn, &value, err);
    if (rc)
        return rc;
    sel->reqs = fl_realloc(sel->reqs, (sel->n + 1) * sizeof(*sel->reqs));
    sel->reqs[sel->n].field = fl_strndup(f, fn);
    sel->reqs[sel->n].value = value;
    sel->reqs[sel->n].neq = neq;
    sel->n++;
    return 0;
}

int fl_fieldsel_parse(const char *text, fl_fieldsel **out, char **err)
{
    *out = NULL;
    *err = NULL;
    fl_fieldsel *sel = fl_calloc(1, sizeof(*sel));
    if (!text)
        text = "";
    size_t start = 0, i;
    for (i = 0;; i++) {
        if (text[i] == '\\' && text[i + 1] != '\0') {
            i++;
            continue;
        }
        if (text[i] != ',' && text[i] != '\0')
            continue;
        const char *t = text + start;
        size_t n = i - start;
        trim(&t, &n);
        if (n > 0) { /* empty terms ("a=b,,c=d") are skipped, as Kubernetes does */
            int rc = parse_term(text, t, n, sel, err);
            if (rc) {
                fl_fieldsel_free(sel);
                return rc;
            }
        }
        if (text[i] == '\0')
            break;
        start = i + 1;
    }
    *out = sel;
    return 0;
}

/* The selector-comparable text of obj's value at a dotted path. Caller frees. */
static char *field_text(const json_t *obj, const char *path)
{
    const json_t *cur = obj;
    const char *p = path;
    while (cur) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        cur = json_is_object(cur) ? json_object_getn(cur, p, n) : NULL;
        if (!dot)
            break;
        p = dot + 1;
    }
    if (!cur || json_is_null(cur))
        return fl_strdup("");
    if (json_is_string(cur))
        return fl_strndup(json_string_value(cur), json_string_length(cur));
    char *s = json_dumps(cur, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s)
        return fl_strdup("");
    char *r = fl_strdup(s);
    free(s);
    return r;
}

bool fl_fieldsel_match(const fl_fieldsel *sel, const json_t *obj)
{
    for (size_t i = 0; sel && i < sel->n; i++) {
        char *v = field_text(obj, sel->reqs[i].field);
        bool eq = strcmp(v, sel->reqs[i].value) == 0;
        free(v);
        if (eq == sel->reqs[i].neq)
            return false;
    }
    return true;
}
