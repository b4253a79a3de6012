/* members.h - API clients for member clusters, built from their Cluster and Secret.
 *
 * A Push cluster is reached at Cluster.spec.apiEndpoint with the credentials in the
 * Secret named by spec.secretRef (keys "token" and "caBundle", as Karmada stores them;
 * spec.insecureSkipTLSVerification honoured). Clients are cached per cluster and rebuilt
 * when the Cluster's or Secret's resourceVersion changes. Thread-safe. */
#ifndef FL_MEMBERS_H
#define FL_MEMBERS_H

#include "client/client.h"

typedef struct fl_members fl_members;

/* cp: the control-plane client (borrowed; must outlive the cache). */
fl_members *fl_members_new(fl_client *cp);
void fl_members_free(fl_members *m);

/* A client for cluster `name` (borrowed: valid until fl_members_free; it may be replaced
 * by a later call after credentials change, the old one staying valid until free).
 * Returns 0, FL_ENOTFOUND (no such Cluster or Secret), FL_EINVAL (*err says what is
 * missing), or FL_EUNSUPPORTED for a Pull cluster (the agent delivers to those). */
int fl_members_client(fl_members *m, const char *name, fl_client **out, char **err);

/* Forget a cluster's cached client (after unjoin). */
void fl_members_forget(fl_members *m, const char *name);

#endif
