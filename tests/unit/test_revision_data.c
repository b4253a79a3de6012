/* test_revision_data.c - unit tests for what a template revision records, how it is named and
 * how it is restored (src/controllers/revision_data.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "controllers/revision_data.h"
#include "core/json_get.h"
#include "core/wellknown.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s", e.position, e.text);
    return v;
}

#define TEMPLATE                                                                                                 \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"d\","     \
    "\"uid\":\"u-1\",\"resourceVersion\":\"7\",\"generation\":3,\"creationTimestamp\":\"2026-01-01T00:00:00Z\","  \
    "\"labels\":{\"app\":\"web\",\"propagationpolicy.karmada.io/permanent-id\":\"p-1\"},"                       \
    "\"annotations\":{\"note\":\"x\",\"propagationpolicy.karmada.io/name\":\"web\","                              \
    "\"kubernetes.io/change-cause\":\"v2\",\"deployment.kubernetes.io/revision\":\"4\"}},"                      \
    "\"spec\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"nginx:1\"}]}}}," \
    "\"status\":{\"replicas\":2}}"

static char *hash_of(const json_t *tmpl)
{
    char buf[16];
    json_t *d = fl_revision_data(tmpl);
    char *out = strdup(fl_revision_hash_text(d, buf));
    json_decref(d);
    return out;
}

static void test_data_is_the_delivered_template_without_status_or_control_plane_keys(void **state)
{
    (void)state;
    json_t *t = js(TEMPLATE);
    json_t *d = fl_revision_data(t);
    json_t *want = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
                      "\"namespace\":\"d\",\"labels\":{\"app\":\"web\"},\"annotations\":{\"note\":\"x\"}},"
                      "\"spec\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\","
                      "\"image\":\"nginx:1\"}]}}}}");
    assert_true(json_equal(d, want));
    /* the template itself is left as it was */
    assert_non_null(fl_json_meta_map(t, "labels", FL_PP_ID_LABEL));
    assert_non_null(json_object_get(t, "status"));
    json_decref(want);
    json_decref(d);
    json_decref(t);
}

static void test_status_and_server_metadata_changes_keep_the_hash_and_the_spec_does_not(void **state)
{
    (void)state;
    json_t *a = js(TEMPLATE), *b = js(TEMPLATE);
    char *ha = hash_of(a);
    assert_int_equal(strlen(ha), 10);
    json_object_set_new(json_object_get(b, "status"), "replicas", json_integer(5));
    json_t *mb = json_object_get(b, "metadata");
    json_object_set_new(mb, "resourceVersion", json_string("9"));
    json_object_set_new(mb, "generation", json_integer(4));
    json_object_set_new(json_object_get(mb, "labels"), FL_PP_ID_LABEL, json_string("p-2"));
    json_object_set_new(json_object_get(mb, "labels"), FL_RETAIN_REPLICAS_LABEL, json_string("true"));
    json_object_set_new(json_object_get(mb, "annotations"), FL_REVISION_HISTORY_LIMIT_ANNOTATION, json_string("3"));
    json_object_set_new(json_object_get(mb, "annotations"), "kubernetes.io/change-cause", json_string("other"));
    char *hb = hash_of(b);
    assert_string_equal(ha, hb);
    free(hb);
    /* a user's label is delivered content */
    json_object_set_new(json_object_get(mb, "labels"), "tier", json_string("front"));
    hb = hash_of(b);
    assert_string_not_equal(ha, hb);
    free(hb);
    json_object_del(json_object_get(mb, "labels"), "tier");
    json_object_set_new(json_object_get(b, "spec"), "replicas", json_integer(3));
    hb = hash_of(b);
    assert_string_not_equal(ha, hb);
    free(hb);
    free(ha);
    json_decref(a);
    json_decref(b);
}

static void test_name_is_the_template_name_and_hash_cut_to_253(void **state)
{
    (void)state;
    char *n = fl_revision_name("web", "bcdfghjklm");
    assert_string_equal(n, "web-bcdfghjklm");
    free(n);
    char longname[300];
    memset(longname, 'a', 299);
    longname[299] = 0;
    n = fl_revision_name(longname, "bcdfghjklm");
    assert_int_equal(strlen(n), 253);
    assert_string_equal(n + 242, "-bcdfghjklm");
    free(n);
}

static void test_history_limit_defaults_and_flags_a_bad_value(void **state)
{
    (void)state;
    bool valid = false;
    json_t *t = js("{\"metadata\":{\"annotations\":{}}}");
    assert_int_equal(fl_revision_history_limit(t, &valid), FL_REVISION_HISTORY_DEFAULT);
    assert_true(valid);
    json_t *anns = json_object_get(json_object_get(t, "metadata"), "annotations");
    json_object_set_new(anns, FL_REVISION_HISTORY_LIMIT_ANNOTATION, json_string("0"));
    assert_int_equal(fl_revision_history_limit(t, &valid), 0);
    assert_true(valid);
    static const char *const bad[] = {"-1", "", "3x", "1234567890", " 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_object_set_new(anns, FL_REVISION_HISTORY_LIMIT_ANNOTATION, json_string(bad[i]));
        assert_int_equal(fl_revision_history_limit(t, &valid), FL_REVISION_HISTORY_DEFAULT);
        assert_false(valid);
    }
    json_decref(t);
}

static void test_restore_writes_data_back_and_keeps_the_claim_and_status(void **state)
{
    (void)state;
    json_t *old = js(TEMPLATE);
    json_t *data = fl_revision_data(old);
    json_t *live = js(TEMPLATE);
    json_t *ml = json_object_get(live, "metadata");
    json_object_set_new(ml, "resourceVersion", json_string("42"));
    json_object_set_new(json_object_get(ml, "labels"), "added", json_string("later"));
    json_object_set_new(json_object_get(ml, "annotations"), "kubernetes.io/change-cause", json_string("v3"));
    json_object_set_new(json_object_get(live, "spec"), "paused", json_true());
    json_object_set_new(live, "extra", json_string("top-level field added later"));
    json_t *r = fl_revision_restore(live, data, NULL);
    assert_true(json_equal(json_object_get(r, "spec"), json_object_get(old, "spec")));
    assert_null(json_object_get(r, "extra"));
    assert_true(json_equal(json_object_get(r, "status"), json_object_get(live, "status")));
    assert_string_equal(fl_json_meta(r, "resourceVersion"), "42");
    assert_null(fl_json_meta_map(r, "labels", "added"));
    assert_string_equal(fl_json_meta_map(r, "labels", FL_PP_ID_LABEL), "p-1");
    assert_string_equal(fl_json_meta_map(r, "annotations", FL_PP_NAME_ANNOTATION), "web");
    assert_null(fl_json_meta_map(r, "annotations", "kubernetes.io/change-cause"));
    /* what it writes delivers exactly what the revision recorded */
    json_t *back = fl_revision_data(r);
    assert_true(json_equal(back, data));
    json_decref(back);
    json_decref(r);
    r = fl_revision_restore(live, data, "v1 again");
    assert_string_equal(fl_json_meta_map(r, "annotations", "kubernetes.io/change-cause"), "v1 again");
    json_decref(r);
    assert_null(fl_revision_restore(live, NULL, NULL));
    json_decref(data);
    json_decref(live);
    json_decref(old);
}

/* A ControllerRevision numbered n recording tmpl with spec.replicas set to replicas. */
static json_t *revision_of(const char *tmpl_text, int n, int replicas)
{
    json_t *t = js(tmpl_text);
    json_object_set_new(json_object_get(t, "spec"), "replicas", json_integer(replicas));
    json_t *cr = json_pack("{ss ss so sI}", "apiVersion", "apps/v1", "kind", "ControllerRevision", "data",
                           fl_revision_data(t), "revision", (json_int_t)n);
    json_decref(t);
    return cr;
}

static void test_previous_is_the_newest_revision_that_differs_from_the_template_now(void **state)
{
    (void)state;
    json_t *tmpl = js(TEMPLATE); /* replicas 2 */
    json_t *revs = json_array();
    json_array_append_new(revs, revision_of(TEMPLATE, 3, 2)); /* the current one */
    assert_null(fl_revision_previous(tmpl, revs));
    json_array_append_new(revs, revision_of(TEMPLATE, 1, 5));
    json_array_append_new(revs, revision_of(TEMPLATE, 2, 4));
    assert_true(fl_revision_is_current(tmpl, json_array_get(revs, 0)));
    assert_false(fl_revision_is_current(tmpl, json_array_get(revs, 1)));
    const json_t *p = fl_revision_previous(tmpl, revs);
    assert_non_null(p);
    assert_int_equal(fl_json_path_int(p, "revision", 0), 2);
    /* the newest change not recorded yet: the newest recorded one is the previous */
    json_object_set_new(json_object_get(tmpl, "spec"), "replicas", json_integer(9));
    assert_int_equal(fl_json_path_int(fl_revision_previous(tmpl, revs), "revision", 0), 3);
    /* a status write or a policy's claim is not a change */
    json_decref(tmpl);
    tmpl = js(TEMPLATE);
    json_object_set_new(json_object_get(tmpl, "status"), "replicas", json_integer(0));
    json_object_set_new(json_object_get(json_object_get(tmpl, "metadata"), "labels"), FL_PP_ID_LABEL,
                        json_string("p-2"));
    assert_int_equal(fl_json_path_int(fl_revision_previous(tmpl, revs), "revision", 0), 2);
    assert_null(fl_revision_previous(tmpl, NULL));
    json_decref(revs);
    json_decref(tmpl);
}

static void test_secrets_and_revisions_themselves_get_no_revisions(void **state)
{
    (void)state;
    assert_true(fl_revision_kept_for("apps/v1", "Deployment"));
    assert_true(fl_revision_kept_for("v1", "ConfigMap"));
    assert_true(fl_revision_kept_for("example.io/v1", "Secret")); /* another group's kind */
    assert_false(fl_revision_kept_for("v1", "Secret"));
    assert_false(fl_revision_kept_for("apps/v1", "ControllerRevision"));
    assert_false(fl_revision_kept_for(NULL, "Deployment"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_is_the_delivered_template_without_status_or_control_plane_keys),
        cmocka_unit_test(test_status_and_server_metadata_changes_keep_the_hash_and_the_spec_does_not),
        cmocka_unit_test(test_name_is_the_template_name_and_hash_cut_to_253),
        cmocka_unit_test(test_history_limit_defaults_and_flags_a_bad_value),
        cmocka_unit_test(test_restore_writes_data_back_and_keeps_the_claim_and_status),
        cmocka_unit_test(test_previous_is_the_newest_revision_that_differs_from_the_template_now),
        cmocka_unit_test(test_secrets_and_revisions_themselves_get_no_revisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
