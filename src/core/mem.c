/* mem.c - abort-on-OOM allocation wrappers (policy in mem.h). */
#include "core/mem.h"

#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/keep.h"
#include "core/timefmt.h"

static void oom(size_t n)
{
    fprintf(stderr, "flotilla: out of memory allocating %zu bytes\n", n);
    abort();
}

void *fl_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *fl_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *fl_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *fl_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fl_malloc(n);
    memcpy(d, s, n);
    return d;
}

char *fl_strndup(const char *s, size_t n)
{
    char *d = fl_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *fl_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = fl_vasprintf(fmt, ap);
    va_end(ap);
    return out;
}

char *fl_cat(const char *first, ...)
{
    va_list ap;
    size_t n = 0;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *))
        n += strlen(s);
    va_end(ap);
    char *out = fl_malloc(n + 1), *at = out;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        size_t k = strlen(s);
        memcpy(at, s, k);
        at += k;
    }
    va_end(ap);
    *at = '\0';
    return out;
}

char *fl_vasprintf(const char *fmt, va_list ap)
{
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0)
        oom(0);
    return out;
}

/* ---- the JSON node cache ----
 *
 * A JSON tree is hundreds of small blocks, made and freed together: a Work decoded, copied,
 * patched, encoded and dropped on every write. glibc's per-thread cache holds 7 blocks of a
 * size, so most of those went through its arenas (locks, bins, consolidation): malloc and
 * free were a quarter of the server's instructions. Here each thread keeps up to
 * NODE_CACHE_MAX freed blocks of each chunk size up to 272 bytes and hands them out again.
 * The blocks are glibc's own, sorted by malloc_usable_size (a chunk's size less its 8-byte
 * header), so free() stays valid on any of them and a block may move between threads: it
 * joins the cache of the thread that frees it. A thread's cache is given back when the
 * thread exits. */

#if defined(__SANITIZE_ADDRESS__)
#define FL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FL_ASAN 1
#endif
#endif

#define NODE_CLASSES 16   /* chunks of 32, 48, ..., 272 bytes */
#define NODE_CACHE_MAX 256 /* blocks kept per class and thread */

typedef struct node_cache {
    void *head[NODE_CLASSES];
    unsigned short n[NODE_CLASSES];
    bool registered, gone;
} node_cache;

static __thread node_cache node_tc;
static pthread_key_t node_key;
static pthread_once_t node_once = PTHREAD_ONCE_INIT;

static void node_drain(node_cache *c)
{
    for (int i = 0; i < NODE_CLASSES; i++) {
        while (c->head[i]) {
            void *p = c->head[i];
            c->head[i] = *(void **)p;
            free(p);
        }
        c->n[i] = 0;
    }
}

static void node_thread_exit(void *arg)
{
    node_cache *c = arg;
    node_drain(c);
    c->gone = true; /* blocks freed later on this thread (other destructors) go to glibc */
}

static void node_key_make(void)
{
    pthread_key_create(&node_key, node_thread_exit);
}

/* The class of the chunk glibc makes for a request of n bytes (n + its header, in 16s,
 * at least 32); NODE_CLASSES or more: not cached. */
static inline size_t node_class(size_t n)
{
    size_t chunk = (n + 8 + 15) & ~(size_t)15;
    return chunk < 32 ? 0 : chunk / 16 - 2;
}

void *fl_node_malloc(size_t n)
{
    if (fl_keep_active())
        return fl_keep_malloc(n);
    size_t c = n <= 16 * (NODE_CLASSES + 2) - 8 ? node_class(n) : NODE_CLASSES; /* no wrap for a huge n */
    if (c < NODE_CLASSES && node_tc.head[c]) {
        void *p = node_tc.head[c];
        node_tc.head[c] = *(void **)p;
        node_tc.n[c]--;
        return p;
    }
    return fl_malloc(n);
}

void fl_node_free(void *p)
{
    if (!p)
        return;
    if (fl_keep_owns(p)) {
        fl_keep_free(p);
        return;
    }
    size_t u = malloc_usable_size(p);
    size_t c = (u + 8) / 16 - 2;
    if ((u + 8) % 16 || u < 24 || c >= NODE_CLASSES || node_tc.gone || node_tc.n[c] >= NODE_CACHE_MAX) {
        free(p);
        return;
    }
    if (!node_tc.registered) {
        pthread_once(&node_once, node_key_make);
        pthread_setspecific(node_key, &node_tc);
        node_tc.registered = true;
    }
    *(void **)p = node_tc.head[c];
    node_tc.head[c] = p;
    node_tc.n[c]++;
}

int fl_cond_wait_idle_until(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clk, const struct timespec *until)
{
    if (!fl_node_cached()) /* nothing to give back: sleep until woken */
        return until ? pthread_cond_timedwait(cv, mu, until) : pthread_cond_wait(cv, mu);
    struct timespec idle = fl_time_after(clk, FL_NODE_IDLE_MS);
    if (until && (until->tv_sec < idle.tv_sec || (until->tv_sec == idle.tv_sec && until->tv_nsec <= idle.tv_nsec)))
        return pthread_cond_timedwait(cv, mu, until); /* due before the thread counts as idle */
    int rc = pthread_cond_timedwait(cv, mu, &idle);
    if (rc != ETIMEDOUT)
        return rc;
    pthread_mutex_unlock(mu);
    fl_node_cache_drain();
    pthread_mutex_lock(mu);
    return 0;
}

int fl_cond_wait_idle(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clk)
{
    return fl_cond_wait_idle_until(cv, mu, clk, NULL);
}

void fl_node_cache_drain(void)
{
    node_drain(&node_tc);
}

size_t fl_node_cached(void)
{
    size_t n = 0;
    for (int i = 0; i < NODE_CLASSES; i++)
        n += node_tc.n[i];
    return n;
}

int fl_mem_quiet_due(fl_mem_quiet *q, long long mark, long long now_ms, long long quiet_ms, long long min_moves)
{
    if (!q->moved) { /* the first sight */
        *q = (fl_mem_quiet){mark, mark, now_ms ? now_ms : 1};
        return 0;
    }
    if (mark != q->mark) {
        q->mark = mark;
        q->moved = now_ms;
        return 0;
    }
    if (mark - q->base < min_moves || now_ms - q->moved < quiet_ms)
        return 0;
    q->base = mark;
    return 1;
}

void fl_mem_trim(void)
{
    malloc_trim(0);
}

#ifdef FL_ASAN
/* jansson's allocation in a sanitizer build: malloc's own, or the slabs while kept */
static void *node_malloc_plain(size_t n)
{
    return fl_keep_active() ? fl_keep_malloc(n) : fl_malloc(n);
}
#endif

void fl_mem_init(void)
{
#ifdef FL_ASAN
    /* recycled blocks would hide a use after free from the sanitizer */
    json_set_alloc_funcs(node_malloc_plain, fl_keep_free);
#else
    json_set_alloc_funcs(fl_node_malloc, fl_node_free);
    /* A heap grows in steps of what was asked plus this pad, each step an mprotect (a
     * thread's arena) or brk, and the kernel's bookkeeping of the mapping. glibc's default
     * pad is 128 KiB: an informer decoding 180,000 Works after a restart spent a third of
     * its time growing its heap. 64 MiB steps grow it 500 times less often; the pad is
     * address space, which becomes memory only when used. (It also fixes the mmap
     * threshold at its 128 KiB default instead of letting glibc raise it.) */
    mallopt(M_TOP_PAD, 64 << 20);
#endif
}
