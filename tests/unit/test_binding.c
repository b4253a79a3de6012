/* test_binding.c - the binding controller (src/controllers/binding.c) alone against an
 * in-process API over a memory store, for what docs/propagation.md and
 * docs/internals/propagation.md promise of the Works it writes: one per target cluster in
 * karmada-es-<cluster>, holding the template as sent (replicas revised to the cluster's
 * share, server-owned fields pruned) with Karmada's bookkeeping labels and annotations and
 * the execution controller's finalizer; a template's change reaching its Works; an override
 * rule changing only its cluster's copy; a cluster no longer targeted losing its Work; a
 * deleted binding taking its Works with it before its finalizer goes. The test writes the
 * template and the scheduled binding the detector and the scheduler would, and plays the
 * execution controller's part in a deletion (it removes the Works' finalizer). Every wait
 * polls the API against a deadline. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_get.h"
#include "core/mem.h"
#include "core/metrics.h"

#include "testapi.h"
#include "testutil.h"

/* generous: the machine may be busy with other builds; a normal run takes milliseconds */
#define DEADLINE_MS 10000

#define RBS "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
#define DEPLOYS "/apis/apps/v1/namespaces/default/deployments"
#define OPS "/apis/policy.karmada.io/v1alpha1/namespaces/default/overridepolicies"


typedef test_fixture fixture;

static int setup(void **state)
{
    fixture *f = test_fixture_new();
    /* the execution spaces, as the cluster controller makes them */
    assert_int_equal(fl_api_ensure_namespace(&f->api, "karmada-es-member1"), 0);
    assert_int_equal(fl_api_ensure_namespace(&f->api, "karmada-es-member2"), 0);
    test_ctrl_start(&f->api, "binding", &f->ctrl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    test_fixture_free(*state);
    return 0;
}

/* Deployment nginx (6 replicas), claimed by a policy, and its binding, scheduled 2 to member1
 * and 4 to member2 (the detector's and the scheduler's writes). Returns the template's uid
 * (heap). */
static char *create_scheduled(fixture *f)
{
    json_t *d = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
                          "s:{s:[{s:s, s:s}]}}}}",
                          "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "nginx", "labels", "app",
                          "nginx", "propagationpolicy.karmada.io/permanent-id", "b7f3c1de-0000-4000-8000-000000000001",
                          "spec", "replicas", 6, "selector", "matchLabels", "app", "nginx", "template",
                          "metadata", "labels", "app", "nginx", "spec", "containers", "name", "nginx", "image",
                          "nginx:1.25");
    assert_int_equal(test_api_send(&f->api, "POST", DEPLOYS, d), 201);
    json_decref(d);
    json_t *tmpl = test_api_get(&f->api, DEPLOYS "/nginx");
    char *uid = strdup(fl_json_meta(tmpl, "uid"));
    json_t *b = json_pack(
        "{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s, s:s, s:s, s:s}, s:i, s:{s:{s:s, s:s}}, s:[{s:s, s:i}, {s:s, s:i}]}}",
        "apiVersion", "work.karmada.io/v1alpha2", "kind", "ResourceBinding", "metadata", "name", "nginx-deployment",
        "spec", "resource", "apiVersion", "apps/v1", "kind", "Deployment", "namespace", "default", "name", "nginx",
        "uid", uid, "resourceVersion", fl_json_meta(tmpl, "resourceVersion"), "replicas", 6, "placement",
        "replicaScheduling", "replicaSchedulingType", "Divided", "replicaDivisionPreference", "Weighted", "clusters",
        "name", "member1", "replicas", 2, "name", "member2", "replicas", 4);
    assert_int_equal(test_api_send(&f->api, "POST", RBS, b), 201);
    json_decref(b);
    json_decref(tmpl);
    return uid;
}

/* The Work of binding nginx-deployment in cluster's execution space (a new reference), or
 * NULL. */
static json_t *work_of(fixture *f, const char *cluster)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-%s/works", cluster);
    json_t *list = test_api_get(&f->api, path), *found = NULL;
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(list, "items"), i, w) {
        const char *b = fl_json_meta_map(w, "annotations", "resourcebinding.karmada.io/name");
        if (b && !strcmp(b, "nginx-deployment"))
            found = json_incref(w);
    }
    json_decref(list);
    return found;
}

static json_t *manifest(const json_t *work)
{
    return json_array_get(fl_json_path(work, "spec.workload.manifests"), 0);
}

/* Whether cluster's Work holds a manifest whose value at path (dotted), compact, is want. */
static bool manifest_has(fixture *f, const char *cluster, const char *path, const char *want)
{
    json_t *w = work_of(f, cluster);
    json_t *v = fl_json_path(manifest(w), path);
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    bool same = s && !strcmp(s, want);
    free(s);
    json_decref(w);
    return same;
}

/* The Work is gone or being deleted (it waits for the execution controller's finalizer). */
static bool work_deleted(fixture *f, const char *cluster)
{
    json_t *w = work_of(f, cluster);
    bool gone = !w || fl_json_meta(w, "deletionTimestamp");
    json_decref(w);
    return gone;
}

static void test_a_scheduled_binding_makes_one_work_per_cluster(void **state)
{
    fixture *f = *state;
    char *uid = create_scheduled(f);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "2"), DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member2", "spec.replicas", "4"), DEADLINE_MS);

    json_t *rb = test_api_get(&f->api, RBS "/nginx-deployment");
    const char *rb_id = fl_json_meta_map(rb, "labels", "resourcebinding.karmada.io/permanent-id");
    assert_non_null(rb_id);
    /* the binding carries the binding controller's finalizer */
    assert_true(fl_json_has_finalizer(rb, "karmada.io/binding-controller"));

    json_t *w = work_of(f, "member2");
    /* the Work: the execution controller's finalizer, the binding's ID and name */
    assert_string_equal(fl_json_meta(w, "namespace"), "karmada-es-member2");
    assert_true(fl_json_has_finalizer(w, "karmada.io/execution-controller"));
    assert_string_equal(fl_json_meta_map(w, "labels", "resourcebinding.karmada.io/permanent-id"), rb_id);
    assert_string_equal(fl_json_meta_map(w, "annotations", "resourcebinding.karmada.io/namespace"), "default");
    assert_string_equal(fl_json_meta_map(w, "annotations", "work.karmada.io/conflict-resolution"), "abort");
    assert_int_equal(json_array_size(fl_json_path(w, "spec.workload.manifests")), 1);

    /* the manifest: the template as sent, with Karmada's bookkeeping and without what the
     * control plane's API server owns */
    json_t *m = manifest(w);
    assert_string_equal(fl_json_str(m, "kind"), "Deployment");
    assert_string_equal(fl_json_meta(m, "name"), "nginx");
    assert_string_equal(fl_json_meta(m, "namespace"), "default");
    assert_non_null(fl_json_path(m, "spec.template.spec.containers"));
    assert_string_equal(fl_json_meta_map(m, "labels", "app"), "nginx");
    assert_string_equal(fl_json_meta_map(m, "labels", "karmada.io/managed"), "true");
    assert_string_equal(fl_json_meta_map(m, "labels", "resourcebinding.karmada.io/permanent-id"), rb_id);
    assert_string_equal(fl_json_meta_map(m, "annotations", "resourcetemplate.karmada.io/uid"), uid);
    assert_string_equal(fl_json_meta_map(m, "annotations", "work.karmada.io/name"), fl_json_meta(w, "name"));
    assert_string_equal(fl_json_meta_map(m, "annotations", "work.karmada.io/namespace"), "karmada-es-member2");
    assert_string_equal(fl_json_meta_map(m, "annotations", "resourcebinding.karmada.io/name"), "nginx-deployment");
    assert_null(fl_json_meta(m, "uid"));
    assert_null(fl_json_meta(m, "resourceVersion"));
    assert_null(fl_json_path(m, "metadata.managedFields"));
    assert_null(json_object_get(m, "status"));
    json_decref(w);
    json_decref(rb);
    free(uid);
}

/* while a policy holds it (a released template's edits stay on the control plane) */
static void test_a_template_change_reaches_its_works(void **state)
{
    fixture *f = *state;
    char *uid = create_scheduled(f);
    free(uid);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "2"), DEADLINE_MS);
    json_t *p = json_pack("{s:{s:{s:{s:[{s:s, s:s}]}}}}", "spec", "template", "spec", "containers", "name", "nginx",
                          "image", "nginx:1.27");
    assert_int_equal(test_api_send(&f->api, "PATCH", DEPLOYS "/nginx", p), 200);
    json_decref(p);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.template.spec.containers", "[{\"image\":\"nginx:1.27\",\"name\":\"nginx\"}]"),
               DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member2", "spec.template.spec.containers", "[{\"image\":\"nginx:1.27\",\"name\":\"nginx\"}]"),
               DEADLINE_MS);
    /* the replicas stay each cluster's share */
    assert_true(manifest_has(f, "member1", "spec.replicas", "2"));
    assert_true(manifest_has(f, "member2", "spec.replicas", "4"));
}

static void test_an_override_rule_changes_only_its_clusters_copy(void **state)
{
    fixture *f = *state;
    json_t *op = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s, s:s}], s:[{s:{s:[s]}, s:{s:[{s:s, s:{s:s}}]}}]}}",
                           "apiVersion", "policy.karmada.io/v1alpha1", "kind", "OverridePolicy", "metadata", "name",
                           "nginx-member2", "spec", "resourceSelectors", "apiVersion", "apps/v1", "kind", "Deployment",
                           "name", "nginx", "overrideRules", "targetCluster", "clusterNames", "member2", "overriders",
                           "labelsOverrider", "operator", "add", "value", "cost-center", "us-ops");
    assert_int_equal(test_api_send(&f->api, "POST", OPS, op), 201);
    json_decref(op);
    char *uid = create_scheduled(f);
    free(uid);
    WAIT_UNTIL(manifest_has(f, "member2", "metadata.labels.cost-center", "\"us-ops\""), DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "2"), DEADLINE_MS);
    json_t *w1 = work_of(f, "member1"), *w2 = work_of(f, "member2");
    assert_null(fl_json_meta_map(manifest(w1), "labels", "cost-center"));
    /* what was applied is recorded on the Work */
    assert_non_null(fl_json_meta_map(w2, "annotations", "policy.karmada.io/applied-overrides"));
    assert_null(fl_json_meta_map(w1, "annotations", "policy.karmada.io/applied-overrides"));
    json_decref(w1);
    json_decref(w2);
}

static void test_a_cluster_no_longer_targeted_loses_its_work(void **state)
{
    fixture *f = *state;
    char *uid = create_scheduled(f);
    free(uid);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "2"), DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member2", "spec.replicas", "4"), DEADLINE_MS);
    json_t *p = json_pack("{s:{s:[{s:s, s:i}]}}", "spec", "clusters", "name", "member1", "replicas", 6);
    assert_int_equal(test_api_send(&f->api, "PATCH", RBS "/nginx-deployment", p), 200);
    json_decref(p);
    WAIT_UNTIL(work_deleted(f, "member2"), DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "6"), DEADLINE_MS);
    assert_false(work_deleted(f, "member1"));
}

/* The execution controller's part: let Works being deleted go. */
static void release_works(fixture *f, const char *cluster)
{
    json_t *w = work_of(f, cluster);
    if (!w)
        return;
    char path[256];
    snprintf(path, sizeof path, "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-%s/works/%s", cluster,
             fl_json_meta(w, "name"));
    json_t *p = json_pack("{s:{s:n}}", "metadata", "finalizers");
    assert_int_equal(test_api_send(&f->api, "PATCH", path, p), 200);
    json_decref(p);
    json_decref(w);
}

static void test_a_binding_deleted_removes_its_works(void **state)
{
    fixture *f = *state;
    char *uid = create_scheduled(f);
    free(uid);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "2"), DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member2", "spec.replicas", "4"), DEADLINE_MS);
    assert_int_equal(test_api_request(&f->api, "DELETE", RBS "/nginx-deployment", NULL, NULL), 200);
    /* its Works are deleted; the binding waits for them, held by its finalizer */
    WAIT_UNTIL(work_deleted(f, "member1") && work_deleted(f, "member2"), DEADLINE_MS);
    json_t *rb = test_api_get(&f->api, RBS "/nginx-deployment");
    assert_non_null(rb);
    assert_true(fl_json_has_finalizer(rb, "karmada.io/binding-controller"));
    json_decref(rb);
    /* once they are gone, so is the binding */
    release_works(f, "member1");
    release_works(f, "member2");
    json_t *gone = NULL;
    WAIT_UNTIL((json_decref(gone), gone = test_api_get(&f->api, RBS "/nginx-deployment")) == NULL, DEADLINE_MS);
    assert_null(work_of(f, "member1"));
    assert_null(work_of(f, "member2"));
}

/* ---- spec writes against a member's status writes ---- */

#define CHANGES 12

/* The members' status writes to the two Works, one after another about every millisecond
 * (merge patches of status.conditions, as the execution controller's observations are sent),
 * until told to stop; the number of the last one to each Work answered 200 stays in last[]. */
typedef struct status_writer {
    fixture *f;
    char path[2][256];
    atomic_int stop;
    atomic_int last[2];
} status_writer;

static void *write_statuses(void *arg)
{
    status_writer *s = arg;
    for (int n = 1; !atomic_load(&s->stop) && n < 10000000; n++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"status\":{\"conditions\":[{\"type\":\"Applied\",\"status\":\"True\",\"reason\":\"Test\","
                 "\"message\":\"write %d\",\"lastTransitionTime\":\"2026-12-07T00:00:00Z\"}]}}",
                 n);
        if (test_api_request(&s->f->api, "PATCH", s->path[n % 2], "application/merge-patch+json", body) == 200)
            atomic_store(&s->last[n % 2], n);
        sleep_ms(1); /* not faster than the caches can follow on a busy machine */
    }
    return NULL;
}

/* The server's count of verb requests on resource answered code (its /metrics family). */
static double requests(const char *verb, const char *resource, int code)
{
    char want[200];
    snprintf(want, sizeof want, "flotilla_apiserver_request_total{verb=\"%s\",resource=\"%s\",code=\"%d\"} ", verb,
             resource, code);
    size_t len = 0;
    char *text = fl_metrics_render(&len);
    const char *at = strstr(text, want);
    double v = at ? strtod(at + strlen(want), NULL) : 0;
    free(text);
    return v;
}

/* The Work of cluster has the containers want in its manifest and, as its last condition
 * message, the status write numbered last. */
static void assert_spec_and_status(fixture *f, const char *cluster, const char *want, int last)
{
    assert_true(manifest_has(f, cluster, "spec.template.spec.containers", want));
    json_t *w = work_of(f, cluster);
    char msg[32];
    snprintf(msg, sizeof msg, "write %d", last);
    assert_string_equal(fl_json_str(json_array_get(fl_json_path(w, "status.conditions"), 0), "message"), msg);
    json_decref(w);
}

/* The binding controller's Work writes do not depend on the Work's resourceVersion: members
 * writing the Works' status all the while make none of them conflict, every change of the
 * template lands while the status writes go on, and no status write is lost. */
static void test_spec_writes_do_not_conflict_with_status_writes(void **state)
{
    fixture *f = *state;
    char *uid = create_scheduled(f);
    free(uid);
    WAIT_UNTIL(manifest_has(f, "member1", "spec.replicas", "2"), DEADLINE_MS);
    WAIT_UNTIL(manifest_has(f, "member2", "spec.replicas", "4"), DEADLINE_MS);
    status_writer s = {.f = f};
    for (int c = 0; c < 2; c++) {
        json_t *w = work_of(f, c ? "member2" : "member1");
        snprintf(s.path[c], sizeof s.path[c], "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member%d/works/%s/status",
                 c + 1, fl_json_meta(w, "name"));
        json_decref(w);
    }
    double conflicts = requests("PUT", "works", 409) + requests("PATCH", "works", 409);
    double written = requests("PUT", "works", 200) + requests("PATCH", "works", 200);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, write_statuses, &s), 0);
    /* each change waited for with the writer running; the writer stops before any assert */
    int landed = 0;
    char want[96] = "";
    for (int k = 0; k < CHANGES && landed == k; k++) {
        char image[32];
        snprintf(image, sizeof image, "nginx:1.%d", 30 + k);
        json_t *p = json_pack("{s:{s:{s:{s:[{s:s, s:s}]}}}}", "spec", "template", "spec", "containers", "name",
                              "nginx", "image", image);
        int code = test_api_send(&f->api, "PATCH", DEPLOYS "/nginx", p);
        json_decref(p);
        snprintf(want, sizeof want, "[{\"image\":\"%s\",\"name\":\"nginx\"}]", image);
        int64_t until = now_ms() + DEADLINE_MS;
        bool both = false;
        while (code == 200 && !both && now_ms() < until) {
            both = manifest_has(f, "member1", "spec.template.spec.containers", want) &&
                   manifest_has(f, "member2", "spec.template.spec.containers", want);
            if (!both)
                sleep_ms(5);
        }
        landed += both;
    }
    int before_stop = atomic_load(&s.last[0]) + atomic_load(&s.last[1]);
    atomic_store(&s.stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(landed, CHANGES);
    assert_true(before_stop > 0); /* the status writes went on while the spec changed */
    assert_int_equal(requests("PUT", "works", 409) + requests("PATCH", "works", 409) - conflicts, 0);
    assert_true(requests("PUT", "works", 200) + requests("PATCH", "works", 200) - written >= 2 * CHANGES);
    /* the last status write to each is there, beside the last spec */
    assert_spec_and_status(f, "member1", want, atomic_load(&s.last[0]));
    assert_spec_and_status(f, "member2", want, atomic_load(&s.last[1]));
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_scheduled_binding_makes_one_work_per_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_template_change_reaches_its_works, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_override_rule_changes_only_its_clusters_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_cluster_no_longer_targeted_loses_its_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_binding_deleted_removes_its_works, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec_writes_do_not_conflict_with_status_writes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
