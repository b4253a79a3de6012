/* execution_waiting.c - the Works waiting for delivery, and the first statuses held for them.
 *
 * A Work new, or changed in what delivery reads, waits in x->undelivered until a reconcile has
 * tried to apply it (fl_exec_undelivered_add/_del). While Works wait, a Work's first status
 * waits too (fl_exec_first_status_later): for its own workload's other Works, or for many of
 * any (a burst), so that statuses do not compete with deliveries; released when the last
 * waiting delivery is tried (fl_exec_release_held) or at the cap. The controllers' Events wait
 * the same way (fl_exec_hold_events). What /metrics says of them: the member watches open and
 * the Works waiting (fl_exec_scrape), and each delivery's time from its first enqueue
 * (fl_exec_count_delivery). docs/internals/execution.md tells why. */
#include "controllers/execution_priv.h"

#include <stdlib.h>
#include <string.h>

#include "controllers/events.h"
#include "controllers/metricsstatus.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

/* How long a burst lasts after the last Work joined delivery */
#define BURST_LINGER_MS 2000

/* At each scrape: the member watches open, and the Works waiting for their delivery. */
void fl_exec_scrape(void *ctx)
{
    exec *x = ctx;
    fl_metric_gauge_set("flotilla_execution_member_watches",
                        "Watches the execution controller keeps open on members: one per member, kind and member "
                        "client, shared by every Work that needs it.",
                        NULL, NULL, (double)fl_ws_watches_count(x->watches));
    pthread_mutex_lock(&x->mu);
    size_t waiting = json_object_size(x->undelivered);
    pthread_mutex_unlock(&x->mu);
    fl_metric_gauge_set("flotilla_execution_works_waiting",
                        "Works new or changed whose delivery has not been tried yet or is being tried.", NULL, NULL,
                        (double)waiting);
    fl_exec_scrape_works(x);
}

/* Count a Work joining undelivered (x->mu held). */
static void count_add(exec *x, int64_t now)
{
    if (now - x->window_ms >= 1000) {
        x->adds = 0;
        x->window_ms = now;
    }
    if (++x->adds >= x->burst_works || now < x->burst_until_ms)
        x->burst_until_ms = now + BURST_LINGER_MS;
}

/* The Work at key (of the binding at bkey, NULL for none) waits for its delivery, with a new
 * sequence number (x->mu held). */
void fl_exec_undelivered_add(exec *x, const char *key, const char *bkey)
{
    json_t *had = json_object_get(x->undelivered, key);
    if (!had && bkey) {
        json_t *n = json_object_get(x->undelivered_by, bkey);
        json_object_set_new(x->undelivered_by, bkey, json_integer(n ? json_integer_value(n) + 1 : 1));
    }
    const char *was = had ? json_string_value(json_array_get(had, 1)) : NULL;
    /* its first enqueue's time stays: a delivery is timed from when it was first wanted */
    json_int_t since = had ? json_integer_value(json_array_get(had, 2)) : (json_int_t)fl_time_mono_ns();
    json_object_set_new(x->undelivered, key,
                        json_pack("[I, s?, I]", (json_int_t)x->undelivered_seq++, had ? was : bkey, since));
    count_add(x, fl_time_now_ms());
}

/* The Work at key no longer waits (x->mu held). */
void fl_exec_undelivered_del(exec *x, const char *key)
{
    const char *bkey = json_string_value(json_array_get(json_object_get(x->undelivered, key), 1));
    json_t *n = bkey ? json_object_get(x->undelivered_by, bkey) : NULL;
    if (n && json_integer_value(n) > 1)
        json_object_set_new(x->undelivered_by, bkey, json_integer(json_integer_value(n) - 1));
    else if (n)
        json_object_del(x->undelivered_by, bkey);
    json_object_del(x->undelivered, key);
}

/* How many Works other than the one at key wait for delivery: of any binding (*all), and of
 * its own binding (*same) (x->mu held). */
static void undelivered_others(exec *x, const char *key, size_t *all, size_t *same)
{
    json_t *mine = json_object_get(x->undelivered, key);
    const char *bkey = json_string_value(json_array_get(mine, 1));
    *all = json_object_size(x->undelivered) - (mine ? 1u : 0u);
    json_int_t n = bkey ? json_integer_value(json_object_get(x->undelivered_by, bkey)) : 0;
    *same = (size_t)(n > 0 ? n - (mine ? 1 : 0) : 0);
}

/* Does a first status of the Work at key wait for other deliveries (x->mu held): for its own
 * workload's other Works (one workload to 100 clusters: its deliveries first), or for many of
 * any (a burst)? Not for a few of other workloads' (a failover moving them one by one). */
static bool undelivered_waits(exec *x, const char *key)
{
    size_t all, same;
    undelivered_others(x, key, &all, &same);
    return same > 0 || all >= (size_t)x->hold_undelivered;
}


/* Whether Works are arriving in a burst (x->mu held): burst_works or more joined delivery
 * within a second, and others have joined since, each within BURST_LINGER_MS of the last.
 * Its pipeline pauses at times (the binding controller behind) while more Works are on
 * their way, and the Works waiting for delivery run out meanwhile. */
static bool in_burst(exec *x, int64_t now)
{
    return now < x->burst_until_ms;
}

/* Whether a manifestStatuses entry says its object is Unhealthy (not ready yet). */
static bool any_unhealthy(const json_t *statuses)
{
    size_t i;
    json_t *e;
    json_array_foreach(statuses, i, e) {
        const char *h = fl_json_str(e, "health");
        if (h && !strcmp(h, "Unhealthy"))
            return true;
    }
    return false;
}

/* Does the first status of a Work that has just applied wait? It waits first_status_ms
 * after the first apply, for two reasons. The member reports a new object's status within
 * that time (its controllers see the create at once), so one write carries Applied and
 * the member's status, where it would be two writes in a row. And a new workload goes to
 * many clusters at once: until its Works are delivered, status writes only compete with
 * them for the CPU. So after that time it goes on waiting while other Works wait for their
 * delivery (undelivered): it is held until the last of them is tried (release_held), or
 * first_status_max_ms after its apply. A burst of new workloads is delivered first, and
 * its statuses follow. A status held so, or one due during a burst (in_burst), is written
 * once its objects are not Unhealthy (or at the cap): written when due, a third of a
 * 1,000-Deployment burst's first statuses said "not ready" and were written again a second
 * later, and the bindings' and templates' statuses with them. Only a Work with no
 * conditions yet waits, and only after an apply that succeeded: every later status
 * (a resumed Work's acknowledgement among them) and every failure is written at once.
 * Reconciles before the time that are not deliveries (the member's events for the new
 * objects) are skipped (reconcile); the one at the time writes it. */
bool fl_exec_first_status_later(exec *x, const json_t *work, const json_t *statuses)
{
    if (x->first_status_ms <= 0 || json_object_get(fl_json_obj(work, "status"), "conditions"))
        return false;
    char *key = fl_informer_key(work);
    if (!key)
        return false;
    json_int_t gen = json_integer_value(json_object_get(fl_json_obj(work, "metadata"), "generation"));
    int64_t now = fl_time_now_ms(), wait = 0;
    /* a metrics cluster's Work: no member event will come to write it when its objects are
     * ready (controllers/metricsstatus.h), so once released it is written at once */
    const char *ns = fl_json_meta(work, "namespace");
    size_t plen = strlen(FL_EXECUTION_SPACE_PREFIX);
    bool metrics = ns && !strncmp(ns, FL_EXECUTION_SPACE_PREFIX, plen) && fl_mstatus_owns(ns + plen);
    pthread_mutex_lock(&x->mu);
    json_t *seen = json_object_get(x->first_status, key);
    int64_t cap = seen ? json_integer_value(json_array_get(seen, FS_APPLIED)) + x->first_status_max_ms : 0;
    if (!seen || json_integer_value(json_array_get(seen, FS_GENERATION)) != gen) {
        /* in enum fs_field's order */
        json_object_set_new(x->first_status, key, json_pack("[IIIbb]", gen, now + x->first_status_ms, now, 0, 0));
        wait = x->first_status_ms;
    } else if (json_integer_value(json_array_get(seen, FS_DUE)) > now) {
        wait = json_integer_value(json_array_get(seen, FS_DUE)) - now;
    } else if (undelivered_waits(x, key) && now < cap) {
        /* deliveries first: due at the cap, or sooner when they are done */
        json_array_set_new(seen, FS_DUE, json_integer(cap));
        json_array_set_new(seen, FS_HELD_NOW, json_true());
        json_array_set_new(seen, FS_HELD, json_true());
        wait = cap - now;
    } else if ((json_is_true(json_array_get(seen, FS_HELD)) || in_burst(x, now)) && now < cap &&
               any_unhealthy(statuses) && !metrics) {
        /* released, its objects not ready: the member's events come through (nothing is
         * due, so they are not skipped), and the one that makes them ready writes it */
        wait = cap - now;
    } else {
        json_object_del(x->first_status, key);
    }
    pthread_mutex_unlock(&x->mu);
    /* again on every early pass: the queue keeps the earlier of two times, so this only
     * makes sure the key comes back at the time */
    if (wait > 0)
        fl_workqueue_add_after(x->q, key, wait);
    free(key);
    return wait > 0;
}

/* The last Work waiting for delivery has been tried (x->mu held): the first statuses held
 * for it are due now. Returns their keys, for the caller to queue once it has let go of mu. */
json_t *fl_exec_release_held(exec *x)
{
    json_t *keys = json_array();
    const char *key;
    json_t *seen;
    int64_t now = fl_time_now_ms();
    json_object_foreach(x->first_status, key, seen) {
        if (!json_is_true(json_array_get(seen, FS_HELD_NOW)))
            continue;
        json_array_set_new(seen, FS_DUE, json_integer(now));
        json_array_set_new(seen, FS_HELD_NOW, json_false());
        json_array_append_new(keys, json_string(key));
    }
    return keys;
}

void fl_exec_first_status_forget(exec *x, const char *key)
{
    pthread_mutex_lock(&x->mu);
    json_object_del(x->first_status, key);
    json_object_del(x->written, key);
    pthread_mutex_unlock(&x->mu);
}

/* ---- reading our own status writes ---- */

int fl_exec_write_status(exec *x, const json_t *work, bool applied, const char *reason, const char *message,
                         const char *stopped, json_t *statuses)
{
    int64_t rv = 0;
    int rc = fl_ws_write_status(x->cp, work, applied, reason, message, stopped, statuses, &rv);
    if (rc == 0 && rv > 0) {
        char *key = fl_cat(fl_json_meta(work, "namespace"), "/", fl_json_meta(work, "name"), NULL);
        pthread_mutex_lock(&x->mu);
        json_object_set_new(x->written, key, json_integer(rv));
        pthread_mutex_unlock(&x->mu);
        free(key);
    }
    return rc;
}

bool fl_exec_copy_behind(exec *x, const char *key, const json_t *work)
{
    const char *rvs = fl_json_meta(work, "resourceVersion");
    int64_t rv = rvs ? strtoll(rvs, NULL, 10) : 0;
    pthread_mutex_lock(&x->mu);
    json_t *w = json_object_get(x->written, key);
    bool behind = w && rv < json_integer_value(w);
    if (w && !behind)
        json_object_del(x->written, key);
    pthread_mutex_unlock(&x->mu);
    return behind;
}

/* flotilla_execution_delivery_duration_seconds: from the Work's change first queued to this
 * apply's end in the member, by result. */
void fl_exec_count_delivery(exec *x, const char *key, int rc)
{
    pthread_mutex_lock(&x->mu);
    json_int_t since = json_integer_value(json_array_get(json_object_get(x->undelivered, key), 2));
    pthread_mutex_unlock(&x->mu);
    if (since > 0)
        fl_metric_observe(x->m_delivery[rc != 0], (double)(fl_time_mono_ns() - since) / 1e9);
}

/* fl_recorder_hold_while's busy: Works wait for their delivery (see first_status_later) */
static bool delivering(void *ctx)
{
    exec *x = ctx;
    pthread_mutex_lock(&x->mu);
    bool busy = json_object_size(x->undelivered) > 0;
    pthread_mutex_unlock(&x->mu);
    return busy;
}

void fl_exec_hold_events(fl_exec *x, fl_recorder *r)
{
    fl_recorder_hold_while(r, delivering, x, x->first_status_max_ms);
}
