/* test_interp_requirements.c - ReplicaRequirements from a customization (interp/requirements.h),
 * checked and made canonical the same way for the Lua and webhook backends. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantities_become_canonical_strings),
        cmocka_unit_test(a_field_of_the_wrong_type_is_named),
        cmocka_unit_test(a_bad_quantity_is_quoted_on_one_short_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
