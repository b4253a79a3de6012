/* rollout_cmd.h - `flotilla ctl rollout SUBVERB ...`: the rollout subverbs, dispatched from
 * one table in rollout_cmd.c. history and undo (a template's revisions, docs/rollouts.md,
 * "Revisions") live in rollout_cmd.c; the staged rollout's subverbs join the table from
 * their own file. */
#ifndef FL_CLI_ROLLOUT_CMD_H
#define FL_CLI_ROLLOUT_CMD_H

/* The command. argv starts after `flotilla ctl` with the verb "rollout" removed, so argv[0]
 * is the subverb; flags may come anywhere. Prints what the subverb prints on stdout, one
 * error line on stderr. Returns the exit code: 0 done, 1 failure (control plane unreachable,
 * kind not served, object or revision not found, a write refused), 2 usage. Main thread. */
int fl_ctl_rollout(int argc, char **argv);

#endif
