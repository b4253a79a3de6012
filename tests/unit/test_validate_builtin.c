/* test_validate_builtin.c - the built-in kinds' semantic validators (src/api/validate_builtin.c)
 * on their own: the cron schedule parser's accept/refuse table and its error texts, and the
 * rules whose message shape is easy to get subtly wrong (Go-rendered label maps, resource
 * comparisons, port names). The end-to-end behaviour through kubectl is in
 * tests/e2e/test_validation_builtin.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/validate.h"

/* Run validator fn over the JSON text; returns the causes (caller decrefs). */
static json_t *run(fl_validate_fn fn, const char *text)
{
    json_error_t e;
    json_t *obj = json_loads(text, 0, &e);
    assert_non_null(obj);
    json_t *causes = json_array();
    fn(NULL, obj, NULL, causes);
    json_decref(obj);
    return causes;
}

/* The message of the only cause for field, or NULL when there is none; fails on two. */
static const char *message_for(const json_t *causes, const char *field)
{
    const char *found = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "field")), field))
            continue;
        assert_null(found);
        found = json_string_value(json_object_get(c, "message"));
    }
    return found;
}

static json_t *cronjob(const char *schedule)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"schedule\":\"%s\",\"jobTemplate\":{\"spec\":{\"template\":"
             "{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"a\",\"image\":\"b\"}]}}}}}}",
             schedule);
    return run(fl_validate_cronjob, text);
}

static void test_cron_schedules_upstream_accepts_are_accepted(void **state)
{
    static const char *const good[] = {
        "* * * * *",   "*/5 * * * *",    "0 0 1 1 *",         "0-59/15 0-23 1-31 1-12 0-6", "30 4 * jan,FEB sun-sat",
        "5/10 * * * *", "0 12 ? * mon-fri", "@hourly",          "@yearly",                    "@every 1h30m",
        "@every 500ms", " 0  0 * * * ",    "1,2,,3 * * * *",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *causes = cronjob(good[i]);
        if (json_array_size(causes))
            fail_msg("%s refused: %s", good[i], message_for(causes, "spec.schedule"));
        json_decref(causes);
    }
}

static void test_cron_schedules_carry_the_parsers_error_text(void **state)
{
    static const struct {
        const char *schedule, *message;
    } bad[] = {
        {"60 * * * *", "end of range (60) above maximum (59): 60"},
        {"* 24 * * *", "end of range (24) above maximum (23): 24"},
        {"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
        {"* * * 13 *", "end of range (13) above maximum (12): 13"},
        {"* * * * 7", "end of range (7) above maximum (6): 7"},
        {"1-2-3 * * * *", "too many hyphens: 1-2-3"},
        {"*/2/3 * * * *", "too many slashes: */2/3"},
        {"* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"},
        {"@every x", "failed to parse duration @every x: time: invalid duration \"x\""},
        {"x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *causes = cronjob(bad[i].schedule);
        char want[256];
        snprintf(want, sizeof want, "Invalid value: \"%s\": %s", bad[i].schedule, bad[i].message);
        const char *got = message_for(causes, "spec.schedule");
        if (!got || strcmp(got, want))
            fail_msg("%s: got %s, want %s", bad[i].schedule, got ? got : "(nothing)", want);
        json_decref(causes);
    }
}

static void test_selector_mismatch_prints_labels_as_go_does(void **state)
{
    json_t *causes = run(fl_validate_deployment,
                         "{\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"a\"}},\"template\":{\"metadata\":"
                         "{\"labels\":{\"tier\":\"web\",\"app\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                         "\"image\":\"i\"}]}}}}");
    assert_string_equal(message_for(causes, "spec.template.metadata.labels"),
                        "Invalid value: map[string]string{\"app\":\"b\", \"tier\":\"web\"}: "
                        "`selector` does not match template `labels`");
    assert_int_equal(json_array_size(causes), 1);
    json_decref(causes);
}

static void test_hugepages_request_must_equal_its_limit(void **state)
{
    json_t *causes = run(fl_validate_pod,
                         "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
                         "\"requests\":{\"hugepages-2Mi\":\"64Mi\",\"memory\":\"1Gi\"},"
                         "\"limits\":{\"hugepages-2Mi\":\"128Mi\",\"memory\":\"2Gi\"}}}]}}");
    assert_string_equal(message_for(causes, "spec.containers[0].resources.requests[hugepages-2Mi]"),
                        "Invalid value: \"64Mi\": must be equal to hugepages-2Mi limit of 128Mi");
    assert_null(message_for(causes, "spec.containers[0].resources.requests[memory]"));
    json_decref(causes);
}

static void test_port_names_list_every_broken_rule(void **state)
{
    json_t *causes = run(fl_validate_pod, "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"ports\":["
                                          "{\"containerPort\":1,\"name\":\"-1234567890123456\"}]}]}}");
    /* too long, no letter, leading hyphen: three causes on the same field */
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(causes, i, c) n++;
    assert_int_equal(n, 3);
    json_decref(causes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cron_schedules_upstream_accepts_are_accepted),
        cmocka_unit_test(test_cron_schedules_carry_the_parsers_error_text),
        cmocka_unit_test(test_selector_mismatch_prints_labels_as_go_does),
        cmocka_unit_test(test_hugepages_request_must_equal_its_limit),
        cmocka_unit_test(test_port_names_list_every_broken_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
