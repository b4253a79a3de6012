/* test_selector.c - label selectors (text and metav1.LabelSelector form) and field
 * selectors (src/core/selector.c): every operator, the Kubernetes matching rules
 * for missing keys, parse errors that name the offending text, and field values
 * with backslash escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/selector.h"

/* ---------- helpers ---------- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

/* Does label selector `sel` match the labels object given as JSON text? */
static bool lmatch(const char *sel, const char *labels_json)
{
    fl_labelsel *s = NULL;
    char *err = NULL;
    int rc = fl_labelsel_parse(sel, &s, &err);
    if (rc != 0)
        fail_msg("parse of \"%s\" failed: %s", sel, err);
    json_t *labels = labels_json ? J(labels_json) : NULL;
    bool m = fl_labelsel_match(s, labels);
    json_decref(labels);
    fl_labelsel_free(s);
    return m;
}

/* Parse must fail; returns the message (caller frees). */
static char *lerr(const char *sel)
{
    fl_labelsel *s = (fl_labelsel *)0x1;
    char *err = NULL;
    int rc = fl_labelsel_parse(sel, &s, &err);
    if (rc == 0)
        fail_msg("\"%s\" parsed but should not", sel);
    assert_int_equal(rc, FL_EINVAL);
    assert_null(s);
    assert_non_null(err);
    return err;
}

static void assert_lerr_contains(const char *sel, const char *needle)
{
    char *err = lerr(sel);
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" is \"%s\", expected it to mention \"%s\"", sel, err, needle);
    free(err);
}

static bool smatch(const char *structured_json, const char *labels_json)
{
    json_t *js = J(structured_json);
    fl_labelsel *s = NULL;
    char *err = NULL;
    if (fl_labelsel_from_json(js, &s, &err) != 0)
        fail_msg("structured selector %s failed: %s", structured_json, err);
    json_t *labels = J(labels_json);
    bool m = fl_labelsel_match(s, labels);
    json_decref(labels);
    json_decref(js);
    fl_labelsel_free(s);
    return m;
}

static void assert_serr(const char *structured_json, const char *needle)
{
    json_t *js = J(structured_json);
    fl_labelsel *s = (fl_labelsel *)0x1;
    char *err = NULL;
    assert_int_equal(fl_labelsel_from_json(js, &s, &err), FL_EINVAL);
    assert_null(s);
    assert_non_null(err);
    if (!strstr(err, needle))
        fail_msg("error for %s is \"%s\", expected \"%s\"", structured_json, err, needle);
    free(err);
    json_decref(js);
}

static bool fmatch(const char *sel, const char *obj_json)
{
    fl_fieldsel *s = NULL;
    char *err = NULL;
    if (fl_fieldsel_parse(sel, &s, &err) != 0)
        fail_msg("field selector \"%s\" failed: %s", sel, err);
    json_t *obj = J(obj_json);
    bool m = fl_fieldsel_match(s, obj);
    json_decref(obj);
    fl_fieldsel_free(s);
    return m;
}

static void assert_ferr(const char *sel, const char *needle)
{
    fl_fieldsel *s = (fl_fieldsel *)0x1;
    char *err = NULL;
    assert_int_equal(fl_fieldsel_parse(sel, &s, &err), FL_EINVAL);
    assert_null(s);
    assert_non_null(err);
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" is \"%s\", expected \"%s\"", sel, err, needle);
    free(err);
}

static const char *LBL = "{\"app\": \"web\", \"tier\": \"frontend\", \"app.kubernetes.io/name\": \"shop\", "
                         "\"version\": \"3\", \"empty\": \"\"}";

/* ---------- label selectors: operators ---------- */

static void test_empty_selector_matches_everything(void **state)
{
    assert_true(lmatch("", LBL));
    assert_true(lmatch("", "{}"));
    assert_true(lmatch("   ", NULL));
    fl_labelsel *s;
    char *err;
    assert_int_equal(fl_labelsel_parse("", &s, &err), 0);
    assert_true(fl_labelsel_empty(s));
    assert_null(err);
    fl_labelsel_free(s);
    assert_int_equal(fl_labelsel_parse("a", &s, &err), 0);
    assert_false(fl_labelsel_empty(s));
    fl_labelsel_free(s);
    assert_true(fl_labelsel_empty(NULL));
    assert_true(fl_labelsel_match(NULL, NULL));
}

static void test_equals_and_double_equals(void **state)
{
    assert_true(lmatch("app=web", LBL));
    assert_true(lmatch("app==web", LBL));
    assert_false(lmatch("app=db", LBL));
    assert_false(lmatch("missing=web", LBL));
    assert_true(lmatch("app=web,tier=frontend", LBL));
    assert_false(lmatch("app=web,tier=backend", LBL));
}

static void test_equals_empty_value_matches_empty_label(void **state)
{
    assert_true(lmatch("empty=", LBL));
    assert_true(lmatch("empty==,app=web", LBL));
    assert_false(lmatch("app=", LBL));
    assert_false(lmatch("missing=", LBL));
}

static void test_not_equals_matches_missing_key(void **state)
{
    assert_true(lmatch("app!=db", LBL));
    assert_false(lmatch("app!=web", LBL));
    assert_true(lmatch("missing!=x", LBL));
    assert_true(lmatch("missing!=x", NULL));
}

static void test_in_requires_key(void **state)
{
    assert_true(lmatch("app in (web,db)", LBL));
    assert_true(lmatch("app in (web)", LBL));
    assert_false(lmatch("app in (db,cache)", LBL));
    assert_false(lmatch("missing in (web)", LBL));
    assert_false(lmatch("missing in (web)", NULL));
}

static void test_notin_matches_missing_key(void **state)
{
    assert_true(lmatch("app notin (db,cache)", LBL));
    assert_false(lmatch("app notin (db,web)", LBL));
    assert_true(lmatch("missing notin (web)", LBL));
    assert_true(lmatch("missing notin (web)", NULL));
}

static void test_in_with_empty_values(void **state)
{
    assert_true(lmatch("empty in (,x)", LBL));
    assert_true(lmatch("empty in (x,)", LBL));
    assert_true(lmatch("empty in (x,,y)", LBL));
    assert_false(lmatch("empty in (x,y)", LBL));
}

static void test_exists_and_does_not_exist(void **state)
{
    assert_true(lmatch("app", LBL));
    assert_true(lmatch("empty", LBL));
    assert_false(lmatch("missing", LBL));
    assert_true(lmatch("!missing", LBL));
    assert_false(lmatch("!app", LBL));
    assert_true(lmatch("!app", NULL));
    assert_true(lmatch("app,!missing,tier", LBL));
}

static void test_greater_and_less_than(void **state)
{
    assert_true(lmatch("version>2", LBL));
    assert_false(lmatch("version>3", LBL));
    assert_true(lmatch("version<4", LBL));
    assert_false(lmatch("version<3", LBL));
    assert_false(lmatch("missing>0", LBL));
    assert_false(lmatch("app>0", LBL)); /* not a number */
    assert_lerr_contains("version>x", "must be an integer");
}

static void test_keys_with_dns_prefix(void **state)
{
    assert_true(lmatch("app.kubernetes.io/name=shop", LBL));
    assert_true(lmatch("app.kubernetes.io/name in (shop, cart)", LBL));
    assert_false(lmatch("app.kubernetes.io/name!=shop", LBL));
    assert_true(lmatch("!example.com/x", LBL));
}

static void test_whitespace_is_tolerated(void **state)
{
    assert_true(lmatch("  app = web ,  tier  ==  frontend  ", LBL));
    assert_true(lmatch("app in(web , db)", LBL));
    assert_true(lmatch("app notin ( db )", LBL));
    assert_true(lmatch("\tapp\t!=\tdb\t", LBL));
    assert_true(lmatch("! missing", LBL));
    assert_true(lmatch("app ,tier", LBL));
}

static void test_in_and_notin_words_are_values_in_value_position(void **state)
{
    assert_true(lmatch("k=in", "{\"k\": \"in\"}"));
    assert_true(lmatch("k in (notin, in)", "{\"k\": \"notin\"}"));
}

static void test_duplicate_values_in_set(void **state)
{
    assert_true(lmatch("app in (web,web,web)", LBL));
}

static void test_non_string_label_values_never_equal(void **state)
{
    assert_false(lmatch("n=1", "{\"n\": 1}"));
    assert_true(lmatch("n", "{\"n\": 1}"));
    assert_true(lmatch("n!=1", "{\"n\": 1}"));
}

/* ---------- label selectors: parse errors ---------- */

static void test_error_names_unexpected_paren(void **state)
{
    assert_lerr_contains("app=(web)", "found '('");
    assert_lerr_contains("app=(web)", "app=(web)");
}

static void test_error_on_missing_operator(void **state)
{
    assert_lerr_contains("app web", "found 'web'");
    assert_lerr_contains("app in web", "expected '('");
}

static void test_error_on_unclosed_value_list(void **state)
{
    assert_lerr_contains("app in (web", "end of string");
    assert_lerr_contains("app in (web db)", "found 'db'");
}

static void test_error_on_empty_value_list(void **state)
{
    assert_lerr_contains("app in ()", "at least one value");
    assert_lerr_contains("app notin ()", "at least one value");
}

static void test_error_on_trailing_and_leading_comma(void **state)
{
    assert_lerr_contains("app=web,", "end of string");
    assert_lerr_contains(",app=web", "found ','");
    assert_lerr_contains("a,,b", "found ','");
}

static void test_error_on_bad_operators(void **state)
{
    assert_lerr_contains("app=!web", "found '!'");
    assert_lerr_contains("!app=web", "found '='");
    assert_lerr_contains("app===web", "found '='");
    assert_lerr_contains("=web", "found '='");
    assert_lerr_contains("!", "end of string");
    assert_lerr_contains("app>", "end of string");
}

static void test_error_on_invalid_key(void **state)
{
    assert_lerr_contains("-app=web", "key \"-app\"");
    assert_lerr_contains("Example.com/app=web", "prefix");
    assert_lerr_contains("a/b/c=web", "at most one '/'");
    assert_lerr_contains("example.com/=x", "name part must not be empty");
    assert_lerr_contains("/x=y", "prefix part must not be empty");
    assert_lerr_contains("a$b", "key \"a$b\"");
    char longkey[80];
    memset(longkey, 'k', 64);
    longkey[64] = '\0';
    assert_lerr_contains(longkey, "63");
    assert_true(lmatch("a-b_c.d", "{\"a-b_c.d\": \"\"}"));
}

static void test_error_on_invalid_value(void **state)
{
    assert_lerr_contains("app=-web", "value \"-web\"");
    assert_lerr_contains("app=web-", "value \"web-\"");
    assert_lerr_contains("app in (ok, b@d)", "value \"b@d\"");
    char sel[100] = "app=";
    memset(sel + 4, 'v', 64);
    sel[68] = '\0';
    assert_lerr_contains(sel, "63");
    assert_true(lmatch("app=a-b_c.9", "{\"app\": \"a-b_c.9\"}"));
}

/* ---------- structured metav1.LabelSelector ---------- */

static void test_structured_null_and_empty_match_everything(void **state)
{
    fl_labelsel *s;
    char *err;
    assert_int_equal(fl_labelsel_from_json(NULL, &s, &err), 0);
    assert_true(fl_labelsel_empty(s));
    assert_true(fl_labelsel_match(s, NULL));
    fl_labelsel_free(s);
    assert_true(smatch("{}", "{}"));
    assert_true(smatch("null", "{\"a\": \"b\"}"));
    assert_true(smatch("{\"matchLabels\": {}, \"matchExpressions\": []}", "{}"));
}

static void test_structured_match_labels(void **state)
{
    assert_true(smatch("{\"matchLabels\": {\"app\": \"web\", \"tier\": \"frontend\"}}", LBL));
    assert_false(smatch("{\"matchLabels\": {\"app\": \"web\", \"tier\": \"backend\"}}", LBL));
    assert_false(smatch("{\"matchLabels\": {\"app\": \"web\"}}", "{}"));
}

static void test_structured_operators(void **state)
{
    assert_true(smatch("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"db\", \"web\"]}]}",
                       LBL));
    assert_false(smatch("{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\", \"values\": [\"web\"]}]}", LBL));
    assert_true(smatch("{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}", LBL));
    assert_false(
        smatch("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}", LBL));
    assert_true(smatch("{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"Exists\"}]}", LBL));
    assert_false(smatch("{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"Exists\", \"values\": []}]}", LBL));
    assert_true(smatch("{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"DoesNotExist\"}]}", LBL));
    assert_false(smatch("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"DoesNotExist\"}]}", LBL));
}

static void test_structured_labels_and_expressions_are_anded(void **state)
{
    const char *sel = "{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": "
                      "[{\"key\": \"tier\", \"operator\": \"In\", \"values\": [\"frontend\"]}]}";
    assert_true(smatch(sel, LBL));
    assert_false(smatch(sel, "{\"app\": \"web\", \"tier\": \"backend\"}"));
    assert_false(smatch(sel, "{\"tier\": \"frontend\"}"));
}

static void test_structured_error_unsupported_operator(void **state)
{
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Foo\"}]}",
                "matchExpressions[0].operator: Unsupported value: \"Foo\"");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}, {\"key\": \"a\", \"operator\": \"in\"}]}",
                "matchExpressions[1].operator: Unsupported value: \"in\"");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\"}]}", "matchExpressions[0].operator: Required value");
}

static void test_structured_error_values_rules(void **state)
{
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\"}]}",
                "matchExpressions[0].values: Required value");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"NotIn\", \"values\": []}]}",
                "matchExpressions[0].values: Required value");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\", \"values\": [\"x\"]}]}",
                "matchExpressions[0].values: Forbidden");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": [\"ok\", \"-bad\"]}]}",
                "matchExpressions[0].values[1]: Invalid value: \"-bad\"");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": [1]}]}",
                "matchExpressions[0].values[0]");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": \"x\"}]}",
                "matchExpressions[0].values");
}

static void test_structured_error_bad_keys_and_shapes(void **state)
{
    assert_serr("{\"matchExpressions\": [{\"operator\": \"Exists\"}]}", "matchExpressions[0].key: Required value");
    assert_serr("{\"matchExpressions\": [{\"key\": \"a b\", \"operator\": \"Exists\"}]}",
                "matchExpressions[0].key: Invalid value: \"a b\"");
    assert_serr("{\"matchLabels\": {\"a b\": \"c\"}}", "matchLabels: Invalid value: \"a b\"");
    assert_serr("{\"matchLabels\": {\"a\": \"c d\"}}", "matchLabels[a]: Invalid value: \"c d\"");
    assert_serr("{\"matchLabels\": {\"a\": 1}}", "matchLabels[a]");
    assert_serr("{\"matchLabels\": []}", "matchLabels");
    assert_serr("{\"matchExpressions\": {}}", "matchExpressions");
    assert_serr("{\"matchExpressions\": [3]}", "matchExpressions[0]");
    assert_serr("[]", "selector");
}

/* ---------- field selectors ---------- */

static const char *POD = "{\"metadata\": {\"name\": \"web-1\", \"namespace\": \"prod\"}, "
                         "\"spec\": {\"nodeName\": \"n1\", \"replicas\": 3, \"paused\": false}, "
                         "\"status\": {\"phase\": \"Running\"}}";

static void test_field_equals_forms(void **state)
{
    assert_true(fmatch("metadata.name=web-1", POD));
    assert_true(fmatch("metadata.name==web-1", POD));
    assert_false(fmatch("metadata.name=web-2", POD));
    assert_true(fmatch("metadata.name=web-1,metadata.namespace=prod", POD));
    assert_false(fmatch("metadata.name=web-1,metadata.namespace=dev", POD));
}

static void test_field_not_equals(void **state)
{
    assert_true(fmatch("status.phase!=Pending", POD));
    assert_false(fmatch("status.phase!=Running", POD));
}

static void test_field_not_equals_matches_missing_field(void **state)
{
    assert_true(fmatch("spec.schedulerName!=default", POD));
    assert_true(fmatch("status.missing.deep!=x", POD));
    assert_false(fmatch("spec.schedulerName=default", POD));
    /* a missing field reads as the empty string */
    assert_true(fmatch("spec.schedulerName=", POD));
    assert_false(fmatch("spec.schedulerName!=", POD));
    assert_true(fmatch("spec.nodeName!=", POD));
}

static void test_field_numbers_and_booleans_compare_as_text(void **state)
{
    assert_true(fmatch("spec.replicas=3", POD));
    assert_false(fmatch("spec.replicas=03", POD));
    assert_true(fmatch("spec.paused=false", POD));
    assert_true(fmatch("spec.nullish=", "{\"spec\": {\"nullish\": null}}"));
}

static void test_field_empty_selector_and_empty_terms(void **state)
{
    assert_true(fmatch("", POD));
    assert_true(fmatch("metadata.name=web-1,,status.phase=Running", POD));
    assert_true(fmatch(",", POD));
    fl_fieldsel *s;
    char *err;
    assert_int_equal(fl_fieldsel_parse("", &s, &err), 0);
    assert_int_equal(fl_fieldsel_count(s), 0);
    fl_fieldsel_free(s);
    fl_fieldsel_free(NULL);
}

static void test_field_backslash_escapes(void **state)
{
    const char *obj = "{\"metadata\": {\"name\": \"a,b=c\\\\d\"}}"; /* name is a,b=c\d */
    assert_true(fmatch("metadata.name=a\\,b\\=c\\\\d", obj));
    assert_false(fmatch("metadata.name=a\\,b", obj));
    assert_true(fmatch("metadata.name!=a\\,b,metadata.name=a\\,b\\=c\\\\d", obj));
    fl_fieldsel *s;
    char *err;
    assert_int_equal(fl_fieldsel_parse("metadata.name=x\\,y", &s, &err), 0);
    assert_int_equal(fl_fieldsel_count(s), 1);
    assert_string_equal(fl_fieldsel_exact(s, "metadata.name"), "x,y");
    fl_fieldsel_free(s);
}

static void test_field_errors(void **state)
{
    assert_ferr("metadata.name", "no operator");
    assert_ferr("metadata.name=a,status.phase", "\"status.phase\"");
    assert_ferr("=x", "no field name");
    assert_ferr("metadata.name=a=b", "unescaped '='");
    assert_ferr("metadata.name=a\\x", "'\\x'");
    assert_ferr("metadata.name=a\\", "unfinished escape");
}

static void test_field_accessors(void **state)
{
    fl_fieldsel *s;
    char *err;
    assert_int_equal(fl_fieldsel_parse("metadata.name=a, status.phase != Running ,spec.nodeName==n1", &s, &err), 0);
    assert_int_equal(fl_fieldsel_count(s), 3);
    assert_string_equal(fl_fieldsel_field(s, 0), "metadata.name");
    assert_string_equal(fl_fieldsel_field(s, 1), "status.phase");
    assert_string_equal(fl_fieldsel_field(s, 2), "spec.nodeName");
    assert_null(fl_fieldsel_field(s, 3));
    assert_string_equal(fl_fieldsel_exact(s, "metadata.name"), "a");
    assert_string_equal(fl_fieldsel_exact(s, "spec.nodeName"), "n1");
    assert_null(fl_fieldsel_exact(s, "status.phase")); /* != does not pin */
    assert_null(fl_fieldsel_exact(s, "metadata.namespace"));
    fl_fieldsel_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_selector_matches_everything),
        cmocka_unit_test(test_equals_and_double_equals),
        cmocka_unit_test(test_equals_empty_value_matches_empty_label),
        cmocka_unit_test(test_not_equals_matches_missing_key),
        cmocka_unit_test(test_in_requires_key),
        cmocka_unit_test(test_notin_matches_missing_key),
        cmocka_unit_test(test_in_with_empty_values),
        cmocka_unit_test(test_exists_and_does_not_exist),
        cmocka_unit_test(test_greater_and_less_than),
        cmocka_unit_test(test_keys_with_dns_prefix),
        cmocka_unit_test(test_whitespace_is_tolerated),
        cmocka_unit_test(test_in_and_notin_words_are_values_in_value_position),
        cmocka_unit_test(test_duplicate_values_in_set),
        cmocka_unit_test(test_non_string_label_values_never_equal),
        cmocka_unit_test(test_error_names_unexpected_paren),
        cmocka_unit_test(test_error_on_missing_operator),
        cmocka_unit_test(test_error_on_unclosed_value_list),
        cmocka_unit_test(test_error_on_empty_value_list),
        cmocka_unit_test(test_error_on_trailing_and_leading_comma),
        cmocka_unit_test(test_error_on_bad_operators),
        cmocka_unit_test(test_error_on_invalid_key),
        cmocka_unit_test(test_error_on_invalid_value),
        cmocka_unit_test(test_structured_null_and_empty_match_everything),
        cmocka_unit_test(test_structured_match_labels),
        cmocka_unit_test(test_structured_operators),
        cmocka_unit_test(test_structured_labels_and_expressions_are_anded),
        cmocka_unit_test(test_structured_error_unsupported_operator),
        cmocka_unit_test(test_structured_error_values_rules),
        cmocka_unit_test(test_structured_error_bad_keys_and_shapes),
        cmocka_unit_test(test_field_equals_forms),
        cmocka_unit_test(test_field_not_equals),
        cmocka_unit_test(test_field_not_equals_matches_missing_field),
        cmocka_unit_test(test_field_numbers_and_booleans_compare_as_text),
        cmocka_unit_test(test_field_empty_selector_and_empty_terms),
        cmocka_unit_test(test_field_backslash_escapes),
        cmocka_unit_test(test_field_errors),
        cmocka_unit_test(test_field_accessors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
