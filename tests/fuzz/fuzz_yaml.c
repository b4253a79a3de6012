/* fuzz_yaml.c - libFuzzer target for src/core/yaml.c.
 *
 * Parse the input as a stream; for every input that parses, dump each
 * document and the whole array, parse the dump again and require the same
 * value back (the round-trip promise in yaml.h). Equality is checked here
 * rather than with json_equal(), which compares object keys as C strings and
 * so misjudges keys holding a NUL byte. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/yaml.h"

static int same(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        for (void *it = json_object_iter((json_t *)a); it; it = json_object_iter_next((json_t *)a, it)) {
            json_t *o = json_object_getn(b, json_object_iter_key(it), json_object_iter_key_len(it));
            if (!o || !same(json_object_iter_value(it), o))
                return 0;
        }
        return 1;
    }
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL:
        return json_real_value(a) == json_real_value(b);
    default:
        return 1;
    }
}

static void check_round_trip(const json_t *v, const uint8_t *data, size_t size)
{
    char *y = fl_yaml_dump(v);
    json_t *back = NULL;
    char *err = NULL;
    int rc = fl_yaml_parse(y, strlen(y), &back, &err);
    if (rc != 0 || !same(v, back)) {
        fprintf(stderr, "round trip failed (%s)\n--- dump ---\n%s\n--- input ---\n%.*s\n", err ? err : "values differ",
                y, (int)size, (const char *)data);
        abort();
    }
    json_decref(back);
    free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *docs = NULL;
    char *err = NULL;
    int rc = fl_yaml_parse_all((const char *)data, size, &docs, &err);
    if (rc != 0) {
        if (docs || !err || strncmp(err, "line ", 5) != 0)
            abort();
        free(err);
    } else {
        if (err || !json_is_array(docs))
            abort();
        for (size_t i = 0; i < json_array_size(docs); i++)
            check_round_trip(json_array_get(docs, i), data, size);
        check_round_trip(docs, data, size);
    }
    json_decref(docs);

    /* The single-document entry point must agree on success/failure shape. */
    json_t *one = NULL;
    err = NULL;
    rc = fl_yaml_parse((const char *)data, size, &one, &err);
    if ((rc == 0) != (one != NULL) || (rc == 0) == (err != NULL))
        abort();
    json_decref(one);
    free(err);
    return 0;
}
