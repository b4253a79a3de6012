/* sched_priv.h - what the scheduler's files share and nobody else includes (except
 * bench/sched.c, which walks the snapshot for its baseline).
 *
 * The pipeline of one decision, file by file:
 *   sched.c            snapshot build; binding parse; run: filters -> candidates (score,
 *                      available replicas) -> spread selection -> division -> result;
 *                      clusterAffinities fallback
 *   filter_affinity.c  ClusterAffinity (+ overflow tiers) through the shared matcher
 *   filter_taint.c     TaintToleration: taints parsed at snapshot build, tolerations
 *   filter_api.c       APIEnablement: apiEnablements interned into one bitset per cluster
 *   filter_eviction.c  ClusterEviction: gracefulEvictionTasks
 *   spread.c           SpreadConstraint filter and group/cluster selection
 *   divide.c           replica assignment: Duplicated, static weights, dynamic weights,
 *                      Aggregated, Webster apportionment, steady rescheduling
 *   components.c       multi-component workloads (spec.components): when they are
 *                      estimated, and the general estimator's complete sets per cluster
 *
 * Clusters in a snapshot are sorted by name, so a cluster's index orders like its name
 * and every "sort by name" below is a sort by index.
 *
 * Threads: the *_parse functions that take an arena run only inside
 * fl_sched_snapshot_new; everything else runs on the thread of one decision and reads the
 * snapshot only (fl_sched_affinity_bits also takes the memo's lock). Heap results are the
 * caller's unless a comment says the arena or snapshot owns them. */
#ifndef FL_SCHED_PRIV_H
#define FL_SCHED_PRIV_H

#include "sched/sched.h"
#include "policy/cluster_affinity.h"
#include "core/quantity.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ arena -- */

/* Bump allocator for a snapshot's strings and arrays: one free for all. */
struct fl_sched_arena {
    struct fl_sched_arena_blk *head;
};
void *fl_sched_arena_alloc(struct fl_sched_arena *a, size_t n);
char *fl_sched_arena_strdup(struct fl_sched_arena *a, const char *s);
void fl_sched_arena_free(struct fl_sched_arena *a);

/* String -> dense id (open addressing). Keys live in the arena. */
struct fl_sched_intern {
    const char **keys;
    size_t n, cap;            /* keys used / allocated */
    uint32_t *slots;          /* id + 1, 0 = empty */
    size_t nslots;            /* power of two */
};
/* id of key, or -1. */
int fl_sched_intern_find(const struct fl_sched_intern *t, const char *key);
/* id of key, adding it when new. */
int fl_sched_intern_add(struct fl_sched_intern *t, struct fl_sched_arena *a, const char *key);
void fl_sched_intern_free(struct fl_sched_intern *t);

/* ---------------------------------------------------------------- snapshot -- */

enum { FL_TAINT_OTHER = 0, FL_TAINT_NOSCHEDULE, FL_TAINT_PREFERNOSCHEDULE, FL_TAINT_NOEXECUTE };

struct fl_sched_taint {
    const char *key, *value, *effect;
    bool blocks;              /* NoSchedule or NoExecute: the effects the filter considers */
    const char *reason;       /* "cluster(s) had untolerated taint {k=v:NoSchedule}" */
};

/* Availability of one resource: allocatable - allocated - allocating, as Kubernetes'
 * Quantity.Value() (rounded up to whole units) and MilliValue(). */
struct fl_sched_avail {
    bool present;             /* allocatable lists the resource */
    int64_t value, milli;
};

struct fl_sched_cluster {
    const char *name;
    const char *invalid;      /* non-NULL: the Cluster cannot be used, and why */
    json_t *view;             /* name, labels, provider, region, zone(s): what the affinity
                                 matcher reads, copied so the snapshot owns it */
    const json_t *labels;     /* inside view; NULL when none */
    const char *provider, *region;  /* NULL when empty */
    const char **zones;       /* spec.zones, or the deprecated spec.zone */
    size_t nzones;
    int32_t provider_id, region_id;  /* ids in snap->topo, -1 when empty */
    int32_t *zone_ids;        /* nzones ids in snap->topo */
    struct fl_sched_taint *taints;
    size_t ntaints;
    uint64_t *api;            /* bit i: snapshot api key i is enabled */
    struct fl_sched_avail *avail;  /* one per snapshot resource id */
    int64_t allowed_pods;     /* pods allocatable - allocated - allocating, >= 0 */
    bool has_summary;         /* status.resourceSummary present */
    bool ready;               /* Ready condition True (kept for callers; Karmada does not
                                 filter on it: the not-ready taint does) */
    bool deleting;            /* metadata.deletionTimestamp set */
};

/* Affinity results memoized per snapshot: the compact JSON text of a ClusterAffinity ->
 * the bitset of clusters the shared matcher says it matches (NULL bits: all). Entries
 * are immutable once added and live as long as the snapshot, so readers keep pointers
 * after dropping the lock. The only mutable part of a snapshot. */
#define FL_SCHED_MEMO_MAX 4096
struct fl_sched_memo {
    pthread_mutex_t lock;
    struct fl_sched_intern keys;         /* key -> entry id */
    const uint64_t **bits;               /* per entry id */
    bool *all;                           /* per entry id: matches every cluster */
    struct fl_sched_arena arena;
};

struct fl_sched_snapshot {
    atomic_int refs;
    size_t n;
    size_t words;                        /* uint64_t words of a per-cluster bitset */
    struct fl_sched_cluster *clusters;   /* sorted by name */
    struct fl_sched_intern names;        /* name -> id; name_index[id] = first index */
    int32_t *name_index;
    struct fl_sched_memo *memo;
    struct fl_sched_intern apis;         /* "groupVersion/kind" -> bit */
    size_t api_words;
    struct fl_sched_intern res;          /* resource name -> avail index */
    struct fl_sched_intern topo;         /* provider, region and zone names -> ids */
    struct fl_sched_arena arena;
};

/* Index of a cluster by name, or -1. */
int fl_sched_snapshot_find(const fl_sched_snapshot *snap, const char *name);

/* Parse Cluster spec.taints into the arena. Returns NULL, or a reason naming the field
 * (arena or static string) when the list is malformed. */
const char *fl_sched_taints_parse(const json_t *taints, struct fl_sched_arena *a, struct fl_sched_taint **out,
                                  size_t *n);

/* Parse Cluster status.apiEnablements: adds each "groupVersion/kind" to t and appends its
 * id to *ids (heap, grown). Returns NULL or a reason naming the field. */
const char *fl_sched_apis_parse(const json_t *enablements, struct fl_sched_intern *t, struct fl_sched_arena *a,
                                int **ids, size_t *nids);

/* ------------------------------------------------------------ the binding -- */

enum { FL_STRAT_DUPLICATED = 0, FL_STRAT_STATIC_WEIGHT, FL_STRAT_DYNAMIC_WEIGHT, FL_STRAT_AGGREGATED };
enum { FL_SPREAD_CLUSTER = 0, FL_SPREAD_REGION, FL_SPREAD_ZONE, FL_SPREAD_PROVIDER, FL_SPREAD_LABEL };

struct fl_sched_tol {
    const char *key, *op, *value, *effect;   /* borrowed from the spec; "" when absent */
};

struct fl_sched_spread {
    int field;                /* FL_SPREAD_* */
    const char *label;        /* spreadByLabel */
    int64_t min, max;         /* minGroups (defaulted to 1), maxGroups */
};

struct fl_sched_weight_rule {
    const uint64_t *target;   /* clusters the targetCluster matches; NULL = all */
    int64_t weight;
};

/* One affinity to filter by: the primary and, for clusterAffinities terms, its overflow
 * tiers (overflowAffinities), in order. Each as the bitset of matching clusters (see
 * fl_sched_affinity_bits); NULL matches every cluster. */
struct fl_sched_term {
    const char *name;         /* affinityName; NULL for placement.clusterAffinity */
    const uint64_t *primary;
    const uint64_t **overflow;
    size_t noverflow;
    bool has_overflow;        /* overflowAffinities present (even empty) */
};

/* Bitsets a decision had to compute itself (the memo was full); freed with the binding. */
struct fl_sched_owned {
    uint64_t **v;
    size_t n, cap;
};

struct fl_sched_req {
    int res;                  /* snapshot resource id, -1 when no cluster has it */
    bool cpu;
    int64_t value, milli;     /* Value(), MilliValue() of the request */
};

struct fl_sched_binding {
    int32_t replicas;
    bool has_requirements;    /* replicaRequirements present */
    size_t ncomponents;
    /* spec.components as one set: pods (every component's replicas) and the demand per
     * resource (replicas x request summed); multi_template when Karmada estimates the
     * binding by sets (fl_sched_components_applicable) */
    int64_t set_pods;
    struct fl_sched_req *set_reqs;
    size_t nset_reqs;
    bool multi_template;
    bool workload;            /* Karmada's IsWorkload() */
    struct fl_sched_req *reqs;
    size_t nreqs;
    int api;                  /* snapshot api id of resource apiVersion/kind, -1 */
    bool name_desc;           /* Webster tie-break: names descending (from resource.uid) */

    struct fl_sched_term single;    /* placement.clusterAffinity */
    struct fl_sched_term *terms;    /* placement.clusterAffinities */
    size_t nterms;
    bool use_terms;

    struct fl_sched_tol *tols;
    size_t ntols;

    struct fl_sched_spread *spreads;  /* in spec order */
    size_t nspreads;

    bool has_strategy;        /* replicaScheduling present (else Duplicated) */
    int strategy;             /* FL_STRAT_* */
    bool has_weight_pref;     /* weightPreference present */
    struct fl_sched_weight_rule *rules;
    size_t nrules;

    /* spec.clusters: per snapshot index the previous replicas, -1 when not targeted;
     * and the targeted indexes in spec order (clusters the snapshot lacks are left out) */
    int32_t *prev;
    uint32_t *prev_order;
    size_t nprev;
    bool any_prev;            /* spec.clusters non-empty (even with unknown names) */

    uint8_t *evicting;        /* per index: a graceful eviction task is pending */
    struct fl_sched_owned owned;
    bool fresh;               /* rescheduleTriggeredAt after lastScheduledTime */
    const char *observed;     /* status.schedulerObservingAffinityName or NULL */
};

/* A ResourceList value (a quantity string, or a bare integer) into q; false when it is
 * neither. */
bool fl_sched_quantity_parse(const json_t *v, fl_quantity *q);
/* Quantity.Value() (unit 10^9 nano) and MilliValue() (10^6): rounded up, clamped to int64. */
int64_t fl_sched_quantity_scaled(fl_quantity_nano nano, int64_t unit);

/* --------------------------------------------------------------- components -- */

/* Parse spec.components (an array, checked by the caller) into b's set: set_pods,
 * set_reqs. 0, or FL_EINVAL with *err naming the field ("spec.components[1].replicas: ..."). */
int fl_sched_components_parse(const fl_sched_snapshot *snap, const json_t *comps, struct fl_sched_binding *b,
                              char **err);
/* Karmada's isMultiTemplateSchedulingApplicable: components present and a cluster spread
 * constraint with minGroups 1 and maxGroups 1. Needs b's spreads parsed. */
bool fl_sched_components_applicable(const struct fl_sched_binding *b);
/* The general estimator's MaxAvailableComponentSets for cluster c: complete sets it can
 * still hold (0 without a resource summary). */
int32_t fl_sched_components_estimate(const struct fl_sched_binding *b, const struct fl_sched_cluster *c);

/* ------------------------------------------------------------------- filters -- */

#define FL_PLUGIN_AFFINITY "ClusterAffinity"
#define FL_PLUGIN_TAINT "TaintToleration"
#define FL_PLUGIN_API "APIEnablement"
#define FL_PLUGIN_EVICTION "ClusterEviction"
#define FL_PLUGIN_SPREAD "SpreadConstraint"
#define FL_PLUGIN_DELETING "ClusterDeleting"
#define FL_PLUGIN_INVALID "InvalidCluster"

/* The clusters of snap that affinity aff (JSON at path, for messages) matches, as a
 * bitset: from the snapshot's memo, or computed through the shared matcher (and
 * memoized, or kept in *owned when the memo is full). *bits NULL means every cluster
 * (absent or empty affinity). Returns 0, or FL_EINVAL with *err naming the field. */
int fl_sched_affinity_bits(const fl_sched_snapshot *snap, const json_t *aff, const char *path,
                           struct fl_sched_owned *owned, const uint64_t **bits, char **err);
void fl_sched_memo_free(struct fl_sched_memo *m);
/* Parse a clusterAffinities term (affinityName, inline affinity, overflowAffinities). */
int fl_sched_term_parse(const fl_sched_snapshot *snap, const json_t *term, size_t i, struct fl_sched_owned *owned,
                        struct fl_sched_term *out, char **err);
void fl_sched_term_clear(struct fl_sched_term *t);
/* Is cluster idx in bits (NULL = all)? */
static inline bool fl_sched_bit(const uint64_t *bits, uint32_t idx)
{
    return !bits || (bits[idx / 64] >> (idx % 64) & 1);
}
/* ClusterAffinity filter for term t: NULL when c passes (workloads may pass through an
 * overflow tier), else the reason. */
const char *fl_sched_filter_affinity(const struct fl_sched_binding *b, const struct fl_sched_term *t, uint32_t idx);
/* Overflow tier of cluster idx under term t: 0 primary, i+1 for overflowAffinities[i],
 * 1000 none. */
int32_t fl_sched_overflow_order(const struct fl_sched_term *t, uint32_t idx);

int fl_sched_tolerations_parse(const json_t *tols, struct fl_sched_tol **out, size_t *n, char **err);
const char *fl_sched_filter_taint(const struct fl_sched_binding *b, uint32_t idx, const struct fl_sched_cluster *c);

const char *fl_sched_filter_api(const struct fl_sched_binding *b, uint32_t idx, const struct fl_sched_cluster *c);

int fl_sched_evictions_parse(const json_t *tasks, const fl_sched_snapshot *snap, uint8_t *evicting, char **err);
const char *fl_sched_filter_eviction(const struct fl_sched_binding *b, uint32_t idx);

/* ------------------------------------------------------- spread and division -- */

/* A feasible cluster as the selection and division steps see it (Karmada's
 * ClusterDetailInfo). */
struct fl_sched_cand {
    uint32_t idx;             /* snapshot index */
    int32_t overflow;         /* overflow tier, 0 without overflow affinities */
    int32_t alloc;            /* AllocatableReplicas: the estimator's answer */
    int64_t score;            /* ClusterLocality: 100 when already targeted */
    int64_t avail;            /* AvailableReplicas: alloc + replicas already assigned */
};

int fl_sched_spreads_parse(const json_t *scs, struct fl_sched_spread **out, size_t *n, char **err);
/* SpreadConstraint filter: NULL or the reason. */
const char *fl_sched_filter_spread(const struct fl_sched_binding *b, const struct fl_sched_cluster *c);

/* Do spread constraints take part in selection (some exist, and static weights do not
 * override them)? When they do not, and the division is not Aggregated, the order of the
 * candidates cannot change the result and the caller skips sorting them. */
bool fl_sched_spread_active(const struct fl_sched_binding *b);

/* Choose clusters among cands (sorted: overflow asc, score desc, avail desc, name) as
 * Karmada's SelectBestClusters. Writes the chosen ones to sel (capacity ncands) in
 * Karmada's order. Returns FL_SCHED_SUCCESS, or FL_SCHED_ERROR with *msg (heap). */
int fl_sched_spread_select(const struct fl_sched_binding *b, const fl_sched_snapshot *snap,
                           const struct fl_sched_cand *cands, size_t ncands, struct fl_sched_cand *sel, size_t *nsel,
                           char **msg);

/* parse placement.replicaScheduling into b */
int fl_sched_strategy_parse(const fl_sched_snapshot *snap, const json_t *rs, struct fl_sched_binding *b, char **err);

/* Assign replicas to the selected clusters as Karmada's AssignReplicas. rep (one per
 * snapshot index, all -1 on entry) receives the replicas of every cluster in the result
 * (0 for non-workloads; workloads' clusters with 0 replicas are left out). Returns
 * FL_SCHED_SUCCESS, or FL_SCHED_UNSCHEDULABLE / FL_SCHED_ERROR with *msg (heap, without
 * the "failed to assign replicas: " prefix). */
int fl_sched_assign(const struct fl_sched_binding *b, const struct fl_sched_term *term,
                    const fl_sched_snapshot *snap, const struct fl_sched_cand *sel, size_t nsel, int32_t *rep,
                    char **msg);

/* Webster (Sainte-Lague) apportionment of seats among n parties, Karmada's
 * AllocateWebsterSeats from zero seats: highest votes/(2*seats+1) first; ties to fewer
 * seats, then name ascending (or descending when name_desc). idx orders names. */
void fl_sched_webster(const int64_t *votes, const uint32_t *idx, size_t n, int64_t seats, bool name_desc,
                      int64_t *out);

#endif
