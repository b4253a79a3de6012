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
 * lastUpdateTime.
 *
 * What status each kind reports, and when it next needs a look, is sim_status.c; the two
 * share the simulator's state through sim_priv.h. */
#include "member/sim_priv.h"

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
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define DRAIN_MAX 4096 /* events taken from one cluster per tick; the rest wait for the next */
#define SIM_NICE 10 /* the simulator thread's nice value (sim_main) */

/* The kinds we simulate: store prefix pieces and the API path pieces of each. */
static const struct {
    const char *group;    /* store key segment ("core" for the core group) */
    const char *resource;
    const char *version;  /* the served version the simulator writes through */
} KINDS[SK_COUNT] = {
    [SK_DEPLOY] = {"apps", "deployments", "v1"}, [SK_RS] = {"apps", "replicasets", "v1"},
    [SK_STS] = {"apps", "statefulsets", "v1"},   [SK_DS] = {"apps", "daemonsets", "v1"},
    [SK_JOB] = {"batch", "jobs", "v1"},          [SK_POD] = {"core", "pods", "v1"},
    [SK_HPA] = {"autoscaling", "horizontalpodautoscalers", "v2"},
    [SK_PDB] = {"policy", "poddisruptionbudgets", "v1"},
    [SK_ING] = {"networking.k8s.io", "ingresses", "v1"}, [SK_SVC] = {"core", "services", "v1"},
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

bool fl_sim_podspec_fake(const json_t *ps)
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
    return fl_asprintf("/apis/%s/%s/namespaces/%s/%s/%s%s%s", g, KINDS[r->kind].version, r->ns, res, r->name,
                       sub ? "/" : "", sub ? sub : "");
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
int fl_sim_patch_obj(fl_sim *s, sim_cluster *c, const sim_ref *r, const char *sub, const json_t *obj,
                     const char *field, json_t *patch, json_t **out)
{
    json_t *body = json_object();
    const char *rv = fl_json_path_str(obj, "metadata.resourceVersion");
    if (rv)
        json_object_set_new(body, "metadata", json_pack("{ss}", "resourceVersion", rv));
    json_object_set_new(body, field, patch);
    char *path = obj_path(r, sub);
    int code = api_call(c->api, "PATCH", path, "application/merge-patch+json", body, out);
    if (code == 200)
        atomic_fetch_add(&s->writes, 1);
    else
        fl_log_kvf(FL_LOG_DEBUG, "member-sim",
                   FL_LOG_KV("object", FL_LOG_OBJ(fl_json_str(obj, "kind"), r->ns, r->name), "cluster", c->name),
                   "PATCH %s: HTTP %d", path, code);
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

static bool obj_is(const fl_hnode *n, const void *key)
{
    return !strcmp(fl_htab_entry(n, sim_obj, node)->key, key);
}

static sim_obj *obj_find(sim_cluster *c, const char *key, uint64_t h)
{
    return fl_htab_entry(fl_htab_find(&c->objs, h, obj_is, key), sim_obj, node);
}

sim_obj *fl_sim_obj_get(sim_cluster *c, const char *key)
{
    uint64_t h = fl_hash_str(key);
    sim_obj *o = obj_find(c, key, h);
    if (o)
        return o;
    size_t kl = strlen(key);
    o = fl_calloc(1, sizeof *o + kl + 1);
    memcpy(o->key, key, kl + 1);
    o->c = c;
    o->heap_i = SIZE_MAX;
    fl_htab_add(&c->objs, &o->node, h);
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
    sim_obj *o = obj_find(c, key, fl_hash_str(key));
    if (!o)
        return;
    fl_htab_remove(&c->objs, &o->node);
    heap_remove(s, o);
    free(o);
}

/* ------------------------------------------------------------------ */
/* one evaluation (what each kind reports: sim_status.c)              */
/* ------------------------------------------------------------------ */

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
    if (!obj || fl_json_path(obj, "metadata.deletionTimestamp")) {
        /* going away: nothing runs any more, a real cluster would stop reporting too */
        json_decref(obj);
        obj_forget(s, c, key);
        return;
    }
    sim_eval x = {.s = s, .c = c, .key = key, .ref = &ref, .obj = obj, .now = now, .wall = time(NULL)};
    fmt_time(x.wall, x.nows);
    json_t *want = fl_sim_status(&x);
    if (want) {
        if (fl_json_same(json_object_get(x.obj, "status"), want))
            json_decref(want);
        else
            put_status(s, c, &ref, x.obj, want);
    }
    json_decref(x.obj);
    if (x.due > 0)
        schedule(s, fl_sim_obj_get(c, key), x.due);
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
        fl_log_kvf(FL_LOG_WARN, "member-sim", FL_LOG_KV("cluster", c->name, "err", fl_strerror(rc)),
                   "watch from revision %lld failed: retrying next tick", (long long)head);
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
            fl_log_kv(FL_LOG_INFO, "member-sim", "watch expired: re-listing", "cluster", c->name, NULL);
            fl_watch_free(c->w);
            c->w = NULL;
            break;
        }
        if (rc) {
            fl_log_kv(FL_LOG_INFO, "member-sim", "store closed: no longer simulated", "cluster", c->name, NULL);
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
    fl_htab_init(&c->objs, 8); /* most clusters converge a handful of objects at a time */
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
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&c->objs, &it); n; n = fl_htab_next(&it))
        free(fl_htab_entry(n, sim_obj, node));
    fl_htab_close(&c->objs);
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
    json_array_foreach(fl_json_path(obj, "metadata.ownerReferences"), i, r) if (json_is_true(json_object_get(r, "controller")))
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
        const char *phase = fl_json_path_str(st, "phase");
        const json_t *spec = json_object_get(o, "spec");
        if (fl_json_path_str(spec, "nodeName") && !has_controller(o) && !fl_sim_podspec_fake(spec) &&
            !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))) {
            ps = spec;
            count = 1;
        }
    } else if (us->kind == SK_RS && has_controller(o)) {
        count = 0; /* its Deployment (or other owner) is counted instead */
    } else {
        ps = fl_json_path(o, "spec.template.spec");
        const char *field = us->kind == SK_DS ? "numberReady" : us->kind == SK_JOB ? "active" : "readyReplicas";
        count = fl_json_path_int(st, field, 0);
        if (us->kind == SK_JOB && fl_sim_podspec_fake(ps))
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
    const json_t *a = fl_json_path(n, "status.allocatable");
    int64_t v;
    if (!fl_sim_parse_quantity(fl_json_path_str(a, "cpu"), 1000, &v))
        u->allocatable_cpu_m += v;
    if (!fl_sim_parse_quantity(fl_json_path_str(a, "memory"), 1, &v))
        u->allocatable_memory += v;
    if (!fl_sim_parse_quantity(fl_json_path_str(a, "pods"), 1, &v))
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
    for (int k = 0; k <= SK_POD; k++) { /* the workloads: what runs on nodes */
        char prefix[64];
        snprintf(prefix, sizeof prefix, "/%s/%s/", KINDS[k].group, KINDS[k].resource);
        usage_scan us = {.u = out, .kind = (enum sim_kind)k};
        fl_store_list(api->store, prefix, NULL, 0, 0, usage_fn, &us, &rev, NULL);
    }
    return 0;
}

