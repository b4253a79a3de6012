/* execution.h - delivery of Works to member clusters: the execution engine and the push
 * controller.
 *
 * One engine with two users (the server's push controller and the pull agent):
 *   execution.c          the engine (fl_exec): the Work informer, the work queue, and the
 *                        reconcile that applies (or, on deletion, removes) each manifest of
 *                        a Work in its member and writes the Work's status;
 *   execution_suspend.c  suspended Works and paused clusters: their acknowledgements;
 *   execution_watches.c  member watches started ahead and resumed; the resync;
 *   execution_push.c     the push controller, which feeds the engine Clusters and member
 *                        clients;
 * the four sharing execution_priv.h. The member side (the shared member watches, the
 * manifestStatuses entries, the Work's status write) is workstatus.h.
 * Design and rules: docs/internals/execution.md.
 *
 * The engine API below is what the agent (agent.c) uses. */
#ifndef FL_EXECUTION_H
#define FL_EXECUTION_H

#include <jansson.h>
#include <stdbool.h>

#include "client/client.h"
#include "client/informer.h"
#include "controllers/controller.h"
#include "controllers/events.h"
#include "core/wellknown.h" /* the engine's marks on what it delivers, which its users read too */
#include "interp/interp.h"

/* The push controller `flotilla server` runs (listed in controllers.c): Works of
 * clusters whose syncMode is not Pull, members reached through fl_members. */
extern const fl_controller fl_execution_controller;

/* ---- the engine (execution.c and its parts) ----
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

#endif
