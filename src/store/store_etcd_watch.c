/* store_etcd_watch.c - the etcd backend's watcher thread, history replay and watches.
 *
 * One etcd watch per replica: the watcher thread watches the store's whole prefix from the
 * revision after the head, with each event's previous value (prev_kv) and etcd's periodic
 * progress notifications (which move the head over revisions outside the prefix), and applies every
 * response to the cache under the store's write lock, publishing its events to the hub in
 * revision order before it lets go; then it wakes the writers waiting to read their
 * writes. Every client watch and in-process informer of this replica is served by the hub
 * from those events, so N watchers cost one etcd watch.
 *
 * When the stream breaks (a member went away, a timeout), the thread watches again from
 * the revision after the last one it applied: nothing is lost or applied twice. When etcd
 * answers that this revision is compacted (the replica lagged past the cluster's
 * compaction), the events in between are gone: it reads the whole state again, expires
 * every open watch (their clients relist, as on a 410) and goes on from there.
 *
 * A watch from below the hub's ring reads the older events from etcd through the replay
 * callback: a watch of its own from that revision, over the whole keyspace, stopped at the
 * revision where the ring begins. Why the whole keyspace: etcd sends no marker for "caught
 * up" (and a requested progress notification can come ahead of the events in 3.4,
 * etcd-io/etcd#15220), but every revision of etcd changes some key, so a watch of every key
 * reaches the revision where the ring begins, and stops there, without waiting. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "store/store_cache.h"
#include "store/store_etcd.h"
#include "store/store_watch.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

static bool stopping(const fl_store_etcd *s)
{
    return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
}

/* The store's event for an etcd event on store key `key`: a put's value stamped with its
 * revision, a delete's final value the previous one's stamped with the delete's revision
 * (etcd keeps no value with a delete). */
static fl_store_event *event_of(const fl_etcd_event *ev, const char *key)
{
    int64_t rev = ev->kv.mod_rev;
    if (ev->type == FL_ETCD_EV_PUT) {
        int type = ev->kv.create_rev == rev ? FL_EV_PUT_CREATE : FL_EV_PUT_UPDATE;
        return fl_watch_event_new(type, key, rev, fl_store_etcd_stamp(ev->kv.value, rev));
    }
    fl_blob *final = ev->prev.key && ev->prev.value ? fl_store_etcd_stamp(ev->prev.value, rev) : fl_blob_new("", 0);
    return fl_watch_event_new(FL_EV_DELETE, key, rev, final);
}

/* ---- the watcher ---- */

/* fl_etcd_watch_fn: apply one response's events, publish them, wake the waiting writers. */
static bool apply(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev)
{
    fl_store_etcd *s = ctx;
    if (n == 0) {
        /* A progress notification: every revision up to header_rev has been delivered, so
         * the cache is exact there too. Revisions other transactions of the cluster took
         * (notes, leases, another replica's opening) then count as this replica's head, and
         * a caller holding one from another replica need not wait for the next write. etcd
         * sends these to a watcher that has caught up only, every
         * --experimental-watch-progress-notify-interval (10 minutes unless set). */
        if (header_rev > fl_store_rev(&s->base)) {
            pthread_rwlock_wrlock(&s->base.lock);
            if (header_rev > s->base.head)
                __atomic_store_n(&s->base.head, header_rev, __ATOMIC_RELEASE);
            pthread_rwlock_unlock(&s->base.lock);
            pthread_mutex_lock(&s->mu);
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
        }
        return !stopping(s);
    }
    fl_store_event *small[16], **out = n <= 16 ? small : fl_malloc(n * sizeof(*out));
    size_t m = 0;
    pthread_rwlock_wrlock(&s->base.lock);
    int64_t head = s->base.head;
    for (size_t i = 0; i < n; i++) {
        const fl_etcd_event *ev = &evs[i];
        int64_t rev = ev->kv.mod_rev;
        const char *key = strncmp(ev->kv.key, s->prefix, s->plen) == 0 ? ev->kv.key + s->plen : NULL;
        if (rev <= head || !key) /* applied before the stream broke, or not ours */
            continue;
        fl_store_event *e = event_of(ev, key);
        if (ev->type == FL_ETCD_EV_PUT)
            fl_store_cache_put(&s->base.cache, key, fl_blob_ref(e->ev.value), rev, ev->kv.create_rev);
        else
            fl_store_cache_del(&s->base.cache, key);
        out[m++] = e;
        head = rev;
    }
    if (m)
        fl_watch_hub_publish(s->base.hub, out, m); /* takes over the references */
    __atomic_store_n(&s->base.head, head, __ATOMIC_RELEASE);
    pthread_rwlock_unlock(&s->base.lock);
    if (out != small)
        free(out);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return !stopping(s);
}

/* The revisions after the head are compacted: read the state afresh and expire every watch. */
static int reload(fl_store_etcd *s)
{
    fl_store_cache fresh;
    int64_t rev = 0;
    int rc = fl_store_etcd_load(s, &fresh, &rev);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&s->base.lock);
    fl_store_cache old = s->base.cache;
    s->base.cache = fresh;
    if (rev > s->base.head)
        __atomic_store_n(&s->base.head, rev, __ATOMIC_RELEASE);
    fl_watch_hub_expire_all(s->base.hub, s->base.head);
    pthread_rwlock_unlock(&s->base.lock);
    fl_store_cache_close(&old);
    fl_log(FL_LOG_WARN, "store", "etcd: this replica lagged past etcd's compaction; read %zu keys again at revision "
           "%" PRId64 " and expired every open watch", fresh.count, rev);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Sleep ms unless the store closes first. */
static void pause_ms(fl_store_etcd *s, int ms)
{
    struct timespec t = fl_time_after(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&s->mu);
    while (!s->closing && pthread_cond_timedwait(&s->cv, &s->mu, &t) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&s->mu);
}

static void *watcher_main(void *arg)
{
    fl_store_etcd *s = arg;
    int backoff = BACKOFF_MIN_MS;
    while (!stopping(s)) {
        int64_t from = fl_store_rev(&s->base) + 1;
        fl_etcd_error e = { 0 };
        int rc = fl_etcd_watch(s->c, s->prefix, s->prefix_end, from, true, true, apply, s, &s->stop, &e);
        if (stopping(s))
            break;
        if (fl_store_rev(&s->base) >= from)
            backoff = BACKOFF_MIN_MS; /* it made progress before it broke */
        if (rc == FL_EEXPIRED) {
            fl_store_etcd_saw_compaction(s, e.compact_rev);
            if (reload(s) == 0)
                continue;
        } else if (rc != 0) {
            fl_log(FL_LOG_WARN, "store", "etcd: the watch from revision %" PRId64 " broke (%s); watching again in %d ms",
                   fl_store_rev(&s->base) + 1, e.msg[0] ? e.msg : fl_strerror(rc), backoff);
        }
        pause_ms(s, backoff);
        backoff = backoff * 2 < BACKOFF_MAX_MS ? backoff * 2 : BACKOFF_MAX_MS;
    }
    return NULL;
}

int fl_store_etcd_watcher_start(fl_store_etcd *s)
{
    if (pthread_create(&s->watcher, NULL, watcher_main, s) != 0)
        return FL_EIO;
    s->have_watcher = true;
    return 0;
}

/* ---- replay of history older than the ring ---- */

typedef struct replay_ctx {
    const char *eprefix;       /* the watch's prefix as an etcd key */
    size_t eplen, plen;        /* its length; the store prefix's */
    int64_t to;
    size_t max, n;
    fl_store_event **out;
    bool done;                 /* reached `to` or max */
} replay_ctx;

static bool replay_one(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev)
{
    replay_ctx *r = ctx;
    (void)header_rev;
    for (size_t i = 0; i < n; i++) {
        const fl_etcd_event *ev = &evs[i];
        int64_t rev = ev->kv.mod_rev;
        if (rev > r->to) {
            r->done = true;
            return false;
        }
        if (strncmp(ev->kv.key, r->eprefix, r->eplen) == 0)
            r->out[r->n++] = event_of(ev, ev->kv.key + r->plen);
        if (rev == r->to || r->n == r->max) {
            r->done = true;
            return false;
        }
    }
    return true;
}

int fl_store_etcd_replay(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max, fl_store_event **out,
                         size_t *n)
{
    fl_store_etcd *s = ctx;
    *n = 0;
    /* revision 1 is an empty etcd's, which changed nothing: no event comes for it */
    if (from >= to || to <= 1)
        return 0;
    if (from < fl_store_compact_rev(&s->base))
        return FL_EEXPIRED;
    char *eprefix = fl_store_etcd_key(s, prefix);
    replay_ctx r = { .eprefix = eprefix, .eplen = strlen(eprefix), .plen = s->plen, .to = to, .max = max,
                     .out = out };
    char *all_end = fl_etcd_prefix_end("");
    fl_etcd_error e = { 0 };
    int rc = fl_etcd_watch(s->c, "", all_end, from + 1, true, false, replay_one, &r, &s->stop, &e);
    free(all_end);
    free(eprefix);
    if (r.done) {
        *n = r.n;
        return 0;
    }
    for (size_t i = 0; i < r.n; i++)
        fl_watch_event_unref(out[i]);
    if (rc == 0)
        return FL_ECLOSED; /* stopped: the store is closing */
    rc = fl_store_etcd_fail(s, "replaying history", &e);
    return rc == FL_EEXPIRED ? rc : FL_EIO; /* a watch's FL_ETIMEDOUT means "nothing yet" */
}

bool fl_store_etcd_unchanged_since(fl_store *bs, int64_t rev)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    int64_t head = fl_store_rev(bs);
    if (rev <= 0 || rev > head)
        return false;
    if (rev == head)
        return true;
    /* the revisions in between are the cluster's: notes (the very note of rev takes some),
     * leases, other prefixes; one event under the prefix among them is a change */
    fl_store_event *ev = NULL;
    size_t n = 0;
    int rc = fl_store_etcd_replay(s, "", rev, head, 1, &ev, &n);
    if (n)
        fl_watch_event_unref(ev);
    return rc == 0 && n == 0;
}

int fl_store_etcd_watch(fl_store *s, const char *prefix, int64_t from_rev, fl_watch **out)
{
    if (from_rev < fl_store_compact_rev(s))
        return FL_EEXPIRED;
    return fl_watch_hub_open(s->hub, prefix, from_rev, out);
}
