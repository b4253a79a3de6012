/* summary.c - a binding's live state across its clusters, bounded (see summary.h). */
#include "controllers/summary.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/condition.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/timefmt.h"

/* best first: the index is the rank */
const char *const fl_summary_states[] = {"Current", "InProgress", "Terminating", "Unknown", "NotFound", "Failed",
                                         NULL};
enum { CURRENT, IN_PROGRESS, TERMINATING, UNKNOWN, NOT_FOUND, FAILED, NSTATES };
/* the summary's count fields, in fl_summary_states' order */
static const char *const count_keys[NSTATES] = {"current", "inProgress", "terminating", "unknown", "notFound",
                                                "failed"};

static int rank(const char *state)
{
    for (int i = 0; state && i < NSTATES; i++)
        if (!strcmp(state, fl_summary_states[i]))
            return i;
    return UNKNOWN;
}

bool fl_summary_state_worse(const char *a, const char *b)
{
    return rank(a) > rank(b);
}

const char *fl_summary_cluster_state(const json_t *work, enum fl_cluster_report report, const char **reason,
                                     const char **message)
{
    *reason = "";
    *message = "";
    if (report == FL_CLUSTER_NOT_READY) {
        *reason = "ClusterNotReady";
        *message = "the cluster is not Ready: what it last reported may be stale";
        return fl_summary_states[UNKNOWN];
    }
    if (report == FL_CLUSTER_NOT_REPORTING) {
        *reason = "ClusterNotReporting";
        *message = "the cluster has not reported for about twice its reporting interval (two probes or lease renewals "
                   "missed): what it last reported is stale";
        return fl_summary_states[UNKNOWN];
    }
    if (!work) {
        *reason = "NotDelivered";
        *message = "its Work is not written yet";
        return fl_summary_states[IN_PROGRESS];
    }
    return fl_summary_work_state(json_object_get(work, "status"), fl_json_meta(work, "deletionTimestamp") != NULL,
                                 reason, message);
}

const char *fl_summary_work_state(const json_t *status, bool deleting, const char **reason, const char **message)
{
    *reason = "";
    *message = "";
    if (deleting) {
        *reason = "WorkDeleting";
        return fl_summary_states[TERMINATING];
    }
    const json_t *applied = fl_condition_find(json_object_get(status, "conditions"), "Applied");
    const char *st = fl_json_str(applied, "status");
    if (!st) {
        *reason = "NotApplied";
        *message = "not applied to the cluster yet";
        return fl_summary_states[IN_PROGRESS];
    }
    if (strcmp(st, "True")) {
        *reason = fl_json_str(applied, "reason") ? fl_json_str(applied, "reason") : "AppliedFailed";
        *message = fl_json_str(applied, "message") ? fl_json_str(applied, "message") : "";
        return fl_summary_states[FAILED];
    }
    /* the worst of its manifests' live states */
    const json_t *entries = json_object_get(status, "manifestStatuses");
    int worst = -1;
    size_t i;
    const json_t *e;
    json_array_foreach(entries, i, e) {
        const json_t *live = json_object_get(e, "liveStatus");
        int r = rank(fl_json_str(live, "state"));
        if (r > worst) {
            worst = r;
            *reason = fl_json_str(live, "reason") ? fl_json_str(live, "reason") : live ? "" : "NoLiveStatus";
            *message = fl_json_str(live, "message") ? fl_json_str(live, "message") : "";
        }
    }
    if (worst < 0) {
        *reason = "NoManifestStatus";
        *message = "applied; no status reported yet";
        return fl_summary_states[UNKNOWN];
    }
    return fl_summary_states[worst];
}

typedef struct record {
    char *cluster;
    int state;
    char *reason, *message;
} record;

struct fl_summary {
    record *v;
    size_t n, cap;
    size_t applied;
    size_t counts[NSTATES];
    json_t *index; /* cluster -> its record's position */
};

fl_summary *fl_summary_new(void)
{
    fl_summary *s = fl_calloc(1, sizeof *s);
    s->index = json_object();
    return s;
}

void fl_summary_free(fl_summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].cluster);
        free(s->v[i].reason);
        free(s->v[i].message);
    }
    free(s->v);
    json_decref(s->index);
    free(s);
}

/* msg cut to FL_SUMMARY_MESSAGE_MAX bytes at a character boundary */
static char *bounded(const char *msg)
{
    size_t n = strlen(msg ? msg : "");
    if (n <= FL_SUMMARY_MESSAGE_MAX)
        return fl_strdup(msg ? msg : "");
    n = FL_SUMMARY_MESSAGE_MAX;
    while (n && ((unsigned char)msg[n] & 0xC0) == 0x80)
        n--;
    return fl_strndup(msg, n);
}

void fl_summary_add(fl_summary *s, const char *cluster, bool applied, const char *state, const char *reason,
                    const char *message)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = fl_realloc(s->v, s->cap * sizeof *s->v);
    }
    record *r = &s->v[s->n];
    r->cluster = fl_strdup(cluster);
    r->state = rank(state);
    r->reason = bounded(reason);
    r->message = bounded(message);
    json_object_set_new(s->index, cluster, json_integer((json_int_t)s->n));
    s->n++;
    s->applied += applied;
    s->counts[r->state]++;
}

const char *fl_summary_state_of(const fl_summary *s, const char *cluster)
{
    const json_t *i = json_object_get(s->index, cluster);
    return i ? fl_summary_states[s->v[json_integer_value(i)].state] : NULL;
}

/* Worst first, then by cluster name. */
static int by_severity(const void *a, const void *b)
{
    const record *x = *(record *const *)a, *y = *(record *const *)b;
    return x->state != y->state ? y->state - x->state : strcmp(x->cluster, y->cluster);
}

/* The records, worst first (an array of pointers; caller frees). */
static const record **sorted(const fl_summary *s)
{
    const record **v = fl_malloc((s->n ? s->n : 1) * sizeof *v);
    for (size_t i = 0; i < s->n; i++)
        v[i] = &s->v[i];
    qsort(v, s->n, sizeof *v, by_severity);
    return v;
}

json_t *fl_summary_json(const fl_summary *s, const json_t *prev, int64_t now_ms)
{
    int worst = s->n ? CURRENT : IN_PROGRESS; /* no cluster yet: waiting for a placement */
    for (int i = 0; i < NSTATES; i++)
        if (s->counts[i])
            worst = i;
    json_t *out = json_pack("{s:s, s:I, s:I}", "state", fl_summary_states[worst], "desired", (json_int_t)s->n,
                            "applied", (json_int_t)s->applied);
    for (int i = 0; i < NSTATES; i++)
        json_object_set_new(out, count_keys[i], json_integer((json_int_t)s->counts[i]));
    json_t *nc = json_array();
    const record **v = sorted(s);
    size_t named = 0;
    for (size_t i = 0; i < s->n && v[i]->state != CURRENT; i++) {
        if (named == FL_SUMMARY_NOT_CURRENT_MAX)
            break;
        json_t *e = json_pack("{s:s, s:s}", "cluster", v[i]->cluster, "state", fl_summary_states[v[i]->state]);
        if (*v[i]->reason)
            json_object_set_new(e, "reason", json_string(v[i]->reason));
        if (*v[i]->message)
            json_object_set_new(e, "message", json_string(v[i]->message));
        json_array_append_new(nc, e);
        named++;
    }
    free(v);
    json_object_set_new(out, "notCurrent", nc);
    json_object_set_new(out, "truncated", json_boolean(named < s->n - s->counts[CURRENT]));
    /* the time of the last change: kept while nothing else changed */
    const char *was = fl_json_str(prev, "lastChangeTime");
    if (was && json_is_object(prev)) {
        json_t *p = json_copy((json_t *)prev);
        json_object_del(p, "lastChangeTime");
        bool same = fl_json_same(p, out);
        json_decref(p);
        if (same) {
            json_object_set_new(out, "lastChangeTime", json_string(was));
            return out;
        }
    }
    char buf[FL_TIME_BUF];
    fl_time_format(now_ms, false, buf);
    json_object_set_new(out, "lastChangeTime", json_string(buf));
    return out;
}

/* The bytes of item as stored (compact JSON), about. */
static size_t item_bytes(const json_t *item)
{
    return json_dumpb(item, NULL, 0, JSON_COMPACT);
}

json_t *fl_summary_bound_items(const fl_summary *s, const json_t *items)
{
    size_t n = json_array_size(items), total = 0, i;
    const json_t *it;
    /* sizes are measured only up to the bounds: a fleet past them is never dumped whole */
    for (i = 0; n <= FL_SUMMARY_ITEMS_MAX && i < n && total <= FL_SUMMARY_ITEMS_BYTES; i++)
        total += item_bytes(json_array_get(items, i)) + 1;
    if (n <= FL_SUMMARY_ITEMS_MAX && total <= FL_SUMMARY_ITEMS_BYTES)
        return json_copy((json_t *)items);
    /* each item's record (by its clusterName), ranked as the summary ranks them */
    typedef struct ranked {
        const json_t *item;
        record r;
    } ranked;
    ranked *v = fl_malloc(n * sizeof *v);
    json_array_foreach(items, i, it) {
        const char *cl = fl_json_str(it, "clusterName");
        const json_t *at = cl ? json_object_get(s->index, cl) : NULL;
        v[i].item = it;
        v[i].r = (record){.cluster = (char *)(cl ? cl : ""), .state = at ? s->v[json_integer_value(at)].state : UNKNOWN};
    }
    const record **order = fl_malloc(n * sizeof *order);
    for (i = 0; i < n; i++)
        order[i] = &v[i].r;
    qsort(order, n, sizeof *order, by_severity);
    json_t *out = json_array();
    size_t bytes = 0;
    for (i = 0; i < n && i < FL_SUMMARY_ITEMS_MAX; i++) {
        const ranked *rk = (const ranked *)((const char *)order[i] - offsetof(ranked, r));
        bytes += item_bytes(rk->item) + 1;
        if (bytes > FL_SUMMARY_ITEMS_BYTES && i)
            break; /* the worst item always stays */
        json_array_append(out, (json_t *)rk->item);
    }
    free(order);
    free(v);
    return out;
}
