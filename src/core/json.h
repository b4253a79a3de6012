/* json.h - a fast compact JSON encoder for jansson values.
 *
 * Every write renders the object it stores; jansson's json_dumps goes through a
 * callback per fragment and escapes byte by byte, which made encoding a fifth of a
 * create's CPU. This encoder writes the same compact text as
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) (same escapes, same number formats,
 * keys in the object's order) straight into one growing buffer.
 * fl_json_loadb is the matching fast decoder.
 * Pure functions: any thread. */
#ifndef FL_JSON_H
#define FL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decode one JSON document (any value) from buf. Returns 0 and *out (new reference), or
 * FL_EINVAL with *err (heap, may be NULL) in jansson's words "line L, column C: text".
 * flags: JSON_REJECT_DUPLICATES honoured. The result equals json_loadb's: this parser
 * handles the common, valid input quickly and hands anything it does not accept to
 * jansson, which then decides and words the error. Strings and small integers of the
 * result may be shared with values decoded before (see fl_json_deep_copy on leaves). */
int fl_json_loadb(const char *buf, size_t len, size_t flags, json_t **out, char **err);

/* Decode without an error message: the value (new reference) or NULL. */
json_t *fl_json_load(const char *buf, size_t len);

/* Decode leaving out the members at the paths in skip (NULL-terminated): dot-separated
 * object keys, "[]" for any element of an array ("items.[].spec.workload"). Skipped values
 * are stepped over without being built (their syntax checked only for balance), which is
 * what makes this cheaper than decoding and then deleting. The value or NULL. For answers
 * from a server, where the caller needs part of each object. */
json_t *fl_json_load_skipping(const char *buf, size_t len, const char *const *skip);

/* A copy of v whose containers (objects, arrays) are new and whose leaves (strings,
 * numbers) are v's own, one reference more; NULL for NULL. The copy may be changed freely
 * by replacing values in its containers: in this code base no leaf is ever changed in
 * place (json_string_set, json_integer_set), which is also what lets the decoder share
 * repeated strings and small integers. Like jansson's json_deep_copy without its guard
 * against cycles: that guard formats every object's address into a string and keeps it in
 * a table while the object is copied, about half of the copy's cost, and the trees we copy
 * (decoded JSON, and what we build from it) have no cycles. */
json_t *fl_json_deep_copy(const json_t *v);
/* Every thread's decoder keeps the strings and small integers it decoded last, to share them
 * (json.c); empty those tables, once the process has been quiet for a while. Any thread: it
 * waits for a decoding in progress on another to end. */
void fl_json_rest(void);

/* A new object holding o's members (jansson's json_copy: the members are shared, so
 * read-only as o's are; the new object is the caller's to set members in); an empty object
 * when o is not an object. */
json_t *fl_json_shallow_copy(const json_t *o);
/* fl_json_shallow_copy of an object whose metadata (when an object) is a shallow copy too:
 * the top level and metadata are the caller's to change, everything below stays shared. */
json_t *fl_json_meta_view(const json_t *obj);
/* fl_json_meta_view that takes over the caller's reference to obj: obj itself when nobody
 * else holds it or its metadata (a decoding made for the caller alone), else a view of it
 * and the reference dropped. */
json_t *fl_json_meta_own(json_t *obj);
/* v without the members at paths (as fl_json_load_skipping takes them): new objects and
 * arrays on the way to them, the rest shared with v. Read-only, as v is. */
json_t *fl_json_view_less(const json_t *v, const char *const *paths);

/* Do a and b hold the same JSON? Unlike jansson's json_equal, which answers "different"
 * whenever either side is NULL, two absent values are the same: comparing an optional
 * field of an old and a new object (annotations, deletionTimestamp) must not see a change
 * where both lack it. */
static inline bool fl_json_same(const json_t *a, const json_t *b)
{
    return a == b || (a && b && json_equal(a, b));
}

/* A digest of v's content: the same for values fl_json_same calls the same (objects in any
 * key order), and different, but for hash collisions, otherwise. NULL digests as 0.
 * Walks v once and allocates nothing. */
uint64_t fl_json_hash(const json_t *v);
/* fl_json_hash of v as if its members named in skip (NULL-terminated) were not there; of v
 * itself when it is not an object. Allocates nothing. */
uint64_t fl_json_hash_except(const json_t *v, const char *const *skip);

/* The text of a JSON string, or of a number as it would be written ("1", "0.5"): how a
 * Kubernetes quantity arrives (YAML turns `cpu: 1` into a number). buf (at least 64 bytes)
 * holds a number's text; NULL for anything else. */
const char *fl_json_scalar_text(const json_t *v, char *buf, size_t cap);

/* Encode v; returns a malloc'd NUL-terminated string (never NULL) and its length in *len
 * (len may be NULL). */
char *fl_json_dumps(const json_t *v, size_t *len);
/* fl_json_dumps, and where mark (a value inside v, compared by address) begins in the text:
 * *mark_at, or SIZE_MAX when mark is not in v. */
char *fl_json_dumps_mark(const json_t *v, const json_t *mark, size_t *len, size_t *mark_at);

/* About how many bytes v's compact encoding takes (strings and keys counted without their
 * escapes), counting no further than just past limit: a value larger than limit answers
 * some number above it, after walking about limit bytes' worth of v. For bounds on what a
 * decoder or a patch builds, where the exact figure does not matter but the cost of
 * measuring must stay proportional to the bound. */
size_t fl_json_size_upto(const json_t *v, size_t limit);

/* ---- texts: parts of a document found or copied without decoding it ---- */

/* Where the value at path (dot-separated object keys, "metadata.labels") is in buf, a
 * document already known to be JSON (a stored value): 0 with *at and *n, or -1 when it is
 * not there (or buf is not JSON as far as the search reads it). Allocates nothing. */
int fl_json_find(const char *buf, size_t len, const char *path, size_t *at, size_t *n);

/* A list answer (an object whose "items" member is an array) decoded, but for the elements
 * of "items": each is checked to be JSON, as the decoder would, and handed to fn in order as
 * its compact text less the members at skip (paths within an element, NULL-terminated, may be
 * NULL), with where its top-level "metadata" value is in that text (meta_n 0 when it has
 * none). text is borrowed for the call. Returns the answer with "items" empty, or NULL when
 * buf is not such an answer or holds anything the decoder leaves to jansson; fn may have
 * been called for some elements then. For a cache that keeps objects as text: none of them
 * is built. */
json_t *fl_json_load_items(const char *buf, size_t len, const char *const *skip,
                           void (*fn)(void *ctx, const char *text, size_t n, size_t meta_at, size_t meta_n),
                           void *ctx);

#endif
