/* store_cache.h - the in-memory ordered index of live keys (internal to src/store).
 *
 * An AVL tree keyed by the key's bytes (strcmp order, which is SQLite's BINARY
 * collation), holding for every live key its current value, revision and create
 * revision. Each node is a single allocation with the key stored inline, so a key
 * costs one malloc of ~48 bytes plus its length on top of its value blob.
 *
 * Not thread-safe by itself: the backend guards it with a rwlock, and only the
 * backend's writer (the SQLite writer thread, or a memory store's writer holding
 * the lock) mutates it.
 *
 * Also here: fl_store_snap, the copy of a list's result that backends take under
 * their lock and deliver after releasing it. */
#ifndef FL_STORE_CACHE_H
#define FL_STORE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/blob.h"
#include "store/store.h"

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

/* A list's result copied out of the cache under the backend's lock: keys into one
 * arena, values as references. It is delivered to the caller's callback after the
 * lock is released, so a slow consumer never holds up writers and may call back
 * into the store. Zero-initialise it; fl_store_snap_deliver frees it. */
typedef struct fl_store_snap_ent {
    size_t key_off;
    fl_kv kv;
} fl_store_snap_ent;

typedef struct fl_store_snap {
    fl_store_snap_ent *ents;
    size_t n, cap;
    char *arena;
    size_t alen, acap;
} fl_store_snap;

/* Append key with a new reference to value. */
void fl_store_snap_add(fl_store_snap *sn, const char *key, fl_blob *value, int64_t rev, int64_t create_rev);
/* Fills in the values of entries [from, to) that have none: 0, or an FL_E* code. */
typedef int (*fl_store_snap_fill)(void *fill_ctx, fl_store_snap *sn, size_t from, size_t to);
/* Call fn for each entry in order until it returns false, then free the snapshot. With
 * fill, each run of `chunk` entries is filled before it is delivered; if a fill fails,
 * nothing more is delivered and *rc is its code. Returns true if fn stopped early with
 * entries left undelivered. */
bool fl_store_snap_deliver(fl_store_snap *sn, fl_store_snap_fill fill, void *fill_ctx, size_t chunk,
                           fl_store_list_fn fn, void *ctx, int *rc);

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
/* Position it before the first key >= prefix that sorts after start_after (NULL or
 * "" = no bound): where a list of prefix continuing after start_after begins. */
void fl_store_cache_seek_list(const fl_store_cache *c, fl_store_cache_iter *it, const char *prefix,
                              const char *start_after);
/* Next node in key order, or NULL at the end. Amortised O(1). */
fl_store_node *fl_store_cache_next(fl_store_cache_iter *it);

#endif
