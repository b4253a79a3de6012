/* execution_migrate.c - the executor's part in migration (docs/migration.md): whether a
 * Work may take over a member object that nobody manages (the adoption allow-list), and
 * whether a Work is released.
 *
 * conflictResolution Overwrite, as Karmada has it, takes over any object of the same name it
 * finds in the member. Here it does so only for an object the allow-list admits: the template's
 * namespace on the control plane carries the label migration.flotilla.io/adopt="true", or
 * its policy the annotation of that name, or the template was written by `flotilla ctl
 * promote` (whose mark is its own permission). A Work written directly, not by a binding, is
 * its writer's own permission. Objects another Work manages are handed
 * over as before: the list is about objects Flotilla did not create. The policy's
 * annotation and promote's mark reach the Work through the detector and the binding
 * controller; the namespace is read here, on the one path that needs it (an unmanaged
 * object found where a manifest goes), so nothing else pays for it. */
#include "controllers/execution_priv.h"

#include <string.h>

#include "core/json_get.h"
#include "core/wellknown.h"

static const fl_gvr NAMESPACES = {"v1", "namespaces"};

bool fl_exec_released(const json_t *work)
{
    const char *v = fl_json_meta_map(work, "annotations", FL_RELEASE_ANNOTATION);
    return v && !strcmp(v, "true");
}

bool fl_exec_adoption_allowed(exec *x, const json_t *work)
{
    const char *adopt = fl_json_meta_map(work, "annotations", FL_ADOPT_KEY);
    if ((adopt && !strcmp(adopt, "true")) || fl_json_meta_map(work, "annotations", FL_PROMOTED_FROM_ANNOTATION))
        return true;
    /* a Work no binding wrote: whoever wrote it asked for Overwrite on it, no policy did */
    if (!fl_json_meta_map(work, "annotations", FL_RB_NAME_ANNOTATION) &&
        !fl_json_meta_map(work, "annotations", FL_CRB_NAME_ANNOTATION))
        return true;
    /* the template's namespace: the binding's (a cluster-scoped template has none) */
    const char *ns = fl_json_meta_map(work, "annotations", FL_RB_NAMESPACE_ANNOTATION);
    if (!ns)
        return false;
    json_t *obj = NULL;
    fl_client_error ce = {0};
    if (fl_client_get(x->cp, &NAMESPACES, NULL, ns, &obj, &ce))
        return false; /* unreadable (an agent without the right): not admitted */
    const char *v = fl_json_meta_map(obj, "labels", FL_ADOPT_KEY);
    bool ok = v && !strcmp(v, "true");
    json_decref(obj);
    return ok;
}
