/* keep.c - slabs for long-lived small records (why: keep.h).
 *
 * One reservation of address space, FLOTILLA_KEEP_MIB mebibytes (default 4 GiB; 0 turns
 * the slabs off), cut into 64 KiB slabs. The kernel backs a page only when it is first
 * written, so the reservation costs nothing until used. A slab serves one size class (16,
 * 32, ..., FL_KEEP_MAX bytes); its blocks are carved from its start as they are first needed
 * and, once freed, linked through their first word. Each class keeps the slabs that have
 * room in a list under its own lock, and takes the first. The bookkeeping of every slab
 * sits in a table beside the slabs, indexed by the slab's number, so a free finds its slab
 * by address alone. A slab whose last block is freed goes back to the kernel
 * (MADV_DONTNEED) and to a pool of spare slabs for any class, unless it is its class's only
 * slab with room.
 *
 * In a sanitizer build a free block is poisoned, so a read after free is reported as for
 * malloc, and each slab is a root region of the leak checker, because the blocks it holds
 * point to blocks from malloc. */
#include "core/keep.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/env.h"
#include "core/mem.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEP_ASAN 1
#endif
#endif

#ifdef KEEP_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GRAIN 16
#define CLASSES (FL_KEEP_MAX / GRAIN)
#define SLAB_SHIFT 16
#define REGION_MIB_DEFAULT 4096

typedef struct slab {
    struct slab *prev, *next; /* the class's slabs with room; the spare pool (next) */
    void *free;               /* freed blocks */
    uint32_t used;            /* live blocks */
    uint32_t carved;          /* blocks carved from the start so far */
    uint8_t cls;              /* its class + 1; 0: spare or never used */
    bool listed;              /* on its class's list */
} slab;

typedef struct klass {
    pthread_mutex_t mu;
    slab *room;        /* slabs with a free or an uncarved block */
    uint32_t size;     /* block size */
    uint32_t per_slab; /* blocks per slab */
    size_t blocks;     /* live blocks (under mu) */
} klass;

static struct {
    pthread_once_t once;
    char *base; /* NULL: no slabs, everything from malloc */
    size_t nslabs;
    slab *meta; /* nslabs entries */
    pthread_mutex_t mu; /* carved, spare, live */
    size_t carved;      /* slabs handed out from the reservation */
    slab *spare;        /* given back, ready for any class */
    size_t live;        /* slabs of a class */
    klass cls[CLASSES];
} K = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static void keep_init(void)
{
    for (int i = 0; i < CLASSES; i++) {
        pthread_mutex_init(&K.cls[i].mu, NULL);
        K.cls[i].size = (uint32_t)((i + 1) * GRAIN);
        K.cls[i].per_slab = (uint32_t)(((size_t)1 << SLAB_SHIFT) / K.cls[i].size);
    }
    size_t mib = (size_t)fl_env_count("FLOTILLA_KEEP_MIB", REGION_MIB_DEFAULT, 0);
    size_t nslabs = (mib << 20) >> SLAB_SHIFT;
    if (!nslabs)
        return;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void *meta = mmap(NULL, nslabs * sizeof(slab), PROT_READ | PROT_WRITE, flags, -1, 0);
    void *base = mmap(NULL, nslabs << SLAB_SHIFT, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (meta == MAP_FAILED || base == MAP_FAILED) { /* a strict overcommit policy, say */
        if (meta != MAP_FAILED)
            munmap(meta, nslabs * sizeof(slab));
        if (base != MAP_FAILED)
            munmap(base, nslabs << SLAB_SHIFT);
        return;
    }
    K.meta = meta;
    K.nslabs = nslabs;
    K.base = base;
}

static inline bool ready(void)
{
    pthread_once(&K.once, keep_init);
    return K.base != NULL;
}

static inline char *slab_addr(const slab *s)
{
    return K.base + ((size_t)(s - K.meta) << SLAB_SHIFT);
}

_Thread_local int fl_keep_depth;

void fl_keep_begin(void)
{
    fl_keep_depth++;
}

void fl_keep_end(void)
{
    fl_keep_depth--;
}

bool fl_keep_owns(const void *p)
{
    const char *c = p;
    return K.base && c >= K.base && c < K.base + (K.nslabs << SLAB_SHIFT);
}

static void room_push(klass *k, slab *s)
{
    s->prev = NULL;
    s->next = k->room;
    if (k->room)
        k->room->prev = s;
    k->room = s;
    s->listed = true;
}

static void room_remove(klass *k, slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        k->room = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->listed = false;
}

/* A slab for class c: a spare one, or the next of the reservation; NULL when both ran out. */
static slab *slab_take(int c)
{
    pthread_mutex_lock(&K.mu);
    slab *s = K.spare;
    if (s) {
        K.spare = s->next;
    } else if (K.carved < K.nslabs) {
        s = &K.meta[K.carved++];
#ifdef KEEP_ASAN
        __lsan_register_root_region(slab_addr(s), (size_t)1 << SLAB_SHIFT);
#endif
    }
    if (s)
        K.live++;
    pthread_mutex_unlock(&K.mu);
    if (s)
        *s = (slab){.cls = (uint8_t)(c + 1)};
    return s;
}

/* Give an empty slab's pages back; it is no class's any more. */
static void slab_give_back(slab *s)
{
    madvise(slab_addr(s), (size_t)1 << SLAB_SHIFT, MADV_DONTNEED);
    pthread_mutex_lock(&K.mu);
    *s = (slab){.next = K.spare};
    K.spare = s;
    K.live--;
    pthread_mutex_unlock(&K.mu);
}

void *fl_keep_malloc(size_t n)
{
    size_t c = n ? (n - 1) / GRAIN : 0;
    if (c >= CLASSES || !ready())
        return fl_malloc(n);
    klass *k = &K.cls[c];
    pthread_mutex_lock(&k->mu);
    slab *s = k->room;
    if (!s) {
        s = slab_take((int)c);
        if (!s) {
            pthread_mutex_unlock(&k->mu);
            return fl_malloc(n);
        }
        room_push(k, s);
    }
    char *p;
    if (s->free) {
        p = s->free;
        UNPOISON(p, k->size);
        s->free = *(void **)p;
    } else {
        p = slab_addr(s) + (size_t)s->carved++ * k->size;
        UNPOISON(p, k->size);
    }
    s->used++;
    k->blocks++;
    if (!s->free && s->carved == k->per_slab)
        room_remove(k, s);
    pthread_mutex_unlock(&k->mu);
    return p;
}

void *fl_keep_calloc(size_t n)
{
    void *p = fl_keep_malloc(n);
    memset(p, 0, n);
    return p;
}

char *fl_keep_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(fl_keep_malloc(n), s, n);
}

void fl_keep_free(void *p)
{
    if (!p)
        return;
    if (!fl_keep_owns(p)) {
        free(p);
        return;
    }
    slab *s = &K.meta[(size_t)((char *)p - K.base) >> SLAB_SHIFT];
    klass *k = &K.cls[s->cls - 1]; /* a slab with a live block keeps its class */
    pthread_mutex_lock(&k->mu);
    *(void **)p = s->free;
    s->free = p;
    POISON(p, k->size);
    s->used--;
    k->blocks--;
    if (!s->listed)
        room_push(k, s);
    bool empty = s->used == 0 && (k->room != s || s->next); /* not the class's only room */
    if (empty)
        room_remove(k, s);
    pthread_mutex_unlock(&k->mu);
    if (empty)
        slab_give_back(s);
}

void fl_keep_stats_get(fl_keep_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!ready())
        return;
    for (int i = 0; i < CLASSES; i++) {
        pthread_mutex_lock(&K.cls[i].mu);
        st->blocks += K.cls[i].blocks;
        st->bytes += K.cls[i].blocks * K.cls[i].size;
        pthread_mutex_unlock(&K.cls[i].mu);
    }
    pthread_mutex_lock(&K.mu);
    st->slabs = K.live;
    pthread_mutex_unlock(&K.mu);
}
