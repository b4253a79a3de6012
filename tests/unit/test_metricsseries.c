/* test_metricsseries.c - the metrics way in (controllers/metricsseries.h): kube-state-metrics
 * series, as a Prometheus query API answers them, rebuilt into the object livestate.c judges.
 * One table per kind: each row the series of one object (as kube-state-metrics exports them)
 * beside the member object a watch would bring, and the state and reason both must get: the
 * same record through either way. Then answers that are not what they should be: each refused
 * with a reason, none crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/metricsseries.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "interp/livestate.h"
#include "testutil.h"

/* 2026-01-01T00:00:00Z */
#define NOW 1767225600000LL

/* The answer Prometheus gives for series written one a line in the text format
 * (`name{label="value",...} number`), each with cluster="c1" added. */
static json_t *answer_of(const char *series)
{
    json_t *result = json_array();
    const char *p = series;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char *line = fl_strndup(p, n);
        p += n + (eol ? 1 : 0);
        if (!*line) {
            free(line);
            continue;
        }
        json_t *labels = json_pack("{s:s}", "cluster", "c1");
        char *s = line, *brace = strchr(line, '{'), *sp = strrchr(line, ' ');
        assert_non_null(sp);
        *sp = '\0';
        if (brace) {
            *brace = '\0';
            char *l = brace + 1;
            while (*l && *l != '}') {
                char *eq = strchr(l, '=');
                assert_non_null(eq);
                *eq = '\0';
                char *v = eq + 2, *q = strchr(v, '"');
                assert_non_null(q);
                *q = '\0';
                json_object_set_new(labels, l, json_string(v));
                l = q + 1;
                if (*l == ',')
                    l++;
            }
        }
        json_object_set_new(labels, "__name__", json_string(s));
        json_array_append_new(result, json_pack("{s:o, s:[f,s]}", "metric", labels, "value", 1767225600.0, sp + 1));
        free(line);
    }
    return json_pack("{s:s, s:{s:s, s:o}}", "status", "success", "data", "resultType", "vector", "result", result);
}

typedef struct row {
    const char *what;
    const char *series; /* the object's series, one a line */
    const char *obj;    /* the member object (JSON with ' for "), the name "x" in "default" */
    enum fl_live_state state;
    const char *reason;
} row;

static void check_rows(size_t k, const row *rows, size_t n)
{
    const fl_mseries_kind *kd = &fl_mseries_kinds[k];
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        json_t *answer = answer_of(r->series), *objs = json_object();
        char *err = NULL;
        if (fl_mseries_fold(answer, k, objs, &err))
            fail_msg("%s: %s: refused: %s", kd->kind, r->what, err);
        char *key = fl_mseries_key(kd->kind, "default", "x");
        json_t *rebuilt = json_object_get(json_object_get(objs, "c1"), key);
        if (!rebuilt)
            fail_msg("%s: %s: no object from the series", kd->kind, r->what);
        fl_live via_metrics, via_watch;
        fl_live_judge(rebuilt, fl_json_str(rebuilt, "apiVersion"), fl_json_str(rebuilt, "kind"), NULL, NOW,
                      &via_metrics);
        json_t *obj = test_json(r->obj);
        fl_live_judge(obj, kd->api_version, kd->kind, NULL, NOW, &via_watch);
        if (via_watch.state != r->state || strcmp(via_watch.reason, r->reason))
            fail_msg("%s: %s: the watched object is %s/%s, the row wants %s/%s", kd->kind, r->what,
                     fl_live_state_name(via_watch.state), via_watch.reason, fl_live_state_name(r->state), r->reason);
        if (via_metrics.state != via_watch.state || strcmp(via_metrics.reason, via_watch.reason))
            fail_msg("%s: %s: through metrics %s/%s (%s), through the watch %s/%s; rebuilt: %s", kd->kind, r->what,
                     fl_live_state_name(via_metrics.state), via_metrics.reason, via_metrics.message,
                     fl_live_state_name(via_watch.state), via_watch.reason, json_dumps(rebuilt, JSON_COMPACT));
        /* the counts in the message are the same too (condition texts are not in the series) */
        if (!strstr(r->what, "text"))
            assert_string_equal(via_metrics.message, via_watch.message);
        free(key);
        free(err);
        json_decref(obj);
        json_decref(objs);
        json_decref(answer);
    }
}

#define CHECK(k, rows) check_rows(k, rows, sizeof rows / sizeof *rows)

#define DEP_SERIES(spec, st, upd, ready, avail, gen, obs)                                                             \
    "kube_deployment_spec_replicas{namespace=\"default\",deployment=\"x\"} " spec "\n"                               \
    "kube_deployment_status_replicas{namespace=\"default\",deployment=\"x\"} " st "\n"                               \
    "kube_deployment_status_replicas_updated{namespace=\"default\",deployment=\"x\"} " upd "\n"                      \
    "kube_deployment_status_replicas_ready{namespace=\"default\",deployment=\"x\"} " ready "\n"                      \
    "kube_deployment_status_replicas_available{namespace=\"default\",deployment=\"x\"} " avail "\n"                  \
    "kube_deployment_metadata_generation{namespace=\"default\",deployment=\"x\"} " gen "\n"                          \
    "kube_deployment_status_observed_generation{namespace=\"default\",deployment=\"x\"} " obs "\n"
static void test_deployment_series_give_the_watched_deployments_record(void **state)
{
    (void)state;
    static const row rows[] = {
        {"rolled out", DEP_SERIES("2", "2", "2", "2", "2", "3", "3")
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Available\",status=\"true\",reason=\"MinimumReplicasAvailable\"} 1\n"
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Available\",status=\"false\",reason=\"MinimumReplicasAvailable\"} 0\n"
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Progressing\",status=\"true\",reason=\"NewReplicaSetAvailable\"} 1\n"
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Progressing\",status=\"false\",reason=\"NewReplicaSetAvailable\"} 0\n",
         "{'metadata':{'generation':3},'spec':{'replicas':2,'progressDeadlineSeconds':600},'status':{'observedGeneration':3,"
         "'replicas':2,'updatedReplicas':2,'readyReplicas':2,'availableReplicas':2,'conditions':["
         "{'type':'Available','status':'True','reason':'MinimumReplicasAvailable'},"
         "{'type':'Progressing','status':'True','reason':'NewReplicaSetAvailable'}]}}",
         FL_LIVE_CURRENT, ""},
        {"a generation not observed yet", DEP_SERIES("2", "2", "2", "2", "2", "4", "3"),
         "{'metadata':{'generation':4},'spec':{'replicas':2},'status':{'observedGeneration':3,'replicas':2,"
         "'updatedReplicas':2,'readyReplicas':2,'availableReplicas':2}}",
         FL_LIVE_IN_PROGRESS, "ObservedGenerationOld"},
        {"no observed generation yet (kube-state-metrics says 0)", DEP_SERIES("3", "0", "0", "0", "0", "1", "0"),
         "{'metadata':{'generation':1},'spec':{'replicas':3}}", FL_LIVE_IN_PROGRESS, "LessReplicas"},
        {"one ready of three", DEP_SERIES("3", "3", "3", "1", "1", "1", "1"),
         "{'metadata':{'generation':1},'spec':{'replicas':3},'status':{'observedGeneration':1,'replicas':3,"
         "'updatedReplicas':3,'readyReplicas':1,'availableReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessAvailable"},
        {"old replicas terminating", DEP_SERIES("2", "3", "2", "2", "2", "2", "2"),
         "{'metadata':{'generation':2},'spec':{'replicas':2},'status':{'observedGeneration':2,'replicas':3,"
         "'updatedReplicas':2,'readyReplicas':2,'availableReplicas':2}}",
         FL_LIVE_IN_PROGRESS, "ExtraPods"},
        {"past its deadline (text)", DEP_SERIES("2", "2", "2", "0", "0", "1", "1")
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Progressing\",status=\"true\",reason=\"ProgressDeadlineExceeded\"} 0\n"
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Progressing\",status=\"false\",reason=\"ProgressDeadlineExceeded\"} 1\n"
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Progressing\",status=\"unknown\",reason=\"ProgressDeadlineExceeded\"} 0\n",
         "{'metadata':{'generation':1},'spec':{'replicas':2,'progressDeadlineSeconds':3},'status':{'observedGeneration':1,"
         "'replicas':2,'updatedReplicas':2,'conditions':[{'type':'Progressing','status':'False',"
         "'reason':'ProgressDeadlineExceeded','message':'ReplicaSet x-1 has timed out progressing.'}]}}",
         FL_LIVE_FAILED, "ProgressDeadlineExceeded"},
        {"all ready, the new ReplicaSet not reported available yet", DEP_SERIES("1", "1", "1", "1", "1", "1", "1")
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Progressing\",status=\"true\",reason=\"ReplicaSetUpdated\"} 1\n"
         "kube_deployment_status_condition{namespace=\"default\",deployment=\"x\",condition=\"Available\",status=\"true\",reason=\"MinimumReplicasAvailable\"} 1\n",
         "{'metadata':{'generation':1},'spec':{'replicas':1,'progressDeadlineSeconds':600},'status':{'observedGeneration':1,"
         "'replicas':1,'updatedReplicas':1,'readyReplicas':1,'availableReplicas':1,'conditions':["
         "{'type':'Progressing','status':'True','reason':'ReplicaSetUpdated'},"
         "{'type':'Available','status':'True','reason':'MinimumReplicasAvailable'}]}}",
         FL_LIVE_IN_PROGRESS, "ReplicaSetNotAvailable"},
        {"being deleted", DEP_SERIES("1", "1", "1", "1", "1", "1", "1")
         "kube_deployment_deletion_timestamp{namespace=\"default\",deployment=\"x\"} 1767225500\n",
         "{'metadata':{'generation':1,'deletionTimestamp':'2025-12-31T23:58:20Z'},'spec':{'replicas':1}}",
         FL_LIVE_TERMINATING, "DeletionTimestampSet"},
    };
    CHECK(0, rows);
}

#define STS(name, v) "kube_statefulset_" name "{namespace=\"default\",statefulset=\"x\"} " v "\n"

static void test_statefulset_series_give_the_watched_statefulsets_record(void **state)
{
    (void)state;
    static const row rows[] = {
        {"rolled out", STS("replicas", "3") STS("status_replicas", "3") STS("status_replicas_ready", "3")
         STS("status_replicas_current", "3") STS("status_replicas_updated", "3") STS("metadata_generation", "2")
         STS("status_observed_generation", "2")
         "kube_statefulset_status_current_revision{namespace=\"default\",statefulset=\"x\",revision=\"x-1\"} 1\n"
         "kube_statefulset_status_update_revision{namespace=\"default\",statefulset=\"x\",revision=\"x-1\"} 1\n",
         "{'metadata':{'generation':2},'spec':{'replicas':3},'status':{'observedGeneration':2,'replicas':3,"
         "'readyReplicas':3,'currentReplicas':3,'updatedReplicas':3,'currentRevision':'x-1','updateRevision':'x-1'}}",
         FL_LIVE_CURRENT, ""},
        {"two ready of three", STS("replicas", "3") STS("status_replicas", "3") STS("status_replicas_ready", "2"),
         "{'spec':{'replicas':3},'status':{'replicas':3,'readyReplicas':2}}", FL_LIVE_IN_PROGRESS, "LessReady"},
        {"a revision rolling out", STS("replicas", "1") STS("status_replicas", "1") STS("status_replicas_ready", "1")
         STS("status_replicas_current", "1")
         "kube_statefulset_status_current_revision{namespace=\"default\",statefulset=\"x\",revision=\"x-1\"} 1\n"
         "kube_statefulset_status_update_revision{namespace=\"default\",statefulset=\"x\",revision=\"x-2\"} 1\n",
         "{'spec':{'replicas':1},'status':{'replicas':1,'readyReplicas':1,'currentReplicas':1,"
         "'currentRevision':'x-1','updateRevision':'x-2'}}",
         FL_LIVE_IN_PROGRESS, "RevisionMismatch"},
    };
    CHECK(1, rows);
}

#define DS(name, v) "kube_daemonset_" name "{namespace=\"default\",daemonset=\"x\"} " v "\n"

static void test_daemonset_series_give_the_watched_daemonsets_record(void **state)
{
    (void)state;
    static const row rows[] = {
        {"on every node", DS("status_desired_number_scheduled", "3") DS("status_current_number_scheduled", "3")
         DS("status_updated_number_scheduled", "3") DS("status_number_available", "3") DS("status_number_ready", "3")
         DS("metadata_generation", "1") DS("status_observed_generation", "1"),
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':3,'updatedNumberScheduled':3,'numberAvailable':3,'numberReady':3}}",
         FL_LIVE_CURRENT, ""},
        {"not observed yet (kube-state-metrics says 0)", DS("metadata_generation", "1")
         DS("status_observed_generation", "0") DS("status_desired_number_scheduled", "0"),
         "{'metadata':{'generation':1}}", FL_LIVE_IN_PROGRESS, "NoObservedGeneration"},
        {"one node short", DS("status_desired_number_scheduled", "3") DS("status_current_number_scheduled", "3")
         DS("status_updated_number_scheduled", "3") DS("status_number_available", "2") DS("status_number_ready", "2")
         DS("metadata_generation", "1") DS("status_observed_generation", "1"),
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':3,'updatedNumberScheduled':3,'numberAvailable':2,'numberReady':2}}",
         FL_LIVE_IN_PROGRESS, "LessAvailable"},
    };
    CHECK(2, rows);
}

#define JOB(name, v) "kube_job_" name "{namespace=\"default\",job_name=\"x\"} " v "\n"

static void test_job_series_give_the_watched_jobs_record(void **state)
{
    (void)state;
    static const row rows[] = {
        {"complete", JOB("spec_completions", "1") JOB("status_succeeded", "1")
         JOB("status_start_time", "1767225000")
         "kube_job_complete{namespace=\"default\",job_name=\"x\",condition=\"true\"} 1\n"
         "kube_job_complete{namespace=\"default\",job_name=\"x\",condition=\"false\"} 0\n",
         "{'spec':{'completions':1},'status':{'succeeded':1,'startTime':'2025-12-31T23:50:00Z','conditions':["
         "{'type':'Complete','status':'True'}]}}",
         FL_LIVE_CURRENT, ""},
        {"running", JOB("spec_completions", "3") JOB("spec_parallelism", "1") JOB("status_succeeded", "1")
         JOB("status_start_time", "1767225000"),
         "{'spec':{'completions':3,'parallelism':1},'status':{'succeeded':1,'startTime':'2025-12-31T23:50:00Z'}}",
         FL_LIVE_IN_PROGRESS, "JobRunning"},
        {"not started", JOB("spec_completions", "1") JOB("status_succeeded", "0"),
         "{'spec':{'completions':1},'status':{'succeeded':0}}", FL_LIVE_IN_PROGRESS, "JobNotStarted"},
        {"failed (text)", JOB("spec_completions", "1") JOB("status_start_time", "1767225000")
         "kube_job_failed{namespace=\"default\",job_name=\"x\",condition=\"true\",reason=\"BackoffLimitExceeded\"} 1\n",
         "{'spec':{'completions':1},'status':{'startTime':'2025-12-31T23:50:00Z','conditions':["
         "{'type':'Failed','status':'True','reason':'BackoffLimitExceeded','message':'Job has reached the specified "
         "backoff limit'}]}}",
         FL_LIVE_FAILED, "BackoffLimitExceeded"},
    };
    CHECK(3, rows);
}

#define POD(name, v) "kube_pod_" name "{namespace=\"default\",pod=\"x\"} " v "\n"
#define PHASE(p, v) "kube_pod_status_phase{namespace=\"default\",pod=\"x\",phase=\"" p "\"} " v "\n"

static void test_pod_series_give_the_watched_pods_record(void **state)
{
    (void)state;
    static const row rows[] = {
        {"running and ready", PHASE("Pending", "0") PHASE("Running", "1") PHASE("Failed", "0")
         "kube_pod_status_ready{namespace=\"default\",pod=\"x\",condition=\"true\"} 1\n"
         "kube_pod_status_ready{namespace=\"default\",pod=\"x\",condition=\"false\"} 0\n",
         "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'True'}]}}", FL_LIVE_CURRENT, ""},
        {"running, not ready", PHASE("Running", "1")
         "kube_pod_status_ready{namespace=\"default\",pod=\"x\",condition=\"true\"} 0\n"
         "kube_pod_status_ready{namespace=\"default\",pod=\"x\",condition=\"false\"} 1\n",
         "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'False'}]}}", FL_LIVE_IN_PROGRESS,
         "PodRunningNotReady"},
        {"crash looping", PHASE("Running", "1")
         "kube_pod_container_status_waiting_reason{namespace=\"default\",pod=\"x\",container=\"app\",reason=\"CrashLoopBackOff\"} 1\n",
         "{'status':{'phase':'Running','containerStatuses':[{'name':'app','state':{'waiting':{'reason':"
         "'CrashLoopBackOff'}}}]}}",
         FL_LIVE_FAILED, "CrashLoopBackOff"},
        {"an image that never pulls", PHASE("Pending", "1")
         "kube_pod_container_status_waiting_reason{namespace=\"default\",pod=\"x\",container=\"app\",reason=\"ImagePullBackOff\"} 1\n",
         "{'status':{'phase':'Pending','containerStatuses':[{'name':'app','state':{'waiting':{'reason':"
         "'ImagePullBackOff'}}}]}}",
         FL_LIVE_IN_PROGRESS, "PodPending"},
        {"unschedulable for long (text)", PHASE("Pending", "1") POD("created", "1767225000")
         "kube_pod_status_scheduled{namespace=\"default\",pod=\"x\",condition=\"false\"} 1\n"
         "kube_pod_status_unschedulable{namespace=\"default\",pod=\"x\"} 1\n",
         "{'metadata':{'creationTimestamp':'2025-12-31T23:50:00Z'},'status':{'phase':'Pending','conditions':["
         "{'type':'PodScheduled','status':'False','reason':'Unschedulable','message':'0/3 nodes are available'}]}}",
         FL_LIVE_FAILED, "PodUnschedulable"},
        {"unschedulable, not for long", PHASE("Pending", "1") POD("created", "1767225595")
         "kube_pod_status_unschedulable{namespace=\"default\",pod=\"x\"} 1\n",
         "{'metadata':{'creationTimestamp':'2025-12-31T23:59:55Z'},'status':{'phase':'Pending','conditions':["
         "{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}",
         FL_LIVE_IN_PROGRESS, "PodNotScheduled"},
        {"succeeded", PHASE("Succeeded", "1") PHASE("Running", "0"), "{'status':{'phase':'Succeeded'}}",
         FL_LIVE_CURRENT, ""},
        {"failed (text)", PHASE("Failed", "1"), "{'status':{'phase':'Failed'}}", FL_LIVE_FAILED, "PodFailed"},
    };
    CHECK(4, rows);
}

static void test_series_of_other_clusters_kinds_and_names_stay_apart(void **state)
{
    (void)state;
    json_t *answer = answer_of("kube_deployment_spec_replicas{namespace=\"a\",deployment=\"x\"} 2\n"
                               "kube_deployment_spec_replicas{namespace=\"b\",deployment=\"x\"} 3\n"
                               "kube_pod_status_phase{namespace=\"a\",pod=\"x\",phase=\"Running\"} 1\n"
                               "kube_deployment_spec_replicas{namespace=\"a\"} 7\n"
                               "kube_deployment_unknown_series{namespace=\"a\",deployment=\"x\"} 9\n");
    json_t *r0 = json_array_get(json_object_get(json_object_get(answer, "data"), "result"), 1);
    json_object_set_new(json_object_get(r0, "metric"), "cluster", json_string("c2"));
    json_t *objs = json_object();
    assert_int_equal(fl_mseries_fold(answer, 0, objs, NULL), 0);
    char *ka = fl_mseries_key("Deployment", "a", "x"), *kb = fl_mseries_key("Deployment", "b", "x");
    assert_int_equal(fl_json_path_int(json_object_get(json_object_get(objs, "c1"), ka), "spec.replicas", 0), 2);
    assert_int_equal(fl_json_path_int(json_object_get(json_object_get(objs, "c2"), kb), "spec.replicas", 0), 3);
    assert_int_equal(json_object_size(json_object_get(objs, "c1")), 1); /* the Pod and the nameless are not */
    free(ka);
    free(kb);
    json_decref(objs);
    json_decref(answer);
    /* the kinds a manifest names */
    assert_int_equal(fl_mseries_kind_of("apps/v1", "Deployment"), 0);
    assert_int_equal(fl_mseries_kind_of("batch/v1", "Job"), 3);
    assert_int_equal(fl_mseries_kind_of("v1", "Pod"), 4);
    assert_int_equal(fl_mseries_kind_of("example.com/v1", "Deployment"), -1);
    assert_int_equal(fl_mseries_kind_of("v1", "ConfigMap"), -1);
}

static void test_the_queries_ask_for_every_cluster_at_once(void **state)
{
    (void)state;
    json_t *names = json_pack("[ss]", "member1", "member-2");
    char *q = fl_mseries_query(0, names), *h = fl_mseries_heartbeat_query(names);
    assert_string_equal(q, "{__name__=~\"kube_deployment_.+\",cluster=~\"member1|member-2\"}");
    assert_string_equal(h, "max by (cluster) (timestamp(kube_namespace_created{cluster=~\"member1|member-2\"}))");
    free(q);
    free(h);
    json_decref(names);
}

/* Answers that are not a good instant vector: refused with a reason saying what, never a crash. */
static void test_malformed_answers_are_refused_with_a_reason(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"<html>502 Bad Gateway</html>", "not JSON"},
        {"", "not JSON"},
        {"[1,2]", "not a JSON object"},
        {"{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 3\"}",
         "Prometheus answered an error: bad_data: parse error at char 3"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}", "data.resultType"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}", "data.result: not an array"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[7]}}", "data.result[0].metric"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"a\":1},"
         "\"value\":[1,\"1\"]}]}}",
         "data.result[0].metric.a: not a string"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,1]}]}}",
         "data.result[0].value"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,\"twelve\"]}]}}",
         "is not a number"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[\"now\",\"1\"]}]}}",
         "data.result[0].value"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,\"1\",2]}]}}",
         "data.result[0].value"},
        {"{\"status\":\"maybe\"}", "status"},
        {"{\"status\":\"success\",\"status\":\"error\"}", "not JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *objs = json_object();
        char *err = NULL;
        for (size_t k = 0; k < fl_mseries_nkinds; k++) {
            assert_int_equal(fl_mseries_fold_text(bad[i].text, strlen(bad[i].text), k, objs, &err), FL_EINVAL);
            if (!err || !strstr(err, bad[i].why))
                fail_msg("%s: got \"%s\", want it to say \"%s\"", bad[i].text, err ? err : "(none)", bad[i].why);
        }
        json_t *heard = json_object();
        json_t *answer = json_loads(bad[i].text, 0, NULL);
        if (answer)
            assert_int_equal(fl_mseries_heartbeats(answer, heard, &err), FL_EINVAL);
        json_decref(answer);
        json_decref(heard);
        free(err);
        json_decref(objs);
    }
}

static void test_a_huge_answer_is_bounded(void **state)
{
    (void)state;
    /* a label longer than the bound */
    char *big = fl_malloc(FL_MSERIES_MAX_LABEL + 2);
    memset(big, 'x', FL_MSERIES_MAX_LABEL + 1);
    big[FL_MSERIES_MAX_LABEL + 1] = '\0';
    json_t *answer = json_pack("{s:s, s:{s:s, s:[{s:{s:s, s:s, s:s, s:s}, s:[i,s]}]}}", "status", "success", "data",
                               "resultType", "vector", "result", "metric", "__name__",
                               "kube_deployment_spec_replicas", "cluster", "c1", "namespace", "default", "deployment",
                               big, "value", 1, "1");
    json_t *objs = json_object();
    char *err = NULL;
    assert_int_equal(fl_mseries_fold(answer, 0, objs, &err), FL_EINVAL);
    assert_non_null(strstr(err, "longer than"));
    free(err);
    free(big);
    json_decref(answer);
    json_decref(objs);
    /* many series: folded, each its own object, nothing lost */
    json_t *result = json_array();
    for (int i = 0; i < 20000; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%d", i);
        json_array_append_new(result, json_pack("{s:{s:s, s:s, s:s, s:s}, s:[f,s]}", "metric", "__name__",
                                                "kube_deployment_status_replicas", "cluster", "c1", "namespace", "ns",
                                                "deployment", name, "value", 1.5, "4"));
    }
    answer = json_pack("{s:s, s:{s:s, s:o}}", "status", "success", "data", "resultType", "vector", "result", result);
    objs = json_object();
    assert_int_equal(fl_mseries_fold(answer, 0, objs, NULL), 0);
    assert_int_equal(json_object_size(json_object_get(objs, "c1")), 20000);
    json_decref(answer);
    json_decref(objs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deployment_series_give_the_watched_deployments_record),
        cmocka_unit_test(test_statefulset_series_give_the_watched_statefulsets_record),
        cmocka_unit_test(test_daemonset_series_give_the_watched_daemonsets_record),
        cmocka_unit_test(test_job_series_give_the_watched_jobs_record),
        cmocka_unit_test(test_pod_series_give_the_watched_pods_record),
        cmocka_unit_test(test_series_of_other_clusters_kinds_and_names_stay_apart),
        cmocka_unit_test(test_the_queries_ask_for_every_cluster_at_once),
        cmocka_unit_test(test_malformed_answers_are_refused_with_a_reason),
        cmocka_unit_test(test_a_huge_answer_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
