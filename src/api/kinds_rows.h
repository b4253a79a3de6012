/* kinds_rows.h - what the Table row functions of the built-in kinds share (kinds_builtin.c,
 * kinds_builtin_ext.c): one cell at a time, lists joined with a separator, and the formats
 * kubectl prints labels, selectors and containers in. Internal to the kinds tables. */
#ifndef FL_KINDS_ROWS_H
#define FL_KINDS_ROWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* The string at path, or def when it is missing or empty: what a Table cell shows. */
static inline const char *fl_row_str_or(const json_t *o, const char *path, const char *def)
{
    const char *s = fl_json_path_str(o, path);
    return s && *s ? s : def;
}

static inline void fl_row_str(json_t *cells, const char *s) { json_array_append_new(cells, json_string(s ? s : "")); }

static inline void fl_row_int(json_t *cells, json_int_t v) { json_array_append_new(cells, json_integer(v)); }

static inline void fl_row_bool(json_t *cells, bool v) { json_array_append_new(cells, json_boolean(v)); }

/* A heap string as the next cell (freed). */
static inline void fl_row_take(json_t *cells, char *s)
{
    json_array_append_new(cells, json_string(s));
    free(s);
}

/* s after sep, unless nothing is there yet (an empty s adds no separator before the next one
 * either). */
static inline void fl_row_join(fl_strbuf *b, const char *sep, const char *s)
{
    if (b->len)
        fl_strbuf_adds(b, sep);
    fl_strbuf_adds(b, s);
}

/* The joined string, or a copy of def when nothing was added. */
static inline char *fl_row_joined(fl_strbuf *b, const char *def)
{
    if (!b->len) {
        fl_strbuf_close(b);
        return fl_strdup(def);
    }
    return fl_strbuf_take(b);
}

/* kubectl's formats (kinds_builtin.c): labels "k=v,k2=v2" sorted, a label selector, and the
 * containers' names and images as two cells. */
char *fl_row_labels(const json_t *m);
char *fl_row_selector(const json_t *sel);
void fl_row_containers_images(json_t *cells, const json_t *podspec);

#endif
