/* interp.h - the resource interpreter: what Flotilla needs to know about a kind it federates.
 *
 * Controllers never read a workload's fields themselves; they ask the interpreter eight
 * questions (Karmada's eight interpreter operations): how many replicas and what each one
 * needs, or for a workload of several pod templates (a Flink job manager and its task
 * managers) the same per component, how to rewrite the replica count for one member, what of the member's copy to
 * keep on update, what of the member's status to report, how to fold the members'
 * reports into the template's status, whether the member's object is healthy, and which
 * other objects must travel with it.
 *
 * Answers come from backends, asked in order; the first backend that has a hook for
 * (apiVersion, kind, operation) answers. Karmada's order is customizations (Lua) →
 * webhook → bundled customizations → native; each backend is added ahead of those
 * already registered, so adding them in the reverse order (native first, by
 * fl_interp_new) gives that order. The native backend (native.c) knows the built-in
 * kinds; docs/internals/interpreter.md lists its rules and where each came from.
 *
 * Threads: every function here may be called from any thread at the same time. A call
 * holds the registry's read lock while it looks for a hook and runs it, so a backend is
 * never removed, and never changes its hooks through fl_interp_edit(), while one of its
 * operations runs; changes wait for running calls to finish (and new calls wait for a
 * waiting change: the lock prefers writers, so a busy fleet cannot starve a user's
 * customization change). A backend operation must therefore not call back into
 * fl_interp_* (the nested read lock could wait behind a writer that waits for it).
 *
 * Conventions for the operations below: 0 on success; a negative FL_E* on failure with
 * *err a malloc'd message naming the backend, the operation, the object and what was
 * wrong (the caller frees it; NULL on success; err itself may be NULL when the caller
 * does not want the text). FL_EUNSUPPORTED means no backend has a hook (with a message
 * too); FL_EINVAL means the object is malformed (a field of the wrong type, an
 * unparsable quantity, no apiVersion/kind), never a crash. Out-parameters are written on
 * every path: new references (or values) the caller owns on success, NULL/0 otherwise.
 * Input objects are only read (they may be an informer's shared objects). */
#ifndef FL_INTERP_H
#define FL_INTERP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum fl_interp_op {
    FL_INTERP_REPLICA,          /* InterpretReplica */
    FL_INTERP_REVISE_REPLICA,   /* ReviseReplica */
    FL_INTERP_RETAIN,           /* Retain */
    FL_INTERP_REFLECT_STATUS,   /* InterpretStatus */
    FL_INTERP_AGGREGATE_STATUS, /* AggregateStatus */
    FL_INTERP_HEALTH,           /* InterpretHealth */
    FL_INTERP_DEPENDENCY,       /* InterpretDependency */
    FL_INTERP_COMPONENT,        /* InterpretComponent (Karmada 1.16+: multi-component workloads) */
    FL_INTERP_OP_COUNT
};

enum fl_health { FL_HEALTH_UNKNOWN = 0, FL_HEALTH_HEALTHY, FL_HEALTH_UNHEALTHY };

/* The registry of backends. */
typedef struct fl_interp fl_interp;

/* One backend: a name for messages, has() saying which (apiVersion, kind, op) it
 * answers, and one function per operation with the same contract as the fl_interp_*
 * function of that name (minus the registry; self is what was passed to
 * fl_interp_add_backend). An operation slot may be NULL when has() never claims it.
 * Backend messages in *err need not name the backend or the object: the registry adds
 * both. An operation that returns FL_EUNSUPPORTED declines this object after all, and
 * the next backend is asked (its out-parameters and *err are discarded). has() and the
 * operations may run on several threads at once. */
typedef struct fl_interp_backend {
    const char *name;
    bool (*has)(void *self, const char *api_version, const char *kind, enum fl_interp_op op);
    int (*get_replicas)(void *self, const json_t *obj, int64_t *replicas, json_t **requirements, char **err);
    int (*revise_replica)(void *self, const json_t *obj, int64_t replicas, json_t **out, char **err);
    int (*retain)(void *self, const json_t *desired, const json_t *observed, json_t **out, char **err);
    int (*reflect_status)(void *self, const json_t *observed, json_t **status, char **err);
    int (*aggregate_status)(void *self, const json_t *obj, const json_t *items, json_t **out, char **err);
    int (*health)(void *self, const json_t *observed, enum fl_health *health, char **err);
    int (*get_dependencies)(void *self, const json_t *obj, json_t **deps, char **err);
    int (*get_components)(void *self, const json_t *obj, json_t **components, char **err);
} fl_interp_backend;

/* A registry with the native backend installed. Never NULL (allocation aborts). */
fl_interp *fl_interp_new(void);

/* Free the registry (NULL: no-op). Backends added by callers are not freed: their
 * owners free them after this, or after fl_interp_remove_backend(). No call may be
 * running. */
void fl_interp_free(fl_interp *ip);

/* Add a backend ahead of those already there: it is asked first. b (usually a static
 * table) and self must stay valid until it is removed or the registry freed. Waits for
 * running calls to finish. */
void fl_interp_add_backend(fl_interp *ip, const fl_interp_backend *b, void *self);

/* Remove the backend added with (b, self), after running calls finish; from then on no
 * call enters it. Returns 0, or FL_ENOTFOUND. The native backend cannot be removed. */
int fl_interp_remove_backend(fl_interp *ip, const fl_interp_backend *b, void *self);

/* Run fn(arg) while no call is inside any backend and none can start: how a backend
 * changes the hooks it reports (a Lua customization created or deleted) so that has()
 * and the operation it leads to always see the same set. fn must not call fl_interp_*. */
void fl_interp_edit(fl_interp *ip, void (*fn)(void *arg), void *arg);

/* How many times the hooks have changed (backends added or removed, edits). Counted under
 * the same lock as the change: when a value read before some calls equals one read after
 * them, every one of those calls, and fl_interp_has or fl_interp_native_first asked among
 * them, saw the same hooks. Any thread. */
uint64_t fl_interp_edits(fl_interp *ip);

/* What a backend's edit usually is: replace the pointer at slot (a backend's current rules,
 * which its hooks read) with next, under fl_interp_edit, or at once when ip is NULL (not
 * attached). Returns the pointer it replaced, which no call can still be using. slot points
 * to an object pointer of any type. */
void *fl_interp_swap(fl_interp *ip, void *slot, void *next);

/* A backend's named rules (Lua customizations, webhook configurations) are arrays of pointers
 * to structs whose first member is their name (char *), sorted by name and copied on write.
 * fl_interp_named_put writes into out (room for n + 1 pointers) cur[0..n) with item in its
 * place, replacing the item of the same name; fl_interp_named_drop writes cur[0..n) without
 * the item called name. Both return how many they wrote (drop: n when there was none). */
size_t fl_interp_named_put(void *out, const void *cur, size_t n, void *item);
size_t fl_interp_named_drop(void *out, const void *cur, size_t n, const char *name);

/* True when some backend has a hook for (api_version, kind, op). A hint only: hooks can
 * change right after it returns; the operations re-check. */
bool fl_interp_has(fl_interp *ip, const char *api_version, const char *kind, enum fl_interp_op op);

/* True when the hook that answers (api_version, kind, op) is the native one: no
 * customization or webhook comes before it. A hint, as fl_interp_has. */
bool fl_interp_native_first(fl_interp *ip, const char *api_version, const char *kind, enum fl_interp_op op);

/* Karmada's name of an operation ("InterpretReplica", ...); "" for a bad value. */
const char *fl_interp_op_name(enum fl_interp_op op);

/* The template's desired replica count and the requirements of one replica: the
 * ReplicaRequirements object a ResourceBinding's spec.replicaRequirements holds
 * ({nodeClaim, resourceRequest, namespace, priorityClassName}), or NULL when the kind
 * states none (no resources, no node constraints). */
int fl_interp_get_replicas(fl_interp *ip, const json_t *obj, int64_t *replicas, json_t **requirements, char **err);

/* A copy of obj (a template) asking for `replicas` replicas: the one member's share. */
int fl_interp_revise_replica(fl_interp *ip, const json_t *obj, int64_t replicas, json_t **out, char **err);

/* The object to write to a member: a copy of desired (the Work's manifest) with the
 * fields that belong to the member merged in from observed (the member's copy; may be
 * NULL). Karmada keeps the member's bookkeeping metadata for every kind before any
 * customization runs; so does this: a backend other than native receives desired with
 * those generic rules (fl_retain without a kind) already applied. */
int fl_interp_retain(fl_interp *ip, const json_t *desired, const json_t *observed, json_t **out, char **err);

/* What of observed's status (a member object) the binding reports for this cluster;
 * *status NULL when there is nothing to report yet. */
int fl_interp_reflect_status(fl_interp *ip, const json_t *observed, json_t **status, char **err);

/* obj (the template) with its status rebuilt from items: the array a ResourceBinding's
 * status.aggregatedStatus holds, [{clusterName, status, applied, health}], where status
 * is what reflect_status returned for that cluster (absent until collected). */
int fl_interp_aggregate_status(fl_interp *ip, const json_t *obj, const json_t *items, json_t **out, char **err);

/* Health of a member's object. On failure *health is FL_HEALTH_UNKNOWN. With
 * FL_EUNSUPPORTED (no rule for the kind) the caller should treat the object as
 * healthy, as Karmada does for kinds without a health hook. */
int fl_interp_health(fl_interp *ip, const json_t *observed, enum fl_health *health, char **err);

/* Objects that must be propagated with obj: a JSON array of {apiVersion, kind,
 * namespace, name}, sorted and without duplicates (possibly empty). */
int fl_interp_get_dependencies(fl_interp *ip, const json_t *obj, json_t **deps, char **err);

/* The template's components: a JSON array of Karmada's Component objects
 * ({name, replicas, replicaRequirements: {nodeClaim, resourceRequest, priorityClassName}}),
 * checked as fl_interp_check_components does (requirements.h), sorted by name (scripts
 * build the list in pairs() order, which is not stable), possibly empty (the rule
 * answered nil). Only customizations (Lua, bundled) and webhooks answer it; a kind
 * without such a hook is FL_EUNSUPPORTED, and the caller uses fl_interp_get_replicas. */
int fl_interp_get_components(fl_interp *ip, const json_t *obj, json_t **components, char **err);

/* The order of that array, for backends to build it: arr's references sorted by
 * (apiVersion, kind, namespace, name, then labelSelector), equal ones once (a new array
 * sharing arr's elements). */
json_t *fl_interp_deps_sorted(const json_t *arr);

#endif
