/* random.c - see random.h. */
#include "core/random.h"

#include <stdlib.h>
#include <sys/random.h>
#include <sys/types.h>

void fl_random_bytes(void *buf, size_t n)
{
    unsigned char *b = buf;
    if (getrandom(b, n, 0) == (ssize_t)n)
        return;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)rand();
}

int64_t fl_random_below(int64_t n)
{
    if (n <= 0)
        return 0;
    uint64_t r;
    fl_random_bytes(&r, sizeof r);
    return (int64_t)(r % (uint64_t)n); /* the bias is below 2^-40 for any period we use */
}

int64_t fl_random_phase_ms(int64_t period_ms)
{
    return period_ms <= 1 ? 1 : 1 + fl_random_below(period_ms);
}

int64_t fl_jittered_ms(int64_t period_ms)
{
    if (period_ms <= 1)
        return 1;
    return period_ms - fl_random_below(period_ms / 10 + 1);
}

void fl_random_uuid4(char buf[37])
{
    unsigned char b[16];
    fl_random_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    char *o = buf;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 15];
    }
    *o = '\0';
}
