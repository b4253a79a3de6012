/* sim_priv.h - what the workload simulator's files share, and nothing else includes.
 *
 * The simulator (sim.h) is one object in two files:
 *   sim.c         the loop: the thread, each cluster's store watch, the records of the
 *                 objects still converging and their heap of due times, the writes through
 *                 the API, the Nodes, resource usage;
 *   sim_status.c  the status a real cluster would report now for each kind simulated
 *                 (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Pods).
 * Everything here runs on the simulator's thread, which owns the state below but for the
 * part of struct fl_sim under its mutex. */
#ifndef FL_MEMBER_SIM_PRIV_H
#define FL_MEMBER_SIM_PRIV_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/htab.h"
#include "core/json_get.h"
#include "member/sim.h"

/* The workloads (through SK_POD, whose pods use a node's resources), then the kinds that
 * report on them or on traffic (sim_status_ext.c). */
enum sim_kind { SK_NONE = -1, SK_DEPLOY, SK_RS, SK_STS, SK_DS, SK_JOB, SK_POD, SK_HPA, SK_PDB, SK_ING, SK_SVC, SK_COUNT };

/* A converging object: timing state, its place in the heap. */
typedef struct sim_obj {
    fl_hnode node;              /* in its cluster's table, by key */
    struct sim_cluster *c;
    size_t heap_i;              /* index in fl_sim.heap, SIZE_MAX when not queued */
    int64_t due;                /* monotonic ms at which to evaluate again */
    int64_t since;              /* growth: monotonic ms at which `base` replicas were ready */
    int64_t start;              /* Job: monotonic ms at which it started; 0 = unknown */
    int32_t base, target;       /* growth: ready count at `since`, and the count aimed at */
    bool growing;
    char key[];
} sim_obj;

typedef struct sim_cluster {
    char *name;
    fl_api *api;
    fl_watch *w;                /* NULL: (re-)list before following events */
    bool dead;                  /* the store closed under us: ignore from now on */
    fl_htab objs;               /* the converging objects (sim_obj), by key */
    uint32_t next_node;         /* round-robin scheduling cursor */
    uint32_t next_ip;           /* pod IP allocator */
} sim_cluster;

struct fl_sim {
    fl_sim_config cfg;
    char *node_cpu, *node_memory, *node_pods;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC; signalled on add and stop */
    atomic_bool stop;
    /* under mu */
    sim_cluster **pending;
    size_t npending, cappending;
    char **names;               /* every cluster ever added, for FL_EEXIST */
    size_t nnames, capnames;
    /* owned by the thread */
    sim_cluster **cl;
    size_t ncl, capcl;
    sim_obj **heap;
    size_t nheap, capheap;
    atomic_uint_fast64_t writes;
};

/* A stored object of a simulated kind, as its store key names it (parse_key). */
typedef struct sim_ref {
    enum sim_kind kind;
    char ns[254], name[254];
} sim_ref;

/* One evaluation of one object. */
typedef struct sim_eval {
    fl_sim *s;
    sim_cluster *c;
    const char *key;
    const sim_ref *ref;
    json_t *obj;            /* the stored object (owned) */
    int64_t now;            /* monotonic ms */
    time_t wall;            /* seconds since the epoch */
    char nows[32];          /* wall as RFC 3339 */
    int64_t due;            /* out: next look (monotonic ms), 0 = converged */
} sim_eval;

/* FNV-1a: the template hash in names, and the ids made from names. */
static inline uint32_t fnv1a(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 16777619u;
    }
    return h;
}

/* The string at a dotted path of object keys (fl_json_path_str), or dflt. */
static inline const char *jstr_or(const json_t *o, const char *path, const char *dflt)
{
    const char *s = fl_json_path_str(o, path);
    return s ? s : dflt;
}

/* ---- sim.c ---- */

/* The record of the converging object key in c, made when missing. Never NULL. */
sim_obj *fl_sim_obj_get(sim_cluster *c, const char *key);

/* Merge-patch obj (or its subresource sub) with {metadata.resourceVersion pinned, field:
 * patch}. Takes the reference to patch. Returns the HTTP code; *out (may be NULL) gets the
 * decoded 2xx response body (new reference) or NULL. */
int fl_sim_patch_obj(fl_sim *s, sim_cluster *c, const sim_ref *r, const char *sub, const json_t *obj,
                     const char *field, json_t *patch, json_t **out);

/* Whether a pod spec has a container or init container whose image never pulls. */
bool fl_sim_podspec_fake(const json_t *ps);

/* ---- sim_status.c ---- */

/* The status x->obj should have now (new reference), or NULL to leave it alone. May replace
 * x->obj (a Pod bound to a node) and sets x->due when the object needs another look. */
json_t *fl_sim_status(sim_eval *x);

/* ---- sim_status_ext.c ---- */

/* HorizontalPodAutoscaler, PodDisruptionBudget, Ingress, Service: as fl_sim_status. */
json_t *fl_sim_status_hpa(sim_eval *x);
json_t *fl_sim_status_pdb(sim_eval *x);
json_t *fl_sim_status_lb(sim_eval *x);

#endif
