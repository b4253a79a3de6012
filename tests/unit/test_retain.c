/* test_retain.c - unit tests for the native Retain rules (src/controllers/retain.c).
 *
 * Each test feeds fl_retain() a manifest ("desired") and a member object ("observed")
 * written as JSON text, and checks the merged object field by field: one test per rule
 * in docs/internals/execution.md, named after the rule, plus the rules' limits (what a
 * manifest that says otherwise wins). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/retain.h"
#include "core/mem.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s", e.position, e.text);
    return v;
}

/* The value at a dotted path ("spec.clusterIP"); array indexes as numbers ("spec.ports.0"). */
static json_t *at(json_t *v, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *p = strtok_r(buf, ".", &save); p && v; p = strtok_r(NULL, ".", &save)) {
        if (json_is_array(v))
            v = json_array_get(v, (size_t)atoi(p));
        else
            v = json_object_get(v, p);
    }
    return v;
}

static const char *str(json_t *v, const char *path)
{
    return json_string_value(at(v, path));
}

static json_t *run(const char *group, const char *kind, const char *desired, const char *observed)
{
    json_t *d = js(desired), *o = observed ? js(observed) : NULL;
    json_t *d_before = json_deep_copy(d), *o_before = o ? json_deep_copy(o) : NULL;
    json_t *out = fl_retain(group, kind, d, o);
    /* the inputs are only read (observed may be an informer's shared object) */
    assert_true(json_equal(d, d_before));
    if (o)
        assert_true(json_equal(o, o_before));
    json_decref(d);
    json_decref(d_before);
    json_decref(o);
    json_decref(o_before);
    return out;
}

static void test_without_observed_is_a_copy_without_status(void **state)
{
    json_t *out = run("", "ConfigMap", "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"v\"},\"status\":{\"x\":1}}", NULL);
    assert_string_equal(str(out, "data.k"), "v");
    assert_null(at(out, "status"));
    json_decref(out);
}

static void test_member_owned_metadata_is_kept(void **state)
{
    json_t *out = run("", "ConfigMap",
                      "{\"metadata\":{\"name\":\"a\",\"uid\":\"fake\",\"resourceVersion\":\"1\"}}",
                      "{\"metadata\":{\"name\":\"a\",\"uid\":\"u-1\",\"resourceVersion\":\"42\",\"generation\":3,"
                      "\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"managedFields\":[{\"manager\":\"m\"}],"
                      "\"ownerReferences\":[{\"kind\":\"X\",\"name\":\"o\"}]}}");
    assert_string_equal(str(out, "metadata.uid"), "u-1");
    assert_string_equal(str(out, "metadata.resourceVersion"), "42");
    assert_int_equal(json_integer_value(at(out, "metadata.generation")), 3);
    assert_string_equal(str(out, "metadata.creationTimestamp"), "2024-01-01T00:00:00Z");
    assert_string_equal(str(out, "metadata.managedFields.0.manager"), "m");
    assert_string_equal(str(out, "metadata.ownerReferences.0.name"), "o");
    json_decref(out);
}

static void test_member_finalizers_are_kept_beside_the_manifests(void **state)
{
    json_t *out = run("", "ConfigMap", "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"ours\",\"both\"]}}",
                      "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"member.io/x\",\"both\"]}}");
    json_t *f = at(out, "metadata.finalizers");
    assert_int_equal(json_array_size(f), 3);
    assert_string_equal(json_string_value(json_array_get(f, 0)), "member.io/x");
    assert_string_equal(json_string_value(json_array_get(f, 1)), "both");
    assert_string_equal(json_string_value(json_array_get(f, 2)), "ours");
    json_decref(out);
}

static void test_labels_and_annotations_the_member_added_are_kept(void **state)
{
    json_t *out = run("", "ConfigMap",
                      "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"new\"},\"annotations\":{\"a\":\"1\"}}}",
                      "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"old\",\"member\":\"yes\"},"
                      "\"annotations\":{\"a\":\"0\",\"deployment.kubernetes.io/revision\":\"2\"}}}");
    assert_string_equal(str(out, "metadata.labels.app"), "new");
    assert_string_equal(str(out, "metadata.labels.member"), "yes");
    assert_string_equal(str(out, "metadata.annotations.a"), "1");
    assert_string_equal(json_string_value(json_object_get(at(out, "metadata.annotations"),
                                                          "deployment.kubernetes.io/revision")), "2");
    json_decref(out);
}

static void test_labels_dropped_from_the_template_are_not_kept(void **state)
{
    /* the member copy records which keys came from the template; "gone" did, "member" did not */
    json_t *out = run("", "ConfigMap",
                      "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"},\"annotations\":{"
                      "\"resourcetemplate.karmada.io/managed-labels\":\"app\"}}}",
                      "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\",\"gone\":\"1\",\"member\":\"1\"},"
                      "\"annotations\":{\"resourcetemplate.karmada.io/managed-labels\":\"app,gone\",\"note\":\"n\"}}}");
    assert_null(at(out, "metadata.labels.gone"));
    assert_string_equal(str(out, "metadata.labels.member"), "1");
    assert_string_equal(str(out, "metadata.annotations.note"), "n");
    /* the manifest's own record wins over the member's */
    assert_string_equal(json_string_value(json_object_get(at(out, "metadata.annotations"),
                                                          "resourcetemplate.karmada.io/managed-labels")), "app");
    json_decref(out);
}

static void test_status_is_always_the_members(void **state)
{
    json_t *out = run("apps", "Deployment", "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"replicas\":2},"
                                            "\"status\":{\"replicas\":99}}",
                      "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"replicas\":2},\"status\":{\"replicas\":1}}");
    assert_int_equal(json_integer_value(at(out, "status.replicas")), 1);
    json_decref(out);
    out = run("", "ConfigMap", "{\"metadata\":{\"name\":\"a\"},\"status\":{\"x\":1}}", "{\"metadata\":{\"name\":\"a\"}}");
    assert_null(at(out, "status"));
    json_decref(out);
}

static void test_service_keeps_cluster_ip_cluster_ips_and_health_check_node_port(void **state)
{
    json_t *out = run("", "Service",
                      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":\"LoadBalancer\",\"ports\":["
                      "{\"name\":\"http\",\"port\":80},{\"name\":\"fixed\",\"port\":81,\"nodePort\":30081}]}}",
                      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"10.0.0.7\","
                      "\"clusterIPs\":[\"10.0.0.7\"],\"healthCheckNodePort\":31000,\"ports\":["
                      "{\"name\":\"http\",\"port\":80,\"nodePort\":30080},{\"name\":\"fixed\",\"port\":81,\"nodePort\":30999}]}}");
    assert_string_equal(str(out, "spec.clusterIP"), "10.0.0.7");
    assert_string_equal(str(out, "spec.clusterIPs.0"), "10.0.0.7");
    assert_int_equal(json_integer_value(at(out, "spec.healthCheckNodePort")), 31000);
    assert_int_equal(json_integer_value(at(out, "spec.ports.0.nodePort")), 30080);
    assert_int_equal(json_integer_value(at(out, "spec.ports.1.nodePort")), 30081); /* the manifest's wins */
    json_decref(out);
}

static void test_service_without_an_allocated_cluster_ip_keeps_the_manifests(void **state)
{
    json_t *out = run("", "Service", "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":\"None\"}}",
                      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":\"\"}}");
    assert_string_equal(str(out, "spec.clusterIP"), "None");
    json_decref(out);
}

static void test_replicas_kept_when_the_retain_replicas_label_is_true(void **state)
{
    json_t *out = run("apps", "Deployment",
                      "{\"metadata\":{\"name\":\"d\",\"labels\":{\"resourcetemplate.karmada.io/retain-replicas\":\"true\"}},"
                      "\"spec\":{\"replicas\":2}}",
                      "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":7}}");
    assert_int_equal(json_integer_value(at(out, "spec.replicas")), 7);
    json_decref(out);
}

static void test_replicas_kept_when_the_manifest_omits_them(void **state)
{
    json_t *out = run("apps", "StatefulSet", "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"serviceName\":\"x\"}}",
                      "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":5}}");
    assert_int_equal(json_integer_value(at(out, "spec.replicas")), 5);
    json_decref(out);
}

static void test_replicas_from_the_manifest_win_without_hpa(void **state)
{
    json_t *out = run("apps", "Deployment",
                      "{\"metadata\":{\"name\":\"d\",\"labels\":{\"resourcetemplate.karmada.io/retain-replicas\":\"false\"}},"
                      "\"spec\":{\"replicas\":2}}",
                      "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":7}}");
    assert_int_equal(json_integer_value(at(out, "spec.replicas")), 2);
    json_decref(out);
}

static void test_pod_keeps_node_name_service_account_and_token_mounts(void **state)
{
    json_t *out = run("", "Pod",
                      "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i:2\"}]}}",
                      "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"node-1\",\"serviceAccountName\":\"default\","
                      "\"volumes\":[{\"name\":\"tok\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i:1\","
                      "\"volumeMounts\":[{\"name\":\"tok\",\"mountPath\":\"/var/run\"}]}]}}");
    assert_string_equal(str(out, "spec.nodeName"), "node-1");
    assert_string_equal(str(out, "spec.serviceAccountName"), "default");
    assert_string_equal(str(out, "spec.volumes.0.name"), "tok");
    assert_string_equal(str(out, "spec.containers.0.volumeMounts.0.name"), "tok");
    assert_string_equal(str(out, "spec.containers.0.image"), "i:2");
    json_decref(out);
}

static void test_pvc_keeps_volume_name(void **state)
{
    json_t *out = run("", "PersistentVolumeClaim", "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"resources\":{}}}",
                      "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"volumeName\":\"pv-9\"}}");
    assert_string_equal(str(out, "spec.volumeName"), "pv-9");
    json_decref(out);
}

static void test_pv_keeps_claim_ref(void **state)
{
    json_t *out = run("", "PersistentVolume", "{\"metadata\":{\"name\":\"v\"},\"spec\":{}}",
                      "{\"metadata\":{\"name\":\"v\"},\"spec\":{\"claimRef\":{\"name\":\"c\"}}}");
    assert_string_equal(str(out, "spec.claimRef.name"), "c");
    json_decref(out);
}

static void test_job_keeps_selector_and_controller_uid_template_labels(void **state)
{
    json_t *out = run("batch", "Job",
                      "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"app\":\"j\"}},"
                      "\"spec\":{\"containers\":[]}}}}",
                      "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"selector\":{\"matchLabels\":{\"controller-uid\":\"u\"}},"
                      "\"template\":{\"metadata\":{\"labels\":{\"app\":\"j\",\"controller-uid\":\"u\",\"job-name\":\"j\"}}}}}");
    assert_string_equal(str(out, "spec.selector.matchLabels.controller-uid"), "u");
    assert_string_equal(str(out, "spec.template.metadata.labels.controller-uid"), "u");
    assert_string_equal(str(out, "spec.template.metadata.labels.job-name"), "j");
    assert_string_equal(str(out, "spec.template.metadata.labels.app"), "j");
    json_decref(out);
}

static void test_service_account_keeps_token_secrets(void **state)
{
    json_t *out = run("", "ServiceAccount", "{\"metadata\":{\"name\":\"sa\"},\"secrets\":[{\"name\":\"mine\"}]}",
                      "{\"metadata\":{\"name\":\"sa\"},\"secrets\":[{\"name\":\"sa-token-x\"}]}");
    assert_int_equal(json_array_size(at(out, "secrets")), 2);
    assert_string_equal(str(out, "secrets.0.name"), "mine");
    assert_string_equal(str(out, "secrets.1.name"), "sa-token-x");
    json_decref(out);
}

static void test_kind_rules_do_not_leak_to_other_kinds(void **state)
{
    /* a custom resource with a "clusterIP" field is not a Service */
    json_t *out = run("example.io", "Service", "{\"metadata\":{\"name\":\"s\"},\"spec\":{}}",
                      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":\"1.2.3.4\",\"replicas\":3}}");
    assert_null(at(out, "spec.clusterIP"));
    assert_null(at(out, "spec.replicas"));
    json_decref(out);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_observed_is_a_copy_without_status),
        cmocka_unit_test(test_member_owned_metadata_is_kept),
        cmocka_unit_test(test_member_finalizers_are_kept_beside_the_manifests),
        cmocka_unit_test(test_labels_and_annotations_the_member_added_are_kept),
        cmocka_unit_test(test_labels_dropped_from_the_template_are_not_kept),
        cmocka_unit_test(test_status_is_always_the_members),
        cmocka_unit_test(test_service_keeps_cluster_ip_cluster_ips_and_health_check_node_port),
        cmocka_unit_test(test_service_without_an_allocated_cluster_ip_keeps_the_manifests),
        cmocka_unit_test(test_replicas_kept_when_the_retain_replicas_label_is_true),
        cmocka_unit_test(test_replicas_kept_when_the_manifest_omits_them),
        cmocka_unit_test(test_replicas_from_the_manifest_win_without_hpa),
        cmocka_unit_test(test_pod_keeps_node_name_service_account_and_token_mounts),
        cmocka_unit_test(test_pvc_keeps_volume_name),
        cmocka_unit_test(test_pv_keeps_claim_ref),
        cmocka_unit_test(test_job_keeps_selector_and_controller_uid_template_labels),
        cmocka_unit_test(test_service_account_keeps_token_secrets),
        cmocka_unit_test(test_kind_rules_do_not_leak_to_other_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
