/* etcd_lead.h - the controllers' lead among replicas on one etcd (internal to src/store; the
 * etcd backend's half of store.h's "leading").
 *
 * The lead is one key, created in a transaction only when absent and bound to a lease of the
 * candidate's: whoever created it leads while its lease lives. The leader renews the lease
 * every third of its time to live and checks the key is still the one it created; standbys
 * read the key and watch it from the revision they read, and try to create it as soon as its
 * delete arrives (a crash: the lease lapses after its time to live; a clean stop revokes it
 * at once). A standby's watch lasts FL_ETCD_LEAD_WATCH_MS at most, then it reads the key
 * again (that bound is how soon it sees its stop flag); after an error it waits
 * FL_ETCD_LEAD_POLL_MS before it reads again. A fenced write
 * carries a compare on the key's create revision, so it commits only while the key its
 * writer created still exists: a leader paused past its lease, whose key etcd deleted and
 * another replica created anew, commits nothing when it wakes. */
#ifndef FL_ETCD_LEAD_H
#define FL_ETCD_LEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "store/etcd_client.h"

#define FL_ETCD_LEAD_POLL_MS 100
#define FL_ETCD_LEAD_WATCH_MS 500

typedef struct fl_etcd_lead fl_etcd_lead;

/* A lead over key (copied) on client c (borrowed: outlives the lead). */
fl_etcd_lead *fl_etcd_lead_new(fl_etcd *c, const char *key);
/* Stop renewing (without giving the lead up: fl_etcd_lead_release does) and free. NULL-safe. */
void fl_etcd_lead_free(fl_etcd_lead *l);

/* store.h's fl_store_lead over this key: 0 once leading, FL_ECLOSED when *stop turns non-zero
 * first; lost(ctx) once, on the renewing thread, when the lead is lost. */
int fl_etcd_lead_campaign(fl_etcd_lead *l, const char *identity, int ttl_s, const volatile int *stop,
                          void (*lost)(void *ctx), void *ctx);
/* Give the lead up: stop renewing and revoke the lease (the key goes with it). */
void fl_etcd_lead_release(fl_etcd_lead *l);
/* Who leads now (the key's holder; NULL when nobody) and since when (ms since the epoch). */
int fl_etcd_lead_holder(fl_etcd_lead *l, char **holder, int64_t *since_ms, fl_etcd_error *e);

/* For a fenced write: *cmp becomes the compare that holds only while this process's lead
 * stands (key's create revision is the one it created). false when it does not lead (the
 * write is then FL_EFENCED without being sent). */
bool fl_etcd_lead_fence(fl_etcd_lead *l, fl_etcd_cmp *cmp);
/* The lead's key, for a transaction's failure branch to GET (whether a failed fenced write
 * failed on the fence: fl_etcd_lead_fenced_out). */
const char *fl_etcd_lead_key(const fl_etcd_lead *l);
/* Given what a GET of the lead's key found (kv NULL: nothing), whether the fence failed. */
bool fl_etcd_lead_fenced_out(const fl_etcd_lead *l, const fl_etcd_kv *kv);

#endif
