/* lua_order.c - pairs() in insertion order for the tables a script makes, as Karmada's
 * Lua engine visits them (contract in lua.h, design in docs/internals/lua.md).
 *
 * Karmada runs customizations on a Lua whose tables remember the order their keys were
 * added, and its published test cases depend on it: a script that collects conditions in
 * a table keyed by type and then lists them with pairs() gives them in the order the types
 * were first seen. Lua 5.4 visits keys in hash order, which changes with every state's
 * hash seed, so the same script on the same input could answer differently from one call
 * to the next. Stock Lua gives no hook on table creation or on raw writes, so:
 *
 *   - the source is rewritten before it is compiled (fl_lua_order_source): every table
 *     constructor `{...}` becomes `T{...}` (or `f(T{...})` where it was a call's argument,
 *     `f{...}`), T being a local the chunk receives as its vararg. Only `{` and its
 *     matching `}` are touched (in Lua a brace is always a constructor), after a lexer that
 *     skips strings, long strings and comments; no line is added, so line numbers in
 *     error messages stay the script's own;
 *   - T (fl_lua_order_table) gives the new table a shared metatable whose __newindex runs
 *     when a key is added (Lua calls it for absent keys only: exactly the insertions) and
 *     records that key, the first time, in a list of the table's own (its own metatable,
 *     made then: [1] the keys in order, whose hash part maps each string key to its place;
 *     [2], made when needed, the places of other keys), so a key deleted and set again keeps
 *     its first place, as in Karmada's engine. Integer keys that extend the array part
 *     (1 .. #t + 1) are not recorded: the array part is visited first anyway;
 *   - __pairs visits 1 .. #t, then the constructor's own keys (present before any
 *     __newindex saw them: sorted, numbers before strings, since their written order is
 *     gone), then the recorded keys in order, skipping nil values. It snapshots the keys
 *     when the loop starts, so assigning to existing fields during the loop (allowed in Lua)
 *     is fine.
 * Only a script that names `pairs` is rewritten: order is what pairs() shows, and the rest
 * (most rules) should not pay for it (a table's metamethod call per added key; about a
 * third more time for a script that only fills a status object field by field).
 * Tables made elsewhere (the arguments, which come in converted from JSON, and what the
 * kube library returns) keep Lua's order; Karmada's engine fills those from Go maps, whose
 * order is random, so no script can rely on theirs. next() is the raw one: scripts use it
 * to test for emptiness. The scripts cannot see or replace these metatables (getmetatable,
 * setmetatable, rawset are not in the sandbox). */
#include "interp/lua.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/strbuf.h"

/* Registry key (its address): the shared metatable of constructed tables. */
static const char shared_mt_key = 'O';

/* The name of the local T in rewritten sources. */
#define ORDER_FN "__flotilla_ordered"

/* ---- the metatables ---- */

/* True when key (at idx) is an integer in 1 .. n + 1: the array part, not recorded. */
static bool array_key(lua_State *L, int idx, lua_Integer n)
{
    if (!lua_isinteger(L, idx))
        return false;
    lua_Integer k = lua_tointeger(L, idx);
    return k >= 1 && k <= n + 1;
}

/* Push the table that holds key k's position in t's order: for a string key the list of
 * keys itself (its hash part; the list is its array part), for any other key the table at
 * [2] of the metatable at mt, made when create (else nil when there is none). */
static void push_pos(lua_State *L, int mt, int keys, int k, bool create)
{
    if (lua_type(L, k) == LUA_TSTRING) {
        lua_pushvalue(L, keys);
        return;
    }
    if (lua_rawgeti(L, mt, 2) == LUA_TNIL && create) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawseti(L, mt, 2);
    }
}

/* __newindex(t, k, v): set it, and note k in t's order the first time it is added. */
static int ord_newindex(lua_State *L)
{
    lua_settop(L, 3);
    if (lua_isnil(L, 3))
        return 0; /* nil into an absent key: nothing is added */
    int isint = 0;
    lua_Integer ik = lua_type(L, 2) == LUA_TNUMBER && !lua_isinteger(L, 2) ? lua_tointegerx(L, 2, &isint) : 0;
    if (isint) { /* t[2.0] is t[2], as the table stores it */
        lua_pushinteger(L, ik);
        lua_replace(L, 2);
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_rawset(L, 1); /* raises Lua's own error for a nil or NaN key */
    if (array_key(L, 2, n))
        return 0;
    lua_getmetatable(L, 1); /* 4 */
    if (lua_rawgeti(L, 4, 1) != LUA_TTABLE) { /* 5; the shared one: t gets its own */
        lua_settop(L, 3);
        lua_createtable(L, 2, 2); /* 4: its own */
        lua_rawgetp(L, LUA_REGISTRYINDEX, &shared_mt_key);
        lua_getfield(L, -1, "__newindex");
        lua_setfield(L, 4, "__newindex");
        lua_getfield(L, -1, "__pairs");
        lua_setfield(L, 4, "__pairs");
        lua_pop(L, 1);
        lua_pushvalue(L, 4);
        lua_setmetatable(L, 1);
        lua_newtable(L); /* 5: the keys */
        lua_pushvalue(L, 5);
        lua_rawseti(L, 4, 1);
    }
    push_pos(L, 4, 5, 2, true); /* 6 */
    lua_pushvalue(L, 2);
    if (lua_rawget(L, 6) != LUA_TNIL)
        return 0; /* set before, deleted since: keeps its first place */
    lua_Integer m = (lua_Integer)lua_rawlen(L, 5) + 1;
    lua_pushvalue(L, 2);
    lua_rawseti(L, 5, m);
    lua_pushvalue(L, 2);
    lua_pushinteger(L, m);
    lua_rawset(L, 6);
    return 0;
}

/* The iterator __pairs returns: upvalues t, the snapshot of keys, the position. */
static int ord_iter(lua_State *L)
{
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(3));
    for (;;) {
        if (lua_rawgeti(L, lua_upvalueindex(2), ++i) == LUA_TNIL)
            break;
        lua_pushvalue(L, -1);
        if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
            lua_pushinteger(L, i);
            lua_replace(L, lua_upvalueindex(3));
            return 2;
        }
        lua_pop(L, 2);
    }
    lua_pushinteger(L, i - 1);
    lua_replace(L, lua_upvalueindex(3));
    return 1; /* nil: the end */
}

/* A constructor's key, for sorting. */
struct ckey {
    int kind; /* 0 number, 1 string, 2 anything else (kept in the order found) */
    bool isint;
    lua_Integer i;
    lua_Number d;
    const char *s;
    size_t len;
    int at; /* its index in the table of leftovers */
};

static int ckey_cmp(const void *pa, const void *pb)
{
    const struct ckey *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->kind == 0) {
        if (a->isint && b->isint) {
            if (a->i != b->i)
                return a->i < b->i ? -1 : 1;
        } else {
            lua_Number x = a->isint ? (lua_Number)a->i : a->d, y = b->isint ? (lua_Number)b->i : b->d;
            if (x != y)
                return x < y ? -1 : 1;
        }
    } else if (a->kind == 1) {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, n);
        if (c || a->len != b->len)
            return c ? c : (a->len < b->len ? -1 : 1);
    }
    return a->at < b->at ? -1 : a->at > b->at;
}

/* __pairs(t): the iterator over a snapshot of t's keys in order (see the top). */
static int ord_pairs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1), m = 0;
    lua_createtable(L, (int)(n < 1 << 20 ? n : 0), 0); /* 2: the snapshot */
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, 1, i) != LUA_TNIL) {
            lua_pushinteger(L, i);
            lua_rawseti(L, 2, ++m);
        }
        lua_pop(L, 1);
    }
    int keys = 0;
    lua_getmetatable(L, 1); /* 3 */
    if (lua_rawgeti(L, 3, 1) == LUA_TTABLE)
        keys = lua_gettop(L);
    /* the constructor's keys: neither array part nor recorded */
    lua_newtable(L);
    int lo = lua_gettop(L);
    int c = 0;
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= n)
            continue;
        if (keys) {
            push_pos(L, 3, keys, lua_gettop(L), false);
            bool recorded = false;
            if (!lua_isnil(L, -1)) {
                lua_pushvalue(L, -2);
                recorded = lua_rawget(L, -2) != LUA_TNIL;
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
            if (recorded)
                continue;
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, lo, ++c);
    }
    if (c > 0) {
        /* a userdata, not malloc: a memory error raised below must not leak it */
        struct ckey *ks = lua_newuserdatauv(L, (size_t)c * sizeof *ks, 0);
        for (int j = 0; j < c; j++) {
            struct ckey *k = &ks[j];
            memset(k, 0, sizeof *k);
            k->at = j + 1;
            lua_rawgeti(L, lo, j + 1);
            int t = lua_type(L, -1);
            if (t == LUA_TNUMBER) {
                k->kind = 0;
                k->isint = lua_isinteger(L, -1);
                if (k->isint)
                    k->i = lua_tointeger(L, -1);
                else
                    k->d = lua_tonumber(L, -1);
            } else if (t == LUA_TSTRING) {
                k->kind = 1;
                k->s = lua_tolstring(L, -1, &k->len); /* anchored in lo */
            } else {
                k->kind = 2;
            }
            lua_pop(L, 1);
        }
        qsort(ks, (size_t)c, sizeof *ks, ckey_cmp);
        for (int j = 0; j < c; j++) {
            lua_rawgeti(L, lo, ks[j].at);
            lua_rawseti(L, 2, ++m);
        }
    }
    if (keys) {
        lua_Integer r = (lua_Integer)lua_rawlen(L, keys);
        for (lua_Integer j = 1; j <= r; j++) {
            lua_rawgeti(L, keys, j);
            if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= n)
                lua_pop(L, 1); /* the array part has grown over it: visited there */
            else
                lua_rawseti(L, 2, ++m);
        }
    }
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, ord_iter, 3);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

int fl_lua_order_table(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    if (!lua_getmetatable(L, 1)) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &shared_mt_key);
        lua_setmetatable(L, 1);
    }
    lua_settop(L, 1);
    return 1;
}

void fl_lua_order_open(lua_State *L)
{
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, ord_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, ord_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &shared_mt_key);
}

/* ---- the source ---- */

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* The level of a long bracket opening at s[i] ('[' then n '=' then '['), or -1. */
static int long_open(const char *s, size_t len, size_t i)
{
    if (i >= len || s[i] != '[')
        return -1;
    size_t j = i + 1;
    while (j < len && s[j] == '=')
        j++;
    return j < len && s[j] == '[' ? (int)(j - i - 1) : -1;
}

/* The index just past the long bracket of the given level that opens at s[i]. */
static size_t long_skip(const char *s, size_t len, size_t i, int level)
{
    for (size_t j = i + (size_t)level + 2; j < len; j++) {
        if (s[j] != ']')
            continue;
        size_t k = j + 1;
        int eq = 0;
        while (k < len && s[k] == '=')
            k++, eq++;
        if (eq == level && k < len && s[k] == ']')
            return k + 1;
    }
    return len;
}

static bool keyword(const char *s, size_t n)
{
    static const char *const kw[] = {"and",  "break", "do",    "else", "elseif", "end",   "false", "for",
                                     "function", "goto", "if", "in",   "local",  "nil",   "not",   "or",
                                     "repeat", "return", "then", "true", "until", "while"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strlen(kw[i]) == n && !memcmp(kw[i], s, n))
            return true;
    return false;
}

char *fl_lua_order_source(const char *s, size_t len, size_t *out_len)
{
    /* what the token before a '{' was: one that ends a prefix expression (a name, ')',
     * ']', '}', a string) makes the constructor a call's argument, f{...} */
    enum { T_NONE, T_PREFIX, T_OTHER } prev = T_NONE;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, "local " ORDER_FN "=...;");
    /* for each open '{': whether its '}' closes a call's parenthesis too */
    size_t depth = 0, cap = 64;
    bool *call = fl_malloc(cap * sizeof *call);
    bool any = false, uses_pairs = false;
    size_t i = 0;
    while (i < len) {
        char ch = s[i];
        size_t start = i;
        if (ch == '-' && i + 1 < len && s[i + 1] == '-') {
            int lv = long_open(s, len, i + 2);
            if (lv >= 0) {
                i = long_skip(s, len, i + 2, lv);
            } else {
                while (i < len && s[i] != '\n')
                    i++;
            }
            fl_strbuf_add(&b, s + start, i - start);
            continue; /* a comment is not a token */
        }
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') {
            fl_strbuf_addc(&b, ch);
            i++;
            continue;
        }
        if (ch == '"' || ch == '\'') {
            i++;
            while (i < len && s[i] != ch && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < len)
                    i++;
                i++;
            }
            if (i < len && s[i] == ch)
                i++;
            fl_strbuf_add(&b, s + start, i - start);
            prev = T_PREFIX;
            continue;
        }
        int lv = long_open(s, len, i);
        if (lv >= 0) {
            i = long_skip(s, len, i, lv);
            fl_strbuf_add(&b, s + start, i - start);
            prev = T_PREFIX;
            continue;
        }
        if (name_start(ch)) {
            while (i < len && name_char(s[i]))
                i++;
            fl_strbuf_add(&b, s + start, i - start);
            prev = keyword(s + start, i - start) ? T_OTHER : T_PREFIX;
            if (i - start == 5 && !memcmp(s + start, "pairs", 5))
                uses_pairs = true;
            continue;
        }
        if ((ch >= '0' && ch <= '9') || (ch == '.' && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9')) {
            /* a number: digits, letters, '.', and a sign right after an exponent */
            while (i < len && (name_char(s[i]) || s[i] == '.' ||
                               ((s[i] == '+' || s[i] == '-') && strchr("eEpP", s[i - 1]))))
                i++;
            fl_strbuf_add(&b, s + start, i - start);
            prev = T_OTHER;
            continue;
        }
        if (ch == '{') {
            if (depth == cap)
                call = fl_realloc(call, (cap *= 2) * sizeof *call);
            call[depth++] = prev == T_PREFIX;
            fl_strbuf_adds(&b, prev == T_PREFIX ? "(" ORDER_FN "{" : ORDER_FN "{");
            any = true;
            prev = T_OTHER;
            i++;
            continue;
        }
        if (ch == '}') {
            bool closes_call = depth > 0 && call[--depth];
            fl_strbuf_adds(&b, closes_call ? "})" : "}");
            prev = T_PREFIX;
            i++;
            continue;
        }
        fl_strbuf_addc(&b, ch);
        prev = ch == ')' || ch == ']' ? T_PREFIX : T_OTHER;
        i++;
    }
    free(call);
    if (!any || !uses_pairs) {
        fl_strbuf_close(&b);
        *out_len = 0;
        return NULL;
    }
    *out_len = b.len;
    return fl_strbuf_take(&b);
}
