/* testutil.h - small helpers the unit tests share: a monotonic clock, sleeping, a bounded
 * wait for a condition that fails the cmocka test when it runs out, and JSON literals.
 * Include after <cmocka.h>. */
#ifndef FL_TESTUTIL_H
#define FL_TESTUTIL_H

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* JSON written with ' for " so that literals stay readable; fails the test if it does not
 * parse. A new reference. */
static inline json_t *test_json(const char *text)
{
    char *buf = strdup(text);
    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t err;
    json_t *v = json_loads(buf, JSON_DECODE_ANY, &err);
    if (!v)
        fail_msg("bad test JSON: %s: %s", err.text, buf);
    free(buf);
    return v;
}

#endif
