/* components.c - multi-component workloads in a decision: a binding whose spec.components
 * lists several pod templates (a Flink job manager and its task managers, a PyTorchJob's
 * master and workers), as the detector fills it from a componentResource rule.
 *
 * Karmada (MultiplePodTemplatesScheduling) schedules such a workload as one unit, and only
 * estimates it when the placement asks for exactly one cluster (a spreadByField: cluster
 * constraint with minGroups 1 and maxGroups 1: isMultiTemplateSchedulingApplicable). Then
 * every candidate's available replicas are the general estimator's MaxAvailableComponentSets:
 * how many complete sets (every component at its replica count) the cluster's resource
 * summary still holds, and selection needs one set (SelectBestClusters with 1). Elsewhere the
 * components only make the binding a workload that is not divided (divide.c), as upstream.
 *
 * One set's demand is summed per resource at parse time (replicas x request of every
 * component); a cluster's sets are then min(allowed pods / pods per set, available / demand
 * per resource). Units: cpu in millis and every other resource in whole units, as the
 * single-template estimator (sched.c) compares them. Karmada's set estimator takes the unit
 * from each quantity's format instead (millis for decimal quantities, units for binary
 * ones), so a request written "1073741824" against a summary in Ki compares millis with
 * bytes and never fits; we do not copy that. Resource models (allocatableModelings) are not
 * used, as in the single-template path. */
#include "sched/sched_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/quantity.h"

/* One set's demand of one resource while summing (128-bit: replicas x nano-units). */
struct demand {
    const char *name;         /* borrowed from the spec */
    fl_quantity_nano nano;
};

static struct demand *demand_of(struct demand *d, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(d[i].name, name))
            return &d[i];
    d[*n] = (struct demand){name, 0};
    return &d[(*n)++];
}

/* Component i's replicas and requests, added to the set's demand d (room for every request). */
static int parse_component(const json_t *c, size_t i, struct demand *d, size_t *nd, int64_t *pods, char **err)
{
    if (!json_is_object(c)) {
        *err = fl_asprintf("spec.components[%zu]: must be an object", i);
        return FL_EINVAL;
    }
    json_t *rep = json_object_get(c, "replicas");
    if (rep && !json_is_null(rep) &&
        (!json_is_integer(rep) || json_integer_value(rep) < 0 || json_integer_value(rep) > INT32_MAX)) {
        *err = fl_asprintf("spec.components[%zu].replicas: must be an integer between 0 and 2147483647", i);
        return FL_EINVAL;
    }
    int64_t replicas = json_integer_value(rep);
    *pods += replicas;
    json_t *rr = json_object_get(c, "replicaRequirements");
    if (!rr || json_is_null(rr))
        return 0;
    if (!json_is_object(rr)) {
        *err = fl_asprintf("spec.components[%zu].replicaRequirements: must be an object", i);
        return FL_EINVAL;
    }
    json_t *req = json_object_get(rr, "resourceRequest");
    if (!req || json_is_null(req))
        return 0;
    if (!json_is_object(req)) {
        *err = fl_asprintf("spec.components[%zu].replicaRequirements.resourceRequest: must be an object", i);
        return FL_EINVAL;
    }
    const char *name;
    json_t *v;
    json_object_foreach(req, name, v) {
        fl_quantity q;
        if (!fl_sched_quantity_parse(v, &q)) {
            *err = fl_asprintf("spec.components[%zu].replicaRequirements.resourceRequest.%s: not a valid quantity", i,
                               name);
            return FL_EINVAL;
        }
        demand_of(d, nd, name)->nano += q.nano * replicas;
    }
    return 0;
}

int fl_sched_components_parse(const fl_sched_snapshot *snap, const json_t *comps, struct fl_sched_binding *b,
                              char **err)
{
    size_t room = 0, i;
    json_t *c;
    json_array_foreach(comps, i, c)
        room += json_object_size(json_object_get(json_object_get(c, "replicaRequirements"), "resourceRequest"));
    struct demand *d = fl_calloc(room + 1, sizeof *d);
    size_t nd = 0;
    int64_t pods = 0;
    int rc = 0;
    json_array_foreach(comps, i, c) {
        if ((rc = parse_component(c, i, d, &nd, &pods, err)))
            goto out;
    }
    b->set_pods = pods;
    b->set_reqs = fl_calloc(nd + 1, sizeof *b->set_reqs);
    for (size_t k = 0; k < nd; k++)
        b->set_reqs[b->nset_reqs++] = (struct fl_sched_req){fl_sched_intern_find(&snap->res, d[k].name),
                                                            !strcmp(d[k].name, "cpu"),
                                                            fl_sched_quantity_scaled(d[k].nano, 1000000000),
                                                            fl_sched_quantity_scaled(d[k].nano, 1000000)};
out:
    free(d);
    return rc;
}

bool fl_sched_components_applicable(const struct fl_sched_binding *b)
{
    if (b->ncomponents == 0)
        return false;
    for (size_t i = 0; i < b->nspreads; i++)
        if (b->spreads[i].field == FL_SPREAD_CLUSTER && b->spreads[i].min == 1 && b->spreads[i].max == 1)
            return true;
    return false;
}

int32_t fl_sched_components_estimate(const struct fl_sched_binding *b, const struct fl_sched_cluster *c)
{
    if (!c->has_summary || c->allowed_pods <= 0)
        return 0;
    if (b->set_pods <= 0) /* no replicas in any component: the pods bound alone */
        return c->allowed_pods > INT32_MAX ? INT32_MAX : (int32_t)c->allowed_pods;
    int64_t sets = c->allowed_pods / b->set_pods;
    for (size_t i = 0; i < b->nset_reqs && sets > 0; i++) {
        const struct fl_sched_req *r = &b->set_reqs[i];
        int64_t need = r->cpu ? r->milli : r->value;
        if (need <= 0)
            continue;
        const struct fl_sched_avail *a = r->res >= 0 ? &c->avail[r->res] : NULL;
        int64_t have = !a || !a->present ? 0 : r->cpu ? a->milli : a->value;
        if (have <= 0)
            return 0;
        if (have / need < sets)
            sets = have / need;
    }
    return sets > INT32_MAX ? INT32_MAX : (int32_t)sets;
}
