/* test_store_lead.c - the controllers' lead among stores on one etcd (store.h, "leading";
 * etcd_lead.h), against a real etcd this test starts, and the lead of a store nobody
 * shares. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "etcdtest.h"
#include "store/etcd_client.h"
#include "store/store.h"

static fl_etcdtest cluster;

static int setup(void **state)
{
    (void)state;
    if (fl_etcdtest_start(&cluster, 1) != 0) {
        fprintf(stderr, "cannot start etcd: %s\n", cluster.error);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fl_etcdtest_stop(&cluster);
    return 0;
}

static fl_store *open_replica(const char *prefix)
{
    fl_store_config cfg = {.etcd_servers = cluster.endpoints, .etcd_prefix = prefix, .compact_interval_ms = -1};
    fl_store *s = NULL;
    assert_int_equal(fl_store_open(&cfg, &s), 0);
    return s;
}

static char *render_text(void *ctx, const fl_blob *cur, int64_t rev, size_t *len)
{
    (void)cur;
    (void)rev;
    char *s = strdup(ctx);
    *len = strlen(s);
    return s;
}

static int put(fl_store *s, const char *key, const char *text)
{
    fl_store_op op = {.type = FL_STORE_CREATE, .key = key, .render = render_text, .ctx = (void *)text};
    int rc = fl_store_write(s, &op);
    if (rc == 0)
        fl_blob_unref(op.value);
    return rc;
}

typedef struct campaign {
    fl_store *s;
    const char *identity;
    volatile int stop;
    int rc;
    int lost; /* atomic */
    pthread_t th;
} campaign;

static void on_lost(void *ctx)
{
    __atomic_store_n(&((campaign *)ctx)->lost, 1, __ATOMIC_RELEASE);
}

static void *run_campaign(void *arg)
{
    campaign *c = arg;
    c->rc = fl_store_lead(c->s, c->identity, 2, &c->stop, on_lost, c);
    return NULL;
}

static bool wait_flag(const int *flag, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
            return true;
        usleep(10000);
    }
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

static void test_a_store_nobody_shares_leads_at_once_and_fences_nothing(void **state)
{
    (void)state;
    fl_store_config cfg = {.memory = true};
    fl_store *s = NULL;
    assert_int_equal(fl_store_open(&cfg, &s), 0);
    assert_false(fl_store_shared(s));
    volatile int stop = 0;
    assert_int_equal(fl_store_lead(s, "me", 5, &stop, NULL, NULL), 0);
    bool was = fl_store_fence_thread(true);
    assert_int_equal(put(s, "/k", "v"), 0);
    fl_store_fence_thread(was);
    fl_store_free(s);
}

static void test_one_leads_the_other_waits_and_takes_over_on_release(void **state)
{
    (void)state;
    fl_store *a = open_replica("/l1/registry"), *b = open_replica("/l1/registry");
    assert_true(fl_store_shared(a));
    campaign ca = {.s = a, .identity = "replica-a"}, cb = {.s = b, .identity = "replica-b"};
    pthread_create(&ca.th, NULL, run_campaign, &ca);
    pthread_join(ca.th, NULL);
    assert_int_equal(ca.rc, 0);
    char *holder = NULL;
    assert_int_equal(fl_store_leader(b, &holder, NULL), 0);
    assert_string_equal(holder, "replica-a");
    free(holder);
    pthread_create(&cb.th, NULL, run_campaign, &cb);
    usleep(500 * 1000);
    /* b still campaigns; a's fenced writes land, b's are refused without reaching etcd */
    bool was = fl_store_fence_thread(true);
    assert_int_equal(put(a, "/k1", "from a"), 0);
    assert_int_equal(put(b, "/k2", "from b"), FL_EFENCED);
    fl_store_fence_thread(was);
    assert_int_equal(put(b, "/k3", "unfenced"), 0); /* an API client's write is not the controllers' */
    long long t0 = fl_etcdtest_now_ms();
    fl_store_lead_release(a);
    pthread_join(cb.th, NULL);
    assert_int_equal(cb.rc, 0);
    assert_true(fl_etcdtest_now_ms() - t0 < 1000); /* a clean stop: at once, not after the lease */
    was = fl_store_fence_thread(true);
    assert_int_equal(put(b, "/k2", "from b"), 0);
    assert_int_equal(put(a, "/k4", "from a, no longer leading"), FL_EFENCED);
    fl_store_fence_thread(was);
    fl_kv kv;
    assert_int_equal(fl_store_get(b, "/k4", &kv), FL_ENOTFOUND);
    fl_store_lead_release(b);
    fl_store_free(a);
    fl_store_free(b);
}

/* A leader whose key vanished while it was not looking (its lease lapsed during a pause, as
 * etcd would let it; here the key is deleted under it) commits no fenced write once another
 * leads, though it still believes it leads, and hears that it lost the lead. */
static void test_a_leader_whose_lease_lapsed_commits_nothing_fenced(void **state)
{
    (void)state;
    fl_store *a = open_replica("/l2/registry"), *b = open_replica("/l2/registry");
    campaign ca = {.s = a, .identity = "replica-a"}, cb = {.s = b, .identity = "replica-b"};
    pthread_create(&ca.th, NULL, run_campaign, &ca);
    pthread_join(ca.th, NULL);
    assert_int_equal(ca.rc, 0);
    pthread_create(&cb.th, NULL, run_campaign, &cb);

    fl_etcd_config ec = {.endpoints = cluster.endpoints};
    fl_etcd *c = NULL;
    char *err = NULL;
    assert_int_equal(fl_etcd_open(&ec, &c, &err), 0);
    fl_etcd_op del = {.type = FL_ETCD_DELETE, .key = "/flotilla/l2/registry/lead"};
    fl_etcd_txn_result res = {0};
    fl_etcd_error e = {0};
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &del, 1, NULL, 0, &res, &e), 0);
    assert_int_equal(res.deleted, 1);
    fl_etcd_txn_result_free(&res);
    pthread_join(cb.th, NULL); /* b sees the key gone and takes it */
    assert_int_equal(cb.rc, 0);

    bool was = fl_store_fence_thread(true);
    assert_int_equal(put(a, "/stale", "from the old leader"), FL_EFENCED);
    assert_int_equal(put(b, "/fresh", "from the new leader"), 0);
    fl_store_fence_thread(was);
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    assert_int_equal(fl_etcd_range(c, "/l2/registry/stale", NULL, 0, 0, true, &kvs, &n, NULL, NULL, &e), 0);
    assert_int_equal(n, 0);
    fl_etcd_kvs_free(kvs, n);
    /* its renewal finds the key another's within a third of the lease (2 s) and a round */
    assert_true(wait_flag(&ca.lost, 3000));
    assert_false(__atomic_load_n(&cb.lost, __ATOMIC_ACQUIRE));
    fl_etcd_free(c);
    fl_store_lead_release(b);
    fl_store_free(a);
    fl_store_free(b);
}

static void test_a_campaign_ends_when_told_to_stop(void **state)
{
    (void)state;
    fl_store *a = open_replica("/l3/registry"), *b = open_replica("/l3/registry");
    campaign ca = {.s = a, .identity = "replica-a"}, cb = {.s = b, .identity = "replica-b"};
    pthread_create(&ca.th, NULL, run_campaign, &ca);
    pthread_join(ca.th, NULL);
    pthread_create(&cb.th, NULL, run_campaign, &cb);
    usleep(300 * 1000);
    cb.stop = 1;
    long long t0 = fl_etcdtest_now_ms();
    pthread_join(cb.th, NULL);
    assert_int_equal(cb.rc, FL_ECLOSED);
    assert_true(fl_etcdtest_now_ms() - t0 < 1000);
    fl_store_lead_release(a);
    fl_store_free(a);
    fl_store_free(b);
}

/* A replica's process ended holding the lead (killed: its lease still runs, 2 s); its next
 * start, under the same identity, takes the lead back at once instead of after the lease,
 * while another identity would still wait. */
static void test_a_restart_under_the_same_identity_takes_its_lead_back_at_once(void **state)
{
    (void)state;
    fl_store *a = open_replica("/l4/registry");
    campaign ca = {.s = a, .identity = "replica-a"};
    pthread_create(&ca.th, NULL, run_campaign, &ca);
    pthread_join(ca.th, NULL);
    assert_int_equal(ca.rc, 0);
    fl_store_free(a); /* no release: the key stays until its lease lapses */

    fl_store *b = open_replica("/l4/registry"), *again = open_replica("/l4/registry");
    campaign cb = {.s = b, .identity = "replica-b"}, cr = {.s = again, .identity = "replica-a"};
    long long t0 = fl_etcdtest_now_ms();
    pthread_create(&cr.th, NULL, run_campaign, &cr);
    pthread_join(cr.th, NULL);
    assert_int_equal(cr.rc, 0);
    assert_true(fl_etcdtest_now_ms() - t0 < 1000);
    char *holder = NULL;
    assert_int_equal(fl_store_leader(again, &holder, NULL), 0);
    assert_string_equal(holder, "replica-a");
    free(holder);
    /* another identity finds it held and waits */
    pthread_create(&cb.th, NULL, run_campaign, &cb);
    usleep(300 * 1000);
    cb.stop = 1;
    pthread_join(cb.th, NULL);
    assert_int_equal(cb.rc, FL_ECLOSED);
    fl_store_lead_release(again);
    fl_store_free(again);
    fl_store_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_store_nobody_shares_leads_at_once_and_fences_nothing),
        cmocka_unit_test(test_one_leads_the_other_waits_and_takes_over_on_release),
        cmocka_unit_test(test_a_leader_whose_lease_lapsed_commits_nothing_fenced),
        cmocka_unit_test(test_a_campaign_ends_when_told_to_stop),
        cmocka_unit_test(test_a_restart_under_the_same_identity_takes_its_lead_back_at_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
