/* sched.c - the scheduler core (contract in sched.h; the pipeline in sched_priv.h; the
 * semantics, step by step, in docs/internals/scheduler.md).
 *
 * A snapshot turns every Cluster into a flat struct once: sorted by name (so an index
 * orders like a name), strings in one arena, API enablements as a bitset over interned
 * "groupVersion/kind" keys, and the resource summary as exact per-resource availability
 * (allocatable - allocated - allocating, from 128-bit nano-unit quantities), so that a
 * decision reads no Cluster JSON. It is immutable after the build and reference counted
 * with atomics, which is all the thread-safety it needs.
 *
 * One decision (fl_sched_run) parses the binding into struct fl_sched_binding (compiling
 * every affinity once, resolving spec.clusters and eviction tasks to snapshot indexes),
 * then runs the pipeline once for placement.clusterAffinity, or once per
 * clusterAffinities term as Karmada does: start at the term recorded in
 * status.schedulerObservingAffinityName (the first after a requested reschedule), move on
 * to the next term whenever a term fails for any reason, report the term that succeeded;
 * when all fail, report the first failure and keep the recorded name.
 *
 * Per term: filters (ClusterAffinity, ClusterEviction, TaintToleration, APIEnablement,
 * SpreadConstraint, in that order: the first that rejects a cluster is the one reported;
 * Karmada runs its plugins in map order, so it has no fixed order to follow), then for
 * each feasible cluster the score (ClusterLocality: 100 when spec.clusters already has
 * it) and the general estimator's available replicas (complete component sets for a
 * multi-component workload placed in one cluster: components.c), then selection (spread.c) and
 * division (divide.c). Deleting clusters are skipped before the filters and, as
 * upstream, left out of the "0/N clusters are available" histogram while counted in N. */
#include "sched/sched_priv.h"

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/quantity.h"
#include "core/timefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ arena -- */


struct fl_sched_arena_blk {
    struct fl_sched_arena_blk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *fl_sched_arena_alloc(struct fl_sched_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct fl_sched_arena_blk *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = fl_malloc(sizeof *b + cap);
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *fl_sched_arena_strdup(struct fl_sched_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = fl_sched_arena_alloc(a, n);
    memcpy(p, s, n);
    return p;
}

void fl_sched_arena_free(struct fl_sched_arena *a)
{
    while (a->head) {
        struct fl_sched_arena_blk *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}

/* ----------------------------------------------------------------- intern -- */

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int fl_sched_intern_find(const struct fl_sched_intern *t, const char *key)
{
    if (!t->nslots)
        return -1;
    size_t mask = t->nslots - 1;
    for (size_t i = fnv1a(key) & mask;; i = (i + 1) & mask) {
        uint32_t s = t->slots[i];
        if (!s)
            return -1;
        if (!strcmp(t->keys[s - 1], key))
            return (int)(s - 1);
    }
}

static void intern_put(struct fl_sched_intern *t, uint32_t id)
{
    size_t mask = t->nslots - 1;
    size_t i = fnv1a(t->keys[id]) & mask;
    while (t->slots[i])
        i = (i + 1) & mask;
    t->slots[i] = id + 1;
}

int fl_sched_intern_add(struct fl_sched_intern *t, struct fl_sched_arena *a, const char *key)
{
    int id = fl_sched_intern_find(t, key);
    if (id >= 0)
        return id;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->keys = fl_realloc(t->keys, t->cap * sizeof *t->keys);
    }
    t->keys[t->n] = fl_sched_arena_strdup(a, key);
    t->n++;
    if (t->n * 2 > t->nslots) {
        free(t->slots);
        t->nslots = t->nslots ? t->nslots * 2 : 32;
        while (t->n * 2 > t->nslots)
            t->nslots *= 2;
        t->slots = fl_calloc(t->nslots, sizeof *t->slots);
        for (uint32_t i = 0; i < t->n; i++)
            intern_put(t, i);
    } else {
        intern_put(t, (uint32_t)(t->n - 1));
    }
    return (int)(t->n - 1);
}

void fl_sched_intern_free(struct fl_sched_intern *t)
{
    free(t->keys);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* --------------------------------------------------------------- snapshot -- */

/* Quantity.Value() and MilliValue(): rounded up (towards +inf), clamped to int64. */
static int64_t q_scaled(fl_quantity_nano nano, int64_t unit)
{
    fl_quantity_nano v = nano >= 0 ? (nano + unit - 1) / unit : -((-nano) / unit);
    if (v > INT64_MAX)
        return INT64_MAX;
    if (v < INT64_MIN)
        return INT64_MIN;
    return (int64_t)v;
}

/* A ResourceList value: a quantity string (or a bare integer). */
static bool q_parse(const json_t *v, fl_quantity *q)
{
    if (json_is_string(v))
        return fl_quantity_parse(json_string_value(v), q) == 0;
    if (json_is_integer(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return fl_quantity_parse(buf, q) == 0;
    }
    return false;
}

bool fl_sched_quantity_parse(const json_t *v, fl_quantity *q)
{
    return q_parse(v, q);
}

int64_t fl_sched_quantity_scaled(fl_quantity_nano nano, int64_t unit)
{
    return q_scaled(nano, unit);
}

/* What the build collects per Cluster before the snapshot-wide tables are complete. */
struct pre {
    int *apis;
    size_t napis;
    struct pre_res {
        int id;
        bool allocatable;
        fl_quantity_nano nano; /* allocatable - allocated - allocating */
    } *res;
    size_t nres, capres;
};

static struct pre_res *pre_res_get(struct pre *p, int id)
{
    for (size_t i = 0; i < p->nres; i++)
        if (p->res[i].id == id)
            return &p->res[i];
    if (p->nres == p->capres) {
        p->capres = p->capres ? p->capres * 2 : 8;
        p->res = fl_realloc(p->res, p->capres * sizeof *p->res);
    }
    p->res[p->nres] = (struct pre_res){id, false, 0};
    return &p->res[p->nres++];
}

/* obj.key as a string, NULL when absent, null or empty. False when of another type. */
static bool opt_str(const json_t *obj, const char *key, const char **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v))
        return false;
    *out = *json_string_value(v) ? json_string_value(v) : NULL;
    return true;
}

static const char *parse_summary(fl_sched_snapshot *snap, const json_t *rs, struct fl_sched_cluster *c, struct pre *p,
                                 char *buf, size_t cap)
{
    if (!rs || json_is_null(rs))
        return NULL;
    if (!json_is_object(rs))
        return "status.resourceSummary: must be an object";
    c->has_summary = true;
    static const char *const lists[] = {"allocatable", "allocated", "allocating"};
    int64_t pods = 0;
    for (int l = 0; l < 3; l++) {
        json_t *list = json_object_get(rs, lists[l]);
        if (!list || json_is_null(list))
            continue;
        if (!json_is_object(list)) {
            snprintf(buf, cap, "status.resourceSummary.%s: must be an object", lists[l]);
            return buf;
        }
        const char *name;
        json_t *v;
        json_object_foreach(list, name, v) {
            fl_quantity q;
            if (!q_parse(v, &q)) {
                snprintf(buf, cap, "status.resourceSummary.%s.%s: not a valid quantity", lists[l], name);
                return buf;
            }
            if (!strcmp(name, "pods")) {
                /* Karmada subtracts the three Value()s, each rounded on its own */
                int64_t pv = q_scaled(q.nano, 1000000000);
                pods = l == 0 ? pv : pods - pv;
            }
            struct pre_res *r = pre_res_get(p, fl_sched_intern_add(&snap->res, &snap->arena, name));
            if (l == 0) {
                r->allocatable = true;
                r->nano += q.nano;
            } else {
                r->nano -= q.nano;
            }
        }
    }
    c->allowed_pods = pods > 0 ? pods : 0;
    return NULL;
}

/* Fill c from one Cluster object; problems go to c->invalid (and stop the parse). */
static void parse_cluster(fl_sched_snapshot *snap, const json_t *obj, struct fl_sched_cluster *c, struct pre *p)
{
    char buf[256];
    const char *why;
    c->name = "";
    if (!json_is_object(obj)) {
        c->invalid = "the Cluster is not a JSON object";
        return;
    }
    json_t *md = json_object_get(obj, "metadata");
    json_t *name = json_object_get(md, "name");
    if (!json_is_string(name) || !*json_string_value(name)) {
        c->invalid = "metadata.name: Required value";
        return;
    }
    c->name = fl_sched_arena_strdup(&snap->arena, json_string_value(name));
    json_t *labels = json_object_get(md, "labels");
    if (labels && !json_is_null(labels)) {
        const char *k;
        json_t *v;
        bool ok = json_is_object(labels);
        if (ok) {
            json_object_foreach(labels, k, v) {
                ok = ok && json_is_string(v);
            }
        }
        if (!ok) {
            c->invalid = "metadata.labels: must be an object of strings";
            return;
        }
    } else {
        labels = NULL;
    }
    json_t *dts = json_object_get(md, "deletionTimestamp");
    c->deleting = dts && !json_is_null(dts);

    json_t *spec = json_object_get(obj, "spec");
    if (spec && !json_is_null(spec) && !json_is_object(spec)) {
        c->invalid = "spec: must be an object";
        return;
    }
    const char *zone = NULL;
    if (!opt_str(spec, "provider", &c->provider)) {
        c->invalid = "spec.provider: must be a string";
        return;
    }
    if (!opt_str(spec, "region", &c->region)) {
        c->invalid = "spec.region: must be a string";
        return;
    }
    if (!opt_str(spec, "zone", &zone)) {
        c->invalid = "spec.zone: must be a string";
        return;
    }
    /* topology names are interned: spread groups clusters by id */
    c->provider_id = c->region_id = -1;
    if (c->provider) {
        c->provider_id = fl_sched_intern_add(&snap->topo, &snap->arena, c->provider);
        c->provider = snap->topo.keys[c->provider_id];
    }
    if (c->region) {
        c->region_id = fl_sched_intern_add(&snap->topo, &snap->arena, c->region);
        c->region = snap->topo.keys[c->region_id];
    }
    json_t *zones = json_object_get(spec, "zones");
    if (zones && !json_is_null(zones) && !json_is_array(zones)) {
        c->invalid = "spec.zones: must be an array of strings";
        return;
    }
    size_t nz = json_array_size(zones);
    /* Karmada's admission moves a lone deprecated spec.zone into spec.zones */
    c->zones = fl_sched_arena_alloc(&snap->arena, (nz + 1) * sizeof *c->zones);
    c->zone_ids = fl_sched_arena_alloc(&snap->arena, (nz + 1) * sizeof *c->zone_ids);
    for (size_t i = 0; i < nz; i++) {
        json_t *z = json_array_get(zones, i);
        if (!json_is_string(z)) {
            c->invalid = "spec.zones: must be an array of strings";
            return;
        }
        const char *zn = json_string_value(z);
        bool dup = false;
        for (size_t k = 0; k < c->nzones && !dup; k++)
            dup = !strcmp(c->zones[k], zn);
        if (*zn && !dup) {
            int id = fl_sched_intern_add(&snap->topo, &snap->arena, zn);
            c->zone_ids[c->nzones] = id;
            c->zones[c->nzones++] = snap->topo.keys[id];
        }
    }
    if (nz == 0 && zone) {
        int id = fl_sched_intern_add(&snap->topo, &snap->arena, zone);
        c->zone_ids[c->nzones] = id;
        c->zones[c->nzones++] = snap->topo.keys[id];
    }
    if ((why = fl_sched_taints_parse(json_object_get(spec, "taints"), &snap->arena, &c->taints, &c->ntaints))) {
        c->invalid = why;
        return;
    }

    json_t *st = json_object_get(obj, "status");
    if (st && !json_is_null(st) && !json_is_object(st)) {
        c->invalid = "status: must be an object";
        return;
    }
    if ((why = fl_sched_apis_parse(json_object_get(st, "apiEnablements"), &snap->apis, &snap->arena, &p->apis,
                                   &p->napis))) {
        c->invalid = why;
        return;
    }
    json_t *conds = json_object_get(st, "conditions");
    for (size_t i = 0; i < json_array_size(conds); i++) {
        json_t *cd = json_array_get(conds, i);
        json_t *type = json_object_get(cd, "type"), *cs = json_object_get(cd, "status");
        if (json_is_string(type) && !strcmp(json_string_value(type), "Ready"))
            c->ready = json_is_string(cs) && !strcmp(json_string_value(cs), "True");
    }
    if ((why = parse_summary(snap, json_object_get(st, "resourceSummary"), c, p, buf, sizeof buf))) {
        c->invalid = fl_sched_arena_strdup(&snap->arena, why);
        return;
    }

    /* the matcher's view: only what a ClusterAffinity can read */
    json_t *vmd = json_pack("{s:s}", "name", c->name);
    if (labels)
        json_object_set_new(vmd, "labels", fl_json_deep_copy(labels));
    json_t *vspec = json_object();
    if (c->provider)
        json_object_set_new(vspec, "provider", json_string(c->provider));
    if (c->region)
        json_object_set_new(vspec, "region", json_string(c->region));
    json_t *vz = json_array();
    for (size_t i = 0; i < c->nzones; i++)
        json_array_append_new(vz, json_string(c->zones[i]));
    json_object_set_new(vspec, "zones", vz);
    c->view = json_pack("{s:o,s:o}", "metadata", vmd, "spec", vspec);
    c->labels = json_object_get(vmd, "labels");
}

/* Sort order of the build: name, then position in the caller's array. */
static int cmp_order(const void *a, const void *b, void *ctx)
{
    const struct fl_sched_cluster *cl = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(cl[x].name, cl[y].name);
    if (c)
        return c;
    return x < y ? -1 : x > y;
}

int fl_sched_snapshot_new(const json_t *const *clusters, size_t n, fl_sched_snapshot **out)
{
    fl_sched_snapshot *snap = fl_calloc(1, sizeof *snap);
    atomic_init(&snap->refs, 1);
    snap->n = n;
    struct fl_sched_cluster *parsed = fl_calloc(n + 1, sizeof *parsed);
    struct pre *pre = fl_calloc(n + 1, sizeof *pre);
    for (size_t i = 0; i < n; i++)
        parse_cluster(snap, clusters[i], &parsed[i], &pre[i]);

    /* by name, so that index order is name order; the caller's order among equal names */
    size_t *order = fl_malloc((n + 1) * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof *order, cmp_order, parsed);

    /* the interned tables are complete now: size the bitsets and availability arrays */
    snap->api_words = snap->apis.n ? (snap->apis.n + 63) / 64 : 1;
    size_t nres = snap->res.n;
    snap->clusters = fl_calloc(n + 1, sizeof *snap->clusters);
    snap->words = n / 64 + 1;
    snap->name_index = fl_malloc((n + 1) * sizeof *snap->name_index);
    snap->memo = fl_calloc(1, sizeof *snap->memo);
    pthread_mutex_init(&snap->memo->lock, NULL);
    for (size_t i = 0; i < n; i++) {
        struct fl_sched_cluster *c = &snap->clusters[i];
        const struct pre *p = &pre[order[i]];
        *c = parsed[order[i]];
        c->api = fl_sched_arena_alloc(&snap->arena, snap->api_words * sizeof *c->api);
        c->avail = fl_sched_arena_alloc(&snap->arena, (nres + 1) * sizeof *c->avail);
        for (size_t k = 0; k < p->napis; k++)
            c->api[(unsigned)p->apis[k] / 64] |= (uint64_t)1 << ((unsigned)p->apis[k] % 64);
        for (size_t k = 0; k < p->nres; k++) {
            struct fl_sched_avail *a = &c->avail[p->res[k].id];
            a->present = p->res[k].allocatable;
            a->value = q_scaled(p->res[k].nano, 1000000000);
            a->milli = q_scaled(p->res[k].nano, 1000000);
        }
        if (i > 0 && !c->invalid && *c->name && !strcmp(c->name, snap->clusters[i - 1].name))
            c->invalid = "metadata.name: Duplicate value: another Cluster has this name";
        /* name -> first index with that name (sorted, so the first added) */
        if (*c->name && fl_sched_intern_find(&snap->names, c->name) < 0)
            snap->name_index[fl_sched_intern_add(&snap->names, &snap->arena, c->name)] = (int32_t)i;
    }
    for (size_t i = 0; i < n; i++) {
        free(pre[i].apis);
        free(pre[i].res);
    }
    free(pre);
    free(order);
    free(parsed);
    *out = snap;
    return 0;
}

fl_sched_snapshot *fl_sched_snapshot_ref(fl_sched_snapshot *snap)
{
    atomic_fetch_add_explicit(&snap->refs, 1, memory_order_relaxed);
    return snap;
}

void fl_sched_snapshot_free(fl_sched_snapshot *snap)
{
    if (!snap || atomic_fetch_sub_explicit(&snap->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < snap->n; i++)
        json_decref(snap->clusters[i].view);
    free(snap->clusters);
    free(snap->name_index);
    fl_sched_memo_free(snap->memo);
    fl_sched_intern_free(&snap->names);
    fl_sched_intern_free(&snap->apis);
    fl_sched_intern_free(&snap->res);
    fl_sched_intern_free(&snap->topo);
    fl_sched_arena_free(&snap->arena);
    free(snap);
}

size_t fl_sched_snapshot_count(const fl_sched_snapshot *snap)
{
    return snap ? snap->n : 0;
}

int fl_sched_snapshot_find(const fl_sched_snapshot *snap, const char *name)
{
    int id = fl_sched_intern_find(&snap->names, name);
    return id >= 0 ? snap->name_index[id] : -1;
}

/* ---------------------------------------------------------------- binding -- */

static int num_digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* RFC 3339 (metav1.Time's format): seconds since the epoch and nanoseconds. */
static bool parse_time(const char *s, int64_t *sec, int64_t *nsec)
{
    if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':')
        return false;
    int f[6] = {num_digits(s, 4), num_digits(s + 5, 2), num_digits(s + 8, 2), num_digits(s + 11, 2),
                num_digits(s + 14, 2), num_digits(s + 17, 2)};
    for (int i = 0; i < 6; i++)
        if (f[i] < 0)
            return false;
    if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 60)
        return false;
    const char *p = s + 19;
    int64_t ns = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 9)
                ns = ns * 10 + (*p - '0');
        if (digits == 0)
            return false;
        for (; digits < 9; digits++)
            ns *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && p[3] == ':') {
        int oh = num_digits(p + 1, 2), om = num_digits(p + 4, 2);
        if (oh < 0 || om < 0)
            return false;
        off = (*p == '-' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    struct tm tm = {.tm_year = f[0] - 1900, .tm_mon = f[1] - 1, .tm_mday = f[2], .tm_hour = f[3], .tm_min = f[4],
                    .tm_sec = f[5]};
    *sec = (int64_t)timegm(&tm) - off;
    *nsec = ns;
    return true;
}

static int opt_time(const json_t *obj, const char *key, const char *path, bool *has, int64_t *sec, int64_t *nsec,
                    char **err)
{
    json_t *v = json_object_get(obj, key);
    *has = false;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || !parse_time(json_string_value(v), sec, nsec)) {
        *err = fl_asprintf("%s: must be an RFC 3339 time", path);
        return FL_EINVAL;
    }
    *has = true;
    return 0;
}

static int parse_requirements(const fl_sched_snapshot *snap, const json_t *rr, struct fl_sched_binding *b, char **err)
{
    if (!rr || json_is_null(rr))
        return 0;
    if (!json_is_object(rr)) {
        *err = fl_strdup("spec.replicaRequirements: must be an object");
        return FL_EINVAL;
    }
    b->has_requirements = true;
    json_t *req = json_object_get(rr, "resourceRequest");
    if (!req || json_is_null(req))
        return 0;
    if (!json_is_object(req)) {
        *err = fl_strdup("spec.replicaRequirements.resourceRequest: must be an object");
        return FL_EINVAL;
    }
    b->reqs = fl_calloc(json_object_size(req) + 1, sizeof *b->reqs);
    const char *name;
    json_t *v;
    json_object_foreach(req, name, v) {
        fl_quantity q;
        if (!q_parse(v, &q)) {
            *err = fl_asprintf("spec.replicaRequirements.resourceRequest.%s: not a valid quantity", name);
            return FL_EINVAL;
        }
        b->reqs[b->nreqs++] = (struct fl_sched_req){fl_sched_intern_find(&snap->res, name), !strcmp(name, "cpu"),
                                                    q_scaled(q.nano, 1000000000), q_scaled(q.nano, 1000000)};
    }
    return 0;
}

static int parse_targets(const fl_sched_snapshot *snap, const json_t *tcs, struct fl_sched_binding *b, char **err)
{
    if (!tcs || json_is_null(tcs))
        return 0;
    if (!json_is_array(tcs)) {
        *err = fl_strdup("spec.clusters: must be an array");
        return FL_EINVAL;
    }
    b->any_prev = json_array_size(tcs) > 0;
    b->prev_order = fl_malloc((json_array_size(tcs) + 1) * sizeof *b->prev_order);
    for (size_t i = 0; i < json_array_size(tcs); i++) {
        json_t *e = json_array_get(tcs, i);
        json_t *name = json_object_get(e, "name");
        json_t *rep = json_object_get(e, "replicas");
        if (!json_is_string(name)) {
            *err = fl_asprintf("spec.clusters[%zu].name: Required value: must be a string", i);
            return FL_EINVAL;
        }
        if (rep && !json_is_null(rep) &&
            (!json_is_integer(rep) || json_integer_value(rep) < 0 || json_integer_value(rep) > INT32_MAX)) {
            *err = fl_asprintf("spec.clusters[%zu].replicas: must be an integer between 0 and 2147483647", i);
            return FL_EINVAL;
        }
        int idx = fl_sched_snapshot_find(snap, json_string_value(name));
        if (idx < 0)
            continue; /* the cluster is gone: nothing to keep */
        if (b->prev[idx] >= 0) {
            *err = fl_asprintf("spec.clusters[%zu].name: Duplicate value: \"%s\"", i, json_string_value(name));
            return FL_EINVAL;
        }
        b->prev[idx] = rep ? (int32_t)json_integer_value(rep) : 0;
        b->prev_order[b->nprev++] = (uint32_t)idx;
    }
    return 0;
}

static int parse_placement(const fl_sched_snapshot *snap, const json_t *pl, struct fl_sched_binding *b, char **err)
{
    if (!json_is_object(pl)) {
        *err = fl_strdup("spec.placement: Required value: must be an object");
        return FL_EINVAL;
    }
    json_t *aff = json_object_get(pl, "clusterAffinity");
    json_t *affs = json_object_get(pl, "clusterAffinities");
    if (affs && !json_is_null(affs) && !json_is_array(affs)) {
        *err = fl_strdup("spec.placement.clusterAffinities: must be an array");
        return FL_EINVAL;
    }
    if (aff && !json_is_null(aff) && json_array_size(affs) > 0) {
        *err = fl_strdup("spec.placement: Invalid value: clusterAffinities can not co-exist with clusterAffinity");
        return FL_EINVAL;
    }
    int rc = fl_sched_affinity_bits(snap, aff, "spec.placement.clusterAffinity", &b->owned, &b->single.primary, err);
    if (rc)
        return rc;
    size_t nt = json_array_size(affs);
    if (nt > 0) {
        b->use_terms = true;
        b->terms = fl_calloc(nt, sizeof *b->terms);
        for (size_t i = 0; i < nt; i++) {
            if ((rc = fl_sched_term_parse(snap, json_array_get(affs, i), i, &b->owned, &b->terms[i], err)))
                return rc;
            b->nterms = i + 1;
        }
    }
    if ((rc = fl_sched_tolerations_parse(json_object_get(pl, "clusterTolerations"), &b->tols, &b->ntols, err)))
        return rc;
    if ((rc = fl_sched_spreads_parse(json_object_get(pl, "spreadConstraints"), &b->spreads, &b->nspreads, err)))
        return rc;
    return fl_sched_strategy_parse(snap, json_object_get(pl, "replicaScheduling"), b, err);
}

static void binding_clear(struct fl_sched_binding *b)
{
    fl_sched_term_clear(&b->single);
    for (size_t i = 0; i < b->nterms; i++)
        fl_sched_term_clear(&b->terms[i]);
    free(b->terms);
    free(b->rules);
    for (size_t i = 0; i < b->owned.n; i++)
        free(b->owned.v[i]);
    free(b->owned.v);
    free(b->tols);
    free(b->spreads);
    free(b->reqs);
    free(b->set_reqs);
    free(b->prev);
    free(b->prev_order);
    free(b->evicting);
}

static int binding_parse(const fl_sched_snapshot *snap, const json_t *spec, const json_t *status,
                         struct fl_sched_binding *b, char **err)
{
    memset(b, 0, sizeof *b);
    b->api = -1;
    b->prev = fl_malloc((snap->n + 1) * sizeof *b->prev);
    for (size_t i = 0; i < snap->n; i++)
        b->prev[i] = -1;
    b->evicting = fl_calloc(snap->n + 1, 1);
    if (!json_is_object(spec)) {
        *err = fl_strdup("spec: Required value: must be an object");
        return FL_EINVAL;
    }
    if (status && !json_is_null(status) && !json_is_object(status)) {
        *err = fl_strdup("status: must be an object");
        return FL_EINVAL;
    }
    json_t *rep = json_object_get(spec, "replicas");
    if (rep && !json_is_null(rep) &&
        (!json_is_integer(rep) || json_integer_value(rep) < 0 || json_integer_value(rep) > INT32_MAX)) {
        *err = fl_strdup("spec.replicas: must be an integer between 0 and 2147483647");
        return FL_EINVAL;
    }
    b->replicas = rep ? (int32_t)json_integer_value(rep) : 0;
    int rc = parse_requirements(snap, json_object_get(spec, "replicaRequirements"), b, err);
    if (rc)
        return rc;
    json_t *comps = json_object_get(spec, "components");
    if (comps && !json_is_null(comps) && !json_is_array(comps)) {
        *err = fl_strdup("spec.components: must be an array");
        return FL_EINVAL;
    }
    b->ncomponents = json_array_size(comps);
    b->workload = b->replicas > 0 || b->has_requirements || b->ncomponents >= 1;
    if (b->ncomponents && (rc = fl_sched_components_parse(snap, comps, b, err)))
        return rc;

    json_t *res = json_object_get(spec, "resource");
    json_t *av = json_object_get(res, "apiVersion"), *kind = json_object_get(res, "kind");
    json_t *uid = json_object_get(res, "uid");
    if (!json_is_object(res) || !json_is_string(av) || !json_is_string(kind)) {
        *err = fl_strdup("spec.resource: Required value: apiVersion and kind must be strings");
        return FL_EINVAL;
    }
    if (uid && !json_is_null(uid) && !json_is_string(uid)) {
        *err = fl_strdup("spec.resource.uid: must be a string");
        return FL_EINVAL;
    }
    char *key = fl_asprintf("%s/%s", json_string_value(av), json_string_value(kind));
    b->api = fl_sched_intern_find(&snap->apis, key);
    free(key);
    /* Karmada's tie-breaker: names descending when the uid's FNV-1a hash is odd */
    b->name_desc = json_is_string(uid) && *json_string_value(uid) && (fnv1a(json_string_value(uid)) & 1);

    if ((rc = parse_placement(snap, json_object_get(spec, "placement"), b, err)))
        return rc;
    b->multi_template = fl_sched_components_applicable(b);
    if ((rc = parse_targets(snap, json_object_get(spec, "clusters"), b, err)))
        return rc;
    if ((rc = fl_sched_evictions_parse(json_object_get(spec, "gracefulEvictionTasks"), snap, b->evicting, err)))
        return rc;

    bool has_trig = false, has_last = false;
    int64_t ts = 0, tn = 0, ls = 0, ln = 0;
    if ((rc = opt_time(spec, "rescheduleTriggeredAt", "spec.rescheduleTriggeredAt", &has_trig, &ts, &tn, err)))
        return rc;
    if ((rc = opt_time(status, "lastScheduledTime", "status.lastScheduledTime", &has_last, &ls, &ln, err)))
        return rc;
    /* a requested reschedule is pending while it is newer than the last schedule */
    b->fresh = has_trig && has_last && (ts > ls || (ts == ls && tn > ln));
    json_t *obs = json_object_get(status, "schedulerObservingAffinityName");
    if (obs && !json_is_null(obs) && !json_is_string(obs)) {
        *err = fl_strdup("status.schedulerObservingAffinityName: must be a string");
        return FL_EINVAL;
    }
    b->observed = json_is_string(obs) && *json_string_value(obs) ? json_string_value(obs) : NULL;
    return 0;
}

/* ------------------------------------------------------------------- run -- */

/* Karmada's general estimator (cluster resource summary) as calAvailableReplicas uses
 * it: the most replicas of this binding the cluster can still take. */
static int32_t estimate(const struct fl_sched_binding *b, const struct fl_sched_cluster *c)
{
    /* non-workloads are not estimated: the boundary stays MaxInt32 */
    if (b->replicas == 0 && b->ncomponents == 0)
        return INT32_MAX;
    if (b->multi_template) {
        int32_t sets = fl_sched_components_estimate(b, c);
        return sets == INT32_MAX ? b->replicas : sets;
    }
    int64_t max = c->has_summary ? c->allowed_pods : 0;
    if (max > 0 && b->has_requirements) {
        int64_t num = INT64_MAX;
        for (size_t i = 0; i < b->nreqs && num > 0; i++) {
            const struct fl_sched_req *r = &b->reqs[i];
            if (r->value <= 0)
                continue;
            const struct fl_sched_avail *a = r->res >= 0 ? &c->avail[r->res] : NULL;
            if (!a || !a->present || a->value <= 0) {
                num = 0;
                break;
            }
            int64_t fit = r->cpu ? a->milli / r->milli : a->value / r->value;
            if (fit < num)
                num = fit;
        }
        if (num < max)
            max = num;
    }
    int32_t n = max > INT32_MAX ? INT32_MAX : (int32_t)max;
    /* an estimate of MaxInt32 means "no bound": upstream uses spec.replicas then */
    return n == INT32_MAX ? b->replicas : n;
}

struct filt {
    uint32_t idx;
    const char *plugin, *reason;
};

/* The outcome of the pipeline for one affinity term. */
struct attempt {
    int outcome;
    char *message;
    int64_t step_ns[FL_SCHED_NSTEPS]; /* this term's */
    struct filt *filtered;
    size_t nfiltered;
    uint32_t *tidx;           /* targets, by index (= by name) */
    int32_t *trep;
    size_t ntargets;
};

static void attempt_clear(struct attempt *a)
{
    free(a->message);
    free(a->filtered);
    free(a->tidx);
    free(a->trep);
    memset(a, 0, sizeof *a);
}

static int cmp_cand(const void *a, const void *b)
{
    const struct fl_sched_cand *x = a, *y = b;
    if (x->overflow != y->overflow)
        return x->overflow < y->overflow ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->avail != y->avail)
        return x->avail > y->avail ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Candidates into Karmada's order (overflow tier asc, score desc, available replicas
 * desc, name asc) without a comparison sort: each candidate becomes one 64-bit key,
 * tier (10 bits: 0..1000) | score is not 100 (1) | 2^32-1 - available (32: available
 * is at most two int32s) | position (21: positions follow names), and an LSD radix sort
 * on bytes orders the keys, skipping bytes all keys share. qsort for the out-of-range. */
static void sort_cands(struct fl_sched_cand *c, size_t n)
{
    if (n < 2)
        return;
    bool fits = n < ((size_t)1 << 21);
    for (size_t i = 0; i < n && fits; i++)
        fits = c[i].overflow >= 0 && c[i].overflow < 1024 && c[i].avail >= 0 && c[i].avail <= UINT32_MAX;
    if (!fits) {
        qsort(c, n, sizeof *c, cmp_cand);
        return;
    }
    uint64_t *k = fl_malloc((2 * n + 1) * sizeof *k), *t = k + n;
    for (size_t i = 0; i < n; i++)
        k[i] = (uint64_t)c[i].overflow << 54 | (uint64_t)(c[i].score != 100) << 53 |
               (uint64_t)(UINT32_MAX - (uint64_t)c[i].avail) << 21 | i;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[(k[i] >> shift & 0xff) + 1]++;
        if (count[(k[0] >> shift & 0xff) + 1] == n)
            continue; /* every key has this byte: the pass would not move anything */
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            t[count[k[i] >> shift & 0xff]++] = k[i];
        uint64_t *x = k;
        k = t;
        t = x;
    }
    struct fl_sched_cand *out = fl_malloc((n + 1) * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = c[k[i] & (((uint64_t)1 << 21) - 1)];
    memcpy(c, out, n * sizeof *c);
    free(out);
    free(k < t ? k : t);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* FitError's text: "0/N clusters are available: <count> <reason>, ...." with the
 * "<count> <reason>" strings sorted as strings. */
static char *no_fit_message(const fl_sched_snapshot *snap, const struct attempt *a)
{
    const char **rs = fl_malloc((a->nfiltered + 1) * sizeof *rs);
    size_t n = 0;
    for (size_t i = 0; i < a->nfiltered; i++) {
        if (!strcmp(a->filtered[i].plugin, FL_PLUGIN_DELETING))
            continue;
        rs[n++] = !strcmp(a->filtered[i].plugin, FL_PLUGIN_INVALID) ? "cluster(s) had an invalid Cluster object"
                                                                     : a->filtered[i].reason;
    }
    char *msg;
    if (snap->n == 0 || n == 0) {
        msg = fl_asprintf("0/%zu clusters are available: no cluster exists.", snap->n);
        free(rs);
        return msg;
    }
    qsort(rs, n, sizeof *rs, cmp_str);
    char **items = fl_malloc((n + 1) * sizeof *items);
    size_t ni = 0, len = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && !strcmp(rs[j], rs[i]))
            j++;
        items[ni] = fl_asprintf("%zu %s", j - i, rs[i]);
        len += strlen(items[ni]) + 2;
        ni++;
        i = j;
    }
    qsort(items, ni, sizeof *items, cmp_str);
    char *joined = fl_malloc(len + 1);
    joined[0] = '\0';
    for (size_t i = 0, off = 0; i < ni; i++) {
        off += (size_t)sprintf(joined + off, "%s%s", i ? ", " : "", items[i]);
        free(items[i]);
    }
    msg = fl_asprintf("0/%zu clusters are available: %s.", snap->n, joined);
    free(joined);
    free(items);
    free(rs);
    return msg;
}

static void run_term(const fl_sched_snapshot *snap, const struct fl_sched_binding *b, const struct fl_sched_term *term,
                     const fl_sched_opts *opts, struct attempt *a)
{
    memset(a, 0, sizeof *a);
    size_t n = snap->n;
    a->filtered = fl_malloc((n + 1) * sizeof *a->filtered);
    struct fl_sched_cand *cands = fl_malloc((n + 1) * sizeof *cands);
    struct fl_sched_cand *sel = NULL;
    int32_t *rep = NULL;
    size_t nc = 0;
    bool overflow = term->has_overflow && b->workload;
    int64_t t = fl_time_mono_ns(), t1;

    for (uint32_t i = 0; i < n; i++) {
        const struct fl_sched_cluster *c = &snap->clusters[i];
        const char *plugin = NULL, *why = NULL;
        if (c->invalid)
            plugin = FL_PLUGIN_INVALID, why = c->invalid;
        else if (c->deleting)
            plugin = FL_PLUGIN_DELETING, why = "cluster is being deleted";
        else if ((why = fl_sched_filter_affinity(b, term, i)))
            plugin = FL_PLUGIN_AFFINITY;
        else if ((why = fl_sched_filter_eviction(b, i)))
            plugin = FL_PLUGIN_EVICTION;
        else if ((why = fl_sched_filter_taint(b, i, c)))
            plugin = FL_PLUGIN_TAINT;
        else if ((why = fl_sched_filter_api(b, i, c)))
            plugin = FL_PLUGIN_API;
        else if ((why = fl_sched_filter_spread(b, c)))
            plugin = FL_PLUGIN_SPREAD;
        if (plugin) {
            a->filtered[a->nfiltered++] = (struct filt){i, plugin, why};
            continue;
        }
        int32_t alloc = estimate(b, c);
        int32_t assigned = b->prev[i] > 0 ? b->prev[i] : 0;
        cands[nc++] = (struct fl_sched_cand){
            .idx = i,
            .overflow = overflow ? fl_sched_overflow_order(term, i) : 0,
            .alloc = alloc,
            .score = b->any_prev && b->prev[i] >= 0 ? 100 : 0,
            .avail = (int64_t)alloc + assigned,
        };
    }
    t1 = fl_time_mono_ns();
    a->step_ns[FL_SCHED_STEP_FILTER] = t1 - t;
    t = t1;
    if (nc == 0) {
        a->outcome = FL_SCHED_NO_CLUSTER_FIT;
        a->message = no_fit_message(snap, a);
        goto done;
    }
    if (fl_sched_spread_active(b) || b->strategy == FL_STRAT_AGGREGATED)
        sort_cands(cands, nc);

    sel = fl_malloc((nc + 1) * sizeof *sel);
    size_t nsel = 0;
    char *msg = NULL;
    a->outcome = fl_sched_spread_select(b, snap, cands, nc, sel, &nsel, &msg);
    t1 = fl_time_mono_ns();
    a->step_ns[FL_SCHED_STEP_SELECT] = t1 - t;
    t = t1;
    if (a->outcome != FL_SCHED_SUCCESS) {
        a->message = fl_asprintf("failed to select clusters: %s", msg);
        free(msg);
        goto done;
    }
    rep = fl_malloc((n + 1) * sizeof *rep);
    for (size_t i = 0; i < n; i++)
        rep[i] = -1;
    a->outcome = fl_sched_assign(b, term, snap, sel, nsel, rep, &msg);
    a->step_ns[FL_SCHED_STEP_ASSIGN] = fl_time_mono_ns() - t;
    if (a->outcome != FL_SCHED_SUCCESS) {
        a->message = fl_asprintf("failed to assign replicas: %s", msg);
        free(msg);
        goto done;
    }
    if (opts && opts->empty_workload_propagation)
        for (size_t i = 0; i < nsel; i++)
            if (rep[sel[i].idx] < 0)
                rep[sel[i].idx] = 0;
    /* targets in index (= name) order: one pass over rep */
    a->tidx = fl_malloc((nsel + 1) * sizeof *a->tidx);
    a->trep = fl_malloc((nsel + 1) * sizeof *a->trep);
    for (uint32_t i = 0; i < n; i++)
        if (rep[i] >= 0) {
            a->tidx[a->ntargets] = i;
            a->trep[a->ntargets++] = rep[i];
        }
    a->message = fl_strdup("Binding has been scheduled successfully.");
done:
    free(rep);
    free(sel);
    free(cands);
}

struct result_priv {
    fl_sched_result pub;
    fl_sched_snapshot *snap;
    char *message, *affinity;
    fl_sched_target *targets;
    fl_sched_filtered *filtered;
};

static const char *const reasons[] = {"Success", "NoClusterFit", "Unschedulable", "SchedulerError"};

static fl_sched_result *make_result(fl_sched_snapshot *snap, struct attempt *a, const char *affinity)
{
    struct result_priv *r = fl_calloc(1, sizeof *r);
    r->snap = fl_sched_snapshot_ref(snap);
    r->message = a->message;
    a->message = NULL;
    r->affinity = affinity ? fl_strdup(affinity) : NULL;
    r->targets = fl_malloc((a->ntargets + 1) * sizeof *r->targets);
    for (size_t i = 0; i < a->ntargets; i++)
        r->targets[i] = (fl_sched_target){snap->clusters[a->tidx[i]].name, a->trep[i]};
    r->filtered = fl_malloc((a->nfiltered + 1) * sizeof *r->filtered);
    for (size_t i = 0; i < a->nfiltered; i++)
        r->filtered[i] = (fl_sched_filtered){snap->clusters[a->filtered[i].idx].name, a->filtered[i].plugin,
                                             a->filtered[i].reason};
    r->pub.outcome = a->outcome;
    r->pub.reason = reasons[a->outcome];
    r->pub.message = r->message;
    r->pub.update_clusters = a->outcome == FL_SCHED_SUCCESS || a->outcome == FL_SCHED_NO_CLUSTER_FIT;
    r->pub.targets = r->targets;
    r->pub.ntargets = a->ntargets;
    r->pub.affinity_name = r->affinity;
    r->pub.filtered = r->filtered;
    r->pub.nfiltered = a->nfiltered;
    return &r->pub;
}

void fl_sched_result_free(fl_sched_result *pub)
{
    if (!pub)
        return;
    struct result_priv *r = (struct result_priv *)pub;
    free(r->message);
    free(r->affinity);
    free(r->targets);
    free(r->filtered);
    fl_sched_snapshot_free(r->snap);
    free(r);
}

static void add_steps(int64_t *steps, const struct attempt *a)
{
    for (int i = 0; i < FL_SCHED_NSTEPS; i++)
        steps[i] += a->step_ns[i];
}

int fl_sched_run(fl_sched_snapshot *snap, const json_t *spec, const json_t *status, const fl_sched_opts *opts,
                 fl_sched_result **out, char **err)
{
    *out = NULL;
    *err = NULL;
    if (!snap) {
        *err = fl_strdup("no cluster snapshot");
        return FL_EINVAL;
    }
    struct fl_sched_binding b;
    int rc = binding_parse(snap, spec, status, &b, err);
    if (rc)
        goto done;
    struct attempt a;
    int64_t steps[FL_SCHED_NSTEPS] = {0};
    if (!b.use_terms) {
        run_term(snap, &b, &b.single, opts, &a);
        add_steps(steps, &a);
        *out = make_result(snap, &a, NULL);
        attempt_clear(&a);
        goto timed;
    }
    /* clusterAffinities: from the recorded term (or the first), falling back in order */
    size_t start = 0;
    if (b.observed && !b.fresh)
        for (size_t i = 0; i < b.nterms; i++)
            if (!strcmp(b.terms[i].name, b.observed)) {
                start = i;
                break;
            }
    struct attempt first = {0};
    bool have_first = false;
    for (size_t i = start; i < b.nterms; i++) {
        /* upstream's filter looks the term up by name: with duplicate names, the first */
        const struct fl_sched_term *t = &b.terms[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(b.terms[j].name, t->name)) {
                t = &b.terms[j];
                break;
            }
        run_term(snap, &b, t, opts, &a);
        add_steps(steps, &a);
        if (a.outcome == FL_SCHED_SUCCESS) {
            *out = make_result(snap, &a, b.terms[i].name);
            attempt_clear(&a);
            break;
        }
        if (!have_first) {
            first = a;
            have_first = true;
        } else {
            attempt_clear(&a);
        }
    }
    if (!*out) {
        /* every term failed: the first failure stands and the recorded term stays */
        *out = make_result(snap, &first, b.observed);
        if (first.outcome != FL_SCHED_NO_CLUSTER_FIT)
            (*out)->update_clusters = false;
    }
    attempt_clear(&first);
timed:
    memcpy((*out)->step_ns, steps, sizeof steps);
done:
    binding_clear(&b);
    return rc;
}
