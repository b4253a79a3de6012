/* json_get.c - the field accessors of json_get.h: dotted paths, children made on demand,
 * finalizers. The one-line getters are inline in the header. */
#include "core/json_get.h"

#include <string.h>

#include "core/json.h"

json_t *fl_json_path(const json_t *o, const char *path)
{
    char seg[128];
    json_t *v = (json_t *)o;
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof(seg) || !json_is_object(v))
            return NULL;
        memcpy(seg, path, n);
        seg[n] = '\0';
        v = json_object_get(v, seg);
        path += n + (dot ? 1 : 0);
    }
    return v;
}

const char *fl_json_path_str(const json_t *o, const char *path)
{
    const json_t *v = fl_json_path(o, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

json_int_t fl_json_path_int(const json_t *o, const char *path, json_int_t def)
{
    const json_t *v = fl_json_path(o, path);
    return json_is_integer(v) ? json_integer_value(v) : def;
}

json_t *fl_json_ensure_obj(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(o, key, v);
    }
    return v;
}

json_t *fl_json_own_child(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (!json_is_object(v))
        return NULL;
    json_t *c = fl_json_shallow_copy(v);
    json_object_set_new(parent, key, c);
    return c;
}

bool fl_json_has_finalizer(const json_t *o, const char *f)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(o, "metadata"), "finalizers"), i, v)
    {
        const char *s = json_string_value(v);
        if (s && !strcmp(s, f))
            return true;
    }
    return false;
}

bool fl_json_set_finalizer(json_t *o, const char *f, bool present)
{
    if (fl_json_has_finalizer(o, f) == present)
        return false;
    /* a new list, so that one shared with another object stays as it was */
    json_t *md = fl_json_ensure_obj(o, "metadata");
    json_t *old = json_object_get(md, "finalizers");
    json_t *fins = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(old, i, v)
    {
        const char *s = json_string_value(v);
        if (!s || strcmp(s, f))
            json_array_append(fins, v);
    }
    if (present)
        json_array_append_new(fins, json_string(f));
    json_object_set_new(md, "finalizers", fins);
    return true;
}
