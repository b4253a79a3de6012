/* cancel.c - the cancellation token of client.h (fl_client_cancel_*).
 *
 * A token is a flag, the transfers registered with it while they run (cancel_reg.h), and
 * a condition variable for the sleeps between retries. Firing it sets the flag and wakes
 * all of them; a transfer loop checks the flag on each turn, so a blocked watch ends at
 * once rather than at its next byte or time-out. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "client/cancel_reg.h"
#include "core/mem.h"
#include "core/timefmt.h"

struct fl_client_cancel {
    pthread_mutex_t mu;
    pthread_cond_t cond;      /* CLOCK_MONOTONIC; wakes fl_client_cancel_sleep */
    atomic_bool fired;
    cancel_reg *regs;
};

fl_client_cancel *fl_client_cancel_new(void)
{
    fl_client_cancel *k = fl_calloc(1, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cond, &ca);
    pthread_condattr_destroy(&ca);
    return k;
}

void fl_client_cancel_fire(fl_client_cancel *k)
{
    pthread_mutex_lock(&k->mu);
    atomic_store(&k->fired, true);
    for (cancel_reg *r = k->regs; r; r = r->next) {
        if (r->multi)
            curl_multi_wakeup(r->multi);
        else if (r->wake)
            r->wake(r->arg);
    }
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->mu);
}

bool fl_client_cancel_fired(fl_client_cancel *k)
{
    return k && atomic_load(&k->fired);
}

void fl_client_cancel_reset(fl_client_cancel *k)
{
    atomic_store(&k->fired, false);
}

bool fl_client_cancel_sleep(fl_client_cancel *k, int ms)
{
    struct timespec ts = fl_time_after(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&k->mu);
    while (!atomic_load(&k->fired)) /* a resync's sleep is idle time: the node cache goes */
        if (fl_cond_wait_idle_until(&k->cond, &k->mu, CLOCK_MONOTONIC, &ts) != 0)
            break;
    bool fired = atomic_load(&k->fired);
    pthread_mutex_unlock(&k->mu);
    return fired;
}

void fl_client_cancel_free(fl_client_cancel *k)
{
    if (!k)
        return;
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

void fl_client_cancel_register(fl_client_cancel *k, cancel_reg *r)
{
    pthread_mutex_lock(&k->mu);
    r->next = k->regs;
    k->regs = r;
    pthread_mutex_unlock(&k->mu);
}

void fl_client_cancel_unregister(fl_client_cancel *k, cancel_reg *r)
{
    pthread_mutex_lock(&k->mu);
    for (cancel_reg **pp = &k->regs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    pthread_mutex_unlock(&k->mu);
}
