/* failover_cmd.h - `flotilla ctl failover history`: where a workload has been and why it
 * moved, read from its binding (docs/failover.md, "Seeing it").
 *
 * fl_ctl_failover is the command; fl_failover_table is its core, shared with the unit test
 * (tests/unit/test_failover_cmd.c), so that what the test checks is what the command prints. */
#ifndef FL_CLI_FAILOVER_CMD_H
#define FL_CLI_FAILOVER_CMD_H

#include <jansson.h>

/* The command. argv starts after `flotilla ctl` with the verb "failover" removed, so argv[0]
 * is the subcommand ("history"); flags may come anywhere. Prints the timeline (or -o
 * yaml|json) on stdout, one error line on stderr. Returns the exit code: 0 done, 1 failure
 * (control plane unreachable, kind not served, template or binding not found), 2 usage.
 * Main thread only. */
int fl_ctl_failover(int argc, char **argv);

/* The timeline of a ResourceBinding or ClusterResourceBinding object (only read), as
 * kubectl prints a table: a header line, then one row per status.failoverHistory[] item and
 * one in-progress row per spec.gracefulEvictionTasks[] entry that no open history item
 * already stands for, ordered by start time (history order among equal times). Columns:
 * STARTED, FROM, TO, REASON, PURGE MODE, PRESERVED STATE, OUTCOME, COMPLETED. Returns a
 * heap string the caller frees, or NULL when there is nothing to show. Any thread. */
char *fl_failover_table(const json_t *binding);

#endif
