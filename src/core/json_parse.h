/* json_parse.h - the JSON decoder's pieces that json.c (decoding) and json_text.c (finding
 * and copying parts of a text) share. Private to those two files. */
#ifndef FL_JSON_PARSE_H
#define FL_JSON_PARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "core/mem.h"
#include "core/strbuf.h"

/* The encoder's output, the decoder's scratch: a string builder (core/strbuf.h), and for
 * the encoder, where one value's text begins. */
typedef struct out {
    fl_strbuf b;
    const json_t *mark;  /* fl_json_dumps_mark: where this value's text begins goes in mark_at */
    size_t mark_at;
} out;

static inline void grow(out *o, size_t need)
{
    fl_strbuf_reserve(&o->b, need);
}

static inline void put(out *o, const char *s, size_t n)
{
    fl_strbuf_add(&o->b, s, n);
}

static inline void putc1(out *o, char c)
{
    fl_strbuf_addc(&o->b, c);
}

#define SKIP_MAX_PATHS 32 /* paths to skip in one decoding, at most */
#define SKIP_MAX_SEGS 128 /* and their segments, all together */

/* The paths to skip, split at their dots (fl_jp_skip_compile) */
typedef struct skip_table {
    int npaths;
    unsigned char nseg[SKIP_MAX_PATHS];  /* path i's segments are seg[first[i]..] */
    unsigned char first[SKIP_MAX_PATHS];
    const char *seg[SKIP_MAX_SEGS];
    size_t segn[SKIP_MAX_SEGS];
} skip_table;

typedef struct in {
    const char *p, *end;
    size_t flags;
    int depth;
    /* fl_json_load_skipping: the paths to leave out, and which of them may still match where
     * the parser is (a bit per path whose first nat segments are the object keys, or "[]"
     * for an array's element, that lead here). Where none may, nothing is looked up. */
    const skip_table *skip;
    uint32_t alive;
    int nat;
} in;

/* Deeper documents are left to jansson (up to its JSON_PARSER_MAX_DEPTH, 2048), whose
 * frames are smaller: this parser's frame holds a key buffer, and 2,048 of them overflowed
 * the stack of a sanitizer build (found by fuzz_json) */
#define FL_JSON_MAX_DEPTH 256

static inline void skip_ws(in *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
        s->p++;
}

/* A string at s->p (after its opening quote): 0 and the string in place (no escapes) or in
 * scratch; -1 for what the decoder leaves to jansson. */
int fl_jp_string(in *s, out *scratch, const char **str, size_t *n);
/* The end of the number at p (its grammar checked), and whether it is a real; NULL if none. */
const char *fl_jp_number_end(const char *p, const char *end, bool *real);
/* Split skip (NULL-terminated paths as fl_json_load_skipping takes them) into t: 0, or -1
 * for more than the table holds. */
int fl_jp_skip_compile(skip_table *t, const char *const *skip);
/* Start s on t (NULL: nothing skipped), at the top of a value. */
void fl_jp_skip_start(in *s, const skip_table *t);
/* Is the member key (at the parser's place) one of the paths to skip? */
bool fl_jp_skipped(const in *s, const char *key, size_t kn);
/* Step into the value of key (an object's member; "[]" for an array's elements): returns
 * the paths alive before, for fl_jp_skip_leave. */
uint32_t fl_jp_skip_enter(in *s, const char *key, size_t kn);
void fl_jp_skip_leave(in *s, uint32_t before);
/* Step over one value, checking only its balance: 0, or -1 at the end. */
int fl_jp_skip_value(in *s);
/* Decode the value at s->p (a new reference), or NULL. */
json_t *fl_jp_value(in *s, out *scratch);

#endif
