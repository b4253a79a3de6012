/* test_migration.c - how the migration marks travel: policy → binding (detector), binding
 * and template → Work (binding controller), and when a binding's change re-renders its Works
 * (controllers/migration.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controllers/migration.h"
#include "core/json_get.h"
#include "core/wellknown.h"

static json_t *with_annotations(const char *json)
{
    json_error_t e;
    json_t *anns = json_loads(json, 0, &e);
    assert_non_null(anns);
    return json_pack("{s:{s:o}}", "metadata", "annotations", anns);
}

static void test_policy_marks_follow_the_policy_but_a_release_stays_on_the_binding(void **state)
{
    (void)state;
    json_t *banns = json_pack("{s:s, s:s, s:s}", FL_ADOPT_KEY, "true", FL_PROMOTED_FROM_ANNOTATION, "member2", "other",
                              "kept");
    json_t *panns = json_pack("{s:s}", FL_RELEASE_ANNOTATION, "true");
    fl_migration_binding_marks(banns, panns);
    /* the policy has no adoption mark any more: neither has the binding */
    assert_null(json_object_get(banns, FL_ADOPT_KEY));
    assert_null(json_object_get(banns, FL_PROMOTED_FROM_ANNOTATION));
    assert_string_equal(fl_json_str(banns, FL_RELEASE_ANNOTATION), "true");
    assert_string_equal(fl_json_str(banns, "other"), "kept");
    /* the policy's release lifted: the binding's own (set by hand) stays */
    fl_migration_binding_marks(banns, NULL);
    assert_string_equal(fl_json_str(banns, FL_RELEASE_ANNOTATION), "true");
    json_decref(banns);
    json_decref(panns);
}

static void test_a_work_carries_the_binding_marks_and_a_promoted_dependency_its_template_mark(void **state)
{
    (void)state;
    json_t *binding = with_annotations("{\"" FL_RELEASE_ANNOTATION "\":\"true\",\"" FL_ADOPT_KEY "\":\"true\"}");
    json_t *tmd = json_pack("{s:{s:s}}", "annotations", FL_PROMOTED_FROM_ANNOTATION, "member2");
    json_t *wanns = json_object();
    fl_migration_work_marks(binding, tmd, wanns);
    assert_string_equal(fl_json_str(wanns, FL_RELEASE_ANNOTATION), "true");
    assert_string_equal(fl_json_str(wanns, FL_ADOPT_KEY), "true");
    /* an attached binding has no policy: the template's promote mark is the permission */
    assert_string_equal(fl_json_str(wanns, FL_PROMOTED_FROM_ANNOTATION), "member2");
    json_decref(wanns);
    /* a release that is not "true" releases nothing */
    json_t *other = with_annotations("{\"" FL_RELEASE_ANNOTATION "\":\"false\"}");
    wanns = json_object();
    fl_migration_work_marks(other, NULL, wanns);
    assert_int_equal(json_object_size(wanns), 0);
    json_decref(wanns);
    json_decref(other);
    json_decref(binding);
    json_decref(tmd);
}

static void test_only_a_change_of_the_marks_counts_as_one(void **state)
{
    (void)state;
    json_t *a = with_annotations("{\"x\":\"1\"}");
    json_t *b = with_annotations("{\"x\":\"2\"}");
    json_t *c = with_annotations("{\"x\":\"1\",\"" FL_RELEASE_ANNOTATION "\":\"true\"}");
    assert_true(fl_migration_marks_same(a, b));
    assert_true(fl_migration_marks_digest(a) == fl_migration_marks_digest(b));
    assert_false(fl_migration_marks_same(a, c));
    assert_false(fl_migration_marks_digest(a) == fl_migration_marks_digest(c));
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_marks_follow_the_policy_but_a_release_stays_on_the_binding),
        cmocka_unit_test(test_a_work_carries_the_binding_marks_and_a_promoted_dependency_its_template_mark),
        cmocka_unit_test(test_only_a_change_of_the_marks_counts_as_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
