/* test_json_get.c - the shared field accessors (core/json_get.h) and the error text idiom
 * (core/err.h fl_errmsg). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"

static json_t *obj(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    return o;
}

static void getters_answer_null_for_missing_or_mistyped_members(void **state)
{
    (void)state;
    json_t *o = obj("{\"metadata\":{\"name\":\"web\",\"labels\":{\"app\":\"nginx\",\"n\":1}},"
                    "\"spec\":{\"replicas\":3,\"template\":{\"metadata\":{\"name\":\"t\"}}}}");
    assert_string_equal(fl_json_meta(o, "name"), "web");
    assert_null(fl_json_meta(o, "namespace"));
    assert_string_equal(fl_json_meta_map(o, "labels", "app"), "nginx");
    assert_null(fl_json_meta_map(o, "labels", "n"));      /* a number, not a string */
    assert_null(fl_json_meta_map(o, "annotations", "x")); /* no such map */
    assert_null(fl_json_str(o, "spec"));                  /* an object, not a string */
    assert_non_null(fl_json_obj(o, "spec"));
    assert_null(fl_json_obj(o, "metadata.name"));
    assert_null(fl_json_str(NULL, "x"));
    assert_null(fl_json_meta(NULL, "name"));
    assert_string_equal(fl_json_path_str(o, "spec.template.metadata.name"), "t");
    assert_int_equal(json_integer_value(fl_json_path(o, "spec.replicas")), 3);
    assert_null(fl_json_path(o, "spec.replicas.x"));     /* a step through a number */
    assert_null(fl_json_path_str(o, "spec.template"));
    assert_ptr_equal(fl_json_path(o, ""), o);
    char longkey[200];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    assert_null(fl_json_path(o, longkey));
    json_decref(o);
}

static void path_int_answers_the_default_unless_the_value_is_an_integer(void **state)
{
    (void)state;
    json_t *o = obj("{\"spec\":{\"replicas\":3,\"ratio\":0.5,\"count\":\"7\",\"zero\":0}}");
    assert_int_equal(fl_json_path_int(o, "spec.replicas", -1), 3);
    assert_int_equal(fl_json_path_int(o, "spec.zero", -1), 0);
    assert_int_equal(fl_json_path_int(o, "spec.ratio", -1), -1); /* a real */
    assert_int_equal(fl_json_path_int(o, "spec.count", -1), -1); /* a string */
    assert_int_equal(fl_json_path_int(o, "spec.missing", 9), 9);
    assert_int_equal(fl_json_path_int(NULL, "spec.replicas", 4), 4);
    json_decref(o);
}

static void ensure_obj_makes_a_missing_child_and_keeps_an_existing_one(void **state)
{
    (void)state;
    json_t *o = obj("{\"status\":{\"x\":1},\"spec\":5}");
    json_t *st = fl_json_ensure_obj(o, "status");
    assert_int_equal(json_integer_value(json_object_get(st, "x")), 1);
    json_t *spec = fl_json_ensure_obj(o, "spec"); /* of another type: replaced */
    assert_true(json_is_object(spec));
    assert_int_equal(json_object_size(spec), 0);
    json_t *made = fl_json_ensure_obj(o, "new");
    assert_ptr_equal(made, json_object_get(o, "new"));
    json_decref(o);
}

static void own_child_changes_leave_the_original_as_it_was(void **state)
{
    (void)state;
    json_t *orig = obj("{\"metadata\":{\"name\":\"a\",\"labels\":{\"k\":\"v\"}}}");
    json_t *view = fl_json_shallow_copy(orig);
    json_t *md = fl_json_own_child(view, "metadata");
    assert_non_null(md);
    json_object_set_new(md, "name", json_string("b"));
    assert_string_equal(fl_json_meta(orig, "name"), "a");
    assert_string_equal(fl_json_meta(view, "name"), "b");
    /* below the owned level, values stay shared */
    assert_ptr_equal(json_object_get(md, "labels"), json_object_get(json_object_get(orig, "metadata"), "labels"));
    assert_null(fl_json_own_child(view, "spec"));
    json_decref(view);
    json_decref(orig);
}

static void finalizers_are_added_once_and_removed_without_touching_a_shared_list(void **state)
{
    (void)state;
    json_t *orig = obj("{\"metadata\":{\"finalizers\":[\"a\",\"f\",\"f\"]}}");
    assert_true(fl_json_has_finalizer(orig, "f"));
    assert_false(fl_json_has_finalizer(orig, "g"));
    json_t *copy = fl_json_meta_view(orig); /* metadata owned, the list still shared */
    assert_false(fl_json_set_finalizer(copy, "a", true));
    assert_true(fl_json_set_finalizer(copy, "f", false));
    assert_false(fl_json_has_finalizer(copy, "f"));
    assert_int_equal(json_array_size(json_object_get(json_object_get(copy, "metadata"), "finalizers")), 1);
    assert_int_equal(json_array_size(json_object_get(json_object_get(orig, "metadata"), "finalizers")), 3);
    assert_true(fl_json_set_finalizer(copy, "g", true));
    assert_true(fl_json_has_finalizer(copy, "g"));
    json_decref(copy);
    json_decref(orig);

    json_t *bare = json_object(); /* no metadata at all */
    assert_true(fl_json_set_finalizer(bare, "x", true));
    assert_true(fl_json_has_finalizer(bare, "x"));
    assert_false(fl_json_set_finalizer(bare, "y", false));
    json_decref(bare);
}

static void errmsg_prefers_the_message_over_the_code(void **state)
{
    (void)state;
    assert_string_equal(fl_errmsg("quota exceeded", FL_EINVAL), "quota exceeded");
    assert_string_equal(fl_errmsg("", FL_ENOTFOUND), fl_strerror(FL_ENOTFOUND));
    assert_string_equal(fl_errmsg(NULL, FL_ECONFLICT), fl_strerror(FL_ECONFLICT));
}

static void set_first(char **err, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_err_vset(err, where, fmt, ap);
    va_end(ap);
}

static void err_vset_keeps_the_first_error_with_where_it_happened(void **state)
{
    (void)state;
    char *err = NULL;
    set_first(&err, "spec.replicas", "expected %s, got %d", "a string", 3);
    assert_string_equal(err, "spec.replicas: expected a string, got 3");
    set_first(&err, "spec.other", "a later error");
    assert_string_equal(err, "spec.replicas: expected a string, got 3");
    free(err);
    set_first(NULL, "x", "nobody asked"); /* no place to put it: nothing happens */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(getters_answer_null_for_missing_or_mistyped_members),
        cmocka_unit_test(path_int_answers_the_default_unless_the_value_is_an_integer),
        cmocka_unit_test(ensure_obj_makes_a_missing_child_and_keeps_an_existing_one),
        cmocka_unit_test(own_child_changes_leave_the_original_as_it_was),
        cmocka_unit_test(finalizers_are_added_once_and_removed_without_touching_a_shared_list),
        cmocka_unit_test(errmsg_prefers_the_message_over_the_code),
        cmocka_unit_test(err_vset_keeps_the_first_error_with_where_it_happened),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
