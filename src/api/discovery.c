/* discovery.c - the discovery documents kubectl and client libraries read first:
 * /api (APIVersions), /apis (APIGroupList), /apis/G (APIGroup), /api/v1 and
 * /apis/G/V (APIResourceList), and aggregated discovery (apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList) for /api and /apis, all derived from the kind table.
 *
 * Documents are built together for one fl_kindreg_generation() and cached in the
 * registry they describe (fl_kindreg_cache; registries serving no custom kind share the
 * built-ins' registry and therefore one cache); a call returns a new reference to the
 * cached value, which callers must treat as read-only (jansson 2.14 dumps without
 * mutating, so concurrent serialisation is safe). /api is built fresh on each call so
 * that the server may fill serverAddress in.
 *
 * Ordering follows upstream: groups in the order of the kind listing (built-ins first),
 * versions by Kubernetes version priority (GA > beta > alpha, newest first; the first is
 * the preferred version), resources by name with subresources after their parent. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/discovery.h"
#include "api/kinds.h"
#include "core/base64.h"
#include "core/json.h"
#include "core/mem.h"

int fl_kinds__version_cmp(const char *a, const char *b); /* kinds.c */

/* Built per registry and kinds generation; one per registry (fl_kindreg_cache). */
typedef struct disc_cache {
    pthread_mutex_t lock; /* guards the rest; held while (re)building */
    uint64_t gen;
    bool valid;
    json_t *groups;     /* APIGroupList */
    json_t *group_map;  /* group name -> APIGroup */
    json_t *lists;      /* "group/version" ("/v1" for core) -> APIResourceList */
    json_t *agg_core;   /* APIGroupDiscoveryList for /api */
    json_t *agg_apis;   /* APIGroupDiscoveryList for /apis */
} disc_cache;

static const char cache_key; /* names our slot in each registry */

static const char *all_verbs[] = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
                                  NULL};
/* Namespaces have no deletecollection upstream. */
static const char *namespace_verbs[] = {"create", "delete", "get", "list", "patch", "update", "watch", NULL};
static const char *sub_verbs[] = {"get", "patch", "update", NULL};

static json_t *str_array(const char *const *v, size_t max)
{
    json_t *a = json_array();
    for (size_t i = 0; i < max && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *verbs_for(const fl_kind *k)
{
    static const char *create_verbs[] = {"create", NULL};
    if (k->create_only)
        return str_array(create_verbs, 2);
    bool ns = !k->group[0] && !strcmp(k->resource, "namespaces");
    return str_array(ns ? namespace_verbs : all_verbs, 16);
}

/* A stable short hash in the shape of upstream's storageVersionHash (base64 of 8 bytes). */
static json_t *storage_version_hash(const fl_kind *k)
{
    uint64_t h = 1469598103934665603ULL;
    const char *parts[3] = {k->group, k->version, k->kind};
    for (int i = 0; i < 3; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
            h ^= *p;
            h *= 1099511628211ULL;
        }
        h ^= '/';
        h *= 1099511628211ULL;
    }
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(h >> (56 - 8 * i));
    char *text = fl_base64_encode(b, sizeof b); /* 12 characters, one pad, as upstream's */
    json_t *out = json_string(text);
    free(text);
    return out;
}

static json_t *gvk_obj(const char *group, const char *version, const char *kind)
{
    return json_pack("{s:s, s:s, s:s}", "group", group, "version", version, "kind", kind);
}

/* APIResource entries for k (the resource, then its subresources) appended to arr. */
/* A CertificateSigningRequest's /approval (kubectl certificate approve|deny). */
static bool has_approval(const fl_kind *k)
{
    return !strcmp(k->group, "certificates.k8s.io") && !strcmp(k->kind, "CertificateSigningRequest");
}

static void add_api_resources(json_t *arr, const fl_kind *k)
{
    json_t *r = json_object();
    json_object_set_new(r, "name", json_string(k->resource));
    json_object_set_new(r, "singularName", json_string(k->singular));
    json_object_set_new(r, "namespaced", json_boolean(k->namespaced));
    json_object_set_new(r, "kind", json_string(k->kind));
    json_object_set_new(r, "verbs", verbs_for(k));
    if (k->short_names[0])
        json_object_set_new(r, "shortNames", str_array(k->short_names, 4));
    if (k->categories[0])
        json_object_set_new(r, "categories", str_array(k->categories, 3));
    json_object_set_new(r, "storageVersionHash", storage_version_hash(k));
    json_array_append_new(arr, r);
    /* "approval" and "scale" sort before "status" */
    if (has_approval(k))
        json_array_append_new(arr, json_pack("{s:s++, s:s, s:b, s:s, s:o}", "name", k->resource, "/", "approval",
                                             "singularName", "", "namespaced", k->namespaced, "kind", k->kind,
                                             "verbs", str_array(sub_verbs, 8)));
    if (k->has_scale)
        json_array_append_new(arr, json_pack("{s:s++, s:s, s:b, s:s, s:s, s:s, s:o}", "name", k->resource, "/",
                                             "scale", "singularName", "", "namespaced", k->namespaced, "group",
                                             "autoscaling", "version", "v1", "kind", "Scale", "verbs",
                                             str_array(sub_verbs, 8)));
    if (k->has_status)
        json_array_append_new(arr, json_pack("{s:s++, s:s, s:b, s:s, s:o}", "name", k->resource, "/", "status",
                                             "singularName", "", "namespaced", k->namespaced, "kind", k->kind,
                                             "verbs", str_array(sub_verbs, 8)));
}

/* apidiscovery.k8s.io/v2 APIResourceDiscovery for k. */
static json_t *agg_resource(const fl_kind *k)
{
    json_t *r = json_object();
    json_object_set_new(r, "resource", json_string(k->resource));
    json_object_set_new(r, "responseKind", gvk_obj(k->group, k->version, k->kind));
    json_object_set_new(r, "scope", json_string(k->namespaced ? "Namespaced" : "Cluster"));
    json_object_set_new(r, "singularResource", json_string(k->singular));
    json_object_set_new(r, "verbs", verbs_for(k));
    if (k->short_names[0])
        json_object_set_new(r, "shortNames", str_array(k->short_names, 4));
    if (k->categories[0])
        json_object_set_new(r, "categories", str_array(k->categories, 3));
    if (k->has_scale || k->has_status || has_approval(k)) {
        json_t *subs = json_array();
        if (has_approval(k))
            json_array_append_new(subs, json_pack("{s:s, s:o, s:o}", "subresource", "approval", "responseKind",
                                                  gvk_obj(k->group, k->version, k->kind), "verbs",
                                                  str_array(sub_verbs, 8)));
        if (k->has_scale)
            json_array_append_new(subs, json_pack("{s:s, s:o, s:o}", "subresource", "scale", "responseKind",
                                                  gvk_obj("autoscaling", "v1", "Scale"), "verbs",
                                                  str_array(sub_verbs, 8)));
        if (k->has_status)
            json_array_append_new(subs, json_pack("{s:s, s:o, s:o}", "subresource", "status", "responseKind",
                                                  gvk_obj(k->group, k->version, k->kind), "verbs",
                                                  str_array(sub_verbs, 8)));
        json_object_set_new(r, "subresources", subs);
    }
    return r;
}

static int cmp_version_str(const void *a, const void *b)
{
    return fl_kinds__version_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct versions of group among kinds, preferred first. *out is a heap array of
 * borrowed strings. */
static size_t group_versions(const fl_kind **kinds, size_t n, const char *group, const char ***out)
{
    const char **v = fl_calloc(n ? n : 1, sizeof(*v));
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kinds[i]->group, group))
            continue;
        size_t j;
        for (j = 0; j < nv && strcmp(v[j], kinds[i]->version); j++)
            ;
        if (j == nv)
            v[nv++] = kinds[i]->version;
    }
    qsort(v, nv, sizeof(*v), cmp_version_str);
    *out = v;
    return nv;
}

static int cmp_kind_resource(const void *a, const void *b)
{
    return strcmp((*(const fl_kind *const *)a)->resource, (*(const fl_kind *const *)b)->resource);
}

/* Kinds of one group/version sorted by resource; *out heap array of borrowed kinds. */
static size_t gv_kinds(const fl_kind **kinds, size_t n, const char *group, const char *version,
                       const fl_kind ***out)
{
    const fl_kind **v = fl_calloc(n ? n : 1, sizeof(*v));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(kinds[i]->group, group) && !strcmp(kinds[i]->version, version))
            v[m++] = kinds[i];
    qsort(v, m, sizeof(*v), cmp_kind_resource);
    *out = v;
    return m;
}

static void cache_clear(disc_cache *c)
{
    json_decref(c->groups);
    json_decref(c->group_map);
    json_decref(c->lists);
    json_decref(c->agg_core);
    json_decref(c->agg_apis);
    c->groups = c->group_map = c->lists = c->agg_core = c->agg_apis = NULL;
    c->valid = false;
}

static void *cache_new(void)
{
    disc_cache *c = fl_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void cache_free(void *p)
{
    disc_cache *c = p;
    cache_clear(c);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* One group's APIVersionDiscovery list (aggregated) and its APIResourceLists. */
static json_t *build_group(const fl_kind **kinds, size_t n, const char *group, json_t *lists, json_t **api_group)
{
    const char **versions;
    size_t nv = group_versions(kinds, n, group, &versions);
    json_t *agg_versions = json_array();
    json_t *gv_entries = json_array();
    for (size_t v = 0; v < nv; v++) {
        const fl_kind **gk;
        size_t m = gv_kinds(kinds, n, group, versions[v], &gk);
        json_t *resources = json_array(), *agg_res = json_array();
        for (size_t i = 0; i < m; i++) {
            add_api_resources(resources, gk[i]);
            json_array_append_new(agg_res, agg_resource(gk[i]));
        }
        free(gk);
        char *gv = group[0] ? fl_asprintf("%s/%s", group, versions[v]) : fl_strdup(versions[v]);
        char *key = fl_asprintf("%s/%s", group, versions[v]);
        json_object_set_new(lists, key,
                            json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                                      "groupVersion", gv, "resources", resources));
        json_array_append_new(gv_entries, json_pack("{s:s, s:s}", "groupVersion", gv, "version", versions[v]));
        json_array_append_new(agg_versions, json_pack("{s:s, s:o, s:s}", "version", versions[v], "resources",
                                                      agg_res, "freshness", "Current"));
        free(gv);
        free(key);
    }
    if (api_group && nv) {
        json_t *pref = fl_json_deep_copy(json_array_get(gv_entries, 0));
        *api_group = json_pack("{s:s, s:o, s:o}", "name", group, "versions", gv_entries, "preferredVersion", pref);
    } else {
        json_decref(gv_entries);
    }
    free(versions);
    json_t *meta = group[0] ? json_pack("{s:s, s:n}", "name", group, "creationTimestamp")
                            : json_pack("{s:n}", "creationTimestamp");
    return json_pack("{s:o, s:o}", "metadata", meta, "versions", agg_versions);
}

static json_t *agg_list(json_t *items)
{
    return json_pack("{s:s, s:s, s:{}, s:o}", "kind", "APIGroupDiscoveryList", "apiVersion",
                     "apidiscovery.k8s.io/v2", "metadata", "items", items);
}

/* Rebuild everything if reg's kind set changed. Caller holds c->lock. */
static void cache_refresh(fl_kindreg *reg, disc_cache *c)
{
    uint64_t gen = fl_kindreg_generation(reg);
    if (c->valid && c->gen == gen)
        return;
    cache_clear(c);
    const fl_kind **kinds;
    size_t n = fl_kindreg_list(reg, &kinds);

    c->lists = json_object();
    c->group_map = json_object();
    json_t *groups = json_array(), *agg_items = json_array();

    c->agg_core = agg_list(json_pack("[o]", build_group(kinds, n, "", c->lists, NULL)));

    for (size_t i = 0; i < n; i++) {
        const char *g = kinds[i]->group;
        if (!g[0] || json_object_get(c->group_map, g))
            continue;
        json_t *api_group = NULL;
        json_array_append_new(agg_items, build_group(kinds, n, g, c->lists, &api_group));
        json_t *with_kind = fl_json_deep_copy(api_group);
        json_object_set_new(with_kind, "kind", json_string("APIGroup"));
        json_object_set_new(with_kind, "apiVersion", json_string("v1"));
        json_object_set_new(c->group_map, g, with_kind);
        json_array_append_new(groups, api_group);
    }
    free(kinds);
    c->groups = json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups);
    c->agg_apis = agg_list(agg_items);
    c->gen = gen;
    c->valid = true;
}

/* Return a new reference to one cached value of reg's documents (NULL stays NULL). */
static json_t *cached(fl_kindreg *reg, json_t *(*pick)(const disc_cache *, const void *), const void *arg)
{
    reg = fl_kindreg_shared(reg);
    disc_cache *c = fl_kindreg_cache(reg, &cache_key, cache_new, cache_free);
    pthread_mutex_lock(&c->lock);
    cache_refresh(reg, c);
    json_t *v = json_incref(pick(c, arg));
    pthread_mutex_unlock(&c->lock);
    return v;
}

static json_t *pick_groups(const disc_cache *c, const void *arg) { return c->groups; }
static json_t *pick_group(const disc_cache *c, const void *arg) { return json_object_get(c->group_map, arg); }
static json_t *pick_list(const disc_cache *c, const void *arg) { return json_object_get(c->lists, arg); }
static json_t *pick_agg_core(const disc_cache *c, const void *arg) { return c->agg_core; }
static json_t *pick_agg_apis(const disc_cache *c, const void *arg) { return c->agg_apis; }

json_t *fl_discovery_core_versions(void)
{
    /* serverAddress is required by strict clients (the Python client checks it); the
     * server may overwrite it with the address the request came in on. */
    return json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                     "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress", "");
}

json_t *fl_discovery_groups(fl_kindreg *reg) { return cached(reg, pick_groups, NULL); }

json_t *fl_discovery_group(fl_kindreg *reg, const char *group)
{
    if (!group || !group[0])
        return NULL;
    return cached(reg, pick_group, group);
}

json_t *fl_discovery_resources(fl_kindreg *reg, const char *group, const char *version)
{
    if (!version)
        return NULL;
    char *key = fl_asprintf("%s/%s", group ? group : "", version);
    json_t *v = cached(reg, pick_list, key);
    free(key);
    return v;
}

json_t *fl_discovery_aggregated(fl_kindreg *reg, int core)
{
    return cached(reg, core ? pick_agg_core : pick_agg_apis, NULL);
}
