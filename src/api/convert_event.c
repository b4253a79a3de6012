/* convert_event.c - events.k8s.io/v1 Event <-> core/v1 Event. kube-apiserver keeps one
 * collection of Events and serves it through both APIs; so does Flotilla (kinds.h,
 * storage_group; api_convert.c). The two differ by field names only (upstream's
 * pkg/apis/events/v1 conversion): what events.k8s.io calls regarding, note,
 * reportingController and deprecated* is involvedObject, message, reportingComponent,
 * source, firstTimestamp, lastTimestamp and count in core. Pure functions: any thread. */
#include <string.h>

#include "api/convert.h"

/* (events.k8s.io name, core name) */
static const char *const RENAMES[][2] = {
    {"regarding", "involvedObject"},
    {"note", "message"},
    {"reportingController", "reportingComponent"},
    {"deprecatedSource", "source"},
    {"deprecatedFirstTimestamp", "firstTimestamp"},
    {"deprecatedLastTimestamp", "lastTimestamp"},
    {"deprecatedCount", "count"},
};

static json_t *rename_fields(const json_t *in, const char *api_version, int from, int to)
{
    json_t *out = json_deep_copy(in);
    for (size_t i = 0; i < sizeof RENAMES / sizeof RENAMES[0]; i++) {
        json_t *v = json_object_get(out, RENAMES[i][from]);
        if (!v)
            continue;
        json_object_set(out, RENAMES[i][to], v);
        json_object_del(out, RENAMES[i][from]);
    }
    if (json_object_get(out, "apiVersion"))
        json_object_set_new(out, "apiVersion", json_string(api_version));
    return out;
}

json_t *fl_convert_event_to_core(const json_t *ev, char **err)
{
    *err = NULL;
    return rename_fields(ev, "v1", 0, 1);
}

json_t *fl_convert_event_from_core(const json_t *ev)
{
    return rename_fields(ev, "events.k8s.io/v1", 1, 0);
}
