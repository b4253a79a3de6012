/* test_events.c - the event recorder (src/controllers/events.c) against an in-process API
 * server (a memory store, the controllers' in-process client):
 * a repeat becomes a count on the Event already written, and the memory of recent events
 * forgets its oldest entries first, so a repeat of a forgotten event writes a new Event
 * while a repeat of a remembered one still counts; a burst adds up exactly; repeats coming
 * fast are written together; Events wait while the machine is busy, at most a bound. Every
 * wait is bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "client/client.h"
#include "controllers/events.h"
#include "core/mem.h"

#include "testapi.h"
#include "testutil.h"

static const fl_gvr EVENTS = {"v1", "events"};

typedef struct fixture {
    fl_store *store;
    fl_api api;
    fl_client *c;
} fixture;

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof *f);
    f->store = test_api_open_memory(&f->api, "default");
    f->c = fl_api_local_client(&f->api, "events-test/1.0");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_client_free(f->c);
    fl_store_free(f->store);
    free(f);
    return 0;
}

static json_t *object(const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                     name, "namespace", "default", "uid", name);
}

/* The counts of the Events about object name, in the order listed; returns how many. */
static int counts_of(fixture *f, const char *name, int *counts, int max)
{
    char sel[128];
    snprintf(sel, sizeof sel, "involvedObject.name=%s", name);
    fl_list_opts lo = {.field_selector = sel};
    fl_list_result list;
    fl_client_error ce;
    if (fl_client_list(f->c, &EVENTS, "default", &lo, &list, &ce) != 0)
        return -1;
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(list.items, i, e) if (n < max) counts[n++] = (int)json_integer_value(json_object_get(e, "count"));
    fl_list_result_close(&list);
    return n;
}

/* Whether object name has exactly the Events with counts want[0..n). */
static bool has_counts(fixture *f, const char *name, const int *want, int n)
{
    int got[8];
    if (counts_of(f, name, got, 8) != n)
        return false;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            return false;
    return true;
}

static void test_repeats_count_until_forgotten(void **state)
{
    fixture *f = *state;
    fl_recorder *r = fl_recorder_new(f->c, "events-test");
    json_t *a = object("a");
    fl_event(r, a, "Normal", "Tested", "the same %s", "message");
    fl_event(r, a, "Normal", "Tested", "the same %s", "message");
    WAIT_UNTIL(has_counts(f, "a", (int[]){2}, 1), 30000);
    /* another message is another Event */
    fl_event(r, a, "Normal", "Tested", "another message");
    WAIT_UNTIL(has_counts(f, "a", (int[]){2, 1}, 2), 30000);

    /* as many other events as the memory holds: "a"'s are the oldest, and forgotten */
    char name[32];
    for (int i = 0; i < FL_EVENTS_RECENT_MAX; i++) {
        snprintf(name, sizeof name, "o%d", i);
        json_t *o = object(name);
        fl_event(r, o, "Normal", "Tested", "event %d", i);
        json_decref(o);
    }
    snprintf(name, sizeof name, "o%d", FL_EVENTS_RECENT_MAX - 1);
    WAIT_UNTIL(has_counts(f, name, (int[]){1}, 1), 120000);
    /* the newest is remembered: its repeat counts */
    json_t *last = object(name);
    fl_event(r, last, "Normal", "Tested", "event %d", FL_EVENTS_RECENT_MAX - 1);
    WAIT_UNTIL(has_counts(f, name, (int[]){2}, 1), 30000);
    /* the oldest is not: its repeat is a new Event */
    fl_event(r, a, "Normal", "Tested", "the same message");
    WAIT_UNTIL(counts_of(f, "a", (int[8]){0}, 8) == 3, 30000);
    json_decref(last);
    json_decref(a);
    fl_recorder_free(r);
}

/* Events come faster than they are written: whatever the recorder does with the backlog,
 * one Event per distinct event, with a count of every time it was recorded. */
static void test_a_burst_loses_and_duplicates_nothing(void **state)
{
    fixture *f = *state;
    fl_recorder *r = fl_recorder_new(f->c, "events-test");
    json_t *hot = object("hot");
    char name[32];
    for (int i = 0; i < 300; i++) {
        fl_event(r, hot, "Normal", "Tested", "again");
        snprintf(name, sizeof name, "cold%d", i % 100);
        json_t *o = object(name);
        fl_event(r, o, "Normal", "Tested", "once per round %d", i / 100);
        json_decref(o);
    }
    WAIT_UNTIL(has_counts(f, "hot", (int[]){300}, 1), 60000);
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "cold%d", i);
        WAIT_UNTIL(has_counts(f, name, (int[]){1, 1, 1}, 3), 30000);
    }
    json_decref(hot);
    fl_recorder_free(r);
}

/* Repeats coming fast are counted, not written one by one: a repeat goes to the store at
 * most every two seconds, with the count of all of them, and what is still counted when
 * the recorder stops is written then. */
static void test_fast_repeats_are_written_together(void **state)
{
    fixture *f = *state;
    fl_recorder *r = fl_recorder_new(f->c, "events-test");
    json_t *o = object("fast");
    fl_event(r, o, "Normal", "Tested", "flapping");
    WAIT_UNTIL(has_counts(f, "fast", (int[]){1}, 1), 30000);
    int64_t rev0 = fl_store_rev(f->store), t0 = now_ms();
    for (int i = 0; i < 200; i++)
        fl_event(r, o, "Normal", "Tested", "flapping");
    WAIT_UNTIL(has_counts(f, "fast", (int[]){201}, 1), 30000);
    int64_t writes = fl_store_rev(f->store) - rev0, secs = (now_ms() - t0) / 1000;
    /* one write per two seconds it took, give or take one: not 200 */
    assert_true(writes >= 1 && writes <= secs / 2 + 2);
    /* quiet for longer than that: the next repeat is one write */
    usleep(2100 * 1000);
    rev0 = fl_store_rev(f->store);
    fl_event(r, o, "Normal", "Tested", "flapping");
    WAIT_UNTIL(has_counts(f, "fast", (int[]){202}, 1), 30000);
    assert_int_equal(fl_store_rev(f->store) - rev0, 1);
    /* repeats still counted in memory are written when the recorder stops */
    for (int i = 0; i < 5; i++)
        fl_event(r, o, "Normal", "Tested", "flapping");
    fl_recorder_free(r);
    assert_true(has_counts(f, "fast", (int[]){207}, 1));
    json_decref(o);
}

static bool busy_flag(void *ctx)
{
    return __atomic_load_n((bool *)ctx, __ATOMIC_SEQ_CST);
}

/* While the machine is busy with something more urgent, Events wait: until it is not, or
 * until they have waited the most they may. */
static void test_events_wait_while_busy(void **state)
{
    fixture *f = *state;
    fl_recorder *r = fl_recorder_new(f->c, "events-test");
    bool busy = true;
    fl_recorder_hold_while(r, busy_flag, &busy, 60000);
    json_t *o = object("held");
    fl_event(r, o, "Normal", "Tested", "held back");
    usleep(500 * 1000);
    assert_int_equal(counts_of(f, "held", (int[8]){0}, 8), 0);
    __atomic_store_n(&busy, false, __ATOMIC_SEQ_CST);
    WAIT_UNTIL(has_counts(f, "held", (int[]){1}, 1), 30000);

    /* busy for good: each Event waits the most it may, then is written */
    __atomic_store_n(&busy, true, __ATOMIC_SEQ_CST);
    fl_recorder_hold_while(r, busy_flag, &busy, 300);
    int64_t t0 = now_ms();
    json_t *o2 = object("capped");
    fl_event(r, o2, "Normal", "Tested", "held at most 300 ms");
    WAIT_UNTIL(has_counts(f, "capped", (int[]){1}, 1), 30000);
    assert_true(now_ms() - t0 >= 300);
    /* no more holding: written at once, however busy */
    fl_recorder_hold_while(r, NULL, NULL, 0);
    json_t *o3 = object("free");
    fl_event(r, o3, "Normal", "Tested", "not held");
    WAIT_UNTIL(has_counts(f, "free", (int[]){1}, 1), 30000);
    json_decref(o);
    json_decref(o2);
    json_decref(o3);
    fl_recorder_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_repeats_count_until_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_burst_loses_and_duplicates_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fast_repeats_are_written_together, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_wait_while_busy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
