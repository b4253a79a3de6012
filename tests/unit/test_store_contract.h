/* test_store_contract.h - the store's contract as tests that every backend passes.
 *
 * Included by test_store.c (SQLite, memory) and test_store_etcd.c (etcd), each of which
 * registers these bodies with its own setup: one test body, run against every backend.
 * Nothing here names a backend except through the fixture: revisions are taken from what
 * the writes returned, never counted from 1, since an etcd store's first revision is 2 and
 * its revisions may skip; a delete whose final value differs from the current one is, on
 * etcd, an update then a delete (f->gaps), and a write calls its render f->renders times.
 *
 * Values are rendered as "<text>@<rev>", so a test can check that the bytes stored carry
 * the revision the store assigned. Include after <cmocka.h>. */
#ifndef TEST_STORE_CONTRACT_H
#define TEST_STORE_CONTRACT_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/mem.h"
#include "store/store.h"

/* ---- fixture ---- */

typedef struct fixture {
    char dir[64];
    char path[128];
    fl_store *s;
    bool memory;       /* a memory store instead of SQLite */
    size_t ring;       /* its ring_events (0 = default) */
    size_t split;      /* SQLite: its load_split_rows (0 = default) */
    size_t vcache;     /* SQLite: its value_cache_bytes (0 = default) */
    const char *etcd;  /* an etcd store on these servers instead (test_store_etcd.c) */
    const char *etcd_prefix; /* its prefix (NULL: the default) */
    int renders;       /* render calls per successful write (0: 1); etcd 2 (stand-in, then the revision) */
    bool gaps;         /* revisions may skip (etcd: a delete with a new final value takes two) */
} fixture;

static fl_store *open_store(fixture *f, int64_t window, bool durable)
{
    fl_store_config cfg = { .path = f->memory ? NULL : f->path, .compact_window = window,
                            .compact_interval_ms = -1, .durable = durable, .memory = f->memory,
                            .ring_events = f->ring, .load_split_rows = f->split,
                            .value_cache_bytes = f->vcache, .etcd_servers = f->etcd,
                            .etcd_prefix = f->etcd_prefix };
    fl_store *s = NULL;
    assert_int_equal(fl_store_open(&cfg, &s), 0);
    assert_non_null(s);
    return s;
}

static void reopen(fixture *f, int64_t window)
{
    fl_store_free(f->s);
    f->s = open_store(f, window, false);
}

/* ---- helpers ---- */

/* got is the revision of the write after the one at prev: prev + 1 on a store without gaps. */
static void assert_next_rev(const fixture *f, int64_t got, int64_t prev)
{
    if (f->gaps)
        assert_true(got > prev);
    else
        assert_int_equal(got, prev + 1);
}

/* "<text>@<rev>" in a buffer of the caller's. */
static const char *at(char *buf, size_t cap, const char *text, int64_t rev)
{
    snprintf(buf, cap, "%s@%lld", text, (long long)rev);
    return buf;
}

typedef struct render_ctx {
    const char *text;
    int calls;
    bool current_was_null;
    char current[256];
    unsigned delay_ms; /* sleep inside render, on the writer thread */
} render_ctx;

static char *render_text(void *ctx, const fl_blob *current, int64_t rev, size_t *len)
{
    render_ctx *rc = ctx;
    rc->calls++;
    rc->current_was_null = current == NULL;
    if (current)
        snprintf(rc->current, sizeof rc->current, "%s", current->data);
    if (rc->delay_ms)
        usleep(rc->delay_ms * 1000);
    char *out = fl_asprintf("%s@%lld", rc->text, (long long)rev);
    *len = strlen(out);
    return out;
}

static int do_write(fl_store *s, int type, const char *key, int64_t prev, const char *text, int64_t *rev_out,
                    render_ctx *rcx)
{
    render_ctx local = { .text = text };
    if (!rcx)
        rcx = &local;
    fl_store_op op = { .type = type, .key = key, .prev_rev = prev, .render = render_text, .ctx = rcx };
    int rc = fl_store_write(s, &op);
    if (rev_out)
        *rev_out = op.rev;
    if (rc == 0) {
        assert_non_null(op.value);
        char want[256];
        snprintf(want, sizeof want, "%s@%lld", text, (long long)op.rev);
        assert_string_equal(op.value->data, want);
    } else {
        assert_null(op.value);
    }
    fl_blob_unref(op.value);
    return rc;
}

static int64_t put_new(fl_store *s, const char *key, const char *text)
{
    int64_t rev = 0;
    assert_int_equal(do_write(s, FL_STORE_CREATE, key, 0, text, &rev, NULL), 0);
    return rev;
}

static int64_t put_upd(fl_store *s, const char *key, const char *text)
{
    int64_t rev = 0;
    assert_int_equal(do_write(s, FL_STORE_UPDATE, key, 0, text, &rev, NULL), 0);
    return rev;
}

static int64_t put_del(fl_store *s, const char *key, const char *text)
{
    int64_t rev = 0;
    assert_int_equal(do_write(s, FL_STORE_DELETE, key, 0, text, &rev, NULL), 0);
    return rev;
}

static void assert_value(fl_store *s, const char *key, const char *text, int64_t rev)
{
    fl_kv kv;
    assert_int_equal(fl_store_get(s, key, &kv), 0);
    char want[256];
    snprintf(want, sizeof want, "%s@%lld", text, (long long)rev);
    assert_string_equal(kv.value->data, want);
    assert_int_equal(kv.value->len, strlen(want));
    assert_int_equal(kv.rev, rev);
    fl_blob_unref(kv.value);
}

/* Collects a list into "key=value;" text. */
typedef struct collect {
    char buf[8192];
    size_t n;
    size_t stop_after; /* 0 = never stop */
} collect;

static bool collect_fn(void *ctx, const char *key, const fl_kv *kv)
{
    collect *c = ctx;
    c->n++;
    size_t used = strlen(c->buf);
    snprintf(c->buf + used, sizeof c->buf - used, "%s=%s;", key, kv->value->data);
    return !(c->stop_after && c->n >= c->stop_after);
}

static void list_keys(fl_store *s, const char *prefix, const char *after, int64_t at, size_t limit, collect *c,
                      bool *more, int rc_want)
{
    memset(c, 0, sizeof(*c));
    int64_t rev = -1;
    assert_int_equal(fl_store_list(s, prefix, after, at, limit, collect_fn, c, &rev, more), rc_want);
    if (rc_want == 0)
        assert_int_equal(rev, at ? at : fl_store_rev(s));
}

/* Reads the next event and checks it; returns its revision. */
static int64_t expect_event(fl_watch *w, int type, const char *key, const char *value_prefix)
{
    fl_watch_event *ev = NULL;
    assert_int_equal(fl_watch_next(w, &ev, 5000), 0);
    assert_non_null(ev);
    assert_int_equal(ev->type, type);
    assert_string_equal(ev->key, key);
    assert_non_null(ev->value);
    assert_true(strncmp(ev->value->data, value_prefix, strlen(value_prefix)) == 0);
    char tail[32];
    snprintf(tail, sizeof tail, "@%lld", (long long)ev->rev);
    assert_non_null(strstr(ev->value->data, tail));
    return ev->rev;
}

/* Reads a delete of key carrying the final value value_prefix...; returns its revision. On a
 * store with gaps (etcd) a delete whose final value is new comes as an update to that value,
 * then the delete: the update is checked and passed over. */
static int64_t expect_delete(const fixture *f, fl_watch *w, const char *key, const char *value_prefix)
{
    fl_watch_event *ev = NULL;
    assert_int_equal(fl_watch_next(w, &ev, 5000), 0);
    if (f->gaps && ev->type == FL_EV_PUT_UPDATE) {
        assert_string_equal(ev->key, key);
        assert_true(strncmp(ev->value->data, value_prefix, strlen(value_prefix)) == 0);
    } else {
        assert_int_equal(ev->type, FL_EV_DELETE);
        assert_string_equal(ev->key, key);
        assert_true(strncmp(ev->value->data, value_prefix, strlen(value_prefix)) == 0);
        return ev->rev;
    }
    return expect_event(w, FL_EV_DELETE, key, value_prefix);
}

static void expect_no_event(fl_watch *w)
{
    fl_watch_event *ev = NULL;
    assert_int_equal(fl_watch_next(w, &ev, 50), FL_ETIMEDOUT);
    assert_null(ev);
}

static void test_create_get_update_delete(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r0 = fl_store_rev(s); /* 0 on an empty SQLite or memory store; etcd's is 1 */

    int64_t r1 = put_new(s, "/a/1", "one");
    assert_next_rev(f, r1, r0);
    assert_value(s, "/a/1", "one", r1);
    fl_kv kv;
    assert_int_equal(fl_store_get(s, "/a/1", &kv), 0);
    assert_int_equal(kv.create_rev, r1);
    fl_blob_unref(kv.value);

    render_ctx rcx = { .text = "two" };
    int64_t r2 = 0;
    assert_int_equal(do_write(s, FL_STORE_UPDATE, "/a/1", r1, "two", &r2, &rcx), 0);
    assert_false(rcx.current_was_null);
    char buf[64];
    assert_string_equal(rcx.current, at(buf, sizeof buf, "one", r1));
    assert_value(s, "/a/1", "two", r2);
    assert_int_equal(fl_store_get(s, "/a/1", &kv), 0);
    assert_int_equal(kv.create_rev, r1); /* an update keeps the create revision */
    fl_blob_unref(kv.value);

    int64_t r3 = put_del(s, "/a/1", "final");
    assert_true(r3 > r2);
    assert_int_equal(fl_store_get(s, "/a/1", &kv), FL_ENOTFOUND);
    assert_null(kv.value);
    assert_int_equal(fl_store_count(s, "/a/"), 0);
    assert_int_equal(fl_store_rev(s), r3);

    /* Re-creating starts a new incarnation with a new create revision. */
    int64_t r4 = put_new(s, "/a/1", "again");
    assert_int_equal(fl_store_get(s, "/a/1", &kv), 0);
    assert_int_equal(kv.create_rev, r4);
    fl_blob_unref(kv.value);
}

static void test_create_passes_null_current_to_render(void **state)
{
    fixture *f = *state;
    render_ctx rcx = { .text = "x" };
    assert_int_equal(do_write(f->s, FL_STORE_CREATE, "/k", 0, "x", NULL, &rcx), 0);
    assert_int_equal(rcx.calls, f->renders ? f->renders : 1);
    assert_true(rcx.current_was_null);
}

static void test_stale_prev_rev_is_conflict_and_changes_nothing(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/k", "v1");
    int64_t r2 = put_upd(s, "/k", "v2");
    render_ctx rcx = { .text = "v3" };
    assert_int_equal(do_write(s, FL_STORE_UPDATE, "/k", r1, "v3", NULL, &rcx), FL_ECONFLICT);
    assert_int_equal(do_write(s, FL_STORE_DELETE, "/k", r1, "gone", NULL, &rcx), FL_ECONFLICT);
    assert_int_equal(rcx.calls, 0); /* render is never called for a failed op */
    assert_int_equal(fl_store_rev(s), r2);
    assert_value(s, "/k", "v2", r2);
    /* The right previous revision wins. */
    int64_t r3 = 0;
    assert_int_equal(do_write(s, FL_STORE_UPDATE, "/k", r2, "v3", &r3, NULL), 0);
    assert_next_rev(f, r3, r2);
}

static void test_eexist_and_enotfound_consume_no_revision(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/k", "v1");
    render_ctx rcx = { .text = "nope" };
    assert_int_equal(do_write(s, FL_STORE_CREATE, "/k", 0, "nope", NULL, &rcx), FL_EEXIST);
    assert_int_equal(do_write(s, FL_STORE_UPDATE, "/missing", 0, "nope", NULL, &rcx), FL_ENOTFOUND);
    assert_int_equal(do_write(s, FL_STORE_DELETE, "/missing", 0, "nope", NULL, &rcx), FL_ENOTFOUND);
    assert_int_equal(rcx.calls, 0);
    assert_int_equal(fl_store_rev(s), r1);
    assert_next_rev(f, put_new(s, "/k2", "v"), r1);
}

static void test_invalid_ops_are_rejected(void **state)
{
    fixture *f = *state;
    int64_t r0 = fl_store_rev(f->s);
    fl_store_op op = { .type = 42, .key = "/k", .render = render_text };
    assert_int_equal(fl_store_write(f->s, &op), FL_EINVAL);
    fl_store_op op2 = { .type = FL_STORE_CREATE, .key = NULL, .render = render_text };
    assert_int_equal(fl_store_write(f->s, &op2), FL_EINVAL);
    assert_int_equal(fl_store_rev(f->s), r0);
}

static void test_revisions_strictly_increase_and_equal_value_rev(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t last = 0;
    for (int i = 0; i < 50; i++) {
        char key[32];
        snprintf(key, sizeof key, "/k/%d", i % 7);
        int64_t rev = 0;
        fl_kv kv;
        int type = fl_store_get(s, key, &kv) == 0 ? FL_STORE_UPDATE : FL_STORE_CREATE;
        fl_blob_unref(kv.value);
        assert_int_equal(do_write(s, type, key, 0, "v", &rev, NULL), 0);
        assert_true(rev > last);
        assert_int_equal(fl_store_rev(s), rev);
        assert_value(s, key, "v", rev); /* rendered bytes carry the same revision */
        last = rev;
    }
}

#define NSEED 8
static const char *const SEED_KEYS[NSEED] = { "/b/2", "/a/3", "/b/1", "/a/1", "/ab/1", "/a/2", "/c", "/a0" };
static int64_t seed_revs[NSEED]; /* the revision each of SEED_KEYS was created at */

static void seed_list(fl_store *s)
{
    for (size_t i = 0; i < NSEED; i++)
        seed_revs[i] = put_new(s, SEED_KEYS[i], "v");
}

/* What a list of the seeded keys named in `keys` (space-separated) collects: "k=v@<rev>;"... */
static const char *seeded(char *buf, size_t cap, const char *keys)
{
    char *list = fl_strdup(keys), *save = NULL;
    buf[0] = 0;
    for (char *k = strtok_r(list, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
        int64_t rev = 0;
        for (size_t i = 0; i < NSEED; i++)
            if (!strcmp(SEED_KEYS[i], k))
                rev = seed_revs[i];
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, "%s=v@%lld;", k, (long long)rev);
    }
    free(list);
    return buf;
}

static bool keys_only_fn(void *ctx, const char *key, const fl_kv *kv)
{
    char *buf = ctx;
    strcat(buf, key);
    strcat(buf, " ");
    return true;
}

static void test_list_orders_by_key_within_prefix(void **state)
{
    fixture *f = *state;
    seed_list(f->s);
    char buf[512] = "";
    int64_t rev = 0;
    bool more = true;
    assert_int_equal(fl_store_list(f->s, "/a/", NULL, 0, 0, keys_only_fn, buf, &rev, &more), 0);
    assert_string_equal(buf, "/a/1 /a/2 /a/3 ");
    assert_false(more);
    assert_int_equal(rev, fl_store_rev(f->s));
    buf[0] = 0;
    assert_int_equal(fl_store_list(f->s, "", NULL, 0, 0, keys_only_fn, buf, &rev, NULL), 0);
    assert_string_equal(buf, "/a/1 /a/2 /a/3 /a0 /ab/1 /b/1 /b/2 /c ");
    assert_int_equal(fl_store_count(f->s, "/a"), 5);
    assert_int_equal(fl_store_count(f->s, "/a/"), 3);
    assert_int_equal(fl_store_count(f->s, ""), 8);
    assert_int_equal(fl_store_count(f->s, "/zz"), 0);
}

/* Collects a bare list as "key@rev=value;" text, "-" for a value left unread. */
static bool bare_fn(void *ctx, const char *key, const fl_kv *kv)
{
    collect *c = ctx;
    size_t used = strlen(c->buf);
    snprintf(c->buf + used, sizeof c->buf - used, "%s@%lld=%s;", key, (long long)kv->rev,
             kv->value ? kv->value->data : "-");
    return true;
}

/* A bare list gives the keys last written at or before its revision without their values,
 * the others with theirs, whether the values are in memory or (reopened) in the file. */
static void test_bare_list_leaves_the_values_written_up_to_a_revision_unread(void **state)
{
    fixture *f = *state;
    int64_t r1 = put_new(f->s, "/a/1", "one");
    put_new(f->s, "/a/2", "two");
    int64_t upto = put_new(f->s, "/b/1", "other");
    int64_t r2 = put_upd(f->s, "/a/2", "two-b");
    int64_t r3 = put_new(f->s, "/a/3", "three");
    put_new(f->s, "/a/4", "gone");
    put_del(f->s, "/a/4", "gone");
    for (int round = 0; round < (f->memory ? 1 : 2); round++) {
        if (round)
            reopen(f, 0); /* nothing in memory: every value read comes from the file */
        collect c;
        memset(&c, 0, sizeof c);
        int64_t rev = -1;
        assert_int_equal(fl_store_list_bare(f->s, "/a/", upto, bare_fn, &c, &rev), 0);
        assert_int_equal(rev, fl_store_rev(f->s));
        char want[256];
        snprintf(want, sizeof want, "/a/1@%lld=-;/a/2@%lld=two-b@%lld;/a/3@%lld=three@%lld;", (long long)r1,
                 (long long)r2, (long long)r2, (long long)r3, (long long)r3);
        assert_string_equal(c.buf, want);
        memset(&c, 0, sizeof c);
        assert_int_equal(fl_store_list_bare(f->s, "/a/", 0, bare_fn, &c, &rev), 0); /* none bare */
        snprintf(want, sizeof want, "/a/1@%lld=one@%lld;/a/2@%lld=two-b@%lld;/a/3@%lld=three@%lld;", (long long)r1,
                 (long long)r1, (long long)r2, (long long)r2, (long long)r3, (long long)r3);
        assert_string_equal(c.buf, want);
    }
}

/* At rest the store lets go of the values it keeps in memory to be quick; reads, lists and
 * watches from before the head see the same as before. */
static void test_rest_lets_go_of_the_values_in_memory_and_readers_see_no_difference(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/w/a", "a1");
    int64_t rb = put_new(s, "/w/b", "b1");
    int64_t ra = put_upd(s, "/w/a", "a2");
    put_new(s, "/w/c", "c1");
    put_del(s, "/w/c", "c1");
    size_t before = fl_store_quick_bytes(s);
    fl_store_rest(s);
    bool keeps_all = f->memory || f->etcd;
    if (keeps_all) { /* its values are its state */
        assert_int_equal(before, 0);
    } else {
        assert_true(before > 0);
        assert_int_equal(fl_store_quick_bytes(s), 0);
    }
    fl_kv kv;
    assert_int_equal(fl_store_get(s, "/w/a", &kv), 0);
    assert_true(strncmp(kv.value->data, "a2@", 3) == 0);
    fl_blob_unref(kv.value);
    collect c;
    bool more = false;
    list_keys(s, "/w/", NULL, 0, 0, &c, &more, 0);
    char want[128];
    snprintf(want, sizeof want, "/w/a=a2@%lld;/w/b=b1@%lld;", (long long)ra, (long long)rb);
    assert_string_equal(c.buf, want);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/w/", r1, &w), 0);
    expect_event(w, FL_EV_PUT_CREATE, "/w/b", "b1@");
    expect_event(w, FL_EV_PUT_UPDATE, "/w/a", "a2@");
    expect_event(w, FL_EV_PUT_CREATE, "/w/c", "c1@");
    fl_watch_event *ev = NULL;
    assert_int_equal(fl_watch_next(w, &ev, 5000), 0);
    assert_int_equal(ev->type, FL_EV_DELETE);
    assert_string_equal(ev->key, "/w/c");
    expect_no_event(w);
    /* and writing goes on as before */
    int64_t r = put_upd(s, "/w/b", "b2");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/b", "b2@"), r);
    fl_watch_free(w);
    if (!keeps_all)
        assert_true(fl_store_quick_bytes(s) > 0);
}

static void test_list_limit_more_and_start_after_page_through(void **state)
{
    fixture *f = *state;
    seed_list(f->s);
    collect c;
    char buf[256];
    bool more = false;
    list_keys(f->s, "/", NULL, 0, 3, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/a/1 /a/2 /a/3"));
    assert_true(more);
    list_keys(f->s, "/", "/a/3", 0, 3, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/a0 /ab/1 /b/1"));
    assert_true(more);
    list_keys(f->s, "/", "/b/1", 0, 3, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/b/2 /c"));
    assert_false(more);
    /* Exactly `limit` keys left: no more. */
    list_keys(f->s, "/b/", NULL, 0, 2, &c, &more, 0);
    assert_int_equal(c.n, 2);
    assert_false(more);
    /* start_after before the prefix starts at the prefix; a key not present works too. */
    list_keys(f->s, "/b/", "/a", 0, 0, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/b/1 /b/2"));
    list_keys(f->s, "/a/", "/a/15", 0, 0, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/a/2 /a/3"));
    /* A callback that stops early still learns whether keys remain. */
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    int64_t rev;
    assert_int_equal(fl_store_list(f->s, "/a/", NULL, 0, 0, collect_fn, &c, &rev, &more), 0);
    assert_int_equal(c.n, 1);
    assert_true(more);
}

static void test_list_at_old_revision_sees_state_then(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    seed_list(s);
    char buf[256];
    int64_t snap = fl_store_rev(s);
    put_upd(s, "/a/1", "changed");
    put_del(s, "/a/2", "gone");
    put_new(s, "/a/4", "later");
    put_del(s, "/a0", "gone");
    put_new(s, "/a0", "reborn");

    collect c;
    bool more = false;
    list_keys(s, "/a/", NULL, snap, 0, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/a/1 /a/2 /a/3"));
    assert_false(more);
    /* Paginating the old snapshot: limit, more and start_after behave as in memory. */
    list_keys(s, "/a", NULL, snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/a/1 /a/2"));
    assert_true(more);
    list_keys(s, "/a", "/a/2", snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/a/3 /a0"));
    assert_true(more);
    list_keys(s, "/a", "/a0", snap, 2, &c, &more, 0);
    assert_string_equal(c.buf, seeded(buf, sizeof buf, "/ab/1"));
    assert_false(more);
    /* At the head, the log and memory agree. */
    collect mem;
    list_keys(s, "/", NULL, 0, 0, &mem, NULL, 0);
    list_keys(s, "/", NULL, fl_store_rev(s), 0, &c, NULL, 0);
    assert_string_equal(c.buf, mem.buf);
    /* A revision in the future is refused. */
    list_keys(s, "/", NULL, fl_store_rev(s) + 5, 0, &c, NULL, FL_EINVAL);
}

static void test_watch_from_zero_replays_all_history(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/w/a", "a1");
    put_new(s, "/x/a", "other");
    int64_t r3 = put_upd(s, "/w/a", "a2");
    int64_t r4 = put_del(s, "/w/a", "a-final");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/w/", 0, &w), 0);
    assert_int_equal(fl_store_watch_count(s), 1);
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/w/a", "a1@"), r1);
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/a", "a2@"), r3);
    assert_int_equal(expect_delete(f, w, "/w/a", "a-final@"), r4);
    expect_no_event(w);
    int64_t r5 = put_new(s, "/w/b", "live");
    assert_int_equal(expect_event(w, FL_EV_PUT_CREATE, "/w/b", "live@"), r5);
    fl_watch_free(w);
    assert_int_equal(fl_store_watch_count(s), 0);
}

static void test_watch_from_rev_delivers_only_later_revisions(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    put_new(s, "/w/a", "a1");
    int64_t r2 = put_new(s, "/w/b", "b1");
    int64_t r3 = put_upd(s, "/w/a", "a2");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/w/", r2, &w), 0);
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/a", "a2@"), r3);
    expect_no_event(w);
    fl_watch_free(w);
    /* From the head: nothing old, then live. */
    assert_int_equal(fl_store_watch(s, "/w/", fl_store_rev(s), &w), 0);
    expect_no_event(w);
    int64_t r = put_upd(s, "/w/b", "b2");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/b", "b2@"), r);
    fl_watch_free(w);
    /* From a future revision: events up to it are skipped. */
    int64_t head = fl_store_rev(s);
    assert_int_equal(fl_store_watch(s, "/w/", head + 1, &w), 0);
    put_upd(s, "/w/b", "b3");
    r = put_upd(s, "/w/b", "b4");
    assert_int_equal(expect_event(w, FL_EV_PUT_UPDATE, "/w/b", "b4@"), r);
    fl_watch_free(w);
}

static void test_watch_older_than_ring_replays_from_log(void **state)
{
    fixture *f = *state;
    /* After a restart the ring is empty: revisions before it come from the log. */
    for (int i = 0; i < 1500; i++) {
        char key[32];
        snprintf(key, sizeof key, "/w/%04d", i % 300);
        if (i < 300)
            put_new(f->s, key, "v");
        else
            put_upd(f->s, key, "v");
        if (i % 10 == 0) {
            snprintf(key, sizeof key, "/other/%d", i);
            put_new(f->s, key, "o"); /* outside the prefix: filtered out */
        }
    }
    int64_t before = fl_store_rev(f->s);
    reopen(f, 0);
    fl_store *s = f->s;
    for (int i = 0; i < 5; i++)
        put_upd(s, "/w/0000", "after");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/w/", 0, &w), 0);
    int64_t last = 0;
    size_t n = 0, creates = 0;
    fl_watch_event *ev;
    while (fl_watch_next(w, &ev, 200) == 0) {
        assert_true(ev->rev > last); /* in order, no duplicates */
        assert_true(strncmp(ev->key, "/w/", 3) == 0);
        creates += ev->type == FL_EV_PUT_CREATE;
        last = ev->rev;
        n++;
    }
    assert_int_equal(n, 1500 + 5);
    assert_int_equal(creates, 300);
    assert_int_equal(last, fl_store_rev(s));
    assert_true(last > before);
    fl_watch_free(w);

    /* From the middle of the log. */
    assert_int_equal(fl_store_watch(s, "/w/", before - 3, &w), 0);
    n = 0;
    while (fl_watch_next(w, &ev, 200) == 0) {
        assert_true(ev->rev > before - 3);
        n++;
    }
    assert_true(n >= 5 && n <= 8);
    fl_watch_free(w);
}

static void test_watch_sees_delete_with_final_value(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/w/a", "a1");
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/w/", fl_store_rev(s), &w), 0);
    render_ctx rcx = { .text = "final-state" };
    int64_t rev = 0;
    assert_int_equal(do_write(s, FL_STORE_DELETE, "/w/a", 0, "final-state", &rev, &rcx), 0);
    char buf[64];
    assert_string_equal(rcx.current, at(buf, sizeof buf, "a1", r1)); /* the delete's render saw the last value */
    assert_int_equal(expect_delete(f, w, "/w/a", "final-state@"), rev);
    fl_watch_free(w);
    /* Same from the log after a restart. */
    reopen(f, 0);
    assert_int_equal(fl_store_watch(f->s, "/w/", r1, &w), 0);
    assert_int_equal(expect_delete(f, w, "/w/a", "final-state@"), rev);
    fl_watch_free(w);
}

typedef struct waiter {
    fl_watch *w;
    int rc;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *wt = arg;
    fl_watch_event *ev;
    wt->rc = fl_watch_next(wt->w, &ev, -1);
    return NULL;
}

static void test_watch_cancel_wakes_blocked_next_with_eclosed(void **state)
{
    fixture *f = *state;
    waiter wt = { 0 };
    assert_int_equal(fl_store_watch(f->s, "/", 0, &wt.w), 0);
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &wt);
    usleep(50000);
    fl_watch_cancel(wt.w);
    pthread_join(t, NULL);
    assert_int_equal(wt.rc, FL_ECLOSED);
    fl_watch_event *ev;
    assert_int_equal(fl_watch_next(wt.w, &ev, 0), FL_ECLOSED);
    fl_watch_free(wt.w);
}

static void test_store_free_ends_open_watches(void **state)
{
    fixture *f = *state;
    waiter wt = { 0 };
    assert_int_equal(fl_store_watch(f->s, "/", 0, &wt.w), 0);
    fl_watch *idle = NULL;
    assert_int_equal(fl_store_watch(f->s, "/", 0, &idle), 0);
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &wt);
    usleep(50000);
    fl_store_free(f->s);
    f->s = NULL;
    pthread_join(t, NULL);
    assert_int_equal(wt.rc, FL_ECLOSED);
    fl_watch_event *ev;
    assert_int_equal(fl_watch_next(idle, &ev, 0), FL_ECLOSED);
    /* Watches outlive the store safely. */
    fl_watch_free(wt.w);
    fl_watch_free(idle);
    f->s = open_store(f, 0, false);
}

static void test_compaction_expires_old_watch_and_list(void **state)
{
    fixture *f = *state;
    reopen(f, 10); /* window of 10 revisions */
    fl_store *s = f->s;
    int64_t r0 = fl_store_rev(s);
    put_new(s, "/c/keep", "k");
    put_new(s, "/c/gone", "g");
    for (int i = 0; i < 30; i++)
        put_upd(s, "/c/keep", "k");
    put_del(s, "/c/gone", "final");
    for (int i = 0; i < 10; i++)
        put_upd(s, "/c/keep", "k");
    int64_t head = fl_store_rev(s);
    int64_t old_snap = r0 + 5;
    /* A watch opened before compaction that must read its history from the log
     * (the ring starts empty after a restart). */
    reopen(f, 10);
    s = f->s;
    fl_watch *w_old = NULL;
    assert_int_equal(fl_store_watch(s, "/c/", r0 + 2, &w_old), 0);

    int64_t crev = fl_store_compact(s);
    assert_int_equal(crev, head - 10);
    assert_int_equal(fl_store_compact_rev(s), crev);

    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(s, "/c/", crev - 1, &w), FL_EEXPIRED);
    assert_null(w);
    collect c;
    list_keys(s, "/c/", NULL, old_snap, 0, &c, NULL, FL_EEXPIRED);
    /* The watch opened earlier needs compacted history: it expires on replay. */
    fl_watch_event *ev;
    assert_int_equal(fl_watch_next(w_old, &ev, 100), FL_EEXPIRED);
    fl_watch_free(w_old);

    /* At and above the compaction revision everything still works. */
    list_keys(s, "/c/", NULL, crev, 0, &c, NULL, 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(fl_store_watch(s, "/c/", crev, &w), 0);
    int n = 0;
    while (fl_watch_next(w, &ev, 100) == 0)
        n++;
    assert_int_equal(n, 10);
    fl_watch_free(w);

    /* The compaction revision is durable. */
    reopen(f, 10);
    s = f->s;
    assert_int_equal(fl_store_compact_rev(s), crev);
    if (f->gaps) /* etcd: compaction's own key took a revision of the cluster's */
        assert_true(fl_store_rev(s) >= head);
    else
        assert_int_equal(fl_store_rev(s), head);
    list_keys(s, "/c/", NULL, old_snap, 0, &c, NULL, FL_EEXPIRED);
    assert_int_equal(fl_store_watch(s, "/c/", crev - 1, &w), FL_EEXPIRED);
    assert_int_equal(fl_store_watch(s, "/c/", crev, &w), 0);
    n = 0;
    while (fl_watch_next(w, &ev, 100) == 0)
        n++;
    assert_int_equal(n, 10);
    fl_watch_free(w);
    assert_value(s, "/c/keep", "k", head);
    assert_int_equal(fl_store_count(s, "/c/"), 1);
    /* Revisions continue after the head, never reused. */
    int64_t before = fl_store_rev(s);
    assert_next_rev(f, put_new(s, "/c/new", "n"), before);
}

static void test_compaction_keeps_latest_value_of_idle_keys(void **state)
{
    fixture *f = *state;
    reopen(f, 5);
    fl_store *s = f->s;
    int64_t r = put_new(s, "/idle", "old");
    for (int i = 0; i < 50; i++) {
        put_new(s, "/busy", "b");
        put_del(s, "/busy", "x");
    }
    fl_store_compact(s);
    reopen(f, 5);
    assert_value(f->s, "/idle", "old", r);
    assert_int_equal(fl_store_count(f->s, ""), 1);
}

static void test_get_at_reads_a_revision_of_the_key_from_the_log(void **state)
{
    fixture *f = *state;
    reopen(f, 3);
    fl_store *s = f->s;
    int64_t r1 = put_new(s, "/k", "v1");
    int64_t r2 = put_upd(s, "/k", "v2");
    int64_t other = put_new(s, "/other", "o");
    fl_blob *b = NULL;
    assert_int_equal(fl_store_get_at(s, "/k", r1, &b), 0); /* superseded: from the log */
    char v1[32];
    assert_string_equal(b->data, at(v1, sizeof v1, "v1", r1));
    fl_blob_unref(b);
    assert_int_equal(fl_store_get_at(s, "/k", r2, &b), 0);
    char want[32];
    snprintf(want, sizeof want, "v2@%lld", (long long)r2);
    assert_string_equal(b->data, want);
    fl_blob_unref(b);
    assert_int_equal(fl_store_get_at(s, "/k", other, &b), FL_EEXPIRED); /* another key's */
    assert_null(b);
    for (int i = 0; i < 10; i++)
        put_upd(s, "/other", "o");
    fl_store_compact(s);
    assert_int_equal(fl_store_get_at(s, "/k", r1, &b), FL_EEXPIRED); /* compacted */
    assert_null(b);
    assert_int_equal(fl_store_get_at(s, "/k", r2, &b), 0); /* still current */
    fl_blob_unref(b);
}

#define WRITERS 8

#define PER_WRITER 250

typedef struct writer_arg {
    fl_store *s;
    int id;
    int64_t revs[PER_WRITER];
} writer_arg;

static void *writer_main(void *arg)
{
    writer_arg *a = arg;
    for (int i = 0; i < PER_WRITER; i++) {
        char key[32], text[32];
        snprintf(key, sizeof key, "/cw/%d/%d", a->id, i % 20);
        snprintf(text, sizeof text, "w%d-%d", a->id, i);
        render_ctx rcx = { .text = text };
        fl_store_op op = { .type = i < 20 ? FL_STORE_CREATE : FL_STORE_UPDATE, .key = key, .render = render_text,
                           .ctx = &rcx };
        int rc = fl_store_write(a->s, &op);
        if (rc != 0 || !op.value) {
            fprintf(stderr, "writer %d op %d: %s\n", a->id, i, fl_strerror(rc));
            abort();
        }
        fl_blob_unref(op.value);
        a->revs[i] = op.rev;
    }
    return NULL;
}

typedef struct counter_arg {
    fl_store *s;
    int conflicts;
} counter_arg;

/* Read-modify-write loops on one key: CAS must make every increment count. */
static void *counter_main(void *arg)
{
    counter_arg *a = arg;
    for (int i = 0; i < 50;) {
        fl_kv kv;
        assert_int_equal(fl_store_get(a->s, "/counter", &kv), 0);
        char text[32];
        snprintf(text, sizeof text, "%ld", strtol(kv.value->data, NULL, 10) + 1);
        fl_blob_unref(kv.value);
        render_ctx rcx = { .text = text };
        fl_store_op op = { .type = FL_STORE_UPDATE, .key = "/counter", .prev_rev = kv.rev, .render = render_text,
                           .ctx = &rcx };
        int rc = fl_store_write(a->s, &op);
        fl_blob_unref(op.value);
        if (rc == FL_ECONFLICT) {
            a->conflicts++;
            continue;
        }
        assert_int_equal(rc, 0);
        i++;
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_concurrent_writers_get_unique_revisions_and_watchers_see_each_once(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    int64_t r0 = fl_store_rev(s);
    fl_watch *all = NULL, *one = NULL;
    assert_int_equal(fl_store_watch(s, "/cw/", 0, &all), 0);
    assert_int_equal(fl_store_watch(s, "/cw/3/", 0, &one), 0);
    writer_arg args[WRITERS];
    pthread_t t[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        args[i].s = s;
        args[i].id = i;
        pthread_create(&t[i], NULL, writer_main, &args[i]);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(t[i], NULL);

    int64_t *revs = fl_malloc(sizeof(int64_t) * WRITERS * PER_WRITER);
    size_t n = 0;
    for (int i = 0; i < WRITERS; i++) {
        for (int j = 0; j < PER_WRITER; j++) {
            if (j > 0)
                assert_true(args[i].revs[j] > args[i].revs[j - 1]); /* a caller's writes stay ordered */
            revs[n++] = args[i].revs[j];
        }
    }
    qsort(revs, n, sizeof(*revs), cmp_i64);
    for (size_t i = 0; i < n; i++)
        assert_next_rev(f, revs[i], i ? revs[i - 1] : r0); /* unique (and gap-free without gaps) */
    assert_int_equal(fl_store_rev(s), revs[n - 1]);

    /* Every event exactly once, in revision order, with per-key values in write order. */
    fl_watch_event *ev;
    int64_t last = 0;
    size_t seen = 0;
    while (fl_watch_next(all, &ev, 200) == 0) {
        assert_true(seen < n);
        assert_int_equal(ev->rev, revs[seen]);
        last = ev->rev;
        seen++;
    }
    free(revs);
    assert_int_equal(seen, WRITERS * PER_WRITER);
    seen = 0;
    last = 0;
    while (fl_watch_next(one, &ev, 200) == 0) {
        assert_true(ev->rev > last);
        assert_true(strncmp(ev->key, "/cw/3/", 6) == 0);
        assert_int_equal(ev->rev, args[3].revs[seen]);
        last = ev->rev;
        seen++;
    }
    assert_int_equal(seen, PER_WRITER);
    fl_watch_free(all);
    fl_watch_free(one);
    assert_int_equal(fl_store_count(s, "/cw/"), WRITERS * 20);
}

static void test_concurrent_cas_increments_are_never_lost(void **state)
{
    fixture *f = *state;
    put_new(f->s, "/counter", "0");
    /* Values are "<n>@<rev>"; strtol reads n. */
    counter_arg a[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (counter_arg){ f->s, 0 };
        pthread_create(&t[i], NULL, counter_main, &a[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    fl_kv kv;
    assert_int_equal(fl_store_get(f->s, "/counter", &kv), 0);
    assert_int_equal(strtol(kv.value->data, NULL, 10), 200);
    fl_blob_unref(kv.value);
}

typedef struct live_watcher {
    fl_store *s;
    int64_t from;
    const bool *writers_done;   /* every write returned, so every event is queued or in the log */
    int64_t revs[WRITERS * PER_WRITER + 1];
    size_t got;
} live_watcher;

static void *live_watch_main(void *arg)
{
    live_watcher *lw = arg;
    fl_watch *w = NULL;
    if (fl_store_watch(lw->s, "/cw/", lw->from, &w) != 0)
        return NULL;
    fl_watch_event *ev;
    for (;;) {
        /* read whether the writers were done before waiting: a timeout after that is the end */
        bool done = __atomic_load_n(lw->writers_done, __ATOMIC_ACQUIRE);
        int rc = fl_watch_next(w, &ev, 100);
        if (rc == 0 && lw->got <= WRITERS * PER_WRITER)
            lw->revs[lw->got++] = ev->rev;
        else if (rc != FL_ETIMEDOUT || done)
            break;
    }
    fl_watch_free(w);
    return NULL;
}

static void test_watch_opened_during_writes_has_no_gap_or_duplicate(void **state)
{
    fixture *f = *state;
    fl_store *s = f->s;
    writer_arg args[WRITERS];
    pthread_t t[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        args[i].s = s;
        args[i].id = i;
        pthread_create(&t[i], NULL, writer_main, &args[i]);
    }
    /* Watchers open at different moments while the writers run, each from the
     * head it observes (or from 0, mixing log/ring replay with live events). */
    bool done = false;
    live_watcher *lw = fl_calloc(6, sizeof(*lw));
    pthread_t wt[6];
    for (int i = 0; i < 6; i++) {
        usleep(2000);
        lw[i].s = s;
        lw[i].from = i % 2 ? fl_store_rev(s) : 0;
        lw[i].writers_done = &done;
        pthread_create(&wt[i], NULL, live_watch_main, &lw[i]);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(t[i], NULL);
    __atomic_store_n(&done, true, __ATOMIC_RELEASE);
    /* every write's revision, in order: what each watcher must have seen above its start */
    int64_t *revs = fl_malloc(sizeof(int64_t) * WRITERS * PER_WRITER);
    size_t n = 0;
    for (int i = 0; i < WRITERS; i++)
        for (int j = 0; j < PER_WRITER; j++)
            revs[n++] = args[i].revs[j];
    qsort(revs, n, sizeof(*revs), cmp_i64);
    for (int i = 0; i < 6; i++) {
        pthread_join(wt[i], NULL);
        size_t first = 0;
        while (first < n && revs[first] <= lw[i].from)
            first++;
        assert_int_equal(lw[i].got, n - first); /* no gap, no duplicate */
        for (size_t j = 0; j < lw[i].got; j++)
            assert_int_equal(lw[i].revs[j], revs[first + j]);
    }
    free(revs);
    free(lw);
}

static void test_reopen_keeps_values_revisions_and_head(void **state)
{
    fixture *f = *state;
    int64_t r1 = put_new(f->s, "/r/a", "a");
    int64_t r2 = put_new(f->s, "/r/b", "b");
    put_del(f->s, "/r/b", "b-final");
    int64_t r4 = put_upd(f->s, "/r/a", "a2");
    int64_t head = fl_store_rev(f->s);
    reopen(f, 0);
    assert_int_equal(fl_store_rev(f->s), head);
    assert_value(f->s, "/r/a", "a2", r4);
    fl_kv kv;
    assert_int_equal(fl_store_get(f->s, "/r/a", &kv), 0);
    assert_int_equal(kv.create_rev, r1);
    fl_blob_unref(kv.value);
    assert_int_equal(fl_store_get(f->s, "/r/b", &kv), FL_ENOTFOUND);
    assert_int_equal(fl_store_count(f->s, "/r/"), 1);
    collect c;
    list_keys(f->s, "/r/", NULL, r2, 0, &c, NULL, 0);
    char want[64];
    snprintf(want, sizeof want, "/r/a=a@%lld;/r/b=b@%lld;", (long long)r1, (long long)r2);
    assert_string_equal(c.buf, want);
    assert_next_rev(f, put_new(f->s, "/r/c", "c"), head);
}

/* A note survives a reopen, a second set replaces it, and neither moves the revision or
 * reaches a watch; a name never set is not found. */
static void test_notes_outlive_a_reopen_and_move_no_revision(void **state)
{
    fixture *f = *state;
    put_new(f->s, "/n/a", "a");
    int64_t head = fl_store_rev(f->s);
    fl_watch *w = NULL;
    assert_int_equal(fl_store_watch(f->s, "/", head, &w), 0);
    int64_t v = -1;
    assert_int_equal(fl_store_note_get(f->s, "checkpoint", &v), FL_ENOTFOUND);
    assert_int_equal(fl_store_note_set(f->s, "checkpoint", 41), 0);
    assert_int_equal(fl_store_note_set(f->s, "checkpoint", head), 0);
    assert_int_equal(fl_store_note_set(f->s, "other", -7), 0);
    char *text = NULL;
    assert_int_equal(fl_store_note_get_text(f->s, "words", &text), FL_ENOTFOUND);
    assert_null(text);
    assert_int_equal(fl_store_note_set_text(f->s, "words", "first"), 0);
    assert_int_equal(fl_store_note_set_text(f->s, "words", "{\"a\": [\"b\"]}"), 0);
    assert_int_equal(fl_store_rev(f->s), head);
    fl_watch_event *ev = NULL;
    assert_int_equal(fl_watch_next(w, &ev, 50), FL_ETIMEDOUT);
    fl_watch_free(w);
    reopen(f, 0);
    if (f->gaps) /* etcd: the notes are keys of the cluster, whose revision the reopened store reads at */
        assert_true(fl_store_rev(f->s) >= head);
    else
        assert_int_equal(fl_store_rev(f->s), head);
    assert_int_equal(fl_store_note_get(f->s, "checkpoint", &v), 0);
    assert_int_equal(v, head);
    assert_int_equal(fl_store_note_get(f->s, "other", &v), 0);
    assert_int_equal(v, -7);
    assert_int_equal(fl_store_note_get_text(f->s, "words", &text), 0);
    assert_string_equal(text, "{\"a\": [\"b\"]}");
    free(text);
    assert_int_equal(fl_store_note_get(f->s, "compact_rev", &v), FL_ENOTFOUND); /* not the store's own rows */
}

#endif
