/* etcd_lead.c - the controllers' lead among replicas on one etcd (etcd_lead.h). */
#include "store/etcd_lead.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"

struct fl_etcd_lead {
    fl_etcd *c;
    char *key;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* wakes the renewing thread early (release, free) */
    bool leading;            /* under mu */
    bool quit;               /* under mu: the renewing thread ends */
    bool renewing;           /* under mu: the thread runs (joined by release/free) */
    pthread_t thread;
    int64_t lease;           /* the lease the key is bound to; 0 none */
    int64_t create_rev;      /* the key's create revision while leading (atomic for readers) */
    int ttl_s;
    void (*lost)(void *ctx);
    void *lost_ctx;
};

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

fl_etcd_lead *fl_etcd_lead_new(fl_etcd *c, const char *key)
{
    fl_etcd_lead *l = fl_calloc(1, sizeof *l);
    l->c = c;
    l->key = fl_strdup(key);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

/* Wait up to ms on the lead's condition; true when told to quit. Under mu. */
static bool wait_quit(fl_etcd_lead *l, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (ms % 1000) * 1000000LL;
    ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    while (!l->quit && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
        ;
    return l->quit;
}

/* Whether the key is still the one this lead created. */
static bool key_is_ours(fl_etcd_lead *l, fl_etcd_error *e)
{
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    if (fl_etcd_range(l->c, l->key, NULL, 0, 1, true, &kvs, &n, NULL, NULL, e) != 0)
        return true; /* unknown: the lease's renewal decides */
    bool ours = n == 1 && kvs[0].create_rev == __atomic_load_n(&l->create_rev, __ATOMIC_ACQUIRE);
    fl_etcd_kvs_free(kvs, n);
    return ours;
}

/* The renewing thread: keep the lease alive every third of its time to live; say the lead
 * is lost when the lease is gone, the key is another's, or no renewal has succeeded for the
 * whole time to live (then etcd may have let it lapse: assume it did). */
static void *renew_main(void *arg)
{
    fl_etcd_lead *l = arg;
    int64_t period = l->ttl_s * 1000LL / 3, last_ok = fl_time_mono_ms();
    const char *why = NULL;
    pthread_mutex_lock(&l->mu);
    while (!wait_quit(l, period)) {
        pthread_mutex_unlock(&l->mu);
        fl_etcd_error e = {0};
        int64_t ttl = 0;
        int rc = fl_etcd_lease_keepalive(l->c, l->lease, &ttl, &e);
        if (rc == 0 && ttl > 0 && key_is_ours(l, &e))
            last_ok = fl_time_mono_ms();
        else if (rc == 0)
            why = ttl > 0 ? "its key is another's" : "its lease is gone";
        else if (fl_time_mono_ms() - last_ok >= l->ttl_s * 1000LL)
            why = "its lease could not be renewed in time";
        if (rc)
            fl_log(FL_LOG_WARN, "lead", "renewing the lead's lease: %s", e.msg);
        pthread_mutex_lock(&l->mu);
        if (why)
            break;
    }
    bool was = l->leading;
    if (why)
        l->leading = false;
    pthread_mutex_unlock(&l->mu);
    if (why && was) {
        fl_log(FL_LOG_ERROR, "lead", "lost the lead of the controllers: %s", why);
        if (l->lost)
            l->lost(l->lost_ctx);
    }
    return NULL;
}

static void stop_renewing(fl_etcd_lead *l);

/* One try to take the key: 1 taken, 0 someone holds it, <0 an error (logged by the caller). */
static int try_take(fl_etcd_lead *l, const char *identity, fl_etcd_error *e)
{
    if (!l->lease && fl_etcd_lease_grant(l->c, l->ttl_s, &l->lease, e) != 0)
        return e->code ? e->code : FL_EIO;
    json_t *v = json_pack("{s:s,s:I}", "holderIdentity", identity, "acquireTime", (json_int_t)fl_time_now_ms());
    size_t len;
    char *val = fl_json_dumps(v, &len);
    json_decref(v);
    fl_etcd_cmp cmp = {.key = l->key, .target = FL_ETCD_CREATE, .result = FL_ETCD_EQUAL, .num = 0};
    fl_etcd_op put = {.type = FL_ETCD_PUT, .key = l->key, .value = val, .value_len = len, .lease = l->lease};
    fl_etcd_txn_result res = {0};
    int rc = fl_etcd_txn(l->c, &cmp, 1, &put, 1, NULL, 0, &res, e);
    free(val);
    if (rc)
        return rc;
    bool taken = res.succeeded;
    if (taken)
        __atomic_store_n(&l->create_rev, res.rev, __ATOMIC_RELEASE);
    fl_etcd_txn_result_free(&res);
    if (!taken) { /* another won: this lease would only lapse unused */
        fl_etcd_error e2 = {0};
        fl_etcd_lease_revoke(l->c, l->lease, &e2);
        l->lease = 0;
        return 0;
    }
    /* a lease granted long ago may have lapsed while another held the key: the key then went
     * with it at once; the renewing thread's first round finds out */
    return 1;
}

/* The key, held under identity (kv read with its value): a former process of this replica
 * (the same identity: store.h's fl_store_lead) died holding it. Delete it, if nobody changed
 * it meanwhile, rather than wait out its lease: 1 deleted, 0 not so, <0 an error. */
static int take_back(fl_etcd_lead *l, const fl_etcd_kv *kv, const char *identity, fl_etcd_error *e)
{
    json_t *v = kv->value ? fl_json_load(kv->value->data, kv->value->len) : NULL;
    const char *h = json_string_value(json_object_get(v, "holderIdentity"));
    bool mine = h && !strcmp(h, identity);
    json_decref(v);
    if (!mine)
        return 0;
    fl_etcd_cmp cmp = {.key = l->key, .target = FL_ETCD_MOD, .result = FL_ETCD_EQUAL, .num = kv->mod_rev};
    fl_etcd_op del = {.type = FL_ETCD_DELETE, .key = l->key};
    fl_etcd_txn_result res = {0};
    int rc = fl_etcd_txn(l->c, &cmp, 1, &del, 1, NULL, 0, &res, e);
    if (rc)
        return rc;
    bool done = res.succeeded;
    fl_etcd_txn_result_free(&res);
    if (done)
        fl_log(FL_LOG_INFO, "lead", "%s held the lead when its process ended: taken back at once, not after its "
                                    "lease", identity);
    return done;
}

static bool seen_delete(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev)
{
    (void)header_rev;
    bool *gone = ctx;
    for (size_t i = 0; i < n; i++)
        if (evs[i].type == FL_ETCD_EV_DELETE)
            *gone = true;
    return !*gone;
}

/* A standby's wait: watch the key after revision rev (what its read saw) until its delete
 * arrives or FL_ETCD_LEAD_WATCH_MS pass. 0 either way (the caller reads the key again), or
 * an error (the caller then waits FL_ETCD_LEAD_POLL_MS): a watch that ended well before its
 * bound without the delete counts as one, so that a member refusing watches at once is not
 * asked again and again without a pause. */
static int wait_gone(fl_etcd_lead *l, int64_t rev, fl_etcd_error *e)
{
    bool gone = false;
    int64_t t0 = fl_time_mono_ms();
    int rc = fl_etcd_watch_for(l->c, l->key, rev + 1, FL_ETCD_LEAD_WATCH_MS, seen_delete, &gone, e);
    if (gone)
        return 0;
    if (fl_time_mono_ms() - t0 < FL_ETCD_LEAD_WATCH_MS / 2) {
        if (!rc)
            snprintf(e->msg, sizeof e->msg, "the watch of the lead key ended at once");
        return rc ? rc : FL_ETIMEDOUT;
    }
    return rc == 0 || rc == FL_ETIMEDOUT ? 0 : rc;
}

int fl_etcd_lead_campaign(fl_etcd_lead *l, const char *identity, int ttl_s, const volatile int *stop,
                          void (*lost)(void *ctx), void *ctx)
{
    /* a campaign after a lost lead: the last renewing thread has ended (it said so), and
     * the lease it renewed is gone or going */
    stop_renewing(l);
    if (l->lease) {
        fl_etcd_error e = {0};
        fl_etcd_lease_revoke(l->c, l->lease, &e);
        l->lease = 0;
    }
    l->ttl_s = ttl_s;
    l->lost = lost;
    l->lost_ctx = ctx;
    int64_t said = 0;
    while (!*stop) {
        fl_etcd_kv *kvs = NULL;
        size_t n = 0;
        fl_etcd_error e = {0};
        int64_t read_rev = 0;
        int rc = fl_etcd_range(l->c, l->key, NULL, 0, 1, false, &kvs, &n, NULL, &read_rev, &e);
        int back = rc == 0 && n == 1 ? take_back(l, &kvs[0], identity, &e) : 0;
        fl_etcd_kvs_free(kvs, n);
        if (back == 1)
            continue; /* taken at once on the next round */
        if (rc == 0 && n == 1 && back == 0 && read_rev > 0) {
            /* another holds it: wait for its delete instead of reading again and again */
            if ((rc = wait_gone(l, read_rev, &e)) == 0)
                continue;
            if (rc == FL_EEXPIRED)
                continue; /* the revision read is compacted already: read again */
        }
        if (rc == 0 && n == 0) {
            rc = try_take(l, identity, &e);
            if (rc == 1) {
                pthread_mutex_lock(&l->mu);
                l->leading = true;
                l->quit = false;
                l->renewing = pthread_create(&l->thread, NULL, renew_main, l) == 0;
                bool ok = l->renewing;
                pthread_mutex_unlock(&l->mu);
                if (!ok) {
                    fl_etcd_lead_release(l);
                    return FL_EIO;
                }
                return 0;
            }
            if (rc < 0 && fl_time_mono_ms() - said > 5000) {
                fl_log(FL_LOG_WARN, "lead", "cannot take the lead: %s", e.msg);
                said = fl_time_mono_ms();
            }
            /* a lease that may have lapsed while waiting is not reused */
            if (rc < 0 && l->lease) {
                fl_etcd_error e2 = {0};
                fl_etcd_lease_revoke(l->c, l->lease, &e2);
                l->lease = 0;
            }
        } else if (rc != 0 && fl_time_mono_ms() - said > 5000) {
            fl_log(FL_LOG_WARN, "lead", "cannot read or watch who leads: %s", e.msg);
            said = fl_time_mono_ms();
        }
        sleep_ms(FL_ETCD_LEAD_POLL_MS);
    }
    if (l->lease) {
        fl_etcd_error e = {0};
        fl_etcd_lease_revoke(l->c, l->lease, &e);
        l->lease = 0;
    }
    return FL_ECLOSED;
}

/* End the renewing thread, if any. */
static void stop_renewing(fl_etcd_lead *l)
{
    pthread_mutex_lock(&l->mu);
    bool running = l->renewing;
    l->quit = true;
    l->renewing = false;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (running)
        pthread_join(l->thread, NULL);
}

void fl_etcd_lead_release(fl_etcd_lead *l)
{
    if (!l)
        return;
    stop_renewing(l);
    pthread_mutex_lock(&l->mu);
    bool was = l->leading;
    l->leading = false;
    pthread_mutex_unlock(&l->mu);
    if (l->lease) {
        fl_etcd_error e = {0};
        if (fl_etcd_lease_revoke(l->c, l->lease, &e) != 0 && was)
            fl_log(FL_LOG_WARN, "lead", "giving the lead up: %s (a standby takes over when the lease lapses)", e.msg);
        l->lease = 0;
    }
}

void fl_etcd_lead_free(fl_etcd_lead *l)
{
    if (!l)
        return;
    stop_renewing(l);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->key);
    free(l);
}

int fl_etcd_lead_holder(fl_etcd_lead *l, char **holder, int64_t *since_ms, fl_etcd_error *e)
{
    *holder = NULL;
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    int rc = fl_etcd_range(l->c, l->key, NULL, 0, 1, false, &kvs, &n, NULL, NULL, e);
    if (rc)
        return rc;
    if (n == 1 && kvs[0].value) {
        json_t *v = fl_json_load(kvs[0].value->data, kvs[0].value->len);
        const char *h = json_string_value(json_object_get(v, "holderIdentity"));
        if (h)
            *holder = fl_strdup(h);
        if (since_ms)
            *since_ms = json_integer_value(json_object_get(v, "acquireTime"));
        json_decref(v);
    }
    fl_etcd_kvs_free(kvs, n);
    return 0;
}

bool fl_etcd_lead_fence(fl_etcd_lead *l, fl_etcd_cmp *cmp)
{
    pthread_mutex_lock(&l->mu);
    bool leading = l->leading;
    pthread_mutex_unlock(&l->mu);
    if (!leading)
        return false;
    *cmp = (fl_etcd_cmp){.key = l->key,
                         .target = FL_ETCD_CREATE,
                         .result = FL_ETCD_EQUAL,
                         .num = __atomic_load_n(&l->create_rev, __ATOMIC_ACQUIRE)};
    return true;
}

const char *fl_etcd_lead_key(const fl_etcd_lead *l)
{
    return l->key;
}

bool fl_etcd_lead_fenced_out(const fl_etcd_lead *l, const fl_etcd_kv *kv)
{
    return !kv || kv->create_rev != __atomic_load_n(&l->create_rev, __ATOMIC_ACQUIRE);
}
