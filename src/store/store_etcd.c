/* store_etcd.c - the etcd store backend: opening, reads, notes and compaction.
 *
 * Several `flotilla server` replicas share one etcd cluster (issue 40). Each replica keeps
 * the whole current state in memory, in the cache every backend shares (store_cache.c):
 * every live key under the store's etcd prefix with its value, revision and create
 * revision. Opening reads the prefix from etcd at one revision, in pages pinned to it, and
 * then one etcd watch per replica (store_etcd_watch.c) applies every later change to the
 * cache and publishes it to the hub, in revision order. So:
 *   - revisions are etcd's mod_revisions, the same on every replica, with gaps (etcd counts
 *     every transaction of its cluster); head is the revision the cache is exact at;
 *   - gets, lists of the current state and watches from recent revisions are served from
 *     memory, like the other backends; a list at an older revision and a watch from below
 *     the ring read etcd at that revision;
 *   - writes are etcd transactions compared on the key's revision (store_etcd_write.c);
 *     a writer returns once the watcher has applied its revision, so it reads its write.
 * Compaction is etcd's, coordinated between replicas on one key as kube-apiserver does;
 * notes are keys of their own outside the prefix. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"
#include "store/store_cache.h"
#include "store/store_etcd.h"
#include "store/store_watch.h"

#define DEFAULT_PREFIX "/registry"
#define DEFAULT_WINDOW 100000
#define DEFAULT_INTERVAL_MS 5000
#define DEFAULT_RING 65536
#define DEFAULT_RING_BYTES ((size_t)32 << 20)
#define WATCH_BACKLOG 100000
#define PAGE 1000 /* keys per range request */

/* ---- helpers the backend's files share ---- */

char *fl_store_etcd_key(const fl_store_etcd *s, const char *key)
{
    size_t klen = strlen(key);
    char *k = fl_malloc(s->plen + klen + 1);
    memcpy(k, s->prefix, s->plen);
    memcpy(k + s->plen, key, klen + 1);
    return k;
}

void fl_store_etcd_saw_compaction(fl_store_etcd *s, int64_t rev)
{
    int64_t cur = __atomic_load_n(&s->base.compact_rev, __ATOMIC_ACQUIRE);
    while (rev > cur &&
           !__atomic_compare_exchange_n(&s->base.compact_rev, &cur, rev, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
}

int fl_store_etcd_fail(fl_store_etcd *s, const char *what, const fl_etcd_error *e)
{
    if (e->code == FL_EEXPIRED) {
        fl_store_etcd_saw_compaction(s, e->compact_rev);
        return FL_EEXPIRED;
    }
    fl_log(FL_LOG_ERROR, "store", "etcd %s: %s", what, e->msg[0] ? e->msg : fl_strerror(e->code));
    switch (e->code) {
    case FL_ETIMEDOUT:
    case FL_ETOOBIG:
        return e->code;
    default:
        return FL_EIO;
    }
}

int fl_store_etcd_wait_applied(fl_store_etcd *s, int64_t rev, int timeout_ms)
{
    if (fl_store_rev(&s->base) >= rev)
        return 0;
    struct timespec until = fl_time_after(CLOCK_MONOTONIC, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    while (fl_store_rev(&s->base) < rev) {
        if (s->closing) {
            rc = FL_ECLOSED;
            break;
        }
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT && fl_store_rev(&s->base) < rev) {
            rc = FL_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The store key of etcd key ekey, or NULL when it is not under the prefix. */
static const char *store_key(const fl_store_etcd *s, const char *ekey)
{
    return strncmp(ekey, s->prefix, s->plen) == 0 ? ekey + s->plen : NULL;
}

/* The first key after every key that starts with k: k + "\x01" (store keys hold no NUL, so
 * nothing sorts between k and that). Heap. */
static char *key_after(const char *k)
{
    size_t n = strlen(k);
    char *a = fl_malloc(n + 2);
    memcpy(a, k, n);
    a[n] = '\x01';
    a[n + 1] = '\0';
    return a;
}

/* ---- reading etcd at a revision ---- */

/* Called per key read; return false to stop. */
typedef bool (*range_fn)(void *ctx, const char *key, const fl_etcd_kv *kv);

/* Range [start, end) of etcd at revision rev (0: the latest, then pinned to the revision the
 * first page saw), PAGE keys per request, at most limit keys (0: all), calling fn for each.
 * *rev_out: the revision read at; *more: keys remained past limit. 0 or an FL_E* code. */
static int range_pages(fl_store_etcd *s, const char *start, const char *end, int64_t rev, size_t limit, range_fn fn,
                       void *ctx, int64_t *rev_out, bool *more)
{
    char *from = fl_strdup(start);
    size_t got = 0;
    int rc = 0;
    *more = false;
    for (;;) {
        int64_t want = PAGE;
        if (limit > 0 && limit - got < (size_t)want)
            want = (int64_t)(limit - got);
        fl_etcd_kv *kvs = NULL;
        size_t n = 0;
        bool page_more = false;
        int64_t hrev = 0;
        fl_etcd_error e = { 0 };
        if (fl_etcd_range(s->c, from, end, rev, want, false, &kvs, &n, &page_more, &hrev, &e) != 0) {
            rc = e.code == FL_EINVAL && rev > 0 ? FL_EINVAL : fl_store_etcd_fail(s, "range", &e);
            break;
        }
        if (rev == 0)
            rev = hrev; /* every later page reads the same snapshot */
        bool go_on = true;
        for (size_t i = 0; i < n && go_on; i++)
            go_on = fn(ctx, kvs[i].key, &kvs[i]);
        got += n;
        free(from);
        from = n ? key_after(kvs[n - 1].key) : NULL;
        fl_etcd_kvs_free(kvs, n);
        if (!go_on || !page_more || n == 0)
            break;
        if (limit > 0 && got >= limit) {
            *more = true;
            break;
        }
    }
    free(from);
    *rev_out = rev;
    return rc;
}

struct load_ctx {
    fl_store_etcd *s;
    fl_store_cache *cache;
};

static bool load_one(void *ctx, const char *ekey, const fl_etcd_kv *kv)
{
    struct load_ctx *l = ctx;
    const char *key = store_key(l->s, ekey);
    if (key)
        fl_store_cache_put(l->cache, key, fl_store_etcd_stamp(kv->value, kv->mod_rev), kv->mod_rev, kv->create_rev);
    return true;
}

int fl_store_etcd_load(fl_store_etcd *s, fl_store_cache *cache, int64_t *rev)
{
    fl_store_cache_init(cache);
    struct load_ctx l = { s, cache };
    bool more;
    int rc = range_pages(s, s->prefix, s->prefix_end, 0, 0, load_one, &l, rev, &more);
    if (rc)
        fl_store_cache_close(cache);
    return rc;
}

/* flotilla_store_db_size_bytes at each scrape: the database of the etcd member that answered
 * (etcd_mvcc_db_total_size_in_bytes); not set when none answers. */
static void scrape_size(void *ctx)
{
    fl_store_etcd *s = ctx;
    int64_t bytes = 0;
    fl_etcd_error e = {0};
    /* the writes' client: its short timeout keeps a scrape quick when etcd does not answer */
    if (fl_etcd_status(s->wc ? s->wc : s->c, NULL, NULL, &bytes, &e) == 0 && bytes > 0)
        fl_metric_gauge_set("flotilla_store_db_size_bytes", FL_STORE_DB_SIZE_HELP, NULL, NULL, (double)bytes);
}

/* ---- opening and closing ---- */

/* FL_ETCD_COMPACT_KEY as it is: the revision compacted to and the key's version (0, 0 when
 * absent). */
static int read_compact_key(fl_store_etcd *s, int64_t *rev, int64_t *version)
{
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    bool more;
    fl_etcd_error e = { 0 };
    *rev = *version = 0;
    if (fl_etcd_range(s->c, FL_ETCD_COMPACT_KEY, NULL, 0, 1, false, &kvs, &n, &more, NULL, &e) != 0)
        return fl_store_etcd_fail(s, "reading " FL_ETCD_COMPACT_KEY, &e);
    if (n == 1) {
        *version = kvs[0].version;
        *rev = kvs[0].value ? strtoll(kvs[0].value->data, NULL, 10) : 0;
    }
    fl_etcd_kvs_free(kvs, n);
    return 0;
}

static void *compactor_main(void *arg);

static int etcd_open(const fl_store_config *cfg, fl_store **out)
{
    *out = NULL;
    fl_etcd_config ec = { .endpoints = cfg->etcd_servers, .cafile = cfg->etcd_cafile,
                          .certfile = cfg->etcd_certfile, .keyfile = cfg->etcd_keyfile };
    fl_etcd *c = NULL;
    char *err = NULL;
    if (fl_etcd_open(&ec, &c, &err) != 0) {
        fl_log(FL_LOG_ERROR, "store", "etcd: %s", err ? err : "cannot use the servers given");
        free(err);
        return FL_EINVAL;
    }
    fl_store_etcd *s = fl_calloc(1, sizeof(*s));
    fl_store_base_init(&s->base, &fl_store_etcd_backend);
    s->c = c;
    ec.timeout_ms = FL_ETCD_WRITE_ATTEMPT_MS;
    if (fl_etcd_open(&ec, &s->wc, &err) != 0) { /* the same configuration: cannot fail now */
        free(err);
        s->wc = NULL;
    }
    s->prefix = fl_strdup(cfg->etcd_prefix ? cfg->etcd_prefix : DEFAULT_PREFIX);
    s->plen = strlen(s->prefix);
    s->prefix_end = fl_etcd_prefix_end(s->prefix);
    s->side = fl_asprintf(FL_ETCD_SIDE "%s", s->prefix);
    char *lead_key = fl_asprintf("%s" FL_ETCD_LEAD, s->side);
    s->lead = fl_etcd_lead_new(c, lead_key);
    free(lead_key);
    s->window = cfg->compact_window > 0 ? cfg->compact_window : DEFAULT_WINDOW;
    s->interval_ms = cfg->compact_interval_ms ? cfg->compact_interval_ms : DEFAULT_INTERVAL_MS;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);

    fl_store_cache_close(&s->base.cache);
    int64_t head = 0, compacted = 0;
    int rc = fl_store_etcd_load(s, &s->base.cache, &head);
    if (rc == 0)
        rc = read_compact_key(s, &compacted, &s->compact_version);
    if (rc) {
        fl_store_cache_init(&s->base.cache);
        fl_store_free(&s->base);
        return rc;
    }
    s->base.head = head;
    s->base.compact_rev = compacted < head ? compacted : head;
    s->base.hub = fl_watch_hub_new(head, cfg->ring_events ? cfg->ring_events : DEFAULT_RING,
                                   cfg->ring_bytes ? cfg->ring_bytes : DEFAULT_RING_BYTES, WATCH_BACKLOG,
                                   fl_store_etcd_replay, s);
    rc = fl_store_etcd_watcher_start(s);
    if (rc == 0 && s->interval_ms > 0) {
        if (pthread_create(&s->compactor, NULL, compactor_main, s) == 0)
            s->have_compactor = true;
        else
            rc = FL_EIO;
    }
    if (rc) {
        fl_store_free(&s->base);
        return rc;
    }
    fl_metrics_on_scrape(scrape_size, s);
    s->size_hook = true;
    fl_log(FL_LOG_INFO, "store", "etcd: %zu keys under %s at revision %" PRId64, s->base.cache.count, s->prefix,
           head);
    *out = &s->base;
    return 0;
}

static void etcd_free(fl_store *bs)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    if (s->size_hook)
        fl_metrics_remove_hook(scrape_size, s);
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    __atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->cv);
    while (s->inflight > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (s->have_watcher)
        pthread_join(s->watcher, NULL);
    if (s->have_compactor)
        pthread_join(s->compactor, NULL);
    fl_watch_hub_free(s->base.hub); /* waits for replays, which see stop */
    fl_etcd_lead_free(s->lead);     /* its renewing thread uses the client */
    fl_etcd_free(s->c);
    fl_etcd_free(s->wc);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->prefix);
    free(s->prefix_end);
    free(s->side);
    fl_store_base_close(&s->base);
    free(s);
}

/* ---- reads ---- */

static int etcd_get_at(fl_store *bs, const char *key, int64_t rev, fl_blob **out)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    if ((*out = fl_store_base_get_at(bs, key, rev)) != NULL)
        return 0;
    if (rev < fl_store_compact_rev(bs))
        return FL_EEXPIRED;
    char *ekey = fl_store_etcd_key(s, key);
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    bool more;
    fl_etcd_error e = { 0 };
    int rc = fl_etcd_range(s->c, ekey, NULL, rev, 1, false, &kvs, &n, &more, NULL, &e);
    free(ekey);
    if (rc)
        return e.code == FL_EINVAL ? FL_EEXPIRED /* a revision etcd has not reached */
                                   : fl_store_etcd_fail(s, "reading a revision", &e);
    /* the key's value as of rev: the revision asked for only if that wrote it */
    if (n == 1 && kvs[0].mod_rev == rev)
        *out = fl_store_etcd_stamp(kvs[0].value, rev);
    fl_etcd_kvs_free(kvs, n);
    return *out ? 0 : FL_EEXPIRED;
}

struct snap_ctx {
    fl_store_etcd *s;
    fl_store_snap *sn;
};

static bool snap_one(void *ctx, const char *ekey, const fl_etcd_kv *kv)
{
    struct snap_ctx *c = ctx;
    const char *key = store_key(c->s, ekey);
    if (key) {
        fl_blob *v = fl_store_etcd_stamp(kv->value, kv->mod_rev);
        fl_store_snap_add(c->sn, key, v, kv->mod_rev, kv->create_rev);
        fl_blob_unref(v);
    }
    return true;
}

static bool deliver_none(void *ctx, const char *key, const fl_kv *kv)
{
    return false;
}

/* A list as of revision at_rev, read from etcd at that revision (which answers exactly, or
 * that it is compacted, or in the future). */
static int list_at(fl_store_etcd *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                   fl_store_list_fn fn, void *ctx, bool *more_out)
{
    if (at_rev < fl_store_compact_rev(&s->base))
        return FL_EEXPIRED;
    char *eprefix = fl_store_etcd_key(s, prefix);
    char *end = fl_etcd_prefix_end(eprefix);
    char *start;
    if (start_after && *start_after && strcmp(start_after, prefix) >= 0) {
        char *k = fl_store_etcd_key(s, start_after);
        start = key_after(k);
        free(k);
    } else {
        start = fl_strdup(eprefix);
    }
    fl_store_snap sn = { 0 };
    struct snap_ctx c = { s, &sn };
    int64_t rev;
    bool more = false;
    int rc = range_pages(s, start, end, at_rev, limit, snap_one, &c, &rev, &more);
    free(start);
    free(end);
    free(eprefix);
    if (rc) {
        int ignored;
        fl_store_snap_deliver(&sn, NULL, NULL, 0, deliver_none, NULL, &ignored); /* frees it */
        return rc;
    }
    if (fl_store_snap_deliver(&sn, NULL, NULL, 0, fn, ctx, &rc))
        more = true;
    if (more_out)
        *more_out = more;
    return rc;
}

static int etcd_list(fl_store *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                     fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out)
{
    if (at_rev == 0)
        return fl_store_base_list(s, prefix, start_after, limit, 0, fn, ctx, rev_out, more_out);
    return list_at((fl_store_etcd *)s, prefix, start_after, at_rev, limit, fn, ctx, more_out);
}

static int etcd_list_bare(fl_store *s, const char *prefix, int64_t bare_upto, fl_store_list_fn fn, void *ctx,
                          int64_t *rev_out)
{
    return fl_store_base_list(s, prefix, NULL, 0, bare_upto, fn, ctx, rev_out, NULL);
}

/* ---- notes: keys of their own, outside the prefix, moving no revision of the store's ---- */

static int etcd_note_set(fl_store *bs, const char *name, int64_t value, const char *text)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    char num[32];
    if (!text) {
        snprintf(num, sizeof num, "%" PRId64, value);
        text = num;
    }
    char *key = fl_asprintf("%s" FL_ETCD_NOTES "%s", s->side, name);
    fl_etcd_op put = { .type = FL_ETCD_PUT, .key = key, .value = text, .value_len = strlen(text) };
    /* a fenced thread's note (the leader's reconciled revision) holds only while it leads */
    fl_etcd_cmp fence;
    bool fenced = fl_store_thread_fenced();
    if (fenced && !fl_etcd_lead_fence(s->lead, &fence)) {
        free(key);
        return FL_EFENCED;
    }
    fl_etcd_txn_result res = { 0 };
    fl_etcd_error e = { 0 };
    int rc = fl_etcd_txn(s->c, fenced ? &fence : NULL, fenced ? 1 : 0, &put, 1, NULL, 0, &res, &e);
    free(key);
    if (rc)
        return fl_store_etcd_fail(s, "writing a note", &e);
    bool done = res.succeeded;
    fl_etcd_txn_result_free(&res);
    return done ? 0 : FL_EFENCED;
}

static int etcd_note_get(fl_store *bs, const char *name, int64_t *value, char **text)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    char *key = fl_asprintf("%s" FL_ETCD_NOTES "%s", s->side, name);
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    bool more;
    fl_etcd_error e = { 0 };
    int rc = fl_etcd_range(s->c, key, NULL, 0, 1, false, &kvs, &n, &more, NULL, &e);
    free(key);
    if (rc)
        return fl_store_etcd_fail(s, "reading a note", &e);
    const fl_blob *v = n ? kvs[0].value : NULL; /* NULL also for an empty value */
    if (n == 0)
        rc = FL_ENOTFOUND;
    else if (text)
        *text = v ? fl_strndup(v->data, v->len) : fl_strdup("");
    else
        *value = v ? strtoll(v->data, NULL, 10) : 0;
    fl_etcd_kvs_free(kvs, n);
    return rc;
}

/* ---- compaction ----
 *
 * As kube-apiserver: every replica runs a round every interval, but only the one whose
 * transaction on FL_ETCD_COMPACT_KEY wins (compared on the key's version as that replica
 * last saw it) compacts etcd; the others learn the winner's target from the key. The winner
 * compacts to head - window: etcd then forgets older revisions for every replica at once. */

/* One round: 0 (compact_rev as it now is known), or an FL_E* code. */
static int compact_round(fl_store_etcd *s)
{
    int64_t target = fl_store_rev(&s->base) - s->window;
    pthread_mutex_lock(&s->mu);
    int64_t version = s->compact_version;
    pthread_mutex_unlock(&s->mu);
    char num[32];
    snprintf(num, sizeof num, "%" PRId64, target);
    fl_etcd_cmp cmp = { .key = FL_ETCD_COMPACT_KEY, .target = FL_ETCD_VERSION, .result = FL_ETCD_EQUAL,
                        .num = version };
    fl_etcd_op put = { .type = FL_ETCD_PUT, .key = FL_ETCD_COMPACT_KEY, .value = num, .value_len = strlen(num) };
    fl_etcd_op get = { .type = FL_ETCD_GET, .key = FL_ETCD_COMPACT_KEY };
    fl_etcd_txn_result res = { 0 };
    fl_etcd_error e = { 0 };
    if (target <= fl_store_compact_rev(&s->base))
        return 0;
    if (fl_etcd_txn(s->c, &cmp, 1, &put, 1, &get, 1, &res, &e) != 0)
        return fl_store_etcd_fail(s, "compaction's transaction", &e);
    int rc = 0;
    if (res.succeeded) {
        pthread_mutex_lock(&s->mu);
        s->compact_version = version + 1;
        pthread_mutex_unlock(&s->mu);
        int64_t t0 = fl_time_mono_ns();
        if (fl_etcd_compact(s->c, target, false, &e) == 0) {
            fl_store_etcd_saw_compaction(s, target);
            fl_store_base_count_compaction(&s->base, fl_time_mono_ns() - t0);
        } else {
            rc = fl_store_etcd_fail(s, "compaction", &e);
            if (rc == FL_EEXPIRED) /* compacted further already, by etcd itself or another */
                rc = 0;
        }
    } else if (res.nkvs == 1) {
        /* another replica won: its target is compacted (or about to be) */
        pthread_mutex_lock(&s->mu);
        s->compact_version = res.kvs[0].version;
        pthread_mutex_unlock(&s->mu);
        fl_store_etcd_saw_compaction(s, res.kvs[0].value ? strtoll(res.kvs[0].value->data, NULL, 10) : 0);
    }
    fl_etcd_txn_result_free(&res);
    return rc;
}

static void *compactor_main(void *arg)
{
    fl_store_etcd *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->closing) {
        struct timespec t = fl_time_after(CLOCK_MONOTONIC, s->interval_ms);
        while (!s->closing && pthread_cond_timedwait(&s->cv, &s->mu, &t) != ETIMEDOUT) {
        }
        if (s->closing)
            break;
        pthread_mutex_unlock(&s->mu);
        compact_round(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static int64_t etcd_compact(fl_store *bs)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    /* a round lost to a stale version learns the current one: the second can win */
    for (int i = 0; i < 2; i++) {
        int64_t before = fl_store_compact_rev(bs);
        if (compact_round(s) != 0 || fl_store_compact_rev(bs) > before)
            break;
    }
    return fl_store_compact_rev(bs);
}

/* ---- the controllers' lead (store.h, "leading"; etcd_lead.h) ---- */

static int etcd_lead(fl_store *bs, const char *identity, int ttl_s, const volatile int *stop, void (*lost)(void *ctx),
                     void *ctx)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    return fl_etcd_lead_campaign(s->lead, identity, ttl_s, stop, lost, ctx);
}

static void etcd_lead_release(fl_store *bs)
{
    fl_etcd_lead_release(((fl_store_etcd *)bs)->lead);
}

static int etcd_leader(fl_store *bs, char **holder, int64_t *since_ms)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    fl_etcd_error e = { 0 };
    int rc = fl_etcd_lead_holder(s->lead, holder, since_ms, &e);
    return rc ? fl_store_etcd_fail(s, "reading who leads", &e) : 0;
}

/* No rest or quick_bytes (every value is the state, kept in memory), no load mark; the
 * probe's write path is how long the oldest write has been waiting on etcd. */
const fl_store_backend fl_store_etcd_backend = {
    .open = etcd_open,
    .free = etcd_free,
    .get = fl_store_base_get, /* every value is in memory */
    .get_at = etcd_get_at,
    .list = etcd_list,
    .list_bare = etcd_list_bare,
    .write = fl_store_etcd_write,
    .watch = fl_store_etcd_watch,
    .compact = etcd_compact,
    .note_set = etcd_note_set,
    .note_get = etcd_note_get,
    .unchanged_since = fl_store_etcd_unchanged_since,
    .queued_ms = fl_store_etcd_queued_ms,
    .lead = etcd_lead,
    .lead_release = etcd_lead_release,
    .leader = etcd_leader,
};
