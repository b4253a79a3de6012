/* selector.h - Kubernetes label and field selectors.
 *
 * Label selector text syntax (as in ?labelSelector=): comma-separated requirements
 *   key=value  key==value  key!=value  key in (a,b)  key notin (a,b)  key  !key
 * Keys may carry a DNS prefix ("app.kubernetes.io/name"). Also the structured
 * metav1.LabelSelector form (matchLabels + matchExpressions with In, NotIn, Exists,
 * DoesNotExist) used by Karmada policies.
 *
 * Field selector syntax (?fieldSelector=): comma-separated  field=value, field==value,
 * field!=value, where field is a dotted path ("metadata.name", "status.phase",
 * "spec.nodeName"). Values may escape ',', '=' and '\\' with a backslash.
 *
 * Parse errors return FL_EINVAL with *err = heap message naming the offending text.
 * A parsed selector is immutable: match from any thread. Empty text = matches all. */
#ifndef FL_SELECTOR_H
#define FL_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct fl_labelsel fl_labelsel;

int fl_labelsel_parse(const char *text, fl_labelsel **out, char **err);
/* From a metav1.LabelSelector JSON object; NULL or {} matches everything. */
int fl_labelsel_from_json(const json_t *sel, fl_labelsel **out, char **err);
/* labels: the metadata.labels object (NULL = no labels). */
bool fl_labelsel_match(const fl_labelsel *sel, const json_t *labels);
bool fl_labelsel_empty(const fl_labelsel *sel);
void fl_labelsel_free(fl_labelsel *sel);

typedef struct fl_fieldsel fl_fieldsel;

int fl_fieldsel_parse(const char *text, fl_fieldsel **out, char **err);
size_t fl_fieldsel_count(const fl_fieldsel *sel);
/* The i-th requirement's field name (for validating it against a kind's supported fields). */
const char *fl_fieldsel_field(const fl_fieldsel *sel, size_t i);
/* If the selector pins field == value (single '=' or '==' requirement on it), return value, else NULL. */
const char *fl_fieldsel_exact(const fl_fieldsel *sel, const char *field);
/* Resolve each field as a dotted path into obj; missing or null = "", numbers and
 * booleans compare by their JSON text. */
bool fl_fieldsel_match(const fl_fieldsel *sel, const json_t *obj);
void fl_fieldsel_free(fl_fieldsel *sel);

#endif
