/* dispatching.c - suspension of delivery and its acknowledgement: see dispatching.h. */
#include "controllers/dispatching.h"

#include <stdlib.h>
#include <string.h>

#include "core/condition.h"
#include "core/mem.h"

bool fl_dispatch_suspended(const json_t *suspension, const char *cluster)
{
    if (!json_is_object(suspension))
        return false;
    if (json_is_true(json_object_get(suspension, "dispatching")))
        return true;
    const json_t *names = json_object_get(json_object_get(suspension, "dispatchingOnClusters"), "clusterNames");
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) if (cluster && json_string_value(n) && !strcmp(json_string_value(n), cluster))
        return true;
    return false;
}

bool fl_dispatch_any(const json_t *suspension)
{
    return json_is_true(json_object_get(suspension, "dispatching")) ||
           json_array_size(json_object_get(json_object_get(suspension, "dispatchingOnClusters"), "clusterNames")) > 0;
}

enum fl_dispatch_ack fl_dispatch_work_ack(const json_t *work)
{
    const json_t *gen = json_object_get(json_object_get(work, "metadata"), "generation");
    const json_t *c = fl_condition_of(work, FL_DISPATCHING_CONDITION);
    const json_t *og = json_object_get(c, "observedGeneration");
    if (!c || !json_is_integer(og) || !json_is_integer(gen) || json_integer_value(og) != json_integer_value(gen))
        return FL_DISPATCH_PENDING;
    const char *st = json_string_value(json_object_get(c, "status"));
    if (st && !strcmp(st, "True"))
        return FL_DISPATCH_RUNNING;
    if (st && !strcmp(st, "False"))
        return FL_DISPATCH_STOPPED;
    return FL_DISPATCH_PENDING;
}

bool fl_dispatch_work_acked(const json_t *work, bool want_suspended)
{
    if (!json_is_object(work))
        return false;
    bool spec = json_is_true(json_object_get(json_object_get(work, "spec"), "suspendDispatching"));
    if (spec != want_suspended)
        return false;
    enum fl_dispatch_ack a = fl_dispatch_work_ack(work);
    return want_suspended ? a == FL_DISPATCH_STOPPED : a == FL_DISPATCH_RUNNING;
}

static const char *dispatching_reason(const json_t *work)
{
    const json_t *c = fl_condition_of(work, FL_DISPATCHING_CONDITION);
    return c ? json_string_value(json_object_get(c, "reason")) : NULL;
}

const char *fl_dispatch_event_message(const json_t *old_work, const json_t *new_work)
{
    const char *was = dispatching_reason(old_work), *now = dispatching_reason(new_work);
    if (!now || (was ? !strcmp(was, now) : !strcmp(now, FL_DISPATCHING_REASON)))
        return NULL;
    if (!strcmp(now, FL_DISPATCHING_REASON))
        return FL_DISPATCHING_MSG_RUNNING;
    if (!strcmp(now, FL_DISPATCHING_REASON_CLUSTER_PAUSED))
        return FL_DISPATCHING_MSG_CLUSTER_PAUSED;
    if (!strcmp(now, FL_DISPATCHING_REASON_SUSPENDED))
        return FL_DISPATCHING_MSG_SUSPENDED;
    return NULL;
}

void fl_dispatch_rollup_of(const json_t *binding, const json_t *works, fl_dispatch_rollup *r)
{
    memset(r, 0, sizeof *r);
    r->pending = json_array();
    const json_t *spec = json_object_get(binding, "spec");
    const json_t *susp = json_object_get(spec, "suspension");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "clusters"), i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name)
            continue;
        bool want = fl_dispatch_suspended(susp, name);
        r->targets++;
        r->suspended += want;
        if (fl_dispatch_work_acked(json_object_get(works, name), want))
            r->acked++;
        else
            json_array_append_new(r->pending, json_string(name));
    }
}

bool fl_dispatch_has_rollup(const json_t *binding)
{
    return fl_dispatch_any(json_object_get(json_object_get(binding, "spec"), "suspension")) ||
           fl_condition_of(binding, FL_DISPATCHING_CONDITION);
}

bool fl_dispatch_rollup_acked(const json_t *binding)
{
    const json_t *c = fl_condition_of(binding, FL_DISPATCHING_CONDITION);
    const char *reason = json_string_value(json_object_get(c, "reason"));
    return reason && strcmp(reason, FL_DISPATCHING_REASON_PENDING) &&
           json_integer_value(json_object_get(c, "observedGeneration")) ==
               json_integer_value(json_object_get(json_object_get(binding, "metadata"), "generation"));
}

void fl_dispatch_rollup_close(fl_dispatch_rollup *r)
{
    json_decref(r->pending);
    r->pending = NULL;
}

/* "a, b, c" (at most five names, then "and N more") */
static char *name_list(const json_t *names)
{
    char *s = fl_strdup("");
    size_t i, n = json_array_size(names);
    for (i = 0; i < n && i < 5; i++) {
        char *next = fl_asprintf("%s%s%s", s, i ? ", " : "", json_string_value(json_array_get(names, i)));
        free(s);
        s = next;
    }
    if (n > 5) {
        char *next = fl_asprintf("%s and %zu more", s, n - 5);
        free(s);
        s = next;
    }
    return s;
}

void fl_dispatch_rollup_condition(const fl_dispatch_rollup *r, const char **status, const char **reason,
                                  char **message)
{
    if (r->acked < r->targets) {
        char *names = name_list(r->pending);
        *status = "Unknown";
        *reason = FL_DISPATCHING_REASON_PENDING;
        *message = fl_asprintf("%d/%d target clusters acknowledged; waiting for %s", r->acked, r->targets, names);
        free(names);
    } else if (r->suspended) {
        *status = "False";
        *reason = FL_DISPATCHING_REASON_SUSPENDED;
        *message = fl_asprintf("dispatching suspended on %d/%d target clusters; all %d acknowledged", r->suspended,
                               r->targets, r->targets);
    } else {
        *status = "True";
        *reason = FL_DISPATCHING_REASON;
        *message = fl_asprintf("dispatching to all %d target clusters; all acknowledged", r->targets);
    }
}
