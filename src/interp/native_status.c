/* native_status.c - InterpretStatus for built-in kinds, and AggregateStatus for the
 * workloads that report counts (Deployment, StatefulSet, ReplicaSet, DaemonSet).
 *
 * Reflect runs per member object and decides what the binding keeps of its status;
 * aggregate runs on the control plane and folds every member's reflected status into
 * the template's, so that tools reading the template (kubectl rollout status, kubectl
 * wait, Argo CD) see one workload. The other kinds' aggregation is in
 * native_aggregate.c, which shares the helpers here.
 *
 * Generation bookkeeping. A sum of members' counts says nothing about whether those
 * members run the template's latest spec. Each workload's reflected status therefore
 * also carries the member object's metadata.generation ("generation") and the
 * template generation its manifest was rendered from ("resourceTemplateGeneration",
 * read from the resourcetemplate.karmada.io/generation annotation), beside the member's
 * observedGeneration. The template's status.observedGeneration becomes its
 * metadata.generation only when every item is current: it has a status, its controller
 * has seen its spec (observedGeneration == generation), and that spec came from this
 * template generation; otherwise the previous value stays, which makes kubectl wait for
 * "spec update to be observed" exactly as it would on one cluster.
 *
 * Counts Kubernetes omits when zero are omitted here too, and an output carries no
 * clock time of ours: every timestamp comes from the members, so aggregating the same
 * inputs twice gives the same object and a caller can compare before writing. */
#include "interp/native.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

/* ---- shared pieces ---- */

/* obj.status as an object (NULL when missing); FL_EINVAL when it is something else. */
static int status_of(const json_t *obj, const char *base, const json_t **st, char **err)
{
    return fl_native_get(obj, base, "status", FL_NT_OBJECT, st, err);
}

static int generation_of(const json_t *obj, int64_t *gen, char **err)
{
    const json_t *meta;
    int rc = fl_native_get(obj, "", "metadata", FL_NT_OBJECT, &meta, err);
    if (!rc)
        rc = fl_native_int(meta, "metadata", "generation", 0, gen, err);
    return rc;
}

/* The resourcetemplate.karmada.io/generation annotation as a number; 0 when absent. */
static int template_generation_annotation(const json_t *obj, int64_t *out, char **err)
{
    const json_t *ann;
    const char *s;
    char *end;
    int rc;
    *out = 0;
    if ((rc = fl_native_obj_at(obj, "metadata.annotations", &ann, err)) ||
        (rc = fl_native_str(ann, "metadata.annotations", FL_TEMPLATE_GENERATION_ANNOTATION, &s, err)))
        return rc;
    if (!s)
        return 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end) {
        *err = fl_asprintf("metadata.annotations[%s]: \"%s\" is not an integer",
                           FL_TEMPLATE_GENERATION_ANNOTATION, s);
        return FL_EINVAL;
    }
    *out = v;
    return 0;
}

/* The condition in the form the binding keeps: what it says, and when it last changed;
 * lastUpdateTime/lastProbeTime move on every progress step and would make every member
 * heartbeat a status change. */
static json_t *condition_core(const json_t *c)
{
    static const char *const keys[] = {"type", "status", "reason", "message", "lastTransitionTime"};
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(c, keys[i]);
        if (json_is_string(v))
            json_object_set(out, keys[i], v);
    }
    return out;
}

const char *fl_native_cluster_of(const json_t *item, size_t i, char *buf, size_t cap)
{
    const char *n = json_string_value(json_object_get(item, "clusterName"));
    if (n && *n)
        return n;
    return fl_native_index(buf, cap, "items", i);
}

void fl_native_names_add(struct fl_native_names *n, const char *name)
{
    enum { SHOWN = 5 };
    if (n->count < SHOWN) {
        size_t len = strlen(n->buf);
        snprintf(n->buf + len, sizeof n->buf - len, "%s%s", len ? ", " : "", name);
    }
    n->count++;
}

const char *fl_native_names_text(struct fl_native_names *n, char *out, size_t cap)
{
    if (n->count > 5)
        snprintf(out, cap, "%s and %zu more", n->buf, n->count - 5);
    else
        snprintf(out, cap, "%s", n->buf);
    return out;
}

/* The later of two RFC 3339 times (both UTC "Z" as the apiserver writes them, so text
 * order is time order); either may be NULL. */
const char *fl_native_later(const char *a, const char *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return strcmp(a, b) >= 0 ? a : b;
}

const char *fl_native_earlier(const char *a, const char *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return strcmp(a, b) <= 0 ? a : b;
}

/* Put condition {type, status, reason, message} into the conditions array of st,
 * replacing the one of that type. Its lastTransitionTime stays when status and reason
 * are what they were, else becomes ltt (a member's time; omitted when NULL). */
static void set_condition(json_t *st, const char *type, const char *status, const char *reason, const char *message,
                          const char *ltt)
{
    json_t *conds = json_object_get(st, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(st, "conditions", conds);
    }
    json_t *c = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason, "message", message);
    const json_t *old = fl_native_condition(conds, type);
    const char *os = json_string_value(json_object_get(old, "status"));
    const char *orsn = json_string_value(json_object_get(old, "reason"));
    json_t *oltt = json_object_get(old, "lastTransitionTime");
    if (os && orsn && !strcmp(os, status) && !strcmp(orsn, reason) && json_is_string(oltt))
        json_object_set(c, "lastTransitionTime", oltt);
    else if (ltt)
        json_object_set_new(c, "lastTransitionTime", json_string(ltt));
    size_t i;
    json_t *e;
    json_array_foreach(conds, i, e) {
        const char *t = json_string_value(json_object_get(e, "type"));
        if (t && !strcmp(t, type)) {
            json_array_set_new(conds, i, c);
            return;
        }
    }
    json_array_append_new(conds, c);
}

/* The output object: a copy of the template, and the status object inside it to fill
 * (a copy of the old one when keep_old, else empty). */
json_t *fl_native_output(const json_t *obj, bool keep_old, json_t **st)
{
    /* the rest is shared: a status is written from it, nothing else of it changes. A deep
     * copy of every template was a seventh of the binding status controller's pass after a
     * restart */
    json_t *out = fl_json_shallow_copy(obj);
    json_t *old = json_object_get(out, "status");
    *st = keep_old && json_is_object(old) ? fl_json_deep_copy(old) : json_object();
    json_object_set_new(out, "status", *st);
    return out;
}

/* ---- reflect ---- */

static const char *const deployment_counts[] = {"replicas", "updatedReplicas", "readyReplicas",
                                                "availableReplicas", "unavailableReplicas", NULL};
static const char *const replicaset_counts[] = {"replicas", "readyReplicas", "availableReplicas", NULL};
static const char *const statefulset_counts[] = {"replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                                                 "availableReplicas", NULL};
static const char *const daemonset_counts[] = {"currentNumberScheduled", "desiredNumberScheduled", "numberAvailable",
                                               "numberMisscheduled", "numberReady", "updatedNumberScheduled",
                                               "numberUnavailable", NULL};

/* A workload's counts with the generation bookkeeping; conditions too when asked
 * (Deployment, whose Available/Progressing the template needs for kubectl wait). */
static int reflect_counts(const json_t *obj, const char *const *counts, bool conditions, json_t **status, char **err)
{
    const json_t *st, *conds = NULL;
    int64_t gen, tgen, og, v;
    int rc;
    *status = NULL;
    if ((rc = status_of(obj, "", &st, err)) || !st)
        return rc;
    if ((rc = generation_of(obj, &gen, err)) || (rc = template_generation_annotation(obj, &tgen, err)) ||
        (rc = fl_native_int(st, "status", "observedGeneration", 0, &og, err)) ||
        (conditions && (rc = fl_native_get(st, "status", "conditions", FL_NT_ARRAY, &conds, err))))
        return rc;
    json_t *out = json_object();
    fl_native_set_count(out, "generation", gen);
    fl_native_set_count(out, "resourceTemplateGeneration", tgen);
    for (size_t i = 0; counts[i]; i++) {
        if ((rc = fl_native_int(st, "status", counts[i], 0, &v, err))) {
            json_decref(out);
            return rc;
        }
        fl_native_set_count(out, counts[i], v);
    }
    fl_native_set_count(out, "observedGeneration", og);
    if (conds && json_array_size(conds)) {
        json_t *cs = json_array();
        size_t i;
        const json_t *c;
        json_array_foreach(conds, i, c) if (json_is_object(c)) json_array_append_new(cs, condition_core(c));
        json_object_set_new(out, "conditions", cs);
    }
    if (!json_object_size(out))
        json_decref(out), out = NULL; /* nothing collected yet */
    *status = out;
    return 0;
}

int fl_native_reflect_deployment(const json_t *obj, json_t **status, char **err)
{
    return reflect_counts(obj, deployment_counts, true, status, err);
}

int fl_native_reflect_replicaset(const json_t *obj, json_t **status, char **err)
{
    return reflect_counts(obj, replicaset_counts, false, status, err);
}

/* Karmada leaves observedGeneration out of a StatefulSet's reflected status, which
 * keeps its template's observedGeneration from ever advancing; it is kept here. */
int fl_native_reflect_statefulset(const json_t *obj, json_t **status, char **err)
{
    return reflect_counts(obj, statefulset_counts, false, status, err);
}

int fl_native_reflect_daemonset(const json_t *obj, json_t **status, char **err)
{
    return reflect_counts(obj, daemonset_counts, false, status, err);
}

/* Only a LoadBalancer Service has a status worth reporting: its addresses. */
int fl_native_reflect_service(const json_t *obj, json_t **status, char **err)
{
    const json_t *spec, *st, *lb;
    const char *type;
    int rc;
    *status = NULL;
    if ((rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_str(spec, "spec", "type", &type, err)) || (rc = status_of(obj, "", &st, err)) ||
        (rc = fl_native_get(st, "status", "loadBalancer", FL_NT_OBJECT, &lb, err)))
        return rc;
    if (!type || strcmp(type, "LoadBalancer") || !st)
        return 0;
    *status = json_pack("{s:o}", "loadBalancer", lb ? fl_json_deep_copy(lb) : json_object());
    return 0;
}

int fl_native_reflect_job(const json_t *obj, json_t **status, char **err)
{
    static const char *const counts[] = {"active", "succeeded", "failed", NULL};
    static const char *const times[] = {"startTime", "completionTime", NULL};
    const json_t *st, *conds, *v;
    int64_t n;
    int rc;
    *status = NULL;
    if ((rc = status_of(obj, "", &st, err)) || !st ||
        (rc = fl_native_get(st, "status", "conditions", FL_NT_ARRAY, &conds, err)))
        return rc;
    json_t *out = json_object();
    for (size_t i = 0; counts[i]; i++) {
        if ((rc = fl_native_int(st, "status", counts[i], 0, &n, err)))
            goto fail;
        fl_native_set_count(out, counts[i], n);
    }
    if (conds && json_array_size(conds))
        json_object_set_new(out, "conditions", fl_json_deep_copy(conds));
    for (size_t i = 0; times[i]; i++) {
        if ((rc = fl_native_get(st, "status", times[i], FL_NT_STRING, &v, err)))
            goto fail;
        if (v)
            json_object_set(out, times[i], (json_t *)v);
    }
    if (json_object_size(out))
        *status = out;
    else
        json_decref(out);
    return 0;
fail:
    json_decref(out);
    return rc;
}

int fl_native_reflect_whole(const json_t *obj, json_t **status, char **err)
{
    const json_t *st;
    int rc = status_of(obj, "", &st, err);
    *status = !rc && st && json_object_size(st) ? fl_json_deep_copy(st) : NULL;
    return rc;
}

/* ---- aggregate: workloads with counts ---- */

/* What aggregating counts found, beyond the sums written into the status. */
struct tally {
    size_t items, current; /* items; items whose status matches the template generation */
};

/* Sum counts over items into st and advance st.observedGeneration by the rule at the
 * top of this file. */
static int aggregate_counts(const json_t *obj, const json_t *items, const char *const *counts, json_t *st,
                            struct tally *t, char **err)
{
    int64_t tgen, sums[16] = {0};
    int rc;
    memset(t, 0, sizeof *t);
    if ((rc = generation_of(obj, &tgen, err)))
        return rc;
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status");
        char base[64];
        int64_t g, rtg, og, v;
        t->items++;
        if (!json_is_object(ist))
            continue; /* not collected yet: counts nothing, and is not current */
        snprintf(base, sizeof base, "items[%zu].status", i);
        for (size_t f = 0; counts[f]; f++) {
            if ((rc = fl_native_int(ist, base, counts[f], 0, &v, err)))
                return rc;
            sums[f] += v;
        }
        if ((rc = fl_native_int(ist, base, "generation", 0, &g, err)) ||
            (rc = fl_native_int(ist, base, "resourceTemplateGeneration", 0, &rtg, err)) ||
            (rc = fl_native_int(ist, base, "observedGeneration", 0, &og, err)))
            return rc;
        if (og == g && rtg == tgen)
            t->current++;
    }
    for (size_t f = 0; counts[f]; f++)
        fl_native_set_count(st, counts[f], sums[f]);
    if (t->current == t->items)
        fl_native_set_count(st, "observedGeneration", tgen);
    return 0;
}

/* Shared shape of the four workloads: old status kept, counts and observedGeneration
 * replaced. */
static int aggregate_workload(const json_t *obj, const json_t *items, const char *const *counts, json_t **out,
                              struct tally *t, char **err)
{
    const json_t *old;
    json_t *st;
    int rc = status_of(obj, "", &old, err);
    if (rc)
        return rc;
    *out = fl_native_output(obj, true, &st);
    if ((rc = aggregate_counts(obj, items, counts, st, t, err))) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* Deployment's Available and Progressing, which kubectl reads: `wait
 * --for=condition=Available` reads Available, `rollout status` fails on Progressing
 * with reason ProgressDeadlineExceeded. Available holds when every member reports it
 * (a member without status has not got there); Progressing reports the deadline if any
 * member passed it, NewReplicaSetAvailable once every member finished its rollout of the
 * current template, and ReplicaSetUpdated while any is still rolling. */
static int deployment_conditions(json_t *st, const json_t *items, const struct tally *t, char **err)
{
    struct fl_native_names unavailable = {0}, exceeded = {0}, rolling = {0};
    const char *avail_ltt = NULL, *prog_ltt = NULL;
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        char nb[64], base[64];
        const char *name = fl_native_cluster_of(it, i, nb, sizeof nb);
        const json_t *ist = json_object_get(it, "status"), *conds;
        int rc;
        if (!json_is_object(ist)) {
            fl_native_names_add(&unavailable, name);
            fl_native_names_add(&rolling, name);
            continue;
        }
        snprintf(base, sizeof base, "items[%zu].status", i);
        if ((rc = fl_native_get(ist, base, "conditions", FL_NT_ARRAY, &conds, err)))
            return rc;
        const json_t *a = fl_native_condition(conds, "Available"), *p = fl_native_condition(conds, "Progressing");
        const char *as = json_string_value(json_object_get(a, "status"));
        const char *ps = json_string_value(json_object_get(p, "status"));
        const char *pr = json_string_value(json_object_get(p, "reason"));
        avail_ltt = fl_native_later(avail_ltt, json_string_value(json_object_get(a, "lastTransitionTime")));
        prog_ltt = fl_native_later(prog_ltt, json_string_value(json_object_get(p, "lastTransitionTime")));
        if (!as || strcmp(as, "True"))
            fl_native_names_add(&unavailable, name);
        if (ps && pr && !strcmp(ps, "False") && !strcmp(pr, "ProgressDeadlineExceeded"))
            fl_native_names_add(&exceeded, name);
        else if (!ps || !pr || strcmp(ps, "True") || strcmp(pr, "NewReplicaSetAvailable"))
            fl_native_names_add(&rolling, name);
    }
    char list[640], msg[768];
    if (!t->items)
        set_condition(st, "Available", "False", "MinimumReplicasUnavailable",
                      "Deployment has no member cluster reporting status yet.", NULL);
    else if (!unavailable.count)
        set_condition(st, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.",
                      avail_ltt);
    else {
        snprintf(msg, sizeof msg, "Deployment does not have minimum availability in member clusters: %s",
                 fl_native_names_text(&unavailable, list, sizeof list));
        set_condition(st, "Available", "False", "MinimumReplicasUnavailable", msg, avail_ltt);
    }
    if (!t->items)
        return 0;
    if (exceeded.count) {
        snprintf(msg, sizeof msg, "Deployment exceeded its progress deadline in member clusters: %s",
                 fl_native_names_text(&exceeded, list, sizeof list));
        set_condition(st, "Progressing", "False", "ProgressDeadlineExceeded", msg, prog_ltt);
    } else if (!rolling.count && t->current == t->items) {
        set_condition(st, "Progressing", "True", "NewReplicaSetAvailable",
                      "Deployment has successfully progressed in every member cluster.", prog_ltt);
    } else {
        snprintf(msg, sizeof msg, "Deployment is progressing in member clusters: %s",
                 rolling.count ? fl_native_names_text(&rolling, list, sizeof list) : "(waiting for current status)");
        set_condition(st, "Progressing", "True", "ReplicaSetUpdated", msg, prog_ltt);
    }
    return 0;
}

int fl_native_aggregate_deployment(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    struct tally t;
    int rc = aggregate_workload(obj, items, deployment_counts, out, &t, err);
    if (!rc && (rc = deployment_conditions(json_object_get(*out, "status"), items, &t, err))) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

int fl_native_aggregate_replicaset(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    struct tally t;
    return aggregate_workload(obj, items, replicaset_counts, out, &t, err);
}

int fl_native_aggregate_statefulset(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    struct tally t;
    return aggregate_workload(obj, items, statefulset_counts, out, &t, err);
}

int fl_native_aggregate_daemonset(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    struct tally t;
    return aggregate_workload(obj, items, daemonset_counts, out, &t, err);
}
