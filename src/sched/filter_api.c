/* filter_api.c - the APIEnablement filter: a cluster must serve the template's
 * apiVersion/kind (its status.apiEnablements lists the group-version with a resource of
 * that kind).
 *
 * Karmada's check answers APIEnabled, APIDisabled or APIUnknown (a partial list without
 * the kind) and the filter admits only APIEnabled, so "not listed" is enough to reject.
 * A cluster already in spec.clusters passes regardless, so a CRD that disappears for a
 * moment does not pull the workload off the cluster.
 *
 * Every "groupVersion/kind" seen in any cluster is interned once per snapshot; each
 * cluster keeps a bitset over those ids, and a decision looks its template's key up once,
 * so the per-cluster check is one bit test. */
#include "sched/sched_priv.h"

#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fl_sched_apis_parse(const json_t *enablements, struct fl_sched_intern *t, struct fl_sched_arena *a,
                                int **ids, size_t *nids)
{
    if (!enablements || json_is_null(enablements))
        return NULL;
    if (!json_is_array(enablements))
        return "status.apiEnablements: must be an array";
    size_t cap = *nids;
    char buf[512];
    for (size_t i = 0; i < json_array_size(enablements); i++) {
        json_t *e = json_array_get(enablements, i);
        json_t *gv = json_object_get(e, "groupVersion");
        json_t *res = json_object_get(e, "resources");
        if (!json_is_object(e) || !json_is_string(gv) || (res && !json_is_null(res) && !json_is_array(res))) {
            snprintf(buf, sizeof buf, "status.apiEnablements[%zu]: groupVersion must be a string, resources an array",
                     i);
            return fl_sched_arena_strdup(a, buf);
        }
        for (size_t j = 0; j < json_array_size(res); j++) {
            json_t *kind = json_object_get(json_array_get(res, j), "kind");
            if (!json_is_string(kind)) {
                snprintf(buf, sizeof buf, "status.apiEnablements[%zu].resources[%zu].kind: must be a string", i, j);
                return fl_sched_arena_strdup(a, buf);
            }
            char *key = fl_asprintf("%s/%s", json_string_value(gv), json_string_value(kind));
            int id = fl_sched_intern_add(t, a, key);
            free(key);
            if (*nids == cap) {
                cap = cap ? cap * 2 : 32;
                *ids = fl_realloc(*ids, cap * sizeof **ids);
            }
            (*ids)[(*nids)++] = id;
        }
    }
    return NULL;
}

const char *fl_sched_filter_api(const struct fl_sched_binding *b, uint32_t idx, const struct fl_sched_cluster *c)
{
    if (b->prev[idx] >= 0)
        return NULL;
    if (b->api >= 0 && (c->api[(unsigned)b->api / 64] >> ((unsigned)b->api % 64) & 1))
        return NULL;
    return "cluster(s) did not have the API resource";
}
