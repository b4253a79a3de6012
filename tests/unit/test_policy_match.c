/* test_policy_match.c - policy matching (src/policy/cluster_affinity.c and
 * src/policy/resource_selector.c): ClusterAffinity against Cluster objects (names,
 * exclude, labels, provider/region/zone fields with every operator, malformed input
 * naming the field), ResourceSelector matching and implicit priority, and the
 * detector's choice among candidate policies and preemption rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "policy/cluster_affinity.h"
#include "policy/resource_selector.h"

/* ---------- helpers ---------- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

/* A Cluster named name with labels/spec given as JSON text (NULL = absent). */
static json_t *cluster(const char *name, const char *labels, const char *spec)
{
    json_t *c = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "cluster.karmada.io/v1alpha1", "kind", "Cluster",
                          "metadata", "name", name);
    if (labels)
        json_object_set_new(json_object_get(c, "metadata"), "labels", J(labels));
    if (spec)
        json_object_set_new(c, "spec", J(spec));
    return c;
}

/* Does affinity (JSON text, NULL = absent) match the cluster? Fails the test on error. */
static bool amatch(const char *affinity, json_t *c)
{
    json_t *a = affinity ? J(affinity) : NULL;
    bool m = true;
    char *err = NULL;
    int rc = fl_policy_cluster_affinity_match(a, c, &m, &err);
    if (rc != 0)
        fail_msg("affinity %s: unexpected error %d: %s", affinity, rc, err ? err : "(none)");
    assert_null(err);
    json_decref(a);
    return m;
}

/* The affinity must be rejected; returns the message (caller frees). */
static char *aerr(const char *affinity, json_t *c)
{
    json_t *a = J(affinity);
    bool m = true;
    char *err = NULL;
    int rc = fl_policy_cluster_affinity_match(a, c, &m, &err);
    assert_int_equal(rc, FL_EINVAL);
    assert_false(m);
    assert_non_null(err);
    json_decref(a);
    return err;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("expected \"%s\" to contain \"%s\"", hay ? hay : "(null)", needle);
}

/* ---------- cluster affinity ---------- */

static void test_affinity_absent_matches_all(void **state)
{
    json_t *c = cluster("m1", NULL, NULL);
    assert_true(amatch(NULL, c));
    assert_true(amatch("null", c));
    assert_true(amatch("{}", c));
    assert_true(amatch("{\"clusterNames\":[],\"exclude\":[]}", c));
    json_decref(c);
}

static void test_affinity_cluster_names(void **state)
{
    json_t *c = cluster("m1", NULL, NULL);
    assert_true(amatch("{\"clusterNames\":[\"m0\",\"m1\"]}", c));
    assert_false(amatch("{\"clusterNames\":[\"m2\"]}", c));
    assert_false(amatch("{\"clusterNames\":[\"M1\"]}", c)); /* exact, case-sensitive */
    json_decref(c);
}

static void test_affinity_exclude_wins(void **state)
{
    json_t *c = cluster("m1", "{\"env\":\"prod\"}", NULL);
    assert_false(amatch("{\"exclude\":[\"m1\"]}", c));
    assert_true(amatch("{\"exclude\":[\"m2\"]}", c));
    /* exclude beats an explicit name and a matching selector */
    assert_false(amatch("{\"clusterNames\":[\"m1\"],\"exclude\":[\"m1\"],"
                        "\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}}}",
                        c));
    json_decref(c);
}

static void test_affinity_label_selector(void **state)
{
    json_t *prod = cluster("m1", "{\"env\":\"prod\",\"tier\":\"gold\"}", NULL);
    json_t *bare = cluster("m2", NULL, NULL);
    const char *ml = "{\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}}}";
    assert_true(amatch(ml, prod));
    assert_false(amatch(ml, bare));
    const char *notin = "{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\","
                        "\"values\":[\"gold\"]}]}}";
    assert_false(amatch(notin, prod));
    assert_true(amatch(notin, bare)); /* NotIn matches a missing label */
    const char *ex = "{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]}}";
    assert_true(amatch(ex, prod));
    assert_false(amatch(ex, bare));
    /* an empty selector matches everything */
    assert_true(amatch("{\"labelSelector\":{}}", bare));
    /* all parts must hold: labels match but the name is not listed */
    assert_false(amatch("{\"clusterNames\":[\"m9\"],\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}}}", prod));
    assert_true(amatch("{\"clusterNames\":[\"m1\"],\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}}}", prod));
    json_decref(prod);
    json_decref(bare);
}

static const char *field(const char *key, const char *op, const char *vals)
{
    static char buf[512];
    if (vals)
        snprintf(buf, sizeof buf,
                 "{\"fieldSelector\":{\"matchExpressions\":[{\"key\":\"%s\",\"operator\":\"%s\",\"values\":%s}]}}",
                 key, op, vals);
    else
        snprintf(buf, sizeof buf, "{\"fieldSelector\":{\"matchExpressions\":[{\"key\":\"%s\",\"operator\":\"%s\"}]}}",
                 key, op);
    return buf;
}

static void test_affinity_provider_region_fields(void **state)
{
    json_t *aws = cluster("m1", NULL, "{\"provider\":\"aws\",\"region\":\"us-east-1\"}");
    json_t *none = cluster("m2", NULL, "{\"provider\":\"\"}"); /* empty string = absent */
    assert_true(amatch(field("provider", "In", "[\"gcp\",\"aws\"]"), aws));
    assert_false(amatch(field("provider", "In", "[\"gcp\"]"), aws));
    assert_false(amatch(field("provider", "In", "[\"aws\"]"), none));
    assert_false(amatch(field("provider", "NotIn", "[\"aws\"]"), aws));
    assert_true(amatch(field("provider", "NotIn", "[\"gcp\"]"), aws));
    assert_true(amatch(field("provider", "NotIn", "[\"aws\"]"), none)); /* missing field: NotIn holds */
    assert_true(amatch(field("region", "Exists", NULL), aws));
    assert_false(amatch(field("region", "Exists", NULL), none));
    assert_false(amatch(field("region", "DoesNotExist", NULL), aws));
    assert_true(amatch(field("region", "DoesNotExist", NULL), none));
    assert_true(amatch(field("region", "In", "[\"us-east-1\"]"), aws));
    /* several expressions are ANDed */
    assert_false(amatch("{\"fieldSelector\":{\"matchExpressions\":["
                        "{\"key\":\"provider\",\"operator\":\"In\",\"values\":[\"aws\"]},"
                        "{\"key\":\"region\",\"operator\":\"In\",\"values\":[\"eu-west-1\"]}]}}",
                        aws));
    assert_true(amatch("{\"fieldSelector\":{\"matchExpressions\":["
                       "{\"key\":\"provider\",\"operator\":\"In\",\"values\":[\"aws\"]},"
                       "{\"key\":\"region\",\"operator\":\"NotIn\",\"values\":[\"eu-west-1\"]}]}}",
                       aws));
    /* fieldSelector without expressions constrains nothing */
    assert_true(amatch("{\"fieldSelector\":{}}", none));
    json_decref(aws);
    json_decref(none);
}

static void test_affinity_zone_is_a_set(void **state)
{
    json_t *multi = cluster("m1", NULL, "{\"zones\":[\"z1\",\"z2\"]}");
    json_t *legacy = cluster("m2", NULL, "{\"zone\":\"z3\"}");          /* deprecated spec.zone */
    json_t *both = cluster("m3", NULL, "{\"zone\":\"z9\",\"zones\":[\"z1\"]}"); /* zones wins */
    json_t *none = cluster("m4", NULL, "{\"zones\":[]}");
    assert_true(amatch(field("zone", "In", "[\"z2\"]"), multi)); /* any overlap */
    assert_false(amatch(field("zone", "In", "[\"z3\"]"), multi));
    assert_false(amatch(field("zone", "In", "[\"z1\"]"), none));
    assert_false(amatch(field("zone", "NotIn", "[\"z2\",\"z7\"]"), multi)); /* one listed zone is enough to fail */
    assert_true(amatch(field("zone", "NotIn", "[\"z7\"]"), multi));
    assert_true(amatch(field("zone", "NotIn", "[\"z7\"]"), none));
    assert_true(amatch(field("zone", "Exists", NULL), multi));
    assert_false(amatch(field("zone", "Exists", NULL), none));
    assert_true(amatch(field("zone", "DoesNotExist", NULL), none));
    assert_false(amatch(field("zone", "DoesNotExist", NULL), multi));
    assert_true(amatch(field("zone", "In", "[\"z3\"]"), legacy));
    assert_true(amatch(field("zone", "Exists", NULL), legacy));
    assert_true(amatch(field("zone", "In", "[\"z1\"]"), both));
    assert_false(amatch(field("zone", "In", "[\"z9\"]"), both));
    json_decref(multi);
    json_decref(legacy);
    json_decref(both);
    json_decref(none);
}

static void test_affinity_malformed_names_field(void **state)
{
    json_t *c = cluster("m1", NULL, NULL);
    char *e;
    e = aerr("[]", c);
    assert_contains(e, "clusterAffinity");
    free(e);
    e = aerr("{\"clusterNames\":\"m1\"}", c);
    assert_contains(e, "clusterNames");
    free(e);
    e = aerr("{\"exclude\":[\"m1\",3]}", c);
    assert_contains(e, "exclude[1]");
    free(e);
    e = aerr("{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Bad\"}]}}", c);
    assert_contains(e, "labelSelector.matchExpressions[0].operator");
    free(e);
    e = aerr(field("color", "In", "[\"x\"]"), c);
    assert_contains(e, "fieldSelector.matchExpressions[0].key");
    assert_contains(e, "color");
    free(e);
    e = aerr(field("provider", "Gt", "[\"1\"]"), c);
    assert_contains(e, "fieldSelector.matchExpressions[0].operator");
    free(e);
    e = aerr(field("provider", "In", "[]"), c);
    assert_contains(e, "fieldSelector.matchExpressions[0].values");
    free(e);
    e = aerr(field("provider", "Exists", "[\"aws\"]"), c);
    assert_contains(e, "fieldSelector.matchExpressions[0].values");
    free(e);
    e = aerr(field("provider", "In", "[\"aws\",1]"), c);
    assert_contains(e, "fieldSelector.matchExpressions[0].values[1]");
    free(e);
    e = aerr("{\"fieldSelector\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]},"
             "{\"operator\":\"In\"}]}}",
             c);
    assert_contains(e, "fieldSelector.matchExpressions[1].key: Required");
    free(e);
    e = aerr("{\"fieldSelector\":[]}", c);
    assert_contains(e, "fieldSelector");
    free(e);
    json_decref(c);
}

static void test_affinity_malformed_cluster(void **state)
{
    json_t *a = J("{\"clusterNames\":[\"m1\"]}");
    struct {
        const char *cluster;
        const char *want;
    } cases[] = {
        {"[]", "cluster"},
        {"{\"metadata\":{}}", "cluster metadata.name"},
        {"{\"metadata\":{\"name\":\"m1\",\"labels\":[]}}", "cluster metadata.labels"},
        {"{\"metadata\":{\"name\":\"m1\"},\"spec\":{\"provider\":3}}", "cluster spec.provider"},
        {"{\"metadata\":{\"name\":\"m1\"},\"spec\":{\"zones\":\"z\"}}", "cluster spec.zones"},
        {"{\"metadata\":{\"name\":\"m1\"},\"spec\":{\"zones\":[\"z\",1]}}", "cluster spec.zones[1]"},
        {"{\"metadata\":{\"name\":\"m1\"},\"spec\":7}", "cluster spec"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *c = J(cases[i].cluster);
        bool m = true;
        char *err = NULL;
        assert_int_equal(fl_policy_cluster_affinity_match(a, c, &m, &err), FL_EINVAL);
        assert_false(m);
        assert_contains(err, cases[i].want);
        free(err);
        json_decref(c);
    }
    /* NULL cluster is bad input too, even with an absent affinity */
    bool m = true;
    char *err = NULL;
    assert_int_equal(fl_policy_cluster_affinity_match(NULL, NULL, &m, &err), FL_EINVAL);
    assert_false(m);
    free(err);
    json_decref(a);
}

static void test_affinity_compiled_reuse(void **state)
{
    json_t *a = J("{\"labelSelector\":{\"matchLabels\":{\"env\":\"prod\"}},"
                  "\"fieldSelector\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"z1\"]}]},"
                  "\"exclude\":[\"m3\"]}");
    fl_cluster_affinity *ca = NULL;
    char *err = NULL;
    assert_int_equal(fl_policy_cluster_affinity_new(a, &ca, &err), 0);
    assert_null(err);
    json_decref(a); /* the compiled form must not borrow from the JSON */
    assert_false(fl_policy_cluster_affinity_is_empty(ca));
    json_t *cs[] = {cluster("m1", "{\"env\":\"prod\"}", "{\"zones\":[\"z1\"]}"),
                    cluster("m2", "{\"env\":\"dev\"}", "{\"zones\":[\"z1\"]}"),
                    cluster("m3", "{\"env\":\"prod\"}", "{\"zones\":[\"z1\"]}"),
                    cluster("m4", "{\"env\":\"prod\"}", "{\"zones\":[\"z2\"]}")};
    bool want[] = {true, false, false, false};
    for (size_t i = 0; i < 4; i++) {
        bool m = !want[i];
        assert_int_equal(fl_policy_cluster_affinity_eval(ca, cs[i], &m, &err), 0);
        assert_int_equal(m, want[i]);
        json_decref(cs[i]);
    }
    fl_policy_cluster_affinity_free(ca);

    fl_cluster_affinity *empty = NULL;
    assert_int_equal(fl_policy_cluster_affinity_new(NULL, &empty, &err), 0);
    assert_true(fl_policy_cluster_affinity_is_empty(empty));
    fl_policy_cluster_affinity_free(empty);
    fl_policy_cluster_affinity_free(NULL);

    fl_cluster_affinity *bad = (fl_cluster_affinity *)0x1;
    json_t *b = J("{\"exclude\":{}}");
    assert_int_equal(fl_policy_cluster_affinity_new(b, &bad, &err), FL_EINVAL);
    assert_null(bad);
    assert_contains(err, "exclude");
    free(err);
    json_decref(b);
}

/* What an affinity reads moved or not: labels and the location fields count; taints, status
 * and the rest do not (a taint on 100 clusters must not re-render every Work). */
static void test_affinity_fields_changed(void **state)
{
    (void)state;
    json_t *base = cluster("m1", "{\"env\":\"prod\"}", "{\"provider\":\"aws\",\"region\":\"r1\",\"zones\":[\"z1\"]}");
    json_t *same = json_deep_copy(base);
    json_object_set_new(json_object_get(same, "spec"), "taints",
                        J("[{\"key\":\"down\",\"effect\":\"NoExecute\"}]"));
    json_object_set_new(same, "status", J("{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}"));
    assert_false(fl_policy_cluster_affinity_fields_changed(base, same));
    assert_false(fl_policy_cluster_affinity_fields_changed(base, base));
    json_t *ch[] = {cluster("m1", "{\"env\":\"dev\"}", "{\"provider\":\"aws\",\"region\":\"r1\",\"zones\":[\"z1\"]}"),
                    cluster("m1", NULL, "{\"provider\":\"aws\",\"region\":\"r1\",\"zones\":[\"z1\"]}"),
                    cluster("m1", "{\"env\":\"prod\"}", "{\"provider\":\"gcp\",\"region\":\"r1\",\"zones\":[\"z1\"]}"),
                    cluster("m1", "{\"env\":\"prod\"}", "{\"provider\":\"aws\",\"region\":\"r2\",\"zones\":[\"z1\"]}"),
                    cluster("m1", "{\"env\":\"prod\"}", "{\"provider\":\"aws\",\"region\":\"r1\",\"zones\":[\"z2\"]}"),
                    cluster("m1", "{\"env\":\"prod\"}", "{\"provider\":\"aws\",\"region\":\"r1\"}"),
                    cluster("m1", "{\"env\":\"prod\"}",
                            "{\"provider\":\"aws\",\"region\":\"r1\",\"zones\":[\"z1\"],\"zone\":\"z1\"}")};
    for (size_t i = 0; i < sizeof ch / sizeof ch[0]; i++) {
        assert_true(fl_policy_cluster_affinity_fields_changed(base, ch[i]));
        assert_true(fl_policy_cluster_affinity_fields_changed(ch[i], base));
        json_decref(ch[i]);
    }
    json_decref(same);
    json_decref(base);
}

/* ---------- resource selectors ---------- */

static json_t *deploy(const char *ns, const char *name, const char *labels)
{
    json_t *o = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", name);
    if (ns)
        json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
    if (labels)
        json_object_set_new(json_object_get(o, "metadata"), "labels", J(labels));
    return o;
}

static fl_policy_match_level slevel(const char *sel, json_t *obj, const char *policy_ns)
{
    json_t *s = J(sel);
    fl_policy_match_level l = FL_POLICY_MATCH_NAME;
    char *err = NULL;
    int rc = fl_policy_selector_level(s, obj, policy_ns, &l, &err);
    if (rc != 0)
        fail_msg("selector %s: unexpected error: %s", sel, err ? err : "(none)");
    json_decref(s);
    return l;
}

static void test_selector_levels(void **state)
{
    json_t *d = deploy("default", "nginx", "{\"app\":\"web\"}");
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}", d, NULL), FL_POLICY_MATCH_ALL);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":"
                            "{\"app\":\"web\"}}}",
                            d, NULL),
                     FL_POLICY_MATCH_LABELSELECTOR);
    /* an explicit empty selector is a label-selector match, not match-all */
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{}}", d, NULL),
                     FL_POLICY_MATCH_LABELSELECTOR);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":"
                            "{\"app\":\"db\"}}}",
                            d, NULL),
                     FL_POLICY_MATCH_NONE);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"nginx\"}", d, NULL),
                     FL_POLICY_MATCH_NAME);
    /* a name decides alone: a non-matching label selector is ignored */
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"nginx\","
                            "\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}}}",
                            d, NULL),
                     FL_POLICY_MATCH_NAME);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"other\","
                            "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}",
                            d, NULL),
                     FL_POLICY_MATCH_NONE);
    /* apiVersion and kind are compared exactly */
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1beta1\",\"kind\":\"Deployment\"}", d, NULL), FL_POLICY_MATCH_NONE);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\"}", d, NULL), FL_POLICY_MATCH_NONE);
    json_decref(d);
}

static void test_selector_namespaces(void **state)
{
    json_t *d = deploy("default", "nginx", NULL);
    json_t *cm = J("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team\"}}");
    const char *any = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}";
    /* empty namespace: the policy's own namespace for namespaced policies ... */
    assert_int_equal(slevel(any, d, "default"), FL_POLICY_MATCH_ALL);
    assert_int_equal(slevel(any, d, "other"), FL_POLICY_MATCH_NONE);
    /* ... and any namespace for cluster-scoped ones */
    assert_int_equal(slevel(any, d, NULL), FL_POLICY_MATCH_ALL);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"namespace\":\"default\"}", d, NULL),
                     FL_POLICY_MATCH_ALL);
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"namespace\":\"prod\"}", d, NULL),
                     FL_POLICY_MATCH_NONE);
    /* an explicit namespace is not overridden by the policy namespace */
    assert_int_equal(slevel("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"namespace\":\"prod\"}", d,
                            "default"),
                     FL_POLICY_MATCH_NONE);
    /* cluster-scoped objects: only selectors without namespace match */
    assert_int_equal(slevel("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"name\":\"team\"}", cm, NULL),
                     FL_POLICY_MATCH_NAME);
    assert_int_equal(slevel("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"namespace\":\"x\"}", cm, NULL),
                     FL_POLICY_MATCH_NONE);
    bool m = false;
    char *err = NULL;
    json_t *s = J(any);
    assert_int_equal(fl_policy_selector_match(s, d, "default", &m, &err), 0);
    assert_true(m);
    assert_int_equal(fl_policy_selector_match(s, d, "kube-system", &m, &err), 0);
    assert_false(m);
    json_decref(s);
    json_decref(d);
    json_decref(cm);
}

static void test_selector_list_best_level(void **state)
{
    json_t *d = deploy("default", "nginx", "{\"app\":\"web\"}");
    json_t *list = J("[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
                     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"},"
                     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"nginx\"},"
                     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{}}]");
    fl_policy_match_level l;
    char *err = NULL;
    assert_int_equal(fl_policy_selectors_level(list, d, NULL, &l, &err), 0);
    assert_int_equal(l, FL_POLICY_MATCH_NAME);
    json_t *empty = J("[]");
    assert_int_equal(fl_policy_selectors_level(empty, d, NULL, &l, &err), 0);
    assert_int_equal(l, FL_POLICY_MATCH_NONE);
    assert_int_equal(fl_policy_selectors_level(NULL, d, NULL, &l, &err), 0);
    assert_int_equal(l, FL_POLICY_MATCH_NONE);
    json_decref(empty);
    json_decref(list);
    json_decref(d);
}

static void test_selector_malformed(void **state)
{
    json_t *d = deploy("default", "nginx", NULL);
    struct {
        const char *sels;
        const char *want;
    } cases[] = {
        {"{}", "resourceSelectors: Invalid value"},
        {"[3]", "resourceSelectors[0]: Invalid value"},
        {"[{\"kind\":\"Deployment\"}]", "resourceSelectors[0].apiVersion: Required value"},
        {"[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"},{\"apiVersion\":\"apps/v1\"}]",
         "resourceSelectors[1].kind: Required value"},
        {"[{\"apiVersion\":\"apps/v1\",\"kind\":\"\"}]", "resourceSelectors[0].kind: Required value"},
        {"[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":5}]", "resourceSelectors[0].name"},
        {"[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"namespace\":[]}]", "resourceSelectors[0].namespace"},
        /* reported even though the kind does not match */
        {"[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"labelSelector\":{\"matchLabels\":[]}}]",
         "resourceSelectors[0].labelSelector.matchLabels"},
        /* reported even after an earlier name match */
        {"[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"nginx\"},{\"apiVersion\":1,\"kind\":\"x\"}]",
         "resourceSelectors[1].apiVersion"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *s = J(cases[i].sels);
        fl_policy_match_level l = FL_POLICY_MATCH_NAME;
        char *err = NULL;
        assert_int_equal(fl_policy_selectors_level(s, d, NULL, &l, &err), FL_EINVAL);
        assert_int_equal(l, FL_POLICY_MATCH_NONE);
        assert_contains(err, cases[i].want);
        free(err);
        json_decref(s);
    }
    /* malformed templates */
    const char *tpls[][2] = {
        {"7", "template"},
        {"{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"a\"}}", "template apiVersion"},
        {"{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\"}}", "template kind"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", "template metadata"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{}}", "template metadata.name"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"labels\":\"x\"}}",
         "template metadata.labels"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":1}}",
         "template metadata.namespace"},
    };
    json_t *sel = J("{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}");
    for (size_t i = 0; i < sizeof tpls / sizeof tpls[0]; i++) {
        json_t *t = J(tpls[i][0]);
        bool m = true;
        char *err = NULL;
        assert_int_equal(fl_policy_selector_match(sel, t, NULL, &m, &err), FL_EINVAL);
        assert_false(m);
        assert_contains(err, tpls[i][1]);
        free(err);
        json_decref(t);
    }
    json_decref(sel);
    json_decref(d);
}

/* ---------- policy precedence ---------- */

/* A policy object: kind, ns (NULL for cluster-scoped), name, priority (INT32_MIN = absent),
 * selectors as JSON text, extra spec fields as JSON text (object, may be NULL). */
static json_t *policy(const char *kind, const char *ns, const char *name, int prio, const char *sels,
                      const char *extra)
{
    json_t *p = json_pack("{s:s,s:s,s:{s:s},s:{s:o}}", "apiVersion", "policy.karmada.io/v1alpha1", "kind", kind,
                          "metadata", "name", name, "spec", "resourceSelectors", J(sels));
    if (ns)
        json_object_set_new(json_object_get(p, "metadata"), "namespace", json_string(ns));
    if (prio != INT32_MIN)
        json_object_set_new(json_object_get(p, "spec"), "priority", json_integer(prio));
    if (extra) {
        json_t *x = J(extra);
        json_object_update(json_object_get(p, "spec"), x);
        json_decref(x);
    }
    return p;
}

#define ALL_DEPLOY "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}]"
#define NAME_DEPLOY "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"nginx\"}]"
#define LABEL_DEPLOY "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]"

static const char *winner_name(json_t *tpl, json_t *policies)
{
    const json_t *w = (const json_t *)0x1;
    fl_policy_match_level l;
    char *err = NULL;
    int rc = fl_policy_select(tpl, policies, &w, &l, &err);
    if (rc)
        fail_msg("select failed: %s", err);
    if (!w) {
        assert_int_equal(l, FL_POLICY_MATCH_NONE);
        return NULL;
    }
    return json_string_value(json_object_get(json_object_get(w, "metadata"), "name"));
}

static void test_select_precedence(void **state)
{
    json_t *d = deploy("default", "nginx", "{\"app\":\"web\"}");
    json_t *ps = json_array();
    assert_null(winner_name(d, ps));

    /* within a kind: name match beats label beats all, at equal priority */
    json_array_append_new(ps, policy("PropagationPolicy", "default", "a-all", INT32_MIN, ALL_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "a-all");
    json_array_append_new(ps, policy("PropagationPolicy", "default", "b-label", 0, LABEL_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "b-label");
    json_array_append_new(ps, policy("PropagationPolicy", "default", "c-name", INT32_MIN, NAME_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "c-name");
    /* equal priority and level: alphabetical order, whatever the array order */
    json_array_append_new(ps, policy("PropagationPolicy", "default", "b-name", INT32_MIN, NAME_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "b-name");
    /* explicit priority beats match level */
    json_array_append_new(ps, policy("PropagationPolicy", "default", "z-all-prio", 5, ALL_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "z-all-prio");
    /* negative priorities rank below the default 0 */
    json_t *neg = json_array();
    json_array_append_new(neg, policy("PropagationPolicy", "default", "a", -1, NAME_DEPLOY, NULL));
    json_array_append_new(neg, policy("PropagationPolicy", "default", "b", INT32_MIN, ALL_DEPLOY, NULL));
    assert_string_equal(winner_name(d, neg), "b");
    json_decref(neg);
    json_decref(ps);
    json_decref(d);
}

static void test_select_pp_beats_cpp(void **state)
{
    json_t *d = deploy("default", "nginx", NULL);
    json_t *ps = json_array();
    json_array_append_new(ps, policy("ClusterPropagationPolicy", NULL, "cpp-high", 100, NAME_DEPLOY, NULL));
    json_array_append_new(ps, policy("ClusterPropagationPolicy", NULL, "cpp-low", 1, NAME_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "cpp-high");
    /* any matching PropagationPolicy wins over every ClusterPropagationPolicy */
    json_array_append_new(ps, policy("PropagationPolicy", "default", "pp", -10, ALL_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "pp");
    /* ... but only in the template's own namespace */
    json_t *d2 = deploy("other", "nginx", NULL);
    assert_string_equal(winner_name(d2, ps), "cpp-high");
    /* a cluster-scoped template is never claimed by a PropagationPolicy */
    json_t *ns = J("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team\"}}");
    json_t *ps2 = json_array();
    json_array_append_new(ps2, policy("PropagationPolicy", "default", "pp", 0, "[{\"apiVersion\":\"v1\",\"kind\":\"Namespace\"}]", NULL));
    assert_null(winner_name(ns, ps2));
    json_array_append_new(ps2, policy("ClusterPropagationPolicy", NULL, "cpp", 0, "[{\"apiVersion\":\"v1\",\"kind\":\"Namespace\"}]", NULL));
    assert_string_equal(winner_name(ns, ps2), "cpp");
    json_decref(ps2);
    json_decref(ns);
    json_decref(d2);
    json_decref(ps);
    json_decref(d);
}

static void test_select_skips_deleting_malformed_other(void **state)
{
    json_t *d = deploy("default", "nginx", NULL);
    json_t *ps = json_array();
    json_t *dying = policy("PropagationPolicy", "default", "a-dying", 9, NAME_DEPLOY, NULL);
    json_object_set_new(json_object_get(dying, "metadata"), "deletionTimestamp", json_string("2024-01-01T00:00:00Z"));
    json_array_append_new(ps, dying);
    json_array_append_new(ps, policy("PropagationPolicy", "default", "b-bad", 9, "[{\"kind\":\"Deployment\"}]", NULL));
    json_t *badprio = policy("PropagationPolicy", "default", "c-badprio", 0, NAME_DEPLOY, NULL);
    json_object_set_new(json_object_get(badprio, "spec"), "priority", json_string("high"));
    json_array_append_new(ps, badprio);
    json_array_append_new(ps, policy("OverridePolicy", "default", "d-op", 9, NAME_DEPLOY, NULL));
    json_array_append_new(ps, J("42"));
    json_array_append_new(ps, J("{\"kind\":\"PropagationPolicy\"}"));
    assert_null(winner_name(d, ps));
    json_array_append_new(ps, policy("ClusterPropagationPolicy", NULL, "e-ok", 0, ALL_DEPLOY, NULL));
    assert_string_equal(winner_name(d, ps), "e-ok");

    /* bad arguments are errors */
    const json_t *w = (const json_t *)0x1;
    char *err = NULL;
    assert_int_equal(fl_policy_select(d, d, &w, NULL, &err), FL_EINVAL);
    assert_null(w);
    assert_contains(err, "policies");
    free(err);
    json_t *bad = J("{\"kind\":\"Deployment\"}");
    assert_int_equal(fl_policy_select(bad, ps, &w, NULL, &err), FL_EINVAL);
    assert_contains(err, "template apiVersion");
    free(err);
    json_decref(bad);
    json_decref(ps);
    json_decref(d);
}

static void test_policy_level_and_priority_errors(void **state)
{
    json_t *d = deploy("default", "nginx", NULL);
    json_t *p = policy("OverridePolicy", "default", "op", INT32_MIN, "[{\"apiVersion\":\"apps/v1\"}]", NULL);
    fl_policy_match_level l;
    char *err = NULL;
    assert_int_equal(fl_policy_match_level_of(p, d, &l, &err), FL_EINVAL);
    assert_string_equal(err, "OverridePolicy default/op: spec.resourceSelectors[0].kind: Required value");
    free(err);
    json_decref(p);

    /* an OverridePolicy's empty selector namespace is its own namespace */
    p = policy("OverridePolicy", "other", "op", INT32_MIN, ALL_DEPLOY, NULL);
    assert_int_equal(fl_policy_match_level_of(p, d, &l, &err), 0);
    assert_int_equal(l, FL_POLICY_MATCH_NONE);
    json_decref(p);
    p = policy("ClusterOverridePolicy", NULL, "cop", INT32_MIN, ALL_DEPLOY, NULL);
    assert_int_equal(fl_policy_match_level_of(p, d, &l, &err), 0);
    assert_int_equal(l, FL_POLICY_MATCH_ALL);
    json_decref(p);

    int32_t prio = 7;
    p = policy("ClusterPropagationPolicy", NULL, "cpp", INT32_MIN, ALL_DEPLOY, NULL);
    assert_int_equal(fl_policy_explicit_priority(p, &prio, &err), 0);
    assert_int_equal(prio, 0);
    json_object_set_new(json_object_get(p, "spec"), "priority", json_integer(1LL << 40));
    assert_int_equal(fl_policy_explicit_priority(p, &prio, &err), FL_EINVAL);
    assert_contains(err, "ClusterPropagationPolicy cpp: spec.priority");
    free(err);
    json_decref(p);

    p = J("{\"kind\":\"PropagationPolicy\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
    assert_int_equal(fl_policy_match_level_of(p, d, &l, &err), FL_EINVAL);
    assert_contains(err, "metadata.namespace");
    free(err);
    json_decref(p);
    p = J("{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
    assert_int_equal(fl_policy_match_level_of(p, d, &l, &err), FL_EINVAL);
    assert_contains(err, "policy kind");
    free(err);
    json_decref(p);
    json_decref(d);
}

static bool may(json_t *p, json_t *claimer, json_t *tpl)
{
    bool m = true;
    char *err = NULL;
    int rc = fl_policy_may_preempt(p, claimer, tpl, &m, &err);
    if (rc)
        fail_msg("may_preempt: %s", err);
    return m;
}

static void test_preemption_rules(void **state)
{
    json_t *d = deploy("default", "nginx", NULL);
    const char *always = "{\"preemption\":\"Always\"}";
    json_t *pp_hi = policy("PropagationPolicy", "default", "pp-hi", 10, NAME_DEPLOY, always);
    json_t *pp_hi_never = policy("PropagationPolicy", "default", "pp-hi-never", 10, NAME_DEPLOY, NULL);
    json_t *pp_lo = policy("PropagationPolicy", "default", "pp-lo", 1, NAME_DEPLOY, always);
    json_t *pp_eq = policy("PropagationPolicy", "default", "pp-eq", 1, NAME_DEPLOY, always);
    json_t *pp_all = policy("PropagationPolicy", "default", "pp-all", 99, ALL_DEPLOY, always);
    json_t *cpp_hi = policy("ClusterPropagationPolicy", NULL, "cpp-hi", 50, NAME_DEPLOY, always);
    json_t *cpp_lo = policy("ClusterPropagationPolicy", NULL, "cpp-lo", 0, NAME_DEPLOY, always);

    assert_true(may(pp_hi, pp_lo, d));        /* higher priority PP over PP */
    assert_false(may(pp_lo, pp_hi, d));       /* lower never */
    assert_false(may(pp_eq, pp_lo, d));       /* equal never */
    assert_false(may(pp_hi_never, pp_lo, d)); /* preemption Never (default) */
    assert_true(may(pp_lo, cpp_hi, d));       /* PP over CPP regardless of priority */
    assert_true(may(cpp_hi, cpp_lo, d));      /* CPP over lower CPP */
    assert_false(may(cpp_lo, cpp_hi, d));
    assert_false(may(cpp_hi, pp_lo, d));      /* CPP never over PP */
    assert_false(may(pp_hi, pp_hi, d));       /* already claimed by itself */
    assert_false(may(pp_hi, NULL, d));        /* nothing to preempt */
    assert_false(may(pp_all, pp_lo, d));      /* preemption acts on templates a selector names */
    json_t *other = deploy("default", "other", NULL);
    assert_false(may(pp_hi, pp_lo, other));

    /* malformed preemption value is an error naming the field */
    json_t *bad = policy("PropagationPolicy", "default", "bad", 10, NAME_DEPLOY, "{\"preemption\":true}");
    bool m = true;
    char *err = NULL;
    assert_int_equal(fl_policy_may_preempt(bad, pp_lo, d, &m, &err), FL_EINVAL);
    assert_false(m);
    assert_contains(err, "spec.preemption");
    free(err);
    json_t *op = policy("OverridePolicy", "default", "op", 10, NAME_DEPLOY, always);
    assert_int_equal(fl_policy_may_preempt(op, pp_lo, d, &m, &err), FL_EINVAL);
    assert_contains(err, "kind");
    free(err);

    json_decref(op);
    json_decref(bad);
    json_decref(other);
    json_decref(pp_hi);
    json_decref(pp_hi_never);
    json_decref(pp_lo);
    json_decref(pp_eq);
    json_decref(pp_all);
    json_decref(cpp_hi);
    json_decref(cpp_lo);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_affinity_absent_matches_all),
        cmocka_unit_test(test_affinity_cluster_names),
        cmocka_unit_test(test_affinity_exclude_wins),
        cmocka_unit_test(test_affinity_label_selector),
        cmocka_unit_test(test_affinity_provider_region_fields),
        cmocka_unit_test(test_affinity_zone_is_a_set),
        cmocka_unit_test(test_affinity_malformed_names_field),
        cmocka_unit_test(test_affinity_malformed_cluster),
        cmocka_unit_test(test_affinity_compiled_reuse),
        cmocka_unit_test(test_affinity_fields_changed),
        cmocka_unit_test(test_selector_levels),
        cmocka_unit_test(test_selector_namespaces),
        cmocka_unit_test(test_selector_list_best_level),
        cmocka_unit_test(test_selector_malformed),
        cmocka_unit_test(test_select_precedence),
        cmocka_unit_test(test_select_pp_beats_cpp),
        cmocka_unit_test(test_select_skips_deleting_malformed_other),
        cmocka_unit_test(test_policy_level_and_priority_errors),
        cmocka_unit_test(test_preemption_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
