/* interp.c - the interpreter's registry of backends and the dispatch of each operation
 * (contract in interp.h, design in docs/internals/interpreter.md).
 *
 * The registry is a singly linked list, newest backend first, under one rwlock that
 * prefers writers. Every operation follows the same steps: read apiVersion and kind from
 * the object, take the read lock, walk the list to the first backend whose has() claims
 * (apiVersion, kind, op), run its operation, and if that declines (FL_EUNSUPPORTED) go
 * on to the next one; then release the lock and turn the backend's message into one that
 * names backend, operation and object. Adding, removing and fl_interp_edit() take the
 * write lock, so they never overlap a running operation. */
#include "interp/interp.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "interp/native.h"
#include "interp/retain.h"

struct entry {
    struct entry *next;
    const fl_interp_backend *b;
    void *self;
    bool native;
};

/* The backends calls are counted by (flotilla_interpreter_calls_total): native rules, the
 * users' Lua customizations, the bundled Lua ones, webhooks; "other" for a backend registered
 * under another name, "none" for no hook. */
static const char *const backend_names[] = {"native", "customization", "bundled", "webhook", "other", "none"};
#define NBACKENDS (sizeof backend_names / sizeof backend_names[0])

struct fl_interp {
    pthread_rwlock_t lock;
    struct entry *head;
    _Atomic uint64_t edits; /* changes of the hooks, counted under the write lock */
    /* flotilla_interpreter_calls_total by [operation][backend][failed] */
    fl_metric_series *calls[FL_INTERP_OP_COUNT][NBACKENDS][2];
};

static const char *const op_names[FL_INTERP_OP_COUNT] = {
    [FL_INTERP_REPLICA] = "InterpretReplica",
    [FL_INTERP_REVISE_REPLICA] = "ReviseReplica",
    [FL_INTERP_RETAIN] = "Retain",
    [FL_INTERP_REFLECT_STATUS] = "InterpretStatus",
    [FL_INTERP_AGGREGATE_STATUS] = "AggregateStatus",
    [FL_INTERP_HEALTH] = "InterpretHealth",
    [FL_INTERP_DEPENDENCY] = "InterpretDependency",
    [FL_INTERP_COMPONENT] = "InterpretComponent",
};

const char *fl_interp_op_name(enum fl_interp_op op)
{
    return (unsigned)op < FL_INTERP_OP_COUNT ? op_names[op] : "";
}

/* ---- registry ---- */

static void push(fl_interp *ip, const fl_interp_backend *b, void *self, bool native)
{
    struct entry *e = fl_calloc(1, sizeof *e);
    e->b = b;
    e->self = self;
    e->native = native;
    pthread_rwlock_wrlock(&ip->lock);
    e->next = ip->head;
    ip->head = e;
    ip->edits++;
    pthread_rwlock_unlock(&ip->lock);
}

fl_interp *fl_interp_new(void)
{
    fl_interp *ip = fl_calloc(1, sizeof *ip);
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* glibc's default lets readers overtake a waiting writer; with workers calling in all
     * the time a customization change could wait indefinitely */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&ip->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    fl_metric *calls = fl_metric_family(FL_METRIC_COUNTER, "flotilla_interpreter_calls_total",
                                        "Resource interpreter calls by operation (Karmada's names) and the backend "
                                        "that answered (native, customization, bundled, webhook; none: no hook).",
                                        "operation", "backend", NULL, 0);
    fl_metric *failed = fl_metric_family(FL_METRIC_COUNTER, "flotilla_interpreter_errors_total",
                                         "Resource interpreter calls a backend answered with a failure (a script "
                                         "error, a limit hit, a webhook refusing or unreachable), by operation and "
                                         "backend.",
                                         "operation", "backend", NULL, 0);
    for (int o = 0; o < FL_INTERP_OP_COUNT; o++)
        for (size_t b = 0; b < NBACKENDS; b++) {
            ip->calls[o][b][0] = fl_metric_with(calls, op_names[o], backend_names[b]);
            ip->calls[o][b][1] = fl_metric_with(failed, op_names[o], backend_names[b]);
        }
    push(ip, &fl_native_backend, NULL, true);
    return ip;
}

void fl_interp_free(fl_interp *ip)
{
    if (!ip)
        return;
    for (struct entry *e = ip->head, *n; e; e = n) {
        n = e->next;
        free(e);
    }
    pthread_rwlock_destroy(&ip->lock);
    free(ip);
}

void fl_interp_add_backend(fl_interp *ip, const fl_interp_backend *b, void *self)
{
    push(ip, b, self, false);
}

int fl_interp_remove_backend(fl_interp *ip, const fl_interp_backend *b, void *self)
{
    int rc = FL_ENOTFOUND;
    pthread_rwlock_wrlock(&ip->lock);
    for (struct entry **pp = &ip->head; *pp; pp = &(*pp)->next) {
        struct entry *e = *pp;
        if (e->b == b && e->self == self && !e->native) {
            *pp = e->next;
            free(e);
            rc = 0;
            ip->edits++;
            break;
        }
    }
    pthread_rwlock_unlock(&ip->lock);
    return rc;
}

void fl_interp_edit(fl_interp *ip, void (*fn)(void *arg), void *arg)
{
    pthread_rwlock_wrlock(&ip->lock);
    fn(arg);
    ip->edits++;
    pthread_rwlock_unlock(&ip->lock);
}

uint64_t fl_interp_edits(fl_interp *ip)
{
    return ip->edits;
}

struct swap {
    void *slot, *next, *old;
};

static void swap_fn(void *arg)
{
    struct swap *s = arg;
    memcpy(&s->old, s->slot, sizeof s->old);
    memcpy(s->slot, &s->next, sizeof s->next);
}

/* Pointer i of an array of object pointers, and writing one (copies: the arrays' element
 * type is the backend's own). */
static void *named_at(const void *arr, size_t i)
{
    void *p;
    memcpy(&p, (const char *)arr + i * sizeof p, sizeof p);
    return p;
}

static void named_set(void *arr, size_t i, void *p)
{
    memcpy((char *)arr + i * sizeof p, &p, sizeof p);
}

/* An item's name: its first member (a struct pointer converted points to it). */
static const char *named_name(const void *item)
{
    return *(char *const *)item;
}

size_t fl_interp_named_put(void *out, const void *cur, size_t n, void *item)
{
    size_t k = 0;
    bool placed = false;
    for (size_t i = 0; i < n; i++) {
        void *e = named_at(cur, i);
        int cmp = strcmp(named_name(e), named_name(item));
        if (!placed && cmp >= 0) {
            named_set(out, k++, item);
            placed = true;
        }
        if (cmp != 0)
            named_set(out, k++, e);
    }
    if (!placed)
        named_set(out, k++, item);
    return k;
}

size_t fl_interp_named_drop(void *out, const void *cur, size_t n, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        void *e = named_at(cur, i);
        if (strcmp(named_name(e), name))
            named_set(out, k++, e);
    }
    return k;
}

void *fl_interp_swap(fl_interp *ip, void *slot, void *next)
{
    struct swap s = {slot, next, NULL};
    if (ip)
        fl_interp_edit(ip, swap_fn, &s);
    else
        swap_fn(&s);
    return s.old;
}

/* The operation's slot in b, as a presence test (the types differ per operation). */
static bool has_slot(const fl_interp_backend *b, enum fl_interp_op op)
{
    switch (op) {
    case FL_INTERP_REPLICA: return b->get_replicas != NULL;
    case FL_INTERP_REVISE_REPLICA: return b->revise_replica != NULL;
    case FL_INTERP_RETAIN: return b->retain != NULL;
    case FL_INTERP_REFLECT_STATUS: return b->reflect_status != NULL;
    case FL_INTERP_AGGREGATE_STATUS: return b->aggregate_status != NULL;
    case FL_INTERP_HEALTH: return b->health != NULL;
    case FL_INTERP_DEPENDENCY: return b->get_dependencies != NULL;
    case FL_INTERP_COMPONENT: return b->get_components != NULL;
    default: return false;
    }
}

/* The first entry from e on with a hook for (av, kind, op). Read lock held. */
static struct entry *find(struct entry *e, const char *av, const char *kind, enum fl_interp_op op)
{
    for (; e; e = e->next)
        if (has_slot(e->b, op) && e->b->has && e->b->has(e->self, av, kind, op))
            return e;
    return NULL;
}

bool fl_interp_has(fl_interp *ip, const char *api_version, const char *kind, enum fl_interp_op op)
{
    if (!api_version || !kind || (unsigned)op >= FL_INTERP_OP_COUNT)
        return false;
    pthread_rwlock_rdlock(&ip->lock);
    bool yes = find(ip->head, api_version, kind, op) != NULL;
    pthread_rwlock_unlock(&ip->lock);
    return yes;
}

bool fl_interp_native_first(fl_interp *ip, const char *api_version, const char *kind, enum fl_interp_op op)
{
    if (!api_version || !kind || (unsigned)op >= FL_INTERP_OP_COUNT)
        return false;
    pthread_rwlock_rdlock(&ip->lock);
    struct entry *e = find(ip->head, api_version, kind, op);
    bool yes = e && e->native;
    pthread_rwlock_unlock(&ip->lock);
    return yes;
}

/* ---- one call ---- */

/* What a call knows about its object, for lookup and for messages. */
struct call {
    enum fl_interp_op op;
    const char *av, *kind, *ns, *name;
};

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* Fill c from obj (role names obj in the message: "object", "desired", ...). */
static int call_init(struct call *c, enum fl_interp_op op, const json_t *obj, const char *role, char **err)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    if (!json_is_object(obj)) {
        if (err)
            *err = fl_asprintf("interpreter: %s: %s must be a JSON object", op_names[op], role);
        return FL_EINVAL;
    }
    c->av = json_string_value(json_object_get(obj, "apiVersion"));
    c->kind = json_string_value(json_object_get(obj, "kind"));
    c->ns = meta_str(obj, "namespace");
    c->name = meta_str(obj, "name");
    if (!c->av || !*c->av || !c->kind || !*c->kind) {
        if (err)
            *err = fl_asprintf("interpreter: %s: %s: apiVersion and kind must be non-empty strings", op_names[op],
                               role);
        return FL_EINVAL;
    }
    return 0;
}

/* The final word of a call: rc with *err naming backend (e, NULL when none had a hook),
 * operation and object around the backend's own message berr (freed here). */
static void count_call(fl_interp *ip, const struct call *c, const struct entry *e, int rc)
{
    size_t b = NBACKENDS - 1; /* none */
    for (size_t i = 0; e && i < NBACKENDS - 1; i++)
        if (i == NBACKENDS - 2 || !strcmp(e->b->name, backend_names[i])) {
            b = i;
            break;
        }
    fl_metric_add(ip->calls[c->op][b][0], 1);
    if (rc && e) /* no hook at all is not a failure: the caller falls back */
        fl_metric_add(ip->calls[c->op][b][1], 1);
}

static int call_done(fl_interp *ip, const struct call *c, const struct entry *e, int rc, char *berr, char **err)
{
    count_call(ip, c, e, rc);
    if (rc == 0 || !err) {
        free(berr);
        return rc;
    }
    char who[512];
    if (c->name)
        snprintf(who, sizeof who, "%s %s %s%s%s", c->av, c->kind, c->ns ? c->ns : "", c->ns && *c->ns ? "/" : "",
                 c->name);
    else
        snprintf(who, sizeof who, "%s %s", c->av, c->kind);
    if (!e)
        *err = fl_asprintf("interpreter: no backend has a %s hook for %s", op_names[c->op], who);
    else
        *err = fl_asprintf("%s: %s %s: %s", e->b->name, op_names[c->op], who, berr ? berr : fl_strerror(rc));
    free(berr);
    return rc;
}

/* The loop every operation runs: INVOKE is the backend call (using e and &berr), RESET
 * clears the out-parameters after a backend declined or failed. */
#define DISPATCH(ip, c, rc, err, INVOKE, RESET)                                                                        \
    do {                                                                                                               \
        struct entry *e_ = NULL;                                                                                       \
        char *berr_ = NULL;                                                                                            \
        (rc) = FL_EUNSUPPORTED;                                                                                        \
        pthread_rwlock_rdlock(&(ip)->lock);                                                                            \
        for (struct entry *e = find((ip)->head, (c).av, (c).kind, (c).op); e;                                         \
             e = find(e->next, (c).av, (c).kind, (c).op)) {                                                            \
            char *berr = NULL;                                                                                         \
            (rc) = (INVOKE);                                                                                           \
            if ((rc) != FL_EUNSUPPORTED) {                                                                             \
                e_ = e;                                                                                                \
                berr_ = berr;                                                                                          \
                break;                                                                                                 \
            }                                                                                                          \
            free(berr);                                                                                                \
            RESET;                                                                                                     \
        }                                                                                                              \
        pthread_rwlock_unlock(&(ip)->lock);                                                                            \
        if ((rc) != 0) {                                                                                               \
            RESET;                                                                                                     \
        }                                                                                                              \
        (rc) = call_done((ip), &(c), e_, (rc), berr_, (err));                                                          \
    } while (0)

static void clear_json(json_t **p)
{
    json_decref(*p);
    *p = NULL;
}

int fl_interp_get_replicas(fl_interp *ip, const json_t *obj, int64_t *replicas, json_t **requirements, char **err)
{
    struct call c;
    int rc;
    *replicas = 0;
    *requirements = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_REPLICA, obj, "object", err)))
        return rc;
    DISPATCH(ip, c, rc, err, e->b->get_replicas(e->self, obj, replicas, requirements, &berr),
             (*replicas = 0, clear_json(requirements)));
    return rc;
}

int fl_interp_revise_replica(fl_interp *ip, const json_t *obj, int64_t replicas, json_t **out, char **err)
{
    struct call c;
    int rc;
    *out = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_REVISE_REPLICA, obj, "object", err)))
        return rc;
    DISPATCH(ip, c, rc, err, e->b->revise_replica(e->self, obj, replicas, out, &berr), clear_json(out));
    return rc;
}

/* The group of an apiVersion ("apps/v1" → "apps", "v1" → ""), into buf. */
static const char *group_of(const char *av, char *buf, size_t cap)
{
    const char *slash = strchr(av, '/');
    size_t n = slash ? (size_t)(slash - av) : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, av, n);
    buf[n] = '\0';
    return buf;
}

/* A backend other than native gets desired with the generic rules applied (fl_retain
 * without a kind), as Karmada's object watcher applies them before any interpreter. */
static int retain_one(struct entry *e, const struct call *c, const json_t *desired, const json_t *observed,
                      json_t **out, char **berr)
{
    if (e->native || !json_is_object(observed))
        return e->b->retain(e->self, desired, observed, out, berr);
    char group[256];
    json_t *pre = fl_retain(group_of(c->av, group, sizeof group), NULL, desired, observed);
    int rc = e->b->retain(e->self, pre, observed, out, berr);
    json_decref(pre);
    return rc;
}

int fl_interp_retain(fl_interp *ip, const json_t *desired, const json_t *observed, json_t **out, char **err)
{
    struct call c;
    int rc;
    *out = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_RETAIN, desired, "desired", err)))
        return rc;
    if (observed && !json_is_object(observed) && !json_is_null(observed)) {
        if (err)
            *err = fl_strdup("interpreter: Retain: observed must be a JSON object or NULL");
        return FL_EINVAL;
    }
    if (json_is_null(observed))
        observed = NULL;
    DISPATCH(ip, c, rc, err, retain_one(e, &c, desired, observed, out, &berr), clear_json(out));
    return rc;
}

int fl_interp_reflect_status(fl_interp *ip, const json_t *observed, json_t **status, char **err)
{
    struct call c;
    int rc;
    *status = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_REFLECT_STATUS, observed, "observed", err)))
        return rc;
    DISPATCH(ip, c, rc, err, e->b->reflect_status(e->self, observed, status, &berr), clear_json(status));
    return rc;
}

int fl_interp_aggregate_status(fl_interp *ip, const json_t *obj, const json_t *items, json_t **out, char **err)
{
    struct call c;
    int rc;
    *out = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_AGGREGATE_STATUS, obj, "object", err)))
        return rc;
    if (items && !json_is_array(items) && !json_is_null(items)) {
        if (err)
            *err = fl_strdup("interpreter: AggregateStatus: items must be a JSON array");
        return FL_EINVAL;
    }
    DISPATCH(ip, c, rc, err, e->b->aggregate_status(e->self, obj, items, out, &berr), clear_json(out));
    return rc;
}

int fl_interp_health(fl_interp *ip, const json_t *observed, enum fl_health *health, char **err)
{
    struct call c;
    int rc;
    *health = FL_HEALTH_UNKNOWN;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_HEALTH, observed, "observed", err)))
        return rc;
    DISPATCH(ip, c, rc, err, e->b->health(e->self, observed, health, &berr), *health = FL_HEALTH_UNKNOWN);
    return rc;
}

int fl_interp_get_dependencies(fl_interp *ip, const json_t *obj, json_t **deps, char **err)
{
    struct call c;
    int rc;
    *deps = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_DEPENDENCY, obj, "object", err)))
        return rc;
    DISPATCH(ip, c, rc, err, e->b->get_dependencies(e->self, obj, deps, &berr), clear_json(deps));
    return rc;
}

static int cmp_name(const void *pa, const void *pb)
{
    const char *x = json_string_value(json_object_get(*(const json_t *const *)pa, "name"));
    const char *y = json_string_value(json_object_get(*(const json_t *const *)pb, "name"));
    return strcmp(x ? x : "", y ? y : "");
}

/* arr's elements sorted by their "name" (a new array sharing them). */
static json_t *sorted_by_name(const json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = fl_malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof *v, cmp_name);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

int fl_interp_get_components(fl_interp *ip, const json_t *obj, json_t **components, char **err)
{
    struct call c;
    int rc;
    *components = NULL;
    if (err)
        *err = NULL;
    if ((rc = call_init(&c, FL_INTERP_COMPONENT, obj, "object", err)))
        return rc;
    DISPATCH(ip, c, rc, err, e->b->get_components(e->self, obj, components, &berr), clear_json(components));
    if (rc == 0 && json_array_size(*components) > 1) {
        /* scripts build the list with pairs(), whose order is the hash table's, not the
         * object's: by name, so that a binding does not change with the Lua state */
        json_t *sorted = sorted_by_name(*components);
        json_decref(*components);
        *components = sorted;
    }
    return rc;
}

static int cmp_ref(const void *pa, const void *pb)
{
    static const char *const keys[] = {"apiVersion", "kind", "namespace", "name"};
    const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
    for (size_t i = 0; i < 4; i++) {
        const char *x = json_string_value(json_object_get(a, keys[i]));
        const char *y = json_string_value(json_object_get(b, keys[i]));
        int c = strcmp(x ? x : "", y ? y : "");
        if (c)
            return c;
    }
    /* same name: by selector text, so that equal references end up side by side */
    const json_t *sa = json_object_get(a, "labelSelector"), *sb = json_object_get(b, "labelSelector");
    if (!sa && !sb)
        return 0;
    char *x = fl_json_dumps(sa, NULL);
    char *y = fl_json_dumps(sb, NULL);
    int c = strcmp(x, y);
    free(x);
    free(y);
    return c;
}

json_t *fl_interp_deps_sorted(const json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = fl_malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof *v, cmp_ref);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        if (!i || !json_equal(v[i - 1], v[i]))
            json_array_append(out, v[i]);
    free(v);
    return out;
}
