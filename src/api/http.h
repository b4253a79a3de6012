/* http.h - the HTTP(S) transport: libmicrohttpd on a few event-loop threads, requests
 * handled by a small pool of workers (http_loop.h), so that idle connections and watches
 * cost memory, not threads.
 *
 * Owns the listening socket, TLS (1.2 or newer, AEAD ciphers by default; GnuTLS underneath,
 * so kube-apiserver's --tls-min-version and --tls-cipher-suites become a priority string), authentication
 * (one bearer token, or the server's authenticators, auth.h: client certificates, the token
 * table and ServiceAccount tokens, which name the caller for authorization), the request size
 * limit (413 past 3 MiB, as Kubernetes; at once when Content-Length announces
 * over 4 times that), the
 * in-flight cap (429 under overload; the health checks are exempt, as in kube-apiserver), and
 * per-request metrics, the request header, body and idle keep-alive timeouts; hands each
 * request to fl_api_handle() on a worker. A watch with nothing to send parks its connection
 * (no thread waits) until the store publishes, and is ended within seconds when its client
 * goes away. */
#ifndef FL_HTTP_H
#define FL_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

typedef struct fl_http fl_http;

/* The defaults of the timeouts (fl_http_config): Go's net/http as kube-apiserver sets it up
 * reads headers within 32 s and keeps an idle connection 90 s; a body gets the minute that
 * kube-apiserver gives a whole request (--request-timeout). */
#define FL_HTTP_HEADER_TIMEOUT_S 32
#define FL_HTTP_BODY_TIMEOUT_S 60
#define FL_HTTP_IDLE_TIMEOUT_S 90

/* Several API instances behind one listener (simulated member clusters): the router maps a
 * request URL to the instance that serves it, the path within that instance, and the bearer
 * token it requires (NULL = none). Returns 0, or -1 for a URL no instance serves (404).
 * Called on MHD's threads; must be quick and thread-safe. */
typedef struct fl_http_route {
    fl_api *api;
    const char *path;    /* points into the URL */
    const char *token;   /* must stay valid while the instance exists */
    /* injected faults (simulated members): answer fail_code (e.g. 503) instead of serving;
     * wait delay_ms before serving; hold the request while *hold is set (a partition),
     * up to 60 s, then answer 503 */
    int fail_code;
    int delay_ms;
    volatile int *hold;
    /* set to serve the request with this function instead of fl_api_handle(api, ...) */
    void (*handle)(void *ctx, fl_req *r);
    void *handle_ctx;
} fl_http_route;
typedef int (*fl_http_router)(void *ctx, const char *url, fl_http_route *out);

typedef struct fl_http_config {
    const char *listen;        /* "127.0.0.1:6443" */
    const char *cert_pem;      /* NULL = plain HTTP (only on loopback; checked by caller) */
    const char *key_pem;
    const char *token;         /* required bearer token; NULL = no authentication */
    struct fl_auth *auth;      /* set: bearer tokens are looked up in this table instead of compared
                                * with token, and each request carries its identity (fl_req.user)
                                * for the authorizer; see auth.h. Not owned. */
    const char *client_ca_pem; /* set (with auth): clients are asked, not required, for a certificate,
                                * which auth verifies (fl_auth_authenticate_cert); GnuTLS names
                                * these CAs to the client as acceptable issuers. Copied at start. */
    const char *tls_min_version;   /* kube-apiserver's names: "VersionTLS12" (NULL = that) or "VersionTLS13" */
    const char *tls_cipher_suites; /* comma-separated IANA names; NULL or "" = ECDHE with AEAD ciphers */
    size_t max_body;           /* bytes; 0 = 3 MiB */
    int max_inflight;          /* concurrent non-watch requests; 0 = 400 */
    int max_watches;           /* concurrent watches; 0 = 10000 */
    int max_workers;           /* threads answering requests at most; 0 = 16 (a store that
                                  commits in groups on this machine keeps few busy; one a
                                  network round trip away, etcd, keeps each waiting longer) */
    /* seconds (0 = the default below): a connection must send a request's headers within
     * header_timeout_s of opening, its body within body_timeout_s of the headers, and a kept
     * alive connection with no request for idle_timeout_s is closed */
    int header_timeout_s, body_timeout_s, idle_timeout_s;
    struct fl_audit *audit;    /* the audit log (audit.h); NULL: none. Not owned. */
    fl_http_router router;     /* NULL: every request goes to the api given to fl_http_start */
    void *router_ctx;
} fl_http_config;

/* The GnuTLS priority string for a minimum TLS version and a list of cipher suites, named as
 * kube-apiserver's --tls-min-version and --tls-cipher-suites take them (either may be NULL: the
 * default). GnuTLS enables key exchanges, ciphers and MACs separately, so the suites named allow
 * their parts in any combination (and their ciphers in TLS 1.3 as well). Returns 0 with *out
 * (heap) set, or FL_EINVAL with *err (heap, one line naming the flag and the value) and *out
 * NULL. Any thread. */
int fl_http_tls_priorities(const char *min_version, const char *cipher_suites, char **out, char **err);

/* Start serving. *out set on every path. Returns 0 or FL_EIO with *err (heap) saying why. */
int fl_http_start(const fl_http_config *cfg, fl_api *api, fl_http **out, char **err);
/* Port actually bound (useful with port 0). */
int fl_http_port(const fl_http *h);
/* Stop accepting, let running requests finish (watches end promptly), stop. NULL-safe. */
void fl_http_stop(fl_http *h);
/* Requests being served now (gauge). */
size_t fl_http_inflight(const fl_http *h);

#endif
