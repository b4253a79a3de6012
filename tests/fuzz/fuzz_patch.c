/* fuzz_patch.c - libFuzzer target for the three PATCH engines (core/patch.h).
 *
 * The input is two JSON documents, the original and the patch, separated by
 * the first NUL byte or, failing that, the first "\n---\n". Each pair runs
 * through merge, JSON and strategic merge patch (with a fixed metadata table
 * shaped like a Deployment's), and also with the roles swapped so objects
 * reach the JSON patch engine as documents. Checked: no crash, no leak (ASan),
 * inputs never modified, and the properties the RFCs promise:
 *   - a merge patch is idempotent: applying it twice equals applying it once;
 *   - a failing engine returns no result and a message, a succeeding one a
 *     result and no message.
 * Build: clang -g -fsanitize=fuzzer,address,undefined -Isrc src/core/mem.c
 *   src/core/err.c src/core/patch*.c tests/fuzz/fuzz_patch.c
 *   $(pkg-config --cflags --libs jansson) -o /tmp/fuzz_patch */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/patch.h"

typedef struct meta_row {
    const char *path;
    fl_smp_meta meta;
} meta_row;

static const meta_row META[] = {
    {"metadata.finalizers", {.merge = true}},
    {"spec.strategy", {.retain_keys = true}},
    {"spec.template.spec.containers", {.merge = true, .merge_key = "name"}},
    {"spec.template.spec.containers.env", {.merge = true, .merge_key = "name"}},
    {"spec.template.spec.containers.ports", {.merge = true, .merge_key = "containerPort"}},
    {"spec.template.spec.volumes", {.merge = true, .retain_keys = true, .merge_key = "name"}},
    /* Short paths so small fuzz inputs reach the list-merging code too. */
    {"l", {.merge = true, .merge_key = "k"}},
    {"l.l", {.merge = true, .merge_key = "k"}},
    {"p", {.merge = true}},
    {"m", {.merge = true}}, /* merge strategy but no merge key */
};

static bool lookup(void *ctx, const char *path, fl_smp_meta *out)
{
    for (size_t i = 0; i < sizeof(META) / sizeof(META[0]); i++)
        if (strcmp(META[i].path, path) == 0) {
            *out = META[i].meta;
            return true;
        }
    return false;
}

static void check_result(int rc, json_t *out, char *err)
{
    if (rc == 0 ? (!out || err) : (out || !err))
        abort();
    json_decref(out);
    free(err);
}

static void run_all(const json_t *a, const json_t *b)
{
    json_t *a_copy = json_deep_copy(a), *b_copy = json_deep_copy(b);
    json_t *out = NULL;
    char *err = NULL;
    int rc;

    rc = fl_patch_merge(a, b, &out, &err);
    if (rc == 0) {
        json_t *twice = NULL;
        if (fl_patch_merge(out, b, &twice, NULL) != 0 || !json_equal(out, twice))
            abort();
        json_decref(twice);
    }
    check_result(rc, out, err);

    rc = fl_patch_json(a, b, &out, &err);
    check_result(rc, out, err);

    rc = fl_patch_strategic(a, b, lookup, NULL, &out, &err);
    check_result(rc, out, err);

    rc = fl_patch_strategic(a, b, NULL, NULL, &out, NULL);
    if (rc == 0)
        json_decref(out);

    if (!json_equal(a, a_copy) || !json_equal(b, b_copy))
        abort(); /* an engine modified its input */
    json_decref(a_copy);
    json_decref(b_copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t split, skip;
    const char *nul = memchr(s, '\0', size);
    const char *sep = memmem(s, size, "\n---\n", 5);
    if (nul) {
        split = (size_t)(nul - s);
        skip = 1;
    } else if (sep) {
        split = (size_t)(sep - s);
        skip = 5;
    } else {
        return 0;
    }
    json_t *a = json_loadb(s, split, JSON_DECODE_ANY, NULL);
    json_t *b = json_loadb(s + split + skip, size - split - skip, JSON_DECODE_ANY, NULL);
    if (a && b) {
        run_all(a, b);
        run_all(b, a);
    }
    json_decref(a);
    json_decref(b);
    return 0;
}
