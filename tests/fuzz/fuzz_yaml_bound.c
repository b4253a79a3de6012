/* fuzz_yaml_bound.c - libFuzzer target for the decoded-size bound of src/core/yaml.c.
 *
 * The first byte picks the bound (256 bytes to 32 KiB, small enough that the fuzzer meets it
 * often); the rest is the YAML. What the bound promises, checked here:
 *   - a refusal is FL_ETOOBIG or FL_EINVAL with one "line L, column C: ..." message, and
 *     FL_ETOOBIG names the bound;
 *   - a document that parses within the bound is the same one fl_yaml_parse gives, so the
 *     bound never changes what a manifest means, and its size stays within the bound plus
 *     what the input itself writes (at most a few bytes of encoding per input byte): no alias, merge
 *     key or nesting multiplies it;
 *   - a syntax error is reported the same with or without the bound.
 * The seeds (corpus/yaml_bound) hold aliases of long strings, aliases of aliases, merge
 * keys, deep nesting and a long string. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t bound = (size_t)256 << (data[0] % 8);
    const char *y = (const char *)data + 1;
    size_t len = size - 1;
    json_t *v = NULL;
    char *err = NULL;
    int rc = fl_yaml_parse_limited(y, len, bound, &v, &err);
    if (rc != 0) {
        if (v || !err || strncmp(err, "line ", 5) != 0 || (rc != FL_ETOOBIG && rc != FL_EINVAL))
            abort();
        if (rc == FL_ETOOBIG) {
            char want[64];
            snprintf(want, sizeof want, "past %zu bytes", bound);
            if (!strstr(err, want))
                abort();
        } else {
            /* the bound is no part of a syntax error: the unbounded parse fails alike */
            json_t *u = NULL;
            char *uerr = NULL;
            if (fl_yaml_parse(y, len, &u, &uerr) == 0 || strcmp(err, uerr) != 0)
                abort();
            free(uerr);
        }
        free(err);
        return 0;
    }
    if (err || !v)
        abort();
    if (fl_json_size_upto(v, SIZE_MAX) > bound + 16 * len + 16)
        abort();
    json_t *u = NULL;
    char *uerr = NULL;
    if (fl_yaml_parse(y, len, &u, &uerr) != 0 || !json_equal(u, v))
        abort();
    json_decref(u);
    json_decref(v);
    return 0;
}
