/* store_sqlite.h - state shared by the SQLite backend's files (internal to src/store).
 *
 * store_sqlite.c opens the store and serves reads; store_sqlite_write.c runs the
 * writer thread (group commit, compaction) and the compaction timer. Both work on
 * struct fl_store below. Nothing outside src/store includes this header. */
#ifndef FL_STORE_SQLITE_H
#define FL_STORE_SQLITE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_cache.h"
#include "store/store_watch.h"

#define POOL_MAX 4              /* idle reader connections kept */

/* One caller of fl_store_write waiting for the writer thread; lives on its stack. */
struct wreq {
    fl_store_op *op;
    int rc;
    bool done;
    pthread_cond_t cv;
    struct wreq *next;
};

struct fl_store {
    char *path;
    int64_t window;
    int interval_ms;
    bool durable;

    sqlite3 *db;               /* the writer thread's connection */
    sqlite3_stmt *ins;

    pthread_mutex_t pool_mu;
    sqlite3 *pool[POOL_MAX];
    int npool;

    pthread_rwlock_t lock;     /* guards cache and head for readers */
    fl_store_cache cache;
    int64_t head;              /* atomic; written by the writer under lock */
    int64_t compact_rev;       /* atomic */
    fl_watch_hub *hub;

    pthread_mutex_t q_mu;      /* the write queue and the compaction handshake */
    pthread_cond_t q_cv;       /* wakes the writer */
    struct wreq *q_head, *q_tail;
    bool closing;
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
};

/* sqlite3_exec that logs failures; returns 0 or FL_EIO. Any thread (own connection). */
int fl_store_sqlite_exec(sqlite3 *db, const char *sql);
/* Thread bodies; arg is the fl_store. Started by fl_store_open, joined by fl_store_free. */
void *fl_store_sqlite_writer_main(void *arg);
void *fl_store_sqlite_timer_main(void *arg);

#endif
