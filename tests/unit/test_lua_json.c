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


/* ---- lazy tables (fl_lua_push_json_lazy) give the same answers ---- */

struct lazy_args {
    const json_t *v;
    bool lazy;
};

static int do_push_either(lua_State *L)
{
    struct lazy_args *a = lua_touserdata(L, 1);
    lua_pop(L, 1);
    char *err = NULL;
    int rc = a->lazy ? fl_lua_push_json_lazy(L, a->v, &err) : fl_lua_push_json(L, a->v, &err);
    assert_int_equal(rc, 0);
    return 1;
}

/* A state with `v` pushed eagerly or lazily (the input must outlive the call), `next` as
 * the sandbox has it. */
static lua_State *state_with(const json_t *in, bool lazy)
{
    lua_State *L = new_state();
    lua_pushcfunction(L, fl_lua_json_next);
    lua_setglobal(L, "next");
    struct lazy_args a = {in, lazy};
    lua_pushcfunction(L, do_push_either);
    lua_pushlightuserdata(L, &a);
    assert_int_equal(lua_pcall(L, 1, 1, 0), LUA_OK);
    lua_setglobal(L, "v");
    return L;
}

/* Run code on `v` pushed one way; the answer as text: the JSON (keys sorted, so bytes
 * compare), or "error: ..." from Lua or from the conversion back. */
static char *answer(const json_t *in, bool lazy, const char *code, int flags)
{
    lua_State *L = state_with(in, lazy);
    char *text;
    if (luaL_dostring(L, code) != LUA_OK) {
        text = fl_asprintf("error: %s", lua_tostring(L, -1));
    } else {
        json_t *out = NULL;
        char *err = NULL;
        if (fl_lua_to_json_flags(L, -1, "v", flags, &out, &err))
            text = fl_asprintf("error: %s", err);
        else
            text = out ? fl_json_dumps(out, NULL) : fl_strdup("nil");
        free(err);
        json_decref(out);
    }
    fl_lua_json_end_call(L);
    lua_close(L);
    return text;
}

static const char *const lazy_doc =
    "{'apiVersion': 'v1', 'kind': 'K', 'metadata': {'name': 'a', 'labels': {'app': 'x'}, 'annotations': {}},"
    " 'spec': {'replicas': 3, 'ratio': 2.0, 'half': 0.5, 'suspend': false,"
    "  'template': {'spec': {'containers': [{'name': 'c', 'ports': []}]}}, 'list': ['b', 'a'], 'empty': {}},"
    " 'status': {'conditions': [], 'ready': true, 'x': null, 'observedGeneration': 2},"
    " 'list': ['b', 'c', 'a'], 'items': [{'name': 'i1', 'n': 1}, {'name': 'i2', 'n': 2}, {'name': 'i3'}],"
    " 'empty': {}, 'emptyarr': [], 'nulls': {'a': 1, 'b': null, 'c': null}, 'holes': [1, null, 3, null],"
    " 'onlynull': {'z': null}, 'nullarr': [null, null], 'real': 2.0, 'flag': false, 'u': 'h\\u00e9'}";

static const char *const lazy_scripts[] = {
    "return v",
    "return v.spec",
    "return v.metadata.labels",
    "v.spec.replicas = 5 return v",
    "v.status = nil return v",
    "local s = v.status v.status = nil return {gone = v.status == nil, s = s, r = v.spec.replicas}",
    "v.spec.replicas = nil return {r = v.spec.replicas == nil, s = v.spec}",
    "local r = v.spec.replicas v.spec.replicas = nil return {r, v.spec.replicas, v.spec.ratio}",
    "local t = v.spec.template v.spec.template = nil return {t = t, s = v.spec, again = v.spec.template}",
    "v.spec.template = {x = 1} return {v.spec.template, v.spec.replicas}",
    "local _ = v.spec.template v.spec.template = {y = 2} v.spec.list = nil return v",
    "local _ = v.spec.replicas v.spec.replicas = 9 v.spec.half = nil return v",
    "v.metadata.labels.x = 'y' return v",
    "v.metadata.labels = nil v.metadata.name = 'b' return v",
    "local keys = {} for k in pairs(v.metadata) do keys[#keys + 1] = k end table.sort(keys) return keys",
    "local n = 0 for k, x in pairs(v) do n = n + 1 end return n",
    "local n = 0 for k, x in pairs(v.spec) do n = n + 1 end v.spec.count = n return v",
    "local a = v.spec.replicas local n = 0 for k in pairs(v.spec) do n = n + 1 end return {a, n, v.spec}",
    ("return {n = #v.list, first = v.list[1], e = next(v.empty) == nil, e2 = next(v.emptyarr) == nil,"
     " nn = next(v.nulls) ~= nil, o = next(v.onlynull) == nil}"),
    "local k = next(v.metadata.labels) return k",
    "table.insert(v.list, 'z') table.sort(v.list) return v.list",
    "table.remove(v.list, 1) return v",
    "return table.concat(v.list, ',') .. #v.spec.list",
    "return {table.unpack(v.list)}",
    "v.list[#v.list + 1] = 'q' return v",
    "local out = {} for i, x in ipairs(v.items) do out[i] = x.name .. (x.n or 0) end return out",
    "local out = {} for i = 1, #v.items do out[#out + 1] = v.items[i] end return out",
    "return {v.spec == v.spec, v.items[1] == v.items[1], type(v.spec), v.missing == nil, v[1] == nil}",
    "return {v.nulls, v.nulls.b == nil, v.status.x == nil}",
    "v.nulls.b = 2 return v.nulls",
    "v.nulls.a = nil return v.nulls",
    "return v.holes",
    "v.holes[2] = 7 return v.holes",
    "return {#v.holes, v.holes[3], v.nullarr}",
    "return {x = v.empty, y = v.emptyarr, z = v.spec.empty, w = v.status.conditions}",
    "return {spec = v.spec, labels = v.metadata.labels, t = v.spec.template.spec.containers[1]}",
    "local s = v.spec s.replicas = s.replicas + 1 return v",
    "return {v.real, v.spec.ratio, v.spec.half, math.type(v.real), v.flag, v.u, #v.u}",
    "v.status.observedGeneration = v.status.observedGeneration + 1 return v.status",
    "v.metadata[1] = 2 return v",
    "return v.list.x.y",
    "return v.spec.template.spec.containers[1].ports",
    "v.items[2].n = nil return v.items",
    "local i = v.items[3] i.n = 5 return v",
    "local t = {} for k, x in pairs(v.items[1]) do t[k] = x end return t",
    "return string.format('%s/%d/%s', v.kind, v.spec.replicas, tostring(v.status.ready))",
};

static void test_lazy_tables_answer_every_script_as_converted_ones(void **state)
{
    (void)state;
    json_t *in = J(lazy_doc);
    const int flags[] = {0, FL_LUA_JSON_DROP_EMPTY};
    for (size_t i = 0; i < sizeof lazy_scripts / sizeof lazy_scripts[0]; i++)
        for (int f = 0; f < 2; f++) {
            char *eager = answer(in, false, lazy_scripts[i], flags[f]);
            char *lazy = answer(in, true, lazy_scripts[i], flags[f]);
            if (strcmp(eager, lazy))
                fail_msg("script: %s (flags %d)\n  converted: %s\n  lazy:      %s", lazy_scripts[i], flags[f], eager,
                         lazy);
            free(eager);
            free(lazy);
        }
    json_decref(in);
}

static void test_lazy_untouched_input_round_trips_exactly(void **state)
{
    (void)state;
    const char *docs[] = {lazy_doc, "[]", "{}", "[[], {}, [null], {'a': null}]", "{'a': [1, 2.5, 3.0, 'x', true]}"};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_t *in = J(docs[i]);
        char *eager = answer(in, false, "return v", 0), *lazy = answer(in, true, "return v", 0);
        assert_string_equal(eager, lazy);
        free(eager);
        free(lazy);
        json_decref(in);
    }
}

/* A random JSON value for the differential test: nested objects and arrays with nulls,
 * empties, integral and fractional reals, repeated keys across objects. */
static json_t *random_json(unsigned *seed, int depth)
{
    static const char *const keys[] = {"a", "b", "spec", "status", "replicas", "x", "conditions", "n"};
    int kind = depth >= 4 ? (int)(rand_r(seed) % 6) : (int)(rand_r(seed) % 9);
    switch (kind) {
    case 0: return json_null();
    case 1: return json_integer((json_int_t)(rand_r(seed) % 100) - 20);
    case 2: return json_real(rand_r(seed) % 2 ? 2.0 : 0.25);
    case 3: return json_string(keys[rand_r(seed) % 8]);
    case 4: return json_boolean(rand_r(seed) % 2);
    case 5: return json_stringn("nul\0x", 5);
    case 6:
    case 7: {
        json_t *o = json_object();
        int n = (int)(rand_r(seed) % 5);
        for (int i = 0; i < n; i++)
            json_object_set_new(o, keys[rand_r(seed) % 8], random_json(seed, depth + 1));
        return o;
    }
    default: {
        json_t *a = json_array();
        int n = (int)(rand_r(seed) % 4);
        for (int i = 0; i < n; i++)
            json_array_append_new(a, random_json(seed, depth + 1));
        return a;
    }
    }
}

/* Random inputs, read in different ways, give the same answers lazy and converted. */
static void test_lazy_tables_match_converted_on_random_inputs(void **state)
{
    (void)state;
    static const char *const scripts[] = {
        "return v",
        "return {v}",
        /* touch every table with pairs (converting them all), then return the input */
        "local function walk(t) for k, x in pairs(t) do if type(x) == 'table' then walk(x) end end end "
        "if type(v) == 'table' then walk(v) end return v",
        /* read some members of every kind, delete some, then return it */
        "local function poke(t, d) if type(t) ~= 'table' or d > 5 then return end "
        "local _ = t.a, t.replicas poke(t.spec, d + 1) poke(t[1], d + 1) t.x = nil poke(t.status, d + 1) end "
        "poke(v, 0) return v",
        "if type(v) == 'table' and type(v.spec) == 'table' then v.spec.n = #v.spec end return {v, v}",
    };
    unsigned seed = 46;
    for (int i = 0; i < 300; i++) {
        json_t *in = json_object();
        json_object_set_new(in, "spec", random_json(&seed, 0));
        json_object_set_new(in, "status", random_json(&seed, 0));
        json_object_set_new(in, "a", random_json(&seed, 1));
        for (size_t k = 0; k < sizeof scripts / sizeof scripts[0]; k++)
            for (int f = 0; f < 2; f++) {
                char *eager = answer(in, false, scripts[k], f ? FL_LUA_JSON_DROP_EMPTY : 0);
                char *lazy = answer(in, true, scripts[k], f ? FL_LUA_JSON_DROP_EMPTY : 0);
                if (strcmp(eager, lazy)) {
                    char *text = fl_json_dumps(in, NULL);
                    fail_msg("input %s\nscript %s (flags %d)\n  converted: %s\n  lazy:      %s", text, scripts[k], f,
                             eager, lazy);
                }
                free(eager);
                free(lazy);
            }
        json_decref(in);
    }
}

/* A table kept past fl_lua_json_end_call no longer reads its (freed) JSON: every use
 * raises, and converting it back fails, whatever parts were read before. */
static void test_lazy_table_kept_past_its_call_raises_instead_of_reading_freed_json(void **state)
{
    (void)state;
    json_t *in = J(lazy_doc);
    lua_State *L = state_with(in, true);
    assert_int_equal(luaL_dostring(L, "kept = v local _ = v.spec.template kept_spec = v.spec"), LUA_OK);
    fl_lua_json_end_call(L);
    json_decref(in); /* what ASan would catch a read of */
    const char *uses[] = {"return kept.kind", "return kept.spec.replicas", "return #kept.list",
                          "kept.x = 1", "for k in pairs(kept) do end", "return next(kept)",
                          "return kept_spec.template.spec"};
    for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++) {
        if (luaL_dostring(L, uses[i]) == LUA_OK)
            fail_msg("%s did not raise", uses[i]);
        if (!strstr(lua_tostring(L, -1), "earlier call"))
            fail_msg("%s: %s", uses[i], lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    const char *globals[] = {"kept", "kept_spec"};
    for (int i = 0; i < 2; i++) {
        json_t *out = NULL;
        char *err = NULL;
        lua_getglobal(L, globals[i]);
        assert_int_equal(fl_lua_to_json(L, -1, "v", &out, &err), FL_EINVAL);
        assert_non_null(strstr(err, "earlier call"));
        free(err);
        lua_pop(L, 1);
    }
    lua_close(L);
}

/* Reading one member of a large input converts that member's level, not the input. */
static void test_lazy_input_converts_only_what_is_read(void **state)
{
    (void)state;
    json_t *items = json_array();
    for (int i = 0; i < 2000; i++)
        json_array_append_new(items, json_pack("{s:i, s:s, s:{s:i, s:i}}", "n", i, "name", "member", "status",
                                               "replicas", i, "ready", i));
    json_t *in = json_pack("{s:s, s:o}", "kind", "K", "items", items);
    int kib[2];
    for (int lazy = 0; lazy < 2; lazy++) {
        lua_State *L = state_with(in, lazy);
        assert_int_equal(luaL_dostring(L, "return v.kind"), LUA_OK);
        assert_string_equal(lua_tostring(L, -1), "K");
        lua_gc(L, LUA_GCCOLLECT);
        kib[lazy] = lua_gc(L, LUA_GCCOUNT); /* the whole state, v included */
        fl_lua_json_end_call(L);
        lua_close(L);
    }
    /* converted: 2000 items of two tables each (over a MiB); lazy: the top table */
    if (kib[0] < kib[1] + 500)
        fail_msg("state holds %d KiB converted, %d KiB lazy", kib[0], kib[1]);
    json_decref(in);
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
        cmocka_unit_test(test_lazy_tables_answer_every_script_as_converted_ones),
        cmocka_unit_test(test_lazy_untouched_input_round_trips_exactly),
        cmocka_unit_test(test_lazy_tables_match_converted_on_random_inputs),
        cmocka_unit_test(test_lazy_table_kept_past_its_call_raises_instead_of_reading_freed_json),
        cmocka_unit_test(test_lazy_input_converts_only_what_is_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
