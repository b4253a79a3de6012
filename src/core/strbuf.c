/* strbuf.c - the growing string's slow paths: growth, printf and hand-over (see strbuf.h). */
#include "core/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/mem.h"

/* mem.h's policy: a size memory cannot hold, or a failed vsnprintf (which fails only for
 * want of memory with our formats), ends the process. */
static void too_big(size_t have, size_t more)
{
    fprintf(stderr, "flotilla: out of memory: a string of %zu bytes cannot grow by %zu\n", have, more);
    abort();
}

/* The first allocation: small enough for a path or a message, and doubled from there. */
#define STRBUF_MIN 64

void fl_strbuf_grow(fl_strbuf *b, size_t n)
{
    if (n > SIZE_MAX / 2 - b->len)
        too_big(b->len, n);
    size_t need = b->len + n + 1, c = b->cap ? b->cap : STRBUF_MIN;
    while (c < need)
        c *= 2;
    if (c == b->cap)
        return;
    b->p = fl_realloc(b->p, c);
    b->p[b->len] = '\0'; /* a text from its first growth on, even with nothing added */
    b->cap = c;
}

void fl_strbuf_vprintf(fl_strbuf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    /* first into the room there is (often enough), then once more with the room it needs */
    size_t room = b->cap - b->len;
    int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
    if (n < 0)
        too_big(b->len, 0);
    if ((size_t)n >= room) {
        fl_strbuf_grow(b, (size_t)n);
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
    }
    va_end(again);
    b->len += (size_t)n;
}

void fl_strbuf_printf(fl_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *fl_strbuf_take(fl_strbuf *b)
{
    char *s = b->p ? b->p : fl_strdup("");
    *b = (fl_strbuf)FL_STRBUF_INIT;
    return s;
}

void fl_strbuf_close(fl_strbuf *b)
{
    free(b->p);
    *b = (fl_strbuf)FL_STRBUF_INIT;
}
