/* store_cmd.h - `flotilla ctl store`: a control plane's store backed up while its server runs,
 * or copied into another store (SQLite or etcd) while it is stopped (docs/store.md). */
#ifndef FL_CLI_STORE_CMD_H
#define FL_CLI_STORE_CMD_H

/* The command. argv starts at the word "store" (argv[0]); flags may come anywhere after it.
 *   store backup --data-dir DIR OUT
 *   store copy --from sqlite:DIR --to sqlite:DIR2|etcd:URL[,URL] [--etcd-prefix P]
 *              [--etcd-cafile F] [--etcd-certfile F --etcd-keyfile F]
 * Prints what was written on stdout, progress of a long run on stderr, and any failure as one
 * line on stderr. Returns the exit code: 0 done, 1 failure (nothing left half-written where the
 * destination allows it: see store_cmd.c), 2 usage. Main thread only. */
int fl_ctl_store(int argc, char **argv);

#endif
