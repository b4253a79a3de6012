/* test_etcd_client.c - the etcd client (src/store/etcd_client.h) against a real etcd that the
 * tests start themselves (etcdtest.h): one member for the requests and the watch, a cluster of
 * three for failover. No etcd installed is a failure, not a skip. The last test prints the
 * latency of sequential requests on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "core/err.h"
#include "etcdtest.h"
#include "store/etcd_client.h"

static fl_etcdtest etcd1; /* the single member most tests share (each under its own prefix) */
static fl_etcd *cli;

static int start_one(void **state)
{
    if (fl_etcdtest_start(&etcd1, 1) != 0) {
        fprintf(stderr, "%s\n", etcd1.error);
        return -1; /* cmocka fails the group */
    }
    char *err = NULL;
    fl_etcd_config cfg = {.endpoints = etcd1.endpoints, .timeout_ms = 3000};
    if (fl_etcd_open(&cfg, &cli, &err) != 0) {
        fprintf(stderr, "fl_etcd_open: %s\n", err);
        free(err);
        return -1;
    }
    return 0;
}

static int stop_one(void **state)
{
    fl_etcd_free(cli);
    cli = NULL;
    fl_etcdtest_stop(&etcd1);
    return 0;
}

/* ---- small helpers ---- */

static int64_t put(const char *key, const void *val, size_t len)
{
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = key, .value = val, .value_len = len};
    fl_etcd_txn_result r;
    fl_etcd_error e;
    int rc = fl_etcd_txn(cli, NULL, 0, &op, 1, NULL, 0, &r, &e);
    if (rc)
        fail_msg("put %s: %s", key, e.msg);
    assert_true(r.succeeded);
    int64_t rev = r.rev;
    fl_etcd_txn_result_free(&r);
    return rev;
}

static int64_t puts_(const char *key, const char *val)
{
    return put(key, val, strlen(val));
}

static int64_t del(const char *key)
{
    fl_etcd_op op = {.type = FL_ETCD_DELETE, .key = key};
    fl_etcd_txn_result r;
    fl_etcd_error e;
    if (fl_etcd_txn(cli, NULL, 0, &op, 1, NULL, 0, &r, &e))
        fail_msg("delete %s: %s", key, e.msg);
    int64_t rev = r.rev;
    fl_etcd_txn_result_free(&r);
    return rev;
}

static int64_t current_rev(void)
{
    int64_t rev = 0;
    fl_etcd_error e;
    if (fl_etcd_status(cli, &rev, NULL, &e))
        fail_msg("status: %s", e.msg);
    return rev;
}

/* ---- range ---- */

static void range_of_a_prefix_pages_with_limit_and_more(void **state)
{
    puts_("rp/a", "1");
    puts_("rp/b", "2");
    puts_("rp/c", "3");
    puts_("rp0", "outside"); /* '0' follows '/': past the prefix's end */
    puts_("rp.", "outside too");
    char *end = fl_etcd_prefix_end("rp/");
    assert_string_equal(end, "rp0");

    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    int64_t hrev;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_range(cli, "rp/", end, 0, 2, false, &kvs, &n, &more, &hrev, &e), 0);
    assert_int_equal(n, 2);
    assert_true(more);
    assert_string_equal(kvs[0].key, "rp/a");
    assert_string_equal(kvs[1].key, "rp/b");
    assert_int_equal(kvs[1].value->len, 1);
    assert_string_equal(kvs[1].value->data, "2");
    assert_int_equal(kvs[0].version, 1);
    assert_true(kvs[0].create_rev > 0 && kvs[0].create_rev == kvs[0].mod_rev);
    assert_true(hrev >= kvs[1].mod_rev);
    fl_etcd_kvs_free(kvs, n);

    /* the next page starts just after the last key seen */
    assert_int_equal(fl_etcd_range(cli, "rp/b\x01", end, hrev, 2, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 1);
    assert_false(more);
    assert_string_equal(kvs[0].key, "rp/c");
    fl_etcd_kvs_free(kvs, n);

    /* keys alone, all of them */
    assert_int_equal(fl_etcd_range(cli, "rp/", end, 0, 0, true, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 3);
    assert_null(kvs[2].value);
    assert_false(more);
    fl_etcd_kvs_free(kvs, n);

    /* one key alone, and an absent one */
    assert_int_equal(fl_etcd_range(cli, "rp0", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(kvs[0].value->data, "outside");
    fl_etcd_kvs_free(kvs, n);
    assert_int_equal(fl_etcd_range(cli, "rp/zz", NULL, 0, 0, false, &kvs, &n, &more, &hrev, &e), 0);
    assert_int_equal(n, 0);
    assert_true(hrev > 0);
    fl_etcd_kvs_free(kvs, n);
    free(end);
}

static void prefix_end_of_nothing_is_the_whole_keyspace(void **state)
{
    char *end = fl_etcd_prefix_end("");
    assert_string_equal(end, "");
    free(end);
    end = fl_etcd_prefix_end("a\xff\xff");
    assert_string_equal(end, "b");
    free(end);
    /* "" as range_end is the byte 0: from key to the end of the keyspace */
    puts_("\x7e~whole", "x");
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_range(cli, "\x7e~", "", 0, 0, true, &kvs, &n, &more, NULL, &e), 0);
    assert_true(n >= 1);
    assert_string_equal(kvs[0].key, "\x7e~whole");
    fl_etcd_kvs_free(kvs, n);
}

static void range_at_an_old_revision_sees_the_old_value(void **state)
{
    int64_t r1 = puts_("rv/k", "one");
    int64_t r2 = puts_("rv/k", "two");
    assert_true(r2 > r1);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    int64_t hrev;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_range(cli, "rv/k", NULL, r1, 0, false, &kvs, &n, &more, &hrev, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(kvs[0].value->data, "one");
    assert_int_equal(kvs[0].mod_rev, r1);
    assert_true(hrev >= r2); /* the header is the store's revision, not the one read at */
    fl_etcd_kvs_free(kvs, n);
    assert_int_equal(fl_etcd_range(cli, "rv/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_string_equal(kvs[0].value->data, "two");
    assert_int_equal(kvs[0].version, 2);
    fl_etcd_kvs_free(kvs, n);

    /* a revision not written yet is the caller's mistake */
    assert_int_equal(fl_etcd_range(cli, "rv/k", NULL, hrev + 1000, 0, false, &kvs, &n, &more, NULL, &e), FL_EINVAL);
    assert_non_null(strstr(e.msg, "future revision"));
    assert_null(kvs);
}

static void range_at_a_compacted_revision_is_expired(void **state)
{
    int64_t r1 = puts_("rc/k", "old");
    int64_t r2 = puts_("rc/k", "new");
    fl_etcd_error e;
    assert_int_equal(fl_etcd_compact(cli, r2, true, &e), 0);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(cli, "rc/k", NULL, r1, 0, false, &kvs, &n, &more, NULL, &e), FL_EEXPIRED);
    assert_int_equal(e.compact_rev, r2);
    assert_non_null(strstr(e.msg, etcd1.endpoint[0]));
    assert_non_null(strstr(e.msg, "compacted"));
    assert_null(strchr(e.msg, '\n'));
    assert_int_equal(n, 0);
    /* compacting again to the same place says so too */
    assert_int_equal(fl_etcd_compact(cli, r1, false, &e), FL_EEXPIRED);
}

/* ---- txn ---- */

static void txn_compares_on_mod_create_and_version(void **state)
{
    fl_etcd_txn_result r;
    fl_etcd_error e;
    /* create if absent: CREATE == 0 */
    fl_etcd_cmp absent = {.key = "tx/k", .target = FL_ETCD_CREATE, .result = FL_ETCD_EQUAL, .num = 0};
    fl_etcd_op put1 = {.type = FL_ETCD_PUT, .key = "tx/k", .value = "v1", .value_len = 2};
    fl_etcd_op get = {.type = FL_ETCD_GET, .key = "tx/k"};
    assert_int_equal(fl_etcd_txn(cli, &absent, 1, &put1, 1, &get, 1, &r, &e), 0);
    assert_true(r.succeeded);
    assert_int_equal(r.nkvs, 0);
    int64_t created = r.rev;
    fl_etcd_txn_result_free(&r);

    /* again: the compare fails and the failure branch's GET shows what is there */
    assert_int_equal(fl_etcd_txn(cli, &absent, 1, &put1, 1, &get, 1, &r, &e), 0);
    assert_false(r.succeeded);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.kvs[0].key, "tx/k");
    assert_string_equal(r.kvs[0].value->data, "v1");
    assert_int_equal(r.kvs[0].mod_rev, created);
    assert_int_equal(r.kvs[0].create_rev, created);
    fl_etcd_txn_result_free(&r);
    assert_null(r.kvs);

    /* compare-and-swap on MOD: the right revision wins, a stale one loses */
    fl_etcd_cmp cas = {.key = "tx/k", .target = FL_ETCD_MOD, .result = FL_ETCD_EQUAL, .num = created};
    fl_etcd_op put2 = {.type = FL_ETCD_PUT, .key = "tx/k", .value = "v2", .value_len = 2};
    assert_int_equal(fl_etcd_txn(cli, &cas, 1, &put2, 1, &get, 1, &r, &e), 0);
    assert_true(r.succeeded);
    int64_t second = r.rev;
    assert_true(second > created);
    fl_etcd_txn_result_free(&r);
    assert_int_equal(fl_etcd_txn(cli, &cas, 1, &put2, 1, &get, 1, &r, &e), 0);
    assert_false(r.succeeded);
    assert_int_equal(r.kvs[0].mod_rev, second);
    assert_int_equal(r.kvs[0].version, 2);
    fl_etcd_txn_result_free(&r);

    /* VERSION, LESS/GREATER/NOT_EQUAL, and VALUE; several compares must all hold */
    fl_etcd_cmp many[] = {
        {.key = "tx/k", .target = FL_ETCD_VERSION, .result = FL_ETCD_EQUAL, .num = 2},
        {.key = "tx/k", .target = FL_ETCD_MOD, .result = FL_ETCD_GREATER, .num = created},
        {.key = "tx/k", .target = FL_ETCD_CREATE, .result = FL_ETCD_LESS, .num = second},
        {.key = "tx/k", .target = FL_ETCD_VALUE, .result = FL_ETCD_EQUAL, .value = "v2", .value_len = 2},
        {.key = "tx/k", .target = FL_ETCD_VERSION, .result = FL_ETCD_NOT_EQUAL, .num = 7},
    };
    assert_int_equal(fl_etcd_txn(cli, many, 5, &get, 1, NULL, 0, &r, &e), 0);
    assert_true(r.succeeded);
    assert_int_equal(r.nkvs, 1); /* the success branch's GET */
    fl_etcd_txn_result_free(&r);
    many[0].num = 3;
    assert_int_equal(fl_etcd_txn(cli, many, 5, &get, 1, NULL, 0, &r, &e), 0);
    assert_false(r.succeeded);
    assert_int_equal(r.nkvs, 0);
    fl_etcd_txn_result_free(&r);

    /* a malformed request never leaves the process */
    fl_etcd_cmp bad = {.key = "tx/k", .target = 9, .result = FL_ETCD_EQUAL};
    assert_int_equal(fl_etcd_txn(cli, &bad, 1, &put2, 1, NULL, 0, &r, &e), FL_EINVAL);
    /* two ops on one key: etcd refuses it as malformed */
    fl_etcd_op twice[] = {put1, put2};
    assert_int_equal(fl_etcd_txn(cli, NULL, 0, twice, 2, NULL, 0, &r, &e), FL_EINVAL);
    assert_non_null(strstr(e.msg, "duplicate key"));
}

static void txn_deletes_report_how_many_went(void **state)
{
    puts_("td/a", "1");
    puts_("td/b", "2");
    fl_etcd_op ops[] = {{.type = FL_ETCD_DELETE, .key = "td/a"}, {.type = FL_ETCD_DELETE, .key = "td/b"},
                        {.type = FL_ETCD_DELETE, .key = "td/absent"}};
    fl_etcd_txn_result r;
    fl_etcd_error e;
    int64_t before = current_rev();
    assert_int_equal(fl_etcd_txn(cli, NULL, 0, ops, 3, NULL, 0, &r, &e), 0);
    assert_true(r.succeeded);
    assert_int_equal(r.deleted, 2);
    assert_int_equal(r.rev, before + 1); /* one transaction, one revision */
    fl_etcd_txn_result_free(&r);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    char *end = fl_etcd_prefix_end("td/");
    assert_int_equal(fl_etcd_range(cli, "td/", end, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 0);
    free(end);
    /* deleting nothing writes nothing */
    assert_int_equal(fl_etcd_txn(cli, NULL, 0, &ops[2], 1, NULL, 0, &r, &e), 0);
    assert_int_equal(r.deleted, 0);
    assert_int_equal(r.rev, before + 1);
    fl_etcd_txn_result_free(&r);
}

static void binary_values_with_nuls_round_trip(void **state)
{
    static const char bin[] = "a\0b\0\xff\xfe\x01\n\"\\}";
    size_t len = sizeof bin - 1;
    put("bin/k", bin, len);
    put("bin/empty", "", 0);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_range(cli, "bin/", "bin0", 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(kvs[0].key, "bin/empty");
    assert_non_null(kvs[0].value);
    assert_int_equal(kvs[0].value->len, 0);
    assert_int_equal(kvs[1].value->len, len);
    assert_memory_equal(kvs[1].value->data, bin, len);
    assert_int_equal(kvs[1].value->data[len], 0);
    fl_etcd_kvs_free(kvs, n);
    /* a VALUE compare against binary bytes */
    fl_etcd_cmp cmp = {.key = "bin/k", .target = FL_ETCD_VALUE, .result = FL_ETCD_EQUAL, .value = bin, .value_len = len};
    fl_etcd_txn_result r;
    assert_int_equal(fl_etcd_txn(cli, &cmp, 1, NULL, 0, NULL, 0, &r, &e), 0);
    assert_true(r.succeeded);
    fl_etcd_txn_result_free(&r);
}

static void a_request_too_large_is_etoobig(void **state)
{
    /* over etcd's --max-request-bytes (1.5 MiB by default), and over gRPC's own limit */
    static const size_t sizes[] = {(size_t)1600 << 10, (size_t)3 << 20};
    static const char *const says[] = {"request is too large", "larger than max"};
    for (int i = 0; i < 2; i++) {
        char *big = calloc(1, sizes[i]);
        fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "big/k", .value = big, .value_len = sizes[i]};
        fl_etcd_txn_result r;
        fl_etcd_error e;
        assert_int_equal(fl_etcd_txn(cli, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ETOOBIG);
        if (!strstr(e.msg, says[i]))
            fail_msg("%zu bytes: %s", sizes[i], e.msg);
        free(big);
    }
}

/* ---- watch ---- */

typedef struct seen {
    fl_etcd_event ev[16];     /* copies: type, keys, values, revisions */
    char keys[16][32], vals[16][32], prevs[16][32];
    size_t n;
    size_t calls;
    int64_t call_of[16];      /* which call delivered each event */
    size_t want;              /* stop after this many events */
    int64_t last_header;
} seen;

static bool collect(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev)
{
    seen *s = ctx;
    s->calls++;
    s->last_header = header_rev;
    for (size_t i = 0; i < n && s->n < 16; i++) {
        size_t k = s->n++;
        s->ev[k].type = evs[i].type;
        s->ev[k].kv.mod_rev = evs[i].kv.mod_rev;
        s->call_of[k] = (int64_t)s->calls;
        snprintf(s->keys[k], 32, "%s", evs[i].kv.key);
        snprintf(s->vals[k], 32, "%s", evs[i].kv.value ? evs[i].kv.value->data : "(none)");
        snprintf(s->prevs[k], 32, "%s", evs[i].prev.key ? evs[i].prev.value->data : "(none)");
        assert_true(evs[i].kv.mod_rev <= header_rev);
    }
    return s->n < s->want;
}

static void watch_from_a_revision_sees_puts_and_deletes_in_order(void **state)
{
    int64_t from = puts_("wo/a", "a1");
    puts_("wo/x", "outside"); /* not under the watched prefix */
    fl_etcd_op two[] = {{.type = FL_ETCD_PUT, .key = "wo/a", .value = "a2", .value_len = 2},
                        {.type = FL_ETCD_PUT, .key = "wo/b", .value = "b1", .value_len = 2}};
    fl_etcd_txn_result r;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_txn(cli, NULL, 0, two, 2, NULL, 0, &r, &e), 0);
    int64_t both = r.rev;
    fl_etcd_txn_result_free(&r);
    int64_t gone = del("wo/a");

    seen s = {.want = 4};
    bool stop = false;
    assert_int_equal(fl_etcd_watch(cli, "wo/", "wo/x", from, true, false, collect, &s, &stop, &e), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.ev[0].type, FL_ETCD_EV_PUT);
    assert_string_equal(s.keys[0], "wo/a");
    assert_string_equal(s.vals[0], "a1");
    assert_string_equal(s.prevs[0], "(none)");
    assert_int_equal(s.ev[0].kv.mod_rev, from);
    /* the two puts of one transaction: one revision, one call */
    assert_string_equal(s.keys[1], "wo/a");
    assert_string_equal(s.vals[1], "a2");
    assert_string_equal(s.prevs[1], "a1");
    assert_string_equal(s.keys[2], "wo/b");
    assert_int_equal(s.ev[1].kv.mod_rev, both);
    assert_int_equal(s.ev[2].kv.mod_rev, both);
    assert_int_equal(s.call_of[1], s.call_of[2]);
    /* the delete: its revision, no value, the value before it */
    assert_int_equal(s.ev[3].type, FL_ETCD_EV_DELETE);
    assert_string_equal(s.keys[3], "wo/a");
    assert_string_equal(s.vals[3], "(none)");
    assert_string_equal(s.prevs[3], "a2");
    assert_int_equal(s.ev[3].kv.mod_rev, gone);
}

typedef struct later {
    bool *flag;
    int after_ms;
    long long set_at;
    const char *key;          /* or, instead of setting the flag, put this key */
} later;

static void *set_later(void *p)
{
    later *l = p;
    usleep((useconds_t)l->after_ms * 1000);
    l->set_at = fl_etcdtest_now_ms();
    if (l->key)
        puts_(l->key, "live");
    else
        __atomic_store_n(l->flag, true, __ATOMIC_RELEASE);
    return NULL;
}

static void watch_sees_a_write_made_while_it_waits(void **state)
{
    seen s = {.want = 1};
    bool stop = false;
    later l = {.after_ms = 300, .key = "wl/k"};
    pthread_t th;
    pthread_create(&th, NULL, set_later, &l);
    fl_etcd_error e;
    assert_int_equal(fl_etcd_watch(cli, "wl/", "wl0", 0, false, false, collect, &s, &stop, &e), 0);
    pthread_join(th, NULL);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.vals[0], "live");
}

static void watch_stop_flag_ends_it_within_a_second(void **state)
{
    seen s = {.want = 100};
    bool stop = false;
    later l = {.flag = &stop, .after_ms = 300};
    pthread_t th;
    pthread_create(&th, NULL, set_later, &l);
    fl_etcd_error e;
    assert_int_equal(fl_etcd_watch(cli, "ws/", "ws0", 0, false, false, collect, &s, &stop, &e), 0);
    long long took = fl_etcdtest_now_ms() - l.set_at;
    pthread_join(th, NULL);
    assert_int_equal(s.n, 0);
    assert_true(took < 1000);
    printf("watch stop seen %lld ms after the flag was set\n", took);
}

static void watch_from_a_compacted_revision_is_expired(void **state)
{
    int64_t r1 = puts_("wc/k", "1");
    int64_t r2 = puts_("wc/k", "2");
    fl_etcd_error e;
    assert_int_equal(fl_etcd_compact(cli, r2, true, &e), 0);
    seen s = {.want = 1};
    bool stop = false;
    assert_int_equal(fl_etcd_watch(cli, "wc/", "wc0", r1, false, false, collect, &s, &stop, &e), FL_EEXPIRED);
    assert_int_equal(e.compact_rev, r2);
    assert_int_equal(s.n, 0);
    assert_non_null(strstr(e.msg, etcd1.endpoint[0]));
}

/* ---- leases, status ---- */

static void leases_keep_alive_and_revoke_deletes_their_keys(void **state)
{
    int64_t id;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_lease_grant(cli, 30, &id, &e), 0);
    assert_true(id != 0);
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "ls/k", .value = "held", .value_len = 4, .lease = id};
    fl_etcd_txn_result r;
    assert_int_equal(fl_etcd_txn(cli, NULL, 0, &op, 1, NULL, 0, &r, &e), 0);
    fl_etcd_txn_result_free(&r);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(cli, "ls/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(kvs[0].lease, id);
    fl_etcd_kvs_free(kvs, n);

    int64_t ttl = 0;
    assert_int_equal(fl_etcd_lease_keepalive(cli, id, &ttl, &e), 0);
    assert_true(ttl > 25 && ttl <= 30);
    assert_int_equal(fl_etcd_lease_revoke(cli, id, &e), 0);
    assert_int_equal(fl_etcd_range(cli, "ls/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 0);
    /* a lease that is gone: keepalive says TTL 0, revoking again is no error */
    ttl = 99;
    assert_int_equal(fl_etcd_lease_keepalive(cli, id, &ttl, &e), 0);
    assert_int_equal(ttl, 0);
    assert_int_equal(fl_etcd_lease_revoke(cli, id, &e), 0);
}

static void status_reports_the_revision_and_a_leader(void **state)
{
    int64_t w = puts_("st/k", "x");
    int64_t rev = 0;
    uint64_t leader = 0;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_status(cli, &rev, &leader, &e), 0);
    assert_true(rev >= w);
    assert_true(leader != 0);
}

/* ---- concurrency: the handle pool under several threads ---- */

static void *put_many(void *p)
{
    int t = (int)(intptr_t)p;
    for (int i = 0; i < 40; i++) {
        char key[32];
        snprintf(key, sizeof key, "cc/%d/%02d", t, i);
        fl_etcd_op op = {.type = FL_ETCD_PUT, .key = key, .value = key, .value_len = strlen(key)};
        fl_etcd_txn_result r;
        fl_etcd_error e;
        if (fl_etcd_txn(cli, NULL, 0, &op, 1, NULL, 0, &r, &e) != 0)
            return (void *)1;
        fl_etcd_txn_result_free(&r);
    }
    return NULL;
}

static void requests_from_many_threads_at_once(void **state)
{
    pthread_t th[6];
    for (int t = 0; t < 6; t++)
        pthread_create(&th[t], NULL, put_many, (void *)(intptr_t)t);
    for (int t = 0; t < 6; t++) {
        void *rv;
        pthread_join(th[t], &rv);
        assert_null(rv);
    }
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_range(cli, "cc/", "cc0", 0, 0, true, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 240);
    fl_etcd_kvs_free(kvs, n);
}

/* ---- configuration ---- */

static void a_bad_endpoint_url_is_einval_with_a_clear_line(void **state)
{
    static const char *bad[] = {"ftp://127.0.0.1:2379", "http://", "http://127.0.0.1:99999", "http://127.0.0.1:2379/v3",
                                "127.0.0.1:2379", "", "http://ok:1,https://[::1", "http://a b:1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fl_etcd *c = (fl_etcd *)1;
        char *err = NULL;
        fl_etcd_config cfg = {.endpoints = bad[i]};
        assert_int_equal(fl_etcd_open(&cfg, &c, &err), FL_EINVAL);
        assert_null(c);
        assert_non_null(err);
        assert_non_null(strstr(err, "etcd endpoint"));
        assert_null(strchr(err, '\n'));
        free(err);
    }
    fl_etcd *c;
    char *err = NULL;
    fl_etcd_config cfg = {.endpoints = "http://127.0.0.1:1", .cafile = "/nonexistent/ca.pem"};
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), FL_EINVAL);
    assert_non_null(strstr(err, "/nonexistent/ca.pem"));
    free(err);
    /* well formed: a list with spaces, a trailing slash, https and IPv6 */
    cfg = (fl_etcd_config){.endpoints = "http://127.0.0.1:1/, https://[::1]:2379 ,http://etcd-0.etcd:2379"};
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    assert_null(err);
    fl_etcd_free(c);
}

/* ---- failover on a cluster of three ---- */

static void failover_skips_a_dead_member_then_fails_fast_when_all_are_down(void **state)
{
    fl_etcdtest t;
    if (fl_etcdtest_start(&t, 3) != 0)
        fail_msg("%s", t.error);
    fl_etcd *c;
    char *err = NULL;
    fl_etcd_config cfg = {.endpoints = t.endpoints, .timeout_ms = 2000};
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    fl_etcd_error e;
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "fo/k", .value = "1", .value_len = 1};
    fl_etcd_txn_result r;
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e), 0);
    int64_t first = r.rev;
    fl_etcd_txn_result_free(&r);

    /* member 0, the first endpoint, dies: reads, writes and a watch go to the others */
    fl_etcdtest_kill(&t, 0);
    fl_etcd *c2; /* a fresh client starts at the dead member */
    assert_int_equal(fl_etcd_open(&cfg, &c2, &err), 0);
    long long t0 = fl_etcdtest_now_ms();
    op.value = "2";
    int rc = fl_etcd_txn(c2, NULL, 0, &op, 1, NULL, 0, &r, &e);
    if (rc)
        fail_msg("write after member 0 died: %s", e.msg);
    assert_true(r.rev > first);
    fl_etcd_txn_result_free(&r);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_string_equal(kvs[0].value->data, "2");
    fl_etcd_kvs_free(kvs, n);
    printf("first write with member 0 dead: %lld ms\n", fl_etcdtest_now_ms() - t0);
    fl_etcd_free(c2);
    assert_int_equal(fl_etcd_open(&cfg, &c2, &err), 0);
    seen s = {.want = 1};
    bool stop = false;
    assert_int_equal(fl_etcd_watch(c2, "fo/", "fo0", first, false, false, collect, &s, &stop, &e), 0);
    assert_string_equal(s.vals[0], "1");
    fl_etcd_free(c2);

    /* member 1 too: member 2 alone has no leader; a read says so within the bound */
    fl_etcdtest_kill(&t, 1);
    long long end = fl_etcdtest_now_ms() + 10000;
    do {
        t0 = fl_etcdtest_now_ms();
        rc = fl_etcd_range(c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e);
        fl_etcd_kvs_free(kvs, n);
    } while (rc == 0 && fl_etcdtest_now_ms() < end && usleep(100 * 1000) == 0);
    assert_int_equal(rc, FL_ETIMEDOUT);
    printf("read with no leader: %lld ms: %s\n", fl_etcdtest_now_ms() - t0, e.msg);
    assert_true(fl_etcdtest_now_ms() - t0 < 3 * cfg.timeout_ms + 500);
    /* once member 2 knows it has no leader it says so at once (the client asks for a leader),
     * rather than holding the read until the timeout */
    bool quick = false;
    end = fl_etcdtest_now_ms() + 10000;
    while (!quick && fl_etcdtest_now_ms() < end) {
        t0 = fl_etcdtest_now_ms();
        rc = fl_etcd_range(c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e);
        quick = rc == FL_ETIMEDOUT && strstr(e.msg, "no leader") && fl_etcdtest_now_ms() - t0 < 500;
        if (!quick)
            usleep(200 * 1000);
    }
    printf("no leader, said at once: %s\n", e.msg);
    assert_true(quick);
    /* a write that reached a member without a leader is not sent again, and is no success */
    rc = fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e);
    assert_int_equal(rc, FL_ETIMEDOUT);

    /* every member down: FL_ETIMEDOUT at once (connections refused), each endpoint named once */
    fl_etcdtest_kill(&t, 2);
    t0 = fl_etcdtest_now_ms();
    assert_int_equal(fl_etcd_range(c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), FL_ETIMEDOUT);
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ETIMEDOUT);
    assert_int_equal(fl_etcd_watch(c, "fo/", "fo0", 0, false, false, collect, &s, &stop, &e), FL_ETIMEDOUT);
    long long took = fl_etcdtest_now_ms() - t0;
    printf("all members down, range+txn+watch: %lld ms: %s\n", took, e.msg);
    assert_true(took < 1000);
    fl_etcd_free(c);
    fl_etcdtest_stop(&t);
}

/* ---- latency on loopback (printed, not asserted) ---- */

static void sequential_request_latency_on_loopback(void **state)
{
    enum { N = 300 };
    fl_etcd_error e;
    long long t0 = fl_etcdtest_now_ms();
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof key, "lat/%03d", i);
        fl_etcd_cmp cmp = {.key = key, .target = FL_ETCD_MOD, .result = FL_ETCD_GREATER, .num = -1};
        fl_etcd_op op = {.type = FL_ETCD_PUT, .key = key, .value = "0123456789abcdef0123456789abcdef", .value_len = 32};
        fl_etcd_txn_result r;
        assert_int_equal(fl_etcd_txn(cli, &cmp, 1, &op, 1, NULL, 0, &r, &e), 0);
        fl_etcd_txn_result_free(&r);
    }
    long long t1 = fl_etcdtest_now_ms();
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof key, "lat/%03d", i);
        fl_etcd_kv *kvs;
        size_t n;
        bool more;
        assert_int_equal(fl_etcd_range(cli, key, NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
        assert_int_equal(n, 1);
        fl_etcd_kvs_free(kvs, n);
    }
    long long t2 = fl_etcdtest_now_ms();
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(cli, "lat/", "lat0", 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    long long t3 = fl_etcdtest_now_ms();
    assert_int_equal(n, N);
    fl_etcd_kvs_free(kvs, n);
    printf("loopback latency: txn (put) %.0f us, range (one key) %.0f us, range of %d keys %lld ms\n",
           (t1 - t0) * 1000.0 / N, (t2 - t1) * 1000.0 / N, N, t3 - t2);
}

int main(void)
{
    const struct CMUnitTest one[] = {
        cmocka_unit_test(range_of_a_prefix_pages_with_limit_and_more),
        cmocka_unit_test(prefix_end_of_nothing_is_the_whole_keyspace),
        cmocka_unit_test(range_at_an_old_revision_sees_the_old_value),
        cmocka_unit_test(txn_compares_on_mod_create_and_version),
        cmocka_unit_test(txn_deletes_report_how_many_went),
        cmocka_unit_test(binary_values_with_nuls_round_trip),
        cmocka_unit_test(a_request_too_large_is_etoobig),
        cmocka_unit_test(watch_from_a_revision_sees_puts_and_deletes_in_order),
        cmocka_unit_test(watch_sees_a_write_made_while_it_waits),
        cmocka_unit_test(watch_stop_flag_ends_it_within_a_second),
        cmocka_unit_test(leases_keep_alive_and_revoke_deletes_their_keys),
        cmocka_unit_test(status_reports_the_revision_and_a_leader),
        cmocka_unit_test(requests_from_many_threads_at_once),
        cmocka_unit_test(sequential_request_latency_on_loopback),
        /* these compact: after the tests that read old revisions */
        cmocka_unit_test(range_at_a_compacted_revision_is_expired),
        cmocka_unit_test(watch_from_a_compacted_revision_is_expired),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(a_bad_endpoint_url_is_einval_with_a_clear_line),
        cmocka_unit_test(failover_skips_a_dead_member_then_fails_fast_when_all_are_down),
    };
    int failed = cmocka_run_group_tests_name("etcd, one member", one, start_one, stop_one);
    failed += cmocka_run_group_tests_name("etcd, configuration and a cluster of three", alone, NULL, NULL);
    return failed;
}
