/* workqueue.c - de-duplicating work queue with delays and back-off (contract in workqueue.h).
 *
 * One mutex guards everything; the critical sections are a few pointer moves, so
 * contention stays low even with many workers. Each key known to the queue has one
 * item, found through the shared hash table (core/htab.h), carrying its whole state:
 *   dirty       added and not yet handed out (it wants a reconcile)
 *   processing  handed out by get() and not yet done()
 *   heap_idx    position in the delay heap (-1: not waiting)
 *   failures    the rate limiter's count
 * The ready FIFO holds exactly the items that are dirty and not processing, which
 * is what makes "never two workers on one key" and "re-added while processing is
 * processed again" fall out of two flag checks. An item with no state left is freed.
 *
 * Delays are a binary min-heap on the due time (CLOCK_MONOTONIC ms). There is no
 * timer thread: before every get(), and in every waiting getter when the earliest
 * due time passes, due items move into the FIFO. Adding a key that becomes the
 * earliest wakes the getters so they shorten their sleep.
 *
 * A named queue (fl_workqueue_set_name) counts client-go's workqueue_* metrics: adds and
 * retries through series handles taken once (atomics, no allocation), queue and work
 * durations from two timestamps kept on the item, and at scrape time (a metrics hook)
 * depth, unfinished work and the longest running processor from the ready count and a
 * list of the items being processed (at most one per worker, so the walk is short). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/workqueue.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/htab.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "core/metrics.h"

typedef struct wq_item {
    fl_hnode node;           /* in the queue's table, by key */
    struct wq_item *qnext;   /* ready FIFO */
    int64_t due_ms;          /* when heap_idx >= 0 */
    long heap_idx;
    int failures;
    bool dirty, processing;
    int64_t added_ns, started_ns; /* named queues: when it became dirty, when get() took it */
    struct wq_item *pnext, *pprev; /* named queues: the processing list */
    char key[];
} wq_item;

struct fl_workqueue {
    pthread_mutex_t mu;
    pthread_cond_t cond;     /* CLOCK_MONOTONIC */
    int64_t base_ms, max_ms;
    bool shutting;

    fl_htab items;           /* every key the queue knows */

    wq_item *head, *tail;    /* ready FIFO */
    size_t nready;

    wq_item **heap;
    size_t nheap, heap_cap;

    int wake;                /* owed to sleeping getters at unlock: WAKE_ONE or WAKE_ALL */

    /* metrics, once named (NULL series: not counted) */
    char *name;
    wq_item *processing;     /* list through pnext/pprev */
    fl_metric_series *m_adds, *m_retries, *m_queue_s, *m_work_s, *m_depth, *m_unfinished, *m_longest;
};

enum { WAKE_NONE, WAKE_ONE, WAKE_ALL };

/* Getters are woken after the mutex is released, not while it is held: a getter woken
 * under the lock would run straight into it, sleep again and need a second wake-up (two
 * context switches instead of one per key, the waker often preempted in between). */
static void owe(fl_workqueue *q, int how)
{
    if (how > q->wake)
        q->wake = how;
}

/* The wakes this thread owes while it defers them (fl_workqueue_defer_wakes): a queue at
 * most once, WAKE_ALL once it owes more than one. */
#define DEFER_MAX 16
static __thread struct {
    int depth, n;
    fl_workqueue *q[DEFER_MAX];
    int how[DEFER_MAX];
} deferred;

static bool defer_wake(fl_workqueue *q, int how)
{
    for (int i = 0; i < deferred.n; i++)
        if (deferred.q[i] == q) {
            deferred.how[i] = WAKE_ALL;
            return true;
        }
    if (deferred.n == DEFER_MAX)
        return false;
    deferred.q[deferred.n] = q;
    deferred.how[deferred.n++] = how;
    return true;
}

static void wake(fl_workqueue *q, int how)
{
    if (how == WAKE_ONE)
        pthread_cond_signal(&q->cond);
    else if (how == WAKE_ALL)
        pthread_cond_broadcast(&q->cond);
}

void fl_workqueue_defer_wakes(void)
{
    deferred.depth++;
}

void fl_workqueue_flush_wakes(void)
{
    if (deferred.depth == 0 || --deferred.depth > 0)
        return;
    for (int i = 0; i < deferred.n; i++)
        wake(deferred.q[i], deferred.how[i]);
    deferred.n = 0;
}

static void unlock_and_wake(fl_workqueue *q)
{
    int how = q->wake;
    q->wake = WAKE_NONE;
    pthread_mutex_unlock(&q->mu);
    if (how != WAKE_NONE && deferred.depth && defer_wake(q, how))
        return;
    wake(q, how);
}

/* ---- the items, by key ---- */

static bool item_is(const fl_hnode *n, const void *key)
{
    return !strcmp(fl_htab_entry(n, wq_item, node)->key, key);
}

static wq_item *find(fl_workqueue *q, const char *key)
{
    return fl_htab_entry(fl_htab_find(&q->items, fl_hash_str(key), item_is, key), wq_item, node);
}

static wq_item *find_or_make(fl_workqueue *q, const char *key)
{
    uint64_t h = fl_hash_str(key);
    wq_item *it = fl_htab_entry(fl_htab_find(&q->items, h, item_is, key), wq_item, node);
    if (it)
        return it;
    size_t n = strlen(key);
    it = fl_calloc(1, sizeof *it + n + 1);
    memcpy(it->key, key, n + 1);
    it->heap_idx = -1;
    fl_htab_add(&q->items, &it->node, h);
    return it;
}

/* Free the item if nothing refers to it any more. */
static void maybe_release(fl_workqueue *q, wq_item *it)
{
    if (it->dirty || it->processing || it->heap_idx >= 0 || it->failures)
        return;
    fl_htab_remove(&q->items, &it->node);
    free(it);
}

/* ---- delay heap ---- */

static void heap_set(fl_workqueue *q, size_t i, wq_item *it)
{
    q->heap[i] = it;
    it->heap_idx = (long)i;
}

static void sift_up(fl_workqueue *q, size_t i)
{
    wq_item *it = q->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (q->heap[parent]->due_ms <= it->due_ms)
            break;
        heap_set(q, i, q->heap[parent]);
        i = parent;
    }
    heap_set(q, i, it);
}

static void sift_down(fl_workqueue *q, size_t i)
{
    wq_item *it = q->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        int64_t best = it->due_ms;
        if (l < q->nheap && q->heap[l]->due_ms < best)
            m = l, best = q->heap[l]->due_ms;
        if (l + 1 < q->nheap && q->heap[l + 1]->due_ms < best)
            m = l + 1;
        if (m == i)
            break;
        heap_set(q, i, q->heap[m]);
        i = m;
    }
    heap_set(q, i, it);
}

static wq_item *heap_pop(fl_workqueue *q)
{
    wq_item *top = q->heap[0];
    top->heap_idx = -1;
    if (--q->nheap > 0) {
        q->heap[0] = q->heap[q->nheap];
        sift_down(q, 0);
    }
    return top;
}

/* ---- the queue proper ---- */

/* Put it at the end of the FIFO of ready keys and wake a worker. */
static void push_ready(fl_workqueue *q, wq_item *it)
{
    it->qnext = NULL;
    if (q->tail)
        q->tail->qnext = it;
    else
        q->head = it;
    q->tail = it;
    q->nready++;
    owe(q, WAKE_ONE);
}

static void mark_dirty(fl_workqueue *q, wq_item *it)
{
    if (it->dirty)
        return;
    it->dirty = true;
    if (q->m_adds) {
        fl_metric_add(q->m_adds, 1);
        it->added_ns = fl_time_mono_ns();
    }
    if (it->processing)
        return; /* queued again by done() */
    push_ready(q, it);
}

/* Move every due delayed item into the FIFO. */
static void promote(fl_workqueue *q, int64_t now)
{
    while (q->nheap && q->heap[0]->due_ms <= now)
        mark_dirty(q, heap_pop(q));
}

static void add_locked(fl_workqueue *q, const char *key, int64_t delay_ms)
{
    if (q->shutting)
        return;
    wq_item *it = find_or_make(q, key);
    if (delay_ms <= 0) {
        mark_dirty(q, it);
        return;
    }
    int64_t due = fl_time_mono_ms() + delay_ms;
    if (it->heap_idx >= 0) {
        if (due >= it->due_ms)
            return; /* keep the earlier time: nothing changes, nobody need wake */
        it->due_ms = due;
        sift_up(q, (size_t)it->heap_idx);
    } else {
        if (q->nheap == q->heap_cap) {
            q->heap_cap = q->heap_cap ? q->heap_cap * 2 : 16;
            q->heap = fl_realloc(q->heap, q->heap_cap * sizeof *q->heap);
        }
        it->due_ms = due;
        heap_set(q, q->nheap++, it);
        sift_up(q, q->nheap - 1);
    }
    if (q->heap[0] == it) /* a new earliest time: sleeping getters must shorten their wait */
        owe(q, WAKE_ALL);
}

fl_workqueue *fl_workqueue_new(const fl_workqueue_config *cfg)
{
    fl_workqueue *q = fl_calloc(1, sizeof *q);
    q->base_ms = cfg && cfg->base_delay_ms > 0 ? cfg->base_delay_ms : 5;
    q->max_ms = cfg && cfg->max_delay_ms > 0 ? cfg->max_delay_ms : 1000000;
    fl_htab_init(&q->items, 64);
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cond, &ca);
    pthread_condattr_destroy(&ca);
    return q;
}

/* The gauges of a named queue, at scrape time (a metrics hook). */
static void scrape(void *arg)
{
    fl_workqueue *q = arg;
    pthread_mutex_lock(&q->mu);
    int64_t now = fl_time_mono_ns(), longest = 0;
    double unfinished = 0;
    for (wq_item *it = q->processing; it; it = it->pnext) {
        int64_t d = now - it->started_ns;
        unfinished += (double)d / 1e9;
        if (d > longest)
            longest = d;
    }
    fl_metric_set(q->m_depth, (double)q->nready);
    fl_metric_set(q->m_unfinished, unfinished);
    fl_metric_set(q->m_longest, (double)longest / 1e9);
    pthread_mutex_unlock(&q->mu);
}

void fl_workqueue_set_name(fl_workqueue *q, const char *name)
{
    fl_metric *adds = fl_metric_family(FL_METRIC_COUNTER, "workqueue_adds_total",
                                       "Adds handled by the work queue (an add of a key already queued is not counted).",
                                       "name", NULL, NULL, 0);
    fl_metric *retries = fl_metric_family(FL_METRIC_COUNTER, "workqueue_retries_total",
                                          "Rate-limited re-adds (retries after a failed reconcile).", "name", NULL,
                                          NULL, 0);
    fl_metric *queue_s = fl_metric_family(FL_METRIC_HISTOGRAM, "workqueue_queue_duration_seconds",
                                          "Seconds a key waits in the queue before a worker takes it.", "name", NULL,
                                          NULL, 0);
    fl_metric *work_s = fl_metric_family(FL_METRIC_HISTOGRAM, "workqueue_work_duration_seconds",
                                         "Seconds a worker spends on a key (get to done).", "name", NULL, NULL, 0);
    fl_metric *depth =
        fl_metric_family(FL_METRIC_GAUGE, "workqueue_depth", "Keys queued and ready now.", "name", NULL, NULL, 0);
    fl_metric *unfinished = fl_metric_family(
        FL_METRIC_GAUGE, "workqueue_unfinished_work_seconds",
        "Seconds of work in progress not yet done, summed over the keys being processed; a large value with "
        "little growth of work_duration means stuck workers.",
        "name", NULL, NULL, 0);
    fl_metric *longest =
        fl_metric_family(FL_METRIC_GAUGE, "workqueue_longest_running_processor_seconds",
                         "Seconds the longest running worker of the queue has been on its key.", "name", NULL, NULL, 0);
    pthread_mutex_lock(&q->mu);
    bool first = !q->name;
    free(q->name);
    q->name = fl_strdup(name);
    q->m_adds = fl_metric_with(adds, name, NULL);
    q->m_retries = fl_metric_with(retries, name, NULL);
    q->m_queue_s = fl_metric_with(queue_s, name, NULL);
    q->m_work_s = fl_metric_with(work_s, name, NULL);
    q->m_depth = fl_metric_with(depth, name, NULL);
    q->m_unfinished = fl_metric_with(unfinished, name, NULL);
    q->m_longest = fl_metric_with(longest, name, NULL);
    if (first) { /* keys queued before the name (an informer's first list): counted and timed from now */
        int64_t now = fl_time_mono_ns();
        for (wq_item *it = q->head; it; it = it->qnext)
            it->added_ns = now;
        fl_metric_add(q->m_adds, (double)q->nready);
    }
    pthread_mutex_unlock(&q->mu);
    if (first)
        fl_metrics_on_scrape(scrape, q);
}

void fl_workqueue_free(fl_workqueue *q)
{
    if (!q)
        return;
    if (q->name)
        fl_metrics_remove_hook(scrape, q);
    free(q->name);
    fl_htab_iter i;
    for (fl_hnode *n = fl_htab_first(&q->items, &i); n; n = fl_htab_next(&i))
        free(fl_htab_entry(n, wq_item, node));
    fl_htab_close(&q->items);
    free(q->heap);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

void fl_workqueue_add(fl_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    add_locked(q, key, 0);
    unlock_and_wake(q);
}

void fl_workqueue_add_after(fl_workqueue *q, const char *key, int64_t delay_ms)
{
    pthread_mutex_lock(&q->mu);
    add_locked(q, key, delay_ms);
    unlock_and_wake(q);
}

int64_t fl_workqueue_add_rate_limited(fl_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    int64_t delay = q->max_ms;
    if (!q->shutting) {
        wq_item *it = find_or_make(q, key);
        int n = it->failures;
        if (n < 62 && q->base_ms <= (q->max_ms >> n))
            delay = q->base_ms << n;
        if (it->failures < 1000000)
            it->failures++;
        if (q->m_retries)
            fl_metric_add(q->m_retries, 1);
        add_locked(q, key, delay);
    }
    unlock_and_wake(q);
    return delay;
}

void fl_workqueue_forget(fl_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    wq_item *it = find(q, key);
    if (it) {
        it->failures = 0;
        maybe_release(q, it);
    }
    pthread_mutex_unlock(&q->mu);
}

int fl_workqueue_requeues(fl_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    wq_item *it = find(q, key);
    int n = it ? it->failures : 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void deadline_ts(int64_t ms, struct timespec *ts)
{
    ts->tv_sec = ms / 1000;
    ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

int fl_workqueue_get(fl_workqueue *q, int timeout_ms, char **key)
{
    *key = NULL;
    int64_t give_up = timeout_ms >= 0 ? fl_time_mono_ms() + timeout_ms : INT64_MAX;
    pthread_mutex_lock(&q->mu);
    int rc;
    for (;;) {
        int64_t now = fl_time_mono_ms();
        promote(q, now);
        if (q->head) {
            wq_item *it = q->head;
            q->head = it->qnext;
            if (!q->head)
                q->tail = NULL;
            q->nready--;
            it->dirty = false;
            it->processing = true;
            if (q->m_queue_s) {
                it->started_ns = fl_time_mono_ns();
                if (it->added_ns)
                    fl_metric_observe(q->m_queue_s, (double)(it->started_ns - it->added_ns) / 1e9);
                it->pprev = NULL;
                it->pnext = q->processing;
                if (it->pnext)
                    it->pnext->pprev = it;
                q->processing = it;
            }
            *key = fl_strdup(it->key);
            rc = 0;
            break;
        }
        if (q->shutting) {
            rc = FL_ECLOSED;
            break;
        }
        if (now >= give_up) {
            rc = FL_ETIMEDOUT;
            break;
        }
        int64_t until = give_up;
        if (q->nheap && q->heap[0]->due_ms < until)
            until = q->heap[0]->due_ms;
        /* nothing to do until then (or ever): idle, so after a while the node cache goes */
        struct timespec ts;
        deadline_ts(until, &ts);
        fl_cond_wait_idle_until(&q->cond, &q->mu, CLOCK_MONOTONIC, until == INT64_MAX ? NULL : &ts);
    }
    /* more work may be ready than this getter took: keep the others going */
    if (rc == 0 && q->head)
        owe(q, WAKE_ONE);
    unlock_and_wake(q);
    return rc;
}

void fl_workqueue_done(fl_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    wq_item *it = find(q, key);
    if (it && it->processing) {
        it->processing = false;
        if (q->m_work_s && it->started_ns) { /* 0: taken before the queue was named */
            fl_metric_observe(q->m_work_s, (double)(fl_time_mono_ns() - it->started_ns) / 1e9);
            *(it->pprev ? &it->pprev->pnext : &q->processing) = it->pnext;
            if (it->pnext)
                it->pnext->pprev = it->pprev;
            it->started_ns = 0;
        }
        if (it->dirty) /* added while processing: queued now, counted and timed at that add */
            push_ready(q, it);
        maybe_release(q, it);
    }
    unlock_and_wake(q);
}

void fl_workqueue_shut_down(fl_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    q->shutting = true;
    while (q->nheap) {
        wq_item *it = heap_pop(q);
        maybe_release(q, it);
    }
    owe(q, WAKE_ALL);
    unlock_and_wake(q);
}

bool fl_workqueue_shutting_down(fl_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    bool s = q->shutting;
    pthread_mutex_unlock(&q->mu);
    return s;
}

size_t fl_workqueue_len(fl_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->nready;
    pthread_mutex_unlock(&q->mu);
    return n;
}

bool fl_workqueue_idle(fl_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    bool idle = fl_htab_count(&q->items) == 0;
    pthread_mutex_unlock(&q->mu);
    return idle;
}
