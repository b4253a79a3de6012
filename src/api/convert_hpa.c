/* convert_hpa.c - autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscaler, as kube-apiserver
 * converts them (both versions are one stored object there, and here: api_convert.c).
 *
 * v1 has one metric, spec.targetCPUUtilizationPercentage, and one current value; everything
 * else v2 carries travels in v1 as JSON in annotations, under upstream's names:
 *   autoscaling.alpha.kubernetes.io/metrics          the other spec.metrics (v1 MetricSpec form)
 *   autoscaling.alpha.kubernetes.io/behavior         spec.behavior (v2 form)
 *   autoscaling.alpha.kubernetes.io/current-metrics  the other status.currentMetrics (v1 form)
 *   autoscaling.alpha.kubernetes.io/conditions       status.conditions
 * so an object read through v1 and written back keeps all of it. A metric's v1 form differs
 * from v2's by field names only; METRIC_SPEC and METRIC_STATUS below pair the paths. The
 * functions also convert partial objects (server-side apply configurations): only what is
 * there is moved. Pure functions: any thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/convert.h"
#include "core/json.h"
#include "core/mem.h"

#define ANN_METRICS "autoscaling.alpha.kubernetes.io/metrics"
#define ANN_BEHAVIOR "autoscaling.alpha.kubernetes.io/behavior"
#define ANN_CURRENT "autoscaling.alpha.kubernetes.io/current-metrics"
#define ANN_CONDITIONS "autoscaling.alpha.kubernetes.io/conditions"

/* (v1 path, v2 path) inside one metric source, per source type; "" ends a type's list. */
typedef struct path_pair {
    const char *type, *v1, *v2;
} path_pair;

static const path_pair METRIC_SPEC[] = {
    {"Resource", "name", "name"},
    {"Resource", "targetAverageUtilization", "target.averageUtilization"},
    {"Resource", "targetAverageValue", "target.averageValue"},
    {"ContainerResource", "name", "name"},
    {"ContainerResource", "container", "container"},
    {"ContainerResource", "targetAverageUtilization", "target.averageUtilization"},
    {"ContainerResource", "targetAverageValue", "target.averageValue"},
    {"Pods", "metricName", "metric.name"},
    {"Pods", "selector", "metric.selector"},
    {"Pods", "targetAverageValue", "target.averageValue"},
    {"Object", "target", "describedObject"},
    {"Object", "metricName", "metric.name"},
    {"Object", "selector", "metric.selector"},
    {"Object", "targetValue", "target.value"},
    {"Object", "averageValue", "target.averageValue"},
    {"External", "metricName", "metric.name"},
    {"External", "metricSelector", "metric.selector"},
    {"External", "targetValue", "target.value"},
    {"External", "targetAverageValue", "target.averageValue"},
    {NULL, NULL, NULL},
};

static const path_pair METRIC_STATUS[] = {
    {"Resource", "name", "name"},
    {"Resource", "currentAverageUtilization", "current.averageUtilization"},
    {"Resource", "currentAverageValue", "current.averageValue"},
    {"ContainerResource", "name", "name"},
    {"ContainerResource", "container", "container"},
    {"ContainerResource", "currentAverageUtilization", "current.averageUtilization"},
    {"ContainerResource", "currentAverageValue", "current.averageValue"},
    {"Pods", "metricName", "metric.name"},
    {"Pods", "selector", "metric.selector"},
    {"Pods", "currentAverageValue", "current.averageValue"},
    {"Object", "target", "describedObject"},
    {"Object", "metricName", "metric.name"},
    {"Object", "selector", "metric.selector"},
    {"Object", "currentValue", "current.value"},
    {"Object", "averageValue", "current.averageValue"},
    {"External", "metricName", "metric.name"},
    {"External", "metricSelector", "metric.selector"},
    {"External", "currentValue", "current.value"},
    {"External", "currentAverageValue", "current.averageValue"},
    {NULL, NULL, NULL},
};

/* The value at a dotted path of object keys, or NULL. */
static json_t *get_path(const json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    json_t *v = (json_t *)o;
    for (char *t = strtok_r(buf, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
        v = json_is_object(v) ? json_object_get(v, t) : NULL;
    return v;
}

/* Set o's dotted path to v (a new reference is taken), making the objects on the way. */
static void set_path(json_t *o, const char *path, json_t *v)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    char *dot = strchr(buf, '.');
    if (!dot) {
        json_object_set_new(o, buf, v);
        return;
    }
    *dot = 0;
    json_t *child = json_object_get(o, buf);
    if (!json_is_object(child))
        json_object_set_new(o, buf, child = json_object());
    set_path(child, dot + 1, v);
}

/* "Resource" -> "resource", the key of a metric's source object in both versions. */
static void source_key(const char *type, char out[32])
{
    snprintf(out, 32, "%s", type);
    if (out[0] >= 'A' && out[0] <= 'Z')
        out[0] = (char)(out[0] - 'A' + 'a');
}

/* One metric (spec or status) from one version's form to the other's. to_v2 picks the
 * direction; unknown types and fields are copied as they are. */
static json_t *convert_metric(const json_t *m, const path_pair *pairs, bool to_v2, bool spec)
{
    const char *type = json_string_value(json_object_get(m, "type"));
    if (!type)
        return json_deep_copy(m);
    char key[32];
    source_key(type, key);
    const json_t *src = json_object_get(m, key);
    json_t *out = json_pack("{s:s}", "type", type);
    if (!json_is_object(src)) {
        if (src)
            json_object_set_new(out, key, json_deep_copy(src));
        return out;
    }
    json_t *dst = json_object();
    bool known = false;
    for (const path_pair *p = pairs; p->type; p++) {
        if (strcmp(p->type, type))
            continue;
        known = true;
        json_t *v = get_path(src, to_v2 ? p->v1 : p->v2);
        if (v)
            set_path(dst, to_v2 ? p->v2 : p->v1, json_deep_copy(v));
    }
    if (!known) {
        json_decref(dst);
        json_object_set_new(out, key, json_deep_copy(src));
        return out;
    }
    if (to_v2 && spec) { /* v2 names what the target is */
        json_t *target = json_object_get(dst, "target");
        if (json_is_object(target))
            json_object_set_new(target, "type", json_string(json_object_get(target, "averageUtilization") ? "Utilization"
                                                            : json_object_get(target, "averageValue") ? "AverageValue"
                                                                                                      : "Value"));
    }
    json_object_set_new(out, key, dst);
    return out;
}

/* Whether a v2 metric spec (status) is the CPU utilization v1 has its own field for. */
static bool is_cpu_utilization(const json_t *m, bool spec)
{
    const char *type = json_string_value(json_object_get(m, "type"));
    const json_t *r = json_object_get(m, "resource");
    const char *name = json_string_value(json_object_get(r, "name"));
    if (!type || strcmp(type, "Resource") || !name || strcmp(name, "cpu"))
        return false;
    if (spec) {
        const char *tt = json_string_value(get_path(r, "target.type"));
        return tt && !strcmp(tt, "Utilization") && json_is_integer(get_path(r, "target.averageUtilization"));
    }
    return json_is_integer(get_path(r, "current.averageUtilization"));
}

static void set_annotation(json_t *obj, const char *key, const json_t *v)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta))
        json_object_set_new(obj, "metadata", meta = json_object());
    json_t *ann = json_object_get(meta, "annotations");
    if (!json_is_object(ann))
        json_object_set_new(meta, "annotations", ann = json_object());
    char *text = fl_json_dumps(v, NULL);
    json_object_set_new(ann, key, json_string(text));
    free(text);
}

/* The annotation key of obj parsed as JSON and removed, or NULL (absent). A value that is not
 * JSON of the wanted shape is an error naming the annotation. */
static int take_annotation(json_t *obj, const char *key, bool array, json_t **out, char **err)
{
    *out = NULL;
    json_t *ann = get_path(obj, "metadata.annotations");
    const char *text = json_string_value(json_object_get(ann, key));
    if (!text)
        return 0;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (!v || (array ? !json_is_array(v) : !json_is_object(v))) {
        json_decref(v);
        *err = fl_asprintf("metadata.annotations[%s]: Invalid value: must be a JSON %s", key,
                           array ? "list" : "object");
        return -1;
    }
    json_object_del(ann, key);
    if (!json_object_size(ann))
        json_object_del(json_object_get(obj, "metadata"), "annotations");
    *out = v;
    return 0;
}

static const char *const SPEC_V1_ONLY[] = {"targetCPUUtilizationPercentage", NULL};

json_t *fl_convert_hpa_to_v2(const json_t *v1, char **err)
{
    *err = NULL;
    json_t *out = json_deep_copy(v1);
    if (json_object_get(out, "apiVersion"))
        json_object_set_new(out, "apiVersion", json_string("autoscaling/v2"));
    json_t *extra = NULL, *behavior = NULL, *current = NULL, *conds = NULL;
    if (take_annotation(out, ANN_METRICS, true, &extra, err) ||
        take_annotation(out, ANN_BEHAVIOR, false, &behavior, err) ||
        take_annotation(out, ANN_CURRENT, true, &current, err) ||
        take_annotation(out, ANN_CONDITIONS, true, &conds, err)) {
        json_decref(extra);
        json_decref(behavior);
        json_decref(current);
        json_decref(out);
        return NULL;
    }
    json_t *spec = json_object_get(out, "spec");
    if (json_is_object(spec)) {
        json_t *cpu = json_object_get(spec, "targetCPUUtilizationPercentage");
        json_t *metrics = json_array();
        if (cpu && !json_is_null(cpu))
            json_array_append_new(metrics, json_pack("{s:s, s:{s:s, s:{s:s, s:O}}}", "type", "Resource", "resource",
                                                     "name", "cpu", "target", "type", "Utilization",
                                                     "averageUtilization", cpu));
        size_t i;
        json_t *m;
        json_array_foreach(extra, i, m) json_array_append_new(metrics, convert_metric(m, METRIC_SPEC, true, true));
        for (size_t k = 0; SPEC_V1_ONLY[k]; k++)
            json_object_del(spec, SPEC_V1_ONLY[k]);
        if (json_array_size(metrics))
            json_object_set_new(spec, "metrics", metrics);
        else
            json_decref(metrics);
        if (behavior)
            json_object_set(spec, "behavior", behavior);
    }
    json_t *st = json_object_get(out, "status");
    if (json_is_object(st)) {
        json_t *cpu = json_object_get(st, "currentCPUUtilizationPercentage");
        json_t *cm = json_array();
        if (cpu && !json_is_null(cpu))
            json_array_append_new(cm, json_pack("{s:s, s:{s:s, s:{s:O}}}", "type", "Resource", "resource", "name",
                                                "cpu", "current", "averageUtilization", cpu));
        size_t i;
        json_t *m;
        json_array_foreach(current, i, m) json_array_append_new(cm, convert_metric(m, METRIC_STATUS, true, false));
        json_object_del(st, "currentCPUUtilizationPercentage");
        if (json_array_size(cm))
            json_object_set_new(st, "currentMetrics", cm);
        else
            json_decref(cm);
        if (conds)
            json_object_set(st, "conditions", conds);
    }
    json_decref(extra);
    json_decref(behavior);
    json_decref(current);
    json_decref(conds);
    return out;
}

json_t *fl_convert_hpa_to_v1(const json_t *v2)
{
    json_t *out = json_deep_copy(v2);
    if (json_object_get(out, "apiVersion"))
        json_object_set_new(out, "apiVersion", json_string("autoscaling/v1"));
    json_t *spec = json_object_get(out, "spec");
    if (json_is_object(spec)) {
        json_t *metrics = json_object_get(spec, "metrics"), *others = json_array();
        bool cpu_done = false;
        size_t i;
        json_t *m;
        json_array_foreach(metrics, i, m) {
            if (!cpu_done && is_cpu_utilization(m, true)) {
                json_object_set(spec, "targetCPUUtilizationPercentage",
                                get_path(m, "resource.target.averageUtilization"));
                cpu_done = true;
            } else {
                json_array_append_new(others, convert_metric(m, METRIC_SPEC, false, true));
            }
        }
        if (json_array_size(others))
            set_annotation(out, ANN_METRICS, others);
        json_decref(others);
        json_t *behavior = json_object_get(spec, "behavior");
        if (behavior)
            set_annotation(out, ANN_BEHAVIOR, behavior);
        json_object_del(spec, "metrics");
        json_object_del(spec, "behavior");
    }
    json_t *st = json_object_get(out, "status");
    if (json_is_object(st)) {
        json_t *cm = json_object_get(st, "currentMetrics"), *others = json_array();
        bool cpu_done = false;
        size_t i;
        json_t *m;
        json_array_foreach(cm, i, m) {
            if (!cpu_done && is_cpu_utilization(m, false)) {
                json_object_set(st, "currentCPUUtilizationPercentage",
                                get_path(m, "resource.current.averageUtilization"));
                cpu_done = true;
            } else {
                json_array_append_new(others, convert_metric(m, METRIC_STATUS, false, false));
            }
        }
        if (json_array_size(others))
            set_annotation(out, ANN_CURRENT, others);
        json_decref(others);
        json_t *conds = json_object_get(st, "conditions");
        if (json_array_size(conds))
            set_annotation(out, ANN_CONDITIONS, conds);
        json_object_del(st, "currentMetrics");
        json_object_del(st, "conditions");
    }
    return out;
}
