/* test_mem.c - the JSON node cache: blocks come back to the thread that frees them, only
 * for requests they fit, a bounded number of them, and a thread's go back to malloc when it
 * exits (the sanitizer build's leak check sees any that do not). */
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/json.h"
#include "core/mem.h"

static void a_freed_block_serves_the_next_request_of_its_size(void **state)
{
    fl_node_cache_drain();
    char *p = fl_node_malloc(40);
    memset(p, 'x', 40);
    fl_node_free(p);
    assert_int_equal(fl_node_cached(), 1);
    char *q = fl_node_malloc(33); /* same chunk size as 40 */
    assert_ptr_equal(q, p);
    assert_int_equal(fl_node_cached(), 0);
    assert_true(malloc_usable_size(q) >= 33);
    fl_node_free(q);
    fl_node_cache_drain();
}

static void a_block_never_serves_a_request_it_is_too_small_for(void **state)
{
    fl_node_cache_drain();
    void *small = fl_node_malloc(24);
    fl_node_free(small);
    assert_int_equal(fl_node_cached(), 1);
    void *big = fl_node_malloc(30);
    assert_ptr_not_equal(big, small);
    assert_true(malloc_usable_size(big) >= 30);
    assert_int_equal(fl_node_cached(), 1); /* the small block is still there */
    fl_node_free(big);
    fl_node_cache_drain();
    assert_int_equal(fl_node_cached(), 0);
}

static void large_blocks_go_straight_back_to_malloc(void **state)
{
    fl_node_cache_drain();
    fl_node_free(malloc(4096));
    fl_node_free(fl_node_malloc(1000));
    fl_node_free(NULL);
    assert_int_equal(fl_node_cached(), 0);
}

static void a_thread_keeps_a_bounded_number_of_blocks(void **state)
{
    fl_node_cache_drain();
    enum { N = 2000 };
    void **v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++)
        v[i] = fl_node_malloc(56);
    for (int i = 0; i < N; i++)
        fl_node_free(v[i]);
    size_t kept = fl_node_cached();
    assert_true(kept > 0 && kept < N);
    /* as many come back as were kept, each one of those freed */
    void **back = malloc(kept * sizeof *back);
    for (size_t i = 0; i < kept; i++) {
        back[i] = fl_node_malloc(56);
        bool known = false;
        for (int j = 0; j < N && !known; j++)
            known = v[j] == back[i];
        assert_true(known);
    }
    assert_int_equal(fl_node_cached(), 0);
    for (size_t i = 0; i < kept; i++)
        fl_node_free(back[i]);
    fl_node_cache_drain();
    free(back);
    free(v);
}

typedef struct handoff {
    void **blocks;
    int n;
    size_t cached_before_exit;
} handoff;

static void *free_them_and_exit(void *arg)
{
    handoff *h = arg;
    for (int i = 0; i < h->n; i++)
        fl_node_free(h->blocks[i]);
    h->cached_before_exit = fl_node_cached();
    return NULL;
}

/* Made on one thread, freed on another, which keeps them until it exits: then they go
 * back to malloc (under LeakSanitizer, a block kept past its thread is a reported leak). */
static void blocks_move_between_threads_and_leave_with_them(void **state)
{
    fl_node_cache_drain();
    handoff h = {.n = 100};
    h.blocks = malloc((size_t)h.n * sizeof *h.blocks);
    for (int i = 0; i < h.n; i++) /* every cached size: 24, 40, ..., 264 bytes */
        h.blocks[i] = fl_node_malloc((size_t)(16 * (i % 16) + 24));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_them_and_exit, &h), 0);
    pthread_join(t, NULL);
    assert_int_equal(h.cached_before_exit, (size_t)h.n);
    assert_int_equal(fl_node_cached(), 0); /* none came to this thread */
    free(h.blocks);
}

/* jansson on the cache: trees built, copied, encoded and dropped over and over come out
 * the same every time. */
static void json_trees_on_the_cache_stay_intact(void **state)
{
    json_set_alloc_funcs(fl_node_malloc, fl_node_free);
    const char *text = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
                       "\"labels\":{\"app\":\"web\",\"tier\":\"frontend\"}},\"spec\":{\"replicas\":3,"
                       "\"template\":{\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1.27\","
                       "\"ports\":[{\"containerPort\":80}],\"args\":[\"a\",\"bb\",\"ccc\"]}]}}}}";
    for (int round = 0; round < 200; round++) {
        json_t *a = json_loads(text, 0, NULL);
        assert_non_null(a);
        json_t *b = fl_json_deep_copy(a);
        json_object_set_new(json_object_get(b, "metadata"), "round", json_integer(round));
        json_decref(a);
        json_object_del(json_object_get(b, "metadata"), "round");
        char *out = fl_json_dumps(b, NULL);
        assert_string_equal(out, text);
        free(out);
        json_decref(b);
    }
    assert_true(fl_node_cached() > 0);
    fl_node_cache_drain();
    json_set_alloc_funcs(malloc, free);
}

static void cat_joins_up_to_the_null(void **state)
{
    char *s = fl_cat("R|", "default", "/", "web", NULL);
    assert_string_equal(s, "R|default/web");
    free(s);
    s = fl_cat("", NULL);
    assert_string_equal(s, "");
    free(s);
    s = fl_cat("f:", "metadata", "", NULL);
    assert_string_equal(s, "f:metadata");
    free(s);
}

/* Quiet once the mark, having moved enough, stands still long enough; once per spell. */
static void quiet_comes_once_after_the_mark_stops(void **state)
{
    (void)state;
    fl_mem_quiet q = {0};
    assert_false(fl_mem_quiet_due(&q, 7, 1000, 3000, 100)); /* the first sight only notes it */
    assert_false(fl_mem_quiet_due(&q, 7, 9000, 3000, 100)); /* never moved: nothing to give back */
    assert_false(fl_mem_quiet_due(&q, 50, 10000, 3000, 100));
    assert_false(fl_mem_quiet_due(&q, 50, 20000, 3000, 100)); /* moved by 43 only */
    assert_false(fl_mem_quiet_due(&q, 107, 21000, 3000, 100));
    assert_false(fl_mem_quiet_due(&q, 107, 23999, 3000, 100)); /* still for 2,999 ms */
    assert_true(fl_mem_quiet_due(&q, 107, 24000, 3000, 100));
    assert_false(fl_mem_quiet_due(&q, 107, 30000, 3000, 100)); /* once */
    assert_false(fl_mem_quiet_due(&q, 200, 31000, 3000, 100));
    assert_false(fl_mem_quiet_due(&q, 200, 35000, 3000, 100)); /* 93 since the last */
    assert_false(fl_mem_quiet_due(&q, 207, 36000, 3000, 100));
    assert_true(fl_mem_quiet_due(&q, 207, 39500, 3000, 100));
    fl_mem_trim(); /* callable at any time */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_freed_block_serves_the_next_request_of_its_size),
        cmocka_unit_test(a_block_never_serves_a_request_it_is_too_small_for),
        cmocka_unit_test(large_blocks_go_straight_back_to_malloc),
        cmocka_unit_test(a_thread_keeps_a_bounded_number_of_blocks),
        cmocka_unit_test(blocks_move_between_threads_and_leave_with_them),
        cmocka_unit_test(json_trees_on_the_cache_stay_intact),
        cmocka_unit_test(cat_joins_up_to_the_null),
        cmocka_unit_test(quiet_comes_once_after_the_mark_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
