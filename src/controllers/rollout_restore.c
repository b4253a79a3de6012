/* rollout_restore.c - a failed rollout's Rollback: the previous revision of the template goes
 * back onto it (the revisions' contract, wellknown.h FL_REVISION_*; docs/rollouts.md).
 *
 * The revisions are apps/v1 ControllerRevisions labelled with the template's uid, in its
 * namespace (FL_REVISION_CLUSTER_SCOPED_NAMESPACE for a cluster-scoped template). The one
 * restored is the newest whose data differs from the template as it is now: normally
 * revision current-1, and still the right one when the failed change has not been recorded
 * as a revision yet. Restoring writes the data's top-level fields (all but apiVersion, kind,
 * metadata and status) and its labels and annotations (set over the live ones: the policy's
 * claim on the template stays) onto the live template, with its resourceVersion, through the
 * normal write path: policies, overrides and suspension apply to the restored content as to
 * any change. */
#include <stdlib.h>
#include <string.h>

#include "controllers/rollout_priv.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

static const fl_gvr REVISIONS = {"apps/v1", "controllerrevisions"};

static bool top_level(const char *key)
{
    return strcmp(key, "apiVersion") && strcmp(key, "kind") && strcmp(key, "metadata") && strcmp(key, "status");
}

/* Whether data's delivered fields equal tmpl's. */
static bool same_content(const json_t *data, const json_t *tmpl)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)data, k, v) if (top_level(k) && !fl_json_same(v, json_object_get(tmpl, k))) return false;
    json_object_foreach((json_t *)tmpl, k, v) if (top_level(k) && !json_object_get(data, k)) return false;
    return true;
}

/* The newest revision (of list) whose data differs from tmpl; borrowed, or NULL. */
static const json_t *previous(const json_t *items, const json_t *tmpl)
{
    const json_t *best = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(items, i, r) {
        const json_t *data = json_object_get(r, "data");
        if (!json_is_object(data) || same_content(data, tmpl))
            continue;
        if (!best || fl_json_path_int(r, "revision", 0) > fl_json_path_int(best, "revision", 0))
            best = r;
    }
    return best;
}

static void set_map(json_t *live, const json_t *data, const char *map)
{
    const json_t *from = fl_json_path(data, map);
    if (!json_is_object(from))
        return;
    json_t *md = fl_json_ensure_obj(live, "metadata");
    json_t *to = fl_json_ensure_obj(md, strchr(map, '.') + 1);
    json_object_update(to, (json_t *)from);
}

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
    if (rc == FL_ENOTFOUND || (!rc && !previous(lr.items, tmpl))) {
        fl_list_result_close(&lr);
        *why = fl_asprintf("no earlier ControllerRevision of %s/%s (label %s=%s) to roll back to", kind, name,
                           FL_REVISION_TEMPLATE_UID_LABEL, uid);
        return FL_ENOTFOUND;
    }
    if (rc) {
        *why = fl_asprintf("listing the revisions of %s/%s: %s", kind, name, fl_errmsg(ce.message, rc));
        return rc;
    }
    const json_t *prev = previous(lr.items, tmpl), *data = json_object_get(prev, "data");
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
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(live, tmp, k, v) if (top_level(k) && !json_object_get(data, k))
            json_object_del(live, k);
        json_object_foreach((json_t *)data, k, v) if (top_level(k)) json_object_set(live, k, v);
        set_map(live, data, "metadata.labels");
        set_map(live, data, "metadata.annotations");
        json_object_del(live, "status");
        fl_write_opts wo = {.field_manager = "flotilla-rollout"};
        rc = fl_client_update(cp, &g, namespaced ? ns : NULL, live, &wo, NULL, &ce);
    }
    if (rc)
        *why = fl_asprintf("restoring revision %lld of %s/%s: %s", (long long)*revision, kind, name,
                           fl_errmsg(ce.message, rc));
    json_decref(live);
    free(resource);
    fl_list_result_close(&lr);
    return rc;
}
