/* kinds.c - the registries of served kinds: start-up registration of the built-in
 * table (kinds_builtin.c), registries (the process default one and those members
 * create), lookups by resource and by apiVersion/kind, the stable listing that
 * discovery and OpenAPI walk, per-registry caches of derived documents, and the
 * strategic-merge-patch metadata lookup.
 *
 * Design: readers (every API request) look kinds up far more often than CRDs change,
 * so each registry's served set lives in an immutable snapshot - a sorted array plus
 * two open-addressing hash tables - published under the registry's rwlock. A change
 * (a CRD applied or removed) builds a whole new snapshot and swaps it in under the
 * write lock; lookups take the read lock only for the few probes of one hash table.
 * A registry's kind structs live as long as it does: a retired dynamic kind keeps its
 * memory and reads served == false, so request handlers may hold kind pointers without
 * locks (kinds.h). The built-in kinds are static data shared by every registry, and so
 * is the snapshot of the built-ins alone, which every registry that serves no custom
 * kind points at (a simulated member without CRDs costs a few hundred bytes here).
 *
 * CRD bookkeeping (which kinds came from which CRD, and the CRD spec they were built
 * from so that re-applying an unchanged CRD is a no-op) is kept here too, per
 * registry; parsing a CRD into kinds is kinds_crd.c's job. */
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
extern fl_kind fl_kinds__builtin_ext[];
extern const size_t fl_kinds__builtin_ext_count;
extern const fl_field fl_schema_meta_v1_ObjectMeta[];
void fl_kinds__dynamic_free(fl_kind *k);

/* Declared here for kinds_crd.c and discovery.c (no private header in this module). */
int fl_kinds__version_cmp(const char *a, const char *b);
bool fl_kinds__crd_unchanged(fl_kindreg *reg, const char *name, const json_t *spec);
int fl_kinds__crd_replace(fl_kindreg *reg, const char *name, json_t *spec, fl_kind **kinds, size_t n, char **err);

/* The built-in kinds are two static tables (kinds_builtin.c, kinds_builtin_ext.c): i-th of both. */
static size_t builtin_count(void) { return fl_kinds__builtin_count + fl_kinds__builtin_ext_count; }

static fl_kind *builtin_at(size_t i)
{
    return i < fl_kinds__builtin_count ? &fl_kinds__builtin[i] : &fl_kinds__builtin_ext[i - fl_kinds__builtin_count];
}

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

/* A cache attached to a registry (fl_kindreg_cache). */
typedef struct cache_slot {
    const void *key;
    void *data;
    void (*free_fn)(void *);
} cache_slot;

struct fl_kindreg {
    pthread_rwlock_t lock;
    snapshot *cur;          /* guarded by lock; builtin_snap while no custom kind is served */
    crd_rec *crds;          /* guarded by lock (write side) */
    size_t ncrds;
    fl_kind **retired;      /* retired dynamic kinds, kept until the registry is freed */
    size_t nretired;
    uint64_t generation;    /* atomic; a new value after each published change */
    bool frozen;            /* the shared built-ins-only registry: refuses CRDs */
    pthread_mutex_t cache_lock;
    cache_slot *caches;     /* guarded by cache_lock; a handful at most */
    size_t ncaches;
};

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static snapshot *builtin_snap;    /* the built-ins alone; shared, never freed */
static fl_kindreg *default_reg;   /* the control plane's; never freed */
static fl_kindreg *builtin_reg;   /* frozen, for fl_kindreg_shared; never freed */
static uint64_t gen_counter;      /* atomic; source of every registry's generations */

static uint64_t next_generation(void) { return __atomic_add_fetch(&gen_counter, 1, __ATOMIC_RELAXED); }

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
    if (!s || s == builtin_snap)
        return;
    free(s->kinds);
    free(s->by_res);
    free(s->by_gvk);
    free(s);
}

/* Build a snapshot of every kind reg serves: built-ins and the served kinds of its
 * applied CRDs; the shared builtin_snap when that is the built-ins alone. reg == NULL
 * builds the built-ins' snapshot. Caller holds reg's write lock (or is init). */
static snapshot *snapshot_build(const fl_kindreg *reg)
{
    size_t total = builtin_count(), dyn = 0;
    for (size_t i = 0; reg && i < reg->ncrds; i++)
        for (size_t j = 0; j < reg->crds[i].n; j++)
            dyn += reg->crds[i].kinds[j]->served;
    if (reg && !dyn)
        return builtin_snap;
    total += dyn;
    snapshot *s = fl_calloc(1, sizeof(*s));
    s->kinds = fl_calloc(total ? total : 1, sizeof(*s->kinds));
    for (size_t i = 0; i < builtin_count(); i++)
        s->kinds[s->n++] = builtin_at(i);
    for (size_t i = 0; reg && i < reg->ncrds; i++)
        for (size_t j = 0; j < reg->crds[i].n; j++)
            if (reg->crds[i].kinds[j]->served)
                s->kinds[s->n++] = reg->crds[i].kinds[j];
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

/* ------------------------------------------------------------------ */
/* Registries                                                          */
/* ------------------------------------------------------------------ */

static fl_kindreg *reg_alloc(void)
{
    fl_kindreg *reg = fl_calloc(1, sizeof(*reg));
    pthread_rwlock_init(&reg->lock, NULL);
    pthread_mutex_init(&reg->cache_lock, NULL);
    reg->cur = builtin_snap;
    __atomic_store_n(&reg->generation, next_generation(), __ATOMIC_RELEASE);
    return reg;
}

static void do_init(void)
{
    for (size_t i = 0; i < builtin_count(); i++) {
        fl_kind *k = builtin_at(i);
        set_api_version(k);
        k->served = true;
        k->dynamic = false;
    }
    builtin_snap = snapshot_build(NULL);
    default_reg = reg_alloc();
    builtin_reg = reg_alloc();
    builtin_reg->frozen = true;
}

void fl_kinds_init(void) { pthread_once(&reg_once, do_init); }

fl_kindreg *fl_kindreg_default(void)
{
    fl_kinds_init();
    return default_reg;
}

/* NULL means the default registry. */
static fl_kindreg *resolve(fl_kindreg *reg) { return reg ? reg : fl_kindreg_default(); }

fl_kindreg *fl_kindreg_new(void)
{
    fl_kinds_init();
    return reg_alloc();
}

void fl_kindreg_free(fl_kindreg *reg)
{
    if (!reg || reg == default_reg || reg == builtin_reg)
        return;
    for (size_t i = 0; i < reg->ncaches; i++)
        reg->caches[i].free_fn(reg->caches[i].data);
    free(reg->caches);
    for (size_t i = 0; i < reg->ncrds; i++) {
        for (size_t j = 0; j < reg->crds[i].n; j++)
            fl_kinds__dynamic_free(reg->crds[i].kinds[j]);
        free(reg->crds[i].kinds);
        json_decref(reg->crds[i].spec);
        free(reg->crds[i].name);
    }
    free(reg->crds);
    for (size_t i = 0; i < reg->nretired; i++)
        fl_kinds__dynamic_free(reg->retired[i]);
    free(reg->retired);
    snapshot_free(reg->cur);
    pthread_mutex_destroy(&reg->cache_lock);
    pthread_rwlock_destroy(&reg->lock);
    free(reg);
}

fl_kindreg *fl_kindreg_shared(fl_kindreg *reg)
{
    reg = resolve(reg);
    pthread_rwlock_rdlock(&reg->lock);
    bool plain = reg->cur == builtin_snap;
    pthread_rwlock_unlock(&reg->lock);
    return plain ? builtin_reg : reg;
}

void *fl_kindreg_cache(fl_kindreg *reg, const void *key, void *(*make)(void), void (*free_fn)(void *))
{
    reg = resolve(reg);
    void *data = NULL;
    pthread_mutex_lock(&reg->cache_lock);
    for (size_t i = 0; i < reg->ncaches && !data; i++)
        if (reg->caches[i].key == key)
            data = reg->caches[i].data;
    if (!data) {
        data = make();
        reg->caches = fl_realloc(reg->caches, (reg->ncaches + 1) * sizeof(*reg->caches));
        reg->caches[reg->ncaches++] = (cache_slot){key, data, free_fn};
    }
    pthread_mutex_unlock(&reg->cache_lock);
    return data;
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */
/* ------------------------------------------------------------------ */

const fl_kind *fl_kindreg_by_resource(fl_kindreg *reg, const char *group, const char *version,
                                      const char *resource)
{
    if (!version || !resource)
        return NULL;
    if (!group)
        group = "";
    reg = resolve(reg);
    const fl_kind *found = NULL;
    pthread_rwlock_rdlock(&reg->lock);
    const snapshot *cur = reg->cur;
    size_t m = cur->cap - 1;
    for (size_t h = (size_t)hash_parts(group, version, resource) & m; cur->by_res[h]; h = (h + 1) & m) {
        const fl_kind *k = cur->by_res[h];
        if (!strcmp(k->resource, resource) && !strcmp(k->version, version) && !strcmp(k->group, group)) {
            found = k;
            break;
        }
    }
    pthread_rwlock_unlock(&reg->lock);
    return found;
}

const fl_kind *fl_kindreg_by_gvk(fl_kindreg *reg, const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return NULL;
    reg = resolve(reg);
    const fl_kind *found = NULL;
    pthread_rwlock_rdlock(&reg->lock);
    const snapshot *cur = reg->cur;
    size_t m = cur->cap - 1;
    for (size_t h = (size_t)hash_parts(api_version, kind, NULL) & m; cur->by_gvk[h]; h = (h + 1) & m) {
        const fl_kind *k = cur->by_gvk[h];
        if (!strcmp(k->kind, kind) && !strcmp(k->api_version, api_version)) {
            found = k;
            break;
        }
    }
    pthread_rwlock_unlock(&reg->lock);
    return found;
}

size_t fl_kindreg_list(fl_kindreg *reg, const fl_kind ***out)
{
    reg = resolve(reg);
    pthread_rwlock_rdlock(&reg->lock);
    size_t n = reg->cur->n;
    *out = fl_calloc(n ? n : 1, sizeof(**out));
    memcpy(*out, reg->cur->kinds, n * sizeof(**out));
    pthread_rwlock_unlock(&reg->lock);
    return n;
}

uint64_t fl_kindreg_generation(fl_kindreg *reg)
{
    reg = resolve(reg);
    return __atomic_load_n(&reg->generation, __ATOMIC_ACQUIRE);
}

/* The default registry's wrappers (kinds.h). */
const fl_kind *fl_kind_by_resource(const char *group, const char *version, const char *resource)
{
    return fl_kindreg_by_resource(NULL, group, version, resource);
}

const fl_kind *fl_kind_by_gvk(const char *api_version, const char *kind)
{
    return fl_kindreg_by_gvk(NULL, api_version, kind);
}

size_t fl_kinds_list(const fl_kind ***out) { return fl_kindreg_list(NULL, out); }

uint64_t fl_kinds_generation(void) { return fl_kindreg_generation(NULL); }

int fl_kinds_apply_crd(const json_t *crd, char **err) { return fl_kindreg_apply_crd(NULL, crd, err); }

void fl_kinds_remove_crd(const char *name) { fl_kindreg_remove_crd(NULL, name); }

char *fl_kind_prefix(const fl_kind *k)
{
    const char *g = k->storage_group ? k->storage_group : k->group;
    return fl_cat("/", g[0] ? g : "core", "/", k->resource, "/", NULL);
}

/* ------------------------------------------------------------------ */
/* CRD bookkeeping (called by kinds_crd.c)                             */
/* ------------------------------------------------------------------ */

static crd_rec *crd_find(fl_kindreg *reg, const char *name)
{
    for (size_t i = 0; i < reg->ncrds; i++)
        if (!strcmp(reg->crds[i].name, name))
            return &reg->crds[i];
    return NULL;
}

/* True when CRD `name` is registered in reg with a spec equal to `spec` (nothing to do). */
bool fl_kinds__crd_unchanged(fl_kindreg *reg, const char *name, const json_t *spec)
{
    reg = resolve(reg);
    pthread_rwlock_rdlock(&reg->lock);
    crd_rec *r = crd_find(reg, name);
    bool same = r && json_equal(r->spec, (json_t *)spec);
    pthread_rwlock_unlock(&reg->lock);
    return same;
}

static void retire(fl_kindreg *reg, fl_kind *k)
{
    k->served = false;
    reg->retired = fl_realloc(reg->retired, (reg->nretired + 1) * sizeof(*reg->retired));
    reg->retired[reg->nretired++] = k;
}

/* Does a kind reg serves outside CRD `self` clash with k (same group/version/resource or
 * same group/version/kind)? Returns the clashing kind or NULL. Caller holds the lock. */
static const fl_kind *clash(const fl_kindreg *reg, const fl_kind *k, const char *self)
{
    for (size_t i = 0; i < reg->cur->n; i++) {
        const fl_kind *o = reg->cur->kinds[i];
        if (o->crd_name && !strcmp(o->crd_name, self))
            continue;
        if (strcmp(o->group, k->group) || strcmp(o->version, k->version))
            continue;
        if (!strcmp(o->resource, k->resource) || !strcmp(o->kind, k->kind))
            return o;
    }
    return NULL;
}

static void drop_unpublished(fl_kind **kinds, size_t n)
{
    for (size_t x = 0; x < n; x++)
        fl_kinds__dynamic_free(kinds[x]);
    free(kinds);
}

/* Publish in reg the kinds of CRD `name`, replacing its previous ones (which are
 * retired). Ownership of spec and kinds[] (array and kinds) passes in on every path.
 * kinds == NULL removes the CRD. A CRD whose resource a built-in kind already serves
 * (Karmada's own CRDs applied to Flotilla, say) is shadowed: accepted, but nothing of it
 * served. Returns 0, or FL_EINVAL with *err when another CRD already serves one of the
 * names (or reg is the frozen built-ins-only registry). */
int fl_kinds__crd_replace(fl_kindreg *reg, const char *name, json_t *spec, fl_kind **kinds, size_t n, char **err)
{
    reg = resolve(reg);
    int rc = 0;
    pthread_rwlock_wrlock(&reg->lock);

    if (reg->frozen && spec) {
        if (err)
            *err = fl_asprintf("metadata.name: Invalid value: \"%s\": this registry serves built-in kinds only",
                               name);
        drop_unpublished(kinds, n);
        json_decref(spec);
        rc = FL_EINVAL;
        goto out;
    }
    if (kinds) {
        for (size_t i = 0; i < builtin_count(); i++) {
            const fl_kind *b = builtin_at(i);
            for (size_t j = 0; j < n; j++) {
                if (!strcmp(b->group, kinds[j]->group) && !strcmp(b->resource, kinds[j]->resource)) {
                    fl_log_kvf(FL_LOG_INFO, "kinds",
                               FL_LOG_KV("object", FL_LOG_OBJ("CustomResourceDefinition", NULL, name)),
                               "served by the built-in kind %s: not replacing it", b->kind);
                    drop_unpublished(kinds, n);
                    kinds = NULL;
                    n = 0;
                    goto record;
                }
            }
        }
        for (size_t j = 0; j < n; j++) {
            const fl_kind *o = clash(reg, kinds[j], name);
            if (o) {
                if (err)
                    *err = fl_asprintf("spec.names.plural: Invalid value: \"%s\": %s/%s %s is already served by %s",
                                       kinds[j]->resource, kinds[j]->group, kinds[j]->version,
                                       strcmp(o->resource, kinds[j]->resource) ? "kind" : "resource",
                                       o->crd_name ? o->crd_name : "a built-in kind");
                drop_unpublished(kinds, n);
                json_decref(spec);
                rc = FL_EINVAL;
                goto out;
            }
        }
    }

record:;
    crd_rec *r = crd_find(reg, name);
    if (!r && !spec)
        goto out; /* removing a CRD we never served: no change */
    if (r) {
        for (size_t i = 0; i < r->n; i++)
            retire(reg, r->kinds[i]);
        free(r->kinds);
        json_decref(r->spec);
        if (!spec) { /* removal: drop the record, keep the array dense */
            free(r->name);
            *r = reg->crds[--reg->ncrds];
        }
    } else if (spec) {
        reg->crds = fl_realloc(reg->crds, (reg->ncrds + 1) * sizeof(*reg->crds));
        r = &reg->crds[reg->ncrds++];
        r->name = fl_strdup(name);
    }
    if (spec) {
        r->spec = spec;
        r->kinds = kinds;
        r->n = n;
    }
    snapshot *old = reg->cur;
    reg->cur = snapshot_build(reg);
    snapshot_free(old);
    __atomic_store_n(&reg->generation, next_generation(), __ATOMIC_RELEASE);
out:
    pthread_rwlock_unlock(&reg->lock);
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
        if (path[n] == '.' && t->sub && t->type != FL_F_MAP && smp_walk(t->sub, path + n + 1, out))
            return true;
        /* a map's values: the next segment is a key, the table applies after it */
        if (path[n] == '.' && t->sub && t->type == FL_F_MAP) {
            const char *after = strchr(path + n + 1, '.');
            if (after && smp_walk(t->sub, after + 1, out))
                return true;
        }
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
        return smp_walk(fl_schema_meta_v1_ObjectMeta, path + 9, out);
    return false;
}
