/* metricsseries.h - kube-state-metrics series, as a Prometheus query API answers them, turned
 * back into the member objects they describe (metricsseries.c), for the metrics way in of
 * live status (metricsstatus.c; docs/internals/status.md, "The metrics way in").
 *
 * kube-state-metrics exports each field a workload's status has (replicas, updated, ready,
 * available, observed generation, conditions, a Pod's phase and waiting reasons) as one series
 * per object, labelled with the object's namespace and name; a Prometheus holding them for many
 * clusters adds a `cluster` label. The functions here rebuild, per (cluster, kind, namespace,
 * name), the minimal object JSON with exactly those fields at the paths the object has them
 * (`spec.replicas`, `status.readyReplicas`, `status.conditions[]`, ...), so that the same rules
 * (interp/livestate.c) judge it as they judge the object a member watch brings: the same object
 * gives the same state, reason and observed generation through either way.
 *
 * Pure: no I/O, no globals; any thread. */
#ifndef FL_METRICSSERIES_H
#define FL_METRICSSERIES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The kinds the metrics way reads, each with its series' common prefix and the label that
 * names the object (kube-state-metrics' own names). */
typedef struct fl_mseries_kind {
    const char *api_version, *kind;
    const char *prefix;     /* "kube_deployment_" */
    const char *name_label; /* "deployment" */
} fl_mseries_kind;

extern const fl_mseries_kind fl_mseries_kinds[];
extern const size_t fl_mseries_nkinds;

/* The kind's index in fl_mseries_kinds for a manifest's (apiVersion, kind), or -1: its group
 * must be the kind's ("apps", "batch", the core group), any version. */
int fl_mseries_kind_of(const char *api_version, const char *kind);

/* Bounds of one answer: more series, or a label value longer, and the answer is refused. */
#define FL_MSERIES_MAX_SERIES 1000000
#define FL_MSERIES_MAX_LABEL 1024

/* The instant query (PromQL) for kind k over the clusters named (a JSON array of strings, each
 * a DNS label, as Cluster names are): every series of the kind whose cluster label is one of
 * them. A heap string. */
char *fl_mseries_query(size_t k, const json_t *clusters);
/* The query of the clusters' heartbeat: the newest sample time per cluster of a series every
 * reporting cluster has (its namespaces'). A heap string. */
char *fl_mseries_heartbeat_query(const json_t *clusters);

/* Fold one /api/v1/query answer of kind k's query into objs: objs[cluster][key] is the object
 * the series describe, key fl_mseries_key's. Series of other metrics, or without a cluster,
 * namespace (but for cluster-scoped kinds, none here) or name label, are skipped. Returns 0, or
 * FL_EINVAL when the answer is not a successful instant vector of well-formed samples, with *err
 * (heap) saying where and what ("data.result[3].value: not [time, \"number\"]", Prometheus'
 * own error); objs may then hold part of it: the caller drops it. err may be NULL. */
int fl_mseries_fold(const json_t *answer, size_t k, json_t *objs, char **err);
/* The same from the answer's bytes (not JSON: FL_EINVAL, "the answer is not JSON: ..."). */
int fl_mseries_fold_text(const char *text, size_t len, size_t k, json_t *objs, char **err);

/* Read the heartbeat query's answer: heard[cluster] = the newest sample time in ms since the
 * epoch. 0 or FL_EINVAL with *err as fl_mseries_fold. */
int fl_mseries_heartbeats(const json_t *answer, json_t *heard, char **err);

/* "Kind\nnamespace\nname": the key of an object in objs. Heap. */
char *fl_mseries_key(const char *kind, const char *ns, const char *name);

#endif
