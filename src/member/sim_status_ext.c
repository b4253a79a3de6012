/* sim_status_ext.c - what a simulated member reports for the kinds that watch workloads or
 * carry traffic (issue 41): HorizontalPodAutoscaler, PodDisruptionBudget, and the load
 * balancer address of an Ingress or a LoadBalancer Service.
 *
 * A simulated cluster has no metrics pipeline, so its HPA does what an HPA does when the
 * load sits within its bounds: it keeps its target's replica count between minReplicas and
 * maxReplicas, scaling the target's spec.replicas when it falls outside (as the HPA
 * controller writes the scale subresource), and reports the target's replicas. A PDB counts
 * the replicas of the workloads (and bare Pods) its selector matches in its namespace. Both
 * look again every few seconds, as their controllers resync, because what they report
 * follows other objects. An address is made from the cluster's name (every Ingress of a
 * member shares its ingress controller's) and, for a Service, the Service's name, so it is
 * stable and differs between members. Runs on the simulator's thread. */
#include "member/sim_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/mem.h"
#include "core/selector.h"

#define RESYNC_MS 3000 /* how often an HPA or a PDB looks at what it follows */

/* A condition that keeps lastTransitionTime while its status holds. */
static json_t *cond(const json_t *old_st, const char *type, const char *status, const char *reason, const char *msg,
                    const char *now)
{
    const char *ltt = now;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(old_st, "conditions"), i, c) {
        if (!strcmp(jstr_or(c, "type", ""), type) && !strcmp(jstr_or(c, "status", ""), status))
            ltt = jstr_or(c, "lastTransitionTime", now);
    }
    return json_pack("{ss ss ss ss ss}", "type", type, "status", status, "lastTransitionTime", ltt, "reason", reason,
                     "message", msg);
}

/* The stored object at key (read-only, a new reference), or NULL. */
static json_t *load(sim_cluster *c, const char *key)
{
    fl_kv kv;
    if (fl_store_get(c->api->store, key, &kv))
        return NULL;
    json_t *o = fl_api_decoded(kv.value);
    fl_blob_unref(kv.value);
    return o;
}

/* ---- HorizontalPodAutoscaler ---- */

static enum sim_kind target_kind(const char *kind)
{
    return !strcmp(kind, "Deployment") ? SK_DEPLOY : !strcmp(kind, "StatefulSet") ? SK_STS
                                                     : !strcmp(kind, "ReplicaSet") ? SK_RS
                                                                                   : SK_NONE;
}

json_t *fl_sim_status_hpa(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *old = json_object_get(x->obj, "status");
    const char *tkind = jstr_or(spec, "scaleTargetRef.kind", ""), *tname = jstr_or(spec, "scaleTargetRef.name", "");
    int64_t lo = fl_json_path_int(spec, "minReplicas", 1), hi = fl_json_path_int(spec, "maxReplicas", lo);
    json_t *out = json_object(), *conds = json_array();
    json_object_set_new(out, "observedGeneration", json_integer(fl_json_path_int(x->obj, "metadata.generation", 1)));
    x->due = x->now + RESYNC_MS;
    sim_ref tref = {.kind = target_kind(tkind)};
    snprintf(tref.ns, sizeof tref.ns, "%s", x->ref->ns);
    snprintf(tref.name, sizeof tref.name, "%s", tname);
    char *key = NULL;
    json_t *target = NULL;
    if (tref.kind != SK_NONE && *tname) {
        key = fl_asprintf("/apps/%s/%s/%s", tref.kind == SK_DEPLOY ? "deployments"
                                            : tref.kind == SK_STS  ? "statefulsets"
                                                                   : "replicasets",
                          x->ref->ns, tname);
        target = load(x->c, key);
    }
    free(key);
    if (!target) {
        char *msg = fl_asprintf("the HPA controller was unable to get the target's current scale: %s \"%s\" not found",
                                tkind, tname);
        json_object_set_new(out, "desiredReplicas", json_integer(0));
        json_array_append_new(conds, cond(old, "AbleToScale", "False", "FailedGetScale", msg, x->nows));
        free(msg);
        json_object_set_new(out, "conditions", conds);
        return out;
    }
    int64_t want = fl_json_path_int(target, "spec.replicas", 1);
    int64_t desired = want < lo ? lo : want > hi ? hi : want;
    const char *last = fl_json_path_str(old, "lastScaleTime");
    if (desired != want) {
        int code = fl_sim_patch_obj(x->s, x->c, &tref, NULL, target, "spec", json_pack("{sI}", "replicas",
                                                                                        (json_int_t)desired), NULL);
        if (code == 200)
            last = x->nows;
    }
    json_decref(target);
    if (last)
        json_object_set_new(out, "lastScaleTime", json_string(last));
    json_object_set_new(out, "currentReplicas", json_integer(want));
    json_object_set_new(out, "desiredReplicas", json_integer(desired));
    json_array_append_new(conds, cond(old, "AbleToScale", "True", desired != want ? "SucceededRescale" : "ReadyForNewScale",
                                      desired != want ? "the HPA controller was able to update the target scale"
                                                      : "recommended size matches current size",
                                      x->nows));
    json_array_append_new(conds, cond(old, "ScalingActive", "True", "ValidMetricFound",
                                      "the simulated cluster's load keeps the replica count within its bounds",
                                      x->nows));
    json_array_append_new(conds,
                          want < lo   ? cond(old, "ScalingLimited", "True", "TooFewReplicas",
                                             "the desired replica count is less than the minimum replica count", x->nows)
                          : want > hi ? cond(old, "ScalingLimited", "True", "TooManyReplicas",
                                             "the desired replica count is more than the maximum replica count", x->nows)
                                      : cond(old, "ScalingLimited", "False", "DesiredWithinRange",
                                             "the desired count is within the acceptable range", x->nows));
    json_object_set_new(out, "conditions", conds);
    return out;
}

/* ---- PodDisruptionBudget ---- */

typedef struct pdb_scan {
    fl_labelsel *sel;
    enum sim_kind kind;
    int64_t expected, healthy;
} pdb_scan;

static bool controlled(const json_t *o)
{
    size_t i;
    json_t *r;
    json_array_foreach(fl_json_path(o, "metadata.ownerReferences"), i, r) {
        if (json_is_true(json_object_get(r, "controller")))
            return true;
    }
    return false;
}

static bool pdb_scan_fn(void *ctx, const char *key, const fl_kv *kv)
{
    pdb_scan *ps = ctx;
    json_t *o = fl_api_decoded(kv->value);
    if (!o)
        return true;
    if (ps->kind == SK_POD) {
        if (!controlled(o) && fl_labelsel_match(ps->sel, fl_json_path(o, "metadata.labels"))) {
            ps->expected++;
            size_t i;
            json_t *c;
            json_array_foreach(fl_json_path(o, "status.conditions"), i, c) {
                if (!strcmp(jstr_or(c, "type", ""), "Ready") && !strcmp(jstr_or(c, "status", ""), "True"))
                    ps->healthy++;
            }
        }
    } else if (!controlled(o) && fl_labelsel_match(ps->sel, fl_json_path(o, "spec.template.metadata.labels"))) {
        ps->expected += fl_json_path_int(o, "spec.replicas", 1);
        ps->healthy += fl_json_path_int(o, "status.availableReplicas", fl_json_path_int(o, "status.readyReplicas", 0));
    }
    json_decref(o);
    return true;
}

/* An IntOrString budget against n pods: the integer, or the percentage rounded up. */
static int64_t budget(const json_t *v, int64_t n)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    const char *s = json_string_value(v);
    if (!s)
        return 0;
    long pct = strtol(s, NULL, 10);
    return (pct * n + 99) / 100;
}

json_t *fl_sim_status_pdb(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *old = json_object_get(x->obj, "status");
    pdb_scan ps = {0};
    x->due = x->now + RESYNC_MS;
    char *err = NULL;
    if (fl_labelsel_from_json(json_object_get(spec, "selector"), &ps.sel, &err)) {
        free(err);
        return NULL; /* the API refused such a selector already */
    }
    static const enum sim_kind scanned[] = {SK_DEPLOY, SK_STS, SK_RS, SK_POD};
    static const char *const prefixes[] = {"/apps/deployments/", "/apps/statefulsets/", "/apps/replicasets/",
                                           "/core/pods/"};
    for (size_t i = 0; i < 4; i++) {
        char *prefix = fl_asprintf("%s%s/", prefixes[i], x->ref->ns);
        int64_t rev;
        ps.kind = scanned[i];
        fl_store_list(x->c->api->store, prefix, NULL, 0, 0, pdb_scan_fn, &ps, &rev, NULL);
        free(prefix);
    }
    fl_labelsel_free(ps.sel);
    int64_t desired = 0;
    if (json_object_get(spec, "maxUnavailable")) {
        desired = ps.expected - budget(json_object_get(spec, "maxUnavailable"), ps.expected);
        if (desired < 0)
            desired = 0;
    } else if (json_object_get(spec, "minAvailable")) {
        desired = budget(json_object_get(spec, "minAvailable"), ps.expected);
    }
    int64_t allowed = ps.healthy > desired ? ps.healthy - desired : 0;
    json_t *out = json_pack("{sI sI sI sI sI}", "observedGeneration",
                            (json_int_t)fl_json_path_int(x->obj, "metadata.generation", 1), "disruptionsAllowed",
                            (json_int_t)allowed, "currentHealthy", (json_int_t)ps.healthy, "desiredHealthy",
                            (json_int_t)desired, "expectedPods", (json_int_t)ps.expected);
    json_t *c = allowed > 0 ? cond(old, "DisruptionAllowed", "True", "SufficientPods", "", x->nows)
                            : cond(old, "DisruptionAllowed", "False", "InsufficientPods", "", x->nows);
    json_object_set_new(c, "observedGeneration", json_integer(fl_json_path_int(x->obj, "metadata.generation", 1)));
    json_object_set_new(out, "conditions", json_pack("[o]", c));
    return out;
}

/* ---- load balancer addresses ---- */

json_t *fl_sim_status_lb(sim_eval *x)
{
    bool svc = x->ref->kind == SK_SVC;
    if (svc && strcmp(jstr_or(x->obj, "spec.type", ""), "LoadBalancer"))
        return NULL; /* only a LoadBalancer Service gets an address */
    uint32_t hc = fnv1a(x->c->name, strlen(x->c->name));
    uint32_t ho = svc ? fnv1a(x->key, strlen(x->key)) : 0;
    char ip[32];
    snprintf(ip, sizeof ip, "10.%u.%u.%u", 200 + (hc % 50), (hc >> 8) % 256, 1 + ((hc >> 16) + ho) % 250);
    json_t *entry = json_pack("{ss}", "ip", ip);
    if (svc) {
        json_object_set_new(entry, "ipMode", json_string("VIP"));
        const json_t *ports = fl_json_path(x->obj, "spec.ports");
        if (json_array_size(ports)) {
            json_t *ps = json_array();
            size_t i;
            json_t *p;
            json_array_foreach(ports, i, p) {
                json_array_append_new(ps, json_pack("{sIss}", "port", (json_int_t)fl_json_path_int(p, "port", 0),
                                                    "protocol", jstr_or(p, "protocol", "TCP")));
            }
            json_object_set_new(entry, "ports", ps);
        }
    }
    const json_t *old = json_object_get(x->obj, "status");
    json_t *out = json_is_object(old) ? fl_json_deep_copy(old) : json_object();
    json_object_set_new(out, "loadBalancer", json_pack("{s[o]}", "ingress", entry));
    return out;
}
