/* protobuf.c - the protobuf wire decoder behind fl_protobuf_decode().
 *
 * A Kubernetes protobuf body is the magic "k8s\0" and a runtime.Unknown
 * envelope whose `raw` field holds the typed object. This file reads the
 * envelope by hand, finds the kind's table in fl_pb_kinds[] (protobuf_schema.c)
 * and walks the raw bytes against it, building the JSON object directly: no
 * intermediate structs, no code per kind. Everything kind-specific is in the
 * tables; everything JSON-specific that is not (times, quantities,
 * int-or-string, durations, embedded JSON) is in decode_special().
 *
 * The wire format is proto2 as gogo-protobuf writes it for Kubernetes: varint
 * (wire type 0) and length-delimited (2) fields only, although fixed32/64 are
 * skipped if they turn up as unknown fields. Non-pointer Go fields are always
 * written, so "present" here is what Go's decoder would leave set, and the
 * rendering rules in protobuf.h reproduce what Go's JSON encoder then prints.
 *
 * Errors carry the message and field being read and the byte offset into the
 * caller's buffer, so a bad body can be found with a hex dump. Recursion depth
 * is bounded; every length is checked against the enclosing message's end. */
#include "api/protobuf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base64.h"
#include "core/err.h"
#include "core/mem.h"

/* Protobuf wire types. Groups (3, 4) were never used by Kubernetes. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Deeper than any Kubernetes object; stops hostile input from recursing. */
#define MAX_DEPTH 64

/* Go's time.Time{} as Unix seconds: 0001-01-01T00:00:00Z. */
#define ZERO_TIME_SECONDS (-62135596800LL)
/* 9999-12-31T23:59:59Z, the last instant RFC 3339 can write. */
#define MAX_TIME_SECONDS 253402300799LL

typedef struct {
    const unsigned char *base; /* start of the caller's buffer, for offsets */
    char *err;
    int depth;
} dctx;

typedef struct {
    const unsigned char *p, *end;
} reader;

/* Record the first error; returns rc so callers can `return fail(...)`. */
static int fail(dctx *c, int rc, const fl_pb_msg *m, const fl_pb_field *f, uint32_t num,
                const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static int fail(dctx *c, int rc, const fl_pb_msg *m, const fl_pb_field *f, uint32_t num,
                const unsigned char *at, const char *fmt, ...)
{
    if (c->err)
        return rc;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t off = (size_t)(at - c->base);
    if (m && f && f->json)
        c->err = fl_asprintf("protobuf: %s.%s (field %u) at offset %zu: %s", m->name, f->json,
                             (unsigned)f->num, off, what);
    else if (m && num)
        c->err = fl_asprintf("protobuf: %s field %u at offset %zu: %s", m->name, (unsigned)num,
                             off, what);
    else if (m)
        c->err = fl_asprintf("protobuf: %s at offset %zu: %s", m->name, off, what);
    else
        c->err = fl_asprintf("protobuf: at offset %zu: %s", off, what);
    return rc;
}

/* ---------- wire primitives ---------- */

/* Read a varint of at most 10 bytes. -1 when truncated or overlong. */
static int read_varint(reader *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end)
            return -1;
        unsigned char b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Read a length prefix and the bytes it covers. -1 when they run past the end. */
static int read_len(reader *r, const unsigned char **data, size_t *n)
{
    uint64_t l;
    if (read_varint(r, &l) < 0 || l > (uint64_t)(r->end - r->p))
        return -1;
    *data = r->p;
    *n = (size_t)l;
    r->p += l;
    return 0;
}

/* Skip one field's value of wire type wt. -1 on truncation or an unknown type. */
static int skip_value(reader *r, unsigned wt)
{
    uint64_t v;
    const unsigned char *d;
    size_t n;
    switch (wt) {
    case WT_VARINT:
        return read_varint(r, &v);
    case WT_I64:
        if (r->end - r->p < 8)
            return -1;
        r->p += 8;
        return 0;
    case WT_LEN:
        return read_len(r, &d, &n);
    case WT_I32:
        if (r->end - r->p < 4)
            return -1;
        r->p += 4;
        return 0;
    default:
        return -1;
    }
}

static const fl_pb_field *find_field(const fl_pb_msg *m, uint32_t num)
{
    size_t lo = 0, hi = m->nfields;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->fields[mid].num == num)
            return &m->fields[mid];
        if (m->fields[mid].num < num)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}


/* ---------- special messages ---------- */

/* Go's Duration.String(): "1h2m3.5s", "1.5ms", "0s". */
static json_t *duration_text(int64_t d)
{
    char buf[40];
    int w = (int)sizeof buf - 1;
    buf[w] = '\0';
    uint64_t u = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
    /* Write the fraction of u below 10^prec (trailing zeros dropped), then u /= 10^prec. */
#define FRAC(prec)                                                                  \
    do {                                                                            \
        bool printed = false;                                                       \
        for (int i_ = 0; i_ < (prec); i_++) {                                       \
            unsigned digit = (unsigned)(u % 10);                                    \
            printed = printed || digit != 0;                                        \
            if (printed)                                                            \
                buf[--w] = (char)('0' + digit);                                     \
            u /= 10;                                                                \
        }                                                                           \
        if (printed)                                                                \
            buf[--w] = '.';                                                         \
    } while (0)
#define INT()                                                                       \
    do {                                                                            \
        if (u == 0)                                                                 \
            buf[--w] = '0';                                                         \
        while (u > 0) {                                                             \
            buf[--w] = (char)('0' + u % 10);                                        \
            u /= 10;                                                                \
        }                                                                           \
    } while (0)
    if (u == 0)
        return json_string("0s");
    if (u < 1000000000ULL) {
        /* below a second: one unit, ns/µs/ms */
        buf[--w] = 's';
        if (u < 1000ULL) {
            buf[--w] = 'n';
            INT();
        } else if (u < 1000000ULL) {
            w -= 2; /* "µ" is two bytes in UTF-8 */
            buf[w] = (char)0xc2;
            buf[w + 1] = (char)0xb5;
            FRAC(3);
            INT();
        } else {
            buf[--w] = 'm';
            FRAC(6);
            INT();
        }
    } else {
        buf[--w] = 's';
        FRAC(9);
        uint64_t secs = u;
        u = secs % 60;
        INT();
        u = secs / 60;
        if (u > 0) {
            uint64_t mins = u;
            buf[--w] = 'm';
            u = mins % 60;
            INT();
            u = mins / 60;
            if (u > 0) {
                buf[--w] = 'h';
                INT();
            }
        }
    }
#undef FRAC
#undef INT
    if (d < 0)
        buf[--w] = '-';
    return json_string(buf + w);
}

/* RFC 3339 in UTC, seconds or microseconds. NULL when out of years 1..9999. */
static json_t *time_text(int64_t secs, int64_t nanos, bool micro)
{
    /* normalise like time.Unix(sec, nsec) */
    if (nanos < 0 || nanos >= 1000000000LL) {
        int64_t q = nanos / 1000000000LL;
        nanos -= q * 1000000000LL;
        if (nanos < 0) {
            nanos += 1000000000LL;
            q--;
        }
        secs += q;
    }
    if (secs < ZERO_TIME_SECONDS || secs > MAX_TIME_SECONDS)
        return NULL;
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return NULL;
    char buf[64];
    if (micro)
        snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(nanos / 1000));
    else
        snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return json_string(buf);
}

/* Decode a message whose JSON form is a scalar (protobuf.h, fl_pb_special_t).
 * *out may be set to NULL with rc 0: "render nothing" (a zero Time). */
static int decode_special(dctx *c, const fl_pb_msg *m, const unsigned char *data, size_t n,
                          json_t **out)
{
    reader r = {data, data + n};
    int64_t i1 = 0, i2 = 0;       /* seconds/nanos, duration, IntOrString type/intVal */
    const unsigned char *s = NULL; /* string or bytes payload */
    size_t sn = 0;
    bool have_s = false;
    json_t *list = NULL; /* FL_PB_SP_STRINGLIST's items */
    *out = NULL;
    while (r.p < r.end) {
        const unsigned char *at = r.p;
        uint64_t tag, v;
        if (read_varint(&r, &tag) < 0)
            return fail(c, FL_EINVAL, m, NULL, 0, at, "truncated field tag");
        uint32_t num = (uint32_t)(tag >> 3);
        unsigned wt = (unsigned)(tag & 7);
        if (tag >> 3 > 0x1fffffff || num == 0)
            return fail(c, FL_EINVAL, m, NULL, 0, at, "invalid field number");
        /* which of (num) this special reads, and as what */
        bool want_varint = false, want_len = false;
        switch (m->special) {
        case FL_PB_SP_TIME:
        case FL_PB_SP_MICROTIME:
            want_varint = num == 1 || num == 2;
            break;
        case FL_PB_SP_DURATION:
            want_varint = num == 1;
            break;
        case FL_PB_SP_INTORSTRING:
            want_varint = num == 1 || num == 2;
            want_len = num == 3;
            break;
        default: /* Quantity, FieldsV1, RawExtension: one bytes/string field 1 */
            want_len = num == 1;
            break;
        }
        if (want_varint && wt == WT_VARINT) {
            if (read_varint(&r, &v) < 0)
                return fail(c, FL_EINVAL, m, NULL, num, at, "truncated varint");
            if (num == 1)
                i1 = (int64_t)v;
            else
                i2 = (int64_t)(int32_t)(uint32_t)v; /* nanos and intVal are int32 */
        } else if (want_len && wt == WT_LEN) {
            if (read_len(&r, &s, &sn) < 0) {
                json_decref(list);
                return fail(c, FL_EINVAL, m, NULL, num, at, "length runs past the end");
            }
            have_s = true;
            if (m->special == FL_PB_SP_STRINGLIST) {
                json_t *item = json_stringn((const char *)s, sn);
                if (!item) {
                    json_decref(list);
                    return fail(c, FL_EINVAL, m, NULL, num, s, "string is not valid UTF-8");
                }
                if (!list)
                    list = json_array();
                json_array_append_new(list, item);
            }
        } else if (want_varint || want_len) {
            json_decref(list);
            return fail(c, FL_EINVAL, m, NULL, num, at, "wire type %u does not fit the field", wt);
        } else if (skip_value(&r, wt) < 0) {
            json_decref(list);
            return fail(c, FL_EINVAL, m, NULL, num, at, "cannot skip unknown field (wire type %u)",
                        wt);
        }
    }
    if (m->special == FL_PB_SP_STRINGLIST) {
        *out = list ? list : json_array();
        return 0;
    }

    switch (m->special) {
    case FL_PB_SP_TIME:
        /* Kubernetes' Time keeps whole seconds only; no fields at all is time.Time{} */
        if (n == 0 || i1 == ZERO_TIME_SECONDS)
            return 0;
        if (!(*out = time_text(i1, 0, false)))
            return fail(c, FL_EINVAL, m, NULL, 0, data, "time %lld s is outside years 1..9999",
                        (long long)i1);
        return 0;
    case FL_PB_SP_MICROTIME:
        if (n == 0 || (i1 == ZERO_TIME_SECONDS && i2 == 0))
            return 0;
        if (!(*out = time_text(i1, i2, true)))
            return fail(c, FL_EINVAL, m, NULL, 0, data, "time %lld s is outside years 1..9999",
                        (long long)i1);
        return 0;
    case FL_PB_SP_DURATION:
        *out = duration_text(i1);
        return 0;
    case FL_PB_SP_QUANTITY:
        /* the zero Quantity prints as "0" */
        *out = have_s && sn ? json_stringn((const char *)s, sn) : json_string("0");
        break;
    case FL_PB_SP_INTORSTRING:
        if (i1 == 1)
            *out = json_stringn(have_s ? (const char *)s : "", have_s ? sn : 0);
        else
            *out = json_integer(i2);
        break;
    case FL_PB_SP_FIELDSV1:
    case FL_PB_SP_RAWEXTENSION: {
        if (!have_s) {
            *out = json_null();
            return 0;
        }
        json_error_t je;
        *out = json_loadb((const char *)s, sn, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!*out)
            return fail(c, FL_EINVAL, m, NULL, 0, s, "embedded JSON: %s", je.text);
        return 0;
    }
    default:
        return fail(c, FL_EINVAL, m, NULL, 0, data, "no decoder for special message");
    }
    if (!*out)
        return fail(c, FL_EINVAL, m, NULL, 0, s ? s : data, "string is not valid UTF-8");
    return 0;
}

/* ---------- messages ---------- */

static int decode_msg(dctx *c, const fl_pb_msg *m, const unsigned char *data, size_t n,
                      json_t *obj);

/* Turn one scalar into JSON. *zero says whether it is Go's zero value. */
static int scalar_json(dctx *c, const fl_pb_msg *m, const fl_pb_field *f, uint64_t v,
                       const unsigned char *s, size_t sn, const unsigned char *at, json_t **out,
                       bool *zero)
{
    switch (f->kind) {
    case FL_PB_STRING:
        *zero = sn == 0;
        *out = json_stringn((const char *)s, sn);
        if (!*out)
            return fail(c, FL_EINVAL, m, f, 0, at, "string is not valid UTF-8");
        return 0;
    case FL_PB_BYTES: {
        *zero = sn == 0;
        char *b = fl_base64_encode(s, sn);
        *out = json_string(b);
        free(b);
        return 0;
    }
    case FL_PB_BOOL:
        *zero = v == 0;
        *out = json_boolean(v != 0);
        return 0;
    case FL_PB_INT32: {
        int32_t x = (int32_t)(uint32_t)v;
        *zero = x == 0;
        *out = json_integer(x);
        return 0;
    }
    default: { /* FL_PB_INT64 */
        int64_t x = (int64_t)v;
        *zero = x == 0;
        *out = json_integer(x);
        return 0;
    }
    }
}

/* The array for repeated field f in obj, created on first use. */
static json_t *array_of(json_t *obj, const fl_pb_field *f)
{
    json_t *a = json_object_get(obj, f->json);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(obj, f->json, a);
    }
    return a;
}

/* Store value v (owned) for non-repeated, non-map field f, following the Go
 * rendering rules in protobuf.h; v == NULL means "render nothing". */
static void put_single(json_t *obj, const fl_pb_field *f, json_t *v, bool zero)
{
    bool drop = !v || (zero && (f->flags & FL_PBF_OMITEMPTY) && !(f->flags & FL_PBF_POINTER));
    if (drop) {
        json_object_del(obj, f->json); /* proto: the last occurrence wins */
        json_decref(v);
        return;
    }
    json_object_set_new(obj, f->json, v);
}

/* Decode a message-typed value (special or table) into a fresh JSON value.
 * *out may be NULL with rc 0 for "render nothing". */
static int message_value(dctx *c, const fl_pb_msg *sub, const unsigned char *d, size_t dn,
                         json_t **out)
{
    if (sub->special != FL_PB_SP_NONE)
        return decode_special(c, sub, d, dn, out);
    json_t *o = json_object();
    int rc = decode_msg(c, sub, d, dn, o);
    if (rc) {
        json_decref(o);
        o = NULL;
    }
    *out = o;
    return rc;
}

/* One map entry {1: key, 2: value} into the JSON object for field f. */
static int decode_map_entry(dctx *c, const fl_pb_msg *m, const fl_pb_field *f,
                            const unsigned char *d, size_t dn, json_t *obj)
{
    reader r = {d, d + dn};
    const unsigned char *key = (const unsigned char *)"", *val = NULL;
    size_t keyn = 0, valn = 0;
    uint64_t valv = 0;
    bool val_len = f->kind == FL_PB_STRING || f->kind == FL_PB_BYTES || f->kind == FL_PB_MESSAGE;
    while (r.p < r.end) {
        const unsigned char *at = r.p;
        uint64_t tag;
        if (read_varint(&r, &tag) < 0)
            return fail(c, FL_EINVAL, m, f, 0, at, "map entry: truncated field tag");
        uint64_t num = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (num == 1 && wt == WT_LEN) {
            if (read_len(&r, &key, &keyn) < 0)
                return fail(c, FL_EINVAL, m, f, 0, at, "map key runs past the end");
        } else if (num == 2 && val_len && wt == WT_LEN) {
            if (read_len(&r, &val, &valn) < 0)
                return fail(c, FL_EINVAL, m, f, 0, at, "map value runs past the end");
        } else if (num == 2 && !val_len && wt == WT_VARINT) {
            if (read_varint(&r, &valv) < 0)
                return fail(c, FL_EINVAL, m, f, 0, at, "map value: truncated varint");
        } else if (num == 1 || num == 2) {
            return fail(c, FL_EINVAL, m, f, 0, at, "map entry: wire type %u does not fit", wt);
        } else if (num == 0 || skip_value(&r, wt) < 0) {
            return fail(c, FL_EINVAL, m, f, 0, at, "map entry: bad unknown field");
        }
    }
    json_t *v = NULL;
    int rc;
    if (f->kind == FL_PB_MESSAGE) {
        rc = message_value(c, f->msg, val ? val : d, val ? valn : 0, &v);
        if (rc)
            return rc;
        if (!v)
            v = json_null();
    } else {
        bool zero;
        rc = scalar_json(c, m, f, valv, val ? val : d, val ? valn : 0, val ? val : d, &v, &zero);
        if (rc)
            return rc;
    }
    json_t *map = json_object_get(obj, f->json);
    if (!json_is_object(map)) {
        map = json_object();
        json_object_set_new(obj, f->json, map);
    }
    if (json_object_setn_new(map, (const char *)key, keyn, v) < 0)
        return fail(c, FL_EINVAL, m, f, 0, key, "map key is not valid UTF-8");
    return 0;
}

/* One occurrence of known field f whose tag has been read; r is positioned at its value. */
static int decode_field(dctx *c, const fl_pb_msg *m, const fl_pb_field *f, unsigned wt,
                        reader *r, const unsigned char *at, json_t *obj)
{
    bool repeated = f->flags & FL_PBF_REPEATED;
    const unsigned char *d;
    size_t dn;
    json_t *v;
    bool zero;
    int rc;

    if (f->flags & FL_PBF_MAP) {
        if (wt != WT_LEN)
            return fail(c, FL_EINVAL, m, f, 0, at, "wire type %u for a map entry", wt);
        if (read_len(r, &d, &dn) < 0)
            return fail(c, FL_EINVAL, m, f, 0, at, "length runs past the end");
        return decode_map_entry(c, m, f, d, dn, obj);
    }

    if (f->kind == FL_PB_MESSAGE) {
        if (wt != WT_LEN)
            return fail(c, FL_EINVAL, m, f, 0, at, "wire type %u for a message", wt);
        if (read_len(r, &d, &dn) < 0)
            return fail(c, FL_EINVAL, m, f, 0, at, "length runs past the end");
        if (f->flags & FL_PBF_INLINE)
            return decode_msg(c, f->msg, d, dn, obj);
        if (!repeated && f->msg->special == FL_PB_SP_NONE) {
            /* a repeated occurrence of a singular message merges into the first */
            json_t *cur = json_object_get(obj, f->json);
            if (json_is_object(cur))
                return decode_msg(c, f->msg, d, dn, cur);
        }
        if ((rc = message_value(c, f->msg, d, dn, &v)))
            return rc;
        if (repeated) {
            json_array_append_new(array_of(obj, f), v ? v : json_null());
            return 0;
        }
        /* Go never omits a present struct or pointer, whatever its tag says */
        put_single(obj, f, v, false);
        return 0;
    }

    bool len_kind = f->kind == FL_PB_STRING || f->kind == FL_PB_BYTES;
    if (len_kind) {
        if (wt != WT_LEN)
            return fail(c, FL_EINVAL, m, f, 0, at, "wire type %u for a string", wt);
        if (read_len(r, &d, &dn) < 0)
            return fail(c, FL_EINVAL, m, f, 0, at, "length runs past the end");
        if ((rc = scalar_json(c, m, f, 0, d, dn, at, &v, &zero)))
            return rc;
        if (repeated)
            json_array_append_new(array_of(obj, f), v);
        else
            put_single(obj, f, v, zero);
        return 0;
    }

    /* varint kinds: bool, int32, int64 */
    uint64_t x;
    if (wt == WT_VARINT) {
        if (read_varint(r, &x) < 0)
            return fail(c, FL_EINVAL, m, f, 0, at, "truncated varint");
        scalar_json(c, m, f, x, NULL, 0, at, &v, &zero);
        if (repeated)
            json_array_append_new(array_of(obj, f), v);
        else
            put_single(obj, f, v, zero);
        return 0;
    }
    if (wt == WT_LEN && repeated) {
        /* packed: a run of varints */
        if (read_len(r, &d, &dn) < 0)
            return fail(c, FL_EINVAL, m, f, 0, at, "length runs past the end");
        reader pr = {d, d + dn};
        while (pr.p < pr.end) {
            const unsigned char *eat = pr.p;
            if (read_varint(&pr, &x) < 0)
                return fail(c, FL_EINVAL, m, f, 0, eat, "truncated varint in packed field");
            scalar_json(c, m, f, x, NULL, 0, eat, &v, &zero);
            json_array_append_new(array_of(obj, f), v);
        }
        return 0;
    }
    return fail(c, FL_EINVAL, m, f, 0, at, "wire type %u for a varint field", wt);
}

/* Decode message m from data[0..n) into the JSON object obj (which may already
 * hold fields: inline structs and repeated singular messages merge). */
static int decode_msg(dctx *c, const fl_pb_msg *m, const unsigned char *data, size_t n,
                      json_t *obj)
{
    if (++c->depth > MAX_DEPTH) {
        c->depth--;
        return fail(c, FL_EINVAL, m, NULL, 0, data, "messages nested deeper than %d",
                    MAX_DEPTH);
    }
    reader r = {data, data + n};
    int rc = 0;
    while (r.p < r.end) {
        const unsigned char *at = r.p;
        uint64_t tag;
        if (read_varint(&r, &tag) < 0) {
            rc = fail(c, FL_EINVAL, m, NULL, 0, at, "truncated field tag");
            break;
        }
        uint64_t num = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (num == 0 || num > 0x1fffffff) {
            rc = fail(c, FL_EINVAL, m, NULL, 0, at, "invalid field number %llu",
                      (unsigned long long)num);
            break;
        }
        const fl_pb_field *f = find_field(m, (uint32_t)num);
        if (!f) {
            /* unknown fields (newer API versions) are skipped, not errors */
            if (skip_value(&r, wt) < 0) {
                rc = fail(c, FL_EINVAL, m, NULL, (uint32_t)num, at,
                          "cannot skip unknown field (wire type %u)", wt);
                break;
            }
            continue;
        }
        if ((rc = decode_field(c, m, f, wt, &r, at, obj)))
            break;
    }
    c->depth--;
    return rc;
}

/* ---------- the envelope ---------- */

static const fl_pb_msg unknown_msg = {"runtime.Unknown", FL_PB_SP_NONE, NULL, 0};
static const fl_pb_msg typemeta_msg = {"runtime.TypeMeta", FL_PB_SP_NONE, NULL, 0};

/* Read the string fields of a small message into slots[num-1] (num 1..nslots). */
static int read_strings(dctx *c, const fl_pb_msg *m, const unsigned char *d, size_t n,
                        const unsigned char **s, size_t *sn, size_t nslots)
{
    reader r = {d, d + n};
    while (r.p < r.end) {
        const unsigned char *at = r.p;
        uint64_t tag;
        if (read_varint(&r, &tag) < 0)
            return fail(c, FL_EINVAL, m, NULL, 0, at, "truncated field tag");
        uint64_t num = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (num == 0)
            return fail(c, FL_EINVAL, m, NULL, 0, at, "invalid field number 0");
        if (num <= nslots) {
            if (wt != WT_LEN)
                return fail(c, FL_EINVAL, m, NULL, (uint32_t)num, at,
                            "wire type %u for a bytes field", wt);
            if (read_len(&r, &s[num - 1], &sn[num - 1]) < 0)
                return fail(c, FL_EINVAL, m, NULL, (uint32_t)num, at,
                            "length runs past the end");
        } else if (skip_value(&r, wt) < 0) {
            return fail(c, FL_EINVAL, m, NULL, (uint32_t)num, at,
                        "cannot skip unknown field (wire type %u)", wt);
        }
    }
    return 0;
}

static bool span_eq(const unsigned char *s, size_t n, const char *lit)
{
    return s && strlen(lit) == n && memcmp(s, lit, n) == 0;
}

int fl_protobuf_decode(const unsigned char *buf, size_t len, json_t **out, char **err)
{
    dctx c = {buf, NULL, 0};
    json_t *obj = NULL;
    int rc;
    *out = NULL;
    *err = NULL;

    if (len < FL_PB_MAGIC_LEN || memcmp(buf, FL_PB_MAGIC, FL_PB_MAGIC_LEN) != 0) {
        rc = fail(&c, FL_EINVAL, NULL, NULL, 0, buf,
                  "body does not start with the Kubernetes protobuf magic \"k8s\\0\"");
        goto out;
    }
    /* runtime.Unknown: 1 typeMeta, 2 raw, 3 contentEncoding, 4 contentType */
    const unsigned char *u[4] = {0};
    size_t un[4] = {0};
    if ((rc = read_strings(&c, &unknown_msg, buf + FL_PB_MAGIC_LEN, len - FL_PB_MAGIC_LEN, u,
                           un, 4)))
        goto out;
    /* runtime.TypeMeta: 1 apiVersion, 2 kind */
    const unsigned char *tm[2] = {0};
    size_t tmn[2] = {0};
    if (u[0] && (rc = read_strings(&c, &typemeta_msg, u[0], un[0], tm, tmn, 2)))
        goto out;
    if (!tm[1] || tmn[1] == 0) {
        rc = fail(&c, FL_EINVAL, &unknown_msg, NULL, 0, u[0] ? u[0] : buf + FL_PB_MAGIC_LEN,
                  "typeMeta.kind is missing");
        goto out;
    }
    if (u[2] && un[2] > 0) {
        rc = FL_EUNSUPPORTED;
        c.err = fl_asprintf("protobuf: content encoding \"%.*s\" is not supported; send the "
                            "object unencoded", (int)(un[2] > 64 ? 64 : un[2]), u[2]);
        goto out;
    }
    const fl_pb_kind *k = NULL;
    bool kind_known = false;
    for (size_t i = 0; i < fl_pb_nkinds + fl_pb_authz_nkinds; i++) {
        const fl_pb_kind *ki = i < fl_pb_nkinds ? &fl_pb_kinds[i] : &fl_pb_authz_kinds[i - fl_pb_nkinds];
        if (!span_eq(tm[1], tmn[1], ki->kind))
            continue;
        kind_known = true;
        if (span_eq(tm[0], tmn[0], ki->api_version)) {
            k = ki;
            break;
        }
    }
    if (!k) {
        /* quote at most 100 bytes of what the client sent, printable only */
        char kind[101], av[101];
        size_t kn = tmn[1] > 100 ? 100 : tmn[1], an = tm[0] ? (tmn[0] > 100 ? 100 : tmn[0]) : 0;
        for (size_t i = 0; i < kn; i++)
            kind[i] = tm[1][i] >= 0x20 && tm[1][i] < 0x7f ? (char)tm[1][i] : '?';
        for (size_t i = 0; i < an; i++)
            av[i] = tm[0][i] >= 0x20 && tm[0][i] < 0x7f ? (char)tm[0][i] : '?';
        kind[kn] = av[an] = '\0';
        rc = FL_EUNSUPPORTED;
        if (kind_known)
            c.err = fl_asprintf("protobuf: kind %s with apiVersion \"%s\" is not decodable "
                                "from protobuf here; send it as application/json", kind, av);
        else
            c.err = fl_asprintf("protobuf: kind %s (apiVersion \"%s\") is not decodable from "
                                "protobuf here; send it as application/json", kind, av);
        goto out;
    }
    obj = json_object();
    json_object_set_new(obj, "kind", json_string(k->kind));
    json_object_set_new(obj, "apiVersion", json_string(k->api_version));
    rc = decode_msg(&c, k->msg, u[1] ? u[1] : buf, u[1] ? un[1] : 0, obj);
    if (rc == 0) {
        *out = obj;
        obj = NULL;
    }
out:
    json_decref(obj);
    if (rc)
        *err = c.err ? c.err : fl_asprintf("protobuf: %s", fl_strerror(rc));
    else
        free(c.err);
    return rc;
}
