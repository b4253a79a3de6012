/* test_base64.c - the one base64 codec the project uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/base64.h"

static void encodes_rfc4648_vectors_with_padding(void **state)
{
    static const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char *e = fl_base64_encode(in[i], strlen(in[i]));
        assert_string_equal(e, want[i]);
        size_t n = 99;
        char *d = fl_base64_decode(e, &n);
        assert_non_null(d);
        assert_int_equal(n, strlen(in[i]));
        assert_memory_equal(d, in[i], n);
        free(e);
        free(d);
    }
}

static void round_trips_binary_bytes(void **state)
{
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    char *e = fl_base64_encode(all, sizeof all);
    size_t n = 0;
    char *d = fl_base64_decode(e, &n);
    assert_int_equal(n, 256);
    assert_memory_equal(d, all, 256);
    free(e);
    free(d);
}

static void decodes_wrapped_and_unpadded_input(void **state)
{
    size_t n = 0;
    char *d = fl_base64_decode("Zm9v\nYmFy\n", &n);
    assert_string_equal(d, "foobar");
    free(d);
    d = fl_base64_decode("Zm8", &n);
    assert_string_equal(d, "fo");
    free(d);
}

static void rejects_what_is_not_base64(void **state)
{
    assert_null(fl_base64_decode("!!notb64", NULL));
    assert_null(fl_base64_decode("Zm=9v", NULL));   /* data after padding */
    assert_null(fl_base64_decode("Zg===", NULL));   /* too much padding */
    assert_null(fl_base64_decode("Zm9v-_", NULL));  /* the URL alphabet is another encoding */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encodes_rfc4648_vectors_with_padding),
        cmocka_unit_test(round_trips_binary_bytes),
        cmocka_unit_test(decodes_wrapped_and_unpadded_input),
        cmocka_unit_test(rejects_what_is_not_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
