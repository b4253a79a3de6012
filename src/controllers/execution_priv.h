/* execution_priv.h - what the execution engine's files share, and nothing else includes.
 *
 * The engine (fl_exec, execution.h) is one object in six files:
 *   execution.c          the engine: its lifecycle, the Work informer's handlers, the
 *                        reconcile and the apply of a Work's manifests to its member;
 *   execution_suspend.c  suspension: what a suspended Work or a paused cluster reports
 *                        instead of a delivery, and the Cluster's Paused acknowledgement;
 *   execution_watches.c  the member watches over time: started ahead while the Work cache
 *                        makes its first list, resumed where they were noted, swept by the
 *                        resync, which also retries the Works that did not apply;
 *   execution_waiting.c  the Works waiting for delivery and the first statuses held for
 *                        them, and what /metrics says of them;
 *   execution_push.c     the push controller of `flotilla server` (the public API, and
 *                        fl_exec_hold_events);
 *   execution_migrate.c  migration: the adoption allow-list and released Works.
 * This header holds the engine's state, a manifest's target in its member, and the few
 * functions one of those files calls in another. Every function here runs on the engine's
 * own threads (workers, the ahead thread, the resync thread, informer handlers); the locks
 * are struct fl_exec's. */
#ifndef FL_EXECUTION_PRIV_H
#define FL_EXECUTION_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "controllers/execution.h"
#include "controllers/workstatus.h"

#define EXEC_MAX_WORKERS 16

struct fl_exec {
    fl_client *cp;
    fl_exec_ops ops;
    fl_interp *interp, *own_interp;
    fl_recorder *recorder;
    fl_informer *rbs, *crbs; /* optional: to report interpreter failures on bindings */
    int want_workers;
    fl_informer *works;
    bool works_borrowed;  /* the server's shared Work informer: not ours to start or stop */
    fl_workqueue *q;
    fl_ws_watches *watches;
    pthread_t workers[EXEC_MAX_WORKERS];
    int nworkers;
    pthread_t resync;
    bool resync_started, started;
    fl_client_cancel *stop;
    atomic_bool quit;
    /* delivery in flight per cluster, for the Paused acknowledgement: under mu, a worker
     * checks the cluster is not paused and counts itself in, in one step, so once a pause
     * is visible and the count is zero nothing can be applying to that member */
    pthread_mutex_t mu;
    json_t *inflight;  /* cluster -> number of workers applying or removing */
    json_t *want_ack;  /* clusters whose Paused acknowledgement waits for inflight to drain */
    /* Works applied for the first time whose first status waits (first_status_later):
     * key -> an array indexed by enum fs_field; under mu */
    json_t *first_status;
    int64_t first_status_ms, first_status_max_ms;
    /* Works whose status this engine wrote, until the Work cache holds that write: key -> the
     * resourceVersion (integer) the write left; under mu (fl_exec_write_status) */
    json_t *written;
    /* Works added, or changed in what delivery reads, whose delivery has not been tried
     * since or is being tried: key -> [the enqueue's number (undelivered_seq), its binding's
     * key or null, the first enqueue's CLOCK_MONOTONIC ns]; under mu. First statuses wait for them (first_status_later). */
    json_t *undelivered;
    json_t *undelivered_by; /* binding key -> how many of its Works are in undelivered */
    struct fl_metric_series *m_delivery[2]; /* flotilla_execution_delivery_duration_seconds: ok, error */
    json_int_t undelivered_seq;
    int64_t busy_told_ms; /* busy_told: when last (the server's tick alone calls fl_exec_marks) */
    /* Works that joined undelivered in the second from window_ms: burst_works or more
     * start a burst, which lasts while more keep joining (in_burst) */
    int64_t window_ms, adds, burst_works, burst_until_ms;
    int64_t hold_undelivered; /* first statuses wait while this many other Works wait for delivery */
    /* Member watches started ahead, while the Work cache makes its first list
     * (fl_exec_watch_ahead): the (cluster, kind) use keys seen, and those waiting for the
     * ahead thread; under mu */
    json_t *ahead_seen, *ahead_todo;
    /* Resuming (fl_exec_resume): the noted member watches the ahead thread has still to
     * start, and the clusters whose unchanged Works a first list brings are left alone;
     * under mu */
    json_t *resume_todo, *resume_clusters;
    /* the kind sets Works use, for their tags (fl_exec_work_tag): an array of
     * [[apiVersion, kind], ...], and its index by "apiVersion\nkind\n..." (from 1); under
     * tag_mu */
    pthread_mutex_t tag_mu;
    json_t *kind_sets, *kind_set_ids;
    /* the clusters the last scrape counted Works of (fl_exec_scrape_works; scrapes are
     * serialised) */
    json_t *scraped_clusters;
    pthread_cond_t ahead_cv;
    pthread_t ahead;
    bool ahead_started;
};
typedef struct fl_exec exec;

/* The fields of a first-status record (fl_exec.first_status), times from fl_time_now_ms */
enum fs_field {
    FS_GENERATION, /* the Work's generation applied */
    FS_DUE,        /* when the status is due */
    FS_APPLIED,    /* when it was applied */
    FS_HELD_NOW,   /* held for other Works' deliveries now */
    FS_HELD,       /* held at all */
};

#define CLUSTER_KEY_PREFIX '@' /* queue key of a cluster's Paused acknowledgement: "@name" */

/* ---- execution.c ---- */

/* What a manifest addresses in its member. */
typedef struct fl_exec_target {
    const char *api_version, *kind, *name; /* borrowed from the manifest */
    const char *ns;            /* NULL for cluster-scoped kinds */
    char *resource;            /* heap */
    char *group;               /* heap */
    fl_gvr gvr;
    bool wrote;                /* apply_manifest created or updated the member object */
} fl_exec_target;

/* Resolve manifest i (m) of a Work for cluster in its member mc. 0, or an FL_E* code with
 * *emsg (heap) saying why. *t is set on every path: fl_exec_target_close it either way. */
int fl_exec_target_init(fl_client *mc, const char *cluster, int i, const json_t *m, fl_exec_target *t,
                        char **emsg);
void fl_exec_target_close(fl_exec_target *t);

/* The member client of cluster (borrowed, through ops.member). 0, or an FL_E* code with
 * *emsg (heap) naming the cluster and the cause. */
int fl_exec_member_client(fl_exec *x, const char *cluster, fl_client **mc, char **emsg);

/* The Work's manifestStatuses entry for ordinal (borrowed from work), or NULL. */
const json_t *fl_exec_entry_of(const json_t *work, int ordinal);

/* Manifest i's manifestStatuses entry (new reference) from its member object observed; the
 * interpreter's failures (reflecting status, health) are reported on the Work and its
 * binding. */
json_t *fl_exec_manifest_entry(fl_exec *x, const json_t *work, const char *cluster, int i, const fl_exec_target *t,
                               const json_t *observed);

/* Whether the Work's last apply, at its current generation, succeeded (see execution.c). */
bool fl_exec_settled(const json_t *w);

/* Queue the Work; delivery: it is new or changed in what delivery reads (not a resync's
 * retry), and waits for delivery unless settled. */
void fl_exec_enqueue_work(fl_exec *x, const json_t *work, bool delivery);

/* ---- execution_suspend.c ---- */

/* Count a worker in as delivering to cluster (true), unless the cluster is paused
 * (false: not counted). x->mu not held. */
bool fl_exec_delivery_begin(fl_exec *x, const char *cluster);
/* Count the worker out; the last one out queues a Paused acknowledgement that waited. */
void fl_exec_delivery_end(fl_exec *x, const char *cluster);

/* The reconcile of a cluster's queue key (CLUSTER_KEY_PREFIX): its Paused acknowledgement,
 * written now or by the last worker still delivering to it. 0 or the write's FL_E* code. */
int fl_exec_reconcile_cluster(fl_exec *x, const char *cluster);

/* What touches the member for a Work: apply it, or remove what it delivered. */
typedef int (*fl_exec_deliver_fn)(fl_exec *x, const char *cluster, const json_t *work,
                                  const fl_informer_src *src);

/* Run fn for the Work, unless it is suspended or its cluster paused: then acknowledge that
 * instead. *ran says whether fn ran; the result is fn's, or the acknowledgement's write. */
int fl_exec_deliver(fl_exec *x, const char *cluster, const json_t *work, const fl_informer_src *src,
                    bool suspended, fl_exec_deliver_fn fn, bool *ran);

/* ---- execution_migrate.c ---- */

/* Is the Work released (migration.flotilla.io/release: "true")? Then the executor takes its
 * marks off what it delivered and applies nothing. */
bool fl_exec_released(const json_t *work);
/* May work's Overwrite take over a member object nobody manages? Yes when the Work carries
 * the policy's adoption annotation or promote's mark (the binding controller copies them),
 * or the template's namespace on the control plane is labelled migration.flotilla.io/adopt=
 * "true" (read through x->cp: this runs only when such an object is found). A worker. */
bool fl_exec_adoption_allowed(exec *x, const json_t *work);

/* ---- execution_watches.c ---- */

/* While the Work cache makes its first list: queue the watches of the Work's kinds in its
 * cluster (and, for a kind seen the first time, in the others) for the ahead thread. */
void fl_exec_watch_ahead(fl_exec *x, const char *cluster, const json_t *work);
/* The cluster's Works (NULL: every cluster's) are reconciled whatever a first list says of
 * them from now on. x->mu not held. */
void fl_exec_unresume(fl_exec *x, const char *cluster);
/* fl_ws_watches_on_relisted's callback (ctx: the engine). */
void fl_exec_relisted(void *ctx, const char *cluster);
/* The Work informer's tagger (ctx: the engine; the informer's thread). */
uint32_t fl_exec_work_tag(void *ctx, const json_t *w);
/* The ahead thread and the resync thread (arg: the engine), started by fl_exec_start and
 * ended by fl_exec_free. */
void *fl_exec_ahead_loop(void *arg);
void *fl_exec_resync_loop(void *arg);

/* ---- execution_waiting.c ---- */

/* The Work at key (of the binding at bkey, NULL for none) waits for its delivery with a new
 * sequence number; its first enqueue's time stays (x->mu held). */
void fl_exec_undelivered_add(fl_exec *x, const char *key, const char *bkey);
/* The Work at key no longer waits (x->mu held). */
void fl_exec_undelivered_del(fl_exec *x, const char *key);
/* Does the first status of work, which has just applied with statuses, wait? If so it is
 * queued again for its time. x->mu not held. */
bool fl_exec_first_status_later(fl_exec *x, const json_t *work, const json_t *statuses);
/* The last waiting delivery was tried (x->mu held): the keys of the first statuses held for
 * it, due now, for the caller to queue once it has let go of mu. */
json_t *fl_exec_release_held(fl_exec *x);
/* The Work at key is gone: no first status to wait for. x->mu not held. */
void fl_exec_first_status_forget(fl_exec *x, const char *key);
/* fl_ws_write_status through x->cp, noting the resourceVersion a write left the Work at. */
int fl_exec_write_status(fl_exec *x, const json_t *work, bool applied, const char *reason, const char *message,
                         const char *stopped, json_t *statuses);
/* Is work, the Work cache's copy of key, older than this engine's last status write to it?
 * A reconcile on it would decide from what that write replaced, and its own write would
 * only meet a conflict: the cache's event of the write brings the key back instead. Forgets
 * the note once the cache holds the write. x->mu not held. */
bool fl_exec_copy_behind(fl_exec *x, const char *key, const json_t *work);
/* A delivery of the Work at key ended with rc: observe its time (x->mu not held). */
void fl_exec_count_delivery(fl_exec *x, const char *key, int rc);
/* The scrape hook: member watches open, Works waiting (ctx: the engine). */
void fl_exec_scrape(void *ctx);
/* At each scrape: flotilla_works{cluster, applied}, from the Work cache's tags. */
void fl_exec_scrape_works(exec *x);

/* ---- for execution_push.c ---- */

/* Hold r's Events back while Works wait for delivery, as first statuses are (up to the
 * first-status cap). r borrowed; undo with fl_recorder_hold_while(r, NULL, NULL, 0) before
 * fl_exec_free. */
void fl_exec_hold_events(fl_exec *x, fl_recorder *r);

#endif
