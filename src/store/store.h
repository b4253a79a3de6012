/* store.h - the store interface: a revision log of keys to object bytes.
 *
 * Every write appends one revision; the revision number is global, strictly
 * increasing, and is the resourceVersion of the object written. Revisions may skip
 * numbers: an etcd store's are etcd's, which count every transaction of the cluster. The store knows
 * nothing about Kubernetes: keys are strings ("/<group>/<resource>/<ns>/<name>"),
 * values are opaque bytes (JSON rendered by the API layer).
 *
 * Backends implement it behind one table of operations (store_impl.h), chosen once by
 * fl_store_open from fl_store_config: SQLite (store_sqlite*.c), the embedded default,
 * memory only (store_memory.c, below), and etcd (store_etcd*.c), for several server
 * replicas on one etcd cluster; docs/internals/store.md, "The backend contract", is what
 * each implements. The watch fan-out (store_watch.c) and the index of
 * live keys (store_cache.c) serve them all. A backend keeps every live key with its
 * revisions in memory, the values of the keys written last (SQLite: up to
 * value_cache_bytes; the others are read from the file when asked for), and a window of
 * recent events for watches; everything older comes from the log.
 *
 * A store can also live in memory only (fl_store_config.memory): the same contract
 * in every respect except durability, for the many small stores of simulated member
 * clusters. It keeps a bounded window of history in memory instead of a log, writes
 * synchronously on the caller's thread, and starts no threads of its own.
 *
 * Threads: every function may be called from any thread concurrently. Writes are
 * durable (fsync'd per the backend's durability setting) before fl_store_write()
 * returns; concurrent writes are group-committed. A memory store applies each write
 * under its lock on the caller's thread and is never durable. */
#ifndef FL_STORE_H
#define FL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/blob.h"

typedef struct fl_store fl_store;

/* ---- opening ---- */

typedef struct fl_store_config {
    const char *path;          /* SQLite database file; ignored (may be NULL) when memory is set */
    int64_t compact_window;    /* revisions kept behind the head for watches; 0 = default (100000;
                                  a memory store: ring_events) */
    int compact_interval_ms;   /* how often to compact; 0 = default (5000); <0 = never automatically;
                                  ignored by a memory store, which compacts as it writes */
    bool durable;              /* true: synchronous=FULL (fsync every commit); false: NORMAL */
    bool memory;               /* true: memory only, nothing on disk, lost on fl_store_free (below) */
    size_t ring_events;        /* events of history kept in memory for watches; 0 = default
                                  (SQLite 65536, memory 1024) */
    size_t ring_bytes;         /* cap on the bytes of values the history in memory keeps alive:
                                  SQLite: the ring's values, 0 = default (32 MiB; older events
                                  are read from the log); memory store: the old values beyond
                                  the current state, 0 = no cap */
    size_t load_split_rows;    /* SQLite: rows in the log from which opening reads it in two
                                  halves at once; 0 = default (50000) */
    size_t value_cache_bytes;  /* SQLite: the current values kept in memory, the last written
                                  first: up to this many bytes of writes (0 = default, 16 MiB).
                                  Reads of other keys' values read the file. A memory store
                                  keeps every value. */
    const char *load_mark;     /* SQLite, optional: opening notes the keys whose value holds
                                  these bytes (fl_store_marked), or whose writer said it holds
                                  what they stand for (fl_store_op.mark), without reading the
                                  values where the rows say so already */
    /* etcd (store_etcd*.c): non-NULL selects it, and path and memory are ignored. A
     * comma-separated list of the cluster's client URLs (http:// or https://). */
    const char *etcd_servers;
    const char *etcd_cafile;   /* optional: CA bundle to verify https servers */
    const char *etcd_certfile; /* optional, with etcd_keyfile: client certificate */
    const char *etcd_keyfile;
    const char *etcd_prefix;   /* where the store's keys live in etcd: key K is prefix + K;
                                  NULL = "/registry" */
} fl_store_config;

/* Memory stores (memory = true).
 * - No file, no SQLite, no threads: fl_store_write renders and applies the op under
 *   the store's lock on the calling thread and publishes its event before returning.
 * - Revisions, compare-and-swap, create revisions, tombstones (DELETE events with the
 *   final value), lists and watches behave exactly as in the SQLite store.
 * - History: the last min(compact_window, ring_events) revisions are kept in memory,
 *   each with the value it replaced, fewer if ring_bytes is set and those old values
 *   would exceed it. That window is all the "log" there is: fl_store_compact_rev()
 *   advances as writes push revisions out of it, and fl_store_compact() has nothing
 *   more to do. Lists at a revision inside the window are served from memory; watches
 *   from inside it get every later event; anything older gets FL_EEXPIRED.
 * - Memory: an empty store costs under 1 KiB and one with 3 small keys about 2 KiB.
 *   The history array grows on demand up to ring_events records of 32 bytes, and
 *   each record keeps the value it replaced alive until it leaves the window, so a
 *   busy store holds up to ring_events old values: bound them with ring_bytes
 *   (docs/internals/store.md, "Memory stores"). */

/* Whether cfg's etcd settings go together, for a command line to say before opening: NULL,
 * or a static message naming the flag by kube-apiserver's name (--etcd-prefix must start
 * with '/' and not end with one; --etcd-certfile and --etcd-keyfile come together). */
const char *fl_store_etcd_config_problem(const fl_store_config *cfg);

/* Open (creating if needed) a store. *out is set on every path (NULL on failure).
 * Loads the current state into memory. Returns FL_EIO on open/schema failure, FL_EINVAL
 * if cfg is NULL or names neither a path, memory nor etcd servers (or etcd's are not
 * usable URLs or TLS files: one line logged); an etcd store that cannot read its state
 * returns FL_ETIMEDOUT (no member answered) or FL_EIO, having logged why. */
int fl_store_open(const fl_store_config *cfg, fl_store **out);
/* Stop background work, wake and end all watches (they return FL_ECLOSED), close. NULL-safe. */
void fl_store_free(fl_store *s);

/* ---- reading ---- */

typedef struct fl_kv {
    fl_blob *value;      /* owned reference: release with fl_blob_unref */
    int64_t rev;         /* revision of the last write to this key (its resourceVersion) */
    int64_t create_rev;  /* revision that created this incarnation of the key */
} fl_kv;

/* Current value of key. On success fills *out (caller unrefs out->value).
 * FL_ENOTFOUND if absent. */
int fl_store_get(fl_store *s, const char *key, fl_kv *out);

/* The value of key as revision rev wrote it (a new reference in *out): from memory when
 * that is the key's current value there, else from the log. FL_EEXPIRED when the log has
 * no such revision of key (compacted, or another key's; a memory store: not the current
 * one); FL_EIO if reading failed. For a cache that keeps an object's revision but not its
 * bytes. */
int fl_store_get_at(fl_store *s, const char *key, int64_t rev, fl_blob **out);

/* The keys noted at opening (fl_store_config.load_mark) whose values hold the mark's bytes,
 * their writers having said nothing (fl_store_op.mark 0), handed over for the caller to check:
 * *keys is a new array of n heap strings (the caller frees each and the array), and n is
 * returned; later calls hand over none. -1 (and *keys NULL) when the store was opened without
 * a mark. */
long fl_store_marked(fl_store *s, char ***keys);
/* How many keys' latest values their writers said hold what the mark stands for
 * (fl_store_op.mark 1), as opening found them; -1 without a mark. */
long fl_store_marked_said(fl_store *s);

/* Let go of what the store keeps in memory only to be quick, once writes have stopped for a
 * while (the server calls it when it trims its heap): the current values (reads go to the
 * file), the values of recent events (a watch opened from below the head replays from the
 * log) and the idle readers' page caches. Nothing a reader sees changes. A memory store
 * keeps everything. Any thread. */
void fl_store_rest(fl_store *s);
/* The bytes of values held in memory only to be quick (current values and recent events'), as
 * fl_store_rest lets go of them; 0 for a memory store. Any thread. */
size_t fl_store_quick_bytes(fl_store *s);

/* Head revision: the revision the state in memory is exact at, the highest written. An
 * etcd store's may be a revision of its cluster's that wrote none of the store's keys (the
 * revision it opened at, or one a progress notification reached): a list at it, a watch
 * from it and a write after it behave as at the last revision written before it. */
int64_t fl_store_rev(fl_store *s);

/* A health probe that writes nothing, for /livez and /readyz: 0 when a reader takes the
 * store's read lock within FL_STORE_PROBE_WAIT_MS (the index every read starts from answers)
 * and, with write_path, no write has waited in the backend's queue longer than
 * FL_STORE_WEDGED_MS (the writer takes batches; FLOTILLA_STORE_WEDGED_MS sets another bound,
 * for tests). FL_ETIMEDOUT otherwise, with why (cap bytes, may be NULL) saying which. Any
 * thread; waits at most FL_STORE_PROBE_WAIT_MS. */
#define FL_STORE_PROBE_WAIT_MS 200
#define FL_STORE_WEDGED_MS 10000
int fl_store_probe(fl_store *s, bool write_path, char *why, size_t cap);
/* Compacted revision: watches/lists from below it get FL_EEXPIRED. */
int64_t fl_store_compact_rev(fl_store *s);

/* Called for each key in order; return false to stop. The kv's value reference is
 * borrowed for the duration of the call: fl_blob_ref() it to keep it. */
typedef bool (*fl_store_list_fn)(void *ctx, const char *key, const fl_kv *kv);

/* Iterate live keys starting with prefix, in byte order of key, strictly after
 * start_after (NULL or "" = from the beginning).
 *   at_rev == 0: the current state, from memory; *rev_out = head revision at the
 *                moment of the snapshot (the list's resourceVersion).
 *   at_rev > 0:  the state as of revision at_rev (for paginated lists continuing
 *                a snapshot); FL_EEXPIRED if at_rev < compact revision. *rev_out = at_rev.
 * Stops after `limit` keys when limit > 0; *more_out (may be NULL) says whether keys
 * remained after the last one delivered. */
int fl_store_list(fl_store *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                  fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out);

/* As fl_store_list of the current state (at_rev 0, no limit), except that a key last
 * written at or before bare_upto comes without its value (kv->value NULL), which is not
 * read: for a reader that needs only the keys and revisions of what it knows already. */
int fl_store_list_bare(fl_store *s, const char *prefix, int64_t bare_upto, fl_store_list_fn fn, void *ctx,
                       int64_t *rev_out);

/* Number of live keys under prefix (for metrics and tests). */
size_t fl_store_count(fl_store *s, const char *prefix);

/* ---- writing ---- */

enum fl_store_op_type { FL_STORE_CREATE = 1, FL_STORE_UPDATE = 2, FL_STORE_DELETE = 3 };

/* Render the value to store with the revision it gets. Called once per attempted write
 * by SQLite and memory stores, on the store's writer thread (a memory store: on the
 * caller's thread, holding the store's lock, so keep it short), with the current value of
 * the key (NULL for create, and with fl_store_op.no_current) and the revision the write
 * will get. An etcd store learns the revision only when its transaction commits: it calls
 * render first with a stand-in revision (a random 18-digit number, whose digits it cuts out
 * of the bytes), then, once committed, again with the real one, on the caller's thread and
 * holding no lock; both calls get the same current value. So a render must be a pure
 * function of (current, rev), apart from remembering the last revision it was given (the
 * API's sets the object's resourceVersion). Returns a heap string
 * (malloc'd, the store takes ownership) and its length in *len; for a delete the
 * value is the object's final state as seen by DELETED watch events. Must not call
 * back into the store. */
typedef char *(*fl_store_render_fn)(void *ctx, const fl_blob *current, int64_t rev, size_t *len);

typedef struct fl_store_op {
    int type;                 /* enum fl_store_op_type */
    const char *key;
    int64_t prev_rev;         /* UPDATE/DELETE: required current revision, 0 = any */
    fl_store_render_fn render;
    void *ctx;
    /* Optional: told the value rendered for this op as soon as it exists, before the commit
     * makes it visible to anyone (on the store's writer thread; ctx as render's). The op may
     * still fail after this: then the value is never stored. An etcd store calls it once,
     * with the value of the second render (the real revision), after its commit but before
     * the write returns; its readers see those same bytes. */
    void (*rendered)(void *ctx, fl_blob *value);
    /* Optional, instead of render: the value as a blob (refcount 1, the store takes it),
     * or NULL for FL_EINVAL. Lets a caller encode before the writer thread and leave it
     * only the revision to put in: the writer serializes every write. Same rules as render. */
    fl_blob *(*render_blob)(void *ctx, const fl_blob *current, int64_t rev);
    /* The render does not read current: it gets NULL, so the writer need not read a value
     * that is not in memory from the file. */
    bool no_current;
    /* With a load_mark: 1 the value holds what the mark stands for, -1 it does not; kept
     * with the row, so that opening reads no value for it. 0: opening looks for the mark's
     * bytes in the value (fl_store_marked hands such keys over for the caller to check). */
    signed char mark;
    /* Set by fl_store_write from the calling thread's fence (fl_store_fence_thread), for the
     * backend: the write must fail with FL_EFENCED unless this process still leads. */
    bool fenced;
    /* results */
    int64_t rev;              /* revision written (on success) */
    fl_blob *value;           /* on success: reference to the value now stored (caller unrefs);
                                 for DELETE the final value; NULL on failure */
} fl_store_op;

/* Apply one write and wait until it is durable (a memory store: until it is applied; an
 * etcd store: committed by the cluster and applied to this replica's memory, so that the
 * caller reads its own write). Returns:
 *   0            success; op->rev and op->value set
 *   FL_EEXIST    CREATE of a live key
 *   FL_ENOTFOUND UPDATE/DELETE of an absent key
 *   FL_ECONFLICT prev_rev != 0 and != the key's current revision
 *   FL_EIO       the commit failed (nothing was written)
 *   FL_ECLOSED   the store is closing
 *   FL_ETIMEDOUT etcd: no member answered, no leader, or the outcome is unknown (the write
 *                may have committed); or it committed but this replica did not see it
 *                within FL_ETCD_APPLY_WAIT_MS (10 s)
 *   FL_ETOOBIG   etcd: the request was larger than the cluster takes
 * An etcd store's DELETE whose final value differs from the current one takes two
 * revisions: the final value is put, then deleted (watchers see an update, then the
 * delete carrying it); op->rev is the delete's. */
int fl_store_write(fl_store *s, fl_store_op *op);

/* ---- notes ----
 *
 * A note is a named number the store keeps beside the log for its user, outside the
 * revisions: writing one moves no revision and tells no watch. The server notes in one the
 * revision up to which its controllers had finished (docs/internals/propagation.md,
 * "Resuming at a reconciled revision"). Names are short ASCII words. A memory store keeps
 * none: a read answers FL_ENOTFOUND, a write FL_EUNSUPPORTED. An etcd store keeps each as a
 * key of its own, /flotilla/notes/<name>, outside the store's prefix (its writes take a
 * revision of the cluster's, none of the store's). */

/* Set note name to value, durably (per the store's durability) before it returns: 0, or
 * FL_EIO. Any thread; the store's writes go on meanwhile. */
int fl_store_note_set(fl_store *s, const char *name, int64_t value);
/* Note name into *value: 0, FL_ENOTFOUND, or FL_EIO. */
int fl_store_note_get(fl_store *s, const char *name, int64_t *value);
/* A note that is a text (the server's member watches and where each had reached): as
 * fl_store_note_set and _get; *text is a heap string (NULL unless 0 is returned). */
int fl_store_note_set_text(fl_store *s, const char *name, const char *text);
int fl_store_note_get_text(fl_store *s, const char *name, char **text);
/* Whether no key of the store changed after revision rev (a noted one) up to the head: the
 * state at the head is the state at rev. A SQLite or memory store: the head is rev (each of
 * its revisions is a change of its own). An etcd store: its head is the cluster's revision,
 * which moves with every transaction of the cluster (notes, leases, other prefixes), so it
 * asks etcd whether any revision in between changed a key under the prefix; false when it
 * cannot tell (compacted, unreachable). */
bool fl_store_unchanged_since(fl_store *s, int64_t rev);

/* Compact now: forget superseded revisions older than head - window. Returns new compact rev. */
int64_t fl_store_compact(fl_store *s);

/* ---- leading ----
 *
 * Servers that share one store (replicas of a control plane on one etcd) elect one of them
 * to run the controllers. The lead is a lease in the store: the leader renews it, the others
 * wait for it to lapse or to be released. Every write a controller makes is fenced on it:
 * the store commits it only while the writer's process still holds the lead, so a leader
 * that was paused past its lease cannot commit anything after another took over. A store
 * that only one process can open (SQLite, whose data directory the server locks; memory)
 * has nobody to compete with: its process leads from the start and nothing is fenced. */

/* Whether other processes may share this store (and so contest the lead). */
bool fl_store_shared(fl_store *s);

/* Campaign for the lead as identity (a name for logs and for who-leads: host and a part
 * unique to the replica, the same at each of its starts) with a lease of ttl_s seconds. A
 * lead held under this very identity is a former process's of this replica, now gone: it
 * is taken back at once rather than after its lease. Returns 0 once this process leads (at once for a
 * store nobody shares), FL_ECLOSED when *stop turns non-zero or the store closes first
 * (both looked at every few hundred ms); it retries through the store's failures meanwhile,
 * with a log line. From a return of 0 on, lost(ctx) is called once, on a thread of the
 * store's, if the lead is lost (its lease lapsed or was taken): fenced writes then fail with
 * FL_EFENCED. After lost, a new campaign may follow; one at a time. Any thread. */
int fl_store_lead(fl_store *s, const char *identity, int ttl_s, const volatile int *stop, void (*lost)(void *ctx),
                  void *ctx);
/* Give the lead up (a clean stop): another process takes it over at once. NULL-safe; does
 * nothing when this process does not lead. Any thread, before fl_store_free. */
void fl_store_lead_release(fl_store *s);
/* The identity of the current leader into *holder (heap; NULL when nobody leads) and since
 * when (ms since the epoch; may be NULL): 0, or the store's error. Any thread. */
int fl_store_leader(fl_store *s, char **holder, int64_t *since_ms);

/* Fence the calling thread's later writes on the lead (on: true) or stop (false); returns
 * the previous setting, for the caller to put back. The server fences the threads that
 * serve its controllers' requests. No effect on a store nobody shares. */
bool fl_store_fence_thread(bool on);

/* ---- watching ---- */

enum fl_event_type { FL_EV_PUT_CREATE = 1, FL_EV_PUT_UPDATE = 2, FL_EV_DELETE = 3 };

typedef struct fl_watch_event {
    int type;          /* enum fl_event_type */
    const char *key;   /* valid while the event is held */
    int64_t rev;
    fl_blob *value;    /* the new value; for DELETE the final value (borrowed from the event) */
} fl_watch_event;

typedef struct fl_watch fl_watch;

/* Watch keys under prefix for revisions > from_rev. from_rev must be >= compact rev
 * (else FL_EEXPIRED). Events older than the in-memory window are replayed from the log,
 * then live events follow with no gap and no duplicate. *out set on every path. */
int fl_store_watch(fl_store *s, const char *prefix, int64_t from_rev, fl_watch **out);

/* Wait up to timeout_ms (-1 = forever) for the next event. On success *ev points to an
 * event valid until the next call to fl_watch_next or fl_watch_free.
 * Returns 0, FL_ETIMEDOUT, FL_ECLOSED (store closing or watch cancelled), or FL_EEXPIRED
 * (the watcher fell so far behind that its backlog overflowed; it must re-list). */
int fl_watch_next(fl_watch *w, fl_watch_event **ev, int timeout_ms);
/* Wake a blocked fl_watch_next, making it return FL_ECLOSED. Any thread. */
void fl_watch_cancel(fl_watch *w);
/* Stop and free. NULL-safe. Not concurrently with fl_watch_next on the same watch. */
void fl_watch_free(fl_watch *w);
/* Call fn(ctx) whenever the watch may have something new for fl_watch_next: an event queued,
 * the watch cancelled, expired or closed with the store. For a caller that polls with
 * timeout 0 instead of blocking (the HTTP transport parks a watch's connection). fn runs on
 * the publishing thread with store locks held: it must be quick and must not call into the
 * store. Set it before the first poll; fn(NULL) removes it. It is never called after
 * fl_watch_free returns. Any thread. */
void fl_watch_set_notify(fl_watch *w, void (*fn)(void *ctx), void *ctx);

/* Number of open watches (gauge for /metrics). */
size_t fl_store_watch_count(fl_store *s);

#endif
