/* informer.h - a list+watch cache of one resource, with change handlers.
 *
 * An informer keeps an up-to-date copy of every object of one resource (optionally
 * one namespace, optionally filtered by label/field selectors) so that controllers
 * read from memory instead of the wire, and tells handlers what changed:
 *   1. LIST (paged) and fill the cache; handlers see each object as an add (unless
 *      silent_first_list), as each page arrives (in process, as the server decodes the
 *      list), while has_synced is still false;
 *   2. WATCH from the list's resourceVersion, with bookmarks, applying each event;
 *   3. when the watch ends cleanly (the server's timeout), watch again from the last
 *      resourceVersion seen; when it is too old (410 Expired) or the stream breaks,
 *      LIST again and diff the new list against the cache, so handlers see exactly
 *      the adds, updates and deletes that happened meanwhile;
 *   4. failures back off exponentially (bounded, with jitter) before retrying.
 *
 * The cache is keyed "namespace/name" ("name" for cluster-scoped objects), the same
 * keys controllers put in their fl_workqueue. Objects in the cache are shared: every
 * object handed out (to handlers, by get and list) must be treated as read-only; copy
 * it (fl_json_deep_copy) before changing it.
 *
 * Threads: the informer runs one thread of its own; handlers run on it, one at a
 * time, after the cache already reflects the change (so a handler may call get/list).
 * get, list, has_synced and stop may be called from any thread. */
#ifndef FL_INFORMER_H
#define FL_INFORMER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h"
#include "core/blob.h"

typedef struct fl_informer fl_informer;

/* Handlers; any may be NULL. Objects are borrowed for the call (json_incref to keep).
 * On a re-list, an object that vanished is reported with the last state the cache had. */
typedef struct fl_informer_handlers {
    void (*on_add)(void *ctx, json_t *obj);
    void (*on_update)(void *ctx, json_t *old_obj, json_t *new_obj);
    void (*on_delete)(void *ctx, json_t *obj);
    /* After each LIST (the first, and any after a broken watch) is over: rc 0 once its
     * adds, updates and deletes have been told, else the list's error (a retry follows). */
    void (*on_listed)(void *ctx, int rc);
    void *ctx;
} fl_informer_handlers;

typedef struct fl_informer_config {
    fl_client *client;          /* borrowed; must outlive the informer */
    fl_gvr resource;            /* strings copied */
    const char *ns;             /* NULL = all namespaces (or a cluster-scoped resource) */
    const char *label_selector; /* optional */
    const char *field_selector; /* optional */
    int64_t page_size;          /* LIST page size; 0 = 500 */
    int backoff_min_ms;         /* first retry delay; 0 = 200 */
    int backoff_max_ms;         /* cap; 0 = 30000 */
    int watch_timeout_s;        /* server-side timeout of each watch; 0 = random in [300, 600) as client-go */
    fl_informer_handlers handlers;
    /* Optional: trim each object before it is cached and handed to handlers (as client-go's
     * SetTransform), e.g. fl_informer_drop_managed_fields. Runs on the informer's thread. */
    void (*transform)(json_t *obj);
    /* Optional, NULL-terminated, borrowed (must outlive the informer): members of each object
     * not even decoded (fl_list_opts.skip_fields), for an informer that reads part of big
     * objects over HTTP. Cheaper than a transform, which runs after the decoding. */
    const char *const *skip_fields;
    /* Optional, NULL-terminated, borrowed: in process, members of each object that the cache
     * holds no decoding of, though readers may need them. A list does not decode them; of a
     * watch event's object (decoded already, and handed to the handlers whole) the cache
     * keeps a view without them, and the stored value to read them from: in process, only
     * its revision, and fl_informer_get_whole reads the whole object at that revision from
     * the server's store (over HTTP objects are cached whole).
     * For a cache of many big objects whose readers mostly need a small part of each (Works:
     * their status and metadata, not their manifests). Over HTTP objects are cached whole.
     * With compact, an entry made from a watch event keeps only the stored value's revision,
     * and reads decode that revision's value (read from the store) without the partial
     * fields (the hot objects are such decodings). An entry
     * made from a list keeps its decoding, as without compact: a list decodes every item
     * for the handlers anyway, and after a restart every reader comes back to each one. */
    const char *const *partial_fields;
    /* Keep each object as its JSON text and decode it when asked for (get, list, a handler's
     * old object), keeping only the hot_objects (0 = 512) last used decoded, one per key hash.
     * A decoded object costs about seven times its text: for caches of many big objects
     * (Works, member objects). Objects handed out are then fresh decodings or shared hot ones,
     * read-only as ever; a list decodes what is not hot. In process, an object a watch event
     * brought is kept as its resourceVersion alone, and read from the server's store at that
     * revision (fl_client_stored_at): the server keeps only its latest values in memory. */
    bool compact;
    size_t hot_objects;
    /* Optional, with compact: what fl_informer_shed keeps of an object, as a new object (or
     * NULL: it is not shed), made from the object decoded without its spec, status and data:
     * what the handlers told of its deletion need. Without it nothing is shed. */
    json_t *(*shed_keep)(const json_t *obj);
    /* No handler reads on_update's old object: it is passed as NULL, and a compact informer
     * does not decode the previous text for it. */
    bool no_old_objects;
    /* The first list's adds are not told (on_listed is): for handlers that only queue work
     * that is queued otherwise at a start. A compact informer then decodes nothing for it. */
    bool silent_first_list;
    /* Optional: a revision the caller's handlers have seen everything up to already (a
     * server resuming where its controllers had finished: fl_ctrl_env.resumed_rev). When the
     * first list is of a later one, the first watch starts from resume_rev instead of the
     * list's revision, and of its events up to the list's revision, the deletions of objects
     * the list did not have are told (as deletes, with the objects' last state); the rest is
     * in the list already. So the handlers learn of every change since resume_rev: the
     * creates and updates as the list's adds (their resourceVersions are later), the
     * deletions so. A watch that cannot start there (410) lists again as any other. */
    int64_t resume_rev;
    /* With resume_rev, in process and compact: a first list's objects last written at or
     * before resume_rev come bare (fl_list_opts.bare_upto: apiVersion, kind, name, namespace
     * and resourceVersion, their stored values not read), are handed so to the handlers
     * (whose adds of them, in a resuming server, queue nothing; the tagger's too), and are
     * kept as their revisions alone: a read decodes the stored value at that revision, as
     * for an object a watch brought. */
    bool resume_bare; /* such an object, handed to a handler: fl_informer_bare */
    /* Optional: watch from this resourceVersion without a first list (a server resuming its
     * member watches where it had noted them). The cache starts empty and incomplete
     * (fl_informer_complete): it holds only what events bring, and has_synced is true at
     * once. Every event is told as it comes: an object not cached is an add, and a deletion
     * of one not cached is told with the event's object. When the server's list is behind
     * watch_from (another history), or the watch cannot start there (410) or breaks, the
     * informer lists as ever; after that list (on_listed) the cache is complete. */
    const char *watch_from;
} fl_informer_config;

/* A transform that drops metadata.managedFields: controllers never read them, and they are
 * often half of a cached object. An informer with it and no skip_fields takes
 * fl_informer_skip_managed_fields as its skip_fields: they are not even decoded. */
void fl_informer_drop_managed_fields(json_t *obj);
/* skip_fields that leaves metadata.managedFields out of what is decoded: over HTTP, and in
 * process for objects the server decodes for a list (one it holds decoded already comes
 * whole, and fl_informer_drop_managed_fields takes them out of the cached view). */
extern const char *const fl_informer_skip_managed_fields[];
/* Drops managedFields and status too, for caches that only need spec and metadata (a
 * Cluster's status, with its API list, is most of it). */
void fl_informer_drop_status(json_t *obj);

/* A summary of an object a reader keeps in its cache entry, made when the entry is made from
 * an object decoded for it (a list's item, a watch event's object), so that a walk over every
 * entry (fl_informer_each_tag) decodes none: 0 for "nothing known". Runs on the informer's
 * thread; must be quick. */
typedef uint32_t (*fl_informer_tagger)(void *ctx, const json_t *obj);
/* Set the tagger. Only before fl_informer_start (FL_EINVAL after, or if one is set). */
int fl_informer_set_tagger(fl_informer *inf, fl_informer_tagger fn, void *ctx);
/* fn(ctx, key, tag) for every cached object (only namespace ns when not NULL; shed ones too),
 * in no order, with the informer's cache read-locked: fn must not call the informer. */
void fl_informer_each_tag(fl_informer *inf, const char *ns, void (*fn)(void *ctx, const char *key, uint32_t tag),
                          void *ctx);
/* Create a stopped informer (no I/O yet). *out set on every path. Any thread. */
int fl_informer_new(const fl_informer_config *cfg, fl_informer **out);
/* Add another set of handlers. Only before fl_informer_start (FL_EINVAL after). */
int fl_informer_add_handlers(fl_informer *inf, const fl_informer_handlers *h);
/* Start the informer's thread. FL_EINVAL if already started. */
int fl_informer_start(fl_informer *inf);
/* Cancel the request in flight, wake any back-off, and join the thread. Returns promptly
 * (no waiting for a timeout). Idempotent; no handler runs after it returns. Must not be
 * called from a handler. */
void fl_informer_stop(fl_informer *inf);
/* Stop (if running) and free, cache included. NULL-safe. */
void fl_informer_free(fl_informer *inf);
/* Let go of every compact informer's hot decodings (fl_informer_config.hot_objects), once the
 * process has been quiet for a while: a read decodes again. Any thread. */
void fl_informer_rest_all(void);
/* How many hot decodings inf holds (for tests). */
size_t fl_informer_hot_held(fl_informer *inf);

/* True once the first LIST has been applied and its adds delivered. */
bool fl_informer_has_synced(fl_informer *inf);
/* False while an informer started with watch_from has not listed: an object it does not
 * hold may still exist. */
bool fl_informer_complete(fl_informer *inf);
/* Wait until synced: 0, FL_ETIMEDOUT, or FL_ECLOSED if the informer stopped first. */
int fl_informer_wait_synced(fl_informer *inf, int timeout_ms);

/* The cached object ns/name (ns NULL or "" for cluster-scoped), a new reference
 * (caller decrefs; read-only). FL_ENOTFOUND when absent. FL_EEXPIRED when the object is
 * cached but cannot be read: shed (fl_informer_shed), or a compact informer's entry in
 * process whose revision the server's log no longer has (the informer has fallen that far
 * behind, or stopped); or when it is not cached and the cache is not complete
 * (watch_from): read it from the server. */
int fl_informer_get(fl_informer *inf, const char *ns, const char *name, json_t **out);
/* The same by cache key ("ns/name" or "name"). */
int fl_informer_get_key(fl_informer *inf, const char *key, json_t **out);
/* The cached object of key as fl_informer_get_key gives it, but whole: where the cache holds
 * it without its partial_fields, read whole from the stored value it came from. */
int fl_informer_get_whole(fl_informer *inf, const char *key, json_t **out);
/* Where the rest of an object read without its partial_fields is: the stored value it came
 * from (text, a reference), or, for an entry that keeps none, the revision to read it at
 * (rv). Both empty: the object read is whole. */
typedef struct fl_informer_src {
    fl_blob *text;
    int64_t rv;
} fl_informer_src;

/* fl_informer_get_key, and *src: where the cache holds the object without its
 * partial_fields, where the rest is (fl_informer_src_close it). For a reader that may not
 * need the rest: fl_informer_whole reads it, of the same version, only when asked.
 * FL_EEXPIRED as fl_informer_get. */
int fl_informer_get_partial(fl_informer *inf, const char *key, json_t **out, fl_informer_src *src);
/* Does src say the object lacks its partial_fields? */
bool fl_informer_src_partial(const fl_informer_src *src);
void fl_informer_src_close(fl_informer_src *src);
/* obj (from fl_informer_get_partial with src) whole: obj itself (a new reference) when src
 * is empty, else its stored value decoded as the cache holds objects (read at src->rv when
 * the cache keeps none); NULL if it cannot be (that revision no longer in the log among
 * them). */
json_t *fl_informer_whole(fl_informer *inf, const json_t *obj, const fl_informer_src *src);
/* The resourceVersion of the cached object ns/name, copied into buf (truncated to cap - 1),
 * without decoding a compact entry. FL_ENOTFOUND (and "" in buf) when absent. */
int fl_informer_get_rv(fl_informer *inf, const char *ns, const char *name, char *buf, size_t cap);
/* A compact informer's readers have recorded what they need of the object ns/name at
 * resourceVersion rv (the execution engine: its status, in the Work that delivered it, with
 * rv). While the object stays at rv, the cache keeps only what the config's shed_keep made
 * of it:
 * - fl_informer_get and the other reads of it answer FL_EEXPIRED (the object is there, but
 *   not cached: read it from the server), and fl_informer_list and _each leave it out;
 * - fl_informer_get_rv still answers, and a handler told of its deletion (a re-list that
 *   misses it), or given it as an update's old object, gets what was kept;
 * - the next event or list of it caches it whole again.
 * Returns true if the entry was shed; false if it is absent, at another version, shed
 * already, shed_keep made nothing of it, or the informer is not compact, has no shed_keep
 * or keeps the object partial. */
bool fl_informer_shed(fl_informer *inf, const char *ns, const char *name, const char *rv);
/* All cached objects (only namespace ns when not NULL), in key order: a new array
 * the caller decrefs; its elements are shared and read-only. */
json_t *fl_informer_list(fl_informer *inf, const char *ns);
/* fn(ctx, obj) for every cached object (only namespace ns when not NULL), in key order, as
 * fl_informer_list would list them (the cache as it was when the walk began), but with
 * one at a time decoded (obj is borrowed and read-only): for walks over a compact
 * informer's whole cache, which a list would hold decoded all at once. */
void fl_informer_each(fl_informer *inf, const char *ns, void (*fn)(void *ctx, json_t *obj), void *ctx);
/* When the informer's lists last moved (fl_time_mono_ms): its start, or the last page to
 * arrive (attempts that fail before a page do not count). For telling a long first list
 * from a stuck one. */
int64_t fl_informer_list_progress_ms(fl_informer *inf);
/* The resourceVersion, as a number, up to which the handlers have been told everything:
 * the last event's once its handlers returned, a bookmark's, a list's once its changes were
 * told (or would have been: silent_first_list), watch_from at the start; 0 before, or when
 * the server's resourceVersions are not numbers. A caller that noted it, and whose
 * handlers' work was done by then, may later start an informer with watch_from it. */
int64_t fl_informer_told_rv(fl_informer *inf);
/* Whether obj, handed to a handler, is an item a first list left bare (resume_bare): its
 * names and resourceVersion alone, no uid. */
bool fl_informer_bare(const json_t *obj);
/* The last resourceVersion the informer has seen (list, event or bookmark); "" before. */
void fl_informer_last_rv(fl_informer *inf, char *buf, size_t cap);

/* The cache key of obj ("ns/name" or "name") as a heap string, or NULL without a name. */
char *fl_informer_key(const json_t *obj);

#endif
