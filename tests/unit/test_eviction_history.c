/* test_eviction_history.c - which eviction tasks still need their failover history entry
 * started (fl_evict_history_unstarted, src/controllers/eviction_app.c): the tasks controller
 * starts them after the evictor's one-commit eviction. Bindings are JSON written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controllers/eviction.h"
#include "controllers/eviction_priv.h"
#include "testutil.h"

/* A binding with these tasks (JSON array text) and history entries (JSON array text). */
static json_t *binding(const char *tasks, const char *history)
{
    json_t *b = test_json("{'spec':{'clusters':[{'name':'m3'}]},'status':{}}");
    json_object_set_new(json_object_get(b, "spec"), "gracefulEvictionTasks", test_json(tasks));
    json_object_set_new(json_object_get(b, "status"), "failoverHistory", test_json(history));
    return b;
}

static const char *from_of(const json_t *tasks, size_t i)
{
    return json_string_value(json_object_get(json_array_get(tasks, i), "fromCluster"));
}

static void test_only_the_evictors_tasks_without_an_entry(void **state)
{
    (void)state;
    fl_eviction_set_history_limit(5);
    json_t *b = binding("[{'fromCluster':'m1','producer':'TaintManager','creationTimestamp':'2026-12-07T03:00:00Z'},"
                        " {'fromCluster':'m2','producer':'ApplicationFailover','creationTimestamp':'2026-12-07T03:00:01Z'},"
                        " {'fromCluster':'m4','producer':'someone','creationTimestamp':'2026-12-07T03:00:02Z'},"
                        " {'fromCluster':'m5','producer':'TaintManager'}]",
                        "[{'fromCluster':'m1','startTime':'2026-12-07T03:00:00Z'}]");
    json_t *u = fl_evict_history_unstarted(b);
    /* m1 has its entry, m4's task is a person's, m5's has no creationTimestamp yet */
    assert_non_null(u);
    assert_int_equal(json_array_size(u), 1);
    assert_string_equal(from_of(u, 0), "m2");
    json_decref(u);
    json_decref(b);
}

static void test_an_entry_for_an_earlier_failover_from_the_same_cluster_does_not_count(void **state)
{
    (void)state;
    fl_eviction_set_history_limit(5);
    json_t *b = binding("[{'fromCluster':'m1','producer':'TaintManager','creationTimestamp':'2026-12-07T04:00:00Z'}]",
                        "[{'fromCluster':'m1','startTime':'2026-12-07T03:00:00Z','completionTime':'2026-12-07T03:01:00Z'}]");
    json_t *u = fl_evict_history_unstarted(b);
    assert_non_null(u);
    assert_string_equal(from_of(u, 0), "m1");
    json_decref(u);
    json_decref(b);
}

static void test_nothing_when_all_started_or_history_is_off_or_full_of_open_entries(void **state)
{
    (void)state;
    fl_eviction_set_history_limit(5);
    json_t *done = binding("[{'fromCluster':'m1','producer':'TaintManager','creationTimestamp':'2026-12-07T03:00:00Z'}]",
                           "[{'fromCluster':'m1','startTime':'2026-12-07T03:00:00Z'}]");
    assert_null(fl_evict_history_unstarted(done));
    json_decref(done);

    json_t *b = binding("[{'fromCluster':'m2','producer':'TaintManager','creationTimestamp':'2026-12-07T03:00:01Z'}]",
                        "[{'fromCluster':'m1','startTime':'2026-12-07T03:00:00Z'}]");
    fl_eviction_set_history_limit(0); /* history off */
    assert_null(fl_evict_history_unstarted(b));
    /* one kept and it is open: a new entry would push it out, and its task would start it
     * again, the two taking turns for ever */
    fl_eviction_set_history_limit(1);
    assert_null(fl_evict_history_unstarted(b));
    /* the open one completed: room, as trimming drops completed entries first */
    json_object_set_new(json_array_get(json_object_get(json_object_get(b, "status"), "failoverHistory"), 0),
                        "completionTime", json_string("2026-12-07T03:02:00Z"));
    json_t *u = fl_evict_history_unstarted(b);
    assert_non_null(u);
    assert_string_equal(from_of(u, 0), "m2");
    json_decref(u);
    json_decref(b);
    fl_eviction_set_history_limit(-1); /* the default again */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_the_evictors_tasks_without_an_entry),
        cmocka_unit_test(test_an_entry_for_an_earlier_failover_from_the_same_cluster_does_not_count),
        cmocka_unit_test(test_nothing_when_all_started_or_history_is_off_or_full_of_open_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
