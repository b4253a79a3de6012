/* test_validate_kpt.c - kpt's ResourceGroup as served (src/api/validate_kpt.c and its row
 * in the kind table): the fields its CRD requires, a listed resource's kind and name not
 * empty, and a field of the wrong type named by the type check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/kinds.h"
#include "api/validate.h"
#include "testutil.h"

static const fl_kind *rg_kind(void)
{
    const fl_kind *k = fl_kind_by_gvk("kpt.dev/v1alpha1", "ResourceGroup");
    assert_non_null(k);
    return k;
}

/* The fields of the causes fl_validate_object finds in text (JSON with ' for "), joined by
 * spaces; a new string. */
static char *cause_fields(const char *text)
{
    json_t *o = test_json(text), *causes = json_array();
    fl_validate_object(rg_kind(), o, NULL, causes);
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(causes, i, c) n += strlen(json_string_value(json_object_get(c, "field"))) + 1;
    char *out = calloc(1, n + 1);
    json_array_foreach(causes, i, c) {
        if (i)
            strcat(out, " ");
        strcat(out, json_string_value(json_object_get(c, "field")));
    }
    json_decref(causes);
    json_decref(o);
    return out;
}

#define META "'apiVersion': 'kpt.dev/v1alpha1', 'kind': 'ResourceGroup', 'metadata': {'name': 'inv', 'namespace': 'default'}"

static void test_the_kind_is_served_namespaced_with_a_status(void **state)
{
    (void)state;
    const fl_kind *k = rg_kind();
    assert_string_equal(k->resource, "resourcegroups");
    assert_string_equal(k->singular, "resourcegroup");
    assert_true(k->namespaced);
    assert_true(k->has_status);
    assert_null(k->short_names[0]); /* kpt's CRD declares none */
}

static void test_a_listed_resource_needs_kind_and_name_and_the_crds_required_fields(void **state)
{
    (void)state;
    char *f = cause_fields("{" META ", 'spec': {'resources': ["
                           "{'group': 'apps', 'kind': 'Deployment', 'namespace': 'default', 'name': 'web'},"
                           "{'group': '', 'namespace': 'default', 'name': 'x'},"
                           "{'group': '', 'kind': 'ConfigMap', 'namespace': 'default', 'name': ''},"
                           "{'kind': 'Namespace', 'name': 'team-a'}]}}");
    assert_string_equal(f, "spec.resources[1].kind spec.resources[2].name spec.resources[3].group "
                           "spec.resources[3].namespace");
    free(f);
    /* a cluster-scoped resource: group and namespace present and empty */
    f = cause_fields("{" META ", 'spec': {'resources': [{'group': '', 'kind': 'Namespace', 'namespace': '',"
                     " 'name': 'team-a'}], 'descriptor': {'links': [{'url': 'https://example.com'}]},"
                     " 'subgroups': [{'namespace': 'default'}]}}");
    assert_string_equal(f, "spec.subgroups[0].name spec.descriptor.links[0].description");
    free(f);
}

static void test_a_status_needs_what_kpts_crd_requires(void **state)
{
    (void)state;
    char *f = cause_fields("{" META ", 'spec': {}, 'status': {'resourceStatuses': ["
                           "{'group': '', 'kind': 'ConfigMap', 'namespace': 'default', 'name': 'x',"
                           " 'conditions': [{'type': 'Ready'}]}],"
                           " 'conditions': [{'status': 'True'}]}}");
    assert_string_equal(f, "status.observedGeneration status.conditions[0].type "
                           "status.resourceStatuses[0].status status.resourceStatuses[0].conditions[0].status");
    free(f);
    f = cause_fields("{" META ", 'spec': {'resources': []}, 'status': {'observedGeneration': 1}}");
    assert_string_equal(f, "");
    free(f);
}

static void test_a_field_of_the_wrong_type_is_named(void **state)
{
    (void)state;
    json_t *o = test_json("{" META ", 'spec': {'resources': [{'group': '', 'kind': 5, 'namespace': 'default',"
                          " 'name': 'x'}]}}");
    char *msg = NULL;
    assert_int_not_equal(fl_validate_types(rg_kind(), o, &msg), 0);
    assert_non_null(strstr(msg, "spec.resources[0].kind"));
    free(msg);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_kind_is_served_namespaced_with_a_status),
        cmocka_unit_test(test_a_listed_resource_needs_kind_and_name_and_the_crds_required_fields),
        cmocka_unit_test(test_a_status_needs_what_kpts_crd_requires),
        cmocka_unit_test(test_a_field_of_the_wrong_type_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
