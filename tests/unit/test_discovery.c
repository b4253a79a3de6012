/* test_discovery.c - discovery documents (legacy and aggregated v2) and the OpenAPI v3
 * index and documents, checked for what kubectl 1.32 reads from them: resources,
 * verbs and subresources; PATCH operations carrying x-kubernetes-group-version-kind and
 * an inline fieldValidation parameter; strategic-merge-patch content types for built-ins
 * only; component schemas with the GVK array and patch extensions; CRD kinds appearing
 * and disappearing with the kinds generation, separately in each registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/discovery.h"
#include "api/kinds.h"
#include "api/validate.h"

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

static const char *crd_text =
    "{\"metadata\":{\"name\":\"widgets.example.com\"},"
    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Cluster\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\",\"shortNames\":[\"wd\"]},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
    "\"properties\":{\"size\":{\"type\":\"integer\",\"minimum\":\"bad\"},\"odd\":{\"type\":7},"
    "\"color\":{\"type\":\"string\",\"enum\":[\"red\",\"blue\"]}}}}}}}]}}";

static json_t *find_by(const json_t *arr, const char *key, const char *value)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *s = json_string_value(json_object_get(v, key));
        if (s && !strcmp(s, value))
            return v;
    }
    return NULL;
}

static bool str_in(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), s))
            return true;
    }
    return false;
}

static void assert_verbs(const json_t *verbs, const char *const *want)
{
    size_t n = 0;
    for (; want[n]; n++)
        if (!str_in(verbs, want[n]))
            fail_msg("verb %s missing", want[n]);
    assert_int_equal(json_array_size(verbs), n);
}

static const char *all_verbs[] = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
                                  NULL};
static const char *sub_verbs[] = {"get", "patch", "update", NULL};

/* ------------------------------------------------------------------ */

static void test_core_versions(void **state)
{
    json_t *d = fl_discovery_core_versions();
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "APIVersions");
    assert_string_equal(json_string_value(json_array_get(json_object_get(d, "versions"), 0)), "v1");
    json_t *cidr = json_array_get(json_object_get(d, "serverAddressByClientCIDRs"), 0);
    assert_string_equal(json_string_value(json_object_get(cidr, "clientCIDR")), "0.0.0.0/0");
    assert_non_null(json_object_get(cidr, "serverAddress"));
    json_decref(d);
}

static void test_group_list_and_preferred_versions(void **state)
{
    json_t *d = fl_discovery_groups(NULL);
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "APIGroupList");
    assert_string_equal(json_string_value(json_object_get(d, "apiVersion")), "v1");
    json_t *groups = json_object_get(d, "groups");
    assert_null(find_by(groups, "name", "")); /* core is /api, not /apis */
    json_t *apps = find_by(groups, "name", "apps");
    assert_non_null(apps);
    json_t *pref = json_object_get(apps, "preferredVersion");
    assert_string_equal(json_string_value(json_object_get(pref, "groupVersion")), "apps/v1");
    assert_string_equal(json_string_value(json_object_get(pref, "version")), "v1");
    /* Works in v1alpha1, bindings in v1alpha2: both listed, newest preferred */
    json_t *work = find_by(groups, "name", "work.karmada.io");
    json_t *versions = json_object_get(work, "versions");
    assert_int_equal(json_array_size(versions), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(versions, 0), "version")), "v1alpha2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(versions, 1), "groupVersion")),
                        "work.karmada.io/v1alpha1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(work, "preferredVersion"), "version")),
                        "v1alpha2");
    for (const char *const *g = (const char *const[]){"batch", "coordination.k8s.io", "apiextensions.k8s.io",
                                                       "cluster.karmada.io", "policy.karmada.io",
                                                       "config.karmada.io", NULL};
         *g; g++)
        assert_non_null(find_by(groups, "name", *g));
    json_decref(d);

    json_t *g = fl_discovery_group(NULL, "policy.karmada.io");
    assert_string_equal(json_string_value(json_object_get(g, "kind")), "APIGroup");
    assert_string_equal(json_string_value(json_object_get(g, "name")), "policy.karmada.io");
    json_decref(g);
    assert_null(fl_discovery_group(NULL, "nope.example.com"));
    assert_null(fl_discovery_group(NULL, ""));
}

static void test_resource_lists(void **state)
{
    json_t *d = fl_discovery_resources(NULL, "apps", "v1");
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "APIResourceList");
    assert_string_equal(json_string_value(json_object_get(d, "groupVersion")), "apps/v1");
    json_t *res = json_object_get(d, "resources");
    json_t *dep = find_by(res, "name", "deployments");
    assert_non_null(dep);
    assert_string_equal(json_string_value(json_object_get(dep, "singularName")), "deployment");
    assert_string_equal(json_string_value(json_object_get(dep, "kind")), "Deployment");
    assert_true(json_is_true(json_object_get(dep, "namespaced")));
    assert_verbs(json_object_get(dep, "verbs"), all_verbs);
    assert_true(str_in(json_object_get(dep, "shortNames"), "deploy"));
    assert_true(str_in(json_object_get(dep, "categories"), "all"));
    assert_true(json_is_string(json_object_get(dep, "storageVersionHash")));
    json_t *st = find_by(res, "name", "deployments/status");
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "kind")), "Deployment");
    assert_verbs(json_object_get(st, "verbs"), sub_verbs);
    json_t *sc = find_by(res, "name", "deployments/scale");
    assert_non_null(sc);
    assert_string_equal(json_string_value(json_object_get(sc, "group")), "autoscaling");
    assert_string_equal(json_string_value(json_object_get(sc, "version")), "v1");
    assert_string_equal(json_string_value(json_object_get(sc, "kind")), "Scale");
    assert_verbs(json_object_get(sc, "verbs"), sub_verbs);
    assert_null(find_by(res, "name", "daemonsets/scale"));
    assert_non_null(find_by(res, "name", "statefulsets/scale"));
    json_decref(d);

    d = fl_discovery_resources(NULL, "", "v1");
    assert_string_equal(json_string_value(json_object_get(d, "groupVersion")), "v1");
    res = json_object_get(d, "resources");
    static const char *ns_verbs[] = {"create", "delete", "get", "list", "patch", "update", "watch", NULL};
    assert_verbs(json_object_get(find_by(res, "name", "namespaces"), "verbs"), ns_verbs);
    assert_true(json_is_false(json_object_get(find_by(res, "name", "nodes"), "namespaced")));
    assert_non_null(find_by(res, "name", "pods/status"));
    assert_null(find_by(res, "name", "configmaps/status"));
    json_decref(d);

    d = fl_discovery_resources(NULL, "work.karmada.io", "v1alpha1");
    res = json_object_get(d, "resources");
    assert_non_null(find_by(res, "name", "works"));
    assert_null(find_by(res, "name", "resourcebindings"));
    json_decref(d);
    assert_null(fl_discovery_resources(NULL, "apps", "v2"));
    assert_null(fl_discovery_resources(NULL, "nope", "v1"));
}

static void test_aggregated_v2(void **state)
{
    json_t *d = fl_discovery_aggregated(NULL, 0);
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "APIGroupDiscoveryList");
    assert_string_equal(json_string_value(json_object_get(d, "apiVersion")), "apidiscovery.k8s.io/v2");
    json_t *items = json_object_get(d, "items");
    json_t *apps = NULL;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        const char *n = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
        assert_non_null(n); /* core is only in /api */
        if (!strcmp(n, "apps"))
            apps = it;
    }
    assert_non_null(apps);
    json_t *v = json_array_get(json_object_get(apps, "versions"), 0);
    assert_string_equal(json_string_value(json_object_get(v, "version")), "v1");
    assert_string_equal(json_string_value(json_object_get(v, "freshness")), "Current");
    json_t *dep = find_by(json_object_get(v, "resources"), "resource", "deployments");
    assert_non_null(dep);
    json_t *rk = json_object_get(dep, "responseKind");
    assert_string_equal(json_string_value(json_object_get(rk, "group")), "apps");
    assert_string_equal(json_string_value(json_object_get(rk, "version")), "v1");
    assert_string_equal(json_string_value(json_object_get(rk, "kind")), "Deployment");
    assert_string_equal(json_string_value(json_object_get(dep, "scope")), "Namespaced");
    assert_string_equal(json_string_value(json_object_get(dep, "singularResource")), "deployment");
    assert_verbs(json_object_get(dep, "verbs"), all_verbs);
    assert_true(str_in(json_object_get(dep, "shortNames"), "deploy"));
    assert_true(str_in(json_object_get(dep, "categories"), "all"));
    json_t *subs = json_object_get(dep, "subresources");
    json_t *st = find_by(subs, "subresource", "status");
    json_t *sc = find_by(subs, "subresource", "scale");
    assert_non_null(st);
    assert_non_null(sc);
    assert_string_equal(json_string_value(json_object_get(json_object_get(st, "responseKind"), "kind")),
                        "Deployment");
    assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "responseKind"), "group")),
                        "autoscaling");
    assert_verbs(json_object_get(sc, "verbs"), sub_verbs);
    json_decref(d);

    d = fl_discovery_aggregated(NULL, 1);
    items = json_object_get(d, "items");
    assert_int_equal(json_array_size(items), 1);
    it = json_array_get(items, 0);
    assert_null(json_object_get(json_object_get(it, "metadata"), "name"));
    v = json_array_get(json_object_get(it, "versions"), 0);
    assert_string_equal(json_string_value(json_object_get(v, "version")), "v1");
    json_t *nodes = find_by(json_object_get(v, "resources"), "resource", "nodes");
    assert_string_equal(json_string_value(json_object_get(nodes, "scope")), "Cluster");
    assert_string_equal(json_string_value(json_object_get(json_object_get(nodes, "responseKind"), "group")), "");
    json_decref(d);
}

/* kubectl's supportsQueryParamV3: the first PATCH (any, in map order) for the GVK must
 * carry the parameter inline in the operation's own parameters. Check them all. */
static int patch_ops_with_field_validation(const json_t *doc, const char *group, const char *version,
                                           const char *kind, int *smp)
{
    int n = 0;
    const char *path;
    json_t *item;
    *smp = 0;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        json_t *op = json_object_get(item, "patch");
        if (!op)
            continue;
        json_t *gvk = json_object_get(op, "x-kubernetes-group-version-kind");
        if (!json_is_object(gvk) || strcmp(json_string_value(json_object_get(gvk, "group")), group) ||
            strcmp(json_string_value(json_object_get(gvk, "version")), version) ||
            strcmp(json_string_value(json_object_get(gvk, "kind")), kind))
            continue;
        if (!find_by(json_object_get(op, "parameters"), "name", "fieldValidation"))
            fail_msg("PATCH %s lacks fieldValidation", path);
        assert_string_equal(json_string_value(json_object_get(op, "x-kubernetes-action")), "patch");
        json_t *content = json_object_get(json_object_get(op, "requestBody"), "content");
        assert_non_null(json_object_get(content, "application/json-patch+json"));
        assert_non_null(json_object_get(content, "application/merge-patch+json"));
        assert_non_null(json_object_get(content, "application/apply-patch+yaml"));
        if (json_object_get(content, "application/strategic-merge-patch+json"))
            (*smp)++;
        n++;
    }
    return n;
}

/* The component schema whose x-kubernetes-group-version-kind array holds the GVK. */
static json_t *schema_for(const json_t *doc, const char *group, const char *version, const char *kind)
{
    const char *name;
    json_t *s;
    json_object_foreach(json_object_get(json_object_get(doc, "components"), "schemas"), name, s) {
        json_t *gvks = json_object_get(s, "x-kubernetes-group-version-kind");
        size_t i;
        json_t *g;
        json_array_foreach(gvks, i, g) {
            if (!strcmp(json_string_value(json_object_get(g, "group")), group) &&
                !strcmp(json_string_value(json_object_get(g, "version")), version) &&
                !strcmp(json_string_value(json_object_get(g, "kind")), kind))
                return s;
        }
    }
    return NULL;
}

static json_t *props(json_t *s, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *tok = strtok(buf, "."); tok && s; tok = strtok(NULL, ".")) {
        if (!strcmp(tok, "[]"))
            s = json_object_get(s, "items");
        else
            s = json_object_get(json_object_get(s, "properties"), tok);
    }
    return s;
}

static const char *reg_index_url(fl_kindreg *reg, const char *gvpath)
{
    static char url[256];
    json_t *idx = fl_openapi_v3_index(reg);
    const char *u = json_string_value(json_object_get(json_object_get(json_object_get(idx, "paths"), gvpath),
                                                      "serverRelativeURL"));
    snprintf(url, sizeof(url), "%s", u ? u : "");
    json_decref(idx);
    return u ? url : NULL;
}

static const char *index_url(const char *gvpath) { return reg_index_url(NULL, gvpath); }

static void test_openapi_index(void **state)
{
    const char *u = index_url("apis/apps/v1");
    assert_non_null(u);
    assert_true(!strncmp(u, "/openapi/v3/apis/apps/v1?hash=", 30));
    assert_true(strlen(u) > 40);
    assert_non_null(index_url("api/v1"));
    assert_non_null(index_url("apis/work.karmada.io/v1alpha1"));
    assert_non_null(index_url("apis/work.karmada.io/v1alpha2"));
    assert_null(index_url("apis/apps/v2"));
    assert_null(fl_openapi_v3_doc(NULL, "apis/apps/v2"));
    /* the doc is reachable by the URL's path, with or without slash and query */
    json_t *a = fl_openapi_v3_doc(NULL, "apis/apps/v1"), *b = fl_openapi_v3_doc(NULL, "/apis/apps/v1?hash=x");
    assert_non_null(a);
    assert_ptr_equal(a, b);
    json_decref(a);
    json_decref(b);
}

static void test_openapi_apps_v1_for_kubectl(void **state)
{
    json_t *doc = fl_openapi_v3_doc(NULL, "apis/apps/v1");
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.0");
    json_t *item = json_object_get(json_object_get(doc, "paths"), "/apis/apps/v1/namespaces/{namespace}/deployments/{name}");
    assert_non_null(item);
    json_t *patch = json_object_get(item, "patch");
    json_t *gvk = json_object_get(patch, "x-kubernetes-group-version-kind");
    assert_string_equal(json_string_value(json_object_get(gvk, "group")), "apps");
    assert_string_equal(json_string_value(json_object_get(gvk, "version")), "v1");
    assert_string_equal(json_string_value(json_object_get(gvk, "kind")), "Deployment");
    json_t *fv = find_by(json_object_get(patch, "parameters"), "name", "fieldValidation");
    assert_non_null(fv);
    assert_string_equal(json_string_value(json_object_get(fv, "in")), "query");
    assert_non_null(find_by(json_object_get(patch, "parameters"), "name", "dryRun"));
    assert_non_null(find_by(json_object_get(patch, "parameters"), "name", "fieldManager"));
    for (const char *const *m = (const char *const[]){"get", "put", "delete", NULL}; *m; m++)
        assert_non_null(json_object_get(item, *m));
    assert_non_null(find_by(json_object_get(json_object_get(item, "put"), "parameters"), "name", "fieldValidation"));
    json_t *coll = json_object_get(json_object_get(doc, "paths"), "/apis/apps/v1/namespaces/{namespace}/deployments");
    assert_string_equal(json_string_value(json_object_get(json_object_get(coll, "post"), "x-kubernetes-action")), "post");
    assert_string_equal(json_string_value(json_object_get(json_object_get(coll, "get"), "x-kubernetes-action")), "list");
    assert_string_equal(json_string_value(json_object_get(json_object_get(coll, "delete"), "x-kubernetes-action")),
                        "deletecollection");
    assert_non_null(json_object_get(json_object_get(doc, "paths"), "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"));
    json_t *scale = json_object_get(json_object_get(json_object_get(doc, "paths"),
                                                    "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"),
                                    "patch");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(scale, "x-kubernetes-group-version-kind"), "kind")), "Scale");

    int smp;
    assert_int_equal(patch_ops_with_field_validation(doc, "apps", "v1", "Deployment", &smp), 2); /* item + status */
    assert_int_equal(smp, 2);

    /* the schema kubectl uses to compute strategic merge patches */
    json_t *s = schema_for(doc, "apps", "v1", "Deployment");
    assert_non_null(s);
    json_t *containers = props(s, "spec.template.spec.containers");
    assert_string_equal(json_string_value(json_object_get(containers, "x-kubernetes-patch-merge-key")), "name");
    assert_string_equal(json_string_value(json_object_get(containers, "x-kubernetes-patch-strategy")), "merge");
    json_t *env = props(s, "spec.template.spec.containers.[].env");
    assert_string_equal(json_string_value(json_object_get(env, "x-kubernetes-patch-merge-key")), "name");
    json_t *ports = props(s, "spec.template.spec.containers.[].ports");
    assert_string_equal(json_string_value(json_object_get(ports, "x-kubernetes-patch-merge-key")), "containerPort");
    json_t *volumes = props(s, "spec.template.spec.volumes");
    assert_string_equal(json_string_value(json_object_get(volumes, "x-kubernetes-patch-strategy")), "merge,retainKeys");
    assert_string_equal(json_string_value(json_object_get(props(s, "spec.strategy"), "x-kubernetes-patch-strategy")),
                        "retainKeys");
    assert_string_equal(json_string_value(json_object_get(props(s, "metadata.finalizers"), "x-kubernetes-patch-strategy")),
                        "merge");
    assert_string_equal(json_string_value(json_object_get(props(s, "spec.replicas"), "type")), "integer");
    /* the maps and lists kubectl looks up while diffing are all present */
    for (const char *const *p = (const char *const[]){"metadata.labels", "metadata.annotations",
                                                      "spec.selector.matchLabels",
                                                      "spec.template.metadata.labels",
                                                      "spec.template.spec.containers.[].resources.limits",
                                                      "spec.template.spec.containers.[].command",
                                                      "spec.template.spec.containers.[].livenessProbe.httpGet.httpHeaders",
                                                      "spec.template.spec.affinity.podAntiAffinity",
                                                      "spec.template.spec.nodeSelector", NULL};
         *p; p++)
        if (!props(s, *p))
            fail_msg("schema lacks %s", *p);
    /* no empty schema anywhere (kubectl explain fails on {}) */
    char *text = json_dumps(doc, JSON_COMPACT);
    assert_null(strstr(text, ":{}"));
    free(text);
    json_decref(doc);
}

static void test_openapi_karmada_has_no_smp(void **state)
{
    json_t *doc = fl_openapi_v3_doc(NULL, "apis/policy.karmada.io/v1alpha1");
    int smp;
    assert_int_equal(patch_ops_with_field_validation(doc, "policy.karmada.io", "v1alpha1", "PropagationPolicy", &smp), 1);
    assert_int_equal(smp, 0);
    assert_non_null(schema_for(doc, "policy.karmada.io", "v1alpha1", "ClusterOverridePolicy"));
    assert_non_null(json_object_get(json_object_get(doc, "paths"), "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies/{name}"));
    json_decref(doc);
    doc = fl_openapi_v3_doc(NULL, "api/v1");
    assert_int_equal(patch_ops_with_field_validation(doc, "", "v1", "Pod", &smp), 2);
    assert_int_equal(smp, 2);
    assert_int_equal(patch_ops_with_field_validation(doc, "", "v1", "ConfigMap", &smp), 1);
    assert_non_null(json_object_get(json_object_get(doc, "paths"), "/api/v1/nodes/{name}/status"));
    assert_non_null(json_object_get(json_object_get(doc, "paths"), "/api/v1/pods"));
    json_t *s = schema_for(doc, "", "v1", "Service");
    assert_string_equal(json_string_value(json_object_get(props(s, "spec.ports"), "x-kubernetes-patch-merge-key")), "port");
    json_decref(doc);
}

static void test_crd_shows_up_and_goes_away(void **state)
{
    json_error_t e;
    json_t *crd = json_loads(crd_text, 0, &e);
    assert_non_null(crd);
    uint64_t g = fl_kinds_generation();
    const char *apps_before = index_url("apis/apps/v1");
    char apps_url[256];
    snprintf(apps_url, sizeof(apps_url), "%s", apps_before);
    assert_null(fl_discovery_group(NULL, "example.com"));
    assert_null(index_url("apis/example.com/v1"));

    char *err = NULL;
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    assert_true(fl_kinds_generation() > g);

    json_t *d = fl_discovery_resources(NULL, "example.com", "v1");
    assert_non_null(d);
    json_t *w = find_by(json_object_get(d, "resources"), "name", "widgets");
    assert_non_null(w);
    assert_true(json_is_false(json_object_get(w, "namespaced")));
    assert_true(str_in(json_object_get(w, "shortNames"), "wd"));
    assert_non_null(find_by(json_object_get(d, "resources"), "name", "widgets/status"));
    json_decref(d);
    d = fl_discovery_groups(NULL);
    assert_non_null(find_by(json_object_get(d, "groups"), "name", "example.com"));
    json_decref(d);
    d = fl_discovery_aggregated(NULL, 0);
    bool found = false;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(d, "items"), i, it) {
        if (!strcmp(json_string_value(json_object_get(json_object_get(it, "metadata"), "name")), "example.com")) {
            json_t *r = json_array_get(json_object_get(json_array_get(json_object_get(it, "versions"), 0), "resources"), 0);
            assert_string_equal(json_string_value(json_object_get(r, "scope")), "Cluster");
            found = true;
        }
    }
    assert_true(found);
    json_decref(d);

    /* OpenAPI: served, no strategic merge patch, the CRD's schema (cleaned) with the GVK */
    const char *u = index_url("apis/example.com/v1");
    assert_non_null(u);
    char first_url[256];
    snprintf(first_url, sizeof(first_url), "%s", u);
    assert_string_equal(index_url("apis/apps/v1"), apps_url); /* unrelated docs keep their hash */
    json_t *doc = fl_openapi_v3_doc(NULL, "apis/example.com/v1");
    int smp;
    assert_int_equal(patch_ops_with_field_validation(doc, "example.com", "v1", "Widget", &smp), 2);
    assert_int_equal(smp, 0);
    json_t *s = schema_for(doc, "example.com", "v1", "Widget");
    assert_non_null(s);
    assert_non_null(json_object_get(props(s, "spec.color"), "enum"));
    json_t *size = props(s, "spec.size");
    assert_null(json_object_get(size, "minimum")); /* ill-typed keyword dropped */
    assert_string_equal(json_string_value(json_object_get(size, "type")), "integer");
    assert_true(json_is_true(json_object_get(props(s, "spec.odd"), "x-kubernetes-preserve-unknown-fields")));
    assert_non_null(props(s, "metadata.finalizers"));
    assert_non_null(props(s, "apiVersion"));
    json_decref(doc);

    /* a changed CRD changes the document and therefore its hash */
    json_object_set_new(json_object_get(json_object_get(crd, "spec"), "names"), "shortNames", json_pack("[s]", "wdg"));
    json_t *props_spec = json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0), "schema"),
        "openAPIV3Schema"), "properties"), "spec"), "properties"), "color");
    json_object_set_new(props_spec, "description", json_string("the colour"));
    assert_int_equal(fl_kinds_apply_crd(crd, &err), 0);
    u = index_url("apis/example.com/v1");
    assert_non_null(u);
    assert_string_not_equal(u, first_url);

    fl_kinds_remove_crd("widgets.example.com");
    assert_null(fl_discovery_resources(NULL, "example.com", "v1"));
    assert_null(fl_discovery_group(NULL, "example.com"));
    assert_null(index_url("apis/example.com/v1"));
    assert_null(fl_openapi_v3_doc(NULL, "apis/example.com/v1"));
    json_decref(crd);
}

/* Simulated members each have a registry: a CRD created in one shows in its discovery
 * and OpenAPI documents only. */
static bool agg_has_group(const json_t *d, const char *group)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(d, "items"), i, it) {
        const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
        if (name && !strcmp(name, group))
            return true;
    }
    return false;
}

static void test_registries_have_their_own_documents(void **state)
{
    fl_kindreg *a = fl_kindreg_new(), *b = fl_kindreg_new();
    char apps_url[256];
    snprintf(apps_url, sizeof(apps_url), "%s", reg_index_url(b, "apis/apps/v1"));
    /* before any CRD both describe the built-ins alone (the same documents) */
    json_t *ga = fl_discovery_groups(a), *gb = fl_discovery_groups(b);
    assert_true(json_equal(ga, gb));
    json_decref(ga);
    json_decref(gb);

    json_error_t e;
    json_t *crd = json_loads(crd_text, 0, &e);
    assert_non_null(crd);
    char *err = NULL;
    assert_int_equal(fl_kindreg_apply_crd(a, crd, &err), 0);

    /* discovery: a serves example.com/v1, b and the default registry do not */
    json_t *d = fl_discovery_resources(a, "example.com", "v1");
    assert_non_null(d);
    assert_non_null(find_by(json_object_get(d, "resources"), "name", "widgets"));
    json_decref(d);
    assert_null(fl_discovery_resources(b, "example.com", "v1"));
    assert_null(fl_discovery_resources(NULL, "example.com", "v1"));
    d = fl_discovery_group(a, "example.com");
    assert_non_null(d);
    json_decref(d);
    assert_null(fl_discovery_group(b, "example.com"));
    ga = fl_discovery_groups(a);
    gb = fl_discovery_groups(b);
    assert_non_null(find_by(json_object_get(ga, "groups"), "name", "example.com"));
    assert_null(find_by(json_object_get(gb, "groups"), "name", "example.com"));
    assert_false(json_equal(ga, gb));
    json_decref(ga);
    json_decref(gb);
    ga = fl_discovery_aggregated(a, 0);
    gb = fl_discovery_aggregated(b, 0);
    assert_true(agg_has_group(ga, "example.com"));
    assert_false(agg_has_group(gb, "example.com"));
    json_decref(ga);
    json_decref(gb);

    /* OpenAPI: the same split; unrelated documents keep their hash in both */
    assert_non_null(reg_index_url(a, "apis/example.com/v1"));
    assert_null(reg_index_url(b, "apis/example.com/v1"));
    assert_null(index_url("apis/example.com/v1"));
    assert_string_equal(reg_index_url(a, "apis/apps/v1"), apps_url);
    assert_string_equal(reg_index_url(b, "apis/apps/v1"), apps_url);
    json_t *doc = fl_openapi_v3_doc(a, "apis/example.com/v1");
    assert_non_null(schema_for(doc, "example.com", "v1", "Widget"));
    json_decref(doc);
    assert_null(fl_openapi_v3_doc(b, "apis/example.com/v1"));

    /* freeing a (its caches built) leaves b's documents intact; then a CRD in b shows */
    fl_kindreg_free(a);
    assert_null(fl_discovery_group(b, "example.com"));
    assert_int_equal(fl_kindreg_apply_crd(b, crd, &err), 0);
    d = fl_discovery_group(b, "example.com");
    assert_non_null(d);
    json_decref(d);
    assert_non_null(reg_index_url(b, "apis/example.com/v1"));
    assert_null(fl_discovery_group(NULL, "example.com"));
    fl_kindreg_free(b);
    json_decref(crd);
}

int main(void)
{
    fl_kinds_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_versions),
        cmocka_unit_test(test_group_list_and_preferred_versions),
        cmocka_unit_test(test_resource_lists),
        cmocka_unit_test(test_aggregated_v2),
        cmocka_unit_test(test_openapi_index),
        cmocka_unit_test(test_openapi_apps_v1_for_kubectl),
        cmocka_unit_test(test_openapi_karmada_has_no_smp),
        cmocka_unit_test(test_crd_shows_up_and_goes_away),
        cmocka_unit_test(test_registries_have_their_own_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
