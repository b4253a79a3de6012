/* kinds.h - the table of API kinds Flotilla serves.
 *
 * One table drives discovery (/api, /apis, /apis/G/V), the OpenAPI v3 documents,
 * server-side Table columns, field-selector support, type checks, strategic-merge
 * patch metadata and per-kind validation. Built-in kinds are static data in
 * kinds_builtin.c; CustomResourceDefinitions add dynamic kinds at run time.
 *
 * Lifetime: a kind pointer returned by a lookup stays valid for the life of the
 * process (dynamic kinds are retired, not freed, when their CRD goes away), so
 * request handlers may hold it without locks. Lookups are thread-safe. */
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
};

/* One field of a kind's schema. path is dotted from the object root with list elements
 * elided ("spec.template.spec.containers.name"). sub, when set, is a nested table whose
 * paths are relative to this field (used to share PodSpec, ObjectMeta, LabelSelector). */
typedef struct fl_field {
    const char *path;
    enum fl_ftype type;
    const char *merge_key;     /* SMP patchMergeKey (lists of objects) */
    const char *strategy;      /* SMP patchStrategy: "merge", "replace", "retainKeys", "merge,retainKeys" */
    const struct fl_field *sub; /* NULL-path-terminated nested table, or NULL */
    bool required;
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
    /* dynamic kinds (from a CRD); NULL/false for built-ins */
    bool dynamic;
    bool served;               /* false once the CRD is gone */
    json_t *crd_version;       /* the CRD's spec.versions[i] object (schema, printer columns) */
    const char *crd_name;      /* "<plural>.<group>" */
    bool preserve_unknown;     /* CRD schema x-kubernetes-preserve-unknown-fields at root */
    char api_version[96];      /* "apps/v1" or "v1", filled when the kind is registered */
} fl_kind;

/* Register the built-in kinds. Call once at start-up before any lookup. */
void fl_kinds_init(void);

/* Served kind by group, version and plural resource name (exact match). NULL if none. */
const fl_kind *fl_kind_by_resource(const char *group, const char *version, const char *resource);
/* Served kind by apiVersion ("apps/v1", "v1") and kind. NULL if none. */
const fl_kind *fl_kind_by_gvk(const char *api_version, const char *kind);

/* Snapshot of all served kinds in a stable order (built-ins first, by group then
 * resource). *out is a heap array the caller frees (the kinds themselves are not). */
size_t fl_kinds_list(const fl_kind ***out);
/* Increments whenever the set of served kinds changes (discovery/OpenAPI caches key on it). */
uint64_t fl_kinds_generation(void);

/* Serve the kinds a CustomResourceDefinition defines (one per served version), replacing
 * any previous kinds of that CRD. Returns 0, or FL_EINVAL with *err naming the field
 * (e.g. "spec.names.plural: Required value") when the CRD cannot be served. */
int fl_kinds_apply_crd(const json_t *crd, char **err);
/* Stop serving the kinds of CRD `name` ("<plural>.<group>"). */
void fl_kinds_remove_crd(const char *name);

/* Store key prefix for a kind's objects: "/<group|core>/<resource>/" (caller frees). */
char *fl_kind_prefix(const fl_kind *k);

/* SMP lookup callback over the kind's field table (ctx = the fl_kind). */
bool fl_kind_smp_lookup(void *ctx, const char *path, fl_smp_meta *out);

#endif
