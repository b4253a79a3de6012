/* validate.c - structural type checks and generic object validation.
 *
 * Two passes, in the order the API layer calls them (see validate.h):
 *   1. fl_validate_types: JSON types of known fields, from the kind's fl_field table
 *      (built-ins) or the CRD's structural schema (dynamic kinds). The first mismatch
 *      is the answer (a 400, like Kubernetes' decoder, which also stops at the first).
 *   2. fl_validate_object: ObjectMeta rules (name format per kind, labels, annotations,
 *      finalizers, ownerReferences, immutability on update), then the kind's own
 *      validator. Every problem becomes one cause; nothing stops early.
 *
 * The name/label syntax checks are hand-written scanners for the regular expressions
 * Kubernetes uses (k8s.io/apimachinery/pkg/api/validate/content); the messages are
 * the same text, so clients and docs that quote them still match.
 *
 * Also home of the cause helpers shared with validate_karmada.c (validate_priv.h). */
#include "api/validate.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/validate_priv.h"
#include "core/err.h"
#include "core/mem.h"
#include "core/wellknown.h"

/* ---------------------------------------------------------------------------------
 * Messages (k8s.io/apimachinery/pkg/api/validate/content), as single static strings.
 */
#define RE_LABEL "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define RE_SUBDOMAIN RE_LABEL "(\\." RE_LABEL ")*"
#define RE_KEY "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

#define MSG_SUBDOMAIN                                                                                          \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must " \
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '"        \
    RE_SUBDOMAIN "')"
#define MSG_LABEL                                                                                              \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "    \
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '"   \
    RE_LABEL "')"
#define MSG_DNS1035                                                                                            \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "    \
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "        \
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define MSG_KEY_BODY                                                                                           \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "   \
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '" RE_KEY "')"
#define MSG_VALUE                                                                                              \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "  \
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "  \
    "for validation is '(" RE_KEY ")?')"

/* ---------------------------------------------------------------------------------
 * Syntax scanners.
 */
static bool is_lower_alnum(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(int c)
{
    return isascii(c) && isalnum(c);
}

/* One RFC 1123 label in s[0..n): [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool label_ok(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum((unsigned char)s[0]) || !is_lower_alnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool subdomain_ok(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!label_ok(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool key_name_ok(const char *s, size_t n)
{
    if (n == 0 || !is_alnum((unsigned char)s[0]) || !is_alnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

const char *fl_validate_dns1123_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n > 253)
        return "must be no more than 253 bytes";
    if (!subdomain_ok(s, n))
        return MSG_SUBDOMAIN;
    return NULL;
}

const char *fl_validate_dns1123_label(const char *s)
{
    size_t n = strlen(s);
    if (n > 63)
        return "must be no more than 63 bytes";
    if (!label_ok(s, n))
        return n && subdomain_ok(s, n) ? "must not contain dots" : MSG_LABEL;
    return NULL;
}

static const char *dns1035_label(const char *s)
{
    size_t n = strlen(s);
    if (n > 63)
        return "must be no more than 63 bytes";
    if (!label_ok(s, n) || !(s[0] >= 'a' && s[0] <= 'z'))
        return MSG_DNS1035;
    return NULL;
}

const char *fl_validate_label_key(const char *s)
{
    const char *slash = strchr(s, '/');
    const char *name = s;
    if (slash) {
        if (strchr(slash + 1, '/'))
            return "a valid label key " MSG_KEY_BODY
                   " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        size_t plen = (size_t)(slash - s);
        if (plen == 0)
            return "prefix part must be non-empty";
        if (plen > 253)
            return "prefix part must be no more than 253 bytes";
        if (!subdomain_ok(s, plen))
            return "prefix part " MSG_SUBDOMAIN;
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n == 0)
        return "name part must be non-empty";
    if (n > 63)
        return "name part must be no more than 63 bytes";
    if (!key_name_ok(name, n))
        return "name part " MSG_KEY_BODY;
    return NULL;
}

const char *fl_validate_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n > 63)
        return "must be no more than 63 bytes";
    if (n > 0 && !key_name_ok(s, n))
        return MSG_VALUE;
    return NULL;
}

const char *fl_v_json_pointer(const char *s)
{
    if (s[0] != '\0' && s[0] != '/')
        return "JSON pointer must be empty or start with a \"/\"";
    return NULL;
}

/* ---------------------------------------------------------------------------------
 * Causes.
 */
void fl_cause_add(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fl_vasprintf(fmt, ap);
    va_end(ap);
    json_t *c = json_object();
    json_object_set_new(c, "reason", json_string(reason));
    json_object_set_new(c, "message", json_string(msg));
    json_object_set_new(c, "field", json_string(field ? field : ""));
    json_array_append_new(causes, c);
    free(msg);
}

char *fl_vpath(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, FL_VPATH_MAX, fmt, ap);
    va_end(ap);
    return buf;
}

/* Render a bad value the way field.Error.ErrorBody does. Caller frees. Long values are
 * cut: a cause names the problem, it need not echo a whole spec back. */
static char *value_text(const json_t *v)
{
    if (!v)
        return fl_strdup("null");
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!s)
        return fl_strdup("null");
    if (strlen(s) > 1024) {
        char *cut = fl_asprintf("%.1024s...", s);
        free(s);
        return cut;
    }
    return s;
}

void fl_v_required(json_t *causes, const char *field, const char *detail)
{
    if (detail && *detail)
        fl_cause_add(causes, "FieldValueRequired", field, "Required value: %s", detail);
    else
        fl_cause_add(causes, "FieldValueRequired", field, "Required value");
}

void fl_v_invalid(json_t *causes, const char *field, const json_t *value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *detail = fl_vasprintf(fmt, ap);
    va_end(ap);
    char *vt = value_text(value);
    if (*detail)
        fl_cause_add(causes, "FieldValueInvalid", field, "Invalid value: %s: %s", vt, detail);
    else
        fl_cause_add(causes, "FieldValueInvalid", field, "Invalid value: %s", vt);
    free(vt);
    free(detail);
}

void fl_v_invalid_str(json_t *causes, const char *field, const char *value, const char *detail)
{
    json_t *v = json_string(value ? value : "");
    if (!v) /* not UTF-8: show it as the empty string rather than lose the cause */
        v = json_string("");
    fl_v_invalid(causes, field, v, "%s", detail);
    json_decref(v);
}

void fl_v_unsupported(json_t *causes, const char *field, const json_t *value, const char *const *supported)
{
    char *vt = value_text(value);
    size_t cap = 64, len = 0;
    char *list = fl_malloc(cap);
    list[0] = '\0';
    for (size_t i = 0; supported[i]; i++) {
        size_t need = len + strlen(supported[i]) + 5;
        if (need > cap) {
            cap = need * 2;
            list = fl_realloc(list, cap);
        }
        len += (size_t)sprintf(list + len, "%s\"%s\"", i ? ", " : "", supported[i]);
    }
    fl_cause_add(causes, "FieldValueNotSupported", field, "Unsupported value: %s: supported values: %s", vt, list);
    free(list);
    free(vt);
}

void fl_v_forbidden(json_t *causes, const char *field, const char *detail)
{
    fl_cause_add(causes, "FieldValueForbidden", field, "Forbidden: %s", detail);
}

void fl_v_duplicate(json_t *causes, const char *field, const json_t *value, const char *detail)
{
    char *vt = value_text(value);
    if (detail)
        fl_cause_add(causes, "FieldValueDuplicate", field, "Duplicate value: %s: %s", vt, detail);
    else
        fl_cause_add(causes, "FieldValueDuplicate", field, "Duplicate value: %s", vt);
    free(vt);
}

const char *fl_v_str(const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *fl_v_nonempty(const json_t *obj, const char *key)
{
    const char *s = fl_v_str(obj, key);
    return s && *s ? s : NULL;
}

json_t *fl_v_obj(const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_object(v) ? v : NULL;
}

json_t *fl_v_arr(const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_array(v) ? v : NULL;
}

bool fl_v_in(const char *v, const char *const *allowed)
{
    for (size_t i = 0; v && allowed[i]; i++)
        if (strcmp(v, allowed[i]) == 0)
            return true;
    return false;
}

bool fl_v_enum(json_t *causes, const char *field, const json_t *obj, const char *key, const char *const *allowed,
               bool required)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v) || (json_is_string(v) && json_string_value(v)[0] == '\0' && !fl_v_in("", allowed))) {
        if (required)
            fl_v_required(causes, field, NULL);
        return false;
    }
    if (!json_is_string(v) || !fl_v_in(json_string_value(v), allowed)) {
        fl_v_unsupported(causes, field, v, allowed);
        return false;
    }
    return true;
}

const char *fl_v_require_str(json_t *causes, const char *field, const json_t *obj, const char *key)
{
    const char *s = fl_v_nonempty(obj, key);
    if (!s)
        fl_v_required(causes, field, NULL);
    return s;
}

void fl_v_label_name(json_t *causes, const char *field, const char *name)
{
    const char *msg = fl_validate_label_key(name ? name : "");
    if (msg)
        fl_v_invalid_str(causes, field, name, msg);
}

void fl_v_labels(json_t *causes, const char *field, const json_t *labels)
{
    if (!json_is_object(labels))
        return;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v) {
        const char *msg = fl_validate_label_key(k);
        if (msg)
            fl_v_invalid_str(causes, field, k, msg);
        if (json_is_string(v) && (msg = fl_validate_label_value(json_string_value(v))))
            fl_v_invalid(causes, field, v, "%s", msg);
    }
}

#define ANNOTATIONS_MAX (256 * 1024)

void fl_v_annotations(json_t *causes, const char *field, const json_t *annotations)
{
    if (!json_is_object(annotations))
        return;
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)annotations, k, v) {
        /* Kubernetes checks the lower-cased key and reports the key as written. */
        char *lower = fl_strdup(k);
        for (char *p = lower; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        const char *msg = fl_validate_label_key(lower);
        if (msg)
            fl_v_invalid_str(causes, field, k, msg);
        free(lower);
        total += strlen(k) + (json_is_string(v) ? json_string_length(v) : 0);
    }
    if (total > ANNOTATIONS_MAX)
        fl_cause_add(causes, "FieldValueTooLong", field, "Too long: may not be more than %d bytes", ANNOTATIONS_MAX);
}

void fl_v_label_selector(json_t *causes, const char *field, const json_t *sel)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};
    char p[FL_VPATH_MAX];
    if (!json_is_object(sel))
        return;
    fl_v_labels(causes, fl_vpath(p, "%s.matchLabels", field), fl_v_obj(sel, "matchLabels"));
    json_t *exprs = fl_v_arr(sel, "matchExpressions");
    size_t i;
    json_t *e;
    json_array_foreach(exprs, i, e) {
        const char *key = fl_v_str(e, "key");
        fl_v_label_name(causes, fl_vpath(p, "%s.matchExpressions[%zu].key", field, i), key);
        if (!fl_v_enum(causes, fl_vpath(p, "%s.matchExpressions[%zu].operator", field, i), e, "operator", ops, true))
            continue;
        const char *op = fl_v_str(e, "operator");
        json_t *vals = fl_v_arr(e, "values");
        size_t nv = vals ? json_array_size(vals) : 0;
        fl_vpath(p, "%s.matchExpressions[%zu].values", field, i);
        if ((!strcmp(op, "In") || !strcmp(op, "NotIn")) && nv == 0)
            fl_v_required(causes, p, "must be specified when `operator` is 'In' or 'NotIn'");
        else if ((!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) && nv > 0)
            fl_v_forbidden(causes, p, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    }
}

/* ---------------------------------------------------------------------------------
 * Type checks.
 */
typedef struct pathbuf {
    char s[FL_VPATH_MAX];
    size_t n;
} pathbuf;

/* Append pre, s and post (any may be ""), truncating at the buffer's end; returns the
 * length to pop back to. Plain copies: every field of every object written passes here. */
static size_t path_add(pathbuf *p, const char *pre, const char *s, const char *post)
{
    size_t saved = p->n;
    const char *parts[3] = {pre, s, post};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]);
        if (n > sizeof p->s - 1 - p->n)
            n = sizeof p->s - 1 - p->n;
        memcpy(p->s + p->n, parts[i], n);
        p->n += n;
    }
    p->s[p->n] = '\0';
    return saved;
}

static size_t path_index(pathbuf *p, size_t i)
{
    char num[24], *d = num + sizeof num;
    *--d = '\0';
    do
        *--d = (char)('0' + i % 10);
    while (i /= 10);
    return path_add(p, "[", d, "]");
}

static void path_pop(pathbuf *p, size_t saved)
{
    p->n = saved;
    p->s[saved] = '\0';
}

/* Append ".key" (or "key" at the root); keys that are not plain identifiers go in
 * brackets, as field.Path.Key renders map keys. */
static size_t path_key(pathbuf *p, const char *key, bool map_key)
{
    if (map_key)
        return path_add(p, "[", key, "]");
    return path_add(p, p->n ? "." : "", key, "");
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* A JSON real with an integral value (1.0) decodes into Go integers, so accept it. */
static bool is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    if (!json_is_real(v))
        return false;
    double d = json_real_value(v);
    return d == (double)(long long)d;
}

static const char *ftype_name(enum fl_ftype t)
{
    switch (t) {
    case FL_F_STRING: return "string";
    case FL_F_INT: return "integer";
    case FL_F_NUMBER: return "number";
    case FL_F_BOOL: return "boolean";
    case FL_F_OBJECT:
    case FL_F_MAP:
    case FL_F_MAPSTR: return "object";
    case FL_F_ARRAY: return "array";
    case FL_F_INTORSTR: return "integer or string";
    case FL_F_QUANTITY: return "string or number";
    case FL_F_ANY: break;
    }
    return "any";
}

static int type_error(char **msg, const pathbuf *p, const char *want, const json_t *v)
{
    *msg = fl_asprintf("%s: expected %s, got %s", p->n ? p->s : "<root>", want, json_type_name(v));
    return FL_EINVAL;
}

/* Check one value against a field type; null always passes (it decodes to the zero
 * value upstream). */
static int check_ftype(enum fl_ftype t, const json_t *v, pathbuf *p, char **msg)
{
    bool ok = true;
    if (json_is_null(v))
        return 0;
    switch (t) {
    case FL_F_ANY: break;
    case FL_F_STRING: ok = json_is_string(v); break;
    case FL_F_INT: ok = is_integral(v); break;
    case FL_F_NUMBER: ok = json_is_number(v); break;
    case FL_F_BOOL: ok = json_is_boolean(v); break;
    case FL_F_OBJECT:
    case FL_F_MAP: ok = json_is_object(v); break;
    case FL_F_ARRAY: ok = json_is_array(v); break;
    case FL_F_INTORSTR: ok = json_is_string(v) || is_integral(v); break;
    case FL_F_QUANTITY: ok = json_is_string(v) || json_is_number(v); break;
    case FL_F_MAPSTR: {
        if (!json_is_object(v)) {
            ok = false;
            break;
        }
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)v, k, e) {
            if (!json_is_string(e) && !json_is_null(e)) {
                size_t s = path_key(p, k, true);
                int rc = type_error(msg, p, "string", e);
                path_pop(p, s);
                return rc;
            }
        }
        break;
    }
    }
    return ok ? 0 : type_error(msg, p, ftype_name(t), v);
}

static int walk_table(const fl_field *tab, const json_t *root, pathbuf *p, char **msg);

/* The elements of a list, or the values of a map, against f->elem and f->sub. */
static int walk_members(const fl_field *f, const json_t *v, pathbuf *p, char **msg)
{
    bool map = f->type == FL_F_MAP;
    if ((map && !json_is_object(v)) || (!map && (f->type != FL_F_ARRAY || !json_is_array(v))))
        return 0;
    enum fl_ftype et = f->sub ? FL_F_OBJECT : f->elem;
    if (et == FL_F_ANY && !f->sub)
        return 0;
    const char *key;
    json_t *e;
    size_t i = 0;
    void *it = map ? json_object_iter((json_t *)v) : NULL;
    for (;;) {
        if (map) {
            if (!it)
                break;
            key = json_object_iter_key(it);
            e = json_object_iter_value(it);
            it = json_object_iter_next((json_t *)v, it);
        } else {
            if (i >= json_array_size(v))
                break;
            key = NULL;
            e = json_array_get(v, i);
        }
        size_t s = map ? path_key(p, key, true) : path_index(p, i);
        i++;
        int rc = check_ftype(et, e, p, msg);
        if (rc == 0 && f->sub && json_is_object(e))
            rc = walk_table(f->sub, e, p, msg);
        path_pop(p, s);
        if (rc)
            return rc;
    }
    return 0;
}

/* Resolve the dotted remainder `rest` of f->path below v, fanning out over list
 * elements (which the paths elide), and check whatever is found. */
static int walk_field(const fl_field *f, const json_t *v, const char *rest, pathbuf *p, char **msg)
{
    if (!v || json_is_null(v))
        return 0;
    if (*rest == '\0') {
        int rc = check_ftype(f->type, v, p, msg);
        if (rc == 0 && (f->type == FL_F_ARRAY || f->type == FL_F_MAP))
            return walk_members(f, v, p, msg);
        if (rc == 0 && f->sub)
            rc = walk_table(f->sub, v, p, msg);
        return rc;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            size_t s = path_index(p, i);
            int rc = walk_field(f, e, rest, p, msg);
            path_pop(p, s);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (!json_is_object(v))
        return type_error(msg, p, "object", v);
    const char *dot = strchr(rest, '.');
    size_t n = dot ? (size_t)(dot - rest) : strlen(rest);
    char key[256];
    if (n >= sizeof key)
        return 0;
    memcpy(key, rest, n);
    key[n] = '\0';
    json_t *child = json_object_get(v, key);
    if (!child)
        return 0;
    size_t s = path_key(p, key, false);
    int rc = walk_field(f, child, dot ? dot + 1 : "", p, msg);
    path_pop(p, s);
    return rc;
}

/* Does path lie at or below the top-level member top (NULL: every path does)? */
static bool under(const char *path, const char *top)
{
    if (!top)
        return true;
    size_t n = strlen(top);
    return !strncmp(path, top, n) && (path[n] == '\0' || path[n] == '.');
}

static int walk_table_under(const fl_field *tab, const json_t *root, const char *top, pathbuf *p, char **msg)
{
    for (const fl_field *f = tab; f && f->path; f++) {
        if (!under(f->path, top))
            continue;
        int rc = walk_field(f, root, f->path, p, msg);
        if (rc)
            return rc;
    }
    return 0;
}

static int walk_table(const fl_field *tab, const json_t *root, pathbuf *p, char **msg)
{
    return walk_table_under(tab, root, NULL, p, msg);
}

/* The metadata every object shares (ObjectMeta + TypeMeta). */
static const fl_field owner_ref_fields[] = {
    {"apiVersion", FL_F_STRING}, {"kind", FL_F_STRING},
    {"name", FL_F_STRING},       {"uid", FL_F_STRING},
    {"controller", FL_F_BOOL},   {"blockOwnerDeletion", FL_F_BOOL},
    {NULL},
};

static const fl_field meta_fields[] = {
    {"apiVersion", FL_F_STRING},
    {"kind", FL_F_STRING},
    {"metadata", FL_F_OBJECT},
    {"metadata.name", FL_F_STRING},
    {"metadata.generateName", FL_F_STRING},
    {"metadata.namespace", FL_F_STRING},
    {"metadata.uid", FL_F_STRING},
    {"metadata.resourceVersion", FL_F_STRING},
    {"metadata.generation", FL_F_INT},
    {"metadata.creationTimestamp", FL_F_STRING},
    {"metadata.deletionTimestamp", FL_F_STRING},
    {"metadata.deletionGracePeriodSeconds", FL_F_INT},
    {"metadata.labels", FL_F_MAPSTR},
    {"metadata.annotations", FL_F_MAPSTR},
    {"metadata.finalizers", FL_F_ARRAY},
    {"metadata.ownerReferences", FL_F_ARRAY, NULL, NULL, owner_ref_fields},
    {"metadata.managedFields", FL_F_ARRAY},
    {NULL},
};

/* Element types of metadata's string lists, which a path table cannot express. */
static int check_string_list(const json_t *obj, const char *key, pathbuf *p, char **msg)
{
    json_t *list = fl_v_arr(fl_v_obj(obj, "metadata"), key);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (!json_is_string(e)) {
            size_t s = path_add(p, "metadata.", key, "");
            path_index(p, i);
            int rc = type_error(msg, p, "string", e);
            path_pop(p, s);
            return rc;
        }
    }
    return 0;
}

/* Types per a CRD structural schema node. */
static int walk_schema(const json_t *schema, const json_t *v, pathbuf *p, char **msg, int depth)
{
    if (!json_is_object(schema) || !v || json_is_null(v) || depth > 64)
        return 0;
    if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string")))
        return json_is_string(v) || is_integral(v) ? 0 : type_error(msg, p, "integer or string", v);
    const char *type = fl_v_str(schema, "type");
    if (type && *type) {
        bool ok = true;
        if (!strcmp(type, "object"))
            ok = json_is_object(v);
        else if (!strcmp(type, "array"))
            ok = json_is_array(v);
        else if (!strcmp(type, "string"))
            ok = json_is_string(v);
        else if (!strcmp(type, "integer"))
            ok = is_integral(v);
        else if (!strcmp(type, "number"))
            ok = json_is_number(v);
        else if (!strcmp(type, "boolean"))
            ok = json_is_boolean(v);
        if (!ok)
            return type_error(msg, p, type, v);
    }
    if (json_is_object(v)) {
        json_t *props = fl_v_obj(schema, "properties");
        json_t *addl = json_object_get(schema, "additionalProperties");
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)v, k, e) {
            /* metadata at the root is ObjectMeta, checked by the fixed table. */
            if (depth == 0 && (!strcmp(k, "metadata") || !strcmp(k, "apiVersion") || !strcmp(k, "kind")))
                continue;
            json_t *sub = props ? json_object_get(props, k) : NULL;
            bool map_key = false;
            if (!sub && json_is_object(addl)) {
                sub = addl;
                map_key = true;
            }
            if (!sub)
                continue; /* unknown: pruned or preserved, not a type error */
            size_t s = path_key(p, k, map_key);
            int rc = walk_schema(sub, e, p, msg, depth + 1);
            path_pop(p, s);
            if (rc)
                return rc;
        }
    } else if (json_is_array(v)) {
        json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            size_t s = path_index(p, i);
            int rc = walk_schema(items, e, p, msg, depth + 1);
            path_pop(p, s);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int fl_validate_types_under(const fl_kind *k, const json_t *obj, const char *top, char **msg)
{
    pathbuf p = {.s = "", .n = 0};
    *msg = NULL;
    if (!json_is_object(obj)) {
        *msg = fl_asprintf("expected an object, got %s", obj ? json_type_name(obj) : "nothing");
        return FL_EINVAL;
    }
    int rc = walk_table(meta_fields, obj, &p, msg);
    if (!rc)
        rc = check_string_list(obj, "finalizers", &p, msg);
    if (!rc && k && k->fields)
        rc = walk_table_under(k->fields, obj, top, &p, msg);
    if (!rc && k && k->dynamic && k->crd_version) {
        json_t *schema = fl_v_obj(fl_v_obj(k->crd_version, "schema"), "openAPIV3Schema");
        const json_t *part = top ? json_object_get(obj, top) : NULL;
        if (schema && !top) {
            rc = walk_schema(schema, obj, &p, msg, 0);
        } else if (schema && part) {
            size_t s = path_key(&p, top, false);
            rc = walk_schema(json_object_get(fl_v_obj(schema, "properties"), top), part, &p, msg, 1);
            path_pop(&p, s);
        }
    }
    return rc;
}

int fl_validate_types(const fl_kind *k, const json_t *obj, char **msg)
{
    return fl_validate_types_under(k, obj, NULL, msg);
}

/* ---------------------------------------------------------------------------------
 * Object validation.
 */
static bool kind_is(const fl_kind *k, const char *group, const char *kind)
{
    return k && k->group && k->kind && !strcmp(k->group, group) && !strcmp(k->kind, kind);
}

/* Name syntax for the kind: NULL if fine, else the message. `prefix` is set for
 * generateName, whose trailing '-' is masked as upstream does. */
static const char *name_msg(const fl_kind *k, const json_t *obj, const char *name, bool prefix, char *tmp,
                            size_t tmplen)
{
    if (prefix) {
        size_t n = strlen(name);
        if (n && n < tmplen && name[n - 1] == '-') {
            memcpy(tmp, name, n + 1);
            tmp[n - 1] = 'a';
            name = tmp;
        }
    }
    if (kind_is(k, "", "Namespace"))
        return fl_validate_dns1123_label(name);
    /* a Service's name is a DNS name under the cluster domain and an env-var prefix in
     * its namespace's Pods, so kube-apiserver wants it to start with a letter */
    if (kind_is(k, "", "Service"))
        return dns1035_label(name);
    if (k && k->group && !strcmp(k->group, "rbac.authorization.k8s.io"))
        return fl_validate_rbac_name(name);
    if (kind_is(k, "cluster.karmada.io", "Cluster")) {
        /* Karmada: cluster names are DNS labels of at most 48 characters. */
        if (strlen(name) > 48)
            return "must be no more than 48 characters";
        return fl_validate_dns1123_label(name);
    }
    const char *m = fl_validate_dns1123_subdomain(name);
    if (m || prefix)
        return m;
    if (kind_is(k, "apiextensions.k8s.io", "CustomResourceDefinition")) {
        json_t *spec = fl_v_obj(obj, "spec");
        const char *plural = fl_v_str(fl_v_obj(spec, "names"), "plural");
        const char *group = fl_v_str(spec, "group");
        size_t pl = plural ? strlen(plural) : 0;
        if (!plural || !group || strncmp(name, plural, pl) != 0 || name[pl] != '.' || strcmp(name + pl + 1, group))
            return "must be spec.names.plural+\".\"+spec.group";
    }
    return NULL;
}

static void validate_owner_refs(const json_t *refs, json_t *causes)
{
    char p[FL_VPATH_MAX];
    size_t i, controllers = 0;
    json_t *r;
    json_array_foreach(refs, i, r) {
        static const struct {
            const char *key, *detail;
        } req[] = {{"apiVersion", "version must not be empty"},
                   {"kind", "kind must not be empty"},
                   {"name", "name must not be empty"},
                   {"uid", "uid must not be empty"}};
        for (size_t j = 0; j < sizeof req / sizeof req[0]; j++)
            if (!fl_v_nonempty(r, req[j].key))
                fl_v_invalid_str(causes, fl_vpath(p, "metadata.ownerReferences[%zu].%s", i, req[j].key),
                                 fl_v_str(r, req[j].key), req[j].detail);
        if (json_is_true(json_object_get(r, "controller")))
            controllers++;
    }
    if (controllers > 1)
        fl_v_invalid(causes, "metadata.ownerReferences", refs, "Only one reference can have Controller set to true");
}

/* On update: a field of metadata that may not change once set. The caller carries
 * uid/creationTimestamp over when the client omits them, so only a present, different
 * value is an error. */
/* The revision history limit a template may carry (docs/rollouts.md, "Revisions"): refused
 * here rather than ignored later, so a typo does not silently keep the default. A
 * non-negative decimal integer of at most 9 digits (it fits an int). */
static void revision_history_limit(const json_t *annotations, json_t *causes)
{
    json_t *v = json_object_get(annotations, FL_REVISION_HISTORY_LIMIT_ANNOTATION);
    if (!v)
        return;
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 0;
    bool ok = n > 0 && n <= 9;
    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '9';
    if (!ok)
        fl_v_invalid(causes, "metadata.annotations[" FL_REVISION_HISTORY_LIMIT_ANNOTATION "]", v,
                     "must be a non-negative integer (the number of revisions to keep)");
}

static void immutable(const json_t *m, const json_t *om, const char *key, json_t *causes)
{
    json_t *nv = json_object_get(m, key), *ov = json_object_get(om, key);
    if (!nv || json_is_null(nv) || (json_is_string(nv) && !*json_string_value(nv)))
        nv = NULL;
    if (!ov || json_is_null(ov) || (json_is_string(ov) && !*json_string_value(ov)))
        ov = NULL;
    bool same = (!nv && !ov) || (nv && ov && json_equal(nv, ov));
    if (!same && (nv || !strcmp(key, "name") || !strcmp(key, "namespace"))) {
        char p[FL_VPATH_MAX];
        fl_v_invalid(causes, fl_vpath(p, "metadata.%s", key), nv, "field is immutable");
    }
}

int fl_validate_object(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    size_t before = json_array_size(causes);
    json_t *m = fl_v_obj(obj, "metadata");
    char tmp[256];

    const char *gen = fl_v_nonempty(m, "generateName");
    if (gen) {
        const char *msg = name_msg(k, obj, gen, true, tmp, sizeof tmp);
        if (msg)
            fl_v_invalid_str(causes, "metadata.generateName", gen, msg);
    }
    const char *name = fl_v_nonempty(m, "name");
    if (!name) {
        fl_v_required(causes, "metadata.name", "name or generateName is required");
    } else {
        const char *msg = name_msg(k, obj, name, false, tmp, sizeof tmp);
        if (msg)
            fl_v_invalid_str(causes, "metadata.name", name, msg);
    }

    const char *ns = fl_v_nonempty(m, "namespace");
    if (k && k->namespaced) {
        if (!ns) {
            fl_v_required(causes, "metadata.namespace", NULL);
        } else {
            const char *msg = fl_validate_dns1123_label(ns);
            if (msg)
                fl_v_invalid_str(causes, "metadata.namespace", ns, msg);
        }
    } else if (k && ns) {
        fl_v_forbidden(causes, "metadata.namespace", "not allowed on this type");
    }

    fl_v_labels(causes, "metadata.labels", fl_v_obj(m, "labels"));
    fl_v_annotations(causes, "metadata.annotations", fl_v_obj(m, "annotations"));
    revision_history_limit(fl_v_obj(m, "annotations"), causes);

    json_t *fins = fl_v_arr(m, "finalizers");
    size_t i;
    json_t *f;
    char p[FL_VPATH_MAX];
    json_array_foreach(fins, i, f) {
        const char *s = json_string_value(f);
        const char *msg = s ? fl_validate_label_key(s) : NULL;
        if (msg)
            fl_v_invalid_str(causes, fl_vpath(p, "metadata.finalizers[%zu]", i), s, msg);
    }
    validate_owner_refs(fl_v_arr(m, "ownerReferences"), causes);

    if (old) {
        json_t *om = fl_v_obj(old, "metadata");
        immutable(m, om, "name", causes);
        immutable(m, om, "namespace", causes);
        immutable(m, om, "uid", causes);
        immutable(m, om, "creationTimestamp", causes);
    }

    if (k && k->validate)
        k->validate(k, obj, old, causes);
    return (int)(json_array_size(causes) - before);
}

/* ---------------------------------------------------------------------------------
 * Kind validators that are not Karmada's (Karmada's live in validate_karmada.c).
 */
void fl_validate_namespace(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    /* Nothing beyond the name (a DNS label, checked above): spec.finalizers is
     * server-managed. */
}

void fl_validate_crd(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    static const char *const scopes[] = {"Cluster", "Namespaced", NULL};
    char p[FL_VPATH_MAX];
    json_t *spec = fl_v_obj(obj, "spec");
    if (!spec) {
        fl_v_required(causes, "spec", NULL);
        return;
    }
    const char *group = fl_v_require_str(causes, "spec.group", spec, "group");
    if (group) {
        const char *msg = fl_validate_dns1123_subdomain(group);
        if (msg)
            fl_v_invalid_str(causes, "spec.group", group, msg);
        else if (!strchr(group, '.'))
            fl_v_invalid_str(causes, "spec.group", group, "should be a domain with at least one dot");
    }

    json_t *names = fl_v_obj(spec, "names");
    const char *plural = fl_v_require_str(causes, "spec.names.plural", names, "plural");
    const char *msg;
    if (plural && (msg = dns1035_label(plural)))
        fl_v_invalid_str(causes, "spec.names.plural", plural, msg);
    const char *singular = fl_v_nonempty(names, "singular");
    if (singular && (msg = dns1035_label(singular)))
        fl_v_invalid_str(causes, "spec.names.singular", singular, msg);
    const char *kind = fl_v_require_str(causes, "spec.names.kind", names, "kind");
    const char *list_kind = fl_v_nonempty(names, "listKind");
    if (kind && list_kind && !strcmp(kind, list_kind))
        fl_v_invalid_str(causes, "spec.names.listKind", list_kind, "kind and listKind may not be the same");
    json_t *shorts = fl_v_arr(names, "shortNames");
    size_t i;
    json_t *e;
    json_array_foreach(shorts, i, e) {
        const char *s = json_string_value(e);
        if (s && (msg = fl_validate_dns1123_label(s)))
            fl_v_invalid_str(causes, fl_vpath(p, "spec.names.shortNames[%zu]", i), s, msg);
    }

    fl_v_enum(causes, "spec.scope", spec, "scope", scopes, true);

    json_t *versions = fl_v_arr(spec, "versions");
    if (!versions || json_array_size(versions) == 0) {
        fl_v_required(causes, "spec.versions", "must have exactly one version marked as storage version");
        return;
    }
    size_t storage = 0;
    bool dup = false;
    json_array_foreach(versions, i, e) {
        const char *vn = fl_v_nonempty(e, "name");
        if (!vn)
            fl_v_required(causes, fl_vpath(p, "spec.versions[%zu].name", i), NULL);
        else if ((msg = dns1035_label(vn)))
            fl_v_invalid_str(causes, fl_vpath(p, "spec.versions[%zu].name", i), vn, msg);
        for (size_t j = 0; vn && j < i; j++) {
            const char *other = fl_v_str(json_array_get(versions, j), "name");
            if (other && !strcmp(other, vn))
                dup = true;
        }
        if (json_is_true(json_object_get(e, "storage")))
            storage++;
        json_t *cols = fl_v_arr(e, "additionalPrinterColumns");
        size_t c;
        json_t *col;
        json_array_foreach(cols, c, col) {
            static const char *const types[] = {"boolean", "date", "integer", "number", "string", NULL};
            fl_v_require_str(causes, fl_vpath(p, "spec.versions[%zu].additionalPrinterColumns[%zu].name", i, c), col,
                             "name");
            fl_v_enum(causes, fl_vpath(p, "spec.versions[%zu].additionalPrinterColumns[%zu].type", i, c), col, "type",
                      types, true);
            fl_v_require_str(causes, fl_vpath(p, "spec.versions[%zu].additionalPrinterColumns[%zu].jsonPath", i, c),
                             col, "jsonPath");
        }
    }
    if (dup)
        fl_v_invalid(causes, "spec.versions", versions, "must contain unique version names");
    if (storage != 1)
        fl_v_invalid(causes, "spec.versions", versions, "must have exactly one version marked as storage version");
}
