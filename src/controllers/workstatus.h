/* workstatus.h - the member side of Work delivery (workstatus.c): the member watches the
 * execution engine shares per (member, kind), the manifestStatuses entries, and the Work's
 * status write.
 *
 * Used by the execution engine (execution.c and its parts, execution_priv.h); nothing here
 * knows the engine. Design: docs/internals/execution.md, "Member watches". */
#ifndef FL_WORKSTATUS_H
#define FL_WORKSTATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/statuslag.h"
#include "interp/interp.h"

/* ---- member watches ----
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
/* The clock of the status path's "work" stage (statuslag.h): the watches start a Work's when
 * an object of it changes in its member; the reconcile that writes its status stops it. */
fl_status_lag *fl_ws_watches_lag(fl_ws_watches *w);
/* Number of running watches (for logs and tests). */
size_t fl_ws_watches_count(fl_ws_watches *w);

/* ---- status ---- */

/* One status.manifestStatuses entry for manifest `ordinal`, whose member object is obj:
 * {identifier{ordinal, group, version, kind, resource, namespace, name}, status, health,
 * liveStatus}, status and health ("Healthy", "Unhealthy", "Unknown") as the interpreter ip
 * reflects them, liveStatus {state, reason, message} the object's live state
 * (interp/livestate.h: "Current", "InProgress", "Failed", "Terminating", "NotFound",
 * "Unknown"; reason and message absent when empty). obj NULL: the object is not in the
 * member, an entry with no status, health "Unknown" and state NotFound, and no error.
 * New reference. prev (may be NULL) is the entry the Work had for this ordinal:
 * when the interpreter fails to reflect the status, prev's status (if for the same
 * object) stays, and *reflect_err gets the interpreter's message; when health fails, it is
 * "Unknown" (liveStatus Unknown, the message in it) and *health_err gets the message. Both
 * heap, the caller frees; NULL when the step succeeded or the kind has no rule for it (not
 * an error); either pointer may be NULL. The entry is a function of obj (and, for a Pod
 * unschedulable for a while, the clock): no timestamps, so an object that did not move
 * gives the same entry and the Work no write. */
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
 * through cp only when that changes what the Work has. When only manifestStatuses (and the
 * liveState summed from them) change, they are merged into the stored Work whatever its
 * resourceVersion: what the member's objects say does not depend on it. A change of a
 * condition is written pinned to work's resourceVersion. Returns 0 or the write's FL_E* code
 * (FL_ECONFLICT when a condition was to change and the Work moved on: retry). *written_rv
 * (may be NULL) gets the resourceVersion the write left the Work at, 0 when nothing was
 * written. */
int fl_ws_write_status(fl_client *cp, const json_t *work, bool applied, const char *reason, const char *message,
                       const char *stopped, json_t *statuses, int64_t *written_rv);

#endif
