/* test_scheduler.c - the scheduler controller (src/controllers/scheduler.c, around the core in
 * src/sched/) alone against an in-process API over a memory store, for what
 * docs/propagation.md promises of a decision as it lands on the binding: a weighted division
 * (spec.clusters with each cluster's replicas, the Scheduled condition, the observed
 * generation); a new weight moving only the replicas it must; Duplicated giving every cluster
 * the affinity selects all replicas; a cluster that joins the affinity getting its share;
 * Scheduled=False with NoClusterFit when nothing fits; a binding without placement (a
 * dependency's) left alone. The test writes the Clusters and bindings the cluster-status
 * controller and the detector would; every wait polls the API against a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_get.h"
#include "core/mem.h"

#include "testapi.h"
#include "testutil.h"

/* generous: the machine may be busy with other builds; a normal run takes milliseconds */
#define DEADLINE_MS 10000

#define CLUSTERS "/apis/cluster.karmada.io/v1alpha1/clusters"
#define RBS "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"

typedef test_fixture fixture;

/* A member as the cluster-status controller leaves it: Ready, serving Deployments and
 * ConfigMaps; labelled env=prod when prod. */
static void create_cluster(fixture *f, const char *name, bool prod)
{
    json_t *c = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "cluster.karmada.io/v1alpha1", "kind",
                          "Cluster", "metadata", "name", name, "labels", "env", prod ? "prod" : "dev", "spec",
                          "syncMode", "Push");
    assert_int_equal(test_api_send(&f->api, "POST", CLUSTERS, c), 201);
    json_decref(c);
    json_t *st = json_pack("{s:{s:[{s:s, s:s, s:s}], s:[{s:s, s:[{s:s, s:s}]}, {s:s, s:[{s:s, s:s}]}]}}", "status",
                           "conditions", "type", "Ready", "status", "True", "reason", "ClusterReady",
                           "apiEnablements", "groupVersion", "apps/v1", "resources", "name", "deployments", "kind",
                           "Deployment", "groupVersion", "v1", "resources", "name", "configmaps", "kind", "ConfigMap");
    char path[128];
    snprintf(path, sizeof path, CLUSTERS "/%s/status", name);
    assert_int_equal(test_api_send(&f->api, "PATCH", path, st), 200);
    json_decref(st);
}

static int setup(void **state)
{
    fixture *f = test_fixture_new();
    create_cluster(f, "member1", true);
    create_cluster(f, "member2", true);
    create_cluster(f, "member3", false);
    test_ctrl_start(&f->api, "scheduler", &f->ctrl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    test_fixture_free(*state);
    return 0;
}

/* A ResourceBinding as the detector writes it: for Deployment name with replicas (0: a
 * ConfigMap of that name, which has none), with placement (NULL: none, a dependency's). */
static void create_binding(fixture *f, const char *name, int replicas, json_t *placement)
{
    json_t *b = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s, s:s}}}", "apiVersion", "work.karmada.io/v1alpha2",
                          "kind", "ResourceBinding", "metadata", "name", name, "spec", "resource", "apiVersion",
                          replicas ? "apps/v1" : "v1", "kind", replicas ? "Deployment" : "ConfigMap", "namespace",
                          "default", "name", name);
    json_t *spec = json_object_get(b, "spec");
    if (replicas)
        json_object_set_new(spec, "replicas", json_integer(replicas));
    if (placement)
        json_object_set_new(spec, "placement", placement);
    assert_int_equal(test_api_send(&f->api, "POST", RBS, b), 201);
    json_decref(b);
}

static json_t *get_binding(fixture *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, RBS "/%s", name);
    return test_api_get(&f->api, path);
}

/* The binding's spec.clusters, compact with sorted keys ("" when it has none). */
static char *clusters_of(fixture *f, const char *name)
{
    json_t *b = get_binding(f, name);
    json_t *c = fl_json_path(b, "spec.clusters");
    char *s = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : strdup("");
    json_decref(b);
    return s;
}

static bool clusters_are(fixture *f, const char *name, const char *want)
{
    char *s = clusters_of(f, name);
    bool same = !strcmp(s, want);
    free(s);
    return same;
}

/* The binding's Scheduled condition (borrowed from b), or NULL. */
static json_t *scheduled(const json_t *b)
{
    size_t i;
    json_t *c;
    json_array_foreach(fl_json_path(b, "status.conditions"), i, c) if (!strcmp(fl_json_str(c, "type"), "Scheduled")) return c;
    return NULL;
}

static bool has_scheduled(fixture *f, const char *name)
{
    json_t *b = get_binding(f, name);
    bool has = scheduled(b) != NULL;
    json_decref(b);
    return has;
}

/* Divided, Weighted, with static weights w1 for member1 and w2 for member2. */
static json_t *weighted(int w1, int w2)
{
    return json_pack("{s:{s:[s, s]}, s:{s:s, s:s, s:{s:[{s:{s:[s]}, s:i}, {s:{s:[s]}, s:i}]}}}", "clusterAffinity",
                     "clusterNames", "member1", "member2", "replicaScheduling", "replicaSchedulingType", "Divided",
                     "replicaDivisionPreference", "Weighted", "weightPreference", "staticWeightList", "targetCluster",
                     "clusterNames", "member1", "weight", w1, "targetCluster", "clusterNames", "member2", "weight", w2);
}

static void test_weighted_division_splits_replicas_1_to_2(void **state)
{
    fixture *f = *state;
    create_binding(f, "nginx", 6, weighted(1, 2));
    WAIT_UNTIL(clusters_are(f, "nginx", "[{\"name\":\"member1\",\"replicas\":2},{\"name\":\"member2\",\"replicas\":4}]"),
               DEADLINE_MS);
    WAIT_UNTIL(has_scheduled(f, "nginx"), DEADLINE_MS);
    json_t *b = get_binding(f, "nginx");
    json_t *c = scheduled(b);
    assert_string_equal(fl_json_str(c, "status"), "True");
    assert_string_equal(fl_json_str(c, "reason"), "Success");
    assert_string_equal(fl_json_str(c, "message"), "Binding has been scheduled successfully.");
    /* the decision was made on the binding's current spec */
    assert_int_equal(json_integer_value(fl_json_path(b, "status.schedulerObservedGeneration")),
                     json_integer_value(fl_json_path(b, "metadata.generation")));
    assert_non_null(fl_json_path_str(b, "status.lastScheduledTime"));
    json_decref(b);
}

static void test_a_new_weight_moves_only_the_replicas_it_must(void **state)
{
    fixture *f = *state;
    create_binding(f, "nginx", 6, weighted(1, 2));
    WAIT_UNTIL(clusters_are(f, "nginx", "[{\"name\":\"member1\",\"replicas\":2},{\"name\":\"member2\",\"replicas\":4}]"),
               DEADLINE_MS);
    /* 1:1: exactly one replica moves */
    json_t *p = json_pack("{s:{s:o}}", "spec", "placement", weighted(1, 1));
    assert_int_equal(test_api_send(&f->api, "PATCH", RBS "/nginx", p), 200);
    json_decref(p);
    WAIT_UNTIL(clusters_are(f, "nginx", "[{\"name\":\"member1\",\"replicas\":3},{\"name\":\"member2\",\"replicas\":3}]"),
               DEADLINE_MS);
    /* scaling to 8 adds to both, keeping what each had */
    json_t *s = json_pack("{s:{s:i}}", "spec", "replicas", 8);
    assert_int_equal(test_api_send(&f->api, "PATCH", RBS "/nginx", s), 200);
    json_decref(s);
    WAIT_UNTIL(clusters_are(f, "nginx", "[{\"name\":\"member1\",\"replicas\":4},{\"name\":\"member2\",\"replicas\":4}]"),
               DEADLINE_MS);
}

static json_t *prod_duplicated(void)
{
    return json_pack("{s:{s:{s:{s:s}}}, s:{s:s}}", "clusterAffinity", "labelSelector", "matchLabels", "env", "prod",
                     "replicaScheduling", "replicaSchedulingType", "Duplicated");
}

static void test_duplicated_gives_each_selected_cluster_all_replicas(void **state)
{
    fixture *f = *state;
    create_binding(f, "api", 2, prod_duplicated());
    /* member3 (env=dev) is filtered out */
    WAIT_UNTIL(clusters_are(f, "api", "[{\"name\":\"member1\",\"replicas\":2},{\"name\":\"member2\",\"replicas\":2}]"),
               DEADLINE_MS);
}

static void test_a_cluster_joining_the_affinity_gets_its_share(void **state)
{
    fixture *f = *state;
    create_binding(f, "api", 2, prod_duplicated());
    WAIT_UNTIL(clusters_are(f, "api", "[{\"name\":\"member1\",\"replicas\":2},{\"name\":\"member2\",\"replicas\":2}]"),
               DEADLINE_MS);
    json_t *l = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "env", "prod");
    assert_int_equal(test_api_send(&f->api, "PATCH", CLUSTERS "/member3", l), 200);
    json_decref(l);
    WAIT_UNTIL(clusters_are(f, "api",
                            "[{\"name\":\"member1\",\"replicas\":2},{\"name\":\"member2\",\"replicas\":2},"
                            "{\"name\":\"member3\",\"replicas\":2}]"),
               DEADLINE_MS);
}

static void test_no_cluster_fitting_is_scheduled_false_no_cluster_fit(void **state)
{
    fixture *f = *state;
    create_binding(f, "lost", 2, json_pack("{s:{s:[s]}}", "clusterAffinity", "clusterNames", "nowhere"));
    WAIT_UNTIL(has_scheduled(f, "lost"), DEADLINE_MS);
    json_t *b = get_binding(f, "lost");
    json_t *c = scheduled(b);
    assert_string_equal(fl_json_str(c, "status"), "False");
    assert_string_equal(fl_json_str(c, "reason"), "NoClusterFit");
    assert_non_null(strstr(fl_json_str(c, "message"), "0/3 clusters are available"));
    assert_null(fl_json_path(b, "spec.clusters"));
    json_decref(b);
}

static void test_a_binding_without_placement_is_left_alone(void **state)
{
    fixture *f = *state;
    create_binding(f, "attached", 0, NULL);
    /* a binding created after it, and scheduled: the scheduler has seen both (a kind without
     * replicas goes to every selected cluster, with no replicas in its entries) */
    create_binding(f, "after", 0, json_pack("{s:{s:[s]}}", "clusterAffinity", "clusterNames", "member3"));
    WAIT_UNTIL(clusters_are(f, "after", "[{\"name\":\"member3\"}]"), DEADLINE_MS);
    WAIT_UNTIL(has_scheduled(f, "after"), DEADLINE_MS);
    json_t *b = get_binding(f, "attached");
    assert_null(fl_json_path(b, "spec.clusters"));
    assert_null(scheduled(b));
    json_decref(b);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_weighted_division_splits_replicas_1_to_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_new_weight_moves_only_the_replicas_it_must, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicated_gives_each_selected_cluster_all_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_cluster_joining_the_affinity_gets_its_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_cluster_fitting_is_scheduled_false_no_cluster_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_binding_without_placement_is_left_alone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
