/* store_cache.h - the in-memory ordered index of live keys (internal to src/store).
 *
 * An AVL tree keyed by the key's bytes (strcmp order, which is SQLite's BINARY
 * collation), holding for every live key its current value, revision and create
 * revision. Each node is a single allocation with the key stored inline, so a key
 * costs one malloc of ~48 bytes plus its length on top of its value blob.
 *
 * Not thread-safe by itself: the backend guards it with a rwlock, and only the
 * backend's writer thread mutates it. */
#ifndef FL_STORE_CACHE_H
#define FL_STORE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/blob.h"

typedef struct fl_store_node {
    struct fl_store_node *link[2]; /* left, right */
    fl_blob *value;                /* owned reference */
    int64_t rev;
    int64_t create_rev;
    signed char height;
    char key[];
} fl_store_node;

typedef struct fl_store_cache {
    fl_store_node *root;
    size_t count;
} fl_store_cache;

/* In-order cursor. 64 levels hold any AVL tree that fits in memory. */
typedef struct fl_store_cache_iter {
    fl_store_node *stack[64];
    int depth;
} fl_store_cache_iter;

void fl_store_cache_init(fl_store_cache *c);
/* Free every node and drop its value reference. */
void fl_store_cache_close(fl_store_cache *c);

/* Node for key, or NULL. The node stays valid until the next mutation. */
fl_store_node *fl_store_cache_find(const fl_store_cache *c, const char *key);
/* Insert or replace key. Takes over the caller's reference to value. */
void fl_store_cache_put(fl_store_cache *c, const char *key, fl_blob *value, int64_t rev, int64_t create_rev);
/* Remove key, dropping its value reference. Returns false if it was absent. */
bool fl_store_cache_del(fl_store_cache *c, const char *key);

/* Position it before the first key >= lo (inclusive) or > lo (!inclusive);
 * lo NULL means the first key. O(log n). */
void fl_store_cache_seek(const fl_store_cache *c, fl_store_cache_iter *it, const char *lo, bool inclusive);
/* Next node in key order, or NULL at the end. Amortised O(1). */
fl_store_node *fl_store_cache_next(fl_store_cache_iter *it);

#endif
