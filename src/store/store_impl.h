/* store_impl.h - the store's backend interface and the state every backend shares
 * (internal to src/store).
 *
 * store.c holds the public functions of store.h: each checks its arguments and makes one
 * indirect call through the table of operations (struct fl_store_backend) of the backend
 * the store was opened with, as SQLite calls its VFS through sqlite3_vfs and curl its TLS
 * library through struct Curl_ssl. The backends today: SQLite (store_sqlite.c,
 * store_sqlite_write.c), the embedded default, memory only (store_memory.c), for
 * simulated member clusters, and etcd (store_etcd*.c), for replicas sharing a cluster;
 * docs/internals/store.md, "The backend contract", says what each must do.
 *
 * Every backend keeps the same state in memory, struct fl_store below: every live key with
 * its revisions in the ordered index (store_cache.c) behind one rwlock, the head and
 * compacted revisions, and the watch fan-out (store_watch.c) it publishes its events to.
 * A backend's own store embeds it as its first member, so the public handle is the
 * backend's object and no call costs more than the one indirection:
 *
 *     typedef struct fl_store_sqlite { fl_store base; sqlite3 *db; ... } fl_store_sqlite;
 *
 * The reads of the current state that do not depend on the backend (fl_store_count,
 * fl_store_rev, fl_store_compact_rev, fl_store_watch_count) read this state directly;
 * the helpers at the end serve the backends' gets and lists of it. Nothing outside
 * src/store includes this header, except the store's unit tests. */
#ifndef FL_STORE_IMPL_H
#define FL_STORE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_cache.h"
#include "store/store_watch.h"

/* flotilla_store_db_size_bytes's help, the same whichever backend sets it */
#define FL_STORE_DB_SIZE_HELP                                                                                          \
    "Bytes of the store on disk: SQLite's database file and write-ahead log, or the database of the etcd member "     \
    "that answered."

/* A backend's operations. Each has the contract of the public function of the same name
 * in store.h, with the arguments that function has already checked (noted per operation);
 * every one may be called from any thread concurrently, as the public ones. The optional
 * ones may be NULL: the public function then answers as noted. */
typedef struct fl_store_backend {
    /* cfg non-NULL and chosen for this backend (fl_store_open). Allocates the backend's
     * store, initialises its base (fl_store_base_init), loads the current state into the
     * cache, sets head and compact_rev, creates the hub. *out set on every path. */
    int (*open)(const fl_store_config *cfg, fl_store **out);
    /* s non-NULL. Stop background work, end every watch (fl_watch_hub_free), release all. */
    void (*free)(fl_store *s);

    /* key non-NULL, *out zeroed. */
    int (*get)(fl_store *s, const char *key, fl_kv *out);
    /* key non-NULL, rev > 0, *out NULL. */
    int (*get_at)(fl_store *s, const char *key, int64_t rev, fl_blob **out);
    /* prefix and fn non-NULL, at_rev >= 0; *rev_out already at_rev and *more_out (when
     * not NULL) false. at_rev 0: the current state, *rev_out the head of its snapshot. */
    int (*list)(fl_store *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out);
    /* prefix and fn non-NULL, bare_upto >= 0, *rev_out 0. */
    int (*list_bare)(fl_store *s, const char *prefix, int64_t bare_upto, fl_store_list_fn fn, void *ctx,
                     int64_t *rev_out);

    /* op checked (key, a render, a known type); op->rev 0 and op->value NULL. */
    int (*write)(fl_store *s, fl_store_op *op);
    /* prefix non-NULL, from_rev >= 0, *out NULL. */
    int (*watch)(fl_store *s, const char *prefix, int64_t from_rev, fl_watch **out);
    int64_t (*compact)(fl_store *s);

    /* Notes: an integer, or a text when text is not NULL (set) or wanted (get: text
     * non-NULL, *text NULL; value then NULL). value is zeroed by the caller for get. */
    int (*note_set)(fl_store *s, const char *name, int64_t value, const char *text);
    int (*note_get)(fl_store *s, const char *name, int64_t *value, char **text);
    /* Optional (NULL: unchanged since rev only when the head is rev, as where every
     * revision is the store's own): whether no key changed in (rev, head]. */
    bool (*unchanged_since)(fl_store *s, int64_t rev);

    /* Optional (NULL: the backend keeps nothing only to be quick; rest does nothing and
     * quick_bytes answers 0). */
    void (*rest)(fl_store *s);
    size_t (*quick_bytes)(fl_store *s);
    /* Optional (NULL: no load mark; marked answers -1 with *keys NULL, marked_said -1).
     * *keys already NULL. */
    long (*marked)(fl_store *s, char ***keys);
    long (*marked_said)(fl_store *s);
    /* Optional (NULL: writes are applied on the caller's thread, none waits in a queue):
     * milliseconds the oldest write still waiting for the backend's writer has waited at
     * monotonic time now_ms, 0 when none waits. Quick: takes only the queue's lock. */
    int64_t (*queued_ms)(fl_store *s, int64_t now_ms);
    /* Optional (NULL: nobody else opens this store: the lead is this process's at once, and
     * op->fenced asks nothing): fl_store_lead's campaign, with its arguments as given
     * (identity non-NULL, ttl_s > 0); lead_release and leader as their public functions. */
    int (*lead)(fl_store *s, const char *identity, int ttl_s, const volatile int *stop, void (*lost)(void *ctx),
                void *ctx);
    void (*lead_release)(fl_store *s);
    int (*leader)(fl_store *s, char **holder, int64_t *since_ms);
} fl_store_backend;

extern const fl_store_backend fl_store_sqlite_backend;
extern const fl_store_backend fl_store_memory_backend;
extern const fl_store_backend fl_store_etcd_backend;

/* The state every backend keeps; the first member of each backend's store. */
struct fl_store {
    const fl_store_backend *be;
    pthread_rwlock_t lock;     /* guards cache and head for readers; the backend's writer
                                  holds it for writing to apply a write */
    fl_store_cache cache;      /* every live key, its revisions, and its value when in memory */
    int64_t head;              /* atomic; written under lock by the backend's writer */
    int64_t compact_rev;       /* atomic */
    fl_watch_hub *hub;         /* created by the backend's open once head is known */
    struct fl_metric_series *write_s[3][2]; /* flotilla_store_write_duration_seconds by
                                               [op type - FL_STORE_CREATE][failed] */
    struct fl_metric_series *commit_s, *commit_n; /* the backend's group commits: time, writes */
    struct fl_metric_series *compact_n, *compact_s; /* compactions finished, and how long each took */
};

/* Whether the calling thread's writes are fenced on the lead (fl_store_fence_thread), for a
 * backend's writes that take no op (notes). */
bool fl_store_thread_fenced(void);

/* Initialise s's shared state for backend be (hub NULL, revisions 0). The lock prefers
 * writers: readers never nest it (lists copy out before calling back), so a stream of
 * readers cannot starve the writer. */
void fl_store_base_init(fl_store *s, const fl_store_backend *be);
/* Count one group commit of the backend's writer: how many writes, how long (ns). */
void fl_store_base_count_commit(fl_store *s, size_t writes, int64_t ns);
/* Count one compaction finished, from its start to its end (ns). */
void fl_store_base_count_compaction(fl_store *s, int64_t ns);
/* Free the cache and destroy the lock (the hub is the backend's to free first). */
void fl_store_base_close(fl_store *s);

/* op's value at revision rev over current (NULL when absent): its render_blob's, else its
 * render's bytes in a blob; NULL when the op renders nothing (FL_EINVAL). The backend's
 * writer, once per attempted write (etcd: with a stand-in revision, then the real one). */
fl_blob *fl_store_render_value(fl_store_op *op, const fl_blob *current, int64_t rev);

/* ---- reads of the current state, for the backends' get, get_at and lists ---- */

/* key's node as fl_store_get reports it, under the read lock: 0 with *out filled (out->value
 * a new reference, or NULL when the value is not in memory: the backend reads it), or
 * FL_ENOTFOUND. */
int fl_store_base_get(fl_store *s, const char *key, fl_kv *out);
/* key's value if its current revision is rev and it is in memory (a new reference), else NULL. */
fl_blob *fl_store_base_get_at(fl_store *s, const char *key, int64_t rev);
/* With s->lock held (read): copy into sn the live keys under prefix after start_after
 * (NULL or "" = from the first), at most limit (0 = all), with references to their values
 * in memory; a key last written at or before bare_upto is copied without its value. Sets
 * *more when keys remained past limit, and returns whether a key that was not bare had no
 * value in memory (the backend reads it before delivering). */
bool fl_store_base_copy(fl_store *s, fl_store_snap *sn, const char *prefix, const char *start_after, size_t limit,
                        int64_t bare_upto, bool *more);

/* A list of the current state for a backend whose every value is in memory (memory, etcd):
 * the keys under prefix after start_after, at most limit (0: all), those written at or before
 * bare_upto without their values, copied under the read lock and delivered to fn after it.
 * *rev_out the head of the copy; *more_out (may be NULL) whether keys remained. */
int fl_store_base_list(fl_store *s, const char *prefix, const char *start_after, size_t limit, int64_t bare_upto,
                       fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out);

#endif
