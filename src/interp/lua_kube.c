/* lua_kube.c - the `kube` module Karmada gives interpreter scripts, with the same four
 * functions and the same argument rules (contract in lua.h):
 *
 *   kube.resourceAdd(q1, q2, ...)            -> the sum as a canonical quantity string, in
 *                                               the format of the first addend that made
 *                                               it non-zero (Kubernetes' Quantity.Add)
 *   kube.getResourceQuantity(q)              -> the quantity as a number ("100m" -> 0.1)
 *   kube.accuratePodRequirements(template)   -> {nodeClaim = ..., resourceRequest = ...} or nil
 *   kube.getPodDependencies(template, ns)    -> {{apiVersion, kind, namespace, name}, ...}
 *
 * Quantities go through core/quantity.h (exact; nil counts as zero, as in Karmada; a
 * number is accepted where Karmada wants a string, written out first). The two pod
 * functions do not reimplement anything: they hand the template to the native backend's
 * rules (native_replica.c, native_deps.c), so a CRD's Lua script computes requirements
 * and dependencies exactly as the native backend does for a Deployment. Two deliberate
 * differences from Karmada: getPodDependencies returns an empty table, not nil, when the
 * template references nothing (scripts then need no `or {}`), and its references come
 * sorted.
 *
 * Every function runs inside a Lua call, so an error is a Lua error (luaL_error). Jansson
 * values and malloc'd messages are released before anything that can raise: a raise
 * longjmps past this file's frames. */
#include "interp/lua.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/quantity.h"
#include "interp/native.h"

static const char module_key = 'm';

#define NANO ((fl_quantity_nano)1000000000)

/* Raise "kube.<fn>: <msg>" after freeing msg (copied first: the raise never returns). */
static int raise_owned(lua_State *L, const char *fn, char *msg)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", msg ? msg : "failed");
    free(msg);
    return luaL_error(L, "kube.%s: %s", fn, buf);
}

/* The quantity at idx: nil is zero, a string is parsed, a number written out first. */
static void check_quantity(lua_State *L, int idx, const char *fn, fl_quantity *q)
{
    char num[64];
    const char *text;
    memset(q, 0, sizeof *q);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return;
    case LUA_TSTRING: text = lua_tostring(L, idx); break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            snprintf(num, sizeof num, "%lld", (long long)lua_tointeger(L, idx));
        else
            snprintf(num, sizeof num, "%.15g", (double)lua_tonumber(L, idx));
        text = num;
        break;
    default:
        luaL_error(L, "kube.%s: argument #%d: must be a quantity string, got %s", fn, idx, luaL_typename(L, idx));
        return;
    }
    if (fl_quantity_parse(text, q))
        luaL_error(L, "kube.%s: argument #%d: invalid quantity \"%s\"", fn, idx, text);
}

static int k_resource_add(lua_State *L)
{
    fl_quantity acc = {0}, q;
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        check_quantity(L, i, "resourceAdd", &q);
        /* Kubernetes' Quantity.Add takes the addend's format whenever the sum so far is
         * zero, so resourceAdd("0", "6Gi", "7680Mi") is "13824Mi", not "14495514624":
         * scripts start their sums from "0" (RayCluster's desiredMemory). */
        bool was_zero = fl_quantity_is_zero(&acc);
        if (fl_quantity_add(&acc, &q))
            return luaL_error(L, "kube.resourceAdd: the sum overflows");
        if (was_zero && q.format != FL_QUANTITY_NONE)
            acc.format = q.format;
    }
    char buf[64];
    fl_quantity_format(&acc, buf, sizeof buf);
    lua_pushstring(L, buf);
    return 1;
}

static int k_get_resource_quantity(lua_State *L)
{
    fl_quantity q;
    if (lua_gettop(L) != 1)
        return luaL_error(L, "kube.getResourceQuantity only accepts one argument");
    check_quantity(L, 1, "getResourceQuantity", &q);
    if (q.nano < 0)
        return luaL_error(L, "kube.getResourceQuantity: negative quantity");
    /* whole values as integers, so tostring() prints "2" as Karmada's Lua does */
    if (q.nano % NANO == 0 && q.nano / NANO <= (fl_quantity_nano)INT64_MAX)
        lua_pushinteger(L, (lua_Integer)(q.nano / NANO));
    else
        lua_pushnumber(L, (lua_Number)((double)q.nano / 1e9));
    return 1;
}

static int push_helper(lua_State *L)
{
    char *err = NULL;
    if (fl_lua_push_json(L, lua_touserdata(L, 1), &err))
        return raise_owned(L, "result", err);
    return 1;
}

/* Push v (consumed: released even when pushing raises). */
static void push_owned(lua_State *L, json_t *v)
{
    lua_pushcfunction(L, push_helper);
    lua_pushlightuserdata(L, v);
    int st = lua_pcall(L, 1, 1, 0);
    json_decref(v);
    if (st != LUA_OK)
        lua_error(L);
}

/* The pod template at idx as JSON; raises (nothing held) when it cannot be. */
static json_t *template_at(lua_State *L, int idx, const char *fn)
{
    json_t *tpl;
    char *err = NULL;
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_error(L, "kube.%s: podTemplate must be a table, got %s", fn, luaL_typename(L, idx));
    if (fl_lua_to_json(L, idx, "podTemplate", &tpl, &err))
        raise_owned(L, fn, err);
    if (!json_is_object(tpl)) {
        json_decref(tpl);
        luaL_error(L, "kube.%s: podTemplate must be an object", fn);
    }
    return tpl;
}

/* A Pod made of the template's spec (and namespace ns, may be NULL), as the native rules
 * read one. */
static json_t *pod_of(json_t *tpl, const char *ns)
{
    json_t *pod = json_object();
    if (ns)
        json_object_set_new(pod, "metadata", json_pack("{s:s}", "namespace", ns));
    json_t *spec = json_object_get(tpl, "spec");
    if (spec)
        json_object_set(pod, "spec", spec);
    return pod;
}

static int k_accurate_pod_requirements(lua_State *L)
{
    if (lua_gettop(L) != 1)
        return luaL_error(L, "kube.accuratePodRequirements only accepts one argument");
    json_t *tpl = template_at(L, 1, "accuratePodRequirements");
    json_t *pod = pod_of(tpl, NULL), *req = NULL;
    int64_t one;
    char *err = NULL;
    int rc = fl_native_replicas_pod(pod, &one, &req, &err);
    json_decref(pod);
    json_decref(tpl);
    if (rc) {
        char *m = fl_asprintf("podTemplate.%s", err ? err : "invalid");
        free(err);
        return raise_owned(L, "accuratePodRequirements", m);
    }
    if (!req) {
        lua_pushnil(L); /* no requirements at all: nil, as Karmada gives */
        return 1;
    }
    push_owned(L, req);
    return 1;
}

static int k_get_pod_dependencies(lua_State *L)
{
    if (lua_gettop(L) != 2)
        return luaL_error(L, "kube.getPodDependencies only accepts two arguments");
    const char *ns = "default"; /* Karmada's default for a nil namespace */
    int t = lua_type(L, 2);
    if (t == LUA_TSTRING || t == LUA_TNUMBER)
        ns = lua_tostring(L, 2);
    else if (t != LUA_TNIL)
        return luaL_error(L, "kube.getPodDependencies: namespace must be a string, got %s", luaL_typename(L, 2));
    json_t *tpl = template_at(L, 1, "getPodDependencies");
    json_t *pod = pod_of(tpl, ns), *deps = NULL;
    char *err = NULL;
    int rc = fl_native_deps_pod(pod, &deps, &err);
    json_decref(pod);
    json_decref(tpl);
    if (rc) {
        char *m = fl_asprintf("podTemplate.%s", err ? err : "invalid");
        free(err);
        return raise_owned(L, "getPodDependencies", m);
    }
    push_owned(L, deps);
    return 1;
}

static const luaL_Reg kube_funcs[] = {
    {"resourceAdd", k_resource_add},
    {"getResourceQuantity", k_get_resource_quantity},
    {"accuratePodRequirements", k_accurate_pod_requirements},
    {"getPodDependencies", k_get_pod_dependencies},
    {NULL, NULL},
};

void fl_lua_kube_push(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    luaL_newlib(L, kube_funcs);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &module_key);
}
