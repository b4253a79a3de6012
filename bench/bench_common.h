/* bench_common.h - what every Flotilla benchmark shares.
 *
 * The benchmarks are clients: they start a real `flotilla server` as a child process
 * on a fresh data directory and a loopback port the kernel picks, talk to it over
 * HTTPS with the admin bearer token (as kubectl does), and stop it at the end. This
 * module owns that child process, the libcurl handle setup, timing, percentiles and
 * reading a process's RSS. It does not link the project library on purpose, so the
 * benchmarks build even while src/ is being changed.
 *
 * All functions may be called from any thread unless said otherwise. */
#ifndef FB_BENCH_COMMON_H
#define FB_BENCH_COMMON_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A running `flotilla server` child. */
typedef struct fb_server {
    pid_t pid;
    char dir[512];      /* its --data-dir */
    char url[160];      /* https://127.0.0.1:PORT (or http:// with insecure) */
    char ca[600];       /* DIR/pki/ca.crt, empty when insecure */
    char auth[600];     /* "Authorization: Bearer TOKEN", empty when insecure */
    bool insecure;
} fb_server;

/* Growable byte buffer for response bodies. */
typedef struct fb_buf {
    char *p;
    size_t n, cap;
} fb_buf;

/* Monotonic clock in nanoseconds. */
int64_t fb_now_ns(void);

/* Sleep until the monotonic clock reaches `deadline_ns`. */
void fb_sleep_until(int64_t deadline_ns);

/* Path of the flotilla binary: `arg` if given, else ../flotilla next to this executable
 * (benchmarks build into BUILD/bench/, the server into BUILD/). Returns a static string. */
const char *fb_flotilla_path(const char *arg);

/* A whole file as a NUL-terminated heap string, or NULL if it cannot be read. */
char *fb_slurp(const char *path);

/* A fresh directory under `parent` (or $TMPDIR, or /tmp). Caller frees. Exits on failure. */
char *fb_mkdtemp(const char *parent, const char *prefix);

/* The end of a run: remove dir (a benchmark's scratch tree) unless keep, in which case say
 * where it is. A failure to remove is reported, not fatal. */
void fb_scratch_done(const char *dir, bool keep);

/* Raise RLIMIT_NOFILE's soft limit to the hard limit (children inherit it). Returns the new limit. */
long fb_raise_nofile(void);

/* Start `flotilla server --data-dir dir --listen 127.0.0.1:0 [extra...]` with its output in
 * dir/server.log, wait (at most 30 s) until it serves /healthz, and fill `s`. `extra` is a
 * NULL-terminated list of further arguments or NULL. Returns 0, or -1 with a message printed. */
int fb_server_start(const char *flotilla, const char *dir, const char *const *extra, fb_server *s);

/* SIGTERM the server and wait for it (at most 15 s, then SIGKILL). Returns its exit status as
 * from waitpid, or -1 if it had already died (a crash: reported on stderr). */
int fb_server_stop(fb_server *s);

/* True while the child is running (reaps it and prints how it died if not). */
bool fb_server_alive(fb_server *s);

/* A kilobyte field (e.g. "VmRSS", "VmHWM") from /proc/PID/status, or -1. */
long fb_proc_kib(pid_t pid, const char *field);

/* CPU seconds (user + system) a process has used so far, from /proc/PID/stat, or -1. */
double fb_proc_cpu_s(pid_t pid);
/* Context switches (voluntary and not) of every live thread of pid so far, or -1. Threads
 * that ended are not counted: compare long-lived processes only. */
long fb_proc_ctxsw(pid_t pid);

/* CPU seconds a thread of this process has used so far, or -1. */
double fb_thread_cpu_s(pthread_t t);

/* A numeric metric from the server's /metrics (first sample whose line starts with `name`),
 * or -1 on failure. */
double fb_metric(const fb_server *s, const char *name);

/* A new easy handle set up for the server: keep-alive, CA, no signals, the given header
 * list (which must start from fb_headers()). Caller cleans it up. */
CURL *fb_curl_new(const fb_server *s, struct curl_slist *headers);

/* Header list with the bearer token and JSON content type. Caller frees with curl_slist_free_all. */
struct curl_slist *fb_headers(const fb_server *s);

/* libcurl write callback appending to an fb_buf passed as CURLOPT_WRITEDATA. */
size_t fb_buf_write(char *ptr, size_t size, size_t nmemb, void *userdata);

/* Append printf-formatted text to b (kept NUL-terminated). Aborts when out of memory. */
void fb_bprintf(fb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Empty b, keeping its memory (and a NUL at p[0] if it has any). */
void fb_breset(fb_buf *b);

/* Seconds on the monotonic clock since t0 (from fb_now_ns()). */
double fb_since_s(int64_t t0);

/* One request on a prepared handle: method ("GET", "POST", "PUT"), url path after the server
 * URL, optional body. The response body lands in `out` (reset first). Returns the HTTP code, or
 * 0 on a transport error (message in out). */
long fb_request(CURL *c, const fb_server *s, const char *method, const char *path, const char *body,
                size_t body_len, fb_buf *out);

/* Value of the first "resourceVersion":"N" in a JSON text, or -1. */
long long fb_json_rv(const char *json);

/* Sort `v` in place and return the p-th percentile (0..100) in milliseconds; 0 when n == 0. */
double fb_pct_ms(int64_t *v, size_t n, double p);

/* Same on an already sorted array. */
double fb_pct_sorted_ms(const int64_t *v, size_t n, double p);

/* Parse "1,16,64" into up to `max` ints; returns the count. */
int fb_parse_list(const char *s, int *out, int max);

/* ---- member hosts ---- */

/* A running `flotilla member`: its pid and its base URL ("https://127.0.0.1:PORT"). */
typedef struct fb_member_host {
    pid_t pid;
    char url[160];
} fb_member_host;

/* Start `flotilla member --clusters N` in dir (log in dir/member.log) and wait (120 s) until
 * it serves. 0, or -1 with a message on stderr. */
int fb_member_start(const char *flotilla, const char *dir, int clusters, fb_member_host *m);
/* SIGTERM, then SIGKILL after 15 s; reaps it. */
void fb_member_stop(fb_member_host *m);
/* Standard base64 of n bytes (heap). */
char *fb_b64(const char *s, size_t n);
/* The bearer token in a kubeconfig file (heap), or NULL. */
char *fb_kubeconfig_token(const char *path);

/* Join clusters member1..memberN of member host mh (flotilla: the binary agents run) (started in members_dir) to the server:
 * Push mode writes a Secret (token, CA) and a Cluster for each, as `flotilla ctl join`
 * does; pull mode starts one `flotilla agent` per member (log in logdir/agent-I.log) that
 * registers with the server's bootstrap kubeconfig. *agents (heap, N pids; NULL in push
 * mode) is for fb_agents_stop. Returns the number of joins that failed (messages printed). */
int fb_join(const char *flotilla, CURL *c, const fb_server *s, const fb_member_host *mh, const char *members_dir, int clusters, bool pull,
            const char *logdir, pid_t **agents);
/* SIGTERM every agent, reap it, free the array. NULL-safe. */
void fb_agents_stop(pid_t *agents, int n);
/* Wait (at most timeout_s) until `clusters` Clusters are Ready; the number Ready at the end. */
int fb_wait_ready(CURL *c, const fb_server *s, int clusters, int timeout_s);

/* ---- many creates on several connections ---- */

/* Builds the i-th object of a batch: its collection path (after the server URL) into path and
 * its JSON appended to body (emptied before each call). Called from several threads at once. */
typedef void (*fb_gen_fn)(void *ctx, int i, char *path, size_t pathsz, fb_buf *body);

/* POST objects 0..n-1 from gen on `conns` connections (threads) as fast as they go; 429s and
 * transport errors are retried (50 times, 10 ms apart). ack (n entries, or NULL) gets each
 * object's monotonic ns when its answer arrived. The first five failures are printed;
 * *errors and *retries (either may be NULL) get the counts. Returns the seconds taken. */
double fb_create_many(const fb_server *s, int conns, int n, fb_gen_fn gen, void *ctx, int64_t *ack, long *errors,
                      long *retries);

/* ---- watches ----
 * Many `?watch=1` streams driven by one thread over a curl multi handle. Each event line
 * reaches its watch's on_event on that thread; a watch that ends is reopened from the newest
 * resourceVersion it saw, and counted. The set owns its watches. */

typedef struct fb_watch fb_watch;

/* An ADDED (type 0), MODIFIED (1) or DELETED (2) event line, on the watcher thread. `now`
 * is when the bytes that completed the line arrived. ERROR events are counted, not passed. */
typedef void (*fb_watch_fn)(fb_watch *w, int type, const char *line, int64_t now);

struct fb_watch {
    CURL *curl;
    struct curl_slist *headers;
    fb_buf buf;
    char base[400];          /* server URL + path, with its query (?watch=1) */
    long long rv;            /* newest resourceVersion seen: a watch that ends resumes from it */
    bool open;               /* answered 200 since it was last (re)armed */
    fb_watch_fn on_event;
    struct fb_watchset *set;
    void *ctx;               /* the caller's, for on_event */
    int what, kind, cluster; /* the caller's labels, for on_event */
};

typedef struct fb_watchset {
    fb_watch *w; /* n watches, room for cap */
    int n, cap;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    atomic_int open;     /* watches that have answered 200 */
    atomic_long ends;    /* watches that ended and were reopened */
    atomic_long errors;  /* ERROR events */
} fb_watchset;

/* An empty set with room for cap watches. Exits when out of memory. */
void fb_watchset_init(fb_watchset *ws, int cap);

/* Add a watch on s->url + path (with its ?watch=1) with s's credentials, calling on_event for
 * each event; returns it for the caller to fill ctx and its labels (zero). Before start only;
 * aborts when the set is full. */
fb_watch *fb_watchset_add(fb_watchset *ws, const fb_server *s, const char *path, fb_watch_fn on_event);

/* Start the watcher thread and wait (at most timeout_s) until every watch has answered 200.
 * 0, or -1 (the thread may be running: fb_watchset_close stops it). */
int fb_watchset_start(fb_watchset *ws, int timeout_s);

/* Stop and join the watcher thread if it runs; the watches stay. */
void fb_watchset_stop(fb_watchset *ws);

/* Stop the thread, then free every watch. */
void fb_watchset_close(fb_watchset *ws);

/* Write requests per (verb, resource, code) from the server's /metrics: snapshots to diff. */
typedef struct fb_reqcount {
    char key[120];
    double v;
} fb_reqcount;

typedef struct fb_reqsnap {
    fb_reqcount *e;
    int n;
} fb_reqsnap;

fb_reqsnap fb_snap_requests(const fb_server *s);

/* Print the writes made between two snapshots, largest first, per `per` units. */
void fb_print_writes(const fb_reqsnap *before, const fb_reqsnap *after, double per, const char *unit);

void fb_snap_free(fb_reqsnap *s);

/* ---- a local etcd cluster (issue 40's benchmarks) ----
 * n members of /usr/bin/etcd (or $FB_ETCD) on free loopback ports, each with its data in
 * DIR/m<i> and its log in DIR/m<i>.log, plain HTTP, fsync per commit as etcd always does.
 * The members die with the benchmark (PR_SET_PDEATHSIG) if it is killed: start them from the
 * main thread (the signal follows the thread that forked). */
#define FB_ETCD_MAX 7
typedef struct fb_etcd {
    int n;
    pid_t pid[FB_ETCD_MAX];
    int client[FB_ETCD_MAX], peer[FB_ETCD_MAX];
    char dir[512];
    char endpoints[400]; /* "http://127.0.0.1:P1,http://127.0.0.1:P2,..." for --etcd-servers */
} fb_etcd;

/* Start n members in dir (made if missing) and wait (30 s) until every one answers /health.
 * 0, or -1 with a message on stderr (the members started are stopped). */
int fb_etcd_start(const char *dir, int n, fb_etcd *e);
/* The client URL of member i, "http://127.0.0.1:PORT", written into buf; returns buf. */
const char *fb_etcd_url(const fb_etcd *e, int i, char *buf, size_t bufsz);
/* SIGTERM every member, SIGKILL after 5 s; reaps them. Says so when a member had died. */
void fb_etcd_stop(fb_etcd *e);
/* Copy from_dir/pki/ into to_dir/pki/ (to_dir made if missing): a second replica shares the
 * first's certificates and tokens, as `flotilla up --replicas` does. 0, or -1 with a message. */
int fb_share_pki(const char *from_dir, const char *to_dir);
/* "load average 1/5/15: a b c" of the machine now, into buf. */
const char *fb_loadavg(char *buf, size_t bufsz);

#endif
