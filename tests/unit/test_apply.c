/* test_apply.c - server-side apply and managedFields (src/api/apply.h).
 *
 * Each test pins one behaviour of upstream's field management against a small
 * Deployment-shaped kind whose field table carries the same patch metadata as the
 * real one (containers merge on name, ports on containerPort, finalizers a set),
 * and a CRD kind whose schema uses x-kubernetes-list-type. FieldsV1 expectations
 * are what a real apiserver writes for the same requests.
 *
 * fl_kind_smp_lookup lives in kinds.c; a weak copy here walks the test kind's
 * table the same way, so the test links with or without kinds.c. JSON below is
 * written with ' for " and ` for \" (inside FieldsV1 keys) for readability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/apply.h"
#include "core/err.h"
#include "core/mem.h"

/* ---- a Deployment-like kind ------------------------------------------ */

#define F(p) { .path = (p), .type = FL_F_ANY }
#define FL(p, key, s) { .path = (p), .type = FL_F_ARRAY, .merge_key = (key), .strategy = "merge", .sub = (s) }
#define FS(p, s) { .path = (p), .type = FL_F_OBJECT, .sub = (s) }
#define FEND { .path = NULL }

static const fl_field port_fields[] = { F("containerPort"), F("protocol"), FEND };
static const fl_field container_fields[] = {
    F("name"), F("image"), F("args"), FL("ports", "containerPort", port_fields), FL("env", "name", NULL), FEND,
};
static const fl_field podspec_fields[] = { FL("containers", "name", container_fields), F("tolerations"), FEND };
static const fl_field meta_fields[] = { FL("finalizers", NULL, NULL), FL("ownerReferences", "uid", NULL), FEND };
static const fl_field deploy_fields[] = {
    FS("metadata", meta_fields), F("spec.replicas"), FS("spec.template.spec", podspec_fields), FEND,
};

static fl_kind deploy_kind = {
    .group = "apps", .version = "v1", .kind = "Deployment", .list_kind = "DeploymentList",
    .resource = "deployments", .singular = "deployment", .namespaced = true, .fields = deploy_fields,
    .api_version = "apps/v1",
};

static bool walk_table(const fl_field *t, const char *path, fl_smp_meta *out)
{
    for (; t && t->path; t++) {
        size_t n = strlen(t->path);
        if (strncmp(path, t->path, n))
            continue;
        if (!path[n]) {
            if (!t->strategy && !t->merge_key)
                return false;
            out->merge = t->strategy && strstr(t->strategy, "merge");
            out->merge_key = t->merge_key;
            return true;
        }
        if (path[n] == '.' && t->sub && walk_table(t->sub, path + n + 1, out))
            return true;
    }
    return false;
}

__attribute__((weak)) bool fl_kind_smp_lookup(void *ctx, const char *path, fl_smp_meta *out)
{
    const fl_kind *k = ctx;
    memset(out, 0, sizeof(*out));
    return k && k->fields && walk_table(k->fields, path, out);
}

/* ---- helpers ------------------------------------------------------------ */

static json_t *J(const char *text)
{
    size_t n = strlen(text);
    char *s = fl_malloc(2 * n + 1), *o = s;
    for (const char *p = text; *p; p++) {
        if (*p == '\'') {
            *o++ = '"';
        } else if (*p == '`') {
            *o++ = '\\';
            *o++ = '"';
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON (%s): %s", e.text, s);
    free(s);
    return v;
}

static void assert_json_eq(const json_t *got, const char *want_text)
{
    json_t *want = J(want_text);
    if (!json_equal((json_t *)got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
        char *w = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
        print_error("got:  %s\nwant: %s\n", g ? g : "(null)", w ? w : "(null)");
        free(g);
        free(w);
        json_decref(want);
        fail();
    }
    json_decref(want);
}

static const json_t *jget(const json_t *o, const char *dotted)
{
    char *s = fl_strdup(dotted), *save = NULL;
    const json_t *v = o;
    for (char *t = strtok_r(s, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
        v = json_object_get(v, t);
    free(s);
    return v;
}

/* The managedFields entry of manager/operation, or NULL. */
static const json_t *entry(const json_t *obj, const char *manager, const char *op)
{
    size_t i;
    json_t *e;
    json_array_foreach(jget(obj, "metadata.managedFields"), i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "manager")), manager) &&
            !strcmp(json_string_value(json_object_get(e, "operation")), op))
            return e;
    }
    return NULL;
}

static void assert_fields(const json_t *obj, const char *manager, const char *op, const char *want)
{
    const json_t *e = entry(obj, manager, op);
    if (!e)
        fail_msg("no %s entry for %s", op, manager);
    assert_json_eq(json_object_get(e, "fieldsV1"), want);
}

/* Apply that must succeed; returns the new object and drops cur. */
static json_t *apply_ok(const fl_kind *k, json_t *cur, const char *config, const char *manager, bool force,
                        const char *now)
{
    json_t *cfg = J(config), *out = (json_t *)1, *conflicts = (json_t *)1;
    char *err = (char *)1;
    int rc = fl_apply(k, cur, cfg, manager, force, now, &out, &conflicts, &err);
    if (rc)
        fail_msg("fl_apply: rc %d: %s", rc, err ? err : "(no message)");
    assert_null(conflicts);
    assert_null(err);
    assert_non_null(out);
    json_decref(cfg);
    json_decref(cur);
    return out;
}

#define T0 "2024-05-01T10:00:00Z"
#define T1 "2024-05-01T11:00:00Z"
#define T2 "2024-05-01T12:00:00Z"

static const char *NGINX =
    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','namespace':'default',"
    "'labels':{'app':'web'}},'spec':{'replicas':3,'selector':{'matchLabels':{'app':'web'}},"
    "'template':{'metadata':{'labels':{'app':'web'}},'spec':{'containers':[{'name':'nginx',"
    "'image':'nginx:1.25','ports':[{'containerPort':80}]}]}}}}";

/* ---- tests ---------------------------------------------------------------- */

static void apply_creates_with_managed_fields(void **state)
{
    json_t *out = apply_ok(&deploy_kind, NULL, NGINX, "kubectl", false, T0);
    const json_t *mf = jget(out, "metadata.managedFields");
    assert_int_equal(json_array_size(mf), 1);
    const json_t *e = json_array_get(mf, 0);
    assert_string_equal(json_string_value(json_object_get(e, "manager")), "kubectl");
    assert_string_equal(json_string_value(json_object_get(e, "operation")), "Apply");
    assert_string_equal(json_string_value(json_object_get(e, "apiVersion")), "apps/v1");
    assert_string_equal(json_string_value(json_object_get(e, "time")), T0);
    assert_string_equal(json_string_value(json_object_get(e, "fieldsType")), "FieldsV1");
    /* as kube-apiserver writes it: selector atomic, containers keyed by name, ports
     * by containerPort+protocol with protocol's default */
    assert_json_eq(json_object_get(e, "fieldsV1"),
                   "{'f:metadata':{'f:labels':{'f:app':{}}},'f:spec':{'f:replicas':{},'f:selector':{},"
                   "'f:template':{'f:metadata':{'f:labels':{'f:app':{}}},'f:spec':{'f:containers':{"
                   "'k:{`name`:`nginx`}':{'.':{},'f:image':{},'f:name':{},'f:ports':{"
                   "'k:{`containerPort`:80,`protocol`:`TCP`}':{'.':{},'f:containerPort':{}}}}}}}}}");
    /* the object itself is the configuration */
    json_t *body = json_deep_copy(out);
    json_object_del(json_object_get(body, "metadata"), "managedFields");
    assert_json_eq(body, NGINX);
    /* "." comes first in the encoded set, as upstream writes it */
    char *s = json_dumps(json_object_get(e, "fieldsV1"), JSON_COMPACT);
    assert_non_null(strstr(s, "{\".\":{},\"f:image\":{},\"f:name\":{}"));
    free(s);
    json_decref(body);
    json_decref(out);
}

static void reapply_with_removed_field_deletes_it(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','labels':"
                         "{'app':'web','tier':'fe'}},'spec':{'replicas':3,'paused':false}}",
                         "mgr", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','labels':{'app':'web'}},"
                 "'spec':{'replicas':3}}",
                 "mgr", false, T1);
    assert_null(jget(o, "spec.paused"));
    assert_null(jget(o, "metadata.labels.tier"));
    assert_json_eq(jget(o, "metadata.labels"), "{'app':'web'}");
    assert_fields(o, "mgr", "Apply", "{'f:metadata':{'f:labels':{'f:app':{}}},'f:spec':{'f:replicas':{}}}");
    assert_string_equal(json_string_value(json_object_get(entry(o, "mgr", "Apply"), "time")), T1);
    /* dropping the last label drops the emptied map too */
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':3}}",
                 "mgr", false, T2);
    assert_null(jget(o, "metadata.labels"));
    json_decref(o);
}

static void removed_field_kept_when_another_manager_owns_it(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},"
                         "'spec':{'replicas':3,'minReadySeconds':5}}",
                         "a", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':3}}",
                 "b", false, T1);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'minReadySeconds':5}}",
                 "a", false, T2);
    assert_int_equal(json_integer_value(jget(o, "spec.replicas")), 3);
    assert_fields(o, "b", "Apply", "{'f:spec':{'f:replicas':{}}}");
    assert_fields(o, "a", "Apply", "{'f:spec':{'f:minReadySeconds':{}}}");
    /* once b lets go too, nobody owns it and it goes */
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'paused':true}}",
                 "b", false, T2);
    assert_null(jget(o, "spec.replicas"));
    json_decref(o);
}

static void conflict_with_other_applier_reports_field_and_manager(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web',"
                         "'labels':{'team':'a'}},'spec':{'replicas':3}}",
                         "a", false, T0);
    json_t *before = json_deep_copy(o);
    json_t *cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web',"
                    "'labels':{'team':'b'}},'spec':{'replicas':5,'paused':true}}");
    json_t *out = (json_t *)1, *conflicts = NULL;
    char *err = (char *)1;
    int rc = fl_apply(&deploy_kind, o, cfg, "b", false, T1, &out, &conflicts, &err);
    assert_int_equal(rc, FL_ECONFLICT);
    assert_null(out);
    assert_null(err);
    assert_json_eq(conflicts, "[{'field':'.metadata.labels.team','manager':'a'},"
                              "{'field':'.spec.replicas','manager':'a'}]");
    assert_true(json_equal(o, before)); /* nothing changed */
    json_decref(conflicts);
    json_decref(cfg);
    json_decref(before);
    json_decref(o);
}

static void no_conflict_when_values_equal_shared_ownership(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':3}}",
                         "a", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':3}}",
                 "b", false, T1);
    assert_fields(o, "a", "Apply", "{'f:spec':{'f:replicas':{}}}");
    assert_fields(o, "b", "Apply", "{'f:spec':{'f:replicas':{}}}");
    /* entries are ordered like the apiserver's: operation, then time */
    assert_string_equal(json_string_value(jget(json_array_get(jget(o, "metadata.managedFields"), 0), "manager")),
                        "a");
    /* a shared field is still a conflict once a co-owner changes the value */
    json_t *cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':4}}");
    json_t *out = NULL, *conflicts = NULL;
    assert_int_equal(fl_apply(&deploy_kind, o, cfg, "a", false, T2, &out, &conflicts, NULL), FL_ECONFLICT);
    assert_json_eq(conflicts, "[{'field':'.spec.replicas','manager':'b'}]");
    json_decref(conflicts);
    json_decref(cfg);
    json_decref(o);
}

static void force_takes_ownership(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},"
                         "'spec':{'replicas':3,'paused':false}}",
                         "a", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':5}}",
                 "b", true, T1);
    assert_int_equal(json_integer_value(jget(o, "spec.replicas")), 5);
    assert_fields(o, "a", "Apply", "{'f:spec':{'f:paused':{}}}");
    assert_fields(o, "b", "Apply", "{'f:spec':{'f:replicas':{}}}");
    /* a now no longer owns replicas: dropping it from its config leaves it alone */
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'paused':false}}",
                 "a", false, T2);
    assert_int_equal(json_integer_value(jget(o, "spec.replicas")), 5);
    json_decref(o);
}

static void update_by_another_manager_moves_ownership(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},"
                         "'spec':{'replicas':3,'paused':false}}",
                         "kubectl", false, T0);
    json_t *old = json_deep_copy(o);
    json_object_set_new(json_object_get(o, "spec"), "replicas", json_integer(7));
    fl_managed_fields_update(&deploy_kind, old, o, "hpa-controller", T1);
    assert_fields(o, "kubectl", "Apply", "{'f:spec':{'f:paused':{}}}");
    assert_fields(o, "hpa-controller", "Update", "{'f:spec':{'f:replicas':{}}}");
    const json_t *e = entry(o, "hpa-controller", "Update");
    assert_string_equal(json_string_value(json_object_get(e, "time")), T1);
    assert_string_equal(json_string_value(json_object_get(e, "apiVersion")), "apps/v1");

    /* applying a different value now conflicts with the updater */
    json_t *cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},"
                    "'spec':{'replicas':3,'paused':false}}");
    json_t *out = NULL, *conflicts = NULL;
    assert_int_equal(fl_apply(&deploy_kind, o, cfg, "kubectl", false, T2, &out, &conflicts, NULL), FL_ECONFLICT);
    assert_json_eq(conflicts, "[{'field':'.spec.replicas','manager':'hpa-controller'}]");
    json_decref(conflicts);
    /* applying the value it has now is fine, and shares the field */
    json_decref(cfg);
    cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':7,'paused':false}}");
    assert_int_equal(fl_apply(&deploy_kind, o, cfg, "kubectl", false, T2, &out, &conflicts, NULL), 0);
    assert_fields(out, "kubectl", "Apply", "{'f:spec':{'f:paused':{},'f:replicas':{}}}");
    assert_fields(out, "hpa-controller", "Update", "{'f:spec':{'f:replicas':{}}}");
    json_decref(out);
    json_decref(cfg);
    json_decref(old);
    json_decref(o);
}

/* Writes that touch one manager's fields leave every other entry as it was stored; the
 * writer's own entry keeps its fields and takes the new time when it already owned all that
 * changed, and grows when it did not. */
static void update_keeps_untouched_entries_and_refreshes_the_writers(void **state)
{
    json_t *o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},"
                  "'spec':{'replicas':1,'paused':false},'status':{'replicas':1}}");
    fl_managed_fields_update(&deploy_kind, NULL, o, "ctl", T0);
    json_t *old = json_deep_copy(o);
    json_object_set_new(json_object_get(o, "status"), "replicas", json_integer(2));
    json_object_set_new(json_object_get(o, "status"), "readyReplicas", json_integer(2));
    fl_managed_fields_update(&deploy_kind, old, o, "status-writer", T1);
    json_t *ctl_before = json_deep_copy(entry(o, "ctl", "Update"));
    assert_fields(o, "status-writer", "Update", "{'f:status':{'f:readyReplicas':{},'f:replicas':{}}}");

    /* the status writer again, on fields it owns: ctl's entry unchanged, its own re-timed */
    json_decref(old);
    old = json_deep_copy(o);
    json_object_set_new(json_object_get(o, "status"), "replicas", json_integer(3));
    fl_managed_fields_update(&deploy_kind, old, o, "status-writer", T2);
    assert_true(json_equal(entry(o, "ctl", "Update"), ctl_before));
    assert_fields(o, "status-writer", "Update", "{'f:status':{'f:readyReplicas':{},'f:replicas':{}}}");
    assert_string_equal(json_string_value(json_object_get(entry(o, "status-writer", "Update"), "time")), T2);

    /* a field it did not own: its set grows, ctl's loses it */
    json_decref(old);
    old = json_deep_copy(o);
    json_object_set_new(json_object_get(o, "spec"), "paused", json_true());
    fl_managed_fields_update(&deploy_kind, old, o, "status-writer", T2);
    assert_fields(o, "status-writer", "Update",
                  "{'f:spec':{'f:paused':{}},'f:status':{'f:readyReplicas':{},'f:replicas':{}}}");
    assert_null(jget(entry(o, "ctl", "Update"), "fieldsV1.f:spec.f:paused"));
    assert_non_null(jget(entry(o, "ctl", "Update"), "fieldsV1.f:spec.f:replicas"));
    json_decref(ctl_before);
    json_decref(old);
    json_decref(o);
}

/* An entry is stored again as it came only when it is exactly what would be written: one
 * sent in another key order, with a stray member or an empty apiVersion comes out in
 * upstream's form, and the writer's re-timed entry keeps its fields. */
static void update_normalizes_entries_it_does_not_rebuild(void **state)
{
    json_t *old = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'replicas':1}}");
    json_t *o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','managedFields':["
                  "{'fieldsV1':{'f:spec':{'f:replicas':{}}},'fieldsType':'FieldsV1','manager':'a',"
                  "'operation':'Update','apiVersion':'apps/v1','time':'" T0 "'},"
                  "{'manager':'b','operation':'Update','apiVersion':'','time':'" T0 "','fieldsType':'FieldsV1',"
                  "'fieldsV1':{'f:metadata':{'f:labels':{}}},'stray':1}]},'spec':{'replicas':2}}");
    fl_managed_fields_update(&deploy_kind, old, o, "a", T1);
    const json_t *a = entry(o, "a", "Update"), *b = entry(o, "b", "Update");
    assert_non_null(a);
    assert_non_null(b);
    static const char *const want_a[] = {"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"};
    size_t n = 0;
    for (void *it = json_object_iter((json_t *)a); it; it = json_object_iter_next((json_t *)a, it), n++) {
        assert_true(n < 6);
        assert_string_equal(json_object_iter_key(it), want_a[n]);
    }
    assert_int_equal(n, 6);
    assert_string_equal(json_string_value(json_object_get(a, "time")), T1);
    assert_non_null(jget(a, "fieldsV1.f:spec.f:replicas"));
    assert_null(json_object_get(b, "stray"));
    assert_null(json_object_get(b, "apiVersion"));
    assert_string_equal(json_string_value(json_object_get(b, "time")), T0);
    assert_non_null(jget(b, "fieldsV1.f:metadata.f:labels"));
    json_decref(old);
    json_decref(o);
}

static void update_records_changed_fields_with_map_markers(void **state)
{
    /* kubectl create: maps, lists and list elements that appear are owned as such
     * ("."); metadata and spec, present in upstream's zero object, are not */
    json_t *o = J(NGINX);
    fl_managed_fields_update(&deploy_kind, NULL, o, "kubectl-create", T0);
    assert_fields(o, "kubectl-create", "Update",
                  "{'f:metadata':{'f:labels':{'.':{},'f:app':{}}},'f:spec':{'f:replicas':{},'f:selector':{},"
                  "'f:template':{'.':{},'f:metadata':{'.':{},'f:labels':{'.':{},'f:app':{}}},'f:spec':{'.':{},"
                  "'f:containers':{'.':{},'k:{`name`:`nginx`}':{'.':{},'f:image':{},'f:name':{},'f:ports':{'.':{},"
                  "'k:{`containerPort`:80,`protocol`:`TCP`}':{'.':{},'f:containerPort':{}}}}}}}}}");
    /* removing a field drops it from every set; an unchanged write adds nothing */
    json_t *old = json_deep_copy(o);
    json_object_del(json_object_get(o, "spec"), "replicas");
    fl_managed_fields_update(&deploy_kind, old, o, "editor", T1);
    assert_null(entry(o, "editor", "Update"));
    assert_null(jget(entry(o, "kubectl-create", "Update"), "fieldsV1.f:spec.f:replicas"));
    /* a field dropped from the only manager's set leaves an empty entry: removed */
    json_t *p = J("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'},'data':{'a':'1'}}");
    fl_managed_fields_update(NULL, NULL, p, "x", T0);
    json_t *pold = json_deep_copy(p);
    json_object_del(p, "data");
    fl_managed_fields_update(NULL, pold, p, "x", T1);
    assert_null(jget(p, "metadata.managedFields"));
    json_decref(pold);
    json_decref(p);
    json_decref(old);
    json_decref(o);
}

static void assoc_list_merges_by_key_keeping_other_managers_elements(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                         "{'spec':{'containers':[{'name':'nginx','image':'nginx:1'}]}}}}",
                         "a", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                 "{'spec':{'containers':[{'name':'sidecar','image':'envoy:1'},"
                 "{'name':'nginx','env':[{'name':'X','value':'1'}]}]}}}}",
                 "b", false, T1);
    assert_json_eq(jget(o, "spec.template.spec.containers"),
                   "[{'name':'sidecar','image':'envoy:1'},"
                   "{'name':'nginx','image':'nginx:1','env':[{'name':'X','value':'1'}]}]");
    assert_fields(o, "b", "Apply",
                  "{'f:spec':{'f:template':{'f:spec':{'f:containers':{"
                  "'k:{`name`:`nginx`}':{'.':{},'f:env':{'k:{`name`:`X`}':{'.':{},'f:name':{},'f:value':{}}},"
                  "'f:name':{}},'k:{`name`:`sidecar`}':{'.':{},'f:image':{},'f:name':{}}}}}}}");
    /* a drops its container: b's env and element stay (b owns the element), a's image goes */
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                 "{'spec':{'containers':[{'name':'main','image':'app:1'}]}}}}",
                 "a", false, T2);
    assert_json_eq(jget(o, "spec.template.spec.containers"),
                   "[{'name':'sidecar','image':'envoy:1'},{'name':'nginx','env':[{'name':'X','value':'1'}]},"
                   "{'name':'main','image':'app:1'}]");
    json_decref(o);
}

static void assoc_list_element_missing_key_is_invalid(void **state)
{
    json_t *cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                    "{'spec':{'containers':[{'image':'nginx'}]}}}}");
    json_t *out = (json_t *)1, *conflicts = (json_t *)1;
    char *err = NULL;
    assert_int_equal(fl_apply(&deploy_kind, NULL, cfg, "a", false, T0, &out, &conflicts, &err), FL_EINVAL);
    assert_null(out);
    assert_null(conflicts);
    assert_non_null(err);
    assert_non_null(strstr(err, ".spec.template.spec.containers: element 0:"));
    assert_non_null(strstr(err, "omits key field \"name\""));
    free(err);
    json_decref(cfg);
    /* duplicate keys in one configuration are refused too */
    cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
            "{'spec':{'containers':[{'name':'a'},{'name':'a'}]}}}}");
    assert_int_equal(fl_apply(&deploy_kind, NULL, cfg, "a", false, T0, &out, NULL, &err), FL_EINVAL);
    assert_non_null(strstr(err, "duplicate entries for key [name=\"a\"]"));
    free(err);
    json_decref(cfg);
    /* and so is a configuration that is not this kind, or carries managedFields */
    cfg = J("{'apiVersion':'apps/v1beta1','kind':'Deployment','metadata':{'name':'web'}}");
    assert_int_equal(fl_apply(&deploy_kind, NULL, cfg, "a", false, T0, &out, NULL, &err), FL_EINVAL);
    assert_non_null(strstr(err, "apiVersion"));
    free(err);
    json_decref(cfg);
    cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','managedFields':[]}}");
    assert_int_equal(fl_apply(&deploy_kind, NULL, cfg, "a", false, T0, &out, NULL, &err), FL_EINVAL);
    assert_non_null(strstr(err, "metadata.managedFields"));
    free(err);
    json_decref(cfg);
}

static void set_merges_values(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web',"
                         "'finalizers':['a.io/x','b.io/y']}}",
                         "a", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','finalizers':['c.io/z','a.io/x']}}",
                 "b", false, T1);
    assert_json_eq(jget(o, "metadata.finalizers"), "['c.io/z','a.io/x','b.io/y']");
    assert_fields(o, "b", "Apply", "{'f:metadata':{'f:finalizers':{'v:`a.io/x`':{},'v:`c.io/z`':{}}}}");
    /* a drops b.io/y (only a had it) and a.io/x (b still wants it) */
    o = apply_ok(&deploy_kind, o, "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'}}", "a",
                 false, T2);
    assert_json_eq(jget(o, "metadata.finalizers"), "['c.io/z','a.io/x']");
    json_decref(o);
}

static void atomic_list_replaced(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                         "{'spec':{'containers':[{'name':'c','args':['--a','--b']}],'tolerations':[{'key':'x'}]}}}}",
                         "a", false, T0);
    assert_fields(o, "a", "Apply",
                  "{'f:spec':{'f:template':{'f:spec':{'f:containers':{'k:{`name`:`c`}':{'.':{},'f:args':{},"
                  "'f:name':{}}},'f:tolerations':{}}}}}");
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                 "{'spec':{'containers':[{'name':'c','args':['--c']}],'tolerations':[{'key':'y'}]}}}}",
                 "a", false, T1);
    assert_json_eq(jget(o, "spec.template.spec.containers"), "[{'name':'c','args':['--c']}]");
    assert_json_eq(jget(o, "spec.template.spec.tolerations"), "[{'key':'y'}]");
    /* another manager touching an atomic list conflicts on the whole list */
    json_t *cfg = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{'template':"
                    "{'spec':{'tolerations':[{'key':'y'},{'key':'z'}]}}}}");
    json_t *out = NULL, *conflicts = NULL;
    assert_int_equal(fl_apply(&deploy_kind, o, cfg, "b", false, T2, &out, &conflicts, NULL), FL_ECONFLICT);
    assert_json_eq(conflicts, "[{'field':'.spec.template.spec.tolerations','manager':'a'}]");
    json_decref(conflicts);
    json_decref(cfg);
    json_decref(o);
}

static void labels_and_annotations_are_maps_of_fields(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web',"
                         "'labels':{'app':'web'},'annotations':{'a.io/note':'x'}}}",
                         "a", false, T0);
    o = apply_ok(&deploy_kind, o,
                 "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web',"
                 "'labels':{'env':'prod'},'annotations':{'b.io/note':'y'}}}",
                 "b", false, T1);
    assert_json_eq(jget(o, "metadata.labels"), "{'app':'web','env':'prod'}");
    assert_json_eq(jget(o, "metadata.annotations"), "{'a.io/note':'x','b.io/note':'y'}");
    assert_fields(o, "a", "Apply", "{'f:metadata':{'f:annotations':{'f:a.io/note':{}},'f:labels':{'f:app':{}}}}");
    assert_fields(o, "b", "Apply", "{'f:metadata':{'f:annotations':{'f:b.io/note':{}},'f:labels':{'f:env':{}}}}");
    json_decref(o);
}

static void server_owned_metadata_never_tracked(void **state)
{
    json_t *cur = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','namespace':'default',"
                    "'uid':'u-1','resourceVersion':'42','generation':2,'creationTimestamp':'2024-01-01T00:00:00Z'},"
                    "'spec':{'replicas':1}}");
    json_t *o = apply_ok(&deploy_kind, cur,
                         "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','namespace':'default',"
                         "'uid':'forged','resourceVersion':'41','generation':9,'creationTimestamp':null,"
                         "'selfLink':'/x'},'spec':{'replicas':2}}",
                         "a", false, T0);
    assert_fields(o, "a", "Apply", "{'f:spec':{'f:replicas':{}}}");
    assert_string_equal(json_string_value(jget(o, "metadata.uid")), "u-1");
    assert_string_equal(json_string_value(jget(o, "metadata.resourceVersion")), "42");
    assert_int_equal(json_integer_value(jget(o, "metadata.generation")), 2);
    assert_string_equal(json_string_value(jget(o, "metadata.creationTimestamp")), "2024-01-01T00:00:00Z");
    assert_null(jget(o, "metadata.selfLink"));
    /* an update that the server makes to its own fields is not recorded either */
    json_t *old = json_deep_copy(o);
    json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string("43"));
    json_object_set_new(json_object_get(o, "metadata"), "generation", json_integer(3));
    fl_managed_fields_update(&deploy_kind, old, o, "kube-apiserver", T1);
    assert_null(entry(o, "kube-apiserver", "Update"));
    json_decref(old);
    json_decref(o);
}

static void noop_reapply_leaves_object_unchanged(void **state)
{
    json_t *o = apply_ok(&deploy_kind, NULL, NGINX, "kubectl", false, T0);
    json_t *again = apply_ok(&deploy_kind, json_incref(o), NGINX, "kubectl", false, T1);
    assert_true(json_equal(o, again)); /* same time too: nothing changed */
    json_decref(again);
    json_decref(o);
}

static void crd_list_types_from_schema(void **state)
{
    json_t *ver = J("{'name':'v1','served':true,'storage':true,'schema':{'openAPIV3Schema':{'type':'object',"
                    "'properties':{'spec':{'type':'object','properties':{"
                    "'ports':{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':"
                    "['port','protocol'],'items':{'type':'object','properties':{'port':{'type':'integer'},"
                    "'protocol':{'type':'string','default':'TCP'},'name':{'type':'string'}}}},"
                    "'tags':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'string'}},"
                    "'hosts':{'type':'array','items':{'type':'string'}},"
                    "'params':{'type':'object','additionalProperties':{'type':'object',"
                    "'properties':{'v':{'type':'string'}}}}}}}}}}");
    fl_kind crd = {.group = "example.io", .version = "v1", .kind = "Widget", .resource = "widgets",
                   .dynamic = true, .served = true, .crd_version = ver, .api_version = "example.io/v1"};
    json_t *o = apply_ok(&crd, NULL,
                         "{'apiVersion':'example.io/v1','kind':'Widget','metadata':{'name':'w'},'spec':{"
                         "'ports':[{'port':80,'name':'http'}],'tags':['a'],'hosts':['h1'],'params':{'p':{'v':'1'}}}}",
                         "a", false, T0);
    assert_fields(o, "a", "Apply",
                  "{'f:spec':{'f:hosts':{},'f:params':{'f:p':{'.':{},'f:v':{}}},'f:ports':{"
                  "'k:{`port`:80,`protocol`:`TCP`}':{'.':{},'f:name':{},'f:port':{}}},'f:tags':{'v:`a`':{}}}}");
    o = apply_ok(&crd, o,
                 "{'apiVersion':'example.io/v1','kind':'Widget','metadata':{'name':'w'},'spec':{"
                 "'ports':[{'port':443}],'tags':['b'],'hosts':['h2']}}",
                 "b", true, T1);
    assert_json_eq(jget(o, "spec.ports"), "[{'port':80,'name':'http'},{'port':443}]");
    assert_json_eq(jget(o, "spec.tags"), "['a','b']");
    assert_json_eq(jget(o, "spec.hosts"), "['h2']");
    json_decref(o);
    json_decref(ver);
}

static void default_manager_from_user_agent(void **state)
{
    struct {
        const char *ua, *want;
    } cases[] = {
        {"kubectl-client-side-apply/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl-client-side-apply"},
        {"kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd", "kubectl"},
        {"OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"},
        {"plain", "plain"},
        {"", "unknown"},
        {NULL, "unknown"},
        {"/v1", "unknown"},
        {"bad\x01name/1", "badname"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *m = fl_field_manager_default(cases[i].ua);
        assert_string_equal(m, cases[i].want);
        free(m);
    }
    char longua[300];
    memset(longua, 'x', sizeof(longua) - 1);
    longua[sizeof(longua) - 1] = '\0';
    char *m = fl_field_manager_default(longua);
    assert_int_equal(strlen(m), 128);
    free(m);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(apply_creates_with_managed_fields),
        cmocka_unit_test(reapply_with_removed_field_deletes_it),
        cmocka_unit_test(removed_field_kept_when_another_manager_owns_it),
        cmocka_unit_test(conflict_with_other_applier_reports_field_and_manager),
        cmocka_unit_test(no_conflict_when_values_equal_shared_ownership),
        cmocka_unit_test(force_takes_ownership),
        cmocka_unit_test(update_by_another_manager_moves_ownership),
        cmocka_unit_test(update_keeps_untouched_entries_and_refreshes_the_writers),
        cmocka_unit_test(update_records_changed_fields_with_map_markers),
        cmocka_unit_test(assoc_list_merges_by_key_keeping_other_managers_elements),
        cmocka_unit_test(assoc_list_element_missing_key_is_invalid),
        cmocka_unit_test(set_merges_values),
        cmocka_unit_test(atomic_list_replaced),
        cmocka_unit_test(labels_and_annotations_are_maps_of_fields),
        cmocka_unit_test(server_owned_metadata_never_tracked),
        cmocka_unit_test(noop_reapply_leaves_object_unchanged),
        cmocka_unit_test(crd_list_types_from_schema),
        cmocka_unit_test(default_manager_from_user_agent),
        cmocka_unit_test(update_normalizes_entries_it_does_not_rebuild),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
