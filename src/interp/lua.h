/* lua.h - the Lua interpreter backend: Karmada ResourceInterpreterCustomization scripts
 * run unchanged, sandboxed, on a pool of reusable Lua 5.4 states.
 *
 * A ResourceInterpreterCustomization (config.karmada.io/v1alpha1) names a target
 * (spec.target.apiVersion, spec.target.kind) and up to eight Lua scripts under
 * spec.customizations, one per interpreter operation:
 *
 *   rule (spec.customizations.<rule>.luaScript)  function the script defines          operation
 *   retention                  Retain(desiredObj, observedObj) -> desiredObj         FL_INTERP_RETAIN
 *   replicaResource            GetReplicas(obj) -> replica, requirement              FL_INTERP_REPLICA
 *   componentResource          GetComponents(desiredObj) -> {{name, replicas,        FL_INTERP_COMPONENT
 *                                replicaRequirements}, ...} or nil
 *   replicaRevision            ReviseReplica(obj, desiredReplica) -> obj             FL_INTERP_REVISE_REPLICA
 *   statusReflection           ReflectStatus(observedObj) -> status                  FL_INTERP_REFLECT_STATUS
 *   statusAggregation          AggregateStatus(desiredObj, statusItems) -> desiredObj FL_INTERP_AGGREGATE_STATUS
 *   healthInterpretation       InterpretHealth(observedObj) -> bool                  FL_INTERP_HEALTH
 *   dependencyInterpretation   GetDependencies(desiredObj) -> {{apiVersion, kind, namespace, name}, ...}
 *                                                                                    FL_INTERP_DEPENDENCY
 *
 * statusItems is the binding's aggregatedStatus as JSON: an array of
 * {clusterName, status, applied, appliedMessage, health}, or nil when there are no items
 * (Karmada passes its empty list as nil, and its scripts test `statusItems == nil`).
 * GetReplicas' requirement is a ReplicaRequirements table ({nodeClaim = {nodeSelector,
 * tolerations, hardNodeAffinity}, resourceRequest = {cpu = "100m", ...}, namespace,
 * priorityClassName}) or nil; resourceRequest values may be quantity strings or numbers
 * and come back as canonical quantity strings. GetComponents returns an array of
 * Karmada's Components, each {name (unique, at most 32 characters), replicas,
 * replicaRequirements = {nodeClaim, resourceRequest, priorityClassName}}, checked and made
 * canonical by fl_interp_check_components (unknown members dropped), or nil for none.
 * GetDependencies may return nil (no
 * dependencies); each reference needs apiVersion and kind, and a name or a labelSelector.
 *
 * Which customization answers: customizations are taken in metadata.name order (strcmp);
 * for each operation but dependencies the first one with a script for the target's
 * (apiVersion, kind) answers, as Karmada's merge keeps the first rule it meets. For
 * dependencies every customization's script for the target runs and the references are
 * merged, sorted by (apiVersion, kind, namespace, name) and de-duplicated, as in Karmada.
 *
 * The pieces, one file each:
 *   lua_sandbox.c  the pool of lua_State, the sandboxed globals, the per-call instruction
 *                  budget and time limit, the per-state memory cap, the guard on costly
 *                  string patterns, the cache of compiled scripts;
 *   lua_json.c     JSON <-> Lua values (rules below);
 *   lua_kube.c     the `kube` module (resourceAdd, accuratePodRequirements,
 *                  getPodDependencies, getResourceQuantity), a global and require("kube");
 *   lua_backend.c  the fl_interp_backend built from a set of customizations.
 * docs/internals/lua.md explains the design and gives measured costs.
 *
 * JSON <-> Lua (both directions are exact inverses for anything that came from JSON):
 *   - object -> table marked with the shared "object" metatable; array -> 1-based
 *     sequence marked with the shared "array" metatable. The marks only decide what an
 *     *empty* table becomes on the way back; a non-empty table is an array when its keys
 *     are exactly the integers 1..n, an object when every key is a string, else an error.
 *   - An unmarked empty table (made by the script, e.g. `status.conditions = {}`) has no
 *     type: as the value of an object member it is left out (absent means empty to
 *     Kubernetes, while {} for an array field or [] for an object field would fail
 *     validation; Karmada drops such fields too); at the top level or as an array element
 *     it becomes {}.
 *   - integer -> lua integer (int64 exact); real -> lua float; a float coming back with an
 *     exact integral value within int64 becomes an integer (Lua 5.1 scripts compute
 *     `x / 2`); NaN and infinities are errors.
 *   - null -> nil: an object member that is null is absent in Lua, so `obj.status == nil`
 *     holds for a null status; the table remembers its null members and they come back as
 *     null unless the script set them. A null array element leaves a hole that comes back
 *     as null (the array remembers its length).
 *   - strings are bytes both ways; a string that is not UTF-8 cannot become JSON.
 *   - Errors back to JSON (FL_EINVAL, message naming the path, e.g. "status.x[2]", indexes
 *     0-based as in Kubernetes field paths): functions, userdata, threads, keys that are
 *     neither strings nor a 1..n sequence, sparse arrays (an index beyond twice the
 *     element count, unless JSON made the holes), NaN/inf, invalid UTF-8, nesting deeper
 *     than FL_LUA_MAX_DEPTH, a table containing itself.
 *   - An operation's arguments are handed over lazily (fl_lua_push_json_lazy): a table
 *     converts its members as the script reaches them, with the same answers as above,
 *     so a call costs what its script reads rather than the size of its input, and the
 *     memory cap counts only what was converted. A table kept (in an upvalue) past its
 *     call raises when used in a later one.
 *
 * Sandbox: base functions without load, loadstring, dofile, loadfile, collectgarbage,
 * rawget, rawset, rawequal, rawlen, getmetatable, setmetatable (as in Karmada, which
 * replaces them with functions that raise an error: so do we); print is a no-op; string
 * (without string.dump), table, math, os with time and date only (Karmada's safe os);
 * `unpack` as table.unpack for Lua 5.1 scripts; `kube` global and require("kube") (the
 * only module require finds). Each (customization, operation) runs in its own global
 * table (_ENV) reading through to its own copy of the shared, read-only base's entries,
 * so customizations cannot see or change each other's globals or the libraries; a nil
 * assigned to a global named like a built-in reads nil for the rest of the call, and
 * every call starts from the globals as the script's top level left them (nothing a call
 * writes reaches the next). string.find/match/gmatch/gsub
 * refuse a pattern whose backtracking could run for a large part of a second on the
 * given subject (matching runs in C, where the limits cannot stop it).
 *
 * Errors of operations follow interp.h (the registry adds backend and object); the
 * backend's own text names the customization, the Lua function and the script line:
 *   customization "clone-set": InterpretHealth: [string "healthInterpretation"]:4: attempt to index a nil value
 *   customization "clone-set": InterpretHealth: instruction budget of 100000000 exhausted
 *   customization "clone-set": InterpretHealth: time limit of 1000 ms exceeded
 *   customization "clone-set": InterpretHealth: memory cap of 64 MiB exceeded
 *   customization "clone-set": GetReplicas: replica: must be a non-negative integer, got -1
 * All are FL_EINVAL (the customization, not the server, is wrong).
 *
 * Threads: every function here may be called from any thread unless it says otherwise. */
#ifndef FL_INTERP_LUA_H
#define FL_INTERP_LUA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/interp.h"

struct lua_State;

/* ---- limits ---- */

/* Deepest nesting of tables/objects converted in either direction. */
#define FL_LUA_MAX_DEPTH 256

/* Limits of a backend's (or one offline run's) Lua states. Zero in a field means its
 * default. */
typedef struct fl_lua_limits {
    uint64_t instructions; /* per call: Lua VM instructions before the call is stopped;
                            * default FL_LUA_DEFAULT_INSTRUCTIONS: 0.6 to 1.3 s of plain
                            * Lua on the 2-core machine (80-160 M instructions/s) */
    size_t memory;         /* per state: bytes the state may hold; default 64 MiB */
    unsigned states;       /* most states the pool holds (calls beyond wait); default 16 */
    unsigned timeout_ms;   /* per call: wall-clock limit, checked every 256 K instructions
                            * (Karmada stops a script after 1 s); default 1000. It bounds
                            * scripts whose instructions are expensive C calls
                            * (string.format in a loop runs ~16 M instructions/s). */
} fl_lua_limits;

#define FL_LUA_DEFAULT_INSTRUCTIONS 100000000u
#define FL_LUA_DEFAULT_TIMEOUT_MS 1000u
#define FL_LUA_DEFAULT_MEMORY ((size_t)64 << 20)
#define FL_LUA_DEFAULT_STATES 16u

/* ---- the backend ---- */

typedef struct fl_lua_backend fl_lua_backend;

/* A backend with no customizations. name is what messages and the registry call it
 * ("customization" for users' objects, "bundled" for the ones Flotilla ships); copied.
 * limits NULL (or zero fields) takes the defaults. Never NULL. */
fl_lua_backend *fl_lua_backend_new(const char *name, const fl_lua_limits *limits);

/* Free the backend, its customizations and its states (NULL: no-op). It must have been
 * detached first (fl_lua_backend_detach, or the registry freed) and no call may run. */
void fl_lua_backend_free(fl_lua_backend *b);

/* Register b in ip (fl_interp_add_backend: ahead of every backend already there). From
 * then on set/delete swap b's customizations under fl_interp_edit(ip), so a running call
 * always sees one consistent set. At most one registry at a time. */
void fl_lua_backend_attach(fl_lua_backend *b, fl_interp *ip);

/* Remove b from the registry it is attached to (no-op if none). Waits for running calls. */
void fl_lua_backend_detach(fl_lua_backend *b);

/* Add the customization ric (a ResourceInterpreterCustomization JSON object), or
 * replace the one with the same metadata.name. Every script is compiled, and its chunk
 * run once in a scratch state to check that it defines its function, before anything
 * changes (outside any lock); then the set is swapped. Returns 0, or FL_EINVAL with *err
 * (malloc'd, caller frees; NULL on success; err may be NULL) naming the customization,
 * the rule and the script line, e.g.
 *   customization "clone-set": healthInterpretation: [string "healthInterpretation"]:3: 'end' expected near <eof>
 * or the field that is missing or mistyped (spec.target.kind, ...). On failure the old
 * version, if any, stays. ric is only read. */
int fl_lua_backend_set(fl_lua_backend *b, const json_t *ric, char **err);

/* Remove the customization named name. Returns 0 or FL_ENOTFOUND. */
int fl_lua_backend_delete(fl_lua_backend *b, const char *name);

/* How many customizations b holds. */
size_t fl_lua_backend_count(fl_lua_backend *b);

/* b's pool: states alive now and the bytes its idle states hold (see fl_lua_pool_stats). */
void fl_lua_backend_stats(fl_lua_backend *b, unsigned *states, size_t *idle_bytes);

/* The operations every Lua backend has (self is the fl_lua_backend; the registry is the
 * only caller, under its read lock). fl_lua_backend_attach registers a copy carrying the
 * backend's name, so messages say "customization: ..." or "bundled: ...". has() is a hash lookup of
 * (apiVersion, kind) giving a mask of operations; which customization answers is
 * described at the top of this file. */
extern const fl_interp_backend fl_lua_backend_vtable;

/* ---- checking and running one customization offline (`flotilla ctl interpret`) ---- */

/* Compile every script of ric as fl_lua_backend_set would, without keeping anything.
 * *report (new reference, never NULL when the return is 0 or FL_EINVAL from a script) is
 *   {"name": "...", "target": {"apiVersion": "...", "kind": "..."},
 *    "rules": [{"rule": "retention", "operation": "Retain", "function": "Retain",
 *               "status": "PASS" | "UNSET" | "ERROR",
 *               "line": 3,            -- ERROR only, when the message has a line
 *               "message": "..."},    -- ERROR only
 *              ... one per rule, in the order of the table above]}
 * Returns 0 when no rule is ERROR; FL_EINVAL with *err (first error's text) when one is;
 * FL_EINVAL with *report NULL and *err when ric itself is malformed (no name, no target).
 * err may be NULL. */
int fl_lua_backend_check(const json_t *ric, json_t **report, char **err);

/* Inputs of one operation, as the Lua function receives them. */
typedef struct fl_lua_args {
    const json_t *obj;      /* every operation: desiredObj / observedObj / obj */
    const json_t *observed; /* FL_INTERP_RETAIN: observedObj (NULL: nil) */
    const json_t *items;    /* FL_INTERP_AGGREGATE_STATUS: statusItems array (NULL or []: nil,
                             * unless items_as_given); null elements are nil (holes) */
    bool items_as_given;    /* [] is an empty table, not nil: karmadactl with a --status-file */
    int64_t replicas;       /* FL_INTERP_REVISE_REPLICA: desiredReplica */
} fl_lua_args;

/* Outputs of one operation; zero-initialise, release with fl_lua_result_clear(). */
typedef struct fl_lua_result {
    json_t *obj;          /* RETAIN, REVISE_REPLICA, AGGREGATE_STATUS: the object;
                           * REFLECT_STATUS: the status (NULL when the script returned nil);
                           * DEPENDENCY: the array of references;
                           * COMPONENT: the array of components (NULL when the script
                           * returned nil; the backend's operation answers [] then) */
    int64_t replicas;     /* REPLICA */
    json_t *requirements; /* REPLICA: ReplicaRequirements object, NULL when nil */
    enum fl_health health; /* HEALTH */
} fl_lua_result;

/* Drop r's references and zero it. */
void fl_lua_result_clear(fl_lua_result *r);

/* Run operation op of the customization ric on args, in a fresh state with limits
 * (NULL: defaults), without a registry and without the target check (the object may be
 * of any kind) nor the generic retain rules the registry applies first. Outputs are
 * validated as in the backend. Returns 0 with *res filled; FL_EUNSUPPORTED when ric has
 * no script for op; FL_EINVAL with *err (malloc'd, caller frees; err may be NULL) for a
 * malformed ric, a script that fails or bad output. *res is cleared on failure. */
int fl_lua_run(const json_t *ric, enum fl_interp_op op, const fl_lua_args *args, const fl_lua_limits *limits,
               fl_lua_result *res, char **err);

/* The customization rule name of op ("retention", "replicaResource", ...); "" if none. */
const char *fl_lua_rule_name(enum fl_interp_op op);

/* The Lua function name of op ("Retain", "GetReplicas", ...); "" if none. */
const char *fl_lua_function_name(enum fl_interp_op op);

/* ---- the pool of states (lua_sandbox.c); lua_backend.c is its user ---- */

/* A pool of sandboxed states sharing limits. States are made on demand up to
 * limits.states; a call beyond that waits for one to come back. A state whose call ran
 * out of budget, hit the memory cap or raised any Lua error is closed, not reused. */
typedef struct fl_lua_pool fl_lua_pool;

/* A pool (limits NULL: defaults). Never NULL; no state is made until a call needs one. */
fl_lua_pool *fl_lua_pool_new(const fl_lua_limits *limits);

/* Close every state and free the pool (NULL: no-op). No call may be running. */
void fl_lua_pool_free(fl_lua_pool *p);

/* One script as the states cache it. Its compiled function is cached per state under
 * id, so id must change whenever source does (fl_lua_script_id() gives fresh ones). */
typedef struct fl_lua_script {
    uint64_t id;
    const char *chunkname; /* messages say [string "<chunkname>"]:<line>: the rule name */
    const char *source;
    size_t len;
    const char *function; /* the global the chunk must define: "InterpretHealth", ... */
} fl_lua_script;

/* A process-wide fresh script id (never 0, never repeats). */
uint64_t fl_lua_script_id(void);

/* What one call passes and takes back. push runs in a protected call: it pushes the
 * arguments and returns how many, or returns a negative FL_E* with *err (then the call
 * stops, the state stays clean). collect runs after the function returned, outside any
 * protected call, so it must not raise (fl_lua_to_json qualifies): it reads the
 * nresults results at stack indexes base .. base + nresults - 1 and returns 0 or a
 * negative FL_E* with *err. arg is passed to both. */
typedef struct fl_lua_call {
    int nresults;
    int (*push)(struct lua_State *L, void *arg, char **err);
    int (*collect)(struct lua_State *L, int base, void *arg, char **err);
    void *arg;
} fl_lua_call;

/* Run s's function with c's arguments on a state from p: compile and run the chunk in
 * the script's own _ENV the first time this state sees s->id, then call the cached
 * function under the instruction budget. Returns 0, or FL_EINVAL with *err (malloc'd,
 * never NULL then) holding the Lua message ("[string \"rule\"]:4: ...", "function X is
 * not defined by the script"), "instruction budget of N exhausted", "time limit of N ms
 * exceeded", "memory cap of N MiB exceeded", or push's / collect's own. Any thread; blocks while the pool is full. */
int fl_lua_pool_call(fl_lua_pool *p, const fl_lua_script *s, const fl_lua_call *c, char **err);

/* Drop every state's cached scripts (each state does so the next time it is taken):
 * scripts that will not be asked for again then cost no memory. */
void fl_lua_pool_forget(fl_lua_pool *p);

/* States the pool holds now, and the bytes the idle ones hold (Lua's own allocations). */
void fl_lua_pool_stats(fl_lua_pool *p, unsigned *states, size_t *idle_bytes);

/* Compile and run each of the n scripts' chunks in a scratch sandbox state (limits NULL:
 * defaults) and check that it defines its function. errs[i] (malloc'd) is the message
 * for scripts[i], NULL when it passed. Returns 0 when all passed, else FL_EINVAL. */
int fl_lua_check_scripts(const fl_lua_script *scripts, size_t n, const fl_lua_limits *limits, char **errs);

/* ---- JSON <-> Lua (lua_json.c) ---- */

/* Push v (any JSON value; NULL or null pushes nil) onto L as described above. Must run
 * inside a protected call on L (it allocates and may raise a Lua memory error). Returns
 * 0, or FL_EINVAL with *err (malloc'd) when v nests deeper than FL_LUA_MAX_DEPTH (nothing
 * pushed then). Needs fl_lua_json_open(L) to have run. */
int fl_lua_push_json(struct lua_State *L, const json_t *v, char **err);

/* Push v as fl_lua_push_json does, but lazily: an object or array becomes a table that
 * converts its members from v only when the script reaches them, so a script pays for
 * what it reads, not for the size of its input. What the script can observe is the same
 * as with fl_lua_push_json (reads, #, pairs, ipairs, next, the table library, ==,
 * writes, deletions, and fl_lua_to_json of the table or of any part of it, untouched
 * parts included); the rules are in lua_json.c. v is borrowed, not copied: it must stay
 * alive and unchanged until fl_lua_json_end_call(L), which every call that pushed lazily
 * must make before v goes away. Nesting is checked when the values are reached or
 * converted back, not here. Same context and errors as fl_lua_push_json. */
int fl_lua_push_json_lazy(struct lua_State *L, const json_t *v, char **err);

/* End the call whose arguments fl_lua_push_json_lazy pushed: every table of theirs the
 * script has not converted yet is cut from its JSON, so a script that kept one (in an
 * upvalue) and reads it in a later call gets a Lua error, never freed memory. Raises
 * nothing and allocates nothing in L: callable outside a protected call. */
void fl_lua_json_end_call(struct lua_State *L);

/* `next` for scripts: the base library's next, after converting a lazy table's members
 * (raw iteration must see them all). A lua_CFunction; the sandbox installs it as next. */
int fl_lua_json_next(struct lua_State *L);

/* The value at idx of L as JSON: *out a new reference (NULL for nil: the caller decides
 * what nil means where). Raises no Lua error and does not allocate in L: callable
 * outside a protected call. Returns 0, or FL_EINVAL with *err (malloc'd) naming the path
 * below `what` (e.g. what "status" gives "status.conditions[2].type: ..."). */
int fl_lua_to_json(struct lua_State *L, int idx, const char *what, json_t **out, char **err);

/* As fl_lua_to_json, with the conversion Karmada's engine gives the status ReflectStatus
 * and AggregateStatus return (flags FL_LUA_JSON_DROP_EMPTY): every table with no entries
 * below the top level is left out, whether the script or the input made it and whatever
 * it was ({} or []), members and array elements alike, and JSON nulls the input had in an
 * object are not written back. A table is judged as the script left it: one whose
 * members are all dropped stays, as {}. The top level, empty, is {}. (Karmada encodes
 * every empty table as [] and then deletes the [] it has no reference object for; those
 * two operations give it none, and Lua never holds its nulls.) */
#define FL_LUA_JSON_DROP_EMPTY 1
int fl_lua_to_json_flags(struct lua_State *L, int idx, const char *what, int flags, json_t **out, char **err);

/* Install what the conversions need in L (the shared marker metatables, the null
 * bookkeeping). Protected-call context, as fl_lua_push_json. The sandbox does this for
 * its states; call it only for a state made some other way (tests, fuzzing). */
void fl_lua_json_open(struct lua_State *L);

/* ---- insertion order (lua_order.c) ---- */

/* The script source s (len bytes, valid Lua) with every table constructor wrapped so that
 * the table it makes visits its keys with pairs() in the order they were added, as in
 * Karmada's engine: a new string (*out_len bytes, malloc'd) to compile instead of s, whose
 * chunk must be called with fl_lua_order_table as its one argument; NULL when s makes no
 * table or never names pairs (compile s itself then). Lines stay where they were. Any
 * thread. */
char *fl_lua_order_source(const char *s, size_t len, size_t *out_len);

/* The function a rewritten chunk wraps its constructors in (a lua_CFunction: takes the
 * new table, gives it the ordering metatable, returns it). Needs fl_lua_order_open(L). */
int fl_lua_order_table(struct lua_State *L);

/* Install the ordering metatable in L's registry. Protected-call context. */
void fl_lua_order_open(struct lua_State *L);

/* ---- kube module (lua_kube.c) ---- */

/* Push the kube module table (created once per state, then the same table). Protected
 * call context. */
void fl_lua_kube_push(struct lua_State *L);

#endif
