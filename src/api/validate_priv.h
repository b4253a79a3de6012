/* validate_priv.h - helpers shared by validate.c (object metadata, generic rules) and
 * validate_karmada.c (Karmada policy/cluster/work rules). Not part of the API layer's
 * interface: only the validate*.c files include it.
 *
 * Every helper appends at most one cause to `causes` in the shape Kubernetes' field.Error
 * gives it in a Status: {reason, message, field}, where message is ErrorBody() -
 * "Required value", "Invalid value: \"Foo\": detail", "Unsupported value: \"Foo\":
 * supported values: \"a\", \"b\"", "Forbidden: detail", "Duplicate value: \"x\"". */
#ifndef FL_VALIDATE_PRIV_H
#define FL_VALIDATE_PRIV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Field paths are built in fixed buffers; deeper paths are truncated, never overflowed. */
#define FL_VPATH_MAX 512

/* snprintf into a path buffer of FL_VPATH_MAX bytes; returns buf. */
char *fl_vpath(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* detail may be NULL ("Required value") or text ("Required value: <detail>"). */
void fl_v_required(json_t *causes, const char *field, const char *detail);
/* value is rendered as Kubernetes does: strings quoted, numbers/bools plain, objects as
 * compact JSON, NULL as null. */
void fl_v_invalid(json_t *causes, const char *field, const json_t *value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void fl_v_invalid_str(json_t *causes, const char *field, const char *value, const char *detail);
/* supported: NULL-terminated list of accepted values, quoted in the message. */
void fl_v_unsupported(json_t *causes, const char *field, const json_t *value, const char *const *supported);
void fl_v_forbidden(json_t *causes, const char *field, const char *detail);
/* detail may be NULL. */
void fl_v_duplicate(json_t *causes, const char *field, const json_t *value, const char *detail);

/* obj[key] when it is a string, else NULL (obj may be NULL or not an object). */
const char *fl_v_str(const json_t *obj, const char *key);
/* obj[key] when it is a non-empty string, else NULL. */
const char *fl_v_nonempty(const json_t *obj, const char *key);
/* obj[key] when it is an object / array, else NULL. */
json_t *fl_v_obj(const json_t *obj, const char *key);
json_t *fl_v_arr(const json_t *obj, const char *key);
bool fl_v_in(const char *v, const char *const *allowed);

/* Check obj[key] against an enum. Absent (or "" when !required) is fine unless required,
 * which gives Required. A non-string or unknown value gives Unsupported. field is the
 * full path of obj[key]. Returns true when the value is present and accepted. */
bool fl_v_enum(json_t *causes, const char *field, const json_t *obj, const char *key,
               const char *const *allowed, bool required);
/* Required non-empty string obj[key]; returns it or NULL after adding a Required cause. */
const char *fl_v_require_str(json_t *causes, const char *field, const json_t *obj, const char *key);

/* metav1 label map rules (keys: qualified names; values: label values); field names the map. */
void fl_v_labels(json_t *causes, const char *field, const json_t *labels);
/* Annotation rules: keys qualified names (lower-cased), total size <= 256 KiB. */
void fl_v_annotations(json_t *causes, const char *field, const json_t *annotations);
/* metav1.LabelSelector structure: matchLabels, matchExpressions (In/NotIn need values,
 * Exists/DoesNotExist forbid them). */
void fl_v_label_selector(json_t *causes, const char *field, const json_t *sel);
/* A label name (qualified name) such as a taint key or aliasLabelName. */
void fl_v_label_name(json_t *causes, const char *field, const char *name);
/* RFC 6901 pointer syntax as go-openapi/jsonpointer checks it: "" or starting with "/". */
const char *fl_v_json_pointer(const char *s);

#endif
