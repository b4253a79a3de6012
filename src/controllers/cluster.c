/* cluster.c - the cluster status controller (see cluster.h; design in
 * docs/internals/cluster-status.md).
 *
 * Shape: an informer on Clusters feeds a work queue keyed by cluster name; a small pool
 * of workers takes keys, probes (Push) or reads the agent's Lease (Pull), decides the
 * status, writes what changed, and puts the key back with add_after(interval). So every
 * cluster runs on its own schedule, a slow member holds one worker for at most the probe
 * timeout, and the queue's de-duplication keeps one pending probe per cluster however
 * many events arrive.
 *
 * Timeouts: a member that accepts connections and never answers must not hold a worker
 * for the client's 30 s request timeout. Each worker has a cancellation token and a
 * deadline; one watchdog thread fires the token of a worker past its deadline, which ends
 * its request at once (FL_ECLOSED), and the probe counts as unreachable.
 *
 * Deciding is a pure function of (the Cluster as stored, what was observed, now): decide()
 * returns the Cluster as it should be. Writes happen only when its status, annotations or
 * taints differ from the stored ones, through update_status / update with the stored
 * resourceVersion; a conflict re-reads the Cluster and decides again. Timestamps
 * (lastTransitionTime, timeAdded) are set only when a condition flips or a taint is added,
 * so a healthy fleet writes nothing.
 *
 * Threshold clocks live in the store, not in memory: the annotation
 * flotilla.io/unhealthy-since (healthy-since while recovering) records when the observed
 * health first disagreed with the Ready condition. */
#include "controllers/cluster.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/agent.h"
#include "controllers/members.h"
#include "controllers/metricsstatus.h"
#include "controllers/names.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/quantity.h"
#include "core/random.h"
#include "core/timefmt.h"
#include "core/env.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"

static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};
static const fl_gvr LEASES = {"coordination.k8s.io/v1", "leases"};
static const fl_gvr NODES = {"v1", "nodes"};
static const fl_gvr PODS = {"v1", "pods"};

#define LEASE_NAMESPACE "karmada-cluster"
#define NWORKERS 4     /* at start */
#define MAX_WORKERS 32 /* grown on demand (grow_if_stuck): a member that never answers holds a
                          worker for the probe timeout, and a partition holds many at once */
#define STUCK_MS 250   /* a worker this long in one request counts as held by a slow member */
#define LOG "cluster-status"

/* Karmada's condition vocabulary (pkg/controllers/status). */
#define REASON_READY "ClusterReady"
#define MSG_READY "cluster is healthy and ready to accept workloads"
#define REASON_NOT_READY "ClusterNotReady"
#define MSG_NOT_READY "cluster is reachable but health endpoint responded without ok"
#define REASON_NOT_REACHABLE "ClusterNotReachable"
#define MSG_NOT_REACHABLE "cluster is not reachable"
#define REASON_NO_CLIENT "StatusCollectionFailed"
#define REASON_LEASE_STALE "ClusterStatusUnknown"
#define MSG_LEASE_STALE "cluster agent stopped renewing its lease"
#define REASON_NEVER_UPDATED "ClusterStatusNeverUpdated"
#define MSG_NEVER_UPDATED "cluster agent never renewed its lease"

/* fl_cluster_probe_health()'s answers, plus one of our own */
enum health { H_OK = FL_CLUSTER_HEALTHY, H_UNHEALTHY = FL_CLUSTER_UNHEALTHY, H_UNREACHABLE = FL_CLUSTER_UNREACHABLE,
              H_NO_CLIENT };

typedef struct cstatus cstatus;

typedef struct worker {
    cstatus *st;
    pthread_t th;
    fl_client_cancel *cancel;
    _Atomic int64_t deadline_ms; /* monotonic; 0 = no request under watch */
    _Atomic int64_t armed_ms;    /* monotonic: when that request began; 0 = none */
} worker;

struct cstatus {
    fl_client *cp;
    volatile int *stopping;
    atomic_bool stop;
    int64_t interval_ms, failure_ms, success_ms, probe_timeout_ms, discovery_ms;
    fl_informer *clusters, *leases;
    fl_workqueue *q;
    fl_members *members;
    pthread_mutex_t mu;
    json_t *mem;                 /* name -> {"disc": ms of last discovery, "h": last health} */
    worker w[MAX_WORKERS];
    _Atomic int nworkers;        /* grows under mu while not stopping; w[i] ready before */
    pthread_t watchdog;
    bool watchdog_started;
    fl_client_cancel *watchdog_stop;
    /* the metrics way in of live status (metricsstatus.h): polled on these workers under
     * FL_MSTATUS_KEY, so that it costs the server no thread of its own */
    fl_mstatus *mstatus;
};

static const char *ready_status(const json_t *cluster)
{
    json_t *c = fl_condition_of(cluster, "Ready");
    return c ? fl_json_str(c, "status") : NULL;
}

void fl_cluster_set_condition(json_t *status, const char *type, const char *cstatus_, const char *reason,
                              const char *message, int64_t now)
{
    fl_condition_set(status, type, cstatus_, reason, message, -1, now);
}

/* ---- per-cluster memory (not state that matters: losing it costs one discovery) ---- */

static int64_t mem_get(cstatus *st, const char *name, const char *field, int64_t def)
{
    pthread_mutex_lock(&st->mu);
    json_t *v = json_object_get(json_object_get(st->mem, name), field);
    int64_t r = json_is_integer(v) ? json_integer_value(v) : def;
    pthread_mutex_unlock(&st->mu);
    return r;
}

static void mem_set(cstatus *st, const char *name, const char *field, int64_t v)
{
    pthread_mutex_lock(&st->mu);
    json_t *o = json_object_get(st->mem, name);
    if (!o) {
        o = json_object();
        json_object_set_new(st->mem, name, o);
    }
    json_object_set_new(o, field, json_integer(v));
    pthread_mutex_unlock(&st->mu);
}

/* ---- requests under the worker's deadline ---- */

static void arm(worker *w, int64_t ms)
{
    fl_client_cancel_reset(w->cancel);
    int64_t now = fl_time_mono_ms();
    atomic_store(&w->armed_ms, now);
    atomic_store(&w->deadline_ms, now + ms);
    /* stop may have fired the token just before the reset: look again */
    if (atomic_load(&w->st->stop))
        fl_client_cancel_fire(w->cancel);
}

static void disarm(worker *w)
{
    atomic_store(&w->deadline_ms, 0);
    atomic_store(&w->armed_ms, 0);
}

static int start_worker(cstatus *st, int i);

/* Keys are ready and every worker has been in one request for STUCK_MS (members that do not
 * answer, each holding its worker for the probe timeout): one more worker, so the other
 * clusters keep their interval. A healthy fleet never grows the pool. On the watchdog. */
static void grow_if_stuck(cstatus *st, int64_t now)
{
    int n = atomic_load(&st->nworkers);
    if (n >= MAX_WORKERS || fl_workqueue_len(st->q) == 0)
        return;
    for (int i = 0; i < n; i++) {
        int64_t at = atomic_load(&st->w[i].armed_ms);
        if (!at || now - at < STUCK_MS)
            return;
    }
    pthread_mutex_lock(&st->mu);
    if (!atomic_load(&st->stop) && atomic_load(&st->nworkers) == n && start_worker(st, n) == 0)
        fl_log(FL_LOG_INFO, LOG, "probes are held by members that do not answer: %d workers now", n + 1);
    pthread_mutex_unlock(&st->mu);
}

static void *watchdog_main(void *arg)
{
    cstatus *st = arg;
    while (!fl_client_cancel_sleep(st->watchdog_stop, 50)) {
        int64_t now = fl_time_mono_ms();
        for (int i = 0; i < st->nworkers; i++) {
            int64_t d = atomic_load(&st->w[i].deadline_ms);
            if (d && now > d) {
                atomic_store(&st->w[i].deadline_ms, 0);
                fl_client_cancel_fire(st->w[i].cancel);
            }
        }
        grow_if_stuck(st, now);
    }
    return NULL;
}

static int get_json(fl_client_cancel *cancel, fl_client *c, const char *path, json_t **out, fl_client_error *ce)
{
    return fl_client_request(c, "GET", path, NULL, NULL, 0, cancel, out, ce);
}

int fl_cluster_probe_health(fl_client *c, fl_client_cancel *cancel, char *why, size_t cap)
{
    fl_client_error ce;
    memset(&ce, 0, sizeof ce);
    int rc = get_json(cancel, c, "/readyz", NULL, &ce);
    if (rc && ce.http == 404) {
        memset(&ce, 0, sizeof ce);
        rc = get_json(cancel, c, "/healthz", NULL, &ce);
    }
    if (rc == 0)
        return H_OK;
    snprintf(why, cap, "%s", rc == FL_ECLOSED ? "no answer in time" : fl_errmsg(ce.message, rc));
    return ce.http ? H_UNHEALTHY : H_UNREACHABLE;
}

/* ---- metrics ----
 * flotilla_cluster_ready{cluster} follows the stored Ready condition (whoever wrote it:
 * this controller for Push, the agent's Lease for Pull), set from the informer's events;
 * the health-check latency is timed around the probe. The cluster label is bounded by the
 * fleet size (one series per Cluster; a deleted Cluster's series are dropped). */

static fl_metric *ready_family(void)
{
    return fl_metric_family(FL_METRIC_GAUGE, "flotilla_cluster_ready",
                            "1 when the Cluster's Ready condition is True, else 0; one series per member cluster.",
                            "cluster", NULL, NULL, 0);
}

static fl_metric *reporting_family(void)
{
    return fl_metric_family(FL_METRIC_GAUGE, "flotilla_cluster_reporting",
                            "1 when the Cluster is Ready and reporting, 0 when what it last reported is stale (not "
                            "Ready, or two probes or lease renewals missed); one series per member cluster.",
                            "cluster", NULL, NULL, 0);
}

enum fl_cluster_report fl_cluster_report(const json_t *cluster)
{
    const char *st = ready_status(cluster);
    if (!st || strcmp(st, "True"))
        return FL_CLUSTER_NOT_READY;
    return fl_json_meta_map(cluster, "annotations", FL_ANNOTATION_NOT_REPORTING_SINCE) ? FL_CLUSTER_NOT_REPORTING
                                                                                     : FL_CLUSTER_REPORTING;
}

static fl_metric *health_family(void)
{
    return fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_cluster_health_check_duration_seconds",
                            "Seconds a member cluster took to answer its health check (/readyz), timeouts included.",
                            "cluster", NULL, NULL, 0);
}

static void note_ready(const json_t *cluster)
{
    const char *name = fl_json_str(json_object_get(cluster, "metadata"), "name");
    const char *r = ready_status(cluster);
    if (name) {
        fl_metric_set(fl_metric_with(ready_family(), name, NULL), r && !strcmp(r, "True") ? 1 : 0);
        fl_metric_set(fl_metric_with(reporting_family(), name, NULL),
                      fl_cluster_report(cluster) == FL_CLUSTER_REPORTING ? 1 : 0);
    }
}

/* The health check under the worker's deadline. */
static int health_check(worker *w, fl_client *c, const char *name, char *why, size_t cap)
{
    arm(w, w->st->probe_timeout_ms);
    double t0 = fl_ctrl_now_s();
    int h = fl_cluster_probe_health(c, w->cancel, why, cap);
    fl_metric_observe(fl_metric_with(health_family(), name, NULL), fl_ctrl_now_s() - t0);
    disarm(w);
    if (h == H_UNREACHABLE && fl_client_cancel_fired(w->cancel) && !atomic_load(&w->st->stop))
        snprintf(why, cap, "no answer within %lld ms", (long long)w->st->probe_timeout_ms);
    return h;
}

/* ---- collection (a healthy Push cluster) ---- */

typedef fl_cluster_collected collected;

void fl_cluster_collected_close(fl_cluster_collected *c)
{
    free(c->version);
    json_decref(c->apis);
    json_decref(c->node_summary);
    json_decref(c->resource_summary);
    memset(c, 0, sizeof *c);
}

static int cmp_resource(const void *a, const void *b)
{
    return strcmp(fl_json_str(*(json_t *const *)a, "name"), fl_json_str(*(json_t *const *)b, "name"));
}

static int cmp_enablement(const void *a, const void *b)
{
    return strcmp(fl_json_str(*(json_t *const *)a, "groupVersion"), fl_json_str(*(json_t *const *)b, "groupVersion"));
}

/* One group-version's resources (no subresources), sorted by name; NULL on failure. */
static json_t *gv_resources(fl_client_cancel *cancel, fl_client *c, const char *gv)
{
    char *path = strchr(gv, '/') ? fl_asprintf("/apis/%s", gv) : fl_asprintf("/api/%s", gv);
    json_t *list = NULL;
    fl_client_error ce;
    int rc = get_json(cancel, c, path, &list, &ce);
    free(path);
    if (rc || !list)
        return json_decref(list), NULL;
    json_t *res = json_object_get(list, "resources");
    fl_client_discovery_learn(c, gv, res);
    size_t n = json_array_size(res), k = 0;
    json_t **v = fl_calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(res, i);
        const char *name = fl_json_str(r, "name"), *kind = fl_json_str(r, "kind");
        if (!name || !kind || strchr(name, '/'))
            continue;
        v[k++] = json_pack("{s:s, s:s}", "name", name, "kind", kind);
    }
    qsort(v, k, sizeof *v, cmp_resource);
    json_t *out = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(out, v[i]);
    free(v);
    json_decref(list);
    return out;
}

#define AGGREGATED "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

/* The group-versions of an aggregated discovery document (apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList) as apiEnablements entries appended to items, each resource taught to
 * the client's discovery too. A version the server marks Stale (it could not ask its
 * aggregated API) is left out and makes the result partial. False when doc is not such a
 * document. */
static bool aggregated_gvs(fl_client *c, const json_t *doc, json_t *items, bool *partial)
{
    if (!doc || strcmp(fl_json_str(doc, "kind") ? fl_json_str(doc, "kind") : "", "APIGroupDiscoveryList"))
        return false;
    size_t i, j, k;
    json_t *g, *v, *r;
    json_array_foreach(json_object_get(doc, "items"), i, g) {
        const char *group = fl_json_meta(g, "name");
        json_array_foreach(json_object_get(g, "versions"), j, v) {
            const char *version = fl_json_str(v, "version");
            if (!version)
                continue;
            const char *fresh = fl_json_str(v, "freshness");
            if (fresh && !strcmp(fresh, "Stale")) {
                *partial = true;
                continue;
            }
            char *gv = group && *group ? fl_asprintf("%s/%s", group, version) : fl_strdup(version);
            /* the same shapes the per-group-version documents give: {name, kind} sorted by
             * name here, {name, kind, namespaced} for the client */
            json_t *learned = json_array();
            size_t n = json_array_size(json_object_get(v, "resources")), m = 0;
            json_t **res = fl_calloc(n ? n : 1, sizeof *res);
            json_array_foreach(json_object_get(v, "resources"), k, r) {
                const char *name = fl_json_str(r, "resource"),
                           *kind = fl_json_str(json_object_get(r, "responseKind"), "kind");
                if (!name || !kind || strchr(name, '/'))
                    continue;
                const char *scope = fl_json_str(r, "scope");
                json_array_append_new(learned, json_pack("{s:s, s:s, s:b}", "name", name, "kind", kind, "namespaced",
                                                         scope && !strcmp(scope, "Namespaced")));
                res[m++] = json_pack("{s:s, s:s}", "name", name, "kind", kind);
            }
            fl_client_discovery_learn(c, gv, learned);
            json_decref(learned);
            qsort(res, m, sizeof *res, cmp_resource);
            json_t *entry = json_pack("{s:s}", "groupVersion", gv);
            if (m) {
                json_t *arr = json_array();
                for (size_t x = 0; x < m; x++)
                    json_array_append_new(arr, res[x]);
                json_object_set_new(entry, "resources", arr);
            }
            free(res);
            json_array_append_new(items, entry);
            free(gv);
        }
    }
    return true;
}

/* apiEnablements from aggregated discovery: /api and /apis answer everything in two
 * requests, where the per-group-version documents take one each (a dozen for a small
 * cluster, every 10 s). NULL when the member does not answer in that form (an API server
 * before Kubernetes 1.30, whose aggregated form was v2beta1): then discover() asks the
 * older way. */
static json_t *discover_aggregated(fl_client_cancel *cancel, fl_client *c, bool *partial)
{
    json_t *items = json_array();
    static const char *const paths[] = {"/api", "/apis"};
    for (int p = 0; p < 2; p++) {
        json_t *doc = NULL;
        fl_client_error ce;
        int rc = fl_client_get_as(c, paths[p], AGGREGATED, cancel, &doc, &ce);
        bool ok = rc == 0 && aggregated_gvs(c, doc, items, partial);
        json_decref(doc);
        if (!ok) {
            json_decref(items);
            return NULL;
        }
    }
    return items;
}

/* The group-versions from /api and /apis, one request each for their resources, appended
 * to items; a failed request makes the result partial. */
static void per_gv_gvs(fl_client_cancel *cancel, fl_client *c, json_t *items, bool *partial)
{
    json_t *gvs = json_array(), *doc = NULL;
    fl_client_error ce;
    if (get_json(cancel, c, "/api", &doc, &ce) == 0 && doc) {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(doc, "versions"), i, v) if (json_is_string(v))
            json_array_append(gvs, v);
    } else {
        *partial = true;
    }
    json_decref(doc);
    doc = NULL;
    if (get_json(cancel, c, "/apis", &doc, &ce) == 0 && doc) {
        size_t i, j;
        json_t *g, *v;
        json_array_foreach(json_object_get(doc, "groups"), i, g) json_array_foreach(json_object_get(g, "versions"), j, v)
        {
            json_t *gv = json_object_get(v, "groupVersion");
            if (json_is_string(gv))
                json_array_append(gvs, gv);
        }
    } else {
        *partial = true;
    }
    json_decref(doc);
    size_t i;
    json_t *v;
    json_array_foreach(gvs, i, v) {
        const char *gv = json_string_value(v);
        json_t *res = gv_resources(cancel, c, gv);
        if (!res) {
            *partial = true;
            continue;
        }
        json_t *entry = json_pack("{s:s}", "groupVersion", gv);
        if (json_array_size(res))
            json_object_set(entry, "resources", res);
        json_decref(res);
        json_array_append_new(items, entry);
    }
    json_decref(gvs);
}

/* apiEnablements from /api and /apis, sorted by group-version; *reason tells
 * Complete/Partial/Empty. */
static json_t *discover(fl_client_cancel *cancel, fl_client *c, const char **reason)
{
    bool partial = false;
    json_t *found = discover_aggregated(cancel, c, &partial);
    if (!found) {
        partial = false;
        found = json_array();
        per_gv_gvs(cancel, c, found, &partial);
    }
    size_t k = json_array_size(found);
    json_t **items = fl_calloc(k ? k : 1, sizeof *items);
    for (size_t i = 0; i < k; i++)
        items[i] = json_incref(json_array_get(found, i));
    json_decref(found);
    qsort(items, k, sizeof *items, cmp_enablement);
    json_t *out = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(out, items[i]);
    free(items);
    *reason = k == 0 ? "Empty" : partial ? "Partial" : "Complete";
    return out;
}

/* A ResourceList being summed: resource name -> quantity, in first-seen order. */
typedef struct reslist {
    size_t n, cap;
    char **key;
    fl_quantity *q;
} reslist;

static fl_quantity *res_slot(reslist *r, const char *key)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key))
            return &r->q[i];
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->key = fl_realloc(r->key, r->cap * sizeof *r->key);
        r->q = fl_realloc(r->q, r->cap * sizeof *r->q);
    }
    r->key[r->n] = fl_strdup(key);
    memset(&r->q[r->n], 0, sizeof r->q[r->n]);
    return &r->q[r->n++];
}

/* Add every parsable quantity of a ResourceList object (strings or numbers). */
static void res_add_list(reslist *r, const json_t *list)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)list, k, v) {
        fl_quantity q;
        char num[64];
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (json_is_integer(v)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
            s = num;
        }
        if (s && fl_quantity_parse(s, &q) == 0)
            fl_quantity_add(res_slot(r, k), &q);
    }
}

/* r[key] = max(r[key], each of list) - for init containers. */
static void res_max_list(reslist *r, const json_t *list)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)list, k, v) {
        fl_quantity q;
        if (json_is_string(v) && fl_quantity_parse(json_string_value(v), &q) == 0) {
            fl_quantity *slot = res_slot(r, k);
            if (slot->format == FL_QUANTITY_NONE || fl_quantity_cmp(&q, slot) > 0)
                *slot = q;
        }
    }
}

static void res_add_reslist(reslist *dst, const reslist *src)
{
    for (size_t i = 0; i < src->n; i++)
        fl_quantity_add(res_slot(dst, src->key[i]), &src->q[i]);
}

/* The ResourceList as JSON, zero entries left out; NULL when nothing is left. */
static json_t *res_json(const reslist *r)
{
    json_t *o = json_object();
    for (size_t i = 0; i < r->n; i++) {
        if (fl_quantity_is_zero(&r->q[i]))
            continue;
        char buf[64];
        fl_quantity_format(&r->q[i], buf, sizeof buf);
        json_object_set_new(o, r->key[i], json_string(buf));
    }
    if (json_object_size(o) == 0)
        return json_decref(o), NULL;
    return o;
}

static void res_close(reslist *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->key[i]);
    free(r->key);
    free(r->q);
    memset(r, 0, sizeof *r);
}

/* What a Pod asks for: the sum over containers, at least each init container's request,
 * plus the pod overhead (the scheduler's reckoning). */
static void pod_request(const json_t *pod, reslist *out)
{
    json_t *spec = json_object_get(pod, "spec");
    size_t i;
    json_t *c;
    reslist sum = {0};
    json_array_foreach(json_object_get(spec, "containers"), i, c)
        res_add_list(&sum, json_object_get(json_object_get(c, "resources"), "requests"));
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
        res_max_list(&sum, json_object_get(json_object_get(c, "resources"), "requests"));
    res_add_list(&sum, json_object_get(spec, "overhead"));
    res_add_reslist(out, &sum);
    res_close(&sum);
}

static bool node_ready(const json_t *node)
{
    json_t *c = fl_condition_of(node, "Ready");
    const char *s = c ? fl_json_str(c, "status") : NULL;
    return s && !strcmp(s, "True");
}

/* nodeSummary and resourceSummary from the member's Nodes and Pods. */
static void summarize(fl_client_cancel *cancel, fl_client *c, collected *col)
{
    fl_list_result nodes = {0}, pods = {0};
    fl_client_error ce;
    if (fl_client_list_all(c, &NODES, NULL, NULL, cancel, &nodes, &ce) != 0)
        return;
    bool have_pods = fl_client_list_all(c, &PODS, NULL, NULL, cancel, &pods, &ce) == 0;
    reslist allocatable = {0}, allocated = {0}, allocating = {0};
    size_t i, total = json_array_size(nodes.items), ready = 0;
    json_t *n;
    json_array_foreach(nodes.items, i, n) {
        if (node_ready(n))
            ready++;
        res_add_list(&allocatable, json_object_get(json_object_get(n, "status"), "allocatable"));
    }
    col->node_summary = json_pack("{s:I, s:I}", "totalNum", (json_int_t)total, "readyNum", (json_int_t)ready);
    json_t *rs = json_object();
    json_t *v = res_json(&allocatable);
    if (v)
        json_object_set_new(rs, "allocatable", v);
    if (have_pods) {
        int64_t nallocated = 0, nallocating = 0;
        json_t *p;
        json_array_foreach(pods.items, i, p) {
            const char *node = fl_json_str(json_object_get(p, "spec"), "nodeName");
            const char *phase = fl_json_str(json_object_get(p, "status"), "phase");
            if (!node || !*node) {
                pod_request(p, &allocating);
                nallocating++;
            } else if (!phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"))) {
                /* finished pods no longer hold what they asked for */
                pod_request(p, &allocated);
                nallocated++;
            }
        }
        fl_quantity q = {.nano = (fl_quantity_nano)nallocating * 1000000000, .format = FL_QUANTITY_DECIMAL_SI};
        fl_quantity_add(res_slot(&allocating, "pods"), &q);
        q.nano = (fl_quantity_nano)nallocated * 1000000000;
        fl_quantity_add(res_slot(&allocated, "pods"), &q);
        if ((v = res_json(&allocating)))
            json_object_set_new(rs, "allocating", v);
        if ((v = res_json(&allocated)))
            json_object_set_new(rs, "allocated", v);
    }
    col->resource_summary = rs;
    res_close(&allocatable);
    res_close(&allocated);
    res_close(&allocating);
    fl_list_result_close(&nodes);
    fl_list_result_close(&pods);
}

void fl_cluster_collect(fl_client *c, fl_client_cancel *cancel, bool apis, fl_cluster_collected *col)
{
    memset(col, 0, sizeof *col);
    json_t *ver = NULL;
    fl_client_error ce;
    if (get_json(cancel, c, "/version", &ver, &ce) == 0 && fl_json_str(ver, "gitVersion"))
        col->version = fl_strdup(fl_json_str(ver, "gitVersion"));
    json_decref(ver);
    if (apis)
        col->apis = discover(cancel, c, &col->apis_reason);
    summarize(cancel, c, col);
}

void fl_cluster_set_collected(json_t *status, const fl_cluster_collected *c, int64_t now)
{
    if (c->version)
        json_object_set_new(status, "kubernetesVersion", json_string(c->version));
    if (c->apis) {
        if (json_array_size(c->apis))
            json_object_set(status, "apiEnablements", c->apis);
        else
            json_object_del(status, "apiEnablements");
        bool complete = !strcmp(c->apis_reason, "Complete");
        char msg[96];
        if (!strcmp(c->apis_reason, "Empty"))
            snprintf(msg, sizeof msg, "collected empty APIEnablements from the cluster");
        else if (!complete)
            snprintf(msg, sizeof msg, "might collect partial APIEnablements(%zu) from the cluster",
                     json_array_size(c->apis));
        else
            snprintf(msg, sizeof msg, "collected complete APIEnablements from the cluster");
        fl_cluster_set_condition(status, "CompleteAPIEnablements", complete ? "True" : "False", c->apis_reason, msg,
                                 now);
    }
    if (c->node_summary)
        json_object_set(status, "nodeSummary", c->node_summary);
    if (c->resource_summary)
        json_object_set(status, "resourceSummary", c->resource_summary);
}

void fl_cluster_set_ready(json_t *status, int health, const char *why, int64_t now)
{
    switch (health) {
    case H_OK: fl_cluster_set_condition(status, "Ready", "True", REASON_READY, MSG_READY, now); break;
    case H_UNHEALTHY: fl_cluster_set_condition(status, "Ready", "False", REASON_NOT_READY, MSG_NOT_READY, now); break;
    case H_NO_CLIENT:
        fl_cluster_set_condition(status, "Ready", "False", REASON_NO_CLIENT, why ? why : MSG_NOT_REACHABLE, now);
        break;
    default: fl_cluster_set_condition(status, "Ready", "False", REASON_NOT_REACHABLE, MSG_NOT_REACHABLE, now); break;
    }
}

/* The collection under the worker's deadline; apiEnablements only every discovery_ms. */
static void collect(worker *w, fl_client *c, const char *name, collected *col)
{
    cstatus *st = w->st;
    /* the whole collection is bounded too: a few round trips per group-version */
    arm(w, st->probe_timeout_ms * 6);
    int64_t now = fl_time_mono_ms(), last = mem_get(st, name, "disc", 0);
    bool apis = !last || now - last >= st->discovery_ms;
    fl_cluster_collect(c, w->cancel, apis, col);
    if (apis && strcmp(col->apis_reason, "Empty"))
        mem_set(st, name, "disc", now);
    disarm(w);
}

/* ---- deciding ---- */

typedef struct observation {
    bool push;
    int health;              /* push: enum health */
    const char *why;         /* push: what failed, for the log */
    const collected *col;    /* push: NULL unless collected */
    bool lease_stale;        /* pull */
    bool lease_missing;      /* pull */
    bool lease_quiet;        /* pull: two renewals missed (not reporting), maybe not stale yet */
} observation;

/* Keep annotation key set to a time (when absent) or remove it. Returns the time it holds. */
static int64_t since_annotation(json_t *meta, const char *key, bool keep, int64_t now)
{
    json_t *ann = json_object_get(meta, "annotations");
    if (!keep) {
        if (json_is_object(ann)) {
            json_object_del(ann, key);
            if (json_object_size(ann) == 0)
                json_object_del(meta, "annotations");
        }
        return now;
    }
    int64_t t = fl_time_parse(fl_json_str(ann, key));
    if (t >= 0 && t <= now)
        return t;
    char ts[40];
    fl_time_format(now, true, ts);
    json_object_set_new(fl_json_ensure_obj(meta, "annotations"), key, json_string(ts));
    return now;
}

/* Set or clear one of our NoSchedule taints in spec.taints, keeping every other taint. */
static void set_taint(json_t *spec, const char *key, bool want, int64_t now)
{
    json_t *taints = json_object_get(spec, "taints");
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t) {
        const char *k = fl_json_str(t, "key"), *e = fl_json_str(t, "effect");
        if (k && e && !strcmp(k, key) && !strcmp(e, "NoSchedule")) {
            if (!want) {
                json_array_remove(taints, i);
                if (json_array_size(taints) == 0)
                    json_object_del(spec, "taints");
            }
            return;
        }
    }
    if (!want)
        return;
    if (!json_is_array(taints)) {
        taints = json_array();
        json_object_set_new(spec, "taints", taints);
    }
    char ts[40];
    fl_time_format(now, false, ts);
    json_array_append_new(taints, json_pack("{s:s, s:s, s:s}", "key", key, "effect", "NoSchedule", "timeAdded", ts));
}

/* Push: the Ready condition to adopt given what was observed, the stored condition and
 * the thresholds. Returns false to keep the stored condition for now. */
static bool push_ready(cstatus *st, json_t *meta, const char *cur, const observation *ob, int64_t now)
{
    bool ok = ob->health == H_OK;
    bool cur_true = cur && !strcmp(cur, "True");
    /* holding: the observation disagrees with a stored condition; the threshold runs */
    bool failing_while_ready = !ok && cur_true;
    bool healing_while_not = ok && cur && !cur_true;
    int64_t since = since_annotation(meta, FL_ANNOTATION_UNHEALTHY_SINCE, failing_while_ready, now);
    /* the second failing probe in a row (the probes come about an interval apart, jittered) */
    since_annotation(meta, FL_ANNOTATION_NOT_REPORTING_SINCE, failing_while_ready && now - since >= st->interval_ms / 2,
                     now);
    if (failing_while_ready && now - since < st->failure_ms)
        return false;
    since_annotation(meta, FL_ANNOTATION_UNHEALTHY_SINCE, false, now);
    since_annotation(meta, FL_ANNOTATION_NOT_REPORTING_SINCE, false, now);
    since = since_annotation(meta, FL_ANNOTATION_HEALTHY_SINCE, healing_while_not && st->success_ms > 0, now);
    if (healing_while_not && now - since < st->success_ms)
        return false;
    since_annotation(meta, FL_ANNOTATION_HEALTHY_SINCE, false, now);
    return true;
}

/* The Cluster as it should be: a new object built from base (the stored Cluster). */
static json_t *decide(cstatus *st, const json_t *base, const observation *ob, int64_t now)
{
    json_t *d = fl_json_deep_copy(base);
    json_t *meta = fl_json_ensure_obj(d, "metadata"), *spec = fl_json_ensure_obj(d, "spec"),
           *status = fl_json_ensure_obj(d, "status");
    const char *cur = ready_status(base);
    if (ob->push) {
        if (push_ready(st, meta, cur, ob, now))
            fl_cluster_set_ready(status, ob->health, ob->why, now);
        const char *now_ready = ready_status(d);
        if (ob->health == H_OK && ob->col && now_ready && !strcmp(now_ready, "True"))
            fl_cluster_set_collected(status, ob->col, now);
    } else {
        if (ob->lease_stale && (!cur || strcmp(cur, "Unknown")))
            fl_cluster_set_condition(status, "Ready", "Unknown", cur ? REASON_LEASE_STALE : REASON_NEVER_UPDATED,
                                     cur ? MSG_LEASE_STALE : MSG_NEVER_UPDATED, now);
        /* two renewals missed, the lease not stale yet: still Ready, but not reporting */
        const char *r = ready_status(d);
        since_annotation(meta, FL_ANNOTATION_NOT_REPORTING_SINCE, ob->lease_quiet && r && !strcmp(r, "True"), now);
    }
    /* taints follow the Ready condition, whoever set it (Karmada's taint manager) */
    const char *ready = ready_status(d);
    bool not_ready = !ready || !strcmp(ready, "False"), unreachable = ready && !strcmp(ready, "Unknown");
    set_taint(spec, FL_TAINT_CLUSTER_NOT_READY, not_ready, now);
    set_taint(spec, FL_TAINT_CLUSTER_UNREACHABLE, unreachable, now);
    if (json_object_size(status) == 0)
        json_object_del(d, "status");
    return d;
}

static bool same_member(const json_t *a, const json_t *b, const char *key)
{
    return fl_json_same(json_object_get(a, key), json_object_get(b, key));
}

static bool meta_changed(const json_t *base, const json_t *d)
{
    const json_t *bm = json_object_get(base, "metadata"), *dm = json_object_get(d, "metadata");
    return !same_member(bm, dm, "annotations") ||
           !same_member(json_object_get(base, "spec"), json_object_get(d, "spec"), "taints");
}

/* Decide and write, re-reading the Cluster on a conflict. */
static int write_cluster(cstatus *st, const char *name, json_t *base, const observation *ob, int64_t now)
{
    fl_client_error ce;
    json_incref(base);
    int rc = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        json_t *d = decide(st, base, ob, now), *out = NULL;
        rc = 0;
        if (!same_member(base, d, "status")) {
            rc = fl_client_update_status(st->cp, &CLUSTERS, NULL, d, NULL, &out, &ce);
            if (rc == 0) {
                const char *was = ready_status(base), *is = ready_status(out);
                if (!was || !is || strcmp(was, is))
                    fl_log_kvf(FL_LOG_INFO, LOG,
                               FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, name), "cluster", name),
                               "Ready %s -> %s", was ? was : "(none)", is ? is : "(none)");
                json_decref(base);
                base = out;
                json_decref(d);
                d = decide(st, base, ob, now);
            }
        }
        if (rc == 0 && meta_changed(base, d)) {
            out = NULL;
            rc = fl_client_update(st->cp, &CLUSTERS, NULL, d, NULL, &out, &ce);
            json_decref(out);
        }
        json_decref(d);
        if (rc != FL_ECONFLICT)
            break;
        json_decref(base);
        base = NULL;
        if ((rc = fl_client_get(st->cp, &CLUSTERS, NULL, name, &base, &ce)) != 0)
            break;
    }
    json_decref(base);
    if (rc && rc != FL_ENOTFOUND && rc != FL_ECLOSED)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the Cluster status failed", "object", FL_LOG_OBJ("Cluster", NULL, name),
                  "cluster", name, "err", fl_errmsg(ce.message, rc), NULL);
    return rc == FL_ENOTFOUND ? 0 : rc;
}

/* ---- reconcile ---- */

/* Whether the agent's Lease (or, with none, the Cluster's creation) is older than the failure
 * threshold; *quiet whether it missed two renewals (FL_AGENT_RENEW_INTERVAL_ANNOTATION, else
 * a quarter of leaseDurationSeconds). */
static int lease_state(cstatus *st, const json_t *cluster, const char *name, int64_t now, bool *missing, bool *quiet,
                       int64_t *due)
{
    json_t *lease = NULL;
    int64_t t, every = 0;
    *missing = fl_informer_get(st->leases, LEASE_NAMESPACE, name, &lease) != 0;
    if (!*missing) {
        json_t *spec = json_object_get(lease, "spec");
        t = fl_time_parse(fl_json_str(spec, "renewTime"));
        if (t < 0)
            t = fl_time_parse(fl_json_str(spec, "acquireTime"));
        const char *ms = fl_json_meta_map(lease, "annotations", FL_AGENT_RENEW_INTERVAL_ANNOTATION);
        every = ms ? strtoll(ms, NULL, 10) : 0;
        if (every <= 0)
            every = fl_json_path_int(spec, "leaseDurationSeconds", FL_AGENT_LEASE_DURATION_S) * 1000 / 4;
        json_decref(lease);
    } else {
        t = fl_time_parse(fl_json_meta(cluster, "creationTimestamp"));
    }
    *quiet = !*missing && t >= 0 && every > 0 && now - t > 2 * every;
    /* the next moment the verdict changes without a renewal: quiet, then stale */
    *due = 0;
    if (t >= 0 && !*quiet && !*missing && every > 0)
        *due = t + 2 * every + 1;
    else if (t >= 0 && now - t <= st->failure_ms)
        *due = t + st->failure_ms + 1;
    return t >= 0 && now - t > st->failure_ms;
}

/* Every Cluster has its execution space, the namespace karmada-es-<name> that holds its
 * Works, as Karmada's cluster controller creates it. Once per cluster per process; the
 * create is idempotent (AlreadyExists is success). */
static void ensure_execution_space(cstatus *st, const char *name)
{
    if (mem_get(st, name, "es", 0))
        return;
    static const fl_gvr NAMESPACES = {"v1", "namespaces"};
    char *ns = fl_names_execution_space(name);
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", ns);
    fl_client_error ce;
    json_t *out = NULL;
    int rc = fl_client_create(st->cp, &NAMESPACES, NULL, obj, NULL, &out, &ce);
    if (rc == 0 || rc == FL_EEXIST)
        mem_set(st, name, "es", 1);
    else
        fl_log_kv(FL_LOG_WARN, LOG, "creating the execution space failed", "object", FL_LOG_OBJ("Namespace", NULL, ns),
                  "cluster", name, "err", ce.message, NULL);
    json_decref(out);
    json_decref(obj);
    free(ns);
}

static void reconcile(worker *w, const char *name)
{
    cstatus *st = w->st;
    json_t *cl = NULL;
    if (fl_informer_get(st->clusters, NULL, name, &cl) != 0)
        return; /* deleted: no more probes */
    if (!json_object_get(json_object_get(cl, "metadata"), "deletionTimestamp"))
        ensure_execution_space(st, name);
    observation ob = {0};
    collected col = {0};
    char why[512] = "";
    const char *mode = fl_json_str(json_object_get(cl, "spec"), "syncMode");
    int64_t now = fl_time_now_ms();
    if (mode && !strcmp(mode, "Pull")) {
        int64_t due;
        ob.lease_stale = lease_state(st, cl, name, now, &ob.lease_missing, &ob.lease_quiet, &due);
        mem_set(st, name, "due", due); /* the next look comes then, if sooner than the period */
    } else {
        ob.push = true;
        fl_client *mc = NULL;
        char *err = NULL;
        int rc = fl_members_client(st->members, name, &mc, &err);
        if (rc) {
            ob.health = H_NO_CLIENT;
            snprintf(why, sizeof why, "failed to create a client: %s", err ? err : fl_strerror(rc));
            free(err);
        } else {
            ob.health = health_check(w, mc, name, why, sizeof why);
        }
        ob.why = why;
        if (ob.health != H_OK)
            mem_set(st, name, "disc", 0); /* rediscover the APIs once it is back */
        int64_t last = mem_get(st, name, "h", -1);
        if (last != ob.health) {
            if (ob.health == H_OK)
                fl_log_kv(FL_LOG_INFO, LOG, "health check passes", "object", FL_LOG_OBJ("Cluster", NULL, name),
                          "cluster", name, NULL);
            else
                fl_log_kv(FL_LOG_WARN, LOG, "health check fails", "object", FL_LOG_OBJ("Cluster", NULL, name),
                          "cluster", name, "err", why, NULL);
            mem_set(st, name, "h", ob.health);
        }
        /* collect only when the cluster will be Ready after this round */
        json_t *probe = decide(st, cl, &ob, now);
        const char *r = ready_status(probe);
        if (ob.health == H_OK && r && !strcmp(r, "True") && !atomic_load(&st->stop)) {
            collect(w, mc, name, &col);
            ob.col = &col;
        }
        json_decref(probe);
    }
    if (!atomic_load(&st->stop))
        write_cluster(st, name, cl, &ob, now);
    fl_cluster_collected_close(&col);
    json_decref(cl);
}

static void *worker_main(void *arg);

/* Start worker i (under mu, i == nworkers, not stopping): 0, or FL_EIO. */
static int start_worker(cstatus *st, int i)
{
    worker *w = &st->w[i];
    w->st = st;
    w->cancel = fl_client_cancel_new();
    atomic_store(&w->deadline_ms, 0);
    atomic_store(&w->armed_ms, 0);
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
        fl_client_cancel_free(w->cancel);
        return FL_EIO;
    }
    atomic_store(&st->nworkers, i + 1);
    return 0;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    cstatus *st = w->st;
    char *key;
    while (fl_workqueue_get(st->q, -1, &key) == 0) {
        if (!atomic_load(&st->stop) && !*st->stopping && !strcmp(key, FL_MSTATUS_KEY)) {
            fl_workqueue_add_after(st->q, key, fl_mstatus_poll(st->mstatus, w->cancel));
        } else if (!atomic_load(&st->stop) && !*st->stopping) {
            reconcile(w, key);
            /* the next probe of this cluster; a deleted one is dropped at that turn. Clusters
             * that joined together are probed at a random point of the period the first
             * time, a little before it later, so that their probes do not come as one burst
             * every period (random.h) */
            json_t *still = NULL;
            if (fl_informer_get(st->clusters, NULL, key, &still) == 0) {
                bool spread = mem_get(st, key, "spread", 0);
                if (!spread)
                    mem_set(st, key, "spread", 1);
                int64_t next = spread ? fl_jittered_ms(st->interval_ms) : fl_random_phase_ms(st->interval_ms);
                /* a Pull cluster whose lease turns quiet or stale before then: look at that
                 * moment, so that it is marked at twice its agent's interval, not up to a
                 * period later */
                int64_t due = mem_get(st, key, "due", 0), wait = due - fl_time_now_ms();
                if (due > 0 && wait < next)
                    next = wait > 0 ? wait : 0;
                fl_workqueue_add_after(st->q, key, next);
            }
            json_decref(still);
        }
        fl_workqueue_done(st->q, key);
        free(key);
    }
    return NULL;
}

/* ---- informer handlers ---- */

static void enqueue(cstatus *st, const json_t *obj)
{
    char *key = fl_informer_key(obj);
    if (key)
        fl_workqueue_add(st->q, key);
    free(key);
}

static void on_add(void *ctx, json_t *obj)
{
    note_ready(obj);
    enqueue(ctx, obj);
}

/* Status writes (ours included) come back as updates; the schedule covers them. Probe
 * at once only when the spec moved or someone else changed the Ready condition. */
static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    const char *a = ready_status(old_obj), *b = ready_status(new_obj);
    note_ready(new_obj);
    bool ready_moved = (!a) != (!b) || (a && b && strcmp(a, b));
    if (ready_moved || !fl_json_same(json_object_get(json_object_get(old_obj, "metadata"), "generation"),
                                   json_object_get(json_object_get(new_obj, "metadata"), "generation")))
        enqueue(ctx, new_obj);
}

/* An agent renewed its Lease: a cluster marked not reporting, or not Ready, is looked at
 * now rather than at its next turn (a Ready one that reports needs nothing). */
static void on_lease(void *ctx, json_t *lease)
{
    cstatus *st = ctx;
    const char *name = fl_json_meta(lease, "name");
    json_t *cl = NULL;
    if (!name || fl_informer_get(st->clusters, NULL, name, &cl) != 0)
        return;
    if (fl_cluster_report(cl) != FL_CLUSTER_REPORTING)
        fl_workqueue_add(st->q, name);
    json_decref(cl);
}

static void on_lease_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    on_lease(ctx, new_obj);
}

static void on_delete(void *ctx, json_t *obj)
{
    cstatus *st = ctx;
    char *key = fl_informer_key(obj);
    if (!key)
        return;
    fl_members_forget(st->members, key);
    fl_metric_drop(ready_family(), key, NULL);
    fl_metric_drop(reporting_family(), key, NULL);
    fl_metric_drop(health_family(), key, NULL);
    pthread_mutex_lock(&st->mu);
    json_object_del(st->mem, key);
    pthread_mutex_unlock(&st->mu);
    free(key);
}

/* ---- lifecycle ---- */

static void cluster_stop(void *state);

static int cluster_start(const fl_ctrl_env *env, void **state)
{
    cstatus *st = fl_calloc(1, sizeof *st);
    *state = NULL;
    st->cp = env->cp;
    st->stopping = env->stopping;
    /* Karmada's --cluster-status-update-frequency default: every member is probed and its
     * nodes and pods summed this often, which at 1 s was a tenth of the server's CPU with
     * 100 members */
    st->interval_ms = fl_env_ms("FLOTILLA_CLUSTER_STATUS_INTERVAL_MS", 10000, 0);
    if (st->interval_ms < 10)
        st->interval_ms = 10;
    st->failure_ms = fl_env_ms("FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS", 30000, 0);
    st->success_ms = fl_env_ms("FLOTILLA_CLUSTER_SUCCESS_THRESHOLD_MS", 0, 0);
    st->probe_timeout_ms = fl_env_ms("FLOTILLA_CLUSTER_PROBE_TIMEOUT_MS", 5000, 0);
    if (st->probe_timeout_ms < 10)
        st->probe_timeout_ms = 10;
    /* apiEnablements: one request per group-version, so at short intervals every tenth */
    st->discovery_ms = st->interval_ms < 10000 ? st->interval_ms * 10 : st->interval_ms;
    pthread_mutex_init(&st->mu, NULL);
    st->mem = json_object();
    st->q = fl_workqueue_new(NULL);
    fl_workqueue_set_name(st->q, "cluster-status");
    st->members = env->members;
    st->watchdog_stop = fl_client_cancel_new();

    /* Clusters through the manager's shared informer (one watch and one thread for every
     * controller that reads them); the agents' Leases, in one namespace, through our own. */
    st->clusters = fl_ctrl_informer(env, CLUSTERS.api_version, CLUSTERS.resource);
    fl_informer_handlers ch = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .ctx = st};
    fl_informer_add_handlers(st->clusters, &ch);
    st->mstatus = fl_mstatus_new(env);
    fl_workqueue_add(st->q, FL_MSTATUS_KEY);
    fl_informer_config lc = {.client = env->cp, .resource = LEASES, .ns = LEASE_NAMESPACE};
    int rc = fl_informer_new(&lc, &st->leases);
    fl_informer_handlers lh = {.on_add = on_lease, .on_update = on_lease_update, .ctx = st};
    if (rc == 0)
        fl_informer_add_handlers(st->leases, &lh);
    if (rc == 0)
        rc = fl_informer_start(st->leases);
    pthread_mutex_lock(&st->mu);
    for (int i = 0; rc == 0 && i < NWORKERS; i++)
        rc = start_worker(st, i);
    pthread_mutex_unlock(&st->mu);
    if (rc == 0) {
        if (pthread_create(&st->watchdog, NULL, watchdog_main, st) != 0)
            rc = FL_EIO;
        else
            st->watchdog_started = true;
    }
    if (rc) {
        cluster_stop(st);
        return rc;
    }
    fl_log(FL_LOG_INFO, LOG, "probing every %lld ms; failure threshold %lld ms, success threshold %lld ms",
           (long long)st->interval_ms, (long long)st->failure_ms, (long long)st->success_ms);
    *state = st;
    return 0;
}

static void cluster_stop(void *state)
{
    cstatus *st = state;
    if (!st)
        return;
    atomic_store(&st->stop, true);
    pthread_mutex_lock(&st->mu); /* a worker starting now has started: none after */
    pthread_mutex_unlock(&st->mu);
    for (int i = 0; i < st->nworkers; i++)
        fl_client_cancel_fire(st->w[i].cancel);
    fl_workqueue_shut_down(st->q);
    /* no handler may run once the informers are stopped (the manager stopped the shared
     * one already); then the workers drain */
    fl_informer_stop(st->leases);
    for (int i = 0; i < st->nworkers; i++)
        pthread_join(st->w[i].th, NULL);
    if (st->watchdog_started) {
        fl_client_cancel_fire(st->watchdog_stop);
        pthread_join(st->watchdog, NULL);
    }
    for (int i = 0; i < st->nworkers; i++)
        fl_client_cancel_free(st->w[i].cancel);
    fl_informer_free(st->leases);
    fl_mstatus_free(st->mstatus);
    fl_workqueue_free(st->q);
    fl_client_cancel_free(st->watchdog_stop);
    json_decref(st->mem);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

const fl_controller fl_cluster_status_controller = {
    .name = "cluster-status",
    .start = cluster_start,
    .stop = cluster_stop,
};
