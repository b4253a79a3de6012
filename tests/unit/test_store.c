/* test_store.c - unit tests for the store (src/store/), SQLite and memory-only.
 *
 * The backend-neutral tests live in test_store_contract.h, which test_store_etcd.c runs
 * against etcd too; this file registers them for SQLite and memory stores and adds the
 * tests only SQLite has (the file, kill -9, load marks, rest, the writer's batches).
 *
 * Each test opens a fresh database in its own temporary directory. Values are
 * rendered as "<text>@<rev>" so a test can check that the bytes stored carry the
 * revision the store assigned. The crash test forks a writer child and kills it
 * with SIGKILL; everything it acknowledged must be there after reopening.
 *
 * Memory stores run every test that does not reopen or touch the database again
 * (registered as "memory/<test>"), then tests of their own: lists and watches at
 * the edge of the history window, a cross-check of lists and watches at every
 * revision against a SQLite store fed the same ops, and the footprint of 10,000
 * stores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "store/store.h"
#include "store/store_impl.h"
#include "store/store_watch.h"

#include "test_store_contract.h"

/* ---- fixtures ---- */

static int setup(void **state)
{
    fixture *f = fl_calloc(1, sizeof(*f));
    strcpy(f->dir, "/tmp/fl-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/store.db", f->dir);
    f->s = open_store(f, 0, false);
    *state = f;
    return 0;
}

/* A SQLite store that keeps no value in memory: every read of one reads the file. */
static int setup_cold(void **state)
{
    fixture *f = fl_calloc(1, sizeof(*f));
    strcpy(f->dir, "/tmp/fl-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/store.db", f->dir);
    f->vcache = 1;
    f->s = open_store(f, 0, false);
    *state = f;
    return 0;
}

/* A memory store with the default history window (1024 revisions). */
static int setup_mem(void **state)
{
    fixture *f = fl_calloc(1, sizeof(*f));
    f->memory = true;
    f->s = open_store(f, 0, false);
    *state = f;
    return 0;
}

/* A memory store whose window holds all of a concurrency test's 2,000 writes. */
static int setup_mem_big(void **state)
{
    fixture *f = fl_calloc(1, sizeof(*f));
    f->memory = true;
    f->ring = 4096;
    f->s = open_store(f, 0, false);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fl_store_free(f->s);
    if (f->memory) {
        free(f);
        return 0;
    }
    const char *sfx[] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", f->path, sfx[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}


/* ---- helpers ---- */













/* ---- basic CRUD ---- */


/* A write in the background (wedged_writer_probe). */
static void *background_put(void *arg)
{
    fl_store *s = ((void **)arg)[0];
    const char *key = ((void **)arg)[1];
    int64_t rev = 0;
    ((void **)arg)[2] = (void *)(intptr_t)do_write(s, FL_STORE_CREATE, key, 0, "v", &rev, NULL);
    return NULL;
}

/* /readyz's store check: a writer that cannot commit (another process holds the database's
 * write lock) fails the write-path probe once a queued write waited past the bound, and passes
 * again once the writer commits; reads never stopped. */
static void test_probe_says_wedged_while_the_writer_cannot_commit_and_recovers(void **state)
{
    fixture *f = *state;
    setenv("FLOTILLA_STORE_WEDGED_MS", "300", 1);
    char why[128] = "";
    assert_int_equal(fl_store_probe(f->s, true, why, sizeof why), 0);
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    void *a[3] = {f->s, "/w/1", (void *)(intptr_t)-1}, *b[3] = {f->s, "/w/2", (void *)(intptr_t)-1};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, background_put, a), 0);
    nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
    assert_int_equal(pthread_create(&tb, NULL, background_put, b), 0); /* queued behind the first */
    int rc = 0;
    for (int i = 0; i < 40 && rc == 0; i++) { /* at most 4 s */
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
        rc = fl_store_probe(f->s, true, why, sizeof why);
    }
    assert_int_equal(rc, FL_ETIMEDOUT);
    assert_non_null(strstr(why, "waited"));
    assert_int_equal(fl_store_probe(f->s, false, NULL, 0), 0); /* reads still answer */
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal((intptr_t)a[2], 0);
    assert_int_equal((intptr_t)b[2], 0);
    assert_int_equal(fl_store_probe(f->s, true, why, sizeof why), 0);
    unsetenv("FLOTILLA_STORE_WEDGED_MS");
}






/* ---- batching ---- */

typedef struct bg_write {
    fl_store *s;
    int type;
    const char *key;
    int64_t prev;
    const char *text;
    unsigned delay_ms;
    int rc;
    int64_t rev;
    pthread_t t;
} bg_write;

static void *bg_write_main(void *arg)
{
    bg_write *b = arg;
    render_ctx rcx = { .text = b->text, .delay_ms = b->delay_ms };
    fl_store_op op = { .type = b->type, .key = b->key, .prev_rev = b->prev, .render = render_text, .ctx = &rcx };
    b->rc = fl_store_write(b->s, &op);
    b->rev = op.rev;
    fl_blob_unref(op.value);
    return NULL;
}

static void test_ops_on_one_key_in_one_batch_apply_in_order(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    /* The first op's render sleeps on the writer thread, so the next ones (queued
     * one by one, 30 ms apart) all land in the following batch, in this order. */
    bg_write w[] = {
        { s, FL_STORE_CREATE, "/blocker", 0, "b", 400 },
        { s, FL_STORE_CREATE, "/k", 0, "c1" },
        { s, FL_STORE_UPDATE, "/k", 0, "u1" },
        { s, FL_STORE_CREATE, "/k", 0, "dup" },     /* EEXIST: created just before */
        { s, FL_STORE_DELETE, "/k", 0, "d1" },
        { s, FL_STORE_UPDATE, "/k", 0, "lost" },    /* ENOTFOUND: deleted just before */
        { s, FL_STORE_CREATE, "/k", 0, "c2" },
        { s, FL_STORE_UPDATE, "/k", 1, "stale" },   /* ECONFLICT */
    };
    size_t n = sizeof w / sizeof w[0];
    for (size_t i = 0; i < n; i++) {
        pthread_create(&w[i].t, NULL, bg_write_main, &w[i]);
        usleep(30000);
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(w[i].t, NULL);
    int want[] = { 0, 0, 0, FL_EEXIST, 0, FL_ENOTFOUND, 0, FL_ECONFLICT };
    for (size_t i = 0; i < n; i++)
        assert_int_equal(w[i].rc, want[i]);
    /* Successful ops got consecutive revisions; failed ones none. */
    assert_int_equal(w[0].rev, 1);
    assert_int_equal(w[1].rev, 2);
    assert_int_equal(w[2].rev, 3);
    assert_int_equal(w[4].rev, 4);
    assert_int_equal(w[6].rev, 5);
    assert_int_equal(fl_store_rev(s), 5);
    fl_kv kv;
    assert_int_equal(fl_store_get(s, "/k", &kv), 0);
    assert_string_equal(kv.value->data, "c2@5");
    assert_int_equal(kv.create_rev, 5);
    fl_blob_unref(kv.value);
    /* The log agrees after a restart. */
    reopen(f, 0);
    assert_value(f->s, "/k", "c2", 5);
}

/* ---- lists ---- */









/* ---- watches ---- */









/* ---- compaction ---- */



/* ---- values not in memory ---- */


static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static long marked_keys(fl_store *s, char ***keys)
{
    long n = fl_store_marked(s, keys);
    if (n > 0)
        qsort(*keys, (size_t)n, sizeof **keys, cmp_str);
    return n;
}

static void free_keys(char **keys, long n)
{
    for (long i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

/* Keys whose current value holds "mark": /a and /c; /d held it once; /b never. */
static void write_marks(fl_store *s)
{
    put_new(s, "/a", "has-mark");
    put_new(s, "/b", "plain");
    put_new(s, "/c", "plain");
    put_upd(s, "/c", "mark-now");
    put_new(s, "/d", "mark-then");
    put_upd(s, "/d", "plain");
}

/* The keys marked at opening are want (sorted, NULL-terminated), and nothing else. */
static void assert_marked(fl_store *s, const char *const *want)
{
    char **keys = NULL;
    long n = marked_keys(s, &keys), i = 0;
    for (; want[i]; i++) {
        assert_true(i < n);
        assert_string_equal(keys[i], want[i]);
    }
    assert_int_equal(n, i);
    free_keys(keys, n);
}

#define MARKED(...) ((const char *const[]){__VA_ARGS__, NULL})

static fl_store *open_marked(fixture *f, const char *mark)
{
    fl_store_config cfg = { .path = f->path, .compact_interval_ms = -1, .load_mark = mark,
                            .load_split_rows = 4 }; /* in two halves, merged */
    fl_store *s = NULL;
    assert_int_equal(fl_store_open(&cfg, &s), 0);
    return s;
}

static void test_opening_notes_the_keys_whose_value_holds_the_mark(void **state)
{
    fixture *f = *state;
    write_marks(f->s);
    put_new(f->s, "/e", "mark-gone");
    put_del(f->s, "/e", "mark");
    char **keys = NULL;
    assert_int_equal(fl_store_marked(f->s, &keys), -1); /* opened without a mark */
    assert_null(keys);
    fl_store_free(f->s);
    f->s = open_marked(f, "mark");
    assert_marked(f->s, MARKED("/a", "/c")); /* current values only, deleted keys not */
    assert_int_equal(fl_store_marked(f->s, &keys), 0); /* handed over once */
    free(keys);
    assert_int_equal(fl_store_count(f->s, ""), 4);
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, text, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", text, err ? err : "?");
    sqlite3_close(db);
}

/* Rows written with a mark configured say whether they hold it, and opening takes that from
 * them without reading their values; opening with another mark reads the values again. */
static void test_opening_takes_the_mark_from_rows_written_with_it(void **state)
{
    fixture *f = *state;
    fl_store_free(f->s);
    f->s = open_marked(f, "mark");
    write_marks(f->s);
    fl_store_free(f->s);
    f->s = NULL;
    /* values changed behind the store's back: only the rows' flags still say the old truth */
    sql(f->path, "UPDATE kv SET value = CAST('tampered' AS BLOB) WHERE name = '/a';"
                 "UPDATE kv SET value = CAST('mark' AS BLOB) WHERE name = '/b'");
    f->s = open_marked(f, "mark");
    assert_marked(f->s, MARKED("/a", "/c"));
    fl_store_free(f->s);
    f->s = open_marked(f, "tamp"); /* another mark: the flags are forgotten, the values read */
    assert_marked(f->s, MARKED("/a"));
    put_new(f->s, "/e", "tamp-new");
    fl_store_free(f->s);
    f->s = open_marked(f, "tamp");
    assert_marked(f->s, MARKED("/a", "/e"));
}

/* Write key with what its writer says of the mark (fl_store_op.mark). */
static void put_said(fl_store *s, int type, const char *key, const char *text, signed char mark)
{
    render_ctx rc = { .text = text };
    fl_store_op op = { .type = type, .key = key, .render = render_text, .ctx = &rc, .mark = mark };
    assert_int_equal(fl_store_write(s, &op), 0);
    fl_blob_unref(op.value);
}

/* What a writer says of a value's mark stands at opening whatever the value's bytes: keys it
 * said hold it are counted without being read or handed over; keys it said nothing of are
 * handed over if their bytes hold the mark. A build that wrote no such word opens the
 * store as ever. */
static void test_opening_counts_the_keys_their_writers_said_hold_the_mark(void **state)
{
    fixture *f = *state;
    fl_store_free(f->s);
    f->s = open_marked(f, "mark");
    put_said(f->s, FL_STORE_CREATE, "/said", "plain", 1);
    put_said(f->s, FL_STORE_CREATE, "/denied", "mark-bytes", -1);
    put_said(f->s, FL_STORE_CREATE, "/bytes", "mark-bytes", 0);
    put_said(f->s, FL_STORE_CREATE, "/said-then", "plain", 1);
    put_said(f->s, FL_STORE_UPDATE, "/said-then", "plain", -1);
    put_said(f->s, FL_STORE_CREATE, "/gone", "plain", 1);
    put_said(f->s, FL_STORE_DELETE, "/gone", "plain", 1);
    assert_int_equal(fl_store_marked_said(f->s), 0); /* as opening found them: none */
    fl_store_free(f->s);
    f->s = NULL;
    sql(f->path, "UPDATE kv SET value = CAST('tampered' AS BLOB) WHERE name = '/said'"); /* never read */
    f->s = open_marked(f, "mark");
    assert_int_equal(fl_store_marked_said(f->s), 1);
    assert_marked(f->s, MARKED("/bytes"));
    fl_store_free(f->s);
    f->s = open_marked(f, "other"); /* another mark: the words are forgotten, the values read */
    assert_int_equal(fl_store_marked_said(f->s), 0);
    assert_marked(f->s, MARKED(NULL));
}

/* A store made before rows said whether they hold the mark opens as before (its values are
 * read for it), takes new writes, and says it for those. */
static void test_a_store_without_mark_flags_opens_and_gains_them(void **state)
{
    fixture *f = *state;
    fl_store_free(f->s);
    f->s = NULL;
    unlink(f->path);
    char wal[160], shm[160];
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    snprintf(shm, sizeof shm, "%s-shm", f->path);
    unlink(wal);
    unlink(shm);
    sql(f->path, "CREATE TABLE kv (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
                 " created INTEGER NOT NULL, deleted INTEGER NOT NULL, create_revision INTEGER NOT NULL,"
                 " prev_revision INTEGER NOT NULL, value BLOB NOT NULL);"
                 "CREATE INDEX kv_name_id ON kv (name, id);"
                 "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                 "INSERT INTO kv VALUES (1, '/x', 1, 0, 1, 0, CAST('x-mark@1' AS BLOB));"
                 "INSERT INTO kv VALUES (2, '/y', 1, 0, 2, 0, CAST('plain@2' AS BLOB))");
    f->s = open_marked(f, "mark");
    assert_marked(f->s, MARKED("/x"));
    assert_value(f->s, "/x", "x-mark", 1);
    int64_t rz = put_new(f->s, "/z", "z-mark");
    assert_int_equal(rz, 3);
    fl_store_free(f->s);
    sql(f->path, "UPDATE kv SET value = CAST('tampered' AS BLOB) WHERE name = '/z'");
    f->s = open_marked(f, "mark");
    assert_marked(f->s, MARKED("/x", "/z")); /* /z by its flag, /x by its value */
}

typedef struct pinned_list {
    fl_store *s;
    int seen;
    bool ok;
} pinned_list;

/* At the first key, supersede every key and compact past the list's revision. */
static bool rewrite_all_at_first(void *ctx, const char *key, const fl_kv *kv)
{
    pinned_list *pl = ctx;
    if (pl->seen++ == 0) {
        for (int round = 0; round < 2; round++)
            for (int i = 0; i < 200; i++) {
                char k[32];
                snprintf(k, sizeof k, "/p/%03d", i);
                put_upd(pl->s, k, "new");
            }
        fl_store_compact(pl->s);
    }
    char want[64];
    snprintf(want, sizeof want, "v%s@%lld", key + 3, (long long)kv->rev);
    pl->ok = pl->ok && kv->value && !strcmp(kv->value->data, want);
    return true;
}

static void test_list_reading_values_from_the_file_pins_them_against_compaction(void **state)
{
    fixture *f = *state;
    reopen(f, 5);
    fl_store *s = f->s;
    for (int i = 0; i < 200; i++) {
        char k[32], v[32];
        snprintf(k, sizeof k, "/p/%03d", i);
        snprintf(v, sizeof v, "v%03d", i);
        put_new(s, k, v);
    }
    int64_t head = fl_store_rev(s);
    pinned_list pl = { s, 0, true };
    int64_t rev = 0;
    assert_int_equal(fl_store_list(s, "/p/", NULL, 0, 0, rewrite_all_at_first, &pl, &rev, NULL), 0);
    assert_int_equal(rev, head);
    assert_int_equal(pl.seen, 200);
    assert_true(pl.ok);
    /* the compaction stopped at the list's revision; once it is over, it goes on */
    assert_true(fl_store_compact_rev(s) <= head);
    assert_true(fl_store_compact(s) > head);
}

/* ---- concurrency ---- */












/* ---- failed commits ---- */

static void test_failed_batch_returns_eio_to_every_op_and_changes_nothing(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/k", "v1");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/", r1, &w), 0);
    /* Make SQLite reject one row, from another connection. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TRIGGER poison BEFORE INSERT ON kv WHEN NEW.name = '/poison'"
                                  " BEGIN SELECT RAISE(ABORT, 'injected'); END;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    /* The blocker keeps the writer busy so the next three ops share one batch. */
    bg_write bw[] = {
        { s, FL_STORE_UPDATE, "/k", 0, "blocker", 300 },
        { s, FL_STORE_UPDATE, "/k", 0, "in-batch" },
        { s, FL_STORE_CREATE, "/poison", 0, "p" },
        { s, FL_STORE_CREATE, "/other", 0, "o" },
    };
    for (size_t i = 0; i < 4; i++) {
        pthread_create(&bw[i].t, NULL, bg_write_main, &bw[i]);
        usleep(30000);
    }
    for (size_t i = 0; i < 4; i++)
        pthread_join(bw[i].t, NULL);
    assert_int_equal(bw[0].rc, 0);
    assert_int_equal(bw[1].rc, FL_EIO);
    assert_int_equal(bw[2].rc, FL_EIO);
    assert_int_equal(bw[3].rc, FL_EIO);
    int64_t head = bw[0].rev;
    assert_int_equal(fl_store_rev(s), head);
    assert_value(s, "/k", "blocker", head);
    fl_kv kv;
    assert_int_equal(fl_store_get(s, "/other", &kv), FL_ENOTFOUND);
    /* Watchers saw only the committed write. */
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/k", "blocker@"), head);
    expect_no_event(w);
    /* The store carries on; the next revision is the next number. */
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER poison", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(put_new(s, "/other", "o"), head + 1);
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/other", "o@"), head + 1);
    fl_watch_free(w);
    reopen(f, 0);
    assert_int_equal(fl_store_rev(f->s), head + 1);
    assert_int_equal(fl_store_get(f->s, "/poison", &kv), FL_ENOTFOUND);
}

/* ---- the watch hub on its own (small ring and backlog) ---- */

typedef struct fake_log {
    int64_t upto; /* the log holds revisions 1..upto, keys "/h/<rev % 3>" */
    int calls;
    int64_t step; /* 0 or 1: every revision; else only its multiples (an etcd store's gaps) */
} fake_log;

static fl_store_event *hub_event(int64_t rev)
{
    char key[32], val[32];
    snprintf(key, sizeof key, "/h/%lld", (long long)(rev % 3));
    snprintf(val, sizeof val, "v@%lld", (long long)rev);
    return fl_watch_event_new(FL_EV_PUT_UPDATE, key, rev, fl_blob_new(val, strlen(val)));
}

static int fake_replay(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max, fl_store_event **out,
                       size_t *n)
{
    fake_log *fl = ctx;
    fl->calls++;
    *n = 0;
    for (int64_t r = from + 1; r <= to && r <= fl->upto && *n < max; r++) {
        if (fl->step > 1 && r % fl->step)
            continue;
        fl_store_event *e = hub_event(r);
        if (strncmp(e->key, prefix, strlen(prefix)) == 0)
            out[(*n)++] = e;
        else
            fl_watch_event_unref(e);
    }
    return 0;
}

static void publish_range(fl_watch_hub *h, int64_t from, int64_t to)
{
    for (int64_t r = from; r <= to; r++) {
        fl_store_event *e = hub_event(r);
        fl_watch_hub_publish(h, &e, 1);
    }
}

static void test_watch_below_ring_reads_log_then_ring_without_gap(void **state)
{
    fake_log log = { .upto = 100 };
    fl_watch_hub *h = fl_watch_hub_new(0, 8, 0, 1000, fake_replay, &log);
    publish_range(h, 1, 100); /* the ring keeps only 93..100 */
    fl_watch *w = NULL;
    assert_int_equal(fl_watch_hub_open(h, "/h/", 10, &w), 0);
    fl_watch *w1 = NULL;
    assert_int_equal(fl_watch_hub_open(h, "/h/1", 95, &w1), 0); /* served from the ring alone */
    publish_range(h, 101, 110);
    log.upto = 110;
    fl_watch_event *ev;
    for (int64_t r = 11; r <= 110; r++) {
        assert_int_equal(fl_watch_next(w, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    assert_int_equal(fl_watch_next(w, &ev, 10), FL_ETIMEDOUT);
    assert_true(log.calls >= 1);
    int calls = log.calls;
    for (int64_t r = 97; r <= 110; r += 3) { /* keys /h/1: rev % 3 == 1 */
        assert_int_equal(fl_watch_next(w1, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    assert_int_equal(fl_watch_next(w1, &ev, 10), FL_ETIMEDOUT);
    assert_int_equal(log.calls, calls);
    assert_int_equal(fl_watch_hub_count(h), 2);
    fl_watch_free(w);
    fl_watch_free(w1);
    assert_int_equal(fl_watch_hub_count(h), 0);
    fl_watch_hub_free(h);
}

/* A byte cap on the ring: the oldest events leave it early, and a watch from below it
 * reads them from the log, still without a gap. */
static void test_ring_bytes_cap_sends_older_watches_to_the_log(void **state)
{
    fake_log log = { .upto = 100 };
    fl_watch_hub *h = fl_watch_hub_new(0, 64, 20, 1000, fake_replay, &log); /* values "v@NN": 4 bytes */
    publish_range(h, 1, 100); /* the cap keeps only 97..100 of the 64 the ring has room for */
    fl_watch *inside = NULL, *below = NULL;
    assert_int_equal(fl_watch_hub_open(h, "/h/", 96, &inside), 0);
    fl_watch_event *ev;
    for (int64_t r = 97; r <= 100; r++) {
        assert_int_equal(fl_watch_next(inside, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    assert_int_equal(log.calls, 0); /* served from the ring alone */
    assert_int_equal(fl_watch_hub_open(h, "/h/", 80, &below), 0); /* 80 is inside 64 events, not 20 bytes */
    publish_range(h, 101, 103);
    log.upto = 103;
    for (int64_t r = 81; r <= 103; r++) {
        assert_int_equal(fl_watch_next(below, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    assert_int_equal(fl_watch_next(below, &ev, 10), FL_ETIMEDOUT);
    assert_true(log.calls >= 1);
    fl_watch_free(inside);
    fl_watch_free(below);
    fl_watch_hub_free(h);
}

static void publish_every(fl_watch_hub *h, int64_t from, int64_t to, int64_t step)
{
    for (int64_t r = from; r <= to; r += step) {
        fl_store_event *e = hub_event(r);
        fl_watch_hub_publish(h, &e, 1);
    }
}

static void expect_revs(fl_watch *w, int64_t from, int64_t to, int64_t step)
{
    fl_watch_event *ev;
    for (int64_t r = from; r <= to; r += step) {
        assert_int_equal(fl_watch_next(w, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    assert_int_equal(fl_watch_next(w, &ev, 10), FL_ETIMEDOUT);
}

/* Revisions with gaps (an etcd store's: other transactions of the cluster take the ones in
 * between): the ring keeps its window of revisions with empty slots, a watch inside it is
 * served from memory alone, one below it reads the log up to the ring without a gap or a
 * duplicate, and a jump past the whole ring empties it without stepping through the gap. */
static void test_ring_keeps_revisions_with_gaps_and_watches_see_each_event_once(void **state)
{
    fake_log log = { .upto = 500, .step = 5 };
    fl_watch_hub *h = fl_watch_hub_new(0, 16, 0, 1000, fake_replay, &log);
    publish_every(h, 5, 500, 5); /* the ring spans revisions 485..500: events 485, 490, 495, 500 */
    fl_watch *inside = NULL, *below = NULL, *late = NULL;
    assert_int_equal(fl_watch_hub_open(h, "/h/", 485, &inside), 0);
    expect_revs(inside, 490, 500, 5);
    assert_int_equal(log.calls, 0); /* the ring alone */
    assert_int_equal(fl_watch_hub_open(h, "/h/", 400, &below), 0);
    publish_every(h, 505, 520, 5);
    log.upto = 520;
    expect_revs(below, 405, 520, 5);
    assert_true(log.calls >= 1);
    /* a jump of a million revisions: nothing of the old ring is kept, the new event is */
    publish_every(h, 1000520, 1000520, 1);
    assert_int_equal(fl_watch_hub_ring_bytes(h), strlen("v@1000520"));
    int calls = log.calls;
    assert_int_equal(fl_watch_hub_open(h, "/h/", 1000519, &late), 0);
    expect_revs(late, 1000520, 1000520, 1);
    assert_int_equal(log.calls, calls);
    fl_watch_event *ev;
    for (int64_t r = 505; r <= 520; r += 5) { /* queued before the jump */
        assert_int_equal(fl_watch_next(inside, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    expect_revs(inside, 1000520, 1000520, 1);
    fl_watch_free(inside);
    fl_watch_free(below);
    fl_watch_free(late);
    fl_watch_hub_free(h);
}

/* A backend that reloaded its state (an etcd replica that lagged past the cluster's
 * compaction) expires every open watch: each answers FL_EEXPIRED from then on, even with
 * events queued, and a watch opened afterwards from the new head sees only what follows. */
static void test_hub_expire_all_expires_open_watches_and_restarts_the_history(void **state)
{
    fake_log log = { .upto = 10 };
    fl_watch_hub *h = fl_watch_hub_new(0, 16, 0, 1000, fake_replay, &log);
    fl_watch *w = NULL, *after = NULL;
    assert_int_equal(fl_watch_hub_open(h, "/h/", 0, &w), 0);
    publish_range(h, 1, 10);
    fl_watch_hub_expire_all(h, 50);
    fl_watch_event *ev;
    assert_int_equal(fl_watch_next(w, &ev, 0), FL_EEXPIRED);
    assert_int_equal(fl_watch_hub_ring_bytes(h), 0);
    assert_int_equal(fl_watch_hub_open(h, "/h/", 50, &after), 0);
    publish_range(h, 51, 52);
    expect_revs(after, 51, 52, 1);
    assert_int_equal(log.calls, 0);
    fl_watch_free(w);
    fl_watch_free(after);
    fl_watch_hub_free(h);
}

static void test_watch_backlog_overflow_expires_the_watch(void **state)
{
    fake_log log = { 0 };
    fl_watch_hub *h = fl_watch_hub_new(0, 16, 0, 10, fake_replay, &log);
    fl_watch *slow = NULL, *fast = NULL;
    assert_int_equal(fl_watch_hub_open(h, "/h/", 0, &slow), 0);
    assert_int_equal(fl_watch_hub_open(h, "/h/", 0, &fast), 0);
    fl_watch_event *ev;
    for (int64_t r = 1; r <= 25; r++) {
        publish_range(h, r, r);
        assert_int_equal(fl_watch_next(fast, &ev, 0), 0); /* keeps up: never expires */
        assert_int_equal(ev->rev, r);
    }
    assert_int_equal(fl_watch_next(slow, &ev, 0), FL_EEXPIRED);
    assert_int_equal(fl_watch_next(slow, &ev, 0), FL_EEXPIRED); /* sticky */
    fl_watch_free(slow);
    fl_watch_free(fast);
    fl_watch_hub_free(h);
}

/* ---- durability ---- */



/* A memory store keeps no notes, and says so. */
static void test_memory_store_keeps_no_notes(void **state)
{
    fixture *f = *state;
    int64_t v = 1;
    assert_int_equal(fl_store_note_set(f->s, "checkpoint", 3), FL_EUNSUPPORTED);
    assert_int_equal(fl_store_note_set_text(f->s, "words", "x"), FL_EUNSUPPORTED);
    char *text = NULL;
    assert_int_equal(fl_store_note_get_text(f->s, "words", &text), FL_ENOTFOUND);
    assert_null(text);
    assert_int_equal(fl_store_note_get(f->s, "checkpoint", &v), FL_ENOTFOUND);
    assert_int_equal(v, 0);
}

/* A log large enough is loaded in two halves at once: what they load together is what one
 * load of all of it gives. The keys are written so that the latest row of some lies in each
 * half, and tombstones in both. */
static void test_reopen_in_two_halves_loads_what_one_load_does(void **state)
{
    fixture *f = *state;
    enum { N = 300 };
    char key[32], val[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "/h/%03d", i);
        put_new(f->s, key, "v0");
    }
    for (int i = 0; i < N; i += 2) { /* every other key moves to the second half */
        snprintf(key, sizeof key, "/h/%03d", i);
        snprintf(val, sizeof val, "v1-%d", i);
        put_upd(f->s, key, val);
    }
    for (int i = 0; i < N; i += 7) { /* tombstones in both halves */
        snprintf(key, sizeof key, "/h/%03d", i);
        put_del(f->s, key, "gone");
    }
    int64_t head = fl_store_rev(f->s);
    reopen(f, 0);
    collect whole;
    list_keys(f->s, "/h/", NULL, 0, 0, &whole, NULL, 0);
    size_t count = fl_store_count(f->s, "/h/");
    char revs[N][24];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "/h/%03d", i);
        fl_kv kv;
        revs[i][0] = 0;
        if (fl_store_get(f->s, key, &kv) == 0) {
            snprintf(revs[i], sizeof revs[i], "%lld/%lld", (long long)kv.rev, (long long)kv.create_rev);
            fl_blob_unref(kv.value);
        }
    }
    f->split = 10;
    reopen(f, 0);
    assert_int_equal(fl_store_rev(f->s), head);
    assert_int_equal(fl_store_count(f->s, "/h/"), count);
    assert_int_equal(count, N - (N + 6) / 7);
    collect halves;
    list_keys(f->s, "/h/", NULL, 0, 0, &halves, NULL, 0);
    assert_string_equal(halves.buf, whole.buf);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "/h/%03d", i);
        fl_kv kv;
        int rc = fl_store_get(f->s, key, &kv);
        assert_int_equal(rc, revs[i][0] ? 0 : FL_ENOTFOUND);
        if (rc == 0) {
            char r[24];
            snprintf(r, sizeof r, "%lld/%lld", (long long)kv.rev, (long long)kv.create_rev);
            assert_string_equal(r, revs[i]);
            fl_blob_unref(kv.value);
        }
    }
    assert_int_equal(put_new(f->s, "/h/new", "n"), head + 1);
}

#define CRASH_THREADS 4

typedef struct crash_arg {
    fl_store *s;
    int id;
    int fd;
} crash_arg;

static void *crash_writer(void *arg)
{
    crash_arg *a = arg;
    for (int i = 0;; i++) {
        char key[48];
        snprintf(key, sizeof key, "/crash/%d/%d", a->id, i);
        render_ctx rcx = { .text = "v" };
        fl_store_op op = { .type = FL_STORE_CREATE, .key = key, .render = render_text, .ctx = &rcx };
        if (fl_store_write(a->s, &op) != 0)
            _exit(3);
        fl_blob_unref(op.value);
        int64_t rec[2] = { op.rev, (int64_t)a->id << 32 | i };
        if (write(a->fd, rec, sizeof rec) != sizeof rec) /* atomic: < PIPE_BUF */
            _exit(4);
    }
    return NULL;
}

static void test_acknowledged_writes_survive_kill9(void **state)
{
    fixture *f = *state;
    fl_store_free(f->s);
    f->s = NULL;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        fl_store_config cfg = { .path = f->path, .compact_interval_ms = -1, .durable = true };
        fl_store *s = NULL;
        if (fl_store_open(&cfg, &s) != 0)
            _exit(2);
        crash_arg a[CRASH_THREADS];
        pthread_t t[CRASH_THREADS];
        for (int i = 0; i < CRASH_THREADS; i++) {
            a[i] = (crash_arg){ s, i, fds[1] };
            pthread_create(&t[i], NULL, crash_writer, &a[i]);
        }
        for (;;)
            pause();
    }
    close(fds[1]);
    size_t cap = 1 << 16, n = 0;
    int64_t(*recs)[2] = fl_malloc(cap * sizeof(*recs));
    bool killed = false;
    for (;;) {
        int64_t rec[2];
        ssize_t got = read(fds[0], rec, sizeof rec);
        if (got == 0)
            break;
        assert_int_equal(got, sizeof rec);
        if (n == cap) {
            cap *= 2;
            recs = fl_realloc(recs, cap * sizeof(*recs));
        }
        recs[n][0] = rec[0];
        recs[n][1] = rec[1];
        n++;
        if (n == 300 && !killed) {
            kill(pid, SIGKILL);
            killed = true;
        }
    }
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(n >= 300);

    f->s = open_store(f, 0, true);
    for (size_t i = 0; i < n; i++) {
        char key[48];
        snprintf(key, sizeof key, "/crash/%d/%d", (int)(recs[i][1] >> 32), (int)(recs[i][1] & 0xffffffff));
        assert_value(f->s, key, "v", recs[i][0]);
    }
    assert_true(fl_store_rev(f->s) >= (int64_t)n);
    free(recs);
}

/* ---- memory stores ---- */

static fl_store *open_memory(size_t ring, int64_t window)
{
    fl_store_config cfg = { .memory = true, .ring_events = ring, .compact_window = window };
    fl_store *s = NULL;
    assert_int_equal(fl_store_open(&cfg, &s), 0);
    assert_non_null(s);
    return s;
}

static void test_memory_store_needs_no_path_and_sqlite_still_does(void **state)
{
    fl_store *s = NULL;
    fl_store_config sq = { .path = NULL };
    assert_int_equal(fl_store_open(&sq, &s), FL_EINVAL);
    assert_null(s);
    assert_int_equal(fl_store_open(NULL, &s), FL_EINVAL);
    s = open_memory(0, 0);
    assert_int_equal(fl_store_rev(s), 0);
    assert_int_equal(fl_store_compact_rev(s), 0);
    assert_int_equal(fl_store_count(s, ""), 0);
    fl_store_free(s);
    fl_store_free(NULL);
}

static void test_memory_compaction_advances_with_writes_and_keeps_the_window(void **state)
{
    fl_store *s = open_memory(8, 0); /* a history of 8 revisions */
    int64_t idle = put_new(s, "/idle", "old");
    put_new(s, "/busy", "b");
    for (int i = 0; i < 5; i++)
        put_upd(s, "/busy", "b");
    assert_int_equal(fl_store_compact_rev(s), 0); /* 7 revisions: all still held */
    for (int i = 0; i < 20; i++)
        put_upd(s, "/busy", "b");
    int64_t head = fl_store_rev(s);
    assert_int_equal(head, 27);
    assert_int_equal(fl_store_compact_rev(s), head - 8);
    assert_int_equal(fl_store_compact(s), head - 8);
    /* A key last written long before the window is still there, now and at the window's edge. */
    assert_value(s, "/idle", "old", idle);
    collect c;
    list_keys(s, "/", NULL, head - 8, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/busy=b@19;/idle=old@1;");
    fl_store_free(s);

    /* compact_window narrows the ring's window; the ring caps compact_window. */
    s = open_memory(8, 3);
    for (int i = 0; i < 10; i++)
        put_new(s, i % 2 ? "/a" : "/b", "v"), put_del(s, i % 2 ? "/a" : "/b", "x");
    assert_int_equal(fl_store_compact_rev(s), fl_store_rev(s) - 3);
    fl_store_free(s);
    s = open_memory(8, 100);
    for (int i = 0; i < 20; i++)
        put_new(s, "/a", "v"), put_del(s, "/a", "x");
    assert_int_equal(fl_store_compact_rev(s), fl_store_rev(s) - 8);
    fl_store_free(s);
}

static void test_memory_history_keeps_old_values_under_ring_bytes(void **state)
{
    fl_store_config cfg = { .memory = true, .ring_bytes = 100 };
    fl_store *s = NULL;
    assert_int_equal(fl_store_open(&cfg, &s), 0);
    put_new(s, "/other", "o");
    for (int i = 0; i < 20; i++)
        put_new(s, "/k", "aaaaaaaaaaaaaaaaaaaa"), put_del(s, "/k", "bbbbbbbbbbbbbbbbbbbb");
    /* Each create keeps nothing old alive; each delete keeps the created value it
     * replaced and its own final value, 46 bytes: two deletes fit in 100 bytes. */
    int64_t head = fl_store_rev(s);
    assert_int_equal(head, 41);
    assert_int_equal(fl_store_compact_rev(s), head - 4);
    collect c;
    list_keys(s, "/", NULL, head - 4, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/other=o@1;");
    list_keys(s, "/", NULL, head - 3, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/k=aaaaaaaaaaaaaaaaaaaa@38;/other=o@1;");
    list_keys(s, "/", NULL, head - 5, 0, &c, NULL, FL_EEXPIRED);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/k", head - 5, &w), FL_EEXPIRED);
    assert_int_equal(fl_store_watch(s, "/k", head - 4, &w), 0);
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/k", "aaaa"), head - 3);
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/k", "bbbb"), head - 2);
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/k", "aaaa"), head - 1);
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/k", "bbbb"), head);
    fl_watch_free(w);
    /* Updating the one small key keeps a long history: the cap is on bytes. */
    for (int i = 0; i < 30; i++)
        put_upd(s, "/other", "o");
    assert_true(fl_store_rev(s) - fl_store_compact_rev(s) >= 20);
    fl_store_free(s);
}

static void test_memory_list_at_revision_within_history_and_expired_beyond(void **state)
{
    fl_store *s = open_memory(16, 0);
    seed_list(s); /* revisions 1..8 */
    int64_t snap = fl_store_rev(s);
    put_upd(s, "/a/1", "changed");  /* 9 */
    put_del(s, "/a/2", "gone");     /* 10 */
    put_new(s, "/a/4", "later");    /* 11 */
    put_del(s, "/a0", "gone");      /* 12 */
    put_new(s, "/a0", "reborn");    /* 13 */
    collect c;
    bool more = true;
    /* The state then, including the deleted key, without the keys created since. */
    list_keys(s, "/a", NULL, snap, 0, &c, &more, 0);
    assert_string_equal(c.buf, "/a/1=v@4;/a/2=v@6;/a/3=v@2;/a0=v@8;/ab/1=v@5;");
    assert_false(more);
    /* create_rev is the incarnation's as of then. */
    list_keys(s, "/a0", NULL, 11, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/a0=v@8;");
    list_keys(s, "/a0", NULL, 12, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "");
    list_keys(s, "/a0", NULL, 13, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/a0=reborn@13;");
    /* Mid-way: after the update and the delete, before the creates. */
    list_keys(s, "/a/", NULL, 10, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/a/1=changed@9;/a/3=v@2;");
    /* Pages of 2 from the snapshot, changed and unchanged keys interleaved. */
    list_keys(s, "/a", NULL, snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, "/a/1=v@4;/a/2=v@6;");
    assert_true(more);
    list_keys(s, "/a", "/a/2", snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, "/a/3=v@2;/a0=v@8;");
    assert_true(more);
    list_keys(s, "/a", "/a0", snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, "/ab/1=v@5;");
    assert_false(more);
    /* Exactly `limit` keys left: no more. */
    list_keys(s, "/a/", "/a/1", snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, "/a/2=v@6;/a/3=v@2;");
    assert_false(more);
    /* A callback that stops early still learns whether keys remain. */
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    int64_t rev = 0;
    assert_int_equal(fl_store_list(s, "/a/", NULL, snap, 0, collect_fn, &c, &rev, &more), 0);
    assert_int_equal(rev, snap);
    assert_int_equal(c.n, 1);
    assert_true(more);
    /* The future is refused; the past beyond the window has expired. */
    list_keys(s, "/", NULL, fl_store_rev(s) + 1, 0, &c, NULL, FL_EINVAL);
    for (int i = 0; i < 10; i++)
        put_upd(s, "/c", "more"); /* head 23, window 16: compacted at 7 */
    assert_int_equal(fl_store_compact_rev(s), 7);
    list_keys(s, "/", NULL, 6, 0, &c, NULL, FL_EEXPIRED);
    list_keys(s, "/", NULL, 1, 0, &c, NULL, FL_EEXPIRED);
    list_keys(s, "/a", NULL, 7, 0, &c, NULL, 0);
    assert_string_equal(c.buf, "/a/1=v@4;/a/2=v@6;/a/3=v@2;/ab/1=v@5;");
    fl_store_free(s);
}

static void test_memory_watch_from_revision_in_history_and_expired_below_it(void **state)
{
    fl_store *s = open_memory(8, 0);
    put_new(s, "/w/a", "a1");          /* 1 */
    put_new(s, "/x/a", "other");       /* 2 */
    int64_t r3 = put_upd(s, "/w/a", "a2");
    put_del(s, "/w/a", "a-final");     /* 4: a tombstone with the final value */
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/w/", 1, &w), 0);
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/a", "a2@"), r3);
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/w/a", "a-final@"), 4);
    expect_no_event(w);
    /* The history it was given stays valid while writes compact the store past it. */
    fl_watch *early = NULL;
    assert_int_equal(fl_store_watch(s, "/", 0, &early), 0);
    for (int i = 0; i < 20; i++)
        put_upd(s, "/x/a", "o");
    int64_t head = fl_store_rev(s);
    assert_int_equal(fl_store_compact_rev(s), head - 8);
    fl_watch_event *ev;
    for (int64_t r = 1; r <= head; r++) {
        assert_int_equal(fl_watch_next(early, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    fl_watch_free(early);
    expect_no_event(w); /* /x/ is outside /w/ */
    put_new(s, "/w/b", "live");
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/w/b", "live@"), head + 1);
    fl_watch_free(w);
    head++;

    /* From below the window: expired. From its edge: every later revision. */
    assert_int_equal(fl_store_watch(s, "/", head - 9, &w), FL_EEXPIRED);
    assert_null(w);
    assert_int_equal(fl_store_watch(s, "/", 0, &w), FL_EEXPIRED);
    assert_int_equal(fl_store_watch(s, "/", head - 8, &w), 0);
    for (int64_t r = head - 7; r <= head; r++) {
        assert_int_equal(fl_watch_next(w, &ev, 1000), 0);
        assert_int_equal(ev->rev, r);
    }
    assert_string_equal(ev->key, "/w/b");
    expect_no_event(w);
    fl_watch_free(w);
    /* From the head and from the future. */
    assert_int_equal(fl_store_watch(s, "/w/", head, &w), 0);
    expect_no_event(w);
    int64_t r = put_upd(s, "/w/b", "b2");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/b", "b2@"), r);
    fl_watch_free(w);
    assert_int_equal(fl_store_watch(s, "/w/", r + 1, &w), 0);
    put_upd(s, "/w/b", "b3");
    r = put_upd(s, "/w/b", "b4");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/b", "b4@"), r);
    fl_watch_free(w);
    assert_int_equal(fl_store_watch_count(s), 0);
    fl_store_free(s);
}

typedef struct pair_state {
    fl_store *mem, *sql;
} pair_state;

/* Apply one op to both stores; they must agree on the outcome and the revision. */
static void pair_write(pair_state *p, int type, const char *key, int64_t prev, const char *text)
{
    int64_t rm = 0, rs = 0;
    int cm = do_write(p->mem, type, key, prev, text, &rm, NULL);
    int cs = do_write(p->sql, type, key, prev, text, &rs, NULL);
    assert_int_equal(cm, cs);
    assert_int_equal(rm, rs);
}

static void test_memory_lists_and_watches_at_every_revision_match_sqlite(void **state)
{
    fixture *f = *state; /* the SQLite store */
    pair_state p = { open_memory(64, 0), f->s };
    unsigned seed = 12345;
    char key[32], text[32];
    for (int i = 0; i < 400; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (seed >> 8) % 14, what = (seed >> 16) % 10;
        snprintf(key, sizeof key, "/m/%c/%u", k < 7 ? 'a' : 'b', k % 7);
        snprintf(text, sizeof text, "t%d", i);
        fl_kv kv;
        bool live = fl_store_get(p.mem, key, &kv) == 0;
        fl_blob_unref(kv.value);
        if (!live)
            pair_write(&p, what < 8 ? FL_STORE_CREATE : FL_STORE_UPDATE, key, 0, text); /* ENOTFOUND too */
        else if (what < 6)
            pair_write(&p, FL_STORE_UPDATE, key, what == 0 ? kv.rev - 1 : kv.rev, text); /* some conflicts */
        else if (what < 9)
            pair_write(&p, FL_STORE_DELETE, key, 0, text);
        else
            pair_write(&p, FL_STORE_CREATE, key, 0, text); /* EEXIST */
    }
    int64_t head = fl_store_rev(p.mem);
    assert_int_equal(head, fl_store_rev(p.sql));
    int64_t crev = fl_store_compact_rev(p.mem);
    assert_int_equal(crev, head - 64);
    const char *prefixes[] = { "/m/", "/m/a/", "/m/b/3", "" };
    for (int64_t at = crev; at <= head; at++) {
        for (size_t pi = 0; pi < 4; pi++) {
            collect cm, cs;
            bool mm, ms;
            list_keys(p.mem, prefixes[pi], NULL, at, 0, &cm, &mm, 0);
            list_keys(p.sql, prefixes[pi], NULL, at, 0, &cs, &ms, 0);
            assert_string_equal(cm.buf, cs.buf);
            /* Page through in threes, continuing after the last key of each page. */
            char after[64] = "";
            do {
                list_keys(p.mem, prefixes[pi], after, at, 3, &cm, &mm, 0);
                list_keys(p.sql, prefixes[pi], after, at, 3, &cs, &ms, 0);
                assert_string_equal(cm.buf, cs.buf);
                assert_int_equal(mm, ms);
                char *last = strrchr(cm.buf, ';');
                if (last) {
                    *last = 0;
                    char *start = strrchr(cm.buf, ';');
                    start = start ? start + 1 : cm.buf;
                    *strchr(start, '=') = 0;
                    snprintf(after, sizeof after, "%s", start);
                }
            } while (mm);
        }
        /* Watches from here: the same events, types, keys and values. */
        fl_watch *wm = NULL, *ws = NULL;
        assert_int_equal(fl_store_watch(p.mem, "/m/a/", at, &wm), 0);
        assert_int_equal(fl_store_watch(p.sql, "/m/a/", at, &ws), 0);
        fl_watch_event *em, *es;
        for (;;) {
            int rm = fl_watch_next(wm, &em, 0);
            int rs = fl_watch_next(ws, &es, rm == 0 ? 1000 : 50);
            assert_int_equal(rm, rs);
            if (rm)
                break;
            assert_int_equal(em->rev, es->rev);
            assert_int_equal(em->type, es->type);
            assert_string_equal(em->key, es->key);
            assert_string_equal(em->value->data, es->value->data);
        }
        fl_watch_free(wm);
        fl_watch_free(ws);
    }
    collect c;
    list_keys(p.mem, "/m/", NULL, crev - 1, 0, &c, NULL, FL_EEXPIRED);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(p.mem, "/m/", crev - 1, &w), FL_EEXPIRED);
    fl_store_free(p.mem);
}

static long proc_status_field(const char *name)
{
    FILE *fp = fopen("/proc/self/status", "r");
    assert_non_null(fp);
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, name, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    }
    fclose(fp);
    return v;
}

static long resident_bytes(void)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    assert_non_null(fp);
    long size = 0, resident = 0;
    assert_int_equal(fscanf(fp, "%ld %ld", &size, &resident), 2);
    fclose(fp);
    return resident * sysconf(_SC_PAGESIZE);
}

/* Bytes in use by malloc; 0 where it cannot tell (e.g. under ASan). */
static size_t malloc_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void fill_member(fl_store *s, int i)
{
    /* Keys shaped like a member cluster's: a namespace, a node, a lease. */
    char key[96];
    snprintf(key, sizeof key, "/api/v1/namespaces/default-%d", i);
    put_new(s, key, "{\"kind\":\"Namespace\"}");
    snprintf(key, sizeof key, "/api/v1/nodes/member-%d-node-0", i);
    put_new(s, key, "{\"kind\":\"Node\"}");
    snprintf(key, sizeof key, "/coordination.k8s.io/leases/kube-node-lease/member-%d-node-0", i);
    put_new(s, key, "{\"kind\":\"Lease\"}");
}

#define MANY_STORES 10000

static void test_memory_10000_stores_with_3_keys_stay_under_200kib_each_and_close_cleanly(void **state)
{
    long threads = proc_status_field("Threads");
    long fds = proc_status_field("FDSize");
    fl_store **stores = fl_malloc(MANY_STORES * sizeof(*stores));
    /* Averaged over many stores: allocations served from chunks that earlier tests
     * freed would make a single store's figure too low. */
    size_t m0 = malloc_in_use();
    long r0 = resident_bytes();
    for (int i = 0; i < MANY_STORES; i++)
        stores[i] = open_memory(0, 0);
    size_t m1 = malloc_in_use();
    long r1 = resident_bytes();
    for (int i = 0; i < MANY_STORES; i++)
        fill_member(stores[i], i);
    size_t m2 = malloc_in_use();
    long r2 = resident_bytes();
    /* No thread and no file per store. */
    assert_int_equal(proc_status_field("Threads"), threads);
    assert_int_equal(proc_status_field("FDSize"), fds);
    long per_store = (r2 - r0) / MANY_STORES;
    print_message("memory store: sizeof(struct fl_store) (shared state) %zu B; per store over %d stores: empty RSS %ld B, "
                  "malloc'd %zu B; with 3 keys RSS %ld B, malloc'd %zu B\n",
                  sizeof(struct fl_store), MANY_STORES, (r1 - r0) / MANY_STORES,
                  m1 > m0 ? (m1 - m0) / MANY_STORES : 0, per_store, m2 > m0 ? (m2 - m0) / MANY_STORES : 0);
    assert_true(per_store <= 200 * 1024);
    if (m2 > m0) /* malloc can tell (not under ASan) */
        assert_true((m2 - m0) / MANY_STORES <= 200 * 1024);
    /* Each store still works on its own. */
    assert_value(stores[MANY_STORES - 1], "/api/v1/nodes/member-9999-node-0", "{\"kind\":\"Node\"}", 2);
    assert_int_equal(fl_store_count(stores[4242], "/api/v1/"), 2);
    for (int i = 0; i < MANY_STORES; i++)
        fl_store_free(stores[i]);
    free(stores);
}

/* ---- blobs ---- */

static void test_blob_is_nul_terminated_and_refcounted(void **state)
{
    fl_blob *b = fl_blob_new("abc", 3);
    assert_int_equal(b->len, 3);
    assert_int_equal(b->data[3], 0);
    assert_ptr_equal(fl_blob_ref(b), b);
    assert_int_equal(b->refs, 2);
    fl_blob_unref(b);
    fl_blob_unref(b);
    fl_blob_unref(NULL);
    assert_null(fl_blob_ref(NULL));
    fl_blob *e = fl_blob_new(NULL, 0);
    assert_int_equal(e->len, 0);
    assert_int_equal(e->data[0], 0);
    fl_blob_unref(e);
}

/* A backend-independent test run against a memory store. */
#define MEM(t) { "memory/" #t, t, setup_mem, teardown, NULL }
/* A SQLite test run with no value kept in memory. */
#define COLD(t) { "cold/" #t, t, setup_cold, teardown, NULL }

int main(void)
{
    fl_mem_init();
    setenv("FLOTILLA_LOG", "warn", 0);
    fl_log_enabled(FL_LOG_ERROR); /* initialise the level before threads start */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blob_is_nul_terminated_and_refcounted),
        cmocka_unit_test_setup_teardown(test_create_get_update_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rest_lets_go_of_the_values_in_memory_and_readers_see_no_difference,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rest_lets_go_of_the_values_in_memory_and_readers_see_no_difference,
                                        setup_mem, teardown),
        cmocka_unit_test_setup_teardown(test_bare_list_leaves_the_values_written_up_to_a_revision_unread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reopen_in_two_halves_loads_what_one_load_does, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_passes_null_current_to_render, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_prev_rev_is_conflict_and_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eexist_and_enotfound_consume_no_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_ops_are_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revisions_strictly_increase_and_equal_value_rev, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ops_on_one_key_in_one_batch_apply_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_orders_by_key_within_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_limit_more_and_start_after_page_through, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_at_old_revision_sees_state_then, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_from_zero_replays_all_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_from_rev_delivers_only_later_revisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_older_than_ring_replays_from_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_sees_delete_with_final_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_cancel_wakes_blocked_next_with_eclosed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_free_ends_open_watches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_expires_old_watch_and_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_keeps_latest_value_of_idle_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers_get_unique_revisions_and_watchers_see_each_once,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_cas_increments_are_never_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_opened_during_writes_has_no_gap_or_duplicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_batch_returns_eio_to_every_op_and_changes_nothing, setup,
                                        teardown),
        cmocka_unit_test(test_watch_below_ring_reads_log_then_ring_without_gap),
        cmocka_unit_test(test_ring_bytes_cap_sends_older_watches_to_the_log),
        cmocka_unit_test(test_watch_backlog_overflow_expires_the_watch),
        cmocka_unit_test(test_ring_keeps_revisions_with_gaps_and_watches_see_each_event_once),
        cmocka_unit_test(test_hub_expire_all_expires_open_watches_and_restarts_the_history),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_values_revisions_and_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notes_outlive_a_reopen_and_move_no_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_store_keeps_no_notes, setup_mem, teardown),
        cmocka_unit_test_setup_teardown(test_acknowledged_writes_survive_kill9, setup, teardown),
        /* SQLite with every value read from the file. */
        COLD(test_create_get_update_delete),
        COLD(test_ops_on_one_key_in_one_batch_apply_in_order),
        COLD(test_list_orders_by_key_within_prefix),
        COLD(test_list_limit_more_and_start_after_page_through),
        COLD(test_list_at_old_revision_sees_state_then),
        COLD(test_watch_sees_delete_with_final_value),
        COLD(test_compaction_keeps_latest_value_of_idle_keys),
        COLD(test_concurrent_cas_increments_are_never_lost),
        COLD(test_reopen_keeps_values_revisions_and_head),
        COLD(test_get_at_reads_a_revision_of_the_key_from_the_log),
        COLD(test_list_reading_values_from_the_file_pins_them_against_compaction),
        cmocka_unit_test_setup_teardown(test_get_at_reads_a_revision_of_the_key_from_the_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_opening_notes_the_keys_whose_value_holds_the_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_opening_takes_the_mark_from_rows_written_with_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_opening_counts_the_keys_their_writers_said_hold_the_mark, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_store_without_mark_flags_opens_and_gains_them, setup, teardown),
        /* Memory stores: the backend-independent tests above, then their own. */
        MEM(test_create_get_update_delete),
        MEM(test_bare_list_leaves_the_values_written_up_to_a_revision_unread),
        MEM(test_create_passes_null_current_to_render),
        MEM(test_stale_prev_rev_is_conflict_and_changes_nothing),
        MEM(test_eexist_and_enotfound_consume_no_revision),
        MEM(test_invalid_ops_are_rejected),
        MEM(test_revisions_strictly_increase_and_equal_value_rev),
        MEM(test_list_orders_by_key_within_prefix),
        MEM(test_list_limit_more_and_start_after_page_through),
        MEM(test_list_at_old_revision_sees_state_then),
        MEM(test_watch_from_zero_replays_all_history),
        MEM(test_watch_from_rev_delivers_only_later_revisions),
        MEM(test_watch_cancel_wakes_blocked_next_with_eclosed),
        MEM(test_store_free_ends_open_watches),
        MEM(test_concurrent_writers_get_unique_revisions_and_watchers_see_each_once),
        MEM(test_concurrent_cas_increments_are_never_lost),
        { "memory/test_watch_opened_during_writes_has_no_gap_or_duplicate",
          test_watch_opened_during_writes_has_no_gap_or_duplicate, setup_mem_big, teardown, NULL },
        cmocka_unit_test(test_memory_store_needs_no_path_and_sqlite_still_does),
        cmocka_unit_test(test_memory_compaction_advances_with_writes_and_keeps_the_window),
        cmocka_unit_test(test_memory_history_keeps_old_values_under_ring_bytes),
        cmocka_unit_test(test_memory_list_at_revision_within_history_and_expired_beyond),
        cmocka_unit_test(test_memory_watch_from_revision_in_history_and_expired_below_it),
        cmocka_unit_test_setup_teardown(test_memory_lists_and_watches_at_every_revision_match_sqlite, setup,
                                        teardown),
        cmocka_unit_test(test_memory_10000_stores_with_3_keys_stay_under_200kib_each_and_close_cleanly),
        cmocka_unit_test_setup_teardown(test_probe_says_wedged_while_the_writer_cannot_commit_and_recovers, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
