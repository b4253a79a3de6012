/* metrics.h - Prometheus text exposition for /metrics.
 *
 * Request counters and latency histograms keyed by (verb, resource, code), as
 * apiserver_request_total / apiserver_request_duration_seconds, plus gauges that
 * other modules register as callbacks (store size, watch count). It lives in core, not
 * beside the HTTP server, because the controllers count too (binding, execution, work
 * status) and may not include the API. Lock-protected; any thread. */
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
/* Drop everything (tests). */
void fl_metrics_reset(void);

#endif
