/* requirements.c - ReplicaRequirements and Components from a customization, checked and
 * made canonical (requirements.h). One place for both backends that can answer GetReplicas
 * and GetComponents with them. */
#include "interp/requirements.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/quantity.h"

typedef struct field_type {
    const char *key;
    json_type type;
    const char *word; /* the type as a message says it */
} field_type;

static const field_type REQUIREMENT_FIELDS[] = {
    {"nodeClaim", JSON_OBJECT, "an object"},
    {"resourceRequest", JSON_OBJECT, "an object"},
    {"namespace", JSON_STRING, "a string"},
    {"priorityClassName", JSON_STRING, "a string"},
    {NULL, 0, NULL},
};

static const field_type NODE_CLAIM_FIELDS[] = {
    {"nodeSelector", JSON_OBJECT, "an object"},
    {"tolerations", JSON_ARRAY, "an array"},
    {"hardNodeAffinity", JSON_OBJECT, "an object"},
    {NULL, 0, NULL},
};

/* Each field of o present and not null has its type, or *why names it ("<where><key>"). */
static int check_types(const json_t *o, const field_type *fields, const char *where, char **why)
{
    for (const field_type *f = fields; f->key; f++) {
        json_t *v = json_object_get(o, f->key);
        if (v && !json_is_null(v) && json_typeof(v) != f->type) {
            *why = fl_asprintf("%s%s: must be %s", where, f->key, f->word);
            return FL_EINVAL;
        }
    }
    return 0;
}

/* A quantity value of a resource list, as its canonical string, in place. */
static int canonical_quantity(json_t *list, const char *key, json_t *v, char **why)
{
    char num[64], out[64];
    const char *text = fl_json_scalar_text(v, num, sizeof num);
    fl_quantity q;
    if (!text || fl_quantity_parse(text, &q)) {
        char *t = text ? fl_err_one_line(text, strlen(text), 64) : NULL;
        *why = t ? fl_asprintf("resourceRequest.%s: invalid quantity \"%s\"", key, t)
                 : fl_asprintf("resourceRequest.%s: must be a quantity", key);
        free(t);
        return FL_EINVAL;
    }
    fl_quantity_format(&q, out, sizeof out);
    json_object_set_new(list, key, json_string(out));
    return 0;
}

int fl_interp_check_requirements(json_t *req, char **why)
{
    int rc = check_types(req, REQUIREMENT_FIELDS, "", why);
    if (rc)
        return rc;
    json_t *claim = json_object_get(req, "nodeClaim");
    if (json_is_object(claim) && (rc = check_types(claim, NODE_CLAIM_FIELDS, "nodeClaim.", why)))
        return rc;
    json_t *list = json_object_get(req, "resourceRequest"), *v;
    const char *key;
    void *tmp;
    if (json_is_object(list))
        json_object_foreach_safe(list, tmp, key, v) {
            if ((rc = canonical_quantity(list, key, v, why)))
                return rc;
        }
    return 0;
}

/* The members of o not in keep[] removed (what Karmada's decoding into its types drops). */
static void keep_only(json_t *o, const char *const *keep)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, key, v) {
        bool known = false;
        for (const char *const *k = keep; *k && !known; k++)
            known = !strcmp(*k, key);
        if (!known || json_is_null(v))
            json_object_del(o, key);
    }
}

/* One component, element i: checked, canonical in place. */
static int check_component(json_t *c, size_t i, char **why)
{
    static const char *const comp_keys[] = {"name", "replicas", "replicaRequirements", NULL};
    static const char *const req_keys[] = {"nodeClaim", "resourceRequest", "priorityClassName", NULL};
    if (!json_is_object(c)) {
        *why = fl_asprintf("[%zu]: must be an object {name, replicas, replicaRequirements}", i);
        return FL_EINVAL;
    }
    keep_only(c, comp_keys);
    const char *name = json_string_value(json_object_get(c, "name"));
    if (!name || !*name) {
        *why = fl_asprintf("[%zu].name: must be a non-empty string", i);
        return FL_EINVAL;
    }
    if (strlen(name) > FL_INTERP_COMPONENT_NAME_MAX) {
        *why = fl_asprintf("[%zu].name: must be at most %d characters", i, FL_INTERP_COMPONENT_NAME_MAX);
        return FL_EINVAL;
    }
    json_t *n = json_object_get(c, "replicas");
    if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > INT32_MAX) {
        *why = fl_asprintf("[%zu].replicas: must be an integer from 0 to %d", i, INT32_MAX);
        return FL_EINVAL;
    }
    json_t *req = json_object_get(c, "replicaRequirements");
    if (!req)
        return 0;
    if (!json_is_object(req)) {
        *why = fl_asprintf("[%zu].replicaRequirements: must be an object", i);
        return FL_EINVAL;
    }
    keep_only(req, req_keys);
    char *w = NULL;
    int rc = fl_interp_check_requirements(req, &w);
    if (rc) {
        *why = fl_asprintf("[%zu].replicaRequirements.%s", i, w);
        free(w);
        return rc;
    }
    if (!json_object_size(req))
        json_object_del(c, "replicaRequirements");
    return 0;
}

int fl_interp_check_components(json_t *comps, char **why)
{
    *why = NULL;
    if (!json_is_array(comps)) {
        *why = fl_strdup(": must be an array of components");
        return FL_EINVAL;
    }
    size_t i;
    json_t *c;
    json_array_foreach(comps, i, c) {
        int rc = check_component(c, i, why);
        if (rc)
            return rc;
        const char *name = json_string_value(json_object_get(c, "name"));
        for (size_t j = 0; j < i; j++)
            if (!strcmp(name, json_string_value(json_object_get(json_array_get(comps, j), "name")))) {
                *why = fl_asprintf("[%zu].name: \"%s\" is also the name of component %zu; names must be unique", i,
                                   name, j);
                return FL_EINVAL;
            }
    }
    return 0;
}
