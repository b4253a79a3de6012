/* validate_kpt.c - validation of kpt's ResourceGroup (kpt.dev/v1alpha1), the inventory kind
 * whose status Flotilla keeps with the listed resources' fleet-wide state.
 *
 * kpt installs the kind as a CRD, so what kube-apiserver refuses is what that CRD's schema
 * requires: group, kind, name and namespace of each listed resource (group "" for the core
 * group, namespace "" for a cluster-scoped resource), name and namespace of each subgroup,
 * description and url of each link, and in the status observedGeneration, each entry's
 * identity and status, and each condition's type and status. Types and unknown fields are
 * checked before this, against the generated table (kinds_schema.c). Beyond the CRD, a
 * listed resource's kind and name must not be empty: no object has an empty name, and an
 * entry naming none could only ever be NotFound. */
#include <jansson.h>
#include <stddef.h>

#include "api/validate.h"
#include "api/validate_priv.h"

/* obj[key] must be there (a string; "" allowed): the CRD's `required`. */
static void present(json_t *causes, const char *where, const json_t *obj, const char *key)
{
    char p[FL_VPATH_MAX];
    if (!json_is_string(json_object_get(obj, key)))
        fl_v_required(causes, fl_vpath(p, "%s.%s", where, key), NULL);
}

static void conditions(json_t *causes, const char *where, const json_t *list)
{
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c) {
        fl_vpath(p, "%s[%zu]", where, i);
        present(causes, p, c, "type");
        present(causes, p, c, "status");
    }
}

static void spec_rules(json_t *causes, const json_t *spec)
{
    char p[FL_VPATH_MAX];
    size_t i;
    json_t *e;
    json_array_foreach(fl_v_arr(spec, "resources"), i, e) {
        fl_vpath(p, "spec.resources[%zu]", i);
        present(causes, p, e, "group");
        present(causes, p, e, "namespace");
        char f[FL_VPATH_MAX];
        fl_v_require_str(causes, fl_vpath(f, "%s.kind", p), e, "kind");
        fl_v_require_str(causes, fl_vpath(f, "%s.name", p), e, "name");
    }
    json_array_foreach(fl_v_arr(spec, "subgroups"), i, e) {
        fl_vpath(p, "spec.subgroups[%zu]", i);
        char f[FL_VPATH_MAX];
        fl_v_require_str(causes, fl_vpath(f, "%s.name", p), e, "name");
        present(causes, p, e, "namespace");
    }
    json_array_foreach(fl_v_arr(fl_v_obj(spec, "descriptor"), "links"), i, e) {
        fl_vpath(p, "spec.descriptor.links[%zu]", i);
        present(causes, p, e, "description");
        present(causes, p, e, "url");
    }
}

static void status_rules(json_t *causes, const json_t *status)
{
    char p[FL_VPATH_MAX];
    if (!json_object_size(status))
        return;
    if (!json_is_integer(json_object_get(status, "observedGeneration")))
        fl_v_required(causes, "status.observedGeneration", NULL);
    conditions(causes, "status.conditions", fl_v_arr(status, "conditions"));
    size_t i;
    json_t *e;
    json_array_foreach(fl_v_arr(status, "resourceStatuses"), i, e) {
        static const char *const keys[] = {"group", "kind", "name", "namespace", "status", NULL};
        fl_vpath(p, "status.resourceStatuses[%zu]", i);
        for (size_t k = 0; keys[k]; k++)
            present(causes, p, e, keys[k]);
        char f[FL_VPATH_MAX];
        conditions(causes, fl_vpath(f, "%s.conditions", p), fl_v_arr(e, "conditions"));
    }
    json_array_foreach(fl_v_arr(status, "subgroupStatuses"), i, e) {
        static const char *const keys[] = {"name", "namespace", "status", NULL};
        fl_vpath(p, "status.subgroupStatuses[%zu]", i);
        for (size_t k = 0; keys[k]; k++)
            present(causes, p, e, keys[k]);
        char f[FL_VPATH_MAX];
        conditions(causes, fl_vpath(f, "%s.conditions", p), fl_v_arr(e, "conditions"));
    }
}

void fl_validate_resource_group(const fl_kind *k, const json_t *obj, const json_t *old, json_t *causes)
{
    (void)k;
    (void)old;
    spec_rules(causes, fl_v_obj(obj, "spec"));
    status_rules(causes, fl_v_obj(obj, "status"));
}
