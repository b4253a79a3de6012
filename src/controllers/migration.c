/* migration.c - the migration marks on their way down: policy → binding → Work (see
 * migration.h). Both steps only copy; what the marks mean is the executor's
 * (execution_migrate.c). */
#include "controllers/migration.h"

#include <string.h>

#include "core/json.h"
#include "core/json_get.h"
#include "core/wellknown.h"

void fl_migration_binding_marks(json_t *annotations, const json_t *policy_annotations)
{
    static const char *const follow[] = {FL_ADOPT_KEY, FL_PROMOTED_FROM_ANNOTATION};
    for (size_t i = 0; i < sizeof follow / sizeof *follow; i++) {
        const char *v = fl_json_str(policy_annotations, follow[i]);
        if (v)
            json_object_set_new(annotations, follow[i], json_string(v));
        else
            json_object_del(annotations, follow[i]);
    }
    const char *rel = fl_json_str(policy_annotations, FL_RELEASE_ANNOTATION);
    if (rel && !strcmp(rel, "true"))
        json_object_set_new(annotations, FL_RELEASE_ANNOTATION, json_string("true"));
}

void fl_migration_work_marks(const json_t *binding, const json_t *tmd, json_t *work_annotations)
{
    const json_t *banns = json_object_get(json_object_get(binding, "metadata"), "annotations");
    const char *rel = fl_json_str(banns, FL_RELEASE_ANNOTATION);
    if (rel && !strcmp(rel, "true"))
        json_object_set_new(work_annotations, FL_RELEASE_ANNOTATION, json_string("true"));
    const char *adopt = fl_json_str(banns, FL_ADOPT_KEY);
    if (adopt)
        json_object_set_new(work_annotations, FL_ADOPT_KEY, json_string(adopt));
    const char *from = fl_json_str(banns, FL_PROMOTED_FROM_ANNOTATION);
    if (!from)
        from = fl_json_str(json_object_get(tmd, "annotations"), FL_PROMOTED_FROM_ANNOTATION);
    if (from)
        json_object_set_new(work_annotations, FL_PROMOTED_FROM_ANNOTATION, json_string(from));
}

static const char *const KEYS[] = {FL_ADOPT_KEY, FL_PROMOTED_FROM_ANNOTATION, FL_RELEASE_ANNOTATION};

uint64_t fl_migration_marks_digest(const json_t *obj)
{
    json_t *m = json_object();
    for (size_t i = 0; i < sizeof KEYS / sizeof *KEYS; i++) {
        const char *v = fl_json_meta_map(obj, "annotations", KEYS[i]);
        if (v)
            json_object_set_new(m, KEYS[i], json_string(v));
    }
    uint64_t h = fl_json_hash(m);
    json_decref(m);
    return h;
}

bool fl_migration_marks_same(const json_t *a, const json_t *b)
{
    for (size_t i = 0; i < sizeof KEYS / sizeof *KEYS; i++) {
        const char *x = fl_json_meta_map(a, "annotations", KEYS[i]), *y = fl_json_meta_map(b, "annotations", KEYS[i]);
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
            return false;
    }
    return true;
}
