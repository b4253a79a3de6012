/* audit.h - the audit log, as kube-apiserver writes it: one audit.k8s.io/v1 Event per JSON
 * line for each stage of each request the policy (audit_policy.h) logs.
 *
 * The transport (http_job.c) opens a record when a request arrives (fl_audit_ev_new: its
 * audit ID, the time, the URI, the source IPs and user agent), names the authenticated user
 * (fl_audit_set_user); fl_api_handle (api.c) says what the request is once it has parsed the
 * path (fl_audit_resource, fl_audit_nonresource), which decides the level and writes the
 * RequestReceived event, and what authorization decided (fl_audit_authorized); the transport
 * closes the record when the handler is done (fl_audit_respond: ResponseComplete, or
 * ResponseStarted for a watch, whose ResponseComplete fl_audit_ev_end writes when it ends).
 * A record whose request never reached a handler (401, 413, 429) is decided at
 * fl_audit_respond as a non-resource request on its path.
 *
 * Whatever the policy says, Secrets (and their subresources), TokenRequests
 * (serviceaccounts/token), TokenReviews and Flotilla's register endpoint (which answers with
 * a token) are logged at Metadata at most, and a Secret inside another object (a Work's
 * manifests, a List) loses its data and stringData before it is logged.
 *
 * Cost: serializing an event happens on the request's own thread, outside any lock; the
 * event is then appended with one write(2) under a mutex held for that write alone (and for
 * a rotation, once per --audit-log-maxsize). No thread is added.
 *
 * Threads: fl_audit_new/fl_audit_free at start and stop; a record is used by one thread at a
 * time (the request's), the sink by any number at once. In-process requests (the
 * controllers' own) carry no record and are not logged. */
#ifndef FL_AUDIT_H
#define FL_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "api/audit_policy.h"
#include "api/auth.h"

struct fl_target;
typedef struct fl_audit fl_audit;
typedef struct fl_audit_ev fl_audit_ev;

/* lumberjack's (and so kube-apiserver's) size when --audit-log-maxsize is 0 */
#define FL_AUDIT_DEFAULT_MAX_MB 100
/* The longest audit ID taken from a request's Audit-ID header (longer ones are replaced). */
#define FL_AUDIT_ID_MAX 64

typedef struct fl_audit_config {
    const char *policy_file; /* --audit-policy-file; NULL: no audit log, as kube-apiserver */
    const char *log_path;    /* --audit-log-path; "-" standard output; NULL: no audit log */
    long max_size_mb;        /* rotate before the file would pass this; 0: 100 */
    long max_backups;        /* rotated files kept; 0: all */
    long max_age_days;       /* rotated files older than this are removed; 0: none for age */
} fl_audit_config;

/* The sink cfg describes, its policy loaded and its file opened (created 0600, appended to).
 * *out is NULL (audit off, returns 0) when either the policy file or the path is missing,
 * as kube-apiserver writes no log without a policy. FL_EINVAL with *err (heap, one line
 * naming the file and the line or field) when the policy does not parse; FL_EIO with *err
 * when the file cannot be opened. *out is set on every path. */
int fl_audit_new(const fl_audit_config *cfg, fl_audit **out, char **err);
/* NULL-safe; no request may be using a record of a. */
void fl_audit_free(fl_audit *a);

/* A record for a request that arrived now (NULL when a is NULL): method and uri (path and
 * query) copied, user_agent (may be NULL) copied, audit_id the client's Audit-ID header
 * when it sent a usable one, else NULL for a new UUID. Free with fl_audit_ev_end. */
fl_audit_ev *fl_audit_ev_new(fl_audit *a, const char *method, const char *uri, const char *user_agent,
                             const char *audit_id);
/* Add a source IP (the peer's, or X-Forwarded-For's). NULL-safe. */
void fl_audit_add_source_ip(fl_audit_ev *ev, const char *ip);
/* The authenticated user (copied; NULL: none, as a request that failed authentication or
 * one of a server without authentication). The first user named stays: an impersonating
 * request names the real one first. NULL-safe. */
void fl_audit_set_user(fl_audit_ev *ev, const fl_identity *who);
/* The user the request impersonated (copied), once impersonation has been allowed: the
 * events name it as impersonatedUser. NULL-safe. */
void fl_audit_set_impersonated(fl_audit_ev *ev, const fl_identity *as);
/* A resource request: verb (Kubernetes') on t. Decides the level from the policy and writes
 * RequestReceived. Once per record (later calls are ignored). NULL-safe. */
void fl_audit_resource(fl_audit_ev *ev, const char *verb, const struct fl_target *t);
/* A non-resource request on path (discovery, /version, /metrics, an unknown path): the verb
 * is the method in lower case. As fl_audit_resource otherwise. */
void fl_audit_nonresource(fl_audit_ev *ev, const char *method, const char *path);
/* Authorization's decision (and reason, may be NULL) as the event's annotations. Returns
 * allowed, so that it can wrap the authorizer's call. NULL-safe. */
bool fl_audit_authorized(fl_audit_ev *ev, bool allowed, const char *reason);
/* The handler is done and r holds the answer: write ResponseComplete (with the request and
 * response bodies the level asks for), or ResponseStarted when r answers with a stream.
 * Returns true when the record is finished (the caller frees it with fl_audit_ev_end, which
 * then writes nothing more), false when it waits for the stream's end. NULL-safe. */
bool fl_audit_respond(fl_audit_ev *ev, const fl_req *r);
/* End the record: a stream's ResponseComplete (code) if fl_audit_respond saw a stream, then
 * free. NULL-safe. */
void fl_audit_ev_end(fl_audit_ev *ev, int code);
/* The record's audit ID (the Audit-ID response header). */
const char *fl_audit_ev_id(const fl_audit_ev *ev);

/* A new audit ID (a UUID) into buf, for a response of a server without an audit log. */
void fl_audit_new_id(char buf[37]);

#endif
