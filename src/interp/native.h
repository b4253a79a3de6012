/* native.h - what the native backend's files share; private to src/interp/.
 *
 * The native backend answers the interpreter's operations for Kubernetes' built-in
 * kinds, as Karmada's default interpreter does. It is split by concern: native.c holds
 * the table of kinds, the backend's vtable, revise replica, retain, health and the field
 * accessors below; native_replica.c replicas and requirements; native_status.c reflect
 * and aggregate status; native_deps.c dependencies.
 *
 * Every function is pure (reads its inputs, returns new references): any thread. Errors
 * follow interp.h: FL_EINVAL with a malloc'd *err naming the field ("spec.replicas:
 * must be an integer"); the registry adds the backend and object around it. */
#ifndef FL_INTERP_NATIVE_H
#define FL_INTERP_NATIVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wellknown.h"
#include "interp/interp.h"

extern const fl_interp_backend fl_native_backend;

/* FL_TEMPLATE_GENERATION_ANNOTATION (core/wellknown.h), which Karmada puts on every
 * manifest: the template's metadata.generation the manifest was rendered from. Reflected
 * as resourceTemplateGeneration. */

/* ---- field accessors (native.c) ---- */

enum fl_native_type { FL_NT_ANY, FL_NT_OBJECT, FL_NT_ARRAY, FL_NT_STRING, FL_NT_INT };

/* "base.key" (or "key" when base is empty) into buf: the name of a field in messages. */
const char *fl_native_path(char *buf, size_t cap, const char *base, const char *key);
/* "base[i]" into buf. */
const char *fl_native_index(char *buf, size_t cap, const char *base, size_t i);

/* o[key] when it has the given type; missing or null gives *out NULL and 0 (o itself may
 * be NULL). A value of another type is FL_EINVAL naming base.key. Borrowed reference. */
int fl_native_get(const json_t *o, const char *base, const char *key, enum fl_native_type type, const json_t **out,
                  char **err);

/* Walk the dotted path of objects from o ("spec.template.spec"); *out is the object at
 * the end, or NULL when a part is missing. A part that is not an object is FL_EINVAL. */
int fl_native_obj_at(const json_t *o, const char *dotted, const json_t **out, char **err);

/* o[key] as an integer (an integral real is accepted); dflt when missing or null. */
int fl_native_int(const json_t *o, const char *base, const char *key, int64_t dflt, int64_t *out, char **err);

/* o[key] as a string; NULL when missing or null. */
int fl_native_str(const json_t *o, const char *base, const char *key, const char **out, char **err);

/* Set o[key] to v when v is not zero, else remove it: Kubernetes omits zero counts. */
void fl_native_set_count(json_t *o, const char *key, int64_t v);

/* The condition of the given type in the conditions array (may be NULL), or NULL. */
const json_t *fl_native_condition(const json_t *conditions, const char *type);

/* ---- replicas (native_replica.c) ---- */

/* Deployment, StatefulSet, ReplicaSet: spec.replicas (default 1) and spec.template. */
int fl_native_replicas_workload(const json_t *obj, int64_t *replicas, json_t **req, char **err);
/* Job: spec.parallelism (default 1) capped by spec.completions. */
int fl_native_replicas_job(const json_t *obj, int64_t *replicas, json_t **req, char **err);
/* Pod: always 1, requirements from its own spec. */
int fl_native_replicas_pod(const json_t *obj, int64_t *replicas, json_t **req, char **err);

/* ---- status helpers (native_status.c) ---- */

/* Cluster names for a condition message, bounded: the first few and a count, so that a
 * fleet of thousands does not turn one condition into a megabyte. Zero-initialise. */
struct fl_native_names {
    char buf[512];
    size_t count;
};
void fl_native_names_add(struct fl_native_names *n, const char *name);
/* The list as text ("a, b and 3 more") into out. */
const char *fl_native_names_text(struct fl_native_names *n, char *out, size_t cap);

/* An aggregation item's clusterName, or "items[i]" (into buf) when it has none. */
const char *fl_native_cluster_of(const json_t *item, size_t i, char *buf, size_t cap);

/* The later / earlier of two RFC 3339 UTC times; either may be NULL. */
const char *fl_native_later(const char *a, const char *b);
const char *fl_native_earlier(const char *a, const char *b);

/* A copy of the template obj and, in *st, its status object to fill: a copy of the old
 * status when keep_old, else a new empty one. Returns the copy (caller owns): its status is
 * its own, its other members are obj's, shared and read-only. */
json_t *fl_native_output(const json_t *obj, bool keep_old, json_t **st);

/* ---- reflect and aggregate ---- */

int fl_native_reflect_deployment(const json_t *obj, json_t **status, char **err);
int fl_native_reflect_replicaset(const json_t *obj, json_t **status, char **err);
int fl_native_reflect_statefulset(const json_t *obj, json_t **status, char **err);
int fl_native_reflect_daemonset(const json_t *obj, json_t **status, char **err);
int fl_native_reflect_service(const json_t *obj, json_t **status, char **err);
int fl_native_reflect_job(const json_t *obj, json_t **status, char **err);
/* Every other kind: the whole .status (NULL when it has none). */
int fl_native_reflect_whole(const json_t *obj, json_t **status, char **err);

int fl_native_aggregate_deployment(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_replicaset(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_statefulset(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_daemonset(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_job(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_cronjob(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_pod(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_service(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_ingress(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_pvc(const json_t *obj, const json_t *items, json_t **out, char **err);

/* HorizontalPodAutoscaler and PodDisruptionBudget (native_policy.c) */
int fl_native_reflect_hpa(const json_t *obj, json_t **status, char **err);
int fl_native_reflect_pdb(const json_t *obj, json_t **status, char **err);
int fl_native_aggregate_hpa(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_aggregate_pdb(const json_t *obj, const json_t *items, json_t **out, char **err);
int fl_native_health_hpa(const json_t *obj, enum fl_health *h, char **err);
int fl_native_health_pdb(const json_t *obj, enum fl_health *h, char **err);

/* ---- dependencies (native_deps.c) ---- */

int fl_native_deps_pod(const json_t *obj, json_t **deps, char **err);
int fl_native_deps_workload(const json_t *obj, json_t **deps, char **err);    /* spec.template */
int fl_native_deps_statefulset(const json_t *obj, json_t **deps, char **err); /* minus claim templates */
int fl_native_deps_cronjob(const json_t *obj, json_t **deps, char **err);     /* spec.jobTemplate */
int fl_native_deps_ingress(const json_t *obj, json_t **deps, char **err);     /* TLS Secrets */

#endif
