/* eviction_app.c - what eviction.c and eviction_tasks.c need beyond taints: application
 * failover's clocks, state preservation, and the failover history.
 *
 * Application failover (spec.failover.application) judges each copy by its health in the
 * binding's status.aggregatedStatus (the interpreter's InterpretHealth, written there by the
 * binding status controller). The time a copy turned Unhealthy is kept in the binding's own
 * status.failoverClocks (ours), so a restart keeps it:
 *
 *     Healthy      the clock is dropped (the only thing that resets it)
 *     Unhealthy    a clock is started (unhealthySince = now); a paused one runs again, the
 *                  time it stood still added to pausedMilliseconds
 *     Unknown, or no report
 *                  a running clock is paused (pausedSince = now): neither reset nor counted
 *
 * A copy is due at unhealthySince + tolerationSeconds + pausedMilliseconds, unless paused.
 * eviction.c folds that deadline in with the taints' ones and evicts in its one place.
 *
 * State preservation evaluates the policy's rules (kubectl JSONPath) against the status last
 * reflected from the cluster left; the values go into the task's preservedLabelState, and
 * fl_eviction_preserved_labels gives the binding controller what to add to a new copy.
 *
 * The failover history (status.failoverHistory, ours) is written by reads from the server
 * and a status update, retried on conflicts: entries are started at an eviction and
 * completed when the task goes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/eviction.h"
#include "controllers/eviction_priv.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/jsonpath.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"

#define LOG "eviction"
#define STATUS_EDIT_TRIES 4

static int g_history_limit = FL_EVICTION_DEFAULT_HISTORY;

void fl_eviction_set_history_limit(int limit)
{
    g_history_limit = limit >= 0 ? limit : FL_EVICTION_DEFAULT_HISTORY;
}

int fl_eviction_history_limit(void)
{
    return g_history_limit;
}

/* ---- application failover's clocks ---- */

const json_t *fl_evict_app_policy(const json_t *spec)
{
    const json_t *app = json_object_get(json_object_get(spec, "failover"), "application");
    return json_is_object(app) ? app : NULL;
}

int64_t fl_evict_app_toleration_ms(const json_t *app)
{
    json_t *t = json_object_get(json_object_get(app, "decisionConditions"), "tolerationSeconds");
    int64_t s = json_is_integer(t) ? (int64_t)json_integer_value(t) : FL_EVICTION_DEFAULT_APP_TOLERATION_S;
    return (s < 0 ? 0 : s) * 1000;
}

static const json_t *find_by(const json_t *arr, const char *field, const char *value)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        const char *v = fl_json_str(x, field);
        if (v && value && !strcmp(v, value))
            return x;
    }
    return NULL;
}

const json_t *fl_evict_status_item(const json_t *binding, const char *cluster)
{
    return find_by(json_object_get(json_object_get(binding, "status"), "aggregatedStatus"), "clusterName", cluster);
}

json_t *fl_evict_app_clocks(const json_t *binding, int64_t now)
{
    const json_t *spec = json_object_get(binding, "spec");
    const json_t *old = json_object_get(json_object_get(binding, "status"), "failoverClocks");
    json_t *out = json_array();
    char ts[FL_TIME_BUF];
    fl_time_format(now, true, ts);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "clusters"), i, c) {
        const char *name = fl_json_str(c, "name");
        if (!name || fl_eviction_task_of(spec, name))
            continue;
        const char *h = fl_json_str(fl_evict_status_item(binding, name), "health");
        const json_t *had = find_by(old, "clusterName", name);
        if (h && !strcmp(h, "Healthy"))
            continue; /* the only thing that resets a clock */
        json_t *clock = had ? fl_json_deep_copy(had) : NULL;
        if (h && !strcmp(h, "Unhealthy")) {
            if (!clock) {
                clock = json_pack("{s:s, s:s}", "clusterName", name, "unhealthySince", ts);
            } else if (fl_json_str(clock, "pausedSince")) {
                int64_t since = fl_time_parse(fl_json_str(clock, "pausedSince"));
                json_int_t paused = json_integer_value(json_object_get(clock, "pausedMilliseconds"));
                if (since >= 0 && now > since)
                    paused += now - since;
                json_object_set_new(clock, "pausedMilliseconds", json_integer(paused));
                json_object_del(clock, "pausedSince");
            }
        } else if (clock && !fl_json_str(clock, "pausedSince")) {
            json_object_set_new(clock, "pausedSince", json_string(ts)); /* Unknown: paused */
        }
        if (clock)
            json_array_append_new(out, clock);
    }
    return out;
}

int64_t fl_evict_app_deadline(const json_t *binding, const char *cluster)
{
    const json_t *app = fl_evict_app_policy(json_object_get(binding, "spec"));
    const json_t *clock =
        app ? find_by(json_object_get(json_object_get(binding, "status"), "failoverClocks"), "clusterName", cluster)
            : NULL;
    if (!clock || fl_json_str(clock, "pausedSince"))
        return INT64_MAX;
    int64_t since = fl_time_parse(fl_json_str(clock, "unhealthySince"));
    if (since < 0)
        return INT64_MAX;
    return since + fl_evict_app_toleration_ms(app) + (int64_t)json_integer_value(json_object_get(clock, "pausedMilliseconds"));
}

/* ---- state preservation ---- */

/* Is s a valid label value (at most 63 characters of [A-Za-z0-9._-], alphanumeric at both
 * ends, or empty)? */
static bool label_value_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return true;
    if (n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || (ch != '-' && ch != '_' && ch != '.')))
            return false;
    }
    return true;
}

json_t *fl_evict_preserve(const json_t *binding, const json_t *behavior, const char *cluster, fl_recorder *rec)
{
    const json_t *rules = json_object_get(json_object_get(behavior, "statePreservation"), "rules");
    const json_t *spec = json_object_get(binding, "spec");
    json_t *out = json_object();
    /* what an earlier failover preserved and no copy has made healthy yet carries over */
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "gracefulEvictionTasks"), i, t) {
        json_t *pls = json_object_get(t, "preservedLabelState");
        if (json_is_object(pls))
            json_object_update(out, pls);
    }
    if (!json_array_size(rules))
        return out;
    const json_t *st = json_object_get(fl_evict_status_item(binding, cluster), "status");
    json_t *r;
    json_array_foreach(rules, i, r) {
        const char *alias = fl_json_str(r, "aliasLabelName"), *path = fl_json_str(r, "jsonPath");
        if (!alias || !path)
            continue;
        json_t *v = json_is_object(st) ? fl_jsonpath_eval(st, path) : NULL;
        if (!v) {
            fl_event(rec, binding, "Warning", "StatePreservationFailed",
                     "state preservation rule %s (%s): %s in cluster %s; the eviction goes ahead without it", alias,
                     path, json_is_object(st) ? "no value in the status reported" : "no status reported", cluster);
            continue;
        }
        char *text = fl_jsonpath_text(v);
        json_decref(v);
        if (label_value_ok(text))
            json_object_set_new(out, alias, json_string(text));
        else
            fl_event(rec, binding, "Warning", "StatePreservationFailed",
                     "state preservation rule %s (%s): the value \"%s\" from cluster %s is not a valid label value; "
                     "the eviction goes ahead without it",
                     alias, path, text, cluster);
        free(text);
    }
    return out;
}

static bool in_strings(const json_t *arr, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        if (json_is_string(x) && !strcmp(json_string_value(x), s))
            return true;
    }
    return false;
}

json_t *fl_eviction_preserved_labels(const json_t *spec, const char *cluster)
{
    json_t *out = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "gracefulEvictionTasks"), i, t) {
        json_t *pls = json_object_get(t, "preservedLabelState");
        const char *from = fl_json_str(t, "fromCluster");
        if (!json_is_object(pls) || (from && !strcmp(from, cluster)) ||
            in_strings(json_object_get(t, "clustersBeforeFailover"), cluster))
            continue;
        json_object_update(out, pls);
    }
    return out;
}

json_t *fl_evict_clusters_before(const json_t *spec)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *t, *x;
    json_array_foreach(json_object_get(spec, "gracefulEvictionTasks"), i, t) {
        json_array_foreach(json_object_get(t, "clustersBeforeFailover"), j, x) {
            if (json_is_string(x) && !in_strings(out, json_string_value(x)))
                json_array_append(out, x);
        }
    }
    json_array_foreach(json_object_get(spec, "clusters"), i, x) {
        const char *n = fl_json_str(x, "name");
        if (n && !in_strings(out, n))
            json_array_append_new(out, json_string(n));
    }
    return out;
}

/* ---- the failover history ---- */

/* Read the binding from the server, let edit change its status (returns whether it did),
 * and write the status; again on a conflict. */
static int status_edit(fl_client *cp, const fl_gvr *gvr, const char *ns, const char *name,
                       bool (*edit)(json_t *status, const json_t *binding, void *arg), void *arg)
{
    int rc = 0;
    for (int tries = 0; tries < STATUS_EDIT_TRIES; tries++) {
        json_t *b = NULL;
        fl_client_error ce;
        rc = fl_client_get(cp, gvr, ns, name, &b, &ce);
        if (rc)
            return rc == FL_ENOTFOUND ? 0 : rc;
        json_t *status = json_object_get(b, "status");
        if (!json_is_object(status)) {
            status = json_object();
            json_object_set_new(b, "status", status);
        }
        if (!edit(status, b, arg)) {
            json_decref(b);
            return 0;
        }
        rc = fl_client_update_status_given(cp, gvr, ns, b, NULL, NULL, &ce);
        if (rc != FL_ECONFLICT) {
            if (rc && rc != FL_ENOTFOUND)
                fl_log_kv(FL_LOG_WARN, LOG, "writing the failover history failed", "object",
                          FL_LOG_OBJ(fl_json_str(b, "kind"), ns, name), "err", fl_errmsg(ce.message, rc), NULL);
            return rc == FL_ENOTFOUND ? 0 : rc;
        }
    }
    return rc;
}

static json_t *history_of(json_t *status)
{
    json_t *h = json_object_get(status, "failoverHistory");
    if (!json_is_array(h)) {
        h = json_array();
        json_object_set_new(status, "failoverHistory", h);
    }
    return h;
}

/* The history entry a task written by the evictor starts (a new object). */
static json_t *entry_of_task(const json_t *t)
{
    const char *reason = fl_json_str(t, "reason");
    json_t *e = json_pack("{s:s, s:s?, s:s?, s:O?}", "reason",
                          reason && !strcmp(reason, "ApplicationFailure") ? "ApplicationFailover" : "ClusterFailover",
                          "startTime", fl_json_str(t, "creationTimestamp"), "fromCluster", fl_json_str(t, "fromCluster"),
                          "clustersBeforeFailover", json_object_get(t, "clustersBeforeFailover"));
    if (json_object_size(json_object_get(t, "preservedLabelState")))
        json_object_set(e, "preservedLabelState", json_object_get(t, "preservedLabelState"));
    return e;
}

/* The entry of h for the failover from cluster from that started at start, or NULL. */
static json_t *entry_for(const json_t *h, const char *from, const char *start)
{
    size_t j;
    json_t *e;
    json_array_foreach(h, j, e) {
        const char *ef = fl_json_str(e, "fromCluster"), *es = fl_json_str(e, "startTime");
        if (ef && es && from && start && !strcmp(ef, from) && !strcmp(es, start))
            return e;
    }
    return NULL;
}

/* Down to the limit, the oldest completed entries first: an open one goes only when none is
 * complete (else the tasks controller would find its task unstarted and start it again). */
static void trim(json_t *h)
{
    while (json_array_size(h) > (size_t)g_history_limit) {
        size_t drop = 0, i;
        json_t *e;
        json_array_foreach(h, i, e) {
            if (fl_json_str(e, "completionTime")) {
                drop = i;
                break;
            }
        }
        json_array_remove(h, drop);
    }
}

static bool start_edit(json_t *status, const json_t *binding, void *arg)
{
    (void)binding;
    const json_t *tasks = arg;
    json_t *h = history_of(status);
    bool changed = false;
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t) {
        /* the task may be over, and its entry written complete, already */
        if (entry_for(h, fl_json_str(t, "fromCluster"), fl_json_str(t, "creationTimestamp")))
            continue;
        json_array_append_new(h, entry_of_task(t));
        changed = true;
    }
    if (changed)
        trim(h);
    /* the clocks of clusters left are done with */
    json_t *clocks = json_object_get(status, "failoverClocks");
    for (size_t k = json_array_size(clocks); k-- > 0;) {
        const char *cn = fl_json_str(json_array_get(clocks, k), "clusterName");
        if (cn && find_by(tasks, "fromCluster", cn)) {
            json_array_remove(clocks, k);
            changed = true;
        }
    }
    return changed;
}

static bool ours(const json_t *task)
{
    const char *p = fl_json_str(task, "producer");
    return p && (!strcmp(p, "TaintManager") || !strcmp(p, "ApplicationFailover"));
}

json_t *fl_evict_history_unstarted(const json_t *binding)
{
    if (g_history_limit == 0)
        return NULL;
    const json_t *h = json_object_get(json_object_get(binding, "status"), "failoverHistory");
    size_t open = 0, i;
    json_t *e, *t, *out = NULL;
    json_array_foreach(h, i, e) open += !fl_json_str(e, "completionTime");
    json_array_foreach(json_object_get(json_object_get(binding, "spec"), "gracefulEvictionTasks"), i, t) {
        if (!ours(t) || !fl_json_str(t, "creationTimestamp") ||
            entry_for(h, fl_json_str(t, "fromCluster"), fl_json_str(t, "creationTimestamp")))
            continue;
        if (open >= (size_t)g_history_limit)
            break; /* as many open as are kept: a new one would push an open one out */
        if (!out)
            out = json_array();
        json_array_append(out, t);
        open++;
    }
    return out;
}

int fl_evict_history_start(fl_client *cp, const fl_gvr *gvr, const char *ns, const char *name, const json_t *tasks)
{
    return status_edit(cp, gvr, ns, name, start_edit, (void *)tasks);
}

typedef struct complete_arg {
    const json_t *done; /* [{fromCluster, startTime, outcome, task?}] */
    json_t *closed;     /* the entries the last edit completed: [{outcome, startTime}] */
} complete_arg;


static bool complete_edit(json_t *status, const json_t *binding, void *arg)
{
    const complete_arg *a = arg;
    json_t *h = history_of(status);
    json_t *after = json_array();
    size_t i;
    json_t *x, *e;
    json_array_foreach(json_object_get(json_object_get(binding, "spec"), "clusters"), i, x) {
        if (fl_json_str(x, "name"))
            json_array_append_new(after, json_string(fl_json_str(x, "name")));
    }
    char now[FL_TIME_BUF];
    fl_time_format(fl_time_now_ms(), false, now);
    bool changed = false;
    json_array_clear(a->closed);
    /* a task of ours over before the evictor wrote its entry: the entry is written here */
    json_t *d;
    json_array_foreach(a->done, i, d) {
        const json_t *task = json_object_get(d, "task");
        if (task && ours(task) && !entry_for(h, fl_json_str(d, "fromCluster"), fl_json_str(d, "startTime"))) {
            json_array_append_new(h, entry_of_task(task));
            trim(h);
        }
    }
    json_array_foreach(h, i, e) {
        if (fl_json_str(e, "completionTime"))
            continue;
        const char *ef = fl_json_str(e, "fromCluster"), *es = fl_json_str(e, "startTime");
        size_t j;
        json_array_foreach(a->done, j, d) {
            const char *df = fl_json_str(d, "fromCluster"), *ds = fl_json_str(d, "startTime");
            if (!ef || !df || strcmp(ef, df) || (ds && es && strcmp(ds, es)))
                continue;
            const char *outcome = fl_json_str(d, "outcome");
            if (json_array_size(after) == 0 && outcome && strcmp(outcome, "RemovedByHand"))
                outcome = "NoClusterAvailable";
            json_object_set_new(e, "completionTime", json_string(now));
            json_object_set_new(e, "outcome", json_string(outcome ? outcome : "RemovedByHand"));
            json_object_set(e, "clustersAfterFailover", after);
            json_array_append_new(a->closed, json_pack("{s:s, s:s?}", "outcome", outcome ? outcome : "RemovedByHand",
                                                       "startTime", es));
            changed = true;
            break;
        }
    }
    json_decref(after);
    return changed;
}

/* Bucket bounds for a failover's length: seconds (Directly) to an hour (a long grace period). */
static const double DURATION_BUCKETS[] = {1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 3600};

/* Count the failovers whose history entries were just completed (closed: [{outcome,
 * startTime}]): flotilla_failover_completed_total{outcome} and
 * flotilla_failover_duration_seconds (the entry's startTime, the task's creationTimestamp,
 * to now). Counted here, where an entry gets its completionTime, so each failover counts
 * once whichever path (the task removed by us or by hand) closes it. */
static void count_completed(const json_t *closed)
{
    fl_metric *done = fl_metric_family(FL_METRIC_COUNTER, "flotilla_failover_completed_total",
                                       "Failovers over (their eviction task gone), by outcome.", "outcome", NULL,
                                       NULL, 0);
    fl_metric *dur = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_failover_duration_seconds",
                                      "From a failover's start (its eviction task written) to its completion.",
                                      NULL, NULL, DURATION_BUCKETS, sizeof DURATION_BUCKETS / sizeof DURATION_BUCKETS[0]);
    int64_t now = fl_time_now_ms();
    size_t i;
    json_t *c;
    json_array_foreach(closed, i, c) {
        fl_metric_add(fl_metric_with(done, fl_json_str(c, "outcome"), NULL), 1);
        int64_t t0 = fl_time_parse(fl_json_str(c, "startTime"));
        if (t0 >= 0)
            fl_metric_observe(fl_metric_with(dur, NULL, NULL), (double)(now - t0) / 1000.0);
    }
}

int fl_evict_history_complete(fl_client *cp, const fl_gvr *gvr, const char *ns, const char *name, const json_t *done)
{
    complete_arg a = {done, json_array()};
    int rc = status_edit(cp, gvr, ns, name, complete_edit, &a);
    if (rc == 0)
        count_completed(a.closed);
    json_decref(a.closed);
    return rc;
}
