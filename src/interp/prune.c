/* prune.c - removing server-owned fields from a template before it becomes a manifest
 * (contract in prune.h). Generic metadata first, then a small table of per-kind rules. */
#include "interp/prune.h"

#include <stdbool.h>
#include <string.h>

#include "core/json_get.h"

static void prune_deployment(json_t *obj)
{
    json_t *anns = fl_json_obj(fl_json_obj(obj, "metadata"), "annotations");
    json_object_del(anns, "deployment.kubernetes.io/revision");
    json_object_del(anns, "deployment.kubernetes.io/revision-history");
}

/* Without spec.manualSelector the Job controller generated the selector and the pod labels
 * that match it (with the control plane's uid in them): the member generates its own. */
static void prune_job(json_t *obj)
{
    json_t *spec = fl_json_obj(obj, "spec");
    if (json_is_true(json_object_get(spec, "manualSelector")))
        return;
    json_t *ml = fl_json_obj(fl_json_obj(spec, "selector"), "matchLabels");
    json_object_del(ml, "controller-uid");
    json_object_del(ml, "batch.kubernetes.io/controller-uid");
    json_t *tl = fl_json_obj(fl_json_obj(fl_json_obj(spec, "template"), "metadata"), "labels");
    json_object_del(tl, "controller-uid");
    json_object_del(tl, "job-name");
    json_object_del(tl, "batch.kubernetes.io/controller-uid");
    json_object_del(tl, "batch.kubernetes.io/job-name");
    /* a finished Job would be garbage-collected in the member before its status comes back */
    json_object_del(spec, "ttlSecondsAfterFinished");
}

static void prune_service(json_t *obj)
{
    json_t *spec = fl_json_obj(obj, "spec");
    const char *ip = fl_json_str(spec, "clusterIP");
    if (ip && !strcmp(ip, "None"))
        return; /* headless: the user's choice, not an allocation */
    json_object_del(spec, "clusterIP");
    json_object_del(spec, "clusterIPs");
}

static void prune_service_account(json_t *obj)
{
    json_t *secrets = json_object_get(obj, "secrets");
    const char *name = fl_json_str(fl_json_obj(obj, "metadata"), "name");
    if (!json_is_array(secrets) || !name)
        return;
    size_t plen = strlen(name);
    for (size_t i = json_array_size(secrets); i-- > 0;) {
        const char *s = fl_json_str(json_array_get(secrets, i), "name");
        if (s && !strncmp(s, name, plen) && !strncmp(s + plen, "-token-", 7))
            json_array_remove(secrets, i);
    }
}

static void prune_secret(json_t *obj)
{
    const char *type = fl_json_str(obj, "type");
    if (!type || strcmp(type, "kubernetes.io/service-account-token"))
        return;
    json_object_del(fl_json_obj(fl_json_obj(obj, "metadata"), "annotations"), "kubernetes.io/service-account.uid");
    json_object_del(obj, "data");
}

static void prune_pvc(json_t *obj)
{
    json_object_del(fl_json_obj(fl_json_obj(obj, "metadata"), "annotations"), "volume.kubernetes.io/selected-node");
}

static const struct {
    const char *group, *kind;
    void (*fn)(json_t *obj);
} kind_rules[] = {
    {"apps", "Deployment", prune_deployment},  {"batch", "Job", prune_job},
    {"", "Service", prune_service},            {"", "ServiceAccount", prune_service_account},
    {"", "Secret", prune_secret},              {"", "PersistentVolumeClaim", prune_pvc},
};

void fl_prune(json_t *obj)
{
    json_t *md = fl_json_obj(obj, "metadata");
    static const char *const server_owned[] = {"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                                               "generation",        "managedFields",     "resourceVersion",
                                               "selfLink",          "uid",               "ownerReferences",
                                               "finalizers"};
    for (size_t i = 0; md && i < sizeof server_owned / sizeof server_owned[0]; i++)
        json_object_del(md, server_owned[i]);
    json_object_del(obj, "status");
    const char *av = fl_json_str(obj, "apiVersion"), *kind = fl_json_str(obj, "kind");
    if (!av || !kind)
        return;
    const char *slash = strchr(av, '/');
    size_t glen = slash ? (size_t)(slash - av) : 0;
    for (size_t i = 0; i < sizeof kind_rules / sizeof kind_rules[0]; i++)
        if (!strcmp(kind_rules[i].kind, kind) && strlen(kind_rules[i].group) == glen &&
            !strncmp(kind_rules[i].group, av, glen))
            kind_rules[i].fn(obj);
}

