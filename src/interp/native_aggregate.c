/* native_aggregate.c - AggregateStatus for the built-in kinds whose members report
 * states rather than counts: Job, CronJob, Pod, PersistentVolumeClaim, and the load
 * balancer addresses of Service and Ingress (the counting workloads are in
 * native_status.c, with the generation rule they share).
 *
 * Each folds the members' reflected statuses into one the template can show: the worst
 * phase, a Job complete only when every member's part is, every member's addresses.
 * As in native_status.c, timestamps are taken from the members, never from a clock, so
 * the same reports aggregate to the same object. */
#include "interp/native.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/err.h"
#include "core/mem.h"

static int status_of(const json_t *obj, const char *base, const json_t **st, char **err)
{
    return fl_native_get(obj, base, "status", FL_NT_OBJECT, st, err);
}

/* ---- aggregate: Job, CronJob ---- */

/* True when a Complete or Failed condition is True: the Job is over. *type says which. */
static bool job_finished(const json_t *conds, const char **type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && !strcmp(s, "True") && (!strcmp(t, "Complete") || !strcmp(t, "Failed"))) {
            *type = t;
            return true;
        }
    }
    return false;
}

static json_t *job_condition(const char *type, const char *reason, const char *message, const char *when)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", "True", "reason", reason, "message", message);
    if (when) {
        json_object_set_new(c, "lastProbeTime", json_string(when));
        json_object_set_new(c, "lastTransitionTime", json_string(when));
    }
    return c;
}

/* A Job completes once every member's part completed, and fails if any member's failed.
 * A finished template is never changed again (its members' Jobs may be cleaned up). */
int fl_native_aggregate_job(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    const json_t *old, *oconds;
    const char *ftype;
    int rc;
    *out = NULL;
    if ((rc = status_of(obj, "", &old, err)) ||
        (rc = fl_native_get(old, "status", "conditions", FL_NT_ARRAY, &oconds, err)))
        return rc;
    if (job_finished(oconds, &ftype)) {
        *out = fl_json_deep_copy(obj);
        return 0;
    }
    int64_t sums[3] = {0};
    static const char *const counts[] = {"active", "succeeded", "failed"};
    size_t n = 0, complete = 0, criteria = 0, started = 0, completed = 0;
    const char *start = NULL, *end = NULL, *complete_at = NULL, *failed_at = NULL, *criteria_at = NULL;
    struct fl_native_names failed = {0};
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status"), *conds, *c;
        const char *st_time, *ct_time;
        char base[64], nb[64];
        n++;
        if (!json_is_object(ist))
            continue;
        snprintf(base, sizeof base, "items[%zu].status", i);
        for (size_t f = 0; f < 3; f++) {
            int64_t v;
            if ((rc = fl_native_int(ist, base, counts[f], 0, &v, err)))
                return rc;
            sums[f] += v;
        }
        if ((rc = fl_native_get(ist, base, "conditions", FL_NT_ARRAY, &conds, err)) ||
            (rc = fl_native_str(ist, base, "startTime", &st_time, err)) ||
            (rc = fl_native_str(ist, base, "completionTime", &ct_time, err)))
            return rc;
        if (job_finished(conds, &ftype)) {
            const json_t *fc = fl_native_condition(conds, ftype);
            const char *when = json_string_value(json_object_get(fc, "lastTransitionTime"));
            if (!strcmp(ftype, "Complete")) {
                complete++;
                complete_at = fl_native_later(complete_at, when);
            } else {
                fl_native_names_add(&failed, fl_native_cluster_of(it, i, nb, sizeof nb));
                failed_at = fl_native_later(failed_at, when);
            }
        }
        c = fl_native_condition(conds, "SuccessCriteriaMet");
        const char *cs = json_string_value(json_object_get(c, "status"));
        if (cs && !strcmp(cs, "True")) {
            criteria++;
            criteria_at = fl_native_later(criteria_at, json_string_value(json_object_get(c, "lastTransitionTime")));
        }
        if (st_time) {
            started++;
            start = fl_native_earlier(start, st_time);
        }
        if (ct_time) {
            completed++;
            end = fl_native_later(end, ct_time);
        }
    }
    json_t *st;
    *out = fl_native_output(obj, false, &st);
    for (size_t f = 0; f < 3; f++)
        fl_native_set_count(st, counts[f], sums[f]);
    json_t *conds = json_array();
    if (failed.count) {
        char list[640], msg[768];
        snprintf(msg, sizeof msg, "Job executed failed in member clusters %s",
                 fl_native_names_text(&failed, list, sizeof list));
        json_array_append_new(conds, job_condition("Failed", "JobFailed", msg, failed_at));
    }
    if (n && complete == n) {
        const char *when = complete_at ? complete_at : end;
        json_array_append_new(conds, job_condition("Complete", "Completed", "Job completed", when));
        if (criteria == n)
            json_array_append_new(conds, job_condition("SuccessCriteriaMet", "CompletionsReached",
                                                       "All member clusters have met success criteria", criteria_at));
    }
    if (json_array_size(conds))
        json_object_set_new(st, "conditions", conds);
    else
        json_decref(conds);
    /* startTime, once set, stays; it is set when every member's part has started */
    const json_t *ostart = json_object_get(old, "startTime");
    if (json_is_string(ostart))
        json_object_set(st, "startTime", (json_t *)ostart);
    else if (n && started == n)
        json_object_set_new(st, "startTime", json_string(start));
    if (n && completed == n)
        json_object_set_new(st, "completionTime", json_string(end));
    return 0;
}

/* Active Jobs of every member, and the latest schedule and success times. */
int fl_native_aggregate_cronjob(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    const json_t *old;
    const char *sched = NULL, *success = NULL;
    int rc;
    *out = NULL;
    if ((rc = status_of(obj, "", &old, err)))
        return rc;
    json_t *active = json_array();
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status"), *a;
        const char *s1, *s2;
        char base[64];
        if (!json_is_object(ist))
            continue;
        snprintf(base, sizeof base, "items[%zu].status", i);
        if ((rc = fl_native_get(ist, base, "active", FL_NT_ARRAY, &a, err)) ||
            (rc = fl_native_str(ist, base, "lastScheduleTime", &s1, err)) ||
            (rc = fl_native_str(ist, base, "lastSuccessfulTime", &s2, err))) {
            json_decref(active);
            return rc;
        }
        if (a)
            json_array_extend(active, (json_t *)a);
        sched = fl_native_later(sched, s1);
        success = fl_native_later(success, s2);
    }
    json_t *st;
    *out = fl_native_output(obj, true, &st);
    if (json_array_size(active))
        json_object_set(st, "active", active);
    else
        json_object_del(st, "active");
    json_decref(active);
    if (sched)
        json_object_set_new(st, "lastScheduleTime", json_string(sched));
    else
        json_object_del(st, "lastScheduleTime");
    if (success)
        json_object_set_new(st, "lastSuccessfulTime", json_string(success));
    else
        json_object_del(st, "lastSuccessfulTime");
    return 0;
}

/* ---- aggregate: Pod, PVC ---- */

/* One pod phase for all members, the worst first: Failed, Pending (a member that has
 * not reported counts as Pending), Running, Succeeded. Container statuses are listed
 * with only readiness and state, as Karmada lists them. */
int fl_native_aggregate_pod(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    static const char *const order[] = {"Failed", "Pending", "Running", "Succeeded"};
    bool seen[4] = {false};
    int rc;
    *out = NULL;
    if (!json_array_size(items)) {
        *out = fl_json_deep_copy(obj);
        return 0;
    }
    json_t *cs = json_array(), *ics = json_array();
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status");
        const char *phase;
        char base[64];
        if (!json_is_object(ist)) {
            seen[1] = true;
            continue;
        }
        snprintf(base, sizeof base, "items[%zu].status", i);
        if ((rc = fl_native_str(ist, base, "phase", &phase, err)))
            goto fail;
        for (size_t p = 0; phase && p < 4; p++)
            if (!strcmp(phase, order[p]))
                seen[p] = true;
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
        for (size_t l = 0; l < 2; l++) {
            const json_t *arr, *c;
            size_t j;
            if ((rc = fl_native_get(ist, base, lists[l], FL_NT_ARRAY, &arr, err)))
                goto fail;
            json_array_foreach(arr, j, c) {
                json_t *e = json_object();
                json_t *ready = json_object_get(c, "ready"), *state = json_object_get(c, "state");
                json_object_set_new(e, "ready", json_boolean(json_is_true(ready)));
                if (json_is_object(state))
                    json_object_set(e, "state", state);
                json_array_append_new(l ? ics : cs, e);
            }
        }
    }
    json_t *st;
    *out = fl_native_output(obj, false, &st);
    for (size_t p = 0; p < 4; p++)
        if (seen[p]) {
            json_object_set_new(st, "phase", json_string(order[p]));
            break;
        }
    if (json_array_size(cs))
        json_object_set(st, "containerStatuses", cs);
    if (json_array_size(ics))
        json_object_set(st, "initContainerStatuses", ics);
    rc = 0;
fail:
    json_decref(cs);
    json_decref(ics);
    return rc;
}

/* Bound when every reporting member is Bound; Lost as soon as one is; otherwise the
 * phase of the last member that is not Bound. */
int fl_native_aggregate_pvc(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    const char *phase = "Bound";
    int rc;
    *out = NULL;
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status");
        const char *p;
        char base[64];
        if (!json_is_object(ist))
            continue;
        snprintf(base, sizeof base, "items[%zu].status", i);
        if ((rc = fl_native_str(ist, base, "phase", &p, err)))
            return rc;
        if (p && !strcmp(p, "Lost")) {
            phase = p;
            break;
        }
        if (!p || strcmp(p, "Bound"))
            phase = p;
    }
    json_t *st;
    *out = fl_native_output(obj, false, &st);
    if (phase && *phase)
        json_object_set_new(st, "phase", json_string(phase));
    return 0;
}

/* ---- aggregate: load balancer addresses (Service, Ingress) ---- */

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Port statuses by port, then protocol, then error (none first). */
static int cmp_port(const void *pa, const void *pb)
{
    const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
    json_int_t x = json_integer_value(json_object_get(a, "port")), y = json_integer_value(json_object_get(b, "port"));
    if (x != y)
        return x < y ? -1 : 1;
    int c = cmp_str(sget(a, "protocol"), sget(b, "protocol"));
    if (c)
        return c;
    const char *ea = sget(a, "error"), *eb = sget(b, "error");
    if (!ea || !eb)
        return ea ? 1 : eb ? -1 : 0;
    return strcmp(ea, eb);
}

/* Addresses: those with a hostname first, by hostname; then by ip; then by ipMode,
 * entries without one last. */
static int cmp_ingress(const void *pa, const void *pb)
{
    const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
    const char *ha = sget(a, "hostname"), *hb = sget(b, "hostname");
    bool has_a = ha && *ha, has_b = hb && *hb;
    if (has_a != has_b)
        return has_a ? -1 : 1;
    int c = cmp_str(ha, hb);
    if (c)
        return c;
    if ((c = cmp_str(sget(a, "ip"), sget(b, "ip"))))
        return c;
    const char *ma = sget(a, "ipMode"), *mb = sget(b, "ipMode");
    if (!ma || !mb)
        return ma ? -1 : mb ? 1 : 0;
    return strcmp(ma, mb);
}

static void sort_array(json_t *arr, int (*cmp)(const void *, const void *))
{
    size_t n = json_array_size(arr);
    if (n < 2)
        return;
    json_t **v = fl_malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof *v, cmp);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    free(v);
}

/* Every member's status.loadBalancer.ingress, one entry per (hostname, ip, ipMode)
 * with the union of their port statuses, sorted: the same members give the same list
 * whatever order they report in. */
static int merge_lb_ingress(const json_t *items, json_t **out, char **err)
{
    json_t *all = json_array();
    int rc;
    size_t i;
    const json_t *it;
    *out = NULL;
    json_array_foreach(items, i, it) {
        const json_t *ist = json_object_get(it, "status"), *lb, *ing, *e;
        char base[64], lbp[96];
        size_t j, k;
        if (!json_is_object(ist))
            continue;
        snprintf(base, sizeof base, "items[%zu].status", i);
        snprintf(lbp, sizeof lbp, "%s.loadBalancer", base);
        if ((rc = fl_native_get(ist, base, "loadBalancer", FL_NT_OBJECT, &lb, err)) ||
            (rc = fl_native_get(lb, lbp, "ingress", FL_NT_ARRAY, &ing, err)))
            goto fail;
        json_array_foreach(ing, j, e) {
            if (!json_is_object(e)) {
                *err = fl_asprintf("%s.ingress[%zu]: must be an object", lbp, j);
                rc = FL_EINVAL;
                goto fail;
            }
            json_t *same = NULL, *a;
            json_array_foreach(all, k, a) {
                bool mode_same = sget(a, "ipMode") && sget(e, "ipMode") ? !strcmp(sget(a, "ipMode"), sget(e, "ipMode"))
                                                                        : !sget(a, "ipMode") && !sget(e, "ipMode");
                if (!cmp_str(sget(a, "hostname"), sget(e, "hostname")) && !cmp_str(sget(a, "ip"), sget(e, "ip")) &&
                    mode_same)
                    same = a;
            }
            if (!same) {
                same = fl_json_deep_copy(e);
                json_object_del(same, "ports");
                json_array_append_new(all, same);
            }
            const json_t *ports = json_object_get(e, "ports"), *p;
            json_array_foreach(ports, k, p) {
                json_t *have = json_object_get(same, "ports"), *q;
                size_t m;
                bool dup = false;
                json_array_foreach(have, m, q) if (fl_json_same(q, (json_t *)p)) dup = true;
                if (dup)
                    continue;
                if (!have) {
                    have = json_array();
                    json_object_set_new(same, "ports", have);
                }
                json_array_append(have, (json_t *)p);
            }
        }
    }
    json_t *a;
    json_array_foreach(all, i, a) sort_array(json_object_get(a, "ports"), cmp_port);
    sort_array(all, cmp_ingress);
    *out = all;
    return 0;
fail:
    json_decref(all);
    return rc;
}

static int aggregate_lb(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    json_t *ing, *st;
    int rc = merge_lb_ingress(items, &ing, err);
    *out = NULL;
    if (rc)
        return rc;
    *out = fl_native_output(obj, false, &st);
    json_t *lb = json_object();
    if (json_array_size(ing))
        json_object_set(lb, "ingress", ing);
    json_object_set_new(st, "loadBalancer", lb);
    json_decref(ing);
    return 0;
}

/* Only a LoadBalancer Service aggregates: its addresses in every member. */
int fl_native_aggregate_service(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    const json_t *spec;
    const char *type;
    int rc;
    *out = NULL;
    if ((rc = fl_native_get(obj, "", "spec", FL_NT_OBJECT, &spec, err)) ||
        (rc = fl_native_str(spec, "spec", "type", &type, err)))
        return rc;
    if (!type || strcmp(type, "LoadBalancer")) {
        *out = fl_json_deep_copy(obj);
        return 0;
    }
    return aggregate_lb(obj, items, out, err);
}

int fl_native_aggregate_ingress(const json_t *obj, const json_t *items, json_t **out, char **err)
{
    return aggregate_lb(obj, items, out, err);
}
