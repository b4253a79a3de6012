/* sched.h - the scheduler core: for one ResourceBinding, which member clusters get it
 * and how many replicas each.
 *
 * The decision follows Karmada's scheduler (pkg/scheduler: core/, framework/plugins/,
 * core/spreadconstraint/) field for field; docs/internals/scheduler.md explains each
 * step and lists where and why we differ. This module is pure: it reads a binding's
 * spec (and status) as JSON and a prepared snapshot of the clusters, and returns a
 * decision. It writes nothing; the scheduler controller turns the result into
 * binding.spec.clusters, status.schedulerObservingAffinityName, the Scheduled condition
 * and events.
 *
 * Two objects:
 *   fl_sched_snapshot  every Cluster, parsed once (labels, provider/region/zones, taints,
 *                      API enablements as a bitset, deletion, resource summary as exact
 *                      per-resource availability). Build a new one whenever the set of
 *                      Clusters or any Cluster changes; it is immutable and reference
 *                      counted, so decisions on many threads may share it while a new one
 *                      is built.
 *   fl_sched_result    one decision: outcome (Karmada's condition reason and message), the
 *                      target clusters sorted by name, the affinity term used, and for every
 *                      cluster that was filtered out the plugin and a one-line reason. It
 *                      holds a reference on the snapshot, whose strings it points into.
 *
 * Errors: fl_sched_run returns FL_EINVAL (with a message naming the field, e.g.
 * "spec.placement.replicaScheduling.replicaSchedulingType: ...") only for malformed
 * input; every scheduling outcome, including Karmada's failures, is a result. */
#ifndef FL_SCHED_SCHED_H
#define FL_SCHED_SCHED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_sched_snapshot fl_sched_snapshot;

/* Build a snapshot from n cluster.karmada.io/v1alpha1 Cluster objects (JSON). Nothing of
 * the input is retained: the objects may change or go away afterwards. A Cluster that
 * cannot be used (no metadata.name, a field of the wrong type, a quantity that does not
 * parse, a duplicate name) does not fail the build: it is kept, counted among "all
 * clusters", and filtered out of every decision with plugin "InvalidCluster" and a
 * reason naming the field. Returns 0 and *out (reference count 1; release with
 * fl_sched_snapshot_free). Never fails today; the int return keeps the usual shape.
 * Any thread. */
int fl_sched_snapshot_new(const json_t *const *clusters, size_t n, fl_sched_snapshot **out);

/* Take another reference (for another thread, or to keep a snapshot while a new one is
 * published). Returns snap. Any thread. */
fl_sched_snapshot *fl_sched_snapshot_ref(fl_sched_snapshot *snap);

/* Drop a reference; the last one frees. NULL is a no-op. Any thread. */
void fl_sched_snapshot_free(fl_sched_snapshot *snap);

/* Number of clusters in the snapshot (including invalid and deleting ones). */
size_t fl_sched_snapshot_count(const fl_sched_snapshot *snap);

/* Karmada's binding condition reasons, in the order of enum fl_sched_outcome. */
enum fl_sched_outcome {
    FL_SCHED_SUCCESS = 0,      /* "Success": write targets to spec.clusters */
    FL_SCHED_NO_CLUSTER_FIT,   /* "NoClusterFit": no cluster passed the filters; targets is
                                  empty and Karmada writes it (clears spec.clusters) */
    FL_SCHED_UNSCHEDULABLE,    /* "Unschedulable": replicas do not fit; keep spec.clusters */
    FL_SCHED_ERROR,            /* "SchedulerError": e.g. spread constraints cannot be met;
                                  keep spec.clusters */
};

typedef struct fl_sched_target {
    const char *name;          /* cluster name */
    int32_t replicas;          /* 0 for kinds without replicas */
} fl_sched_target;

typedef struct fl_sched_filtered {
    const char *cluster;       /* cluster name ("" for an InvalidCluster without one) */
    const char *plugin;        /* "ClusterAffinity", "TaintToleration", "APIEnablement",
                                  "ClusterEviction", "SpreadConstraint", or ours:
                                  "ClusterDeleting", "InvalidCluster" */
    const char *reason;        /* one line, Karmada's wording where it has one, e.g.
                                  "cluster(s) had untolerated taint {key:NoSchedule}" */
} fl_sched_filtered;

/* The algorithm's steps, timed for the scheduler's metrics (Karmada's schedule_step names:
 * Filter, Select, AssignReplicas; scoring is part of selecting here). */
enum fl_sched_step { FL_SCHED_STEP_FILTER, FL_SCHED_STEP_SELECT, FL_SCHED_STEP_ASSIGN, FL_SCHED_NSTEPS };

typedef struct fl_sched_result {
    int outcome;               /* enum fl_sched_outcome */
    /* nanoseconds spent in each step (enum fl_sched_step), over every clusterAffinities term
     * tried; a step not reached is 0 */
    int64_t step_ns[FL_SCHED_NSTEPS];
    const char *reason;        /* the condition reason for outcome ("Success", ...) */
    const char *message;       /* the condition message, Karmada's wording */
    bool update_clusters;      /* true: write targets to spec.clusters (Success, and
                                  NoClusterFit which clears it); false: leave it */
    const fl_sched_target *targets;   /* sorted by name */
    size_t ntargets;
    /* status.schedulerObservingAffinityName to record when placement uses
     * clusterAffinities: the term that produced the result, or the binding's previous
     * value when every term failed (NULL if it had none). NULL when placement has no
     * clusterAffinities: leave the status field alone then. */
    const char *affinity_name;
    /* Clusters filtered out for the affinity term reported (the successful one, or the
     * first when all failed), in name order. */
    const fl_sched_filtered *filtered;
    size_t nfiltered;
} fl_sched_result;

typedef struct fl_sched_opts {
    /* Karmada's --enable-empty-workload-propagation: every selected cluster appears in
     * the result even when it gets 0 replicas (so a workload scaled to 0 keeps its
     * clusters). Off by default, as upstream. */
    bool empty_workload_propagation;
} fl_sched_opts;

/* Decide for one binding. spec is the ResourceBinding's spec (placement, replicas,
 * replicaRequirements, components, resource, clusters, gracefulEvictionTasks,
 * rescheduleTriggeredAt); status is its status or NULL (schedulerObservingAffinityName,
 * lastScheduledTime). opts may be NULL (defaults). Returns 0 and *out (free with
 * fl_sched_result_free), or FL_EINVAL with *out NULL and *err (heap, caller frees) naming
 * the offending field. *out and *err are written on every path. Reads snap only: any
 * number of threads may run decisions on one snapshot at once. */
int fl_sched_run(fl_sched_snapshot *snap, const json_t *spec, const json_t *status, const fl_sched_opts *opts,
                 fl_sched_result **out, char **err);

/* Free a result (and its reference on the snapshot). NULL is a no-op. */
void fl_sched_result_free(fl_sched_result *r);

/* Whether toleration tol (a placement.clusterTolerations entry) tolerates taint (a Cluster
 * spec.taints entry), as the TaintToleration filter decides it: Kubernetes' ToleratesTaint
 * with Lt/Gt disabled. tolerationSeconds is not looked at (the taint eviction's business).
 * A field of the wrong type tolerates nothing. Pure; any thread. */
bool fl_sched_tolerates(const json_t *tol, const json_t *taint);

#endif
