/* up_ha.h - what `flotilla up --etcd N --replicas M` adds to `up` (up_cmd.c): a local etcd
 * cluster, and the data directories and kubeconfig of several server replicas.
 *
 * The etcd members are Debian's /usr/bin/etcd on loopback ports, each with its data
 * directory DIR/etcd/m<i> and log DIR/etcd/m<i>.log. The ports are chosen free on the
 * first run and kept in DIR/etcd/ports, since a member's data names its peers' addresses:
 * a later run on DIR brings the same cluster back. Replica i (from 1) keeps its data
 * directory in DIR/replica-<i> and logs to DIR/replica-<i>.log; replica 1 makes the
 * certificates and tokens, which the others are given a copy of, so that one kubeconfig
 * works against every replica. DIR/kubeconfig has a context per replica (replica-1 is
 * current). docs/ha.md is the user's page. */
#ifndef FL_UP_HA_H
#define FL_UP_HA_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#define FL_UP_ETCD "/usr/bin/etcd"

typedef struct fl_up_etcd {
    int n;
    int *client, *peer; /* ports */
    pid_t *pids;        /* -1 when not running */
    char *dir;          /* DIR/etcd */
    char *endpoints;    /* "http://127.0.0.1:C1,..." */
} fl_up_etcd;

/* Run exe with argv in a child, its output appended to log_path (NULL: stderr, stdout too).
 * The child gets SIGTERM when this process dies, however it dies, so a `kill -9` of `up`
 * leaves no orphans. Returns the child's pid, or -1. */
pid_t fl_up_spawn(const char *exe, char *const argv[], const char *log_path);

/* Choose (or read back from DIR/etcd/ports) the ports of an n-member cluster. 0, or 1 after
 * one line on stderr. */
int fl_up_etcd_prepare(fl_up_etcd *e, const char *dir, int n);
/* Start member i (from 0), its output to its log; the member gets SIGTERM when this process
 * dies. 0 or -1. */
int fl_up_etcd_start(fl_up_etcd *e, int i);
/* Wait until every member answers /health, or sigs (blocked) brings SIGINT/SIGTERM, or 30 s
 * pass: 0, or -1 after one line. */
int fl_up_etcd_wait(fl_up_etcd *e, const sigset_t *sigs);
/* Stop every member and free. */
void fl_up_etcd_close(fl_up_etcd *e);

/* Give replica data directory to (created 0700 when missing) a copy of from's pki/ files it
 * lacks. 0, or 1 after one line. */
int fl_up_share_pki(const char *from, const char *to);
/* Write DIR/kubeconfig with a context replica-<i> for each of the n replicas' own
 * kubeconfigs (DIR/replica-<i>/kubeconfig), and copy replica 1's bootstrap kubeconfig to
 * DIR/bootstrap-kubeconfig. 0, or 1 after one line. */
int fl_up_write_replica_kubeconfigs(const char *dir, int n);

#endif
