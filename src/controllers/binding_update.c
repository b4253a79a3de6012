/* binding_update.c - what the binding controller keeps of an existing Work, and the patch it
 * writes (binding_update.h). */
#include "controllers/binding_update.h"

#include <string.h>

#include "core/json.h"
#include "core/json_get.h"
#include "core/wellknown.h"

/* A user may suspend (or resume) one Work directly: while the binding's own suspension of
 * that cluster is what we last wrote (the annotation), the Work's suspendDispatching is left
 * as the user set it; a change of the binding's suspension wins. */
void fl_binding_keep_users_suspension(const json_t *have, const json_t *want, json_t *upd)
{
    const json_t *hann = json_object_get(json_object_get(have, "metadata"), "annotations");
    const json_t *uann = json_object_get(json_object_get(want, "metadata"), "annotations");
    const char *last = fl_json_str(hann, WORK_SUSPENSION_ANNOTATION),
               *now = fl_json_str(uann, WORK_SUSPENSION_ANNOTATION);
    if (!last || !now || strcmp(last, now))
        return;
    json_t *hv = json_object_get(json_object_get(have, "spec"), "suspendDispatching");
    json_t *uspec = json_object_get(upd, "spec");
    if (json_is_true(hv))
        json_object_set_new(uspec, "suspendDispatching", json_true());
    else
        json_object_del(uspec, "suspendDispatching");
}

/* The template's generation a manifest carries (its annotation), or NULL. */
static json_t *manifest_generation(const json_t *m)
{
    return json_object_get(json_object_get(json_object_get(m, "metadata"), "annotations"),
                           FL_TEMPLATE_GENERATION_ANNOTATION);
}

/* A template of a kind whose status writes move its generation: when upd's manifests differ
 * from have's only in the template generation they carry, upd keeps have's spec. Every
 * status write (ours, aggregating its members' status back) moves such a template's
 * generation: delivering that would rewrite every Work of it and re-apply it in every member
 * for nothing a member needs (the Argo Workflows crowd in docs/BENCHMARKS.md: ten Work
 * rewrites per template status write). A real change of what is delivered carries the new
 * generation with it. Not for kinds with a status subresource: there the generation moves
 * only with the spec, and a member whose share did not change (Divided replicas) must still
 * learn the template's generation, which the aggregation's observedGeneration waits for. */
void fl_binding_keep_generation_if_same(const json_t *have, json_t *upd)
{
    const json_t *hm = json_object_get(json_object_get(json_object_get(have, "spec"), "workload"), "manifests");
    const json_t *um = json_object_get(json_object_get(json_object_get(upd, "spec"), "workload"), "manifests");
    size_t n = json_array_size(um);
    if (!n || n != json_array_size(hm))
        return;
    bool moved = false;
    for (size_t i = 0; i < n && !moved; i++)
        moved = !fl_json_same(manifest_generation(json_array_get(hm, i)), manifest_generation(json_array_get(um, i)));
    if (!moved)
        return; /* same generation: compared as it is */
    json_t *spec = fl_json_deep_copy(json_object_get(upd, "spec"));
    json_t *ms = json_object_get(json_object_get(spec, "workload"), "manifests");
    for (size_t i = 0; i < n; i++) {
        json_t *anns = json_object_get(json_object_get(json_array_get(ms, i), "metadata"), "annotations");
        json_t *g = manifest_generation(json_array_get(hm, i));
        if (g && anns)
            json_object_set(anns, FL_TEMPLATE_GENERATION_ANNOTATION, g);
        else if (anns)
            json_object_del(anns, FL_TEMPLATE_GENERATION_ANNOTATION);
    }
    if (fl_json_same(spec, json_object_get(have, "spec")))
        json_object_set(upd, "spec", json_object_get(have, "spec"));
    json_decref(spec);
}

/* The JSON merge patch (RFC 7386) that turns a into b: b's members that a lacks or holds
 * otherwise (objects compared member by member, anything else replaced whole), and null for
 * a's members that b lacks. NULL when a and b are the same. b holds no null member (a merge
 * patch cannot set one). */
static json_t *merge_diff(const json_t *a, const json_t *b)
{
    if (!json_is_object(a) || !json_is_object(b))
        return fl_json_same(a, b) ? NULL : json_incref((json_t *)b);
    json_t *d = json_object();
    const char *key;
    json_t *bv, *av;
    json_object_foreach((json_t *)b, key, bv) {
        av = json_object_get(a, key);
        json_t *sub = av ? merge_diff(av, bv) : json_incref(bv);
        if (sub)
            json_object_set_new(d, key, sub);
    }
    json_object_foreach((json_t *)a, key, av)
        if (!json_object_get(b, key))
            json_object_set_new(d, key, json_null());
    if (!json_object_size(d)) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* What this controller owns of a Work: its spec, labels and annotations. A new object whose
 * members are work's (borrowed). */
static json_t *owned_part(const json_t *work)
{
    const json_t *md = json_object_get(work, "metadata");
    return json_pack("{s:O*, s:{s:O*, s:O*}}", "spec", json_object_get(work, "spec"), "metadata", "labels",
                     json_object_get(md, "labels"), "annotations", json_object_get(md, "annotations"));
}

/* The merge patch that makes have, the cached Work, into upd (have with our spec, labels and
 * annotations): what changed of them, null for our keys upd no longer has. Nothing else
 * (the finalizers, others' labels and annotations, the status) is in it, and no
 * resourceVersion: the Work's spec does not depend on what else the Work went through since
 * the cached copy, so the write does not meet a conflict whenever a member's status write
 * came in between (docs/BENCHMARKS.md, live status at scale). The cached copy is never older
 * than our own last write (copy_behind): what it lacks of ours is what we do not want. */
json_t *fl_binding_owned_patch(const json_t *have, const json_t *upd)
{
    json_t *a = owned_part(have), *b = owned_part(upd);
    json_t *d = merge_diff(a, b);
    json_decref(a);
    json_decref(b);
    return d ? d : json_object();
}

