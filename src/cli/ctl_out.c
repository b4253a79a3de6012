/* ctl_out.c - errors, tables and documents as the `flotilla ctl` verbs print them (see
 * ctl_out.h). */
#include "cli/ctl_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/yaml.h"

int fl_ctl_out_fail(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flotilla ctl %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int fl_ctl_out_usage(const char *verb, const char *fmt, const char *arg)
{
    fprintf(stderr, "flotilla ctl %s: ", verb);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'flotilla ctl %s --help')\n", verb);
    return 2;
}

void fl_ctl_out_table(fl_strbuf *b, const char *const *hdr, size_t ncols, char *const *cells, size_t nrows,
                      const bool *hide, size_t *width)
{
    for (size_t c = 0; c < ncols; c++) {
        if (hdr && strlen(hdr[c]) > width[c])
            width[c] = strlen(hdr[c]);
        for (size_t i = 0; i < nrows; i++)
            if (strlen(cells[i * ncols + c]) > width[c])
                width[c] = strlen(cells[i * ncols + c]);
    }
    size_t last = ncols - 1;
    while (last > 0 && hide && hide[last])
        last--;
    for (size_t i = hdr ? 0 : 1; i <= nrows; i++) {
        for (size_t c = 0; c < ncols; c++) {
            if (hide && hide[c])
                continue;
            const char *s = i ? cells[(i - 1) * ncols + c] : hdr[c];
            if (c == last)
                fl_strbuf_printf(b, "%s\n", s);
            else
                fl_strbuf_printf(b, "%-*s   ", (int)width[c], s);
        }
    }
}

char *fl_ctl_out_none(const char *s)
{
    return fl_strdup(s && *s ? s : "<none>");
}

void fl_ctl_out_doc(const char *output, const json_t *doc)
{
    bool json = !strcmp(output, "json");
    char *text = json ? json_dumps(doc, JSON_INDENT(4) | JSON_PRESERVE_ORDER) : fl_yaml_dump(doc);
    fputs(text, stdout);
    if (json)
        fputc('\n', stdout);
    free(text);
}
