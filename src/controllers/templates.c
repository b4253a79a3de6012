/* templates.c - the shared per-kind template informers (contract in templates.h).
 *
 * Kinds are few (the kinds policies name, and their dependencies' kinds), so they sit in
 * a plain list under one mutex; lookups walk it. Subscribers are few too (one per
 * controller) and only ever added, so handlers read the array without the lock up to a
 * count published with release/acquire ordering. Starting an informer does its discovery
 * request outside the lock, so a slow control plane never blocks readers of other kinds. */
#include "controllers/templates.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/informer.h"
#include "core/err.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define MAX_SUBSCRIBERS 16

typedef struct kind_entry {
    struct kind_entry *next;
    fl_template_kind k;          /* strings owned below */
    char *api_version, *kind, *resource;
    fl_informer *inf;
    struct fl_templates *owner;
    bool status_in_object;  /* fl_templates_status_in_object's answer, under owner->mu */
    int64_t status_read_ms; /* when it was read (monotonic); 0: never */
} kind_entry;

struct fl_templates {
    fl_client *cp;
    int64_t resume_rev; /* fl_informer_config.resume_rev of every kind's informer */
    pthread_mutex_t mu;
    kind_entry *kinds;
    bool stopped;
    fl_template_handlers subs[MAX_SUBSCRIBERS];
    atomic_int nsubs;
};

/* ---- fan-out ---- */

static void on_add(void *ctx, json_t *obj)
{
    kind_entry *e = ctx;
    int n = atomic_load_explicit(&e->owner->nsubs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (e->owner->subs[i].on_add)
            e->owner->subs[i].on_add(e->owner->subs[i].ctx, &e->k, obj);
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    kind_entry *e = ctx;
    int n = atomic_load_explicit(&e->owner->nsubs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (e->owner->subs[i].on_update)
            e->owner->subs[i].on_update(e->owner->subs[i].ctx, &e->k, old_obj, new_obj);
}

static void on_delete(void *ctx, json_t *obj)
{
    kind_entry *e = ctx;
    int n = atomic_load_explicit(&e->owner->nsubs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (e->owner->subs[i].on_delete)
            e->owner->subs[i].on_delete(e->owner->subs[i].ctx, &e->k, obj);
}

/* ---- registry ---- */

fl_templates *fl_templates_new(fl_client *cp, int64_t resume_rev)
{
    fl_templates *t = fl_calloc(1, sizeof *t);
    t->cp = cp;
    t->resume_rev = resume_rev;
    pthread_mutex_init(&t->mu, NULL);
    atomic_init(&t->nsubs, 0);
    return t;
}

void fl_templates_stop(fl_templates *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stopped = true;
    kind_entry *list = t->kinds;
    pthread_mutex_unlock(&t->mu);
    /* the list only grows while not stopped, so walking it unlocked is safe now */
    for (kind_entry *e = list; e; e = e->next)
        fl_informer_stop(e->inf);
}

void fl_templates_free(fl_templates *t)
{
    if (!t)
        return;
    fl_templates_stop(t);
    for (kind_entry *e = t->kinds, *next; e; e = next) {
        next = e->next;
        fl_informer_free(e->inf);
        free(e->api_version);
        free(e->kind);
        free(e->resource);
        free(e);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static kind_entry *find_locked(fl_templates *t, const char *api_version, const char *kind)
{
    for (kind_entry *e = t->kinds; e; e = e->next)
        if (!strcmp(e->kind, kind) && !strcmp(e->api_version, api_version))
            return e;
    return NULL;
}

static kind_entry *find(fl_templates *t, const char *api_version, const char *kind)
{
    pthread_mutex_lock(&t->mu);
    kind_entry *e = find_locked(t, api_version, kind);
    pthread_mutex_unlock(&t->mu);
    return e;
}

void fl_templates_subscribe(fl_templates *t, const fl_template_handlers *h)
{
    pthread_mutex_lock(&t->mu);
    int n = atomic_load_explicit(&t->nsubs, memory_order_relaxed);
    if (n == MAX_SUBSCRIBERS) {
        pthread_mutex_unlock(&t->mu);
        fl_log(FL_LOG_ERROR, "templates", "more than %d subscribers: one ignored", MAX_SUBSCRIBERS);
        return;
    }
    t->subs[n] = *h;
    atomic_store_explicit(&t->nsubs, n + 1, memory_order_release);
    kind_entry *list = t->kinds;
    pthread_mutex_unlock(&t->mu);
    if (!h->on_add)
        return;
    for (kind_entry *e = list; e; e = e->next) {
        json_t *all = fl_informer_list(e->inf, NULL);
        size_t i;
        json_t *obj;
        json_array_foreach(all, i, obj) h->on_add(h->ctx, &e->k, obj);
        json_decref(all);
    }
}

int fl_templates_watch(fl_templates *t, const char *api_version, const char *kind, int wait_ms,
                       const fl_template_kind **k)
{
    if (k)
        *k = NULL;
    kind_entry *e = find(t, api_version, kind);
    if (!e) {
        char *resource = NULL;
        bool namespaced = false;
        fl_client_error ce;
        int rc = fl_client_resolve(t->cp, api_version, kind, &resource, &namespaced, &ce);
        if (rc)
            return rc;
        pthread_mutex_lock(&t->mu);
        if (t->stopped) {
            pthread_mutex_unlock(&t->mu);
            free(resource);
            return FL_ECLOSED;
        }
        e = find_locked(t, api_version, kind);
        if (!e) {
            e = fl_calloc(1, sizeof *e);
            e->owner = t;
            e->api_version = fl_strdup(api_version);
            e->kind = fl_strdup(kind);
            e->resource = resource;
            resource = NULL;
            e->k = (fl_template_kind){e->api_version, e->kind, e->resource, namespaced};
            fl_informer_config cfg = {
                .client = t->cp,
                .resource = {.api_version = api_version, .resource = e->resource},
                .handlers = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .ctx = e},
                .transform = fl_informer_drop_managed_fields,
                /* thousands of templates: kept as their revisions, read when asked for */
                .compact = true,
                .resume_rev = t->resume_rev,
                /* every subscriber's add skips a template unchanged since the revision a
                 * start resumes at (fl_ctrl_resumed_add): those are listed bare */
                .resume_bare = true,
            };
            fl_informer_new(&cfg, &e->inf);
            fl_informer_start(e->inf);
            e->next = t->kinds;
            t->kinds = e;
            fl_log(FL_LOG_DEBUG, "templates", "watching %s %s", api_version, kind);
        }
        pthread_mutex_unlock(&t->mu);
        free(resource);
    }
    if (k)
        *k = &e->k;
    return fl_informer_wait_synced(e->inf, wait_ms);
}

int fl_templates_get(fl_templates *t, const char *api_version, const char *kind, const char *ns, const char *name,
                     json_t **out, bool *synced)
{
    *out = NULL;
    if (synced)
        *synced = false;
    kind_entry *e = find(t, api_version, kind);
    if (!e)
        return FL_ENOTFOUND;
    if (synced)
        *synced = fl_informer_has_synced(e->inf);
    return fl_informer_get(e->inf, e->k.namespaced ? ns : NULL, name, out);
}

json_t *fl_templates_list(fl_templates *t, const char *api_version, const char *kind, const char *ns)
{
    kind_entry *e = find(t, api_version, kind);
    return e ? fl_informer_list(e->inf, e->k.namespaced ? ns : NULL) : json_array();
}

bool fl_templates_all_listed(fl_templates *t)
{
    pthread_mutex_lock(&t->mu);
    bool all = true;
    for (kind_entry *e = t->kinds; e && all; e = e->next)
        all = fl_informer_has_synced(e->inf);
    pthread_mutex_unlock(&t->mu);
    return all;
}

bool fl_templates_listed(fl_templates *t, const fl_template_kind *k)
{
    pthread_mutex_lock(&t->mu);
    kind_entry *e = t->kinds;
    while (e && &e->k != k)
        e = e->next;
    pthread_mutex_unlock(&t->mu);
    return e && fl_informer_has_synced(e->inf);
}

/* ---- where a kind keeps its status ---- */

#define STATUS_READ_MS 30000

bool fl_templates_status_in_object(fl_templates *t, const fl_template_kind *k)
{
    const char *slash = k ? strchr(k->api_version, '/') : NULL;
    if (!slash)
        return false; /* the core group: built in */
    kind_entry *e = (kind_entry *)((char *)k - offsetof(kind_entry, k));
    int64_t now = fl_time_mono_ms();
    pthread_mutex_lock(&t->mu);
    bool known = e->status_read_ms && now - e->status_read_ms < STATUS_READ_MS, in_object = e->status_in_object;
    pthread_mutex_unlock(&t->mu);
    if (known)
        return in_object;
    static const fl_gvr CRDS = {"apiextensions.k8s.io/v1", "customresourcedefinitions"};
    char name[512];
    snprintf(name, sizeof name, "%s.%.*s", k->resource, (int)(slash - k->api_version), k->api_version);
    json_t *crd = NULL;
    fl_client_error ce;
    int rc = fl_client_get(t->cp, &CRDS, NULL, name, &crd, &ce);
    in_object = false;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(crd, "spec"), "versions"), i, v)
        if (fl_json_str(v, "name") && !strcmp(fl_json_str(v, "name"), slash + 1))
            in_object = !json_object_get(json_object_get(v, "subresources"), "status");
    json_decref(crd);
    if (rc == 0 || rc == FL_ENOTFOUND) { /* not a CRD: a built-in kind */
        pthread_mutex_lock(&t->mu);
        e->status_in_object = in_object;
        e->status_read_ms = now;
        pthread_mutex_unlock(&t->mu);
    }
    return in_object;
}
