/* statuslag.h - how long a change in a member takes to show in the control plane's status:
 * flotilla_status_lag_seconds{stage}.
 *
 * A clock per stage of the status path, keyed by what a controller reconciles: the first change
 * seen for a key starts its clock (later ones, before it is reflected, do not restart it), and
 * the reconcile that reflects it stops the clock and observes the time. Stages:
 *   "work":    a member object's change seen by its watch -> its Work's status written (or found
 *              current), by the execution controller;
 *   "binding": a Work's status change seen -> its binding's aggregatedStatus and its template's
 *              status written (or found current), by the binding status controller.
 * Memory: one entry per key with a change not reflected yet. Thread-safe. */
#ifndef FL_STATUSLAG_H
#define FL_STATUSLAG_H

typedef struct fl_status_lag fl_status_lag;

/* stage: a static string, the label value. Never NULL. */
fl_status_lag *fl_status_lag_new(const char *stage);
void fl_status_lag_free(fl_status_lag *l);
/* A change for key was seen: start its clock unless running. NULL-safe (l). */
void fl_status_lag_seen(fl_status_lag *l, const char *key);
/* key's status now reflects what was seen: observe the time since its clock started, if it
 * runs, and stop it. NULL-safe. */
void fl_status_lag_reflected(fl_status_lag *l, const char *key);
/* key is gone, or not ours: stop its clock without observing. NULL-safe. */
void fl_status_lag_forget(fl_status_lag *l, const char *key);

#endif
