/* test_parallel.c - unit tests for fl_parallel (src/core/parallel.c): every item
 * runs exactly once, concurrent callers share the pool without mixing their batches, and a
 * call returns only when all its items are done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/workqueue.h"
#include "controllers/controller.h"
#include "core/mem.h"
#include "core/parallel.h"
#include "testutil.h"

#define ITEMS 500

typedef struct counts {
    atomic_int hits[ITEMS];
    atomic_int running, peak;
} counts;

static void count_item(void *ctx, int i)
{
    counts *c = ctx;
    int now = atomic_fetch_add(&c->running, 1) + 1;
    for (int p = atomic_load(&c->peak); now > p && !atomic_compare_exchange_weak(&c->peak, &p, now);)
        ;
    atomic_fetch_add(&c->hits[i], 1);
    if (i % 50 == 0)
        sleep_ms(1); /* some items take a while, so others overlap them */
    atomic_fetch_sub(&c->running, 1);
}

static void test_every_item_runs_once_before_the_call_returns(void **state)
{
    (void)state;
    counts *c = fl_calloc(1, sizeof *c);
    fl_parallel(ITEMS, 8, count_item, c);
    for (int i = 0; i < ITEMS; i++)
        assert_int_equal(atomic_load(&c->hits[i]), 1);
    assert_int_equal(atomic_load(&c->running), 0);
    assert_true(atomic_load(&c->peak) <= 8);
    free(c);
}

static void test_one_thread_or_one_item_runs_inline(void **state)
{
    (void)state;
    counts *c = fl_calloc(1, sizeof *c);
    fl_parallel(ITEMS, 1, count_item, c);
    fl_parallel(1, 8, count_item, c);
    fl_parallel(0, 8, count_item, c);
    assert_int_equal(atomic_load(&c->hits[0]), 2);
    assert_int_equal(atomic_load(&c->hits[1]), 1);
    assert_int_equal(atomic_load(&c->peak), 1);
    free(c);
}

static void *caller(void *arg)
{
    fl_parallel(ITEMS, 4, count_item, arg);
    return NULL;
}

static void test_concurrent_callers_keep_their_batches_apart(void **state)
{
    (void)state;
    counts *c[6];
    pthread_t t[6];
    for (int k = 0; k < 6; k++) {
        c[k] = fl_calloc(1, sizeof *c[k]);
        assert_int_equal(pthread_create(&t[k], NULL, caller, c[k]), 0);
    }
    for (int k = 0; k < 6; k++) {
        pthread_join(t[k], NULL);
        for (int i = 0; i < ITEMS; i++)
            assert_int_equal(atomic_load(&c[k]->hits[i]), 1);
        assert_true(atomic_load(&c[k]->peak) <= 4);
        free(c[k]);
    }
}

static atomic_int reconciled;

static int slow_reconcile(void *ctx, const char *key)
{
    (void)ctx;
    (void)key;
    atomic_fetch_add(&reconciled, 1);
    sleep_ms(5);
    return 0;
}

/* A stopping server must not work off its controllers' backlog first: once the queue is shut
 * down, the workers finish what they hold and leave the rest (the store is the truth, the
 * next start reconciles everything). */
static void test_workers_stop_without_working_off_the_backlog(void **state)
{
    (void)state;
    fl_workqueue *q = fl_workqueue_new(&(fl_workqueue_config){0});
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "ns/item-%d", i);
        fl_workqueue_add(q, key);
    }
    atomic_store(&reconciled, 0);
    fl_ctrl_workers *w = fl_ctrl_workers_start(q, "test", 2, slow_reconcile, NULL);
    sleep_ms(20);
    fl_ctrl_workers_join(w); /* 1000 x 5 ms on 2 workers would be 2.5 s */
    int n = atomic_load(&reconciled);
    assert_true(n > 0);
    assert_true(n < 100);
    fl_workqueue_free(q);
}

static atomic_int running, most_at_once;
static atomic_int seen[64];

static int counting_reconcile(void *ctx, const char *key)
{
    (void)ctx;
    int now = atomic_fetch_add(&running, 1) + 1;
    for (int m = atomic_load(&most_at_once); now > m && !atomic_compare_exchange_weak(&most_at_once, &m, now);)
        ;
    atomic_fetch_add(&seen[atoi(strchr(key, '-') + 1)], 1);
    sleep_ms(10);
    atomic_fetch_sub(&running, 1);
    return 0;
}

/* One batched worker thread reconciles the keys ready at once side by side on the pool, each
 * key once; an unbatched one, one after another. */
static void test_batched_workers_reconcile_ready_keys_side_by_side(void **state)
{
    (void)state;
    for (int batch = 1; batch <= 8; batch += 7) {
        fl_workqueue *q = fl_workqueue_new(&(fl_workqueue_config){0});
        char key[32];
        for (int i = 0; i < 64; i++) {
            atomic_store(&seen[i], 0);
            snprintf(key, sizeof key, "ns/item-%d", i);
            fl_workqueue_add(q, key);
        }
        atomic_store(&running, 0);
        atomic_store(&most_at_once, 0);
        fl_ctrl_workers *w = fl_ctrl_workers_start_batched(q, "test", 1, batch, counting_reconcile, NULL, NULL);
        for (int t = 0; t < 500 && !fl_workqueue_idle(q); t++)
            sleep_ms(10);
        assert_true(fl_workqueue_idle(q));
        fl_ctrl_workers_join(w);
        for (int i = 0; i < 64; i++)
            assert_int_equal(atomic_load(&seen[i]), 1);
        if (batch == 1)
            assert_int_equal(atomic_load(&most_at_once), 1);
        else
            assert_true(atomic_load(&most_at_once) > 1);
        fl_workqueue_free(q);
    }
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_runs_once_before_the_call_returns),
        cmocka_unit_test(test_one_thread_or_one_item_runs_inline),
        cmocka_unit_test(test_concurrent_callers_keep_their_batches_apart),
        cmocka_unit_test(test_workers_stop_without_working_off_the_backlog),
        cmocka_unit_test(test_batched_workers_reconcile_ready_keys_side_by_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
