/* statuslag.c - clocks from a change seen to its status reflected (see statuslag.h). */
#include "controllers/statuslag.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"

/* From 10 ms (a status written at once) to 5 minutes (a member slow to answer, or a backlog) */
static const double LAG_BUCKETS[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

struct fl_status_lag {
    pthread_mutex_t mu;
    json_t *started;          /* key -> fl_time_mono_ns() of the first change not reflected yet */
    fl_metric_series *series; /* flotilla_status_lag_seconds{stage} */
};

fl_status_lag *fl_status_lag_new(const char *stage)
{
    fl_status_lag *l = fl_calloc(1, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    l->started = json_object();
    fl_metric *fam = fl_metric_family(
        FL_METRIC_HISTOGRAM, "flotilla_status_lag_seconds",
        "From a change seen to the status that reflects it written (or found current), by stage: work (a member "
        "object's change -> its Work's status), binding (a Work's status -> its binding's and template's status).",
        "stage", NULL, LAG_BUCKETS, sizeof LAG_BUCKETS / sizeof LAG_BUCKETS[0]);
    l->series = fl_metric_with(fam, stage, NULL);
    return l;
}

void fl_status_lag_free(fl_status_lag *l)
{
    if (!l)
        return;
    json_decref(l->started);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void fl_status_lag_seen(fl_status_lag *l, const char *key)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    if (!json_object_get(l->started, key))
        json_object_set_new(l->started, key, json_integer(fl_time_mono_ns()));
    pthread_mutex_unlock(&l->mu);
}

/* Stop key's clock; its start, or -1 when it was not running. */
static int64_t stop(fl_status_lag *l, const char *key)
{
    pthread_mutex_lock(&l->mu);
    json_t *t = json_object_get(l->started, key);
    int64_t t0 = t ? (int64_t)json_integer_value(t) : -1;
    if (t)
        json_object_del(l->started, key);
    pthread_mutex_unlock(&l->mu);
    return t0;
}

void fl_status_lag_reflected(fl_status_lag *l, const char *key)
{
    if (!l)
        return;
    int64_t t0 = stop(l, key);
    if (t0 >= 0)
        fl_metric_observe(l->series, (double)(fl_time_mono_ns() - t0) / 1e9);
}

void fl_status_lag_forget(fl_status_lag *l, const char *key)
{
    if (l)
        stop(l, key);
}
