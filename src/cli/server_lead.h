/* server_lead.h - a server's campaign to lead the controllers among the replicas that share
 * its store (store.h, "leading"), and the Lease that shows who leads.
 *
 * The campaign runs on a thread of its own from fl_lead_start; the server's main loop looks
 * at fl_lead_state every quarter of a second and starts its controllers when it reads
 * FL_LEAD_LEADING; when it reads FL_LEAD_LOST it stops them, ends this campaign and starts
 * another (the API is served throughout: a replica that lost the lead is a standby). The
 * leader mirrors the lead into coordination.k8s.io/v1 Lease kube-system/FL_LEAD_LEASE, so
 * that `kubectl get lease -n kube-system` shows who leads; the store's lease, not that
 * object, is what decides. */
#ifndef FL_SERVER_LEAD_H
#define FL_SERVER_LEAD_H

#include <stdint.h>

#include "client/client.h"
#include "store/store.h"

#define FL_LEAD_LEASE "flotilla-controller-manager"
#define FL_LEAD_TTL_S 5 /* a standby takes over within this and a second after a crash */

enum fl_lead_state { FL_LEAD_CAMPAIGNING = 0, FL_LEAD_LEADING = 1, FL_LEAD_LOST = 2, FL_LEAD_STOPPED = 3 };

typedef struct fl_lead fl_lead;

/* Campaign for the lead of store s on a new thread, until it leads, *stop turns non-zero or
 * the store closes. The identity is this host's name and its data directory's (the same at
 * every start: a lead its killed former process held is taken back without waiting). */
fl_lead *fl_lead_start(fl_store *s, const char *data_dir, int ttl_s, const volatile int *stop);
/* enum fl_lead_state, now. Any thread. */
int fl_lead_state(const fl_lead *l);
const char *fl_lead_identity(const fl_lead *l);
/* Write the Lease that says this process leads, through the controllers' client (fenced:
 * it lands only while the lead is ours). 0, or the client's error (logged). */
int fl_lead_mirror(fl_lead *l, fl_client *cp);
/* End the campaign (joins its thread) and give the lead up if held, so that a standby
 * takes over at once. NULL-safe. Before the store is freed. */
void fl_lead_stop(fl_lead *l);

#endif
