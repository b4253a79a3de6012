/* http_job.c - a request's handling on a worker of the HTTP transport (see http_priv.h).
 *
 * on_request (http.c) copies what the handler needs of a complete request into a job,
 * suspends the connection and submits the job; here the job waits out a simulated
 * partition or delay on the sweeper (holding no thread), authenticates, takes its slot and
 * calls fl_api_handle, then resumes the connection, and MHD's thread queues the answer.
 * The request's audit record (audit.h) is opened with the job and written once the job is
 * answered (audit_begin, audit_answered); api.c says what the request is in between. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/gnutls.h>

#include "api/authn_x509.h"
#include "api/http_priv.h"
#include "api/rbac.h"
#include "api/tls.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/strbuf.h"

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    fl_req *r = cls;
    if (r->nquery >= 64)
        return MHD_YES;
    r->query = fl_realloc(r->query, (r->nquery + 1) * sizeof *r->query);
    r->query[r->nquery].key = fl_strdup(key);
    r->query[r->nquery].value = fl_strdup(value ? value : "");
    r->nquery++;
    return MHD_YES;
}

static void free_query(fl_req *r)
{
    for (size_t i = 0; i < r->nquery; i++) {
        free(r->query[i].key);
        free(r->query[i].value);
    }
    free(r->query);
}

/* /healthz, /livez, /readyz and their checks (/healthz/ping, ...): a probe of a server that
 * is merely busy must not fail, so these are outside the in-flight limit, as kube-apiserver
 * exempts them. They answer from memory, and take no slot. */
bool fl_http_health_path(const char *url)
{
    static const char *const roots[] = {"/healthz", "/livez", "/readyz"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        size_t n = strlen(roots[i]);
        if (!strncmp(url, roots[i], n) && (url[n] == 0 || url[n] == '/'))
            return true;
    }
    return false;
}

/* Paths anyone may read without credentials: the health checks, /version, and the dashboard's
 * assets (/ui, /ui/...: static files that hold no data; the page then calls the API with the
 * user's own credentials, ui.h). */
static bool public_path(const char *url)
{
    return !strcmp(url, "/ui") || !strncmp(url, "/ui/", 4) || !strcmp(url, "/healthz") || !strcmp(url, "/livez") ||
           !strcmp(url, "/readyz") || !strcmp(url, "/version") || !strncmp(url, "/healthz/", 9) ||
           !strncmp(url, "/readyz/", 8) || !strncmp(url, "/livez/", 7);
}

static bool is_watch_request(struct MHD_Connection *c, const char *url)
{
    const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    if (w && strcmp(w, "0") && strcasecmp(w, "false"))
        return true;
    return strstr(url, "/watch/") != NULL;
}

/* ---- a request's handling, off MHD's threads ---- */

/* Impersonate-User and Impersonate-Group (kubectl --as, --as-group), checked in
 * fl_http_job_handle once the caller is authenticated (rbac_review.c). */
static enum MHD_Result collect_impersonation(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    req_job *j = cls;
    (void)kind;
    if (!strcasecmp(key, "Impersonate-User") && !j->imp_user)
        j->imp_user = fl_strdup(value ? value : "");
    else if (!strcasecmp(key, "Impersonate-Group") && j->nimp_groups < FL_AUTH_GROUPS_MAX)
        j->imp_groups[j->nimp_groups++] = fl_strdup(value ? value : "");
    else if (!strcasecmp(key, "Impersonate-Group"))
        j->imp_too_many = true;
    else if (!strcasecmp(key, "Impersonate-Uid") || !strncasecmp(key, "Impersonate-Extra-", 18))
        j->imp_unsupported = true; /* refused, not ignored: the caller would act as someone else */
    return MHD_YES;
}

static char *dup_or_null(const char *v)
{
    return v ? fl_strdup(v) : NULL;
}

/* The client certificate chain the TLS session holds (when the server verifies client
 * certificates), copied while MHD's thread has the connection: the worker checks it. */
static void copy_peer_certs(fl_http *h, struct MHD_Connection *c, req_job *j)
{
    if (!h->cfg.client_ca_pem || !fl_auth_has_x509(h->cfg.auth))
        return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    unsigned n = 0;
    const gnutls_datum_t *d = ci && ci->tls_session ? gnutls_certificate_get_peers(ci->tls_session, &n) : NULL;
    if (!d || !n)
        return;
    size_t max = sizeof j->peer_len / sizeof j->peer_len[0], total = 0;
    j->npeer = n < max ? n : max;
    for (size_t i = 0; i < j->npeer; i++)
        total += (j->peer_len[i] = d[i].size);
    j->peer_certs = fl_malloc(total ? total : 1);
    total = 0;
    for (size_t i = 0; i < j->npeer; i++) {
        memcpy(j->peer_certs + total, d[i].data, d[i].size);
        total += d[i].size;
    }
}

/* ---- the audit record (audit.h): opened as the request arrives, written when answered ---- */

/* The request's URI as the client sent it, about: the path and the query, escaped again. */
static char *request_uri(const char *url, const fl_req *r)
{
    fl_strbuf b = {0};
    fl_strbuf_adds(&b, url);
    for (size_t i = 0; i < r->nquery; i++) {
        fl_strbuf_addc(&b, i ? '&' : '?');
        for (int k = 0; k < 2; k++) {
            if (k)
                fl_strbuf_addc(&b, '=');
            for (const unsigned char *p = (const unsigned char *)(k ? r->query[i].value : r->query[i].key); *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-_.~/:,", *p))
                    fl_strbuf_addc(&b, (char)*p);
                else
                    fl_strbuf_printf(&b, "%%%02X", *p);
            }
        }
    }
    return b.p;
}

/* Open the request's audit record (or only its Audit-ID without an audit log): its source IPs
 * are X-Forwarded-For's, X-Real-Ip's, then the peer's, as kube-apiserver lists them. */
static void audit_begin(fl_http *h, struct MHD_Connection *c, conn_state *st, req_job *j)
{
    if (!h->cfg.audit) {
        fl_audit_new_id(st->audit_id);
        return;
    }
    char *uri = request_uri(j->url, &j->r);
    fl_audit_ev *ev = fl_audit_ev_new(h->cfg.audit, j->method, uri, j->user_agent,
                                      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Audit-ID"));
    free(uri);
    const char *xff = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For");
    for (const char *p = xff; p && *p;) {
        p += strspn(p, " ,");
        size_t n = strcspn(p, ",");
        char ip[64];
        snprintf(ip, sizeof ip, "%.*s", (int)(n < sizeof ip ? n : sizeof ip - 1), p);
        ip[strcspn(ip, " ")] = 0;
        fl_audit_add_source_ip(ev, ip);
        p += n;
    }
    fl_audit_add_source_ip(ev, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Real-Ip"));
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char peer[INET6_ADDRSTRLEN] = "";
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, peer, sizeof peer);
    else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, peer, sizeof peer);
    fl_audit_add_source_ip(ev, peer);
    snprintf(st->audit_id, sizeof st->audit_id, "%s", fl_audit_ev_id(ev));
    st->audit = ev;
}

/* The answer is in j->r: write the record's last event (a watch's waits for its end). */
static void audit_answered(req_job *j)
{
    conn_state *st = j->st;
    if (!st->audit)
        return;
    if (st->who.user[0])
        fl_audit_set_user(st->audit, &st->who); /* answered before the handler: 413, 429 */
    if (fl_audit_respond(st->audit, &j->r)) {
        fl_audit_ev_end(st->audit, j->r.code);
        st->audit = NULL;
    }
}

req_job *fl_http_job_new(fl_http *h, struct MHD_Connection *c, conn_state *st, const char *url, const char *method)
{
    req_job *j = fl_calloc(1, sizeof *j);
    j->h = h;
    j->c = c;
    j->st = st;
    j->method = fl_strdup(method);
    j->url = fl_strdup(url);
    j->authorization = dup_or_null(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"));
    j->content_type = dup_or_null(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"));
    j->accept = dup_or_null(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept"));
    j->user_agent = dup_or_null(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent"));
    j->if_none_match = dup_or_null(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match"));
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &j->r);
    copy_peer_certs(h, c, j);
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_impersonation, j);
    j->watch = !strcmp(method, "GET") && is_watch_request(c, url);
    audit_begin(h, c, st, j);
    return j;
}

void fl_http_job_free(req_job *j)
{
    /* a watch answered but never sent (the connection closed at shutdown) */
    fl_api_stream_free(j->r.stream);
    free_query(&j->r);
    free(j->r.resp);
    free(j->r.warnings);
    free(j->method);
    free(j->url);
    free(j->authorization);
    free(j->content_type);
    free(j->accept);
    free(j->user_agent);
    free(j->if_none_match);
    free(j->peer_certs);
    free(j->imp_user);
    for (size_t i = 0; i < j->nimp_groups; i++)
        free(j->imp_groups[i]);
    free(j);
}

/* Answer with a Status; true (the job is answered). */
bool fl_http_job_status(req_job *j, int code, const char *reason, const char *msg)
{
    j->r.code = code;
    j->r.resp = fl_asprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                            "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
                            msg, reason, code);
    j->r.resp_len = strlen(j->r.resp);
    j->r.resp_type = "application/json";
    j->r.retry_after = code == 429 ? "1" : NULL;
    return true;
}

/* An in-flight slot (or a watch slot); j->over when none is free. The slot is the
 * connection's until on_completed (a watch's passes to its stream). */
void fl_http_take_slot(fl_http *h, req_job *j)
{
    if (j->watch) {
        if (atomic_fetch_add(&h->watches, 1) >= h->cfg.max_watches) {
            atomic_fetch_sub(&h->watches, 1);
            j->over = true;
        } else {
            j->st->watch = true;
        }
    } else if (!fl_http_health_path(j->route.path)) {
        if (atomic_fetch_add(&h->inflight, 1) >= h->cfg.max_inflight) {
            atomic_fetch_sub(&h->inflight, 1);
            j->over = true;
        } else {
            j->st->counted = true;
        }
    }
}

/* The request's handling: false when it was deferred (a partition or delay to wait out),
 * true when j->r holds the answer. */
static bool job_handle(req_job *j)
{
    fl_http *h = j->h;
    conn_state *st = j->st;
    fl_http_route *route = &j->route;
    bool stopping = h->api->stopping || atomic_load(&h->closing);
    int64_t now = fl_http_now_ms();
    if (route->hold) {
        if (!j->held) {
            j->held = true;
            j->hold_until = now + 60000;
        }
        if (*route->hold && now < j->hold_until && !stopping) {
            fl_http_loop_defer(h->loop, &j->job, now + 100); /* look again, holding no thread */
            return false;
        }
        if (*route->hold)
            return fl_http_job_status(j, 503, "ServiceUnavailable", "the cluster is partitioned");
    }
    if (route->fail_code)
        return fl_http_job_status(j, route->fail_code, "ServiceUnavailable", "the cluster's API is down");
    if (route->delay_ms > 0 && !j->delayed && !stopping) {
        j->delayed = true;
        fl_http_loop_defer(h->loop, &j->job, now + route->delay_ms);
        return false;
    }
    const fl_identity *who = NULL; /* NULL: authentication is off, nothing is authorized */
    const char *auth = j->authorization;
    if (h->cfg.auth && !route->handle) {
        /* as kube-apiserver's union of authenticators: a client certificate that verifies, else
         * a bearer token (the table, or a ServiceAccount's JWT); public paths need neither */
        fl_x509_der certs[4];
        size_t off = 0;
        for (size_t i = 0; i < j->npeer; off += j->peer_len[i++])
            certs[i] = (fl_x509_der){j->peer_certs + off, j->peer_len[i]};
        if (j->npeer && fl_auth_authenticate_cert(h->cfg.auth, certs, j->npeer, &st->who) == 0) {
            who = &st->who;
        } else if (auth && !strncmp(auth, "Bearer ", 7) && fl_auth_authenticate(h->cfg.auth, auth + 7, &st->who) == 0) {
            who = &st->who;
        } else if (!auth && !j->npeer && public_path(route->path)) {
            fl_identity_anonymous(&st->who);
            who = &st->who;
        } else { /* credentials that fail are refused even where none are needed, as the apiserver does */
            return fl_http_job_status(j, 401, "Unauthorized", "Unauthorized");
        }
    } else if (route->token) {
        bool ok = auth && !strncmp(auth, "Bearer ", 7) && fl_token_equal(auth + 7, route->token);
        if (!ok && (auth || !public_path(route->path)))
            return fl_http_job_status(j, 401, "Unauthorized", "Unauthorized");
    }
    bool impersonated = false;
    if (who && (j->imp_user || j->nimp_groups || j->imp_unsupported)) {
        fl_identity as;
        char msg[1024];
        if (j->imp_unsupported)
            snprintf(msg, sizeof msg, "Impersonate-Uid and Impersonate-Extra-* headers are not supported; impersonate "
                                      "with Impersonate-User and Impersonate-Group only");
        else if (j->imp_too_many)
            snprintf(msg, sizeof msg, "too many Impersonate-Group headers");
        int code = j->imp_too_many || j->imp_unsupported ? 400
                                   : fl_rbac_impersonate(h->cfg.auth, who, j->imp_user,
                                                         (const char *const *)j->imp_groups, j->nimp_groups, &as,
                                                         msg, sizeof msg);
        if (code) {
            json_t *st_obj = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                                       "metadata", "status", "Failure", "message",
                                       msg, "reason",
                                       code == 403 ? "Forbidden" : "BadRequest", "code", code);
            j->r.code = code;
            j->r.resp = fl_json_dumps(st_obj, NULL); /* the message quotes names: encoded, not pasted */
            j->r.resp_len = strlen(j->r.resp);
            j->r.resp_type = "application/json";
            json_decref(st_obj);
            return true;
        }
        /* the log names who asked and whom they acted as (kube-apiserver's impersonatedUser) */
        fl_audit_set_user(st->audit, who);
        fl_audit_set_impersonated(st->audit, &as);
        impersonated = true;
        st->who = as;
        who = &st->who;
    }
    if (st->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "Request entity too large: limit is %zu", h->cfg.max_body);
        return fl_http_job_status(j, 413, "RequestEntityTooLarge", msg);
    }
    if (j->slot_later)
        fl_http_take_slot(h, j);
    if (j->over) {
        fl_metric_add(h->m_dropped[j->watch ? 1 : 0], 1);
        return j->watch ? fl_http_job_status(j, 429, "TooManyRequests", "too many watches, please try again later")
                        : fl_http_job_status(j, 429, "TooManyRequests", "Too many requests, please try again later.");
    }
    fl_req *r = &j->r;
    r->method = j->method;
    r->path = route->path;
    r->content_type = j->content_type;
    r->accept = j->accept;
    r->user_agent = j->user_agent;
    r->if_none_match = j->if_none_match;
    r->who = who;
    r->audit = st->audit;
    if (!impersonated)
        fl_audit_set_user(st->audit, who); /* before fl_api_handle decides the level */
    r->body = st->body;
    r->body_len = st->len;
    if (route->handle)
        route->handle(route->handle_ctx, r);
    else
        fl_api_handle(route->api, r);
    if (r->stream) {
        free(r->warnings);
        r->warnings = NULL;
    }
    return true;
}

bool fl_http_job_handle(req_job *j)
{
    if (!job_handle(j))
        return false;
    audit_answered(j);
    return true;
}

/* On a worker: handle, then hand the connection back to MHD, which calls on_request again. */
void fl_http_job_run(fl_http_job *job)
{
    req_job *j = (req_job *)job;
    if (!fl_http_job_handle(j))
        return;
    fl_http *h = j->h;
    MHD_resume_connection(j->c); /* j is MHD's thread's from here on */
    atomic_fetch_sub(&h->pending, 1);
}

