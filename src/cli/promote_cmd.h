/* promote_cmd.h - `flotilla ctl promote` (promote_cmd.c) and `flotilla ctl release`
 * (release_cmd.c): taking running workloads under the control plane's management, and
 * letting go of them again (docs/migration.md). */
#ifndef FL_CLI_PROMOTE_CMD_H
#define FL_CLI_PROMOTE_CMD_H

/* The commands. argv starts after `flotilla ctl` with the verb removed; flags may come
 * anywhere. Output on stdout, one error line per failure on stderr. Return the exit code: 0
 * done, 1 failure, 2 usage. Main thread only. */
int fl_ctl_promote(int argc, char **argv);
int fl_ctl_release(int argc, char **argv);

#endif
