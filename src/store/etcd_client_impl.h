/* etcd_client_impl.h - what etcd_client.c (unary requests) and etcd_watch.c (the streaming
 * watch) share: the client's struct, the options every HTTP handle gets, the reading of
 * etcd's JSON (int64 strings, base64 key-values) and the classification of its errors.
 * Private to those two files. */
#ifndef FL_ETCD_CLIENT_IMPL_H
#define FL_ETCD_CLIENT_IMPL_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>

#include "core/strbuf.h"
#include "store/etcd_client.h"

#define FL_ETCD_POOL_MAX 64 /* idle HTTP handles kept for reuse (each keeps its connections): as
                            * many as the server has request workers, or those beyond it would
                            * open a connection per request */

struct fl_etcd {
    char **eps;                /* endpoint base URLs, no trailing '/' */
    size_t nep;
    int cur;                   /* atomic: the endpoint requests start at */
    char *cafile, *certfile, *keyfile;
    long timeout_ms;           /* per request */
    long connect_ms;           /* per connection attempt */
    struct curl_slist *hdrs;   /* Content-Type and no "Expect: 100-continue"; read-only */
    pthread_mutex_t mu;        /* guards idle */
    CURL *idle[FL_ETCD_POOL_MAX];
    size_t nidle;
};

/* The options every request sets on a handle: URL (base + path), timeouts (connect always;
 * the overall one only when total_ms > 0), TLS files, keep-alive, no signals, the headers. */
void fl_etcd_setup_handle(const fl_etcd *c, CURL *h, const char *base, const char *path, long total_ms);

/* The endpoint a request starts at, and moving past ep after it failed (only when no other
 * thread has moved already, so that two failures do not skip a good member). */
size_t fl_etcd_current(fl_etcd *c);
void fl_etcd_advance(fl_etcd *c, size_t ep);

/* A member of o as int64: a JSON string of digits (how the gateway writes int64) or a
 * number; 0 when absent (proto3 JSON omits defaults) or malformed. */
int64_t fl_etcd_i64(const json_t *o, const char *name);

/* Fill kv from one of etcd's KeyValue objects. value NULL when !with_value, else a blob
 * (empty when absent). 0, or FL_EIO when a field is not base64 (kv then holds nothing). */
int fl_etcd_kv_parse(const json_t *o, bool with_value, fl_etcd_kv *kv);
void fl_etcd_kv_clear(fl_etcd_kv *kv);

/* How an error etcd sent maps to ours. */
typedef struct fl_etcd_verdict {
    int code;                  /* FL_E* */
    bool unavailable;          /* the member cannot serve now (no leader, timed out): a read
                                  may go to another member */
} fl_etcd_verdict;
/* From the gRPC status code and message of an error answer (a unary one's "code" and
 * "message", or a stream's "error" object). nospace set when the message says so. */
fl_etcd_verdict fl_etcd_classify(int grpc_code, const char *message, bool *nospace);

/* If v (a response, or a stream's line) is an error answer, its gRPC code and message
 * (borrowed from v); false when it is not one. */
bool fl_etcd_error_of(const json_t *v, int *grpc_code, const char **message);

/* Append [,]"name":"<base64 of the n bytes at p>" to b. */
void fl_etcd_add_b64(fl_strbuf *b, bool comma, const char *name, const void *p, size_t n);
/* Append ,"range_end":... for a range_end of etcd_client.h's (NULL: nothing; "": the byte 0). */
void fl_etcd_add_range_end(fl_strbuf *b, const char *range_end);

/* The revision etcd has compacted up to (learnt by watching key from revision 1, bounded by
 * the request timeout), or 0 when it will not say. For a range that hit the compaction. */
int64_t fl_etcd_compacted_to(fl_etcd *c, const char *key);

/* Fill e: code, and msg "etcd <endpoint>: <what fmt says>" on one line. e may be NULL. */
void fl_etcd_set_error(fl_etcd_error *e, int code, const char *endpoint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
