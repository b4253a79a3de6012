/* table.c - server-side printing (meta.k8s.io/v1 Table) for `kubectl get`.
 *
 * The shape follows the apiserver: a "Name" column (format "name") first, then the
 * kind's columns, each row's cells in column order, and per row the object as the
 * includeObject policy asks (PartialObjectMetadata by default).
 *
 * Columns:
 *   - built-in kinds: the kind table's columns; their cells come from k->row when the
 *     kind has one, else from each column's JSONPath. "Age" is appended unless the
 *     kind lists an Age column itself (then that one is rendered as the age) or a
 *     column on .metadata.creationTimestamp (the apiserver's default convertor has
 *     "Created At", a "date" column holding the RFC 3339 timestamp itself).
 *   - dynamic (CRD) kinds: the kind's columns (its additionalPrinterColumns; read from
 *     the CRD version when the kind has none), rendered as the apiextensions table
 *     convertor does: a missing value is null, "date" columns are ages. With no
 *     printer columns at all the CRD gets a single "Age" date column, upstream's default.
 *
 * A missing value in a built-in kind's JSONPath column is "<none>" for string columns
 * and 0 for integer/number columns (what kubectl shows for an unset status count),
 * else null.
 *
 * Rows share sub-objects (metadata, or the whole object) with `items` by reference;
 * items are immutable once stored, so the Table can be serialised from any thread. */
#include "api/table.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/json.h"
#include "core/jsonpath.h"
#include "core/mem.h"

#define NAME_DESC                                                                                               \
    "Name must be unique within a namespace. Is required when creating resources, although some resources may " \
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended " \
    "for creation idempotence and configuration definition. Cannot be updated. More info: "                    \
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
#define AGE_DESC                                                                                                 \
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "     \
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "  \
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "   \
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

/* ---------------------------------------------------------------------------------
 * Ages (k8s.io/apimachinery/pkg/util/duration.HumanDuration).
 */

/* Parse RFC 3339 ("2024-05-01T10:00:00Z", "...T10:00:00.123+02:00") to epoch seconds. */
static bool parse_rfc3339(const char *s, time_t *out)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return false;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
            return false;
        off = (hh * 3600L + mm * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p != '\0')
        return false;
    *out = timegm(&tm) - off;
    return true;
}

static void human_duration(long long secs, char *buf, size_t len)
{
    if (secs < -1) {
        snprintf(buf, len, "<invalid>");
        return;
    }
    if (secs < 0)
        secs = 0;
    if (secs < 120) {
        snprintf(buf, len, "%llds", secs);
        return;
    }
    long long minutes = secs / 60;
    if (minutes < 10) {
        long long s = secs % 60;
        if (s == 0)
            snprintf(buf, len, "%lldm", minutes);
        else
            snprintf(buf, len, "%lldm%llds", minutes, s);
        return;
    }
    if (minutes < 60 * 3) {
        snprintf(buf, len, "%lldm", minutes);
        return;
    }
    long long hours = secs / 3600;
    if (hours < 8) {
        long long m = minutes % 60;
        if (m == 0)
            snprintf(buf, len, "%lldh", hours);
        else
            snprintf(buf, len, "%lldh%lldm", hours, m);
    } else if (hours < 48) {
        snprintf(buf, len, "%lldh", hours);
    } else if (hours < 24 * 8) {
        long long h = hours % 24;
        if (h == 0)
            snprintf(buf, len, "%lldd", hours / 24);
        else
            snprintf(buf, len, "%lldd%lldh", hours / 24, h);
    } else if (hours < 24 * 365 * 2) {
        snprintf(buf, len, "%lldd", hours / 24);
    } else if (hours < 24 * 365 * 8) {
        long long dy = (hours / 24) % 365;
        if (dy == 0)
            snprintf(buf, len, "%lldy", hours / 24 / 365);
        else
            snprintf(buf, len, "%lldy%lldd", hours / 24 / 365, dy);
    } else {
        snprintf(buf, len, "%lldy", hours / 24 / 365);
    }
}

void fl_table_age(const char *rfc3339, char *buf, size_t len)
{
    time_t t;
    if (!len)
        return;
    if (!rfc3339 || !*rfc3339) {
        snprintf(buf, len, "<unknown>");
        return;
    }
    if (!parse_rfc3339(rfc3339, &t)) {
        snprintf(buf, len, "<invalid>");
        return;
    }
    human_duration((long long)difftime(time(NULL), t), buf, len);
}

/* ---------------------------------------------------------------------------------
 * Rendering.
 */

/* One output column after Name, normalised from fl_column or a CRD printer column. */
typedef struct tcol {
    const char *name, *type, *format, *description, *jsonpath;
    char *owned_desc;
    int priority;
    bool is_age; /* rendered from metadata.creationTimestamp by the renderer */
} tcol;

static bool is_creation_path(const char *jsonpath)
{
    const char *p = jsonpath;
    if (!p)
        return false;
    if (*p == '{')
        p++;
    return !strncmp(p, ".metadata.creationTimestamp", 27) && (p[27] == '\0' || p[27] == '}');
}

static bool is_age_column(const char *name, const char *jsonpath)
{
    return name && !strcasecmp(name, "age") && (!jsonpath || is_creation_path(jsonpath));
}

static size_t collect_columns(const fl_kind *k, tcol **out)
{
    size_t n = 0, cap = 8;
    tcol *cols = fl_calloc(cap, sizeof *cols);
    bool have_age = false;
    json_t *crd_cols = NULL;
    if (k->dynamic && !k->columns && k->crd_version)
        crd_cols = json_object_get(k->crd_version, "additionalPrinterColumns");

    if (k->columns) {
        for (const fl_column *c = k->columns; c->name; c++) {
            if (n + 2 > cap)
                cols = fl_realloc(cols, (cap *= 2) * sizeof *cols);
            tcol *t = &cols[n++];
            memset(t, 0, sizeof *t);
            t->name = c->name;
            t->type = c->type ? c->type : "string";
            t->format = c->format ? c->format : "";
            t->jsonpath = c->jsonpath;
            t->priority = c->priority;
            t->is_age = !k->dynamic && is_age_column(c->name, c->jsonpath);
            if (c->description && *c->description)
                t->description = c->description;
            else if (t->is_age)
                t->description = AGE_DESC;
            else if (k->dynamic && c->jsonpath)
                t->description = t->owned_desc =
                    fl_asprintf("Custom resource definition column (in JSONPath format): %s", c->jsonpath);
            else
                t->description = "";
            have_age = have_age || t->is_age || is_creation_path(c->jsonpath);
        }
    } else if (json_is_array(crd_cols)) {
        size_t i;
        json_t *c;
        json_array_foreach(crd_cols, i, c) {
            const char *name = json_string_value(json_object_get(c, "name"));
            const char *jp = json_string_value(json_object_get(c, "jsonPath"));
            if (!name || !jp)
                continue;
            if (n + 2 > cap)
                cols = fl_realloc(cols, (cap *= 2) * sizeof *cols);
            tcol *t = &cols[n++];
            memset(t, 0, sizeof *t);
            const char *type = json_string_value(json_object_get(c, "type"));
            const char *format = json_string_value(json_object_get(c, "format"));
            const char *desc = json_string_value(json_object_get(c, "description"));
            t->name = name;
            t->type = type ? type : "string";
            t->format = format ? format : "";
            t->jsonpath = jp;
            t->priority = (int)json_integer_value(json_object_get(c, "priority"));
            if (desc && *desc)
                t->description = desc;
            else
                t->description = t->owned_desc =
                    fl_asprintf("Custom resource definition column (in JSONPath format): %s", jp);
        }
    }

    if (k->dynamic && n == 0) {
        /* apiextensions' default when a CRD version defines no printer columns */
        cols[n++] = (tcol){.name = "Age", .type = "date", .format = "", .description = AGE_DESC,
                           .jsonpath = ".metadata.creationTimestamp"};
    } else if (!k->dynamic && !have_age) {
        /* Age ends the default view, before the -o wide columns, as upstream prints it */
        size_t at = 0;
        while (at < n && cols[at].priority == 0)
            at++;
        memmove(&cols[at + 1], &cols[at], (n - at) * sizeof *cols);
        cols[at] = (tcol){.name = "Age", .type = "string", .format = "", .description = AGE_DESC, .is_age = true};
        n++;
    }
    *out = cols;
    return n;
}

static json_t *column_def(const char *name, const char *type, const char *format, const char *desc, int priority)
{
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string(name));
    json_object_set_new(d, "type", json_string(type));
    json_object_set_new(d, "format", json_string(format));
    json_object_set_new(d, "description", json_string(desc));
    json_object_set_new(d, "priority", json_integer(priority));
    return d;
}

static json_t *age_cell(const json_t *obj)
{
    char buf[32];
    json_t *ts = json_object_get(json_object_get(obj, "metadata"), "creationTimestamp");
    fl_table_age(json_string_value(ts), buf, sizeof buf);
    return json_string(buf);
}

/* A cell from a JSONPath value, per the column type (apiextensions' cellForJSONValue;
 * "string" columns print whatever is there as text). v is borrowed, may be NULL. */
static json_t *typed_cell(const tcol *c, const json_t *v, bool dynamic)
{
    const char *t = c->type;
    if (!v || json_is_null(v)) {
        if (dynamic)
            return json_null();
        if (!strcmp(t, "string"))
            return json_string("<none>");
        if (!strcmp(t, "integer"))
            return json_integer(0);
        if (!strcmp(t, "number"))
            return json_real(0);
        return json_null();
    }
    if (!strcmp(t, "string")) {
        char *s = fl_jsonpath_text(v);
        json_t *cell = json_string(s);
        free(s);
        return cell ? cell : json_null();
    }
    if (!strcmp(t, "integer")) {
        if (json_is_integer(v))
            return json_integer(json_integer_value(v));
        if (json_is_real(v))
            return json_integer((json_int_t)json_real_value(v));
        return json_null();
    }
    if (!strcmp(t, "number"))
        return json_is_number(v) ? json_real(json_number_value(v)) : json_null();
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v) ? json_incref((json_t *)v) : json_null();
    if (!strcmp(t, "date")) {
        if (!json_is_string(v))
            return json_null();
        if (!dynamic) /* DefaultTableConvertor: "Created At" is the timestamp itself */
            return json_incref((json_t *)v);
        char buf[32];
        fl_table_age(json_string_value(v), buf, sizeof buf);
        return json_string(buf);
    }
    return json_null();
}

static json_t *row_object(const json_t *obj, const char *include)
{
    if (!strcmp(include, "None"))
        return NULL;
    if (!strcmp(include, "Object"))
        return json_incref((json_t *)obj);
    json_t *partial = json_object();
    json_object_set_new(partial, "kind", json_string("PartialObjectMetadata"));
    json_object_set_new(partial, "apiVersion", json_string("meta.k8s.io/v1"));
    json_t *m = json_object_get(obj, "metadata");
    if (json_is_object(m))
        json_object_set(partial, "metadata", m);
    else
        json_object_set_new(partial, "metadata", json_object());
    return partial;
}

json_t *fl_table_render(const fl_kind *k, const json_t *items, const char *include_object, const char *list_rv,
                        const char *cont)
{
    const char *include = include_object && *include_object ? include_object : "Metadata";
    tcol *cols;
    size_t ncols = collect_columns(k, &cols);

    json_t *table = json_object();
    json_object_set_new(table, "kind", json_string("Table"));
    json_object_set_new(table, "apiVersion", json_string("meta.k8s.io/v1"));
    json_t *meta = json_object();
    if (list_rv)
        json_object_set_new(meta, "resourceVersion", json_string(list_rv));
    if (cont)
        json_object_set_new(meta, "continue", json_string(cont));
    json_object_set_new(table, "metadata", meta);

    json_t *defs = json_array();
    json_array_append_new(defs, column_def("Name", "string", "name", NAME_DESC, 0));
    for (size_t i = 0; i < ncols; i++)
        json_array_append_new(defs, column_def(cols[i].name, cols[i].type, cols[i].format, cols[i].description,
                                               cols[i].priority));
    json_object_set_new(table, "columnDefinitions", defs);

    json_t *rows = json_array();
    size_t idx;
    json_t *obj;
    json_array_foreach(items, idx, obj) {
        json_t *cells = json_array();
        const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        json_array_append_new(cells, json_string(name ? name : ""));

        /* k->row fills the non-Age columns in order; merge them with the ages. */
        json_t *computed = NULL;
        size_t next = 0;
        if (k->row && !k->dynamic) {
            computed = json_array();
            k->row(k, obj, computed);
        }
        for (size_t i = 0; i < ncols; i++) {
            const tcol *c = &cols[i];
            json_t *cell;
            if (c->is_age) {
                cell = age_cell(obj);
            } else if (computed) {
                cell = json_array_get(computed, next++);
                cell = cell ? json_incref(cell) : json_null();
            } else {
                json_t *v = fl_jsonpath_eval(obj, c->jsonpath);
                cell = typed_cell(c, v, k->dynamic);
                json_decref(v);
            }
            json_array_append_new(cells, cell);
        }
        json_decref(computed);

        json_t *row = json_object();
        json_object_set_new(row, "cells", cells);
        json_t *ro = row_object(obj, include);
        if (ro)
            json_object_set_new(row, "object", ro);
        json_array_append_new(rows, row);
    }
    json_object_set_new(table, "rows", rows);

    for (size_t i = 0; i < ncols; i++)
        free(cols[i].owned_desc);
    free(cols);
    return table;
}
