/* manager.c - starts and stops the controllers of a process, and owns what they share
 * (see controller.h): member clients, template informers, the interpreter, the event
 * recorder, shared informers, the subscribers to interpreter changes, and the
 * worker-pool loop every controller runs. */
#include "controllers/controller.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/events.h"
#include "controllers/members.h"
#include "controllers/names.h"
#include "controllers/templates.h"
#include "core/json.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/timefmt.h"
#include "interp/interp.h"

typedef struct interp_sub {
    struct interp_sub *next;
    fl_ctrl_interp_fn fn;
    void *ctx;
} interp_sub;

typedef struct shared_informer {
    struct shared_informer *next;
    char *api_version, *resource;
    fl_informer *inf;
} shared_informer;

struct fl_ctrl_manager {
    fl_ctrl_env env;
    size_t n;
    const fl_controller **ctrl;
    void **state;
    shared_informer *shared;
    bool started;
    /* Subscribers to interpreter changes. Notifications run under subs_mu, so once
     * subs_closed is set (first thing in stop) none is running and none will start. */
    pthread_mutex_t subs_mu;
    interp_sub *subs;
    bool subs_closed;
    /* the queues of the controllers that resume (fl_ctrl_resumable); registered from their
     * start(), read by fl_ctrl_manager_idle on any thread */
    pthread_mutex_t resumable_mu;
    fl_workqueue **resumable;
    size_t nresumable;
    bool resume_off; /* atomic: fl_ctrl_resume_broad */
    /* fl_ctrl_note: set while controllers start, by name */
    struct {
        const char *name;
        fl_ctrl_note_fn fn;
        void *ctx;
    } notes[4];
    size_t nnotes;
};

/* What the shared Work informer keeps no decoding of (in process): what a Work's manifests
 * hold beyond their kind and name. Most reads of a Work need only its metadata, its status
 * and which objects it holds (apiVersion, kind, metadata.name and metadata.namespace of
 * each manifest): after a restart its readers check 180,000 Works at once. Those that
 * deliver or compare the manifests read the Work whole (fl_informer_get_whole).
 *
 * The informer is compact too: a Work a watch brings is kept as its stored value only, and
 * read without those fields when asked for. A decoded Work is about three times its text
 * even without them, and 50,000 Works propagated at once are all brought by watches. A
 * listed Work (after a restart) keeps its decoding: every reader comes back to it then. */
static const char *const work_partial_fields[] = {
    "spec.workload.manifests.[].spec",       "spec.workload.manifests.[].data",
    "spec.workload.manifests.[].binaryData", "spec.workload.manifests.[].stringData",
    "spec.workload.manifests.[].status",     "spec.workload.manifests.[].metadata.labels",
    "spec.workload.manifests.[].metadata.annotations", NULL};

/* The shared binding informers leave out each binding's status.aggregatedStatus: an item per
 * target cluster with the status reflected from its member, shared with the Works' status
 * and kept alive by nothing else once those are compact (at 2,000 Deployments over 10
 * clusters, 42 MB). Only the binding status controller, which compares it, and the
 * scheduler, which writes the status whole, read the binding whole. */
static const char *const binding_partial_fields[] = {"status.aggregatedStatus", NULL};
/* They are compact as well: a binding a watch brings is kept as its revision, and decoded
 * (without its aggregatedStatus) when read, with 512 hot decodings. */

fl_informer *fl_ctrl_informer(const fl_ctrl_env *env, const char *api_version, const char *resource)
{
    fl_ctrl_manager *m = env->manager;
    for (shared_informer *s = m->shared; s; s = s->next)
        if (!strcmp(s->api_version, api_version) && !strcmp(s->resource, resource))
            return s->inf;
    shared_informer *s = fl_calloc(1, sizeof *s);
    s->api_version = fl_strdup(api_version);
    s->resource = fl_strdup(resource);
    bool works = !strcmp(api_version, "work.karmada.io/v1alpha1") && !strcmp(resource, "works");
    bool bindings = !strcmp(api_version, "work.karmada.io/v1alpha2") &&
                    (!strcmp(resource, "resourcebindings") || !strcmp(resource, "clusterresourcebindings"));
    fl_informer_config cfg = {
        .client = env->cp,
        .resource = {.api_version = api_version, .resource = resource},
        .transform = fl_informer_drop_managed_fields,
        .partial_fields = works ? work_partial_fields : bindings ? binding_partial_fields : NULL,
        .compact = works || bindings,
        .resume_rev = env->resumed_rev,
        /* resuming with the member watches too, nothing reads every Work: the execution
         * controller's pass is skipped with the others' (fl_exec_resume); and with the
         * dependencies controller's note, nothing reads every binding */
        .resume_bare = (works && json_object_get(env->resumed_notes, FL_CTRL_NOTE_WATCHES)) ||
                       (bindings && json_object_get(env->resumed_notes, FL_CTRL_NOTE_DEPENDENCIES)),
    };
    fl_informer_new(&cfg, &s->inf);
    if (m->started)
        fl_informer_start(s->inf);
    s->next = m->shared;
    m->shared = s;
    return s->inf;
}

int fl_ctrl_manager_start(const fl_ctrl_env *env, const fl_controller *const *list, fl_ctrl_manager **out)
{
    fl_ctrl_manager *m = fl_calloc(1, sizeof *m);
    m->env = *env;
    m->env.members = fl_members_new(env->cp);
    m->env.templates = fl_templates_new(env->cp, env->resumed_rev);
    m->env.interp = fl_interp_new();
    m->env.recorder = fl_recorder_new(env->cp, "flotilla-controller-manager");
    m->env.manager = m;
    pthread_mutex_init(&m->subs_mu, NULL);
    pthread_mutex_init(&m->resumable_mu, NULL);
    size_t n = 0;
    while (list && list[n])
        n++;
    m->ctrl = fl_calloc(n ? n : 1, sizeof *m->ctrl);
    m->state = fl_calloc(n ? n : 1, sizeof *m->state);
    for (size_t i = 0; i < n; i++) {
        void *st = NULL;
        int rc = list[i]->start(&m->env, &st);
        if (rc) {
            fl_log(FL_LOG_ERROR, "controllers", "%s did not start: %s", list[i]->name, fl_strerror(rc));
            continue;
        }
        m->ctrl[m->n] = list[i];
        m->state[m->n] = st;
        m->n++;
        fl_log(FL_LOG_INFO, "controllers", "%s started", list[i]->name);
    }
    for (shared_informer *s = m->shared; s; s = s->next)
        fl_informer_start(s->inf);
    m->started = true;
    *out = m;
    return 0;
}

struct fl_templates *fl_ctrl_manager_templates(fl_ctrl_manager *m)
{
    return m->env.templates;
}

void fl_ctrl_manager_stop(fl_ctrl_manager *m)
{
    if (!m)
        return;
    /* no notification may run into a controller that is going away */
    pthread_mutex_lock(&m->subs_mu);
    m->subs_closed = true;
    pthread_mutex_unlock(&m->subs_mu);
    /* no handler may run into a controller that is going away: informers stop first */
    fl_templates_stop(m->env.templates);
    for (shared_informer *s = m->shared; s; s = s->next)
        fl_informer_stop(s->inf);
    for (size_t i = m->n; i-- > 0;)
        m->ctrl[i]->stop(m->state[i]);
    for (shared_informer *s = m->shared, *next; s; s = next) {
        next = s->next;
        fl_informer_free(s->inf);
        free(s->api_version);
        free(s->resource);
        free(s);
    }
    fl_templates_free(m->env.templates);
    fl_recorder_free(m->env.recorder);
    fl_members_free(m->env.members);
    fl_interp_free(m->env.interp);
    for (interp_sub *s = m->subs, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    pthread_mutex_destroy(&m->subs_mu);
    pthread_mutex_destroy(&m->resumable_mu);
    free(m->resumable);
    free(m->ctrl);
    free(m->state);
    free(m);
}

/* ---- resuming at a reconciled revision ---- */

void fl_ctrl_resumable(const fl_ctrl_env *env, fl_workqueue *q)
{
    fl_ctrl_manager *m = env->manager;
    pthread_mutex_lock(&m->resumable_mu);
    m->resumable = fl_realloc(m->resumable, (m->nresumable + 1) * sizeof *m->resumable);
    m->resumable[m->nresumable++] = q;
    pthread_mutex_unlock(&m->resumable_mu);
}

/* Every informer the controllers read (the shared ones and the templates' kinds) has made
 * its first list: until then a first pass is still being queued. */
static bool all_listed(fl_ctrl_manager *m)
{
    for (shared_informer *s = m->shared; s; s = s->next)
        if (!fl_informer_has_synced(s->inf))
            return false;
    return fl_templates_all_listed(m->env.templates);
}

bool fl_ctrl_manager_synced(fl_ctrl_manager *m)
{
    return m && m->started && all_listed(m);
}

/* Lists first, queues next, lists again: a reconcile still in a queue may start watching
 * another kind before it is done, and that kind's first list must be over too. */
bool fl_ctrl_manager_idle(fl_ctrl_manager *m)
{
    if (!m || !m->started || !all_listed(m))
        return false;
    bool idle = true;
    pthread_mutex_lock(&m->resumable_mu);
    for (size_t i = 0; idle && i < m->nresumable; i++)
        idle = fl_workqueue_idle(m->resumable[i]);
    pthread_mutex_unlock(&m->resumable_mu);
    return idle && all_listed(m);
}

void fl_ctrl_resume_broad(const fl_ctrl_env *env)
{
    fl_ctrl_manager *m = env->manager;
    if (!env->resumed_rev || __atomic_load_n(&m->resume_off, __ATOMIC_ACQUIRE))
        return;
    /* the flag first: an add told before it is in its cache already, for the caller's walk */
    __atomic_store_n(&m->resume_off, true, __ATOMIC_RELEASE);
    if (all_listed(m)) {
        __atomic_store_n(&m->resume_off, false, __ATOMIC_RELEASE);
        return;
    }
    fl_log(FL_LOG_INFO, "controllers",
           "a change since revision %lld concerns objects still being listed: the first lists are reconciled whole",
           (long long)env->resumed_rev);
}

void fl_ctrl_note(const fl_ctrl_env *env, const char *name, fl_ctrl_note_fn fn, void *ctx)
{
    fl_ctrl_manager *m = env->manager;
    if (m->nnotes == sizeof m->notes / sizeof m->notes[0]) {
        fl_log(FL_LOG_ERROR, "controllers", "note %s: too many notes", name);
        return;
    }
    m->notes[m->nnotes].name = name;
    m->notes[m->nnotes].fn = fn;
    m->notes[m->nnotes++].ctx = ctx;
}

json_t *fl_ctrl_manager_note(fl_ctrl_manager *m, const char *name, int64_t rev)
{
    for (size_t i = 0; m && i < m->nnotes; i++)
        if (!strcmp(m->notes[i].name, name))
            return m->notes[i].fn(m->notes[i].ctx, rev);
    return NULL;
}

bool fl_ctrl_resumed_add(const fl_ctrl_env *env, const json_t *obj)
{
    if (!env->resumed_rev || __atomic_load_n(&env->manager->resume_off, __ATOMIC_ACQUIRE))
        return false;
    const char *rv = fl_client_object_rv(obj);
    char *end = NULL;
    long long v = rv ? strtoll(rv, &end, 10) : 0;
    return end && end != rv && !*end && v > 0 && v <= env->resumed_rev;
}

/* ---- binding keys ---- */

void fl_ctrl_queue_binding(fl_workqueue *q, const json_t *binding)
{
    char *key = fl_names_binding_key(binding);
    if (key)
        fl_workqueue_add(q, key);
    free(key);
}

typedef struct queue_walk {
    fl_workqueue *q;
    const char *prefix; /* "R|" or "C|": the binding key is the prefix and the cache key */
} queue_walk;

static void queue_key(void *ctx, const char *key, uint32_t tag)
{
    (void)tag;
    const queue_walk *w = ctx;
    char *k = fl_cat(w->prefix, key, NULL);
    fl_workqueue_add(w->q, k);
    free(k);
}

void fl_ctrl_queue_bindings(fl_workqueue *q, fl_informer *rbs, fl_informer *crbs)
{
    /* keys only: a walk of the cache decodes no binding (a Cluster's taint queues them all) */
    queue_walk r = {q, "R|"}, c = {q, "C|"};
    fl_informer_each_tag(rbs, NULL, queue_key, &r);
    fl_informer_each_tag(crbs, NULL, queue_key, &c);
}

void fl_ctrl_queue_keys(fl_workqueue *q, json_t *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(keys, k, v)
        fl_workqueue_add(q, k);
    json_decref(keys);
}

/* ---- interpreter changes ---- */

void fl_ctrl_on_interp_change(const fl_ctrl_env *env, fl_ctrl_interp_fn fn, void *ctx)
{
    fl_ctrl_manager *m = env->manager;
    interp_sub *s = fl_calloc(1, sizeof *s);
    s->fn = fn;
    s->ctx = ctx;
    pthread_mutex_lock(&m->subs_mu);
    /* appended: subscribers run in start order, the detector's requeue before the others' */
    interp_sub **pp = &m->subs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = s;
    pthread_mutex_unlock(&m->subs_mu);
}

void fl_ctrl_interp_changed(const fl_ctrl_env *env, const char *api_version, const char *kind)
{
    fl_ctrl_manager *m = env->manager;
    pthread_mutex_lock(&m->subs_mu);
    if (!m->subs_closed) {
        fl_log(FL_LOG_DEBUG, "controllers", "interpreter changed for %s %s: re-running what depends on it",
               api_version ? api_version : "*", kind ? kind : "*");
        for (interp_sub *s = m->subs; s; s = s->next)
            s->fn(s->ctx, api_version, kind);
    }
    pthread_mutex_unlock(&m->subs_mu);
}

bool fl_ctrl_interp_matches(const char *want_av, const char *want_kind, const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return false;
    return (!want_av || !strcmp(want_av, api_version)) && (!want_kind || !strcmp(want_kind, kind));
}

void fl_ctrl_queue_bindings_of(fl_workqueue *q, fl_informer *rbs, fl_informer *crbs, const char *api_version,
                               const char *kind)
{
    fl_informer *infs[2] = {rbs, crbs};
    for (int i = 0; i < 2; i++) {
        json_t *all = fl_informer_list(infs[i], NULL);
        size_t j;
        json_t *o;
        json_array_foreach(all, j, o) {
            const json_t *res = json_object_get(json_object_get(o, "spec"), "resource");
            if (fl_ctrl_interp_matches(api_version, kind, json_string_value(json_object_get(res, "apiVersion")),
                                       json_string_value(json_object_get(res, "kind"))))
                fl_ctrl_queue_binding(q, o);
        }
        json_decref(all);
    }
}

/* ---- worker pools ---- */

struct fl_ctrl_workers {
    fl_workqueue *q;
    char tname[16]; /* the threads' name: "w-" and the controller's, as perf and top -H show it */
    int (*reconcile)(void *ctx, const char *key);
    void *ctx;
    int n;
    pthread_t *threads;
    fl_informer **synced; /* NULL-terminated; NULL for none */
    fl_ctrl_reconcile_metrics metrics;
    int batch;            /* keys a thread takes at once (fl_ctrl_workers_start_batched); 1 */
};

void fl_ctrl_reconcile_metrics_init(fl_ctrl_reconcile_metrics *m, const char *controller)
{
    fl_metric *total = fl_metric_family(FL_METRIC_COUNTER, "flotilla_controller_reconcile_total",
                                        "Reconciles by controller and result: success, requeue (asked to run again "
                                        "after its back-off) or error.",
                                        "controller", "result", NULL, 0);
    fl_metric *dur = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_controller_reconcile_duration_seconds",
                                      "Seconds one reconcile took, by controller.", "controller", NULL, NULL, 0);
    m->success = fl_metric_with(total, controller, "success");
    m->requeue = fl_metric_with(total, controller, "requeue");
    m->error = fl_metric_with(total, controller, "error");
    m->duration = fl_metric_with(dur, controller, NULL);
}

void fl_ctrl_reconcile_observe(const fl_ctrl_reconcile_metrics *m, int rc, double seconds)
{
    fl_metric_add(rc == 0 ? m->success : rc > 0 ? m->requeue : m->error, 1);
    fl_metric_observe(m->duration, seconds);
}

double fl_ctrl_now_s(void)
{
    return (double)fl_time_mono_ns() / 1e9;
}

void fl_ctrl_wait_synced(fl_workqueue *q, fl_informer *const *synced)
{
    for (fl_informer *const *inf = synced; inf && *inf; inf++)
        while (!fl_workqueue_shutting_down(q)) {
            int rc = fl_informer_wait_synced(*inf, 100);
            if (rc == 0 || rc == FL_ECLOSED) /* stopped: the manager is stopping too */
                break;
        }
}

void fl_ctrl_requeue(fl_workqueue *q, const char *key, int rc)
{
    if (rc == 0 || rc == FL_ECONFLICT)
        fl_workqueue_forget(q, key);
    if (rc == FL_ECONFLICT)
        fl_workqueue_add_after(q, key, FL_CTRL_CONFLICT_RETRY_MS);
    else if (rc)
        fl_workqueue_add_rate_limited(q, key);
}

/* Reconcile one key taken from the queue, count it, and give it back. */
static void work_one(fl_ctrl_workers *w, char *key)
{
    /* stopping: what is still queued is not worked off (the store is the truth; the next
     * start reconciles everything), or a backlog of thousands would hold the stop up */
    if (!fl_workqueue_shutting_down(w->q)) {
        double t0 = fl_ctrl_now_s();
        int rc = w->reconcile(w->ctx, key);
        fl_ctrl_reconcile_observe(&w->metrics, rc == FL_ECONFLICT ? 1 : rc, fl_ctrl_now_s() - t0);
        fl_ctrl_requeue(w->q, key, rc);
    }
    fl_workqueue_done(w->q, key);
    free(key);
}

typedef struct key_batch {
    fl_ctrl_workers *w;
    char **keys;
} key_batch;

static void work_batched(void *ctx, int i)
{
    key_batch *b = ctx;
    work_one(b->w, b->keys[i]);
}

static void *worker_main(void *arg)
{
    fl_ctrl_workers *w = arg;
    char *key;
    pthread_setname_np(pthread_self(), w->tname);
    fl_ctrl_wait_synced(w->q, w->synced);
    char **keys = fl_calloc((size_t)w->batch, sizeof *keys);
    while (fl_workqueue_get(w->q, -1, &key) == 0) {
        keys[0] = key;
        int n = 1;
        while (n < w->batch && fl_workqueue_get(w->q, 0, &keys[n]) == 0)
            n++;
        if (n == 1) {
            work_one(w, key);
        } else {
            key_batch b = {w, keys};
            fl_parallel(n, n, work_batched, &b);
        }
    }
    free(keys);
    return NULL;
}

fl_ctrl_workers *fl_ctrl_workers_start(fl_workqueue *q, const char *name, int n,
                                       int (*reconcile)(void *ctx, const char *key), void *ctx)
{
    return fl_ctrl_workers_start_synced(q, name, n, reconcile, ctx, NULL);
}

fl_ctrl_workers *fl_ctrl_workers_start_synced(fl_workqueue *q, const char *name, int n,
                                              int (*reconcile)(void *ctx, const char *key), void *ctx,
                                              fl_informer *const *synced)
{
    return fl_ctrl_workers_start_batched(q, name, n, 1, reconcile, ctx, synced);
}

fl_ctrl_workers *fl_ctrl_workers_start_batched(fl_workqueue *q, const char *name, int n, int batch,
                                               int (*reconcile)(void *ctx, const char *key), void *ctx,
                                               fl_informer *const *synced)
{
    fl_ctrl_workers *w = fl_calloc(1, sizeof *w);
    w->batch = batch > 1 ? batch : 1;
    w->q = q;
    snprintf(w->tname, sizeof w->tname, "w-%s", name);
    /* the queue takes the controller's name for its workqueue_* metrics (client-go names a
     * controller's queue after it too); keys added before this moment are not counted */
    fl_workqueue_set_name(q, name);
    fl_ctrl_reconcile_metrics_init(&w->metrics, name);
    w->reconcile = reconcile;
    w->ctx = ctx;
    size_t ns = 0;
    while (synced && synced[ns])
        ns++;
    if (ns) {
        w->synced = fl_calloc(ns + 1, sizeof *w->synced);
        memcpy(w->synced, synced, ns * sizeof *w->synced);
    }
    w->threads = fl_calloc((size_t)(n > 0 ? n : 1), sizeof *w->threads);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&w->threads[w->n], NULL, worker_main, w) != 0) {
            fl_log(FL_LOG_ERROR, "controllers", "cannot start a worker thread (%d of %d running)", w->n, n);
            break;
        }
        w->n++;
    }
    return w;
}

void fl_ctrl_workers_join(fl_ctrl_workers *w)
{
    if (!w)
        return;
    fl_workqueue_shut_down(w->q);
    for (int i = 0; i < w->n; i++)
        pthread_join(w->threads[i], NULL);
    free(w->threads);
    free(w->synced);
    free(w);
}

json_t *fl_ctrl_status_copy(const json_t *obj, json_t **status)
{
    json_t *c = fl_json_shallow_copy(obj);
    json_t *st = fl_json_shallow_copy(json_object_get(obj, "status"));
    if (json_is_array(json_object_get(st, "conditions")))
        json_object_set_new(st, "conditions", fl_json_deep_copy(json_object_get(st, "conditions")));
    else
        json_object_del(st, "conditions");
    json_object_set_new(c, "status", st);
    *status = st;
    return c;
}
