/* parallel.c - one pool of threads for parallel loops (see parallel.h).
 *
 * One pool of helper threads for the whole process, started on first use and living as
 * long as it: starting and joining threads on every reconcile cost more than the writes they
 * ran in parallel. A call publishes a batch; helpers take items from any open batch, and the
 * caller works through its own batch too, then waits until every item it handed out is done.
 * max_threads caps the helpers a batch may occupy. */
#include "core/parallel.h"

#include <pthread.h>

#include "core/log.h"
#include "core/mem.h"

#define POOL_THREADS 16

typedef struct batch {
    struct batch *next;
    int n, next_item, running, done;
    int helpers, max_helpers;
    void (*fn)(void *ctx, int i);
    void *ctx;
    pthread_cond_t finished;
} batch;

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    pthread_cond_t work;
    batch *open; /* batches with items not yet taken */
} pool = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER};

/* Take the next item of b (under pool.mu); -1 when none is left. Unlinks a drained batch. */
static int take_locked(batch *b)
{
    if (b->next_item >= b->n)
        return -1;
    int i = b->next_item++;
    b->running++;
    if (b->next_item >= b->n) {
        for (batch **pp = &pool.open; *pp; pp = &(*pp)->next)
            if (*pp == b) {
                *pp = b->next;
                break;
            }
    }
    return i;
}

static void finish_locked(batch *b)
{
    b->running--;
    b->done++;
    if (b->done == b->n)
        pthread_cond_broadcast(&b->finished);
}

static void *pool_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "fl-pool");
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        batch *b = pool.open;
        while (b && b->helpers >= b->max_helpers)
            b = b->next;
        if (!b) {
            fl_cond_wait_idle(&pool.work, &pool.mu, CLOCK_REALTIME); /* idle: its cached blocks go */
            continue;
        }
        b->helpers++;
        for (int i; (i = take_locked(b)) >= 0;) {
            pthread_mutex_unlock(&pool.mu);
            b->fn(b->ctx, i);
            pthread_mutex_lock(&pool.mu);
            finish_locked(b);
        }
        b->helpers--;
    }
    return NULL;
}

static void pool_start(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 1024 * 1024);
    for (int i = 0; i < POOL_THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, pool_main, NULL) != 0) {
            fl_log(FL_LOG_WARN, "parallel", "pool: %d of %d threads started", i, POOL_THREADS);
            break;
        }
    }
    pthread_attr_destroy(&attr);
}

void fl_parallel(int n, int max_threads, void (*fn)(void *ctx, int i), void *ctx)
{
    if (n <= 0)
        return;
    if (n == 1 || max_threads <= 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    pthread_once(&pool.once, pool_start);
    batch b = {.n = n, .fn = fn, .ctx = ctx, .max_helpers = max_threads - 1};
    pthread_cond_init(&b.finished, NULL);
    pthread_mutex_lock(&pool.mu);
    b.next = pool.open;
    pool.open = &b;
    pthread_mutex_unlock(&pool.mu);
    /* as many helpers as can help, woken outside the lock they would run into */
    for (int k = n - 1 < b.max_helpers ? n - 1 : b.max_helpers; k > 0; k--)
        pthread_cond_signal(&pool.work);
    pthread_mutex_lock(&pool.mu);
    for (int i; (i = take_locked(&b)) >= 0;) {
        pthread_mutex_unlock(&pool.mu);
        fn(ctx, i);
        pthread_mutex_lock(&pool.mu);
        finish_locked(&b);
    }
    while (b.done < b.n)
        pthread_cond_wait(&b.finished, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_cond_destroy(&b.finished);
}
