/* http_loop.h - the HTTP transport's threads beside libmicrohttpd's (internal to http.c).
 *
 * libmicrohttpd's few event-loop threads only move bytes; whatever could wait moves off them,
 * so that the number of threads does not grow with the number of connections:
 *  - a request's handling runs as a job on a small pool of workers (fl_http_loop_submit)
 *    while its connection is suspended; the job resumes the connection when done;
 *  - a job that must wait (a simulated partition, an injected delay) is parked with a wake-up
 *    time on the sweeper (fl_http_loop_defer) and holds no thread meanwhile;
 *  - a watch with nothing to send suspends its connection (fl_http_park_suspend); the store's
 *    notification, the sweeper at the stream's next wake-up time, a hang-up of the peer (seen
 *    by the sweeper's epoll set, which MHD's does not watch while the connection is
 *    suspended) or shutdown resumes it (fl_http_park_wake).
 * The sweeper also enforces each connection's deadline (request header and body timeouts, the
 * idle keep-alive timeout) by shutting its socket down, which MHD then sees and closes.
 *
 * Locks: the connection list's, then MHD's own (MHD_resume_connection). MHD calls none of
 * our callbacks while holding its lock. */
#ifndef FL_HTTP_LOOP_H
#define FL_HTTP_LOOP_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fl_http_loop fl_http_loop;
typedef struct fl_http_park fl_http_park;

/* One per connection (MHD's socket context), from MHD_CONNECTION_NOTIFY_STARTED to CLOSED. */
typedef struct fl_http_conn {
    struct fl_http_conn *prev, *next;  /* the loop's list, under its lock */
    struct MHD_Connection *c;
    int fd;
    uint64_t id;                       /* names it in the sweeper's epoll set (fds are reused) */
    _Atomic int64_t deadline_ms;       /* the socket is shut down past it; 0 = none */
    fl_http_park *park;                /* the watch streaming on it, or NULL (under the lock) */
} fl_http_conn;

/* A watch's connection that parks while it has nothing to send. */
struct fl_http_park {
    fl_http_conn *conn;
    atomic_int state;                  /* running, parked (suspended), or woken while running */
    atomic_bool hung_up;               /* the peer went away while parked */
    _Atomic int64_t wake_ms;           /* when the sweeper wakes it; 0 = never */
};

/* A request's handling. run is called on a worker; it either finishes (and resumes its
 * connection) or hands the job back with fl_http_loop_defer. */
typedef struct fl_http_job {
    struct fl_http_job *next;
    int64_t wake_ms;
    void (*run)(struct fl_http_job *job);
} fl_http_job;

/* CLOCK_MONOTONIC in milliseconds. */
int64_t fl_http_now_ms(void);

/* Start the sweeper and min_workers workers (more start while jobs wait, up to max_workers;
 * those above min_workers end after a few idle seconds). *out set on every path; 0 or -1
 * with *err (heap). */
int fl_http_loop_new(int min_workers, int max_workers, fl_http_loop **out, char **err);
/* Stop the threads (after MHD_stop_daemon: no job or park may be left). NULL-safe. */
void fl_http_loop_free(fl_http_loop *l);

/* A connection began (MHD thread): registered with its first deadline (0 = none). Owned by
 * the loop until fl_http_conn_close. */
fl_http_conn *fl_http_conn_open(fl_http_loop *l, struct MHD_Connection *c, int fd, int64_t deadline_ms);
/* It closed (MHD thread): unregistered and freed. NULL-safe. */
void fl_http_conn_close(fl_http_loop *l, fl_http_conn *conn);
/* Set its deadline (0 = none). Any thread. */
void fl_http_conn_deadline(fl_http_loop *l, fl_http_conn *conn, int64_t deadline_ms);

/* Run job on a worker soon / at wake_ms (at once while the loop drains). Any thread. */
void fl_http_loop_submit(fl_http_loop *l, fl_http_job *job);
void fl_http_loop_defer(fl_http_loop *l, fl_http_job *job, int64_t wake_ms);

/* A watch starts streaming on conn / stops (MHD thread; detach before the stream's memory
 * goes; the connection is not suspended then). */
void fl_http_park_attach(fl_http_loop *l, fl_http_park *p, fl_http_conn *conn);
void fl_http_park_detach(fl_http_loop *l, fl_http_park *p);
/* In the content reader, before looking for data: a wake from here on is not lost. */
void fl_http_park_begin(fl_http_park *p);
/* In the content reader, having found nothing: suspend the connection until a wake, or
 * wake_ms (0 = none). The reader then returns 0. */
void fl_http_park_suspend(fl_http_loop *l, fl_http_park *p, int64_t wake_ms);
/* Resume p's connection if parked; if its reader is running, make its next suspend resume at
 * once. Any thread, while p is attached (or from the stream's notify hook). */
void fl_http_park_wake(fl_http_park *p);

/* Shutdown: from now on deferred jobs run at once; wake every parked watch (their readers
 * must see the transport closing and end), run the deferred jobs, and wait until no job is
 * queued or running. */
void fl_http_loop_drain(fl_http_loop *l);

#endif
