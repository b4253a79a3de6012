/* api_write.h - what the write handlers share: api_write.c (create, update and the write
 * path), api_patch.c (patches and server-side apply) and api_delete.c (deletes, finalizers,
 * dependents, namespaces). Not for other files: the rest of the API reaches writes through
 * the handlers in api_internal.h.
 *
 * Handlers run on the HTTP server's threads (or an in-process caller's); everything here may
 * be called from any of them. */
#ifndef FL_API_WRITE_H
#define FL_API_WRITE_H

#include "api/api_internal.h"

/* ---- api_write.c ---- */

/* Does the content type name Kubernetes' protobuf encoding? */
bool fl_api_is_protobuf(const char *ct);

/* Write obj under key (type: FL_STORE_CREATE/UPDATE/DELETE; prev_rev: the revision the
 * write expects, 0 for none). On success obj carries the new resourceVersion. Returns 0 or
 * the store's FL_E* (FL_ECONFLICT on a lost compare-and-swap); obj stays the caller's. */
int fl_api_store_put(fl_api *api, int type, const char *key, int64_t prev_rev, json_t *obj);

/* The largest encoded object api stores: its max_object_bytes, or the default. */
size_t fl_api_max_object_bytes(const fl_api *api);

/* Respond 413 RequestEntityTooLarge naming limit, in kube-apiserver's words ("Request entity
 * too large: limit is N"), followed by what was too large and why ("(what: detail)"). */
void fl_api_resp_too_large(fl_req *r, const fl_target *t, size_t limit, const char *what, const char *detail);

/* A store render callback (fl_store_op.render, no context): the final state of a deleted
 * object, its current bytes with the new revision. Heap text, *len set. */
char *fl_api_render_current(void *vctx, const fl_blob *cur, int64_t rev, size_t *len);

/* ?fieldValidation= must be one of the apiserver's values (checked before decoding).
 * Returns 0, or -1 after responding 422 (options_kind names the options in the message). */
int fl_api_check_field_validation(fl_req *r, const fl_target *t, const char *options_kind);

/* The JSON body of r repeats object keys (Go's decoder keeps the last value, as jansson
 * does without JSON_REJECT_DUPLICATES): answer per ?fieldValidation= - Strict: 400
 * `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error:
 * duplicate field "spec.x"`, Warn (the default): one Warning header each, Ignore:
 * nothing. Returns 0 to proceed, or -1 after responding. Request thread. */
int fl_api_duplicate_fields(fl_req *r, const fl_target *t);

/* Add warnings (heap, one per line, taken; NULL = none) to the response's Warning
 * headers after any already there. Request thread. */
void fl_api_add_warnings(fl_req *r, char *warnings);

/* Create obj (stolen) and respond. applied: obj came from server-side apply and already
 * carries its managedFields. */
void fl_api_create_object(fl_api *api, fl_req *r, const fl_target *t0, json_t *obj, bool applied);

/* Produce the desired object from the current one. Return the new object (new reference)
 * or NULL after responding with an error. *pinned_rv receives a resourceVersion the client
 * required (0 = none), which makes a lost compare-and-swap a 409 instead of a retry. */
typedef json_t *(*fl_api_mutate_fn)(void *ctx, fl_req *r, const fl_target *t, const json_t *cur, int64_t *pinned_rv);

/* Which verb a guaranteed update serves: what fn's result still needs checked and whether
 * managedFields are recorded here (apply records its own). */
typedef enum fl_api_update_verb {
    FL_API_UPDATE_PUT,   /* the body's types were checked on arrival */
    FL_API_UPDATE_PATCH, /* fn checks the patched object's types (but a scale's) */
    FL_API_UPDATE_APPLY, /* fn merges managedFields itself */
} fl_api_update_verb;

/* Read-modify-write with compare-and-swap, retried while nobody pinned a revision: read
 * t's object, let fn change it, apply the server-owned rules, check, write, respond. */
void fl_api_guaranteed_update(fl_api *api, fl_req *r, const fl_target *t, fl_api_update_verb verb,
                              fl_api_mutate_fn fn, void *ctx);

/* ---- api_delete.c ---- */

/* Does obj carry ownerReferences? */
bool fl_api_has_owner_refs(const json_t *obj);
/* Count a write that turned old into new (either NULL: created or deleted) into the number
 * of live objects with owners, which lets deletes skip the dependents scan. */
void fl_api_track_owned(const json_t *old, const json_t *new);
/* At start-up: count the objects with owners the store holds, at once from the values the
 * store noted as it opened, else by a scan beside the server (deletes search for
 * dependents until it is done). */
void fl_api_count_owners(fl_api *api);
/* Called after an object is gone from the store: kind-specific clean-up (a CRD's kind and
 * its objects go). */
void fl_api_finish_delete(fl_api *api, const fl_kind *k, json_t *obj);
/* Empty the terminating namespace ns on a detached thread of its own, then let it go. */
void fl_api_start_purge(fl_api *api, const char *ns);

#endif
