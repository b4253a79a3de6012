/* suspend_cmd.c - `flotilla ctl suspend|resume`: freeze and unfreeze delivery, and wait until
 * the executors say it really stopped (or really runs again).
 *
 *   flotilla ctl suspend|resume (policy|clusterpolicy|binding|clusterbinding|work|cluster) NAME
 *       [-n NS] [--clusters a,b] [--wait] [--timeout DURATION] [--kubeconfig F] [--context C]
 *
 * What each target changes (read, modify, update with the resourceVersion read, retried on a
 * lost race):
 *   policy, clusterpolicy     spec.suspension: {dispatching: true}, or with --clusters the
 *   binding, clusterbinding   names added to (resume: removed from) dispatchingOnClusters;
 *                             resume without --clusters removes the suspension (a binding
 *                             keeps its own suspension.scheduling)
 *   work, cluster             spec.suspendDispatching (a cluster: all delivery to it)
 *
 * --wait reads the acknowledgements of dispatching.h: for a Work, its Dispatching condition
 * at its current generation; for a binding, its roll-up (the binding's own Dispatching
 * condition at its generation, which says every target cluster's Work acknowledged); for a
 * policy, the bindings it claims (once each carries the policy's suspension) and their
 * roll-ups; for a Cluster, its Paused condition at its current generation. One object per
 * binding, however many clusters. After a second without the answer it reads the Works
 * of the bindings still waiting as well, and from then on prints, on stderr, which clusters
 * have not acknowledged yet; at the timeout it exits 1 naming them. Exit codes: 0 done,
 * 1 failure, 2 usage. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/kubeconfig.h"
#include "controllers/dispatching.h"
#include "core/condition.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

#define DEFAULT_TIMEOUT_MS 60000
/* --wait looks again at each change its informers see; without one, after this long (to
 * print progress) */
#define PROGRESS_MS 1000
#define LIST_WAIT_MS 5000
#define GATHER_MS 3 /* after a change of a watched Work, before looking again */
/* --wait reads a binding's roll-up first; when that has not said "acknowledged" after this
 * long, it reads the binding's Works too, to name the clusters it still waits for */
#define EXACT_AFTER_MS 1000

/* The targets, as kubectl would name their resources. */
typedef struct target_kind {
    const char *name;          /* as typed */
    const char *alias[3];
    fl_gvr gvr;
    const char *qualified;     /* resource.group, for messages */
    bool namespaced;
    enum { T_POLICY, T_BINDING, T_WORK, T_CLUSTER } what;
} target_kind;

static const target_kind KINDS[] = {
    {"policy", {"propagationpolicy", "pp", NULL}, {"policy.karmada.io/v1alpha1", "propagationpolicies"},
     "propagationpolicy.policy.karmada.io", true, T_POLICY},
    {"clusterpolicy", {"clusterpropagationpolicy", "cpp", NULL}, {"policy.karmada.io/v1alpha1", "clusterpropagationpolicies"},
     "clusterpropagationpolicy.policy.karmada.io", false, T_POLICY},
    {"binding", {"resourcebinding", "rb", NULL}, {"work.karmada.io/v1alpha2", "resourcebindings"},
     "resourcebinding.work.karmada.io", true, T_BINDING},
    {"clusterbinding", {"clusterresourcebinding", "crb", NULL}, {"work.karmada.io/v1alpha2", "clusterresourcebindings"},
     "clusterresourcebinding.work.karmada.io", false, T_BINDING},
    {"work", {"works", NULL, NULL}, {"work.karmada.io/v1alpha1", "works"}, "work.work.karmada.io", true, T_WORK},
    {"cluster", {"clusters", NULL, NULL}, {"cluster.karmada.io/v1alpha1", "clusters"}, "cluster.cluster.karmada.io",
     false, T_CLUSTER},
};

static const fl_gvr RBS = {"work.karmada.io/v1alpha2", "resourcebindings"};
static const fl_gvr CRBS = {"work.karmada.io/v1alpha2", "clusterresourcebindings"};
static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

typedef struct opts {
    bool suspend;
    const char *verb;
    const char *kubeconfig, *context, *ns, *clusters, *timeout;
    bool wait;
    const target_kind *kind;
    const char *name;
    int64_t timeout_ms;
    json_t *names;             /* --clusters, as an array (owned) */
} opts;

static int fail(const opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const opts *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flotilla ctl %s: ", o->verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int usage_error(const opts *o, const char *fmt, const char *arg)
{
    fprintf(stderr, "flotilla ctl %s: ", o->verb);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'flotilla ctl %s --help')\n", o->verb);
    return 2;
}

static void usage(const char *verb)
{
    printf("Usage: flotilla ctl %s (policy|clusterpolicy|binding|clusterbinding|work|cluster) NAME [options]\n"
           "\n"
           "%s delivery to member clusters: through a PropagationPolicy or ClusterPropagationPolicy\n"
           "(spec.suspension, copied to its bindings and their Works), a binding, one Work, or every\n"
           "Work of a Cluster (spec.suspendDispatching).\n"
           "\n"
           "Options:\n"
           "  -n, --namespace NS  namespace of a policy, binding or Work (default: default)\n"
           "  --clusters a,b      only these clusters (policy and binding; dispatchingOnClusters)\n"
           "  --wait              return once every executor has acknowledged (docs/suspension.md)\n"
           "  --timeout DURATION  how long --wait waits (default 60s; e.g. 500ms, 30s, 2m)\n"
           "  --kubeconfig FILE   the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
           "  --context NAME      context in that kubeconfig\n",
           verb, !strcmp(verb, "suspend") ? "Suspend" : "Resume");
}

/* "500ms", "30s", "2m", "1h", or a bare number of seconds; -1 when malformed. */
static const target_kind *find_kind(const char *s)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++) {
        if (!strcmp(s, KINDS[i].name))
            return &KINDS[i];
        for (int a = 0; a < 3 && KINDS[i].alias[a]; a++)
            if (!strcmp(s, KINDS[i].alias[a]))
                return &KINDS[i];
    }
    return NULL;
}

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(opts, kubeconfig)}, {"context", NULL, offsetof(opts, context)},
        {"namespace", "n", offsetof(opts, ns)},           {"clusters", NULL, offsetof(opts, clusters)},
        {"timeout", NULL, offsetof(opts, timeout)},
    };
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "--wait")) {
            o->wait = true;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, o);
            if (why)
                return usage_error(o, why, a);
            continue;
        }
        if (npos == 3)
            return usage_error(o, "unexpected argument \"%s\"", a);
        pos[npos++] = a;
    }
    if (npos < 1)
        return usage_error(o, "%s", "what to act on is required: policy, clusterpolicy, binding, clusterbinding, work or cluster");
    o->kind = find_kind(pos[0]);
    if (!o->kind)
        return usage_error(o, "unknown kind \"%s\": expected policy, clusterpolicy, binding, clusterbinding, work or cluster", pos[0]);
    if (npos < 2)
        return usage_error(o, "%s needs a NAME", pos[0]);
    if (npos > 2)
        return usage_error(o, "unexpected argument \"%s\"", pos[2]);
    o->name = pos[1];
    if (o->ns && !o->kind->namespaced)
        return usage_error(o, "%s is cluster-scoped: it takes no --namespace", o->kind->name);
    if (!o->ns)
        o->ns = "default";
    if (o->clusters && (o->kind->what == T_WORK || o->kind->what == T_CLUSTER))
        return usage_error(o, "--clusters is for policies and bindings, not a %s", o->kind->name);
    o->timeout_ms = DEFAULT_TIMEOUT_MS;
    if (o->timeout && (o->timeout_ms = fl_cli_duration_ms(o->timeout)) < 0)
        return usage_error(o, "--timeout %s: expected a duration such as 500ms, 30s or 2m", o->timeout);
    o->names = json_array();
    if (o->clusters) {
        char *copy = fl_strdup(o->clusters), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (*t)
                json_array_append_new(o->names, json_string(t));
        free(copy);
        if (!json_array_size(o->names))
            return usage_error(o, "--clusters %s: no cluster names", o->clusters);
    }
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *obj_ns(const opts *o)
{
    return o->kind->namespaced ? o->ns : NULL;
}

/* ---- the change ---- */

static bool in_list(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_string_value(v) && !strcmp(json_string_value(v), s)) return true;
    return false;
}

/* Apply the verb to a suspension object (a policy's or binding's spec.suspension) in spec.
 * Returns 0, or 1 with a message printed when the request makes no sense for what is there. */
static int edit_suspension(const opts *o, json_t *spec)
{
    json_t *s = json_object_get(spec, "suspension");
    if (!json_is_object(s)) {
        s = json_object();
        json_object_set_new(spec, "suspension", s);
    }
    bool all = json_is_true(json_object_get(s, "dispatching"));
    json_t *on = json_object_get(s, "dispatchingOnClusters");
    json_t *names = json_object_get(on, "clusterNames");
    size_t i;
    json_t *n;
    if (o->suspend && !json_array_size(o->names)) {
        json_object_set_new(s, "dispatching", json_true());
        json_object_del(s, "dispatchingOnClusters"); /* cannot co-exist with dispatching */
    } else if (o->suspend) {
        if (all)
            return fail(o, "%s %s already suspends dispatching to every cluster", o->kind->name, o->name);
        if (!json_is_object(on)) {
            on = json_object();
            json_object_set_new(s, "dispatchingOnClusters", on);
        }
        if (!json_is_array(names)) {
            names = json_array();
            json_object_set_new(on, "clusterNames", names);
        }
        json_array_foreach(o->names, i, n) if (!in_list(names, json_string_value(n))) json_array_append(names, n);
    } else if (!json_array_size(o->names)) {
        json_object_del(s, "dispatching");
        json_object_del(s, "dispatchingOnClusters");
    } else {
        if (all)
            return fail(o, "%s %s suspends dispatching to every cluster: resume it without --clusters, then suspend "
                           "the clusters that should stay suspended",
                        o->kind->name, o->name);
        json_t *kept = json_array();
        json_array_foreach(names, i, n) if (!in_list(o->names, json_string_value(n))) json_array_append(kept, n);
        if (json_array_size(kept))
            json_object_set_new(on, "clusterNames", kept);
        else {
            json_decref(kept);
            json_object_del(s, "dispatchingOnClusters");
        }
    }
    if (!json_object_size(s))
        json_object_del(spec, "suspension");
    return 0;
}

/* Read, change, write (retrying a lost race). *out: what is stored now. */
static int change(const opts *o, fl_client *cp, json_t **out)
{
    *out = NULL;
    for (int attempt = 0;; attempt++) {
        fl_client_error ce = {0};
        json_t *obj = NULL;
        int rc = fl_client_get(cp, &o->kind->gvr, obj_ns(o), o->name, &obj, &ce);
        if (rc == FL_ENOTFOUND)
            return fail(o, "%s \"%s\" not found%s%s", o->kind->qualified, o->name,
                        o->kind->namespaced ? " in namespace " : "", o->kind->namespaced ? o->ns : "");
        if (rc)
            return fail(o, "reading %s %s: %s", o->kind->qualified, o->name, fl_errmsg(ce.message, rc));
        json_t *spec = json_object_get(obj, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(obj, "spec", spec);
        }
        if (o->kind->what == T_WORK || o->kind->what == T_CLUSTER) {
            if (o->suspend)
                json_object_set_new(spec, "suspendDispatching", json_true());
            else
                json_object_del(spec, "suspendDispatching");
        } else if (edit_suspension(o, spec)) {
            json_decref(obj);
            return 1;
        }
        memset(&ce, 0, sizeof ce);
        rc = fl_client_update(cp, &o->kind->gvr, obj_ns(o), obj, NULL, out, &ce);
        json_decref(obj);
        if (rc == FL_ECONFLICT && attempt < 5)
            continue;
        if (rc)
            return fail(o, "updating %s %s: %s", o->kind->qualified, o->name, fl_errmsg(ce.message, rc));
        return 0;
    }
}

/* ---- the wait ---- */

/* The dispatching parts of a suspension (scheduling is the binding's own). */
static json_t *dispatch_part(const json_t *susp)
{
    json_t *d = json_object();
    if (json_is_true(json_object_get(susp, "dispatching")))
        json_object_set_new(d, "dispatching", json_true());
    json_t *names = json_object_get(json_object_get(susp, "dispatchingOnClusters"), "clusterNames");
    if (json_array_size(names))
        json_object_set(d, "clusterNames", names);
    return d;
}

/* ---- the wait ----
 *
 * --wait reads from informers (list + watch) on what it looks at, so it is woken by each
 * change instead of polling: the target object, a policy's bindings, and (once it needs the
 * names) each binding's Works. An informer that has not listed yet counts its clusters as
 * not acknowledged. */

typedef struct watched {
    char *key;                 /* resource|ns|labels|fields */
    fl_informer *inf;
} watched;

typedef struct watcher {
    fl_client *cp;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t changes;          /* events seen by any informer */
    bool exact;                /* read each Work of a binding not yet acknowledged, to name
                                * the clusters that have not acknowledged (not only the
                                * binding's roll-up) */
    size_t n;
    watched *w;
} watcher;

static void changed(void *ctx)
{
    watcher *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->changes++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_object(void *ctx, json_t *obj)
{
    (void)obj;
    changed(ctx);
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    (void)old_obj;
    (void)new_obj;
    changed(ctx);
}

/* What the wait does not read, left out when decoding (a Work's manifests and their
 * statuses are most of its bytes; a binding's per-cluster statuses most of its). */
static const char *const SKIP_WORK[] = {"metadata.managedFields", "spec.workload", "status.manifestStatuses", NULL};
static const char *const SKIP_BINDING[] = {"metadata.managedFields", "status.aggregatedStatus", NULL};
static const char *const SKIP_OTHER[] = {"metadata.managedFields", NULL};

/* The informer on r in ns (NULL: all) with these selectors (NULL: none), started on first use. */
static fl_informer *watch_of(watcher *w, const fl_gvr *r, const char *ns, const char *labels, const char *fields)
{
    char *key = fl_asprintf("%s|%s|%s|%s", r->resource, ns ? ns : "", labels ? labels : "", fields ? fields : "");
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->w[i].key, key)) {
            free(key);
            return w->w[i].inf;
        }
    fl_informer_config cfg = {
        .client = w->cp,
        .resource = *r,
        .ns = ns,
        .label_selector = labels,
        .field_selector = fields,
        .backoff_min_ms = 50,
        .backoff_max_ms = 1000,
        .handlers = {.on_add = on_object, .on_update = on_update, .on_delete = on_object, .ctx = w},
        .skip_fields = r == &WORKS ? SKIP_WORK : r == &RBS || r == &CRBS ? SKIP_BINDING : SKIP_OTHER,
    };
    fl_informer *inf = NULL;
    fl_informer_new(&cfg, &inf);
    fl_informer_start(inf);
    /* its first list wakes nobody when it is empty: wait for it here (one that cannot list
     * yet keeps counting as not acknowledged, and its list, when it comes, wakes the wait) */
    fl_informer_wait_synced(inf, LIST_WAIT_MS);
    w->w = fl_realloc(w->w, (w->n + 1) * sizeof *w->w);
    w->w[w->n++] = (watched){key, inf};
    return inf;
}

/* The one object named name in ns, from its own informer: a new reference, NULL while the
 * informer has not listed; *gone when it listed and the object is not there. */
static json_t *watched_object(watcher *w, const fl_gvr *r, const char *ns, const char *name, bool *gone)
{
    char *fields = fl_asprintf("metadata.name=%s", name);
    fl_informer *inf = watch_of(w, r, ns, NULL, fields);
    free(fields);
    *gone = false;
    if (!fl_informer_has_synced(inf))
        return NULL;
    json_t *obj = NULL;
    if (fl_informer_get(inf, ns, name, &obj))
        *gone = true;
    return obj;
}

static void watcher_close(watcher *w)
{
    for (size_t i = 0; i < w->n; i++) {
        fl_informer_free(w->w[i].inf);
        free(w->w[i].key);
    }
    free(w->w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

static void pend_all(const json_t *binding, json_t *pending)
{
    size_t j;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(binding, "spec"), "clusters"), j, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n)
            json_object_set_new(pending, n, json_true());
    }
}

/* Add the clusters of binding b that have not acknowledged to pending (a set). The binding's
 * roll-up answers for all of them at once; until w->exact, a binding whose roll-up is still
 * coming counts all its clusters as waiting. Otherwise, and for a binding without a roll-up,
 * the Works of the binding are read one by one. */
static void binding_pending(watcher *w, const json_t *b, bool cluster_scoped, json_t *pending)
{
    if (fl_dispatch_has_rollup(b)) {
        if (fl_dispatch_rollup_acked(b))
            return;
        if (!w->exact) {
            pend_all(b, pending);
            return;
        }
    }
    const char *key = cluster_scoped ? FL_CRB_ID_LABEL : FL_RB_ID_LABEL;
    const char *id = fl_json_meta_map(b, "labels", key);
    json_t *works = json_object();
    if (id) {
        char *sel = fl_asprintf("%s=%s", key, id);
        fl_informer *inf = watch_of(w, &WORKS, NULL, sel, NULL);
        free(sel);
        if (!fl_informer_has_synced(inf)) {
            pend_all(b, pending);
            json_decref(works);
            return;
        }
        json_t *items = fl_informer_list(inf, NULL);
        size_t i;
        json_t *wk;
        size_t pl = strlen(FL_EXECUTION_SPACE_PREFIX);
        json_array_foreach(items, i, wk) {
            const char *ns = json_string_value(json_object_get(json_object_get(wk, "metadata"), "namespace"));
            if (ns && !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, pl))
                json_object_set(works, ns + pl, wk);
        }
        json_decref(items);
    }
    fl_dispatch_rollup r;
    fl_dispatch_rollup_of(b, works, &r);
    size_t i;
    json_t *n;
    json_array_foreach(r.pending, i, n) json_object_set_new(pending, json_string_value(n), json_true());
    fl_dispatch_rollup_close(&r);
    json_decref(works);
}

/* One look at the world: the clusters that have not acknowledged (a set, into pending);
 * *targets the number of clusters considered. 0, or 1 when the target is gone. */
static int look(const opts *o, watcher *w, json_t *pending, int *targets)
{
    *targets = 0;
    bool gone = false;
    json_t *obj = watched_object(w, &o->kind->gvr, obj_ns(o), o->name, &gone);
    if (gone)
        return 1;
    if (!obj) { /* not listed yet */
        json_object_set_new(pending, o->kind->what == T_CLUSTER || o->kind->what == T_WORK ? o->name : "(not listed yet)",
                            json_true());
        return 0;
    }
    const json_t *md = json_object_get(obj, "metadata");
    int64_t gen = json_integer_value(json_object_get(md, "generation"));
    switch (o->kind->what) {
    case T_WORK: {
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        size_t pl = strlen(FL_EXECUTION_SPACE_PREFIX);
        const char *cluster = ns && !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, pl) ? ns + pl : o->name;
        *targets = 1;
        if (!fl_dispatch_work_acked(obj, o->suspend))
            json_object_set_new(pending, cluster, json_true());
        break;
    }
    case T_CLUSTER: {
        const json_t *c = fl_condition_of(obj, FL_PAUSED_CONDITION);
        const char *st = json_string_value(json_object_get(c, "status"));
        /* a cluster never paused has no Paused condition: nothing to resume */
        bool ok = (c && json_integer_value(json_object_get(c, "observedGeneration")) == gen && st &&
                   !strcmp(st, o->suspend ? "True" : "False")) ||
                  (!c && !o->suspend);
        *targets = 1;
        if (!ok)
            json_object_set_new(pending, o->name, json_true());
        break;
    }
    case T_BINDING: {
        const json_t *spec = json_object_get(obj, "spec");
        *targets = (int)json_array_size(json_object_get(spec, "clusters"));
        binding_pending(w, obj, !o->kind->namespaced, pending);
        break;
    }
    case T_POLICY: {
        /* the bindings this policy claims; each must carry the policy's suspension first */
        bool cpp = !o->kind->namespaced;
        const char *id = fl_json_meta_map(obj, "labels", cpp ? FL_CPP_ID_LABEL : FL_PP_ID_LABEL);
        if (!id)
            break; /* no binding can name it */
        char *sel = fl_asprintf("%s=%s", cpp ? FL_CPP_ID_LABEL : FL_PP_ID_LABEL, id);
        json_t *want = dispatch_part(json_object_get(json_object_get(obj, "spec"), "suspension"));
        for (int pass = 0; pass < (cpp ? 2 : 1); pass++) {
            bool crb = pass == 1;
            fl_informer *inf = watch_of(w, crb ? &CRBS : &RBS, cpp ? NULL : o->ns, sel, NULL);
            if (!fl_informer_has_synced(inf)) {
                json_object_set_new(pending, "(not listed yet)", json_true());
                continue;
            }
            json_t *items = fl_informer_list(inf, NULL);
            size_t i;
            json_t *b;
            json_array_foreach(items, i, b) {
                const json_t *bspec = json_object_get(b, "spec");
                *targets += (int)json_array_size(json_object_get(bspec, "clusters"));
                json_t *have = dispatch_part(json_object_get(bspec, "suspension"));
                bool copied = fl_json_same(have, want);
                json_decref(have);
                if (!copied) /* the detector has not copied the suspension yet: all its clusters wait */
                    pend_all(b, pending);
                else
                    binding_pending(w, b, crb, pending);
            }
            json_decref(items);
        }
        json_decref(want);
        free(sel);
        break;
    }
    }
    json_decref(obj);
    return 0;
}

/* "a, b, c" from a set, sorted */
static char *set_names(const json_t *set)
{
    const char **v = fl_calloc(json_object_size(set) + 1, sizeof *v);
    size_t n = 0;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)set, k, x) v[n++] = k;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    char *s = fl_strdup("");
    for (size_t i = 0; i < n; i++) {
        char *next = fl_asprintf("%s%s%s", s, i ? ", " : "", v[i]);
        free(s);
        s = next;
    }
    free(v);
    return s;
}

static int wait_ack(const opts *o, fl_client *cp)
{
    watcher w = {.cp = cp};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    int64_t start = now_ms(), last_print = 0;
    char *last = NULL;
    int rc;
    for (;;) {
        pthread_mutex_lock(&w.mu);
        uint64_t seen = w.changes;
        pthread_mutex_unlock(&w.mu);
        json_t *pending = json_object();
        int targets = 0;
        if (look(o, &w, pending, &targets)) {
            json_decref(pending);
            rc = fail(o, "waiting: %s %s is gone", o->kind->qualified, o->name);
            break;
        }
        int64_t t = now_ms();
        char *names = set_names(pending);
        int np = (int)json_object_size(pending);
        json_decref(pending);
        if (np == 0) {
            printf("%s %s %s: acknowledged by %d cluster%s in %.3fs\n", o->kind->qualified, o->name,
                   o->suspend ? "suspended" : "resumed", targets, targets == 1 ? "" : "s", (double)(t - start) / 1000);
            free(names);
            rc = 0;
            break;
        }
        if (!w.exact && t - start >= (o->timeout_ms < EXACT_AFTER_MS ? o->timeout_ms : EXACT_AFTER_MS)) {
            /* taking its time: find out which clusters it waits for */
            w.exact = true;
            free(names);
            continue;
        }
        if (t - start >= o->timeout_ms) {
            fail(o, "timed out after %.1fs: not acknowledged by %d of %d cluster%s: %s", (double)o->timeout_ms / 1000,
                 np, targets, targets == 1 ? "" : "s", names);
            free(names);
            rc = 1;
            break;
        }
        /* progress, once the names are known: when the waiting set changes, and every few seconds */
        if (w.exact && (!last || strcmp(last, names) || t - last_print >= 5000)) {
            fprintf(stderr, "waiting for %d of %d cluster%s to acknowledge: %s\n", np, targets, targets == 1 ? "" : "s",
                    names);
            last_print = t;
            free(last);
            last = names;
        } else {
            free(names);
        }
        /* until an informer sees a change, the timeout, or a progress line is due */
        int64_t until = start + o->timeout_ms;
        if (until > t + PROGRESS_MS)
            until = t + PROGRESS_MS;
        if (!w.exact && until > start + EXACT_AFTER_MS)
            until = start + EXACT_AFTER_MS;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (until - t) * 1000000LL;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        pthread_mutex_lock(&w.mu);
        while (w.changes == seen && pthread_cond_timedwait(&w.cv, &w.mu, &ts) == 0)
            ;
        bool woken = w.changes != seen;
        pthread_mutex_unlock(&w.mu);
        /* once it watches the Works, acknowledgements come in bursts (one per cluster): let
         * the burst gather before looking over every target again. Before that it reads one
         * roll-up per binding, and the change that completes it is worth seeing at once. */
        if (woken && w.exact)
            nanosleep(&(struct timespec){.tv_nsec = GATHER_MS * 1000000L}, NULL);
    }
    free(last);
    watcher_close(&w);
    return rc;
}

int fl_ctl_suspend(bool suspend, int argc, char **argv)
{
    opts o = {.suspend = suspend, .verb = suspend ? "suspend" : "resume"};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage(o.verb);
        json_decref(o.names);
        return 0;
    }
    if (rc) {
        json_decref(o.names);
        return rc;
    }
    fl_client *cp = NULL;
    if (fl_cli_control_plane(o.kubeconfig, o.context, o.verb, &cp)) {
        json_decref(o.names);
        return 1;
    }
    json_t *stored = NULL;
    rc = change(&o, cp, &stored);
    if (rc == 0) {
        printf("%s/%s %s\n", o.kind->qualified, o.name, o.suspend ? "suspended" : "resumed");
        fflush(stdout);
        if (o.wait)
            rc = wait_ack(&o, cp);
    }
    json_decref(stored);
    fl_client_free(cp);
    json_decref(o.names);
    return rc;
}
