/* json_text.c - parts of a JSON text found or copied without decoding it (see json.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "core/json.h"
#include "core/json_parse.h"


/* Would jansson take the number start..end (its grammar already checked)? Its integers are
 * long long and its reals doubles: one that overflows is an error there. */
static bool number_fits(const char *start, const char *end, bool real)
{
    size_t n = (size_t)(end - start);
    if (!real && n <= 18)
        return true;
    char buf[64];
    if (n >= sizeof buf)
        return false; /* not worth judging here: the caller falls back to decoding */
    memcpy(buf, start, n);
    buf[n] = 0;
    errno = 0;
    if (!real) {
        (void)strtoll(buf, NULL, 10);
        return errno != ERANGE;
    }
    double d = strtod(buf, NULL);
    return !(errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL));
}

/* After a member or element: 1 at a ',' (another follows), 0 at close (the container's
 * end), -1 otherwise; steps over what it found. */
static int after_item(in *s, char close)
{
    skip_ws(s);
    if (s->p < s->end && (*s->p == ',' || *s->p == close))
        return *s->p++ == ',';
    return -1;
}

/* Check the value at s->p as the decoder would and step over it, appending its compact text
 * to o, but for the members at s->skip's paths, which are stepped over unchecked. Within the
 * outermost object (depth 1), where its "metadata" value is in o goes in meta[0] and meta[1]
 * (meta may be NULL). 0, or -1: not JSON, or something the decoder leaves to jansson. */
static int scan_value(in *s, out *o, out *scratch, size_t *meta)
{
    skip_ws(s);
    if (s->p >= s->end)
        return -1;
    const char *start = s->p;
    char c = *start;
    if (c == '"') {
        s->p++;
        const char *str;
        size_t n;
        if (fl_jp_string(s, scratch, &str, &n))
            return -1;
        put(o, start, (size_t)(s->p - start));
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        bool real;
        const char *e = fl_jp_number_end(start, s->end, &real);
        if (!e || !number_fits(start, e, real))
            return -1;
        s->p = e;
        put(o, start, (size_t)(e - start));
        return 0;
    }
    if (c != '{' && c != '[') {
        size_t left = (size_t)(s->end - start), n = 0;
        if (left >= 4 && (!memcmp(start, "true", 4) || !memcmp(start, "null", 4)))
            n = 4;
        else if (left >= 5 && !memcmp(start, "false", 5))
            n = 5;
        if (!n)
            return -1;
        s->p += n;
        put(o, start, n);
        return 0;
    }
    bool obj = c == '{';
    char close = obj ? '}' : ']';
    if (++s->depth > FL_JSON_MAX_DEPTH)
        return -1;
    s->p++;
    putc1(o, c);
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        putc1(o, close);
        return 0;
    }
    bool track = s->alive != 0, first = true;
    uint32_t was = track && !obj ? fl_jp_skip_enter(s, "[]", 2) : 0;
    int rc = -1;
    for (;;) {
        if (obj) {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '"')
                break;
            const char *ks = s->p++, *k;
            size_t kn;
            if (fl_jp_string(s, scratch, &k, &kn) || memchr(k, 0, kn))
                break;
            const char *ke = s->p;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                break;
            s->p++;
            if (s->alive && fl_jp_skipped(s, k, kn)) {
                if (fl_jp_skip_value(s))
                    break;
            } else {
                if (!first)
                    putc1(o, ',');
                first = false;
                put(o, ks, (size_t)(ke - ks));
                putc1(o, ':');
                bool meta_here = meta && s->depth == 1 && kn == 8 && !memcmp(k, "metadata", 8);
                uint32_t kwas = track ? fl_jp_skip_enter(s, k, kn) : 0;
                skip_ws(s);
                size_t from = o->b.len;
                int vr = scan_value(s, o, scratch, meta);
                if (track)
                    fl_jp_skip_leave(s, kwas);
                if (vr)
                    break;
                if (meta_here) {
                    meta[0] = from;
                    meta[1] = o->b.len - from;
                }
            }
        } else {
            if (!first)
                putc1(o, ',');
            first = false;
            if (scan_value(s, o, scratch, meta))
                break;
        }
        int more = after_item(s, close);
        if (more > 0)
            continue;
        if (more == 0) {
            s->depth--;
            putc1(o, close);
            rc = 0;
        }
        break;
    }
    if (track && !obj)
        fl_jp_skip_leave(s, was);
    return rc;
}

int fl_json_find(const char *buf, size_t len, const char *path, size_t *at, size_t *n)
{
    in s = {.p = buf, .end = buf + len};
    out scratch = {0};
    int rc = -1;
    for (const char *seg = path;;) {
        const char *dot = strchr(seg, '.');
        size_t sn = dot ? (size_t)(dot - seg) : strlen(seg);
        skip_ws(&s);
        if (s.p >= s.end || *s.p != '{')
            goto done;
        s.p++;
        for (;;) { /* the object's members, up to seg */
            skip_ws(&s);
            if (s.p >= s.end || *s.p != '"')
                goto done; /* its end ('}'), or not JSON: seg is not there */
            s.p++;
            const char *k;
            size_t kn;
            if (fl_jp_string(&s, &scratch, &k, &kn))
                goto done;
            skip_ws(&s);
            if (s.p >= s.end || *s.p != ':')
                goto done;
            s.p++;
            if (kn == sn && !memcmp(k, seg, sn))
                break;
            if (fl_jp_skip_value(&s))
                goto done;
            skip_ws(&s);
            if (s.p >= s.end || *s.p != ',')
                goto done;
            s.p++;
        }
        if (!dot) {
            skip_ws(&s);
            const char *v = s.p;
            if (fl_jp_skip_value(&s))
                goto done;
            *at = (size_t)(v - buf);
            *n = (size_t)(s.p - v);
            rc = 0;
            goto done;
        }
        seg = dot + 1;
    }
done:
    fl_strbuf_close(&scratch.b);
    return rc;
}

json_t *fl_json_load_items(const char *buf, size_t len, const char *const *skip,
                           void (*fn)(void *ctx, const char *text, size_t n, size_t meta_at, size_t meta_n),
                           void *ctx)
{
    skip_table t;
    in s = {.p = buf, .end = buf + len}; /* the list's own members: none skipped */
    out scratch = {0}, text = {0};
    json_t *obj = NULL;
    if (fl_jp_skip_compile(&t, skip))
        goto bad; /* more paths than the table holds: the decoder's */
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        goto bad;
    s.p++;
    obj = json_object();
    skip_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        goto end;
    }
    for (;;) {
        skip_ws(&s);
        if (s.p >= s.end || *s.p != '"')
            goto bad;
        s.p++;
        const char *k;
        size_t kn;
        char key[64];
        if (fl_jp_string(&s, &scratch, &k, &kn) || kn >= sizeof key || memchr(k, 0, kn))
            goto bad; /* a list's own members have short names: anything else, the decoder judges */
        memcpy(key, k, kn);
        key[kn] = 0;
        skip_ws(&s);
        if (s.p >= s.end || *s.p != ':')
            goto bad;
        s.p++;
        skip_ws(&s);
        json_t *v;
        if (!strcmp(key, "items") && s.p < s.end && *s.p == '[') {
            if (json_object_get(obj, "items"))
                goto bad; /* twice: the decoder keeps the last, and fn had the first */
            s.p++;
            skip_ws(&s);
            if (s.p < s.end && *s.p == ']') {
                s.p++;
            } else {
                for (;;) {
                    /* each element on its own: skip's paths and depth 1 are within it */
                    in e = {.p = s.p, .end = s.end};
                    fl_jp_skip_start(&e, &t);
                    size_t meta[2] = {0, 0};
                    fl_strbuf_truncate(&text.b, 0);
                    if (scan_value(&e, &text, &scratch, meta))
                        goto bad;
                    fn(ctx, text.b.p, text.b.len, meta[0], meta[1]);
                    s.p = e.p;
                    int more = after_item(&s, ']');
                    if (more < 0)
                        goto bad;
                    if (!more)
                        break;
                }
            }
            v = json_array();
        } else if (!(v = fl_jp_value(&s, &scratch))) {
            goto bad;
        }
        json_object_set_new(obj, key, v);
        int more = after_item(&s, '}');
        if (more < 0)
            goto bad;
        if (!more)
            break;
    }
end:
    skip_ws(&s);
    if (s.p != s.end)
        goto bad;
    fl_strbuf_close(&scratch.b);
    fl_strbuf_close(&text.b);
    return obj;
bad:
    json_decref(obj);
    fl_strbuf_close(&scratch.b);
    fl_strbuf_close(&text.b);
    return NULL;
}
