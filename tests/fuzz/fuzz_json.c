/* fuzz_json.c - differential fuzzing of the fast JSON decoder and encoder against jansson:
 * both must accept the same inputs, build equal values, and encode them to the same text. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/mem.h"

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
    return 0;
}
