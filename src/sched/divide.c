/* divide.c - how many replicas each selected cluster gets (Karmada's core/assignment.go,
 * division_algorithm.go and util/helper's Webster dispenser).
 *
 * Strategies, from placement.replicaScheduling:
 *   absent or Duplicated          every selected cluster gets spec.replicas
 *   Divided + Weighted, static    staticWeightList: a cluster's weight is the largest
 *                                 weight among the rules whose targetCluster (a
 *                                 ClusterAffinity, through the shared matcher) matches
 *                                 it; clusters with weight 0 get nothing; when no
 *                                 cluster has a weight (or weightPreference is absent)
 *                                 all weigh 1. Replicas are apportioned from scratch
 *                                 every time.
 *   Divided + Weighted, dynamic   dynamicWeight AvailableReplicas: weights are each
 *                                 cluster's available replicas (the estimator's answer)
 *   Divided + Aggregated          as dynamic, but first only the fewest clusters (most
 *                                 available first, clusters already running the
 *                                 workload before others) whose capacity covers it
 * Defaults applied here as Karmada's admission does: an empty replicaSchedulingType is
 * Divided, an empty replicaDivisionPreference with Divided is Weighted.
 *
 * Apportionment is Webster's method (Sainte-Lague): the next replica goes to the cluster
 * with the highest weight/(2*replicas+1); ties go to the cluster with fewer replicas,
 * then by name, ascending or descending as the FNV-1a hash of resource.uid is even or
 * odd (so equal clusters do not always lose ties to the same one across workloads).
 * Priorities are compared as float64 divisions, as upstream does, so results match it
 * replica for replica. Divisor methods are house-monotone: adding replicas never takes
 * one away from a cluster, so static-weight scaling moves only the added or removed
 * replicas. We jump-start the seat loop: every seat whose priority is above a threshold
 * belongs to the prefix the loop would hand out first, so large replica counts cost
 * O(clusters log clusters), not O(replicas log clusters).
 *
 * Steady rescheduling (dynamic and Aggregated), from the previous spec.clusters
 * restricted to today's candidates ("scheduled", total "assigned"):
 *   assigned == replicas   keep scheduled as is (clusters joining get nothing)
 *   assigned <  replicas   scale up: only the difference is divided, by available
 *                          replicas, and added to scheduled (a cluster that left frees
 *                          its replicas into this difference)
 *   assigned >  replicas   scale down: replicas are divided anew with the previous
 *                          assignment as weights (proportional shrink)
 *   rescheduleTriggeredAt after status.lastScheduledTime ("Fresh"): divide everything
 *                          anew, weights = available + already assigned.
 * Unschedulable when the available replicas do not cover what must be divided.
 *
 * Overflow affinities (clusterAffinities[].overflowAffinities): clusters are divided tier
 * by tier (primary group first), each tier taking min(remaining, its available
 * replicas), until all replicas are placed; Unschedulable otherwise.
 *
 * Sorting by available replicas keeps the candidates' order for ties (a stable sort);
 * upstream's sort is not stable beyond 12 clusters, where it may pick a different one of
 * two equal clusters for Aggregated. */
#include "sched/sched_priv.h"

#include "core/err.h"
#include "core/mem.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ parsing -- */

static int enum_str(const json_t *o, const char *k, const char *path, const char *const *allowed, const char **out,
                    char **err)
{
    json_t *v = json_object_get(o, k);
    *out = "";
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        *err = fl_asprintf("%s.%s: must be a string", path, k);
        return FL_EINVAL;
    }
    const char *s = json_string_value(v);
    if (!*s) {
        *out = s;
        return 0;
    }
    for (size_t i = 0; allowed[i]; i++)
        if (!strcmp(s, allowed[i])) {
            *out = allowed[i];
            return 0;
        }
    *err = fl_asprintf("%s.%s: Unsupported value: \"%s\": supported values: \"%s\", \"%s\"", path, k, s, allowed[0],
                       allowed[1]);
    return FL_EINVAL;
}

int fl_sched_strategy_parse(const fl_sched_snapshot *snap, const json_t *rs, struct fl_sched_binding *b, char **err)
{
    static const char *const types[] = {"Duplicated", "Divided", NULL};
    static const char *const prefs[] = {"Aggregated", "Weighted", NULL};
    static const char *const dyn[] = {"AvailableReplicas", "AvailableReplicas", NULL};
    const char *path = "spec.placement.replicaScheduling";
    b->has_strategy = false;
    b->strategy = FL_STRAT_DUPLICATED;
    if (!rs || json_is_null(rs))
        return 0;
    if (!json_is_object(rs)) {
        *err = fl_asprintf("%s: must be an object", path);
        return FL_EINVAL;
    }
    b->has_strategy = true;
    const char *type, *pref, *dw = "";
    int rc = enum_str(rs, "replicaSchedulingType", path, types, &type, err);
    if (!rc)
        rc = enum_str(rs, "replicaDivisionPreference", path, prefs, &pref, err);
    if (rc)
        return rc;
    json_t *wp = json_object_get(rs, "weightPreference");
    if (wp && !json_is_null(wp)) {
        const char *wpath = "spec.placement.replicaScheduling.weightPreference";
        if (!json_is_object(wp)) {
            *err = fl_asprintf("%s: must be an object", wpath);
            return FL_EINVAL;
        }
        b->has_weight_pref = true;
        if ((rc = enum_str(wp, "dynamicWeight", wpath, dyn, &dw, err)))
            return rc;
        json_t *list = json_object_get(wp, "staticWeightList");
        if (list && !json_is_null(list) && !json_is_array(list)) {
            *err = fl_asprintf("%s.staticWeightList: must be an array", wpath);
            return FL_EINVAL;
        }
        size_t n = json_array_size(list);
        b->rules = fl_calloc(n + 1, sizeof *b->rules);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(list, i);
            json_t *w = json_object_get(e, "weight");
            json_t *tc = json_object_get(e, "targetCluster");
            if (!json_is_object(e) || !json_is_integer(w) || json_integer_value(w) < 1) {
                *err = fl_asprintf("%s.staticWeightList[%zu].weight: must be an integer greater than or equal to 1",
                                   wpath, i);
                return FL_EINVAL;
            }
            if (!json_is_object(tc)) {
                *err = fl_asprintf("%s.staticWeightList[%zu].targetCluster: Required value: must be an object", wpath,
                                   i);
                return FL_EINVAL;
            }
            char tpath[128];
            snprintf(tpath, sizeof tpath, "%s.staticWeightList[%zu].targetCluster", wpath, i);
            if ((rc = fl_sched_affinity_bits(snap, tc, tpath, &b->owned, &b->rules[i].target, err)))
                return rc;
            b->rules[i].weight = json_integer_value(w);
            b->nrules = i + 1;
        }
    }
    if (!strcmp(type, "Duplicated"))
        b->strategy = FL_STRAT_DUPLICATED;
    else if (!strcmp(pref, "Aggregated"))
        b->strategy = FL_STRAT_AGGREGATED;
    else if (*dw)
        b->strategy = FL_STRAT_DYNAMIC_WEIGHT;
    else
        b->strategy = FL_STRAT_STATIC_WEIGHT;
    return 0;
}

/* ------------------------------------------------------------------ Webster -- */

struct party {
    int64_t votes, seats;
    double pr;                /* votes / (2 * seats + 1), kept current */
    uint32_t idx;
};

static inline double prio(int64_t votes, int64_t seats)
{
    return (double)votes / (double)(2 * seats + 1);
}

/* Does a get the next seat before b? (Karmada's WebsterPriorityQueue.Less with the uid
 * tie-breaker.) A total order: names are unique. */
static inline bool before(const struct party *a, const struct party *b, bool desc)
{
    if (a->pr != b->pr)
        return a->pr > b->pr;
    if (a->seats != b->seats)
        return a->seats < b->seats;
    return desc ? a->idx > b->idx : a->idx < b->idx;
}

static void sift_down(struct party *p, size_t *h, size_t n, size_t i, bool desc)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(&p[h[l]], &p[h[m]], desc))
            m = l;
        if (r < n && before(&p[h[r]], &p[h[m]], desc))
            m = r;
        if (m == i)
            return;
        size_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void fl_sched_webster(const int64_t *votes, const uint32_t *idx, size_t n, int64_t seats, bool name_desc,
                      int64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    double total = 0;
    for (size_t i = 0; i < n; i++)
        if (votes[i] > 0)
            total += (double)votes[i];
    /* upstream's dispenser hands out nothing when the weights sum to 0 */
    if (n == 0 || seats <= 0 || total <= 0)
        return;
    struct party *p = fl_malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (struct party){votes[i], 0, 0, idx[i]};

    /* Jump start: count, per party, the seats whose priority exceeds t. Those seats are
     * a prefix of the order the loop below hands seats out in (priority decides first),
     * and t is chosen so that they sum to at most seats - n/2. */
    if (seats > 2 * (int64_t)n) {
        double t = total / (2.0 * (double)(seats - (int64_t)n));
        int64_t sum = 0;
        int64_t *c = fl_malloc(n * sizeof *c);
        for (size_t i = 0; i < n; i++) {
            int64_t v = p[i].votes, k = 0;
            if (v > 0) {
                double q = (double)v / t;
                k = q > 1.0 ? (int64_t)((q - 1.0) / 2.0) : 0;
                while (k > 0 && !(prio(v, k - 1) > t))
                    k--;
                while (prio(v, k) > t)
                    k++;
            }
            c[i] = k;
            sum += k;
        }
        if (sum <= seats) {
            for (size_t i = 0; i < n; i++)
                p[i].seats = c[i];
            seats -= sum;
        }
        free(c);
    }
    for (size_t i = 0; i < n; i++)
        p[i].pr = prio(p[i].votes, p[i].seats);

    size_t *h = fl_malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = i;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(p, h, n, i, name_desc);
    for (; seats > 0; seats--) {
        struct party *top = &p[h[0]];
        top->seats++;
        top->pr = prio(top->votes, top->seats);
        sift_down(p, h, n, 0, name_desc);
    }
    for (size_t i = 0; i < n; i++)
        out[i] = p[i].seats;
    free(h);
    free(p);
}

/* -------------------------------------------------------------- strategies -- */

/* A target cluster in a list whose order matters: sel position and replicas. */
struct tc {
    size_t pos;
    int64_t rep;
    size_t order;             /* position in the list before sorting: ties keep it */
};

static int cmp_tc_desc(const void *a, const void *b)
{
    const struct tc *x = a, *y = b;
    if (x->rep != y->rep)
        return x->rep > y->rep ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Upstream sorts the weight list by replicas, descending, before dividing. Only the
 * Aggregated prefix depends on that order (Webster does not), so other strategies skip it. */
static void sort_desc(const struct fl_sched_binding *b, struct tc *l, size_t n)
{
    if (b->strategy != FL_STRAT_AGGREGATED)
        return;
    for (size_t i = 0; i < n; i++)
        l[i].order = i;
    qsort(l, n, sizeof *l, cmp_tc_desc);
}

static void assign_static(const struct fl_sched_binding *b, const fl_sched_snapshot *snap,
                          const struct fl_sched_cand *sel, size_t nsel, int64_t replicas, int64_t *out)
{
    int64_t *votes = fl_calloc(nsel + 1, sizeof *votes);
    uint32_t *idx = fl_malloc((nsel + 1) * sizeof *idx);
    bool any = false;
    for (size_t i = 0; i < nsel; i++) {
        idx[i] = sel[i].idx;
        if (!b->has_weight_pref) {
            votes[i] = 1; /* upstream's default: every candidate by name, weight 1 */
            any = true;
            continue;
        }
        for (size_t r = 0; r < b->nrules; r++)
            if (b->rules[r].weight > votes[i] && fl_sched_bit(b->rules[r].target, sel[i].idx))
                votes[i] = b->rules[r].weight;
        any |= votes[i] > 0;
    }
    if (!any)
        for (size_t i = 0; i < nsel; i++)
            votes[i] = 1;
    /* clusters with weight 0 are not parties; with 0 votes they would get no seat anyway */
    fl_sched_webster(votes, idx, nsel, replicas, b->name_desc, out);
    free(votes);
    free(idx);
}

/* Divide target replicas over list av (weights = rep) as dynamicDivideReplicas; adds the
 * seats to out[pos]. Returns 0, or FL_SCHED_UNSCHEDULABLE with *msg. */
static int divide_dynamic(const struct fl_sched_binding *b, const struct fl_sched_cand *sel, struct tc *av,
                          size_t nav, const uint8_t *prior, int64_t target, int64_t *out, char **msg)
{
    int64_t total = 0;
    for (size_t i = 0; i < nav; i++)
        total += av[i].rep;
    if (total < target) {
        *msg = fl_asprintf("Clusters available replicas %lld are not enough to schedule.", (long long)total);
        return FL_SCHED_UNSCHEDULABLE;
    }
    if (b->strategy == FL_STRAT_AGGREGATED) {
        /* clusters already holding replicas first, each part keeping its order */
        if (prior) {
            struct tc *tmp = fl_malloc((nav + 1) * sizeof *tmp);
            size_t k = 0;
            for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < nav; i++)
                    if ((prior[av[i].pos] != 0) == (pass == 0))
                        tmp[k++] = av[i];
            memcpy(av, tmp, nav * sizeof *av);
            free(tmp);
        }
        int64_t sum = 0;
        for (size_t i = 0; i < nav; i++)
            if ((sum += av[i].rep) >= target) {
                nav = i + 1;
                break;
            }
    }
    int64_t *votes = fl_malloc((nav + 1) * sizeof *votes), *seats = fl_malloc((nav + 1) * sizeof *seats);
    uint32_t *idx = fl_malloc((nav + 1) * sizeof *idx);
    for (size_t i = 0; i < nav; i++) {
        votes[i] = av[i].rep;
        idx[i] = sel[av[i].pos].idx;
    }
    fl_sched_webster(votes, idx, nav, target, b->name_desc, seats);
    for (size_t i = 0; i < nav; i++)
        out[av[i].pos] += seats[i];
    free(votes);
    free(seats);
    free(idx);
    return FL_SCHED_SUCCESS;
}

static int assign_dynamic(const struct fl_sched_binding *b, const fl_sched_snapshot *snap,
                          const struct fl_sched_cand *sel, size_t nsel, int64_t replicas, int64_t *out, char **msg)
{
    /* scheduled: the previous spec.clusters (their order) that are still candidates */
    int32_t *posmap = fl_malloc((snap->n + 1) * sizeof *posmap);
    for (size_t i = 0; i < snap->n; i++)
        posmap[i] = -1;
    for (size_t i = 0; i < nsel; i++)
        posmap[sel[i].idx] = (int32_t)i;
    struct tc *sched = fl_malloc((b->nprev + 1) * sizeof *sched);
    uint8_t *prior = fl_calloc(nsel + 1, 1);
    size_t nsched = 0;
    int64_t assigned = 0;
    for (size_t k = 0; k < b->nprev; k++) {
        uint32_t idx = b->prev_order[k];
        if (posmap[idx] < 0)
            continue;
        sched[nsched] = (struct tc){(size_t)posmap[idx], b->prev[idx], 0};
        assigned += b->prev[idx];
        prior[posmap[idx]] = b->prev[idx] > 0;
        nsched++;
    }
    free(posmap);

    struct tc *av = fl_malloc((nsel + 1) * sizeof *av);
    size_t nav = 0;
    int rc = FL_SCHED_SUCCESS;
    const char *what = NULL;
    for (size_t i = 0; i < nsel; i++)
        out[i] = 0;
    if (b->fresh) {
        /* everything anew; a cluster's weight counts what it already runs */
        what = "failed to do fresh scale: ";
        for (size_t i = 0; i < nsel; i++)
            av[nav++] = (struct tc){i, sel[i].alloc, 0};
        for (size_t k = 0; k < nsched; k++)
            av[sched[k].pos].rep += sched[k].rep;
        sort_desc(b, av, nav);
        rc = divide_dynamic(b, sel, av, nav, NULL, replicas, out, msg);
    } else if (assigned > replicas) {
        /* shrink in proportion to what each cluster runs now */
        what = "failed to scale down: ";
        memcpy(av, sched, nsched * sizeof *av);
        nav = nsched;
        sort_desc(b, av, nav);
        rc = divide_dynamic(b, sel, av, nav, NULL, replicas, out, msg);
    } else if (assigned < replicas) {
        /* place only the new replicas, by available capacity, on top of what runs */
        what = "failed to scale up: ";
        for (size_t i = 0; i < nsel; i++)
            av[nav++] = (struct tc){i, sel[i].alloc, 0};
        sort_desc(b, av, nav);
        rc = divide_dynamic(b, sel, av, nav, prior, replicas - assigned, out, msg);
        for (size_t k = 0; k < nsched; k++)
            out[sched[k].pos] += sched[k].rep;
    } else {
        for (size_t k = 0; k < nsched; k++)
            out[sched[k].pos] += sched[k].rep;
    }
    if (rc != FL_SCHED_SUCCESS) {
        char *m = fl_asprintf("%s%s", what, *msg);
        free(*msg);
        *msg = m;
    }
    free(av);
    free(prior);
    free(sched);
    return rc;
}

/* assignReplicasToClusters: out[i] for sel[i]. */
static int assign_to(const struct fl_sched_binding *b, const fl_sched_snapshot *snap, const struct fl_sched_cand *sel,
                     size_t nsel, int64_t replicas, int64_t *out, char **msg)
{
    switch (b->strategy) {
    case FL_STRAT_DUPLICATED:
        for (size_t i = 0; i < nsel; i++)
            out[i] = replicas;
        return FL_SCHED_SUCCESS;
    case FL_STRAT_STATIC_WEIGHT:
        assign_static(b, snap, sel, nsel, replicas, out);
        return FL_SCHED_SUCCESS;
    default:
        return assign_dynamic(b, snap, sel, nsel, replicas, out, msg);
    }
}

int fl_sched_assign(const struct fl_sched_binding *b, const struct fl_sched_term *term,
                    const fl_sched_snapshot *snap, const struct fl_sched_cand *sel, size_t nsel, int32_t *rep,
                    char **msg)
{
    *msg = NULL;
    if (nsel == 0) {
        *msg = fl_strdup("no clusters available to schedule");
        return FL_SCHED_ERROR;
    }
    if (!((b->replicas > 0 || b->has_requirements) && b->ncomponents <= 1)) {
        /* not a workload (or several pod templates): the clusters, no replicas */
        for (size_t i = 0; i < nsel; i++)
            rep[sel[i].idx] = 0;
        return FL_SCHED_SUCCESS;
    }
    int64_t *out = fl_calloc(nsel + 1, sizeof *out);
    int rc = FL_SCHED_SUCCESS;
    if (term && term->has_overflow) {
        /* tier by tier, primary group first */
        int32_t maxo = 0;
        for (size_t i = 0; i < nsel; i++)
            if (sel[i].overflow > maxo)
                maxo = sel[i].overflow;
        struct fl_sched_cand *tier = fl_malloc((nsel + 1) * sizeof *tier);
        size_t *where = fl_malloc((nsel + 1) * sizeof *where);
        int64_t *tout = fl_malloc((nsel + 1) * sizeof *tout);
        int64_t remaining = b->replicas;
        for (int32_t o = 0; o <= maxo && remaining > 0 && rc == FL_SCHED_SUCCESS; o++) {
            size_t nt = 0;
            int64_t cap = 0;
            for (size_t i = 0; i < nsel; i++)
                if (sel[i].overflow == o) {
                    where[nt] = i;
                    tier[nt++] = sel[i];
                    cap += sel[i].avail;
                }
            if (nt == 0)
                continue;
            int64_t want = remaining < cap ? remaining : cap;
            rc = assign_to(b, snap, tier, nt, want, tout, msg);
            for (size_t i = 0; i < nt && rc == FL_SCHED_SUCCESS; i++)
                out[where[i]] += tout[i];
            remaining -= want;
        }
        if (rc == FL_SCHED_SUCCESS && remaining > 0) {
            *msg = fl_strdup("Clusters available replicas are not enough to schedule.");
            rc = FL_SCHED_UNSCHEDULABLE;
        }
        free(tier);
        free(where);
        free(tout);
    } else {
        rc = assign_to(b, snap, sel, nsel, b->replicas, out, msg);
    }
    if (rc == FL_SCHED_SUCCESS)
        for (size_t i = 0; i < nsel; i++)
            if (out[i] > 0) /* upstream drops clusters that get no replica */
                rep[sel[i].idx] = out[i] > INT32_MAX ? INT32_MAX : (int32_t)out[i];
    free(out);
    return rc;
}
