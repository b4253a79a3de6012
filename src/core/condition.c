/* condition.c - metav1.Condition lists: see condition.h. */
#include "core/condition.h"

#include <string.h>

#include "core/timefmt.h"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static bool same_str(const json_t *o, const char *k, const char *want)
{
    const char *v = str(o, k);
    return v && want && !strcmp(v, want);
}

json_t *fl_condition_find(const json_t *conds, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) if (same_str(c, "type", type)) return c;
    return NULL;
}

json_t *fl_condition_of(const json_t *obj, const char *type)
{
    return fl_condition_find(json_object_get(json_object_get(obj, "status"), "conditions"), type);
}

bool fl_condition_set(json_t *status, const char *type, const char *cstatus, const char *reason,
                      const char *message, int64_t generation, int64_t now_ms)
{
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    json_t *c = fl_condition_find(conds, type);
    json_t *og = c ? json_object_get(c, "observedGeneration") : NULL;
    bool same_gen = generation >= 0 ? json_is_integer(og) && json_integer_value(og) == generation : !og;
    if (c && same_str(c, "status", cstatus) && same_str(c, "reason", reason) && same_str(c, "message", message) &&
        same_gen && str(c, "lastTransitionTime"))
        return false;
    if (!c) { /* type and status first, in the order Kubernetes writes them */
        c = json_pack("{s:s, s:s}", "type", type, "status", cstatus);
        json_array_append_new(conds, c);
    }
    if (!same_str(c, "status", cstatus) || !str(c, "lastTransitionTime")) {
        char ts[FL_TIME_BUF];
        fl_time_format(now_ms, false, ts);
        json_object_set_new(c, "lastTransitionTime", json_string(ts));
    }
    json_object_set_new(c, "status", json_string(cstatus));
    json_object_set_new(c, "reason", json_string(reason));
    json_object_set_new(c, "message", json_string(message));
    if (generation >= 0)
        json_object_set_new(c, "observedGeneration", json_integer(generation));
    else
        json_object_del(c, "observedGeneration");
    return true;
}
