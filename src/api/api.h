/* api.h - the Kubernetes API semantics, independent of the HTTP transport.
 *
 * http.c turns each HTTP request into an fl_req and calls fl_api_handle(); the
 * handlers (api_read.c: get/list/watch, api_write.c: create/update/patch/delete,
 * api_meta.c: discovery/health/version) fill in the response. A watch answers with a
 * stream (fl_api_stream) that the transport pulls from. Keeping HTTP out of here lets
 * the fuzz target and unit tests drive requests directly.
 *
 * Threads: fl_api_handle runs on a worker of the HTTP transport; many run at once. */
#ifndef FL_API_H
#define FL_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/kinds.h"
#include "client/client.h"
#include "store/store.h"

/* What a request body may decode to: the transport's limit on the body itself (http.h,
 * kube-apiserver's 3 MiB), held again after decoding, where YAML aliases and JSON patch
 * copies could otherwise turn a small body into a huge object. */
#define FL_API_MAX_REQUEST_BYTES ((size_t)3 << 20)
/* The largest object a write stores unless configured (fl_api.max_object_bytes): etcd's
 * default request limit, 1.5 MiB, so that what Flotilla accepts a Kubernetes cluster would. */
#define FL_API_DEFAULT_MAX_OBJECT_BYTES ((size_t)1536 << 10)

typedef struct fl_api {
    fl_store *store;
    int bookmark_interval_ms;  /* how often an idle watch with allowWatchBookmarks gets a BOOKMARK */
    const char *server_url;    /* for /api serverAddressByClientCIDRs (may be NULL) */
    volatile int stopping;     /* set at shutdown: watches end */
    volatile int shutting_down; /* set when a shutdown begins, before stopping (the server's
                                * --shutdown-delay-duration): /readyz fails, all else is served */
    fl_kindreg *kinds;         /* the kinds served (and CRDs applied to); NULL = fl_kindreg_default(),
                                * the server's. A simulated member sets its own. Not owned. */
    struct fl_auth *auth;      /* the server's token table and authorizer (auth.h): requests are
                                * authorized and /apis/flotilla.io/v1alpha1/register is served.
                                * NULL (simulated members): neither. Not owned. */
    const struct fl_health_check *health_checks; /* the process's own checks for /livez,
                                * /readyz and /healthz beside the API's (health.h), ended by a
                                * NULL name; NULL: none. Not owned. */
    size_t max_object_bytes;   /* the largest encoded object a create, update, patch or apply
                                * stores (413 past it); 0 = FL_API_DEFAULT_MAX_OBJECT_BYTES */
    bool ui;                   /* serve the dashboard's assets at /ui/ (ui.h): the server does,
                                * a simulated member does not */
} fl_api;

typedef struct fl_kvpair {
    char *key;
    char *value;
} fl_kvpair;

typedef struct fl_api_stream fl_api_stream;

typedef struct fl_req {
    /* input */
    const char *method;        /* "GET", "POST", ... */
    const char *path;          /* URL path without query, percent-decoded */
    fl_kvpair *query;          /* query parameters (decoded) */
    size_t nquery;
    const char *content_type;  /* may be NULL */
    const char *accept;        /* may be NULL */
    const char *user_agent;    /* may be NULL; names the default field manager */
    const char *if_none_match; /* If-None-Match, may be NULL (the dashboard's assets answer 304) */
    const struct fl_identity *who; /* the authenticated identity (auth.h), set by the transport;
                                * NULL = a trusted caller (in-process, or authentication off): not
                                * authorized */
    const char *body;          /* request body (NUL-terminated), may be NULL */
    size_t body_len;
    const json_t *body_obj;    /* in process, a create or update: the body as an object instead
                                * (borrowed, read-only; fl_req_body_object copies it) */
    bool body_given;           /* body_obj is the server's to keep and change: the caller will
                                * not look at it again (an update that pins a resourceVersion
                                * takes it as it is, uncopied) */
    bool want_obj;             /* in process: answer a create, an update or a list with
                                * resp_obj, and a watch with objects (fl_api_stream_next) */
    const fl_client_local_list *list; /* in process, a list with want_obj: members its items
                                   * may leave out, and a taker of items as it goes; may be NULL */
    bool discard;              /* in process: the caller does not read a successful answer */
    struct fl_audit_ev *audit; /* the request's audit record (audit.h), set by the transport;
                                * NULL: not audited (in process, or no audit log) */
    /* output */
    int code;                  /* HTTP status */
    char *resp;                /* heap body (caller frees) */
    size_t resp_len;
    json_t *resp_obj;          /* with want_obj, a successful create or update: the object as
                                * stored, instead of resp (a reference the caller owns); a
                                * list: the List, its items read-only below their top level
                                * and metadata (they share the stored objects) */
    const char *resp_type;     /* static content type */
    const char *retry_after;   /* static; set for 429 */
    char *warnings;            /* heap, may be NULL: one Warning header per line */
    const char *resp_headers[12]; /* more response headers: name, value, name, value, ...,
                                * ended by NULL (static strings); the dashboard's assets */
    fl_api_stream *stream;     /* set instead of resp for watches */
    /* bookkeeping for metrics */
    const char *verb;          /* GET/LIST/WATCH/POST/PUT/PATCH/DELETE (static) */
    char resource[96];
} fl_req;

/* Handle one request. Always sets code and either resp or stream. */
void fl_api_handle(fl_api *api, fl_req *req);

/* Query parameter value, or NULL. */
const char *fl_req_query(const fl_req *req, const char *key);

/* Pull the next chunk of a watch stream into buf (at most cap bytes). Blocks until data
 * is ready or the stream ends. Returns bytes written (>0), 0 at end of stream. */
size_t fl_api_stream_read(fl_api_stream *s, char *buf, size_t cap);
/* The same for a watch asked with want_obj (in process): the next event as its type
 * ("ADDED", ... "ERROR"; static), object (a new reference: the top level and metadata are
 * the caller's to change, everything below is shared and read-only) and the stored value
 * it was decoded from (a new reference, or NULL for bookmarks and errors). 1, or 0 at the
 * end. */
int fl_api_stream_next(fl_api_stream *s, const char **type, json_t **obj, fl_blob **text);
void fl_api_stream_free(fl_api_stream *s);
/* Make a blocked fl_api_stream_read return 0 soon, and every later one at once. Any
 * thread, while the stream is not freed. */
void fl_api_stream_cancel(fl_api_stream *s);
/* fl_api_stream_read without blocking, for a transport that parks the connection meanwhile:
 * bytes written (> 0); 0 when nothing is ready now, with *wake_ms set to the CLOCK_MONOTONIC
 * time in milliseconds at which the stream needs another look though nothing was published
 * (a bookmark is due, timeoutSeconds ends); -1 at the end of the stream (fl_api.stopping, a
 * cancel, the deadline, a closed store). Same thread rules as fl_api_stream_read. */
long fl_api_stream_try_read(fl_api_stream *s, char *buf, size_t cap, int64_t *wake_ms);
/* Call fn(ctx) whenever a fl_api_stream_try_read that found nothing may find more (see
 * fl_watch_set_notify: quick, on the store's publishing thread). Set before the first
 * try_read; never called after fl_api_stream_free returns. */
void fl_api_stream_set_notify(fl_api_stream *s, void (*fn)(void *ctx), void *ctx);

/* The object a stored value b decodes to: a new reference, read-only (it may be the one the
 * API last wrote, shared, which costs no decoding); NULL when the bytes are not JSON.
 * (decoded.c) */
json_t *fl_api_decoded(const fl_blob *b);
/* Let go of the objects last written that are kept decoded: for a server at rest, whose
 * next writes are unlikely to be to them. */
void fl_api_decoded_forget(void);

/* ---- in process (local.c) ---- */

/* fl_client_local.serve for an fl_api (ctx): one request as http.c would hand it over. */
void fl_api_local_serve(void *api, const char *method, const char *path, const char *content_type,
                        const char *accept, const char *user_agent, const char *body, size_t body_len,
                        const json_t *body_obj, bool body_given, bool want_obj, const fl_client_local_list *list,
                        fl_client_local_resp *out);
/* A client of api through fl_api_local_serve (see fl_client_new_local): what the server's
 * controllers use. api must outlive it. Free with fl_client_free. */
fl_client *fl_api_local_client(fl_api *api, const char *user_agent);

/* Create namespace `name` if it does not exist (through the API, as a client would).
 * Returns 0 when it exists afterwards. */
int fl_api_ensure_namespace(fl_api *api, const char *name);

/* Re-register the kinds of every stored CRD (at start-up). */
int fl_api_load_crds(fl_api *api);
/* What the store, opened with it as fl_store_config.load_mark, notes of each value at a
 * start: fl_api_load_crds then counts owned objects from the keys noted (internals/store.md). */
#define FL_API_LOAD_MARK "\"ownerReferences\""

#endif
