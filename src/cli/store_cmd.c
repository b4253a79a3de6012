/* store_cmd.c - `flotilla ctl store`: backing up a control plane's store, and moving it to another.
 *
 *   flotilla ctl store backup --data-dir DIR OUT
 *   flotilla ctl store copy --from sqlite:DIR --to sqlite:DIR2|etcd:URL[,URL] [--etcd-prefix P]
 *                           [--etcd-cafile F] [--etcd-certfile F --etcd-keyfile F]
 *
 * Backup copies DIR's SQLite file while its server runs and writes. It is SQLite's online
 * backup API driven from a read-only connection of our own that holds one read transaction
 * from the first page to the last: in WAL mode that transaction is a snapshot, so the copy is
 * the database as of one commit, and the server's writer is never waited for (a reader in WAL
 * mode takes no lock a writer needs; it only keeps the server's checkpoints from passing the
 * snapshot, so the WAL grows while the copy runs). Copying in steps instead of in one call is
 * what gives progress; holding the transaction across the steps is what keeps them one
 * snapshot (a step opens a transaction of its own only when none is open). The server's
 * DIR/server.lock is not taken: the server keeps it. The copy goes to a temporary name beside
 * OUT, is checked (PRAGMA quick_check), switched to a rollback journal so that it is one
 * self-contained file, synced, and renamed to OUT: OUT is whole or absent.
 *
 * Copy moves every live object of a stopped server's store into another store through the
 * store interface (store/store.h), as the API would have written it: same key, same bytes but
 * metadata.resourceVersion, which becomes the destination's revision (revisions restart there).
 * UIDs, creation timestamps and everything else travel as they are; notes (the controllers'
 * reconciled revisions) do not, since they name revisions of the source, so the destination's
 * server starts with a full resync. The source's server.lock is taken as the server takes it
 * (core/file.h's fl_file_lock), so a running server, or a server started meanwhile, is refused.
 * A SQLite destination is written under a temporary name in DIR2 and renamed at the end; an
 * etcd destination cannot be written atomically, so a failure says how far it got.
 *
 * Every failure is one line on stderr, "flotilla ctl store VERB: <what>", exit 1; usage errors
 * exit 2. */
#include "cli/store_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/api_write.h"
#include "cli/cli.h"
#include "core/blob.h"
#include "core/err.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "store/store.h"

#define STORE_FILE "store.db"   /* the store in a data directory, as server_cmd.c names it */
#define LOCK_FILE "server.lock" /* held by the directory's server (server_cmd.c) */
#define BACKUP_STEP_PAGES 512   /* pages per backup step: progress, and the chance to stop */
#define COPY_PAGE 512           /* objects listed from the source at a time */
#define COPY_WRITERS 8          /* concurrent writes into the destination: the store group-commits them */
#define PROGRESS_AFTER_MS 1000  /* shorter runs print no progress */

/* ---- small things ---- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* SIGINT and SIGTERM stop a run between steps, which then cleans up what it wrote. */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const char *verb, const char *fmt, ...)
{
    fprintf(stderr, "flotilla ctl store %s: ", verb);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "flotilla ctl store: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'flotilla ctl store --help')\n");
    return 2;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage:\n"
               "  flotilla ctl store backup --data-dir DIR OUT\n"
               "      copy DIR's store to the new file OUT, consistently, while its server runs\n"
               "  flotilla ctl store copy --from sqlite:DIR --to sqlite:DIR2|etcd:URL[,URL] [--etcd-prefix P]\n"
               "                          [--etcd-cafile F] [--etcd-certfile F --etcd-keyfile F]\n"
               "      copy every object of a stopped server's store into an empty store, keeping UIDs and\n"
               "      creation timestamps (resourceVersions restart at the destination)\n"
               "\n"
               "Restore a backup: stop the server, remove DIR/store.db, DIR/store.db-wal and DIR/store.db-shm,\n"
               "copy the backup to DIR/store.db with mode 0600, start the server (docs/store.md).\n");
}

/* Progress of a long run on stderr, as kubectl shows it: one line redrawn on a terminal, a line
 * every few seconds elsewhere; nothing for a run shorter than PROGRESS_AFTER_MS. */
typedef struct progress {
    const char *what, *unit;
    bool tty, shown;
    int64_t start_ms, last_ms;
} progress;

static void progress_init(progress *p, const char *what, const char *unit)
{
    *p = (progress){.what = what, .unit = unit, .tty = isatty(STDERR_FILENO), .start_ms = now_ms()};
}

static void progress_show(progress *p, int64_t done, int64_t total)
{
    int64_t now = now_ms();
    if (now - p->start_ms < PROGRESS_AFTER_MS || now - p->last_ms < (p->tty ? 100 : 5000))
        return;
    p->last_ms = now;
    int pct = total > 0 ? (int)(done * 100 / total) : 100;
    fprintf(stderr, p->tty ? "\r%s: %lld/%lld %s (%d%%)\033[K" : "%s: %lld/%lld %s (%d%%)\n", p->what,
            (long long)done, (long long)total, p->unit, pct);
    p->shown = true;
}

static void progress_end(progress *p)
{
    if (p->shown && p->tty)
        fputc('\n', stderr);
}

/* The store says why it could not open (a file that is not a database, an etcd cluster that
 * does not answer) in log lines on stderr, in the server's format; a command says one line.
 * So what is logged while a store opens is caught in a temporary file, and the last line's
 * message joins the command's line. Main thread, around fl_store_open only: the progress
 * lines also go to stderr. */
typedef struct log_catch {
    FILE *tmp;
    int saved; /* the real stderr, -1 when nothing is caught */
} log_catch;

static void log_catch_begin(log_catch *c)
{
    fflush(stderr);
    c->tmp = tmpfile();
    c->saved = c->tmp ? dup(STDERR_FILENO) : -1;
    if (c->saved >= 0 && dup2(fileno(c->tmp), STDERR_FILENO) < 0) {
        close(c->saved);
        c->saved = -1;
    }
}

/* Put stderr back; the message of the last line caught (a heap string, "" when none). */
static char *log_catch_end(log_catch *c)
{
    fflush(stderr);
    char line[1024], last[1024] = "";
    if (c->saved >= 0) {
        dup2(c->saved, STDERR_FILENO);
        close(c->saved);
        rewind(c->tmp);
        while (fgets(line, sizeof line, c->tmp))
            if (line[0] != '\n')
                memcpy(last, line, sizeof last);
    }
    if (c->tmp)
        fclose(c->tmp);
    last[strcspn(last, "\n")] = 0;
    const char *msg = strstr(last, " store: "); /* "E 14:18:40.976 store: what" */
    return fl_strdup(msg ? msg + 8 : last);
}

/* fl_store_open, its log lines caught: 0, or 1 after printing "<what>: <why> (<log>)". */
static int store_open_quiet(const fl_store_config *cfg, fl_store **out, const char *what)
{
    log_catch c;
    log_catch_begin(&c);
    int orc = fl_store_open(cfg, out);
    char *logged = log_catch_end(&c);
    if (orc)
        fail("copy", *logged ? "%s: %s (%s)" : "%s: %s%s", what, fl_strerror(orc), logged);
    free(logged);
    return orc ? 1 : 0;
}

/* fsync path (a file, or a directory after a rename in it): 0 or -1 with errno. */
static int sync_path(const char *path, bool dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The directory part of path ("." when it has none), a new string. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return fl_strdup(".");
    if (slash == path)
        return fl_strdup("/");
    return fl_strndup(path, (size_t)(slash - path));
}

/* Remove a SQLite file and its side files, quietly: what a failed run wrote. */
static void remove_db(const char *path)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof side / sizeof *side; i++) {
        char *p = fl_asprintf("%s%s", path, side[i]);
        unlink(p);
        free(p);
    }
}

/* Make an empty file path, 0600, that must not exist yet: SQLite then opens it as an empty
 * database and its side files inherit the mode. 0, or -1 with errno. */
static int create_private(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* One integer from sql on db: 0, or -1 (the message is sqlite3_errmsg(db)). */
static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    *out = 0;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The head revision, as the store computes it when it opens (store_sqlite.c, load). */
#define SQL_HEAD                                                                                                   \
    "SELECT max((SELECT coalesce(max(id), 0) FROM kv),"                                                            \
    " (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'kv'),"                                      \
    " (SELECT coalesce(max(value), 0) FROM meta WHERE name = 'compact_rev'))"
/* The live keys: each one's last row, when that row is not a tombstone. */
#define SQL_LIVE "SELECT count(*) FROM kv AS k WHERE k.deleted = 0 AND k.id = (SELECT max(id) FROM kv WHERE name = k.name)"

/* ---- backup ---- */

typedef struct backup_opts {
    const char *data_dir, *out;
} backup_opts;

/* A whole number from the environment, or def: for tests that need a backup long enough to
 * race with writes (a store of a few MiB copies in milliseconds). */
static long env_long(const char *name, long def, long max)
{
    const char *v = getenv(name);
    char *end = NULL;
    long n = v && *v ? strtol(v, &end, 10) : def;
    return end && *end ? def : n < 0 ? def : n > max ? max : n;
}

/* Copy src (a read transaction already open on it) into dst page by page, with progress.
 * FLOTILLA_BACKUP_STEP_PAGES and FLOTILLA_BACKUP_STEP_SLEEP_MS pace it, for tests.
 * 0, or 1 after printing why. */
static int backup_pages(sqlite3 *src, sqlite3 *dst, const char *dir)
{
    int step_pages = (int)env_long("FLOTILLA_BACKUP_STEP_PAGES", BACKUP_STEP_PAGES, INT_MAX);
    long sleep_ms = env_long("FLOTILLA_BACKUP_STEP_SLEEP_MS", 0, 1000);
    if (step_pages == 0)
        step_pages = BACKUP_STEP_PAGES;
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b)
        return fail("backup", "cannot start copying %s/" STORE_FILE ": %s", dir, sqlite3_errmsg(dst));
    progress pr;
    progress_init(&pr, "backing up", "pages");
    int rc, busy = 0;
    do {
        rc = sqlite3_backup_step(b, step_pages);
        if (sleep_ms && rc == SQLITE_OK)
            usleep((useconds_t)sleep_ms * 1000);
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) { /* the destination is ours alone: rare, bounded */
            if (++busy > 200)
                break;
            usleep(50000);
        }
        progress_show(&pr, sqlite3_backup_pagecount(b) - sqlite3_backup_remaining(b), sqlite3_backup_pagecount(b));
    } while ((rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && !interrupted);
    progress_end(&pr);
    sqlite3_backup_finish(b);
    if (interrupted)
        return fail("backup", "interrupted; nothing was written");
    if (rc != SQLITE_DONE)
        return fail("backup", "copying %s/" STORE_FILE " failed: %s", dir, sqlite3_errstr(rc));
    return 0;
}

/* Check the copy at tmp, count what it holds and make it one file with a rollback journal.
 * 0, or 1 after printing why. */
static int backup_finish_copy(sqlite3 *dst, const char *tmp, int64_t *objects, int64_t *rev)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(dst, "PRAGMA quick_check", -1, &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    if (!ok)
        return fail("backup", "the copy at %s does not check out (%s); nothing was written", tmp,
                    sqlite3_errmsg(dst));
    if (query_int(dst, SQL_LIVE, objects) || query_int(dst, SQL_HEAD, rev))
        return fail("backup", "reading the copy at %s: %s", tmp, sqlite3_errmsg(dst));
    /* The pages came from a database in WAL mode and say so; a backup is easier to handle
     * as one self-contained file. The server puts it back in WAL mode when it opens it. */
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK)
        return fail("backup", "finishing the copy at %s: %s", tmp, sqlite3_errmsg(dst));
    return 0;
}

/* The backup proper, once the arguments are checked: 0, or 1 after printing why. */
static int backup_run(const backup_opts *o, const char *src_path, const char *tmp)
{
    sqlite3 *src = NULL, *dst = NULL;
    int rc = 1;
    int64_t objects = 0, rev = 0, snapshot_rev = 0;
    if (sqlite3_open_v2(src_path, &src, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        fail("backup", "cannot open %s: %s", src_path, src ? sqlite3_errmsg(src) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(src, 10000);
    /* One read transaction from here to the last page: the snapshot the copy is of. */
    if (sqlite3_exec(src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK || query_int(src, SQL_HEAD, &snapshot_rev)) {
        fail("backup", "%s is not a flotilla store: %s", src_path, sqlite3_errmsg(src));
        goto out;
    }
    if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(dst, "PRAGMA synchronous=OFF", NULL, NULL, NULL) != SQLITE_OK) {
        fail("backup", "cannot write %s: %s", tmp, dst ? sqlite3_errmsg(dst) : "out of memory");
        goto out;
    }
    if (backup_pages(src, dst, o->data_dir))
        goto out;
    sqlite3_exec(src, "COMMIT", NULL, NULL, NULL); /* let the server's checkpoints go on */
    sqlite3_close(src);
    src = NULL;
    if (backup_finish_copy(dst, tmp, &objects, &rev))
        goto out;
    if (rev != snapshot_rev) { /* cannot happen: the copy is of the snapshot the head was read in */
        fail("backup", "the copy is at revision %lld, not %lld as read; nothing was written", (long long)rev,
             (long long)snapshot_rev);
        goto out;
    }
    if (sqlite3_close(dst) != SQLITE_OK) {
        fail("backup", "closing %s: %s", tmp, sqlite3_errmsg(dst));
        goto out;
    }
    dst = NULL;
    /* link, not rename: an OUT that appeared while the copy ran is not overwritten either */
    struct stat st;
    char *dir = dir_of(o->out);
    int e = 0;
    if (sync_path(tmp, false) != 0 || stat(tmp, &st) != 0 || link(tmp, o->out) != 0)
        e = errno;
    else
        sync_path(dir, true);
    free(dir);
    if (e) {
        fail("backup", e == EEXIST ? "%s already exists (it appeared while the backup ran): %s; nothing was written"
                                   : "cannot write %s: %s", o->out, strerror(e));
        goto out;
    }
    unlink(tmp);
    printf("backed up %s: %lld objects at revision %lld, %lld bytes, to %s\n", o->data_dir, (long long)objects,
           (long long)rev, (long long)st.st_size, o->out);
    rc = 0;
out:
    if (src)
        sqlite3_close(src); /* ends the read transaction */
    if (dst)
        sqlite3_close(dst);
    return rc;
}

static int cmd_backup(const backup_opts *o)
{
    struct stat st;
    char *src_path = fl_asprintf("%s/" STORE_FILE, o->data_dir);
    char *tmp = NULL;
    int rc = 1;
    if (stat(o->data_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fail("backup", "no data directory %s: %s", o->data_dir, errno ? strerror(errno) : "not a directory");
        goto out;
    }
    if (stat(src_path, &st) != 0) {
        fail("backup", "no store in %s (%s: %s)", o->data_dir, src_path, strerror(errno));
        goto out;
    }
    if (lstat(o->out, &st) == 0) {
        fail("backup", "%s already exists; a backup never overwrites: name a new file", o->out);
        goto out;
    }
    tmp = fl_asprintf("%s.tmp-%ld", o->out, (long)getpid());
    if (create_private(tmp) != 0) {
        fail("backup", "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        tmp = NULL;
        goto out;
    }
    catch_signals();
    rc = backup_run(o, src_path, tmp);
out:
    if (rc && tmp)
        remove_db(tmp);
    free(tmp);
    free(src_path);
    return rc;
}

/* ---- copy ---- */

typedef struct copy_opts {
    const char *from, *to, *etcd_prefix, *etcd_cafile, *etcd_certfile, *etcd_keyfile;
} copy_opts;

/* One object on its way: its key, and its text with metadata.resourceVersion "" whose
 * opening quote is at pre_at, for the revision to go in (as api_write.c's render_pre). */
typedef struct copy_item {
    char *key;
    char *pre;
    size_t pre_len, pre_at;
    signed char mark;
} copy_item;

/* A page of objects listed from the source, written by COPY_WRITERS threads. */
typedef struct copy_page {
    copy_item items[COPY_PAGE];
    size_t n;
    char *bad; /* listing: why an object cannot be copied (heap), stops the copy */
    fl_store *dst;
    atomic_size_t next;
    atomic_llong written;
    pthread_mutex_t mu;
    int err;        /* the first failed write's code, under mu */
    char *err_key;  /* and its key */
} copy_page;

static fl_blob *render_item(void *ctx, const fl_blob *cur, int64_t rev)
{
    (void)cur;
    const copy_item *it = ctx;
    char rv[32];
    int n = snprintf(rv, sizeof rv, "%lld", (long long)rev);
    fl_blob *b = fl_blob_alloc(it->pre_len + (size_t)n);
    size_t head = it->pre_at + 1; /* through the opening quote */
    memcpy(b->data, it->pre, head);
    memcpy(b->data + head, rv, (size_t)n);
    memcpy(b->data + head + (size_t)n, it->pre + head, it->pre_len - head);
    return b;
}

/* fl_store_list's callback: the object at key made ready to write. */
static bool collect(void *ctx, const char *key, const fl_kv *kv)
{
    copy_page *pg = ctx;
    json_t *obj = kv->value ? fl_json_load(kv->value->data, kv->value->len) : NULL;
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        pg->bad = fl_asprintf("the object at %s (revision %lld) is not a JSON object with metadata", key,
                              (long long)kv->rev);
        json_decref(obj);
        return false;
    }
    json_t *placeholder = json_string("");
    json_object_set_new(meta, "resourceVersion", placeholder);
    copy_item *it = &pg->items[pg->n++];
    it->key = fl_strdup(key);
    it->pre = fl_json_dumps_mark(obj, placeholder, &it->pre_len, &it->pre_at);
    it->mark = fl_api_has_owner_refs(obj) ? 1 : -1; /* FL_API_LOAD_MARK, as the API says it */
    json_decref(obj);
    return true;
}

static void page_clear(copy_page *pg)
{
    for (size_t i = 0; i < pg->n; i++) {
        free(pg->items[i].key);
        free(pg->items[i].pre);
    }
    pg->n = 0;
    atomic_store(&pg->next, 0);
}

static void *copy_writer(void *arg)
{
    copy_page *pg = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&pg->next, 1);
        if (i >= pg->n || interrupted)
            break;
        pthread_mutex_lock(&pg->mu);
        bool stop = pg->err != 0;
        pthread_mutex_unlock(&pg->mu);
        if (stop)
            break;
        copy_item *it = &pg->items[i];
        fl_store_op op = {.type = FL_STORE_CREATE, .key = it->key, .render_blob = render_item, .ctx = it,
                          .no_current = true, .mark = it->mark};
        int rc = fl_store_write(pg->dst, &op);
        if (rc) {
            pthread_mutex_lock(&pg->mu);
            if (!pg->err) {
                pg->err = rc;
                pg->err_key = fl_strdup(it->key);
            }
            pthread_mutex_unlock(&pg->mu);
            break;
        }
        fl_blob_unref(op.value);
        atomic_fetch_add(&pg->written, 1);
    }
    return NULL;
}

/* Write the page's objects into pg->dst: 0, or 1 after printing why. */
static int page_write(copy_page *pg, const char *to)
{
    pthread_t th[COPY_WRITERS];
    int started = 0;
    for (; started < COPY_WRITERS && (size_t)started < pg->n; started++)
        if (pthread_create(&th[started], NULL, copy_writer, pg) != 0)
            break;
    if (started == 0)
        copy_writer(pg);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (pg->err)
        return fail("copy", "writing %s into %s: %s", pg->err_key, to, fl_strerror(pg->err));
    return 0;
}

/* Every live object of src into dst, in pages: 0, or 1 after printing why. *copied counts
 * the objects written, on every path. */
static int copy_objects(fl_store *src, fl_store *dst, const char *to, long long *copied)
{
    copy_page *pg = fl_calloc(1, sizeof *pg);
    pg->dst = dst;
    pthread_mutex_init(&pg->mu, NULL);
    int64_t total = (int64_t)fl_store_count(src, "");
    char *after = NULL;
    progress pr;
    progress_init(&pr, "copying", "objects");
    int rc = 0;
    for (bool more = true; more && !rc;) {
        int64_t rev = 0;
        int lrc = fl_store_list(src, "", after, 0, COPY_PAGE, collect, pg, &rev, &more);
        if (pg->bad)
            rc = fail("copy", "%s; nothing more was copied", pg->bad);
        else if (lrc)
            rc = fail("copy", "listing the source: %s", fl_strerror(lrc));
        else if (pg->n > 0) {
            free(after);
            after = fl_strdup(pg->items[pg->n - 1].key);
            rc = page_write(pg, to);
        }
        page_clear(pg);
        if (!rc && interrupted)
            rc = fail("copy", "interrupted");
        progress_show(&pr, atomic_load(&pg->written), total);
    }
    progress_end(&pr);
    *copied = atomic_load(&pg->written);
    free(after);
    free(pg->bad);
    free(pg->err_key);
    pthread_mutex_destroy(&pg->mu);
    free(pg);
    return rc;
}

/* A data directory's lock, taken as the server takes it: 0, or 1 after printing why. */
static int lock_dir(const char *dir, const char *role, int *fd)
{
    char *lock = fl_asprintf("%s/" LOCK_FILE, dir);
    long holder = 0;
    int rc = fl_file_lock(lock, fd, &holder);
    if (rc == FL_EEXIST)
        fail("copy", "the %s %s is in use by a flotilla server (pid %ld); stop it first", role, dir, holder);
    else if (rc)
        fail("copy", "cannot lock %s: %s", lock, strerror(errno));
    free(lock);
    return rc ? 1 : 0;
}

/* A store to copy into. */
typedef struct dest {
    const copy_opts *o;
    const char *spec;  /* as given: "sqlite:DIR" or "etcd:URLS" */
    const char *dir;   /* sqlite: the data directory */
    char *final, *tmp; /* sqlite: DIR/store.db and the name it is written under */
    int lock_fd;
    fl_store *store;
} dest;

/* Open the source: sqlite:DIR of a stopped server, its lock taken. 0, or 1 after printing why. */
static int source_open(const char *spec, int *lock_fd, fl_store **out, const char **dir_out)
{
    *out = NULL;
    if (strncmp(spec, "sqlite:", 7) || !spec[7])
        return fail("copy", "--from %s: expected sqlite:DIR, the data directory of a stopped server", spec);
    const char *dir = spec + 7;
    *dir_out = dir;
    char *path = fl_asprintf("%s/" STORE_FILE, dir);
    struct stat st;
    int rc = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = fail("copy", "--from: no data directory %s", dir);
    else if (stat(path, &st) != 0)
        rc = fail("copy", "--from: no store in %s (%s: %s)", dir, path, strerror(errno));
    else if (lock_dir(dir, "source", lock_fd))
        rc = 1;
    if (!rc) {
        /* no load mark: opening writes nothing to the source */
        fl_store_config cfg = {.path = path, .compact_interval_ms = -1};
        char *what = fl_asprintf("--from: cannot open the store in %s", dir);
        rc = store_open_quiet(&cfg, out, what);
        free(what);
    }
    free(path);
    return rc;
}

/* Open an etcd destination, refusing a prefix that holds objects. 0, or 1 after printing why. */
static int dest_open_etcd(dest *d)
{
    const copy_opts *o = d->o;
    const char *urls = d->spec + 5;
    if (!*urls)
        return fail("copy", "--to %s: expected etcd:URL[,URL], the etcd cluster's client URLs", d->spec);
    fl_store_config cfg = {.etcd_servers = urls,
                           .etcd_cafile = o->etcd_cafile,
                           .etcd_certfile = o->etcd_certfile,
                           .etcd_keyfile = o->etcd_keyfile,
                           .etcd_prefix = o->etcd_prefix,
                           .compact_interval_ms = -1,
                           .load_mark = FL_API_LOAD_MARK};
    char *what = fl_asprintf("--to: cannot open the store on etcd %s", urls);
    int rc = store_open_quiet(&cfg, &d->store, what);
    free(what);
    if (rc)
        return 1;
    size_t n = fl_store_count(d->store, "");
    if (n)
        return fail("copy", "--to: etcd %s already holds %zu objects under the prefix %s; copy into an empty "
                            "prefix (--etcd-prefix)", urls, n, o->etcd_prefix ? o->etcd_prefix : "/registry");
    return 0;
}

/* Open the destination, refusing one that holds objects. 0, or 1 after printing why. */
static int dest_open(dest *d, const char *src_dir)
{
    if (!strncmp(d->spec, "etcd:", 5))
        return dest_open_etcd(d);
    if (!d->spec[7])
        return fail("copy", "--to %s: expected sqlite:DIR or etcd:URL[,URL]", d->spec);
    d->dir = d->spec + 7;
    if (mkdir(d->dir, 0700) != 0 && errno != EEXIST)
        return fail("copy", "--to: cannot create %s: %s", d->dir, strerror(errno));
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(d->dir, a) && realpath(src_dir, b) && !strcmp(a, b))
        return fail("copy", "--from and --to name the same data directory %s", d->dir);
    if (lock_dir(d->dir, "destination", &d->lock_fd))
        return 1;
    d->final = fl_asprintf("%s/" STORE_FILE, d->dir);
    struct stat st;
    if (stat(d->final, &st) == 0) { /* an existing store: empty is fine, it is replaced */
        fl_store *had = NULL;
        fl_store_config cfg = {.path = d->final, .compact_interval_ms = -1};
        char *what = fl_asprintf("--to: cannot open the store in %s", d->dir);
        int orc = store_open_quiet(&cfg, &had, what);
        free(what);
        size_t n = orc ? 0 : fl_store_count(had, "");
        fl_store_free(had);
        if (orc)
            return 1;
        if (n)
            return fail("copy", "--to: %s already holds a store with %zu objects; copy into an empty data "
                                "directory", d->dir, n);
    }
    d->tmp = fl_asprintf("%s/" STORE_FILE ".copy-%ld", d->dir, (long)getpid());
    if (create_private(d->tmp) != 0) {
        int e = errno;
        free(d->tmp);
        d->tmp = NULL;
        return fail("copy", "--to: cannot create %s: %s", d->dir, strerror(e));
    }
    fl_store_config cfg = {.path = d->tmp, .compact_interval_ms = -1, .load_mark = FL_API_LOAD_MARK};
    char *what = fl_asprintf("--to: cannot open a store in %s", d->dir);
    int rc = store_open_quiet(&cfg, &d->store, what);
    free(what);
    return rc;
}

/* Close the destination: a SQLite one becomes DIR2/store.db (one file, synced) when ok.
 * 0, or 1 after printing why. */
static int dest_close(dest *d, bool ok)
{
    fl_store_free(d->store); /* its last connection: the WAL is checkpointed into the file */
    d->store = NULL;
    int rc = 0;
    if (d->tmp && ok) {
        sqlite3 *db = NULL;
        int e = 0;
        if (sqlite3_open_v2(d->tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
            sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK)
            rc = fail("copy", "finishing %s: %s", d->tmp, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        if (!rc) {
            /* an empty store's side files must not meet the new one */
            char *wal = fl_asprintf("%s-wal", d->final), *shm = fl_asprintf("%s-shm", d->final);
            unlink(wal);
            unlink(shm);
            free(wal);
            free(shm);
            if (sync_path(d->tmp, false) != 0 || rename(d->tmp, d->final) != 0)
                e = errno;
            else
                sync_path(d->dir, true);
            if (e)
                rc = fail("copy", "cannot write %s: %s", d->final, strerror(e));
        }
    }
    if (d->tmp && (!ok || rc))
        remove_db(d->tmp);
    free(d->tmp);
    free(d->final);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    d->lock_fd = -1;
    return rc;
}

static int cmd_copy(const copy_opts *o)
{
    int src_lock = -1;
    fl_store *src = NULL;
    const char *src_dir = NULL;
    dest d = {.o = o, .spec = o->to, .lock_fd = -1};
    long long copied = 0;
    if (strncmp(o->to, "sqlite:", 7) && strncmp(o->to, "etcd:", 5))
        return fail("copy", "--to %s: expected sqlite:DIR or etcd:URL[,URL]", o->to);
    int rc = source_open(o->from, &src_lock, &src, &src_dir);
    if (!rc) {
        catch_signals();
        rc = dest_open(&d, src_dir);
    }
    if (!rc)
        rc = copy_objects(src, d.store, o->to, &copied);
    int64_t rev = d.store ? fl_store_rev(d.store) : 0;
    size_t had = src ? fl_store_count(src, "") : 0;
    if (d.store || d.lock_fd >= 0 || d.tmp) {
        int crc = dest_close(&d, rc == 0);
        if (rc && copied && !d.dir)
            fprintf(stderr, "flotilla ctl store copy: %lld objects were written to %s before it stopped\n", copied,
                    o->to);
        rc = rc ? rc : crc;
    }
    fl_store_free(src);
    if (src_lock >= 0)
        close(src_lock);
    if (!rc)
        printf("copied %lld of %zu objects from %s to %s (revisions restart: the destination is at %lld)\n", copied,
               had, o->from, o->to, (long long)rev);
    return rc;
}

/* ---- the command ---- */

typedef struct store_opts {
    const char *data_dir, *from, *to, *etcd_prefix, *etcd_cafile, *etcd_certfile, *etcd_keyfile;
} store_opts;

int fl_ctl_store(int argc, char **argv)
{
    static const fl_cli_flag flags[] = {
        {"data-dir", NULL, offsetof(store_opts, data_dir)},
        {"from", NULL, offsetof(store_opts, from)},
        {"to", NULL, offsetof(store_opts, to)},
        {"etcd-prefix", NULL, offsetof(store_opts, etcd_prefix)},
        {"etcd-cafile", NULL, offsetof(store_opts, etcd_cafile)},
        {"etcd-certfile", NULL, offsetof(store_opts, etcd_certfile)},
        {"etcd-keyfile", NULL, offsetof(store_opts, etcd_keyfile)},
    };
    /* the stores' opening lines are the server's business; say only what goes wrong */
    if (!getenv("FLOTILLA_LOG")) {
        setenv("FLOTILLA_LOG", "warn", 1);
        fl_log_init();
    }
    store_opts o = {0};
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, &o);
            if (why)
                return usage_error(why, a);
            continue;
        }
        if (npos == 3)
            return usage_error("unexpected argument \"%s\"", a);
        pos[npos++] = a;
    }
    if (npos == 0)
        return usage_error("%s", "a command is required (backup or copy)");
    bool etcd_flags = o.etcd_prefix || o.etcd_cafile || o.etcd_certfile || o.etcd_keyfile;
    if (!strcmp(pos[0], "backup")) {
        if (o.from || o.to || etcd_flags)
            return usage_error("%s", "backup takes --data-dir DIR and OUT only");
        if (!o.data_dir)
            return usage_error("%s", "backup needs --data-dir DIR (the server's data directory)");
        if (npos != 2)
            return usage_error(npos < 2 ? "%s" : "unexpected argument \"%s\"",
                               npos < 2 ? "backup needs OUT, the new file to write" : pos[2]);
        backup_opts b = {.data_dir = o.data_dir, .out = pos[1]};
        return cmd_backup(&b);
    }
    if (!strcmp(pos[0], "copy")) {
        if (npos > 1)
            return usage_error("unexpected argument \"%s\"", pos[1]);
        if (o.data_dir)
            return usage_error("%s", "copy takes --from sqlite:DIR, not --data-dir");
        if (!o.from || !o.to)
            return usage_error("%s", "copy needs --from sqlite:DIR and --to sqlite:DIR2|etcd:URL[,URL]");
        if (etcd_flags && strncmp(o.to, "etcd:", 5))
            return usage_error("%s", "the --etcd-* flags go with --to etcd:URL[,URL]");
        const char *problem = fl_store_etcd_config_problem(&(fl_store_config){
            .etcd_prefix = o.etcd_prefix, .etcd_certfile = o.etcd_certfile, .etcd_keyfile = o.etcd_keyfile});
        if (problem)
            return usage_error("%s", problem);
        copy_opts c = {.from = o.from, .to = o.to, .etcd_prefix = o.etcd_prefix, .etcd_cafile = o.etcd_cafile,
                       .etcd_certfile = o.etcd_certfile, .etcd_keyfile = o.etcd_keyfile};
        return cmd_copy(&c);
    }
    return usage_error("unknown command \"%s\" (backup or copy)", pos[0]);
}
