/* lua.c - benchmark of the Lua interpreter backend (src/interp/lua_*.c): the latency of
 * one interpreter call answered by a Karmada-style Lua customization, against the same
 * question answered by the native C backend, in the same run.
 *
 * Like `sched`, this links the project library and measures function calls in process.
 * The Lua side is a CloneSet customization with the scripts Karmada ships for OpenKruise
 * (InterpretHealth, ReflectStatus, GetReplicas with kube.accuratePodRequirements), asked
 * through the fl_interp registry exactly as controllers ask it, on a CloneSet of about
 * forty JSON values. The baseline is the native backend answering the same three
 * questions for a Deployment of the same shape (a registry without the Lua backend).
 * Cases are interleaved in slices so both sides see the same machine noise; each call is
 * timed on its own (result freed inside the timing). Also printed: calls/s on one
 * thread, the bytes one pool state holds once the scripts are cached, and the cost of
 * the first call on a fresh state (state creation plus compiling the script).
 *
 * Two Lua-only cases have no native counterpart and are reported beside InterpretHealth
 * (the ratio of their P50 to its P50): GetComponents of a FlinkDeployment (the job
 * manager and the task managers, with requests and a pod template's node claim, written
 * as the bundled rule is) and AggregateStatus of a CloneSet over 100 status items (the
 * sums Karmada's CloneSet aggregation makes). A third, ReflectStatus+pairs, is ReflectStatus
 * in a script that names pairs, so its tables keep their keys' order as Karmada's engine
 * does (src/interp/lua_order.c): its P50 beside ReflectStatus's is what the order costs.
 *
 * Targets (docs/internals/lua.md, issue 46): InterpretHealth P50 <= 20 us on this object;
 * GetComponents and the 100-item AggregateStatus within 2x of InterpretHealth's P50.
 *
 *   build/bench/lua [--calls N]     (N per case, default 100000; about 5 s) */
#include "core/mem.h"
#include "interp/interp.h"
#include "interp/lua.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *health_lua = "function InterpretHealth(observedObj)\n"
                                "  if observedObj.status.observedGeneration ~= observedObj.metadata.generation then\n"
                                "    return false\n"
                                "  end\n"
                                "  if observedObj.spec.replicas ~= nil then\n"
                                "    if observedObj.status.updatedReplicas < observedObj.spec.replicas then\n"
                                "      return false\n"
                                "    end\n"
                                "  end\n"
                                "  if observedObj.status.availableReplicas < observedObj.status.updatedReplicas then\n"
                                "    return false\n"
                                "  end\n"
                                "  return true\n"
                                "end\n";
static const char *reflect_lua = "function ReflectStatus(observedObj)\n"
                                 "  local status = {}\n"
                                 "  if observedObj == nil or observedObj.status == nil then\n"
                                 "    return status\n"
                                 "  end\n"
                                 "  status.replicas = observedObj.status.replicas\n"
                                 "  status.updatedReplicas = observedObj.status.updatedReplicas\n"
                                 "  status.readyReplicas = observedObj.status.readyReplicas\n"
                                 "  status.availableReplicas = observedObj.status.availableReplicas\n"
                                 "  status.updatedReadyReplicas = observedObj.status.updatedReadyReplicas\n"
                                 "  status.expectedUpdatedReplicas = observedObj.status.expectedUpdatedReplicas\n"
                                 "  status.updateRevision = observedObj.status.updateRevision\n"
                                 "  status.currentRevision = observedObj.status.currentRevision\n"
                                 "  status.observedGeneration = observedObj.status.observedGeneration\n"
                                 "  status.labelSelector = observedObj.status.labelSelector\n"
                                 "  if observedObj.metadata == nil then\n"
                                 "    return status\n"
                                 "  end\n"
                                 "  status.generation = observedObj.metadata.generation\n"
                                 "  if observedObj.metadata.annotations == nil then\n"
                                 "    return status\n"
                                 "  end\n"
                                 "  local resourceTemplateGeneration = tonumber(observedObj.metadata.annotations"
                                 "[\"resourcetemplate.karmada.io/generation\"])\n"
                                 "  if resourceTemplateGeneration ~= nil then\n"
                                 "    status.resourceTemplateGeneration = resourceTemplateGeneration\n"
                                 "  end\n"
                                 "  return status\n"
                                 "end\n";
static const char *replicas_lua = "local kube = require(\"kube\")\n"
                                  "function GetReplicas(obj)\n"
                                  "  replica = obj.spec.replicas\n"
                                  "  requirement = kube.accuratePodRequirements(obj.spec.template)\n"
                                  "  return replica, requirement\n"
                                  "end\n";

static const char *components_lua =
    "local function requirements(resource, podSpec)\n"
    "  local want = {resourceRequest = {}}\n"
    "  if resource ~= nil then\n"
    "    want.resourceRequest.cpu = resource.cpu\n"
    "    want.resourceRequest.memory = resource.memory\n"
    "  end\n"
    "  if podSpec ~= nil and (podSpec.nodeSelector ~= nil or podSpec.tolerations ~= nil) then\n"
    "    want.nodeClaim = {nodeSelector = podSpec.nodeSelector, tolerations = podSpec.tolerations}\n"
    "  end\n"
    "  return want\n"
    "end\n"
    "function GetComponents(desiredObj)\n"
    "  local spec = desiredObj.spec or {}\n"
    "  local jm, tm = spec.jobManager or {}, spec.taskManager or {}\n"
    "  local podSpec = spec.podTemplate ~= nil and spec.podTemplate.spec or nil\n"
    "  local tms = tonumber(tm.replicas)\n"
    "  if tms == nil then\n"
    "    local slots = tonumber((spec.flinkConfiguration or {})['taskmanager.numberOfTaskSlots']) or 1\n"
    "    tms = math.ceil((spec.job and tonumber(spec.job.parallelism) or 1) / slots)\n"
    "  end\n"
    "  return {\n"
    "    {name = 'jobmanager', replicas = tonumber(jm.replicas) or 1,\n"
    "     replicaRequirements = requirements(jm.resource, podSpec)},\n"
    "    {name = 'taskmanager', replicas = tms, replicaRequirements = requirements(tm.resource, podSpec)},\n"
    "  }\n"
    "end\n";
static const char *aggregate_lua =
    "function AggregateStatus(desiredObj, statusItems)\n"
    "  if statusItems == nil then\n"
    "    return desiredObj\n"
    "  end\n"
    "  local st = {replicas = 0, readyReplicas = 0, availableReplicas = 0, updatedReplicas = 0,\n"
    "              updatedReadyReplicas = 0, expectedUpdatedReplicas = 0, observedGeneration = 0}\n"
    "  local allCurrent = true\n"
    "  for i = 1, #statusItems do\n"
    "    local s = statusItems[i].status\n"
    "    if s ~= nil then\n"
    "      st.replicas = st.replicas + (s.replicas or 0)\n"
    "      st.readyReplicas = st.readyReplicas + (s.readyReplicas or 0)\n"
    "      st.availableReplicas = st.availableReplicas + (s.availableReplicas or 0)\n"
    "      st.updatedReplicas = st.updatedReplicas + (s.updatedReplicas or 0)\n"
    "      st.updatedReadyReplicas = st.updatedReadyReplicas + (s.updatedReadyReplicas or 0)\n"
    "      st.expectedUpdatedReplicas = st.expectedUpdatedReplicas + (s.expectedUpdatedReplicas or 0)\n"
    "      st.updateRevision = s.updateRevision\n"
    "      st.currentRevision = s.currentRevision\n"
    "      st.labelSelector = s.labelSelector\n"
    "      if s.generation ~= s.observedGeneration or\n"
    "         s.resourceTemplateGeneration ~= desiredObj.metadata.generation then\n"
    "        allCurrent = false\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if allCurrent then\n"
    "    st.observedGeneration = desiredObj.metadata.generation\n"
    "  elseif desiredObj.status ~= nil then\n"
    "    st.observedGeneration = desiredObj.status.observedGeneration\n"
    "  end\n"
    "  desiredObj.status = st\n"
    "  return desiredObj\n"
    "end\n";

/* A Flink job: job manager, task managers by parallelism and slots, a pod template. */
static json_t *flink(void)
{
    return json_loads(
        "{\"apiVersion\": \"flink.apache.org/v1beta1\", \"kind\": \"FlinkDeployment\","
        " \"metadata\": {\"name\": \"wordcount\", \"namespace\": \"streaming\", \"generation\": 2},"
        " \"spec\": {\"image\": \"flink:1.18\", \"flinkVersion\": \"v1_18\", \"serviceAccount\": \"flink\","
        "  \"flinkConfiguration\": {\"taskmanager.numberOfTaskSlots\": \"2\"},"
        "  \"podTemplate\": {\"spec\": {\"nodeSelector\": {\"pool\": \"streaming\"},"
        "   \"tolerations\": [{\"key\": \"dedicated\", \"operator\": \"Equal\", \"value\": \"flink\","
        "    \"effect\": \"NoSchedule\"}]}},"
        "  \"jobManager\": {\"resource\": {\"cpu\": 1, \"memory\": \"2Gi\"}},"
        "  \"taskManager\": {\"resource\": {\"cpu\": 2, \"memory\": \"4Gi\"}},"
        "  \"job\": {\"jarURI\": \"local:///opt/flink/examples/WordCount.jar\", \"parallelism\": 8,"
        "   \"upgradeMode\": \"savepoint\"}}}",
        0, NULL);
}

/* 100 members' reflected CloneSet statuses, as a binding's status.aggregatedStatus. */
static json_t *status_items(void)
{
    json_t *items = json_array();
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "member%d", i + 1);
        json_array_append_new(
            items, json_pack("{s:s, s:b, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:i, s:i, s:i, s:s}}",
                             "clusterName", name, "applied", 1, "health", "Healthy", "status", "replicas", 4,
                             "readyReplicas", 4, "availableReplicas", 4, "updatedReplicas", 4, "updatedReadyReplicas",
                             4, "expectedUpdatedReplicas", 4, "updateRevision", "web-7d9", "currentRevision",
                             "web-7d9", "observedGeneration", 3, "generation", 3, "resourceTemplateGeneration", 3,
                             "labelSelector", "app=web"));
    }
    return items;
}

/* The workload, as a CloneSet or a Deployment (same fields). */
static json_t *workload(const char *av, const char *kind)
{
    json_t *o = json_loads(
        "{\"metadata\": {\"name\": \"web\", \"namespace\": \"shop\", \"generation\": 3,"
        "  \"labels\": {\"app\": \"web\"}, \"annotations\": {\"resourcetemplate.karmada.io/generation\": \"3\"}},"
        " \"spec\": {\"replicas\": 4, \"selector\": {\"matchLabels\": {\"app\": \"web\"}},"
        "  \"template\": {\"metadata\": {\"labels\": {\"app\": \"web\"}}, \"spec\": {\"containers\": [{\"name\": \"web\","
        "   \"image\": \"nginx:1.27\", \"ports\": [{\"containerPort\": 80}],"
        "   \"resources\": {\"requests\": {\"cpu\": \"250m\", \"memory\": \"256Mi\"}}}]}}},"
        " \"status\": {\"observedGeneration\": 3, \"replicas\": 4, \"readyReplicas\": 4, \"availableReplicas\": 4,"
        "  \"updatedReplicas\": 4, \"updatedReadyReplicas\": 4, \"expectedUpdatedReplicas\": 4,"
        "  \"updateRevision\": \"web-7d9\", \"currentRevision\": \"web-7d9\", \"labelSelector\": \"app=web\"}}",
        0, NULL);
    json_object_set_new(o, "apiVersion", json_string(av));
    json_object_set_new(o, "kind", json_string(kind));
    return o;
}

/* The cases both sides answer (NCASES), then the Lua-only ones (up to NALL). */
enum which { HEALTH, REFLECT, REPLICAS, NCASES, COMPONENTS = NCASES, AGGREGATE100, REFLECT_PAIRS, NALL };
static const char *const case_names[NALL] = {"InterpretHealth", "ReflectStatus", "GetReplicas", "GetComponents",
                                             "AggregateStatus100", "ReflectStatus+pairs"};
static json_t *items100; /* AGGREGATE100's status items */

/* One timed call; returns ns, aborts on failure (a benchmark of errors is no benchmark). */
static int64_t one_call(fl_interp *ip, const json_t *obj, enum which w)
{
    char *err = NULL;
    int rc = 0;
    int64_t t0 = now_ns();
    if (w == COMPONENTS) {
        json_t *comps = NULL;
        rc = fl_interp_get_components(ip, obj, &comps, &err);
        json_decref(comps);
    } else if (w == AGGREGATE100) {
        json_t *out = NULL;
        rc = fl_interp_aggregate_status(ip, obj, items100, &out, &err);
        json_decref(out);
    } else if (w == HEALTH) {
        enum fl_health h;
        rc = fl_interp_health(ip, obj, &h, &err);
    } else if (w == REFLECT || w == REFLECT_PAIRS) {
        json_t *st = NULL;
        rc = fl_interp_reflect_status(ip, obj, &st, &err);
        json_decref(st);
    } else {
        int64_t n;
        json_t *req = NULL;
        rc = fl_interp_get_replicas(ip, obj, &n, &req, &err);
        json_decref(req);
    }
    int64_t t = now_ns() - t0;
    if (rc) {
        fprintf(stderr, "lua bench: %s failed: %s\n", case_names[w], err ? err : "?");
        exit(1);
    }
    return t;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct(int64_t *v, size_t n, double p)
{
    size_t i = (size_t)(p * (double)(n - 1));
    return (double)v[i] / 1000.0;
}

int main(int argc, char **argv)
{
    size_t calls = 100000;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = strtoul(argv[++i], NULL, 10);
    if (calls < 100)
        calls = 100;
    fl_mem_init();

    json_t *ric = json_pack("{s:{s:s}, s:{s:{s:s, s:s}, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}}", "metadata",
                            "name", "declarative-configuration-cloneset", "spec", "target", "apiVersion",
                            "apps.kruise.io/v1alpha1", "kind", "CloneSet", "customizations", "healthInterpretation",
                            "luaScript", health_lua, "statusReflection", "luaScript", reflect_lua, "replicaResource",
                            "luaScript", replicas_lua, "statusAggregation", "luaScript", aggregate_lua);
    json_t *flink_ric = json_pack("{s:{s:s}, s:{s:{s:s, s:s}, s:{s:{s:s}}}}", "metadata", "name", "flink", "spec",
                                  "target", "apiVersion", "flink.apache.org/v1beta1", "kind", "FlinkDeployment",
                                  "customizations", "componentResource", "luaScript", components_lua);
    /* the same ReflectStatus in a script that names pairs (once, when the chunk runs): its
     * tables keep their keys' order (lua_order.c), which is what that costs */
    char *reflect_pairs = fl_asprintf("%slocal _ = pairs\n", reflect_lua);
    json_t *pairs_ric = json_pack("{s:{s:s}, s:{s:{s:s, s:s}, s:{s:{s:s}}}}", "metadata", "name", "ordered", "spec",
                                  "target", "apiVersion", "apps.kruise.io/v1alpha1", "kind", "OrderedCloneSet",
                                  "customizations", "statusReflection", "luaScript", reflect_pairs);
    free(reflect_pairs);
    fl_interp *lua_ip = fl_interp_new(), *native_ip = fl_interp_new();
    fl_lua_backend *b = fl_lua_backend_new("customization", NULL);
    fl_lua_backend_attach(b, lua_ip);
    char *err = NULL;
    if (fl_lua_backend_set(b, ric, &err) || fl_lua_backend_set(b, flink_ric, &err) ||
        fl_lua_backend_set(b, pairs_ric, &err)) {
        fprintf(stderr, "lua bench: %s\n", err);
        return 1;
    }
    json_t *cs = workload("apps.kruise.io/v1alpha1", "CloneSet"), *dep = workload("apps/v1", "Deployment");
    json_t *fd = flink(), *csp = workload("apps.kruise.io/v1alpha1", "OrderedCloneSet");
    items100 = status_items();

    /* first call on a fresh state: state creation + compile + run the chunk */
    int64_t first = one_call(lua_ip, cs, HEALTH);
    unsigned states;
    size_t bytes;

    /* [0]: Lua, every case; [1]: native, the shared cases */
    int64_t *lat[2][NALL] = {{NULL}};
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < (s ? NCASES : NALL); w++)
            lat[s][w] = malloc(calls * sizeof(int64_t));
    for (int w = 0; w < NALL; w++) /* warm: every script compiled, caches hot */
        for (int i = 0; i < 1000; i++) {
            one_call(lua_ip, w == COMPONENTS ? fd : w == REFLECT_PAIRS ? csp : cs, (enum which)w);
            if (w < NCASES)
                one_call(native_ip, dep, (enum which)w);
        }
    const size_t slice = 1000;
    int64_t total[2][NALL] = {{0}};
    for (size_t done = 0; done < calls; done += slice) {
        size_t n = calls - done < slice ? calls - done : slice;
        for (int w = 0; w < NALL; w++)
            for (int s = 0; s < (w < NCASES ? 2 : 1); s++)
                for (size_t i = 0; i < n; i++) {
                    const json_t *obj = s ? dep : w == COMPONENTS ? fd : w == REFLECT_PAIRS ? csp : cs;
                    int64_t t = one_call(s ? native_ip : lua_ip, obj, (enum which)w);
                    lat[s][w][done + i] = t;
                    total[s][w] += t;
                }
    }
    fl_lua_backend_stats(b, &states, &bytes);

    printf("Lua interpreter backend vs native C, %zu calls per case, one thread\n", calls);
    printf("%-16s %10s %10s %12s | %10s %10s %12s | %8s\n", "operation", "lua P50us", "lua P99us", "lua calls/s",
           "C P50us", "C P99us", "C calls/s", "P50 x");
    for (int w = 0; w < NCASES; w++) {
        double p[2][2], rate[2];
        for (int s = 0; s < 2; s++) {
            qsort(lat[s][w], calls, sizeof(int64_t), cmp_i64);
            p[s][0] = pct(lat[s][w], calls, 0.50);
            p[s][1] = pct(lat[s][w], calls, 0.99);
            rate[s] = (double)calls / ((double)total[s][w] / 1e9);
        }
        printf("%-16s %10.2f %10.2f %12.0f | %10.2f %10.2f %12.0f | %8.1f\n", case_names[w], p[0][0], p[0][1], rate[0],
               p[1][0], p[1][1], rate[1], p[0][0] / p[1][0]);
    }
    /* the Lua-only cases, beside InterpretHealth (lat[0][HEALTH] is sorted by now) */
    double health50 = pct(lat[0][HEALTH], calls, 0.50);
    printf("%-18s %10s %10s %12s | %s\n", "Lua only", "P50us", "P99us", "calls/s", "P50 / InterpretHealth P50");
    for (int w = NCASES; w < NALL; w++) {
        qsort(lat[0][w], calls, sizeof(int64_t), cmp_i64);
        double p50 = pct(lat[0][w], calls, 0.50);
        printf("%-18s %10.2f %10.2f %12.0f | %.2f\n", case_names[w], p50, pct(lat[0][w], calls, 0.99),
               (double)calls / ((double)total[0][w] / 1e9), p50 / health50);
    }
    printf("first call on a new state (create + compile): %.0f us\n", (double)first / 1000.0);
    printf("pool: %u state(s), %zu bytes held by one idle state with 5 scripts cached\n", states,
           states ? bytes / states : 0);

    for (int s = 0; s < 2; s++)
        for (int w = 0; w < NALL; w++)
            free(lat[s][w]);
    json_decref(items100);
    json_decref(fd);
    json_decref(csp);
    json_decref(pairs_ric);
    json_decref(flink_ric);
    json_decref(cs);
    json_decref(dep);
    json_decref(ric);
    fl_lua_backend_detach(b);
    fl_lua_backend_free(b);
    fl_interp_free(lua_ip);
    fl_interp_free(native_ip);
    free(err);
    return 0;
}
