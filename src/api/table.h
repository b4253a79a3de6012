/* table.h - server-side printing: meta.k8s.io/v1 Table for `kubectl get`.
 *
 * Columns come from the kind table (built-ins) or the CRD's additionalPrinterColumns;
 * NAME is first and AGE is appended for built-ins, as kubectl shows them.
 * Pure functions: any thread. */
#ifndef FL_TABLE_H
#define FL_TABLE_H

#include <jansson.h>
#include <stdbool.h>

#include "api/kinds.h"

/* Build a Table for the objects in `items` (a JSON array, borrowed). include_object is
 * "None", "Metadata" (default: PartialObjectMetadata per row) or "Object" (whole object).
 * list_rv / cont go into the Table's metadata (NULL to omit). Returns a new reference. */
json_t *fl_table_render(const fl_kind *k, const json_t *items, const char *include_object, const char *list_rv,
                        const char *cont);

/* Kubernetes short duration for AGE: "5s", "3m12s", "2d4h", ... from an RFC 3339 timestamp. */
void fl_table_age(const char *rfc3339, char *buf, size_t len);

#endif
