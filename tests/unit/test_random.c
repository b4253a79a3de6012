/* test_random.c - random bytes, and the delays that spread a fleet's periodic work. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/random.h"

static void bytes_differ_between_calls(void **state)
{
    unsigned char a[32] = {0}, b[32] = {0};
    fl_random_bytes(a, sizeof a);
    fl_random_bytes(b, sizeof b);
    assert_memory_not_equal(a, b, sizeof a); /* equal with probability 2^-256 */
}

static void below_stays_in_range(void **state)
{
    assert_int_equal(fl_random_below(0), 0);
    assert_int_equal(fl_random_below(-5), 0);
    assert_int_equal(fl_random_below(1), 0);
    bool seen[7] = {false};
    for (int i = 0; i < 2000; i++) {
        int64_t r = fl_random_below(7);
        assert_true(r >= 0 && r < 7);
        seen[r] = true;
    }
    for (int i = 0; i < 7; i++)
        assert_true(seen[i]); /* each missed with probability (6/7)^2000 */
}

/* A fleet started at once: the first ticks land all over the period, never after it. */
static void phase_spreads_over_the_whole_period(void **state)
{
    const int64_t p = 10000;
    int buckets[10] = {0};
    for (int i = 0; i < 1000; i++) {
        int64_t d = fl_random_phase_ms(p);
        assert_true(d >= 1 && d <= p);
        buckets[(d - 1) * 10 / p]++;
    }
    for (int i = 0; i < 10; i++) /* ~100 each; below 40 with probability far under 1e-9 */
        assert_true(buckets[i] > 40);
    assert_int_equal(fl_random_phase_ms(1), 1);
    assert_int_equal(fl_random_phase_ms(0), 1);
}

/* Later ticks: at most a tenth early, never late (a lease renewed on them stays valid). */
static void jitter_is_at_most_a_tenth_early(void **state)
{
    const int64_t p = 10000;
    int64_t lo = p, hi = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t d = fl_jittered_ms(p);
        assert_true(d >= p - p / 10 && d <= p);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    assert_true(hi - lo > p / 20); /* it does move */
    assert_int_equal(fl_jittered_ms(1), 1);
    assert_int_equal(fl_jittered_ms(5), 5);
}

/* A version 4 UUID as Kubernetes writes metadata.uid: 8-4-4-4-12 lowercase hex digits, the
 * version nibble 4 and the variant bits 10. */
static void uuids_are_version_4_in_the_usual_form(void **state)
{
    char a[37], b[37];
    for (int n = 0; n < 200; n++) {
        fl_random_uuid4(a);
        assert_int_equal(strlen(a), 36);
        for (int i = 0; i < 36; i++) {
            if (i == 8 || i == 13 || i == 18 || i == 23)
                assert_int_equal(a[i], '-');
            else
                assert_non_null(strchr("0123456789abcdef", a[i]));
        }
        assert_int_equal(a[14], '4');
        assert_non_null(strchr("89ab", a[19]));
    }
    fl_random_uuid4(b);
    assert_string_not_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytes_differ_between_calls),
        cmocka_unit_test(below_stays_in_range),
        cmocka_unit_test(phase_spreads_over_the_whole_period),
        cmocka_unit_test(jitter_is_at_most_a_tenth_early),
        cmocka_unit_test(uuids_are_version_4_in_the_usual_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
