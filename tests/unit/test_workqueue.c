/* test_workqueue.c - unit tests for the controllers' work queue (src/client/workqueue.c).
 *
 * Each test pins one promise of workqueue.h: adds coalesce, a key is never with two
 * workers, a key added while processing comes back after done(), delays come out in
 * due order, the rate limiter doubles and resets, and shutdown wakes and drains.
 * Every get() in here has a timeout, so a broken queue fails a test instead of
 * hanging it. */
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
#include <time.h>

#include "client/workqueue.h"
#include "core/err.h"
#include "core/mem.h"
#include "core/timefmt.h"

#include "testutil.h"

/* get with a bound and check the key */
static void expect_key(fl_workqueue *q, const char *want)
{
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 2000, &key), 0);
    assert_string_equal(key, want);
    fl_workqueue_done(q, key);
    free(key);
}

static void test_adds_of_a_queued_key_coalesce(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add(q, "ns/a");
    fl_workqueue_add(q, "ns/b");
    fl_workqueue_add(q, "ns/a");
    fl_workqueue_add(q, "ns/a");
    assert_int_equal(fl_workqueue_len(q), 2);
    expect_key(q, "ns/a"); /* FIFO: first add decides the position */
    expect_key(q, "ns/b");
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 20, &key), FL_ETIMEDOUT);
    assert_null(key);
    fl_workqueue_free(q);
}

static void test_processing_key_is_not_handed_out_again(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add(q, "k");
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 1000, &key), 0);
    fl_workqueue_add(q, "k"); /* the object changed while we reconcile it */
    assert_int_equal(fl_workqueue_len(q), 0);
    char *other = NULL;
    assert_int_equal(fl_workqueue_get(q, 50, &other), FL_ETIMEDOUT);
    fl_workqueue_done(q, key);
    free(key);
    assert_int_equal(fl_workqueue_len(q), 1);
    expect_key(q, "k");
    assert_int_equal(fl_workqueue_len(q), 0);
    fl_workqueue_free(q);
}

/* Idle means no key at all: not queued, not processing, not waiting for its delay, and no
 * failure remembered for its back-off. */
static void test_idle_only_when_no_key_is_known(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    assert_true(fl_workqueue_idle(q));
    fl_workqueue_add(q, "k");
    assert_false(fl_workqueue_idle(q));
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 1000, &key), 0);
    assert_false(fl_workqueue_idle(q)); /* processing */
    fl_workqueue_done(q, key);
    assert_true(fl_workqueue_idle(q));
    fl_workqueue_add_after(q, key, 60000);
    assert_false(fl_workqueue_idle(q)); /* waiting for its time */
    fl_workqueue_free(q);

    q = fl_workqueue_new(&(fl_workqueue_config){.base_delay_ms = 1});
    fl_workqueue_add(q, key);
    free(key);
    assert_int_equal(fl_workqueue_get(q, 1000, &key), 0);
    fl_workqueue_add_rate_limited(q, key); /* it failed */
    fl_workqueue_done(q, key);
    free(key);
    assert_int_equal(fl_workqueue_get(q, 1000, &key), 0);
    fl_workqueue_done(q, key);
    assert_false(fl_workqueue_idle(q)); /* its failure is remembered */
    fl_workqueue_forget(q, key);
    assert_true(fl_workqueue_idle(q));
    free(key);
    fl_workqueue_free(q);
}

static void test_done_without_readd_does_not_requeue(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add(q, "k");
    expect_key(q, "k");
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 30, &key), FL_ETIMEDOUT);
    fl_workqueue_done(q, "never-got"); /* harmless */
    fl_workqueue_free(q);
}

/* Many workers, a producer bumping versions of a few keys: no key is ever with two
 * workers at once, and every key's last version is reconciled. */
#define NKEYS 8
typedef struct conc {
    fl_workqueue *q;
    atomic_int inflight[NKEYS];
    atomic_int version[NKEYS];
    atomic_int seen[NKEYS];
    atomic_int overlaps;
} conc;

static void *worker(void *arg)
{
    conc *c = arg;
    char *key;
    while (fl_workqueue_get(c->q, 5000, &key) == 0) {
        int k = atoi(key + 1);
        if (atomic_fetch_add(&c->inflight[k], 1) != 0)
            atomic_fetch_add(&c->overlaps, 1);
        int v = atomic_load(&c->version[k]);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        if (v > atomic_load(&c->seen[k]))
            atomic_store(&c->seen[k], v);
        atomic_fetch_sub(&c->inflight[k], 1);
        fl_workqueue_done(c->q, key);
        free(key);
    }
    return NULL;
}

static void test_key_is_never_processed_concurrently(void **state)
{
    conc *c = fl_calloc(1, sizeof *c);
    c->q = fl_workqueue_new(NULL);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, c);
    for (int i = 0; i < 4000; i++) {
        int k = i % NKEYS;
        atomic_fetch_add(&c->version[k], 1);
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        fl_workqueue_add(c->q, key);
    }
    /* wait until every key's newest version was seen, bounded */
    int64_t until = now_ms() + 10000;
    for (;;) {
        int done = 0;
        for (int k = 0; k < NKEYS; k++)
            done += atomic_load(&c->seen[k]) == atomic_load(&c->version[k]);
        if (done == NKEYS || now_ms() > until)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fl_workqueue_shut_down(c->q);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&c->overlaps), 0);
    for (int k = 0; k < NKEYS; k++)
        assert_int_equal(atomic_load(&c->seen[k]), atomic_load(&c->version[k]));
    fl_workqueue_free(c->q);
    free(c);
}

static void test_delayed_keys_come_out_in_due_order(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    int64_t t0 = now_ms();
    fl_workqueue_add_after(q, "c", 90);
    fl_workqueue_add_after(q, "a", 30);
    fl_workqueue_add_after(q, "b", 60);
    assert_int_equal(fl_workqueue_len(q), 0); /* waiting keys are not ready */
    expect_key(q, "a");
    assert_true(now_ms() - t0 >= 30);
    expect_key(q, "b");
    assert_true(now_ms() - t0 >= 60);
    expect_key(q, "c");
    assert_true(now_ms() - t0 >= 90);
    fl_workqueue_free(q);
}

static void test_waiting_key_keeps_the_earlier_time(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    int64_t t0 = now_ms();
    fl_workqueue_add_after(q, "x", 5000);
    fl_workqueue_add_after(q, "x", 20);
    fl_workqueue_add_after(q, "x", 3000); /* later: ignored */
    expect_key(q, "x");
    assert_true(now_ms() - t0 < 2000);
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 100, &key), FL_ETIMEDOUT); /* the later entries merged */
    fl_workqueue_free(q);
}

typedef struct getter {
    fl_workqueue *q;
    int rc;
    char *key;
    atomic_bool back; /* get returned */
} getter;

static void *blocking_get(void *arg)
{
    getter *g = arg;
    g->rc = fl_workqueue_get(g->q, 10000, &g->key);
    atomic_store(&g->back, true);
    return NULL;
}

static void test_sleeping_getter_wakes_for_an_earlier_delay(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add_after(q, "late", 5000);
    getter g = {.q = q};
    pthread_t th;
    pthread_create(&th, NULL, blocking_get, &g);
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL); /* the getter now sleeps until "late" is due */
    int64_t t0 = now_ms();
    fl_workqueue_add_after(q, "soon", 20);
    pthread_join(th, NULL);
    assert_int_equal(g.rc, 0);
    assert_string_equal(g.key, "soon");
    assert_true(now_ms() - t0 < 2000);
    free(g.key);
    fl_workqueue_free(q);
}

/* Adds while a thread defers its wakes wake no getter until the outermost flush; then each
 * queue added to wakes, all its getters when it got more than one key. */
static void test_deferred_wakes_come_at_the_flush(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL), *other = fl_workqueue_new(NULL);
    getter w[3] = {{.q = q}, {.q = q}, {.q = other}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        atomic_init(&w[i].back, false);
        pthread_create(&th[i], NULL, blocking_get, &w[i]);
    }
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL); /* the getters sleep in get */
    fl_workqueue_defer_wakes();
    fl_workqueue_defer_wakes(); /* nested: the inner flush wakes nobody */
    fl_workqueue_add(q, "a");
    fl_workqueue_add(q, "b");
    fl_workqueue_add(other, "c");
    fl_workqueue_flush_wakes();
    struct timespec wait = {0, 150 * 1000000};
    nanosleep(&wait, NULL);
    for (int i = 0; i < 3; i++)
        assert_false(atomic_load(&w[i].back));
    int64_t t0 = now_ms();
    fl_workqueue_flush_wakes();
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    assert_true(now_ms() - t0 < 2000);
    assert_true((!strcmp(w[0].key, "a") && !strcmp(w[1].key, "b")) ||
                (!strcmp(w[0].key, "b") && !strcmp(w[1].key, "a")));
    assert_string_equal(w[2].key, "c");
    for (int i = 0; i < 3; i++)
        free(w[i].key);
    /* and afterwards adds wake at once again */
    getter after = {.q = q};
    atomic_init(&after.back, false);
    pthread_create(&th[0], NULL, blocking_get, &after);
    nanosleep(&ts, NULL);
    t0 = now_ms();
    fl_workqueue_add(q, "d");
    pthread_join(th[0], NULL);
    assert_int_equal(after.rc, 0);
    assert_true(now_ms() - t0 < 2000);
    free(after.key);
    fl_workqueue_free(q);
    fl_workqueue_free(other);
}

static void test_rate_limited_backoff_doubles_to_the_cap_and_forget_resets(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    /* client-go's default: 5 ms doubling */
    assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), 5);
    assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), 10);
    assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), 20);
    assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), 40);
    assert_int_equal(fl_workqueue_requeues(q, "k"), 4);
    for (int i = 0; i < 30; i++)
        fl_workqueue_add_rate_limited(q, "k");
    assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), 1000000); /* 1000 s cap */
    assert_int_equal(fl_workqueue_add_rate_limited(q, "other"), 5);    /* per key */
    fl_workqueue_forget(q, "k");
    assert_int_equal(fl_workqueue_requeues(q, "k"), 0);
    assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), 5);
    fl_workqueue_free(q);

    fl_workqueue_config cfg = {.base_delay_ms = 10, .max_delay_ms = 50};
    q = fl_workqueue_new(&cfg);
    int64_t want[] = {10, 20, 40, 50, 50};
    for (int i = 0; i < 5; i++)
        assert_int_equal(fl_workqueue_add_rate_limited(q, "k"), want[i]);
    fl_workqueue_free(q);
}

static void test_rate_limited_key_is_delivered_after_its_delay(void **state)
{
    fl_workqueue_config cfg = {.base_delay_ms = 40};
    fl_workqueue *q = fl_workqueue_new(&cfg);
    int64_t t0 = now_ms();
    fl_workqueue_add_rate_limited(q, "k");
    expect_key(q, "k");
    assert_true(now_ms() - t0 >= 40);
    fl_workqueue_free(q);
}

static void test_shutdown_wakes_every_blocked_getter(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    getter g[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        g[i] = (getter){.q = q};
        pthread_create(&th[i], NULL, blocking_get, &g[i]);
    }
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL);
    int64_t t0 = now_ms();
    fl_workqueue_shut_down(q);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(g[i].rc, FL_ECLOSED);
        assert_null(g[i].key);
    }
    assert_true(now_ms() - t0 < 1000);
    assert_true(fl_workqueue_shutting_down(q));
    fl_workqueue_free(q);
}

static void test_shutdown_drains_queued_keys_and_drops_new_ones(void **state)
{
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add(q, "queued");
    fl_workqueue_add_after(q, "waiting", 50);
    fl_workqueue_shut_down(q);
    fl_workqueue_add(q, "late");
    expect_key(q, "queued");
    char *key = NULL;
    assert_int_equal(fl_workqueue_get(q, 200, &key), FL_ECLOSED);
    assert_null(key);
    assert_int_equal(fl_workqueue_len(q), 0);
    fl_workqueue_free(q);
}

typedef struct idle_getter {
    fl_workqueue *q;
    size_t cached_before, cached_after;
    char *key;
} idle_getter;

static void *get_after_caching(void *arg)
{
    idle_getter *g = arg;
    for (int i = 0; i < 10; i++)
        fl_node_free(fl_malloc(40));
    g->cached_before = fl_node_cached();
    assert_int_equal(fl_workqueue_get(g->q, -1, &g->key), 0);
    g->cached_after = fl_node_cached();
    return NULL;
}

/* The getter cached 10 blocks, had none left when it got want, and g's queue is done. */
static void expect_given_back(idle_getter *g, const char *want)
{
    assert_int_equal(g->cached_before, 10);
    assert_int_equal(g->cached_after, 0);
    assert_string_equal(g->key, want);
    fl_workqueue_done(g->q, g->key);
    free(g->key);
    fl_workqueue_free(g->q);
}

/* A getter that has waited FL_NODE_IDLE_MS without work gives its cached JSON blocks back
 * (mem.h: scattered over the heap, they kept a quiet server's pages resident). */
static void test_an_idle_getter_gives_its_cached_blocks_back(void **state)
{
    (void)state;
    fl_workqueue *q = fl_workqueue_new(NULL);
    idle_getter g = {q, 0, 0, NULL};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, get_after_caching, &g), 0);
    struct timespec idle = {FL_NODE_IDLE_MS / 1000 + 1, 0};
    nanosleep(&idle, NULL);
    fl_workqueue_add(q, "k");
    pthread_join(t, NULL);
    expect_given_back(&g, "k");
}

/* The same while a key is due later than that (a periodic requeue, as the cluster status
 * workers keep): waiting for it is idle time too. The key still comes out when due. */
static void test_a_getter_waiting_for_a_later_key_gives_its_cached_blocks_back(void **state)
{
    (void)state;
    fl_workqueue *q = fl_workqueue_new(NULL);
    fl_workqueue_add_after(q, "later", FL_NODE_IDLE_MS + 1500);
    idle_getter g = {q, 0, 0, NULL};
    pthread_t t;
    int64_t t0 = fl_time_mono_ms();
    assert_int_equal(pthread_create(&t, NULL, get_after_caching, &g), 0);
    pthread_join(t, NULL);
    assert_true(fl_time_mono_ms() - t0 >= FL_NODE_IDLE_MS + 1400);
    expect_given_back(&g, "later");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adds_of_a_queued_key_coalesce),
        cmocka_unit_test(test_an_idle_getter_gives_its_cached_blocks_back),
        cmocka_unit_test(test_a_getter_waiting_for_a_later_key_gives_its_cached_blocks_back),
        cmocka_unit_test(test_processing_key_is_not_handed_out_again),
        cmocka_unit_test(test_done_without_readd_does_not_requeue),
        cmocka_unit_test(test_idle_only_when_no_key_is_known),
        cmocka_unit_test(test_key_is_never_processed_concurrently),
        cmocka_unit_test(test_delayed_keys_come_out_in_due_order),
        cmocka_unit_test(test_waiting_key_keeps_the_earlier_time),
        cmocka_unit_test(test_sleeping_getter_wakes_for_an_earlier_delay),
        cmocka_unit_test(test_rate_limited_backoff_doubles_to_the_cap_and_forget_resets),
        cmocka_unit_test(test_rate_limited_key_is_delivered_after_its_delay),
        cmocka_unit_test(test_shutdown_wakes_every_blocked_getter),
        cmocka_unit_test(test_deferred_wakes_come_at_the_flush),
        cmocka_unit_test(test_shutdown_drains_queued_keys_and_drops_new_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
