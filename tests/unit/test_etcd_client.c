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
#include <stdatomic.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "api/tls.h"
#include "core/err.h"
#include "etcdtest.h"
#include "store/etcd_client.h"

static fl_etcdtest etcd1; /* the single member most tests share (each under its own prefix) */
static fl_etcd *cli;

static int start_one(void **state)
{
    static const char *const flags[] = {"--experimental-watch-progress-notify-interval=300ms", NULL};
    if (fl_etcdtest_start_with(&etcd1, 1, flags) != 0) {
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
    if (fl_etcd_status(cli, &rev, NULL, NULL, &e))
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
    /* every padding: lengths 0 to 8, keys too */
    for (size_t l = 0; l <= 8; l++) {
        char key[16] = "bpad/";
        memcpy(key + 5, "\x01\x7f\xc3\xa9xyz!", l); /* non-ASCII key bytes */
        key[5 + l] = 0;
        put(key, bin, l);
        assert_int_equal(fl_etcd_range(cli, key, NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
        assert_int_equal(n, 1);
        assert_string_equal(kvs[0].key, key);
        assert_int_equal(kvs[0].value->len, l);
        assert_memory_equal(kvs[0].value->data, bin, l);
        fl_etcd_kvs_free(kvs, n);
    }
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

static bool until_progress(void *ctx, const fl_etcd_event *evs, size_t n, int64_t header_rev)
{
    int64_t *progress_rev = ctx;
    if (n == 0)
        *progress_rev = header_rev;
    return n != 0;
}

static void watch_progress_notify_sends_empty_responses(void **state)
{
    int64_t rev = puts_("pn/other", "x"); /* the notification covers writes elsewhere too */
    int64_t progress_rev = 0;
    bool stop = false;
    later l = {.flag = &stop, .after_ms = 5000}; /* the bound, should no notification come */
    pthread_t th;
    pthread_create(&th, NULL, set_later, &l);
    fl_etcd_error e;
    assert_int_equal(fl_etcd_watch(cli, "pn/w/", "pn/w0", 0, false, true, until_progress, &progress_rev, &stop, &e),
                     0);
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    assert_true(progress_rev >= rev);
}

typedef struct dying {
    fl_etcd *c;
    const char *prefix, *end;
    seen s;
    int rc;
    fl_etcd_error e;
    bool stop;        /* the bound, should the watch not end by itself */
    long long ended;
} dying;

static void *watch_in_thread(void *p)
{
    dying *d = p;
    d->rc = fl_etcd_watch(d->c, d->prefix, d->end, 1, false, false, collect, &d->s, &d->stop, &d->e);
    d->ended = fl_etcdtest_now_ms();
    return NULL;
}

static void a_watch_whose_member_dies_ends_with_etimedout(void **state)
{
    fl_etcdtest t;
    if (fl_etcdtest_start(&t, 1) != 0)
        fail_msg("%s", t.error);
    char *err;
    fl_etcd_config cfg = {.endpoints = t.endpoint[0]};
    dying d = {.s.want = 100, .prefix = "wd/", .end = "wd0"};
    assert_int_equal(fl_etcd_open(&cfg, &d.c, &err), 0);
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "wd/k", .value = "1", .value_len = 1};
    fl_etcd_txn_result r;
    assert_int_equal(fl_etcd_txn(d.c, NULL, 0, &op, 1, NULL, 0, &r, &d.e), 0);
    fl_etcd_txn_result_free(&r);
    pthread_t th;
    pthread_create(&th, NULL, watch_in_thread, &d);
    for (int i = 0; i < 100 && !__atomic_load_n(&d.s.n, __ATOMIC_ACQUIRE); i++)
        usleep(20 * 1000);
    long long killed = fl_etcdtest_now_ms();
    fl_etcdtest_kill(&t, 0);
    pthread_join(th, NULL);
    printf("watch ended %lld ms after its member died: %s\n", d.ended - killed, d.e.msg);
    assert_int_equal(d.s.n, 1);
    assert_int_equal(d.rc, FL_ETIMEDOUT);
    assert_true(d.ended - killed < 2000);
    fl_etcd_free(d.c);
    fl_etcdtest_stop(&t);
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
    /* a put under a lease that is gone is refused, and says why */
    assert_int_equal(fl_etcd_txn(cli, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ENOTFOUND);
    assert_non_null(strstr(e.msg, "lease not found"));
}

static void status_reports_the_revision_and_a_leader(void **state)
{
    int64_t w = puts_("st/k", "x");
    int64_t rev = 0;
    uint64_t leader = 0;
    fl_etcd_error e;
    int64_t db_size = 0;
    assert_int_equal(fl_etcd_status(cli, &rev, &leader, &db_size, &e), 0);
    assert_true(db_size > 4096); /* etcd's bbolt file is never smaller */
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
    long long t0 = fl_etcdtest_now_ms();
    for (int t = 0; t < 6; t++)
        pthread_create(&th[t], NULL, put_many, (void *)(intptr_t)t);
    for (int t = 0; t < 6; t++) {
        void *rv;
        pthread_join(th[t], &rv);
        assert_null(rv);
    }
    long long took = fl_etcdtest_now_ms() - t0;
    printf("240 puts from 6 threads: %lld ms (%.0f writes/s)\n", took, took ? 240000.0 / took : 0.0);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    fl_etcd_error e;
    assert_int_equal(fl_etcd_range(cli, "cc/", "cc0", 0, 0, true, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 240);
    fl_etcd_kvs_free(kvs, n);
}

/* ---- a member that takes a request and never answers ---- */

static void a_write_whose_answer_is_lost_is_not_sent_again(void **state)
{
    /* a socket that listens and never accepts: the kernel completes the connection, the
     * request goes out, and no answer comes */
    int fd = -1;
    int port = fl_etcdtest_free_port(&fd);
    assert_true(port > 0);
    assert_int_equal(listen(fd, 16), 0);
    char list[256];
    snprintf(list, sizeof list, "http://127.0.0.1:%d,%s", port, etcd1.endpoint[0]);
    fl_etcd *c;
    char *err = NULL;
    fl_etcd_config cfg = {.endpoints = list, .timeout_ms = 1500};
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "lost/k", .value = "1", .value_len = 1};
    fl_etcd_txn_result r;
    fl_etcd_error e;
    long long t0 = fl_etcdtest_now_ms();
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ETIMEDOUT);
    assert_true(fl_etcdtest_now_ms() - t0 < 1500 + 2000);
    assert_non_null(strstr(e.msg, "outcome is unknown"));
    /* ... so the healthy second member never saw it */
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(cli, "lost/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 0);
    fl_etcd_free(c);
    /* a read through the same list goes on to the second member */
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    puts_("lost/r", "here");
    assert_int_equal(fl_etcd_range(c, "lost/r", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 1);
    fl_etcd_kvs_free(kvs, n);
    /* a watch too: a member that never says the watch was created is left for the next */
    fl_etcd_free(c);
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    seen s = {.want = 1};
    bool stop = false;
    int64_t rev = current_rev();
    t0 = fl_etcdtest_now_ms();
    assert_int_equal(fl_etcd_watch(c, "lost/", "lost0", rev, false, false, collect, &s, &stop, &e), 0);
    assert_int_equal(s.n, 1);
    assert_true(fl_etcdtest_now_ms() - t0 < 1500 + 2000);
    /* and so do the requests after it, without waiting on the silent one again */
    t0 = fl_etcdtest_now_ms();
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e), 0);
    fl_etcd_txn_result_free(&r);
    assert_true(fl_etcdtest_now_ms() - t0 < 1500); /* not the silent one again: that alone takes 1500 */
    fl_etcd_free(c);
    close(fd);
}

/* ---- a full database ---- */

static void a_full_database_is_eio_with_nospace(void **state)
{
    fl_etcdtest t;
    static const char *const flags[] = {"--quota-backend-bytes=1048576", NULL}; /* 1 MiB */
    if (fl_etcdtest_start_with(&t, 1, flags) != 0)
        fail_msg("%s", t.error);
    fl_etcd *c;
    char *err;
    fl_etcd_config cfg = {.endpoints = t.endpoints};
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    static char val[256 << 10];
    memset(val, 'z', sizeof val);
    int rc = 0;
    fl_etcd_error e;
    for (int i = 0; i < 40 && rc == 0; i++) { /* 10 MiB at most: the quota is reached well before */
        char key[32];
        snprintf(key, sizeof key, "full/%02d", i);
        fl_etcd_op op = {.type = FL_ETCD_PUT, .key = key, .value = val, .value_len = sizeof val};
        fl_etcd_txn_result r;
        rc = fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e);
        fl_etcd_txn_result_free(&r);
    }
    printf("full: %s\n", e.msg);
    assert_int_equal(rc, FL_EIO);
    assert_true(e.nospace);
    assert_non_null(strstr(e.msg, "database space exceeded"));
    /* reads still work */
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(c, "full/", "full0", 0, 0, true, &kvs, &n, &more, NULL, &e), 0);
    assert_true(n >= 1);
    assert_false(e.nospace);
    fl_etcd_kvs_free(kvs, n);
    fl_etcd_free(c);
    fl_etcdtest_stop(&t);
}

/* ---- something else than etcd at an endpoint ---- */

typedef struct canned {
    int fd;             /* listening */
    const char *answer; /* what every connection gets, after its request */
    atomic_int served;  /* counted before answering: the client may check as soon as it reads */
} canned;

static void *serve_canned(void *p)
{
    canned *k = p;
    for (;;) {
        int c = accept(k->fd, NULL, NULL);
        if (c < 0)
            return NULL; /* the test shut the socket down */
        char buf[4096];
        ssize_t r = read(c, buf, sizeof buf); /* headers and a small body come in one read */
        if (r > 0) {
            atomic_fetch_add(&k->served, 1);
            if (write(c, k->answer, strlen(k->answer)) < 0)
                atomic_fetch_sub(&k->served, 1);
        }
        close(c);
    }
}

static void a_proxy_error_moves_a_read_on_and_a_stranger_is_eio(void **state)
{
    static const char *const answers[] = {
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad gateway",
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 14\r\nConnection: close\r\n\r\n"
        "<h1>nope</h1>\n",
    };
    puts_("px/k", "v");
    /* static: should an assert end the test early, the server thread still points at it */
    static canned ks[2];
    for (int i = 0; i < 2; i++) {
        canned *k = &ks[i];
        k->fd = -1;
        k->answer = answers[i];
        atomic_init(&k->served, 0);
        int port = fl_etcdtest_free_port(&k->fd);
        assert_true(port > 0);
        assert_int_equal(listen(k->fd, 16), 0);
        pthread_t th;
        pthread_create(&th, NULL, serve_canned, k);
        char list[256];
        snprintf(list, sizeof list, "http://127.0.0.1:%d,%s", port, etcd1.endpoint[0]);
        fl_etcd_config cfg = {.endpoints = list, .timeout_ms = 2000};
        fl_etcd *c;
        char *err;
        assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
        fl_etcd_kv *kvs = NULL;
        size_t n = 0;
        bool more;
        fl_etcd_error e;
        int rc = fl_etcd_range(c, "px/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e);
        fl_etcd_kvs_free(kvs, n);
        if (i == 0) {
            assert_int_equal(rc, 0); /* a member behind a proxy is down: the next one serves */
            assert_int_equal(n, 1);
            assert_int_equal(e.code, 0); /* no trace of the first failure once it went well */
            fl_etcd_free(c);
            assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
            fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "px/w", .value = "1", .value_len = 1};
            fl_etcd_txn_result r;
            assert_int_equal(fl_etcd_txn(c, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ETIMEDOUT);
            assert_non_null(strstr(e.msg, "outcome is unknown"));
        } else {
            assert_int_equal(rc, FL_EIO); /* not etcd at all: a configuration mistake, said once */
            assert_non_null(strstr(e.msg, "HTTP 404, not an etcd answer: <h1>nope</h1>"));
        }
        assert_true(atomic_load(&k->served) >= 1);
        fl_etcd_free(c);
        shutdown(k->fd, SHUT_RDWR);
        pthread_join(th, NULL);
        close(k->fd);
    }
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

typedef struct cluster {
    fl_etcdtest t;
    fl_etcd *c;       /* every member, the first to die first */
    fl_etcd *fresh;   /* a client made after a death, so that it starts at the dead member */
    char order[FL_ETCDTEST_MAX * 64];
} cluster;

static int start_three(void **state)
{
    cluster *k = calloc(1, sizeof *k);
    *state = k;
    if (fl_etcdtest_start(&k->t, 3) != 0) {
        fprintf(stderr, "%s\n", k->t.error);
        return -1;
    }
    return 0;
}

static int stop_three(void **state)
{
    cluster *k = *state;
    fl_etcd_free(k->c);
    fl_etcd_free(k->fresh);
    fl_etcdtest_stop(&k->t);
    free(k);
    return 0;
}

static fl_etcd *open_list(const char *endpoints)
{
    fl_etcd *c;
    char *err = NULL;
    fl_etcd_config cfg = {.endpoints = endpoints, .timeout_ms = 2000};
    if (fl_etcd_open(&cfg, &c, &err) != 0)
        fail_msg("%s", err);
    return c;
}

static void failover_skips_a_dead_member_then_fails_fast_when_all_are_down(void **state)
{
    cluster *k = *state;
    /* the first endpoint is a follower, so that its death needs no election */
    int leader = fl_etcdtest_leader(&k->t);
    assert_true(leader >= 0);
    int first = (leader + 1) % 3, second = (leader + 2) % 3;
    snprintf(k->order, sizeof k->order, "%s,%s,%s", k->t.endpoint[first], k->t.endpoint[second],
             k->t.endpoint[leader]);
    k->c = open_list(k->order);
    fl_etcd_error e;
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "fo/k", .value = "1", .value_len = 1};
    fl_etcd_txn_result r;
    assert_int_equal(fl_etcd_txn(k->c, NULL, 0, &op, 1, NULL, 0, &r, &e), 0);
    int64_t rev1 = r.rev;
    fl_etcd_txn_result_free(&r);

    /* the first endpoint dies: a write, a read and a watch go to the next at once */
    fl_etcdtest_kill(&k->t, first);
    k->fresh = open_list(k->order);
    long long t0 = fl_etcdtest_now_ms();
    op.value = "2";
    int rc = fl_etcd_txn(k->fresh, NULL, 0, &op, 1, NULL, 0, &r, &e);
    if (rc)
        fail_msg("write with the first endpoint dead: %s", e.msg);
    assert_true(r.rev > rev1);
    fl_etcd_txn_result_free(&r);
    printf("first write with the first endpoint dead: %lld ms\n", fl_etcdtest_now_ms() - t0);
    assert_true(fl_etcdtest_now_ms() - t0 < 2000); /* loaded machines: the point is it succeeds */
    fl_etcd_free(k->fresh);
    k->fresh = open_list(k->order);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(k->fresh, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_string_equal(kvs[0].value->data, "2");
    fl_etcd_kvs_free(kvs, n);
    fl_etcd_free(k->fresh);
    k->fresh = open_list(k->order);
    seen s = {.want = 1};
    bool stop = false;
    assert_int_equal(fl_etcd_watch(k->fresh, "fo/", "fo0", rev1, false, false, collect, &s, &stop, &e), 0);
    assert_string_equal(s.vals[0], "1");

    /* the second too: the leader alone has no quorum. A watch on it ends, saying so, rather
     * than staying open and silent (the client asks for a leader) */
    dying d = {.s.want = 100, .prefix = "fo/", .end = "fo0"};
    d.c = open_list(k->t.endpoint[leader]);
    pthread_t th;
    pthread_create(&th, NULL, watch_in_thread, &d);
    for (int i = 0; i < 100 && !__atomic_load_n(&d.s.n, __ATOMIC_ACQUIRE); i++)
        usleep(20 * 1000);
    fl_etcdtest_kill(&k->t, second);
    long long killed = fl_etcdtest_now_ms();
    for (int i = 0; i < 150 && !__atomic_load_n(&d.ended, __ATOMIC_ACQUIRE); i++)
        usleep(100 * 1000);
    __atomic_store_n(&d.stop, true, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    printf("watch on the leader that lost its quorum ended after %lld ms: %s\n", d.ended - killed, d.e.msg);
    fl_etcd_free(d.c);
    assert_int_equal(d.s.n, 2); /* "1" and "2", before */
    assert_int_equal(d.rc, FL_ETIMEDOUT);
    assert_non_null(strstr(d.e.msg, "no leader"));
    /* and once it knows it has no leader, a read hears so at once, not at the timeout */
    bool quick = false;
    long long end = fl_etcdtest_now_ms() + 10000;
    while (!quick && fl_etcdtest_now_ms() < end) {
        t0 = fl_etcdtest_now_ms();
        rc = fl_etcd_range(k->c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e);
        fl_etcd_kvs_free(kvs, n);
        assert_true(rc == 0 || rc == FL_ETIMEDOUT);
        assert_true(fl_etcdtest_now_ms() - t0 < 3 * 2000 + 500); /* each endpoint once */
        quick = rc == FL_ETIMEDOUT && strstr(e.msg, "no leader") && fl_etcdtest_now_ms() - t0 < 500;
        if (!quick)
            usleep(200 * 1000);
    }
    printf("no leader, said at once: %s\n", e.msg);
    assert_true(quick);
    /* a write that reached a member without a leader is not sent again, and is no success */
    assert_int_equal(fl_etcd_txn(k->c, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ETIMEDOUT);

    /* every member down: FL_ETIMEDOUT at once (connections refused) */
    fl_etcdtest_kill(&k->t, leader);
    t0 = fl_etcdtest_now_ms();
    assert_int_equal(fl_etcd_range(k->c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), FL_ETIMEDOUT);
    assert_non_null(strstr(e.msg, "all 3 endpoints tried"));
    assert_int_equal(fl_etcd_txn(k->c, NULL, 0, &op, 1, NULL, 0, &r, &e), FL_ETIMEDOUT);
    assert_int_equal(fl_etcd_watch(k->c, "fo/", "fo0", 0, false, false, collect, &s, &stop, &e), FL_ETIMEDOUT);
    long long took = fl_etcdtest_now_ms() - t0;
    printf("all members down, range+txn+watch: %lld ms: %s\n", took, e.msg);
    assert_true(took < 1000);

    /* two come back: the same client finds them */
    assert_int_equal(fl_etcdtest_restart(&k->t, first), 0);
    if (fl_etcdtest_restart(&k->t, second) != 0)
        fail_msg("%s", k->t.error);
    assert_int_equal(fl_etcd_range(k->c, "fo/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_string_equal(kvs[0].value->data, "2");
    fl_etcd_kvs_free(kvs, n);
}

/* ---- TLS ---- */

static char *bio_text(BIO *b)
{
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *s = malloc((size_t)n + 1); /* p is not NUL-terminated */
    memcpy(s, p, (size_t)n);
    s[n] = 0;
    BIO_free(b);
    return s;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A key and a certificate for it, signed by the PKI's CA, with extended key usage eku
 * ("serverAuth,clientAuth") and, when ip, the SAN IP:ip; written to cert_path and key_path. */
static void make_cert(const fl_pki *pki, const char *cn, const char *eku, const char *ip, const char *cert_path,
                      const char *key_path)
{
    BIO *b = BIO_new_mem_buf(pki->ca_cert_pem, -1);
    X509 *ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    b = BIO_new_mem_buf(pki->ca_key_pem, -1);
    EVP_PKEY *ca_key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(ca);
    assert_non_null(ca_key);

    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(fl_etcdtest_now_ms() & 0x7fffffff));
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(ca));
    X509_set_pubkey(x, k);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, eku);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    if (ip) {
        char san[64];
        snprintf(san, sizeof san, "IP:%s", ip);
        ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
        X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
    }
    assert_true(X509_sign(x, ca_key, EVP_sha256()) > 0);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    char *cert = bio_text(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    char *key = bio_text(b);
    write_file(cert_path, cert);
    write_file(key_path, key);
    free(cert);
    free(key);
    X509_free(x);
    X509_free(ca);
    EVP_PKEY_free(k);
    EVP_PKEY_free(ca_key);
}

typedef struct tls_setup {
    fl_etcdtest t;
    char dir[64];
    char ca[128], srv_cert[128], srv_key[128], cli_cert[128], cli_key[128];
    fl_etcd *c;
} tls_setup;

static int start_tls(void **state)
{
    tls_setup *x = calloc(1, sizeof *x);
    *state = x;
    snprintf(x->dir, sizeof x->dir, "/tmp/fl-etcd-tls-XXXXXX");
    if (!mkdtemp(x->dir))
        return -1;
    fl_pki pki;
    char *err = NULL;
    if (fl_pki_ensure(x->dir, NULL, &pki, &err) != 0) {
        fprintf(stderr, "pki: %s\n", err);
        return -1;
    }
    snprintf(x->ca, sizeof x->ca, "%s/pki/ca.crt", x->dir);
    snprintf(x->srv_cert, sizeof x->srv_cert, "%s/etcd.crt", x->dir);
    snprintf(x->srv_key, sizeof x->srv_key, "%s/etcd.key", x->dir);
    snprintf(x->cli_cert, sizeof x->cli_cert, "%s/client.crt", x->dir);
    snprintf(x->cli_key, sizeof x->cli_key, "%s/client.key", x->dir);
    /* etcd 3.4's JSON gateway dials its own gRPC port with the member's certificate: with
     * --client-cert-auth that certificate must be good for client authentication too */
    make_cert(&pki, "etcd", "serverAuth,clientAuth", "127.0.0.1", x->srv_cert, x->srv_key);
    make_cert(&pki, "flotilla", "clientAuth", NULL, x->cli_cert, x->cli_key);
    fl_pki_close(&pki);
    if (fl_etcdtest_start_tls(&x->t, 1, NULL, x->srv_cert, x->srv_key, x->ca) != 0) {
        fprintf(stderr, "%s\n", x->t.error);
        return -1;
    }
    return 0;
}

static int stop_tls(void **state)
{
    tls_setup *x = *state;
    fl_etcd_free(x->c);
    fl_etcdtest_stop(&x->t);
    x->t.dir[0] = 0;
    if (x->dir[0]) {
        snprintf(x->t.dir, sizeof x->t.dir, "%s", x->dir); /* fl_etcdtest_stop removes a tree */
        fl_etcdtest_stop(&x->t);
    }
    free(x);
    return 0;
}

static void https_with_a_client_certificate_works_and_without_fails(void **state)
{
    tls_setup *x = *state;
    assert_non_null(strstr(x->t.endpoints, "https://"));
    char *err = NULL;
    fl_etcd_config cfg = {.endpoints = x->t.endpoints, .cafile = x->ca, .certfile = x->cli_cert, .keyfile = x->cli_key};
    assert_int_equal(fl_etcd_open(&cfg, &x->c, &err), 0);
    fl_etcd_op op = {.type = FL_ETCD_PUT, .key = "tls/k", .value = "secret", .value_len = 6};
    fl_etcd_txn_result r;
    fl_etcd_error e;
    if (fl_etcd_txn(x->c, NULL, 0, &op, 1, NULL, 0, &r, &e) != 0)
        fail_msg("txn over https: %s", e.msg);
    int64_t rev = r.rev;
    fl_etcd_txn_result_free(&r);
    fl_etcd_kv *kvs;
    size_t n;
    bool more;
    assert_int_equal(fl_etcd_range(x->c, "tls/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_string_equal(kvs[0].value->data, "secret");
    fl_etcd_kvs_free(kvs, n);
    seen s = {.want = 1};
    bool stop = false;
    assert_int_equal(fl_etcd_watch(x->c, "tls/", "tls0", rev, false, false, collect, &s, &stop, &e), 0);
    assert_int_equal(s.n, 1);

    /* no client certificate: the member refuses; no CA: the member's certificate is not trusted */
    fl_etcd *c;
    fl_etcd_config nocert = {.endpoints = x->t.endpoints, .cafile = x->ca, .timeout_ms = 2000};
    fl_etcd_config noca = {.endpoints = x->t.endpoints, .certfile = x->cli_cert, .keyfile = x->cli_key,
                           .timeout_ms = 2000};
    const fl_etcd_config *bad[] = {&nocert, &noca};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(fl_etcd_open(bad[i], &c, &err), 0);
        int rc = fl_etcd_range(c, "tls/k", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e);
        printf("https %s: %s\n", i ? "without the CA" : "without a client certificate", e.msg);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(e.msg, x->t.endpoint[0]));
        fl_etcd_free(c);
    }
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

    /* a list-sized read: 2000 keys of 1 KiB, written 100 to a txn */
    static char val[1024];
    memset(val, 'v', sizeof val);
    for (int b = 0; b < 20; b++) {
        fl_etcd_op ops[100];
        char keys[100][32];
        for (int i = 0; i < 100; i++) {
            snprintf(keys[i], sizeof keys[i], "big/%04d", b * 100 + i);
            ops[i] = (fl_etcd_op){.type = FL_ETCD_PUT, .key = keys[i], .value = val, .value_len = sizeof val};
        }
        fl_etcd_txn_result r;
        assert_int_equal(fl_etcd_txn(cli, NULL, 0, ops, 100, NULL, 0, &r, &e), 0);
        fl_etcd_txn_result_free(&r);
    }
    long long t4 = fl_etcdtest_now_ms();
    assert_int_equal(fl_etcd_range(cli, "big/", "big0", 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    long long t5 = fl_etcdtest_now_ms();
    assert_int_equal(n, 2000);
    assert_int_equal(kvs[1999].value->len, 1024);
    fl_etcd_kvs_free(kvs, n);
    printf("range of 2000 keys of 1 KiB: %lld ms\n", t5 - t4);
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
        cmocka_unit_test(watch_progress_notify_sends_empty_responses),
        cmocka_unit_test(leases_keep_alive_and_revoke_deletes_their_keys),
        cmocka_unit_test(status_reports_the_revision_and_a_leader),
        cmocka_unit_test(requests_from_many_threads_at_once),
        cmocka_unit_test(a_write_whose_answer_is_lost_is_not_sent_again),
        cmocka_unit_test(a_proxy_error_moves_a_read_on_and_a_stranger_is_eio),
        cmocka_unit_test(sequential_request_latency_on_loopback),
        /* these compact: after the tests that read old revisions */
        cmocka_unit_test(range_at_a_compacted_revision_is_expired),
        cmocka_unit_test(watch_from_a_compacted_revision_is_expired),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(a_bad_endpoint_url_is_einval_with_a_clear_line),
        cmocka_unit_test(a_watch_whose_member_dies_ends_with_etimedout),
        cmocka_unit_test(a_full_database_is_eio_with_nospace),
        cmocka_unit_test_setup_teardown(https_with_a_client_certificate_works_and_without_fails, start_tls, stop_tls),
        cmocka_unit_test_setup_teardown(failover_skips_a_dead_member_then_fails_fast_when_all_are_down, start_three,
                                        stop_three),
    };
    int failed = cmocka_run_group_tests_name("etcd, one member", one, start_one, stop_one);
    failed += cmocka_run_group_tests_name("etcd, configuration and a cluster of three", alone, NULL, NULL);
    return failed;
}
