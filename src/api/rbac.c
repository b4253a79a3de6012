/* rbac.c - the RBAC authorizer: rule matching, the index of bindings, its rebuild, and
 * ClusterRole aggregation (see rbac.h and docs/internals/auth.md).
 *
 * The index is immutable once built. Readers hold a read lock on the current one while they
 * walk it; a rebuild builds a new index aside and swaps it in under the write lock. What
 * triggers a rebuild is a store watch on "/rbac.authorization.k8s.io/" whose notify callback
 * only sets `dirty` (it runs on the store's publishing thread, which must not wait): the next
 * decision sees the flag, takes the rebuild mutex, drains the watch, lists the four kinds and
 * builds. A write that lands while a build lists sets the flag again, so the next decision
 * rebuilds once more; nothing is lost. So a request made after a RoleBinding's create returned
 * is decided with it, and an idle server does nothing.
 *
 * Layout of an index: ClusterRoles by name and Roles by "ns/name", each with its rules compiled
 * into string arrays; grants sorted by subject key ("u:<user>", "g:<group>"; a ServiceAccount
 * subject is the user system:serviceaccount:<ns>:<name>), each naming the namespace it applies
 * in ("" for ClusterRoleBindings) and the role. A decision looks up the user's key and each
 * group's key (binary search) and tries their rules: a few comparisons per binding that names
 * the caller, whatever the number of bindings in the store. A binding whose role is missing
 * grants nothing, and starts granting when the role appears (the next rebuild). */
#include "api/rbac.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/hash.h"
#include "core/selector.h"
#include "store/store.h"

#define LOG "rbac"
#define RBAC_PREFIX "/" FL_RBAC_GROUP "/"
#define AGG_PASSES 8 /* aggregation chains (admin <- edit <- view) settle in 3 */

/* ---------------------------------------------------------------- compiled rules */

/* A rule's list of strings, each with its hash: a decision compares hashes first (the
 * request's are computed once per decision), so a miss costs an integer compare, not a
 * strcmp. star: the list holds "*". */
typedef struct strs {
    size_t n;
    char **v;
    uint64_t *h;
    bool star;
} strs;

typedef struct crule {
    strs verbs, groups, resources, names, urls;
} crule;

/* One string of the request and its hash. */
typedef struct hkey {
    const char *s;
    uint64_t h;
} hkey;

/* The request's strings a rule is matched against, hashed once per decision. */
typedef struct query {
    const fl_auth_attrs *at;
    hkey verb, group, resource, name;
    hkey with_sub;  /* "resource/sub" when a subresource is asked */
    hkey any_sub;   /* "* /sub" (no space) likewise */
    char buf[2][192];
} query;

static hkey key_of(const char *s)
{
    return (hkey){s, fl_hash_str(s)};
}

static void query_init(query *q, const fl_auth_attrs *at)
{
    q->at = at;
    q->verb = key_of(at->verb);
    q->group = key_of(at->path ? "" : at->group);
    q->resource = key_of(at->path ? "" : at->resource);
    q->name = key_of(at->path ? "" : at->name);
    q->with_sub = q->any_sub = (hkey){NULL, 0};
    if (!at->path && at->subresource[0]) {
        snprintf(q->buf[0], sizeof q->buf[0], "%s/%s", at->resource, at->subresource);
        snprintf(q->buf[1], sizeof q->buf[1], "*/%s", at->subresource);
        q->with_sub = key_of(q->buf[0]);
        q->any_sub = key_of(q->buf[1]);
    }
}

static void strs_init(strs *s, const json_t *arr)
{
    memset(s, 0, sizeof *s);
    size_t n = json_array_size(arr);
    if (!n)
        return;
    s->v = fl_calloc(n, sizeof *s->v);
    s->h = fl_calloc(n, sizeof *s->h);
    for (size_t i = 0; i < n; i++) {
        const char *x = json_string_value(json_array_get(arr, i));
        if (!x)
            continue;
        s->star |= !strcmp(x, "*");
        s->h[s->n] = fl_hash_str(x);
        s->v[s->n++] = fl_strdup(x);
    }
}

static void strs_close(strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    free(s->h);
}

static bool strs_has(const strs *s, hkey k)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->h[i] == k.h && !strcmp(s->v[i], k.s))
            return true;
    return false;
}

static void crule_init(crule *c, const json_t *rule)
{
    strs_init(&c->verbs, json_object_get(rule, "verbs"));
    strs_init(&c->groups, json_object_get(rule, "apiGroups"));
    strs_init(&c->resources, json_object_get(rule, "resources"));
    strs_init(&c->names, json_object_get(rule, "resourceNames"));
    strs_init(&c->urls, json_object_get(rule, "nonResourceURLs"));
}

static void crule_close(crule *c)
{
    strs_close(&c->verbs);
    strs_close(&c->groups);
    strs_close(&c->resources);
    strs_close(&c->names);
    strs_close(&c->urls);
}

static bool url_matches(const strs *urls, const char *path)
{
    for (size_t i = 0; i < urls->n; i++) {
        const char *u = urls->v[i];
        size_t l = strlen(u);
        if (!strcmp(u, "*") || !strcmp(u, path) || (l && u[l - 1] == '*' && !strncmp(u, path, l - 1)))
            return true;
    }
    return false;
}

/* Kubernetes' rule matching: the verb ("*" or listed); for a non-resource request a URL
 * (exact, "*", or a prefix ending in "*"); else the group, the resource - "*", the resource
 * itself when no subresource is asked, "resource/sub" or "* /sub" when one is - and, when the
 * rule lists resourceNames, the name. */
static bool crule_allows(const crule *c, const query *q)
{
    if (!c->verbs.star && !strs_has(&c->verbs, q->verb))
        return false;
    if (q->at->path)
        return url_matches(&c->urls, q->at->path);
    if (!c->groups.star && !strs_has(&c->groups, q->group))
        return false;
    if (!c->resources.star) {
        if (!q->with_sub.s ? !strs_has(&c->resources, q->resource)
                           : !strs_has(&c->resources, q->with_sub) && !strs_has(&c->resources, q->any_sub))
            return false;
    }
    return !c->names.n || strs_has(&c->names, q->name);
}

bool fl_rbac_rule_allows(const json_t *rule, const fl_auth_attrs *at)
{
    crule c;
    query q;
    crule_init(&c, rule);
    query_init(&q, at);
    bool ok = crule_allows(&c, &q);
    crule_close(&c);
    return ok;
}

/* ---------------------------------------------------------------- the index */

typedef struct crole {
    char *key;        /* ClusterRole: name; Role: "ns/name" */
    crule *rules;
    size_t nrules;
    json_t *rules_json; /* the effective rules (aggregated ones filled), for rules reviews */
} crole;

typedef struct grant {
    uint64_t sh;        /* fl_hash_str(subject): grants are sorted by it first */
    char *subject;      /* "u:<user>" or "g:<group>" */
    char *ns;           /* "" for a ClusterRoleBinding */
    const crole *role;
    char *why;          /* `RoleBinding "name/ns" of ClusterRole "r" to User "u"` */
} grant;

typedef struct policy_index {
    crole *croles, *roles;
    size_t ncroles, nroles;
    grant *grants;
    size_t ngrants, gcap;
} policy_index;

static void rindex_free(policy_index *x)
{
    if (!x)
        return;
    crole *sets[2] = {x->croles, x->roles};
    size_t ns[2] = {x->ncroles, x->nroles};
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < ns[s]; i++) {
            for (size_t j = 0; j < sets[s][i].nrules; j++)
                crule_close(&sets[s][i].rules[j]);
            free(sets[s][i].rules);
            free(sets[s][i].key);
            json_decref(sets[s][i].rules_json);
        }
        free(sets[s]);
    }
    for (size_t i = 0; i < x->ngrants; i++) {
        free(x->grants[i].subject);
        free(x->grants[i].ns);
        free(x->grants[i].why);
    }
    free(x->grants);
    free(x);
}

static int crole_cmp(const void *a, const void *b)
{
    return strcmp(((const crole *)a)->key, ((const crole *)b)->key);
}

/* By subject hash, then subject: a lookup compares integers until the hashes meet. */
static int grant_order(uint64_t ha, const char *a, uint64_t hb, const char *b)
{
    return ha < hb ? -1 : ha > hb ? 1 : strcmp(a, b);
}

static int grant_cmp(const void *a, const void *b)
{
    const grant *x = a, *y = b;
    return grant_order(x->sh, x->subject, y->sh, y->subject);
}

static const crole *find_role(const crole *v, size_t n, const char *key)
{
    crole k = {.key = (char *)key};
    return bsearch(&k, v, n, sizeof *v, crole_cmp);
}

/* Index of the first grant of subject, whose hash is h (or ngrants). */
static size_t first_grant(const policy_index *x, uint64_t h, const char *subject)
{
    size_t lo = 0, hi = x->ngrants;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (grant_order(x->grants[mid].sh, x->grants[mid].subject, h, subject) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void crole_set(crole *r, char *key, const json_t *rules)
{
    r->key = key;
    r->nrules = json_array_size(rules);
    r->rules = r->nrules ? fl_calloc(r->nrules, sizeof *r->rules) : NULL;
    for (size_t i = 0; i < r->nrules; i++)
        crule_init(&r->rules[i], json_array_get(rules, i));
    r->rules_json = rules ? json_incref((json_t *)rules) : json_array();
}

/* ---------------------------------------------------------------- reading the store */

typedef struct objs {
    json_t **v;
    size_t n, cap;
} objs;

static bool collect(void *ctx, const char *key, const fl_kv *kv)
{
    (void)key;
    objs *o = ctx;
    json_t *obj = fl_api_decoded(kv->value);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return true;
    }
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->v = fl_realloc(o->v, o->cap * sizeof *o->v);
    }
    o->v[o->n++] = obj;
    return true;
}

static void objs_close(objs *o)
{
    for (size_t i = 0; i < o->n; i++)
        json_decref(o->v[i]);
    free(o->v);
}

static int list_kind(fl_api *api, const char *resource, objs *out)
{
    const fl_kind *k = fl_kindreg_by_resource(api->kinds, FL_RBAC_GROUP, "v1", resource);
    if (!k)
        return FL_ENOTFOUND;
    char *prefix = fl_coll_prefix(k, NULL);
    int64_t rev = 0;
    int rc = fl_store_list(api->store, prefix, NULL, 0, 0, collect, out, &rev, NULL);
    free(prefix);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    const char *x = fl_json_meta(*(json_t *const *)a, "name"), *y = fl_json_meta(*(json_t *const *)b, "name");
    return strcmp(x ? x : "", y ? y : "");
}

/* ---------------------------------------------------------------- aggregation */

typedef struct writeback {
    char *name;
    json_t *rules;
} writeback;

static bool rules_have(const json_t *rules, const json_t *rule)
{
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) if (json_equal(r, rule)) return true;
    return false;
}

/* The effective rules of every ClusterRole in cr (sorted by name): its own, or for one with an
 * aggregationRule the rules of the others its selectors match, in name order without
 * duplicates, repeated until nothing changes (an aggregated role may match another). eff[i] is
 * a new reference. Roles whose stored rules differ from their aggregate go to *wb. */
static void aggregate(const objs *cr, json_t **eff, writeback **wb, size_t *nwb)
{
    fl_labelsel ***sels = fl_calloc(cr->n ? cr->n : 1, sizeof *sels);
    size_t *nsels = fl_calloc(cr->n ? cr->n : 1, sizeof *nsels);
    for (size_t i = 0; i < cr->n; i++) {
        json_t *rules = json_object_get(cr->v[i], "rules");
        eff[i] = json_is_array(rules) ? json_incref(rules) : json_array();
        json_t *ss = json_object_get(json_object_get(cr->v[i], "aggregationRule"), "clusterRoleSelectors");
        size_t n = json_array_size(ss);
        if (!n)
            continue;
        sels[i] = fl_calloc(n, sizeof *sels[i]);
        for (size_t j = 0; j < n; j++) {
            fl_labelsel *s = NULL;
            char *err = NULL;
            if (fl_labelsel_from_json(json_array_get(ss, j), &s, &err) == 0 && !fl_labelsel_empty(s))
                sels[i][nsels[i]++] = s; /* an empty selector would match every role: ignored */
            else
                fl_labelsel_free(s);
            free(err);
        }
    }
    for (int pass = 0; pass < AGG_PASSES; pass++) {
        bool changed = false;
        for (size_t i = 0; i < cr->n; i++) {
            if (!nsels[i])
                continue;
            json_t *agg = json_array();
            for (size_t j = 0; j < cr->n; j++) {
                if (j == i)
                    continue;
                json_t *labels = json_object_get(json_object_get(cr->v[j], "metadata"), "labels");
                bool match = false;
                for (size_t s = 0; s < nsels[i] && !match; s++)
                    match = fl_labelsel_match(sels[i][s], labels);
                size_t k;
                json_t *r;
                if (match)
                    json_array_foreach(eff[j], k, r) if (!rules_have(agg, r)) json_array_append(agg, r);
            }
            if (json_equal(agg, eff[i])) {
                json_decref(agg);
            } else {
                json_decref(eff[i]);
                eff[i] = agg;
                changed = true;
            }
        }
        if (!changed)
            break;
    }
    for (size_t i = 0; i < cr->n; i++) {
        json_t *stored = json_object_get(cr->v[i], "rules");
        bool same = stored ? json_equal(eff[i], stored) : json_array_size(eff[i]) == 0;
        if (nsels[i] && !same) {
            *wb = fl_realloc(*wb, (*nwb + 1) * sizeof **wb);
            (*wb)[*nwb].name = fl_strdup(fl_json_meta(cr->v[i], "name"));
            (*wb)[*nwb].rules = json_incref(eff[i]);
            (*nwb)++;
        }
        for (size_t s = 0; s < nsels[i]; s++)
            fl_labelsel_free(sels[i][s]);
        free(sels[i]);
    }
    free(sels);
    free(nsels);
}

/* ---------------------------------------------------------------- building */

static void add_grant(policy_index *x, const char *subject, const char *ns, const crole *role, const char *why)
{
    if (x->ngrants == x->gcap) {
        x->gcap = x->gcap ? 2 * x->gcap : 64;
        x->grants = fl_realloc(x->grants, x->gcap * sizeof *x->grants);
    }
    grant *g = &x->grants[x->ngrants++];
    g->sh = fl_hash_str(subject);
    g->subject = fl_strdup(subject);
    g->ns = fl_strdup(ns);
    g->role = role;
    g->why = fl_strdup(why);
}

/* The grants of one binding (ns "" for a ClusterRoleBinding). */
static void add_binding(policy_index *x, const json_t *b, const char *ns)
{
    const char *bname = fl_json_meta(b, "name");
    const json_t *ref = json_object_get(b, "roleRef");
    const char *rkind = json_string_value(json_object_get(ref, "kind"));
    const char *rname = json_string_value(json_object_get(ref, "name"));
    if (!bname || !rkind || !rname)
        return;
    const crole *role = NULL;
    if (!strcmp(rkind, "ClusterRole")) {
        role = find_role(x->croles, x->ncroles, rname);
    } else if (!strcmp(rkind, "Role") && ns[0]) {
        char key[600];
        snprintf(key, sizeof key, "%s/%s", ns, rname);
        role = find_role(x->roles, x->nroles, key);
    }
    if (!role || !role->nrules)
        return; /* a binding to a missing role grants nothing */
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(b, "subjects"), i, s) {
        const char *kind = json_string_value(json_object_get(s, "kind"));
        const char *name = json_string_value(json_object_get(s, "name"));
        if (!kind || !name || !name[0])
            continue;
        char subject[FL_AUTH_USER_MAX + 600], why[1400];
        if (!strcmp(kind, "User")) {
            snprintf(subject, sizeof subject, "u:%s", name);
        } else if (!strcmp(kind, "Group")) {
            snprintf(subject, sizeof subject, "g:%s", name);
        } else if (!strcmp(kind, "ServiceAccount")) {
            const char *sns = json_string_value(json_object_get(s, "namespace"));
            if (!sns || !sns[0])
                sns = ns;
            if (!sns[0])
                continue;
            snprintf(subject, sizeof subject, "u:system:serviceaccount:%s:%s", sns, name);
        } else {
            continue;
        }
        if (ns[0])
            snprintf(why, sizeof why, "RoleBinding \"%s/%s\" of %s \"%s\" to %s \"%s\"", bname, ns, rkind, rname, kind,
                     name);
        else
            snprintf(why, sizeof why, "ClusterRoleBinding \"%s\" of ClusterRole \"%s\" to %s \"%s\"", bname, rname,
                     kind, name);
        add_grant(x, subject, ns, role, why);
    }
}

/* A new index from the store; aggregated ClusterRoles whose stored rules are stale go to *wb. */
static policy_index *build(fl_api *api, writeback **wb, size_t *nwb)
{
    objs cr = {0}, ro = {0}, rb = {0}, crb = {0};
    int rc = list_kind(api, "clusterroles", &cr);
    if (!rc)
        rc = list_kind(api, "roles", &ro);
    if (!rc)
        rc = list_kind(api, "rolebindings", &rb);
    if (!rc)
        rc = list_kind(api, "clusterrolebindings", &crb);
    if (rc)
        fl_log(FL_LOG_WARN, LOG, "cannot read the RBAC objects: %s; authorizing with what was read",
               fl_strerror(rc));
    policy_index *x = fl_calloc(1, sizeof *x);
    if (cr.n)
        qsort(cr.v, cr.n, sizeof *cr.v, name_cmp);
    json_t **eff = fl_calloc(cr.n ? cr.n : 1, sizeof *eff);
    aggregate(&cr, eff, wb, nwb);
    x->croles = fl_calloc(cr.n ? cr.n : 1, sizeof *x->croles);
    for (size_t i = 0; i < cr.n; i++) {
        const char *name = fl_json_meta(cr.v[i], "name");
        if (name)
            crole_set(&x->croles[x->ncroles++], fl_strdup(name), eff[i]);
        json_decref(eff[i]);
    }
    free(eff);
    qsort(x->croles, x->ncroles, sizeof *x->croles, crole_cmp);
    x->roles = fl_calloc(ro.n ? ro.n : 1, sizeof *x->roles);
    for (size_t i = 0; i < ro.n; i++) {
        const char *name = fl_json_meta(ro.v[i], "name"), *ns = fl_json_meta(ro.v[i], "namespace");
        json_t *rules = json_object_get(ro.v[i], "rules");
        if (name && ns)
            crole_set(&x->roles[x->nroles++], fl_asprintf("%s/%s", ns, name), json_is_array(rules) ? rules : NULL);
    }
    qsort(x->roles, x->nroles, sizeof *x->roles, crole_cmp);
    for (size_t i = 0; i < crb.n; i++)
        add_binding(x, crb.v[i], "");
    for (size_t i = 0; i < rb.n; i++) {
        const char *ns = fl_json_meta(rb.v[i], "namespace");
        if (ns && ns[0])
            add_binding(x, rb.v[i], ns);
    }
    if (x->ngrants)
        qsort(x->grants, x->ngrants, sizeof *x->grants, grant_cmp);
    objs_close(&cr);
    objs_close(&ro);
    objs_close(&rb);
    objs_close(&crb);
    return x;
}

/* ---------------------------------------------------------------- the authorizer */

struct fl_rbac {
    fl_api *api;
    pthread_mutex_t mu;      /* one rebuild at a time; guards w */
    pthread_rwlock_t lock;   /* guards cur: read to decide, write to swap */
    policy_index *cur;
    fl_watch *w;
    atomic_int dirty;        /* set by the watch's notify: RBAC objects were written */
    atomic_ulong builds;
};

static void on_write(void *ctx)
{
    fl_rbac *rb = ctx;
    atomic_store(&rb->dirty, 1);
}

fl_rbac *fl_rbac_new(fl_api *api)
{
    fl_rbac *rb = fl_calloc(1, sizeof *rb);
    rb->api = api;
    pthread_mutex_init(&rb->mu, NULL);
    pthread_rwlock_init(&rb->lock, NULL);
    atomic_init(&rb->dirty, 1);
    atomic_init(&rb->builds, 0);
    return rb;
}

void fl_rbac_free(fl_rbac *rb)
{
    if (!rb)
        return;
    fl_watch_free(rb->w);
    rindex_free(rb->cur);
    pthread_rwlock_destroy(&rb->lock);
    pthread_mutex_destroy(&rb->mu);
    free(rb);
}

/* Drain the watch (or open it); caller holds mu. A watch that expired or closed is reopened,
 * and the rebuild that follows reads everything anyway. */
static void drain_locked(fl_rbac *rb)
{
    fl_store *s = rb->api->store;
    for (int guard = 0; rb->w && guard < 1000000; guard++) {
        fl_watch_event *ev;
        int rc = fl_watch_next(rb->w, &ev, 0);
        if (rc == 0)
            continue;
        if (rc == FL_ETIMEDOUT)
            return;
        fl_watch_free(rb->w);
        rb->w = NULL;
    }
    if (!rb->w && fl_store_watch(s, RBAC_PREFIX, fl_store_rev(s), &rb->w) == 0)
        fl_watch_set_notify(rb->w, on_write, rb);
    else if (!rb->w)
        atomic_store(&rb->dirty, 1); /* no watch: look again next time */
}

/* Write the aggregated rules back to their ClusterRoles (in process, a merge patch each). */
static void write_back(fl_api *api, writeback *wb, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *patch = json_pack("{s:O}", "rules", wb[i].rules);
        char *body = fl_json_dumps(patch, NULL);
        char *path = fl_asprintf("/apis/%s/v1/clusterroles/%s", FL_RBAC_GROUP, wb[i].name);
        fl_req r;
        memset(&r, 0, sizeof r);
        r.method = "PATCH";
        r.path = path;
        r.content_type = "application/merge-patch+json";
        r.user_agent = "flotilla-clusterrole-aggregation";
        r.body = body;
        r.body_len = strlen(body);
        r.discard = true;
        fl_api_handle(api, &r);
        if (r.code != 200 && r.code != 404)
            fl_log(FL_LOG_WARN, LOG, "cannot write the aggregated rules of ClusterRole %s: %d %s", wb[i].name,
                   r.code, r.resp ? r.resp : "");
        free(r.resp);
        free(r.warnings);
        free(path);
        free(body);
        json_decref(patch);
        free(wb[i].name);
        json_decref(wb[i].rules);
    }
    free(wb);
}

/* Rebuild the index when RBAC objects were written since the last build. */
static void refresh(fl_rbac *rb)
{
    if (!atomic_load(&rb->dirty) || !rb->api->store)
        return;
    pthread_mutex_lock(&rb->mu);
    if (atomic_exchange(&rb->dirty, 0)) {
        drain_locked(rb);
        writeback *wb = NULL;
        size_t nwb = 0;
        policy_index *x = build(rb->api, &wb, &nwb);
        pthread_rwlock_wrlock(&rb->lock);
        policy_index *old = rb->cur;
        rb->cur = x;
        pthread_rwlock_unlock(&rb->lock);
        rindex_free(old);
        atomic_fetch_add(&rb->builds, 1);
        /* the index has the aggregate already; the stored objects follow (and their write
         * sets dirty again: the rebuild that causes finds nothing more to write) */
        write_back(rb->api, wb, nwb);
    }
    pthread_mutex_unlock(&rb->mu);
}

void fl_rbac_sync(fl_rbac *rb)
{
    refresh(rb);
}

unsigned long fl_rbac_builds(fl_rbac *rb)
{
    return atomic_load(&rb->builds);
}

/* "u:<user>" or "g:<group>" into out (FL_AUTH_USER_MAX + 2 bytes; identities are bounded). */
static void subject_key(char *out, char kind, const char *name)
{
    size_t n = strnlen(name, FL_AUTH_USER_MAX - 1);
    out[0] = kind;
    out[1] = ':';
    memcpy(out + 2, name, n);
    out[n + 2] = 0;
}

/* Does a grant of subject allow the query? Caller holds the read lock. */
static bool subject_allows(const policy_index *x, const char *subject, const query *q, char *why, size_t cap)
{
    const fl_auth_attrs *at = q->at;
    uint64_t h = fl_hash_str(subject);
    for (size_t i = first_grant(x, h, subject);
         i < x->ngrants && x->grants[i].sh == h && !strcmp(x->grants[i].subject, subject); i++) {
        const grant *g = &x->grants[i];
        if (g->ns[0] && (at->path || strcmp(g->ns, at->ns)))
            continue; /* a RoleBinding grants in its namespace only, and no URLs */
        for (size_t j = 0; j < g->role->nrules; j++) {
            if (crule_allows(&g->role->rules[j], q)) {
                if (why)
                    snprintf(why, cap, "RBAC: allowed by %s", g->why);
                return true;
            }
        }
    }
    return false;
}

bool fl_rbac_allowed(fl_rbac *rb, const fl_auth_attrs *at, char *why, size_t cap)
{
    if (why && cap)
        why[0] = 0;
    refresh(rb);
    char subject[FL_AUTH_USER_MAX + 2];
    query q;
    query_init(&q, at);
    bool ok = false;
    pthread_rwlock_rdlock(&rb->lock);
    if (rb->cur) {
        subject_key(subject, 'u', at->who->user);
        ok = subject_allows(rb->cur, subject, &q, why, cap);
        for (size_t i = 0; !ok && i < at->who->ngroups; i++) {
            subject_key(subject, 'g', at->who->groups[i]);
            ok = subject_allows(rb->cur, subject, &q, why, cap);
        }
    }
    pthread_rwlock_unlock(&rb->lock);
    return ok;
}

/* ---------------------------------------------------------------- rules review */

static json_t *copy_member(const json_t *rule, const char *key)
{
    json_t *v = json_object_get(rule, key);
    return json_is_array(v) ? json_deep_copy(v) : json_array();
}

static void add_rules(json_t *res, json_t *nonres, const crole *role, bool cluster_wide)
{
    size_t i;
    json_t *r;
    json_array_foreach(role->rules_json, i, r) {
        json_t *urls = json_object_get(r, "nonResourceURLs");
        json_t *out;
        if (json_array_size(urls)) {
            if (!cluster_wide)
                continue;
            out = json_pack("{s:o, s:o}", "verbs", copy_member(r, "verbs"), "nonResourceURLs", copy_member(r, "nonResourceURLs"));
            if (!rules_have(nonres, out))
                json_array_append(nonres, out);
        } else {
            out = json_pack("{s:o, s:o, s:o}", "verbs", copy_member(r, "verbs"), "apiGroups", copy_member(r, "apiGroups"),
                            "resources", copy_member(r, "resources"));
            if (json_array_size(json_object_get(r, "resourceNames")))
                json_object_set_new(out, "resourceNames", copy_member(r, "resourceNames"));
            if (!rules_have(res, out))
                json_array_append(res, out);
        }
        json_decref(out);
    }
}

static void subject_rules(const policy_index *x, const char *subject, const char *ns, json_t *res, json_t *nonres)
{
    uint64_t h = fl_hash_str(subject);
    for (size_t i = first_grant(x, h, subject);
         i < x->ngrants && x->grants[i].sh == h && !strcmp(x->grants[i].subject, subject); i++) {
        const grant *g = &x->grants[i];
        if (g->ns[0] && strcmp(g->ns, ns))
            continue;
        add_rules(res, nonres, g->role, !g->ns[0]);
    }
}

json_t *fl_rbac_rules(fl_rbac *rb, const fl_identity *who, const char *ns)
{
    refresh(rb);
    json_t *res = json_array(), *nonres = json_array();
    char subject[FL_AUTH_USER_MAX + 2];
    pthread_rwlock_rdlock(&rb->lock);
    if (rb->cur) {
        snprintf(subject, sizeof subject, "u:%s", who->user);
        subject_rules(rb->cur, subject, ns ? ns : "", res, nonres);
        for (size_t i = 0; i < who->ngroups; i++) {
            snprintf(subject, sizeof subject, "g:%s", who->groups[i]);
            subject_rules(rb->cur, subject, ns ? ns : "", res, nonres);
        }
    }
    pthread_rwlock_unlock(&rb->lock);
    return json_pack("{s:o, s:o, s:b}", "resourceRules", res, "nonResourceRules", nonres, "incomplete", 0);
}
