/* store_memory.c - the memory-only store backend, for simulated member clusters.
 *
 * `flotilla member` hosts thousands of virtual clusters in one process, each with
 * its own store. They need the store's semantics (revisions, compare-and-swap,
 * lists at a revision, watches from a revision, 410 when too old) but not its
 * durability, and a SQLite database with a writer and a timer thread each would
 * cost far more than their budget of 200 KiB per idle cluster. So a memory store
 * is the state every backend shares (store_impl.h) with a history beside it:
 *
 *   - The current state is the same AVL cache behind the same rwlock, and the
 *     reads of it are the shared ones (store.c); every value stays in memory.
 *   - A write takes the write lock on the caller's thread, checks, renders and
 *     applies the op, appends it to the history and publishes its event to the
 *     watch hub before unlocking. Publishing under the lock keeps events in
 *     revision order with no writer thread; the lock is never held across
 *     anything slower than the op's render callback and the fan-out.
 *   - The history stands in for the log: the last `window` revisions, one record
 *     each holding the event and the value the key had just before. A list at
 *     revision R takes the current state and, for every key changed after R,
 *     the value recorded before its first change after R. Watches are opened
 *     with the history handed over under the read lock, which excludes
 *     publishing, so nothing is replayed later and nothing can expire between
 *     opening and reading.
 *   - Compaction is dropping the oldest records as each write pushes the history
 *     past its window, or the old values it keeps alive past ring_bytes.
 *
 * The history array starts empty and doubles as revisions arrive, up to the
 * first power of two that holds the window, so an idle store with a few keys
 * costs a couple of KiB (docs/internals/store.md, "Memory stores"). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "store/store_cache.h"
#include "store/store_impl.h"
#include "store/store_watch.h"

#define DEFAULT_RING 1024       /* revisions of history kept by default */
#define HIST_MIN 16             /* first allocation of the history array, in records */
#define WATCH_BACKLOG 100000    /* queued events per watch before it expires (as SQLite) */

/* A memory store's history: one record per revision in (compact_rev, head]. */
struct hist_rec {
    fl_store_event *ev;        /* the revision's event (key, type, new value); owned reference */
    fl_blob *prev_value;       /* the key's value just before this revision, NULL if absent; owned */
    int64_t prev_rev, prev_create_rev; /* 0 when the key was absent */
};

struct hist {
    struct hist_rec *recs;     /* slot rev & (cap - 1) holds revision rev; grown on demand */
    size_t cap;                /* 0 or a power of two */
    int64_t window;            /* revisions kept: at most head - compact_rev */
    size_t bytes;              /* value bytes the records keep alive beyond the current state */
    size_t max_bytes;          /* cap on bytes; 0 = none */
};

/* A memory store: the shared state, then the history; everything under base.lock. */
typedef struct mem_store {
    fl_store base;             /* first: a fl_store * is a mem_store * */
    struct hist hist;
    bool closing;              /* fl_store_free has begun: writes get FL_ECLOSED */
} mem_store;

/* ---- history ---- */

static struct hist_rec *hist_at(struct hist *h, int64_t rev)
{
    return &h->recs[(size_t)rev & (h->cap - 1)];
}

/* Bytes of old values a record keeps alive beyond the current state: the value it
 * replaced, and the final value of a delete. Its new value is the current one until
 * a later record replaces it, and that record counts it then. */
static size_t rec_bytes(const struct hist_rec *r)
{
    size_t n = r->prev_value ? r->prev_value->len : 0;
    if (r->ev && r->ev->ev.type == FL_EV_DELETE)
        n += r->ev->ev.value->len;
    return n;
}

static void rec_clear(struct hist *h, struct hist_rec *r)
{
    h->bytes -= rec_bytes(r);
    fl_watch_event_unref(r->ev);
    fl_blob_unref(r->prev_value);
    memset(r, 0, sizeof(*r));
}

/* Compaction: drop the oldest records while more than `keep` revisions are held
 * or, with a byte cap, while their old values exceed it. Under the write lock. */
static void hist_trim(mem_store *s, int64_t keep)
{
    struct hist *h = &s->hist;
    int64_t lo = s->base.compact_rev;
    while (s->base.head - lo > keep || (h->max_bytes && h->bytes > h->max_bytes && lo < s->base.head)) {
        rec_clear(h, hist_at(h, lo + 1));
        lo++;
    }
    __atomic_store_n(&s->base.compact_rev, lo, __ATOMIC_RELEASE);
}

/* Make room for revision head + 1: trim to one less than the window, then grow
 * the array if it is full. Under the write lock. */
static void hist_make_room(mem_store *s)
{
    struct hist *h = &s->hist;
    hist_trim(s, h->window - 1);
    int64_t lo = s->base.compact_rev;
    size_t need = (size_t)(s->base.head + 1 - lo);
    if (need <= h->cap)
        return;
    size_t ncap = h->cap ? h->cap * 2 : HIST_MIN;
    while (ncap < need)
        ncap *= 2;
    struct hist_rec *nrecs = fl_calloc(ncap, sizeof(*nrecs));
    for (int64_t r = lo + 1; r <= s->base.head; r++)
        nrecs[(size_t)r & (ncap - 1)] = *hist_at(h, r);
    free(h->recs);
    h->recs = nrecs;
    h->cap = ncap;
}

/* ---- opening and closing ---- */

/* The hub's replay callback; never called, because every watch is opened with its
 * history (fl_watch_hub_open_history). */
static int replay_none(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max, fl_store_event **out,
                       size_t *n)
{
    *n = 0;
    return FL_EEXPIRED;
}

static int mem_open(const fl_store_config *cfg, fl_store **out)
{
    *out = NULL;
    mem_store *s = fl_calloc(1, sizeof(*s));
    fl_store_base_init(&s->base, &fl_store_memory_backend);
    /* Clamp so that head + 1 - lo can never overflow the comparison. */
    int64_t ring = cfg->ring_events > 0 ? (cfg->ring_events < (size_t)1 << 40 ? (int64_t)cfg->ring_events
                                                                               : (int64_t)1 << 40)
                                        : DEFAULT_RING;
    s->hist.window = cfg->compact_window > 0 && cfg->compact_window < ring ? cfg->compact_window : ring;
    s->hist.max_bytes = cfg->ring_bytes;
    /* One ring slot: the history is handed over when a watch opens, never read from the ring. */
    s->base.hub = fl_watch_hub_new(0, 1, 0, WATCH_BACKLOG, replay_none, s);
    *out = &s->base;
    return 0;
}

static void mem_free(fl_store *bs)
{
    mem_store *s = (mem_store *)bs;
    /* Writers that come after this get FL_ECLOSED; watches end with FL_ECLOSED. */
    pthread_rwlock_wrlock(&s->base.lock);
    s->closing = true;
    pthread_rwlock_unlock(&s->base.lock);
    fl_watch_hub_free(s->base.hub);
    for (int64_t r = s->base.compact_rev + 1; r <= s->base.head; r++)
        rec_clear(&s->hist, hist_at(&s->hist, r));
    free(s->hist.recs);
    fl_store_base_close(&s->base);
    free(s);
}

/* ---- writing ---- */

static int mem_write(fl_store *bs, fl_store_op *op)
{
    mem_store *s = (mem_store *)bs;
    int rc = 0;
    pthread_rwlock_wrlock(&s->base.lock);
    if (s->closing) {
        rc = FL_ECLOSED;
        goto out;
    }
    fl_store_node *n = fl_store_cache_find(&s->base.cache, op->key);
    if (op->type == FL_STORE_CREATE && n) {
        rc = FL_EEXIST;
        goto out;
    }
    if (op->type != FL_STORE_CREATE) {
        if (!n) {
            rc = FL_ENOTFOUND;
            goto out;
        }
        if (op->prev_rev != 0 && op->prev_rev != n->rev) {
            rc = FL_ECONFLICT;
            goto out;
        }
    }
    int64_t rev = s->base.head + 1;
    fl_blob *value = fl_store_render_value(op, n ? n->value : NULL, rev);
    if (!value) {
        rc = FL_EINVAL;
        goto out;
    }
    if (op->rendered)
        op->rendered(op->ctx, value);

    hist_make_room(s);
    struct hist_rec *r = hist_at(&s->hist, rev);
    /* What the key was just before: lists at older revisions read it from here. */
    if (n) {
        r->prev_value = fl_blob_ref(n->value);
        r->prev_rev = n->rev;
        r->prev_create_rev = n->create_rev;
    }
    int type;
    if (op->type == FL_STORE_DELETE) {
        fl_store_cache_del(&s->base.cache, op->key);
        type = FL_EV_DELETE;
    } else {
        int64_t create_rev = op->type == FL_STORE_CREATE ? rev : n->create_rev;
        fl_store_cache_put(&s->base.cache, op->key, fl_blob_ref(value), rev, create_rev);
        type = op->type == FL_STORE_CREATE ? FL_EV_PUT_CREATE : FL_EV_PUT_UPDATE;
    }
    fl_store_event *e = fl_watch_event_new(type, op->key, rev, fl_blob_ref(value));
    r->ev = fl_watch_event_ref(e);
    s->hist.bytes += rec_bytes(r);
    __atomic_store_n(&s->base.head, rev, __ATOMIC_RELEASE);
    fl_watch_hub_publish(s->base.hub, &e, 1); /* takes over our reference to e */
    if (s->hist.max_bytes)
        hist_trim(s, s->hist.window);
    op->rev = rev;
    op->value = value;
out:
    pthread_rwlock_unlock(&s->base.lock);
    return rc;
}

static int64_t mem_compact(fl_store *s)
{
    /* Every write already dropped what fell out of the window. */
    return fl_store_compact_rev(s);
}

/* ---- reading ---- */

static int mem_get_at(fl_store *s, const char *key, int64_t rev, fl_blob **out)
{
    /* no log: only the current revision is there to read */
    return (*out = fl_store_base_get_at(s, key, rev)) != NULL ? 0 : FL_EEXPIRED;
}

static int mem_list_bare(fl_store *s, const char *prefix, int64_t bare_upto, fl_store_list_fn fn, void *ctx,
                         int64_t *rev_out)
{
    return fl_store_base_list(s, prefix, NULL, 0, bare_upto, fn, ctx, rev_out, NULL);
}

/* ---- lists at a revision ---- */

/* A key changed after the list's revision, and the first record that changed it. */
struct changed {
    const char *key;
    const struct hist_rec *rec;
};

static int cmp_changed(const void *a, const void *b)
{
    const struct changed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->rec->ev->ev.rev < y->rec->ev->ev.rev ? -1 : x->rec->ev->ev.rev > y->rec->ev->ev.rev;
}

static fl_store_node *next_under(fl_store_cache_iter *it, const char *prefix, size_t plen)
{
    fl_store_node *n = fl_store_cache_next(it);
    return n && strncmp(n->key, prefix, plen) == 0 ? n : NULL;
}

static int list_at(mem_store *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                   fl_store_list_fn fn, void *ctx, bool *more_out)
{
    size_t plen = strlen(prefix);
    bool after = start_after && *start_after;
    struct changed *ch = NULL;
    size_t nch = 0;
    fl_store_snap sn = { 0 };
    bool more = false;
    int rc = 0;

    pthread_rwlock_rdlock(&s->base.lock);
    if (at_rev > s->base.head) {
        rc = FL_EINVAL; /* a snapshot of the future would still change */
        goto out;
    }
    if (at_rev < s->base.compact_rev) {
        rc = FL_EEXPIRED;
        goto out;
    }
    /* Keys in range changed after at_rev; for each, the first change tells its state
     * at at_rev (prev_*; absent if prev_value is NULL). */
    if (at_rev < s->base.head)
        ch = fl_malloc((size_t)(s->base.head - at_rev) * sizeof(*ch));
    for (int64_t r = at_rev + 1; r <= s->base.head; r++) {
        const struct hist_rec *rec = hist_at(&s->hist, r);
        const char *key = rec->ev->key;
        if (strncmp(key, prefix, plen) != 0 || (after && strcmp(key, start_after) <= 0))
            continue;
        ch[nch++] = (struct changed){ key, rec };
    }
    if (nch > 1)
        qsort(ch, nch, sizeof(*ch), cmp_changed);
    size_t m = 0;
    for (size_t i = 0; i < nch; i++) {
        if (m == 0 || strcmp(ch[m - 1].key, ch[i].key) != 0)
            ch[m++] = ch[i];
    }
    nch = m;

    /* Merge the current state with the changed keys, both in key order. */
    fl_store_cache_iter it;
    fl_store_cache_seek_list(&s->base.cache, &it, prefix, start_after);
    fl_store_node *node = next_under(&it, prefix, plen);
    size_t j = 0;
    while (node || j < nch) {
        int cmp = !node ? 1 : j == nch ? -1 : strcmp(node->key, ch[j].key);
        const char *key;
        fl_blob *value;
        int64_t rev, create_rev;
        if (cmp < 0) {
            /* Unchanged since at_rev: the current value is the value then. */
            key = node->key;
            value = node->value;
            rev = node->rev;
            create_rev = node->create_rev;
            node = next_under(&it, prefix, plen);
        } else {
            const struct hist_rec *rec = ch[j++].rec;
            if (cmp == 0)
                node = next_under(&it, prefix, plen);
            if (!rec->prev_value)
                continue; /* absent at at_rev */
            key = rec->ev->key;
            value = rec->prev_value;
            rev = rec->prev_rev;
            create_rev = rec->prev_create_rev;
        }
        if (limit > 0 && sn.n == limit) {
            more = true;
            break;
        }
        fl_store_snap_add(&sn, key, value, rev, create_rev);
    }
out:
    pthread_rwlock_unlock(&s->base.lock);
    free(ch);
    if (rc == 0 && fl_store_snap_deliver(&sn, NULL, NULL, 0, fn, ctx, &rc))
        more = true;
    if (more_out)
        *more_out = more;
    return rc;
}

static int mem_list(fl_store *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                    fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out)
{
    if (at_rev == 0)
        return fl_store_base_list(s, prefix, start_after, limit, 0, fn, ctx, rev_out, more_out);
    return list_at((mem_store *)s, prefix, start_after, at_rev, limit, fn, ctx, more_out);
}

/* ---- watching ---- */

static int mem_watch(fl_store *bs, const char *prefix, int64_t from_rev, fl_watch **out)
{
    mem_store *s = (mem_store *)bs;
    int rc;
    /* The read lock excludes writers, who publish under the write lock: the history
     * handed over ends exactly where live events begin. */
    pthread_rwlock_rdlock(&s->base.lock);
    if (from_rev < s->base.compact_rev) {
        rc = FL_EEXPIRED;
    } else {
        size_t n = from_rev < s->base.head ? (size_t)(s->base.head - from_rev) : 0;
        fl_store_event **evs = n ? fl_malloc(n * sizeof(*evs)) : NULL;
        for (size_t i = 0; i < n; i++)
            evs[i] = hist_at(&s->hist, from_rev + 1 + (int64_t)i)->ev;
        rc = fl_watch_hub_open_history(s->base.hub, prefix, from_rev, evs, n, out);
        free(evs);
    }
    pthread_rwlock_unlock(&s->base.lock);
    return rc;
}

/* ---- notes: a memory store keeps none ---- */

static int mem_note_set(fl_store *s, const char *name, int64_t value, const char *text)
{
    return FL_EUNSUPPORTED;
}

static int mem_note_get(fl_store *s, const char *name, int64_t *value, char **text)
{
    return FL_ENOTFOUND;
}

/* No rest, quick_bytes or mark: its values are its state, and nothing is loaded. */
const fl_store_backend fl_store_memory_backend = {
    .open = mem_open,
    .free = mem_free,
    .get = fl_store_base_get, /* every value is in memory */
    .get_at = mem_get_at,
    .list = mem_list,
    .list_bare = mem_list_bare,
    .write = mem_write,
    .watch = mem_watch,
    .compact = mem_compact,
    .note_set = mem_note_set,
    .note_get = mem_note_get,
};
