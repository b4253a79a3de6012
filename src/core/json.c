/* json.c - compact JSON encoding of jansson values, the fast decoder, copies and digests
 * (see json.h). Finding and copying parts of a text without decoding it is json_text.c;
 * the decoder's pieces the two share are in json_parse.h. */
#include "core/json.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json_parse.h"
#include "core/mem.h"

/* Does any of the 8 bytes of w need an escape (a control byte, '"' or '\\')? The classic
 * "has a byte below n" test, on w itself for bytes < 0x20 and on w with '"' and '\\'
 * xor-ed out for the zero bytes that leaves; exact, so a word without one is skipped whole. */
static bool word_needs_escape(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');
    uint64_t ctl = (w - ones * 0x20) & ~w;
    return ((ctl | ((quote - ones) & ~quote) | ((bslash - ones) & ~bslash)) & highs) != 0;
}

/* A string with jansson's escapes: \" \\ \b \f \n \r \t, \u00XX for other control bytes;
 * everything else (UTF-8 included) as is. Runs without escapes are copied at once. */
static void put_string(out *o, const char *s, size_t n)
{
    grow(o, n + 2);
    putc1(o, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        /* most strings have nothing to escape: 8 bytes per step while that holds */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (word_needs_escape(w))
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(o, s + run, i - run);
        run = i + 1;
        char esc[8];
        switch (c) {
        case '"': put(o, "\\\"", 2); break;
        case '\\': put(o, "\\\\", 2); break;
        case '\b': put(o, "\\b", 2); break;
        case '\f': put(o, "\\f", 2); break;
        case '\n': put(o, "\\n", 2); break;
        case '\r': put(o, "\\r", 2); break;
        case '\t': put(o, "\\t", 2); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            put(o, esc, 6);
        }
    }
    put(o, s + run, n - run);
    putc1(o, '"');
}

static void put_int(out *o, json_int_t v)
{
    char buf[24], *e = buf + sizeof buf, *p = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    put(o, p, (size_t)(e - p));
}

static void encode(out *o, const json_t *v)
{
    if (v == o->mark)
        o->mark_at = o->b.len;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        putc1(o, '{');
        const char *key;
        size_t klen;
        json_t *val;
        bool first = true;
        void *it;
        for (it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
            key = json_object_iter_key(it);
            klen = json_object_iter_key_len(it);
            val = json_object_iter_value(it);
            if (!first)
                putc1(o, ',');
            first = false;
            put_string(o, key, klen);
            putc1(o, ':');
            encode(o, val);
        }
        putc1(o, '}');
        break;
    }
    case JSON_ARRAY: {
        putc1(o, '[');
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            if (i)
                putc1(o, ',');
            encode(o, json_array_get(v, i));
        }
        putc1(o, ']');
        break;
    }
    case JSON_STRING:
        put_string(o, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        put_int(o, json_integer_value(v));
        break;
    case JSON_REAL: {
        /* rare in Kubernetes objects: let jansson format it exactly as it would */
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (s) {
            put(o, s, strlen(s));
            free(s);
        } else {
            put(o, "null", 4);
        }
        break;
    }
    case JSON_TRUE: put(o, "true", 4); break;
    case JSON_FALSE: put(o, "false", 5); break;
    case JSON_NULL: put(o, "null", 4); break;
    }
}

char *fl_json_dumps(const json_t *v, size_t *len)
{
    return fl_json_dumps_mark(v, NULL, len, NULL);
}

char *fl_json_dumps_mark(const json_t *v, const json_t *mark, size_t *len, size_t *mark_at)
{
    out o = {.mark = mark, .mark_at = SIZE_MAX};
    grow(&o, 1024);
    if (v)
        encode(&o, v);
    else
        put(&o, "null", 4);
    if (len)
        *len = o.b.len;
    if (mark_at)
        *mark_at = o.mark_at;
    return o.b.p;
}

/* (contract in json.h) Recursive, as deep as v: values here come from decoders that
 * bound their depth. */
size_t fl_json_size_upto(const json_t *v, size_t limit)
{
    size_t n = 0;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        n = 2;
        void *it;
        for (it = json_object_iter((json_t *)v); it && n <= limit; it = json_object_iter_next((json_t *)v, it)) {
            n += json_object_iter_key_len(it) + 4; /* "key": and a comma */
            if (n <= limit)
                n += fl_json_size_upto(json_object_iter_value(it), limit - n);
        }
        break;
    }
    case JSON_ARRAY:
        n = 2;
        for (size_t i = 0; i < json_array_size(v) && n <= limit; i++)
            n += 1 + fl_json_size_upto(json_array_get(v, i), limit - n);
        break;
    case JSON_STRING: n = json_string_length(v) + 2; break;
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        n = i < 0 ? 2 : 1;
        for (; i <= -10 || i >= 10; i /= 10)
            n++;
        break;
    }
    case JSON_REAL: n = 24; break;
    case JSON_FALSE: n = 5; break;
    default: n = 4; break; /* true, null */
    }
    return n;
}

/* ---- decoding ---- */

static int hex4(const char *p, unsigned *v)
{
    unsigned r = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        r <<= 4;
        if (c >= '0' && c <= '9') r |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') r |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') r |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *v = r;
    return 0;
}

/* Length of a valid UTF-8 sequence starting at p (strict: no overlongs, no surrogates,
 * max U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { n = 2; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { n = 3; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; min = 0x10000; }
    else return 0;
    if ((size_t)(end - p) < n)
        return 0;
    unsigned cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

static void put_utf8(out *o, unsigned cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xc0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3f)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
    } else {
        b[0] = (char)(0xf0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); b[3] = (char)(0x80 | (cp & 0x3f)); n = 4;
    }
    put(o, b, n);
}

/* Parse a string at s->p (after the opening quote). On success returns 0 and either points
 * the string into the input (no escapes) or fills scratch (escapes present). -1 = let jansson decide. */
int fl_jp_string(in *s, out *scratch, const char **str, size_t *n)
{
    const unsigned char *p = (const unsigned char *)s->p, *end = (const unsigned char *)s->end;
    const unsigned char *start = p;
    /* fast path: ASCII without escapes */
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80)
        p++;
    if (p < end && *p == '"') {
        *str = (const char *)start;
        *n = (size_t)(p - start);
        s->p = (const char *)p + 1;
        return 0;
    }
    fl_strbuf_truncate(&scratch->b, 0);
    put(scratch, (const char *)start, (size_t)(p - start));
    while (p < end) {
        unsigned c = *p;
        if (c == '"') {
            s->p = (const char *)p + 1;
            *str = scratch->b.p; /* put made it a string */
            *n = scratch->b.len;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (p + 1 >= end)
                return -1;
            char e = (char)p[1];
            p += 2;
            switch (e) {
            case '"': putc1(scratch, '"'); break;
            case '\\': putc1(scratch, '\\'); break;
            case '/': putc1(scratch, '/'); break;
            case 'b': putc1(scratch, '\b'); break;
            case 'f': putc1(scratch, '\f'); break;
            case 'n': putc1(scratch, '\n'); break;
            case 'r': putc1(scratch, '\r'); break;
            case 't': putc1(scratch, '\t'); break;
            case 'u': {
                unsigned cp;
                if (end - p < 4 || hex4((const char *)p, &cp))
                    return -1;
                p += 4;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4((const char *)p + 2, &lo) ||
                        lo < 0xdc00 || lo > 0xdfff)
                        return -1;
                    p += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0) {
                    return -1; /* lone low surrogate; NUL, which jansson refuses without JSON_ALLOW_NUL */
                }
                put_utf8(scratch, cp);
                break;
            }
            default:
                return -1;
            }
            continue;
        }
        size_t l = utf8_len(p, end);
        if (!l)
            return -1;
        put(scratch, (const char *)p, l);
        p += l;
    }
    return -1;
}


/* FNV-1a over n bytes, continuing from h (1469598103934665603 to start) */
static uint64_t hash_bytes(const char *s, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* ---- repeated leaves, decoded once ----
 *
 * Decoded objects repeat most of their strings: kinds and API versions, label and
 * annotation values every Work of a policy carries, condition types, reasons and messages,
 * the same timestamp within a second. A jansson string is two blocks (about 100 bytes for a
 * short one), and at a restart the decoded Works alone are gigabytes, a third of whose
 * decoding time is the kernel handing out fresh pages. So each thread keeps a direct-mapped
 * table of the strings (and small integers) it decoded last, and a value found there is
 * shared, one reference more, instead of made again. A slot holds one string, the last one
 * decoded with its hash: unique strings (uids, names) take a slot until the next string
 * hashed there, and a common one is back at its next occurrence.
 *
 * This is safe because leaves are never changed in place in this code base (no
 * json_string_set or json_integer_set on a decoded value: a change replaces the value in
 * its container), and jansson counts references atomically, so a tree, and the leaves it
 * shares, may be read and freed on any thread. */
#define LEAF_SLOTS 2048  /* strings a thread keeps (about 100 bytes each for short ones) */
#define LEAF_MAX_LEN 256 /* longer strings are made each time */
#define LEAF_INT_MIN (-1)
#define LEAF_INT_MAX 255

typedef struct leaf_table {
    pthread_mutex_t mu;       /* held by its thread while it decodes, and by fl_json_rest */
    struct leaf_table *next;  /* every thread's table, for fl_json_rest */
    json_t *str[LEAF_SLOTS];
    json_t *num[LEAF_INT_MAX - LEAF_INT_MIN + 1];
} leaf_table;

static __thread leaf_table *leaf_tl;
static __thread bool leaf_gone; /* the thread is exiting: no table any more */
static __thread int leaf_depth; /* fl_jp_value calls in progress on this thread */
static pthread_key_t leaf_key;
static pthread_once_t leaf_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t tables_mu = PTHREAD_MUTEX_INITIALIZER;
static leaf_table *tables;

/* Drop what t holds. Under t->mu, or on its own thread at its exit. */
static void leaf_clear(leaf_table *t)
{
    for (size_t i = 0; i < LEAF_SLOTS; i++) {
        json_decref(t->str[i]);
        t->str[i] = NULL;
    }
    for (size_t i = 0; i < sizeof t->num / sizeof t->num[0]; i++) {
        json_decref(t->num[i]);
        t->num[i] = NULL;
    }
}

static void leaf_exit(void *arg)
{
    leaf_table *t = arg;
    pthread_mutex_lock(&tables_mu); /* out of fl_json_rest's reach first */
    for (leaf_table **pp = &tables; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    pthread_mutex_unlock(&tables_mu);
    leaf_clear(t);
    pthread_mutex_destroy(&t->mu);
    free(t);
    leaf_tl = NULL;
    leaf_gone = true;
}

void fl_json_rest(void)
{
    pthread_mutex_lock(&tables_mu);
    for (leaf_table *t = tables; t; t = t->next) {
        pthread_mutex_lock(&t->mu);
        leaf_clear(t);
        pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_unlock(&tables_mu);
}

static void leaf_key_make(void)
{
    pthread_key_create(&leaf_key, leaf_exit);
}

static leaf_table *leaves(void)
{
    if (!leaf_tl && !leaf_gone) {
        pthread_once(&leaf_once, leaf_key_make);
        leaf_tl = fl_calloc(1, sizeof *leaf_tl);
        pthread_mutex_init(&leaf_tl->mu, NULL);
        pthread_setspecific(leaf_key, leaf_tl);
        pthread_mutex_lock(&tables_mu);
        leaf_tl->next = tables;
        tables = leaf_tl;
        pthread_mutex_unlock(&tables_mu);
    }
    return leaf_tl;
}

static json_t *leaf_string(const char *str, size_t n)
{
    leaf_table *t = n <= LEAF_MAX_LEN ? leaves() : NULL;
    if (!t)
        return json_stringn_nocheck(str, n);
    uint64_t h = hash_bytes(str, n, 1469598103934665603ULL);
    json_t **slot = &t->str[(h ^ (h >> 29)) & (LEAF_SLOTS - 1)];
    if (*slot && json_string_length(*slot) == n && !memcmp(json_string_value(*slot), str, n))
        return json_incref(*slot);
    json_t *v = json_stringn_nocheck(str, n);
    json_decref(*slot);
    *slot = json_incref(v);
    return v;
}

static json_t *leaf_integer(long long v)
{
    leaf_table *t = v >= LEAF_INT_MIN && v <= LEAF_INT_MAX ? leaves() : NULL;
    if (!t)
        return json_integer(v);
    json_t **slot = &t->num[v - LEAF_INT_MIN];
    if (!*slot)
        *slot = json_integer(v);
    return json_incref(*slot);
}

/* The end of the number at p (its grammar checked), with whether it is a real; NULL when
 * there is none. */
const char *fl_jp_number_end(const char *p, const char *end, bool *real)
{
    *real = false;
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        *real = true;
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *real = true;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static json_t *parse_number(in *s)
{
    const char *start = s->p;
    bool real;
    const char *p = fl_jp_number_end(start, s->end, &real);
    if (!p)
        return NULL;
    size_t n = (size_t)(p - start);
    if (real || n > 18) /* reals, and integers that might overflow: jansson's own rules */
        return NULL;
    long long v = 0;
    bool neg = *start == '-';
    for (const char *q = start + neg; q < p; q++)
        v = v * 10 + (*q - '0');
    s->p = p;
    return leaf_integer(neg ? -v : v);
}

int fl_jp_skip_compile(skip_table *t, const char *const *skip)
{
    int ns = 0;
    t->npaths = 0;
    for (; skip && *skip; skip++) {
        if (t->npaths == SKIP_MAX_PATHS)
            return -1;
        int i = t->npaths++;
        t->first[i] = (unsigned char)ns;
        t->nseg[i] = 0;
        for (const char *seg = *skip;;) {
            const char *dot = strchr(seg, '.');
            if (ns == SKIP_MAX_SEGS)
                return -1;
            t->seg[ns] = seg;
            t->segn[ns++] = dot ? (size_t)(dot - seg) : strlen(seg);
            t->nseg[i]++;
            if (!dot)
                break;
            seg = dot + 1;
        }
    }
    return 0;
}

void fl_jp_skip_start(in *s, const skip_table *t)
{
    s->skip = t && t->npaths ? t : NULL;
    s->alive = s->skip ? (uint32_t)((1ull << t->npaths) - 1) : 0;
    s->nat = 0;
}

/* Paths alive (a bit per path of t) whose segment at depth nat is key: those that end there
 * (*ends: some do) and those that go on below (the result). */
static uint32_t paths_at(const skip_table *t, uint32_t alive, int nat, const char *key, size_t kn, bool *ends)
{
    uint32_t below = 0;
    *ends = false;
    for (uint32_t a = alive; a; a &= a - 1) {
        int i = __builtin_ctz(a);
        int k = t->first[i] + nat;
        if (t->segn[k] != kn || memcmp(t->seg[k], key, kn))
            continue;
        if (t->nseg[i] == nat + 1)
            *ends = true; /* the key is the path's last segment */
        else
            below |= 1u << i;
    }
    return below;
}

bool fl_jp_skipped(const in *s, const char *key, size_t kn)
{
    bool ends;
    paths_at(s->skip, s->alive, s->nat, key, kn, &ends);
    return ends;
}

uint32_t fl_jp_skip_enter(in *s, const char *key, size_t kn)
{
    uint32_t before = s->alive;
    bool ends;
    s->alive = paths_at(s->skip, before, s->nat, key, kn, &ends);
    s->nat++;
    return before;
}

void fl_jp_skip_leave(in *s, uint32_t before)
{
    s->nat--;
    s->alive = before;
}

/* The closing quote of the string whose text starts at p, or NULL. */
static const char *string_end(const char *p, const char *end)
{
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return NULL;
        const char *b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if ((q - b) % 2 == 0) /* not escaped */
            return q;
        p = q + 1;
    }
}

/* Step over one value without building it: strings to their closing quote, containers to
 * their matching bracket. Checks only that much of its syntax. 0, or -1 at the end. */
int fl_jp_skip_value(in *s)
{
    skip_ws(s);
    int depth = 0;
    while (s->p < s->end) {
        char c = *s->p++;
        if (c == '"') {
            const char *q = string_end(s->p, s->end);
            if (!q)
                return -1;
            s->p = q + 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0)
                return -1;
        } else if (depth == 0) {
            /* a number or a literal: up to what ends it */
            while (s->p < s->end && !strchr(",}] \t\r\n", *s->p))
                s->p++;
        }
        if (depth == 0)
            return 0;
    }
    return -1;
}

static json_t *jp_value(in *s, out *scratch);

/* The outermost call holds the thread's table while it decodes, so that fl_json_rest may
 * empty it from another thread; the calls inside it (one per nested value) only count. */
json_t *fl_jp_value(in *s, out *scratch)
{
    if (leaf_depth) {
        leaf_depth++;
        json_t *v = jp_value(s, scratch);
        leaf_depth--;
        return v;
    }
    leaf_table *t = leaves();
    if (t)
        pthread_mutex_lock(&t->mu);
    leaf_depth = 1;
    json_t *v = jp_value(s, scratch);
    leaf_depth = 0;
    if (t)
        pthread_mutex_unlock(&t->mu);
    return v;
}

static json_t *jp_value(in *s, out *scratch)
{
    skip_ws(s);
    if (s->p >= s->end)
        return NULL;
    char c = *s->p;
    if (c == '{') {
        if (++s->depth > FL_JSON_MAX_DEPTH)
            return NULL;
        s->p++;
        json_t *obj = json_object();
        skip_ws(s);
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            s->depth--;
            return obj;
        }
        for (;;) {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '"')
                goto bad_obj;
            s->p++;
            const char *k;
            size_t kn;
            if (fl_jp_string(s, scratch, &k, &kn) || memchr(k, 0, kn))
                goto bad_obj;
            char kbuf[256];
            char *key = kn < sizeof kbuf ? kbuf : fl_malloc(kn + 1);
            memcpy(key, k, kn);
            key[kn] = 0;
            skip_ws(s);
            json_t *v = NULL;
            if (s->p < s->end && *s->p == ':') {
                s->p++;
                if (s->alive && fl_jp_skipped(s, key, kn)) {
                    if (key != kbuf)
                        free(key);
                    if (fl_jp_skip_value(s))
                        goto bad_obj;
                    goto next_member;
                }
                bool track = s->alive != 0;
                uint32_t was = track ? fl_jp_skip_enter(s, key, kn) : 0;
                v = fl_jp_value(s, scratch);
                if (track)
                    fl_jp_skip_leave(s, was);
            }
            int dup = v && (s->flags & JSON_REJECT_DUPLICATES) && json_object_get(obj, key);
            if (!v || dup || json_object_setn_new_nocheck(obj, key, kn, v)) {
                if (key != kbuf)
                    free(key);
                if (dup)
                    json_decref(v);
                goto bad_obj;
            }
            if (key != kbuf)
                free(key);
        next_member:
            skip_ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (s->p < s->end && *s->p == '}') {
                s->p++;
                s->depth--;
                return obj;
            }
            goto bad_obj;
        }
    bad_obj:
        json_decref(obj);
        return NULL;
    }
    if (c == '[') {
        if (++s->depth > FL_JSON_MAX_DEPTH)
            return NULL;
        s->p++;
        json_t *arr = json_array();
        skip_ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            s->depth--;
            return arr;
        }
        bool track = s->alive != 0;
        uint32_t was = track ? fl_jp_skip_enter(s, "[]", 2) : 0;
        for (;;) {
            json_t *v = fl_jp_value(s, scratch);
            if (!v || json_array_append_new(arr, v))
                goto bad_arr;
            skip_ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (s->p < s->end && *s->p == ']') {
                s->p++;
                s->depth--;
                if (track)
                    fl_jp_skip_leave(s, was);
                return arr;
            }
            goto bad_arr;
        }
    bad_arr:
        if (track)
            fl_jp_skip_leave(s, was);
        json_decref(arr);
        return NULL;
    }
    if (c == '"') {
        s->p++;
        const char *str;
        size_t n;
        if (fl_jp_string(s, scratch, &str, &n))
            return NULL;
        return leaf_string(str, n);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(s);
    size_t left = (size_t)(s->end - s->p);
    if (left >= 4 && !memcmp(s->p, "true", 4)) {
        s->p += 4;
        return json_true();
    }
    if (left >= 5 && !memcmp(s->p, "false", 5)) {
        s->p += 5;
        return json_false();
    }
    if (left >= 4 && !memcmp(s->p, "null", 4)) {
        s->p += 4;
        return json_null();
    }
    return NULL;
}

int fl_json_loadb(const char *buf, size_t len, size_t flags, json_t **out_v, char **err)
{
    if (err)
        *err = NULL;
    in s = {buf, buf + len, flags, 0};
    out scratch = {0};
    json_t *v = fl_jp_value(&s, &scratch);
    fl_strbuf_close(&scratch.b);
    if (v) {
        skip_ws(&s);
        if (s.p == s.end) {
            *out_v = v;
            return 0;
        }
        json_decref(v);
    }
    /* not ours to judge: jansson decides, and words the error */
    json_error_t je;
    v = json_loadb(buf, len, flags | JSON_DECODE_ANY, &je);
    *out_v = v;
    if (v)
        return 0;
    if (err)
        *err = fl_asprintf("line %d, column %d: %s", je.line, je.column, je.text);
    return FL_EINVAL;
}

/* Delete the members at path (as fl_json_load_skipping reads it) from v. */
static void drop_path(json_t *v, const char *path)
{
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n == 2 && !memcmp(path, "[]", 2)) {
        size_t i;
        json_t *e;
        if (dot)
            json_array_foreach(v, i, e) drop_path(e, dot + 1);
        return;
    }
    if (!json_is_object(v))
        return;
    char key[256];
    if (n >= sizeof key)
        return;
    memcpy(key, path, n);
    key[n] = 0;
    if (dot)
        drop_path(json_object_get(v, key), dot + 1);
    else
        json_object_del(v, key);
}

json_t *fl_json_load_skipping(const char *buf, size_t len, const char *const *skip)
{
    skip_table t;
    bool fits = fl_jp_skip_compile(&t, skip) == 0;
    in s = {.p = buf, .end = buf + len};
    fl_jp_skip_start(&s, fits ? &t : NULL);
    out scratch = {0};
    json_t *v = fits ? fl_jp_value(&s, &scratch) : NULL;
    fl_strbuf_close(&scratch.b);
    if (v) {
        skip_ws(&s);
        if (s.p == s.end)
            return v;
        json_decref(v);
    }
    if (fits && !s.skip)
        return NULL;
    /* what this parser does not take: jansson's answer, then the paths deleted */
    v = fl_json_load(buf, len);
    for (const char *const *p = skip; v && *p; p++)
        drop_path(v, *p);
    return v;
}

json_t *fl_json_load(const char *buf, size_t len)
{
    json_t *v = NULL;
    if (fl_json_loadb(buf, len, 0, &v, NULL) != 0)
        return NULL;
    return v;
}

json_t *fl_json_deep_copy(const json_t *v)
{
    if (!v)
        return NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        json_t *o = json_object();
        /* in v's order: jansson keeps insertion order, and so does the copy */
        for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it))
            json_object_setn_new_nocheck(o, json_object_iter_key(it), json_object_iter_key_len(it),
                                         fl_json_deep_copy(json_object_iter_value(it)));
        return o;
    }
    case JSON_ARRAY: {
        json_t *a = json_array();
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, fl_json_deep_copy(json_array_get(v, i)));
        return a;
    }
    default:
        /* leaves are never changed in place (see the decoder's shared leaves): shared */
        return json_incref((json_t *)v);
    }
}

json_t *fl_json_shallow_copy(const json_t *o)
{
    return json_is_object(o) ? json_copy((json_t *)o) : json_object();
}

json_t *fl_json_meta_view(const json_t *obj)
{
    json_t *v = fl_json_shallow_copy(obj);
    json_t *md = json_object_get(obj, "metadata");
    if (json_is_object(md))
        json_object_set_new(v, "metadata", fl_json_shallow_copy(md));
    return v;
}

static bool unshared(json_t *v)
{
    return __atomic_load_n(&v->refcount, __ATOMIC_ACQUIRE) == 1;
}

json_t *fl_json_meta_own(json_t *obj)
{
    json_t *md = json_object_get(obj, "metadata");
    /* Only the caller holds obj, so no one can take a new reference to it or to its
     * metadata meanwhile: what they are now, they stay. */
    if (!obj || (unshared(obj) && (!json_is_object(md) || unshared(md))))
        return obj;
    json_t *v = fl_json_meta_view(obj);
    json_decref(obj);
    return v;
}

static json_t *view_less(const json_t *v, const skip_table *t, uint32_t alive, int nat)
{
    bool ends;
    if (json_is_array(v)) {
        uint32_t below = paths_at(t, alive, nat, "[]", 2, &ends);
        if (!below)
            return json_incref((json_t *)v);
        json_t *arr = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) json_array_append_new(arr, view_less(e, t, below, nat + 1));
        return arr;
    }
    if (!json_is_object(v))
        return json_incref((json_t *)v);
    json_t *o = json_object();
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m) {
        uint32_t below = paths_at(t, alive, nat, key, strlen(key), &ends);
        if (ends)
            continue;
        json_object_set_new_nocheck(o, key, below ? view_less(m, t, below, nat + 1) : json_incref(m));
    }
    return o;
}

json_t *fl_json_view_less(const json_t *v, const char *const *paths)
{
    skip_table t;
    if (fl_jp_skip_compile(&t, paths) || !t.npaths) {
        json_t *c = fl_json_deep_copy(v);
        for (const char *const *p = paths; c && p && *p; p++)
            drop_path(c, *p);
        return c;
    }
    return view_less(v, &t, (uint32_t)((1ull << t.npaths) - 1), 0);
}

/* splitmix64's finalizer: spreads every input bit over the output */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static bool skipped_key(const char *key, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (!strcmp(key, *skip))
            return true;
    return false;
}

/* An object's digest: members in any order, so a sum of each member's digest */
static uint64_t hash_object(const json_t *v, const char *const *skip)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)JSON_OBJECT, sum = 0;
    size_t n = 0, klen;
    const char *key;
    json_t *m;
    json_object_keylen_foreach((json_t *)v, key, klen, m) {
        if (skipped_key(key, skip))
            continue;
        sum += mix64(hash_bytes(key, klen, h) + 0x9e3779b97f4a7c15ULL * fl_json_hash(m));
        n++;
    }
    return mix64(h + sum + n);
}

uint64_t fl_json_hash_except(const json_t *v, const char *const *skip)
{
    return json_is_object(v) ? hash_object(v, skip) : fl_json_hash(v);
}

uint64_t fl_json_hash(const json_t *v)
{
    if (!v)
        return 0;
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)json_typeof(v);
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return hash_object(v, NULL);
    case JSON_ARRAY: {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) h = mix64(h ^ fl_json_hash(m));
        return mix64(h + json_array_size(v));
    }
    case JSON_STRING:
        return mix64(hash_bytes(json_string_value(v), json_string_length(v), h));
    case JSON_INTEGER:
        return mix64(h ^ (uint64_t)json_integer_value(v));
    case JSON_REAL: {
        double d = json_real_value(v);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix64(h ^ bits);
    }
    default: /* true, false, null: the type says it all */
        return mix64(h);
    }
}

const char *fl_json_scalar_text(const json_t *v, char *buf, size_t cap)
{
    if (json_is_integer(v)) {
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        snprintf(buf, cap, "%.15g", json_real_value(v));
        return buf;
    }
    return json_string_value(v);
}
