/* informer.c - list+watch cache of one resource (contract in informer.h).
 *
 * One thread per informer runs the reflector loop: list, then watch from the list's
 * resourceVersion until the stream ends, then either watch again (clean end) or
 * list again (410 Expired, broken stream). The cache is a jansson object from key to
 * object behind a rwlock; only the informer's thread writes it, so it may read the
 * cache without the lock, and takes the write lock only for the moment of a change.
 * Handlers are called after the lock is released, so they can read the cache.
 *
 * A re-list builds a new map from the list, swaps it in whole, and then walks both
 * maps to tell handlers what changed: present only in the new one = add, present in
 * both with a different resourceVersion = update, present only in the old one =
 * delete (with the last state we had; the real final state is gone with the
 * compacted history). Objects whose resourceVersion did not change are silent,
 * unlike client-go's resync, because controllers here requeue on their own timers.
 *
 * One fl_client_cancel covers everything the thread blocks on (list, watch, back-off
 * sleep), so fl_informer_stop only has to fire it and join. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/informer.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"

struct fl_informer {
    fl_client *client;
    char *api_version, *resource, *ns, *label, *field;
    int64_t page;
    void (*transform)(json_t *obj);
    const char *const *skip; /* borrowed from the config */
    int backoff_min, backoff_max, watch_timeout;
    fl_informer_handlers *handlers;
    size_t nhandlers;

    fl_client_cancel *cancel;
    pthread_mutex_t life_mu;     /* start/stop */
    pthread_t thread;
    bool started, joined;

    pthread_rwlock_t lock;       /* cache and rv */
    json_t *cache;               /* key -> object */
    char rv[64];

    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cond;    /* CLOCK_MONOTONIC */
    bool synced, stopped;

    unsigned rng;                /* jitter; used only by the informer's thread */
    size_t events;               /* events applied by the current watch */
};

static char *dup_opt(const char *s)
{
    return s && *s ? fl_strdup(s) : NULL;
}

char *fl_informer_key(const json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!name || !*name)
        return NULL;
    return ns && *ns ? fl_asprintf("%s/%s", ns, name) : fl_strdup(name);
}

int fl_informer_new(const fl_informer_config *cfg, fl_informer **out)
{
    *out = NULL;
    if (!cfg || !cfg->client || !cfg->resource.api_version || !cfg->resource.resource)
        return FL_EINVAL;
    fl_informer *inf = fl_calloc(1, sizeof *inf);
    inf->client = cfg->client;
    inf->api_version = fl_strdup(cfg->resource.api_version);
    inf->resource = fl_strdup(cfg->resource.resource);
    inf->ns = dup_opt(cfg->ns);
    inf->label = dup_opt(cfg->label_selector);
    inf->field = dup_opt(cfg->field_selector);
    inf->page = cfg->page_size > 0 ? cfg->page_size : 500;
    inf->transform = cfg->transform;
    inf->skip = cfg->skip_fields;
    inf->backoff_min = cfg->backoff_min_ms > 0 ? cfg->backoff_min_ms : 200;
    inf->backoff_max = cfg->backoff_max_ms > 0 ? cfg->backoff_max_ms : 30000;
    if (inf->backoff_max < inf->backoff_min)
        inf->backoff_max = inf->backoff_min;
    inf->watch_timeout = cfg->watch_timeout_s;
    inf->cancel = fl_client_cancel_new();
    pthread_mutex_init(&inf->life_mu, NULL);
    pthread_rwlock_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->sync_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&inf->sync_cond, &ca);
    pthread_condattr_destroy(&ca);
    inf->cache = json_object();
    inf->rng = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)inf;
    if (cfg->handlers.on_add || cfg->handlers.on_update || cfg->handlers.on_delete)
        fl_informer_add_handlers(inf, &cfg->handlers);
    *out = inf;
    return 0;
}

int fl_informer_add_handlers(fl_informer *inf, const fl_informer_handlers *h)
{
    pthread_mutex_lock(&inf->life_mu);
    int rc = FL_EINVAL;
    if (!inf->started) {
        inf->handlers = fl_realloc(inf->handlers, (inf->nhandlers + 1) * sizeof *inf->handlers);
        inf->handlers[inf->nhandlers++] = *h;
        rc = 0;
    }
    pthread_mutex_unlock(&inf->life_mu);
    return rc;
}

/* ---- handler dispatch (informer thread, no lock held) ---- */

static void emit_add(fl_informer *inf, json_t *obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_add)
            inf->handlers[i].on_add(inf->handlers[i].ctx, obj);
}

static void emit_update(fl_informer *inf, json_t *old_obj, json_t *new_obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_update)
            inf->handlers[i].on_update(inf->handlers[i].ctx, old_obj, new_obj);
}

static void emit_delete(fl_informer *inf, json_t *obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_delete)
            inf->handlers[i].on_delete(inf->handlers[i].ctx, obj);
}

/* ---- the reflector loop ---- */

static void set_rv_locked(fl_informer *inf, const char *rv)
{
    if (rv && *rv)
        snprintf(inf->rv, sizeof inf->rv, "%s", rv);
}

static void mark_synced(fl_informer *inf)
{
    pthread_mutex_lock(&inf->sync_mu);
    inf->synced = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_mu);
}

/* LIST everything and replace the cache, telling handlers the difference. */
static int relist(fl_informer *inf)
{
    fl_gvr r = {inf->api_version, inf->resource};
    fl_list_opts o = {.label_selector = inf->label, .field_selector = inf->field, .limit = inf->page,
                      .skip_fields = inf->skip};
    fl_list_result l;
    fl_client_error err;
    int rc = fl_client_list_all(inf->client, &r, inf->ns, &o, inf->cancel, &l, &err);
    if (rc) {
        if (rc != FL_ECLOSED)
            fl_log(FL_LOG_WARN, "informer", "%s: list failed: %s", inf->resource, err.message);
        return rc;
    }
    json_t *fresh = json_object();
    size_t i;
    json_t *item;
    json_array_foreach(l.items, i, item) {
        if (inf->transform)
            inf->transform(item);
        char *key = fl_informer_key(item);
        if (key)
            json_object_set(fresh, key, item);
        free(key);
    }
    pthread_rwlock_wrlock(&inf->lock);
    json_t *old = inf->cache;
    inf->cache = fresh;
    set_rv_locked(inf, l.resource_version);
    pthread_rwlock_unlock(&inf->lock);

    /* walk in the list's (key) order so handlers see a stable sequence */
    json_array_foreach(l.items, i, item) {
        char *key = fl_informer_key(item);
        if (!key)
            continue;
        json_t *prev = json_object_get(old, key);
        if (!prev)
            emit_add(inf, item);
        else if (strcmp(fl_client_object_rv(prev), fl_client_object_rv(item)) != 0)
            emit_update(inf, prev, item);
        free(key);
    }
    const char *key;
    json_t *prev;
    json_object_foreach(old, key, prev) {
        if (!json_object_get(fresh, key))
            emit_delete(inf, prev);
    }
    json_decref(old);
    fl_list_result_close(&l);
    if (!fl_informer_has_synced(inf))
        mark_synced(inf);
    return 0;
}

/* Apply one watch event to the cache, then tell the handlers. */
static bool on_event(void *ctx, int type, json_t *obj)
{
    fl_informer *inf = ctx;
    const char *rv = fl_client_object_rv(obj);
    if (type == FL_WATCH_BOOKMARK) {
        pthread_rwlock_wrlock(&inf->lock);
        set_rv_locked(inf, rv);
        pthread_rwlock_unlock(&inf->lock);
        return true;
    }
    if (inf->transform)
        inf->transform(obj);
    char *key = fl_informer_key(obj);
    json_t *prev = key ? json_object_get(inf->cache, key) : NULL; /* only this thread writes the cache */
    json_incref(prev);
    pthread_rwlock_wrlock(&inf->lock);
    if (key) {
        if (type == FL_WATCH_DELETED)
            json_object_del(inf->cache, key);
        else
            json_object_set(inf->cache, key, obj);
    }
    set_rv_locked(inf, rv);
    pthread_rwlock_unlock(&inf->lock);
    inf->events++;

    if (key) {
        if (type == FL_WATCH_DELETED) {
            if (prev) /* a delete of something we never had is nothing to report */
                emit_delete(inf, obj);
        } else if (prev) {
            emit_update(inf, prev, obj);
        } else {
            emit_add(inf, obj);
        }
    }
    json_decref(prev);
    free(key);
    return true;
}

/* Sleep the back-off for the nth consecutive failure: min * 2^n capped, with the lower
 * half jittered so that many informers failing together do not retry together. */
static void backoff(fl_informer *inf, int *failures)
{
    int64_t d = inf->backoff_min;
    for (int i = 0; i < *failures && d < inf->backoff_max; i++)
        d *= 2;
    if (d > inf->backoff_max)
        d = inf->backoff_max;
    int ms = (int)(d / 2 + rand_r(&inf->rng) % (d / 2 + 1));
    if (*failures < 30)
        (*failures)++;
    fl_client_cancel_sleep(inf->cancel, ms);
}

static void *informer_main(void *arg)
{
    fl_informer *inf = arg;
    fl_gvr r = {inf->api_version, inf->resource};
    char tname[16];
    snprintf(tname, sizeof tname, "inf-%s", inf->resource); /* names show in perf and top -H */
    pthread_setname_np(pthread_self(), tname);
    int failures = 0;
    bool need_list = true;
    while (!fl_client_cancel_fired(inf->cancel)) {
        if (need_list) {
            int rc = relist(inf);
            if (rc == FL_ECLOSED)
                break;
            if (rc) {
                backoff(inf, &failures);
                continue;
            }
            need_list = false;
        }
        char rv[64];
        fl_informer_last_rv(inf, rv, sizeof rv);
        fl_watch_opts o = {.resource_version = rv, .label_selector = inf->label, .field_selector = inf->field,
                           .allow_bookmarks = true, .skip_fields = inf->skip,
                           .timeout_seconds = inf->watch_timeout > 0 ? inf->watch_timeout
                                                                     : 300 + (int)(rand_r(&inf->rng) % 300)};
        fl_client_error err;
        inf->events = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = fl_client_watch(inf->client, &r, inf->ns, &o, on_event, inf, inf->cancel, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t lasted_ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        if (inf->events > 0)
            failures = 0;
        if (rc == FL_ECLOSED)
            break;
        if (rc == 0 && inf->events == 0 && lasted_ms < 1000) {
            /* a server that ends every watch at once (shutting down, or a proxy) would
             * otherwise have us spin; client-go treats this the same way */
            fl_log(FL_LOG_DEBUG, "informer", "%s: watch closed after %lld ms with no events", inf->resource,
                   (long long)lasted_ms);
            backoff(inf, &failures);
        } else if (rc == 0) {
            failures = 0; /* the server's timeout: carry on from where we are */
        } else if (rc == FL_EEXPIRED) {
            fl_log(FL_LOG_DEBUG, "informer", "%s: resourceVersion %s expired, re-listing", inf->resource, rv);
            need_list = true;
        } else {
            fl_log(FL_LOG_WARN, "informer", "%s: watch failed: %s; re-listing", inf->resource, err.message);
            need_list = true;
            backoff(inf, &failures);
        }
    }
    pthread_mutex_lock(&inf->sync_mu);
    inf->stopped = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_mu);
    return NULL;
}

int fl_informer_start(fl_informer *inf)
{
    pthread_mutex_lock(&inf->life_mu);
    int rc = FL_EINVAL;
    if (!inf->started) {
        inf->started = true;
        if (pthread_create(&inf->thread, NULL, informer_main, inf) == 0) {
            rc = 0;
        } else {
            inf->joined = true; /* nothing to join */
            rc = FL_EIO;
        }
    }
    pthread_mutex_unlock(&inf->life_mu);
    return rc;
}

void fl_informer_stop(fl_informer *inf)
{
    pthread_mutex_lock(&inf->life_mu);
    fl_client_cancel_fire(inf->cancel);
    if (inf->started && !inf->joined) {
        pthread_join(inf->thread, NULL);
        inf->joined = true;
    }
    if (!inf->started) { /* a stopped informer cannot be started again */
        inf->started = true;
        inf->joined = true;
    }
    pthread_mutex_unlock(&inf->life_mu);
    pthread_mutex_lock(&inf->sync_mu);
    inf->stopped = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_mu);
}

void fl_informer_free(fl_informer *inf)
{
    if (!inf)
        return;
    fl_informer_stop(inf);
    json_decref(inf->cache);
    fl_client_cancel_free(inf->cancel);
    pthread_cond_destroy(&inf->sync_cond);
    pthread_mutex_destroy(&inf->sync_mu);
    pthread_rwlock_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->life_mu);
    free(inf->handlers);
    free(inf->api_version);
    free(inf->resource);
    free(inf->ns);
    free(inf->label);
    free(inf->field);
    free(inf);
}

bool fl_informer_has_synced(fl_informer *inf)
{
    pthread_mutex_lock(&inf->sync_mu);
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->sync_mu);
    return s;
}

int fl_informer_wait_synced(fl_informer *inf, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&inf->sync_mu);
    int rc = 0;
    while (!inf->synced && !inf->stopped)
        if (pthread_cond_timedwait(&inf->sync_cond, &inf->sync_mu, &ts) != 0)
            break;
    if (!inf->synced)
        rc = inf->stopped ? FL_ECLOSED : FL_ETIMEDOUT;
    pthread_mutex_unlock(&inf->sync_mu);
    return rc;
}

int fl_informer_get_key(fl_informer *inf, const char *key, json_t **out)
{
    pthread_rwlock_rdlock(&inf->lock);
    *out = json_incref(json_object_get(inf->cache, key));
    pthread_rwlock_unlock(&inf->lock);
    return *out ? 0 : FL_ENOTFOUND;
}

int fl_informer_get(fl_informer *inf, const char *ns, const char *name, json_t **out)
{
    char *key = ns && *ns ? fl_asprintf("%s/%s", ns, name) : fl_strdup(name);
    int rc = fl_informer_get_key(inf, key, out);
    free(key);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *fl_informer_list(fl_informer *inf, const char *ns)
{
    size_t nslen = ns ? strlen(ns) : 0;
    pthread_rwlock_rdlock(&inf->lock);
    size_t n = json_object_size(inf->cache), k = 0;
    const char **keys = fl_malloc((n ? n : 1) * sizeof *keys);
    const char *key;
    json_t *v;
    json_object_foreach(inf->cache, key, v) {
        if (ns && (strncmp(key, ns, nslen) != 0 || key[nslen] != '/'))
            continue;
        keys[k++] = key;
    }
    qsort(keys, k, sizeof *keys, cmp_str);
    json_t *arr = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append(arr, json_object_get(inf->cache, keys[i]));
    pthread_rwlock_unlock(&inf->lock);
    free(keys);
    return arr;
}

void fl_informer_last_rv(fl_informer *inf, char *buf, size_t cap)
{
    pthread_rwlock_rdlock(&inf->lock);
    snprintf(buf, cap, "%s", inf->rv);
    pthread_rwlock_unlock(&inf->lock);
}

const char *const fl_informer_skip_managed_fields[] = {"metadata.managedFields", NULL};

void fl_informer_drop_managed_fields(json_t *obj)
{
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

void fl_informer_drop_status(json_t *obj)
{
    fl_informer_drop_managed_fields(obj);
    json_object_del(obj, "status");
}
