/* test_sim.c - the workload simulator of simulated member clusters (src/member/sim.c).
 *
 * Each test builds a member cluster the way `flotilla member` does: the kind table, a
 * SQLite store in a temporary directory (no fsync), an in-process fl_api and the
 * "default" namespace created through fl_api_handle. Objects are written through the
 * API as a client would; the simulator's effects are read back from the store. Timing is
 * made short with the simulator's configuration (fast ticks, 1-second Jobs, a 1-second
 * progress deadline) and every wait is bounded: WAIT_UNTIL fails the test instead of
 * hanging it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/kinds.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "member/sim.h"
#include "store/store.h"

#include "testapi.h"
#include "testutil.h"

/* ---- fixture: one member cluster's API in this process ---- */

typedef struct cluster {
    char dir[64];
    fl_store *store;
    fl_api api;
} cluster;

typedef struct fixture {
    cluster c[2];
    fl_sim *sim;
} fixture;

static int call(cluster *c, const char *method, const char *path, const char *ctype, const char *body)
{
    return test_api_request(&c->api, method, path, ctype, body);
}

static void cluster_open(cluster *c)
{
    strcpy(c->dir, "/tmp/fl_sim_XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    char path[128];
    snprintf(path, sizeof path, "%s/db", c->dir);
    fl_store_config sc = {.path = path, .durable = false};
    assert_int_equal(fl_store_open(&sc, &c->store), 0);
    memset(&c->api, 0, sizeof c->api);
    c->api.store = c->store;
    c->api.bookmark_interval_ms = 60000;
    assert_int_equal(call(c, "POST", "/api/v1/namespaces", "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}"),
                     201);
}

static void cluster_close(cluster *c)
{
    if (!c->store)
        return;
    fl_store_free(c->store);
    c->store = NULL;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    if (system(cmd) != 0)
        print_message("could not remove %s\n", c->dir);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    cluster_open(&f->c[0]);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_sim_free(f->sim); /* before the stores it reads */
    cluster_close(&f->c[0]);
    cluster_close(&f->c[1]);
    free(f);
    return 0;
}

/* Start a simulator on cluster 0 with fast ticks; cfg fields left 0 keep their defaults. */
static void start_sim(fixture *f, fl_sim_config cfg)
{
    if (!cfg.tick_ms)
        cfg.tick_ms = 10;
    f->sim = fl_sim_new(&cfg);
    assert_int_equal(fl_sim_add_cluster(f->sim, "m1", &f->c[0].api), 0);
}

/* The stored object at key (new reference) or NULL. */
static json_t *get(cluster *c, const char *key)
{
    fl_kv kv;
    if (fl_store_get(c->store, key, &kv) != 0)
        return NULL;
    json_t *o = fl_json_load(kv.value->data, kv.value->len);
    fl_blob_unref(kv.value);
    return o;
}

/* Integer at a dotted path of the stored object, or -1 when the object or field is absent. */
static long long geti(cluster *c, const char *key, const char *path)
{
    json_t *o = get(c, key);
    json_t *v = o;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    long long r = json_is_integer(v) ? (long long)json_integer_value(v) : -1;
    json_decref(o);
    return r;
}

/* String at a dotted path (copied into a static buffer), "" when absent. */
static const char *gets_(cluster *c, const char *key, const char *path)
{
    static char out[512];
    json_t *o = get(c, key);
    json_t *v = o;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    snprintf(out, sizeof out, "%s", json_is_string(v) ? json_string_value(v) : "");
    json_decref(o);
    return out;
}

/* "status|reason" of condition `type` in status.conditions, "" when absent. */
static const char *cond(cluster *c, const char *key, const char *type)
{
    static char out[256];
    out[0] = 0;
    json_t *o = get(c, key);
    size_t i;
    json_t *cd;
    json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, cd) {
        if (!strcmp(json_string_value(json_object_get(cd, "type")), type)) {
            const char *r = json_string_value(json_object_get(cd, "reason"));
            snprintf(out, sizeof out, "%s|%s", json_string_value(json_object_get(cd, "status")), r ? r : "");
        }
    }
    json_decref(o);
    return out;
}

static void create_deployment(cluster *c, const char *name, int replicas, const char *image)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"replicas\":%d,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
             "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"image\":\"%s\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}]}}}}",
             name, replicas, name, name, image);
    assert_int_equal(call(c, "POST", "/apis/apps/v1/namespaces/default/deployments", "application/json", body), 201);
}

static void scale(cluster *c, const char *name, int replicas)
{
    char path[256], body[128];
    snprintf(path, sizeof path, "/apis/apps/v1/namespaces/default/deployments/%s", name);
    snprintf(body, sizeof body, "{\"spec\":{\"replicas\":%d}}", replicas);
    assert_int_equal(call(c, "PATCH", path, "application/merge-patch+json", body), 200);
}

#define DEPLOY(n) "/apps/deployments/default/" n

/* ---- tests ---- */

static void test_deployment_becomes_ready_replica_by_replica(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.ready_per_second = 10});
    create_deployment(c, "web", 5, "nginx:1.27");

    /* watch readyReplicas climb: some value strictly between 0 and 5 must show up */
    bool seen_between = false;
    int64_t until = now_ms() + 5000;
    long long ready = -1;
    while (now_ms() < until) {
        ready = geti(c, DEPLOY("web"), "status.readyReplicas");
        if (ready > 0 && ready < 5)
            seen_between = true;
        if (ready == 5)
            break;
        sleep_ms(5);
    }
    assert_true(seen_between);
    assert_int_equal(ready, 5);
    WAIT_UNTIL(!strcmp(cond(c, DEPLOY("web"), "Progressing"), "True|NewReplicaSetAvailable"), 1000);
    assert_string_equal(cond(c, DEPLOY("web"), "Available"), "True|MinimumReplicasAvailable");
    assert_int_equal(geti(c, DEPLOY("web"), "status.availableReplicas"), 5);
    assert_int_equal(geti(c, DEPLOY("web"), "status.updatedReplicas"), 5);
    assert_int_equal(geti(c, DEPLOY("web"), "status.unavailableReplicas"), -1);
    assert_int_equal(geti(c, DEPLOY("web"), "status.observedGeneration"), 1);

    /* scale up: a new generation, observed, and growing again */
    scale(c, "web", 8);
    assert_int_equal(geti(c, DEPLOY("web"), "metadata.generation"), 2);
    WAIT_UNTIL(geti(c, DEPLOY("web"), "status.observedGeneration") == 2, 1000);
    assert_int_equal(geti(c, DEPLOY("web"), "status.replicas"), 8);
    WAIT_UNTIL(geti(c, DEPLOY("web"), "status.readyReplicas") == 8, 3000);

    /* scale down: at once */
    scale(c, "web", 2);
    WAIT_UNTIL(geti(c, DEPLOY("web"), "status.observedGeneration") == 3, 1000);
    assert_int_equal(geti(c, DEPLOY("web"), "status.readyReplicas"), 2);
    assert_int_equal(geti(c, DEPLOY("web"), "status.replicas"), 2);

    /* the simulator's writes carry its field manager */
    json_t *o = get(c, DEPLOY("web"));
    char *s = fl_json_dumps(o, NULL);
    assert_non_null(strstr(s, FL_SIM_FIELD_MANAGER));
    free(s);
    json_decref(o);
}

static void test_fake_image_never_ready_and_misses_its_deadline(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.ready_per_second = 100, .progress_deadline_override_s = 1});
    create_deployment(c, "broken", 2, "fake/nginx:1.0");
    WAIT_UNTIL(geti(c, DEPLOY("broken"), "status.observedGeneration") == 1, 1000);
    assert_string_equal(cond(c, DEPLOY("broken"), "Available"), "False|MinimumReplicasUnavailable");
    assert_string_equal(cond(c, DEPLOY("broken"), "Progressing"), "True|ReplicaSetUpdated");
    assert_int_equal(geti(c, DEPLOY("broken"), "status.unavailableReplicas"), 2);
    /* at 100 replicas a second it would long be ready if it could */
    sleep_ms(300);
    assert_int_equal(geti(c, DEPLOY("broken"), "status.readyReplicas"), -1);
    WAIT_UNTIL(!strcmp(cond(c, DEPLOY("broken"), "Progressing"), "False|ProgressDeadlineExceeded"), 4000);
    assert_string_equal(cond(c, DEPLOY("broken"), "Available"), "False|MinimumReplicasUnavailable");
    assert_int_equal(geti(c, DEPLOY("broken"), "status.readyReplicas"), -1);
}

static void test_image_rule_names_fake_registries_and_images(void **state)
{
    assert_true(fl_sim_image_is_fake("fake/nginx"));
    assert_true(fl_sim_image_is_fake("fake/nginx:1.27"));
    assert_true(fl_sim_image_is_fake("fake.io/team/app"));
    assert_true(fl_sim_image_is_fake("fake:5000/nginx"));
    assert_true(fl_sim_image_is_fake("fake"));
    assert_true(fl_sim_image_is_fake("fake:latest"));
    assert_true(fl_sim_image_is_fake("docker.io/library/fake:1"));
    assert_true(fl_sim_image_is_fake("registry.k8s.io/fake@sha256:abcd"));
    assert_false(fl_sim_image_is_fake("nginx:fake"));
    assert_false(fl_sim_image_is_fake("nginx"));
    assert_false(fl_sim_image_is_fake("myfake/nginx"));
    assert_false(fl_sim_image_is_fake("docker.io/fakeapp"));
    assert_false(fl_sim_image_is_fake("fakes.io/nginx"));
    assert_false(fl_sim_image_is_fake(""));
    assert_false(fl_sim_image_is_fake(NULL));
}

static void test_job_completes_after_job_seconds(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.job_seconds = 1});
    int64_t t0 = now_ms();
    assert_int_equal(call(c, "POST", "/apis/batch/v1/namespaces/default/jobs", "application/json",
                          "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"pi\"},"
                          "\"spec\":{\"completions\":3,\"parallelism\":2,\"template\":{\"spec\":{\"restartPolicy\":"
                          "\"Never\",\"containers\":[{\"name\":\"pi\",\"image\":\"perl\"}]}}}}"),
                     201);
    WAIT_UNTIL(geti(c, "/batch/jobs/default/pi", "status.active") == 2, 1000);
    assert_true(gets_(c, "/batch/jobs/default/pi", "status.startTime")[0]);
    assert_string_equal(cond(c, "/batch/jobs/default/pi", "Complete"), "");
    WAIT_UNTIL(!strcmp(cond(c, "/batch/jobs/default/pi", "Complete"), "True|CompletionsReached"), 3000);
    assert_true(now_ms() - t0 >= 900);
    assert_string_equal(cond(c, "/batch/jobs/default/pi", "SuccessCriteriaMet"), "True|CompletionsReached");
    assert_int_equal(geti(c, "/batch/jobs/default/pi", "status.succeeded"), 3);
    assert_int_equal(geti(c, "/batch/jobs/default/pi", "status.active"), -1);
    assert_true(gets_(c, "/batch/jobs/default/pi", "status.completionTime")[0]);

    /* a Job whose image never pulls stays active */
    assert_int_equal(call(c, "POST", "/apis/batch/v1/namespaces/default/jobs", "application/json",
                          "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"stuck\"},"
                          "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":"
                          "\"x\",\"image\":\"fake.io/x\"}]}}}}"),
                     201);
    WAIT_UNTIL(geti(c, "/batch/jobs/default/stuck", "status.active") == 1, 1000);
    sleep_ms(1300);
    assert_int_equal(geti(c, "/batch/jobs/default/stuck", "status.active"), 1);
    assert_string_equal(cond(c, "/batch/jobs/default/stuck", "Complete"), "");
}

static void test_pod_gets_running_and_node_name(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){0});
    assert_int_equal(call(c, "POST", "/api/v1/namespaces/default/pods", "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                          "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx\"}]}}"),
                     201);
    WAIT_UNTIL(!strcmp(gets_(c, "/core/pods/default/p", "status.phase"), "Running"), 1000);
    const char *node = gets_(c, "/core/pods/default/p", "spec.nodeName");
    assert_true(!strncmp(node, "m1-node-", 8));
    assert_string_equal(cond(c, "/core/pods/default/p", "Ready"), "True|");
    assert_string_equal(cond(c, "/core/pods/default/p", "ContainersReady"), "True|");
    assert_string_equal(cond(c, "/core/pods/default/p", "PodScheduled"), "True|");
    assert_true(!strncmp(gets_(c, "/core/pods/default/p", "status.podIP"), "10.244.", 7));
    assert_true(!strncmp(gets_(c, "/core/pods/default/p", "status.hostIP"), "172.18.0.", 9));
    assert_true(gets_(c, "/core/pods/default/p", "status.startTime")[0]);
    json_t *o = get(c, "/core/pods/default/p");
    json_t *cs = json_array_get(json_object_get(json_object_get(o, "status"), "containerStatuses"), 0);
    assert_true(json_is_true(json_object_get(cs, "ready")));
    assert_non_null(json_object_get(json_object_get(cs, "state"), "running"));
    json_decref(o);

    /* a pod whose image never pulls is scheduled but stays Pending in ImagePullBackOff */
    assert_int_equal(call(c, "POST", "/api/v1/namespaces/default/pods", "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\"},"
                          "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"fake/app\"}]}}"),
                     201);
    WAIT_UNTIL(!strcmp(gets_(c, "/core/pods/default/q", "status.phase"), "Pending"), 1000);
    assert_true(gets_(c, "/core/pods/default/q", "spec.nodeName")[0]);
    assert_string_equal(cond(c, "/core/pods/default/q", "Ready"), "False|ContainersNotReady");
    o = get(c, "/core/pods/default/q");
    cs = json_array_get(json_object_get(json_object_get(o, "status"), "containerStatuses"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(cs, "state"), "waiting"), "reason")),
        "ImagePullBackOff");
    json_decref(o);

    /* no node matches the selector: Unschedulable */
    assert_int_equal(call(c, "POST", "/api/v1/namespaces/default/pods", "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"r\"},"
                          "\"spec\":{\"nodeSelector\":{\"disk\":\"ssd\"},\"containers\":[{\"name\":\"app\","
                          "\"image\":\"nginx\"}]}}"),
                     201);
    WAIT_UNTIL(!strcmp(cond(c, "/core/pods/default/r", "PodScheduled"), "False|Unschedulable"), 1000);
    assert_string_equal(gets_(c, "/core/pods/default/r", "spec.nodeName"), "");
}

static void test_nodes_are_created_with_capacity(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.nodes = 2});
    assert_int_equal(fl_store_count(c->store, "/core/nodes/"), 2);
    assert_string_equal(gets_(c, "/core/nodes/m1-node-1", "status.allocatable.cpu"), "8");
    assert_string_equal(gets_(c, "/core/nodes/m1-node-1", "status.allocatable.memory"), "32Gi");
    assert_string_equal(gets_(c, "/core/nodes/m1-node-1", "status.allocatable.pods"), "110");
    assert_string_equal(cond(c, "/core/nodes/m1-node-1", "Ready"), "True|KubeletReady");
    json_t *n = get(c, "/core/nodes/m1-node-1");
    json_t *labels = json_object_get(json_object_get(n, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/hostname")), "m1-node-1");
    assert_string_equal(json_string_value(json_object_get(labels, "topology.kubernetes.io/zone")), "zone-b");
    json_decref(n);

    /* capacity and what running workloads take of it */
    create_deployment(c, "web", 3, "nginx");
    create_deployment(c, "broken", 2, "fake/nginx");
    WAIT_UNTIL(geti(c, DEPLOY("web"), "status.readyReplicas") == 3, 2000);
    fl_sim_usage u;
    assert_int_equal(fl_sim_cluster_usage(&c->api, &u), 0);
    assert_int_equal(u.nodes, 2);
    assert_int_equal(u.allocatable_cpu_m, 16000);
    assert_int_equal(u.allocatable_memory, 2LL * 32 * 1024 * 1024 * 1024);
    assert_int_equal(u.allocatable_pods, 220);
    assert_int_equal(u.allocated_cpu_m, 300);
    assert_int_equal(u.allocated_memory, 3LL * 64 * 1024 * 1024);
    assert_int_equal(u.allocated_pods, 3);

    int64_t q;
    assert_int_equal(fl_sim_parse_quantity("250m", 1000, &q), 0);
    assert_int_equal(q, 250);
    assert_int_equal(fl_sim_parse_quantity("1.5", 1000, &q), 0);
    assert_int_equal(q, 1500);
    assert_int_equal(fl_sim_parse_quantity("1e3", 1, &q), 0);
    assert_int_equal(q, 1000);
    assert_int_equal(fl_sim_parse_quantity("2Ki", 1, &q), 0);
    assert_int_equal(q, 2048);
    assert_int_equal(fl_sim_parse_quantity("1x", 1, &q), FL_EINVAL);
    assert_int_equal(fl_sim_parse_quantity("", 1, &q), FL_EINVAL);
}

static void test_daemonset_counts_nodes(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.nodes = 4, .ready_per_second = 20});
    const char *ds = "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"%s\"},"
                     "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"a\"}},\"template\":{\"metadata\":{\"labels\":"
                     "{\"app\":\"a\"}},\"spec\":{%s\"containers\":[{\"name\":\"c\",\"image\":\"agent\"}]}}}}";
    char body[1024];
    snprintf(body, sizeof body, ds, "everywhere", "");
    assert_int_equal(call(c, "POST", "/apis/apps/v1/namespaces/default/daemonsets", "application/json", body), 201);
    snprintf(body, sizeof body, ds, "zone-a-only", "\"nodeSelector\":{\"topology.kubernetes.io/zone\":\"zone-a\"},");
    assert_int_equal(call(c, "POST", "/apis/apps/v1/namespaces/default/daemonsets", "application/json", body), 201);
    const char *k1 = "/apps/daemonsets/default/everywhere", *k2 = "/apps/daemonsets/default/zone-a-only";
    WAIT_UNTIL(geti(c, k1, "status.numberReady") == 4, 2000);
    assert_int_equal(geti(c, k1, "status.desiredNumberScheduled"), 4);
    assert_int_equal(geti(c, k1, "status.currentNumberScheduled"), 4);
    assert_int_equal(geti(c, k1, "status.updatedNumberScheduled"), 4);
    assert_int_equal(geti(c, k1, "status.numberAvailable"), 4);
    assert_int_equal(geti(c, k1, "status.numberUnavailable"), -1);
    assert_int_equal(geti(c, k1, "status.observedGeneration"), 1);
    WAIT_UNTIL(geti(c, k2, "status.numberReady") == 2, 2000); /* nodes 0 and 3 */
    assert_int_equal(geti(c, k2, "status.desiredNumberScheduled"), 2);

    /* a fifth node: every DaemonSet is recounted */
    assert_int_equal(call(c, "POST", "/api/v1/nodes", "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"extra\"}}"),
                     201);
    WAIT_UNTIL(geti(c, k1, "status.desiredNumberScheduled") == 5, 1000);
    WAIT_UNTIL(geti(c, k1, "status.numberReady") == 5, 1000);
    assert_int_equal(geti(c, k2, "status.desiredNumberScheduled"), 2);
}

static void test_replicaset_and_statefulset_report_replicas(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.ready_per_second = 50});
    const char *tmpl = "\"selector\":{\"matchLabels\":{\"app\":\"a\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"
                       "\"a\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"redis\"}]}}";
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"rs\"},\"spec\":{"
             "\"replicas\":3,%s}}",
             tmpl);
    assert_int_equal(call(c, "POST", "/apis/apps/v1/namespaces/default/replicasets", "application/json", body), 201);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"db\"},\"spec\":{"
             "\"replicas\":2,\"serviceName\":\"db\",%s}}",
             tmpl);
    assert_int_equal(call(c, "POST", "/apis/apps/v1/namespaces/default/statefulsets", "application/json", body), 201);
    WAIT_UNTIL(geti(c, "/apps/replicasets/default/rs", "status.readyReplicas") == 3, 2000);
    assert_int_equal(geti(c, "/apps/replicasets/default/rs", "status.availableReplicas"), 3);
    assert_int_equal(geti(c, "/apps/replicasets/default/rs", "status.replicas"), 3);
    assert_int_equal(geti(c, "/apps/replicasets/default/rs", "status.observedGeneration"), 1);
    WAIT_UNTIL(geti(c, "/apps/statefulsets/default/db", "status.readyReplicas") == 2, 2000);
    assert_int_equal(geti(c, "/apps/statefulsets/default/db", "status.currentReplicas"), 2);
    assert_int_equal(geti(c, "/apps/statefulsets/default/db", "status.updatedReplicas"), 2);
    assert_int_equal(geti(c, "/apps/statefulsets/default/db", "status.availableReplicas"), 2);
    assert_int_equal(geti(c, "/apps/statefulsets/default/db", "status.observedGeneration"), 1);
    char rev[128];
    snprintf(rev, sizeof rev, "%s", gets_(c, "/apps/statefulsets/default/db", "status.currentRevision"));
    assert_true(!strncmp(rev, "db-", 3));
    assert_string_equal(gets_(c, "/apps/statefulsets/default/db", "status.updateRevision"), rev);
}

static void test_no_writes_when_converged(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    start_sim(f, (fl_sim_config){.ready_per_second = 100, .job_seconds = -1, .progress_deadline_override_s = 1});
    create_deployment(c, "web", 3, "nginx");
    create_deployment(c, "broken", 1, "fake/nginx");
    assert_int_equal(call(c, "POST", "/apis/batch/v1/namespaces/default/jobs", "application/json",
                          "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},"
                          "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":"
                          "\"x\",\"image\":\"busybox\"}]}}}}"),
                     201);
    assert_int_equal(call(c, "POST", "/api/v1/namespaces/default/pods", "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                          "\"spec\":{\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\"}],"
                          "\"containers\":[{\"name\":\"app\",\"image\":\"nginx\"}]}}"),
                     201);
    WAIT_UNTIL(geti(c, DEPLOY("web"), "status.readyReplicas") == 3, 2000);
    WAIT_UNTIL(!strcmp(cond(c, DEPLOY("broken"), "Progressing"), "False|ProgressDeadlineExceeded"), 4000);
    WAIT_UNTIL(!strcmp(cond(c, "/batch/jobs/default/j", "Complete"), "True|CompletionsReached"), 2000);
    WAIT_UNTIL(!strcmp(gets_(c, "/core/pods/default/p", "status.phase"), "Running"), 2000);

    sleep_ms(100); /* let the last events come back through the watch */
    int64_t rev = fl_store_rev(c->store);
    uint64_t writes = fl_sim_writes(f->sim);
    sleep_ms(600); /* 60 ticks */
    assert_int_equal(fl_store_rev(c->store), rev);
    assert_int_equal(fl_sim_writes(f->sim), writes);

    /* an unrelated change to an object (a label) is evaluated but writes nothing */
    assert_int_equal(call(c, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web",
                          "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}"),
                     200);
    rev = fl_store_rev(c->store);
    sleep_ms(200);
    assert_int_equal(fl_store_rev(c->store), rev);
    assert_int_equal(fl_sim_writes(f->sim), writes);
}

static void test_existing_objects_and_many_clusters_share_one_thread(void **state)
{
    fixture *f = *state;
    cluster_open(&f->c[1]);
    /* objects that exist before the cluster is added are picked up by the initial list */
    create_deployment(&f->c[0], "early", 2, "nginx");
    f->sim = fl_sim_new(&(fl_sim_config){.tick_ms = 10, .ready_per_second = 50});
    assert_int_equal(fl_sim_add_cluster(f->sim, "m1", &f->c[0].api), 0);
    assert_int_equal(fl_sim_add_cluster(f->sim, "m2", &f->c[1].api), 0);
    assert_int_equal(fl_sim_add_cluster(f->sim, "m1", &f->c[1].api), FL_EEXIST);
    assert_int_equal(fl_sim_add_cluster(f->sim, "", &f->c[1].api), FL_EINVAL);
    create_deployment(&f->c[1], "late", 4, "nginx");
    WAIT_UNTIL(geti(&f->c[0], DEPLOY("early"), "status.readyReplicas") == 2, 2000);
    WAIT_UNTIL(geti(&f->c[1], DEPLOY("late"), "status.readyReplicas") == 4, 2000);
    assert_int_equal(fl_store_count(f->c[1].store, "/core/nodes/m2-node-"), 3);
    assert_int_equal(geti(&f->c[1], DEPLOY("early"), "status.readyReplicas"), -1);
}

static void test_free_stops_promptly(void **state)
{
    fixture *f = *state;
    cluster *c = &f->c[0];
    /* a long tick and a slow rollout: the thread is asleep with work pending */
    start_sim(f, (fl_sim_config){.tick_ms = 60000, .ready_per_second = 0.01});
    create_deployment(c, "slow", 3, "nginx");
    sleep_ms(50);
    int64_t t0 = now_ms();
    fl_sim_free(f->sim);
    f->sim = NULL;
    assert_true(now_ms() - t0 < 200);
    fl_sim_free(NULL);
}

/* The simulator's thread is named and runs below the clusters' API (nice 10): the
 * controllers and kubelets it plays have machines of their own. */
static void test_simulator_thread_yields_to_the_api(void **state)
{
    fixture *f = *state;
    start_sim(f, (fl_sim_config){.tick_ms = 10});
    int nice = -100, found = 0;
    for (int tries = 0; tries < 100 && !found; tries++) { /* the thread names itself on start */
        DIR *d = opendir("/proc/self/task");
        assert_non_null(d);
        for (struct dirent *e; !found && (e = readdir(d));) {
            char path[300], comm[32] = "";
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            FILE *fp = fopen(path, "r");
            if (!fp)
                continue;
            if (fgets(comm, sizeof comm, fp) && !strcmp(comm, "fl-sim\n")) {
                errno = 0;
                nice = getpriority(PRIO_PROCESS, (id_t)atoi(e->d_name));
                found = errno == 0;
            }
            fclose(fp);
        }
        closedir(d);
        if (!found)
            sleep_ms(10);
    }
    assert_true(found);
    int own = getpriority(PRIO_PROCESS, 0); /* a process started nicer still cannot go back */
    assert_int_equal(nice, own < 10 ? 10 : own);
}

int main(void)
{
    fl_mem_init();
    fl_kinds_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deployment_becomes_ready_replica_by_replica, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_image_never_ready_and_misses_its_deadline, setup, teardown),
        cmocka_unit_test(test_image_rule_names_fake_registries_and_images),
        cmocka_unit_test_setup_teardown(test_job_completes_after_job_seconds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_gets_running_and_node_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodes_are_created_with_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemonset_counts_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicaset_and_statefulset_report_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_writes_when_converged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_objects_and_many_clusters_share_one_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_stops_promptly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simulator_thread_yields_to_the_api, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
