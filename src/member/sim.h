/* sim.h - the workload simulator behind `flotilla member`.
 *
 * A simulated member cluster is an in-process API instance (src/api/api.h) with its own
 * store. Nothing runs the pods of that cluster, so without help a Deployment applied to it
 * would never report a ready replica. The simulator plays the part of the controllers and
 * kubelets of a real cluster, the way kwok does: it watches each cluster's store and moves
 * the status of Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and Pods forward
 * (replicas become ready one by one at a configurable rate, Jobs complete after a while,
 * Pods run on a node). It also creates each cluster's Nodes, which give it capacity.
 *
 * Every change goes through fl_api_handle() as a merge patch (on /status, or on the
 * object for a Pod's spec.nodeName) with fieldManager "flotilla-member-simulator" and the
 * resourceVersion it read, so resourceVersion, generation, managedFields and watch
 * semantics are exactly those of a client writing over HTTP. Nothing is written when the
 * computed status equals the stored one, so a converged cluster is silent.
 *
 * An image whose registry or name is "fake" never pulls (see fl_sim_image_is_fake): its
 * Pods stay Pending with ImagePullBackOff, its workloads never get a ready replica.
 *
 * One thread serves every cluster (docs/internals/member-sim.md explains the loop, its
 * costs and its limits). Threads: every function here may be called from any thread,
 * except that fl_sim_free must not race other calls on the same simulator. */
#ifndef FL_MEMBER_SIM_H
#define FL_MEMBER_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"

/* The field manager (and User-Agent) of every write the simulator makes. */
#define FL_SIM_FIELD_MANAGER "flotilla-member-simulator"

typedef struct fl_sim_config {
    int tick_ms;                /* how often watches are polled and timers checked; 0 = 100 */
    double ready_per_second;    /* replicas becoming ready per second per workload; 0 = 10;
                                   < 0 = all at once */
    int job_seconds;            /* a Job completes this long after it started; 0 = 2; < 0 = at once */
    int nodes;                  /* Nodes created per cluster by fl_sim_add_cluster; 0 = 3; < 0 = none */
    const char *node_cpu;       /* each Node's capacity and allocatable; NULL = "8" */
    const char *node_memory;    /* NULL = "32Gi" */
    const char *node_pods;      /* NULL = "110" */
    int progress_deadline_override_s; /* > 0: used instead of every Deployment's
                                         spec.progressDeadlineSeconds (tests) */
} fl_sim_config;

typedef struct fl_sim fl_sim;

/* Start a simulator and its thread. cfg may be NULL (all defaults); it is copied, strings
 * included. Never NULL (allocation failure aborts, core/mem.h). */
fl_sim *fl_sim_new(const fl_sim_config *cfg);

/* Simulate cluster `name` served by `api` (borrowed: api and its store must outlive the
 * simulator). Creates the cluster's Nodes through the API before returning (Nodes that
 * already exist, e.g. after a restart, are left as they are), then hands the cluster to
 * the simulator thread, which lists what the store already holds, brings it up to date
 * and follows its changes. Returns 0, FL_EINVAL for a NULL/empty name or NULL api, or
 * FL_EEXIST if a cluster of that name was already added. Any thread. */
int fl_sim_add_cluster(fl_sim *s, const char *name, fl_api *api);

/* Number of status/spec writes the simulator has made so far (all clusters); for tests and
 * metrics. Any thread. */
uint64_t fl_sim_writes(fl_sim *s);

/* Stop the thread (promptly: it is woken, and checks between clusters) and free
 * everything the simulator owns. The clusters' APIs and stores are not touched.
 * NULL-safe. Not concurrently with other calls on s. */
void fl_sim_free(fl_sim *s);

/* True if a container image never pulls in a simulated cluster. With the reference split
 * as [registry/]path.../name[:tag][@digest]: the first component (a registry, with any
 * ":port" dropped, or the first path component) is "fake" or starts with "fake.", or the
 * image name (the last component, without tag or digest) is "fake". So "fake/nginx",
 * "fake.io/x/y", "fake:5000/nginx", "fake" and "docker.io/library/fake:1" are fake;
 * "nginx:fake", "myfake/nginx" and "docker.io/fakeapp" are not. Pure; any thread. */
bool fl_sim_image_is_fake(const char *image);

/* Resources of a simulated cluster: what its Nodes offer and what its running workloads
 * request. Quantities are CPU millicores, memory bytes and pod counts. */
typedef struct fl_sim_usage {
    int64_t allocatable_cpu_m, allocatable_memory, allocatable_pods;
    int64_t allocated_cpu_m, allocated_memory, allocated_pods;
    int nodes;
} fl_sim_usage;

/* Sum the cluster's Node allocatable, and the requests of what runs: per-pod requests of
 * each workload's pod template times its ready replicas (Deployments, standalone
 * ReplicaSets, StatefulSets, DaemonSets; active pods for Jobs), plus Pods that have a
 * node and no controller, are not finished, and are not fake. A container's request
 * defaults to its limit, as Kubernetes defaults it; an init container counts when it
 * asks for more than the app containers together. Reads the store only (no simulator
 * needed, no state kept), so the answer is right after a restart too. O(objects in the
 * cluster). Returns 0 and fills *out (zeroed on every path). Any thread. */
int fl_sim_cluster_usage(fl_api *api, fl_sim_usage *out);

/* The series a kube-state-metrics would export for the cluster served by api (its Deployments,
 * StatefulSets, DaemonSets, Jobs, Pods and Namespaces), in the Prometheus text format, without a
 * cluster label (sim_metrics.c). Reads the store only. A heap string of *len bytes. Any thread. */
char *fl_sim_metrics_text(fl_api *api, size_t *len);

/* Parse a Kubernetes quantity ("500m", "2", "1.5Gi", "1e3", "128974848") into *out, scaled
 * by `scale` (1000 gives millicores from cores). Returns 0 or FL_EINVAL. Pure. */
int fl_sim_parse_quantity(const char *s, int64_t scale, int64_t *out);

#endif
