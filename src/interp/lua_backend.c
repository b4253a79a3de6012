/* lua_backend.c - the interpreter backend made of ResourceInterpreterCustomizations:
 * parsing them, checking their scripts, answering has() and running each operation
 * through the state pool (contract in lua.h, design in docs/internals/lua.md).
 *
 * The set of customizations is an immutable `ruleset`: the customizations sorted by
 * name, and a hash table from (apiVersion, kind) to a mask of operations and, per
 * operation, the customization that answers it (the first by name; for dependencies,
 * all of them in name order). Operations read the current ruleset under the registry's
 * read lock; set and delete build a new ruleset outside any lock (checking scripts
 * there too, which takes a scratch Lua state), then swap the pointer under
 * fl_interp_edit(), after which no call can still see the old one, so it is freed at
 * once. Customizations are shared between consecutive rulesets and counted; the
 * counts only change under the backend's writer mutex.
 *
 * Each (customization version, operation) gets a fresh script id when parsed, which is
 * what states cache compiled functions under: a replaced customization's new scripts
 * are compiled on first use, and the old ones are never asked for again (the pool is
 * told to forget them). */
#include "interp/lua.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/quantity.h"
#include "core/selector.h"
#include "interp/requirements.h"
#include "interp/rules.h"

#define NOPS FL_INTERP_OP_COUNT

/* Rule and function names per operation; `order` is the order of the rules in
 * Karmada's CustomizationRules (karmadactl's AllResourceInterpreterCustomizationRules),
 * which reports follow. */
static const struct {
    const char *rule, *function;
} names[NOPS] = {
    [FL_INTERP_RETAIN] = {"retention", "Retain"},
    [FL_INTERP_REPLICA] = {"replicaResource", "GetReplicas"},
    [FL_INTERP_REVISE_REPLICA] = {"replicaRevision", "ReviseReplica"},
    [FL_INTERP_REFLECT_STATUS] = {"statusReflection", "ReflectStatus"},
    [FL_INTERP_AGGREGATE_STATUS] = {"statusAggregation", "AggregateStatus"},
    [FL_INTERP_HEALTH] = {"healthInterpretation", "InterpretHealth"},
    [FL_INTERP_DEPENDENCY] = {"dependencyInterpretation", "GetDependencies"},
    [FL_INTERP_COMPONENT] = {"componentResource", "GetComponents"},
};
static const enum fl_interp_op order[NOPS] = {
    FL_INTERP_RETAIN,         FL_INTERP_REPLICA, FL_INTERP_COMPONENT, FL_INTERP_REVISE_REPLICA, FL_INTERP_REFLECT_STATUS,
    FL_INTERP_AGGREGATE_STATUS, FL_INTERP_HEALTH, FL_INTERP_DEPENDENCY,
};

const char *fl_lua_rule_name(enum fl_interp_op op)
{
    return (unsigned)op < NOPS ? names[op].rule : "";
}

const char *fl_lua_function_name(enum fl_interp_op op)
{
    return (unsigned)op < NOPS ? names[op].function : "";
}

/* ---- customizations ---- */

/* One customization as parsed; immutable once built. */
struct custom {
    /* name first: the set is kept with fl_interp_named_put/drop */
    char *name, *av, *kind;
    fl_lua_script script[NOPS]; /* source NULL: no script for that operation */
    unsigned refs;              /* rulesets holding it (writer mutex) */
};

static void custom_free(struct custom *c)
{
    if (!c)
        return;
    for (int i = 0; i < NOPS; i++)
        free((char *)c->script[i].source);
    free(c->name);
    free(c->av);
    free(c->kind);
    free(c);
}

/* A non-empty string at o[key], or NULL. */
static const char *nonempty(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : NULL;
}

/* Parse ric into *out (scripts not compiled). FL_EINVAL with *err naming the field. */
static int custom_parse(const json_t *ric, struct custom **out, char **err)
{
    *out = NULL;
    if (!json_is_object(ric)) {
        *err = fl_strdup("ResourceInterpreterCustomization must be a JSON object");
        return FL_EINVAL;
    }
    const char *name = nonempty(json_object_get(ric, "metadata"), "name");
    if (!name) {
        *err = fl_strdup("ResourceInterpreterCustomization: metadata.name: must be a non-empty string");
        return FL_EINVAL;
    }
    const json_t *spec = json_object_get(ric, "spec"), *target = json_object_get(spec, "target");
    const char *av = nonempty(target, "apiVersion"), *kind = nonempty(target, "kind");
    if (!json_is_object(spec) || !json_is_object(target) || !av || !kind) {
        *err = fl_asprintf("customization \"%s\": spec.target.%s: must be a non-empty string", name,
                           av ? "kind" : "apiVersion");
        return FL_EINVAL;
    }
    const json_t *cz = json_object_get(spec, "customizations");
    if (cz && !json_is_null(cz) && !json_is_object(cz)) {
        *err = fl_asprintf("customization \"%s\": spec.customizations: must be an object", name);
        return FL_EINVAL;
    }
    struct custom *c = fl_calloc(1, sizeof *c);
    for (int op = 0; op < NOPS; op++) {
        const json_t *rule = json_object_get(cz, names[op].rule), *src;
        if (!rule || json_is_null(rule))
            continue;
        src = json_object_get(rule, "luaScript");
        if (!json_is_object(rule) || (src && !json_is_null(src) && !json_is_string(src))) {
            *err = fl_asprintf("customization \"%s\": spec.customizations.%s%s: must be %s", name, names[op].rule,
                               json_is_object(rule) ? ".luaScript" : "",
                               json_is_object(rule) ? "a string" : "an object");
            custom_free(c);
            return FL_EINVAL;
        }
        /* an empty script is no script, as in Karmada */
        if (!json_string_length(src))
            continue;
        c->script[op] = (fl_lua_script){
            .id = fl_lua_script_id(),
            .chunkname = names[op].rule,
            .source = fl_strndup(json_string_value(src), json_string_length(src)),
            .len = json_string_length(src),
            .function = names[op].function,
        };
    }
    c->name = fl_strdup(name);
    c->av = fl_strdup(av);
    c->kind = fl_strdup(kind);
    *out = c;
    return 0;
}

/* Check every script of c; errs[op] per operation. 0 or FL_EINVAL. */
static int custom_check(const struct custom *c, const fl_lua_limits *lim, char *errs[NOPS])
{
    fl_lua_script s[NOPS];
    char *e[NOPS];
    int idx[NOPS], n = 0;
    for (int op = 0; op < NOPS; op++) {
        errs[op] = NULL;
        if (c->script[op].source) {
            idx[n] = op;
            s[n++] = c->script[op];
        }
    }
    int rc = fl_lua_check_scripts(s, (size_t)n, lim, e);
    for (int i = 0; i < n; i++)
        errs[idx[i]] = e[i];
    return rc;
}

/* ---- rulesets ---- */

struct target {
    uint64_t hash;
    const char *av, *kind; /* borrowed from a customization */
    unsigned mask;
    struct custom *first[NOPS];
    struct custom **deps; /* every customization with a dependency script, name order */
    size_t ndeps;
};

struct ruleset {
    struct custom **v; /* sorted by name */
    size_t n;
    struct target *tab; /* open addressing, cap a power of two (0: empty) */
    size_t cap;
};

static uint64_t target_hash(const char *av, const char *kind)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *av; av++)
        h = (h ^ (unsigned char)*av) * 1099511628211ULL;
    h = (h ^ 0xffu) * 1099511628211ULL; /* no byte of a string: "a"+"bc" differs from "ab"+"c" */
    for (; *kind; kind++)
        h = (h ^ (unsigned char)*kind) * 1099511628211ULL;
    return h;
}

static struct target *target_find(const struct ruleset *rs, const char *av, const char *kind, bool add)
{
    if (!rs || !rs->cap)
        return NULL;
    uint64_t h = target_hash(av, kind);
    for (size_t i = h & (rs->cap - 1);; i = (i + 1) & (rs->cap - 1)) {
        struct target *t = &rs->tab[i];
        if (!t->av) {
            if (!add)
                return NULL;
            t->hash = h;
            t->av = av;
            t->kind = kind;
            return t;
        }
        if (t->hash == h && !strcmp(t->av, av) && !strcmp(t->kind, kind))
            return t;
    }
}

static struct ruleset *ruleset_build(struct custom **v, size_t n)
{
    struct ruleset *rs = fl_calloc(1, sizeof *rs);
    rs->v = v;
    rs->n = n;
    if (!n)
        return rs;
    for (rs->cap = 8; rs->cap < 2 * n; rs->cap *= 2)
        ;
    rs->tab = fl_calloc(rs->cap, sizeof *rs->tab);
    for (size_t i = 0; i < n; i++) {
        struct custom *c = v[i];
        c->refs++;
        struct target *t = target_find(rs, c->av, c->kind, true);
        for (int op = 0; op < NOPS; op++) {
            if (!c->script[op].source)
                continue;
            t->mask |= 1u << op;
            if (op == FL_INTERP_DEPENDENCY) {
                t->deps = fl_realloc(t->deps, (t->ndeps + 1) * sizeof *t->deps);
                t->deps[t->ndeps++] = c;
            } else if (!t->first[op]) {
                t->first[op] = c;
            }
        }
    }
    return rs;
}

/* Drop rs and its holds on customizations (writer mutex held). */
static void ruleset_free(struct ruleset *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n; i++)
        if (--rs->v[i]->refs == 0)
            custom_free(rs->v[i]);
    for (size_t i = 0; i < rs->cap; i++)
        free(rs->tab[i].deps);
    free(rs->tab);
    free(rs->v);
    free(rs);
}

/* ---- the backend ---- */

struct fl_lua_backend {
    char *name;
    fl_lua_limits lim;
    fl_lua_pool *pool;
    fl_interp_backend vt; /* fl_lua_backend_vtable with this backend's name */
    fl_interp_rules rules; /* the customizations; rules.cur is a struct ruleset */
};

static void *rules_build(void *self, void *items, size_t n)
{
    (void)self;
    return ruleset_build(items, n);
}

/* A replaced set's states may hold its scripts' functions: the pool makes fresh ones. */
static void rules_drop(void *self, void *rs)
{
    fl_lua_backend *b = self;
    ruleset_free(rs);
    fl_lua_pool_forget(b->pool);
}

/* The pool's states alive and the bytes its idle ones hold, at each scrape. */
static void scrape_pool(void *ctx)
{
    fl_lua_backend *b = ctx;
    unsigned states = 0;
    size_t idle = 0;
    fl_lua_pool_stats(b->pool, &states, &idle);
    fl_metric_gauge_set("flotilla_interpreter_lua_states",
                        "Sandboxed Lua states alive in a Lua backend's pool (they are made on demand up to the "
                        "limit, and dropped when idle).",
                        "backend", b->name, states);
    fl_metric_gauge_set("flotilla_interpreter_lua_idle_bytes", "Bytes the idle Lua states of a backend's pool hold.",
                        "backend", b->name, (double)idle);
}

fl_lua_backend *fl_lua_backend_new(const char *name, const fl_lua_limits *limits)
{
    fl_lua_backend *b = fl_calloc(1, sizeof *b);
    b->name = fl_strdup(name ? name : "lua");
    b->vt = fl_lua_backend_vtable;
    b->vt.name = b->name;
    if (limits)
        b->lim = *limits;
    b->pool = fl_lua_pool_new(limits);
    fl_interp_rules_init(&b->rules, &b->vt, b, (fl_interp_rules_ops){rules_build, rules_drop});
    fl_metrics_on_scrape(scrape_pool, b);
    return b;
}

void fl_lua_backend_free(fl_lua_backend *b)
{
    if (!b)
        return;
    fl_metrics_remove_hook(scrape_pool, b);
    fl_interp_rules_close(&b->rules);
    fl_lua_pool_free(b->pool);
    free(b->name);
    free(b);
}

void fl_lua_backend_attach(fl_lua_backend *b, fl_interp *ip)
{
    fl_interp_rules_attach(&b->rules, ip);
}

void fl_lua_backend_detach(fl_lua_backend *b)
{
    fl_interp_rules_detach(&b->rules);
}

int fl_lua_backend_set(fl_lua_backend *b, const json_t *ric, char **err)
{
    struct custom *c;
    char *errs[NOPS], *e = NULL;
    if (err)
        *err = NULL;
    int rc = custom_parse(ric, &c, &e);
    if (rc)
        goto out;
    if (custom_check(c, &b->lim, errs)) {
        rc = FL_EINVAL;
        for (int i = 0; i < NOPS; i++) {
            int op = order[i];
            if (errs[op] && !e)
                e = fl_asprintf("customization \"%s\": %s: %s", c->name, names[op].rule, errs[op]);
            free(errs[op]);
        }
        custom_free(c);
        goto out;
    }
    fl_interp_rules_put(&b->rules, c);
out:
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

int fl_lua_backend_delete(fl_lua_backend *b, const char *name)
{
    return fl_interp_rules_remove(&b->rules, name);
}

size_t fl_lua_backend_count(fl_lua_backend *b)
{
    return fl_interp_rules_count(&b->rules);
}

void fl_lua_backend_stats(fl_lua_backend *b, unsigned *states, size_t *idle_bytes)
{
    fl_lua_pool_stats(b->pool, states, idle_bytes);
}

/* ---- validating what scripts return ---- */

static const char *type_of(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TNUMBER)
        return lua_isinteger(L, idx) ? "an integer" : "a number";
    static const char *const words[] = {"nil", "a boolean", "a light userdata", "a number", "a string",
                                        "a table", "a function", "a userdata", "a thread"};
    int t = lua_type(L, idx);
    return t >= 0 && t < 9 ? words[t] : "nothing";
}

/* GetReplicas' requirement: a ReplicaRequirements object, quantities made canonical; a
 * failure names the field below "requirement". */
static int check_requirements(json_t *req, char **err)
{
    if (!json_is_object(req)) {
        *err = fl_strdup("requirement: must be a table of ReplicaRequirements");
        return FL_EINVAL;
    }
    char *why = NULL;
    int rc = fl_interp_check_requirements(req, &why);
    if (rc) {
        *err = fl_asprintf("requirement.%s", why);
        free(why);
    }
    return rc;
}

/* GetComponents' answer: an array of Components, canonical; a failure names the element
 * and field below "components". */
static int check_components(json_t *comps, char **err)
{
    char *why = NULL;
    int rc = fl_interp_check_components(comps, &why);
    if (rc) {
        *err = fl_asprintf("components%s", why);
        free(why);
    }
    return rc;
}

/* One dependency reference, element i. */
static int check_dependency(const json_t *d, size_t i, char **err)
{
    if (!json_is_object(d)) {
        *err = fl_asprintf("dependencies[%zu]: must be a table {apiVersion, kind, namespace, name}", i);
        return FL_EINVAL;
    }
    static const char *const need[] = {"apiVersion", "kind"};
    for (int k = 0; k < 2; k++)
        if (!nonempty(d, need[k])) {
            *err = fl_asprintf("dependencies[%zu].%s: must be a non-empty string", i, need[k]);
            return FL_EINVAL;
        }
    static const char *const opt[] = {"namespace", "name"};
    for (int k = 0; k < 2; k++) {
        const json_t *v = json_object_get(d, opt[k]);
        if (v && !json_is_string(v)) {
            *err = fl_asprintf("dependencies[%zu].%s: must be a string", i, opt[k]);
            return FL_EINVAL;
        }
    }
    const json_t *sel = json_object_get(d, "labelSelector");
    if (sel) {
        fl_labelsel *ls = NULL;
        char *e = NULL;
        if (!json_is_object(sel) || fl_labelsel_from_json(sel, &ls, &e)) {
            *err = fl_asprintf("dependencies[%zu].labelSelector: %s", i, e ? e : "must be a label selector object");
            free(e);
            return FL_EINVAL;
        }
        fl_labelsel_free(ls);
    }
    if (!nonempty(d, "name") && !sel) {
        *err = fl_asprintf("dependencies[%zu]: needs a name or a labelSelector", i);
        return FL_EINVAL;
    }
    return 0;
}

/* ---- one call ---- */

struct opcall {
    enum fl_interp_op op;
    const fl_lua_args *in;
    fl_lua_result *out;
};

static int push_arg(lua_State *L, const json_t *v, const char *what, char **err)
{
    char *e = NULL;
    /* the arguments outlive the call (the sandbox ends it: fl_lua_json_end_call) */
    int rc = fl_lua_push_json_lazy(L, v, &e);
    if (rc) {
        *err = fl_asprintf("%s: %s", what, e ? e : "cannot be converted");
        free(e);
    }
    return rc;
}

static int op_push(lua_State *L, void *arg, char **err)
{
    struct opcall *oc = arg;
    const fl_lua_args *in = oc->in;
    int rc;
    if ((rc = push_arg(L, in->obj, oc->op == FL_INTERP_REFLECT_STATUS || oc->op == FL_INTERP_HEALTH ? "observedObj"
                                                                                                   : "desiredObj",
                       err)))
        return rc;
    switch (oc->op) {
    case FL_INTERP_RETAIN:
        if ((rc = push_arg(L, in->observed, "observedObj", err)))
            return rc;
        return 2;
    case FL_INTERP_REVISE_REPLICA: lua_pushinteger(L, (lua_Integer)in->replicas); return 2;
    case FL_INTERP_AGGREGATE_STATUS:
        /* no items is nil, as Karmada passes a binding's empty list; karmadactl passes
         * the items of a status file, so there [] is an empty table */
        if (!in->items || (!in->items_as_given && !json_array_size(in->items)))
            lua_pushnil(L);
        else if ((rc = push_arg(L, in->items, "statusItems", err)))
            return rc;
        return 2;
    default: return 1;
    }
}

/* The table at idx as the object an operation returns; flags as fl_lua_to_json_flags. */
static int object_result(lua_State *L, int idx, const char *what, int flags, json_t **out, char **err)
{
    *out = NULL;
    if (lua_type(L, idx) != LUA_TTABLE) {
        *err = fl_asprintf("%s: must be a table (the object), got %s", what, type_of(L, idx));
        return FL_EINVAL;
    }
    int rc = fl_lua_to_json_flags(L, idx, what, flags, out, err);
    if (!rc && !json_is_object(*out)) {
        *err = fl_asprintf("%s: must be an object, got an array", what);
        json_decref(*out);
        *out = NULL;
        rc = FL_EINVAL;
    }
    return rc;
}

static int op_collect(lua_State *L, int base, void *arg, char **err)
{
    struct opcall *oc = arg;
    fl_lua_result *r = oc->out;
    int rc;
    switch (oc->op) {
    case FL_INTERP_HEALTH:
        if (lua_type(L, base) != LUA_TBOOLEAN) {
            *err = fl_asprintf("return value: must be a boolean, got %s", type_of(L, base));
            return FL_EINVAL;
        }
        r->health = lua_toboolean(L, base) ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
        return 0;
    case FL_INTERP_REPLICA: {
        lua_Integer n = 0;
        bool ok = false;
        if (lua_isinteger(L, base)) {
            n = lua_tointeger(L, base);
            ok = true;
        } else if (lua_type(L, base) == LUA_TNUMBER) {
            lua_Number d = lua_tonumber(L, base);
            ok = d == floor(d) && d >= 0 && d <= INT32_MAX;
            n = ok ? (lua_Integer)d : 0;
        }
        if (!ok || n < 0 || n > INT32_MAX) {
            if (lua_type(L, base) == LUA_TNUMBER)
                *err = fl_asprintf("replica: must be a non-negative integer, got %.14g", (double)lua_tonumber(L, base));
            else
                *err = fl_asprintf("replica: must be a non-negative integer, got %s", type_of(L, base));
            return FL_EINVAL;
        }
        r->replicas = n;
        if (lua_isnil(L, base + 1))
            return 0;
        if (lua_type(L, base + 1) != LUA_TTABLE) {
            *err = fl_asprintf("requirement: must be a table or nil, got %s", type_of(L, base + 1));
            return FL_EINVAL;
        }
        if ((rc = fl_lua_to_json(L, base + 1, "requirement", &r->requirements, err)) ||
            (rc = check_requirements(r->requirements, err)))
            return rc;
        if (!json_object_size(r->requirements)) { /* {} states nothing: none */
            json_decref(r->requirements);
            r->requirements = NULL;
        }
        return 0;
    }
    case FL_INTERP_REFLECT_STATUS:
        if (lua_isnil(L, base))
            return 0;
        /* the status as Karmada's engine writes it: no empty tables (lua.h) */
        return object_result(L, base, "status", FL_LUA_JSON_DROP_EMPTY, &r->obj, err);
    case FL_INTERP_AGGREGATE_STATUS:
        return object_result(L, base, "return value", FL_LUA_JSON_DROP_EMPTY, &r->obj, err);
    case FL_INTERP_DEPENDENCY: {
        if (lua_isnil(L, base)) {
            r->obj = json_array();
            return 0;
        }
        if (lua_type(L, base) != LUA_TTABLE) {
            *err = fl_asprintf("dependencies: must be an array of references, got %s", type_of(L, base));
            return FL_EINVAL;
        }
        if ((rc = fl_lua_to_json(L, base, "dependencies", &r->obj, err)))
            return rc;
        if (json_is_object(r->obj) && !json_object_size(r->obj)) { /* a bare {}: none */
            json_decref(r->obj);
            r->obj = json_array();
        }
        if (!json_is_array(r->obj)) {
            *err = fl_strdup("dependencies: must be an array of references, got a table with string keys");
            return FL_EINVAL;
        }
        size_t i;
        json_t *d;
        json_array_foreach(r->obj, i, d) {
            if ((rc = check_dependency(d, i, err)))
                return rc;
        }
        return 0;
    }
    case FL_INTERP_COMPONENT:
        /* nil: no components (r->obj stays NULL: karmadactl prints null, {} prints []) */
        if (lua_isnil(L, base))
            return 0;
        if (lua_type(L, base) != LUA_TTABLE) {
            *err = fl_asprintf("components: must be an array of components or nil, got %s", type_of(L, base));
            return FL_EINVAL;
        }
        if ((rc = fl_lua_to_json(L, base, "components", &r->obj, err)))
            return rc;
        if (json_is_object(r->obj) && !json_object_size(r->obj)) { /* a bare {}: none */
            json_decref(r->obj);
            r->obj = json_array();
        }
        if (!json_is_array(r->obj)) {
            *err = fl_strdup("components: must be an array of components, got a table with string keys");
            return FL_EINVAL;
        }
        return check_components(r->obj, err);
    default: return object_result(L, base, "return value", 0, &r->obj, err);
    }
}

void fl_lua_result_clear(fl_lua_result *r)
{
    json_decref(r->obj);
    json_decref(r->requirements);
    memset(r, 0, sizeof *r);
}

/* Run op of customization c on pool; messages are prefixed with the customization and
 * the function. *res cleared on failure. */
static int run_one(fl_lua_pool *pool, const struct custom *c, enum fl_interp_op op, const fl_lua_args *in,
                   fl_lua_result *res, char **err)
{
    struct opcall oc = {op, in, res};
    fl_lua_call call = {op == FL_INTERP_REPLICA ? 2 : 1, op_push, op_collect, &oc};
    char *e = NULL;
    memset(res, 0, sizeof *res);
    int rc = fl_lua_pool_call(pool, &c->script[op], &call, &e);
    if (rc) {
        fl_lua_result_clear(res);
        if (err)
            *err = fl_asprintf("customization \"%s\": %s: %s", c->name, names[op].function, e ? e : fl_strerror(rc));
    }
    free(e);
    return rc;
}

/* Dependencies from every customization in v (name order), merged. */
static int run_deps(fl_lua_pool *pool, struct custom *const *v, size_t n, const fl_lua_args *in, json_t **deps,
                    char **err)
{
    json_t *all = json_array();
    *deps = NULL;
    for (size_t i = 0; i < n; i++) {
        fl_lua_result r;
        int rc = run_one(pool, v[i], FL_INTERP_DEPENDENCY, in, &r, err);
        if (rc) {
            json_decref(all);
            return rc;
        }
        json_array_extend(all, r.obj);
        fl_lua_result_clear(&r);
    }
    *deps = fl_interp_deps_sorted(all);
    json_decref(all);
    return 0;
}

/* ---- the vtable ---- */

static const struct target *target_of(void *self, const json_t *obj)
{
    fl_lua_backend *b = self;
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    return av && kind ? target_find(b->rules.cur, av, kind, false) : NULL;
}

static bool vt_has(void *self, const char *av, const char *kind, enum fl_interp_op op)
{
    fl_lua_backend *b = self;
    const struct target *t = target_find(b->rules.cur, av, kind, false);
    return t && (t->mask & (1u << op));
}

/* The customization answering op for obj, or NULL (then the operation declines). */
static struct custom *answering(void *self, const json_t *obj, enum fl_interp_op op)
{
    const struct target *t = target_of(self, obj);
    return t ? t->first[op] : NULL;
}

static int vt_get_replicas(void *self, const json_t *obj, int64_t *replicas, json_t **requirements, char **err)
{
    struct custom *c = answering(self, obj, FL_INTERP_REPLICA);
    fl_lua_args in = {.obj = obj};
    fl_lua_result r;
    *replicas = 0;
    *requirements = NULL;
    if (!c)
        return FL_EUNSUPPORTED;
    int rc = run_one(((fl_lua_backend *)self)->pool, c, FL_INTERP_REPLICA, &in, &r, err);
    if (!rc) {
        *replicas = r.replicas;
        *requirements = r.requirements;
    }
    return rc;
}

/* The operations that answer with one object in r.obj. */
static int one_object(void *self, enum fl_interp_op op, const fl_lua_args *in, json_t **out, char **err)
{
    struct custom *c = answering(self, in->obj, op);
    fl_lua_result r;
    *out = NULL;
    if (!c)
        return FL_EUNSUPPORTED;
    int rc = run_one(((fl_lua_backend *)self)->pool, c, op, in, &r, err);
    if (!rc)
        *out = r.obj;
    return rc;
}

static int vt_revise_replica(void *self, const json_t *obj, int64_t replicas, json_t **out, char **err)
{
    fl_lua_args in = {.obj = obj, .replicas = replicas};
    return one_object(self, FL_INTERP_REVISE_REPLICA, &in, out, err);
}

static int vt_retain(void *self, const json_t *desired, const json_t *observed, json_t **out, char **err)
{
    fl_lua_args in = {.obj = desired, .observed = observed};
    return one_object(self, FL_INTERP_RETAIN, &in, out, err);
}

static int vt_reflect_status(void *self, const json_t *observed, json_t **status, char **err)
{
    fl_lua_args in = {.obj = observed};
    return one_object(self, FL_INTERP_REFLECT_STATUS, &in, status, err);
}

static int vt_aggregate_status(void *self, const json_t *obj, const json_t *items, json_t **out, char **err)
{
    fl_lua_args in = {.obj = obj, .items = items};
    return one_object(self, FL_INTERP_AGGREGATE_STATUS, &in, out, err);
}

static int vt_health(void *self, const json_t *observed, enum fl_health *health, char **err)
{
    struct custom *c = answering(self, observed, FL_INTERP_HEALTH);
    fl_lua_args in = {.obj = observed};
    fl_lua_result r;
    *health = FL_HEALTH_UNKNOWN;
    if (!c)
        return FL_EUNSUPPORTED;
    int rc = run_one(((fl_lua_backend *)self)->pool, c, FL_INTERP_HEALTH, &in, &r, err);
    if (!rc)
        *health = r.health;
    return rc;
}

static int vt_get_dependencies(void *self, const json_t *obj, json_t **deps, char **err)
{
    const struct target *t = target_of(self, obj);
    fl_lua_args in = {.obj = obj};
    *deps = NULL;
    if (!t || !t->ndeps)
        return FL_EUNSUPPORTED;
    return run_deps(((fl_lua_backend *)self)->pool, t->deps, t->ndeps, &in, deps, err);
}

static int vt_get_components(void *self, const json_t *obj, json_t **components, char **err)
{
    struct custom *c = answering(self, obj, FL_INTERP_COMPONENT);
    fl_lua_args in = {.obj = obj};
    fl_lua_result r;
    *components = NULL;
    if (!c)
        return FL_EUNSUPPORTED;
    int rc = run_one(((fl_lua_backend *)self)->pool, c, FL_INTERP_COMPONENT, &in, &r, err);
    if (!rc)
        *components = r.obj ? r.obj : json_array();
    return rc;
}

const fl_interp_backend fl_lua_backend_vtable = {
    .name = "lua",
    .has = vt_has,
    .get_replicas = vt_get_replicas,
    .revise_replica = vt_revise_replica,
    .retain = vt_retain,
    .reflect_status = vt_reflect_status,
    .aggregate_status = vt_aggregate_status,
    .health = vt_health,
    .get_dependencies = vt_get_dependencies,
    .get_components = vt_get_components,
};

/* ---- offline ---- */

/* The line number in a Lua message ("[string \"x\"]:12: ..."), or 0. */
static long line_of(const char *msg)
{
    const char *p = strstr(msg, "\"]:");
    if (!p)
        return 0;
    char *end;
    long n = strtol(p + 3, &end, 10);
    return end > p + 3 && *end == ':' ? n : 0;
}

int fl_lua_backend_check(const json_t *ric, json_t **report, char **err)
{
    struct custom *c;
    char *errs[NOPS], *first = NULL;
    *report = NULL;
    if (err)
        *err = NULL;
    int rc = custom_parse(ric, &c, &first);
    if (rc)
        goto out;
    rc = custom_check(c, NULL, errs);
    json_t *rules = json_array();
    for (int i = 0; i < NOPS; i++) {
        int op = order[i];
        json_t *r = json_pack("{s:s, s:s, s:s}", "rule", names[op].rule, "operation", fl_interp_op_name(op),
                              "function", names[op].function);
        const char *status = !c->script[op].source ? "UNSET" : errs[op] ? "ERROR" : "PASS";
        json_object_set_new(r, "status", json_string(status));
        if (errs[op]) {
            long line = line_of(errs[op]);
            if (line > 0)
                json_object_set_new(r, "line", json_integer(line));
            json_object_set_new(r, "message", json_string(errs[op]));
            if (!first)
                first = fl_asprintf("customization \"%s\": %s: %s", c->name, names[op].rule, errs[op]);
            free(errs[op]);
        }
        json_array_append_new(rules, r);
    }
    *report = json_pack("{s:s, s:{s:s, s:s}, s:o}", "name", c->name, "target", "apiVersion", c->av, "kind", c->kind,
                        "rules", rules);
    custom_free(c);
out:
    if (err)
        *err = first;
    else
        free(first);
    return rc;
}

int fl_lua_run(const json_t *ric, enum fl_interp_op op, const fl_lua_args *args, const fl_lua_limits *limits,
               fl_lua_result *res, char **err)
{
    struct custom *c;
    char *e = NULL;
    memset(res, 0, sizeof *res);
    if (err)
        *err = NULL;
    if ((unsigned)op >= NOPS) {
        if (err)
            *err = fl_strdup("unknown interpreter operation");
        return FL_EINVAL;
    }
    if (!args || !json_is_object(args->obj)) {
        if (err)
            *err = fl_asprintf("%s: the object must be a JSON object", names[op].function);
        return FL_EINVAL;
    }
    int rc = custom_parse(ric, &c, &e);
    if (rc) {
        if (err)
            *err = e;
        else
            free(e);
        return rc;
    }
    if (!c->script[op].source) {
        if (err)
            *err = fl_asprintf("customization \"%s\" has no %s script (spec.customizations.%s.luaScript)", c->name,
                               names[op].function, names[op].rule);
        custom_free(c);
        return FL_EUNSUPPORTED;
    }
    fl_lua_limits lim = limits ? *limits : (fl_lua_limits){0};
    lim.states = 1;
    fl_lua_pool *pool = fl_lua_pool_new(&lim);
    if (op == FL_INTERP_DEPENDENCY) {
        rc = run_deps(pool, &c, 1, args, &res->obj, err);
    } else {
        rc = run_one(pool, c, op, args, res, err);
    }
    fl_lua_pool_free(pool);
    custom_free(c);
    return rc;
}
