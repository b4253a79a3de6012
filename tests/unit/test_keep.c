/* test_keep.c - the slabs for long-lived records (core/keep.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "core/keep.h"

/* Turned off (FLOTILLA_KEEP_MIB=0), every block comes from malloc and still frees. Runs
 * first, in a child, before this process has set its slabs up. */
static void turned_off_every_block_comes_from_malloc(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("FLOTILLA_KEEP_MIB", "0", 1);
        char *s = fl_keep_strdup("ns/name");
        int bad = fl_keep_owns(s) || strcmp(s, "ns/name") != 0;
        fl_keep_free(s);
        fl_keep_stats st;
        fl_keep_stats_get(&st);
        _exit(bad || st.slabs != 0 ? 1 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void small_blocks_come_from_the_slabs_aligned_and_apart(void **state)
{
    (void)state;
    enum { N = 200 };
    char *p[N];
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)(i % FL_KEEP_MAX) + 1;
        p[i] = fl_keep_malloc(n);
        assert_true(fl_keep_owns(p[i]));
        assert_int_equal((uintptr_t)p[i] % 16, 0);
        memset(p[i], i & 0xff, n);
    }
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)(i % FL_KEEP_MAX) + 1;
        for (size_t j = 0; j < n; j++)
            assert_int_equal((unsigned char)p[i][j], i & 0xff); /* no block overlaps another */
    }
    for (int i = 0; i < N; i++)
        fl_keep_free(p[i]);
    char *z = fl_keep_calloc(40);
    for (int i = 0; i < 40; i++)
        assert_int_equal(z[i], 0);
    fl_keep_free(z);
}

static void large_blocks_and_blocks_from_malloc_are_malloc_s(void **state)
{
    (void)state;
    char *big = fl_keep_malloc(FL_KEEP_MAX + 1);
    assert_false(fl_keep_owns(big));
    memset(big, 1, FL_KEEP_MAX + 1);
    fl_keep_free(big);
    fl_keep_free(malloc(24)); /* a field may hold either */
    fl_keep_free(NULL);
    char *edge = fl_keep_malloc(FL_KEEP_MAX);
    assert_true(fl_keep_owns(edge));
    fl_keep_free(edge);
}

static void a_freed_block_serves_the_next_request_of_its_class(void **state)
{
    (void)state;
    char *a = fl_keep_malloc(100), *b = fl_keep_malloc(100);
    fl_keep_free(a);
    char *c = fl_keep_malloc(112); /* the same class: 97 to 112 bytes */
    assert_ptr_equal(c, a);
    char *d = fl_keep_malloc(113);
    assert_ptr_not_equal(d, a);
    fl_keep_free(b);
    fl_keep_free(c);
    fl_keep_free(d);
}

static size_t resident_pages(const void *p, size_t len)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = (len + pg - 1) / pg, r = 0;
    unsigned char *v = malloc(n);
    assert_int_equal(mincore((void *)((uintptr_t)p & ~(pg - 1)), len, v), 0);
    for (size_t i = 0; i < n; i++)
        r += v[i] & 1;
    free(v);
    return r;
}

/* A slab whose every block is freed gives its pages back, unless it is its class's last
 * slab with room; a later request takes a slab again. */
static void an_emptied_slab_gives_its_pages_back(void **state)
{
    (void)state;
    enum { SIZE = 496, PER = (int)(FL_KEEP_SLAB / SIZE), N = PER * 3 + 1 }; /* a fourth slab has room */
    fl_keep_stats before, full, after;
    fl_keep_stats_get(&before);
    char **p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++) {
        p[i] = fl_keep_malloc(SIZE);
        memset(p[i], 7, SIZE);
    }
    fl_keep_stats_get(&full);
    assert_true(full.slabs >= before.slabs + 4);
    assert_int_equal(full.blocks, before.blocks + N);
    /* the first slab's blocks: all carved from one slab, in order */
    char *first = p[0];
    assert_ptr_equal(p[PER - 1], first + (size_t)(PER - 1) * SIZE);
    assert_true(resident_pages(first, FL_KEEP_SLAB) > 0);
    for (int i = 0; i < PER; i++)
        fl_keep_free(p[i]);
    fl_keep_stats_get(&after);
    assert_int_equal(after.slabs, full.slabs - 1);
    assert_int_equal(resident_pages(first, FL_KEEP_SLAB), 0);
    for (int i = PER; i < N; i++)
        fl_keep_free(p[i]);
    fl_keep_stats_get(&after);
    assert_int_equal(after.blocks, before.blocks);
    assert_true(after.slabs <= before.slabs + 1); /* the class keeps one slab with room */
    free(p);
}

typedef struct churn {
    int id;
    int bad;
} churn;

static void *churn_main(void *arg)
{
    churn *c = arg;
    enum { LIVE = 2000, ROUNDS = 20000 };
    char **live = calloc(LIVE, sizeof *live);
    size_t *len = calloc(LIVE, sizeof *len);
    unsigned x = (unsigned)c->id * 2654435761u + 1;
    for (int r = 0; r < ROUNDS; r++) {
        x = x * 1103515245u + 12345u;
        int i = (int)((x >> 8) % LIVE);
        if (live[i]) {
            for (size_t j = 0; j < len[i]; j++)
                if ((unsigned char)live[i][j] != (unsigned char)(c->id + i))
                    c->bad++;
            fl_keep_free(live[i]);
        }
        len[i] = (x >> 20) % 300 + 1;
        live[i] = fl_keep_malloc(len[i]);
        memset(live[i], c->id + i, len[i]);
    }
    for (int i = 0; i < LIVE; i++)
        fl_keep_free(live[i]);
    free(live);
    free(len);
    return NULL;
}

/* Threads allocating and freeing at once never share a block. */
static void threads_never_share_a_block(void **state)
{
    (void)state;
    fl_keep_stats before, after;
    fl_keep_stats_get(&before);
    pthread_t t[4];
    churn c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (churn){i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, churn_main, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].bad, 0);
    }
    fl_keep_stats_get(&after);
    assert_int_equal(after.blocks, before.blocks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(turned_off_every_block_comes_from_malloc),
        cmocka_unit_test(small_blocks_come_from_the_slabs_aligned_and_apart),
        cmocka_unit_test(large_blocks_and_blocks_from_malloc_are_malloc_s),
        cmocka_unit_test(a_freed_block_serves_the_next_request_of_its_class),
        cmocka_unit_test(an_emptied_slab_gives_its_pages_back),
        cmocka_unit_test(threads_never_share_a_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
