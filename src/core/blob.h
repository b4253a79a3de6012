/* blob.h - immutable, reference-counted byte strings.
 *
 * Object values flow from the store's cache to list responses and to every
 * watcher without copying: the store hands out a reference, each reader drops
 * it when done; a compact informer keeps its objects' texts in them. The bytes are
 * NUL-terminated for convenience (data[len] == 0). */
#ifndef FL_BLOB_H
#define FL_BLOB_H

#include <stddef.h>

typedef struct fl_blob {
    int refs;         /* atomic */
    size_t len;
    char data[];
} fl_blob;

/* New blob holding a copy of len bytes; refcount 1. Never NULL (aborts on OOM). */
fl_blob *fl_blob_new(const char *data, size_t len);
/* New blob of len bytes for the caller to fill (data[len] is already 0) before anyone else
 * sees it; refcount 1. Never NULL. */
fl_blob *fl_blob_alloc(size_t len);
/* fl_blob_new for a text held as long as the object it describes: a small one comes from the
 * slabs of core/keep.h, away from the short-lived blocks around it. */
fl_blob *fl_blob_new_kept(const char *data, size_t len);
fl_blob *fl_blob_ref(fl_blob *b);   /* +1, returns b; NULL-safe */
void fl_blob_unref(fl_blob *b);     /* -1, frees at 0; NULL-safe */

#endif
