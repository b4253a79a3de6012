/* store_cache.c - AVL tree of live keys for the store's in-memory state.
 *
 * Why AVL and not a hash: lists walk keys in byte order from a prefix or a
 * continue token, so the index must be ordered; AVL keeps lookups at ~1.44 log n
 * with two child pointers and a height byte per node, and needs no parent
 * pointers because iteration uses an explicit stack (fl_store_cache_iter).
 * Mutations are recursive; the depth is bounded by the tree height (< 64).
 *
 * The list snapshot (fl_store_snap) lives here too because every backend lists
 * the same way: copy the matching keys and value references out under the read
 * lock, then call back without it. */
#include "store/store_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/keep.h"
#include "core/mem.h"

static int height(const fl_store_node *n)
{
    return n ? n->height : 0;
}

static void fix_height(fl_store_node *n)
{
    int l = height(n->link[0]), r = height(n->link[1]);
    n->height = (signed char)((l > r ? l : r) + 1);
}

/* Rotate so that n's child on side `dir` becomes the subtree root. */
static fl_store_node *rotate(fl_store_node *n, int dir)
{
    fl_store_node *c = n->link[dir];
    n->link[dir] = c->link[!dir];
    c->link[!dir] = n;
    fix_height(n);
    fix_height(c);
    return c;
}

static fl_store_node *balance(fl_store_node *n)
{
    fix_height(n);
    int bf = height(n->link[1]) - height(n->link[0]);
    if (bf > 1 || bf < -1) {
        int dir = bf > 0; /* the heavy side */
        fl_store_node *c = n->link[dir];
        /* Double rotation when the child leans the other way. */
        if (height(c->link[!dir]) > height(c->link[dir]))
            n->link[dir] = rotate(c, !dir);
        return rotate(n, dir);
    }
    return n;
}

void fl_store_cache_init(fl_store_cache *c)
{
    c->root = NULL;
    c->count = 0;
}

static void free_tree(fl_store_node *n)
{
    /* Iterative on the right spine, recursive on the left: depth stays O(log n). */
    while (n) {
        free_tree(n->link[0]);
        fl_store_node *r = n->link[1];
        fl_blob_unref(n->value);
        fl_keep_free(n);
        n = r;
    }
}

void fl_store_cache_close(fl_store_cache *c)
{
    free_tree(c->root);
    c->root = NULL;
    c->count = 0;
}

fl_store_node *fl_store_cache_find(const fl_store_cache *c, const char *key)
{
    fl_store_node *n = c->root;
    while (n) {
        int cmp = strcmp(key, n->key);
        if (cmp == 0)
            return n;
        n = n->link[cmp > 0];
    }
    return NULL;
}

static fl_store_node *insert(fl_store_cache *c, fl_store_node *n, const char *key, fl_blob *value, int64_t rev,
                             int64_t create_rev)
{
    if (!n) {
        size_t klen = strlen(key);
        fl_store_node *m = fl_keep_malloc(sizeof(*m) + klen + 1); /* lives as long as its key */
        m->link[0] = m->link[1] = NULL;
        m->value = value;
        m->rev = rev;
        m->create_rev = create_rev;
        m->height = 1;
        memcpy(m->key, key, klen + 1);
        c->count++;
        return m;
    }
    int cmp = strcmp(key, n->key);
    if (cmp == 0) {
        fl_blob_unref(n->value);
        n->value = value;
        n->rev = rev;
        n->create_rev = create_rev;
        return n;
    }
    n->link[cmp > 0] = insert(c, n->link[cmp > 0], key, value, rev, create_rev);
    return balance(n);
}

void fl_store_cache_put(fl_store_cache *c, const char *key, fl_blob *value, int64_t rev, int64_t create_rev)
{
    c->root = insert(c, c->root, key, value, rev, create_rev);
}

/* Detach the leftmost node of subtree n into *min; return the rebalanced rest. */
static fl_store_node *remove_min(fl_store_node *n, fl_store_node **min)
{
    if (!n->link[0]) {
        *min = n;
        return n->link[1];
    }
    n->link[0] = remove_min(n->link[0], min);
    return balance(n);
}

static fl_store_node *delete(fl_store_cache *c, fl_store_node *n, const char *key, bool *found)
{
    if (!n)
        return NULL;
    int cmp = strcmp(key, n->key);
    if (cmp != 0) {
        n->link[cmp > 0] = delete(c, n->link[cmp > 0], key, found);
        return balance(n);
    }
    *found = true;
    fl_store_node *l = n->link[0], *r = n->link[1];
    fl_blob_unref(n->value);
    fl_keep_free(n);
    c->count--;
    if (!r)
        return l;
    /* Keys live inside nodes, so relink the successor node instead of copying its key. */
    fl_store_node *succ;
    r = remove_min(r, &succ);
    succ->link[0] = l;
    succ->link[1] = r;
    return balance(succ);
}

bool fl_store_cache_del(fl_store_cache *c, const char *key)
{
    bool found = false;
    c->root = delete(c, c->root, key, &found);
    return found;
}

void fl_store_cache_seek(const fl_store_cache *c, fl_store_cache_iter *it, const char *lo, bool inclusive)
{
    it->depth = 0;
    fl_store_node *n = c->root;
    while (n) {
        int cmp = lo ? strcmp(n->key, lo) : 1;
        if (cmp > 0 || (cmp == 0 && inclusive)) {
            /* n qualifies; something smaller on the left may too. */
            it->stack[it->depth++] = n;
            n = n->link[0];
        } else {
            n = n->link[1];
        }
    }
}

void fl_store_cache_seek_list(const fl_store_cache *c, fl_store_cache_iter *it, const char *prefix,
                              const char *start_after)
{
    if (start_after && *start_after && strcmp(start_after, prefix) >= 0)
        fl_store_cache_seek(c, it, start_after, false);
    else
        fl_store_cache_seek(c, it, prefix, true);
}

fl_store_node *fl_store_cache_next(fl_store_cache_iter *it)
{
    if (it->depth == 0)
        return NULL;
    fl_store_node *n = it->stack[--it->depth];
    for (fl_store_node *m = n->link[1]; m; m = m->link[0])
        it->stack[it->depth++] = m;
    return n;
}

/* ---- list snapshots ---- */

void fl_store_snap_add(fl_store_snap *sn, const char *key, fl_blob *value, int64_t rev, int64_t create_rev)
{
    size_t klen = strlen(key) + 1;
    if (sn->n == sn->cap) {
        sn->cap = sn->cap ? sn->cap * 2 : 64;
        sn->ents = fl_realloc(sn->ents, sn->cap * sizeof(*sn->ents));
    }
    if (sn->alen + klen > sn->acap) {
        sn->acap = (sn->acap ? sn->acap * 2 : 4096) + klen;
        sn->arena = fl_realloc(sn->arena, sn->acap);
    }
    memcpy(sn->arena + sn->alen, key, klen);
    sn->ents[sn->n].key_off = sn->alen;
    sn->ents[sn->n].kv.value = fl_blob_ref(value);
    sn->ents[sn->n].kv.rev = rev;
    sn->ents[sn->n].kv.create_rev = create_rev;
    sn->alen += klen;
    sn->n++;
}

bool fl_store_snap_deliver(fl_store_snap *sn, fl_store_snap_fill fill, void *fill_ctx, size_t chunk,
                           fl_store_list_fn fn, void *ctx, int *rc)
{
    bool stopped_early = false;
    size_t i = 0, filled = 0;
    for (; i < sn->n; i++) {
        if (fill && i == filled) {
            filled = i + chunk < sn->n ? i + chunk : sn->n;
            int frc = fill(fill_ctx, sn, i, filled);
            if (frc) {
                *rc = frc;
                break;
            }
        }
        bool go_on = fn(ctx, sn->arena + sn->ents[i].key_off, &sn->ents[i].kv);
        fl_blob_unref(sn->ents[i].kv.value);
        if (!go_on) {
            stopped_early = i + 1 < sn->n;
            i++;
            break;
        }
    }
    for (; i < sn->n; i++)
        fl_blob_unref(sn->ents[i].kv.value);
    free(sn->ents);
    free(sn->arena);
    memset(sn, 0, sizeof(*sn));
    return stopped_early;
}
