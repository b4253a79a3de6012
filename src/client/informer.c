/* informer.c - list+watch cache of one resource (contract in informer.h).
 *
 * One thread per informer runs the reflector loop: list, then watch from the list's
 * resourceVersion until the stream ends, then either watch again (clean end) or
 * list again (410 Expired, broken stream). The cache is a hash table from key to entry
 * behind a rwlock; only the informer's thread writes it, so it may read the cache
 * without the lock, and takes the write lock only for the moment of a change. Handlers
 * are called after the lock is released, so they can read the cache.
 *
 * An entry holds the object, or in a compact informer its JSON text. A decoded object
 * costs about seven times its text in jansson's nodes, and a control plane caches tens of
 * thousands of Works and member objects, so a compact informer keeps only the text and
 * decodes on demand. Texts are reference-counted blobs, so a reader takes one under the
 * lock and decodes it after. A small table of hot slots, one per key hash, keeps the
 * decoding of the text last written or read there (with a reference to that text, whose
 * address is its identity), so the objects a controller is busy with decode once.
 *
 * In process, a compact entry made from a watch event keeps not even the stored value: the
 * server keeps only the values written last in memory, so a reference here would keep
 * every one. It keeps the object's resourceVersion, and a read that misses the hot slot
 * (which knows the value it decoded by that resourceVersion: a store revision is one
 * object's write) reads the value of that revision from the server's store.
 *
 * A re-list builds a new map from the list, swaps it in whole, and then walks both
 * maps to tell handlers what changed: present only in the new one = add, present in
 * both with a different resourceVersion = update, present only in the old one =
 * delete (with the last state we had; the real final state is gone with the
 * compacted history). Objects whose resourceVersion did not change are silent,
 * unlike client-go's resync, because controllers here requeue on their own timers.
 *
 * One fl_client_cancel covers everything the thread blocks on (list, watch, back-off
 * sleep), so fl_informer_stop only has to fire it and join. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/informer.h"
#include "client/workqueue.h"
#include "core/blob.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/htab.h"
#include "core/json.h"
#include "core/keep.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

/* One cached object: obj, or (compact) its text; or (partial) obj without the informer's
 * partial fields, and text the stored value it was decoded from; or (compact and partial)
 * only that stored value, read without the partial fields; or (shed) the text of what
 * shed_keep kept of it. */
typedef struct centry {
    fl_hnode node;       /* in a cmap, by key */
    json_t *obj;
    fl_blob *text;
    bool stored;         /* text is the server's stored value (in process), not our encoding */
    bool partial;        /* a read lacks the partial fields (obj does, or text is read without
                          * them); text has them */
    bool shed;           /* text is our encoding of what shed_keep kept of the object
                          * (fl_informer_shed): reads answer FL_EEXPIRED */
    bool cold;           /* stored or partial, but text is NULL: the stored value it came from
                          * is read at rv when asked for */
    uint32_t tag;        /* fl_informer_set_tagger's summary of the object (0: none) */
    char *rv;
    char key[];
} centry;

typedef fl_htab cmap; /* centry by key (core/htab.h); a zeroed one is empty */

typedef struct hot_slot {
    fl_blob *text; /* a reference: the address is never reused while the slot holds it */
    json_t *obj;   /* text, decoded */
    int64_t rv;    /* obj's resourceVersion, for cold entries (0 if not a number) */
} hot_slot;

#define HOT_DEFAULT 512

struct fl_informer {
    fl_client *client;
    char *api_version, *resource, *ns, *label, *field;
    int64_t page;
    void (*transform)(json_t *obj);
    const char *const *skip; /* borrowed from the config */
    const char *const *partial; /* borrowed from the config; NULL over HTTP */
    const char **list_skip;     /* with partial: skip and partial, for lists */
    bool bare;                  /* resume_bare, and it can be done */
    bool local;                 /* in process: a list's items come with their stored values */
    bool rv_reads;              /* in process, and stored values can be read by rv */
    int backoff_min, backoff_max, watch_timeout;
    fl_informer_handlers *handlers;
    size_t nhandlers;

    fl_client_cancel *cancel;
    pthread_mutex_t life_mu;     /* start/stop */
    pthread_t thread;
    bool started, joined;

    pthread_rwlock_t lock;       /* cache and rv */
    cmap cache;
    char rv[64];

    bool compact;
    json_t *(*shed_keep)(const json_t *obj); /* fl_informer_config.shed_keep */
    fl_informer_tagger tagger;   /* fl_informer_set_tagger */
    void *tagger_ctx;
    bool no_old;                 /* on_update gets no old object */
    bool silent_first;           /* the first list's adds are not told */
    pthread_mutex_t hot_mu;
    hot_slot *hot;               /* compact: decoded objects by key hash */
    size_t nhot;
    struct fl_informer *resting_next; /* the informers with hot slots (fl_informer_rest_all) */

    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cond;    /* CLOCK_MONOTONIC */
    bool synced, stopped;

    _Atomic int64_t progress_ms; /* the list's last move: fl_informer_list_progress_ms */
    unsigned rng;                /* jitter; used only by the informer's thread */
    size_t events;               /* events applied by the current watch */
    int64_t resume_rev;          /* fl_informer_config.resume_rev */
    int64_t replay_upto;         /* the first watch is replaying (resume_rev, this]: informer thread */
    char *watch_from;            /* fl_informer_config.watch_from */
    _Atomic int64_t told;        /* fl_informer_told_rv */
    atomic_bool incomplete;      /* watching from watch_from, not listed since */
};

/* Every informer with hot slots, for fl_informer_rest_all. */
static pthread_mutex_t resting_mu = PTHREAD_MUTEX_INITIALIZER;
static fl_informer *resting;

/* ---- the cache ---- */

static bool centry_is(const fl_hnode *n, const void *key)
{
    return !strcmp(fl_htab_entry(n, centry, node)->key, key);
}

static centry *cmap_get(cmap *m, const char *key)
{
    return fl_htab_entry(fl_htab_find(m, fl_hash_str(key), centry_is, key), centry, node);
}

/* Put e in place of the entry with its key; returns that entry (now unlinked) or NULL. */
static centry *cmap_put(cmap *m, centry *e)
{
    uint64_t h = fl_hash_str(e->key);
    centry *old = fl_htab_entry(fl_htab_find(m, h, centry_is, e->key), centry, node);
    if (old)
        fl_htab_replace(m, &old->node, &e->node);
    else
        fl_htab_add(m, &e->node, h);
    return old;
}

static centry *cmap_take(cmap *m, const char *key)
{
    centry *old = cmap_get(m, key);
    if (old)
        fl_htab_remove(m, &old->node);
    return old;
}

static void centry_free(centry *e)
{
    if (!e)
        return;
    json_decref(e->obj);
    fl_blob_unref(e->text);
    fl_keep_free(e->rv);
    fl_keep_free(e);
}

static void cmap_clear(cmap *m)
{
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(m, &it); n; n = fl_htab_next(&it))
        centry_free(fl_htab_entry(n, centry, node));
    fl_htab_close(m);
}

/* obj's text, as a blob kept for an entry. */
static fl_blob *encoded(const json_t *obj)
{
    size_t len;
    char *t = fl_json_dumps(obj, &len);
    fl_blob *b = fl_blob_new_kept(t, len);
    free(t);
    return b;
}

/* The entry for obj under key: the object itself, or its text: stored, the server's bytes
 * obj was decoded from (in process; shared, so it costs nothing), else text, our text of it
 * made already (a list's item over HTTP: obj then holds only its key and resourceVersion),
 * else our encoding. light: obj lacks the partial fields (in process), and stored is kept
 * to read them from; a compact informer keeps obj too when it was listed (see
 * fl_informer_config.partial_fields). */
static centry *centry_new(fl_informer *inf, const char *key, json_t *obj, fl_blob *stored, fl_blob *text,
                          bool light, bool listed)
{
    size_t kl = strlen(key);
    centry *e = fl_keep_malloc(sizeof *e + kl + 1); /* entries live as long as their objects */
    memcpy(e->key, key, kl + 1);
    e->rv = fl_keep_strdup(fl_client_object_rv(obj));
    e->obj = NULL;
    e->text = NULL;
    e->shed = false;
    if (inf->tagger && text && !stored) { /* a list's item over HTTP: obj is its name alone */
        json_t *whole = fl_json_load(text->data, text->len);
        e->tag = whole ? inf->tagger(inf->tagger_ctx, whole) : 0;
        json_decref(whole);
    } else {
        e->tag = inf->tagger ? inf->tagger(inf->tagger_ctx, obj) : 0;
    }
    e->partial = light && stored;
    e->stored = inf->compact && stored && !(e->partial && listed);
    /* in process a stored value can be read again by its revision: a partial entry keeps
     * its decoding and no value (what reads it whole, after a restart too, is rare: an
     * update of the object, a status aggregation); a watched compact one keeps nothing. A
     * listed compact one keeps its value: after a restart every reader comes back to each
     * listed object. */
    e->cold = inf->rv_reads && (e->partial || (e->stored && !listed));
    if (e->partial && !e->stored) {
        e->obj = json_incref(obj);
        e->text = e->cold ? NULL : fl_blob_ref(stored);
    } else if (e->cold) {
        /* nothing but rv: the stored value is read again when asked for */
    } else if (e->stored) {
        e->text = fl_blob_ref(stored);
    } else if (inf->compact && text) {
        e->text = fl_blob_ref(text);
    } else if (inf->compact) {
        e->text = encoded(obj);
    } else {
        e->obj = json_incref(obj);
    }
    return e;
}

/* What a reader takes out of an entry under the lock: the object or a text reference. */
typedef struct cref {
    json_t *obj;
    fl_blob *text;
    bool stored, partial, shed, cold;
    int64_t rv; /* cold: the revision to read */
} cref;

static int64_t rv_num(const char *rv)
{
    char *end = NULL;
    long long n = rv ? strtoll(rv, &end, 10) : 0;
    return rv && *rv && !*end && n > 0 ? (int64_t)n : 0;
}

static cref centry_ref(const centry *e)
{
    if (e->partial && !e->stored) /* what is cached is the object to read */
        return (cref){json_incref(e->obj), NULL, false, false, false, false, 0};
    return (cref){json_incref(e->obj), fl_blob_ref(e->text), e->stored, e->partial, e->shed, e->cold,
                  e->cold ? rv_num(e->rv) : 0};
}

static void cref_close(cref r)
{
    json_decref(r.obj);
    fl_blob_unref(r.text);
}

static hot_slot *hot_of(fl_informer *inf, const char *key)
{
    return &inf->hot[fl_hash_str(key) % inf->nhot];
}

/* The hot slot of key now holds obj, the decoding of text (NULL, NULL: nothing). */
static void hot_set(fl_informer *inf, const char *key, fl_blob *text, json_t *obj)
{
    hot_slot *h = hot_of(inf, key);
    int64_t rv = obj ? rv_num(fl_client_object_rv(obj)) : 0;
    pthread_mutex_lock(&inf->hot_mu);
    hot_slot old = *h;
    h->text = fl_blob_ref(text);
    h->obj = json_incref(obj);
    h->rv = rv;
    pthread_mutex_unlock(&inf->hot_mu);
    fl_blob_unref(old.text);
    json_decref(old.obj);
}

/* A stored value as the cache holds it: decoded (by the server, which may still have it
 * decoded) into a view whose top level and metadata are ours, then transformed. partial:
 * without the partial fields (and what the informer skips). */
static json_t *stored_obj(fl_informer *inf, fl_blob *text, bool partial)
{
    json_t *whole = partial ? fl_client_decode_text_skipping(inf->client, text, inf->list_skip)
                            : fl_client_decode_text(inf->client, text);
    if (!whole)
        return NULL;
    json_t *obj = fl_json_meta_own(whole);
    if (inf->transform)
        inf->transform(obj);
    return obj;
}

/* The stored value of key at revision rv (a new reference): 0, or an error (FL_EEXPIRED:
 * the log no longer has it). */
static int stored_at(fl_informer *inf, const char *key, int64_t rv, fl_blob **out)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)rv);
    return fl_client_stored_at(inf->client, inf->api_version, inf->resource, key, num, out);
}

/* The object of a reference taken from an entry under key (a new reference, or NULL if it
 * cannot be decoded, or a cold entry's revision can no longer be read: then *expired, if
 * given, is set); consumes the reference. With textp, a stored value's entry also gives the
 * stored value the object was read from (a new reference). No lock held: decoding takes
 * its time. */
static json_t *cref_obj_text(fl_informer *inf, const char *key, cref r, fl_blob **textp, bool *expired)
{
    if (r.cold) {
        hot_slot *h = hot_of(inf, key);
        json_t *obj = NULL;
        fl_blob *t = NULL;
        pthread_mutex_lock(&inf->hot_mu);
        if (h->text && r.rv && h->rv == r.rv) {
            obj = json_incref(h->obj);
            t = fl_blob_ref(h->text);
        }
        pthread_mutex_unlock(&inf->hot_mu);
        if (obj) {
            if (textp)
                *textp = t;
            else
                fl_blob_unref(t);
            return obj;
        }
        if (stored_at(inf, key, r.rv, &r.text)) {
            if (expired)
                *expired = true;
            return NULL;
        }
    }
    if (!r.text)
        return r.obj;
    if (r.shed) { /* what was kept: for handlers (a delete), never hot */
        json_t *obj = fl_json_load(r.text->data, r.text->len);
        fl_blob_unref(r.text);
        return obj;
    }
    hot_slot *h = hot_of(inf, key);
    pthread_mutex_lock(&inf->hot_mu);
    json_t *obj = h->text == r.text ? json_incref(h->obj) : NULL;
    pthread_mutex_unlock(&inf->hot_mu);
    if (!obj) {
        obj = r.stored ? stored_obj(inf, r.text, r.partial) : fl_json_load(r.text->data, r.text->len);
        if (obj)
            hot_set(inf, key, r.text, obj);
    }
    if (textp && obj && r.stored)
        *textp = r.text;
    else
        fl_blob_unref(r.text);
    return obj;
}

static json_t *cref_obj(fl_informer *inf, const char *key, cref r)
{
    return cref_obj_text(inf, key, r, NULL, NULL);
}

static char *dup_opt(const char *s)
{
    return s && *s ? fl_strdup(s) : NULL;
}

/* The cache key of ns/name (heap). */
static char *key_of(const char *ns, const char *name)
{
    return ns && *ns ? fl_cat(ns, "/", name, NULL) : fl_strdup(name);
}

char *fl_informer_key(const json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!name || !*name)
        return NULL;
    return key_of(ns, name);
}

int fl_informer_new(const fl_informer_config *cfg, fl_informer **out)
{
    *out = NULL;
    if (!cfg || !cfg->client || !cfg->resource.api_version || !cfg->resource.resource)
        return FL_EINVAL;
    fl_informer *inf = fl_calloc(1, sizeof *inf);
    inf->client = cfg->client;
    inf->api_version = fl_strdup(cfg->resource.api_version);
    inf->resource = fl_strdup(cfg->resource.resource);
    inf->ns = dup_opt(cfg->ns);
    inf->label = dup_opt(cfg->label_selector);
    inf->field = dup_opt(cfg->field_selector);
    inf->page = cfg->page_size > 0 ? cfg->page_size : 500;
    inf->transform = cfg->transform;
    /* an informer that drops managedFields need not have them decoded at all */
    inf->skip = cfg->skip_fields                                         ? cfg->skip_fields
                : cfg->transform == fl_informer_drop_managed_fields ? fl_informer_skip_managed_fields
                                                                     : NULL;
    inf->local = fl_client_in_process(cfg->client);
    inf->rv_reads = inf->local && fl_client_has_stored_at(cfg->client);
    if (cfg->partial_fields && *cfg->partial_fields && inf->local) {
        size_t n = 0, k = 0;
        for (const char *const *p = inf->skip; p && *p; p++)
            n++;
        for (const char *const *p = cfg->partial_fields; *p; p++)
            n++;
        inf->list_skip = fl_calloc(n + 1, sizeof *inf->list_skip);
        for (const char *const *p = inf->skip; p && *p; p++)
            inf->list_skip[k++] = *p;
        for (const char *const *p = cfg->partial_fields; *p; p++)
            inf->list_skip[k++] = *p;
        inf->partial = cfg->partial_fields;
    }
    inf->backoff_min = cfg->backoff_min_ms > 0 ? cfg->backoff_min_ms : 200;
    inf->backoff_max = cfg->backoff_max_ms > 0 ? cfg->backoff_max_ms : 30000;
    if (inf->backoff_max < inf->backoff_min)
        inf->backoff_max = inf->backoff_min;
    inf->watch_timeout = cfg->watch_timeout_s;
    inf->cancel = fl_client_cancel_new();
    pthread_mutex_init(&inf->life_mu, NULL);
    pthread_rwlock_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->sync_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&inf->sync_cond, &ca);
    pthread_condattr_destroy(&ca);
    inf->compact = cfg->compact;
    inf->shed_keep = cfg->shed_keep;
    inf->no_old = cfg->no_old_objects;
    inf->silent_first = cfg->silent_first_list;
    inf->resume_rev = cfg->resume_rev;
    inf->bare = cfg->resume_bare && cfg->resume_rev > 0 && cfg->compact && inf->rv_reads;
    inf->watch_from = dup_opt(cfg->watch_from);
    atomic_init(&inf->incomplete, inf->watch_from != NULL);
    pthread_mutex_init(&inf->hot_mu, NULL);
    if (inf->compact) {
        inf->nhot = cfg->hot_objects ? cfg->hot_objects : HOT_DEFAULT;
        inf->hot = fl_calloc(inf->nhot, sizeof *inf->hot);
        pthread_mutex_lock(&resting_mu);
        inf->resting_next = resting;
        resting = inf;
        pthread_mutex_unlock(&resting_mu);
    }
    inf->rng = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)inf;
    if (cfg->handlers.on_add || cfg->handlers.on_update || cfg->handlers.on_delete)
        fl_informer_add_handlers(inf, &cfg->handlers);
    *out = inf;
    return 0;
}

int fl_informer_set_tagger(fl_informer *inf, fl_informer_tagger fn, void *ctx)
{
    pthread_mutex_lock(&inf->life_mu);
    int rc = FL_EINVAL;
    if (!inf->started && !inf->tagger) {
        inf->tagger = fn;
        inf->tagger_ctx = ctx;
        rc = 0;
    }
    pthread_mutex_unlock(&inf->life_mu);
    return rc;
}

void fl_informer_each_tag(fl_informer *inf, const char *ns, void (*fn)(void *ctx, const char *key, uint32_t tag),
                          void *ctx)
{
    size_t nslen = ns ? strlen(ns) : 0;
    pthread_rwlock_rdlock(&inf->lock);
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&inf->cache, &it); n; n = fl_htab_next(&it)) {
        centry *e = fl_htab_entry(n, centry, node);
        if (!ns || (strncmp(e->key, ns, nslen) == 0 && e->key[nslen] == '/'))
            fn(ctx, e->key, e->tag);
    }
    pthread_rwlock_unlock(&inf->lock);
}

int fl_informer_add_handlers(fl_informer *inf, const fl_informer_handlers *h)
{
    pthread_mutex_lock(&inf->life_mu);
    int rc = FL_EINVAL;
    if (!inf->started) {
        inf->handlers = fl_realloc(inf->handlers, (inf->nhandlers + 1) * sizeof *inf->handlers);
        inf->handlers[inf->nhandlers++] = *h;
        rc = 0;
    }
    pthread_mutex_unlock(&inf->life_mu);
    return rc;
}

/* ---- handler dispatch (informer thread, no lock held) ---- */

static void emit_add(fl_informer *inf, json_t *obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_add)
            inf->handlers[i].on_add(inf->handlers[i].ctx, obj);
}

static void emit_update(fl_informer *inf, json_t *old_obj, json_t *new_obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_update)
            inf->handlers[i].on_update(inf->handlers[i].ctx, old_obj, new_obj);
}

static void emit_delete(fl_informer *inf, json_t *obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_delete)
            inf->handlers[i].on_delete(inf->handlers[i].ctx, obj);
}

/* ---- the reflector loop ---- */

static void set_rv_locked(fl_informer *inf, const char *rv)
{
    if (rv && *rv)
        snprintf(inf->rv, sizeof inf->rv, "%s", rv);
}

static void mark_synced(fl_informer *inf)
{
    pthread_mutex_lock(&inf->sync_mu);
    inf->synced = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_mu);
}

/* The object an entry the cache no longer holds had (a new reference), for handlers. Of a
 * cold entry whose revision can no longer be read, what the entry knows: its name,
 * namespace and resourceVersion. */
static json_t *gone_obj(fl_informer *inf, const centry *e)
{
    json_t *obj = cref_obj(inf, e->key, centry_ref(e));
    if (obj || !e->cold)
        return obj;
    const char *slash = strchr(e->key, '/');
    json_t *meta = json_pack("{s:s, s:s}", "name", slash ? slash + 1 : e->key, "resourceVersion", e->rv);
    if (slash)
        json_object_set_new(meta, "namespace", json_stringn(e->key, (size_t)(slash - e->key)));
    return json_pack("{s:s, s:o}", "apiVersion", inf->api_version, "metadata", meta);
}

/* A list as its pages arrive: each item's entry is made then, so that a compact informer
 * never holds the list decoded whole (30,000 member objects are hundreds of MB decoded, and
 * their pages freed at once make glibc consolidate); keys keeps the list's order.
 *
 * The first list into an empty cache whose adds are told is progressive: each page goes
 * into the cache itself and its adds are told at once, not after the last page. Nothing is
 * lost by it (there is nothing to compare with), and handlers start on a long list early:
 * in process a list's pages come as the server decodes them, so after a restart the
 * execution engine starts member watches while 180,000 Works are still being listed.
 * Synced still waits for the end. A list that starts over (its continue token expired)
 * goes on as an ordinary one, compared at its end with what the cache then holds. */
typedef struct listing {
    fl_informer *inf;
    cmap fresh;
    char **keys;
    size_t n, cap;
    bool progressive;
} listing;

static void listing_reset(listing *ls)
{
    cmap_clear(&ls->fresh);
    for (size_t i = 0; i < ls->n; i++)
        free(ls->keys[i]);
    ls->n = 0;
}

/* A page's texts (fl_list_opts.on_page): over HTTP, with page_texts, the items' texts, and
 * the items their keys and resourceVersions; in process, the stored values the items were
 * decoded from. */
typedef struct page_texts {
    fl_blob *const *item;   /* over HTTP */
    fl_blob *const *stored; /* in process */
} page_texts;

static page_texts texts_of(const fl_informer *inf, fl_blob *const *texts)
{
    return inf->local ? (page_texts){NULL, texts} : (page_texts){texts, NULL};
}

/* The entry of an item a first list left bare (fl_list_opts.bare_upto): its revision alone,
 * as for an object a watch brought; a read decodes its stored value at that revision. */
static centry *bare_entry(fl_informer *inf, const char *key, json_t *item)
{
    size_t kl = strlen(key);
    centry *e = fl_keep_calloc(sizeof *e + kl + 1);
    memcpy(e->key, key, kl + 1);
    e->rv = fl_keep_strdup(fl_client_object_rv(item));
    e->tag = inf->tagger ? inf->tagger(inf->tagger_ctx, item) : 0;
    e->partial = inf->partial != NULL;
    e->stored = e->cold = true;
    return e;
}

/* The entry of a listed item. */
static centry *listed_entry(fl_informer *inf, const char *key, json_t *item, page_texts pt, size_t i)
{
    /* in process every item comes with its stored value, but one the list left bare */
    if (inf->bare && pt.stored && !pt.stored[i])
        return bare_entry(inf, key, item);
    return centry_new(inf, key, item, pt.stored ? pt.stored[i] : NULL, pt.item ? pt.item[i] : NULL,
                      inf->partial != NULL, true);
}

/* A progressive list's page: into the cache, then its adds told. */
static void page_into_cache(listing *ls, json_t *items, page_texts pt)
{
    fl_informer *inf = ls->inf;
    fl_blob *const *texts = pt.item;
    size_t n = json_array_size(items) + 1, m = 0;
    centry **old = fl_malloc(n * sizeof *old);
    json_t **objs = fl_malloc(n * sizeof *objs);
    for (size_t i = 0; i + 1 < n; i++) {
        json_t *item = json_array_get(items, i);
        char *key = fl_informer_key(item);
        /* the handlers' object: decoded from its text, or the item, transformed */
        json_t *obj = !key ? NULL : texts ? fl_json_load(texts[i]->data, texts[i]->len) : json_incref(item);
        if (!obj) {
            free(key);
            continue;
        }
        if (inf->transform && !texts)
            inf->transform(obj);
        objs[m] = obj;
        old[m++] = listed_entry(inf, key, item, pt, i); /* put in the cache below */
        free(key);
    }
    pthread_rwlock_wrlock(&inf->lock);
    for (size_t j = 0; j < m; j++)
        old[j] = cmap_put(&inf->cache, old[j]);
    pthread_rwlock_unlock(&inf->lock);
    fl_workqueue_defer_wakes(); /* the handlers' queues wake once for the page */
    for (size_t j = 0; j < m; j++) {
        if (!old[j]) {
            emit_add(inf, objs[j]);
        } else { /* listed twice: the later one stands */
            json_t *p = inf->no_old ? NULL : gone_obj(inf, old[j]);
            emit_update(inf, p, objs[j]);
            json_decref(p);
            centry_free(old[j]);
        }
        json_decref(objs[j]);
    }
    fl_workqueue_flush_wakes();
    free(old);
    free(objs);
}

static void list_page_in(void *ctx, json_t *items, fl_blob *const *texts)
{
    listing *ls = ctx;
    fl_informer *inf = ls->inf;
    atomic_store(&inf->progress_ms, fl_time_mono_ms());
    if (!items) {
        listing_reset(ls);
        ls->progressive = false; /* what it put in the cache is compared at the end */
        return;
    }
    page_texts pt = texts_of(inf, texts);
    if (ls->progressive) {
        page_into_cache(ls, items, pt);
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        if (inf->transform && !pt.item) /* a text is without skip_fields already */
            inf->transform(item);
        char *key = fl_informer_key(item);
        if (!key)
            continue;
        centry *old = cmap_put(&ls->fresh, listed_entry(inf, key, item, pt, i));
        if (old) {
            centry_free(old); /* listed twice: the later one stands, in its first place */
            free(key);
            continue;
        }
        if (ls->n == ls->cap) {
            ls->cap = ls->cap ? ls->cap * 2 : 256;
            ls->keys = fl_realloc(ls->keys, ls->cap * sizeof *ls->keys);
        }
        ls->keys[ls->n++] = key;
    }
}

static void emit_listed(fl_informer *inf, int rc)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].on_listed)
            inf->handlers[i].on_listed(inf->handlers[i].ctx, rc);
}

/* What a listed key (in the cache now) means to handlers: an add, an update (its
 * resourceVersion moved), or nothing. A compact informer's object is decoded only if told. */
static void tell_listed(fl_informer *inf, cmap *old, const char *key, bool silent_adds)
{
    centry *prev = cmap_get(old, key), *e = cmap_get(&inf->cache, key);
    if (prev ? !strcmp(prev->rv, e->rv) : silent_adds)
        return;
    json_t *listed = cref_obj(inf, key, centry_ref(e));
    if (!listed)
        return;
    if (!prev) {
        emit_add(inf, listed);
    } else {
        json_t *p = inf->no_old ? NULL : gone_obj(inf, prev);
        emit_update(inf, p, listed);
        json_decref(p);
    }
    json_decref(listed);
}

/* How long a first list took: a start's long lists are most of a large server's start-up. */
static void log_first_list(fl_informer *inf, int64_t t0)
{
    int64_t ms = fl_time_mono_ms() - t0;
    pthread_rwlock_rdlock(&inf->lock);
    size_t n = fl_htab_count(&inf->cache);
    pthread_rwlock_unlock(&inf->lock);
    fl_log(ms >= 100 ? FL_LOG_INFO : FL_LOG_DEBUG, "informer", "%s%s%s: listed %zu in %lld ms", inf->resource,
           inf->ns ? " in " : "", inf->ns ? inf->ns : "", n, (long long)ms);
}

/* LIST everything and replace the cache, telling handlers the difference. */
static int relist(fl_informer *inf)
{
    fl_gvr r = {inf->api_version, inf->resource};
    listing ls = {.inf = inf};
    fl_list_opts o = {.label_selector = inf->label,
                      .field_selector = inf->field,
                      .limit = inf->page,
                      .skip_fields = inf->list_skip ? inf->list_skip : inf->skip,
                      .on_page = list_page_in,
                      .page_ctx = &ls,
                      .take_pages = true,
                      /* only a first list is decoded bare: it queues nothing for them */
                      .bare_upto = inf->bare && !fl_informer_has_synced(inf) ? inf->resume_rev : 0,
                      /* a compact cache keeps texts: over HTTP, items come as texts, not
                       * decoded, when all the transform would do is leave out skip */
                      .page_texts = inf->compact && (!inf->transform || (inf->transform == fl_informer_drop_managed_fields &&
                                                                         inf->skip == fl_informer_skip_managed_fields))};
    fl_list_result l;
    fl_client_error err;
    bool first = !fl_informer_has_synced(inf);
    int64_t t0 = fl_time_mono_ms();
    /* only this thread writes the cache: no lock to read its size */
    ls.progressive = first && !inf->silent_first && fl_htab_count(&inf->cache) == 0;
    int rc = fl_client_list_all(inf->client, &r, inf->ns, &o, inf->cancel, &l, &err);
    if (rc) {
        listing_reset(&ls);
        free(ls.keys);
        if (rc != FL_ECLOSED) {
            fl_log(FL_LOG_WARN, "informer", "%s: list failed: %s", inf->resource, err.message);
            emit_listed(inf, rc);
        }
        return rc;
    }
    if (ls.progressive) {
        /* everything is in the cache and told already */
        pthread_rwlock_wrlock(&inf->lock);
        set_rv_locked(inf, l.resource_version);
        pthread_rwlock_unlock(&inf->lock);
        listing_reset(&ls);
        free(ls.keys);
        atomic_store(&inf->told, rv_num(l.resource_version));
        fl_list_result_close(&l);
        log_first_list(inf, t0);
        mark_synced(inf);
        emit_listed(inf, 0);
        return 0;
    }
    pthread_rwlock_wrlock(&inf->lock);
    cmap old = inf->cache;
    inf->cache = ls.fresh;
    set_rv_locked(inf, l.resource_version);
    pthread_rwlock_unlock(&inf->lock);

    /* walk in the list's (key) order so handlers see a stable sequence */
    bool silent = first && inf->silent_first;
    fl_workqueue_defer_wakes(); /* the handlers' queues wake once for every 256 */
    for (size_t k = 0; k < ls.n; k++) {
        tell_listed(inf, &old, ls.keys[k], silent);
        free(ls.keys[k]);
        if (k % 256 == 255) {
            fl_workqueue_flush_wakes();
            fl_workqueue_defer_wakes();
        }
    }
    fl_workqueue_flush_wakes();
    free(ls.keys);
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&old, &it); n; n = fl_htab_next(&it)) {
        centry *e = fl_htab_entry(n, centry, node);
        if (!fl_htab_find(&inf->cache, n->hash, centry_is, e->key)) { /* the hash the entry keeps */
            json_t *p = gone_obj(inf, e);
            emit_delete(inf, p);
            json_decref(p);
        }
    }
    cmap_clear(&old);
    atomic_store(&inf->told, rv_num(l.resource_version));
    fl_list_result_close(&l);
    atomic_store(&inf->incomplete, false);
    if (first) {
        log_first_list(inf, t0);
        mark_synced(inf);
    }
    emit_listed(inf, 0);
    return 0;
}

/* Whether a watch may start at watch_from: the server's history has reached it (a list of
 * one item tells its revision). A server whose history is behind it (its store began
 * again) is listed instead; so is one that cannot be asked. */
static bool may_watch_from(fl_informer *inf)
{
    fl_gvr r = {inf->api_version, inf->resource};
    fl_list_opts o = {.label_selector = inf->label, .field_selector = inf->field, .limit = 1,
                      .skip_fields = inf->skip};
    fl_list_result l;
    fl_client_error err;
    if (fl_client_list(inf->client, &r, inf->ns, &o, &l, &err))
        return false;
    bool ok = rv_num(l.resource_version) >= rv_num(inf->watch_from) && rv_num(inf->watch_from) > 0;
    fl_list_result_close(&l);
    return ok;
}

/* An event of a first watch started from resume_rev, up to the first list's revision: the
 * list holds every object's state there, so only a deletion of an object it did not have is
 * news (one re-created since is in the cache, and told as an add). */
static void replayed(fl_informer *inf, int type, json_t *obj)
{
    if (type != FL_WATCH_DELETED)
        return;
    if (inf->transform)
        inf->transform(obj);
    char *key = fl_informer_key(obj);
    if (!key)
        return;
    pthread_rwlock_rdlock(&inf->lock);
    bool have = cmap_get(&inf->cache, key) != NULL;
    pthread_rwlock_unlock(&inf->lock);
    if (!have)
        emit_delete(inf, obj);
    free(key);
}

/* Apply one watch event to the cache, then tell the handlers. */
static bool on_event(void *ctx, int type, json_t *obj, fl_blob *text)
{
    fl_informer *inf = ctx;
    const char *rv = fl_client_object_rv(obj);
    if (inf->replay_upto) {
        if (strtoll(rv ? rv : "", NULL, 10) <= inf->replay_upto) {
            replayed(inf, type, obj);
            return true;
        }
        inf->replay_upto = 0; /* past the list: events as ever */
    }
    if (type == FL_WATCH_BOOKMARK) {
        pthread_rwlock_wrlock(&inf->lock);
        set_rv_locked(inf, rv);
        pthread_rwlock_unlock(&inf->lock);
        atomic_store(&inf->told, rv_num(rv));
        return true;
    }
    if (inf->transform)
        inf->transform(obj);
    char *key = fl_informer_key(obj);
    /* partial: the cache keeps a view without the partial fields (the rest shared), and
     * the stored value to read them from; handlers get the object whole */
    json_t *light = key && type != FL_WATCH_DELETED && inf->partial && text ? fl_json_view_less(obj, inf->partial)
                                                                          : NULL;
    centry *e = key && type != FL_WATCH_DELETED ? centry_new(inf, key, light ? light : obj, text, NULL, light != NULL, false)
                                                : NULL,
           *taken = NULL;
    pthread_rwlock_wrlock(&inf->lock);
    if (key)
        taken = e ? cmap_put(&inf->cache, e) : cmap_take(&inf->cache, key);
    set_rv_locked(inf, rv);
    pthread_rwlock_unlock(&inf->lock);
    inf->events++;
    /* the previous object before the hot slot moves on to the new one */
    json_t *prev = taken && !inf->no_old ? gone_obj(inf, taken) : NULL;
    bool had = inf->no_old ? taken != NULL : prev != NULL;
    if (key && inf->compact) /* what a read of the entry gives (a cold one's text: the event's) */
        hot_set(inf, key, e ? (e->cold ? text : e->text) : NULL, e ? (light ? light : obj) : NULL);
    json_decref(light);
    centry_free(taken);

    if (key) {
        if (type == FL_WATCH_DELETED) {
            /* a delete of something we never had is nothing to report, unless the cache
             * does not hold all there is (watch_from) */
            if (had || atomic_load(&inf->incomplete))
                emit_delete(inf, obj);
        } else if (had) {
            emit_update(inf, prev, obj);
        } else {
            emit_add(inf, obj);
        }
    }
    json_decref(prev);
    free(key);
    atomic_store(&inf->told, rv_num(rv));
    return true;
}

/* Sleep the back-off for the nth consecutive failure: min * 2^n capped, with the lower
 * half jittered so that many informers failing together do not retry together. */
static void backoff(fl_informer *inf, int *failures)
{
    int64_t d = inf->backoff_min;
    for (int i = 0; i < *failures && d < inf->backoff_max; i++)
        d *= 2;
    if (d > inf->backoff_max)
        d = inf->backoff_max;
    int ms = (int)(d / 2 + rand_r(&inf->rng) % (d / 2 + 1));
    if (*failures < 30)
        (*failures)++;
    fl_client_cancel_sleep(inf->cancel, ms);
}

static void *informer_main(void *arg)
{
    fl_informer *inf = arg;
    fl_gvr r = {inf->api_version, inf->resource};
    char tname[16];
    snprintf(tname, sizeof tname, "inf-%s", inf->resource); /* names show in perf and top -H */
    pthread_setname_np(pthread_self(), tname);
    int failures = 0;
    bool need_list = true, listed = false;
    if (inf->watch_from) {
        if (may_watch_from(inf)) {
            pthread_rwlock_wrlock(&inf->lock);
            set_rv_locked(inf, inf->watch_from);
            pthread_rwlock_unlock(&inf->lock);
            atomic_store(&inf->told, rv_num(inf->watch_from));
            need_list = false;
            listed = true; /* resume_rev's replay is for a first list */
        } else {
            fl_log(FL_LOG_INFO, "informer", "%s: cannot watch from %s: listing", inf->resource, inf->watch_from);
        }
        mark_synced(inf);
    }
    while (!fl_client_cancel_fired(inf->cancel)) {
        inf->replay_upto = 0;
        char rv[64];
        if (need_list) {
            int rc = relist(inf);
            if (rc == FL_ECLOSED)
                break;
            if (rc) {
                backoff(inf, &failures);
                continue;
            }
            need_list = false;
            fl_informer_last_rv(inf, rv, sizeof rv);
            int64_t at = strtoll(rv, NULL, 10);
            if (!listed && inf->resume_rev > 0 && at > inf->resume_rev) {
                inf->replay_upto = at; /* the first watch tells what was deleted since resume_rev */
                atomic_store(&inf->told, inf->resume_rev); /* not told yet */
            }
            listed = true;
        }
        if (inf->replay_upto)
            snprintf(rv, sizeof rv, "%lld", (long long)inf->resume_rev);
        else
            fl_informer_last_rv(inf, rv, sizeof rv);
        fl_watch_opts o = {.resource_version = rv, .label_selector = inf->label, .field_selector = inf->field,
                           .allow_bookmarks = true, .skip_fields = inf->skip,
                           .timeout_seconds = inf->watch_timeout > 0 ? inf->watch_timeout
                                                                     : 300 + (int)(rand_r(&inf->rng) % 300)};
        fl_client_error err;
        inf->events = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = fl_client_watch(inf->client, &r, inf->ns, &o, on_event, inf, inf->cancel, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t lasted_ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        if (inf->events > 0)
            failures = 0;
        if (rc == FL_ECLOSED)
            break;
        if (rc == 0 && inf->events == 0 && lasted_ms < 1000) {
            /* a server that ends every watch at once (shutting down, or a proxy) would
             * otherwise have us spin; client-go treats this the same way */
            fl_log(FL_LOG_DEBUG, "informer", "%s: watch closed after %lld ms with no events", inf->resource,
                   (long long)lasted_ms);
            backoff(inf, &failures);
        } else if (rc == 0) {
            failures = 0; /* the server's timeout: carry on from where we are */
        } else if (rc == FL_EEXPIRED) {
            fl_log(FL_LOG_DEBUG, "informer", "%s: resourceVersion %s expired, re-listing", inf->resource, rv);
            need_list = true;
        } else if (err.transport && !inf->replay_upto) {
            /* the connection broke or could not be made (a replica gone, the server
             * restarting): every event up to rv was delivered in order, so watch again from
             * rv, on whichever replica the client reaches; a server that no longer keeps rv
             * answers 410 and we list then */
            fl_log(FL_LOG_WARN, "informer", "%s: watch failed: %s; watching again from %s", inf->resource,
                   err.message, rv);
            backoff(inf, &failures);
        } else {
            fl_log(FL_LOG_WARN, "informer", "%s: watch failed: %s; re-listing", inf->resource, err.message);
            need_list = true;
            backoff(inf, &failures);
        }
    }
    pthread_mutex_lock(&inf->sync_mu);
    inf->stopped = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_mu);
    return NULL;
}

int fl_informer_start(fl_informer *inf)
{
    pthread_mutex_lock(&inf->life_mu);
    int rc = FL_EINVAL;
    if (!inf->started) {
        inf->started = true;
        atomic_store(&inf->progress_ms, fl_time_mono_ms());
        if (pthread_create(&inf->thread, NULL, informer_main, inf) == 0) {
            rc = 0;
        } else {
            inf->joined = true; /* nothing to join */
            rc = FL_EIO;
        }
    }
    pthread_mutex_unlock(&inf->life_mu);
    return rc;
}

void fl_informer_stop(fl_informer *inf)
{
    pthread_mutex_lock(&inf->life_mu);
    fl_client_cancel_fire(inf->cancel);
    if (inf->started && !inf->joined) {
        pthread_join(inf->thread, NULL);
        inf->joined = true;
    }
    if (!inf->started) { /* a stopped informer cannot be started again */
        inf->started = true;
        inf->joined = true;
    }
    pthread_mutex_unlock(&inf->life_mu);
    pthread_mutex_lock(&inf->sync_mu);
    inf->stopped = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_mu);
}

void fl_informer_rest_all(void)
{
    pthread_mutex_lock(&resting_mu);
    for (fl_informer *inf = resting; inf; inf = inf->resting_next) {
        pthread_mutex_lock(&inf->hot_mu);
        for (size_t i = 0; i < inf->nhot; i++) {
            fl_blob_unref(inf->hot[i].text);
            json_decref(inf->hot[i].obj);
            inf->hot[i] = (hot_slot){0};
        }
        pthread_mutex_unlock(&inf->hot_mu);
    }
    pthread_mutex_unlock(&resting_mu);
}

size_t fl_informer_hot_held(fl_informer *inf)
{
    size_t n = 0;
    pthread_mutex_lock(&inf->hot_mu);
    for (size_t i = 0; i < inf->nhot; i++)
        n += inf->hot[i].obj != NULL;
    pthread_mutex_unlock(&inf->hot_mu);
    return n;
}

void fl_informer_free(fl_informer *inf)
{
    if (!inf)
        return;
    fl_informer_stop(inf);
    pthread_mutex_lock(&resting_mu);
    for (fl_informer **pp = &resting; *pp; pp = &(*pp)->resting_next)
        if (*pp == inf) {
            *pp = inf->resting_next;
            break;
        }
    pthread_mutex_unlock(&resting_mu);
    cmap_clear(&inf->cache);
    for (size_t i = 0; i < inf->nhot; i++) {
        fl_blob_unref(inf->hot[i].text);
        json_decref(inf->hot[i].obj);
    }
    free(inf->hot);
    pthread_mutex_destroy(&inf->hot_mu);
    fl_client_cancel_free(inf->cancel);
    pthread_cond_destroy(&inf->sync_cond);
    pthread_mutex_destroy(&inf->sync_mu);
    pthread_rwlock_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->life_mu);
    free(inf->handlers);
    free(inf->list_skip);
    free(inf->api_version);
    free(inf->resource);
    free(inf->ns);
    free(inf->label);
    free(inf->field);
    free(inf->watch_from);
    free(inf);
}

bool fl_informer_bare(const json_t *obj)
{
    return !json_object_get(json_object_get(obj, "metadata"), "uid");
}

int64_t fl_informer_told_rv(fl_informer *inf)
{
    return atomic_load(&inf->told);
}

bool fl_informer_complete(fl_informer *inf)
{
    return !atomic_load(&inf->incomplete);
}

bool fl_informer_has_synced(fl_informer *inf)
{
    pthread_mutex_lock(&inf->sync_mu);
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->sync_mu);
    return s;
}

int fl_informer_wait_synced(fl_informer *inf, int timeout_ms)
{
    struct timespec ts = fl_time_after(CLOCK_MONOTONIC, timeout_ms);
    pthread_mutex_lock(&inf->sync_mu);
    int rc = 0;
    while (!inf->synced && !inf->stopped)
        if (pthread_cond_timedwait(&inf->sync_cond, &inf->sync_mu, &ts) != 0)
            break;
    if (!inf->synced)
        rc = inf->stopped ? FL_ECLOSED : FL_ETIMEDOUT;
    pthread_mutex_unlock(&inf->sync_mu);
    return rc;
}

int fl_informer_get_partial(fl_informer *inf, const char *key, json_t **out, fl_informer_src *src)
{
    *src = (fl_informer_src){0};
    pthread_rwlock_rdlock(&inf->lock);
    centry *e = cmap_get(&inf->cache, key);
    cref r = e ? centry_ref(e) : (cref){0};
    bool partial = e && e->partial;
    if (partial && !e->cold)
        src->text = fl_blob_ref(e->text);
    /* a cold entry that keeps its decoding: the rest is read at its revision if asked for;
     * one that keeps nothing is read now, and that text is the rest */
    bool keeps_nothing = partial && e->cold && e->stored;
    bool keeps_decoding = partial && e->cold && !e->stored;
    if (keeps_decoding)
        src->rv = rv_num(e->rv);
    bool found = e != NULL; /* e is not ours to read once unlocked */
    pthread_rwlock_unlock(&inf->lock);
    *out = NULL;
    if (r.shed) {
        cref_close(r);
        return FL_EEXPIRED;
    }
    bool expired = keeps_decoding && !src->rv; /* no revision to read it at */
    if (expired)
        cref_close(r);
    else if (found)
        *out = cref_obj_text(inf, key, r, keeps_nothing ? &src->text : NULL, &expired);
    if (!*out)
        fl_informer_src_close(src);
    /* not held by a cache that does not hold everything (watch_from): ask the server */
    expired = expired || (!found && atomic_load(&inf->incomplete));
    return *out ? 0 : expired ? FL_EEXPIRED : FL_ENOTFOUND;
}

bool fl_informer_src_partial(const fl_informer_src *src)
{
    return src->text || src->rv;
}

void fl_informer_src_close(fl_informer_src *src)
{
    fl_blob_unref(src->text);
    *src = (fl_informer_src){0};
}

int fl_informer_get_key(fl_informer *inf, const char *key, json_t **out)
{
    fl_informer_src src;
    int rc = fl_informer_get_partial(inf, key, out, &src);
    fl_informer_src_close(&src);
    return rc;
}

json_t *fl_informer_whole(fl_informer *inf, const json_t *obj, const fl_informer_src *src)
{
    if (src->text)
        return stored_obj(inf, src->text, false);
    if (!src->rv)
        return json_incref((json_t *)obj);
    char *key = fl_informer_key(obj);
    fl_blob *text = NULL;
    json_t *whole = key && !stored_at(inf, key, src->rv, &text) ? stored_obj(inf, text, false) : NULL;
    fl_blob_unref(text);
    free(key);
    return whole;
}

int fl_informer_get_whole(fl_informer *inf, const char *key, json_t **out)
{
    fl_informer_src src;
    json_t *obj = NULL;
    *out = NULL;
    int rc = fl_informer_get_partial(inf, key, &obj, &src);
    if (rc)
        return rc;
    *out = fl_informer_whole(inf, obj, &src);
    json_decref(obj);
    bool cold = src.rv != 0;
    fl_informer_src_close(&src);
    return *out ? 0 : cold ? FL_EEXPIRED : FL_EIO;
}

int fl_informer_get(fl_informer *inf, const char *ns, const char *name, json_t **out)
{
    char *key = key_of(ns, name);
    int rc = fl_informer_get_key(inf, key, out);
    free(key);
    return rc;
}

int fl_informer_get_rv(fl_informer *inf, const char *ns, const char *name, char *buf, size_t cap)
{
    char *key = key_of(ns, name);
    pthread_rwlock_rdlock(&inf->lock);
    centry *e = cmap_get(&inf->cache, key);
    snprintf(buf, cap, "%s", e && e->rv ? e->rv : "");
    pthread_rwlock_unlock(&inf->lock);
    free(key);
    return e ? 0 : FL_ENOTFOUND;
}

/* Decoding an object for shed_keep skips the bulk of the kinds we know. */
static const char *const shed_skip[] = {"spec", "status", "data", "binaryData", "stringData",
                                        "metadata.managedFields", NULL};

bool fl_informer_shed(fl_informer *inf, const char *ns, const char *name, const char *rv)
{
    if (!inf->compact || !inf->shed_keep || !rv || !*rv)
        return false;
    char *key = key_of(ns, name);
    pthread_rwlock_rdlock(&inf->lock);
    centry *e = cmap_get(&inf->cache, key);
    bool due = e && !e->shed && !e->partial && e->text && e->rv && !strcmp(e->rv, rv);
    fl_blob *text = due ? fl_blob_ref(e->text) : NULL;
    bool stored = due && e->stored;
    pthread_rwlock_unlock(&inf->lock);
    json_t *obj = !due   ? NULL
                  : stored ? fl_client_decode_text_skipping(inf->client, text, shed_skip)
                           : fl_json_load_skipping(text->data, text->len, shed_skip);
    json_t *kept = obj ? inf->shed_keep(obj) : NULL;
    fl_blob *stub = kept ? encoded(kept) : NULL, *old = NULL;
    json_decref(kept);
    json_decref(obj);
    if (stub) {
        /* only if the entry still holds what was read: an event may have replaced it */
        pthread_rwlock_wrlock(&inf->lock);
        e = cmap_get(&inf->cache, key);
        if (e && e->text == text && !e->shed) {
            old = e->text;
            e->text = stub;
            e->stored = false;
            e->shed = true;
            stub = NULL;
        }
        pthread_rwlock_unlock(&inf->lock);
    }
    if (old) { /* nor does its decoding stay hot */
        hot_slot *h = hot_of(inf, key), was = {0};
        pthread_mutex_lock(&inf->hot_mu);
        if (h->text == old) {
            was = *h;
            *h = (hot_slot){0};
        }
        pthread_mutex_unlock(&inf->hot_mu);
        fl_blob_unref(was.text);
        json_decref(was.obj);
        fl_blob_unref(old);
    }
    fl_blob_unref(stub);
    fl_blob_unref(text);
    free(key);
    return old != NULL;
}

typedef struct listed {
    char *key;
    cref r;
} listed;

static int cmp_listed(const void *a, const void *b)
{
    return strcmp(((const listed *)a)->key, ((const listed *)b)->key);
}

/* References to the cached objects (only namespace ns when not NULL), in key order. */
static listed *take_all(fl_informer *inf, const char *ns, size_t *n)
{
    size_t nslen = ns ? strlen(ns) : 0;
    pthread_rwlock_rdlock(&inf->lock);
    size_t total = fl_htab_count(&inf->cache);
    listed *all = fl_malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    fl_htab_iter it;
    for (fl_hnode *h = fl_htab_first(&inf->cache, &it); h; h = fl_htab_next(&it)) {
        centry *e = fl_htab_entry(h, centry, node);
        if (e->shed || (ns && (strncmp(e->key, ns, nslen) != 0 || e->key[nslen] != '/')))
            continue;
        all[k].key = fl_strdup(e->key);
        all[k++].r = centry_ref(e);
    }
    pthread_rwlock_unlock(&inf->lock);
    qsort(all, k, sizeof *all, cmp_listed);
    *n = k;
    return all;
}

json_t *fl_informer_list(fl_informer *inf, const char *ns)
{
    size_t n;
    listed *all = take_all(inf, ns, &n);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *obj = cref_obj(inf, all[i].key, all[i].r);
        if (obj)
            json_array_append_new(arr, obj);
        free(all[i].key);
    }
    free(all);
    return arr;
}

void fl_informer_each(fl_informer *inf, const char *ns, void (*fn)(void *ctx, json_t *obj), void *ctx)
{
    size_t n;
    listed *all = take_all(inf, ns, &n);
    for (size_t i = 0; i < n; i++) {
        json_t *obj = cref_obj(inf, all[i].key, all[i].r);
        if (obj)
            fn(ctx, obj);
        json_decref(obj);
        free(all[i].key);
    }
    free(all);
}

int64_t fl_informer_list_progress_ms(fl_informer *inf)
{
    return atomic_load(&inf->progress_ms);
}

void fl_informer_last_rv(fl_informer *inf, char *buf, size_t cap)
{
    pthread_rwlock_rdlock(&inf->lock);
    snprintf(buf, cap, "%s", inf->rv);
    pthread_rwlock_unlock(&inf->lock);
}

const char *const fl_informer_skip_managed_fields[] = {"metadata.managedFields", NULL};

void fl_informer_drop_managed_fields(json_t *obj)
{
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

void fl_informer_drop_status(json_t *obj)
{
    fl_informer_drop_managed_fields(obj);
    json_object_del(obj, "status");
}
