/* rollout_restore.c - a failed rollout's Rollback: the previous revision of the template goes
 * back onto it (the revisions' contract, wellknown.h FL_REVISION_*; docs/rollouts.md).
 *
 * The revisions are apps/v1 ControllerRevisions labelled with the template's uid, in its
 * namespace (FL_REVISION_CLUSTER_SCOPED_NAMESPACE for a cluster-scoped template). The one
 * restored is the one `flotilla ctl rollout undo` restores by default (fl_revision_previous:
 * the newest whose data differs from what the template delivers now), and it is restored as
 * undo does (fl_revision_restore: the revision's fields, labels and annotations written back,
 * those it lacks removed, the policy's claim on the template kept), onto the live template,
 * with its resourceVersion, through the normal write path: policies, overrides and suspension
 * apply to the restored content as to any change. */
#include <stdlib.h>
#include <string.h>

#include "controllers/revision_data.h"
#include "controllers/rollout_priv.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

static const fl_gvr REVISIONS = {"apps/v1", "controllerrevisions"};

int fl_rollout_restore(fl_client *cp, const json_t *tmpl, int64_t *revision, char **why)
{
    *why = NULL;
    *revision = 0;
    const char *av = fl_json_str(tmpl, "apiVersion"), *kind = fl_json_str(tmpl, "kind"),
               *name = fl_json_meta(tmpl, "name"), *ns = fl_json_meta(tmpl, "namespace"),
               *uid = fl_json_meta(tmpl, "uid");
    if (!av || !kind || !name || !uid) {
        *why = fl_strdup("the template has no apiVersion, kind, name or uid");
        return FL_EINVAL;
    }
    fl_client_error ce = {0};
    char *sel = fl_cat(FL_REVISION_TEMPLATE_UID_LABEL, "=", uid, NULL);
    fl_list_opts lo = {.label_selector = sel};
    fl_list_result lr = {0};
    int rc = fl_client_list(cp, &REVISIONS, ns ? ns : FL_REVISION_CLUSTER_SCOPED_NAMESPACE, &lo, &lr, &ce);
    free(sel);
    const json_t *prev = rc ? NULL : fl_revision_previous(tmpl, lr.items);
    if (rc == FL_ENOTFOUND || (!rc && !prev)) {
        fl_list_result_close(&lr);
        *why = fl_asprintf("no earlier ControllerRevision of %s/%s (label %s=%s) to roll back to", kind, name,
                           FL_REVISION_TEMPLATE_UID_LABEL, uid);
        return FL_ENOTFOUND;
    }
    if (rc) {
        *why = fl_asprintf("listing the revisions of %s/%s: %s", kind, name, fl_errmsg(ce.message, rc));
        return rc;
    }
    *revision = fl_json_path_int(prev, "revision", 0);
    char *resource = NULL;
    bool namespaced = false;
    json_t *live = NULL;
    rc = fl_client_resolve(cp, av, kind, &resource, &namespaced, &ce);
    fl_gvr g = {av, resource};
    if (!rc)
        rc = fl_client_get(cp, &g, namespaced ? ns : NULL, name, &live, &ce);
    if (!rc && strcmp(fl_json_meta(live, "uid") ? fl_json_meta(live, "uid") : "", uid))
        rc = FL_ENOTFOUND; /* another object of that name now */
    bool moved = !rc && fl_json_path_int(live, "metadata.generation", 0) != fl_json_path_int(tmpl, "metadata.generation", 0);
    if (moved)
        *revision = 0; /* changed since the cache's copy (by our restore, or a newer change): done */
    if (!rc && !moved) {
        json_t *restored = fl_revision_restore(live, json_object_get(prev, "data"),
                                               fl_json_meta_map(prev, "annotations", FL_REVISION_CHANGE_CAUSE_ANNOTATION));
        json_object_del(restored, "status");
        fl_write_opts wo = {.field_manager = "flotilla-rollout"};
        rc = restored ? fl_client_update(cp, &g, namespaced ? ns : NULL, restored, &wo, NULL, &ce) : FL_EINVAL;
        json_decref(restored);
    }
    if (rc)
        *why = fl_asprintf("restoring revision %lld of %s/%s: %s", (long long)*revision, kind, name,
                           fl_errmsg(ce.message, rc));
    json_decref(live);
    free(resource);
    fl_list_result_close(&lr);
    return rc;
}
