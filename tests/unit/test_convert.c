/* test_convert.c - autoscaling/v1 <-> v2 HorizontalPodAutoscaler conversion (src/api/
 * convert_hpa.c): the CPU target and v1's own fields, the other metrics, behavior, current
 * metrics and conditions through the autoscaling.alpha.kubernetes.io annotations, round trips
 * both ways, partial objects (apply configurations), and a bad annotation refused by name; and
 * events.k8s.io/v1 <-> core/v1 Event (convert_event.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/convert.h"
#include "core/mem.h"

static json_t *J(const char *text)
{
    char *t = fl_strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *v = json_loads(t, 0, &e);
    if (!v)
        fail_msg("bad test JSON at %d: %s\n%s", e.position, e.text, t);
    free(t);
    return v;
}

static void assert_json(const json_t *v, const json_t *want)
{
    if (!json_equal((json_t *)v, (json_t *)want)) {
        char *a = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS), *b = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("got  %s\nwant %s", a, b);
    }
}

static const char *V2 =
    "{'apiVersion':'autoscaling/v2','kind':'HorizontalPodAutoscaler','metadata':{'name':'web','namespace':'n'},"
    "'spec':{'scaleTargetRef':{'apiVersion':'apps/v1','kind':'Deployment','name':'web'},'minReplicas':2,"
    "'maxReplicas':5,'metrics':[{'type':'Resource','resource':{'name':'cpu','target':{'type':'Utilization',"
    "'averageUtilization':80}}},{'type':'Pods','pods':{'metric':{'name':'qps'},'target':{'type':'AverageValue',"
    "'averageValue':'10'}}},{'type':'External','external':{'metric':{'name':'queue','selector':{'matchLabels':"
    "{'q':'jobs'}}},'target':{'type':'Value','value':'30'}}}],'behavior':{'scaleDown':"
    "{'stabilizationWindowSeconds':60}}},'status':{'currentReplicas':3,'desiredReplicas':4,'currentMetrics':"
    "[{'type':'Resource','resource':{'name':'cpu','current':{'averageUtilization':55}}},"
    "{'type':'Pods','pods':{'metric':{'name':'qps'},'current':{'averageValue':'7'}}}],"
    "'conditions':[{'type':'AbleToScale','status':'True','reason':'ReadyForNewScale'}]}}";

static void test_v2_to_v1_keeps_cpu_in_its_field_and_the_rest_in_annotations(void **state)
{
    json_t *v2 = J(V2), *v1 = fl_convert_hpa_to_v1(v2);
    assert_string_equal(json_string_value(json_object_get(v1, "apiVersion")), "autoscaling/v1");
    json_t *spec = json_object_get(v1, "spec"), *st = json_object_get(v1, "status");
    assert_int_equal(json_integer_value(json_object_get(spec, "targetCPUUtilizationPercentage")), 80);
    assert_null(json_object_get(spec, "metrics"));
    assert_null(json_object_get(spec, "behavior"));
    assert_int_equal(json_integer_value(json_object_get(st, "currentCPUUtilizationPercentage")), 55);
    assert_null(json_object_get(st, "conditions"));
    json_t *ann = json_object_get(json_object_get(v1, "metadata"), "annotations");
    json_t *metrics = json_loads(json_string_value(json_object_get(ann, "autoscaling.alpha.kubernetes.io/metrics")),
                                 0, NULL);
    json_t *want = J("[{'type':'Pods','pods':{'metricName':'qps','targetAverageValue':'10'}},{'type':'External',"
                     "'external':{'metricName':'queue','metricSelector':{'matchLabels':{'q':'jobs'}},"
                     "'targetValue':'30'}}]");
    assert_json(metrics, want);
    assert_non_null(json_object_get(ann, "autoscaling.alpha.kubernetes.io/behavior"));
    assert_non_null(json_object_get(ann, "autoscaling.alpha.kubernetes.io/conditions"));
    assert_non_null(json_object_get(ann, "autoscaling.alpha.kubernetes.io/current-metrics"));
    /* and back: the same v2 object */
    char *err = NULL;
    json_t *back = fl_convert_hpa_to_v2(v1, &err);
    assert_non_null(back);
    assert_json(back, v2);
    json_decref(back);
    json_decref(want);
    json_decref(metrics);
    json_decref(v1);
    json_decref(v2);
}

static void test_v1_as_kubectl_autoscale_posts_it_becomes_a_v2_cpu_metric(void **state)
{
    json_t *v1 = J("{'apiVersion':'autoscaling/v1','kind':'HorizontalPodAutoscaler','metadata':{'name':'web'},"
                   "'spec':{'scaleTargetRef':{'apiVersion':'apps/v1','kind':'Deployment','name':'web'},"
                   "'minReplicas':2,'maxReplicas':5,'targetCPUUtilizationPercentage':80},"
                   "'status':{'currentReplicas':0,'desiredReplicas':0}}");
    char *err = NULL;
    json_t *v2 = fl_convert_hpa_to_v2(v1, &err);
    json_t *want = J("{'apiVersion':'autoscaling/v2','kind':'HorizontalPodAutoscaler','metadata':{'name':'web'},"
                     "'spec':{'scaleTargetRef':{'apiVersion':'apps/v1','kind':'Deployment','name':'web'},"
                     "'minReplicas':2,'maxReplicas':5,'metrics':[{'type':'Resource','resource':{'name':'cpu',"
                     "'target':{'type':'Utilization','averageUtilization':80}}}]},"
                     "'status':{'currentReplicas':0,'desiredReplicas':0}}");
    assert_json(v2, want);
    json_t *again = fl_convert_hpa_to_v1(v2);
    assert_json(again, v1);
    json_decref(again);
    json_decref(want);
    json_decref(v2);
    json_decref(v1);
}

static void test_partial_objects_convert_only_what_they_hold(void **state)
{
    json_t *cfg = J("{'apiVersion':'autoscaling/v1','kind':'HorizontalPodAutoscaler','metadata':{'name':'web'},"
                    "'spec':{'maxReplicas':7}}");
    char *err = NULL;
    json_t *v2 = fl_convert_hpa_to_v2(cfg, &err);
    json_t *want = J("{'apiVersion':'autoscaling/v2','kind':'HorizontalPodAutoscaler','metadata':{'name':'web'},"
                     "'spec':{'maxReplicas':7}}");
    assert_json(v2, want);
    json_decref(want);
    json_decref(v2);
    json_decref(cfg);
}

static void test_an_annotation_that_is_not_json_is_refused_naming_it(void **state)
{
    json_t *v1 = J("{'apiVersion':'autoscaling/v1','kind':'HorizontalPodAutoscaler','metadata':{'name':'web',"
                   "'annotations':{'autoscaling.alpha.kubernetes.io/metrics':'not json'}},'spec':{'maxReplicas':3}}");
    char *err = NULL;
    json_t *v2 = fl_convert_hpa_to_v2(v1, &err);
    assert_null(v2);
    assert_non_null(strstr(err, "metadata.annotations[autoscaling.alpha.kubernetes.io/metrics]"));
    free(err);
    json_decref(v1);
}

static void test_events_k8s_io_names_are_core_names_and_back(void **state)
{
    json_t *ev = J("{'apiVersion':'events.k8s.io/v1','kind':'Event','metadata':{'name':'e'},'note':'n',"
                   "'regarding':{'kind':'Pod','name':'p'},'reportingController':'c','deprecatedCount':3,"
                   "'eventTime':'2026-01-01T00:00:00.000000Z','action':'A'}");
    char *err = NULL;
    json_t *core = fl_convert_event_to_core(ev, &err);
    json_t *want = J("{'apiVersion':'v1','kind':'Event','metadata':{'name':'e'},'message':'n',"
                     "'involvedObject':{'kind':'Pod','name':'p'},'reportingComponent':'c','count':3,"
                     "'eventTime':'2026-01-01T00:00:00.000000Z','action':'A'}");
    assert_json(core, want);
    json_t *back = fl_convert_event_from_core(core);
    assert_json(back, ev);
    json_decref(back);
    json_decref(want);
    json_decref(core);
    json_decref(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2_to_v1_keeps_cpu_in_its_field_and_the_rest_in_annotations),
        cmocka_unit_test(test_v1_as_kubectl_autoscale_posts_it_becomes_a_v2_cpu_metric),
        cmocka_unit_test(test_partial_objects_convert_only_what_they_hold),
        cmocka_unit_test(test_an_annotation_that_is_not_json_is_refused_naming_it),
        cmocka_unit_test(test_events_k8s_io_names_are_core_names_and_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
