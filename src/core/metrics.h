/* metrics.h - Prometheus text exposition for /metrics.
 *
 * Request counters and latency histograms keyed by (verb, resource, code), as
 * apiserver_request_total / apiserver_request_duration_seconds, plus gauges that
 * other modules register as callbacks (store size, watch count). It lives in core, not
 * beside the HTTP server, because the controllers count too (binding, execution, work
 * status) and may not include the API. Lock-protected; any thread.
 *
 * Labelled families (fl_metric_*): a module registers a counter, gauge or histogram once
 * with up to two label names, takes a series handle per label-value pair once
 * (fl_metric_with, under the lock; the handle lives until fl_metrics_reset), and then
 * counts through the handle with atomics only: no lock, no allocation per observation.
 * Label values must come from a bounded set (controller names, queue names, results,
 * cluster names): past FL_METRIC_MAX_SERIES pairs a family counts new ones under the
 * value "_other". Scrape hooks (fl_metrics_on_scrape) run before each render so that
 * gauges read from elsewhere (queue depth, /proc) are set fresh. */
#ifndef FL_METRICS_H
#define FL_METRICS_H

#include <stddef.h>

/* Count one finished request. verb: GET/LIST/WATCH/POST/PUT/PATCH/DELETE; resource may be "". */
void fl_metrics_request(const char *verb, const char *resource, int code, double seconds);
/* Register a gauge read at scrape time. name/help must be static strings. */
void fl_metrics_gauge(const char *name, const char *help, double (*fn)(void *ctx), void *ctx);
/* Add to a counter by name (created on first use; name/help static). */
void fl_metrics_count(const char *name, const char *help, double delta);
/* Render the exposition text; heap string, *len set. */
char *fl_metrics_render(size_t *len);
/* Drop everything (tests). Invalidates every fl_metric and fl_metric_series handle. */
void fl_metrics_reset(void);

/* ---- labelled families ---- */

typedef enum { FL_METRIC_COUNTER, FL_METRIC_GAUGE, FL_METRIC_HISTOGRAM } fl_metric_type;
typedef struct fl_metric fl_metric;
typedef struct fl_metric_series fl_metric_series;

/* room for a family of cluster x three states at 2,700 clusters; a series is a few hundred bytes */
#define FL_METRIC_MAX_SERIES 8192

/* Bucket bounds in seconds for latencies from a millisecond to a minute, and for
 * durations up to ten minutes (reconciles, queue waits, health checks). */
extern const double fl_metric_latency_buckets[];
extern const size_t fl_metric_latency_nbuckets;

/* The family name (static strings: name, help, label names; buckets copied). Registering
 * a name again returns the same family (its type and labels must agree; the first wins).
 * label1/label2 may be NULL (fewer labels). buckets: ascending upper bounds for a
 * histogram, NULL for fl_metric_latency_buckets. Never NULL. Any thread. */
fl_metric *fl_metric_family(fl_metric_type type, const char *name, const char *help, const char *label1,
                            const char *label2, const double *buckets, size_t nbuckets);
/* The series of (v1, v2) (NULL for a missing label), created at zero if new; the handle
 * is valid until fl_metrics_reset. Takes the lock: call once and keep the handle on a hot
 * path. A series dropped with fl_metric_drop shows again once taken again. */
fl_metric_series *fl_metric_with(fl_metric *m, const char *v1, const char *v2);
/* Stop rendering the series of (v1, v2) (a deleted cluster); handles stay valid. */
void fl_metric_drop(fl_metric *m, const char *v1, const char *v2);
/* Stop rendering every series whose first label is v1, whatever the second (all of a
 * deleted cluster's). Walks the family: not for a hot path. */
void fl_metric_drop_first(fl_metric *m, const char *v1);
/* Counter or gauge: add delta (a counter ignores a negative one). Lock-free. */
void fl_metric_add(fl_metric_series *s, double delta);
/* Gauge: set. Lock-free. */
void fl_metric_set(fl_metric_series *s, double v);
/* Histogram: one observation (negative or NaN counts as 0). Lock-free. */
void fl_metric_observe(fl_metric_series *s, double v);
/* A counter or gauge's value now (tests, hooks). */
double fl_metric_value(const fl_metric_series *s);

/* Set the gauge name{label=value} (label NULL: unlabelled), registering the family on first
 * use: what a scrape hook does with a figure it reads. Takes the lock. */
void fl_metric_gauge_set(const char *name, const char *help, const char *label, const char *value, double v);
/* fn(ctx) runs at the start of every render, before anything is read, serialised with
 * other hooks and with fl_metrics_remove_hook; it may call fl_metric_with/set but not
 * add or remove hooks. */
void fl_metrics_on_scrape(void (*fn)(void *ctx), void *ctx);
/* Remove the hook (fn, ctx); after it returns the hook runs no more. */
void fl_metrics_remove_hook(void (*fn)(void *ctx), void *ctx);

/* Process metrics (process_cpu_seconds_total, memory, fds, threads, start time) read from
 * /proc at scrape time (procmetrics.c). Idempotent; any thread. */
void fl_procmetrics_register(void);

#endif
