/* kinds.c - the registry of served kinds: start-up registration of the built-in table
 * (kinds_builtin.c), lookups by resource and by apiVersion/kind, the stable listing
 * that discovery and OpenAPI walk, and the strategic-merge-patch metadata lookup.
 *
 * Design: readers (every API request) look kinds up far more often than CRDs change,
 * so the served set lives in an immutable snapshot - a sorted array plus two
 * open-addressing hash tables - published under a rwlock. A change (a CRD applied or
 * removed) builds a whole new snapshot and swaps it in under the write lock; lookups
 * take the read lock only for the few probes of one hash table. Kind structs are never
 * freed: a retired dynamic kind keeps its memory and reads served == false, so request
 * handlers may hold kind pointers without locks (kinds.h).
 *
 * CRD bookkeeping (which kinds came from which CRD, and the CRD spec they were built
 * from so that re-applying an unchanged CRD is a no-op) is kept here too; parsing a
 * CRD into kinds is kinds_crd.c's job. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/kinds.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"

/* From kinds_builtin.c / kinds_crd.c; internal to the kinds module. */
extern fl_kind fl_kinds__builtin[];
extern const size_t fl_kinds__builtin_count;
extern const fl_field fl_kinds__objectmeta_fields[];
void fl_kinds__dynamic_free(fl_kind *k);

/* Declared here for kinds_crd.c and discovery.c (no private header in this module). */
int fl_kinds__version_cmp(const char *a, const char *b);
bool fl_kinds__crd_unchanged(const char *name, const json_t *spec);
int fl_kinds__crd_replace(const char *name, json_t *spec, fl_kind **kinds, size_t n, char **err);

typedef struct snapshot {
    const fl_kind **kinds; /* served kinds, sorted (see kind_cmp) */
    size_t n;
    const fl_kind **by_res; /* hash of group/version/resource, cap is a power of two */
    const fl_kind **by_gvk; /* hash of apiVersion/kind */
    size_t cap;
} snapshot;

/* One applied CRD: its name, the spec its kinds were built from, and those kinds. */
typedef struct crd_rec {
    char *name;
    json_t *spec;
    fl_kind **kinds;
    size_t n;
} crd_rec;

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static snapshot *cur;             /* guarded by reg_lock */
static crd_rec *crds;             /* guarded by reg_lock (write side) */
static size_t ncrds;
static fl_kind **retired;         /* retired dynamic kinds, kept reachable forever */
static size_t nretired;
static uint64_t generation;       /* atomics; bumped after each published change */

/* ------------------------------------------------------------------ */
/* Version priority (Kubernetes' kube-aware version ordering)          */
/* ------------------------------------------------------------------ */

/* Parse "v<major>[(alpha|beta)<minor>]". Returns false for other spellings. */
static bool parse_kube_version(const char *v, long *major, int *stability, long *minor)
{
    char *end;
    if (v[0] != 'v' || v[1] < '1' || v[1] > '9')
        return false;
    *major = strtol(v + 1, &end, 10);
    *minor = 0;
    if (!*end) {
        *stability = 2; /* GA */
        return true;
    }
    const char *rest;
    if (!strncmp(end, "beta", 4)) {
        *stability = 1;
        rest = end + 4;
    } else if (!strncmp(end, "alpha", 5)) {
        *stability = 0;
        rest = end + 5;
    } else {
        return false;
    }
    if (*rest < '1' || *rest > '9')
        return false;
    *minor = strtol(rest, &end, 10);
    return *end == '\0';
}

/* <0 when a sorts before b (a is preferred): GA > beta > alpha, higher numbers first,
 * versions that are not kube-like last, alphabetically. */
int fl_kinds__version_cmp(const char *a, const char *b)
{
    long amaj, amin, bmaj, bmin;
    int astab, bstab;
    bool ak = parse_kube_version(a, &amaj, &astab, &amin);
    bool bk = parse_kube_version(b, &bmaj, &bstab, &bmin);
    if (ak != bk)
        return ak ? -1 : 1;
    if (!ak)
        return strcmp(a, b);
    if (astab != bstab)
        return bstab - astab;
    if (amaj != bmaj)
        return amaj > bmaj ? -1 : 1;
    if (amin != bmin)
        return amin > bmin ? -1 : 1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Snapshots                                                           */
/* ------------------------------------------------------------------ */

static uint64_t hash_parts(const char *a, const char *b, const char *c)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    const char *parts[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        if (!parts[i])
            continue;
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
            h ^= *p;
            h *= 1099511628211ULL;
        }
        h ^= '/';
        h *= 1099511628211ULL;
    }
    return h;
}

static int kind_cmp(const void *pa, const void *pb)
{
    const fl_kind *a = *(const fl_kind *const *)pa, *b = *(const fl_kind *const *)pb;
    int c;
    if (a->dynamic != b->dynamic)
        return a->dynamic ? 1 : -1;
    if ((c = strcmp(a->group, b->group)))
        return c;
    if ((c = strcmp(a->resource, b->resource)))
        return c;
    return fl_kinds__version_cmp(a->version, b->version);
}

static void snapshot_free(snapshot *s)
{
    if (!s)
        return;
    free(s->kinds);
    free(s->by_res);
    free(s->by_gvk);
    free(s);
}

/* Build a snapshot of every served kind: built-ins and the kinds of applied CRDs.
 * Caller holds the write lock (or is init). */
static snapshot *snapshot_build(void)
{
    snapshot *s = fl_calloc(1, sizeof(*s));
    size_t total = fl_kinds__builtin_count;
    for (size_t i = 0; i < ncrds; i++)
        total += crds[i].n;
    s->kinds = fl_calloc(total ? total : 1, sizeof(*s->kinds));
    for (size_t i = 0; i < fl_kinds__builtin_count; i++)
        s->kinds[s->n++] = &fl_kinds__builtin[i];
    for (size_t i = 0; i < ncrds; i++)
        for (size_t j = 0; j < crds[i].n; j++)
            if (crds[i].kinds[j]->served)
                s->kinds[s->n++] = crds[i].kinds[j];
    qsort(s->kinds, s->n, sizeof(*s->kinds), kind_cmp);

    s->cap = 16;
    while (s->cap < s->n * 4)
        s->cap <<= 1;
    s->by_res = fl_calloc(s->cap, sizeof(*s->by_res));
    s->by_gvk = fl_calloc(s->cap, sizeof(*s->by_gvk));
    for (size_t i = 0; i < s->n; i++) {
        const fl_kind *k = s->kinds[i];
        size_t m = s->cap - 1;
        size_t h = (size_t)hash_parts(k->group, k->version, k->resource) & m;
        while (s->by_res[h])
            h = (h + 1) & m;
        s->by_res[h] = k;
        h = (size_t)hash_parts(k->api_version, k->kind, NULL) & m;
        while (s->by_gvk[h])
            h = (h + 1) & m;
        s->by_gvk[h] = k;
    }
    return s;
}

static void set_api_version(fl_kind *k)
{
    if (k->group[0])
        snprintf(k->api_version, sizeof(k->api_version), "%s/%s", k->group, k->version);
    else
        snprintf(k->api_version, sizeof(k->api_version), "%s", k->version);
}

static void do_init(void)
{
    for (size_t i = 0; i < fl_kinds__builtin_count; i++) {
        fl_kind *k = &fl_kinds__builtin[i];
        set_api_version(k);
        k->served = true;
        k->dynamic = false;
    }
    pthread_rwlock_wrlock(&reg_lock);
    cur = snapshot_build();
    pthread_rwlock_unlock(&reg_lock);
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

void fl_kinds_init(void) { pthread_once(&reg_once, do_init); }

/* ------------------------------------------------------------------ */
/* Lookups                                                             */
/* ------------------------------------------------------------------ */

const fl_kind *fl_kind_by_resource(const char *group, const char *version, const char *resource)
{
    if (!version || !resource)
        return NULL;
    if (!group)
        group = "";
    fl_kinds_init();
    const fl_kind *found = NULL;
    pthread_rwlock_rdlock(&reg_lock);
    size_t m = cur->cap - 1;
    for (size_t h = (size_t)hash_parts(group, version, resource) & m; cur->by_res[h]; h = (h + 1) & m) {
        const fl_kind *k = cur->by_res[h];
        if (!strcmp(k->resource, resource) && !strcmp(k->version, version) && !strcmp(k->group, group)) {
            found = k;
            break;
        }
    }
    pthread_rwlock_unlock(&reg_lock);
    return found;
}

const fl_kind *fl_kind_by_gvk(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return NULL;
    fl_kinds_init();
    const fl_kind *found = NULL;
    pthread_rwlock_rdlock(&reg_lock);
    size_t m = cur->cap - 1;
    for (size_t h = (size_t)hash_parts(api_version, kind, NULL) & m; cur->by_gvk[h]; h = (h + 1) & m) {
        const fl_kind *k = cur->by_gvk[h];
        if (!strcmp(k->kind, kind) && !strcmp(k->api_version, api_version)) {
            found = k;
            break;
        }
    }
    pthread_rwlock_unlock(&reg_lock);
    return found;
}

size_t fl_kinds_list(const fl_kind ***out)
{
    fl_kinds_init();
    pthread_rwlock_rdlock(&reg_lock);
    size_t n = cur->n;
    *out = fl_calloc(n ? n : 1, sizeof(**out));
    memcpy(*out, cur->kinds, n * sizeof(**out));
    pthread_rwlock_unlock(&reg_lock);
    return n;
}

uint64_t fl_kinds_generation(void)
{
    fl_kinds_init();
    return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

char *fl_kind_prefix(const fl_kind *k)
{
    return fl_asprintf("/%s/%s/", k->group[0] ? k->group : "core", k->resource);
}

/* ------------------------------------------------------------------ */
/* CRD bookkeeping (called by kinds_crd.c)                             */
/* ------------------------------------------------------------------ */

static crd_rec *crd_find(const char *name)
{
    for (size_t i = 0; i < ncrds; i++)
        if (!strcmp(crds[i].name, name))
            return &crds[i];
    return NULL;
}

/* True when CRD `name` is registered with a spec equal to `spec` (nothing to do). */
bool fl_kinds__crd_unchanged(const char *name, const json_t *spec)
{
    fl_kinds_init();
    pthread_rwlock_rdlock(&reg_lock);
    crd_rec *r = crd_find(name);
    bool same = r && json_equal(r->spec, (json_t *)spec);
    pthread_rwlock_unlock(&reg_lock);
    return same;
}

static void retire(fl_kind *k)
{
    k->served = false;
    retired = fl_realloc(retired, (nretired + 1) * sizeof(*retired));
    retired[nretired++] = k;
}

/* Does a served kind outside CRD `self` clash with k (same group/version/resource or
 * same group/version/kind)? Returns the clashing kind or NULL. Caller holds the lock. */
static const fl_kind *clash(const fl_kind *k, const char *self)
{
    for (size_t i = 0; i < cur->n; i++) {
        const fl_kind *o = cur->kinds[i];
        if (o->crd_name && !strcmp(o->crd_name, self))
            continue;
        if (strcmp(o->group, k->group) || strcmp(o->version, k->version))
            continue;
        if (!strcmp(o->resource, k->resource) || !strcmp(o->kind, k->kind))
            return o;
    }
    return NULL;
}

/* Publish the kinds of CRD `name`, replacing its previous ones (which are retired).
 * Ownership of spec and kinds[] (array and kinds) passes in on every path. kinds ==
 * NULL removes the CRD. A CRD whose resource a built-in kind already serves (Karmada's
 * own CRDs applied to Flotilla, say) is shadowed: accepted, but nothing of it served.
 * Returns 0, or FL_EINVAL with *err when another CRD already serves one of the names. */
int fl_kinds__crd_replace(const char *name, json_t *spec, fl_kind **kinds, size_t n, char **err)
{
    fl_kinds_init();
    int rc = 0;
    pthread_rwlock_wrlock(&reg_lock);

    if (kinds) {
        for (size_t i = 0; i < fl_kinds__builtin_count; i++) {
            const fl_kind *b = &fl_kinds__builtin[i];
            for (size_t j = 0; j < n; j++) {
                if (!strcmp(b->group, kinds[j]->group) && !strcmp(b->resource, kinds[j]->resource)) {
                    fl_log(FL_LOG_INFO, "kinds", "CRD %s is served by the built-in kind %s; not replacing it",
                           name, b->kind);
                    for (size_t x = 0; x < n; x++)
                        fl_kinds__dynamic_free(kinds[x]); /* never published */
                    free(kinds);
                    kinds = NULL;
                    n = 0;
                    goto record;
                }
            }
        }
        for (size_t j = 0; j < n; j++) {
            const fl_kind *o = clash(kinds[j], name);
            if (o) {
                if (err)
                    *err = fl_asprintf("spec.names.plural: Invalid value: \"%s\": %s/%s %s is already served by %s",
                                       kinds[j]->resource, kinds[j]->group, kinds[j]->version,
                                       strcmp(o->resource, kinds[j]->resource) ? "kind" : "resource",
                                       o->crd_name ? o->crd_name : "a built-in kind");
                for (size_t x = 0; x < n; x++)
                    fl_kinds__dynamic_free(kinds[x]);
                free(kinds);
                json_decref(spec);
                rc = FL_EINVAL;
                goto out;
            }
        }
    }

record:;
    crd_rec *r = crd_find(name);
    if (!r && !spec)
        goto out; /* removing a CRD we never served: no change */
    if (r) {
        for (size_t i = 0; i < r->n; i++)
            retire(r->kinds[i]);
        free(r->kinds);
        json_decref(r->spec);
        if (!spec) { /* removal: drop the record, keep the array dense */
            free(r->name);
            *r = crds[--ncrds];
        }
    } else if (spec) {
        crds = fl_realloc(crds, (ncrds + 1) * sizeof(*crds));
        r = &crds[ncrds++];
        r->name = fl_strdup(name);
    }
    if (spec) {
        r->spec = spec;
        r->kinds = kinds;
        r->n = n;
    }
    snapshot *old = cur;
    cur = snapshot_build();
    snapshot_free(old);
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
out:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Strategic merge patch metadata                                      */
/* ------------------------------------------------------------------ */

static bool smp_walk(const fl_field *t, const char *path, fl_smp_meta *out)
{
    for (; t && t->path; t++) {
        size_t n = strlen(t->path);
        if (strncmp(path, t->path, n))
            continue;
        if (path[n] == '\0') {
            if (!t->strategy && !t->merge_key)
                return false;
            out->merge = t->strategy && strstr(t->strategy, "merge");
            out->retain_keys = t->strategy && strstr(t->strategy, "retainKeys");
            out->merge_key = t->merge_key;
            return true;
        }
        /* "spec.template.spec" + sub table: continue with the rest of the path */
        if (path[n] == '.' && t->sub && smp_walk(t->sub, path + n + 1, out))
            return true;
    }
    return false;
}

bool fl_kind_smp_lookup(void *ctx, const char *path, fl_smp_meta *out)
{
    const fl_kind *k = ctx;
    if (!k || !path || !out)
        return false;
    memset(out, 0, sizeof(*out));
    if (k->fields)
        return smp_walk(k->fields, path, out);
    /* dynamic kinds have no table; their metadata still follows ObjectMeta's tags */
    if (!strncmp(path, "metadata.", 9))
        return smp_walk(fl_kinds__objectmeta_fields, path + 9, out);
    return false;
}
