/* openapi.c - the OpenAPI v3 index (/openapi/v3) and one OpenAPI 3.0 document per
 * group-version (/openapi/v3/api/v1, /openapi/v3/apis/<group>/<version>), and the one
 * swagger 2.0 document of every kind (/openapi/v2; its protobuf form: openapi_v2.c),
 * derived from the kind table. Schemas are the kinds' field tables expanded inline
 * (no $ref between definitions), without descriptions; a table that refers to itself
 * (a CRD's JSONSchemaProps) is expanded once and free-form below that.
 *
 * What kubectl (1.32) reads from these documents, and therefore what they must get
 * exactly right:
 *   - the index: {"paths": {"apis/apps/v1": {"serverRelativeURL": "/openapi/v3/...?hash=H"}}}.
 *     client-go fetches each document through that URL and caches by it, so H must
 *     change whenever the document does (it is a hash of the document).
 *   - field validation (cli-runtime query_param_verifier_v3.go): for the object's GVK,
 *     the first PATCH operation (in Go map order, i.e. any of them) whose
 *     x-kubernetes-group-version-kind object matches must list a parameter named
 *     "fieldValidation" in the operation's own parameters, inline (a $ref has no name).
 *     Then kubectl sends fieldValidation=Strict and never downloads /openapi/v2.
 *     Every PATCH of a kind (main resource and /status) therefore carries it.
 *   - apply's patch type (kubectl apply/patcher.go): a PATCH operation for the GVK whose
 *     requestBody.content has application/strategic-merge-patch+json makes kubectl compute
 *     a strategic merge patch from the component schema whose
 *     x-kubernetes-group-version-kind *array* contains the GVK. While diffing, every
 *     map or list field that differs between the live object and the manifest is looked
 *     up in that schema's properties; a missing property is an error that kubectl prints
 *     as a warning before falling back to its compiled-in types, so the built-in schemas
 *     carry every field of the kind tables, with x-kubernetes-patch-merge-key and
 *     x-kubernetes-patch-strategy on the lists upstream tags. Custom resources and the
 *     Karmada kinds advertise no strategic merge patch: kubectl then uses a JSON merge patch.
 *   - documents are decoded into kube-openapi's typed structs, so every schema keyword
 *     must have its JSON type; CRD schemas are copied with ill-typed keywords dropped.
 *
 * Documents are built for one fl_kindreg_generation() and cached in the registry they
 * describe (fl_kindreg_cache; registries serving no custom kind share the built-ins'
 * registry and therefore one set of documents); callers get a new reference and must
 * treat it as read-only. Any thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/discovery.h"
#include "api/openapi_v2.h"
#include "api/kinds.h"
#include "core/json.h"
#include "core/mem.h"

int fl_kinds__version_cmp(const char *a, const char *b); /* kinds.c */
#include "api/kinds_schema.h"

#define REF_PATCH "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
#define REF_STATUS "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"
#define REF_DELETE "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
#define SCALE_NAME "io.k8s.api.autoscaling.v1.Scale"

/* One per registry (fl_kindreg_cache). */
typedef struct oa_cache {
    pthread_mutex_t lock; /* guards the rest; held while (re)building */
    uint64_t gen;
    bool valid;
    json_t *index; /* {"paths": {...}} */
    json_t *docs;  /* gvpath -> document */
    json_t *v2;    /* the swagger 2.0 document, built on first use */
    unsigned char *v2_pb; /* its protobuf form, built on first use */
    size_t v2_pb_len;
} oa_cache;

static const char cache_key; /* names our slot in each registry */

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

/* Component name in upstream's style: io.k8s.api.apps.v1.Deployment for Kubernetes
 * groups, com.github.karmada-io.karmada.pkg.apis.policy.v1alpha1.PropagationPolicy for
 * Karmada's, reversed group for custom resources (com.example.stable.v1.CronTab). */
static char *schema_name(const char *group, const char *version, const char *kind, bool dynamic)
{
    if (!group[0])
        return fl_asprintf("io.k8s.api.core.%s.%s", version, kind);
    if (!dynamic && !strcmp(group, "apiextensions.k8s.io"))
        return fl_asprintf("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.%s.%s", version, kind);
    size_t first = strcspn(group, ".");
    size_t glen = strlen(group);
    if (!dynamic && (!group[first] || (glen > 7 && !strcmp(group + glen - 7, ".k8s.io"))))
        return fl_asprintf("io.k8s.api.%.*s.%s.%s", (int)first, group, version, kind);
    if (!dynamic && glen >= 10 && !strcmp(group + glen - 10, "karmada.io"))
        return fl_asprintf("com.github.karmada-io.karmada.pkg.apis.%.*s.%s.%s", (int)first, group, version, kind);
    /* reverse the DNS labels */
    size_t cap = glen + strlen(version) + strlen(kind) + 4, o = 0;
    char *out = fl_malloc(cap);
    for (size_t end = glen; end > 0;) {
        size_t start = end;
        while (start > 0 && group[start - 1] != '.')
            start--;
        memcpy(out + o, group + start, end - start);
        o += end - start;
        out[o++] = '.';
        end = start ? start - 1 : 0;
    }
    snprintf(out + o, cap - o, "%s.%s", version, kind);
    return out;
}

/* "policy.karmada.io" -> "PolicyKarmadaIo", "coordination.k8s.io" -> "Coordination", "" -> "Core". */
static char *group_camel(const char *group)
{
    if (!group[0])
        return fl_strdup("Core");
    size_t n = strlen(group);
    if (n > 7 && !strcmp(group + n - 7, ".k8s.io"))
        n -= 7;
    char *out = fl_malloc(n + 1);
    size_t o = 0;
    bool up = true;
    for (size_t i = 0; i < n; i++) {
        char c = group[i];
        if (c == '.' || c == '-') {
            up = true;
            continue;
        }
        out[o++] = up && c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
        up = false;
    }
    out[o] = '\0';
    return out;
}

static char *gvpath_of(const char *group, const char *version)
{
    return group[0] ? fl_asprintf("apis/%s/%s", group, version) : fl_asprintf("api/%s", version);
}

/* ------------------------------------------------------------------ */
/* Schemas                                                             */
/* ------------------------------------------------------------------ */

static json_t *ref(const char *name) { return json_pack("{s:s++}", "$ref", "#/components/schemas/", name, ""); }

/* properties[name] of node, created as an empty schema if absent. */
static json_t *prop(json_t *node, const char *name, size_t len)
{
    json_t *props = json_object_get(node, "properties");
    if (!props) {
        props = json_object();
        json_object_set_new(node, "properties", props);
        if (!json_object_get(node, "type"))
            json_object_set_new(node, "type", json_string("object"));
    }
    char *key = fl_strndup(name, len);
    json_t *child = json_object_get(props, key);
    if (!child) {
        child = json_object();
        json_object_set_new(props, key, child);
    }
    free(key);
    return child;
}

/* Tables being expanded, innermost last: a table that refers to itself (JSONSchemaProps)
 * is expanded once and its recursion served as free-form. */
typedef struct expand_stack {
    const fl_field *tabs[32];
    int n;
} expand_stack;

static void add_fields(json_t *node, const fl_field *t, expand_stack *st);

static void set_scalar(json_t *s, enum fl_ftype t)
{
    switch (t) {
    case FL_F_STRING:
        json_object_set_new(s, "type", json_string("string"));
        break;
    case FL_F_INT:
        json_object_set_new(s, "type", json_string("integer"));
        json_object_set_new(s, "format", json_string("int64"));
        break;
    case FL_F_NUMBER:
        json_object_set_new(s, "type", json_string("number"));
        json_object_set_new(s, "format", json_string("double"));
        break;
    case FL_F_BOOL:
        json_object_set_new(s, "type", json_string("boolean"));
        break;
    case FL_F_INTORSTR:
        json_object_set_new(s, "type", json_string("string"));
        json_object_set_new(s, "format", json_string("int-or-string"));
        json_object_set_new(s, "x-kubernetes-int-or-string", json_true());
        break;
    case FL_F_QUANTITY:
        json_object_set_new(s, "type", json_string("string"));
        json_object_set_new(s, "format", json_string("quantity"));
        break;
    case FL_F_MAPSTR:
        json_object_set_new(s, "type", json_string("object"));
        json_object_set_new(s, "additionalProperties", json_pack("{s:s}", "type", "string"));
        break;
    case FL_F_OBJECT:
        /* without a table: free-form (FieldsV1, RawExtension) */
        json_object_set_new(s, "type", json_string("object"));
        json_object_set_new(s, "x-kubernetes-preserve-unknown-fields", json_true());
        break;
    case FL_F_ARRAY:
    case FL_F_MAP:
    case FL_F_ANY:
        /* kubectl explain fails on an empty schema, so "anything" is said explicitly */
        json_object_set_new(s, "x-kubernetes-preserve-unknown-fields", json_true());
        break;
    }
}

/* The schema of a value of type t whose object form (if any) is described by sub. */
static json_t *value_schema(enum fl_ftype t, const fl_field *sub, expand_stack *st)
{
    json_t *s = json_object();
    bool on_stack = false;
    for (int i = 0; sub && i < st->n; i++)
        on_stack = on_stack || st->tabs[i] == sub;
    if (sub && (t == FL_F_OBJECT || t == FL_F_ANY) && !on_stack && st->n < (int)(sizeof st->tabs / sizeof st->tabs[0])) {
        json_object_set_new(s, "type", json_string("object"));
        st->tabs[st->n++] = sub;
        add_fields(s, sub, st);
        st->n--;
    } else {
        set_scalar(s, t == FL_F_ANY && sub ? FL_F_OBJECT : t);
    }
    return s;
}

/* Type, members and tags of the schema s for field f. */
static void set_field(json_t *s, const fl_field *f, expand_stack *st)
{
    if (f->type == FL_F_ARRAY) {
        json_object_set_new(s, "type", json_string("array"));
        /* a list without element type is upstream's []string nearly always */
        enum fl_ftype et = f->sub ? FL_F_OBJECT : f->elem == FL_F_ANY ? FL_F_STRING : f->elem;
        json_object_set_new(s, "items", value_schema(et, f->sub, st));
    } else if (f->type == FL_F_MAP) {
        json_object_set_new(s, "type", json_string("object"));
        json_object_set_new(s, "additionalProperties", value_schema(f->sub ? FL_F_OBJECT : f->elem, f->sub, st));
    } else if (f->sub) {
        json_t *v = value_schema(f->type, f->sub, st);
        json_object_update(s, v);
        json_decref(v);
    } else {
        set_scalar(s, f->type);
    }
    if (f->merge_key)
        json_object_set_new(s, "x-kubernetes-patch-merge-key", json_string(f->merge_key));
    if (f->strategy)
        json_object_set_new(s, "x-kubernetes-patch-strategy", json_string(f->strategy));
    if (f->unsupported)
        json_object_set_new(s, "description",
                            json_string("Not supported by this server yet: an object setting it is refused."));
}

/* Add a field table's fields under node (paths relative to node). */
static void add_fields(json_t *node, const fl_field *t, expand_stack *st)
{
    for (; t && t->path; t++) {
        json_t *parent = node;
        const char *p = t->path;
        const char *dot;
        while ((dot = strchr(p, '.'))) {
            parent = prop(parent, p, (size_t)(dot - p));
            if (!json_object_get(parent, "type"))
                json_object_set_new(parent, "type", json_string("object"));
            p = dot + 1;
        }
        json_t *leaf = prop(parent, p, strlen(p));
        set_field(leaf, t, st);
        if (t->required) {
            json_t *req = json_object_get(parent, "required");
            if (!req) {
                req = json_array();
                json_object_set_new(parent, "required", req);
            }
            json_array_append_new(req, json_string(p));
        }
    }
}

static void add_table(json_t *node, const fl_field *t)
{
    expand_stack st = {.n = 0};
    st.tabs[st.n++] = t;
    add_fields(node, t, &st);
}

static json_t *gvk_list(const char *group, const char *version, const char *kind)
{
    return json_pack("[{s:s, s:s, s:s}]", "group", group, "kind", kind, "version", version);
}

static json_t *gvk_obj(const char *group, const char *version, const char *kind)
{
    return json_pack("{s:s, s:s, s:s}", "group", group, "kind", kind, "version", version);
}

static json_t *objectmeta_schema(void)
{
    json_t *m = json_pack("{s:s, s:s}", "type", "object", "description",
                          "Standard object's metadata. More info: "
                          "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata");
    add_table(m, fl_schema_meta_v1_ObjectMeta);
    return m;
}

static void ensure_typemeta(json_t *schema)
{
    json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props)) {
        props = json_object();
        json_object_set_new(schema, "properties", props);
    }
    if (!json_object_get(props, "apiVersion"))
        json_object_set_new(props, "apiVersion",
                            json_pack("{s:s, s:s}", "type", "string", "description",
                                      "APIVersion defines the versioned schema of this representation of an object."));
    if (!json_object_get(props, "kind"))
        json_object_set_new(props, "kind",
                            json_pack("{s:s, s:s}", "type", "string", "description",
                                      "Kind is a string value representing the REST resource this object represents."));
    /* CRD schemas may say little or nothing about metadata; serve the real one */
    json_object_set_new(props, "metadata", objectmeta_schema());
}

/* Drop keywords whose JSON type kube-openapi's decoder would reject (a CRD schema is
 * user input; one bad keyword must not make the whole document undecodable). */
static void sanitize_schema(json_t *s);

static void sanitize_map_of_schemas(json_t *s, const char *key)
{
    json_t *m = json_object_get(s, key);
    if (!m)
        return;
    if (!json_is_object(m)) {
        json_object_del(s, key);
        return;
    }
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(m, tmp, k, v) {
        if (json_is_object(v))
            sanitize_schema(v);
        else
            json_object_del(m, k);
    }
}

static void sanitize_list_of_schemas(json_t *s, const char *key)
{
    json_t *a = json_object_get(s, key);
    if (!a)
        return;
    if (!json_is_array(a)) {
        json_object_del(s, key);
        return;
    }
    for (size_t i = json_array_size(a); i-- > 0;) {
        if (json_is_object(json_array_get(a, i)))
            sanitize_schema(json_array_get(a, i));
        else
            json_array_remove(a, i);
    }
}

static void sanitize_schema(json_t *s)
{
    static const char *strings[] = {"format", "description", "title", "pattern", "$ref",
                                    "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy", NULL};
    static const char *numbers[] = {"maximum", "minimum", "multipleOf", NULL};
    static const char *ints[] = {"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties",
                                 NULL};
    static const char *bools[] = {"exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable", NULL};
    json_t *v;
    for (int i = 0; strings[i]; i++)
        if ((v = json_object_get(s, strings[i])) && !json_is_string(v))
            json_object_del(s, strings[i]);
    for (int i = 0; numbers[i]; i++)
        if ((v = json_object_get(s, numbers[i])) && !json_is_number(v))
            json_object_del(s, numbers[i]);
    for (int i = 0; ints[i]; i++)
        if ((v = json_object_get(s, ints[i])) && !(json_is_integer(v) && json_integer_value(v) >= 0))
            json_object_del(s, ints[i]);
    for (int i = 0; bools[i]; i++)
        if ((v = json_object_get(s, bools[i])) && !json_is_boolean(v))
            json_object_del(s, bools[i]);
    if ((v = json_object_get(s, "type"))) {
        bool ok = json_is_string(v);
        if (json_is_array(v)) {
            size_t i;
            json_t *e;
            ok = true;
            json_array_foreach(v, i, e) ok = ok && json_is_string(e);
        }
        if (!ok)
            json_object_del(s, "type");
    }
    if ((v = json_object_get(s, "required"))) {
        if (!json_is_array(v)) {
            json_object_del(s, "required");
        } else {
            for (size_t i = json_array_size(v); i-- > 0;)
                if (!json_is_string(json_array_get(v, i)))
                    json_array_remove(v, i);
        }
    }
    if ((v = json_object_get(s, "enum")) && !json_is_array(v))
        json_object_del(s, "enum");
    if ((v = json_object_get(s, "externalDocs")) && !json_is_object(v))
        json_object_del(s, "externalDocs");
    if ((v = json_object_get(s, "dependencies")) && !json_is_object(v))
        json_object_del(s, "dependencies");
    sanitize_map_of_schemas(s, "properties");
    sanitize_map_of_schemas(s, "patternProperties");
    sanitize_map_of_schemas(s, "definitions");
    sanitize_list_of_schemas(s, "allOf");
    sanitize_list_of_schemas(s, "anyOf");
    sanitize_list_of_schemas(s, "oneOf");
    const char *either[] = {"additionalProperties", "additionalItems", NULL};
    for (int i = 0; either[i]; i++) {
        if (!(v = json_object_get(s, either[i])))
            continue;
        if (json_is_object(v))
            sanitize_schema(v);
        else if (!json_is_boolean(v))
            json_object_del(s, either[i]);
    }
    if ((v = json_object_get(s, "not"))) {
        if (json_is_object(v))
            sanitize_schema(v);
        else
            json_object_del(s, "not");
    }
    if ((v = json_object_get(s, "items"))) {
        if (json_is_object(v))
            sanitize_schema(v);
        else if (json_is_array(v))
            sanitize_list_of_schemas(s, "items");
        else
            json_object_del(s, "items");
    }
    /* an empty schema means "anything"; say so, since kubectl explain rejects {} */
    if (!json_object_size(s))
        json_object_set_new(s, "x-kubernetes-preserve-unknown-fields", json_true());
}

static json_t *kind_schema(const fl_kind *k)
{
    json_t *s;
    if (k->dynamic) {
        const json_t *src = json_object_get(json_object_get(k->crd_version, "schema"), "openAPIV3Schema");
        s = json_is_object(src) ? fl_json_deep_copy(src)
                                : json_pack("{s:s, s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", 1);
        sanitize_schema(s);
        if (!json_object_get(s, "type"))
            json_object_set_new(s, "type", json_string("object"));
        ensure_typemeta(s);
    } else {
        s = json_pack("{s:s}", "type", "object");
        add_table(s, k->fields);
        ensure_typemeta(s);
    }
    json_object_set_new(s, "x-kubernetes-group-version-kind", gvk_list(k->group, k->version, k->kind));
    return s;
}

static json_t *list_schema(const fl_kind *k, const char *item_name)
{
    json_t *props = json_object();
    json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
    json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
    json_object_set_new(props, "items", json_pack("{s:s, s:o}", "type", "array", "items", ref(item_name)));
    json_object_set_new(props, "metadata",
                        json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:s}, s:{s:s}}}", "type", "object", "properties",
                                  "continue", "type", "string", "remainingItemCount", "type", "integer", "format",
                                  "int64", "resourceVersion", "type", "string"));
    json_t *s = json_pack("{s:s, s:s++, s:[s], s:o}", "type", "object", "description", k->kind, "List",
                          " is a list of objects.", "required", "items", "properties", props);
    json_object_set_new(s, "x-kubernetes-group-version-kind", gvk_list(k->group, k->version, k->list_kind));
    return s;
}

static json_t *scale_schema(void)
{
    json_t *s = json_pack("{s:s, s:s}", "type", "object", "description",
                          "Scale represents a scaling request for a resource.");
    static const fl_field scale_fields[] = {
        {.path = "apiVersion", .type = FL_F_STRING},
        {.path = "kind", .type = FL_F_STRING},
        {.path = "spec", .type = FL_F_OBJECT},
        {.path = "spec.replicas", .type = FL_F_INT},
        {.path = "status", .type = FL_F_OBJECT},
        {.path = "status.replicas", .type = FL_F_INT},
        {.path = "status.selector", .type = FL_F_STRING},
        {.path = NULL},
    };
    add_table(s, scale_fields);
    json_object_set_new(json_object_get(s, "properties"), "metadata", objectmeta_schema());
    json_object_set_new(s, "x-kubernetes-group-version-kind", gvk_list("autoscaling", "v1", "Scale"));
    return s;
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

static json_t *qparam(const char *name, const char *type, const char *desc)
{
    return json_pack("{s:s, s:s, s:s, s:{s:s, s:b}}", "name", name, "in", "query", "description", desc, "schema",
                     "type", type, "uniqueItems", 1);
}

static json_t *pparam(const char *name, const char *desc)
{
    return json_pack("{s:s, s:s, s:s, s:b, s:{s:s, s:b}}", "name", name, "in", "path", "description", desc,
                     "required", 1, "schema", "type", "string", "uniqueItems", 1);
}

#define D_DRYRUN                                                                                                   \
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun "       \
    "directive will result in an error response and no further processing of the request. Valid values are: - "   \
    "All: all dry run stages will be processed"
#define D_FIELDMANAGER                                                                                             \
    "fieldManager is a name associated with the actor or entity that is making these changes."
#define D_FIELDVALIDATION                                                                                          \
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing "    \
    "unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"

/* dryRun, fieldManager, fieldValidation (+ force for PATCH): the write parameters. */
static json_t *write_params(bool patch)
{
    json_t *a = json_array();
    json_array_append_new(a, qparam("dryRun", "string", D_DRYRUN));
    json_array_append_new(a, qparam("fieldManager", "string", D_FIELDMANAGER));
    json_array_append_new(a, qparam("fieldValidation", "string", D_FIELDVALIDATION));
    if (patch)
        json_array_append_new(a, qparam("force", "boolean",
                                        "Force is going to \"force\" Apply requests. It must be unset for non-apply "
                                        "patch requests."));
    return a;
}

static json_t *list_params(void)
{
    json_t *a = json_array();
    json_array_append_new(a, qparam("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."));
    json_array_append_new(a, qparam("continue", "string", "The continue option should be set when retrieving more results from the server."));
    json_array_append_new(a, qparam("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields."));
    json_array_append_new(a, qparam("labelSelector", "string", "A selector to restrict the list of returned objects by their labels."));
    json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:{s:s, s:b}}", "name", "limit", "in", "query",
                                       "description", "limit is a maximum number of responses to return for a list call.",
                                       "schema", "type", "integer", "uniqueItems", 1));
    json_array_append_new(a, qparam("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."));
    json_array_append_new(a, qparam("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."));
    json_array_append_new(a, qparam("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."));
    json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:{s:s, s:b}}", "name", "timeoutSeconds", "in", "query",
                                       "description", "Timeout for the list/watch call.", "schema", "type",
                                       "integer", "uniqueItems", 1));
    json_array_append_new(a, qparam("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."));
    return a;
}

static json_t *delete_params(json_t *a)
{
    json_array_append_new(a, qparam("dryRun", "string", D_DRYRUN));
    json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:{s:s, s:b}}", "name", "gracePeriodSeconds", "in",
                                       "query", "description",
                                       "The duration in seconds before the object should be deleted.", "schema",
                                       "type", "integer", "uniqueItems", 1));
    json_array_append_new(a, qparam("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."));
    json_array_append_new(a, qparam("propagationPolicy", "string", "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'."));
    return a;
}

static json_t *content(const char *ref_name, bool full_ref)
{
    json_t *schema = full_ref ? json_pack("{s:s}", "$ref", ref_name) : ref(ref_name);
    return json_pack("{s:{s:O}, s:{s:o}}", "application/json", "schema", schema, "application/yaml", "schema",
                     schema);
}

static json_t *responses(const char *ref_name, bool created, bool accepted)
{
    json_t *r = json_pack("{s:{s:s, s:o}, s:{s:s}}", "200", "description", "OK", "content", content(ref_name, false),
                          "401", "description", "Unauthorized");
    if (created)
        json_object_set_new(r, "201",
                            json_pack("{s:s, s:o}", "description", "Created", "content", content(ref_name, false)));
    if (accepted)
        json_object_set_new(r, "202",
                            json_pack("{s:s, s:o}", "description", "Accepted", "content", content(ref_name, false)));
    return r;
}

/* One operation. gvk/params/body/resp are taken (o). */
static json_t *op(const char *action, const char *op_id, const char *desc, const char *tag, json_t *gvk,
                  json_t *params, json_t *body, json_t *resp)
{
    json_t *o = json_pack("{s:[s], s:s, s:s, s:o, s:s, s:o}", "tags", tag, "description", desc, "operationId", op_id,
                          "responses", resp, "x-kubernetes-action", action, "x-kubernetes-group-version-kind", gvk);
    if (params && json_array_size(params))
        json_object_set_new(o, "parameters", params);
    else
        json_decref(params);
    if (body)
        json_object_set_new(o, "requestBody", body);
    return o;
}

static json_t *patch_body(bool smp)
{
    json_t *c = json_object();
    json_object_set_new(c, "application/apply-patch+yaml", json_pack("{s:{s:s}}", "schema", "$ref", REF_PATCH));
    json_object_set_new(c, "application/json-patch+json", json_pack("{s:{s:s}}", "schema", "$ref", REF_PATCH));
    json_object_set_new(c, "application/merge-patch+json", json_pack("{s:{s:s}}", "schema", "$ref", REF_PATCH));
    if (smp)
        json_object_set_new(c, "application/strategic-merge-patch+json",
                            json_pack("{s:{s:s}}", "schema", "$ref", REF_PATCH));
    return json_pack("{s:o, s:b}", "content", c, "required", 1);
}

static json_t *object_body(const char *schema)
{
    return json_pack("{s:{s:{s:o}}, s:b}", "content", "*/*", "schema", ref(schema), "required", 1);
}

/* Paths of one kind added to paths; its schemas to schemas. */
static void add_kind(json_t *paths, json_t *schemas, const fl_kind *k)
{
    char *sname = schema_name(k->group, k->version, k->kind, k->dynamic);
    char *lname = schema_name(k->group, k->version, k->list_kind, k->dynamic);
    char *gc = group_camel(k->group);
    char vc[64];
    snprintf(vc, sizeof(vc), "%s", k->version);
    if (vc[0] >= 'a' && vc[0] <= 'z')
        vc[0] = (char)(vc[0] - 'a' + 'A');
    char *tag = fl_asprintf("%s_%s", k->group[0] ? k->group : "core", k->version);
    const char *ns = k->namespaced ? "Namespaced" : "";
    char *base = k->group[0] ? fl_asprintf("/apis/%s/%s", k->group, k->version) : fl_asprintf("/api/%s", k->version);
    char *coll = k->namespaced ? fl_asprintf("%s/namespaces/{namespace}/%s", base, k->resource)
                               : fl_asprintf("%s/%s", base, k->resource);
    char *item = fl_asprintf("%s/{name}", coll);
    bool smp = !k->dynamic && !strstr(k->group, "karmada.io");
    char *id, *d;

#define GVK() gvk_obj(k->group, k->version, k->kind)
#define NSPARAM() pparam("namespace", "object name and auth scope, such as for teams and projects")
#define PRETTY() qparam("pretty", "string", "If 'true', then the output is pretty printed.")

    /* collection: list, create, deletecollection */
    json_t *pc = json_object();
    id = fl_asprintf("list%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("list or watch objects of kind %s", k->kind);
    json_object_set_new(pc, "get", op("list", id, d, tag, GVK(), list_params(), NULL, responses(lname, false, false)));
    free(id);
    free(d);
    id = fl_asprintf("create%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("create a %s", k->kind);
    json_object_set_new(pc, "post", op("post", id, d, tag, GVK(), write_params(false), object_body(sname),
                                       responses(sname, true, true)));
    free(id);
    free(d);
    id = fl_asprintf("deletecollection%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("delete collection of %s", k->kind);
    {
        json_t *params = list_params();
        delete_params(params);
        json_object_set_new(pc, "delete", op("deletecollection", id, d, tag, GVK(), params,
                                             json_pack("{s:{s:{s:{s:s}}}}", "content", "*/*", "schema", "$ref",
                                                       REF_DELETE),
                                             responses("io.k8s.apimachinery.pkg.apis.meta.v1.Status", false,
                                                       false)));
    }
    free(id);
    free(d);
    json_object_set_new(pc, "parameters", k->namespaced ? json_pack("[o, o]", NSPARAM(), PRETTY())
                                                          : json_pack("[o]", PRETTY()));
    json_object_set_new(paths, coll, pc);

    /* item: get, put, patch, delete */
    json_t *pi = json_object();
    id = fl_asprintf("read%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("read the specified %s", k->kind);
    json_object_set_new(pi, "get", op("get", id, d, tag, GVK(), NULL, NULL, responses(sname, false, false)));
    free(id);
    free(d);
    id = fl_asprintf("replace%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("replace the specified %s", k->kind);
    json_object_set_new(pi, "put", op("put", id, d, tag, GVK(), write_params(false), object_body(sname),
                                      responses(sname, true, false)));
    free(id);
    free(d);
    id = fl_asprintf("patch%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("partially update the specified %s", k->kind);
    json_object_set_new(pi, "patch", op("patch", id, d, tag, GVK(), write_params(true), patch_body(smp),
                                        responses(sname, true, false)));
    free(id);
    free(d);
    id = fl_asprintf("delete%s%s%s%s", gc, vc, ns, k->kind);
    d = fl_asprintf("delete a %s", k->kind);
    json_object_set_new(pi, "delete", op("delete", id, d, tag, GVK(), delete_params(json_array()),
                                         json_pack("{s:{s:{s:{s:s}}}}", "content", "*/*", "schema", "$ref",
                                                   REF_DELETE),
                                         responses("io.k8s.apimachinery.pkg.apis.meta.v1.Status", false, true)));
    free(id);
    free(d);
    json_t *item_params = k->namespaced ? json_pack("[o, o, o]", pparam("name", "name of the " "resource"), NSPARAM(),
                                                    PRETTY())
                                        : json_pack("[o, o]", pparam("name", "name of the resource"), PRETTY());
    json_object_set_new(pi, "parameters", item_params);
    json_object_set_new(paths, item, pi);

    /* subresources share the item's parameters */
    const char *subs[2] = {k->has_status ? "status" : NULL, k->has_scale ? "scale" : NULL};
    for (int s = 0; s < 2; s++) {
        if (!subs[s])
            continue;
        bool scale = s == 1;
        const char *suffix = scale ? "Scale" : "Status";
        const char *target = scale ? SCALE_NAME : sname;
        json_t *ps = json_object();
        char *sp = fl_asprintf("%s/%s", item, subs[s]);
#define SGVK() (scale ? gvk_obj("autoscaling", "v1", "Scale") : GVK())
        id = fl_asprintf("read%s%s%s%s%s", gc, vc, ns, k->kind, suffix);
        d = fl_asprintf("read %s of the specified %s", subs[s], k->kind);
        json_object_set_new(ps, "get", op("get", id, d, tag, SGVK(), NULL, NULL, responses(target, false, false)));
        free(id);
        free(d);
        id = fl_asprintf("replace%s%s%s%s%s", gc, vc, ns, k->kind, suffix);
        d = fl_asprintf("replace %s of the specified %s", subs[s], k->kind);
        json_object_set_new(ps, "put", op("put", id, d, tag, SGVK(), write_params(false), object_body(target),
                                          responses(target, true, false)));
        free(id);
        free(d);
        id = fl_asprintf("patch%s%s%s%s%s", gc, vc, ns, k->kind, suffix);
        d = fl_asprintf("partially update %s of the specified %s", subs[s], k->kind);
        json_object_set_new(ps, "patch", op("patch", id, d, tag, SGVK(), write_params(true), patch_body(smp),
                                            responses(target, true, false)));
        free(id);
        free(d);
        json_object_set_new(ps, "parameters", fl_json_deep_copy(item_params));
        json_object_set_new(paths, sp, ps);
        free(sp);
#undef SGVK
    }

    /* list across namespaces */
    if (k->namespaced) {
        char *all = fl_asprintf("%s/%s", base, k->resource);
        id = fl_asprintf("list%s%s%sForAllNamespaces", gc, vc, k->kind);
        d = fl_asprintf("list or watch objects of kind %s", k->kind);
        json_object_set_new(paths, all,
                            json_pack("{s:o, s:[o]}", "get",
                                      op("list", id, d, tag, GVK(), list_params(), NULL,
                                         responses(lname, false, false)),
                                      "parameters", PRETTY()));
        free(id);
        free(d);
        free(all);
    }
#undef GVK
#undef NSPARAM
#undef PRETTY

    json_object_set_new(schemas, sname, kind_schema(k));
    json_object_set_new(schemas, lname, list_schema(k, sname));
    if (k->has_scale && !json_object_get(schemas, SCALE_NAME))
        json_object_set_new(schemas, SCALE_NAME, scale_schema());
    free(sname);
    free(lname);
    free(gc);
    free(tag);
    free(base);
    free(coll);
    free(item);
}

static json_t *build_doc(const fl_kind **kinds, size_t n, const char *group, const char *version)
{
    json_t *paths = json_object(), *schemas = json_object();
    /* the group-version's discovery endpoint, as upstream lists it */
    char *base = group[0] ? fl_asprintf("/apis/%s/%s/", group, version) : fl_asprintf("/api/%s/", version);
    char *gc = group_camel(group);
    char *id = fl_asprintf("get%s%c%sAPIResources", gc, version[0] >= 'a' && version[0] <= 'z' ? version[0] - 32 : version[0], version + 1);
    char *tag = fl_asprintf("%s_%s", group[0] ? group : "core", version);
    json_object_set_new(paths, base,
                        json_pack("{s:{s:[s], s:s, s:s, s:{s:{s:s, s:o}, s:{s:s}}}}", "get", "tags", tag,
                                  "description", "get available resources", "operationId", id, "responses", "200",
                                  "description", "OK", "content",
                                  content("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
                                          true),
                                  "401", "description", "Unauthorized"));
    free(base);
    free(gc);
    free(id);
    free(tag);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(kinds[i]->group, group) && !strcmp(kinds[i]->version, version))
            add_kind(paths, schemas, kinds[i]);
    json_object_set_new(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
                        json_pack("{s:s, s:s}", "type", "object", "description",
                                  "Patch is provided to give a concrete name and type to the Kubernetes PATCH request "
                                  "body."));
    json_object_set_new(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
                        json_pack("{s:s, s:s}", "type", "object", "description",
                                  "Status is a return value for calls that don't return other objects."));
    json_object_set_new(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
                        json_pack("{s:s, s:s}", "type", "object", "description",
                                  "DeleteOptions may be provided when deleting an API object."));
    json_object_set_new(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
                        json_pack("{s:s, s:s}", "type", "object", "description",
                                  "APIResourceList is a list of APIResource."));
    return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info", "title", "Flotilla", "version",
                     "v1", "paths", paths, "components", "schemas", schemas);
}

/* ------------------------------------------------------------------ */
/* OpenAPI v2 (/openapi/v2): one swagger 2.0 document for every kind    */
/* ------------------------------------------------------------------ */

/* "#/components/schemas/X" -> "#/definitions/X" throughout v, in place. */
static void v2_refs(json_t *v)
{
    static const char v3[] = "#/components/schemas/";
    if (json_is_object(v)) {
        const char *key;
        json_t *e;
        json_object_foreach(v, key, e) {
            const char *r = json_string_value(e);
            if (!strcmp(key, "$ref") && r && !strncmp(r, v3, sizeof v3 - 1))
                json_object_set_new(v, key, json_sprintf("#/definitions/%s", r + sizeof v3 - 1));
            else
                v2_refs(e);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) v2_refs(e);
    }
}

static json_t *v2_query(const char *name, const char *type)
{
    return json_pack("{s:s, s:s, s:s, s:b}", "name", name, "in", "query", "type", type, "uniqueItems", 1);
}

static json_t *v2_path_param(const char *name)
{
    return json_pack("{s:s, s:s, s:s, s:b, s:b}", "name", name, "in", "path", "type", "string", "required", 1,
                     "uniqueItems", 1);
}

/* One operation of kind k; params is taken, body_ref names the body's definition (NULL: none). */
static json_t *v2_op(const fl_kind *k, const char *action, const char *verb_id, json_t *params,
                     const char *body_ref, const char *resp_name, bool patch)
{
    char *gc = group_camel(k->group);
    char vc[64];
    snprintf(vc, sizeof vc, "%s", k->version);
    vc[0] = (char)(vc[0] >= 'a' && vc[0] <= 'z' ? vc[0] - 'a' + 'A' : vc[0]);
    char *id = fl_asprintf("%s%s%s%s%s", verb_id, gc, vc, k->namespaced ? "Namespaced" : "", k->kind);
    char *tag = fl_asprintf("%s_%s", k->group[0] ? k->group : "core", k->version);
    json_t *consumes = patch ? json_pack("[s, s, s, s]", "application/json-patch+json", "application/merge-patch+json",
                                         "application/strategic-merge-patch+json", "application/apply-patch+yaml")
                             : json_pack("[s]", "*/*");
    if (body_ref)
        json_array_insert_new(params, 0,
                              json_pack("{s:s, s:s, s:b, s:{s:s++}}", "name", "body", "in", "body", "required", 1,
                                        "schema", "$ref", "#/definitions/", body_ref, ""));
    json_t *o = json_pack("{s:[s], s:s, s:o, s:[s, s], s:[s], s:o, s:{s:{s:s, s:{s:s++}}, s:{s:s}}, s:s, s:o}",
                          "tags", tag, "operationId", id, "consumes", consumes, "produces", "application/json",
                          "application/yaml", "schemes", "https", "parameters", params, "responses", "200",
                          "description", "OK", "schema", "$ref", "#/definitions/", resp_name, "", "401",
                          "description", "Unauthorized", "x-kubernetes-action", action,
                          "x-kubernetes-group-version-kind", gvk_obj(k->group, k->version, k->kind));
    free(gc);
    free(id);
    free(tag);
    return o;
}

static json_t *v2_write_params(bool patch)
{
    json_t *a = json_pack("[o, o, o]", v2_query("dryRun", "string"), v2_query("fieldManager", "string"),
                          v2_query("fieldValidation", "string"));
    if (patch)
        json_array_append_new(a, v2_query("force", "boolean"));
    return a;
}

static void v2_add_kind(json_t *paths, json_t *defs, const fl_kind *k)
{
    char *sname = schema_name(k->group, k->version, k->kind, k->dynamic);
    char *lname = schema_name(k->group, k->version, k->list_kind, k->dynamic);
    char *base = k->group[0] ? fl_asprintf("/apis/%s/%s", k->group, k->version) : fl_asprintf("/api/%s", k->version);
    char *coll = k->namespaced ? fl_asprintf("%s/namespaces/{namespace}/%s", base, k->resource)
                               : fl_asprintf("%s/%s", base, k->resource);
    char *item = fl_asprintf("%s/{name}", coll);
    json_t *pc = json_object(), *pi = json_object();
    json_object_set_new(pc, "get", v2_op(k, "list", "list", json_pack("[o, o]", v2_query("labelSelector", "string"),
                                                                       v2_query("fieldSelector", "string")),
                                         NULL, lname, false));
    json_object_set_new(pc, "post", v2_op(k, "post", "create", v2_write_params(false), sname, sname, false));
    json_object_set_new(pi, "get", v2_op(k, "get", "read", json_array(), NULL, sname, false));
    json_object_set_new(pi, "put", v2_op(k, "put", "replace", v2_write_params(false), sname, sname, false));
    json_object_set_new(pi, "patch", v2_op(k, "patch", "patch", v2_write_params(true),
                                           "io.k8s.apimachinery.pkg.apis.meta.v1.Patch", sname, true));
    json_object_set_new(pi, "delete", v2_op(k, "delete", "delete", json_array(), NULL,
                                            "io.k8s.apimachinery.pkg.apis.meta.v1.Status", false));
    json_t *pp = k->namespaced ? json_pack("[o]", v2_path_param("namespace")) : json_array();
    json_object_set_new(pc, "parameters", json_incref(pp));
    json_t *ip = fl_json_deep_copy(pp);
    json_array_insert_new(ip, 0, v2_path_param("name"));
    json_object_set_new(pi, "parameters", ip);
    json_decref(pp);
    json_object_set_new(paths, coll, pc);
    json_object_set_new(paths, item, pi);

    json_object_set_new(defs, sname, kind_schema(k));
    json_t *list = list_schema(k, sname);
    v2_refs(list);
    json_object_set_new(defs, lname, list);
    free(sname);
    free(lname);
    free(base);
    free(coll);
    free(item);
}

static json_t *build_v2(const fl_kind **kinds, size_t n)
{
    json_t *paths = json_object(), *defs = json_object();
    for (size_t i = 0; i < n; i++)
        v2_add_kind(paths, defs, kinds[i]);
    json_object_set_new(defs, "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
                        json_pack("{s:s}", "type", "object"));
    json_object_set_new(defs, "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
                        json_pack("{s:s}", "type", "object"));
    return json_pack("{s:s, s:{s:s, s:s}, s:o, s:o}", "swagger", "2.0", "info", "title", "Flotilla", "version", "v1",
                     "paths", paths, "definitions", defs);
}

/* 32 hex digits over the canonical serialisation (two independent FNV-1a 64 hashes). */
static char *doc_hash(const json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t a = 1469598103934665603ULL, b = 0x84222325cbf29ce4ULL;
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        a = (a ^ *p) * 1099511628211ULL;
        b = (b ^ *p) * 0x100000001b3ULL;
        b ^= b >> 29;
    }
    free(s);
    return fl_asprintf("%016llX%016llX", (unsigned long long)a, (unsigned long long)b);
}

static void *cache_new(void)
{
    oa_cache *c = fl_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void cache_free(void *p)
{
    oa_cache *c = p;
    json_decref(c->index);
    json_decref(c->docs);
    json_decref(c->v2);
    free(c->v2_pb);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Rebuild every document if reg's kind set changed. Caller holds c->lock. */
static void cache_refresh(fl_kindreg *reg, oa_cache *c)
{
    uint64_t gen = fl_kindreg_generation(reg);
    if (c->valid && c->gen == gen)
        return;
    json_decref(c->index);
    json_decref(c->docs);
    json_decref(c->v2);
    free(c->v2_pb);
    c->v2 = NULL;
    c->v2_pb = NULL;
    c->v2_pb_len = 0;
    const fl_kind **kinds;
    size_t n = fl_kindreg_list(reg, &kinds);
    json_t *paths = json_object();
    c->docs = json_object();
    for (size_t i = 0; i < n; i++) {
        char *gvp = gvpath_of(kinds[i]->group, kinds[i]->version);
        if (!json_object_get(c->docs, gvp)) {
            json_t *doc = build_doc(kinds, n, kinds[i]->group, kinds[i]->version);
            char *h = doc_hash(doc);
            json_object_set_new(paths, gvp,
                                json_pack("{s:s+++}", "serverRelativeURL", "/openapi/v3/", gvp, "?hash=", h));
            json_object_set_new(c->docs, gvp, doc);
            free(h);
        }
        free(gvp);
    }
    free(kinds);
    c->index = json_pack("{s:o}", "paths", paths);
    c->gen = gen;
    c->valid = true;
}

/* The cache of reg's documents, up to date and locked (the caller unlocks c->lock). */
static oa_cache *cache_lock_fresh(fl_kindreg *reg)
{
    reg = fl_kindreg_shared(reg);
    oa_cache *c = fl_kindreg_cache(reg, &cache_key, cache_new, cache_free);
    pthread_mutex_lock(&c->lock);
    cache_refresh(reg, c);
    return c;
}

json_t *fl_openapi_v3_index(fl_kindreg *reg)
{
    oa_cache *c = cache_lock_fresh(reg);
    json_t *v = json_incref(c->index);
    pthread_mutex_unlock(&c->lock);
    return v;
}

json_t *fl_openapi_v3_doc(fl_kindreg *reg, const char *gvpath)
{
    if (!gvpath)
        return NULL;
    while (*gvpath == '/')
        gvpath++;
    size_t n = strcspn(gvpath, "?");
    char *key = fl_strndup(gvpath, n);
    while (n && key[n - 1] == '/')
        key[--n] = '\0';
    oa_cache *c = cache_lock_fresh(reg);
    json_t *v = json_incref(json_object_get(c->docs, key));
    pthread_mutex_unlock(&c->lock);
    free(key);
    return v;
}

/* The swagger document of the cache's registry, built on first use. Caller holds c->lock. */
static json_t *v2_doc(fl_kindreg *reg, oa_cache *c)
{
    if (!c->v2) {
        const fl_kind **kinds;
        size_t n = fl_kindreg_list(fl_kindreg_shared(reg), &kinds);
        c->v2 = build_v2(kinds, n);
        free(kinds);
    }
    return c->v2;
}

json_t *fl_openapi_v2(fl_kindreg *reg)
{
    oa_cache *c = cache_lock_fresh(reg);
    json_t *v = json_incref(v2_doc(reg, c));
    pthread_mutex_unlock(&c->lock);
    return v;
}

char *fl_openapi_v2_pb(fl_kindreg *reg, size_t *len)
{
    oa_cache *c = cache_lock_fresh(reg);
    if (!c->v2_pb)
        c->v2_pb = fl_openapi_v2_encode(v2_doc(reg, c), &c->v2_pb_len);
    char *out = fl_malloc(c->v2_pb_len ? c->v2_pb_len : 1);
    memcpy(out, c->v2_pb, c->v2_pb_len);
    *len = c->v2_pb_len;
    pthread_mutex_unlock(&c->lock);
    return out;
}
