/* mem.h - allocation with one out-of-memory policy: abort.
 *
 * A control plane that runs out of memory cannot keep its promises about the
 * store or watches, so, like redis's zmalloc, every allocation either succeeds
 * or the process aborts with a message. Callers therefore never check for NULL
 * from these functions. fl_mem_init() routes jansson through the same policy. */
#ifndef FL_MEM_H
#define FL_MEM_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>

void *fl_malloc(size_t n);
void *fl_calloc(size_t n, size_t size);
void *fl_realloc(void *p, size_t n);
char *fl_strdup(const char *s);
char *fl_strndup(const char *s, size_t n);
/* printf into a fresh heap string (caller frees). */
char *fl_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with a va_list. */
char *fl_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* The strings given, one after another, up to a NULL: fl_cat(ns, "/", name, NULL). For the
 * keys and paths made on every request, where fl_asprintf's formatting was the cost. */
char *fl_cat(const char *first, ...) __attribute__((sentinel));

/* Install the abort-on-OOM allocator into jansson, with the node cache below (not in a
 * sanitizer build). Call once at start, before threads. */
void fl_mem_init(void);

/* Memory a burst of work freed among live blocks stays with the process: glibc gives back
 * only the top of each heap, and keeps that up to its pad. Once the work has stopped,
 * fl_mem_quiet_due says so, and fl_mem_trim gives back every free page (malloc_trim). */
typedef struct fl_mem_quiet {
    long long base;  /* the activity mark (the store's revision, say) when last quiet */
    long long mark;  /* the mark last seen */
    long long moved; /* when it last moved, ms */
} fl_mem_quiet;
/* Feed the activity mark at now_ms: true once the mark has moved by min_moves or more since
 * it was last quiet and has stood still for quiet_ms since; then not again until it has
 * moved that much more. The first call only notes the mark. */
int fl_mem_quiet_due(fl_mem_quiet *q, long long mark, long long now_ms, long long quiet_ms, long long min_moves);
void fl_mem_trim(void);

/* Allocation for JSON nodes: fl_malloc, but small blocks freed by fl_node_free come back
 * from a cache of the calling thread's (why and how: mem.c). A block from either may be
 * given to free(), and fl_node_free takes any block from malloc. */
void *fl_node_malloc(size_t n);
void fl_node_free(void *p);
/* Give the calling thread's cached blocks back to malloc (a thread's are at its exit). The
 * threads that wait for work call it when a wait of FL_NODE_IDLE_MS has brought nothing
 * (the work queue, the pool, watches, the store's writer, the client's transfers): the
 * blocks a cache holds are scattered over the heap: a quiet server whose threads kept
 * theirs held 221 MiB at 5,000 Deployments over 10 clusters, 153 MiB with these drains, and
 * 139 MiB with no cache at all; 127 MiB once waits with an end drained too. */
void fl_node_cache_drain(void);
#define FL_NODE_IDLE_MS 1000
/* Wait on cv (whose clock is clk) with mu held, as pthread_cond_timedwait until the
 * absolute time until (NULL: no end), for a thread with nothing to do meanwhile: once it has
 * waited FL_NODE_IDLE_MS while its node cache holds blocks, the cache is drained with mu
 * released and the call returns 0 (the caller loops on its condition, as after any wake);
 * with the cache empty it just waits. Returns ETIMEDOUT only when until has passed. */
int fl_cond_wait_idle_until(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clk, const struct timespec *until);
/* The same with no end. */
int fl_cond_wait_idle(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clk);
/* How many blocks the calling thread's cache holds (for tests). */
size_t fl_node_cached(void);

#endif
