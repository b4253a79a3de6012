/* mem.c - abort-on-OOM allocation wrappers (policy in mem.h). */
#include "core/mem.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "flotilla: out of memory allocating %zu bytes\n", n);
    abort();
}

void *fl_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *fl_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *fl_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *fl_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fl_malloc(n);
    memcpy(d, s, n);
    return d;
}

char *fl_strndup(const char *s, size_t n)
{
    char *d = fl_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *fl_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    return out;
}

char *fl_vasprintf(const char *fmt, va_list ap)
{
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0)
        oom(0);
    return out;
}

void fl_mem_init(void)
{
    json_set_alloc_funcs(fl_malloc, free);
}
