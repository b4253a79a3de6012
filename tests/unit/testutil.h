/* testutil.h - small helpers the unit tests share: a monotonic clock, sleeping, and a
 * bounded wait for a condition that fails the cmocka test when it runs out.
 * Include after <cmocka.h>. */
#ifndef FL_TESTUTIL_H
#define FL_TESTUTIL_H

#include <stdint.h>
#include <time.h>

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Poll cond every 5 ms for at most ms milliseconds; fail the test if it never holds. */
#define WAIT_UNTIL(cond, ms)                                                                                           \
    do {                                                                                                               \
        int64_t until_ = now_ms() + (ms);                                                                              \
        while (!(cond) && now_ms() < until_)                                                                           \
            sleep_ms(5);                                                                                               \
        if (!(cond))                                                                                                   \
            fail_msg("timed out after %d ms waiting for: %s", (int)(ms), #cond);                                      \
    } while (0)

#endif
