/* managed_fields.h - metadata.managedFields for apply.c: the list of entries (who owns
 * which field set, by which operation) and field sets in the form apply.c computes with.
 *
 * A field set in that form is a JSON object per path node whose keys are path elements
 * ("f:spec", "k:{\"name\":\"a\"}", "v:1") plus "." when the node itself is a member; unlike
 * FieldsV1, a member leaf is {".":{}} rather than {}, so membership is one lookup, and
 * empty nodes are never kept, so json_equal compares sets. An entry read from an object
 * keeps its FieldsV1 as stored (raw) until someone asks for its set, so an entry a write
 * does not touch is stored again as it was. Private to apply.c; pure: any thread. */
#ifndef FL_MANAGED_FIELDS_H
#define FL_MANAGED_FIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct fl_mf_entry {
    char *manager, *operation, *api_version, *time, *subresource;
    json_t *set; /* internal form; NULL while only raw is known (fl_mf_set decodes it) */
    json_t *raw; /* the FieldsV1 as stored, while set is NULL */
    json_t *orig; /* the entry as it came (fl_mf_decode), or NULL: stored again as it is if unchanged */
} fl_mf_entry;

typedef struct fl_mf_list {
    fl_mf_entry *e;
    size_t n;
} fl_mf_list;

/* Is the node n of a set (internal form) itself a member? */
static inline bool fl_mf_member(const json_t *n)
{
    return n && json_object_get(n, ".") != NULL;
}

/* Is the set (or node) n empty? NULL is. */
static inline bool fl_mf_empty(const json_t *n)
{
    return !n || json_object_size(n) == 0;
}

/* Make the node n a member. */
static inline void fl_mf_mark(json_t *n)
{
    json_object_set_new(n, ".", json_object());
}

/* The keys of node n's children (its path elements, "." left out), sorted; the array is
 * the caller's to free, the keys are n's. */
const char **fl_mf_children(const json_t *n, size_t *nk);

/* Read the managedFields array arr (anything else: no entries) into l, overwriting it;
 * entries that are not objects or have no manager are skipped. lazy: an entry's set is decoded only
 * when fl_mf_set asks for it. */
void fl_mf_decode(const json_t *arr, fl_mf_list *l, bool lazy);
/* Append an entry; it takes set (internal form, a reference). */
void fl_mf_add(fl_mf_list *l, const char *manager, const char *op, const char *api_version, const char *time,
               json_t *set);
/* The index of manager's entry for operation op (and api_version, unless NULL) without a
 * subresource, or -1. */
ssize_t fl_mf_find(const fl_mf_list *l, const char *manager, const char *op, const char *api_version);
/* e's set in internal form (decoded now if it was kept raw); e keeps it. */
json_t *fl_mf_set(fl_mf_entry *e);
/* Does the FieldsV1 f share a member with set s (internal form)? */
bool fl_mf_raw_intersects(const json_t *f, const json_t *s);
/* Is every member of set s (internal form) a member of the FieldsV1 f? */
bool fl_mf_raw_contains(const json_t *f, const json_t *s);
/* Write the entries with a non-empty set into obj's metadata.managedFields, in upstream's
 * order (operation, time, manager, apiVersion, subresource); none: the field goes. */
void fl_mf_store(fl_mf_list *l, json_t *obj);
/* Free the entries; l is empty after. */
void fl_mf_free(fl_mf_list *l);

#endif
