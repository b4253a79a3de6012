/* http_priv.h - what http.c and http_job.c share (internal to the HTTP transport).
 *
 * http.c owns libmicrohttpd's callbacks, the listener and the watch streams; http_job.c a
 * request's handling on a worker (http_loop.h): routing's waits, authentication, the slots
 * and fl_api_handle. A request's conn_state is MHD's thread's, except while its connection
 * is suspended for a job: then it is the job's, until the job resumes the connection. */
#ifndef FL_HTTP_PRIV_H
#define FL_HTTP_PRIV_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "api/api.h"
#include "api/audit.h"
#include "api/auth.h"
#include "api/http.h"
#include "api/http_loop.h"

struct fl_http {
    struct MHD_Daemon *d;
    fl_api *api;
    fl_http_config cfg;
    char *token;
    atomic_int inflight;
    atomic_int watches;
    struct fl_metric_series *m_inflight, *m_dropped[2]; /* [0] requests, [1] watches (429s) */
    bool scrape_hooked;
    atomic_int pending;        /* jobs submitted whose connection is not resumed yet */
    atomic_bool closing;       /* fl_http_stop began: no new job, streams end */
    fl_http_loop *loop;
    int port;
};

typedef struct req_job req_job;

/* One request's state, MHD's "con_cls", from its headers to on_completed. */
typedef struct conn_state {
    struct timespec start;
    char *body;
    size_t len, cap;
    bool too_big;
    bool counted;      /* holds an in-flight slot */
    bool watch;        /* holds a watch slot */
    const char *verb;
    char resource[96];
    int code;
    fl_identity who;             /* the identity the token table found */
    fl_http_conn *conn;          /* the connection's record in the loop (deadlines), or NULL */
    req_job *job;                /* handled by a worker; answered when MHD calls again */
    fl_audit_ev *audit;          /* the request's audit record until it is written (a watch's
                                  * until on_completed); NULL without an audit log */
    char audit_id[FL_AUDIT_ID_MAX + 1]; /* the Audit-ID response header ("" before the job) */
} conn_state;

/* What a worker needs of a request, copied while MHD's thread has it, and the answer. */
struct req_job {
    fl_http_job job;       /* first: the loop hands it back */
    fl_http *h;
    struct MHD_Connection *c;
    conn_state *st;
    fl_http_route route;   /* route.path points into url */
    char *method, *url, *authorization, *content_type, *accept, *user_agent, *if_none_match;
    unsigned char *peer_certs;   /* the client's certificate chain as TLS delivered it (DER, back
                                  * to back), or NULL; lengths in peer_len */
    size_t peer_len[4], npeer;
    char *imp_user;        /* Impersonate-User, or NULL */
    char *imp_groups[FL_AUTH_GROUPS_MAX]; /* Impersonate-Group headers */
    size_t nimp_groups;
    bool imp_too_many;     /* more Impersonate-Group headers than an identity holds */
    bool imp_unsupported;  /* Impersonate-Uid or Impersonate-Extra-*: refused (400) */
    fl_req r;              /* query owned here; then the answer */
    bool watch;
    bool over;             /* no slot was free (429 once authenticated) */
    bool slot_later;       /* the route waits first: take the slot after */
    bool held, delayed;
    int64_t hold_until;
};

/* /healthz, /livez, /readyz and their checks. */
bool fl_http_health_path(const char *url);

/* A job for the complete request on c (MHD's thread: it copies what it needs of c). */
req_job *fl_http_job_new(fl_http *h, struct MHD_Connection *c, conn_state *st, const char *url, const char *method);
/* Free j and whatever answer it holds. NULL-safe. */
void fl_http_job_free(req_job *j);
/* Answer j with a Status. Returns true. */
bool fl_http_job_status(req_job *j, int code, const char *reason, const char *msg);
/* Take j's in-flight or watch slot (j->over when none is free). */
void fl_http_take_slot(fl_http *h, req_job *j);
/* Handle j: false when it was deferred (a partition or delay to wait out), true when j->r
 * holds the answer. A worker's, or MHD's thread for a request that never waits. */
bool fl_http_job_handle(req_job *j);
/* fl_http_job.run: handle, then resume the connection (j is MHD's thread's after). */
void fl_http_job_run(fl_http_job *job);

#endif
