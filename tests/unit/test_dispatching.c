/* test_dispatching.c - unit tests for conditions (src/core/condition.c) and for the rules of
 * suspension and its acknowledgement (src/controllers/dispatching.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "controllers/dispatching.h"
#include "core/condition.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s", e.position, e.text);
    return v;
}

static const char *cstr(const json_t *c, const char *k)
{
    return json_string_value(json_object_get(c, k));
}

static void test_condition_set_adds_then_changes_only_on_difference(void **state)
{
    (void)state;
    json_t *st = json_object();
    assert_true(fl_condition_set(st, "Applied", "True", "Ok", "fine", 3, 1000));
    json_t *c = fl_condition_find(json_object_get(st, "conditions"), "Applied");
    assert_non_null(c);
    assert_string_equal(cstr(c, "lastTransitionTime"), "1970-01-01T00:00:01Z");
    assert_int_equal(json_integer_value(json_object_get(c, "observedGeneration")), 3);
    /* the same again: nothing changes, not even the time */
    assert_false(fl_condition_set(st, "Applied", "True", "Ok", "fine", 3, 999000));
    assert_string_equal(cstr(c, "lastTransitionTime"), "1970-01-01T00:00:01Z");
    /* a new generation or message changes it, but the transition time stays */
    assert_true(fl_condition_set(st, "Applied", "True", "Ok", "still fine", 4, 5000));
    assert_string_equal(cstr(c, "lastTransitionTime"), "1970-01-01T00:00:01Z");
    assert_int_equal(json_integer_value(json_object_get(c, "observedGeneration")), 4);
    /* a flip moves it */
    assert_true(fl_condition_set(st, "Applied", "False", "Bad", "broken", 4, 7000));
    assert_string_equal(cstr(c, "lastTransitionTime"), "1970-01-01T00:00:07Z");
    /* generation < 0 removes observedGeneration; a second type is a second entry */
    assert_true(fl_condition_set(st, "Applied", "False", "Bad", "broken", -1, 8000));
    assert_null(json_object_get(c, "observedGeneration"));
    assert_true(fl_condition_set(st, "Dispatching", "True", "Dispatching", "m", 1, 8000));
    assert_int_equal(json_array_size(json_object_get(st, "conditions")), 2);
    assert_null(fl_condition_find(json_object_get(st, "conditions"), "Nope"));
    assert_null(fl_condition_find(NULL, "Applied"));
    json_decref(st);
}

static void test_condition_set_replaces_a_non_array(void **state)
{
    (void)state;
    json_t *st = js("{\"conditions\":\"junk\"}");
    assert_true(fl_condition_set(st, "Ready", "True", "R", "m", 1, 0));
    assert_true(json_is_array(json_object_get(st, "conditions")));
    json_decref(st);
}

static void test_suspended_for_whole_or_listed_clusters(void **state)
{
    (void)state;
    json_t *all = js("{\"dispatching\":true}");
    json_t *some = js("{\"dispatchingOnClusters\":{\"clusterNames\":[\"a\",\"b\"]}}");
    json_t *none = js("{\"scheduling\":true}");
    json_t *junk = js("{\"dispatchingOnClusters\":{\"clusterNames\":[1,null]}}");
    assert_true(fl_dispatch_suspended(all, "x"));
    assert_true(fl_dispatch_suspended(some, "b"));
    assert_false(fl_dispatch_suspended(some, "c"));
    assert_false(fl_dispatch_suspended(none, "a"));
    assert_false(fl_dispatch_suspended(NULL, "a"));
    assert_false(fl_dispatch_suspended(junk, "a"));
    assert_true(fl_dispatch_any(all));
    assert_true(fl_dispatch_any(some));
    assert_false(fl_dispatch_any(none));
    assert_false(fl_dispatch_any(NULL));
    json_decref(all);
    json_decref(some);
    json_decref(none);
    json_decref(junk);
}

/* A Work with spec.suspendDispatching = susp, generation gen, and a Dispatching condition
 * (status, observedGeneration og; status NULL: none). */
static json_t *work(bool susp, int gen, const char *status, int og)
{
    json_t *w = json_pack("{s:{s:i}, s:{}}", "metadata", "generation", gen, "spec");
    if (susp)
        json_object_set_new(json_object_get(w, "spec"), "suspendDispatching", json_true());
    if (status)
        json_object_set_new(w, "status", json_pack("{s:[{s:s, s:s, s:i}]}", "conditions", "type", "Dispatching",
                                                   "status", status, "observedGeneration", og));
    return w;
}

static void test_work_ack_needs_the_current_generation(void **state)
{
    (void)state;
    json_t *w = work(true, 2, "False", 2);
    assert_int_equal(fl_dispatch_work_ack(w), FL_DISPATCH_STOPPED);
    assert_true(fl_dispatch_work_acked(w, true));
    assert_false(fl_dispatch_work_acked(w, false));
    json_decref(w);

    w = work(true, 3, "False", 2); /* the executor has not seen generation 3 */
    assert_int_equal(fl_dispatch_work_ack(w), FL_DISPATCH_PENDING);
    assert_false(fl_dispatch_work_acked(w, true));
    json_decref(w);

    w = work(false, 4, "True", 4);
    assert_int_equal(fl_dispatch_work_ack(w), FL_DISPATCH_RUNNING);
    assert_true(fl_dispatch_work_acked(w, false));
    assert_false(fl_dispatch_work_acked(w, true)); /* its spec does not ask for suspension */
    json_decref(w);

    w = work(false, 1, NULL, 0);
    assert_int_equal(fl_dispatch_work_ack(w), FL_DISPATCH_PENDING);
    json_decref(w);
    assert_false(fl_dispatch_work_acked(NULL, false));
}

static void test_rollup_counts_and_names_the_pending_clusters(void **state)
{
    (void)state;
    json_t *b = js("{\"metadata\":{\"generation\":5},\"spec\":{\"clusters\":[{\"name\":\"a\"},{\"name\":\"b\"},"
                   "{\"name\":\"c\"}],\"suspension\":{\"dispatchingOnClusters\":{\"clusterNames\":[\"a\",\"b\"]}}}}");
    json_t *works = json_object();
    json_object_set_new(works, "a", work(true, 2, "False", 2));
    json_object_set_new(works, "b", work(true, 2, "True", 1)); /* not yet */
    json_object_set_new(works, "c", work(false, 1, "True", 1));
    fl_dispatch_rollup r;
    fl_dispatch_rollup_of(b, works, &r);
    assert_int_equal(r.targets, 3);
    assert_int_equal(r.acked, 2);
    assert_int_equal(r.suspended, 2);
    assert_int_equal(json_array_size(r.pending), 1);
    assert_string_equal(json_string_value(json_array_get(r.pending, 0)), "b");
    const char *st, *reason;
    char *msg;
    fl_dispatch_rollup_condition(&r, &st, &reason, &msg);
    assert_string_equal(st, "Unknown");
    assert_string_equal(reason, FL_DISPATCHING_REASON_PENDING);
    assert_string_equal(msg, "2/3 target clusters acknowledged; waiting for b");
    free(msg);
    fl_dispatch_rollup_close(&r);

    json_object_set_new(works, "b", work(true, 2, "False", 2));
    fl_dispatch_rollup_of(b, works, &r);
    fl_dispatch_rollup_condition(&r, &st, &reason, &msg);
    assert_string_equal(st, "False");
    assert_string_equal(reason, FL_DISPATCHING_REASON_SUSPENDED);
    assert_string_equal(msg, "dispatching suspended on 2/3 target clusters; all 3 acknowledged");
    free(msg);
    fl_dispatch_rollup_close(&r);

    /* a missing Work is pending; no suspension and all running is True */
    json_object_del(json_object_get(b, "spec"), "suspension");
    json_object_set_new(works, "a", work(false, 3, "True", 3));
    json_object_set_new(works, "b", work(false, 3, "True", 3));
    fl_dispatch_rollup_of(b, works, &r);
    fl_dispatch_rollup_condition(&r, &st, &reason, &msg);
    assert_string_equal(st, "True");
    assert_string_equal(msg, "dispatching to all 3 target clusters; all acknowledged");
    free(msg);
    fl_dispatch_rollup_close(&r);
    json_object_del(works, "c");
    fl_dispatch_rollup_of(b, works, &r);
    assert_int_equal(r.acked, 2);
    assert_string_equal(json_string_value(json_array_get(r.pending, 0)), "c");
    fl_dispatch_rollup_close(&r);
    json_decref(works);
    json_decref(b);
}

static void test_rollup_message_lists_at_most_five_names(void **state)
{
    (void)state;
    json_t *b = js("{\"spec\":{\"clusters\":[{\"name\":\"c1\"},{\"name\":\"c2\"},{\"name\":\"c3\"},{\"name\":\"c4\"},"
                   "{\"name\":\"c5\"},{\"name\":\"c6\"},{\"name\":\"c7\"}],\"suspension\":{\"dispatching\":true}}}");
    json_t *works = json_object();
    fl_dispatch_rollup r;
    fl_dispatch_rollup_of(b, works, &r);
    const char *st, *reason;
    char *msg;
    fl_dispatch_rollup_condition(&r, &st, &reason, &msg);
    assert_string_equal(msg, "0/7 target clusters acknowledged; waiting for c1, c2, c3, c4, c5 and 2 more");
    free(msg);
    fl_dispatch_rollup_close(&r);
    json_decref(works);
    json_decref(b);
}

static json_t *work_with(const char *reason)
{
    json_t *w = js("{\"metadata\":{\"generation\":2},\"status\":{\"conditions\":[]}}");
    if (reason)
        fl_condition_set(json_object_get(w, "status"), "Dispatching", strcmp(reason, "Dispatching") ? "False" : "True",
                         reason, "m", 2, 0);
    return w;
}

/* The WorkDispatching event: on each change of the acknowledged state, not on repeats,
 * and not for the first acknowledgement of a Work that simply runs. */
static void test_event_on_each_change_of_the_acknowledgement(void **state)
{
    (void)state;
    json_t *none = work_with(NULL), *run = work_with("Dispatching"), *sus = work_with("SuspendDispatching"),
           *paused = work_with("ClusterPaused"), *odd = work_with("Something");
    assert_null(fl_dispatch_event_message(none, none));
    assert_null(fl_dispatch_event_message(none, run));
    assert_null(fl_dispatch_event_message(run, run));
    assert_null(fl_dispatch_event_message(sus, sus));
    assert_null(fl_dispatch_event_message(run, odd));
    assert_string_equal(fl_dispatch_event_message(none, sus),
                        "Work dispatching is suspended: nothing is being applied to the cluster.");
    assert_string_equal(fl_dispatch_event_message(run, sus),
                        "Work dispatching is suspended: nothing is being applied to the cluster.");
    assert_string_equal(fl_dispatch_event_message(sus, run), "Work is being dispatched to the member cluster.");
    assert_string_equal(fl_dispatch_event_message(run, paused),
                        "The Work's cluster is paused: nothing is being applied to it.");
    assert_string_equal(fl_dispatch_event_message(paused, sus),
                        "Work dispatching is suspended: nothing is being applied to the cluster.");
    /* a condition that went away says nothing */
    assert_null(fl_dispatch_event_message(sus, none));
    json_decref(none);
    json_decref(run);
    json_decref(sus);
    json_decref(paused);
    json_decref(odd);
}

/* A binding's own roll-up: there when it is or was suspended; an answer only at its current
 * generation, and only once no cluster is pending. */
static void test_binding_rollup_read_at_its_generation(void **state)
{
    (void)state;
    json_t *never = js("{\"metadata\":{\"generation\":2},\"spec\":{}}");
    assert_false(fl_dispatch_has_rollup(never));
    assert_false(fl_dispatch_rollup_acked(never));
    json_t *b = js("{\"metadata\":{\"generation\":3},\"spec\":{\"suspension\":{\"dispatching\":true}},"
                   "\"status\":{\"conditions\":[{\"type\":\"Dispatching\",\"status\":\"False\","
                   "\"reason\":\"SuspendDispatching\",\"observedGeneration\":2}]}}");
    assert_true(fl_dispatch_has_rollup(b));
    assert_false(fl_dispatch_rollup_acked(b)); /* written for generation 2 */
    json_t *c = fl_condition_of(b, "Dispatching");
    json_object_set_new(c, "observedGeneration", json_integer(3));
    assert_true(fl_dispatch_rollup_acked(b));
    json_object_set_new(c, "reason", json_string("Acknowledging"));
    assert_false(fl_dispatch_rollup_acked(b));
    /* resumed: no suspension left, but the condition says it was suspended */
    json_object_del(json_object_get(b, "spec"), "suspension");
    assert_true(fl_dispatch_has_rollup(b));
    json_decref(never);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_condition_set_adds_then_changes_only_on_difference),
        cmocka_unit_test(test_condition_set_replaces_a_non_array),
        cmocka_unit_test(test_suspended_for_whole_or_listed_clusters),
        cmocka_unit_test(test_work_ack_needs_the_current_generation),
        cmocka_unit_test(test_rollup_counts_and_names_the_pending_clusters),
        cmocka_unit_test(test_rollup_message_lists_at_most_five_names),
        cmocka_unit_test(test_event_on_each_change_of_the_acknowledgement),
        cmocka_unit_test(test_binding_rollup_read_at_its_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
