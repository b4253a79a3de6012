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
    return 0;
}
