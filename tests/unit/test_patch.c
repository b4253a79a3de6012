/* test_patch.c - the three PATCH engines (src/core/patch.h).
 *
 * Merge patch: every example of RFC 7386 appendix A. JSON patch: the examples
 * of RFC 6902 appendix A plus pointer edge cases and error messages. Strategic
 * merge patch: the behaviours kubectl relies on, against a small metadata table
 * shaped like the Go struct tags of Deployment/Pod. Documents are written as
 * JSON text with single quotes for readability (converted before parsing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/json.h"
#include "core/patch.h"

/* ---- helpers ----------------------------------------------------------- */

/* Parse JSON written with ' for " (no test document needs a literal '). */
static json_t *J(const char *text)
{
    char *s = fl_strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
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
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT);
        char *w = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);
        print_error("got:  %s\nwant: %s\n", g ? g : "(null)", w ? w : "(null)");
        free(g);
        free(w);
        json_decref(want);
        fail();
    }
    json_decref(want);
}

/* Array order matters in every expected result below; object order does not. */
typedef int (*engine_fn)(const json_t *, const json_t *, json_t **, char **);

static void check_ok(engine_fn fn, const char *orig, const char *patch, const char *want)
{
    json_t *o = J(orig), *p = J(patch), *o_copy = json_deep_copy(o), *p_copy = json_deep_copy(p);
    json_t *out = (json_t *)1;
    char *err = NULL;
    int rc = fn(o, p, &out, &err);
    if (rc != 0)
        fail_msg("unexpected failure %d: %s", rc, err ? err : "(no message)");
    assert_null(err);
    assert_json_eq(out, want);
    assert_true(json_equal(o, o_copy)); /* inputs untouched */
    assert_true(json_equal(p, p_copy));
    json_decref(out);
    json_decref(o);
    json_decref(p);
    json_decref(o_copy);
    json_decref(p_copy);
}

/* Expect FL_EINVAL with a message containing each of the NULL-terminated needles. */
static void check_err(engine_fn fn, const char *orig, const char *patch, ...)
{
    json_t *o = J(orig), *p = J(patch), *o_copy = json_deep_copy(o);
    json_t *out = (json_t *)1;
    char *err = NULL;
    int rc = fn(o, p, &out, &err);
    assert_int_equal(rc, FL_EINVAL);
    assert_null(out);
    assert_non_null(err);
    va_list ap;
    va_start(ap, patch);
    for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
        if (!strstr(err, n))
            fail_msg("error \"%s\" does not mention \"%s\"", err, n);
    va_end(ap);
    assert_true(json_equal(o, o_copy)); /* original untouched on failure */
    free(err);
    json_decref(o);
    json_decref(p);
    json_decref(o_copy);
}

/* Strategic merge patch with the test metadata table. */
typedef struct meta_row {
    const char *path;
    fl_smp_meta meta;
} meta_row;

static const meta_row META[] = {
    {"metadata.finalizers", {.merge = true}},
    {"spec.strategy", {.retain_keys = true}},
    {"spec.template.spec.containers", {.merge = true, .merge_key = "name"}},
    {"spec.template.spec.containers.env", {.merge = true, .merge_key = "name"}},
    {"spec.template.spec.containers.ports", {.merge = true, .merge_key = "containerPort"}},
    {"spec.template.spec.volumes", {.merge = true, .retain_keys = true, .merge_key = "name"}},
    {"spec.template.spec.volumes.projected.sources", {.merge = false}},
};

static bool test_lookup(void *ctx, const char *path, fl_smp_meta *out)
{
    int *calls = ctx;
    if (calls)
        (*calls)++;
    for (size_t i = 0; i < sizeof(META) / sizeof(META[0]); i++)
        if (strcmp(META[i].path, path) == 0) {
            *out = META[i].meta;
            return true;
        }
    return false;
}

static int smp(const json_t *o, const json_t *p, json_t **out, char **err)
{
    return fl_patch_strategic(o, p, test_lookup, NULL, out, err);
}

/* Wrap a container list into a Deployment-shaped document. */
#define DEPLOY(containers) "{'spec':{'template':{'spec':{'containers':" containers "}}}}"

/* ---- RFC 7386 appendix A ----------------------------------------------- */

static void test_merge_replaces_member(void **st)
{
    check_ok(fl_patch_merge, "{'a':'b'}", "{'a':'c'}", "{'a':'c'}");
}

static void test_merge_adds_member(void **st)
{
    check_ok(fl_patch_merge, "{'a':'b'}", "{'b':'c'}", "{'a':'b','b':'c'}");
}

static void test_merge_null_deletes_member(void **st)
{
    check_ok(fl_patch_merge, "{'a':'b'}", "{'a':null}", "{}");
    check_ok(fl_patch_merge, "{'a':'b','b':'c'}", "{'a':null}", "{'b':'c'}");
}

static void test_merge_scalar_replaces_array(void **st)
{
    check_ok(fl_patch_merge, "{'a':['b']}", "{'a':'c'}", "{'a':'c'}");
}

static void test_merge_array_replaces_scalar(void **st)
{
    check_ok(fl_patch_merge, "{'a':'c'}", "{'a':['b']}", "{'a':['b']}");
}

static void test_merge_nested_objects_merge(void **st)
{
    check_ok(fl_patch_merge, "{'a':{'b':'c'}}", "{'a':{'b':'d','c':null}}", "{'a':{'b':'d'}}");
}

static void test_merge_arrays_replaced_not_merged(void **st)
{
    check_ok(fl_patch_merge, "{'a':[{'b':'c'}]}", "{'a':[1]}", "{'a':[1]}");
    check_ok(fl_patch_merge, "['a','b']", "['c','d']", "['c','d']");
}

static void test_merge_non_object_patch_replaces_target(void **st)
{
    check_ok(fl_patch_merge, "{'a':'b'}", "['c']", "['c']");
    check_ok(fl_patch_merge, "{'a':'foo'}", "null", "null");
    check_ok(fl_patch_merge, "{'a':'foo'}", "'bar'", "'bar'");
}

static void test_merge_keeps_null_in_target(void **st)
{
    check_ok(fl_patch_merge, "{'e':null}", "{'a':1}", "{'e':null,'a':1}");
}

static void test_merge_object_patch_on_array_target(void **st)
{
    check_ok(fl_patch_merge, "[1,2]", "{'a':'b','c':null}", "{'a':'b'}");
}

static void test_merge_nulls_dropped_from_new_subtree(void **st)
{
    check_ok(fl_patch_merge, "{}", "{'a':{'bb':{'ccc':null}}}", "{'a':{'bb':{}}}");
}

static void test_merge_rfc_section3_example(void **st)
{
    check_ok(fl_patch_merge,
             "{'title':'Goodbye!','author':{'givenName':'John','familyName':'Doe'},"
             "'tags':['example','sample'],'content':'This will be unchanged'}",
             "{'title':'Hello!','phoneNumber':'+01-123-456-7890','author':{'familyName':null},"
             "'tags':['example']}",
             "{'title':'Hello!','author':{'givenName':'John'},'tags':['example'],"
             "'content':'This will be unchanged','phoneNumber':'+01-123-456-7890'}");
}

static void test_merge_keeps_int64_exact(void **st)
{
    check_ok(fl_patch_merge, "{'a':1}", "{'a':9223372036854775807}", "{'a':9223372036854775807}");
}

/* The result keeps the target's member order (patched members where they were), the
 * patch's new members after them, and shares no container with either input (leaves may be
 * shared: they are never changed in place). */
static bool shares_node(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return false;
    if (a == b && (json_is_object(a) || json_is_array(a)))
        return true;
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) if (shares_node(v, b)) return true;
    } else if (json_is_array(a)) {
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) if (shares_node(v, b)) return true;
    }
    if (json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)b, k, v) if (v != b && shares_node(a, v)) return true;
    } else if (json_is_array(b)) {
        size_t i;
        json_t *v;
        json_array_foreach(b, i, v) if (shares_node(a, v)) return true;
    }
    return false;
}

static void test_merge_keeps_order_and_shares_no_container(void **st)
{
    (void)st;
    json_t *o = J("{'z':1,'status':{'b':[1],'a':{'x':'y'},'c':2},'m':{'k':'v'},'q':'r'}");
    json_t *p = J("{'status':{'a':{'w':[2]},'c':null,'n':{'deep':{}}},'new':['s'],'q':'t'}");
    json_t *out = NULL;
    char *err = NULL;
    assert_int_equal(fl_patch_merge(o, p, &out, &err), 0);
    size_t len = 0;
    char *text = fl_json_dumps(out, &len);
    assert_string_equal(text, "{\"z\":1,\"status\":{\"b\":[1],\"a\":{\"x\":\"y\",\"w\":[2]},\"n\":{\"deep\":{}}},"
                              "\"m\":{\"k\":\"v\"},\"q\":\"t\",\"new\":[\"s\"]}");
    free(text);
    assert_false(shares_node(out, o));
    assert_false(shares_node(out, p));
    json_decref(out);
    json_decref(o);
    json_decref(p);
}

/* ---- RFC 6902 appendix A ----------------------------------------------- */

static void test_json_add_object_member(void **st)
{
    check_ok(fl_patch_json, "{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux'}]",
             "{'baz':'qux','foo':'bar'}");
}

static void test_json_add_array_element(void **st)
{
    check_ok(fl_patch_json, "{'foo':['bar','baz']}", "[{'op':'add','path':'/foo/1','value':'qux'}]",
             "{'foo':['bar','qux','baz']}");
}

static void test_json_remove_object_member(void **st)
{
    check_ok(fl_patch_json, "{'baz':'qux','foo':'bar'}", "[{'op':'remove','path':'/baz'}]",
             "{'foo':'bar'}");
}

static void test_json_remove_array_element(void **st)
{
    check_ok(fl_patch_json, "{'foo':['bar','qux','baz']}", "[{'op':'remove','path':'/foo/1'}]",
             "{'foo':['bar','baz']}");
}

static void test_json_replace_value(void **st)
{
    check_ok(fl_patch_json, "{'baz':'qux','foo':'bar'}",
             "[{'op':'replace','path':'/baz','value':'boo'}]", "{'baz':'boo','foo':'bar'}");
}

static void test_json_move_value(void **st)
{
    check_ok(fl_patch_json, "{'foo':{'bar':'baz','waldo':'fred'},'qux':{'corge':'grault'}}",
             "[{'op':'move','from':'/foo/waldo','path':'/qux/thud'}]",
             "{'foo':{'bar':'baz'},'qux':{'corge':'grault','thud':'fred'}}");
}

static void test_json_move_array_element(void **st)
{
    check_ok(fl_patch_json, "{'foo':['all','grass','cows','eat']}",
             "[{'op':'move','from':'/foo/1','path':'/foo/3'}]",
             "{'foo':['all','cows','eat','grass']}");
}

static void test_json_test_success(void **st)
{
    check_ok(fl_patch_json, "{'baz':'qux','foo':['a',2,'c']}",
             "[{'op':'test','path':'/baz','value':'qux'},{'op':'test','path':'/foo/1','value':2}]",
             "{'baz':'qux','foo':['a',2,'c']}");
}

static void test_json_test_failure(void **st)
{
    check_err(fl_patch_json, "{'baz':'qux'}", "[{'op':'test','path':'/baz','value':'bar'}]",
              "op 0 (test)", "/baz", NULL);
}

static void test_json_add_nested_member_object(void **st)
{
    check_ok(fl_patch_json, "{'foo':'bar'}",
             "[{'op':'add','path':'/child','value':{'grandchild':{}}}]",
             "{'foo':'bar','child':{'grandchild':{}}}");
}

static void test_json_ignores_unrecognized_members(void **st)
{
    check_ok(fl_patch_json, "{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux','xyz':123}]",
             "{'foo':'bar','baz':'qux'}");
}

static void test_json_add_to_nonexistent_target_fails(void **st)
{
    check_err(fl_patch_json, "{'foo':'bar'}", "[{'op':'add','path':'/baz/bat','value':'qux'}]",
              "op 0 (add)", "/baz/bat", "parent not found", NULL);
}

static void test_json_pointer_escape_order(void **st)
{
    /* ~01 is "~1" (not "/"): ~0 is decoded after the token is split. */
    check_ok(fl_patch_json, "{'/':9,'~1':10}", "[{'op':'test','path':'/~01','value':10}]",
             "{'/':9,'~1':10}");
    check_ok(fl_patch_json, "{'/':9,'~1':10}", "[{'op':'replace','path':'/~1','value':1}]",
             "{'/':1,'~1':10}");
}

static void test_json_test_string_is_not_number(void **st)
{
    check_err(fl_patch_json, "{'/':9,'~1':10}", "[{'op':'test','path':'/~01','value':'10'}]",
              "op 0 (test)", "differs", NULL);
}

static void test_json_add_array_value(void **st)
{
    check_ok(fl_patch_json, "{'foo':['bar']}", "[{'op':'add','path':'/foo/-','value':['abc','def']}]",
             "{'foo':['bar',['abc','def']]}");
}

/* ---- RFC 6902 beyond the appendix -------------------------------------- */

static void test_json_error_names_op_index_and_path(void **st)
{
    json_t *o = J("{'spec':{'replicas':1}}");
    json_t *p = J("[{'op':'test','path':'/spec/replicas','value':1},"
                  "{'op':'replace','path':'/spec/foo','value':2}]");
    json_t *out = NULL;
    char *err = NULL;
    assert_int_equal(fl_patch_json(o, p, &out, &err), FL_EINVAL);
    assert_string_equal(err, "op 1 (replace): path /spec/foo not found");
    free(err);
    json_decref(o);
    json_decref(p);
}

static void test_json_failure_leaves_original_untouched(void **st)
{
    /* The first op succeeds on the working copy; the second fails. */
    check_err(fl_patch_json, "{'a':1}",
              "[{'op':'add','path':'/b','value':2},{'op':'remove','path':'/zzz'}]", "op 1 (remove)",
              "/zzz", NULL);
}

static void test_json_array_index_bounds(void **st)
{
    check_ok(fl_patch_json, "{'a':[1,2]}", "[{'op':'add','path':'/a/2','value':3}]", "{'a':[1,2,3]}");
    check_err(fl_patch_json, "{'a':[1,2]}", "[{'op':'add','path':'/a/3','value':3}]",
              "out of bounds", NULL);
    check_err(fl_patch_json, "{'a':[1,2]}", "[{'op':'replace','path':'/a/2','value':3}]",
              "not found", NULL);
    check_err(fl_patch_json, "{'a':[1,2]}", "[{'op':'remove','path':'/a/-'}]", "not found", NULL);
    check_err(fl_patch_json, "{'a':[1,2]}",
              "[{'op':'add','path':'/a/99999999999999999999999','value':3}]", "out of bounds", NULL);
}

static void test_json_array_index_must_be_canonical(void **st)
{
    check_err(fl_patch_json, "{'a':[1,2]}", "[{'op':'add','path':'/a/01','value':3}]",
              "not a number", NULL);
    check_err(fl_patch_json, "{'a':[1,2]}", "[{'op':'add','path':'/a/-1','value':3}]",
              "not a number", NULL);
}

static void test_json_dash_appends(void **st)
{
    check_ok(fl_patch_json, "{'a':[]}",
             "[{'op':'add','path':'/a/-','value':1},{'op':'add','path':'/a/-','value':2}]",
             "{'a':[1,2]}");
}

static void test_json_copy_value(void **st)
{
    check_ok(fl_patch_json, "{'a':{'x':[1]},'b':{}}", "[{'op':'copy','from':'/a/x','path':'/b/y'}]",
             "{'a':{'x':[1]},'b':{'y':[1]}}");
}

static void test_json_move_into_own_child_fails(void **st)
{
    check_err(fl_patch_json, "{'a':{'b':{}}}", "[{'op':'move','from':'/a','path':'/a/b/c'}]",
              "op 0 (move)", "children", NULL);
}

static void test_json_move_to_same_place_is_noop(void **st)
{
    check_ok(fl_patch_json, "{'a':1}", "[{'op':'move','from':'/a','path':'/a'}]", "{'a':1}");
}

static void test_json_whole_document_pointer(void **st)
{
    check_ok(fl_patch_json, "{'a':1}", "[{'op':'replace','path':'','value':{'b':2}}]", "{'b':2}");
    check_ok(fl_patch_json, "{'a':1}", "[{'op':'test','path':'','value':{'a':1}}]", "{'a':1}");
    check_err(fl_patch_json, "{'a':1}", "[{'op':'remove','path':''}]", "whole document", NULL);
}

static void test_json_test_compares_numbers_by_value(void **st)
{
    check_ok(fl_patch_json, "{'a':1,'b':{'x':[1,{'y':null}]}}",
             "[{'op':'test','path':'/a','value':1.0},"
             "{'op':'test','path':'/b','value':{'x':[1,{'y':null}]}}]",
             "{'a':1,'b':{'x':[1,{'y':null}]}}");
    check_err(fl_patch_json, "{'a':[1,2]}", "[{'op':'test','path':'/a','value':[2,1]}]", "differs",
              NULL);
}

static void test_json_keeps_int64_exact(void **st)
{
    json_t *o = J("{'n':9007199254740993}");
    json_t *p = J("[{'op':'add','path':'/m','value':-9223372036854775807},"
                  "{'op':'copy','from':'/n','path':'/k'}]");
    json_t *out = NULL;
    assert_int_equal(fl_patch_json(o, p, &out, NULL), 0);
    assert_true(json_integer_value(json_object_get(out, "k")) == 9007199254740993LL);
    assert_true(json_integer_value(json_object_get(out, "m")) == -9223372036854775807LL);
    json_decref(out);
    json_decref(o);
    json_decref(p);
}

static void test_json_malformed_operations_rejected(void **st)
{
    check_err(fl_patch_json, "{}", "{'op':'add'}", "array", NULL);
    check_err(fl_patch_json, "{}", "[1]", "op 0", "object", NULL);
    check_err(fl_patch_json, "{}", "[{'path':'/a'}]", "op 0", "\"op\"", NULL);
    check_err(fl_patch_json, "{}", "[{'op':'frobnicate','path':'/a'}]", "op 0 (frobnicate)",
              "unknown", NULL);
    check_err(fl_patch_json, "{}", "[{'op':'add','value':1}]", "\"path\"", NULL);
    check_err(fl_patch_json, "{}", "[{'op':'add','path':'/a'}]", "\"value\"", NULL);
    check_err(fl_patch_json, "{}", "[{'op':'copy','path':'/a'}]", "\"from\"", NULL);
    check_err(fl_patch_json, "{}", "[{'op':'add','path':'a','value':1}]", "invalid path", NULL);
    check_err(fl_patch_json, "{}", "[{'op':'add','path':'/a~2','value':1}]", "'~'", NULL);
}

static void test_json_add_null_value(void **st)
{
    check_ok(fl_patch_json, "{}", "[{'op':'add','path':'/a','value':null}]", "{'a':null}");
}

/* ---- strategic merge patch --------------------------------------------- */

static void test_smp_containers_merged_by_name(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'web','image':'nginx:1','ports':[{'containerPort':80}]},"
                         "{'name':'log','image':'fluent:1'}]"),
             DEPLOY("[{'name':'web','image':'nginx:2'}]"),
             DEPLOY("[{'name':'web','image':'nginx:2','ports':[{'containerPort':80}]},"
                    "{'name':'log','image':'fluent:1'}]"));
}

static void test_smp_new_container_goes_before_server_only_ones(void **st)
{
    /* Upstream ordering, as the kubectl patch docs show: without
     * $setElementOrder a new element is placed ahead of the server-only
     * elements that follow the patch's elements. */
    check_ok(smp, DEPLOY("[{'name':'web','image':'nginx'}]"),
             DEPLOY("[{'name':'sidecar','image':'redis'}]"),
             DEPLOY("[{'name':'sidecar','image':'redis'},{'name':'web','image':'nginx'}]"));
}

static void test_smp_env_merged_by_name(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'app','env':[{'name':'A','value':'1'},{'name':'B','value':'2'}]}]"),
             DEPLOY("[{'name':'app','env':[{'name':'B','value':'3'},{'name':'C','value':'4'}]}]"),
             DEPLOY("[{'name':'app','env':[{'name':'A','value':'1'},{'name':'B','value':'3'},"
                    "{'name':'C','value':'4'}]}]"));
}

static void test_smp_container_deleted_with_patch_delete(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'web','image':'nginx'},{'name':'log','image':'fluent'}]"),
             DEPLOY("[{'$patch':'delete','name':'log'}]"),
             DEPLOY("[{'name':'web','image':'nginx'}]"));
}

static void test_smp_list_replaced_with_patch_replace(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'web','image':'nginx'},{'name':'log','image':'fluent'}]"),
             DEPLOY("[{'name':'new','image':'busybox'},{'$patch':'replace'}]"),
             DEPLOY("[{'name':'new','image':'busybox'}]"));
}

static void test_smp_set_element_order_reorders(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'a','image':'1'},{'name':'b','image':'1'},{'name':'c','image':'1'}]"),
             "{'spec':{'template':{'spec':{"
             "'$setElementOrder/containers':[{'name':'c'},{'name':'a'},{'name':'b'}],"
             "'containers':[{'name':'a','image':'2'}]}}}}",
             DEPLOY("[{'name':'c','image':'1'},{'name':'a','image':'2'},{'name':'b','image':'1'}]"));
}

static void test_smp_set_element_order_places_new_element(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'a'},{'name':'b'}]"),
             "{'spec':{'template':{'spec':{"
             "'$setElementOrder/containers':[{'name':'a'},{'name':'b'},{'name':'c'}],"
             "'containers':[{'name':'c'}]}}}}",
             DEPLOY("[{'name':'a'},{'name':'b'},{'name':'c'}]"));
}

static void test_smp_set_element_order_on_primitive_list(void **st)
{
    check_ok(smp, "{'metadata':{'finalizers':['x','y','z']}}",
             "{'metadata':{'$setElementOrder/finalizers':['z','x','y']}}",
             "{'metadata':{'finalizers':['z','x','y']}}");
}

static void test_smp_set_element_order_mismatch_fails(void **st)
{
    check_err(smp, DEPLOY("[{'name':'a'},{'name':'b'}]"),
              "{'spec':{'template':{'spec':{"
              "'$setElementOrder/containers':[{'name':'a'},{'name':'b'}],"
              "'containers':[{'name':'b'},{'name':'a'}]}}}}",
              "spec.template.spec.containers", "$setElementOrder", NULL);
}

static void test_smp_delete_from_primitive_list_on_finalizers(void **st)
{
    check_ok(smp, "{'metadata':{'name':'x','finalizers':['a/one','b/two','c/three']}}",
             "{'metadata':{'$deleteFromPrimitiveList/finalizers':['b/two','not/there']}}",
             "{'metadata':{'name':'x','finalizers':['a/one','c/three']}}");
}

static void test_smp_primitive_merge_list_is_ordered_set(void **st)
{
    check_ok(smp, "{'metadata':{'finalizers':['x','y']}}", "{'metadata':{'finalizers':['y','w']}}",
             "{'metadata':{'finalizers':['x','y','w']}}");
}

static void test_smp_retain_keys_drops_unlisted(void **st)
{
    check_ok(smp,
             "{'spec':{'strategy':{'type':'RollingUpdate','rollingUpdate':{'maxSurge':1}}}}",
             "{'spec':{'strategy':{'$retainKeys':['type'],'type':'Recreate'}}}",
             "{'spec':{'strategy':{'type':'Recreate'}}}");
}

static void test_smp_retain_keys_in_merged_list_element(void **st)
{
    check_ok(smp,
             "{'spec':{'template':{'spec':{'volumes':[{'name':'v','emptyDir':{}}]}}}}",
             "{'spec':{'template':{'spec':{'volumes':[{'name':'v','$retainKeys':['name','hostPath'],"
             "'hostPath':{'path':'/data'}}]}}}}",
             "{'spec':{'template':{'spec':{'volumes':[{'name':'v','hostPath':{'path':'/data'}}]}}}}");
}

static void test_smp_retain_keys_must_cover_patch_fields(void **st)
{
    check_err(smp, "{'spec':{'strategy':{'type':'RollingUpdate'}}}",
              "{'spec':{'strategy':{'$retainKeys':['type'],'rollingUpdate':{'maxSurge':1}}}}",
              "spec.strategy", "rollingUpdate", "$retainKeys", NULL);
}

static void test_smp_null_deletes_key(void **st)
{
    check_ok(smp, "{'metadata':{'labels':{'a':'1','b':'2'}},'spec':{'replicas':3}}",
             "{'metadata':{'labels':{'a':null}},'spec':null}", "{'metadata':{'labels':{'b':'2'}}}");
}

static void test_smp_maps_merge_recursively(void **st)
{
    check_ok(smp, "{'metadata':{'labels':{'a':'1'},'name':'x'},'spec':{'replicas':1}}",
             "{'metadata':{'labels':{'b':'2'}},'spec':{'paused':true}}",
             "{'metadata':{'labels':{'a':'1','b':'2'},'name':'x'},'spec':{'replicas':1,'paused':true}}");
}

static void test_smp_lists_without_metadata_replaced(void **st)
{
    check_ok(smp, DEPLOY("[{'name':'web','args':['a','b'],'tolerations':[1]}]"),
             DEPLOY("[{'name':'web','args':['c']}]"),
             DEPLOY("[{'name':'web','args':['c'],'tolerations':[1]}]"));
    check_ok(smp, "{'spec':{'tolerations':[{'key':'a'},{'key':'b'}]}}",
             "{'spec':{'tolerations':[{'key':'c'}]}}", "{'spec':{'tolerations':[{'key':'c'}]}}");
}

static void test_smp_patch_replace_in_map_replaces_map(void **st)
{
    check_ok(smp, "{'metadata':{'labels':{'a':'1','b':'2'}}}",
             "{'metadata':{'labels':{'$patch':'replace','c':'3'}}}",
             "{'metadata':{'labels':{'c':'3'}}}");
}

static void test_smp_patch_delete_in_map_deletes_it(void **st)
{
    check_ok(smp, "{'metadata':{'name':'x','labels':{'a':'1'}}}",
             "{'metadata':{'labels':{'$patch':'delete'}}}", "{'metadata':{'name':'x'}}");
}

static void test_smp_patch_merge_is_default(void **st)
{
    check_ok(smp, "{'metadata':{'labels':{'a':'1'}}}",
             "{'metadata':{'labels':{'$patch':'merge','b':'2'}}}",
             "{'metadata':{'labels':{'a':'1','b':'2'}}}");
}

static void test_smp_directives_in_new_values_are_applied(void **st)
{
    /* No original to merge into: directives and nulls must not be stored. */
    check_ok(smp, "{'metadata':{}}",
             "{'metadata':{'labels':{'$patch':'replace','a':'1','b':null},"
             "'annotations':{'$patch':'delete'}}}",
             "{'metadata':{'labels':{'a':'1'}}}");
    check_ok(smp, "{'spec':{}}",
             "{'spec':{'template':{'spec':{'containers':[{'name':'a'},{'$patch':'delete','name':'b'}]}}}}",
             DEPLOY("[{'name':'a'}]"));
}

static void test_smp_type_change_replaces_value(void **st)
{
    check_ok(smp, "{'a':{'b':1},'c':[1],'d':'x'}", "{'a':'s','c':{'k':null,'v':2},'d':[1]}",
             "{'a':'s','c':{'v':2},'d':[1]}");
}

static void test_smp_unknown_directive_fails(void **st)
{
    check_err(smp, "{'metadata':{}}", "{'metadata':{'labels':{'$frob':'x'}}}", "metadata.labels",
              "$frob", NULL);
    check_err(smp, "{}", "{'metadata':{'$patch':'explode'}}", "metadata", "$patch", NULL);
}

static void test_smp_missing_merge_key_fails(void **st)
{
    check_err(smp, DEPLOY("[{'name':'web'}]"), DEPLOY("[{'image':'nginx'}]"),
              "spec.template.spec.containers[0]", "merge key \"name\"", NULL);
    check_err(smp, DEPLOY("[{'name':'web'}]"), DEPLOY("[{'$patch':'delete'}]"),
              "spec.template.spec.containers", "merge key", NULL);
}

static void test_smp_mixed_list_element_types_fail(void **st)
{
    check_err(smp, "{'metadata':{'finalizers':['a']}}", "{'metadata':{'finalizers':[1]}}",
              "metadata.finalizers", "type", NULL);
    check_err(smp, "{'metadata':{'finalizers':['a']}}", "{'metadata':{'finalizers':[['b']]}}",
              "metadata.finalizers", "lists of lists", NULL);
}

static void test_smp_patch_merge_in_list_fails(void **st)
{
    check_err(smp, DEPLOY("[{'name':'web'}]"), DEPLOY("[{'$patch':'merge','name':'web'}]"),
              "spec.template.spec.containers", "merge", NULL);
}

static void test_smp_top_level_patch_delete_leaves_empty_object(void **st)
{
    check_ok(smp, "{'a':1}", "{'$patch':'delete'}", "{}");
}

static void test_smp_rejects_non_object_documents(void **st)
{
    check_err(smp, "[]", "{}", "JSON objects", NULL);
    check_err(smp, "{}", "[]", "JSON objects", NULL);
}

static void test_smp_lookup_sees_elided_paths(void **st)
{
    /* Every field merged into an existing list-of-objects element must be
     * looked up under the list's path, without indexes. */
    int calls = 0;
    json_t *o = J(DEPLOY("[{'name':'app','env':[{'name':'A'}]}]"));
    json_t *p = J(DEPLOY("[{'name':'app','env':[{'name':'B'}]}]"));
    json_t *out = NULL;
    assert_int_equal(fl_patch_strategic(o, p, test_lookup, &calls, &out, NULL), 0);
    assert_true(calls > 0);
    assert_json_eq(out, DEPLOY("[{'name':'app','env':[{'name':'B'},{'name':'A'}]}]"));
    json_decref(out);
    json_decref(o);
    json_decref(p);
}

static void test_smp_without_lookup_merges_maps_and_replaces_lists(void **st)
{
    json_t *o = J("{'a':{'x':1},'l':[1,2]}"), *p = J("{'a':{'y':2},'l':[3]}");
    json_t *out = NULL;
    assert_int_equal(fl_patch_strategic(o, p, NULL, NULL, &out, NULL), 0);
    assert_json_eq(out, "{'a':{'x':1,'y':2},'l':[3]}");
    json_decref(out);
    json_decref(o);
    json_decref(p);
}

static void test_smp_large_lists_merge_in_linear_time(void **st)
{
    /* 20,000 finalizers and 20,000 env vars against patches of the same size:
     * quadratic matching would take minutes; hashing takes well under a second. */
    enum { N = 20000 };
    json_t *fin = json_array(), *pfin = json_array(), *env = json_array(), *penv = json_array();
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d", i);
        json_array_append_new(fin, json_string(name));
        snprintf(name, sizeof(name), "f%d", i + N / 2);
        json_array_append_new(pfin, json_string(name));
        json_array_append_new(env, json_pack("{s:s+,s:i}", "name", "E", name, "value", i));
        json_array_append_new(penv, json_pack("{s:s+,s:i}", "name", "E", name, "value", -i));
    }
    json_t *o = json_pack("{s:{s:o},s:{s:{s:{s:[{s:s,s:o}]}}}}", "metadata", "finalizers", fin,
                          "spec", "template", "spec", "containers", "name", "c", "env", env);
    json_t *p = json_pack("{s:{s:o},s:{s:{s:{s:[{s:s,s:o}]}}}}", "metadata", "finalizers", pfin,
                          "spec", "template", "spec", "containers", "name", "c", "env", penv);
    json_t *out = NULL;
    assert_int_equal(smp(o, p, &out, NULL), 0);
    json_t *rf = json_object_get(json_object_get(out, "metadata"), "finalizers");
    assert_int_equal(json_array_size(rf), N + N / 2);
    assert_string_equal(json_string_value(json_array_get(rf, 0)), "f0");
    assert_string_equal(json_string_value(json_array_get(rf, N + N / 2 - 1)), "f29999");
    json_decref(out);
    json_decref(o);
    json_decref(p);
}

/* Copies doubling a subtree stop at the bound, before the copy that would pass it, and the
 * operation that would is named; within the bound the patch applies as without one. */
static void test_json_patch_copies_stop_at_the_bound(void **state)
{
    (void)state;
    json_t *orig = json_pack("{s:{s:s}}", "x", "a", "0123456789012345678901234567890123456789");
    json_t *patch = json_array();
    for (int i = 0; i < 40; i++) {
        char path[32];
        snprintf(path, sizeof path, "/x/n%d", i);
        json_array_append_new(patch, json_pack("{s:s, s:s, s:s}", "op", "copy", "from", "/x", "path", path));
    }
    json_t *out = (json_t *)0x1;
    char *err = NULL;
    assert_int_equal(fl_patch_json_limited(orig, patch, 100000, &out, &err), FL_ETOOBIG);
    assert_null(out);
    assert_non_null(err);
    if (!strstr(err, "(copy): from /x: the copies make the document larger than 100000 bytes"))
        fail_msg("unexpected error: %s", err);
    free(err);
    /* five doublings of ~50 bytes are well within it */
    json_t *five = json_array();
    for (size_t i = 0; i < 5; i++)
        json_array_append(five, json_array_get(patch, i));
    assert_int_equal(fl_patch_json_limited(orig, five, 100000, &out, &err), 0);
    json_t *plain = NULL;
    assert_int_equal(fl_patch_json(orig, five, &plain, NULL), 0);
    assert_true(json_equal(out, plain));
    json_decref(out);
    json_decref(plain);
    json_decref(five);
    json_decref(patch);
    json_decref(orig);
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_replaces_member),
        cmocka_unit_test(test_merge_adds_member),
        cmocka_unit_test(test_merge_null_deletes_member),
        cmocka_unit_test(test_merge_scalar_replaces_array),
        cmocka_unit_test(test_merge_array_replaces_scalar),
        cmocka_unit_test(test_merge_nested_objects_merge),
        cmocka_unit_test(test_merge_arrays_replaced_not_merged),
        cmocka_unit_test(test_merge_non_object_patch_replaces_target),
        cmocka_unit_test(test_merge_keeps_null_in_target),
        cmocka_unit_test(test_merge_object_patch_on_array_target),
        cmocka_unit_test(test_merge_nulls_dropped_from_new_subtree),
        cmocka_unit_test(test_merge_rfc_section3_example),
        cmocka_unit_test(test_merge_keeps_int64_exact),
        cmocka_unit_test(test_merge_keeps_order_and_shares_no_container),
        cmocka_unit_test(test_json_add_object_member),
        cmocka_unit_test(test_json_add_array_element),
        cmocka_unit_test(test_json_remove_object_member),
        cmocka_unit_test(test_json_remove_array_element),
        cmocka_unit_test(test_json_replace_value),
        cmocka_unit_test(test_json_move_value),
        cmocka_unit_test(test_json_move_array_element),
        cmocka_unit_test(test_json_test_success),
        cmocka_unit_test(test_json_test_failure),
        cmocka_unit_test(test_json_add_nested_member_object),
        cmocka_unit_test(test_json_ignores_unrecognized_members),
        cmocka_unit_test(test_json_add_to_nonexistent_target_fails),
        cmocka_unit_test(test_json_pointer_escape_order),
        cmocka_unit_test(test_json_test_string_is_not_number),
        cmocka_unit_test(test_json_add_array_value),
        cmocka_unit_test(test_json_error_names_op_index_and_path),
        cmocka_unit_test(test_json_failure_leaves_original_untouched),
        cmocka_unit_test(test_json_array_index_bounds),
        cmocka_unit_test(test_json_array_index_must_be_canonical),
        cmocka_unit_test(test_json_dash_appends),
        cmocka_unit_test(test_json_copy_value),
        cmocka_unit_test(test_json_move_into_own_child_fails),
        cmocka_unit_test(test_json_move_to_same_place_is_noop),
        cmocka_unit_test(test_json_whole_document_pointer),
        cmocka_unit_test(test_json_test_compares_numbers_by_value),
        cmocka_unit_test(test_json_keeps_int64_exact),
        cmocka_unit_test(test_json_malformed_operations_rejected),
        cmocka_unit_test(test_json_add_null_value),
        cmocka_unit_test(test_smp_containers_merged_by_name),
        cmocka_unit_test(test_smp_new_container_goes_before_server_only_ones),
        cmocka_unit_test(test_smp_env_merged_by_name),
        cmocka_unit_test(test_smp_container_deleted_with_patch_delete),
        cmocka_unit_test(test_smp_list_replaced_with_patch_replace),
        cmocka_unit_test(test_smp_set_element_order_reorders),
        cmocka_unit_test(test_smp_set_element_order_places_new_element),
        cmocka_unit_test(test_smp_set_element_order_on_primitive_list),
        cmocka_unit_test(test_smp_set_element_order_mismatch_fails),
        cmocka_unit_test(test_smp_delete_from_primitive_list_on_finalizers),
        cmocka_unit_test(test_smp_primitive_merge_list_is_ordered_set),
        cmocka_unit_test(test_smp_retain_keys_drops_unlisted),
        cmocka_unit_test(test_smp_retain_keys_in_merged_list_element),
        cmocka_unit_test(test_smp_retain_keys_must_cover_patch_fields),
        cmocka_unit_test(test_smp_null_deletes_key),
        cmocka_unit_test(test_smp_maps_merge_recursively),
        cmocka_unit_test(test_smp_lists_without_metadata_replaced),
        cmocka_unit_test(test_smp_patch_replace_in_map_replaces_map),
        cmocka_unit_test(test_smp_patch_delete_in_map_deletes_it),
        cmocka_unit_test(test_smp_patch_merge_is_default),
        cmocka_unit_test(test_smp_directives_in_new_values_are_applied),
        cmocka_unit_test(test_smp_type_change_replaces_value),
        cmocka_unit_test(test_smp_unknown_directive_fails),
        cmocka_unit_test(test_smp_missing_merge_key_fails),
        cmocka_unit_test(test_smp_mixed_list_element_types_fail),
        cmocka_unit_test(test_smp_patch_merge_in_list_fails),
        cmocka_unit_test(test_smp_top_level_patch_delete_leaves_empty_object),
        cmocka_unit_test(test_smp_rejects_non_object_documents),
        cmocka_unit_test(test_smp_lookup_sees_elided_paths),
        cmocka_unit_test(test_smp_without_lookup_merges_maps_and_replaces_lists),
        cmocka_unit_test(test_smp_large_lists_merge_in_linear_time),
        cmocka_unit_test(test_json_patch_copies_stop_at_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
