/* sim.c - the workload simulator: status for the workloads of simulated member clusters.
 *
 * DESIGN. One thread owns all mutable state. Each cluster has one store watch on "/"
 * (every key of that cluster), polled without blocking once per tick; the keys of the
 * kinds we simulate that changed are collected, de-duplicated, and each is evaluated once
 * against its current stored value (fl_store_get, from memory). An evaluation computes
 * the status a real cluster would report now, writes it through the API only if it
 * differs from the stored one, and says when the object next needs a look (a replica
 * becomes ready, a Job completes, a progress deadline passes). Objects that still move
 * keep a small record in their cluster's hash table and sit in one min-heap of due times;
 * converged objects keep nothing. So an idle cluster costs a struct, its name and an
 * empty watch, and a tick costs one non-blocking fl_watch_next per cluster plus the work
 * that is actually due.
 *
 * Our own writes come back as watch events; evaluating them finds nothing to change,
 * because the status is a function of the object and the time (with timestamps kept
 * from the stored status while the state they describe holds). A write that loses the
 * compare-and-swap (409) is dropped: the change that beat it has an event of its own.
 *
 * Timing state is rebuilt from stored status when a record is missing (a restart, a
 * watch that expired and was re-listed): readiness continues from status.readyReplicas,
 * a Job from status.startTime, a progress deadline from the Progressing condition's
 * lastUpdateTime. */
#include "member/sim.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define DRAIN_MAX 4096 /* events taken from one cluster per tick; the rest wait for the next */
#define SIM_NICE 10 /* the simulator thread's nice value (sim_main) */

enum sim_kind { SK_NONE = -1, SK_DEPLOY, SK_RS, SK_STS, SK_DS, SK_JOB, SK_POD, SK_COUNT };

/* The kinds we simulate: store prefix pieces and the API path pieces of each. */
static const struct {
    const char *group;    /* store key segment ("core" for the core group) */
    const char *resource;
} KINDS[SK_COUNT] = {
    [SK_DEPLOY] = {"apps", "deployments"}, [SK_RS] = {"apps", "replicasets"},
    [SK_STS] = {"apps", "statefulsets"},   [SK_DS] = {"apps", "daemonsets"},
    [SK_JOB] = {"batch", "jobs"},          [SK_POD] = {"core", "pods"},
};

/* A converging object: timing state, its place in the heap. */
typedef struct sim_obj {
    struct sim_obj *hnext;      /* cluster hash chain */
    struct sim_cluster *c;
    size_t heap_i;              /* index in fl_sim.heap, SIZE_MAX when not queued */
    int64_t due;                /* monotonic ms at which to evaluate again */
    int64_t since;              /* growth: monotonic ms at which `base` replicas were ready */
    int64_t start;              /* Job: monotonic ms at which it started; 0 = unknown */
    int32_t base, target;       /* growth: ready count at `since`, and the count aimed at */
    bool growing;
    uint32_t hash;
    char key[];
} sim_obj;

typedef struct sim_cluster {
    char *name;
    fl_api *api;
    fl_watch *w;                /* NULL: (re-)list before following events */
    bool dead;                  /* the store closed under us: ignore from now on */
    sim_obj **tab;              /* hash of converging objects (NULL until the first) */
    size_t tabcap, nobj;
    uint32_t next_node;         /* round-robin scheduling cursor */
    uint32_t next_ip;           /* pod IP allocator */
} sim_cluster;

struct fl_sim {
    fl_sim_config cfg;
    char *node_cpu, *node_memory, *node_pods;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC; signalled on add and stop */
    atomic_bool stop;
    /* under mu */
    sim_cluster **pending;
    size_t npending, cappending;
    char **names;               /* every cluster ever added, for FL_EEXIST */
    size_t nnames, capnames;
    /* owned by the thread */
    sim_cluster **cl;
    size_t ncl, capcl;
    sim_obj **heap;
    size_t nheap, capheap;
    atomic_uint_fast64_t writes;
};

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fmt_time(time_t t, char out[32])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* RFC 3339 ("2024-05-01T10:00:00Z", fractional seconds and offsets tolerated as Z) to
 * seconds since the epoch; -1 if unparsable. */
static time_t parse_time(const char *s)
{
    if (!s)
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    return timegm(&tm);
}

static uint32_t fnv1a(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 16777619u;
    }
    return h;
}

/* A pod-template-hash-like suffix: 10 characters from Kubernetes' safe alphabet. */
static void template_hash(const json_t *tmpl, char out[11])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    size_t len;
    char *s = fl_json_dumps(tmpl ? tmpl : json_null(), &len);
    uint64_t h = ((uint64_t)fnv1a(s, len) << 32) | fnv1a(s, len / 2);
    free(s);
    for (int i = 0; i < 10; i++) {
        out[i] = alphabet[h % (sizeof alphabet - 1)];
        h /= sizeof alphabet - 1;
    }
    out[10] = 0;
}

/* Walk a dotted path of object keys. Borrowed reference or NULL. */
static json_t *jget(const json_t *o, const char *path)
{
    char seg[64];
    const json_t *cur = o;
    while (cur && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, path, n);
        seg[n] = 0;
        cur = json_object_get(cur, seg);
        path += n;
        if (*path == '.')
            path++;
    }
    return (json_t *)cur;
}

static json_int_t jint(const json_t *o, const char *path, json_int_t dflt)
{
    json_t *v = jget(o, path);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const char *jstr(const json_t *o, const char *path)
{
    return json_string_value(jget(o, path));
}

static const char *str_or(const char *s, const char *dflt)
{
    return s ? s : dflt;
}

static const char *jstr_or(const json_t *o, const char *path, const char *dflt)
{
    return str_or(jstr(o, path), dflt);
}

/* Set an integer field that Kubernetes marks omitempty: absent when zero. */
static void set_nz(json_t *o, const char *k, json_int_t v)
{
    if (v)
        json_object_set_new(o, k, json_integer(v));
}

/* ------------------------------------------------------------------ */
/* images and quantities                                                */
/* ------------------------------------------------------------------ */

bool fl_sim_image_is_fake(const char *image)
{
    if (!image || !*image)
        return false;
    size_t len = strcspn(image, "@");          /* drop the digest */
    const char *first_end = memchr(image, '/', len);
    /* first component: a registry ("fake.io", "fake:5000") or a path ("fake/nginx") */
    if (first_end) {
        size_t n = (size_t)(first_end - image);
        size_t host = strcspn(image, ":.");   /* up to a port or the first dot */
        if (host > n)
            host = n;
        if (host == 4 && !strncmp(image, "fake", 4))
            return true;
    }
    /* image name: the last component without its tag */
    const char *name = image;
    for (size_t i = 0; i < len; i++)
        if (image[i] == '/')
            name = image + i + 1;
    size_t nlen = (size_t)(image + len - name);
    const char *colon = memchr(name, ':', nlen);
    if (colon)
        nlen = (size_t)(colon - name);
    return nlen == 4 && !strncmp(name, "fake", 4);
}

static bool containers_fake(const json_t *list)
{
    size_t i;
    json_t *ct;
    json_array_foreach(list, i, ct) if (fl_sim_image_is_fake(json_string_value(json_object_get(ct, "image")))) return true;
    return false;
}

static bool podspec_fake(const json_t *ps)
{
    return containers_fake(json_object_get(ps, "containers")) || containers_fake(json_object_get(ps, "initContainers"));
}

int fl_sim_parse_quantity(const char *s, int64_t scale, int64_t *out)
{
    *out = 0;
    if (!s || !*s || isspace((unsigned char)*s))
        return FL_EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v))
        return FL_EINVAL;
    static const struct {
        const char *suf;
        double mult;
    } sufs[] = {{"", 1},       {"n", 1e-9},  {"u", 1e-6},  {"m", 1e-3},  {"k", 1e3},   {"M", 1e6},
                {"G", 1e9},    {"T", 1e12},  {"P", 1e15},  {"E", 1e18},  {"Ki", 1024.0},
                {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
                {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}};
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++) {
        if (strcmp(end, sufs[i].suf))
            continue;
        double r = ceil(v * sufs[i].mult * (double)scale - 1e-9);
        if (r > 9.2e18 || r < -9.2e18)
            return FL_EINVAL;
        *out = (int64_t)r;
        return 0;
    }
    return FL_EINVAL;
}

/* A container's request for res ("cpu", "memory"), defaulting to its limit. */
static int64_t ct_request(const json_t *ct, const char *res, int64_t scale)
{
    json_t *r = json_object_get(ct, "resources");
    json_t *q = json_object_get(json_object_get(r, "requests"), res);
    if (!q)
        q = json_object_get(json_object_get(r, "limits"), res);
    int64_t v = 0;
    if (json_is_string(q))
        fl_sim_parse_quantity(json_string_value(q), scale, &v);
    else if (json_is_number(q))
        v = (int64_t)ceil(json_number_value(q) * (double)scale);
    return v;
}

/* Effective requests of one pod: app containers summed, raised to any larger init container. */
static void pod_requests(const json_t *ps, int64_t *cpu_m, int64_t *mem)
{
    int64_t c = 0, m = 0;
    size_t i;
    json_t *ct;
    json_array_foreach(json_object_get(ps, "containers"), i, ct) {
        c += ct_request(ct, "cpu", 1000);
        m += ct_request(ct, "memory", 1);
    }
    json_array_foreach(json_object_get(ps, "initContainers"), i, ct) {
        int64_t ic = ct_request(ct, "cpu", 1000), im = ct_request(ct, "memory", 1);
        if (ic > c)
            c = ic;
        if (im > m)
            m = im;
    }
    *cpu_m = c;
    *mem = m;
}

/* ------------------------------------------------------------------ */
/* keys and API calls                                                   */
/* ------------------------------------------------------------------ */

typedef struct sim_ref {
    enum sim_kind kind;
    char ns[254], name[254];
} sim_ref;

/* "/apps/deployments/<ns>/<name>" -> kind, namespace, name. SK_NONE for other keys. */
static enum sim_kind parse_key(const char *key, sim_ref *r)
{
    r->kind = SK_NONE;
    for (int k = 0; k < SK_COUNT; k++) {
        size_t gl = strlen(KINDS[k].group), rl = strlen(KINDS[k].resource);
        if (key[0] != '/' || strncmp(key + 1, KINDS[k].group, gl) || key[1 + gl] != '/' ||
            strncmp(key + 2 + gl, KINDS[k].resource, rl) || key[2 + gl + rl] != '/')
            continue;
        const char *ns = key + 3 + gl + rl, *slash = strchr(ns, '/');
        if (!slash || (size_t)(slash - ns) >= sizeof r->ns || strlen(slash + 1) >= sizeof r->name ||
            !slash[1] || strchr(slash + 1, '/'))
            return SK_NONE;
        memcpy(r->ns, ns, (size_t)(slash - ns));
        r->ns[slash - ns] = 0;
        strcpy(r->name, slash + 1);
        r->kind = (enum sim_kind)k;
        return r->kind;
    }
    return SK_NONE;
}

static char *obj_path(const sim_ref *r, const char *sub)
{
    const char *g = KINDS[r->kind].group, *res = KINDS[r->kind].resource;
    if (!strcmp(g, "core"))
        return fl_asprintf("/api/v1/namespaces/%s/%s/%s%s%s", r->ns, res, r->name, sub ? "/" : "", sub ? sub : "");
    return fl_asprintf("/apis/%s/v1/namespaces/%s/%s/%s%s%s", g, r->ns, res, r->name, sub ? "/" : "",
                       sub ? sub : "");
}

/* A request through the API layer as our field manager (q holds the query it points at). */
static void req_init(fl_req *r, fl_kvpair *q, const char *method, const char *path, const char *ctype)
{
    q->key = (char *)"fieldManager";
    q->value = (char *)FL_SIM_FIELD_MANAGER;
    memset(r, 0, sizeof *r);
    r->method = method;
    r->path = path;
    r->query = q;
    r->nquery = 1;
    r->content_type = ctype;
    r->accept = "application/json";
    r->user_agent = FL_SIM_FIELD_MANAGER;
}

/* Log an answer we did not expect (a 409 or 404 is a race an event will settle), then free
 * what the request holds. Returns its HTTP code. */
static int req_done(fl_req *r)
{
    if (r->code / 100 != 2 && r->code != 409 && r->code != 404)
        fl_log(FL_LOG_WARN, "member-sim", "%s %s: HTTP %d %.300s", r->method, r->path, r->code,
               r->resp ? r->resp : "");
    if (r->stream)
        fl_api_stream_free(r->stream);
    free(r->resp);
    free(r->warnings);
    return r->code;
}

/* One request with a JSON body (or none). Returns the HTTP code; *out (may be NULL) gets the
 * decoded 2xx response body (new reference) or NULL. */
static int api_call(fl_api *api, const char *method, const char *path, const char *ctype, const json_t *body,
                    json_t **out)
{
    fl_kvpair q;
    fl_req r;
    req_init(&r, &q, method, path, ctype);
    size_t blen = 0;
    char *b = body ? fl_json_dumps(body, &blen) : NULL;
    r.body = b;
    r.body_len = blen;
    fl_api_handle(api, &r);
    if (out)
        *out = (r.code / 100 == 2 && r.resp) ? fl_json_load(r.resp, r.resp_len) : NULL;
    free(b);
    return req_done(&r);
}

/* Merge-patch obj (or its /status) with {metadata.resourceVersion pinned, field: patch}.
 * Takes the reference to patch. Returns the HTTP code; *out as api_call. */
static int patch_obj(fl_sim *s, sim_cluster *c, const sim_ref *r, const char *sub, const json_t *obj,
                     const char *field, json_t *patch, json_t **out)
{
    json_t *body = json_object();
    const char *rv = jstr(obj, "metadata.resourceVersion");
    if (rv)
        json_object_set_new(body, "metadata", json_pack("{ss}", "resourceVersion", rv));
    json_object_set_new(body, field, patch);
    char *path = obj_path(r, sub);
    int code = api_call(c->api, "PATCH", path, "application/merge-patch+json", body, out);
    if (code == 200)
        atomic_fetch_add(&s->writes, 1);
    else
        fl_log(FL_LOG_DEBUG, "member-sim", "%s: PATCH %s: HTTP %d", c->name, path, code);
    free(path);
    json_decref(body);
    return code;
}

/* Write want as obj's status: an in-process PUT of /status pinned to obj's resourceVersion,
 * the same write as a merge patch from the stored status to want, for less. The body is
 * handed over: a top level and metadata of its own, the rest shared with obj (read-only, as
 * the API keeps it), so that the API neither copies nor compares again what did not change.
 * Takes the reference to want. Returns the HTTP code. */
static int put_status(fl_sim *s, sim_cluster *c, const sim_ref *r, const json_t *obj, json_t *want)
{
    json_t *body = fl_json_shallow_copy(obj);
    json_object_set_new(body, "metadata", fl_json_shallow_copy(json_object_get(obj, "metadata")));
    json_object_set_new(body, "status", want);
    char *path = obj_path(r, "status");
    fl_kvpair q;
    fl_req req;
    req_init(&req, &q, "PUT", path, "application/json");
    req.body_obj = body;
    req.body_given = true;
    req.discard = true;
    fl_api_handle(c->api, &req);
    if (req.code == 200)
        atomic_fetch_add(&s->writes, 1);
    int code = req_done(&req);
    free(path);
    json_decref(body);
    return code;
}

/* ------------------------------------------------------------------ */
/* converging objects: hash per cluster, one heap of due times          */
/* ------------------------------------------------------------------ */

static sim_obj *obj_find(sim_cluster *c, const char *key)
{
    if (!c->tab)
        return NULL;
    uint32_t h = fnv1a(key, strlen(key));
    for (sim_obj *o = c->tab[h & (c->tabcap - 1)]; o; o = o->hnext)
        if (o->hash == h && !strcmp(o->key, key))
            return o;
    return NULL;
}

static sim_obj *obj_get(sim_cluster *c, const char *key)
{
    sim_obj *o = obj_find(c, key);
    if (o)
        return o;
    if (c->nobj + 1 > c->tabcap) {
        size_t ncap = c->tabcap ? c->tabcap * 2 : 8;
        sim_obj **nt = fl_calloc(ncap, sizeof *nt);
        for (size_t i = 0; i < c->tabcap; i++)
            for (sim_obj *p = c->tab[i], *next; p; p = next) {
                next = p->hnext;
                p->hnext = nt[p->hash & (ncap - 1)];
                nt[p->hash & (ncap - 1)] = p;
            }
        free(c->tab);
        c->tab = nt;
        c->tabcap = ncap;
    }
    size_t kl = strlen(key);
    o = fl_calloc(1, sizeof *o + kl + 1);
    memcpy(o->key, key, kl + 1);
    o->hash = fnv1a(key, kl);
    o->c = c;
    o->heap_i = SIZE_MAX;
    o->hnext = c->tab[o->hash & (c->tabcap - 1)];
    c->tab[o->hash & (c->tabcap - 1)] = o;
    c->nobj++;
    return o;
}

static void heap_swap(fl_sim *s, size_t a, size_t b)
{
    sim_obj *t = s->heap[a];
    s->heap[a] = s->heap[b];
    s->heap[b] = t;
    s->heap[a]->heap_i = a;
    s->heap[b]->heap_i = b;
}

static void heap_fix(fl_sim *s, size_t i)
{
    while (i > 0 && s->heap[(i - 1) / 2]->due > s->heap[i]->due) {
        heap_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < s->nheap && s->heap[l]->due < s->heap[m]->due)
            m = l;
        if (l + 1 < s->nheap && s->heap[l + 1]->due < s->heap[m]->due)
            m = l + 1;
        if (m == i)
            return;
        heap_swap(s, i, m);
        i = m;
    }
}

static void heap_remove(fl_sim *s, sim_obj *o)
{
    size_t i = o->heap_i;
    if (i == SIZE_MAX)
        return;
    o->heap_i = SIZE_MAX;
    s->nheap--;
    if (i != s->nheap) {
        s->heap[i] = s->heap[s->nheap];
        s->heap[i]->heap_i = i;
        heap_fix(s, i);
    }
}

static void schedule(fl_sim *s, sim_obj *o, int64_t due)
{
    o->due = due;
    if (o->heap_i == SIZE_MAX) {
        if (s->nheap == s->capheap) {
            s->capheap = s->capheap ? s->capheap * 2 : 64;
            s->heap = fl_realloc(s->heap, s->capheap * sizeof *s->heap);
        }
        o->heap_i = s->nheap;
        s->heap[s->nheap++] = o;
    }
    heap_fix(s, o->heap_i);
}

static void obj_forget(fl_sim *s, sim_cluster *c, const char *key)
{
    if (!c->tab)
        return;
    uint32_t h = fnv1a(key, strlen(key));
    for (sim_obj **pp = &c->tab[h & (c->tabcap - 1)]; *pp; pp = &(*pp)->hnext) {
        sim_obj *o = *pp;
        if (o->hash == h && !strcmp(o->key, key)) {
            *pp = o->hnext;
            heap_remove(s, o);
            c->nobj--;
            free(o);
            return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* status computation                                                   */
/* ------------------------------------------------------------------ */

/* One evaluation of one object. */
typedef struct sim_eval {
    fl_sim *s;
    sim_cluster *c;
    const char *key;
    const sim_ref *ref;
    json_t *obj;            /* the stored object (owned) */
    int64_t now;            /* monotonic ms */
    time_t wall;            /* seconds since the epoch */
    char nows[32];          /* wall as RFC 3339 */
    int64_t due;            /* out: next look (monotonic ms), 0 = converged */
} sim_eval;

static void want_due(sim_eval *x, int64_t due)
{
    if (due > 0 && (x->due == 0 || due < x->due))
        x->due = due;
}

/* Ready replicas now for a workload aiming at `target` whose status says `stored` are
 * ready. Shrinking is immediate; growth runs at ready_per_second from the moment we first
 * saw the shortfall (or the target changed), and schedules the next step. */
static int32_t grow(sim_eval *x, int32_t stored, int32_t target)
{
    double rate = x->s->cfg.ready_per_second;
    if (stored >= target || rate < 0)
        return target;
    sim_obj *o = obj_get(x->c, x->key);
    if (!o->growing || o->target != target || stored < o->base) {
        o->growing = true;
        o->base = stored;
        o->target = target;
        o->since = x->now;
    }
    int64_t n = o->base + (int64_t)floor((double)(x->now - o->since) * rate / 1000.0);
    if (n >= target) {
        o->growing = false;
        return target;
    }
    if (n < stored)
        n = stored;
    /* the next replica's time, but at most one write per object per tick: at high rates a
     * step covers several replicas (the count comes from elapsed time, not from steps) */
    int64_t next = o->since + (int64_t)ceil((double)(n + 1 - o->base) * 1000.0 / rate);
    if (next < x->now + x->s->cfg.tick_ms)
        next = x->now + x->s->cfg.tick_ms;
    want_due(x, next);
    return (int32_t)n;
}

enum { COND_DEPLOY, COND_POD, COND_JOB };

/* A condition, keeping lastTransitionTime while status holds and the other timestamps
 * while status, reason and message hold (and, for Deployments, no progress was made). */
static json_t *mk_cond(const json_t *old_conds, int style, const char *type, const char *status, const char *reason,
                       const char *message, const char *now, bool progress)
{
    const json_t *old = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(old_conds, i, c) if (!strcmp(jstr_or(c, "type", ""), type)) old = c;
    bool same_status = old && !strcmp(jstr_or(old, "status", ""), status);
    bool same = same_status && !strcmp(jstr_or(old, "reason", ""), str_or(reason, "")) &&
                !strcmp(jstr_or(old, "message", ""), str_or(message, ""));
    const char *ltt = same_status && jstr(old, "lastTransitionTime") ? jstr(old, "lastTransitionTime") : now;
    json_t *out = json_object();
    json_object_set_new(out, "type", json_string(type));
    json_object_set_new(out, "status", json_string(status));
    if (style == COND_DEPLOY) {
        const char *lut = same && !progress && jstr(old, "lastUpdateTime") ? jstr(old, "lastUpdateTime") : now;
        json_object_set_new(out, "lastUpdateTime", json_string(lut));
    } else if (style == COND_POD) {
        json_object_set_new(out, "lastProbeTime", json_null());
    } else {
        const char *lpt = same && jstr(old, "lastProbeTime") ? jstr(old, "lastProbeTime") : now;
        json_object_set_new(out, "lastProbeTime", json_string(lpt));
    }
    json_object_set_new(out, "lastTransitionTime", json_string(ltt));
    if (reason)
        json_object_set_new(out, "reason", json_string(reason));
    if (message)
        json_object_set_new(out, "message", json_string(message));
    return out;
}

/* Deployment's maxUnavailable resolved against replicas, as the deployment controller does. */
static int32_t max_unavailable(const json_t *spec, int32_t replicas)
{
    const json_t *strat = json_object_get(spec, "strategy");
    const char *type = jstr(strat, "type");
    if (type && !strcmp(type, "Recreate"))
        return 0;
    const json_t *ru = json_object_get(strat, "rollingUpdate");
    json_int_t mu = 0, ms = 0;
    const json_t *vals[2] = {json_object_get(ru, "maxUnavailable"), json_object_get(ru, "maxSurge")};
    const char *dflt[2] = {"25%", "25%"};
    json_int_t *outs[2] = {&mu, &ms};
    for (int i = 0; i < 2; i++) {
        const json_t *v = vals[i];
        if (json_is_integer(v)) {
            *outs[i] = json_integer_value(v);
            continue;
        }
        const char *str = json_is_string(v) ? json_string_value(v) : dflt[i];
        long pct = strtol(str, NULL, 10);
        if (strchr(str, '%'))  /* maxUnavailable rounds down, maxSurge up */
            *outs[i] = i == 0 ? pct * replicas / 100 : (pct * replicas + 99) / 100;
        else
            *outs[i] = pct;
    }
    if (mu == 0 && ms == 0)
        mu = 1;
    if (mu > replicas)
        mu = replicas;
    return mu < 0 ? 0 : (int32_t)mu;
}

static json_t *status_deployment(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    int32_t replicas = (int32_t)jint(spec, "replicas", 1);
    json_int_t gen = jint(x->obj, "metadata.generation", 1);
    bool fake = podspec_fake(jget(spec, "template.spec"));
    int32_t stored = (int32_t)jint(st, "readyReplicas", 0);
    int32_t ready = fake ? 0 : grow(x, stored, replicas);
    bool progress = ready != stored || jint(st, "observedGeneration", 0) != gen ||
                    jint(st, "replicas", 0) != replicas || !st;
    bool complete = !fake && ready >= replicas;
    const json_t *oc = json_object_get(st, "conditions");

    char hash[11], msg[600];
    template_hash(json_object_get(spec, "template"), hash);
    json_t *conds = json_array();
    bool avail = ready >= replicas - max_unavailable(spec, replicas);
    json_array_append_new(conds, mk_cond(oc, COND_DEPLOY, "Available", avail ? "True" : "False",
                                         avail ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                                         avail ? "Deployment has minimum availability."
                                               : "Deployment does not have minimum availability.",
                                         x->nows, false));
    const char *pst = "True", *preason;
    if (complete) {
        preason = "NewReplicaSetAvailable";
        snprintf(msg, sizeof msg, "ReplicaSet \"%s-%s\" has successfully progressed.", x->ref->name, hash);
    } else if (json_is_true(json_object_get(spec, "paused"))) {
        pst = "Unknown";
        preason = "DeploymentPaused";
        snprintf(msg, sizeof msg, "Deployment is paused");
    } else {
        /* no progress since the Progressing condition's lastUpdateTime: past the deadline? */
        json_int_t deadline = x->s->cfg.progress_deadline_override_s > 0
                                  ? x->s->cfg.progress_deadline_override_s
                                  : jint(spec, "progressDeadlineSeconds", 600);
        const json_t *old = NULL;
        size_t i;
        json_t *c;
        json_array_foreach(oc, i, c) if (!strcmp(jstr_or(c, "type", ""), "Progressing")) old = c;
        time_t last = progress ? -1 : parse_time(jstr(old, "lastUpdateTime"));
        if (last < 0)
            last = x->wall;
        bool was_exceeded = !progress && old && !strcmp(jstr_or(old, "reason", ""), "ProgressDeadlineExceeded");
        if (was_exceeded || x->wall - last >= deadline) {
            pst = "False";
            preason = "ProgressDeadlineExceeded";
            snprintf(msg, sizeof msg, "ReplicaSet \"%s-%s\" has timed out progressing.", x->ref->name, hash);
        } else {
            preason = "ReplicaSetUpdated";
            snprintf(msg, sizeof msg, "ReplicaSet \"%s-%s\" is progressing.", x->ref->name, hash);
            /* look again just after the deadline (timestamps have whole seconds) */
            want_due(x, x->now + (int64_t)(last + deadline - x->wall) * 1000 + 20);
        }
    }
    json_array_append_new(conds, mk_cond(oc, COND_DEPLOY, "Progressing", pst, preason, msg, x->nows, progress));

    json_t *out = json_object();
    json_object_set_new(out, "observedGeneration", json_integer(gen));
    set_nz(out, "replicas", replicas);
    set_nz(out, "updatedReplicas", replicas);
    set_nz(out, "readyReplicas", ready);
    set_nz(out, "availableReplicas", ready);
    set_nz(out, "unavailableReplicas", replicas - ready);
    json_object_set_new(out, "conditions", conds);
    return out;
}

static json_t *status_replicaset(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    int32_t replicas = (int32_t)jint(spec, "replicas", 1);
    bool fake = podspec_fake(jget(spec, "template.spec"));
    int32_t ready = fake ? 0 : grow(x, (int32_t)jint(st, "readyReplicas", 0), replicas);
    json_t *out = json_object();
    json_object_set_new(out, "replicas", json_integer(replicas));
    set_nz(out, "fullyLabeledReplicas", replicas);
    set_nz(out, "readyReplicas", ready);
    set_nz(out, "availableReplicas", ready);
    json_object_set_new(out, "observedGeneration", json_integer(jint(x->obj, "metadata.generation", 1)));
    return out;
}

static json_t *status_statefulset(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    int32_t replicas = (int32_t)jint(spec, "replicas", 1);
    bool fake = podspec_fake(jget(spec, "template.spec"));
    int32_t ready = fake ? 0 : grow(x, (int32_t)jint(st, "readyReplicas", 0), replicas);
    char hash[11], rev[600];
    template_hash(json_object_get(spec, "template"), hash);
    snprintf(rev, sizeof rev, "%s-%s", x->ref->name, hash);
    json_t *out = json_object();
    json_object_set_new(out, "observedGeneration", json_integer(jint(x->obj, "metadata.generation", 1)));
    json_object_set_new(out, "replicas", json_integer(replicas));
    set_nz(out, "readyReplicas", ready);
    set_nz(out, "currentReplicas", replicas);
    set_nz(out, "updatedReplicas", replicas);
    json_object_set_new(out, "currentRevision", json_string(rev));
    json_object_set_new(out, "updateRevision", json_string(rev));
    json_object_set_new(out, "collisionCount", json_integer(0));
    json_object_set_new(out, "availableReplicas", json_integer(ready));
    return out;
}

/* Nodes of the cluster that a pod with this nodeSelector may run on. */
typedef struct node_scan {
    const json_t *selector;
    bool skip_unschedulable;
    char **names;
    size_t n, cap;
} node_scan;

static bool node_scan_fn(void *ctx, const char *key, const fl_kv *kv)
{
    node_scan *ns = ctx;
    json_t *node = fl_json_load(kv->value->data, kv->value->len);
    if (!node)
        return true;
    bool ok = !(ns->skip_unschedulable && json_is_true(jget(node, "spec.unschedulable"))) &&
              !jget(node, "metadata.deletionTimestamp");
    const json_t *labels = jget(node, "metadata.labels");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ns->selector, k, v) {
        const char *have = json_string_value(json_object_get(labels, k));
        if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)))
            ok = false;
    }
    const char *name = jstr(node, "metadata.name");
    if (ok && name) {
        if (ns->n == ns->cap) {
            ns->cap = ns->cap ? ns->cap * 2 : 8;
            ns->names = fl_realloc(ns->names, ns->cap * sizeof *ns->names);
        }
        ns->names[ns->n++] = fl_strdup(name);
    }
    json_decref(node);
    return true;
}

static void nodes_matching(sim_cluster *c, const json_t *selector, bool skip_unschedulable, node_scan *out)
{
    memset(out, 0, sizeof *out);
    out->selector = selector;
    out->skip_unschedulable = skip_unschedulable;
    int64_t rev;
    fl_store_list(c->api->store, "/core/nodes/", NULL, 0, 0, node_scan_fn, out, &rev, NULL);
}

static void node_scan_free(node_scan *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->names[i]);
    free(ns->names);
}

static json_t *status_daemonset(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    node_scan ns;
    nodes_matching(x->c, jget(spec, "template.spec.nodeSelector"), false, &ns);
    int32_t desired = (int32_t)ns.n;
    node_scan_free(&ns);
    bool fake = podspec_fake(jget(spec, "template.spec"));
    int32_t ready = fake ? 0 : grow(x, (int32_t)jint(st, "numberReady", 0), desired);
    json_t *out = json_object();
    json_object_set_new(out, "currentNumberScheduled", json_integer(desired));
    json_object_set_new(out, "numberMisscheduled", json_integer(0));
    json_object_set_new(out, "desiredNumberScheduled", json_integer(desired));
    json_object_set_new(out, "numberReady", json_integer(ready));
    json_object_set_new(out, "observedGeneration", json_integer(jint(x->obj, "metadata.generation", 1)));
    set_nz(out, "updatedNumberScheduled", desired);
    set_nz(out, "numberAvailable", ready);
    set_nz(out, "numberUnavailable", desired - ready);
    return out;
}

static bool has_true_cond(const json_t *st, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c) if (!strcmp(jstr_or(c, "type", ""), type) &&
                                                                    !strcmp(jstr_or(c, "status", ""), "True")) return true;
    return false;
}

/* NULL: leave the Job alone (finished, suspended, or told to run nothing). */
static json_t *status_job(sim_eval *x)
{
    const json_t *spec = json_object_get(x->obj, "spec"), *st = json_object_get(x->obj, "status");
    if (has_true_cond(st, "Complete") || has_true_cond(st, "Failed") || json_is_true(json_object_get(spec, "suspend")))
        return NULL;
    json_int_t completions = jint(spec, "completions", 1), parallelism = jint(spec, "parallelism", 1);
    if (parallelism <= 0 || completions <= 0)
        return NULL;
    json_int_t active = parallelism < completions ? parallelism : completions;
    bool fake = podspec_fake(jget(spec, "template.spec"));
    const char *start = jstr(st, "startTime") ? jstr(st, "startTime") : x->nows;

    json_t *out = json_object();
    json_object_set_new(out, "startTime", json_string(start));
    json_object_set_new(out, "terminating", json_integer(0));
    json_object_set_new(out, "uncountedTerminatedPods", json_object());
    int js = x->s->cfg.job_seconds;
    bool done = !fake && js < 0;
    if (!fake && !done) {
        sim_obj *o = obj_get(x->c, x->key);
        if (!o->start) {
            time_t t = parse_time(jstr(st, "startTime"));
            o->start = x->now - (t >= 0 && t <= x->wall ? (int64_t)(x->wall - t) * 1000 : 0);
        }
        int64_t at = o->start + (int64_t)js * 1000;
        if (x->now >= at)
            done = true;
        else
            want_due(x, at);
    }
    if (done) {
        const char *m = "Reached expected number of succeeded pods";
        json_object_set_new(out, "completionTime", json_string(x->nows));
        json_object_set_new(out, "succeeded", json_integer(completions));
        json_object_set_new(out, "ready", json_integer(0));
        json_t *conds = json_array();
        const json_t *oc = json_object_get(st, "conditions");
        json_array_append_new(conds,
                              mk_cond(oc, COND_JOB, "SuccessCriteriaMet", "True", "CompletionsReached", m, x->nows, 0));
        json_array_append_new(conds, mk_cond(oc, COND_JOB, "Complete", "True", "CompletionsReached", m, x->nows, 0));
        json_object_set_new(out, "conditions", conds);
    } else {
        json_object_set_new(out, "active", json_integer(active));
        json_object_set_new(out, "ready", json_integer(fake ? 0 : active));
    }
    return out;
}

/* The InternalIP of a node, or NULL (heap). */
static char *node_ip(sim_cluster *c, const char *node)
{
    char *key = fl_asprintf("/core/nodes/%s", node);
    fl_kv kv;
    char *ip = NULL;
    if (fl_store_get(c->api->store, key, &kv) == 0) {
        json_t *n = fl_json_load(kv.value->data, kv.value->len);
        fl_blob_unref(kv.value);
        size_t i;
        json_t *a;
        json_array_foreach(jget(n, "status.addresses"), i, a) if (!ip && !strcmp(jstr_or(a, "type", ""), "InternalIP") &&
                                                                    jstr(a, "address")) ip = fl_strdup(jstr(a, "address"));
        json_decref(n);
    }
    free(key);
    return ip;
}

static const char *qos_class(const json_t *ps)
{
    bool any = false, guaranteed = true;
    const char *lists[2] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *ct;
        json_array_foreach(json_object_get(ps, lists[l]), i, ct) {
            const json_t *req = jget(ct, "resources.requests"), *lim = jget(ct, "resources.limits");
            if (json_object_size(req) || json_object_size(lim))
                any = true;
            static const char *res[2] = {"cpu", "memory"};
            for (int r = 0; r < 2; r++) {
                const char *lv = json_string_value(json_object_get(lim, res[r]));
                const char *rv = json_string_value(json_object_get(req, res[r]));
                int64_t a, b;
                if (!lv || (rv && (fl_sim_parse_quantity(lv, 1000, &a) || fl_sim_parse_quantity(rv, 1000, &b) || a != b)))
                    guaranteed = false;
            }
        }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/* Status of one container list entry. */
static json_t *ct_status(const json_t *ct, const json_t *old_list, const char *uid, bool fake, bool init,
                         const char *now)
{
    const char *name = jstr_or(ct, "name", ""), *image = jstr_or(ct, "image", "");
    const json_t *old = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(old_list, i, c) if (!strcmp(jstr_or(c, "name", ""), name)) old = c;
    json_t *out = json_object();
    json_object_set_new(out, "name", json_string(name));
    json_object_set_new(out, "image", json_string(image));
    json_object_set_new(out, "imageID", json_string(""));
    if (!fake) {
        char id[96];
        snprintf(id, sizeof id, "containerd://%08x%08x%08x%08x", fnv1a(uid, strlen(uid)), fnv1a(name, strlen(name)),
                 fnv1a(image, strlen(image)), fnv1a(uid, strlen(uid) / 2));
        json_object_set_new(out, "containerID", json_string(id));
    }
    json_object_set_new(out, "ready", json_boolean(!fake && !init));
    json_object_set_new(out, "restartCount", json_integer(0));
    if (!init)
        json_object_set_new(out, "started", json_boolean(!fake));
    json_t *state;
    if (fake) {
        char msg[600];
        snprintf(msg, sizeof msg, "Back-off pulling image \"%s\"", image);
        state = json_pack("{s{ssss}}", "waiting", "reason", "ImagePullBackOff", "message", msg);
    } else if (init) {
        const char *sa = jstr_or(old, "state.terminated.startedAt", now);
        const char *fa = jstr_or(old, "state.terminated.finishedAt", now);
        state = json_pack("{s{sisssssss}}", "terminated", "exitCode", 0, "reason", "Completed", "startedAt", sa,
                          "finishedAt", fa, "containerID", json_string_value(json_object_get(out, "containerID")));
    } else {
        state = json_pack("{s{ss}}", "running", "startedAt", jstr_or(old, "state.running.startedAt", now));
    }
    json_object_set_new(out, "state", state);
    return out;
}

/* Pick a node for a pod without one and bind it there (a spec change: PATCH on the Pod,
 * not /status). Replaces x->obj with the bound pod. Returns 0, 1 if no node fits (the
 * caller reports Unschedulable), or -1 if the write failed (an event will bring us back). */
static int bind_pod(sim_eval *x, int *nnodes)
{
    node_scan ns;
    nodes_matching(x->c, jget(x->obj, "spec.nodeSelector"), true, &ns);
    *nnodes = (int)fl_store_count(x->c->api->store, "/core/nodes/");
    if (!ns.n) {
        node_scan_free(&ns);
        return 1;
    }
    const char *node = ns.names[x->c->next_node++ % ns.n];
    json_t *resp = NULL;
    int code = patch_obj(x->s, x->c, x->ref, NULL, x->obj, "spec", json_pack("{ss}", "nodeName", node), &resp);
    node_scan_free(&ns);
    if (code != 200 || !resp) {
        json_decref(resp);
        return -1;
    }
    json_decref(x->obj);
    x->obj = resp;
    return 0;
}

/* NULL: leave the Pod alone (finished, or binding failed). */
static json_t *status_pod(sim_eval *x)
{
    const json_t *st = json_object_get(x->obj, "status");
    const char *phase = jstr(st, "phase");
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
        return NULL;
    const json_t *oc = json_object_get(st, "conditions");
    json_t *out = json_object();
    if (!jstr(x->obj, "spec.nodeName") || !*jstr(x->obj, "spec.nodeName")) {
        int nnodes = 0, rc = bind_pod(x, &nnodes);
        if (rc < 0) {
            json_decref(out);
            return NULL;
        }
        if (rc > 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector.",
                     nnodes, nnodes);
            json_object_set_new(out, "phase", json_string("Pending"));
            json_t *conds = json_array();
            json_array_append_new(conds,
                                  mk_cond(oc, COND_POD, "PodScheduled", "False", "Unschedulable", msg, x->nows, 0));
            json_object_set_new(out, "conditions", conds);
            json_object_set_new(out, "qosClass", json_string(qos_class(json_object_get(x->obj, "spec"))));
            return out;
        }
        st = json_object_get(x->obj, "status");
        oc = json_object_get(st, "conditions");
    }
    const json_t *spec = json_object_get(x->obj, "spec");
    bool fake = podspec_fake(spec);
    const char *uid = jstr_or(x->obj, "metadata.uid", x->key);
    const char *ok = fake ? "False" : "True";
    const char *why = fake ? "ContainersNotReady" : NULL;
    char msg[600] = "containers with unready status: [";
    if (fake) {
        size_t i, n = strlen(msg);
        json_t *ct;
        json_array_foreach(json_object_get(spec, "containers"), i, ct) n +=
            (size_t)snprintf(msg + n, n < sizeof msg ? sizeof msg - n : 0, "%s%s", i ? " " : "", jstr_or(ct, "name", ""));
        if (n < sizeof msg - 1)
            strcat(msg, "]");
    }
    json_t *conds = json_array();
    json_array_append_new(conds, mk_cond(oc, COND_POD, "Initialized", "True", NULL, NULL, x->nows, 0));
    json_array_append_new(conds, mk_cond(oc, COND_POD, "Ready", ok, why, fake ? msg : NULL, x->nows, 0));
    json_array_append_new(conds, mk_cond(oc, COND_POD, "ContainersReady", ok, why, fake ? msg : NULL, x->nows, 0));
    json_array_append_new(conds, mk_cond(oc, COND_POD, "PodScheduled", "True", NULL, NULL, x->nows, 0));
    json_object_set_new(out, "phase", json_string(fake ? "Pending" : "Running"));
    json_object_set_new(out, "conditions", conds);

    char *hip = node_ip(x->c, jstr(spec, "nodeName"));
    if (hip) {
        json_object_set_new(out, "hostIP", json_string(hip));
        json_object_set_new(out, "hostIPs", json_pack("[{ss}]", "ip", hip));
        free(hip);
    }
    char ipbuf[32];
    const char *pip = jstr(st, "podIP");
    if (!pip) {
        uint32_t n = x->c->next_ip++;
        snprintf(ipbuf, sizeof ipbuf, "10.244.%u.%u", (n / 250) % 256, n % 250 + 2);
        pip = ipbuf;
    }
    json_object_set_new(out, "podIP", json_string(pip));
    json_object_set_new(out, "podIPs", json_pack("[{ss}]", "ip", pip));
    json_object_set_new(out, "startTime", json_string(jstr_or(st, "startTime", x->nows)));

    const char *lists[2] = {"initContainers", "containers"}, *slists[2] = {"initContainerStatuses", "containerStatuses"};
    for (int l = 0; l < 2; l++) {
        const json_t *cts = json_object_get(spec, lists[l]);
        if (!json_array_size(cts))
            continue;
        json_t *arr = json_array();
        size_t i;
        json_t *ct;
        json_array_foreach(cts, i, ct) json_array_append_new(
            arr, ct_status(ct, json_object_get(st, slists[l]), uid, fake, l == 0, x->nows));
        json_object_set_new(out, slists[l], arr);
    }
    json_object_set_new(out, "qosClass", json_string(qos_class(spec)));
    return out;
}

/* Bring one object up to date; schedule or forget its record. */
static void eval_key(fl_sim *s, sim_cluster *c, const char *key, int64_t now)
{
    sim_ref ref;
    if (parse_key(key, &ref) == SK_NONE)
        return;
    fl_kv kv;
    if (fl_store_get(c->api->store, key, &kv) != 0) {
        obj_forget(s, c, key);
        return;
    }
    json_t *obj = fl_api_decoded(kv.value); /* read-only: usually our own last write, shared */
    fl_blob_unref(kv.value);
    if (!obj || jget(obj, "metadata.deletionTimestamp")) {
        /* going away: nothing runs any more, a real cluster would stop reporting too */
        json_decref(obj);
        obj_forget(s, c, key);
        return;
    }
    sim_eval x = {.s = s, .c = c, .key = key, .ref = &ref, .obj = obj, .now = now, .wall = time(NULL)};
    fmt_time(x.wall, x.nows);
    json_t *want = NULL;
    switch (ref.kind) {
    case SK_DEPLOY: want = status_deployment(&x); break;
    case SK_RS: want = status_replicaset(&x); break;
    case SK_STS: want = status_statefulset(&x); break;
    case SK_DS: want = status_daemonset(&x); break;
    case SK_JOB: want = status_job(&x); break;
    case SK_POD: want = status_pod(&x); break;
    default: break;
    }
    if (want) {
        if (fl_json_same(json_object_get(x.obj, "status"), want))
            json_decref(want);
        else
            put_status(s, c, &ref, x.obj, want);
    }
    json_decref(x.obj);
    if (x.due > 0)
        schedule(s, obj_get(c, key), x.due);
    else
        obj_forget(s, c, key);
}

/* ------------------------------------------------------------------ */
/* clusters: nodes, listing, following                                  */
/* ------------------------------------------------------------------ */

static void create_nodes(fl_sim *s, const char *cluster, fl_api *api)
{
    int n = s->cfg.nodes;
    static const char *zones[] = {"zone-a", "zone-b", "zone-c"};
    for (int i = 0; i < n; i++) {
        char name[300], ip[32], now[32];
        snprintf(name, sizeof name, "%s-node-%d", cluster, i);
        snprintf(ip, sizeof ip, "172.18.%d.%d", (i / 250) % 256, i % 250 + 2);
        fmt_time(time(NULL), now);
        json_t *node = json_pack("{sssss{sss{ssssssss}}s{}}", "apiVersion", "v1", "kind", "Node", "metadata", "name",
                                 name, "labels", "kubernetes.io/hostname", name, "kubernetes.io/os", "linux",
                                 "kubernetes.io/arch", "amd64", "topology.kubernetes.io/zone", zones[i % 3], "spec");
        json_t *created = NULL;
        int code = api_call(api, "POST", "/api/v1/nodes", "application/json", node, &created);
        json_decref(node);
        if (code != 201 || !created) {
            json_decref(created);
            continue; /* 409: it exists (a restart); keep what it says */
        }
        atomic_fetch_add(&s->writes, 1);
        json_t *res = json_pack("{ssssssss}", "cpu", s->node_cpu, "memory", s->node_memory, "pods", s->node_pods,
                                "ephemeral-storage", "100Gi");
        json_t *conds = json_array();
        static const char *pressure[3][2] = {{"MemoryPressure", "KubeletHasSufficientMemory"},
                                             {"DiskPressure", "KubeletHasNoDiskPressure"},
                                             {"PIDPressure", "KubeletHasSufficientPID"}};
        static const char *pmsg[3] = {"kubelet has sufficient memory available", "kubelet has no disk pressure",
                                      "kubelet has sufficient PID available"};
        for (int p = 0; p < 3; p++)
            json_array_append_new(conds, json_pack("{ssssssssssss}", "type", pressure[p][0], "status", "False",
                                                   "lastHeartbeatTime", now, "lastTransitionTime", now, "reason",
                                                   pressure[p][1], "message", pmsg[p]));
        json_array_append_new(conds, json_pack("{ssssssssssss}", "type", "Ready", "status", "True",
                                               "lastHeartbeatTime", now, "lastTransitionTime", now, "reason",
                                               "KubeletReady", "message", "kubelet is posting ready status"));
        json_t *st = json_pack(
            "{sOsOsos[{ssss}{ssss}]s{s{si}}s{ssssssssssssssss}ss}", "capacity", res, "allocatable", res,
            "conditions", conds, "addresses", "type", "InternalIP", "address", ip, "type", "Hostname", "address", name,
            "daemonEndpoints", "kubeletEndpoint", "Port", 10250, "nodeInfo", "architecture", "amd64", "bootID", "",
            "containerRuntimeVersion", "containerd://1.7.0", "kernelVersion", "6.1.0", "kubeProxyVersion", "v1.31.0",
            "kubeletVersion", "v1.31.0", "operatingSystem", "linux", "osImage", "Flotilla simulated node", "phase",
            "Running");
        json_decref(res);
        char *path = fl_asprintf("/api/v1/nodes/%s/status", name);
        json_t *body = json_pack("{s{sO}so}", "metadata", "resourceVersion",
                                 json_object_get(json_object_get(created, "metadata"), "resourceVersion"), "status", st);
        if (api_call(api, "PATCH", path, "application/merge-patch+json", body, NULL) == 200)
            atomic_fetch_add(&s->writes, 1);
        json_decref(body);
        free(path);
        json_decref(created);
    }
}

/* A growable list of keys to evaluate, de-duplicated before use. */
typedef struct keyvec {
    char **v;
    size_t n, cap;
} keyvec;

static void keyvec_push(keyvec *kv, const char *key)
{
    if (kv->n == kv->cap) {
        kv->cap = kv->cap ? kv->cap * 2 : 32;
        kv->v = fl_realloc(kv->v, kv->cap * sizeof *kv->v);
    }
    kv->v[kv->n++] = fl_strdup(key);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool list_key_fn(void *ctx, const char *key, const fl_kv *kv)
{
    keyvec_push(ctx, key);
    return true;
}

static void list_kind(sim_cluster *c, enum sim_kind k, keyvec *out)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "/%s/%s/", KINDS[k].group, KINDS[k].resource);
    int64_t rev;
    fl_store_list(c->api->store, prefix, NULL, 0, 0, list_key_fn, out, &rev, NULL);
}

/* Start following a cluster: note the head, list every simulated kind, then watch "/"
 * from the head (events between the head and the lists are evaluated twice, harmlessly). */
static void cluster_follow(sim_cluster *c, keyvec *dirty)
{
    int64_t head = fl_store_rev(c->api->store);
    for (int k = 0; k < SK_COUNT; k++)
        list_kind(c, (enum sim_kind)k, dirty);
    if (c->next_ip == 0)
        c->next_ip = (uint32_t)fl_store_count(c->api->store, "/core/pods/");
    int rc = fl_store_watch(c->api->store, "/", head, &c->w);
    if (rc == FL_ECLOSED) {
        c->dead = true;
    } else if (rc) {
        fl_log(FL_LOG_WARN, "member-sim", "%s: watch from revision %lld: %s; retrying next tick", c->name,
               (long long)head, fl_strerror(rc));
    }
}

/* Take what happened in a cluster since the last tick: keys of simulated kinds, and every
 * DaemonSet when a Node changed. */
static void cluster_drain(sim_cluster *c, keyvec *dirty)
{
    bool nodes_changed = false;
    for (int i = 0; i < DRAIN_MAX; i++) {
        fl_watch_event *ev;
        int rc = fl_watch_next(c->w, &ev, 0);
        if (rc == FL_ETIMEDOUT)
            break;
        if (rc == FL_EEXPIRED) {
            /* we fell behind the watch backlog: re-list on the next tick */
            fl_log(FL_LOG_INFO, "member-sim", "%s: watch expired; re-listing", c->name);
            fl_watch_free(c->w);
            c->w = NULL;
            break;
        }
        if (rc) {
            fl_log(FL_LOG_INFO, "member-sim", "%s: store closed; no longer simulated", c->name);
            c->dead = true;
            break;
        }
        sim_ref ref;
        if (!strncmp(ev->key, "/core/nodes/", 12))
            nodes_changed = true;
        else if (parse_key(ev->key, &ref) != SK_NONE)
            keyvec_push(dirty, ev->key);
    }
    if (nodes_changed)
        list_kind(c, SK_DS, dirty);
}

static void eval_dirty(fl_sim *s, sim_cluster *c, keyvec *dirty)
{
    if (dirty->n > 1)
        qsort(dirty->v, dirty->n, sizeof *dirty->v, cmp_str);
    for (size_t i = 0; i < dirty->n; i++) {
        if ((i == 0 || strcmp(dirty->v[i], dirty->v[i - 1])) && !atomic_load(&s->stop))
            eval_key(s, c, dirty->v[i], mono_ms());
    }
    for (size_t i = 0; i < dirty->n; i++)
        free(dirty->v[i]);
    dirty->n = 0;
}

/* ------------------------------------------------------------------ */
/* the thread                                                           */
/* ------------------------------------------------------------------ */

static void adopt_pending(fl_sim *s)
{
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->npending; i++) {
        if (s->ncl == s->capcl) {
            s->capcl = s->capcl ? s->capcl * 2 : 16;
            s->cl = fl_realloc(s->cl, s->capcl * sizeof *s->cl);
        }
        s->cl[s->ncl++] = s->pending[i];
    }
    s->npending = 0;
    pthread_mutex_unlock(&s->mu);
}

static void *sim_main(void *arg)
{
    fl_sim *s = arg;
    keyvec dirty = {0};
    int64_t next_tick = 0;
    pthread_setname_np(pthread_self(), "fl-sim");
    /* The clusters' API goes first: a real cluster's controllers and kubelets run on
     * machines of their own, and here they would take the processor from the requests
     * they follow (and from a control plane on the same host). Status lags a busy host,
     * as it would a busy cluster. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), SIM_NICE) != 0)
        fl_log(FL_LOG_DEBUG, "sim", "could not lower the simulator's priority: %s", strerror(errno));
    while (!atomic_load(&s->stop)) {
        adopt_pending(s);
        int64_t now = mono_ms();
        bool tick = now >= next_tick;
        if (tick)
            next_tick = now + s->cfg.tick_ms;
        for (size_t i = 0; i < s->ncl && !atomic_load(&s->stop); i++) {
            sim_cluster *c = s->cl[i];
            if (c->dead)
                continue;
            if (!c->w)
                cluster_follow(c, &dirty);       /* new, or re-list after an expired watch */
            else if (tick)
                cluster_drain(c, &dirty);
            if (dirty.n)
                eval_dirty(s, c, &dirty);
        }
        /* timers: replicas becoming ready, Jobs completing, deadlines */
        while (s->nheap && !atomic_load(&s->stop)) {
            now = mono_ms();
            sim_obj *o = s->heap[0];
            if (o->due > now)
                break;
            heap_remove(s, o);
            char *key = fl_strdup(o->key); /* eval may free o */
            eval_key(s, o->c, key, now);
            free(key);
        }
        int64_t wake = next_tick;
        if (s->nheap && s->heap[0]->due < wake)
            wake = s->heap[0]->due;
        pthread_mutex_lock(&s->mu);
        if (!atomic_load(&s->stop) && !s->npending) {
            int64_t wait = wake - mono_ms();
            if (wait > 0) {
                struct timespec ts = fl_time_after(CLOCK_MONOTONIC, wait);
                pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    for (size_t i = 0; i < dirty.n; i++)
        free(dirty.v[i]);
    free(dirty.v);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* public interface                                                     */
/* ------------------------------------------------------------------ */

fl_sim *fl_sim_new(const fl_sim_config *cfg)
{
    fl_sim *s = fl_calloc(1, sizeof *s);
    if (cfg)
        s->cfg = *cfg;
    if (s->cfg.tick_ms <= 0)
        s->cfg.tick_ms = 100;
    if (s->cfg.ready_per_second == 0)
        s->cfg.ready_per_second = 10;
    if (s->cfg.job_seconds == 0)
        s->cfg.job_seconds = 2;
    if (s->cfg.nodes == 0)
        s->cfg.nodes = 3;
    s->node_cpu = fl_strdup(s->cfg.node_cpu ? s->cfg.node_cpu : "8");
    s->node_memory = fl_strdup(s->cfg.node_memory ? s->cfg.node_memory : "32Gi");
    s->node_pods = fl_strdup(s->cfg.node_pods ? s->cfg.node_pods : "110");
    s->cfg.node_cpu = s->node_cpu;
    s->cfg.node_memory = s->node_memory;
    s->cfg.node_pods = s->node_pods;
    atomic_init(&s->stop, false);
    atomic_init(&s->writes, 0);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&s->th, NULL, sim_main, s) != 0) {
        fl_log(FL_LOG_ERROR, "member-sim", "cannot start the simulator thread");
        abort();
    }
    return s;
}

int fl_sim_add_cluster(fl_sim *s, const char *name, fl_api *api)
{
    if (!s || !name || !*name || !api)
        return FL_EINVAL;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nnames; i++)
        if (!strcmp(s->names[i], name)) {
            pthread_mutex_unlock(&s->mu);
            return FL_EEXIST;
        }
    if (s->nnames == s->capnames) {
        s->capnames = s->capnames ? s->capnames * 2 : 16;
        s->names = fl_realloc(s->names, s->capnames * sizeof *s->names);
    }
    s->names[s->nnames++] = fl_strdup(name);
    pthread_mutex_unlock(&s->mu);

    create_nodes(s, name, api);

    sim_cluster *c = fl_calloc(1, sizeof *c);
    c->name = fl_strdup(name);
    c->api = api;
    pthread_mutex_lock(&s->mu);
    if (s->npending == s->cappending) {
        s->cappending = s->cappending ? s->cappending * 2 : 16;
        s->pending = fl_realloc(s->pending, s->cappending * sizeof *s->pending);
    }
    s->pending[s->npending++] = c;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

uint64_t fl_sim_writes(fl_sim *s)
{
    return s ? (uint64_t)atomic_load(&s->writes) : 0;
}

static void cluster_free(sim_cluster *c)
{
    for (size_t i = 0; i < c->tabcap; i++)
        for (sim_obj *o = c->tab[i], *next; o; o = next) {
            next = o->hnext;
            free(o);
        }
    free(c->tab);
    fl_watch_free(c->w);
    free(c->name);
    free(c);
}

void fl_sim_free(fl_sim *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->stop, true);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    for (size_t i = 0; i < s->ncl; i++)
        cluster_free(s->cl[i]);
    for (size_t i = 0; i < s->npending; i++)
        cluster_free(s->pending[i]);
    for (size_t i = 0; i < s->nnames; i++)
        free(s->names[i]);
    free(s->cl);
    free(s->pending);
    free(s->names);
    free(s->heap);
    free(s->node_cpu);
    free(s->node_memory);
    free(s->node_pods);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* ------------------------------------------------------------------ */
/* resource usage (for the cluster's resourceSummary)                   */
/* ------------------------------------------------------------------ */

typedef struct usage_scan {
    fl_sim_usage *u;
    enum sim_kind kind;
} usage_scan;

static bool has_controller(const json_t *obj)
{
    size_t i;
    json_t *r;
    json_array_foreach(jget(obj, "metadata.ownerReferences"), i, r) if (json_is_true(json_object_get(r, "controller")))
        return true;
    return false;
}

static bool usage_fn(void *ctx, const char *key, const fl_kv *kv)
{
    usage_scan *us = ctx;
    json_t *o = fl_json_load(kv->value->data, kv->value->len);
    if (!o)
        return true;
    const json_t *st = json_object_get(o, "status"), *ps = NULL;
    int64_t count = 0;
    if (us->kind == SK_POD) {
        const char *phase = jstr(st, "phase");
        const json_t *spec = json_object_get(o, "spec");
        if (jstr(spec, "nodeName") && !has_controller(o) && !podspec_fake(spec) &&
            !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))) {
            ps = spec;
            count = 1;
        }
    } else if (us->kind == SK_RS && has_controller(o)) {
        count = 0; /* its Deployment (or other owner) is counted instead */
    } else {
        ps = jget(o, "spec.template.spec");
        const char *field = us->kind == SK_DS ? "numberReady" : us->kind == SK_JOB ? "active" : "readyReplicas";
        count = jint(st, field, 0);
        if (us->kind == SK_JOB && podspec_fake(ps))
            count = 0; /* pods that never pulled hold no resources on the node */
    }
    if (count > 0 && ps) {
        int64_t c, m;
        pod_requests(ps, &c, &m);
        us->u->allocated_cpu_m += c * count;
        us->u->allocated_memory += m * count;
        us->u->allocated_pods += count;
    }
    json_decref(o);
    return true;
}

static bool node_usage_fn(void *ctx, const char *key, const fl_kv *kv)
{
    fl_sim_usage *u = ctx;
    json_t *n = fl_json_load(kv->value->data, kv->value->len);
    if (!n)
        return true;
    const json_t *a = jget(n, "status.allocatable");
    int64_t v;
    if (!fl_sim_parse_quantity(jstr(a, "cpu"), 1000, &v))
        u->allocatable_cpu_m += v;
    if (!fl_sim_parse_quantity(jstr(a, "memory"), 1, &v))
        u->allocatable_memory += v;
    if (!fl_sim_parse_quantity(jstr(a, "pods"), 1, &v))
        u->allocatable_pods += v;
    u->nodes++;
    json_decref(n);
    return true;
}

int fl_sim_cluster_usage(fl_api *api, fl_sim_usage *out)
{
    memset(out, 0, sizeof *out);
    if (!api)
        return FL_EINVAL;
    int64_t rev;
    fl_store_list(api->store, "/core/nodes/", NULL, 0, 0, node_usage_fn, out, &rev, NULL);
    for (int k = 0; k < SK_COUNT; k++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "/%s/%s/", KINDS[k].group, KINDS[k].resource);
        usage_scan us = {.u = out, .kind = (enum sim_kind)k};
        fl_store_list(api->store, prefix, NULL, 0, 0, usage_fn, &us, &rev, NULL);
    }
    return 0;
}
