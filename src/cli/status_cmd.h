/* status_cmd.h - `flotilla ctl status`: is it live everywhere, and if not, where and why?
 * A kubectl-style table of bindings from their status.summary (controllers/summary.h), a
 * drill-down per cluster from the bindings' Works, --watch and --wait (docs/status.md,
 * "flotilla ctl status").
 *
 * fl_ctl_status is the command; fl_status_row is its core for one binding, so that what a
 * test checks is what the command prints. */
#ifndef FL_CLI_STATUS_CMD_H
#define FL_CLI_STATUS_CMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The command. argv starts after `flotilla ctl` with the verb "status" removed; flags may
 * come anywhere. Prints the table (or -o yaml|json) on stdout, one error line on stderr.
 * Returns the exit code: 0 the status was read (whatever it says), or with --wait everything
 * selected is Current; 1 failure (control plane unreachable, kind not served, nothing by that
 * name), or --wait's timeout with a line naming what is not Current; 2 usage. With --watch or
 * --wait it blocks SIGINT and SIGTERM and takes them itself (exit 0 from --watch). Main thread
 * only. */
int fl_ctl_status(int argc, char **argv);

/* The columns of a binding's row, in order. */
enum {
    FL_STATUS_NAMESPACE,
    FL_STATUS_NAME,        /* the template: kind/name, the kind lowercased */
    FL_STATUS_STATE,       /* summary.state */
    FL_STATUS_CURRENT,     /* "current/desired" */
    FL_STATUS_PROGRESS,    /* a bar of current over desired: "[#####.....]" */
    FL_STATUS_FAILED,
    FL_STATUS_IN_PROGRESS,
    FL_STATUS_UNKNOWN,
    FL_STATUS_AGE,         /* since summary.lastChangeTime, as kubectl prints ages */
    FL_STATUS_NOT_CURRENT, /* the first clusters not Current with their state and reason, then
                            * kubectl's " + N more..." */
    FL_STATUS_NCOLS
};
extern const char *const fl_status_headers[FL_STATUS_NCOLS];

/* The row of binding b (a ResourceBinding or ClusterResourceBinding, only read) at now_ms:
 * cells[FL_STATUS_NCOLS] are heap strings the caller frees. A binding without a summary yet
 * (a server that does not keep one, or not written yet) is Unknown with its spec.clusters as
 * desired. Returns whether its state is Current. Any thread. */
bool fl_status_row(const json_t *b, int64_t now_ms, char *cells[FL_STATUS_NCOLS]);

/* kubectl's age of a duration in ms ("45s", "3m12s", "4h", "12d"), into out. */
void fl_status_age(int64_t ms, char out[32]);

#endif
