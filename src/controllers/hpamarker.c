/* hpamarker.c - Karmada's hpa-scale-target-marker: a workload that a propagated
 * HorizontalPodAutoscaler scales gets the label resourcetemplate.karmada.io/retain-replicas
 * "true" on its resource template, and loses it when the HPA goes away or points elsewhere.
 *
 * The label travels with the template to the members, where the native Retain rule
 * (interp/retain.c) then keeps the member's spec.replicas instead of the template's: the
 * member's HPA owns that count, and an update of the template must not undo its scaling.
 * An HPA counts as propagated once a (Cluster)PropagationPolicy claimed it (its
 * permanent-id label), as in Karmada.
 *
 * No informer and no worker of its own (the server's thread budget is full): the HPAs are
 * templates too, so the shared template registry (templates.h) already watches them whenever
 * a policy selects HPAs, which is the only time one can be propagated. Its handlers mark or
 * unmark the target at once, on the HPA kind's informer thread: HPA changes are rare, and
 * each is a read and at most one in-process write. A deleted HPA still says which target to
 * unmark. Labels are written with a merge patch: nothing else of the template changes, and a
 * concurrent writer's change is not lost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "controllers/controller.h"
#include "controllers/templates.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/wellknown.h"

#define RETAIN_LABEL "resourcetemplate.karmada.io/retain-replicas"

typedef struct marker {
    fl_ctrl_env env;
} marker;

static int mark(marker *m, bool add, const char *ns, const char *av, const char *kind, const char *name);

static bool is_hpa(const fl_template_kind *k)
{
    return !strcmp(k->kind, "HorizontalPodAutoscaler") && !strncmp(k->api_version, "autoscaling/", 12);
}

static bool propagated(const json_t *hpa)
{
    const json_t *labels = fl_json_path(hpa, "metadata.labels");
    return json_object_get(labels, FL_PP_ID_LABEL) || json_object_get(labels, FL_CPP_ID_LABEL);
}

/* Mark (add) or unmark hpa's target; nothing when it names none. */
static void target(marker *m, bool add, const json_t *hpa)
{
    const char *ns = fl_json_path_str(hpa, "metadata.namespace");
    const char *av = fl_json_path_str(hpa, "spec.scaleTargetRef.apiVersion");
    const char *kind = fl_json_path_str(hpa, "spec.scaleTargetRef.kind");
    const char *name = fl_json_path_str(hpa, "spec.scaleTargetRef.name");
    if (!ns || !av || !kind || !name || !*name)
        return;
    int rc = mark(m, add, ns, av, kind, name);
    if (rc)
        fl_log_kvf(FL_LOG_WARN, "hpa-marker", FL_LOG_KV("object", FL_LOG_OBJ(kind, ns, name), "err", fl_strerror(rc)),
                   "%s label %s failed (the HPA's next change tries again)", add ? "adding" : "removing",
                   RETAIN_LABEL);
}

static bool same_target(const json_t *a, const json_t *b)
{
    const json_t *ta = fl_json_path(a, "spec.scaleTargetRef"), *tb = fl_json_path(b, "spec.scaleTargetRef");
    return json_equal((json_t *)ta, (json_t *)tb);
}

static void on_add(void *ctx, const fl_template_kind *k, json_t *hpa)
{
    if (is_hpa(k) && propagated(hpa))
        target(ctx, true, hpa);
}

static void on_update(void *ctx, const fl_template_kind *k, json_t *old, json_t *hpa)
{
    if (!is_hpa(k))
        return;
    if (!same_target(old, hpa))
        target(ctx, false, old);
    if (propagated(hpa))
        target(ctx, true, hpa);
}

static void on_delete(void *ctx, const fl_template_kind *k, json_t *hpa)
{
    if (is_hpa(k))
        target(ctx, false, hpa);
}

static bool same_str(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

/* Whether another HPA of the cache still scales this target as a propagated one: a "del"
 * must not unmark a workload that a second HPA scales. */
static bool still_scaled(marker *m, const char *ns, const char *av, const char *kind, const char *name)
{
    bool yes = false;
    static const char *const versions[] = {"autoscaling/v2", "autoscaling/v1"};
    for (size_t v = 0; v < 2 && !yes; v++) {
        json_t *all = fl_templates_list(m->env.templates, versions[v], "HorizontalPodAutoscaler", ns);
        size_t i;
        json_t *h;
        json_array_foreach(all, i, h) {
            if (propagated(h) && !fl_json_path(h, "metadata.deletionTimestamp") &&
                same_str(fl_json_path_str(h, "spec.scaleTargetRef.apiVersion"), av) &&
                same_str(fl_json_path_str(h, "spec.scaleTargetRef.kind"), kind) &&
                same_str(fl_json_path_str(h, "spec.scaleTargetRef.name"), name))
                yes = true;
        }
        json_decref(all);
    }
    return yes;
}

static int mark(marker *m, bool add, const char *ns, const char *av, const char *kind, const char *name)
{
    if (!add && still_scaled(m, ns, av, kind, name))
        return 0;
    fl_client_error ce = {0};
    char *resource = NULL;
    bool namespaced = false;
    int rc = fl_client_resolve(m->env.cp, av, kind, &resource, &namespaced, &ce);
    if (rc == FL_ENOTFOUND)
        return 0; /* a kind the control plane does not serve: nothing to mark */
    if (rc)
        return rc;
    fl_gvr r = {av, resource};
    json_t *target = NULL;
    rc = fl_client_get(m->env.cp, &r, namespaced ? ns : NULL, name, &target, &ce);
    if (rc) {
        free(resource);
        return rc == FL_ENOTFOUND ? 0 : rc; /* created later: its HPA's next event marks it */
    }
    const char *have = json_string_value(json_object_get(fl_json_path(target, "metadata.labels"), RETAIN_LABEL));
    bool marked = have && !strcmp(have, "true");
    json_decref(target);
    if (marked == add) {
        free(resource);
        return 0;
    }
    char *patch = add ? fl_strdup("{\"metadata\":{\"labels\":{\"" RETAIN_LABEL "\":\"true\"}}}")
                      : fl_strdup("{\"metadata\":{\"labels\":{\"" RETAIN_LABEL "\":null}}}");
    fl_patch_opts po = {.field_manager = "hpa-scale-target-marker"};
    rc = fl_client_patch(m->env.cp, &r, namespaced ? ns : NULL, name, FL_PATCH_MERGE, patch, strlen(patch), &po,
                         NULL, &ce);
    free(patch);
    free(resource);
    if (rc == FL_ENOTFOUND)
        return 0;
    if (!rc)
        fl_log_kvf(FL_LOG_INFO, "hpa-marker", FL_LOG_KV("object", FL_LOG_OBJ(kind, ns, name)), "%s label %s",
                   add ? "added" : "removed", RETAIN_LABEL);
    return rc;
}

static int marker_start(const fl_ctrl_env *env, void **state)
{
    marker *m = fl_calloc(1, sizeof *m);
    m->env = *env;
    fl_template_handlers h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .ctx = m};
    fl_templates_subscribe(env->templates, &h);
    *state = m;
    return 0;
}

static void marker_stop(void *state)
{
    free(state); /* the registry's handlers stop with the registry, before the controllers */
}

const fl_controller fl_hpa_scale_target_marker_controller = {"hpa-scale-target-marker", marker_start, marker_stop};
