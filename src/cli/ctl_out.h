/* ctl_out.h - what the `flotilla ctl` verbs print, in one place: their one-line errors,
 * kubectl's table layout, and -o yaml|json documents. Moved here from status_cmd.c and
 * failover_cmd.c, which had each written them (ctl_cmd.c's own fail() too). */
#ifndef FL_CLI_CTL_OUT_H
#define FL_CLI_CTL_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"

/* Print "flotilla ctl VERB: <message>" and a newline on stderr. Returns 1, the exit code of
 * a failure, so a caller can `return fl_ctl_out_fail(...)`. */
int fl_ctl_out_fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "flotilla ctl VERB: <fmt with arg> (see 'flotilla ctl VERB --help')" on stderr.
 * fmt has at most one %s, for arg. Returns 2, the exit code of a usage error. */
int fl_ctl_out_usage(const char *verb, const char *fmt, const char *arg);

/* kubectl's layout appended to b: columns as wide as their widest cell (and at least width[c]
 * as it comes in; the widths used go back out), three spaces apart, a header row first unless
 * hdr is NULL, hidden columns (hide[c], or hide NULL for none) left out. cells is row-major,
 * ncols a row, and only read. */
void fl_ctl_out_table(fl_strbuf *b, const char *const *hdr, size_t ncols, char *const *cells, size_t nrows,
                      const bool *hide, size_t *width);

/* A cell's text: a copy of s, or "<none>" for NULL or "" as kubectl shows it (heap). */
char *fl_ctl_out_none(const char *s);

/* doc on stdout as output says: "json" (indented, in its order, and a newline) or "yaml". */
void fl_ctl_out_doc(const char *output, const json_t *doc);

#endif
