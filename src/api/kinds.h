/* kinds.h - the table of API kinds Flotilla serves.
 *
 * One table drives discovery (/api, /apis, /apis/G/V), the OpenAPI v3 documents,
 * server-side Table columns, field-selector support, type checks, strategic-merge
 * patch metadata and per-kind validation. Built-in kinds are static data in
 * kinds_builtin.c; CustomResourceDefinitions add dynamic kinds at run time.
 *
 * Registries: the set of served kinds is an instance, fl_kindreg. Every registry
 * serves the same built-in kinds (shared static data) plus the kinds of the CRDs
 * applied to it, so a CRD created in one simulated member cluster is served by that
 * member only. The control plane (`flotilla server`) uses the process default registry,
 * fl_kindreg_default(), which the fl_kind_by_* / fl_kinds_* functions below act on;
 * each member hosted by `flotilla member` owns one from fl_kindreg_new(). Every
 * fl_kindreg_* function taking a registry also accepts NULL for the default one
 * (except fl_kindreg_free, for which NULL is a no-op).
 *
 * Lifetime: a kind pointer returned by a lookup stays valid until its registry is
 * freed - built-in kinds for the life of the process, dynamic kinds are retired (not
 * freed) when their CRD goes away - so request handlers may hold it without locks.
 * The default registry is never freed. Lookups are thread-safe. */
#ifndef FL_KINDS_H
#define FL_KINDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/patch.h"

/* Field types for structural checks. A request whose field has the wrong JSON type
 * is refused (400 BadRequest, as Kubernetes' decoder does) naming the field. */
enum fl_ftype {
    FL_F_ANY = 0,
    FL_F_STRING,
    FL_F_INT,       /* JSON integer (int32/int64) */
    FL_F_NUMBER,
    FL_F_BOOL,
    FL_F_OBJECT,
    FL_F_ARRAY,
    FL_F_MAPSTR,    /* object whose values are all strings (labels, data) */
    FL_F_INTORSTR,  /* intstr.IntOrString */
    FL_F_QUANTITY,  /* resource.Quantity: string or number */
    FL_F_MAP,       /* object with arbitrary keys whose values are `elem` (objects: `sub`) */
};

/* One field of a kind's schema. path is dotted from the object root with list elements
 * elided ("spec.template.spec.containers.name"). sub, when set, is a nested table whose
 * paths are relative to this field (for a list, to each element; for FL_F_MAP, to each
 * value): one table per upstream definition, shared (PodSpec, ObjectMeta, LabelSelector).
 *
 * The tables of the served built-in and Karmada kinds are generated from the published
 * schemas (kinds_schema.c, tools/gen_kind_schemas.py): one path segment per row, and
 * complete, so a key missing from a table is an unknown field (fl_crd_prune, crd_schema.h).
 * An FL_F_OBJECT without sub, and FL_F_ANY, are free-form: nothing inside is unknown. */
typedef struct fl_field {
    const char *path;
    enum fl_ftype type;
    const char *merge_key;     /* SMP patchMergeKey (lists of objects) */
    const char *strategy;      /* SMP patchStrategy: "merge", "replace", "retainKeys", "merge,retainKeys" */
    const struct fl_field *sub; /* NULL-path-terminated nested table, or NULL */
    bool required;
    enum fl_ftype elem;        /* FL_F_ARRAY/FL_F_MAP: type of the elements/values (FL_F_ANY: unchecked) */
    bool unsupported;          /* upstream's, but nothing here acts on it: refused when set (422) */
} fl_field;

/* A server-side Table column. jsonpath is a Kubernetes JSONPath ("{.status.readyReplicas}"
 * or CRD-style ".status.readyReplicas"); NULL when the kind's row function computes it. */
typedef struct fl_column {
    const char *name;          /* "READY" -> displayed header; Table uses the name as given */
    const char *type;          /* "string" | "integer" | "number" | "boolean" | "date" */
    const char *format;        /* "name" for the NAME column, else "" */
    const char *description;
    const char *jsonpath;
    int priority;              /* 0 = default view, 1 = -o wide */
} fl_column;

struct fl_kind;
/* Fill the cells after NAME for obj: append one JSON value per column (excluding NAME and
 * AGE, which the table renderer adds). NULL = evaluate each column's jsonpath. */
typedef void (*fl_row_fn)(const struct fl_kind *k, const json_t *obj, json_t *cells);
/* Kind-specific validation: append causes {reason,message,field} to causes (a JSON array).
 * old is the stored object on update, NULL on create. */
typedef void (*fl_validate_fn)(const struct fl_kind *k, const json_t *obj, const json_t *old, json_t *causes);

typedef struct fl_kind {
    const char *group;         /* "" for core */
    const char *version;
    const char *kind;
    const char *list_kind;     /* "DeploymentList" */
    const char *resource;      /* plural, lower case */
    const char *singular;
    bool namespaced;
    bool has_status;           /* /status subresource */
    bool has_scale;            /* /scale subresource (Deployments, StatefulSets, ReplicaSets) */
    const char *short_names[4];  /* NULL-terminated */
    const char *categories[3];   /* NULL-terminated, e.g. "all" */
    const char *field_selectors[8]; /* supported beyond metadata.name/metadata.namespace */
    const fl_field *fields;    /* NULL-path-terminated schema hints, or NULL */
    const fl_column *columns;  /* NULL-name-terminated columns after NAME (AGE last if wanted) */
    fl_row_fn row;
    fl_validate_fn validate;
    bool create_only;          /* answered, never stored (authorization.k8s.io's reviews,
                                * rbac_review.c): discovery lists the verb create only */
    /* A version served from another version's objects, converted both ways, as kube-apiserver
     * serves autoscaling/v1 HorizontalPodAutoscalers from their autoscaling/v2 storage (one
     * store key prefix for both; api_convert.c). storage_version names the stored version;
     * to_storage returns a new reference or NULL with *err (heap) naming the field;
     * from_storage returns a new reference. NULL for every kind stored as it is served; row
     * and columns then see stored objects. */
    const char *storage_version;
    const char *storage_group; /* the stored kind's group when it is another ("" = core: events.k8s.io
                                * Events are core/v1 Events), NULL = the same; keys follow it */
    json_t *(*to_storage)(const json_t *obj, char **err);
    json_t *(*from_storage)(const json_t *obj);
    /* dynamic kinds (from a CRD); NULL/false for built-ins */
    bool dynamic;
    bool served;               /* false once the CRD is gone */
    json_t *crd_version;       /* the CRD's spec.versions[i] object (schema, printer columns) */
    const char *crd_name;      /* "<plural>.<group>" */
    bool preserve_unknown;     /* CRD schema x-kubernetes-preserve-unknown-fields at root */
    char api_version[96];      /* "apps/v1" or "v1", filled when the kind is registered */
} fl_kind;

/* A set of served kinds: the built-ins plus the kinds of the CRDs applied to it. */
typedef struct fl_kindreg fl_kindreg;

/* Register the built-in kinds and create the default registry. Idempotent and
 * thread-safe; lookups call it themselves, so calling it at start-up is optional. */
void fl_kinds_init(void);

/* A new registry serving the built-in kinds only (never NULL: out of memory aborts,
 * core/mem.h). The caller owns it and frees it with fl_kindreg_free. Any thread. */
fl_kindreg *fl_kindreg_new(void);
/* Free reg, its dynamic kinds (retired ones included) and the caches attached to it
 * (fl_kindreg_cache). No thread may use reg or a kind from it any more. NULL and the
 * default registry are no-ops. */
void fl_kindreg_free(fl_kindreg *reg);
/* The process default registry: the control plane's. Never freed. */
fl_kindreg *fl_kindreg_default(void);

/* Served kind by group, version and plural resource name (exact match). NULL if none.
 * No allocation: a hash probe under reg's read lock. */
const fl_kind *fl_kindreg_by_resource(fl_kindreg *reg, const char *group, const char *version,
                                      const char *resource);
/* Served kind by apiVersion ("apps/v1", "v1") and kind. NULL if none. */
const fl_kind *fl_kindreg_by_gvk(fl_kindreg *reg, const char *api_version, const char *kind);
/* Snapshot of all kinds reg serves in a stable order (built-ins first, by group then
 * resource). *out is a heap array the caller frees (the kinds themselves are not). */
size_t fl_kindreg_list(fl_kindreg *reg, const fl_kind ***out);
/* Changes whenever the set of kinds reg serves changes (discovery/OpenAPI caches key on
 * it). Increases monotonically, and values are unique across the registries of the
 * process, so a generation alone never confuses two registries. */
uint64_t fl_kindreg_generation(fl_kindreg *reg);

/* Serve in reg the kinds a CustomResourceDefinition defines (one per served version),
 * replacing any previous kinds of that CRD there. Returns 0, or FL_EINVAL with *err
 * (heap, caller frees; err may be NULL) naming the field, e.g. "spec.names.plural:
 * Required value", when the CRD cannot be served. Other registries are unaffected. */
int fl_kindreg_apply_crd(fl_kindreg *reg, const json_t *crd, char **err);
/* Stop serving in reg the kinds of CRD `name` ("<plural>.<group>"). */
void fl_kindreg_remove_crd(fl_kindreg *reg, const char *name);

/* For caches of documents derived from the kind set (discovery.c, openapi.c).
 * fl_kindreg_shared returns the registry to derive reg's documents from: reg itself
 * while it serves custom kinds, otherwise one process-wide registry of the built-in
 * kinds only (same kind set, so the same documents), so that thousands of members
 * without CRDs share one copy of their discovery and OpenAPI documents instead of each
 * building its own. That shared registry refuses CRDs; it is never freed. */
fl_kindreg *fl_kindreg_shared(fl_kindreg *reg);
/* The cache slot of reg named by key (the address of a static in the caller's module):
 * created with make() on first use, freed with free_fn(slot) by fl_kindreg_free. The
 * slot stays valid while reg lives; guarding its contents is the caller's business.
 * Any thread. */
void *fl_kindreg_cache(fl_kindreg *reg, const void *key, void *(*make)(void), void (*free_fn)(void *));

/* The default registry (the control plane's): the same as the fl_kindreg_* calls
 * with fl_kindreg_default(). */
const fl_kind *fl_kind_by_resource(const char *group, const char *version, const char *resource);
const fl_kind *fl_kind_by_gvk(const char *api_version, const char *kind);
size_t fl_kinds_list(const fl_kind ***out);
uint64_t fl_kinds_generation(void);
int fl_kinds_apply_crd(const json_t *crd, char **err);
void fl_kinds_remove_crd(const char *name);

/* Store key prefix for a kind's objects: "/<group|core>/<resource>/" (caller frees); a kind
 * stored as another group's (storage_group) has that group's prefix. */
char *fl_kind_prefix(const fl_kind *k);

/* SMP lookup callback over the kind's field table (ctx = the fl_kind). */
bool fl_kind_smp_lookup(void *ctx, const char *path, fl_smp_meta *out);

#endif
