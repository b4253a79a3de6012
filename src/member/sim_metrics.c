/* sim_metrics.c - a simulated cluster's kube-state-metrics: the series a kube-state-metrics
 * would export for the workloads the cluster holds, in the Prometheus text format, served by
 * the member host at /clusters/<name>/metrics (member.c).
 *
 * Read from the cluster's store at each scrape (no state kept; O(objects)), with
 * kube-state-metrics' names and labels: kube_deployment_*, kube_statefulset_*,
 * kube_daemonset_*, kube_job_*, kube_pod_* for the fields a workload's status reports, and
 * kube_namespace_created for every namespace (the heartbeat the metrics way in looks for: a
 * cluster always has namespaces). As kube-state-metrics does, no `cluster` label: the scrape
 * configuration adds it (a target label), since an exporter does not know its cluster's name
 * in the fleet. Conditions are exported as kube-state-metrics does, one series per possible
 * status (true, false, unknown) with 1 on the one that holds, with the condition's reason as a
 * label. A status field the object does not have yet is left out (kube-state-metrics writes 0:
 * the reader treats an observed generation of 0 as none). Used by the tests and `flotilla up`
 * to run the metrics way in (docs/status.md, "The metrics way in") against a real Prometheus. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "member/sim_priv.h"
#include "store/store.h"

/* A label value, escaped as the text format wants (backslash, quote, newline). */
static void label(fl_strbuf *b, const char *name, const char *value, bool first)
{
    fl_strbuf_printf(b, "%s%s=\"", first ? "" : ",", name);
    for (const char *s = value ? value : ""; *s; s++) {
        if (*s == '\\' || *s == '"')
            fl_strbuf_addc(b, '\\');
        if (*s == '\n')
            fl_strbuf_adds(b, "\\n");
        else
            fl_strbuf_addc(b, *s);
    }
    fl_strbuf_addc(b, '"');
}

/* The samples of one kind, grouped by metric as the text format wants them: one buffer per
 * series name, in the order the names first came. */
#define MAX_METRICS 16
typedef struct groups {
    const char *suffix[MAX_METRICS];
    fl_strbuf text[MAX_METRICS];
    size_t n;
} groups;

/* One sample: name{namespace="..",<who>="..",extra...} value */
typedef struct obj_ctx {
    groups *g;
    const char *prefix, *who_label; /* "kube_deployment_", "deployment" */
    const char *ns, *name;
} obj_ctx;

static void sample(obj_ctx *o, const char *suffix, const char *const *extra, double v)
{
    size_t i = 0;
    while (i < o->g->n && strcmp(o->g->suffix[i], suffix))
        i++;
    if (i == o->g->n) {
        if (i == MAX_METRICS)
            return; /* more names than any kind has */
        o->g->suffix[o->g->n++] = suffix;
    }
    fl_strbuf *b = &o->g->text[i];
    fl_strbuf_printf(b, "%s%s{", o->prefix, suffix);
    label(b, "namespace", o->ns, true);
    label(b, o->who_label, o->name, false);
    for (size_t j = 0; extra && extra[j]; j += 2)
        label(b, extra[j], extra[j + 1], false);
    fl_strbuf_printf(b, "} %.17g\n", v);
}

/* An integer field, when the object has it. */
static void int_field(obj_ctx *o, const json_t *obj, const char *path, const char *suffix)
{
    const json_t *v = fl_json_path(obj, path);
    if (json_is_integer(v))
        sample(o, suffix, NULL, (double)json_integer_value(v));
}

/* A time field as unix seconds, when the object has it. */
static void time_field(obj_ctx *o, const json_t *obj, const char *path, const char *suffix)
{
    int64_t ms = fl_time_parse(fl_json_path_str(obj, path));
    if (ms > 0)
        sample(o, suffix, NULL, (double)(ms / 1000));
}

/* kube-state-metrics' condition series: one per status, 1 on the one that holds. Every
 * condition: {condition=type, status=true|false|unknown, reason}; one condition `only` (a
 * Job's Complete, a Pod's Ready): {condition=true|false|unknown, reason}. */
static void conditions(obj_ctx *o, const json_t *obj, const char *suffix, const char *only)
{
    static const char *const statuses[][2] = {{"True", "true"}, {"False", "false"}, {"Unknown", "unknown"}};
    size_t i;
    const json_t *c;
    json_array_foreach(fl_json_path(obj, "status.conditions"), i, c) {
        const char *type = fl_json_str(c, "type"), *st = fl_json_str(c, "status"), *why = fl_json_str(c, "reason");
        if (!type || !st || (only && strcmp(type, only)))
            continue;
        for (size_t s = 0; s < 3; s++) {
            const char *every[] = {"condition", type, "status", statuses[s][1], "reason", why ? why : "", NULL};
            const char *one[] = {"condition", statuses[s][1], "reason", why ? why : "", NULL};
            sample(o, suffix, only ? one : every, !strcmp(st, statuses[s][0]) ? 1 : 0);
        }
    }
}

static void deployment(obj_ctx *o, const json_t *obj)
{
    int_field(o, obj, "spec.replicas", "spec_replicas");
    int_field(o, obj, "status.replicas", "status_replicas");
    int_field(o, obj, "status.updatedReplicas", "status_replicas_updated");
    int_field(o, obj, "status.readyReplicas", "status_replicas_ready");
    int_field(o, obj, "status.availableReplicas", "status_replicas_available");
    int_field(o, obj, "status.observedGeneration", "status_observed_generation");
    int_field(o, obj, "metadata.generation", "metadata_generation");
    conditions(o, obj, "status_condition", NULL);
    time_field(o, obj, "metadata.deletionTimestamp", "deletion_timestamp");
}

static void statefulset(obj_ctx *o, const json_t *obj)
{
    int_field(o, obj, "spec.replicas", "replicas");
    int_field(o, obj, "status.replicas", "status_replicas");
    int_field(o, obj, "status.readyReplicas", "status_replicas_ready");
    int_field(o, obj, "status.currentReplicas", "status_replicas_current");
    int_field(o, obj, "status.updatedReplicas", "status_replicas_updated");
    int_field(o, obj, "status.observedGeneration", "status_observed_generation");
    int_field(o, obj, "metadata.generation", "metadata_generation");
    static const char *const revs[][2] = {{"status.currentRevision", "status_current_revision"},
                                          {"status.updateRevision", "status_update_revision"}};
    for (size_t i = 0; i < 2; i++) {
        const char *r = fl_json_path_str(obj, revs[i][0]);
        if (r) {
            const char *extra[] = {"revision", r, NULL};
            sample(o, revs[i][1], extra, 1);
        }
    }
    time_field(o, obj, "metadata.deletionTimestamp", "deletion_timestamp");
}

static void daemonset(obj_ctx *o, const json_t *obj)
{
    int_field(o, obj, "status.desiredNumberScheduled", "status_desired_number_scheduled");
    int_field(o, obj, "status.currentNumberScheduled", "status_current_number_scheduled");
    int_field(o, obj, "status.updatedNumberScheduled", "status_updated_number_scheduled");
    int_field(o, obj, "status.numberAvailable", "status_number_available");
    int_field(o, obj, "status.numberReady", "status_number_ready");
    int_field(o, obj, "status.observedGeneration", "status_observed_generation");
    int_field(o, obj, "metadata.generation", "metadata_generation");
    time_field(o, obj, "metadata.deletionTimestamp", "deletion_timestamp");
}

static void job(obj_ctx *o, const json_t *obj)
{
    int_field(o, obj, "spec.parallelism", "spec_parallelism");
    int_field(o, obj, "spec.completions", "spec_completions");
    int_field(o, obj, "status.succeeded", "status_succeeded");
    time_field(o, obj, "status.startTime", "status_start_time");
    conditions(o, obj, "complete", "Complete");
    conditions(o, obj, "failed", "Failed");
    time_field(o, obj, "metadata.deletionTimestamp", "deletion_timestamp");
}

static void waiting(obj_ctx *o, const json_t *obj, const char *list, const char *suffix)
{
    size_t i;
    const json_t *cs;
    json_array_foreach(fl_json_path(obj, list), i, cs) {
        const char *why = fl_json_path_str(cs, "state.waiting.reason"), *name = fl_json_str(cs, "name");
        if (why && name) {
            const char *extra[] = {"container", name, "reason", why, NULL};
            sample(o, suffix, extra, 1);
        }
    }
}

static void pod(obj_ctx *o, const json_t *obj)
{
    static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
    const char *phase = fl_json_path_str(obj, "status.phase");
    for (size_t i = 0; phase && i < 5; i++) {
        const char *extra[] = {"phase", phases[i], NULL};
        sample(o, "status_phase", extra, !strcmp(phase, phases[i]) ? 1 : 0);
    }
    conditions(o, obj, "status_ready", "Ready");
    conditions(o, obj, "status_scheduled", "PodScheduled");
    size_t i;
    const json_t *c;
    json_array_foreach(fl_json_path(obj, "status.conditions"), i, c) {
        const char *type = fl_json_str(c, "type"), *st = fl_json_str(c, "status"), *why = fl_json_str(c, "reason");
        if (type && st && why && !strcmp(type, "PodScheduled") && !strcmp(st, "False") && !strcmp(why, "Unschedulable"))
            sample(o, "status_unschedulable", NULL, 1);
    }
    waiting(o, obj, "status.containerStatuses", "container_status_waiting_reason");
    waiting(o, obj, "status.initContainerStatuses", "init_container_status_waiting_reason");
    time_field(o, obj, "metadata.creationTimestamp", "created");
    time_field(o, obj, "metadata.deletionTimestamp", "deletion_timestamp");
}

typedef struct exporter {
    const char *store_prefix, *prefix, *who_label;
    void (*fn)(obj_ctx *o, const json_t *obj);
} exporter;

static const exporter EXPORTERS[] = {
    {"/apps/deployments/", "kube_deployment_", "deployment", deployment},
    {"/apps/statefulsets/", "kube_statefulset_", "statefulset", statefulset},
    {"/apps/daemonsets/", "kube_daemonset_", "daemonset", daemonset},
    {"/batch/jobs/", "kube_job_", "job_name", job},
    {"/core/pods/", "kube_pod_", "pod", pod},
};

typedef struct scan {
    groups *g;
    const exporter *e;
} scan;

static bool one(void *ctx, const char *key, const fl_kv *kv)
{
    scan *s = ctx;
    json_t *obj = fl_json_load(kv->value->data, kv->value->len);
    const char *ns = fl_json_meta(obj, "namespace"), *name = fl_json_meta(obj, "name");
    if (ns && name) {
        obj_ctx o = {s->g, s->e->prefix, s->e->who_label, ns, name};
        s->e->fn(&o, obj);
    }
    json_decref(obj);
    return true;
}

static bool namespace_one(void *ctx, const char *key, const fl_kv *kv)
{
    fl_strbuf *b = ctx;
    json_t *obj = fl_json_load(kv->value->data, kv->value->len);
    const char *name = fl_json_meta(obj, "name");
    int64_t ms = fl_time_parse(fl_json_meta(obj, "creationTimestamp"));
    if (name) {
        fl_strbuf_adds(b, "kube_namespace_created{");
        label(b, "namespace", name, true);
        fl_strbuf_printf(b, "} %lld\n", (long long)(ms > 0 ? ms / 1000 : 0));
    }
    json_decref(obj);
    return true;
}

char *fl_sim_metrics_text(fl_api *api, size_t *len)
{
    fl_strbuf b = FL_STRBUF_INIT;
    int64_t rev;
    fl_strbuf_adds(&b, "# HELP kube_namespace_created Unix creation timestamp\n# TYPE kube_namespace_created gauge\n");
    fl_store_list(api->store, "/core/namespaces/", NULL, 0, 0, namespace_one, &b, &rev, NULL);
    for (size_t i = 0; i < sizeof EXPORTERS / sizeof *EXPORTERS; i++) {
        groups g = {0};
        scan s = {&g, &EXPORTERS[i]};
        fl_store_list(api->store, EXPORTERS[i].store_prefix, NULL, 0, 0, one, &s, &rev, NULL);
        for (size_t j = 0; j < g.n; j++) {
            fl_strbuf_printf(&b, "# HELP %s%s As kube-state-metrics exports it, for the simulated cluster.\n",
                             EXPORTERS[i].prefix, g.suffix[j]);
            fl_strbuf_printf(&b, "# TYPE %s%s gauge\n", EXPORTERS[i].prefix, g.suffix[j]);
            fl_strbuf_add(&b, fl_strbuf_str(&g.text[j]), g.text[j].len);
            free(g.text[j].p);
        }
    }
    *len = b.len;
    return fl_strbuf_take(&b);
}
