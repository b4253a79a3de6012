/* execution.h - delivery of Works to member clusters, and their status.
 *
 * Two files, one engine with two users (the server's push controller and the pull agent):
 *   execution.c   the engine (fl_exec): the Work informer, the work queue, and the
 *                 reconcile that applies (or, on deletion, removes) each manifest of a
 *                 Work in its member and writes the Work's status; and the push
 *                 controller, which feeds it Clusters and member clients;
 *   workstatus.c  the member side: one informer per (member, kind) in use, shared by
 *                 all Works of that member, whose events re-queue the owning Work; the
 *                 native health rules; the manifestStatuses entries.
 * Design and rules: docs/internals/execution.md.
 *
 * The engine API below is what the agent (agent.c) uses; the fl_ws_* part is internal
 * to the two files. */
#ifndef FL_EXECUTION_H
#define FL_EXECUTION_H

#include <jansson.h>
#include <stdbool.h>

#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/controller.h"
#include "controllers/events.h"
#include "interp/interp.h"

/* The push controller `flotilla server` runs (listed in controllers.c): Works of
 * clusters whose syncMode is not Pull, members reached through fl_members. */
extern const fl_controller fl_execution_controller;

/* ---- the engine (execution.c) ----
 * Watches Works (in every karmada-es-* namespace, or one), applies them to members and
 * reports their status; the owner decides which clusters it delivers for and supplies
 * each one's member client. */
typedef struct fl_exec fl_exec;

/* What the engine needs to know about a Work's cluster. */
typedef struct fl_exec_cluster {
    bool deliver;   /* this engine delivers the cluster's Works (else: left alone) */
    bool present;   /* the Cluster exists: when it does not, nobody will deliver, so a deleted
                     * Work only loses the execution finalizer (which another engine, the
                     * cluster's agent or push controller, otherwise removes itself) */
    bool deleting;  /* the Cluster is being deleted: a member that cannot be reached no longer
                     * holds a deleted Work */
    bool paused;    /* the Cluster's spec.suspendDispatching: nothing reaches the member */
    long long generation; /* the Cluster's metadata.generation (what a Paused ack names) */
    bool pause_reported;  /* the Cluster has a Paused condition (a resume must then be reported) */
} fl_exec_cluster;

/* Both called from the engine's workers and resync thread, concurrently: thread-safe,
 * and quick (read caches, not the wire). */
typedef struct fl_exec_ops {
    /* *out is zeroed before the call. */
    void (*cluster)(void *ctx, const char *cluster, fl_exec_cluster *out);
    /* The member client for cluster (borrowed; must stay valid until fl_exec_free; a
     * different pointer later means new credentials). 0, or an FL_E* code with *err
     * (heap, may stay NULL) saying why. */
    int (*member)(void *ctx, const char *cluster, fl_client **out, char **err);
    /* Optional: fn(fctx, name) for each cluster this engine delivers to. A kind the Work
     * cache's first list shows is then watched in all of them at once (watch_ahead). */
    void (*each_cluster)(void *ctx, void (*fn)(void *fctx, const char *cluster), void *fctx);
    /* Optional, with fl_exec_resume: whether a Work a first list brings is as it was when
     * its cluster's member watches were noted (written at or before that revision). */
    bool (*resumed)(void *ctx, const json_t *work);
    void *ctx;
} fl_exec_ops;

typedef struct fl_exec_config {
    fl_client *cp;       /* the control plane (borrowed; outlives the engine) */
    const char *ns;      /* watch Works only in this namespace (the agent's own); NULL = all */
    int workers;         /* 0 = 4 */
    fl_interp *interp;   /* retain, reflect status, health (borrowed); NULL: the engine's own */
    fl_recorder *recorder; /* events on Works (borrowed); NULL: none */
    fl_informer *works;  /* a shared Work informer (borrowed, not started yet: the engine adds
                          * its handlers; the owner starts it, and stops it before
                          * fl_exec_free); NULL: the engine watches Works itself (in ns) */
    fl_informer *rbs, *crbs; /* optional (borrowed): the bindings, so that an interpreter
                          * failure is reported on the Work's binding too, not only on the
                          * Work; NULL: on the Work only */
    fl_exec_ops ops;
} fl_exec_config;

/* Create a stopped engine (no threads, no I/O). *out set on every path; FL_EINVAL
 * without cp or ops. */
int fl_exec_new(const fl_exec_config *cfg, fl_exec **out);
/* Before fl_exec_start: resume where the member watches were noted (fl_exec_marks, as
 * [cluster, apiVersion, kind, resource, revision] items; copied). Each starts at its
 * revision instead of listing, and a Work of one of those clusters that ops.resumed says
 * is unchanged is not reconciled: only what its watches tell since, or a change of its
 * own, queues it. A cluster whose watch cannot go on from there, or whose Cluster
 * changes, has all its Works reconciled (fl_exec_requeue_cluster). */
void fl_exec_resume(fl_exec *e, const json_t *marks);
/* The member watches as fl_exec_resume takes them (a new array), when the engine is idle:
 * the Work cache listed, nothing queued or being reconciled, no first status waiting, and
 * every watch listed; else NULL. Any thread. */
json_t *fl_exec_marks(fl_exec *e);
/* Start the Work informer, the workers and the 30 s resync. */
int fl_exec_start(fl_exec *e);
/* Re-queue every Work of a cluster (its Cluster appeared, changed mode, was paused or
 * resumed, or is going), and the cluster's own Paused acknowledgement. Any thread,
 * including informer handlers; NULL-safe. */
void fl_exec_requeue_cluster(fl_exec *e, const char *cluster);
/* Re-queue every Work with a manifest of (api_version, kind) (NULL: any; see
 * fl_ctrl_interp_matches): the interpreter's rules for that kind changed, so retain,
 * reflected status and health are worked out again. Any thread; NULL-safe. */
void fl_exec_requeue_kind(fl_exec *e, const char *api_version, const char *kind);
/* Stop promptly (watches, queue, workers; in-flight member requests finish) and free.
 * The ops are not called after it returns. NULL-safe. */
void fl_exec_free(fl_exec *e);

/* Marks on every object the controller delivers, as Karmada sets them. */
#define FL_MANAGED_LABEL "karmada.io/managed"
#define FL_WORK_NAME_ANNOTATION "work.karmada.io/name"
#define FL_WORK_NAMESPACE_ANNOTATION "work.karmada.io/namespace"
#define FL_CONFLICT_RESOLUTION_ANNOTATION "work.karmada.io/conflict-resolution"
#define FL_EXECUTION_FINALIZER "karmada.io/execution-controller"
#define FL_EXECUTION_SPACE_PREFIX "karmada-es-"

/* ---- member watches (workstatus.c) ----
 * A registry of informers, one per (cluster, apiVersion, kind), each watching only the
 * objects the controller manages there (label karmada.io/managed=true) in every
 * namespace. Every add, update or delete re-queues the owning Work (named by the
 * object's work.karmada.io/namespace and /name annotations) on the queue given at
 * creation. Thread-safe. */
typedef struct fl_ws_watches fl_ws_watches;
typedef struct fl_ws_watch fl_ws_watch;

/* q is borrowed and must outlive the registry. Never NULL. */
fl_ws_watches *fl_ws_watches_new(fl_workqueue *q);
/* Refuse new watches from now on and stop every informer (blocked waits return
 * FL_ECLOSED). Any thread but an informer handler. */
void fl_ws_watches_close(fl_ws_watches *w);
/* Close, then free. No watch may still be held. NULL-safe. */
void fl_ws_watches_free(fl_ws_watches *w);

/* The watch of kind (served as `resource`) in cluster, through client (borrowed; if the
 * cluster's client changed since the watch started, the watch is replaced). Started on
 * first use; waits up to wait_ms for its first list. Returns 0 and *out (release with
 * fl_ws_watch_put), FL_ETIMEDOUT (not listed yet: the member is slow or down; *out is
 * still NULL), or FL_ECLOSED after close. wait_ms < 0 does not wait: *out may not have
 * listed yet, and then its cache says nothing about what the member lacks. */
int fl_ws_watch_get(fl_ws_watches *w, const char *cluster, fl_client *client, const char *api_version,
                    const char *kind, const char *resource, int wait_ms, fl_ws_watch **out);
fl_informer *fl_ws_watch_informer(fl_ws_watch *wt);
/* Start the watch of kind in cluster at the member revision from, where it was noted
 * (fl_ws_watches_marks), unless it runs already: it lists nothing, and what changed since
 * re-queues its Works. If it has to list after all (the member's history does not reach
 * from, or the watch breaks before it lists once), the registry's relisted callback is
 * told the cluster once that list is over. 0 or FL_ECLOSED. */
int fl_ws_watch_resume(fl_ws_watches *w, const char *cluster, fl_client *client, const char *api_version,
                       const char *kind, const char *resource, const char *from);
/* fn(ctx, cluster) on an informer's thread: see fl_ws_watch_resume. Before any watch. */
void fl_ws_watches_on_relisted(fl_ws_watches *w, void (*fn)(void *ctx, const char *cluster), void *ctx);
/* Every watch as [cluster, apiVersion, kind, resource, revision]: the member revision up
 * to which its handlers have queued the Works of what it was told (fl_informer_told_rv; a
 * new array), or NULL while one has not listed or knows no such revision (the member's
 * are not numbers). */
json_t *fl_ws_watches_marks(fl_ws_watches *w);
/* Whether the watch has not listed yet, though its list moved (started, or had a page)
 * less than grace_ms ago: the list is on its way. A list that has not moved for that long
 * (the member is slow or down, or the list failed and waits to retry) is not waited for. */
bool fl_ws_watch_listing(fl_ws_watch *wt, int64_t grace_ms);
/* Put work_key back on the queue once the watch's current list is over (listed, or failed),
 * instead of retrying it meanwhile. False, and nothing parked, when the watch has listed. */
bool fl_ws_watch_park(fl_ws_watch *wt, const char *work_key);
void fl_ws_watch_put(fl_ws_watches *w, fl_ws_watch *wt);

/* Stop the watches no Work needs any more: in_use is a set (a JSON object used for its
 * keys) of fl_ws_use_key() strings, and of "<cluster>\n*" for all of a cluster's. */
void fl_ws_watches_sweep(fl_ws_watches *w, const json_t *in_use);
/* "cluster\napiVersion\nkind" as a heap string: the key of a watch in the registry. */
char *fl_ws_use_key(const char *cluster, const char *api_version, const char *kind);
/* Number of running watches (for logs and tests). */
size_t fl_ws_watches_count(fl_ws_watches *w);

/* ---- status (workstatus.c) ---- */

/* One status.manifestStatuses entry for manifest `ordinal`, whose member object is obj:
 * {identifier{ordinal, group, version, kind, resource, namespace, name}, status, health},
 * status and health ("Healthy", "Unhealthy", "Unknown") as the interpreter ip reflects
 * them. New reference. prev (may be NULL) is the entry the Work had for this ordinal:
 * when the interpreter fails to reflect the status, prev's status (if for the same
 * object) stays, and *reflect_err gets the interpreter's message; when health fails, it is
 * "Unknown" and *health_err gets the message. Both heap, the caller frees; NULL when the
 * step succeeded or the kind has no rule for it (not an error); either pointer may be
 * NULL. */
json_t *fl_ws_manifest_status(fl_interp *ip, int ordinal, const char *api_version, const char *kind,
                              const char *resource, const char *ns, const char *name, const json_t *obj,
                              const json_t *prev, char **reflect_err, char **health_err);
/* The key, in a manifestStatuses entry written after an apply, of the resourceVersion of
 * the member object the apply left (or found) as the manifest wants it. A later reconcile
 * that finds every object still at its recorded version skips the apply and the status
 * (docs/internals/execution.md, "A Work whose member objects did not move"). */
#define FL_WS_OBSERVED_RV "resourceVersion"

/* Set work's Applied condition (status "True"/"False" from applied, reason, message,
 * observedGeneration; lastTransitionTime kept unless the status flips; reason NULL leaves
 * Applied as it is), its Dispatching condition (stopped NULL: True/Dispatching; else
 * False with that reason; observedGeneration the Work's generation: the acknowledgement
 * of dispatching.h, so call this only once no apply of this Work is in flight) and its
 * manifestStatuses (statuses, stolen; NULL or empty removes them), and write the status
 * through cp only when that changes what the Work has. Returns 0 or the write's FL_E*
 * code (FL_ECONFLICT when the Work moved on: retry). */
int fl_ws_write_status(fl_client *cp, const json_t *work, bool applied, const char *reason, const char *message,
                       const char *stopped, json_t *statuses);

#endif
