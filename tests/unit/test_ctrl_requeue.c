/* test_ctrl_requeue.c - how a controller's key goes back to its queue after a reconcile
 * (fl_ctrl_requeue, controllers/controller.h): a conflict comes back soon, however often. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client/workqueue.h"
#include "controllers/controller.h"
#include "core/err.h"
#include "testutil.h"

/* Take key off q (waiting at most timeout_ms), mark it done; how long it took, or -1. */
static int64_t take(fl_workqueue *q, int timeout_ms)
{
    int64_t t0 = now_ms();
    char *key = NULL;
    if (fl_workqueue_get(q, timeout_ms, &key) != 0)
        return -1;
    fl_workqueue_done(q, key);
    free(key);
    return now_ms() - t0;
}

static void test_a_conflict_comes_back_soon_however_often_it_happens(void **state)
{
    (void)state;
    fl_workqueue *q = fl_workqueue_new(NULL);
    /* twenty failures in a row would back off 5 ms * 2^20: hours */
    for (int i = 0; i < 20; i++) {
        fl_ctrl_requeue(q, "k", FL_ECONFLICT);
        int64_t waited = take(q, 5000);
        assert_true(waited >= 0);
        assert_true(waited < 5 * FL_CTRL_CONFLICT_RETRY_MS);
    }
    assert_int_equal(fl_workqueue_requeues(q, "k"), 0);
    fl_workqueue_free(q);
}

static void test_other_failures_back_off_and_success_forgets_them(void **state)
{
    (void)state;
    fl_workqueue *q = fl_workqueue_new(NULL);
    for (int i = 0; i < 3; i++) {
        fl_ctrl_requeue(q, "k", FL_EIO);
        assert_true(take(q, 5000) >= 0);
    }
    assert_int_equal(fl_workqueue_requeues(q, "k"), 3);
    fl_ctrl_requeue(q, "k", 0);
    assert_int_equal(fl_workqueue_requeues(q, "k"), 0);
    assert_int_equal(take(q, 100), -1); /* done: not queued again */
    fl_workqueue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_conflict_comes_back_soon_however_often_it_happens),
        cmocka_unit_test(test_other_failures_back_off_and_success_forgets_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
