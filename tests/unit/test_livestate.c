/* test_livestate.c - the live state of a member object (interp/livestate.h): kstatus's rules
 * as tables, one per kind, each row an object and the state and reason it must get; then
 * custom kinds through the interpreter, and the manifestStatuses entry that carries it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/workstatus.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "interp/interp.h"
#include "interp/livestate.h"
#include "testutil.h"

/* 2026-01-01T00:00:00Z: the clock of every row */
#define NOW 1767225600000LL

typedef struct row {
    const char *what;           /* the edge case, for the failure message */
    const char *api_version, *kind;
    const char *obj;            /* JSON with ' for ", NULL: not found */
    enum fl_live_state state;
    const char *reason;         /* "" when none */
} row;

static void check_rows(const row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        json_t *obj = r->obj ? test_json(r->obj) : NULL;
        fl_live live;
        fl_live_judge(obj, r->api_version, r->kind, NULL, NOW, &live);
        if (live.state != r->state || strcmp(live.reason, r->reason))
            fail_msg("%s %s: %s: got %s/%s (%s), want %s/%s", r->api_version, r->kind, r->what,
                     fl_live_state_name(live.state), live.reason, live.message, fl_live_state_name(r->state),
                     r->reason);
        assert_true(strlen(live.message) < FL_LIVE_MESSAGE_MAX);
        assert_null(strchr(live.message, '\n'));
        json_decref(obj);
    }
}

#define CHECK(rows) check_rows(rows, sizeof rows / sizeof *rows)

static void test_generic_rules_come_before_the_kind(void **state)
{
    (void)state;
    static const row rows[] = {
        {"no object", "apps/v1", "Deployment", NULL, FL_LIVE_NOT_FOUND, ""},
        {"not an object", "v1", "ConfigMap", "[1]", FL_LIVE_UNKNOWN, "NotAnObject"},
        {"deletionTimestamp", "apps/v1", "Deployment",
         "{'metadata':{'deletionTimestamp':'2026-01-01T00:00:00Z','generation':1},'status':{'observedGeneration':1}}",
         FL_LIVE_TERMINATING, "DeletionTimestampSet"},
        {"generation ahead of observedGeneration", "apps/v1", "Deployment",
         "{'metadata':{'generation':3},'spec':{'replicas':1},'status':{'observedGeneration':2,'replicas':1,"
         "'updatedReplicas':1,'readyReplicas':1,'availableReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "ObservedGenerationOld"},
        {"no observedGeneration: not checked", "example.io/v1", "Widget", "{'metadata':{'generation':3}}",
         FL_LIVE_CURRENT, ""},
        {"Reconciling=True", "example.io/v1", "Widget",
         "{'status':{'conditions':[{'type':'Reconciling','status':'True','reason':'Scaling'}]}}",
         FL_LIVE_IN_PROGRESS, "Scaling"},
        {"Reconciling=True without a reason", "example.io/v1", "Widget",
         "{'status':{'conditions':[{'type':'Reconciling','status':'True'}]}}", FL_LIVE_IN_PROGRESS, "Reconciling"},
        {"Stalled=True", "example.io/v1", "Widget",
         "{'status':{'conditions':[{'type':'Stalled','status':'True','reason':'QuotaExceeded','message':'m'}]}}",
         FL_LIVE_FAILED, "QuotaExceeded"},
        {"Stalled=False", "example.io/v1", "Widget",
         "{'status':{'conditions':[{'type':'Stalled','status':'False'}]}}", FL_LIVE_CURRENT, ""},
        {"Stalled=True beats a Deployment's counts", "apps/v1", "Deployment",
         "{'spec':{'replicas':2},'status':{'conditions':[{'type':'Stalled','status':'True'}]}}", FL_LIVE_FAILED,
         "Stalled"},
    };
    CHECK(rows);
}

#define DEPLOY_OK                                                                                                      \
    "'conditions':[{'type':'Available','status':'True'},"                                                             \
    "{'type':'Progressing','status':'True','reason':'NewReplicaSetAvailable'}]"

static void test_deployment_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"rolled out", "apps/v1", "Deployment",
         "{'metadata':{'generation':2},'spec':{'replicas':3,'progressDeadlineSeconds':600},'status':{"
         "'observedGeneration':2,'replicas':3,'updatedReplicas':3,'readyReplicas':3,'availableReplicas':3," DEPLOY_OK
         "}}",
         FL_LIVE_CURRENT, ""},
        {"progress deadline exceeded", "apps/v1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':3,'updatedReplicas':3,'conditions':[{'type':'Progressing',"
         "'status':'False','reason':'ProgressDeadlineExceeded','message':'ReplicaSet x has timed out'}]}}",
         FL_LIVE_FAILED, "ProgressDeadlineExceeded"},
        {"fewer replicas than spec", "apps/v1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':2,'updatedReplicas':2}}", FL_LIVE_IN_PROGRESS,
         "LessReplicas"},
        {"spec.replicas defaults to 1", "apps/v1", "Deployment", "{'spec':{},'status':{}}", FL_LIVE_IN_PROGRESS,
         "LessReplicas"},
        {"fewer updated", "apps/v1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':3,'updatedReplicas':2,'readyReplicas':3,"
         "'availableReplicas':3}}",
         FL_LIVE_IN_PROGRESS, "LessUpdated"},
        {"old replicas terminating", "apps/v1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':4,'updatedReplicas':3,'readyReplicas':3,"
         "'availableReplicas':3}}",
         FL_LIVE_IN_PROGRESS, "ExtraPods"},
        {"fewer available than updated", "apps/v1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':3,'updatedReplicas':3,'readyReplicas':3,"
         "'availableReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessAvailable"},
        {"fewer ready", "apps/v1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':3,'updatedReplicas':3,'readyReplicas':2,"
         "'availableReplicas':3}}",
         FL_LIVE_IN_PROGRESS, "LessReady"},
        {"counts fine, new ReplicaSet not available", "apps/v1", "Deployment",
         "{'spec':{'replicas':1,'progressDeadlineSeconds':60},'status':{'replicas':1,'updatedReplicas':1,"
         "'readyReplicas':1,'availableReplicas':1,'conditions':[{'type':'Available','status':'True'},"
         "{'type':'Progressing','status':'True','reason':'ReplicaSetUpdated'}]}}",
         FL_LIVE_IN_PROGRESS, "ReplicaSetNotAvailable"},
        {"counts fine, not Available", "apps/v1", "Deployment",
         "{'spec':{'replicas':1},'status':{'replicas':1,'updatedReplicas':1,'readyReplicas':1,"
         "'availableReplicas':1,'conditions':[{'type':'Available','status':'False'}]}}",
         FL_LIVE_IN_PROGRESS, "DeploymentNotAvailable"},
        {"no progress deadline: no Progressing needed", "apps/v1", "Deployment",
         "{'spec':{'replicas':1},'status':{'replicas':1,'updatedReplicas':1,'readyReplicas':1,"
         "'availableReplicas':1,'conditions':[{'type':'Available','status':'True'}]}}",
         FL_LIVE_CURRENT, ""},
        {"scaled to zero", "apps/v1", "Deployment", "{'spec':{'replicas':0},'status':{" DEPLOY_OK "}}",
         FL_LIVE_CURRENT, ""},
        {"extensions group too", "extensions/v1beta1", "Deployment",
         "{'spec':{'replicas':3},'status':{'replicas':2}}", FL_LIVE_IN_PROGRESS, "LessReplicas"},
    };
    CHECK(rows);
}

static void test_statefulset_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"rolled out", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':2},'status':{'replicas':2,'readyReplicas':2,'currentReplicas':2,'updatedReplicas':2,"
         "'currentRevision':'r1','updateRevision':'r1'}}",
         FL_LIVE_CURRENT, ""},
        {"OnDelete is the user's", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':2,'updateStrategy':{'type':'OnDelete'}},'status':{}}", FL_LIVE_CURRENT, ""},
        {"fewer replicas", "apps/v1", "StatefulSet", "{'spec':{'replicas':2},'status':{'replicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessReplicas"},
        {"fewer ready", "apps/v1", "StatefulSet", "{'spec':{'replicas':2},'status':{'replicas':2,'readyReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessReady"},
        {"extra replicas", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':2},'status':{'replicas':3,'readyReplicas':3}}", FL_LIVE_IN_PROGRESS, "ExtraPods"},
        {"partition not reached", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':4,'updateStrategy':{'type':'RollingUpdate','rollingUpdate':{'partition':2}}},"
         "'status':{'replicas':4,'readyReplicas':4,'updatedReplicas':1,'currentRevision':'a','updateRevision':'b'}}",
         FL_LIVE_IN_PROGRESS, "PartitionRollout"},
        {"partition done, revisions differ", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':4,'updateStrategy':{'type':'RollingUpdate','rollingUpdate':{'partition':2}}},"
         "'status':{'replicas':4,'readyReplicas':4,'updatedReplicas':2,'currentRevision':'a','updateRevision':'b'}}",
         FL_LIVE_CURRENT, ""},
        {"fewer current", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':2},'status':{'replicas':2,'readyReplicas':2,'currentReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessCurrent"},
        {"update revision not current", "apps/v1", "StatefulSet",
         "{'spec':{'replicas':2},'status':{'replicas':2,'readyReplicas':2,'currentReplicas':2,"
         "'currentRevision':'r1','updateRevision':'r2'}}",
         FL_LIVE_IN_PROGRESS, "RevisionMismatch"},
    };
    CHECK(rows);
}

static void test_daemonset_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"everywhere", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':3,'updatedNumberScheduled':3,'numberAvailable':3,'numberReady':3}}",
         FL_LIVE_CURRENT, ""},
        {"not observed yet", "apps/v1", "DaemonSet", "{'metadata':{'generation':1},'status':{}}",
         FL_LIVE_IN_PROGRESS, "NoObservedGeneration"},
        {"no desired number", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1}}", FL_LIVE_IN_PROGRESS, "NoDesiredNumber"},
        {"fewer scheduled", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':2}}",
         FL_LIVE_IN_PROGRESS, "LessCurrent"},
        {"fewer updated", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':3,'updatedNumberScheduled':1}}",
         FL_LIVE_IN_PROGRESS, "LessUpdated"},
        {"fewer available", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':3,'updatedNumberScheduled':3,'numberAvailable':2,'numberReady':3}}",
         FL_LIVE_IN_PROGRESS, "LessAvailable"},
        {"fewer ready", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':3,"
         "'currentNumberScheduled':3,'updatedNumberScheduled':3,'numberAvailable':3,'numberReady':0}}",
         FL_LIVE_IN_PROGRESS, "LessReady"},
        {"no node matches: nothing to wait for", "apps/v1", "DaemonSet",
         "{'metadata':{'generation':1},'status':{'observedGeneration':1,'desiredNumberScheduled':0}}",
         FL_LIVE_CURRENT, ""},
    };
    CHECK(rows);
}

static void test_replicaset_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"all there", "apps/v1", "ReplicaSet",
         "{'spec':{'replicas':2},'status':{'replicas':2,'fullyLabeledReplicas':2,'readyReplicas':2,"
         "'availableReplicas':2}}",
         FL_LIVE_CURRENT, ""},
        {"ReplicaFailure", "apps/v1", "ReplicaSet",
         "{'spec':{'replicas':2},'status':{'conditions':[{'type':'ReplicaFailure','status':'True',"
         "'message':'pods are forbidden: exceeded quota'}]}}",
         FL_LIVE_IN_PROGRESS, "ReplicaFailure"},
        {"fewer labelled", "apps/v1", "ReplicaSet", "{'spec':{'replicas':2},'status':{'fullyLabeledReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessLabelled"},
        {"fewer available", "apps/v1", "ReplicaSet",
         "{'spec':{'replicas':2},'status':{'fullyLabeledReplicas':2,'readyReplicas':2,'availableReplicas':1}}",
         FL_LIVE_IN_PROGRESS, "LessAvailable"},
        {"fewer ready", "apps/v1", "ReplicaSet",
         "{'spec':{'replicas':2},'status':{'fullyLabeledReplicas':2,'readyReplicas':1,'availableReplicas':2}}",
         FL_LIVE_IN_PROGRESS, "LessReady"},
        {"extra", "apps/v1", "ReplicaSet",
         "{'spec':{'replicas':2},'status':{'replicas':3,'fullyLabeledReplicas':2,'readyReplicas':2,"
         "'availableReplicas':2}}",
         FL_LIVE_IN_PROGRESS, "ExtraPods"},
    };
    CHECK(rows);
}

static void test_pod_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"Succeeded", "v1", "Pod", "{'status':{'phase':'Succeeded'}}", FL_LIVE_CURRENT, ""},
        {"Failed", "v1", "Pod", "{'status':{'phase':'Failed','reason':'Evicted'}}", FL_LIVE_FAILED, "PodFailed"},
        {"running and Ready", "v1", "Pod",
         "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'True'}]}}", FL_LIVE_CURRENT, ""},
        {"running, not Ready", "v1", "Pod",
         "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'False'}]}}", FL_LIVE_IN_PROGRESS,
         "PodRunningNotReady"},
        {"CrashLoopBackOff", "v1", "Pod",
         "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'False'}],'containerStatuses':["
         "{'name':'a','state':{'running':{}}},{'name':'b','state':{'waiting':{'reason':'CrashLoopBackOff'}}}]}}",
         FL_LIVE_FAILED, "CrashLoopBackOff"},
        {"init container in CrashLoopBackOff while Pending", "v1", "Pod",
         "{'status':{'phase':'Pending','initContainerStatuses':[{'name':'init','state':{'waiting':"
         "{'reason':'CrashLoopBackOff'}}}]}}",
         FL_LIVE_FAILED, "CrashLoopBackOff"},
        {"image pulling is only Pending", "v1", "Pod",
         "{'status':{'phase':'Pending','containerStatuses':[{'name':'a','state':{'waiting':"
         "{'reason':'ImagePullBackOff'}}}]}}",
         FL_LIVE_IN_PROGRESS, "PodPending"},
        {"unschedulable for long", "v1", "Pod",
         "{'metadata':{'creationTimestamp':'2025-12-31T23:59:00Z'},'status':{'phase':'Pending','conditions':["
         "{'type':'PodScheduled','status':'False','reason':'Unschedulable','message':'0/3 nodes are available'}]}}",
         FL_LIVE_FAILED, "PodUnschedulable"},
        {"unschedulable just now", "v1", "Pod",
         "{'metadata':{'creationTimestamp':'2025-12-31T23:59:55Z'},'status':{'phase':'Pending','conditions':["
         "{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}",
         FL_LIVE_IN_PROGRESS, "PodNotScheduled"},
        {"unschedulable, no creation time: the condition's", "v1", "Pod",
         "{'status':{'phase':'Pending','conditions':[{'type':'PodScheduled','status':'False',"
         "'reason':'Unschedulable','lastTransitionTime':'2025-12-31T23:00:00Z'}]}}",
         FL_LIVE_FAILED, "PodUnschedulable"},
        {"Pending otherwise", "v1", "Pod", "{'status':{'phase':'Pending'}}", FL_LIVE_IN_PROGRESS, "PodPending"},
        {"no phase yet", "v1", "Pod", "{'status':{}}", FL_LIVE_IN_PROGRESS, "PodNotObserved"},
        {"a phase nobody knows", "v1", "Pod", "{'status':{'phase':'Exploded'}}", FL_LIVE_UNKNOWN, "UnknownPhase"},
    };
    CHECK(rows);
}

static void test_job_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"Complete", "batch/v1", "Job",
         "{'status':{'startTime':'2026-01-01T00:00:00Z','succeeded':1,'conditions':[{'type':'Complete',"
         "'status':'True'}]}}",
         FL_LIVE_CURRENT, ""},
        {"Failed", "batch/v1", "Job",
         "{'status':{'conditions':[{'type':'Failed','status':'True','reason':'BackoffLimitExceeded'}]}}",
         FL_LIVE_FAILED, "BackoffLimitExceeded"},
        {"Failed without a reason", "batch/v1", "Job", "{'status':{'conditions':[{'type':'Failed','status':'True'}]}}",
         FL_LIVE_FAILED, "JobFailed"},
        {"Suspended", "batch/v1", "Job", "{'status':{'conditions':[{'type':'Suspended','status':'True'}]}}",
         FL_LIVE_CURRENT, ""},
        {"not started", "batch/v1", "Job", "{'status':{}}", FL_LIVE_IN_PROGRESS, "JobNotStarted"},
        {"running", "batch/v1", "Job",
         "{'spec':{'completions':3},'status':{'startTime':'2026-01-01T00:00:00Z','active':1,'succeeded':1}}",
         FL_LIVE_IN_PROGRESS, "JobRunning"},
        {"CronJob has nothing to wait for", "batch/v1", "CronJob", "{'status':{}}", FL_LIVE_CURRENT, ""},
    };
    CHECK(rows);
}

static void test_pvc_service_crd_rules(void **state)
{
    (void)state;
    static const row rows[] = {
        {"PVC Bound", "v1", "PersistentVolumeClaim", "{'status':{'phase':'Bound'}}", FL_LIVE_CURRENT, ""},
        {"PVC Pending", "v1", "PersistentVolumeClaim", "{'status':{'phase':'Pending'}}", FL_LIVE_IN_PROGRESS,
         "NotBound"},
        {"PVC no status", "v1", "PersistentVolumeClaim", "{}", FL_LIVE_IN_PROGRESS, "NotBound"},
        {"ClusterIP Service", "v1", "Service", "{'spec':{'type':'ClusterIP'}}", FL_LIVE_CURRENT, ""},
        {"Service without a type", "v1", "Service", "{'spec':{}}", FL_LIVE_CURRENT, ""},
        {"LoadBalancer without ingress", "v1", "Service",
         "{'spec':{'type':'LoadBalancer','clusterIP':'10.0.0.1'},'status':{'loadBalancer':{}}}",
         FL_LIVE_IN_PROGRESS, "NoIPAssigned"},
        {"LoadBalancer with an empty ingress list", "v1", "Service",
         "{'spec':{'type':'LoadBalancer'},'status':{'loadBalancer':{'ingress':[]}}}", FL_LIVE_IN_PROGRESS,
         "NoIPAssigned"},
        {"LoadBalancer with ingress", "v1", "Service",
         "{'spec':{'type':'LoadBalancer'},'status':{'loadBalancer':{'ingress':[{'ip':'1.2.3.4'}]}}}",
         FL_LIVE_CURRENT, ""},
        {"CRD Established", "apiextensions.k8s.io/v1", "CustomResourceDefinition",
         "{'status':{'conditions':[{'type':'NamesAccepted','status':'True'},{'type':'Established',"
         "'status':'True'}]}}",
         FL_LIVE_CURRENT, ""},
        {"CRD names not accepted", "apiextensions.k8s.io/v1", "CustomResourceDefinition",
         "{'status':{'conditions':[{'type':'NamesAccepted','status':'False','reason':'MultipleNamesConflict'},"
         "{'type':'Established','status':'False','reason':'NotAccepted'}]}}",
         FL_LIVE_FAILED, "MultipleNamesConflict"},
        {"CRD installing", "apiextensions.k8s.io/v1", "CustomResourceDefinition",
         "{'status':{'conditions':[{'type':'Established','status':'False','reason':'Installing'}]}}",
         FL_LIVE_IN_PROGRESS, "Installing"},
        {"CRD not established for another reason", "apiextensions.k8s.io/v1", "CustomResourceDefinition",
         "{'status':{'conditions':[{'type':'Established','status':'False','reason':'NotAccepted'}]}}",
         FL_LIVE_FAILED, "NotAccepted"},
        {"CRD no conditions yet", "apiextensions.k8s.io/v1", "CustomResourceDefinition", "{}",
         FL_LIVE_IN_PROGRESS, "Installing"},
    };
    CHECK(rows);
}

static void test_other_kinds_by_ready_condition(void **state)
{
    (void)state;
    static const row rows[] = {
        {"ConfigMap", "v1", "ConfigMap", "{'data':{'a':'b'}}", FL_LIVE_CURRENT, ""},
        {"Secret", "v1", "Secret", "{}", FL_LIVE_CURRENT, ""},
        {"PDB", "policy/v1", "PodDisruptionBudget", "{'status':{}}", FL_LIVE_CURRENT, ""},
        {"no conditions", "example.io/v1", "Widget", "{'status':{'phase':'whatever'}}", FL_LIVE_CURRENT, ""},
        {"Ready=True", "example.io/v1", "Widget", "{'status':{'conditions':[{'type':'Ready','status':'True'}]}}",
         FL_LIVE_CURRENT, ""},
        {"Ready=False", "example.io/v1", "Widget",
         "{'status':{'conditions':[{'type':'Ready','status':'False','reason':'Waiting','message':'db'}]}}",
         FL_LIVE_IN_PROGRESS, "Waiting"},
        {"Ready=Unknown without a reason", "example.io/v1", "Widget",
         "{'status':{'conditions':[{'type':'Ready','status':'Unknown'}]}}", FL_LIVE_IN_PROGRESS, "NotReady"},
        {"a core kind of the same name as an apps one is not it", "v1", "Deployment",
         "{'spec':{'replicas':3},'status':{}}", FL_LIVE_CURRENT, ""},
        {"conditions not a list", "example.io/v1", "Widget", "{'status':{'conditions':{'Ready':'False'}}}",
         FL_LIVE_CURRENT, ""},
    };
    CHECK(rows);
}

static void test_messages_are_bounded_single_lines_without_times(void **state)
{
    (void)state;
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[10] = '\n';
    json_t *obj = json_pack("{s:{s:[{s:s, s:s, s:s}]}}", "status", "conditions", "type", "Stalled", "status",
                            "True", "message", big);
    fl_live live;
    fl_live_judge(obj, "example.io/v1", "Widget", NULL, NOW, &live);
    assert_int_equal(live.state, FL_LIVE_FAILED);
    assert_true(strlen(live.message) < FL_LIVE_MESSAGE_MAX);
    assert_null(strchr(live.message, '\n'));
    json_decref(obj);

    /* cut at a character boundary: still UTF-8 (jansson refuses anything else) */
    char wide[2 * 200 + 1] = "";
    for (int i = 0; i < 200; i++)
        strcat(wide, "\xc3\xa9"); /* U+00E9 */
    for (int skew = 0; skew < 2; skew++) { /* the cut lands on either byte of a character */
        char *text = skew ? fl_cat("x", wide, NULL) : fl_strdup(wide);
        obj = json_pack("{s:{s:[{s:s, s:s, s:s}]}}", "status", "conditions", "type", "Stalled", "status", "True",
                        "message", text);
        free(text);
        fl_live_judge(obj, "example.io/v1", "Widget", NULL, NOW, &live);
        json_t *ok = json_string(live.message);
        assert_non_null(ok);
        json_decref(ok);
        assert_true(strlen(live.message) < FL_LIVE_MESSAGE_MAX);
        assert_string_equal(live.message + strlen(live.message) - 3, "...");
        json_decref(obj);
    }
    json_t *pod = json_pack("{s:{s:s, s:[{s:s, s:{s:{s:s}}}]}}", "status", "phase", "Running", "containerStatuses",
                            "name", wide, "state", "waiting", "reason", "CrashLoopBackOff");
    fl_live_judge(pod, "v1", "Pod", NULL, NOW, &live);
    assert_int_equal(live.state, FL_LIVE_FAILED);
    json_t *ok = json_string(live.message);
    assert_non_null(ok);
    json_decref(ok);
    json_decref(pod);

    /* the same object judged later says the same: no clock in the message */
    json_t *dep = test_json("{'spec':{'replicas':3},'status':{'replicas':3,'updatedReplicas':2}}");
    fl_live a, b;
    fl_live_judge(dep, "apps/v1", "Deployment", NULL, NOW, &a);
    fl_live_judge(dep, "apps/v1", "Deployment", NULL, NOW + 3600000, &b);
    assert_memory_equal(&a, &b, sizeof a);
    assert_string_equal(a.message, "2 of 3 replicas updated");
    json_decref(dep);
}

static void test_only_a_pod_not_scheduled_yet_ages(void **state)
{
    (void)state;
    json_t *pod = test_json("{'metadata':{'creationTimestamp':'2025-12-31T23:59:55Z'},'status':{'phase':'Pending',"
                            "'conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}");
    fl_live live;
    fl_live_judge(pod, "v1", "Pod", NULL, NOW, &live);
    assert_true(fl_live_reason_ages(live.reason));
    /* the same object once the time is up: Failed, and that does not age */
    fl_live_judge(pod, "v1", "Pod", NULL, NOW + FL_LIVE_UNSCHEDULABLE_MS, &live);
    assert_int_equal(live.state, FL_LIVE_FAILED);
    assert_false(fl_live_reason_ages(live.reason));
    json_decref(pod);
    assert_false(fl_live_reason_ages(NULL));
    assert_false(fl_live_reason_ages("LessReady"));
}

static void test_state_names_round_trip(void **state)
{
    (void)state;
    static const char *const names[] = {"Unknown", "Current", "InProgress", "Failed", "Terminating", "NotFound"};
    for (int s = FL_LIVE_UNKNOWN; s <= FL_LIVE_NOT_FOUND; s++) {
        assert_string_equal(fl_live_state_name((enum fl_live_state)s), names[s]);
        assert_int_equal(fl_live_state_parse(names[s]), s);
    }
    assert_string_equal(fl_live_state_name((enum fl_live_state)99), "Unknown");
    assert_int_equal(fl_live_state_parse("current"), FL_LIVE_UNKNOWN);
    assert_int_equal(fl_live_state_parse(NULL), FL_LIVE_UNKNOWN);
}

/* ---- custom kinds: a backend with a health rule for example.io/v1 Widget ----
 * status.health says "ok" (Healthy), "bad" (Unhealthy), anything else is an error. */

static bool widget_has(void *self, const char *av, const char *kind, enum fl_interp_op op)
{
    (void)self;
    return op == FL_INTERP_HEALTH && !strcmp(av, "example.io/v1") && !strcmp(kind, "Widget");
}

static int widget_health(void *self, const json_t *obj, enum fl_health *h, char **err)
{
    (void)self;
    const char *say = fl_json_path_str(obj, "status.health");
    *h = FL_HEALTH_UNKNOWN;
    if (say && !strcmp(say, "ok"))
        *h = FL_HEALTH_HEALTHY;
    else if (say && !strcmp(say, "bad"))
        *h = FL_HEALTH_UNHEALTHY;
    else if (err) {
        *err = strdup("script line 3: attempt to index a nil value");
        return FL_EINVAL;
    }
    return 0;
}

static const fl_interp_backend WIDGET = {.name = "widget-test", .has = widget_has, .health = widget_health};

static void live_of(fl_interp *ip, const char *kind, const char *obj_json, fl_live *out)
{
    json_t *obj = test_json(obj_json);
    json_object_set_new(obj, "apiVersion", json_string("example.io/v1"));
    json_object_set_new(obj, "kind", json_string(kind));
    json_object_set_new(obj, "metadata", json_pack("{s:s, s:s}", "name", "w", "namespace", "default"));
    fl_live_of(ip, obj, "example.io/v1", kind, out);
    json_decref(obj);
}

static void test_custom_kinds_follow_their_health_rule(void **state)
{
    (void)state;
    fl_interp *ip = fl_interp_new();
    fl_interp_add_backend(ip, &WIDGET, NULL);
    fl_live live;

    live_of(ip, "Widget", "{'status':{'health':'ok','conditions':[{'type':'Ready','status':'False'}]}}", &live);
    assert_int_equal(live.state, FL_LIVE_CURRENT); /* the rule, not the Ready condition */

    live_of(ip, "Widget", "{'status':{'health':'bad'}}", &live);
    assert_int_equal(live.state, FL_LIVE_IN_PROGRESS);
    assert_string_equal(live.reason, "Unhealthy");

    /* Unhealthy and Stalled: the generic rule says Failed first */
    live_of(ip, "Widget", "{'status':{'health':'bad','conditions':[{'type':'Stalled','status':'True'}]}}", &live);
    assert_int_equal(live.state, FL_LIVE_FAILED);

    /* Healthy but being deleted */
    json_t *obj = test_json("{'apiVersion':'example.io/v1','kind':'Widget','metadata':{'name':'w',"
                            "'deletionTimestamp':'2026-01-01T00:00:00Z'},'status':{'health':'ok'}}");
    fl_live_of(ip, obj, "example.io/v1", "Widget", &live);
    assert_int_equal(live.state, FL_LIVE_TERMINATING);
    json_decref(obj);

    /* the rule fails: Unknown, with the error as the message */
    live_of(ip, "Widget", "{'status':{}}", &live);
    assert_int_equal(live.state, FL_LIVE_UNKNOWN);
    assert_string_equal(live.reason, "InterpretHealthFailed");
    assert_non_null(strstr(live.message, "attempt to index a nil value"));

    /* no interpreter, or a kind without a rule: the built-in rules */
    live_of(NULL, "Widget", "{'status':{'health':'bad'}}", &live);
    assert_int_equal(live.state, FL_LIVE_CURRENT);
    live_of(ip, "Gadget", "{'status':{'health':'bad'}}", &live);
    assert_int_equal(live.state, FL_LIVE_CURRENT);

    fl_interp_remove_backend(ip, &WIDGET, NULL);
    fl_interp_free(ip);
}

static void test_native_health_rules_do_not_replace_kstatus(void **state)
{
    (void)state;
    fl_interp *ip = fl_interp_new(); /* native: a Deployment has a health rule */
    json_t *obj = test_json("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d','generation':1},"
                            "'spec':{'replicas':2},'status':{'observedGeneration':1,'replicas':2,"
                            "'updatedReplicas':2,'readyReplicas':0,'availableReplicas':0,'conditions':["
                            "{'type':'Progressing','status':'False','reason':'ProgressDeadlineExceeded'}]}}");
    fl_live live;
    fl_live_of(ip, obj, "apps/v1", "Deployment", &live);
    assert_int_equal(live.state, FL_LIVE_FAILED);
    assert_string_equal(live.reason, "ProgressDeadlineExceeded");
    json_decref(obj);
    fl_interp_free(ip);
}

/* ---- the manifestStatuses entry ---- */

static void test_manifest_entry_carries_live_status(void **state)
{
    (void)state;
    fl_interp *ip = fl_interp_new();
    json_t *obj = test_json("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d','namespace':'n',"
                            "'generation':1},'spec':{'replicas':3},'status':{'observedGeneration':1,'replicas':3,"
                            "'updatedReplicas':2,'readyReplicas':2,'availableReplicas':2}}");
    char *rerr = NULL, *herr = NULL;
    json_t *e = fl_ws_manifest_status(ip, 0, "apps/v1", "Deployment", "deployments", "n", "d", obj, NULL, &rerr,
                                      &herr);
    assert_null(rerr);
    assert_null(herr);
    json_t *want = test_json("{'state':'InProgress','reason':'LessUpdated','message':'2 of 3 replicas updated'}");
    assert_true(fl_json_same(json_object_get(e, "liveStatus"), want));
    json_decref(want);
    json_decref(e);

    /* Current: no reason, no message */
    json_object_set_new(fl_json_obj(obj, "status"), "updatedReplicas", json_integer(3));
    json_object_set_new(fl_json_obj(obj, "status"), "readyReplicas", json_integer(3));
    json_object_set_new(fl_json_obj(obj, "status"), "availableReplicas", json_integer(3));
    json_object_set_new(fl_json_obj(obj, "status"), "conditions",
                    test_json("[{'type':'Available','status':'True'}]"));
    e = fl_ws_manifest_status(ip, 0, "apps/v1", "Deployment", "deployments", "n", "d", obj, NULL, NULL, NULL);
    want = test_json("{'state':'Current'}");
    assert_true(fl_json_same(json_object_get(e, "liveStatus"), want));
    json_decref(want);
    json_decref(e);
    json_decref(obj);

    /* not in the member: NotFound, no status, no error */
    json_t *prev = test_json("{'identifier':{'ordinal':0,'group':'apps','version':'v1','kind':'Deployment',"
                             "'resource':'deployments','namespace':'n','name':'d'},'status':{'replicas':3}}");
    e = fl_ws_manifest_status(ip, 0, "apps/v1", "Deployment", "deployments", "n", "d", NULL, prev, &rerr, &herr);
    assert_null(rerr);
    assert_null(herr);
    assert_string_equal(fl_json_str(fl_json_obj(e, "liveStatus"), "state"), "NotFound");
    assert_null(json_object_get(e, "status"));
    assert_string_equal(fl_json_str(e, "health"), "Unknown");
    json_decref(e);
    json_decref(prev);
    fl_interp_free(ip);
}

static void test_manifest_entry_of_a_failing_custom_rule_is_unknown(void **state)
{
    (void)state;
    fl_interp *ip = fl_interp_new();
    fl_interp_add_backend(ip, &WIDGET, NULL);
    json_t *obj = test_json("{'apiVersion':'example.io/v1','kind':'Widget','metadata':{'name':'w'},'status':{}}");
    char *herr = NULL;
    json_t *e = fl_ws_manifest_status(ip, 0, "example.io/v1", "Widget", "widgets", NULL, "w", obj, NULL, NULL,
                                      &herr);
    assert_non_null(herr);
    assert_string_equal(fl_json_str(e, "health"), "Unknown");
    json_t *live = fl_json_obj(e, "liveStatus");
    assert_string_equal(fl_json_str(live, "state"), "Unknown");
    assert_string_equal(fl_json_str(live, "reason"), "InterpretHealthFailed");
    assert_non_null(strstr(fl_json_str(live, "message"), "nil value"));
    free(herr);
    json_decref(e);
    json_decref(obj);
    fl_interp_remove_backend(ip, &WIDGET, NULL);
    fl_interp_free(ip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generic_rules_come_before_the_kind),
        cmocka_unit_test(test_deployment_rules),
        cmocka_unit_test(test_statefulset_rules),
        cmocka_unit_test(test_daemonset_rules),
        cmocka_unit_test(test_replicaset_rules),
        cmocka_unit_test(test_pod_rules),
        cmocka_unit_test(test_job_rules),
        cmocka_unit_test(test_pvc_service_crd_rules),
        cmocka_unit_test(test_other_kinds_by_ready_condition),
        cmocka_unit_test(test_messages_are_bounded_single_lines_without_times),
        cmocka_unit_test(test_only_a_pod_not_scheduled_yet_ages),
        cmocka_unit_test(test_state_names_round_trip),
        cmocka_unit_test(test_custom_kinds_follow_their_health_rule),
        cmocka_unit_test(test_native_health_rules_do_not_replace_kstatus),
        cmocka_unit_test(test_manifest_entry_carries_live_status),
        cmocka_unit_test(test_manifest_entry_of_a_failing_custom_rule_is_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
