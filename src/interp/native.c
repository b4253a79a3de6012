/* native.c - the native backend: Karmada's default interpreter for built-in kinds.
 *
 * The table of kinds at the bottom is the one place that says which built-in kind has
 * which hook; the backend's has() and its operations both read it, so they cannot
 * disagree. Two operations are not in the table because they apply to every kind, as in
 * Karmada: retain (fl_retain's generic rules fit any object) and reflect status (kinds
 * without a rule report their whole .status). This file also holds the rules too small
 * for a file of their own (revise replica, retain's extra Secret rule, health) and the
 * field accessors every native file uses to read objects without trusting their types.
 * The rules, and where each came from, are in docs/internals/interpreter.md. */
#include "interp/native.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "interp/retain.h"

/* ---- field accessors ---- */

const char *fl_native_path(char *buf, size_t cap, const char *base, const char *key)
{
    snprintf(buf, cap, "%s%s%s", base && *base ? base : "", base && *base ? "." : "", key);
    return buf;
}

const char *fl_native_index(char *buf, size_t cap, const char *base, size_t i)
{
    snprintf(buf, cap, "%s[%zu]", base, i);
    return buf;
}

static const char *const type_words[] = {
    [FL_NT_ANY] = "any value", [FL_NT_OBJECT] = "an object", [FL_NT_ARRAY] = "an array",
    [FL_NT_STRING] = "a string", [FL_NT_INT] = "an integer",
};

static bool is_int(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    /* YAML tools sometimes write 3 as 3.0; Kubernetes' decoder accepts integral floats */
    double d = json_is_real(v) ? json_real_value(v) : 0.5;
    return d == floor(d) && fabs(d) < 9.0e18;
}

static bool type_ok(const json_t *v, enum fl_native_type type)
{
    switch (type) {
    case FL_NT_OBJECT: return json_is_object(v);
    case FL_NT_ARRAY: return json_is_array(v);
    case FL_NT_STRING: return json_is_string(v);
    case FL_NT_INT: return is_int(v);
    default: return true;
    }
}

int fl_native_get(const json_t *o, const char *base, const char *key, enum fl_native_type type, const json_t **out,
                  char **err)
{
    *out = NULL;
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!type_ok(v, type)) {
        char p[512];
        *err = fl_asprintf("%s: must be %s", fl_native_path(p, sizeof p, base, key), type_words[type]);
        return FL_EINVAL;
    }
    *out = v;
    return 0;
}

int fl_native_obj_at(const json_t *o, const char *dotted, const json_t **out, char **err)
{
    char path[512] = "", part[128];
    *out = NULL;
    for (const char *p = dotted; p && *p && o;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        const json_t *next;
        int rc = fl_native_get(o, path, part, FL_NT_OBJECT, &next, err);
        if (rc)
            return rc;
        char tmp[512];
        fl_native_path(tmp, sizeof tmp, path, part);
        memcpy(path, tmp, sizeof path);
        o = next;
        p = dot ? dot + 1 : NULL;
    }
    *out = o;
    return 0;
}

int fl_native_int(const json_t *o, const char *base, const char *key, int64_t dflt, int64_t *out, char **err)
{
    const json_t *v;
    int rc = fl_native_get(o, base, key, FL_NT_INT, &v, err);
    *out = rc || !v ? dflt : json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)json_real_value(v);
    return rc;
}

int fl_native_str(const json_t *o, const char *base, const char *key, const char **out, char **err)
{
    const json_t *v;
    int rc = fl_native_get(o, base, key, FL_NT_STRING, &v, err);
    *out = v ? json_string_value(v) : NULL;
    return rc;
}

void fl_native_set_count(json_t *o, const char *key, int64_t v)
{
    if (v)
        json_object_set_new(o, key, json_integer(v));
    else
        json_object_del(o, key);
}

const json_t *fl_native_condition(const json_t *conditions, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(conditions, i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

/* ---- revise replica ---- */

/* A copy of obj with spec.<field> = replicas. Karmada only overwrites a field that is
 * there (its templates are defaulted by the apiserver); ours may come without it, and a
 * missing count means 1 to the member, so the field is always written. */
static int revise(const json_t *obj, const char *field, int64_t replicas, json_t **out, char **err)
{
    const json_t *spec;
    int rc;
    *out = NULL;
    if (replicas < 0 || replicas > INT32_MAX) {
        *err = fl_asprintf("replicas %lld: must be between 0 and %d", (long long)replicas, INT32_MAX);
        return FL_EINVAL;
    }
    if ((rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)))
        return rc;
    const json_t *cur;
    if ((rc = fl_native_get(spec, "spec", field, FL_NT_INT, &cur, err)))
        return rc;
    *out = fl_json_deep_copy(obj);
    json_t *s = json_object_get(*out, "spec");
    if (!s) {
        s = json_object();
        json_object_set_new(*out, "spec", s);
    }
    json_object_set_new(s, field, json_integer(replicas));
    return 0;
}

/* ---- health ---- */

static int gen_and_observed(const json_t *obj, const json_t **status, int64_t *gen, int64_t *observed, char **err)
{
    const json_t *meta;
    int rc;
    if ((rc = fl_native_get(obj, "", "metadata", FL_NT_OBJECT, &meta, err)) ||
        (rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, status, err)) ||
        (rc = fl_native_int(meta, "metadata", "generation", 0, gen, err)) ||
        (rc = fl_native_int(*status, "status", "observedGeneration", 0, observed, err)))
        return rc;
    return 0;
}

/* Deployment and StatefulSet: the controller saw the current spec, every wanted replica
 * is updated, and every updated one is available. */
static int health_rollout(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st, *spec;
    int64_t gen, og, want, updated, avail;
    int rc;
    if ((rc = gen_and_observed(obj, &st, &gen, &og, err)) ||
        (rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_int(spec, "spec", "replicas", 1, &want, err)) ||
        (rc = fl_native_int(st, "status", "updatedReplicas", 0, &updated, err)) ||
        (rc = fl_native_int(st, "status", "availableReplicas", 0, &avail, err)))
        return rc;
    *h = og == gen && updated >= want && avail >= updated ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return 0;
}

static int health_replicaset(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st, *spec;
    int64_t gen, og, want, avail;
    int rc;
    if ((rc = gen_and_observed(obj, &st, &gen, &og, err)) ||
        (rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_int(spec, "spec", "replicas", 1, &want, err)) ||
        (rc = fl_native_int(st, "status", "availableReplicas", 0, &avail, err)))
        return rc;
    *h = og == gen && avail >= want ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return 0;
}

static int health_daemonset(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st;
    int64_t gen, og, desired, updated, avail;
    int rc;
    if ((rc = gen_and_observed(obj, &st, &gen, &og, err)) ||
        (rc = fl_native_int(st, "status", "desiredNumberScheduled", 0, &desired, err)) ||
        (rc = fl_native_int(st, "status", "updatedNumberScheduled", 0, &updated, err)) ||
        (rc = fl_native_int(st, "status", "numberAvailable", 0, &avail, err)))
        return rc;
    *h = og == gen && updated >= desired && avail >= updated ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return 0;
}

/* Karmada has no Job rule (a Job is always healthy there); a Job that gave up (Failed
 * condition True) is reported Unhealthy here, a running or complete one Healthy. */
static int health_job(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st, *conds;
    int rc;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) ||
        (rc = fl_native_get(st, "status", "conditions", FL_NT_ARRAY, &conds, err)))
        return rc;
    const char *s = json_string_value(json_object_get(fl_native_condition(conds, "Failed"), "status"));
    *h = s && !strcmp(s, "True") ? FL_HEALTH_UNHEALTHY : FL_HEALTH_HEALTHY;
    return 0;
}

/* Succeeded, or Running with the Ready condition True. */
static int health_pod(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st, *conds;
    const char *phase;
    int rc;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) ||
        (rc = fl_native_str(st, "status", "phase", &phase, err)) ||
        (rc = fl_native_get(st, "status", "conditions", FL_NT_ARRAY, &conds, err)))
        return rc;
    const char *ready = json_string_value(json_object_get(fl_native_condition(conds, "Ready"), "status"));
    bool ok = phase && (!strcmp(phase, "Succeeded") || (!strcmp(phase, "Running") && ready && !strcmp(ready, "True")));
    *h = ok ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return 0;
}

static int health_pvc(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *st;
    const char *phase;
    int rc;
    if ((rc = fl_native_get(obj, "", "status", FL_NT_OBJECT, &st, err)) ||
        (rc = fl_native_str(st, "status", "phase", &phase, err)))
        return rc;
    *h = phase && !strcmp(phase, "Bound") ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return 0;
}

/* Healthy once status.loadBalancer.ingress has an entry with an ip or a hostname. */
static int lb_has_address(const json_t *obj, bool *yes, char **err)
{
    const json_t *lb, *ing;
    int rc;
    *yes = false;
    if ((rc = fl_native_obj_at(obj, "status.loadBalancer", &lb, err)) ||
        (rc = fl_native_get(lb, "status.loadBalancer", "ingress", FL_NT_ARRAY, &ing, err)))
        return rc;
    size_t i;
    const json_t *e;
    json_array_foreach(ing, i, e) {
        const char *ip = json_string_value(json_object_get(e, "ip"));
        const char *host = json_string_value(json_object_get(e, "hostname"));
        if ((ip && *ip) || (host && *host))
            *yes = true;
    }
    return 0;
}

static int health_ingress(const json_t *obj, enum fl_health *h, char **err)
{
    bool yes;
    int rc = lb_has_address(obj, &yes, err);
    *h = rc ? FL_HEALTH_UNKNOWN : yes ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    return rc;
}

/* Only a LoadBalancer Service waits for something: its address. */
static int health_service(const json_t *obj, enum fl_health *h, char **err)
{
    const json_t *spec;
    const char *type;
    int rc;
    if ((rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_str(spec, "spec", "type", &type, err)))
        return rc;
    if (!type || strcmp(type, "LoadBalancer")) {
        *h = FL_HEALTH_HEALTHY;
        return 0;
    }
    return health_ingress(obj, h, err);
}

/* ---- the table of kinds ---- */

typedef int (*replica_fn)(const json_t *obj, int64_t *replicas, json_t **req, char **err);
typedef int (*reflect_fn)(const json_t *obj, json_t **status, char **err);
typedef int (*aggregate_fn)(const json_t *obj, const json_t *items, json_t **out, char **err);
typedef int (*health_fn)(const json_t *obj, enum fl_health *h, char **err);
typedef int (*deps_fn)(const json_t *obj, json_t **deps, char **err);

static const struct native_kind {
    const char *api_version, *kind;
    replica_fn replicas;
    const char *revise_field; /* the spec field ReviseReplica writes; NULL: no hook */
    reflect_fn reflect;       /* NULL: the whole status */
    aggregate_fn aggregate;
    health_fn health;
    deps_fn deps;
} kinds[] = {
    {"apps/v1", "Deployment", fl_native_replicas_workload, "replicas", fl_native_reflect_deployment,
     fl_native_aggregate_deployment, health_rollout, fl_native_deps_workload},
    {"apps/v1", "StatefulSet", fl_native_replicas_workload, "replicas", fl_native_reflect_statefulset,
     fl_native_aggregate_statefulset, health_rollout, fl_native_deps_statefulset},
    {"apps/v1", "ReplicaSet", fl_native_replicas_workload, "replicas", fl_native_reflect_replicaset,
     fl_native_aggregate_replicaset, health_replicaset, fl_native_deps_workload},
    {"apps/v1", "DaemonSet", NULL, NULL, fl_native_reflect_daemonset, fl_native_aggregate_daemonset,
     health_daemonset, fl_native_deps_workload},
    {"batch/v1", "Job", fl_native_replicas_job, "parallelism", fl_native_reflect_job, fl_native_aggregate_job,
     health_job, fl_native_deps_workload},
    {"batch/v1", "CronJob", NULL, NULL, NULL, fl_native_aggregate_cronjob, NULL, fl_native_deps_cronjob},
    {"v1", "Pod", fl_native_replicas_pod, NULL, NULL, fl_native_aggregate_pod, health_pod, fl_native_deps_pod},
    {"v1", "Service", NULL, NULL, fl_native_reflect_service, fl_native_aggregate_service, health_service, NULL},
    {"v1", "PersistentVolumeClaim", NULL, NULL, NULL, fl_native_aggregate_pvc, health_pvc, NULL},
    {"networking.k8s.io/v1", "Ingress", NULL, NULL, NULL, fl_native_aggregate_ingress, health_ingress,
     fl_native_deps_ingress},
    {"autoscaling/v2", "HorizontalPodAutoscaler", NULL, NULL, fl_native_reflect_hpa, fl_native_aggregate_hpa,
     fl_native_health_hpa, NULL},
    {"policy/v1", "PodDisruptionBudget", NULL, NULL, fl_native_reflect_pdb, fl_native_aggregate_pdb,
     fl_native_health_pdb, NULL},
};

static const struct native_kind *lookup(const char *av, const char *kind)
{
    if (!av || !kind)
        return NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].api_version, av) && !strcmp(kinds[i].kind, kind))
            return &kinds[i];
    return NULL;
}

static const struct native_kind *kind_of(const json_t *obj)
{
    return lookup(json_string_value(json_object_get(obj, "apiVersion")),
                  json_string_value(json_object_get(obj, "kind")));
}

/* ---- the backend ---- */

static bool native_has(void *self, const char *av, const char *kind, enum fl_interp_op op)
{
    if (op == FL_INTERP_RETAIN || op == FL_INTERP_REFLECT_STATUS)
        return true;
    const struct native_kind *k = lookup(av, kind);
    if (!k)
        return false;
    switch (op) {
    case FL_INTERP_REPLICA: return k->replicas != NULL;
    case FL_INTERP_REVISE_REPLICA: return k->revise_field != NULL;
    case FL_INTERP_AGGREGATE_STATUS: return k->aggregate != NULL;
    case FL_INTERP_HEALTH: return k->health != NULL;
    case FL_INTERP_DEPENDENCY: return k->deps != NULL;
    default: return false;
    }
}

/* The registry only calls an operation after has() said yes for the object's kind, but
 * a kind without the hook still declines cleanly. */
static int native_get_replicas(void *self, const json_t *obj, int64_t *replicas, json_t **req, char **err)
{
    const struct native_kind *k = kind_of(obj);
    *replicas = 0;
    *req = NULL;
    return k && k->replicas ? k->replicas(obj, replicas, req, err) : FL_EUNSUPPORTED;
}

static int native_revise_replica(void *self, const json_t *obj, int64_t replicas, json_t **out, char **err)
{
    const struct native_kind *k = kind_of(obj);
    *out = NULL;
    return k && k->revise_field ? revise(obj, k->revise_field, replicas, out, err) : FL_EUNSUPPORTED;
}

/* fl_retain's rules, plus one Karmada has that fl_retain lacks: a service-account-token
 * Secret keeps the token data the member's token controller generated. */
static int native_retain(void *self, const json_t *desired, const json_t *observed, json_t **out, char **err)
{
    const char *av = json_string_value(json_object_get(desired, "apiVersion"));
    const char *kind = json_string_value(json_object_get(desired, "kind"));
    char group[256] = "";
    const char *slash = av ? strchr(av, '/') : NULL;
    if (slash)
        snprintf(group, sizeof group, "%.*s", (int)(slash - av), av);
    *out = fl_retain(group, kind, desired, observed);

    const char *type = json_string_value(json_object_get(desired, "type"));
    json_t *odata = json_is_object(observed) ? json_object_get(observed, "data") : NULL;
    if (!*group && kind && !strcmp(kind, "Secret") && type && !strcmp(type, "kubernetes.io/service-account-token") &&
        json_is_object(odata))
        json_object_set_new(*out, "data", fl_json_deep_copy(odata));
    return 0;
}

static int native_reflect_status(void *self, const json_t *obj, json_t **status, char **err)
{
    const struct native_kind *k = kind_of(obj);
    *status = NULL;
    return k && k->reflect ? k->reflect(obj, status, err) : fl_native_reflect_whole(obj, status, err);
}

static int native_aggregate_status(void *self, const json_t *obj, const json_t *items, json_t **out, char **err)
{
    const struct native_kind *k = kind_of(obj);
    *out = NULL;
    if (!k || !k->aggregate)
        return FL_EUNSUPPORTED;
    if (items && !json_is_array(items) && !json_is_null(items)) {
        *err = fl_strdup("items: must be an array");
        return FL_EINVAL;
    }
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        char p[64];
        const json_t *st;
        int rc;
        if (!json_is_object(it)) {
            *err = fl_asprintf("%s: must be an object", fl_native_index(p, sizeof p, "items", i));
            return FL_EINVAL;
        }
        if ((rc = fl_native_get(it, fl_native_index(p, sizeof p, "items", i), "status", FL_NT_OBJECT, &st, err)))
            return rc;
    }
    return k->aggregate(obj, json_is_array(items) ? items : NULL, out, err);
}

static int native_health(void *self, const json_t *obj, enum fl_health *h, char **err)
{
    const struct native_kind *k = kind_of(obj);
    *h = FL_HEALTH_UNKNOWN;
    if (!k || !k->health)
        return FL_EUNSUPPORTED;
    int rc = k->health(obj, h, err);
    if (rc)
        *h = FL_HEALTH_UNKNOWN;
    return rc;
}

static int native_get_dependencies(void *self, const json_t *obj, json_t **deps, char **err)
{
    const struct native_kind *k = kind_of(obj);
    *deps = NULL;
    return k && k->deps ? k->deps(obj, deps, err) : FL_EUNSUPPORTED;
}

const fl_interp_backend fl_native_backend = {
    .name = "native",
    .has = native_has,
    .get_replicas = native_get_replicas,
    .revise_replica = native_revise_replica,
    .retain = native_retain,
    .reflect_status = native_reflect_status,
    .aggregate_status = native_aggregate_status,
    .health = native_health,
    .get_dependencies = native_get_dependencies,
};
