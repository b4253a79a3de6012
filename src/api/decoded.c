/* decoded.c - the objects last written, kept decoded (contract in api_internal.h).
 *
 * An update starts from the stored object, and decoding its bytes was a sixth of what a
 * write cost. That object was usually written moments before by this process (a controller
 * writes a Work, then its executor the Work's status), so the objects last written are kept
 * decoded, each with the stored blob it was rendered to. The store hands out the blob it
 * holds for a key, and a slot holds a reference to its blob (the address is never reused
 * meanwhile): a stored value that is the slot's blob is the slot's object, exactly. Objects
 * in here are read-only. A small fixed table: a slot is replaced by the next blob hashing to
 * it. Slots go by the blob, not the key, so that a holder of a stored value that does not
 * know its key (an in-process informer keeping Works as text) finds its decoding too. */
#include <pthread.h>
#include <stdint.h>

#include "api/api_internal.h"
#include "core/json.h"

#define RECENT_SLOTS 2048

typedef struct recent_slot {
    fl_blob *blob;
    json_t *obj;
} recent_slot;

static pthread_mutex_t recent_mu = PTHREAD_MUTEX_INITIALIZER;
static recent_slot recent[RECENT_SLOTS];

/* Slots by the blob's address: every revision of a key is a blob of its own. */
static size_t recent_index(const fl_blob *b)
{
    uint64_t h = (uint64_t)(uintptr_t)b * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) % RECENT_SLOTS;
}

/* The decoded object stored as b (a new reference, read-only), or NULL. */
static json_t *recent_get(const fl_blob *b)
{
    recent_slot *s = &recent[recent_index(b)];
    json_t *obj = NULL;
    pthread_mutex_lock(&recent_mu);
    if (s->blob == b)
        obj = json_incref(s->obj);
    pthread_mutex_unlock(&recent_mu);
    return obj;
}

json_t *fl_api_decoded(const fl_blob *b)
{
    json_t *obj = recent_get(b);
    return obj ? obj : fl_json_load(b->data, b->len);
}

json_t *fl_api_decoded_skipping(const fl_blob *b, const char *const *skip)
{
    if (!skip || !*skip)
        return fl_api_decoded(b);
    json_t *obj = recent_get(b);
    return obj ? obj : fl_json_load_skipping(b->data, b->len, skip);
}

json_t *fl_api_decoded_without(const fl_blob *b, const char *const *skip)
{
    json_t *obj = recent_get(b);
    if (!obj)
        return fl_json_load_skipping(b->data, b->len, skip);
    json_t *v = fl_json_view_less(obj, skip);
    json_decref(obj);
    return v;
}

fl_api_kept fl_api_decoded_keep(fl_blob *b, json_t *obj)
{
    recent_slot *s = &recent[recent_index(b)];
    recent_slot old;
    pthread_mutex_lock(&recent_mu);
    old = *s;
    s->blob = fl_blob_ref(b);
    s->obj = json_incref(obj);
    pthread_mutex_unlock(&recent_mu);
    return (fl_api_kept){old.blob, old.obj};
}

void fl_api_decoded_forget(void)
{
    for (size_t i = 0; i < RECENT_SLOTS; i++) {
        pthread_mutex_lock(&recent_mu);
        recent_slot old = recent[i];
        recent[i] = (recent_slot){NULL, NULL};
        pthread_mutex_unlock(&recent_mu);
        fl_blob_unref(old.blob);
        json_decref(old.obj);
    }
}

void fl_api_kept_release(fl_api_kept *k)
{
    fl_blob_unref(k->blob);
    json_decref(k->obj);
    k->blob = NULL;
    k->obj = NULL;
}
