/* member.h - simulated member clusters: many virtual clusters in one process.
 *
 * Each virtual cluster is a full API instance (src/api/) with its own in-memory store,
 * its own kind registry (its CRDs are its own), its own bearer token and kubeconfig, served
 * under https://ADDR/clusters/<name>/ behind one listener, with the workload simulator
 * (sim.h) moving its workloads' status forward. Faults can be injected per cluster at run
 * time: the API down (503), slow (a delay per request), or partitioned (requests held,
 * then 503) — through fl_member_set_fault or the host's admin endpoint
 * PUT /admin/clusters/<name>/fault {"down":bool,"slowMs":N,"partition":bool} (what
 * `flotilla ctl fault` sends, with DIR/admin.kubeconfig). */
#ifndef FL_MEMBER_H
#define FL_MEMBER_H

#include <stdbool.h>

#include "member/sim.h"

typedef struct fl_member_host fl_member_host;

typedef struct fl_member_host_config {
    const char *data_dir;      /* PKI, kubeconfigs: DIR/<name>.kubeconfig, DIR/admin.kubeconfig */
    const char *listen;        /* "127.0.0.1:0" picks a port */
    int clusters;              /* how many virtual clusters */
    const char *name_prefix;   /* names are <prefix>1..<prefix>N; NULL = "member" */
    int first_index;           /* 0 = 1 */
    bool insecure_http;        /* plain HTTP, no tokens (loopback only; checked by the caller) */
    fl_sim_config sim;         /* workload simulator settings */
} fl_member_host_config;

/* Start the host and its clusters. *out set on every path; *err (heap) says why on failure. */
int fl_member_host_start(const fl_member_host_config *cfg, fl_member_host **out, char **err);
/* URL of the listener, e.g. "https://127.0.0.1:41234" (owned by the host). */
const char *fl_member_host_url(const fl_member_host *h);
/* Set a cluster's faults. Returns 0 or FL_ENOTFOUND. Any thread. */
int fl_member_set_fault(fl_member_host *h, const char *name, bool down, int slow_ms, bool partition);
/* Stop serving, stop the simulator, free everything. NULL-safe. */
void fl_member_host_stop(fl_member_host *h);

#endif
