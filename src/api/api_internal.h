/* api_internal.h - helpers shared by the API handler files (api_*.c). Not for other modules. */
#ifndef FL_API_INTERNAL_H
#define FL_API_INTERNAL_H

#include "api/api.h"
#include "core/base64.h"

/* The resource a request addresses, parsed from its path. */
typedef struct fl_target {
    const fl_kind *kind;
    char group[128];
    char version[64];
    char resource[96];
    char ns[256];       /* "" when not namespaced or all namespaces */
    char name[256];     /* "" for collections */
    char sub[32];       /* "status", "scale", "finalize" or "" */
    bool has_ns;
} fl_target;

/* Responses. fl_resp_json steals obj. */
void fl_resp_json(fl_req *r, int code, json_t *obj);
void fl_resp_raw(fl_req *r, int code, const char *data, size_t len);
/* A metav1.Status failure. kind/name fill details (either may be NULL); causes is stolen. */
void fl_resp_status(fl_req *r, int code, const char *reason, const fl_target *t, json_t *causes, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Map an FL_E* store error to a Status response for target t. */
void fl_resp_store_error(fl_req *r, int rc, const fl_target *t);

/* Store key of an object: prefix + [ns "/"] + name (heap). */
char *fl_obj_key(const fl_kind *k, const char *ns, const char *name);
/* Prefix for a collection: kind prefix + [ns "/"] (heap). */
char *fl_coll_prefix(const fl_kind *k, const char *ns);

/* A boolean query parameter as Kubernetes reads it (NULL = false). */
bool fl_query_true(const char *v);

/* Wants a server-side Table? (Accept has as=Table). */
bool fl_req_wants_table(const fl_req *r);
/* dryRun=All present? */
bool fl_req_dry_run(const fl_req *r);

/* Object accessors. */
json_t *fl_obj_meta(json_t *obj);   /* metadata object, created if missing (borrowed) */
const char *fl_obj_str(const json_t *obj, const char *k1, const char *k2); /* obj[k1][k2] string or NULL */

/* The autoscaling/v1 Scale view of a scalable object (new reference), and the JSON paths
 * of its replica fields (".spec.replicas" for built-ins, the CRD's specReplicasPath). */
json_t *fl_scale_view(const fl_kind *k, const json_t *obj);
const char *fl_scale_spec_path(const fl_kind *k);

/* Handlers. */
/* A request on a resolved, authorized target, by method (api.c). */
void fl_api_dispatch(fl_api *api, fl_req *r, const fl_target *t, bool coll, bool watch);
/* The same for a kind served from another version's objects (fl_kind.storage_version):
 * bodies converted in, answers converted out (api_convert.c). */
void fl_api_serve_converted(fl_api *api, fl_req *r, const fl_target *t, bool coll, bool watch);

void fl_api_get(fl_api *api, fl_req *r, const fl_target *t);
void fl_api_list(fl_api *api, fl_req *r, const fl_target *t);
void fl_api_watch(fl_api *api, fl_req *r, const fl_target *t);

/* A value and its decoding that the table of recent objects let go of. */
typedef struct fl_api_kept {
    fl_blob *blob;
    json_t *obj;
} fl_api_kept;

/* Keep obj, which nobody changes any more, as what b, just stored, decodes to. Returns what
 * it replaced, for the caller to release with fl_api_kept_release (off the store's writer
 * thread: freeing a decoded object takes time). */
fl_api_kept fl_api_decoded_keep(fl_blob *b, json_t *obj);
/* Drop k's references and clear it. */
void fl_api_kept_release(fl_api_kept *k);
/* fl_api_decoded, but an object decoded now leaves out the members at skip (paths as
 * fl_json_load_skipping takes them; NULL: none): for an in-process list whose caller drops
 * them anyway (an informer's managedFields, a third of a Work's nodes). One kept decoded
 * comes whole. */
json_t *fl_api_decoded_skipping(const fl_blob *b, const char *const *skip);
/* The same, but never with the members at skip: one kept decoded comes as a view without
 * them (for a cache that keeps what it is given). */
json_t *fl_api_decoded_without(const fl_blob *b, const char *const *skip);
void fl_api_create(fl_api *api, fl_req *r, const fl_target *t);
void fl_api_update(fl_api *api, fl_req *r, const fl_target *t);
void fl_api_patch(fl_api *api, fl_req *r, const fl_target *t);
void fl_api_delete(fl_api *api, fl_req *r, const fl_target *t);
void fl_api_delete_collection(fl_api *api, fl_req *r, const fl_target *t);

/* Parse a request body (JSON, or YAML when the content type says so) into an object.
 * On failure responds 400 and returns NULL. */
json_t *fl_req_body_object(fl_req *r, const fl_target *t);

/* Write helpers used by several handlers (api_delete.c). */
/* Delete one stored object honoring finalizers (sets deletionTimestamp when present).
 * Returns 0 and the resulting object (deleted final state or updated) in *out (new ref, may be NULL). */
int fl_api_delete_object(fl_api *api, const fl_kind *k, const char *ns, const char *name, const json_t *opts,
                         bool dry_run, json_t **out, fl_target *t_for_errors, fl_req *r);
/* Delete every object of every namespaced kind in namespace ns (namespace finalization). */
int fl_api_purge_namespace(fl_api *api, const char *ns);

#endif
