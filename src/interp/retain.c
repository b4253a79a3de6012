/* retain.c - the native Retain rules (contract in retain.h, rules in docs/internals/execution.md).
 *
 * Each rule is a small function over jansson objects: it reads the member's copy
 * ("observed") and writes into the copy of the manifest that will be PUT ("out"). The
 * generic rules (metadata the apiserver owns, labels and annotations the member added,
 * status) apply to every kind; the kind rules follow the table at the bottom, which is
 * the one place that says which built-in kind keeps what. */
#include "interp/retain.h"
#include "core/json.h"
#include "core/json_get.h"

#include <stdbool.h>
#include <string.h>

/* ---- small jansson helpers ---- */

/* Copy observed[key] into out[key] when observed has it (a deep copy: observed may be
 * shared with an informer cache). When `nonempty`, an empty string/array/object does not
 * count as having it. */
static void keep(json_t *out, const json_t *observed, const char *key, bool nonempty)
{
    json_t *v = json_is_object(observed) ? json_object_get(observed, key) : NULL;
    if (!v || json_is_null(v))
        return;
    if (nonempty && ((json_is_string(v) && !*json_string_value(v)) || (json_is_array(v) && !json_array_size(v)) ||
                     (json_is_object(v) && !json_object_size(v))))
        return;
    json_object_set_new(out, key, fl_json_deep_copy(v));
}

/* True when the comma-separated list csv contains key exactly. */
static bool csv_has(const char *csv, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = csv; p && *p;) {
        while (*p == ' ')
            p++;
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && p[len - 1] == ' ')
            len--;
        if (len == n && !memcmp(p, key, n))
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* ---- generic rules ---- */

/* Metadata the member's apiserver and controllers own. resourceVersion doubles as the
 * update's precondition. Finalizers: the member's, plus any the manifest adds. */
static void retain_metadata(json_t *out, const json_t *observed)
{
    static const char *const owned[] = {"uid", "resourceVersion", "generation", "creationTimestamp",
                                        "managedFields", "ownerReferences", "deletionTimestamp",
                                        "deletionGracePeriodSeconds", "selfLink", NULL};
    json_t *om = fl_json_obj((json_t *)observed, "metadata");
    if (!om)
        return;
    json_t *m = fl_json_ensure_obj(out, "metadata");
    for (size_t i = 0; owned[i]; i++) {
        json_object_del(m, owned[i]);
        keep(m, om, owned[i], false);
    }

    json_t *ofin = json_object_get(om, "finalizers");
    if (json_is_array(ofin) && json_array_size(ofin)) {
        json_t *merged = fl_json_deep_copy(ofin);
        json_t *dfin = json_object_get(m, "finalizers");
        size_t i, j;
        json_t *d, *o;
        json_array_foreach(dfin, i, d) {
            bool have = false;
            json_array_foreach(merged, j, o) if (fl_json_same(o, d)) have = true;
            if (!have)
                json_array_append(merged, d);
        }
        json_object_set_new(m, "finalizers", merged);
    }
}

/* Labels or annotations (which = "labels"/"annotations"): keys the member added are kept;
 * a key the template had before (listed in the observed object's managed-keys annotation)
 * and no longer has is dropped, as Karmada does. */
static void retain_string_map(json_t *out, const json_t *observed, const char *which, const char *managed_ann)
{
    json_t *om = fl_json_obj((json_t *)observed, "metadata");
    json_t *omap = fl_json_obj(om, which);
    if (!omap || !json_object_size(omap))
        return;
    const char *recorded = fl_json_str(fl_json_obj(om, "annotations"), managed_ann);
    json_t *dmap = fl_json_ensure_obj(fl_json_ensure_obj(out, "metadata"), which);
    const char *k;
    json_t *v;
    json_object_foreach(omap, k, v) {
        if (json_object_get(dmap, k))
            continue;                      /* the manifest says; it wins */
        if (recorded && csv_has(recorded, k))
            continue;                      /* the template dropped it */
        json_object_set(dmap, k, v);       /* strings: sharing is fine, they are not mutated */
    }
}

/* status belongs to the member: whatever the manifest says is replaced by the member's. */
static void retain_status(json_t *out, const json_t *observed)
{
    json_object_del(out, "status");
    if (observed)
        keep(out, observed, "status", false);
}

/* ---- kind rules ---- */

/* Service: the member allocates clusterIP(s), healthCheckNodePort and nodePorts; a PUT
 * without them would ask for new ones (or be refused: clusterIP is immutable). */
static void retain_service(json_t *out, const json_t *observed)
{
    json_t *os = fl_json_obj((json_t *)observed, "spec");
    if (!os)
        return;
    json_t *s = fl_json_ensure_obj(out, "spec");
    keep(s, os, "clusterIP", true);
    keep(s, os, "clusterIPs", true);
    if (!json_integer_value(json_object_get(s, "healthCheckNodePort")))
        keep(s, os, "healthCheckNodePort", false);

    /* a port without a nodePort keeps the one the member allocated for the same port */
    json_t *ports = json_object_get(s, "ports"), *oports = json_object_get(os, "ports");
    size_t i, j;
    json_t *p, *op;
    json_array_foreach(ports, i, p) {
        if (!json_is_object(p) || json_integer_value(json_object_get(p, "nodePort")))
            continue;
        const char *name = fl_json_str(p, "name");
        json_array_foreach(oports, j, op) {
            const char *oname = fl_json_str(op, "name");
            bool same = name && oname ? !strcmp(name, oname)
                                      : fl_json_same(json_object_get(p, "port"), json_object_get(op, "port"));
            if (same) {
                keep(p, op, "nodePort", false);
                break;
            }
        }
    }
}

/* Workloads: spec.replicas belongs to the member when an HPA scales it there, which the
 * template says with the retain-replicas label, or when the manifest leaves replicas out
 * (a PUT without it would reset the member's count to the default of 1). */
static void retain_replicas(json_t *out, const json_t *observed)
{
    json_t *os = fl_json_obj((json_t *)observed, "spec");
    if (!os || !json_object_get(os, "replicas"))
        return;
    json_t *s = fl_json_ensure_obj(out, "spec");
    const char *label = fl_json_str(fl_json_obj(fl_json_obj(out, "metadata"), "labels"), FL_RETAIN_REPLICAS_LABEL);
    if ((label && !strcmp(label, "true")) || !json_object_get(s, "replicas"))
        keep(s, os, "replicas", false);
}

/* Containers keep the member's volumeMounts (the service-account token mount the member
 * injects), matched by name. */
static void retain_mounts(json_t *s, json_t *os, const char *list)
{
    json_t *cs = json_object_get(s, list), *ocs = json_object_get(os, list);
    size_t i, j;
    json_t *c, *oc;
    json_array_foreach(ocs, j, oc) {
        const char *oname = fl_json_str(oc, "name");
        json_array_foreach(cs, i, c) {
            const char *name = fl_json_str(c, "name");
            if (json_is_object(c) && name && oname && !strcmp(name, oname)) {
                json_object_del(c, "volumeMounts");
                keep(c, oc, "volumeMounts", false);
                break;
            }
        }
    }
}

/* Pod: scheduled by the member (nodeName) and given its service account's token volume. */
static void retain_pod(json_t *out, const json_t *observed)
{
    json_t *os = fl_json_obj((json_t *)observed, "spec");
    if (!os)
        return;
    json_t *s = fl_json_ensure_obj(out, "spec");
    keep(s, os, "nodeName", true);
    keep(s, os, "serviceAccountName", true);
    keep(s, os, "volumes", false);
    retain_mounts(s, os, "containers");
    retain_mounts(s, os, "initContainers");
}

/* PersistentVolumeClaim: the member binds it to a volume; volumeName cannot change after. */
static void retain_pvc(json_t *out, const json_t *observed)
{
    json_t *os = fl_json_obj((json_t *)observed, "spec");
    if (os)
        keep(fl_json_ensure_obj(out, "spec"), os, "volumeName", true);
}

/* PersistentVolume: the member's volume controller sets claimRef. */
static void retain_pv(json_t *out, const json_t *observed)
{
    json_t *os = fl_json_obj((json_t *)observed, "spec");
    if (os)
        keep(fl_json_ensure_obj(out, "spec"), os, "claimRef", false);
}

/* Job: the member's job controller generates the selector and the template labels
 * (controller-uid, job-name); both are immutable after creation. */
static void retain_job(json_t *out, const json_t *observed)
{
    json_t *os = fl_json_obj((json_t *)observed, "spec");
    if (!os)
        return;
    json_t *s = fl_json_ensure_obj(out, "spec");
    json_t *osel = fl_json_obj(os, "selector");
    if (osel && json_object_get(osel, "matchLabels")) {
        json_t *sel = fl_json_ensure_obj(s, "selector");
        json_object_del(sel, "matchLabels");
        keep(sel, osel, "matchLabels", false);
    }
    json_t *olabels = fl_json_obj(fl_json_obj(fl_json_obj(os, "template"), "metadata"), "labels");
    if (olabels) {
        json_t *tm = fl_json_ensure_obj(fl_json_ensure_obj(s, "template"), "metadata");
        json_object_set_new(tm, "labels", fl_json_deep_copy(olabels));
    }
}

/* ServiceAccount: token Secrets the member's token controller lists are kept beside the
 * manifest's. */
static void retain_service_account(json_t *out, const json_t *observed)
{
    json_t *osec = json_is_object(observed) ? json_object_get(observed, "secrets") : NULL;
    if (!json_is_array(osec) || !json_array_size(osec))
        return;
    json_t *sec = json_object_get(out, "secrets");
    if (!json_is_array(sec)) {
        sec = json_array();
        json_object_set_new(out, "secrets", sec);
    }
    size_t i, j;
    json_t *o, *d;
    json_array_foreach(osec, i, o) {
        bool have = false;
        json_array_foreach(sec, j, d) if (fl_json_same(d, o)) have = true;
        if (!have)
            json_array_append_new(sec, fl_json_deep_copy(o));
    }
}

static const struct kind_rule {
    const char *group, *kind;
    void (*fn)(json_t *out, const json_t *observed);
} kind_rules[] = {
    {"", "Service", retain_service},
    {"", "Pod", retain_pod},
    {"", "PersistentVolumeClaim", retain_pvc},
    {"", "PersistentVolume", retain_pv},
    {"", "ServiceAccount", retain_service_account},
    {"apps", "Deployment", retain_replicas},
    {"apps", "StatefulSet", retain_replicas},
    {"apps", "ReplicaSet", retain_replicas},
    {"batch", "Job", retain_job},
    {NULL, NULL, NULL},
};

json_t *fl_retain(const char *group, const char *kind, const json_t *desired, const json_t *observed)
{
    json_t *out = json_is_object(desired) ? fl_json_deep_copy(desired) : json_object();
    retain_status(out, observed);
    if (!json_is_object(observed))
        return out;
    retain_metadata(out, observed);
    retain_string_map(out, observed, "labels", FL_MANAGED_LABELS_ANNOTATION);
    retain_string_map(out, observed, "annotations", FL_MANAGED_ANNOTATIONS_ANNOTATION);
    for (const struct kind_rule *r = kind_rules; r->kind; r++)
        if (!strcmp(r->group, group ? group : "") && kind && !strcmp(r->kind, kind))
            r->fn(out, observed);
    return out;
}
