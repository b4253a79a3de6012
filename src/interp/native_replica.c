/* native_replica.c - InterpretReplica for built-in workloads: how many replicas, and
 * what one replica needs (a ResourceBinding's spec.replicaRequirements).
 *
 * The scheduler divides replicas among members and estimates how many fit in each from
 * the requirements, so they must be computed the way Karmada computes them, or a
 * template would fit differently here than there:
 *   - resourceRequest is the pod's effective request: the sum over containers, then
 *     per resource the larger of that sum and any single init container (init
 *     containers run one at a time, before the others), plus spec.overhead; a container
 *     that sets a limit but no request for a resource requests its limit (the
 *     apiserver's defaulting, which a template on the control plane has not been
 *     through). cpu counts in whole millicores, everything else in whole units, each
 *     rounded up, as Kubernetes' MilliValue()/Value() do; zeros are left out.
 *   - nodeClaim is what pins a pod to nodes: nodeSelector, tolerations and the
 *     required node affinity; empty parts are left out.
 *   - With neither, there are no requirements (NULL), as Karmada returns none; else
 *     the template's namespace and the pod's priorityClassName ride along.
 * Quantities are parsed and printed by core/quantity.h, so "500m"+"1" prints "1500m"
 * and memory prints in the binary form Kubernetes picks ("1536Mi"). */
#include "interp/native.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/quantity.h"

#define NANO_PER_UNIT ((fl_quantity_nano)1000000000)
#define NANO_PER_MILLI ((fl_quantity_nano)1000000)

/* One resource's running total, in millicores for cpu and whole units otherwise. The
 * name is borrowed from the object being read. */
struct res {
    const char *name;
    fl_quantity_nano v;
};

struct res_list {
    struct res *r;
    size_t n, cap;
};

/* Which names Karmada's resource model counts: the four core ones and the "scalar"
 * ones (extended resources with a domain, hugepages, attachable volumes). Others, like
 * an unprefixed name Kubernetes does not know, are not scheduling inputs. */
static bool counted(const char *name)
{
    static const char *const core[] = {"cpu", "memory", "ephemeral-storage", "pods"};
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(name, core[i]))
            return true;
    if (!strncmp(name, "hugepages-", 10) || !strncmp(name, "attachable-volumes-", 19))
        return true;
    return strchr(name, '/') && strncmp(name, "requests.", 9);
}

static struct res *res_slot(struct res_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->r[i].name, name))
            return &l->r[i];
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->r = fl_realloc(l->r, l->cap * sizeof *l->r);
    }
    l->r[l->n] = (struct res){name, 0};
    return &l->r[l->n++];
}

/* A quantity value (a string, or a JSON number as YAML writes `cpu: 1`) in the unit the
 * total uses, rounded up. path names it for messages. */
static int quantity_in_units(const char *name, const json_t *v, const char *path, fl_quantity_nano *out, char **err)
{
    char num[64];
    const char *text = fl_json_scalar_text(v, num, sizeof num);
    fl_quantity q;
    if (!text || fl_quantity_parse(text, &q)) {
        *err = text ? fl_asprintf("%s: invalid quantity \"%s\"", path, text)
                    : fl_asprintf("%s: must be a quantity string", path);
        return FL_EINVAL;
    }
    if (q.nano < 0) {
        *err = fl_asprintf("%s: must not be negative", path);
        return FL_EINVAL;
    }
    fl_quantity_nano unit = strcmp(name, "cpu") ? NANO_PER_UNIT : NANO_PER_MILLI;
    *out = (q.nano + unit - 1) / unit;
    return 0;
}

enum fold { FOLD_ADD, FOLD_MAX };

/* Add a ResourceList object (requests, limits, overhead) to l. skip, when given, is a
 * ResourceList whose keys are not added (a container's requests, when adding the limits
 * that default the missing ones). */
static int fold_list(struct res_list *l, const json_t *list, const json_t *skip, const char *path, char **err)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)list, name, v) {
        if (!counted(name) || (skip && json_object_get(skip, name)))
            continue;
        char p[512];
        fl_quantity_nano q;
        int rc = quantity_in_units(name, v, fl_native_path(p, sizeof p, path, name), &q, err);
        if (rc)
            return rc;
        res_slot(l, name)->v += q;
    }
    return 0;
}

/* Fold one container (c, named cp in messages) into l: its requests, then its limits
 * standing in for the requests it does not set. */
static int fold_container(struct res_list *l, const json_t *c, const char *cp, char **err)
{
    const json_t *res, *req, *lim;
    char rp[512], p[512];
    int rc;
    if (!json_is_object(c)) {
        *err = fl_asprintf("%s: must be an object", cp);
        return FL_EINVAL;
    }
    if ((rc = fl_native_get(c, cp, "resources", FL_NT_OBJECT, &res, err)))
        return rc;
    fl_native_path(rp, sizeof rp, cp, "resources");
    if ((rc = fl_native_get(res, rp, "requests", FL_NT_OBJECT, &req, err)) ||
        (rc = fl_native_get(res, rp, "limits", FL_NT_OBJECT, &lim, err)))
        return rc;
    if (req && (rc = fold_list(l, req, NULL, fl_native_path(p, sizeof p, rp, "requests"), err)))
        return rc;
    if (lim && (rc = fold_list(l, lim, req, fl_native_path(p, sizeof p, rp, "limits"), err)))
        return rc;
    return 0;
}

/* Fold every container of spec[list]: app containers add up (they run together); each
 * init container runs alone, so it only raises a resource to its own request (max). */
static int fold_containers(struct res_list *l, const json_t *spec, const char *spec_path, const char *list,
                           enum fold how, char **err)
{
    const json_t *cs;
    char base[512];
    int rc = fl_native_get(spec, spec_path, list, FL_NT_ARRAY, &cs, err);
    if (rc)
        return rc;
    fl_native_path(base, sizeof base, spec_path, list);
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c) {
        char cp[512];
        fl_native_index(cp, sizeof cp, base, i);
        if (how == FOLD_ADD) {
            if ((rc = fold_container(l, c, cp, err)))
                return rc;
            continue;
        }
        struct res_list one = {0};
        rc = fold_container(&one, c, cp, err);
        for (size_t j = 0; !rc && j < one.n; j++) {
            struct res *r = res_slot(l, one.r[j].name);
            if (one.r[j].v > r->v)
                r->v = one.r[j].v;
        }
        free(one.r);
        if (rc)
            return rc;
    }
    return 0;
}

static int cmp_res(const void *a, const void *b)
{
    return strcmp(((const struct res *)a)->name, ((const struct res *)b)->name);
}

/* The ResourceList object for l (keys sorted, as Go writes maps), or NULL when empty. */
static json_t *res_json(struct res_list *l)
{
    json_t *out = NULL;
    if (l->n > 1)
        qsort(l->r, l->n, sizeof *l->r, cmp_res);
    for (size_t i = 0; i < l->n; i++) {
        const char *name = l->r[i].name;
        if (l->r[i].v <= 0)
            continue;
        fl_quantity q = {0};
        if (!strcmp(name, "cpu")) {
            q.nano = l->r[i].v * NANO_PER_MILLI;
            q.format = FL_QUANTITY_DECIMAL_SI;
        } else {
            bool binary = !strcmp(name, "memory") || !strcmp(name, "ephemeral-storage") ||
                          !strncmp(name, "hugepages-", 10);
            q.nano = l->r[i].v * NANO_PER_UNIT;
            q.format = binary ? FL_QUANTITY_BINARY_SI : FL_QUANTITY_DECIMAL_SI;
        }
        char buf[64];
        fl_quantity_format(&q, buf, sizeof buf);
        if (!out)
            out = json_object();
        json_object_set_new(out, name, json_string(buf));
    }
    return out;
}

static int resource_request(const json_t *spec, const char *path, json_t **out, char **err)
{
    struct res_list l = {0};
    const json_t *overhead;
    char p[512];
    int rc;
    *out = NULL;
    if ((rc = fold_containers(&l, spec, path, "containers", FOLD_ADD, err)) ||
        (rc = fold_containers(&l, spec, path, "initContainers", FOLD_MAX, err)) ||
        (rc = fl_native_get(spec, path, "overhead", FL_NT_OBJECT, &overhead, err)))
        goto out;
    if (overhead && (rc = fold_list(&l, overhead, NULL, fl_native_path(p, sizeof p, path, "overhead"), err)))
        goto out;
    *out = res_json(&l);
out:
    free(l.r);
    return rc;
}

static int node_claim(const json_t *spec, const char *path, json_t **out, char **err)
{
    const json_t *sel, *tol, *req;
    char p[512];
    int rc;
    *out = NULL;
    if ((rc = fl_native_get(spec, path, "nodeSelector", FL_NT_OBJECT, &sel, err)) ||
        (rc = fl_native_get(spec, path, "tolerations", FL_NT_ARRAY, &tol, err)))
        return rc;
    const json_t *aff, *na;
    if ((rc = fl_native_get(spec, path, "affinity", FL_NT_OBJECT, &aff, err)) ||
        (rc = fl_native_get(aff, fl_native_path(p, sizeof p, path, "affinity"), "nodeAffinity", FL_NT_OBJECT, &na,
                            err)))
        return rc;
    fl_native_path(p, sizeof p, path, "affinity.nodeAffinity");
    if ((rc = fl_native_get(na, p, "requiredDuringSchedulingIgnoredDuringExecution", FL_NT_OBJECT, &req, err)))
        return rc;
    if (!req && !(sel && json_object_size(sel)) && !(tol && json_array_size(tol)))
        return 0;
    *out = json_object();
    if (req)
        json_object_set_new(*out, "hardNodeAffinity", fl_json_deep_copy(req));
    if (sel && json_object_size(sel))
        json_object_set_new(*out, "nodeSelector", fl_json_deep_copy(sel));
    if (tol && json_array_size(tol))
        json_object_set_new(*out, "tolerations", fl_json_deep_copy(tol));
    return 0;
}

/* The requirements of a replica of obj whose pod spec is at the dotted spec_path. */
static int requirements(const json_t *obj, const char *spec_path, json_t **out, char **err)
{
    const json_t *spec;
    json_t *claim = NULL, *request = NULL;
    const char *ns = NULL, *pc = NULL;
    int rc;
    *out = NULL;
    if ((rc = fl_native_obj_at(obj, spec_path, &spec, err)) || (rc = node_claim(spec, spec_path, &claim, err)) ||
        (rc = resource_request(spec, spec_path, &request, err)) ||
        (rc = fl_native_str(spec, spec_path, "priorityClassName", &pc, err)) ||
        (rc = fl_native_str(json_object_get(obj, "metadata"), "metadata", "namespace", &ns, err)))
        goto out;
    if (!claim && !request)
        goto out;
    *out = json_object();
    if (claim)
        json_object_set(*out, "nodeClaim", claim);
    if (request)
        json_object_set(*out, "resourceRequest", request);
    if (ns && *ns)
        json_object_set_new(*out, "namespace", json_string(ns));
    if (pc && *pc)
        json_object_set_new(*out, "priorityClassName", json_string(pc));
out:
    json_decref(claim);
    json_decref(request);
    return rc;
}

/* spec.<field> as a replica count: 0..INT32_MAX, dflt when missing. */
static int count_field(const json_t *obj, const char *field, int64_t dflt, int64_t *out, char **err)
{
    const json_t *spec;
    int rc;
    if ((rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_int(spec, "spec", field, dflt, out, err)))
        return rc;
    if (*out < 0 || *out > INT32_MAX) {
        *err = fl_asprintf("spec.%s: must be between 0 and %d", field, INT32_MAX);
        *out = 0;
        return FL_EINVAL;
    }
    return 0;
}

/* Karmada reads spec.replicas as the apiserver left it, defaulted to 1; a template here
 * may come without it, and 1 is what it means. */
int fl_native_replicas_workload(const json_t *obj, int64_t *replicas, json_t **req, char **err)
{
    *req = NULL;
    int rc = count_field(obj, "replicas", 1, replicas, err);
    if (!rc)
        rc = requirements(obj, "spec.template.spec", req, err);
    if (rc)
        *replicas = 0;
    return rc;
}

/* A Job runs at most parallelism pods at once (default 1), and never more than the
 * completions still wanted: with completions set below parallelism, that is the count. */
int fl_native_replicas_job(const json_t *obj, int64_t *replicas, json_t **req, char **err)
{
    int64_t par, comp;
    *req = NULL;
    int rc = count_field(obj, "parallelism", 1, &par, err);
    if (!rc)
        rc = count_field(obj, "completions", par, &comp, err);
    if (!rc)
        rc = requirements(obj, "spec.template.spec", req, err);
    *replicas = rc ? 0 : par < comp ? par : comp;
    return rc;
}

int fl_native_replicas_pod(const json_t *obj, int64_t *replicas, json_t **req, char **err)
{
    *req = NULL;
    int rc = requirements(obj, "spec", req, err);
    *replicas = rc ? 0 : 1;
    return rc;
}
