/* json_get.h - reading and changing fields of decoded Kubernetes objects (jansson values),
 * once for every part: a member's string, an object's metadata fields, a dotted path, a child
 * object made when missing, finalizers.
 *
 * Every getter is NULL-safe: a NULL or non-object container, a missing member or one of
 * another type all answer NULL (or false), so a chain of getters over user input needs no
 * checks between steps. What they return is borrowed from the container. Pure: any thread,
 * as jansson's own reads are. */
#ifndef FL_JSON_GET_H
#define FL_JSON_GET_H

#include <jansson.h>
#include <stdbool.h>

/* o[key] when it is a string; else NULL. */
static inline const char *fl_json_str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* o[key] when it is an object; else NULL. */
static inline json_t *fl_json_obj(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_object(v) ? v : NULL;
}

/* o.metadata[key] when it is a string ("name", "namespace", "uid", "resourceVersion"). */
static inline const char *fl_json_meta(const json_t *o, const char *key)
{
    return fl_json_str(json_object_get(o, "metadata"), key);
}

/* o.metadata[map][key] when it is a string: a label or an annotation
 * (fl_json_meta_map(o, "labels", "app")). */
static inline const char *fl_json_meta_map(const json_t *o, const char *map, const char *key)
{
    return fl_json_str(json_object_get(json_object_get(o, "metadata"), map), key);
}

/* The value at a dotted path of object keys ("spec.template.metadata"), or NULL when a step
 * is missing or not an object. A key of 128 bytes or more is never found. */
json_t *fl_json_path(const json_t *o, const char *path);

/* fl_json_path when the value is a string; else NULL. */
const char *fl_json_path_str(const json_t *o, const char *path);

/* fl_json_path when the value is an integer; else def (a missing field, or a number written
 * as a real or a string, is def). */
json_int_t fl_json_path_int(const json_t *o, const char *path, json_int_t def);

/* o[key] as an object, made (empty) and set when missing or of another type. o must be an
 * object the caller may change. Borrowed from o. */
json_t *fl_json_ensure_obj(json_t *o, const char *key);

/* Replace parent[key], when it is an object, by a shallow copy of its own (fl_json_shallow_copy)
 * and return it, borrowed; NULL when parent[key] is not an object. What the caller changes in
 * the copy's members is then its own; everything below stays shared with the original. */
json_t *fl_json_own_child(json_t *parent, const char *key);

/* Does o.metadata.finalizers hold f? */
bool fl_json_has_finalizer(const json_t *o, const char *f);

/* Make o.metadata.finalizers hold f (present, appended) or not hold it (every copy of it
 * removed). The list is replaced by a new one, so it may be shared with another object; o and
 * its metadata (made when missing) must be the caller's to change. Returns whether the list
 * changed. */
bool fl_json_set_finalizer(json_t *o, const char *f, bool present);

#endif
