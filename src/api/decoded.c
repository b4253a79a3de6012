/* decoded.c - the objects last written, kept decoded (contract in api_internal.h).
 *
 * An update starts from the stored object, and decoding its bytes was a sixth of what a
 * write cost. That object was usually written moments before by this process (a controller
 * writes a Work, then its executor the Work's status), so the objects last written are kept
 * decoded, each with the stored blob it was rendered to. The store hands out the blob it
 * holds for a key, and a slot holds a reference to its blob (the address is never reused
 * meanwhile): a stored value that is the slot's blob is the slot's object, exactly. Objects
 * in here are read-only. A small fixed table: a slot is replaced by the next key hashing to it. */
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

static size_t recent_index(const char *key)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % RECENT_SLOTS;
}

/* The decoded object stored as b under key (a new reference, read-only), or NULL. */
static json_t *recent_get(const char *key, const fl_blob *b)
{
    recent_slot *s = &recent[recent_index(key)];
    json_t *obj = NULL;
    pthread_mutex_lock(&recent_mu);
    if (s->blob == b)
        obj = json_incref(s->obj);
    pthread_mutex_unlock(&recent_mu);
    return obj;
}

json_t *fl_api_decoded(const char *key, const fl_blob *b)
{
    json_t *obj = recent_get(key, b);
    return obj ? obj : fl_json_load(b->data, b->len);
}

void fl_api_decoded_keep(const char *key, fl_blob *b, json_t *obj)
{
    recent_slot *s = &recent[recent_index(key)];
    recent_slot old;
    pthread_mutex_lock(&recent_mu);
    old = *s;
    s->blob = fl_blob_ref(b);
    s->obj = json_incref(obj);
    pthread_mutex_unlock(&recent_mu);
    fl_blob_unref(old.blob);
    json_decref(old.obj);
}
