/* test_json.c - fl_json_dumps writes exactly what jansson's compact encoder writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "core/json.h"
#include "core/mem.h"

static void same_as_jansson(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(v);
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len = 0;
    char *got = fl_json_dumps(v, &len);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    free(want);
    free(got);
    json_decref(v);
}

static void encodes_objects_in_key_order_like_jansson(void **state)
{
    same_as_jansson("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"labels\":{}},"
                    "\"data\":{\"z\":\"1\",\"a\":\"2\"}}");
    same_as_jansson("{}");
    same_as_jansson("[]");
    same_as_jansson("[[],{},[{}],{\"a\":[1,2,3]}]");
}

static void encodes_string_escapes_like_jansson(void **state)
{
    same_as_jansson("\"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f\"");
    same_as_jansson("\"control \\u0001 \\u001f del \\u007f\"");
    same_as_jansson("\"unicode \\u00e9 \\u4e2d \\ud83d\\ude00 kept as UTF-8\"");
    same_as_jansson("{\"key with \\\"quotes\\\"\\n\":\"v\"}");
    same_as_jansson("\"\"");
}

/* Strings are scanned 8 bytes at a time: every byte that needs an escape, and the bytes
 * around the ones that do not (0x1f/0x20, '!'/'#' beside '"', '[' and ']' beside '\\',
 * UTF-8), at every offset in strings of every length up to three words. */
static void escapes_every_byte_at_every_offset(void **state)
{
    static const unsigned char probes[] = {0x00, 0x01, 0x08, 0x09, 0x0a, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b,
                                           0x5c, 0x5d, 0x7f, 0x80, 0xa0, 0xc3, 0xff};
    char buf[32];
    for (size_t len = 1; len <= 24; len++)
        for (size_t at = 0; at < len; at++)
            for (size_t p = 0; p < sizeof probes; p++) {
                memset(buf, 'a', len);
                buf[at] = (char)probes[p];
                json_t *v = json_stringn_nocheck(buf, len);
                char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                if (!want) {
                    /* jansson refuses a lone byte >= 0x80 (not UTF-8); such bytes go out as they are */
                    assert_true(probes[p] >= 0x80);
                    want = malloc(len + 3);
                    want[0] = '"';
                    memcpy(want + 1, buf, len);
                    memcpy(want + 1 + len, "\"", 2);
                }
                size_t n = 0;
                char *got = fl_json_dumps(v, &n);
                assert_int_equal(n, strlen(want));
                assert_memory_equal(got, want, n);
                free(want);
                free(got);
                json_decref(v);
            }
}

/* fl_json_dumps_mark finds a value by address, not by content: the store's writer puts the
 * revision where the resourceVersion placeholder begins, and a look-alike elsewhere (here a
 * manifest's own empty resourceVersion, written first) must not be taken for it. */
static void marks_where_a_value_begins(void **state)
{
    json_t *o = json_loads("{\"spec\":{\"metadata\":{\"resourceVersion\":\"\"}},\"metadata\":{\"name\":\"a\"}}", 0, NULL);
    json_t *ph = json_string("");
    json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", ph);
    size_t len = 0, at = 0;
    char *text = fl_json_dumps_mark(o, ph, &len, &at);
    const char *want = "{\"spec\":{\"metadata\":{\"resourceVersion\":\"\"}},\"metadata\":{\"name\":\"a\","
                       "\"resourceVersion\":\"\"}}";
    assert_string_equal(text, want);
    assert_int_equal(at, strlen(want) - 4);
    free(text);
    json_t *other = json_string("");
    text = fl_json_dumps_mark(o, other, &len, &at);
    assert_int_equal(at, SIZE_MAX);
    free(text);
    json_decref(other);
    json_decref(o);
}

static void encodes_numbers_and_literals_like_jansson(void **state)
{
    same_as_jansson("[0,-1,9223372036854775807,-9223372036854775808,42]");
    same_as_jansson("[0.5,-1.25,1e300,0.1,3.0]");
    same_as_jansson("[true,false,null]");
}

static void keeps_nul_bytes_inside_strings(void **state)
{
    json_t *v = json_stringn("a\0b", 3);
    size_t len = 0;
    char *got = fl_json_dumps(v, &len);
    assert_string_equal(got, "\"a\\u0000b\"");
    free(got);
    json_decref(v);
}

/* Decoding: the fast path and jansson agree on value and on acceptance. */
static void decodes_like_jansson(const char *text, size_t flags)
{
    json_error_t e;
    json_t *want = json_loadb(text, strlen(text), flags | JSON_DECODE_ANY, &e);
    json_t *got = NULL;
    char *err = NULL;
    int rc = fl_json_loadb(text, strlen(text), flags, &got, &err);
    if (want) {
        assert_int_equal(rc, 0);
        assert_true(json_equal(want, got));
        /* same key order and integer/real kinds: compare encodings */
        char *a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY), *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        assert_string_equal(a, b);
        free(a);
        free(b);
    } else {
        assert_int_not_equal(rc, 0);
        assert_null(got);
        assert_non_null(err);
        assert_non_null(strstr(err, e.text));
    }
    free(err);
    json_decref(want);
    json_decref(got);
}

static void decodes_valid_documents_like_jansson(void **state)
{
    decodes_like_jansson("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"v\"}}", 0);
    decodes_like_jansson(" [ 1 , -2 , 0 , 123456789012345678 , 1234567890123456789 , 9223372036854775807 ] ", 0);
    decodes_like_jansson("[1.5, -0.0, 1e10, 2E-3, 0.1]", 0);
    decodes_like_jansson("[true,false,null,\"\",{},[]]", 0);
    decodes_like_jansson("\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00 \"", 0);
    decodes_like_jansson("\"utf-8 \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"", 0);
    decodes_like_jansson("{\"a\":1,\"a\":2}", 0);
}

static void rejects_what_jansson_rejects(void **state)
{
    decodes_like_jansson("{\"a\":1,\"a\":2}", JSON_REJECT_DUPLICATES);
    decodes_like_jansson("{\"a\":1,}", 0);
    decodes_like_jansson("[01]", 0);
    decodes_like_jansson("[1.]", 0);
    decodes_like_jansson("\"\\ud800\"", 0);
    decodes_like_jansson("\"bad \xff\"", 0);
    decodes_like_jansson("\"\xc0\xaf\"", 0);
    decodes_like_jansson("[99999999999999999999]", 0);
    decodes_like_jansson("{\"a\\u0000b\":1}", 0);
    decodes_like_jansson("nul", 0);
    decodes_like_jansson("{} x", 0);
    decodes_like_jansson("", 0);
}

static uint64_t hash_of(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    uint64_t h = fl_json_hash(v);
    json_decref(v);
    return h;
}

/* The binding controller tells its own writes from others' by this digest: equal content
 * must digest the same whatever the key order, and any change must show. */
static void hashes_content_not_key_order(void **state)
{
    (void)state;
    const char *base = "{\"spec\":{\"a\":1,\"b\":[\"x\",{\"c\":true}]},\"n\":null,\"r\":0.5}";
    uint64_t h = hash_of(base);
    assert_int_equal(h, hash_of("{\"r\":0.5,\"n\":null,\"spec\":{\"b\":[\"x\",{\"c\":true}],\"a\":1}}"));
    static const char *const changed[] = {
        "{\"spec\":{\"a\":2,\"b\":[\"x\",{\"c\":true}]},\"n\":null,\"r\":0.5}",      /* a number */
        "{\"spec\":{\"a\":1,\"b\":[{\"c\":true},\"x\"]},\"n\":null,\"r\":0.5}",      /* array order */
        "{\"spec\":{\"a\":1,\"b\":[\"x\",{\"c\":false}]},\"n\":null,\"r\":0.5}",     /* a literal */
        "{\"spec\":{\"a\":1,\"b\":[\"x\",{\"c\":true}]},\"n\":null}",                /* a member gone */
        "{\"spec\":{\"a\":1,\"b\":[\"x\",{\"c\":true}]},\"n\":null,\"r\":0.5,\"s\":{}}", /* one added */
        "{\"spec\":{\"a\":1,\"b\":[\"x\",{\"d\":true}]},\"n\":null,\"r\":0.5}",      /* a key renamed */
        "{\"spec\":{\"a\":\"1\",\"b\":[\"x\",{\"c\":true}]},\"n\":null,\"r\":0.5}",  /* a type */
        "{\"spec\":{\"a\":1,\"b\":[\"x\",{\"c\":true}]},\"n\":null,\"r\":0.25}",     /* a real */
    };
    for (size_t i = 0; i < sizeof changed / sizeof *changed; i++)
        assert_true(hash_of(changed[i]) != h);
    /* values moved between keys, and strings split differently, do not cancel out */
    assert_true(hash_of("{\"a\":1,\"b\":2}") != hash_of("{\"a\":2,\"b\":1}"));
    assert_true(hash_of("[\"ab\",\"c\"]") != hash_of("[\"a\",\"bc\"]"));
    assert_true(hash_of("{}") != hash_of("[]"));
    assert_int_equal(fl_json_hash(NULL), 0);
}

/* What a Work records of its labels and annotations leaves out the record itself: the
 * digest of an object less some members is that of the object without them. */
static void hashes_less_the_members_named(void **state)
{
    (void)state;
    json_t *with = json_loads("{\"a\":1,\"rec\":\"x\",\"b\":{\"rec\":2}}", 0, NULL);
    static const char *const skip[] = {"rec", NULL};
    uint64_t h = fl_json_hash_except(with, skip);
    assert_int_equal(h, hash_of("{\"b\":{\"rec\":2},\"a\":1}")); /* only the top level's */
    assert_true(h != fl_json_hash(with));
    assert_int_equal(fl_json_hash_except(with, NULL), fl_json_hash(with));
    static const char *const all[] = {"a", "rec", "b", NULL};
    assert_int_equal(fl_json_hash_except(with, all), hash_of("{}"));
    json_t *arr = json_loads("[1]", 0, NULL);
    assert_int_equal(fl_json_hash_except(arr, skip), fl_json_hash(arr));
    json_decref(arr);
    json_decref(with);
}

/* text decoded without the paths is the document want */
static void assert_decodes_to(const char *text, const char *const *paths, const char *want_text)
{
    json_t *got = fl_json_load_skipping(text, strlen(text), paths);
    json_t *want = json_loads(want_text, 0, NULL);
    assert_non_null(got);
    assert_non_null(want);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
}

/* A client that needs part of each object decodes without the rest: the members at the
 * paths are absent, everything else is as a full decode gives it. */
static void decodes_leaving_out_paths(void **state)
{
    (void)state;
    const char *text =
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"w\",\"managedFields\":[{\"f\":\"x]}\\\"\"}]},"
        "\"spec\":{\"workload\":{\"manifests\":[{\"a\":[1,2,{\"b\":null}],\"s\":\"}{\"}]},\"suspendDispatching\":true},"
        "\"status\":{\"conditions\":[{\"type\":\"Dispatching\"}],\"manifestStatuses\":-1.5e3}},\"workload\":7}";
    static const char *const skip[] = {"object.spec.workload", "object.status.manifestStatuses",
                                       "object.metadata.managedFields", NULL};
    assert_decodes_to(text, skip,
                      "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"w\"},"
                      "\"spec\":{\"suspendDispatching\":true},\"status\":{\"conditions\":[{\"type\":"
                      "\"Dispatching\"}]}},\"workload\":7}");

    /* "[]" stands for every element of an array */
    const char *list = "{\"items\":[{\"spec\":{\"big\":[[[]]],\"keep\":1}},{\"spec\":{\"big\":\"x\"}}],\"spec\":{\"big\":2}}";
    static const char *const items[] = {"items.[].spec.big", NULL};
    assert_decodes_to(list, items, "{\"items\":[{\"spec\":{\"keep\":1}},{\"spec\":{}}],\"spec\":{\"big\":2}}");

    /* paths that share their start, strings in skipped parts that end in escapes, and a
     * member of a path's name where the path does not lead */
    const char *shared = "{\"m\":[{\"kind\":\"K\",\"spec\":{\"s\":\"a\\\\\"},\"data\":{\"d\":\"q\\\"}\\\\\"},"
                         "\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"}}}],\"data\":1,"
                         "\"x\":{\"m\":[{\"spec\":2}]}}";
    static const char *const parts[] = {"m.[].spec", "m.[].data", "m.[].metadata.labels", NULL};
    assert_decodes_to(shared, parts,
                      "{\"m\":[{\"kind\":\"K\",\"metadata\":{\"name\":\"n\"}}],\"data\":1,"
                      "\"x\":{\"m\":[{\"spec\":2}]}}");
    /* more paths than the parser's table holds: jansson's decoding, the paths deleted */
    const char *many[40];
    for (size_t i = 0; i < 39; i++)
        many[i] = i == 38 ? "m.[].data" : "m.[].spec";
    many[39] = NULL;
    assert_decodes_to(shared, many,
                      "{\"m\":[{\"kind\":\"K\",\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"}}}],"
                      "\"data\":1,\"x\":{\"m\":[{\"spec\":2}]}}");

    /* broken input stays broken, whether the break is in a skipped part or not */
    static const char *const broken[] = {"{\"items\":[{\"spec\":{\"big\":[1,2}}]}", "{\"items\":[{\"spec\":{\"big\":\"x}}]}",
                                         "{\"items\":[{\"spec\":{\"big\":"};
    for (size_t i = 0; i < 3; i++)
        assert_null(fl_json_load_skipping(broken[i], strlen(broken[i]), items));
}

/* fl_json_view_less: the object less the paths, as a decoding that skips them would give
 * it; new containers on the way to them, everything else shared; the object unchanged */
static void views_less_the_paths(void **state)
{
    (void)state;
    const char *text = "{\"metadata\":{\"name\":\"w\",\"labels\":{\"a\":\"b\"}},"
                       "\"spec\":{\"m\":[{\"kind\":\"K\",\"spec\":{\"r\":1},\"metadata\":{\"name\":\"n\",\"labels\":{}}},"
                       "{\"kind\":\"C\",\"data\":{\"d\":\"x\"}}],\"s\":true},\"status\":{\"c\":[1]}}";
    static const char *const paths[] = {"spec.m.[].spec", "spec.m.[].data", "spec.m.[].metadata.labels", NULL};
    json_t *whole = fl_json_load(text, strlen(text));
    json_t *before = fl_json_deep_copy(whole);
    json_t *view = fl_json_view_less(whole, paths);
    json_t *skipped = fl_json_load_skipping(text, strlen(text), paths);
    assert_non_null(view);
    assert_true(json_equal(view, skipped));
    assert_true(json_equal(whole, before));
    /* shared where no path leads, new where one does */
    assert_ptr_equal(json_object_get(view, "status"), json_object_get(whole, "status"));
    assert_ptr_equal(json_object_get(view, "metadata"), json_object_get(whole, "metadata"));
    assert_ptr_not_equal(json_object_get(view, "spec"), json_object_get(whole, "spec"));
    json_decref(view);
    json_decref(skipped);
    json_decref(before);
    json_decref(whole);
}

/* fl_json_deep_copy: the same document, in the same key order, sharing nothing */
static bool same_text(const json_t *a, const json_t *b)
{
    size_t la = 0, lb = 0;
    char *ta = fl_json_dumps(a, &la), *tb = fl_json_dumps(b, &lb);
    bool same = ta && tb && la == lb && !memcmp(ta, tb, la);
    free(ta);
    free(tb);
    return same;
}

/* fl_json_meta_own: the caller's own decoding is handed back as it is; one that someone
 * else holds, whole or by its metadata, is handed back as a view, and changing the view's
 * top level and metadata leaves the other holder's object as it was. */
static void owns_unshared_objects_and_views_shared_ones(void **state)
{
    (void)state;
    const char *doc = "{\"kind\":\"Work\",\"metadata\":{\"name\":\"w\",\"labels\":{\"a\":\"b\"}},\"spec\":{}}";
    json_t *mine = fl_json_load(doc, strlen(doc));
    assert_non_null(mine);
    assert_ptr_equal(fl_json_meta_own(mine), mine);
    json_decref(mine);

    json_t *held = fl_json_load(doc, strlen(doc)); /* another holder keeps this reference */
    json_t *v = fl_json_meta_own(json_incref(held));
    assert_ptr_not_equal(v, held);
    assert_int_equal(held->refcount, 1);
    json_object_set_new(json_object_get(v, "metadata"), "name", json_string("changed"));
    json_object_del(v, "spec");
    assert_string_equal(json_string_value(json_object_get(json_object_get(held, "metadata"), "name")), "w");
    assert_non_null(json_object_get(held, "spec"));
    json_decref(v);

    json_t *md = json_incref(json_object_get(held, "metadata")); /* only its metadata is held */
    v = fl_json_meta_own(held);
    assert_ptr_not_equal(v, held);
    assert_ptr_not_equal(json_object_get(v, "metadata"), md);
    json_object_set_new(json_object_get(v, "metadata"), "name", json_string("changed"));
    assert_string_equal(json_string_value(json_object_get(md, "name")), "w");
    json_decref(v);
    json_decref(md);
    assert_null(fl_json_meta_own(NULL));
}

static void deep_copies_share_only_leaves(void **state)
{
    (void)state;
    const char *doc = "{\"z\":1,\"a\":{\"n\":null,\"t\":true,\"f\":false,\"r\":1.5,"
                      "\"big\":9223372036854775807,\"s\":\"a\\u0000b\"},\"arr\":[{\"x\":[]},\"y\",{}],\"m\":\"\"}";
    json_t *v = json_loads(doc, JSON_ALLOW_NUL, NULL);
    assert_non_null(v);
    json_object_setn_new(v, "k\0ey", 4, json_integer(-7)); /* a key with a NUL inside */
    json_t *c = fl_json_deep_copy(v);
    assert_non_null(c);
    assert_true(same_text(v, c)); /* byte for byte: values and key order */
    assert_int_equal(json_string_length(json_object_get(json_object_get(c, "a"), "s")), 3);
    assert_int_equal(json_integer_value(json_object_getn(c, "k\0ey", 4)), -7);
    assert_int_equal(json_object_size(c), json_object_size(v));
    /* containers are new: changing the copy at every level leaves the original as it was */
    assert_ptr_not_equal(json_object_get(v, "a"), json_object_get(c, "a"));
    assert_ptr_not_equal(json_object_get(v, "arr"), json_object_get(c, "arr"));
    /* leaves are shared (never changed in place): one more reference each */
    assert_ptr_equal(json_object_get(json_object_get(v, "a"), "s"), json_object_get(json_object_get(c, "a"), "s"));
    assert_ptr_equal(json_object_get(v, "z"), json_object_get(c, "z"));
    assert_int_equal(json_object_get(v, "z")->refcount, 2);
    size_t lb = 0;
    char *before = fl_json_dumps(v, &lb);
    json_object_set_new(json_object_get(c, "a"), "r", json_integer(2));
    json_object_set_new(json_array_get(json_object_get(c, "arr"), 0), "x", json_string("changed"));
    json_array_append_new(json_object_get(c, "arr"), json_null());
    json_object_set_new(c, "z", json_integer(99));
    json_object_set_new(c, "m", json_string("changed"));
    size_t la = 0;
    char *after = fl_json_dumps(v, &la);
    assert_int_equal(la, lb);
    assert_memory_equal(after, before, la);
    assert_false(same_text(v, c));
    free(before);
    free(after);
    json_decref(c);
    json_decref(v);
    assert_null(fl_json_deep_copy(NULL));
    json_t *t = fl_json_deep_copy(json_true());
    assert_true(json_is_true(t));
    json_decref(t);
}

/* Repeated strings and small integers decode to one shared value; long strings, large
 * integers and values of other threads do not; a decoded tree outlives the thread that
 * decoded it (its table's references go when the thread exits: LeakSanitizer checks). */
static void *decode_on_a_thread(void *arg)
{
    return fl_json_load(arg, strlen(arg));
}

static void decoder_shares_repeated_leaves(void **state)
{
    (void)state;
    char longer[400];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    char doc[600];
    snprintf(doc, sizeof doc, "{\"kind\":\"Deployment\",\"n\":7,\"big\":100000,\"l\":\"%s\"}", longer);
    json_t *a = fl_json_load(doc, strlen(doc)), *b = fl_json_load(doc, strlen(doc));
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_equal(json_object_get(a, "kind"), json_object_get(b, "kind"));
    assert_ptr_equal(json_object_get(a, "n"), json_object_get(b, "n"));
    assert_ptr_not_equal(json_object_get(a, "big"), json_object_get(b, "big"));
    assert_ptr_not_equal(json_object_get(a, "l"), json_object_get(b, "l"));
    assert_string_equal(json_string_value(json_object_get(b, "l")), longer);
    /* another string hashed to the same slot, or the same one later: still right */
    const char *arr = "[\"Deployment\",\"Deploymenu\",7,8]";
    json_t *c = fl_json_load(arr, strlen(arr));
    assert_non_null(c);
    assert_string_equal(json_string_value(json_array_get(c, 1)), "Deploymenu");
    assert_int_equal(json_integer_value(json_array_get(c, 3)), 8);
    assert_ptr_equal(json_array_get(c, 0), json_object_get(a, "kind"));
    /* a tree decoded on a thread that has exited: whole, and freed here */
    pthread_t t;
    void *out = NULL;
    assert_int_equal(pthread_create(&t, NULL, decode_on_a_thread, doc), 0);
    assert_int_equal(pthread_join(t, &out), 0);
    json_t *d = out;
    assert_non_null(d);
    assert_true(json_equal(d, a));
    assert_ptr_not_equal(json_object_get(d, "kind"), json_object_get(a, "kind"));
    json_decref(d);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

typedef struct held_decoder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool decoded, done;
    json_t *v;
} held_decoder;

/* Decodes a document, then waits (alive, its table kept) until told to end. */
static void *decode_and_wait(void *arg)
{
    held_decoder *h = arg;
    const char *doc = "{\"uid\":\"0f7c-rest\",\"n\":42}";
    json_t *v = fl_json_load(doc, strlen(doc));
    pthread_mutex_lock(&h->mu);
    h->v = v;
    h->decoded = true;
    pthread_cond_broadcast(&h->cv);
    while (!h->done)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* At rest every thread's table lets go of its shared leaves, another thread's included:
 * what was decoded keeps its values, held by its tree alone, and a later decoding makes
 * them again. */
static void rest_empties_every_thread_s_table_of_leaves(void **state)
{
    (void)state;
    held_decoder h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, decode_and_wait, &h), 0);
    pthread_mutex_lock(&h.mu);
    while (!h.decoded)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    json_t *uid = json_object_get(h.v, "uid"), *n = json_object_get(h.v, "n");
    assert_int_equal(uid->refcount, 2); /* the tree and the thread's table */
    assert_int_equal(n->refcount, 2);
    const char *doc = "{\"uid\":\"0f7c-rest\"}";
    json_t *mine = fl_json_load(doc, strlen(doc));
    json_t *before = json_object_get(mine, "uid"); /* this thread's own table holds it too */
    assert_int_equal(before->refcount, 2);
    fl_json_rest();
    assert_int_equal(uid->refcount, 1);
    assert_int_equal(n->refcount, 1);
    assert_int_equal(before->refcount, 1);
    assert_string_equal(json_string_value(uid), "0f7c-rest");
    json_t *again = fl_json_load(doc, strlen(doc));
    assert_ptr_not_equal(json_object_get(again, "uid"), before);
    assert_string_equal(json_string_value(json_object_get(again, "uid")), "0f7c-rest");
    json_decref(again);
    json_decref(mine);
    pthread_mutex_lock(&h.mu);
    h.done = true;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    assert_int_equal(pthread_join(t, NULL), 0);
    json_decref(h.v);
}

/* Documents nested deeper than the fast parser goes are decoded by jansson, up to its limit */
static void decodes_deep_documents_through_jansson(void **state)
{
    (void)state;
    enum { DEPTH = 2000 };
    char *doc = malloc(2 * DEPTH + 1);
    memset(doc, '[', DEPTH);
    memset(doc + DEPTH, ']', DEPTH);
    doc[2 * DEPTH] = 0;
    json_t *got = NULL;
    char *err = NULL;
    assert_int_equal(fl_json_loadb(doc, 2 * DEPTH, 0, &got, &err), 0);
    json_t *want = json_loadb(doc, 2 * DEPTH, 0, NULL);
    assert_non_null(want);
    assert_true(json_equal(want, got));
    json_decref(got);
    json_decref(want);
    free(doc);
}

/* fl_json_find: the value's place in the text, nested, and nothing for what is not there */
static void finds_values_in_the_text(void **state)
{
    (void)state;
    const char *t = "{\"kind\":\"X\", \"spec\":{\"a\":[1,{\"b\":\"}\"}]},\"metadata\" : {\"name\":\"n\","
                    "\"labels\":{\"app\":\"web\"}}}";
    size_t at, n;
    assert_int_equal(fl_json_find(t, strlen(t), "metadata.labels", &at, &n), 0);
    assert_int_equal(n, strlen("{\"app\":\"web\"}"));
    assert_memory_equal(t + at, "{\"app\":\"web\"}", n);
    assert_int_equal(fl_json_find(t, strlen(t), "kind", &at, &n), 0);
    assert_memory_equal(t + at, "\"X\"", n);
    assert_int_equal(fl_json_find(t, strlen(t), "metadata.annotations", &at, &n), -1);
    assert_int_equal(fl_json_find(t, strlen(t), "spec.a.b", &at, &n), -1); /* a is an array */
    assert_int_equal(fl_json_find(t, strlen(t), "status", &at, &n), -1);
    assert_int_equal(fl_json_find("[1]", 3, "kind", &at, &n), -1);
    assert_int_equal(fl_json_find("{\"kind\":", 8, "kind", &at, &n), -1);
}

typedef struct got_items {
    json_t *texts, *metas;
} got_items;

static void item_in(void *ctx, const char *text, size_t n, size_t meta_at, size_t meta_n)
{
    got_items *g = ctx;
    json_array_append_new(g->texts, json_stringn(text, n));
    json_array_append_new(g->metas, meta_n ? json_stringn(text + meta_at, meta_n) : json_null());
}

/* fl_json_load_items: each item as its compact text less the skipped members, with its
 * metadata's place; the rest decoded; NULL for what the decoder leaves to jansson */
static void hands_list_items_over_as_texts(void **state)
{
    (void)state;
    static const char *const skip[] = {"metadata.managedFields", NULL};
    const char *t = "{\"kind\":\"List\",\"items\":[ {\"metadata\":{\"managedFields\":[{\"m\":1}], \"name\":\"a\"},"
                    "\"data\":{\"k\":\"v\\n\"}}, {\"x\":[true,null,-1.5e3]} ],\"metadata\":{\"resourceVersion\":\"7\"}}";
    got_items g = {json_array(), json_array()};
    json_t *rest = fl_json_load_items(t, strlen(t), skip, item_in, &g);
    assert_non_null(rest);
    assert_int_equal(json_array_size(json_object_get(rest, "items")), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(rest, "metadata"), "resourceVersion")), "7");
    assert_int_equal(json_array_size(g.texts), 2);
    assert_string_equal(json_string_value(json_array_get(g.texts, 0)),
                        "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"v\\n\"}}");
    assert_string_equal(json_string_value(json_array_get(g.metas, 0)), "{\"name\":\"a\"}");
    assert_string_equal(json_string_value(json_array_get(g.texts, 1)), "{\"x\":[true,null,-1.5e3]}");
    assert_true(json_is_null(json_array_get(g.metas, 1)));
    json_decref(rest);
    json_decref(g.texts);
    json_decref(g.metas);

    /* what jansson alone judges (a number it cannot hold), and what is not JSON: NULL */
    const char *bad[] = {"{\"items\":[{\"n\":1e999}]}", "{\"items\":[{\"n\":99999999999999999999}]}",
                         "{\"items\":[{\"n\":01}]}", "{\"items\":[{\"s\":\"\\u0000\"}]}", "{\"items\":[{]}",
                         "{\"items\":[1,]}", "[]", "{\"items\":[]} x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        got_items b = {json_array(), json_array()};
        assert_null(fl_json_load_items(bad[i], strlen(bad[i]), skip, item_in, &b));
        json_decref(b.texts);
        json_decref(b.metas);
    }
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encodes_objects_in_key_order_like_jansson),
        cmocka_unit_test(encodes_string_escapes_like_jansson),
        cmocka_unit_test(escapes_every_byte_at_every_offset),
        cmocka_unit_test(marks_where_a_value_begins),
        cmocka_unit_test(encodes_numbers_and_literals_like_jansson),
        cmocka_unit_test(keeps_nul_bytes_inside_strings),
        cmocka_unit_test(decodes_valid_documents_like_jansson),
        cmocka_unit_test(rejects_what_jansson_rejects),
        cmocka_unit_test(hashes_content_not_key_order),
        cmocka_unit_test(hashes_less_the_members_named),
        cmocka_unit_test(decodes_leaving_out_paths),
        cmocka_unit_test(views_less_the_paths),
        cmocka_unit_test(finds_values_in_the_text),
        cmocka_unit_test(hands_list_items_over_as_texts),
        cmocka_unit_test(deep_copies_share_only_leaves),
        cmocka_unit_test(owns_unshared_objects_and_views_shared_ones),
        cmocka_unit_test(rest_empties_every_thread_s_table_of_leaves),
        cmocka_unit_test(decoder_shares_repeated_leaves),
        cmocka_unit_test(decodes_deep_documents_through_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
