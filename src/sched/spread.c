/* spread.c - placement.spreadConstraints: the SpreadConstraint filter and the choice of
 * clusters among the feasible ones (Karmada's core/spreadconstraint).
 *
 * Filter: with a region, zone or provider constraint, clusters lacking that property are
 * not candidates (zones: spec.zones, with the deprecated spec.zone folded in when the
 * snapshot was built). With a spreadByLabel constraint (ours, see below) clusters
 * lacking the label are not candidates either.
 *
 * Selection, as SelectBestClusters:
 *  - No constraints, or Divided with static weights (weightPreference absent, or a
 *    staticWeightList without dynamicWeight): every feasible cluster.
 *  - A group-level constraint: choose groups, then clusters in them (below).
 *  - Only a cluster constraint: fewer feasible clusters than minGroups fails; otherwise
 *    the best min(feasible, maxGroups) clusters. For Divided, when their available
 *    replicas do not add up to spec.replicas, the last chosen ones are swapped, from the
 *    end, for the unchosen cluster with the most available replicas (if more than the
 *    one it replaces) until they do, or fail. Duplicated ignores available replicas here.
 *
 * Groups, as Karmada's region selection: each group gets a score. Duplicated: 1000 per
 * member whose available replicas cover spec.replicas, plus those members' mean cluster
 * score. Divided: target = ceil(replicas / group minGroups); walk the members best first
 * until max(cluster minGroups, group minGroups) of them hold target; 1000*min(sum,
 * target) plus the mean score. A depth-first search then lists every combination of
 * groups (groups ordered by member count asc, score desc, name) that has between
 * minGroups and maxGroups groups and at least cluster-minGroups members; the one with the
 * highest total score wins (then more members, then the first found), except that a
 * winner's prefix that is itself feasible is preferred. From each chosen group its best
 * cluster is taken; the rest of the chosen groups' clusters fill up to the cluster
 * constraint's maxGroups, best first.
 *
 * Where we go beyond upstream, and say so in docs/internals/scheduler.md: upstream
 * selects by region or else by cluster; zone and provider constraints only filter, and a
 * spreadByLabel constraint alone fails. We treat zone, provider and spreadByLabel as
 * group levels with the region algorithm (precedence region > zone > provider > label;
 * only one level is used, as upstream uses only region). A cluster in several zones is
 * a member of each; it is chosen at most once. The group search stops after
 * FL_SPREAD_DFS_BUDGET steps and decides among the combinations found by then (upstream
 * has no bound; it only matters with dozens of groups and a large minGroups).
 *
 * Karmada quirks kept on purpose, because existing policies behave so upstream: an unset
 * (0) maxGroups selects no clusters/groups and scheduling fails; the failures here are
 * SchedulerError, not Unschedulable. */
#include "sched/sched_priv.h"

#include "core/err.h"
#include "core/mem.h"

#include <stdlib.h>
#include <string.h>

#define FL_SPREAD_DFS_BUDGET 200000

static const char *const field_names[] = {"cluster", "region", "zone", "provider", ""};

int fl_sched_spreads_parse(const json_t *scs, struct fl_sched_spread **out, size_t *n, char **err)
{
    *out = NULL;
    *n = 0;
    if (!scs || json_is_null(scs))
        return 0;
    if (!json_is_array(scs)) {
        *err = fl_strdup("spec.placement.spreadConstraints: must be an array");
        return FL_EINVAL;
    }
    size_t cnt = json_array_size(scs);
    struct fl_sched_spread *s = fl_calloc(cnt + 1, sizeof *s);
    bool seen[4] = {false};
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_array_get(scs, i);
        if (!json_is_object(e)) {
            *err = fl_asprintf("spec.placement.spreadConstraints[%zu]: must be an object", i);
            goto bad;
        }
        json_t *f = json_object_get(e, "spreadByField");
        json_t *l = json_object_get(e, "spreadByLabel");
        if ((f && !json_is_null(f) && !json_is_string(f)) || (l && !json_is_null(l) && !json_is_string(l))) {
            *err = fl_asprintf("spec.placement.spreadConstraints[%zu]: spreadByField and spreadByLabel must be strings",
                               i);
            goto bad;
        }
        const char *field = json_is_string(f) ? json_string_value(f) : "";
        const char *label = json_is_string(l) ? json_string_value(l) : "";
        if (*field && *label) {
            *err = fl_asprintf("spec.placement.spreadConstraints[%zu]: spreadByLabel should not co-exist with "
                               "spreadByField", i);
            goto bad;
        }
        if (*label) {
            s[i].field = FL_SPREAD_LABEL;
            s[i].label = label;
        } else if (!*field) {
            s[i].field = FL_SPREAD_CLUSTER; /* Karmada's admission default */
        } else {
            int k = 0;
            while (k < 4 && strcmp(field, field_names[k]))
                k++;
            if (k == 4) {
                *err = fl_asprintf("spec.placement.spreadConstraints[%zu].spreadByField: Unsupported value: \"%s\": "
                                   "supported values: \"cluster\", \"region\", \"zone\", \"provider\"", i, field);
                goto bad;
            }
            s[i].field = k;
        }
        static const char *const gk[] = {"minGroups", "maxGroups"};
        int64_t g[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            json_t *v = json_object_get(e, gk[k]);
            if (v && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0)) {
                *err = fl_asprintf("spec.placement.spreadConstraints[%zu].%s: must be a non-negative integer", i,
                                   gk[k]);
                goto bad;
            }
            g[k] = v ? json_integer_value(v) : 0;
        }
        s[i].min = g[0] ? g[0] : 1; /* Karmada's admission default */
        s[i].max = g[1];
        if (s[i].max > 0 && s[i].max < s[i].min) {
            *err = fl_asprintf("spec.placement.spreadConstraints[%zu]: maxGroups lower than minGroups is not allowed",
                               i);
            goto bad;
        }
        if (s[i].field != FL_SPREAD_LABEL) {
            if (seen[s[i].field]) {
                *err = fl_asprintf("spec.placement.spreadConstraints[%zu]: multiple %s spread constraints are not "
                                   "allowed", i, field_names[s[i].field]);
                goto bad;
            }
            seen[s[i].field] = true;
        }
    }
    *out = s;
    *n = cnt;
    return 0;
bad:
    free(s);
    return FL_EINVAL;
}

static const char *label_of(const struct fl_sched_cluster *c, const char *key)
{
    json_t *v = c->labels ? json_object_get(c->labels, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *fl_sched_filter_spread(const struct fl_sched_binding *b, const struct fl_sched_cluster *c)
{
    for (size_t i = 0; i < b->nspreads; i++) {
        const struct fl_sched_spread *s = &b->spreads[i];
        if (s->field == FL_SPREAD_PROVIDER && !c->provider)
            return "cluster(s) did not have provider property";
        if (s->field == FL_SPREAD_REGION && !c->region)
            return "cluster(s) did not have region property";
        if (s->field == FL_SPREAD_ZONE && c->nzones == 0)
            return "cluster(s) did not have zones property";
        if (s->field == FL_SPREAD_LABEL && !label_of(c, s->label))
            return "cluster(s) did not have the spreadByLabel label";
    }
    return NULL;
}

/* ------------------------------------------------------------------ groups -- */

static bool duplicated(const struct fl_sched_binding *b)
{
    return !b->has_strategy || b->strategy == FL_STRAT_DUPLICATED;
}

struct member {
    const char *key;          /* group name */
    size_t pos;               /* position in the sorted candidates */
};

struct group {
    const char *name;
    size_t first, count;      /* slice of the sorted member array */
    int64_t score;
};

static int cmp_member(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Karmada's calcGroupScore / calcGroupScoreForDuplicate over one group's members
 * (positions into cands, best first). */
static int64_t group_score(const struct fl_sched_binding *b, const struct fl_sched_cand *cands,
                           const struct member *m, size_t count, int64_t group_min, int64_t cluster_min)
{
    const int64_t unit = 1000;
    if (duplicated(b)) {
        int64_t valid = 0, sum = 0;
        for (size_t i = 0; i < count; i++) {
            const struct fl_sched_cand *c = &cands[m[i].pos];
            if (c->avail >= b->replicas) {
                valid++;
                sum += c->score;
            }
        }
        return valid ? valid * unit + sum / valid : 0;
    }
    int64_t target = ((int64_t)b->replicas + group_min - 1) / group_min;
    if (cluster_min < group_min)
        cluster_min = group_min;
    int64_t avail = 0, sum = 0, valid = 0;
    for (size_t i = 0; i < count; i++) {
        const struct fl_sched_cand *c = &cands[m[i].pos];
        avail += c->avail;
        sum += c->score;
        valid++;
        if (valid >= cluster_min && avail >= target)
            break;
    }
    if (avail < target)
        return avail * unit + sum / (int64_t)count;
    return target * unit + sum / valid;
}

/* ---------------------------------------------------- combination search -- */

struct path {
    size_t off, len;          /* group indexes in dfs.pool, sorted by score desc, name */
    int64_t weight, value;
    size_t id;
};

struct dfs {
    struct group *g;
    size_t ng;
    int64_t min, max, target;
    size_t *stack, depth;
    struct path *paths;
    size_t np, capp;
    size_t *pool;
    size_t npool, cappool;
    size_t steps;
    bool stop;
};

static int cmp_path_group_r(const void *a, const void *b, void *ctx)
{
    const struct group *g = ctx;
    const struct group *x = &g[*(const size_t *)a], *y = &g[*(const size_t *)b];
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void record(struct dfs *d)
{
    if (d->np == d->capp) {
        d->capp = d->capp ? d->capp * 2 : 16;
        d->paths = fl_realloc(d->paths, d->capp * sizeof *d->paths);
    }
    if (d->npool + d->depth > d->cappool) {
        d->cappool = (d->cappool + d->depth) * 2;
        d->pool = fl_realloc(d->pool, d->cappool * sizeof *d->pool);
    }
    struct path *p = &d->paths[d->np];
    p->off = d->npool;
    p->len = d->depth;
    p->weight = p->value = 0;
    p->id = ++d->np;
    size_t *gs = d->pool + d->npool;
    memcpy(gs, d->stack, d->depth * sizeof *gs);
    d->npool += d->depth;
    for (size_t i = 0; i < p->len; i++) {
        p->weight += d->g[gs[i]].score;
        p->value += (int64_t)d->g[gs[i]].count;
    }
    qsort_r(gs, p->len, sizeof *gs, cmp_path_group_r, d->g);
}

/* Karmada's findFeasiblePaths, step for step, with a step budget. */
static void dfs(struct dfs *d, int64_t sum, size_t begin)
{
    if (d->stop)
        return;
    if (++d->steps > FL_SPREAD_DFS_BUDGET) {
        d->stop = true;
        return;
    }
    if (sum >= d->target && (int64_t)d->depth >= d->min && (int64_t)d->depth <= d->max) {
        record(d);
        return;
    }
    if ((int64_t)d->depth >= d->max)
        return;
    for (size_t i = begin; i < d->ng; i++) {
        sum += (int64_t)d->g[i].count;
        d->stack[d->depth++] = i;
        dfs(d, sum, i + 1);
        /* every group is needed to reach minGroups: the first descent is the only one */
        if ((int64_t)d->ng == d->min)
            break;
        sum -= (int64_t)d->g[i].count;
        d->depth--;
        if (d->stop)
            return;
    }
}

static int cmp_group_dfs(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_path(const void *a, const void *b)
{
    const struct path *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    if (x->value != y->value)
        return x->value > y->value ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Is sub a strict prefix of path (group by group)? */
static bool match_sub(const struct dfs *d, const struct path *path, const struct path *sub)
{
    if (sub->len >= path->len)
        return false;
    for (size_t i = 0; i < sub->len; i++)
        if (strcmp(d->g[d->pool[path->off + i]].name, d->g[d->pool[sub->off + i]].name))
            return false;
    return true;
}

/* selectGroups: chosen group indexes (into g, after g was re-sorted) in *out; count. */
static size_t select_groups(struct group *g, size_t ng, int64_t min, int64_t max, int64_t target, size_t **out)
{
    *out = NULL;
    if (ng == 0)
        return 0;
    qsort(g, ng, sizeof *g, cmp_group_dfs);
    struct dfs d = {.g = g, .ng = ng, .min = min, .max = max, .target = target};
    d.stack = fl_calloc(ng + 1, sizeof *d.stack);
    dfs(&d, 0, 0);
    size_t n = 0;
    if (d.np > 0) {
        qsort(d.paths, d.np, sizeof *d.paths, cmp_path);
        const struct path *best = &d.paths[0];
        for (size_t i = 1; i < d.np; i++)
            if (match_sub(&d, best, &d.paths[i]))
                best = &d.paths[i];
        n = best->len;
        *out = fl_malloc((n + 1) * sizeof **out);
        memcpy(*out, d.pool + best->off, n * sizeof **out);
    }
    free(d.stack);
    free(d.paths);
    free(d.pool);
    return n;
}

/* The topology ids of a candidate for one level: 0, 1 or (zones) several. */
static size_t topo_ids(const struct fl_sched_cluster *c, int field, const int32_t **ids)
{
    switch (field) {
    case FL_SPREAD_REGION:
        *ids = &c->region_id;
        return c->region_id >= 0;
    case FL_SPREAD_PROVIDER:
        *ids = &c->provider_id;
        return c->provider_id >= 0;
    default:
        *ids = c->zone_ids;
        return c->nzones;
    }
}

static int by_group(const struct fl_sched_binding *b, const fl_sched_snapshot *snap, const struct fl_sched_spread *lvl,
                    const struct fl_sched_spread *cl, const struct fl_sched_cand *cands, size_t ncands,
                    struct fl_sched_cand *sel, size_t *nsel, char **msg)
{
    int rc = FL_SCHED_SUCCESS;
    size_t nm = 0, capm = ncands + 1;
    struct member *m = fl_malloc(capm * sizeof *m);
    struct group *g = NULL;
    size_t ng = 0;
    if (lvl->field == FL_SPREAD_LABEL) {
        /* label values are not interned: group by sorting the (value, position) pairs */
        for (size_t i = 0; i < ncands; i++) {
            const char *v = label_of(&snap->clusters[cands[i].idx], lvl->label);
            if (v) /* the SpreadConstraint filter let only labelled clusters through */
                m[nm++] = (struct member){v, i};
        }
        qsort(m, nm, sizeof *m, cmp_member);
        g = fl_calloc(nm + 1, sizeof *g);
        for (size_t i = 0; i < nm; i++) {
            if (ng == 0 || strcmp(g[ng - 1].name, m[i].key)) {
                g[ng].name = m[i].key;
                g[ng].first = i;
                ng++;
            }
            g[ng - 1].count++;
        }
    } else {
        /* topology names are interned: a counting sort by id, members in candidate order */
        size_t nt = snap->topo.n;
        size_t *start = fl_calloc(nt + 2, sizeof *start);
        for (size_t i = 0; i < ncands; i++) {
            const int32_t *ids;
            size_t k = topo_ids(&snap->clusters[cands[i].idx], lvl->field, &ids);
            for (size_t j = 0; j < k; j++)
                start[ids[j] + 1]++;
        }
        for (size_t t = 0; t < nt; t++)
            start[t + 1] += start[t];
        nm = start[nt];
        if (nm > capm)
            m = fl_realloc(m, (nm + 1) * sizeof *m);
        g = fl_calloc(nt + 1, sizeof *g);
        for (size_t t = 0; t < nt; t++)
            if (start[t + 1] > start[t])
                g[ng++] = (struct group){snap->topo.keys[t], start[t], start[t + 1] - start[t], 0};
        for (size_t i = 0; i < ncands; i++) {
            const int32_t *ids;
            size_t k = topo_ids(&snap->clusters[cands[i].idx], lvl->field, &ids);
            for (size_t j = 0; j < k; j++)
                m[start[ids[j]]++] = (struct member){snap->topo.keys[ids[j]], i};
        }
        free(start);
    }
    int64_t cmin = cl ? cl->min : 0, cmax = cl ? cl->max : 0;
    for (size_t i = 0; i < ng; i++)
        g[i].score = group_score(b, cands, m + g[i].first, g[i].count, lvl->min, cmin);

    const char *what = lvl->field == FL_SPREAD_LABEL ? "label group" : field_names[lvl->field];
    size_t *chosen = NULL;
    uint8_t *mark = NULL;
    if ((int64_t)ng < lvl->min) {
        *msg = fl_asprintf("the number of feasible %s is less than spreadConstraint.MinGroups", what);
        rc = FL_SCHED_ERROR;
        goto done;
    }
    size_t nchosen = select_groups(g, ng, lvl->min, lvl->max, cmin, &chosen);
    if (nchosen == 0) {
        *msg = fl_strdup("the number of clusters is less than the cluster spreadConstraint.MinGroups");
        rc = FL_SCHED_ERROR;
        goto done;
    }
    /* best cluster of each chosen group first; the groups' other clusters are the pool */
    mark = fl_calloc(ncands + 1, 1); /* 1 = candidate, 2 = selected */
    size_t n = 0;
    for (size_t i = 0; i < nchosen; i++) {
        const struct group *gr = &g[chosen[i]];
        bool picked = false;
        for (size_t j = 0; j < gr->count; j++) {
            size_t pos = m[gr->first + j].pos;
            if (mark[pos] == 2)
                continue;
            if (!picked) {
                mark[pos] = 2;
                sel[n++] = cands[pos];
                picked = true;
            } else {
                mark[pos] = 1;
            }
        }
    }
    size_t npool = 0;
    for (size_t pos = 0; pos < ncands; pos++)
        npool += mark[pos] == 1;
    int64_t need = (int64_t)(npool + n) < cmax ? (int64_t)(npool + n) : cmax;
    /* the pool in candidate order is the pool sorted as Karmada re-sorts it */
    for (size_t pos = 0; pos < ncands && (int64_t)n < need; pos++)
        if (mark[pos] == 1)
            sel[n++] = cands[pos];
    *nsel = n;
done:
    free(mark);
    free(chosen);
    free(g);
    free(m);
    return rc;
}

static int64_t sum_avail(const struct fl_sched_cand *c, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += c[i].avail;
    return t;
}

static int by_cluster(const struct fl_sched_spread *cl, int64_t need_replicas, const struct fl_sched_cand *cands,
                      size_t ncands, struct fl_sched_cand *sel, size_t *nsel, char **msg)
{
    if ((int64_t)ncands < cl->min) {
        *msg = fl_strdup("the number of feasible clusters is less than spreadConstraint.MinGroups");
        return FL_SCHED_ERROR;
    }
    size_t need = (int64_t)ncands < cl->max ? ncands : (size_t)cl->max;
    if (need_replicas < 0) {
        memcpy(sel, cands, need * sizeof *sel);
        *nsel = need;
        return FL_SCHED_SUCCESS;
    }
    /* selectClustersByAvailableResource on a working copy: [0, need) chosen, rest after */
    struct fl_sched_cand *w = fl_malloc((ncands + 1) * sizeof *w);
    memcpy(w, cands, ncands * sizeof *w);
    struct fl_sched_cand *rest = w + need;
    size_t nrest = ncands - need;
    for (ptrdiff_t id = (ptrdiff_t)need - 1; id >= 0 && sum_avail(w, need) < need_replicas; id--) {
        ptrdiff_t best = -1;
        int64_t max = w[id].avail;
        for (size_t j = 0; j < nrest; j++)
            if (rest[j].avail > max) {
                max = rest[j].avail;
                best = (ptrdiff_t)j;
            }
        if (best < 0)
            continue;
        struct fl_sched_cand t = w[id];
        w[id] = rest[best];
        rest[best] = t;
    }
    int rc = FL_SCHED_SUCCESS;
    if (sum_avail(w, need) < need_replicas) {
        *msg = fl_asprintf("no enough resource when selecting %zu clusters", need);
        rc = FL_SCHED_ERROR;
    } else {
        memcpy(sel, w, need * sizeof *sel);
        *nsel = need;
    }
    free(w);
    return rc;
}

bool fl_sched_spread_active(const struct fl_sched_binding *b)
{
    /* static weights override spread constraints (upstream's shouldIgnoreSpreadConstraint) */
    bool ignore = b->strategy == FL_STRAT_STATIC_WEIGHT && b->has_strategy && (!b->has_weight_pref || b->nrules > 0);
    return b->nspreads > 0 && !ignore;
}

int fl_sched_spread_select(const struct fl_sched_binding *b, const fl_sched_snapshot *snap,
                           const struct fl_sched_cand *cands, size_t ncands, struct fl_sched_cand *sel, size_t *nsel,
                           char **msg)
{
    *nsel = 0;
    *msg = NULL;
    if (!fl_sched_spread_active(b)) {
        memcpy(sel, cands, ncands * sizeof *sel);
        *nsel = ncands;
        return FL_SCHED_SUCCESS;
    }
    const struct fl_sched_spread *by[5] = {NULL};
    for (size_t i = 0; i < b->nspreads; i++)
        if (!by[b->spreads[i].field])
            by[b->spreads[i].field] = &b->spreads[i];
    const struct fl_sched_spread *lvl = by[FL_SPREAD_REGION]     ? by[FL_SPREAD_REGION]
                                        : by[FL_SPREAD_ZONE]     ? by[FL_SPREAD_ZONE]
                                        : by[FL_SPREAD_PROVIDER] ? by[FL_SPREAD_PROVIDER]
                                                                 : by[FL_SPREAD_LABEL];
    if (lvl)
        return by_group(b, snap, lvl, by[FL_SPREAD_CLUSTER], cands, ncands, sel, nsel, msg);
    /* a multi-component workload is one unit: one complete set must fit (upstream's
     * SelectClusters asks for 1) */
    return by_cluster(by[FL_SPREAD_CLUSTER], duplicated(b) ? -1 : b->multi_template ? 1 : b->replicas, cands, ncands,
                      sel, nsel, msg);
}
