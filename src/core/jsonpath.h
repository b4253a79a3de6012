/* jsonpath.h - Kubernetes JSONPath as printer columns use it (".status.replicas",
 * "{.spec.containers[*].image}", ".conditions[?(@.type==\"Ready\")].status"), for the
 * API's tables and for any controller that reads a field named by a path in a policy.
 *
 * Pure functions over borrowed objects: any thread. */
#ifndef FL_JSONPATH_H
#define FL_JSONPATH_H

#include <jansson.h>

/* Evaluate a Kubernetes JSONPath used by printer columns: ".a.b", "{.a.b}", ".a[0].b",
 * ".a[*].b", ".conditions[?(@.type==\"Ready\")].status". Returns a new reference to the
 * value (first match; several matches are joined as a comma-separated string), or NULL. */
json_t *fl_jsonpath_eval(const json_t *obj, const char *path);

/* The text printed for a matched value: a string as it is, anything else as compact JSON
 * (heap; never NULL). */
char *fl_jsonpath_text(const json_t *v);

#endif
