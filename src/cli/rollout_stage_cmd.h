/* rollout_stage_cmd.h - `flotilla ctl rollout status|pause|resume|approve|abort KIND/NAME`:
 * a template's staged rollout, seen and steered through the RolloutStrategy that names the
 * policy which claimed it (docs/rollouts.md). */
#ifndef FL_CLI_ROLLOUT_STAGE_CMD_H
#define FL_CLI_ROLLOUT_STAGE_CMD_H

#include <stdbool.h>

/* Whether sub is one of this file's subcommands. */
bool fl_ctl_rollout_stage_has(const char *sub);

/* The command: argv starts at the subcommand (argv[0] "status", ...), flags anywhere. Prints
 * on stdout, one error line on stderr. Returns the exit code: 0 done (status --watch: the
 * rollout Completed or RolledBack), 1 failure (no such template or strategy, nothing to
 * approve, a rollout that Halted or was Aborted while watched, the timeout), 2 usage. Main
 * thread only. */
int fl_ctl_rollout_stage(int argc, char **argv);

#endif
