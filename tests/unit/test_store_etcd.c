/* test_store_etcd.c - the etcd store backend against a real etcd (tests/unit/etcdtest.h).
 *
 * First the store's contract (test_store_contract.h), the same test bodies the SQLite and
 * memory stores pass, each on a fresh single-member etcd. Then what only a shared etcd has:
 * two stores opened on one etcd are two replicas, and must agree on every revision and
 * every byte; revisions skip (notes, leases, other replicas' compaction key), and nothing
 * may break on that; compaction by one replica expires old reads on the other; a delete
 * whose final value is new is an update then a delete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "store/etcd_client.h"
#include "store/store.h"
#include "store/store_etcd.h"
#include "store/store_watch.h"

#include "etcdtest.h"
#include "test_store_contract.h"
#include "testutil.h"

/* ---- fixture: a fresh etcd per test ---- */

typedef struct etcd_fixture {
    fixture f;          /* first: the contract's tests take it as theirs */
    fl_etcdtest t;
} etcd_fixture;

static int setup_etcd(void **state)
{
    etcd_fixture *ef = fl_calloc(1, sizeof(*ef));
    if (fl_etcdtest_start(&ef->t, 1) != 0)
        fail_msg("%s", ef->t.error); /* no etcd is a failure, never a skip */
    ef->f.etcd = ef->t.endpoints;
    ef->f.gaps = true;
    ef->f.renders = 2;
    ef->f.s = open_store(&ef->f, 0, false);
    *state = ef;
    return 0;
}

static int teardown_etcd(void **state)
{
    etcd_fixture *ef = *state;
    fl_store_free(ef->f.s);
    fl_etcdtest_stop(&ef->t);
    free(ef);
    return 0;
}

/* A second replica on the fixture's etcd. */
static fl_store *open_replica(fixture *f, int64_t window)
{
    return open_store(f, window, false);
}

/* A client of the fixture's etcd of its own, for writes that are not the store's. */
static fl_etcd *raw_client(const fixture *f)
{
    fl_etcd_config cfg = { .endpoints = f->etcd };
    fl_etcd *c = NULL;
    char *err = NULL;
    assert_int_equal(fl_etcd_open(&cfg, &c, &err), 0);
    return c;
}

/* Some revisions of the cluster's that are not the store's: a key outside the prefix, a
 * lease and a key under it. Returns the cluster's revision after them. */
static int64_t foreign_writes(fl_etcd *c)
{
    fl_etcd_error e = { 0 };
    fl_etcd_op put = { .type = FL_ETCD_PUT, .key = "/elsewhere/x", .value = "1", .value_len = 1 };
    fl_etcd_txn_result res = { 0 };
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &put, 1, NULL, 0, &res, &e), 0);
    fl_etcd_txn_result_free(&res);
    int64_t lease = 0;
    assert_int_equal(fl_etcd_lease_grant(c, 30, &lease, &e), 0);
    fl_etcd_op leased = { .type = FL_ETCD_PUT, .key = "/elsewhere/leased", .value = "2", .value_len = 1,
                          .lease = lease };
    assert_int_equal(fl_etcd_txn(c, NULL, 0, &leased, 1, NULL, 0, &res, &e), 0);
    int64_t rev = res.rev;
    fl_etcd_txn_result_free(&res);
    return rev;
}

/* ---- the value format ---- */

static fl_blob *stamp_text(const char *stored, int64_t rev)
{
    fl_blob *b = fl_blob_new(stored, strlen(stored));
    fl_blob *v = fl_store_etcd_stamp(b, rev);
    fl_blob_unref(b);
    return v;
}

/* What etcd holds is the value without its revision's digits and a header saying where
 * they go; a value not written by the store is served as it is. */
static void test_stored_values_get_their_revision_back_where_the_header_says(void **state)
{
    fl_blob *v = stamp_text("FL1 7\n{\"rv\":\"\"}", 1234);
    assert_string_equal(v->data, "{\"rv\":\"1234\"}");
    fl_blob_unref(v);
    v = stamp_text("FL1 -\nno revision here", 77);
    assert_string_equal(v->data, "no revision here");
    fl_blob_unref(v);
    v = stamp_text("{\"written\":\"by someone else\"}", 9);
    assert_string_equal(v->data, "{\"written\":\"by someone else\"}");
    fl_blob_unref(v);
    v = stamp_text("FL1 99\nshort", 9); /* an offset past the end: the bytes, unstamped */
    assert_string_equal(v->data, "short");
    fl_blob_unref(v);
    /* and what the store wrote reads back so from etcd itself */
    fixture *f = *state;
    int64_t r = put_new(f->s, "/fmt/a", "text");
    fl_etcd *c = raw_client(f);
    fl_etcd_kv *kvs = NULL;
    size_t n = 0;
    bool more;
    fl_etcd_error e = { 0 };
    assert_int_equal(fl_etcd_range(c, "/registry/fmt/a", NULL, 0, 0, false, &kvs, &n, &more, NULL, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(kvs[0].mod_rev, r);
    assert_string_equal(kvs[0].value->data, "FL1 5\ntext@");
    fl_etcd_kvs_free(kvs, n);
    fl_etcd_free(c);
}

static char *render_big(void *ctx, const fl_blob *current, int64_t rev, size_t *len)
{
    size_t n = (size_t)2 << 20; /* past etcd's default --max-request-bytes (1.5 MiB) */
    char *out = fl_malloc(n + 1);
    memset(out, 'x', n);
    out[n] = 0;
    *len = n;
    return out;
}

static char *render_rev_twice(void *ctx, const fl_blob *current, int64_t rev, size_t *len)
{
    char *out = fl_asprintf("%lld and again %lld", (long long)rev, (long long)rev);
    *len = strlen(out);
    return out;
}

/* What etcd refuses comes back as the store's codes, and nothing is written: a value larger
 * than etcd takes is FL_ETOOBIG; a value that holds its revision twice cannot say where the
 * one revision goes, and is FL_EIO (a render bug: the API renders it once). */
static void test_values_etcd_cannot_take_are_refused_and_nothing_is_written(void **state)
{
    fixture *f = *state;
    int64_t head = fl_store_rev(f->s);
    fl_store_op big = { .type = FL_STORE_CREATE, .key = "/refused/big", .render = render_big };
    assert_int_equal(fl_store_write(f->s, &big), FL_ETOOBIG);
    assert_null(big.value);
    fl_store_op twice = { .type = FL_STORE_CREATE, .key = "/refused/twice", .render = render_rev_twice };
    assert_int_equal(fl_store_write(f->s, &twice), FL_EIO);
    assert_null(twice.value);
    assert_int_equal(fl_store_count(f->s, "/refused/"), 0);
    assert_int_equal(fl_store_rev(f->s), head);
    assert_next_rev(f, put_new(f->s, "/refused/ok", "v"), head);
}

static char *render_counting(void *ctx, const fl_blob *current, int64_t rev, size_t *len)
{
    int *calls = ctx;
    char *out = fl_asprintf("call %d at %lld", ++*calls, (long long)rev);
    *len = strlen(out);
    return out;
}

/* The blob a write hands back (and `rendered` is told) is the one the replica's readers get,
 * so what the API keeps decoded for it is found by them; and a render that gives other bytes
 * the second time cannot make the writer's answer differ from what etcd and every replica
 * hold. */
static void test_a_write_hands_back_the_bytes_its_readers_get(void **state)
{
    fixture *f = *state;
    render_ctx rcx = { .text = "v" };
    fl_store_op op = { .type = FL_STORE_CREATE, .key = "/same/a", .render = render_text, .ctx = &rcx };
    assert_int_equal(fl_store_write(f->s, &op), 0);
    fl_kv kv;
    assert_int_equal(fl_store_get(f->s, "/same/a", &kv), 0);
    assert_ptr_equal(kv.value, op.value);
    fl_blob_unref(kv.value);
    fl_blob_unref(op.value);
    int calls = 0;
    fl_store_op odd = { .type = FL_STORE_CREATE, .key = "/same/b", .render = render_counting, .ctx = &calls };
    assert_int_equal(fl_store_write(f->s, &odd), 0);
    assert_int_equal(calls, 2);
    char want[64];
    snprintf(want, sizeof want, "call 1 at %lld", (long long)odd.rev); /* the first render's, stamped */
    assert_string_equal(odd.value->data, want);
    assert_int_equal(fl_store_get(f->s, "/same/b", &kv), 0);
    assert_string_equal(kv.value->data, want);
    fl_blob_unref(kv.value);
    fl_blob_unref(odd.value);
}

/* ---- replicas ---- */

/* Two stores on one etcd: each sees the other's writes, at the same revisions, with the same
 * bytes, whichever wrote them; a write naming a revision the other replica made waits for
 * it rather than failing. */
static void test_two_replicas_see_each_others_writes_with_the_same_revisions_and_bytes(void **state)
{
    fixture *f = *state;
    fl_store *a = f->s, *b = open_replica(f, 0);
    int64_t r1 = put_new(a, "/rep/x", "from-a");
    render_ctx rcx = { .text = "from-b" };
    int64_t r2 = 0;
    /* b may not have seen r1 yet: it waits for it, then its compare holds */
    assert_int_equal(do_write(b, FL_STORE_UPDATE, "/rep/x", r1, "from-b", &r2, &rcx), 0);
    assert_true(r2 > r1);
    int64_t r3 = put_new(b, "/rep/y", "y");
    WAIT_UNTIL(fl_store_rev(a) >= r3, 5000);
    for (int i = 0; i < 2; i++) {
        fl_store *s = i ? b : a;
        assert_value(s, "/rep/x", "from-b", r2);
        assert_value(s, "/rep/y", "y", r3);
        fl_kv kv;
        assert_int_equal(fl_store_get(s, "/rep/x", &kv), 0);
        assert_int_equal(kv.create_rev, r1);
        fl_blob_unref(kv.value);
    }
    collect ca, cb;
    list_keys(a, "/rep/", NULL, 0, 0, &ca, NULL, 0);
    list_keys(b, "/rep/", NULL, 0, 0, &cb, NULL, 0);
    assert_string_equal(ca.buf, cb.buf);
    /* a stale revision is a conflict on either */
    assert_int_equal(do_write(a, FL_STORE_UPDATE, "/rep/x", r1, "stale", NULL, NULL), FL_ECONFLICT);
    assert_int_equal(do_write(b, FL_STORE_DELETE, "/rep/y", r1, "stale", NULL, NULL), FL_ECONFLICT);
    /* a create of a key the other replica made is refused, a delete by one is seen by both */
    assert_int_equal(do_write(a, FL_STORE_CREATE, "/rep/y", 0, "again", NULL, NULL), FL_EEXIST);
    put_del(a, "/rep/y", "y");
    WAIT_UNTIL(fl_store_count(b, "/rep/") == 1, 5000);
    fl_store_free(b);
}

/* A watch on replica B sees replica A's writes, in order, each once, with A's bytes. */
static void test_a_watch_on_one_replica_sees_the_others_writes(void **state)
{
    fixture *f = *state;
    fl_store *a = f->s, *b = open_replica(f, 0);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(b, "/wr/", fl_store_rev(b), &w), 0);
    int64_t r1 = put_new(a, "/wr/1", "one");
    int64_t r2 = put_upd(a, "/wr/1", "two");
    int64_t r3 = put_del(a, "/wr/1", "two");
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/wr/1", "one@"), r1);
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/wr/1", "two@"), r2);
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/wr/1", "two@"), r3);
    expect_no_event(w);
    fl_watch_free(w);
    /* and a watch opened on B later, from before those writes, replays them from etcd */
    fl_store_free(b);
    b = open_replica(f, 0);
    assert_int_equal(fl_store_watch(b, "/wr/", r1 - 1, &w), 0);
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/wr/1", "one@"), r1);
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/wr/1", "two@"), r2);
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/wr/1", "two@"), r3);
    expect_no_event(w);
    fl_watch_free(w);
    fl_store_free(b);
}

/* etcd keeps no value with a delete: a delete whose final value is the current one is one
 * revision, whose event carries that value stamped with the delete's revision; one whose
 * final value is new puts it first (an update event) and then deletes it, and op->value is
 * the final value at the delete's revision. */
static void test_a_delete_with_a_new_final_value_is_an_update_then_the_delete(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    put_new(s, "/del/same", "v");
    int64_t r = put_new(s, "/del/new", "v");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/del/", fl_store_rev(s), &w), 0);
    int64_t d1 = put_del(s, "/del/same", "v");
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/del/same", "v@"), d1);
    render_ctx rcx = { .text = "final" };
    int64_t d2 = 0;
    assert_int_equal(do_write(s, FL_STORE_DELETE, "/del/new", r, "final", &d2, &rcx), 0); /* checks op->value */
    int64_t u = expect_event(w, FL_EV_PUT_UPDATE, "/del/new", "final@");
    assert_true(u > d1 && u < d2);
    assert_int_equal(expect_event(w, FL_EV_DELETE, "/del/new", "final@"), d2);
    expect_no_event(w);
    fl_watch_free(w);
    assert_int_equal(fl_store_count(s, "/del/"), 0);
}

/* Revisions the store did not take (a key elsewhere, a lease, a leased key, notes) leave
 * gaps: watches from any revision, lists at any revision and get_at still answer exactly. */
static void test_gaps_in_the_revisions_break_no_watch_list_or_read_at_a_revision(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    fl_etcd *c = raw_client(f);
    int64_t r[6];
    int64_t gap_at[6];
    for (int i = 0; i < 6; i++) {
        char key[16];
        snprintf(key, sizeof key, "/gap/%d", i % 3);
        r[i] = i < 3 ? put_new(s, key, "v") : put_upd(s, key, "w");
        gap_at[i] = foreign_writes(c);
        assert_int_equal(fl_store_note_set(s, "checkpoint", r[i]), 0);
        assert_true(gap_at[i] > r[i]);
    }
    fl_etcd_free(c);
    /* a watch from every revision in between, even one the store never took */
    for (int i = 0; i < 6; i++) {
        for (int k = 0; k < 2; k++) {
            int64_t from = k ? gap_at[i] : r[i];
            fl_watch *w = NULL;
            assert_int_equal(fl_store_watch(s, "/gap/", from, &w), 0);
            for (int j = i + 1; j < 6; j++) {
                char key[16];
                snprintf(key, sizeof key, "/gap/%d", j % 3);
                assert_int_equal(expect_event(w, j < 3 ? FL_EV_PUT_CREATE : FL_EV_PUT_UPDATE, key, j < 3 ? "v@" : "w@"),
                                 r[j]);
            }
            expect_no_event(w);
            fl_watch_free(w);
        }
        /* a list at a gap's revision is the state at the store's revision before it */
        collect at_gap, at_rev;
        list_keys(s, "/gap/", NULL, gap_at[i], 0, &at_gap, NULL, 0);
        list_keys(s, "/gap/", NULL, r[i], 0, &at_rev, NULL, 0);
        assert_string_equal(at_gap.buf, at_rev.buf);
        assert_int_equal(at_gap.n, (size_t)(i < 3 ? i + 1 : 3));
    }
    /* and a store opened at a gap (its head a revision it never wrote) goes on from there */
    reopen(f, 0);
    assert_true(fl_store_rev(f->s) >= gap_at[5]);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(f->s, "/gap/", r[4], &w), 0);
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/gap/2", "w@"), r[5]);
    int64_t next = put_upd(f->s, "/gap/0", "x");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/gap/0", "x@"), next);
    fl_watch_free(w);
}

/* Replica B's head moves over revisions it never saw an event for (a note, another
 * replica's opening at a later revision) through etcd's periodic progress notifications:
 * a resourceVersion that replica A hands out is reached by B without a write in between. */
static int setup_etcd_progress(void **state)
{
    setenv("ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL", "300ms", 1); /* etcd reads its flags from env */
    int rc = setup_etcd(state);
    unsetenv("ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL");
    return rc;
}

static void test_progress_notifications_move_the_head_over_other_revisions(void **state)
{
    fixture *f = *state;
    fl_store *b = f->s;
    int64_t r = put_new(b, "/p/k", "v");
    assert_int_equal(fl_store_note_set(b, "checkpoint", r), 0); /* a revision outside the prefix */
    fl_store *a = open_replica(f, 0);
    int64_t rv = fl_store_rev(a); /* what a list on A answers now */
    assert_true(rv > r);
    WAIT_UNTIL(fl_store_rev(b) >= rv, 5000);
    /* and the cache is still exact there: a write after it gets a later revision */
    int64_t next = put_upd(b, "/p/k", "w");
    assert_true(next > rv);
    WAIT_UNTIL(fl_store_rev(a) >= next, 5000);
    fl_store_free(a);
}

/* ---- etcd going away ---- */

/* etcd restarts under an open store: its watcher watches again from the revision after the
 * last it applied (nothing lost, nothing twice), and writes carry on. While etcd is down a
 * write fails with FL_ETIMEDOUT, never a false success, and a read from memory still answers. */
static void test_the_watcher_resumes_after_etcd_restarts_and_writes_fail_clearly_meanwhile(void **state)
{
    etcd_fixture *ef = *state;
    fixture *f = &ef->f;
    int64_t r1 = put_new(f->s, "/down/a", "1");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(f->s, "/down/", r1, &w), 0);
    fl_etcdtest_kill(&ef->t, 0);
    int64_t t0 = now_ms();
    assert_int_equal(do_write(f->s, FL_STORE_UPDATE, "/down/a", 0, "lost", NULL, NULL), FL_ETIMEDOUT);
    assert_true(now_ms() - t0 < 15000);
    assert_value(f->s, "/down/a", "1", r1);
    assert_int_equal(fl_etcdtest_restart(&ef->t, 0), 0);
    int64_t r2 = 0;
    for (int i = 0; i < 100 && r2 == 0; i++) { /* the client may need a moment to reconnect */
        if (do_write(f->s, FL_STORE_UPDATE, "/down/a", 0, "2", &r2, NULL) != 0)
            sleep_ms(100);
    }
    assert_true(r2 > r1);
    int64_t r3 = put_new(f->s, "/down/b", "3");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/down/a", "2@"), r2);
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/down/b", "3@"), r3);
    expect_no_event(w);
    fl_watch_free(w);
}

/* A replica that lagged past the cluster's compaction: B talks to one member only, which
 * goes down while A writes and compacts through the others. When the member is back, B's
 * watch from where it stopped is compacted away: B reads the state again, every watch
 * open on B expires (its client relists), and B goes on from the new state. */
static int setup_etcd3(void **state)
{
    etcd_fixture *ef = fl_calloc(1, sizeof(*ef));
    if (fl_etcdtest_start(&ef->t, 3) != 0)
        fail_msg("%s", ef->t.error);
    ef->f.etcd = ef->t.endpoints;
    ef->f.gaps = true;
    ef->f.renders = 2;
    ef->f.s = open_store(&ef->f, 0, false);
    *state = ef;
    return 0;
}

static void test_a_replica_that_lagged_past_compaction_reloads_and_expires_its_watches(void **state)
{
    etcd_fixture *ef = *state;
    fixture *f = &ef->f;
    int leader = fl_etcdtest_leader(&ef->t);
    int lone = leader == 2 ? 1 : 2; /* a follower: the cluster keeps its quorum without it */
    char others[2 * 64] = "";
    for (int i = 0; i < 3; i++) {
        if (i != lone) {
            size_t l = strlen(others);
            snprintf(others + l, sizeof others - l, "%s%s", l ? "," : "", ef->t.endpoint[i]);
        }
    }
    fixture fa = *f, fb = *f;
    fa.etcd = others;
    fb.etcd = ef->t.endpoint[lone];
    fl_store *a = open_store(&fa, 1, false), *b = open_store(&fb, 1, false);
    int64_t r1 = put_new(a, "/lag/k", "0");
    put_new(a, "/lag/gone", "g");
    WAIT_UNTIL(fl_store_rev(b) >= fl_store_rev(a), 5000);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(b, "/lag/", r1, &w), 0);
    fl_etcdtest_kill(&ef->t, lone);
    int64_t last = 0;
    for (int i = 0; i < 10; i++)
        last = put_upd(a, "/lag/k", "n");
    put_del(a, "/lag/gone", "g");
    last = put_new(a, "/lag/new", "new");
    int64_t crev = fl_store_compact(a);
    assert_true(crev >= last - 1);
    assert_int_equal(fl_etcdtest_restart(&ef->t, lone), 0);
    WAIT_UNTIL(fl_store_rev(b) >= last, 20000);
    /* B's state is A's, and its old watch expired rather than skip what was compacted */
    collect ca, cb;
    list_keys(a, "/lag/", NULL, 0, 0, &ca, NULL, 0);
    list_keys(b, "/lag/", NULL, 0, 0, &cb, NULL, 0);
    assert_string_equal(ca.buf, cb.buf);
    fl_watch_event *ev = NULL;
    int rc;
    while ((rc = fl_watch_next(w, &ev, 1000)) == 0) {
    }
    assert_int_equal(rc, FL_EEXPIRED);
    fl_watch_free(w);
    /* and B goes on: a watch from its head sees the next write */
    assert_int_equal(fl_store_watch(b, "/lag/", fl_store_rev(b), &w), 0);
    int64_t next = put_upd(a, "/lag/k", "after");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/lag/k", "after@"), next);
    fl_watch_free(w);
    fl_store_free(b);
    fl_store_free(a);
}

static void *background_update(void *arg)
{
    void **a = arg;
    int64_t rev = 0;
    a[2] = (void *)(intptr_t)do_write(a[0], FL_STORE_UPDATE, a[1], 0, "bg", &rev, NULL);
    return NULL;
}

/* /readyz's store check: a write that etcd leaves unanswered (its member stopped) fails the
 * write-path probe once it has waited past the bound; reads answer all along; once etcd
 * answers again the write ends and the probe passes. */
static void test_probe_says_wedged_while_etcd_leaves_a_write_unanswered(void **state)
{
    etcd_fixture *ef = *state;
    fixture *f = &ef->f;
    put_new(f->s, "/probe/k", "v");
    setenv("FLOTILLA_STORE_WEDGED_MS", "300", 1);
    char why[128] = "";
    assert_int_equal(fl_store_probe(f->s, true, why, sizeof why), 0);
    kill(ef->t.pid[0], SIGSTOP);
    void *a[3] = { f->s, "/probe/k", (void *)(intptr_t)1 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, background_update, a), 0);
    int rc = 0;
    for (int i = 0; i < 40 && rc == 0; i++) { /* at most 4 s */
        sleep_ms(100);
        rc = fl_store_probe(f->s, true, why, sizeof why);
    }
    assert_int_equal(rc, FL_ETIMEDOUT);
    assert_non_null(strstr(why, "waited"));
    assert_int_equal(fl_store_probe(f->s, false, NULL, 0), 0); /* reads still answer */
    kill(ef->t.pid[0], SIGCONT);
    pthread_join(t, NULL);
    assert_true((intptr_t)a[2] == 0 || (intptr_t)a[2] == FL_ETIMEDOUT); /* never a false success */
    assert_int_equal(fl_store_probe(f->s, true, why, sizeof why), 0);
    unsetenv("FLOTILLA_STORE_WEDGED_MS");
}

/* ---- compaction ---- */

/* Replica A compacts (winning the compaction key); B, which did not, learns it: an old list
 * on B is FL_EEXPIRED, and B's own compaction round is no second compaction of etcd. */
static void test_compaction_by_one_replica_expires_an_old_list_on_the_other(void **state)
{
    fixture *f = *state;
    reopen(f, 5);
    fl_store *a = f->s, *b = open_replica(f, 5);
    int64_t first = put_new(a, "/cmp/k", "0");
    for (int i = 0; i < 20; i++)
        put_upd(a, "/cmp/k", "n");
    WAIT_UNTIL(fl_store_rev(b) >= fl_store_rev(a), 5000);
    collect c;
    list_keys(b, "/cmp/", NULL, first, 0, &c, NULL, 0); /* not compacted yet */
    int64_t crev = fl_store_compact(a);
    assert_true(crev > first);
    list_keys(b, "/cmp/", NULL, first, 0, &c, NULL, FL_EEXPIRED);
    assert_true(fl_store_compact_rev(b) >= first); /* learned from etcd's answer */
    fl_blob *v = NULL;
    assert_int_equal(fl_store_get_at(b, "/cmp/k", first, &v), FL_EEXPIRED);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(b, "/cmp/", first - 1, &w), FL_EEXPIRED);
    /* B's round sees A's target on the key and takes it */
    assert_int_equal(fl_store_compact(b), crev);
    fl_store_free(b);
}

/* ---- throughput, printed for the record (bench numbers come from the same loops) ---- */

typedef struct bench_arg {
    fl_store *s;
    fl_etcd *c;
    int id, n;
    int64_t ns;
} bench_arg;

static char *render_obj(void *ctx, const fl_blob *current, int64_t rev, size_t *len)
{
    char *out = fl_asprintf("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%" PRId64
                            "\"},\"data\":{\"k\":\"%0512d\"}}",
                            (const char *)ctx, rev, 0);
    *len = strlen(out);
    return out;
}

static void *bench_store_main(void *arg)
{
    bench_arg *a = arg;
    int64_t t0 = now_ms();
    for (int i = 0; i < a->n; i++) {
        char key[64];
        snprintf(key, sizeof key, "/bench/s%d-%d", a->id, i);
        fl_store_op op = { .type = FL_STORE_CREATE, .key = key, .render = render_obj, .ctx = key };
        if (fl_store_write(a->s, &op) != 0)
            abort();
        fl_blob_unref(op.value);
    }
    a->ns = (now_ms() - t0) * 1000000;
    return NULL;
}

static void *bench_raw_main(void *arg)
{
    bench_arg *a = arg;
    int64_t t0 = now_ms();
    for (int i = 0; i < a->n; i++) {
        char key[64];
        snprintf(key, sizeof key, "/registry/bench/r%d-%d", a->id, i);
        size_t len;
        char *v = render_obj(key, NULL, 1, &len);
        fl_etcd_cmp cmp = { .key = key, .target = FL_ETCD_MOD, .result = FL_ETCD_EQUAL, .num = 0 };
        fl_etcd_op put = { .type = FL_ETCD_PUT, .key = key, .value = v, .value_len = len };
        fl_etcd_txn_result res = { 0 };
        fl_etcd_error e = { 0 };
        if (fl_etcd_txn(a->c, &cmp, 1, &put, 1, NULL, 0, &res, &e) != 0 || !res.succeeded)
            abort();
        fl_etcd_txn_result_free(&res);
        free(v);
    }
    a->ns = (now_ms() - t0) * 1000000;
    return NULL;
}

static double run_bench(fixture *f, fl_etcd *c, int threads, int per, bool raw)
{
    bench_arg a[8];
    pthread_t t[8];
    int64_t t0 = now_ms();
    for (int i = 0; i < threads; i++) {
        a[i] = (bench_arg){ .s = f->s, .c = c, .id = i + (raw ? 100 : 0) + threads * 1000, .n = per };
        pthread_create(&t[i], NULL, raw ? bench_raw_main : bench_store_main, &a[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    int64_t ms = now_ms() - t0;
    return ms > 0 ? (double)threads * per * 1000.0 / (double)ms : 0;
}

/* Creates through fl_store_write (a transaction, then waiting for the watcher to apply it)
 * against the same transactions sent straight to etcd, 1 and 8 writers, in one run. Every
 * write must succeed; the rates are printed for docs/internals/store.md. */
static void test_create_rate_through_the_store_and_straight_to_etcd(void **state)
{
    fixture *f = *state;
    fl_etcd *c = raw_client(f);
    int per = getenv("FL_ETCD_BENCH_N") ? atoi(getenv("FL_ETCD_BENCH_N")) : 100;
    for (int threads = 1; threads <= 8; threads *= 8) {
        double raw = run_bench(f, c, threads, per, true);
        double store = run_bench(f, c, threads, per, false);
        fprintf(stderr, "etcd creates, %d writer(s) x %d, 600-byte values: straight to etcd %.0f/s, "
                "through the store %.0f/s (%.2fx)\n", threads, per, raw, store, raw > 0 ? store / raw : 0);
    }
    assert_int_equal(fl_store_count(f->s, "/bench/"), (size_t)(per * 9) * 2);
    fl_etcd_free(c);
}

#define ETCD(t) { "etcd/" #t, t, setup_etcd, teardown_etcd, NULL }

int main(void)
{
    fl_mem_init();
    setenv("FLOTILLA_LOG", "warn", 0);
    fl_log_enabled(FL_LOG_ERROR); /* initialise the level before threads start */
    const struct CMUnitTest tests[] = {
        /* the contract, as every backend passes it */
        ETCD(test_create_get_update_delete),
        ETCD(test_create_passes_null_current_to_render),
        ETCD(test_stale_prev_rev_is_conflict_and_changes_nothing),
        ETCD(test_eexist_and_enotfound_consume_no_revision),
        ETCD(test_invalid_ops_are_rejected),
        ETCD(test_revisions_strictly_increase_and_equal_value_rev),
        ETCD(test_list_orders_by_key_within_prefix),
        ETCD(test_bare_list_leaves_the_values_written_up_to_a_revision_unread),
        ETCD(test_rest_lets_go_of_the_values_in_memory_and_readers_see_no_difference),
        ETCD(test_list_limit_more_and_start_after_page_through),
        ETCD(test_list_at_old_revision_sees_state_then),
        ETCD(test_watch_from_zero_replays_all_history),
        ETCD(test_watch_from_rev_delivers_only_later_revisions),
        ETCD(test_watch_older_than_ring_replays_from_log),
        ETCD(test_watch_sees_delete_with_final_value),
        ETCD(test_watch_cancel_wakes_blocked_next_with_eclosed),
        ETCD(test_store_free_ends_open_watches),
        ETCD(test_compaction_expires_old_watch_and_list),
        ETCD(test_compaction_keeps_latest_value_of_idle_keys),
        ETCD(test_get_at_reads_a_revision_of_the_key_from_the_log),
        ETCD(test_concurrent_writers_get_unique_revisions_and_watchers_see_each_once),
        ETCD(test_concurrent_cas_increments_are_never_lost),
        ETCD(test_watch_opened_during_writes_has_no_gap_or_duplicate),
        ETCD(test_reopen_keeps_values_revisions_and_head),
        ETCD(test_notes_outlive_a_reopen_and_move_no_revision),
        /* etcd's own */
        ETCD(test_stored_values_get_their_revision_back_where_the_header_says),
        ETCD(test_values_etcd_cannot_take_are_refused_and_nothing_is_written),
        ETCD(test_a_write_hands_back_the_bytes_its_readers_get),
        ETCD(test_two_replicas_see_each_others_writes_with_the_same_revisions_and_bytes),
        ETCD(test_a_watch_on_one_replica_sees_the_others_writes),
        ETCD(test_a_delete_with_a_new_final_value_is_an_update_then_the_delete),
        ETCD(test_gaps_in_the_revisions_break_no_watch_list_or_read_at_a_revision),
        ETCD(test_compaction_by_one_replica_expires_an_old_list_on_the_other),
        { "etcd/test_progress_notifications_move_the_head_over_other_revisions",
          test_progress_notifications_move_the_head_over_other_revisions, setup_etcd_progress, teardown_etcd, NULL },
        ETCD(test_the_watcher_resumes_after_etcd_restarts_and_writes_fail_clearly_meanwhile),
        ETCD(test_probe_says_wedged_while_etcd_leaves_a_write_unanswered),
        { "etcd3/test_a_replica_that_lagged_past_compaction_reloads_and_expires_its_watches",
          test_a_replica_that_lagged_past_compaction_reloads_and_expires_its_watches, setup_etcd3, teardown_etcd,
          NULL },
        ETCD(test_create_rate_through_the_store_and_straight_to_etcd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
