/* server_lead.c - the campaign for the controllers' lead and its Lease (server_lead.h). */
#include "cli/server_lead.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/hash.h"
#include "core/timefmt.h"

static const fl_gvr LEASES = {"coordination.k8s.io/v1", "leases"};

struct fl_lead {
    fl_store *store;
    int ttl_s;
    const volatile int *stop;
    int state; /* atomic: enum fl_lead_state */
    pthread_t thread;
    char identity[300];
    int64_t acquired_ms;
};

/* On a store thread, once: the lease lapsed or was taken. */
static void on_lost(void *ctx)
{
    fl_lead *l = ctx;
    __atomic_store_n(&l->state, FL_LEAD_LOST, __ATOMIC_RELEASE);
}

static void *campaign(void *arg)
{
    fl_lead *l = arg;
    char *holder = NULL;
    int64_t since_ms = 0;
    if (fl_store_leader(l->store, &holder, &since_ms) == 0 && holder)
        fl_log(FL_LOG_INFO, "lead", "%s stands by: the controllers are led by %s (for %lld s)", l->identity, holder,
               (long long)((fl_time_now_ms() - since_ms) / 1000));
    else
        fl_log(FL_LOG_INFO, "lead", "%s campaigns to lead the controllers (lease %d s)", l->identity, l->ttl_s);
    free(holder);
    int rc = fl_store_lead(l->store, l->identity, l->ttl_s, l->stop, on_lost, l);
    if (rc == 0) {
        l->acquired_ms = fl_time_now_ms();
        int expect = FL_LEAD_CAMPAIGNING; /* a loss may already have been said */
        __atomic_compare_exchange_n(&l->state, &expect, FL_LEAD_LEADING, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        fl_log(FL_LOG_INFO, "lead", "%s leads the controllers", l->identity);
    } else {
        __atomic_store_n(&l->state, FL_LEAD_STOPPED, __ATOMIC_RELEASE);
    }
    return NULL;
}

fl_lead *fl_lead_start(fl_store *s, const char *data_dir, int ttl_s, const volatile int *stop)
{
    fl_lead *l = fl_calloc(1, sizeof *l);
    l->store = s;
    l->ttl_s = ttl_s;
    l->stop = stop;
    char host[256] = "localhost", uuid[37];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    /* as client-go's leader election, host_id; the id is the data directory's (its real path
     * hashed), the same at every start of this replica: a start after a kill takes the lead
     * its former process held back at once (the directory's lock says that process is gone) */
    char *real = realpath(data_dir, NULL);
    snprintf(uuid, sizeof uuid, "%016llx", (unsigned long long)fl_hash_str(real ? real : data_dir));
    free(real);
    snprintf(l->identity, sizeof l->identity, "%s_%s", host, uuid);
    if (pthread_create(&l->thread, NULL, campaign, l) != 0) {
        fl_log(FL_LOG_ERROR, "lead", "cannot start the campaign's thread");
        free(l);
        return NULL;
    }
    return l;
}

int fl_lead_state(const fl_lead *l)
{
    return __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);
}

const char *fl_lead_identity(const fl_lead *l)
{
    return l->identity;
}

/* A MicroTime ("2006-01-02T15:04:05.000000Z") of ms since the epoch. */
static void micro_time(int64_t ms, char out[40])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%s.%06lldZ", day, (long long)(ms % 1000) * 1000);
}

int fl_lead_mirror(fl_lead *l, fl_client *cp)
{
    char at[40];
    micro_time(l->acquired_ms ? l->acquired_ms : fl_time_now_ms(), at);
    json_t *cur = NULL;
    fl_client_error ce = {0};
    int rc = fl_client_get(cp, &LEASES, "kube-system", FL_LEAD_LEASE, &cur, &ce);
    if (rc && rc != FL_ENOTFOUND) {
        fl_log(FL_LOG_WARN, "lead", "cannot read Lease kube-system/%s: %s", FL_LEAD_LEASE, fl_errmsg(ce.message, rc));
        return rc;
    }
    json_int_t transitions = 0;
    const char *was = NULL;
    if (cur) {
        json_t *spec = json_object_get(cur, "spec");
        transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
        was = json_string_value(json_object_get(spec, "holderIdentity"));
    }
    if (was && strcmp(was, l->identity))
        transitions++;
    json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:s,s:s,s:I}}", "apiVersion", "coordination.k8s.io/v1",
                            "kind", "Lease", "metadata", "name", FL_LEAD_LEASE, "namespace", "kube-system", "spec",
                            "holderIdentity", l->identity, "leaseDurationSeconds", l->ttl_s, "acquireTime", at,
                            "renewTime", at, "leaseTransitions", transitions);
    if (cur) {
        json_object_set(json_object_get(obj, "metadata"), "resourceVersion",
                        json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
        rc = fl_client_update(cp, &LEASES, "kube-system", obj, NULL, NULL, &ce);
    } else {
        rc = fl_client_create(cp, &LEASES, "kube-system", obj, NULL, NULL, &ce);
    }
    if (rc)
        fl_log(FL_LOG_WARN, "lead", "cannot write Lease kube-system/%s: %s", FL_LEAD_LEASE, fl_errmsg(ce.message, rc));
    json_decref(obj);
    json_decref(cur);
    return rc;
}

void fl_lead_stop(fl_lead *l)
{
    if (!l)
        return;
    pthread_join(l->thread, NULL);
    if (fl_lead_state(l) == FL_LEAD_LEADING) {
        fl_store_lead_release(l->store);
        fl_log(FL_LOG_INFO, "lead", "%s gave up the lead", l->identity);
    }
    free(l);
}
