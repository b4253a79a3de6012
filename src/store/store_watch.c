/* store_watch.c - the watch fan-out: event ring, per-watch queues, log replay.
 *
 * Locks, outermost first:
 *   hub->mu  the watch list, the ring, the hub's head and its closed flag;
 *   w->mu    one watch's queue; its flags are set under it too, but read
 *            with atomic loads so fl_watch_next can check them without it.
 * The writer thread takes hub->mu once per committed batch and each matching
 * watch's mu once per batch, so publishing costs O(watches) lock round-trips
 * plus one pointer push per (watch, matching event).
 *
 * Opening a watch is race-free against concurrent publishing because it happens
 * entirely under hub->mu: the hub's head is the last revision already pushed to
 * every queue, so the new watch is fed (from, head] from the ring or the log and
 * every revision > head from its queue. Log replay is done lazily in
 * fl_watch_next, in chunks, without holding any lock; live events keep queueing
 * behind it meanwhile (bounded by the backlog, like any slow watcher).
 *
 * A backend that keeps its whole history in memory (a memory store) opens watches
 * with fl_watch_hub_open_history instead: it hands over the history itself while
 * holding the lock it publishes under, so nothing is read lazily and the ring
 * (given one slot) is not used. */
#include "store/store_watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define REPLAY_CHUNK 512
#define LOCAL_BATCH 64 /* events a consumer moves out of its queue per lock */

/* fl_watch flags */
#define W_CANCELLED 1
#define W_CLOSED 2
#define W_EXPIRED 4

struct fl_watch_hub {
    pthread_mutex_t mu;
    pthread_cond_t idle;       /* signalled when active_replays drops to 0 */
    int refs;                  /* 1 for the backend + 1 per open watch */
    bool closed;
    int active_replays;        /* replay callbacks running right now */
    int64_t head;              /* last revision published */
    fl_store_event **ring;     /* slot rev & ring_mask holds revision rev */
    size_t ring_mask;
    int64_t ring_lo;           /* the ring holds revisions (ring_lo, head] */
    size_t ring_bytes;         /* bytes of the values of those events */
    size_t ring_cap;           /* bound on ring_bytes; 0 = none */
    size_t backlog;
    fl_watch *watches;         /* doubly linked */
    size_t nwatch;
    fl_watch_replay_fn replay;
    void *replay_ctx;
};

struct fl_watch {
    fl_watch_hub *hub;
    fl_watch *prev, *next;     /* under hub->mu */
    bool linked;               /* under hub->mu */
    char *prefix;
    size_t plen;
    int64_t min_rev;           /* deliver only revisions > min_rev */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    fl_store_event **q;        /* ring queue, under mu */
    size_t qcap, qhead, qlen;
    int flags;                 /* W_*, set under mu, read atomically */
    void (*notify)(void *);    /* fl_watch_set_notify, under mu */
    void *notify_ctx;

    /* Owned by the thread calling fl_watch_next. */
    int64_t replay_pos, replay_to;  /* log replay pending while replay_pos < replay_to */
    fl_store_event **rbuf;
    size_t rlen, rpos;
    fl_store_event *local[LOCAL_BATCH]; /* moved out of q, not yet handed out */
    size_t llen, lpos;
    fl_store_event *cur;       /* the event last handed out */
};

static void set_flag(fl_watch *w, int flag)
{
    __atomic_fetch_or(&w->flags, flag, __ATOMIC_RELEASE);
}

/* Mark w (closed, expired, cancelled) and wake whoever waits on it: its reader, and its
 * notify callback, called without w's lock. */
static void flag_and_wake(fl_watch *w, int flag)
{
    pthread_mutex_lock(&w->mu);
    set_flag(w, flag);
    pthread_cond_broadcast(&w->cv);
    void (*notify)(void *) = w->notify;
    void *ctx = w->notify_ctx;
    pthread_mutex_unlock(&w->mu);
    if (notify)
        notify(ctx);
}

static int get_flags(const fl_watch *w)
{
    return __atomic_load_n(&w->flags, __ATOMIC_ACQUIRE);
}

/* ---- events ---- */

fl_store_event *fl_watch_event_new(int type, const char *key, int64_t rev, fl_blob *value)
{
    size_t klen = strlen(key);
    fl_store_event *e = fl_malloc(sizeof(*e) + klen + 1);
    memcpy(e->key, key, klen + 1);
    e->refs = 1;
    e->ev.type = type;
    e->ev.key = e->key;
    e->ev.rev = rev;
    e->ev.value = value;
    return e;
}

fl_store_event *fl_watch_event_ref(fl_store_event *e)
{
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
    return e;
}

void fl_watch_event_unref(fl_store_event *e)
{
    if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        fl_blob_unref(e->ev.value);
        free(e);
    }
}

/* ---- hub ---- */

fl_watch_hub *fl_watch_hub_new(int64_t head, size_t ring_size, size_t ring_bytes, size_t backlog,
                               fl_watch_replay_fn replay, void *replay_ctx)
{
    size_t n = 1;
    while (n < ring_size)
        n <<= 1;
    fl_watch_hub *h = fl_calloc(1, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->idle, NULL);
    h->refs = 1;
    h->head = head;
    h->ring = fl_calloc(n, sizeof(*h->ring));
    h->ring_mask = n - 1;
    h->ring_lo = head;
    h->ring_cap = ring_bytes;
    h->backlog = backlog ? backlog : 1;
    h->replay = replay;
    h->replay_ctx = replay_ctx;
    return h;
}

static void hub_destroy(fl_watch_hub *h)
{
    for (size_t i = 0; i <= h->ring_mask; i++)
        fl_watch_event_unref(h->ring[i]);
    free(h->ring);
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void fl_watch_hub_free(fl_watch_hub *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->closed = true;
    for (fl_watch *w = h->watches; w; w = w->next) {
        flag_and_wake(w, W_CLOSED);
        w->linked = false;
    }
    h->watches = NULL;
    h->nwatch = 0;
    while (h->active_replays > 0)
        pthread_cond_wait(&h->idle, &h->mu);
    bool last = --h->refs == 0;
    pthread_mutex_unlock(&h->mu);
    if (last)
        hub_destroy(h);
}

static bool matches(const fl_watch *w, const fl_store_event *e)
{
    return e->ev.rev > w->min_rev && strncmp(e->key, w->prefix, w->plen) == 0;
}

/* Queue e under w->mu; the caller accounts for the reference the queue now holds
 * (see fl_watch_hub_publish). On overflow the watch expires and its queue is
 * dropped (it must re-list anyway) and false is returned: e was not queued. */
static bool push(fl_watch *w, fl_store_event *e, size_t backlog)
{
    if (w->qlen == w->qcap) {
        if (w->qcap >= backlog) {
            set_flag(w, W_EXPIRED);
            for (size_t i = 0; i < w->qlen; i++)
                fl_watch_event_unref(w->q[(w->qhead + i) % w->qcap]);
            free(w->q);
            w->q = NULL;
            w->qcap = w->qhead = w->qlen = 0;
            return false;
        }
        size_t ncap = w->qcap ? w->qcap * 2 : 16;
        if (ncap > backlog)
            ncap = backlog;
        fl_store_event **nq = fl_malloc(ncap * sizeof(*nq));
        for (size_t i = 0; i < w->qlen; i++)
            nq[i] = w->q[(w->qhead + i) % w->qcap];
        free(w->q);
        w->q = nq;
        w->qcap = ncap;
        w->qhead = 0;
    }
    w->q[(w->qhead + w->qlen) % w->qcap] = e;
    w->qlen++;
    return true;
}

/* Drop k references at once. */
static void event_release(fl_store_event *e, int k)
{
    if (k > 0 && __atomic_sub_fetch(&e->refs, k, __ATOMIC_ACQ_REL) == 0) {
        fl_blob_unref(e->ev.value);
        free(e);
    }
}

static size_t event_bytes(const fl_store_event *e)
{
    return e->ev.value ? e->ev.value->len : 0;
}

static void slot_clear(fl_watch_hub *h, fl_store_event **slot)
{
    if (*slot) {
        h->ring_bytes -= event_bytes(*slot);
        fl_watch_event_unref(*slot);
        *slot = NULL;
    }
}

/* Take the events (ring_lo, rev] out of the ring; the ring then starts at rev. Under mu.
 * Revisions may have gaps (an etcd store's), so a jump past the whole ring clears every
 * slot once instead of stepping through the revisions between. */
static void ring_drop_below(fl_watch_hub *h, int64_t rev)
{
    if (rev - h->ring_lo > (int64_t)h->ring_mask + 1) {
        for (size_t i = 0; i <= h->ring_mask; i++)
            slot_clear(h, &h->ring[i]);
        h->ring_lo = rev;
        return;
    }
    for (; h->ring_lo < rev; h->ring_lo++)
        slot_clear(h, &h->ring[(size_t)(h->ring_lo + 1) & h->ring_mask]);
}

void fl_watch_hub_publish(fl_watch_hub *h, fl_store_event **evs, size_t n)
{
    if (n == 0)
        return;
    int used_small[64];
    int *used = n <= 64 ? used_small : fl_malloc(n * sizeof(*used));
    pthread_mutex_lock(&h->mu);
    /* Every watch shares one event object, so per-push atomic increments would
     * bounce its cache line between the writer and every consumer. Instead take
     * one reference per watch up front and give back the unused ones after. */
    int nw = (int)h->nwatch;
    for (size_t i = 0; i < n; i++) {
        used[i] = 0;
        if (nw)
            __atomic_add_fetch(&evs[i]->refs, nw, __ATOMIC_RELAXED);
    }
    for (size_t i = 0; i < n; i++) {
        fl_store_event *e = evs[i];
        if (e->ev.rev <= h->head) {
            /* A second event of one revision (a transaction that wrote several keys,
             * which only another etcd client does) has no slot of its own: the ring
             * gives up what it holds, and a watch from below reads the log. */
            ring_drop_below(h, h->head);
            used[i] = -1; /* the caller's reference, which no slot took, goes at the end */
            continue;
        }
        /* Revisions may skip (etcd counts every transaction of its cluster): a slot per
         * revision, empty for the missing ones, and the ring spans at most its size in
         * revisions, so slot rev & mask holds the oldest revision, rev - size, or none. */
        if (e->ev.rev - h->ring_lo > (int64_t)h->ring_mask + 1)
            ring_drop_below(h, e->ev.rev - (int64_t)h->ring_mask - 1);
        h->ring[(size_t)e->ev.rev & h->ring_mask] = e;
        h->ring_bytes += event_bytes(e);
        h->head = e->ev.rev;
        while (h->ring_cap && h->ring_bytes > h->ring_cap && h->ring_lo < h->head - 1)
            ring_drop_below(h, h->ring_lo + 1);
    }
    for (fl_watch *w = h->watches; w; w = w->next) {
        pthread_mutex_lock(&w->mu);
        bool pushed = false;
        for (size_t i = 0; i < n && !(w->flags & (W_EXPIRED | W_CANCELLED)); i++) {
            if (matches(w, evs[i]) && push(w, evs[i], h->backlog)) {
                used[i]++;
                pushed = true;
            }
        }
        bool wake = pushed || (w->flags & W_EXPIRED);
        void (*notify)(void *) = w->notify;
        void *ctx = w->notify_ctx;
        pthread_mutex_unlock(&w->mu);
        /* after w->mu, which the woken reader takes first (h->mu, still held, keeps w alive) */
        if (wake) {
            pthread_cond_signal(&w->cv);
            if (notify)
                notify(ctx);
        }
    }
    pthread_mutex_unlock(&h->mu);
    /* Normally the ring still holds a reference, so this frees nothing; only a
     * batch larger than the ring can make it drop the last one here. */
    for (size_t i = 0; i < n; i++)
        event_release(evs[i], nw - used[i]);
    if (used != used_small)
        free(used);
}

/* Open a watch. With hist == NULL its history (from_rev, head] comes from the ring
 * and the log; otherwise from hist[0..nhist), which the caller vouches for. */
static int hub_open(fl_watch_hub *h, const char *prefix, int64_t from_rev, fl_store_event *const *hist,
                    size_t nhist, fl_watch **out)
{
    *out = NULL;
    fl_watch *w = fl_calloc(1, sizeof(*w));
    w->hub = h;
    w->prefix = fl_strdup(prefix ? prefix : "");
    w->plen = strlen(w->prefix);
    w->min_rev = from_rev;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);

    pthread_mutex_lock(&h->mu);
    if (h->closed) {
        pthread_mutex_unlock(&h->mu);
        w->hub = NULL;
        fl_watch_free(w);
        return FL_ECLOSED;
    }
    if (hist) {
        /* The backend holds the lock its publishing needs, so hist ends at h->head. */
        pthread_mutex_lock(&w->mu);
        for (size_t i = 0; i < nhist && !(w->flags & W_EXPIRED); i++) {
            if (matches(w, hist[i]) && push(w, hist[i], h->backlog))
                fl_watch_event_ref(hist[i]);
        }
        pthread_mutex_unlock(&w->mu);
    } else if (from_rev < h->head) {
        /* Revisions (from_rev, ring_lo] come from the log, the rest from the ring. */
        int64_t ring_from = from_rev;
        if (from_rev < h->ring_lo) {
            w->replay_pos = from_rev;
            w->replay_to = h->ring_lo;
            ring_from = h->ring_lo;
        }
        pthread_mutex_lock(&w->mu);
        for (int64_t r = ring_from + 1; r <= h->head && !(w->flags & W_EXPIRED); r++) {
            fl_store_event *e = h->ring[(size_t)r & h->ring_mask];
            if (e && e->ev.rev == r && matches(w, e) && push(w, e, h->backlog))
                fl_watch_event_ref(e);
        }
        pthread_mutex_unlock(&w->mu);
    }
    w->next = h->watches;
    if (h->watches)
        h->watches->prev = w;
    h->watches = w;
    w->linked = true;
    h->nwatch++;
    h->refs++;
    pthread_mutex_unlock(&h->mu);
    *out = w;
    return 0;
}

int fl_watch_hub_open(fl_watch_hub *h, const char *prefix, int64_t from_rev, fl_watch **out)
{
    return hub_open(h, prefix, from_rev, NULL, 0, out);
}

int fl_watch_hub_open_history(fl_watch_hub *h, const char *prefix, int64_t from_rev, fl_store_event *const *hist,
                              size_t nhist, fl_watch **out)
{
    static fl_store_event *const none[1];
    return hub_open(h, prefix, from_rev, hist ? hist : none, nhist, out);
}

size_t fl_watch_hub_count(fl_watch_hub *h)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->nwatch;
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* ---- watches ---- */

/* Fetch the next chunk of log events into w->rbuf. */
static int replay_chunk(fl_watch *w)
{
    fl_watch_hub *h = w->hub;
    pthread_mutex_lock(&h->mu);
    if (h->closed) {
        pthread_mutex_unlock(&h->mu);
        return FL_ECLOSED;
    }
    h->active_replays++;
    pthread_mutex_unlock(&h->mu);

    if (!w->rbuf)
        w->rbuf = fl_malloc(REPLAY_CHUNK * sizeof(*w->rbuf));
    size_t n = 0;
    int rc = h->replay(h->replay_ctx, w->prefix, w->replay_pos, w->replay_to, REPLAY_CHUNK, w->rbuf, &n);

    pthread_mutex_lock(&h->mu);
    if (--h->active_replays == 0)
        pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
    if (rc != 0) {
        for (size_t i = 0; i < n; i++)
            fl_watch_event_unref(w->rbuf[i]);
        return rc;
    }
    w->rlen = n;
    w->rpos = 0;
    w->replay_pos = n < REPLAY_CHUNK ? w->replay_to : w->rbuf[n - 1]->ev.rev;
    return 0;
}

static int flags_rc(int flags)
{
    if (flags & (W_CANCELLED | W_CLOSED))
        return FL_ECLOSED;
    if (flags & W_EXPIRED)
        return FL_EEXPIRED;
    return 0;
}

int fl_watch_next(fl_watch *w, fl_watch_event **ev, int timeout_ms)
{
    *ev = NULL;
    fl_watch_event_unref(w->cur);
    w->cur = NULL;
    int rc = flags_rc(get_flags(w));
    if (rc)
        return rc;

    /* Log replay comes strictly before anything queued. */
    while (w->rpos == w->rlen && w->replay_pos < w->replay_to) {
        rc = replay_chunk(w);
        if (rc) {
            if (rc == FL_EEXPIRED) {
                pthread_mutex_lock(&w->mu);
                set_flag(w, W_EXPIRED);
                pthread_mutex_unlock(&w->mu);
            }
            int frc = flags_rc(get_flags(w));
            return frc ? frc : rc;
        }
    }
    if (w->rpos < w->rlen) {
        w->cur = w->rbuf[w->rpos++];
        *ev = &w->cur->ev;
        return 0;
    }

    if (w->lpos == w->llen) {
        struct timespec deadline;
        bool have_deadline = false;
        pthread_mutex_lock(&w->mu);
        while (w->qlen == 0 && !flags_rc(w->flags)) {
            if (timeout_ms == 0) {
                pthread_mutex_unlock(&w->mu);
                return FL_ETIMEDOUT;
            }
            if (timeout_ms > 0 && !have_deadline) {
                deadline = fl_time_after(CLOCK_MONOTONIC, timeout_ms);
                have_deadline = true;
            }
            if (timeout_ms < 0) {
                fl_cond_wait_idle(&w->cv, &w->mu, CLOCK_MONOTONIC); /* idle: its cached blocks go */
            } else if (pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == ETIMEDOUT) {
                if (w->qlen == 0 && !flags_rc(w->flags)) {
                    pthread_mutex_unlock(&w->mu);
                    return FL_ETIMEDOUT;
                }
            }
        }
        rc = flags_rc(w->flags);
        /* Take a handful at once: one lock round-trip per LOCAL_BATCH events. */
        w->lpos = w->llen = 0;
        while (rc == 0 && w->qlen > 0 && w->llen < LOCAL_BATCH) {
            w->local[w->llen++] = w->q[w->qhead];
            w->qhead = (w->qhead + 1) % w->qcap;
            w->qlen--;
        }
        pthread_mutex_unlock(&w->mu);
        if (rc)
            return rc;
    }
    w->cur = w->local[w->lpos++];
    *ev = &w->cur->ev;
    return 0;
}

void fl_watch_cancel(fl_watch *w)
{
    if (!w)
        return;
    flag_and_wake(w, W_CANCELLED);
}

void fl_watch_set_notify(fl_watch *w, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&w->mu);
    w->notify = fn;
    w->notify_ctx = fn ? ctx : NULL;
    pthread_mutex_unlock(&w->mu);
}

void fl_watch_free(fl_watch *w)
{
    if (!w)
        return;
    fl_watch_hub *h = w->hub;
    bool last = false;
    if (h) {
        pthread_mutex_lock(&h->mu);
        if (w->linked) {
            if (w->prev)
                w->prev->next = w->next;
            else
                h->watches = w->next;
            if (w->next)
                w->next->prev = w->prev;
            w->linked = false;
            h->nwatch--;
        }
        last = --h->refs == 0;
        pthread_mutex_unlock(&h->mu);
    }
    for (size_t i = 0; i < w->qlen; i++)
        fl_watch_event_unref(w->q[(w->qhead + i) % w->qcap]);
    free(w->q);
    for (size_t i = w->rpos; i < w->rlen; i++)
        fl_watch_event_unref(w->rbuf[i]);
    free(w->rbuf);
    for (size_t i = w->lpos; i < w->llen; i++)
        fl_watch_event_unref(w->local[i]);
    fl_watch_event_unref(w->cur);
    free(w->prefix);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    if (last)
        hub_destroy(h);
}

void fl_watch_hub_expire_all(fl_watch_hub *h, int64_t head)
{
    pthread_mutex_lock(&h->mu);
    for (fl_watch *w = h->watches; w; w = w->next) {
        flag_and_wake(w, W_EXPIRED);
    }
    ring_drop_below(h, h->head);
    if (head > h->head)
        h->head = h->ring_lo = head;
    pthread_mutex_unlock(&h->mu);
}

void fl_watch_hub_rest(fl_watch_hub *h)
{
    pthread_mutex_lock(&h->mu);
    ring_drop_below(h, h->head);
    pthread_mutex_unlock(&h->mu);
}

size_t fl_watch_hub_ring_bytes(fl_watch_hub *h)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->ring_bytes;
    pthread_mutex_unlock(&h->mu);
    return n;
}
