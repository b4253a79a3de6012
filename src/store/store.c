/* store.c - the store's public functions (store.h), dispatching to its backend.
 *
 * fl_store_open chooses the backend once, from fl_store_config (etcd_servers: store_etcd.c;
 * memory: store_memory.c; else SQLite: store_sqlite.c), and every later call checks its arguments here and goes
 * through that backend's table of operations (store_impl.h) with one indirect call,
 * taking no lock and allocating nothing on the way. What every backend keeps alike (the
 * cache of live keys, head and compact revisions, the watch hub) is read here directly,
 * and the helpers that read the current state out of the cache for the backends' gets
 * and lists are here too, so that no backend depends on another. */
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/env.h"
#include "core/err.h"
#include "core/metrics.h"
#include "core/timefmt.h"
#include "store/store_cache.h"
#include "store/store_impl.h"
#include "store/store_watch.h"

/* ---- the state every backend shares ---- */

void fl_store_base_init(fl_store *s, const fl_store_backend *be)
{
    s->be = be;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    fl_store_cache_init(&s->cache);
    /* what a writer waits, its commit included (etcd's request latency; a group commit
     * shares one fsync among many) */
    static const char *const OPS[] = {"create", "update", "delete"};
    static const double WAIT[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
    fl_metric *wait = fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_store_write_duration_seconds",
                                       "From a write handed to the store to its commit (or refusal), by operation "
                                       "and result.",
                                       "op", "result", WAIT, sizeof WAIT / sizeof WAIT[0]);
    for (int t = 0; t < 3; t++)
        for (int r = 0; r < 2; r++)
            s->write_s[t][r] = fl_metric_with(wait, OPS[t], r ? "error" : "ok");
    static const double SECS[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
    static const double WRITES[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    s->commit_s = fl_metric_with(fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_store_commit_duration_seconds",
                                                  "One group commit: its writes checked, rendered and stored, the "
                                                  "commit (one fsync when durable) and the events published.",
                                                  NULL, NULL, SECS, sizeof SECS / sizeof SECS[0]),
                                 NULL, NULL);
    s->compact_n = fl_metric_with(fl_metric_family(FL_METRIC_COUNTER, "flotilla_store_compactions_total",
                                                   "Compaction passes of the store's history finished (on a "
                                                   "timer; each drops the revisions older than the window, if any).",
                                                   NULL, NULL, NULL, 0),
                                  NULL, NULL);
    s->compact_s = fl_metric_with(fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_store_compaction_duration_seconds",
                                                   "From a compaction's start to its end (it runs in chunks between "
                                                   "write batches).",
                                                   NULL, NULL, NULL, 0),
                                  NULL, NULL);
    s->commit_n = fl_metric_with(fl_metric_family(FL_METRIC_HISTOGRAM, "flotilla_store_commit_writes",
                                                  "Writes one group commit took.", NULL, NULL, WRITES,
                                                  sizeof WRITES / sizeof WRITES[0]),
                                 NULL, NULL);
}

void fl_store_base_count_compaction(fl_store *s, int64_t ns)
{
    fl_metric_add(s->compact_n, 1);
    fl_metric_observe(s->compact_s, (double)ns / 1e9);
}

void fl_store_base_count_commit(fl_store *s, size_t writes, int64_t ns)
{
    fl_metric_observe(s->commit_s, (double)ns / 1e9);
    fl_metric_observe(s->commit_n, (double)writes);
}

void fl_store_base_close(fl_store *s)
{
    fl_store_cache_close(&s->cache);
    pthread_rwlock_destroy(&s->lock);
}

fl_blob *fl_store_render_value(fl_store_op *op, const fl_blob *current, int64_t rev)
{
    if (op->render_blob)
        return op->render_blob(op->ctx, current, rev);
    size_t len = 0;
    char *bytes = op->render(op->ctx, current, rev, &len);
    if (!bytes)
        return NULL;
    fl_blob *value = fl_blob_new(bytes, len);
    free(bytes);
    return value;
}

int fl_store_base_get(fl_store *s, const char *key, fl_kv *out)
{
    pthread_rwlock_rdlock(&s->lock);
    fl_store_node *n = fl_store_cache_find(&s->cache, key);
    if (n) {
        out->value = fl_blob_ref(n->value);
        out->rev = n->rev;
        out->create_rev = n->create_rev;
    }
    pthread_rwlock_unlock(&s->lock);
    return n ? 0 : FL_ENOTFOUND;
}

fl_blob *fl_store_base_get_at(fl_store *s, const char *key, int64_t rev)
{
    fl_blob *v = NULL;
    pthread_rwlock_rdlock(&s->lock);
    fl_store_node *n = fl_store_cache_find(&s->cache, key);
    if (n && n->rev == rev)
        v = fl_blob_ref(n->value);
    pthread_rwlock_unlock(&s->lock);
    return v;
}

static bool has_prefix(const char *key, const char *prefix, size_t plen)
{
    return strncmp(key, prefix, plen) == 0;
}

bool fl_store_base_copy(fl_store *s, fl_store_snap *sn, const char *prefix, const char *start_after, size_t limit,
                        int64_t bare_upto, bool *more)
{
    size_t plen = strlen(prefix);
    bool cold = false;
    *more = false;
    fl_store_cache_iter it;
    fl_store_cache_seek_list(&s->cache, &it, prefix, start_after);
    fl_store_node *node;
    while ((node = fl_store_cache_next(&it)) && has_prefix(node->key, prefix, plen)) {
        if (limit > 0 && sn->n == limit) {
            *more = true;
            break;
        }
        bool bare = node->rev <= bare_upto;
        fl_store_snap_add(sn, node->key, bare ? NULL : node->value, node->rev, node->create_rev);
        cold = cold || (!bare && !node->value);
    }
    return cold;
}

/* ---- opening ---- */

const char *fl_store_etcd_config_problem(const fl_store_config *cfg)
{
    const char *p = cfg->etcd_prefix;
    if (p && (p[0] != '/' || strlen(p) < 2 || p[strlen(p) - 1] == '/'))
        return "--etcd-prefix: expected a key prefix such as /registry (a '/' first, none last)";
    if (!cfg->etcd_certfile != !cfg->etcd_keyfile)
        return "--etcd-certfile and --etcd-keyfile go together";
    return NULL;
}

int fl_store_open(const fl_store_config *cfg, fl_store **out)
{
    *out = NULL;
    if (!cfg || (!cfg->memory && !cfg->path && !cfg->etcd_servers))
        return FL_EINVAL;
    const fl_store_backend *be = cfg->etcd_servers ? &fl_store_etcd_backend
                                 : cfg->memory     ? &fl_store_memory_backend
                                                   : &fl_store_sqlite_backend;
    return be->open(cfg, out);
}

void fl_store_free(fl_store *s)
{
    if (s)
        s->be->free(s);
}

/* ---- reading ---- */

int fl_store_get(fl_store *s, const char *key, fl_kv *out)
{
    memset(out, 0, sizeof(*out));
    if (!key)
        return FL_EINVAL;
    return s->be->get(s, key, out);
}

int fl_store_get_at(fl_store *s, const char *key, int64_t rev, fl_blob **out)
{
    *out = NULL;
    if (!key || rev <= 0)
        return FL_EINVAL;
    return s->be->get_at(s, key, rev, out);
}

long fl_store_marked(fl_store *s, char ***keys)
{
    *keys = NULL;
    return s->be->marked ? s->be->marked(s, keys) : -1;
}

long fl_store_marked_said(fl_store *s)
{
    return s->be->marked_said ? s->be->marked_said(s) : -1;
}

void fl_store_rest(fl_store *s)
{
    if (s->be->rest)
        s->be->rest(s);
}

size_t fl_store_quick_bytes(fl_store *s)
{
    return s->be->quick_bytes ? s->be->quick_bytes(s) : 0;
}

int64_t fl_store_rev(fl_store *s)
{
    return __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
}

int fl_store_probe(fl_store *s, bool write_path, char *why, size_t cap)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)FL_STORE_PROBE_WAIT_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    /* the lock every get, list and watch start takes: a writer that holds it while wedged
     * (or a reader that never lets go) shows here */
    if (pthread_rwlock_timedrdlock(&s->lock, &until) != 0) {
        if (why)
            snprintf(why, cap, "no read of the store within %d ms", FL_STORE_PROBE_WAIT_MS);
        return FL_ETIMEDOUT;
    }
    pthread_rwlock_unlock(&s->lock);
    int64_t waited = write_path && s->be->queued_ms ? s->be->queued_ms(s, fl_time_mono_ms()) : 0;
    if (waited > fl_env_ms("FLOTILLA_STORE_WEDGED_MS", FL_STORE_WEDGED_MS, 1)) {
        if (why)
            snprintf(why, cap, "a write has waited %lld ms for the store's writer", (long long)waited);
        return FL_ETIMEDOUT;
    }
    return 0;
}

int64_t fl_store_compact_rev(fl_store *s)
{
    return __atomic_load_n(&s->compact_rev, __ATOMIC_ACQUIRE);
}

int fl_store_list(fl_store *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                  fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out)
{
    if (more_out)
        *more_out = false;
    *rev_out = at_rev;
    if (at_rev < 0 || !fn)
        return FL_EINVAL;
    return s->be->list(s, prefix ? prefix : "", start_after, at_rev, limit, fn, ctx, rev_out, more_out);
}

int fl_store_list_bare(fl_store *s, const char *prefix, int64_t bare_upto, fl_store_list_fn fn, void *ctx,
                       int64_t *rev_out)
{
    *rev_out = 0;
    if (!fn || bare_upto < 0)
        return FL_EINVAL;
    return s->be->list_bare(s, prefix ? prefix : "", bare_upto, fn, ctx, rev_out);
}

size_t fl_store_count(fl_store *s, const char *prefix)
{
    if (!prefix)
        prefix = "";
    size_t plen = strlen(prefix), n = 0;
    pthread_rwlock_rdlock(&s->lock);
    if (plen == 0) {
        n = s->cache.count;
    } else {
        fl_store_cache_iter it;
        fl_store_cache_seek(&s->cache, &it, prefix, true);
        fl_store_node *node;
        while ((node = fl_store_cache_next(&it)) && has_prefix(node->key, prefix, plen))
            n++;
    }
    pthread_rwlock_unlock(&s->lock);
    return n;
}

/* ---- writing ---- */

/* The calling thread's fence (fl_store_fence_thread). */
static _Thread_local bool thread_fenced;

bool fl_store_thread_fenced(void)
{
    return thread_fenced;
}

bool fl_store_fence_thread(bool on)
{
    bool was = thread_fenced;
    thread_fenced = on;
    return was;
}

int fl_store_write(fl_store *s, fl_store_op *op)
{
    op->rev = 0;
    op->value = NULL;
    op->fenced = thread_fenced && s->be->lead;
    if (!op->key || (!op->render && !op->render_blob) || op->type < FL_STORE_CREATE || op->type > FL_STORE_DELETE)
        return FL_EINVAL;
    int64_t t0 = fl_time_mono_ns();
    int rc = s->be->write(s, op);
    fl_metric_observe(s->write_s[op->type - FL_STORE_CREATE][rc != 0], (double)(fl_time_mono_ns() - t0) / 1e9);
    return rc;
}

int fl_store_note_set(fl_store *s, const char *name, int64_t value)
{
    return s->be->note_set(s, name, value, NULL);
}

int fl_store_note_set_text(fl_store *s, const char *name, const char *text)
{
    return s->be->note_set(s, name, 0, text ? text : "");
}

int fl_store_note_get(fl_store *s, const char *name, int64_t *value)
{
    *value = 0;
    return s->be->note_get(s, name, value, NULL);
}

int fl_store_note_get_text(fl_store *s, const char *name, char **text)
{
    *text = NULL;
    return s->be->note_get(s, name, NULL, text);
}

bool fl_store_unchanged_since(fl_store *s, int64_t rev)
{
    if (s->be->unchanged_since)
        return s->be->unchanged_since(s, rev);
    return rev == fl_store_rev(s);
}

int64_t fl_store_compact(fl_store *s)
{
    return s->be->compact(s);
}

/* (contract in store_impl.h) Copied out under the read lock, delivered after it. */
int fl_store_base_list(fl_store *s, const char *prefix, const char *start_after, size_t limit, int64_t bare_upto,
                        fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out)
{
    fl_store_snap sn = { 0 };
    bool more;
    pthread_rwlock_rdlock(&s->lock);
    *rev_out = s->head;
    fl_store_base_copy(s, &sn, prefix, start_after, limit, bare_upto, &more);
    pthread_rwlock_unlock(&s->lock);
    int rc = 0;
    if (fl_store_snap_deliver(&sn, NULL, NULL, 0, fn, ctx, &rc))
        more = true;
    if (more_out)
        *more_out = more;
    return rc;
}

/* ---- leading ---- */

bool fl_store_shared(fl_store *s)
{
    return s->be->lead != NULL;
}

int fl_store_lead(fl_store *s, const char *identity, int ttl_s, const volatile int *stop, void (*lost)(void *ctx),
                  void *ctx)
{
    if (!identity || !identity[0] || ttl_s <= 0 || !stop)
        return FL_EINVAL;
    return s->be->lead ? s->be->lead(s, identity, ttl_s, stop, lost, ctx) : 0;
}

void fl_store_lead_release(fl_store *s)
{
    if (s && s->be->lead_release)
        s->be->lead_release(s);
}

int fl_store_leader(fl_store *s, char **holder, int64_t *since_ms)
{
    *holder = NULL;
    if (since_ms)
        *since_ms = 0;
    return s->be->leader ? s->be->leader(s, holder, since_ms) : 0;
}

/* ---- watching ---- */

int fl_store_watch(fl_store *s, const char *prefix, int64_t from_rev, fl_watch **out)
{
    *out = NULL;
    if (from_rev < 0)
        return FL_EINVAL;
    return s->be->watch(s, prefix ? prefix : "", from_rev, out);
}

size_t fl_store_watch_count(fl_store *s)
{
    return fl_watch_hub_count(s->hub);
}
