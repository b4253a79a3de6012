/* native_deps.c - InterpretDependency for built-in kinds: which objects a workload
 * cannot run without, so that propagating it propagates them too.
 *
 * A pod (a Pod, or the pod template of a workload) depends on:
 *   - ConfigMaps: configMap volumes, projected volume sources, envFrom configMapRef and
 *     env valueFrom.configMapKeyRef in any container (app, init, ephemeral);
 *   - Secrets: the same places (secret volumes, projected, envFrom secretRef,
 *     secretKeyRef), imagePullSecrets, and the secretRefs of volume plugins (azureFile,
 *     cephfs, cinder, flexVolume, rbd, scaleIO, iscsi, storageos, csi's
 *     nodePublishSecretRef), as Kubernetes' own pod visitor counts them;
 *   - its ServiceAccount, unless it is "default" (every namespace has one);
 *   - PersistentVolumeClaims named by its volumes; for a StatefulSet not those its
 *     volumeClaimTemplates stamp out (the member's controller makes them).
 * An Ingress depends on its TLS Secrets. Every reference is in the object's own
 * namespace (none of these fields can point elsewhere). The result is sorted by
 * (apiVersion, kind, namespace, name) and has no duplicates, so it compares equal
 * whenever the dependencies are the same. */
#include "interp/native.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"

struct deps {
    json_t *arr;
    const char *ns; /* the object's namespace; NULL leaves it out */
};

static void add(struct deps *d, const char *kind, const char *name)
{
    if (!name || !*name)
        return;
    json_t *ref = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", kind);
    if (d->ns && *d->ns)
        json_object_set_new(ref, "namespace", json_string(d->ns));
    json_object_set_new(ref, "name", json_string(name));
    json_array_append_new(d->arr, ref);
}

/* o.<dotted>.<key> as a string, the objects on the way checked; NULL when missing. */
static int name_at(const json_t *o, const char *base, const char *dotted, const char *key, const char **out,
                   char **err)
{
    char p[512];
    const json_t *at;
    int rc;
    *out = NULL;
    /* fl_native_obj_at names parts from the top; prefix the base for messages */
    if ((rc = fl_native_obj_at(o, dotted, &at, err))) {
        if (*base) {
            char *inner = *err;
            *err = fl_asprintf("%s.%s", base, inner);
            free(inner);
        }
        return rc;
    }
    return fl_native_str(at, fl_native_path(p, sizeof p, base, dotted), key, out, err);
}

/* Each element of o[key] (an array of objects), with its path, to fn. */
static int each(const json_t *o, const char *base, const char *key, struct deps *d,
                int (*fn)(const json_t *e, const char *path, struct deps *d, char **err), char **err)
{
    const json_t *arr, *e;
    char ap[512], ep[512];
    size_t i;
    int rc = fl_native_get(o, base, key, FL_NT_ARRAY, &arr, err);
    if (rc)
        return rc;
    fl_native_path(ap, sizeof ap, base, key);
    json_array_foreach(arr, i, e) {
        fl_native_index(ep, sizeof ep, ap, i);
        if (!json_is_object(e)) {
            *err = fl_asprintf("%s: must be an object", ep);
            return FL_EINVAL;
        }
        if ((rc = fn(e, ep, d, err)))
            return rc;
    }
    return 0;
}

static int pull_secret(const json_t *e, const char *path, struct deps *d, char **err)
{
    const char *n;
    int rc = fl_native_str(e, path, "name", &n, err);
    if (!rc)
        add(d, "Secret", n);
    return rc;
}

static int env_from(const json_t *e, const char *path, struct deps *d, char **err)
{
    const char *cm, *sec;
    int rc;
    if ((rc = name_at(e, path, "configMapRef", "name", &cm, err)) ||
        (rc = name_at(e, path, "secretRef", "name", &sec, err)))
        return rc;
    add(d, "ConfigMap", cm);
    add(d, "Secret", sec);
    return 0;
}

static int env_var(const json_t *e, const char *path, struct deps *d, char **err)
{
    const char *cm, *sec;
    int rc;
    if ((rc = name_at(e, path, "valueFrom.configMapKeyRef", "name", &cm, err)) ||
        (rc = name_at(e, path, "valueFrom.secretKeyRef", "name", &sec, err)))
        return rc;
    add(d, "ConfigMap", cm);
    add(d, "Secret", sec);
    return 0;
}

static int container(const json_t *c, const char *path, struct deps *d, char **err)
{
    int rc = each(c, path, "envFrom", d, env_from, err);
    if (!rc)
        rc = each(c, path, "env", d, env_var, err);
    return rc;
}

static int projection(const json_t *s, const char *path, struct deps *d, char **err)
{
    const char *cm, *sec;
    int rc;
    if ((rc = name_at(s, path, "configMap", "name", &cm, err)) || (rc = name_at(s, path, "secret", "name", &sec, err)))
        return rc;
    add(d, "ConfigMap", cm);
    add(d, "Secret", sec);
    return 0;
}

/* Volume plugins that take their credentials from a Secret: (source, field path). */
static const struct {
    const char *source, *ref, *key;
} secret_refs[] = {
    {"cephfs", "cephfs.secretRef", "name"},   {"cinder", "cinder.secretRef", "name"},
    {"flexVolume", "flexVolume.secretRef", "name"}, {"rbd", "rbd.secretRef", "name"},
    {"scaleIO", "scaleIO.secretRef", "name"}, {"iscsi", "iscsi.secretRef", "name"},
    {"storageos", "storageos.secretRef", "name"}, {"csi", "csi.nodePublishSecretRef", "name"},
    {"azureFile", "azureFile", "secretName"},
};

static int volume(const json_t *v, const char *path, struct deps *d, char **err)
{
    const char *cm, *sec, *pvc, *n;
    const json_t *proj;
    char p[512];
    int rc;
    if ((rc = name_at(v, path, "configMap", "name", &cm, err)) ||
        (rc = name_at(v, path, "secret", "secretName", &sec, err)) ||
        (rc = name_at(v, path, "persistentVolumeClaim", "claimName", &pvc, err)) ||
        (rc = fl_native_get(v, path, "projected", FL_NT_OBJECT, &proj, err)) ||
        (rc = each(proj, fl_native_path(p, sizeof p, path, "projected"), "sources", d, projection, err)))
        return rc;
    add(d, "ConfigMap", cm);
    add(d, "Secret", sec);
    add(d, "PersistentVolumeClaim", pvc);
    for (size_t i = 0; i < sizeof secret_refs / sizeof secret_refs[0]; i++) {
        if (!json_object_get(v, secret_refs[i].source))
            continue;
        if ((rc = name_at(v, path, secret_refs[i].ref, secret_refs[i].key, &n, err)))
            return rc;
        add(d, "Secret", n);
    }
    return 0;
}

/* Every reference of the pod spec at the dotted spec_path of obj. */
static int pod_spec(const json_t *obj, const char *spec_path, struct deps *d, char **err)
{
    const json_t *spec;
    const char *sa;
    int rc;
    if ((rc = fl_native_obj_at(obj, spec_path, &spec, err)) || !spec)
        return rc;
    if ((rc = each(spec, spec_path, "imagePullSecrets", d, pull_secret, err)) ||
        (rc = each(spec, spec_path, "initContainers", d, container, err)) ||
        (rc = each(spec, spec_path, "containers", d, container, err)) ||
        (rc = each(spec, spec_path, "ephemeralContainers", d, container, err)) ||
        (rc = each(spec, spec_path, "volumes", d, volume, err)) ||
        (rc = fl_native_str(spec, spec_path, "serviceAccountName", &sa, err)))
        return rc;
    if (sa && strcmp(sa, "default"))
        add(d, "ServiceAccount", sa);
    return 0;
}

/* d's references sorted and de-duplicated, as the result (d->arr is consumed). */
static json_t *finish(struct deps *d)
{
    json_t *out = fl_interp_deps_sorted(d->arr);
    json_decref(d->arr);
    return out;
}

static int run(const json_t *obj, const char *spec_path, json_t **deps, char **err)
{
    struct deps d = {json_array(), NULL};
    int rc;
    *deps = NULL;
    if ((rc = name_at(obj, "", "metadata", "namespace", &d.ns, err)) || (rc = pod_spec(obj, spec_path, &d, err))) {
        json_decref(d.arr);
        return rc;
    }
    *deps = finish(&d);
    return 0;
}

int fl_native_deps_pod(const json_t *obj, json_t **deps, char **err)
{
    return run(obj, "spec", deps, err);
}

int fl_native_deps_workload(const json_t *obj, json_t **deps, char **err)
{
    return run(obj, "spec.template.spec", deps, err);
}

int fl_native_deps_cronjob(const json_t *obj, json_t **deps, char **err)
{
    return run(obj, "spec.jobTemplate.spec.template.spec", deps, err);
}

int fl_native_deps_statefulset(const json_t *obj, json_t **deps, char **err)
{
    const json_t *spec, *vct;
    int rc;
    *deps = NULL;
    if ((rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_get(spec, "spec", "volumeClaimTemplates", FL_NT_ARRAY, &vct, err)) ||
        (rc = run(obj, "spec.template.spec", deps, err)))
        return rc;
    /* drop claims a volumeClaimTemplate of the same name stands for */
    for (size_t i = json_array_size(*deps); i-- > 0;) {
        const json_t *ref = json_array_get(*deps, i), *t;
        size_t j;
        if (strcmp(json_string_value(json_object_get(ref, "kind")), "PersistentVolumeClaim"))
            continue;
        json_array_foreach(vct, j, t) {
            const char *tn = json_string_value(json_object_get(json_object_get(t, "metadata"), "name"));
            if (tn && !strcmp(tn, json_string_value(json_object_get(ref, "name")))) {
                json_array_remove(*deps, i);
                break;
            }
        }
    }
    return 0;
}

static int tls(const json_t *e, const char *path, struct deps *d, char **err)
{
    const char *n;
    int rc = fl_native_str(e, path, "secretName", &n, err);
    if (!rc)
        add(d, "Secret", n);
    return rc;
}

int fl_native_deps_ingress(const json_t *obj, json_t **deps, char **err)
{
    struct deps d = {json_array(), NULL};
    const json_t *spec;
    int rc;
    *deps = NULL;
    if ((rc = name_at(obj, "", "metadata", "namespace", &d.ns, err)) ||
        (rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = each(spec, "spec", "tls", &d, tls, err))) {
        json_decref(d.arr);
        return rc;
    }
    *deps = finish(&d);
    return 0;
}
