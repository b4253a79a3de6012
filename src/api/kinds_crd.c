/* kinds_crd.c - CustomResourceDefinitions become dynamic kinds.
 *
 * fl_kindreg_apply_crd reads an apiextensions.k8s.io/v1 CustomResourceDefinition and
 * builds one fl_kind per served version: names (plural, singular, kind, listKind,
 * shortNames, categories), scope, the status and scale subresources, Table columns
 * from additionalPrinterColumns (or upstream's default Age column), and the version
 * object itself (schema, columns) kept in crd_version for validation and OpenAPI.
 * Publishing the kinds in one registry and retiring the previous ones there is the
 * registry's job (kinds.c).
 *
 * Only what is needed to serve the CRD is checked here, each failure naming the field
 * the way Kubernetes does ("spec.names.plural: Required value"); the full CRD
 * validation (schema structure, names' DNS rules) is fl_validate_crd's. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kinds.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"

/* In kinds.c (registry internals shared inside the kinds module). */
bool fl_kinds__crd_unchanged(fl_kindreg *reg, const char *name, const json_t *spec);
int fl_kinds__crd_replace(fl_kindreg *reg, const char *name, json_t *spec, fl_kind **kinds, size_t n, char **err);
void fl_kinds__dynamic_free(fl_kind *k);

/* Free a dynamic kind: one that was never published, or any of a registry being freed
 * (published ones are otherwise retired, not freed). */
void fl_kinds__dynamic_free(fl_kind *k)
{
    if (!k)
        return;
    free((char *)k->group);
    free((char *)k->version);
    free((char *)k->kind);
    free((char *)k->list_kind);
    free((char *)k->resource);
    free((char *)k->singular);
    free((char *)k->crd_name);
    for (size_t i = 0; i < 4 && k->short_names[i]; i++)
        free((char *)k->short_names[i]);
    for (size_t i = 0; i < 3 && k->categories[i]; i++)
        free((char *)k->categories[i]);
    if (k->columns) {
        for (const fl_column *c = k->columns; c->name; c++) {
            free((char *)c->name);
            free((char *)c->type);
            free((char *)c->format);
            free((char *)c->description);
            free((char *)c->jsonpath);
        }
        free((fl_column *)k->columns);
    }
    json_decref(k->crd_version);
    free(k);
}

static const char *str_at(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static char *lower_dup(const char *s)
{
    char *d = fl_strdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

/* Copy up to max-1 strings of a JSON string array into a NULL-terminated slot array.
 * Non-strings are an error (field names the offending entry). */
static int copy_names(const json_t *arr, const char **slots, size_t max, const char *field, const char *crd,
                      char **err)
{
    size_t i, used = 0;
    json_t *v;
    if (!arr)
        return 0;
    if (!json_is_array(arr)) {
        *err = fl_asprintf("%s: Invalid value: must be a list of strings", field);
        return FL_EINVAL;
    }
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v) || !json_string_length(v)) {
            *err = fl_asprintf("%s[%zu]: Invalid value: must be a non-empty string", field, i);
            return FL_EINVAL;
        }
        if (used + 1 < max)
            slots[used++] = fl_strdup(json_string_value(v));
        else
            fl_log_kvf(FL_LOG_WARN, "kinds", FL_LOG_KV("object", FL_LOG_OBJ("CustomResourceDefinition", NULL, crd)),
                       "%s[%zu] \"%s\" ignored (at most %zu are served)", field, i, json_string_value(v), max - 1);
    }
    return 0;
}

static fl_column *build_columns(const json_t *version, size_t vi, char **err)
{
    const json_t *cols = json_object_get(version, "additionalPrinterColumns");
    size_t n = json_is_array(cols) ? json_array_size(cols) : 0, i;
    json_t *c;
    if (cols && !json_is_array(cols)) {
        *err = fl_asprintf("spec.versions[%zu].additionalPrinterColumns: Invalid value: must be a list", vi);
        return NULL;
    }
    fl_column *out = fl_calloc(n + 2, sizeof(*out));
    if (!n) {
        /* upstream's default when a CRD declares no columns */
        out[0].name = fl_strdup("Age");
        out[0].type = fl_strdup("date");
        out[0].format = fl_strdup("");
        out[0].description = fl_strdup("CreationTimestamp is a timestamp representing the server time when this "
                                       "object was created.");
        out[0].jsonpath = fl_strdup(".metadata.creationTimestamp");
        return out;
    }
    json_array_foreach(cols, i, c) {
        const char *name = str_at(c, "name"), *type = str_at(c, "type"), *jp = str_at(c, "jsonPath");
        const char *missing = !name ? "name" : !type ? "type" : !jp ? "jsonPath" : NULL;
        if (missing) {
            *err = fl_asprintf("spec.versions[%zu].additionalPrinterColumns[%zu].%s: Required value", vi, i,
                               missing);
            for (fl_column *p = out; p->name; p++) {
                free((char *)p->name);
                free((char *)p->type);
                free((char *)p->format);
                free((char *)p->description);
                free((char *)p->jsonpath);
            }
            free(out);
            return NULL;
        }
        out[i].name = fl_strdup(name);
        out[i].type = fl_strdup(type);
        out[i].format = fl_strdup(str_at(c, "format") ? str_at(c, "format") : "");
        out[i].description = fl_strdup(str_at(c, "description") ? str_at(c, "description") : "");
        out[i].jsonpath = fl_strdup(jp);
        const json_t *prio = json_object_get(c, "priority");
        out[i].priority = json_is_integer(prio) ? (int)json_integer_value(prio) : 0;
    }
    return out;
}

/* The CRD's top-level fields that serving needs: name, group, names, scope, versions, and
 * the name being plural.group. Returns NULL when they hold, else the heap message naming
 * the first field that does not. */
static char *check_crd_fields(const json_t *crd)
{
    const json_t *spec = json_object_get(crd, "spec");
    const json_t *names = json_object_get(spec, "names");
    const json_t *versions = json_object_get(spec, "versions");
    const char *name = str_at(json_object_get(crd, "metadata"), "name");
    const char *group = str_at(spec, "group");
    const char *plural = str_at(names, "plural");
    const char *kind = str_at(names, "kind");
    const char *scope = str_at(spec, "scope");

    if (!json_is_object(crd))
        return fl_strdup("body: Invalid value: a CustomResourceDefinition must be a JSON object");
    if (!name)
        return fl_strdup("metadata.name: Required value");
    if (!json_is_object(spec))
        return fl_strdup("spec: Required value");
    if (!group)
        return fl_strdup("spec.group: Required value");
    if (!json_is_object(names))
        return fl_strdup("spec.names: Required value");
    if (!plural)
        return fl_strdup("spec.names.plural: Required value");
    if (!kind)
        return fl_strdup("spec.names.kind: Required value");
    if (!scope)
        return fl_strdup("spec.scope: Required value");
    if (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))
        return fl_asprintf("spec.scope: Unsupported value: \"%s\": supported values: \"Cluster\", \"Namespaced\"",
                           scope);
    if (!json_is_array(versions) || !json_array_size(versions))
        return fl_strdup("spec.versions: Required value: must have exactly one version marked as storage version");
    char *want = fl_asprintf("%s.%s", plural, group);
    bool ok = !strcmp(want, name);
    free(want);
    if (!ok)
        return fl_asprintf("metadata.name: Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group", name);
    for (const char *p = plural; *p; p++)
        if (isupper((unsigned char)*p))
            return fl_asprintf("spec.names.plural: Invalid value: \"%s\": must be lower case", plural);
    return NULL;
}

/* Version i of versions: a name, unique among the versions, and a served flag. Returns
 * NULL when it has them, else the heap message. */
static char *check_version(const json_t *versions, size_t i)
{
    const json_t *v = json_array_get(versions, i);
    const char *vname = str_at(v, "name");
    const json_t *served = json_object_get(v, "served");
    if (!json_is_object(v) || !vname)
        return fl_asprintf("spec.versions[%zu].name: Required value", i);
    if (!json_is_boolean(served))
        return fl_asprintf("spec.versions[%zu].served: Required value", i);
    for (size_t j = 0; j < i; j++) {
        const char *other = str_at(json_array_get(versions, j), "name");
        if (other && !strcmp(other, vname))
            return fl_asprintf("spec.versions[%zu].name: Duplicate value: \"%s\"", i, vname);
    }
    return NULL;
}

/* Fill k, zeroed, as the kind that serves version v (index vi) of the checked CRD crd.
 * Returns 0, or -1 with *msg (heap) set; what k holds then is freed with it. */
static int fill_kind(fl_kind *k, const json_t *crd, const json_t *v, size_t vi, char **msg)
{
    const json_t *spec = json_object_get(crd, "spec");
    const json_t *names = json_object_get(spec, "names");
    const char *name = str_at(json_object_get(crd, "metadata"), "name");
    const char *group = str_at(spec, "group");
    const char *kind = str_at(names, "kind");
    const char *vname = str_at(v, "name");
    k->group = fl_strdup(group);
    k->version = fl_strdup(vname);
    k->kind = fl_strdup(kind);
    k->list_kind = str_at(names, "listKind") ? fl_strdup(str_at(names, "listKind")) : fl_asprintf("%sList", kind);
    k->resource = fl_strdup(str_at(names, "plural"));
    k->singular = str_at(names, "singular") ? fl_strdup(str_at(names, "singular")) : lower_dup(kind);
    k->crd_name = fl_strdup(name);
    k->namespaced = !strcmp(str_at(spec, "scope"), "Namespaced");
    k->dynamic = true;
    k->served = true;
    const json_t *sub = json_object_get(v, "subresources");
    k->has_status = json_is_object(json_object_get(sub, "status"));
    k->has_scale = json_is_object(json_object_get(sub, "scale"));
    if (copy_names(json_object_get(names, "shortNames"), k->short_names, 4, "spec.names.shortNames", name, msg) ||
        copy_names(json_object_get(names, "categories"), k->categories, 3, "spec.names.categories", name, msg))
        return -1;
    if (!(k->columns = build_columns(v, vi, msg)))
        return -1;
    k->crd_version = fl_json_deep_copy(v);
    const json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
    k->preserve_unknown = !json_is_object(schema) ||
                          json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields"));
    snprintf(k->api_version, sizeof(k->api_version), "%s/%s", group, vname);
    return 0;
}

int fl_kindreg_apply_crd(fl_kindreg *reg, const json_t *crd, char **err)
{
    char *msg = NULL;
    fl_kind **kinds = NULL;
    size_t nkinds = 0;
    int rc = FL_EINVAL;
    if (err)
        *err = NULL;

    if ((msg = check_crd_fields(crd)))
        goto fail;
    const json_t *spec = json_object_get(crd, "spec");
    const json_t *versions = json_object_get(spec, "versions");
    const char *name = str_at(json_object_get(crd, "metadata"), "name");

    /* Served versions -> kinds. */
    size_t i;
    json_t *v;
    kinds = fl_calloc(json_array_size(versions), sizeof(*kinds));
    json_array_foreach(versions, i, v) {
        if ((msg = check_version(versions, i)))
            goto fail;
        if (!json_is_true(json_object_get(v, "served")))
            continue;
        fl_kind *k = fl_calloc(1, sizeof(*k));
        kinds[nkinds++] = k; /* freed with the others on failure */
        if (fill_kind(k, crd, v, i, &msg))
            goto fail;
    }

    if (fl_kinds__crd_unchanged(reg, name, spec)) {
        rc = 0;
        goto fail; /* not a failure: nothing to publish, free what we built */
    }
    /* ownership of the spec copy and the kinds passes to the registry */
    rc = fl_kinds__crd_replace(reg, name, fl_json_deep_copy(spec), kinds, nkinds, &msg);
    kinds = NULL;
    nkinds = 0;
    if (rc)
        goto fail;
    return 0;

fail:
    for (size_t x = 0; x < nkinds; x++)
        fl_kinds__dynamic_free(kinds[x]);
    free(kinds);
    if (msg) {
        if (err)
            *err = msg;
        else
            free(msg);
    }
    return rc;
}

void fl_kindreg_remove_crd(fl_kindreg *reg, const char *name)
{
    if (name)
        fl_kinds__crd_replace(reg, name, NULL, NULL, 0, NULL);
}
