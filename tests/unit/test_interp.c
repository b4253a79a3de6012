/* test_interp.c - unit tests for the resource interpreter (src/interp/interp.c) and its
 * native backend (src/interp/native*.c).
 *
 * Objects are written as JSON with single quotes (J() swaps them for double quotes).
 * Tests are grouped by kind, one per rule and operation, named after the behaviour they
 * pin; then the registry (dispatch order, declining, messages, editing hooks), bad
 * input (every mistyped field gives FL_EINVAL naming it, never a crash), and calls from
 * four threads while backends are added, edited and removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "interp/interp.h"
#include "testutil.h"

static fl_interp *ip;

/* ---- helpers ---- */

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

/* The value at a dotted path ("spec.replicas"); array indexes as numbers. */
static json_t *at(const json_t *v, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *p = strtok_r(buf, ".", &save); p && v; p = strtok_r(NULL, ".", &save)) {
        if (json_is_array(v))
            v = json_array_get(v, (size_t)atoi(p));
        else
            v = json_object_get(v, p);
    }
    return (json_t *)v;
}

static const char *str(const json_t *v, const char *path)
{
    return json_string_value(at(v, path));
}

static long long num(const json_t *v, const char *path)
{
    json_t *x = at(v, path);
    if (!json_is_integer(x))
        fail_msg("%s is not an integer", path);
    return (long long)json_integer_value(x);
}

/* Assert that v equals the JSON text want (single quotes). */
static void assert_json(const json_t *v, const char *want)
{
    json_t *w = J(want);
    if (!json_equal((json_t *)v, w)) {
        char *a = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("NULL");
        char *b = json_dumps(w, JSON_COMPACT);
        fail_msg("got  %s\nwant %s", a, b);
    }
    json_decref(w);
}

static void assert_err_names(int rc, char *err, const char *field)
{
    assert_int_equal(rc, FL_EINVAL);
    assert_non_null(err);
    if (!strstr(err, field))
        fail_msg("message \"%s\" does not name %s", err, field);
    free(err);
}

static int64_t replicas_of(const char *obj, json_t **req)
{
    json_t *o = J(obj);
    int64_t n = -1;
    char *err = NULL;
    int rc = fl_interp_get_replicas(ip, o, &n, req, &err);
    if (rc)
        fail_msg("get_replicas: %s", err);
    assert_null(err);
    json_decref(o);
    return n;
}

static json_t *revised(const char *obj, int64_t n)
{
    json_t *o = J(obj), *before = json_deep_copy(o), *out = NULL;
    char *err = NULL;
    int rc = fl_interp_revise_replica(ip, o, n, &out, &err);
    if (rc)
        fail_msg("revise: %s", err);
    assert_true(json_equal(o, before)); /* input only read */
    json_decref(o);
    json_decref(before);
    return out;
}

static json_t *retained(const char *desired, const char *observed)
{
    json_t *d = J(desired), *o = J(observed), *out = NULL;
    char *err = NULL;
    int rc = fl_interp_retain(ip, d, o, &out, &err);
    if (rc)
        fail_msg("retain: %s", err);
    json_decref(d);
    json_decref(o);
    return out;
}

static json_t *reflected(const char *obj)
{
    json_t *o = J(obj), *out = (json_t *)1;
    char *err = NULL;
    int rc = fl_interp_reflect_status(ip, o, &out, &err);
    if (rc)
        fail_msg("reflect: %s", err);
    json_decref(o);
    return out;
}

static json_t *aggregated(const char *obj, const char *items)
{
    json_t *o = J(obj), *it = J(items), *before = json_deep_copy(o), *out = NULL;
    char *err = NULL;
    int rc = fl_interp_aggregate_status(ip, o, it, &out, &err);
    if (rc)
        fail_msg("aggregate: %s", err);
    assert_true(json_equal(o, before));
    json_decref(o);
    json_decref(it);
    json_decref(before);
    return out;
}

static enum fl_health health_of(const char *obj)
{
    json_t *o = J(obj);
    enum fl_health h = 99;
    char *err = NULL;
    int rc = fl_interp_health(ip, o, &h, &err);
    if (rc)
        fail_msg("health: %s", err);
    json_decref(o);
    return h;
}

static enum fl_health health_of_obj(const json_t *o)
{
    enum fl_health h = 99;
    char *err = NULL;
    if (fl_interp_health(ip, o, &h, &err))
        fail_msg("health: %s", err);
    return h;
}

static json_t *deps_of(const char *obj)
{
    json_t *o = J(obj), *out = NULL;
    char *err = NULL;
    int rc = fl_interp_get_dependencies(ip, o, &out, &err);
    if (rc)
        fail_msg("deps: %s", err);
    json_decref(o);
    return out;
}

/* Operation op on obj answers FL_EUNSUPPORTED with its out-parameters cleared. */
static void assert_unsupported(const char *obj, enum fl_interp_op op)
{
    json_t *o = J(obj), *out = (json_t *)1, *items = json_array();
    int64_t n = 7;
    enum fl_health h = FL_HEALTH_HEALTHY;
    char *err = NULL;
    int rc = 0;
    switch (op) {
    case FL_INTERP_REPLICA: rc = fl_interp_get_replicas(ip, o, &n, &out, &err); assert_int_equal(n, 0); break;
    case FL_INTERP_REVISE_REPLICA: rc = fl_interp_revise_replica(ip, o, 2, &out, &err); break;
    case FL_INTERP_AGGREGATE_STATUS: rc = fl_interp_aggregate_status(ip, o, items, &out, &err); break;
    case FL_INTERP_HEALTH:
        out = NULL;
        rc = fl_interp_health(ip, o, &h, &err);
        assert_int_equal(h, FL_HEALTH_UNKNOWN);
        break;
    case FL_INTERP_DEPENDENCY: rc = fl_interp_get_dependencies(ip, o, &out, &err); break;
    default: fail_msg("not an operation a kind can lack");
    }
    assert_int_equal(rc, FL_EUNSUPPORTED);
    assert_null(out);
    assert_non_null(err);
    assert_non_null(strstr(err, fl_interp_op_name(op)));
    assert_false(fl_interp_has(ip, str(o, "apiVersion"), str(o, "kind"), op));
    free(err);
    json_decref(o);
    json_decref(items);
}

/* ---- Deployment ---- */

#define DEPLOY_POD                                                                                                     \
    "'template':{'metadata':{'labels':{'app':'web'}},'spec':{"                                                         \
    "'nodeSelector':{'disk':'ssd'},"                                                                                   \
    "'tolerations':[{'key':'gpu','operator':'Exists'}],"                                                               \
    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"                                    \
    "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'zone','operator':'In','values':['a']}]}]}}},"                  \
    "'priorityClassName':'high',"                                                                                      \
    "'initContainers':[{'name':'init','resources':{'requests':{'cpu':'2','memory':'64Mi'}}}],"                         \
    "'containers':[{'name':'a','resources':{'requests':{'cpu':'500m','memory':'1Gi'}}},"                               \
    "{'name':'b','resources':{'requests':{'cpu':'1','memory':'512Mi'}}}]}}"

static void test_deployment_replicas_and_requirements_from_the_pod_template(void **state)
{
    json_t *req = NULL;
    assert_int_equal(replicas_of("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web',"
                                 "'namespace':'prod'},'spec':{'replicas':3," DEPLOY_POD "}}",
                                 &req),
                     3);
    /* containers sum to 1500m / 1536Mi; the init container's 2 cpu is larger alone */
    assert_json(req, "{'nodeClaim':{'hardNodeAffinity':{'nodeSelectorTerms':[{'matchExpressions':[{'key':'zone',"
                     "'operator':'In','values':['a']}]}]},'nodeSelector':{'disk':'ssd'},"
                     "'tolerations':[{'key':'gpu','operator':'Exists'}]},"
                     "'resourceRequest':{'cpu':'2','memory':'1536Mi'},'namespace':'prod','priorityClassName':'high'}");
    json_decref(req);
}

static void test_deployment_replicas_default_to_one_and_no_requirements_without_resources(void **state)
{
    json_t *req = (json_t *)1;
    assert_int_equal(replicas_of("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},"
                                 "'spec':{'template':{'spec':{'containers':[{'name':'a','image':'x'}]}}}}",
                                 &req),
                     1);
    assert_null(req);
}

static void test_deployment_revise_replica_sets_spec_replicas(void **state)
{
    json_t *out =
        revised("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':{'replicas':6}}", 2);
    assert_int_equal(num(out, "spec.replicas"), 2);
    json_decref(out);
}

static void test_deployment_retain_keeps_hpa_replicas_and_member_metadata(void **state)
{
    json_t *out = retained("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','labels':"
                           "{'resourcetemplate.karmada.io/retain-replicas':'true'}},'spec':{'replicas':2}}",
                           "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','resourceVersion':'9'},"
                           "'spec':{'replicas':5},'status':{'replicas':5}}");
    assert_int_equal(num(out, "spec.replicas"), 5);
    assert_string_equal(str(out, "metadata.resourceVersion"), "9");
    assert_int_equal(num(out, "status.replicas"), 5);
    json_decref(out);
}

static void test_deployment_reflect_keeps_counts_generations_and_conditions_without_heartbeats(void **state)
{
    json_t *st = reflected(
        "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','generation':4,"
        "'annotations':{'resourcetemplate.karmada.io/generation':'7'}},"
        "'status':{'observedGeneration':4,'replicas':3,'updatedReplicas':3,'readyReplicas':2,'availableReplicas':2,"
        "'unavailableReplicas':1,'collisionCount':1,'conditions':[{'type':'Available','status':'True',"
        "'reason':'MinimumReplicasAvailable','message':'ok','lastUpdateTime':'2024-01-01T00:00:09Z',"
        "'lastTransitionTime':'2024-01-01T00:00:01Z'}]}}");
    assert_json(st, "{'generation':4,'resourceTemplateGeneration':7,'replicas':3,'updatedReplicas':3,"
                    "'readyReplicas':2,'availableReplicas':2,'unavailableReplicas':1,'observedGeneration':4,"
                    "'conditions':[{'type':'Available','status':'True','reason':'MinimumReplicasAvailable',"
                    "'message':'ok','lastTransitionTime':'2024-01-01T00:00:01Z'}]}");
    json_decref(st);
}

static void test_deployment_reflect_without_status_is_nothing(void **state)
{
    assert_null(reflected("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','generation':1}}"));
}

#define DEPLOY_TMPL(gen, og)                                                                                           \
    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','namespace':'prod','generation':" #gen "},"   \
    "'spec':{'replicas':4},'status':{'observedGeneration':" #og "}}"

#define DEPLOY_ITEM(cluster, gen, og, rtg, n, avail, prog)                                                             \
    "{'clusterName':'" cluster "','applied':true,'status':{'generation':" #gen ",'resourceTemplateGeneration':" #rtg   \
    ",'observedGeneration':" #og ",'replicas':" #n ",'updatedReplicas':" #n ",'readyReplicas':" #n                     \
    ",'availableReplicas':" #n ",'conditions':[{'type':'Available','status':'" avail "','reason':'x'},"                \
    "{'type':'Progressing','status':'True','reason':'" prog "'}]}}"

static void test_deployment_aggregate_sums_counts_and_advances_observed_generation_when_all_current(void **state)
{
    json_t *out = aggregated(DEPLOY_TMPL(2, 1), "[" DEPLOY_ITEM("a", 5, 5, 2, 1, "True", "NewReplicaSetAvailable") ","
                                                    DEPLOY_ITEM("b", 2, 2, 2, 3, "True", "NewReplicaSetAvailable") "]");
    assert_int_equal(num(out, "status.replicas"), 4);
    assert_int_equal(num(out, "status.updatedReplicas"), 4);
    assert_int_equal(num(out, "status.availableReplicas"), 4);
    assert_null(at(out, "status.unavailableReplicas")); /* zero counts are omitted */
    assert_int_equal(num(out, "status.observedGeneration"), 2);
    assert_string_equal(str(out, "metadata.name"), "w");
    assert_int_equal(num(out, "spec.replicas"), 4);
    json_decref(out);
}

static void test_deployment_observed_generation_waits_for_a_member_behind(void **state)
{
    /* b's controller has not seen its spec yet */
    json_t *out = aggregated(DEPLOY_TMPL(2, 1), "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") ","
                                                    DEPLOY_ITEM("b", 3, 2, 2, 2, "True", "NewReplicaSetAvailable") "]");
    assert_int_equal(num(out, "status.observedGeneration"), 1);
    json_decref(out);
}

static void test_deployment_observed_generation_waits_for_the_template_generation(void **state)
{
    /* b runs a manifest rendered from template generation 1 */
    json_t *out = aggregated(DEPLOY_TMPL(2, 1), "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") ","
                                                    DEPLOY_ITEM("b", 2, 2, 1, 2, "True", "NewReplicaSetAvailable") "]");
    assert_int_equal(num(out, "status.observedGeneration"), 1);
    json_decref(out);
}

static void test_deployment_item_without_status_is_not_current(void **state)
{
    json_t *out = aggregated(DEPLOY_TMPL(2, 1), "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") ","
                                                    "{'clusterName':'b','applied':false}]");
    assert_int_equal(num(out, "status.observedGeneration"), 1);
    assert_int_equal(num(out, "status.replicas"), 2);
    /* b has not reported: not available, still progressing */
    assert_string_equal(str(out, "status.conditions.0.type"), "Available");
    assert_string_equal(str(out, "status.conditions.0.status"), "False");
    assert_non_null(strstr(str(out, "status.conditions.0.message"), "b"));
    assert_string_equal(str(out, "status.conditions.1.reason"), "ReplicaSetUpdated");
    json_decref(out);
}

static void test_deployment_available_and_progressing_complete_when_every_member_is(void **state)
{
    json_t *out = aggregated(DEPLOY_TMPL(2, 1), "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") ","
                                                    DEPLOY_ITEM("b", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") "]");
    json_t *a = NULL, *p = NULL, *c;
    size_t i;
    json_array_foreach(at(out, "status.conditions"), i, c) {
        if (!strcmp(str(c, "type"), "Available"))
            a = c;
        if (!strcmp(str(c, "type"), "Progressing"))
            p = c;
    }
    assert_non_null(a);
    assert_non_null(p);
    assert_string_equal(str(a, "status"), "True");
    assert_string_equal(str(a, "reason"), "MinimumReplicasAvailable");
    assert_string_equal(str(p, "status"), "True");
    assert_string_equal(str(p, "reason"), "NewReplicaSetAvailable");
    json_decref(out);
}

static void test_deployment_available_is_false_while_one_member_lacks_it(void **state)
{
    json_t *out = aggregated(DEPLOY_TMPL(2, 2), "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") ","
                                                    DEPLOY_ITEM("b", 2, 2, 2, 0, "False", "ReplicaSetUpdated") "]");
    assert_string_equal(str(out, "status.conditions.0.status"), "False");
    assert_string_equal(str(out, "status.conditions.0.reason"), "MinimumReplicasUnavailable");
    assert_non_null(strstr(str(out, "status.conditions.0.message"), "b"));
    assert_null(strstr(str(out, "status.conditions.0.message"), "a,"));
    assert_string_equal(str(out, "status.conditions.1.reason"), "ReplicaSetUpdated");
    json_decref(out);
}

static void test_deployment_progress_deadline_in_one_member_fails_the_rollout(void **state)
{
    json_t *out = aggregated(
        DEPLOY_TMPL(2, 2),
        "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") ","
        "{'clusterName':'b','status':{'generation':2,'resourceTemplateGeneration':2,'observedGeneration':2,"
        "'conditions':[{'type':'Progressing','status':'False','reason':'ProgressDeadlineExceeded',"
        "'lastTransitionTime':'2024-05-01T00:00:00Z'}]}}]");
    json_t *p = at(out, "status.conditions.1");
    assert_string_equal(str(p, "type"), "Progressing");
    assert_string_equal(str(p, "status"), "False");
    assert_string_equal(str(p, "reason"), "ProgressDeadlineExceeded");
    assert_string_equal(str(p, "lastTransitionTime"), "2024-05-01T00:00:00Z");
    json_decref(out);
}

static void test_deployment_without_members_is_not_available(void **state)
{
    json_t *out = aggregated(DEPLOY_TMPL(1, 0), "[]");
    assert_string_equal(str(out, "status.conditions.0.type"), "Available");
    assert_string_equal(str(out, "status.conditions.0.status"), "False");
    json_decref(out);
}

static void test_deployment_aggregate_twice_is_the_same_and_keeps_transition_times(void **state)
{
    const char *items = "[" DEPLOY_ITEM("a", 2, 2, 2, 2, "True", "NewReplicaSetAvailable") "]";
    json_t *first = aggregated(DEPLOY_TMPL(2, 1), items);
    json_t *again = aggregated(DEPLOY_TMPL(2, 1), items);
    assert_true(json_equal(first, again));
    /* feed the result back with a transition time: an unchanged condition keeps it */
    json_object_set_new(at(first, "status.conditions.0"), "lastTransitionTime", json_string("2020-01-01T00:00:00Z"));
    char *text = json_dumps(first, JSON_COMPACT), *err = NULL;
    json_t *tmpl = json_loads(text, 0, NULL), *it = J(items), *out = NULL;
    assert_int_equal(fl_interp_aggregate_status(ip, tmpl, it, &out, &err), 0);
    assert_string_equal(str(out, "status.conditions.0.lastTransitionTime"), "2020-01-01T00:00:00Z");
    assert_true(json_equal(out, tmpl));
    free(text);
    json_decref(first);
    json_decref(again);
    json_decref(tmpl);
    json_decref(it);
    json_decref(out);
}

#define HEALTH_DEPLOY(gen, og, want, updated, avail)                                                                   \
    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','generation':" #gen "},"                      \
    "'spec':{'replicas':" #want "},'status':{'observedGeneration':" #og ",'updatedReplicas':" #updated                 \
    ",'availableReplicas':" #avail "}}"

static void test_deployment_health_needs_current_updated_and_available_replicas(void **state)
{
    assert_int_equal(health_of(HEALTH_DEPLOY(2, 2, 3, 3, 3)), FL_HEALTH_HEALTHY);
    assert_int_equal(health_of(HEALTH_DEPLOY(2, 1, 3, 3, 3)), FL_HEALTH_UNHEALTHY);
    assert_int_equal(health_of(HEALTH_DEPLOY(2, 2, 3, 2, 2)), FL_HEALTH_UNHEALTHY);
    assert_int_equal(health_of(HEALTH_DEPLOY(2, 2, 3, 3, 1)), FL_HEALTH_UNHEALTHY);
}

static void test_deployment_dependencies_come_from_the_pod_template(void **state)
{
    json_t *d = deps_of("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','namespace':'prod'},"
                        "'spec':{'template':{'spec':{'serviceAccountName':'builder','containers':[{'name':'a',"
                        "'envFrom':[{'configMapRef':{'name':'cfg'}}]}]}}}}");
    assert_json(d, "[{'apiVersion':'v1','kind':'ConfigMap','namespace':'prod','name':'cfg'},"
                   "{'apiVersion':'v1','kind':'ServiceAccount','namespace':'prod','name':'builder'}]");
    json_decref(d);
}

/* ---- StatefulSet ---- */

static void test_statefulset_replicas_and_requests_default_to_limits(void **state)
{
    json_t *req = NULL;
    assert_int_equal(replicas_of("{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db',"
                                 "'namespace':'d'},"
                                 "'spec':{'replicas':2,'template':{'spec':{'containers':[{'name':'a','resources':"
                                 "{'limits':{'cpu':'1','memory':'2Gi'},'requests':{'memory':'1Gi'}}}]}}}}",
                                 &req),
                     2);
    /* cpu from the limit (no request), memory from the request */
    assert_json(req, "{'resourceRequest':{'cpu':'1','memory':'1Gi'},'namespace':'d'}");
    json_decref(req);
}

static void test_statefulset_revise_writes_replicas_even_when_missing(void **state)
{
    json_t *out = revised("{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db'},'spec':{}}", 3);
    assert_int_equal(num(out, "spec.replicas"), 3);
    json_decref(out);
}

static void test_statefulset_retain_keeps_replicas_the_manifest_omits(void **state)
{
    json_t *out = retained("{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db'},'spec':{}}",
                           "{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db','uid':'u1'},"
                           "'spec':{'replicas':4}}");
    assert_int_equal(num(out, "spec.replicas"), 4);
    assert_string_equal(str(out, "metadata.uid"), "u1");
    json_decref(out);
}

static void test_statefulset_reflect_keeps_observed_generation(void **state)
{
    json_t *st = reflected("{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db','generation':3,"
                           "'annotations':{'resourcetemplate.karmada.io/generation':'2'}},"
                           "'status':{'observedGeneration':3,'replicas':2,'readyReplicas':2,'currentReplicas':2,"
                           "'updatedReplicas':2,'availableReplicas':1,'currentRevision':'r1'}}");
    assert_json(st, "{'generation':3,'resourceTemplateGeneration':2,'replicas':2,'readyReplicas':2,"
                    "'currentReplicas':2,'updatedReplicas':2,'availableReplicas':1,'observedGeneration':3}");
    json_decref(st);
}

static void test_statefulset_aggregate_sums_and_advances_observed_generation(void **state)
{
    const char *tmpl = "{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db','generation':2},"
                       "'spec':{'replicas':4},'status':{'observedGeneration':1}}";
    json_t *out = aggregated(tmpl, "[{'clusterName':'a','status':{'generation':1,'resourceTemplateGeneration':2,"
                                   "'observedGeneration':1,'replicas':2,'readyReplicas':2,'updatedReplicas':2,"
                                   "'availableReplicas':2,'currentReplicas':2}},"
                                   "{'clusterName':'b','status':{'generation':1,'resourceTemplateGeneration':2,"
                                   "'observedGeneration':1,'replicas':2,'readyReplicas':1,'updatedReplicas':2,"
                                   "'availableReplicas':1,'currentReplicas':2}}]");
    assert_json(at(out, "status"), "{'observedGeneration':2,'replicas':4,'readyReplicas':3,'currentReplicas':4,"
                                   "'updatedReplicas':4,'availableReplicas':3}");
    json_decref(out);
}

static void test_statefulset_health_is_a_finished_rollout(void **state)
{
    const char *ok = "{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db','generation':1},"
                     "'spec':{'replicas':2},'status':{'observedGeneration':1,'updatedReplicas':2,"
                     "'availableReplicas':2}}";
    const char *bad = "{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db','generation':1},"
                      "'spec':{'replicas':2},'status':{'observedGeneration':1,'updatedReplicas':1,"
                      "'availableReplicas':1}}";
    assert_int_equal(health_of(ok), FL_HEALTH_HEALTHY);
    assert_int_equal(health_of(bad), FL_HEALTH_UNHEALTHY);
}

static void test_statefulset_dependencies_skip_claims_of_its_volume_claim_templates(void **state)
{
    json_t *d = deps_of("{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db','namespace':'d'},"
                        "'spec':{'volumeClaimTemplates':[{'metadata':{'name':'data'}}],'template':{'spec':{"
                        "'volumes':[{'name':'v1','persistentVolumeClaim':{'claimName':'data'}},"
                        "{'name':'v2','persistentVolumeClaim':{'claimName':'shared'}}],"
                        "'containers':[{'name':'a'}]}}}}");
    assert_json(d, "[{'apiVersion':'v1','kind':'PersistentVolumeClaim','namespace':'d','name':'shared'}]");
    json_decref(d);
}

/* ---- Job ---- */

static void test_job_replicas_are_parallelism_capped_by_completions(void **state)
{
    json_t *req = NULL;
    assert_int_equal(replicas_of("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{"
                                 "'parallelism':5,'completions':3,'template':{'spec':{'containers':[]}}}}",
                                 &req),
                     3);
    assert_int_equal(replicas_of("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{"
                                 "'parallelism':2,'template':{'spec':{'containers':[]}}}}",
                                 &req),
                     2);
    assert_int_equal(replicas_of("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{"
                                 "'completions':4,'template':{'spec':{'containers':[]}}}}",
                                 &req),
                     1);
    assert_null(req);
}

static void test_job_revise_replica_sets_parallelism(void **state)
{
    json_t *out = revised("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{'parallelism':4,"
                          "'completions':8}}",
                          2);
    assert_int_equal(num(out, "spec.parallelism"), 2);
    assert_int_equal(num(out, "spec.completions"), 8);
    json_decref(out);
}

static void test_job_retain_keeps_the_generated_selector(void **state)
{
    json_t *out = retained("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{'template':{}}}",
                           "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{'selector':"
                           "{'matchLabels':{'controller-uid':'u'}},'template':{'metadata':{'labels':"
                           "{'controller-uid':'u'}}}}}");
    assert_string_equal(str(out, "spec.selector.matchLabels.controller-uid"), "u");
    assert_string_equal(str(out, "spec.template.metadata.labels.controller-uid"), "u");
    json_decref(out);
}

static void test_job_reflect_keeps_counts_conditions_and_times(void **state)
{
    json_t *st = reflected("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'status':{'active':1,"
                           "'succeeded':2,'ready':1,'startTime':'2024-01-01T00:00:00Z','conditions':"
                           "[{'type':'Complete','status':'False'}],'uncountedTerminatedPods':{}}}");
    assert_json(st, "{'active':1,'succeeded':2,'conditions':[{'type':'Complete','status':'False'}],"
                    "'startTime':'2024-01-01T00:00:00Z'}");
    json_decref(st);
}

#define JOB_TMPL "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j','generation':1},'spec':{}}"
#define JOB_DONE(cluster, start, end)                                                                                  \
    "{'clusterName':'" cluster "','status':{'succeeded':2,'startTime':'" start "',"                                    \
    "'completionTime':'" end "',"                                                                                      \
    "'conditions':[{'type':'Complete','status':'True','lastTransitionTime':'" end "'}]}}"

static void test_job_aggregate_completes_when_every_member_completed(void **state)
{
    json_t *out = aggregated(JOB_TMPL, "[" JOB_DONE("a", "2024-01-01T00:00:05Z", "2024-01-01T00:01:00Z") ","
                                       JOB_DONE("b", "2024-01-01T00:00:02Z", "2024-01-01T00:02:00Z") "]");
    assert_int_equal(num(out, "status.succeeded"), 4);
    assert_string_equal(str(out, "status.startTime"), "2024-01-01T00:00:02Z");
    assert_string_equal(str(out, "status.completionTime"), "2024-01-01T00:02:00Z");
    assert_string_equal(str(out, "status.conditions.0.type"), "Complete");
    assert_string_equal(str(out, "status.conditions.0.status"), "True");
    assert_string_equal(str(out, "status.conditions.0.lastTransitionTime"), "2024-01-01T00:02:00Z");
    json_decref(out);
}

static void test_job_aggregate_is_not_complete_while_a_member_has_not_reported(void **state)
{
    json_t *out = aggregated(JOB_TMPL, "[" JOB_DONE("a", "2024-01-01T00:00:05Z", "2024-01-01T00:01:00Z") ","
                                       "{'clusterName':'b'}]");
    assert_null(at(out, "status.conditions"));
    assert_null(at(out, "status.completionTime"));
    assert_null(at(out, "status.startTime"));
    json_decref(out);
}

static void test_job_aggregate_fails_when_a_member_failed(void **state)
{
    json_t *out = aggregated(JOB_TMPL, "[" JOB_DONE("a", "2024-01-01T00:00:05Z", "2024-01-01T00:01:00Z") ","
                                       "{'clusterName':'b','status':{'failed':3,'conditions':[{'type':'Failed',"
                                       "'status':'True','lastTransitionTime':'2024-01-01T00:03:00Z'}]}}]");
    assert_int_equal(num(out, "status.failed"), 3);
    assert_string_equal(str(out, "status.conditions.0.type"), "Failed");
    assert_string_equal(str(out, "status.conditions.0.reason"), "JobFailed");
    assert_non_null(strstr(str(out, "status.conditions.0.message"), "b"));
    json_decref(out);
}

static void test_job_aggregate_leaves_a_finished_template_alone(void **state)
{
    const char *tmpl = "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'status':{'succeeded':9,"
                       "'conditions':[{'type':'Complete','status':'True'}]}}";
    json_t *out = aggregated(tmpl, "[{'clusterName':'a','status':{'active':1}}]");
    assert_json(out, tmpl);
    json_decref(out);
}

static void test_job_health_is_unhealthy_only_when_failed(void **state)
{
    assert_int_equal(health_of("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'status':{'active':1}}"),
                     FL_HEALTH_HEALTHY);
    assert_int_equal(health_of("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'status':{'conditions':"
                               "[{'type':'Failed','status':'True'}]}}"),
                     FL_HEALTH_UNHEALTHY);
}

static void test_job_dependencies_come_from_the_pod_template(void **state)
{
    json_t *d = deps_of("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j','namespace':'n'},'spec':{"
                        "'template':{'spec':{'imagePullSecrets':[{'name':'reg'}],'containers':[{'name':'a'}]}}}}");
    assert_json(d, "[{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'reg'}]");
    json_decref(d);
}

/* ---- Pod ---- */

static void test_pod_replicas_are_one_with_overhead_in_the_request(void **state)
{
    json_t *req = NULL;
    assert_int_equal(replicas_of("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':'n'},'spec':{"
                                 "'overhead':{'cpu':'250m'},'containers':[{'name':'a','resources':{'requests':"
                                 "{'cpu':'250m','nvidia.com/gpu':1,'bogus':'1'}}}]}}",
                                 &req),
                     1);
    assert_json(req, "{'resourceRequest':{'cpu':'500m','nvidia.com/gpu':'1'},'namespace':'n'}");
    json_decref(req);
}

static void test_pod_has_no_revise_replica(void **state)
{
    assert_unsupported("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'}}", FL_INTERP_REVISE_REPLICA);
}

static void test_pod_retain_keeps_node_name(void **state)
{
    json_t *out = retained("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'containers':[]}}",
                           "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'nodeName':'n1',"
                           "'containers':[]}}");
    assert_string_equal(str(out, "spec.nodeName"), "n1");
    json_decref(out);
}

static void test_pod_reflect_is_the_whole_status(void **state)
{
    json_t *st = reflected("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'status':{'phase':'Running',"
                           "'podIP':'10.0.0.1'}}");
    assert_json(st, "{'phase':'Running','podIP':'10.0.0.1'}");
    json_decref(st);
}

static void test_pod_aggregate_takes_the_worst_phase_and_unreported_is_pending(void **state)
{
    const char *tmpl = "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'status':{'podIP':'x'}}";
    json_t *out = aggregated(tmpl, "[{'clusterName':'a','status':{'phase':'Running','containerStatuses':[{'name':'c',"
                                   "'ready':true,'state':{'running':{}},'restartCount':2}]}},"
                                   "{'clusterName':'b','status':{'phase':'Succeeded'}}]");
    assert_json(at(out, "status"), "{'phase':'Running','containerStatuses':[{'ready':true,'state':{'running':{}}}]}");
    json_decref(out);
    out = aggregated(tmpl, "[{'clusterName':'a','status':{'phase':'Running'}},{'clusterName':'b'}]");
    assert_string_equal(str(out, "status.phase"), "Pending");
    json_decref(out);
    out = aggregated(tmpl, "[{'clusterName':'a','status':{'phase':'Failed'}},{'clusterName':'b'}]");
    assert_string_equal(str(out, "status.phase"), "Failed");
    json_decref(out);
}

static void test_pod_health_is_succeeded_or_running_and_ready(void **state)
{
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'status':{'phase':'Running',"
                               "'conditions':[{'type':'Ready','status':'True'}]}}"),
                     FL_HEALTH_HEALTHY);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'status':{'phase':'Running',"
                               "'conditions':[{'type':'Ready','status':'False'}]}}"),
                     FL_HEALTH_UNHEALTHY);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},"
                               "'status':{'phase':'Succeeded'}}"),
                     FL_HEALTH_HEALTHY);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'status':{'phase':'Pending'}}"),
                     FL_HEALTH_UNHEALTHY);
}

static void test_pod_dependencies_cover_every_reference_sorted_and_unique(void **state)
{
    json_t *d = deps_of(
        "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':'n'},'spec':{"
        "'serviceAccountName':'default','imagePullSecrets':[{'name':'pull'}],"
        "'initContainers':[{'name':'i','env':[{'name':'X','valueFrom':{'secretKeyRef':"
        "{'name':'init-sec','key':'k'}}}]}],"
        "'containers':[{'name':'a','envFrom':[{'configMapRef':{'name':'env-cm'}},{'secretRef':{'name':'env-sec'}}],"
        "'env':[{'name':'Y','valueFrom':{'configMapKeyRef':{'name':'key-cm','key':'k'}}},{'name':'Z','value':'1'}]}],"
        "'ephemeralContainers':[{'name':'e','envFrom':[{'configMapRef':{'name':'eph-cm'}}]}],"
        "'volumes':[{'name':'v1','configMap':{'name':'vol-cm'}},{'name':'v2','secret':{'secretName':'vol-sec'}},"
        "{'name':'v3','projected':{'sources':[{'configMap':{'name':'proj-cm'}},{'secret':{'name':'proj-sec'}},"
        "{'serviceAccountToken':{'path':'t'}}]}},{'name':'v4','persistentVolumeClaim':{'claimName':'claim'}},"
        "{'name':'v5','csi':{'driver':'d','nodePublishSecretRef':{'name':'csi-sec'}}},"
        "{'name':'v6','configMap':{'name':'env-cm'}},{'name':'v7','emptyDir':{}}]}}");
    assert_json(d, "[{'apiVersion':'v1','kind':'ConfigMap','namespace':'n','name':'env-cm'},"
                   "{'apiVersion':'v1','kind':'ConfigMap','namespace':'n','name':'eph-cm'},"
                   "{'apiVersion':'v1','kind':'ConfigMap','namespace':'n','name':'key-cm'},"
                   "{'apiVersion':'v1','kind':'ConfigMap','namespace':'n','name':'proj-cm'},"
                   "{'apiVersion':'v1','kind':'ConfigMap','namespace':'n','name':'vol-cm'},"
                   "{'apiVersion':'v1','kind':'PersistentVolumeClaim','namespace':'n','name':'claim'},"
                   "{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'csi-sec'},"
                   "{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'env-sec'},"
                   "{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'init-sec'},"
                   "{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'proj-sec'},"
                   "{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'pull'},"
                   "{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'vol-sec'}]");
    json_decref(d);
}

/* ---- DaemonSet ---- */

static void test_daemonset_has_no_replicas_or_revise(void **state)
{
    assert_unsupported("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d'}}", FL_INTERP_REPLICA);
    assert_unsupported("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d'}}",
                       FL_INTERP_REVISE_REPLICA);
}

static void test_daemonset_retain_applies_the_generic_rules(void **state)
{
    json_t *out = retained("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d'},'status':{'x':1}}",
                           "{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d','resourceVersion':'3',"
                           "'finalizers':['member/f']},'status':{'numberReady':2}}");
    assert_string_equal(str(out, "metadata.resourceVersion"), "3");
    assert_string_equal(str(out, "metadata.finalizers.0"), "member/f");
    assert_json(at(out, "status"), "{'numberReady':2}");
    json_decref(out);
}

static void test_daemonset_reflect_keeps_its_counts_and_generations(void **state)
{
    json_t *st = reflected("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d','generation':2,"
                           "'annotations':{'resourcetemplate.karmada.io/generation':'5'}},'status':{"
                           "'observedGeneration':2,'currentNumberScheduled':3,'desiredNumberScheduled':3,"
                           "'numberReady':3,'updatedNumberScheduled':3,'numberAvailable':3,'numberMisscheduled':0}}");
    assert_json(st, "{'generation':2,'resourceTemplateGeneration':5,'currentNumberScheduled':3,"
                    "'desiredNumberScheduled':3,'numberAvailable':3,'numberReady':3,'updatedNumberScheduled':3,"
                    "'observedGeneration':2}");
    json_decref(st);
}

static void test_daemonset_aggregate_sums_and_keeps_old_generation_while_stale(void **state)
{
    const char *tmpl = "{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d','generation':3},"
                       "'status':{'observedGeneration':2}}";
    json_t *out = aggregated(tmpl, "[{'clusterName':'a','status':{'generation':2,'resourceTemplateGeneration':3,"
                                   "'observedGeneration':2,'desiredNumberScheduled':2,'updatedNumberScheduled':2,"
                                   "'numberAvailable':2}},{'clusterName':'b','status':{'generation':2,"
                                   "'resourceTemplateGeneration':2,'observedGeneration':2,'desiredNumberScheduled':1,"
                                   "'updatedNumberScheduled':1,'numberAvailable':1}}]");
    assert_int_equal(num(out, "status.desiredNumberScheduled"), 3);
    assert_int_equal(num(out, "status.updatedNumberScheduled"), 3);
    assert_int_equal(num(out, "status.numberAvailable"), 3);
    assert_int_equal(num(out, "status.observedGeneration"), 2); /* b still on template generation 2 */
    json_decref(out);
}

static void test_daemonset_health_needs_every_scheduled_pod_updated_and_available(void **state)
{
    assert_int_equal(health_of("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d','generation':1},"
                               "'status':{'observedGeneration':1,'desiredNumberScheduled':2,"
                               "'updatedNumberScheduled':2,'numberAvailable':2}}"),
                     FL_HEALTH_HEALTHY);
    assert_int_equal(health_of("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d','generation':1},"
                               "'status':{'observedGeneration':1,'desiredNumberScheduled':2,"
                               "'updatedNumberScheduled':2,'numberAvailable':1}}"),
                     FL_HEALTH_UNHEALTHY);
}

static void test_daemonset_dependencies_come_from_the_pod_template(void **state)
{
    json_t *d = deps_of("{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d','namespace':'k'},"
                        "'spec':{'template':{'spec':{'volumes':[{'name':'v','secret':{'secretName':'s'}}],"
                        "'containers':[{'name':'a'}]}}}}");
    assert_json(d, "[{'apiVersion':'v1','kind':'Secret','namespace':'k','name':'s'}]");
    json_decref(d);
}

/* ---- other kinds ---- */

static void test_replicaset_replicas_revise_and_health(void **state)
{
    json_t *req = NULL;
    const char *rs = "{'apiVersion':'apps/v1','kind':'ReplicaSet','metadata':{'name':'r','generation':1},"
                     "'spec':{'replicas':2},'status':{'observedGeneration':1,'availableReplicas':2}}";
    assert_int_equal(replicas_of(rs, &req), 2);
    json_t *out = revised(rs, 1);
    assert_int_equal(num(out, "spec.replicas"), 1);
    json_decref(out);
    assert_int_equal(health_of(rs), FL_HEALTH_HEALTHY);
}

static void test_service_reflects_and_aggregates_load_balancer_addresses_only(void **state)
{
    assert_null(reflected("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{'type':'ClusterIP'},"
                          "'status':{'loadBalancer':{}}}"));
    json_t *st = reflected("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{'type':'LoadBalancer'},"
                           "'status':{'loadBalancer':{'ingress':[{'ip':'1.1.1.1'}]},'conditions':[]}}");
    assert_json(st, "{'loadBalancer':{'ingress':[{'ip':'1.1.1.1'}]}}");
    json_decref(st);

    json_t *out = aggregated(
        "{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{'type':'LoadBalancer'}}",
        "[{'clusterName':'a','status':{'loadBalancer':{'ingress':[{'ip':'2.2.2.2','ports':"
        "[{'port':80,'protocol':'TCP'}]},"
        "{'hostname':'z.example'}]}}},{'clusterName':'b','status':{'loadBalancer':{'ingress':[{'ip':'1.1.1.1'},"
        "{'ip':'2.2.2.2','ports':[{'port':80,'protocol':'TCP'},{'port':53,'protocol':'UDP'}]}]}}},"
        "{'clusterName':'c'}]");
    assert_json(at(out, "status"), "{'loadBalancer':{'ingress':[{'hostname':'z.example'},{'ip':'1.1.1.1'},"
                                   "{'ip':'2.2.2.2','ports':[{'port':53,'protocol':'UDP'},"
                                   "{'port':80,'protocol':'TCP'}]}]}}");
    json_decref(out);
    out = aggregated("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{}}",
                     "[{'clusterName':'a','status':{'loadBalancer':{'ingress':[{'ip':'1.1.1.1'}]}}}]");
    assert_null(at(out, "status"));
    json_decref(out);
}

static void test_service_health_waits_for_a_load_balancer_address(void **state)
{
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{}}"),
                     FL_HEALTH_HEALTHY);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':"
                               "{'type':'LoadBalancer'},'status':{'loadBalancer':{}}}"),
                     FL_HEALTH_UNHEALTHY);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':"
                               "{'type':'LoadBalancer'},'status':{'loadBalancer':{'ingress':[{'hostname':'h'}]}}}"),
                     FL_HEALTH_HEALTHY);
}

static void test_pvc_aggregate_and_health_follow_the_phase(void **state)
{
    const char *pvc = "{'apiVersion':'v1','kind':'PersistentVolumeClaim','metadata':{'name':'c'}}";
    json_t *out = aggregated(pvc, "[{'clusterName':'a','status':{'phase':'Bound'}},{'clusterName':'b','status':"
                                  "{'phase':'Pending'}}]");
    assert_string_equal(str(out, "status.phase"), "Pending");
    json_decref(out);
    out = aggregated(pvc, "[{'clusterName':'a','status':{'phase':'Lost'}},{'clusterName':'b','status':"
                          "{'phase':'Pending'}}]");
    assert_string_equal(str(out, "status.phase"), "Lost");
    json_decref(out);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'PersistentVolumeClaim','metadata':{'name':'c'},"
                               "'status':{'phase':'Bound'}}"),
                     FL_HEALTH_HEALTHY);
    assert_int_equal(health_of("{'apiVersion':'v1','kind':'PersistentVolumeClaim','metadata':{'name':'c'},"
                               "'status':{'phase':'Pending'}}"),
                     FL_HEALTH_UNHEALTHY);
}

static void test_hpa_reflects_counts_and_conditions_and_sums_them(void **state)
{
    const char *hpa = "{'apiVersion':'autoscaling/v2','kind':'HorizontalPodAutoscaler','metadata':{'name':'h'},"
                      "'spec':{'maxReplicas':5},'status':{'currentReplicas':3,'desiredReplicas':4,"
                      "'currentMetrics':[{'type':'Resource'}],'conditions':[{'type':'AbleToScale','status':'True'}]}}";
    json_t *st = reflected(hpa);
    assert_json(st, "{'currentReplicas':3,'desiredReplicas':4,'conditions':[{'type':'AbleToScale','status':'True'}]}");
    json_decref(st);
    json_t *out = aggregated(hpa, "[{'clusterName':'a','status':{'currentReplicas':2,'desiredReplicas':3,"
                                  "'conditions':[{'type':'ScalingActive','status':'True'}]}},"
                                  "{'clusterName':'b','status':{'currentReplicas':1,'desiredReplicas':1,"
                                  "'conditions':[{'type':'ScalingActive','status':'False','message':'no metrics'}]}}]");
    assert_int_equal(num(out, "status.currentReplicas"), 3);
    assert_int_equal(num(out, "status.desiredReplicas"), 4);
    assert_string_equal(str(out, "status.conditions.0.status"), "False");
    assert_string_equal(str(out, "status.conditions.0.message"), "b: no metrics");
    assert_null(at(out, "status.currentMetrics"));
    assert_int_equal(health_of_obj(out), FL_HEALTH_UNHEALTHY);
    json_decref(out);
    assert_int_equal(health_of(hpa), FL_HEALTH_HEALTHY);
}

static void test_pdb_sums_counts_names_disrupted_pods_by_cluster_and_health_compares(void **state)
{
    const char *pdb = "{'apiVersion':'policy/v1','kind':'PodDisruptionBudget','metadata':{'name':'p'},"
                      "'status':{'currentHealthy':2,'desiredHealthy':1,'expectedPods':2,'disruptionsAllowed':1,"
                      "'observedGeneration':4,'disruptedPods':{'web-1':'2024-01-01T00:00:00Z'}}}";
    json_t *st = reflected(pdb);
    assert_json(st, "{'currentHealthy':2,'desiredHealthy':1,'expectedPods':2,'disruptionsAllowed':1,"
                    "'disruptedPods':{'web-1':'2024-01-01T00:00:00Z'}}");
    json_decref(st);
    json_t *out = aggregated(pdb, "[{'clusterName':'a','status':{'currentHealthy':2,'desiredHealthy':1,"
                                  "'expectedPods':2,'disruptionsAllowed':1,'disruptedPods':{'x':'t1'}}},"
                                  "{'clusterName':'b','status':{'currentHealthy':0,'desiredHealthy':1,"
                                  "'expectedPods':1,'disruptionsAllowed':0}}]");
    assert_json(at(out, "status"), "{'currentHealthy':2,'desiredHealthy':2,'expectedPods':3,'disruptionsAllowed':1,"
                                   "'disruptedPods':{'a/x':'t1'}}");
    assert_int_equal(health_of_obj(out), FL_HEALTH_HEALTHY);
    json_decref(out);
    assert_int_equal(health_of("{'apiVersion':'policy/v1','kind':'PodDisruptionBudget','metadata':{'name':'p'},"
                               "'status':{'currentHealthy':0,'desiredHealthy':1}}"),
                     FL_HEALTH_UNHEALTHY);
}

static void test_ingress_health_and_tls_dependencies(void **state)
{
    const char *ing = "{'apiVersion':'networking.k8s.io/v1','kind':'Ingress','metadata':{'name':'i','namespace':'n'},"
                      "'spec':{'tls':[{'secretName':'cert'},{'secretName':'cert'}]},"
                      "'status':{'loadBalancer':{'ingress':[{'ip':'1.2.3.4'}]}}}";
    assert_int_equal(health_of(ing), FL_HEALTH_HEALTHY);
    json_t *d = deps_of(ing);
    assert_json(d, "[{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'cert'}]");
    json_decref(d);
}

static void test_cronjob_dependencies_and_aggregate(void **state)
{
    const char *cj = "{'apiVersion':'batch/v1','kind':'CronJob','metadata':{'name':'c','namespace':'n'},'spec':{"
                     "'jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'a','envFrom':"
                     "[{'secretRef':{'name':'s'}}]}]}}}}}}";
    json_t *d = deps_of(cj);
    assert_json(d, "[{'apiVersion':'v1','kind':'Secret','namespace':'n','name':'s'}]");
    json_decref(d);
    json_t *out = aggregated(cj, "[{'clusterName':'a','status':{'active':[{'name':'j1'}],"
                                 "'lastScheduleTime':'2024-01-01T00:00:00Z'}},{'clusterName':'b','status':{"
                                 "'active':[{'name':'j2'}],'lastScheduleTime':'2024-01-02T00:00:00Z'}}]");
    assert_json(at(out, "status"),
                "{'active':[{'name':'j1'},{'name':'j2'}],'lastScheduleTime':'2024-01-02T00:00:00Z'}");
    json_decref(out);
}

static void test_other_kinds_reflect_their_whole_status_and_have_no_health(void **state)
{
    json_t *st = reflected("{'apiVersion':'example.io/v1','kind':'Widget','metadata':{'name':'w'},"
                           "'status':{'phase':'Ready','n':2}}");
    assert_json(st, "{'phase':'Ready','n':2}");
    json_decref(st);
    assert_true(fl_interp_has(ip, "example.io/v1", "Widget", FL_INTERP_REFLECT_STATUS));
    assert_true(fl_interp_has(ip, "example.io/v1", "Widget", FL_INTERP_RETAIN));
    assert_unsupported("{'apiVersion':'example.io/v1','kind':'Widget','metadata':{'name':'w'}}", FL_INTERP_HEALTH);
    assert_unsupported("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'w'}}", FL_INTERP_AGGREGATE_STATUS);
    assert_unsupported("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'w'}}", FL_INTERP_DEPENDENCY);
    /* a kind is matched with its version: extensions/v1beta1 Deployment is not apps/v1 */
    assert_unsupported("{'apiVersion':'extensions/v1beta1','kind':'Deployment','metadata':{'name':'w'}}",
                       FL_INTERP_REPLICA);
}

static void test_service_account_token_secret_keeps_the_members_token(void **state)
{
    json_t *out = retained("{'apiVersion':'v1','kind':'Secret','metadata':{'name':'t'},"
                           "'type':'kubernetes.io/service-account-token','data':{}}",
                           "{'apiVersion':'v1','kind':'Secret','metadata':{'name':'t'},"
                           "'type':'kubernetes.io/service-account-token','data':{'token':'abc'}}");
    assert_string_equal(str(out, "data.token"), "abc");
    json_decref(out);
    out = retained("{'apiVersion':'v1','kind':'Secret','metadata':{'name':'t'},'type':'Opaque','data':{'k':'dg=='}}",
                   "{'apiVersion':'v1','kind':'Secret','metadata':{'name':'t'},'type':'Opaque','data':{'k':'old'}}");
    assert_string_equal(str(out, "data.k"), "dg==");
    json_decref(out);
}

static void test_quantities_sum_to_the_canonical_form(void **state)
{
    json_t *req = NULL;
    replicas_of("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'containers':["
                "{'name':'a','resources':{'requests':{'cpu':'0.5','memory':'1G','ephemeral-storage':'1Gi',"
                "'hugepages-2Mi':'4Mi'}}},"
                "{'name':'b','resources':{'requests':{'cpu':'1','memory':'1000000000','ephemeral-storage':'512Mi',"
                "'hugepages-2Mi':'4Mi'}}},{'name':'c','resources':{'requests':{'cpu':'0.1m'}}}]}}",
                &req);
    /* 0.1m rounds up to a whole millicore, as Kubernetes' MilliValue does; memory is
     * written in binary form, as Kubernetes writes a BinarySI sum: 2e9 bytes is 1953125Ki */
    assert_json(req, "{'resourceRequest':{'cpu':'1501m','ephemeral-storage':'1536Mi','hugepages-2Mi':'8Mi',"
                     "'memory':'1953125Ki'}}");
    json_decref(req);
}

/* ---- the registry ---- */

struct fake {
    atomic_int calls;
    atomic_bool health_hook;  /* has() claims health for apps/v1 Deployment */
    atomic_bool decline;      /* the health op returns FL_EUNSUPPORTED */
    atomic_int violations;    /* the op ran while has() would have said no */
    int fail;                 /* the op fails with this code */
};

static bool fake_has(void *self, const char *av, const char *kind, enum fl_interp_op op)
{
    struct fake *f = self;
    if (strcmp(kind, "Deployment"))
        return false;
    return (op == FL_INTERP_HEALTH && atomic_load(&f->health_hook)) || op == FL_INTERP_REPLICA ||
           op == FL_INTERP_RETAIN;
}

static int fake_replicas(void *self, const json_t *obj, int64_t *n, json_t **req, char **err)
{
    struct fake *f = self;
    atomic_fetch_add(&f->calls, 1);
    *n = 42;
    *req = json_object();
    if (f->fail) {
        *err = fl_strdup("boom");
        return f->fail;
    }
    return 0;
}

static int fake_health(void *self, const json_t *obj, enum fl_health *h, char **err)
{
    struct fake *f = self;
    atomic_fetch_add(&f->calls, 1);
    if (!atomic_load(&f->health_hook))
        atomic_fetch_add(&f->violations, 1);
    /* stay inside a while: an edit that did not wait for running calls would land here */
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    if (!atomic_load(&f->health_hook))
        atomic_fetch_add(&f->violations, 1);
    if (atomic_load(&f->decline)) {
        *h = FL_HEALTH_HEALTHY;
        *err = fl_strdup("not mine");
        return FL_EUNSUPPORTED;
    }
    *h = FL_HEALTH_UNHEALTHY;
    return 0;
}

/* Records what it was given: the generic rules already applied. */
static int fake_retain(void *self, const json_t *desired, const json_t *observed, json_t **out, char **err)
{
    *out = json_deep_copy(desired);
    json_object_set_new(*out, "fake", json_true());
    return 0;
}

static const fl_interp_backend fake_backend = {
    .name = "fake",
    .has = fake_has,
    .get_replicas = fake_replicas,
    .retain = fake_retain,
    .health = fake_health,
};

#define HEALTHY_DEPLOY HEALTH_DEPLOY(1, 1, 1, 1, 1)

static void test_a_backend_added_later_is_asked_first(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    atomic_store(&f.health_hook, true);
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *o = J(HEALTHY_DEPLOY), *req = NULL;
    enum fl_health h;
    int64_t n;
    char *err = (char *)1;
    assert_int_equal(fl_interp_health(r, o, &h, &err), 0);
    assert_int_equal(h, FL_HEALTH_UNHEALTHY); /* native would say healthy */
    assert_null(err);
    assert_int_equal(fl_interp_get_replicas(r, o, &n, &req, &err), 0);
    assert_int_equal(n, 42);
    json_decref(req);
    json_decref(o);
    fl_interp_free(r);
}

static void test_native_answers_what_the_backend_ahead_has_no_hook_for(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *o = J(HEALTHY_DEPLOY), *deps = NULL;
    enum fl_health h;
    char *err = NULL;
    assert_int_equal(fl_interp_health(r, o, &h, &err), 0); /* no health hook in fake now */
    assert_int_equal(h, FL_HEALTH_HEALTHY);
    assert_int_equal(fl_interp_get_dependencies(r, o, &deps, &err), 0);
    assert_json(deps, "[]");
    assert_int_equal(atomic_load(&f.calls), 0);
    json_decref(deps);
    json_decref(o);
    fl_interp_free(r);
}

static void test_a_backend_that_declines_passes_the_call_on(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    atomic_store(&f.health_hook, true);
    atomic_store(&f.decline, true);
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *o = J(HEALTHY_DEPLOY);
    enum fl_health h;
    char *err = NULL;
    assert_int_equal(fl_interp_health(r, o, &h, &err), 0);
    assert_int_equal(h, FL_HEALTH_HEALTHY); /* native's answer, not the decliner's */
    assert_null(err);
    assert_int_equal(atomic_load(&f.calls), 1);
    json_decref(o);
    fl_interp_free(r);
}

static void test_nobody_with_a_hook_is_unsupported(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *o = J("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','namespace':'n'}}");
    enum fl_health h = FL_HEALTH_HEALTHY;
    char *err = NULL;
    assert_int_equal(fl_interp_health(r, o, &h, &err), FL_EUNSUPPORTED);
    assert_int_equal(h, FL_HEALTH_UNKNOWN);
    assert_non_null(strstr(err, "InterpretHealth"));
    assert_non_null(strstr(err, "v1 ConfigMap n/c"));
    free(err);
    json_decref(o);
    fl_interp_free(r);
}

static void test_a_backend_error_names_backend_operation_and_object(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {.fail = FL_EINVAL};
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','namespace':'prod'}}");
    json_t *req = (json_t *)1;
    int64_t n = 5;
    char *err = NULL;
    assert_int_equal(fl_interp_get_replicas(r, o, &n, &req, &err), FL_EINVAL);
    assert_int_equal(n, 0);
    assert_null(req); /* what the failing backend left is not handed out */
    assert_string_equal(err, "fake: InterpretReplica apps/v1 Deployment prod/web: boom");
    free(err);
    /* a caller that does not want the text may pass NULL */
    assert_int_equal(fl_interp_get_replicas(r, o, &n, &req, NULL), FL_EINVAL);
    json_decref(o);
    fl_interp_free(r);
}

static void test_removing_a_backend_restores_the_next_answer(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *o = J(HEALTHY_DEPLOY), *req = NULL;
    int64_t n;
    assert_int_equal(fl_interp_remove_backend(r, &fake_backend, &f), 0);
    assert_int_equal(fl_interp_remove_backend(r, &fake_backend, &f), FL_ENOTFOUND);
    assert_int_equal(fl_interp_get_replicas(r, o, &n, &req, NULL), 0);
    assert_int_equal(n, 1);
    json_decref(o);
    fl_interp_free(r);
}

static void toggle_hook(void *arg)
{
    struct fake *f = arg;
    atomic_store(&f->health_hook, !atomic_load(&f->health_hook));
}

static void test_edit_changes_hooks_between_calls(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    fl_interp_add_backend(r, &fake_backend, &f);
    assert_true(fl_interp_has(r, "apps/v1", "StatefulSet", FL_INTERP_REPLICA));
    assert_true(fl_interp_has(r, "apps/v1", "Deployment", FL_INTERP_HEALTH)); /* native has it */
    json_t *o = J(HEALTHY_DEPLOY);
    enum fl_health h;
    fl_interp_edit(r, toggle_hook, &f);
    assert_int_equal(fl_interp_health(r, o, &h, NULL), 0);
    assert_int_equal(h, FL_HEALTH_UNHEALTHY);
    fl_interp_edit(r, toggle_hook, &f);
    assert_int_equal(fl_interp_health(r, o, &h, NULL), 0);
    assert_int_equal(h, FL_HEALTH_HEALTHY);
    json_decref(o);
    fl_interp_free(r);
}

/* The execution engine trusts an entry to the native rules only when no change of the hooks
 * came between its calls: every kind of change counts. */
static void test_every_change_of_the_hooks_is_counted(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    uint64_t e = fl_interp_edits(r);
    assert_int_equal(fl_interp_edits(r), e); /* reading changes nothing */
    fl_interp_add_backend(r, &fake_backend, &f);
    assert_true(fl_interp_edits(r) > e);
    e = fl_interp_edits(r);
    fl_interp_edit(r, toggle_hook, &f);
    assert_true(fl_interp_edits(r) > e);
    e = fl_interp_edits(r);
    assert_int_equal(fl_interp_remove_backend(r, &fake_backend, &f), 0);
    assert_true(fl_interp_edits(r) > e);
    e = fl_interp_edits(r);
    assert_int_equal(fl_interp_remove_backend(r, &fake_backend, &f), FL_ENOTFOUND);
    assert_int_equal(fl_interp_edits(r), e); /* nothing removed, nothing changed */
    fl_interp_free(r);
}

static void test_retain_by_another_backend_gets_the_generic_rules_first(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    fl_interp_add_backend(r, &fake_backend, &f);
    json_t *d = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':{'replicas':2}}");
    json_t *o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','resourceVersion':'8'},"
                  "'spec':{'replicas':9}}");
    json_t *out = NULL;
    assert_int_equal(fl_interp_retain(r, d, o, &out, NULL), 0);
    assert_true(json_is_true(at(out, "fake")));
    assert_string_equal(str(out, "metadata.resourceVersion"), "8");
    assert_int_equal(num(out, "spec.replicas"), 2); /* the kind rules are the backend's business */
    json_decref(out);
    json_decref(d);
    json_decref(o);
    fl_interp_free(r);
}

static void test_op_names_are_karmadas(void **state)
{
    assert_string_equal(fl_interp_op_name(FL_INTERP_REFLECT_STATUS), "InterpretStatus");
    assert_string_equal(fl_interp_op_name(FL_INTERP_DEPENDENCY), "InterpretDependency");
    assert_string_equal(fl_interp_op_name(FL_INTERP_OP_COUNT), "");
}

/* ---- bad input ---- */

static void expect_replicas_einval(const char *obj, const char *field)
{
    json_t *o = J(obj), *req = (json_t *)1;
    int64_t n = 9;
    char *err = NULL;
    int rc = fl_interp_get_replicas(ip, o, &n, &req, &err);
    assert_int_equal(n, 0);
    assert_null(req);
    assert_err_names(rc, err, field);
    json_decref(o);
}

static void test_mistyped_replicas_fields_are_einval_naming_the_field(void **state)
{
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},"
                           "'spec':{'replicas':'3'}}",
                           "spec.replicas");
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},"
                           "'spec':{'replicas':-1}}",
                           "spec.replicas");
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':{'template':"
                           "{'spec':{'containers':{'name':'a'}}}}}",
                           "spec.template.spec.containers");
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':{'template':"
                           "{'spec':{'containers':['a']}}}}",
                           "spec.template.spec.containers[0]");
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':{'template':"
                           "{'spec':{'containers':[{'name':'a'},{'resources':{'requests':{'cpu':'lots'}}}]}}}}",
                           "spec.template.spec.containers[1].resources.requests.cpu");
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':{'template':"
                           "{'spec':{'initContainers':[{'resources':{'limits':{'memory':[]}}}]}}}}",
                           "spec.template.spec.initContainers[0].resources.limits.memory");
    expect_replicas_einval("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{'completions':true}}",
                           "spec.completions");
    expect_replicas_einval("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'tolerations':{}}}",
                           "spec.tolerations");
    expect_replicas_einval("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'spec':'x'}", "spec");
}

static void test_objects_without_kind_or_not_objects_are_einval(void **state)
{
    int rc;
    json_t *o = J("{'metadata':{'name':'x'}}"), *arr = J("[]"), *out = (json_t *)1;
    char *err = NULL;
    rc = fl_interp_reflect_status(ip, o, &out, &err);
    assert_err_names(rc, err, "apiVersion");
    assert_null(out);
    err = NULL;
    rc = fl_interp_get_dependencies(ip, arr, &out, &err);
    assert_err_names(rc, err, "object");
    err = NULL;
    rc = fl_interp_revise_replica(ip, arr, 1, &out, &err);
    assert_err_names(rc, err, "object");
    json_decref(o);
    json_decref(arr);
}

static void test_mistyped_status_fields_are_einval_naming_the_field(void **state)
{
    int rc;
    json_t *out = (json_t *)1;
    enum fl_health h = FL_HEALTH_HEALTHY;
    char *err = NULL;
    json_t *o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w'},'status':{'replicas':'3'}}");
    rc = fl_interp_reflect_status(ip, o, &out, &err);
    assert_err_names(rc, err, "status.replicas");
    assert_null(out);
    json_decref(o);

    err = NULL;
    o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','annotations':"
          "{'resourcetemplate.karmada.io/generation':'two'}},'status':{}}");
    rc = fl_interp_reflect_status(ip, o, &out, &err);
    assert_err_names(rc, err, "resourcetemplate.karmada.io/generation");
    json_decref(o);

    err = NULL;
    o = J("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','generation':1},"
          "'status':{'observedGeneration':'1'}}");
    rc = fl_interp_health(ip, o, &h, &err);
    assert_err_names(rc, err, "status.observedGeneration");
    assert_int_equal(h, FL_HEALTH_UNKNOWN);
    json_decref(o);

    err = NULL;
    o = J(DEPLOY_TMPL(1, 1));
    json_t *items = J("[{'clusterName':'a','status':{}},{'clusterName':'b','status':{'replicas':{}}}]");
    rc = fl_interp_aggregate_status(ip, o, items, &out, &err);
    assert_err_names(rc, err, "items[1].status.replicas");
    assert_null(out);
    json_decref(items);

    err = NULL;
    items = J("[{'clusterName':'a','status':'Running'}]");
    rc = fl_interp_aggregate_status(ip, o, items, &out, &err);
    assert_err_names(rc, err, "items[0].status");
    json_decref(items);

    err = NULL;
    items = J("{'a':1}");
    rc = fl_interp_aggregate_status(ip, o, items, &out, &err);
    assert_err_names(rc, err, "items");
    json_decref(items);
    json_decref(o);
}

static void test_mistyped_dependency_fields_are_einval_naming_the_field(void **state)
{
    int rc;
    json_t *out = (json_t *)1;
    char *err = NULL;
    json_t *o = J("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'containers':[{'name':'a',"
                  "'env':[{'name':'x','valueFrom':{'secretKeyRef':{'name':7}}}]}]}}");
    rc = fl_interp_get_dependencies(ip, o, &out, &err);
    assert_err_names(rc, err,
                     "spec.containers[0].env[0].valueFrom.secretKeyRef.name");
    assert_null(out);
    json_decref(o);
    err = NULL;
    o = J("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'volumes':[{'name':'v','projected':"
          "{'sources':[{'configMap':'x'}]}}]}}");
    rc = fl_interp_get_dependencies(ip, o, &out, &err);
    assert_err_names(rc, err, "spec.volumes[0].projected.sources[0].configMap");
    json_decref(o);
}

/* Replace each node of v in turn with each wrong-typed value and run every operation:
 * the answer is 0, FL_EINVAL with a message, or FL_EUNSUPPORTED, and never a crash (the
 * ASan build checks the memory side). */
static void run_all(const json_t *o)
{
    json_t *out = NULL, *items = json_pack("[{s:s, s:O}]", "clusterName", "a", "status", json_object_get(o, "status"));
    int64_t n;
    enum fl_health h;
    char *err = NULL;
    int rcs[8];
    rcs[0] = fl_interp_get_replicas(ip, o, &n, &out, &err);
    json_decref(out), free(err), err = NULL;
    rcs[1] = fl_interp_revise_replica(ip, o, 2, &out, &err);
    json_decref(out), free(err), err = NULL;
    rcs[2] = fl_interp_retain(ip, o, o, &out, &err);
    json_decref(out), free(err), err = NULL;
    rcs[3] = fl_interp_reflect_status(ip, o, &out, &err);
    json_decref(out), free(err), err = NULL;
    rcs[4] = fl_interp_aggregate_status(ip, o, items, &out, &err);
    json_decref(out), free(err), err = NULL;
    rcs[5] = fl_interp_health(ip, o, &h, &err);
    free(err), err = NULL;
    rcs[6] = fl_interp_get_dependencies(ip, o, &out, &err);
    json_decref(out), free(err), err = NULL;
    for (int i = 0; i < 7; i++)
        if (rcs[i] != 0 && rcs[i] != FL_EINVAL && rcs[i] != FL_EUNSUPPORTED)
            fail_msg("operation %d returned %d", i, rcs[i]);
    json_decref(items);
}

static void mutate_all(json_t *root, json_t *node)
{
    json_t *wrong[] = {json_string("x"), json_integer(-3), json_array(), json_object(), json_true(), json_null(),
                       json_real(1.5)};
    size_t nw = sizeof wrong / sizeof wrong[0];
    if (json_is_object(node)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(node, tmp, k, v) {
            json_t *keep = json_incref(v);
            for (size_t w = 0; w < nw; w++) {
                json_object_set(node, k, wrong[w]);
                run_all(root);
            }
            json_object_set_new(node, k, keep);
            mutate_all(root, keep);
        }
    } else if (json_is_array(node)) {
        for (size_t i = 0; i < json_array_size(node); i++) {
            json_t *keep = json_incref(json_array_get(node, i));
            for (size_t w = 0; w < nw; w++) {
                json_array_set(node, i, wrong[w]);
                run_all(root);
            }
            json_array_set_new(node, i, keep);
            mutate_all(root, keep);
        }
    }
    for (size_t w = 0; w < nw; w++)
        json_decref(wrong[w]);
}

static void test_every_field_mistyped_never_crashes(void **state)
{
    static const char *const samples[] = {
        "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'w','namespace':'n','generation':2,"
        "'annotations':{'resourcetemplate.karmada.io/generation':'2'},'labels':{'a':'b'}},'spec':{'replicas':3,"
        DEPLOY_POD "},'status':{'observedGeneration':2,'replicas':3,'conditions':[{'type':'Available',"
        "'status':'True'}]}}",
        "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j','namespace':'n'},'spec':{'parallelism':2,"
        "'completions':4,'template':{'spec':{'containers':[{'name':'a','env':[{'name':'x','valueFrom':"
        "{'configMapKeyRef':{'name':'c'}}}]}],'volumes':[{'name':'v','projected':{'sources':[{'secret':"
        "{'name':'s'}}]}}]}}},'status':{'active':1,'startTime':'t','conditions':[{'type':'Complete',"
        "'status':'True'}]}}",
        "{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{'type':'LoadBalancer'},'status':"
        "{'loadBalancer':{'ingress':[{'ip':'1.1.1.1','ports':[{'port':1}]}]}}}",
        "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'overhead':{'cpu':'1'},'containers':"
        "[{'name':'a'}]},'status':{'phase':'Running','containerStatuses':[{'ready':true}]}}",
        "{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'s'},'spec':{'volumeClaimTemplates':"
        "[{'metadata':{'name':'d'}}],'template':{'spec':{'volumes':[{'name':'d','persistentVolumeClaim':"
        "{'claimName':'d'}}]}}}}",
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        json_t *o = J(samples[i]);
        run_all(o);
        mutate_all(o, o);
        json_decref(o);
    }
}

/* ---- threads ---- */

struct worker {
    fl_interp *r;
    atomic_bool *stop;
    atomic_bool *added;     /* set once the fake backend's add returned */
    atomic_int wrong;
    int calls;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    json_t *o = J(HEALTHY_DEPLOY);
    while (!atomic_load(w->stop)) {
        bool added_before = atomic_load(w->added);
        int64_t n;
        json_t *req = NULL;
        enum fl_health h;
        if (fl_interp_get_replicas(w->r, o, &n, &req, NULL) || (n != 1 && n != 42) || (added_before && n != 42))
            atomic_fetch_add(&w->wrong, 1);
        json_decref(req);
        if (fl_interp_health(w->r, o, &h, NULL) || h == FL_HEALTH_UNKNOWN)
            atomic_fetch_add(&w->wrong, 1);
        w->calls++;
    }
    json_decref(o);
    return NULL;
}

static void test_calls_from_four_threads_while_backends_change(void **state)
{
    fl_interp *r = fl_interp_new();
    struct fake f = {0};
    atomic_bool stop = false, added = false;
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.r = r, .stop = &stop, .added = &added};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    sleep_ms(20);
    fl_interp_add_backend(r, &fake_backend, &f);
    atomic_store(&added, true);
    /* toggle the fake's health hook while calls run: its operation must never run
     * with the hook off (has() and the call see the same set) */
    for (int i = 0; i < 200; i++) {
        fl_interp_edit(r, toggle_hook, &f);
        if (i % 20 == 0)
            sleep_ms(1);
    }
    sleep_ms(20);
    atomic_store(&stop, true);
    int calls = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&w[i].wrong), 0);
        calls += w[i].calls;
    }
    assert_true(calls > 4);
    assert_true(atomic_load(&f.calls) > 0);
    assert_int_equal(atomic_load(&f.violations), 0);
    assert_int_equal(fl_interp_remove_backend(r, &fake_backend, &f), 0);
    fl_interp_free(r);
}

static int setup(void **state)
{
    ip = fl_interp_new();
    return 0;
}

static int teardown(void **state)
{
    fl_interp_free(ip);
    return 0;
}

int main(void)
{
    fl_mem_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deployment_replicas_and_requirements_from_the_pod_template),
        cmocka_unit_test(test_deployment_replicas_default_to_one_and_no_requirements_without_resources),
        cmocka_unit_test(test_deployment_revise_replica_sets_spec_replicas),
        cmocka_unit_test(test_deployment_retain_keeps_hpa_replicas_and_member_metadata),
        cmocka_unit_test(test_deployment_reflect_keeps_counts_generations_and_conditions_without_heartbeats),
        cmocka_unit_test(test_deployment_reflect_without_status_is_nothing),
        cmocka_unit_test(test_deployment_aggregate_sums_counts_and_advances_observed_generation_when_all_current),
        cmocka_unit_test(test_deployment_observed_generation_waits_for_a_member_behind),
        cmocka_unit_test(test_deployment_observed_generation_waits_for_the_template_generation),
        cmocka_unit_test(test_deployment_item_without_status_is_not_current),
        cmocka_unit_test(test_deployment_available_and_progressing_complete_when_every_member_is),
        cmocka_unit_test(test_deployment_available_is_false_while_one_member_lacks_it),
        cmocka_unit_test(test_deployment_progress_deadline_in_one_member_fails_the_rollout),
        cmocka_unit_test(test_deployment_without_members_is_not_available),
        cmocka_unit_test(test_deployment_aggregate_twice_is_the_same_and_keeps_transition_times),
        cmocka_unit_test(test_deployment_health_needs_current_updated_and_available_replicas),
        cmocka_unit_test(test_deployment_dependencies_come_from_the_pod_template),
        cmocka_unit_test(test_statefulset_replicas_and_requests_default_to_limits),
        cmocka_unit_test(test_statefulset_revise_writes_replicas_even_when_missing),
        cmocka_unit_test(test_statefulset_retain_keeps_replicas_the_manifest_omits),
        cmocka_unit_test(test_statefulset_reflect_keeps_observed_generation),
        cmocka_unit_test(test_statefulset_aggregate_sums_and_advances_observed_generation),
        cmocka_unit_test(test_statefulset_health_is_a_finished_rollout),
        cmocka_unit_test(test_statefulset_dependencies_skip_claims_of_its_volume_claim_templates),
        cmocka_unit_test(test_job_replicas_are_parallelism_capped_by_completions),
        cmocka_unit_test(test_job_revise_replica_sets_parallelism),
        cmocka_unit_test(test_job_retain_keeps_the_generated_selector),
        cmocka_unit_test(test_job_reflect_keeps_counts_conditions_and_times),
        cmocka_unit_test(test_job_aggregate_completes_when_every_member_completed),
        cmocka_unit_test(test_job_aggregate_is_not_complete_while_a_member_has_not_reported),
        cmocka_unit_test(test_job_aggregate_fails_when_a_member_failed),
        cmocka_unit_test(test_job_aggregate_leaves_a_finished_template_alone),
        cmocka_unit_test(test_job_health_is_unhealthy_only_when_failed),
        cmocka_unit_test(test_job_dependencies_come_from_the_pod_template),
        cmocka_unit_test(test_pod_replicas_are_one_with_overhead_in_the_request),
        cmocka_unit_test(test_pod_has_no_revise_replica),
        cmocka_unit_test(test_pod_retain_keeps_node_name),
        cmocka_unit_test(test_pod_reflect_is_the_whole_status),
        cmocka_unit_test(test_pod_aggregate_takes_the_worst_phase_and_unreported_is_pending),
        cmocka_unit_test(test_pod_health_is_succeeded_or_running_and_ready),
        cmocka_unit_test(test_pod_dependencies_cover_every_reference_sorted_and_unique),
        cmocka_unit_test(test_daemonset_has_no_replicas_or_revise),
        cmocka_unit_test(test_daemonset_retain_applies_the_generic_rules),
        cmocka_unit_test(test_daemonset_reflect_keeps_its_counts_and_generations),
        cmocka_unit_test(test_daemonset_aggregate_sums_and_keeps_old_generation_while_stale),
        cmocka_unit_test(test_daemonset_health_needs_every_scheduled_pod_updated_and_available),
        cmocka_unit_test(test_daemonset_dependencies_come_from_the_pod_template),
        cmocka_unit_test(test_replicaset_replicas_revise_and_health),
        cmocka_unit_test(test_service_reflects_and_aggregates_load_balancer_addresses_only),
        cmocka_unit_test(test_service_health_waits_for_a_load_balancer_address),
        cmocka_unit_test(test_pvc_aggregate_and_health_follow_the_phase),
        cmocka_unit_test(test_ingress_health_and_tls_dependencies),
        cmocka_unit_test(test_hpa_reflects_counts_and_conditions_and_sums_them),
        cmocka_unit_test(test_pdb_sums_counts_names_disrupted_pods_by_cluster_and_health_compares),
        cmocka_unit_test(test_cronjob_dependencies_and_aggregate),
        cmocka_unit_test(test_other_kinds_reflect_their_whole_status_and_have_no_health),
        cmocka_unit_test(test_service_account_token_secret_keeps_the_members_token),
        cmocka_unit_test(test_quantities_sum_to_the_canonical_form),
        cmocka_unit_test(test_a_backend_added_later_is_asked_first),
        cmocka_unit_test(test_native_answers_what_the_backend_ahead_has_no_hook_for),
        cmocka_unit_test(test_a_backend_that_declines_passes_the_call_on),
        cmocka_unit_test(test_nobody_with_a_hook_is_unsupported),
        cmocka_unit_test(test_a_backend_error_names_backend_operation_and_object),
        cmocka_unit_test(test_removing_a_backend_restores_the_next_answer),
        cmocka_unit_test(test_edit_changes_hooks_between_calls),
        cmocka_unit_test(test_every_change_of_the_hooks_is_counted),
        cmocka_unit_test(test_retain_by_another_backend_gets_the_generic_rules_first),
        cmocka_unit_test(test_op_names_are_karmadas),
        cmocka_unit_test(test_mistyped_replicas_fields_are_einval_naming_the_field),
        cmocka_unit_test(test_objects_without_kind_or_not_objects_are_einval),
        cmocka_unit_test(test_mistyped_status_fields_are_einval_naming_the_field),
        cmocka_unit_test(test_mistyped_dependency_fields_are_einval_naming_the_field),
        cmocka_unit_test(test_every_field_mistyped_never_crashes),
        cmocka_unit_test(test_calls_from_four_threads_while_backends_change),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
