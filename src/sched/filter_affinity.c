/* filter_affinity.c - the ClusterAffinity filter, the overflow tiers of
 * placement.clusterAffinities, and the per-snapshot memo of affinity results.
 *
 * What "cluster matches affinity" means lives in one place, the shared matcher
 * (src/policy/cluster_affinity.h); this file decides which affinities apply and
 * remembers the matcher's answers. An affinity's answer depends only on the affinity and
 * the cluster, and the many bindings of one policy carry the same affinity, so the first
 * decision that meets an affinity on a snapshot compiles it and runs the matcher over
 * every cluster into a bitset, keyed by the affinity's compact JSON text; later
 * decisions pay one JSON encoding and one hash lookup, then a bit test per cluster. The
 * memo is the snapshot's only mutable state: a mutex guards lookups and inserts, entries
 * never change or go away before the snapshot does, and it stops growing at
 * FL_SCHED_MEMO_MAX entries (further affinities are evaluated per decision).
 *
 * Which affinities apply, as Karmada's plugin: placement.clusterAffinity when set;
 * otherwise the clusterAffinities term being tried (the caller walks the terms in order,
 * see sched.c). For workloads a cluster also passes when it matches one of the term's
 * overflowAffinities; its overflow order (0 for the primary group, i+1 for
 * overflowAffinities[i]) then orders it after the primary group in selection and
 * division. Non-workloads use the primary group only: they consume no capacity, so there
 * is nothing to overflow. The static weight rules' targetCluster affinities go through
 * the same memo (divide.c). */
#include "sched/sched_priv.h"

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Evaluate a compiled affinity over every cluster. Views are built by the snapshot, so a
 * matcher error cannot happen; were it to, the cluster does not match. */
static void eval_all(const fl_sched_snapshot *snap, const fl_cluster_affinity *a, uint64_t *bits)
{
    for (size_t i = 0; i < snap->n; i++) {
        const struct fl_sched_cluster *c = &snap->clusters[i];
        bool match = false;
        char *err = NULL;
        if (c->view && fl_policy_cluster_affinity_eval(a, c->view, &match, &err) == 0 && match)
            bits[i / 64] |= (uint64_t)1 << (i % 64);
        free(err);
    }
}

int fl_sched_affinity_bits(const fl_sched_snapshot *snap, const json_t *aff, const char *path,
                           struct fl_sched_owned *owned, const uint64_t **bits, char **err)
{
    *bits = NULL;
    if (!aff || json_is_null(aff))
        return 0;
    if (!json_is_object(aff)) {
        *err = fl_asprintf("%s: must be an object", path);
        return FL_EINVAL;
    }
    struct fl_sched_memo *m = snap->memo;
    char *key = fl_json_dumps(aff, NULL);
    pthread_mutex_lock(&m->lock);
    int id = fl_sched_intern_find(&m->keys, key);
    if (id >= 0) {
        *bits = m->all[id] ? NULL : m->bits[id];
        pthread_mutex_unlock(&m->lock);
        free(key);
        return 0;
    }
    pthread_mutex_unlock(&m->lock);

    /* not seen yet: compile (which validates) and evaluate outside the lock */
    char *merr = NULL;
    fl_cluster_affinity *a = NULL;
    int rc = fl_policy_cluster_affinity_new(aff, &a, &merr);
    if (rc) {
        *err = fl_asprintf("%s.%s", path, merr ? merr : "invalid");
        free(merr);
        free(key);
        return rc;
    }
    bool all = fl_policy_cluster_affinity_is_empty(a);
    uint64_t *v = NULL;
    if (!all) {
        v = fl_calloc(snap->words, sizeof *v);
        eval_all(snap, a, v);
    }
    fl_policy_cluster_affinity_free(a);

    pthread_mutex_lock(&m->lock);
    id = fl_sched_intern_find(&m->keys, key);
    if (id >= 0) {
        /* another thread got here first: use its entry */
        *bits = m->all[id] ? NULL : m->bits[id];
        free(v);
    } else if (m->keys.n < FL_SCHED_MEMO_MAX) {
        id = fl_sched_intern_add(&m->keys, &m->arena, key);
        if ((size_t)id == 0 || ((size_t)id & ((size_t)id - 1)) == 0) {
            /* grow the per-entry arrays at powers of two */
            size_t cap = id ? (size_t)id * 2 : 1;
            m->bits = fl_realloc(m->bits, cap * sizeof *m->bits);
            m->all = fl_realloc(m->all, cap * sizeof *m->all);
        }
        uint64_t *kept = NULL;
        if (!all) {
            kept = fl_sched_arena_alloc(&m->arena, snap->words * sizeof *kept);
            memcpy(kept, v, snap->words * sizeof *kept);
        }
        m->bits[id] = kept;
        m->all[id] = all;
        *bits = kept;
        free(v);
    } else if (v) {
        /* memo full: this decision keeps its own copy */
        if (owned->n == owned->cap) {
            owned->cap = owned->cap ? owned->cap * 2 : 4;
            owned->v = fl_realloc(owned->v, owned->cap * sizeof *owned->v);
        }
        owned->v[owned->n++] = v;
        *bits = v;
    }
    pthread_mutex_unlock(&m->lock);
    free(key);
    return 0;
}

void fl_sched_memo_free(struct fl_sched_memo *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    fl_sched_intern_free(&m->keys);
    free(m->bits);
    free(m->all);
    fl_sched_arena_free(&m->arena);
    free(m);
}

void fl_sched_term_clear(struct fl_sched_term *t)
{
    free(t->overflow);
    memset(t, 0, sizeof *t);
}

int fl_sched_term_parse(const fl_sched_snapshot *snap, const json_t *term, size_t i, struct fl_sched_owned *owned,
                        struct fl_sched_term *out, char **err)
{
    memset(out, 0, sizeof *out);
    char path[96];
    snprintf(path, sizeof path, "spec.placement.clusterAffinities[%zu]", i);
    if (!json_is_object(term)) {
        *err = fl_asprintf("%s: must be an object", path);
        return FL_EINVAL;
    }
    json_t *name = json_object_get(term, "affinityName");
    if (!json_is_string(name) || !*json_string_value(name)) {
        *err = fl_asprintf("%s.affinityName: Required value: must be a non-empty string", path);
        return FL_EINVAL;
    }
    out->name = json_string_value(name);
    /* the term is itself a ClusterAffinity (inline fields); its other members
     * (affinityName, overflowAffinities) make it a different memo key than the same
     * affinity written elsewhere, which costs only a second entry */
    int rc = fl_sched_affinity_bits(snap, term, path, owned, &out->primary, err);
    if (rc)
        goto fail;
    json_t *ovf = json_object_get(term, "overflowAffinities");
    if (ovf && !json_is_null(ovf)) {
        if (!json_is_array(ovf)) {
            *err = fl_asprintf("%s.overflowAffinities: must be an array", path);
            rc = FL_EINVAL;
            goto fail;
        }
        out->has_overflow = true;
        size_t n = json_array_size(ovf);
        out->overflow = fl_calloc(n + 1, sizeof *out->overflow);
        for (size_t j = 0; j < n; j++) {
            char opath[160];
            snprintf(opath, sizeof opath, "%s.overflowAffinities[%zu]", path, j);
            json_t *o = json_array_get(ovf, j);
            if (!json_is_object(o)) {
                *err = fl_asprintf("%s: must be an object", opath);
                rc = FL_EINVAL;
                goto fail;
            }
            json_t *oname = json_object_get(o, "affinityName");
            if (!json_is_string(oname) || !*json_string_value(oname)) {
                *err = fl_asprintf("%s.affinityName: Required value: must be a non-empty string", opath);
                rc = FL_EINVAL;
                goto fail;
            }
            rc = fl_sched_affinity_bits(snap, o, opath, owned, &out->overflow[j], err);
            if (rc)
                goto fail;
            out->noverflow = j + 1;
        }
    }
    return 0;
fail:
    fl_sched_term_clear(out);
    return rc;
}

const char *fl_sched_filter_affinity(const struct fl_sched_binding *b, const struct fl_sched_term *t, uint32_t idx)
{
    if (fl_sched_bit(t->primary, idx))
        return NULL;
    if (b->workload)
        for (size_t i = 0; i < t->noverflow; i++)
            if (fl_sched_bit(t->overflow[i], idx))
                return NULL;
    return "cluster(s) did not match the placement cluster affinity constraint";
}

int32_t fl_sched_overflow_order(const struct fl_sched_term *t, uint32_t idx)
{
    if (fl_sched_bit(t->primary, idx))
        return 0;
    for (size_t i = 0; i < t->noverflow; i++)
        if (fl_sched_bit(t->overflow[i], idx))
            return (int32_t)i + 1;
    return 1000;
}
