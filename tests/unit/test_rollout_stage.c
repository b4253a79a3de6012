/* test_rollout_stage.c - the stage logic of staged rollouts (fl_rollout_advance,
 * src/controllers/rollout_stage.c) and the hold rule the binding controller reads
 * (fl_rollout_gate_holds, rollout_gate.h). Pure functions over JSON written here: a strategy,
 * a template, its target clusters, their Works as the executors report them, and time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controllers/rollout_gate.h"
#include "controllers/rollout_priv.h"
#include "core/json_get.h"
#include "testutil.h"

#define T0 1800000000000LL /* ms since the epoch: any fixed time */

/* A fleet of n targets m1..mn; m1 ring=canary, m2 and m3 ring=wave. */
typedef struct fleet {
    json_t *strategy, *tmpl, *targets, *works, *clusters;
} fleet;

static void fleet_init(fleet *f, int n, const char *spec)
{
    f->strategy = test_json(spec);
    f->tmpl = test_json("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','namespace':'default',"
                        "'uid':'u-1','generation':2}}");
    f->targets = json_array();
    f->works = json_object();
    f->clusters = json_object();
    for (int i = 1; i <= n; i++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", i);
        json_array_append_new(f->targets, json_string(name));
        const char *ring = i == 1 ? "canary" : i <= 3 ? "wave" : "rest";
        json_object_set_new(f->clusters, name, json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", name, "labels",
                                                         "ring", ring));
    }
}

static void fleet_close(fleet *f)
{
    json_decref(f->strategy);
    json_decref(f->tmpl);
    json_decref(f->targets);
    json_decref(f->works);
    json_decref(f->clusters);
}

/* cluster's Work: carrying generation gen, suspended or not, its object in live state. */
static void set_work(fleet *f, const char *cluster, int gen, bool suspended, const char *live)
{
    char g[16];
    snprintf(g, sizeof g, "%d", gen);
    json_t *w = json_pack("{s:{s:i}, s:{s:b, s:{s:[{s:{s:{s:s}}}]}}, s:{s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}], "
                          "s:[{s:{s:s}}]}}",
                          "metadata", "generation", 7, "spec", "suspendDispatching", suspended, "workload",
                          "manifests", "metadata", "annotations", "resourcetemplate.karmada.io/generation", g,
                          "status", "conditions", "type", "Applied", "status", "True", "observedGeneration", 7,
                          "type", "Dispatching", "status", suspended ? "False" : "True", "observedGeneration", 7,
                          "manifestStatuses", "liveStatus", "state", live);
    json_object_set_new(f->works, cluster, w);
}

/* One step at time now from old (borrowed; NULL for none): the new entry, events appended. */
static json_t *step(fleet *f, const json_t *old, int64_t now, json_t *events, int64_t *due)
{
    fl_rollout_in in = {.strategy = f->strategy, .tmpl = f->tmpl, .targets = f->targets, .works = f->works,
                        .clusters = f->clusters, .now_ms = now};
    int64_t d = 0;
    json_t *e = fl_rollout_advance(&in, old, events, due ? due : &d);
    assert_non_null(e);
    return e;
}

static const char *state_of(const json_t *e, const char *cluster)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) if (!strcmp(fl_json_str(c, "name"), cluster)) return
        fl_json_str(c, "state");
    return NULL;
}

static const char *stage_of(const json_t *e, const char *cluster)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) if (!strcmp(fl_json_str(c, "name"), cluster)) return
        fl_json_str(c, "stage");
    return NULL;
}

static bool has_event(const json_t *events, const char *reason)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) if (!strcmp(fl_json_str(e, "reason"), reason)) return true;
    return false;
}

/* The strategy with entry e in its status (e borrowed), for the gate. */
static void record(fleet *f, json_t *e)
{
    json_object_set_new(f->strategy, "status", json_pack("{s:[O]}", "rollouts", e));
}

#define STAGES_127                                                                                                     \
    "'stages':[{'name':'canary','clusterSelector':{'matchLabels':{'ring':'canary'}}},"                                 \
    "{'name':'wave','clusterSelector':{'matchLabels':{'ring':'wave'}},'approval':true},"                              \
    "{'name':'rest','percent':100,'maxConcurrency':3}]"

static void test_a_new_generation_places_the_targets_in_stages_all_held(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 10, "{'metadata':{'namespace':'default','name':'s'},'spec':{" STAGES_127 "}}");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    assert_string_equal(stage_of(e, "m1"), "canary");
    assert_string_equal(stage_of(e, "m2"), "wave");
    assert_string_equal(stage_of(e, "m3"), "wave");
    assert_string_equal(stage_of(e, "m10"), "rest");
    /* the canary is released at once; the rest wait */
    assert_string_equal(state_of(e, "m1"), FL_ROLLOUT_RELEASED);
    assert_string_equal(state_of(e, "m2"), FL_ROLLOUT_HELD);
    assert_string_equal(state_of(e, "m9"), FL_ROLLOUT_HELD);
    assert_true(has_event(ev, "RolloutStarted"));
    assert_true(has_event(ev, "ClustersReleased"));
    json_decref(e);
    json_decref(ev);
    fleet_close(&f);
}

static void test_percent_stages_take_their_share_of_all_targets_by_name(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 10, "{'metadata':{'namespace':'default','name':'s'},'spec':{'stages':[{'name':'a','percent':10},"
                       "{'name':'b','percent':20},{'name':'c','percent':70}]}}");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    int n[3] = {0};
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(e, "clusters"), i, c) n[fl_json_str(c, "stage")[0] - 'a']++;
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 2);
    assert_int_equal(n[2], 7);
    json_decref(e);
    json_decref(ev);
    fleet_close(&f);
}

static void test_the_gate_holds_a_generation_until_its_cluster_is_released(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 4, "{'metadata':{'namespace':'default','name':'s'},'spec':{" STAGES_127 "}}");
    /* delivered at generation 1 before: a change to 2 with no rollout recorded yet is held */
    set_work(&f, "m4", 1, false, "Current");
    assert_true(fl_rollout_gate_holds(f.strategy, f.tmpl, "m4", json_object_get(f.works, "m4")));
    /* what already delivers the generation stays delivered (a strategy created afterwards) */
    set_work(&f, "m4", 2, false, "Current");
    assert_false(fl_rollout_gate_holds(f.strategy, f.tmpl, "m4", json_object_get(f.works, "m4")));
    set_work(&f, "m4", 1, false, "Current");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    record(&f, e);
    assert_false(fl_rollout_gate_holds(f.strategy, f.tmpl, "m1", NULL)); /* released */
    assert_true(fl_rollout_gate_holds(f.strategy, f.tmpl, "m2", NULL));
    assert_true(fl_rollout_gate_holds(f.strategy, f.tmpl, "m4", json_object_get(f.works, "m4")));
    /* no generation, no strategy: never held */
    assert_false(fl_rollout_gate_holds(NULL, f.tmpl, "m2", NULL));
    json_decref(e);
    json_decref(ev);
    fleet_close(&f);
}

static void test_a_stage_goes_on_only_when_current_and_approval_holds_it(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 10, "{'metadata':{'namespace':'default','name':'s'},'spec':{" STAGES_127 "}}");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    /* the canary's Work still suspended, then applied but InProgress: the stage waits */
    set_work(&f, "m1", 2, true, "InProgress");
    json_t *e2 = step(&f, e, T0 + 1000, ev, NULL);
    assert_string_equal(fl_json_str(e2, "stageName"), "canary");
    set_work(&f, "m1", 2, false, "InProgress");
    json_t *e3 = step(&f, e2, T0 + 2000, ev, NULL);
    assert_string_equal(fl_json_str(e3, "stageName"), "canary");
    assert_string_equal(fl_json_str(e3, "phase"), FL_RO_PROGRESSING);
    /* Current: the wave is released */
    set_work(&f, "m1", 2, false, "Current");
    json_t *e4 = step(&f, e3, T0 + 3000, ev, NULL);
    assert_string_equal(fl_json_str(e4, "stageName"), "wave");
    assert_string_equal(state_of(e4, "m2"), FL_ROLLOUT_RELEASED);
    set_work(&f, "m2", 2, false, "Current");
    set_work(&f, "m3", 2, false, "Current");
    json_t *e5 = step(&f, e4, T0 + 4000, ev, NULL);
    assert_string_equal(fl_json_str(e5, "phase"), FL_RO_APPROVAL);
    assert_string_equal(state_of(e5, "m4"), FL_ROLLOUT_HELD);
    /* an approval of another generation does not count; this one's does */
    json_object_set_new(f.strategy, "metadata",
                        test_json("{'namespace':'default','name':'s','annotations':"
                                  "{'approve.rollouts.flotilla.io/u-1':'1/wave'}}"));
    json_t *e6 = step(&f, e5, T0 + 5000, ev, NULL);
    assert_string_equal(fl_json_str(e6, "phase"), FL_RO_APPROVAL);
    json_object_set_new(f.strategy, "metadata",
                        test_json("{'namespace':'default','name':'s','annotations':"
                                  "{'approve.rollouts.flotilla.io/u-1':'2/wave'}}"));
    json_t *e7 = step(&f, e6, T0 + 6000, ev, NULL);
    assert_string_equal(fl_json_str(e7, "stageName"), "rest");
    /* maxConcurrency 3: three of the seven on their way */
    int released = 0;
    for (int i = 4; i <= 10; i++) {
        char n[8];
        snprintf(n, sizeof n, "m%d", i);
        released += !strcmp(state_of(e7, n), FL_ROLLOUT_RELEASED);
    }
    assert_int_equal(released, 3);
    json_t *all[] = {e, e2, e3, e4, e5, e6, e7};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        json_decref(all[i]);
    json_decref(ev);
    fleet_close(&f);
}

static void test_soak_waits_and_says_when_to_look_again(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 2, "{'metadata':{'namespace':'default','name':'s'},'spec':{'stages':["
                      "{'name':'canary','clusterSelector':{'matchLabels':{'ring':'canary'}},'soakSeconds':30},"
                      "{'name':'rest','percent':100}]}}");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    set_work(&f, "m1", 2, false, "Current");
    int64_t due = 0;
    json_t *e2 = step(&f, e, T0 + 1000, ev, &due);
    assert_string_equal(fl_json_str(e2, "phase"), FL_RO_SOAKING);
    assert_int_equal(due, T0 + 1000 + 30000);
    json_t *e3 = step(&f, e2, T0 + 20000, ev, NULL);
    assert_string_equal(fl_json_str(e3, "phase"), FL_RO_SOAKING);
    json_t *e4 = step(&f, e3, T0 + 31000, ev, NULL);
    assert_string_equal(fl_json_str(e4, "stageName"), "rest");
    assert_string_equal(state_of(e4, "m2"), FL_ROLLOUT_RELEASED);
    json_t *all[] = {e, e2, e3, e4};
    for (size_t i = 0; i < 4; i++)
        json_decref(all[i]);
    json_decref(ev);
    fleet_close(&f);
}

static void test_a_failure_halts_or_rolls_back_and_a_deadline_counts_as_one(void **state)
{
    (void)state;
    const char *halt = "{'metadata':{'namespace':'default','name':'s'},'spec':{'progressDeadlineSeconds':10,"
                       "'stages':[{'name':'canary','clusterSelector':{'matchLabels':{'ring':'canary'}}},"
                       "{'name':'rest','percent':100}]}}";
    fleet f;
    fleet_init(&f, 3, halt);
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    set_work(&f, "m1", 2, false, "InProgress");
    int64_t due = 0;
    json_t *e2 = step(&f, e, T0 + 5000, ev, &due);
    assert_string_equal(fl_json_str(e2, "phase"), FL_RO_PROGRESSING);
    assert_true(due > 0 && due <= T0 + 10000);
    json_t *e3 = step(&f, e2, T0 + 11000, ev, NULL);
    assert_string_equal(fl_json_str(e3, "phase"), FL_RO_HALTED);
    assert_string_equal(state_of(e3, "m1"), FL_ROLLOUT_FAILED);
    assert_string_equal(state_of(e3, "m2"), FL_ROLLOUT_HELD);
    assert_non_null(strstr(fl_json_str(e3, "message"), "m1 (ProgressDeadlineExceeded)"));
    assert_true(has_event(ev, "RolloutHalted"));
    /* with Rollback: RollingBack; the restored generation then goes everywhere at once */
    json_object_set_new(json_object_get(f.strategy, "spec"), "onFailure", json_string("Rollback"));
    set_work(&f, "m1", 2, false, "Failed");
    json_t *r1 = step(&f, e, T0 + 1000, ev, NULL);
    assert_string_equal(fl_json_str(r1, "phase"), FL_RO_ROLLING_BACK);
    json_object_set_new(json_object_get(f.tmpl, "metadata"), "generation", json_integer(3));
    json_t *r2 = step(&f, r1, T0 + 2000, ev, NULL);
    assert_string_equal(fl_json_str(r2, "phase"), FL_RO_ROLLED_BACK);
    record(&f, r2);
    assert_false(fl_rollout_gate_holds(f.strategy, f.tmpl, "m3", NULL));
    /* after the end, the clusters are shown as they come: Current, or released on their way */
    set_work(&f, "m1", 3, false, "Current");
    set_work(&f, "m2", 3, false, "InProgress");
    json_t *r3 = step(&f, r2, T0 + 3000, ev, NULL);
    assert_string_equal(fl_json_str(r3, "phase"), FL_RO_ROLLED_BACK);
    assert_string_equal(state_of(r3, "m1"), FL_ROLLOUT_CURRENT);
    assert_string_equal(state_of(r3, "m2"), FL_ROLLOUT_RELEASED);
    json_t *all[] = {e, e2, e3, r1, r2, r3};
    for (size_t i = 0; i < 6; i++)
        json_decref(all[i]);
    json_decref(ev);
    fleet_close(&f);
}

static void test_a_new_change_supersedes_from_stage_one_and_pause_holds(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 4, "{'metadata':{'namespace':'default','name':'s'},'spec':{" STAGES_127 "}}");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    set_work(&f, "m1", 2, false, "Current");
    json_t *e2 = step(&f, e, T0 + 1000, ev, NULL);
    assert_string_equal(fl_json_str(e2, "stageName"), "wave");
    json_object_set_new(json_object_get(f.tmpl, "metadata"), "generation", json_integer(3));
    json_t *ev2 = json_array();
    json_t *e3 = step(&f, e2, T0 + 2000, ev2, NULL);
    assert_int_equal(fl_json_path_int(e3, "generation", 0), 3);
    assert_string_equal(fl_json_str(e3, "stageName"), "canary");
    assert_string_equal(state_of(e3, "m2"), FL_ROLLOUT_HELD);
    assert_true(has_event(ev2, "RolloutSuperseded"));
    /* paused: nothing more released */
    json_object_set_new(json_object_get(f.strategy, "spec"), "paused", json_true());
    set_work(&f, "m1", 3, false, "Current");
    json_t *e4 = step(&f, e3, T0 + 3000, ev2, NULL);
    assert_string_equal(fl_json_str(e4, "phase"), FL_RO_PAUSED);
    assert_string_equal(state_of(e4, "m2"), FL_ROLLOUT_HELD);
    json_t *all[] = {e, e2, e3, e4};
    for (size_t i = 0; i < 4; i++)
        json_decref(all[i]);
    json_decref(ev);
    json_decref(ev2);
    fleet_close(&f);
}

static void test_a_stage_selecting_no_cluster_halts_with_a_reason(void **state)
{
    (void)state;
    fleet f;
    fleet_init(&f, 3, "{'metadata':{'namespace':'default','name':'s'},'spec':{'stages':["
                      "{'name':'ring0','clusterSelector':{'matchLabels':{'ring':'none'}}},{'name':'rest','percent':100}]}}");
    json_t *ev = json_array();
    json_t *e = step(&f, NULL, T0, ev, NULL);
    assert_string_equal(fl_json_str(e, "phase"), FL_RO_HALTED);
    assert_string_equal(fl_json_str(e, "reason"), "NoClusterSelected");
    assert_true(has_event(ev, "NoClusterSelected"));
    json_decref(e);
    json_decref(ev);
    fleet_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_new_generation_places_the_targets_in_stages_all_held),
        cmocka_unit_test(test_percent_stages_take_their_share_of_all_targets_by_name),
        cmocka_unit_test(test_the_gate_holds_a_generation_until_its_cluster_is_released),
        cmocka_unit_test(test_a_stage_goes_on_only_when_current_and_approval_holds_it),
        cmocka_unit_test(test_soak_waits_and_says_when_to_look_again),
        cmocka_unit_test(test_a_failure_halts_or_rolls_back_and_a_deadline_counts_as_one),
        cmocka_unit_test(test_a_new_change_supersedes_from_stage_one_and_pause_holds),
        cmocka_unit_test(test_a_stage_selecting_no_cluster_halts_with_a_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
