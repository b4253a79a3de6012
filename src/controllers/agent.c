/* agent.c - the pull agent's three loops for its one cluster (see agent.h).
 *
 * Threads: the lease loop and the status loop are one thread each, so a member that
 * answers slowly delays the status report but never the lease (the server judges the
 * cluster by the lease alone). Delivery is the execution engine with a couple of workers
 * of its own. All three talk to the control plane through the agent's client, which
 * may only touch its own Cluster, Lease and execution namespace, so nothing here lists
 * or watches anything else.
 *
 * Shared state: the Cluster as last read (the status loop reads it every interval)
 * under one mutex. The engine asks it whether to deliver — the Cluster exists, is in
 * Pull mode — and whether it is being deleted; when either answer changes, the Works
 * are re-queued at once.
 *
 * Every request to the control plane goes through fl_client_request with the agent's
 * stop token, so SIGTERM ends them at once even when the control plane hangs. */
#include "controllers/agent.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/cluster.h"
#include "controllers/events.h"
#include "interp/bundled.h"
#include "interp/lua.h"
#include "controllers/execution.h"
#include "controllers/dispatching.h"
#include "core/timefmt.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/env.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/random.h"

#define LOG "agent"

static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};
static const fl_gvr LEASES = {"coordination.k8s.io/v1", "leases"};
static const fl_gvr NAMESPACES = {"v1", "namespaces"};

struct fl_agent {
    fl_client *cp, *member, *probe;
    char *name;
    int64_t lease_ms, status_ms;
    fl_exec *engine;
    fl_client_cancel *stop;
    pthread_t lease_th, status_th;
    bool lease_started, status_started;

    pthread_mutex_t mu;
    json_t *cluster;           /* the Cluster as last read; NULL when absent (under mu) */
    fl_informer *watch;        /* our own Cluster: a pause or a mode change is seen at once */
    fl_recorder *recorder;     /* events on our Works */
    fl_interp *interp;         /* native rules and the bundled customizations */
    fl_lua_backend *bundled;

    /* the status loop's own */
    int64_t last_discovery_ms; /* monotonic; 0 = discover on the next healthy pass */
    int last_health;
    json_t *lease;             /* the lease loop's own: the Lease as last written */
};

/* ---- time and environment ---- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* metav1.MicroTime: "2024-05-01T10:00:00.123456Z". */
static void micro_time(char buf[40])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, 40 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

/* ---- requests to the control plane, cancelled by stop ---- */

static int cp_request(fl_agent *a, const char *method, const fl_gvr *r, const char *ns, const char *name,
                      const char *sub, const json_t *body, json_t **out, fl_client_error *ce)
{
    char *path = fl_client_path(r, ns, name, sub);
    char *data = body ? json_dumps(body, JSON_COMPACT) : NULL;
    memset(ce, 0, sizeof *ce);
    int rc = fl_client_request(a->cp, method, path, data ? "application/json" : NULL, data, data ? strlen(data) : 0,
                               a->stop, out, ce);
    free(data);
    free(path);
    return rc;
}

/* ---- the Cluster, as the engine sees it ---- */

static void cluster_mode(const json_t *cl, bool *deliver, bool *deleting)
{
    const char *mode = fl_json_str(json_object_get(cl, "spec"), "syncMode");
    *deliver = cl && mode && !strcmp(mode, "Pull");
    *deleting = cl && fl_json_meta(cl, "deletionTimestamp");
}

/* metadata.resourceVersion as a number (the store's revision); 0 when absent. */
static long long resource_version(const json_t *obj)
{
    const char *rv = fl_json_meta(obj, "resourceVersion");
    return rv ? strtoll(rv, NULL, 10) : 0;
}

/* The engine's view of the Cluster (*out zeroed by the caller). Caller holds mu. */
static void engine_view(const json_t *cl, fl_exec_cluster *out)
{
    cluster_mode(cl, &out->deliver, &out->deleting);
    out->paused = json_is_true(json_object_get(json_object_get(cl, "spec"), "suspendDispatching"));
    out->generation = (long long)json_integer_value(json_object_get(json_object_get(cl, "metadata"), "generation"));
    out->pause_reported = fl_condition_of(cl, FL_PAUSED_CONDITION) != NULL;
}

/* Remember the Cluster (new reference stolen; NULL = gone); re-queue the Works when that
 * changes what the engine should do. */
static void set_cluster(fl_agent *a, json_t *cl)
{
    bool d0, x0, d1, x1;
    fl_exec_cluster v0 = {0}, v1 = {0};
    pthread_mutex_lock(&a->mu);
    if (cl && a->cluster && resource_version(cl) < resource_version(a->cluster)) {
        /* a read that started before the watch's newer event: keep the newer */
        pthread_mutex_unlock(&a->mu);
        json_decref(cl);
        return;
    }
    cluster_mode(a->cluster, &d0, &x0);
    engine_view(a->cluster, &v0);
    json_decref(a->cluster);
    a->cluster = cl;
    cluster_mode(cl, &d1, &x1);
    engine_view(cl, &v1);
    pthread_mutex_unlock(&a->mu);
    if (v0.paused != v1.paused || (v1.paused && v0.generation != v1.generation)) {
        fl_log_kv(FL_LOG_INFO, LOG, v1.paused ? "delivery paused" : "delivery resumed", "object",
                  FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, NULL);
        fl_exec_requeue_cluster(a->engine, a->name);
    }
    if (d0 != d1 || x0 != x1) {
        if (!cl)
            fl_log_kv(FL_LOG_WARN, LOG, "the Cluster is gone from the control plane: its Works are left alone",
                      "object", FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, NULL);
        else if (!d1)
            fl_log_kv(FL_LOG_WARN, LOG, "the Cluster is not in Pull mode: its Works are left to the control plane",
                      "object", FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, NULL);
        else if (x1)
            fl_log_kv(FL_LOG_INFO, LOG, "the Cluster is being deleted: removing what its Works delivered", "object",
                      FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, NULL);
        fl_exec_requeue_cluster(a->engine, a->name);
    }
}

static void engine_cluster(void *ctx, const char *cluster, fl_exec_cluster *out)
{
    fl_agent *a = ctx;
    if (strcmp(cluster, a->name))
        return; /* not ours (the informer only sees our namespace anyway) */
    out->present = true; /* our own cluster: a Push controller, if any, cleans its own */
    pthread_mutex_lock(&a->mu);
    engine_view(a->cluster, out);
    pthread_mutex_unlock(&a->mu);
}

static int engine_member(void *ctx, const char *cluster, fl_client **out, char **err)
{
    fl_agent *a = ctx;
    *out = a->member;
    return 0;
}

/* The watch on our Cluster: a pause (or resume) reaches the engine at once rather than at
 * the next status pass. */
static void watch_added(void *ctx, json_t *obj)
{
    set_cluster(ctx, json_incref(obj));
}

static void watch_updated(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    set_cluster(ctx, json_incref(new_obj));
}

static void watch_deleted(void *ctx, json_t *obj)
{
    (void)obj;
    set_cluster(ctx, NULL);
}

/* ---- the lease ---- */

/* Create or renew the Lease. Returns 0 or the failing request's code. */
static int renew_lease(fl_agent *a)
{
    char now[40];
    micro_time(now);
    fl_client_error ce;
    int rc;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (!a->lease) {
            rc = cp_request(a, "GET", &LEASES, FL_AGENT_LEASE_NAMESPACE, a->name, NULL, NULL, &a->lease, &ce);
            if (rc == FL_ENOTFOUND) {
                json_t *l = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s}}", "apiVersion",
                                      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", a->name,
                                      "namespace", FL_AGENT_LEASE_NAMESPACE, "spec", "holderIdentity", a->name,
                                      "leaseDurationSeconds", FL_AGENT_LEASE_DURATION_S, "acquireTime", now,
                                      "renewTime", now);
                /* owned by the Cluster, as karmada-agent does, so it goes with it */
                pthread_mutex_lock(&a->mu);
                const char *uid = fl_json_meta(a->cluster, "uid");
                if (uid)
                    json_object_set_new(json_object_get(l, "metadata"), "ownerReferences",
                                        json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", CLUSTERS.api_version,
                                                  "kind", "Cluster", "name", a->name, "uid", uid));
                pthread_mutex_unlock(&a->mu);
                rc = cp_request(a, "POST", &LEASES, FL_AGENT_LEASE_NAMESPACE, NULL, NULL, l, &a->lease, &ce);
                if (rc == FL_ENOTFOUND) {
                    /* the namespace is missing (a control plane set up by hand): try to make it */
                    json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                           "metadata", "name", FL_AGENT_LEASE_NAMESPACE);
                    fl_client_error ce2;
                    cp_request(a, "POST", &NAMESPACES, NULL, NULL, NULL, ns, NULL, &ce2);
                    json_decref(ns);
                    rc = cp_request(a, "POST", &LEASES, FL_AGENT_LEASE_NAMESPACE, NULL, NULL, l, &a->lease, &ce);
                }
                json_decref(l);
                if (rc == FL_EEXIST)
                    continue; /* raced with ourselves (a previous run): read it */
                if (rc == 0)
                    fl_log_kv(FL_LOG_INFO, LOG, "created the lease", "object",
                              FL_LOG_OBJ("Lease", FL_AGENT_LEASE_NAMESPACE, a->name), "cluster", a->name, NULL);
                break;
            }
            if (rc)
                break;
        }
        json_t *l = fl_json_deep_copy(a->lease);
        char every[24];
        snprintf(every, sizeof every, "%lld", (long long)a->lease_ms);
        json_object_set_new(fl_json_ensure_obj(fl_json_ensure_obj(l, "metadata"), "annotations"),
                            FL_AGENT_RENEW_INTERVAL_ANNOTATION, json_string(every));
        json_t *spec = fl_json_ensure_obj(l, "spec");
        json_object_set_new(spec, "holderIdentity", json_string(a->name));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(FL_AGENT_LEASE_DURATION_S));
        json_object_set_new(spec, "renewTime", json_string(now));
        json_t *out = NULL;
        rc = cp_request(a, "PUT", &LEASES, FL_AGENT_LEASE_NAMESPACE, a->name, NULL, l, &out, &ce);
        json_decref(l);
        json_decref(a->lease);
        a->lease = rc == 0 ? out : NULL; /* anything else: read it again */
        if (rc != FL_ECONFLICT && rc != FL_ENOTFOUND)
            break;
    }
    if (rc && rc != FL_ECLOSED)
        fl_log_kv(FL_LOG_WARN, LOG, "renewing the lease failed", "object",
                  FL_LOG_OBJ("Lease", FL_AGENT_LEASE_NAMESPACE, a->name), "cluster", a->name, "err",
                  fl_errmsg(ce.message, rc), NULL);
    return rc;
}

static void *lease_main(void *arg)
{
    fl_agent *a = arg;
    int rc = renew_lease(a), failed = rc != 0;
    /* after a failure, try again sooner: the server's threshold is counting. Agents that
     * started together renew at a random point of the period the first time, and a little
     * before it later, so that the fleet's renewals do not arrive as one burst (random.h) */
    int64_t next = fl_random_phase_ms(a->lease_ms);
    while (!fl_client_cancel_sleep(a->stop, (int)(rc ? (a->lease_ms < 1000 ? a->lease_ms : 1000) : next))) {
        next = fl_jittered_ms(a->lease_ms);
        rc = renew_lease(a);
        if (!rc && failed)
            fl_log_kv(FL_LOG_INFO, LOG, "the lease is renewed again", "object",
                      FL_LOG_OBJ("Lease", FL_AGENT_LEASE_NAMESPACE, a->name), "cluster", a->name, NULL);
        failed = rc != 0;
    }
    return NULL;
}

/* ---- the Cluster's status ---- */

/* Probe the member and write what changed into the Cluster's status. */
static void report_status(fl_agent *a)
{
    char why[512] = "";
    int health = fl_cluster_probe_health(a->probe, a->stop, why, sizeof why);
    if (fl_client_cancel_fired(a->stop))
        return;
    if (health != a->last_health) {
        if (health == FL_CLUSTER_HEALTHY)
            fl_log_kv(FL_LOG_INFO, LOG, "the member cluster answers its health check", "object",
                      FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, NULL);
        else
            fl_log_kv(FL_LOG_WARN, LOG, "the member cluster fails its health check", "object",
                      FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, "err", why, NULL);
        a->last_health = health;
    }
    fl_cluster_collected col = {0};
    bool have = false;
    if (health == FL_CLUSTER_HEALTHY) {
        /* discovery costs one request per group-version: every ten passes, and at once
         * after the member comes back */
        int64_t now = fl_time_mono_ms();
        bool apis = !a->last_discovery_ms || now - a->last_discovery_ms >= a->status_ms * 10;
        fl_cluster_collect(a->probe, a->stop, apis, &col);
        if (apis && strcmp(col.apis_reason, "Empty"))
            a->last_discovery_ms = now;
        have = true;
    } else {
        a->last_discovery_ms = 0;
    }

    fl_client_error ce;
    int rc = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        json_t *base = NULL;
        /* first from the watch on our Cluster, when it runs: it is as fresh as a read, and a
         * stale copy only costs a conflict and a read */
        if (attempt == 0 && a->watch && fl_informer_has_synced(a->watch)) {
            pthread_mutex_lock(&a->mu);
            base = json_incref(a->cluster);
            pthread_mutex_unlock(&a->mu);
        }
        rc = base ? 0 : cp_request(a, "GET", &CLUSTERS, NULL, a->name, NULL, NULL, &base, &ce);
        if (rc == FL_ENOTFOUND) {
            set_cluster(a, NULL);
            rc = 0;
            break;
        }
        if (rc)
            break;
        set_cluster(a, json_incref(base));
        bool deliver, deleting;
        cluster_mode(base, &deliver, &deleting);
        if (!deliver) { /* a Push cluster's status is the control plane's */
            json_decref(base);
            break;
        }
        json_t *d = fl_json_deep_copy(base);
        json_t *status = fl_json_ensure_obj(d, "status");
        int64_t now = wall_ms();
        fl_cluster_set_ready(status, health, why, now);
        if (have)
            fl_cluster_set_collected(status, &col, now);
        json_t *out = NULL;
        if (!fl_json_same(json_object_get(base, "status"), status)) {
            rc = cp_request(a, "PUT", &CLUSTERS, NULL, a->name, "status", d, &out, &ce);
            if (rc == 0)
                set_cluster(a, out);
        }
        json_decref(d);
        json_decref(base);
        if (rc != FL_ECONFLICT)
            break;
    }
    if (rc && rc != FL_ECLOSED)
        fl_log_kv(FL_LOG_WARN, LOG, "reporting the Cluster status failed", "object",
                  FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, "err", fl_errmsg(ce.message, rc), NULL);
    fl_cluster_collected_close(&col);
}

/* Read the Cluster once; 0 when that settled what it is (present or absent). */
static int read_cluster(fl_agent *a)
{
    fl_client_error ce;
    json_t *cl = NULL;
    int rc = cp_request(a, "GET", &CLUSTERS, NULL, a->name, NULL, NULL, &cl, &ce);
    if (rc == 0 || rc == FL_ENOTFOUND) {
        set_cluster(a, cl);
        return 0;
    }
    if (rc != FL_ECLOSED)
        fl_log_kv(FL_LOG_WARN, LOG, "reading the Cluster failed", "object", FL_LOG_OBJ("Cluster", NULL, a->name),
                  "cluster", a->name, "err", fl_errmsg(ce.message, rc), NULL);
    return rc;
}

static void *status_main(void *arg)
{
    fl_agent *a = arg;
    /* Deliver nothing before the Cluster is known: until then the engine could not
     * tell a Work of ours from one it must let go. */
    for (int delay = 200; read_cluster(a) != 0; delay = delay < 5000 ? delay * 2 : delay)
        if (fl_client_cancel_sleep(a->stop, delay))
            return NULL;
    int rc = fl_exec_start(a->engine);
    if (rc)
        fl_log_kv(FL_LOG_ERROR, LOG, "Work delivery did not start", "object", FL_LOG_OBJ("Cluster", NULL, a->name),
                  "cluster", a->name, "err", fl_strerror(rc), NULL);
    rc = fl_informer_start(a->watch);
    if (rc)
        fl_log_kv(FL_LOG_WARN, LOG, "watching the Cluster failed (changes are seen at each status pass)", "object",
                  FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name, "err", fl_strerror(rc), NULL);
    /* the same spread as the lease's */
    report_status(a);
    for (int64_t next = fl_random_phase_ms(a->status_ms); !fl_client_cancel_sleep(a->stop, (int)next);
         next = fl_jittered_ms(a->status_ms))
        report_status(a);
    return NULL;
}

/* ---- lifecycle ---- */

void fl_agent_stop(fl_agent *a)
{
    if (!a)
        return;
    fl_client_cancel_fire(a->stop);
    if (a->lease_started)
        pthread_join(a->lease_th, NULL);
    if (a->status_started)
        pthread_join(a->status_th, NULL);
    if (a->watch)
        fl_informer_stop(a->watch); /* its handlers touch the engine */
    fl_exec_free(a->engine);
    fl_informer_free(a->watch);
    fl_recorder_free(a->recorder);
    fl_interp_free(a->interp);
    fl_lua_backend_free(a->bundled);
    json_decref(a->cluster);
    json_decref(a->lease);
    fl_client_cancel_free(a->stop);
    pthread_mutex_destroy(&a->mu);
    free(a->name);
    free(a);
}

int fl_agent_start(const fl_agent_config *cfg, fl_agent **out)
{
    *out = NULL;
    if (!cfg->cp || !cfg->member || !cfg->cluster || !*cfg->cluster)
        return FL_EINVAL;
    fl_agent *a = fl_calloc(1, sizeof *a);
    a->cp = cfg->cp;
    a->member = cfg->member;
    a->probe = cfg->probe ? cfg->probe : cfg->member;
    a->name = fl_strdup(cfg->cluster);
    a->lease_ms = cfg->lease_interval_ms > 0 ? cfg->lease_interval_ms
                                             : fl_env_ms("FLOTILLA_AGENT_LEASE_INTERVAL_MS", 10000, 1);
    a->status_ms = cfg->status_interval_ms > 0 ? cfg->status_interval_ms
                                               : fl_env_ms("FLOTILLA_AGENT_STATUS_INTERVAL_MS", 10000, 1);
    a->last_health = -1;
    a->stop = fl_client_cancel_new();
    pthread_mutex_init(&a->mu, NULL);

    char *ns = fl_asprintf("%s%s", FL_EXECUTION_SPACE_PREFIX, a->name);
    a->recorder = fl_recorder_new(cfg->cp, "flotilla-agent");
    /* Retain, status and health for the custom kinds Flotilla knows (an Argo Workflow's
     * member-owned fields, a CloneSet's status): the bundled customizations, as the server
     * has them. Users' own customizations are the control plane's objects, which an agent's
     * credentials do not reach: in Pull mode they do not apply (docs/interpreter.md). */
    a->interp = fl_interp_new();
    a->bundled = fl_bundled_attach(a->interp, LOG);
    fl_exec_config ec = {
        .recorder = a->recorder,
        .interp = a->interp,
        .cp = cfg->cp,
        .ns = ns,
        .workers = cfg->workers > 0 ? cfg->workers : 2,
        .ops = {.cluster = engine_cluster, .member = engine_member, .ctx = a},
    };
    int rc = fl_exec_new(&ec, &a->engine);
    free(ns);
    char *fs = fl_asprintf("metadata.name=%s", a->name);
    fl_informer_config wc = {
        .client = cfg->cp,
        .resource = CLUSTERS,
        .field_selector = fs,
        .handlers = {.on_add = watch_added, .on_update = watch_updated, .on_delete = watch_deleted, .ctx = a},
        .transform = fl_informer_drop_managed_fields,
    };
    if (!rc)
        rc = fl_informer_new(&wc, &a->watch);
    free(fs);
    /* the lease first: it is what the server judges the cluster by; the status thread
     * reads the Cluster, then starts delivery */
    if (!rc)
        rc = pthread_create(&a->lease_th, NULL, lease_main, a) ? FL_EIO : 0;
    a->lease_started = rc == 0;
    if (!rc)
        rc = pthread_create(&a->status_th, NULL, status_main, a) ? FL_EIO : 0;
    a->status_started = a->lease_started && rc == 0;
    if (rc) {
        fl_agent_stop(a);
        return rc;
    }
    fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, a->name), "cluster", a->name),
               "lease every %lld ms, status every %lld ms, delivering Works of %s%s", (long long)a->lease_ms,
               (long long)a->status_ms, FL_EXECUTION_SPACE_PREFIX, a->name);
    *out = a;
    return 0;
}
