/* fuzz_json.c - differential fuzzing of the fast JSON decoder and encoder against jansson:
 * both must accept the same inputs, build equal values, and encode them to the same text. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/mem.h"

/* The reference for fl_json_load_skipping: jansson's value with the members deleted. */
static void drop(json_t *v, const char *path)
{
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    char key[64];
    if (n >= sizeof key)
        return;
    memcpy(key, path, n);
    key[n] = 0;
    if (!strcmp(key, "[]")) {
        for (size_t i = 0; dot && json_is_array(v) && i < json_array_size(v); i++)
            drop(json_array_get(v, i), dot + 1);
    } else if (json_is_object(v)) {
        if (dot)
            drop(json_object_get(v, key), dot + 1);
        else
            json_object_del(v, key);
    }
}

/* Decoding while skipping members: for what jansson accepts, the same value less those
 * members (what it rejects may pass when the break is inside a skipped member). */
static void check_skipping(const unsigned char *data, size_t size)
{
    static const char *const skip[] = {"a", "items.[].spec", "object.spec.workload", "[].b", NULL};
    json_t *want = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    json_t *got = fl_json_load_skipping((const char *)data, size, skip);
    if (want) {
        for (const char *const *p = skip; *p; p++)
            drop(want, *p);
        if (!got || !json_equal(want, got))
            abort();
    }
    json_decref(want);
    json_decref(got);
}

/* Lists kept as texts: each element's text decodes, to jansson's element less the skipped
 * members; its metadata span holds its metadata; the rest of the answer is jansson's. */
typedef struct texts {
    json_t *got; /* each element's text, decoded by jansson */
} texts;

static void collect(void *ctx, const char *text, size_t n, size_t meta_at, size_t meta_n)
{
    texts *t = ctx;
    json_t *e = json_loadb(text, n, JSON_DECODE_ANY, NULL);
    if (!e)
        abort(); /* a text handed over must decode */
    if (meta_n) {
        json_t *m = json_loadb(text + meta_at, meta_n, JSON_DECODE_ANY, NULL);
        if (!m || !json_equal(m, json_object_get(e, "metadata")))
            abort();
        json_decref(m);
    } else if (json_is_object(e) && json_object_get(e, "metadata")) {
        abort();
    }
    json_array_append_new(t->got, e);
}

static void check_items(const unsigned char *data, size_t size)
{
    static const char *const skip[] = {"metadata.managedFields", "spec.[].x", NULL};
    texts t = {json_array()};
    json_t *rest = fl_json_load_items((const char *)data, size, skip, collect, &t);
    json_t *want = rest ? json_loadb((const char *)data, size, 0, NULL) : NULL;
    if (want) { /* what jansson rejects may pass when the break is inside a skipped member */
        json_t *items = json_object_get(want, "items");
        if (json_array_size(items) != json_array_size(t.got))
            abort(); /* no array of items: no texts */
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *e = json_array_get(items, i);
            for (const char *const *p = skip; *p; p++)
                drop(e, *p);
            if (!json_equal(e, json_array_get(t.got, i)))
                abort();
        }
        if (json_is_array(items))
            json_object_set_new(want, "items", json_array());
        if (!json_equal(want, rest))
            abort();
        json_decref(want);
    }
    json_decref(rest);
    json_decref(t.got);

    /* finding a value: where jansson (no duplicate keys) has one, the same one */
    json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    if (doc) {
        static const char *const paths[] = {"metadata", "metadata.labels", "a.b.c", NULL};
        for (const char *const *p = paths; *p; p++) {
            json_t *v = doc;
            char seg[16];
            for (const char *q = *p; v;) {
                const char *dot = strchr(q, '.');
                size_t n = dot ? (size_t)(dot - q) : strlen(q);
                memcpy(seg, q, n);
                seg[n] = 0;
                v = json_object_get(v, seg);
                if (!dot)
                    break;
                q = dot + 1;
            }
            size_t at, n;
            int rc = fl_json_find((const char *)data, size, *p, &at, &n);
            if ((rc == 0) != (v != NULL))
                abort();
            if (v) {
                json_t *f = json_loadb((const char *)data + at, n, JSON_DECODE_ANY, NULL);
                if (!f || !json_equal(f, v))
                    abort();
                json_decref(f);
            }
        }
        json_decref(doc);
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        fl_mem_init();
        ready = 1;
    }
    for (int dup = 0; dup < 2; dup++) {
        size_t flags = dup ? JSON_REJECT_DUPLICATES : 0;
        json_error_t e;
        json_t *want = json_loadb((const char *)data, size, flags | JSON_DECODE_ANY, &e);
        json_t *got = NULL;
        char *err = NULL;
        int rc = fl_json_loadb((const char *)data, size, flags, &got, &err);
        if ((want == NULL) != (rc != 0))
            abort();
        if (want) {
            char *a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
            char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
            size_t n = 0;
            char *c = fl_json_dumps(got, &n);
            if (!json_equal(want, got) || strcmp(a, b) || strcmp(a, c) || n != strlen(c))
                abort();
            free(a);
            free(b);
            free(c);
        }
        free(err);
        json_decref(want);
        json_decref(got);
    }
    check_skipping(data, size);
    check_items(data, size);
    return 0;
}
