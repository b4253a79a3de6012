/* manager.c - starts and stops the controllers of a process, and owns what they share
 * (see controller.h): member clients, template informers, the interpreter, the event
 * recorder, shared informers, and the worker-pool loop every controller runs. */
#include "controllers/controller.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "client/informer.h"
#include "client/workqueue.h"
#include "controllers/events.h"
#include "controllers/members.h"
#include "controllers/templates.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "interp/interp.h"

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
};

fl_informer *fl_ctrl_informer(const fl_ctrl_env *env, const char *api_version, const char *resource)
{
    fl_ctrl_manager *m = env->manager;
    for (shared_informer *s = m->shared; s; s = s->next)
        if (!strcmp(s->api_version, api_version) && !strcmp(s->resource, resource))
            return s->inf;
    shared_informer *s = fl_calloc(1, sizeof *s);
    s->api_version = fl_strdup(api_version);
    s->resource = fl_strdup(resource);
    fl_informer_config cfg = {
        .client = env->cp,
        .resource = {.api_version = api_version, .resource = resource},
        .transform = fl_informer_drop_managed_fields,
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
    m->env.templates = fl_templates_new(env->cp);
    m->env.interp = fl_interp_new();
    m->env.recorder = fl_recorder_new(env->cp, "flotilla-controller-manager");
    m->env.manager = m;
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

void fl_ctrl_manager_stop(fl_ctrl_manager *m)
{
    if (!m)
        return;
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
    free(m->ctrl);
    free(m->state);
    free(m);
}

/* ---- worker pools ---- */

struct fl_ctrl_workers {
    fl_workqueue *q;
    int (*reconcile)(void *ctx, const char *key);
    void *ctx;
    int n;
    pthread_t *threads;
};

static void *worker_main(void *arg)
{
    fl_ctrl_workers *w = arg;
    char *key;
    while (fl_workqueue_get(w->q, -1, &key) == 0) {
        if (w->reconcile(w->ctx, key) == 0)
            fl_workqueue_forget(w->q, key);
        else
            fl_workqueue_add_rate_limited(w->q, key);
        fl_workqueue_done(w->q, key);
        free(key);
    }
    return NULL;
}

fl_ctrl_workers *fl_ctrl_workers_start(fl_workqueue *q, int n, int (*reconcile)(void *ctx, const char *key),
                                       void *ctx)
{
    fl_ctrl_workers *w = fl_calloc(1, sizeof *w);
    w->q = q;
    w->reconcile = reconcile;
    w->ctx = ctx;
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
    free(w);
}

/* ---- parallel for ---- */

typedef struct par {
    atomic_int next;
    int n;
    void (*fn)(void *ctx, int i);
    void *ctx;
} par;

static void *par_main(void *arg)
{
    par *p = arg;
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        p->fn(p->ctx, i);
    return NULL;
}

void fl_ctrl_parallel(int n, int max_threads, void (*fn)(void *ctx, int i), void *ctx)
{
    par p = {.n = n, .fn = fn, .ctx = ctx};
    atomic_init(&p.next, 0);
    int extra = (n < max_threads ? n : max_threads) - 1;
    pthread_t *t = extra > 0 ? fl_calloc((size_t)extra, sizeof *t) : NULL;
    int started = 0;
    for (int i = 0; i < extra; i++)
        if (pthread_create(&t[i], NULL, par_main, &p) == 0)
            started++;
        else
            break;
    par_main(&p);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
}
