/* workqueue.h - the de-duplicating work queue every controller reconciles from.
 *
 * Keys are strings (usually "namespace/name"). The queue has client-go's semantics:
 *   - a key is queued at most once however often it is added (adds coalesce);
 *   - a key handed out by get() is "processing" until done(); it is never handed to
 *     a second worker meanwhile, and if it was added again while processing it is
 *     queued again at done(), so the newest state is always reconciled once more;
 *   - add_after() holds a key back for a delay (a key waiting twice keeps the
 *     earlier time); add_rate_limited() delays by a per-key exponential back-off
 *     (5 ms, 10 ms, 20 ms, ... capped at 1000 s by default) that forget() resets;
 *   - shut_down() drops waiting keys, ignores new adds, lets getters drain what is
 *     already queued, then makes every get() return FL_ECLOSED.
 *
 * A controller's worker loop:
 *     char *key;
 *     while (fl_workqueue_get(q, -1, &key) == 0) {
 *         if (reconcile(key) == 0) fl_workqueue_forget(q, key);
 *         else fl_workqueue_add_rate_limited(q, key);
 *         fl_workqueue_done(q, key);
 *         free(key);
 *     }
 *
 * Delayed keys need no timer thread: getters sleep until the earliest one is due.
 * Threads: every function may be called from any thread. */
#ifndef FL_WORKQUEUE_H
#define FL_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_workqueue fl_workqueue;

typedef struct fl_workqueue_config {
    int64_t base_delay_ms;    /* first rate-limited delay; 0 = 5 */
    int64_t max_delay_ms;     /* cap of the rate-limited delay; 0 = 1000000 (1000 s) */
} fl_workqueue_config;

/* New queue; cfg may be NULL for the defaults. Never NULL (allocation failure aborts). */
fl_workqueue *fl_workqueue_new(const fl_workqueue_config *cfg);
/* Name the queue and count its client-go metrics under workqueue_*{name="..."}: adds,
 * retries, queue and work duration, and at scrape time depth, unfinished work and the
 * longest running processor (core/metrics.h). Call once, before the queue is used; name
 * is copied and must come from a bounded set (controller names). Queues sharing a name
 * share their counters; an unnamed queue counts nothing and pays nothing. */
void fl_workqueue_set_name(fl_workqueue *q, const char *name);
/* Free. Call after shut_down once no thread uses the queue. NULL-safe. */
void fl_workqueue_free(fl_workqueue *q);

/* Queue key now (copied). No-op if already queued, or after shut_down. */
void fl_workqueue_add(fl_workqueue *q, const char *key);
/* Queue key after delay_ms (<= 0: now). */
void fl_workqueue_add_after(fl_workqueue *q, const char *key, int64_t delay_ms);
/* Queue key after its back-off: base * 2^failures, capped; counts one more failure.
 * Returns the delay chosen, in ms. */
int64_t fl_workqueue_add_rate_limited(fl_workqueue *q, const char *key);
/* Reset key's back-off (call after a successful reconcile). */
void fl_workqueue_forget(fl_workqueue *q, const char *key);
/* Failures counted for key since the last forget. */
int fl_workqueue_requeues(fl_workqueue *q, const char *key);

/* Take the next key, waiting up to timeout_ms (-1 = until one comes or shut_down).
 * Returns 0 with *key a heap copy the caller frees (after calling done), FL_ETIMEDOUT,
 * or FL_ECLOSED once shut down and drained. *key is NULL on failure. */
int fl_workqueue_get(fl_workqueue *q, int timeout_ms, char **key);
/* Finish processing key (from get). Queues it again if it was added meanwhile. */
void fl_workqueue_done(fl_workqueue *q, const char *key);

/* Stop: wake every getter; see the header comment for what happens to keys. */
void fl_workqueue_shut_down(fl_workqueue *q);
bool fl_workqueue_shutting_down(fl_workqueue *q);

/* Between these two calls (nested: the outermost pair counts), this thread's adds to any
 * queue wake no getter; flush wakes each queue added to once (all its getters when it got
 * more than one key). For a thread that adds many keys at once, such as an informer telling
 * a list's adds: a getter woken per key would take one, sleep again, and cost the adding
 * thread a futex wake and the getter a context switch for every key. Every defer must be
 * flushed by the same thread; queues added to meanwhile must outlive the flush. */
void fl_workqueue_defer_wakes(void);
void fl_workqueue_flush_wakes(void);

/* Keys queued and ready (not processing, not waiting for a delay). */
size_t fl_workqueue_len(fl_workqueue *q);
/* Whether the queue knows no key at all: none queued, processing, waiting for a delay, or
 * remembered for its back-off (a key that failed last keeps its count until forget). */
bool fl_workqueue_idle(fl_workqueue *q);

#endif
