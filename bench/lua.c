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
 * Target (docs/internals/lua.md): InterpretHealth P50 <= 20 us on this object.
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

enum which { HEALTH, REFLECT, REPLICAS, NCASES };
static const char *const case_names[NCASES] = {"InterpretHealth", "ReflectStatus", "GetReplicas"};

/* One timed call; returns ns, aborts on failure (a benchmark of errors is no benchmark). */
static int64_t one_call(fl_interp *ip, const json_t *obj, enum which w)
{
    char *err = NULL;
    int rc = 0;
    int64_t t0 = now_ns();
    if (w == HEALTH) {
        enum fl_health h;
        rc = fl_interp_health(ip, obj, &h, &err);
    } else if (w == REFLECT) {
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

    json_t *ric = json_pack("{s:{s:s}, s:{s:{s:s, s:s}, s:{s:{s:s}, s:{s:s}, s:{s:s}}}}", "metadata", "name",
                            "declarative-configuration-cloneset", "spec", "target", "apiVersion",
                            "apps.kruise.io/v1alpha1", "kind", "CloneSet", "customizations", "healthInterpretation",
                            "luaScript", health_lua, "statusReflection", "luaScript", reflect_lua, "replicaResource",
                            "luaScript", replicas_lua);
    fl_interp *lua_ip = fl_interp_new(), *native_ip = fl_interp_new();
    fl_lua_backend *b = fl_lua_backend_new("customization", NULL);
    fl_lua_backend_attach(b, lua_ip);
    char *err = NULL;
    if (fl_lua_backend_set(b, ric, &err)) {
        fprintf(stderr, "lua bench: %s\n", err);
        return 1;
    }
    json_t *cs = workload("apps.kruise.io/v1alpha1", "CloneSet"), *dep = workload("apps/v1", "Deployment");

    /* first call on a fresh state: state creation + compile + run the chunk */
    int64_t first = one_call(lua_ip, cs, HEALTH);
    unsigned states;
    size_t bytes;

    int64_t *lat[2][NCASES];
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < NCASES; w++)
            lat[s][w] = malloc(calls * sizeof(int64_t));
    for (int w = 0; w < NCASES; w++) /* warm: every script compiled, caches hot */
        for (int i = 0; i < 1000; i++) {
            one_call(lua_ip, cs, (enum which)w);
            one_call(native_ip, dep, (enum which)w);
        }
    const size_t slice = 1000;
    int64_t total[2][NCASES] = {{0}};
    for (size_t done = 0; done < calls; done += slice) {
        size_t n = calls - done < slice ? calls - done : slice;
        for (int w = 0; w < NCASES; w++)
            for (int s = 0; s < 2; s++)
                for (size_t i = 0; i < n; i++) {
                    int64_t t = one_call(s ? native_ip : lua_ip, s ? dep : cs, (enum which)w);
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
    printf("first call on a new state (create + compile): %.0f us\n", (double)first / 1000.0);
    printf("pool: %u state(s), %zu bytes held by one idle state with 3 scripts cached\n", states,
           states ? bytes / states : 0);

    for (int s = 0; s < 2; s++)
        for (int w = 0; w < NCASES; w++)
            free(lat[s][w]);
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
