/* store_sqlite.c - the embedded store backend: SQLite in WAL mode as a revision log.
 *
 * Schema (see docs/internals/store.md): one table `kv` where every write appends a
 * row whose id is the global revision, plus `meta` holding the compaction revision.
 * The current value of every live key is kept in memory (store_cache.c) behind a
 * rwlock; reads of the current state never touch SQLite.
 *
 * This file opens and loads the store and serves reads and watches; the writer
 * thread, group commit and compaction are in store_sqlite_write.c.
 *
 * Threads:
 *   - callers (HTTP threads) queue writes and sleep on their own condvar;
 *   - ONE writer thread owns the write connection and the in-memory state: it takes
 *     every queued op, checks each against the in-memory state as changed by the ops
 *     before it in the batch, renders and inserts the rows in one transaction,
 *     commits once, then applies the batch to memory, publishes events to the watch
 *     hub (store_watch.c) and wakes the callers. Compaction runs on this thread too,
 *     in bounded chunks between write batches, so it never competes for SQLite's
 *     write lock;
 *   - a compaction timer thread asks the writer to compact every interval;
 *   - readers of old revisions (paginated lists, watch log replay) borrow a
 *     connection from a small pool and read inside one transaction so the check of
 *     the compaction revision and the rows come from the same snapshot.
 *
 * The public functions (store.c) reach this backend through its table of
 * operations, fl_store_sqlite_backend, at the end of this file. */
#include "store/store_sqlite.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/err.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "store/store_cache.h"
#include "store/store_impl.h"
#include "store/store_watch.h"

#define DEFAULT_WINDOW 100000
#define DEFAULT_INTERVAL_MS 5000
#define RING_SIZE 65536         /* events kept in memory for watches, unless configured */
#define RING_BYTES (8u << 20)   /* and the bytes of their values: older ones come from the log */
#define WATCH_BACKLOG 100000    /* queued events per watch before it expires */
#define VALUE_CACHE_BYTES (8u << 20)  /* current values kept in memory, unless configured */
#define FILL_CHUNK 64           /* a list's values read from the file before it delivers them */

/* ---- SQLite helpers ---- */

int fl_store_sqlite_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fl_log(FL_LOG_ERROR, "store", "%s: %s", sql, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return FL_EIO;
    }
    return 0;
}

static int open_conn(const char *path, bool durable, int cache_kib, sqlite3 **out)
{
    *out = NULL;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        fl_log(FL_LOG_ERROR, "store", "open %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return FL_EIO;
    }
    sqlite3_busy_timeout(db, 10000);
    char *pragmas = fl_asprintf("PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA cache_size=-%d;"
                                "PRAGMA journal_size_limit=67108864;",
                                durable ? "FULL" : "NORMAL", cache_kib);
    int rc = fl_store_sqlite_exec(db, pragmas);
    free(pragmas);
    if (rc) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

static sqlite3 *reader_get(fl_store_sqlite *s)
{
    sqlite3 *db = NULL;
    pthread_mutex_lock(&s->pool_mu);
    if (s->npool > 0)
        db = s->pool[--s->npool];
    pthread_mutex_unlock(&s->pool_mu);
    if (!db)
        open_conn(s->path, s->durable, 2048, &db);
    return db;
}

static void reader_put(fl_store_sqlite *s, sqlite3 *db)
{
    if (!db)
        return;
    pthread_mutex_lock(&s->pool_mu);
    if (s->npool < POOL_MAX) {
        s->pool[s->npool++] = db;
        db = NULL;
    }
    pthread_mutex_unlock(&s->pool_mu);
    sqlite3_close(db);
}

/* Start a read transaction and read the compaction revision in its snapshot. */
static int read_begin(sqlite3 *db, int64_t *compact)
{
    *compact = 0;
    if (fl_store_sqlite_exec(db, "BEGIN"))
        return FL_EIO;
    sqlite3_stmt *st = NULL;
    int rc = FL_EIO;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE name = 'compact_rev'", -1, &st, NULL) == SQLITE_OK) {
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW)
            *compact = sqlite3_column_int64(st, 0);
        rc = step == SQLITE_ROW || step == SQLITE_DONE ? 0 : FL_EIO;
    }
    sqlite3_finalize(st);
    if (rc)
        fl_store_sqlite_exec(db, "ROLLBACK");
    return rc;
}

/* read_begin on a reader connection taken from the pool. On success *dbp is the
 * connection (end the transaction, then give it back with reader_put); on failure
 * nothing is held. */
static int reader_begin(fl_store_sqlite *s, sqlite3 **dbp, int64_t *compact)
{
    *dbp = reader_get(s);
    if (!*dbp)
        return FL_EIO;
    int rc = read_begin(*dbp, compact);
    if (rc) {
        reader_put(s, *dbp);
        *dbp = NULL;
    }
    return rc;
}

/* ---- reading one revision's value ---- */

static fl_blob *column_blob(sqlite3_stmt *st, int col)
{
    const void *p = sqlite3_column_blob(st, col);
    return fl_blob_new(p, (size_t)sqlite3_column_bytes(st, col));
}


static int point_get(fl_store_sqlite *s, struct fl_store_point *p)
{
    pthread_mutex_lock(&s->pool_mu);
    bool have = s->npoints > 0;
    if (have)
        *p = s->points[--s->npoints];
    pthread_mutex_unlock(&s->pool_mu);
    if (have)
        return 0;
    p->by_id = NULL;
    if (open_conn(s->path, s->durable, 256, &p->db))
        return FL_EIO;
    if (sqlite3_prepare_v3(p->db, "SELECT name, deleted, value FROM kv WHERE id = ?1", -1, SQLITE_PREPARE_PERSISTENT,
                           &p->by_id, NULL) != SQLITE_OK) {
        fl_log(FL_LOG_ERROR, "store", "prepare read: %s", sqlite3_errmsg(p->db));
        sqlite3_close(p->db);
        return FL_EIO;
    }
    return 0;
}

static void point_put(fl_store_sqlite *s, struct fl_store_point *p)
{
    pthread_mutex_lock(&s->pool_mu);
    bool kept = s->npoints < POINT_MAX;
    if (kept)
        s->points[s->npoints++] = *p;
    pthread_mutex_unlock(&s->pool_mu);
    if (!kept) {
        sqlite3_finalize(p->by_id);
        sqlite3_close(p->db);
    }
}

int fl_store_sqlite_read_row(sqlite3_stmt *st, const char *key, int64_t rev, fl_blob **out)
{
    *out = NULL;
    sqlite3_bind_int64(st, 1, rev);
    int step = sqlite3_step(st), rc = FL_EEXPIRED;
    if (step == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name && !strcmp(name, key) && !sqlite3_column_int(st, 1)) {
            *out = column_blob(st, 2);
            rc = 0;
        }
    } else if (step != SQLITE_DONE) {
        fl_log(FL_LOG_ERROR, "store", "read %s at %lld: %s", key, (long long)rev,
               sqlite3_errmsg(sqlite3_db_handle(st)));
        rc = FL_EIO;
    }
    sqlite3_reset(st);
    return rc;
}

int fl_store_sqlite_read_rev(fl_store_sqlite *s, const char *key, int64_t rev, fl_blob **out)
{
    *out = NULL;
    struct fl_store_point p;
    if (point_get(s, &p))
        return FL_EIO;
    int rc = fl_store_sqlite_read_row(p.by_id, key, rev, out);
    point_put(s, &p);
    return rc;
}

/* ---- pins: rows a list of the current state still has to read ---- */

static void pin_add(fl_store_sqlite *s, struct fl_store_pin *pin, int64_t rev)
{
    pin->rev = rev;
    pthread_mutex_lock(&s->pool_mu);
    pin->next = s->pins;
    s->pins = pin;
    pthread_mutex_unlock(&s->pool_mu);
}

static void pin_remove(fl_store_sqlite *s, struct fl_store_pin *pin)
{
    pthread_mutex_lock(&s->pool_mu);
    struct fl_store_pin **p = &s->pins;
    while (*p && *p != pin)
        p = &(*p)->next;
    if (*p)
        *p = pin->next;
    pthread_mutex_unlock(&s->pool_mu);
}

int64_t fl_store_sqlite_pinned(fl_store_sqlite *s)
{
    int64_t min = 0;
    pthread_mutex_lock(&s->pool_mu);
    for (struct fl_store_pin *p = s->pins; p; p = p->next)
        if (!min || p->rev < min)
            min = p->rev;
    pthread_mutex_unlock(&s->pool_mu);
    return min;
}

/* The smallest string greater than every string starting with prefix, or NULL if
 * there is none (empty prefix, or all 0xff bytes). Caller frees. */
static char *prefix_upper(const char *prefix)
{
    size_t n = strlen(prefix);
    while (n > 0 && (unsigned char)prefix[n - 1] == 0xff)
        n--;
    if (n == 0)
        return NULL;
    char *u = fl_strndup(prefix, n);
    u[n - 1] = (char)((unsigned char)u[n - 1] + 1);
    return u;
}

/* ---- opening and loading ---- */

/* Loading reads the key, revision and create revision of the latest row of every key,
 * skipping keys whose latest row is a tombstone; not its value, which is read when asked
 * for. Scanning the table in id order with an index probe per row reads the file
 * sequentially; joining from the index instead costs a random seek per key. A large
 * store is read in two halves of its ids at once, the second on a connection and thread
 * of its own: at 334,000 keys (1 GB of values) the load is the first seconds of a start,
 * and nothing else runs yet. Nothing writes meanwhile (the writer starts after). */
#define LOAD_SPLIT_ROWS 50000 /* rows in the table from which the load is split, unless configured */

typedef struct load_row {
    char *name;
    int64_t id, create_rev;
    int marked; /* the column's value */
} load_row;

typedef struct load_part {
    fl_store_sqlite *s;
    sqlite3 *db;
    int64_t from; /* ids >= from (0: all) */
    int64_t to;   /* and < to (0: no bound) */
    bool into_cache; /* put rows into s->base.cache, else collect them in rows */
    load_row *rows;
    size_t n, cap;
    int rc;
} load_part;

/* Whether each row's value holds the mark is written with the row (column marked), so
 * that opening need not read the values: at 30,000 + 30,000 Deployments and ConfigMaps
 * propagated, reading a GB of them for the mark was most of the 4.3 s to /readyz. The
 * column comes before value in the row, so reading it reads no overflow page. Its values:
 * 0 no; 1 the value holds the mark's bytes (the caller checks what they mean); 2 the writer
 * said the value holds what the mark stands for (fl_store_op.mark), so no one need read it
 * (counting the 60,000 bindings that name owners, by reading each, took 2.4 s of a start).
 * A store made before the column has it added at the end of each row, where reading it
 * reads the whole row, and NULL in its old rows: those have their values read, as before.
 * meta's mark_hash names the mark the flags were written for; opening with another mark
 * forgets them. */
static int64_t mark_hash(const char *mark)
{
    return (int64_t)(fl_hash_str(mark) >> 1);
}

static int marks_prepare(fl_store_sqlite *s)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT marked FROM kv LIMIT 0", -1, &st, NULL) != SQLITE_OK &&
        fl_store_sqlite_exec(s->db, "ALTER TABLE kv ADD COLUMN marked INTEGER"))
        return FL_EIO;
    sqlite3_finalize(st);
    if (!s->mark)
        return 0; /* rows written now say nothing (NULL) */
    int64_t want = mark_hash(s->mark), had = -1;
    st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE name = 'mark_hash'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        had = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (had == want)
        return 0;
    char *sql = fl_asprintf("BEGIN IMMEDIATE; UPDATE kv SET marked = NULL WHERE marked IS NOT NULL;"
                            " INSERT OR REPLACE INTO meta (name, value) VALUES ('mark_hash', %lld); COMMIT;",
                            (long long)want);
    int rc = fl_store_sqlite_exec(s->db, sql);
    free(sql);
    if (rc)
        fl_store_sqlite_exec(s->db, "ROLLBACK");
    return rc;
}

/* Note key among those whose value held the mark. Opening only (one thread at a time). */
static void mark_key(fl_store_sqlite *s, const char *key)
{
    if (s->nmarked == s->capmarked) {
        s->capmarked = s->capmarked ? s->capmarked * 2 : 64;
        s->marked = fl_realloc(s->marked, (size_t)s->capmarked * sizeof *s->marked);
    }
    s->marked[s->nmarked++] = fl_strdup(key);
}

/* A loaded key's mark (the column's value). Opening only. */
static void mark_loaded(fl_store_sqlite *s, const char *key, int marked)
{
    if (marked == 2)
        s->nsaid++;
    else if (marked)
        mark_key(s, key);
}

static void load_part_run(load_part *p)
{
    sqlite3_stmt *st = NULL;
    p->rc = FL_EIO;
    if (sqlite3_prepare_v2(p->db,
                           "SELECT k.name, k.id, k.create_revision, CASE WHEN ?3 IS NULL THEN 0"
                           " WHEN k.marked IS NOT NULL THEN k.marked ELSE instr(k.value, ?3) > 0 END"
                           " FROM kv k WHERE k.id >= ?1 AND k.id < ?2 AND k.deleted = 0"
                           " AND k.id = (SELECT max(k2.id) FROM kv k2 WHERE k2.name = k.name)",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, p->from);
    sqlite3_bind_int64(st, 2, p->to ? p->to : INT64_MAX);
    if (p->s->mark)
        sqlite3_bind_blob(st, 3, p->s->mark, (int)strlen(p->s->mark), SQLITE_STATIC);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int64_t id = sqlite3_column_int64(st, 1), create_rev = sqlite3_column_int64(st, 2);
        int marked = sqlite3_column_int(st, 3);
        if (p->into_cache) {
            fl_store_cache_put(&p->s->base.cache, name, NULL, id, create_rev);
            mark_loaded(p->s, name, marked);
            continue;
        }
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 4096;
            p->rows = fl_realloc(p->rows, p->cap * sizeof *p->rows);
        }
        p->rows[p->n++] = (load_row){fl_strdup(name), id, create_rev, marked};
    }
    sqlite3_finalize(st);
    if (step == SQLITE_DONE)
        p->rc = 0;
}

static void *load_part_main(void *arg)
{
    load_part *p = arg;
    int64_t compact;
    if (read_begin(p->db, &compact) == 0) {
        load_part_run(p);
        fl_store_sqlite_exec(p->db, "COMMIT");
    }
    return NULL;
}

/* The id that splits the table's rows in two halves, or 0 when it has fewer than min rows. */
static int64_t load_split_id(sqlite3 *db, size_t min)
{
    sqlite3_stmt *st = NULL;
    int64_t rows = 0, mid = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM kv", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        rows = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (rows >= (int64_t)min && rows > 1 &&
        sqlite3_prepare_v2(db, "SELECT id FROM kv ORDER BY id LIMIT 1 OFFSET ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, rows / 2);
        if (sqlite3_step(st) == SQLITE_ROW)
            mid = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return mid;
}

static int load(fl_store_sqlite *s, size_t split_rows)
{
    int64_t compact = 0, head = 0;
    sqlite3_stmt *st = NULL;
    int rc = read_begin(s->db, &compact);
    if (rc)
        return rc;
    rc = FL_EIO;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT max((SELECT coalesce(max(id), 0) FROM kv),"
                           " (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'kv'))",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto out;
    head = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;

    load_part first = {.s = s, .db = s->db, .into_cache = true};
    load_part second = {.s = s, .rc = FL_EIO};
    int64_t mid = load_split_id(s->db, split_rows ? split_rows : LOAD_SPLIT_ROWS);
    pthread_t th;
    bool split = mid > 0 && open_conn(s->path, s->durable, 2048, &second.db) == 0;
    if (split) {
        first.to = second.from = mid;
        if (pthread_create(&th, NULL, load_part_main, &second) != 0) {
            sqlite3_close(second.db);
            first.to = 0;
            split = false;
        }
    }
    load_part_run(&first);
    if (split) {
        pthread_join(th, NULL);
        sqlite3_close(second.db);
        for (size_t i = 0; i < second.n; i++) {
            load_row *r = &second.rows[i];
            fl_store_cache_put(&s->base.cache, r->name, NULL, r->id, r->create_rev);
            mark_loaded(s, r->name, r->marked);
            free(r->name);
        }
        free(second.rows);
    }
    if (first.rc || (split && second.rc))
        goto out;
    rc = 0;
out:
    if (rc)
        fl_log(FL_LOG_ERROR, "store", "loading %s: %s", s->path, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    fl_store_sqlite_exec(s->db, "COMMIT");
    s->base.compact_rev = compact;
    s->base.head = head > compact ? head : compact;
    return rc;
}

static int replay_log(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max, fl_store_event **out,
                      size_t *n);

static void sqlite_free(fl_store *bs);

/* flotilla_store_db_size_bytes at each scrape: the database file and its write-ahead log, as
 * the disk holds them (etcd_mvcc_db_total_size_in_bytes for this store). */
static void scrape_size(void *ctx)
{
    fl_store_sqlite *s = ctx;
    struct stat st;
    double bytes = 0;
    if (stat(s->path, &st) == 0)
        bytes += (double)st.st_size;
    char *wal = fl_cat(s->path, "-wal", NULL);
    if (stat(wal, &st) == 0)
        bytes += (double)st.st_size;
    free(wal);
    fl_metric_gauge_set("flotilla_store_db_size_bytes", FL_STORE_DB_SIZE_HELP, NULL, NULL, bytes);
}

static int sqlite_open(const fl_store_config *cfg, fl_store **out)
{
    *out = NULL;
    fl_store_sqlite *s = fl_calloc(1, sizeof(*s));
    fl_store_base_init(&s->base, &fl_store_sqlite_backend);
    s->path = fl_strdup(cfg->path);
    s->window = cfg->compact_window > 0 ? cfg->compact_window : DEFAULT_WINDOW;
    s->interval_ms = cfg->compact_interval_ms ? cfg->compact_interval_ms : DEFAULT_INTERVAL_MS;
    s->durable = cfg->durable;
    s->warm.max = cfg->value_cache_bytes ? cfg->value_cache_bytes : VALUE_CACHE_BYTES;
    if (cfg->load_mark && *cfg->load_mark) {
        s->mark = fl_strdup(cfg->load_mark);
        s->capmarked = 64;
        s->marked = fl_malloc((size_t)s->capmarked * sizeof *s->marked);
    }
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->q_mu, NULL);
    pthread_cond_init(&s->q_cv, NULL);
    pthread_cond_init(&s->compact_cv, NULL);
    pthread_mutex_init(&s->timer_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->timer_cv, &ca);
    pthread_condattr_destroy(&ca);

    int rc = open_conn(s->path, s->durable, 2048, &s->db);
    if (rc)
        goto fail;
    rc = fl_store_sqlite_exec(s->db, "CREATE TABLE IF NOT EXISTS kv ("
                     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " name TEXT NOT NULL,"
                     " created INTEGER NOT NULL,"
                     " deleted INTEGER NOT NULL,"
                     " create_revision INTEGER NOT NULL,"
                     " prev_revision INTEGER NOT NULL,"
                     " marked INTEGER,"
                     " value BLOB NOT NULL);"
                     "CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);"
                     "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);");
    if (rc == 0)
        rc = marks_prepare(s);
    if (rc)
        goto fail;
    rc = load(s, cfg->load_split_rows);
    if (rc)
        goto fail;
    if (sqlite3_prepare_v3(s->db,
                           "INSERT INTO kv (id, name, created, deleted, create_revision, prev_revision, value,"
                           " marked) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           -1, SQLITE_PREPARE_PERSISTENT, &s->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(s->db, "SELECT name, deleted, value FROM kv WHERE id = ?1", -1, SQLITE_PREPARE_PERSISTENT,
                           &s->by_id, NULL) != SQLITE_OK) {
        fl_log(FL_LOG_ERROR, "store", "prepare insert: %s", sqlite3_errmsg(s->db));
        rc = FL_EIO;
        goto fail;
    }
    s->base.hub = fl_watch_hub_new(s->base.head, cfg->ring_events ? cfg->ring_events : RING_SIZE,
                              cfg->ring_bytes ? cfg->ring_bytes : RING_BYTES, WATCH_BACKLOG, replay_log, s);
    if (pthread_create(&s->writer, NULL, fl_store_sqlite_writer_main, s) != 0) {
        rc = FL_EIO;
        goto fail;
    }
    s->writer_started = true;
    if (s->interval_ms > 0 && pthread_create(&s->timer, NULL, fl_store_sqlite_timer_main, s) == 0)
        s->timer_started = true;
    fl_metrics_on_scrape(scrape_size, s);
    s->size_hook = true;
    fl_log(FL_LOG_INFO, "store", "opened %s: %zu keys, revision %lld, compacted at %lld", s->path,
           s->base.cache.count, (long long)s->base.head, (long long)s->base.compact_rev);
    *out = &s->base;
    return 0;
fail:
    sqlite_free(&s->base);
    return rc;
}

static void sqlite_free(fl_store *bs)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    if (s->size_hook)
        fl_metrics_remove_hook(scrape_size, s);
    if (s->timer_started) {
        pthread_mutex_lock(&s->timer_mu);
        s->timer_stop = true;
        pthread_cond_signal(&s->timer_cv);
        pthread_mutex_unlock(&s->timer_mu);
        pthread_join(s->timer, NULL);
    }
    if (s->writer_started) {
        /* The writer drains what is already queued, then exits. */
        pthread_mutex_lock(&s->q_mu);
        s->closing = true;
        pthread_cond_signal(&s->q_cv);
        pthread_mutex_unlock(&s->q_mu);
        pthread_join(s->writer, NULL);
    }
    fl_watch_hub_free(s->base.hub);
    for (int i = 0; i < s->npool; i++)
        sqlite3_close(s->pool[i]);
    for (int i = 0; i < s->npoints; i++) {
        sqlite3_finalize(s->points[i].by_id);
        sqlite3_close(s->points[i].db);
    }
    for (size_t i = 0; i < s->warm.n; i++)
        free(s->warm.q[(s->warm.head + i) % s->warm.cap].key);
    free(s->warm.q);
    for (long i = 0; s->marked && i < s->nmarked; i++)
        free(s->marked[i]);
    free(s->marked);
    free(s->mark);
    sqlite3_finalize(s->by_id);
    sqlite3_finalize(s->ins);
    sqlite3_close(s->db);
    fl_store_base_close(&s->base);
    pthread_cond_destroy(&s->timer_cv);
    pthread_mutex_destroy(&s->timer_mu);
    pthread_cond_destroy(&s->compact_cv);
    pthread_cond_destroy(&s->q_cv);
    pthread_mutex_destroy(&s->q_mu);
    pthread_mutex_destroy(&s->pool_mu);
    free(s->path);
    free(s);
}

/* ---- reading ---- */

static int sqlite_get(fl_store *bs, const char *key, fl_kv *out)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    /* A value not in memory is read from its row, which stays until a later write to the
     * key has been compacted: then the key has that later revision, read again. */
    for (int tries = 0;; tries++) {
        if (fl_store_base_get(bs, key, out))
            return FL_ENOTFOUND;
        if (out->value)
            return 0;
        int rc = fl_store_sqlite_read_rev(s, key, out->rev, &out->value);
        if (rc != FL_EEXPIRED || tries == 3)
            return rc == FL_EEXPIRED ? FL_EIO : rc;
    }
}

static long sqlite_marked(fl_store *bs, char ***keys)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    if (!s->mark)
        return -1;
    pthread_mutex_lock(&s->pool_mu);
    *keys = s->marked;
    long n = s->marked ? s->nmarked : 0;
    s->marked = NULL;
    s->nmarked = s->capmarked = 0;
    pthread_mutex_unlock(&s->pool_mu);
    return n;
}

static long sqlite_marked_said(fl_store *bs)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    return !s->mark ? -1 : s->nsaid;
}

/* Notes live in meta as rows named "note:<name>", read and written on a reader connection
 * of the pool: a note is written seldom, and the writer's connection is the writer thread's
 * alone. A statement over one note's row, ?1 bound to its name: */
typedef struct note_stmt {
    sqlite3 *db;
    sqlite3_stmt *st;
    char *row;
} note_stmt;

static int note_begin(fl_store_sqlite *s, const char *sql, const char *name, note_stmt *n)
{
    n->st = NULL;
    n->row = NULL;
    n->db = reader_get(s);
    if (!n->db)
        return FL_EIO;
    n->row = fl_asprintf("note:%s", name);
    if (sqlite3_prepare_v2(n->db, sql, -1, &n->st, NULL) != SQLITE_OK) {
        fl_log(FL_LOG_ERROR, "store", "note %s: %s", name, sqlite3_errmsg(n->db));
        return FL_EIO;
    }
    sqlite3_bind_text(n->st, 1, n->row, -1, SQLITE_STATIC);
    return 0;
}

static void note_end(fl_store_sqlite *s, note_stmt *n)
{
    sqlite3_finalize(n->st);
    free(n->row);
    reader_put(s, n->db);
}

/* A note's value is an integer, or text when text is not NULL. */
static int sqlite_note_set(fl_store *bs, const char *name, int64_t value, const char *text)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    note_stmt n;
    int rc = note_begin(s, "INSERT OR REPLACE INTO meta (name, value) VALUES (?1, ?2)", name, &n);
    if (!rc) {
        if (text)
            sqlite3_bind_text(n.st, 2, text, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(n.st, 2, value);
        rc = sqlite3_step(n.st) == SQLITE_DONE ? 0 : FL_EIO;
        if (rc)
            fl_log(FL_LOG_ERROR, "store", "note %s: %s", name, sqlite3_errmsg(n.db));
    }
    note_end(s, &n);
    return rc;
}

static int sqlite_note_get(fl_store *bs, const char *name, int64_t *value, char **text)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    note_stmt n;
    int rc = note_begin(s, "SELECT value FROM meta WHERE name = ?1", name, &n);
    if (!rc) {
        int step = sqlite3_step(n.st);
        if (step == SQLITE_ROW && value)
            *value = sqlite3_column_int64(n.st, 0);
        if (step == SQLITE_ROW && text)
            *text = fl_strdup(sqlite3_column_text(n.st, 0) ? (const char *)sqlite3_column_text(n.st, 0) : "");
        rc = step == SQLITE_ROW ? 0 : step == SQLITE_DONE ? FL_ENOTFOUND : FL_EIO;
    }
    note_end(s, &n);
    return rc;
}

static int sqlite_get_at(fl_store *bs, const char *key, int64_t rev, fl_blob **out)
{
    if ((*out = fl_store_base_get_at(bs, key, rev)) != NULL)
        return 0;
    return fl_store_sqlite_read_rev((fl_store_sqlite *)bs, key, rev, out);
}

/* What fill_values reads for: the store, and the revision at or below which a list leaves
 * values unread (fl_store_list_bare; 0: none). */
typedef struct fill_ctx {
    fl_store_sqlite *s;
    int64_t bare_upto;
} fill_ctx;

/* fl_store_snap_fill: the values of sn's entries [from, to) not in memory, read from the
 * file. Their rows are pinned (list_current). */
static int fill_values(void *ctx, fl_store_snap *sn, size_t from, size_t to)
{
    fill_ctx *fc = ctx;
    struct fl_store_point p;
    bool have = false;
    int rc = 0;
    for (size_t i = from; i < to && !rc; i++) {
        fl_kv *kv = &sn->ents[i].kv;
        if (kv->value || kv->rev <= fc->bare_upto)
            continue;
        if (!have && (rc = point_get(fc->s, &p)) != 0)
            break;
        have = true;
        rc = fl_store_sqlite_read_row(p.by_id, sn->arena + sn->ents[i].key_off, kv->rev, &kv->value);
    }
    if (have)
        point_put(fc->s, &p);
    return rc ? FL_EIO : 0;
}

/* A list of the current state is copied out under the read lock and handed to the
 * callback after unlocking (fl_store_snap), so a slow consumer never holds up the
 * writer and may call back into the store. Values not in memory are read from the file
 * a few at a time as the list is delivered; until it ends, a pin keeps compaction from
 * removing the rows it still has to read (they are current at the list's revision, and
 * only a compaction past that revision removes them). */
static int list_current(fl_store_sqlite *s, const char *prefix, const char *start_after, size_t limit, int64_t bare_upto,
                       fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out)
{
    fl_store_snap sn = { 0 };
    bool more;
    struct fl_store_pin pin;

    pthread_rwlock_rdlock(&s->base.lock);
    *rev_out = s->base.head;
    bool cold = fl_store_base_copy(&s->base, &sn, prefix, start_after, limit, bare_upto, &more);
    if (cold) /* under the lock: no write is applied, so compaction has not passed head */
        pin_add(s, &pin, s->base.head);
    pthread_rwlock_unlock(&s->base.lock);

    int rc = 0;
    fill_ctx fc = {s, bare_upto};
    if (fl_store_snap_deliver(&sn, cold ? fill_values : NULL, &fc, FILL_CHUNK, fn, ctx, &rc))
        more = true;
    if (cold)
        pin_remove(s, &pin);
    if (more_out)
        *more_out = more;
    return rc;
}

static int list_log(fl_store_sqlite *s, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                    fl_store_list_fn fn, void *ctx, bool *more_out)
{
    if (at_rev > fl_store_rev(&s->base))
        return FL_EINVAL; /* a snapshot of the future would still change */
    sqlite3 *db;
    int64_t compact;
    int rc = reader_begin(s, &db, &compact);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    char *upper = prefix_upper(prefix);
    bool more = false;
    if (at_rev < compact) {
        rc = FL_EEXPIRED;
        goto out;
    }
    /* Walk the (name, id) index in key order; for each row keep it only if it is
     * the key's latest row at or below at_rev and not a tombstone. */
    char *sql = fl_asprintf("SELECT k.name, k.id, k.create_revision, k.value FROM kv k"
                            " WHERE k.name >= ?1 AND k.name > ?2 %s AND k.id <= ?4 AND k.deleted = 0"
                            " AND k.id = (SELECT max(k2.id) FROM kv k2 WHERE k2.name = k.name AND k2.id <= ?4)"
                            " ORDER BY k.name LIMIT ?5",
                            upper ? "AND k.name < ?3" : "");
    int prc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    free(sql);
    if (prc != SQLITE_OK) {
        rc = FL_EIO;
        goto out;
    }
    sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, start_after ? start_after : "", -1, SQLITE_STATIC);
    if (upper)
        sqlite3_bind_text(st, 3, upper, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, at_rev);
    sqlite3_bind_int64(st, 5, limit > 0 ? (int64_t)limit + 1 : -1);
    size_t delivered = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (limit > 0 && delivered == limit) {
            more = true;
            break;
        }
        fl_kv kv = { column_blob(st, 3), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2) };
        bool go_on = fn(ctx, (const char *)sqlite3_column_text(st, 0), &kv);
        fl_blob_unref(kv.value);
        delivered++;
        if (!go_on) {
            more = sqlite3_step(st) == SQLITE_ROW;
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        fl_log(FL_LOG_ERROR, "store", "list at %lld: %s", (long long)at_rev, sqlite3_errmsg(db));
        rc = FL_EIO;
    }
out:
    sqlite3_finalize(st);
    free(upper);
    fl_store_sqlite_exec(db, "COMMIT");
    reader_put(s, db);
    if (more_out)
        *more_out = more;
    return rc;
}

static int sqlite_list(fl_store *bs, const char *prefix, const char *start_after, int64_t at_rev, size_t limit,
                       fl_store_list_fn fn, void *ctx, int64_t *rev_out, bool *more_out)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    if (at_rev == 0)
        return list_current(s, prefix, start_after, limit, 0, fn, ctx, rev_out, more_out);
    return list_log(s, prefix, start_after, at_rev, limit, fn, ctx, more_out);
}

static int sqlite_list_bare(fl_store *bs, const char *prefix, int64_t bare_upto, fl_store_list_fn fn, void *ctx,
                            int64_t *rev_out)
{
    return list_current((fl_store_sqlite *)bs, prefix, NULL, 0, bare_upto, fn, ctx, rev_out, NULL);
}

/* ---- watching ---- */

/* fl_watch_replay_fn for the hub: events from the log, read in one snapshot. */
static int replay_log(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max, fl_store_event **out,
                      size_t *n)
{
    fl_store_sqlite *s = ctx;
    *n = 0;
    sqlite3 *db;
    int64_t compact;
    int rc = reader_begin(s, &db, &compact);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    char *upper = prefix_upper(prefix);
    if (from < compact) {
        rc = FL_EEXPIRED;
        goto out;
    }
    char *sql = fl_asprintf("SELECT id, name, created, deleted, value FROM kv"
                            " WHERE id > ?1 AND id <= ?2 AND name >= ?3 %s ORDER BY id LIMIT ?5",
                            upper ? "AND name < ?4" : "");
    int prc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    free(sql);
    if (prc != SQLITE_OK) {
        rc = FL_EIO;
        goto out;
    }
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_text(st, 3, prefix, -1, SQLITE_STATIC);
    if (upper)
        sqlite3_bind_text(st, 4, upper, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (int64_t)max);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int type = sqlite3_column_int(st, 3) ? FL_EV_DELETE
                   : sqlite3_column_int(st, 2) ? FL_EV_PUT_CREATE
                                               : FL_EV_PUT_UPDATE;
        out[(*n)++] = fl_watch_event_new(type, (const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 0),
                                         column_blob(st, 4));
    }
    if (step != SQLITE_DONE) {
        fl_log(FL_LOG_ERROR, "store", "watch replay from %lld: %s", (long long)from, sqlite3_errmsg(db));
        rc = FL_EIO;
    }
out:
    sqlite3_finalize(st);
    free(upper);
    fl_store_sqlite_exec(db, "COMMIT");
    reader_put(s, db);
    return rc;
}

static int sqlite_watch(fl_store *bs, const char *prefix, int64_t from_rev, fl_watch **out)
{
    /* A compaction racing past this check is caught by the replay's own snapshot check. */
    if (from_rev < fl_store_compact_rev(bs))
        return FL_EEXPIRED;
    return fl_watch_hub_open(bs->hub, prefix, from_rev, out);
}

static void sqlite_rest(fl_store *bs)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    pthread_rwlock_wrlock(&s->base.lock);
    while (s->warm.n > 0)
        fl_store_sqlite_warm_drop(s);
    pthread_rwlock_unlock(&s->base.lock);
    fl_watch_hub_rest(s->base.hub);
    /* the idle readers' page caches (a connection in use, or the writer's, keeps its own) */
    pthread_mutex_lock(&s->pool_mu);
    for (int i = 0; i < s->npool; i++)
        sqlite3_db_release_memory(s->pool[i]);
    for (int i = 0; i < s->npoints; i++)
        sqlite3_db_release_memory(s->points[i].db);
    pthread_mutex_unlock(&s->pool_mu);
}

static size_t sqlite_quick_bytes(fl_store *bs)
{
    fl_store_sqlite *s = (fl_store_sqlite *)bs;
    pthread_rwlock_rdlock(&s->base.lock);
    size_t n = s->warm.bytes;
    pthread_rwlock_unlock(&s->base.lock);
    return n + fl_watch_hub_ring_bytes(s->base.hub);
}

const fl_store_backend fl_store_sqlite_backend = {
    .open = sqlite_open,
    .free = sqlite_free,
    .get = sqlite_get,
    .get_at = sqlite_get_at,
    .list = sqlite_list,
    .list_bare = sqlite_list_bare,
    .write = fl_store_sqlite_write,
    .watch = sqlite_watch,
    .compact = fl_store_sqlite_compact,
    .note_set = sqlite_note_set,
    .note_get = sqlite_note_get,
    .rest = sqlite_rest,
    .quick_bytes = sqlite_quick_bytes,
    .marked = sqlite_marked,
    .marked_said = sqlite_marked_said,
    .queued_ms = fl_store_sqlite_queued_ms,
};
