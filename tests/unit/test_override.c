/* test_override.c - OverridePolicy / ClusterOverridePolicy application
 * (src/policy/override.c, src/policy/overriders.c): every overrider and operator,
 * image reference parsing as Karmada's imageparser does it, targetCluster by names,
 * labels and fields, the order policies and rules apply in, the applied-overrides
 * annotations, all-or-nothing failure, and malformed policies reported by field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "policy/override.h"

/* ---------- helpers ---------- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("expected \"%s\" to contain \"%s\"", hay ? hay : "(null)", needle);
}

static json_t *member(const char *name, const char *labels, const char *spec)
{
    json_t *c = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "cluster.karmada.io/v1alpha1", "kind", "Cluster",
                          "metadata", "name", name);
    if (labels)
        json_object_set_new(json_object_get(c, "metadata"), "labels", J(labels));
    if (spec)
        json_object_set_new(c, "spec", J(spec));
    return c;
}

/* An override policy; ns NULL = ClusterOverridePolicy. spec is JSON text. */
static json_t *opol(const char *ns, const char *name, const char *spec)
{
    json_t *p = json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "policy.karmada.io/v1alpha1", "kind",
                          ns ? "OverridePolicy" : "ClusterOverridePolicy", "metadata", "name", name, "spec", J(spec));
    if (ns)
        json_object_set_new(json_object_get(p, "metadata"), "namespace", json_string(ns));
    return p;
}

/* Apply; on success returns the applied list (caller decrefs), fails the test otherwise. */
static json_t *apply_ok(json_t *manifest, const json_t *cluster, const json_t *policies)
{
    json_t *applied = NULL;
    char *err = NULL;
    int rc = fl_override_apply(manifest, cluster, policies, &applied, &err);
    if (rc != 0)
        fail_msg("override failed (%d): %s", rc, err ? err : "(no message)");
    assert_null(err);
    assert_true(json_is_array(applied));
    return applied;
}

/* Apply must fail; the manifest must be unchanged; returns the message (caller frees). */
static char *apply_err(json_t *manifest, const json_t *cluster, const json_t *policies)
{
    json_t *before = json_deep_copy(manifest);
    json_t *applied = (json_t *)0x1;
    char *err = NULL;
    int rc = fl_override_apply(manifest, cluster, policies, &applied, &err);
    assert_int_equal(rc, FL_EINVAL);
    assert_null(applied);
    assert_non_null(err);
    assert_true(json_equal(before, manifest));
    json_decref(before);
    return err;
}

/* Single-policy convenience: one ClusterOverridePolicy with one rule of `overriders`. */
static json_t *rule_policy(const char *overriders)
{
    char *spec = NULL;
    if (asprintf(&spec, "{\"overrideRules\":[{\"overriders\":%s}]}", overriders) < 0)
        fail_msg("oom");
    json_t *ps = json_pack("[o]", opol(NULL, "p", spec));
    free(spec);
    return ps;
}

static const char *str_at(const json_t *root, const char *path)
{
    /* dotted path with numeric segments for arrays */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *cur = root;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
        if (json_is_array(cur))
            cur = json_array_get(cur, (size_t)atoi(tok));
        else
            cur = json_object_get(cur, tok);
    }
    return json_string_value(cur);
}

/* Override one image through a predicate on a ConfigMap; returns the new image (heap)
 * or, on failure, "ERR:" + message. */
static char *image_via(const char *image, const char *component, const char *op, const char *value)
{
    json_t *m = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                          "cm", "namespace", "default", "data", "img", image);
    json_t *ovr = json_pack("{s:[{s:{s:s},s:s,s:s}]}", "imageOverrider", "predicate", "path", "/data/img", "component",
                            component, "operator", op);
    if (value)
        json_object_set_new(json_array_get(json_object_get(ovr, "imageOverrider"), 0), "value", json_string(value));
    json_t *pol = opol(NULL, "p", "{}");
    json_object_set_new(json_object_get(pol, "spec"), "overrideRules", json_pack("[{s:o}]", "overriders", ovr));
    json_t *ps = json_pack("[o]", pol);
    json_t *c = member("m1", NULL, NULL);
    json_t *applied = NULL;
    char *err = NULL;
    char *res;
    if (fl_override_apply(m, c, ps, &applied, &err) == 0)
        res = strdup(str_at(m, "data.img"));
    else if (asprintf(&res, "ERR:%s", err) < 0)
        res = NULL;
    free(err);
    json_decref(applied);
    json_decref(m);
    json_decref(c);
    json_decref(ps);
    return res;
}

static void check_image(const char *image, const char *comp, const char *op, const char *value, const char *want)
{
    char *got = image_via(image, comp, op, value);
    if (strcmp(got, want) != 0 && !(strncmp(want, "ERR:", 4) == 0 && strstr(got, want + 4)))
        fail_msg("%s %s %s(%s): got \"%s\", want \"%s\"", image, comp, op, value ? value : "", got, want);
    free(got);
}

#define SHA "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c"

/* ---------- image overrider ---------- */

static void test_image_registry(void **state)
{
    check_image("nginx", "Registry", "replace", "my.reg", "my.reg/nginx");
    check_image("registry.io:5000/team/app:v1", "Registry", "replace", "my.reg", "my.reg/team/app:v1");
    check_image("registry.io:5000/team/app:v1", "Registry", "add", "-cn", "registry.io:5000-cn/team/app:v1");
    check_image("registry.io:5000/team/app:v1", "Registry", "remove", NULL, "team/app:v1");
    /* "team" is not a registry: no '.', no ':' and not localhost */
    check_image("team/app:v1", "Registry", "replace", "r.io", "r.io/team/app:v1");
    check_image("localhost/app", "Registry", "replace", "r.io", "r.io/app");
    check_image("[::1]:5000/app:1", "Registry", "remove", NULL, "app:1");
    check_image("busybox@" SHA, "Registry", "replace", "r.io", "r.io/busybox@" SHA);
    /* upstream does not normalise to docker.io/library */
    check_image("nginx:1.19", "Registry", "add", "docker.io", "docker.io/nginx:1.19");
}

static void test_image_repository(void **state)
{
    check_image("registry.io/a/b:1", "Repository", "replace", "x/y", "registry.io/x/y:1");
    check_image("registry.io/a/b:1", "Repository", "add", "-dev", "registry.io/a/b-dev:1");
    check_image("nginx", "Repository", "replace", "busybox", "busybox");
    /* upstream renders an emptied repository as is */
    check_image("registry.io/a/b:1", "Repository", "remove", NULL, "registry.io/:1");
}

static void test_image_tag_and_digest(void **state)
{
    check_image("nginx:1.19", "Tag", "replace", "v2", "nginx:v2");
    check_image("nginx", "Tag", "replace", "v2", "nginx:v2");
    check_image("nginx:1.19", "Tag", "add", "-alpine", "nginx:1.19-alpine");
    check_image("nginx:1.19", "Tag", "remove", NULL, "nginx");
    check_image("nginx", "Tag", "remove", NULL, "nginx");
    /* tag and digest are one component: a tag replaces a digest and vice versa */
    check_image("busybox@" SHA, "Tag", "replace", "v2", "busybox:v2");
    check_image("nginx:1", "Tag", "replace", SHA, "nginx@" SHA);
    check_image("busybox@" SHA, "Tag", "remove", NULL, "busybox");
    /* a value that is neither a tag nor a digest changes nothing */
    check_image("nginx:1", "Tag", "replace", "bad tag!", "nginx:1");
    check_image("nginx:1", "Tag", "replace", "", "nginx:1");
    /* with both tag and digest the parsed reference keeps the tag only */
    check_image("nginx:1.0@" SHA, "Registry", "replace", "r.io", "r.io/nginx:1.0");
    /* port-looking tag on a bare name is a tag */
    check_image("localhost:5000", "Tag", "replace", "6000", "localhost:6000");
}

static void test_image_invalid_references(void **state)
{
    check_image("Nginx", "Tag", "replace", "v", "ERR:repository name must be lowercase");
    check_image("", "Tag", "replace", "v", "ERR:at least one component");
    check_image("nginx:", "Tag", "replace", "v", "ERR:invalid reference format");
    check_image("nginx@sha256:abc", "Tag", "replace", "v", "ERR:invalid reference format");
    check_image("nginx@md5:0123456789abcdef0123456789abcdef", "Tag", "replace", "v",
                "ERR:unsupported digest algorithm");
    check_image("nginx@sha256:0123456789abcdef0123456789abcdef", "Tag", "replace", "v",
                "ERR:invalid checksum digest length");
    check_image("nginx@sha256:50D858E0985ECC7F60418AAF0CC5AB587F42C2570A884095A9E8CCACD0F6545C", "Tag", "replace", "v",
                "ERR:invalid checksum digest format");
    check_image("a..b", "Tag", "replace", "v", "ERR:invalid reference format");
    check_image("a/-b", "Tag", "replace", "v", "ERR:invalid reference format");
    check_image("reg.io:port/a", "Tag", "replace", "v", "ERR:invalid reference format");
    /* the error names policy, rule, overrider and where the image was */
    check_image("Nginx", "Tag", "replace", "v",
                "ERR:ClusterOverridePolicy p: spec.overrideRules[0].overriders.imageOverrider[0]: predicate.path");
    /* separators that the grammar allows */
    check_image("a__b/c-d/e--f.g_h:1", "Tag", "replace", "2", "a__b/c-d/e--f.g_h:2");
}

static json_t *workload(const char *kind, const char *podspec)
{
    char *t = NULL;
    bool pod = strcmp(kind, "Pod") == 0;
    if (asprintf(&t,
                 pod ? "{\"apiVersion\":\"v1\",\"kind\":\"%s\",\"metadata\":{\"name\":\"w\",\"namespace\":\"default\"},"
                       "\"spec\":%s}"
                     : "{\"apiVersion\":\"apps/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":\"w\",\"namespace\":"
                       "\"default\"},\"spec\":{\"template\":{\"spec\":%s}}}",
                 kind, podspec) < 0)
        fail_msg("oom");
    json_t *w = J(t);
    free(t);
    return w;
}

#define PODSPEC                                                                                                        \
    "{\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox:1\"}],"                                              \
    "\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.19\"},{\"name\":\"side\",\"image\":\"reg.io:5000/envoy\"}]}"

static void test_image_workload_kinds(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *ps = rule_policy("{\"imageOverrider\":[{\"component\":\"Registry\",\"operator\":\"replace\","
                             "\"value\":\"mirror.io\"}]}");
    const char *kinds[] = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"};
    for (size_t i = 0; i < 5; i++) {
        json_t *w = workload(kinds[i], PODSPEC);
        json_decref(apply_ok(w, c, ps));
        assert_string_equal(str_at(w, "spec.template.spec.containers.0.image"), "mirror.io/nginx:1.19");
        assert_string_equal(str_at(w, "spec.template.spec.containers.1.image"), "mirror.io/envoy");
        /* upstream leaves init containers to predicates */
        assert_string_equal(str_at(w, "spec.template.spec.initContainers.0.image"), "busybox:1");
        json_decref(w);
    }
    json_t *pod = workload("Pod", PODSPEC);
    json_decref(apply_ok(pod, c, ps));
    assert_string_equal(str_at(pod, "spec.containers.0.image"), "mirror.io/nginx:1.19");
    json_decref(pod);
    /* kinds upstream does not know are left alone (CronJob included) */
    json_t *cj = J("{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"},"
                   "\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":" PODSPEC "}}}}}");
    json_t *before = json_deep_copy(cj);
    json_decref(apply_ok(cj, c, ps));
    assert_true(json_equal(cj, before));
    json_decref(before);
    json_decref(cj);
    /* a workload without containers is fine; a container without an image is not */
    json_t *empty = workload("Deployment", "{}");
    json_decref(apply_ok(empty, c, ps));
    json_decref(empty);
    json_t *noimg = workload("Deployment", "{\"containers\":[{\"name\":\"a\"}]}");
    char *e = apply_err(noimg, c, ps);
    assert_contains(e, "imageOverrider[0]: spec.template.spec.containers[0].image: invalid image");
    free(e);
    json_decref(noimg);
    json_decref(ps);

    /* predicates reach init containers */
    ps = rule_policy("{\"imageOverrider\":[{\"predicate\":{\"path\":\"/spec/template/spec/initContainers/0/image\"},"
                     "\"component\":\"Tag\",\"operator\":\"replace\",\"value\":\"2\"}]}");
    json_t *w = workload("Deployment", PODSPEC);
    json_decref(apply_ok(w, c, ps));
    assert_string_equal(str_at(w, "spec.template.spec.initContainers.0.image"), "busybox:2");
    assert_string_equal(str_at(w, "spec.template.spec.containers.0.image"), "nginx:1.19");
    json_decref(ps);
    /* a predicate that names nothing is an error */
    ps = rule_policy("{\"imageOverrider\":[{\"predicate\":{\"path\":\"/spec/template/spec/containers/5/image\"},"
                     "\"component\":\"Tag\",\"operator\":\"replace\",\"value\":\"2\"}]}");
    e = apply_err(w, c, ps);
    assert_contains(e, "predicate.path");
    free(e);
    json_decref(ps);
    json_decref(w);
    json_decref(c);
}

/* ---------- command / args ---------- */

static void test_command_args(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *w = workload("Deployment", "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx\",\"command\":[\"run\","
                                       "\"--a\",\"--b\",\"--a\"]},{\"name\":\"side\",\"image\":\"envoy\"},"
                                       "{\"name\":\"web\",\"image\":\"nginx\"}]}");
    json_t *ps = rule_policy("{\"commandOverrider\":[{\"containerName\":\"web\",\"operator\":\"remove\",\"value\":[\"--a\"]},"
                             "{\"containerName\":\"web\",\"operator\":\"add\",\"value\":[\"--c\"]}],"
                             "\"argsOverrider\":[{\"containerName\":\"side\",\"operator\":\"add\",\"value\":[\"-v\",\"-x\"]},"
                             "{\"containerName\":\"nope\",\"operator\":\"add\",\"value\":[\"-z\"]}]}");
    json_decref(apply_ok(w, c, ps));
    json_t *want = J("[\"run\",\"--b\",\"--c\"]");
    assert_true(json_equal(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
                                                                               json_object_get(w, "spec"), "template"),
                                                                           "spec"),
                                                           "containers"),
                                                       0),
                                       "command"),
                           want));
    json_decref(want);
    /* the second container of the same name had no command: remove creates [], add appends */
    want = J("[\"--c\"]");
    json_t *cs = json_object_get(json_object_get(json_object_get(json_object_get(w, "spec"), "template"), "spec"),
                                 "containers");
    assert_true(json_equal(json_object_get(json_array_get(cs, 2), "command"), want));
    json_decref(want);
    want = J("[\"-v\",\"-x\"]");
    assert_true(json_equal(json_object_get(json_array_get(cs, 1), "args"), want));
    json_decref(want);
    assert_null(json_object_get(json_array_get(cs, 1), "command"));
    json_decref(ps);

    /* Pod kind: spec.containers */
    json_t *pod = workload("Pod", "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx\",\"args\":[\"a\"]}]}");
    ps = rule_policy("{\"argsOverrider\":[{\"containerName\":\"web\",\"operator\":\"add\",\"value\":[\"b\"]}]}");
    json_decref(apply_ok(pod, c, ps));
    want = J("[\"a\",\"b\"]");
    assert_true(json_equal(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0),
                                           "args"),
                           want));
    json_decref(want);
    json_decref(ps);
    /* a command that is not a list of strings is reported */
    json_t *bad = workload("Pod", "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx\",\"command\":\"sh\"}]}");
    ps = rule_policy("{\"commandOverrider\":[{\"containerName\":\"web\",\"operator\":\"add\",\"value\":[\"b\"]}]}");
    char *e = apply_err(bad, c, ps);
    assert_contains(e, "commandOverrider[0]: spec.containers[0].command");
    free(e);
    json_decref(ps);
    json_decref(bad);
    json_decref(pod);
    json_decref(w);
    json_decref(c);
}

/* ---------- labels / annotations ---------- */

static void test_labels_annotations(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *m = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\","
                  "\"labels\":{\"keep\":\"1\",\"drop\":\"2\",\"swap\":\"3\"}}}");
    json_t *ps = rule_policy("{\"labelsOverrider\":["
                             "{\"operator\":\"add\",\"value\":{\"new\":\"a\",\"keep\":\"1b\",\"app.io/x\":\"y\"}},"
                             "{\"operator\":\"remove\",\"value\":{\"drop\":\"\",\"absent\":\"\"}},"
                             "{\"operator\":\"replace\",\"value\":{\"swap\":\"30\",\"ghost\":\"9\"}}],"
                             "\"annotationsOverrider\":[{\"operator\":\"add\",\"value\":{\"note\":\"hi\"}},"
                             "{\"operator\":\"replace\",\"value\":{\"note\":\"bye\"}}]}");
    json_decref(apply_ok(m, c, ps));
    json_t *want = J("{\"keep\":\"1b\",\"swap\":\"30\",\"new\":\"a\",\"app.io/x\":\"y\"}");
    assert_true(json_equal(json_object_get(json_object_get(m, "metadata"), "labels"), want));
    json_decref(want);
    want = J("{\"note\":\"bye\"}"); /* annotations map created by add */
    assert_true(json_equal(json_object_get(json_object_get(m, "metadata"), "annotations"), want));
    json_decref(want);
    json_decref(ps);
    /* remove/replace on a missing map do nothing and create nothing */
    json_t *bare = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"}}");
    ps = rule_policy("{\"labelsOverrider\":[{\"operator\":\"replace\",\"value\":{\"a\":\"b\"}},"
                     "{\"operator\":\"remove\",\"value\":{\"a\":\"\"}}]}");
    json_decref(apply_ok(bare, c, ps));
    assert_null(json_object_get(json_object_get(bare, "metadata"), "labels"));
    json_decref(ps);
    /* labels of the wrong shape are reported */
    json_t *badm = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"labels\":{\"a\":1}}}");
    ps = rule_policy("{\"labelsOverrider\":[{\"operator\":\"add\",\"value\":{\"a\":\"b\"}}]}");
    char *e = apply_err(badm, c, ps);
    assert_contains(e, "labelsOverrider[0]: metadata.labels");
    free(e);
    json_decref(ps);
    json_decref(badm);
    json_decref(bare);
    json_decref(m);
    json_decref(c);
}

/* ---------- field overrider ---------- */

static void test_field_overrider_json_yaml(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *m = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"},\"data\":{"
                  "\"app/config.json\":\"{\\\"a\\\":1,\\\"b\\\":{\\\"c\\\":2}}\","
                  "\"conf.yaml\":\"zeta: 1\\nalpha:\\n  list:\\n  - x\\n\"}}");
    json_t *ps = rule_policy("{\"fieldOverrider\":["
                             "{\"fieldPath\":\"/data/app~1config.json\",\"json\":["
                             "{\"subPath\":\"/b/c\",\"operator\":\"replace\",\"value\":3},"
                             "{\"subPath\":\"/d\",\"operator\":\"add\",\"value\":{\"e\":[true]}},"
                             "{\"subPath\":\"/a\",\"operator\":\"remove\"}]},"
                             "{\"fieldPath\":\"/data/conf.yaml\",\"yaml\":["
                             "{\"subPath\":\"/alpha/list/-\",\"operator\":\"add\",\"value\":\"y\"},"
                             "{\"subPath\":\"/beta\",\"operator\":\"add\",\"value\":2}]}]}");
    json_decref(apply_ok(m, c, ps));
    json_t *data = json_object_get(m, "data");
    assert_string_equal(json_string_value(json_object_get(data, "app/config.json")),
                        "{\"b\":{\"c\":3},\"d\":{\"e\":[true]}}");
    /* YAML comes back with sorted keys, as Go's JSON-to-YAML round trip writes it (and
     * with "y" quoted: YAML 1.1 would read it as a boolean) */
    assert_string_equal(json_string_value(json_object_get(data, "conf.yaml")), "alpha:\n  list:\n  - x\n  - \"y\"\nbeta: 2\nzeta: 1\n");
    json_decref(ps);

    struct {
        const char *ovr;
        const char *want;
    } bad[] = {
        {"{\"fieldOverrider\":[{\"fieldPath\":\"/data/nope\",\"json\":[{\"subPath\":\"/a\",\"operator\":\"remove\"}]}]}",
         "fieldOverrider[0]: fieldPath: /data/nope not found"},
        {"{\"fieldOverrider\":[{\"fieldPath\":\"/metadata\",\"json\":[{\"subPath\":\"/a\",\"operator\":\"remove\"}]}]}",
         "fieldOverrider[0]: fieldPath: the value at /metadata is not a string"},
        {"{\"fieldOverrider\":[{\"fieldPath\":\"/data/conf.yaml\",\"json\":[{\"subPath\":\"/a\",\"operator\":\"remove\"}]}]}",
         "does not parse"},
        {"{\"fieldOverrider\":[{\"fieldPath\":\"/data/app~1config.json\",\"json\":["
         "{\"subPath\":\"/b\",\"operator\":\"remove\"},{\"subPath\":\"/zz\",\"operator\":\"replace\",\"value\":1}]}]}",
         "fieldOverrider[0]: json[1] (replace)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ps = rule_policy(bad[i].ovr);
        char *e = apply_err(m, c, ps);
        assert_contains(e, bad[i].want);
        free(e);
        json_decref(ps);
    }
    json_decref(m);
    json_decref(c);
}

/* ---------- plaintext ---------- */

static void test_plaintext(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *w = workload("Deployment", "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx\"}]}");
    json_object_set_new(json_object_get(w, "spec"), "replicas", json_integer(3));
    json_t *ps = rule_policy("{\"plaintext\":["
                             "{\"path\":\"/spec/replicas\",\"operator\":\"replace\",\"value\":5},"
                             "{\"path\":\"/metadata/annotations\",\"operator\":\"add\",\"value\":{\"a~b/c\":\"1\"}},"
                             "{\"path\":\"/metadata/annotations/a~0b~1c\",\"operator\":\"replace\",\"value\":\"2\"},"
                             "{\"path\":\"/spec/template/spec/containers/0/image\",\"operator\":\"remove\"}]}");
    json_decref(apply_ok(w, c, ps));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "spec"), "replicas")), 5);
    assert_string_equal(str_at(w, "metadata.annotations.a~b/c"), "2");
    assert_null(str_at(w, "spec.template.spec.containers.0.image"));
    json_decref(ps);
    /* a missing path fails the whole patch, naming the entry */
    ps = rule_policy("{\"plaintext\":[{\"path\":\"/spec/replicas\",\"operator\":\"replace\",\"value\":9},"
                     "{\"path\":\"/spec/nope\",\"operator\":\"replace\",\"value\":1}]}");
    char *e = apply_err(w, c, ps);
    assert_contains(e, "ClusterOverridePolicy p: spec.overrideRules[0].overriders.plaintext[1] (replace)");
    free(e);
    json_decref(ps);
    /* replacing the whole document with a non-object is refused */
    ps = rule_policy("{\"plaintext\":[{\"path\":\"\",\"operator\":\"replace\",\"value\":7}]}");
    e = apply_err(w, c, ps);
    assert_contains(e, "no longer an object");
    free(e);
    json_decref(ps);
    json_decref(w);
    json_decref(c);
}

/* The overriders of one rule run in Karmada's fixed order whatever the JSON order:
 * image, command, args, labels, annotations, field, plaintext. */
static void test_overrider_order_within_rule(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *w = workload("Deployment", "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1\"}]}");
    /* plaintext (last) sees the image overrider's (first) result; labels before plaintext */
    json_t *ps = rule_policy("{\"plaintext\":["
                             "{\"path\":\"/spec/template/spec/containers/0/image\",\"operator\":\"replace\",\"value\":\"final\"},"
                             "{\"path\":\"/metadata/labels/a\",\"operator\":\"replace\",\"value\":\"plain\"}],"
                             "\"labelsOverrider\":[{\"operator\":\"add\",\"value\":{\"a\":\"label\"}}],"
                             "\"imageOverrider\":[{\"component\":\"Tag\",\"operator\":\"replace\",\"value\":\"2\"}]}");
    json_decref(apply_ok(w, c, ps));
    assert_string_equal(str_at(w, "spec.template.spec.containers.0.image"), "final");
    assert_string_equal(str_at(w, "metadata.labels.a"), "plain");
    json_decref(ps);
    json_decref(w);
    json_decref(c);
}

/* ---------- target clusters ---------- */

static void test_target_cluster(void **state)
{
    json_t *m1 = member("m1", "{\"env\":\"prod\"}", "{\"provider\":\"aws\",\"region\":\"us-east-1\"}");
    json_t *m2 = member("m2", "{\"env\":\"dev\"}", "{\"provider\":\"gcp\",\"zones\":[\"z1\"]}");
    json_t *ps = json_pack(
        "[o]", opol(NULL, "p",
                    "{\"overrideRules\":["
                    "{\"targetCluster\":{\"clusterNames\":[\"m1\"]},\"overriders\":{\"labelsOverrider\":[{\"operator\":"
                    "\"add\",\"value\":{\"byname\":\"y\"}}]}},"
                    "{\"targetCluster\":{\"labelSelector\":{\"matchLabels\":{\"env\":\"dev\"}}},\"overriders\":{"
                    "\"labelsOverrider\":[{\"operator\":\"add\",\"value\":{\"bylabel\":\"y\"}}]}},"
                    "{\"targetCluster\":{\"fieldSelector\":{\"matchExpressions\":[{\"key\":\"provider\",\"operator\":"
                    "\"In\",\"values\":[\"aws\"]}]}},\"overriders\":{\"labelsOverrider\":[{\"operator\":\"add\","
                    "\"value\":{\"byfield\":\"y\"}}]}},"
                    "{\"targetCluster\":{\"exclude\":[\"m1\"]},\"overriders\":{\"labelsOverrider\":[{\"operator\":"
                    "\"add\",\"value\":{\"notm1\":\"y\"}}]}},"
                    "{\"overriders\":{\"labelsOverrider\":[{\"operator\":\"add\",\"value\":{\"all\":\"y\"}}]}}]}"));
    const char *tpl = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\"}}";
    json_t *a = J(tpl), *b = J(tpl);
    json_t *ap = apply_ok(a, m1, ps);
    json_t *bp = apply_ok(b, m2, ps);
    json_t *want_a = J("{\"byname\":\"y\",\"byfield\":\"y\",\"all\":\"y\"}");
    json_t *want_b = J("{\"bylabel\":\"y\",\"notm1\":\"y\",\"all\":\"y\"}");
    assert_true(json_equal(json_object_get(json_object_get(a, "metadata"), "labels"), want_a));
    assert_true(json_equal(json_object_get(json_object_get(b, "metadata"), "labels"), want_b));
    /* applied lists the matching rules by index */
    assert_int_equal(json_array_size(ap), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ap, 0), "rule")), 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ap, 1), "rule")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ap, 2), "rule")), 4);
    assert_int_equal(json_array_size(bp), 3);
    json_decref(want_a);
    json_decref(want_b);
    json_decref(ap);
    json_decref(bp);
    json_decref(a);
    json_decref(b);
    json_decref(ps);

    /* the deprecated spec.targetCluster + spec.overriders form */
    ps = json_pack("[o]", opol(NULL, "old", "{\"targetCluster\":{\"clusterNames\":[\"m2\"]},\"overriders\":{"
                                            "\"labelsOverrider\":[{\"operator\":\"add\",\"value\":{\"old\":\"y\"}}]}}"));
    a = J(tpl);
    b = J(tpl);
    ap = apply_ok(a, m1, ps);
    bp = apply_ok(b, m2, ps);
    assert_int_equal(json_array_size(ap), 0);
    assert_null(json_object_get(json_object_get(a, "metadata"), "labels"));
    assert_string_equal(str_at(b, "metadata.labels.old"), "y");
    assert_int_equal(json_array_size(bp), 1);
    assert_null(json_object_get(json_array_get(bp, 0), "rule"));
    json_decref(ap);
    json_decref(bp);
    json_decref(a);
    json_decref(b);
    json_decref(ps);
    json_decref(m1);
    json_decref(m2);
}

/* ---------- policy order and selection ---------- */

static json_t *label_policy(const char *ns, const char *name, const char *sels, const char *value)
{
    char *spec = NULL;
    if (asprintf(&spec,
                 "{%s%s%s\"overrideRules\":[{\"overriders\":{\"labelsOverrider\":[{\"operator\":\"add\",\"value\":"
                 "{\"winner\":\"%s\",\"%s\":\"y\"}}]}}]}",
                 sels ? "\"resourceSelectors\":" : "", sels ? sels : "", sels ? "," : "", value, name) < 0)
        fail_msg("oom");
    json_t *p = opol(ns, name, spec);
    free(spec);
    return p;
}

static void test_policy_order(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *m = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":"
                  "\"default\",\"labels\":{\"app\":\"web\"}}}");
    const char *by_name = "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"web\"}]";
    const char *by_label = "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"labelSelector\":{\"matchLabels\":"
                           "{\"app\":\"web\"}}}]";
    const char *by_kind = "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}]";
    const char *other = "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}]";
    /* given in an order unrelated to the expected one */
    json_t *ps = json_array();
    json_array_append_new(ps, label_policy("default", "op-a-name", by_name, "op-a-name"));
    json_array_append_new(ps, label_policy("default", "op-z-kind", by_kind, "op-z-kind"));
    json_array_append_new(ps, label_policy(NULL, "cop-name", by_name, "cop-name"));
    json_array_append_new(ps, label_policy("default", "op-b-label", by_label, "op-b-label"));
    json_array_append_new(ps, label_policy("default", "op-c-all", NULL, "op-c-all"));
    json_array_append_new(ps, label_policy(NULL, "cop-all", NULL, "cop-all"));
    json_array_append_new(ps, label_policy("default", "op-other", other, "op-other"));
    json_array_append_new(ps, label_policy("elsewhere", "op-elsewhere", NULL, "op-elsewhere"));
    json_t *ap = apply_ok(m, c, ps);
    const char *want[] = {"cop-all", "cop-name", "op-c-all", "op-z-kind", "op-b-label", "op-a-name"};
    assert_int_equal(json_array_size(ap), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(ap, i), "name")), want[i]);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ap, 0), "kind")), "ClusterOverridePolicy");
    assert_null(json_object_get(json_array_get(ap, 0), "namespace"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(ap, 5), "namespace")), "default");
    /* the most precise, last-applied policy wins */
    assert_string_equal(str_at(m, "metadata.labels.winner"), "op-a-name");
    assert_null(str_at(m, "metadata.labels.op-other"));
    assert_null(str_at(m, "metadata.labels.op-elsewhere"));
    json_decref(ap);

    /* cluster-scoped manifests take ClusterOverridePolicies only */
    json_t *ns = J("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team\"}}");
    ap = apply_ok(ns, c, ps);
    assert_int_equal(json_array_size(ap), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ap, 0), "name")), "cop-all");
    json_decref(ap);
    json_decref(ns);
    json_decref(ps);
    json_decref(m);
    json_decref(c);
}

static void test_failure_leaves_manifest_untouched(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *m = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\"},"
                  "\"data\":{\"k\":\"v\"}}");
    json_t *ps = json_array();
    /* a applies fine first, b then fails at run time (missing path) */
    json_array_append_new(ps, opol(NULL, "a", "{\"overrideRules\":[{\"overriders\":{\"plaintext\":[{\"path\":"
                                              "\"/data/k\",\"operator\":\"replace\",\"value\":\"changed\"}]}}]}"));
    json_array_append_new(ps, opol(NULL, "b", "{\"overrideRules\":[{\"overriders\":{\"labelsOverrider\":[{\"operator\":"
                                              "\"add\",\"value\":{\"x\":\"y\"}}]}},{\"overriders\":{\"plaintext\":[{"
                                              "\"path\":\"/data/missing\",\"operator\":\"remove\"}]}}]}"));
    char *e = apply_err(m, c, ps); /* asserts the manifest is unchanged */
    assert_contains(e, "ClusterOverridePolicy b: spec.overrideRules[1].overriders.plaintext[0] (remove)");
    free(e);
    assert_string_equal(str_at(m, "data.k"), "v");
    json_decref(ps);
    json_decref(m);
    json_decref(c);
}

static void test_malformed_policies(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *m = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\"}}");
    struct {
        const char *spec;
        const char *want;
    } cases[] = {
        {"{\"overrideRules\":{}}", "ClusterOverridePolicy p: spec.overrideRules: Invalid value"},
        {"{\"overrideRules\":[7]}", "spec.overrideRules[0]: Invalid value"},
        {"{\"overrideRules\":[{\"overriders\":[]}]}", "spec.overrideRules[0].overriders: Invalid value"},
        {"{\"overrideRules\":[{\"overriders\":{\"plaintext\":{}}}]}", "spec.overrideRules[0].overriders.plaintext: "},
        {"{\"overrideRules\":[{\"overriders\":{\"imageOverrider\":[{\"component\":\"Host\",\"operator\":\"add\"}]}}]}",
         "spec.overrideRules[0].overriders.imageOverrider[0].component: Unsupported value: \"Host\""},
        {"{\"overrideRules\":[{\"overriders\":{\"imageOverrider\":[{\"component\":\"Tag\"}]}}]}",
         "imageOverrider[0].operator: Required value"},
        {"{\"overrideRules\":[{\"overriders\":{\"imageOverrider\":[{\"component\":\"Tag\",\"operator\":\"add\","
         "\"predicate\":{\"path\":\"spec\"}}]}}]}",
         "imageOverrider[0].predicate.path: Invalid value"},
        {"{\"overrideRules\":[{\"overriders\":{\"commandOverrider\":[{\"containerName\":\"a\",\"operator\":\"replace\"}]}}]}",
         "commandOverrider[0].operator: Unsupported value: \"replace\""},
        {"{\"overrideRules\":[{\"overriders\":{\"argsOverrider\":[{\"operator\":\"add\"}]}}]}",
         "argsOverrider[0].containerName: Required value"},
        {"{\"overrideRules\":[{\"overriders\":{\"argsOverrider\":[{\"containerName\":\"a\",\"operator\":\"add\","
         "\"value\":[1]}]}}]}",
         "argsOverrider[0].value[0]"},
        {"{\"overrideRules\":[{\"overriders\":{\"labelsOverrider\":[{\"operator\":\"add\"}]}}]}",
         "labelsOverrider[0].value: Required value"},
        {"{\"overrideRules\":[{\"overriders\":{\"annotationsOverrider\":[{\"operator\":\"add\",\"value\":{\"a\":1}}]}}]}",
         "annotationsOverrider[0].value[a]"},
        {"{\"overrideRules\":[{\"overriders\":{\"fieldOverrider\":[{\"fieldPath\":\"/a\"}]}}]}",
         "fieldOverrider[0]: Required value: FieldOverrider must have either JSON or YAML set"},
        {"{\"overrideRules\":[{\"overriders\":{\"fieldOverrider\":[{\"fieldPath\":\"/a\",\"json\":[{\"subPath\":\"/a\","
         "\"operator\":\"remove\"}],\"yaml\":[{\"subPath\":\"/a\",\"operator\":\"remove\"}]}]}}]}",
         "fieldOverrider[0]: Invalid value: FieldOverrider has both YAML and JSON set"},
        {"{\"overrideRules\":[{\"overriders\":{\"fieldOverrider\":[{\"fieldPath\":\"/a\",\"json\":[{\"subPath\":\"/a\","
         "\"operator\":\"remove\",\"value\":1}]}]}}]}",
         "fieldOverrider[0].json[0].value: Invalid value: value is not allowed for remove operation"},
        {"{\"overrideRules\":[{\"overriders\":{\"fieldOverrider\":[{\"fieldPath\":\"/a\",\"yaml\":[{\"subPath\":\"/a\","
         "\"operator\":\"add\"}]}]}}]}",
         "fieldOverrider[0].yaml[0].value: Invalid value: value is required"},
        {"{\"overrideRules\":[{\"overriders\":{\"fieldOverrider\":[{\"fieldPath\":\"a\",\"yaml\":[{\"subPath\":\"/a\","
         "\"operator\":\"remove\"}]}]}}]}",
         "fieldOverrider[0].fieldPath: Invalid value: \"a\": JSON pointer must be empty or start with a \"/\""},
        {"{\"overrideRules\":[{\"overriders\":{\"plaintext\":[{\"operator\":\"add\",\"value\":1}]}}]}",
         "plaintext[0].path: Required value"},
        {"{\"overrideRules\":[{\"overriders\":{\"plaintext\":[{\"path\":\"/a\",\"operator\":\"move\"}]}}]}",
         "plaintext[0].operator: Unsupported value: \"move\""},
        /* targetCluster problems, even for a cluster the rule would not select */
        {"{\"overrideRules\":[{\"targetCluster\":{\"clusterNames\":[\"other\"],\"fieldSelector\":{\"matchExpressions\":"
         "[{\"key\":\"color\",\"operator\":\"In\",\"values\":[\"x\"]}]}},\"overriders\":{}}]}",
         "spec.overrideRules[0].targetCluster.fieldSelector.matchExpressions[0].key: Unsupported value"},
        {"{\"overrideRules\":[{\"targetCluster\":[],\"overriders\":{}}]}",
         "spec.overrideRules[0].targetCluster: Invalid value"},
        {"{\"overrideRules\":[{\"targetCluster\":{\"clusterNames\":[\"other\"]},\"overriders\":{\"imageOverrider\":"
         "[{\"component\":\"x\",\"operator\":\"add\"}]}}]}",
         "spec.overrideRules[0].overriders.imageOverrider[0].component"},
        {"{\"targetCluster\":{\"exclude\":7}}", "ClusterOverridePolicy p: spec.targetCluster.exclude: Invalid value"},
        {"{\"overriders\":{\"labelsOverrider\":[{\"operator\":\"put\",\"value\":{}}]}}",
         "ClusterOverridePolicy p: spec.overriders.labelsOverrider[0].operator: Unsupported value"},
        {"{\"resourceSelectors\":[{\"apiVersion\":\"v1\"}]}", "ClusterOverridePolicy p: spec.resourceSelectors[0].kind"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *ps = json_pack("[o]", opol(NULL, "p", cases[i].spec));
        char *e = apply_err(m, c, ps);
        if (!strstr(e, cases[i].want))
            fail_msg("case %zu: \"%s\" does not contain \"%s\"", i, e, cases[i].want);
        free(e);
        json_decref(ps);
    }
    /* the argument shapes */
    json_t *ps = json_array();
    json_t *notlist = J("{}");
    char *e = apply_err(m, c, notlist);
    assert_contains(e, "policies");
    free(e);
    json_decref(notlist);
    json_array_append_new(ps, J("{\"kind\":\"PropagationPolicy\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}"));
    e = apply_err(m, c, ps);
    assert_contains(e, "policies[0].kind");
    free(e);
    json_array_clear(ps);
    json_array_append_new(ps, J("{\"kind\":\"OverridePolicy\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}"));
    e = apply_err(m, c, ps);
    assert_contains(e, "metadata.namespace");
    free(e);
    json_array_clear(ps);
    json_t *badc = J("{\"metadata\":{}}");
    e = apply_err(m, badc, ps);
    assert_contains(e, "cluster metadata.name");
    free(e);
    json_decref(badc);
    json_t *arr = J("[]");
    json_t *applied = (json_t *)0x1;
    e = NULL;
    assert_int_equal(fl_override_apply(arr, c, ps, &applied, &e), FL_EINVAL);
    assert_null(applied);
    assert_contains(e, "manifest");
    free(e);
    json_decref(arr);
    json_decref(ps);
    json_decref(m);
    json_decref(c);
}

/* ---------- annotations ---------- */

static void test_applied_annotations(void **state)
{
    json_t *c = member("m1", NULL, NULL);
    json_t *m = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\"}}");
    json_t *ps = json_array();
    json_array_append_new(ps, opol(NULL, "zz", "{\"overrideRules\":[{\"overriders\":{\"labelsOverrider\":[{\"operator\":"
                                               "\"add\",\"value\":{\"b\":\"<2>\",\"a\":\"&\"}}],\"plaintext\":[{"
                                               "\"operator\":\"add\",\"path\":\"/data/y\",\"value\":{}}]}}]}"));
    json_array_append_new(ps, opol(NULL, "aa", "{\"overrideRules\":[{\"overriders\":{}}]}"));
    json_array_append_new(ps, opol("d", "op", "{\"resourceSelectors\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                              "\"name\":\"cm\"}],\"overrideRules\":[{\"overriders\":{\"fieldOverrider\":"
                                              "[{\"fieldPath\":\"/data/x\",\"yaml\":[{\"subPath\":\"/a\",\"operator\":"
                                              "\"remove\"}]}],\"imageOverrider\":[{\"operator\":\"remove\","
                                              "\"component\":\"Tag\",\"value\":\"\"}]}}]}"));
    json_object_set_new(m, "data", J("{\"x\":\"a: 1\\n\"}"));
    json_t *ap = apply_ok(m, c, ps);
    char *cops = NULL, *ops = NULL, *err = NULL;
    assert_int_equal(fl_override_annotations(ap, &cops, &ops, &err), 0);
    assert_null(err);
    /* sorted by name; Go's field order; map keys sorted; <, >, & escaped; value always on plaintext */
    assert_string_equal(cops, "[{\"policyName\":\"aa\",\"overriders\":{}},{\"policyName\":\"zz\",\"overriders\":{"
                              "\"plaintext\":[{\"path\":\"/data/y\",\"operator\":\"add\",\"value\":{}}],"
                              "\"labelsOverrider\":[{\"operator\":\"add\",\"value\":{\"a\":\"\\u0026\",\"b\":"
                              "\"\\u003c2\\u003e\"}}]}}]");
    assert_string_equal(ops, "[{\"policyName\":\"op\",\"overriders\":{\"imageOverrider\":[{\"component\":\"Tag\","
                             "\"operator\":\"remove\"}],\"fieldOverrider\":[{\"fieldPath\":\"/data/x\",\"yaml\":[{"
                             "\"subPath\":\"/a\",\"operator\":\"remove\",\"value\":null}]}]}}]");
    assert_string_equal(str_at(m, "data.x"), "{}\n");
    free(cops);
    free(ops);
    json_decref(ap);

    /* nothing applied: no annotations */
    json_t *none = J("[]");
    cops = ops = (char *)0x1;
    assert_int_equal(fl_override_annotations(none, &cops, &ops, &err), 0);
    assert_null(cops);
    assert_null(ops);
    json_decref(none);
    json_t *bad = J("[{\"kind\":\"OverridePolicy\"}]");
    assert_int_equal(fl_override_annotations(bad, &cops, &ops, &err), FL_EINVAL);
    assert_null(cops);
    assert_contains(err, "applied[0]");
    free(err);
    json_decref(bad);
    json_decref(ps);
    json_decref(m);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_registry),
        cmocka_unit_test(test_image_repository),
        cmocka_unit_test(test_image_tag_and_digest),
        cmocka_unit_test(test_image_invalid_references),
        cmocka_unit_test(test_image_workload_kinds),
        cmocka_unit_test(test_command_args),
        cmocka_unit_test(test_labels_annotations),
        cmocka_unit_test(test_field_overrider_json_yaml),
        cmocka_unit_test(test_plaintext),
        cmocka_unit_test(test_overrider_order_within_rule),
        cmocka_unit_test(test_target_cluster),
        cmocka_unit_test(test_policy_order),
        cmocka_unit_test(test_failure_leaves_manifest_untouched),
        cmocka_unit_test(test_malformed_policies),
        cmocka_unit_test(test_applied_annotations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
