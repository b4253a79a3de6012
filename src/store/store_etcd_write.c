/* store_etcd_write.c - the etcd backend's writes, and how a value carries its revision.
 *
 * A stored value holds its own revision (the API puts resourceVersion into the JSON it
 * renders), but etcd assigns the revision when the transaction commits, after the value
 * was sent. So a write renders its value with a stand-in revision S, a random 18-digit
 * number, finds S's digits in the bytes (exactly once: a value holding them twice is
 * rendered again with another S) and stores in etcd the bytes without them, after a
 * one-line header that says where they were:
 *
 *     FL1 <offset>\n<the value without S's digits>      or      FL1 -\n<the value>
 *
 * Whoever reads the key back, on any replica, puts the key's mod_revision's digits back
 * at the offset (fl_store_etcd_stamp): every replica sees the same bytes for the same
 * revision, and the bytes say the revision etcd gave them.
 *
 * A write is one transaction compared on the key's revision: a create on "mod_revision
 * == 0", an update or delete on the revision the op was checked against (prev_rev, or
 * the one the cache holds when prev_rev is 0); when the compare fails, the transaction's
 * other branch reads the key, which tells FL_EEXIST, FL_ENOTFOUND or FL_ECONFLICT (a
 * prev_rev of 0 renders again from the newer value and retries). After the commit at
 * revision R the op's render is called again with R (so an object the render keeps gets
 * its real resourceVersion) and `rendered` with that value; then the writer waits until
 * the watcher has applied R, so that it reads its own write, and returns.
 *
 * Deletes: etcd keeps no value with a delete, and a DELETED event shows the value the key
 * had before (prev_kv), stamped with the delete's revision. When the op's final value
 * differs from the current one (a delete that also clears finalizers, say), the final
 * value is put first, compared on the current revision, and then deleted, compared on the
 * put's revision: watchers see an update, then the delete carrying that value, as
 * kube-apiserver does when the last finalizer goes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/random.h"
#include "core/timefmt.h"
#include "store/store_cache.h"
#include "store/store_etcd.h"

#define STANDIN_DIGITS 18
#define STANDIN_TRIES 8
#define WRITE_TRIES 64 /* renders from a newer value when prev_rev is 0 and another writer won */
#define RETRY 1        /* an internal answer: read the state again and go on */

/* ---- the value format ---- */

fl_blob *fl_store_etcd_stamp(const fl_blob *stored, int64_t rev)
{
    if (!stored)
        return fl_blob_new("", 0);
    const char *d = stored->data;
    size_t len = stored->len;
    if (len < 6 || memcmp(d, "FL1 ", 4) != 0)
        return fl_blob_ref((fl_blob *)stored); /* not ours: as it is */
    const char *nl = memchr(d + 4, '\n', len - 4);
    if (!nl)
        return fl_blob_ref((fl_blob *)stored);
    const char *body = nl + 1;
    size_t blen = len - (size_t)(body - d);
    if (d[4] == '-')
        return fl_blob_new(body, blen);
    char *end;
    unsigned long long off = strtoull(d + 4, &end, 10);
    if (end != nl || off > blen)
        return fl_blob_new(body, blen);
    char digits[24];
    int dn = snprintf(digits, sizeof digits, "%" PRId64, rev);
    fl_blob *b = fl_blob_alloc(blen + (size_t)dn);
    memcpy(b->data, body, off);
    memcpy(b->data + off, digits, (size_t)dn);
    memcpy(b->data + off + dn, body + off, blen - off);
    return b;
}

/* v (rendered with the stand-in whose digits are sd) as etcd is to hold it: a heap buffer
 * and its length, or NULL when sd's digits occur more than once. */
static char *encode(const fl_blob *v, const char *sd, size_t *len)
{
    const char *p = memmem(v->data, v->len, sd, STANDIN_DIGITS);
    if (!p) {
        *len = 6 + v->len;
        char *out = fl_malloc(*len + 1);
        memcpy(out, "FL1 -\n", 6);
        memcpy(out + 6, v->data, v->len);
        return out;
    }
    size_t off = (size_t)(p - v->data), rest = v->len - off - STANDIN_DIGITS;
    if (memmem(p + 1, v->len - off - 1, sd, STANDIN_DIGITS))
        return NULL;
    char head[32];
    int hn = snprintf(head, sizeof head, "FL1 %zu\n", off);
    *len = (size_t)hn + off + rest;
    char *out = fl_malloc(*len + 1);
    memcpy(out, head, (size_t)hn);
    memcpy(out + hn, v->data, off);
    memcpy(out + hn + off, p + STANDIN_DIGITS, rest);
    return out;
}

/* The op rendered with a stand-in revision and encoded: 0 with *enc (heap) and *len, or
 * FL_EINVAL (the op renders nothing), FL_EIO (no stand-in would do). */
static int render_standin(fl_store_op *op, const fl_blob *current, char **enc, size_t *len)
{
    for (int i = 0; i < STANDIN_TRIES; i++) {
        int64_t standin = 100000000000000000LL + fl_random_below(900000000000000000LL);
        char sd[24];
        snprintf(sd, sizeof sd, "%" PRId64, standin);
        fl_blob *v = fl_store_render_value(op, current, standin);
        if (!v)
            return FL_EINVAL;
        *enc = encode(v, sd, len);
        fl_blob_unref(v);
        if (*enc)
            return 0;
    }
    fl_log(FL_LOG_ERROR, "store", "etcd: %s: every stand-in revision tried was in the value twice", op->key);
    return FL_EIO;
}

/* ---- transactions ---- */

/* What the key is in etcd: found and its mod_revision. 0 or an FL_E* code. */
static int etcd_key_rev(fl_store_etcd *s, const char *ekey, bool *found, int64_t *mod_rev)
{
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    bool more;
    fl_etcd_error e = { 0 };
    if (fl_etcd_range(s->c, ekey, NULL, 0, 1, true, &kvs, &n, &more, NULL, &e) != 0)
        return fl_store_etcd_fail(s, "reading a key", &e);
    *found = n == 1;
    *mod_rev = n == 1 ? kvs[0].mod_rev : 0;
    fl_etcd_kvs_free(kvs, n);
    return 0;
}

/* Whether a failed transaction's reads show ekey holding exactly value; *rev its revision. */
static bool res_holds(const fl_etcd_txn_result *res, const char *ekey, const char *value, size_t len, int64_t *rev)
{
    for (size_t i = 0; i < res->nkvs; i++) {
        const fl_etcd_kv *kv = &res->kvs[i];
        if (!strcmp(kv->key, ekey) && kv->value && kv->value->len == len && !memcmp(kv->value->data, value, len)) {
            *rev = kv->mod_rev;
            return true;
        }
    }
    return false;
}

/* One transaction on ekey: if its mod_revision is cmp_rev (and, fenced, this process still
 * leads: etcd_lead.h), put value (value NULL: delete the key), else read it (and the lead's
 * key). 0 with *rev the revision written; 1 when the key's compare failed, with *found and
 * *mod_rev what the key is; FL_EFENCED when the lead is not this process's; or an FL_E* code. */
static int txn_one(fl_store_etcd *s, bool fenced, const char *ekey, int64_t cmp_rev, const char *value, size_t len,
                   int64_t *rev, bool *found, int64_t *mod_rev)
{
    fl_etcd_cmp cmp[2] = { { .key = ekey, .target = FL_ETCD_MOD, .result = FL_ETCD_EQUAL, .num = cmp_rev } };
    if (fenced && !fl_etcd_lead_fence(s->lead, &cmp[1]))
        return FL_EFENCED;
    fl_etcd_op then = value ? (fl_etcd_op){ .type = FL_ETCD_PUT, .key = ekey, .value = value, .value_len = len }
                            : (fl_etcd_op){ .type = FL_ETCD_DELETE, .key = ekey };
    /* the lead's key first: an absent key answers nothing, so kvs[0] is the lead's when
     * there are two or the fence is not in question */
    fl_etcd_op otherwise[2] = { { .type = FL_ETCD_GET, .key = fl_etcd_lead_key(s->lead) },
                                { .type = FL_ETCD_GET, .key = ekey } };
    fl_etcd_txn_result res = { 0 };
    fl_etcd_error e = { 0 };
    /* Tried again while its outcome is unknown (a member without a leader holds it): it
     * cannot apply twice, as it compares the key's revision; if an earlier attempt did
     * apply, the compare now fails and the key holds exactly this value (below). */
    bool retried = false;
    int64_t until = fl_time_mono_ms() + FL_ETCD_APPLY_WAIT_MS;
    fl_etcd *wc = s->wc ? s->wc : s->c;
    int64_t attempt_at = fl_time_mono_ms();
    int trc;
    while ((trc = fl_etcd_txn(wc, cmp, fenced ? 2 : 1, &then, 1, fenced ? otherwise : otherwise + 1, fenced ? 2 : 1,
                              &res, &e)) == FL_ETIMEDOUT &&
           e.code == FL_ETIMEDOUT && fl_time_mono_ms() < until && !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        retried = true;
        e = (fl_etcd_error){ 0 };
        /* every member said at once it has no leader: give the election a moment */
        if (fl_time_mono_ms() - attempt_at < FL_ETCD_WRITE_ATTEMPT_MS / 2) {
            const struct timespec pause = { 0, 20 * 1000000L };
            nanosleep(&pause, NULL);
        }
        attempt_at = fl_time_mono_ms();
    }
    if (trc != 0)
        return fl_store_etcd_fail(s, value ? "put" : "delete", &e);
    int rc = 0;
    if (res.succeeded) {
        *rev = res.rev;
    } else if (retried && value && res_holds(&res, ekey, value, len, rev)) {
        rc = 0; /* an attempt that timed out had applied */
    } else {
        /* fenced: the lead's GET came first; the key's own is the one whose key is ekey */
        const fl_etcd_kv *lead = NULL, *kv = NULL;
        for (size_t i = 0; i < res.nkvs; i++) {
            if (!strcmp(res.kvs[i].key, ekey))
                kv = &res.kvs[i];
            else
                lead = &res.kvs[i];
        }
        if (fenced && fl_etcd_lead_fenced_out(s->lead, lead)) {
            rc = FL_EFENCED;
        } else {
            rc = 1;
            *found = kv != NULL;
            *mod_rev = kv ? kv->mod_rev : 0;
        }
    }
    fl_etcd_txn_result_free(&res);
    return rc;
}

/* ---- a write ---- */

/* The key as this replica's cache has it. */
typedef struct cur_state {
    bool present;
    int64_t rev;
    fl_blob *value; /* a reference, or NULL */
} cur_state;

static void read_cur(fl_store_etcd *s, const char *key, cur_state *c)
{
    pthread_rwlock_rdlock(&s->base.lock);
    fl_store_node *n = fl_store_cache_find(&s->base.cache, key);
    c->present = n != NULL;
    c->rev = n ? n->rev : 0;
    c->value = n ? fl_blob_ref(n->value) : NULL;
    pthread_rwlock_unlock(&s->base.lock);
}

/* Check op against the cache, asking etcd when the cache may only lag: 0 with *cmp_rev the
 * revision to compare on (0: absent), RETRY once the cache caught up, or the op's failure. */
static int check(fl_store_etcd *s, const fl_store_op *op, const char *ekey, cur_state *cur, int64_t *cmp_rev)
{
    bool found;
    int64_t mod_rev;
    int rc;
    if (op->type == FL_STORE_CREATE) {
        *cmp_rev = 0;
        if (!cur->present)
            return 0;
        /* gone already, if this replica has not seen the delete yet: the compare decides */
        if ((rc = etcd_key_rev(s, ekey, &found, &mod_rev)) != 0)
            return rc;
        cur->present = false;
        return found ? FL_EEXIST : 0;
    }
    if (!cur->present) {
        if ((rc = etcd_key_rev(s, ekey, &found, &mod_rev)) != 0)
            return rc;
        if (!found)
            return FL_ENOTFOUND;
        rc = fl_store_etcd_wait_applied(s, mod_rev, FL_ETCD_APPLY_WAIT_MS); /* created elsewhere */
        return rc ? rc : RETRY;
    }
    *cmp_rev = cur->rev;
    if (op->prev_rev == 0 || op->prev_rev == cur->rev)
        return 0;
    if (op->prev_rev < cur->rev)
        return FL_ECONFLICT; /* revisions only grow */
    /* the caller saw a revision this replica has not: the compare decides, or (a render that
     * reads the current value) the cache catches up first */
    if (op->no_current) {
        *cmp_rev = op->prev_rev;
        return 0;
    }
    rc = fl_store_etcd_wait_applied(s, op->prev_rev, FL_ETCD_APPLY_WAIT_MS);
    return rc == FL_ETIMEDOUT ? FL_ECONFLICT : rc ? rc : RETRY;
}

/* Whether enc, stamped with rev, is exactly cur's bytes. */
static bool same_value(const char *enc, size_t len, const fl_blob *cur, int64_t rev)
{
    if (!cur)
        return false;
    fl_blob *e = fl_blob_new(enc, len);
    fl_blob *v = fl_store_etcd_stamp(e, rev);
    bool same = v->len == cur->len && memcmp(v->data, cur->data, v->len) == 0;
    fl_blob_unref(v);
    fl_blob_unref(e);
    return same;
}

/* After a compare failed with the key as found/mod_rev: the op's answer, or RETRY. */
static int lost(fl_store_etcd *s, const fl_store_op *op, bool found, int64_t mod_rev)
{
    if (op->type == FL_STORE_CREATE)
        return found ? FL_EEXIST : RETRY;
    if (!found)
        return FL_ENOTFOUND;
    if (op->prev_rev != 0)
        return FL_ECONFLICT;
    int rc = fl_store_etcd_wait_applied(s, mod_rev, FL_ETCD_APPLY_WAIT_MS);
    return rc ? rc : RETRY;
}

/* Commit the encoded value: 0 with *rev, RETRY, or the op's failure. */
static int commit(fl_store_etcd *s, const fl_store_op *op, const char *ekey, int64_t cmp_rev, const cur_state *cur,
                  const char *enc, size_t len, int64_t *rev)
{
    bool found = false;
    int64_t mod_rev = 0;
    int rc;
    if (op->type != FL_STORE_DELETE) {
        rc = txn_one(s, op->fenced, ekey, cmp_rev, enc, len, rev, &found, &mod_rev);
    } else if (cmp_rev == cur->rev && same_value(enc, len, cur->value, cur->rev)) {
        rc = txn_one(s, op->fenced, ekey, cmp_rev, NULL, 0, rev, &found, &mod_rev);
    } else {
        /* the final value first, so that the delete's event carries it */
        int64_t put_rev = 0;
        rc = txn_one(s, op->fenced, ekey, cmp_rev, enc, len, &put_rev, &found, &mod_rev);
        if (rc == 0)
            rc = txn_one(s, op->fenced, ekey, put_rev, NULL, 0, rev, &found, &mod_rev);
    }
    return rc == 1 ? lost(s, op, found, mod_rev) : rc;
}

/* The value rendered with the real revision rev, which the cache takes in place of its own
 * copy of the same bytes (so that the blob `rendered` saw is the one readers get). */
static fl_blob *finish(fl_store_etcd *s, fl_store_op *op, const fl_blob *current, const char *enc, size_t len,
                       int64_t rev)
{
    fl_blob *v = fl_store_render_value(op, current, rev);
    if (!v) { /* it rendered once: stamp what it gave then */
        fl_blob *e = fl_blob_new(enc, len);
        v = fl_store_etcd_stamp(e, rev);
        fl_blob_unref(e);
    }
    if (op->rendered)
        op->rendered(op->ctx, v);
    return v;
}

/* The value to hand back for key written at rev (taking over the reference to v): v, which
 * the cache then holds in place of its copy of the same bytes; or, should the second render
 * have given other bytes than the first (an impure render), the cache's, which every replica
 * holds. */
static fl_blob *adopt(fl_store_etcd *s, const char *key, fl_blob *v, int64_t rev)
{
    pthread_rwlock_wrlock(&s->base.lock);
    fl_store_node *n = fl_store_cache_find(&s->base.cache, key);
    if (n && n->rev == rev && n->value) {
        if (n->value->len == v->len && memcmp(n->value->data, v->data, v->len) == 0) {
            fl_blob_unref(n->value);
            n->value = fl_blob_ref(v);
        } else {
            fl_blob_unref(v);
            v = fl_blob_ref(n->value);
        }
    }
    pthread_rwlock_unlock(&s->base.lock);
    return v;
}

/* A write running, on its caller's stack, in the store's list of them (under s->mu). */
struct fl_store_etcd_inflight {
    struct fl_store_etcd_inflight *prev, *next;
    int64_t start_ms;
};

static bool enter(fl_store_etcd *s, struct fl_store_etcd_inflight *w)
{
    w->start_ms = fl_time_mono_ms();
    w->prev = NULL;
    pthread_mutex_lock(&s->mu);
    bool ok = !s->closing;
    if (ok) {
        s->inflight++;
        w->next = s->writes; /* the newest first: the oldest is the list's tail */
        if (w->next)
            w->next->prev = w;
        s->writes = w;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void leave(fl_store_etcd *s, struct fl_store_etcd_inflight *w)
{
    pthread_mutex_lock(&s->mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->writes = w->next;
    if (w->next)
        w->next->prev = w->prev;
    if (--s->inflight == 0)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int64_t fl_store_etcd_queued_ms(fl_store *bs, int64_t now_ms)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    int64_t oldest = 0;
    pthread_mutex_lock(&s->mu);
    /* writes are few (one per caller thread): walking to the oldest is cheap */
    for (const struct fl_store_etcd_inflight *w = s->writes; w; w = w->next)
        oldest = w->start_ms;
    pthread_mutex_unlock(&s->mu);
    return oldest && now_ms > oldest ? now_ms - oldest : 0;
}

int fl_store_etcd_write(fl_store *bs, fl_store_op *op)
{
    fl_store_etcd *s = (fl_store_etcd *)bs;
    struct fl_store_etcd_inflight self;
    if (!enter(s, &self))
        return FL_ECLOSED;
    char *ekey = fl_store_etcd_key(s, op->key);
    int rc = FL_ECONFLICT;
    for (int attempt = 0; attempt < WRITE_TRIES; attempt++) {
        cur_state cur;
        read_cur(s, op->key, &cur);
        int64_t cmp_rev = 0, rev = 0;
        char *enc = NULL;
        size_t len = 0;
        rc = check(s, op, ekey, &cur, &cmp_rev);
        const fl_blob *current = op->type == FL_STORE_CREATE || op->no_current ? NULL : cur.value;
        if (rc == 0)
            rc = render_standin(op, current, &enc, &len);
        if (rc == 0)
            rc = commit(s, op, ekey, cmp_rev, &cur, enc, len, &rev);
        if (rc == 0) {
            fl_blob *v = finish(s, op, current, enc, len, rev);
            rc = fl_store_etcd_wait_applied(s, rev, FL_ETCD_APPLY_WAIT_MS);
            if (rc == 0) {
                if (op->type != FL_STORE_DELETE)
                    v = adopt(s, op->key, v, rev);
                op->rev = rev;
                op->value = v;
            } else {
                fl_log(FL_LOG_WARN, "store", "etcd: %s committed at revision %" PRId64 " but this replica has not "
                       "seen it yet (%s)", op->key, rev, fl_strerror(rc));
                fl_blob_unref(v);
            }
        }
        free(enc);
        fl_blob_unref(cur.value);
        if (rc != RETRY)
            break;
        rc = FL_ECONFLICT; /* out of tries */
    }
    free(ekey);
    leave(s, &self);
    return rc;
}
