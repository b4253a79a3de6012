/* etcd_client.h - a client of etcd's v3 API through its JSON gateway (internal to src/store).
 *
 * etcd (3.4 and later) serves, beside gRPC, a JSON translation of the same API on the same
 * client port: POST /v3/kv/range, /v3/kv/txn, /v3/kv/compaction, /v3/watch (a stream of
 * newline-separated responses), /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke,
 * /v3/maintenance/status; keys and values travel base64-encoded, 64-bit numbers as JSON
 * strings. libcurl (already the project's HTTP client) speaks it, so the etcd backend
 * (store_etcd.c) needs no gRPC stack. docs/internals/store.md, "The etcd backend", says why.
 *
 * Endpoints: a comma-separated list of http:// or https:// URLs of the cluster's members.
 * A request goes to the current endpoint; when it cannot connect, or the member answers that
 * it has no leader, the client moves to the next and tries again, each endpoint at most once
 * per request. A write (a txn with a PUT or DELETE, compaction, a lease grant) is retried only
 * when it surely did not reach a member (the connection was refused); otherwise its outcome
 * is unknown and the caller is told so (FL_ETIMEDOUT), never a false success. A lease
 * keepalive or revoke, which does the same when done twice, is retried like a read. Every request asks for a leader (gRPC
 * metadata hasleader), so a member cut off from its cluster refuses at once and ends its
 * watches, rather than holding them open and silent.
 *
 * Threads: every function may be called from any thread at once; requests borrow an HTTP
 * handle from a small pool (kept alive between requests). A watch runs on the calling
 * thread until it ends. */
#ifndef FL_ETCD_CLIENT_H
#define FL_ETCD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/blob.h"

typedef struct fl_etcd fl_etcd;

typedef struct fl_etcd_config {
    const char *endpoints; /* "http://127.0.0.1:2379,http://127.0.0.1:22379" */
    const char *cafile;    /* optional: CA bundle to verify https endpoints */
    const char *certfile;  /* optional, with keyfile: client certificate */
    const char *keyfile;
    int timeout_ms;        /* per request (not per watch); 0 = 5000 */
} fl_etcd_config;

/* What went wrong, for the caller to log or map to an API status. */
typedef struct fl_etcd_error {
    int code;            /* FL_ETIMEDOUT: unreachable, no leader, timed out, or a write's
                            outcome unknown; FL_ETOOBIG: request too large; FL_EEXPIRED: the
                            revision asked for is compacted (compact_rev says to where);
                            FL_EINVAL: etcd refused the request as malformed (a future
                            revision, a key twice in one txn); FL_ENOTFOUND: a txn's PUT
                            names a lease that is gone; FL_EIO: anything else (no space:
                            nospace true) */
    bool nospace;        /* etcd's "database space exceeded" alarm */
    int64_t compact_rev; /* with FL_EEXPIRED, when etcd said */
    char msg[256];       /* one line: the endpoint and what it said */
} fl_etcd_error;

typedef struct fl_etcd_kv {
    char *key;           /* heap, NUL-terminated (store keys hold no NUL) */
    fl_blob *value;      /* owned; NULL with keys_only */
    int64_t create_rev;
    int64_t mod_rev;
    int64_t version;
    int64_t lease;
} fl_etcd_kv;

/* Check cfg (URLs well formed, TLS files readable) and set up; contacts no member.
 * 0, or FL_EINVAL with one line in *err (heap; the caller frees it). *out set on every path. */
int fl_etcd_open(const fl_etcd_config *cfg, fl_etcd **out, char **err);
void fl_etcd_free(fl_etcd *c); /* NULL-safe; not while a request or watch runs */

/* The first key after every key that starts with prefix ("" for "\0": the whole keyspace),
 * as etcd's range_end for a prefix. Heap string. */
char *fl_etcd_prefix_end(const char *prefix);

/* Range [key, range_end) (range_end NULL: key alone) at revision rev (0: the latest), in key
 * order, at most limit (0: all). *kvs heap array of *n (free with fl_etcd_kvs_free); *more
 * when keys remained past limit; *header_rev the revision the read saw (may be NULL).
 * 0, or an error in *e (FL_EEXPIRED when rev is compacted). */
int fl_etcd_range(fl_etcd *c, const char *key, const char *range_end, int64_t rev, int64_t limit, bool keys_only,
                  fl_etcd_kv **kvs, size_t *n, bool *more, int64_t *header_rev, fl_etcd_error *e);
void fl_etcd_kvs_free(fl_etcd_kv *kvs, size_t n);

/* ---- transactions ---- */

enum fl_etcd_target { FL_ETCD_MOD = 1, FL_ETCD_CREATE = 2, FL_ETCD_VERSION = 3, FL_ETCD_VALUE = 4 };
enum fl_etcd_result { FL_ETCD_EQUAL = 1, FL_ETCD_NOT_EQUAL = 2, FL_ETCD_LESS = 3, FL_ETCD_GREATER = 4 };

typedef struct fl_etcd_cmp {
    const char *key;
    int target;          /* enum fl_etcd_target */
    int result;          /* enum fl_etcd_result */
    int64_t num;         /* for MOD, CREATE, VERSION */
    const void *value;   /* for VALUE */
    size_t value_len;
} fl_etcd_cmp;

enum fl_etcd_op_type { FL_ETCD_PUT = 1, FL_ETCD_DELETE = 2, FL_ETCD_GET = 3 };

typedef struct fl_etcd_op {
    int type;            /* enum fl_etcd_op_type; DELETE and GET of key alone */
    const char *key;
    const void *value;   /* PUT */
    size_t value_len;
    int64_t lease;       /* PUT: 0 = none */
} fl_etcd_op;

typedef struct fl_etcd_txn_result {
    bool succeeded;      /* the compares held: the success ops ran, else the failure ops */
    int64_t rev;         /* the header revision: with succeeded and a PUT or DELETE among
                            the ops run, the revision the transaction wrote */
    fl_etcd_kv *kvs;     /* what the GET ops that ran found, in op order (absent keys give
                            nothing); free with fl_etcd_txn_result_free */
    size_t nkvs;
    int64_t deleted;     /* keys the DELETE ops that ran removed */
} fl_etcd_txn_result;

/* One transaction: if every cmp holds, run then[], else otherwise[]. 0 (whether or not the
 * compares held: see res->succeeded), or an error in *e; res is filled only on 0. */
int fl_etcd_txn(fl_etcd *c, const fl_etcd_cmp *cmp, size_t ncmp, const fl_etcd_op *then, size_t nthen,
                const fl_etcd_op *otherwise, size_t nother, fl_etcd_txn_result *res, fl_etcd_error *e);
void fl_etcd_txn_result_free(fl_etcd_txn_result *res); /* NULL-safe; zeroes it */

/* Compact the history up to rev (etcd's compaction; physical: wait until it is done). */
int fl_etcd_compact(fl_etcd *c, int64_t rev, bool physical, fl_etcd_error *e);

/* The current revision of the cluster, the member that answered's idea of the leader and the
 * size of its database file (a health check that writes nothing). Any out may be NULL. */
int fl_etcd_status(fl_etcd *c, int64_t *header_rev, uint64_t *leader, int64_t *db_size, fl_etcd_error *e);

/* ---- leases ---- */

int fl_etcd_lease_grant(fl_etcd *c, int64_t ttl_s, int64_t *id, fl_etcd_error *e);
/* Renew once: 0 with *ttl_s the seconds the lease now has, 0 when it is gone (expired or
 * revoked: the caller's keys under it are gone too). */
int fl_etcd_lease_keepalive(fl_etcd *c, int64_t id, int64_t *ttl_s, fl_etcd_error *e);
/* Revoke: the keys under the lease go with it. 0 also when the lease was already gone. */
int fl_etcd_lease_revoke(fl_etcd *c, int64_t id, fl_etcd_error *e);

/* ---- watches ---- */

enum fl_etcd_event_type { FL_ETCD_EV_PUT = 1, FL_ETCD_EV_DELETE = 2 };

typedef struct fl_etcd_event {
    int type;            /* enum fl_etcd_event_type */
    fl_etcd_kv kv;       /* a DELETE's kv has the key and mod_rev (the delete's revision);
                            its value is NULL */
    fl_etcd_kv prev;     /* with prev_kv: the value before (prev.key NULL when none) */
} fl_etcd_event;

/* Called with the events of one watch response, in revision order (several revisions may
 * come in one call; one revision's events never span two), and the response's header
 * revision (a response with no events is a progress notification: every revision up to
 * header_rev has been delivered). The events are borrowed for the call. Return false to end
 * the watch. */
typedef bool (*fl_etcd_watch_fn)(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev);

/* Watch [key, range_end) for revisions >= start_rev (0: from now), calling fn per response,
 * on the calling thread, until fn returns false (0), *stop becomes true (0; checked at least
 * every 200 ms), or the stream fails (an error in *e: FL_EEXPIRED with e->compact_rev when
 * start_rev is compacted; FL_ETIMEDOUT when no member answers). A broken stream is not
 * resumed here: the caller knows the last revision it saw and watches again from the next.
 * progress_notify asks etcd for periodic empty responses (not requested ones: etcd 3.4 can
 * send a requested one ahead of events, etcd-io/etcd#15220). */
int fl_etcd_watch(fl_etcd *c, const char *key, const char *range_end, int64_t start_rev, bool prev_kv,
                  bool progress_notify, fl_etcd_watch_fn fn, void *ctx, const bool *stop, fl_etcd_error *e);
/* Watch the one key for at most total_ms (> 0) from start_rev, as fl_etcd_watch (no prev_kv,
 * no progress notifications, no stop flag): the stream ends by itself at the bound, which
 * answers FL_ETIMEDOUT in *e as a broken stream does. For a short wait on one key. */
int fl_etcd_watch_for(fl_etcd *c, const char *key, int64_t start_rev, long total_ms, fl_etcd_watch_fn fn, void *ctx,
                      fl_etcd_error *e);

#endif
