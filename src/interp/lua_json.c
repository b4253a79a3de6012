/* lua_json.c - JSON (jansson) values to Lua values and back, for the Lua interpreter
 * backend (contract and the conversion rules in lua.h; design in docs/internals/lua.md).
 *
 * Lua has one table type where JSON has two, and no null. Three registry entries make
 * the round trip exact for anything that came from JSON:
 *   - a shared metatable for tables made from arrays and one for tables made from
 *     objects: a non-empty table's keys say what it is, but an empty one has only its
 *     mark ({} and [] must come back as they went in);
 *   - a weak-keyed side table `nulls`: for a table made from an object with null members
 *     it holds the set of those keys (they are absent in Lua, so `x.f == nil` is true, and
 *     come back as null unless the script set them); for an array with null elements it
 *     holds the array's length (the nulls are holes, and trailing ones would otherwise be
 *     lost). Only tables that had nulls pay for this.
 * The scripts cannot reach either (getmetatable is not in the sandbox).
 *
 * Going back, object keys are sorted (bytewise): Lua's table order depends on a per-state
 * hash seed, and the same script on the same input must give the same bytes, as Karmada's
 * (Go, sorted maps) does. Going back never raises a Lua error nor allocates in the state
 * (lua_next, lua_rawget* and lua_tolstring on strings do not), so it runs outside a
 * protected call; pushing does allocate and must run inside one. */
#include "interp/lua.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"

/* Registry keys (their addresses). */
static const char array_mt_key = 'a';
static const char object_mt_key = 'o';
static const char nulls_key = 'n';

void fl_lua_json_open(lua_State *L)
{
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &array_mt_key);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &object_mt_key);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k"); /* weak keys: an entry lives as long as its table */
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &nulls_key);
}

/* ---- JSON -> Lua ---- */

struct push {
    lua_State *L;
    int amt, omt, nulls; /* stack indexes of the array and object metatables and `nulls` */
    char **err;
};

static int push_value(struct push *p, const json_t *v, int depth);

static int too_deep(char **err)
{
    if (err)
        *err = fl_asprintf("JSON nesting deeper than %d levels", FL_LUA_MAX_DEPTH);
    return FL_EINVAL;
}

static int push_object(struct push *p, const json_t *v, int depth)
{
    lua_State *L = p->L;
    int rc;
    lua_createtable(L, 0, (int)json_object_size(v));
    int t = lua_gettop(L), set = 0;
    for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
        const char *key = json_object_iter_key(it);
        size_t klen = json_object_iter_key_len(it);
        const json_t *val = json_object_iter_value(it);
        if (json_is_null(val)) {
            if (!set) {
                lua_newtable(L);
                set = lua_gettop(L);
            }
            lua_pushlstring(L, key, klen);
            lua_pushboolean(L, 1);
            lua_rawset(L, set);
            continue;
        }
        lua_pushlstring(L, key, klen);
        if ((rc = push_value(p, val, depth + 1)))
            return rc;
        lua_rawset(L, t);
    }
    if (set) {
        lua_pushvalue(L, t);
        lua_pushvalue(L, set);
        lua_rawset(L, p->nulls);
        lua_settop(L, t);
    }
    lua_pushvalue(L, p->omt);
    lua_setmetatable(L, t);
    return 0;
}

static int push_array(struct push *p, const json_t *v, int depth)
{
    lua_State *L = p->L;
    size_t n = json_array_size(v);
    bool holes = false;
    int rc;
    lua_createtable(L, n > INT32_MAX ? 0 : (int)n, 0);
    int t = lua_gettop(L);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (json_is_null(e)) {
            holes = true;
            continue;
        }
        if ((rc = push_value(p, e, depth + 1)))
            return rc;
        lua_rawseti(L, t, (lua_Integer)i + 1);
    }
    if (holes) {
        lua_pushvalue(L, t);
        lua_pushinteger(L, (lua_Integer)n);
        lua_rawset(L, p->nulls);
    }
    lua_pushvalue(L, p->amt);
    lua_setmetatable(L, t);
    return 0;
}

static int push_value(struct push *p, const json_t *v, int depth)
{
    lua_State *L = p->L;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        if (depth >= FL_LUA_MAX_DEPTH)
            return too_deep(p->err);
        luaL_checkstack(L, 6, "JSON nesting");
        return json_is_object(v) ? push_object(p, v, depth) : push_array(p, v, depth);
    case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); return 0;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); return 0;
    case JSON_REAL: lua_pushnumber(L, (lua_Number)json_real_value(v)); return 0;
    case JSON_TRUE: lua_pushboolean(L, 1); return 0;
    case JSON_FALSE: lua_pushboolean(L, 0); return 0;
    default: lua_pushnil(L); return 0;
    }
}

int fl_lua_push_json(lua_State *L, const json_t *v, char **err)
{
    if (err)
        *err = NULL;
    if (!v || json_is_null(v)) {
        lua_pushnil(L);
        return 0;
    }
    if (!json_is_object(v) && !json_is_array(v)) {
        struct push p = {L, 0, 0, 0, err};
        return push_value(&p, v, 0);
    }
    int base = lua_gettop(L);
    luaL_checkstack(L, 8, "JSON");
    lua_rawgetp(L, LUA_REGISTRYINDEX, &array_mt_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &object_mt_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &nulls_key);
    struct push p = {L, base + 1, base + 2, base + 3, err};
    int rc = push_value(&p, v, 0);
    if (rc) {
        lua_settop(L, base);
        return rc;
    }
    /* the value above the three helpers: move it down to base + 1 */
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return 0;
}

/* ---- Lua -> JSON ---- */

/* A table with no entries and no mark: the caller decides (see lua.h). */
#define UNTYPED_EMPTY 1

/* Where a conversion is, one step per level, made into text only for a message. */
struct seg {
    const char *key; /* NULL: an array index */
    size_t klen;
    lua_Integer idx;
};

struct conv {
    lua_State *L;
    const void *amt, *omt; /* the marker metatables */
    int nulls;             /* stack index of `nulls` */
    const char *what;      /* the path's first word */
    bool drop_empty;       /* FL_LUA_JSON_DROP_EMPTY */
    int depth;             /* levels of seg in use */
    struct seg seg[FL_LUA_MAX_DEPTH + 1];
    const void *open[FL_LUA_MAX_DEPTH]; /* tables being converted: a repeat is a cycle */
    char **err;
};

static int fail(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct conv *c, const char *fmt, ...)
{
    if (!c->err)
        return FL_EINVAL;
    char path[1024];
    size_t n = (size_t)snprintf(path, sizeof path, "%s", c->what);
    for (int i = 0; i < c->depth && n < sizeof path; i++) {
        const struct seg *g = &c->seg[i];
        int w = g->key ? snprintf(path + n, sizeof path - n, ".%.*s", (int)(g->klen > 200 ? 200 : g->klen), g->key)
                       : snprintf(path + n, sizeof path - n, "[%lld]", (long long)g->idx);
        n += w > 0 ? (size_t)w : 0;
    }
    va_list ap;
    va_start(ap, fmt);
    fl_err_vset(c->err, path, fmt, ap);
    va_end(ap);
    return FL_EINVAL;
}

/* Convert the value at idx as the child (key or index) of the current level. */
static int to_value(struct conv *c, int idx, int depth, json_t **out);

static int to_child(struct conv *c, int idx, int depth, const char *key, size_t klen, lua_Integer i, json_t **out)
{
    c->seg[depth] = (struct seg){key, klen, i};
    c->depth = depth + 1;
    int rc = to_value(c, idx, depth + 1, out);
    c->depth = depth;
    return rc;
}

static int to_value(struct conv *c, int idx, int depth, json_t **out);

/* One member of an object being built, sorted before insertion. */
struct member {
    const char *key;
    size_t klen;
    json_t *val;
};

static int cmp_member(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int r = memcmp(x->key, y->key, n);
    return r ? r : (x->klen > y->klen) - (x->klen < y->klen);
}

static void free_members(struct member *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(m[i].val);
}

/* The object for table t (all keys strings, n of them); nset is the stack index of its
 * set of null keys, or 0. */
static int to_object(struct conv *c, int t, size_t n, int nset, int depth, json_t **out)
{
    lua_State *L = c->L;
    struct member small[32], *m = small;
    size_t cnt = 0, cap = 32;
    int rc = 0;
    size_t nnull = 0;
    if (nset) {
        lua_pushnil(L);
        while (lua_next(L, nset)) {
            lua_pop(L, 1);
            nnull++;
        }
    }
    if (n + nnull > cap) {
        cap = n + nnull;
        m = fl_malloc(cap * sizeof *m);
    }
    lua_pushnil(L);
    while (lua_next(L, t)) {
        size_t klen;
        const char *key = lua_tolstring(L, -2, &klen); /* a string key: no conversion */
        json_t *v = NULL;
        rc = to_child(c, lua_gettop(L), depth, key, klen, 0, &v);
        lua_pop(L, 1);
        if (rc == UNTYPED_EMPTY) {
            rc = 0;
            continue; /* left out: see lua.h */
        }
        if (rc) {
            lua_pop(L, 1);
            goto out;
        }
        m[cnt++] = (struct member){key, klen, v};
    }
    c->depth = depth;
    if (nset && !c->drop_empty) {
        lua_pushnil(L);
        while (lua_next(L, nset)) {
            lua_pop(L, 1);
            if (lua_type(L, -1) != LUA_TSTRING)
                continue;
            lua_pushvalue(L, -1);
            if (lua_rawget(L, t) == LUA_TNIL) { /* still absent: the script left it alone */
                size_t klen;
                const char *key = lua_tolstring(L, -2, &klen);
                m[cnt++] = (struct member){key, klen, json_null()};
            }
            lua_pop(L, 1);
        }
    }
    qsort(m, cnt, sizeof *m, cmp_member);
    *out = json_object();
    for (size_t i = 0; i < cnt; i++) {
        if (json_object_setn_new(*out, m[i].key, m[i].klen, m[i].val)) {
            m[i].val = NULL; /* jansson dropped it */
            c->seg[depth] = (struct seg){m[i].key, m[i].klen, 0};
            c->depth = depth + 1;
            rc = fail(c, "key is not valid UTF-8");
            c->depth = depth;
            json_decref(*out);
            *out = NULL;
            free_members(m + i + 1, cnt - i - 1);
            cnt = 0;
            goto out;
        }
    }
    cnt = 0;
out:
    free_members(m, cnt);
    if (m != small)
        free(m);
    return rc;
}

/* The array for table t: keys 1..len, holes (nulls) allowed as described in lua.h. */
static int to_array(struct conv *c, int t, lua_Integer len, int depth, json_t **out)
{
    lua_State *L = c->L;
    json_t *arr = json_array();
    for (lua_Integer i = 1; i <= len; i++) {
        json_t *v = NULL;
        int rc;
        if (lua_rawgeti(L, t, i) == LUA_TNIL) {
            v = json_null();
            rc = 0;
        } else {
            rc = to_child(c, lua_gettop(L), depth, NULL, 0, i - 1, &v);
            if (rc == UNTYPED_EMPTY && c->drop_empty) { /* left out, the rest move up */
                lua_pop(L, 1);
                continue;
            }
            if (rc == UNTYPED_EMPTY) {
                rc = 0;
                v = json_object();
            }
        }
        lua_pop(L, 1);
        if (rc) {
            json_decref(arr);
            return rc;
        }
        json_array_append_new(arr, v);
    }
    *out = arr;
    return 0;
}

static const char *lua_type_word(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER: return lua_isinteger(L, idx) ? "integer" : "number";
    default: return lua_typename(L, lua_type(L, idx));
    }
}

static int to_table(struct conv *c, int t, int depth, json_t **out)
{
    lua_State *L = c->L;
    const void *self = lua_topointer(L, t);
    if (depth >= FL_LUA_MAX_DEPTH)
        return fail(c, "nesting deeper than %d levels", FL_LUA_MAX_DEPTH);
    for (int i = 0; i < depth; i++)
        if (c->open[i] == self)
            return fail(c, "a table that contains itself cannot be JSON");
    if (!lua_checkstack(L, 8))
        return fail(c, "nesting too deep for the Lua stack");
    c->open[depth] = self;

    /* what kind of keys */
    size_t n = 0;
    lua_Integer maxk = 0;
    bool ints = true, strs = true;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        n++;
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING) {
            ints = false;
        } else if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1) {
            strs = false;
            if (lua_tointeger(L, -1) > maxk)
                maxk = lua_tointeger(L, -1);
        } else {
            char kbuf[64];
            if (lua_type(L, -1) == LUA_TNUMBER)
                snprintf(kbuf, sizeof kbuf, "%s %.14g", lua_type_word(L, -1), lua_tonumber(L, -1));
            else
                snprintf(kbuf, sizeof kbuf, "of type %s", lua_type_word(L, -1));
            lua_pop(L, 1);
            return fail(c, "table key %s: keys must be strings (an object) or 1, 2, ... n (an array)", kbuf);
        }
        if (!ints && !strs) {
            lua_pop(L, 1);
            return fail(c, "table mixes string keys and integer keys, so it is neither an object nor an array");
        }
    }

    /* what JSON gave it: null keys or an array's length */
    lua_pushvalue(L, t);
    int ntype = lua_rawget(L, c->nulls);
    int nset = ntype == LUA_TTABLE ? lua_gettop(L) : 0;
    lua_Integer recorded = ntype == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;

    int rc;
    if (n == 0 && c->drop_empty) { /* whatever made it: left out (the top level is {}) */
        lua_pop(L, 1);
        return UNTYPED_EMPTY;
    }
    if (n == 0 && !nset && !recorded) {
        const void *mt = NULL;
        if (lua_getmetatable(L, t)) {
            mt = lua_topointer(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if (mt == c->amt)
            *out = json_array();
        else if (mt == c->omt)
            *out = json_object();
        else
            return UNTYPED_EMPTY;
        return 0;
    }
    if (n == 0 && nset) {
        rc = to_object(c, t, 0, nset, depth, out);
    } else if (ints && !nset) {
        lua_Integer len = maxk > recorded ? maxk : recorded;
        /* holes are nulls; allow them when JSON made them, or when the array is at least
         * half full (a script's t[#t + 2] = x), never a sparse t[1e9] = x */
        if ((lua_Integer)n != len && len > recorded && (size_t)len > 2 * n)
            rc = fail(c, "sparse array: index %lld set but only %zu elements", (long long)maxk, n);
        else
            rc = to_array(c, t, len, depth, out);
    } else if (strs) {
        rc = to_object(c, t, n, nset, depth, out);
    } else {
        rc = fail(c, "table made from a JSON object now has integer keys");
    }
    lua_pop(L, 1);
    return rc;
}

static int to_value(struct conv *c, int idx, int depth, json_t **out)
{
    lua_State *L = c->L;
    *out = NULL;
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return 0;
    case LUA_TBOOLEAN: *out = json_boolean(lua_toboolean(L, idx)); return 0;
    case LUA_TNUMBER: {
        if (lua_isinteger(L, idx)) {
            *out = json_integer((json_int_t)lua_tointeger(L, idx));
            return 0;
        }
        lua_Number d = lua_tonumber(L, idx);
        if (!isfinite(d))
            return fail(c, "%s is not a finite number", isnan(d) ? "nan" : "inf");
        /* Lua 5.1 scripts compute counts with `/`: an integral float is a JSON integer */
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            *out = json_integer((json_int_t)d);
        else
            *out = json_real(d);
        return 0;
    }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (!(*out = json_stringn(s, len)))
            return fail(c, "string is not valid UTF-8");
        return 0;
    }
    case LUA_TTABLE: return to_table(c, lua_absindex(L, idx), depth, out);
    default: return fail(c, "a %s cannot be JSON", lua_type_word(L, idx));
    }
}

int fl_lua_to_json(lua_State *L, int idx, const char *what, json_t **out, char **err)
{
    return fl_lua_to_json_flags(L, idx, what, 0, out, err);
}

int fl_lua_to_json_flags(lua_State *L, int idx, const char *what, int flags, json_t **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) {
        struct conv c1 = {.L = L, .what = what ? what : "value", .err = err};
        return to_value(&c1, idx, 0, out);
    }
    if (!lua_checkstack(L, 8)) {
        if (err)
            *err = fl_asprintf("%s: no Lua stack space left", what ? what : "value");
        return FL_EINVAL;
    }
    /* on the stack (about 8 KiB): a heap block that size costs more than the conversion
     * of a small object, as malloc consolidates its free lists for it */
    struct conv cv, *c = &cv;
    c->L = L;
    c->err = err;
    c->what = what ? what : "value";
    c->drop_empty = flags & FL_LUA_JSON_DROP_EMPTY;
    c->depth = 0;
    int top = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &array_mt_key);
    c->amt = lua_topointer(L, -1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &object_mt_key);
    c->omt = lua_topointer(L, -1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &nulls_key);
    c->nulls = lua_gettop(L);
    int rc = to_value(c, idx, 0, out);
    if (rc == UNTYPED_EMPTY) { /* a bare {} the script made: an object (lua.h) */
        *out = json_object();
        rc = 0;
    }
    lua_settop(L, top);
    return rc;
}
