/* test_kinds.c - the kind table and registry: lookups, upstream names (short names,
 * categories, scope, subresources), field selectors, validation hooks, Table columns
 * and row functions, CustomResourceDefinition apply/replace/remove, the
 * strategic-merge-patch metadata lookup, and registries: a CRD applied to one (a
 * simulated member's) is served by it alone, freeing one, the default registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/kinds.h"
#include "api/validate.h"
#include "core/err.h"

/* validate.c is another module; weak stubs let this test link without it. */
#define STUB(n) \
    __attribute__((weak)) void n(const fl_kind *k, const json_t *o, const json_t *old, json_t *c) {}
STUB(fl_validate_propagation_policy)
STUB(fl_validate_override_policy)
STUB(fl_validate_crd)
STUB(fl_validate_namespace)
STUB(fl_validate_cluster)
STUB(fl_validate_resource_binding)
STUB(fl_validate_work)
STUB(fl_validate_interpreter_customization)

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad test JSON at %d: %s", e.line, e.text);
    return j;
}

static bool has_name(const char *const *list, size_t max, const char *want)
{
    for (size_t i = 0; i < max && list[i]; i++)
        if (!strcmp(list[i], want))
            return true;
    return false;
}

static const char *crontab_crd =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"crontabs.stable.example.com\"},"
    "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"crontabs\",\"singular\":\"crontab\",\"kind\":\"CronTab\",\"shortNames\":[\"ct\"],"
    "\"categories\":[\"all\"]},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\","
    "\"statusReplicasPath\":\".status.replicas\"}},"
    "\"additionalPrinterColumns\":[{\"name\":\"Spec\",\"type\":\"string\",\"jsonPath\":\".spec.cronSpec\"},"
    "{\"name\":\"Replicas\",\"type\":\"integer\",\"jsonPath\":\".spec.replicas\",\"priority\":1}],"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\"}}}}},"
    "{\"name\":\"v1beta1\",\"served\":true,\"storage\":false,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}},"
    "{\"name\":\"v1alpha1\",\"served\":false,\"storage\":false}]}}";

/* ------------------------------------------------------------------ */

static void test_lookup_by_resource_and_gvk(void **state)
{
    const fl_kind *d = fl_kind_by_resource("apps", "v1", "deployments");
    assert_non_null(d);
    assert_string_equal(d->kind, "Deployment");
    assert_string_equal(d->list_kind, "DeploymentList");
    assert_string_equal(d->singular, "deployment");
    assert_string_equal(d->api_version, "apps/v1");
    assert_true(d->namespaced && d->has_status && d->has_scale && d->served && !d->dynamic);
    assert_ptr_equal(fl_kind_by_gvk("apps/v1", "Deployment"), d);

    const fl_kind *p = fl_kind_by_resource("", "v1", "pods");
    assert_non_null(p);
    assert_string_equal(p->api_version, "v1");
    assert_ptr_equal(fl_kind_by_resource(NULL, "v1", "pods"), p);
    assert_ptr_equal(fl_kind_by_gvk("v1", "Pod"), p);

    /* exact plural only; wrong version or group misses */
    assert_null(fl_kind_by_resource("apps", "v1", "deployment"));
    assert_null(fl_kind_by_resource("apps", "v1", "deploy"));
    assert_null(fl_kind_by_resource("apps", "v1beta1", "deployments"));
    assert_null(fl_kind_by_resource("", "v1", "deployments"));
    assert_null(fl_kind_by_gvk("v1", "Deployment"));
    assert_null(fl_kind_by_gvk("apps/v1", "deployment"));
}

static void test_builtin_names_match_upstream(void **state)
{
    static const struct {
        const char *group, *version, *resource, *kind, *shorts[3], *category;
        bool namespaced, status, scale;
    } want[] = {
        {"", "v1", "namespaces", "Namespace", {"ns"}, NULL, false, true, false},
        {"", "v1", "configmaps", "ConfigMap", {"cm"}, NULL, true, false, false},
        {"", "v1", "secrets", "Secret", {NULL}, NULL, true, false, false},
        {"", "v1", "services", "Service", {"svc"}, "all", true, true, false},
        {"", "v1", "serviceaccounts", "ServiceAccount", {"sa"}, NULL, true, false, false},
        {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", {"pvc"}, NULL, true, true, false},
        {"", "v1", "pods", "Pod", {"po"}, "all", true, true, false},
        {"", "v1", "events", "Event", {"ev"}, NULL, true, false, false},
        {"", "v1", "nodes", "Node", {"no"}, NULL, false, true, false},
        {"apps", "v1", "deployments", "Deployment", {"deploy"}, "all", true, true, true},
        {"apps", "v1", "statefulsets", "StatefulSet", {"sts"}, "all", true, true, true},
        {"apps", "v1", "daemonsets", "DaemonSet", {"ds"}, "all", true, true, false},
        {"apps", "v1", "replicasets", "ReplicaSet", {"rs"}, "all", true, true, true},
        {"apps", "v1", "controllerrevisions", "ControllerRevision", {NULL}, NULL, true, false, false},
        {"batch", "v1", "jobs", "Job", {NULL}, "all", true, true, false},
        {"batch", "v1", "cronjobs", "CronJob", {"cj"}, "all", true, true, false},
        {"coordination.k8s.io", "v1", "leases", "Lease", {NULL}, NULL, true, false, false},
        {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", {"crd", "crds"},
         "api-extensions", false, true, false},
        {"cluster.karmada.io", "v1alpha1", "clusters", "Cluster", {NULL}, NULL, false, true, false},
        {"policy.karmada.io", "v1alpha1", "propagationpolicies", "PropagationPolicy", {"pp"}, "karmada-io", true,
         false, false},
        {"policy.karmada.io", "v1alpha1", "clusterpropagationpolicies", "ClusterPropagationPolicy", {"cpp"},
         "karmada-io", false, false, false},
        {"policy.karmada.io", "v1alpha1", "overridepolicies", "OverridePolicy", {"op"}, "karmada-io", true, false,
         false},
        {"policy.karmada.io", "v1alpha1", "clusteroverridepolicies", "ClusterOverridePolicy", {"cop"},
         "karmada-io", false, false, false},
        {"work.karmada.io", "v1alpha1", "works", "Work", {"wk"}, "karmada-io", true, true, false},
        {"work.karmada.io", "v1alpha2", "resourcebindings", "ResourceBinding", {"rb"}, "karmada-io", true, true,
         false},
        {"work.karmada.io", "v1alpha2", "clusterresourcebindings", "ClusterResourceBinding", {"crb"}, "karmada-io",
         false, true, false},
        {"config.karmada.io", "v1alpha1", "resourceinterpretercustomizations", "ResourceInterpreterCustomization",
         {"ric"}, "karmada-io", false, false, false},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const fl_kind *k = fl_kind_by_resource(want[i].group, want[i].version, want[i].resource);
        if (!k)
            fail_msg("%s/%s %s not served", want[i].group, want[i].version, want[i].resource);
        assert_string_equal(k->kind, want[i].kind);
        assert_int_equal(k->namespaced, want[i].namespaced);
        assert_int_equal(k->has_status, want[i].status);
        assert_int_equal(k->has_scale, want[i].scale);
        size_t nshort = 0;
        for (size_t s = 0; s < 3 && want[i].shorts[s]; s++, nshort++)
            if (!has_name(k->short_names, 4, want[i].shorts[s]))
                fail_msg("%s lacks short name %s", want[i].resource, want[i].shorts[s]);
        size_t have = 0;
        while (have < 4 && k->short_names[have])
            have++;
        assert_int_equal(have, nshort);
        if (want[i].category)
            assert_true(has_name(k->categories, 3, want[i].category));
        else
            assert_null(k->categories[0]);
        char *prefix = fl_kind_prefix(k);
        assert_true(strstr(prefix, want[i].resource) != NULL);
        free(prefix);
    }
    const fl_kind *ns = fl_kind_by_resource("", "v1", "namespaces");
    char *prefix = fl_kind_prefix(ns);
    assert_string_equal(prefix, "/core/namespaces/");
    free(prefix);
    prefix = fl_kind_prefix(fl_kind_by_resource("apps", "v1", "deployments"));
    assert_string_equal(prefix, "/apps/deployments/");
    free(prefix);
}

static void test_field_selectors(void **state)
{
    const fl_kind *pod = fl_kind_by_resource("", "v1", "pods");
    static const char *pod_fs[] = {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                                   "spec.serviceAccountName", "status.phase", "status.podIP",
                                   "status.nominatedNodeName"};
    for (size_t i = 0; i < 7; i++)
        assert_true(has_name(pod->field_selectors, 8, pod_fs[i]));
    assert_true(has_name(fl_kind_by_resource("", "v1", "secrets")->field_selectors, 8, "type"));
    assert_true(has_name(fl_kind_by_resource("", "v1", "namespaces")->field_selectors, 8, "status.phase"));
    assert_true(has_name(fl_kind_by_resource("", "v1", "nodes")->field_selectors, 8, "spec.unschedulable"));
    assert_true(has_name(fl_kind_by_resource("batch", "v1", "jobs")->field_selectors, 8, "status.successful"));
    assert_true(has_name(fl_kind_by_resource("apps", "v1", "replicasets")->field_selectors, 8, "status.replicas"));
    const fl_kind *ev = fl_kind_by_resource("", "v1", "events");
    assert_true(has_name(ev->field_selectors, 8, "involvedObject.name"));
    assert_true(has_name(ev->field_selectors, 8, "involvedObject.uid"));
    assert_true(has_name(ev->field_selectors, 8, "reason"));
    /* every list is NULL-terminated within the array */
    const fl_kind **all;
    size_t n = fl_kinds_list(&all);
    for (size_t i = 0; i < n; i++)
        assert_null(all[i]->field_selectors[7]);
    free(all);
}

static void test_validate_hooks(void **state)
{
    assert_ptr_equal(fl_kind_by_resource("", "v1", "namespaces")->validate, fl_validate_namespace);
    assert_ptr_equal(fl_kind_by_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")->validate,
                     fl_validate_crd);
    assert_ptr_equal(fl_kind_by_resource("cluster.karmada.io", "v1alpha1", "clusters")->validate,
                     fl_validate_cluster);
    assert_ptr_equal(fl_kind_by_resource("policy.karmada.io", "v1alpha1", "propagationpolicies")->validate,
                     fl_validate_propagation_policy);
    assert_ptr_equal(fl_kind_by_resource("policy.karmada.io", "v1alpha1", "clusterpropagationpolicies")->validate,
                     fl_validate_propagation_policy);
    assert_ptr_equal(fl_kind_by_resource("policy.karmada.io", "v1alpha1", "overridepolicies")->validate,
                     fl_validate_override_policy);
    assert_ptr_equal(fl_kind_by_resource("policy.karmada.io", "v1alpha1", "clusteroverridepolicies")->validate,
                     fl_validate_override_policy);
    assert_ptr_equal(fl_kind_by_resource("work.karmada.io", "v1alpha2", "resourcebindings")->validate,
                     fl_validate_resource_binding);
    assert_ptr_equal(fl_kind_by_resource("work.karmada.io", "v1alpha2", "clusterresourcebindings")->validate,
                     fl_validate_resource_binding);
    assert_ptr_equal(fl_kind_by_resource("work.karmada.io", "v1alpha1", "works")->validate, fl_validate_work);
    assert_ptr_equal(
        fl_kind_by_resource("config.karmada.io", "v1alpha1", "resourceinterpretercustomizations")->validate,
        fl_validate_interpreter_customization);
    assert_ptr_equal(fl_kind_by_resource("", "v1", "configmaps")->validate, fl_validate_configmap);
    assert_ptr_equal(fl_kind_by_resource("apps", "v1", "deployments")->validate, fl_validate_deployment);
    assert_null(fl_kind_by_resource("", "v1", "serviceaccounts")->validate);
}

/* Columns never include NAME (nor AGE, but where upstream prints columns after it); a row
 * function appends exactly one cell per non-Age column, and kinds without one give every
 * column a jsonpath. */
static void test_columns_and_row_arity(void **state)
{
    json_t *samples[] = {
        parse("{}"),
        parse("{\"metadata\":{\"name\":\"x\",\"deletionTimestamp\":\"2024-01-01T00:00:00Z\","
              "\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\"}},"
              "\"spec\":{\"type\":\"LoadBalancer\",\"ports\":[{\"port\":80,\"nodePort\":30080}],"
              "\"containers\":[{\"name\":\"a\",\"image\":\"i\"}],\"template\":{\"spec\":{\"containers\":[{}]}}},"
              "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
              "\"containerStatuses\":[{\"name\":\"a\",\"ready\":true,\"restartCount\":2,\"state\":{\"running\":{}}}]}}"),
    };
    const fl_kind **all;
    size_t n = fl_kinds_list(&all);
    assert_true(n >= 26);
    for (size_t i = 0; i < n; i++) {
        const fl_kind *k = all[i];
        assert_non_null(k->columns);
        size_t ncol = 0;
        for (const fl_column *c = k->columns; c->name; c++) {
            if (!strcasecmp(c->name, "name"))
                fail_msg("%s defines column %s", k->kind, c->name);
            /* an Age column is listed only where upstream prints columns after it; the
             * renderer fills it, not the row function */
            if (!strcasecmp(c->name, "age") && (c->jsonpath || c->priority))
                fail_msg("%s: Age column with a jsonpath or priority", k->kind);
            ncol += strcasecmp(c->name, "age") != 0;
            assert_non_null(c->type);
            assert_non_null(c->format);
            if (!k->row && !c->jsonpath)
                fail_msg("%s column %s has neither row function nor jsonpath", k->kind, c->name);
        }
        if (!k->row)
            continue;
        for (size_t s = 0; s < 2; s++) {
            json_t *cells = json_array();
            k->row(k, samples[s], cells);
            if (json_array_size(cells) != ncol)
                fail_msg("%s row has %zu cells for %zu columns", k->kind, json_array_size(cells), ncol);
            json_decref(cells);
        }
    }
    free(all);
    json_decref(samples[0]);
    json_decref(samples[1]);
}

static json_t *row_of(const char *resource, const char *group, const char *version, const char *obj)
{
    const fl_kind *k = fl_kind_by_resource(group, version, resource);
    json_t *o = parse(obj), *cells = json_array();
    k->row(k, o, cells);
    json_decref(o);
    return cells;
}

static void test_rows_match_kubectl(void **state)
{
    json_t *c = row_of("deployments", "apps", "v1",
                       "{\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
                       "\"template\":{\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1\"},"
                       "{\"name\":\"side\",\"image\":\"busybox\"}]}}},"
                       "\"status\":{\"readyReplicas\":2,\"updatedReplicas\":3,\"availableReplicas\":2}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "2/3");
    assert_int_equal(json_integer_value(json_array_get(c, 1)), 3);
    assert_int_equal(json_integer_value(json_array_get(c, 2)), 2);
    assert_string_equal(json_string_value(json_array_get(c, 3)), "nginx,side");
    assert_string_equal(json_string_value(json_array_get(c, 4)), "nginx:1,busybox");
    assert_string_equal(json_string_value(json_array_get(c, 5)), "app=web");
    json_decref(c);

    c = row_of("pods", "", "v1",
               "{\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},"
               "\"status\":{\"phase\":\"Pending\",\"podIP\":\"10.0.0.1\",\"containerStatuses\":["
               "{\"name\":\"a\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{}}},"
               "{\"name\":\"b\",\"ready\":false,\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\"}}}]}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "1/2");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "ImagePullBackOff");
    assert_string_equal(json_string_value(json_array_get(c, 2)), "0");
    assert_string_equal(json_string_value(json_array_get(c, 3)), "10.0.0.1");
    assert_string_equal(json_string_value(json_array_get(c, 4)), "n1");
    json_decref(c);

    c = row_of("services", "", "v1",
               "{\"spec\":{\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.10\","
               "\"ports\":[{\"port\":80,\"nodePort\":30080,\"protocol\":\"TCP\"},{\"port\":53,\"protocol\":\"UDP\"}],"
               "\"selector\":{\"b\":\"2\",\"a\":\"1\"}}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "NodePort");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "10.96.0.10");
    assert_string_equal(json_string_value(json_array_get(c, 2)), "<none>");
    assert_string_equal(json_string_value(json_array_get(c, 3)), "80:30080/TCP,53/UDP");
    assert_string_equal(json_string_value(json_array_get(c, 4)), "a=1,b=2");
    json_decref(c);

    c = row_of("jobs", "batch", "v1",
               "{\"spec\":{\"completions\":3},\"status\":{\"succeeded\":3,\"startTime\":\"2024-01-01T00:00:00Z\","
               "\"completionTime\":\"2024-01-01T00:01:05Z\",\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "Complete");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "3/3");
    assert_string_equal(json_string_value(json_array_get(c, 2)), "65s");
    json_decref(c);

    c = row_of("daemonsets", "apps", "v1",
               "{\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"}}}},"
               "\"status\":{\"desiredNumberScheduled\":2,\"currentNumberScheduled\":2,\"numberReady\":1}}");
    assert_int_equal(json_integer_value(json_array_get(c, 0)), 2);
    assert_int_equal(json_integer_value(json_array_get(c, 2)), 1);
    assert_string_equal(json_string_value(json_array_get(c, 5)), "kubernetes.io/os=linux");
    json_decref(c);

    c = row_of("cronjobs", "batch", "v1", "{\"spec\":{\"schedule\":\"*/5 * * * *\",\"suspend\":true}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "*/5 * * * *");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "<none>");
    assert_true(json_is_true(json_array_get(c, 2)));
    assert_int_equal(json_integer_value(json_array_get(c, 3)), 0);
    assert_string_equal(json_string_value(json_array_get(c, 4)), "<none>");
    json_decref(c);

    c = row_of("secrets", "", "v1", "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"\",\"tls.key\":\"\"}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "kubernetes.io/tls");
    assert_int_equal(json_integer_value(json_array_get(c, 1)), 2);
    json_decref(c);

    c = row_of("clusters", "cluster.karmada.io", "v1alpha1",
               "{\"spec\":{\"syncMode\":\"Push\",\"apiEndpoint\":\"https://m1\"},\"status\":{\"kubernetesVersion\":"
               "\"v1.31.0\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "v1.31.0");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "Push");
    assert_string_equal(json_string_value(json_array_get(c, 2)), "True");
    json_decref(c);

    c = row_of("nodes", "", "v1",
               "{\"metadata\":{\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\"}},\"spec\":{\"unschedulable\":true},"
               "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.32.0\"}}}");
    assert_string_equal(json_string_value(json_array_get(c, 0)), "NotReady,SchedulingDisabled");
    assert_string_equal(json_string_value(json_array_get(c, 1)), "control-plane");
    assert_string_equal(json_string_value(json_array_get(c, 2)), "v1.32.0");
    json_decref(c);
}

static void test_list_is_sorted_builtins_first(void **state)
{
    const fl_kind **all;
    size_t n = fl_kinds_list(&all);
    bool seen_dynamic = false;
    for (size_t i = 0; i < n; i++) {
        if (all[i]->dynamic)
            seen_dynamic = true;
        else
            assert_false(seen_dynamic);
        if (i && all[i]->dynamic == all[i - 1]->dynamic) {
            int c = strcmp(all[i - 1]->group, all[i]->group);
            assert_true(c < 0 || (c == 0 && strcmp(all[i - 1]->resource, all[i]->resource) <= 0));
        }
        assert_true(all[i]->served);
    }
    free(all);
}

static void test_crd_apply_replace_remove(void **state)
{
    json_t *crd = parse(crontab_crd);
    uint64_t g0 = fl_kinds_generation();
    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    assert_null(err);
    uint64_t g1 = fl_kinds_generation();
    assert_true(g1 > g0);

    const fl_kind *v1 = fl_kind_by_resource("stable.example.com", "v1", "crontabs");
    const fl_kind *b1 = fl_kind_by_resource("stable.example.com", "v1beta1", "crontabs");
    assert_non_null(v1);
    assert_non_null(b1);
    assert_null(fl_kind_by_resource("stable.example.com", "v1alpha1", "crontabs")); /* served: false */
    assert_ptr_equal(fl_kind_by_gvk("stable.example.com/v1", "CronTab"), v1);
    assert_true(v1->dynamic && v1->served && v1->namespaced && v1->has_status && v1->has_scale);
    assert_false(b1->has_status);
    assert_string_equal(v1->list_kind, "CronTabList");
    assert_string_equal(v1->singular, "crontab");
    assert_string_equal(v1->crd_name, "crontabs.stable.example.com");
    assert_string_equal(v1->short_names[0], "ct");
    assert_string_equal(v1->categories[0], "all");
    assert_false(v1->preserve_unknown);
    assert_true(b1->preserve_unknown);
    assert_non_null(v1->crd_version);
    assert_string_equal(json_string_value(json_object_get(v1->crd_version, "name")), "v1");
    assert_string_equal(v1->columns[0].name, "Spec");
    assert_string_equal(v1->columns[0].jsonpath, ".spec.cronSpec");
    assert_int_equal(v1->columns[1].priority, 1);
    assert_null(v1->columns[2].name);
    /* no printer columns: upstream's default Age column */
    assert_string_equal(b1->columns[0].name, "Age");
    assert_string_equal(b1->columns[0].jsonpath, ".metadata.creationTimestamp");

    /* re-applying the same CRD changes nothing */
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    assert_int_equal(fl_kinds_generation(), g1);
    assert_ptr_equal(fl_kind_by_resource("stable.example.com", "v1", "crontabs"), v1);

    /* a changed CRD replaces its kinds; old pointers stay valid but unserved */
    json_t *scope = json_object_get(crd, "spec");
    json_object_set_new(json_object_get(scope, "names"), "shortNames", json_pack("[s]", "cts"));
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    uint64_t g2 = fl_kinds_generation();
    assert_true(g2 > g1);
    const fl_kind *v1b = fl_kind_by_resource("stable.example.com", "v1", "crontabs");
    assert_non_null(v1b);
    assert_ptr_not_equal(v1b, v1);
    assert_false(v1->served);
    assert_string_equal(v1->kind, "CronTab"); /* still readable */
    assert_string_equal(v1b->short_names[0], "cts");

    fl_kinds_remove_crd("crontabs.stable.example.com");
    assert_true(fl_kinds_generation() > g2);
    assert_false(v1b->served);
    assert_null(fl_kind_by_resource("stable.example.com", "v1", "crontabs"));
    assert_null(fl_kind_by_gvk("stable.example.com/v1beta1", "CronTab"));
    uint64_t g3 = fl_kinds_generation();
    fl_kinds_remove_crd("crontabs.stable.example.com"); /* unknown now: no change */
    assert_int_equal(fl_kinds_generation(), g3);
    json_decref(crd);
}

static void expect_crd_error(const char *mutation_path, const char *key, json_t *value, const char *field)
{
    json_t *crd = parse(crontab_crd);
    json_t *o = crd;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", mutation_path);
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
        if (json_is_array(o))
            o = json_array_get(o, (size_t)atoi(tok));
        else
            o = json_object_get(o, tok);
    }
    if (value)
        json_object_set_new(o, key, value);
    else
        json_object_del(o, key);
    uint64_t g = fl_kinds_generation();
    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(crd, &err), FL_EINVAL);
    assert_non_null(err);
    if (strncmp(err, field, strlen(field)))
        fail_msg("error \"%s\" does not start with \"%s\"", err, field);
    assert_int_equal(fl_kinds_generation(), g);
    assert_null(fl_kind_by_resource("stable.example.com", "v1", "crontabs"));
    free(err);
    json_decref(crd);
}

static void test_crd_errors_name_the_field(void **state)
{
    expect_crd_error("spec.names", "plural", NULL, "spec.names.plural: Required value");
    expect_crd_error("spec.names", "kind", NULL, "spec.names.kind: Required value");
    expect_crd_error("spec", "group", NULL, "spec.group: Required value");
    expect_crd_error("spec", "scope", NULL, "spec.scope: Required value");
    expect_crd_error("spec", "scope", json_string("Global"), "spec.scope: Unsupported value");
    expect_crd_error("spec", "versions", json_array(), "spec.versions: Required value");
    expect_crd_error("spec", "names", NULL, "spec.names: Required value");
    expect_crd_error("metadata", "name", NULL, "metadata.name: Required value");
    expect_crd_error("metadata", "name", json_string("crontabs.other.com"), "metadata.name: Invalid value");
    expect_crd_error("spec.versions.1", "name", NULL, "spec.versions[1].name: Required value");
    expect_crd_error("spec.versions.0", "served", NULL, "spec.versions[0].served: Required value");
    expect_crd_error("spec.versions.1", "name", json_string("v1"), "spec.versions[1].name: Duplicate value");
    expect_crd_error("spec.versions.0.additionalPrinterColumns.0", "jsonPath", NULL,
                     "spec.versions[0].additionalPrinterColumns[0].jsonPath: Required value");
    expect_crd_error("spec.names", "shortNames", json_pack("[i]", 3), "spec.names.shortNames[0]: Invalid value");

    char *err = (char *)"untouched";
    json_t *notobj = json_string("x");
    assert_int_equal(fl_kinds_apply_crd(notobj, &err), FL_EINVAL);
    assert_non_null(err);
    free(err);
    json_decref(notobj);
    assert_int_equal(fl_kinds_apply_crd(NULL, NULL), FL_EINVAL); /* err may be NULL */
}

static void test_crd_for_builtin_is_shadowed(void **state)
{
    /* Karmada's own CRD applied to Flotilla: accepted, the built-in keeps serving */
    json_t *crd = parse("{\"metadata\":{\"name\":\"propagationpolicies.policy.karmada.io\"},"
                        "\"spec\":{\"group\":\"policy.karmada.io\",\"scope\":\"Namespaced\","
                        "\"names\":{\"plural\":\"propagationpolicies\",\"kind\":\"PropagationPolicy\"},"
                        "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true}]}}");
    const fl_kind *before = fl_kind_by_resource("policy.karmada.io", "v1alpha1", "propagationpolicies");
    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    assert_null(err);
    assert_ptr_equal(fl_kind_by_resource("policy.karmada.io", "v1alpha1", "propagationpolicies"), before);
    assert_false(before->dynamic);
    fl_kinds_remove_crd("propagationpolicies.policy.karmada.io");
    assert_ptr_equal(fl_kind_by_resource("policy.karmada.io", "v1alpha1", "propagationpolicies"), before);
    json_decref(crd);
}

static void test_crd_name_clash_is_refused(void **state)
{
    json_t *a = parse(crontab_crd);
    json_t *b = parse("{\"metadata\":{\"name\":\"crontabz.stable.example.com\"},"
                      "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Cluster\","
                      "\"names\":{\"plural\":\"crontabz\",\"kind\":\"CronTab\"},"
                      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(a, &err), 0);
    assert_int_equal(fl_kinds_apply_crd(b, &err), FL_EINVAL);
    assert_non_null(err);
    assert_non_null(strstr(err, "crontabs.stable.example.com"));
    free(err);
    assert_null(fl_kind_by_resource("stable.example.com", "v1", "crontabz"));
    fl_kinds_remove_crd("crontabs.stable.example.com");
    err = NULL;
    assert_int_equal(fl_kinds_apply_crd(b, &err), 0); /* free now */
    const fl_kind *z = fl_kind_by_resource("stable.example.com", "v1", "crontabz");
    assert_non_null(z);
    assert_false(z->namespaced);
    assert_string_equal(z->singular, "crontab"); /* defaulted from kind */
    fl_kinds_remove_crd("crontabz.stable.example.com");
    json_decref(a);
    json_decref(b);
}

static void expect_smp(const char *group, const char *version, const char *resource, const char *path, bool merge,
                       bool retain, const char *key)
{
    const fl_kind *k = fl_kind_by_resource(group, version, resource);
    fl_smp_meta m;
    if (!fl_kind_smp_lookup((void *)k, path, &m))
        fail_msg("%s: no patch metadata for %s", resource, path);
    assert_int_equal(m.merge, merge);
    assert_int_equal(m.retain_keys, retain);
    if (key)
        assert_string_equal(m.merge_key, key);
    else
        assert_null(m.merge_key);
}

static void expect_no_smp(const char *group, const char *version, const char *resource, const char *path)
{
    const fl_kind *k = fl_kind_by_resource(group, version, resource);
    fl_smp_meta m;
    if (fl_kind_smp_lookup((void *)k, path, &m))
        fail_msg("%s: unexpected patch metadata for %s", resource, path);
}

static void test_smp_metadata_as_upstream_tags(void **state)
{
    const char *t = "spec.template.spec.";
    char p[160];
#define P(s) (snprintf(p, sizeof(p), "%s%s", t, s), p)
    expect_smp("apps", "v1", "deployments", P("containers"), true, false, "name");
    expect_smp("apps", "v1", "deployments", P("containers.env"), true, false, "name");
    expect_smp("apps", "v1", "deployments", P("containers.ports"), true, false, "containerPort");
    expect_smp("apps", "v1", "deployments", P("containers.volumeMounts"), true, false, "mountPath");
    expect_smp("apps", "v1", "deployments", P("containers.volumeDevices"), true, false, "devicePath");
    expect_smp("apps", "v1", "deployments", P("initContainers"), true, false, "name");
    expect_smp("apps", "v1", "deployments", P("ephemeralContainers"), true, false, "name");
    expect_smp("apps", "v1", "deployments", P("volumes"), true, true, "name");
    expect_smp("apps", "v1", "deployments", P("imagePullSecrets"), true, false, "name");
    expect_smp("apps", "v1", "deployments", P("hostAliases"), true, false, "ip");
    expect_no_smp("apps", "v1", "deployments", P("tolerations"));
    expect_no_smp("apps", "v1", "deployments", P("containers.resizePolicy"));
    expect_no_smp("apps", "v1", "deployments", P("containers.envFrom"));
    expect_no_smp("apps", "v1", "deployments", P("containers.command"));
    expect_smp("apps", "v1", "deployments", "spec.template.metadata.finalizers", true, false, NULL);
    expect_smp("apps", "v1", "deployments", "spec.strategy", false, true, NULL);
    expect_smp("apps", "v1", "deployments", "status.conditions", true, false, "type");
    expect_smp("apps", "v1", "deployments", "metadata.finalizers", true, false, NULL);
    expect_smp("apps", "v1", "deployments", "metadata.ownerReferences", true, false, "uid");
    expect_no_smp("apps", "v1", "deployments", "metadata.labels");
    expect_no_smp("apps", "v1", "deployments", "spec.nothing.here");
    expect_no_smp("apps", "v1", "deployments", "spec.templatex.spec.containers");
    expect_smp("apps", "v1", "statefulsets", P("containers.env"), true, false, "name");
    expect_smp("apps", "v1", "daemonsets", "status.conditions", true, false, "type");
    expect_smp("apps", "v1", "replicasets", "status.conditions", true, false, "type");
    expect_smp("apps", "v1", "statefulsets", "status.conditions", true, false, "type");
    expect_smp("batch", "v1", "jobs", P("containers"), true, false, "name");
    expect_smp("batch", "v1", "jobs", "status.conditions", true, false, "type");
    /* the chart kinds: upstream's tags reach them through the generated tables */
    expect_smp("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "webhooks", true, false,
               "name");
    expect_smp("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "webhooks.matchConditions",
               true, false, "name");
    expect_smp("autoscaling", "v2", "horizontalpodautoscalers", "status.conditions", true, false, "type");
    expect_smp("policy", "v1", "poddisruptionbudgets", "status.conditions", true, false, "type");
    expect_smp("", "v1", "replicationcontrollers", P("containers"), true, false, "name");
    expect_no_smp("rbac.authorization.k8s.io", "v1", "roles", "rules");
    expect_no_smp("networking.k8s.io", "v1", "ingresses", "spec.rules");
    expect_smp("batch", "v1", "cronjobs", "spec.jobTemplate.spec.template.spec.containers.env", true, false, "name");
    expect_smp("", "v1", "pods", "spec.containers", true, false, "name");
    expect_smp("", "v1", "pods", "spec.containers.ports", true, false, "containerPort");
    expect_smp("", "v1", "pods", "spec.topologySpreadConstraints", true, false, "topologyKey");
    expect_smp("", "v1", "pods", "status.conditions", true, false, "type");
    expect_smp("", "v1", "pods", "status.podIPs", true, false, "ip");
    expect_smp("", "v1", "services", "spec.ports", true, false, "port");
    expect_smp("", "v1", "nodes", "status.addresses", true, false, "type");
    expect_smp("", "v1", "nodes", "status.conditions", true, false, "type");
    expect_smp("", "v1", "namespaces", "status.conditions", true, false, "type");
    expect_smp("", "v1", "serviceaccounts", "secrets", true, false, "name");
    expect_smp("", "v1", "configmaps", "metadata.finalizers", true, false, NULL);
    expect_no_smp("", "v1", "configmaps", "data");
    /* through a map's values: "properties.<name>" then the schema's own fields */
    expect_smp("apiextensions.k8s.io", "v1", "customresourcedefinitions",
               "spec.versions.schema.openAPIV3Schema.properties.spec.x-kubernetes-validations", true, false, "rule");
#undef P
    /* dynamic kinds have no table, but ObjectMeta's tags still apply */
    json_t *crd = parse(crontab_crd);
    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    expect_smp("stable.example.com", "v1", "crontabs", "metadata.finalizers", true, false, NULL);
    expect_smp("stable.example.com", "v1", "crontabs", "metadata.ownerReferences", true, false, "uid");
    expect_no_smp("stable.example.com", "v1", "crontabs", "spec.items");
    fl_kinds_remove_crd("crontabs.stable.example.com");
    json_decref(crd);
    fl_smp_meta m;
    assert_false(fl_kind_smp_lookup(NULL, "spec", &m));
}

/* Readers keep working (and see a consistent table) while CRDs come and go. */
static void *reader(void *arg)
{
    bool *stop = arg;
    while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
        const fl_kind *d = fl_kind_by_resource("apps", "v1", "deployments");
        if (!d || strcmp(d->kind, "Deployment"))
            abort();
        const fl_kind *c = fl_kind_by_resource("stable.example.com", "v1", "crontabs");
        if (c && strcmp(c->kind, "CronTab"))
            abort();
        const fl_kind **all;
        size_t n = fl_kinds_list(&all);
        if (n < 26)
            abort();
        free(all);
    }
    return NULL;
}

static void test_concurrent_lookups_during_crd_changes(void **state)
{
    bool stop = false;
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, reader, &stop);
    json_t *crd = parse(crontab_crd);
    for (int i = 0; i < 200; i++) {
        char *err = NULL;
        json_object_set_new(json_object_get(json_object_get(crd, "spec"), "names"), "singular",
                            json_string(i % 2 ? "crontab" : "crontabx"));
        assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
        if (i % 3 == 0)
            fl_kinds_remove_crd("crontabs.stable.example.com");
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    fl_kinds_remove_crd("crontabs.stable.example.com");
    json_decref(crd);
}

/* ------------------------------------------------------------------ */
/* Registries: one per simulated member, the default one for the server */
/* ------------------------------------------------------------------ */

static bool list_has(fl_kindreg *reg, const char *group, const char *resource, size_t *count)
{
    const fl_kind **all;
    size_t n = fl_kindreg_list(reg, &all);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(all[i]->group, group) && !strcmp(all[i]->resource, resource))
            found = true;
    free(all);
    if (count)
        *count = n;
    return found;
}

static void test_crd_in_one_registry_is_served_only_there(void **state)
{
    fl_kindreg *a = fl_kindreg_new(), *b = fl_kindreg_new();
    size_t nbuiltin, n;
    assert_false(list_has(a, "stable.example.com", "crontabs", &nbuiltin));
    uint64_t ga = fl_kindreg_generation(a), gb = fl_kindreg_generation(b), gd = fl_kinds_generation();
    assert_true(ga != gb && ga != gd && gb != gd); /* unique across registries */

    /* built-in kinds are shared data: the same pointer in every registry */
    const fl_kind *dep = fl_kind_by_resource("apps", "v1", "deployments");
    assert_ptr_equal(fl_kindreg_by_resource(a, "apps", "v1", "deployments"), dep);
    assert_ptr_equal(fl_kindreg_by_gvk(b, "apps/v1", "Deployment"), dep);

    json_t *crd = parse(crontab_crd);
    char *err = NULL;
    assert_int_equal(fl_kindreg_apply_crd(a, crd, &err), 0);
    assert_null(err);
    const fl_kind *ca = fl_kindreg_by_resource(a, "stable.example.com", "v1", "crontabs");
    assert_non_null(ca);
    assert_ptr_equal(fl_kindreg_by_gvk(a, "stable.example.com/v1", "CronTab"), ca);
    assert_true(list_has(a, "stable.example.com", "crontabs", &n));
    assert_int_equal(n, nbuiltin + 2); /* v1 and v1beta1 */
    assert_true(fl_kindreg_generation(a) > ga);

    /* the other registry and the default one are unaffected */
    assert_null(fl_kindreg_by_resource(b, "stable.example.com", "v1", "crontabs"));
    assert_null(fl_kindreg_by_gvk(b, "stable.example.com/v1", "CronTab"));
    assert_false(list_has(b, "stable.example.com", "crontabs", &n));
    assert_int_equal(n, nbuiltin);
    assert_int_equal(fl_kindreg_generation(b), gb);
    assert_null(fl_kind_by_resource("stable.example.com", "v1", "crontabs"));
    assert_false(list_has(NULL, "stable.example.com", "crontabs", NULL));
    assert_int_equal(fl_kinds_generation(), gd);

    /* names clash only within a registry: b may serve CronTab under another plural */
    json_t *z = parse("{\"metadata\":{\"name\":\"crontabz.stable.example.com\"},"
                      "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Cluster\","
                      "\"names\":{\"plural\":\"crontabz\",\"kind\":\"CronTab\"},"
                      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
    assert_int_equal(fl_kindreg_apply_crd(a, z, &err), FL_EINVAL);
    free(err);
    err = NULL;
    assert_int_equal(fl_kindreg_apply_crd(b, z, &err), 0);
    assert_non_null(fl_kindreg_by_resource(b, "stable.example.com", "v1", "crontabz"));
    assert_null(fl_kindreg_by_resource(a, "stable.example.com", "v1", "crontabz"));

    /* the same CRD in both: separate kinds; removing it from one leaves the other */
    fl_kindreg_remove_crd(b, "crontabz.stable.example.com");
    assert_int_equal(fl_kindreg_apply_crd(b, crd, &err), 0);
    const fl_kind *cb = fl_kindreg_by_resource(b, "stable.example.com", "v1", "crontabs");
    assert_non_null(cb);
    assert_ptr_not_equal(cb, ca);
    uint64_t gb2 = fl_kindreg_generation(b);
    fl_kindreg_remove_crd(a, "crontabs.stable.example.com");
    assert_null(fl_kindreg_by_resource(a, "stable.example.com", "v1", "crontabs"));
    assert_false(ca->served);
    assert_string_equal(ca->kind, "CronTab"); /* retired, still readable while a lives */
    assert_ptr_equal(fl_kindreg_by_resource(b, "stable.example.com", "v1", "crontabs"), cb);
    assert_true(cb->served);
    assert_int_equal(fl_kindreg_generation(b), gb2);

    /* freeing a leaves b serving */
    fl_kindreg_free(a);
    assert_ptr_equal(fl_kindreg_by_resource(b, "stable.example.com", "v1", "crontabs"), cb);
    assert_string_equal(cb->crd_name, "crontabs.stable.example.com");
    fl_kindreg_free(b);
    json_decref(crd);
    json_decref(z);
}

static void test_default_registry_is_the_global_one(void **state)
{
    fl_kindreg *d = fl_kindreg_default();
    assert_non_null(d);
    assert_ptr_equal(fl_kindreg_default(), d);
    json_t *crd = parse(crontab_crd);
    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    const fl_kind *k = fl_kind_by_resource("stable.example.com", "v1", "crontabs");
    assert_non_null(k);
    assert_ptr_equal(fl_kindreg_by_resource(d, "stable.example.com", "v1", "crontabs"), k);
    assert_ptr_equal(fl_kindreg_by_resource(NULL, "stable.example.com", "v1", "crontabs"), k);
    assert_int_equal(fl_kindreg_generation(d), fl_kinds_generation());
    /* a new registry starts with the built-ins only, whatever the default serves */
    fl_kindreg *m = fl_kindreg_new();
    assert_null(fl_kindreg_by_resource(m, "stable.example.com", "v1", "crontabs"));
    fl_kindreg_free(m);
    fl_kindreg_remove_crd(d, "crontabs.stable.example.com");
    assert_null(fl_kind_by_resource("stable.example.com", "v1", "crontabs"));
    assert_false(k->served); /* the default registry is never freed: k stays readable */
    /* freeing NULL or the default registry does nothing */
    fl_kindreg_free(NULL);
    fl_kindreg_free(d);
    assert_non_null(fl_kind_by_resource("apps", "v1", "deployments"));
    json_decref(crd);
}

static int freed_slots;
static void *make_slot(void) { return calloc(1, 16); }
static void free_slot(void *p)
{
    freed_slots++;
    free(p);
}

static void test_registry_free_releases_kinds_and_caches(void **state)
{
    static const char key1, key2;
    fl_kindreg *r = fl_kindreg_new();
    json_t *crd = parse(crontab_crd);
    char *err = NULL;
    assert_int_equal(fl_kindreg_apply_crd(r, crd, &err), 0);
    /* a changed CRD retires the first kinds: both generations are freed with r (ASan) */
    json_object_set_new(json_object_get(json_object_get(crd, "spec"), "names"), "singular", json_string("ct2"));
    assert_int_equal(fl_kindreg_apply_crd(r, crd, &err), 0);
    void *s1 = fl_kindreg_cache(r, &key1, make_slot, free_slot);
    assert_non_null(s1);
    assert_ptr_equal(fl_kindreg_cache(r, &key1, make_slot, free_slot), s1);
    assert_ptr_not_equal(fl_kindreg_cache(r, &key2, make_slot, free_slot), s1);
    freed_slots = 0;
    fl_kindreg_free(r);
    assert_int_equal(freed_slots, 2);
    json_decref(crd);
}

static void test_registries_without_crds_share_derived_documents(void **state)
{
    fl_kindreg *a = fl_kindreg_new(), *b = fl_kindreg_new();
    fl_kindreg *shared = fl_kindreg_shared(a);
    assert_ptr_equal(fl_kindreg_shared(b), shared);
    assert_ptr_equal(fl_kindreg_shared(shared), shared);
    json_t *crd = parse(crontab_crd);
    char *err = NULL;
    assert_int_equal(fl_kindreg_apply_crd(a, crd, &err), 0);
    assert_ptr_equal(fl_kindreg_shared(a), a); /* its own documents now */
    assert_ptr_equal(fl_kindreg_shared(b), shared);
    /* the shared registry serves built-ins only */
    assert_int_equal(fl_kindreg_apply_crd(shared, crd, &err), FL_EINVAL);
    assert_non_null(err);
    free(err);
    assert_null(fl_kindreg_by_resource(shared, "stable.example.com", "v1", "crontabs"));
    fl_kindreg_free(shared); /* a no-op */
    /* a CRD shadowed by a built-in serves nothing of its own: still shared */
    json_t *pp = parse("{\"metadata\":{\"name\":\"propagationpolicies.policy.karmada.io\"},"
                       "\"spec\":{\"group\":\"policy.karmada.io\",\"scope\":\"Namespaced\","
                       "\"names\":{\"plural\":\"propagationpolicies\",\"kind\":\"PropagationPolicy\"},"
                       "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true}]}}");
    err = NULL;
    assert_int_equal(fl_kindreg_apply_crd(b, pp, &err), 0);
    assert_ptr_equal(fl_kindreg_shared(b), shared);
    fl_kindreg_remove_crd(a, "crontabs.stable.example.com");
    assert_ptr_equal(fl_kindreg_shared(a), shared);
    fl_kindreg_free(a);
    fl_kindreg_free(b);
    json_decref(crd);
    json_decref(pp);
}

/* Member registries change while other threads read them: each reader checks that a
 * registry never serves another's CRD. */
typedef struct member_reader {
    fl_kindreg *reg;
    const char *other_plural; /* the plural only the other registry ever serves */
    bool *stop;
} member_reader;

static void *member_reader_main(void *arg)
{
    member_reader *m = arg;
    while (!__atomic_load_n(m->stop, __ATOMIC_ACQUIRE)) {
        if (!fl_kindreg_by_resource(m->reg, "apps", "v1", "deployments"))
            abort();
        if (fl_kindreg_by_resource(m->reg, "stable.example.com", "v1", m->other_plural))
            abort();
        const fl_kind **all;
        size_t n = fl_kindreg_list(m->reg, &all);
        for (size_t i = 0; i < n; i++)
            if (!strcmp(all[i]->resource, m->other_plural))
                abort();
        free(all);
    }
    return NULL;
}

static void test_concurrent_member_registries(void **state)
{
    fl_kindreg *a = fl_kindreg_new(), *b = fl_kindreg_new();
    bool stop = false;
    member_reader ra = {a, "crontabz", &stop}, rb = {b, "crontabs", &stop};
    pthread_t th[2];
    pthread_create(&th[0], NULL, member_reader_main, &ra);
    pthread_create(&th[1], NULL, member_reader_main, &rb);
    json_t *ca = parse(crontab_crd);
    json_t *cb = parse("{\"metadata\":{\"name\":\"crontabz.stable.example.com\"},"
                       "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Cluster\","
                       "\"names\":{\"plural\":\"crontabz\",\"kind\":\"CronTab\"},"
                       "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
    for (int i = 0; i < 200; i++) {
        char *err = NULL;
        assert_int_equal(fl_kindreg_apply_crd(a, ca, &err), 0);
        assert_int_equal(fl_kindreg_apply_crd(b, cb, &err), 0);
        if (i % 2) {
            fl_kindreg_remove_crd(a, "crontabs.stable.example.com");
            fl_kindreg_remove_crd(b, "crontabz.stable.example.com");
        }
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    fl_kindreg_free(a);
    fl_kindreg_free(b);
    json_decref(ca);
    json_decref(cb);
}


/* ---- generated field tables (kinds_schema.c) ---- */

static const fl_field *field_of(const fl_field *t, const char *name)
{
    for (; t && t->path; t++)
        if (!strcmp(t->path, name))
            return t;
    return NULL;
}

static void test_every_builtin_kind_has_a_complete_table(void **state)
{
    (void)state;
    const fl_kind **kinds;
    size_t n = fl_kinds_list(&kinds);
    size_t builtin = 0;
    for (size_t i = 0; i < n; i++) {
        if (kinds[i]->dynamic)
            continue;
        builtin++;
        const fl_field *t = kinds[i]->fields;
        assert_non_null(t);
        for (const char *top = "apiVersion"; top; top = !strcmp(top, "apiVersion") ? "kind"
                                                     : !strcmp(top, "kind")       ? "metadata"
                                                                                  : NULL)
            if (!field_of(t, top))
                fail_msg("%s has no %s", kinds[i]->kind, top);
        /* one path segment per row: the tables are complete, so nothing is dotted */
        for (; t->path; t++)
            assert_null(strchr(t->path, '.'));
    }
    free(kinds);
    assert_true(builtin >= 27);
}

static void test_podspec_containers_are_required_with_their_merge_key(void **state)
{
    (void)state;
    const fl_kind *k = fl_kind_by_gvk("apps/v1", "Deployment");
    assert_non_null(k);
    const fl_field *f = field_of(k->fields, "spec");
    assert_non_null(f);
    f = field_of(f->sub, "template");
    assert_true(f && f->required);
    f = field_of(field_of(f->sub, "spec")->sub, "containers");
    assert_non_null(f);
    assert_true(f->required);
    assert_int_equal(f->type, FL_F_ARRAY);
    assert_string_equal(f->merge_key, "name");
    assert_string_equal(f->strategy, "merge");
    assert_non_null(field_of(f->sub, "imagePullPolicy"));
    const fl_field *res = field_of(f->sub, "resources");
    const fl_field *limits = field_of(res->sub, "limits");
    assert_int_equal(limits->type, FL_F_MAP);
    assert_int_equal(limits->elem, FL_F_QUANTITY);
}

static void test_karmada_fields_nothing_acts_on_are_marked_unsupported(void **state)
{
    (void)state;
    const fl_kind *k = fl_kind_by_gvk("policy.karmada.io/v1alpha1", "PropagationPolicy");
    const fl_field *spec = field_of(k->fields, "spec");
    assert_true(field_of(spec->sub, "schedulePriority")->unsupported);
    assert_false(field_of(spec->sub, "failover")->unsupported);
    const fl_field *placement = field_of(spec->sub, "placement");
    assert_true(field_of(placement->sub, "workloadAffinity")->unsupported);
    assert_false(field_of(placement->sub, "clusterAffinity")->unsupported);
}

/* The kinds of kinds_builtin_ext.c, as kube-apiserver 1.32's discovery lists them. */
static void test_chart_kinds_names_match_upstream(void **state)
{
    static const struct {
        const char *group, *version, *resource, *kind, *shorts, *category;
        bool namespaced, status;
        fl_validate_fn validate;
    } want[] = {
        {"rbac.authorization.k8s.io", "v1", "roles", "Role", NULL, NULL, true, false, fl_validate_role},
        {"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", NULL, NULL, false, false, fl_validate_role},
        {"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", NULL, NULL, true, false,
         fl_validate_role_binding},
        {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", NULL, NULL, false, false,
         fl_validate_role_binding},
        {"networking.k8s.io", "v1", "ingresses", "Ingress", "ing", NULL, true, true, fl_validate_ingress},
        {"networking.k8s.io", "v1", "ingressclasses", "IngressClass", NULL, NULL, false, false,
         fl_validate_ingress_class},
        {"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", "netpol", NULL, true, false,
         fl_validate_network_policy},
        {"autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "hpa", "all", true, true,
         fl_validate_hpa},
        {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", "pdb", NULL, true, true, fl_validate_pdb},
        {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", "pc", NULL, false, false,
         fl_validate_priority_class},
        {"storage.k8s.io", "v1", "storageclasses", "StorageClass", "sc", NULL, false, false,
         fl_validate_storage_class},
        {"storage.k8s.io", "v1", "csidrivers", "CSIDriver", NULL, NULL, false, false, NULL},
        {"", "v1", "persistentvolumes", "PersistentVolume", "pv", NULL, false, true, NULL},
        {"", "v1", "endpoints", "Endpoints", "ep", NULL, true, false, NULL},
        {"", "v1", "limitranges", "LimitRange", "limits", NULL, true, false, NULL},
        {"", "v1", "resourcequotas", "ResourceQuota", "quota", NULL, true, true, NULL},
        {"", "v1", "replicationcontrollers", "ReplicationController", "rc", "all", true, true, NULL},
        {"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", NULL, NULL, true, false, NULL},
        {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
         NULL, "api-extensions", false, false, fl_validate_webhook_configuration},
        {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
         NULL, "api-extensions", false, false, fl_validate_webhook_configuration},
        /* autoscaling/v1 is validated after its conversion, as autoscaling/v2 */
        {"autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "hpa", "all", true, true, NULL},
        {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", NULL,
         "api-extensions", false, true, fl_validate_admission_policy},
        {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
         "ValidatingAdmissionPolicyBinding", NULL, "api-extensions", false, false,
         fl_validate_admission_policy_binding},
        {"events.k8s.io", "v1", "events", "Event", "ev", NULL, true, false, fl_validate_events_v1},
        {"apiregistration.k8s.io", "v1", "apiservices", "APIService", NULL, "api-extensions", false, true,
         fl_validate_apiservice},
        {"certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", "csr", NULL, false,
         true, fl_validate_csr},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const fl_kind *k = fl_kind_by_resource(want[i].group, want[i].version, want[i].resource);
        if (!k)
            fail_msg("%s/%s %s not served", want[i].group, want[i].version, want[i].resource);
        assert_string_equal(k->kind, want[i].kind);
        assert_ptr_equal(fl_kind_by_gvk(k->api_version, want[i].kind), k);
        assert_int_equal(k->namespaced, want[i].namespaced);
        assert_int_equal(k->has_status, want[i].status);
        assert_int_equal(k->has_scale, !strcmp(want[i].kind, "ReplicationController")); /* as Deployment's */
        assert_ptr_equal(k->validate, want[i].validate);
        if (want[i].shorts) {
            assert_string_equal(k->short_names[0], want[i].shorts);
            assert_null(k->short_names[1]);
        } else {
            assert_null(k->short_names[0]);
        }
        if (want[i].category)
            assert_true(has_name(k->categories, 3, want[i].category));
        else
            assert_null(k->categories[0]);
        assert_non_null(k->fields);
    }
    /* autoscaling/v1 is served from the v2 objects: the same store prefix, converted */
    const fl_kind *v1 = fl_kind_by_resource("autoscaling", "v1", "horizontalpodautoscalers");
    const fl_kind *v2 = fl_kind_by_resource("autoscaling", "v2", "horizontalpodautoscalers");
    assert_string_equal(v1->storage_version, "v2");
    assert_non_null(v1->to_storage);
    assert_non_null(v1->from_storage);
    assert_null(v2->storage_version);
    char *p1 = fl_kind_prefix(v1), *p2 = fl_kind_prefix(v2);
    assert_string_equal(p1, p2);
    free(p1);
    free(p2);
    /* events.k8s.io/v1 Events are the core/v1 Events: another group's prefix */
    const fl_kind *ev = fl_kind_by_resource("events.k8s.io", "v1", "events");
    assert_string_equal(ev->storage_group, "");
    p1 = fl_kind_prefix(ev);
    assert_string_equal(p1, "/core/events/");
    free(p1);
}

static const char *cell_s(const json_t *c, size_t i) { return json_string_value(json_array_get(c, i)); }

static void test_chart_kinds_rows_match_kubectl(void **state)
{
    json_t *c = row_of("horizontalpodautoscalers", "autoscaling", "v2",
                       "{\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"web\"},\"maxReplicas\":10,"
                       "\"metrics\":[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":"
                       "\"Utilization\",\"averageUtilization\":70}}},{\"type\":\"Pods\",\"pods\":{\"target\":{\"type\":"
                       "\"AverageValue\",\"averageValue\":\"1k\"}}},{\"type\":\"External\",\"external\":{\"target\":"
                       "{\"type\":\"Value\",\"value\":\"5\"}}}]},\"status\":{\"currentReplicas\":3,\"currentMetrics\":"
                       "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"current\":{\"averageUtilization\":35}}}]}}");
    assert_string_equal(cell_s(c, 0), "Deployment/web");
    assert_string_equal(cell_s(c, 1), "cpu: 35%/70%, <unknown>/1k + 1 more...");
    assert_string_equal(cell_s(c, 2), "<unset>");
    assert_int_equal(json_integer_value(json_array_get(c, 3)), 10);
    assert_int_equal(json_integer_value(json_array_get(c, 4)), 3);
    json_decref(c);

    c = row_of("ingresses", "networking.k8s.io", "v1",
               "{\"spec\":{\"rules\":[{\"host\":\"a\"},{},{\"host\":\"b\"},{\"host\":\"c\"},{\"host\":\"d\"}]},"
               "\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.0.0.2\"},{\"hostname\":\"lb.example.com\"}]}}}");
    assert_string_equal(cell_s(c, 0), "<none>");
    assert_string_equal(cell_s(c, 1), "a,b,c + 2 more...");
    assert_string_equal(cell_s(c, 2), "10.0.0.2,lb.e..."); /* clipped to 16 bytes */
    assert_string_equal(cell_s(c, 3), "80");
    json_decref(c);

    c = row_of("poddisruptionbudgets", "policy", "v1",
               "{\"spec\":{\"maxUnavailable\":\"25%\"},\"status\":{\"disruptionsAllowed\":2}}");
    assert_string_equal(cell_s(c, 0), "N/A");
    assert_string_equal(cell_s(c, 1), "25%");
    assert_int_equal(json_integer_value(json_array_get(c, 2)), 2);
    json_decref(c);

    c = row_of("clusterrolebindings", "rbac.authorization.k8s.io", "v1",
               "{\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":\"User\",\"name\":"
               "\"a\"},{\"kind\":\"User\",\"name\":\"b\"},{\"kind\":\"Group\",\"name\":\"g\"},{\"kind\":"
               "\"ServiceAccount\",\"name\":\"sa\",\"namespace\":\"ns\"}]}");
    assert_string_equal(cell_s(c, 0), "ClusterRole/view");
    assert_string_equal(cell_s(c, 1), "a, b");
    assert_string_equal(cell_s(c, 2), "g");
    assert_string_equal(cell_s(c, 3), "ns/sa");
    json_decref(c);

    c = row_of("endpoints", "", "v1",
               "{\"subsets\":[{\"addresses\":[{\"ip\":\"10.0.0.1\"},{\"ip\":\"10.0.0.2\"}],\"ports\":[{\"port\":80},"
               "{\"port\":443}]}]}");
    assert_string_equal(cell_s(c, 0), "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...");
    json_decref(c);

    c = row_of("persistentvolumes", "", "v1",
               "{\"spec\":{\"capacity\":{\"storage\":\"10Gi\"},\"accessModes\":[\"ReadWriteMany\",\"ReadWriteOnce\"],"
               "\"persistentVolumeReclaimPolicy\":\"Retain\",\"claimRef\":{\"namespace\":\"a\",\"name\":\"data\"},"
               "\"storageClassName\":\"fast\"},\"status\":{\"phase\":\"Bound\"}}");
    assert_string_equal(cell_s(c, 0), "10Gi");
    assert_string_equal(cell_s(c, 1), "RWO,RWX");
    assert_string_equal(cell_s(c, 2), "Retain");
    assert_string_equal(cell_s(c, 3), "Bound");
    assert_string_equal(cell_s(c, 4), "a/data");
    assert_string_equal(cell_s(c, 5), "fast");
    assert_string_equal(cell_s(c, 6), "<unset>");
    assert_string_equal(cell_s(c, 8), "<unset>");
    json_decref(c);

    c = row_of("resourcequotas", "", "v1",
               "{\"status\":{\"hard\":{\"pods\":\"10\",\"limits.cpu\":\"2\",\"cpu\":\"1\"},\"used\":{\"pods\":\"3\"}}}");
    assert_string_equal(cell_s(c, 0), "cpu: 0/1, pods: 3/10");
    assert_string_equal(cell_s(c, 1), "limits.cpu: 0/2");
    json_decref(c);

    c = row_of("storageclasses", "storage.k8s.io", "v1", "{\"provisioner\":\"ebs.csi.aws.com\"}");
    assert_string_equal(cell_s(c, 0), "ebs.csi.aws.com");
    assert_string_equal(cell_s(c, 1), "Delete");
    assert_string_equal(cell_s(c, 2), "Immediate");
    assert_true(json_is_false(json_array_get(c, 3)));
    json_decref(c);

    c = row_of("csidrivers", "storage.k8s.io", "v1", "{\"spec\":{}}");
    assert_true(json_is_true(json_array_get(c, 0)));
    assert_string_equal(cell_s(c, 3), "<unset>");
    assert_string_equal(cell_s(c, 5), "<none>");
    json_decref(c);

    c = row_of("endpointslices", "discovery.k8s.io", "v1",
               "{\"addressType\":\"IPv4\",\"ports\":[{\"port\":80},{\"name\":\"https\"}],\"endpoints\":[]}");
    assert_string_equal(cell_s(c, 0), "IPv4");
    assert_string_equal(cell_s(c, 1), "80,https");
    assert_string_equal(cell_s(c, 2), "<unset>");
    json_decref(c);

    c = row_of("ingressclasses", "networking.k8s.io", "v1",
               "{\"spec\":{\"controller\":\"k8s.io/ingress-nginx\",\"parameters\":{\"apiGroup\":\"k8s.example.com\","
               "\"kind\":\"IngressParameters\",\"name\":\"p\"}}}");
    assert_string_equal(cell_s(c, 0), "k8s.io/ingress-nginx");
    assert_string_equal(cell_s(c, 1), "IngressParameters.k8s.example.com/p");
    json_decref(c);
}

int main(void)
{
    fl_kinds_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_by_resource_and_gvk),
        cmocka_unit_test(test_builtin_names_match_upstream),
        cmocka_unit_test(test_field_selectors),
        cmocka_unit_test(test_validate_hooks),
        cmocka_unit_test(test_columns_and_row_arity),
        cmocka_unit_test(test_rows_match_kubectl),
        cmocka_unit_test(test_list_is_sorted_builtins_first),
        cmocka_unit_test(test_crd_apply_replace_remove),
        cmocka_unit_test(test_crd_errors_name_the_field),
        cmocka_unit_test(test_crd_for_builtin_is_shadowed),
        cmocka_unit_test(test_crd_name_clash_is_refused),
        cmocka_unit_test(test_smp_metadata_as_upstream_tags),
        cmocka_unit_test(test_concurrent_lookups_during_crd_changes),
        cmocka_unit_test(test_crd_in_one_registry_is_served_only_there),
        cmocka_unit_test(test_default_registry_is_the_global_one),
        cmocka_unit_test(test_registry_free_releases_kinds_and_caches),
        cmocka_unit_test(test_registries_without_crds_share_derived_documents),
        cmocka_unit_test(test_concurrent_member_registries),
        cmocka_unit_test(test_every_builtin_kind_has_a_complete_table),
        cmocka_unit_test(test_podspec_containers_are_required_with_their_merge_key),
        cmocka_unit_test(test_karmada_fields_nothing_acts_on_are_marked_unsupported),
        cmocka_unit_test(test_chart_kinds_names_match_upstream),
        cmocka_unit_test(test_chart_kinds_rows_match_kubectl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
