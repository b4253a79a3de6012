/* test_interp_requirements.c - ReplicaRequirements and Components from a customization
 * (interp/requirements.h), checked and made canonical the same way for the Lua and webhook
 * backends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "interp/requirements.h"

static char *check(const char *text, char **canonical)
{
    json_t *req = json_loads(text, 0, NULL);
    assert_non_null(req);
    char *why = NULL;
    int rc = fl_interp_check_requirements(req, &why);
    if (canonical)
        *canonical = rc ? NULL : json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(req);
    assert_true(rc == 0 ? why == NULL : rc == FL_EINVAL && why != NULL);
    return why;
}

static void quantities_become_canonical_strings(void **state)
{
    (void)state;
    char *out = NULL;
    assert_null(check("{\"resourceRequest\":{\"cpu\":0.5,\"memory\":\"1024Mi\"},\"namespace\":\"web\"}", &out));
    assert_string_equal(out, "{\"namespace\":\"web\",\"resourceRequest\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}");
    free(out);
    assert_null(check("{\"nodeClaim\":null,\"priorityClassName\":null}", NULL)); /* null: absent */
}

static void a_field_of_the_wrong_type_is_named(void **state)
{
    (void)state;
    char *why = check("{\"namespace\":5}", NULL);
    assert_string_equal(why, "namespace: must be a string");
    free(why);
    why = check("{\"nodeClaim\":{\"tolerations\":{}}}", NULL);
    assert_string_equal(why, "nodeClaim.tolerations: must be an array");
    free(why);
    why = check("{\"resourceRequest\":{\"cpu\":true}}", NULL);
    assert_string_equal(why, "resourceRequest.cpu: must be a quantity");
    free(why);
}

static void a_bad_quantity_is_quoted_on_one_short_line(void **state)
{
    (void)state;
    char *why = check("{\"resourceRequest\":{\"cpu\":\"lots\\nof it\"}}", NULL);
    assert_string_equal(why, "resourceRequest.cpu: invalid quantity \"lots of it\"");
    free(why);
    char text[200], want[200];
    memset(text, 'x', 100);
    text[100] = '\0';
    char doc[300];
    snprintf(doc, sizeof doc, "{\"resourceRequest\":{\"cpu\":\"%s\"}}", text);
    why = check(doc, NULL);
    snprintf(want, sizeof want, "resourceRequest.cpu: invalid quantity \"%.64s...\"", text);
    assert_string_equal(why, want);
    free(why);
}

static char *check_components(const char *text, char **canonical)
{
    json_t *c = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(c);
    char *why = NULL;
    int rc = fl_interp_check_components(c, &why);
    if (canonical)
        *canonical = rc ? NULL : json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    assert_true(rc == 0 ? why == NULL : rc == FL_EINVAL && why != NULL);
    return why;
}

static void components_keep_karmadas_fields_with_canonical_quantities(void **state)
{
    (void)state;
    char *out = NULL;
    /* a component's namespace and unknown members are not Karmada's: dropped; an empty
     * replicaRequirements says nothing: dropped */
    assert_null(check_components("[{\"name\":\"jobmanager\",\"replicas\":1,\"x\":1,"
                                 "\"replicaRequirements\":{\"namespace\":\"n\",\"resourceRequest\":{\"cpu\":1,"
                                 "\"memory\":\"2048Mi\"},\"priorityClassName\":\"high\"}},"
                                 "{\"name\":\"taskmanager\",\"replicas\":0,\"replicaRequirements\":{}}]",
                                 &out));
    assert_string_equal(out, "[{\"name\":\"jobmanager\",\"replicaRequirements\":{\"priorityClassName\":\"high\","
                             "\"resourceRequest\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}},\"replicas\":1},"
                             "{\"name\":\"taskmanager\",\"replicas\":0}]");
    free(out);
    assert_null(check_components("[]", NULL));
}

static void a_bad_component_is_named_by_index_and_field(void **state)
{
    (void)state;
    static const struct {
        const char *in, *why;
    } cases[] = {
        {"{}", ": must be an array of components"},
        {"[5]", "[0]: must be an object {name, replicas, replicaRequirements}"},
        {"[{\"replicas\":1}]", "[0].name: must be a non-empty string"},
        {"[{\"name\":\"\",\"replicas\":1}]", "[0].name: must be a non-empty string"},
        {"[{\"name\":\"abcdefghijklmnopqrstuvwxyz0123456\",\"replicas\":1}]", "[0].name: must be at most 32 characters"},
        {"[{\"name\":\"a\",\"replicas\":1},{\"name\":\"b\",\"replicas\":-1}]",
         "[1].replicas: must be an integer from 0 to 2147483647"},
        {"[{\"name\":\"a\"}]", "[0].replicas: must be an integer from 0 to 2147483647"},
        {"[{\"name\":\"a\",\"replicas\":2147483648}]", "[0].replicas: must be an integer from 0 to 2147483647"},
        {"[{\"name\":\"a\",\"replicas\":1},{\"name\":\"a\",\"replicas\":2}]",
         "[1].name: \"a\" is also the name of component 0; names must be unique"},
        {"[{\"name\":\"a\",\"replicas\":1,\"replicaRequirements\":[]}]", "[0].replicaRequirements: must be an object"},
        {"[{\"name\":\"a\",\"replicas\":1,\"replicaRequirements\":{\"resourceRequest\":{\"cpu\":\"lots\"}}}]",
         "[0].replicaRequirements.resourceRequest.cpu: invalid quantity \"lots\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *why = check_components(cases[i].in, NULL);
        if (!why || strcmp(why, cases[i].why))
            fail_msg("%s: got \"%s\", want \"%s\"", cases[i].in, why ? why : "(accepted)", cases[i].why);
        free(why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantities_become_canonical_strings),
        cmocka_unit_test(a_field_of_the_wrong_type_is_named),
        cmocka_unit_test(a_bad_quantity_is_quoted_on_one_short_line),
        cmocka_unit_test(components_keep_karmadas_fields_with_canonical_quantities),
        cmocka_unit_test(a_bad_component_is_named_by_index_and_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
