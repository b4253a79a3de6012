/* events.c - the event recorder (contract in events.h).
 *
 * fl_event() builds the Event body at once (the object may change after the call) and puts
 * it on a queue; the writer thread takes them one by one. Recent events are remembered by
 * (object uid or namespace/name, type, reason, message) with the name and count of the
 * Event that was written, so a repeat becomes a merge patch of count and lastTimestamp; a
 * repeat whose Event is gone (or whose patch fails) writes a new one. The memory is a ring
 * of insertion order that forgets its oldest entries first, indexed by a chained hash of
 * the fingerprints (a lookup per event, so it must not walk the ring).
 *
 * Repeats coming fast are counted in memory and written together: a repeat is written at
 * once when its Event's count was last written at least REPEAT_FLUSH_MS ago, otherwise when
 * that interval has passed (with the count and time of the last occurrence). So a quiet
 * object's repeat shows at once, and one that repeats every few milliseconds costs a write
 * every two seconds instead of one per occurrence (Kubernetes' own events library goes
 * further: it writes an event series' count every half hour). */
#include "controllers/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/json_get.h"
#include "core/keep.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define REPEAT_WINDOW_MS (10 * 60 * 1000)
#define REPEAT_FLUSH_MS 2000
#define WRITER_NICE 10
#define HOLD_STEP_MS 100 /* how often a held writer looks again */

static const fl_gvr EVENTS = {"v1", "events"};

typedef struct pending {
    struct pending *next;
    char *ns;
    char *fingerprint;       /* identity of the repeat */
    char *event;             /* the Event to create, encoded: a tenth of it decoded, and
                              * thousands may wait while the server is busy */
    int64_t queued_ms;       /* when fl_event queued it (fl_time_mono_ms) */
} pending;

typedef struct recent {
    char *fingerprint;       /* NULL: free slot */
    char *ns, *name;         /* the Event written */
    int64_t count;           /* occurrences so far */
    int64_t last_ms;         /* of the last one */
    int64_t written_ms;      /* when the count was last written */
    bool unwritten;          /* count and last_ms are newer than the Event */
    uint32_t hash;           /* of fingerprint */
    int chain;               /* next ring index in the same bucket; -1: none */
} recent;

#define RECENT_BUCKETS (FL_EVENTS_RECENT_MAX * 2)

struct fl_recorder {
    fl_client *cp;
    char *component;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pending *head, *tail;
    size_t queued;
    size_t dropped;
    int64_t drop_logged_ms;
    bool closing;
    /* fl_recorder_hold_while: new Events wait while busy(ctx), at most hold_max_ms; under mu */
    bool (*busy)(void *ctx);
    void *busy_ctx;
    int64_t hold_max_ms;
    pthread_t thread;
    recent ring[FL_EVENTS_RECENT_MAX]; /* writer thread only */
    int bucket[RECENT_BUCKETS];        /* first ring index of each chain; -1: empty */
    size_t ring_next;
    unsigned long seq;
    size_t nunwritten;                 /* entries with unwritten repeats */
    int64_t flush_ms;                  /* the earliest time one of them is due */
};

/* ---- memory of recent events (writer thread only) ---- */

static uint32_t fp_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static recent *recent_find(fl_recorder *r, const char *fp, uint32_t h, int64_t now)
{
    for (int i = r->bucket[h % RECENT_BUCKETS]; i >= 0; i = r->ring[i].chain) {
        recent *e = &r->ring[i];
        if (e->hash == h && !strcmp(e->fingerprint, fp))
            return now - e->last_ms <= REPEAT_WINDOW_MS ? e : NULL;
    }
    return NULL;
}

static int write_count(fl_recorder *r, recent *e, int64_t now);

static void recent_put(fl_recorder *r, const char *fp, uint32_t h, const char *ns, const char *name, int64_t now)
{
    int slot = (int)r->ring_next;
    recent *e = &r->ring[slot];
    r->ring_next = (r->ring_next + 1) % FL_EVENTS_RECENT_MAX;
    if (e->unwritten) /* its last repeats first */
        write_count(r, e, now);
    if (e->fingerprint) { /* forget the oldest: unlink it from its chain */
        int *link = &r->bucket[e->hash % RECENT_BUCKETS];
        while (*link != slot)
            link = &r->ring[*link].chain;
        *link = e->chain;
    }
    fl_keep_free(e->fingerprint);
    fl_keep_free(e->ns);
    fl_keep_free(e->name);
    /* kept until the ring comes round: away from the writes that made them */
    *e = (recent){.fingerprint = fl_keep_strdup(fp), .ns = fl_keep_strdup(ns), .name = fl_keep_strdup(name), .count = 1,
                  .last_ms = now, .written_ms = now, .hash = h, .chain = r->bucket[h % RECENT_BUCKETS]};
    r->bucket[h % RECENT_BUCKETS] = slot;
}

/* ---- writer ---- */

/* Write e's count and last occurrence to its Event: 0, or the client's error (the Event is
 * gone: expired or deleted). Either way its repeats are no longer unwritten. */
static int write_count(fl_recorder *r, recent *e, int64_t now)
{
    char ts[FL_TIME_BUF];
    fl_time_format(e->last_ms, false, ts);
    char patch[160];
    int n = snprintf(patch, sizeof patch, "{\"count\":%lld,\"lastTimestamp\":\"%s\"}", (long long)e->count, ts);
    fl_client_error ce;
    int rc = fl_client_patch(r->cp, &EVENTS, e->ns, e->name, FL_PATCH_MERGE, patch, (size_t)n, NULL, NULL, &ce);
    if (e->unwritten)
        r->nunwritten--;
    e->unwritten = false;
    e->written_ms = now;
    return rc;
}

/* Write the counts whose time has come; when closing, all of them until the deadline. */
static void flush_due(fl_recorder *r, bool all, int64_t deadline)
{
    if (!r->nunwritten || (!all && fl_time_now_ms() < r->flush_ms))
        return;
    int64_t now = fl_time_now_ms(), next = INT64_MAX;
    for (size_t i = 0; i < FL_EVENTS_RECENT_MAX && r->nunwritten; i++) {
        recent *e = &r->ring[i];
        if (!e->unwritten || (all && fl_time_now_ms() > deadline))
            continue;
        if (all || e->written_ms + REPEAT_FLUSH_MS <= now) {
            if (write_count(r, e, now))
                e->last_ms = 0; /* gone: its next repeat writes a new Event */
        } else if (e->written_ms + REPEAT_FLUSH_MS < next) {
            next = e->written_ms + REPEAT_FLUSH_MS;
        }
    }
    r->flush_ms = next;
}

static void write_one(fl_recorder *r, pending *p)
{
    int64_t now = fl_time_now_ms();
    char ts[FL_TIME_BUF];
    fl_time_format(now, false, ts);
    fl_client_error ce;
    uint32_t h = fp_hash(p->fingerprint);
    recent *seen = recent_find(r, p->fingerprint, h, now);
    if (seen) {
        seen->count++;
        seen->last_ms = now;
        if (seen->unwritten)
            return; /* already waiting for its write */
        if (now - seen->written_ms < REPEAT_FLUSH_MS) {
            seen->unwritten = true;
            r->nunwritten++;
            if (r->nunwritten == 1 || seen->written_ms + REPEAT_FLUSH_MS < r->flush_ms)
                r->flush_ms = seen->written_ms + REPEAT_FLUSH_MS;
            return;
        }
        if (write_count(r, seen, now) == 0)
            return;
        /* gone (expired, deleted): write a new one below */
    }
    json_t *ev = json_loads(p->event, 0, NULL);
    if (!ev)
        return;
    char name[300];
    const char *objname = fl_json_str(json_object_get(ev, "involvedObject"), "name");
    snprintf(name, sizeof name, "%.200s.%llx%04lx", objname ? objname : "object", (unsigned long long)now,
             r->seq++ & 0xffff);
    json_t *md = json_object_get(ev, "metadata");
    json_object_set_new(md, "name", json_string(name));
    json_object_set_new(ev, "firstTimestamp", json_string(ts));
    json_object_set_new(ev, "lastTimestamp", json_string(ts));
    int rc = fl_client_create(r->cp, &EVENTS, p->ns, ev, NULL, NULL, &ce);
    json_decref(ev);
    if (rc == 0)
        recent_put(r, p->fingerprint, h, p->ns, name, now);
    else
        fl_log_kv(FL_LOG_DEBUG, "events", "writing the event failed", "object", FL_LOG_OBJ("Event", p->ns, name), "err",
                  fl_errmsg(ce.message, rc), NULL);
}

static void pending_free(pending *p)
{
    free(p->ns);
    free(p->fingerprint);
    free(p->event);
    free(p);
}

static void *writer(void *arg)
{
    fl_recorder *r = arg;
    int64_t drain_until = 0;
    pthread_setname_np(pthread_self(), "fl-events");
    /* Events are best effort: on a busy machine the work they report goes first. The
     * in-process client serves a request on the calling thread, so this thread's nice
     * value covers the server's handling of the write too (all but the store's commit). */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WRITER_NICE) != 0)
        fl_log(FL_LOG_DEBUG, "events", "could not lower the writer's priority: %s", strerror(errno));
    for (;;) {
        pthread_mutex_lock(&r->mu);
        /* nunwritten and flush_ms are this thread's own */
        while (!r->head && !r->closing && (!r->nunwritten || fl_time_now_ms() < r->flush_ms)) {
            if (!r->nunwritten) {
                fl_cond_wait_idle(&r->cv, &r->mu, CLOCK_REALTIME); /* idle: its cached blocks go */
                continue;
            }
            struct timespec until = {.tv_sec = (time_t)(r->flush_ms / 1000),
                                     .tv_nsec = (long)(r->flush_ms % 1000) * 1000000L};
            pthread_cond_timedwait(&r->cv, &r->mu, &until);
        }
        /* what the machine is busy with goes first: the head waits (and so does the rest) */
        while (r->head && !r->closing && r->busy && fl_time_mono_ms() < r->head->queued_ms + r->hold_max_ms &&
               r->busy(r->busy_ctx)) {
            int64_t at = fl_time_now_ms() + HOLD_STEP_MS;
            struct timespec until = {.tv_sec = (time_t)(at / 1000), .tv_nsec = (long)(at % 1000) * 1000000L};
            pthread_cond_timedwait(&r->cv, &r->mu, &until);
        }
        pending *p = r->head;
        if (p) {
            r->head = p->next;
            if (!r->head)
                r->tail = NULL;
            r->queued--;
        }
        bool closing = r->closing;
        pthread_mutex_unlock(&r->mu);
        if (closing && !drain_until)
            drain_until = fl_time_now_ms() + 1000;
        flush_due(r, closing && !p, drain_until);
        if (!p && closing)
            break;
        if (!p)
            continue;
        if (closing) {
            /* shutting down: write for at most a second more, then drop the rest */
            if (fl_time_now_ms() > drain_until) {
                pending_free(p);
                continue;
            }
        }
        write_one(r, p);
        pending_free(p);
    }
    return NULL;
}

fl_recorder *fl_recorder_new(fl_client *cp, const char *component)
{
    fl_recorder *r = fl_calloc(1, sizeof *r);
    r->cp = cp;
    r->component = fl_strdup(component);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    for (size_t i = 0; i < RECENT_BUCKETS; i++)
        r->bucket[i] = -1;
    if (pthread_create(&r->thread, NULL, writer, r) != 0) {
        fl_log(FL_LOG_ERROR, "events", "cannot start the writer thread");
        abort();
    }
    return r;
}

void fl_recorder_hold_while(fl_recorder *r, bool (*busy)(void *ctx), void *ctx, int64_t max_ms)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->busy = busy;
    r->busy_ctx = ctx;
    r->hold_max_ms = max_ms;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void fl_recorder_free(fl_recorder *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->closing = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    for (size_t i = 0; i < FL_EVENTS_RECENT_MAX; i++) {
        fl_keep_free(r->ring[i].fingerprint);
        fl_keep_free(r->ring[i].ns);
        fl_keep_free(r->ring[i].name);
    }
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->component);
    free(r);
}

void fl_event(fl_recorder *r, const json_t *obj, const char *type, const char *reason, const char *fmt, ...)
{
    if (!r || !obj)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = fl_vasprintf(fmt, ap);
    va_end(ap);

    const json_t *md = json_object_get(obj, "metadata");
    const char *ons = fl_json_str(md, "namespace"), *oname = fl_json_str(md, "name"), *uid = fl_json_str(md, "uid");
    /* cluster-scoped objects' events live in "default", as Kubernetes puts them */
    const char *ns = ons && *ons ? ons : "default";
    json_t *inv = json_pack("{s:s?, s:s?, s:s?}", "apiVersion", fl_json_str(obj, "apiVersion"), "kind",
                            fl_json_str(obj, "kind"), "name", oname);
    if (ons && *ons)
        json_object_set_new(inv, "namespace", json_string(ons));
    if (uid)
        json_object_set_new(inv, "uid", json_string(uid));
    if (fl_json_str(md, "resourceVersion"))
        json_object_set_new(inv, "resourceVersion", json_string(fl_json_str(md, "resourceVersion")));
    json_t *ev = json_pack("{s:s, s:s, s:{s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:I, s:s}", "apiVersion", "v1", "kind",
                           "Event", "metadata", "namespace", ns, "involvedObject", inv, "reason", reason, "message",
                           msg, "type", type, "source", "component", r->component, "count", (json_int_t)1,
                           "reportingComponent", r->component);

    pending *p = fl_calloc(1, sizeof *p);
    p->ns = fl_strdup(ns);
    p->fingerprint =
        fl_asprintf("%s|%s|%s/%s|%s|%s|%s", uid ? uid : "", fl_json_str(obj, "kind") ? fl_json_str(obj, "kind") : "",
                    ns, oname ? oname : "", type, reason, msg);
    p->event = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    p->queued_ms = fl_time_mono_ms();
    free(msg);

    pthread_mutex_lock(&r->mu);
    if (r->closing || r->queued >= FL_EVENTS_QUEUE_MAX) {
        r->dropped++;
        int64_t now = fl_time_now_ms();
        bool say = now - r->drop_logged_ms >= 60000;
        if (say)
            r->drop_logged_ms = now;
        size_t dropped = r->dropped;
        pthread_mutex_unlock(&r->mu);
        if (say)
            fl_log(FL_LOG_WARN, "events", "event queue full: %zu events dropped so far", dropped);
        pending_free(p);
        return;
    }
    if (r->tail)
        r->tail->next = p;
    else
        r->head = p;
    r->tail = p;
    r->queued++;
    pthread_mutex_unlock(&r->mu);
    pthread_cond_signal(&r->cv); /* after the unlock: the writer wakes into a free lock */
}
