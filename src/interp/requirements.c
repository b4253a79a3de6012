/* requirements.c - ReplicaRequirements from a customization, checked and made canonical
 * (requirements.h). One place for both backends that can answer GetReplicas with them. */
#include "interp/requirements.h"

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
