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

#include "api/kinds.h"
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

/* Run kind's validator (create when old_text is NULL, else update) over the JSON text. */
static json_t *run_kind(const char *group, const char *resource, const char *text, const char *old_text)
{
    const fl_kind *k = fl_kind_by_resource(group, "v1", resource);
    if (!k || (k->storage_version && !k->validate)) /* autoscaling/v1 is validated as the v2 it is stored as */
        k = fl_kind_by_resource(group, "v2", resource);
    assert_non_null(k);
    assert_non_null(k->validate);
    json_error_t e;
    json_t *obj = json_loads(text, 0, &e), *old = old_text ? json_loads(old_text, 0, &e) : NULL;
    assert_non_null(obj);
    json_t *causes = json_array();
    k->validate(k, obj, old, causes);
    json_decref(obj);
    json_decref(old);
    return causes;
}

#define RBAC "rbac.authorization.k8s.io"

static void test_rbac_rules_and_role_refs(void **state)
{
    json_t *c = run_kind(RBAC, "roles",
                         "{\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]},"
                         "{\"resources\":[\"pods\"]},{\"nonResourceURLs\":[\"/healthz\"],\"verbs\":[\"get\"]}]}",
                         NULL);
    assert_int_equal(json_array_size(c), 3);
    assert_string_equal(message_for(c, "rules[1].verbs"), "Required value: verbs must contain at least one value");
    assert_string_equal(message_for(c, "rules[1].apiGroups"),
                        "Required value: resource rules must supply at least one api group");
    assert_string_equal(message_for(c, "rules[2].nonResourceURLs"),
                        "Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs");
    json_decref(c);
    /* a ClusterRole may name URLs; aggregation needs a selector */
    c = run_kind(RBAC, "clusterroles",
                 "{\"rules\":[{\"nonResourceURLs\":[\"/healthz\"],\"verbs\":[\"get\"]}],\"aggregationRule\":{}}", NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_string_equal(message_for(c, "aggregationRule.clusterRoleSelectors"),
                        "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil");
    json_decref(c);

    const char *rb = "{\"roleRef\":{\"apiGroup\":\"" RBAC "\",\"kind\":\"ClusterRole\",\"name\":\"view\"},"
                     "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"sa\"},{\"kind\":\"User\",\"name\":\"u\"},"
                     "{\"kind\":\"Robot\",\"name\":\"r\"}]}";
    c = run_kind(RBAC, "rolebindings", rb, NULL);
    assert_int_equal(json_array_size(c), 2);
    assert_string_equal(message_for(c, "subjects[1].apiGroup"),
                        "Unsupported value: \"\": supported values: \"" RBAC "\"");
    assert_string_equal(message_for(c, "subjects[2].kind"),
                        "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"");
    json_decref(c);
    /* a ClusterRoleBinding's ServiceAccount subject needs its namespace; roleRef is fixed */
    c = run_kind(RBAC, "clusterrolebindings",
                 "{\"roleRef\":{\"apiGroup\":\"" RBAC "\",\"kind\":\"Role\",\"name\":\"edit\"},"
                 "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"sa\"}]}",
                 "{\"roleRef\":{\"apiGroup\":\"" RBAC "\",\"kind\":\"ClusterRole\",\"name\":\"view\"}}");
    assert_string_equal(message_for(c, "roleRef.kind"), "Unsupported value: \"Role\": supported values: \"ClusterRole\"");
    assert_string_equal(message_for(c, "subjects[0].namespace"), "Required value");
    assert_non_null(strstr(message_for(c, "roleRef"), "cannot change roleRef"));
    json_decref(c);
    assert_null(fl_validate_rbac_name("system:aggregate-to-edit"));
    assert_string_equal(fl_validate_rbac_name("a/b"), "may not contain '/'");
}

static void test_ingress_hpa_pdb_rules(void **state)
{
    json_t *c = run_kind("networking.k8s.io", "ingresses",
                         "{\"spec\":{\"rules\":[{\"http\":{\"paths\":[{\"path\":\"/\",\"backend\":{\"service\":"
                         "{\"name\":\"web\",\"port\":{\"number\":80}}}},{\"path\":\"api\",\"pathType\":\"Prefix\","
                         "\"backend\":{\"service\":{\"name\":\"api\"}}},{\"pathType\":\"Exact\",\"path\":\"/x\","
                         "\"backend\":{}}]}}]}}",
                         NULL);
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(message_for(c, "spec.rules[0].http.paths[0].pathType"),
                        "Required value: pathType must be specified");
    assert_string_equal(message_for(c, "spec.rules[0].http.paths[1].path"),
                        "Invalid value: \"api\": must be an absolute path");
    assert_string_equal(message_for(c, "spec.rules[0].http.paths[1].backend.service.port"),
                        "Required value: port name or number is required");
    assert_string_equal(message_for(c, "spec.rules[0].http.paths[2].backend"),
                        "Invalid value: \"\": resource or service backend is required");
    json_decref(c);
    c = run_kind("networking.k8s.io", "ingresses", "{\"spec\":{}}", NULL);
    assert_string_equal(message_for(c, "spec"), "Invalid value: null: either `defaultBackend` or `rules` must be specified");
    json_decref(c);

    c = run_kind("autoscaling", "horizontalpodautoscalers",
                 "{\"spec\":{\"minReplicas\":5,\"maxReplicas\":3,\"scaleTargetRef\":{\"name\":\"web\"},"
                 "\"metrics\":[{\"type\":\"Resource\"},{\"type\":\"Memory\"}]}}",
                 NULL);
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(message_for(c, "spec.maxReplicas"), "Invalid value: 3: must be greater than or equal to `minReplicas`");
    assert_string_equal(message_for(c, "spec.scaleTargetRef.kind"), "Required value");
    assert_string_equal(message_for(c, "spec.metrics[0].resource"),
                        "Required value: must populate information for the given metric source");
    assert_non_null(strstr(message_for(c, "spec.metrics[1].type"), "Unsupported value: \"Memory\""));
    json_decref(c);

    c = run_kind("policy", "poddisruptionbudgets", "{\"spec\":{\"minAvailable\":\"150%\",\"maxUnavailable\":-1}}", NULL);
    assert_int_equal(json_array_size(c), 3);
    assert_non_null(strstr(message_for(c, "spec"), "minAvailable and maxUnavailable cannot be both set"));
    assert_string_equal(message_for(c, "spec.minAvailable"), "Invalid value: \"150%\": must not be greater than 100%");
    assert_string_equal(message_for(c, "spec.maxUnavailable"), "Invalid value: -1: must be greater than or equal to 0");
    json_decref(c);
}

static void test_admission_policy_apiservice_event_and_csr_rules(void **state)
{
    json_t *c = run_kind("admissionregistration.k8s.io", "validatingadmissionpolicybindings",
                         "{\"spec\":{\"validationActions\":[\"Deny\",\"Warn\",\"Shout\"],"
                         "\"paramRef\":{\"name\":\"p\",\"selector\":{}}}}", NULL);
    assert_string_equal(message_for(c, "spec.policyName"), "Required value");
    assert_non_null(strstr(message_for(c, "spec.validationActions[2]"), "Unsupported value: \"Shout\""));
    assert_non_null(strstr(message_for(c, "spec.validationActions"), "must not contain both Deny and Warn"));
    assert_string_equal(message_for(c, "spec.paramRef.name"), "Forbidden: name and selector are mutually exclusive");
    assert_string_equal(message_for(c, "spec.paramRef.parameterNotFoundAction"), "Required value");
    json_decref(c);
    c = run_kind("admissionregistration.k8s.io", "validatingadmissionpolicies",
                 "{\"spec\":{\"failurePolicy\":\"Maybe\",\"validations\":[{\"message\":\"m\"}]}}", NULL);
    assert_string_equal(message_for(c, "spec.matchConstraints"), "Required value");
    assert_string_equal(message_for(c, "spec.validations[0].expression"), "Required value: expression is not specified");
    assert_non_null(strstr(message_for(c, "spec.failurePolicy"), "Unsupported value: \"Maybe\""));
    json_decref(c);
    c = run_kind("apiregistration.k8s.io", "apiservices",
                 "{\"metadata\":{\"name\":\"v1.metrics.k8s.io\"},\"spec\":{\"group\":\"metrics.k8s.io\","
                 "\"version\":\"v1beta1\",\"groupPriorityMinimum\":100,\"versionPriority\":0}}", NULL);
    assert_non_null(strstr(message_for(c, "metadata.name"), "must be `spec.version+\".\"+spec.group`"));
    assert_string_equal(message_for(c, "spec.versionPriority"), "Invalid value: 0: must be positive and less than 1000");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
    c = run_kind("events.k8s.io", "events", "{\"type\":\"Normal\",\"reportingController\":\"x.io/c\"}", NULL);
    assert_string_equal(message_for(c, "eventTime"), "Required value");
    assert_string_equal(message_for(c, "action"), "Required value");
    assert_string_equal(message_for(c, "reportingInstance"), "Required value");
    json_decref(c);
    c = run_kind("certificates.k8s.io", "certificatesigningrequests",
                 "{\"spec\":{\"request\":\"aGVsbG8=\",\"signerName\":\"nodomain\",\"usages\":[\"client auth\","
                 "\"client auth\",\"flying\"],\"expirationSeconds\":60}}", NULL);
    assert_string_equal(message_for(c, "spec.request"),
                        "Invalid value: \"<bytes>\": PEM block type must be CERTIFICATE REQUEST");
    assert_non_null(strstr(message_for(c, "spec.signerName"), "must be a fully qualified domain and path"));
    assert_string_equal(message_for(c, "spec.usages[1]"), "Duplicate value: \"client auth\"");
    assert_non_null(strstr(message_for(c, "spec.usages[2]"), "Unsupported value: \"flying\""));
    assert_non_null(strstr(message_for(c, "spec.expirationSeconds"), "less than 600 seconds"));
    json_decref(c);
    /* the spec is immutable once created */
    c = run_kind("certificates.k8s.io", "certificatesigningrequests", "{\"spec\":{\"signerName\":\"a.io/b\"}}",
                 "{\"spec\":{\"signerName\":\"a.io/c\"}}");
    assert_string_equal(message_for(c, "spec"), "Invalid value: {\"signerName\":\"a.io/b\"}: field is immutable");
    json_decref(c);
}

static void test_priority_storage_and_webhook_rules(void **state)
{
    json_t *c = run_kind("scheduling.k8s.io", "priorityclasses",
                         "{\"metadata\":{\"name\":\"system-mine\"},\"value\":1000000001,\"preemptionPolicy\":\"Always\"}",
                         "{\"metadata\":{\"name\":\"system-mine\"},\"value\":5}");
    assert_string_equal(message_for(c, "metadata.name"),
                        "Invalid value: \"system-mine\": priority class names with 'system-' prefix are reserved");
    assert_non_null(strstr(message_for(c, "preemptionPolicy"), "Unsupported value: \"Always\""));
    assert_int_equal(json_array_size(c), 4); /* and two on value: too high, and changed */
    json_decref(c);
    c = run_kind("storage.k8s.io", "storageclasses", "{\"provisioner\":\"y\",\"reclaimPolicy\":\"Retain\"}",
                 "{\"provisioner\":\"x\",\"reclaimPolicy\":\"Delete\"}");
    assert_string_equal(message_for(c, "provisioner"), "Forbidden: updates to provisioner are forbidden.");
    assert_string_equal(message_for(c, "reclaimPolicy"), "Forbidden: updates to reclaimPolicy are forbidden.");
    json_decref(c);
    c = run_kind("admissionregistration.k8s.io", "validatingwebhookconfigurations",
                 "{\"webhooks\":[{\"name\":\"v.example.com\",\"sideEffects\":\"None\",\"admissionReviewVersions\":"
                 "[\"v1\"],\"clientConfig\":{\"url\":\"https://x\"}},{\"name\":\"v.example.com\",\"clientConfig\":{}},"
                 "{\"name\":\"short\",\"sideEffects\":\"Some\",\"admissionReviewVersions\":[\"v1\"],"
                 "\"clientConfig\":{\"service\":{\"name\":\"s\",\"namespace\":\"n\"}}}]}",
                 NULL);
    assert_int_equal(json_array_size(c), 6);
    assert_string_equal(message_for(c, "webhooks[1].name"), "Duplicate value: \"v.example.com\"");
    assert_string_equal(message_for(c, "webhooks[1].sideEffects"), "Required value: must specify one of None, NoneOnDryRun");
    assert_string_equal(message_for(c, "webhooks[1].admissionReviewVersions"),
                        "Required value: must specify one of v1, v1beta1");
    assert_string_equal(message_for(c, "webhooks[1].clientConfig"),
                        "Required value: exactly one of url or service is required");
    assert_string_equal(message_for(c, "webhooks[2].name"),
                        "Invalid value: \"short\": should be a domain with at least three segments separated by dots");
    assert_non_null(strstr(message_for(c, "webhooks[2].sideEffects"), "Unsupported value: \"Some\""));
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cron_schedules_upstream_accepts_are_accepted),
        cmocka_unit_test(test_cron_schedules_carry_the_parsers_error_text),
        cmocka_unit_test(test_selector_mismatch_prints_labels_as_go_does),
        cmocka_unit_test(test_hugepages_request_must_equal_its_limit),
        cmocka_unit_test(test_port_names_list_every_broken_rule),
        cmocka_unit_test(test_rbac_rules_and_role_refs),
        cmocka_unit_test(test_ingress_hpa_pdb_rules),
        cmocka_unit_test(test_priority_storage_and_webhook_rules),
        cmocka_unit_test(test_admission_policy_apiservice_event_and_csr_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
