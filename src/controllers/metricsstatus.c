/* metricsstatus.c - the metrics way in of live status (metricsstatus.h).
 *
 * A poll, every interval, on one of the cluster status controller's workers:
 * 1. the metrics clusters: Push Clusters annotated `flotilla.io/status-source: metrics`, from
 *    the shared Cluster cache;
 * 2. one instant query for the clusters' heartbeats (the newest sample of their namespaces'
 *    series) and one per kind (metricsseries.h: every kube_<kind>_* series of those clusters
 *    at once), each bounded by the time-out;
 * 3. per cluster, the records: each object the series describe, rebuilt and judged by the same
 *    rules as a watched object (interp/livestate.c); or, for the whole cluster, Unknown with a
 *    reason when the answer could not be had or read (PrometheusUnreachable, PrometheusTimeout,
 *    PrometheusQueryFailed, PrometheusAnswerMalformed, PrometheusNotConfigured) or when the
 *    cluster has sent nothing for twice the interval (MetricsStale);
 * 4. the Works of those clusters, from the shared Work cache: an entry of a kind the series
 *    describe whose liveStatus differs from the record gets it, in one status write per Work,
 *    pinned to the version read (a conflict waits for the next poll). An unchanged record
 *    writes nothing; no time is in a record.
 *
 * An object the series do not name is NotReportedYet (InProgress) until it has been missing
 * for twice the interval, then NotFound: kube-state-metrics drops a deleted object's series,
 * but a new object's first scrape comes a scrape interval after its creation.
 *
 * Delivery is the execution engine's, unchanged; for these clusters it starts no member watch
 * and asks fl_mstatus_live for the entries it writes after an apply. The records are kept here,
 * under one mutex, per cluster: process-wide state, as the Prometheus URL is. */
#include "controllers/metricsstatus.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/informer.h"
#include "client/kubeconfig.h"
#include "controllers/metricsseries.h"
#include "controllers/names.h"
#include "controllers/summary.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "interp/livestate.h"

#define LOG "metrics-status"

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

/* ---- process-wide state ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *g_url;
static int64_t g_interval_ms = FL_MSTATUS_INTERVAL_MS, g_timeout_ms = FL_MSTATUS_TIMEOUT_MS;
static fl_informer *g_clusters; /* the shared Cluster cache while a poller lives (borrowed) */
/* cluster -> {"down": liveStatus of every object, or absent; "objs": {key: liveStatus};
 * "absent": {key: ms since the epoch when a Work's object was first missed}} */
static json_t *g_state;

void fl_mstatus_configure(const char *url, int64_t interval_ms, int64_t timeout_ms)
{
    pthread_mutex_lock(&mu);
    free(g_url);
    g_url = url && *url ? fl_strdup(url) : NULL;
    g_interval_ms = interval_ms > 0 ? interval_ms : FL_MSTATUS_INTERVAL_MS;
    g_timeout_ms = timeout_ms > 0 ? timeout_ms : FL_MSTATUS_TIMEOUT_MS;
    pthread_mutex_unlock(&mu);
}

/* A Cluster that reports through metrics: annotated so, and not Pull (validation refuses that
 * too; the agent reports a Pull cluster's state itself). */
static bool cluster_is_metrics(const json_t *cl)
{
    const char *src = fl_json_meta_map(cl, "annotations", FL_STATUS_SOURCE_ANNOTATION);
    const char *mode = fl_json_path_str(cl, "spec.syncMode");
    return src && !strcmp(src, FL_STATUS_SOURCE_METRICS) && !(mode && !strcmp(mode, "Pull"));
}

bool fl_mstatus_owns(const char *cluster)
{
    pthread_mutex_lock(&mu);
    fl_informer *inf = g_clusters; /* the manager's: it outlives every controller */
    pthread_mutex_unlock(&mu);
    json_t *cl = NULL;
    bool owns = inf && cluster && fl_informer_get(inf, NULL, cluster, &cl) == 0 && cluster_is_metrics(cl);
    json_decref(cl);
    return owns;
}

static json_t *live_json(enum fl_live_state s, const char *reason, const char *message)
{
    json_t *o = json_pack("{s:s}", "state", fl_live_state_name(s));
    if (reason && *reason)
        json_object_set_new(o, "reason", json_string(reason));
    if (message && *message)
        json_object_set_new(o, "message", json_string(message));
    return o;
}

/* The record of one object (mu held); note: a Work names it, so its absence counts from now. */
static json_t *record_of(const char *cluster, const char *kind, const char *ns, const char *name, bool note,
                         int64_t now)
{
    json_t *st = json_object_get(g_state, cluster);
    if (!st)
        return live_json(FL_LIVE_UNKNOWN, "NotReportedYet", "the metrics of this cluster have not been read yet");
    json_t *down = json_object_get(st, "down");
    if (down)
        return json_incref(down);
    char *key = fl_mseries_key(kind, ns, name);
    json_t *rec = json_object_get(json_object_get(st, "objs"), key);
    json_t *out = NULL;
    if (rec) {
        out = json_incref(rec);
    } else {
        json_t *absent = json_object_get(st, "absent");
        json_t *since = json_object_get(absent, key);
        if (!since && note && absent)
            json_object_set_new(absent, key, since = json_integer(now));
        if (since && now - json_integer_value(since) >= 2 * g_interval_ms)
            out = live_json(FL_LIVE_NOT_FOUND, NULL, "not in the member cluster"); /* as livestate.c says it */
        else
            out = live_json(FL_LIVE_IN_PROGRESS, "NotReportedYet", "no series of it in Prometheus yet");
    }
    free(key);
    return out;
}

json_t *fl_mstatus_live(const char *cluster, const char *api_version, const char *kind, const char *ns,
                        const char *name)
{
    if (!cluster || !name || fl_mseries_kind_of(api_version, kind) < 0)
        return NULL;
    pthread_mutex_lock(&mu);
    json_t *out = record_of(cluster, kind, ns, name, false, fl_time_now_ms());
    pthread_mutex_unlock(&mu);
    return out;
}

static fl_metric *records_family(void)
{
    return fl_metric_family(FL_METRIC_COUNTER, "flotilla_status_records_total",
                            "Live-state records made, by the way in: watch (the control plane's member watches), "
                            "agent (a Pull cluster's agent), metrics (Prometheus series)",
                            "way", NULL, NULL, 0);
}

void fl_mstatus_count_record(const char *way)
{
    fl_metric_add(fl_metric_with(records_family(), way, NULL), 1);
}

/* ---- the poller ---- */

struct fl_mstatus {
    fl_client *cp;       /* the control plane (borrowed) */
    fl_informer *clusters, *works;
    fl_client *prom;     /* the query API, or NULL */
    char *prom_err;      /* why there is none */
    int64_t interval_ms;
    json_t *last_heard;  /* cluster -> newest heartbeat sample seen, ms since the epoch */
    json_t *first_asked; /* cluster -> when the poller first looked for it (ms) */
    fl_metric *failures, *records, *duration;
};

fl_mstatus *fl_mstatus_new(const fl_ctrl_env *env)
{
    fl_mstatus *m = fl_calloc(1, sizeof *m);
    m->cp = env->cp;
    m->clusters = fl_ctrl_informer(env, "cluster.karmada.io/v1alpha1", "clusters");
    m->works = fl_ctrl_informer(env, WORKS.api_version, WORKS.resource);
    m->last_heard = json_object();
    m->first_asked = json_object();
    m->failures = fl_metric_family(FL_METRIC_COUNTER, "flotilla_status_metrics_query_failures_total",
                                   "Polls of the Prometheus query API whose answer could not be had or read, per "
                                   "metrics cluster (the cluster's objects turn Unknown)",
                                   "cluster", NULL, NULL, 0);
    m->records = records_family();
    m->duration = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_status_metrics_poll_duration_seconds",
                                   "How long a poll of the metrics way in took: its queries, the records, the Work "
                                   "writes",
                                   NULL, NULL, NULL, 0);
    pthread_mutex_lock(&mu);
    m->interval_ms = g_interval_ms;
    int timeout = (int)g_timeout_ms;
    char *url = g_url ? fl_strdup(g_url) : NULL;
    g_clusters = m->clusters;
    json_decref(g_state);
    g_state = json_object();
    pthread_mutex_unlock(&mu);
    if (url) {
        fl_kubeconfig kc;
        fl_kubeconfig_init(&kc, url, NULL);
        fl_client_options o = {.user_agent = "flotilla-metrics-status", .timeout_ms = timeout,
                               .connect_timeout_ms = timeout, .max_idle = 2};
        char *err = NULL;
        if (fl_client_new(&kc, &o, &m->prom, &err) != 0) {
            m->prom_err = fl_asprintf("the Prometheus URL %s cannot be used: %s", url, err ? err : "");
            fl_log(FL_LOG_WARN, LOG, "%s", m->prom_err);
        } else {
            fl_log(FL_LOG_INFO, LOG, "live status of metrics clusters from %s every %lld ms", url,
                   (long long)m->interval_ms);
        }
        free(err);
        fl_kubeconfig_close(&kc);
        free(url);
    } else {
        m->prom_err = fl_strdup("the server has no --status-prometheus-url");
    }
    return m;
}

void fl_mstatus_free(fl_mstatus *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&mu);
    if (g_clusters == m->clusters)
        g_clusters = NULL;
    json_decref(g_state);
    g_state = NULL;
    pthread_mutex_unlock(&mu);
    fl_client_free(m->prom);
    free(m->prom_err);
    json_decref(m->last_heard);
    json_decref(m->first_asked);
    free(m);
}

static void add_if_metrics(void *ctx, json_t *cl)
{
    const char *name = fl_json_meta(cl, "name");
    if (name && cluster_is_metrics(cl) && !fl_json_meta(cl, "deletionTimestamp"))
        json_array_append_new(ctx, json_string(name));
}

/* Percent-encode everything but RFC 3986's unreserved characters. */
static void url_escape(fl_strbuf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
            fl_strbuf_addc(b, (char)c);
        else
            fl_strbuf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
    }
}

/* Why a poll failed, for every metrics cluster. */
typedef struct failure {
    const char *reason;
    char *message;
} failure;

/* One instant query: its answer (a new reference), or NULL with *f set. FL_ECLOSED: stopping. */
static int query(fl_mstatus *m, const char *promql, fl_client_cancel *cancel, json_t **answer, failure *f)
{
    fl_strbuf path = FL_STRBUF_INIT;
    fl_strbuf_adds(&path, "/api/v1/query?query=");
    url_escape(&path, promql);
    fl_client_error ce = {0};
    *answer = NULL;
    int rc = fl_client_request(m->prom, "GET", fl_strbuf_str(&path), NULL, NULL, 0, cancel, answer, &ce);
    free(path.p);
    if (rc == FL_ECLOSED)
        return rc;
    if (rc == FL_ETIMEDOUT) {
        f->reason = "PrometheusTimeout";
        f->message = fl_asprintf("no answer from %s within the time-out", fl_client_server(m->prom));
    } else if (rc && ce.http / 100 == 2) { /* the client could not decode a 2xx answer */
        const char *why = strstr(ce.message, "malformed JSON in the answer: ");
        f->reason = "PrometheusAnswerMalformed";
        f->message = fl_asprintf("the answer of %s is not JSON: %s", fl_client_server(m->prom),
                                 why ? why + strlen("malformed JSON in the answer: ") : fl_errmsg(ce.message, rc));
    } else if (rc && !ce.http) {
        f->reason = "PrometheusUnreachable";
        f->message = fl_asprintf("%s: %s", fl_client_server(m->prom), fl_errmsg(ce.message, rc));
    } else if (rc) {
        f->reason = "PrometheusQueryFailed";
        f->message = fl_asprintf("%s answered HTTP %d: %s", fl_client_server(m->prom), ce.http,
                                 fl_errmsg(ce.message, rc));
    } else if (!*answer) {
        f->reason = "PrometheusAnswerMalformed";
        f->message = fl_asprintf("the answer of %s is not JSON", fl_client_server(m->prom));
    }
    return f->reason ? FL_EIO : 0;
}

/* Ask for the heartbeats and every kind's series; the first failure stops (a partial answer
 * would read as objects missing). */
static int ask(fl_mstatus *m, const json_t *names, fl_client_cancel *cancel, json_t *heard, json_t *objs, failure *f)
{
    json_t *answer = NULL;
    char *q = fl_mseries_heartbeat_query(names), *err = NULL;
    int rc = query(m, q, cancel, &answer, f);
    free(q);
    if (rc == 0 && fl_mseries_heartbeats(answer, heard, &err))
        rc = FL_EINVAL;
    json_decref(answer);
    for (size_t k = 0; rc == 0 && k < fl_mseries_nkinds; k++) {
        q = fl_mseries_query(k, names);
        rc = query(m, q, cancel, &answer, f);
        free(q);
        if (rc == 0 && fl_mseries_fold(answer, k, objs, &err))
            rc = FL_EINVAL;
        json_decref(answer);
    }
    if (rc == FL_EINVAL) {
        f->reason = "PrometheusAnswerMalformed";
        f->message = fl_asprintf("%s: %s", fl_client_server(m->prom), err);
    }
    free(err);
    return rc;
}

/* The records of one cluster whose series came: each object judged as a watched one is. */
static json_t *judge_all(fl_mstatus *m, const json_t *objs)
{
    json_t *out = json_object();
    const char *key;
    json_t *obj;
    int64_t now = fl_time_now_ms();
    json_object_foreach((json_t *)objs, key, obj) {
        fl_live live;
        fl_live_judge(obj, fl_json_str(obj, "apiVersion"), fl_json_str(obj, "kind"), NULL, now, &live);
        json_object_set_new(out, key, live_json(live.state, live.reason, live.message));
    }
    fl_metric_add(fl_metric_with(m->records, "metrics", NULL), (double)json_object_size(objs));
    return out;
}

/* The new state of one cluster (a new reference), from what this poll had (f->reason set:
 * nothing), keeping what the last state noted missing. */
static json_t *cluster_state(fl_mstatus *m, const char *c, const failure *f, const json_t *heard, const json_t *objs,
                             const json_t *old, int64_t now)
{
    json_t *st = json_object();
    json_t *absent = json_object_get(old, "absent");
    json_object_set_new(st, "absent", absent ? json_copy(absent) : json_object());
    if (f->reason) {
        fl_metric_add(fl_metric_with(m->failures, c, NULL), 1);
        json_object_set_new(st, "down", live_json(FL_LIVE_UNKNOWN, f->reason, f->message));
        return st;
    }
    json_int_t h = json_integer_value(json_object_get(heard, c));
    if (h > json_integer_value(json_object_get(m->last_heard, c)))
        json_object_set_new(m->last_heard, c, json_integer(h));
    if (!json_object_get(m->first_asked, c))
        json_object_set_new(m->first_asked, c, json_integer(now));
    json_int_t last = json_integer_value(json_object_get(m->last_heard, c));
    json_int_t since = last ? last : json_integer_value(json_object_get(m->first_asked, c));
    if (now - since > 2 * m->interval_ms) {
        /* no time that moves in it: a cluster that stays silent writes its Works once */
        char *msg = fl_asprintf("no %sseries of cluster %s in Prometheus for over %lld ms (twice the interval)",
                                last ? "new " : "", c, (long long)(2 * m->interval_ms));
        json_object_set_new(st, "down", live_json(FL_LIVE_UNKNOWN, "MetricsStale", msg));
        free(msg);
    } else if (!last) {
        json_object_set_new(st, "down",
                            live_json(FL_LIVE_UNKNOWN, "NotReportedYet", "no series of this cluster in Prometheus yet"));
    } else {
        json_t *recs = judge_all(m, json_object_get(objs, c));
        const char *key;
        json_t *v, *tmp;
        json_object_foreach_safe(json_object_get(st, "absent"), tmp, key, v) /* found again */
            if (json_object_get(recs, key))
                json_object_del(json_object_get(st, "absent"), key);
        json_object_set_new(st, "objs", recs);
    }
    return st;
}

/* ---- writing the Works ---- */

typedef struct walk {
    const char *cluster;
    int64_t now;
    json_t *writes; /* [work, new manifestStatuses] */
} walk;

/* One Work of a metrics cluster (borrowed; the cache's lock is not held: fl_informer_each) */
static void work_one(void *ctx, json_t *w)
{
    walk *k = ctx;
    if (fl_json_meta(w, "deletionTimestamp"))
        return;
    const json_t *entries = json_object_get(fl_json_obj(w, "status"), "manifestStatuses");
    json_t *out = NULL;
    size_t i;
    const json_t *e;
    json_array_foreach(entries, i, e) {
        const json_t *id = fl_json_obj(e, "identifier");
        const char *group = fl_json_str(id, "group"), *version = fl_json_str(id, "version");
        const char *kind = fl_json_str(id, "kind"), *ns = fl_json_str(id, "namespace"), *name = fl_json_str(id, "name");
        char *av = group && *group ? fl_cat(group, "/", version ? version : "", NULL) : fl_strdup(version ? version : "");
        json_t *rec = NULL;
        if (name && fl_mseries_kind_of(av, kind) >= 0) {
            pthread_mutex_lock(&mu);
            rec = g_state ? record_of(k->cluster, kind, ns, name, true, k->now) : NULL;
            pthread_mutex_unlock(&mu);
        }
        free(av);
        if (rec && !fl_json_same(rec, json_object_get(e, "liveStatus"))) {
            if (!out) {
                out = json_array();
                for (size_t j = 0; j < i; j++)
                    json_array_append(out, json_array_get(entries, j));
            }
            json_t *ne = fl_json_shallow_copy(e);
            json_object_set_new(ne, "liveStatus", rec);
            json_array_append_new(out, ne);
        } else {
            json_decref(rec);
            if (out)
                json_array_append(out, (json_t *)e);
        }
    }
    if (out)
        json_array_append_new(k->writes, json_pack("[O,o]", w, out));
}

/* The Work's status with entries, written pinned to the version read. */
static int write_work(fl_mstatus *m, const json_t *w, json_t *entries)
{
    json_t *st = fl_json_shallow_copy(fl_json_obj(w, "status"));
    json_object_set(st, "manifestStatuses", entries);
    const char *why, *msg;
    json_object_set_new(st, "liveState", json_string(fl_summary_work_state(st, false, &why, &msg)));
    const json_t *md = json_object_get(w, "metadata");
    json_t *copy = json_pack("{s:O*, s:O*, s:{s:O*, s:O*, s:O*, s:O*}, s:o}", "apiVersion",
                             json_object_get(w, "apiVersion"), "kind", json_object_get(w, "kind"), "metadata", "name",
                             json_object_get(md, "name"), "namespace", json_object_get(md, "namespace"), "uid",
                             json_object_get(md, "uid"), "resourceVersion", json_object_get(md, "resourceVersion"),
                             "status", st);
    fl_client_error ce = {0};
    int rc = fl_client_update_status_given(m->cp, &WORKS, fl_json_meta(w, "namespace"), copy, NULL, NULL, &ce);
    if (rc && rc != FL_ECONFLICT && rc != FL_ENOTFOUND)
        fl_log_kv(FL_LOG_WARN, LOG, "writing the Work status failed", "object",
                  FL_LOG_OBJ("Work", fl_json_meta(w, "namespace"), fl_json_meta(w, "name")), "err",
                  fl_errmsg(ce.message, rc), NULL);
    if (rc == 0)
        fl_metrics_count("flotilla_status_metrics_work_writes_total",
                         "Work status writes of the metrics way in (a liveStatus changed)", 1);
    return rc;
}

static void write_works(fl_mstatus *m, const json_t *names)
{
    size_t i;
    const json_t *c;
    json_array_foreach(names, i, c) {
        walk k = {json_string_value(c), fl_time_now_ms(), json_array()};
        char *ns = fl_cat(FL_EXECUTION_SPACE_PREFIX, k.cluster, NULL);
        fl_informer_each(m->works, ns, work_one, &k);
        free(ns);
        size_t j;
        json_t *wr;
        json_array_foreach(k.writes, j, wr) {
            /* the cluster taken back to the watch meanwhile: the engine writes its Works now */
            if (!fl_mstatus_owns(k.cluster))
                break;
            write_work(m, json_array_get(wr, 0), json_array_get(wr, 1));
        }
        json_decref(k.writes);
    }
}

int64_t fl_mstatus_poll(fl_mstatus *m, fl_client_cancel *cancel)
{
    json_t *names = json_array();
    fl_informer_each(m->clusters, NULL, add_if_metrics, names);
    if (!json_array_size(names) || !fl_informer_has_synced(m->works)) {
        pthread_mutex_lock(&mu);
        if (!json_array_size(names))
            json_object_clear(g_state);
        pthread_mutex_unlock(&mu);
        json_decref(names);
        return m->interval_ms;
    }
    double t0 = fl_ctrl_now_s();
    json_t *heard = json_object(), *objs = json_object();
    failure f = {0};
    if (!m->prom) {
        f.reason = "PrometheusNotConfigured";
        f.message = fl_strdup(m->prom_err);
    } else if (ask(m, names, cancel, heard, objs, &f) == FL_ECLOSED) {
        goto out; /* stopping */
    }
    int64_t now = fl_time_now_ms();
    json_t *next = json_object();
    size_t i;
    const json_t *c;
    pthread_mutex_lock(&mu);
    json_array_foreach(names, i, c) {
        const char *name = json_string_value(c);
        json_object_set_new(next, name, cluster_state(m, name, &f, heard, objs, json_object_get(g_state, name), now));
    }
    json_decref(g_state);
    g_state = next;
    pthread_mutex_unlock(&mu);
    if (f.reason)
        fl_log_kv(FL_LOG_WARN, LOG, "the metrics clusters' live status could not be read", "reason", f.reason, "err",
                  f.message, NULL);
    write_works(m, names);
    fl_metric_observe(fl_metric_with(m->duration, NULL, NULL), fl_ctrl_now_s() - t0);
out:
    free(f.message);
    json_decref(heard);
    json_decref(objs);
    json_decref(names);
    return m->interval_ms;
}
