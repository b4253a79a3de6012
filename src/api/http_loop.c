/* http_loop.c - workers, sweeper and the connection list of the HTTP transport (see
 * http_loop.h for what each is for).
 *
 * Two locks, never nested: conn_mu guards the connection list and which watch is parked on
 * which connection; job_mu the run queue, the deferred jobs and the worker counts. The
 * sweeper sleeps in epoll_wait on its set (the parked watches' sockets, for hang-ups, and an
 * eventfd that pokes it when a wake-up earlier than its next one is set), at most a second,
 * then walks the connection list once: past a deadline it shuts the socket down, past a
 * watch's wake-up time it wakes the watch. Walking 10,000 connections takes well under a
 * millisecond, which is cheaper than keeping a timer heap in step with every change.
 *
 * A parked watch's state (fl_http_park.state) closes the race between a reader that found
 * nothing and a notification arriving before it suspended: the reader suspends first, then
 * moves running -> parked; a waker moves parked -> running and resumes, or running -> woken,
 * and a reader that finds woken resumes its own connection. */
#include "api/http_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/mem.h"

enum { PARK_RUNNING, PARK_PARKED, PARK_WOKEN };

#define SWEEP_MAX_MS 1000     /* the sweeper looks at least this often */
#define WORKER_IDLE_MS 5000   /* a worker above the minimum ends after this long without a job */

struct fl_http_loop {
    pthread_mutex_t conn_mu;
    fl_http_conn *conns;
    uint64_t next_id;
    pthread_mutex_t job_mu;
    pthread_cond_t job_cv;     /* a job queued, or stopping */
    pthread_cond_t done_cv;    /* a job finished, or a worker ended */
    fl_http_job *head, *tail;  /* run queue */
    fl_http_job *deferred;     /* unordered; the sweeper scans it */
    int jobs;                  /* queued, deferred or running */
    int workers, idle, min_workers, max_workers;
    bool draining, stopping;
    int epfd, evfd;
    _Atomic int64_t sweep_next; /* when the sweeper next looks */
    pthread_t sweeper;
};

int64_t fl_http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Make the sweeper look by `at` if it would look later. */
static void poke(fl_http_loop *l, int64_t at)
{
    if (at && at < atomic_load(&l->sweep_next)) {
        atomic_store(&l->sweep_next, at);
        uint64_t one = 1;
        ssize_t w = write(l->evfd, &one, sizeof one);
        (void)w; /* a full counter already wakes it */
    }
}

/* ---- workers ---- */

static void *worker_main(void *arg);

/* Under job_mu: start one more worker. */
static void spawn(fl_http_loop *l)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &a, worker_main, l) == 0)
        l->workers++;
    pthread_attr_destroy(&a);
}

/* Under job_mu: start a worker if every one is busy while a job waits. */
static void maybe_grow(fl_http_loop *l)
{
    if (l->idle == 0 && l->workers < l->max_workers && !l->stopping)
        spawn(l);
}

static void *worker_main(void *arg)
{
    fl_http_loop *l = arg;
    pthread_setname_np(pthread_self(), "http-worker");
    pthread_mutex_lock(&l->job_mu);
    for (;;) {
        if (!l->head) {
            if (l->stopping)
                break;
            l->idle++;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += WORKER_IDLE_MS / 1000;
            int rc = pthread_cond_timedwait(&l->job_cv, &l->job_mu, &ts);
            l->idle--;
            if (rc == ETIMEDOUT && !l->head && l->workers > l->min_workers)
                break;
            continue;
        }
        fl_http_job *j = l->head;
        l->head = j->next;
        if (!l->head)
            l->tail = NULL;
        pthread_mutex_unlock(&l->job_mu);
        j->run(j); /* finishes, or defers (which counts it again) */
        pthread_mutex_lock(&l->job_mu);
        l->jobs--;
        pthread_cond_broadcast(&l->done_cv);
    }
    l->workers--;
    pthread_cond_broadcast(&l->done_cv);
    pthread_mutex_unlock(&l->job_mu);
    return NULL;
}

/* Under job_mu. */
static void enqueue(fl_http_loop *l, fl_http_job *job)
{
    job->next = NULL;
    if (l->tail)
        l->tail->next = job;
    else
        l->head = job;
    l->tail = job;
    maybe_grow(l);
    pthread_cond_signal(&l->job_cv);
}

void fl_http_loop_submit(fl_http_loop *l, fl_http_job *job)
{
    pthread_mutex_lock(&l->job_mu);
    l->jobs++;
    enqueue(l, job);
    pthread_mutex_unlock(&l->job_mu);
}

void fl_http_loop_defer(fl_http_loop *l, fl_http_job *job, int64_t wake_ms)
{
    pthread_mutex_lock(&l->job_mu);
    l->jobs++;
    if (l->draining) {
        enqueue(l, job);
    } else {
        job->wake_ms = wake_ms;
        job->next = l->deferred;
        l->deferred = job;
    }
    pthread_mutex_unlock(&l->job_mu);
    poke(l, wake_ms);
}

/* ---- connections and parked watches ---- */

fl_http_conn *fl_http_conn_open(fl_http_loop *l, struct MHD_Connection *c, int fd, int64_t deadline_ms)
{
    fl_http_conn *conn = fl_calloc(1, sizeof *conn);
    conn->c = c;
    conn->fd = fd;
    atomic_store(&conn->deadline_ms, deadline_ms);
    pthread_mutex_lock(&l->conn_mu);
    conn->id = ++l->next_id;
    conn->next = l->conns;
    if (l->conns)
        l->conns->prev = conn;
    l->conns = conn;
    pthread_mutex_unlock(&l->conn_mu);
    poke(l, deadline_ms);
    return conn;
}

void fl_http_conn_close(fl_http_loop *l, fl_http_conn *conn)
{
    if (!conn)
        return;
    pthread_mutex_lock(&l->conn_mu);
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        l->conns = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    if (conn->park)
        conn->park->conn = NULL;
    pthread_mutex_unlock(&l->conn_mu);
    free(conn);
}

void fl_http_conn_deadline(fl_http_loop *l, fl_http_conn *conn, int64_t deadline_ms)
{
    atomic_store(&conn->deadline_ms, deadline_ms);
    poke(l, deadline_ms);
}

void fl_http_park_attach(fl_http_loop *l, fl_http_park *p, fl_http_conn *conn)
{
    atomic_store(&p->state, PARK_RUNNING);
    atomic_store(&p->hung_up, false);
    atomic_store(&p->wake_ms, 0);
    p->conn = conn;
    pthread_mutex_lock(&l->conn_mu);
    conn->park = p;
    /* edge-triggered, no EPOLLIN: only the peer closing or the socket failing reports */
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLET, .data.u64 = conn->id};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, conn->fd, &ev))
        fl_log(FL_LOG_DEBUG, "http", "watching socket %d for hang-ups: %s", conn->fd, strerror(errno));
    pthread_mutex_unlock(&l->conn_mu);
}

void fl_http_park_detach(fl_http_loop *l, fl_http_park *p)
{
    pthread_mutex_lock(&l->conn_mu);
    if (p->conn) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->conn->fd, NULL);
        p->conn->park = NULL;
        p->conn = NULL;
    }
    pthread_mutex_unlock(&l->conn_mu);
}

void fl_http_park_begin(fl_http_park *p)
{
    atomic_store(&p->state, PARK_RUNNING);
}

void fl_http_park_suspend(fl_http_loop *l, fl_http_park *p, int64_t wake_ms)
{
    struct MHD_Connection *c = p->conn->c;
    atomic_store(&p->wake_ms, wake_ms);
    poke(l, wake_ms);
    MHD_suspend_connection(c);
    int s = PARK_RUNNING;
    if (atomic_compare_exchange_strong(&p->state, &s, PARK_PARKED))
        return;
    /* woken between finding nothing and suspending: look again at once */
    atomic_store(&p->state, PARK_RUNNING);
    MHD_resume_connection(c);
}

void fl_http_park_wake(fl_http_park *p)
{
    int s = atomic_load(&p->state);
    for (;;) {
        if (s == PARK_PARKED) {
            /* parked: suspended, so its connection is open and p->conn set */
            if (atomic_compare_exchange_weak(&p->state, &s, PARK_RUNNING)) {
                MHD_resume_connection(p->conn->c);
                return;
            }
        } else if (s == PARK_RUNNING) {
            if (atomic_compare_exchange_weak(&p->state, &s, PARK_WOKEN))
                return;
        } else {
            return;
        }
    }
}

/* ---- the sweeper ---- */

/* One walk of the connections: hang-ups (ids from epoll), deadlines, wake-ups. Returns when
 * the next look is due. */
static int64_t sweep_conns(fl_http_loop *l, const uint64_t *hung, int nhung, bool wake_all)
{
    int64_t now = fl_http_now_ms(), next = now + SWEEP_MAX_MS;
    pthread_mutex_lock(&l->conn_mu);
    for (fl_http_conn *c = l->conns; c; c = c->next) {
        for (int i = 0; i < nhung && c->park; i++)
            if (hung[i] == c->id) {
                atomic_store(&c->park->hung_up, true);
                fl_http_park_wake(c->park);
            }
        int64_t d = atomic_load(&c->deadline_ms);
        if (d && d <= now) {
            /* MHD sees the socket end and closes it; never close it under MHD */
            if (atomic_compare_exchange_strong(&c->deadline_ms, &d, 0))
                shutdown(c->fd, SHUT_RDWR);
        } else if (d && d < next) {
            next = d;
        }
        if (!c->park)
            continue;
        int64_t w = atomic_load(&c->park->wake_ms);
        if (wake_all || (w && w <= now)) {
            atomic_store(&c->park->wake_ms, 0);
            fl_http_park_wake(c->park);
        } else if (w && w < next) {
            next = w;
        }
    }
    pthread_mutex_unlock(&l->conn_mu);
    return next;
}

/* Move the deferred jobs that are due (all of them while draining) to the run queue. */
static int64_t sweep_jobs(fl_http_loop *l, int64_t next)
{
    int64_t now = fl_http_now_ms();
    pthread_mutex_lock(&l->job_mu);
    for (fl_http_job **pj = &l->deferred; *pj;) {
        fl_http_job *j = *pj;
        if (l->draining || j->wake_ms <= now) {
            *pj = j->next;
            enqueue(l, j); /* still counted in jobs */
            continue;
        }
        if (j->wake_ms < next)
            next = j->wake_ms;
        pj = &j->next;
    }
    pthread_mutex_unlock(&l->job_mu);
    return next;
}

static void *sweeper_main(void *arg)
{
    fl_http_loop *l = arg;
    pthread_setname_np(pthread_self(), "http-sweeper");
    struct epoll_event evs[64];
    for (;;) {
        int64_t wait = atomic_load(&l->sweep_next) - fl_http_now_ms();
        int n = epoll_wait(l->epfd, evs, 64, wait < 0 ? 0 : wait > SWEEP_MAX_MS ? SWEEP_MAX_MS : (int)wait);
        uint64_t hung[64];
        int nhung = 0;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 == 0) {
                uint64_t v;
                ssize_t r = read(l->evfd, &v, sizeof v);
                (void)r;
            } else {
                hung[nhung++] = evs[i].data.u64;
            }
        }
        pthread_mutex_lock(&l->job_mu);
        bool stop = l->stopping;
        pthread_mutex_unlock(&l->job_mu);
        if (stop)
            break;
        /* the next look, unless a poke sets an earlier one meanwhile */
        atomic_store(&l->sweep_next, fl_http_now_ms() + SWEEP_MAX_MS);
        int64_t next = sweep_jobs(l, sweep_conns(l, hung, nhung, false));
        int64_t cur = atomic_load(&l->sweep_next);
        while (next < cur && !atomic_compare_exchange_weak(&l->sweep_next, &cur, next))
            ;
    }
    return NULL;
}

/* ---- life cycle ---- */

/* What fl_http_loop_new made, once no thread uses it any more. */
static void release(fl_http_loop *l)
{
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->evfd >= 0)
        close(l->evfd);
    pthread_cond_destroy(&l->done_cv);
    pthread_cond_destroy(&l->job_cv);
    pthread_mutex_destroy(&l->job_mu);
    pthread_mutex_destroy(&l->conn_mu);
    free(l);
}

int fl_http_loop_new(int min_workers, int max_workers, fl_http_loop **out, char **err)
{
    *out = NULL;
    fl_http_loop *l = fl_calloc(1, sizeof *l);
    pthread_mutex_init(&l->conn_mu, NULL);
    pthread_mutex_init(&l->job_mu, NULL);
    pthread_cond_init(&l->job_cv, NULL);
    pthread_cond_init(&l->done_cv, NULL);
    l->min_workers = min_workers < 1 ? 1 : min_workers;
    l->max_workers = max_workers < l->min_workers ? l->min_workers : max_workers;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev)) {
        *err = fl_asprintf("HTTP transport: cannot create its epoll set: %s", strerror(errno));
        goto fail;
    }
    atomic_store(&l->sweep_next, fl_http_now_ms() + SWEEP_MAX_MS);
    if (pthread_create(&l->sweeper, NULL, sweeper_main, l)) {
        *err = fl_strdup("HTTP transport: cannot start its sweeper thread");
        goto fail;
    }
    pthread_mutex_lock(&l->job_mu);
    for (int i = 0; i < l->min_workers; i++)
        spawn(l);
    pthread_mutex_unlock(&l->job_mu);
    *out = l;
    return 0;
fail:
    release(l);
    return -1;
}

void fl_http_loop_drain(fl_http_loop *l)
{
    pthread_mutex_lock(&l->job_mu);
    l->draining = true;
    pthread_mutex_unlock(&l->job_mu);
    sweep_conns(l, NULL, 0, true);
    sweep_jobs(l, 0);
    pthread_mutex_lock(&l->job_mu);
    while (l->jobs > 0)
        pthread_cond_wait(&l->done_cv, &l->job_mu);
    pthread_mutex_unlock(&l->job_mu);
}

void fl_http_loop_free(fl_http_loop *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->job_mu);
    l->stopping = true;
    pthread_cond_broadcast(&l->job_cv);
    while (l->workers > 0)
        pthread_cond_wait(&l->done_cv, &l->job_mu);
    pthread_mutex_unlock(&l->job_mu);
    poke(l, 1); /* the sweeper sees stopping */
    pthread_join(l->sweeper, NULL);
    release(l);
}
