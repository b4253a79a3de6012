/* execution.h - delivery of Works to push-mode member clusters, and their status.
 *
 * Two files, one controller:
 *   execution.c   the controller: Work and Cluster informers, the work queue, and the
 *                 reconcile that applies (or, on deletion, removes) each manifest of a
 *                 Work in its member and writes the Work's status;
 *   workstatus.c  the member side: one informer per (member, kind) in use, shared by
 *                 all Works of that member, whose events re-queue the owning Work; the
 *                 native health rules; the manifestStatuses entries.
 * Design and rules: docs/internals/execution.md.
 *
 * Everything here except fl_execution_controller is internal to those two files. */
#ifndef FL_EXECUTION_H
#define FL_EXECUTION_H

#include <jansson.h>
#include <stdbool.h>

#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/controller.h"

/* The controller `flotilla server` runs (listed in controllers.c). */
extern const fl_controller fl_execution_controller;

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
 * still NULL), or FL_ECLOSED after close. */
int fl_ws_watch_get(fl_ws_watches *w, const char *cluster, fl_client *client, const char *api_version,
                    const char *kind, const char *resource, int wait_ms, fl_ws_watch **out);
fl_informer *fl_ws_watch_informer(fl_ws_watch *wt);
void fl_ws_watch_put(fl_ws_watches *w, fl_ws_watch *wt);

/* Stop the watches no Work needs any more: in_use is a set (a JSON object used for its
 * keys) of fl_ws_use_key() strings. */
void fl_ws_watches_sweep(fl_ws_watches *w, const json_t *in_use);
/* "cluster\napiVersion\nkind" as a heap string: the key of a watch in the registry. */
char *fl_ws_use_key(const char *cluster, const char *api_version, const char *kind);
/* Number of running watches (for logs and tests). */
size_t fl_ws_watches_count(fl_ws_watches *w);

/* ---- status (workstatus.c) ---- */

/* "Healthy", "Unhealthy" or "Unknown" for a member object by the native rules
 * (docs/internals/execution.md). Static string. */
const char *fl_ws_health(const char *group, const char *kind, const json_t *obj);
/* One status.manifestStatuses entry for manifest `ordinal`, whose member object is obj:
 * {identifier{ordinal, group, version, kind, resource, namespace, name}, status, health}.
 * New reference. */
json_t *fl_ws_manifest_status(int ordinal, const char *api_version, const char *kind, const char *resource,
                              const char *ns, const char *name, const json_t *obj);
/* Set work's Applied condition (status "True"/"False" from applied, reason, message,
 * observedGeneration; lastTransitionTime kept unless the status flips) and its
 * manifestStatuses (statuses, stolen; NULL or empty removes them), and write the status
 * through cp only when that changes what the Work has. Returns 0 or the write's FL_E*
 * code (FL_ECONFLICT when the Work moved on: retry). */
int fl_ws_write_status(fl_client *cp, const json_t *work, bool applied, const char *reason, const char *message,
                       json_t *statuses);

#endif
