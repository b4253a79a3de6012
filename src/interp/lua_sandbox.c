/* lua_sandbox.c - the pool of sandboxed Lua 5.4 states that run interpreter scripts
 * (contract in lua.h, design and measurements in docs/internals/lua.md).
 *
 * A state is made once and serves many calls, so nothing a call needs is rebuilt per
 * call: the sandboxed globals (a `base` table of safe functions and read-only proxies of
 * the libraries), and per script a compiled function bound to the script's own global
 * table (_ENV, created when the state first runs that script, reading through to a copy
 * of `base` plus what the chunk defined, and emptied of what a call wrote before the next
 * call: see set_global) sit in the state's registry. A steady-state call is: take an idle state,
 * look the function up by script id, convert the arguments, call it under the count
 * hook, read the results, give the state back.
 *
 * Limits. The instruction budget and the wall-clock limit share one count hook that
 * fires every STEP instructions (a clock read per quarter million instructions is lost
 * in the noise); when either runs out it raises an error and re-arms itself to fire
 * after every instruction, so a script that catches the error with pcall is stopped
 * again at its next instruction. The memory cap is the state's allocator refusing growth past the cap;
 * Lua then collects garbage, retries once and raises a memory error. A state that hit
 * either limit or raised any error while running a script is closed, never reused: a
 * script stopped halfway may have left its globals, or the state's heap, in any shape.
 * Only a call whose arguments failed to convert, or whose results failed validation,
 * leaves its state in the pool (those never leave Lua code half-run).
 *
 * Threads: a state is used by one thread at a time (the pool hands it out); the pool's
 * idle list, its count and its generation are under its mutex. A call blocked on a full
 * pool waits on the condition variable; a runaway script holds only its own state, for
 * at most its budget. */
#include "interp/lua.h"

#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/metrics.h"

/* Registry keys (their addresses). */
static const char base_key = 'b';   /* the shared read-only globals */
static const char cache_key = 'c';  /* script id -> its entry (ENTRY_*) */
static const char kube_key = 'k';   /* the kube proxy require("kube") returns */

/* Instructions between two looks at the budget and the clock. */
#define STEP (1 << 18)

struct lstate {
    lua_State *L;
    size_t used, cap;      /* bytes Lua holds, and the cap */
    bool refused;          /* the allocator refused growth at least once */
    int stopped;           /* why the hook stopped the call: 0, STOP_BUDGET, STOP_TIME */
    uint64_t budget;       /* this call's budget, for the message */
    uint64_t budget_left;  /* what the hook may still re-arm beyond the current step */
    int64_t deadline_ns;   /* this call's wall-clock limit, CLOCK_MONOTONIC */
    uint64_t gen;          /* pool generation this state's cache belongs to */
    struct lstate *next;   /* idle list */
};

struct fl_lua_pool {
    fl_lua_limits lim;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct lstate *idle;
    unsigned total; /* states alive (idle, in use, or being made) */
    uint64_t gen;
};

static fl_lua_limits limits_or_defaults(const fl_lua_limits *in)
{
    fl_lua_limits l = in ? *in : (fl_lua_limits){0};
    if (!l.instructions)
        l.instructions = FL_LUA_DEFAULT_INSTRUCTIONS;
    if (!l.memory)
        l.memory = FL_LUA_DEFAULT_MEMORY;
    if (!l.states)
        l.states = FL_LUA_DEFAULT_STATES;
    if (!l.timeout_ms)
        l.timeout_ms = FL_LUA_DEFAULT_TIMEOUT_MS;
    return l;
}

uint64_t fl_lua_script_id(void)
{
    static _Atomic uint64_t next = 1;
    return atomic_fetch_add(&next, 1);
}

/* ---- allocator and hook ---- */

/* Lua's allocator with a cap. Shrinking never fails (Lua relies on that); growth past
 * the cap returns NULL, which Lua turns into a collection, one retry and then a memory
 * error. ptr == NULL means osize is a type tag, not a size. */
static void *cap_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct lstate *st = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        st->used -= old;
        return NULL;
    }
    if (nsize > old && nsize - old > st->cap - st->used) {
        st->refused = true;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p) {
        st->refused = true;
        return NULL;
    }
    st->used = st->used - old + nsize;
    return p;
}

static struct lstate *state_of(lua_State *L)
{
    return *(struct lstate **)lua_getextraspace(L);
}

static void count_hook(lua_State *L, lua_Debug *ar);

enum { STOP_BUDGET = 1, STOP_TIME };

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Arm the hook for the next step of the budget. */
static void next_step(lua_State *L, struct lstate *st)
{
    uint64_t step = st->budget_left > STEP ? STEP : st->budget_left;
    st->budget_left -= step;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, (int)step);
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    struct lstate *st = state_of(L);
    if (!st->stopped) {
        if (st->budget_left == 0)
            st->stopped = STOP_BUDGET;
        else if (now_ns() >= st->deadline_ns)
            st->stopped = STOP_TIME;
        else {
            next_step(L, st);
            return;
        }
    }
    /* fire again at the very next instruction: a pcall in the script cannot outlast us */
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    luaL_error(L, "%s", st->stopped == STOP_BUDGET ? "instruction budget exhausted" : "time limit exceeded");
}

static void arm(struct lstate *st, const fl_lua_limits *lim)
{
    st->budget = lim->instructions;
    st->budget_left = lim->instructions;
    st->deadline_ns = now_ns() + (int64_t)lim->timeout_ms * 1000000;
    st->stopped = 0;
    next_step(st->L, st);
}

/* ---- pattern matching guard ----
 *
 * Lua's pattern matcher backtracks inside one C call, where no hook fires: three lazy
 * repetitions over 300 bytes (string.find(s, "a-a-a-b")) run for seconds, four for
 * minutes. So find, match, gmatch and gsub first bound the work: a pattern with q
 * repetitions (*, +, -, %b, a back-reference) may try about n^q ways at each of n start
 * positions (one when anchored with ^), so (n + 1)^(q + 1) must stay under
 * PATTERN_STEPS (the real count is lower by about q!, so this refuses only matches that
 * could run for a large part of a second). Plain finds and patterns without repetition
 * are linear and pass. Karmada's shipped scripts match only short strings. */

#define PATTERN_STEPS 1e8

/* Repetitions in pattern p (over-counting is only conservative). */
static int repetitions(const char *p, size_t len)
{
    int q = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '%' && i + 1 < len) {
            char n = p[++i];
            if (n == 'b' || (n >= '1' && n <= '9'))
                q++;
        } else if (c == '[') { /* a set: skip to its closing bracket */
            size_t j = i + 1;
            if (j < len && p[j] == '^')
                j++;
            if (j < len && p[j] == ']')
                j++;
            for (; j < len && p[j] != ']'; j++)
                if (p[j] == '%')
                    j++;
            i = j;
        } else if (c == '*' || c == '+' || c == '-') {
            q++;
        }
    }
    return q;
}

/* Raise when the call's arguments (subject, pattern) could backtrack too long. */
static void check_pattern(lua_State *L, const char *fn, bool can_anchor)
{
    size_t n, plen;
    if (lua_type(L, 1) != LUA_TSTRING || lua_type(L, 2) != LUA_TSTRING)
        return; /* numbers are short; anything else the real function rejects */
    lua_tolstring(L, 1, &n);
    const char *p = lua_tolstring(L, 2, &plen);
    int q = repetitions(p, plen);
    if (q == 0)
        return;
    int power = q + (can_anchor && plen && p[0] == '^' ? 0 : 1);
    if ((double)power * log((double)n + 1) > log(PATTERN_STEPS))
        luaL_error(L, "string.%s: pattern with %d repetitions is too costly on a subject of %I bytes; simplify the "
                      "pattern or shorten the subject", fn, q, (lua_Integer)n);
}

/* The guarded function: upvalue 1 the original, 2 its name, 3 whether ^ anchors. The
 * original runs in this frame (a direct C call: it uses no upvalues of its own), so its
 * errors still name the script's line and the function as the script called it. */
static int guarded(lua_State *L)
{
    const char *fn = lua_tostring(L, lua_upvalueindex(2));
    /* string.find(s, p, init, plain): a plain find is a substring search */
    if (!(fn[0] == 'f' && lua_toboolean(L, 4)))
        check_pattern(L, fn, lua_toboolean(L, lua_upvalueindex(3)));
    return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

/* Replace the matching functions of the string library on top of the stack (the real
 * table, which the string metatable also serves to s:find(...)). */
static void guard_patterns(lua_State *L)
{
    static const struct {
        const char *name;
        bool anchors;
    } fns[] = {{"find", true}, {"match", true}, {"gmatch", false}, {"gsub", true}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        lua_getfield(L, -1, fns[i].name);
        lua_pushstring(L, fns[i].name);
        lua_pushboolean(L, fns[i].anchors);
        lua_pushcclosure(L, guarded, 3);
        lua_setfield(L, -2, fns[i].name);
    }
}

/* ---- the sandboxed globals ---- */

static int sb_noop(lua_State *L)
{
    (void)L;
    return 0;
}

/* What the removed functions do instead of being nil: say why, as Karmada does. */
static int sb_forbidden(lua_State *L)
{
    return luaL_error(L, "%s is not available in the interpreter sandbox", lua_tostring(L, lua_upvalueindex(1)));
}

static int sb_require(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    if (!strcmp(name, "kube")) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &kube_key);
        return 1;
    }
    return luaL_error(L, "module '%s' not found: only \"kube\" can be required", name);
}

static int ro_newindex(lua_State *L)
{
    return luaL_error(L, "%s is read-only", lua_tostring(L, lua_upvalueindex(1)));
}

/* pairs() over a proxy walks the library it stands for. */
static int proxy_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(2)); /* next */
    lua_pushvalue(L, lua_upvalueindex(1)); /* the library */
    lua_pushnil(L);
    return 3;
}

/* base[name] = a read-only proxy of the table on top (popped); next_idx holds `next`. */
static void set_proxy(lua_State *L, int base, int next_idx, const char *name)
{
    int lib = lua_gettop(L);
    lua_newtable(L);
    lua_createtable(L, 0, 4);
    lua_pushvalue(L, lib);
    lua_setfield(L, -2, "__index");
    lua_pushfstring(L, "the %s library", name);
    lua_pushcclosure(L, ro_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, lib);
    lua_pushvalue(L, next_idx);
    lua_pushcclosure(L, proxy_pairs, 2);
    lua_setfield(L, -2, "__pairs");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    if (!strcmp(name, "kube")) {
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &kube_key);
    }
    lua_setfield(L, base, name);
    lua_settop(L, lib - 1);
}

/* Build the sandbox in a new state (a protected call: it allocates). */
static int init_state(lua_State *L)
{
    static const char *const kept[] = {"assert", "error",  "ipairs",   "next", "pairs",   "pcall",
                                       "select", "tonumber", "tostring", "type", "xpcall", "_VERSION"};
    static const char *const forbidden[] = {"load", "loadstring", "dofile", "loadfile", "collectgarbage",
                                            "rawget", "rawset", "rawequal", "rawlen", "getmetatable",
                                            "setmetatable", "getfenv", "setfenv", "module", "newproxy"};
    lua_settop(L, 0);
    luaL_requiref(L, LUA_GNAME, luaopen_base, 0); /* 1: the real globals, never seen by scripts */
    lua_createtable(L, 0, 40);                     /* 2: base */
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        lua_getfield(L, 1, kept[i]);
        lua_setfield(L, 2, kept[i]);
    }
    lua_getfield(L, 1, "next"); /* 3: for the proxies' __pairs */
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++) {
        lua_pushstring(L, forbidden[i]);
        lua_pushcclosure(L, sb_forbidden, 1);
        lua_setfield(L, 2, forbidden[i]);
    }
    lua_pushcfunction(L, fl_lua_json_next); /* next converts a lazy table first */
    lua_setfield(L, 2, "next");
    lua_pushcfunction(L, sb_noop);
    lua_setfield(L, 2, "print");
    lua_pushcfunction(L, sb_require);
    lua_setfield(L, 2, "require");

    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 0);
    lua_pushnil(L); /* bytecode is a way around the text-only loader: none */
    lua_setfield(L, -2, "dump");
    guard_patterns(L);
    set_proxy(L, 2, 3, "string");
    luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 0);
    lua_getfield(L, -1, "unpack"); /* Lua 5.1's global unpack */
    lua_setfield(L, 2, "unpack");
    set_proxy(L, 2, 3, "table");
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 0);
    set_proxy(L, 2, 3, "math");
    /* os: only time and date, as Karmada's safe os library */
    luaL_requiref(L, LUA_OSLIBNAME, luaopen_os, 0);
    lua_createtable(L, 0, 2);
    lua_getfield(L, -2, "time");
    lua_setfield(L, -2, "time");
    lua_getfield(L, -2, "date");
    lua_setfield(L, -2, "date");
    lua_remove(L, -2);
    set_proxy(L, 2, 3, "os");
    fl_lua_kube_push(L);
    set_proxy(L, 2, 3, "kube");

    lua_pushvalue(L, 2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &base_key);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &cache_key);
    fl_lua_json_open(L);
    fl_lua_order_open(L);
    lua_settop(L, 0);
    return 0;
}

/* The text of the error at the top of L: a string, or a word for anything else. */
static char *error_text(lua_State *L)
{
    const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    return fl_strdup(m ? m : "(error object is not a string)");
}

/* Message handler for every protected call: non-string error values get a word (the
 * scripts may error({...})). Runs only on error. */
static int msgh(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING)
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    return 1;
}

static void close_state(struct lstate *st)
{
    if (!st)
        return;
    if (st->L)
        lua_close(st->L);
    free(st);
}

/* A new sandboxed state with the pool's limits, or NULL with *err. */
static struct lstate *new_state(const fl_lua_limits *lim, char **err)
{
    struct lstate *st = fl_calloc(1, sizeof *st);
    st->cap = lim->memory;
    st->L = lua_newstate(cap_alloc, st);
    if (!st->L) {
        *err = fl_asprintf("cannot create a Lua state within the memory cap of %zu bytes", lim->memory);
        free(st);
        return NULL;
    }
    *(struct lstate **)lua_getextraspace(st->L) = st;
    lua_pushcfunction(st->L, init_state);
    if (lua_pcall(st->L, 0, 0, 0) != LUA_OK) {
        char *m = error_text(st->L);
        *err = fl_asprintf("cannot set up a Lua state: %s", m);
        free(m);
        close_state(st);
        return NULL;
    }
    /* most garbage here dies within one call: the generational collector suits it */
    lua_gc(st->L, LUA_GCGEN, 0, 0);
    return st;
}

/* ---- scripts in a state ---- */

/* Slots of a script's cache entry. */
enum { ENTRY_FN = 1, ENTRY_ENV, ENTRY_GLOBALS, ENTRY_OVER, ENTRY_FAST_MT, ENTRY_SLOW_MT };

/* A script's globals. Its _ENV (`env`) starts every call with no entries of its own and
 * the metatable FAST: reads fall through (__index, a table: the VM's fast path) to
 * `globals`, the sandbox's entries copied plus what the chunk defined, as the chunk left
 * them; every write of a name env does not hold reaches set_global (__newindex):
 *  - a name `globals` holds (a built-in, a function of the script) is never stored in env:
 *    the value goes to `over` (nil as the OVER_NIL mark) and env switches to the metatable
 *    SLOW, whose __index (get_global) reads `over` first. So every later write of that
 *    name reaches set_global too, and `error = ''` then `error = nil` reads nil, as in
 *    Karmada's engine (a raw entry in env would let the nil write delete it and the read
 *    fall back to the built-in);
 *  - any other name is stored in env.
 * Either way the entry is noted in the registry (dirty_key) and the next call on the
 * state first empties that env and `over` and puts FAST back (reset_globals), so nothing
 * a call writes reaches the next call and a script that writes no global costs nothing. */
static const char dirty_key = 'd'; /* the entry whose globals a call wrote, or nil */
static const char over_nil = 'n';  /* in `over`: the script assigned nil */

static int get_global(lua_State *L)
{
    lua_rawgeti(L, lua_upvalueindex(1), ENTRY_OVER);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, -2) != LUA_TNIL) {
        if (lua_touserdata(L, -1) == &over_nil)
            lua_pushnil(L);
        return 1;
    }
    lua_rawgeti(L, lua_upvalueindex(1), ENTRY_GLOBALS);
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int set_global(lua_State *L)
{
    lua_settop(L, 3); /* env, key, value */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_rawsetp(L, LUA_REGISTRYINDEX, &dirty_key);
    lua_rawgeti(L, lua_upvalueindex(1), ENTRY_GLOBALS);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, 4) == LUA_TNIL) { /* a name of the call's own */
        lua_settop(L, 3);
        lua_rawset(L, 1);
        return 0;
    }
    lua_rawgeti(L, lua_upvalueindex(1), ENTRY_OVER);
    lua_pushvalue(L, 2);
    if (lua_isnil(L, 3))
        lua_pushlightuserdata(L, (void *)&over_nil);
    else
        lua_pushvalue(L, 3);
    lua_rawset(L, -3);
    lua_rawgeti(L, lua_upvalueindex(1), ENTRY_SLOW_MT);
    lua_setmetatable(L, 1);
    return 0;
}

/* Undo what the last call wrote to the globals of the entry dirty_key names, if any. */
static void reset_globals(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &dirty_key) == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    int entry = lua_gettop(L);
    lua_rawgeti(L, entry, ENTRY_ENV);
    lua_pushnil(L);
    while (lua_next(L, entry + 1)) { /* clearing fields during lua_next is allowed */
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, entry + 1);
    }
    lua_rawgeti(L, entry, ENTRY_FAST_MT);
    lua_setmetatable(L, entry + 1);
    lua_newtable(L);
    lua_rawseti(L, entry, ENTRY_OVER);
    lua_settop(L, entry - 1);
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &dirty_key);
}

/* Push the function of script s, compiling the chunk and running it the first time this
 * state sees s->id (see set_global for the globals it then gets). Raises on compile or
 * run errors. gen is the pool's generation: a state whose cache is older starts a new
 * one. */
static void get_function(lua_State *L, const fl_lua_script *s, uint64_t gen)
{
    struct lstate *st = state_of(L);
    reset_globals(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &cache_key);
    if (st->gen != gen) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &cache_key);
        st->gen = gen;
    }
    int cache = lua_gettop(L);
    if (lua_rawgeti(L, cache, (lua_Integer)s->id) == LUA_TTABLE) {
        lua_rawgeti(L, -1, ENTRY_FN);
        lua_replace(L, cache);
        lua_settop(L, cache);
        return;
    }
    lua_pop(L, 1);
    /* compiled as rewritten for pairs() in insertion order (lua_order.c) when it makes
     * tables and names pairs, else as written; luaL_loadbufferx raises nothing, so ordered
     * is not leaked */
    size_t olen = 0;
    char *ordered = fl_lua_order_source(s->source, s->len, &olen);
    int nargs = ordered ? 1 : 0;
    int lrc = luaL_loadbufferx(L, ordered ? ordered : s->source, ordered ? olen : s->len, s->chunkname, "t");
    free(ordered);
    if (lrc != LUA_OK && nargs) {
        /* a syntax error names what the user wrote: compile that for the message (should it
         * compile, the rewrite broke valid Lua, and its own message is raised, loudly) */
        if (luaL_loadbufferx(L, s->source, s->len, s->chunkname, "t") != LUA_OK)
            lua_error(L);
        lua_pop(L, 1);
    }
    if (lrc != LUA_OK)
        lua_error(L);
    int chunk = lua_gettop(L);
    /* the chunk runs with `globals` as its _ENV: the sandbox's entries, then its own */
    lua_createtable(L, 0, 48);
    int globals = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &base_key);
    lua_pushnil(L);
    while (lua_next(L, globals + 1)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, globals);
    }
    lua_pop(L, 1);
    lua_pushvalue(L, globals);
    lua_setfield(L, globals, "_G");
    lua_pushvalue(L, globals);
    lua_setupvalue(L, chunk, 1); /* a main chunk's only upvalue is _ENV */
    lua_pushvalue(L, chunk);
    if (nargs)
        lua_pushcfunction(L, fl_lua_order_table);
    lua_call(L, nargs, 0);
    lua_pushstring(L, s->function);
    int t = lua_rawget(L, globals);
    if (t != LUA_TFUNCTION) {
        if (t == LUA_TNIL)
            luaL_error(L, "function %s is not defined by the script", s->function);
        luaL_error(L, "%s is a %s, not a function", s->function, lua_typename(L, t));
    }
    int fn = lua_gettop(L);
    lua_createtable(L, 6, 0);
    int entry = lua_gettop(L);
    lua_pushvalue(L, fn);
    lua_rawseti(L, entry, ENTRY_FN);
    lua_pushvalue(L, globals);
    lua_rawseti(L, entry, ENTRY_GLOBALS);
    lua_newtable(L);
    lua_rawseti(L, entry, ENTRY_OVER);
    lua_newtable(L); /* env */
    int env = lua_gettop(L);
    lua_pushvalue(L, env);
    lua_rawseti(L, entry, ENTRY_ENV);
    lua_pushvalue(L, env);
    lua_setfield(L, globals, "_G"); /* from now on a script's _G is its _ENV */
    lua_pushvalue(L, entry);
    lua_pushcclosure(L, set_global, 1);
    int setter = lua_gettop(L);
    lua_createtable(L, 0, 2); /* FAST */
    lua_pushvalue(L, globals);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, setter);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, -1);
    lua_setmetatable(L, env);
    lua_rawseti(L, entry, ENTRY_FAST_MT);
    lua_createtable(L, 0, 2); /* SLOW */
    lua_pushvalue(L, entry);
    lua_pushcclosure(L, get_global, 1);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, setter);
    lua_setfield(L, -2, "__newindex");
    lua_rawseti(L, entry, ENTRY_SLOW_MT);
    /* every closure the chunk made shares its _ENV upvalue: this moves them all to env */
    lua_pushvalue(L, env);
    lua_setupvalue(L, chunk, 1);
    lua_pushvalue(L, entry);
    lua_rawseti(L, cache, (lua_Integer)s->id);
    lua_pushvalue(L, fn);
    lua_replace(L, cache);
    lua_settop(L, cache);
}

struct tramp {
    const fl_lua_script *s;
    const fl_lua_call *c;
    uint64_t gen;
    int rc;    /* push's failure */
    char *err; /* push's message */
};

/* The protected part of a call: function, arguments, call. */
static int trampoline(lua_State *L)
{
    struct tramp *t = lua_touserdata(L, 1);
    lua_settop(L, 0);
    get_function(L, t->s, t->gen);
    if (!t->c)
        return 0;
    int n = t->c->push(L, t->c->arg, &t->err);
    if (n < 0) {
        t->rc = n;
        return 0;
    }
    lua_call(L, n, t->c->nresults);
    return t->c->nresults;
}

/* flotilla_interpreter_lua_limits_total{limit}: calls a limit stopped. */
static void count_limit(int which)
{
    static const char *const names[] = {"instructions", "time", "memory"};
    static fl_metric_series *series[3];
    if (!__atomic_load_n(&series[which], __ATOMIC_ACQUIRE)) {
        /* all three at once: a limit not hit yet shows 0, not nothing */
        fl_metric *f = fl_metric_family(FL_METRIC_COUNTER, "flotilla_interpreter_lua_limits_total",
                                        "Lua customization calls stopped by a limit: the instruction budget, the "
                                        "time limit or the memory cap.",
                                        "limit", NULL, NULL, 0);
        for (int i = 0; i < 3; i++)
            __atomic_store_n(&series[i], fl_metric_with(f, names[i], NULL), __ATOMIC_RELEASE);
    }
    fl_metric_add(__atomic_load_n(&series[which], __ATOMIC_ACQUIRE), 1);
}

static char *cap_text(size_t cap)
{
    if (cap % ((size_t)1 << 20) == 0)
        return fl_asprintf("memory cap of %zu MiB exceeded", cap >> 20);
    return fl_asprintf("memory cap of %zu bytes exceeded", cap);
}

/* Run (s, c) on st. Returns 0 or FL_EINVAL with *err; *dirty says st must be closed. */
static int run(struct lstate *st, const fl_lua_limits *lim, uint64_t gen, const fl_lua_script *s, const fl_lua_call *c,
               bool *dirty, char **err)
{
    lua_State *L = st->L;
    struct tramp t = {s, c, gen, 0, NULL};
    int nres = c ? c->nresults : 0;
    *dirty = false;
    st->refused = false;
    lua_settop(L, 0);
    lua_pushcfunction(L, msgh);
    lua_pushcfunction(L, trampoline);
    lua_pushlightuserdata(L, &t);
    arm(st, lim);
    int status = lua_pcall(L, 1, nres, 1);
    int hit = st->stopped;
    lua_sethook(L, NULL, 0, 0);
    int rc = 0;
    if (status != LUA_OK || hit) {
        *dirty = true;
        free(t.err);
        if (hit == STOP_BUDGET) {
            count_limit(0);
            *err = fl_asprintf("instruction budget of %llu exhausted", (unsigned long long)st->budget);
        } else if (hit == STOP_TIME) {
            count_limit(1);
            *err = fl_asprintf("time limit of %u ms exceeded", lim->timeout_ms);
        } else if (status == LUA_ERRMEM || st->refused) {
            count_limit(2);
            *err = cap_text(st->cap);
        } else
            *err = error_text(L);
        rc = FL_EINVAL;
    } else if (t.rc) {
        *err = t.err ? t.err : fl_strdup(fl_strerror(t.rc));
        rc = t.rc;
    } else if (c) {
        rc = c->collect(L, 2, c->arg, err);
    }
    /* near the cap after a call that caught its memory error: do not carry it on */
    if (st->refused)
        *dirty = true;
    lua_settop(L, 0);
    if (!*dirty) /* the arguments' JSON goes away now: cut the tables still reading it */
        fl_lua_json_end_call(L);
    return rc;
}

/* ---- the pool ---- */

fl_lua_pool *fl_lua_pool_new(const fl_lua_limits *limits)
{
    fl_lua_pool *p = fl_calloc(1, sizeof *p);
    p->lim = limits_or_defaults(limits);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->gen = 1;
    return p;
}

void fl_lua_pool_free(fl_lua_pool *p)
{
    if (!p)
        return;
    for (struct lstate *st = p->idle, *n; st; st = n) {
        n = st->next;
        close_state(st);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* An idle state, a new one, or (pool full) the next one given back. *gen is the pool's
 * generation at that moment. NULL with *err when a new state cannot be made. */
static struct lstate *acquire(fl_lua_pool *p, uint64_t *gen, char **err)
{
    pthread_mutex_lock(&p->mu);
    while (!p->idle && p->total >= p->lim.states)
        pthread_cond_wait(&p->cv, &p->mu);
    *gen = p->gen;
    struct lstate *st = p->idle;
    if (st) {
        p->idle = st->next;
        pthread_mutex_unlock(&p->mu);
        return st;
    }
    p->total++;
    pthread_mutex_unlock(&p->mu);
    /* made outside the lock: other calls go on meanwhile */
    if ((st = new_state(&p->lim, err)))
        return st;
    pthread_mutex_lock(&p->mu);
    p->total--;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void release(fl_lua_pool *p, struct lstate *st, bool dirty)
{
    if (dirty)
        close_state(st); /* outside the lock: closing a big heap takes a while */
    pthread_mutex_lock(&p->mu);
    if (dirty) {
        p->total--;
    } else {
        st->next = p->idle;
        p->idle = st;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int fl_lua_pool_call(fl_lua_pool *p, const fl_lua_script *s, const fl_lua_call *c, char **err)
{
    uint64_t gen;
    bool dirty;
    *err = NULL;
    struct lstate *st = acquire(p, &gen, err);
    if (!st)
        return FL_EINVAL;
    int rc = run(st, &p->lim, gen, s, c, &dirty, err);
    release(p, st, dirty);
    return rc;
}

void fl_lua_pool_forget(fl_lua_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->gen++;
    pthread_mutex_unlock(&p->mu);
}

void fl_lua_pool_stats(fl_lua_pool *p, unsigned *states, size_t *idle_bytes)
{
    size_t bytes = 0;
    pthread_mutex_lock(&p->mu);
    for (struct lstate *st = p->idle; st; st = st->next)
        bytes += st->used;
    if (states)
        *states = p->total;
    pthread_mutex_unlock(&p->mu);
    if (idle_bytes)
        *idle_bytes = bytes;
}

int fl_lua_check_scripts(const fl_lua_script *scripts, size_t n, const fl_lua_limits *limits, char **errs)
{
    fl_lua_limits lim = limits_or_defaults(limits);
    struct lstate *st = NULL;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        errs[i] = NULL;
        bool dirty;
        if (!st && !(st = new_state(&lim, &errs[i]))) {
            rc = FL_EINVAL;
            continue;
        }
        /* generation 0 is never a pool's: each check starts from an empty cache */
        if (run(st, &lim, 0, &scripts[i], NULL, &dirty, &errs[i]))
            rc = FL_EINVAL;
        if (dirty) {
            close_state(st);
            st = NULL;
        }
    }
    close_state(st);
    return rc;
}
