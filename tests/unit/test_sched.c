/* test_sched.c - the scheduler core (src/sched/): every filter, every division mode
 * with its remainders and tie-breaks, spread selection by cluster and by group, the
 * clusterAffinities fallback, tolerations, the general estimator, steady rescheduling
 * (scale up, scale down, weight change, cluster leaves, cluster joins, fresh), Karmada's
 * failure reasons and messages, and malformed input that must name its field.
 *
 * Clusters are built from one template (Ready, serving apps/v1 Deployment and v1
 * ConfigMap, a resource summary with room for `pods` pods) and adjusted with set();
 * bindings are a Deployment "web" with a placement written as JSON text. Targets are
 * compared as text, "a:2,b:4", sorted by name as the result is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "sched/sched.h"
#include "sched/sched_priv.h"

/* ---------------------------------------------------------------- helpers -- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

/* Set obj.<dotted path> = val (stolen), creating objects on the way. */
static void set(json_t *obj, const char *path, json_t *val)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL, *p = strtok_r(buf, ".", &save);
    for (char *next; (next = strtok_r(NULL, ".", &save)); p = next) {
        json_t *child = json_object_get(obj, p);
        if (!json_is_object(child)) {
            child = json_object();
            json_object_set_new(obj, p, child);
        }
        obj = child;
    }
    json_object_set_new(obj, p, val);
}

/* A Ready cluster serving Deployments and ConfigMaps, with room for `pods` pods,
 * 100 cpus and 100Gi of memory. */
static json_t *mk(const char *name, int pods)
{
    json_t *c = J("{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\","
                  "\"metadata\":{\"labels\":{}},\"spec\":{\"syncMode\":\"Push\"},"
                  "\"status\":{\"apiEnablements\":["
                  "{\"groupVersion\":\"apps/v1\",\"resources\":[{\"name\":\"deployments\",\"kind\":\"Deployment\"}]},"
                  "{\"groupVersion\":\"v1\",\"resources\":[{\"name\":\"configmaps\",\"kind\":\"ConfigMap\"}]}],"
                  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                  "\"resourceSummary\":{\"allocatable\":{\"cpu\":\"100\",\"memory\":\"100Gi\"}}}}");
    set(c, "metadata.name", json_string(name));
    char p[32];
    snprintf(p, sizeof p, "%d", pods);
    set(c, "status.resourceSummary.allocatable.pods", json_string(p));
    return c;
}

/* A snapshot of the clusters (consumed). */
static fl_sched_snapshot *snap_of(json_t **cs, size_t n)
{
    fl_sched_snapshot *s = NULL;
    assert_int_equal(fl_sched_snapshot_new((const json_t *const *)cs, n, &s), 0);
    for (size_t i = 0; i < n; i++)
        json_decref(cs[i]);
    return s;
}

/* Clusters named by a comma list "a:10,b:20" (name:pods). */
static fl_sched_snapshot *snap_list(const char *list)
{
    json_t *cs[64];
    size_t n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':');
        *colon = '\0';
        cs[n++] = mk(t, atoi(colon + 1));
    }
    return snap_of(cs, n);
}

/* A Deployment binding's spec with this placement (JSON text) and replica count. */
static json_t *spec(int replicas, const char *placement)
{
    json_t *s = J("{\"resource\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"namespace\":\"default\","
                  "\"name\":\"web\"}}");
    set(s, "replicas", json_integer(replicas));
    set(s, "placement", J(placement));
    return s;
}

/* Run and require success of the call (not of the scheduling). */
static fl_sched_result *run_opts(fl_sched_snapshot *snap, json_t *sp, const char *status, const fl_sched_opts *o)
{
    json_t *st = status ? J(status) : NULL;
    fl_sched_result *r = NULL;
    char *err = NULL;
    int rc = fl_sched_run(snap, sp, st, o, &r, &err);
    if (rc != 0)
        fail_msg("fl_sched_run failed: %s", err);
    assert_null(err);
    json_decref(st);
    /* every decision times the steps it went through (the scheduler's metrics): filtering
     * always, selecting and assigning when it found a placement */
    assert_true(r->step_ns[FL_SCHED_STEP_FILTER] > 0);
    if (r->outcome == FL_SCHED_SUCCESS) {
        assert_true(r->step_ns[FL_SCHED_STEP_SELECT] > 0);
        assert_true(r->step_ns[FL_SCHED_STEP_ASSIGN] > 0);
    }
    return r;
}

static fl_sched_result *run(fl_sched_snapshot *snap, json_t *sp, const char *status)
{
    return run_opts(snap, sp, status, NULL);
}

/* run() that consumes the spec */
static fl_sched_result *run1(fl_sched_snapshot *snap, json_t *sp, const char *status)
{
    fl_sched_result *r = run_opts(snap, sp, status, NULL);
    json_decref(sp);
    return r;
}

/* "a:2,b:4" into buf */
static const char *targets_into(const fl_sched_result *r, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->ntargets && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s:%d", i ? "," : "", r->targets[i].name,
                                r->targets[i].replicas);
    return buf;
}

/* the same in a static buffer, for the single-threaded tests */
static const char *targets(const fl_sched_result *r)
{
    static char buf[2048];
    return targets_into(r, buf, sizeof buf);
}

/* The filter entry for a cluster, or NULL. */
static const fl_sched_filtered *filtered(const fl_sched_result *r, const char *name)
{
    for (size_t i = 0; i < r->nfiltered; i++)
        if (!strcmp(r->filtered[i].cluster, name))
            return &r->filtered[i];
    return NULL;
}

static void assert_success(const fl_sched_result *r, const char *want)
{
    if (r->outcome != FL_SCHED_SUCCESS)
        fail_msg("scheduling failed: %s: %s", r->reason, r->message);
    assert_string_equal(r->reason, "Success");
    assert_true(r->update_clusters);
    assert_string_equal(targets(r), want);
}

/* fl_sched_run must refuse the input with a message containing `field`. */
static void assert_einval(fl_sched_snapshot *snap, json_t *sp, const char *status, const char *field)
{
    json_t *st = status ? J(status) : NULL;
    fl_sched_result *r = (fl_sched_result *)0x1;
    char *err = NULL;
    int rc = fl_sched_run(snap, sp, st, NULL, &r, &err);
    assert_int_equal(rc, FL_EINVAL);
    assert_null(r);
    assert_non_null(err);
    if (!strstr(err, field))
        fail_msg("error \"%s\" does not name %s", err, field);
    free(err);
    json_decref(st);
    json_decref(sp);
}

/* Schedule and compare in one go (spec consumed). */
static void expect(fl_sched_snapshot *snap, json_t *sp, const char *status, const char *want)
{
    fl_sched_result *r = run(snap, sp, status);
    assert_success(r, want);
    fl_sched_result_free(r);
    json_decref(sp);
}

#define DUP "{}"
#define DIVIDED_EQUAL "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\"," \
                      "\"replicaDivisionPreference\":\"Weighted\"}}"
#define DYNAMIC "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\"," \
                "\"replicaDivisionPreference\":\"Weighted\","                                                       \
                "\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}}"
#define AGGREGATED "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\"," \
                   "\"replicaDivisionPreference\":\"Aggregated\"}}"

/* A static weight placement "a=1,b=2" by cluster name. */
static json_t *static_spec(int replicas, const char *weights)
{
    json_t *list = json_array();
    char buf[256];
    snprintf(buf, sizeof buf, "%s", weights);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        *eq = '\0';
        json_array_append_new(list, json_pack("{s:{s:[s]},s:i}", "targetCluster", "clusterNames", t, "weight",
                                              atoi(eq + 1)));
    }
    json_t *s = spec(replicas, "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\","
                               "\"replicaDivisionPreference\":\"Weighted\",\"weightPreference\":{}}}");
    set(s, "placement.replicaScheduling.weightPreference.staticWeightList", list);
    return s;
}

/* Set spec.clusters from "a:2,b:4". */
static void set_prev(json_t *sp, const char *list)
{
    json_t *arr = json_array();
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':');
        *colon = '\0';
        json_array_append_new(arr, json_pack("{s:s,s:i}", "name", t, "replicas", atoi(colon + 1)));
    }
    set(sp, "clusters", arr);
}

/* How many replicas moved between two assignments (sum of decreases). */
static int moved(const char *before, const char *after)
{
    int total = 0;
    char b[512];
    snprintf(b, sizeof b, "%s", before);
    char *save = NULL;
    for (char *t = strtok_r(b, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':');
        *colon = '\0';
        int was = atoi(colon + 1), now = 0;
        char key[64];
        snprintf(key, sizeof key, "%s:", t);
        const char *p = after;
        while ((p = strstr(p, key))) {
            if (p == after || p[-1] == ',') {
                now = atoi(p + strlen(key));
                break;
            }
            p++;
        }
        if (was > now)
            total += was - now;
    }
    return total;
}

/* ------------------------------------------------------------- snapshot -- */

static void test_snapshot_sorts_by_name_and_marks_invalid_clusters(void **state)
{
    (void)state;
    json_t *bad_taint = mk("d", 10);
    set(bad_taint, "spec.taints", J("[{\"key\":\"k\",\"effect\":7}]"));
    json_t *bad_qty = mk("e", 10);
    set(bad_qty, "status.resourceSummary.allocated", J("{\"cpu\":\"lots\"}"));
    json_t *cs[] = {mk("c", 10), mk("a", 10), J("{\"metadata\":{}}"), bad_taint, mk("a", 10), bad_qty, mk("b", 10)};
    fl_sched_snapshot *snap = snap_of(cs, 7);
    assert_int_equal(fl_sched_snapshot_count(snap), 7);
    fl_sched_result *r = run1(snap, spec(1, DUP), NULL);
    assert_success(r, "a:1,b:1,c:1");
    assert_int_equal(r->nfiltered, 4);
    /* the nameless one sorts first; the second "a" is a duplicate */
    assert_string_equal(r->filtered[0].cluster, "");
    assert_string_equal(r->filtered[0].plugin, "InvalidCluster");
    assert_string_equal(r->filtered[0].reason, "metadata.name: Required value");
    assert_string_equal(r->filtered[1].cluster, "a");
    assert_non_null(strstr(r->filtered[1].reason, "Duplicate value"));
    assert_non_null(strstr(filtered(r, "d")->reason, "spec.taints[0]"));
    assert_non_null(strstr(filtered(r, "e")->reason, "status.resourceSummary.allocated.cpu"));
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);
}

static void test_result_outlives_the_snapshot_reference(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("m1:10,m2:10");
    json_t *sp = spec(2, DUP);
    fl_sched_result *r = run(snap, sp, NULL);
    fl_sched_snapshot_free(snap); /* the result keeps its own reference */
    assert_success(r, "m1:2,m2:2");
    fl_sched_result_free(r);
    json_decref(sp);
}

/* --------------------------------------------------------------- filters -- */

static void test_duplicated_gives_every_cluster_all_replicas(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("m3:1,m1:1,m2:1");
    /* Duplicated ignores capacity (one pod of room, three replicas) */
    expect(snap, spec(3, DUP), NULL, "m1:3,m2:3,m3:3");
    expect(snap, spec(3, "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Duplicated\"}}"), NULL,
           "m1:3,m2:3,m3:3");
    fl_sched_snapshot_free(snap);
}

static void test_cluster_affinity_names_labels_fields_and_exclude(void **state)
{
    (void)state;
    json_t *cs[] = {mk("m1", 10), mk("m2", 10), mk("m3", 10), mk("m4", 10)};
    set(cs[0], "metadata.labels.env", json_string("prod"));
    set(cs[1], "metadata.labels.env", json_string("prod"));
    set(cs[2], "metadata.labels.env", json_string("dev"));
    set(cs[0], "spec.region", json_string("eu"));
    set(cs[1], "spec.region", json_string("us"));
    fl_sched_snapshot *snap = snap_of(cs, 4);

    expect(snap, spec(1, "{\"clusterAffinity\":{\"clusterNames\":[\"m2\",\"m4\"]}}"), NULL, "m2:1,m4:1");
    expect(snap, spec(1, "{\"clusterAffinity\":{\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}}}}"), NULL,
           "m1:1,m2:1");
    expect(snap, spec(1, "{\"clusterAffinity\":{\"fieldSelector\":{\"matchExpressions\":[{\"key\":\"region\","
                         "\"operator\":\"In\",\"values\":[\"eu\"]}]}}}"), NULL, "m1:1");
    expect(snap, spec(1, "{\"clusterAffinity\":{\"exclude\":[\"m1\",\"m3\"]}}"), NULL, "m2:1,m4:1");

    fl_sched_result *r = run1(snap, spec(1, "{\"clusterAffinity\":{\"clusterNames\":[\"m2\"]}}"), NULL);
    const fl_sched_filtered *f = filtered(r, "m1");
    assert_non_null(f);
    assert_string_equal(f->plugin, "ClusterAffinity");
    assert_string_equal(f->reason, "cluster(s) did not match the placement cluster affinity constraint");
    assert_int_equal(r->nfiltered, 3);
    assert_null(r->affinity_name);
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);
}

static void test_taints_and_tolerations(void **state)
{
    (void)state;
    json_t *cs[] = {mk("m1", 10), mk("m2", 10), mk("m3", 10), mk("m4", 10)};
    set(cs[1], "spec.taints", J("[{\"key\":\"cluster.karmada.io/not-ready\",\"effect\":\"NoSchedule\"}]"));
    set(cs[2], "spec.taints", J("[{\"key\":\"team\",\"value\":\"a\",\"effect\":\"NoExecute\"}]"));
    set(cs[3], "spec.taints", J("[{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"}]"));
    fl_sched_snapshot *snap = snap_of(cs, 4);

    /* PreferNoSchedule does not filter */
    json_t *sp = spec(1, DUP);
    fl_sched_result *r = run(snap, sp, NULL);
    assert_success(r, "m1:1,m4:1");
    assert_string_equal(filtered(r, "m2")->plugin, "TaintToleration");
    assert_string_equal(filtered(r, "m2")->reason,
                        "cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}");
    assert_string_equal(filtered(r, "m3")->reason, "cluster(s) had untolerated taint {team=a:NoExecute}");
    fl_sched_result_free(r);
    json_decref(sp);

    /* Exists with a key, any value, any effect */
    expect(snap,
           spec(1, "{\"clusterTolerations\":[{\"key\":\"cluster.karmada.io/not-ready\",\"operator\":\"Exists\"}]}"),
           NULL, "m1:1,m2:1,m4:1");
    /* Equal needs the value; the effect must match when given */
    expect(snap, spec(1, "{\"clusterTolerations\":[{\"key\":\"team\",\"value\":\"b\",\"effect\":\"NoExecute\"}]}"),
           NULL, "m1:1,m4:1");
    expect(snap, spec(1, "{\"clusterTolerations\":[{\"key\":\"team\",\"value\":\"a\",\"effect\":\"NoSchedule\"}]}"),
           NULL, "m1:1,m4:1");
    expect(snap, spec(1, "{\"clusterTolerations\":[{\"key\":\"team\",\"operator\":\"Equal\",\"value\":\"a\"}]}"), NULL,
           "m1:1,m3:1,m4:1");
    /* empty key with Exists tolerates everything; Lt/Gt tolerate nothing (disabled upstream) */
    expect(snap, spec(1, "{\"clusterTolerations\":[{\"operator\":\"Exists\"}]}"), NULL, "m1:1,m2:1,m3:1,m4:1");
    expect(snap, spec(1, "{\"clusterTolerations\":[{\"key\":\"team\",\"operator\":\"Gt\",\"value\":\"1\"}]}"), NULL,
           "m1:1,m4:1");
    /* a cluster already in spec.clusters keeps the binding despite a new taint */
    sp = spec(1, DUP);
    set_prev(sp, "m2:1");
    expect(snap, sp, NULL, "m1:1,m2:1,m4:1");
    fl_sched_snapshot_free(snap);
}

static void test_one_toleration_matches_one_taint_as_the_filter_does(void **state)
{
    (void)state;
    json_t *taint = J("{\"key\":\"team\",\"value\":\"a\",\"effect\":\"NoExecute\"}");
    static const struct {
        const char *tol;
        bool want;
    } cases[] = {
        {"{\"key\":\"team\",\"operator\":\"Exists\"}", true},
        {"{\"key\":\"team\",\"value\":\"a\",\"effect\":\"NoExecute\",\"tolerationSeconds\":2}", true},
        {"{\"key\":\"team\",\"value\":\"b\"}", false},
        {"{\"key\":\"team\",\"value\":\"a\",\"effect\":\"NoSchedule\"}", false},
        {"{\"operator\":\"Exists\"}", true},
        {"{\"operator\":\"Exists\",\"effect\":\"NoExecute\"}", true},
        {"{\"key\":\"other\",\"operator\":\"Exists\"}", false},
        {"{\"key\":\"team\",\"operator\":\"Gt\",\"value\":\"1\"}", false},
        {"{\"key\":7}", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *tol = J(cases[i].tol);
        if (fl_sched_tolerates(tol, taint) != cases[i].want)
            fail_msg("toleration %s: want %d", cases[i].tol, cases[i].want);
        json_decref(tol);
    }
    json_decref(taint);
}

static void test_api_enablement_and_template_kind(void **state)
{
    (void)state;
    json_t *cs[] = {mk("m1", 10), mk("m2", 10)};
    set(cs[1], "status.apiEnablements", J("[{\"groupVersion\":\"v1\",\"resources\":[{\"kind\":\"ConfigMap\"}]}]"));
    fl_sched_snapshot *snap = snap_of(cs, 2);
    json_t *sp = spec(1, DUP);
    fl_sched_result *r = run(snap, sp, NULL);
    assert_success(r, "m1:1");
    assert_string_equal(filtered(r, "m2")->plugin, "APIEnablement");
    assert_string_equal(filtered(r, "m2")->reason, "cluster(s) did not have the API resource");
    fl_sched_result_free(r);
    /* a kind no cluster serves */
    set(sp, "resource.kind", json_string("Widget"));
    r = run(snap, sp, NULL);
    assert_int_equal(r->outcome, FL_SCHED_NO_CLUSTER_FIT);
    assert_string_equal(r->message, "0/2 clusters are available: 2 cluster(s) did not have the API resource.");
    fl_sched_result_free(r);
    /* already scheduled there: kept */
    set(sp, "resource.kind", json_string("Deployment"));
    set_prev(sp, "m2:1");
    r = run(snap, sp, NULL);
    assert_success(r, "m1:1,m2:1");
    fl_sched_result_free(r);
    /* a ConfigMap goes everywhere */
    set(sp, "resource", J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"c\"}"));
    set(sp, "replicas", json_integer(0));
    json_object_del(sp, "clusters");
    r = run(snap, sp, NULL);
    assert_success(r, "m1:0,m2:0");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

static void test_eviction_and_deleting_clusters_are_excluded(void **state)
{
    (void)state;
    json_t *cs[] = {mk("m1", 10), mk("m2", 10), mk("m3", 10)};
    set(cs[2], "metadata.deletionTimestamp", json_string("2024-01-01T00:00:00Z"));
    fl_sched_snapshot *snap = snap_of(cs, 3);
    json_t *sp = spec(1, DUP);
    set(sp, "gracefulEvictionTasks", J("[{\"fromCluster\":\"m1\",\"purgeMode\":\"Never\",\"reason\":\"x\","
                                       "\"producer\":\"y\"},{\"fromCluster\":\"gone\"}]"));
    set_prev(sp, "m2:1");
    fl_sched_result *r = run(snap, sp, NULL);
    assert_success(r, "m2:1");
    assert_string_equal(filtered(r, "m1")->plugin, "ClusterEviction");
    assert_string_equal(filtered(r, "m1")->reason, "cluster(s) is in the process of eviction");
    assert_string_equal(filtered(r, "m3")->plugin, "ClusterDeleting");
    fl_sched_result_free(r);
    /* no cluster left: deleting clusters count in N but not in the reasons */
    set(sp, "placement", J("{\"clusterAffinity\":{\"clusterNames\":[\"m1\",\"m3\"]}}"));
    r = run(snap, sp, NULL);
    assert_int_equal(r->outcome, FL_SCHED_NO_CLUSTER_FIT);
    assert_string_equal(r->reason, "NoClusterFit");
    assert_true(r->update_clusters);
    assert_int_equal(r->ntargets, 0);
    assert_string_equal(r->message, "0/3 clusters are available: 1 cluster(s) did not match the placement cluster "
                                    "affinity constraint, 1 cluster(s) is in the process of eviction.");
    fl_sched_result_free(r);
    set(sp, "placement", J("{\"clusterAffinity\":{\"clusterNames\":[\"m3\"]}}"));
    json_object_del(sp, "gracefulEvictionTasks");
    set(sp, "placement.clusterAffinity.clusterNames", J("[\"m3\"]"));
    r = run(snap, sp, NULL);
    assert_string_equal(r->message, "0/3 clusters are available: 2 cluster(s) did not match the placement cluster "
                                    "affinity constraint.");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);

    /* only deleting clusters: "no cluster exists" */
    json_t *one[] = {mk("x", 1)};
    set(one[0], "metadata.deletionTimestamp", json_string("2024-01-01T00:00:00Z"));
    snap = snap_of(one, 1);
    sp = spec(1, DUP);
    r = run(snap, sp, NULL);
    assert_string_equal(r->message, "0/1 clusters are available: no cluster exists.");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

static void test_no_cluster_fit_histogram_is_sorted_as_strings(void **state)
{
    (void)state;
    json_t *cs[12];
    char name[16];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "m%02d", i);
        cs[i] = mk(name, 1);
        if (i < 10)
            set(cs[i], "spec.taints", J("[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]"));
    }
    fl_sched_snapshot *snap = snap_of(cs, 12);
    json_t *sp = spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":1,\"maxGroups\":1},"
                         "{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":1}]}");
    fl_sched_result *r = run(snap, sp, NULL);
    /* "10 ..." sorts before "2 ..." as upstream sorts the strings */
    assert_string_equal(r->message, "0/12 clusters are available: 10 cluster(s) had untolerated taint {k:NoSchedule}, "
                                    "2 cluster(s) did not have region property.");
    assert_string_equal(filtered(r, "m11")->plugin, "SpreadConstraint");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

/* ------------------------------------------------------------- estimator -- */

static void test_estimator_reads_the_resource_summary(void **state)
{
    (void)state;
    json_t *cs[] = {mk("cpu", 100), mk("mem", 100), mk("pods", 3), mk("nomem", 100), mk("nosummary", 100)};
    /* cpu: 4 - 1 - 0.5 = 2.5 cores; 500m each -> 5 */
    set(cs[0], "status.resourceSummary.allocatable.cpu", json_string("4"));
    set(cs[0], "status.resourceSummary.allocated.cpu", json_string("1"));
    set(cs[0], "status.resourceSummary.allocating.cpu", json_string("500m"));
    /* memory: 3Gi free; 1Gi each -> 3 */
    set(cs[1], "status.resourceSummary.allocatable.memory", json_string("4Gi"));
    set(cs[1], "status.resourceSummary.allocated.memory", json_string("1024Mi"));
    /* pods: 3 allocatable - 1 allocated -> 2 */
    set(cs[2], "status.resourceSummary.allocated.pods", json_string("1"));
    /* no memory left at all; no summary at all */
    set(cs[3], "status.resourceSummary.allocated.memory", json_string("100Gi"));
    json_object_del(json_object_get(cs[4], "status"), "resourceSummary");
    fl_sched_snapshot *snap = snap_of(cs, 5);
    json_t *sp = spec(10, DYNAMIC);
    set(sp, "replicaRequirements", J("{\"resourceRequest\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}"));
    /* dynamic weights = available replicas 5:3:2 (the rest 0), 10 replicas */
    expect(snap, json_incref(sp), NULL, "cpu:5,mem:3,pods:2");
    /* a resource the clusters do not have: nobody fits */
    set(sp, "replicaRequirements", J("{\"resourceRequest\":{\"nvidia.com/gpu\":\"1\"}}"));
    fl_sched_result *r = run(snap, sp, NULL);
    assert_int_equal(r->outcome, FL_SCHED_UNSCHEDULABLE);
    assert_string_equal(r->reason, "Unschedulable");
    assert_false(r->update_clusters);
    assert_string_equal(r->message, "failed to assign replicas: failed to scale up: Clusters available replicas 0 are "
                                    "not enough to schedule.");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

/* A Flink job: 1 job manager (1 cpu, 4Gi) and 2 task managers (2 cpu, 1Gi each): one set
 * is 3 pods, 5 cpu and 6Gi. */
#define FLINK_COMPONENTS                                                                                              \
    "[{\"name\":\"jobmanager\",\"replicas\":1,\"replicaRequirements\":{\"resourceRequest\":"                        \
    "{\"cpu\":\"1\",\"memory\":\"4Gi\"}}},{\"name\":\"taskmanager\",\"replicas\":2,\"replicaRequirements\":"     \
    "{\"resourceRequest\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]"
#define ONE_CLUSTER "\"spreadConstraints\":[{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":1}]"

static void test_multi_component_workload_goes_where_every_component_fits(void **state)
{
    (void)state;
    /* a-cpu: cpu for the task managers but 5Gi, short of the job manager's 4Gi plus theirs;
     * b-pods: room for 2 pods of the 3; c-fit: exactly one set */
    json_t *cs[] = {mk("a-cpu", 100), mk("b-pods", 2), mk("c-fit", 100)};
    set(cs[0], "status.resourceSummary.allocatable.memory", json_string("5Gi"));
    set(cs[2], "status.resourceSummary.allocatable.cpu", json_string("6"));
    set(cs[2], "status.resourceSummary.allocated.cpu", json_string("1"));
    set(cs[2], "status.resourceSummary.allocatable.memory", json_string("6Gi"));
    fl_sched_snapshot *snap = snap_of(cs, 3);
    const char *dyn_one = "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\","
                          "\"replicaDivisionPreference\":\"Weighted\","
                          "\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}," ONE_CLUSTER "}";
    json_t *sp = spec(0, dyn_one);
    json_object_del(sp, "replicas"); /* the detector leaves replicas out when it has components */
    set(sp, "components", J(FLINK_COMPONENTS));
    /* one cluster, and one where a whole set fits: not the first by name, not the one with
     * the most cpu; the workload is not divided (0 replicas) */
    expect(snap, json_incref(sp), NULL, "c-fit:0");

    /* without the one-cluster constraint upstream does not estimate sets: every cluster */
    json_t *all = spec(0, DYNAMIC);
    json_object_del(all, "replicas");
    set(all, "components", J(FLINK_COMPONENTS));
    expect(snap, all, NULL, "a-cpu:0,b-pods:0,c-fit:0");
    fl_sched_snapshot_free(snap);

    /* no cluster holds a set: the selection fails, spec.clusters is kept */
    json_t *small[] = {mk("a-cpu", 100), mk("b-pods", 2)};
    set(small[0], "status.resourceSummary.allocatable.memory", json_string("5Gi"));
    snap = snap_of(small, 2);
    fl_sched_result *r = run(snap, sp, NULL);
    assert_int_equal(r->outcome, FL_SCHED_ERROR);
    assert_false(r->update_clusters);
    assert_string_equal(r->message, "failed to select clusters: no enough resource when selecting 1 clusters");
    fl_sched_result_free(r);

    /* a component's bad quantity is named */
    set(sp, "components", J("[{\"name\":\"a\",\"replicas\":1},{\"name\":\"b\",\"replicas\":1,"
                            "\"replicaRequirements\":{\"resourceRequest\":{\"cpu\":\"lots\"}}}]"));
    assert_einval(snap, json_incref(sp), NULL, "spec.components[1].replicaRequirements.resourceRequest.cpu");
    set(sp, "components", J("[{\"name\":\"a\",\"replicas\":-1}]"));
    assert_einval(snap, sp, NULL, "spec.components[0].replicas");
    fl_sched_snapshot_free(snap);
}

/* -------------------------------------------------------------- division -- */

static void test_static_weights_and_remainders(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:100,b:100,c:100");
    expect(snap, static_spec(6, "a=1,b=2"), NULL, "a:2,b:4");
    /* Webster's rounding: 9 at 1:3 is 2:7 (as upstream's own example) */
    expect(snap, static_spec(9, "a=1,b=3"), NULL, "a:2,b:7");
    /* remainder tie: equal priority and seats -> names ascending without a uid */
    expect(snap, static_spec(10, "a=1,b=1,c=1"), NULL, "a:4,b:3,c:3");
    expect(snap, static_spec(2, "a=1,b=1,c=1"), NULL, "a:1,b:1");
    /* weight 0 (not listed) gets nothing; a cluster matched by two rules takes the larger */
    json_t *sp = static_spec(8, "a=1,b=1");
    json_array_append_new(json_object_get(json_object_get(json_object_get(json_object_get(sp, "placement"),
                                                                          "replicaScheduling"), "weightPreference"),
                                          "staticWeightList"),
                          J("{\"targetCluster\":{\"clusterNames\":[\"b\",\"x\"]},\"weight\":3}"));
    expect(snap, sp, NULL, "a:2,b:6");
    /* nobody matched: everyone weighs 1 */
    expect(snap, static_spec(3, "zz=5"), NULL, "a:1,b:1,c:1");
    /* Weighted without a weightPreference: equal weights */
    expect(snap, spec(7, DIVIDED_EQUAL), NULL, "a:3,b:2,c:2");
    /* replicaScheduling present with nothing set: Divided + Weighted by default */
    expect(snap, spec(4, "{\"replicaScheduling\":{}}"), NULL, "a:2,b:1,c:1");
    fl_sched_snapshot_free(snap);
}

static uint32_t fnv(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void test_remainder_tie_break_follows_the_uid_and_is_deterministic(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:100,b:100,c:100");
    char odd[32] = "", even[32] = "";
    for (int i = 0; !*odd || !*even; i++) {
        char u[32];
        snprintf(u, sizeof u, "uid-%d", i);
        strcpy(fnv(u) & 1 ? odd : even, u);
    }
    for (int round = 0; round < 3; round++) {
        json_t *sp = static_spec(10, "a=1,b=1,c=1");
        set(sp, "resource.uid", json_string(odd));
        expect(snap, sp, NULL, "a:3,b:3,c:4");
        sp = static_spec(10, "a=1,b=1,c=1");
        set(sp, "resource.uid", json_string(even));
        expect(snap, sp, NULL, "a:4,b:3,c:3");
    }
    fl_sched_snapshot_free(snap);
}

/* The plain seat-by-seat Webster loop, to check the jump-started one against. */
static void naive_webster(const int64_t *v, const uint32_t *idx, size_t n, int64_t seats, bool desc, int64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= v[i] > 0;
    if (!any)
        return;
    for (; seats > 0; seats--) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++) {
            double pi = (double)v[i] / (double)(2 * out[i] + 1), pb = (double)v[best] / (double)(2 * out[best] + 1);
            bool better = pi != pb ? pi > pb : out[i] != out[best] ? out[i] < out[best]
                                                                 : (desc ? idx[i] > idx[best] : idx[i] < idx[best]);
            if (better)
                best = i;
        }
        out[best]++;
    }
}

static void test_webster_jump_start_matches_the_seat_by_seat_loop(void **state)
{
    (void)state;
    srand(7);
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + (size_t)(rand() % 12);
        int64_t v[12];
        uint32_t idx[12];
        for (size_t i = 0; i < n; i++) {
            v[i] = round % 3 == 0 ? 1 + rand() % 3 : rand() % 1000; /* many ties, some zeros */
            idx[i] = (uint32_t)((i * 7) % 13);
        }
        int64_t seats = rand() % 5000;
        bool desc = round & 1;
        int64_t a[12], b[12];
        fl_sched_webster(v, idx, n, seats, desc, a);
        naive_webster(v, idx, n, seats, desc, b);
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                fail_msg("round %d party %zu: %lld != %lld", round, i, (long long)a[i], (long long)b[i]);
    }
}

static void test_dynamic_weights_by_available_replicas(void **state)
{
    (void)state;
    /* upstream's documented example: available 6/12/18, 12 replicas -> 2/4/6 */
    fl_sched_snapshot *snap = snap_list("A:6,B:12,C:18");
    expect(snap, spec(12, DYNAMIC), NULL, "A:2,B:4,C:6");
    /* all capacity is used when needed */
    expect(snap, spec(36, DYNAMIC), NULL, "A:6,B:12,C:18");
    fl_sched_result *r = run1(snap, spec(37, DYNAMIC), NULL);
    assert_int_equal(r->outcome, FL_SCHED_UNSCHEDULABLE);
    assert_string_equal(r->message, "failed to assign replicas: failed to scale up: Clusters available replicas 36 are "
                                    "not enough to schedule.");
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);
}

static void test_aggregated_uses_the_fewest_clusters(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:3,b:10,c:5");
    /* b alone holds 8 */
    expect(snap, spec(8, AGGREGATED), NULL, "b:8");
    /* 12 needs b and c; divided 10:5 -> 8:4 */
    expect(snap, spec(12, AGGREGATED), NULL, "b:8,c:4");
    /* scale up from b:8: the new replicas go to the cluster already running it first */
    json_t *sp = spec(10, AGGREGATED);
    set_prev(sp, "b:8");
    expect(snap, sp, NULL, "b:10");
    fl_sched_snapshot_free(snap);
}

static void test_zero_replicas_and_kinds_without_replicas(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("m1:0,m2:0");
    /* no replicas, no requirements: the cluster list (no capacity needed) */
    expect(snap, spec(0, DYNAMIC), NULL, "m1:0,m2:0");
    expect(snap, spec(0, DUP), NULL, "m1:0,m2:0");
    /* a workload scaled to 0 (requirements known): upstream drops every cluster ... */
    json_t *sp = spec(0, DUP);
    set(sp, "replicaRequirements", J("{\"resourceRequest\":{\"cpu\":\"1\"}}"));
    fl_sched_result *r = run(snap, sp, NULL);
    assert_success(r, "");
    fl_sched_result_free(r);
    /* ... unless empty workload propagation is on */
    fl_sched_opts o = {.empty_workload_propagation = true};
    r = run_opts(snap, sp, NULL, &o);
    assert_success(r, "m1:0,m2:0");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

/* ------------------------------------------------------ steady rescheduling -- */

static void test_static_weight_change_moves_one_replica(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:100,b:100");
    json_t *sp = static_spec(6, "a=1,b=2");
    fl_sched_result *r = run(snap, sp, NULL);
    assert_success(r, "a:2,b:4");
    char before[64];
    snprintf(before, sizeof before, "%s", targets(r));
    fl_sched_result_free(r);
    json_decref(sp);
    sp = static_spec(6, "a=1,b=1");
    set_prev(sp, before);
    r = run(snap, sp, NULL);
    assert_success(r, "a:3,b:3");
    assert_int_equal(moved(before, targets(r)), 1);
    fl_sched_result_free(r);
    json_decref(sp);
    /* static scale up only adds (Webster is house-monotone) */
    for (int n = 6; n < 40; n++) {
        json_t *s1 = static_spec(n, "a=2,b=3"), *s2 = static_spec(n + 1, "a=2,b=3");
        fl_sched_result *r1 = run(snap, s1, NULL), *r2 = run(snap, s2, NULL);
        char t1[64];
        snprintf(t1, sizeof t1, "%s", targets(r1));
        assert_int_equal(moved(t1, targets(r2)), 0);
        fl_sched_result_free(r1);
        fl_sched_result_free(r2);
        json_decref(s1);
        json_decref(s2);
    }
    fl_sched_snapshot_free(snap);
}

static void test_dynamic_scale_up_keeps_what_runs(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:10,b:10,c:40");
    /* first schedule: 10:10:40 for 6 -> 1:1:4 */
    expect(snap, spec(6, DYNAMIC), NULL, "a:1,b:1,c:4");
    /* from a:3,b:3 (not what a fresh division would give), +6: only the 6 new ones move */
    json_t *sp = spec(12, DYNAMIC);
    set_prev(sp, "a:3,b:3");
    fl_sched_result *r = run(snap, sp, NULL);
    assert_int_equal(moved("a:3,b:3", targets(r)), 0);
    /* the 6 new go 10:10:40 -> 1:1:4 on top; a and b advertise their free room (10)
     * plus what they run as available, but the increment is divided by free room */
    assert_success(r, "a:4,b:4,c:4");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

static void test_dynamic_scale_down_shrinks_in_proportion(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:100,b:100,c:100");
    json_t *sp = spec(3, DYNAMIC);
    set_prev(sp, "a:2,b:4");
    expect(snap, sp, NULL, "a:1,b:2");
    /* equal: nothing moves, even though c is empty */
    sp = spec(6, DYNAMIC);
    set_prev(sp, "a:2,b:4");
    expect(snap, sp, NULL, "a:2,b:4");
    /* Aggregated scale down keeps the biggest */
    sp = spec(4, AGGREGATED);
    set_prev(sp, "a:2,b:4");
    expect(snap, sp, NULL, "b:4");
    fl_sched_snapshot_free(snap);
}

static void test_cluster_leaves_and_joins(void **state)
{
    (void)state;
    /* b left: its 3 replicas are scaled up elsewhere; a keeps its 3 */
    fl_sched_snapshot *snap = snap_list("a:10,c:10");
    json_t *sp = spec(6, DYNAMIC);
    set_prev(sp, "a:3,b:3");
    fl_sched_result *r = run(snap, sp, NULL);
    assert_success(r, "a:5,c:1");
    assert_int_equal(moved("a:3", targets(r)), 0);
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);

    /* c joined: steady, nothing moves */
    snap = snap_list("a:10,b:10,c:1000");
    sp = spec(6, DYNAMIC);
    set_prev(sp, "a:3,b:3");
    expect(snap, sp, NULL, "a:3,b:3");
    /* static weights are recomputed: the newcomer gets its share */
    sp = static_spec(6, "a=1,b=1,c=1");
    set_prev(sp, "a:3,b:3");
    expect(snap, sp, NULL, "a:2,b:2,c:2");
    fl_sched_snapshot_free(snap);
}

static void test_requested_reschedule_divides_afresh(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:10,b:10,c:10");
    json_t *sp = spec(6, DYNAMIC);
    set_prev(sp, "a:6");
    set(sp, "rescheduleTriggeredAt", json_string("2024-05-01T10:00:01Z"));
    /* triggered after the last schedule: fresh, weights = free + running = 16:10:10 */
    expect(snap, json_incref(sp), "{\"lastScheduledTime\":\"2024-05-01T10:00:00Z\"}", "a:2,b:2,c:2");
    /* already served (older than the last schedule): steady */
    expect(snap, json_incref(sp), "{\"lastScheduledTime\":\"2024-05-01T12:00:00+01:00\"}", "a:6");
    /* fractional seconds count */
    expect(snap, json_incref(sp), "{\"lastScheduledTime\":\"2024-05-01T10:00:00.5Z\"}", "a:2,b:2,c:2");
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

/* ---------------------------------------------------------------- spread -- */

static void test_spread_by_cluster_min_and_max_groups(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("m1:10,m2:40,m3:20,m4:30");
    /* Duplicated: the best two by available replicas, capacity ignored */
    expect(snap, spec(100, "{\"spreadConstraints\":[{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":2}]}"),
           NULL, "m2:100,m4:100");
    /* minGroups above the feasible count: SchedulerError, clusters kept */
    fl_sched_result *r =
        run1(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"cluster\",\"minGroups\":5,\"maxGroups\":6}]}"),
            NULL);
    assert_int_equal(r->outcome, FL_SCHED_ERROR);
    assert_string_equal(r->reason, "SchedulerError");
    assert_false(r->update_clusters);
    assert_string_equal(r->message, "failed to select clusters: the number of feasible clusters is less than "
                                    "spreadConstraint.MinGroups");
    fl_sched_result_free(r);
    /* an empty spreadByField means cluster, and minGroups defaults to 1 */
    expect(snap, spec(1, "{\"spreadConstraints\":[{\"maxGroups\":1}]}"), NULL, "m2:1");
    /* unset maxGroups selects nothing, as upstream */
    r = run1(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"cluster\",\"minGroups\":1}]}"), NULL);
    assert_int_equal(r->outcome, FL_SCHED_ERROR);
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);
}

static void test_spread_by_cluster_swaps_in_capacity(void **state)
{
    (void)state;
    /* upstream's example: two clusters for 80 replicas; m1 and m2 score highest (both
     * already scheduled) but hold 40+30 < 80, so m2 is swapped for m3 (60) */
    fl_sched_snapshot *snap = snap_list("m1:38,m2:28,m3:60");
    json_t *sp = spec(80, "{\"spreadConstraints\":[{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":2}],"
                          "\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\","
                          "\"replicaDivisionPreference\":\"Weighted\",\"weightPreference\":{\"dynamicWeight\":"
                          "\"AvailableReplicas\"}}}");
    set_prev(sp, "m1:2,m2:2");
    fl_sched_result *r = run(snap, sp, NULL);
    /* m1 and m3 selected; m2's 2 replicas are freed and 76 more divided 38:60 on m1, m3 */
    assert_int_equal(r->outcome, FL_SCHED_SUCCESS);
    assert_null(strstr(targets(r), "m2"));
    assert_non_null(strstr(targets(r), "m3"));
    int sum = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        sum += r->targets[i].replicas;
    assert_int_equal(sum, 80);
    fl_sched_result_free(r);
    /* not enough anywhere */
    set(sp, "replicas", json_integer(200));
    r = run(snap, sp, NULL);
    assert_int_equal(r->outcome, FL_SCHED_ERROR);
    assert_string_equal(r->message, "failed to select clusters: no enough resource when selecting 2 clusters");
    fl_sched_result_free(r);
    json_decref(sp);
    fl_sched_snapshot_free(snap);
}

static fl_sched_snapshot *regions(void)
{
    /* eu: e1 e2 (20 each); us: u1 (5); ap: a1 a2 a3 (10 each) */
    const char *names[] = {"e1", "e2", "u1", "a1", "a2", "a3"};
    const char *reg[] = {"eu", "eu", "us", "ap", "ap", "ap"};
    int pods[] = {20, 20, 5, 10, 10, 10};
    json_t *cs[6];
    for (int i = 0; i < 6; i++) {
        cs[i] = mk(names[i], pods[i]);
        set(cs[i], "spec.region", json_string(reg[i]));
        set(cs[i], "spec.zones", json_pack("[s]", reg[i]));
        set(cs[i], "metadata.labels.rack", json_string(reg[i]));
    }
    return snap_of(cs, 6);
}

static void test_spread_by_region_chooses_groups(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = regions();
    /* Duplicated 5 replicas: scores count clusters holding 5 -> ap 3000, eu 2000, us 1000;
     * one region, one cluster: the best of ap (a1: equal capacity, first name) */
    expect(snap, spec(5, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":1,\"maxGroups\":1},"
                         "{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":1}]}"),
           NULL, "a1:5");
    /* two regions, up to 3 clusters: ap and eu, their best, then the next best of the pool */
    expect(snap, spec(5, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":2,\"maxGroups\":2},"
                         "{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":3}]}"),
           NULL, "a1:5,e1:5,e2:5");
    /* Divided 30, dynamic: eu (20+20) and ap (10+10+10) both reach the target, so both
     * score 30*1000; the tie goes to the group with more clusters, ap */
    expect(snap, spec(30, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":1,\"maxGroups\":1},"
                          "{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":3}],\"replicaScheduling\":"
                          "{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\","
                          "\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}}"),
           NULL, "a1:10,a2:10,a3:10");
    /* more regions asked than exist */
    fl_sched_result *r =
        run1(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":4,\"maxGroups\":4},"
                          "{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":4}]}"), NULL);
    assert_int_equal(r->outcome, FL_SCHED_ERROR);
    assert_string_equal(r->message, "failed to select clusters: the number of feasible region is less than "
                                    "spreadConstraint.MinGroups");
    fl_sched_result_free(r);
    /* cluster minGroups 5 cannot be met with at most 2 regions (3 + 2 clusters = 5 can) */
    expect(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":1,\"maxGroups\":2},"
                         "{\"spreadByField\":\"cluster\",\"minGroups\":5,\"maxGroups\":5}]}"),
           NULL, "a1:1,a2:1,a3:1,e1:1,e2:1");
    r = run1(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"region\",\"minGroups\":1,\"maxGroups\":1},"
                          "{\"spreadByField\":\"cluster\",\"minGroups\":4,\"maxGroups\":4}]}"), NULL);
    assert_int_equal(r->outcome, FL_SCHED_ERROR);
    assert_string_equal(r->message, "failed to select clusters: the number of clusters is less than the cluster "
                                    "spreadConstraint.MinGroups");
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);
}

static void test_spread_by_zone_provider_and_label(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = regions();
    const char *tail = ",{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":2}]}";
    char pl[512];
    snprintf(pl, sizeof pl, "{\"spreadConstraints\":[{\"spreadByField\":\"zone\",\"minGroups\":2,\"maxGroups\":2}%s",
             tail);
    expect(snap, spec(5, pl), NULL, "a1:5,e1:5");
    snprintf(pl, sizeof pl, "{\"spreadConstraints\":[{\"spreadByLabel\":\"rack\",\"minGroups\":2,\"maxGroups\":2}%s",
             tail);
    expect(snap, spec(5, pl), NULL, "a1:5,e1:5");
    /* no provider anywhere: filtered, NoClusterFit */
    snprintf(pl, sizeof pl,
             "{\"spreadConstraints\":[{\"spreadByField\":\"provider\",\"minGroups\":1,\"maxGroups\":1}%s", tail);
    fl_sched_result *r = run1(snap, spec(5, pl), NULL);
    assert_int_equal(r->outcome, FL_SCHED_NO_CLUSTER_FIT);
    assert_string_equal(r->message, "0/6 clusters are available: 6 cluster(s) did not have provider property.");
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);

    /* a cluster in two zones is picked once */
    json_t *cs[] = {mk("both", 50), mk("z1only", 10), mk("z2only", 10)};
    set(cs[0], "spec.zones", J("[\"z1\",\"z2\"]"));
    set(cs[1], "spec.zone", json_string("z1")); /* deprecated field, folded into zones */
    set(cs[2], "spec.zones", J("[\"z2\"]"));
    snap = snap_of(cs, 3);
    expect(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"zone\",\"minGroups\":2,\"maxGroups\":2},"
                         "{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":2}]}"),
           NULL, "both:1,z2only:1");
    fl_sched_snapshot_free(snap);
}

static void test_static_weights_ignore_spread_constraints(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:10,b:10,c:10");
    json_t *sp = static_spec(6, "a=1,b=1,c=1");
    set(sp, "placement.spreadConstraints", J("[{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":1}]"));
    expect(snap, sp, NULL, "a:2,b:2,c:2");
    fl_sched_snapshot_free(snap);
}

/* ------------------------------------------------------- clusterAffinities -- */

#define TERMS                                                                                                         \
    "{\"clusterAffinities\":[{\"affinityName\":\"primary\",\"clusterNames\":[\"p1\",\"p2\"]},"                        \
    "{\"affinityName\":\"backup\",\"clusterNames\":[\"b1\"]}],"                                                       \
    "\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\","         \
    "\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}}"

static void test_cluster_affinities_fall_back_in_order(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("p1:2,p2:2,b1:50");
    /* fits the primary group */
    fl_sched_result *r = run1(snap, spec(4, TERMS), NULL);
    assert_success(r, "p1:2,p2:2");
    assert_string_equal(r->affinity_name, "primary");
    fl_sched_result_free(r);
    /* does not fit: the backup group, recorded */
    r = run1(snap, spec(10, TERMS), NULL);
    assert_success(r, "b1:10");
    assert_string_equal(r->affinity_name, "backup");
    assert_non_null(filtered(r, "p1")); /* the diagnosis of the term used */
    fl_sched_result_free(r);
    /* once on backup, a binding starts from backup (even if primary would fit now) */
    r = run1(snap, spec(4, TERMS), "{\"schedulerObservingAffinityName\":\"backup\"}");
    assert_success(r, "b1:4");
    assert_string_equal(r->affinity_name, "backup");
    fl_sched_result_free(r);
    /* ... unless a reschedule is requested: from the first term again */
    json_t *sp = spec(4, TERMS);
    set(sp, "rescheduleTriggeredAt", json_string("2024-01-01T00:00:10Z"));
    r = run(snap, sp, "{\"schedulerObservingAffinityName\":\"backup\",\"lastScheduledTime\":\"2024-01-01T00:00:00Z\"}");
    assert_success(r, "p1:2,p2:2");
    assert_string_equal(r->affinity_name, "primary");
    fl_sched_result_free(r);
    json_decref(sp);
    /* every term fails: the first failure, the recorded name kept, spec.clusters kept */
    r = run1(snap, spec(100, TERMS), "{\"schedulerObservingAffinityName\":\"primary\"}");
    assert_int_equal(r->outcome, FL_SCHED_UNSCHEDULABLE);
    assert_false(r->update_clusters);
    assert_string_equal(r->affinity_name, "primary");
    assert_string_equal(r->message, "failed to assign replicas: failed to scale up: Clusters available replicas 4 are "
                                    "not enough to schedule.");
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);

    /* the first failure is NoClusterFit: spec.clusters is cleared */
    snap = snap_list("b1:1");
    r = run1(snap, spec(10, TERMS), NULL);
    assert_int_equal(r->outcome, FL_SCHED_NO_CLUSTER_FIT);
    assert_true(r->update_clusters);
    assert_int_equal(r->ntargets, 0);
    assert_null(r->affinity_name);
    fl_sched_result_free(r);
    fl_sched_snapshot_free(snap);
}

static void test_overflow_affinities_fill_tiers_in_order(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("p1:3,o1:10,o2:10,x:100");
    const char *pl = "{\"clusterAffinities\":[{\"affinityName\":\"main\",\"clusterNames\":[\"p1\"],"
                     "\"overflowAffinities\":[{\"affinityName\":\"burst\",\"clusterNames\":[\"o1\",\"o2\"]}]}],"
                     "\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":"
                     "\"Weighted\",\"weightPreference\":{\"dynamicWeight\":\"AvailableReplicas\"}}}";
    expect(snap, spec(2, pl), NULL, "p1:2");
    /* 3 fit the primary tier; the other 4 overflow, divided 10:10 */
    expect(snap, spec(7, pl), NULL, "o1:2,o2:2,p1:3");
    fl_sched_result *r = run1(snap, spec(30, pl), NULL);
    assert_int_equal(r->outcome, FL_SCHED_UNSCHEDULABLE);
    assert_string_equal(r->message, "failed to assign replicas: Clusters available replicas are not enough to "
                                    "schedule.");
    fl_sched_result_free(r);
    /* non-workloads use the primary group only */
    json_t *sp = spec(0, pl);
    set(sp, "resource", J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"c\"}"));
    expect(snap, sp, NULL, "p1:0");
    fl_sched_snapshot_free(snap);
}

/* --------------------------------------------------------- malformed input -- */

static void test_malformed_input_names_the_field(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("m1:10");
    assert_einval(snap, spec(1, "{\"replicaScheduling\":{\"replicaSchedulingType\":\"Spread\"}}"), NULL,
                  "spec.placement.replicaScheduling.replicaSchedulingType");
    assert_einval(snap, spec(1, "{\"replicaScheduling\":{\"replicaDivisionPreference\":7}}"), NULL,
                  "spec.placement.replicaScheduling.replicaDivisionPreference");
    assert_einval(snap, spec(1, "{\"replicaScheduling\":{\"weightPreference\":{\"dynamicWeight\":\"Cost\"}}}"), NULL,
                  "spec.placement.replicaScheduling.weightPreference.dynamicWeight");
    assert_einval(snap, static_spec(1, "m1=0"), NULL,
                  "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight");
    assert_einval(snap, spec(1, "{\"replicaScheduling\":{\"weightPreference\":{\"staticWeightList\":[{\"weight\":1,"
                                "\"targetCluster\":{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"a\","
                                "\"operator\":\"Near\"}]}}}]}}}"), NULL,
                  "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].targetCluster.labelSelector");
    assert_einval(snap, spec(1, "{\"clusterAffinity\":{\"clusterNames\":\"m1\"}}"), NULL,
                  "spec.placement.clusterAffinity.clusterNames");
    assert_einval(snap, spec(1, "{\"clusterAffinity\":[]}"), NULL, "spec.placement.clusterAffinity");
    assert_einval(snap, spec(1, "{\"clusterAffinities\":[{\"clusterNames\":[\"m1\"]}]}"), NULL,
                  "spec.placement.clusterAffinities[0].affinityName");
    assert_einval(snap,
                  spec(1, "{\"clusterAffinities\":[{\"affinityName\":\"a\",\"fieldSelector\":{\"matchExpressions\":"
                          "[{\"key\":\"planet\",\"operator\":\"In\",\"values\":[\"x\"]}]}}]}"),
                  NULL, "spec.placement.clusterAffinities[0].fieldSelector");
    assert_einval(snap, spec(1, "{\"clusterAffinities\":[{\"affinityName\":\"a\",\"overflowAffinities\":[{}]}]}"), NULL,
                  "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName");
    assert_einval(snap, spec(1, "{\"clusterAffinity\":{},\"clusterAffinities\":[{\"affinityName\":\"a\"}]}"), NULL,
                  "clusterAffinities can not co-exist with clusterAffinity");
    assert_einval(snap, spec(1, "{\"clusterTolerations\":[{\"key\":\"k\"},{\"operator\":\"Maybe\"}]}"), NULL,
                  "spec.placement.clusterTolerations[1].operator");
    assert_einval(snap, spec(1, "{\"clusterTolerations\":[{\"effect\":\"Never\"}]}"), NULL,
                  "spec.placement.clusterTolerations[0].effect");
    assert_einval(snap, spec(1, "{\"clusterTolerations\":{}}"), NULL, "spec.placement.clusterTolerations");
    assert_einval(snap, spec(1, "{\"spreadConstraints\":[{\"maxGroups\":-1}]}"), NULL,
                  "spec.placement.spreadConstraints[0].maxGroups");
    assert_einval(snap, spec(1, "{\"spreadConstraints\":[{\"minGroups\":3,\"maxGroups\":2}]}"), NULL,
                  "spec.placement.spreadConstraints[0]: maxGroups lower than minGroups");
    assert_einval(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"planet\"}]}"), NULL,
                  "spec.placement.spreadConstraints[0].spreadByField");
    assert_einval(snap, spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"zone\",\"spreadByLabel\":\"x\"}]}"), NULL,
                  "spreadByLabel should not co-exist with spreadByField");
    assert_einval(snap, spec(1, "{\"spreadConstraints\":[{},{\"spreadByField\":\"cluster\"}]}"), NULL,
                  "multiple cluster spread constraints");

    json_t *sp = spec(1, DUP);
    json_object_del(sp, "placement");
    assert_einval(snap, sp, NULL, "spec.placement");
    sp = spec(1, DUP);
    set(sp, "replicas", json_string("3"));
    assert_einval(snap, sp, NULL, "spec.replicas");
    sp = spec(1, DUP);
    set(sp, "replicaRequirements", J("{\"resourceRequest\":{\"cpu\":\"one\"}}"));
    assert_einval(snap, sp, NULL, "spec.replicaRequirements.resourceRequest.cpu");
    sp = spec(1, DUP);
    set(sp, "clusters", J("[{\"name\":\"m1\",\"replicas\":1},{\"name\":\"m1\",\"replicas\":2}]"));
    assert_einval(snap, sp, NULL, "spec.clusters[1].name");
    sp = spec(1, DUP);
    set(sp, "clusters", J("[{\"replicas\":1}]"));
    assert_einval(snap, sp, NULL, "spec.clusters[0].name");
    sp = spec(1, DUP);
    set(sp, "gracefulEvictionTasks", J("[{\"fromCluster\":3}]"));
    assert_einval(snap, sp, NULL, "spec.gracefulEvictionTasks[0].fromCluster");
    sp = spec(1, DUP);
    set(sp, "rescheduleTriggeredAt", json_string("yesterday"));
    assert_einval(snap, sp, NULL, "spec.rescheduleTriggeredAt");
    sp = spec(1, DUP);
    json_object_del(json_object_get(sp, "resource"), "kind");
    assert_einval(snap, sp, NULL, "spec.resource");
    assert_einval(snap, spec(1, DUP), "{\"schedulerObservingAffinityName\":5}",
                  "status.schedulerObservingAffinityName");
    assert_einval(snap, J("[]"), NULL, "spec");
    fl_sched_snapshot_free(snap);
}

static int cmp_ranked(const void *a, const void *b)
{
    const int *x = a, *y = b; /* {pods, index}: pods desc, then name (index) asc */
    if (x[0] != y[0])
        return x[0] > y[0] ? -1 : 1;
    return x[1] - y[1];
}

static void test_candidate_order_is_score_then_available_then_name(void **state)
{
    (void)state;
    /* 300 clusters with many equal capacities; the best 20 by (already scheduled first,
     * available replicas desc, name asc) must be chosen, computed here independently */
    enum { N = 300, K = 20 };
    json_t *cs[N];
    int ranked[N][2];
    srand(11);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%03d", i);
        int pods = rand() % 40;
        cs[i] = mk(name, pods);
        ranked[i][0] = pods;
        ranked[i][1] = i;
    }
    fl_sched_snapshot *snap = snap_of(cs, N);
    /* c299 is already scheduled (score 100): it comes first whatever its capacity */
    ranked[N - 1][0] = 1 << 20;
    qsort(ranked, N, sizeof ranked[0], cmp_ranked);
    char want[1024] = "";
    int names[K];
    for (int i = 0; i < K; i++)
        names[i] = ranked[i][1];
    for (int i = 0; i < K; i++) /* expected targets are listed by name */
        for (int j = i + 1; j < K; j++)
            if (names[j] < names[i]) {
                int t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (int i = 0, off = 0; i < K; i++)
        off += snprintf(want + off, sizeof want - (size_t)off, "%sc%03d:1", i ? "," : "", names[i]);
    json_t *sp = spec(1, "{\"spreadConstraints\":[{\"spreadByField\":\"cluster\",\"minGroups\":1,\"maxGroups\":20}]}");
    set_prev(sp, "c299:1");
    expect(snap, sp, NULL, want);
    fl_sched_snapshot_free(snap);
}

static void test_affinity_memo_overflow_keeps_results_right(void **state)
{
    (void)state;
    /* more distinct affinities than the memo holds: later ones are evaluated per decision */
    fl_sched_snapshot *snap = snap_list("m0:1,m1:1,m2:1,m3:1");
    for (int i = 0; i < FL_SCHED_MEMO_MAX + 50; i++) {
        char pl[160], want[16];
        snprintf(pl, sizeof pl, "{\"clusterAffinity\":{\"clusterNames\":[\"m%d\",\"pad-%d\"]}}", i % 4, i);
        snprintf(want, sizeof want, "m%d:1", i % 4);
        fl_sched_result *r = run1(snap, spec(1, pl), NULL);
        if (r->ntargets != 1 || strcmp(targets(r), want))
            fail_msg("affinity %d: got %s, want %s", i, targets(r), want);
        fl_sched_result_free(r);
    }
    /* memoized ones still answer from the memo */
    expect(snap, spec(1, "{\"clusterAffinity\":{\"clusterNames\":[\"m1\",\"pad-1\"]}}"), NULL, "m1:1");
    fl_sched_snapshot_free(snap);
}

/* ------------------------------------------------------------- threading -- */

struct worker {
    fl_sched_snapshot *snap;
    json_t *spec;
    char want[256];
    int bad;
    int id;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 300; i++) {
        fl_sched_result *r = NULL;
        char *err = NULL;
        char got[256];
        if (fl_sched_run(w->snap, w->spec, NULL, NULL, &r, &err) != 0 ||
            strcmp(targets_into(r, got, sizeof got), w->want))
            w->bad++;
        fl_sched_result_free(r);
        free(err);
        /* and a stream of new affinities, so both threads insert into the memo at once */
        json_t *sp = json_pack("{s:{s:s,s:s,s:s},s:i,s:{s:{s:[s,s]}}}", "resource", "apiVersion", "apps/v1", "kind",
                               "Deployment", "name", "w", "replicas", 1, "placement", "clusterAffinity",
                               "clusterNames", "b", i % 2 ? "t0" : "t1");
        char extra[32];
        snprintf(extra, sizeof extra, "x-%d-%d", w->id, i);
        json_array_append_new(json_object_get(json_object_get(json_object_get(sp, "placement"), "clusterAffinity"),
                                              "clusterNames"), json_string(extra));
        if (fl_sched_run(w->snap, sp, NULL, NULL, &r, &err) != 0 || strcmp(targets_into(r, got, sizeof got), "b:1"))
            w->bad++;
        fl_sched_result_free(r);
        free(err);
        json_decref(sp);
    }
    return NULL;
}

static void test_concurrent_decisions_share_a_snapshot(void **state)
{
    (void)state;
    fl_sched_snapshot *snap = snap_list("a:6,b:12,c:18,d:0");
    struct worker w[2] = {{snap, spec(12, DYNAMIC), "", 0, 0}, {snap, static_spec(6, "a=1,b=2"), "", 0, 1}};
    pthread_t t[2];
    strcpy(w[0].want, "a:2,b:4,c:6");
    strcpy(w[1].want, "a:2,b:4");
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(w[i].bad, 0);
        json_decref(w[i].spec);
    }
    fl_sched_snapshot_free(snap);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_sorts_by_name_and_marks_invalid_clusters),
        cmocka_unit_test(test_result_outlives_the_snapshot_reference),
        cmocka_unit_test(test_duplicated_gives_every_cluster_all_replicas),
        cmocka_unit_test(test_cluster_affinity_names_labels_fields_and_exclude),
        cmocka_unit_test(test_taints_and_tolerations),
        cmocka_unit_test(test_one_toleration_matches_one_taint_as_the_filter_does),
        cmocka_unit_test(test_api_enablement_and_template_kind),
        cmocka_unit_test(test_eviction_and_deleting_clusters_are_excluded),
        cmocka_unit_test(test_no_cluster_fit_histogram_is_sorted_as_strings),
        cmocka_unit_test(test_estimator_reads_the_resource_summary),
        cmocka_unit_test(test_multi_component_workload_goes_where_every_component_fits),
        cmocka_unit_test(test_static_weights_and_remainders),
        cmocka_unit_test(test_remainder_tie_break_follows_the_uid_and_is_deterministic),
        cmocka_unit_test(test_webster_jump_start_matches_the_seat_by_seat_loop),
        cmocka_unit_test(test_dynamic_weights_by_available_replicas),
        cmocka_unit_test(test_aggregated_uses_the_fewest_clusters),
        cmocka_unit_test(test_zero_replicas_and_kinds_without_replicas),
        cmocka_unit_test(test_static_weight_change_moves_one_replica),
        cmocka_unit_test(test_dynamic_scale_up_keeps_what_runs),
        cmocka_unit_test(test_dynamic_scale_down_shrinks_in_proportion),
        cmocka_unit_test(test_cluster_leaves_and_joins),
        cmocka_unit_test(test_requested_reschedule_divides_afresh),
        cmocka_unit_test(test_spread_by_cluster_min_and_max_groups),
        cmocka_unit_test(test_spread_by_cluster_swaps_in_capacity),
        cmocka_unit_test(test_spread_by_region_chooses_groups),
        cmocka_unit_test(test_spread_by_zone_provider_and_label),
        cmocka_unit_test(test_static_weights_ignore_spread_constraints),
        cmocka_unit_test(test_cluster_affinities_fall_back_in_order),
        cmocka_unit_test(test_overflow_affinities_fill_tiers_in_order),
        cmocka_unit_test(test_malformed_input_names_the_field),
        cmocka_unit_test(test_candidate_order_is_score_then_available_then_name),
        cmocka_unit_test(test_affinity_memo_overflow_keeps_results_right),
        cmocka_unit_test(test_concurrent_decisions_share_a_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
