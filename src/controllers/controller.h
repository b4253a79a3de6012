/* controller.h - how controllers plug into `flotilla server` (and later the pull agent).
 *
 * A controller is a reconcile loop over a de-duplicating work queue (src/client/
 * workqueue.h) fed by informers (src/client/informer.h), talking to the control plane
 * through an fl_client like any other client, so the agent can run the same code against
 * a remote control plane. Each controller owns its threads; the manager starts them after
 * the API serves and stops them before it goes away. State that matters lives in the
 * store (objects' status and annotations), never only in a controller's memory: a restart
 * resumes from what it lists.
 *
 * One file per controller under src/controllers/, each exporting one fl_controller. */
#ifndef FL_CONTROLLER_H
#define FL_CONTROLLER_H

#include <stdbool.h>

#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"

typedef struct fl_ctrl_env {
    fl_client *cp;            /* the control plane (owned by the manager; thread-safe) */
    const char *data_dir;     /* the server's data directory (NULL in the agent) */
    volatile int *stopping;   /* set when the process is shutting down */
    /* Clients for Push members, shared by every controller that talks to members, so that
     * each member has one connection pool and one discovery cache (owned by the manager,
     * which creates it and frees it after the last controller stopped). */
    struct fl_members *members;
    /* The other facilities every controller shares, also owned by the manager: resource
     * templates by kind (templates.h), the resource interpreter (interp/interp.h), and the
     * event recorder (events.h). */
    struct fl_templates *templates;
    struct fl_interp *interp;
    struct fl_recorder *recorder;
    struct fl_ctrl_manager *manager;
    /* Not 0: the store's head at the start, noted by the same build as the revision at which
     * every controller had last finished (fl_ctrl_manager_idle; docs/internals/propagation.md,
     * "Resuming at a reconciled revision"). The controllers that register with
     * fl_ctrl_resumable queue nothing for the objects their first lists hold unchanged since:
     * reconciling them again would change nothing. */
    int64_t resumed_rev;
    /* With resumed_rev: what the controllers noted with it (fl_ctrl_note), by the note's
     * name (fl_ctrl_note_names); a name missing: nothing was. Borrowed for the controllers'
     * start only: a controller copies what it keeps. */
    const json_t *resumed_notes;
} fl_ctrl_env;

typedef struct fl_controller {
    const char *name;
    /* Start; *state receives the controller's state. Returns 0 or an FL_E* code (the
     * manager logs it and carries on without this controller). */
    int (*start)(const fl_ctrl_env *env, void **state);
    /* Stop promptly (cancel watches, shut the queue down, join threads) and free state. */
    void (*stop)(void *state);
} fl_controller;

typedef struct fl_ctrl_manager fl_ctrl_manager;

/* Start every controller in the NULL-terminated list. *out set on every path. env is copied. */
int fl_ctrl_manager_start(const fl_ctrl_env *env, const fl_controller *const *list, fl_ctrl_manager **out);
/* Stop them in reverse order and free. NULL-safe. */
void fl_ctrl_manager_stop(fl_ctrl_manager *m);
/* The manager's shared template registry (env.templates of its controllers). */
struct fl_templates *fl_ctrl_manager_templates(fl_ctrl_manager *m);

/* The shared informer on one control-plane resource (all namespaces, managedFields
 * dropped), so that a resource several controllers watch is cached once: the first call
 * creates it, every call returns the same one. Only from a controller's start(): add
 * handlers there with fl_informer_add_handlers; the manager starts every shared informer
 * after the last controller has started (as client-go's informer factory). Borrowed;
 * valid until the manager stops. */
fl_informer *fl_ctrl_informer(const fl_ctrl_env *env, const char *api_version, const char *resource);

/* Run n worker threads over q, each calling reconcile(ctx, key) for the keys it takes:
 * 0 forgets the key's back-off; any other return requeues it with the queue's rate-limited
 * back-off. Workers exit when q is shut down, leaving what is still queued (the next start
 * reconciles everything); fl_ctrl_workers_join waits for them. */
typedef struct fl_ctrl_workers fl_ctrl_workers;
/* name: the controller's, for the threads' name (the first 13 bytes show) */
fl_ctrl_workers *fl_ctrl_workers_start(fl_workqueue *q, const char *name, int n,
                                       int (*reconcile)(void *ctx, const char *key), void *ctx);
/* The same, but the workers take no key before every informer in synced (NULL-terminated,
 * copied) has made its first list, as client-go's controllers wait for their caches: a
 * reconcile that finds a cache not synced can only fail, and at a start with tens of
 * thousands of keys queued, their back-off would put the real pass seconds late. */
fl_ctrl_workers *fl_ctrl_workers_start_synced(fl_workqueue *q, const char *name, int n,
                                              int (*reconcile)(void *ctx, const char *key), void *ctx,
                                              fl_informer *const *synced);
/* The same, but each of the n threads takes up to batch keys that are ready at once and
 * reconciles them side by side on the parallel pool (core/parallel.h), without threads of
 * its own: for a controller whose reconciles mostly wait for their writes' commits, where a
 * burst of keys would otherwise wait in line for one commit after another. */
fl_ctrl_workers *fl_ctrl_workers_start_batched(fl_workqueue *q, const char *name, int n, int batch,
                                               int (*reconcile)(void *ctx, const char *key), void *ctx,
                                               fl_informer *const *synced);
/* Return once every informer in synced (NULL-terminated; NULL for none) has made its first
 * list, or q shuts down, or an informer stops: what a worker does before taking keys. */
void fl_ctrl_wait_synced(fl_workqueue *q, fl_informer *const *synced);
/* Shut q down (if not yet), join the workers, free. NULL-safe. */
void fl_ctrl_workers_join(fl_ctrl_workers *w);

/* Reconcile metrics of one controller, as the shared workers count them:
 * flotilla_controller_reconcile_total{controller,result} with result success (0),
 * requeue (> 0) or error (< 0), and flotilla_controller_reconcile_duration_seconds
 * {controller}. For a controller with a worker loop of its own; init once (takes the
 * metrics lock), observe lock-free from any worker. */
typedef struct fl_ctrl_reconcile_metrics {
    struct fl_metric_series *success, *requeue, *error, *duration;
} fl_ctrl_reconcile_metrics;
void fl_ctrl_reconcile_metrics_init(fl_ctrl_reconcile_metrics *m, const char *controller);
void fl_ctrl_reconcile_observe(const fl_ctrl_reconcile_metrics *m, int rc, double seconds);
/* Seconds on CLOCK_MONOTONIC, to time a reconcile. */
double fl_ctrl_now_s(void);
/* Give key back to q after a reconcile that returned rc: done (0) forgets its failures; a
 * conflict (FL_ECONFLICT: a write met a newer object than the cache had, which the cache will
 * have in a moment) comes back after FL_CTRL_CONFLICT_RETRY_MS, its failures forgotten too;
 * anything else backs off (fl_workqueue_add_rate_limited). A conflict is no failure: counted
 * as one, a busy object's key (a binding whose Works the execution controller keeps writing)
 * backed off to minutes and its changes waited that long. */
#define FL_CTRL_CONFLICT_RETRY_MS 200
void fl_ctrl_requeue(fl_workqueue *q, const char *key, int rc);

/* Queue a ResourceBinding or ClusterResourceBinding in q under its key
 * (fl_names_binding_key: "R|ns/name", "C|name"), for the controllers that reconcile
 * bindings. Any thread. */
void fl_ctrl_queue_binding(fl_workqueue *q, const json_t *binding);
/* Queue every binding the two informers (ResourceBindings, ClusterResourceBindings) hold:
 * for events that may concern any of them (a cluster or an override policy changed). */
void fl_ctrl_queue_bindings(fl_workqueue *q, fl_informer *rbs, fl_informer *crbs);

/* Queue in q every key of the object keys (a set: key -> anything), then drop the
 * reference to keys (it may be NULL). Any thread. */
void fl_ctrl_queue_keys(fl_workqueue *q, json_t *keys);

/* A copy of obj (an informer's, read-only) to change the status of and hand over to
 * fl_client_update_status_given: its own are only its top level, its status's top level and
 * the status's conditions (what a status writer changes, fl_condition_set included); the
 * rest is shared read-only with obj. *status is the copy's status object. */
json_t *fl_ctrl_status_copy(const json_t *obj, json_t **status);

/* ---- interpreter changes ----
 *
 * Several controllers keep what the resource interpreter answered for a kind in objects
 * (replicas on the binding, revised replicas in Works, reflected status and health in Work
 * status, the template's aggregated status, attached dependency bindings, retained fields
 * in members). When a ResourceInterpreterCustomization or an interpreter webhook for a kind
 * is added, changed or deleted, the customizations controller calls
 * fl_ctrl_interp_changed(apiVersion, kind) and every subscriber requeues what it derived
 * for that kind; the reconciles compare with their caches, so what the change does not
 * affect costs reads only. */

/* A subscriber: requeue the keys derived from objects of (api_version, kind); either may
 * be NULL, meaning any (a webhook whose rules use "*"). Runs on the notifying thread with
 * the manager's subscriber lock held: it must be quick (list caches, add to a queue) and
 * must not call fl_ctrl_interp_changed. */
typedef void (*fl_ctrl_interp_fn)(void *ctx, const char *api_version, const char *kind);

/* Subscribe fn(ctx, ...) until the manager stops. From a controller's start(). */
void fl_ctrl_on_interp_change(const fl_ctrl_env *env, fl_ctrl_interp_fn fn, void *ctx);

/* Tell every subscriber that the interpreter's answers for (api_version, kind) (NULL:
 * any) may have changed. Any thread; a no-op once the manager has begun stopping, so no
 * subscriber runs into a controller that is going away. */
void fl_ctrl_interp_changed(const fl_ctrl_env *env, const char *api_version, const char *kind);

/* Whether an object of (api_version, kind) is concerned by a change of (want_av,
 * want_kind) as passed to subscribers (NULL matches anything; a NULL api_version or kind
 * of the object matches nothing). */
bool fl_ctrl_interp_matches(const char *want_av, const char *want_kind, const char *api_version, const char *kind);

/* Queue in q, as fl_ctrl_queue_binding does, every binding of the two informers whose
 * spec.resource matches (api_version, kind) (fl_ctrl_interp_matches): the subscriber of a
 * controller whose queue holds binding keys. */
void fl_ctrl_queue_bindings_of(fl_workqueue *q, fl_informer *rbs, fl_informer *crbs, const char *api_version,
                               const char *kind);

/* ---- resuming at a reconciled revision ----
 *
 * A controller whose reconciles depend on nothing but the store's objects (no clock, no
 * member) registers its queue: the manager is idle when every registered queue is, and the
 * server notes the store's head then as the reconciled revision. At a start where the head
 * is still that revision (env->resumed_rev), such a controller queues nothing for the
 * objects its informers' first lists hold as they were then: fl_ctrl_resumed_add says which.
 * Every change after that revision is queued as ever: the shared informers tell the
 * deletions since as well (fl_informer_config.resume_rev), and so must any other informer
 * whose adds a controller skips. A controller that keeps indexes builds them from those
 * adds all the same. */
void fl_ctrl_resumable(const fl_ctrl_env *env, fl_workqueue *q);
/* Whether every controller's start() has returned and every informer they read (the shared
 * ones and the templates' kinds) has made its first list: /readyz's informer-sync, as
 * kube-apiserver's waits for its informers' caches. False for NULL. Any thread while m is not
 * being stopped; quick (each informer's lock, in turn). */
bool fl_ctrl_manager_synced(fl_ctrl_manager *m);
/* Whether every registered queue is idle (fl_workqueue_idle). Any thread. */
bool fl_ctrl_manager_idle(fl_ctrl_manager *m);
/* Before a controller queues what a change may concern among all the objects of a kind (a
 * requeue of every binding, the templates a policy selects): while any informer is still
 * making its first list, its adds could not be found by that walk, so from now on nothing
 * is skipped (fl_ctrl_resumed_add answers false). A no-op once every first list is over,
 * or when the process did not resume. */
void fl_ctrl_resume_broad(const fl_ctrl_env *env);
/* In an add handler: whether the process resumed and obj was last written at or before the
 * revision it resumed at: then a first list told it, as every controller had last seen it,
 * and it is not a change. */
bool fl_ctrl_resumed_add(const fl_ctrl_env *env, const json_t *obj);
/* A controller whose resuming needs more than the store's objects at the reconciled
 * revision notes it under a name of fl_ctrl_note_names: fn(ctx, rev) gives what to note with
 * revision rev (a new reference), or NULL when it cannot say yet. The server writes it beside
 * the revision, and a start there hands it back (env->resumed_notes). One fn per name. */
typedef json_t *(*fl_ctrl_note_fn)(void *ctx, int64_t rev);
void fl_ctrl_note(const fl_ctrl_env *env, const char *name, fl_ctrl_note_fn fn, void *ctx);
/* What the fn of name gives now for rev (a new reference); NULL if it cannot say, or no
 * controller registered name. */
json_t *fl_ctrl_manager_note(fl_ctrl_manager *m, const char *name, int64_t rev);
/* The notes' names, NULL-terminated (controllers.c): where the member watches had reached
 * (FL_CTRL_NOTE_WATCHES, fl_exec_marks), and which bindings propagate dependencies and are
 * depended on (FL_CTRL_NOTE_DEPENDENCIES). */
#define FL_CTRL_NOTE_WATCHES "member_watches"
#define FL_CTRL_NOTE_DEPENDENCIES "dependencies"
extern const char *const fl_ctrl_note_names[];

/* The controllers the server runs, NULL-terminated (controllers.c). */
extern const fl_controller *const fl_server_controllers[];

#endif
