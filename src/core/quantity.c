/* quantity.c - Kubernetes resource quantities as exact nano-unit counts (see quantity.h).
 *
 * Parsing splits "<sign><digits>[.<digits>]<suffix>" the way apimachinery's
 * ParseQuantity does, turns the digits into one integer with a count of fraction
 * digits, and scales by the suffix with overflow checks. Formatting searches the
 * largest suffix that divides the value exactly, which is what Kubernetes' canonical
 * form amounts to for values held without loss. */
#include "core/quantity.h"

#include <string.h>

#include "core/err.h"

#define NANO ((fl_quantity_nano)1000000000)

static bool mul_ok(fl_quantity_nano a, fl_quantity_nano b, fl_quantity_nano *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static fl_quantity_nano pow10n(int e)
{
    fl_quantity_nano r = 1;
    while (e-- > 0)
        r *= 10;
    return r;
}

/* Decimal suffixes and their power of ten. */
static const struct {
    const char *s;
    int exp;
} dec_suffix[] = {
    {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}, {"E", 18},
};

static const char *const bin_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

/* value * num / den, rounding the magnitude up (away from zero), as Kubernetes rounds
 * what it cannot hold. */
static bool scale_round_up(fl_quantity_nano v, fl_quantity_nano num, fl_quantity_nano den, fl_quantity_nano *out)
{
    fl_quantity_nano p;
    if (!mul_ok(v, num, &p))
        return false;
    fl_quantity_nano q = p / den;
    if (p % den)
        q += 1;
    *out = q;
    return true;
}

int fl_quantity_parse(const char *s, fl_quantity *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !*s)
        return FL_EINVAL;
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    fl_quantity_nano digits = 0;
    int frac = 0, ndigits = 0;
    bool dot = false;
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.') {
            if (dot)
                return FL_EINVAL;
            dot = true;
            continue;
        }
        if (digits == 0 && *p == '0') {
            if (dot)
                frac++;
            ndigits++;
            continue; /* leading zeros carry no precision */
        }
        if (ndigits > 36)
            return FL_EINVAL;
        digits = digits * 10 + (*p - '0');
        ndigits++;
        if (dot)
            frac++;
    }
    if (ndigits == 0)
        return FL_EINVAL;

    /* the suffix: value = digits * 10^-frac * mult */
    int format = FL_QUANTITY_DECIMAL_SI;
    int exp10 = 0, bin = 0;
    if (!*p) {
        /* no suffix */
    } else if (p[1] == 'i' && !p[2]) {
        const char *k = strchr("KMGTPE", *p);
        if (!k)
            return FL_EINVAL;
        bin = (int)(k - "KMGTPE") + 1;
        format = FL_QUANTITY_BINARY_SI;
    } else if (!p[1]) {
        size_t i;
        for (i = 0; i < sizeof dec_suffix / sizeof dec_suffix[0]; i++)
            if (*p == dec_suffix[i].s[0])
                break;
        if (i == sizeof dec_suffix / sizeof dec_suffix[0])
            return FL_EINVAL;
        exp10 = dec_suffix[i].exp;
    } else if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        bool eneg = false;
        if (*q == '+' || *q == '-')
            eneg = *q++ == '-';
        if (!*q)
            return FL_EINVAL;
        int e = 0;
        for (; *q; q++) {
            if (*q < '0' || *q > '9' || e > 1000)
                return FL_EINVAL;
            e = e * 10 + (*q - '0');
        }
        exp10 = eneg ? -e : e;
        format = FL_QUANTITY_DECIMAL_EXPONENT;
    } else {
        return FL_EINVAL;
    }

    fl_quantity_nano v;
    if (bin) {
        /* digits * 2^(10*bin) * 10^9 / 10^frac */
        fl_quantity_nano m = (fl_quantity_nano)1 << (10 * bin);
        if (!mul_ok(digits, m, &v))
            return FL_EINVAL;
        int shift = 9 - frac;
        if (shift >= 0) {
            if (!mul_ok(v, pow10n(shift), &v))
                return FL_EINVAL;
        } else if (-shift > 36 || !scale_round_up(v, 1, pow10n(-shift), &v)) {
            return FL_EINVAL;
        }
    } else {
        int shift = exp10 + 9 - frac;
        if (shift > 36 && digits)
            return FL_EINVAL;
        if (shift > 36) {
            v = 0;
        } else if (shift >= 0) {
            if (!mul_ok(digits, pow10n(shift), &v))
                return FL_EINVAL;
        } else if (-shift > 36) {
            v = digits ? 1 : 0; /* a non-zero value far below a nano-unit rounds up to one */
        } else if (!scale_round_up(digits, 1, pow10n(-shift), &v)) {
            return FL_EINVAL;
        }
    }
    out->nano = neg ? -v : v;
    out->format = format;
    return 0;
}

int fl_quantity_add(fl_quantity *acc, const fl_quantity *q)
{
    fl_quantity_nano sum;
    if (__builtin_add_overflow(acc->nano, q->nano, &sum))
        return FL_EINVAL;
    acc->nano = sum;
    if (acc->format == FL_QUANTITY_NONE)
        acc->format = q->format;
    return 0;
}

int fl_quantity_cmp(const fl_quantity *a, const fl_quantity *b)
{
    return a->nano < b->nano ? -1 : a->nano > b->nano;
}

/* Append the decimal digits of v (v >= 0). */
static size_t put_uint(fl_quantity_nano v, char *buf, size_t cap, size_t at)
{
    char tmp[48];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v && n < sizeof tmp);
    while (n && at + 1 < cap)
        buf[at++] = tmp[--n];
    buf[at < cap ? at : cap - 1] = 0;
    return at;
}

static size_t put_str(const char *s, char *buf, size_t cap, size_t at)
{
    while (*s && at + 1 < cap)
        buf[at++] = *s++;
    buf[at < cap ? at : cap - 1] = 0;
    return at;
}

size_t fl_quantity_format(const fl_quantity *q, char *buf, size_t cap)
{
    if (!cap)
        return 0;
    buf[0] = 0;
    fl_quantity_nano v = q->nano;
    size_t at = 0;
    if (v == 0)
        return put_str("0", buf, cap, 0);
    if (v < 0) {
        at = put_str("-", buf, cap, at);
        v = -v;
    }
    if (q->format == FL_QUANTITY_BINARY_SI && v % NANO == 0 && v >= 1024 * NANO) {
        fl_quantity_nano units = v / NANO;
        int k = 6;
        while (k > 0 && units % ((fl_quantity_nano)1 << (10 * k)))
            k--;
        at = put_uint(units >> (10 * k), buf, cap, at);
        return put_str(bin_suffix[k], buf, cap, at);
    }
    /* decimal: the largest power of ten (a multiple of 3, from 10^-9 up) dividing v */
    int e = -9;
    while (e < 18 && v % pow10n(e + 3 + 9) == 0)
        e += 3;
    at = put_uint(v / pow10n(e + 9), buf, cap, at);
    if (e == 0)
        return at;
    if (q->format == FL_QUANTITY_DECIMAL_EXPONENT) {
        at = put_str("e", buf, cap, at);
        if (e < 0) {
            at = put_str("-", buf, cap, at);
            return put_uint(-e, buf, cap, at);
        }
        return put_uint(e, buf, cap, at);
    }
    for (size_t i = 0; i < sizeof dec_suffix / sizeof dec_suffix[0]; i++)
        if (dec_suffix[i].exp == e)
            return put_str(dec_suffix[i].s, buf, cap, at);
    return at;
}
