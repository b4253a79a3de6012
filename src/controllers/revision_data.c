/* revision_data.c - a template's revision data, its name and its restoration (contract in
 * revision_data.h). The data is built as a view (shared members, new maps only where keys
 * are left out), so that the revisions controller can compare a template's old and new
 * versions on every informer event without copying specs. */
#include "controllers/revision_data.h"

#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/wellknown.h"

/* The Kubernetes object-name limit (a DNS subdomain). */
#define NAME_MAX_LEN 253
#define HASH_CHARS 10

static const char *const CONTROL_LABELS[] = {
    FL_PP_ID_LABEL, FL_CPP_ID_LABEL, FL_RETAIN_REPLICAS_LABEL, NULL,
};
static const char *const CONTROL_ANNOTATIONS[] = {
    FL_PP_NAME_ANNOTATION,
    FL_PP_NAMESPACE_ANNOTATION,
    FL_CPP_NAME_ANNOTATION,
    FL_REVISION_HISTORY_LIMIT_ANNOTATION,
    FL_REVISION_CHANGE_CAUSE_ANNOTATION,
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
    NULL,
};

bool fl_revision_control_key(bool labels, const char *key)
{
    for (const char *const *k = labels ? CONTROL_LABELS : CONTROL_ANNOTATIONS; *k; k++)
        if (!strcmp(*k, key))
            return true;
    return false;
}

bool fl_revision_kept_for(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return false;
    return !(!strcmp(api_version, "v1") && !strcmp(kind, "Secret")) &&
           !(!strcmp(api_version, "apps/v1") && !strcmp(kind, "ControllerRevision"));
}

/* The map less the control plane's keys: m itself (a new reference) when it has none of
 * them, NULL when nothing is left. */
static json_t *delivered_map(const json_t *m, bool labels)
{
    if (!json_is_object(m) || !json_object_size(m))
        return NULL;
    json_t *out = NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        if (!fl_revision_control_key(labels, k))
            continue;
        if (!out)
            out = fl_json_shallow_copy(m);
        json_object_del(out, k);
    }
    if (!out)
        return json_incref((json_t *)m);
    if (!json_object_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *fl_revision_data(const json_t *tmpl)
{
    if (!json_is_object(tmpl))
        return NULL;
    json_t *data = json_object();
    const json_t *meta = json_object_get(tmpl, "metadata");
    json_t *m = json_object();
    /* in the template's order, metadata where it was (a document reads as the template did) */
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)tmpl, k, v) {
        if (!strcmp(k, "metadata"))
            json_object_set(data, k, m);
        else if (strcmp(k, "status"))
            json_object_set(data, k, v);
    }
    static const char *const names[] = {"name", "namespace"};
    for (size_t i = 0; i < 2; i++) {
        json_t *s = json_object_get(meta, names[i]);
        if (json_is_string(s) && *json_string_value(s))
            json_object_set(m, names[i], s);
    }
    json_t *labels = delivered_map(json_object_get(meta, "labels"), true);
    json_t *anns = delivered_map(json_object_get(meta, "annotations"), false);
    if (labels)
        json_object_set_new(m, "labels", labels);
    if (anns)
        json_object_set_new(m, "annotations", anns);
    json_object_set_new(data, "metadata", m); /* the reference made above, or where none was */
    return data;
}

const char *fl_revision_hash_text(const json_t *data, char *buf)
{
    /* Kubernetes' rand.SafeEncodeString alphabet: no vowels (no words), no 0, 1, 3 */
    static const char ALPHABET[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t h = fl_json_hash(data);
    for (int i = 0; i < HASH_CHARS; i++) {
        buf[i] = ALPHABET[h % (sizeof ALPHABET - 1)];
        h /= sizeof ALPHABET - 1;
    }
    buf[HASH_CHARS] = 0;
    return buf;
}

char *fl_revision_name(const char *template_name, const char *hash_text)
{
    size_t room = NAME_MAX_LEN - 1 - strlen(hash_text);
    size_t n = strlen(template_name);
    if (n > room)
        n = room;
    return fl_asprintf("%.*s-%s", (int)n, template_name, hash_text);
}

int fl_revision_history_limit(const json_t *tmpl, bool *valid)
{
    if (valid)
        *valid = true;
    const char *s = fl_json_meta_map(tmpl, "annotations", FL_REVISION_HISTORY_LIMIT_ANNOTATION);
    if (!s)
        return FL_REVISION_HISTORY_DEFAULT;
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 9;
    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '9';
    if (!ok) {
        if (valid)
            *valid = false;
        return FL_REVISION_HISTORY_DEFAULT;
    }
    return atoi(s);
}

const char *fl_revision_change_cause(const json_t *tmpl)
{
    return fl_json_meta_map(tmpl, "annotations", FL_REVISION_CHANGE_CAUSE_ANNOTATION);
}

bool fl_revision_is_current(const json_t *tmpl, const json_t *cr)
{
    const json_t *recorded = json_object_get(cr, "data");
    if (!json_is_object(recorded))
        return false;
    json_t *data = fl_revision_data(tmpl);
    bool same = data && fl_json_hash(data) == fl_json_hash(recorded);
    json_decref(data);
    return same;
}

const json_t *fl_revision_previous(const json_t *tmpl, const json_t *revisions)
{
    json_t *data = fl_revision_data(tmpl);
    uint64_t now = data ? fl_json_hash(data) : 0;
    json_decref(data);
    const json_t *best = NULL;
    size_t i;
    json_t *cr;
    json_array_foreach(revisions, i, cr) {
        const json_t *recorded = json_object_get(cr, "data");
        if (!json_is_object(recorded) || fl_json_hash(recorded) == now)
            continue;
        if (!best || fl_json_path_int(cr, "revision", 0) > fl_json_path_int(best, "revision", 0))
            best = cr;
    }
    return best;
}

/* data's map (labels or annotations) with live's control-plane keys added back. */
static json_t *restored_map(const json_t *live_map, const json_t *data_map, bool labels)
{
    json_t *out = json_is_object(data_map) ? fl_json_deep_copy(data_map) : json_object();
    const char *k;
    json_t *v;
    if (json_is_object(live_map))
        json_object_foreach((json_t *)live_map, k, v) if (fl_revision_control_key(labels, k))
            json_object_set(out, k, v);
    return out;
}

json_t *fl_revision_restore(const json_t *live, const json_t *data, const char *change_cause)
{
    if (!json_is_object(live) || !json_is_object(data))
        return NULL;
    json_t *out = fl_json_deep_copy(live);
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(out, tmp, k, v) {
        if (strcmp(k, "apiVersion") && strcmp(k, "kind") && strcmp(k, "metadata") && strcmp(k, "status") &&
            !json_object_get(data, k))
            json_object_del(out, k);
    }
    json_object_foreach((json_t *)data, k, v) {
        if (strcmp(k, "apiVersion") && strcmp(k, "kind") && strcmp(k, "metadata") && strcmp(k, "status"))
            json_object_set_new(out, k, fl_json_deep_copy(v));
    }
    json_t *meta = fl_json_ensure_obj(out, "metadata");
    const json_t *dmeta = json_object_get(data, "metadata");
    const json_t *lmeta = json_object_get(live, "metadata");
    json_t *labels = restored_map(json_object_get(lmeta, "labels"), json_object_get(dmeta, "labels"), true);
    json_t *anns = restored_map(json_object_get(lmeta, "annotations"), json_object_get(dmeta, "annotations"), false);
    json_object_del(anns, FL_REVISION_CHANGE_CAUSE_ANNOTATION);
    if (change_cause && *change_cause)
        json_object_set_new(anns, FL_REVISION_CHANGE_CAUSE_ANNOTATION, json_string(change_cause));
    if (json_object_size(labels))
        json_object_set_new(meta, "labels", labels);
    else {
        json_object_del(meta, "labels");
        json_decref(labels);
    }
    if (json_object_size(anns))
        json_object_set_new(meta, "annotations", anns);
    else {
        json_object_del(meta, "annotations");
        json_decref(anns);
    }
    return out;
}
