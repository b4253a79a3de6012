/* timefmt.c - metav1.Time formatting and parsing (contract in timefmt.h). */
#include "core/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t fl_time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fl_time_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fl_time_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct timespec fl_time_after(clockid_t clk, int64_t ms)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void fl_time_format(int64_t ms, bool millis, char buf[FL_TIME_BUF])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(buf, FL_TIME_BUF, "%Y-%m-%dT%H:%M:%S", &tm);
    if (millis)
        snprintf(buf + n, FL_TIME_BUF - n, ".%03dZ", (int)(ms % 1000));
    else
        snprintf(buf + n, FL_TIME_BUF - n, "Z");
}

int64_t fl_time_parse(const char *s)
{
    if (!s)
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    if (*p == '.') {
        int64_t scale = 100;
        for (p++; *p >= '0' && *p <= '9'; p++) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p == 'Z' && !p[1])
        return ms;
    if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int off = ((p[1] - '0') * 10 + (p[2] - '0')) * 60 + (p[4] - '0') * 10 + (p[5] - '0');
        return ms - (*p == '+' ? 1 : -1) * (int64_t)off * 60000;
    }
    return -1;
}
