/* metricsseries.c - kube-state-metrics series back into member objects (metricsseries.h).
 *
 * One table per kind says, for each series name (without the kind's prefix), where its value
 * goes in the object: an integer at a path (`status_replicas_ready` -> status.readyReplicas), a
 * time at a path (a Job's start), a label's text at a path (a StatefulSet's revisions), a
 * condition (`status_condition{condition,status,reason}` with value 1 is the condition's
 * status), a Pod's phase or a container's waiting reason. Everything else a series says is
 * ignored. The object then holds what the member object would, as far as the series tell, at
 * the paths interp/livestate.c reads; what they do not tell (condition messages, a
 * StatefulSet's partition) stays out, and the rules treat it as absent.
 *
 * kube-state-metrics writes a Deployment's Progressing condition only when the Deployment has a
 * progress deadline, as its controller does; so an object whose series carry that condition
 * gets a deadline too (`spec.progressDeadlineSeconds`), which the Deployment rule asks for
 * before it trusts the condition's reason.
 *
 * The answer's shape is Prometheus' HTTP API v1: {"status":"success","data":{"resultType":
 * "vector","result":[{"metric":{labels},"value":[time,"number"]}, ...]}}, or "status":"error"
 * with "errorType" and "error". Anything else is refused whole, saying where. */
#include "controllers/metricsseries.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/timefmt.h"

/* What a series' value means in the object. */
enum op {
    OP_INT,      /* an integer at path */
    OP_GEN,      /* an observed generation at path: kube-state-metrics writes 0 for none */
    OP_TIME,     /* unix seconds, an RFC 3339 time at path */
    OP_LABEL,    /* value 1: the text of label `label` at path */
    OP_COND,     /* value 1: condition {type: label condition, status: label status, reason} */
    OP_COND_IS,  /* value 1 and label condition="true": condition `path` True (reason label) */
    OP_PHASE,    /* value 1: status.phase is label phase */
    OP_WAITING,  /* value 1: container (label container) waiting with label reason, in list path */
    OP_UNSCHED,  /* value 1: PodScheduled False, reason Unschedulable */
};

typedef struct field {
    const char *suffix; /* the series' name after the kind's prefix */
    enum op op;
    const char *path;   /* where (a condition type for OP_COND_IS and OP_UNSCHED) */
    const char *label;  /* OP_LABEL's label, OP_COND's status spelling */
} field;

static const field DEPLOYMENT[] = {
    {"spec_replicas", OP_INT, "spec.replicas", NULL},
    {"status_replicas", OP_INT, "status.replicas", NULL},
    {"status_replicas_updated", OP_INT, "status.updatedReplicas", NULL},
    {"status_replicas_ready", OP_INT, "status.readyReplicas", NULL},
    {"status_replicas_available", OP_INT, "status.availableReplicas", NULL},
    {"status_observed_generation", OP_GEN, "status.observedGeneration", NULL},
    {"metadata_generation", OP_INT, "metadata.generation", NULL},
    {"status_condition", OP_COND, NULL, NULL},
    {"deletion_timestamp", OP_TIME, "metadata.deletionTimestamp", NULL},
    {NULL, 0, NULL, NULL},
};

static const field STATEFULSET[] = {
    {"replicas", OP_INT, "spec.replicas", NULL},
    {"status_replicas", OP_INT, "status.replicas", NULL},
    {"status_replicas_ready", OP_INT, "status.readyReplicas", NULL},
    {"status_replicas_current", OP_INT, "status.currentReplicas", NULL},
    {"status_replicas_updated", OP_INT, "status.updatedReplicas", NULL},
    {"status_observed_generation", OP_GEN, "status.observedGeneration", NULL},
    {"metadata_generation", OP_INT, "metadata.generation", NULL},
    {"status_current_revision", OP_LABEL, "status.currentRevision", "revision"},
    {"status_update_revision", OP_LABEL, "status.updateRevision", "revision"},
    {"deletion_timestamp", OP_TIME, "metadata.deletionTimestamp", NULL},
    {NULL, 0, NULL, NULL},
};

static const field DAEMONSET[] = {
    {"status_desired_number_scheduled", OP_INT, "status.desiredNumberScheduled", NULL},
    {"status_current_number_scheduled", OP_INT, "status.currentNumberScheduled", NULL},
    {"status_updated_number_scheduled", OP_INT, "status.updatedNumberScheduled", NULL},
    {"status_number_available", OP_INT, "status.numberAvailable", NULL},
    {"status_number_ready", OP_INT, "status.numberReady", NULL},
    {"status_observed_generation", OP_GEN, "status.observedGeneration", NULL},
    {"metadata_generation", OP_INT, "metadata.generation", NULL},
    {"deletion_timestamp", OP_TIME, "metadata.deletionTimestamp", NULL},
    {NULL, 0, NULL, NULL},
};

static const field JOB[] = {
    {"spec_parallelism", OP_INT, "spec.parallelism", NULL},
    {"spec_completions", OP_INT, "spec.completions", NULL},
    {"status_succeeded", OP_INT, "status.succeeded", NULL},
    {"status_start_time", OP_TIME, "status.startTime", NULL},
    {"complete", OP_COND_IS, "Complete", NULL},
    {"failed", OP_COND_IS, "Failed", NULL},
    {"deletion_timestamp", OP_TIME, "metadata.deletionTimestamp", NULL},
    {NULL, 0, NULL, NULL},
};

static const field POD[] = {
    {"status_phase", OP_PHASE, NULL, NULL},
    {"status_ready", OP_COND, "Ready", NULL},
    {"status_scheduled", OP_COND, "PodScheduled", NULL},
    {"status_unschedulable", OP_UNSCHED, "PodScheduled", NULL},
    {"container_status_waiting_reason", OP_WAITING, "status.containerStatuses", NULL},
    {"init_container_status_waiting_reason", OP_WAITING, "status.initContainerStatuses", NULL},
    {"created", OP_TIME, "metadata.creationTimestamp", NULL},
    {"deletion_timestamp", OP_TIME, "metadata.deletionTimestamp", NULL},
    {NULL, 0, NULL, NULL},
};

const fl_mseries_kind fl_mseries_kinds[] = {
    {"apps/v1", "Deployment", "kube_deployment_", "deployment"},
    {"apps/v1", "StatefulSet", "kube_statefulset_", "statefulset"},
    {"apps/v1", "DaemonSet", "kube_daemonset_", "daemonset"},
    {"batch/v1", "Job", "kube_job_", "job_name"},
    {"v1", "Pod", "kube_pod_", "pod"},
};
const size_t fl_mseries_nkinds = sizeof fl_mseries_kinds / sizeof *fl_mseries_kinds;

static const field *const FIELDS[] = {DEPLOYMENT, STATEFULSET, DAEMONSET, JOB, POD};

int fl_mseries_kind_of(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return -1;
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    for (size_t k = 0; k < fl_mseries_nkinds; k++) {
        const char *want = fl_mseries_kinds[k].api_version;
        const char *ws = strchr(want, '/');
        size_t wlen = ws ? (size_t)(ws - want) : 0;
        if (!strcmp(kind, fl_mseries_kinds[k].kind) && glen == wlen && !strncmp(api_version, want, glen))
            return (int)k;
    }
    return -1;
}

char *fl_mseries_key(const char *kind, const char *ns, const char *name)
{
    return fl_cat(kind, "\n", ns ? ns : "", "\n", name, NULL);
}

/* "a|b|c" of the clusters' names (DNS labels: nothing a regular expression would read). */
static void alternation(fl_strbuf *b, const json_t *clusters)
{
    size_t i;
    const json_t *c;
    json_array_foreach(clusters, i, c) {
        if (i)
            fl_strbuf_addc(b, '|');
        fl_strbuf_adds(b, json_string_value(c) ? json_string_value(c) : "");
    }
}

char *fl_mseries_query(size_t k, const json_t *clusters)
{
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_printf(&b, "{__name__=~\"%s.+\",cluster=~\"", fl_mseries_kinds[k].prefix);
    alternation(&b, clusters);
    fl_strbuf_adds(&b, "\"}");
    return fl_strbuf_take(&b);
}

char *fl_mseries_heartbeat_query(const json_t *clusters)
{
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_adds(&b, "max by (cluster) (timestamp(kube_namespace_created{cluster=~\"");
    alternation(&b, clusters);
    fl_strbuf_adds(&b, "\"}))");
    return fl_strbuf_take(&b);
}

/* ---- reading the answer ---- */

static int fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(char **err, const char *fmt, ...)
{
    if (err) {
        fl_strbuf b = FL_STRBUF_INIT;
        va_list ap;
        va_start(ap, fmt);
        fl_strbuf_vprintf(&b, fmt, ap);
        va_end(ap);
        free(*err);
        *err = fl_strbuf_take(&b);
    }
    return FL_EINVAL;
}

/* The answer's result array (borrowed), or NULL with *err. */
static const json_t *vector_of(const json_t *answer, char **err)
{
    if (!json_is_object(answer)) {
        fail(err, "the answer is not a JSON object");
        return NULL;
    }
    const char *status = fl_json_str(answer, "status");
    if (status && !strcmp(status, "error")) {
        const char *type = fl_json_str(answer, "errorType"), *why = fl_json_str(answer, "error");
        char *one = fl_err_one_line(why ? why : "", why ? strlen(why) : 0, 200);
        fail(err, "Prometheus answered an error: %.40s: %s", type ? type : "unknown", one);
        free(one);
        return NULL;
    }
    if (!status || strcmp(status, "success")) {
        fail(err, "status: not \"success\"");
        return NULL;
    }
    const json_t *data = json_object_get(answer, "data");
    const char *rt = fl_json_str(data, "resultType");
    if (!json_is_object(data) || !rt || strcmp(rt, "vector")) {
        fail(err, "data.resultType: not \"vector\"");
        return NULL;
    }
    const json_t *result = json_object_get(data, "result");
    if (!json_is_array(result)) {
        fail(err, "data.result: not an array");
        return NULL;
    }
    if (json_array_size(result) > FL_MSERIES_MAX_SERIES) {
        fail(err, "data.result: %zu series, more than %d", json_array_size(result), FL_MSERIES_MAX_SERIES);
        return NULL;
    }
    return result;
}

/* Sample i's labels and value, checked: 0, or FL_EINVAL with *err. */
static int sample(const json_t *s, size_t i, const json_t **labels, double *v, double *ts, char **err)
{
    *labels = json_object_get(s, "metric");
    const json_t *value = json_object_get(s, "value");
    if (!json_is_object(s) || !json_is_object(*labels))
        return fail(err, "data.result[%zu].metric: not an object", i);
    const char *name;
    const json_t *lv;
    json_object_foreach((json_t *)*labels, name, lv) {
        if (!json_is_string(lv))
            return fail(err, "data.result[%zu].metric.%.64s: not a string", i, name);
        if (json_string_length(lv) > FL_MSERIES_MAX_LABEL)
            return fail(err, "data.result[%zu].metric.%.64s: longer than %d bytes", i, name, FL_MSERIES_MAX_LABEL);
    }
    const json_t *t = json_array_get(value, 0);
    const char *num = json_string_value(json_array_get(value, 1));
    if (json_array_size(value) != 2 || !json_is_number(t) || !num)
        return fail(err, "data.result[%zu].value: not [time, \"number\"]", i);
    char *end;
    *v = strtod(num, &end);
    if (end == num || *end)
        return fail(err, "data.result[%zu].value: \"%.32s\" is not a number", i, num);
    *ts = json_number_value(t);
    return 0;
}

/* ---- building the object ---- */

/* The object at a dotted path's parent, made on demand, and the last key. */
static json_t *parent_of(json_t *obj, const char *path, const char **leaf)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = obj;
    char *s = buf, *dot;
    while ((dot = strchr(s, '.'))) {
        *dot = '\0';
        o = fl_json_ensure_obj(o, s);
        s = dot + 1;
    }
    *leaf = path + (s - buf);
    return o;
}

static void set_at(json_t *obj, const char *path, json_t *v)
{
    const char *leaf = NULL;
    json_t *parent = parent_of(obj, path, &leaf); /* before leaf is read */
    json_object_set_new(parent, leaf, v);
}

/* The element of array path whose `key` is `value`, made on demand. */
static json_t *element(json_t *obj, const char *path, const char *key, const char *value)
{
    const char *leaf = NULL;
    json_t *parent = parent_of(obj, path, &leaf);
    json_t *arr = json_object_get(parent, leaf);
    if (!json_is_array(arr)) {
        arr = json_array();
        json_object_set_new(parent, leaf, arr);
    }
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *have = fl_json_str(e, key);
        if (have && !strcmp(have, value))
            return e;
    }
    e = json_pack("{s:s}", key, value);
    json_array_append_new(arr, e);
    return e;
}

/* kube-state-metrics spells a condition's status "true", "false", "unknown". */
static const char *cond_status(const char *s)
{
    if (!s)
        return NULL;
    if (!strcmp(s, "true"))
        return "True";
    if (!strcmp(s, "false"))
        return "False";
    if (!strcmp(s, "unknown"))
        return "Unknown";
    return NULL;
}

static void set_cond(json_t *obj, const char *type, const char *status, const char *reason)
{
    json_t *c = element(obj, "status.conditions", "type", type);
    json_object_set_new(c, "status", json_string(status));
    if (reason && *reason)
        json_object_set_new(c, "reason", json_string(reason));
}

/* Put one series' value where it goes (value already checked as a finite number). */
static void apply(json_t *obj, const field *f, const json_t *labels, double v)
{
    const char *lab = NULL;
    switch (f->op) {
    case OP_GEN:
        if (v < 1)
            return;
        /* fall through */
    case OP_INT:
        if (fabs(v) < 9007199254740992.0)
            set_at(obj, f->path, json_integer((json_int_t)v));
        return;
    case OP_TIME: {
        char buf[FL_TIME_BUF];
        if (v <= 0 || v > 253402300799.0) /* kube-state-metrics leaves unset times out, or 0 */
            return;
        fl_time_format((int64_t)(v * 1000), false, buf);
        set_at(obj, f->path, json_string(buf));
        return;
    }
    case OP_LABEL:
        lab = fl_json_str(labels, f->label);
        if (v == 1 && lab)
            set_at(obj, f->path, json_string(lab));
        return;
    case OP_COND: {
        const char *type = f->path ? f->path : fl_json_str(labels, "condition");
        const char *st = cond_status(fl_json_str(labels, f->path ? "condition" : "status"));
        if (v == 1 && type && *type && st)
            set_cond(obj, type, st, fl_json_str(labels, "reason"));
        return;
    }
    case OP_COND_IS: {
        const char *st = cond_status(fl_json_str(labels, "condition"));
        if (v == 1 && st)
            set_cond(obj, f->path, st, fl_json_str(labels, "reason"));
        return;
    }
    case OP_PHASE:
        lab = fl_json_str(labels, "phase");
        if (v == 1 && lab)
            set_at(obj, "status.phase", json_string(lab));
        return;
    case OP_WAITING: {
        const char *c = fl_json_str(labels, "container"), *why = fl_json_str(labels, "reason");
        if (v == 1 && c && why) {
            json_t *cs = element(obj, f->path, "name", c);
            json_object_set_new(cs, "state", json_pack("{s:{s:s}}", "waiting", "reason", why));
        }
        return;
    }
    case OP_UNSCHED:
        if (v == 1)
            set_cond(obj, f->path, "False", "Unschedulable");
        return;
    }
}

/* The Deployment controller writes Progressing only with a progress deadline (above). */
static void finish(size_t k, json_t *objs)
{
    if (strcmp(fl_mseries_kinds[k].kind, "Deployment"))
        return;
    const char *cluster, *key;
    json_t *per, *obj;
    json_object_foreach(objs, cluster, per) {
        json_object_foreach(per, key, obj) {
            const json_t *conds = fl_json_path(obj, "status.conditions");
            size_t i;
            const json_t *c;
            json_array_foreach(conds, i, c) {
                const char *t = fl_json_str(c, "type");
                if (t && !strcmp(t, "Progressing") && !fl_json_path(obj, "spec.progressDeadlineSeconds"))
                    set_at(obj, "spec.progressDeadlineSeconds", json_integer(600));
            }
        }
    }
}

int fl_mseries_fold(const json_t *answer, size_t k, json_t *objs, char **err)
{
    if (k >= fl_mseries_nkinds)
        return fail(err, "no such kind");
    const json_t *result = vector_of(answer, err);
    if (!result)
        return FL_EINVAL;
    const fl_mseries_kind *kd = &fl_mseries_kinds[k];
    size_t plen = strlen(kd->prefix), i;
    const json_t *s;
    json_array_foreach(result, i, s) {
        const json_t *labels;
        double v, ts;
        if (sample(s, i, &labels, &v, &ts, err))
            return FL_EINVAL;
        const char *metric = fl_json_str(labels, "__name__"), *cluster = fl_json_str(labels, "cluster");
        const char *ns = fl_json_str(labels, "namespace"), *name = fl_json_str(labels, kd->name_label);
        if (!metric || !cluster || !*cluster || !ns || !*ns || !name || !*name || !isfinite(v) ||
            strncmp(metric, kd->prefix, plen))
            continue;
        const field *f = FIELDS[k];
        while (f->suffix && strcmp(f->suffix, metric + plen))
            f++;
        if (!f->suffix)
            continue;
        json_t *per = json_object_get(objs, cluster);
        if (!per) {
            per = json_object();
            json_object_set_new(objs, cluster, per);
        }
        char *key = fl_mseries_key(kd->kind, ns, name);
        json_t *obj = json_object_get(per, key);
        if (!obj) {
            obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", kd->api_version, "kind", kd->kind, "metadata",
                            "namespace", ns, "name", name);
            json_object_set_new(per, key, obj);
        }
        free(key);
        apply(obj, f, labels, v);
    }
    finish(k, objs);
    return 0;
}

int fl_mseries_fold_text(const char *text, size_t len, size_t k, json_t *objs, char **err)
{
    json_error_t je;
    json_t *answer = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!answer)
        return fail(err, "the answer is not JSON: %s (byte %d)", je.text, je.position);
    int rc = fl_mseries_fold(answer, k, objs, err);
    json_decref(answer);
    return rc;
}

int fl_mseries_heartbeats(const json_t *answer, json_t *heard, char **err)
{
    const json_t *result = vector_of(answer, err);
    if (!result)
        return FL_EINVAL;
    size_t i;
    const json_t *s;
    json_array_foreach(result, i, s) {
        const json_t *labels;
        double v, ts;
        if (sample(s, i, &labels, &v, &ts, err))
            return FL_EINVAL;
        const char *cluster = fl_json_str(labels, "cluster");
        if (cluster && *cluster && isfinite(v) && v > 0 && v < 253402300799.0)
            json_object_set_new(heard, cluster, json_integer((json_int_t)(v * 1000)));
    }
    return 0;
}
