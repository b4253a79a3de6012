/* htab.h - the chained hash table the in-memory indexes share: the work queue's items, an
 * informer's cache, member clients, member watches.
 *
 * Intrusive: the caller's entry embeds an fl_hnode, and the table links those nodes, so
 * adding an entry allocates nothing but, now and then, a bigger bucket array. The node
 * keeps its entry's hash, so growth never calls back into the caller and a lookup compares
 * keys only where the hashes agree. The table knows nothing of keys: the caller hashes its
 * key (fl_hash_str for names) and fl_htab_find takes an equality callback; find is inline,
 * so with a static callback the compiler inlines that too, and a lookup is one hash, one
 * bucket walk and, nearly always, one key comparison.
 *
 * Buckets are a power of two and double once the entries outnumber them; the table never
 * shrinks. It does no locking: its owner's lock guards it. */
#ifndef FL_HTAB_H
#define FL_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Embed one in each entry; the table owns its fields while the entry is in the table. */
typedef struct fl_hnode {
    struct fl_hnode *next; /* the bucket's chain */
    uint64_t hash;         /* the entry's key's hash, as given to fl_htab_add */
} fl_hnode;

typedef struct fl_htab {
    fl_hnode **b;   /* nb chains; NULL until the first add */
    size_t nb;      /* a power of two, or 0 */
    size_t n;       /* entries */
    size_t first;   /* buckets to start with (fl_htab_init) */
} fl_htab;

/* The entry of type `type` whose fl_hnode member `member` node is; NULL for NULL. */
#define fl_htab_entry(node, type, member) ((type *)fl_htab_container_((node), offsetof(type, member)))
static inline void *fl_htab_container_(const fl_hnode *node, size_t off)
{
    return node ? (void *)((char *)(uintptr_t)node - off) : NULL;
}

/* An empty table that starts with nbuckets buckets (rounded up to a power of two; 0: 64) at
 * its first add. A zeroed fl_htab is an empty table too, starting with 64. Allocates nothing. */
void fl_htab_init(fl_htab *t, size_t nbuckets);
/* Free the buckets; the entries are the caller's (free them first, with an iteration). t is
 * then empty and may be used again. */
void fl_htab_close(fl_htab *t);

/* Link node, whose entry's key hashes to hash, into t. The caller has made sure no entry
 * with an equal key is in t (fl_htab_find), or wants both. Grows t when the entries
 * outnumber the buckets. */
void fl_htab_add(fl_htab *t, fl_hnode *node, uint64_t hash);
/* Unlink node, which must be in t. Walks its bucket; never shrinks t. */
void fl_htab_remove(fl_htab *t, fl_hnode *node);
/* Put node where old is (old must be in t; node's entry has old's key, so old's hash),
 * unlinking old: the entry replaced in place, the count unchanged. */
void fl_htab_replace(fl_htab *t, fl_hnode *old, fl_hnode *node);

/* The entry whose key hashes to hash and for which eq(node, key) is true, or NULL. */
static inline fl_hnode *fl_htab_find(const fl_htab *t, uint64_t hash, bool (*eq)(const fl_hnode *node, const void *key),
                                     const void *key)
{
    if (!t->nb)
        return NULL;
    for (fl_hnode *n = t->b[hash & (t->nb - 1)]; n; n = n->next)
        if (n->hash == hash && eq(n, key))
            return n;
    return NULL;
}

static inline size_t fl_htab_count(const fl_htab *t)
{
    return t->n;
}

/* Every entry once, in no particular order:
 *     fl_htab_iter it;
 *     for (fl_hnode *n = fl_htab_first(t, &it); n; n = fl_htab_next(&it))
 * The body may remove (or free) the node it was given, and no other; it must not add. */
typedef struct fl_htab_iter {
    const fl_htab *t;
    size_t bucket;     /* the bucket of next */
    fl_hnode *next;    /* the node after the one given, read before the body runs */
} fl_htab_iter;

static inline fl_hnode *fl_htab_next(fl_htab_iter *it)
{
    fl_hnode *n = it->next;
    while (!n && it->bucket + 1 < it->t->nb)
        n = it->t->b[++it->bucket];
    it->next = n ? n->next : NULL;
    return n;
}

static inline fl_hnode *fl_htab_first(const fl_htab *t, fl_htab_iter *it)
{
    it->t = t;
    it->bucket = 0;
    it->next = t->nb ? t->b[0] : NULL;
    return fl_htab_next(it);
}

#endif
