/* fuzz_lua_json.c - round trips through the Lua interpreter's JSON conversion
 * (src/interp/lua_json.c): bytes -> JSON -> Lua value -> JSON must give the input back,
 * or fail cleanly (too deep to push). "Back" allows the one change the conversion makes
 * on purpose: a real with an exact integral value in int64 range comes back as an
 * integer (lua.h says why), so the input is normalised that way before comparing.
 * One Lua state serves every input, as a pool state serves many calls. */
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdlib.h>

#include "core/json.h"
#include "core/mem.h"
#include "interp/lua.h"

/* v with integral reals turned into integers (new reference). */
static json_t *normalise(const json_t *v)
{
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            return json_integer((json_int_t)d);
        return json_real(d);
    }
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) json_array_append_new(out, normalise(e));
        return out;
    }
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *k;
        size_t klen;
        json_t *e;
        json_object_keylen_foreach((json_t *)v, k, klen, e) json_object_setn_new(out, k, klen, normalise(e));
        return out;
    }
    return json_incref((json_t *)v);
}

struct job {
    const json_t *in;
    int rc;
    char *err;
};

static int push(lua_State *L)
{
    struct job *j = lua_touserdata(L, 1);
    lua_settop(L, 0);
    j->rc = fl_lua_push_json(L, j->in, &j->err);
    return j->rc ? 0 : 1;
}

static int open_json(lua_State *L)
{
    fl_lua_json_open(L);
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static lua_State *L;
    if (!L) {
        fl_mem_init();
        L = luaL_newstate();
        lua_pushcfunction(L, open_json);
        if (lua_pcall(L, 0, 0, 0) != LUA_OK)
            abort();
    }
    json_error_t e;
    json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!in)
        return 0;
    struct job j = {in, 0, NULL};
    lua_settop(L, 0);
    lua_pushcfunction(L, push);
    lua_pushlightuserdata(L, &j);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK)
        abort(); /* only a memory error could get here */
    if (j.rc) {
        if (!j.err) /* a clean error has a message */
            abort();
        free(j.err);
        json_decref(in);
        lua_settop(L, 0);
        lua_gc(L, LUA_GCCOLLECT);
        return 0;
    }
    json_t *out = NULL;
    char *err = NULL;
    if (fl_lua_to_json(L, -1, "v", &out, &err))
        abort(); /* anything that came from JSON must go back */
    json_t *want = normalise(in);
    /* a top-level null comes back as "nil" (NULL) */
    if (!(json_is_null(want) ? out == NULL : fl_json_same(want, out)))
        abort();
    json_decref(want);
    json_decref(out);
    json_decref(in);
    lua_settop(L, 0);
    /* free this input's tables now: libFuzzer reads a heap that grew as a possible leak
     * and runs the leak checker, which would make every run a hundred times slower */
    lua_gc(L, LUA_GCCOLLECT);
    return 0;
}
