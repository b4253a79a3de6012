/* client.h - a Kubernetes API client over HTTP(S), for controllers, the pull agent
 * and `flotilla ctl`.
 *
 * Talks to a Flotilla control plane or a member cluster (ours or a real one) with
 * the REST semantics client-go relies on: get/list/create/update/patch/delete on
 * (apiVersion, resource, namespace, name), list paging with limit/continue, watch as
 * a stream of newline-delimited events, and Kubernetes Status errors mapped to FL_E*
 * codes. Objects are jansson values.
 *
 * Connections: a pool of curl easy handles, each paired with its own curl multi
 * handle (which owns that slot's keep-alive connection). A request takes a slot, so
 * concurrent requests from many threads each get their own connection; a finished
 * request returns the slot with its connection still open. The multi handle lets a
 * blocking transfer (a watch, a long list) be woken at once from another thread
 * through an fl_client_cancel, instead of waiting for a timeout.
 *
 * Errors: every call returns 0 or a negative FL_E* code:
 *   404                        FL_ENOTFOUND
 *   409 reason AlreadyExists   FL_EEXIST
 *   409 otherwise (Conflict)   FL_ECONFLICT
 *   410 (Expired, Gone)        FL_EEXPIRED
 *   400, 422, 401, 403, other 4xx  FL_EINVAL   (err->http tells 401/403 apart)
 *   405, 415                   FL_EUNSUPPORTED
 *   413                        FL_ETOOBIG
 *   429 after retries, 5xx     FL_EIO
 *   connection/TLS failure     FL_EIO    (err->transport set)
 *   request timeout            FL_ETIMEDOUT
 *   cancelled                  FL_ECLOSED
 * and, when the caller passes an fl_client_error, fills in the HTTP status, the
 * Status reason and message (or the transport error). 429 TooManyRequests is retried
 * a few times after its Retry-After, as client-go does.
 *
 * Threads: one fl_client serves any number of threads at once. Returned JSON values
 * belong to the caller. */
#ifndef FL_CLIENT_H
#define FL_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/kubeconfig.h"
#include "core/blob.h"

typedef struct fl_client fl_client;

/* What went wrong with a request, for logs, conditions and the CLI. Fixed buffers so
 * that callers have nothing to free; the message is truncated if very long. */
typedef struct fl_client_error {
    int http;            /* HTTP status; 0 when no response arrived */
    char reason[64];     /* Status.reason ("NotFound", "Conflict", ...); "" when none */
    char field[128];     /* details.causes[0].field for Invalid, else "" */
    char message[1024];  /* Status.message, or the transport error */
    bool transport;      /* no (complete) answer: the connection failed, broke or timed out */
} fl_client_error;

/* Addresses a resource: apiVersion ("v1", "apps/v1") and plural ("deployments"). */
typedef struct fl_gvr {
    const char *api_version;
    const char *resource;
} fl_gvr;

/* Told of every request a client finishes, on the requesting thread: a watch (when its
 * stream ends), rc (0 or FL_E*), the HTTP status (0 when no answer came), whether the
 * transport failed (no answer, a timeout), and the seconds it took. The client owns ctx from
 * fl_client_new on (free(ctx) at fl_client_free, when free is set). */
typedef struct fl_client_observer {
    void (*fn)(void *ctx, bool watch, int rc, long http, bool transport, double seconds);
    void *ctx;
    void (*free)(void *ctx);
} fl_client_observer;

typedef struct fl_client_options {
    const char *user_agent;   /* NULL = "flotilla"; the server names the default field manager after it */
    int timeout_ms;           /* whole-request timeout for non-watch requests; 0 = 30000 */
    int connect_timeout_ms;   /* 0 = 5000 */
    int max_idle;             /* idle connections kept in the pool; 0 = 16 */
    /* the objects answers carry (a get, a write) are decoded without metadata.managedFields,
     * for a caller that never reads them (a quarter to a half of a workload's nodes); an
     * update sent without them keeps the object's own (an absent list is not a reset) */
    bool answers_without_managed_fields;
    /* told of every finished request (not a cancelled one) */
    fl_client_observer observer;
    /* Optional, NULL-terminated: the URLs of one control plane's replicas, used instead of
     * kc's server (same CA and credentials: replicas share their certificates). A request
     * whose connection cannot be made (refused, unreachable, connect time-out: nothing was
     * sent) goes to the next URL in turn, and the client stays with the one that answered;
     * a request that failed after it was sent is not repeated elsewhere. Copied. */
    const char *const *servers;
} fl_client_options;

/* Create a client for kc's server (or opts->servers) and credentials (copied: kc may be
 * closed after). opts may be NULL. *out set on every path. Returns 0, or FL_EINVAL with
 * *err (heap, when err is not NULL) when kc cannot be used (no server). Any thread. */
int fl_client_new(const fl_kubeconfig *kc, const fl_client_options *opts, fl_client **out, char **err);

/* ---- in-process transport ----
 * The server's own controllers are clients of the API server in the same process. Going
 * through TLS, TCP and HTTP to reach it cost them about a sixth of the server's CPU and a
 * thread hand-off per request; a local client hands each request to the API directly,
 * with the same paths, bodies, status codes and watch streams as on the wire, so every
 * caller (and the code path after the transport) stays the same. */
typedef struct fl_client_local_resp {
    int code;           /* HTTP status */
    char *body;         /* heap (the client frees it), or NULL; for a watch answered 200: NULL */
    size_t len;
    json_t *obj;        /* asked for with want_obj: the answer as an object (the client owns the
                         * reference), instead of body; NULL when the server answered in bytes */
    void *stream;       /* a watch answered 200: pull its bytes with stream_read */
} fl_client_local_resp;

/* How an in-process list may answer, beyond fl_client_local_resp: both may be NULL. */
typedef struct fl_client_local_list {
    /* With want_obj: members an item decoded for the answer may leave out (paths within an
     * item, as fl_list_opts.skip_fields), NULL-terminated. */
    const char *const *item_skip;
    /* With want_obj, in a list of every item (no selector, limit or continue): items last
     * written at or before bare_upto come bare (fl_list_opts.bare_upto), and their texts[i]
     * are NULL. */
    int64_t bare_upto;
    /* With want_obj: items handed over as the list goes, in its order, on the calling thread,
     * before serve returns; the array is emptied after each call, and the answer's items are
     * what is left. So a long list can be worked on before its end. texts[i] is the stored
     * value items[i] was decoded from (borrowed for the call): whole, where the item may
     * lack item_skip. */
    void (*on_items)(void *ctx, json_t *items, fl_blob *const *texts);
    void *items_ctx;
} fl_client_local_list;

typedef struct fl_client_local {
    /* Serve one request: path with its query string as on the wire ("/api/v1/...?a=b"),
     * content_type, accept (NULL: application/json) and user_agent may be NULL. The body
     * comes as bytes, or (a create or an update) as body_obj, borrowed and read-only: no
     * encoding and decoding in between;
     * or, body_given, handed over: serve may keep (with a reference of its own) and change
     * the object and everything in it, and the caller will not look at it again.
     * want_obj: the caller wants the answer as an object (out->obj) where the server has
     * one. list (may be NULL): for a list, see fl_client_local_list. Fills *out. Many threads
     * at once. */
    void (*serve)(void *ctx, const char *method, const char *path, const char *content_type,
                  const char *accept, const char *user_agent, const char *body, size_t body_len, const json_t *body_obj,
                  bool body_given, bool want_obj, const fl_client_local_list *list, fl_client_local_resp *out);
    /* Block until the stream has bytes (copied into buf, at most cap; returns how many) or
     * ends (0). */
    size_t (*stream_read)(void *stream, char *buf, size_t cap);
    /* Optional, for a watch served with want_obj: block until the next event (its type,
     * its object: a new reference whose top level and metadata the caller may change, the
     * rest read-only; and the stored bytes it was decoded from: a new reference or NULL) and
     * return 1, or 0 at the end. */
    int (*stream_next)(void *stream, const char **type, json_t **obj, fl_blob **text);
    /* Optional: the object stored bytes from stream_next decode to (a new reference,
     * read-only, perhaps shared with the server), or NULL. With skip (NULL-terminated paths
     * as fl_list_opts.skip_fields takes them): without those members. */
    json_t *(*decode)(void *ctx, fl_blob *text, const char *const *skip);
    /* Optional: the stored bytes of the object key ("ns/name" or "name") of resource in
     * group ("" for the core group) as revision rev wrote them, a new reference in *out:
     * 0, FL_EEXPIRED when that revision is no longer kept, or another FL_E* code. For a
     * cache that keeps an object's resourceVersion but not its bytes. */
    int (*stored_at)(void *ctx, const char *group, const char *resource, const char *key, int64_t rev,
                     fl_blob **out);
    /* Make a blocked or later stream_read return 0 soon. Any thread, while not freed. */
    void (*stream_cancel)(void *stream);
    void (*stream_free)(void *stream);
    void *ctx;
} fl_client_local;

/* A client whose requests go to srv (copied; srv->ctx must outlive the client) instead
 * of a URL. Behaves as fl_client_new's in every respect but the transport: error
 * mapping, 429 retries, watches and cancellation. fl_client_server() answers "local".
 * Never fails (allocation aborts). */
fl_client *fl_client_new_local(const fl_client_local *srv, const fl_client_options *opts);
/* Close idle connections and free. No request may be running. NULL-safe. */
void fl_client_free(fl_client *c);
/* The server URL the client talks to (owned by the client): of several, the one that
 * answered last. */
const char *fl_client_server(const fl_client *c);
/* Whether requests go to a server in this process (fl_client_new_local). */
bool fl_client_in_process(const fl_client *c);

/* ---- cancellation ---- */

/* A cancellation token: fl_client_cancel_fire() from any thread ends the transfers
 * that were given the token (they return FL_ECLOSED) and the sleeps in
 * fl_client_cancel_sleep(), at once. It stays fired until reset. */
typedef struct fl_client_cancel fl_client_cancel;
fl_client_cancel *fl_client_cancel_new(void);
void fl_client_cancel_fire(fl_client_cancel *k);
bool fl_client_cancel_fired(fl_client_cancel *k);
void fl_client_cancel_reset(fl_client_cancel *k);
/* Sleep up to ms; returns true early (and at once) when the token is fired. */
bool fl_client_cancel_sleep(fl_client_cancel *k, int ms);
/* Free. No transfer or sleep may still be using it. NULL-safe. */
void fl_client_cancel_free(fl_client_cancel *k);

/* ---- the raw request ---- */

/* One request to path (starting with '/', query included, already escaped). body may
 * be NULL. On success (2xx) *out (when out is not NULL) is the parsed JSON body, or
 * NULL when the body is empty or not JSON. On failure *out is NULL. cancel may be NULL. */
int fl_client_request(fl_client *c, const char *method, const char *path, const char *content_type,
                      const char *body, size_t body_len, fl_client_cancel *cancel, json_t **out,
                      fl_client_error *err);
/* A GET of path that asks for the answer as accept (an Accept header: media types, a server
 * picks one it has), otherwise as fl_client_request. Discovery uses it for the aggregated
 * form (apidiscovery.k8s.io/v2). */
int fl_client_get_as(fl_client *c, const char *path, const char *accept, fl_client_cancel *cancel, json_t **out,
                     fl_client_error *err);

/* ---- verbs ----
 * ns is the namespace for namespaced resources, NULL or "" for cluster-scoped ones
 * (and, for list and watch, for all namespaces). Returned objects are new references. */

int fl_client_get(fl_client *c, const fl_gvr *r, const char *ns, const char *name, json_t **out,
                  fl_client_error *err);

typedef struct fl_list_opts {
    const char *label_selector;    /* NULL = everything */
    const char *field_selector;
    int64_t limit;                 /* page size; 0 = no paging */
    const char *continue_token;    /* from the previous page */
    const char *resource_version;  /* NULL = most recent; "0" = any (served from the cache) */
    const char *const *skip_fields; /* optional, NULL-terminated: members of each item left out
                                     * when decoding ("spec.workload"; "[]" for any element of
                                     * an array), for a caller that needs part of each object.
                                     * In process, only where an item is decoded for the
                                     * answer: one the server has decoded already comes whole */
    /* Optional, for fl_client_list_all: each page's items as they arrive (borrowed for the
     * call), on the listing thread; items NULL means start over (the snapshot expired, and
     * one unpaged list follows). With take_pages the pages are not also gathered into the
     * result, whose items stay empty: a caller that keeps something smaller per item (a
     * text) never holds the whole list decoded. texts is NULL but with page_texts over
     * HTTP (below), and in process, where texts[i] is the stored value items[i] was
     * decoded from: whole, while the item may lack skip_fields (fl_client_decode_text
     * decodes it). */
    void (*on_page)(void *ctx, json_t *items, fl_blob *const *texts);
    void *page_ctx;
    bool take_pages;
    /* With on_page and take_pages, over HTTP: items are not decoded. Each comes as its text
     * (less skip_fields, checked to be JSON) in texts[i], and items[i] holds only its name,
     * namespace and resourceVersion ({"metadata": {...}}). For a cache that keeps objects as
     * text, keyed by name: none is built. A page the
     * fast decoder cannot read this way (fl_json_load_items) comes decoded, texts NULL; and
     * so does every page in process, where the server keeps the texts already. */
    bool page_texts;
    /* Optional, in process, for a list of every item (no selector): items last written at or
     * before this revision come bare, as their apiVersion, kind, name, namespace and
     * resourceVersion alone, and their stored values are not read: for a cache that keeps
     * such items as their revisions only (fl_informer_config.resume_bare). Over HTTP,
     * items come whole. */
    int64_t bare_upto;
} fl_list_opts;

typedef struct fl_list_result {
    json_t *items;                 /* array of objects; owned */
    char resource_version[32];     /* the list's resourceVersion (the snapshot's revision) */
    char *continue_token;          /* heap; NULL on the last page */
    fl_blob **texts;               /* page_texts: one per item, owned; or NULL */
} fl_list_result;
void fl_list_result_close(fl_list_result *l);

/* One page (or the whole list when opts->limit is 0). opts may be NULL. *out zeroed on
 * failure. FL_EEXPIRED when a continue token's snapshot has been compacted. */
int fl_client_list(fl_client *c, const fl_gvr *r, const char *ns, const fl_list_opts *opts,
                   fl_list_result *out, fl_client_error *err);
/* Every page, concatenated, at one snapshot (the first page's resourceVersion), pages of
 * opts->limit (0 = 500). If the snapshot is compacted between pages, starts over with
 * one unpaged list, as client-go's pager does. opts->continue_token is ignored. */
int fl_client_list_all(fl_client *c, const fl_gvr *r, const char *ns, const fl_list_opts *opts,
                       fl_client_cancel *cancel, fl_list_result *out, fl_client_error *err);

typedef struct fl_write_opts {
    const char *field_manager;     /* NULL = the server's default (from the user agent) */
    bool dry_run;
} fl_write_opts;

/* POST obj (borrowed). ns from the argument (obj's metadata.namespace is not consulted). */
int fl_client_create(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj,
                     const fl_write_opts *opts, json_t **out, fl_client_error *err);
/* PUT obj to its metadata.name; its metadata.resourceVersion, when set, is the
 * precondition (FL_ECONFLICT when stale). */
int fl_client_update(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj,
                     const fl_write_opts *opts, json_t **out, fl_client_error *err);
/* fl_client_update handing obj over: the call takes the caller's reference, and the caller
 * must not read or change obj, or anything in it, afterwards. What obj shares with other
 * objects must be read-only for everyone (an informer's objects are). In process the server
 * then stores obj as it is instead of copying it (when it pins a resourceVersion). */
int fl_client_update_given(fl_client *c, const fl_gvr *r, const char *ns, json_t *obj,
                           const fl_write_opts *opts, json_t **out, fl_client_error *err);
/* The same on the /status subresource. */
int fl_client_update_status_given(fl_client *c, const fl_gvr *r, const char *ns, json_t *obj,
                                  const fl_write_opts *opts, json_t **out, fl_client_error *err);
/* fl_client_update on the /status subresource. */
int fl_client_update_status(fl_client *c, const fl_gvr *r, const char *ns, const json_t *obj,
                            const fl_write_opts *opts, json_t **out, fl_client_error *err);

enum fl_patch_type {
    FL_PATCH_MERGE = 1,      /* application/merge-patch+json (RFC 7386) */
    FL_PATCH_JSON,           /* application/json-patch+json (RFC 6902) */
    FL_PATCH_STRATEGIC,      /* application/strategic-merge-patch+json (built-in kinds) */
    FL_PATCH_APPLY,          /* application/apply-patch+yaml (server-side apply; field_manager required) */
};

typedef struct fl_patch_opts {
    const char *field_manager;     /* required for FL_PATCH_APPLY */
    bool force;                    /* apply: take fields other managers own */
    bool dry_run;
    const char *subresource;       /* "status", "scale" or NULL */
} fl_patch_opts;

/* PATCH name with patch bytes (JSON, or YAML/JSON for apply). */
int fl_client_patch(fl_client *c, const fl_gvr *r, const char *ns, const char *name, int type,
                    const char *patch, size_t patch_len, const fl_patch_opts *opts, json_t **out,
                    fl_client_error *err);

typedef struct fl_delete_opts {
    const char *propagation_policy;  /* "Background", "Foreground", "Orphan" or NULL */
    const char *precondition_uid;    /* delete only this incarnation */
    const char *precondition_rv;     /* delete only at this resourceVersion */
    int64_t grace_period_seconds;    /* used when has_grace_period */
    bool has_grace_period;
    bool dry_run;
} fl_delete_opts;

/* DELETE name. *out (when not NULL) is what the server answered: the object (finalizers
 * still holding it, or its final state) or a Status. */
int fl_client_delete(fl_client *c, const fl_gvr *r, const char *ns, const char *name,
                     const fl_delete_opts *opts, json_t **out, fl_client_error *err);

/* ---- watch ---- */

enum fl_watch_event_type { FL_WATCH_ADDED = 1, FL_WATCH_MODIFIED, FL_WATCH_DELETED, FL_WATCH_BOOKMARK };

typedef struct fl_watch_opts {
    const char *resource_version;  /* changes after this; NULL or "0" = current objects as ADDED first */
    const char *label_selector;
    const char *field_selector;
    bool allow_bookmarks;
    bool send_initial_events;      /* initial ADDEDs end with a BOOKMARK (resourceVersionMatch=NotOlderThan) */
    int timeout_seconds;           /* the server ends the watch after this; 0 = never */
    const char *const *skip_fields; /* as fl_list_opts's, for each event's object */
} fl_watch_opts;

/* Called once per event on the watching thread, in the server's order. object is
 * borrowed (json_incref it to keep it). In process, text is the stored value object was
 * decoded from (borrowed; fl_blob_ref to keep it; fl_client_decode_text decodes it again),
 * whole: skip_fields and any change made to object are not in it; over HTTP it is NULL.
 * Return false to end the watch. */
typedef bool (*fl_watch_fn)(void *ctx, int type, json_t *object, fl_blob *text);

/* Watch until the stream ends. Blocks the calling thread. Returns
 *   0            the server ended the stream (timeout_seconds) or fn returned false
 *   FL_ECLOSED   cancel was fired
 *   FL_EEXPIRED  resource_version is too old (HTTP 410 or an ERROR event with 410): re-list
 *   FL_EIO       the connection broke or an event could not be parsed
 *   other        the watch request failed (mapped like any request)
 * ERROR events are not passed to fn: they end the watch with their mapped code. */
int fl_client_watch(fl_client *c, const fl_gvr *r, const char *ns, const fl_watch_opts *opts, fl_watch_fn fn,
                    void *ctx, fl_client_cancel *cancel, fl_client_error *err);

/* The object text from a watch callback decodes to: a new reference, read-only (it may be
 * shared with the server in process), or NULL if it is not JSON. Any thread. */
json_t *fl_client_decode_text(fl_client *c, fl_blob *text);
/* The same without the members at skip (paths as fl_list_opts.skip_fields takes them). */
json_t *fl_client_decode_text_skipping(fl_client *c, fl_blob *text, const char *const *skip);
/* In process, the stored bytes of the object key ("ns/name" or "name") of resource in
 * api_version at resourceVersion rv (fl_client_local.stored_at): a new reference in *out.
 * FL_EINVAL over HTTP, where nothing can be read by revision. */
int fl_client_stored_at(fl_client *c, const char *api_version, const char *resource, const char *key,
                        const char *rv, fl_blob **out);
/* True when fl_client_stored_at can answer. */
bool fl_client_has_stored_at(const fl_client *c);

/* ---- discovery ---- */

/* The plural resource serving kind in api_version, and whether it is namespaced, from
 * /api/v1 or /apis/G/V. Answers are cached per group-version; a kind missing from the
 * cache refetches its group-version once (a CRD may have just been created).
 * *resource is a heap string (NULL on failure). FL_ENOTFOUND when not served. */
int fl_client_resolve(fl_client *c, const char *api_version, const char *kind, char **resource, bool *namespaced,
                      fl_client_error *err);
/* Seed the cache above with a group-version's `resources` array that the caller fetched
 * itself (the cluster status controller reads every group-version for apiEnablements;
 * handing them over spares the first delivery to a member its discovery round trips).
 * resources is only read. Any thread. */
void fl_client_discovery_learn(fl_client *c, const char *api_version, const json_t *resources);

/* ---- helpers ---- */

/* The path for r/ns/name[/subresource] ("/apis/apps/v1/namespaces/x/deployments/y"),
 * with ns and name escaped. name and sub may be NULL. Heap string. */
char *fl_client_path(const fl_gvr *r, const char *ns, const char *name, const char *sub);
/* metadata.resourceVersion of obj, or "" when absent (borrowed from obj). */
const char *fl_client_object_rv(const json_t *obj);

#endif
