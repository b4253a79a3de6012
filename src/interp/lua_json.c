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
 * protected call; pushing does allocate and must run inside one.
 *
 * An operation's arguments are not converted before the script runs but handed over as
 * lazy tables, which convert a level of the JSON when the script reaches it (see "lazy
 * tables" below): a call costs what its script reads. Both directions share a cache of
 * short Lua strings (push_str). */
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
/* Lazy tables (fl_lua_push_json_lazy): see "lazy tables" below. */
static const char ctx_key = 'x';      /* struct ctx: the string cache and lazy tables' epoch */
static const char lazy_omt_key = 'P'; /* the metatable of lazy objects (see "lazy tables") */
static const char lazy_amt_key = 'Q'; /* of lazy arrays */

/* Interning a string in Lua hashes every byte of it: for the keys of many objects of one
 * shape (a hundred members' statuses) that is a large part of converting them. So the
 * short strings pushed from JSON go through a direct-mapped cache of NSTRS Lua strings,
 * found by a cheap hash of their length and first and last bytes: a hit pushes the
 * string already made. The cache is in the state's struct ctx (a full userdata in the
 * registry), which holds where each cached string's bytes are (Lua never moves a
 * string); its user value is the table of the strings, keeping them alive. A slot's
 * table entry and pointer change together. */
#define NSTRS 256
#define STRS_MAXLEN 40 /* Lua's short strings: longer ones are not interned anyway */
struct ctx {
    uint64_t epoch; /* the current call's: the key lazy tables hold their JSON under */
    const char *s[NSTRS];
    size_t len[NSTRS];
};
struct sc {
    lua_State *L;
    struct ctx *x;
    int tab; /* stack index (or upvalue pseudo-index) of the table of cached strings */
};

static void lazy_open(lua_State *L);

void fl_lua_json_open(lua_State *L)
{
    struct ctx *x = lua_newuserdatauv(L, sizeof *x, 1);
    memset(x, 0, sizeof *x);
    x->epoch = 1;
    lua_createtable(L, NSTRS, 0);
    lua_setiuservalue(L, -2, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &ctx_key);
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
    lazy_open(L);
}

/* ---- JSON -> Lua ---- */

/* Push the cache's table (one slot) and fill sc. */
static void sc_open(lua_State *L, struct sc *sc)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &ctx_key);
    sc->L = L;
    sc->x = lua_touserdata(L, -1);
    lua_getiuservalue(L, -1, 1);
    lua_remove(L, -2);
    sc->tab = lua_gettop(L);
}

static size_t str_slot(const char *s, size_t n)
{
    uint64_t a = 0, b = 0;
    memcpy(&a, s, n < 8 ? n : 8);
    if (n > 8)
        memcpy(&b, s + n - 8, 8);
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + n) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h >> 40) & (NSTRS - 1);
}

/* Push the string s (n bytes), through the cache. */
static void push_str(struct sc *sc, const char *s, size_t n)
{
    lua_State *L = sc->L;
    if (n > STRS_MAXLEN) {
        lua_pushlstring(L, s, n);
        return;
    }
    size_t i = str_slot(s, n);
    struct ctx *c = sc->x;
    if (c->s[i] && c->len[i] == n && !memcmp(c->s[i], s, n)) {
        lua_rawgeti(L, sc->tab, (lua_Integer)i + 1);
        return;
    }
    lua_pushlstring(L, s, n);
    lua_pushvalue(L, -1);
    lua_rawseti(L, sc->tab, (lua_Integer)i + 1); /* in the preallocated array part */
    c->s[i] = lua_tostring(L, -1);
    c->len[i] = n;
}

struct push {
    lua_State *L;
    struct sc sc;
    int amt, omt, nulls; /* stack indexes of the array and object metatables and `nulls` */
    char **err;
};

static int push_value(struct push *p, const json_t *v, int depth);

/* A value that is not an object or an array (null: nil). */
static void push_scalar(struct sc *sc, const json_t *v)
{
    lua_State *L = sc->L;
    switch (json_typeof(v)) {
    case JSON_STRING: push_str(sc, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
    case JSON_REAL: lua_pushnumber(L, (lua_Number)json_real_value(v)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    default: lua_pushnil(L); break;
    }
}

static bool is_container(const json_t *v)
{
    return json_is_object(v) || json_is_array(v);
}

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
        push_str(&p->sc, key, klen);
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
    default: push_scalar(&p->sc, v); return 0;
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
    int base = lua_gettop(L);
    luaL_checkstack(L, 8, "JSON");
    lua_rawgetp(L, LUA_REGISTRYINDEX, &array_mt_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &object_mt_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &nulls_key);
    struct push p = {L, {0}, base + 1, base + 2, base + 3, err};
    sc_open(L, &p.sc);
    int rc = push_value(&p, v, 0);
    if (rc) {
        lua_settop(L, base);
        return rc;
    }
    /* the value above the four helpers: move it down to base + 1 */
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return 0;
}

/* ---- lazy tables ----
 *
 * fl_lua_push_json_lazy gives the script tables that convert their JSON on demand. A
 * lazy table holds its json_t (borrowed from the call's arguments) as a light userdata,
 * under a key no script can name: the light userdata whose value is the call's epoch
 * (struct ctx). It has one of two shared metatables:
 *   - a lazy array converts all its elements (objects and arrays among them becoming
 *     lazy tables) the first time anything touches it (__index, __len, __newindex,
 *     __pairs, next) and from then on is a plain table with the array mark, exactly what
 *     fl_lua_push_json would have made. Arrays are read whole, in order, by # and ipairs.
 *   - a lazy object converts its members by kind, on the first read of a member of that
 *     kind: all the scalar members (strings, numbers, booleans), or all the object and
 *     array members (as lazy tables), stored in the table, with a bit set beside the
 *     pointer (SCALARS_MADE, KIDS_MADE). Once stored, members read raw, and a script's
 *     `obj.spec = nil` is a raw delete that __index, seeing the bit, does not undo (a
 *     write to a stored member is a raw write too). Any other write is to a member not
 *     stored, so it reaches __newindex, which (like #, pairs and next) converts the
 *     rest of the members and makes the table a plain one with the object mark. Unread
 *     members of an untouched kind cost nothing.
 * Nulls are kept as fl_lua_push_json keeps them, from the moment a table is plain.
 * Conversion back (fl_lua_to_json) reads a lazy table without converting it: members of
 * a kind not stored come from the JSON, stored ones from the table (lazy_to_json).
 *
 * The JSON must not be read after the call: fl_lua_json_end_call moves the epoch on, so a
 * table a script kept (in an upvalue) from an earlier call holds its pointer under a key
 * nobody looks up any more, and, still having a lazy metatable, raises on every use
 * instead of reading freed memory; conversion back refuses it too. */

/* Bits of the light userdata beside the pointer (a json_t is at least 8-aligned). */
#define KIDS_MADE ((uintptr_t)1)    /* the object and array members are stored */
#define SCALARS_MADE ((uintptr_t)2) /* the other non-null members are stored */
#define MADE_BITS (KIDS_MADE | SCALARS_MADE)

static const char stale_text[] = "a table from an earlier call's arguments cannot be used in this call";

/* What lazy conversion needs, at stack indexes or upvalue pseudo-indexes. */
struct lz {
    lua_State *L;
    int omt, amt; /* the lazy metatables */
    struct sc sc; /* the string cache; sc.x->epoch */
};

/* The metamethods' upvalues: ctx, lazy object metatable, lazy array metatable, strings. */
static void lz_up(lua_State *L, struct lz *z)
{
    z->L = L;
    z->omt = lua_upvalueindex(2);
    z->amt = lua_upvalueindex(3);
    z->sc = (struct sc){L, lua_touserdata(L, lua_upvalueindex(1)), lua_upvalueindex(4)};
}

/* The same from the registry, pushed (3 slots). */
static void lz_reg(lua_State *L, struct lz *z)
{
    luaL_checkstack(L, 12, "JSON");
    z->L = L;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_omt_key);
    z->omt = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_amt_key);
    z->amt = lua_gettop(L);
    sc_open(L, &z->sc);
}

static void *epoch_key(const struct lz *z)
{
    return (void *)(uintptr_t)z->sc.x->epoch;
}

/* The JSON of the lazy table at t, or NULL when it is not lazy in this call (a plain
 * table, or one cut from an earlier call's JSON); *bits: MADE_BITS. */
static const json_t *lazy_src(const struct lz *z, int t, uintptr_t *bits)
{
    uintptr_t p = 0;
    if (lua_rawgetp(z->L, t, epoch_key(z)) == LUA_TLIGHTUSERDATA)
        p = (uintptr_t)lua_touserdata(z->L, -1);
    lua_pop(z->L, 1);
    *bits = p & MADE_BITS;
    return (const json_t *)(p & ~MADE_BITS);
}

static void set_src(const struct lz *z, int t, const json_t *v, uintptr_t bits)
{
    lua_pushlightuserdata(z->L, (void *)((uintptr_t)v | bits));
    lua_rawsetp(z->L, t, epoch_key(z));
}

/* Push a lazy table for v (an object or an array). */
static void push_lazy(const struct lz *z, const json_t *v)
{
    lua_State *L = z->L;
    bool obj = json_is_object(v);
    size_t n = obj ? json_object_size(v) : json_array_size(v);
    int sz = n >= INT32_MAX ? 0 : (int)n;
    lua_createtable(L, obj ? 0 : sz, obj ? sz + 1 : 1);
    set_src(z, lua_gettop(L), v, 0);
    lua_pushvalue(L, obj ? z->omt : z->amt);
    lua_setmetatable(L, -2);
}

/* Store in t the members of the lazy object t (src) that bit `made` stands for (the
 * scalars, or the objects and arrays as lazy tables), and set the bit. */
static void make_members(const struct lz *z, int t, const json_t *src, uintptr_t bits, uintptr_t made)
{
    lua_State *L = z->L;
    struct sc sc = z->sc;
    for (void *it = json_object_iter((json_t *)src); it; it = json_object_iter_next((json_t *)src, it)) {
        const json_t *val = json_object_iter_value(it);
        if (json_is_null(val) || is_container(val) != (made == KIDS_MADE))
            continue;
        push_str(&sc, json_object_iter_key(it), json_object_iter_key_len(it));
        if (made == KIDS_MADE)
            push_lazy(z, val);
        else
            push_scalar(&sc, val);
        lua_rawset(L, t);
    }
    set_src(z, t, src, bits | made);
}

/* Make the lazy table at t a plain one, as fl_lua_push_json would have made it (its
 * children lazy); no-op for a table that is not lazy in this call. */
static void materialise(const struct lz *z, int t)
{
    lua_State *L = z->L;
    uintptr_t bits;
    const json_t *src = lazy_src(z, t, &bits);
    if (!src)
        return;
    int top = lua_gettop(L), set = 0;
    bool obj = json_is_object(src);
    if (obj) {
        if (!(bits & KIDS_MADE))
            make_members(z, t, src, bits, KIDS_MADE);
        if (!(bits & SCALARS_MADE))
            make_members(z, t, src, bits | KIDS_MADE, SCALARS_MADE);
        for (void *it = json_object_iter((json_t *)src); it; it = json_object_iter_next((json_t *)src, it)) {
            if (!json_is_null(json_object_iter_value(it)))
                continue;
            if (!set) {
                lua_newtable(L);
                set = lua_gettop(L);
            }
            lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
            lua_pushboolean(L, 1);
            lua_rawset(L, set);
        }
    } else {
        struct sc sc = z->sc;
        size_t n = json_array_size(src);
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(src, i);
            if (json_is_null(e)) {
                set = -1;
                continue;
            }
            if (is_container(e))
                push_lazy(z, e);
            else
                push_scalar(&sc, e);
            lua_rawseti(L, t, (lua_Integer)i + 1);
        }
        if (set) {
            lua_pushinteger(L, (lua_Integer)n);
            set = lua_gettop(L);
        }
    }
    if (set) { /* the null members' keys, or the length of an array with holes */
        lua_rawgetp(L, LUA_REGISTRYINDEX, &nulls_key);
        lua_pushvalue(L, t);
        lua_pushvalue(L, set);
        lua_rawset(L, -3);
    }
    lua_pushnil(L);
    lua_rawsetp(L, t, epoch_key(z));
    lua_rawgetp(L, LUA_REGISTRYINDEX, obj ? &object_mt_key : &array_mt_key);
    lua_setmetatable(L, t);
    lua_settop(L, top);
}

/* The metamethods run only for tables with a lazy metatable: one that is not lazy in
 * this call was cut from an earlier call's JSON. */
static const json_t *lazy_self(const struct lz *z, uintptr_t *bits)
{
    const json_t *src = lazy_src(z, 1, bits);
    if (!src)
        luaL_error(z->L, "%s", stale_text);
    return src;
}

static int lazy_obj_index(lua_State *L)
{
    struct lz z;
    uintptr_t bits;
    lz_up(L, &z);
    const json_t *src = lazy_self(&z, &bits);
    if (lua_type(L, 2) != LUA_TSTRING)
        return 0; /* an object has string keys only */
    size_t len;
    const char *k = lua_tolstring(L, 2, &len);
    const json_t *v = json_object_getn(src, k, len);
    if (!v || json_is_null(v))
        return 0;
    uintptr_t made = is_container(v) ? KIDS_MADE : SCALARS_MADE;
    if (bits & made)
        return 0; /* stored, then deleted by the script */
    make_members(&z, 1, src, bits, made);
    lua_settop(L, 2);
    lua_rawget(L, 1);
    return 1;
}

/* Every other metamethod: convert the table, then do the raw operation. */
static void lazy_touch(lua_State *L)
{
    struct lz z;
    uintptr_t bits;
    lz_up(L, &z);
    lazy_self(&z, &bits);
    materialise(&z, 1);
}

static int lazy_arr_index(lua_State *L)
{
    lazy_touch(L);
    lua_settop(L, 2);
    lua_rawget(L, 1);
    return 1;
}

static int lazy_len(lua_State *L)
{
    lazy_touch(L);
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, 1));
    return 1;
}

static int lazy_newindex(lua_State *L)
{
    lazy_touch(L);
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 0;
}

static int lazy_pairs(lua_State *L)
{
    lazy_touch(L);
    lua_pushcfunction(L, fl_lua_json_next);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static void lazy_open(lua_State *L)
{
    static const char *const events[] = {"__index", "__len", "__newindex", "__pairs"};
    static const lua_CFunction fns[2][4] = {{lazy_obj_index, lazy_len, lazy_newindex, lazy_pairs},
                                            {lazy_arr_index, lazy_len, lazy_newindex, lazy_pairs}};
    lua_createtable(L, 0, 4);
    int omt = lua_gettop(L);
    lua_createtable(L, 0, 4);
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 4; i++) {
            lua_rawgetp(L, LUA_REGISTRYINDEX, &ctx_key);
            lua_pushvalue(L, omt);
            lua_pushvalue(L, omt + 1);
            lua_getiuservalue(L, -3, 1);
            lua_pushcclosure(L, fns[m][i], 4);
            lua_setfield(L, omt + m, events[i]);
        }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lazy_amt_key);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lazy_omt_key);
}

int fl_lua_json_next(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2); /* next(t) is next(t, nil) */
    if (lua_getmetatable(L, 1)) {
        int top = lua_gettop(L);
        struct lz z;
        lz_reg(L, &z);
        if (lua_rawequal(L, top, z.omt) || lua_rawequal(L, top, z.amt)) {
            uintptr_t bits;
            if (!lazy_src(&z, 1, &bits))
                return luaL_error(L, "%s", stale_text);
            materialise(&z, 1);
        }
    }
    lua_settop(L, 2);
    if (lua_next(L, 1))
        return 2;
    lua_pushnil(L);
    return 1;
}

int fl_lua_push_json_lazy(lua_State *L, const json_t *v, char **err)
{
    if (!v || !is_container(v))
        return fl_lua_push_json(L, v, err);
    if (err)
        *err = NULL;
    int top = lua_gettop(L);
    struct lz z;
    lz_reg(L, &z);
    push_lazy(&z, v);
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
    return 0;
}

void fl_lua_json_end_call(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &ctx_key);
    struct ctx *x = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (x)
        x->epoch++;
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
    const void *lomt, *lamt; /* the lazy metatables */
    void *ekey;            /* the key lazy tables of this call hold their JSON under */
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

/* *out: the object of the cnt members m, keys sorted; the members' values are consumed
 * whatever happens. */
static int finish_object(struct conv *c, struct member *m, size_t cnt, int depth, json_t **out)
{
    qsort(m, cnt, sizeof *m, cmp_member);
    *out = json_object();
    for (size_t i = 0; i < cnt; i++) {
        if (json_object_setn_new(*out, m[i].key, m[i].klen, m[i].val)) {
            m[i].val = NULL; /* jansson dropped it */
            c->seg[depth] = (struct seg){m[i].key, m[i].klen, 0};
            c->depth = depth + 1;
            int rc = fail(c, "key is not valid UTF-8");
            c->depth = depth;
            json_decref(*out);
            *out = NULL;
            free_members(m + i + 1, cnt - i - 1);
            return rc;
        }
    }
    return 0;
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
    rc = finish_object(c, m, cnt, depth, out);
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

static int lazy_to_json(struct conv *c, int t, void *mark, int depth, json_t **out);

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
    if (lua_rawgetp(L, t, c->ekey) == LUA_TLIGHTUSERDATA) {
        void *mark = lua_touserdata(L, -1);
        lua_pop(L, 1);
        return lazy_to_json(c, t, mark, depth, out);
    }
    lua_pop(L, 1);
    if (lua_getmetatable(L, t)) { /* lazy, but not in this call */
        const void *mt = lua_topointer(L, -1);
        lua_pop(L, 1);
        if (mt == c->lomt || mt == c->lamt)
            return fail(c, "%s", stale_text);
    }

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

/* ---- lazy tables back to JSON ----
 *
 * What fl_lua_push_json's table would give, read straight from the JSON: object keys
 * sorted; a real with an integral value an integer (it went through a Lua float); with
 * FL_LUA_JSON_DROP_EMPTY, an object or array with no non-null member left out and
 * nulls of objects not written (a table's entries are its non-null members). */

static int copy_json(struct conv *c, const json_t *v, int depth, json_t **out);

static int copy_child(struct conv *c, const json_t *v, int depth, const char *key, size_t klen, lua_Integer i,
                      json_t **out)
{
    c->seg[depth] = (struct seg){key, klen, i};
    c->depth = depth + 1;
    int rc = copy_json(c, v, depth + 1, out);
    c->depth = depth;
    return rc;
}

/* Members of object src into m (room for all): its nulls unless dropped, and the
 * non-null ones that `bits` (MADE_BITS) does not say are stored; *cnt the count. */
static int copy_members(struct conv *c, const json_t *src, uintptr_t bits, int depth, struct member *m, size_t *cnt)
{
    for (void *it = json_object_iter((json_t *)src); it; it = json_object_iter_next((json_t *)src, it)) {
        const json_t *val = json_object_iter_value(it);
        const char *key = json_object_iter_key(it);
        size_t klen = json_object_iter_key_len(it);
        json_t *v = NULL;
        if (json_is_null(val)) {
            if (!c->drop_empty)
                m[(*cnt)++] = (struct member){key, klen, json_null()};
            continue;
        }
        if (bits & (is_container(val) ? KIDS_MADE : SCALARS_MADE))
            continue;
        int rc = copy_child(c, val, depth, key, klen, 0, &v);
        if (rc == UNTYPED_EMPTY)
            continue;
        if (rc)
            return rc;
        m[(*cnt)++] = (struct member){key, klen, v};
    }
    return 0;
}

/* Non-null members of src that `bits` does not say are stored. */
static size_t nonnull(const json_t *src, uintptr_t bits)
{
    size_t n = 0;
    if (json_is_array(src)) {
        for (size_t i = 0; i < json_array_size(src); i++)
            n += !json_is_null(json_array_get(src, i));
        return n;
    }
    for (void *it = json_object_iter((json_t *)src); it; it = json_object_iter_next((json_t *)src, it)) {
        const json_t *val = json_object_iter_value(it);
        n += !json_is_null(val) && !(bits & (is_container(val) ? KIDS_MADE : SCALARS_MADE));
    }
    return n;
}

/* The object of the lazy object t (src): its nulls from src, and its other members
 * from src when not stored yet (`bits`, MADE_BITS), else from t, where the script may
 * have replaced or deleted them (raw writes: the table stays lazy). */
static int lazy_object(struct conv *c, int t, const json_t *src, uintptr_t bits, int depth, json_t **out)
{
    lua_State *L = c->L;
    size_t raw = 0;
    if (bits) {
        lua_pushnil(L);
        while (lua_next(L, t)) {
            lua_pop(L, 1);
            raw += lua_type(L, -1) == LUA_TSTRING;
        }
    }
    if (c->drop_empty && nonnull(src, bits) + raw == 0)
        return UNTYPED_EMPTY;
    struct member small[32], *m = small;
    size_t cnt = 0, cap = json_object_size(src) + raw;
    if (cap > 32)
        m = fl_malloc(cap * sizeof *m);
    int rc = copy_members(c, src, bits, depth, m, &cnt);
    if (!rc && bits) {
        lua_pushnil(L);
        while (lua_next(L, t)) {
            if (lua_type(L, -2) != LUA_TSTRING) { /* the epoch key */
                lua_pop(L, 1);
                continue;
            }
            size_t klen;
            const char *key = lua_tolstring(L, -2, &klen);
            json_t *v = NULL;
            rc = to_child(c, lua_gettop(L), depth, key, klen, 0, &v);
            lua_pop(L, 1);
            if (rc == UNTYPED_EMPTY) {
                rc = 0;
                continue;
            }
            if (rc) {
                lua_pop(L, 1);
                break;
            }
            m[cnt++] = (struct member){key, klen, v};
        }
    }
    if (!rc) {
        rc = finish_object(c, m, cnt, depth, out);
        cnt = 0;
    }
    free_members(m, cnt);
    if (m != small)
        free(m);
    return rc;
}

static int copy_json(struct conv *c, const json_t *v, int depth, json_t **out)
{
    *out = NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
    case JSON_ARRAY: break;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            *out = json_integer((json_int_t)d);
        else
            *out = json_real(d);
        return 0;
    }
    case JSON_STRING: *out = json_stringn_nocheck(json_string_value(v), json_string_length(v)); return 0;
    case JSON_INTEGER: *out = json_integer(json_integer_value(v)); return 0;
    case JSON_TRUE: *out = json_true(); return 0;
    case JSON_FALSE: *out = json_false(); return 0;
    default: *out = json_null(); return 0;
    }
    if (depth >= FL_LUA_MAX_DEPTH)
        return fail(c, "nesting deeper than %d levels", FL_LUA_MAX_DEPTH);
    if (c->drop_empty && nonnull(v, 0) == 0)
        return UNTYPED_EMPTY;
    if (json_is_object(v))
        return lazy_object(c, 0, v, 0, depth, out);
    json_t *arr = json_array();
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        json_t *x = json_null();
        int rc = json_is_null(e) ? 0 : copy_child(c, e, depth, NULL, 0, (lua_Integer)i, &x);
        if (rc == UNTYPED_EMPTY) /* only when dropping: left out, the rest move up */
            continue;
        if (rc) {
            json_decref(arr);
            return rc;
        }
        json_array_append_new(arr, x);
    }
    *out = arr;
    return 0;
}

/* The lazy table t (mark: its pointer and bits) as JSON, converting nothing in L. */
static int lazy_to_json(struct conv *c, int t, void *mark, int depth, json_t **out)
{
    uintptr_t p = (uintptr_t)mark;
    const json_t *src = (const json_t *)(p & ~MADE_BITS);
    if (json_is_array(src) || !(p & MADE_BITS))
        return copy_json(c, src, depth, out);
    return lazy_object(c, t, src, p & MADE_BITS, depth, out);
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
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_omt_key);
    c->lomt = lua_topointer(L, -1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_amt_key);
    c->lamt = lua_topointer(L, -1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &ctx_key);
    const struct ctx *x = lua_touserdata(L, -1);
    c->ekey = x ? (void *)(uintptr_t)x->epoch : NULL;
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
