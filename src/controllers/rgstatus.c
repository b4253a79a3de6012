/* rgstatus.c - a ResourceGroup's status from its resources' bindings (see rgstatus.h). */
#include "controllers/rgstatus.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/summary.h"
#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* Fields of an entry that its writer, not Flotilla, owns (kpt's applier sets them). */
static const char *const client_fields[] = {"sourceHash", "actuation", "strategy", "reconcile", NULL};
/* status.summary's count fields, in fl_summary_states' order (the binding summary's names) */
static const char *const count_keys[] = {"current", "inProgress", "terminating", "unknown", "notFound", "failed",
                                         NULL};

static const char *str_or(const json_t *o, const char *key, const char *def)
{
    const char *s = fl_json_str(o, key);
    return s ? s : def;
}

char *fl_rgstatus_ref_key(const json_t *ref)
{
    return fl_cat(str_or(ref, "group", ""), "/", str_or(ref, "kind", ""), "/", str_or(ref, "namespace", ""), "/",
                  str_or(ref, "name", ""), NULL);
}

/* b's text cut to FL_RGSTATUS_MESSAGE_MAX bytes at a character boundary; b is closed. */
static char *bounded_take(fl_strbuf *b)
{
    size_t n = b->len;
    if (n > FL_RGSTATUS_MESSAGE_MAX) {
        n = FL_RGSTATUS_MESSAGE_MAX;
        while (n && ((unsigned char)b->p[n] & 0xC0) == 0x80)
            n--;
        fl_strbuf_truncate(b, n);
    }
    return fl_strbuf_take(b);
}

/* "Current" -> "True", "Unknown" -> "Unknown", anything else "False". */
static const char *ready_status(const char *state)
{
    return !strcmp(state, "Current") ? "True" : !strcmp(state, "Unknown") ? "Unknown" : "False";
}

/* The state, reason and message of a bound resource, from its binding's summary. */
static const char *bound_state(const json_t *binding, const char **reason, fl_strbuf *msg)
{
    const json_t *sum = fl_json_path(binding, "status.summary");
    if (fl_json_meta(binding, "deletionTimestamp")) {
        *reason = "BindingDeleting";
        fl_strbuf_adds(msg, "its ResourceBinding is being deleted");
        return "Terminating";
    }
    const char *state = fl_json_str(sum, "state");
    if (!state) {
        *reason = "NoSummary";
        fl_strbuf_adds(msg, "its ResourceBinding has no status.summary yet");
        return "InProgress";
    }
    json_int_t desired = fl_json_path_int(sum, "desired", 0);
    if (desired == 0) {
        *reason = "NotScheduled";
        fl_strbuf_adds(msg, "no cluster is chosen for it yet");
        return state;
    }
    /* "2 clusters: 1 Current, 1 Failed" */
    fl_strbuf_printf(msg, "%lld cluster%s:", (long long)desired, desired == 1 ? "" : "s");
    bool first = true;
    for (size_t i = 0; count_keys[i]; i++) {
        json_int_t n = fl_json_path_int(sum, count_keys[i], 0);
        if (n > 0) {
            fl_strbuf_printf(msg, "%s %lld %s", first ? "" : ",", (long long)n, fl_summary_states[i]);
            first = false;
        }
    }
    /* the worst few clusters, as the summary orders them (worst first) */
    const json_t *nc = json_object_get(sum, "notCurrent");
    size_t named = 0, i;
    const json_t *c;
    json_array_foreach(nc, i, c) {
        if (named == FL_RGSTATUS_CLUSTERS_NAMED)
            break;
        const char *why = fl_json_str(c, "reason"), *text = fl_json_str(c, "message");
        fl_strbuf_printf(msg, "; %s: %s", str_or(c, "cluster", "?"), str_or(c, "state", "?"));
        if (why && *why)
            fl_strbuf_printf(msg, " (%s%s%s)", why, text && *text ? ": " : "", text && *text ? text : "");
        else if (text && *text)
            fl_strbuf_printf(msg, " (%s)", text);
        named++;
    }
    json_int_t not_current = desired - fl_json_path_int(sum, "current", 0);
    if (not_current > (json_int_t)named && named)
        fl_strbuf_printf(msg, "; and %lld more not Current", (long long)(not_current - (json_int_t)named));
    if (!strcmp(state, "Current"))
        *reason = "Current";
    else {
        const char *worst = fl_json_str(json_array_get(nc, 0), "reason");
        *reason = worst && *worst ? worst : state;
    }
    return state;
}

json_t *fl_rgstatus_resource(const json_t *ref, enum fl_rgstatus_found found, const json_t *binding,
                             const json_t *prev, int64_t now_ms)
{
    const char *kind = str_or(ref, "kind", ""), *ns = str_or(ref, "namespace", ""), *name = str_or(ref, "name", "");
    json_t *e = json_pack("{s:s, s:s, s:s, s:s}", "group", str_or(ref, "group", ""), "kind", kind, "namespace", ns,
                          "name", name);
    for (size_t i = 0; client_fields[i]; i++) {
        const json_t *v = json_object_get(prev, client_fields[i]);
        if (json_is_string(v))
            json_object_set(e, client_fields[i], (json_t *)v);
    }
    const json_t *conds = json_object_get(prev, "conditions");
    if (json_is_array(conds))
        json_object_set_new(e, "conditions", fl_json_deep_copy(conds));

    const char *state, *reason;
    fl_strbuf msg = FL_STRBUF_INIT;
    switch (found) {
    case FL_RGSTATUS_BOUND:
        state = bound_state(binding, &reason, &msg);
        break;
    case FL_RGSTATUS_NOT_PROPAGATED:
        state = "Unknown";
        reason = "NotPropagated";
        fl_strbuf_adds(&msg, "no PropagationPolicy propagates it: it has no ResourceBinding, so no cluster runs it");
        break;
    case FL_RGSTATUS_CONTROL_PLANE:
        state = "Current";
        reason = "ControlPlaneObject";
        fl_strbuf_adds(&msg, "present on the control plane, which is where it acts: no cluster runs it");
        break;
    case FL_RGSTATUS_NAMESPACE_SYNCED:
        state = "Current";
        reason = "NamespaceSynced";
        fl_strbuf_adds(&msg, "present; the namespace controller keeps it in every cluster, without a binding "
                             "to report its copies' state");
        break;
    case FL_RGSTATUS_DELETING:
        state = "Terminating";
        reason = "DeletionTimestampSet";
        fl_strbuf_adds(&msg, "being deleted from the control plane");
        break;
    case FL_RGSTATUS_KIND_NOT_SERVED:
        state = "NotFound";
        reason = "KindNotServed";
        fl_strbuf_printf(&msg, "the control plane serves no %s in group \"%s\"", kind, str_or(ref, "group", ""));
        break;
    default:
        state = "NotFound";
        reason = "NotFound";
        if (*ns)
            fl_strbuf_printf(&msg, "no %s %s/%s on the control plane", kind, ns, name);
        else
            fl_strbuf_printf(&msg, "no %s %s on the control plane", kind, name);
        break;
    }
    json_object_set_new(e, "status", json_string(state));
    char *text = bounded_take(&msg);
    fl_condition_set(e, "Ready", ready_status(state), reason, text, -1, now_ms);
    free(text);
    return e;
}

/* The rank of a state in fl_summary_states (best first); an unknown name counts as Unknown. */
static size_t state_index(const char *state)
{
    for (size_t i = 0; fl_summary_states[i]; i++)
        if (state && !strcmp(state, fl_summary_states[i]))
            return i;
    return 3; /* Unknown */
}

json_t *fl_rgstatus_summary(const json_t *entries)
{
    json_int_t counts[8] = {0};
    const char *worst = "Current";
    size_t i;
    const json_t *e;
    json_array_foreach(entries, i, e) {
        const char *st = fl_json_str(e, "status");
        counts[state_index(st)]++;
        if (fl_summary_state_worse(st, worst))
            worst = fl_summary_states[state_index(st)];
    }
    json_t *out = json_pack("{s:s, s:I}", "state", worst, "total", (json_int_t)json_array_size(entries));
    for (i = 0; count_keys[i]; i++)
        json_object_set_new(out, count_keys[i], json_integer(counts[i]));
    return out;
}

/* "Kind ns/name" of an entry, into b. */
static void add_ref(fl_strbuf *b, const json_t *e)
{
    const char *ns = str_or(e, "namespace", "");
    fl_strbuf_printf(b, "%s %s%s%s", str_or(e, "kind", "?"), ns, *ns ? "/" : "", str_or(e, "name", "?"));
}

/* "; Failed: Deployment default/web; NotFound: ConfigMap default/x, ConfigMap default/y": the
 * worst entries, at most FL_RGSTATUS_RESOURCES_NAMED, worst state first, in list order within
 * a state, then how many more are not Current. */
static void add_worst(fl_strbuf *b, const json_t *entries)
{
    size_t named = 0, bad = 0;
    for (size_t r = 5; r > 0; r--) { /* Failed .. InProgress: fl_summary_states[5..1] */
        size_t i, in_state = 0;
        const json_t *e;
        json_array_foreach(entries, i, e) {
            if (state_index(fl_json_str(e, "status")) != r)
                continue;
            bad++;
            if (named == FL_RGSTATUS_RESOURCES_NAMED)
                continue;
            fl_strbuf_adds(b, in_state ? ", " : "; ");
            if (!in_state)
                fl_strbuf_printf(b, "%s: ", fl_summary_states[r]);
            add_ref(b, e);
            named++;
            in_state++;
        }
    }
    if (bad > named)
        fl_strbuf_printf(b, "; and %zu more", bad - named);
}

bool fl_rgstatus_conditions(json_t *status, const json_t *entries, int64_t now_ms)
{
    json_t *sum = fl_rgstatus_summary(entries);
    json_int_t total = fl_json_path_int(sum, "total", 0);
    json_int_t current = fl_json_path_int(sum, "current", 0);
    json_int_t moving = fl_json_path_int(sum, "inProgress", 0) + fl_json_path_int(sum, "terminating", 0);
    json_int_t failed = fl_json_path_int(sum, "failed", 0), missing = fl_json_path_int(sum, "notFound", 0);
    const char *worst = fl_json_str(sum, "state");
    bool change = false;
    char *text;

    if (moving)
        text = fl_asprintf("%lld of %lld resources are InProgress or Terminating", (long long)moving,
                           (long long)total);
    else
        text = fl_strdup("no listed resource is in progress");
    change |= fl_condition_set(status, "Reconciling", moving ? "True" : "False", moving ? "InProgress" : "Settled",
                               text, -1, now_ms);
    free(text);

    if (failed && missing)
        text = fl_asprintf("%lld Failed and %lld NotFound of %lld resources", (long long)failed, (long long)missing,
                           (long long)total);
    else if (failed || missing)
        text = fl_asprintf("%lld %s of %lld resources", (long long)(failed ? failed : missing),
                           failed ? "Failed" : "NotFound", (long long)total);
    else
        text = fl_strdup("no listed resource is Failed or NotFound");
    change |= fl_condition_set(status, "Stalled", failed || missing ? "True" : "False",
                               failed ? "Failed" : missing ? "NotFound" : "NoFailure", text, -1, now_ms);
    free(text);

    fl_strbuf b = FL_STRBUF_INIT;
    if (current == total) {
        fl_strbuf_printf(&b, "all %lld listed resources are Current on every cluster they are bound to",
                         (long long)total);
    } else {
        fl_strbuf_printf(&b, "%lld of %lld resources Current", (long long)current, (long long)total);
        add_worst(&b, entries);
    }
    text = bounded_take(&b);
    change |= fl_condition_set(status, "Ready", ready_status(worst), current == total ? "AllCurrent" : worst, text,
                               -1, now_ms);
    free(text);
    json_decref(sum);
    return change;
}
