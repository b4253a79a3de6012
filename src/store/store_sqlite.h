/* store_sqlite.h - the SQLite backend's state, shared by its two files (internal to src/store).
 *
 * store_sqlite.c opens the store and serves reads and watches; store_sqlite_write.c runs
 * the writer thread (group commit, compaction) and the compaction timer. Both work on
 * struct fl_store_sqlite below, whose first member is the state every backend shares
 * (store_impl.h): the public functions (store.c) reach them through
 * fl_store_sqlite_backend only. Nothing outside the SQLite backend includes this header. */
#ifndef FL_STORE_SQLITE_H
#define FL_STORE_SQLITE_H

#include <pthread.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_cache.h"
#include "store/store_impl.h"
#include "store/store_watch.h"

#define POOL_MAX 4              /* idle reader connections kept */
#define POINT_MAX 16            /* idle connections kept for reads of one value */

/* A connection that reads one revision's value (fl_store_sqlite_read_rev). */
struct fl_store_point {
    sqlite3 *db;
    sqlite3_stmt *by_id;
};

/* The current values kept in memory: the keys written last, oldest first out (values are
 * the store's cache nodes'; only the writer changes them, and fl_store_rest empties them, under
 * the lock). Each record
 * counts the bytes of one write until it leaves, whether or not a later write replaced
 * that value since. */
struct fl_store_warm_rec {
    char *key;
    int64_t rev;
    size_t len;
};

struct fl_store_warm {
    struct fl_store_warm_rec *q; /* ring of cap records from head */
    size_t head, n, cap;
    size_t bytes, max;
};

/* A list of the current state delivering values it reads from the file: compaction stops
 * short of rev until it is done, so that the rows current at rev stay. On the lister's
 * stack, in s->pins under pin_mu. */
struct fl_store_pin {
    int64_t rev;
    struct fl_store_pin *next;
};

/* One caller of fl_store_write waiting for the writer thread; lives on its stack. */
struct wreq {
    fl_store_op *op;
    int rc;
    sem_t done;     /* posted by the writer, without a lock, once rc (and op) are final */
    struct wreq *next;
};

/* The SQLite backend's store: the shared state (store_impl.h), then its own. */
typedef struct fl_store_sqlite {
    fl_store base;             /* first: a fl_store * is a fl_store_sqlite * */

    char *path;
    bool size_hook;            /* flotilla_store_db_size_bytes registered (scrape_size) */
    int64_t window;
    int interval_ms;
    bool durable;

    sqlite3 *db;               /* the writer thread's connection */
    sqlite3_stmt *ins;

    pthread_mutex_t pool_mu;
    sqlite3 *pool[POOL_MAX];
    int npool;
    struct fl_store_point points[POINT_MAX]; /* under pool_mu */
    int npoints;
    sqlite3_stmt *by_id;       /* the writer's: a current value to render a write over */
    struct fl_store_warm warm; /* writer only, under base.lock */
    struct fl_store_pin *pins; /* under pool_mu */
    char *mark;                /* fl_store_config.load_mark */
    char **marked;             /* the keys noted at opening; NULL once handed over */
    long nmarked, capmarked;
    long nsaid;          /* keys whose writers said their values hold the mark (fl_store_marked_said) */

    pthread_mutex_t q_mu;      /* the write queue and the compaction handshake */
    pthread_cond_t q_cv;       /* wakes the writer */
    struct wreq *q_head, *q_tail;
    int64_t q_since_ms;        /* under q_mu: when q_head's writes began to wait (monotonic) */
    bool closing;              /* under q_mu */
    bool writer_done;
    uint64_t compact_requested, compact_done;
    pthread_cond_t compact_cv;
    pthread_t writer;
    bool writer_started;

    pthread_mutex_t timer_mu;
    pthread_cond_t timer_cv;
    bool timer_stop;
    pthread_t timer;
    bool timer_started;
} fl_store_sqlite;

/* sqlite3_exec that logs failures; returns 0 or FL_EIO. Any thread (own connection). */
int fl_store_sqlite_exec(sqlite3 *db, const char *sql);
/* The value revision rev of key wrote, read from the file into *out: 0, FL_EEXPIRED when
 * the log has no such row of key, FL_EIO. Any thread (a connection of the pool's). */
int fl_store_sqlite_read_rev(fl_store_sqlite *s, const char *key, int64_t rev, fl_blob **out);
/* With st, a statement "SELECT name, deleted, value FROM kv WHERE id = ?1" (by_id), the
 * value of row rev if it is a live value of key: 0, FL_EEXPIRED (no such row of key), or
 * FL_EIO. */
int fl_store_sqlite_read_row(sqlite3_stmt *st, const char *key, int64_t rev, fl_blob **out);
/* The lowest revision a list in progress pins (compaction stops short of it), 0 if none. */
int64_t fl_store_sqlite_pinned(fl_store_sqlite *s);

/* Drop the oldest record of the warm values (s->warm.n > 0, s->base.lock held for writing): the
 * value it kept in memory goes, unless a later write replaced it. */
void fl_store_sqlite_warm_drop(fl_store_sqlite *s);
/* Thread bodies; arg is the fl_store_sqlite. Started by fl_store_open, joined by fl_store_free. */
void *fl_store_sqlite_writer_main(void *arg);
void *fl_store_sqlite_timer_main(void *arg);

/* The backend's operations that store_sqlite_write.c implements (store_impl.h). */
int fl_store_sqlite_write(fl_store *s, fl_store_op *op);
/* fl_store_backend.queued_ms: how long the writes in the queue have waited. */
int64_t fl_store_sqlite_queued_ms(fl_store *s, int64_t now_ms);
int64_t fl_store_sqlite_compact(fl_store *s);

#endif
