/* keep.h - memory for small records that live as long as the objects they describe.
 *
 * The server holds a few small records per object for as long as the object exists: the
 * store's index node, an informer's entry, a member watch's shed text, a controller's index
 * and echo records. malloc placed them among the short-lived blocks of the wave that made
 * them (decodings, copies, encodings), over a dozen per-thread arenas, so once the wave was
 * freed each page still held a record or two and stayed resident: at rest the server's RSS
 * was twice its heap in use. Here such records come from slabs of their own, one size per
 * slab, so they sit packed together and what malloc freed around them can go back.
 *
 * Blocks of up to FL_KEEP_MAX bytes come from the slabs; larger ones, and every block if the
 * slabs' address space could not be reserved, come from fl_malloc. fl_keep_free takes either
 * (and any block from malloc), so a field may hold both. A block from fl_keep_malloc must
 * never reach free() or realloc(): the sanitizer build reports that. Any thread may call
 * these. Out of memory aborts, as in mem.h. */
#ifndef FL_KEEP_H
#define FL_KEEP_H

#include <stdbool.h>
#include <stddef.h>

#define FL_KEEP_MAX 512

/* A block of n bytes, 16-byte aligned, not zeroed. Never NULL. */
void *fl_keep_malloc(size_t n);
/* A zeroed block of n bytes. Never NULL. */
void *fl_keep_calloc(size_t n);
/* A copy of s in a kept block. Never NULL; s must not be NULL. */
char *fl_keep_strdup(const char *s);
/* Free a block from fl_keep_malloc, or any block from malloc. NULL is a no-op. */
void fl_keep_free(void *p);

/* Between fl_keep_begin and fl_keep_end (nested, per thread), the JSON nodes the calling
 * thread makes (jansson's allocations, through mem.c) come from the slabs too: a map or a
 * tree that is kept for as long as its objects. What the thread frees in between goes where
 * it came from. */
void fl_keep_begin(void);
void fl_keep_end(void);
extern _Thread_local int fl_keep_depth;
static inline bool fl_keep_active(void)
{
    return fl_keep_depth > 0;
}

/* Whether p lies in the slabs (for tests). */
bool fl_keep_owns(const void *p);

typedef struct fl_keep_stats {
    size_t slabs;  /* slabs holding blocks or ready to, each FL_KEEP_SLAB bytes of address */
    size_t blocks; /* live blocks */
    size_t bytes;  /* their sizes, rounded up to their classes */
} fl_keep_stats;
#define FL_KEEP_SLAB ((size_t)64 << 10)
void fl_keep_stats_get(fl_keep_stats *st);

#endif
