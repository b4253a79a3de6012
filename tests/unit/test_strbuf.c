/* test_strbuf.c - the shared string builder (core/strbuf.h): growth, NUL termination after
 * every append, printf appends, truncation and handing the text over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

static void a_zeroed_builder_reads_as_the_empty_string(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    assert_string_equal(fl_strbuf_str(&b), "");
    assert_int_equal(b.len, 0);
    fl_strbuf_close(&b);
    fl_strbuf_close(&b); /* twice is fine */
}

static void appends_keep_the_text_nul_terminated_after_every_call(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, "ab");
    assert_string_equal(b.p, "ab");
    fl_strbuf_addc(&b, 'c');
    assert_string_equal(b.p, "abc");
    fl_strbuf_add(&b, "defXXX", 3);
    assert_string_equal(b.p, "abcdef");
    assert_int_equal(b.len, 6);
    fl_strbuf_add(&b, "", 0);
    assert_string_equal(b.p, "abcdef");
    fl_strbuf_close(&b);
}

static void growth_across_many_resizes_keeps_every_byte(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    size_t resizes = 0, cap = 0;
    for (size_t i = 0; i < 200000; i++) {
        fl_strbuf_addc(&b, (char)('a' + i % 26));
        if (b.cap != cap) {
            resizes++;
            assert_true(b.cap >= 2 * cap); /* doubling: O(n) copying in all */
            cap = b.cap;
        }
    }
    assert_true(resizes > 10);
    assert_int_equal(b.len, 200000);
    assert_true(b.cap > b.len);
    for (size_t i = 0; i < b.len; i++)
        assert_int_equal(b.p[i], 'a' + i % 26);
    assert_int_equal(b.p[b.len], '\0');
    fl_strbuf_close(&b);
}

static void one_append_larger_than_twice_the_capacity_fits_at_once(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, "x");
    size_t n = 100000;
    char *big = malloc(n);
    memset(big, 'y', n);
    fl_strbuf_add(&b, big, n);
    assert_int_equal(b.len, n + 1);
    assert_true(b.cap >= n + 2);
    assert_int_equal(b.p[n], 'y');
    assert_int_equal(b.p[n + 1], '\0');
    free(big);
    fl_strbuf_close(&b);
}

static void bytes_with_nuls_inside_are_kept_and_counted(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_add(&b, "a\0b", 3);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.p, "a\0b", 4);
    fl_strbuf_close(&b);
}

static void printf_appends_after_the_text_there(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_printf(&b, "%s=%d", "n", 42); /* into no room at all */
    assert_string_equal(b.p, "n=42");
    fl_strbuf_printf(&b, ",%s", "m"); /* into the room there is */
    assert_string_equal(b.p, "n=42,m");
    char longer[500];
    memset(longer, 'z', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    fl_strbuf_printf(&b, "[%s]", longer); /* more than the room: formatted again */
    assert_int_equal(b.len, 6 + 2 + 499);
    assert_memory_equal(b.p, "n=42,m[", 7);
    assert_int_equal(b.p[7 + 498], 'z');
    assert_string_equal(b.p + 7 + 499, "]");
    fl_strbuf_printf(&b, "%s", ""); /* nothing */
    assert_int_equal(b.len, 6 + 2 + 499);
    fl_strbuf_close(&b);
}

static void truncate_cuts_back_and_keeps_the_memory(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, ".spec");
    size_t mark = b.len;
    fl_strbuf_adds(&b, ".items[2]");
    char *mem = b.p;
    fl_strbuf_truncate(&b, mark);
    assert_string_equal(b.p, ".spec");
    assert_ptr_equal(b.p, mem);
    fl_strbuf_truncate(&b, 99); /* longer than the text: nothing changes */
    assert_string_equal(b.p, ".spec");
    fl_strbuf_adds(&b, ".x");
    assert_string_equal(b.p, ".spec.x");
    fl_strbuf_close(&b);
}

static void take_hands_over_the_text_and_leaves_the_builder_empty(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, "owned");
    char *mem = b.p;
    char *s = fl_strbuf_take(&b);
    assert_ptr_equal(s, mem); /* no copy */
    assert_string_equal(s, "owned");
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    fl_strbuf_adds(&b, "again"); /* reusable */
    assert_string_equal(b.p, "again");
    fl_strbuf_close(&b);
    free(s);
}

static void take_of_an_empty_builder_gives_an_allocated_empty_string(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    char *s = fl_strbuf_take(&b);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
}

static void reserve_makes_room_without_adding(void **state)
{
    (void)state;
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_reserve(&b, 1000);
    assert_true(b.cap >= 1001);
    assert_int_equal(b.len, 0);
    char *mem = b.p;
    for (int i = 0; i < 1000; i++)
        fl_strbuf_addc(&b, 'q');
    assert_ptr_equal(b.p, mem); /* no growth on the way */
    fl_strbuf_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_zeroed_builder_reads_as_the_empty_string),
        cmocka_unit_test(appends_keep_the_text_nul_terminated_after_every_call),
        cmocka_unit_test(growth_across_many_resizes_keeps_every_byte),
        cmocka_unit_test(one_append_larger_than_twice_the_capacity_fits_at_once),
        cmocka_unit_test(bytes_with_nuls_inside_are_kept_and_counted),
        cmocka_unit_test(printf_appends_after_the_text_there),
        cmocka_unit_test(truncate_cuts_back_and_keeps_the_memory),
        cmocka_unit_test(take_hands_over_the_text_and_leaves_the_builder_empty),
        cmocka_unit_test(take_of_an_empty_builder_gives_an_allocated_empty_string),
        cmocka_unit_test(reserve_makes_room_without_adding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
