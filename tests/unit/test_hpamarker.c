/* test_hpamarker.c - the hpa-scale-target-marker (src/controllers/hpamarker.c) alone against an
 * in-process API over a memory store: a propagated HPA (claimed by a PropagationPolicy: its
 * permanent-id label) labels the Deployment it scales with resourcetemplate.karmada.io/
 * retain-replicas "true"; an HPA no policy claimed does not; retargeting the HPA moves the label;
 * deleting it removes the label; the rest of the Deployment is untouched. Every wait polls the
 * API against a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json_get.h"
#include "controllers/templates.h"
#include "core/mem.h"

#include "testapi.h"
#include "testutil.h"

#define DEADLINE_MS 10000
#define RETAIN "resourcetemplate.karmada.io/retain-replicas"
#define DEPLOYS "/apis/apps/v1/namespaces/default/deployments"
#define HPAS "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"

typedef test_fixture fixture;

static int setup(void **state)
{
    fixture *f = test_fixture_new();
    test_ctrl_start(&f->api, "hpa-scale-target-marker", &f->ctrl);
    /* what the detector does once a policy names HPAs: the registry watches them */
    assert_int_equal(fl_templates_watch(fl_ctrl_manager_templates(f->ctrl.m), "autoscaling/v2",
                                        "HorizontalPodAutoscaler", 5000, NULL),
                     0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    test_fixture_free(*state);
    return 0;
}

static void deployment(fixture *f, const char *name)
{
    char *body = fl_asprintf("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\","
                             "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":"
                             "{\"app\":\"%s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":"
                             "{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}",
                             name, name, name, name);
    assert_int_equal(test_api_request(&f->api, "POST", DEPLOYS, NULL, body), 201);
    free(body);
}

static void hpa(fixture *f, const char *method, const char *name, const char *target, bool claimed)
{
    char *path = !strcmp(method, "POST") ? fl_strdup(HPAS) : fl_asprintf("%s/%s", HPAS, name);
    json_t *cur = strcmp(method, "POST") ? test_api_get(&f->api, path) : NULL;
    char *body = fl_asprintf(
        "{\"apiVersion\":\"autoscaling/v2\",\"kind\":\"HorizontalPodAutoscaler\",\"metadata\":{\"name\":\"%s\"%s%s%s"
        "%s},\"spec\":{\"scaleTargetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"%s\"},"
        "\"maxReplicas\":5}}",
        name, claimed ? ",\"labels\":{\"propagationpolicy.karmada.io/permanent-id\":\"id-1\"}" : "",
        cur ? ",\"resourceVersion\":\"" : "", cur ? fl_json_path_str(cur, "metadata.resourceVersion") : "",
        cur ? "\"" : "", target);
    assert_int_equal(test_api_request(&f->api, method, path, NULL, body) / 100, 2);
    json_decref(cur);
    free(body);
    free(path);
}

static const char *label_of(json_t *d)
{
    return json_string_value(json_object_get(fl_json_path(d, "metadata.labels"), RETAIN));
}

/* Wait until deployment name's retain label is want ("true" or NULL: absent). */
static bool wait_label(fixture *f, const char *name, const char *want)
{
    char *path = fl_asprintf("%s/%s", DEPLOYS, name);
    for (int waited = 0; waited < DEADLINE_MS; waited += 20) {
        json_t *d = test_api_get(&f->api, path);
        const char *l = label_of(d);
        bool ok = want ? l && !strcmp(l, want) : !l;
        json_decref(d);
        if (ok) {
            free(path);
            return true;
        }
        nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
    }
    free(path);
    return false;
}

static void test_a_propagated_hpa_marks_its_target_and_unmarks_it_when_it_moves_or_goes(void **state)
{
    fixture *f = *state;
    deployment(f, "web");
    deployment(f, "api");
    hpa(f, "POST", "web", "web", true);
    assert_true(wait_label(f, "web", "true"));
    json_t *d = test_api_get(&f->api, DEPLOYS "/web");
    assert_string_equal(fl_json_path_str(d, "metadata.labels.app"), "web"); /* the rest kept */
    assert_int_equal(fl_json_path_int(d, "spec.replicas", 0), 1);
    json_decref(d);
    /* retargeted: the old target loses the label, the new one gets it */
    hpa(f, "PUT", "web", "api", true);
    assert_true(wait_label(f, "api", "true"));
    assert_true(wait_label(f, "web", NULL));
    /* deleted: unmarked */
    assert_int_equal(test_api_request(&f->api, "DELETE", HPAS "/web", NULL, NULL), 200);
    assert_true(wait_label(f, "api", NULL));
}

static void test_an_hpa_no_policy_claimed_marks_nothing(void **state)
{
    fixture *f = *state;
    deployment(f, "local");
    hpa(f, "POST", "local", "local", false);
    /* a claimed HPA created after it is marked: by then the unclaimed one was seen too */
    deployment(f, "probe");
    hpa(f, "POST", "probe", "probe", true);
    assert_true(wait_label(f, "probe", "true"));
    json_t *d = test_api_get(&f->api, DEPLOYS "/local");
    assert_null(label_of(d));
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_propagated_hpa_marks_its_target_and_unmarks_it_when_it_moves_or_goes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_hpa_no_policy_claimed_marks_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
