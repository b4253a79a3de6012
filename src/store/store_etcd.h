/* store_etcd.h - the etcd backend's state, shared by its files (internal to src/store).
 *
 * The backend is three files over one struct:
 *   store_etcd.c        opening (the whole prefix read into the cache at one revision),
 *                       closing, reads, notes and compaction;
 *   store_etcd_watch.c  the watcher thread (one etcd watch per replica, applying every
 *                       event to the cache and publishing it to the hub), the hub's replay
 *                       of older history from etcd, and opening watches;
 *   store_etcd_write.c  writes (a transaction per op, compared on the key's revision) and
 *                       the value format that lets a value carry its own revision.
 * docs/internals/store.md, "The etcd backend", explains the design. */
#ifndef FL_STORE_ETCD_H
#define FL_STORE_ETCD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/etcd_client.h"
#include "store/etcd_lead.h"
#include "store/store_impl.h"

/* Outside the store's prefix: the key replicas coordinate compaction on (as kube-apiserver's
 * "compact_rev_key"; etcd's compaction is the whole cluster's, so one key for all), and,
 * under "/flotilla" + the prefix (one control plane's, as its keys are), the notes and the
 * controllers' lead (etcd_lead.h). */
#define FL_ETCD_COMPACT_KEY "/flotilla/compact_rev"
#define FL_ETCD_SIDE "/flotilla"
#define FL_ETCD_NOTES "/notes/"
#define FL_ETCD_LEAD "/lead"

/* How long a writer waits for the watcher to apply the revision it wrote (read-your-writes),
 * and a replica that lags for a revision a caller names, before FL_ETIMEDOUT. */
#define FL_ETCD_APPLY_WAIT_MS 10000
/* One attempt of a write transaction: a member that lost its leader holds a proposal until
 * etcd's own timeout (seconds) rather than failing it, so a write is tried again after this
 * (it cannot apply twice: every write compares a revision), up to FL_ETCD_APPLY_WAIT_MS. */
#define FL_ETCD_WRITE_ATTEMPT_MS 500

typedef struct fl_store_etcd {
    fl_store base;             /* first: a fl_store * is a fl_store_etcd * */
    fl_etcd *c;
    fl_etcd *wc;               /* the same members, for write transactions: a short timeout per
                                  attempt (FL_ETCD_WRITE_ATTEMPT_MS), retried (store_etcd_write.c) */
    char *prefix;              /* etcd key of store key K: prefix + K */
    size_t plen;
    char *prefix_end;          /* fl_etcd_prefix_end(prefix) */
    char *side;                /* FL_ETCD_SIDE + prefix: the notes' and the lead's keys */
    struct fl_etcd_lead *lead; /* the controllers' lead over side + FL_ETCD_LEAD */
    int64_t window;            /* compaction keeps this many revisions behind the head */
    int interval_ms;           /* between compaction rounds; < 0 never */

    pthread_mutex_t mu;        /* guards what follows, and the waits on cv */
    pthread_cond_t cv;         /* (monotonic) head moved, closing began, inflight reached 0 */
    bool closing;              /* fl_store_free began: writes get FL_ECLOSED */
    int inflight;              /* writes running */
    struct fl_store_etcd_inflight *writes; /* those writes, the oldest last (fl_store_probe asks) */
    int64_t compact_version;   /* FL_ETCD_COMPACT_KEY's version as this replica last saw it */
    bool stop;                 /* atomic: the watcher, the compactor and replays end */
    pthread_t watcher, compactor;
    bool have_watcher, have_compactor;
    bool size_hook;            /* flotilla_store_db_size_bytes registered (scrape_size) */
} fl_store_etcd;

/* ---- store_etcd.c ---- */

/* The etcd key of store key (heap). */
char *fl_store_etcd_key(const fl_store_etcd *s, const char *key);
/* Log one line about a failed etcd request (what was asked, e->msg) and map it to the
 * store's code: FL_ETIMEDOUT (unreachable, no leader, outcome unknown), FL_ETOOBIG,
 * FL_EEXPIRED (noting e->compact_rev as compacted), else FL_EIO. */
int fl_store_etcd_fail(fl_store_etcd *s, const char *what, const fl_etcd_error *e);
/* Compaction reached rev (another replica's, or etcd's own): compact_rev only grows. */
void fl_store_etcd_saw_compaction(fl_store_etcd *s, int64_t rev);
/* Wait until the watcher has applied revision rev (head >= rev): 0, FL_ETIMEDOUT after
 * timeout_ms, FL_ECLOSED when the store closes meanwhile. Any thread but the watcher's. */
int fl_store_etcd_wait_applied(fl_store_etcd *s, int64_t rev, int timeout_ms);
/* Read the whole prefix at one revision (the latest) into a new cache: 0 with *cache filled
 * and *rev the revision it was read at, or an FL_E* code (logged). */
int fl_store_etcd_load(fl_store_etcd *s, fl_store_cache *cache, int64_t *rev);

/* ---- store_etcd_write.c ---- */

/* A value as etcd holds it (the format store_etcd_write.c describes) made the store's value
 * at revision rev: the revision's digits put back where the value says. A value in no such
 * format (written by someone else) is taken as it is. A new reference. */
fl_blob *fl_store_etcd_stamp(const fl_blob *stored, int64_t rev);
int fl_store_etcd_write(fl_store *s, fl_store_op *op);
/* How long the oldest write still running has run, in ms at monotonic now_ms; 0 when none
 * runs (store_impl.h's queued_ms: a write that waits on an unreachable etcd shows here). */
int64_t fl_store_etcd_queued_ms(fl_store *s, int64_t now_ms);

/* ---- store_etcd_watch.c ---- */

/* Start the watcher thread from the head (store opened, hub created): 0 or FL_EIO. */
int fl_store_etcd_watcher_start(fl_store_etcd *s);
/* The hub's replay callback (fl_watch_replay_fn; ctx is the store). */
int fl_store_etcd_replay(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max,
                         fl_store_event **out, size_t *n);
int fl_store_etcd_watch(fl_store *s, const char *prefix, int64_t from_rev, fl_watch **out);
/* store_impl.h's unchanged_since: a replay of (rev, head] finds no event under the prefix. */
bool fl_store_etcd_unchanged_since(fl_store *s, int64_t rev);

#endif
