/* members.c - clients for member clusters, built from Cluster + Secret (contract in members.h).
 *
 * Where the inputs come from: two kinds of informer on the control plane, started by
 * fl_members_new and owned here: one on Clusters, and one on Secrets per namespace that
 * a Cluster's spec.secretRef names (started the first time a namespace is seen; in
 * practice only "karmada-cluster", where `flotilla ctl join` writes, as karmadactl
 * does). A lookup reads both caches; when an object is not there yet (the informer has
 * not synced, or a join happened a moment ago) it reads the object from the control
 * plane instead, so a fresh join is usable at once and a missing object is really
 * missing.
 *
 * When a client is rebuilt: every entry remembers the resourceVersions of the Cluster
 * and Secret it was built from, so the common call is two string compares. When either
 * moved, the connection inputs (apiEndpoint, insecureSkipTLSVerification, token, CA) are
 * compared with the ones the client was built from: a Cluster's resourceVersion moves
 * with every status write, and rebuilding then would throw away warm connections for
 * nothing. Only a real change of credentials or endpoint builds a new client.
 *
 * Replaced clients are kept (not freed) until fl_members_free, because callers hold
 * borrowed pointers without telling us when they are done; credentials change rarely,
 * so the list stays short.
 *
 * Each client counts its requests for /metrics (flotilla_member_request_*{cluster}).
 *
 * One mutex guards the table; no I/O happens under it. */
#include "controllers/members.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/informer.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/htab.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"

static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};
static const fl_gvr SECRETS = {"v1", "secrets"};

/* A member's client and what it was built from. */
typedef struct member_entry {
    fl_hnode node;              /* in the table, by name */
    char *name;
    char *cluster_rv, *secret_rv;
    char *fingerprint;          /* endpoint, TLS settings and token the client uses */
    fl_client *client;
} member_entry;

typedef struct secret_informer {
    struct secret_informer *next;
    char *ns;
    fl_informer *inf;
} secret_informer;

struct fl_members {
    fl_client *cp;
    pthread_mutex_t mu;
    fl_informer *clusters;
    secret_informer *secrets;
    fl_htab entries;            /* member_entry by cluster name */
    fl_client **retired;
    size_t nretired, cap_retired;
};


/* ---- the table ---- */

static bool entry_is(const fl_hnode *n, const void *name)
{
    return !strcmp(fl_htab_entry(n, member_entry, node)->name, name);
}

static member_entry *find(fl_members *m, const char *name)
{
    return fl_htab_entry(fl_htab_find(&m->entries, fl_hash_str(name), entry_is, name), member_entry, node);
}

static void retire(fl_members *m, fl_client *c)
{
    if (!c)
        return;
    if (m->nretired == m->cap_retired) {
        m->cap_retired = m->cap_retired ? m->cap_retired * 2 : 8;
        m->retired = fl_realloc(m->retired, m->cap_retired * sizeof *m->retired);
    }
    m->retired[m->nretired++] = c;
}

static void entry_free(member_entry *e)
{
    free(e->name);
    free(e->cluster_rv);
    free(e->secret_rv);
    free(e->fingerprint);
    free(e);
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = fl_strdup(src);
}

static fl_informer *start_informer(fl_client *cp, const fl_gvr *r, const char *ns)
{
    /* Clusters: spec and metadata are all a client needs; Secrets: their data */
    fl_informer_config cfg = {.client = cp, .resource = *r, .ns = ns,
                              .transform = strcmp(r->resource, "clusters") ? fl_informer_drop_managed_fields
                                                                          : fl_informer_drop_status};
    fl_informer *inf = NULL;
    if (fl_informer_new(&cfg, &inf) != 0 || fl_informer_start(inf) != 0) {
        fl_informer_free(inf);
        return NULL;
    }
    return inf;
}

fl_members *fl_members_new(fl_client *cp)
{
    fl_members *m = fl_calloc(1, sizeof *m);
    m->cp = cp;
    pthread_mutex_init(&m->mu, NULL);
    fl_htab_init(&m->entries, 16);
    m->clusters = start_informer(cp, &CLUSTERS, NULL);
    return m;
}

void fl_members_free(fl_members *m)
{
    if (!m)
        return;
    fl_informer_free(m->clusters);
    for (secret_informer *s = m->secrets, *next; s; s = next) {
        next = s->next;
        fl_informer_free(s->inf);
        free(s->ns);
        free(s);
    }
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&m->entries, &it); n; n = fl_htab_next(&it)) {
        member_entry *e = fl_htab_entry(n, member_entry, node);
        fl_client_free(e->client);
        entry_free(e);
    }
    for (size_t i = 0; i < m->nretired; i++)
        fl_client_free(m->retired[i]);
    free(m->retired);
    fl_htab_close(&m->entries);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* The Secret informer of namespace ns, started on first use. */
static fl_informer *secret_informer_for(fl_members *m, const char *ns)
{
    pthread_mutex_lock(&m->mu);
    secret_informer *s = m->secrets;
    while (s && strcmp(s->ns, ns))
        s = s->next;
    if (!s) {
        s = fl_calloc(1, sizeof *s);
        s->ns = fl_strdup(ns);
        s->inf = start_informer(m->cp, &SECRETS, ns);
        s->next = m->secrets;
        m->secrets = s;
    }
    pthread_mutex_unlock(&m->mu);
    return s->inf;
}

/* obj from the informer's cache when it is there, else from the control plane. */
static int read_object(fl_members *m, fl_informer *inf, const fl_gvr *r, const char *ns, const char *name,
                       json_t **out, fl_client_error *ce)
{
    *out = NULL;
    if (inf && fl_informer_has_synced(inf) && fl_informer_get(inf, ns, name, out) == 0)
        return 0;
    return fl_client_get(m->cp, r, ns, name, out, ce);
}

/* ---- a member's API, as /metrics tells it ----
 * Every member client counts its requests (fl_client_observer): the latency of each answer
 * (watches left out: they last) and the failures that say the member, or our access to it,
 * is in trouble. Answers a caller expects and handles (404, 409, 422) are not failures. The
 * cluster label is bounded by the fleet's size (docs/observability.md). */

typedef struct member_observer {
    char *cluster;
    fl_metric_series *duration;
} member_observer;

static fl_metric *duration_family(void)
{
    return fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_member_request_duration_seconds",
                            "Time a member cluster's API took to answer a request of the control plane (watches "
                            "not counted), by cluster.",
                            "cluster", NULL, NULL, 0);
}

static fl_metric *errors_family(void)
{
    return fl_metric_family(FL_METRIC_COUNTER, "flotilla_member_request_errors_total",
                            "Requests to a member cluster's API that failed, by cluster and reason: Timeout, "
                            "ConnectionFailed, ServerError (5xx), TooManyRequests (429 after retries), Unauthorized "
                            "(401), Forbidden (403).",
                            "cluster", "reason", NULL, 0);
}

/* Why a finished request failed, as flotilla_member_request_errors_total says it, or NULL. */
static const char *failure_reason(int rc, long http, bool transport)
{
    if (transport)
        return rc == FL_ETIMEDOUT ? "Timeout" : "ConnectionFailed";
    return http >= 500 ? "ServerError" : http == 429 ? "TooManyRequests" : http == 401 ? "Unauthorized"
                                         : http == 403 ? "Forbidden" : NULL;
}

static void observe_request(void *ctx, bool watch, int rc, long http, bool transport, double seconds)
{
    member_observer *o = ctx;
    if (!watch)
        fl_metric_observe(o->duration, seconds);
    const char *why = failure_reason(rc, http, transport);
    if (why && (!watch || http == 0)) /* a watch that never got an answer; one that ended is normal */
        fl_metric_add(fl_metric_with(errors_family(), o->cluster, why), 1);
}

static void observer_free(void *ctx)
{
    member_observer *o = ctx;
    free(o->cluster);
    free(o);
}

static fl_client_observer observer_for(const char *cluster)
{
    member_observer *o = fl_calloc(1, sizeof *o);
    o->cluster = fl_strdup(cluster);
    o->duration = fl_metric_with(duration_family(), cluster, NULL);
    return (fl_client_observer){observe_request, o, observer_free};
}

static int fail(char **err, int rc, char *msg)
{
    if (err)
        *err = msg;
    else
        free(msg);
    return rc;
}

int fl_members_client(fl_members *m, const char *name, fl_client **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    json_t *cl = NULL, *sec = NULL;
    char *token = NULL, *ca = NULL, *fp = NULL;
    int rc = read_object(m, m->clusters, &CLUSTERS, NULL, name, &cl, &ce);
    if (rc) {
        rc = fail(err, rc,
                  rc == FL_ENOTFOUND ? fl_asprintf("cluster %s not found", name)
                                     : fl_asprintf("reading cluster %s: %s", name, ce.message));
        goto out;
    }
    json_t *spec = json_object_get(cl, "spec");
    const char *mode = fl_json_str(spec, "syncMode");
    if (mode && !strcmp(mode, "Pull")) {
        rc = fail(err, FL_EUNSUPPORTED,
                  fl_asprintf("cluster %s is in Pull mode: its agent delivers to it", name));
        goto out;
    }
    const char *endpoint = fl_json_str(spec, "apiEndpoint");
    if (!endpoint || !*endpoint) {
        rc = fail(err, FL_EINVAL, fl_asprintf("cluster %s: spec.apiEndpoint is empty", name));
        goto out;
    }
    const char *sns = fl_json_path_str(spec, "secretRef.namespace"), *sname = fl_json_path_str(spec, "secretRef.name");
    if (!sns || !*sns || !sname || !*sname) {
        rc = fail(err, FL_EINVAL, fl_asprintf("cluster %s: spec.secretRef (namespace and name) is required in Push mode",
                                              name));
        goto out;
    }
    rc = read_object(m, secret_informer_for(m, sns), &SECRETS, sns, sname, &sec, &ce);
    if (rc) {
        rc = fail(err, rc,
                  rc == FL_ENOTFOUND
                      ? fl_asprintf("secret %s/%s (spec.secretRef of cluster %s) not found", sns, sname, name)
                      : fl_asprintf("reading secret %s/%s: %s", sns, sname, ce.message));
        goto out;
    }
    const char *crv = fl_client_object_rv(cl), *srv = fl_client_object_rv(sec);

    /* the common case: nothing moved since the client was built */
    pthread_mutex_lock(&m->mu);
    member_entry *e = find(m, name);
    if (e && !strcmp(e->cluster_rv, crv) && !strcmp(e->secret_rv, srv)) {
        *out = e->client;
        pthread_mutex_unlock(&m->mu);
        goto out;
    }
    pthread_mutex_unlock(&m->mu);

    const char *tok64 = fl_json_path_str(sec, "data.token"), *ca64 = fl_json_path_str(sec, "data.caBundle");
    if (!tok64 || !(token = fl_base64_decode(tok64, NULL)) || !*token) {
        rc = fail(err, FL_EINVAL, fl_asprintf("secret %s/%s: data.token is %s", sns, sname,
                                              !tok64 ? "missing" : token ? "empty" : "not valid base64"));
        goto out;
    }
    if (ca64 && !(ca = fl_base64_decode(ca64, NULL))) {
        rc = fail(err, FL_EINVAL, fl_asprintf("secret %s/%s: data.caBundle is not valid base64", sns, sname));
        goto out;
    }
    json_t *ins = json_object_get(spec, "insecureSkipTLSVerification");
    bool insecure = json_is_true(ins);
    fp = fl_asprintf("%s\n%d\n%s\n%s", endpoint, insecure, token, ca ? ca : "");

    pthread_mutex_lock(&m->mu);
    e = find(m, name);
    if (e && !strcmp(e->fingerprint, fp)) {
        /* only the resourceVersions moved (a status write, a relabel) */
        set_str(&e->cluster_rv, crv);
        set_str(&e->secret_rv, srv);
        *out = e->client;
        pthread_mutex_unlock(&m->mu);
        goto out;
    }
    fl_kubeconfig kc;
    fl_kubeconfig_init(&kc, endpoint, token);
    free(kc.origin);
    kc.origin = fl_asprintf("cluster %s", name);
    kc.insecure = insecure;
    if (!insecure && ca && *ca)
        kc.ca_pem = fl_strdup(ca);
    fl_client *c = NULL;
    char *cerr = NULL;
    /* delivery reads member objects' status and versions, never who manages their fields */
    rc = fl_client_new(&kc,
                       &(fl_client_options){.user_agent = "flotilla-controller-manager",
                                            .answers_without_managed_fields = true,
                                            .observer = observer_for(name)},
                       &c, &cerr);
    fl_kubeconfig_close(&kc);
    if (rc) {
        pthread_mutex_unlock(&m->mu);
        rc = fail(err, rc, fl_asprintf("cluster %s: %s", name, cerr ? cerr : fl_strerror(rc)));
        free(cerr);
        goto out;
    }
    if (e) {
        retire(m, e->client);
        fl_log_kv(FL_LOG_INFO, "members", "credentials or endpoint changed: new client", "object",
                  FL_LOG_OBJ("Cluster", NULL, name), "cluster", name, "endpoint", endpoint, NULL);
    } else {
        e = fl_calloc(1, sizeof *e);
        e->name = fl_strdup(name);
        fl_htab_add(&m->entries, &e->node, fl_hash_str(name));
    }
    e->client = c;
    set_str(&e->cluster_rv, crv);
    set_str(&e->secret_rv, srv);
    free(e->fingerprint);
    e->fingerprint = fp;
    fp = NULL;
    *out = c;
    pthread_mutex_unlock(&m->mu);
out:
    json_decref(cl);
    json_decref(sec);
    free(token);
    free(ca);
    free(fp);
    return rc;
}

void fl_members_forget(fl_members *m, const char *name)
{
    fl_metric_drop_first(duration_family(), name);
    fl_metric_drop_first(errors_family(), name);
    pthread_mutex_lock(&m->mu);
    member_entry *e = find(m, name);
    if (e) {
        fl_htab_remove(&m->entries, &e->node);
        retire(m, e->client);
        entry_free(e);
    }
    pthread_mutex_unlock(&m->mu);
}
