/* store_sqlite_write.c - the SQLite backend's writer thread: group commit and compaction.
 *
 * A write (fl_store_write, store.c) queues the caller's op and sleeps on a semaphore
 * on its stack.
 * The single writer thread takes everything queued (up to MAX_BATCH ops) and,
 * inside one transaction, checks each op against the in-memory state as already
 * changed by the ops before it in the batch, assigns it revision head+1, renders
 * its value and inserts its row. Ops that fail their check take no revision and
 * are never rendered. One COMMIT (one fsync when durable) covers the batch; only
 * then is the batch applied to memory and published to watchers, and the callers
 * woken. If anything in SQLite fails, the batch is rolled back and every op in it
 * gets FL_EIO with memory untouched.
 *
 * Compaction runs on the same thread in transactions of COMPACT_CHUNK revisions,
 * interleaved with write batches, so it never holds writes up for long and never
 * competes with them for SQLite's write lock. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "store/store_sqlite.h"

#define MAX_BATCH 1024          /* ops per group commit */
#define COMPACT_CHUNK 10000     /* revisions per compaction transaction */

int fl_store_sqlite_write(fl_store *bs, fl_store_op *op)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    struct wreq r = { .op = op, .rc = FL_ECLOSED };
    sem_init(&r.done, 0, 0);
    pthread_mutex_lock(&s->q_mu);
    bool queued = !s->closing, wake = false;
    if (queued) {
        if (s->q_tail) {
            s->q_tail->next = &r;
        } else {
            s->q_head = &r;
            s->q_since_ms = fl_time_mono_ms();
            wake = true; /* the writer sleeps only on an empty queue */
        }
        s->q_tail = &r;
    }
    pthread_mutex_unlock(&s->q_mu);
    /* Woken after the unlock: woken under it, the writer would run into the lock, sleep
     * and need waking again. */
    if (wake)
        pthread_cond_signal(&s->q_cv);
    if (queued)
        while (sem_wait(&r.done) != 0)
            ; /* EINTR */
    sem_destroy(&r.done);
    return r.rc;
}

/* Per-batch view of the keys the batch has touched so far, so several ops on one
 * key see each other's effects in order. Open addressing over MAX_BATCH entries. */
struct pending {
    const char *key;
    bool present;
    fl_blob *value;  /* borrowed from the batch's results */
    int64_t rev, create_rev;
};

struct batch {
    struct wreq *reqs[MAX_BATCH];
    struct pending pend[MAX_BATCH];
    int slots[2 * MAX_BATCH];         /* index into pend, -1 = empty */
    size_t npend;
    /* results, parallel to reqs */
    int rc[MAX_BATCH];
    int64_t rev[MAX_BATCH];
    int64_t create_rev[MAX_BATCH];
    fl_blob *value[MAX_BATCH];
    fl_store_event *ev[MAX_BATCH];
};

static size_t hash_key(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ULL;
    return (size_t)h;
}

static struct pending *pending_find(struct batch *b, const char *key, bool add)
{
    size_t mask = 2 * MAX_BATCH - 1;
    for (size_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
        int idx = b->slots[i];
        if (idx < 0) {
            if (!add)
                return NULL;
            b->slots[i] = (int)b->npend;
            struct pending *p = &b->pend[b->npend++];
            p->key = key;
            return p;
        }
        if (strcmp(b->pend[idx].key, key) == 0)
            return &b->pend[idx];
    }
}

void fl_store_sqlite_warm_drop(fl_store_sqlite *s)
{
    struct fl_store_warm *w = &s->warm;
    struct fl_store_warm_rec *r = &w->q[w->head];
    fl_store_node *n = fl_store_cache_find(&s->base.cache, r->key);
    if (n && n->rev == r->rev) {
        fl_blob_unref(n->value);
        n->value = NULL;
    }
    w->bytes -= r->len;
    free(r->key);
    w->head = (w->head + 1) % w->cap;
    w->n--;
}

/* Keep the value key got at rev in memory, and drop the oldest kept values beyond the
 * budget: their keys' nodes no longer hold them, unless written again since (the record
 * of that write keeps it). Writer thread, under the lock. */
static void warm_push(fl_store_sqlite *s, const char *key, int64_t rev, size_t len)
{
    struct fl_store_warm *w = &s->warm;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        struct fl_store_warm_rec *q = fl_malloc(cap * sizeof *q);
        for (size_t i = 0; i < w->n; i++)
            q[i] = w->q[(w->head + i) % w->cap];
        free(w->q);
        w->q = q;
        w->cap = cap;
        w->head = 0;
    }
    w->q[(w->head + w->n++) % w->cap] = (struct fl_store_warm_rec){fl_strdup(key), rev, len};
    w->bytes += len;
    while (w->bytes > w->max && w->n > 0)
        fl_store_sqlite_warm_drop(s);
}

/* Check, render and insert op i. Returns 0 if written, an FL_E* code the op fails
 * with (batch continues), or 1 if SQLite failed (batch must roll back). */
static int stage_op(fl_store_sqlite *s, struct batch *b, size_t i, int64_t *head)
{
    fl_store_op *op = b->reqs[i]->op;
    struct pending *p = pending_find(b, op->key, false);
    struct pending cur = { 0 };
    if (p) {
        cur = *p;
    } else {
        /* Only this thread mutates the cache, so reading it unlocked here is safe. */
        fl_store_node *n = fl_store_cache_find(&s->base.cache, op->key);
        if (n)
            cur = (struct pending){ op->key, true, n->value, n->rev, n->create_rev };
    }
    if (op->type == FL_STORE_CREATE && cur.present)
        return FL_EEXIST;
    if (op->type != FL_STORE_CREATE) {
        if (!cur.present)
            return FL_ENOTFOUND;
        if (op->prev_rev != 0 && op->prev_rev != cur.rev)
            return FL_ECONFLICT;
    }
    int64_t rev = *head + 1;
    fl_blob *read = NULL; /* the current value, read from the file: not in memory */
    if (cur.present && !cur.value && !op->no_current) {
        /* the writer's connection, inside its batch's transaction: the row is there */
        if (fl_store_sqlite_read_row(s->by_id, op->key, cur.rev, &read)) {
            fl_log(FL_LOG_ERROR, "store", "cannot read %s at %lld to write over it", op->key, (long long)cur.rev);
            return 1;
        }
        cur.value = read;
    }
    fl_blob *value = fl_store_render_value(op, op->no_current ? NULL : cur.value, rev);
    fl_blob_unref(read);
    if (!value)
        return FL_EINVAL;
    if (op->rendered)
        op->rendered(op->ctx, value);
    int64_t create_rev = op->type == FL_STORE_CREATE ? rev : cur.create_rev;

    sqlite3_stmt *st = s->ins;
    sqlite3_bind_int64(st, 1, rev);
    sqlite3_bind_text(st, 2, op->key, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, op->type == FL_STORE_CREATE);
    sqlite3_bind_int(st, 4, op->type == FL_STORE_DELETE);
    sqlite3_bind_int64(st, 5, create_rev);
    sqlite3_bind_int64(st, 6, op->type == FL_STORE_CREATE ? 0 : cur.rev);
    sqlite3_bind_blob(st, 7, value->data, (int)value->len, SQLITE_STATIC);
    if (s->mark) /* the column's values: load_part_run */
        sqlite3_bind_int(st, 8, op->mark > 0 ? 2 : op->mark < 0 ? 0
                                : memmem(value->data, value->len, s->mark, strlen(s->mark)) != NULL);
    else
        sqlite3_bind_null(st, 8);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (step != SQLITE_DONE) {
        fl_log(FL_LOG_ERROR, "store", "insert %s at %lld: %s", op->key, (long long)rev, sqlite3_errmsg(s->db));
        fl_blob_unref(value);
        return 1;
    }
    *head = rev;
    if (!p)
        p = pending_find(b, op->key, true);
    *p = (struct pending){ op->key, op->type != FL_STORE_DELETE, value, rev, create_rev };
    b->rev[i] = rev;
    b->create_rev[i] = create_rev;
    b->value[i] = value;
    return 0;
}

static void run_batch(fl_store_sqlite *s, struct batch *b, size_t n)
{
    int64_t t0 = fl_time_mono_ns();
    memset(b->slots, -1, sizeof(b->slots));
    b->npend = 0;
    int64_t head = s->base.head;
    bool ok = fl_store_sqlite_exec(s->db, "BEGIN IMMEDIATE") == 0;
    for (size_t i = 0; i < n; i++) {
        b->value[i] = NULL;
        b->ev[i] = NULL;
        b->rc[i] = FL_EIO;
        if (!ok)
            continue;
        int rc = stage_op(s, b, i, &head);
        if (rc == 1)
            ok = false;
        else
            b->rc[i] = rc;
    }
    if (ok && fl_store_sqlite_exec(s->db, "COMMIT") != 0)
        ok = false;
    if (!ok) {
        /* Nothing of the batch happened: memory stays as it was, every op fails. */
        if (!sqlite3_get_autocommit(s->db))
            fl_store_sqlite_exec(s->db, "ROLLBACK");
        for (size_t i = 0; i < n; i++) {
            fl_blob_unref(b->value[i]);
            b->value[i] = NULL;
            b->rc[i] = FL_EIO;
        }
    } else {
        size_t nev = 0;
        pthread_rwlock_wrlock(&s->base.lock);
        for (size_t i = 0; i < n; i++) {
            if (b->rc[i] != 0)
                continue;
            fl_store_op *op = b->reqs[i]->op;
            int type;
            if (op->type == FL_STORE_DELETE) {
                fl_store_cache_del(&s->base.cache, op->key);
                type = FL_EV_DELETE;
            } else {
                fl_store_cache_put(&s->base.cache, op->key, fl_blob_ref(b->value[i]), b->rev[i], b->create_rev[i]);
                warm_push(s, op->key, b->rev[i], b->value[i]->len);
                type = op->type == FL_STORE_CREATE ? FL_EV_PUT_CREATE : FL_EV_PUT_UPDATE;
            }
            b->ev[nev++] = fl_watch_event_new(type, op->key, b->rev[i], fl_blob_ref(b->value[i]));
        }
        __atomic_store_n(&s->base.head, head, __ATOMIC_RELEASE);
        pthread_rwlock_unlock(&s->base.lock);
        fl_watch_hub_publish(s->base.hub, b->ev, nev);
    }
    fl_store_base_count_commit(&s->base, n, fl_time_mono_ns() - t0);
    /* No lock: each caller sleeps on its own semaphore and owns r once it is posted
     * (sem_post may be the last touch of a semaphore its waiter then destroys). */
    for (size_t i = 0; i < n; i++) {
        struct wreq *r = b->reqs[i];
        r->rc = b->rc[i];
        if (r->rc == 0) {
            r->op->rev = b->rev[i];
            r->op->value = b->value[i]; /* the batch's reference passes to the caller */
        }
        sem_post(&r->done);
    }
}

/* One bounded compaction transaction towards target. Returns true when finished
 * (target reached, or an error that the next timer tick will retry). */
static bool compact_step(fl_store_sqlite *s, int64_t target)
{
    int64_t from = s->base.compact_rev;
    if (from >= target)
        return true;
    int64_t to = target - from > COMPACT_CHUNK ? from + COMPACT_CHUNK : target;
    int64_t pinned = fl_store_sqlite_pinned(s); /* a list still reads rows current there */
    if (pinned && to > pinned)
        to = pinned;
    if (to <= from)
        return true; /* the next tick goes on */
    char *sql = fl_asprintf("BEGIN IMMEDIATE;"
                            /* rows superseded by a row in the chunk */
                            "DELETE FROM kv WHERE id IN (SELECT prev_revision FROM kv"
                            " WHERE id > %lld AND id <= %lld AND prev_revision > 0);"
                            /* tombstones in the chunk: the key is gone as of `to` */
                            "DELETE FROM kv WHERE id > %lld AND id <= %lld AND deleted = 1;"
                            "INSERT OR REPLACE INTO meta (name, value) VALUES ('compact_rev', %lld);"
                            "COMMIT;",
                            (long long)from, (long long)to, (long long)from, (long long)to, (long long)to);
    int rc = fl_store_sqlite_exec(s->db, sql);
    free(sql);
    if (rc) {
        if (!sqlite3_get_autocommit(s->db))
            fl_store_sqlite_exec(s->db, "ROLLBACK");
        return true;
    }
    __atomic_store_n(&s->base.compact_rev, to, __ATOMIC_RELEASE);
    return to >= target;
}

void *fl_store_sqlite_writer_main(void *arg)
{
    fl_store_sqlite *s = arg;
    struct batch *b = fl_malloc(sizeof(*b));
    pthread_setname_np(pthread_self(), "fl-store");
    bool job = false;
    uint64_t job_gen = 0;
    int64_t job_target = 0, job_t0 = 0;
    for (;;) {
        pthread_mutex_lock(&s->q_mu);
        while (!s->q_head && s->compact_requested == s->compact_done && !s->closing)
            fl_cond_wait_idle(&s->q_cv, &s->q_mu, CLOCK_REALTIME); /* idle: its cached blocks go */
        if (s->closing && !s->q_head) {
            pthread_mutex_unlock(&s->q_mu);
            break;
        }
        size_t n = 0;
        while (s->q_head && n < MAX_BATCH) {
            b->reqs[n++] = s->q_head;
            s->q_head = s->q_head->next;
        }
        if (!s->q_head)
            s->q_tail = NULL;
        else /* more than one batch was queued: the rest waits from now, for the next one */
            s->q_since_ms = fl_time_mono_ms();
        bool compact = s->compact_requested != s->compact_done;
        uint64_t gen = s->compact_requested;
        pthread_mutex_unlock(&s->q_mu);

        if (n)
            run_batch(s, b, n);
        if (compact) {
            if (!job) {
                job = true;
                job_gen = gen;
                job_target = s->base.head - s->window;
                job_t0 = fl_time_mono_ns();
            }
            if (compact_step(s, job_target)) {
                job = false;
                fl_store_base_count_compaction(&s->base, fl_time_mono_ns() - job_t0);
                pthread_mutex_lock(&s->q_mu);
                s->compact_done = job_gen;
                pthread_cond_broadcast(&s->compact_cv);
                pthread_mutex_unlock(&s->q_mu);
            }
        }
    }
    pthread_mutex_lock(&s->q_mu);
    s->writer_done = true;
    s->compact_done = s->compact_requested;
    pthread_cond_broadcast(&s->compact_cv);
    pthread_mutex_unlock(&s->q_mu);
    free(b);
    return NULL;
}

int64_t fl_store_sqlite_queued_ms(fl_store *bs, int64_t now_ms)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    pthread_mutex_lock(&s->q_mu);
    int64_t ms = s->q_head ? now_ms - s->q_since_ms : 0;
    pthread_mutex_unlock(&s->q_mu);
    return ms > 0 ? ms : 0;
}

int64_t fl_store_sqlite_compact(fl_store *bs)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    pthread_mutex_lock(&s->q_mu);
    if (!s->closing && !s->writer_done) {
        uint64_t gen = ++s->compact_requested;
        pthread_cond_signal(&s->q_cv);
        while (s->compact_done < gen && !s->writer_done)
            pthread_cond_wait(&s->compact_cv, &s->q_mu);
    }
    pthread_mutex_unlock(&s->q_mu);
    return fl_store_compact_rev(&s->base);
}

void *fl_store_sqlite_timer_main(void *arg)
{
    fl_store_sqlite *s = arg;
    pthread_mutex_lock(&s->timer_mu);
    while (!s->timer_stop) {
        struct timespec t = fl_time_after(CLOCK_MONOTONIC, s->interval_ms);
        while (!s->timer_stop && pthread_cond_timedwait(&s->timer_cv, &s->timer_mu, &t) == 0)
            ;
        if (s->timer_stop)
            break;
        pthread_mutex_unlock(&s->timer_mu);
        fl_store_sqlite_compact(&s->base);
        pthread_mutex_lock(&s->timer_mu);
    }
    pthread_mutex_unlock(&s->timer_mu);
    return NULL;
}
