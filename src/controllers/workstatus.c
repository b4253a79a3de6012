/* workstatus.c - the member side of Work delivery: shared watches, health, manifest status.
 *
 * Watches. The execution controller must notice when an object it delivered changes in
 * its member: deleted (re-create it), edited (put the manifest back), status moved
 * (report it in the Work). Watching per Work would open one stream per Work and object;
 * instead there is one informer per (member, kind), started the first time a Work of
 * that member needs that kind and shared by every Work there. It lists and watches only
 * objects labelled karmada.io/managed=true, so its cache holds what we delivered, not the
 * member's whole content, and memory per member is bounded by what we manage there. Its
 * handlers do one thing: put the owning Work's key (from the object's
 * work.karmada.io/namespace and work.karmada.io/name annotations) on the controller's
 * queue; the reconcile then reads the cache. A watch lives while any Work of its member
 * has a manifest of its kind: the controller's periodic resync builds the set in use and
 * fl_ws_watches_sweep() stops the rest (a member that was unjoined loses all of them).
 *
 * The registry is a hash table (core/htab.h) under one mutex. Entries are reference counted:
 * the table holds one reference, each reconcile using a watch another, so a sweep or a
 * replacement never stops an informer a worker is reading; the last put stops and frees
 * it, outside the mutex (a stop joins the informer's thread, whose handlers never take
 * the mutex, so there is no lock order to get wrong).
 *
 * Status. fl_ws_manifest_status() builds the Work's status.manifestStatuses entry for one
 * member object: its identifier, and the status and health the resource interpreter
 * reflects for its kind (interp/interp.h; the whole .status for kinds without a rule).
 * When a rule fails (a customization's script errs or runs out of budget), the entry keeps
 * the status reported before and says health Unknown, and the error goes back to the
 * caller, which reports it (events on the Work and its binding); a kind without a rule is
 * not an error.
 * fl_ws_write_status() puts those entries and the Applied condition on the Work, with one
 * status write and only when something changed, so re-queuing a Work whose member is
 * quiet writes nothing. */
#include "controllers/workstatus.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/metrics.h"
#include "controllers/dispatching.h"
#include "controllers/statuslag.h"
#include "controllers/summary.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/htab.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "core/wellknown.h"
#include "interp/livestate.h"

struct fl_ws_watch {
    fl_hnode node;             /* in the registry's table, by key */
    char *key;                 /* fl_ws_use_key() */
    char *resource;            /* what the member serves the kind as */
    fl_ws_watches *reg;
    fl_client *client;         /* the member client the informer uses (borrowed) */
    fl_informer *inf;
    fl_workqueue *q;
    int refs;                  /* under the registry mutex */
    bool listed;               /* in the table */
    pthread_mutex_t park_mu;
    json_t *parked;            /* set of Work keys waiting for the first list: fl_ws_watch_park */
    atomic_bool resumed;       /* started at a noted revision, not listed since */
};

struct fl_ws_watches {
    pthread_mutex_t mu;
    fl_workqueue *q;
    fl_htab table;             /* fl_ws_watch by key */
    bool closed;
    void (*relisted)(void *ctx, const char *cluster); /* fl_ws_watches_on_relisted */
    void *relisted_ctx;
    fl_status_lag *lag;        /* stage "work": a member object's change -> its Work's status */
};

/* ---- handlers: on the informer's thread ---- */

/* The namespace and name of the Work that delivered obj, or false. */
static bool owner_of(const json_t *obj, const char **ns, const char **name)
{
    *ns = fl_json_meta_map(obj, "annotations", FL_WORK_NAMESPACE_ANNOTATION);
    *name = fl_json_meta_map(obj, "annotations", FL_WORK_NAME_ANNOTATION);
    if (!*ns || !*name) { /* older Karmada versions put them in labels */
        *ns = fl_json_meta_map(obj, "labels", FL_WORK_NAMESPACE_ANNOTATION);
        *name = fl_json_meta_map(obj, "labels", FL_WORK_NAME_ANNOTATION);
    }
    return *ns && *name && **ns && **name;
}

/* What a watch keeps of an object whose status its Work records (fl_informer_shed): what
 * enqueue_owner reads when it is deleted. Most of a member object's metadata is our marks
 * and Karmada's bookkeeping, a kilobyte and more. */
static json_t *owner_only(const json_t *obj)
{
    const char *ns, *name;
    const json_t *md = json_object_get(obj, "metadata");
    if (!owner_of(obj, &ns, &name))
        return NULL;
    return json_pack("{s:{s:O*, s:O*, s:O*, s:{s:s, s:s}}}", "metadata", "name", json_object_get(md, "name"),
                     "namespace", json_object_get(md, "namespace"), "resourceVersion",
                     json_object_get(md, "resourceVersion"), "annotations", FL_WORK_NAMESPACE_ANNOTATION, ns,
                     FL_WORK_NAME_ANNOTATION, name);
}

static void enqueue_owner(fl_ws_watch *wt, const json_t *obj)
{
    const char *ns, *name;
    if (!owner_of(obj, &ns, &name))
        return;
    char *key = fl_cat(ns, "/", name, NULL);
    fl_status_lag_seen(wt->reg->lag, key);
    fl_workqueue_add(wt->q, key);
    free(key);
}

static void on_add(void *ctx, json_t *obj)
{
    enqueue_owner(ctx, obj);
}

static void on_update(void *ctx, json_t *old_obj, json_t *new_obj)
{
    enqueue_owner(ctx, new_obj);
}

static void on_delete(void *ctx, json_t *obj)
{
    enqueue_owner(ctx, obj);
}

/* The Works parked on wt go back on the queue. */
static void unpark(fl_ws_watch *wt)
{
    pthread_mutex_lock(&wt->park_mu);
    json_t *keys = wt->parked;
    wt->parked = NULL;
    pthread_mutex_unlock(&wt->park_mu);
    fl_ctrl_queue_keys(wt->q, keys);
}

/* A list is over: the Works waiting for it look again, whether it worked (the adds have
 * queued the Works whose objects the member has, and these include the others) or failed
 * (they judge for themselves whether to wait on: fl_ws_watch_listing) */
static void on_listed(void *ctx, int rc)
{
    fl_ws_watch *wt = ctx;
    unpark(wt);
    if (rc)
        return;
    /* a watch that could not go on from its noted revision: what the member holds is known
     * now, but not what it lost meanwhile; the cluster's Works look again */
    if (atomic_exchange(&wt->resumed, false) && wt->reg->relisted) {
        const char *nl = strchr(wt->key, '\n');
        char *cluster = fl_strndup(wt->key, nl ? (size_t)(nl - wt->key) : strlen(wt->key));
        wt->reg->relisted(wt->reg->relisted_ctx, cluster);
        free(cluster);
    }
}

/* ---- registry ---- */

char *fl_ws_use_key(const char *cluster, const char *api_version, const char *kind)
{
    return fl_cat(cluster ? cluster : "", "\n", api_version ? api_version : "", "\n", kind ? kind : "", NULL);
}

fl_ws_watches *fl_ws_watches_new(fl_workqueue *q)
{
    fl_ws_watches *w = fl_calloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    w->q = q;
    fl_htab_init(&w->table, 64);
    w->lag = fl_status_lag_new("work");
    return w;
}

fl_status_lag *fl_ws_watches_lag(fl_ws_watches *w)
{
    return w->lag;
}

static void watch_free(fl_ws_watch *wt)
{
    fl_metrics_count("flotilla_execution_member_watches_stopped_total", "Member watches stopped", 1);
    fl_informer_free(wt->inf); /* stops and joins */
    unpark(wt);                /* none may wait for a list that will not come */
    pthread_mutex_destroy(&wt->park_mu);
    free(wt->key);
    free(wt->resource);
    free(wt);
}

/* Take wt out of the table (mutex held). Returns true when that dropped the last reference. */
static bool unlist_locked(fl_ws_watches *w, fl_ws_watch *wt)
{
    if (wt->listed)
        fl_htab_remove(&w->table, &wt->node);
    wt->listed = false;
    return --wt->refs == 0;
}

static bool watch_is(const fl_hnode *n, const void *key)
{
    return !strcmp(fl_htab_entry(n, fl_ws_watch, node)->key, key);
}

/* fl_ws_watch_get, for a watch that starts at the member revision from (NULL: lists). */
static int watch_get(fl_ws_watches *w, const char *cluster, fl_client *client, const char *api_version,
                     const char *kind, const char *resource, int wait_ms, const char *from, fl_ws_watch **out)
{
    *out = NULL;
    char *key = fl_ws_use_key(cluster, api_version, kind);
    fl_ws_watch *stale = NULL, *wt = NULL;
    bool fresh = false;
    pthread_mutex_lock(&w->mu);
    if (w->closed) {
        pthread_mutex_unlock(&w->mu);
        free(key);
        return FL_ECLOSED;
    }
    uint64_t h = fl_hash_str(key);
    wt = fl_htab_entry(fl_htab_find(&w->table, h, watch_is, key), fl_ws_watch, node);
    bool replacing = false;
    if (wt && wt->client != client) {
        /* the cluster's credentials or endpoint changed: watch again with the new client */
        if (unlist_locked(w, wt))
            stale = wt;
        wt = NULL;
        replacing = true;
    }
    if (!wt) {
        wt = fl_calloc(1, sizeof *wt);
        wt->key = key;
        key = NULL;
        wt->resource = fl_strdup(resource);
        wt->reg = w;
        wt->client = client;
        wt->q = w->q;
        atomic_init(&wt->resumed, from != NULL && !replacing);
        pthread_mutex_init(&wt->park_mu, NULL);
        fl_informer_config cfg = {
            .client = client,
            .resource = {.api_version = api_version, .resource = resource},
            .label_selector = FL_MANAGED_LABEL "=true",
            .handlers = {.on_add = on_add,
                         .on_update = on_update,
                         .on_delete = on_delete,
                         .on_listed = on_listed,
                         .ctx = wt},
            .transform = fl_informer_drop_managed_fields, /* and so not even decoded */
            .compact = true, /* one per member object of every Work: kept as text, */
            .hot_objects = 64, /* and a watch per cluster and kind */
            .shed_keep = owner_only,
            .no_old_objects = true, /* on_update reads only the new object */
            /* The first list's adds need not queue their Works: a Work that needs this
             * watch is queued already (it has not looked yet) or parked on it until the list
             * is over (fl_ws_watch_park). Queued then, it would only park once more. A watch
             * that replaces one (a new client) tells them: Works that looked through the old
             * one see what changed between the two. */
            .silent_first_list = !replacing,
            /* resumed: the events since the noted revision queue their Works; if it cannot
             * start there, it lists, and on_listed queues all of the cluster's */
            .watch_from = replacing ? NULL : from,
        };
        fl_informer_new(&cfg, &wt->inf);
        fl_informer_start(wt->inf);
        fl_metrics_count("flotilla_execution_member_watches_started_total",
                         "Member watches started (one per member, kind and member client)", 1);
        wt->refs = 1;
        wt->listed = true;
        fl_htab_add(&w->table, &wt->node, h);
        fresh = true;
    }
    wt->refs++;
    pthread_mutex_unlock(&w->mu);
    free(key);
    if (stale)
        watch_free(stale);
    if (fresh)
        fl_log_kvf(FL_LOG_DEBUG, "execution", FL_LOG_KV("cluster", cluster), "watching %s %s", api_version, kind);

    if (wait_ms < 0) {
        *out = wt;
        return 0;
    }
    /* Wait for the first list only on first use; a watch that is not listed by a later
     * call (member down) answers at once, and the Work is retried with back-off. */
    int rc = fl_informer_wait_synced(wt->inf, fresh ? wait_ms : 0);
    if (rc) {
        fl_ws_watch_put(w, wt);
        return rc;
    }
    *out = wt;
    return 0;
}

int fl_ws_watch_get(fl_ws_watches *w, const char *cluster, fl_client *client, const char *api_version,
                    const char *kind, const char *resource, int wait_ms, fl_ws_watch **out)
{
    return watch_get(w, cluster, client, api_version, kind, resource, wait_ms, NULL, out);
}

int fl_ws_watch_resume(fl_ws_watches *w, const char *cluster, fl_client *client, const char *api_version,
                       const char *kind, const char *resource, const char *from)
{
    fl_ws_watch *wt = NULL;
    int rc = watch_get(w, cluster, client, api_version, kind, resource, -1, from, &wt);
    fl_ws_watch_put(w, wt);
    return rc;
}

void fl_ws_watches_on_relisted(fl_ws_watches *w, void (*fn)(void *ctx, const char *cluster), void *ctx)
{
    w->relisted = fn;
    w->relisted_ctx = ctx;
}

json_t *fl_ws_watches_marks(fl_ws_watches *w)
{
    json_t *marks = json_array();
    pthread_mutex_lock(&w->mu);
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&w->table, &it); marks && n; n = fl_htab_next(&it)) {
        fl_ws_watch *wt = fl_htab_entry(n, fl_ws_watch, node);
        int64_t rv = fl_informer_told_rv(wt->inf);
        const char *nl1 = strchr(wt->key, '\n'), *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
        if (!rv || !nl2 || !fl_informer_has_synced(wt->inf)) { /* not known how far it is */
            json_decref(marks);
            marks = NULL;
            break;
        }
        char num[24];
        snprintf(num, sizeof num, "%lld", (long long)rv);
        json_array_append_new(marks, json_pack("[s#s#sss]", wt->key, (int)(nl1 - wt->key), nl1 + 1,
                                               (int)(nl2 - nl1 - 1), nl2 + 1, wt->resource, num));
    }
    pthread_mutex_unlock(&w->mu);
    return marks;
}

bool fl_ws_watch_listing(fl_ws_watch *wt, int64_t grace_ms)
{
    return !fl_informer_has_synced(wt->inf) && fl_time_mono_ms() - fl_informer_list_progress_ms(wt->inf) < grace_ms;
}

bool fl_ws_watch_park(fl_ws_watch *wt, const char *work_key)
{
    pthread_mutex_lock(&wt->park_mu);
    /* synced is set before the list's on_listed takes park_mu: a key added here while it is
     * not set is in the set that on_listed takes */
    bool wait = !fl_informer_has_synced(wt->inf);
    if (wait) {
        if (!wt->parked)
            wt->parked = json_object();
        json_object_set_new(wt->parked, work_key, json_true());
    }
    pthread_mutex_unlock(&wt->park_mu);
    return wait;
}

fl_informer *fl_ws_watch_informer(fl_ws_watch *wt)
{
    return wt->inf;
}

void fl_ws_watch_put(fl_ws_watches *w, fl_ws_watch *wt)
{
    if (!wt)
        return;
    pthread_mutex_lock(&w->mu);
    bool last = --wt->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last)
        watch_free(wt);
}

/* Whether in_use keeps every watch of the cluster of use key key ("<cluster>\n*") */
static bool cluster_in_use(const json_t *in_use, const char *key)
{
    const char *nl = strchr(key, '\n');
    if (!in_use || !nl)
        return false;
    char *all = fl_strndup(key, (size_t)(nl - key) + 1);
    char *k = fl_cat(all, "*", NULL);
    bool kept = json_object_get(in_use, k) != NULL;
    free(all);
    free(k);
    return kept;
}

void fl_ws_watches_sweep(fl_ws_watches *w, const json_t *in_use)
{
    fl_ws_watch *dead = NULL;
    pthread_mutex_lock(&w->mu);
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&w->table, &it); n; n = fl_htab_next(&it)) {
        fl_ws_watch *wt = fl_htab_entry(n, fl_ws_watch, node);
        if (json_object_get(in_use, wt->key) || cluster_in_use(in_use, wt->key))
            continue;
        if (unlist_locked(w, wt)) { /* out of the table: its node links the dead now */
            wt->node.next = dead ? &dead->node : NULL;
            dead = wt;
        }
    }
    pthread_mutex_unlock(&w->mu);
    for (fl_ws_watch *wt = dead, *next; wt; wt = next) {
        next = fl_htab_entry(wt->node.next, fl_ws_watch, node);
        /* the key is "cluster\napiVersion\nkind...": each part said apart */
        char *nl = strchr(wt->key, '\n');
        char *what = fl_strdup(nl ? nl + 1 : wt->key);
        for (char *p = what; (p = strchr(p, '\n'));)
            *p = ' ';
        char cluster[256];
        snprintf(cluster, sizeof cluster, "%.*s", nl ? (int)(nl - wt->key) : 0, wt->key);
        fl_log_kvf(FL_LOG_DEBUG, "execution", FL_LOG_KV("cluster", cluster), "no Work uses %s any more; watch stopped",
                   what);
        free(what);
        watch_free(wt);
    }
}

size_t fl_ws_watches_count(fl_ws_watches *w)
{
    pthread_mutex_lock(&w->mu);
    size_t n = fl_htab_count(&w->table);
    pthread_mutex_unlock(&w->mu);
    return n;
}

void fl_ws_watches_close(fl_ws_watches *w)
{
    pthread_mutex_lock(&w->mu);
    w->closed = true;
    pthread_mutex_unlock(&w->mu);
    fl_ws_watches_sweep(w, NULL); /* nothing is in use */
}

void fl_ws_watches_free(fl_ws_watches *w)
{
    if (!w)
        return;
    fl_ws_watches_close(w);
    pthread_mutex_destroy(&w->mu);
    fl_htab_close(&w->table);
    fl_status_lag_free(w->lag);
    free(w);
}

/* A manifestStatuses entry's liveStatus: {state, reason, message}, the last two only when
 * they say something. */
static json_t *live_status_json(const fl_live *live)
{
    json_t *o = json_pack("{s:s}", "state", fl_live_state_name(live->state));
    if (live->reason[0])
        json_object_set_new(o, "reason", json_string(live->reason));
    if (live->message[0])
        json_object_set_new(o, "message", json_string(live->message));
    return o;
}

/* Whether a previous manifestStatuses entry describes the same object (its status may
 * stand in for one that cannot be reflected now). */
static bool same_object(const json_t *prev, const json_t *id)
{
    const json_t *pid = json_object_get(prev, "identifier");
    static const char *const keys[] = {"group", "version", "kind", "namespace", "name"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!fl_json_same(json_object_get(pid, keys[i]), json_object_get(id, keys[i])))
            return false;
    return pid != NULL;
}

json_t *fl_ws_manifest_status(fl_interp *ip, int ordinal, const char *api_version, const char *kind,
                              const char *resource, const char *ns, const char *name, const json_t *obj,
                              const json_t *prev, char **reflect_err, char **health_err)
{
    if (reflect_err)
        *reflect_err = NULL;
    if (health_err)
        *health_err = NULL;
    const char *slash = strchr(api_version, '/');
    char *group = slash ? fl_strndup(api_version, (size_t)(slash - api_version)) : fl_strdup("");
    json_t *id = json_pack("{s:i, s:s, s:s, s:s, s:s}", "ordinal", ordinal, "version", slash ? slash + 1 : api_version,
                           "kind", kind, "resource", resource, "name", name);
    if (*group)
        json_object_set_new(id, "group", json_string(group));
    if (ns && *ns)
        json_object_set_new(id, "namespace", json_string(ns));
    json_t *ms = json_pack("{s:o}", "identifier", id);
    /* the interpreter says what of the member's status the binding sees, and its health */
    json_t *st = NULL;
    char *err = NULL;
    /* no object (not in the member): nothing to reflect, and no rule failed */
    int rrc = json_is_object(obj) ? fl_interp_reflect_status(ip, obj, &st, &err) : obj ? FL_EINVAL : 0;
    if (rrc == FL_EUNSUPPORTED) {
        json_t *whole = json_object_get(obj, "status");
        st = json_is_object(whole) && json_object_size(whole) ? fl_json_deep_copy(whole) : NULL;
    } else if (rrc) {
        /* a failing rule (a customization's script): what was reported last stays, and the
         * caller says why */
        const json_t *pst = same_object(prev, id) ? json_object_get(prev, "status") : NULL;
        st = json_is_object(pst) ? fl_json_deep_copy(pst) : NULL;
        if (reflect_err)
            *reflect_err = err ? err : fl_strdup(fl_strerror(rrc));
        else
            free(err);
        err = NULL;
    }
    free(err);
    err = NULL;
    if (json_is_object(st) && json_object_size(st))
        json_object_set_new(ms, "status", st);
    else
        json_decref(st);
    enum fl_health h = FL_HEALTH_UNKNOWN;
    int hrc = json_is_object(obj) ? fl_interp_health(ip, obj, &h, &err) : FL_EINVAL;
    /* no health rule for the kind: present is healthy, as Karmada's default; a failing rule
     * (or no object) is Unknown */
    const char *health = hrc == FL_EUNSUPPORTED     ? "Healthy"
                         : h == FL_HEALTH_HEALTHY   ? "Healthy"
                         : h == FL_HEALTH_UNHEALTHY ? "Unhealthy"
                                                    : "Unknown";
    json_object_set_new(ms, "health", json_string(health));
    /* the live state: the kstatus rules, or the health rule just run when it is a
     * customization's or a bundled script's (not the native rules, which the kstatus rules
     * replace) */
    bool custom = obj && hrc != FL_EUNSUPPORTED && !fl_interp_native_first(ip, api_version, kind, FL_INTERP_HEALTH);
    fl_live_health ch = {hrc, h, err};
    fl_live live;
    fl_live_judge(obj, api_version, kind, custom ? &ch : NULL, fl_time_now_ms(), &live);
    json_object_set_new(ms, "liveStatus", live_status_json(&live));
    if (hrc && hrc != FL_EUNSUPPORTED && obj && health_err)
        *health_err = err ? err : fl_strdup(fl_strerror(hrc));
    else
        free(err);
    free(group);
    return ms;
}

/* ---- the Work's status ---- */

static const fl_gvr WORKS = {"work.karmada.io/v1alpha1", "works"};

/* Whether statuses a and b differ only in what the member's objects say (manifestStatuses and
 * the liveState summed from them), not in the conditions this controller decides. */
static bool only_observations_differ(const json_t *a, const json_t *b)
{
    json_t *x = fl_json_shallow_copy(a), *y = fl_json_shallow_copy(b);
    json_object_del(x, "manifestStatuses");
    json_object_del(x, "liveState");
    json_object_del(y, "manifestStatuses");
    json_object_del(y, "liveState");
    bool same = fl_json_same(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

/* Write only the observations of st onto the Work: a merge patch of status.manifestStatuses
 * and status.liveState, with no resourceVersion precondition. What a member's objects say is
 * true whatever else the Work went through since the informer's copy, and a write pinned to
 * that copy met a conflict whenever the binding controller had rewritten the Work's spec in
 * between (about as often as it succeeded under churn: docs/BENCHMARKS.md, live status at
 * scale). The conditions, which depend on the generation applied, keep the pinned write. */
static int patch_observations(fl_client *cp, const json_t *work, const json_t *st, json_t **out)
{
    json_t *ms = json_object_get(st, "manifestStatuses");
    json_t *p = json_pack("{s:{s:O, s:O*}}", "status", "manifestStatuses", ms ? ms : json_null(), "liveState",
                          json_object_get(st, "liveState"));
    char *body = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    const fl_patch_opts opts = {.subresource = "status"};
    fl_client_error ce = {0};
    int rc = fl_client_patch(cp, &WORKS, fl_json_meta(work, "namespace"), fl_json_meta(work, "name"), FL_PATCH_MERGE,
                             body, strlen(body), &opts, out, &ce);
    free(body);
    if (rc && rc != FL_ENOTFOUND)
        fl_log_kv(FL_LOG_WARN, "execution", "writing the Work's manifest statuses failed", "object",
                  FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), "err",
                  fl_errmsg(ce.message, rc), NULL);
    return rc;
}

int fl_ws_write_status(fl_client *cp, const json_t *work, bool applied, const char *reason, const char *message,
                       const char *stopped, json_t *statuses, int64_t *written_rv)
{
    if (written_rv)
        *written_rv = 0;
    json_t *old = fl_json_obj(work, "status");
    /* the conditions change in place below: a copy of their own; the rest is replaced or
     * shared (manifestStatuses is replaced or dropped, other members are kept as they are) */
    json_t *st = fl_json_shallow_copy(old);
    json_t *conds = json_object_get(st, "conditions");
    if (conds)
        json_object_set_new(st, "conditions", fl_json_deep_copy(conds));
    json_t *gen = json_object_get(json_object_get(work, "metadata"), "generation");
    int64_t g = json_is_integer(gen) ? json_integer_value(gen) : -1;
    int64_t now = fl_time_now_ms();
    if (reason)
        fl_condition_set(st, "Applied", applied ? "True" : "False", reason, message, g, now);
    if (stopped)
        fl_condition_set(st, FL_DISPATCHING_CONDITION, "False", stopped,
                         !strcmp(stopped, FL_DISPATCHING_REASON_CLUSTER_PAUSED) ? FL_DISPATCHING_MSG_CLUSTER_PAUSED
                                                                                : FL_DISPATCHING_MSG_SUSPENDED,
                         g, now);
    else
        fl_condition_set(st, FL_DISPATCHING_CONDITION, "True", FL_DISPATCHING_REASON,
                         FL_DISPATCHING_MSG_RUNNING, g, now);
    if (statuses && json_array_size(statuses))
        json_object_set_new(st, "manifestStatuses", statuses);
    else {
        json_decref(statuses);
        json_object_del(st, "manifestStatuses");
    }
    /* the Work's own live state, for lists that select on it (fieldSelector status.liveState) */
    const char *why, *msg;
    json_object_set_new(st, "liveState", json_string(fl_summary_work_state(st, false, &why, &msg)));

    int rc = 0;
    json_t *stored = NULL;
    if (old && !fl_json_same(st, old) && only_observations_differ(st, old)) {
        rc = patch_observations(cp, work, st, written_rv ? &stored : NULL);
    } else if (!old || !fl_json_same(st, old)) {
        /* a status write carries what the server reads of it: the name, the precondition
         * and the status (not the manifests, which it keeps from the stored Work). Handed
         * over: in process the server stores st as it is instead of copying it; what st
         * shares with the informer's Work is read-only for everyone. */
        const json_t *md = json_object_get(work, "metadata");
        json_t *copy = json_pack("{s:O*, s:O*, s:{s:O*, s:O*, s:O*, s:O*}, s:O}", "apiVersion",
                                 json_object_get(work, "apiVersion"), "kind", json_object_get(work, "kind"),
                                 "metadata", "name", json_object_get(md, "name"), "namespace",
                                 json_object_get(md, "namespace"), "uid", json_object_get(md, "uid"),
                                 "resourceVersion", json_object_get(md, "resourceVersion"), "status", st);
        fl_client_error ce = {0};
        rc = fl_client_update_status_given(cp, &WORKS, fl_json_meta(work, "namespace"), copy, NULL,
                                           written_rv ? &stored : NULL, &ce);
        if (rc && rc != FL_ECONFLICT && rc != FL_ENOTFOUND)
            fl_log_kv(FL_LOG_WARN, "execution", "writing the Work status failed", "object",
                      FL_LOG_OBJ("Work", fl_json_meta(work, "namespace"), fl_json_meta(work, "name")), "err",
                      fl_errmsg(ce.message, rc), NULL);
    }
    const char *rv = rc == 0 ? fl_json_meta(stored, "resourceVersion") : NULL;
    if (written_rv && rv)
        *written_rv = strtoll(rv, NULL, 10);
    json_decref(stored);
    json_decref(st);
    return rc;
}
