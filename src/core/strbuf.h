/* strbuf.h - the growing string every module builds text in: JSON, YAML, request paths,
 * list responses, messages.
 *
 * A caller-owned struct, zeroed to start (FL_STRBUF_INIT), whose text p is NUL-terminated
 * from its first growth on; fl_strbuf_take hands the text over as a plain heap
 * string. Capacity doubles, so appending n bytes one at a time costs O(n) in all. The
 * appends are inline: the JSON encoder calls them per token, and only the rare growth is a
 * call. Out of memory aborts, as everything in core/mem.h does. A builder is not shared
 * between threads unless its owner locks it. */
#ifndef FL_STRBUF_H
#define FL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct fl_strbuf {
    char *p;    /* the text, NUL-terminated; NULL until the first growth (or reserve) */
    size_t len; /* bytes of text, the NUL not counted */
    size_t cap; /* bytes allocated at p */
} fl_strbuf;

#define FL_STRBUF_INIT {NULL, 0, 0}

/* Make room for n more bytes and the NUL after them (the slow path of fl_strbuf_reserve):
 * at least double the capacity. Aborts when the size would overflow. */
void fl_strbuf_grow(fl_strbuf *b, size_t n);

/* Room for n more bytes and a NUL, so that writing them at p + len cannot overflow. */
static inline void fl_strbuf_reserve(fl_strbuf *b, size_t n)
{
    if (n >= b->cap - b->len) /* cap - len never wraps: cap is 0 or above len */
        fl_strbuf_grow(b, n);
}

/* Append n bytes of s (which may hold NULs; it must not point into b's own text). */
static inline void fl_strbuf_add(fl_strbuf *b, const void *s, size_t n)
{
    fl_strbuf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* Append the string s. */
static inline void fl_strbuf_adds(fl_strbuf *b, const char *s)
{
    fl_strbuf_add(b, s, strlen(s));
}

/* Append one byte. */
static inline void fl_strbuf_addc(fl_strbuf *b, char c)
{
    fl_strbuf_reserve(b, 1);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

/* Append printf-formatted text. */
void fl_strbuf_printf(fl_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list. */
void fl_strbuf_vprintf(fl_strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* The text so far: "" (static) before anything was added. Valid until the next change. */
static inline const char *fl_strbuf_str(const fl_strbuf *b)
{
    return b->p ? b->p : "";
}

/* Cut the text back to its first len bytes (len <= b->len), keeping the memory: for a
 * path that grows and shrinks as a walk goes down and up. */
static inline void fl_strbuf_truncate(fl_strbuf *b, size_t len)
{
    if (len < b->len) {
        b->len = len;
        b->p[len] = '\0';
    }
}

/* Hand the text over: returns it as a heap string the caller frees ("", allocated, if
 * nothing was added; never NULL) and leaves b empty, ready for reuse. */
char *fl_strbuf_take(fl_strbuf *b);

/* Free the text and leave b empty. A zeroed or already closed b is fine. */
void fl_strbuf_close(fl_strbuf *b);

#endif
