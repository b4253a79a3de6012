/* livestate.h - one live state per member object, in the vocabulary kpt and cli-utils'
 * kstatus made familiar: Current, InProgress, Failed, Terminating, NotFound, Unknown.
 *
 * Where the interpreter's health says only healthy or not, the live state says where an
 * object is on its way: still rolling out (InProgress), stuck for good (Failed: a
 * Deployment past its progress deadline, a Pod in CrashLoopBackOff), going away
 * (Terminating), or done (Current). The execution engine stores it in each Work's
 * manifestStatuses entry as `liveStatus` (controllers/workstatus.c), and the binding
 * status controller copies the state into aggregatedStatus.
 *
 * The rules are kstatus's (generic ones first, then one rule per built-in kind, a Ready
 * condition for other kinds), with the interpreter's health rule for custom kinds; the
 * table is in docs/status.md and each rule is commented below. A state is a pure
 * function of the object and, for one rule (a Pod unschedulable for long), the time:
 * reasons and messages carry no timestamps, only replica counts and the object's own
 * condition texts, so a Work's entry changes only when what it says changes.
 *
 * Pure functions over the caller's objects (read only): any thread. */
#ifndef FL_LIVESTATE_H
#define FL_LIVESTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "interp/interp.h"

enum fl_live_state {
    FL_LIVE_UNKNOWN = 0,
    FL_LIVE_CURRENT,
    FL_LIVE_IN_PROGRESS,
    FL_LIVE_FAILED,
    FL_LIVE_TERMINATING,
    FL_LIVE_NOT_FOUND,
};

/* Bounds of a verdict's texts, the terminating NUL included. A longer condition message
 * or interpreter error is cut ("..." marks the cut). */
#define FL_LIVE_REASON_MAX 64
#define FL_LIVE_MESSAGE_MAX 160

/* How long a Pod may stay unschedulable before it is Failed (kstatus waits as long). */
#define FL_LIVE_UNSCHEDULABLE_MS 15000

/* A verdict: the state, a CamelCase reason and a one-line message ("" when there is
 * nothing to say; Current usually has no reason). */
typedef struct fl_live {
    enum fl_live_state state;
    char reason[FL_LIVE_REASON_MAX];
    char message[FL_LIVE_MESSAGE_MAX];
} fl_live;

/* What a custom kind's health rule (a customization or a bundled script: not the native
 * rules) said of the object: rc and health as fl_interp_health returned them, err its
 * message when rc is not 0 (may be NULL). */
typedef struct fl_live_health {
    int rc;
    enum fl_health health;
    const char *err;
} fl_live_health;

/* The live state of obj, a member object of kind (api_version, kind); obj NULL: NotFound.
 * custom: the kind's health rule's answer when one other than the native rules answers
 * for it (NULL: judge by the built-in rules). now_ms: the wall clock in ms since the epoch
 * (for how long a Pod has been unschedulable). out is written on every path. */
void fl_live_judge(const json_t *obj, const char *api_version, const char *kind, const fl_live_health *custom,
                   int64_t now_ms, fl_live *out);

/* fl_live_judge, asking ip itself for the health of a kind whose health rule is not the
 * native one (ip may be NULL: built-in rules only). The clock is the wall clock. */
void fl_live_of(fl_interp *ip, const json_t *obj, const char *api_version, const char *kind, fl_live *out);

/* Whether a verdict with this reason may change with time alone, the object staying as it
 * is: a Pod not scheduled yet ("PodNotScheduled") is Failed once unschedulable for
 * FL_LIVE_UNSCHEDULABLE_MS. Whoever stores such a verdict judges the object again after that
 * long. reason may be NULL (false). */
bool fl_live_reason_ages(const char *reason);

/* "Current", "InProgress", "Failed", "Terminating", "NotFound", "Unknown". Never NULL. */
const char *fl_live_state_name(enum fl_live_state s);

/* The state a name says (as fl_live_state_name writes it); FL_LIVE_UNKNOWN for others. */
enum fl_live_state fl_live_state_parse(const char *name);

#endif
