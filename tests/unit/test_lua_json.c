/* test_lua_json.c - unit tests for the JSON <-> Lua conversion of the Lua interpreter
 * backend (src/interp/lua_json.c).
 *
 * A plain Lua state with the standard libraries stands in for a sandbox state: values
 * are pushed from JSON and read back (round trips must be exact), or built by Lua code
 * and read back (the rules for tables a script makes, and every value that cannot be
 * JSON). JSON is written with single quotes (J() swaps them for double quotes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "interp/lua.h"

static json_t *J(const char *text)
{
    char *t = fl_strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *v = json_loads(t, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s\n%s", e.position, e.text, t);
    free(t);
    return v;
}

static int open_json(lua_State *L)
{
    fl_lua_json_open(L);
    return 0;
}

static lua_State *new_state(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_pushcfunction(L, open_json);
    assert_int_equal(lua_pcall(L, 0, 0, 0), LUA_OK);
    return L;
}

struct push_args {
    const json_t *v;
    int rc;
    char *err;
};

static int do_push(lua_State *L)
{
    struct push_args *a = lua_touserdata(L, 1);
    lua_pop(L, 1);
    a->rc = fl_lua_push_json(L, a->v, &a->err);
    return a->rc ? 0 : 1;
}

/* Push v in a protected call; returns fl_lua_push_json's code (value on top if 0). */
static int push(lua_State *L, const json_t *v, char **err)
{
    struct push_args a = {v, 0, NULL};
    lua_pushcfunction(L, do_push);
    lua_pushlightuserdata(L, &a);
    assert_int_equal(lua_pcall(L, 1, a.rc ? 0 : 1, 0), LUA_OK);
    if (a.rc)
        lua_pop(L, 1);
    if (err)
        *err = a.err;
    else
        free(a.err);
    return a.rc;
}

/* JSON -> Lua -> JSON must give back exactly v. */
static void assert_round_trip(const json_t *v)
{
    lua_State *L = new_state();
    json_t *back = NULL;
    char *err = NULL;
    assert_int_equal(push(L, v, NULL), 0);
    assert_int_equal(fl_lua_to_json(L, -1, "v", &back, &err), 0);
    assert_null(err);
    if (!fl_json_same(v, back)) {
        char *a = fl_json_dumps(v, NULL), *b = fl_json_dumps(back, NULL);
        fail_msg("round trip changed\n  in:  %s\n  out: %s", a, b);
    }
    json_decref(back);
    lua_close(L);
}

/* Run Lua code (a chunk returning one value) and convert its result. */
static int from_lua(const char *code, json_t **out, char **err)
{
    lua_State *L = new_state();
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("Lua error: %s", lua_tostring(L, -1));
    int rc = fl_lua_to_json(L, -1, "v", out, err);
    lua_close(L);
    return rc;
}

/* Push JSON in, run code with it as global `v`, convert the chunk's result with flags. */
static int through_lua_flags(const char *json, const char *code, int flags, json_t **out, char **err)
{
    lua_State *L = new_state();
    json_t *in = J(json);
    assert_int_equal(push(L, in, NULL), 0);
    lua_setglobal(L, "v");
    json_decref(in);
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("Lua error: %s", lua_tostring(L, -1));
    int rc = fl_lua_to_json_flags(L, -1, "v", flags, out, err);
    lua_close(L);
    return rc;
}

/* Push JSON in, run code with it as global `v`, convert the chunk's result. */
static int through_lua(const char *json, const char *code, json_t **out, char **err)
{
    lua_State *L = new_state();
    json_t *in = J(json);
    assert_int_equal(push(L, in, NULL), 0);
    lua_setglobal(L, "v");
    json_decref(in);
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("Lua error: %s", lua_tostring(L, -1));
    int rc = fl_lua_to_json(L, -1, "v", out, err);
    lua_close(L);
    return rc;
}

static void assert_json(const json_t *got, const char *want)
{
    json_t *w = J(want);
    if (!fl_json_same(got, w)) {
        char *g = fl_json_dumps(got, NULL);
        fail_msg("got %s\nwant %s", g, want);
    }
    json_decref(w);
}

/* ---- round trips ---- */

static void test_integers_stay_integers_including_int64_extremes(void **state)
{
    (void)state;
    json_t *v = J("[0, -1, 1, 9007199254740993, 9223372036854775807, -9223372036854775808]");
    assert_round_trip(v);
    /* and they are Lua integers, not floats */
    lua_State *L = new_state();
    assert_int_equal(push(L, v, NULL), 0);
    lua_rawgeti(L, -1, 5);
    assert_true(lua_isinteger(L, -1));
    assert_true(lua_tointeger(L, -1) == INT64_MAX);
    lua_close(L);
    json_decref(v);
}

static void test_reals_stay_reals(void **state)
{
    (void)state;
    json_t *v = J("{'a': 1.5, 'b': -0.25, 'c': 1e300, 'd': 5e-324}");
    assert_round_trip(v);
    json_decref(v);
}

static void test_integral_real_comes_back_as_integer(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(through_lua("{'a': 3.0}", "return v", &out, NULL), 0);
    assert_json(out, "{'a': 3}");
    assert_true(json_is_integer(json_object_get(out, "a")));
    json_decref(out);
}

static void test_empty_object_and_array_keep_their_type(void **state)
{
    (void)state;
    json_t *v = J("{'a': {}, 'b': [], 'c': [{}, [], [[]]], 'd': {'e': {}}}");
    assert_round_trip(v);
    json_decref(v);
    json_t *top = J("[]");
    assert_round_trip(top);
    json_decref(top);
}

static void test_nulls_round_trip(void **state)
{
    (void)state;
    json_t *v = J("{'a': null, 'b': [1, null, 3, null], 'c': [null], 'd': {'e': null}, 'f': 1}");
    assert_round_trip(v);
    json_decref(v);
}

static void test_null_member_is_nil_in_lua(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(through_lua("{'status': null}", "return v.status == nil", &out, NULL), 0);
    assert_true(json_is_true(out));
    json_decref(out);
}

static void test_null_member_set_by_script_takes_new_value(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(through_lua("{'a': null, 'b': null}", "v.a = 5 return v", &out, NULL), 0);
    assert_json(out, "{'a': 5, 'b': null}");
    json_decref(out);
}

static void test_unicode_and_nul_strings(void **state)
{
    (void)state;
    json_t *v = J("['h\\u00e9llo \\u2713 \\ud83d\\ude00', 'a\\u0000b', '']");
    assert_round_trip(v);
    json_decref(v);
}

static void test_scalars_at_top_level(void **state)
{
    (void)state;
    const char *vals[] = {"true", "false", "'s'", "42", "-2.5"};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        json_t *v = J(vals[i]);
        assert_round_trip(v);
        json_decref(v);
    }
    lua_State *L = new_state();
    json_t *out = (json_t *)1;
    json_t *null = json_null();
    assert_int_equal(push(L, null, NULL), 0);
    assert_true(lua_isnil(L, -1));
    assert_int_equal(fl_lua_to_json(L, -1, "v", &out, NULL), 0);
    assert_null(out); /* nil -> NULL: the caller decides */
    json_decref(null);
    lua_close(L);
}

static void test_realistic_object_round_trips(void **state)
{
    (void)state;
    json_t *v = J("{'apiVersion': 'apps.kruise.io/v1alpha1', 'kind': 'CloneSet',"
                  " 'metadata': {'name': 'a', 'namespace': 'n', 'labels': {'app': 'a'}, 'annotations': {},"
                  "  'creationTimestamp': null, 'generation': 4},"
                  " 'spec': {'replicas': 3, 'template': {'spec': {'containers': [{'name': 'c', 'image': 'i',"
                  "  'resources': {'requests': {'cpu': '100m'}}, 'ports': []}]}}},"
                  " 'status': {'conditions': [], 'replicas': 3, 'ratio': 0.5}}");
    assert_round_trip(v);
    json_decref(v);
}

static void test_nesting_at_limit_round_trips_and_deeper_is_clean_error(void **state)
{
    (void)state;
    json_t *v = json_array(), *inner = v;
    for (int i = 1; i < FL_LUA_MAX_DEPTH; i++) {
        json_t *n = json_array();
        json_array_append_new(inner, n);
        inner = n;
    }
    assert_round_trip(v);
    json_array_append_new(inner, json_array()); /* one level too many */
    lua_State *L = new_state();
    char *err = NULL;
    int top = lua_gettop(L);
    assert_int_equal(push(L, v, &err), FL_EINVAL);
    assert_int_equal(lua_gettop(L), top);
    assert_non_null(strstr(err, "deeper than"));
    free(err);
    lua_close(L);
    json_decref(v);
}

/* ---- tables the script makes ---- */

static void test_sequence_is_array_and_string_keys_are_object_sorted(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(from_lua("return {list = {'x', 'y'}, b = 1, a = 2, c = true}", &out, NULL), 0);
    assert_json(out, "{'a': 2, 'b': 1, 'c': true, 'list': ['x', 'y']}");
    char *text = fl_json_dumps(out, NULL);
    assert_string_equal(text, "{\"a\":2,\"b\":1,\"c\":true,\"list\":[\"x\",\"y\"]}");
    free(text);
    json_decref(out);
}

static void test_unmarked_empty_table_is_left_out_as_member_and_object_elsewhere(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(from_lua("return {a = {}, b = {{}}, c = 1}", &out, NULL), 0);
    assert_json(out, "{'b': [{}], 'c': 1}");
    json_decref(out);
    assert_int_equal(from_lua("return {}", &out, NULL), 0);
    assert_json(out, "{}");
    json_decref(out);
}

/* The status Karmada's engine takes from ReflectStatus and AggregateStatus has no empty
 * tables below the top: the input's {} and [] (its FlinkDeployment's savepointHistory: [])
 * and the script's go, from objects and arrays; a table whose members all went stays as
 * {} (Kyverno's exclude: {resources: {}} comes back exclude: {}); the input's nulls are
 * not written back. The same input without the flag keeps all of them. */
static void test_drop_empty_leaves_out_every_empty_table_below_the_top(void **state)
{
    (void)state;
    const char *in = "{'savepointInfo': {'history': [], 'ts': 0}, 'exclude': {'resources': {}},"
                     " 'rules': [{}, {'a': []}, 1, []], 'gone': null, 'status': {'conditions': []}}";
    const char *code = "v.status.replicaStatuses = {}\n"
                       "v.made = {inner = {}}\n"
                       "table.insert(v.rules, {})\n"
                       "return v";
    json_t *out;
    assert_int_equal(through_lua_flags(in, code, FL_LUA_JSON_DROP_EMPTY, &out, NULL), 0);
    assert_json(out, "{'savepointInfo': {'ts': 0}, 'exclude': {}, 'rules': [{}, 1], 'status': {}, 'made': {}}");
    json_decref(out);
    assert_int_equal(through_lua(in, code, &out, NULL), 0);
    assert_json(out, "{'savepointInfo': {'history': [], 'ts': 0}, 'exclude': {'resources': {}},"
                     " 'rules': [{}, {'a': []}, 1, [], {}], 'gone': null, 'status': {'conditions': []}, 'made': {}}");
    json_decref(out);
    /* the top level, empty, is an object */
    assert_int_equal(through_lua_flags("[]", "return v", FL_LUA_JSON_DROP_EMPTY, &out, NULL), 0);
    assert_json(out, "{}");
    json_decref(out);
}

static void test_float_results_become_integers_when_integral(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(from_lua("return {half = 7 / 2, whole = 6 / 2, neg = -4 / 2, big = 2^70}", &out, NULL), 0);
    assert_true(json_is_real(json_object_get(out, "half")));
    assert_true(json_is_integer(json_object_get(out, "whole")));
    assert_int_equal(json_integer_value(json_object_get(out, "whole")), 3);
    assert_int_equal(json_integer_value(json_object_get(out, "neg")), -2);
    assert_true(json_is_real(json_object_get(out, "big"))); /* beyond int64: stays real */
    json_decref(out);
}

static void test_array_emptied_by_script_stays_array(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(through_lua("{'c': [1, 2]}", "v.c[1] = nil v.c[2] = nil return v", &out, NULL), 0);
    assert_json(out, "{'c': []}");
    json_decref(out);
}

static void test_appending_to_array_from_json(void **state)
{
    (void)state;
    json_t *out;
    assert_int_equal(through_lua("{'c': [1]}", "table.insert(v.c, 2) v.c[#v.c + 1] = 3 return v", &out, NULL), 0);
    assert_json(out, "{'c': [1, 2, 3]}");
    json_decref(out);
}

/* ---- values that cannot be JSON ---- */

static void expect_error(const char *code, const char *words)
{
    json_t *out = (json_t *)1;
    char *err = NULL;
    assert_int_equal(from_lua(code, &out, &err), FL_EINVAL);
    assert_null(out);
    assert_non_null(err);
    if (!strstr(err, words))
        fail_msg("error \"%s\" lacks \"%s\"", err, words);
    free(err);
}

static void test_function_is_rejected_with_path(void **state)
{
    (void)state;
    expect_error("return {a = {b = {print}}}", "v.a.b[0]: a function cannot be JSON");
}

static void test_userdata_is_rejected(void **state)
{
    (void)state;
    expect_error("return {f = io.stdout}", "v.f: a userdata cannot be JSON");
}

static void test_cycle_is_rejected(void **state)
{
    (void)state;
    expect_error("local t = {} t.self = t return t", "contains itself");
}

static void test_mixed_and_odd_keys_are_rejected(void **state)
{
    (void)state;
    expect_error("return {1, 2, x = 3}", "mixes string keys and integer keys");
    expect_error("return {[1.5] = 1}", "table key number 1.5");
    expect_error("return {[true] = 1}", "table key of type boolean");
    expect_error("return {[0] = 1}", "table key integer 0");
}

static void test_nan_and_inf_are_rejected(void **state)
{
    (void)state;
    expect_error("return {x = 0/0}", "v.x: nan is not a finite number");
    expect_error("return {x = 1/0}", "v.x: inf is not a finite number");
}

static void test_invalid_utf8_is_rejected(void **state)
{
    (void)state;
    expect_error("return {s = '\\xff\\xfe'}", "v.s: string is not valid UTF-8");
    expect_error("return {['\\xff'] = 1}", "key is not valid UTF-8");
}

static void test_sparse_array_is_rejected_but_small_hole_is_null(void **state)
{
    (void)state;
    expect_error("return {[1] = 1, [1000000000] = 2}", "sparse array");
    json_t *out;
    assert_int_equal(from_lua("return {1, nil, 3}", &out, NULL), 0);
    assert_json(out, "[1, null, 3]");
    json_decref(out);
}

static void test_too_deep_lua_table_is_rejected(void **state)
{
    (void)state;
    char code[128];
    snprintf(code, sizeof code, "local t = {} local c = t for i = 1, %d do c[1] = {} c = c[1] end return t",
             FL_LUA_MAX_DEPTH + 5);
    expect_error(code, "deeper than");
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers_stay_integers_including_int64_extremes),
        cmocka_unit_test(test_reals_stay_reals),
        cmocka_unit_test(test_integral_real_comes_back_as_integer),
        cmocka_unit_test(test_empty_object_and_array_keep_their_type),
        cmocka_unit_test(test_nulls_round_trip),
        cmocka_unit_test(test_null_member_is_nil_in_lua),
        cmocka_unit_test(test_null_member_set_by_script_takes_new_value),
        cmocka_unit_test(test_unicode_and_nul_strings),
        cmocka_unit_test(test_scalars_at_top_level),
        cmocka_unit_test(test_realistic_object_round_trips),
        cmocka_unit_test(test_nesting_at_limit_round_trips_and_deeper_is_clean_error),
        cmocka_unit_test(test_sequence_is_array_and_string_keys_are_object_sorted),
        cmocka_unit_test(test_unmarked_empty_table_is_left_out_as_member_and_object_elsewhere),
        cmocka_unit_test(test_drop_empty_leaves_out_every_empty_table_below_the_top),
        cmocka_unit_test(test_float_results_become_integers_when_integral),
        cmocka_unit_test(test_array_emptied_by_script_stays_array),
        cmocka_unit_test(test_appending_to_array_from_json),
        cmocka_unit_test(test_function_is_rejected_with_path),
        cmocka_unit_test(test_userdata_is_rejected),
        cmocka_unit_test(test_cycle_is_rejected),
        cmocka_unit_test(test_mixed_and_odd_keys_are_rejected),
        cmocka_unit_test(test_nan_and_inf_are_rejected),
        cmocka_unit_test(test_invalid_utf8_is_rejected),
        cmocka_unit_test(test_sparse_array_is_rejected_but_small_hole_is_null),
        cmocka_unit_test(test_too_deep_lua_table_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
