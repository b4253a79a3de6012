/* fuzz_lua_order.c - libFuzzer target for the source rewrite of src/interp/lua_order.c.
 *
 * The bytes are a Lua chunk. Whenever Lua compiles them, the rewritten source (if the
 * rewrite changes anything) must compile too and keep every line where it was (the same
 * number of newlines), or errors would point at the wrong line and scripts that work in
 * Karmada would be refused. Chunks Lua refuses are only rewritten, to shake the lexer. */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdlib.h>

#include "interp/lua.h"

static size_t newlines(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lua_State *L;
    if (!L)
        L = luaL_newstate();
    const char *src = (const char *)data;
    size_t n = 0;
    char *out = fl_lua_order_source(src, size, &n);
    int ok = luaL_loadbufferx(L, src, size, "fuzz", "t") == LUA_OK;
    lua_settop(L, 0);
    if (ok && out) {
        if (luaL_loadbufferx(L, out, n, "fuzz", "t") != LUA_OK)
            abort();
        lua_settop(L, 0);
        if (newlines(out, n) != newlines(src, size))
            abort();
    }
    free(out);
    return 0;
}
